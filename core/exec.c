/*
 * core/exec.c: submission, dependency tracking, placement, enqueueing and
 * completion.
 *
 * A submission turns the DAG below its root op into nodes, in depth-first
 * post-order (the "submission order" that results must match). Each node
 * gets dependency edges: its DAG inputs, and for device ops the buffer
 * hazards found in each buffer's state (last writers, readers since). Then:
 *
 *   place:   a node whose dependencies are placed (or complete, for host
 *            producers) is placed by the policy and given the next sequence
 *            number of its stream;
 *   launch:  placed nodes are enqueued in placement order; before each, the
 *            stream waits for every producer on another stream that it is
 *            not already ordered after (vector clocks over recorded events);
 *            after each, an event is recorded only if a placed consumer on
 *            another stream needs it;
 *   marks:   every stream that got work gets one mark per round;
 *   complete: the completion thread reads stream progress, completes nodes in
 *            order, runs host steps and fires futures.
 *
 * Everything here runs under rt->lock, except user code.
 */
#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef cua__dependent dependent;

/* ------------------------------------------------------------ node basics */

static cua__node *node_new(cua_runtime *rt, cua_op *op) {
  cua__node *n = cua__calloc(1, sizeof *n);
  if (n == NULL)
    return NULL;
  atomic_init(&n->refs, 1);
  n->op = cua_op_retain(op);
  n->kind = op->kind;
  n->cls = op->kind == CUA_OP_ZIP || op->kind == CUA_OP_UNZIP ||
                   op->kind == CUA_OP_THEN || op->kind == CUA_OP_SHARED
               ? CUA__CLASS_VIRTUAL
           : cua__op_is_host(op) ? CUA__CLASS_HOST
                                 : CUA__CLASS_DEVICE;
  n->op_id = ++rt->next_op;
  n->pl.device = n->pl.stream = -1;
  n->deps = n->deps_inl;
  n->capdeps = CUA__INLINE_EDGES;
  n->dependents = n->dependents_inl;
  n->capdependents = CUA__INLINE_EDGES;
  n->watchers = n->watchers_inl;
  n->capwatchers = 2;
  return n;
}

/* Drops one reference to @p p; if it was the last, @p p goes on the
 * worklist @p todo (when given) to be freed there instead of here. */
static void unref(cua__node *p, cua__node **todo) {
  if (todo == NULL) {
    cua__node_release(p);
  } else if (atomic_fetch_sub(&p->refs, 1) == 1) {
    p->free_next = *todo;
    *todo = p;
  }
}

static void release_deps_to(cua__node *n, cua__node **todo) {
  for (size_t i = 0; i < n->ndeps; i++)
    unref(n->deps[i].node, todo);
  if (n->deps != n->deps_inl)
    free(n->deps);
  n->deps = n->deps_inl;
  n->capdeps = CUA__INLINE_EDGES;
  n->ndeps = 0;
}

static void release_dependents_to(cua__node *n, cua__node **todo) {
  dependent *d = n->dependents;
  for (size_t i = 0; i < n->ndependents; i++)
    unref(d[i].node, todo);
  if (n->dependents != n->dependents_inl)
    free(n->dependents);
  n->dependents = n->dependents_inl;
  n->capdependents = CUA__INLINE_EDGES;
  n->ndependents = 0;
}

static void release_deps(cua__node *n) {
  release_deps_to(n, NULL);
}

static void release_dependents(cua__node *n) {
  release_dependents_to(n, NULL);
}

/* Releases one reference; a node freed releases the nodes it holds, which
 * may free them in turn: a worklist, not recursion, since dependencies
 * chain as deep as the DAG is long. */
void cua__node_release(cua__node *n) {
  if (n == NULL || atomic_fetch_sub(&n->refs, 1) != 1)
    return;
  n->free_next = NULL;
  while (n != NULL) {
    cua__node *todo = n->free_next;
    release_deps_to(n, &todo);
    release_dependents_to(n, &todo);
    if (n->watchers != n->watchers_inl)
      free(n->watchers);
    free(n->msg);
    free(n->name);
    free(n->results);
    free(n->ptrs);
    if (n->ctx != NULL)
      free(n->ctx->msg);
    free(n->ctx);
    cua_op_destroy(n->op);
    free(n);
    n = todo;
  }
}

static int add_dep(cua__node *n, cua__node *p, unsigned flags) {
  /* Duplicates are harmless (each edge is counted and resolved once), so
   * only the last few are merged: a wide zip stays linear to build. */
  for (size_t i = n->ndeps > 4 ? n->ndeps - 4 : 0; i < n->ndeps; i++)
    if (n->deps[i].node == p) {
      n->deps[i].flags |= flags;
      return 0;
    }
  if (cua__grow_inl(&n->deps, &n->capdeps, n->ndeps + 1, sizeof *n->deps,
                    n->deps_inl))
    return CUA_ERR_NOMEM;
  n->deps[n->ndeps].node = p;
  n->deps[n->ndeps].flags = flags;
  n->ndeps++;
  atomic_fetch_add(&p->refs, 1);
  return 0;
}

static int add_dependent(cua__node *p, cua__node *n, unsigned flags) {
  if (cua__grow_inl(&p->dependents, &p->capdependents, p->ndependents + 1,
                    sizeof(dependent), p->dependents_inl))
    return CUA_ERR_NOMEM;
  dependent *d = p->dependents;
  d[p->ndependents].node = n;
  d[p->ndependents].flags = flags;
  d[p->ndependents].resolved = 0;
  p->ndependents++;
  atomic_fetch_add(&n->refs, 1);
  return 0;
}

/* Adds a dependency of a device node on @p p; a virtual producer stands for
 * the producers it joins, so device consumers of a zip wait on its parts
 * with events instead of waiting for the whole zip to complete. */
/* An explicit stack for walks through nested zips and thens, which may be
 * as deep as the DAG is long: no recursion. */
typedef struct node_stack {
  cua__node **v;
  size_t len, cap;
  cua__node *inl[16];
} node_stack;

static void ns_init(node_stack *st) {
  st->v = st->inl;
  st->len = 0;
  st->cap = sizeof st->inl / sizeof *st->inl;
}

static int ns_push(node_stack *st, cua__node *n) {
  if (cua__grow_inl(&st->v, &st->cap, st->len + 1, sizeof *st->v, st->inl))
    return CUA_ERR_NOMEM;
  st->v[st->len++] = n;
  return 0;
}

static void ns_free(node_stack *st) {
  if (st->v != st->inl)
    free(st->v);
}

static int add_device_dep(cua__node *n, cua__node *p0, unsigned flags) {
  node_stack st;
  ns_init(&st);
  int rc = ns_push(&st, p0);
  while (rc == 0 && st.len > 0) {
    cua__node *p = st.v[--st.len];
    if (p->cls != CUA__CLASS_VIRTUAL || p->state == CUA__NODE_DONE) {
      rc = add_dep(n, p, flags);
    } else if (p->op != NULL && p->op->kind == CUA_OP_THEN && p->ndeps == 2) {
      /* then(first, next) ends with next, which is already ordered after
       * first: standing for next alone keeps long chains linear. */
      rc = ns_push(&st, p->deps[1].node);
    } else {
      for (size_t i = p->ndeps; i-- > 0 && rc == 0;)
        rc = ns_push(&st, p->deps[i].node);
    }
  }
  ns_free(&st);
  return rc;
}

static const char *node_name(const cua__node *n) {
  if (n->op != NULL && n->op->hints.name)
    return n->op->hints.name;
  if (n->op == NULL && n->name != NULL)
    return n->name;
  static const char *const names[] = {
      "?",     "func",       "fill",       "copy",       "axpy",
      "spin",  "memcpy_h2d", "memcpy_d2h", "memcpy_d2d", "memset",
      "alloc", "free",       "host",       "barrier",    "zip",
      "unzip", "map",        "then",       "shared",     "kernel"};
  return n->kind < CUA_OP_KIND_COUNT_ ? names[n->kind] : "?";
}

/* Fails @p n and, through data edges, everything that consumes it. */
static void fail_node(cua_runtime *rt, cua__node *n, int code,
                      const char *msg) {
  if (n->state == CUA__NODE_DONE || n->code != 0)
    return;
  n->code = code;
  n->msg = cua__strdup(msg ? msg : cua_strerror(code));
  /* An explicit stack: a failure at the head of a long chain must not
   * recurse once per op. */
  size_t cap = 16, len = 0;
  cua__node **stack = cua__malloc(cap * sizeof *stack);
  if (stack == NULL)
    return;
  stack[len++] = n;
  while (len > 0) {
    cua__node *p = stack[--len];
    dependent *d = p->dependents;
    for (size_t i = 0; i < p->ndependents; i++) {
      cua__node *m = d[i].node;
      if (!(d[i].flags & CUA__DEP_DATA) || m->state == CUA__NODE_DONE ||
          m->code != 0)
        continue;
      m->code = CUA_ERR_DEPENDENCY;
      char buf[CUA__ERRLEN];
      snprintf(buf, sizeof buf, "depends on failed op '%s' (%s): %s",
               node_name(p), cua_err_name(p->code), p->msg ? p->msg : "");
      m->msg = cua__strdup(buf);
      if (len == cap) {
        cua__node **s2 = cua__realloc(stack, 2 * cap * sizeof *stack);
        if (s2 == NULL)
          break;
        stack = s2;
        cap *= 2;
      }
      stack[len++] = m;
    }
  }
  free(stack);
  (void)rt;
}

/* ---------------------------------------------------------- ready queues */

typedef struct queue {
  cua__node **v;
  size_t head, len, cap;
} queue;

static int q_push(queue *q, cua__node *n) {
  if (q->head + q->len == q->cap) {
    if (q->head > 0) {
      memmove(q->v, q->v + q->head, q->len * sizeof *q->v);
      q->head = 0;
    } else if (cua__grow(&q->v, &q->cap, q->len + 1, sizeof *q->v)) {
      return CUA_ERR_NOMEM;
    }
  }
  q->v[q->head + q->len++] = n;
  return 0;
}

static cua__node *q_pop(queue *q) {
  if (q->len == 0)
    return NULL;
  q->len--;
  return q->v[q->head++];
}

/* The state of one scheduling round (a submission, or what a completion
 * made ready). */
typedef struct round {
  cua_runtime *rt;
  queue place;  /* device nodes ready to be placed */
  queue launch; /* placed, in order */
  queue settle; /* failed or virtual nodes ready to finish */
} round;

static void finish_node(cua_runtime *rt, cua__node *n, round *r);

static void host_ready(cua_runtime *rt, cua__node *n) {
  if (n->on_ready)
    return;
  n->on_ready = 1;
  atomic_fetch_add(&n->refs, 1);
  n->ready_next = NULL;
  if (rt->ready_tail)
    rt->ready_tail->ready_next = n;
  else
    rt->ready_head = n;
  rt->ready_tail = n;
}

/* A node's last dependency was resolved: route it. */
static void ready(cua_runtime *rt, cua__node *n, round *r) {
  if (n->code != 0 || n->cls == CUA__CLASS_VIRTUAL) {
    q_push(&r->settle, n);
    return;
  }
  if (n->cls == CUA__CLASS_HOST) {
    host_ready(rt, n);
    return;
  }
  q_push(&r->place, n);
}

/* Resolves the dependents of @p p that waited for it to be placed
 * (@p complete 0) or to complete (@p complete 1). */
static void resolve(cua_runtime *rt, cua__node *p, int complete, round *r) {
  dependent *d = p->dependents;
  for (size_t i = 0; i < p->ndependents; i++) {
    if (d[i].resolved || (!complete && (d[i].flags & CUA__DEP_COMPLETE)))
      continue;
    d[i].resolved = 1;
    cua__node *m = d[i].node;
    if (m->unresolved > 0 && --m->unresolved == 0)
      ready(rt, m, r);
  }
}

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
static cua__point *record_point(cua_runtime *rt, cua__stream *s) {
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
static int wait_for(cua_runtime *rt, cua__stream *t, cua__stream *s,
                    uint64_t seq, cua__point *hint) {
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
  if (p == NULL && (p = record_point(rt, s)) == NULL)
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

/* ----------------------------------------------------------- placement */

static int buffers_device(const cua_op *op) {
  int dev = -1;
  for (size_t i = 0; i < op->nacc; i++) {
    int d = op->acc[i].buf->device;
    if (dev == -1)
      dev = d;
    else if (dev != d)
      return -2;
  }
  return dev;
}

static void fill_info(cua_runtime *rt, cua__node *n, cua__sub *sub,
                      cua_placement *inputs, size_t *ninputs) {
  cua_op *op = n->op;
  cua_op_info *in = &n->info;
  memset(in, 0, sizeof *in);
  in->size = sizeof *in;
  in->kind = op->kind;
  in->name = op->hints.name;
  in->tag = op->hints.tag;
  in->preferred_device = op->hints.device;
  in->cost_ns = op->hints.cost_ns;
  in->bytes = op->hints.bytes;
  in->flops = op->hints.flops;
  in->priority = op->hints.priority;
  in->then_of.device = in->then_of.stream = -1;
  if (n->then_src != NULL && n->then_src->pl.device >= 0)
    in->then_of = n->then_src->pl;
  int dd = buffers_device(op);
  in->data_device = dd >= 0 ? dd : -1;
  in->restrict_device = -1;
  /* Memory a device cannot reach pins the op to where its data lives
   * (device-to-device copies excepted: the backend routes them). */
  if (!rt->all_peers && op->kind != CUA_OP_MEMCPY_D2D && op->nacc > 0)
    in->restrict_device = op->acc[0].buf->device;
  if (op->kind == CUA_OP_ALLOC || op->kind == CUA_OP_FREE)
    in->restrict_device = op->acc[0].buf->device;
  in->level = n->level;
  in->submission = sub ? sub->id : 0;
  in->op_id = n->op_id;
  *ninputs = 0;
  for (size_t i = 0; i < n->ndeps && *ninputs < 8; i++)
    if (n->deps[i].node->cls == CUA__CLASS_DEVICE &&
        n->deps[i].node->pl.device >= 0)
      inputs[(*ninputs)++] = n->deps[i].node->pl;
  in->ninputs = *ninputs;
  in->inputs = inputs;
}

static int valid_placement(cua_runtime *rt, const cua_op_info *in,
                           cua_placement pl) {
  if (pl.device < 0 || pl.device >= rt->ndev)
    return 0;
  if (pl.stream < 0 || pl.stream >= rt->devs[pl.device].nstreams)
    return 0;
  if (in->restrict_device >= 0 && pl.device != in->restrict_device)
    return 0;
  return 1;
}

static int policy_place(cua_runtime *rt, cua__polinst *p, const cua_op_info *in,
                        cua_placement *pl, char *msg, size_t len) {
  p->log[0] = '\0';
  int rc = p->d->place(p->state, in, pl);
  if (rc != 0) {
    snprintf(msg, len, "policy '%s' failed to place op '%s': %s%s%s", p->name,
             in->name ? in->name : "(unnamed)", cua_err_name(rc),
             p->log[0] ? ": " : "", p->log);
    return CUA_ERR_POLICY;
  }
  if (!valid_placement(rt, in, *pl)) {
    int nst = pl->device >= 0 && pl->device < rt->ndev
                  ? rt->devs[pl->device].nstreams
                  : 0;
    snprintf(msg, len,
             "policy '%s' placed op '%s' on device %d stream %d, which does "
             "not exist (the runtime has %d devices; that device has %d "
             "streams%s)",
             p->name, in->name ? in->name : "(unnamed)", pl->device, pl->stream,
             rt->ndev, nst,
             in->restrict_device >= 0 ? "; the op must run on device " : "");
    if (in->restrict_device >= 0 && pl->device >= 0 && pl->device < rt->ndev &&
        pl->stream >= 0 && pl->stream < nst)
      snprintf(msg, len,
               "policy '%s' placed op '%s' on device %d, but it must run on "
               "device %d (where its buffers live)",
               p->name, in->name ? in->name : "(unnamed)", pl->device,
               in->restrict_device);
    return CUA_ERR_BAD_PLACEMENT;
  }
  return 0;
}

/* Asks the submission's (or runtime's) policy, then the device's own
 * policy if that device has one. */
static int place_node(cua_runtime *rt, cua__node *n, cua__sub *sub, char *msg,
                      size_t len) {
  cua_placement inputs[8];
  size_t ninputs;
  fill_info(rt, n, sub, inputs, &ninputs);
  if (sub != NULL && sub->on_stream) {
    cua_placement pl = sub->placement;
    if (!valid_placement(rt, &n->info, pl)) {
      snprintf(msg, len,
               "explicit placement device %d stream %d is not valid for op "
               "'%s'",
               pl.device, pl.stream, node_name(n));
      return CUA_ERR_BAD_PLACEMENT;
    }
    n->pl = pl;
    n->placed_by = NULL;
    return 0;
  }
  cua__polinst *p = sub && sub->policy ? sub->policy : rt->policy;
  cua_placement pl = {-1, -1};
  int rc = policy_place(rt, p, &n->info, &pl, msg, len);
  if (rc != 0 && rt->cfg->on_policy_error == CUA__ON_POLICY_ERROR_FALLBACK) {
    if (rt->fallback == NULL &&
        cua__polinst_open(rt, "single-stream", &rt->fallback) != 0)
      return rc;
    if (rt->policy_error == NULL) {
      rt->policy_error = cua__strdup(msg);
      fprintf(stderr,
              "cuasync: falling back to single-stream (on_policy_error = "
              "fallback): %s\n",
              msg);
    }
    p = rt->fallback;
    rc = policy_place(rt, p, &n->info, &pl, msg, len);
  }
  if (rc != 0)
    return rc;
  cua__polinst *dp = rt->devs[pl.device].policy;
  if (dp != NULL && dp != p) {
    cua_op_info in2 = n->info;
    in2.restrict_device = pl.device;
    rc = policy_place(rt, dp, &in2, &pl, msg, len);
    if (rc != 0)
      return rc;
    p = dp;
  }
  n->pl = pl;
  n->placed_by = p;
  p->refs++;
  return 0;
}

/* Places one device node and gives it its stream's next number. */
static void place_one(cua_runtime *rt, cua__node *n, round *r) {
  char msg[CUA__ERRLEN];
  cua__sub *sub = n->nwatchers > 0 ? n->watchers[0] : NULL;
  int rc = place_node(rt, n, sub, msg, sizeof msg);
  if (rc == 0) {
    cua__stream *s = rt->devs[n->pl.device].streams[n->pl.stream];
    n->stream = s;
    n->seq = ++s->seq;
    s->load.ops_in_flight++;
    s->load.ops_total++;
    s->load.est_busy_ns += n->op->hints.cost_ns;
    if (n->placed_by && n->placed_by->d->submitted)
      n->placed_by->d->submitted(n->placed_by->state, &n->info, n->pl);
    n->state = CUA__NODE_ENQUEUED;
    q_push(&r->launch, n);
    resolve(rt, n, 0, r);
    return;
  }
  fail_node(rt, n, rc, msg);
  q_push(&r->settle, n);
}

/* ------------------------------------------------------------- launching */

static int ctx_func(void *vctx, void *native, cua_backend_err *err) {
  cua_stream_ctx *ctx = vctx;
  ctx->native = native;
  int rc = ctx->node->op->fn(ctx, ctx->node->op->arg);
  if (rc != 0)
    snprintf(err->msg, sizeof err->msg, "%s",
             ctx->msg ? ctx->msg : "the stream function failed");
  return rc;
}

static int ensure_allocated(cua_runtime *rt, cua_buffer *b, cua__stream *s,
                            char *msg, size_t len) {
  cua_buffer *root = cua__buffer_root(b);
  if (root->ptr != NULL)
    return 0;
  cua_backend_err err = {{0}};
  cua_backend_stream *bs = s->device == root->device ? s->bs : NULL;
  int rc = rt->be->mem_alloc(rt->bst, root->device, bs, root->bytes, &root->ptr,
                             &err);
  if (rc)
    snprintf(msg, len, "allocating %zu bytes on device %d: %s", root->bytes,
             root->device, err.msg[0] ? err.msg : cua_strerror(rc));
  return rc;
}

static int launch_node(cua_runtime *rt, cua__node *n, char *msg, size_t len) {
  cua_op *op = n->op;
  cua__stream *s = n->stream;
  int rc = 0;
  for (size_t i = 0; i < n->ndeps; i++) {
    cua__node *p = n->deps[i].node;
    if (p->cls == CUA__CLASS_DEVICE && p->state != CUA__NODE_DONE &&
        p->stream != NULL &&
        (rc = wait_for(rt, s, p->stream, p->seq, p->point)))
      break;
  }
  if (rc == 0 && op->kind == CUA_OP_BARRIER)
    for (int i = 0; i < rt->nstreams && rc == 0; i++) {
      cua__stream *o = rt->streams[i];
      uint64_t upto = o == s ? 0 : o->launched;
      rc = wait_for(rt, s, o, upto, NULL);
    }
  if (rc) {
    snprintf(msg, len, "inserting a cross-stream wait: %s", cua_strerror(rc));
    return rc;
  }
  if (op->kind == CUA_OP_FREE) {
    cua_buffer *root = cua__buffer_root(op->acc[0].buf);
    if (root->ptr != NULL)
      rt->be->mem_free(rt->bst, root->device, s->bs, root->ptr);
    root->ptr = NULL;
    return 0;
  }
  for (size_t i = 0; i < op->nacc; i++)
    if ((rc = ensure_allocated(rt, op->acc[i].buf, s, msg, len)))
      return rc;
  if (op->kind == CUA_OP_ALLOC) {
    n->result = op->acc[0].buf;
    return 0;
  }
  if (op->kind == CUA_OP_BARRIER)
    return 0;
  cua_backend_op bo;
  memset(&bo, 0, sizeof bo);
  bo.size = sizeof bo;
  bo.kind = op->kind;
  bo.seq = n->seq;
  bo.bytes = op->bytes;
  bo.value = op->value;
  bo.byte_value = op->byte_value;
  bo.spin = op->spin;
  void *params[64];
  switch (op->kind) {
  case CUA_OP_FILL:
  case CUA_OP_MEMSET:
  case CUA_OP_MEMCPY_H2D:
    bo.dst = (char *)cua__buffer_addr(op->acc[0].buf) + op->dst_off;
    bo.src = op->hptr;
    break;
  case CUA_OP_COPY:
  case CUA_OP_AXPY:
    bo.dst = cua__buffer_addr(op->acc[0].buf);
    bo.src = cua__buffer_addr(op->acc[1].buf);
    break;
  case CUA_OP_MEMCPY_D2H:
    bo.dst = op->hptr;
    bo.src = (char *)cua__buffer_addr(op->acc[0].buf) + op->src_off;
    n->result = op->hptr;
    break;
  case CUA_OP_MEMCPY_D2D:
    bo.dst = (char *)cua__buffer_addr(op->acc[0].buf) + op->dst_off;
    bo.src = (char *)cua__buffer_addr(op->acc[1].buf) + op->src_off;
    bo.dst_device = op->acc[0].buf->device;
    bo.src_device = op->acc[1].buf->device;
    break;
  case CUA_OP_FUNC:
    if (n->ctx == NULL) {
      n->ctx = cua__calloc(1, sizeof *n->ctx);
      n->ptrs = cua__calloc(op->nacc, sizeof *n->ptrs);
      if (n->ctx == NULL || n->ptrs == NULL)
        return CUA_ERR_NOMEM;
    }
    for (size_t i = 0; i < op->nacc; i++)
      n->ptrs[i] = cua__buffer_addr(op->acc[i].buf);
    n->ctx->node = n;
    n->ctx->rt = rt;
    n->ctx->native = rt->be->stream_native(rt->bst, s->bs);
    bo.func = ctx_func;
    bo.func_ctx = n->ctx;
    break;
  case CUA_OP_KERNEL:
    if (op->nargs > 64) {
      snprintf(msg, len, "kernel '%s': more than 64 arguments", node_name(n));
      return CUA_ERR_INVAL;
    }
    n->ptrs = cua__calloc(op->nargs, sizeof *n->ptrs);
    if (n->ptrs == NULL)
      return CUA_ERR_NOMEM;
    for (size_t i = 0; i < op->nargs; i++) {
      if (op->argbuf[i] >= 0) {
        n->ptrs[i] = cua__buffer_addr(op->acc[op->argbuf[i]].buf);
        params[i] = &n->ptrs[i];
      } else {
        params[i] = op->argdata + op->argoff[i];
      }
    }
    bo.kernel = op->kernel;
    memcpy(bo.grid, op->grid, sizeof bo.grid);
    memcpy(bo.block, op->block, sizeof bo.block);
    bo.shared_bytes = op->shared_bytes;
    bo.kernel_params = params;
    break;
  default:
    break;
  }
  if (n->placed_by != NULL &&
      ((n->placed_by->d->flags & CUA_POLICY_WANTS_TIMING) || rt->host_exec))
    bo.duration_ns = &n->duration_ns;
  cua_backend_err err = {{0}};
  rc = rt->be->launch(rt->bst, s->bs, &bo, &err);
  if (rc)
    snprintf(msg, len, "launching op '%s' on device %d stream %d: %s",
             node_name(n), n->pl.device, n->pl.stream,
             err.msg[0] ? err.msg : cua_strerror(rc));
  return rc;
}

/* Whether a consumer already placed on another stream needs an event after
 * @p n (those placed later fall back to recording when they need one). */
static int needs_event(const cua__node *n) {
  const dependent *d = n->dependents;
  for (size_t i = 0; i < n->ndependents; i++) {
    const cua__node *m = d[i].node;
    if (m->cls == CUA__CLASS_DEVICE && m->stream != NULL &&
        m->stream != n->stream && m->state != CUA__NODE_DONE)
      return 1;
  }
  return 0;
}

static void inflight_push(cua__stream *s, cua__node *n) {
  atomic_fetch_add(&n->refs, 1);
  n->inflight_next = NULL;
  if (s->inflight_tail)
    s->inflight_tail->inflight_next = n;
  else
    s->inflight_head = n;
  s->inflight_tail = n;
}

/* Places, launches and settles until nothing more is ready, then marks
 * every stream that got work. */
static void run_round(cua_runtime *rt, round *r) {
  for (;;) {
    cua__node *n;
    if ((n = q_pop(&r->place)) != NULL) {
      place_one(rt, n, r);
      continue;
    }
    if ((n = q_pop(&r->launch)) != NULL) {
      char msg[CUA__ERRLEN];
      int rc = n->code;
      if (rc == 0)
        rc = launch_node(rt, n, msg, sizeof msg);
      else
        snprintf(msg, sizeof msg, "%s", n->msg ? n->msg : "");
      n->stream->launched = n->seq;
      if (rc != 0) {
        fail_node(rt, n, rc, msg);
      } else if (needs_event(n)) {
        n->point = record_point(rt, n->stream);
      }
      rt->stats.ops++;
      inflight_push(n->stream, n);
      continue;
    }
    if ((n = q_pop(&r->settle)) != NULL) {
      /* Virtual nodes whose parts completed, and failed nodes that will
       * never run; failed nodes already on a stream finish in order. */
      if (n->state == CUA__NODE_PENDING)
        finish_node(rt, n, r);
      continue;
    }
    break;
  }
  for (int i = 0; i < rt->nstreams; i++) {
    cua__stream *s = rt->streams[i];
    if (s->marked < s->launched) {
      if (rt->be->mark(rt->bst, s->bs, s->launched) == 0)
        s->marked = s->launched;
    }
  }
  free(r->place.v);
  free(r->launch.v);
  free(r->settle.v);
  memset(&r->place, 0, sizeof r->place);
  memset(&r->launch, 0, sizeof r->launch);
  memset(&r->settle, 0, sizeof r->settle);
  if (rt->ready_head != NULL)
    cua__kick(rt);
}

/* ------------------------------------------------------------ completion */

static void compute_virtual_result(cua__node *n) {
  if (n->code != 0)
    return;
  switch (n->op->kind) {
  case CUA_OP_ZIP:
    n->results = cua__calloc(n->ndeps, sizeof *n->results);
    if (n->results != NULL) {
      n->nresults = n->ndeps;
      for (size_t i = 0; i < n->ndeps; i++)
        n->results[i] = n->deps[i].node->result;
    }
    n->result = n->results;
    break;
  case CUA_OP_UNZIP: {
    /* Its input is the zip's shared wrapper, which copied the results. */
    cua__node *z = n->deps[0].node;
    void **res = z->results;
    n->result = res && n->op->index < z->nresults ? res[n->op->index] : NULL;
    break;
  }
  case CUA_OP_THEN:
    n->result = n->ndeps > 1 ? n->deps[1].node->result : NULL;
    break;
  case CUA_OP_SHARED:
    if (n->ndeps > 0) {
      n->result = n->deps[0].node->result;
      n->results = NULL;
      if (n->deps[0].node->results != NULL) {
        n->nresults = n->deps[0].node->nresults;
        n->results = cua__calloc(n->nresults, sizeof *n->results);
        if (n->results)
          memcpy(n->results, n->deps[0].node->results,
                 n->nresults * sizeof *n->results);
        n->result = n->results;
      }
    }
    break;
  default:
    break;
  }
}

static void sub_node_done(cua_runtime *rt, cua__sub *s, cua__node *n) {
  if (n->code != 0 && s->status == 0) {
    s->status = n->code;
    free(s->msg);
    char buf[CUA__ERRLEN];
    snprintf(buf, sizeof buf, "op '%s': %s", node_name(n),
             n->msg ? n->msg : cua_strerror(n->code));
    s->msg = cua__strdup(buf);
  }
  if (s->pending > 0 && --s->pending == 0) {
    /* The root's own failure wins over the first failure seen. */
    if (s->root->code != 0) {
      s->status = s->root->code;
      free(s->msg);
      char buf[CUA__ERRLEN];
      snprintf(buf, sizeof buf, "op '%s': %s", node_name(s->root),
               s->root->msg ? s->root->msg : cua_strerror(s->root->code));
      s->msg = cua__strdup(buf);
    } else if (s->status == CUA_ERR_DEPENDENCY) {
      /* A failure elsewhere in the DAG that the root does not depend on
       * still fails the submission: keep the first message. */
    }
    s->next_done = rt->done_head;
    rt->done_head = s;
  }
}

static void finish_node(cua_runtime *rt, cua__node *n, round *r) {
  if (n->state == CUA__NODE_DONE)
    return;
  if (n->cls == CUA__CLASS_VIRTUAL)
    compute_virtual_result(n);
  n->state = CUA__NODE_DONE;
  if (n->code != 0)
    rt->stats.ops_failed++;
  if (n->stream != NULL) {
    cua_stream_load *l = &n->stream->load;
    if (l->ops_in_flight > 0)
      l->ops_in_flight--;
    l->est_busy_ns -= n->op->hints.cost_ns < l->est_busy_ns
                          ? n->op->hints.cost_ns
                          : l->est_busy_ns;
  }
  if (n->placed_by != NULL) {
    cua__polinst *p = n->placed_by;
    if (p->d->completed != NULL) {
      cua_op_info in = n->info;
      in.name = in.tag = NULL;
      in.inputs = NULL;
      in.ninputs = 0;
      p->d->completed(p->state, &in, n->pl, n->duration_ns);
    }
    n->placed_by = NULL;
    cua__polinst_release(p);
  }
  resolve(rt, n, 1, r);
  for (size_t i = 0; i < n->nwatchers; i++)
    sub_node_done(rt, n->watchers[i], n);
  n->nwatchers = 0;
  release_dependents(n);
  /* A virtual node keeps its parts: their results are its result. */
  if (n->cls != CUA__CLASS_VIRTUAL)
    release_deps(n);
  /* Buffer states keep done nodes (the last writer, or a failure that
   * poisons the buffer), and the op holds the buffers: dropping the op
   * here breaks that cycle, so buffers are freed once their handles are. */
  if (n->op->hints.name != NULL)
    n->name = cua__strdup(n->op->hints.name);
  cua_op *op = n->op;
  n->op = NULL;
  cua_op_destroy(op);
}

/* Reads progress and errors of every stream and completes what finished.
 * Errors are read after progress: a failure of op N is recorded before
 * progress can pass N, so every op seen complete has had its failure
 * seen too, and consumers are failed before they can complete. */
static int process_progress(cua_runtime *rt, round *r) {
  int any = 0;
  uint64_t stackv[64];
  uint64_t *vals = rt->nstreams <= 64
                       ? stackv
                       : cua__malloc((size_t)rt->nstreams * sizeof *vals);
  if (vals == NULL)
    return 0;
  for (int i = 0; i < rt->nstreams; i++) {
    cua__stream *s = rt->streams[i];
    vals[i] = s->done;
    if (s->inflight_head == NULL)
      continue;
    cua_backend_err err = {{0}};
    int rc = rt->be->progress(rt->bst, s->bs, &vals[i], &err);
    if (rc != 0) {
      /* The stream can never progress: fail everything on it. */
      for (cua__node *n = s->inflight_head; n; n = n->inflight_next)
        fail_node(rt, n, rc, err.msg[0] ? err.msg : cua_strerror(rc));
      vals[i] = s->seq;
    }
  }
  for (int i = 0; i < rt->nstreams; i++) {
    cua__stream *s = rt->streams[i];
    uint64_t seq;
    int code;
    cua_backend_err err = {{0}};
    while (rt->be->poll_error(rt->bst, s->bs, &seq, &code, &err) == 1) {
      for (cua__node *n = s->inflight_head; n; n = n->inflight_next)
        if (n->seq == seq) {
          fail_node(rt, n, code, err.msg);
          break;
        }
      memset(&err, 0, sizeof err);
    }
  }
  for (int i = 0; i < rt->nstreams; i++) {
    cua__stream *s = rt->streams[i];
    if (vals[i] > s->done)
      s->done = vals[i];
    while (s->inflight_head != NULL && s->inflight_head->seq <= s->done) {
      cua__node *n = s->inflight_head;
      s->inflight_head = n->inflight_next;
      if (s->inflight_head == NULL)
        s->inflight_tail = NULL;
      finish_node(rt, n, r);
      cua__node_release(n);
      any = 1;
    }
    while (s->points_head != NULL && s->points_head->seq <= s->done) {
      cua__point *p = s->points_head;
      s->points_head = p->next;
      if (s->points_head == NULL)
        s->points_tail = NULL;
      cua__event_put(rt, s->device, p->event);
      free(p->vc);
      free(p);
    }
  }
  if (vals != stackv)
    free(vals);
  return any;
}

/* Runs one host step or map with the lock released. */
static void run_host_node(cua_runtime *rt, cua__node *n) {
  cua_op *op = n->op;
  int rc = 0;
  void *result = NULL;
  void *in = n->ndeps > 0 ? n->deps[0].node->result : NULL;
  n->state = CUA__NODE_RUNNING;
  pthread_mutex_unlock(&rt->lock);
  if (op->kind == CUA_OP_HOST)
    rc = op->host_fn(op->arg, &result);
  else
    rc = op->map_fn(in, op->arg, &result);
  pthread_mutex_lock(&rt->lock);
  rt->stats.host_steps++;
  rt->stats.ops++;
  n->result = result;
  if (rc != 0) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s returned %d",
             op->kind == CUA_OP_HOST ? "the host step" : "the map function",
             rc);
    fail_node(rt, n, rc < 0 ? rc : CUA_ERR_OP_FAILED, buf);
  }
}

static int pending_device_work(cua_runtime *rt) {
  for (int i = 0; i < rt->nstreams; i++)
    if (rt->streams[i]->inflight_head != NULL)
      return 1;
  return 0;
}

void *cua__completion_thread(void *arg) {
  cua_runtime *rt = arg;
  pthread_mutex_lock(&rt->lock);
  for (;;) {
    round r;
    memset(&r, 0, sizeof r);
    r.rt = rt;
    process_progress(rt, &r);
    run_round(rt, &r);
    /* Host steps ready to run. */
    while (rt->ready_head != NULL) {
      cua__node *n = rt->ready_head;
      rt->ready_head = n->ready_next;
      if (rt->ready_head == NULL)
        rt->ready_tail = NULL;
      if (n->code == 0 && n->state == CUA__NODE_PENDING)
        run_host_node(rt, n);
      memset(&r, 0, sizeof r);
      r.rt = rt;
      finish_node(rt, n, &r);
      run_round(rt, &r);
      cua__node_release(n);
    }
    /* Futures to fire, outside the lock. */
    while (rt->done_head != NULL) {
      cua__sub *s = rt->done_head;
      rt->done_head = s->next_done;
      pthread_mutex_unlock(&rt->lock);
      cua__sub_fire(s);
      pthread_mutex_lock(&rt->lock);
      if (s->prev)
        s->prev->next = s->next;
      else
        rt->subs = s->next;
      if (s->next)
        s->next->prev = s->prev;
      rt->nsubs--;
      /* The submission no longer needs its nodes, except the root whose
       * result the future reports. */
      for (size_t i = 0; i < s->nnodes; i++)
        cua__node_release(s->nodes[i]);
      free(s->nodes);
      s->nodes = NULL;
      s->nnodes = 0;
      pthread_cond_broadcast(&rt->idle);
      pthread_mutex_unlock(&rt->lock);
      cua__sub_release(s);
      pthread_mutex_lock(&rt->lock);
    }
    if (rt->stopping && rt->nsubs == 0 && !pending_device_work(rt))
      break;
    if (rt->ready_head != NULL || rt->done_head != NULL)
      continue;
    if (pending_device_work(rt)) {
      pthread_mutex_unlock(&rt->lock);
      rt->be->wait(rt->bst, 1000000);
      pthread_mutex_lock(&rt->lock);
    } else {
      pthread_cond_wait(&rt->work, &rt->lock);
    }
  }
  pthread_mutex_unlock(&rt->lock);
  return NULL;
}

/* -------------------------------------------------------------- building */

typedef struct build {
  cua_runtime *rt;
  cua__sub *sub;
  cua__node **order; /* post-order: the sequential reference order */
  size_t n, cap;
  /* op -> node, for this submission (ops appear once per submission). */
  cua_op **keys;
  cua__node **vals;
  size_t hcap;
} build;

static size_t hslot(const build *b, const cua_op *op) {
  uintptr_t h = (uintptr_t)op;
  h ^= h >> 17;
  h *= 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 7) & (b->hcap - 1);
}

static cua__node *hget(const build *b, const cua_op *op) {
  if (b->hcap == 0)
    return NULL;
  for (size_t i = hslot(b, op);; i = (i + 1) & (b->hcap - 1)) {
    if (b->keys[i] == op)
      return b->vals[i];
    if (b->keys[i] == NULL)
      return NULL;
  }
}

static int hput(build *b, cua_op *op, cua__node *n);

static int hgrow(build *b) {
  build nb = *b;
  nb.hcap = b->hcap ? b->hcap * 2 : 64;
  nb.keys = cua__calloc(nb.hcap, sizeof *nb.keys);
  nb.vals = cua__calloc(nb.hcap, sizeof *nb.vals);
  if (nb.keys == NULL || nb.vals == NULL) {
    free(nb.keys);
    free(nb.vals);
    return CUA_ERR_NOMEM;
  }
  for (size_t i = 0; i < b->hcap; i++)
    if (b->keys[i] != NULL)
      hput(&nb, b->keys[i], b->vals[i]);
  free(b->keys);
  free(b->vals);
  b->keys = nb.keys;
  b->vals = nb.vals;
  b->hcap = nb.hcap;
  return 0;
}

static int hput(build *b, cua_op *op, cua__node *n) {
  if (b->hcap == 0 || (b->n + 1) * 2 > b->hcap)
    if (hgrow(b))
      return CUA_ERR_NOMEM;
  size_t i = hslot(b, op);
  while (b->keys[i] != NULL)
    i = (i + 1) & (b->hcap - 1);
  b->keys[i] = op;
  b->vals[i] = n;
  return 0;
}

static int watch(cua__sub *s, cua__node *n) {
  if (cua__grow_inl(&n->watchers, &n->capwatchers, n->nwatchers + 1,
                    sizeof *n->watchers, n->watchers_inl))
    return CUA_ERR_NOMEM;
  n->watchers[n->nwatchers++] = s;
  s->pending++;
  return 0;
}

/* Adds a node to the submission's list (which holds a reference). */
static int sub_add(cua__sub *s, cua__node *n, size_t *cap) {
  if (cua__grow(&s->nodes, cap, s->nnodes + 1, sizeof *s->nodes))
    return CUA_ERR_NOMEM;
  s->nodes[s->nnodes++] = n;
  atomic_fetch_add(&n->refs, 1);
  return 0;
}

/* The device op a "then" continues: the one that ends @p n's part of the
 * DAG, through thens, shared ops and unzips. A zip joins ops that ran
 * concurrently and has no one stream to continue: NULL. */
static cua__node *then_source(cua__node *n) {
  for (int depth = 0; n != NULL && depth < 10000; depth++) {
    if (n->cls == CUA__CLASS_DEVICE)
      return n;
    if (n->cls != CUA__CLASS_VIRTUAL || n->state == CUA__NODE_DONE ||
        n->ndeps == 0 || n->op == NULL || n->op->kind == CUA_OP_ZIP)
      return NULL;
    n = n->deps[n->ndeps - 1].node;
  }
  return NULL;
}

/* "then": every real node that starts @p next's part of the DAG runs after
 * @p first. */
static int add_after(build *b, cua__node *next0, cua__node *first) {
  node_stack st;
  ns_init(&st);
  int rc = ns_push(&st, next0);
  while (rc == 0 && st.len > 0) {
    cua__node *next = st.v[--st.len];
    if (next->state == CUA__NODE_DONE)
      continue;
    if (next->cls != CUA__CLASS_VIRTUAL) {
      if (hget(b, next->op) != next)
        continue; /* a shared node from an earlier submission */
      if (next->then_src == NULL)
        next->then_src = then_source(first);
      rc = next->cls == CUA__CLASS_DEVICE
               ? add_device_dep(next, first, CUA__DEP_DATA)
               : add_dep(next, first, CUA__DEP_DATA | CUA__DEP_COMPLETE);
      continue;
    }
    if (next->op->kind == CUA_OP_SHARED && hget(b, next->op) != next)
      continue;
    /* A then starts with its first part; a zip with all of its parts. */
    size_t nd = next->op->kind == CUA_OP_THEN ? 1 : next->ndeps;
    for (size_t i = nd < next->ndeps ? nd : next->ndeps; i-- > 0 && rc == 0;)
      rc = ns_push(&st, next->deps[i].node);
  }
  ns_free(&st);
  return rc;
}

/* Builds the nodes of the DAG below @p root in post-order, iteratively. */
static int build_graph(build *b, cua_op *root, size_t *subcap) {
  typedef struct frame {
    cua_op *op;
    size_t next;
  } frame;
  size_t cap = 64, len = 0;
  frame *st = cua__malloc(cap * sizeof *st);
  if (st == NULL)
    return CUA_ERR_NOMEM;
  st[len++] = (frame){root, 0};
  int rc = 0;
  while (len > 0 && rc == 0) {
    frame *f = &st[len - 1];
    cua_op *op = f->op;
    if (f->next == 0 && hget(b, op) != NULL) {
      len--;
      continue;
    }
    /* A shared op that already ran (or is running) in an earlier
     * submission is not built again: its node is reused. */
    if (op->kind == CUA_OP_SHARED && op->shared_node != NULL) {
      cua__node *n = op->shared_node;
      atomic_fetch_add(&n->refs, 1);
      rc = hput(b, op, n);
      if (rc == 0)
        rc = sub_add(b->sub, n, subcap);
      if (rc == 0 && n->state != CUA__NODE_DONE &&
          (n->cls != CUA__CLASS_VIRTUAL || op == root))
        rc = watch(b->sub, n);
      cua__node_release(n);
      len--;
      continue;
    }
    if (f->next < op->ninputs) {
      cua_op *in = op->inputs[f->next++];
      if (hget(b, in) == NULL) {
        if (len == cap) {
          frame *s2 = cua__realloc(st, 2 * cap * sizeof *st);
          if (s2 == NULL) {
            rc = CUA_ERR_NOMEM;
            break;
          }
          st = s2;
          cap *= 2;
        }
        st[len++] = (frame){in, 0};
      }
      continue;
    }
    /* Every input is built: build this op's node. */
    cua__node *n = node_new(b->rt, op);
    if (n == NULL) {
      rc = CUA_ERR_NOMEM;
      break;
    }
    cua__op_freeze(op);
    /* The submission waits for every op that does work, and for the root;
     * a zip or then inside the DAG completes with its parts anyway. */
    if ((rc = hput(b, op, n)) == 0 && (rc = sub_add(b->sub, n, subcap)) == 0 &&
        (n->cls != CUA__CLASS_VIRTUAL || op == root))
      rc = watch(b->sub, n);
    if (rc == 0 &&
        cua__grow(&b->order, &b->cap, b->n + 1, sizeof *b->order) != 0)
      rc = CUA_ERR_NOMEM;
    if (rc == 0)
      b->order[b->n++] = n;
    for (size_t i = 0; i < op->ninputs && rc == 0; i++) {
      cua__node *p = hget(b, op->inputs[i]);
      unsigned fl = CUA__DEP_DATA;
      if (n->cls == CUA__CLASS_DEVICE)
        rc = add_device_dep(n, p, fl);
      else
        rc = add_dep(n, p, fl | CUA__DEP_COMPLETE);
      if (p->level + 1 > n->level)
        n->level = p->level + 1;
    }
    if (rc == 0 && op->kind == CUA_OP_THEN)
      rc = add_after(b, hget(b, op->inputs[1]), hget(b, op->inputs[0]));
    if (rc == 0 && op->kind == CUA_OP_SHARED) {
      op->shared_node = n;
      atomic_fetch_add(&n->refs, 1);
    }
    cua__node_release(n);
    len--;
  }
  free(st);
  return rc;
}

/* Checks every access of every device node before anything changes, so a
 * submission that fails validation leaves no trace. */
static int validate(build *b, char *msg, size_t len) {
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
        snprintf(msg, len, "op '%s', buffer %zu: %s", node_name(n), a, why);
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
static int add_hazards(cua__node *n) {
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
      rc = add_dep(n, st->writers[i], (mode & CUA_READ) ? CUA__DEP_DATA : 0);
    if (mode & CUA_WRITE) {
      for (size_t i = 0; i < st->nreaders && rc == 0; i++)
        if (st->readers[i] != n)
          rc = add_dep(n, st->readers[i], 0);
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
static int wire(cua_runtime *rt, build *b, round *r) {
  for (size_t i = 0; i < b->n; i++) {
    cua__node *n = b->order[i];
    for (size_t k = 0; k < n->ndeps; k++) {
      cua__node *p = n->deps[k].node;
      unsigned fl = n->deps[k].flags;
      if (n->cls != CUA__CLASS_DEVICE || p->cls != CUA__CLASS_DEVICE)
        fl |= CUA__DEP_COMPLETE;
      n->deps[k].flags = fl;
      if (p->state == CUA__NODE_DONE) {
        if (p->code != 0 && (fl & CUA__DEP_DATA) && n->code == 0) {
          char buf[CUA__ERRLEN];
          snprintf(buf, sizeof buf, "depends on failed op '%s' (%s): %s",
                   node_name(p), cua_err_name(p->code), p->msg ? p->msg : "");
          n->code = CUA_ERR_DEPENDENCY;
          n->msg = cua__strdup(buf);
        }
        continue;
      }
      if (p->code != 0 && (fl & CUA__DEP_DATA) && n->code == 0) {
        char buf[CUA__ERRLEN];
        snprintf(buf, sizeof buf, "depends on failed op '%s' (%s): %s",
                 node_name(p), cua_err_name(p->code), p->msg ? p->msg : "");
        n->code = CUA_ERR_DEPENDENCY;
        n->msg = cua__strdup(buf);
      }
      if (!(fl & CUA__DEP_COMPLETE) && p->state == CUA__NODE_ENQUEUED)
        continue;
      if (add_dependent(p, n, fl))
        return CUA_ERR_NOMEM;
      n->unresolved++;
    }
  }
  for (size_t i = 0; i < b->n; i++)
    if (b->order[i]->unresolved == 0)
      ready(rt, b->order[i], r);
  return 0;
}

/* ------------------------------------------------------------ submission */

static int do_submit(cua_future **fut, cua_runtime *rt, cua_op *op,
                     cua__polinst *pol, const cua_submit_options *opts) {
  if (fut != NULL)
    *fut = NULL;
  if (rt == NULL || op == NULL || fut == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_submit: NULL argument");
  if (op->rt != rt)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_submit: the op belongs to another runtime");
  cua__sub *sub = cua__sub_new(rt);
  if (sub == NULL)
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  pthread_mutex_lock(&rt->lock);
  if (rt->stopping) {
    pthread_mutex_unlock(&rt->lock);
    cua__sub_release(sub);
    return cua__fail(rt, CUA_ERR_CANCELED, "cua_submit: runtime closing");
  }
  sub->id = ++rt->next_sub;
  sub->policy = pol;
  if (opts != NULL && opts->on_stream) {
    cua_placement pl = opts->placement;
    if (pl.device < 0 || pl.device >= rt->ndev || pl.stream < 0 ||
        pl.stream > 1023) {
      pthread_mutex_unlock(&rt->lock);
      cua__sub_release(sub);
      return cua__fail(rt, CUA_ERR_BAD_PLACEMENT,
                       "cua_submit: no device %d stream %d (the runtime has "
                       "%d devices; stream indices 0..1023)",
                       pl.device, pl.stream, rt->ndev);
    }
    int rc = cua__ensure_streams(rt, pl.device, pl.stream + 1);
    if (rc) {
      pthread_mutex_unlock(&rt->lock);
      cua__sub_release(sub);
      return cua__fail(rt, rc, "cua_submit: creating stream %d: %s", pl.stream,
                       cua_runtime_error(rt));
    }
    sub->on_stream = 1;
    sub->placement = pl;
  }
  build b;
  memset(&b, 0, sizeof b);
  b.rt = rt;
  b.sub = sub;
  size_t subcap = 0;
  char msg[CUA__ERRLEN] = "";
  int rc = build_graph(&b, op, &subcap);
  if (rc == 0)
    rc = validate(&b, msg, sizeof msg);
  if (rc != 0) {
    /* Nothing ran: undo the nodes and any shared op this submission made
     * the owner of its node. */
    for (size_t i = 0; i < b.n; i++) {
      cua__node *n = b.order[i];
      if (n->op->kind == CUA_OP_SHARED && n->op->shared_node == n) {
        n->op->shared_node = NULL;
        cua__node_release(n);
      }
      n->nwatchers = 0;
    }
    for (size_t i = 0; i < sub->nnodes; i++) {
      cua__node *n = sub->nodes[i];
      for (size_t k = 0; k < n->nwatchers; k++)
        if (n->watchers[k] == sub)
          n->watchers[k] = n->watchers[--n->nwatchers];
      cua__node_release(n);
    }
    free(sub->nodes);
    sub->nodes = NULL;
    sub->nnodes = 0;
    pthread_mutex_unlock(&rt->lock);
    free(b.order);
    free(b.keys);
    free(b.vals);
    cua__sub_release(sub);
    if (rc == CUA_ERR_NOMEM && msg[0] == '\0')
      snprintf(msg, sizeof msg, "out of host memory");
    return cua__fail(rt, rc, "cua_submit: %s", msg);
  }
  for (size_t i = 0; i < b.n; i++)
    if (b.order[i]->cls == CUA__CLASS_DEVICE)
      add_hazards(b.order[i]);
  sub->root = hget(&b, op);
  atomic_fetch_add(&sub->root->refs, 1);
  if (pol != NULL)
    pol->refs++;
  /* The runtime's reference, dropped when the future fires. */
  atomic_fetch_add(&sub->refs, 1);
  sub->next = rt->subs;
  if (rt->subs)
    rt->subs->prev = sub;
  rt->subs = sub;
  rt->nsubs++;
  rt->stats.submissions++;
  round r;
  memset(&r, 0, sizeof r);
  r.rt = rt;
  wire(rt, &b, &r);
  free(b.order);
  free(b.keys);
  free(b.vals);
  /* Everything may already be complete (a submission of shared ops that
   * ran before): then it fires through the completion thread too. */
  if (sub->pending == 0) {
    if (sub->root->code != 0) {
      char buf[CUA__ERRLEN];
      snprintf(buf, sizeof buf, "op '%s': %s", node_name(sub->root),
               sub->root->msg ? sub->root->msg : "");
      sub->status = sub->root->code;
      sub->msg = cua__strdup(buf);
    }
    sub->next_done = rt->done_head;
    rt->done_head = sub;
  }
  run_round(rt, &r);
  cua__kick(rt);
  pthread_mutex_unlock(&rt->lock);
  cua_future *f = cua__malloc(sizeof *f);
  if (f == NULL) {
    /* The work runs anyway; the caller just cannot wait for it. */
    cua__sub_release(sub);
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  }
  f->sub = sub;
  *fut = f;
  return 0;
}

int cua_submit(cua_future **fut, cua_runtime *rt, cua_op *op,
               const cua_submit_options *opts) {
  cua__polinst *pol = NULL;
  if (opts != NULL &&
      opts->size >= offsetof(cua_submit_options, policy) + sizeof(opts->policy))
    pol = (cua__polinst *)opts->policy;
  return do_submit(fut, rt, op, pol, opts);
}

int cua_submit_on(cua_future **fut, cua_runtime *rt, cua_op *op, int device,
                  int stream) {
  cua_submit_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.on_stream = 1;
  o.placement.device = device;
  o.placement.stream = stream;
  return do_submit(fut, rt, op, NULL, &o);
}

int cua_submit_wait(cua_runtime *rt, cua_op *op, const cua_submit_options *opts,
                    void **result) {
  cua_future *f;
  int rc = cua_submit(&f, rt, op, opts);
  if (rc)
    return rc;
  rc = cua_future_wait(f);
  if (rc == 0 && result != NULL)
    cua_future_result(f, result);
  if (rc != 0)
    cua__fail(rt, rc, "%s", cua_future_error(f));
  cua_future_destroy(f);
  return rc;
}

/* ------------------------------------------------------ stream functions */

void *cua_ctx_stream(const cua_stream_ctx *ctx) {
  return ctx->native;
}

cua_placement cua_ctx_placement(const cua_stream_ctx *ctx) {
  return ctx->node->pl;
}

const char *cua_ctx_backend(const cua_stream_ctx *ctx) {
  return ctx->rt->be->name;
}

void *cua_ctx_ptr(const cua_stream_ctx *ctx, size_t i) {
  if (i >= ctx->node->op->nacc)
    return NULL;
  return ctx->node->ptrs[i];
}

void cua_ctx_set_result(cua_stream_ctx *ctx, void *result) {
  ctx->node->result = result;
}

void cua_ctx_fail(cua_stream_ctx *ctx, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(ctx->msg);
  ctx->msg = cua__strdup(buf);
}
