/*
 * core/combine.c: the combinators: then, zip, shared, unzip, map. They make
 * ops of ops (core/op.c makes the ops themselves); the DAG they describe is
 * turned into nodes at submission (graph.c).
 *
 * Locking: a zip's weak link to the shared wrapper its unzips use
 * (unzip_shared), and the run a zip keeps once that wrapper is gone
 * (a ZIP's shared_node), are guarded by unzip_lock below. Everything else
 * an op holds is set before the op is returned, and frozen after (op.c).
 * Functions run on any user thread; cua__op_wrapper_gone() also on the
 * completion thread, when a node drops its op.
 */
#include "config.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Guards the weak zip -> shared wrapper links of cua_op_unzip(), and the
 * run a zip keeps once its wrapper is gone. A leaf lock: nothing is called
 * while it is held but cua_op_shared(), which takes no lock. */
static pthread_mutex_t unzip_lock = PTHREAD_MUTEX_INITIALIZER;

void cua__unzip_fork(int take) {
  if (take)
    pthread_mutex_lock(&unzip_lock);
  else
    pthread_mutex_unlock(&unzip_lock);
}

int cua_op_then(cua_op **out, cua_op *first, cua_op *next) {
  cua_runtime *rt = first ? first->rt : NULL;
  if (out == NULL || first == NULL || next == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_then: NULL %s",
                     out == NULL     ? "op pointer"
                     : first == NULL ? "first op"
                                     : "next op");
  if (cua__runtime_closed(rt, "cua_op_then"))
    return CUA_ERR_CANCELED;
  if (first->rt != next->rt)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_op_then: ops of two runtimes");
  cua_op *op;
  int rc = cua__op_new(&op, rt, CUA_OP_THEN);
  if (rc)
    return rc;
  rc = cua__op_add_input(op, first);
  if (rc == 0)
    rc = cua__op_add_input(op, next);
  return cua__op_finish(out, op, rc);
}

int cua_op_zip(cua_op **out, cua_op *const *ops, size_t n) {
  if (out == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_zip: NULL op pointer");
  if (ops == NULL || n == 0)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_zip: no ops");
  if (ops[0] == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_zip: op 0 is NULL");
  cua_runtime *rt = ops[0]->rt;
  if (cua__runtime_closed(rt, "cua_op_zip"))
    return CUA_ERR_CANCELED;
  for (size_t i = 0; i < n; i++)
    if (ops[i] == NULL || ops[i]->rt != rt)
      return cua__fail(rt, CUA_ERR_INVAL,
                       "cua_op_zip: op %zu is NULL or of another runtime", i);
  cua_op *op = NULL;
  int rc = cua__op_new(&op, rt, CUA_OP_ZIP);
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = cua__op_add_input(op, ops[i]);
  return rc && op == NULL ? rc : cua__op_finish(out, op, rc);
}

int cua_op_shared(cua_op **out, cua_op *inner) {
  if (out == NULL || inner == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_shared: NULL %s",
                     out == NULL ? "op pointer" : "inner op");
  if (cua__runtime_closed(inner->rt, "cua_op_shared"))
    return CUA_ERR_CANCELED;
  cua_op *op;
  int rc = cua__op_new(&op, inner->rt, CUA_OP_SHARED);
  if (rc)
    return rc;
  return cua__op_finish(out, op, cua__op_add_input(op, inner));
}

/* Under unzip_lock: @p sh, the shared wrapper @p zip links to, has no
 * reference left. The link goes, and the zip keeps the node of the
 * wrapper's run, if it was submitted (the same node when the zip has one
 * already: then the wrapper's reference goes with the wrapper). A wrapper
 * goes only once its node is done (a node holds its op until then), and a
 * done node holds no op, so the zip does not keep itself alive. */
static void unlink_wrapper(cua_op *zip, cua_op *sh) {
  zip->unzip_shared = NULL;
  if (zip->shared_node == NULL) {
    zip->shared_node = sh->shared_node;
    sh->shared_node = NULL;
  }
}

/* The shared wrapper for a new unzip of @p zip (a reference for the
 * caller): the one its unzips use now, or a new one. The zip cannot hold
 * its wrapper (the wrapper holds the zip), so the wrapper goes with the
 * last unzip; but "the zip runs once, in this or any later submission"
 * holds for the unzips made after that too: a new wrapper starts from the
 * run the zip kept (unlink_wrapper()), so submitting it reuses that run
 * (graph.c reuses a shared op's shared_node) instead of running the zip
 * again. A zip never submitted through an unzip has no run: a new wrapper
 * is built when submitted. */
static int unzip_wrapper(cua_op **out, cua_op *zip) {
  pthread_mutex_lock(&unzip_lock);
  cua_op *sh = zip->unzip_shared;
  int refs = sh ? atomic_load(&sh->refs) : 0;
  while (refs > 0 && !atomic_compare_exchange_weak(&sh->refs, &refs, refs + 1))
    ;
  /* A wrapper whose last reference is going is not reused, but its run is:
   * unlink it here, before cua_op_destroy() gets the lock to do it (no one
   * holds it, so nothing else reads or writes its shared_node). */
  if (sh != NULL && refs <= 0)
    unlink_wrapper(zip, sh);
  int rc = 0;
  if (refs <= 0) {
    rc = cua_op_shared(&sh, zip);
    if (rc == 0) {
      /* Not yet seen by any other thread: its shared_node is ours. */
      sh->shared_node = zip->shared_node;
      if (sh->shared_node != NULL)
        atomic_fetch_add(&sh->shared_node->refs, 1);
      zip->unzip_shared = sh;
    }
  }
  pthread_mutex_unlock(&unzip_lock);
  *out = rc ? NULL : sh;
  return rc;
}

int cua_op_unzip(cua_op **out, cua_op *zip, size_t index) {
  if (out == NULL || zip == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_op_unzip: NULL %s",
                     out == NULL ? "op pointer" : "zip");
  if (cua__runtime_closed(zip->rt, "cua_op_unzip"))
    return CUA_ERR_CANCELED;
  cua_op *z = zip;
  while (z->kind == CUA_OP_SHARED)
    z = z->inputs[0];
  if (z->kind != CUA_OP_ZIP)
    return cua__fail(zip->rt, CUA_ERR_INVAL,
                     "cua_op_unzip: the op is not a zip");
  if (index >= z->ninputs)
    return cua__fail(zip->rt, CUA_ERR_INVAL,
                     "cua_op_unzip: index %zu out of range (the zip has %zu "
                     "ops)",
                     index, z->ninputs);
  /* The zip runs once for all its unzips: they share one shared wrapper,
   * unless the zip is shared already. */
  cua_op *sh = zip;
  int rc = 0;
  if (zip->kind != CUA_OP_SHARED)
    rc = unzip_wrapper(&sh, zip);
  else
    cua_op_retain(sh);
  if (rc)
    return rc;
  cua_op *op = NULL;
  rc = cua__op_new(&op, zip->rt, CUA_OP_UNZIP);
  if (rc == 0) {
    op->index = index;
    rc = cua__op_add_input(op, sh);
  }
  cua_op_destroy(sh);
  return rc && op == NULL ? rc : cua__op_finish(out, op, rc);
}

int cua_op_map(cua_op **out, cua_op *in, cua_map_fn fn, void *arg) {
  if (out == NULL || in == NULL || fn == NULL)
    return cua__fail(in ? in->rt : NULL, CUA_ERR_INVAL, "cua_op_map: NULL %s",
                     out == NULL  ? "op pointer"
                     : in == NULL ? "input op"
                                  : "function");
  if (cua__runtime_closed(in->rt, "cua_op_map"))
    return CUA_ERR_CANCELED;
  cua_op *op;
  int rc = cua__op_new(&op, in->rt, CUA_OP_MAP);
  if (rc)
    return rc;
  op->map_fn = fn;
  op->arg = arg;
  return cua__op_finish(out, op, cua__op_add_input(op, in));
}

/* A SHARED op @p op is being freed: if a zip links to it as the wrapper of
 * its unzips, the link goes and the zip keeps its run (unlink_wrapper()). */
void cua__op_wrapper_gone(cua_op *op) {
  pthread_mutex_lock(&unzip_lock);
  if (op->inputs[0]->unzip_shared == op)
    unlink_wrapper(op->inputs[0], op);
  pthread_mutex_unlock(&unzip_lock);
}
