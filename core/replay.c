/*
 * core/replay.c: a captured graph's launches, updates and end.
 *
 * cua_graph_launch() submits one op of kind GRAPH on the graph's anchor
 * stream (chain 0's placement), which accesses the graph's buffers as its
 * ops do, taken together (make_launch_op()): the ordinary submission path
 * orders it against
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
 * Owns: graph launches, updates, the parameters' versions, freeing
 * graphs. (The pass over the schedule that a replay by the core and a
 * capture share is graphbuild.c's.)
 * Locks: g->mu (leaf) for cur and launch_op; the backend graph only under
 * the anchor stream's turn (executor.c); rt->capture_mu while an update
 * borrows the capture streams; rt->reg_lock for the registry.
 * No core lock is held while the backend is called, except where a graph
 * is freed by its last launch's node, under rt->lock (backend objects are
 * then destroyed under it, as streams are created under it).
 */
#include "config.h"
#include "graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  int rc = cua__graph_lend_streams(rt, g, msg, sizeof msg);
  uint64_t changed = 0;
  void *params[64], *ptrs[64];
  for (size_t k = 0; k < g->nops && rc == 0; k++) {
    if (gp->ops[k] == g->bg_params->ops[k])
      continue;
    cua_backend_op bo;
    rc = cua__backend_op(gp->ops[k], 0, &bo, params, ptrs,
                         cua__gop_name(gp->ops[k]), msg, sizeof msg);
    cua_backend_err err = {{0}};
    if (rc == 0)
      rc = be->graph_update_op(rt->bst, g->bg, k, g->chains[g->ops[k].chain].bs,
                               &bo, &err);
    changed += rc == 0;
  }
  cua__graph_return_streams(g);
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
  if (cua__node_results(n, g->nres) != 0)
    return CUA_ERR_NOMEM;
  for (size_t i = 0; i < g->nres; i++)
    n->results[i] = g->res[i] >= 0 ? gp->ops[g->res[i]]->hptr : NULL;
  n->result = n->results;
  return 0;
}

uint64_t cua__graph_nops(const cua_op *op) {
  return op->gparams != NULL ? (uint64_t)op->gparams->n : 1;
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

void cua__access_name(const cua__node *n, size_t a, char *out, size_t len) {
  const cua_op *op = n->op;
  const cua_buffer *buf = op->acc[a].buf;
  const cua__gparams *gp = op->kind == CUA_OP_GRAPH ? op->gparams : NULL;
  for (size_t k = 0; gp != NULL && k < gp->n; k++)
    for (size_t j = 0; j < gp->ops[k]->nacc; j++)
      if (gp->ops[k]->acc[j].buf == buf) {
        const cua_op *o = gp->ops[k];
        snprintf(out, len, "graph op '%s', buffer %zu",
                 o->hints.name ? o->hints.name : cua_op_kind_name(o->kind), j);
        return;
      }
  snprintf(out, len, "op '%s', buffer %zu", cua__node_name(n), a);
}

/* ----------------------------------------------------------------- API */

static int graph_dead(const cua_graph *g, const char *what) {
  if (g->dead || atomic_load(&g->rt->closed))
    return cua__fail(g->rt, CUA_ERR_CANCELED,
                     "%s: the graph's runtime is closing or closed", what);
  return 0;
}

/* A GRAPH op for @p gp: every buffer its ops touch, each once: written
 * when one of them writes it, and read only when one reads it before any
 * of them wrote it (gp->ops are in placement order, which follows every
 * edge between them, hazards included), as the ordinary path would have
 * it for the same ops submitted. A launch then does not consume what its
 * own ops overwrite first: a buffer left failed by an earlier launch or
 * submission fails only the launches that read it, and a graph whose
 * first op writes it recovers it. A buffer is known by the handle its ops
 * name (a tile and its parent are two), so a read of a tile after a write
 * of its parent still reads: conservative, never less than the union. */
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
  unsigned char *written = cua__calloc(cap, 1);
  if (keys == NULL || slot == NULL || written == NULL || op->name == NULL)
    rc = CUA_ERR_NOMEM;
  for (size_t k = 0; k < gp->n && rc == 0; k++) {
    const cua_op *o = gp->ops[k];
    /* Reads first, against the writes of the ops before this one (an op
     * that reads and writes a buffer reads what was there). */
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
      for (size_t a = 0; a < o->nacc && rc == 0; a++) {
        cua_buffer *b = o->acc[a].buf;
        unsigned m = (unsigned)o->acc[a].mode;
        size_t h = cua__ptr_hash(b, cap);
        while (keys[h] != NULL && keys[h] != b)
          h = (h + 1) & (cap - 1);
        if (keys[h] == NULL) {
          keys[h] = b;
          slot[h] = op->nacc;
          rc = cua__op_add_access(op, b, (cua_access_mode)0);
          if (rc != 0)
            break;
        }
        if (pass == 0 && (m & CUA_READ) && !written[h])
          op->acc[slot[h]].mode |= CUA_READ;
        if (pass == 1 && (m & CUA_WRITE)) {
          op->acc[slot[h]].mode |= CUA_WRITE;
          written[h] = 1;
        }
      }
    }
  }
  free(keys);
  free(slot);
  free(written);
  if (rc != 0) {
    cua_op_destroy(op);
    return rc;
  }
  *out = op;
  return 0;
}

int cua__graph_launch(cua_future **fut, cua_graph *g, const char *fn) {
  if (fut != NULL)
    *fut = NULL;
  if (fut == NULL || g == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "%s: NULL argument", fn);
  if (graph_dead(g, fn))
    return CUA_ERR_CANCELED;
  cua__graphs_reap(g->rt);
  pthread_mutex_lock(&g->mu);
  int rc = 0;
  cua_op *op = NULL;
  if (g->launch_op != NULL) {
    op = cua_op_retain(g->launch_op);
  } else {
    rc = make_launch_op(g, g->cur, &op);
    if (rc == 0 && !g->destroyed)
      g->launch_op = cua_op_retain(op);
  }
  pthread_mutex_unlock(&g->mu);
  if (rc != 0)
    return cua__fail(g->rt, rc, "%s: out of host memory", fn);
  rc = cua_submit_on(fut, g->rt, op, g->anchor.device, g->anchor.stream);
  cua_op_destroy(op);
  if (rc != 0) {
    /* The submission's refusal, named as @p fn's. */
    const char *m = cua_runtime_error(g->rt);
    static const char sub[] = "cua_submit: ";
    char copy[CUA__ERRLEN];
    snprintf(copy, sizeof copy, "%s",
             strncmp(m, sub, sizeof sub - 1) == 0 ? m + sizeof sub - 1 : m);
    return cua__fail(g->rt, rc, "%s: %s", fn, copy);
  }
  atomic_fetch_add(&g->launches, 1);
  atomic_fetch_add(&g->rt->n_graph_launches, 1);
  return 0;
}

int cua_graph_launch(cua_future **fut, cua_graph *g) {
  return cua__graph_launch(fut, g, "cua_graph_launch");
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

/* The index of @p op among @p g's ops, or -1 with @p what's error set. */
static long op_index(const cua_graph *g, const cua_op *op, const char *what) {
  long k = cua__graph_find(g, op);
  if (k < 0)
    cua__fail(g->rt, CUA_ERR_INVAL,
              "%s: op '%s' is not one of the graph's device ops", what,
              cua__gop_name(op));
  return k;
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
  long k = op_index(g, captured, "cua_graph_update");
  if (k < 0)
    return CUA_ERR_INVAL;
  char msg[CUA__ERRLEN];
  pthread_mutex_lock(&g->mu);
  cua__gparams *cur = g->cur;
  if (!same_structure(cur->ops[k], replacement, msg, sizeof msg)) {
    pthread_mutex_unlock(&g->mu);
    return cua__fail(g->rt, CUA_ERR_STRUCTURE,
                     "cua_graph_update: op '%s' cannot be replaced by op "
                     "'%s': %s",
                     cua__gop_name(captured), cua__gop_name(replacement), msg);
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
                           cua__gop_name(captured), cua__gop_name(replacement),
                           a, cua__gop_name(o));
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
  v.build_ns = g->build_ns;
  v.finish_ns = atomic_load(&((cua_graph *)g)->finish_ns);
  memcpy(info, &v, v.size);
  return 0;
}

int cua_graph_placement(const cua_graph *g, const cua_op *op,
                        cua_placement *where) {
  if (g == NULL || op == NULL || where == NULL)
    return cua__fail(g != NULL ? g->rt : NULL, CUA_ERR_INVAL,
                     "cua_graph_placement: NULL argument");
  long k = op_index(g, op, "cua_graph_placement");
  if (k < 0)
    return CUA_ERR_INVAL;
  *where = g->chains[g->ops[k].chain].pl;
  return 0;
}

void cua_graph_destroy(cua_graph *g) {
  if (g == NULL)
    return;
  pthread_mutex_lock(&g->mu);
  cua_op *op = g->launch_op;
  g->launch_op = NULL;
  g->destroyed = 1;
  pthread_mutex_unlock(&g->mu);
  /* The launch op holds the graph: dropping it first lets the graph go. */
  cua_runtime *rt = g->rt;
  int dead = g->dead;
  cua_op_destroy(op);
  cua__graph_release(g);
  if (!dead)
    cua__graphs_reap(rt);
}
