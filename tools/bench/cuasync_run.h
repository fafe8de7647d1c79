/*
 * tools/bench/cuasync_run.h: running workload DAGs through cuasync, and the
 * other parts of the bench that need the public API.
 */
#ifndef CUA_BENCH_CUASYNC_RUN_H
#define CUA_BENCH_CUASYNC_RUN_H

#include "bench.h"

#include <cuasync.h>

/** A workload DAG built as cuasync ops on one runtime. */
typedef struct bench_cua bench_cua;

/** Creates the DAG's buffers (untimed) and ops (timed into *build_ns), for
 * submission mode @p mode (enum bench_submit). */
int bench_cua_open(bench_cua **g, cua_runtime *rt, const bench_dag *dag,
                   int mode, uint64_t *build_ns, char *err, size_t len);
/** Build cost: the ops, plus (task and level modes) the mean cost of the
 * shared wrappers each run makes before its clock starts. */
uint64_t bench_cua_build_ns(const bench_cua *g);
/** The last run's host time in cua_submit() (all of a run's submissions,
 * or cua_graph_launch() in graph mode), ns. */
uint64_t bench_cua_submit_ns(const bench_cua *g);
/** Graph mode: what cua_graph_create() alone took (placement, capture,
 * instantiation), the ops already built, the fastest of BENCH_CAPTURES; 0
 * in the other modes. */
uint64_t bench_cua_create_ns(const bench_cua *g);
/** Graph mode: of that, the backend's capture and instantiation
 * (cua_graph_info::capture_ns), the fastest of BENCH_CAPTURES. */
uint64_t bench_cua_capture_ns(const bench_cua *g);
/** Graph mode: the plan of the schedule the policy chose (each task on the
 * stream cua_graph_placement() gives), for raw-graph to capture the same
 * graph by hand. 0, or -1 with *err set (*plan then empty). */
int bench_cua_placed_plan(const bench_cua *g, bench_plan *plan, char *err,
                          size_t len);
/** Graph mode: creates the graph again (the old one destroyed), *ns what
 * cua_graph_create() took, *info (unless NULL; its size set) the new
 * graph's. 0 or -1. */
int bench_cua_recreate(bench_cua *g, uint64_t *ns, cua_graph_info *info,
                       char *err, size_t len);
/** One run: *ns from the first cua_submit() to the return of the last
 * cua_future_wait() on an idle runtime; *delta the runtime's counters over
 * the run. */
int bench_cua_run(bench_cua *g, uint64_t *ns, cua_stats *delta, char *err,
                  size_t len);
/** Waits for the runtime, then frees the ops, buffers and host chunks. */
void bench_cua_close(bench_cua *g);
/** Future completion latency: @p warmup + @p iters times, submit a spin op
 * of 0 ns and wait; samples[i] is submit-to-wait-return, and submit[i]
 * (unless NULL) the part of it spent in cua_submit(). */
int bench_cua_latency(cua_runtime *rt, size_t iters, size_t warmup,
                      uint64_t *samples, uint64_t *submit, char *err,
                      size_t len);

/** Submission rate: @p nthreads threads at once submit one spin op of 0 ns
 * @p n times in all (each submission its own future), then each waits for
 * its futures in order; *ns from the first submission to the last thread's
 * last wait. Untimed before: a warm-up that lets the policy open its
 * streams. */
int bench_cua_submit(cua_runtime *rt, int nthreads, size_t n, uint64_t *ns,
                     char *err, size_t len);

/** Policy dispatch: @p calls place() calls through round-robin's module
 * (dlopen()ed from $CUASYNC_MODULE_PATH or the installed policies) and
 * through a static copy of the same function, both through function
 * pointers. *path is where the module was found. */
int bench_dispatch(size_t calls, double *module_ns, double *static_ns,
                   char *path, size_t pathlen, char *err, size_t len);

#endif /* CUA_BENCH_CUASYNC_RUN_H */
