/*
 * core/graphbuild.c: a graph's schedule made into work, op by op: the pass
 * a replay by the core makes on the graph's own streams
 * (cua__graph_enqueue()), and the captures that make a backend graph of it
 * on the runtime's capture streams (cua__graph_capture(), and
 * cua__graph_capture_fed(), which gets the ops one by one while capture.c
 * places a large DAG).
 *
 * With a backend that sets a capture's dependencies itself (capture_deps(),
 * backend ABI 1.9), each op is given exactly its waits and, where needed,
 * its chain's previous op; otherwise events carry the waits between
 * chains. The chains fork from the anchor stream and join back into it.
 *
 * Owns: the pass (genq), the runtime's capture streams and events (lent
 * to one capture at a time), and the fed capture's thread (cua__feed,
 * started by capture.c). Locks: rt->capture_mu for the capture streams
 * and events and for every capture; no other core lock (a feed's mu is a
 * leaf, which the placement takes under rt->lock to wake the thread).
 */
#include "config.h"
#include "graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- enqueue */

/* One pass over a graph's schedule, op by op: a replay by the core, or a
 * capture (which a pipelined creation feeds while it places, capture.c). */
typedef struct genq {
  cua_runtime *rt;
  cua_graph *g;
  cua_backend_stream *anchor;
  cua_backend_event *fork; /* recorded on the anchor first */
  int deps;                /* dependencies by capture_deps(), not events */
  unsigned char *forked;   /* per chain: it waited for the fork */
  size_t *buf;             /* deps: one op's dependencies */
  size_t bufcap;
  void *params[64], *ptrs[64];
} genq;

static void genq_free(genq *q) {
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
  q->forked = cua__calloc(maxchains + 1, 1);
  if (q->forked == NULL) {
    snprintf(msg, len, "out of host memory");
    return CUA_ERR_NOMEM;
  }
  int rc = rt->be->event_record(rt->bst, fork, anchor);
  if (rc != 0) {
    genq_free(q);
    snprintf(msg, len, "forking the graph's streams: %s", cua_strerror(rc));
  }
  return rc;
}

/* The stream of chain @p ch (the anchor for chain 0 when it is the
 * anchor's). */
static cua_backend_stream *genq_stream_of(const genq *q, size_t ch) {
  const cua_graph *g = q->g;
  return ch == 0 && g->chains[0].bs == q->anchor ? q->anchor : g->chains[ch].bs;
}

/* Makes chain @p ch's stream wait for the fork, once. */
static int genq_fork(genq *q, size_t ch, char *msg, size_t len) {
  cua_backend_stream *s = genq_stream_of(q, ch);
  q->forked[ch] = 1;
  int rc =
      s == q->anchor ? 0 : q->rt->be->stream_wait_event(q->rt->bst, s, q->fork);
  if (rc != 0)
    snprintf(msg, len, "forking the graph's streams: %s", cua_strerror(rc));
  return rc;
}

/* Makes op @p k depend on exactly its dependencies in the graph with
 * explicit ones: its waits, and its chain's previous op where nothing else
 * orders it after that one. With no wait nothing is called: the stream is
 * where the op must start, after the chain's previous op or (the chain's
 * first) after nothing, as the fork leaves it. */
static int set_deps(genq *q, cua_backend_stream *s, size_t k,
                    cua_backend_err *err) {
  const cua__gop *o = &q->g->ops[k];
  if (o->nwaits == 0)
    return 0;
  if (cua__grow(&q->buf, &q->bufcap, o->nwaits + 1, sizeof *q->buf) != 0)
    return CUA_ERR_NOMEM;
  size_t n = 0;
  if (o->prev >= 0)
    q->buf[n++] = (size_t)o->prev;
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
  int rc;
  if (!q->forked[o->chain] && (rc = genq_fork(q, o->chain, msg, len)) != 0)
    return rc;
  cua_backend_stream *s = genq_stream_of(q, o->chain);
  /* Only the message's start is read back: no need to clear 512 bytes per
   * op on this path, which every replay by the core takes. */
  cua_backend_err err;
  err.msg[0] = '\0';
  rc = 0;
  if (q->deps)
    rc = set_deps(q, s, k, &err);
  for (size_t w = 0; !q->deps && w < o->nwaits && rc == 0; w++)
    rc = be->stream_wait_event(bst, s, g->events[g->ops[o->waits[w]].event]);
  if (rc != 0) {
    snprintf(msg, len, "making op '%s' wait: %s", cua__gop_name(op),
             err.msg[0] ? err.msg : cua_strerror(rc));
    return rc;
  }
  cua_backend_op bo;
  rc = cua__backend_op(op, ++g->chains[o->chain].seq, &bo, q->params, q->ptrs,
                       cua__gop_name(op), msg, len);
  if (rc != 0)
    return rc;
  rc = be->launch(bst, s, &bo, &err);
  if (rc != 0) {
    snprintf(msg, len, "launching op '%s' of the graph: %s", cua__gop_name(op),
             err.msg[0] ? err.msg : cua_strerror(rc));
    return rc;
  }
  if (!q->deps && o->event >= 0 &&
      (rc = be->event_record(bst, g->events[o->event], s)))
    snprintf(msg, len, "recording an event after op '%s': %s",
             cua__gop_name(op), cua_strerror(rc));
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
  for (size_t ch = 0; ch < g->nchains && rc == 0; ch++)
    rc = genq_fork(&q, ch, msg, len);
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
    int rc = cua__stream_create(rt, dev, &bs, NULL, &err);
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

int cua__graph_lend_streams(cua_runtime *rt, cua_graph *g, char *msg,
                            size_t len) {
  int rc = 0;
  for (size_t ch = 0; ch < g->nchains && rc == 0; ch++)
    rc = lend_stream(rt, g, ch, msg, len);
  return rc;
}

void cua__graph_return_streams(cua_graph *g) {
  return_streams(g, g->nchains);
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
  uint64_t t0 = cua__now_ns();
  int rc = be->capture_end(rt->bst, s, g->bg, &out, &err);
  atomic_store(&g->finish_ns, cua__now_ns() - t0);
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
  int rc = cua__graph_lend_streams(rt, g, msg, len);
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

/* ------------------------------------------------------ the fed capture */

/* The capture thread, once it has caught up, sleeps until FEED_BATCH more
 * ops are recorded (or all are): one wake-up per batch, not per op. */
#define FEED_BATCH 32

/* The capture thread: at least @p want ops recorded, or the end. It states
 * what it waits for before it looks at ready, and the placement stores
 * ready before it looks at want (both sequentially consistent): one of the
 * two sees the other's, so no wake-up is lost. */
static size_t feed_wait(void *arg, size_t want, int *done) {
  cua__feed *f = arg;
  size_t target = want + FEED_BATCH - 1;
  if (target > f->maxops)
    target = f->maxops;
  if (target < want)
    target = want;
  pthread_mutex_lock(&f->mu);
  atomic_store(&f->want, target);
  while (atomic_load(&f->ready) < target && f->done == 0)
    pthread_cond_wait(&f->cv, &f->mu);
  atomic_store(&f->want, SIZE_MAX);
  size_t ready = atomic_load(&f->ready);
  *done = f->done;
  pthread_mutex_unlock(&f->mu);
  return ready;
}

/* The placement: @p ready ops recorded; @p done non-zero at the end. */
void cua__feed_put(cua__feed *f, size_t ready, int done) {
  atomic_store(&f->ready, ready);
  if (done == 0 && ready < atomic_load(&f->want))
    return;
  pthread_mutex_lock(&f->mu);
  if (done != 0)
    f->done = done;
  pthread_cond_signal(&f->cv);
  pthread_mutex_unlock(&f->mu);
}

static void *feed_main(void *arg) {
  cua__feed *f = arg;
  f->rc = cua__graph_capture_fed(f->rt, f->g, f->maxops, feed_wait, f, f->msg,
                                 sizeof f->msg);
  return NULL;
}

int cua__feed_start(cua__feed *f, cua_runtime *rt, cua_graph *g,
                    size_t maxops) {
  memset(f, 0, sizeof *f);
  f->rt = rt;
  f->g = g;
  f->maxops = maxops;
  atomic_init(&f->ready, 0);
  atomic_init(&f->want, SIZE_MAX);
  pthread_mutex_init(&f->mu, NULL);
  pthread_cond_init(&f->cv, NULL);
  if (pthread_create(&f->thread, NULL, feed_main, f) == 0)
    return 0;
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
  return -1;
}

void cua__feed_free(cua__feed *f) {
  pthread_mutex_destroy(&f->mu);
  pthread_cond_destroy(&f->cv);
}
