// doc/results/h200-s24-launch-threads.cu (s24): launch throughput from 1, 2 and 4 threads, each thread on its own streams (8 streams in all),
// near-empty kernels, and from 1 thread beside a thread spinning on an atomic. Not built by the tree:
//   nvcc -O2 -o lt2 h200-s24-launch-threads.cu -lpthread && ./lt2   (output: h200-s24-launch-threads.txt)
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <atomic>
#include <time.h>
__global__ void k(unsigned long long x) { if (x == 1234567) printf("x"); }
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static cudaStream_t st[8];
static int nthreads, per;
static std::atomic<int> go, spin_stop;
static void *worker(void *a) {
  int id = (int)(long)a;
  cudaSetDevice(0);
  while (!go.load()) {}
  int ns = 8 / nthreads;
  for (int i = 0; i < per; i++) k<<<1, 1, 0, st[id * ns + i % ns]>>>(i);
  return NULL;
}
static void *spinner(void *) { unsigned long x = 0; while (!spin_stop.load(std::memory_order_relaxed)) x++; return (void *)x; }
static double run(int t, int n, int spin) {
  nthreads = t; per = n / t; go = 0; spin_stop = 0;
  pthread_t th[8], sp;
  if (spin) pthread_create(&sp, NULL, spinner, NULL);
  for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, worker, (void *)(long)i);
  double t0 = now(); go = 1;
  for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
  cudaDeviceSynchronize();
  double t1 = now();
  spin_stop = 1; if (spin) pthread_join(sp, NULL);
  return (t1 - t0) / n * 1e9;
}
int main() {
  cudaSetDevice(0);
  for (int i = 0; i < 8; i++) cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking);
  run(1, 20000, 0);
  for (int r = 0; r < 5; r++) {
    double a = run(1, 20000, 0), b = run(2, 20000, 0), c = run(4, 20000, 0), d = run(1, 20000, 1);
    printf("round %d ns/launch aggregate: 1 thread %.0f | 2 threads %.0f (%.2fx) | 4 threads %.0f (%.2fx) | 1 thread + spinner %.0f\n", r, a, b, a / b, c, a / c, d);
  }
  return 0;
}
