/*
 * core/cycles.c: a build's cycles (CUA_ERR_CYCLE), looked for before
 * anything of the submission is committed.
 *
 * An op that appears twice in one DAG is built once; a then that places
 * it after itself (then(S, S), then(S, then(T, S))) would make its node
 * wait for itself. Nodes are made in post-order with increasing ids, and
 * every edge of a build runs from a lower id to a higher one (inputs are
 * built first, a then's first part before its next part), except a then's
 * edge to an op built before its first part, which is only possible when
 * an op appears twice: only then can a build have a cycle, so only then
 * is it looked for, a depth-first walk over the edges within the build.
 *
 * The walk counts the buffer hazards between the build's own ops too, as
 * the submission adds them next (cua__add_hazards(), in build order): in
 * zip(X, then(G, X)), with G and X writing one buffer, G follows X for
 * the buffer and X follows G for the then. That cycle was accepted and
 * hung its submission, every later use of the buffer, and the runtime's
 * destruction. A hazard is known here by the buffer handle the ops name
 * (a tile and its parent are two), so that no DAG without a cycle is
 * refused.
 *
 * Runs under rt->lock, in a submission's build (submit.c) or a capture
 * (capture.c); uses the nodes' scratch field.
 */
#include "config.h"
#include "graphs.h" /* (cua__ptr_hash()) */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The build's own hazards as edges: for the node at position i of
 * b->order, the nodes dep[off[i]] to dep[off[i + 1] - 1] it must follow
 * for its buffers. An access conflicts with each earlier one of another
 * node to the same buffer handle where one of the two writes. */
typedef struct hazard_edges {
  size_t *off;
  cua__node **dep;
  /* Positions by node, open-addressed (cap a power of two). */
  const cua__node **key;
  size_t *pos;
  size_t cap;
} hazard_edges;

static void hazard_edges_free(hazard_edges *h) {
  free(h->off);
  free(h->dep);
  free(h->key);
  free(h->pos);
}

static size_t position(const hazard_edges *h, const cua__node *n) {
  size_t k = cua__ptr_hash(n, h->cap);
  while (h->key[k] != n)
    k = (k + 1) & (h->cap - 1);
  return h->pos[k];
}

/* One access of a device node, in build order. */
typedef struct access {
  const cua_buffer *buf;
  unsigned mode;
  cua__node *n;
} access;

static int hazard_edges_make(const cua__build *b, hazard_edges *h) {
  memset(h, 0, sizeof *h);
  size_t nacc = 0;
  for (size_t i = 0; i < b->n; i++)
    if (b->order[i]->cls == CUA__CLASS_DEVICE && b->order[i]->op != NULL)
      nacc += b->order[i]->op->nacc;
  h->cap = 16;
  while (h->cap < 2 * b->n)
    h->cap *= 2;
  access *acc = cua__malloc((nacc > 0 ? nacc : 1) * sizeof *acc);
  h->off = cua__calloc(b->n + 1, sizeof *h->off);
  h->key = cua__calloc(h->cap, sizeof *h->key);
  h->pos = cua__malloc(h->cap * sizeof *h->pos);
  if (acc == NULL || h->off == NULL || h->key == NULL || h->pos == NULL) {
    free(acc);
    hazard_edges_free(h);
    return CUA_ERR_NOMEM;
  }
  for (size_t i = 0; i < b->n; i++) {
    size_t k = cua__ptr_hash(b->order[i], h->cap);
    while (h->key[k] != NULL)
      k = (k + 1) & (h->cap - 1);
    h->key[k] = b->order[i];
    h->pos[k] = i;
  }
  /* Two passes: count the edges, then fill them in. A DAG that uses one
   * buffer in every op has as many edges as pairs of ops: this runs only
   * for a build with an op twice and a then backwards. */
  for (int fill = 0; fill < 2; fill++) {
    size_t na = 0, ne = 0;
    for (size_t i = 0; i < b->n; i++) {
      cua__node *n = b->order[i];
      if (fill)
        ne = h->off[i];
      else
        h->off[i] = ne;
      if (n->cls != CUA__CLASS_DEVICE || n->op == NULL)
        continue;
      const cua_op *op = n->op;
      for (size_t a = 0; a < op->nacc; a++) {
        unsigned mode = (unsigned)op->acc[a].mode;
        for (size_t j = 0; j < na; j++)
          if (acc[j].n != n && acc[j].buf == op->acc[a].buf &&
              ((acc[j].mode | mode) & CUA_WRITE)) {
            if (fill)
              h->dep[ne] = acc[j].n;
            ne++;
          }
      }
      for (size_t a = 0; a < op->nacc; a++)
        acc[na++] = (access){op->acc[a].buf, (unsigned)op->acc[a].mode, n};
    }
    if (!fill) {
      h->off[b->n] = ne;
      h->dep = cua__malloc((ne > 0 ? ne : 1) * sizeof *h->dep);
      if (h->dep == NULL) {
        free(acc);
        hazard_edges_free(h);
        return CUA_ERR_NOMEM;
      }
    }
  }
  free(acc);
  return 0;
}

int cua__check_cycles(cua__build *b, char *msg, size_t len) {
  if (!b->backward)
    return 0;
  hazard_edges h;
  int rc = hazard_edges_make(b, &h);
  if (rc != 0)
    return rc;
  typedef struct frame {
    cua__node *n;
    size_t pos, next; /* next: the deps, then the hazard edges */
  } frame;
  size_t cap = 64, depth = 0;
  frame *st = cua__malloc(cap * sizeof *st);
  if (st == NULL) {
    hazard_edges_free(&h);
    return CUA_ERR_NOMEM;
  }
  for (size_t i = 0; i < b->n; i++)
    b->order[i]->scratch = 0;
  for (size_t i = 0; i < b->n && rc == 0; i++) {
    if (b->order[i]->scratch != 0)
      continue;
    b->order[i]->scratch = 1; /* on the walk's path */
    st[depth++] = (frame){b->order[i], i, 0};
    while (depth > 0 && rc == 0) {
      frame *f = &st[depth - 1];
      size_t nh = h.off[f->pos + 1] - h.off[f->pos];
      if (f->next == f->n->ndeps + nh) {
        f->n->scratch = 2; /* done: no cycle through it */
        depth--;
        continue;
      }
      int hazard = f->next >= f->n->ndeps;
      cua__node *p = hazard ? h.dep[h.off[f->pos] + (f->next - f->n->ndeps)]
                            : f->n->deps[f->next].node;
      f->next++;
      if (p->op == NULL || cua__build_get(b, p->op) != p || p->scratch == 2)
        continue;
      if (p->scratch == 1) {
        snprintf(msg, len,
                 "op '%s' would have to run after itself: a then places an "
                 "op after itself%s (the same op twice in one DAG runs once)",
                 cua__node_name(p),
                 hazard ? ", or after an op that must follow it for a buffer"
                        : "");
        rc = CUA_ERR_CYCLE;
        break;
      }
      if (depth == cap) {
        frame *s2 = cua__realloc(st, 2 * cap * sizeof *st);
        if (s2 == NULL) {
          rc = CUA_ERR_NOMEM;
          break;
        }
        st = s2;
        cap *= 2;
      }
      p->scratch = 1;
      st[depth++] = (frame){p, position(&h, p), 0};
    }
  }
  free(st);
  hazard_edges_free(&h);
  return rc;
}
