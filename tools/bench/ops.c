/*
 * tools/bench/ops.c: bench-ops, one run of one workload DAG through
 * cuasync and nothing else, for instruction counts (callgrind-per-op.sh):
 * no baseline, no warm-up, every spin of 0 ns, so that what a run costs is
 * cuasync's own work. Not installed.
 *
 *   bench-ops PATTERN TASKS SUBMIT [POLICY [WIDTH [RUNS]]]
 *
 * PATTERN is one of the Task Bench patterns of cuasync-bench (chain,
 * random, ...), SUBMIT is whole, task or level (cuasync-bench --submit),
 * POLICY defaults to round-robin and WIDTH to 1 for chain, else 8. RUNS
 * (default 1, at most 100) runs the same DAG that many times on the same
 * runtime: the difference between 3 runs and 1, halved, is what a run
 * costs once the runtime's pools and events are warm and the ops built
 * (callgrind-per-op.sh's warm column). The
 * runtime is opened on the host backend (or $CUASYNC_BENCH_OPS_BACKEND's,
 * for a profile on a GPU) with the built-in configuration only. Prints the
 * tasks run and the host time of the run (the last one, with RUNS); exit 0,
 * 1 when a run failed, 2 on bad usage.
 */
#include "config.h"

#include "cuasync_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
  fprintf(stderr, "usage: bench-ops PATTERN TASKS whole|task|level "
                  "[POLICY [WIDTH [RUNS]]]\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 7)
    return usage();
  setenv("CUASYNC_MODELS", "memory", 0); /* nothing read or written */
  const char *pattern = argv[1], *policy = argc > 4 ? argv[4] : "round-robin";
  char *end;
  unsigned long long tasks = strtoull(argv[2], &end, 10);
  if (*end || tasks == 0 || tasks > 10000000)
    return usage();
  int mode = -1;
  for (int m = 0; m < BENCH_SUBMIT_MODES; m++)
    if (strcmp(argv[3], bench_submit_name(m)) == 0)
      mode = m;
  if (mode < 0)
    return usage();
  int width = strcmp(pattern, "chain") == 0 ? 1 : 8;
  if (argc > 5 && ((width = atoi(argv[5])) < 1 || width > 65536))
    return usage();
  int runs = 1;
  if (argc > 6 && ((runs = atoi(argv[6])) < 1 || runs > 100))
    return usage();

  char err[320], text[256];
  bench_shape sh;
  bench_dag dag;
  memset(&sh, 0, sizeof sh);
  sh.tasks = (size_t)tasks;
  sh.width = width;
  sh.blocks = 1;
  sh.bytes = 4;
  sh.seed = 1;
  sh.ndevices = 1;
  if (bench_dag_make(&dag, pattern, &sh, err, sizeof err) != 0) {
    fprintf(stderr, "bench-ops: %s\n", err);
    return 2;
  }
  cua_runtime_options ro;
  memset(&ro, 0, sizeof ro);
  ro.size = sizeof ro;
  /* $CUASYNC_BENCH_OPS_BACKEND: another backend (cuda), for profiles. */
  const char *be = getenv("CUASYNC_BENCH_OPS_BACKEND");
  snprintf(text, sizeof text, "[runtime]\nbackend = %s\npolicy = %s\n",
           be != NULL && *be ? be : "host", policy);
  ro.config_text = text;
  ro.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  cua_runtime *rt = NULL;
  int rc = cua_runtime_create_ex(&rt, &ro);
  if (rc) {
    fprintf(stderr, "bench-ops: %s: %s\n", cua_err_name(rc),
            cua_runtime_error(NULL));
    bench_dag_free(&dag);
    return 1;
  }
  bench_cua *g = NULL;
  uint64_t build = 0, ns = 0;
  int status = 0;
  int bad = bench_cua_open(&g, rt, &dag, mode, &build, err, sizeof err) != 0;
  for (int i = 0; i < runs && !bad; i++)
    bad = bench_cua_run(g, &ns, NULL, err, sizeof err) != 0;
  if (bad) {
    fprintf(stderr, "bench-ops: %s\n", err);
    status = 1;
  } else {
    printf("%s %zu tasks, submit %s, policy %s: %.0f ns (ops built in %.0f "
           "ns; graph mode: %d captures among them, %.0f ns the fastest)\n",
           pattern, dag.n, bench_submit_name(mode), policy, (double)ns,
           (double)build, BENCH_CAPTURES, (double)bench_cua_create_ns(g));
  }
  bench_cua_close(g);
  cua_runtime_destroy(rt);
  bench_dag_free(&dag);
  return status;
}
