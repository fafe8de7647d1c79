/*
 * core/plan.c: a DAG submitted again, built from its plan.
 *
 * The second build of a root op records on it what it built (its plan);
 * the next builds make the same nodes from that record, with no walk over
 * the ops (graph.c builds the others, and calls in here).
 *
 * Owns: root ops' plans (op->plan: NULL, a marker, or a plan, freed with
 * the op by cua__plan_free()). Everything here runs under rt->lock, except
 * cua__plan_free(), called by whoever drops the op's last reference.
 */
#include "config.h"
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A DAG submitted again builds the same nodes and edges: ops are frozen
 * once submitted (op.c), and without shared ops (whose node an earlier
 * submission may have made, or be running) nothing the build reads
 * depends on anything but the ops. So the second build of a root of
 * PLAN_MIN nodes or more records them on the root op (cua__plan_record()), and
 * the next builds make the nodes from that record (cua__build_from_plan()):
 * in the same order, with the same edges (their flags as built), levels,
 * "then" sources and watches, without the walk over the ops, the
 * collapsing of thens and zips, and the levels' pass. A chain of 5,000
 * spins in one submission, warm, on the host backend: 2,734 instructions
 * per op in all instead of 3,187 (tools/bench/callgrind-per-op.sh -k 3;
 * doc/results, thirty-first session). A DAG with a shared op, or whose
 * build had to look for cycles, is built every time (CUA__PLAN_NONE). */
#define PLAN_MIN 32

/* Builds made a chunk at a time ("stages", below): of STAGE_MIN nodes or
 * more, the first chunk STAGE_FIRST nodes, then STAGE_CHUNK, each to the
 * end of its last level. */
#define STAGE_MIN 1024
#define STAGE_FIRST 64
#define STAGE_CHUNK 256

typedef struct plan_node {
  cua_op *op;
  uint32_t dep0, ndeps; /* its edges: plan->deps[dep0 .. dep0 + ndeps) */
  uint32_t then_src;    /* the index of its then_src, plus 1; 0 for none */
  uint32_t level;
  uint32_t watches; /* how many times the submission watches it */
  uint32_t nout;    /* the edges from it: its dependents in the build */
  uint32_t reach;   /* the index of its last device dependent (its own:
                       none), the one that may wait for it on a stream */
  uint32_t succ;    /* its successors as a policy is told of them, once
                       the whole build is wired (plan->has_succ) */
} plan_node;

typedef struct plan_dep {
  uint32_t from; /* the producer's index */
  unsigned flags;
} plan_dep;

struct cua__plan {
  size_t n, ndeps;
  size_t naccs; /* buffer accesses of its ops (frozen), all told */
  int leveled;  /* its nodes' levels never fall, in its order, and no two
                   device nodes share one (a chain, zipped or not) */
  int has_succ; /* nodes[].succ recorded (cua__plan_record_succ()) */
  size_t root;  /* the index of the node that stands for the root op */
  plan_node *nodes;
  plan_dep *deps;
};

/* A recorded plan, not NULL or one of the markers. */
int cua__plan_recorded(const cua__plan *plan) {
  return plan != NULL && plan != CUA__PLAN_NONE && plan != CUA__PLAN_SEEN;
}

void cua__plan_free(cua__plan *plan) {
  if (!cua__plan_recorded(plan))
    return;
  free(plan->nodes);
  free(plan->deps);
  free(plan);
}

/* Records what @p b built from @p root on it: at its second build, so
 * that a program that makes a new DAG for every submission allocates no
 * plan (the first build of a root decides, for good, whether it may
 * have one). Out of memory, nothing is recorded and the next build tries
 * again. */
void cua__plan_record(cua__build *b, cua_op *root) {
  if (b->n < PLAN_MIN || b->n > INT_MAX || b->backward || b->shared) {
    root->plan = CUA__PLAN_NONE;
    return;
  }
  if (root->plan == NULL) {
    root->plan = CUA__PLAN_SEEN;
    return;
  }
  size_t ndeps = 0;
  for (size_t i = 0; i < b->n; i++) {
    b->order[i]->scratch = (int)i;
    ndeps += b->order[i]->ndeps;
  }
  /* Every edge and then source within the build, each earlier in it (no
   * shared op: nothing else can be reached). */
  for (size_t i = 0; i < b->n; i++) {
    const cua__node *n = b->order[i];
    for (size_t k = 0; k < n->ndeps; k++) {
      const cua__node *p = n->deps[k].node;
      if (p->sub_id != b->sub->id || (size_t)p->scratch >= i ||
          b->order[p->scratch] != p) {
        root->plan = CUA__PLAN_NONE;
        return;
      }
    }
    const cua__node *t = n->then_src;
    if (t != NULL && (t->sub_id != b->sub->id || (size_t)t->scratch >= i ||
                      b->order[t->scratch] != t)) {
      root->plan = CUA__PLAN_NONE;
      return;
    }
  }
  cua__node *rn = cua__build_get(b, root);
  if (rn == NULL || rn->sub_id != b->sub->id || b->order[rn->scratch] != rn) {
    root->plan = CUA__PLAN_NONE;
    return;
  }
  cua__plan *plan = cua__calloc(1, sizeof *plan);
  if (plan == NULL)
    return;
  plan->nodes = cua__malloc(b->n * sizeof *plan->nodes);
  plan->deps = cua__malloc((ndeps ? ndeps : 1) * sizeof *plan->deps);
  if (plan->nodes == NULL || plan->deps == NULL) {
    cua__plan_free(plan);
    return;
  }
  plan->n = b->n;
  plan->ndeps = ndeps;
  plan->leveled = 1;
  plan->root = (size_t)rn->scratch;
  size_t d = 0;
  uint32_t dev_level = UINT32_MAX; /* the last device node's */
  for (size_t i = 0; i < b->n; i++) {
    const cua__node *n = b->order[i];
    plan_node *pn = &plan->nodes[i];
    pn->op = n->op;
    pn->dep0 = (uint32_t)d;
    pn->ndeps = (uint32_t)n->ndeps;
    pn->then_src = n->then_src ? (uint32_t)n->then_src->scratch + 1 : 0;
    pn->level = n->level;
    pn->watches = (uint32_t)n->nwatchers;
    pn->nout = 0; /* (counted by the later nodes' edges) */
    pn->reach = (uint32_t)i;
    if (i > 0 && n->level < plan->nodes[i - 1].level)
      plan->leveled = 0;
    if (n->cls == CUA__CLASS_DEVICE) {
      if (dev_level != UINT32_MAX && n->level == dev_level)
        plan->leveled = 0;
      dev_level = n->level;
    }
    plan->naccs += n->op->nacc;
    for (size_t k = 0; k < n->ndeps; k++) {
      plan->deps[d].from = (uint32_t)n->deps[k].node->scratch;
      plan->deps[d].flags = n->deps[k].flags;
      plan_node *from = &plan->nodes[plan->deps[d].from];
      from->nout++;
      if (n->cls == CUA__CLASS_DEVICE)
        from->reach = (uint32_t)i;
      d++;
    }
  }
  root->plan = plan;
}

/* Whether builds from @p plan may be made a chunk at a time ("stages",
 * below), once its successors are recorded. */
static int stageable(const cua__plan *plan) {
  return plan->leveled && plan->naccs == 0 && plan->n >= STAGE_MIN;
}

void cua__plan_record_succ(const cua__build *b, cua_op *root) {
  cua__plan *plan = root->plan;
  if (!cua__plan_recorded(plan) || plan->has_succ || b->n != plan->n ||
      !stageable(plan))
    return; /* (only what a stage needs) */
  for (size_t i = 0; i < b->n; i++) {
    if (b->order[i]->op != plan->nodes[i].op)
      return; /* (not the build the plan describes) */
    size_t c = cua__count_successors(b->order[i], 0);
    plan->nodes[i].succ = c > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)c;
  }
  plan->has_succ = 1;
}

/* Makes node @p i of @p plan in @p b (its producers made before it). */
static int make_node(cua__build *b, const cua__plan *plan, size_t i,
                     size_t *subcap, cua__node **made) {
  const plan_node *pn = &plan->nodes[i];
  int rc;
  cua__node *n = cua__build_add_node(b, pn->op, pn->watches, subcap, &rc);
  /* (the caller may look at it only while the submission, which listed
   * it, holds it: not if listing it failed) */
  cua__sub *s = b->sub;
  *made = n != NULL && s->nnodes > 0 && s->nodes[s->nnodes - 1] == n ? n : NULL;
  if (n == NULL)
    return rc;
  n->level = pn->level;
  /* Its dependents in the build, as cua__reserve_hazards() would count
   * them (its first pass: every producer here is pending). */
  if (rc == 0 && b->reserving) {
    n->want = pn->nout;
    if (plan->naccs == 0 && cua__reserve_dependents(n) != 0)
      rc = CUA_ERR_NOMEM;
  }
  if (rc == 0 && pn->ndeps > 0 &&
      cua__edges_grow(b->rt, &n->deps, &n->capdeps, pn->ndeps, n->deps_inl))
    rc = CUA_ERR_NOMEM;
  if (rc == 0) {
    const plan_dep *pd = &plan->deps[pn->dep0];
    for (uint32_t k = 0; k < pn->ndeps; k++) {
      cua__node *p = b->order[pd[k].from];
      n->deps[k].node = p;
      n->deps[k].flags = pd[k].flags;
      atomic_fetch_add(&p->refs, 1);
    }
    n->ndeps = pn->ndeps;
    if (pn->then_src != 0) {
      n->then_src = b->order[pn->then_src - 1];
      n->then_src->then_taken = 1; /* as add_after() marks it */
    }
  }
  cua__node_release(n);
  return rc;
}

/* Builds @p b's nodes from @p plan, as cua__build_graph() would, except
 * that only the ops with a node of their own, and the root, are mapped to
 * their nodes (cua__build_get()): a then or zip built without a node is
 * not. Nothing reads those after a build but cua__check_cycles(), which a
 * build from a plan never needs (b->backward stays 0). */
int cua__build_from_plan(cua__build *b, cua_op *root, size_t *subcap) {
  const cua__plan *plan = root->plan;
  for (size_t i = 0; i < plan->n; i++) {
    cua__node *n;
    int rc = make_node(b, plan, i, subcap, &n);
    if (rc != 0)
      return rc;
  }
  cua__build_put(b, root, b->order[plan->root]);
  b->wants = b->reserving;
  return 0;
}

/* ----------------------------------------------------------------- stages */

/* A large DAG built from its plan need not be built whole before its first
 * launch: a submission's round builds and wires STAGE_FIRST nodes, then
 * STAGE_CHUNK more each time it has decided everything built
 * (cua__stage_next(), from cua__run_round()), so the device starts on the
 * first ops while the rest are built. Under launch = relay (auto on a
 * driver backend), the launch thread that goes on deciding the round
 * builds them too. On an H200, building a chain of 10,000 from its plan
 * took 1.0-1.7 ms before its first launch (doc/results, thirty-second
 * session).
 *
 * A round places the ready nodes by level, then by op id (commands.c): a
 * plan whose levels never fall in its order, made in chunks that end at a
 * level's end, is placed in the same order as when it is built whole,
 * since every node of a later chunk has a higher level than every node of
 * an earlier one. Only chains are made so, though (no two device nodes of
 * one level): a random DAG of 2,000 ops 16 wide, whose levels never fall
 * in its order either, ran 1.6x raw streams under round-robin in 2 of 10
 * runs so made, against at most 1.10x built whole (H200, doc/results,
 * thirty-third session), for reasons not found. A policy is told
 * each op's successors as the whole build's wiring counted them
 * (n->staged_succ, recorded at the first wiring of a build the plan
 * describes: cua__plan_record_succ()), though some are not made yet.
 * A node with a device dependent in a later chunk records a point after
 * it (n->late_deps), as one whose consumer is not placed yet, so that the
 * consumer's wait stays exact.
 *
 * Only for such a plan that accesses no buffer (validation and hazards
 * look at the whole build), of STAGE_MIN nodes or more. The arrays that
 * grow with the build (its order, the submission's nodes) are grown whole
 * before anything commits; what a node allocates (itself, edges past its
 * inline ones, watches) may still fail, once earlier nodes may have run.
 * Then that node, if it was made, fails, nothing more is made, and the
 * submission fails through its future (CUA_ERR_NOMEM) once what it has is
 * done. The submission holds itself pending until the last node is made
 * (sub->pending, one more), so that it cannot complete before. */

int cua__stage_begin(cua__stage *st, cua__build *b, cua_op *root) {
  const cua__plan *plan = root->plan;
  cua_runtime *rt = b->rt;
  cua__sub *sub = b->sub;
  /* Not in virtual time, where it gains nothing, nor for a policy told of
   * the whole DAG first, nor for a simulator charged for the build at
   * once (be_round). */
  if (!cua__plan_recorded(plan) || !stageable(plan) || !plan->has_succ ||
      !b->reserving || rt->vclock != NULL || rt->be_round != NULL ||
      cua__dag_wanted(rt, sub))
    return 0;
  if (cua__grow_inl(&b->order, &b->cap, plan->n, sizeof *b->order,
                    b->order_inl) != 0 ||
      cua__grow_inl(&sub->nodes, &sub->capnodes, sub->nnodes + plan->n,
                    sizeof *sub->nodes, sub->nodes_inl) != 0)
    return CUA_ERR_NOMEM;
  memset(st, 0, sizeof *st);
  st->b = b;
  st->root = root;
  st->n = plan->n;
  st->chunk = STAGE_FIRST;
  b->wants = 1; /* (each node's dependents reserved as it is made) */
  b->next_id = rt->next_op + 1;
  rt->next_op += plan->n;
  sub->pending++;
  rt->stats.builds_staged++;
  return 1;
}

void cua__stage_next(cua_runtime *rt, cua__round *r) {
  cua__stage *st = r->stage;
  cua__build *b = st->b;
  cua__sub *sub = b->sub;
  const cua__plan *plan = st->root->plan;
  size_t from = b->n;
  size_t end = plan->n - st->next > st->chunk ? st->next + st->chunk : plan->n;
  /* (to the end of its last level) */
  while (end < plan->n && plan->nodes[end].level == plan->nodes[end - 1].level)
    end++;
  int rc = 0;
  while (st->next < end && rc == 0) {
    size_t i = st->next;
    cua__node *n = NULL;
    if ((rc = make_node(b, plan, i, &sub->capnodes, &n)) != 0) {
      if (n != NULL) {
        /* Made and listed (the submission holds it) but not whole: it
         * fails, with no edges, and is settled as such once wired. */
        if (b->n == 0 || b->order[b->n - 1] != n)
          b->order[b->n++] = n; /* (its room was grown: cannot fail) */
        n->ndeps = 0;
        n->code = rc;
        n->msg = cua__strdup("out of host memory");
      }
      break;
    }
    n->staged_succ = plan->nodes[i].succ + 1;
    n->late_deps = plan->nodes[i].reach >= end;
    st->next++;
    if (i == plan->root) {
      sub->root = b->order[i];
      atomic_fetch_add(&sub->root->refs, 1);
      cua__build_put(b, st->root, sub->root);
    }
  }
  cua__wire_range(rt, b, from, b->n, r);
  st->chunk = STAGE_CHUNK;
  if (rc == 0 && st->next < plan->n)
    return;
  if (rc != 0 && sub->status == 0) {
    char buf[CUA__ERRLEN];
    snprintf(buf, sizeof buf,
             "cua_submit: out of host memory after %zu of the DAG's %zu "
             "ops were built (the large DAG was built as it ran: those ran, "
             "the others did not)",
             st->next, plan->n);
    sub->status = rc;
    sub->msg = cua__strdup(buf);
  }
  r->stage = NULL;
  cua__sub_unhold(rt, sub);
}
