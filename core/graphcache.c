/*
 * core/graphcache.c: [runtime] graphs = auto | always: DAGs submitted again
 * and again are replayed as graphs.
 *
 * A submission is known by its DAG's fingerprint: its ops in a canonical
 * order (breadth first from the root, inputs in order), and for each op
 * what decides the schedule and the hazards: its kind, its inputs (as
 * positions in that order), its buffers and their modes, its hints (the
 * policy's inputs: device, tag, cost, bytes, flops, priority; but for the
 * ones its constructor derived from a parameter: hint_bytes()) and, for a
 * kernel, the function and which arguments are buffers. Two DAGs with the
 * same fingerprint differ at most in their ops' parameters: scalars, host
 * pointers and ranges, kernel argument values and geometry. They are made
 * of other op objects, as a loop that builds its step anew each time
 * makes them; the same root submitted again has the same fingerprint too.
 *
 * In auto mode the first submission of a fingerprint runs as usual and is
 * remembered; the second captures its DAG (cua_graph_create(), placed by
 * the same policy) and launches it; later ones launch it, after updating
 * the ops whose parameters differ from the graph's (cua_graph_update()).
 * In always mode the first submission captures. A DAG that cannot be
 * captured (host steps, stream functions...) is remembered as such and
 * submitted as usual; so is one whose result a launch's future would not
 * give (a zip of zips, an unzip: see cua_graph_launch()). A DAG whose
 * structure changed has another fingerprint: it is captured as a graph of
 * its own.
 *
 * At most [runtime] graph_cache fingerprints are remembered: the least
 * recently submitted goes first. cua_buffer_destroy() drops the entries
 * whose ops use the buffer, cua_policy_close() those its policy placed;
 * changing the runtime's or a device's policy forgets every entry (they
 * were placed by the old one).
 *
 * Owns: the cache (rt->gcache, a list in order of use). Locks: gcache_mu
 * guards the list and the entries, and is taken before a graph's mu (to
 * read its parameters) and nothing else. A graph is created, updated and
 * launched with gcache_mu released, under the graph's auto_mu (taken
 * before its mu and rt->lock), so that one submission's updates and its
 * launch are not interleaved with another's.
 */
#include "config.h"
#include "graphs.h"

#include <stdlib.h>
#include <string.h>

enum {
  GE_SEEN = 0,  /* submitted once (auto) */
  GE_CAPTURING, /* a thread is capturing it */
  GE_GRAPH,     /* captured: submissions launch it */
  GE_REFUSED    /* cannot be captured: submitted as usual */
};

typedef struct cua__gentry {
  struct cua__gentry *next; /* rt->gcache, most recently used first */
  uint64_t hash;
  cua__polinst *pol;
  uint64_t *sig; /* the fingerprint's words */
  size_t nsig;
  cua_op *root;   /* held: the DAG the fingerprint was taken from */
  cua_op **canon; /* root's ops in canonical order (held through root) */
  size_t ncanon;
  cua_buffer **bufs; /* the buffers the ops use (held through root) */
  size_t nbufs;
  cua_graph *g; /* GE_GRAPH: the cache's handle */
  /* GE_GRAPH: the root last launched (not held: a hint, checked against
   * g->auto_root under g->auto_mu). */
  const cua_op *fast_root;
  int state;
  int stale; /* GE_CAPTURING: a buffer of it was destroyed meanwhile */
} cua__gentry;

/* ------------------------------------------------------------ fingerprint */

/* Past this many ops a DAG is submitted as usual. */
#define FP_MAX_OPS ((size_t)1 << 20)

typedef struct fp {
  cua_op **ops; /* canonical order */
  size_t n, cap;
  uint64_t *sig;
  size_t nsig, capsig;
  size_t *tab; /* op -> position + 1, open addressing */
  size_t tabcap;
  cua_op *ops_inl[32];
  uint64_t sig_inl[512];
  size_t tab_inl[64];
} fp;

static void fp_init(fp *f) {
  f->ops = f->ops_inl;
  f->n = 0;
  f->cap = sizeof f->ops_inl / sizeof *f->ops_inl;
  f->sig = f->sig_inl;
  f->nsig = 0;
  f->capsig = sizeof f->sig_inl / sizeof *f->sig_inl;
  f->tab = f->tab_inl;
  f->tabcap = sizeof f->tab_inl / sizeof *f->tab_inl;
  memset(f->tab, 0, sizeof f->tab_inl);
}

static void fp_free(fp *f) {
  if (f->ops != f->ops_inl)
    free(f->ops);
  if (f->sig != f->sig_inl)
    free(f->sig);
  if (f->tab != f->tab_inl)
    free(f->tab);
}

/* Doubles an array that starts in inline storage @p inl. */
static int grow(void **p, size_t *cap, size_t elem, const void *inl) {
  size_t nc = *cap * 2;
  void *np;
  if (*p == inl) {
    np = malloc(nc * elem);
    if (np != NULL)
      memcpy(np, *p, *cap * elem);
  } else {
    np = realloc(*p, nc * elem);
  }
  if (np == NULL)
    return 0;
  *p = np;
  *cap = nc;
  return 1;
}

static int push(fp *f, uint64_t w) {
  if (f->nsig == f->capsig &&
      !grow((void **)&f->sig, &f->capsig, sizeof *f->sig, f->sig_inl))
    return 0;
  f->sig[f->nsig++] = w;
  return 1;
}

static int rehash(fp *f) {
  size_t nc = f->tabcap * 2;
  size_t *nt = calloc(nc, sizeof *nt);
  if (nt == NULL)
    return 0;
  for (size_t i = 0; i < f->n; i++) {
    size_t h = cua__ptr_hash(f->ops[i], nc);
    while (nt[h] != 0)
      h = (h + 1) & (nc - 1);
    nt[h] = i + 1;
  }
  if (f->tab != f->tab_inl)
    free(f->tab);
  f->tab = nt;
  f->tabcap = nc;
  return 1;
}

/* The canonical position of @p op, given the next one if it is new; -1 when
 * out of memory or past FP_MAX_OPS. */
static long position(fp *f, cua_op *op) {
  size_t h = cua__ptr_hash(op, f->tabcap);
  while (f->tab[h] != 0) {
    if (f->ops[f->tab[h] - 1] == op)
      return (long)(f->tab[h] - 1);
    h = (h + 1) & (f->tabcap - 1);
  }
  if (f->n >= FP_MAX_OPS)
    return -1;
  if (f->n == f->cap &&
      !grow((void **)&f->ops, &f->cap, sizeof *f->ops, f->ops_inl))
    return -1;
  f->ops[f->n] = op;
  f->tab[h] = ++f->n;
  if (f->n * 2 > f->tabcap && !rehash(f))
    return -1;
  return (long)(f->n - 1);
}

static uint64_t str_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  if (s == NULL)
    return 0;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h | 1;
}

static uint64_t fn_word(const void *fnp, size_t size) {
  uint64_t w = 0;
  memcpy(&w, fnp, size < sizeof w ? size : sizeof w);
  return w;
}

/* A hint the op's constructor derives from a parameter, and that still
 * says what it said (a memset's or a memcpy's bytes: its length; a spin's
 * cost: its duration), is that parameter, not a hint of the fingerprint:
 * the step changes size or duration from one submission to the next and
 * is still replayed, updated. */
#define DERIVED ((uint64_t)0xde71fedull)
static uint64_t hint_bytes(const cua_op *op) {
  switch (op->kind) {
  case CUA_OP_MEMSET:
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMCPY_D2D:
    return op->hints.bytes == op->bytes ? DERIVED : op->hints.bytes;
  default:
    return op->hints.bytes;
  }
}
static uint64_t hint_cost(const cua_op *op) {
  return op->kind == CUA_OP_SPIN && op->hints.cost_ns == op->spin.ns
             ? DERIVED
             : op->hints.cost_ns;
}

/* Takes the fingerprint of the DAG ending at @p root. 0 when it cannot
 * (out of memory, too large). */
static int fp_walk(fp *f, cua_op *root) {
  if (position(f, root) < 0)
    return 0;
  for (size_t i = 0; i < f->n; i++) {
    const cua_op *op = f->ops[i];
    int ok = push(f, (uint64_t)op->kind) && push(f, op->ninputs);
    for (size_t k = 0; k < op->ninputs && ok; k++) {
      long at = position(f, op->inputs[k]);
      ok = at >= 0 && push(f, (uint64_t)at);
    }
    ok = ok && push(f, op->nacc);
    for (size_t a = 0; a < op->nacc && ok; a++)
      ok = push(f, (uint64_t)(uintptr_t)op->acc[a].buf) &&
           push(f, (uint64_t)op->acc[a].mode);
    ok = ok && push(f, (uint64_t)(int64_t)op->hints.device) &&
         push(f, hint_cost(op)) && push(f, hint_bytes(op)) &&
         push(f, op->hints.flops) &&
         push(f, (uint64_t)(int64_t)op->hints.priority) &&
         push(f, str_hash(op->hints.tag));
    switch (op->kind) {
    case CUA_OP_KERNEL:
      ok = ok && push(f, (uint64_t)(uintptr_t)op->mod) &&
           push(f, (uint64_t)(uintptr_t)op->kernel) && push(f, op->nargs);
      for (size_t a = 0; a < op->nargs && ok; a++)
        ok = push(f, (uint64_t)(int64_t)op->argbuf[a]);
      break;
    case CUA_OP_UNZIP:
      ok = ok && push(f, op->index);
      break;
    case CUA_OP_FUNC:
      ok = ok && push(f, fn_word(&op->fn, sizeof op->fn));
      break;
    case CUA_OP_HOST:
      ok = ok && push(f, fn_word(&op->host_fn, sizeof op->host_fn));
      break;
    case CUA_OP_MAP:
      ok = ok && push(f, fn_word(&op->map_fn, sizeof op->map_fn));
      break;
    default:
      break;
    }
    if (!ok)
      return 0;
  }
  return 1;
}

static uint64_t sig_hash(const uint64_t *w, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (size_t i = 0; i < n; i++) {
    h ^= w[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

/* Whether the entry was taken from a DAG with fingerprint @p f. */
static int same_dag(const cua__gentry *e, uint64_t hash, cua__polinst *pol,
                    const fp *f) {
  if (e->hash != hash || e->pol != pol || e->nsig != f->nsig ||
      e->ncanon != f->n ||
      memcmp(e->sig, f->sig, f->nsig * sizeof *f->sig) != 0)
    return 0;
  for (size_t i = 0; i < f->n; i++) { /* tags were compared as hashes */
    const char *a = e->canon[i]->hints.tag, *b = f->ops[i]->hints.tag;
    if (a != b && (a == NULL || b == NULL || strcmp(a, b) != 0))
      return 0;
  }
  return 1;
}

/* Whether device ops @p a and @p b of the same structure run the same. */
static int same_params(const cua_op *a, const cua_op *b) {
  if (a == b)
    return 1;
  if (a->kind == CUA_OP_KERNEL)
    return a->nargs == b->nargs && a->argbytes == b->argbytes &&
           a->shared_bytes == b->shared_bytes &&
           memcmp(a->grid, b->grid, sizeof a->grid) == 0 &&
           memcmp(a->block, b->block, sizeof a->block) == 0 &&
           (a->nargs == 0 ||
            memcmp(a->argoff, b->argoff, a->nargs * sizeof *a->argoff) == 0) &&
           (a->argbytes == 0 ||
            memcmp(a->argdata, b->argdata, a->argbytes) == 0);
  return a->hptr == b->hptr && a->dst_off == b->dst_off &&
         a->src_off == b->src_off && a->bytes == b->bytes &&
         memcmp(&a->value, &b->value, sizeof a->value) == 0 &&
         a->byte_value == b->byte_value && a->spin.ns == b->spin.ns &&
         a->spin.blocks == b->spin.blocks;
}

/* ------------------------------------------------------------------ cache */

static void entry_free(cua__gentry *e) {
  cua_graph_destroy(e->g);
  cua_op_destroy(e->root);
  free(e->sig);
  free(e->canon);
  free(e->bufs);
  free(e);
}

/* Frees a list of entries removed from the cache, with gcache_mu released. */
static void drop(cua_runtime *rt, cua__gentry *v) {
  while (v != NULL) {
    cua__gentry *next = v->next;
    if (v->g != NULL) /* the count is of graphs */
      atomic_fetch_add(&rt->n_graph_evictions, 1);
    entry_free(v);
    v = next;
  }
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (cua_buffer *const *)a;
  uintptr_t y = (uintptr_t) * (cua_buffer *const *)b;
  return x < y ? -1 : x > y;
}

/* Gives @p e the fingerprint @p f of the DAG ending at @p root (held by
 * the caller): copies of its words and ops, and its buffers; *old_root is
 * the root the entry held before (to release with no lock held). Returns
 * 0 when out of memory (the entry unchanged). */
static int entry_take(cua__gentry *e, cua_op *root, const fp *f,
                      cua_op **old_root) {
  uint64_t *sig = malloc(f->nsig * sizeof *sig);
  cua_op **canon = malloc(f->n * sizeof *canon);
  size_t nacc = 0;
  for (size_t i = 0; i < f->n; i++)
    nacc += f->ops[i]->nacc;
  cua_buffer **bufs = malloc((nacc ? nacc : 1) * sizeof *bufs);
  if (sig == NULL || canon == NULL || bufs == NULL) {
    free(sig);
    free(canon);
    free(bufs);
    return 0;
  }
  memcpy(sig, f->sig, f->nsig * sizeof *sig);
  memcpy(canon, f->ops, f->n * sizeof *canon);
  size_t nb = 0;
  for (size_t i = 0; i < f->n; i++)
    for (size_t a = 0; a < f->ops[i]->nacc; a++)
      bufs[nb++] = f->ops[i]->acc[a].buf;
  qsort(bufs, nb, sizeof *bufs, cmp_ptr);
  size_t u = 0;
  for (size_t i = 0; i < nb; i++)
    if (u == 0 || bufs[u - 1] != bufs[i])
      bufs[u++] = bufs[i];
  free(e->sig);
  free(e->canon);
  free(e->bufs);
  e->sig = sig;
  e->nsig = f->nsig;
  e->canon = canon;
  e->ncanon = f->n;
  e->bufs = bufs;
  e->nbufs = u;
  *old_root = e->root;
  e->root = cua_op_retain(root);
  return 1;
}

/* Removes the least recently used entry that no thread is capturing into
 * *victims. Under gcache_mu. */
static void evict_lru(cua_runtime *rt, cua__gentry **victims) {
  cua__gentry **link = NULL;
  for (cua__gentry **p = &rt->gcache; *p != NULL; p = &(*p)->next)
    if ((*p)->state != GE_CAPTURING)
      link = p;
  if (link == NULL)
    return;
  cua__gentry *e = *link;
  *link = e->next;
  e->next = *victims;
  *victims = e;
  rt->ngcache--;
}

/* Gives the graph, not yet cached, its map to the fingerprint's canonical
 * positions (g->auto_pos) and @p f's root as the DAG its parameters come
 * from: 0 when one of its ops is not among @p f's (it could not be updated
 * from a later DAG). */
static int map_device_ops(cua_graph *g, const fp *f) {
  g->auto_pos = calloc(g->nops ? g->nops : 1, sizeof *g->auto_pos);
  if (g->auto_pos == NULL)
    return 0;
  size_t n = 0;
  for (size_t i = 0; i < f->n && n < g->nops; i++) {
    long k = cua__graph_find(g, f->ops[i]);
    if (k >= 0) {
      g->auto_pos[k] = i;
      n++;
    }
  }
  if (n != g->nops)
    return 0;
  g->auto_root = cua_op_retain(f->ops[0]);
  return 1;
}

/* Launches @p g (held by the caller, who releases it) for a submission of
 * the DAG with fingerprint @p f, after updating the ops whose parameters
 * differ. Returns 1 with *rc the launch's outcome, or 0 if an update
 * failed (the submission then goes as usual). */
static int launch(cua_runtime *rt, cua_graph *g, const fp *f, cua_future **fut,
                  int *rc) {
  pthread_mutex_lock(&g->auto_mu);
  for (size_t k = 0; k < g->nops && g->auto_root != f->ops[0]; k++) {
    cua_op *now = f->ops[g->auto_pos[k]];
    pthread_mutex_lock(&g->mu);
    int same = same_params(g->cur->ops[k], now);
    pthread_mutex_unlock(&g->mu);
    if (!same && cua_graph_update(g, g->ops[k].key, now) != 0) {
      /* Some ops may have this DAG's parameters already: no root stands
       * for the graph's parameters any more. */
      cua_op_destroy(g->auto_root);
      g->auto_root = NULL;
      pthread_mutex_unlock(&g->auto_mu);
      return 0;
    }
  }
  /* The graph's parameters are now this DAG's. */
  if (g->auto_root != f->ops[0]) {
    cua_op_destroy(g->auto_root);
    g->auto_root = cua_op_retain(f->ops[0]);
  }
  *rc = cua__graph_launch(fut, g, "cua_submit");
  pthread_mutex_unlock(&g->auto_mu);
  if (*rc == 0)
    atomic_fetch_add(&rt->n_graph_replays, 1);
  return 1;
}

/* Moves the entry at link @p p to the front of the list (the most
 * recently used) and returns it. Under gcache_mu. */
static cua__gentry *to_front(cua_runtime *rt, cua__gentry **p) {
  cua__gentry *e = *p;
  *p = e->next;
  e->next = rt->gcache;
  rt->gcache = e;
  return e;
}

/* The same root as the last launch of a cached graph: the same DAG (ops
 * are immutable once referenced or submitted), with the parameters the
 * graph has. Returns 1 when launched (*rc its outcome), 0 to go the long
 * way. */
static int launch_same_root(cua_runtime *rt, cua_op *op, cua__polinst *pol,
                            cua_future **fut, int *rc) {
  cua_graph *g = NULL;
  pthread_mutex_lock(&rt->gcache_mu);
  for (cua__gentry **p = &rt->gcache; *p != NULL; p = &(*p)->next) {
    cua__gentry *e = *p;
    if (e->state == GE_GRAPH && e->fast_root == op && e->pol == pol) {
      to_front(rt, p);
      g = e->g;
      atomic_fetch_add(&g->refs, 1);
      break;
    }
  }
  pthread_mutex_unlock(&rt->gcache_mu);
  if (g == NULL)
    return 0;
  int done = 0;
  pthread_mutex_lock(&g->auto_mu);
  if (g->auto_root == op) {
    *rc = cua__graph_launch(fut, g, "cua_submit");
    done = 1;
  }
  pthread_mutex_unlock(&g->auto_mu);
  if (done && *rc == 0)
    atomic_fetch_add(&rt->n_graph_replays, 1);
  cua__graph_release(g);
  if (done)
    cua__graphs_reap(rt);
  return done;
}

/* Notes @p root as the last root launched for @p g, if still cached. */
static void note_root(cua_runtime *rt, const cua_graph *g, const cua_op *root) {
  pthread_mutex_lock(&rt->gcache_mu);
  for (cua__gentry *e = rt->gcache; e != NULL; e = e->next)
    if (e->g == g) {
      e->fast_root = root;
      break;
    }
  pthread_mutex_unlock(&rt->gcache_mu);
}

/* The entry with fingerprint @p f, moved to the front; NULL if none. */
static cua__gentry *lookup(cua_runtime *rt, uint64_t hash, cua__polinst *pol,
                           const fp *f) {
  for (cua__gentry **p = &rt->gcache; *p != NULL; p = &(*p)->next) {
    cua__gentry *e = *p;
    if (same_dag(e, hash, pol, f))
      return to_front(rt, p);
  }
  return NULL;
}

/* Captures the DAG ending at @p op for entry @p e (GE_CAPTURING, made or
 * marked by the caller under gcache_mu, which the caller has released;
 * @p gen the cache's generation then), records the outcome and launches
 * the graph. */
static int capture(cua_runtime *rt, cua__gentry *e, uint64_t gen, cua_op *op,
                   cua__polinst *pol, const fp *f, cua_future **fut, int *rc) {
  cua_graph_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.policy = (cua_policy *)pol;
  cua_graph *g = NULL;
  int ok = cua_graph_create(&g, rt, op, &o) == 0;
  /* A launch's future must give what the submission's would. */
  if (ok && (!g->res_ok || !map_device_ops(g, f))) {
    cua_graph_destroy(g);
    g = NULL;
    ok = 0;
  }
  cua_op *old_root = NULL;
  cua__gentry *victims = NULL;
  pthread_mutex_lock(&rt->gcache_mu);
  if (rt->gcache_gen != gen) {
    /* The cache was cleared meanwhile (a policy change): e is out of
     * it, and ours to free. */
    pthread_mutex_unlock(&rt->gcache_mu);
    cua_graph_destroy(g);
    entry_free(e);
    return 0;
  }
  /* The entry now stands for this DAG: later ones update its ops. */
  if (ok && !entry_take(e, op, f, &old_root))
    ok = 0;
  e->state = ok ? GE_GRAPH : GE_REFUSED;
  if (ok) {
    e->g = g;
    atomic_fetch_add(&g->refs, 1); /* ours, for the launch */
  }
  if (e->stale) { /* one of its buffers was destroyed meanwhile */
    for (cua__gentry **p = &rt->gcache; *p != NULL; p = &(*p)->next)
      if (*p == e) {
        *p = e->next;
        e->next = NULL;
        victims = e;
        rt->ngcache--;
        break;
      }
  }
  pthread_mutex_unlock(&rt->gcache_mu);
  cua_op_destroy(old_root);
  if (!ok) {
    drop(rt, victims);
    cua_graph_destroy(g);
    return 0;
  }
  int done = launch(rt, g, f, fut, rc);
  if (done)
    note_root(rt, g, op);
  cua__graph_release(g);
  drop(rt, victims);
  cua__graphs_reap(rt);
  return done;
}

int cua__gcache_submit(cua_runtime *rt, cua_op *op, cua__polinst *pol,
                       cua_future **fut, int *rc) {
  int mode = rt->cfg->graphs;
  if (mode == CUA__GRAPHS_OFF || atomic_load(&rt->closed))
    return 0;
  cua__op_freeze(op); /* its hints are read below */
  if (launch_same_root(rt, op, pol, fut, rc))
    return 1;
  fp f;
  fp_init(&f);
  if (!fp_walk(&f, op)) {
    fp_free(&f);
    return 0;
  }
  uint64_t hash = sig_hash(f.sig, f.nsig);
  cua__gentry *victims = NULL;
  int done = 0;
  pthread_mutex_lock(&rt->gcache_mu);
  cua__gentry *e = lookup(rt, hash, pol, &f);
  if (e == NULL) {
    e = cua__calloc(1, sizeof *e);
    cua_op *none = NULL;
    if (e == NULL || !entry_take(e, op, &f, &none)) {
      free(e);
      pthread_mutex_unlock(&rt->gcache_mu);
      fp_free(&f);
      return 0;
    }
    e->hash = hash;
    e->pol = pol;
    e->state = mode == CUA__GRAPHS_ALWAYS ? GE_CAPTURING : GE_SEEN;
    if (rt->ngcache == (size_t)rt->cfg->graph_cache)
      evict_lru(rt, &victims);
    e->next = rt->gcache;
    rt->gcache = e;
    rt->ngcache++;
    if (e->state == GE_CAPTURING) {
      uint64_t gen = rt->gcache_gen;
      pthread_mutex_unlock(&rt->gcache_mu);
      drop(rt, victims);
      done = capture(rt, e, gen, op, pol, &f, fut, rc);
      fp_free(&f);
      return done;
    }
    pthread_mutex_unlock(&rt->gcache_mu);
    drop(rt, victims);
    fp_free(&f);
    return 0;
  }
  if (e->state == GE_SEEN) {
    e->state = GE_CAPTURING;
    e->stale = 0;
    uint64_t gen = rt->gcache_gen;
    pthread_mutex_unlock(&rt->gcache_mu);
    done = capture(rt, e, gen, op, pol, &f, fut, rc);
    fp_free(&f);
    return done;
  }
  if (e->state != GE_GRAPH) {
    pthread_mutex_unlock(&rt->gcache_mu);
    fp_free(&f);
    return 0;
  }
  /* A hold of our own: an eviction by another thread cannot free the
   * graph (nor its map). */
  cua_graph *g = e->g;
  atomic_fetch_add(&g->refs, 1);
  pthread_mutex_unlock(&rt->gcache_mu);
  done = launch(rt, g, &f, fut, rc);
  if (done)
    note_root(rt, g, op);
  cua__graph_release(g);
  cua__graphs_reap(rt);
  fp_free(&f);
  return done;
}

/* Whether @p e's ops use the buffer @p key (or a tile of it). */
static int uses_buffer(const cua__gentry *e, const void *key) {
  for (size_t i = 0; i < e->nbufs; i++)
    if (e->bufs[i] == key || cua__buffer_root(e->bufs[i]) == key)
      return 1;
  return 0;
}

/* Whether @p e was placed by the policy @p key. */
static int placed_by(const cua__gentry *e, const void *key) {
  return e->pol == key;
}

/* Drops the entries @p match says of @p key; one being captured is marked
 * stale instead, and its capture removes it. */
static void drop_where(cua_runtime *rt,
                       int (*match)(const cua__gentry *, const void *),
                       const void *key) {
  cua__gentry *victims = NULL;
  pthread_mutex_lock(&rt->gcache_mu);
  for (cua__gentry **p = &rt->gcache; *p != NULL;) {
    cua__gentry *e = *p;
    if (!match(e, key)) {
      p = &e->next;
    } else if (e->state == GE_CAPTURING) {
      e->stale = 1; /* its capture removes it */
      p = &e->next;
    } else {
      *p = e->next;
      e->next = victims;
      victims = e;
      rt->ngcache--;
    }
  }
  pthread_mutex_unlock(&rt->gcache_mu);
  drop(rt, victims);
}

void cua__gcache_buffer_gone(cua_runtime *rt, cua_buffer *b) {
  drop_where(rt, uses_buffer, b);
}

void cua__gcache_policy_gone(cua_runtime *rt, const cua__polinst *pol) {
  drop_where(rt, placed_by, pol);
}

void cua__gcache_clear(cua_runtime *rt) {
  cua__gentry *v = NULL;
  pthread_mutex_lock(&rt->gcache_mu);
  /* An entry being captured leaves the list, and is freed by its capture,
   * which sees the new generation. */
  while (rt->gcache != NULL) {
    cua__gentry *e = rt->gcache;
    rt->gcache = e->next;
    if (e->state != GE_CAPTURING) {
      e->next = v;
      v = e;
    }
  }
  rt->ngcache = 0;
  rt->gcache_gen++;
  pthread_mutex_unlock(&rt->gcache_mu);
  while (v != NULL) {
    cua__gentry *next = v->next;
    entry_free(v);
    v = next;
  }
}
