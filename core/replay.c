/*
 * core/replay.c: a captured graph's launches, updates and end.
 *
 * cua_graph_launch() submits one op of kind GRAPH on the graph's anchor
 * stream (chain 0's placement), which reads and writes the union of the
 * graph's buffer accesses: the ordinary submission path orders it against
 * everything else (hazards, exact waits, marks, futures), and launches of
 * one graph follow each other on the anchor. When the executor applies
 * that op, cua__graph_replay() runs: on a backend with graphs, one launch
 * of the backend graph (captured again first when an update changed the
 * parameters); otherwise the schedule itself, forked from the anchor onto
 * the graph's streams and joined back (cua__graph_enqueue(), which is also
 * what a capture records).
 *
 * An update makes a new version of the parameters (copied on write, or
 * changed in place when no launch holds them), so every launch runs the
 * parameters it was made with.
 *
 * A capture is the same pass over the schedule (genq_*), begun and ended
 * by the backend on the runtime's capture streams; a fed capture
 * (cua__graph_capture_fed(), capture.c's large DAGs) gets the ops one by
 * one while they are placed.
 *
 * Owns: graph launches, updates, captures, the parameters' versions,
 * freeing graphs.
 * Locks: g->mu (leaf) for cur and launch_op; the backend graph only under
 * the anchor stream's turn (executor.c); rt->capture_mu for the capture
 * streams and events and every capture; rt->reg_lock for the registry.
 * No core lock is held while the backend is called, except where a graph
 * is freed by its last launch's node, under rt->lock (backend objects are
 * then destroyed under it, as streams are created under it).
 */
#include "config.h"
#include "graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- enqueue */

static const char *op_name(const cua_op *op) {
  return op->hints.name ? op->hints.name : cua_op_kind_name(op->kind);
}

/* One pass over a graph's schedule, op by op: a replay by the core, or a
 * capture (which a pipelined creation feeds while it places, capture.c). */
typedef struct genq {
  cua_runtime *rt;
  cua_graph *g;
  cua_backend_stream *anchor;
  cua_backend_event *fork; /* recorded on the anchor first */
  int deps;                /* dependencies by capture_deps(), not events */
  long *last;              /* deps: per chain, its last op so far, or -1 */
  unsigned char *forked;   /* per chain: it waited for the fork */
  size_t *buf;             /* deps: one op's dependencies */
  size_t bufcap;
  void *params[64], *ptrs[64];
} genq;

static void genq_free(genq *q) {
  free(q->last);
  free(q->forked);
  free(q->buf);
}

/* Starts a pass over @p g's chains (at most @p maxchains of them): records
 * the fork on @p anchor. */
static int genq_init(genq *q, cua_runtime *rt, cua_graph *g,
                     cua_backend_stream *anchor, cua_backend_event *fork,
                     int deps, size_t maxchains, char *msg, size_t len) {
  memset(q, 0, sizeof *q);
  q->rt = rt;
  q->g = g;
  q->anchor = anchor;
  q->fork = fork;
  q->deps = deps;
  q->last = cua__malloc((maxchains + 1) * sizeof *q->last);
  q->forked = cua__calloc(maxchains + 1, 1);
  if (q->last == NULL || q->forked == NULL) {
    genq_free(q);
    snprintf(msg, len, "out of host memory");
    return CUA_ERR_NOMEM;
  }
  for (size_t ch = 0; ch <= maxchains; ch++)
    q->last[ch] = -1;
  int rc = rt->be->event_record(rt->bst, fork, anchor);
  if (rc != 0) {
    genq_free(q);
    snprintf(msg, len, "forking the graph's streams: %s", cua_strerror(rc));
  }
  return rc;
}

/* The stream of chain @p ch, made to wait for the fork the first time. */
static int genq_stream(genq *q, size_t ch, cua_backend_stream **out, char *msg,
                       size_t len) {
  cua_graph *g = q->g;
  cua_backend_stream *s =
      ch == 0 && g->chains[0].bs == q->anchor ? q->anchor : g->chains[ch].bs;
  *out = s;
  if (q->forked[ch])
    return 0;
  q->forked[ch] = 1;
  int rc =
      s == q->anchor ? 0 : q->rt->be->stream_wait_event(q->rt->bst, s, q->fork);
  if (rc != 0)
    snprintf(msg, len, "forking the graph's streams: %s", cua_strerror(rc));
  return rc;
}

/* Makes op @p k depend on exactly its dependencies in the graph with
 * explicit ones: its waits, and its chain's previous op where nothing else
 * orders it after that one. Nothing is called when that is where the
 * stream already is: after its last op, or (the chain's first op, with no
 * wait) after nothing, as the fork leaves it. */
static int set_deps(genq *q, cua_backend_stream *s, size_t k,
                    cua_backend_err *err) {
  const cua__gop *o = &q->g->ops[k];
  long last = q->last[o->chain];
  q->last[o->chain] = (long)k;
  if (o->nwaits == 0 && (last < 0 || o->after_prev))
    return 0;
  if (cua__grow(&q->buf, &q->bufcap, o->nwaits + 1, sizeof *q->buf) != 0)
    return CUA_ERR_NOMEM;
  size_t n = 0;
  if (o->after_prev && last >= 0)
    q->buf[n++] = (size_t)last;
  for (size_t w = 0; w < o->nwaits; w++)
    q->buf[n++] = o->waits[w];
  return q->rt->be->capture_deps(q->rt->bst, s, q->buf, n, err);
}

/* Enqueues op @p k of the schedule with the parameters of @p op. */
static int genq_op(genq *q, size_t k, const cua_op *op, char *msg, size_t len) {
  const cua_backend_descriptor *be = q->rt->be;
  void *bst = q->rt->bst;
  cua_graph *g = q->g;
  const cua__gop *o = &g->ops[k];
  cua_backend_stream *s;
  int rc = genq_stream(q, o->chain, &s, msg, len);
  if (rc != 0)
    return rc;
  cua_backend_err err = {{0}};
  if (q->deps)
    rc = set_deps(q, s, k, &err);
  for (size_t w = 0; !q->deps && w < o->nwaits && rc == 0; w++)
    rc = be->stream_wait_event(bst, s, g->events[g->ops[o->waits[w]].event]);
  if (rc != 0) {
    snprintf(msg, len, "making op '%s' wait: %s", op_name(op),
             err.msg[0] ? err.msg : cua_strerror(rc));
    return rc;
  }
  cua_backend_op bo;
  rc = cua__backend_op(op, ++g->chains[o->chain].seq, &bo, q->params, q->ptrs,
                       op_name(op), msg, len);
  if (rc != 0)
    return rc;
  rc = be->launch(bst, s, &bo, &err);
  if (rc != 0) {
    snprintf(msg, len, "launching op '%s' of the graph: %s", op_name(op),
             err.msg[0] ? err.msg : cua_strerror(rc));
    return rc;
  }
  if (!q->deps && o->event >= 0 &&
      (rc = be->event_record(bst, g->events[o->event], s)))
    snprintf(msg, len, "recording an event after op '%s': %s", op_name(op),
             cua_strerror(rc));
  return rc;
}

/* Joins chains [0, @p nchains) back into the anchor, chain ch through
 * @p ends[ch]. */
static int genq_join(genq *q, size_t nchains, cua_backend_event *const *ends,
                     char *msg, size_t len) {
  const cua_backend_descriptor *be = q->rt->be;
  int rc = 0;
  for (size_t ch = 0; ch < nchains && rc == 0; ch++) {
    cua_backend_stream *s = q->g->chains[ch].bs;
    if (s == q->anchor || !q->forked[ch])
      continue;
    rc = be->event_record(q->rt->bst, ends[ch], s);
    if (rc == 0)
      rc = be->stream_wait_event(q->rt->bst, q->anchor, ends[ch]);
  }
  if (rc != 0)
    snprintf(msg, len, "joining the graph's streams: %s", cua_strerror(rc));
  return rc;
}

int cua__graph_enqueue(cua_runtime *rt, cua_graph *g, cua__gparams *gp,
                       cua_backend_stream *anchor, int deps, char *msg,
                       size_t len) {
  genq q;
  int rc =
      genq_init(&q, rt, g, anchor, g->events[0], deps, g->nchains, msg, len);
  if (rc != 0)
    return rc;
  cua_backend_stream *s;
  for (size_t ch = 0; ch < g->nchains && rc == 0; ch++)
    rc = genq_stream(&q, ch, &s, msg, len);
  for (size_t k = 0; k < g->nops && rc == 0; k++)
    rc = genq_op(&q, k, gp->ops[k], msg, len);
  cua_backend_event **ends = NULL;
  if (rc == 0) {
    ends = cua__malloc(g->nchains * sizeof *ends);
    if (ends == NULL) {
      snprintf(msg, len, "out of host memory");
      rc = CUA_ERR_NOMEM;
    }
    for (size_t ch = 0; ends != NULL && ch < g->nchains; ch++)
      ends[ch] = g->events[g->chains[ch].end_event];
  }
  if (rc == 0)
    rc = genq_join(&q, g->nchains, ends, msg, len);
  free(ends);
  genq_free(&q);
  return rc;
}

/* Lends chain @p ch of @p g one of the runtime's capture streams: the k-th
 * chain on a device gets that device's k-th. Under rt->capture_mu. */
static int lend_stream(cua_runtime *rt, cua_graph *g, size_t ch, char *msg,
                       size_t len) {
  int dev = g->chains[ch].pl.device;
  size_t nth = 0;
  for (size_t c = 0; c < ch; c++)
    nth += g->chains[c].pl.device == dev;
  cua_backend_stream *bs = NULL;
  for (size_t i = 0; i < rt->ncap && bs == NULL; i++)
    if (rt->cap_dev[i] == dev && nth-- == 0)
      bs = rt->cap_streams[i];
  if (bs == NULL) {
    cua_backend_err err = {{0}};
    if (cua__grow(&rt->cap_streams, &rt->capcap, rt->ncap + 1,
                  sizeof *rt->cap_streams) != 0)
      return CUA_ERR_NOMEM;
    size_t cap = rt->ncap;
    if (cua__grow(&rt->cap_dev, &cap, rt->ncap + 1, sizeof *rt->cap_dev) != 0)
      return CUA_ERR_NOMEM;
    int rc = rt->be->stream_create(rt->bst, dev, &bs, &err);
    if (rc != 0) {
      snprintf(msg, len, "creating a capture stream on device %d: %s", dev,
               err.msg[0] ? err.msg : cua_strerror(rc));
      return rc;
    }
    rt->cap_streams[rt->ncap] = bs;
    rt->cap_dev[rt->ncap] = dev;
    rt->ncap++;
  }
  g->chains[ch].bs = bs;
  return 0;
}

/* Takes back the streams lent to chains [0, @p nchains). */
static void return_streams(cua_graph *g, size_t nchains) {
  for (size_t ch = 0; ch < nchains; ch++)
    g->chains[ch].bs = NULL;
}

/* One of the runtime's capture events on device @p dev (made on first
 * need). Under rt->capture_mu. */
static int lend_event(cua_runtime *rt, int dev, cua_backend_event **out,
                      char *msg, size_t len) {
  *out = NULL;
  if (rt->cap_events == NULL) {
    rt->cap_events = cua__calloc((size_t)rt->ndev, sizeof *rt->cap_events);
    if (rt->cap_events == NULL)
      return CUA_ERR_NOMEM;
  }
  struct cua__evstack *st = &rt->cap_events[dev];
  if (st->n > 0) {
    *out = st->v[--st->n];
    return 0;
  }
  cua_backend_err err = {{0}};
  int rc = rt->be->event_create(rt->bst, dev, out, &err);
  if (rc != 0)
    snprintf(msg, len, "creating an event on device %d: %s", dev,
             err.msg[0] ? err.msg : cua_strerror(rc));
  return rc;
}

/* Takes back an event lend_event() lent (NULL: none). Under
 * rt->capture_mu. */
static void return_event(cua_runtime *rt, int dev, cua_backend_event *ev) {
  if (ev == NULL)
    return;
  struct cua__evstack *st = &rt->cap_events[dev];
  if (cua__grow(&st->v, &st->cap, st->n + 1, sizeof *st->v) != 0)
    rt->be->event_destroy(rt->bst, ev);
  else
    st->v[st->n++] = ev;
}

/* Lends the graph the capture events it uses: with dependencies set by
 * capture_deps(), the fork and the chains' ends only. */
static int lend_events(cua_runtime *rt, cua_graph *g, int deps, char *msg,
                       size_t len) {
  int rc = 0;
  for (size_t e = 0; e < g->nevents && rc == 0; e++)
    if (!deps || e == 0)
      rc = lend_event(rt, g->event_dev[e], &g->events[e], msg, len);
  for (size_t ch = 0; ch < g->nchains && rc == 0 && deps; ch++) {
    long e = g->chains[ch].end_event;
    rc = lend_event(rt, g->event_dev[e], &g->events[e], msg, len);
  }
  return rc;
}

/* Takes back what lend_events() lent. Under rt->capture_mu. */
static void return_events(cua_runtime *rt, cua_graph *g) {
  for (size_t e = 0; e < g->nevents; e++) {
    return_event(rt, g->event_dev[e], g->events[e]);
    g->events[e] = NULL;
  }
}

void cua__capture_streams_free(cua_runtime *rt) {
  for (int d = 0; rt->cap_events != NULL && d < rt->ndev; d++) {
    for (size_t i = 0; i < rt->cap_events[d].n; i++)
      rt->be->event_destroy(rt->bst, rt->cap_events[d].v[i]);
    free(rt->cap_events[d].v);
  }
  free(rt->cap_events);
  rt->cap_events = NULL;
  for (size_t i = 0; i < rt->ncap; i++)
    rt->be->stream_destroy(rt->bst, rt->cap_streams[i]);
  free(rt->cap_streams);
  free(rt->cap_dev);
  rt->cap_streams = NULL;
  rt->cap_dev = NULL;
  rt->ncap = rt->capcap = 0;
}

/* The backend graph of a capture ended on @p s, for @p gp; @p erc and
 * @p emsg: how the enqueue went. */
static int capture_done(cua_runtime *rt, cua_graph *g, cua__gparams *gp,
                        cua_backend_stream *s, int erc, const char *emsg,
                        char *msg, size_t len) {
  const cua_backend_descriptor *be = rt->be;
  cua_backend_err err = {{0}};
  cua_backend_graph *out = NULL;
  int rc = be->capture_end(rt->bst, s, g->bg, &out, &err);
  if (erc != 0) {
    if (rc == 0 && g->bg == NULL && out != NULL)
      be->graph_destroy(rt->bst, out);
    snprintf(msg, len, "capturing: %s", emsg);
    return erc;
  }
  if (rc != 0) {
    snprintf(msg, len, "%s the backend graph: %s",
             g->bg != NULL ? "updating" : "making",
             err.msg[0] ? err.msg : cua_strerror(rc));
    return rc;
  }
  g->bg = out;
  if (gp != NULL) {
    g->bg_version = gp->version;
    atomic_fetch_add(&gp->refs, 1);
    cua__gparams_release(g->bg_params);
    g->bg_params = gp;
  }
  atomic_fetch_add(&g->captures, 1);
  atomic_fetch_add(&rt->n_graph_captures, 1);
  return 0;
}

int cua__graph_capture(cua_runtime *rt, cua_graph *g, cua__gparams *gp,
                       char *msg, size_t len) {
  const cua_backend_descriptor *be = rt->be;
  int deps = cua__backend_has_capture_deps(rt);
  pthread_mutex_lock(&rt->capture_mu);
  int rc = 0;
  for (size_t ch = 0; ch < g->nchains && rc == 0; ch++)
    rc = lend_stream(rt, g, ch, msg, len);
  if (rc == 0)
    rc = lend_events(rt, g, deps, msg, len);
  if (rc == CUA_ERR_NOMEM)
    snprintf(msg, len, "out of host memory");
  cua_backend_stream *s = rc == 0 ? g->chains[0].bs : NULL;
  cua_backend_err err = {{0}};
  if (rc == 0 && (rc = be->capture_begin(rt->bst, s, &err)) != 0)
    snprintf(msg, len, "starting a capture: %s",
             err.msg[0] ? err.msg : cua_strerror(rc));
  if (rc == 0) {
    char emsg[CUA__ERRLEN];
    emsg[0] = '\0';
    int erc = cua__graph_enqueue(rt, g, gp, s, deps, emsg, sizeof emsg);
    rc = capture_done(rt, g, gp, s, erc, emsg, msg, len);
  }
  /* The streams and events go back: nothing of the graph runs on them. */
  return_streams(g, g->nchains);
  if (rt->cap_events != NULL)
    return_events(rt, g);
  pthread_mutex_unlock(&rt->capture_mu);
  return rc;
}

int cua__graph_capture_fed(cua_runtime *rt, cua_graph *g, size_t maxops,
                           cua__gfeed feed, void *arg, char *msg, size_t len) {
  const cua_backend_descriptor *be = rt->be;
  int done = 0;
  size_t ready = feed(arg, 1, &done);
  if (ready == 0)
    return CUA_ERR_CANCELED; /* the placement failed: it says why */
  pthread_mutex_lock(&rt->capture_mu);
  /* The chains known so far are final; chain 0 (the anchor's) is. */
  int rc = lend_stream(rt, g, 0, msg, len);
  int adev = g->chains[0].pl.device;
  cua_backend_event *fork = NULL;
  if (rc == 0)
    rc = lend_event(rt, adev, &fork, msg, len);
  if (rc == CUA_ERR_NOMEM)
    snprintf(msg, len, "out of host memory");
  cua_backend_stream *s = g->chains[0].bs;
  cua_backend_err err = {{0}};
  if (rc == 0 && (rc = be->capture_begin(rt->bst, s, &err)) != 0)
    snprintf(msg, len, "starting a capture: %s",
             err.msg[0] ? err.msg : cua_strerror(rc));
  size_t nchains = 1; /* chains lent a stream so far */
  cua_backend_event **ends = NULL;
  if (rc == 0) {
    char emsg[CUA__ERRLEN];
    emsg[0] = '\0';
    genq q;
    int erc = genq_init(&q, rt, g, s, fork, 1, maxops, emsg, sizeof emsg);
    int began = erc == 0;
    for (size_t k = 0; erc == 0; k++) {
      if (k == ready && done == 0)
        ready = feed(arg, k + 1, &done);
      if (k == ready || done < 0)
        break;
      size_t ch = g->ops[k].chain;
      for (; nchains <= ch && erc == 0; nchains++)
        erc = lend_stream(rt, g, nchains, emsg, sizeof emsg);
      if (erc == 0)
        erc = genq_op(&q, k, g->ops[k].key, emsg, sizeof emsg);
    }
    if (erc == 0 && done < 0) {
      erc = CUA_ERR_CANCELED;
      snprintf(emsg, sizeof emsg, "the placement failed");
    }
    if (erc == 0) {
      ends = cua__calloc(nchains, sizeof *ends);
      if (ends == NULL) {
        erc = CUA_ERR_NOMEM;
        snprintf(emsg, sizeof emsg, "out of host memory");
      }
      for (size_t ch = 1; ch < nchains && erc == 0; ch++)
        erc = lend_event(rt, g->chains[ch].pl.device, &ends[ch], emsg,
                         sizeof emsg);
    }
    if (erc == 0)
      erc = genq_join(&q, nchains, ends, emsg, sizeof emsg);
    if (began)
      genq_free(&q);
    rc = capture_done(rt, g, NULL, s, erc, emsg, msg, len);
  }
  /* Every chain is known once the placement is over: wait for it, then
   * the streams and events go back. */
  while (done == 0)
    feed(arg, (size_t)-1, &done);
  return_streams(g, nchains);
  for (size_t ch = 1; ends != NULL && ch < nchains; ch++)
    return_event(rt, g->chains[ch].pl.device, ends[ch]);
  free(ends);
  if (rt->cap_events != NULL)
    return_event(rt, adev, fork);
  pthread_mutex_unlock(&rt->capture_mu);
  return rc;
}

/* --------------------------------------------------------------- replay */

/* Brings g->bg to @p gp's parameters op by op (backend ABI 1.4), on the
 * capture streams: 0, or non-zero when a capture of the whole graph must
 * do it (an op the backend cannot change in place, or a failure, which
 * leaves the ops already changed; the capture then sets them all). */
static int update_in_place(cua_runtime *rt, cua_graph *g, cua__gparams *gp) {
  const cua_backend_descriptor *be = rt->be;
  if (be->size < offsetof(cua_backend_descriptor, graph_update_op) +
                     sizeof be->graph_update_op ||
      be->graph_update_op == NULL || g->bg_params == NULL ||
      g->bg_params->n != gp->n)
    return CUA_ERR_NOTSUP;
  char msg[CUA__ERRLEN];
  pthread_mutex_lock(&rt->capture_mu);
  int rc = 0;
  for (size_t ch = 0; ch < g->nchains && rc == 0; ch++)
    rc = lend_stream(rt, g, ch, msg, sizeof msg);
  uint64_t changed = 0;
  void *params[64], *ptrs[64];
  for (size_t k = 0; k < g->nops && rc == 0; k++) {
    if (gp->ops[k] == g->bg_params->ops[k])
      continue;
    cua_backend_op bo;
    rc = cua__backend_op(gp->ops[k], 0, &bo, params, ptrs, op_name(gp->ops[k]),
                         msg, sizeof msg);
    cua_backend_err err = {{0}};
    if (rc == 0)
      rc = be->graph_update_op(rt->bst, g->bg, k, g->chains[g->ops[k].chain].bs,
                               &bo, &err);
    changed += rc == 0;
  }
  return_streams(g, g->nchains);
  pthread_mutex_unlock(&rt->capture_mu);
  if (rc == 0) {
    g->bg_version = gp->version;
    atomic_fetch_add(&gp->refs, 1);
    cua__gparams_release(g->bg_params);
    g->bg_params = gp;
  }
  atomic_fetch_add(&g->node_updates, changed);
  return rc;
}

int cua__graph_replay(cua_runtime *rt, cua__node *n, char *msg, size_t len) {
  cua_graph *g = n->op->graph;
  cua__gparams *gp = n->op->gparams;
  cua__stream *s = n->stream;
  if (!g->native)
    return cua__graph_enqueue(rt, g, gp, s->bs, 0, msg, len);
  int rc = 0;
  if (g->bg == NULL ||
      (g->bg_version != gp->version && update_in_place(rt, g, gp) != 0))
    rc = cua__graph_capture(rt, g, gp, msg, len);
  if (rc != 0)
    return rc;
  cua_backend_err err = {{0}};
  rc = rt->be->graph_launch(rt->bst, g->bg, s->bs, &err);
  if (rc != 0)
    snprintf(msg, len, "launching the graph: %s",
             err.msg[0] ? err.msg : cua_strerror(rc));
  return rc;
}

/* ------------------------------------------------------------ lifetimes */

void cua__gparams_release(cua__gparams *gp) {
  if (gp == NULL || atomic_fetch_sub(&gp->refs, 1) != 1)
    return;
  for (size_t k = 0; k < gp->n; k++)
    cua_op_destroy(gp->ops[k]);
  free(gp->ops);
  free(gp);
}

void cua__graph_free_backend(cua_runtime *rt, cua_graph *g) {
  const cua_backend_descriptor *be = rt->be;
  if (g->bg != NULL)
    be->graph_destroy(rt->bst, g->bg);
  g->bg = NULL;
  for (size_t ch = 0; ch < g->nchains && g->chains != NULL; ch++) {
    if (g->chains[ch].bs != NULL)
      be->stream_destroy(rt->bst, g->chains[ch].bs);
    g->chains[ch].bs = NULL;
  }
  for (size_t e = 0; e < g->nevents && g->events != NULL; e++) {
    if (g->events[e] != NULL)
      be->event_destroy(rt->bst, g->events[e]);
    g->events[e] = NULL;
  }
}

/* Frees @p g's memory (its backend objects are gone). */
static void graph_free(cua_graph *g) {
  cua_runtime *rt = g->rt;
  cua__gparams_release(g->cur);
  cua_op_destroy(g->launch_op);
  for (size_t k = 0; k < g->nops; k++)
    cua_op_destroy(g->ops[k].key);
  free(g->ops);
  free(g->wait_store);
  free(g->chains);
  free(g->events);
  free(g->event_dev);
  free(g->index);
  free(g->res);
  cua__gparams_release(g->bg_params);
  cua_op_destroy(g->auto_root);
  free(g->auto_pos);
  pthread_mutex_destroy(&g->mu);
  pthread_mutex_destroy(&g->auto_mu);
  free(g);
  cua__runtime_release(rt);
}

/* The last reference may go while rt->lock is held (the node of the last
 * launch drops its op there): the graph then waits in rt->graph_reap, and
 * its backend objects are destroyed by the next cua__graphs_reap(), with
 * no core lock held. A graph whose runtime closed has none left. */
void cua__graph_release(cua_graph *g) {
  if (g == NULL || atomic_fetch_sub(&g->refs, 1) != 1)
    return;
  if (g->dead) {
    graph_free(g); /* unlinked when its runtime closed */
    return;
  }
  cua_runtime *rt = g->rt;
  pthread_mutex_lock(&rt->reg_lock);
  if (g->reg_prev != NULL)
    g->reg_prev->reg_next = g->reg_next;
  else if (rt->graphs == g)
    rt->graphs = g->reg_next;
  if (g->reg_next != NULL)
    g->reg_next->reg_prev = g->reg_prev;
  g->reg_prev = NULL;
  g->reg_next = atomic_load(&rt->graph_reap);
  atomic_store(&rt->graph_reap, g);
  pthread_mutex_unlock(&rt->reg_lock);
}

void cua__graphs_reap(cua_runtime *rt) {
  if (atomic_load_explicit(&rt->graph_reap, memory_order_relaxed) == NULL)
    return;
  pthread_mutex_lock(&rt->reg_lock);
  cua_graph *g = atomic_exchange(&rt->graph_reap, NULL);
  pthread_mutex_unlock(&rt->reg_lock);
  while (g != NULL) {
    cua_graph *next = g->reg_next;
    /* Every launch has completed (each held the graph): nothing of it is
     * in flight. */
    cua__graph_free_backend(rt, g);
    graph_free(g);
    g = next;
  }
}

int cua__graph_result(cua__node *n, const cua_op *op) {
  const cua_graph *g = op->graph;
  const cua__gparams *gp = op->gparams;
  if (!g->res_zip) {
    n->result =
        g->nres == 1 && g->res[0] >= 0 ? gp->ops[g->res[0]]->hptr : NULL;
    return 0;
  }
  n->results = cua__calloc(g->nres ? g->nres : 1, sizeof *n->results);
  if (n->results == NULL)
    return CUA_ERR_NOMEM;
  n->nresults = g->nres;
  for (size_t i = 0; i < g->nres; i++)
    n->results[i] = g->res[i] >= 0 ? gp->ops[g->res[i]]->hptr : NULL;
  n->result = n->results;
  return 0;
}

void cua__graph_op_gone(cua_op *op) {
  cua__gparams_release(op->gparams);
  cua__graph_release(op->graph);
}

/* The runtime is closing (every submission is complete): the graphs the
 * caller still holds lose their backend objects and can only be
 * destroyed. */
void cua__graphs_detach(cua_runtime *rt) {
  cua__graphs_reap(rt);
  pthread_mutex_lock(&rt->reg_lock);
  for (cua_graph *g = rt->graphs, *next; g != NULL; g = next) {
    next = g->reg_next;
    cua__graph_free_backend(rt, g);
    g->dead = 1;
    g->reg_prev = g->reg_next = NULL;
  }
  rt->graphs = NULL;
  pthread_mutex_unlock(&rt->reg_lock);
}

/* ----------------------------------------------------------------- API */

static int graph_dead(const cua_graph *g, const char *what) {
  if (g->dead || atomic_load(&g->rt->closed))
    return cua__fail(g->rt, CUA_ERR_CANCELED,
                     "%s: the graph's runtime is closing or closed", what);
  return 0;
}

/* A GRAPH op for @p gp: every buffer its ops touch, each once, with the
 * union of their modes. */
static int make_launch_op(cua_graph *g, cua__gparams *gp, cua_op **out) {
  cua_op *op = NULL;
  int rc = cua__op_new(&op, g->rt, CUA_OP_GRAPH);
  if (rc != 0)
    return rc;
  op->graph = g;
  atomic_fetch_add(&g->refs, 1);
  op->gparams = gp;
  atomic_fetch_add(&gp->refs, 1);
  op->hints.name = cua__strdup("graph");
  op->name = (char *)op->hints.name;
  size_t total = 0;
  for (size_t k = 0; k < gp->n; k++)
    total += gp->ops[k]->nacc;
  size_t cap = 16;
  while (cap < 2 * total)
    cap *= 2;
  cua_buffer **keys = cua__calloc(cap, sizeof *keys);
  size_t *slot = cua__calloc(cap, sizeof *slot);
  if (keys == NULL || slot == NULL || op->name == NULL)
    rc = CUA_ERR_NOMEM;
  for (size_t k = 0; k < gp->n && rc == 0; k++) {
    const cua_op *o = gp->ops[k];
    for (size_t a = 0; a < o->nacc && rc == 0; a++) {
      cua_buffer *b = o->acc[a].buf;
      size_t h = cua__ptr_hash(b, cap);
      while (keys[h] != NULL && keys[h] != b)
        h = (h + 1) & (cap - 1);
      if (keys[h] == b) {
        op->acc[slot[h]].mode |= o->acc[a].mode;
        continue;
      }
      keys[h] = b;
      slot[h] = op->nacc;
      rc = cua__op_add_access(op, b, o->acc[a].mode);
    }
  }
  free(keys);
  free(slot);
  if (rc != 0) {
    cua_op_destroy(op);
    return rc;
  }
  *out = op;
  return 0;
}

int cua_graph_launch(cua_future **fut, cua_graph *g) {
  if (fut != NULL)
    *fut = NULL;
  if (fut == NULL || g == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_graph_launch: NULL argument");
  if (graph_dead(g, "cua_graph_launch"))
    return CUA_ERR_CANCELED;
  cua__graphs_reap(g->rt);
  pthread_mutex_lock(&g->mu);
  int rc = 0;
  if (g->launch_op == NULL)
    rc = make_launch_op(g, g->cur, &g->launch_op);
  cua_op *op = rc == 0 ? cua_op_retain(g->launch_op) : NULL;
  pthread_mutex_unlock(&g->mu);
  if (rc != 0)
    return cua__fail(g->rt, rc, "cua_graph_launch: out of host memory");
  rc = cua_submit_on(fut, g->rt, op, g->anchor.device, g->anchor.stream);
  cua_op_destroy(op);
  if (rc == 0) {
    atomic_fetch_add(&g->launches, 1);
    atomic_fetch_add(&g->rt->n_graph_launches, 1);
  }
  return rc;
}

long cua__graph_find(const cua_graph *g, const cua_op *key) {
  size_t h = cua__ptr_hash(key, g->index_cap);
  while (g->index[h] != 0) {
    size_t k = g->index[h] - 1;
    if (g->ops[k].key == key)
      return (long)k;
    h = (h + 1) & (g->index_cap - 1);
  }
  return -1;
}

/* Whether @p r may stand for @p o in the same place of the schedule. */
static int same_structure(const cua_op *o, const cua_op *r, char *msg,
                          size_t len) {
  if (r->kind != o->kind) {
    snprintf(msg, len, "the replacement is a %s op, the captured op a %s op",
             cua_op_kind_name(r->kind), cua_op_kind_name(o->kind));
    return 0;
  }
  if (r->nacc != o->nacc) {
    snprintf(msg, len, "the replacement uses %zu buffers, the captured op %zu",
             r->nacc, o->nacc);
    return 0;
  }
  for (size_t a = 0; a < o->nacc; a++) {
    const cua_buffer *x = o->acc[a].buf, *y = r->acc[a].buf;
    if (x->bytes != y->bytes || x->device != y->device ||
        o->acc[a].mode != r->acc[a].mode) {
      snprintf(msg, len,
               "buffer %zu: the replacement's is %zu bytes on device %d "
               "(mode %d), the captured op's %zu bytes on device %d (mode "
               "%d)",
               a, y->bytes, y->device, (int)r->acc[a].mode, x->bytes, x->device,
               (int)o->acc[a].mode);
      return 0;
    }
  }
  if (o->kind == CUA_OP_KERNEL) {
    if (r->kernel != o->kernel || r->nargs != o->nargs) {
      snprintf(msg, len,
               "the replacement launches another kernel, or with another "
               "number of arguments (%zu, the captured op %zu)",
               r->nargs, o->nargs);
      return 0;
    }
    for (size_t i = 0; i < o->nargs; i++)
      if ((r->argbuf[i] >= 0) != (o->argbuf[i] >= 0)) {
        snprintf(msg, len,
                 "kernel argument %zu is a buffer in one and a value in the "
                 "other",
                 i);
        return 0;
      }
  }
  return 1;
}

int cua_graph_update(cua_graph *g, cua_op *captured, cua_op *replacement) {
  if (g == NULL || captured == NULL || replacement == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_graph_update: NULL argument");
  if (graph_dead(g, "cua_graph_update"))
    return CUA_ERR_CANCELED;
  if (replacement->rt != g->rt)
    return cua__fail(g->rt, CUA_ERR_INVAL,
                     "cua_graph_update: the replacement belongs to another "
                     "runtime");
  long k = cua__graph_find(g, captured);
  if (k < 0)
    return cua__fail(g->rt, CUA_ERR_INVAL,
                     "cua_graph_update: op '%s' is not one of the graph's "
                     "device ops",
                     op_name(captured));
  char msg[CUA__ERRLEN];
  pthread_mutex_lock(&g->mu);
  cua__gparams *cur = g->cur;
  if (!same_structure(cur->ops[k], replacement, msg, sizeof msg)) {
    pthread_mutex_unlock(&g->mu);
    return cua__fail(g->rt, CUA_ERR_STRUCTURE,
                     "cua_graph_update: op '%s' cannot be replaced by op "
                     "'%s': %s",
                     op_name(captured), op_name(replacement), msg);
  }
  /* A buffer rebound onto one that other ops of the graph use would
   * change the order captured among them. */
  for (size_t a = 0; a < replacement->nacc; a++) {
    const cua_buffer *nb = cua__buffer_root(replacement->acc[a].buf);
    if (nb == cua__buffer_root(cur->ops[k]->acc[a].buf))
      continue;
    for (size_t j = 0; j < cur->n; j++) {
      const cua_op *o = cur->ops[j];
      for (size_t b = 0; b < o->nacc && (size_t)k != j; b++)
        if (cua__buffer_root(o->acc[b].buf) == nb) {
          pthread_mutex_unlock(&g->mu);
          return cua__fail(g->rt, CUA_ERR_STRUCTURE,
                           "cua_graph_update: op '%s' cannot be replaced by "
                           "op '%s': its buffer %zu is used by another op of "
                           "the graph ('%s'), and the order between them was "
                           "captured for another buffer",
                           op_name(captured), op_name(replacement), a,
                           op_name(o));
        }
    }
  }
  /* The next launch makes its op anew, for the new parameters. */
  cua_op *old_launch = g->launch_op;
  g->launch_op = NULL;
  cua_op_destroy(old_launch);
  cua__op_freeze(replacement);
  if (atomic_load(&cur->refs) == 1) {
    /* No launch holds these parameters: change them in place. */
    cua_op *was = cur->ops[k];
    cur->ops[k] = cua_op_retain(replacement);
    cur->version++;
    cua_op_destroy(was);
  } else {
    cua__gparams *np = cua__calloc(1, sizeof *np);
    if (np != NULL)
      np->ops = cua__calloc(cur->n, sizeof *np->ops);
    if (np == NULL || np->ops == NULL) {
      if (np != NULL)
        free(np);
      pthread_mutex_unlock(&g->mu);
      return cua__fail(g->rt, CUA_ERR_NOMEM,
                       "cua_graph_update: out of host memory");
    }
    atomic_init(&np->refs, 1);
    np->n = cur->n;
    np->version = cur->version + 1;
    for (size_t i = 0; i < cur->n; i++)
      np->ops[i] = cua_op_retain((size_t)k == i ? replacement : cur->ops[i]);
    g->cur = np;
    cua__gparams_release(cur);
  }
  pthread_mutex_unlock(&g->mu);
  atomic_fetch_add(&g->updates, 1);
  atomic_fetch_add(&g->rt->n_graph_updates, 1);
  return 0;
}

int cua_graph_get_info(const cua_graph *g, cua_graph_info *info) {
  if (g == NULL || info == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_graph_get_info: NULL argument");
  if (info->size < offsetof(cua_graph_info, anchor) + sizeof info->anchor)
    return cua__fail(g->rt, CUA_ERR_INVAL,
                     "cua_graph_get_info: info->size is %zu; set it to "
                     "sizeof(cua_graph_info) (%zu)",
                     info->size, sizeof(cua_graph_info));
  size_t size = info->size;
  cua_graph_info v;
  memset(&v, 0, sizeof v);
  v.size = size < sizeof v ? size : sizeof v;
  v.ops = g->nops;
  v.streams = g->nchains;
  v.waits = g->nwaits;
  v.native = g->native;
  v.launches = atomic_load(&((cua_graph *)g)->launches);
  v.updates = atomic_load(&((cua_graph *)g)->updates);
  v.captures = atomic_load(&((cua_graph *)g)->captures);
  v.anchor = g->anchor;
  v.node_updates = atomic_load(&((cua_graph *)g)->node_updates);
  v.place_ns = g->place_ns;
  v.capture_ns = g->capture_ns;
  v.edges = g->nedges;
  memcpy(info, &v, v.size);
  return 0;
}

void cua_graph_destroy(cua_graph *g) {
  if (g == NULL)
    return;
  pthread_mutex_lock(&g->mu);
  cua_op *op = g->launch_op;
  g->launch_op = NULL;
  pthread_mutex_unlock(&g->mu);
  /* The launch op holds the graph: dropping it first lets the graph go. */
  cua_runtime *rt = g->rt;
  int dead = g->dead;
  cua_op_destroy(op);
  cua__graph_release(g);
  if (!dead)
    cua__graphs_reap(rt);
}
