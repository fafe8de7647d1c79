// waitlat: what a cross-stream event wait costs on the device.
// K spin kernels of D ns: all on one stream, or alternating between two
// streams with an event record + wait between every pair (a ping-pong).
// (T2 - T1) / K is the device's latency of one cross-stream dependency.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <time.h>
__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
static double now() { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e9 + ts.tv_nsec; }
int main(int argc, char **argv) {
  int K = 2000;
  cudaStream_t s[2]; cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking);
  std::vector<cudaEvent_t> ev(K);
  for (auto &e : ev) cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  unsigned long long durs[] = {0, 5000, 50000};
  for (unsigned long long D : durs) {
    std::vector<double> r1, r2;
    for (int rep = 0; rep < 7; rep++) {
      // Queue behind a long spin so the host is far ahead of the device.
      for (int mode = 0; mode < 2; mode++) {
        cudaDeviceSynchronize();
        spin<<<1, 1, 0, s[0]>>>(50000000ull); // 50 ms head start
        double t0 = now();
        for (int k = 0; k < K; k++) {
          int st = mode ? (k & 1) : 0;
          if (mode && k > 0) cudaStreamWaitEvent(s[st], ev[k - 1], 0);
          spin<<<1, 1, 0, s[st]>>>(D);
          if (mode) cudaEventRecord(ev[k], s[st]);
        }
        double th = now() - t0;
        cudaDeviceSynchronize();
        double t = now() - t0;
        (mode ? r2 : r1).push_back(t);
        if (rep == 0) fprintf(stderr, "D=%llu mode=%d host %.0f ns/op\n", D, mode, th / K);
      }
    }
    std::sort(r1.begin(), r1.end()); std::sort(r2.begin(), r2.end());
    double m1 = r1[3], m2 = r2[3];
    printf("spin %llu ns: one stream %.1f ns/op, ping-pong %.1f ns/op, wait latency %.1f ns (medians of 7, K=%d, after a 50 ms head)\n",
           D, (m1 - 50e6) / K, (m2 - 50e6) / K, (m2 - m1) / K, K);
  }
  return 0;
}
