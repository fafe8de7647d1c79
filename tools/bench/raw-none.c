/*
 * tools/bench/raw-none.c: the raw CUDA baselines where cuasync was
 * configured without CUDA. Every entry point says so; the host backend and
 * its plain-threads baseline still work.
 */
#include "config.h"

#include "bench.h"

#include <stdio.h>
#include <string.h>

static const char no_cuda[] =
    "raw CUDA baselines not available: cuasync was configured without CUDA";

int bench_raw_available(char *why, size_t len) {
  snprintf(why, len, "%s", no_cuda);
  return 0;
}

int bench_raw_sysinfo(bench_sysinfo *info) {
  memset(info, 0, sizeof *info);
  return -1;
}

int bench_raw_open(bench_raw **raw, const bench_dag *dag,
                   const bench_plan *plan, int mode, char *err, size_t len) {
  (void)dag;
  (void)plan;
  (void)mode;
  *raw = NULL;
  snprintf(err, len, "%s", no_cuda);
  return -1;
}

int bench_raw_run(bench_raw *raw, uint64_t *ns, char *err, size_t len) {
  (void)raw;
  *ns = 0;
  snprintf(err, len, "%s", no_cuda);
  return -1;
}

void bench_raw_close(bench_raw *raw) {
  (void)raw;
}

void bench_raw_keep_plan(bench_raw *raw, bench_plan *plan) {
  (void)raw;
  (void)plan;
}

uint64_t bench_raw_build_ns(const bench_raw *raw) {
  (void)raw;
  return 0;
}

int bench_raw_recapture(bench_raw *raw, uint64_t *ns, uint64_t *inst_ns,
                        char *err, size_t len) {
  (void)raw;
  *ns = 0;
  if (inst_ns != NULL)
    *inst_ns = 0;
  snprintf(err, len, "%s", no_cuda);
  return -1;
}

int bench_raw_submit(int nthreads, size_t n, int nstreams, uint64_t *ns,
                     char *err, size_t len) {
  (void)nthreads;
  (void)n;
  (void)nstreams;
  *ns = 0;
  snprintf(err, len, "%s", no_cuda);
  return -1;
}

int bench_raw_sync_latency(size_t iters, uint64_t *samples, uint64_t *launch,
                           char *err, size_t len) {
  (void)iters;
  (void)samples;
  (void)launch;
  snprintf(err, len, "%s", no_cuda);
  return -1;
}

int bench_raw_callback_latency(size_t iters, uint64_t *samples, char *err,
                               size_t len) {
  (void)iters;
  (void)samples;
  snprintf(err, len, "%s", no_cuda);
  return -1;
}

int bench_raw_axpy_ns(size_t bytes, uint64_t *ns, char *err, size_t len) {
  (void)bytes;
  *ns = 0;
  snprintf(err, len, "%s", no_cuda);
  return -1;
}
