/*
 * core/op.c: DeviceOp constructors (the combinators are in combine.c),
 * hints, references. Building an op only records what to do; nothing runs
 * until a submission.
 *
 * An op is immutable once frozen, so most of it needs no lock. What may
 * change, and how it is guarded:
 * - refs: atomic.
 * - frozen: atomic; 0 (hints may change), 1 (frozen, for good), 2 while
 *   cua_op_set_hints() writes the hints, or 3 while cua_op_get_hints()
 *   reads those of an unfrozen op. Freezing waits out a 2 or a 3, so no
 *   reader of a frozen op's hints races with a writer; a writer waits out
 *   a 3 (a reader is no other writer, and must not make it fail).
 * - unzip_shared (a zip's weak link to its shared wrapper): combine.c's
 *   unzip_lock.
 * - shared_node of a SHARED op: the runtime lock (graph.c, submit.c).
 * - shared_node of a ZIP (the run of its unzips' wrapper, kept once that
 *   wrapper is gone): unzip_lock.
 * Every op holds its runtime's struct (cua__runtime_hold()), so op->rt
 * stays readable after cua_runtime_destroy(); functions given an op of a
 * closed runtime fail with CUA_ERR_CANCELED, and destroying it works.
 * Functions run on any user thread; cua_op_destroy() also on the
 * completion thread, when a node drops its op.
 */
#include "config.h"
#include "internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

int cua__op_new(cua_op **out, cua_runtime *rt, cua_op_kind kind) {
  int fresh;
  cua_op *op = cua__pool_get(&rt->op_pool, &fresh);
  if (op == NULL)
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory building an op");
  memset(op, 0, sizeof *op);
  op->acc = op->acc_inl;
  op->capacc = sizeof op->acc_inl / sizeof *op->acc_inl;
  op->inputs = op->inputs_inl;
  op->capinputs = sizeof op->inputs_inl / sizeof *op->inputs_inl;
  atomic_init(&op->refs, 1);
  atomic_init(&op->frozen, 0);
  op->kind = kind;
  op->rt = rt;
  cua__runtime_hold(rt);
  cua_hints h = CUA_HINTS_INIT;
  op->hints = h;
  *out = op;
  return 0;
}

int cua__op_add_access(cua_op *op, cua_buffer *b, cua_access_mode mode) {
  if (cua__grow_inl(&op->acc, &op->capacc, op->nacc + 1, sizeof *op->acc,
                    op->acc_inl))
    return cua__fail(op->rt, CUA_ERR_NOMEM,
                     "out of host memory building an op");
  cua__access *a = op->acc;
  a[op->nacc].buf = cua_buffer_retain(b);
  a[op->nacc].mode = mode;
  op->nacc++;
  return 0;
}

int cua__op_add_input(cua_op *op, cua_op *in) {
  if (cua__pool_array_grow(&op->rt->input_pool, CUA__INPUT_BLOCK, &op->inputs,
                           &op->capinputs, op->ninputs + 1, sizeof *op->inputs,
                           op->inputs_inl))
    return cua__fail(op->rt, CUA_ERR_NOMEM,
                     "out of host memory building an op");
  op->inputs[op->ninputs++] = cua_op_retain(in);
  cua__op_freeze(in);
  return 0;
}

/* Returns the runtime a buffer belongs to, failing clearly for a buffer
 * whose runtime is gone. */
static int buf_rt(const char *what, cua_buffer *b, cua_runtime **rt) {
  *rt = NULL;
  if (b == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "%s: NULL buffer", what);
  /* A tile's runtime is its parent's (cleared when the runtime closes). */
  *rt = cua__buffer_root(b)->rt;
  if (*rt == NULL)
    return cua__fail(NULL, CUA_ERR_CANCELED,
                     "%s: the buffer's runtime is closed "
                     "(cua_runtime_destroy() was called)",
                     what);
  return 0;
}

int cua__op_finish(cua_op **out, cua_op *op, int rc) {
  if (rc != 0) {
    cua_op_destroy(op);
    *out = NULL;
    return rc;
  }
  *out = op;
  return 0;
}

int cua_op_func(cua_op **out, cua_runtime *rt, cua_stream_fn fn, void *arg,
                const cua_access *access, size_t n) {
  if (out == NULL || rt == NULL || fn == NULL || (n > 0 && access == NULL))
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_func: NULL %s",
                     out == NULL  ? "op pointer"
                     : rt == NULL ? "runtime"
                     : fn == NULL ? "function"
                                  : "access array (n > 0)");
  for (size_t i = 0; i < n; i++) {
    if (access[i].buffer == NULL || access[i].mode < CUA_READ ||
        access[i].mode > CUA_READ_WRITE)
      return cua__fail(rt, CUA_ERR_INVAL,
                       "cua_op_func: access %zu has a NULL buffer or a bad "
                       "mode (%d)",
                       i, (int)access[i].mode);
    if (cua__buffer_root(access[i].buffer)->rt == NULL)
      return cua__fail(rt, CUA_ERR_CANCELED,
                       "cua_op_func: access %zu: the buffer's runtime is "
                       "closed (cua_runtime_destroy() was called)",
                       i);
    if (cua__buffer_root(access[i].buffer)->rt != rt)
      return cua__fail(rt, CUA_ERR_INVAL,
                       "cua_op_func: access %zu: buffer of another runtime", i);
  }
  cua_op *op;
  int rc = cua__op_new(&op, rt, CUA_OP_FUNC);
  if (rc)
    return rc;
  op->fn = fn;
  op->arg = arg;
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = cua__op_add_access(op, access[i].buffer, access[i].mode);
  return cua__op_finish(out, op, rc);
}

static int elementwise(cua_op **out, cua_op_kind kind, cua_buffer *dst,
                       cua_buffer *src, float value) {
  const char *what = kind == CUA_OP_FILL   ? "cua_op_fill"
                     : kind == CUA_OP_COPY ? "cua_op_copy"
                                           : "cua_op_axpy";
  cua_runtime *rt;
  int rc = buf_rt(what, dst, &rt);
  if (rc)
    return rc;
  if (out == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "%s: NULL op pointer", what);
  if (src != NULL && (rc = buf_rt(what, src, &rt)) != 0)
    return rc;
  if (src != NULL && cua__buffer_root(src)->rt != cua__buffer_root(dst)->rt)
    return cua__fail(rt, CUA_ERR_INVAL, "%s: buffers of different runtimes",
                     what);
  if (src != NULL && src->bytes != dst->bytes)
    return cua__fail(rt, CUA_ERR_SIZE,
                     "%s: buffers differ in size (%zu and %zu bytes)", what,
                     dst->bytes, src->bytes);
  cua_op *op;
  rc = cua__op_new(&op, rt, kind);
  if (rc)
    return rc;
  op->value = value;
  op->bytes = dst->bytes;
  op->hints.bytes = dst->bytes;
  rc = cua__op_add_access(op, dst,
                          kind == CUA_OP_AXPY ? CUA_READ_WRITE : CUA_WRITE);
  if (rc == 0 && src != NULL)
    rc = cua__op_add_access(op, src, CUA_READ);
  return cua__op_finish(out, op, rc);
}

int cua_op_fill(cua_op **op, cua_buffer *dst, float value) {
  return elementwise(op, CUA_OP_FILL, dst, NULL, value);
}

int cua_op_copy(cua_op **op, cua_buffer *dst, cua_buffer *src) {
  if (src == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_copy: NULL buffer");
  return elementwise(op, CUA_OP_COPY, dst, src, 0);
}

int cua_op_axpy(cua_op **op, cua_buffer *y, float a, cua_buffer *x) {
  if (x == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_axpy: NULL buffer");
  return elementwise(op, CUA_OP_AXPY, y, x, a);
}

int cua_op_spin(cua_op **out, cua_runtime *rt, uint64_t ns, uint32_t blocks) {
  if (out == NULL || rt == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_spin: NULL %s",
                     out == NULL ? "op pointer" : "runtime");
  if (blocks == 0)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_spin: 0 blocks");
  cua_op *op;
  int rc = cua__op_new(&op, rt, CUA_OP_SPIN);
  if (rc)
    return rc;
  op->spin.ns = ns;
  op->spin.blocks = blocks;
  op->hints.cost_ns = ns;
  return cua__op_finish(out, op, 0);
}

static int check_range(cua_runtime *rt, const char *what, cua_buffer *b,
                       size_t off, size_t bytes) {
  if (off > b->bytes || bytes > b->bytes - off)
    return cua__fail(rt, CUA_ERR_SIZE,
                     "%s: range [%zu, %zu) outside the buffer's %zu bytes",
                     what, off, off + bytes, b->bytes);
  return 0;
}

int cua_op_memcpy_h2d(cua_op **out, cua_buffer *dst, size_t dst_off,
                      const void *src, size_t bytes) {
  cua_runtime *rt;
  int rc = buf_rt("cua_op_memcpy_h2d", dst, &rt);
  if (rc)
    return rc;
  if (out == NULL || (src == NULL && bytes > 0))
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_memcpy_h2d: NULL %s",
                     out == NULL ? "op pointer" : "source (bytes > 0)");
  if ((rc = check_range(rt, "cua_op_memcpy_h2d", dst, dst_off, bytes)))
    return rc;
  cua_op *op;
  if ((rc = cua__op_new(&op, rt, CUA_OP_MEMCPY_H2D)))
    return rc;
  op->hptr = (void *)src;
  op->dst_off = dst_off;
  op->bytes = bytes;
  op->hints.bytes = bytes;
  return cua__op_finish(out, op, cua__op_add_access(op, dst, CUA_WRITE));
}

int cua_op_memcpy_d2h(cua_op **out, void *dst, cua_buffer *src, size_t src_off,
                      size_t bytes) {
  cua_runtime *rt;
  int rc = buf_rt("cua_op_memcpy_d2h", src, &rt);
  if (rc)
    return rc;
  if (out == NULL || (dst == NULL && bytes > 0))
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_memcpy_d2h: NULL %s",
                     out == NULL ? "op pointer" : "destination (bytes > 0)");
  if ((rc = check_range(rt, "cua_op_memcpy_d2h", src, src_off, bytes)))
    return rc;
  cua_op *op;
  if ((rc = cua__op_new(&op, rt, CUA_OP_MEMCPY_D2H)))
    return rc;
  op->hptr = dst;
  op->src_off = src_off;
  op->bytes = bytes;
  op->hints.bytes = bytes;
  return cua__op_finish(out, op, cua__op_add_access(op, src, CUA_READ));
}

int cua_op_memcpy_d2d(cua_op **out, cua_buffer *dst, size_t dst_off,
                      cua_buffer *src, size_t src_off, size_t bytes) {
  cua_runtime *rt;
  int rc = buf_rt("cua_op_memcpy_d2d", dst, &rt);
  if (rc)
    return rc;
  if (out == NULL || src == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_memcpy_d2d: NULL %s",
                     out == NULL ? "op pointer" : "source buffer");
  if (cua__buffer_root(src)->rt == NULL)
    return cua__fail(rt, CUA_ERR_CANCELED,
                     "cua_op_memcpy_d2d: the source buffer's runtime is "
                     "closed (cua_runtime_destroy() was called)");
  if (cua__buffer_root(src)->rt != rt)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_op_memcpy_d2d: buffers of different runtimes");
  if ((rc = check_range(rt, "cua_op_memcpy_d2d (destination)", dst, dst_off,
                        bytes)) ||
      (rc = check_range(rt, "cua_op_memcpy_d2d (source)", src, src_off, bytes)))
    return rc;
  if (dst == src)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_op_memcpy_d2d: source and destination are the "
                     "same buffer");
  cua_op *op;
  if ((rc = cua__op_new(&op, rt, CUA_OP_MEMCPY_D2D)))
    return rc;
  op->dst_off = dst_off;
  op->src_off = src_off;
  op->bytes = bytes;
  op->hints.bytes = bytes;
  rc = cua__op_add_access(op, dst, CUA_WRITE);
  if (rc == 0)
    rc = cua__op_add_access(op, src, CUA_READ);
  return cua__op_finish(out, op, rc);
}

int cua_op_memset(cua_op **out, cua_buffer *dst, size_t off, int value,
                  size_t bytes) {
  cua_runtime *rt;
  int rc = buf_rt("cua_op_memset", dst, &rt);
  if (rc)
    return rc;
  if (out == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_memset: NULL op pointer");
  if ((rc = check_range(rt, "cua_op_memset", dst, off, bytes)))
    return rc;
  cua_op *op;
  if ((rc = cua__op_new(&op, rt, CUA_OP_MEMSET)))
    return rc;
  op->dst_off = off;
  op->byte_value = value;
  op->bytes = bytes;
  op->hints.bytes = bytes;
  return cua__op_finish(out, op, cua__op_add_access(op, dst, CUA_WRITE));
}

int cua_op_alloc(cua_op **out, cua_buffer *buf) {
  cua_runtime *rt;
  int rc = buf_rt("cua_op_alloc", buf, &rt);
  if (rc)
    return rc;
  if (out == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_alloc: NULL op pointer");
  if (!buf->lazy || buf->parent != NULL)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_op_alloc: the buffer was not created with "
                     "CUA_BUFFER_LAZY");
  cua_op *op;
  if ((rc = cua__op_new(&op, rt, CUA_OP_ALLOC)))
    return rc;
  op->hints.device = buf->device;
  return cua__op_finish(out, op, cua__op_add_access(op, buf, CUA_WRITE));
}

int cua_op_free(cua_op **out, cua_buffer *buf) {
  cua_runtime *rt;
  int rc = buf_rt("cua_op_free", buf, &rt);
  if (rc)
    return rc;
  if (out == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_free: NULL op pointer");
  if (buf->parent != NULL)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_op_free: a tile cannot be freed on its own");
  cua_op *op;
  if ((rc = cua__op_new(&op, rt, CUA_OP_FREE)))
    return rc;
  op->hints.device = buf->device;
  return cua__op_finish(out, op, cua__op_add_access(op, buf, CUA_WRITE));
}

int cua_op_host(cua_op **out, cua_runtime *rt, cua_host_fn fn, void *arg) {
  if (out == NULL || rt == NULL || fn == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_host: NULL %s",
                     out == NULL  ? "op pointer"
                     : rt == NULL ? "runtime"
                                  : "function");
  cua_op *op;
  int rc = cua__op_new(&op, rt, CUA_OP_HOST);
  if (rc)
    return rc;
  op->host_fn = fn;
  op->arg = arg;
  return cua__op_finish(out, op, 0);
}

int cua_op_barrier(cua_op **out, cua_runtime *rt) {
  if (out == NULL || rt == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_barrier: NULL %s",
                     out == NULL ? "op pointer" : "runtime");
  cua_op *op;
  int rc = cua__op_new(&op, rt, CUA_OP_BARRIER);
  return rc ? rc : cua__op_finish(out, op, 0);
}

int cua_op_kernel(cua_op **out, cua_module *mod, const char *function,
                  const unsigned grid[3], const unsigned block[3],
                  size_t shared_bytes, const cua_kernel_arg *args,
                  size_t nargs) {
  cua_runtime *rt = mod ? mod->rt : NULL;
  if (out == NULL || mod == NULL || function == NULL || grid == NULL ||
      block == NULL || (nargs > 0 && args == NULL))
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_kernel: NULL %s",
                     out == NULL        ? "op pointer"
                     : mod == NULL      ? "module"
                     : function == NULL ? "function"
                     : grid == NULL     ? "grid"
                     : block == NULL    ? "block"
                                        : "args");
  if (rt == NULL)
    return cua__fail(rt, CUA_ERR_CANCELED,
                     "cua_op_kernel: the module's runtime is closed "
                     "(cua_runtime_destroy() was called)");
  void *kernel = NULL;
  cua_backend_err err = {{0}};
  pthread_mutex_lock(&rt->lock);
  int rc =
      rt->be->module_function
          ? rt->be->module_function(rt->bst, mod->bm, function, &kernel, &err)
          : CUA_ERR_NOTSUP;
  pthread_mutex_unlock(&rt->lock);
  if (rc)
    return cua__fail(rt, rc, "cua_op_kernel: function '%s': %s", function,
                     err.msg[0] ? err.msg : cua_strerror(rc));
  cua_op *op;
  if ((rc = cua__op_new(&op, rt, CUA_OP_KERNEL)))
    return rc;
  op->mod = mod;
  atomic_fetch_add(&mod->refs, 1);
  op->kernel = kernel;
  memcpy(op->grid, grid, sizeof op->grid);
  memcpy(op->block, block, sizeof op->block);
  op->shared_bytes = shared_bytes;
  op->name = cua__strdup(function);
  op->hints.name = op->name;
  size_t total = 0;
  for (size_t i = 0; i < nargs; i++)
    total += args[i].buffer ? sizeof(void *) : (args[i].size + 15) / 16 * 16;
  op->argdata = cua__calloc(1, total);
  op->argbytes = total;
  op->argoff = cua__calloc(nargs, sizeof *op->argoff);
  op->argbuf = cua__calloc(nargs, sizeof *op->argbuf);
  if (op->argdata == NULL || op->argoff == NULL || op->argbuf == NULL)
    return cua__op_finish(out, op, CUA_ERR_NOMEM);
  op->nargs = nargs;
  size_t off = 0;
  for (size_t i = 0; i < nargs && rc == 0; i++) {
    op->argoff[i] = off;
    if (args[i].buffer) {
      op->argbuf[i] = (int)op->nacc;
      rc = cua__op_add_access(op, args[i].buffer,
                              args[i].mode ? args[i].mode : CUA_READ_WRITE);
      off += sizeof(void *);
    } else {
      op->argbuf[i] = -1;
      if (args[i].value == NULL && args[i].size > 0)
        rc = cua__fail(rt, CUA_ERR_INVAL,
                       "cua_op_kernel: argument %zu has no value", i);
      else
        memcpy(op->argdata + off, args[i].value, args[i].size);
      off += (args[i].size + 15) / 16 * 16;
    }
  }
  return cua__op_finish(out, op, rc);
}

/* Kinds whose constructor sets the bytes hint (op->bytes). */
static int has_bytes(cua_op_kind k) {
  return k == CUA_OP_FILL || k == CUA_OP_COPY || k == CUA_OP_AXPY ||
         k == CUA_OP_MEMSET || k == CUA_OP_MEMCPY_H2D ||
         k == CUA_OP_MEMCPY_D2H || k == CUA_OP_MEMCPY_D2D;
}

/* cua_op_set_hints() with the op held (frozen == 2). */
static int set_hints(cua_op *op, const cua_hints *h) {
  cua_hints n = CUA_HINTS_INIT;
  memcpy(&n, h, h->size < sizeof n ? h->size : sizeof n);
  n.size = sizeof n;
  char *name = cua__strdup(n.name), *tag = cua__strdup(n.tag);
  if ((n.name && !name) || (n.tag && !tag)) {
    free(name);
    free(tag);
    return cua__fail(op->rt, CUA_ERR_NOMEM, "out of host memory");
  }
  /* What the constructor knows stays where the caller gives nothing: a
   * spin's duration, the bytes a built-in data op moves. */
  if (op->kind == CUA_OP_SPIN && n.cost_ns == 0)
    n.cost_ns = op->spin.ns;
  if (n.bytes == 0 && has_bytes(op->kind))
    n.bytes = op->bytes;
  free(op->name);
  free(op->tag);
  op->name = name;
  op->tag = tag;
  n.name = name;
  n.tag = tag;
  op->hints = n;
  return 0;
}

int cua_op_set_hints(cua_op *op, const cua_hints *h) {
  if (op == NULL || h == NULL)
    return cua__fail(op ? op->rt : NULL, CUA_ERR_INVAL,
                     "cua_op_set_hints: NULL %s", op == NULL ? "op" : "hints");
  if (h->size < offsetof(cua_hints, priority))
    return cua__fail(op->rt, CUA_ERR_INVAL,
                     "cua_op_set_hints: hints.size is %zu (set it to "
                     "sizeof(cua_hints))",
                     h->size);
  if (cua__runtime_closed(op->rt, "cua_op_set_hints"))
    return CUA_ERR_CANCELED;
  /* A cua_op_get_hints() in progress (3) finishes first: a copy. */
  int state = 0;
  while (!atomic_compare_exchange_strong(&op->frozen, &state, 2) &&
         state == 3) {
    sched_yield();
    state = 0;
  }
  if (state != 0)
    return cua__fail(op->rt, CUA_ERR_BUSY,
                     state == 1 ? "cua_op_set_hints: the op is frozen (already "
                                  "used by another op or submitted)"
                                : "cua_op_set_hints: another thread is setting "
                                  "the op's hints");
  int rc = set_hints(op, h);
  atomic_store_explicit(&op->frozen, 0, memory_order_release);
  return rc;
}

int cua_op_get_hints(const cua_op *op, cua_hints *out) {
  if (op == NULL || out == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_get_hints: NULL %s",
                     op == NULL ? "op" : "hints");
  if (out->size < offsetof(cua_hints, priority))
    return cua__fail(NULL, CUA_ERR_INVAL,
                     "cua_op_get_hints: hints.size is %zu (set it to "
                     "sizeof(cua_hints))",
                     out->size);
  /* A frozen op's hints never change. An unfrozen one is read in a state
   * of its own (3), which cua_op_set_hints() waits out instead of taking
   * it for another writer, so the two never overlap. */
  cua_op *w = (cua_op *)op;
  int v = atomic_load_explicit(&w->frozen, memory_order_acquire);
  while (v != 1 && !(v == 0 && atomic_compare_exchange_weak(&w->frozen, &v, 3)))
    if (v == 2 || v == 3) {
      sched_yield();
      v = atomic_load_explicit(&w->frozen, memory_order_acquire);
    }
  size_t n = out->size < sizeof *out ? out->size : sizeof *out;
  memcpy((char *)out + sizeof out->size,
         (const char *)&op->hints + sizeof out->size, n - sizeof out->size);
  if (v != 1)
    atomic_store_explicit(&w->frozen, 0, memory_order_release);
  return 0;
}

cua_op_kind cua_op_get_kind(const cua_op *op) {
  if (op == NULL) {
    cua__fail(NULL, CUA_ERR_INVAL, "cua_op_get_kind: NULL op");
    return (cua_op_kind)0;
  }
  return op->kind;
}

cua_op *cua_op_retain(cua_op *op) {
  if (op != NULL)
    atomic_fetch_add(&op->refs, 1);
  return op;
}

/* Freezes an op for good. Ops are frozen many times over (every op that
 * references one, every submission): when it is frozen already, nothing is
 * written, so a shared op's cache line is not bounced between threads. A
 * cua_op_set_hints() in progress on another thread (2) finishes first: a
 * few instructions and two string copies; so does a cua_op_get_hints()
 * (3). */
void cua__op_freeze(cua_op *op) {
  int v = atomic_load_explicit(&op->frozen, memory_order_acquire);
  while (v != 1) {
    if (v == 0 && atomic_compare_exchange_weak(&op->frozen, &v, 1))
      return;
    if (v == 2 || v == 3) {
      sched_yield();
      v = atomic_load_explicit(&op->frozen, memory_order_acquire);
    }
  }
}

int cua__op_is_host(const cua_op *op) {
  return op->kind == CUA_OP_HOST || op->kind == CUA_OP_MAP;
}

/* Releases one reference; an op freed releases its inputs, which may free
 * them in turn: a worklist, not recursion, since a chain of thens nests as
 * deep as it is long. */
void cua_op_destroy(cua_op *op) {
  if (op == NULL || atomic_fetch_sub(&op->refs, 1) != 1)
    return;
  op->free_next = NULL;
  while (op != NULL) {
    cua_op *next = op->free_next;
    if (op->kind == CUA_OP_SHARED && op->ninputs == 1)
      cua__op_wrapper_gone(op);
    for (size_t i = 0; i < op->nacc; i++)
      cua__buffer_release(op->acc[i].buf);
    for (size_t i = 0; i < op->ninputs; i++) {
      cua_op *in = op->inputs[i];
      if (atomic_fetch_sub(&in->refs, 1) == 1) {
        in->free_next = next;
        next = in;
      }
    }
    if (op->shared_node != NULL)
      cua__node_release(op->shared_node);
    if (op->kind == CUA_OP_GRAPH)
      cua__graph_op_gone(op);
    if (op->kind == CUA_OP_KERNEL) {
      if (op->mod != NULL)
        cua_module_destroy(op->mod);
      free(op->argdata);
      free(op->argoff);
      free(op->argbuf);
    }
    if (op->acc != op->acc_inl)
      free(op->acc);
    cua__pool_array_free(&op->rt->input_pool, CUA__INPUT_BLOCK, op->inputs,
                         op->capinputs, op->inputs_inl);
    free(op->name);
    free(op->tag);
    cua__plan_free(op->plan);
    cua_runtime *rt = op->rt;
    cua__pool_put(&rt->op_pool, op);
    cua__runtime_release(rt);
    op = next;
  }
}

int cua_op_wait_native(cua_op **out, cua_runtime *rt, int device,
                       void *native) {
  if (out != NULL)
    *out = NULL;
  if (out == NULL || rt == NULL || native == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_wait_native: NULL argument");
  if (device < 0 || device >= rt->ndev)
    return cua__fail(rt, CUA_ERR_BAD_DEVICE,
                     "cua_op_wait_native: no device %d (the runtime has %d)",
                     device, rt->ndev);
  cua_op *op;
  int rc = cua__op_new(&op, rt, CUA_OP_WAIT_NATIVE);
  if (rc)
    return rc;
  op->native = native;
  op->native_device = device;
  op->hints.device = device;
  return cua__op_finish(out, op, 0);
}
