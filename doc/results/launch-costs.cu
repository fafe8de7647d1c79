// doc/results/launch-costs.cu: the host cost of a kernel launch alone and
// with each kind of completion mark the CUDA backend can add after it.
// Build and run on a GPU machine: nvcc -O2 -o launch-costs launch-costs.cu -lcuda
// (output on the H100: h100-launch-costs.txt).
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>
__global__ void empty(void) {}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec * 1e-3; }
int main(void) {
  const int N = 20000, S = 8;
  cudaStream_t s[S];
  for (int i = 0; i < S; i++) cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking);
  cudaEvent_t ev[256];
  for (int i = 0; i < 256; i++) cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming);
  unsigned long long *h; cudaHostAlloc(&h, 4096, cudaHostAllocMapped);
  CUdeviceptr d; cuMemHostGetDevicePointer(&d, h, 0);
  empty<<<1, 1, 0, s[0]>>>(); cudaDeviceSynchronize();
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    for (int i = 0; i < N; i++) empty<<<1, 1, 0, s[i % S]>>>();
    double t1 = now(); cudaDeviceSynchronize();
    double t2 = now();
    for (int i = 0; i < N; i++) { empty<<<1, 1, 0, s[i % S]>>>(); cuStreamWriteValue64(s[i % S], d + 8 * (i % S), i, 0); }
    double t3 = now(); cudaDeviceSynchronize();
    double t4 = now();
    for (int i = 0; i < N; i++) { empty<<<1, 1, 0, s[i % S]>>>(); cudaEventRecord(ev[i % 256], s[i % S]); }
    double t5 = now(); cudaDeviceSynchronize();
    double t6 = now();
    for (int i = 0; i < N; i++) cuStreamWriteValue64(s[i % S], d + 8 * (i % S), i, 0);
    double t7 = now(); cudaDeviceSynchronize();
    printf("per op, host: launch %.2f us; launch+writeValue64 %.2f us; launch+eventRecord %.2f us; writeValue64 alone %.2f us\n",
           (t1 - t0) / N, (t3 - t2) / N, (t5 - t4) / N, (t7 - t6) / N);
  }
  return 0;
}
