/* doc/results/s32-phases/common.cuh (thirty-second session, experiments):
 * what phases.cu and be-launch.cu share: a 0 ns-capable spin kernel on the
 * GPU's nanosecond clock, as kernels/builtin.cu's, and the host clock. */
#ifndef S32_COMMON_CUH
#define S32_COMMON_CUH
#include <stdint.h>
#include <time.h>

static __device__ uint64_t gns(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__global__ void spin(uint64_t ns) {
  uint64_t s = gns();
  while (gns() - s < ns) {
  }
}
static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif
