/*
 * tools/bench/report.h: the result rows of cuasync-bench and how they are
 * written (table, CSV, JSON, SVG through gnuplot).
 */
#ifndef CUA_BENCH_REPORT_H
#define CUA_BENCH_REPORT_H

#include "bench.h"

#include <stdio.h>

/** Points of a METG sweep kept for the report and the plot. */
#define BENCH_METG_POINTS 16

/** How a METG sweep ended. */
enum bench_metg_state {
  BENCH_METG_NONE = 0,       /**< not swept */
  BENCH_METG_FOUND = 1,      /**< crossed 50% at metg_ns */
  BENCH_METG_BELOW = 2,      /**< already >= 50% at the smallest duration */
  BENCH_METG_NOT_REACHED = 3 /**< never 50%: plateau, budget or range end */
};

/** One row: a workload under one contender or baseline. Doubles that do
 * not apply are NAN (written "-", empty, or null). */
typedef struct bench_row {
  char workload[32];
  char contender[160]; /**< policy label, or the baseline's name */
  const char *kind;    /**< "cuasync" or "baseline" */
  char backend[64];    /**< the backend's name: "cuda", "host", "sim"... */
  char submit[8];      /**< cuasync rows: "whole", "task", "level"; "-" */
  /** The run's parameters, tasks to blocks: set when the row is made,
   * so that a row that fails keeps them; where @c params is 0 (a row that
   * failed before its workload had a shape) they are empty. */
  int params;
  size_t tasks;
  int width, streams, devices, repeat;
  uint64_t duration_ns; /**< SPIN duration (nominal) */
  uint32_t blocks;
  double task_ns;     /**< nominal compute task duration used for ideal */
  double makespan_ns; /**< median of the runs */
  double per_task_ns; /**< makespan / tasks (dispatch: ns per call) */
  double throughput;  /**< tasks per second */
  double overhead_ns; /**< (makespan - best raw makespan) / tasks */
  double ideal_ns;
  double efficiency;  /**< ideal / makespan */
  double lpt_ns;      /**< trivial pattern: the LPT schedule's makespan */
  double vs_lpt;      /**< makespan / lpt_ns (0: no LPT) */
  double concurrency; /**< compute tasks * task_ns / makespan */
  double events_per_kop, waits_per_kop, peer_waits_per_kop;
  /** host time in cua_submit() per op (raw-sync latency: the launch's) */
  double submit_ns_per_op;
  double ratio;       /**< makespan (or p50) / best raw baseline's */
  double scaling;     /**< submit-mt: rate / the same row's one-thread rate */
  char best_raw[160]; /**< which baseline that was */
  double build_ns_per_op;
  double capture_ns_per_op; /**< graph mode and raw-graph: the backend's
                                 capture and instantiation alone */
  double create_vs_raw;     /**< graph mode on CUDA: cua_graph_create()
                                 over raw-graph's capture, interleaved */
  double create_vs_same;    /**< the same over a raw capture of the
                                 policy's own schedule */
  double vs_same_graph;     /**< graph mode on CUDA: the makespan over
                                 that raw capture's, run in turn */
  double lat_p50_ns, lat_p99_ns;
  int metg_state;
  double metg_ns;
  size_t metg_points;
  double metg_d[BENCH_METG_POINTS], metg_eff[BENCH_METG_POINTS];
  int valid; /**< ran, and not faster than its critical path */
  char error[320];
} bench_row;

/** What the header of every format says. */
typedef struct bench_meta {
  const char *version;
  const char *backends; /**< e.g. "cuda" or "host" or "cuda,host" */
  bench_sysinfo cuda;
  int have_cuda_info;
  char cpu[128];
  long cpus;
  char hostname[64];
  char date[32];
  size_t tasks;
  int width, streams, repeat, quick, metg, axpy;
  uint64_t duration_ns, seed;
  unsigned skew;       /* --skew: 1 none */
  unsigned skew_share; /* --skew-share: percent of spins skewed */
  int all_devices;     /* --devices all */
  int no_hints;        /* --hints off */
  uint32_t blocks;
  size_t bytes;
  /** the --submit modes, comma-separated: each at most once, so all five
   * at most (24 bytes were too few for them, and all five overflowed) */
  char submit[sizeof "whole,task,level,graph,auto"];
  const char *machine; /**< --machine FILE, or NULL */
} bench_meta;

enum { BENCH_FMT_TABLE = 0, BENCH_FMT_CSV = 1, BENCH_FMT_JSON = 2 };

void bench_write(FILE *out, int format, const bench_meta *meta,
                 const bench_row *rows, size_t n);
/** Writes an SVG through gnuplot to @p dst, the file @p path opened for
 * writing, which it closes; 0, or -1 with @p err set (gnuplot failed, or
 * the SVG could not be written). */
int bench_plot(FILE *dst, const char *path, const bench_meta *meta,
               const bench_row *rows, size_t n, char *err, size_t len);
/** A Gantt chart (SVG, through gnuplot) of the perfetto trace @p trace:
 * a row per stream, a box per op slice coloured by its name. 0; 1 (with
 * @p err set, nothing drawn) when the trace is absent, has no slices or
 * over @p max_slices; -1 with @p err set. */
int bench_gantt(const char *svg, const char *trace, const char *title,
                size_t max_slices, char *err, size_t len);
/** Opens @p path for writing without emptying it, so that a run that
 * gives up before its results are written leaves an earlier file as it
 * was; @p created says whether the file did not exist (and is to be
 * removed then). NULL with errno set when it cannot be written. */
FILE *bench_open_later(const char *path, int *created);
/** Empties @p f, opened by bench_open_later(), before its contents are
 * written; a device or a pipe is left as it is. 0, or -1 with errno. */
int bench_file_empty(FILE *f);
/** Whether an executable gnuplot is in $PATH. */
int bench_have_gnuplot(void);

#endif /* CUA_BENCH_REPORT_H */
