/* doc/results/s32-phases/phases.cu (thirty-second session, experiment):
 * where a micro-chain submission's time goes on a GPU. R rounds, each a
 * raw loop of N launches of a 0 ns spin kernel on one non-blocking stream
 * (each call timed) and one cuasync submission of a chain of N 0 ns spins
 * (one submission, the same DAG every round), whose launches the
 * "phases" observer timestamps. Prints per round: raw total and mean call,
 * cuasync total, time to its first launch, mean call, mean gap between
 * launches, time after its last launch. */
#include <cuasync.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.cuh"
#define CK(x)                                                                  \
  do {                                                                         \
    int rc_ = (int)(x);                                                        \
    if (rc_) {                                                                 \
      fprintf(stderr, "%s: %d %s\n", #x, rc_, cua_runtime_error(rt));          \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoul(argv[1], 0, 10) : 10000;
  int rounds = argc > 2 ? atoi(argv[2]) : 8;
  const char *conf = argc > 3 ? argv[3] : NULL;
  cua_runtime *rt = NULL;
  CK(cua_runtime_create(&rt, conf));
  cua_op *cur = NULL;
  for (size_t k = 0; k < n; k++) {
    cua_op *s = NULL, *t = NULL;
    CK(cua_op_spin(&s, rt, 0, 1));
    if (cur == NULL) {
      cur = s;
      continue;
    }
    CK(cua_op_then(&t, cur, s));
    cua_op_destroy(cur);
    cua_op_destroy(s);
    cur = t;
  }
  cudaStream_t st;
  cudaSetDevice(0);
  /* What a check of the current device costs: 1M calls of each. */
  {
    int dev;
    CUcontext ctx;
    cudaFree(0);
    for (int rep = 0; rep < 3; rep++) {
      uint64_t a = now();
      for (int i = 0; i < 1000000; i++)
        cudaGetDevice(&dev);
      uint64_t b = now();
      for (int i = 0; i < 1000000; i++)
        cuCtxGetCurrent(&ctx);
      uint64_t c = now();
      printf("# cudaGetDevice %.1f ns, cuCtxGetCurrent %.1f ns\n",
             (b - a) / 1e6, (c - b) / 1e6);
    }
  }
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  uint64_t *call = (uint64_t *)calloc(n, sizeof *call);
  uint64_t rawgd[64], rawpl[64], sub[64], done[64], raw[64], rawcall[64];
  for (int r = 0; r < rounds && r < 64; r++) {
    cudaStreamSynchronize(st);
    uint64_t a = now(), c = 0;
    for (size_t k = 0; k < n; k++) {
      uint64_t t0 = now();
      void *args[] = {&c};
      cudaLaunchKernel((const void *)spin, dim3(1), dim3(1), args, 0, st);
      call[k] = now() - t0;
    }
    cudaStreamSynchronize(st);
    raw[r] = now() - a;
    /* the same with cudaGetDevice() before each launch, untimed calls */
    a = now();
    for (size_t k = 0; k < n; k++) {
      int dev = -1;
      void *args[] = {&c};
      if (cudaGetDevice(&dev) != cudaSuccess || dev != 0)
        cudaSetDevice(0);
      cudaLaunchKernel((const void *)spin, dim3(1), dim3(1), args, 0, st);
    }
    cudaStreamSynchronize(st);
    rawgd[r] = now() - a;
    /* and plain, untimed calls */
    a = now();
    for (size_t k = 0; k < n; k++) {
      void *args[] = {&c};
      cudaLaunchKernel((const void *)spin, dim3(1), dim3(1), args, 0, st);
    }
    cudaStreamSynchronize(st);
    rawpl[r] = now() - a;
    rawcall[r] = 0;
    for (size_t k = 0; k < n; k++)
      rawcall[r] += call[k];
    cua_future *f = NULL;
    cua_runtime_synchronize(rt);
    sub[r] = now();
    CK(cua_submit(&f, rt, cur, NULL));
    CK(cua_future_wait(f));
    done[r] = now();
    cua_future_destroy(f);
  }
  cua_op_destroy(cur);
  cua_runtime_destroy(rt); /* the observer writes $PHASES_OUT */
  const char *fn = getenv("PHASES_OUT");
  FILE *in = fn ? fopen(fn, "r") : NULL;
  /* submissions are numbered from 1 in order */
  uint64_t first[65] = {0}, last[65] = {0}, cnt[65] = {0}, calls[65] = {0};
  unsigned long long s, t0, t1;
  /* the last submission's launches by windows of n/10: mean call, mean
   * gap from the previous launch's start */
  double wcall[10] = {0}, wgap[10] = {0};
  size_t wn[10] = {0}, idx = 0;
  unsigned long long prev0 = 0;
  while (in != NULL && fscanf(in, "%llu %llu %llu", &s, &t0, &t1) == 3) {
    if ((int)s == rounds) {
      size_t w = idx * 10 / n;
      if (w < 10) {
        wcall[w] += (double)(t1 - t0);
        if (idx > 0)
          wgap[w] += (double)(t0 - prev0);
        wn[w]++;
      }
      prev0 = t0;
      idx++;
    }
    if (s < 1 || s > 64)
      continue;
    if (!first[s] || t0 < first[s])
      first[s] = t0;
    if (t1 > last[s])
      last[s] = t1;
    cnt[s]++;
    calls[s] += t1 - t0;
  }
  printf("round raw_ms rawcall_us cua_ms ratio first_ms cua_call_us gap_us "
         "after_ms launches plain_ms getdev_ms\n");
  for (int r = 0; r < rounds; r++) {
    int k = r + 1;
    double c = cnt[k] ? (double)cnt[k] : 1;
    printf("%d %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f %llu %.3f %.3f\n", r,
           raw[r] / 1e6, rawcall[r] / 1e3 / n, (done[r] - sub[r]) / 1e6,
           (double)(done[r] - sub[r]) / raw[r], (first[k] - sub[r]) / 1e6,
           calls[k] / 1e3 / c, (last[k] - first[k]) / 1e3 / (c > 1 ? c - 1 : 1),
           (done[r] - last[k]) / 1e6, (unsigned long long)cnt[k],
           rawpl[r] / 1e6, rawgd[r] / 1e6);
  }
  printf("# last round by tenths of its launches: call_us/gap_us");
  for (int w = 0; w < 10; w++)
    printf(" %.3f/%.3f", wn[w] ? wcall[w] / wn[w] / 1e3 : 0.0,
           wn[w] ? wgap[w] / wn[w] / 1e3 : 0.0);
  printf("\n");
  return 0;
}
