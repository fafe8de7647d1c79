// h200x2-s26-hostcosts.cu (twenty-sixth session): the host time of a
// dependency between two streams, on one GPU and across two, as a launch
// thread pays it. Per iteration: an empty kernel on stream A, an event
// recorded on A, stream B made to wait for it, an empty kernel on B;
// against the two launches alone. A and B are two streams of GPU 0, or A
// on GPU 1 and B on GPU 0 (the calls made with the device current that
// owns the stream, as the runtime's launch threads do). 64 events in turn.
// Median of 5 rounds of N iterations, ns per iteration, the device
// synchronized between rounds (not timed).
//   nvcc -O2 -o hostcosts h200x2-s26-hostcosts.cu && ./hostcosts [N]
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <algorithm>
#include <time.h>

__global__ void empty() {}

static double now_ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                       \
              cudaGetErrorString(e_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2000, ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  cudaStream_t a0, b0, a1;
  cudaEvent_t ev0[64], ev1[64];
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&a0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b0, cudaStreamNonBlocking));
  for (int i = 0; i < 64; i++)
    CK(cudaEventCreateWithFlags(&ev0[i], cudaEventDisableTiming));
  if (ndev > 1) {
    CK(cudaSetDevice(1));
    CK(cudaStreamCreateWithFlags(&a1, cudaStreamNonBlocking));
    for (int i = 0; i < 64; i++)
      CK(cudaEventCreateWithFlags(&ev1[i], cudaEventDisableTiming));
    CK(cudaSetDevice(0));
  }
  const char *names[] = {"two launches, GPU 0", "+ record and wait, one GPU",
                         "two launches, GPU 1 then GPU 0",
                         "+ record and wait, across GPUs"};
  for (int mode = 0; mode < (ndev > 1 ? 4 : 2); mode++) {
    double t[5];
    for (int r = 0; r < 6; r++) {
      double t0 = now_ns();
      for (int i = 0; i < n; i++) {
        int peer = mode >= 2;
        cudaStream_t A = peer ? a1 : a0;
        cudaEvent_t e = peer ? ev1[i % 64] : ev0[i % 64];
        if (peer)
          CK(cudaSetDevice(1));
        empty<<<1, 1, 0, A>>>();
        if (mode % 2 == 1)
          CK(cudaEventRecord(e, A));
        if (peer)
          CK(cudaSetDevice(0));
        if (mode % 2 == 1)
          CK(cudaStreamWaitEvent(b0, e, 0));
        empty<<<1, 1, 0, b0>>>();
      }
      double t1 = now_ns();
      if (r > 0)
        t[r - 1] = (t1 - t0) / n;
      for (int d = 0; d < ndev && d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceSynchronize());
      }
      CK(cudaSetDevice(0));
    }
    std::sort(t, t + 5);
    printf("%-34s %8.0f ns per iteration (min %.0f, max %.0f)\n", names[mode],
           t[2], t[0], t[4]);
  }
  return 0;
}
