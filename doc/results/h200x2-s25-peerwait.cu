// peerwait.cu: the device-side cost of a dependency between streams, on one GPU and across two:
// a chain of N spins of D ns alternating between two streams (each waiting for an event recorded
// after the other's spin), against the same N spins on one stream. (T_alt - T_one) / (N - 1) is
// what each dependency adds on the chain's path. Usage: peerwait [N] [D_ns] [rounds]
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); exit(1); } } while (0)
__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
static double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 400;
  unsigned long long d = argc > 2 ? strtoull(argv[2], 0, 10) : 50000;
  int rounds = argc > 3 ? atoi(argv[3]) : 5;
  int ndev; CK(cudaGetDeviceCount(&ndev));
  cudaStream_t s[3]; cudaEvent_t ev[3][2];
  int dev[3] = {0, 0, ndev > 1 ? 1 : 0};
  for (int i = 0; i < 3; i++) {
    CK(cudaSetDevice(dev[i]));
    CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    for (int k = 0; k < 2; k++) CK(cudaEventCreateWithFlags(&ev[i][k], cudaEventDisableTiming));
    spin<<<1, 1, 0, s[i]>>>(1000); CK(cudaStreamSynchronize(s[i]));
  }
  if (ndev > 1) { CK(cudaSetDevice(0)); cudaDeviceEnablePeerAccess(1, 0); CK(cudaSetDevice(1)); cudaDeviceEnablePeerAccess(0, 0); cudaGetLastError(); }
  // pairs: (0,0) one stream; (0,1) two streams of GPU 0; (0,2) GPU 0 and GPU 1
  const char *name[5] = {"one stream", "two streams, one GPU", "two GPUs",
                         "stale wait, one GPU", "stale wait, other GPU"};
  std::vector<double> t[5];
  cudaEvent_t old; CK(cudaSetDevice(0)); CK(cudaEventCreateWithFlags(&old, cudaEventDisableTiming));
  spin<<<1, 1, 0, s[0]>>>(1000); CK(cudaEventRecord(old, s[0])); CK(cudaStreamSynchronize(s[0]));
  for (int r = 0; r < rounds; r++)
    for (int p = 0; p < 3; p++) {
      int a = 0, b = p; if (p == 2 && ndev < 2) continue;
      double t0 = now_ms();
      for (int i = 0; i < n; i++) {
        int me = (p == 0 || i % 2 == 0) ? a : b, other = me == a ? b : a;
        CK(cudaSetDevice(dev[me]));
        if (p != 0 && i > 0) CK(cudaStreamWaitEvent(s[me], ev[other][(i - 1) % 2], 0));
        spin<<<1, 1, 0, s[me]>>>(d);
        if (p != 0) CK(cudaEventRecord(ev[me][i % 2], s[me]));
      }
      for (int i = 0; i < 3; i++) { CK(cudaSetDevice(dev[i])); CK(cudaStreamSynchronize(s[i])); }
      t[p].push_back(now_ms() - t0);
    }
  // A wait for an event reached long before (recorded on GPU 0 and synchronized), before every spin
  // of a chain on stream 1 of GPU 0, or on GPU 1.
  for (int r = 0; r < rounds; r++)
    for (int p = 3; p < 5; p++) {
      int w = p == 3 ? 1 : 2; if (p == 4 && ndev < 2) continue;
      CK(cudaSetDevice(dev[w]));
      double t0 = now_ms();
      for (int i = 0; i < n; i++) { CK(cudaStreamWaitEvent(s[w], old, 0)); spin<<<1, 1, 0, s[w]>>>(d); }
      CK(cudaStreamSynchronize(s[w]));
      t[p].push_back(now_ms() - t0);
    }
  for (int p = 0; p < 5; p++) {
    if (t[p].empty()) continue;
    std::sort(t[p].begin(), t[p].end());
    printf("%-22s n %d spin %llu ns: median %.3f ms (min %.3f max %.3f)", name[p], n, d, t[p][t[p].size() / 2], t[p].front(), t[p].back());
    if (p > 0) printf("  -> %.0f ns per dependency over one stream", (t[p][t[p].size() / 2] - t[0][t[0].size() / 2]) * 1e6 / (p >= 3 ? n : n - 1));
    printf("\n");
  }
  return 0;
}
