/*
 * tools/bench/bench.h: what the parts of cuasync-bench share.
 *
 * A workload is a DAG of tasks (bench_dag), generated once per workload and
 * then run by every contender (cuasync under a policy, cuasync_run.c) and by
 * the hand-written baselines: raw CUDA (raw.cu, or raw-none.c where CUDA was
 * not configured) and plain threads (threads.c). Tasks are listed in a
 * topological order: every predecessor of task k has an index below k.
 *
 * This header is also compiled as C++ by nvcc (raw.cu): keep it plain C with
 * the extern "C" guard.
 */
#ifndef CUA_BENCH_H
#define CUA_BENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How cuasync contenders submit a workload DAG (--submit). */
enum bench_submit {
  BENCH_SUBMIT_WHOLE = 0, /**< the whole DAG in one cua_submit() */
  BENCH_SUBMIT_TASK = 1,  /**< one submission per task, in task order */
  BENCH_SUBMIT_LEVEL = 2, /**< one submission per level (depth) */
  BENCH_SUBMIT_GRAPH = 3, /**< captured once (cua_graph_create()), then
                               one cua_graph_launch() per run */
  BENCH_SUBMIT_AUTO = 4,  /**< whole, on a runtime with [runtime] graphs =
                               auto: the warm-up run captures, the timed
                               runs replay */
  BENCH_SUBMIT_MODES = 5
};
/** "whole", "task", "level", "graph" or "auto". */
const char *bench_submit_name(int mode);

/** Submitting threads of the submit-mt workload. */
#define BENCH_SUBMIT_THREADS 4

/** Most predecessors a task may have (the random pattern draws 1 to 5). */
#define BENCH_MAX_PRED 5

/** What a task does. SPIN and AXPY are compute tasks (they count in the
 * ideal time); the copies of the pipeline pattern count as zero. */
enum bench_task_kind {
  BENCH_SPIN = 0, /**< calibrated spin kernel (host: compute) of dag->ns */
  BENCH_AXPY = 1, /**< y = a * x + y over dag->bytes, y = buffer buf */
  BENCH_H2D = 2,  /**< pinned host chunk buf -> device buffer buf */
  BENCH_D2H = 3   /**< device buffer buf -> pinned host chunk buf */
};

/** One task of a workload DAG. */
typedef struct bench_task {
  uint8_t kind;                 /**< enum bench_task_kind */
  uint8_t npred;                /**< predecessors, 0..BENCH_MAX_PRED */
  uint16_t scale;               /**< a SPIN lasts scale * dag->ns (0: 1) */
  int32_t pred[BENCH_MAX_PRED]; /**< their indices, all below this one */
  int32_t lane;   /**< hand-written placement: stream lane % streams */
  int32_t device; /**< device (multigpu pattern), else 0 */
  int32_t buf;    /**< buffer index (AXPY, copies), -1 for none */
} bench_task;

/** A workload: its tasks and what they need. */
typedef struct bench_dag {
  char name[32];     /**< workload name */
  size_t n;          /**< tasks */
  bench_task *task;  /**< n tasks, topologically ordered */
  uint64_t ns;       /**< duration of a SPIN task, nanoseconds */
  uint32_t blocks;   /**< blocks of a SPIN kernel */
  size_t nbuf;       /**< device buffers the tasks use (0: none) */
  size_t bytes;      /**< bytes of each buffer (a multiple of 4) */
  int ndevices;      /**< devices the DAG is spread over (>= 1) */
  int device_hints;  /**< ops hint their task's device (multigpu) */
  int width;         /**< the pattern's width, for the report */
  size_t ncompute;   /**< SPIN and AXPY tasks, a task of scale R counting
                          R (--skew) */
  size_t cp_compute; /**< the same on the path that has most */
  size_t edges;      /**< dependency edges */
  int skewed;        /**< some SPIN tasks are long (--skew): ops are named
                          "short" and "long" */
  int no_hints;      /**< --hints off: every SPIN hints the same 1 ns */
} bench_dag;

/** Parameters of a workload generator. */
typedef struct bench_shape {
  size_t tasks;        /**< requested tasks (the pattern may round) */
  int width;           /**< chains, stencil width, random layer width */
  uint64_t ns;         /**< SPIN duration */
  uint32_t blocks;     /**< SPIN blocks */
  int axpy;            /**< compute tasks are AXPY instead of SPIN */
  size_t bytes;        /**< AXPY buffer / pipeline chunk bytes */
  uint64_t seed;       /**< random pattern seed */
  int ndevices;        /**< devices for the multigpu pattern */
  int spread;          /**< --devices all: every pattern over ndevices */
  unsigned skew;       /**< > 1: skew_share percent of the SPINs (drawn from
                            seed) last skew times ns */
  unsigned skew_share; /**< percent, 1..100 (0: 25) */
  int no_hints;        /**< SPINs hint nothing about their duration */
} bench_shape;

/** How long task @p t of @p dag spins, in nanoseconds. */
static inline uint64_t bench_task_ns(const bench_dag *dag,
                                     const bench_task *t) {
  return dag->ns * (t->scale > 1 ? t->scale : 1);
}

/** The workload patterns, in the order of `--workload all`. */
extern const char *const bench_patterns[];
/** Generates pattern @p name into @p dag; 0, or -1 with @p err set. */
int bench_dag_make(bench_dag *dag, const char *name, const bench_shape *sh,
                   char *err, size_t len);
void bench_dag_free(bench_dag *dag);
/** The ideal makespan for compute tasks of @p task_ns on @p p queues:
 * task_ns * max(ncompute / p, cp_compute). */
double bench_dag_ideal(const bench_dag *dag, double task_ns, int p);
/** For a DAG without edges (trivial), the makespan of the
 * longest-processing-time-first schedule of its compute tasks on @p p
 * queues (each task, longest first, on the queue that is free first); 0
 * for a DAG with edges. */
double bench_dag_lpt(const bench_dag *dag, double task_ns, int p);

/**
 * A hand-written multi-stream schedule of a DAG: task k runs on stream
 * stream[k] (device * nstreams + stream index) and, before it, waits on the
 * events recorded after the tasks wait[wait_off[k] .. wait_off[k + 1]).
 * The waits are the fewest that order every cross-stream edge, given that
 * placement: an edge is skipped when the consumer's stream is already
 * ordered after the producer (vector clocks over the waits made so far).
 * record[k] says whether an event is recorded after task k.
 */
typedef struct bench_plan {
  int nstreams;     /**< streams per device */
  int ndevices;     /**< devices */
  int32_t *stream;  /**< per task */
  uint8_t *record;  /**< per task */
  size_t *wait_off; /**< n + 1 offsets into wait */
  int32_t *wait;    /**< producer task indices */
  size_t nrecords;  /**< events recorded */
  size_t nwaits;    /**< stream waits */
} bench_plan;
int bench_plan_make(bench_plan *plan, const bench_dag *dag, int nstreams,
                    char *err, size_t len);
/** The plan of a given schedule: task k on stream given[k] (device
 * given[k] / nstreams, of @p ndevices), as a policy placed it; the
 * baselines' own (bench_plan_make()) when @p given is NULL. */
int bench_plan_placed(bench_plan *plan, const bench_dag *dag, int nstreams,
                      int ndevices, const int32_t *given, char *err,
                      size_t len);
void bench_plan_free(bench_plan *plan);
/** Of @p plan's waits, those for a producer on another device. */
size_t bench_plan_peer_waits(const bench_plan *plan, size_t ntasks);

/** Monotonic clock in nanoseconds (CLOCK_MONOTONIC, the clock every part of
 * the bench and the host callbacks use). */
/** Graph mode and raw-graph: captures timed per measurement of what a
 * graph costs to make (the fastest is reported). On an H200 host the
 * fastest of three still moved by up to 1.8x from run to run, on both
 * sides, and the instantiation of one graph alone by 1.6x from one
 * capture to the next. */
#define BENCH_CAPTURES 15
/** The least of @p n values (0 for none). */
uint64_t bench_min_u64(const uint64_t *v, size_t n);
uint64_t bench_now_ns(void);

/* ------------------------------------------------------------ raw CUDA */

/** What a results file says about the machine. */
typedef struct bench_sysinfo {
  char gpu[256];       /**< device 0's name, or "" */
  int gpus;            /**< CUDA devices visible */
  int driver_version;  /**< cudaDriverGetVersion(), 0 if unknown */
  int runtime_version; /**< cudaRuntimeGetVersion(), 0 if unknown */
  int cc_major, cc_minor;
} bench_sysinfo;

/** The raw CUDA baselines. */
enum bench_raw_mode {
  BENCH_RAW_SERIAL = 0,  /**< every task on one stream, in order */
  BENCH_RAW_STREAMS = 1, /**< the plan's streams and events */
  BENCH_RAW_GRAPH = 2,   /**< the plan captured once as a CUDA graph */
  /** STREAMS with device timestamps of every task (--timestamps): */
  BENCH_RAW_TS_EVENTS = 3, /**< a timing event before and after each */
  BENCH_RAW_TS_DEVICE = 4, /**< a kernel writing the GPU's timer */
  BENCH_RAW_TS_CUPTI = 5   /**< CUPTI's activity records */
};

typedef struct bench_raw bench_raw;

/** 1 when the raw CUDA baselines can run (built with CUDA and a device is
 * usable), else 0 with the reason in @p why. */
int bench_raw_available(char *why, size_t len);
/** Fills @p info (zeroes where CUDA is absent); 0 or -1. */
int bench_raw_sysinfo(bench_sysinfo *info);
/** Sets up a baseline of @p mode for @p dag (streams, events, buffers,
 * the graph): nothing of it is timed. @p plan is unused by SERIAL. */
int bench_raw_open(bench_raw **raw, const bench_dag *dag,
                   const bench_plan *plan, int mode, char *err, size_t len);
/** One run: launches the DAG on idle devices and waits for the end; *ns is
 * the host time from the first launch call to the end of the last
 * synchronisation. */
int bench_raw_run(bench_raw *raw, uint64_t *ns, char *err, size_t len);
void bench_raw_close(bench_raw *raw);
/** raw-graph: the capture and instantiation of the graph, ns (0 for the
 * other modes). */
uint64_t bench_raw_build_ns(const bench_raw *raw);
/** Makes @p raw, opened on @p plan, own it: its arrays are freed with
 * @p raw, and *plan is emptied. */
void bench_raw_keep_plan(bench_raw *raw, bench_plan *plan);
/** raw-graph: captures and instantiates the graph again (the old one
 * destroyed), *ns what that took, *inst_ns (unless NULL) the
 * instantiation alone; 0 or -1. */
int bench_raw_recapture(bench_raw *raw, uint64_t *ns, uint64_t *inst_ns,
                        char *err, size_t len);
/** Submission rate: @p nthreads threads at once launch @p n spin kernels
 * of 0 ns in all (thread t its share, round-robin over @p nstreams streams
 * from stream t), then every stream is synchronised; *ns from the start of
 * the launches to the end of the synchronisation. */
int bench_raw_submit(int nthreads, size_t n, int nstreams, uint64_t *ns,
                     char *err, size_t len);
/** Launch + synchronise latency: @p iters times, a spin kernel of 0 ns then
 * cudaStreamSynchronize() on one idle stream; samples[i] from the launch
 * call to the synchronisation's return, and launch[i] (unless @p launch is
 * NULL) from the launch call to its return. */
int bench_raw_sync_latency(size_t iters, uint64_t *samples, uint64_t *launch,
                           char *err, size_t len);
/** Host-callback latency: @p iters times, an empty kernel then
 * cudaLaunchHostFunc() on one idle stream; samples[i] is the time from the
 * kernel's launch call to the callback's first instruction. */
int bench_raw_callback_latency(size_t iters, uint64_t *samples, char *err,
                               size_t len);
/** Duration of one AXPY kernel over @p bytes on device 0 (CUDA events,
 * mean of many back-to-back launches). */
int bench_raw_axpy_ns(size_t bytes, uint64_t *ns, char *err, size_t len);

/* ------------------------------------------------------ plain threads */

typedef struct bench_threads bench_threads;

/** Sets up the threads baseline: @p nthreads workers that execute the DAG
 * with a mutex/condvar dependency count (SPIN computes for its duration as
 * the host backend does, AXPY and copies run on host memory). */
int bench_threads_open(bench_threads **th, const bench_dag *dag, int nthreads,
                       char *err, size_t len);
/** One run: *ns from releasing the workers to the last task's end. */
int bench_threads_run(bench_threads *th, uint64_t *ns, char *err, size_t len);
void bench_threads_close(bench_threads *th);
/** Submission rate of a plain thread pool: @p nworkers workers, each with
 * its own queue (a stream); @p nthreads threads at once post @p n empty
 * tasks in all, round-robin over the queues (lock, append, signal), then
 * wait until every queue has run what it was given; *ns from the first
 * post to the end of the wait. */
int bench_threads_submit(int nthreads, size_t n, int nworkers, uint64_t *ns,
                         char *err, size_t len);
/** Busy computation for @p ns nanoseconds, calibrated as the host
 * backend's spins are (a SPIN task of the threads baseline). */
void bench_threads_spin(uint64_t ns);
/** Wake-up latency of a worker thread: post an empty task, wait for its
 * completion on a condition variable. */
int bench_threads_latency(size_t iters, uint64_t *samples, char *err,
                          size_t len);
/** Duration of one host AXPY over @p bytes (mean of many). */
uint64_t bench_threads_axpy_ns(size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* CUA_BENCH_H */
