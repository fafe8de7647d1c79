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

/* Records an event at the current end of @p s: after the last op enqueued
 * on the backend, which may be before ops already placed on @p s. */
cua__point *cua__record_point(cua_runtime *rt, cua__stream *s) {
  if (s->points_tail != NULL && s->points_tail->seq == s->launched)
    return s->points_tail;
  cua__point *p = cua__calloc(1, sizeof *p);
  if (p == NULL)
    return NULL;
  if (cua__event_get(rt, s->device, &p->event) != 0) {
    free(p);
    return NULL;
  }
  if (rt->be->event_record(rt->bst, p->event, s->bs) != 0) {
    cua__event_put(rt, s->device, p->event);
    free(p);
    return NULL;
  }
  rt->stats.events_recorded++;
  p->seq = s->launched;
  if (vc_fit(&s->vc, &s->nvc, (size_t)s->gidx + 1) == 0) {
    s->vc[s->gidx] = s->launched;
    p->vc = cua__malloc(s->nvc * sizeof *p->vc);
    if (p->vc != NULL) {
      memcpy(p->vc, s->vc, s->nvc * sizeof *p->vc);
      p->nvc = s->nvc;
    }
  }
  if (s->points_tail)
    s->points_tail->next = p;
  else
    s->points_head = p;
  s->points_tail = p;
  return p;
}

/* Makes stream @p t wait until stream @p s has reached @p seq, unless it
 * is already ordered after that point. */
int cua__wait_for(cua_runtime *rt, cua__stream *t, cua__stream *s, uint64_t seq,
                  cua__point *hint) {
  if (s == t || seq <= s->done)
    return 0;
  if ((size_t)s->gidx < t->nvc && t->vc[s->gidx] >= seq)
    return 0;
  /* The producer's own event, when it has one, is the right point; it is
   * still alive, since points go only once their stream is done past them.
   * Otherwise the first point at or after seq. */
  cua__point *p = hint != NULL && hint->seq >= seq ? hint : s->points_head;
  while (p != NULL && p->seq < seq)
    p = p->next;
  if (p == NULL && (p = cua__record_point(rt, s)) == NULL)
    return CUA_ERR_NOMEM;
  int rc = rt->be->stream_wait_event(rt->bst, t->bs, p->event);
  if (rc)
    return rc;
  rt->stats.event_waits++;
  if (vc_fit(&t->vc, &t->nvc,
             p->nvc > (size_t)s->gidx + 1 ? p->nvc : (size_t)s->gidx + 1) ==
      0) {
    for (size_t i = 0; i < p->nvc; i++)
      if (p->vc[i] > t->vc[i])
        t->vc[i] = p->vc[i];
    if (t->vc[s->gidx] < p->seq)
      t->vc[s->gidx] = p->seq;
  }
  return 0;
}

int cua__validate(cua__build *b, char *msg, size_t len) {
  int rc = 0;
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
      if (rc)
        snprintf(msg, len, "op '%s', buffer %zu: %s", cua__node_name(n), a,
                 why);
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

/* Adds the buffer hazards of @p n and records it in the buffers' states. */
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
    if (cua__buffer_root(buf)->ptr == NULL)
      mode |= CUA_WRITE;
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
      cua__bstate old = *st;
      memset(st, 0, sizeof *st);
      rc = cua__bstate_add(&st->writers, &st->nwriters, &st->capwriters, n);
      cua__bstate_clear(&old);
    } else {
      /* Forget readers that completed without failing. */
      size_t k = 0;
      for (size_t i = 0; i < st->nreaders; i++) {
        cua__node *m = st->readers[i];
        if (m->state == CUA__NODE_DONE && m->code == 0)
          cua__node_release(m);
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

/* Counts what each node still waits for and registers it with its
 * producers; nodes with nothing to wait for go to the round's queues. */
