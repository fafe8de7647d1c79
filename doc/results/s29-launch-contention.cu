// s29-launch-contention.cu: what slows a thread's kernel launches while
// another thread of the process works (twenty-ninth session, an
// experiment, not part of the tools).
//
//   nvcc -O2 -o lc s29-launch-contention.cu -lpthread && ./lc [LAUNCHES]
//
// The launching thread launches LAUNCHES (default 20000) empty kernels on
// one stream, in rounds of 1000 with a synchronize between, and prints
// the mean host time per cudaLaunchKernel of each setting, while a second
// thread:
//   idle     sleeps;
//   alu      spins on registers (no memory: what sharing a core costs);
//   memory   walks a 32 MiB buffer (what sharing caches and memory costs);
//   alloc    mallocs and frees 680-byte blocks and zeroes them (the core's
//            nodes);
//   launch   launches empty kernels on a stream of its own (the driver's
//            own locks).
// Each setting with both threads on any CPU (the scheduler's choice) and,
// where the machine has them, the launching thread on CPU 0 and the
// other pinned beside it (CPU 1), far from it (the last CPU) or on the
// same CPU. Settings are interleaved over three
// rounds, so the machine's drift spreads over all of them.
#include <atomic>
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__global__ void empty_kernel(void) {}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

enum { IDLE, ALU, MEMORY, ALLOC, LAUNCH, NKIND };
static const char *kind_name[NKIND] = {"idle", "alu", "memory", "alloc",
                                       "launch"};

static std::atomic<int> stop_flag;
static std::atomic<int> ready_flag;

struct other_arg {
  int kind;
  int cpu; /* -1: any */
};

/* Pins the calling thread to @p cpu; -1: lets it run on any. */
static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu < 0)
    for (int c = 0; c < CPU_SETSIZE && c < (int)sysconf(_SC_NPROCESSORS_ONLN);
         c++)
      CPU_SET(c, &set);
  else
    CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *other_main(void *p) {
  struct other_arg *a = (struct other_arg *)p;
  pin(a->cpu);
  volatile uint64_t sink = 0;
  size_t big = 32u << 20;
  char *buf = a->kind == MEMORY ? (char *)malloc(big) : NULL;
  if (buf != NULL)
    memset(buf, 1, big);
  cudaStream_t s = NULL;
  if (a->kind == LAUNCH)
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  ready_flag.store(1);
  uint64_t x = 1;
  size_t off = 0;
  unsigned n = 0;
  while (!stop_flag.load(std::memory_order_relaxed)) {
    switch (a->kind) {
    case IDLE:
      usleep(1000);
      break;
    case ALU:
      for (int i = 0; i < 1000; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
      sink = x;
      break;
    case MEMORY:
      for (int i = 0; i < 1000; i++) {
        sink += buf[off];
        buf[off] = (char)x;
        off = (off + 4096 + 64) % big;
      }
      break;
    case ALLOC:
      for (int i = 0; i < 100; i++) {
        void *b = malloc(680);
        memset(b, 0, 680);
        sink += ((char *)b)[5];
        free(b);
      }
      break;
    case LAUNCH:
      empty_kernel<<<1, 1, 0, s>>>();
      if (++n % 1000 == 0)
        cudaStreamSynchronize(s);
      break;
    }
  }
  if (s != NULL) {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
  free(buf);
  (void)sink;
  return NULL;
}

/* Mean host ns per launch of @p n launches on @p s, with the other
 * thread doing @p kind on @p cpu. */
static double measure(cudaStream_t s, int n, int kind, int cpu) {
  struct other_arg a = {kind, cpu};
  /* This thread on CPU 0 while the other is pinned, else on any. */
  pin(cpu < 0 ? -1 : 0);
  pthread_t t;
  stop_flag.store(0);
  ready_flag.store(0);
  pthread_create(&t, NULL, other_main, &a);
  while (!ready_flag.load())
    usleep(100);
  usleep(2000);
  uint64_t spent = 0;
  int done = 0;
  while (done < n) {
    int k = n - done < 1000 ? n - done : 1000;
    uint64_t t0 = now_ns();
    for (int i = 0; i < k; i++)
      empty_kernel<<<1, 1, 0, s>>>();
    spent += now_ns() - t0;
    cudaStreamSynchronize(s);
    done += k;
  }
  stop_flag.store(1);
  pthread_join(t, NULL);
  return (double)spent / n;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 20000;
  int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  cudaStream_t s;
  cudaSetDevice(0);
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  (void)measure(s, 2000, IDLE, -1); /* warm up */
  int cpus[4] = {-1, 1, ncpu - 1, 0};
  const char *where[4] = {"any", "beside", "far", "same"};
  int nwhere = ncpu >= 3 ? 4 : 1;
  printf("# %d launches per setting; 'any': both threads unpinned, else the "
         "launching thread on CPU 0 of %d and the other on CPU 1, %d or 0\n",
         n, ncpu, ncpu - 1);
  printf("round kind where ns_per_launch\n");
  for (int r = 1; r <= 3; r++)
    for (int k = 0; k < NKIND; k++)
      for (int w = 0; w < nwhere; w++)
        printf("%d %s %s %.0f\n", r, kind_name[k], where[w],
               measure(s, n, k, cpus[w]));
  cudaStreamDestroy(s);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
