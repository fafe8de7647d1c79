/*
 * core/capture.c: cua_graph_create(): a DAG placed once, its schedule
 * recorded.
 *
 * The DAG is built into nodes as a submission is (graph.c, validated the
 * same way), but ordered only within itself: its buffer hazards are
 * computed among its own ops (a graph launch is ordered against the rest
 * of the runtime as one op, see replay.c). Its device ops are then placed
 * in the order a submission would place them (breadth-first, by level
 * and then by op id: commands.c), each by the same call into the policy, and
 * counted in their streams' loads while the others are placed, so that the
 * policy sees what it would see for one submission of the whole DAG. Then the
 * loads are put back, the policy hears every op complete, and the nodes are
 * dropped.
 *
 * What is recorded (graphs.h): the chains (one per stream used), the ops
 * in placement order, and the waits between chains, one per producer a
 * chain is not yet ordered after, and whether an op needs an edge to its
 * chain's previous op (it does not when a wait orders it after that op). The
 * graph gets streams and events of its own; on a backend with graphs the
 * schedule is captured into one.
 *
 * Owns: capturing. Runs under rt->lock from the build to the recorded
 * schedule; the backend objects are made and the capture is done after it
 * is released, before the graph is handed out. A large DAG on a backend
 * that sets a capture's dependencies itself is captured while it is
 * placed instead, by a thread of the creation's that takes
 * rt->capture_mu (never rt->lock) and gets the ops under a leaf lock of
 * their own as they are recorded ("the fed capture" below; the thread is
 * graphbuild.c's).
 */
#include "config.h"
#include "graphs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- what may be in */

/* The kinds the backend launches (the X-macro's launched column), but a
 * stream function, which runs user code when it is launched. */
static int capturable(cua_op_kind k) {
  switch (k) {
#define LAUNCHED(id, val, name, launched, desc)                                \
  case CUA_OP_##id:                                                            \
    return (launched) && k != CUA_OP_FUNC;
    CUA_OP_KIND_MAP(LAUNCHED)
#undef LAUNCHED
  default:
    return 0;
  }
}

static const char *why_not(cua_op_kind k) {
  switch (k) {
  case CUA_OP_FUNC:
    return "a stream function runs user code when it is launched";
  case CUA_OP_HOST:
  case CUA_OP_MAP:
    return "host steps and maps run on the host, not in a graph";
  case CUA_OP_ALLOC:
  case CUA_OP_FREE:
    return "allocation is not part of a graph (a graph's buffers are "
           "allocated when it is created)";
  case CUA_OP_BARRIER:
    return "a barrier waits for work submitted before it, outside the graph";
  case CUA_OP_SHARED:
    return "a shared op runs once for all the submissions that use it";
  case CUA_OP_WAIT_NATIVE:
    return "it waits for a stream of the application";
  case CUA_OP_GRAPH:
    return "it launches a graph";
  default:
    return "ops of this kind are not captured";
  }
}

static int check_nodes(const cua__sub *sub, char *msg, size_t len) {
  for (size_t i = 0; i < sub->nnodes; i++) {
    const cua__node *n = sub->nodes[i];
    cua_op_kind k = n->kind;
    if (n->sub_id == sub->id && (capturable(k) || k == CUA_OP_ZIP ||
                                 k == CUA_OP_UNZIP || k == CUA_OP_THEN))
      continue;
    if (n->sub_id != sub->id)
      k = CUA_OP_SHARED; /* an earlier submission's run of a shared op */
    snprintf(msg, len, "op '%s' (%s) cannot be captured: %s", cua__node_name(n),
             cua_op_kind_name(k), why_not(k));
    return CUA_ERR_CAPTURE;
  }
  return 0;
}

/* ----------------------------------------------------- hazards, within */

typedef struct hrec {
  const cua_buffer *root;
  size_t off, len;
  unsigned mode;
  cua__node *n;
  long prev; /* the previous access of the same root buffer, or -1 */
} hrec;

/* Orders the DAG's device ops by their buffer accesses, in submission
 * order (the post-order): a write after any access of overlapping bytes,
 * a read after the last overlapping write. An earlier write covering the
 * access ends the walk back: what came before it is ordered through it. */
static int local_hazards(cua__build *b) {
  size_t nacc = 0;
  for (size_t i = 0; i < b->n; i++)
    if (b->order[i]->cls == CUA__CLASS_DEVICE)
      nacc += b->order[i]->op->nacc;
  if (nacc == 0)
    return 0;
  size_t cap = 16;
  while (cap < 2 * nacc)
    cap *= 2;
  hrec *recs = cua__malloc(nacc * sizeof *recs);
  const cua_buffer **keys = cua__calloc(cap, sizeof *keys);
  long *last = cua__malloc(cap * sizeof *last);
  int rc = recs && keys && last ? 0 : CUA_ERR_NOMEM;
  size_t nrec = 0;
  for (size_t i = 0; i < b->n && rc == 0; i++) {
    cua__node *n = b->order[i];
    if (n->cls != CUA__CLASS_DEVICE)
      continue;
    for (size_t a = 0; a < n->op->nacc && rc == 0; a++) {
      cua_buffer *buf = n->op->acc[a].buf;
      const cua_buffer *root = cua__buffer_root(buf);
      size_t off = buf == root ? 0 : buf->offset, len = buf->bytes;
      unsigned mode = (unsigned)n->op->acc[a].mode;
      size_t h = cua__ptr_hash(root, cap);
      while (keys[h] != NULL && keys[h] != root)
        h = (h + 1) & (cap - 1);
      if (keys[h] == NULL) {
        keys[h] = root;
        last[h] = -1;
      }
      for (long r = last[h]; r >= 0 && rc == 0; r = recs[r].prev) {
        const hrec *x = &recs[r];
        if (!(x->off < off + len && off < x->off + x->len))
          continue;
        if (x->n != n && ((x->mode | mode) & CUA_WRITE))
          rc = cua__add_dep(n, x->n, 0);
        if ((x->mode & CUA_WRITE) && x->off <= off &&
            x->off + x->len >= off + len)
          break;
      }
      recs[nrec] = (hrec){root, off, len, mode, n, last[h]};
      last[h] = (long)nrec++;
    }
  }
  free(recs);
  free(keys);
  free(last);
  return rc;
}

/* ------------------------------------------------------------ placement */

typedef struct saved_load {
  cua__stream *s;
  cua_stream_load load;
} saved_load;

typedef struct capture {
  cua_runtime *rt;
  cua__sub *sub;
  cua_graph *g;
  cua__node **dev; /* device nodes, in build order */
  size_t ndev;
  size_t *pred_off; /* ndev + 1: preds of dev[i] in preds[pred_off[i]..] */
  size_t *preds, npreds, cappreds;
  size_t *order; /* placement order (indices into dev) */
  size_t nplaced;
  saved_load *saved;
  size_t nsaved, capsaved;
  cua__recorder r;
  cua__feed *feed; /* the capture thread fed as ops are recorded, or NULL */
} capture;

static int add_pred(cua__node *d, void *arg) {
  capture *c = arg;
  if (d->cls != CUA__CLASS_DEVICE || d->scratch <= 0)
    return 0;
  if (cua__grow(&c->preds, &c->cappreds, c->npreds + 1, sizeof *c->preds))
    return CUA_ERR_NOMEM;
  c->preds[c->npreds++] = (size_t)d->scratch - 1;
  return 0;
}

static int save_load(capture *c, cua__stream *s) {
  for (size_t i = 0; i < c->nsaved; i++)
    if (c->saved[i].s == s)
      return 0;
  if (cua__grow(&c->saved, &c->capsaved, c->nsaved + 1, sizeof *c->saved))
    return CUA_ERR_NOMEM;
  c->saved[c->nsaved].s = s;
  c->saved[c->nsaved].load = s->load;
  c->nsaved++;
  return 0;
}

/* Counted as place.c counts a placed node, but nothing is launched: the
 * stream's load is saved first, and put back once every op is placed. */
static int shadow_placed(capture *c, cua__node *n, const cua_op_info *info,
                         uint64_t now) {
  if (save_load(c, c->rt->devs[n->pl.device].streams[n->pl.stream]) != 0)
    return CUA_ERR_NOMEM;
  cua__placed_count(c->rt, n, info, now);
  cua__dag_placed(n);
  return 0;
}

/* -------------------------------------------------------- the fed capture */

/* A creation whose capture runs while the DAG is placed: on a backend that
 * sets a capture's dependencies itself, for DAGs of FEED_MIN device ops or
 * more, a thread of the creation's captures each op as soon as it is
 * recorded (cua__graph_capture_fed()), so the placement's time is spent
 * beside the capture's instead of before it. The placement publishes the
 * count of recorded ops in an atomic and takes the feed's mu (a leaf,
 * under rt->lock) only to wake the capture thread; the capture thread
 * (graphbuild.c, cua__feed) holds rt->capture_mu, never rt->lock. */
#define FEED_MIN 64

/* ------------------------------------------------------------ placement */

/* The longest producer list of the device nodes. */
static size_t max_preds(const capture *c) {
  size_t maxp = 1;
  for (size_t i = 0; i < c->ndev; i++)
    if (c->pred_off[i + 1] - c->pred_off[i] > maxp)
      maxp = c->pred_off[i + 1] - c->pred_off[i];
  return maxp;
}

/* Places every device node, in the order a submission would, and records
 * each as it is placed (fed to the capture thread, if any). */
static int place_all(capture *c, char *msg, size_t len) {
  cua_runtime *rt = c->rt;
  size_t n = c->ndev;
  c->pred_off = cua__calloc(n + 1, sizeof *c->pred_off);
  size_t *left = cua__calloc(n + 1, sizeof *left);
  size_t *succ_off = cua__calloc(n + 2, sizeof *succ_off);
  size_t *succ = NULL;
  c->order = cua__calloc(n + 1, sizeof *c->order);
  int rc = c->pred_off && left && succ_off && c->order ? 0 : CUA_ERR_NOMEM;
  for (size_t i = 0; i < n && rc == 0; i++) {
    c->pred_off[i] = c->npreds;
    rc = cua__each_input(rt, c->dev[i], add_pred, c);
  }
  if (rc == 0) {
    c->pred_off[n] = c->npreds;
    succ = cua__calloc(c->npreds + 1, sizeof *succ);
    if (succ == NULL)
      rc = CUA_ERR_NOMEM;
  }
  if (rc == 0)
    rc = cua__rec_init(&c->r, c->g, n, max_preds(c), c->npreds);
  if (rc == 0) {
    for (size_t k = 0; k < c->npreds; k++)
      succ_off[c->preds[k] + 1]++;
    for (size_t i = 0; i < n; i++)
      succ_off[i + 1] += succ_off[i];
    size_t *fill = left; /* borrowed as a cursor, then reset */
    for (size_t i = 0; i < n; i++)
      fill[i] = succ_off[i];
    for (size_t i = 0; i < n; i++)
      for (size_t k = c->pred_off[i]; k < c->pred_off[i + 1]; k++)
        succ[fill[c->preds[k]]++] = i;
    for (size_t i = 0; i < n; i++)
      left[i] = c->pred_off[i + 1] - c->pred_off[i];
  }
  /* Ready nodes wait in a place queue, as a submission's round keeps
   * them (a device node's scratch is its index + 1 here); c->order gets
   * them as they are placed. */
  cua__queue ready = {NULL, NULL};
  for (size_t i = 0; i < n && rc == 0; i++)
    if (left[i] == 0)
      cua__place_push(&ready, c->dev[i]);
  uint64_t now = cua__now_ns();
  cua__node *nd;
  while (rc == 0 && (nd = cua__q_pop(&ready)) != NULL) {
    size_t i = (size_t)nd->scratch - 1;
    c->order[c->nplaced] = i;
    cua_op_info info;
    cua__op_info(rt, nd, &info, 1);
    rc = cua__place_ask(rt, nd, c->sub, &info, msg, len);
    if (rc == 0)
      rc = shadow_placed(c, nd, &info, now);
    if (rc == 0)
      rc =
          cua__rec_op(&c->r, c->g, i, nd->pl, nd->op, &c->preds[c->pred_off[i]],
                      c->pred_off[i + 1] - c->pred_off[i]);
    if (rc != 0)
      break;
    c->nplaced++;
    if (c->feed != NULL)
      cua__feed_put(c->feed, c->nplaced, 0);
    for (size_t k = succ_off[i]; k < succ_off[i + 1]; k++)
      if (--left[succ[k]] == 0)
        cua__place_push(&ready, c->dev[succ[k]]);
  }
  while (cua__q_pop(&ready) != NULL)
    ; /* after a failure: no node stays marked as queued */
  if (rc == 0 && c->nplaced != n) {
    snprintf(msg, len, "internal error: %zu of %zu ops could be placed",
             c->nplaced, n);
    rc = CUA_ERR_INTERNAL;
  }
  free(left);
  free(succ_off);
  free(succ);
  return rc;
}

/* The loads go back to what they were; every op placed completes for its
 * policy (duration unknown), which lets go of it. */
static void unplace(capture *c) {
  cua_runtime *rt = c->rt;
  for (size_t i = 0; i < c->nsaved; i++)
    c->saved[i].s->load = c->saved[i].load;
  for (size_t k = 0; k < c->nplaced; k++) {
    cua__node *n = c->dev[c->order[k]];
    cua__polinst *p = n->placed_by;
    if (p == NULL)
      continue;
    if (p->state != NULL && p->d->completed != NULL) {
      cua_op_info info;
      cua__op_info(rt, n, &info, 0);
      p->d->completed(p->state, &info, n->pl, 0);
    }
    n->placed_by = NULL;
    cua__polinst_release(p);
  }
  /* A placement that failed may still hold its policy. */
  for (size_t i = 0; i < c->ndev; i++)
    if (c->dev[i]->placed_by != NULL) {
      cua__polinst_release(c->dev[i]->placed_by);
      c->dev[i]->placed_by = NULL;
    }
}

/* The devices of the events, for creating them. */
static int event_devices(cua_graph *g) {
  g->event_dev = cua__calloc(g->nevents, sizeof *g->event_dev);
  g->events = cua__calloc(g->nevents, sizeof *g->events);
  if (g->event_dev == NULL || g->events == NULL)
    return CUA_ERR_NOMEM;
  g->event_dev[0] = g->anchor.device;
  for (size_t k = 0; k < g->nops; k++)
    if (g->ops[k].event >= 0)
      g->event_dev[g->ops[k].event] = g->chains[g->ops[k].chain].pl.device;
  for (size_t ch = 0; ch < g->nchains; ch++)
    g->event_dev[g->chains[ch].end_event] = g->chains[ch].pl.device;
  return 0;
}

/* Lazily created buffers of the DAG's device ops get their memory now,
 * before the placement (a capture needs their addresses, and a fed one
 * begins while the placement goes on); one whose allocation an earlier
 * submission decided and has not made yet is left to it: *later is then
 * set. Under rt->lock. */
static int allocate_buffers(cua_runtime *rt, const capture *c, int *later,
                            char *msg, size_t len) {
  *later = 0;
  for (size_t k = 0; k < c->ndev; k++) {
    const cua_op *op = c->dev[k]->op;
    for (size_t a = 0; a < op->nacc; a++) {
      cua_buffer *root = cua__buffer_root(op->acc[a].buf);
      if (__atomic_load_n(&root->ptr, __ATOMIC_ACQUIRE) != NULL)
        continue;
      if (root->planned) {
        *later = 1;
        continue;
      }
      cua_backend_err err = {{0}};
      void *ptr = NULL;
      int rc = rt->be->mem_alloc(rt->bst, root->device, NULL, root->bytes, &ptr,
                                 &err);
      if (rc != 0) {
        snprintf(msg, len, "allocating %zu bytes on device %d: %s", root->bytes,
                 root->device, err.msg[0] ? err.msg : cua_strerror(rc));
        return rc;
      }
      __atomic_store_n(&root->ptr, ptr, __ATOMIC_RELEASE);
      root->planned = 1;
    }
  }
  return 0;
}

static int make_index(cua_graph *g) {
  g->index_cap = 16;
  while (g->index_cap < 2 * g->nops)
    g->index_cap *= 2;
  g->index = cua__calloc(g->index_cap, sizeof *g->index);
  if (g->index == NULL)
    return CUA_ERR_NOMEM;
  for (size_t k = 0; k < g->nops; k++) {
    size_t h = cua__ptr_hash(g->ops[k].key, g->index_cap);
    while (g->index[h] != 0)
      h = (h + 1) & (g->index_cap - 1);
    g->index[h] = k + 1;
  }
  return 0;
}

/* Streams and events of the graph's own (a backend with graphs captures
 * on the runtime's capture streams, with its capture events, instead: no
 * stream or event of its own). With no lock held. */
static int make_backend(cua_runtime *rt, cua_graph *g, char *msg, size_t len) {
  cua_backend_err err = {{0}};
  int rc = 0;
  for (size_t ch = 0; ch < g->nchains && rc == 0 && !g->native; ch++) {
    rc = cua__stream_create(rt, g->chains[ch].pl.device, &g->chains[ch].bs,
                            NULL, &err);
    if (rc)
      snprintf(msg, len, "creating a stream of the graph on device %d: %s",
               g->chains[ch].pl.device,
               err.msg[0] ? err.msg : cua_strerror(rc));
  }
  /* A backend graph's capture borrows the runtime's capture events. */
  for (size_t e = 0; e < g->nevents && rc == 0 && !g->native; e++) {
    rc = rt->be->event_create(rt->bst, g->event_dev[e], &g->events[e], &err);
    if (rc)
      snprintf(msg, len, "creating an event of the graph on device %d: %s",
               g->event_dev[e], err.msg[0] ? err.msg : cua_strerror(rc));
  }
  return rc;
}

/* --------------------------------------------------------------- create */

/* The op whose result @p op has: a then's second op, followed. */
static const cua_op *result_op(const cua_op *op) {
  for (size_t depth = 0; op->kind == CUA_OP_THEN && op->ninputs == 2; depth++)
    op = op->inputs[1];
  return op;
}

/* One part of the result: the index of the memcpy_d2h giving it, -1 for
 * none; -2 when it has another form. */
static long result_part(const cua_graph *g, const cua_op *op) {
  op = result_op(op);
  if (op->kind == CUA_OP_MEMCPY_D2H)
    return cua__graph_find(g, op);
  cua_op_kind k = op->kind;
  return k == CUA_OP_ZIP || k == CUA_OP_UNZIP || k == CUA_OP_SHARED ||
                 k == CUA_OP_ALLOC || k == CUA_OP_HOST || k == CUA_OP_MAP
             ? -2
             : -1;
}

/* g->res from the DAG's root @p root (see graphs.h). */
static int result_map(cua_graph *g, const cua_op *root) {
  const cua_op *r = result_op(root);
  g->res_zip = r->kind == CUA_OP_ZIP;
  g->nres = g->res_zip ? r->ninputs : 1;
  g->res = cua__calloc(g->nres ? g->nres : 1, sizeof *g->res);
  if (g->res == NULL)
    return CUA_ERR_NOMEM;
  g->res_ok = 1;
  for (size_t i = 0; i < g->nres; i++) {
    g->res[i] = result_part(g, g->res_zip ? r->inputs[i] : r);
    if (g->res[i] == -2)
      g->res_ok = 0;
  }
  if (!g->res_ok)
    g->nres = 0;
  return 0;
}

int cua_graph_create(cua_graph **out, cua_runtime *rt, cua_op *op,
                     const cua_graph_options *opts) {
  if (out != NULL)
    *out = NULL;
  if (out == NULL || rt == NULL || op == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_graph_create: NULL argument");
  cua__polinst *pol = NULL;
  if (opts != NULL) {
    if (opts->size < offsetof(cua_graph_options, policy) + sizeof opts->policy)
      return cua__fail(rt, CUA_ERR_INVAL,
                       "cua_graph_create: opts->size is %zu; set it to "
                       "sizeof(cua_graph_options) (%zu)",
                       opts->size, sizeof(cua_graph_options));
    pol = (cua__polinst *)opts->policy;
    if (pol != NULL && pol->dead)
      return cua__fail(rt, CUA_ERR_CANCELED,
                       "cua_graph_create: the policy's runtime is closed");
    if (pol != NULL && pol->rt != rt)
      return cua__fail(rt, CUA_ERR_INVAL,
                       "cua_graph_create: the policy belongs to another "
                       "runtime");
  }
  if (cua__runtime_closed(op->rt, "cua_graph_create"))
    return CUA_ERR_CANCELED;
  if (op->rt != rt)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_graph_create: the op belongs to another runtime");
  cua__graphs_reap(rt);
  uint64_t t0 = cua__now_ns();
  uint64_t obs_t0 = rt->obs != NULL ? cua__rt_now(rt) : 0;
  uint64_t sub_id = 0;
  cua_graph *g = cua__calloc(1, sizeof *g);
  if (g == NULL)
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  atomic_init(&g->refs, 1);
  g->rt = rt;
  cua__runtime_hold(rt);
  pthread_mutex_init(&g->mu, NULL);
  pthread_mutex_init(&g->auto_mu, NULL);

  char msg[CUA__ERRLEN];
  msg[0] = '\0';
  pthread_mutex_lock(&rt->lock);
  /* Refused once cua_runtime_destroy() began, as a submission is: its
   * launches would be. */
  if (rt->stopping || rt->closing) {
    pthread_mutex_unlock(&rt->lock);
    g->dead = 1;
    cua__graph_release(g);
    return cua__fail(rt, CUA_ERR_CANCELED, "cua_graph_create: runtime closing");
  }
  cua__sub *sub = cua__sub_new(rt);
  if (sub == NULL) {
    pthread_mutex_unlock(&rt->lock);
    g->dead = 1;
    cua__graph_release(g);
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  }
  sub->id = ++rt->next_sub;
  sub_id = sub->id;
  sub->policy = pol;
  if (pol != NULL)
    pol->refs++;
  cua__build b;
  cua__build_init(&b, rt, sub);
  capture c;
  memset(&c, 0, sizeof c);
  c.rt = rt;
  c.sub = sub;
  int later = 0;
  int rc = cua__build_graph(&b, op, &sub->capnodes);
  if (rc == 0)
    rc = cua__check_cycles(&b, msg, sizeof msg);
  if (rc == 0)
    rc = check_nodes(sub, msg, sizeof msg);
  if (rc == 0)
    rc = cua__validate(&b, msg, sizeof msg);
  if (rc == 0)
    rc = local_hazards(&b);
  if (rc == 0)
    cua__build_levels(&b); /* the hazards count as edges */
  if (rc == 0) {
    c.dev = cua__calloc(b.n + 1, sizeof *c.dev);
    if (c.dev == NULL)
      rc = CUA_ERR_NOMEM;
    for (size_t i = 0; i < b.n && rc == 0; i++) {
      b.order[i]->scratch = 0;
      if (b.order[i]->cls == CUA__CLASS_DEVICE) {
        b.order[i]->scratch = (int)(c.ndev + 1);
        c.dev[c.ndev++] = b.order[i];
      }
    }
    if (rc == 0 && c.ndev == 0) {
      snprintf(msg, sizeof msg, "the DAG has no device op to capture");
      rc = CUA_ERR_CAPTURE;
    }
  }
  if (rc == 0)
    rc = allocate_buffers(rt, &c, &later, msg, sizeof msg);
  cua__feed f;
  c.g = g;
  if (rc == 0 && !later && c.ndev >= FEED_MIN &&
      cua__backend_has_capture_deps(rt) &&
      cua__feed_start(&f, rt, g, c.ndev) == 0)
    c.feed = &f;
  if (rc == 0) {
    g->build_ns = cua__now_ns() - t0;
    cua__dag_begin(rt, sub, b.order, b.n);
    rc = place_all(&c, msg, sizeof msg);
    cua__dag_end(sub);
  }
  if (rc == 0)
    cua__rec_end(g);
  cua__rec_free(&c.r);
  if (c.feed != NULL) /* the capture thread may end the capture */
    cua__feed_put(c.feed, c.nplaced, rc == 0 ? 1 : -1);
  unplace(&c);
  cua__build_undo(&b, sub);
  if (pol != NULL)
    cua__polinst_release(pol);
  sub->policy = NULL;
  pthread_mutex_unlock(&rt->lock);
  cua__build_free(&b);
  cua__sub_release(sub);
  free(c.dev);
  free(c.pred_off);
  free(c.preds);
  free(c.order);
  free(c.saved);

  if (rc == 0)
    rc = event_devices(g);
  if (rc == 0)
    rc = make_index(g);
  if (rc == 0)
    rc = result_map(g, op);
  g->native = cua__backend_has_graphs(rt);
  if (rc == 0)
    rc = make_backend(rt, g, msg, sizeof msg);
  if (rc == 0) {
    g->cur = cua__calloc(1, sizeof *g->cur);
    if (g->cur != NULL) {
      /* Released with the graph, whatever follows. */
      atomic_init(&g->cur->refs, 1);
      g->cur->ops = cua__calloc(g->nops, sizeof *g->cur->ops);
    }
    if (g->cur == NULL || g->cur->ops == NULL)
      rc = CUA_ERR_NOMEM;
  }
  if (rc == 0) {
    g->cur->version = 1;
    g->cur->n = g->nops;
    for (size_t k = 0; k < g->nops; k++)
      g->cur->ops[k] = cua_op_retain(g->ops[k].key);
  }
  uint64_t t1 = cua__now_ns();
  if (c.feed != NULL) {
    /* The capture thread captured the ops as they were placed: what it
     * took beyond the placement counts as the capture. */
    pthread_join(f.thread, NULL);
    cua__feed_free(&f);
    if (rc == 0 && f.rc != 0) {
      rc = f.rc;
      snprintf(msg, sizeof msg, "%s", f.msg);
    } else if (rc == 0) {
      g->bg_version = g->cur->version;
      atomic_fetch_add(&g->cur->refs, 1);
      g->bg_params = g->cur;
    }
  } else if (rc == 0 && g->native && !later) {
    rc = cua__graph_capture(rt, g, g->cur, msg, sizeof msg);
  }
  g->place_ns = t1 - t0;
  if (rc == 0 && g->native && !later)
    g->capture_ns = cua__now_ns() - t1;
  if (rt->obs != NULL) {
    cua_obs_record o = {.kind = CUA_OBS_GRAPH_CAPTURE,
                        .t_ns = obs_t0,
                        .start_ns = obs_t0,
                        .end_ns = cua__rt_now(rt),
                        .submission = sub_id,
                        .device = -1,
                        .stream = -1,
                        .ninputs_total = (uint32_t)g->nops,
                        .code = rc};
    cua__obs_emit(rt, &o, NULL, NULL, NULL);
  }
  if (rc != 0) {
    cua__graph_free_backend(rt, g);
    g->dead = 1; /* never registered, nothing of the backend left */
    cua__graph_release(g);
    if (rc == CUA_ERR_NOMEM && msg[0] == '\0')
      snprintf(msg, sizeof msg, "out of host memory");
    return cua__fail(rt, rc, "cua_graph_create: %s", msg);
  }
  pthread_mutex_lock(&rt->reg_lock);
  g->reg_next = rt->graphs;
  if (rt->graphs != NULL)
    rt->graphs->reg_prev = g;
  rt->graphs = g;
  pthread_mutex_unlock(&rt->reg_lock);
  atomic_fetch_add(&rt->n_graphs, 1);
  *out = g;
  return 0;
}
