/*
 * core/executor.c: applying a command list, with no core lock held.
 *
 * A round (commands.c) decides under rt->lock; the thread that decided it
 * then releases the lock and applies its commands here: backend calls
 * (waits, event records, launches, marks), lazy allocations, frees, and on
 * backends that run stream functions at launch time (CUDA), the user's
 * stream functions. So no user code and no backend launch ever runs under
 * a core lock.
 *
 * Order: every command carries a ticket of its stream, given in decision
 * order. A command runs once every earlier command of its stream has
 * (s->executed, an atomic counter); a WAIT also waits until the RECORD of
 * its point has run. Tickets are given under one lock, so the commands of
 * all threads form one order, each thread applies its lists in that order,
 * and each command waits only for earlier ones: the earliest unapplied
 * command can always run, so this cannot deadlock. Waiting spins briefly,
 * then sleeps on rt->exec_cv.
 *
 * A stream function that submits work runs inside an executor; its
 * submission's commands are deferred to the end of the list being applied
 * on that thread (they come later in the order), instead of waiting for
 * the stream function's own stream to move on.
 *
 * The launch threads ([runtime] launch_threads, launcher.c) apply lists
 * here too, each from its own queue.
 *
 * Owns: s->executed, s->exec_seq, s->wait_failed, point->users and
 * point->failed (atomics), and the lists deferred on this thread (its
 * thread-local queue). Applying a list takes rt->lock only to fail a node
 * whose launch failed, or to hand a failed mark back.
 */
#include "config.h"
#include "internal.h"

#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local int tls_depth; /* applying a list */
static _Thread_local int tls_user;  /* in a stream function */
/* The lists deferred by submissions made while this thread applies one,
 * each in its holder (cua__cmdlist::box, from its runtime's pool: no
 * allocation), linked through next, with its runtime in defer_rt. */
static _Thread_local cua__cmdlist *tls_head, *tls_tail;

int cua__in_user_code(void) {
  return tls_user > 0;
}

/* ------------------------------------------------------------------ turns */

/* Waits until stream @p s has applied @p ticket commands. */
static void turn_wait(cua_runtime *rt, cua__stream *s, uint64_t ticket) {
  if (atomic_load_explicit(&s->executed, memory_order_acquire) >= ticket)
    return;
  for (int i = 0; i < 64; i++) {
    sched_yield();
    if (atomic_load_explicit(&s->executed, memory_order_acquire) >= ticket)
      return;
  }
  pthread_mutex_lock(&rt->exec_mu);
  atomic_fetch_add(&rt->exec_waiters, 1);
  while (atomic_load(&s->executed) < ticket)
    pthread_cond_wait(&rt->exec_cv, &rt->exec_mu);
  atomic_fetch_sub(&rt->exec_waiters, 1);
  pthread_mutex_unlock(&rt->exec_mu);
}

static void turn_done(cua_runtime *rt, cua__stream *s) {
  atomic_fetch_add(&s->executed, 1);
  if (atomic_load(&rt->exec_waiters) > 0) {
    pthread_mutex_lock(&rt->exec_mu);
    pthread_cond_broadcast(&rt->exec_cv);
    pthread_mutex_unlock(&rt->exec_mu);
  }
}

/* -------------------------------------------------------------- launching */

static int ctx_func(void *vctx, void *native, cua_backend_err *err) {
  cua_stream_ctx *ctx = vctx;
  ctx->native = native;
  tls_user++;
  int rc = ctx->node->op->fn(ctx, ctx->node->op->arg);
  tls_user--;
  if (rc != 0)
    snprintf(err->msg, sizeof err->msg, "%s",
             ctx->msg ? ctx->msg : "the stream function failed");
  return rc;
}

static int ensure_allocated(cua_runtime *rt, cua_buffer *b, cua__stream *s,
                            char *msg, size_t len) {
  cua_buffer *root = cua__buffer_root(b);
  if (__atomic_load_n(&root->ptr, __ATOMIC_ACQUIRE) != NULL)
    return 0;
  /* Only msg[0] is cleared: zeroing all 512 bytes costs about 70
   * instructions per call (callgrind); launches and waits make one each. */
  cua_backend_err err;
  err.msg[0] = '\0';
  cua_backend_stream *bs = s->device == root->device ? s->bs : NULL;
  void *ptr = NULL;
  int rc =
      rt->be->mem_alloc(rt->bst, root->device, bs, root->bytes, &ptr, &err);
  if (rc) {
    snprintf(msg, len, "allocating %zu bytes on device %d: %s", root->bytes,
             root->device, err.msg[0] ? err.msg : cua_strerror(rc));
    return rc;
  }
  /* Two ops that only read a buffer nothing wrote may be applied at once
   * by two threads (launch threads of different streams, or submitting
   * threads): the first allocation stays, the other is given back. */
  void *none = NULL;
  if (!__atomic_compare_exchange_n(&root->ptr, &none, ptr, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    rt->be->mem_free(rt->bst, root->device, bs, ptr);
  return 0;
}

/* Inlined into launch_node(), the hot path; cua__backend_op() for graph
 * replays. */
static inline int backend_op(const cua_op *op, uint64_t seq, cua_backend_op *bo,
                             void **params, void **ptrs, const cua__node *n,
                             const char *name, char *msg, size_t len) {
  memset(bo, 0, sizeof *bo);
  bo->size = sizeof *bo;
  bo->kind = op->kind;
  bo->seq = seq;
  if (op->kind != CUA_OP_KERNEL) {
    /* The memory ops' group of parameters (internal.h). */
    bo->bytes = op->bytes;
    bo->value = op->value;
    bo->byte_value = op->byte_value;
    bo->spin = op->spin;
  }
  switch (op->kind) {
  case CUA_OP_FILL:
  case CUA_OP_MEMSET:
  case CUA_OP_MEMCPY_H2D:
    bo->dst = (char *)cua__buffer_addr(op->acc[0].buf) + op->dst_off;
    bo->src = op->hptr;
    break;
  case CUA_OP_COPY:
  case CUA_OP_AXPY:
    bo->dst = cua__buffer_addr(op->acc[0].buf);
    bo->src = cua__buffer_addr(op->acc[1].buf);
    break;
  case CUA_OP_MEMCPY_D2H:
    bo->dst = op->hptr;
    bo->src = (char *)cua__buffer_addr(op->acc[0].buf) + op->src_off;
    break;
  case CUA_OP_MEMCPY_D2D:
    bo->dst = (char *)cua__buffer_addr(op->acc[0].buf) + op->dst_off;
    bo->src = (char *)cua__buffer_addr(op->acc[1].buf) + op->src_off;
    bo->dst_device = op->acc[0].buf->device;
    bo->src_device = op->acc[1].buf->device;
    break;
  case CUA_OP_KERNEL:
    if (op->nargs > 64) {
      /* (the node's name only here: naming it costs every launch) */
      snprintf(msg, len, "kernel '%s': more than 64 arguments",
               name != NULL ? name : cua__node_name(n));
      return CUA_ERR_INVAL;
    }
    for (size_t i = 0; i < op->nargs; i++) {
      if (op->argbuf[i] >= 0) {
        ptrs[i] = cua__buffer_addr(op->acc[op->argbuf[i]].buf);
        params[i] = &ptrs[i];
      } else {
        params[i] = op->argdata + op->argoff[i];
      }
    }
    bo->kernel = op->kernel;
    memcpy(bo->grid, op->grid, sizeof bo->grid);
    memcpy(bo->block, op->block, sizeof bo->block);
    bo->shared_bytes = op->shared_bytes;
    bo->kernel_params = params;
    break;
  default:
    break;
  }
  return 0;
}

int cua__backend_op(const cua_op *op, uint64_t seq, cua_backend_op *bo,
                    void **params, void **ptrs, const char *name, char *msg,
                    size_t len) {
  return backend_op(op, seq, bo, params, ptrs, NULL, name, msg, len);
}

static int launch_node(cua_runtime *rt, cua__node *n, char *msg, size_t len) {
  cua_op *op = n->op;
  cua__stream *s = n->stream;
  int rc = 0;
  if (op->kind == CUA_OP_WAIT_NATIVE) {
    cua_backend_err err;
    err.msg[0] = '\0';
    if (!cua__backend_has_native(rt)) {
      snprintf(msg, len, "the %s backend cannot wait for a native stream",
               rt->be->name);
      return CUA_ERR_NOTSUP;
    }
    rc = rt->be->native_record(rt->bst, op->native_device, op->native,
                               n->ext_event, &err);
    if (rc == 0)
      rc = rt->be->stream_wait_event(rt->bst, s->bs, n->ext_event);
    if (rc)
      snprintf(msg, len, "waiting for native stream %p: %s", op->native,
               err.msg[0] ? err.msg : cua_strerror(rc));
    return rc;
  }
  if (op->kind == CUA_OP_FREE) {
    cua_buffer *root = cua__buffer_root(op->acc[0].buf);
    void *ptr = __atomic_exchange_n(&root->ptr, NULL, __ATOMIC_ACQ_REL);
    if (ptr != NULL)
      rt->be->mem_free(rt->bst, root->device, s->bs, ptr);
    return 0;
  }
  for (size_t i = 0; i < op->nacc; i++)
    if ((rc = ensure_allocated(rt, op->acc[i].buf, s, msg, len)))
      return rc;
  if (op->kind == CUA_OP_ALLOC || op->kind == CUA_OP_BARRIER)
    return 0;
  if (op->kind == CUA_OP_GRAPH)
    return cua__graph_replay(rt, n, msg, len);
  cua_backend_op bo;
  /* A kernel's argument pointers need to live only until launch() returns
   * (backend.h): here, beside the parameters that point at them. */
  void *params[64], *ptrs[64];
  if (op->kind == CUA_OP_FUNC) {
    memset(&bo, 0, sizeof bo);
    bo.size = sizeof bo;
    bo.kind = op->kind;
    bo.seq = n->seq;
    /* Its buffers' addresses as of now (cua_ctx_ptr()): a backend that
     * runs the function later (host) may by then have seen a later free
     * of one launched, which clears the buffer's pointer at once though
     * the memory goes only in stream order. */
    if (cua__node_ptrs(n, op->nacc) != 0)
      return CUA_ERR_NOMEM;
    for (size_t i = 0; i < op->nacc; i++)
      n->ptrs[i] = cua__buffer_addr(op->acc[i].buf);
    n->ctx.node = n;
    n->ctx.rt = rt;
    n->ctx.native = rt->be->stream_native(rt->bst, s->bs);
    bo.func = ctx_func;
    bo.func_ctx = &n->ctx;
  } else {
    rc = backend_op(op, n->seq, &bo, params, ptrs, n, NULL, msg, len);
    if (rc)
      return rc;
  }
  /* Backends that run ops on host threads measure them for free; on the
   * others (an event pair per op on CUDA) the completion thread estimates
   * durations from when it sees streams progress (complete.c), except for
   * the few ops each model class samples (models.c): those the backend
   * times, as an interval seen from the host would also count the time
   * the op waited for its inputs and for its stream. */
  if ((rt->host_exec || n->sampled) && n->placed_by != NULL)
    bo.duration_ns = &n->duration_ns;
  /* Observers get measured times where the backend runs ops on host
   * threads, at no extra cost. Elsewhere [runtime] observer_times says:
   * ends (an event after each op on CUDA: the end measured, the start
   * bounded by it, complete.c), device (an event pair: both measured), or
   * estimated (the completion thread estimates both). Durations go into a
   * field of their own where the models would learn from them otherwise:
   * from an op no policy placed, or one a device backend timed only for
   * observers (so that tracing does not change what policies are told). */
  if (rt->obs != NULL) {
    int how = rt->cfg->observer_times;
    if (rt->host_exec || how == CUA__OBS_TIMES_DEVICE) {
      bo.duration_ns = n->placed_by != NULL && (rt->host_exec || n->sampled)
                           ? &n->duration_ns
                           : &n->obs_dur;
      bo.start_ns = &n->start_ns;
    } else if (how == CUA__OBS_TIMES_ENDS) {
      bo.end_ns = &n->end_ns;
    }
    /* A backend that measures device times after the fact (CUPTI) gives
     * them through op_times() with this id instead. */
    if (!rt->host_exec && how != CUA__OBS_TIMES_ESTIMATED)
      bo.op = n->op_id;
  }
  bo.est_ns = n->est_cost; /* what a simulator runs it for (ABI 1.8) */
  bo.policy = n->placed_by != NULL ? n->placed_by->name : NULL; /* 1.11 */
  cua_backend_err err;
  err.msg[0] = '\0';
  void *native = NULL;
  uint64_t called = 0;
  if (rt->obs_launch) {
    if (rt->be->stream_native != NULL)
      native = rt->be->stream_native(rt->bst, s->bs);
    called = cua__obs_launch(rt, n, 0, native, 0);
  }
  rc = rt->be->launch(rt->bst, s->bs, &bo, &err);
  if (called != 0)
    cua__obs_launch(rt, n, 1, native, called);
  /* A node measured alone (models.c): when it really went to its stream,
   * which its round's clock (t_launch) may precede by the round's other
   * launches. */
  if (rc == 0 && n->sampled)
    atomic_store_explicit(&n->t_exec, cua__rt_now(rt), memory_order_relaxed);
  if (rc)
    snprintf(msg, len, "launching op '%s' on device %d stream %d: %s",
             cua__node_name(n), n->pl.device, n->pl.stream,
             err.msg[0] ? err.msg : cua_strerror(rc));
  return rc;
}

/* A launch that failed fails its node and, through data edges, its
 * consumers, before this stream's later commands (its mark) run: so the
 * completion thread never sees the node complete without its failure. */
static void fail_launch(cua_runtime *rt, cua__node *n, int rc,
                        const char *msg) {
  pthread_mutex_lock(&rt->lock);
  cua__fail_node(rt, n, rc, msg);
  pthread_mutex_unlock(&rt->lock);
}

static void exec_launch(cua_runtime *rt, cua__cmd *c) {
  cua__node *n = c->node;
  cua__stream *s = c->s;
  char msg[CUA__ERRLEN];
  int rc = 0;
  /* (read first: an exchange writes the stream's line at every launch) */
  if (atomic_load_explicit(&s->wait_failed, memory_order_relaxed) &&
      atomic_exchange(&s->wait_failed, 0)) {
    snprintf(msg, sizeof msg, "inserting a cross-stream wait failed");
    rc = CUA_ERR_BACKEND;
  } else if (!atomic_load(&n->doomed)) {
    rc = launch_node(rt, n, msg, sizeof msg);
  }
  if (rc != 0)
    fail_launch(rt, n, rc, msg);
  atomic_store_explicit(&s->exec_seq, n->seq, memory_order_release);
  if (c->point != NULL &&
      rt->be->event_record(rt->bst, c->point->event, s->bs) != 0)
    atomic_store(&c->point->failed, 1);
}

int cua__backend_has_graphs(const cua_runtime *rt) {
  const cua_backend_descriptor *d = rt->be;
  return d->size >= offsetof(cua_backend_descriptor, graph_destroy) +
                        sizeof d->graph_destroy &&
         d->capture_begin != NULL && d->capture_end != NULL &&
         d->graph_launch != NULL && d->graph_destroy != NULL;
}

int cua__backend_has_capture_deps(const cua_runtime *rt) {
  const cua_backend_descriptor *d = rt->be;
  return cua__backend_has_graphs(rt) &&
         d->size >= offsetof(cua_backend_descriptor, capture_deps) +
                        sizeof d->capture_deps &&
         d->capture_deps != NULL;
}

int cua__backend_has_native(const cua_runtime *rt) {
  const cua_backend_descriptor *d = rt->be;
  return d->size >= offsetof(cua_backend_descriptor, native_wait) +
                        sizeof d->native_wait &&
         d->native_record != NULL && d->native_wait != NULL;
}

void cua__exec_wait_recorded(cua_runtime *rt, cua__point *p) {
  turn_wait(rt, p->stream, p->ticket + 1);
}

/* --------------------------------------------------------------- applying */

static void apply(cua_runtime *rt, cua__cmd *c) {
  cua__stream *s = c->s;
  turn_wait(rt, s, c->ticket);
  switch (c->kind) {
  case CUA__CMD_WAIT: {
    cua__point *p = c->point;
    turn_wait(rt, p->stream, p->ticket + 1);
    if (atomic_load(&p->failed) ||
        rt->be->stream_wait_event(rt->bst, s->bs, p->event) != 0)
      atomic_store(&s->wait_failed, 1);
    atomic_fetch_sub(&p->users, 1);
    break;
  }
  case CUA__CMD_RECORD:
    if (rt->be->event_record(rt->bst, c->point->event, s->bs) != 0)
      atomic_store(&c->point->failed, 1);
    break;
  case CUA__CMD_LAUNCH:
    exec_launch(rt, c);
    break;
  case CUA__CMD_MARK:
    if (c->superseded)
      break;
    s->marks_applied++; /* this thread has the stream's turn */
    if (rt->be->mark(rt->bst, s->bs, c->value) != 0) {
      /* The completion thread's next round marks the stream again. */
      pthread_mutex_lock(&rt->lock);
      if (s->marked == c->value)
        s->marked = c->prev;
      pthread_mutex_unlock(&rt->lock);
    }
    break;
  default:
    break;
  }
  turn_done(rt, s);
}

/* How many commands ahead apply_list() prefetches what a LAUNCH reads. */
#define PREFETCH_AHEAD 2

/* What applying a LAUNCH reads of its node and its op (exec_launch(),
 * launch_node(), backend_op()), fetched while the commands before it are
 * applied: on a relayed round (flush.c) the launch thread wrote or
 * read those lines on another vCPU just before, and each is a miss for the
 * submitting thread at its launch. Hints only; of the node it reads
 * nothing (the command has the op's address). On an H200, two sets of six
 * interleaved rounds: micro-chain single-stream 1.159 and 1.164 (medians) with
 * it against 1.202 and 1.247 without (doc/results, thirty-first session). */
static inline void prefetch_launch(const cua__cmd *c) {
  __builtin_prefetch(c);
  if (c->kind != CUA__CMD_LAUNCH || c->node == NULL)
    return;
  const cua__node *n = c->node;
  __builtin_prefetch(&n->op);
  __builtin_prefetch(&n->seq);
  __builtin_prefetch(&n->placed_by);
  __builtin_prefetch(&n->est_cost);
  __builtin_prefetch(&n->doomed);
  /* and of its op (the command has its address: no load of the node):
   * its kind, its accesses, its parameters */
  const cua_op *op = c->op;
  if (op == NULL)
    return;
  __builtin_prefetch(&op->kind);
  __builtin_prefetch(&op->nacc);
  __builtin_prefetch(&op->hptr);
  __builtin_prefetch(&op->spin);
}

static void apply_list(cua_runtime *rt, cua__cmdlist *cl) {
  for (size_t i = 0; i < cl->n; i++) {
    if (i + PREFETCH_AHEAD < cl->n)
      prefetch_launch(&cl->v[i + PREFETCH_AHEAD]);
    apply(rt, &cl->v[i]);
  }
}

/* Applies @p cl (whose rt->executing count the caller took), or, when this
 * thread is already applying a list (a stream function submitting), defers
 * it to the end of that list: it takes the array then. */
void cua__exec(cua_runtime *rt, cua__cmdlist *cl) {
  if (tls_depth > 0 && cl->box != NULL) {
    cua__cmdlist *h = cl->box;
    *h = *cl;
    h->next = NULL;
    h->defer_rt = rt;
    if (tls_tail)
      tls_tail->next = h;
    else
      tls_head = h;
    tls_tail = h;
    memset(cl, 0, sizeof *cl); /* the holder owns it now */
    return;
  }
  /* (A list without a holder, which could not be had for lack of memory,
   * is applied now, which is safe unless a command waits for the stream
   * this stream function runs on.) */
  cua__exec_open();
  cua__exec_in(rt, cl);
  cua__exec_close();
}

void cua__exec_open(void) {
  tls_depth++;
}

void cua__exec_in(cua_runtime *rt, cua__cmdlist *cl) {
  apply_list(rt, cl);
  /* The caller, which gives the list back, holds rt. */
  atomic_fetch_sub(&rt->executing, 1);
}

int cua__exec_depth(void) {
  return tls_depth;
}

void cua__exec_close(void) {
  if (tls_depth == 1) {
    while (tls_head != NULL) {
      cua__cmdlist *h = tls_head;
      tls_head = h->next;
      if (tls_head == NULL)
        tls_tail = NULL;
      /* Another runtime's list (a stream function may submit to any):
       * given back before its executing count drops, since
       * cua_runtime_destroy() may free it once the count is 0. Applied
       * from a copy, as the launch thread does: releasing clears the list
       * it is given, and the holder itself goes back to the pool. */
      cua_runtime *drt = h->defer_rt;
      cua__cmdlist d = *h;
      d.next = NULL;
      d.defer_rt = NULL;
      apply_list(drt, &d);
      cua__cmdlist_release(drt, &d);
      atomic_fetch_sub(&drt->executing, 1);
    }
  }
  tls_depth--;
}
