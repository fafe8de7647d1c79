/*
 * doc/results/launch-threads.cu: what a launch costs the host when it is
 * made from a second thread, with other threads busy, and with a thread
 * that polls the stream (h100-launch-threads.txt). Not built by the tree:
 *
 *   nvcc -O2 -o launch-threads launch-threads.cu -lpthread && ./launch-threads
 *
 * It showed why the CUDA backend no longer asks a stream for errors on each
 * advance: a thread calling cudaStreamQuery() in a loop made launches from
 * another thread 1.6-2.5x slower, while launching from a second thread, or
 * beside busy CPU threads, cost about the same as from the main thread.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <atomic>
#include <time.h>
__global__ void k(unsigned long long x) { if (x == 1234567) printf("x"); }
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static cudaStream_t st;
static std::atomic<int> stop;
static double launch_all(int n) {
  cudaSetDevice(0);
  double t0 = now();
  for (int i = 0; i < n; i++) k<<<1, 1, 0, st>>>(i);
  double t1 = now();
  cudaStreamSynchronize(st);
  return (t1 - t0) / n * 1e6;
}
static double res;
static void *thr(void *) { res = launch_all(10000); return nullptr; }
static void *spinner(void *) { volatile unsigned long x = 0; while (!stop.load(std::memory_order_relaxed)) x++; return nullptr; }
static void *poller(void *) { while (!stop.load()) { cudaStreamQuery(st); } return nullptr; }
static void *clockpoll(void *) { while (!stop.load()) { timespec t; clock_gettime(CLOCK_MONOTONIC, &t);} return nullptr; }
int main() {
  cudaSetDevice(0);
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  launch_all(2000);
  for (int rep = 0; rep < 3; rep++) {
    printf("main thread: %.2f us/launch\n", launch_all(10000));
    pthread_t t; pthread_create(&t, 0, thr, 0); pthread_join(t, 0);
    printf("other thread, main idle: %.2f\n", res);
    pthread_t s[3];
    stop = 0; pthread_create(&s[0], 0, spinner, 0);
    pthread_create(&t, 0, thr, 0); pthread_join(t, 0);
    stop = 1; pthread_join(s[0], 0);
    printf("other thread, one CPU spinner: %.2f\n", res);
    stop = 0; for (int i = 0; i < 3; i++) pthread_create(&s[i], 0, spinner, 0);
    pthread_create(&t, 0, thr, 0); pthread_join(t, 0);
    stop = 1; for (int i = 0; i < 3; i++) pthread_join(s[i], 0);
    printf("other thread, three CPU spinners: %.2f\n", res);
    stop = 0; pthread_create(&s[0], 0, clockpoll, 0);
    printf("main, clock_gettime poller: %.2f\n", launch_all(10000));
    stop = 1; pthread_join(s[0], 0);
    stop = 0; pthread_create(&s[0], 0, poller, 0);
    printf("main, cudaStreamQuery poller: %.2f\n", launch_all(10000));
    stop = 1; pthread_join(s[0], 0);
  }
  return 0;
}
