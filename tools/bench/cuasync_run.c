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
 */
#include "config.h"

#include "cuasync_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_cua {
  cua_runtime *rt;
  const bench_dag *dag;
  cua_op *root;
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
  cua_op_destroy(g->root);
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
    return cua_op_spin(op, g->rt, d->ns, d->blocks);
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
     * pattern adds each op's device. */
    if (d->ndevices > 1) {
      cua_hints h = CUA_HINTS_INIT;
      h.cost_ns = t->kind == BENCH_SPIN ? d->ns : 0;
      h.device = t->device % g->ndev;
      what = "cua_op_set_hints";
      rc = cua_op_set_hints(ops[k], &h);
    }
  }
  for (size_t k = 0; k < n && rc == 0; k++) {
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
  if (rc == 0) {
    what = "cua_op_zip (root)";
    rc = cua_op_zip(&g->root, tops, n);
  }
  for (size_t k = 0; k < n; k++) {
    cua_op_destroy(ops[k]);
    cua_op_destroy(tops[k]);
  }
  free(ops);
  free(tops);
  free(nsucc);
  return rc ? fail(err, len, g->rt, what, rc) : 0;
}

int bench_cua_open(bench_cua **out, cua_runtime *rt, const bench_dag *d,
                   uint64_t *build_ns, char *err, size_t len) {
  bench_cua *g = calloc(1, sizeof *g);
  *out = NULL;
  if (g == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  g->rt = rt;
  g->dag = d;
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
  uint64_t t0 = bench_now_ns();
  if (build(g, err, len) != 0) {
    bench_cua_close(g);
    return -1;
  }
  *build_ns = bench_now_ns() - t0;
  *out = g;
  return 0;
}

static void stats_delta(const cua_stats *a, const cua_stats *b,
                        cua_stats *out) {
  out->submissions = b->submissions - a->submissions;
  out->ops = b->ops - a->ops;
  out->ops_failed = b->ops_failed - a->ops_failed;
  out->events_recorded = b->events_recorded - a->events_recorded;
  out->event_waits = b->event_waits - a->event_waits;
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
  uint64_t t0 = bench_now_ns();
  rc = cua_submit(&fut, g->rt, g->root, NULL);
  if (rc)
    return fail(err, len, g->rt, "cua_submit", rc);
  rc = cua_future_wait(fut);
  uint64_t t1 = bench_now_ns();
  if (rc) {
    snprintf(err, len, "run failed: %s: %s", cua_err_name(rc),
             cua_future_error(fut));
    cua_future_destroy(fut);
    return -1;
  }
  cua_future_destroy(fut);
  cua_runtime_stats(g->rt, &s1);
  *ns = t1 - t0;
  if (delta != NULL) {
    memset(delta, 0, sizeof *delta);
    delta->size = sizeof *delta;
    stats_delta(&s0, &s1, delta);
  }
  return 0;
}

int bench_cua_latency(cua_runtime *rt, size_t iters, size_t warmup,
                      uint64_t *samples, char *err, size_t len) {
  cua_op *op = NULL;
  int rc = cua_op_spin(&op, rt, 0, 1);
  if (rc)
    return fail(err, len, rt, "cua_op_spin", rc);
  cua_runtime_synchronize(rt);
  for (size_t i = 0; i < warmup + iters; i++) {
    cua_future *fut = NULL;
    uint64_t t0 = bench_now_ns();
    rc = cua_submit(&fut, rt, op, NULL);
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
    if (i >= warmup)
      samples[i - warmup] = t1 - t0;
  }
  cua_op_destroy(op);
  return 0;
}
