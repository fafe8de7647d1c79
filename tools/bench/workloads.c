/*
 * tools/bench/workloads.c: the Task Bench dependency patterns as DAGs, their
 * ideal times, and the hand-written stream/event schedule the raw baselines
 * follow.
 *
 * Every generator lists tasks step by step (a topological order) and gives
 * each task a lane: the stream a careful programmer would put it on (its
 * chain, its column of the stencil, its chunk of the pipeline).
 */
#include "config.h"

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const bench_patterns[] = {"trivial", "chain",    "stencil",  "tree",
                                      "random",  "pipeline", "multigpu", NULL};

const char *bench_submit_name(int mode) {
  switch (mode) {
  case BENCH_SUBMIT_TASK:
    return "task";
  case BENCH_SUBMIT_LEVEL:
    return "level";
  case BENCH_SUBMIT_GRAPH:
    return "graph";
  case BENCH_SUBMIT_AUTO:
    return "auto";
  default:
    return "whole";
  }
}

uint64_t bench_min_u64(const uint64_t *v, size_t n) {
  uint64_t m = n > 0 ? v[0] : 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] < m)
      m = v[i];
  return m;
}

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* splitmix64: spreads any seed (0 included) over the state space. */
static uint64_t mix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint32_t below(uint64_t *s, uint32_t n) {
  return (uint32_t)(mix64(s) % n);
}

/* Appends a task; the caller sized the array. */
static bench_task *add_task(bench_dag *d, int kind, int lane) {
  bench_task *t = &d->task[d->n++];
  memset(t, 0, sizeof *t);
  t->kind = (uint8_t)kind;
  t->lane = lane;
  t->buf = -1;
  return t;
}

static void add_pred(bench_task *t, size_t p) {
  t->pred[t->npred++] = (int32_t)p;
}

/* A compute task: SPIN, or AXPY on buffer @p buf. */
static bench_task *add_compute(bench_dag *d, const bench_shape *sh, int lane,
                               int buf) {
  bench_task *t = add_task(d, sh->axpy ? BENCH_AXPY : BENCH_SPIN, lane);
  if (sh->axpy)
    t->buf = buf;
  return t;
}

static size_t max_sz(size_t a, size_t b) {
  return a > b ? a : b;
}

/* Steps of a layered pattern of width w holding about n tasks. */
static size_t steps_for(size_t n, int w) {
  return max_sz(1, n / (size_t)w);
}

static void gen_trivial(bench_dag *d, const bench_shape *sh) {
  for (size_t k = 0; k < sh->tasks; k++)
    add_compute(d, sh, (int)k, (int)k);
}

/* Layered patterns: task (t, i) is index t * w + i. */
static void gen_layers(bench_dag *d, const bench_shape *sh, int w,
                       int stencil) {
  size_t steps = steps_for(sh->tasks, w);
  for (size_t t = 0; t < steps; t++)
    for (int i = 0; i < w; i++) {
      size_t k = t * (size_t)w + (size_t)i;
      bench_task *task = add_compute(d, sh, i, (int)k);
      if (t == 0)
        continue;
      size_t prev = (t - 1) * (size_t)w;
      if (!stencil) {
        add_pred(task, prev + (size_t)i);
        continue;
      }
      for (int j = i - 1; j <= i + 1; j++)
        if (j >= 0 && j < w)
          add_pred(task, prev + (size_t)j);
    }
}

static void gen_random(bench_dag *d, const bench_shape *sh, int w) {
  uint64_t rng = sh->seed;
  size_t steps = steps_for(sh->tasks, w);
  int maxp = w < BENCH_MAX_PRED ? w : BENCH_MAX_PRED;
  for (size_t t = 0; t < steps; t++)
    for (int i = 0; i < w; i++) {
      size_t k = t * (size_t)w + (size_t)i;
      bench_task *task = add_compute(d, sh, i, (int)k);
      if (t == 0)
        continue;
      int want = 1 + (int)below(&rng, (uint32_t)maxp);
      while (task->npred < want) {
        size_t p = (t - 1) * (size_t)w + below(&rng, (uint32_t)w);
        int dup = 0;
        for (int q = 0; q < task->npred; q++)
          dup |= task->pred[q] == (int32_t)p;
        if (!dup)
          add_pred(task, p);
      }
      /* Ascending predecessors read better in dumps; order is free. */
      for (int a = 1; a < task->npred; a++)
        for (int b = a; b > 0 && task->pred[b - 1] > task->pred[b]; b--) {
          int32_t x = task->pred[b];
          task->pred[b] = task->pred[b - 1];
          task->pred[b - 1] = x;
        }
    }
}

/* Binary fan-out from one root to 2^(L-1) leaves, then binary fan-in back
 * to one task: 2^L - 1 + 2^(L-1) - 1 tasks, the largest L that fits. */
static size_t tree_levels(size_t n) {
  size_t levels = 1;
  while (levels < 30) {
    size_t next = levels + 1;
    size_t total = ((size_t)1 << next) - 1 + ((size_t)1 << (next - 1)) - 1;
    if (total > n)
      break;
    levels = next;
  }
  return levels;
}

static void gen_tree(bench_dag *d, const bench_shape *sh) {
  size_t levels = tree_levels(sh->tasks), first = 0, width = 1;
  size_t k = 0;
  for (size_t l = 0; l < levels; l++, width *= 2) {
    size_t prev = first;
    first = d->n;
    for (size_t j = 0; j < width; j++, k++) {
      bench_task *t = add_compute(d, sh, (int)j, (int)k);
      if (l > 0)
        add_pred(t, prev + j / 2);
    }
  }
  width /= 2; /* leaves */
  while (width > 1) {
    size_t prev = first;
    width /= 2;
    first = d->n;
    for (size_t j = 0; j < width; j++, k++) {
      bench_task *t = add_compute(d, sh, (int)j, (int)k);
      add_pred(t, prev + 2 * j);
      add_pred(t, prev + 2 * j + 1);
    }
  }
}

/* Chunk c: copy in, compute, copy out, on buffer (and host chunk) c. */
static void gen_pipeline(bench_dag *d, const bench_shape *sh) {
  size_t chunks = max_sz(1, sh->tasks / 3);
  for (size_t c = 0; c < chunks; c++) {
    bench_task *in = add_task(d, BENCH_H2D, (int)c);
    in->buf = (int)c;
    bench_task *comp = add_compute(d, sh, (int)c, (int)c);
    comp->buf = sh->axpy ? (int)c : -1;
    add_pred(comp, d->n - 2);
    bench_task *out = add_task(d, BENCH_D2H, (int)c);
    out->buf = (int)c;
    add_pred(out, d->n - 2);
  }
  d->nbuf = chunks;
}

/* Independent chains spread over the devices: chain i on device i % D,
 * lane i / D there. */
static void gen_multigpu(bench_dag *d, const bench_shape *sh, int w) {
  int nd = sh->ndevices > 0 ? sh->ndevices : 1;
  size_t steps = steps_for(sh->tasks, w);
  for (size_t t = 0; t < steps; t++)
    for (int i = 0; i < w; i++) {
      size_t k = t * (size_t)w + (size_t)i;
      bench_task *task = add_compute(d, sh, i / nd, (int)k);
      task->device = i % nd;
      if (t > 0)
        add_pred(task, k - (size_t)w);
    }
  d->ndevices = nd;
  d->device_hints = 1;
}

static size_t capacity_for(const char *name, const bench_shape *sh) {
  if (strcmp(name, "pipeline") == 0)
    return 3 * max_sz(1, sh->tasks / 3);
  if (strcmp(name, "tree") == 0)
    return sh->tasks + 4;
  if (strcmp(name, "trivial") == 0)
    return sh->tasks;
  return steps_for(sh->tasks, sh->width) * (size_t)sh->width;
}

/* Counts what the ideal needs: compute tasks, edges, and the most compute
 * tasks on one path (longest path, predecessors first). */
static int analyse(bench_dag *d, char *err, size_t len) {
  size_t *cp = calloc(d->n ? d->n : 1, sizeof *cp);
  if (cp == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  d->ncompute = d->cp_compute = d->edges = 0;
  for (size_t k = 0; k < d->n; k++) {
    const bench_task *t = &d->task[k];
    size_t compute = t->kind == BENCH_SPIN   ? (t->scale > 1 ? t->scale : 1)
                     : t->kind == BENCH_AXPY ? 1
                                             : 0;
    size_t best = 0;
    for (int p = 0; p < t->npred; p++) {
      if ((size_t)t->pred[p] >= k) {
        free(cp);
        snprintf(err, len, "%s: task %zu depends on later task %d", d->name, k,
                 t->pred[p]);
        return -1;
      }
      best = max_sz(best, cp[t->pred[p]]);
    }
    cp[k] = best + compute;
    d->ncompute += compute;
    d->edges += t->npred;
    d->cp_compute = max_sz(d->cp_compute, cp[k]);
    if (t->buf >= 0 && (size_t)t->buf + 1 > d->nbuf)
      d->nbuf = (size_t)t->buf + 1;
  }
  free(cp);
  return 0;
}

int bench_dag_make(bench_dag *d, const char *name, const bench_shape *sh,
                   char *err, size_t len) {
  memset(d, 0, sizeof *d);
  if (sh->tasks == 0 || sh->width < 1) {
    snprintf(err, len, "%s: tasks and width must be at least 1", name);
    return -1;
  }
  snprintf(d->name, sizeof d->name, "%s", name);
  d->ns = sh->ns;
  d->blocks = sh->blocks ? sh->blocks : 1;
  d->bytes = (sh->bytes + 3) / 4 * 4;
  if (d->bytes == 0)
    d->bytes = 4;
  d->ndevices = 1;
  int w = sh->width;
  if ((size_t)w > sh->tasks)
    w = (int)sh->tasks;
  d->width = w;
  bench_shape s = *sh;
  s.width = w;
  d->task = calloc(capacity_for(name, &s) + 1, sizeof *d->task);
  if (d->task == NULL) {
    snprintf(err, len, "%s: out of memory for %zu tasks", name, sh->tasks);
    return -1;
  }
  if (strcmp(name, "trivial") == 0) {
    gen_trivial(d, &s);
    d->width = (int)d->n;
  } else if (strcmp(name, "chain") == 0) {
    gen_layers(d, &s, w, 0);
  } else if (strcmp(name, "stencil") == 0) {
    gen_layers(d, &s, w, 1);
  } else if (strcmp(name, "tree") == 0) {
    gen_tree(d, &s);
    d->width = 1 << (tree_levels(s.tasks) - 1);
  } else if (strcmp(name, "random") == 0) {
    gen_random(d, &s, w);
  } else if (strcmp(name, "pipeline") == 0) {
    gen_pipeline(d, &s);
    d->width = (int)d->nbuf;
  } else if (strcmp(name, "multigpu") == 0) {
    gen_multigpu(d, &s, w);
  } else {
    snprintf(err, len, "unknown workload '%s'", name);
    bench_dag_free(d);
    return -1;
  }
  /* Cost skew: skew_share percent of the SPINs (one in four by default),
   * drawn from the seed, last skew times as long. */
  if (sh->skew > 1) {
    uint64_t st = sh->seed ^ 0x5ce3a11d5eedull;
    unsigned share = sh->skew_share ? sh->skew_share : 25;
    for (size_t k = 0; k < d->n; k++)
      if (d->task[k].kind == BENCH_SPIN && mix64(&st) % 100 < share)
        d->task[k].scale = (uint16_t)sh->skew;
    d->skewed = 1;
  }
  d->no_hints = sh->no_hints;
  /* --devices all: the baselines' lanes dealt over the devices (lane l to
   * device l % D, lane l / D there), so that raw-streams and the ideal have
   * the streams of every device; the ops hint no device. */
  if (sh->spread && sh->ndevices > 1 && strcmp(name, "multigpu") != 0) {
    for (size_t k = 0; k < d->n; k++) {
      d->task[k].device = d->task[k].lane % sh->ndevices;
      d->task[k].lane /= sh->ndevices;
    }
    d->ndevices = sh->ndevices;
  }
  if (analyse(d, err, len) != 0) {
    bench_dag_free(d);
    return -1;
  }
  return 0;
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

double bench_dag_lpt(const bench_dag *d, double task_ns, int p) {
  if (d->edges > 0 || p < 1)
    return 0;
  size_t m = 0;
  double *dur = malloc((d->n ? d->n : 1) * sizeof *dur);
  double *load = calloc((size_t)p, sizeof *load);
  if (dur == NULL || load == NULL) {
    free(dur);
    free(load);
    return 0;
  }
  for (size_t k = 0; k < d->n; k++)
    if (d->task[k].kind == BENCH_SPIN || d->task[k].kind == BENCH_AXPY)
      dur[m++] = task_ns * (d->task[k].scale > 1 ? d->task[k].scale : 1);
  qsort(dur, m, sizeof *dur, cmp_desc);
  double span = 0;
  for (size_t k = 0; k < m; k++) {
    int best = 0;
    for (int q = 1; q < p; q++)
      if (load[q] < load[best])
        best = q;
    load[best] += dur[k];
    if (load[best] > span)
      span = load[best];
  }
  free(dur);
  free(load);
  return span;
}

void bench_dag_free(bench_dag *d) {
  free(d->task);
  d->task = NULL;
  d->n = 0;
}

double bench_dag_ideal(const bench_dag *d, double task_ns, int p) {
  double spread = (double)d->ncompute / (double)(p > 0 ? p : 1);
  double path = (double)d->cp_compute;
  return task_ns * (spread > path ? spread : path);
}

/* ------------------------------------------------------------ the plan */

int bench_plan_make(bench_plan *pl, const bench_dag *d, int nstreams, char *err,
                    size_t len) {
  return bench_plan_placed(pl, d, nstreams, d->ndevices, NULL, err, len);
}

int bench_plan_placed(bench_plan *pl, const bench_dag *d, int nstreams,
                      int ndevices, const int32_t *given, char *err,
                      size_t len) {
  memset(pl, 0, sizeof *pl);
  if (nstreams < 1)
    nstreams = 1;
  pl->nstreams = nstreams;
  pl->ndevices = ndevices > 0 ? ndevices : 1;
  size_t ns = (size_t)pl->nstreams * (size_t)pl->ndevices, n = d->n;
  /* Vector clocks: vc[s * ns + q] is the last position on stream q that
   * stream s is ordered after; snap[k * ns + q] is that of task k's
   * stream right after task k. */
  int64_t *vc = malloc(ns * ns * sizeof *vc);
  int32_t *snap = malloc((n ? n : 1) * ns * sizeof *snap);
  int64_t *count = calloc(ns, sizeof *count);
  int64_t *seq = malloc((n ? n : 1) * sizeof *seq);
  pl->stream = malloc((n ? n : 1) * sizeof *pl->stream);
  pl->record = calloc(n ? n : 1, sizeof *pl->record);
  pl->wait_off = calloc(n + 1, sizeof *pl->wait_off);
  pl->wait = malloc((d->edges ? d->edges : 1) * sizeof *pl->wait);
  if (vc == NULL || snap == NULL || count == NULL || seq == NULL ||
      pl->stream == NULL || pl->record == NULL || pl->wait_off == NULL ||
      pl->wait == NULL) {
    free(vc);
    free(snap);
    free(count);
    free(seq);
    bench_plan_free(pl);
    snprintf(err, len, "out of memory for the plan of %zu tasks", n);
    return -1;
  }
  for (size_t i = 0; i < ns * ns; i++)
    vc[i] = -1;
  for (size_t k = 0; k < n; k++) {
    const bench_task *t = &d->task[k];
    int dev = t->device % pl->ndevices;
    size_t s = given != NULL ? (size_t)given[k]
                             : (size_t)dev * (size_t)pl->nstreams +
                                   (size_t)(t->lane % pl->nstreams);
    int64_t *mine = vc + s * ns;
    int32_t order[BENCH_MAX_PRED];
    pl->stream[k] = (int32_t)s;
    seq[k] = count[s]++;
    /* Latest producers first: waiting on one orders the stream after
     * everything that producer was ordered after. */
    for (int a = 0; a < t->npred; a++) {
      order[a] = t->pred[a];
      for (int b = a; b > 0 && seq[order[b - 1]] < seq[order[b]]; b--) {
        int32_t x = order[b];
        order[b] = order[b - 1];
        order[b - 1] = x;
      }
    }
    pl->wait_off[k] = pl->nwaits;
    for (int a = 0; a < t->npred; a++) {
      int32_t p = order[a];
      size_t q = (size_t)pl->stream[p];
      if (q == s || mine[q] >= seq[p])
        continue;
      pl->wait[pl->nwaits++] = p;
      if (!pl->record[p]) {
        pl->record[p] = 1;
        pl->nrecords++;
      }
      for (size_t r = 0; r < ns; r++)
        if (snap[(size_t)p * ns + r] > mine[r])
          mine[r] = snap[(size_t)p * ns + r];
    }
    mine[s] = seq[k];
    for (size_t r = 0; r < ns; r++)
      snap[k * ns + r] = (int32_t)mine[r];
  }
  pl->wait_off[n] = pl->nwaits;
  free(vc);
  free(snap);
  free(count);
  free(seq);
  return 0;
}

size_t bench_plan_peer_waits(const bench_plan *pl, size_t n) {
  size_t peer = 0;
  for (size_t k = 0; k < n; k++)
    for (size_t w = pl->wait_off[k]; w < pl->wait_off[k + 1]; w++)
      if (pl->stream[pl->wait[w]] / pl->nstreams !=
          pl->stream[k] / pl->nstreams)
        peer++;
  return peer;
}

void bench_plan_free(bench_plan *pl) {
  free(pl->stream);
  free(pl->record);
  free(pl->wait_off);
  free(pl->wait);
  memset(pl, 0, sizeof *pl);
}
