// s30-launch-per-cpu.cu: how long a near-empty kernel launch takes the calling thread, in rounds
// over the CPUs given on the command line: the thread pins itself to each in turn (interleaved) and
// launches N kernels on one stream, then synchronizes. Prints each CPU's median ns per launch.
// Build: nvcc -O2 -o launch-per-cpu s30-launch-per-cpu.cu. Usage: launch-per-cpu N ROUNDS CPU...
#include <cuda_runtime.h>
#include <pthread.h>
#include <sched.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)
__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
static double now_ns() { return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: launch-per-cpu N ROUNDS CPU...\n"); return 2; }
  int n = atoi(argv[1]), rounds = atoi(argv[2]), ncpu = argc - 3;
  std::vector<int> cpus;
  for (int i = 0; i < ncpu; i++) cpus.push_back(atoi(argv[3 + i]));
  CK(cudaSetDevice(0));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (int i = 0; i < 100; i++) spin<<<1, 1, 0, s>>>(0);
  CK(cudaStreamSynchronize(s));
  std::vector<std::vector<double>> t(ncpu);
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < ncpu; k++) {
      int c = (k + r) % ncpu;
      cpu_set_t set; CPU_ZERO(&set); CPU_SET(cpus[c], &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) { perror("affinity"); return 1; }
      sched_yield();
      double t0 = now_ns();
      for (int i = 0; i < n; i++) spin<<<1, 1, 0, s>>>(0);
      double t1 = now_ns();
      CK(cudaStreamSynchronize(s));
      t[c].push_back((t1 - t0) / n);
    }
  printf("# %d launches per sample, %d rounds; ns per launch on each CPU: median (min-max)\n", n, rounds);
  for (int c = 0; c < ncpu; c++) {
    std::sort(t[c].begin(), t[c].end());
    printf("cpu %2d %6.0f (%5.0f-%5.0f)\n", cpus[c], t[c][rounds / 2], t[c][0], t[c][rounds - 1]);
  }
  return 0;
}
