/*
 * core/hazards.c: buffer hazards and exact cross-stream waits.
 *
 * Buffer states: every buffer (and every tile of a partitioned one) keeps
 * its last writers and the readers since; a new access depends on what it
 * conflicts with (read after write: a data edge, whose failure propagates;
 * write after read or write: an ordering edge). validate() checks every
 * access of a submission before anything changes.
 *
 * Waits: a consumer on stream t waits for a producer on stream s at the
 * producer's own point (an event recorded right after it), never at
 * whatever s ran since, unless t is already ordered after it: each stream
 * keeps a vector clock of the points it waited for, and each point the
 * clock of its stream when it was recorded. Points are freed once their
 * stream is done past them and no decided wait still needs them
 * (complete.c).
 *
 * Everything here runs under rt->lock, during a round; it appends WAIT and
 * RECORD commands and never calls the backend (cua__event_get() may create
 * an event when the device's pool is empty).
 */
#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- streams */

static int vc_fit(uint64_t **vc, size_t *n, size_t need) {
  if (*n >= need)
    return 0;
  uint64_t *v = cua__realloc(*vc, need * sizeof *v);
  if (v == NULL)
    return CUA_ERR_NOMEM;
  memset(v + *n, 0, (need - *n) * sizeof *v);
  *vc = v;
  *n = need;
  return 0;
}

/* A new point "stream s at seq", ordered after what @p vc says (NULL: only
 * after s's own earlier work), kept in s's list by increasing seq. */
static cua__point *point_new(cua_runtime *rt, cua__stream *s, uint64_t seq,
                             const uint64_t *vc, size_t nvc) {
  int fresh;
  cua__point *p = cua__pool_get(&rt->point_pool, &fresh);
  if (p == NULL)
    return NULL;
  /* A reused point keeps its clock's array. */
  uint64_t *keep = fresh ? NULL : p->vc;
  size_t capvc = fresh ? 0 : p->capvc;
  memset(p, 0, sizeof *p);
  p->vc = keep;
  p->capvc = capvc;
  if (cua__event_get(rt, s->device, &p->event) != 0) {
    cua__pool_put(&rt->point_pool, p);
    return NULL;
  }
  rt->stats.events_recorded++;
  p->seq = seq;
  p->stream = s;
  size_t need = vc != NULL && nvc > (size_t)s->gidx ? nvc : (size_t)s->gidx + 1;
  /* A machine of more streams than CUA__VC_STREAMS_MAX (a simulated one of
   * a thousand GPUs): points carry no clock, as out of memory below. A
   * clock has an entry per stream, and a DAG in flight a point per op: the
   * copies and merges would cost more than the ops (doc/design.md, "The
   * sim backend"). Every cross-stream dependency then gets its own wait,
   * instead of those that an earlier wait already covers being skipped. */
  if (rt->nstreams > CUA__VC_STREAMS_MAX)
    need = 0;
  if (need > p->capvc) {
    /* Room for every stream now, so that a pooled point's array serves
     * any later point: points are made for every few ops, and their
     * clocks grow with the streams a DAG reaches. */
    size_t cap = need > (size_t)rt->nstreams ? need : (size_t)rt->nstreams;
    uint64_t *v = cua__realloc(p->vc, cap * sizeof *v);
    if (v != NULL) {
      p->vc = v;
      p->capvc = cap;
    }
  }
  /* Without its clock (out of memory), a point only orders its own
   * stream's work: nvc stays 0. */
  if (need > 0 && need <= p->capvc) {
    memset(p->vc, 0, need * sizeof *p->vc);
    if (vc != NULL)
      memcpy(p->vc, vc, (nvc < need ? nvc : need) * sizeof *p->vc);
    p->vc[s->gidx] = seq;
    p->nvc = need;
  }
  /* Usually the last; a point attached after the fact (exact waits) may
   * go before points recorded later in the same round, so the list is
   * searched from its end: a whole submission keeps a stream's points
   * alive until the completion thread sees the stream past them, and a
   * search from the head cost about 240 instructions per point on a
   * random DAG of 2,000 ops (callgrind). */
  cua__point *after = s->points_tail;
  while (after != NULL && after->seq > seq)
    after = after->prev;
  p->prev = after;
  p->next = after != NULL ? after->next : s->points_head;
  if (p->next != NULL)
    p->next->prev = p;
  else
    s->points_tail = p;
  if (after != NULL)
    after->next = p;
  else
    s->points_head = p;
  if (!s->active)
    cua__stream_activate(rt, s); /* so that the point is freed */
  return p;
}

void cua__point_free(cua_runtime *rt, cua__point *p) {
  cua__event_put(rt, p->stream->device, p->event);
  cua__pool_put(&rt->point_pool, p);
}

/* The point pool's: what a kept point owns. */
void cua__point_fini(void *p) {
  free(((cua__point *)p)->vc);
}

/* Records an event at the current end of @p s (after the last op decided
 * for it): a RECORD command. */
cua__point *cua__record_point(cua__round *r, cua__stream *s) {
  if (s->points_tail != NULL && s->points_tail->seq == s->launched)
    return s->points_tail;
  cua__point *p = point_new(r->rt, s, s->launched, s->vc, s->nvc);
  if (p == NULL)
    return NULL;
  cua__cmd *c = cua__cmd_add(r, CUA__CMD_RECORD, s);
  if (c == NULL) {
    /* Nothing will record it: unlink it again. */
    if (p->prev != NULL)
      p->prev->next = p->next;
    else
      s->points_head = p->next;
    if (p->next != NULL)
      p->next->prev = p->prev;
    else
      s->points_tail = p->prev;
    cua__point_free(r->rt, p);
    return NULL;
  }
  c->point = p;
  p->ticket = c->ticket;
  if (r->rt->obs_commands)
    cua__obs_command(r->rt, CUA_OBS_RECORD, s, s->inflight_tail);
  return p;
}

/* Gives the node of LAUNCH command @p c a point of its own, recorded by
 * that command right after the op: the exact point to wait for. The round
 * is not applied yet, so the command can still be changed. */
static cua__point *attach_point(cua__round *r, cua__cmd *c) {
  cua__node *n = c->node;
  cua__stream *s = n->stream;
  /* The stream's clock now is the node's clock only if no wait was added
   * on the stream since it was decided; otherwise claim nothing. */
  int same = n->vc_gen == s->vc_gen;
  cua__point *p =
      point_new(r->rt, s, n->seq, same ? s->vc : NULL, same ? s->nvc : 0);
  if (p == NULL)
    return NULL;
  p->ticket = c->ticket;
  c->point = p;
  n->point = p;
  if (r->rt->obs_commands)
    cua__obs_command(r->rt, CUA_OBS_RECORD, s, n);
  return p;
}

/* Makes stream @p t wait until stream @p s has reached @p seq, unless it
 * is already ordered after that point: a WAIT command. */
int cua__wait_for(cua__round *r, cua__stream *t, cua__stream *s, uint64_t seq,
                  cua__node *producer) {
  if (s == t || seq <= s->done)
    return 0;
  if ((size_t)s->gidx < t->nvc && t->vc[s->gidx] >= seq)
    return 0;
  /* The producer's own point, when it has one, is exact; it is still
   * alive, since points go only once their stream is done past them and
   * no decided wait still needs them. Otherwise the first point at or after
   * seq, else one recorded now at the stream's end (later than needed:
   * exact_points() makes this rare). */
  cua__point *p = producer != NULL ? producer->point : NULL;
  if (p == NULL && producer != NULL && producer->cmd < r->cmds.n &&
      r->cmds.v[producer->cmd].node == producer &&
      r->cmds.v[producer->cmd].kind == CUA__CMD_LAUNCH)
    p = attach_point(r, &r->cmds.v[producer->cmd]);
  if (p == NULL && s->points_tail != NULL && s->points_tail->seq >= seq) {
    /* (from the end, where the points of recent ops are) */
    for (p = s->points_tail; p->prev != NULL && p->prev->seq >= seq;
         p = p->prev)
      ;
  }
  if (p == NULL && (p = cua__record_point(r, s)) == NULL)
    return CUA_ERR_NOMEM;
  cua__cmd *c = cua__cmd_add(r, CUA__CMD_WAIT, t);
  if (c == NULL)
    return CUA_ERR_NOMEM;
  c->point = p;
  atomic_fetch_add(&p->users, 1);
  r->rt->stats.event_waits++;
  if (s->device != t->device)
    r->rt->stats.peer_waits++;
  if (r->rt->obs != NULL && r->waiter != NULL) {
    cua_obs_record o = {.kind = CUA_OBS_WAIT,
                        .t_ns = cua__rt_now(r->rt),
                        .submission = r->waiter->sub_id,
                        .op_id = r->waiter->op_id,
                        .device = t->device,
                        .stream = t->index,
                        .other_op = producer != NULL ? producer->op_id : 0,
                        .other_device = s->device,
                        .other_stream = s->index};
    cua__obs_emit(r->rt, &o, NULL, NULL, NULL);
  }
  if (vc_fit(&t->vc, &t->nvc,
             p->nvc > (size_t)s->gidx + 1 ? p->nvc : (size_t)s->gidx + 1) ==
      0) {
    for (size_t i = 0; i < p->nvc; i++)
      if (p->vc[i] > t->vc[i])
        t->vc[i] = p->vc[i];
    if (t->vc[s->gidx] < p->seq)
      t->vc[s->gidx] = p->seq;
    t->vc_gen++;
  }
  return 0;
}

/* Whether a consumer not yet placed on @p n's stream may still need to
 * wait for exactly @p n: one that is not placed yet (after a host step of
 * this submission), a shared op a later submission may reuse, or a later
 * submission's access to a buffer whose state still names @p n. */
static int may_be_waited_for(const cua__node *n) {
  if (atomic_load_explicit(&n->nstates, memory_order_relaxed) > 0 ||
      n->late_deps)
    return 1;
  const cua__dependent *d = n->dependents;
  for (size_t i = 0; i < n->ndependents; i++) {
    const cua__node *m = d[i].node;
    if (m->state == CUA__NODE_DONE)
      continue;
    if (m->cls == CUA__CLASS_DEVICE && m->stream == NULL)
      return 1;
    if (m->cls == CUA__CLASS_VIRTUAL && m->kind == CUA_OP_SHARED)
      return 1;
  }
  return 0;
}

/* Exact waits: after a round has decided its launches, every op that a
 * later round may wait for gets an event recorded right after it (its
 * LAUNCH command records it), so that a later consumer waits for it and
 * not for whatever its stream ran since. */
int cua__exact_points(cua__round *r) {
  /* With one stream there is no one to wait (a second stream created later
   * waits at this one's end: correct, only later). */
  if (r->rt->nstreams < 2) {
    r->first_launch = r->cmds.n;
    return 0;
  }
  for (size_t i = r->first_launch; i < r->cmds.n; i++) {
    cua__cmd *c = &r->cmds.v[i];
    if (c->kind != CUA__CMD_LAUNCH || c->point != NULL)
      continue;
    cua__node *n = c->node;
    if (n->point != NULL || n->code != 0 || !may_be_waited_for(n))
      continue;
    if (attach_point(r, c) == NULL)
      return CUA_ERR_NOMEM; /* later consumers wait at the stream's end */
  }
  r->first_launch = r->cmds.n;
  return 0;
}

/* Checks every access of every device node before anything changes, so a
 * submission that fails validation leaves no trace. */
int cua__validate(cua__build *b, char *msg, size_t len) {
  int rc = 0;
  if (b->naccs == 0) /* (a FREE accesses its buffer) */
    return 0;
  cua_buffer **freed = NULL;
  size_t nfreed = 0, capfreed = 0;
  for (size_t i = 0; i < b->n && rc == 0; i++) {
    cua__node *n = b->order[i];
    cua_op *op = n->op;
    for (size_t a = 0; a < op->nacc && rc == 0; a++) {
      cua_buffer *buf = op->acc[a].buf;
      char why[512];
      rc = cua__buffer_check(buf, op->acc[a].mode, why, sizeof why);
      for (size_t k = 0; k < nfreed && rc == 0; k++)
        if (freed[k] == cua__buffer_root(buf)) {
          snprintf(why, sizeof why,
                   "the buffer is freed by an earlier op of this submission");
          rc = CUA_ERR_FREED;
        }
      if (rc) {
        char who[256];
        cua__access_name(n, a, who, sizeof who);
        snprintf(msg, len, "%s: %s", who, why);
      }
    }
    if (rc == 0 && op->kind == CUA_OP_FREE) {
      if (cua__grow(&freed, &capfreed, nfreed + 1, sizeof *freed))
        rc = CUA_ERR_NOMEM;
      else
        freed[nfreed++] = cua__buffer_root(op->acc[0].buf);
    }
  }
  free(freed);
  return rc;
}

/* Runs @p body for each buffer state a device node of @p b touches, once per
 * distinct buffer of each node, in order. */
#define FOR_EACH_STATE(b, n, st, ...)                                          \
  for (size_t i_ = 0; i_ < (b)->n; i_++) {                                     \
    cua__node *n = (b)->order[i_];                                             \
    if (n->cls != CUA__CLASS_DEVICE)                                           \
      continue;                                                                \
    for (size_t a_ = 0; a_ < n->op->nacc; a_++) {                              \
      int dup_ = 0;                                                            \
      for (size_t k_ = 0; k_ < a_; k_++)                                       \
        if (n->op->acc[k_].buf == n->op->acc[a_].buf)                          \
          dup_ = 1;                                                            \
      if (dup_)                                                                \
        continue;                                                              \
      cua__bstate *st = cua__buffer_state(n->op->acc[a_].buf);                 \
      __VA_ARGS__                                                              \
    }                                                                          \
  }

/* Recording hazards and wiring must not fail half-way (an edge or a reader
 * lost is a wrong result, not an error): before anything changes, this
 * reserves every array cua__add_hazards() and cua__wire() may grow, for
 * the whole submission, by replaying the submission's accesses on
 * counters. The edges a node gets are at most the writers and readers its
 * buffer's state holds when it comes; a write leaves one writer and no
 * reader, a read adds a reader. Each edge is also a dependent of its
 * producer (node->want counts them): the build's edges; a writer gets one
 * from every access after it; a reader one from the next write. */
static void want(cua__node *p) {
  /* A producer done already gets no dependent (cua__wire() skips it), and
   * nothing completes while rt->lock is held. */
  if (p->state != CUA__NODE_DONE)
    p->want++;
}

static void want_writers(cua__bstate *st) {
  if (st->sim_writer != NULL)
    want(st->sim_writer);
  else
    for (size_t i = 0; i < st->nwriters; i++)
      want(st->writers[i]);
}

int cua__reserve_hazards(cua__build *b) {
  int rc = 0;
  /* Built from a plan: the build's edges are counted (b->wants), and
   * reserved already when no op accesses a buffer. */
  if (b->wants && b->naccs == 0)
    return 0;
  for (size_t i = 0; i < b->n && !b->wants; i++)
    for (size_t k = 0; k < b->order[i]->ndeps; k++)
      want(b->order[i]->deps[k].node);
  if (b->naccs > 0)
    FOR_EACH_STATE(b, n, st, {
      cua_buffer *buf = n->op->acc[a_].buf, *root = cua__buffer_root(buf);
      unsigned mode = 0;
      for (size_t k_ = a_; k_ < n->op->nacc; k_++)
        if (n->op->acc[k_].buf == buf)
          mode |= n->op->acc[k_].mode;
      if (!st->sim_on) {
        st->sim_on = 1;
        st->sim_w = st->nwriters;
        st->sim_r = st->sim_rmax = st->nreaders;
        for (size_t k_ = 0; k_ < st->nreaders; k_++)
          want(st->readers[k_]);
      }
      if (!root->planned && !root->sim_planned) {
        mode |= CUA_WRITE; /* its first access allocates it */
        root->sim_planned = 1;
      }
      if (rc == 0 && cua__edges_grow(n->rt, &n->deps, &n->capdeps,
                                     n->ndeps + st->sim_w + st->sim_r + 1,
                                     n->deps_inl) != 0)
        rc = CUA_ERR_NOMEM;
      want_writers(st);
      if (mode & CUA_WRITE) {
        st->sim_w = 1;
        st->sim_r = 0;
        st->sim_writer = n;
      } else {
        n->want++;
        if (++st->sim_r > st->sim_rmax)
          st->sim_rmax = st->sim_r;
      }
    });
  /* Make the room counted, and clear the counts (of every node counted:
   * the build's, their producers, and the states' writers and readers). */
  for (size_t i = 0; i < b->n; i++) {
    cua__node *n = b->order[i];
    if (cua__reserve_dependents(n) != 0)
      rc = CUA_ERR_NOMEM;
    for (size_t k = 0; k < n->ndeps; k++)
      if (cua__reserve_dependents(n->deps[k].node) != 0)
        rc = CUA_ERR_NOMEM;
  }
  if (b->naccs > 0)
    FOR_EACH_STATE(b, n, st, {
      cua__buffer_root(n->op->acc[a_].buf)->sim_planned = 0;
      for (size_t k_ = 0; k_ < st->nwriters; k_++)
        if (cua__reserve_dependents(st->writers[k_]) != 0)
          rc = CUA_ERR_NOMEM;
      for (size_t k_ = 0; k_ < st->nreaders; k_++)
        if (cua__reserve_dependents(st->readers[k_]) != 0)
          rc = CUA_ERR_NOMEM;
      if (st->sim_on && rc == 0 &&
          (cua__grow(&st->readers, &st->capreaders, st->sim_rmax,
                     sizeof *st->readers) != 0 ||
           cua__grow(&st->writers, &st->capwriters,
                     st->nwriters > 0 ? st->nwriters : 1,
                     sizeof *st->writers) != 0))
        rc = CUA_ERR_NOMEM;
      st->sim_on = 0;
      st->sim_w = st->sim_r = st->sim_rmax = 0;
      st->sim_writer = NULL;
    });
  return rc;
}

/* Adds the buffer hazards of @p n and records it in the buffers' states
 * (the arrays were reserved by cua__reserve_hazards(): nothing here
 * allocates). */
int cua__add_hazards(cua__node *n) {
  cua_op *op = n->op;
  int rc = 0;
  for (size_t a = 0; a < op->nacc && rc == 0; a++) {
    cua_buffer *buf = op->acc[a].buf;
    unsigned mode = op->acc[a].mode;
    /* The same buffer named twice counts once, with both modes. */
    int dup = 0;
    for (size_t k = 0; k < a; k++)
      if (op->acc[k].buf == buf)
        dup = 1;
    if (dup)
      continue;
    for (size_t k = a + 1; k < op->nacc; k++)
      if (op->acc[k].buf == buf)
        mode |= op->acc[k].mode;
    /* Allocating a lazy buffer is a write, as far as ordering goes. */
    cua_buffer *root = cua__buffer_root(buf);
    if (!root->planned) {
      mode |= CUA_WRITE;
      root->planned = 1; /* this op's LAUNCH allocates it */
    }
    cua__bstate *st = cua__buffer_state(buf);
    for (size_t i = 0; i < st->nwriters && rc == 0; i++)
      rc = cua__add_dep(n, st->writers[i],
                        (mode & CUA_READ) ? CUA__DEP_DATA : 0);
    if (mode & CUA_WRITE) {
      for (size_t i = 0; i < st->nreaders && rc == 0; i++)
        if (st->readers[i] != n)
          rc = cua__add_dep(n, st->readers[i], 0);
      if (rc)
        break;
      /* The arrays stay (reserved); their nodes are let go. */
      for (size_t i = 0; i < st->nwriters; i++)
        cua__bstate_drop(st->writers[i]);
      for (size_t i = 0; i < st->nreaders; i++)
        cua__bstate_drop(st->readers[i]);
      st->nwriters = st->nreaders = 0;
      rc = cua__bstate_add(&st->writers, &st->nwriters, &st->capwriters, n);
    } else {
      /* Forget readers that completed without failing. */
      size_t k = 0;
      for (size_t i = 0; i < st->nreaders; i++) {
        cua__node *m = st->readers[i];
        if (m->state == CUA__NODE_DONE && m->code == 0)
          cua__bstate_drop(m);
        else
          st->readers[k++] = m;
      }
      st->nreaders = k;
      rc = cua__bstate_add(&st->readers, &st->nreaders, &st->capreaders, n);
    }
  }
  if (rc == 0 && op->kind == CUA_OP_FREE)
    cua__buffer_root(op->acc[0].buf)->freed = 1;
  return rc;
}
