/*
 * core/graphcache.c: [runtime] graphs = auto: DAGs submitted again and again
 * are replayed as graphs.
 *
 * A submission is known by its root op (and the policy it names): ops are
 * immutable once submitted, so the same root is the same DAG with the same
 * parameters. The first submission of a root runs as usual and is
 * remembered; the second captures the DAG (cua_graph_create(), placed by
 * the same policy) and launches it; later ones launch it. A DAG that cannot
 * be captured (host steps, stream functions...) is remembered as such and
 * always submitted as usual; so is one whose root has a result
 * (memcpy_d2h, zip, unzip), which a graph's future would not give. At most
 * [runtime] graph_cache roots are remembered: the least recently submitted
 * goes first, and a root that only the cache still holds (the application
 * dropped its DAG) is dropped at the next lookup. Changing the runtime's
 * or a device's policy forgets every graph (they were placed by the old
 * one).
 *
 * Owns: the cache. Locks: gcache_mu (a leaf) guards the entries; graphs
 * are created, launched and destroyed with no lock held.
 */
#include "config.h"
#include "graphs.h"

#include <stdlib.h>
#include <string.h>

enum {
  GE_SEEN = 0,  /* submitted once */
  GE_CAPTURING, /* a thread is capturing it */
  GE_GRAPH,     /* captured: launches replay it */
  GE_REFUSED    /* cannot be captured: submitted as usual */
};

typedef struct cua__gentry {
  cua_op *root; /* held */
  cua__polinst *pol;
  cua_graph *g; /* GE_GRAPH: the cache's handle */
  int state;
  uint64_t last; /* gcache_clock at its last submission */
} cua__gentry;

/* Whether the root's result is none: the graph launch's future has none. */
static int result_none(const cua_op *op) {
  for (int depth = 0; op->kind == CUA_OP_THEN && op->ninputs == 2; depth++) {
    if (depth > 100000)
      return 0;
    op = op->inputs[1];
  }
  return op->kind != CUA_OP_ZIP && op->kind != CUA_OP_UNZIP &&
         op->kind != CUA_OP_MEMCPY_D2H && op->kind != CUA_OP_ALLOC &&
         op->kind != CUA_OP_SHARED;
}

/* Entries to drop once gcache_mu is released. */
typedef struct victims {
  cua_op *op[8];
  cua_graph *g[8];
  size_t n;
} victims;

static void drop(cua_runtime *rt, victims *v) {
  for (size_t i = 0; i < v->n; i++) {
    cua_graph_destroy(v->g[i]);
    cua_op_destroy(v->op[i]);
    atomic_fetch_add(&rt->n_graph_evictions, 1);
  }
  v->n = 0;
}

/* Removes entry @p i into @p v (which has room). Under gcache_mu. */
static void remove_at(cua_runtime *rt, size_t i, victims *v) {
  v->op[v->n] = rt->gcache[i].root;
  v->g[v->n] = rt->gcache[i].g;
  v->n++;
  rt->gcache[i] = rt->gcache[--rt->ngcache];
}

int cua__gcache_submit(cua_runtime *rt, cua_op *op, cua__polinst *pol,
                       cua_future **fut, int *rc) {
  if (rt->cfg->graphs != CUA__GRAPHS_AUTO || !result_none(op) ||
      atomic_load(&rt->closed))
    return 0;
  victims v;
  v.n = 0;
  pthread_mutex_lock(&rt->gcache_mu);
  if (rt->gcache == NULL) {
    rt->gcache = cua__calloc((size_t)rt->cfg->graph_cache, sizeof *rt->gcache);
    if (rt->gcache == NULL) {
      pthread_mutex_unlock(&rt->gcache_mu);
      return 0;
    }
  }
  /* Roots the application let go of can never be submitted again. */
  for (size_t i = 0; i < rt->ngcache && v.n < 4;)
    if (rt->gcache[i].root != op && rt->gcache[i].state != GE_CAPTURING &&
        atomic_load(&rt->gcache[i].root->refs) == 1)
      remove_at(rt, i, &v);
    else
      i++;
  cua__gentry *e = NULL;
  for (size_t i = 0; i < rt->ngcache && e == NULL; i++)
    if (rt->gcache[i].root == op && rt->gcache[i].pol == pol)
      e = &rt->gcache[i];
  uint64_t now = ++rt->gcache_clock;
  if (e == NULL) {
    if (rt->ngcache == (size_t)rt->cfg->graph_cache) {
      size_t lru = SIZE_MAX;
      for (size_t i = 0; i < rt->ngcache; i++)
        if (rt->gcache[i].state != GE_CAPTURING &&
            (lru == SIZE_MAX || rt->gcache[i].last < rt->gcache[lru].last))
          lru = i;
      if (lru != SIZE_MAX)
        remove_at(rt, lru, &v);
    }
    if (rt->ngcache < (size_t)rt->cfg->graph_cache) {
      e = &rt->gcache[rt->ngcache++];
      memset(e, 0, sizeof *e);
      e->root = cua_op_retain(op);
      e->pol = pol;
      e->state = GE_SEEN;
      e->last = now;
    }
    pthread_mutex_unlock(&rt->gcache_mu);
    drop(rt, &v);
    return 0;
  }
  e->last = now;
  if (e->state == GE_SEEN) {
    e->state = GE_CAPTURING;
    pthread_mutex_unlock(&rt->gcache_mu);
    drop(rt, &v);
    cua_graph_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.policy = (cua_policy *)pol;
    cua_graph *g = NULL;
    int crc = cua_graph_create(&g, rt, op, &o);
    pthread_mutex_lock(&rt->gcache_mu);
    /* The entry may have moved (others were removed), and is gone only
     * when the cache was cleared (a policy change): a capturing entry is
     * never evicted. */
    e = NULL;
    for (size_t i = 0; i < rt->ngcache && e == NULL; i++)
      if (rt->gcache[i].root == op && rt->gcache[i].pol == pol)
        e = &rt->gcache[i];
    if (e == NULL) { /* the cache was cleared meanwhile: keep nothing */
      pthread_mutex_unlock(&rt->gcache_mu);
      cua_graph_destroy(g);
      return 0;
    }
    /* A DAG that cannot be captured is not tried again; nor one whose
     * capture failed otherwise (the submission as usual reports it). */
    e->state = crc == 0 ? GE_GRAPH : GE_REFUSED;
    e->g = g;
    if (crc != 0) {
      pthread_mutex_unlock(&rt->gcache_mu);
      return 0;
    }
  } else if (e->state != GE_GRAPH) {
    pthread_mutex_unlock(&rt->gcache_mu);
    drop(rt, &v);
    return 0;
  }
  /* A hold of our own: an eviction by another thread cannot free it. */
  cua_graph *g = e->g;
  atomic_fetch_add(&g->refs, 1);
  pthread_mutex_unlock(&rt->gcache_mu);
  drop(rt, &v);
  *rc = cua_graph_launch(fut, g);
  if (*rc == 0)
    atomic_fetch_add(&rt->n_graph_replays, 1);
  cua__graph_release(g);
  cua__graphs_reap(rt);
  return 1;
}

void cua__gcache_clear(cua_runtime *rt) {
  pthread_mutex_lock(&rt->gcache_mu);
  cua__gentry *v = rt->gcache;
  size_t n = rt->ngcache;
  rt->gcache = NULL;
  rt->ngcache = 0;
  pthread_mutex_unlock(&rt->gcache_mu);
  for (size_t i = 0; i < n; i++) {
    cua_graph_destroy(v[i].g);
    cua_op_destroy(v[i].root);
  }
  free(v);
}
