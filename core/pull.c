/*
 * core/pull.c: pull mode, late binding (policy ABI 2.1): a policy with
 * push() and pop() keeps the ready ops it is given (push()) until a stream
 * with fewer than [runtime] pull_depth ops in flight asks it for one
 * (pop()), as StarPU's schedulers do.
 *
 * Owns: each pull-mode instance's table of the ops it holds (op id ->
 * node, each holding a reference to its node and one to the instance),
 * filling the streams at the end of every scheduling round (a submission's
 * or the completion thread's, so a stream whose op completes is asked
 * again), and the guard that fails what a policy keeps while every stream
 * is idle (nothing would ask it again). A held node stays PENDING; one
 * that fails while held (a producer failed) is settled when pop() returns
 * it. Everything here runs under rt->lock.
 */
#include "config.h"
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the table */

static size_t slot_of(uint64_t id, size_t cap) {
  return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/* Room for one more entry; 0 or CUA_ERR_NOMEM. */
static int table_reserve(cua__polinst *p) {
  if ((p->pull_n + 1) * 2 <= p->pull_cap)
    return 0;
  size_t cap = p->pull_cap ? 2 * p->pull_cap : 64;
  cua__node **t = cua__calloc(cap, sizeof *t);
  if (t == NULL)
    return CUA_ERR_NOMEM;
  for (size_t i = 0; i < p->pull_cap; i++) {
    cua__node *n = p->pull[i];
    if (n == NULL)
      continue;
    size_t j = slot_of(n->op_id, cap);
    while (t[j] != NULL)
      j = (j + 1) & (cap - 1);
    t[j] = n;
  }
  free(p->pull);
  p->pull = t;
  p->pull_cap = cap;
  return 0;
}

static void table_put(cua__polinst *p, cua__node *n) {
  size_t j = slot_of(n->op_id, p->pull_cap);
  while (p->pull[j] != NULL)
    j = (j + 1) & (p->pull_cap - 1);
  p->pull[j] = n;
  p->pull_n++;
}

/* Removes and returns the node of @p id, or NULL (linear probing with
 * backward-shift deletion: no tombstones). */
static cua__node *table_take(cua__polinst *p, uint64_t id) {
  if (p->pull_cap == 0)
    return NULL;
  size_t mask = p->pull_cap - 1, j = slot_of(id, p->pull_cap);
  while (p->pull[j] != NULL && p->pull[j]->op_id != id)
    j = (j + 1) & mask;
  cua__node *n = p->pull[j];
  if (n == NULL)
    return NULL;
  p->pull[j] = NULL;
  p->pull_n--;
  for (size_t k = (j + 1) & mask; p->pull[k] != NULL; k = (k + 1) & mask) {
    size_t home = slot_of(p->pull[k]->op_id, p->pull_cap);
    /* Move it into the hole unless its home lies cyclically in (j, k]. */
    if ((k > j && (home <= j || home > k)) ||
        (k < j && home <= j && home > k)) {
      p->pull[j] = p->pull[k];
      p->pull[k] = NULL;
      j = k;
    }
  }
  return n;
}

/* ------------------------------------------------------------ keeping */

cua__polinst *cua__pull_policy(cua_runtime *rt, const cua__sub *sub) {
  cua__polinst *p = cua__sub_policy(rt, sub);
  return p != NULL && p->d->push != NULL && p->d->pop != NULL ? p : NULL;
}

int cua__pull_keep(cua_runtime *rt, cua__polinst *p, cua__node *n,
                   const cua_op_info *info, char *msg, size_t len) {
  if (table_reserve(p) != 0) {
    snprintf(msg, len, "out of host memory handing op '%s' to policy '%s'",
             cua__node_name(n), p->name);
    return CUA_ERR_NOMEM;
  }
  p->log[0] = '\0';
  cua_op_info tmp;
  void *buf = NULL;
  const cua_op_info *pin = cua__info_restride(info, sizeof(cua_op_input),
                                              p->d->input_size, &tmp, &buf);
  int rc = p->d->push(p->state, pin);
  free(buf);
  if (rc != 0) {
    snprintf(msg, len, "policy '%s' failed to take op '%s' (push()): %s%s%s",
             p->name, cua__node_name(n),
             rc < 0 ? cua_err_name(rc) : "a positive code",
             p->log[0] ? ": " : "", p->log);
    return CUA_ERR_POLICY;
  }
  atomic_fetch_add(&n->refs, 1);
  n->pulled = 1;
  table_put(p, n);
  p->refs++;
  rt->pull_held++;
  return 0;
}

/* Gives back what the table held (a policy closing with its runtime). */
void cua__pull_drop(cua__polinst *p) {
  for (size_t i = 0; i < p->pull_cap; i++)
    if (p->pull[i] != NULL) {
      cua__node *n = p->pull[i];
      p->pull[i] = NULL;
      p->rt->pull_held--;
      n->pulled = 0;
      cua__node_release(n);
    }
  free(p->pull);
  p->pull = NULL;
  p->pull_n = p->pull_cap = 0;
}

/* ------------------------------------------------------------ filling */

/* A held node leaves the table: the instance's reference it held goes to
 * the node's placement, or is dropped. */
static void leave(cua_runtime *rt, cua__node *n) {
  rt->pull_held--;
  n->pulled = 2;
}

/* A node that failed while held, or that the guard fails: settled like a
 * node that failed before placement. */
static void settle_held(cua__polinst *p, cua__node *n, cua__round *r) {
  n->pulled = 0;
  cua__dag_placed(n);
  cua__settle_push(r, n);
  cua__node_release(n);
  cua__polinst_release(p);
}

/* Asks @p p for an op for @p where; the node, placed and queued for
 * launch, or NULL. The caller holds @p p (a node's placement failing, or
 * a failed node settled, may drop the table's last holds on it). An id
 * the policy does not hold (one the guard failed, say) is skipped, and
 * the policy asked again, a bounded number of times. */
static cua__node *ask(cua_runtime *rt, cua__polinst *p, cua_placement where,
                      cua__round *r) {
  for (int unknown = 0; unknown < 16;) {
    uint64_t id = 0;
    p->log[0] = '\0';
    if (p->pull_n == 0 || p->d->pop(p->state, where, &id) != 1)
      return NULL;
    cua__node *n = table_take(p, id);
    if (n == NULL) {
      if (!p->pull_warned) {
        p->pull_warned = 1;
        fprintf(stderr,
                "cuasync: policy %s: pop() gave op id %" PRIu64
                ", which it does not hold (ignored; said once)\n",
                p->name, id);
      }
      unknown++;
      continue;
    }
    leave(rt, n);
    if (n->code != 0 || n->state != CUA__NODE_PENDING) {
      settle_held(p, n, r);
      continue;
    }
    /* The node's reference from the table goes to the launch queue's
     * hold below; the instance's to its placement. */
    cua__place_pulled(rt, n, p, where, r);
    cua__node_release(n);
    return n;
  }
  return NULL;
}

/* Whether anything could still lead to another round: an op in flight on
 * a stream, a host step ready or running. */
static int busy(const cua_runtime *rt) {
  if (rt->ready_head != NULL || rt->host_running > 0)
    return 1;
  for (int i = 0; i < rt->nstreams; i++)
    if (rt->streams[i]->load.ops_in_flight > 0)
      return 1;
  return 0;
}

/* Every stream idle, and policies still hold ops: fail them. */
static void guard(cua_runtime *rt, cua__round *r) {
  cua__polinst *next;
  for (cua__polinst *p = rt->policies; p != NULL; p = next) {
    next = p->next;
    if (p->pull_n == 0)
      continue;
    size_t held = p->pull_n;
    char msg[CUA__ERRLEN];
    snprintf(msg, sizeof msg,
             "policy '%s' (pull mode) kept %zu ready op%s and gave none to "
             "any stream while every stream was idle (pop() must give an "
             "idle stream an op it holds)",
             p->name, held, held == 1 ? "" : "s");
    /* The instance may go with its last node: hold it meanwhile. */
    p->refs++;
    for (size_t i = 0; i < p->pull_cap; i++) {
      cua__node *n = p->pull[i];
      if (n == NULL)
        continue;
      p->pull[i] = NULL;
      p->pull_n--;
      leave(rt, n);
      cua__fail_node(rt, n, CUA_ERR_POLICY, msg);
      settle_held(p, n, r);
    }
    next = p->next;
    cua__polinst_release(p);
  }
}

int cua__pull_fill(cua_runtime *rt, cua__round *r) {
  if (rt->pull_held == 0)
    return 0;
  int placed = 0;
  size_t depth = (size_t)rt->cfg->pull_depth;
  for (int d = 0; d < rt->ndev && rt->pull_held > 0; d++)
    for (int k = 0; k < rt->devs[d].nstreams && rt->pull_held > 0; k++) {
      cua__stream *s = rt->devs[d].streams[k];
      cua_placement where = {.device = d, .stream = k};
      while (s->load.ops_in_flight < depth && rt->pull_held > 0) {
        cua__node *got = NULL;
        cua__polinst *next;
        for (cua__polinst *p = rt->policies; p != NULL && got == NULL;
             p = next) {
          next = p->next;
          if (p->pull_n == 0)
            continue;
          p->refs++; /* ask() may drop the table's last holds on it */
          got = ask(rt, p, where, r);
          next = p->next;
          cua__polinst_release(p);
        }
        if (got == NULL)
          break;
        placed++;
      }
    }
  if (rt->pull_held > 0 && placed == 0 && !busy(rt))
    guard(rt, r);
  return placed;
}
