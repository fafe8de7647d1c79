/*
 * core/submit.c: cua_submit() and the stream functions' context.
 *
 * A submission builds its nodes (graph.c), looks for cycles and validates
 * every buffer access (hazards.c) before anything changes, so a submission
 * that fails leaves no trace; then records its hazards, wires the edges
 * (node.c) and runs the first round (commands.c), all under rt->lock, and
 * applies the round's commands after releasing it (flush.c, executor.c).
 */
#include "config.h"
#include "internal.h"

#include <stddef.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ submission */

/* Nothing of @p b ran or will: undoes its nodes and any shared op the
 * build made the owner of its node. The new nodes may hold each other in
 * a cycle (a then that placed an op after itself): their edges are
 * dropped explicitly, under a reference of our own. Under rt->lock. */
void cua__build_undo(cua__build *b, cua__sub *sub) {
  for (size_t i = 0; i < b->n; i++) {
    atomic_fetch_add(&b->order[i]->refs, 1);
    /* An earlier submission's op this build continued is free again. */
    cua__node *t = b->order[i]->then_src;
    if (t != NULL && t->sub_id != b->sub->id)
      t->then_taken = 0;
  }
  for (size_t i = 0; i < b->n; i++) {
    cua__node *n = b->order[i];
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
  cua__sub_keep_nodes(sub);
  for (size_t i = 0; i < b->n; i++)
    cua__node_release_deps(b->order[i]);
  for (size_t i = 0; i < b->n; i++)
    cua__node_release(b->order[i]);
}

static int do_submit(cua_future **fut, cua_runtime *rt, cua_op *op,
                     cua__polinst *pol, const cua_submit_options *opts) {
  if (fut != NULL)
    *fut = NULL;
  if (rt == NULL || op == NULL || fut == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_submit: NULL argument");
  if (cua__runtime_closed(op->rt, "cua_submit"))
    return CUA_ERR_CANCELED;
  if (op->rt != rt)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_submit: the op belongs to another runtime");
  cua__relay_nested_wait();
  pthread_mutex_lock(&rt->lock);
  if (rt->stopping || rt->closing) {
    pthread_mutex_unlock(&rt->lock);
    return cua__fail(rt, CUA_ERR_CANCELED, "cua_submit: runtime closing");
  }
  /* When the submission began, for observers: its record is made once it
   * is built, and the build is part of what it costs. */
  uint64_t t_submit = rt->obs != NULL ? cua__rt_now(rt) : 0;
  /* Under rt->lock, which guards taking from the submission pool. */
  cua__sub *sub = cua__sub_new(rt);
  if (sub == NULL) {
    pthread_mutex_unlock(&rt->lock);
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
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
  cua__build b;
  cua__build_init(&b, rt, sub);
  b.reserving = 1;
  char msg[CUA__ERRLEN];
  msg[0] = '\0';
  /* A large DAG built from its plan may be built as it is decided
   * (plan.c, stages). */
  cua__stage stage;
  int rc = cua__stage_begin(&stage, &b, op), staged = rc == 1;
  if (rc == 0)
    rc = cua__build_graph(&b, op, &sub->capnodes);
  else if (staged)
    rc = 0;
  if (rc == 0)
    rc = cua__check_cycles(&b, msg, sizeof msg);
  if (rc == 0)
    rc = cua__validate(&b, msg, sizeof msg);
  if (rc == 0)
    rc = cua__reserve_hazards(&b);
  if (rc != 0) {
    cua__build_undo(&b, sub);
    pthread_mutex_unlock(&rt->lock);
    cua__build_free(&b);
    cua__sub_release(sub);
    if (rc == CUA_ERR_NOMEM && msg[0] == '\0')
      snprintf(msg, sizeof msg, "out of host memory");
    return cua__fail(rt, rc, "cua_submit: %s", msg);
  }
  for (size_t i = 0; i < b.n && b.naccs > 0; i++)
    if (b.order[i]->cls == CUA__CLASS_DEVICE)
      cua__add_hazards(b.order[i]);
  if (b.naccs > 0 && !staged) /* (a staged plan has no buffer access) */
    cua__build_levels(&b);    /* the hazards count as edges */
  if (!staged) {
    sub->root = cua__build_get(&b, op);
    atomic_fetch_add(&sub->root->refs, 1);
  }
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
  if (rt->obs != NULL) {
    cua_obs_record o = {
        .kind = CUA_OBS_SUBMIT, .t_ns = t_submit, .submission = sub->id};
    cua__obs_emit(rt, &o, NULL, NULL, NULL);
  }
  cua__dag_begin(rt, sub, b.order, b.n);
  if (rt->be_round != NULL) {
    /* A simulator charges its modelled host for the build and the plan. */
    const cua__polinst *rp = cua__sub_policy(rt, sub);
    rt->be_round(rt->bst, b.n, rp != NULL ? rp->name : NULL);
  }
  cua__round r;
  cua__round_init(rt, &r);
  cua__wire(rt, &b, &r);
  cua__plan_record_succ(&b, op); /* (once per plan; not for a stage's) */
  r.left = staged ? stage.n : b.n;
  r.stage = staged ? &stage : NULL;
  /* Everything may already be complete (a submission of shared ops that
   * ran before): then it fires through the completion thread too. */
  if (sub->pending == 0)
    cua__sub_done(rt, sub);
  /* Applied in chunks as decided (commands.c), except in virtual time,
   * where host time gains nothing and the chunks' interleaving with the
   * completion thread would make runs differ. */
  r.chunked = rt->vclock == NULL;
  cua__run_round(rt, &r);
  cua__build_free(&b); /* (after the round, which makes a stage's nodes) */
  cua__kick_at_flush(rt, &r);
  /* Decided: apply the commands with the lock released. */
  cua__round_flush(rt, &r, 0);
  *fut = &sub->fut;
  return 0;
}

/* do_submit(), counted in rt->submitting under launch = auto and
 * pipeline, whose rule for handing lists to the launch threads depends on
 * how many threads submit (flush.c, cua__may_hand_over()). */
static int counted_submit(cua_future **fut, cua_runtime *rt, cua_op *op,
                          cua__polinst *pol, const cua_submit_options *opts) {
  if (rt == NULL || !cua__launch_by_rule(rt->cfg->launch))
    return do_submit(fut, rt, op, pol, opts);
  atomic_fetch_add_explicit(&rt->submitting, 1, memory_order_relaxed);
  int rc = do_submit(fut, rt, op, pol, opts);
  atomic_fetch_sub_explicit(&rt->submitting, 1, memory_order_relaxed);
  return rc;
}

int cua_submit(cua_future **fut, cua_runtime *rt, cua_op *op,
               const cua_submit_options *opts) {
  cua__polinst *pol = NULL;
  if (opts != NULL) {
    /* Options grow at the end: a caller built against an older header
     * passes a smaller size, never a size below the first version's. */
    if (opts->size <
        offsetof(cua_submit_options, placement) + sizeof(opts->placement)) {
      if (fut != NULL)
        *fut = NULL;
      return cua__fail(rt, CUA_ERR_INVAL,
                       "cua_submit: opts->size is %zu; set it to "
                       "sizeof(cua_submit_options) (%zu)",
                       opts->size, sizeof(cua_submit_options));
    }
    pol = (cua__polinst *)opts->policy;
    if (pol != NULL && pol->dead) {
      if (fut != NULL)
        *fut = NULL;
      return cua__fail(rt, CUA_ERR_CANCELED,
                       "cua_submit: the policy's runtime is closed "
                       "(cua_runtime_destroy() was called)");
    }
    if (pol != NULL && rt != NULL && pol->rt != rt) {
      if (fut != NULL)
        *fut = NULL;
      return cua__fail(rt, CUA_ERR_INVAL,
                       "cua_submit: the policy belongs to another runtime");
    }
  }
  /* [runtime] graphs = auto: a DAG submitted again replays its graph. An
   * explicit stream is what a graph launch itself asks for. */
  int rc;
  if (fut != NULL && rt != NULL && op != NULL && op->rt == rt &&
      !atomic_load(&rt->closed) && rt->cfg->graphs != CUA__GRAPHS_OFF &&
      !(opts != NULL && opts->on_stream) &&
      cua__gcache_submit(rt, op, pol, fut, &rc))
    return rc;
  return counted_submit(fut, rt, op, pol, opts);
}

int cua_submit_on(cua_future **fut, cua_runtime *rt, cua_op *op, int device,
                  int stream) {
  cua_submit_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.on_stream = 1;
  o.placement.device = device;
  o.placement.stream = stream;
  return counted_submit(fut, rt, op, NULL, &o);
}

int cua_submit_wait(cua_runtime *rt, cua_op *op, const cua_submit_options *opts,
                    void **result) {
  /* Refused before anything is submitted where its wait would be. */
  int busy = rt != NULL ? cua__refuse_wait(rt, "cua_submit_wait", 0) : 0;
  if (busy != 0)
    return busy;
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

/* A stream function gets its context from the core; NULL (misuse) gives
 * the neutral answer instead of a crash. */
static void null_ctx(const char *fn) {
  cua__fail(NULL, CUA_ERR_INVAL, "%s: NULL ctx", fn);
}

void *cua_ctx_stream(const cua_stream_ctx *ctx) {
  if (ctx == NULL) {
    null_ctx("cua_ctx_stream");
    return NULL;
  }
  return ctx->native;
}

cua_placement cua_ctx_placement(const cua_stream_ctx *ctx) {
  cua_placement none = {.device = -1, .stream = -1};
  if (ctx == NULL) {
    null_ctx("cua_ctx_placement");
    return none;
  }
  return ctx->node->pl;
}

const char *cua_ctx_backend(const cua_stream_ctx *ctx) {
  if (ctx == NULL) {
    null_ctx("cua_ctx_backend");
    return NULL;
  }
  return ctx->rt->be->name;
}

void *cua_ctx_ptr(const cua_stream_ctx *ctx, size_t i) {
  if (ctx == NULL) {
    null_ctx("cua_ctx_ptr");
    return NULL;
  }
  if (i >= ctx->node->op->nacc)
    return NULL;
  return ctx->node->ptrs[i];
}

void cua_ctx_set_result(cua_stream_ctx *ctx, void *result) {
  if (ctx == NULL) {
    null_ctx("cua_ctx_set_result");
    return;
  }
  ctx->node->result = result;
}

void cua_ctx_fail(cua_stream_ctx *ctx, const char *fmt, ...) {
  if (ctx == NULL) {
    null_ctx("cua_ctx_fail");
    return;
  }
  char buf[1024] = "";
  if (fmt != NULL) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
  }
  free(ctx->msg);
  ctx->msg = cua__strdup(buf[0] ? buf : "the stream function failed");
}

/* ------------------------------------------------------- stream interop */

int cua_future_wait_native(cua_future *fut, int device, void *native) {
  if (fut == NULL || native == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL,
                     "cua_future_wait_native: NULL argument");
  cua__sub *sub = cua__future_live(fut, "cua_future_wait_native");
  if (sub == NULL)
    return CUA_ERR_INVAL;
  if (atomic_load_explicit(&sub->done, memory_order_acquire))
    return 0;
  cua_runtime *rt = sub->rt;
  if (device < 0 || device >= rt->ndev)
    return cua__fail(rt, CUA_ERR_BAD_DEVICE,
                     "cua_future_wait_native: no device %d (the runtime has "
                     "%d)",
                     device, rt->ndev);
  if (!cua__backend_has_native(rt))
    return cua__fail(rt, CUA_ERR_NOTSUP,
                     "cua_future_wait_native: the %s backend cannot make a "
                     "native stream wait",
                     rt->be->name);
  if (cua__in_user_code())
    return cua__fail(rt, CUA_ERR_BUSY,
                     "cua_future_wait_native: called from a stream function");
  /* Under the lock: which streams still run the submission's work, and
   * a point after its last op on each (its own, or one recorded now). */
  cua__point *stackp[16], **pts = stackp;
  size_t npts = 0, cap = 16;
  int rc = 0;
  pthread_mutex_lock(&rt->lock);
  if (atomic_load(&sub->done)) {
    pthread_mutex_unlock(&rt->lock);
    return 0;
  }
  cua__round r;
  cua__round_init(rt, &r);
  for (size_t i = 0; i < sub->nnodes && rc == 0; i++) {
    cua__node *n = sub->nodes[i];
    if (n->state == CUA__NODE_DONE || n->cls == CUA__CLASS_VIRTUAL)
      continue;
    if (n->cls != CUA__CLASS_DEVICE || n->stream == NULL) {
      rc = CUA_ERR_AGAIN;
      break;
    }
    /* The last op of the submission on its stream stands for the others
     * there; its own point if it has one, else the stream's end now. */
    cua__node *last = n;
    for (size_t k = 0; k < sub->nnodes; k++) {
      cua__node *m = sub->nodes[k];
      if (m->stream == n->stream && m->cls == CUA__CLASS_DEVICE &&
          m->state != CUA__NODE_DONE && m->seq > last->seq)
        last = m;
    }
    if (last != n)
      continue;
    cua__point *p = n->point != NULL && n->point->seq >= n->seq
                        ? n->point
                        : cua__record_point(&r, n->stream);
    if (p == NULL) {
      rc = CUA_ERR_NOMEM;
      break;
    }
    if (npts == cap) {
      cua__point **v = cua__malloc(2 * cap * sizeof *v);
      if (v == NULL) {
        rc = CUA_ERR_NOMEM;
        break;
      }
      memcpy(v, pts, npts * sizeof *v);
      if (pts != stackp)
        free(pts);
      pts = v;
      cap *= 2;
    }
    atomic_fetch_add(&p->users, 1);
    pts[npts++] = p;
  }
  cua__round_flush(rt, &r, 0);
  /* The points' records are applied (or being applied by the thread that
   * decided them): wait for that, then let the native stream wait. */
  for (size_t i = 0; i < npts; i++) {
    cua__point *p = pts[i];
    if (rc == 0) {
      cua__exec_wait_recorded(rt, p);
      cua_backend_err err = {{0}};
      int r2 =
          atomic_load(&p->failed)
              ? CUA_ERR_BACKEND
              : rt->be->native_wait(rt->bst, device, native, p->event, &err);
      if (r2 != 0)
        rc = cua__fail(rt, r2, "cua_future_wait_native: %s",
                       err.msg[0] ? err.msg : cua_strerror(r2));
    }
    atomic_fetch_sub(&p->users, 1);
  }
  if (pts != stackp)
    free(pts);
  if (rc == CUA_ERR_AGAIN)
    return cua__fail(rt, rc,
                     "cua_future_wait_native: the submission has ops not "
                     "launched yet (host steps, or ops after them); wait for "
                     "the future instead, or call again once they are");
  if (rc == CUA_ERR_NOMEM)
    return cua__fail(rt, rc, "cua_future_wait_native: out of host memory");
  return rc;
}
