// s30-mark-cost.cu: what a cuasync MARK (cuStreamWriteValue64 to pinned host memory, as the CUDA
// backend's flags mode writes it) costs the device and the launching thread. A gate kernel holds the
// stream while the host enqueues N near-empty kernels with a write after every K of them; the
// events around them, once the gate ends, time the device's back-to-back processing: device ns per
// kernel. The host loop's own time per kernel is timed too. Build: nvcc -O2 -o mark-cost
// s30-mark-cost.cu -lcuda (or without -lcuda). Usage: mark-cost [N] [rounds]
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)
#define CU(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)r); exit(1); } } while (0)
// The driver's entry as the CUDA backend gets it (cudaGetDriverEntryPoint, default version).
typedef CUresult (*write64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4000;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  CK(cudaSetDevice(0));
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  unsigned long long *host_flag; CK(cudaHostAlloc(&host_flag, 64, cudaHostAllocMapped));
  void *dp; CK(cudaHostGetDevicePointer(&dp, host_flag, 0));
  CUdeviceptr dflag = (CUdeviceptr)(uintptr_t)dp;
  void *dm; CK(cudaMalloc(&dm, 64));
  CUdeviceptr devmem = (CUdeviceptr)(uintptr_t)dm;
  write64_fn write64 = nullptr;
  cudaDriverEntryPointQueryResult q;
  CK(cudaGetDriverEntryPoint("cuStreamWriteValue64", (void **)&write64, cudaEnableDefault, &q));
  if (write64 == nullptr) { fprintf(stderr, "no cuStreamWriteValue64\n"); return 1; }
  spin<<<1, 1, 0, s>>>(1000); CK(cudaStreamSynchronize(s));
  struct V { const char *name; int every; int flags; int devmem; };
  V vs[] = {{"no marks", 0, 0, 0}, {"every 64", 64, 0, 0}, {"every 16", 16, 0, 0}, {"every 4", 4, 0, 0},
            {"every 1", 1, 0, 0}, {"every 16, device memory", 16, 0, 1},
            {"every 1, device memory", 1, 0, 1}};
  const int nv = sizeof vs / sizeof *vs;
  std::vector<double> dev[nv], host[nv];
  unsigned long long value = 0;
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < nv; v++) {
      int k = (v + r) % nv;
      spin<<<1, 1, 0, s>>>(60ull * 1000 * 1000); // the gate: 60 ms
      CK(cudaEventRecord(e0, s));
      double t0 = now_us();
      for (int i = 0; i < n; i++) {
        spin<<<1, 1, 0, s>>>(0);
        if (vs[k].every && (i + 1) % vs[k].every == 0)
          if (write64((CUstream)s, vs[k].devmem ? devmem : dflag, ++value, vs[k].flags) != CUDA_SUCCESS) {
            fprintf(stderr, "write (%s) failed\n", vs[k].name); return 1; }
      }
      double t1 = now_us();
      CK(cudaEventRecord(e1, s));
      CK(cudaStreamSynchronize(s));
      float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
      dev[k].push_back(ms * 1e6 / n);
      host[k].push_back((t1 - t0) * 1e3 / n);
    }
  printf("# %d near-empty kernels queued behind a 60 ms gate, %d rounds interleaved; medians (min-max)\n", n, rounds);
  printf("%-28s %22s %22s\n", "writes", "device ns/kernel", "host ns/kernel");
  for (int v = 0; v < nv; v++) {
    std::sort(dev[v].begin(), dev[v].end()); std::sort(host[v].begin(), host[v].end());
    printf("%-28s %8.0f (%5.0f-%5.0f) %8.0f (%5.0f-%5.0f)\n", vs[v].name, dev[v][rounds / 2], dev[v][0], dev[v][rounds - 1],
           host[v][rounds / 2], host[v][0], host[v][rounds - 1]);
  }
  return 0;
}
