#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- ready queues */

int cua__q_push(cua__queue *q, cua__node *n) {
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

static cua__node *q_pop(cua__queue *q) {
  if (q->len == 0)
    return NULL;
  q->len--;
  return q->v[q->head++];
}

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
void cua__ready(cua_runtime *rt, cua__node *n, cua__round *r) {
  if (n->code != 0 || n->cls == CUA__CLASS_VIRTUAL) {
    cua__q_push(&r->settle, n);
    return;
  }
  if (n->cls == CUA__CLASS_HOST) {
    host_ready(rt, n);
    return;
  }
  cua__q_push(&r->place, n);
}

/* Resolves the dependents of @p p that waited for it to be placed
 * (@p complete 0) or to complete (@p complete 1). */
void cua__resolve(cua_runtime *rt, cua__node *p, int complete, cua__round *r) {
  cua__dependent *d = p->dependents;
  for (size_t i = 0; i < p->ndependents; i++) {
    if (d[i].resolved || (!complete && (d[i].flags & CUA__DEP_COMPLETE)))
      continue;
    d[i].resolved = 1;
    cua__node *m = d[i].node;
    if (m->unresolved > 0 && --m->unresolved == 0)
      cua__ready(rt, m, r);
  }
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
        (rc = cua__wait_for(rt, s, p->stream, p->seq, p->point)))
      break;
  }
  if (rc == 0 && op->kind == CUA_OP_BARRIER)
    for (int i = 0; i < rt->nstreams && rc == 0; i++) {
      cua__stream *o = rt->streams[i];
      uint64_t upto = o == s ? 0 : o->launched;
      rc = cua__wait_for(rt, s, o, upto, NULL);
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
      snprintf(msg, len, "kernel '%s': more than 64 arguments",
               cua__node_name(n));
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
             cua__node_name(n), n->pl.device, n->pl.stream,
             err.msg[0] ? err.msg : cua_strerror(rc));
  return rc;
}

/* Whether a consumer already placed on another stream needs an event after
 * @p n (those placed later fall back to recording when they need one). */
static int needs_event(const cua__node *n) {
  const cua__dependent *d = n->dependents;
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
void cua__run_round(cua_runtime *rt, cua__round *r) {
  for (;;) {
    cua__node *n;
    if ((n = q_pop(&r->place)) != NULL) {
      cua__place_one(rt, n, r);
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
        cua__fail_node(rt, n, rc, msg);
      } else if (needs_event(n)) {
        n->point = cua__record_point(rt, n->stream);
      }
      rt->stats.ops++;
      inflight_push(n->stream, n);
      continue;
    }
    if ((n = q_pop(&r->settle)) != NULL) {
      /* Virtual nodes whose parts completed, and failed nodes that will
       * never run; failed nodes already on a stream finish in order. */
      if (n->state == CUA__NODE_PENDING)
        cua__finish_node(rt, n, r);
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
