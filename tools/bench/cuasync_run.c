/*
 * tools/bench/cuasync_run.c: runs a workload DAG through cuasync's public
 * API, the way a user would write it.
 *
 * Each task is one op (cua_op_spin(), cua_op_axpy() or a copy). Edges are
 * DAG edges, not buffer hazards: a task with predecessors is
 * then(zip(predecessors), task), and a link of a plain chain (the only
 * successor of a task with one predecessor) is then(predecessor, task), so
 * the policies see it as a chain they may keep on one stream. Consumers
 * always name the predecessor's own op, never the then/zip wrapping it, so
 * the core resolves each edge to the producing device op directly. The
 * root is a zip of every task's wrapper, in topological order, so the
 * submission's post-order is the tasks' order.
 *
 * The DAG is built once and submitted for every run (ops are immutable;
 * each submission makes its own nodes), so building costs are reported
 * apart from the runs.
 *
 * With --submit task or level, the DAG is submitted as a StarPU or OpenMP
 * program inserts it: one cua_submit() per task (in task order), or one per
 * level (the tasks whose longest path from a root has the same length).
 * Every task op is then wrapped in cua_op_shared(), and a task's
 * submission is then(zip(its predecessors' shared ops), its shared op):
 * the predecessors ran, or run, in earlier submissions, exactly once, and
 * the core orders the task after them across submissions. A shared op runs
 * once only, so those wrappers are made anew before every run (untimed,
 * added to the build cost); every submission has its own future, and the
 * run ends when the last of them, waited in order, is complete.
 */
#include "config.h"

#include "cuasync_run.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_cua {
  cua_runtime *rt;
  const bench_dag *dag;
  int mode;          /* enum bench_submit */
  cua_op *root;      /* whole: the DAG */
  cua_op **ops;      /* task, level: the task ops, n */
  uint32_t *nsucc;   /* task, level: successors of each task */
  size_t *order;     /* level: tasks sorted by level */
  size_t *level_off; /* level: nlevels + 1 offsets into order */
  size_t nlevels;
  cua_future **futs;   /* task, level: one per submission */
  cua_graph *graph;    /* graph: the DAG, captured */
  uint64_t build_ns;   /* the task ops (or the DAG) */
  uint64_t create_ns;  /* graph: cua_graph_create() alone */
  uint64_t capture_ns; /* graph: of which the backend's capture */
  uint64_t wrap_ns;    /* task, level: wrappers, summed over runs */
  uint64_t wrap_runs;
  uint64_t submit_ns; /* the last run's host time in cua_submit() */
  cua_buffer **bufs;  /* dag->nbuf */
  cua_buffer **x;     /* per device: AXPY's shared input */
  void **hin, **hout; /* per buffer: pinned host chunks (pipeline) */
  int ndev;
};

static int fail(char *err, size_t len, cua_runtime *rt, const char *what,
                int rc) {
  const char *msg = rt != NULL ? cua_runtime_error(rt) : "";
  snprintf(err, len, "%s: %s%s%s", what, cua_err_name(rc), msg[0] ? ": " : "",
           msg);
  return -1;
}

void bench_cua_close(bench_cua *g) {
  if (g == NULL)
    return;
  if (g->rt != NULL)
    cua_runtime_synchronize(g->rt);
  cua_graph_destroy(g->graph);
  cua_op_destroy(g->root);
  for (size_t k = 0; g->ops != NULL && k < g->dag->n; k++)
    cua_op_destroy(g->ops[k]);
  free(g->ops);
  free(g->nsucc);
  free(g->order);
  free(g->level_off);
  free(g->futs);
  for (size_t b = 0; g->bufs != NULL && b < g->dag->nbuf; b++)
    cua_buffer_destroy(g->bufs[b]);
  for (int d = 0; g->x != NULL && d < g->ndev; d++)
    cua_buffer_destroy(g->x[d]);
  for (size_t b = 0; b < g->dag->nbuf; b++) {
    if (g->hin != NULL && g->hin[b] != NULL)
      cua_host_free(g->rt, g->hin[b]);
    if (g->hout != NULL && g->hout[b] != NULL)
      cua_host_free(g->rt, g->hout[b]);
  }
  free(g->bufs);
  free(g->x);
  free(g->hin);
  free(g->hout);
  free(g);
}

/* Runs one op to completion (set-up work, untimed). */
static int run_now(cua_runtime *rt, cua_op *op, const char *what, char *err,
                   size_t len) {
  int rc = cua_submit_wait(rt, op, NULL, NULL);
  cua_op_destroy(op);
  return rc ? fail(err, len, rt, what, rc) : 0;
}

/* Buffers, host chunks and AXPY inputs, where the DAG uses them. */
static int make_memory(bench_cua *g, char *err, size_t len) {
  const bench_dag *d = g->dag;
  cua_runtime *rt = g->rt;
  int has_axpy = 0, has_copy = 0, rc = 0;
  cua_op *op;

  for (size_t k = 0; k < d->n; k++) {
    has_axpy |= d->task[k].kind == BENCH_AXPY;
    has_copy |= d->task[k].kind == BENCH_H2D || d->task[k].kind == BENCH_D2H;
  }
  if (d->nbuf == 0)
    return 0;
  g->bufs = calloc(d->nbuf, sizeof *g->bufs);
  g->hin = calloc(d->nbuf, sizeof *g->hin);
  g->hout = calloc(d->nbuf, sizeof *g->hout);
  g->x = calloc((size_t)g->ndev, sizeof *g->x);
  int *dev = calloc(d->nbuf, sizeof *dev);
  if (g->bufs == NULL || g->hin == NULL || g->hout == NULL || g->x == NULL ||
      dev == NULL) {
    free(dev);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = d->n; k-- > 0;)
    if (d->task[k].buf >= 0)
      dev[d->task[k].buf] = d->task[k].device % g->ndev;
  for (size_t b = 0; b < d->nbuf; b++) {
    if ((rc = cua_buffer_create(&g->bufs[b], rt, dev[b], d->bytes, 0))) {
      free(dev);
      return fail(err, len, rt, "cua_buffer_create", rc);
    }
    if ((rc = cua_op_fill(&op, g->bufs[b], 0.0f)))
      break;
    if (run_now(rt, op, "fill", err, len)) {
      free(dev);
      return -1;
    }
    if (has_copy && ((rc = cua_host_alloc(rt, d->bytes, &g->hin[b])) ||
                     (rc = cua_host_alloc(rt, d->bytes, &g->hout[b]))))
      break;
    if (has_copy)
      memset(g->hin[b], 0, d->bytes);
  }
  free(dev);
  if (rc)
    return fail(err, len, rt, "buffers", rc);
  for (int i = 0; has_axpy && i < g->ndev; i++) {
    if ((rc = cua_buffer_create(&g->x[i], rt, i, d->bytes, 0)) ||
        (rc = cua_op_fill(&op, g->x[i], 1.0f)))
      return fail(err, len, rt, "AXPY input", rc);
    if (run_now(rt, op, "fill", err, len))
      return -1;
    /* Read-only: every AXPY may read it at once, no hazard between them. */
    if ((rc = cua_buffer_share(g->x[i])))
      return fail(err, len, rt, "cua_buffer_share", rc);
  }
  return 0;
}

static int task_op(bench_cua *g, const bench_task *t, cua_op **op) {
  const bench_dag *d = g->dag;
  switch (t->kind) {
  case BENCH_SPIN:
    return cua_op_spin(op, g->rt, bench_task_ns(d, t), d->blocks);
  case BENCH_AXPY:
    return cua_op_axpy(op, g->bufs[t->buf], 0.5f, g->x[t->device % g->ndev]);
  case BENCH_H2D:
    return cua_op_memcpy_h2d(op, g->bufs[t->buf], 0, g->hin[t->buf], d->bytes);
  default:
    return cua_op_memcpy_d2h(op, g->hout[t->buf], g->bufs[t->buf], 0, d->bytes);
  }
}

static int build(bench_cua *g, char *err, size_t len) {
  const bench_dag *d = g->dag;
  size_t n = d->n;
  cua_op **ops = calloc(n, sizeof *ops), **tops = calloc(n, sizeof *tops);
  uint32_t *nsucc = calloc(n, sizeof *nsucc);
  int rc = 0;
  const char *what = "";

  if (ops == NULL || tops == NULL || nsucc == NULL) {
    free(ops);
    free(tops);
    free(nsucc);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < n; k++)
    for (int p = 0; p < d->task[k].npred; p++)
      nsucc[d->task[k].pred[p]]++;
  /* Every op first, with its hints, before anything references (and so
   * freezes) it. */
  for (size_t k = 0; k < n && rc == 0; k++) {
    const bench_task *t = &d->task[k];
    what = "op constructor";
    if ((rc = task_op(g, t, &ops[k])))
      break;
    /* cua_op_spin() already hints its duration as cost_ns; the multigpu
     * pattern adds each op's device; with --skew, spins are named by their
     * length (as two kernels would be), and with --hints off every spin
     * hints the same 1 ns, so only measurements tell them apart. */
    if (d->device_hints ||
        (t->kind == BENCH_SPIN && (d->skewed || d->no_hints))) {
      cua_hints h = CUA_HINTS_INIT;
      h.cost_ns =
          t->kind == BENCH_SPIN ? (d->no_hints ? 1 : bench_task_ns(d, t)) : 0;
      h.device = d->device_hints ? t->device % g->ndev : -1;
      if (t->kind == BENCH_SPIN && d->skewed)
        h.name = t->scale > 1 ? "long" : "short";
      what = "cua_op_set_hints";
      rc = cua_op_set_hints(ops[k], &h);
    }
  }
  int whole = g->mode == BENCH_SUBMIT_WHOLE || g->mode == BENCH_SUBMIT_GRAPH ||
              g->mode == BENCH_SUBMIT_AUTO;
  for (size_t k = 0; k < n && rc == 0 && whole; k++) {
    const bench_task *t = &d->task[k];
    cua_op *deps[BENCH_MAX_PRED], *zip = NULL;
    if (t->npred == 0) {
      tops[k] = cua_op_retain(ops[k]);
      continue;
    }
    if (t->npred == 1 && nsucc[t->pred[0]] == 1) {
      what = "cua_op_then";
      rc = cua_op_then(&tops[k], ops[t->pred[0]], ops[k]);
      continue;
    }
    for (int p = 0; p < t->npred; p++)
      deps[p] = ops[t->pred[p]];
    what = "cua_op_zip";
    if ((rc = cua_op_zip(&zip, deps, t->npred)) == 0) {
      what = "cua_op_then";
      rc = cua_op_then(&tops[k], zip, ops[k]);
      cua_op_destroy(zip);
    }
  }
  if (rc == 0 && !whole) {
    /* The tasks' ops are kept; run() wraps them for each run. */
    for (size_t k = 0; k < n; k++)
      cua_op_destroy(tops[k]);
    free(tops);
    g->ops = ops;
    g->nsucc = nsucc;
    return 0;
  }
  if (rc == 0) {
    what = "cua_op_zip (root)";
    rc = cua_op_zip(&g->root, tops, n);
  }
  /* Graph mode keeps the tasks' ops: they name them in the graph
   * (bench_cua_placed_plan()). */
  int keep = rc == 0 && g->mode == BENCH_SUBMIT_GRAPH;
  for (size_t k = 0; k < n; k++) {
    if (!keep)
      cua_op_destroy(ops[k]);
    cua_op_destroy(tops[k]);
  }
  if (keep)
    g->ops = ops;
  else
    free(ops);
  free(tops);
  free(nsucc);
  return rc ? fail(err, len, g->rt, what, rc) : 0;
}

/* Levels (longest path from a root, in tasks) and the tasks in level
 * order, task order within a level. */
static int make_levels(bench_cua *g, char *err, size_t len) {
  const bench_dag *d = g->dag;
  size_t n = d->n, *lv = calloc(n ? n : 1, sizeof *lv);
  g->order = calloc(n ? n : 1, sizeof *g->order);
  if (lv == NULL || g->order == NULL) {
    free(lv);
    snprintf(err, len, "out of memory");
    return -1;
  }
  g->nlevels = 0;
  for (size_t k = 0; k < n; k++) {
    for (int p = 0; p < d->task[k].npred; p++)
      if (lv[d->task[k].pred[p]] + 1 > lv[k])
        lv[k] = lv[d->task[k].pred[p]] + 1;
    if (lv[k] + 1 > g->nlevels)
      g->nlevels = lv[k] + 1;
  }
  g->level_off = calloc(g->nlevels + 1, sizeof *g->level_off);
  if (g->level_off == NULL) {
    free(lv);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < n; k++)
    g->level_off[lv[k] + 1]++;
  for (size_t l = 0; l < g->nlevels; l++)
    g->level_off[l + 1] += g->level_off[l];
  size_t *fill = calloc(g->nlevels, sizeof *fill);
  if (fill == NULL) {
    free(lv);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < n; k++)
    g->order[g->level_off[lv[k]] + fill[lv[k]]++] = k;
  free(fill);
  free(lv);
  return 0;
}

int bench_cua_open(bench_cua **out, cua_runtime *rt, const bench_dag *d,
                   int mode, uint64_t *build_ns, char *err, size_t len) {
  bench_cua *g = calloc(1, sizeof *g);
  *out = NULL;
  if (g == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  g->rt = rt;
  g->dag = d;
  g->mode = mode;
  g->ndev = cua_device_count(rt);
  if (g->ndev < 1) {
    free(g);
    snprintf(err, len, "the runtime has no device");
    return -1;
  }
  if (make_memory(g, err, len) != 0) {
    bench_cua_close(g);
    return -1;
  }
  if (mode == BENCH_SUBMIT_TASK || mode == BENCH_SUBMIT_LEVEL) {
    g->futs = calloc(d->n ? d->n : 1, sizeof *g->futs);
    if (g->futs == NULL || make_levels(g, err, len) != 0) {
      if (g->futs == NULL)
        snprintf(err, len, "out of memory");
      bench_cua_close(g);
      return -1;
    }
  }
  uint64_t t0 = bench_now_ns();
  if (build(g, err, len) != 0) {
    bench_cua_close(g);
    return -1;
  }
  if (mode == BENCH_SUBMIT_GRAPH) {
    /* The fastest of BENCH_CAPTURES captures, as raw-graph's; the last
     * one is kept. */
    uint64_t ct[BENCH_CAPTURES], bt[BENCH_CAPTURES];
    int rc = 0;
    for (int i = 0; i < BENCH_CAPTURES && rc == 0; i++) {
      if (i > 0) {
        cua_graph_destroy(g->graph);
        g->graph = NULL;
      }
      uint64_t c0 = bench_now_ns();
      rc = cua_graph_create(&g->graph, rt, g->root, NULL);
      ct[i] = bench_now_ns() - c0;
      cua_graph_info gi;
      memset(&gi, 0, sizeof gi);
      gi.size = sizeof gi;
      bt[i] =
          rc == 0 && cua_graph_get_info(g->graph, &gi) == 0 ? gi.capture_ns : 0;
    }
    g->create_ns = rc == 0 ? bench_min_u64(ct, BENCH_CAPTURES) : 0;
    g->capture_ns = rc == 0 ? bench_min_u64(bt, BENCH_CAPTURES) : 0;
    if (rc != 0) {
      fail(err, len, rt, "cua_graph_create", rc);
      bench_cua_close(g);
      return -1;
    }
  }
  g->build_ns = bench_now_ns() - t0;
  *build_ns = g->build_ns;
  if (mode == BENCH_SUBMIT_AUTO) {
    /* The first submission, which the graph cache remembers: the warm-up
     * run is the second, which captures. */
    int rc = cua_submit_wait(rt, g->root, NULL, NULL);
    if (rc != 0) {
      fail(err, len, rt, "cua_submit (first)", rc);
      bench_cua_close(g);
      return -1;
    }
  }
  *out = g;
  return 0;
}

uint64_t bench_cua_create_ns(const bench_cua *g) {
  return g->create_ns;
}

int bench_cua_recreate(bench_cua *g, uint64_t *ns, cua_graph_info *info,
                       char *err, size_t len) {
  *ns = 0;
  if (g->graph == NULL) {
    snprintf(err, len, "recreate: not in graph mode");
    return -1;
  }
  cua_graph_destroy(g->graph);
  g->graph = NULL;
  uint64_t t0 = bench_now_ns();
  int rc = cua_graph_create(&g->graph, g->rt, g->root, NULL);
  *ns = bench_now_ns() - t0;
  if (rc != 0)
    return fail(err, len, g->rt, "cua_graph_create", rc);
  if (info != NULL && (rc = cua_graph_get_info(g->graph, info)) != 0)
    return fail(err, len, g->rt, "cua_graph_get_info", rc);
  return 0;
}

int bench_cua_placed_plan(const bench_cua *g, bench_plan *plan, char *err,
                          size_t len) {
  const bench_dag *d = g->dag;
  memset(plan, 0, sizeof *plan);
  if (g->graph == NULL || g->ops == NULL) {
    snprintf(err, len, "placed plan: not in graph mode");
    return -1;
  }
  cua_placement *pl = calloc(d->n ? d->n : 1, sizeof *pl);
  int32_t *given = calloc(d->n ? d->n : 1, sizeof *given);
  if (pl == NULL || given == NULL) {
    free(pl);
    free(given);
    snprintf(err, len, "out of memory");
    return -1;
  }
  int per = 1, ndev = 1, rc = 0;
  for (size_t k = 0; k < d->n && rc == 0; k++) {
    if ((rc = cua_graph_placement(g->graph, g->ops[k], &pl[k])) != 0)
      break;
    if (pl[k].stream + 1 > per)
      per = pl[k].stream + 1;
    if (pl[k].device + 1 > ndev)
      ndev = pl[k].device + 1;
  }
  for (size_t k = 0; k < d->n && rc == 0; k++)
    given[k] = (int32_t)(pl[k].device * per + pl[k].stream);
  if (rc != 0)
    fail(err, len, g->rt, "cua_graph_placement", rc);
  else
    rc = bench_plan_placed(plan, d, per, ndev, given, err, len);
  free(pl);
  free(given);
  return rc != 0 ? -1 : 0;
}

uint64_t bench_cua_capture_ns(const bench_cua *g) {
  return g->capture_ns;
}

uint64_t bench_cua_submit_ns(const bench_cua *g) {
  return g->submit_ns;
}

uint64_t bench_cua_build_ns(const bench_cua *g) {
  return g->build_ns + (g->wrap_runs ? g->wrap_ns / g->wrap_runs : 0);
}

/* Task k's submission: then(zip(shared predecessors), shared k), or
 * then(shared predecessor, shared k) for a link of a plain chain, as
 * build() makes them. */
static int wrap_task(bench_cua *g, cua_op **sh, size_t k, cua_op **top,
                     const char **what) {
  const bench_task *t = &g->dag->task[k];
  cua_op *deps[BENCH_MAX_PRED], *zip = NULL;
  int rc;
  if (t->npred == 0) {
    *top = cua_op_retain(sh[k]);
    return 0;
  }
  *what = "cua_op_then";
  if (t->npred == 1 && g->nsucc[t->pred[0]] == 1)
    return cua_op_then(top, sh[t->pred[0]], sh[k]);
  for (int p = 0; p < t->npred; p++)
    deps[p] = sh[t->pred[p]];
  *what = "cua_op_zip";
  if ((rc = cua_op_zip(&zip, deps, t->npred)) != 0)
    return rc;
  *what = "cua_op_then";
  rc = cua_op_then(top, zip, sh[k]);
  cua_op_destroy(zip);
  return rc;
}

/* Frees what make_subs() made. */
static void free_subs(cua_op **sh, cua_op **sub, size_t n, size_t nsub) {
  for (size_t k = 0; sh != NULL && k < n; k++)
    cua_op_destroy(sh[k]);
  for (size_t i = 0; sub != NULL && i < nsub; i++)
    cua_op_destroy(sub[i]);
  free(sh);
  free(sub);
}

/* The submissions of one run (task or level mode): *nsub ops in *subs. */
static int make_subs(bench_cua *g, cua_op ***subs, size_t *nsub, char *err,
                     size_t len) {
  const bench_dag *d = g->dag;
  size_t n = d->n, ns = g->mode == BENCH_SUBMIT_TASK ? n : g->nlevels;
  cua_op **sh = calloc(n ? n : 1, sizeof *sh);
  cua_op **sub = calloc(ns ? ns : 1, sizeof *sub);
  cua_op **top = NULL;
  const char *what = "cua_op_shared";
  int rc = 0;

  *subs = NULL;
  *nsub = 0;
  if (sh == NULL || sub == NULL) {
    free(sh);
    free(sub);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < n && rc == 0; k++)
    rc = cua_op_shared(&sh[k], g->ops[k]);
  if (rc == 0 && g->mode == BENCH_SUBMIT_TASK) {
    for (size_t k = 0; k < n && rc == 0; k++)
      rc = wrap_task(g, sh, k, &sub[k], &what);
  } else if (rc == 0) {
    top = calloc(n ? n : 1, sizeof *top);
    if (top == NULL) {
      free_subs(sh, sub, n, ns);
      snprintf(err, len, "out of memory");
      return -1;
    }
    for (size_t k = 0; k < n && rc == 0; k++)
      rc = wrap_task(g, sh, k, &top[k], &what);
    for (size_t l = 0; l < ns && rc == 0; l++) {
      cua_op *lv[64];
      size_t a = g->level_off[l], b = g->level_off[l + 1];
      cua_op **v = b - a <= 64 ? lv : malloc((b - a) * sizeof *v);
      if (v == NULL) {
        rc = CUA_ERR_NOMEM;
        break;
      }
      for (size_t i = a; i < b; i++)
        v[i - a] = top[g->order[i]];
      what = "cua_op_zip (level)";
      rc = b - a == 1 ? (sub[l] = cua_op_retain(v[0]), 0)
                      : cua_op_zip(&sub[l], v, b - a);
      if (v != lv)
        free(v);
    }
    for (size_t k = 0; k < n; k++)
      cua_op_destroy(top[k]);
    free(top);
  }
  if (rc) {
    free_subs(sh, sub, n, ns);
    return fail(err, len, g->rt, what, rc);
  }
  /* The submissions hold what they need. */
  for (size_t k = 0; k < n; k++)
    cua_op_destroy(sh[k]);
  free(sh);
  *subs = sub;
  *nsub = ns;
  return 0;
}

/* One run in task or level mode: submit each, then wait for each. */
static int run_split(bench_cua *g, uint64_t *ns, char *err, size_t len) {
  cua_op **sub = NULL;
  size_t nsub = 0, made = 0;
  int rc = 0, failed = 0;

  uint64_t w0 = bench_now_ns();
  if (make_subs(g, &sub, &nsub, err, len) != 0)
    return -1;
  g->wrap_ns += bench_now_ns() - w0;
  g->wrap_runs++;
  cua_runtime_synchronize(g->rt);
  /* The runtime's clock: CLOCK_MONOTONIC, or virtual time on sim. */
  uint64_t t0 = cua_runtime_now_ns(g->rt), s0 = bench_now_ns();
  for (; made < nsub; made++)
    if ((rc = cua_submit(&g->futs[made], g->rt, sub[made], NULL)) != 0)
      break;
  g->submit_ns = bench_now_ns() - s0;
  for (size_t i = 0; i < made; i++) {
    int w = cua_future_wait(g->futs[i]);
    if (w != 0 && !failed && rc == 0) {
      snprintf(err, len, "run failed: submission %zu: %s: %s", i,
               cua_err_name(w), cua_future_error(g->futs[i]));
      failed = 1;
    }
  }
  uint64_t t1 = cua_runtime_now_ns(g->rt);
  if (rc != 0)
    fail(err, len, g->rt, "cua_submit", rc);
  for (size_t i = 0; i < made; i++) {
    cua_future_destroy(g->futs[i]);
    g->futs[i] = NULL;
  }
  free_subs(NULL, sub, 0, nsub);
  *ns = t1 - t0;
  return rc != 0 || failed ? -1 : 0;
}

static void stats_delta(const cua_stats *a, const cua_stats *b,
                        cua_stats *out) {
  out->submissions = b->submissions - a->submissions;
  out->ops = b->ops - a->ops;
  out->ops_failed = b->ops_failed - a->ops_failed;
  out->events_recorded = b->events_recorded - a->events_recorded;
  out->event_waits = b->event_waits - a->event_waits;
  out->peer_waits = b->peer_waits - a->peer_waits;
  out->events_created = b->events_created - a->events_created;
  out->streams = b->streams - a->streams;
  out->host_steps = b->host_steps - a->host_steps;
}

int bench_cua_run(bench_cua *g, uint64_t *ns, cua_stats *delta, char *err,
                  size_t len) {
  cua_stats s0, s1;
  cua_future *fut = NULL;
  int rc;

  memset(&s0, 0, sizeof s0);
  memset(&s1, 0, sizeof s1);
  s0.size = s1.size = sizeof s0;
  /* Idle before the clock starts: nothing of an earlier run overlaps. */
  cua_runtime_synchronize(g->rt);
  cua_runtime_stats(g->rt, &s0);
  if (g->mode == BENCH_SUBMIT_TASK || g->mode == BENCH_SUBMIT_LEVEL) {
    if (run_split(g, ns, err, len) != 0)
      return -1;
  } else {
    uint64_t t0 = cua_runtime_now_ns(g->rt), h0 = bench_now_ns();
    if (g->graph != NULL)
      rc = cua_graph_launch(&fut, g->graph);
    else
      rc = cua_submit(&fut, g->rt, g->root, NULL);
    g->submit_ns = bench_now_ns() - h0;
    if (rc)
      return fail(err, len, g->rt,
                  g->graph != NULL ? "cua_graph_launch" : "cua_submit", rc);
    rc = cua_future_wait(fut);
    uint64_t t1 = cua_runtime_now_ns(g->rt);
    if (rc) {
      snprintf(err, len, "run failed: %s: %s", cua_err_name(rc),
               cua_future_error(fut));
      cua_future_destroy(fut);
      return -1;
    }
    cua_future_destroy(fut);
    *ns = t1 - t0;
  }
  cua_runtime_stats(g->rt, &s1);
  if (delta != NULL) {
    memset(delta, 0, sizeof *delta);
    delta->size = sizeof *delta;
    stats_delta(&s0, &s1, delta);
  }
  return 0;
}

int bench_cua_latency(cua_runtime *rt, size_t iters, size_t warmup,
                      uint64_t *samples, uint64_t *submit, char *err,
                      size_t len) {
  cua_op *op = NULL;
  int rc = cua_op_spin(&op, rt, 0, 1);
  if (rc)
    return fail(err, len, rt, "cua_op_spin", rc);
  cua_runtime_synchronize(rt);
  for (size_t i = 0; i < warmup + iters; i++) {
    cua_future *fut = NULL;
    uint64_t t0 = bench_now_ns();
    rc = cua_submit(&fut, rt, op, NULL);
    uint64_t ts = bench_now_ns();
    if (rc) {
      cua_op_destroy(op);
      return fail(err, len, rt, "cua_submit", rc);
    }
    rc = cua_future_wait(fut);
    uint64_t t1 = bench_now_ns();
    if (rc) {
      snprintf(err, len, "latency op failed: %s: %s", cua_err_name(rc),
               cua_future_error(fut));
      cua_future_destroy(fut);
      cua_op_destroy(op);
      return -1;
    }
    cua_future_destroy(fut);
    if (i >= warmup) {
      samples[i - warmup] = t1 - t0;
      if (submit != NULL)
        submit[i - warmup] = ts - t0;
    }
  }
  cua_op_destroy(op);
  return 0;
}

/* ------------------------------------------------------------- submit */

typedef struct submit_ctx {
  cua_runtime *rt;
  cua_op *op;
  cua_future **futs; /* this thread's share */
  size_t n;
  pthread_mutex_t *mu;
  pthread_cond_t *cv;
  int *gate; /* 0: wait, 1: go, 2: give up */
  int rc;
  char err[256];
} submit_ctx;

/* Submits the op n times, then waits for every future in order. */
static void submit_all(submit_ctx *c) {
  size_t made = 0;
  c->rc = 0;
  for (; made < c->n; made++)
    if ((c->rc = cua_submit(&c->futs[made], c->rt, c->op, NULL)) != 0) {
      fail(c->err, sizeof c->err, c->rt, "cua_submit", c->rc);
      break;
    }
  for (size_t i = 0; i < made; i++) {
    int w = cua_future_wait(c->futs[i]);
    if (w != 0 && c->rc == 0) {
      c->rc = w;
      snprintf(c->err, sizeof c->err, "submission %zu failed: %s: %s", i,
               cua_err_name(w), cua_future_error(c->futs[i]));
    }
  }
  for (size_t i = 0; i < made; i++) {
    cua_future_destroy(c->futs[i]);
    c->futs[i] = NULL;
  }
}

static void *submit_thread(void *arg) {
  submit_ctx *c = arg;
  pthread_mutex_lock(c->mu);
  while (*c->gate == 0)
    pthread_cond_wait(c->cv, c->mu);
  int go = *c->gate == 1;
  pthread_mutex_unlock(c->mu);
  if (go)
    submit_all(c);
  return NULL;
}

static void open_gate(pthread_mutex_t *mu, pthread_cond_t *cv, int *gate,
                      int v) {
  pthread_mutex_lock(mu);
  *gate = v;
  pthread_cond_broadcast(cv);
  pthread_mutex_unlock(mu);
}

int bench_cua_submit(cua_runtime *rt, int nthreads, size_t n, uint64_t *ns,
                     char *err, size_t len) {
  cua_op *op = NULL;
  submit_ctx ctx[64];
  pthread_t th[64];
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  int gate = 0, started = 0, rc;

  if (nthreads < 1)
    nthreads = 1;
  if (nthreads > 64)
    nthreads = 64;
  cua_future **futs = calloc(n ? n : 1, sizeof *futs);
  if (futs == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  if ((rc = cua_op_spin(&op, rt, 0, 1)) != 0) {
    free(futs);
    return fail(err, len, rt, "cua_op_spin", rc);
  }
  /* Every stream of the policy has run something before the clock starts
   * (streams are created on first use). */
  for (int i = 0; i < 64 && rc == 0; i++)
    rc = cua_submit_wait(rt, op, NULL, NULL);
  cua_runtime_synchronize(rt);
  if (rc) {
    cua_op_destroy(op);
    free(futs);
    return fail(err, len, rt, "warm-up", rc);
  }
  size_t at = 0;
  for (int t = 0; t < nthreads; t++) {
    size_t share = n / (size_t)nthreads + ((size_t)t < n % (size_t)nthreads);
    ctx[t] = (submit_ctx){rt, op, futs + at, share, &mu, &cv, &gate, 0, ""};
    at += share;
  }
  for (int t = 0; nthreads > 1 && t < nthreads; t++) {
    int e = pthread_create(&th[t], NULL, submit_thread, &ctx[t]);
    if (e != 0) {
      snprintf(err, len, "pthread_create: %s", strerror(e));
      open_gate(&mu, &cv, &gate, 2);
      for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
      cua_op_destroy(op);
      free(futs);
      return -1;
    }
    started++;
  }
  uint64_t t0 = bench_now_ns();
  if (nthreads > 1)
    open_gate(&mu, &cv, &gate, 1);
  else
    submit_all(&ctx[0]);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  *ns = bench_now_ns() - t0;
  rc = 0;
  for (int t = 0; t < nthreads && rc == 0; t++)
    if (ctx[t].rc != 0) {
      snprintf(err, len, "%s", ctx[t].err);
      rc = -1;
    }
  cua_op_destroy(op);
  free(futs);
  return rc;
}
