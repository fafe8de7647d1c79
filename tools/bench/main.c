/*
 * tools/bench/main.c: cuasync-bench, cuasync against hand-written
 * equivalents, workload by workload, in one process and one run.
 *
 * Contenders are cuasync runtimes, one per --policy or --config (default:
 * the four standard policies). For each workload the DAG is generated once
 * per backend in use; then every baseline of that backend (raw CUDA:
 * serial, streams, graph; host: plain threads) and every contender of that
 * backend runs it: one warm-up run, then --repeat timed runs, of which the
 * median is reported. Derived metrics compare each row with the fastest
 * baseline of its backend. Contenders run each DAG once per submission
 * mode of --submit (whole, task, level, graph: cuasync_run.c). See
 * cuasync-bench(1) for every definition.
 */
#include "config.h"

#include "cuasync_run.h"
#include "report.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define PROG "cuasync-bench"
#define ERRLEN 320

enum { EXIT_RUN = 1, EXIT_USAGE = 2, EXIT_PLOT = 3 };

static const char *const standard_policies[] = {"single-stream", "round-robin",
                                                "least-loaded", "affinity"};

/* The micro-benchmarks, after the patterns in `--workload all`. */
static const char *const micro_workloads[] = {
    "micro-chain", "micro-indep", "micro-random", "latency",
    "submit",      "submit-mt",   "dispatch",     NULL};

typedef struct contender {
  const char *spec; /* policy name or config path, as given */
  int is_config;
  char label[160];
  cua_runtime *rt_all; /* every device */
  cua_runtime *rt_one; /* device 0 only (== rt_all with one device) */
  /* --submit auto: the same, opened with $CUASYNC_GRAPHS=auto */
  cua_runtime *auto_all, *auto_one;
  char backend[64];
  int ndev;
} contender;

typedef struct options {
  const char *backend;
  const char **workloads;
  size_t nworkloads;
  size_t tasks, bytes;
  int width, repeat, streams, blocks, axpy, metg, quick, format;
  uint64_t duration, seed;
  unsigned skew;
  unsigned skew_share;
  int no_hints;
  int all_devices;       /* --devices all */
  const char *machine;   /* --machine: the sim backend's machine file */
  const char *trace_dir; /* --trace DIR */
  int timestamps;        /* --timestamps: the raw-ts-* baselines */
  const char *output, *plot;
  int output_created, plot_created; /* did not exist before this run */
  int set_tasks, set_width, set_repeat, set_bytes;
  int submit[BENCH_SUBMIT_MODES]; /* the --submit modes, in order */
  int nsubmit;
} options;

/* A backend in use: what its DAGs and baselines need. */
typedef struct group {
  const char *backend;
  int ndev;       /* devices for the multigpu pattern */
  double axpy_ns; /* nominal AXPY duration, when --kernel axpy */
  int raw_ok;     /* cuda: raw baselines can run */
  char raw_why[256];
} group;

static int progress_on;
static size_t progress_step;

static void progress(const char *fmt, ...) {
  va_list ap;
  if (!progress_on)
    return;
  va_start(ap, fmt);
  fprintf(stderr, "\r\033[K[%zu] ", ++progress_step);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fflush(stderr);
}

static void progress_end(void) {
  if (progress_on)
    fputs("\r\033[K", stderr);
}

/* ------------------------------------------------------------ usage */

static void usage(FILE *out) {
  fprintf(out,
          "Usage: " PROG " [OPTION]...\n"
          "Benchmarks cuasync under scheduling policies against hand-written\n"
          "raw CUDA (one stream, streams with events, a CUDA graph) or plain\n"
          "threads (host backend), on Task Bench dependency patterns.\n"
          "\n"
          "Contenders (each one is a row per workload; default: the four\n"
          "standard policies single-stream, round-robin, least-loaded and\n"
          "affinity with the built-in configuration):\n"
          "  -c, --config FILE     a runtime opened from an INI file\n"
          "  -p, --policy NAME     a runtime with [runtime] policy = NAME\n"
          "  -b, --backend B       auto|cuda|host|sim for --policy "
          "contenders (auto)\n"
          "\n"
          "Workloads:\n"
          "  -w, --workload NAME   all (default), or a comma-separated list "
          "of\n"
          "                        trivial chain stencil tree random pipeline\n"
          "                        multigpu micro-chain micro-indep "
          "micro-random\n"
          "                        latency submit submit-mt dispatch\n"
          "  -n, --tasks N         tasks per pattern (1024; --quick 64)\n"
          "  -W, --width W         chains / stencil and random width (8; "
          "quick 4)\n"
          "  -d, --duration T      task duration: ns, or with us|ms|s "
          "(50us)\n"
          "  -B, --blocks B        blocks of each spin kernel (1)\n"
          "  -k, --kernel K        spin (default) or axpy tasks\n"
          "      --bytes N         axpy buffer / pipeline chunk, K|M|G "
          "(256K)\n"
          "  -S, --streams N       streams of the baselines and of the ideal "
          "(4)\n"
          "  -s, --seed S          random pattern seed (1)\n"
          "  -K, --skew R          one spin task in four (drawn from the\n"
          "                        seed) lasts R times the duration (1)\n"
          "      --skew-share P    P percent of the spin tasks are long "
          "(25)\n"
          "      --hints on|off    off: every spin hints 1 ns, so only\n"
          "                        measurements tell them apart (on)\n"
          "      --trace DIR       one trace per contender and workload,\n"
          "                        DIR/WORKLOAD-CONTENDER.json (perfetto)\n"
          "      --timestamps      CUDA: also raw-streams with device\n"
          "                        timestamps of every task, three ways\n"
          "                        (raw-ts-events, -device, -cupti), each\n"
          "                        against raw-streams\n"
          "      --machine FILE    with -b sim: the simulated machine\n"
          "                        ([backend.sim] machine = FILE)\n"
          "      --devices one|all every pattern on device 0 but multigpu\n"
          "                        (one, default), or each over every\n"
          "                        device: the baselines' lanes dealt over\n"
          "                        the devices, policies placing freely\n"
          "  -r, --repeat R        timed runs after one warm-up; median (5; "
          "quick 3)\n"
          "  -m, --metg            sweep the task duration 1us..10ms, report "
          "METG(50%%)\n"
          "  -u, --submit M        how contenders submit each DAG: whole "
          "(one\n"
          "                        submission, default), task (one per "
          "task),\n"
          "                        level (one per level), graph "
          "(captured once,\n"
          "                        launched per run), auto (whole, with "
          "graphs =\n"
          "                        auto: replayed from the cache), or a "
          "comma-separated\n"
          "                        list (a row per mode)\n"
          "  -q, --quick           small sizes: the default run in seconds\n"
          "\n"
          "Output:\n"
          "  -f, --format F        table (default), csv or json\n"
          "  -o, --output FILE     write there instead of standard output\n"
          "  -P, --plot FILE.svg   also plot through gnuplot\n"
          "  -h, --help            this help\n"
          "  -V, --version         version\n"
          "\n"
          "Exit status: 0 ok, 1 a contender failed to open or a run failed,\n"
          "2 bad usage, 3 --plot without gnuplot. See cuasync-bench(1).\n");
}

static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(PROG ": ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\nTry '" PROG " --help'.\n", stderr);
  return EXIT_USAGE;
}

/* The name of the long option that getopt_long() refused an argument to
 * (--help=x): it sets optopt to that option's value, which would read as
 * a short option the user did not type. NULL when @p val is none. */
static const char *no_argument_name(const struct option *opts, int val) {
  for (; opts->name != NULL; opts++)
    if (opts->val == val && opts->has_arg == no_argument)
      return opts->name;
  return NULL;
}

/* Standard output flushed (--help, --version): 0, or EXIT_RUN when it
 * could not be written, said on standard error, as for the results. */
static int output_written(void) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, PROG ": cannot write the output: %s\n", strerror(errno));
    return EXIT_RUN;
  }
  return 0;
}

/* An unsigned number with an optional unit suffix from @p units (name,
 * factor pairs, NULL-terminated). */
typedef struct unit {
  const char *name;
  uint64_t factor;
} unit;

static int parse_num(const char *s, const unit *units, uint64_t lo, uint64_t hi,
                     uint64_t *out) {
  static const char digits[] = "0123456789";
  char *end;
  /* Decimal digits, maybe a fraction (1.5us): strtod() alone also takes
   * blanks, a sign, exponents, hexadecimal and inf. */
  size_t k = strspn(s, digits);
  if (k == 0)
    return -1;
  if (s[k] == '.') {
    size_t f = strspn(s + k + 1, digits);
    if (f == 0)
      return -1;
    k += 1 + f;
  }
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end != s + k)
    return -1;
  uint64_t f = 1;
  if (*end) {
    int found = 0;
    for (const unit *u = units; u != NULL && u->name != NULL; u++)
      if (strcmp(end, u->name) == 0) {
        f = u->factor;
        found = 1;
      }
    if (!found)
      return -1;
  }
  double r = v * (double)f;
  if (r < (double)lo || r > (double)hi || r != floor(r))
    return -1;
  *out = (uint64_t)r;
  return 0;
}

static const unit time_units[] = {
    {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}, {NULL, 0}};
static const unit size_units[] = {
    {"K", 1024},       {"KiB", 1024},       {"M", 1048576}, {"MiB", 1048576},
    {"G", 1073741824}, {"GiB", 1073741824}, {NULL, 0}};

static int known_workload(const char *w) {
  for (int i = 0; bench_patterns[i]; i++)
    if (strcmp(w, bench_patterns[i]) == 0)
      return 1;
  for (int i = 0; micro_workloads[i]; i++)
    if (strcmp(w, micro_workloads[i]) == 0)
      return 1;
  return 0;
}

/* Whether a comma-separated list has an empty entry ("", "a,", "a,,b"):
 * strtok_r() would skip it, and an empty --workload ran every workload. */
static int has_empty_entry(const char *list) {
  size_t n = strlen(list);
  return n == 0 || list[0] == ',' || list[n - 1] == ',' ||
         strstr(list, ",,") != NULL;
}

/* --submit: a comma-separated list of modes, each once. */
static int parse_submit(options *o, const char *list) {
  char *copy = strdup(list), *save = NULL;
  if (copy == NULL)
    return -1;
  o->nsubmit = 0;
  for (char *m = strtok_r(copy, ",", &save); m;
       m = strtok_r(NULL, ",", &save)) {
    int mode = -1, dup = 0;
    for (int i = 0; i < BENCH_SUBMIT_MODES; i++)
      if (strcmp(m, bench_submit_name(i)) == 0)
        mode = i;
    for (int i = 0; i < o->nsubmit; i++)
      dup |= o->submit[i] == mode;
    if (mode < 0 || dup) {
      free(copy);
      return -1;
    }
    o->submit[o->nsubmit++] = mode;
  }
  free(copy);
  return o->nsubmit > 0 ? 0 : -1;
}

static int is_pattern(const char *w) {
  for (int i = 0; bench_patterns[i]; i++)
    if (strcmp(w, bench_patterns[i]) == 0)
      return 1;
  return 0;
}

static int add_workloads(options *o, const char *list) {
  char *copy = strdup(list), *save = NULL;
  if (copy == NULL)
    return -1;
  for (char *w = strtok_r(copy, ",", &save); w;
       w = strtok_r(NULL, ",", &save)) {
    const char **v;
    if (strcmp(w, "all") == 0) {
      for (int i = 0; bench_patterns[i]; i++)
        if (add_workloads(o, bench_patterns[i]))
          return -1;
      for (int i = 0; micro_workloads[i]; i++)
        if (add_workloads(o, micro_workloads[i]))
          return -1;
      continue;
    }
    if (!known_workload(w)) {
      usage_error("unknown workload '%s'", w);
      free(copy);
      return -2;
    }
    for (size_t i = 0; i < o->nworkloads; i++)
      if (strcmp(o->workloads[i], w) == 0)
        goto next;
    v = realloc(o->workloads, (o->nworkloads + 1) * sizeof *v);
    if (v == NULL)
      return -1;
    o->workloads = v;
    for (int i = 0; bench_patterns[i]; i++)
      if (strcmp(w, bench_patterns[i]) == 0)
        o->workloads[o->nworkloads++] = bench_patterns[i];
    for (int i = 0; micro_workloads[i]; i++)
      if (strcmp(w, micro_workloads[i]) == 0)
        o->workloads[o->nworkloads++] = micro_workloads[i];
  next:;
  }
  free(copy);
  return 0;
}

/* ---------------------------------------------------------- statistics */

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double median(uint64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_u64);
  if (n == 0)
    return NAN;
  return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nearest-rank percentile of sorted @p v. */
static double percentile(const uint64_t *v, size_t n, double p) {
  if (n == 0)
    return NAN;
  size_t rank = (size_t)ceil(p / 100.0 * (double)n);
  if (rank < 1)
    rank = 1;
  return (double)v[rank - 1];
}

/* ---------------------------------------------------------- rows */

typedef struct rows {
  bench_row *v;
  size_t n, cap;
  int failed;
} rows;

static bench_row *row_new(rows *r, const char *workload, const char *who,
                          const char *kind, const char *backend) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    bench_row *v = realloc(r->v, cap * sizeof *v);
    if (v == NULL) {
      fprintf(stderr, PROG ": out of memory\n");
      exit(EXIT_RUN);
    }
    r->v = v;
    r->cap = cap;
  }
  bench_row *row = &r->v[r->n++];
  memset(row, 0, sizeof *row);
  snprintf(row->workload, sizeof row->workload, "%s", workload);
  snprintf(row->contender, sizeof row->contender, "%s", who);
  row->kind = kind;
  snprintf(row->backend, sizeof row->backend, "%s", backend);
  snprintf(row->submit, sizeof row->submit, "-");
  row->valid = 1;
  double *nans[] = {&row->task_ns,
                    &row->makespan_ns,
                    &row->per_task_ns,
                    &row->throughput,
                    &row->overhead_ns,
                    &row->ideal_ns,
                    &row->efficiency,
                    &row->concurrency,
                    &row->events_per_kop,
                    &row->waits_per_kop,
                    &row->peer_waits_per_kop,
                    &row->submit_ns_per_op,
                    &row->ratio,
                    &row->build_ns_per_op,
                    &row->capture_ns_per_op,
                    &row->create_vs_raw,
                    &row->create_vs_same,
                    &row->vs_same_graph,
                    &row->lat_p50_ns,
                    &row->lat_p99_ns,
                    &row->metg_ns,
                    &row->scaling,
                    &row->lpt_ns,
                    &row->vs_lpt};
  for (size_t i = 0; i < sizeof nans / sizeof *nans; i++)
    *nans[i] = NAN;
  return row;
}

/* A failed row: invalid, with its message; its parameters stay. */
static void row_fail(rows *r, bench_row *row, const char *msg) {
  snprintf(row->error, sizeof row->error, "%s", msg);
  row->valid = 0;
  row->makespan_ns = NAN;
  r->failed = 1;
  progress_end();
  fprintf(stderr, PROG ": %s / %s: %s\n", row->workload, row->contender, msg);
}

/* ---------------------------------------------------------- series */

/* Something that runs a DAG: a baseline or a contender, opened for one
 * DAG. */
typedef enum series_kind {
  S_RAW_SERIAL,
  S_RAW_STREAMS,
  S_RAW_GRAPH,
  S_RAW_TS_EVENTS, /* --timestamps: raw-streams with device stamps */
  S_RAW_TS_DEVICE,
  S_RAW_TS_CUPTI,
  S_THREADS,
  S_CUASYNC
} series_kind;

typedef struct series {
  series_kind kind;
  const char *name;
  cua_runtime *rt;
  int streams;
  const bench_plan *plan;
  int submit; /* S_CUASYNC: enum bench_submit */
} series;

typedef struct measure {
  double makespan_ns;
  double events_per_kop, waits_per_kop, peer_waits_per_kop, submit_ns_per_op,
      build_ns_per_op, capture_ns_per_op;
  double create_vs_raw, create_vs_same, vs_same_graph;
} measure;

/* Graph mode on CUDA: what cua_graph_create() costs against raw-graph's
 * capture and instantiation, of raw-graph's own plan (*vs_plan) and of
 * the very schedule the policy chose (*vs_same: each task on the stream
 * cua_graph_placement() gives, the waits the plan needs), the three taken
 * in turn BENCH_CAPTURES times (each turn led by the next of them), the
 * fastest of each: all under the same
 * conditions (one capture alone varies by up to 2x with what the driver
 * did before, and slow phases last longer than a few captures). The
 * instantiation depends on the graph's shape, which the placement
 * decides: *vs_same is cuasync's own cost, *vs_plan adds the policy's.
 * NAN when the graph is not a backend graph or raw-graph cannot run. */
static void create_vs_raw(bench_cua *g, const series *s, const bench_dag *dag,
                          double *vs_plan, double *vs_same,
                          bench_raw **keep_same) {
  char err[256];
  bench_raw *raw = NULL, *same = NULL;
  bench_plan placed;
  uint64_t rt[BENCH_CAPTURES], ri[BENCH_CAPTURES], ct[BENCH_CAPTURES];
  uint64_t st[BENCH_CAPTURES], si[BENCH_CAPTURES];
  *vs_plan = *vs_same = NAN;
  /* A backend graph has a capture time; a graph replayed by the core, or
   * one whose capture waits for its first launch, has none. */
  if (s->plan == NULL || bench_cua_capture_ns(g) == 0 ||
      bench_raw_open(&raw, dag, s->plan, BENCH_RAW_GRAPH, err, sizeof err) != 0)
    return;
  if (bench_cua_placed_plan(g, &placed, err, sizeof err) != 0 ||
      bench_raw_open(&same, dag, &placed, BENCH_RAW_GRAPH, err, sizeof err) !=
          0) {
    progress_end();
    fprintf(stderr, "%s / %s graph: no raw capture of its schedule: %s\n",
            dag->name, s->name, err);
    same = NULL;
  }
  cua_graph_info gi[BENCH_CAPTURES];
  int rc = 0;
  for (int i = 0; i < BENCH_CAPTURES && rc == 0; i++) {
    memset(&gi[i], 0, sizeof gi[i]);
    gi[i].size = sizeof gi[i];
    st[i] = si[i] = 0;
    /* Each turn starts with the next of the three: the one that follows
     * another's creation was seen to instantiate faster. */
    for (int j = 0; j < 3 && rc == 0; j++)
      switch ((i + j) % 3) {
      case 0:
        rc = bench_raw_recapture(raw, &rt[i], &ri[i], err, sizeof err);
        break;
      case 1:
        rc = same != NULL &&
             bench_raw_recapture(same, &st[i], &si[i], err, sizeof err);
        break;
      default:
        rc = bench_cua_recreate(g, &ct[i], &gi[i], err, sizeof err);
      }
  }
  bench_raw_close(raw);
  int have_same = same != NULL;
  if (rc == 0 && keep_same != NULL && same != NULL) {
    /* Its last capture replays beside the graph's runs; the plan goes
     * with it. */
    bench_raw_keep_plan(same, &placed);
    *keep_same = same;
    same = NULL;
  }
  bench_raw_close(same);
  bench_plan_free(&placed);
  if (rc != 0)
    return;
  if (getenv("CUASYNC_BENCH_DUMP") != NULL) {
    /* Each turn, and where cua_graph_create()'s time went, per op. */
    double n = dag->n ? (double)dag->n : 1.0;
    progress_end();
    fprintf(stderr,
            "%s / %s graph: creation against raw-graph, ns per op (raw of "
            "its plan, raw of the same schedule: each with its "
            "instantiation; cua: build place capture finish)\n",
            dag->name, s->name);
    for (int i = 0; i < BENCH_CAPTURES; i++)
      fprintf(stderr,
              "  %d: raw %.0f: %.0f, same %.0f: %.0f, cua %.0f (%.2fx, "
              "%.2fx): %.0f %.0f %.0f %.0f\n",
              i, (double)rt[i] / n, (double)ri[i] / n, (double)st[i] / n,
              (double)si[i] / n, (double)ct[i] / n,
              rt[i] ? (double)ct[i] / (double)rt[i] : 0.0,
              st[i] ? (double)ct[i] / (double)st[i] : 0.0,
              (double)gi[i].build_ns / n, (double)gi[i].place_ns / n,
              (double)gi[i].capture_ns / n, (double)gi[i].finish_ns / n);
  }
  double c = (double)bench_min_u64(ct, BENCH_CAPTURES);
  *vs_plan = c / (double)bench_min_u64(rt, BENCH_CAPTURES);
  if (have_same)
    *vs_same = c / (double)bench_min_u64(st, BENCH_CAPTURES);
}

/* The series that take turns: run k of each before run k + 1 of any (the
 * DAG workloads' series, latency's blocks of samples, the submit
 * workloads' runs), the order of turn @p round starting one series later
 * than the one before, so that a slow phase of the machine falls on all
 * of them alike and each runs after each other one about as often. */
static size_t in_turn(size_t j, size_t round, size_t n) {
  return (j + round) % n;
}

/* One series being measured: what it opened, and its runs so far. */
typedef struct series_run {
  const series *s;
  const bench_dag *dag;
  int repeat;
  bench_raw *raw, *same;
  bench_threads *th;
  bench_cua *g;
  uint64_t *t, *ts; /* t[0] is the warm-up */
  uint64_t build, events, waits, peer_waits, submit_ns;
  measure m;
  int rc;
} series_run;

/* Opens @p s for @p repeat timed runs of @p dag; r->rc says whether it
 * did (the message in @p err). */
static void series_open(series_run *r, const series *s, const bench_dag *dag,
                        int repeat, char *err, size_t len) {
  measure *m = &r->m;
  memset(r, 0, sizeof *r);
  r->s = s;
  r->dag = dag;
  r->repeat = repeat;
  r->rc = -1;
  m->makespan_ns = m->events_per_kop = m->waits_per_kop = NAN;
  m->peer_waits_per_kop = m->submit_ns_per_op = NAN;
  m->build_ns_per_op = m->capture_ns_per_op = m->create_vs_raw = NAN;
  m->create_vs_same = m->vs_same_graph = NAN;
  if ((r->t = calloc((size_t)repeat + 1, sizeof *r->t)) == NULL) {
    snprintf(err, len, "out of memory");
    return;
  }
  switch (s->kind) {
  case S_RAW_SERIAL:
  case S_RAW_STREAMS:
  case S_RAW_GRAPH:
  case S_RAW_TS_EVENTS:
  case S_RAW_TS_DEVICE:
  case S_RAW_TS_CUPTI:
    r->rc = bench_raw_open(&r->raw, dag, s->plan,
                           s->kind == S_RAW_SERIAL      ? BENCH_RAW_SERIAL
                           : s->kind == S_RAW_STREAMS   ? BENCH_RAW_STREAMS
                           : s->kind == S_RAW_GRAPH     ? BENCH_RAW_GRAPH
                           : s->kind == S_RAW_TS_EVENTS ? BENCH_RAW_TS_EVENTS
                           : s->kind == S_RAW_TS_DEVICE ? BENCH_RAW_TS_DEVICE
                                                        : BENCH_RAW_TS_CUPTI,
                           err, len);
    break;
  case S_THREADS:
    /* As many workers as the ideal has queues: streams on every device. */
    r->rc =
        bench_threads_open(&r->th, dag, s->streams * dag->ndevices, err, len);
    break;
  case S_CUASYNC:
    r->rc = bench_cua_open(&r->g, s->rt, dag, s->submit, &r->build, err, len);
    if (r->rc == 0 && s->submit == BENCH_SUBMIT_GRAPH)
      create_vs_raw(r->g, s, dag, &m->create_vs_raw, &m->create_vs_same,
                    &r->same);
    if (r->same != NULL &&
        (r->ts = calloc((size_t)repeat + 1, sizeof *r->ts)) == NULL) {
      bench_raw_close(r->same);
      r->same = NULL;
    }
    break;
  }
}

/* Run @p i of an open series (0: the warm-up); r->rc says whether it ran. */
static void series_step(series_run *r, int i, char *err, size_t len) {
  cua_stats delta;
  if (r->rc != 0)
    return;
  switch (r->s->kind) {
  case S_THREADS:
    r->rc = bench_threads_run(r->th, &r->t[i], err, len);
    break;
  case S_CUASYNC:
    r->rc = bench_cua_run(r->g, &r->t[i], &delta, err, len);
    if (r->rc == 0 && i > 0) {
      r->events += delta.events_recorded;
      r->waits += delta.event_waits;
      r->peer_waits += delta.peer_waits;
      r->submit_ns += bench_cua_submit_ns(r->g);
    }
    /* The same schedule captured by hand, run in turn with it. */
    if (r->rc == 0 && r->same != NULL)
      r->rc = bench_raw_run(r->same, &r->ts[i], err, len);
    break;
  default:
    r->rc = bench_raw_run(r->raw, &r->t[i], err, len);
    break;
  }
}

/* The measure of a series whose runs all ran (into r->m), and closes it. */
static void series_close(series_run *r) {
  const series *s = r->s;
  const bench_dag *dag = r->dag;
  measure *m = &r->m;
  int repeat = r->repeat;
  if (r->rc == 0) {
    m->makespan_ns = median(r->t + 1, (size_t)repeat);
    if (r->same != NULL)
      m->vs_same_graph = m->makespan_ns / median(r->ts + 1, (size_t)repeat);
    double ops = (double)dag->n * repeat;
    if (s->kind == S_CUASYNC) {
      m->submit_ns_per_op = (double)r->submit_ns / ops;
      /* Graph mode: the capture alone, as raw-graph's is its capture and
       * instantiation of a plan already made. */
      m->build_ns_per_op =
          (double)(s->submit == BENCH_SUBMIT_GRAPH ? bench_cua_create_ns(r->g)
                                                   : bench_cua_build_ns(r->g)) /
          (double)dag->n;
      if (s->submit == BENCH_SUBMIT_GRAPH && bench_cua_capture_ns(r->g) > 0)
        m->capture_ns_per_op =
            (double)bench_cua_capture_ns(r->g) / (double)dag->n;
      /* A graph's launches record and wait for no events of the runtime:
       * its placement's, as a plan of that schedule needs them (as
       * raw-streams' are counted), empty (NAN, from series_open()) if it
       * cannot be read. */
      if (s->submit == BENCH_SUBMIT_GRAPH) {
        char err[256];
        bench_plan placed;
        if (bench_cua_placed_plan(r->g, &placed, err, sizeof err) == 0) {
          m->events_per_kop = 1000.0 * (double)placed.nrecords / dag->n;
          m->waits_per_kop = 1000.0 * (double)placed.nwaits / dag->n;
          m->peer_waits_per_kop =
              1000.0 * (double)bench_plan_peer_waits(&placed, dag->n) / dag->n;
          bench_plan_free(&placed);
        }
      } else {
        m->events_per_kop = 1000.0 * (double)r->events / ops;
        m->waits_per_kop = 1000.0 * (double)r->waits / ops;
        m->peer_waits_per_kop = 1000.0 * (double)r->peer_waits / ops;
      }
    } else if (s->kind == S_RAW_SERIAL) {
      m->events_per_kop = m->waits_per_kop = 0;
    } else if (s->kind != S_THREADS) {
      if (s->kind == S_RAW_GRAPH)
        m->build_ns_per_op = m->capture_ns_per_op =
            (double)bench_raw_build_ns(r->raw) / (double)dag->n;
      m->events_per_kop = 1000.0 * (double)s->plan->nrecords / dag->n;
      m->waits_per_kop = 1000.0 * (double)s->plan->nwaits / dag->n;
    }
  }
  bench_raw_close(r->raw);
  bench_raw_close(r->same);
  bench_threads_close(r->th);
  bench_cua_close(r->g);
  free(r->t);
  free(r->ts);
  r->raw = r->same = NULL;
  r->th = NULL;
  r->g = NULL;
  r->t = r->ts = NULL;
}

/* Opens, warms up, runs @p repeat times, closes: one series alone (the
 * METG sweep's points). */
static int run_series(const series *s, const bench_dag *dag, int repeat,
                      measure *m, char *err, size_t len) {
  series_run r;
  series_open(&r, s, dag, repeat, err, len);
  for (int i = 0; r.rc == 0 && i <= repeat; i++)
    series_step(&r, i, err, len);
  series_close(&r);
  *m = r.m;
  return r.rc;
}

/* ------------------------------------------------------ the workloads */

typedef struct bench {
  options *o;
  contender *cont;
  size_t ncont;
  char **traced; /* --trace: every trace file, for the Gantt charts */
  size_t ntraced;
  group groups[8]; /* one per backend the contenders use */
  size_t ngroups;
  rows rows;
  FILE *plot; /* --plot: its file, opened before the runs */
} bench;

/* The shape of workload @p w for group @p gr. */
static void shape_for(const bench *b, const char *w, const group *gr,
                      bench_shape *sh, const char **pattern) {
  const options *o = b->o;
  memset(sh, 0, sizeof *sh);
  sh->tasks = o->tasks;
  sh->width = o->width;
  sh->ns = o->duration;
  sh->blocks = (uint32_t)o->blocks;
  sh->axpy = o->axpy;
  sh->bytes = o->bytes;
  sh->seed = o->seed;
  sh->skew = o->skew;
  sh->skew_share = o->skew_share;
  sh->no_hints = o->no_hints;
  sh->ndevices = gr->ndev;
  sh->spread = o->all_devices;
  *pattern = w;
  if (strcmp(w, "micro-chain") == 0) {
    *pattern = "chain";
    sh->tasks = o->quick ? 1000 : 10000;
    sh->width = 1;
    sh->ns = 0;
  } else if (strcmp(w, "micro-indep") == 0) {
    *pattern = "trivial";
    sh->tasks = o->quick ? 256 : 2000;
    sh->ns = 10000;
  } else if (strcmp(w, "micro-random") == 0) {
    *pattern = "random";
    sh->tasks = o->quick ? 256 : 2000;
    sh->width = o->quick ? 8 : 16;
    sh->ns = 1000;
  }
  if (strncmp(w, "micro-", 6) == 0) {
    sh->blocks = 1;
    sh->axpy = 0;
  }
}

static int has_axpy(const bench_dag *d) {
  for (size_t k = 0; k < d->n; k++)
    if (d->task[k].kind == BENCH_AXPY)
      return 1;
  return 0;
}

static double task_ns_of(const bench_dag *d, const group *gr) {
  return has_axpy(d) ? gr->axpy_ns : (double)d->ns;
}

/* A DAG workload's row's parameters, set before it runs. */
static void dag_params(bench_row *row, const bench_dag *d, const options *o) {
  row->params = 1;
  row->tasks = d->n;
  row->width = d->width;
  row->streams = o->streams;
  row->devices = d->ndevices;
  row->repeat = o->repeat;
  row->duration_ns = d->ns;
  row->blocks = d->blocks;
}

/* Fills a row's metrics from a measurement. */
static void fill_row(bench_row *row, const bench_dag *d, const group *gr,
                     const options *o, const measure *m) {
  row->task_ns = task_ns_of(d, gr);
  row->makespan_ns = m->makespan_ns;
  row->per_task_ns = m->makespan_ns / (double)d->n;
  row->throughput = (double)d->n * 1e9 / m->makespan_ns;
  row->ideal_ns = bench_dag_ideal(d, row->task_ns, o->streams * d->ndevices);
  row->lpt_ns = bench_dag_lpt(d, row->task_ns, o->streams * d->ndevices);
  if (row->lpt_ns > 0)
    row->vs_lpt = m->makespan_ns / row->lpt_ns;
  else
    row->lpt_ns = NAN;
  if (row->ideal_ns > 0) {
    row->efficiency = row->ideal_ns / m->makespan_ns;
    row->concurrency = (double)d->ncompute * row->task_ns / m->makespan_ns;
  }
  row->events_per_kop = m->events_per_kop;
  row->waits_per_kop = m->waits_per_kop;
  row->peer_waits_per_kop = m->peer_waits_per_kop;
  row->submit_ns_per_op = m->submit_ns_per_op;
  row->build_ns_per_op = m->build_ns_per_op;
  row->capture_ns_per_op = m->capture_ns_per_op;
  row->create_vs_raw = m->create_vs_raw;
  row->create_vs_same = m->create_vs_same;
  row->vs_same_graph = m->vs_same_graph;
  /* A run faster than its critical path skipped a dependency. The GPU's
   * global timer may tick as coarsely as 1 us, so each spin on the path may
   * end up to 1 us early. */
  double path = row->task_ns * (double)d->cp_compute;
  double slack = strcmp(gr->backend, "cuda") == 0 ? 1000.0 * d->cp_compute : 0;
  if (!has_axpy(d) && d->ns > 0 && m->makespan_ns + slack < 0.98 * path) {
    row->valid = 0;
    progress_end();
    fprintf(stderr,
            PROG ": warning: %s / %s: makespan %.0f ns is below the critical "
                 "path, %.0f ns: a dependency was not honoured\n",
            row->workload, row->contender, m->makespan_ns, path);
  }
}

/* The series of a group: its baselines, then its contenders. */
static size_t series_of(const bench *b, const group *gr, const char *w,
                        const bench_plan *plan, series *out) {
  size_t n = 0;
  if (strcmp(gr->backend, "cuda") == 0) {
    out[n++] = (series){S_RAW_SERIAL, "raw-serial", NULL, 1, plan, 0};
    out[n++] =
        (series){S_RAW_STREAMS, "raw-streams", NULL, b->o->streams, plan, 0};
    out[n++] = (series){S_RAW_GRAPH, "raw-graph", NULL, b->o->streams, plan, 0};
    if (b->o->timestamps) {
      out[n++] = (series){
          S_RAW_TS_EVENTS, "raw-ts-events", NULL, b->o->streams, plan, 0};
      out[n++] = (series){
          S_RAW_TS_DEVICE, "raw-ts-device", NULL, b->o->streams, plan, 0};
      out[n++] = (series){S_RAW_TS_CUPTI, "raw-ts-cupti", NULL,
                          b->o->streams,  plan,           0};
    }
  } else if (strcmp(gr->backend, "sim") != 0) {
    out[n++] = (series){S_THREADS, "threads", NULL, b->o->streams, plan, 0};
  } /* sim: virtual time, which no baseline runs in */
  for (size_t i = 0; i < b->ncont; i++) {
    const contender *c = &b->cont[i];
    if (strcmp(c->backend, gr->backend) != 0)
      continue;
    for (int m = 0; m < b->o->nsubmit; m++) {
      int am = b->o->submit[m] == BENCH_SUBMIT_AUTO;
      out[n++] = (series){S_CUASYNC,
                          c->label,
                          strcmp(w, "multigpu") == 0 || b->o->all_devices
                              ? (am ? c->auto_all : c->rt_all)
                          : am ? c->auto_one
                               : c->rt_one,
                          b->o->streams,
                          plan,
                          b->o->submit[m]};
    }
  }
  return n;
}

static int is_baseline(series_kind k) {
  return k != S_CUASYNC;
}

static int is_stamps(series_kind k) {
  return k == S_RAW_TS_EVENTS || k == S_RAW_TS_DEVICE || k == S_RAW_TS_CUPTI;
}

/* METG(50%) of one series: sweep the spin duration upwards over the grid
 * below, each point a full measurement (warm-up and --repeat runs), and
 * stop at the first point at or above 50% efficiency. The sweep also stops,
 * with METG not reached, when more duration will not get there: two grid
 * steps gained less than 5%, or the makespan grows with the duration so
 * steeply that even infinitely long tasks would stay below 40% (makespan
 * taken as overhead + slope * duration, the slope from the last two
 * points, trusted once efficiency is at least 10%); or when the next point
 * would take more than the time budget. */
static const double metg_grid_us[] = {1,   2,   5,    10,   20,   50,   100,
                                      200, 500, 1000, 2000, 5000, 10000};

static void sweep_metg(bench *b, const series *s, const bench_dag *base,
                       bench_row *row) {
  const options *o = b->o;
  int p = o->streams * base->ndevices;
  double budget = o->quick ? 2e9 : 10e9, prev_d = 0, prev_e = 0, prev_m = 0;
  size_t npts = sizeof metg_grid_us / sizeof *metg_grid_us;
  char err[ERRLEN];

  row->metg_state = BENCH_METG_NOT_REACHED;
  for (size_t i = 0; i < npts; i++) {
    bench_dag d = *base; /* shares the tasks; only the duration differs */
    measure m;
    d.ns = (uint64_t)(metg_grid_us[i] * 1000);
    double ideal = bench_dag_ideal(&d, (double)d.ns, p);
    if (ideal * (o->repeat + 1) > budget)
      break;
    progress("%s: METG %s at %gus", row->workload, s->name, metg_grid_us[i]);
    if (run_series(s, &d, o->repeat, &m, err, sizeof err) != 0) {
      row_fail(&b->rows, row, err);
      row->metg_state = BENCH_METG_NONE;
      return;
    }
    double e = ideal / m.makespan_ns;
    if (row->metg_points < BENCH_METG_POINTS) {
      row->metg_d[row->metg_points] = (double)d.ns;
      row->metg_eff[row->metg_points++] = e;
    }
    if (e >= 0.5) {
      if (i == 0) {
        row->metg_state = BENCH_METG_BELOW;
        row->metg_ns = (double)d.ns;
      } else {
        /* Interpolated in log(duration) between the two grid points. */
        double f = (0.5 - prev_e) / (e - prev_e);
        row->metg_state = BENCH_METG_FOUND;
        row->metg_ns = exp(log(prev_d) + f * (log((double)d.ns) - log(prev_d)));
      }
      return;
    }
    if (row->metg_points >= 3 && e < 1.05 * row->metg_eff[row->metg_points - 3])
      return;
    if (i > 0 && e >= 0.1 && m.makespan_ns > prev_m) {
      double slope = (m.makespan_ns - prev_m) / ((double)d.ns - prev_d);
      if (ideal / (double)d.ns / slope < 0.4)
        return;
    }
    prev_d = (double)d.ns;
    prev_e = e;
    prev_m = m.makespan_ns;
  }
}

/* Ops held at once by the series of a workload (its DAG's tasks times its
 * series) up to which their timed runs are interleaved. */
#define BENCH_INTERLEAVE_OPS 4e6

/* Measures series [@p lo, @p hi) of a workload together, into a row each
 * (in order): every one is opened first and warmed up once, then their
 * timed runs take turns (in_turn(); the same raw launches were seen to
 * run 10% apart in two series a second apart when each ran its runs in a
 * row). */
static void measure_series(bench *b, const group *gr, const char *w,
                           const bench_shape *shp, const bench_dag *dagp,
                           const series *ser0, size_t lo, size_t hi) {
  const series *ser = ser0 + lo;
  size_t ns = hi - lo;
  char err[ERRLEN];
  series_run *run = calloc(ns ? ns : 1, sizeof *run);
  size_t *at = calloc(ns ? ns : 1, sizeof *at); /* each series' row */
  int *open = calloc(ns ? ns : 1, sizeof *open);
  if (run == NULL || at == NULL || open == NULL) {
    row_fail(&b->rows, row_new(&b->rows, w, "-", "baseline", gr->backend),
             "out of memory");
    ns = 0;
  }
  for (size_t i = 0; i < ns; i++) {
    const series *s = &ser[i];
    bench_row *row = row_new(&b->rows, w, s->name,
                             is_stamps(s->kind)     ? "timestamps"
                             : is_baseline(s->kind) ? "baseline"
                                                    : "cuasync",
                             gr->backend);
    at[i] = (size_t)(row - b->rows.v);
    dag_params(row, dagp, b->o);
    if (!is_baseline(s->kind))
      snprintf(row->submit, sizeof row->submit, "%s",
               bench_submit_name(s->submit));
    if (strcmp(gr->backend, "cuda") == 0 && is_baseline(s->kind) &&
        !gr->raw_ok) {
      row_fail(&b->rows, row, gr->raw_why);
      continue;
    }
    if (shp->axpy && isnan(gr->axpy_ns)) {
      row_fail(&b->rows, row, "the AXPY duration could not be measured");
      continue;
    }
    progress("%s: %s%s%s", w, s->name, is_baseline(s->kind) ? "" : " ",
             is_baseline(s->kind) ? "" : row->submit);
    series_open(&run[i], s, dagp, b->o->repeat, err, sizeof err);
    open[i] = 1;
    if (run[i].rc != 0)
      row_fail(&b->rows, &b->rows.v[at[i]], err);
  }
  for (int k = 0; k <= b->o->repeat; k++) {
    if (k > 0)
      progress("%s: timed run %d of %d", w, k, b->o->repeat);
    for (size_t j = 0; j < ns; j++) {
      size_t i = in_turn(j, k > 0 ? (size_t)(k - 1) : 0, ns);
      if (!open[i] || run[i].rc != 0)
        continue;
      series_step(&run[i], k, err, sizeof err);
      if (run[i].rc != 0)
        row_fail(&b->rows, &b->rows.v[at[i]], err);
    }
  }
  for (size_t i = 0; i < ns; i++) {
    const series *s = &ser[i];
    if (!open[i])
      continue;
    series_close(&run[i]);
    if (run[i].rc != 0)
      continue;
    bench_row *row = &b->rows.v[at[i]];
    fill_row(row, dagp, gr, b->o, &run[i].m);
    if (s->rt != NULL && getenv("CUASYNC_BENCH_DUMP") != NULL) {
      /* The policy's own account of its last decisions (heft: its last
       * plan's span), beside the makespan measured. */
      progress_end();
      fprintf(stderr, "%s / %s %s: makespan %.0f ns; the policy says:\n", w,
              s->name, row->submit, run[i].m.makespan_ns);
      cua_runtime_dump_policy(s->rt, stderr);
    }
    if (b->o->metg && is_pattern(w) && !shp->axpy)
      sweep_metg(b, s, dagp, &b->rows.v[at[i]]);
  }
  free(run);
  free(at);
  free(open);
}

static void run_dag_workload(bench *b, const char *w, const group *gr) {
  bench_shape sh;
  bench_dag dag;
  bench_plan plan;
  const char *pattern;
  char err[ERRLEN];
  series *ser = calloc(b->ncont * BENCH_SUBMIT_MODES + 7, sizeof *ser);
  size_t first = b->rows.n;

  if (ser == NULL) {
    row_fail(&b->rows, row_new(&b->rows, w, "-", "baseline", gr->backend),
             "out of memory");
    return;
  }
  shape_for(b, w, gr, &sh, &pattern);
  if (bench_dag_make(&dag, pattern, &sh, err, sizeof err) != 0) {
    free(ser);
    row_fail(&b->rows, row_new(&b->rows, w, "-", "baseline", gr->backend), err);
    return;
  }
  snprintf(dag.name, sizeof dag.name, "%s", w);
  /* The baselines' plan (sim has none: its plan would cost memory
   * quadratic in the streams of a machine of a thousand GPUs). */
  if (strcmp(gr->backend, "sim") == 0)
    memset(&plan, 0, sizeof plan);
  else if (bench_plan_make(&plan, &dag, b->o->streams, err, sizeof err) != 0) {
    row_fail(&b->rows, row_new(&b->rows, w, "-", "baseline", gr->backend), err);
    bench_dag_free(&dag);
    free(ser);
    return;
  }
  size_t ns = series_of(b, gr, w, &plan, ser);
  /* Interleaved where the timing is real and the DAGs of every series fit
   * in memory at once; else one series after the other (the sim's
   * virtual time has no slow phases, and a DAG of a million ops per
   * series, as the sim is run with, would be held a dozen times). */
  if (strcmp(gr->backend, "sim") != 0 &&
      (double)dag.n * (double)ns <= BENCH_INTERLEAVE_OPS)
    measure_series(b, gr, w, &sh, &dag, ser, 0, ns);
  else
    for (size_t i = 0; i < ns; i++)
      measure_series(b, gr, w, &sh, &dag, ser, i, i + 1);
  /* Compare with the fastest baseline of this backend. */
  const bench_row *best = NULL;
  for (size_t i = first; i < b->rows.n; i++) {
    const bench_row *r = &b->rows.v[i];
    if (strcmp(r->kind, "baseline") == 0 && !isnan(r->makespan_ns) &&
        (best == NULL || r->makespan_ns < best->makespan_ns))
      best = r;
  }
  /* The timestamps' cost is what they add to raw-streams, which they
   * are. */
  const bench_row *streams = NULL;
  for (size_t i = first; i < b->rows.n; i++)
    if (strcmp(b->rows.v[i].contender, "raw-streams") == 0 &&
        !isnan(b->rows.v[i].makespan_ns))
      streams = &b->rows.v[i];
  for (size_t i = first; best != NULL && i < b->rows.n; i++) {
    bench_row *r = &b->rows.v[i];
    if (isnan(r->makespan_ns))
      continue;
    const bench_row *base = best;
    if (strcmp(r->kind, "timestamps") == 0) {
      if (streams == NULL)
        continue;
      base = streams;
    }
    r->ratio = r->makespan_ns / base->makespan_ns;
    r->overhead_ns = (r->makespan_ns - base->makespan_ns) / (double)r->tasks;
    snprintf(r->best_raw, sizeof r->best_raw, "%s", base->contender);
  }
  bench_plan_free(&plan);
  bench_dag_free(&dag);
  free(ser);
}

/* A row of latency or submit: where it stands in b->rows, who runs it (a
 * contender, or NULL for a baseline of kind @c kind), and whether it still
 * runs. */
typedef struct turn_row {
  size_t at;
  const contender *who;
  int kind;
  int ok;
} turn_row;

/* A baseline row named @p name of workload @p w into *@p t, failed at once
 * where a CUDA baseline cannot run. */
static void turn_baseline(bench *b, const group *gr, const char *w,
                          const char *name, int kind, turn_row *t) {
  bench_row *row = row_new(&b->rows, w, name, "baseline", gr->backend);
  t->at = (size_t)(row - b->rows.v);
  t->who = NULL;
  t->kind = kind;
  t->ok = !(strcmp(gr->backend, "cuda") == 0 && !gr->raw_ok);
  if (!t->ok)
    row_fail(&b->rows, row, gr->raw_why);
}

/* A row per contender of @p gr's backend, submitting task by task, into
 * @p t: how many. */
static size_t turn_contenders(bench *b, const group *gr, const char *w,
                              turn_row *t) {
  size_t n = 0;
  for (size_t i = 0; i < b->ncont; i++) {
    const contender *c = &b->cont[i];
    if (strcmp(c->backend, gr->backend) != 0)
      continue;
    bench_row *row = row_new(&b->rows, w, c->label, "cuasync", gr->backend);
    snprintf(row->submit, sizeof row->submit, "task");
    t[n] = (turn_row){(size_t)(row - b->rows.v), c, 0, 1};
    n++;
  }
  return n;
}

static void turn_fail(bench *b, turn_row *t, const char *err) {
  t->ok = 0;
  row_fail(&b->rows, &b->rows.v[t->at], err);
}

/* A latency row's parameters: @p n samples, one at a time. */
static void latency_params(bench *b, bench_row *row, size_t n) {
  row->params = 1;
  row->tasks = n;
  row->repeat = b->o->repeat;
  row->streams = 1;
  row->devices = 1;
}

static void latency_row(bench_row *row, uint64_t *v, uint64_t *sv, size_t n) {
  qsort(v, n, sizeof *v, cmp_u64);
  if (sv != NULL) {
    qsort(sv, n, sizeof *sv, cmp_u64);
    row->submit_ns_per_op = percentile(sv, n, 50);
  }
  row->lat_p50_ns = percentile(v, n, 50);
  row->lat_p99_ns = percentile(v, n, 99);
}

/* One latency row's sampler: block @p n samples of baseline @p k (0
 * raw-sync, 1 raw-callback, 2 threads) or of contender @p c. */
static int latency_block(const contender *c, int k, size_t n, uint64_t *v,
                         uint64_t *sv, char *err, size_t len) {
  if (c != NULL)
    return bench_cua_latency(c->rt_one, n, 10, v, sv, err, len);
  return k == 0   ? bench_raw_sync_latency(n, v, sv, err, len)
         : k == 1 ? bench_raw_callback_latency(n, v, err, len)
                  : bench_threads_latency(n, v, err, len);
}

/* Latency: LATENCY_BLOCKS blocks of samples per row, each row's block b
 * taken before block b + 1 of any, in an order that starts one row later
 * each block (as the DAG workloads interleave their runs). */
#define LATENCY_BLOCKS 10

static void run_latency(bench *b, const group *gr) {
  size_t iters = b->o->quick ? 100 : 1000;
  char err[ERRLEN];
  size_t first = b->rows.n;
  int cuda = strcmp(gr->backend, "cuda") == 0;
  /* sim: no baseline, as for the DAGs (its rows are real time here, the
   * host's cost of submitting to the simulation and waiting for it, which
   * no baseline's is comparable to). */
  int sim = strcmp(gr->backend, "sim") == 0;
  size_t nrows = (cuda ? 2 : sim ? 0 : 1) + b->ncont, n = 0;
  uint64_t *v = calloc(iters * nrows, sizeof *v);
  uint64_t *sv = calloc(iters * nrows, sizeof *sv); /* in cua_submit() */
  turn_row *t = calloc(nrows, sizeof *t);
  if (v == NULL || sv == NULL || t == NULL) {
    free(v);
    free(sv);
    free(t);
    return;
  }
  /* The first baseline is what the ratios compare with: a launch and a
   * synchronisation (CUDA), or a post and a wait (threads). */
  if (cuda) {
    turn_baseline(b, gr, "latency", "raw-sync", 0, &t[n++]);
    turn_baseline(b, gr, "latency", "raw-callback", 1, &t[n++]);
  } else if (!sim) {
    turn_baseline(b, gr, "latency", "threads-task", 2, &t[n++]);
  }
  n += turn_contenders(b, gr, "latency", t + n);
  for (size_t i = 0; i < n; i++)
    latency_params(b, &b->rows.v[t[i].at], iters);
  size_t per = (iters + LATENCY_BLOCKS - 1) / LATENCY_BLOCKS;
  for (size_t blk = 0; blk * per < iters; blk++) {
    size_t m = iters - blk * per < per ? iters - blk * per : per;
    progress("latency: samples %zu of %zu", blk * per + m, iters);
    for (size_t j = 0; j < n; j++) {
      turn_row *r = &t[in_turn(j, blk, n)];
      size_t i = (size_t)(r - t);
      if (r->ok &&
          latency_block(r->who, r->kind, m, v + i * iters + blk * per,
                        sv + i * iters + blk * per, err, sizeof err) != 0)
        turn_fail(b, r, err);
    }
  }
  for (size_t i = 0; i < n; i++)
    if (t[i].ok)
      latency_row(&b->rows.v[t[i].at], v + i * iters,
                  t[i].who != NULL || t[i].kind == 0 ? sv + i * iters : NULL,
                  iters);
  const bench_row *base = sim ? NULL : &b->rows.v[first];
  for (size_t i = first; i < b->rows.n; i++) {
    bench_row *r = &b->rows.v[i];
    if (base != NULL && !isnan(base->lat_p50_ns) && !isnan(r->lat_p50_ns)) {
      r->ratio = r->lat_p50_ns / base->lat_p50_ns;
      snprintf(r->best_raw, sizeof r->best_raw, "%s", base->contender);
    }
  }
  free(v);
  free(sv);
  free(t);
}

/* The submit workloads: @p nthreads threads submit (or launch, or post)
 * small independent tasks as fast as they can, each with its own future;
 * the rate is submissions per second of host time, waits included. With
 * several threads, each row's scaling is its aggregate rate over its own
 * rate from one thread (the submit row of this run, or measured here). */
static void submit_params(bench *b, bench_row *r, size_t n, int nthreads) {
  r->params = 1;
  r->tasks = n;
  r->repeat = b->o->repeat;
  r->streams = b->o->streams;
  r->devices = 1;
  r->width = nthreads;
  r->duration_ns = 0;
  r->blocks = 1;
}

static void submit_fill(bench *b, bench_row *r, size_t n, uint64_t *t,
                        int nthreads) {
  submit_params(b, r, n, nthreads);
  r->makespan_ns = median(t, (size_t)b->o->repeat);
  r->per_task_ns = r->makespan_ns / (double)n;
  r->throughput = (double)n * 1e9 / r->makespan_ns;
}

/* One run of a submit workload: the baseline (@p c NULL) or contender
 * @p c, into *@p ns. */
static int submit_once(bench *b, const group *gr, const contender *c,
                       int nthreads, size_t n, uint64_t *ns, char *err,
                       size_t len) {
  if (c != NULL)
    return bench_cua_submit(c->rt_one, nthreads, n, ns, err, len);
  if (strcmp(gr->backend, "cuda") == 0)
    return bench_raw_submit(nthreads, n, b->o->streams, ns, err, len);
  return bench_threads_submit(nthreads, n, b->o->streams, ns, err, len);
}

/* One measurement alone: warm-up and --repeat runs, median into @p r (a
 * thread count's rate that the run did not measure). */
static int submit_measure(bench *b, const group *gr, const contender *c,
                          int nthreads, size_t n, bench_row *r, char *err,
                          size_t len) {
  uint64_t *t = calloc((size_t)b->o->repeat + 1, sizeof *t);
  int rc = 0;
  if (t == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (int i = 0; i <= b->o->repeat && rc == 0; i++)
    rc = submit_once(b, gr, c, nthreads, n, &t[i], err, len);
  if (rc == 0)
    submit_fill(b, r, n, t + 1, nthreads);
  free(t);
  return rc;
}

/* The baseline and every contender: a warm-up each, then their timed runs
 * interleaved, run k of each before run k + 1 of any, in an order that
 * starts one row later each time (as the DAG workloads do). */
static void run_submit(bench *b, const char *w, const group *gr, int nthreads) {
  size_t n = b->o->quick ? 1000 : 10000;
  size_t first = b->rows.n;
  char err[ERRLEN];
  int cuda = strcmp(gr->backend, "cuda") == 0;
  /* sim: no baseline (see run_latency()). */
  size_t nbase = strcmp(gr->backend, "sim") == 0 ? 0 : 1;
  size_t runs = (size_t)b->o->repeat + 1; /* run 0 is the warm-up */
  const char *base = cuda ? (nthreads > 1 ? "raw-launch-mt" : "raw-launch")
                          : (nthreads > 1 ? "threads-post-mt" : "threads-post");
  size_t nrows = nbase + b->ncont, nr = 0;
  uint64_t *ns = calloc(nrows * runs, sizeof *ns);
  turn_row *t = calloc(nrows, sizeof *t);
  if (ns == NULL || t == NULL) {
    row_fail(&b->rows, row_new(&b->rows, w, base, "baseline", gr->backend),
             "out of memory");
    free(ns);
    free(t);
    return;
  }
  if (nbase)
    turn_baseline(b, gr, w, base, 0, &t[nr++]);
  nr += turn_contenders(b, gr, w, t + nr);
  for (size_t i = 0; i < nr; i++)
    submit_params(b, &b->rows.v[t[i].at], n, nthreads);
  for (size_t k = 0; k < runs; k++) {
    progress("%s: %s %zu of %d", w, k == 0 ? "warm-up" : "timed run", k,
             b->o->repeat);
    for (size_t j = 0; j < nr; j++) {
      turn_row *r = &t[in_turn(j, k > 0 ? k - 1 : 0, nr)];
      size_t i = (size_t)(r - t);
      if (r->ok && submit_once(b, gr, r->who, nthreads, n, &ns[i * runs + k],
                               err, sizeof err) != 0)
        turn_fail(b, r, err);
    }
  }
  for (size_t i = 0; i < nr; i++)
    if (t[i].ok)
      submit_fill(b, &b->rows.v[t[i].at], n, &ns[i * runs + 1], nthreads);
  free(ns);
  free(t);
  /* Ratios: makespan over the baseline's (lower is better, as for the
   * DAGs); scaling: aggregate rate over one thread's. */
  const bench_row *br = nbase ? &b->rows.v[first] : NULL;
  for (size_t i = first; i < b->rows.n; i++) {
    bench_row *r = &b->rows.v[i];
    if (isnan(r->makespan_ns))
      continue;
    if (br != NULL && !isnan(br->makespan_ns)) {
      r->ratio = r->makespan_ns / br->makespan_ns;
      r->overhead_ns = (r->makespan_ns - br->makespan_ns) / (double)r->tasks;
      snprintf(r->best_raw, sizeof r->best_raw, "%s", br->contender);
    }
    if (nthreads == 1)
      continue;
    double one = NAN;
    for (size_t j = 0; j < first; j++) {
      const bench_row *o = &b->rows.v[j];
      if (strcmp(o->workload, "submit") == 0 &&
          strcmp(o->backend, r->backend) == 0 &&
          strcmp(o->kind, r->kind) == 0 &&
          (strcmp(o->contender, r->contender) == 0 ||
           (i < first + nbase && strcmp(o->kind, "baseline") == 0)) &&
          !isnan(o->throughput))
        one = o->throughput;
    }
    if (isnan(one)) {
      /* Not in this run: measure one thread now (not reported). */
      bench_row tmp;
      const contender *c = NULL;
      for (size_t k = 0; i >= first + nbase && k < b->ncont; k++)
        if (strcmp(b->cont[k].label, r->contender) == 0 &&
            strcmp(b->cont[k].backend, r->backend) == 0)
          c = &b->cont[k];
      memset(&tmp, 0, sizeof tmp);
      progress("%s: %s, one thread", w, r->contender);
      if (submit_measure(b, gr, c, 1, n, &tmp, err, sizeof err) == 0)
        one = tmp.throughput;
      else
        one = NAN;
    }
    r->scaling = r->throughput / one;
  }
}

static void run_dispatch(bench *b) {
  size_t calls = b->o->quick ? 1000000 : 10000000;
  double mod = 0, sta = 0;
  char path[1024], err[ERRLEN];
  progress("dispatch");
  row_new(&b->rows, "dispatch", "static round-robin.c", "baseline", "-");
  bench_row *rm =
      row_new(&b->rows, "dispatch", "module round-robin.so", "cuasync", "-");
  bench_row *rs = rm - 1; /* the second row_new() may have moved the first */
  bench_row *pair[2] = {rs, rm};
  for (int i = 0; i < 2; i++) {
    pair[i]->params = 1;
    pair[i]->tasks = calls / 5;
    pair[i]->repeat = 5;
    pair[i]->streams = 4;
    pair[i]->devices = 1;
  }
  if (bench_dispatch(calls, &mod, &sta, path, sizeof path, err, sizeof err)) {
    row_fail(&b->rows, rs, err);
    row_fail(&b->rows, rm, err);
    return;
  }
  double per[2] = {sta, mod};
  for (int i = 0; i < 2; i++) {
    bench_row *r = pair[i];
    r->per_task_ns = per[i];
    r->makespan_ns = per[i] * (double)r->tasks;
    r->throughput = 1e9 / per[i];
    r->ratio = per[i] / sta;
    r->overhead_ns = per[i] - sta;
    snprintf(r->best_raw, sizeof r->best_raw, "%s", rs->contender);
  }
}

/* ------------------------------------------------------ contenders */

/* --trace DIR: the file the runtime being opened traces to, for the
 * runtime of device 0 and the one of every device (NULL: none); the auto
 * mode's runtimes are not traced. */
static const char *trace_one, *trace_all;
static const char *bench_machine; /* --machine, with -b sim */
static int opening_auto;

static int open_runtime(cua_runtime **rt, const contender *c,
                        const char *backend, int one_device) {
  cua_runtime_options ro;
  char text[4608];
  const char *tp = opening_auto ? NULL : one_device ? trace_one : trace_all;
  if (tp != NULL)
    setenv("CUASYNC_TRACE", tp, 1);
  else if (trace_one != NULL || trace_all != NULL)
    unsetenv("CUASYNC_TRACE");
  memset(&ro, 0, sizeof ro);
  ro.size = sizeof ro;
  if (c->is_config) {
    ro.config_path = c->spec;
  } else {
    snprintf(text, sizeof text, "[runtime]\nbackend = %s\npolicy = %s\n%s%s%s",
             backend, c->spec, one_device ? "devices = 0\n" : "",
             bench_machine != NULL ? "[backend.sim]\nmachine = " : "",
             bench_machine != NULL ? bench_machine : "");
    ro.config_text = text;
    ro.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  }
  int rc = cua_runtime_create_ex(rt, &ro);
  if (trace_one != NULL || trace_all != NULL)
    unsetenv("CUASYNC_TRACE");
  return rc;
}

/* The runtimes of --submit auto: the contender's, with graphs = auto. */
static int open_auto(contender *c, const char *backend) {
  const char *was = getenv("CUASYNC_GRAPHS");
  char *saved = was != NULL ? strdup(was) : NULL;
  setenv("CUASYNC_GRAPHS", "auto", 1);
  opening_auto = 1;
  int rc = open_runtime(&c->auto_all, c, backend, 0);
  c->auto_one = c->auto_all;
  if (rc == 0 && c->rt_one != c->rt_all &&
      (rc = open_runtime(&c->auto_one, c, backend, 1)) != 0)
    c->auto_one = NULL;
  opening_auto = 0;
  if (saved != NULL)
    setenv("CUASYNC_GRAPHS", saved, 1);
  else
    unsetenv("CUASYNC_GRAPHS");
  free(saved);
  if (rc)
    fprintf(stderr,
            PROG ": the runtime of '%s' with graphs = auto did not open "
                 "(%s): %s\n",
            c->spec, cua_err_name(rc), cua_runtime_error(NULL));
  return rc ? -1 : 0;
}

static int open_contender(contender *c, const char *backend, int with_auto) {
  int rc = open_runtime(&c->rt_all, c, backend, 0);
  if (rc) {
    /* The runtime's message says what failed: the policy, the backend,
     * the configuration... */
    fprintf(stderr, PROG ": the runtime of %s '%s' did not open (%s): %s\n",
            c->is_config ? "configuration" : "policy", c->spec,
            cua_err_name(rc), cua_runtime_error(NULL));
    return -1;
  }
  c->ndev = cua_device_count(c->rt_all);
  snprintf(c->backend, sizeof c->backend, "%s", cua_runtime_backend(c->rt_all));
  c->rt_one = c->rt_all;
  if (c->ndev > 1 && !c->is_config) {
    rc = open_runtime(&c->rt_one, c, backend, 1);
    if (rc) {
      fprintf(stderr,
              PROG ": the runtime of policy '%s' on device 0 did not open "
                   "(%s): %s\n",
              c->spec, cua_err_name(rc), cua_runtime_error(NULL));
      c->rt_one = NULL;
      return -1;
    }
  }
  if (c->is_config) {
    const char *base = strrchr(c->spec, '/');
    snprintf(c->label, sizeof c->label, "%s:%s", base ? base + 1 : c->spec,
             cua_runtime_policy(c->rt_all));
  } else {
    snprintf(c->label, sizeof c->label, "%s", cua_runtime_policy(c->rt_all));
  }
  return with_auto ? open_auto(c, backend) : 0;
}

static void close_contender(contender *c) {
  if (c->auto_one != c->auto_all)
    cua_runtime_destroy(c->auto_one);
  cua_runtime_destroy(c->auto_all);
  c->auto_one = c->auto_all = NULL;
  if (c->rt_one != c->rt_all)
    cua_runtime_destroy(c->rt_one);
  cua_runtime_destroy(c->rt_all);
  c->rt_one = c->rt_all = NULL;
}

/* --trace DIR: reopens every contender's runtimes before workload @p w,
 * the one @p w runs on writing DIR/W-LABEL.json (the label's characters
 * other than letters, digits, '-', '_' and '.' made '_') when it closes:
 * before the next workload, or at the end. */
static int retrace(bench *b, const char *w, int with_auto) {
  for (size_t i = 0; i < b->ncont; i++) {
    contender *c = &b->cont[i];
    char label[sizeof c->label], path[4400];
    memcpy(label, c->label, sizeof label);
    int n = snprintf(path, sizeof path, "%s/%s-", b->o->trace_dir, w);
    for (size_t k = 0; label[k] != '\0' && n > 0 && (size_t)n < sizeof path - 6;
         k++) {
      unsigned char ch = (unsigned char)label[k];
      path[n++] =
          isalnum(ch) || ch == '-' || ch == '_' || ch == '.' ? (char)ch : '_';
    }
    snprintf(path + n, sizeof path - (size_t)n, ".json");
    char **t = realloc(b->traced, (b->ntraced + 1) * sizeof *t);
    if (t == NULL || (t[b->ntraced] = strdup(path)) == NULL) {
      if (t != NULL)
        b->traced = t;
      fprintf(stderr, PROG ": out of memory\n");
      return -1;
    }
    b->traced = t;
    b->ntraced++;
    int all = c->is_config || c->ndev <= 1 || strcmp(w, "multigpu") == 0 ||
              b->o->all_devices;
    close_contender(c);
    trace_all = all ? path : NULL;
    trace_one = all ? NULL : path;
    int rc = open_contender(c, b->o->backend, with_auto);
    trace_all = trace_one = NULL;
    memcpy(c->label, label, sizeof label);
    if (rc != 0)
      return -1;
  }
  return 0;
}

/* --plot FILE.svg with --trace DIR: a Gantt chart of each trace of at
 * most GANTT_MAX slices, FILE-gantt-W-LABEL.svg. 0, or -1 when gnuplot
 * failed (a trace too large or without ops is skipped, with a note). */
#define GANTT_MAX 4096
static int gantt_charts(bench *b) {
  int rc = 0;
  const char *plot = b->o->plot;
  size_t base = strlen(plot);
  if (base > 4 && strcmp(plot + base - 4, ".svg") == 0)
    base -= 4;
  for (size_t i = 0; i < b->ntraced; i++) {
    const char *t = b->traced[i];
    const char *name = strrchr(t, '/');
    name = name != NULL ? name + 1 : t;
    size_t nl = strlen(name);
    if (nl > 5 && strcmp(name + nl - 5, ".json") == 0)
      nl -= 5;
    char svg[8800], title[600], err[ERRLEN];
    snprintf(svg, sizeof svg, "%.*s-gantt-%.*s.svg", (int)base, plot, (int)nl,
             name);
    snprintf(title, sizeof title, "%.*s: a row per stream, a box per op",
             (int)nl, name);
    int g = bench_gantt(svg, t, title, GANTT_MAX, err, sizeof err);
    if (g != 0)
      fprintf(stderr, PROG ": %s\n", err);
    if (g < 0)
      rc = -1;
  }
  return rc;
}

/* Whether a --submit mode is auto (the contenders then open its runtimes
 * too). */
static int wants_auto(const options *o) {
  for (int m = 0; m < o->nsubmit; m++)
    if (o->submit[m] == BENCH_SUBMIT_AUTO)
      return 1;
  return 0;
}

/* A contender could not be opened: closes the others and frees what main()
 * holds; returns the exit status. */
static int give_up(bench *b, FILE *out) {
  progress_end();
  for (size_t j = 0; j < b->ncont; j++)
    close_contender(&b->cont[j]);
  free(b->cont);
  free((void *)b->o->workloads);
  for (size_t i = 0; i < b->ntraced; i++)
    free(b->traced[i]);
  free(b->traced);
  /* Nothing was written: an earlier file stays as it was, and one this
   * run created goes. */
  if (out != stdout) {
    fclose(out);
    if (b->o->output_created)
      unlink(b->o->output);
  }
  if (b->plot != NULL) {
    fclose(b->plot);
    if (b->o->plot_created)
      unlink(b->o->plot);
  }
  return EXIT_RUN;
}

/* Makes contender labels unique (the same policy given twice). */
static void unique_labels(contender *c, size_t n) {
  for (size_t i = 1; i < n; i++)
    for (size_t j = 0; j < i; j++)
      if (strcmp(c[i].label, c[j].label) == 0) {
        size_t l = strlen(c[i].label);
        snprintf(c[i].label + l, sizeof c[i].label - l, " (%zu)", i + 1);
        break;
      }
}

/* ------------------------------------------------------ metadata */

static void fill_meta(bench_meta *m, const bench *b) {
  const options *o = b->o;
  memset(m, 0, sizeof *m);
  m->version = cua_version_string();
  static char backends[8 * 65];
  size_t nb = 0;
  backends[0] = '\0';
  for (size_t i = 0; i < b->ngroups && nb < sizeof backends; i++)
    nb += (size_t)snprintf(backends + nb, sizeof backends - nb, "%s%s",
                           i ? "," : "", b->groups[i].backend);
  m->backends = backends;
  m->have_cuda_info = bench_raw_sysinfo(&m->cuda) == 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  while (f != NULL && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) == 0) {
      char *v = strchr(line, ':');
      if (v != NULL) {
        v += strspn(v + 1, " \t") + 1;
        v[strcspn(v, "\n")] = '\0';
        snprintf(m->cpu, sizeof m->cpu, "%s", v);
      }
      break;
    }
  }
  if (f != NULL)
    fclose(f);
  if (m->cpu[0] == '\0') {
    struct utsname u;
    if (uname(&u) == 0)
      snprintf(m->cpu, sizeof m->cpu, "%s", u.machine);
  }
  m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (gethostname(m->hostname, sizeof m->hostname) != 0)
    m->hostname[0] = '\0';
  m->hostname[sizeof m->hostname - 1] = '\0';
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  m->tasks = o->tasks;
  m->width = o->width;
  m->streams = o->streams;
  m->repeat = o->repeat;
  m->quick = o->quick;
  m->metg = o->metg;
  m->axpy = o->axpy;
  m->duration_ns = o->duration;
  m->seed = o->seed;
  m->skew = o->skew;
  m->skew_share = o->skew_share ? o->skew_share : 25;
  m->all_devices = o->all_devices;
  m->no_hints = o->no_hints;
  m->blocks = (uint32_t)o->blocks;
  m->bytes = o->bytes;
  m->machine = o->machine;
  m->submit[0] = '\0';
  for (int i = 0; i < o->nsubmit; i++) {
    if (i)
      strcat(m->submit, ",");
    strcat(m->submit, bench_submit_name(o->submit[i]));
  }
}

/* The --output and --plot files this run created and has not written
 * yet: removed when the run is interrupted (SIGINT, SIGTERM, SIGHUP), as
 * when it gives up, rather than left behind empty. */
static const char *volatile made_files[2];

static void remove_made_files(int sig) {
  for (int i = 0; i < 2; i++)
    if (made_files[i] != NULL)
      unlink(made_files[i]); /* async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

static void watch_made_file(int i, const char *path, int created) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  if (!created)
    return;
  made_files[i] = path;
  for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
    struct sigaction sa, old;
    /* One ignored when the run began stays so (nohup, a background job
     * of a script). */
    if (sigaction(sigs[k], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
      continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_made_files;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[k], &sa, NULL);
  }
}

/* Whether @p path names the regular file open as @p f. */
static int same_file(FILE *f, const char *path) {
  struct stat a, b;
  return fstat(fileno(f), &a) == 0 && stat(path, &b) == 0 &&
         S_ISREG(a.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* ------------------------------------------------------------ main */

typedef struct spec {
  const char *value;
  int is_config;
} spec;

/* main() owns the contender list, so that every return frees it. */
static int bench_main(int argc, char **argv, spec *specs) {
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'},
      {"policy", required_argument, NULL, 'p'},
      {"backend", required_argument, NULL, 'b'},
      {"workload", required_argument, NULL, 'w'},
      {"tasks", required_argument, NULL, 'n'},
      {"width", required_argument, NULL, 'W'},
      {"duration", required_argument, NULL, 'd'},
      {"blocks", required_argument, NULL, 'B'},
      {"kernel", required_argument, NULL, 'k'},
      {"bytes", required_argument, NULL, 'x'},
      {"streams", required_argument, NULL, 'S'},
      {"seed", required_argument, NULL, 's'},
      {"skew", required_argument, NULL, 'K'},
      {"skew-share", required_argument, NULL, 1001},
      {"hints", required_argument, NULL, 1002},
      {"devices", required_argument, NULL, 1003},
      {"machine", required_argument, NULL, 1006},
      {"trace", required_argument, NULL, 1004},
      {"timestamps", no_argument, NULL, 1005},
      {"repeat", required_argument, NULL, 'r'},
      {"metg", no_argument, NULL, 'm'},
      {"submit", required_argument, NULL, 'u'},
      {"quick", no_argument, NULL, 'q'},
      {"format", required_argument, NULL, 'f'},
      {"output", required_argument, NULL, 'o'},
      {"plot", required_argument, NULL, 'P'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  options o;
  size_t nspecs = 0;
  uint64_t v;
  int c;

  memset(&o, 0, sizeof o);
  o.backend = "auto";
  o.tasks = 1024;
  o.width = 8;
  o.duration = 50000;
  o.blocks = 1;
  o.streams = 4;
  o.seed = 1;
  o.skew = 1;
  o.repeat = 5;
  o.bytes = 256 * 1024;
  o.format = BENCH_FMT_TABLE;
  o.submit[0] = BENCH_SUBMIT_WHOLE;
  o.nsubmit = 1;
  if (specs == NULL)
    return EXIT_RUN;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":c:p:b:w:n:W:d:B:k:S:s:K:r:mu:qf:o:P:hV",
                          longopts, NULL)) != -1) {
    switch (c) {
    case 'c':
    case 'p':
      /* A policy is one line of the configuration text ("policy = X"): a
       * line break in it would add lines of its own. */
      for (const char *q = optarg; c == 'p' && *q; q++)
        if (iscntrl((unsigned char)*q))
          return free(o.workloads),
                 usage_error("--policy '%s': a policy name or file has no "
                             "control character",
                             optarg);
      specs[nspecs].value = optarg;
      specs[nspecs++].is_config = c == 'c';
      break;
    case 'b':
      if (strcmp(optarg, "auto") && strcmp(optarg, "cuda") &&
          strcmp(optarg, "host") && strcmp(optarg, "sim"))
        return free(o.workloads),
               usage_error(
                   "--backend must be auto, cuda, host or sim, not '%s'",
                   optarg);
      o.backend = optarg;
      break;
    case 'w': {
      if (has_empty_entry(optarg))
        return free(o.workloads),
               usage_error("--workload '%s': an empty name in the list",
                           optarg);
      int rc = add_workloads(&o, optarg);
      if (rc == -2)
        return EXIT_USAGE;
      if (rc)
        return EXIT_RUN;
      break;
    }
    case 'n':
      if (parse_num(optarg, NULL, 1, 10000000, &v))
        return free(o.workloads),
               usage_error("--tasks wants 1..10000000, not '%s'", optarg);
      o.tasks = (size_t)v;
      o.set_tasks = 1;
      break;
    case 'W':
      if (parse_num(optarg, NULL, 1, 65536, &v))
        return free(o.workloads),
               usage_error("--width wants 1..65536, not '%s'", optarg);
      o.width = (int)v;
      o.set_width = 1;
      break;
    case 'd':
      if (parse_num(optarg, time_units, 0, 10000000000ull, &v))
        return free(o.workloads),
               usage_error("--duration wants 0..10s (ns, or a us|ms|s "
                           "suffix), not '%s'",
                           optarg);
      o.duration = v;
      break;
    case 'B':
      if (parse_num(optarg, NULL, 1, 65535, &v))
        return free(o.workloads),
               usage_error("--blocks wants 1..65535, not '%s'", optarg);
      o.blocks = (int)v;
      break;
    case 'k':
      if (strcmp(optarg, "spin") && strcmp(optarg, "axpy"))
        return free(o.workloads),
               usage_error("--kernel must be spin or axpy, not '%s'", optarg);
      o.axpy = strcmp(optarg, "axpy") == 0;
      break;
    case 'x':
      if (parse_num(optarg, size_units, 4, 1ull << 34, &v))
        return free(o.workloads),
               usage_error("--bytes wants 4..16G (K|M|G suffixes), not '%s'",
                           optarg);
      o.bytes = (size_t)v;
      o.set_bytes = 1;
      break;
    case 'S':
      if (parse_num(optarg, NULL, 1, 1024, &v))
        return free(o.workloads),
               usage_error("--streams wants 1..1024, not '%s'", optarg);
      o.streams = (int)v;
      break;
    case 's': {
      /* Decimal (a leading 0 is not octal), or hexadecimal after 0x. */
      int hex = optarg[0] == '0' && (optarg[1] == 'x' || optarg[1] == 'X');
      const char *num = hex ? optarg + 2 : optarg;
      char *end;
      errno = 0;
      unsigned long long s = strtoull(num, &end, hex ? 16 : 10);
      if (errno || *end || !isxdigit((unsigned char)num[0]) ||
          (!hex && !isdigit((unsigned char)num[0])))
        return free(o.workloads),
               usage_error("--seed wants an unsigned number, decimal or "
                           "0x hexadecimal, not '%s'",
                           optarg);
      o.seed = s;
      break;
    }
    case 'K':
      if (parse_num(optarg, NULL, 1, 1000, &v))
        return free(o.workloads),
               usage_error("--skew wants 1..1000, not '%s'", optarg);
      o.skew = (unsigned)v;
      break;
    case 1001:
      if (parse_num(optarg, NULL, 1, 100, &v))
        return free(o.workloads),
               usage_error("--skew-share wants a percent, 1..100, not '%s'",
                           optarg);
      o.skew_share = (unsigned)v;
      break;
    case 1002:
      if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
        return free(o.workloads),
               usage_error("--hints wants on or off, not '%s'", optarg);
      o.no_hints = strcmp(optarg, "off") == 0;
      break;
    case 1003:
      if (strcmp(optarg, "one") != 0 && strcmp(optarg, "all") != 0)
        return free(o.workloads),
               usage_error("--devices wants one or all, not '%s'", optarg);
      o.all_devices = strcmp(optarg, "all") == 0;
      break;
    case 1006:
      o.machine = optarg;
      break;
    case 1004: {
      struct stat st;
      if (stat(optarg, &st) != 0 || !S_ISDIR(st.st_mode) ||
          access(optarg, W_OK) != 0)
        return free(o.workloads),
               usage_error("--trace wants a directory it can write, not '%s'",
                           optarg);
      o.trace_dir = optarg;
      break;
    }
    case 1005:
      o.timestamps = 1;
      break;
    case 'r':
      if (parse_num(optarg, NULL, 1, 10000, &v))
        return free(o.workloads),
               usage_error("--repeat wants 1..10000, not '%s'", optarg);
      o.repeat = (int)v;
      o.set_repeat = 1;
      break;
    case 'm':
      o.metg = 1;
      break;
    case 'u':
      if (has_empty_entry(optarg))
        return free(o.workloads),
               usage_error("--submit '%s': an empty mode in the list", optarg);
      if (parse_submit(&o, optarg))
        return free(o.workloads),
               usage_error("--submit wants whole, task, level, graph or auto, "
                           "or a "
                           "comma-separated list of them, each once, not "
                           "'%s'",
                           optarg);
      break;
    case 'q':
      o.quick = 1;
      break;
    case 'f':
      if (strcmp(optarg, "table") == 0)
        o.format = BENCH_FMT_TABLE;
      else if (strcmp(optarg, "csv") == 0)
        o.format = BENCH_FMT_CSV;
      else if (strcmp(optarg, "json") == 0)
        o.format = BENCH_FMT_JSON;
      else
        return free(o.workloads),
               usage_error("--format must be table, csv or json, not '%s'",
                           optarg);
      break;
    case 'o':
      o.output = optarg;
      break;
    case 'P':
      o.plot = optarg;
      break;
    case 'h':
      usage(stdout);
      return free(o.workloads), output_written();
    case 'V':
      printf(PROG " (cuasync) %s\n", cua_version_string());
      return free(o.workloads), output_written();
    case ':':
      return free(o.workloads),
             usage_error("option '%s' needs an argument", argv[optind - 1]);
    default:
      if (no_argument_name(longopts, optopt) != NULL)
        return free(o.workloads),
               usage_error("option '--%s' takes no argument",
                           no_argument_name(longopts, optopt));
      if (optopt)
        return free(o.workloads), usage_error("unknown option '-%c'", optopt);
      return free(o.workloads),
             usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return free(o.workloads),
           usage_error("unexpected argument '%s'", argv[optind]);
  /* CUPTI serves one client per process: the raw-ts-cupti baseline and
   * the traced runtimes' CUPTI times would take it from each other. */
  if (o.machine != NULL && strcmp(o.backend, "sim") != 0)
    return free(o.workloads),
           usage_error("--machine is the sim backend's: give -b sim too");
  bench_machine = o.machine;
  /* Only --policy contenders (or the default ones) take it: with --config
   * contenders alone it would be named with the results, and unused. */
  if (o.machine != NULL && nspecs > 0) {
    size_t i = 0;
    while (i < nspecs && specs[i].is_config)
      i++;
    if (i == nspecs)
      return free(o.workloads),
             usage_error("--machine is the machine of --policy contenders, "
                         "and there are none: a --config contender names its "
                         "own ([backend.sim] machine)");
  }
  /* METG sweeps the spins' duration: AXPYs have none to sweep. */
  if (o.metg && o.axpy)
    return free(o.workloads),
           usage_error("--metg sweeps the duration of spin tasks: not with "
                       "--kernel axpy");
  /* Without long tasks there is no share of them to set. */
  if (o.skew_share != 0 && o.skew == 1)
    return free(o.workloads),
           usage_error("--skew-share is --skew's: give --skew R (2..1000) "
                       "too");
  if (o.timestamps && o.trace_dir != NULL)
    return free(o.workloads),
           usage_error("--timestamps and --trace cannot go together (both "
                       "use CUPTI)");
  if (o.quick) {
    if (!o.set_tasks)
      o.tasks = 64;
    if (!o.set_width)
      o.width = 4;
    if (!o.set_repeat)
      o.repeat = 3;
    if (!o.set_bytes)
      o.bytes = 64 * 1024;
  }
  if (o.nworkloads == 0)
    add_workloads(&o, "all");
  if (o.plot != NULL && !bench_have_gnuplot()) {
    fprintf(stderr,
            PROG ": --plot needs gnuplot: %s not found (set $GNUPLOT or "
                 "install gnuplot)\n",
            getenv("GNUPLOT") && *getenv("GNUPLOT") ? getenv("GNUPLOT")
                                                    : "gnuplot in $PATH");
    free(o.workloads);
    return EXIT_PLOT;
  }
  FILE *out = stdout;
  if (o.output != NULL &&
      (out = bench_open_later(o.output, &o.output_created)) == NULL) {
    fprintf(stderr, PROG ": cannot write %s: %s\n", o.output, strerror(errno));
    free(o.workloads);
    return EXIT_RUN;
  }
  if (out != stdout)
    watch_made_file(0, o.output, o.output_created);
  /* The SVG would be written over the results. */
  if (out != stdout && o.plot != NULL && same_file(out, o.plot)) {
    fclose(out);
    if (o.output_created)
      unlink(o.output);
    free(o.workloads);
    return usage_error("--output %s and --plot %s are the same file", o.output,
                       o.plot);
  }
  progress_on = isatty(STDERR_FILENO);

  /* Each contender names its own policy: an override from the
   * environment would make every contender the same. */
  if (getenv("CUASYNC_POLICY") != NULL) {
    fprintf(stderr, PROG ": note: ignoring $CUASYNC_POLICY=%s\n",
            getenv("CUASYNC_POLICY"));
    unsetenv("CUASYNC_POLICY");
  }
  if (nspecs == 0)
    for (size_t i = 0; i < 4; i++)
      specs[nspecs++] = (spec){standard_policies[i], 0};

  bench b;
  memset(&b, 0, sizeof b);
  b.o = &o;
  b.cont = calloc(nspecs, sizeof *b.cont);
  if (b.cont == NULL) {
    free(o.workloads);
    return EXIT_RUN;
  }
  for (size_t i = 0; i < nspecs; i++) {
    contender *ct = &b.cont[b.ncont];
    ct->spec = specs[i].value;
    ct->is_config = specs[i].is_config;
    progress("opening %s", ct->spec);
    if (open_contender(ct, o.backend, wants_auto(&o)) != 0) {
      close_contender(ct);
      return give_up(&b, out);
    }
    b.ncont++;
  }
  unique_labels(b.cont, b.ncont);
  /* The plot's file, opened before anything runs: a run of an hour is not
   * lost to a typo in its name. */
  if (o.plot != NULL &&
      (b.plot = bench_open_later(o.plot, &o.plot_created)) == NULL) {
    fprintf(stderr, PROG ": cannot write %s: %s\n", o.plot, strerror(errno));
    return give_up(&b, out);
  }
  if (o.plot != NULL)
    watch_made_file(1, o.plot, o.plot_created);
  /* A simulated machine of several GPUs with --devices one: every pattern
   * but multigpu runs on its first GPU, which a study of the machine
   * rarely wants. Said once. */
  for (size_t i = 0; i < b.ncont && !o.all_devices; i++) {
    if (strcmp(b.cont[i].backend, "sim") == 0 && b.cont[i].ndev > 1) {
      fprintf(stderr,
              PROG ": note: the simulated machine has %d GPUs, and with "
                   "--devices one (the default) every pattern but multigpu "
                   "runs on GPU 0; --devices all spreads them\n",
              b.cont[i].ndev);
      break;
    }
  }

  /* The backends in use, each with what its baselines need. */
  for (size_t i = 0; i < b.ncont; i++) {
    size_t g;
    for (g = 0; g < b.ngroups; g++)
      if (strcmp(b.groups[g].backend, b.cont[i].backend) == 0)
        break;
    if (g < b.ngroups) {
      /* The multigpu pattern spreads over the most devices any contender
       * of the backend has. */
      if (b.cont[i].ndev > b.groups[g].ndev)
        b.groups[g].ndev = b.cont[i].ndev;
      continue;
    }
    if (b.ngroups == sizeof b.groups / sizeof b.groups[0]) {
      fprintf(stderr,
              PROG ": contender '%s' runs on a ninth backend, '%s': left "
                   "out\n",
              b.cont[i].label, b.cont[i].backend);
      continue;
    }
    /* A backend other than cuda and sim (host, or a backend module of
     * one's own) gets the threads baselines, as host does. */
    group *gr = &b.groups[b.ngroups++];
    gr->backend = b.cont[i].backend;
    gr->ndev = b.cont[i].ndev > 0 ? b.cont[i].ndev : 1;
    gr->axpy_ns = NAN;
    if (strcmp(gr->backend, "cuda") == 0) {
      gr->raw_ok = bench_raw_available(gr->raw_why, sizeof gr->raw_why);
      if (o.axpy && gr->raw_ok) {
        uint64_t ns = 0;
        char err[ERRLEN];
        if (bench_raw_axpy_ns(o.bytes, &ns, err, sizeof err) == 0)
          gr->axpy_ns = (double)ns;
        else
          fprintf(stderr, PROG ": %s\n", err);
      }
    } else {
      gr->raw_ok = 1;
      if (o.axpy)
        gr->axpy_ns = (double)bench_threads_axpy_ns(o.bytes);
    }
  }

  /* The raw-ts-* baselines are CUDA's: said when no contender runs there,
   * rather than leaving the rows out without a word. */
  if (o.timestamps) {
    size_t g = 0;
    while (g < b.ngroups && strcmp(b.groups[g].backend, "cuda") != 0)
      g++;
    if (g == b.ngroups)
      fprintf(stderr, PROG ": note: --timestamps adds CUDA baselines, and no "
                           "contender runs on CUDA: no raw-ts rows\n");
  }
  for (size_t wi = 0; wi < o.nworkloads; wi++) {
    const char *w = o.workloads[wi];
    if (strcmp(w, "dispatch") == 0) {
      run_dispatch(&b);
      continue;
    }
    if (o.trace_dir != NULL) {
      progress("tracing %s", w);
      if (retrace(&b, w, wants_auto(&o)) != 0)
        return give_up(&b, out);
    }
    for (size_t g = 0; g < b.ngroups; g++) {
      if (strcmp(w, "latency") == 0)
        run_latency(&b, &b.groups[g]);
      else if (strcmp(w, "submit") == 0)
        run_submit(&b, w, &b.groups[g], 1);
      else if (strcmp(w, "submit-mt") == 0)
        run_submit(&b, w, &b.groups[g], BENCH_SUBMIT_THREADS);
      else
        run_dag_workload(&b, w, &b.groups[g]);
    }
  }
  progress_end();
  for (size_t i = 0; i < b.ncont; i++)
    close_contender(&b.cont[i]);

  bench_meta meta;
  fill_meta(&meta, &b);
  int status = b.rows.failed ? EXIT_RUN : 0;
  if (out != stdout) {
    /* Emptied only now: an earlier file stayed whole until the results
     * were ready. */
    int rc = bench_file_empty(out), e = errno;
    if (rc == 0) {
      bench_write(out, o.format, &meta, b.rows.v, b.rows.n);
      rc = fflush(out) != 0 || ferror(out) ? -1 : 0;
      e = errno;
    }
    if (fclose(out) != 0 && rc == 0) {
      rc = -1;
      e = errno;
    }
    if (rc != 0) {
      fprintf(stderr, PROG ": writing %s: %s\n", o.output, strerror(e));
      status = EXIT_RUN;
      if (o.output_created)
        unlink(o.output); /* not a half-written file */
    }
    made_files[0] = NULL;
  } else {
    bench_write(out, o.format, &meta, b.rows.v, b.rows.n);
    if (output_written() != 0)
      status = EXIT_RUN;
  }
  if (o.plot != NULL) {
    char err[ERRLEN];
    if (bench_plot(b.plot, o.plot, &meta, b.rows.v, b.rows.n, err,
                   sizeof err) != 0) {
      fprintf(stderr, PROG ": %s\n", err);
      status = EXIT_RUN;
      if (o.plot_created)
        unlink(o.plot);
    }
    made_files[1] = NULL;
    if (gantt_charts(&b) != 0)
      status = EXIT_RUN;
  }
  for (size_t i = 0; i < b.ntraced; i++)
    free(b.traced[i]);
  free(b.traced);
  free(b.rows.v);
  free(b.cont);
  free(o.workloads);
  return status;
}

int main(int argc, char **argv) {
  /* Each contender learns its performance models from its own warm-up
   * run, not from earlier runs' files, unless the caller says otherwise
   * (cuasync-bench(1)). */
  setenv("CUASYNC_MODELS", "memory", 0);
  spec *specs = calloc((size_t)argc + 4, sizeof *specs);
  int rc = bench_main(argc, argv, specs);
  free(specs);
  return rc;
}
