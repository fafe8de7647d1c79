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
#include <stdlib.h>

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

typedef struct plan_node {
  cua_op *op;
  uint32_t dep0, ndeps; /* its edges: plan->deps[dep0 .. dep0 + ndeps) */
  uint32_t then_src;    /* the index of its then_src, plus 1; 0 for none */
  uint32_t level;
  uint32_t watches; /* how many times the submission watches it */
  uint32_t nout;    /* the edges from it: its dependents in the build */
} plan_node;

typedef struct plan_dep {
  uint32_t from; /* the producer's index */
  unsigned flags;
} plan_dep;

struct cua__plan {
  size_t n, ndeps;
  size_t naccs; /* buffer accesses of its ops (frozen), all told */
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
  plan->root = (size_t)rn->scratch;
  size_t d = 0;
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
    plan->naccs += n->op->nacc;
    for (size_t k = 0; k < n->ndeps; k++) {
      plan->deps[d].from = (uint32_t)n->deps[k].node->scratch;
      plan->deps[d].flags = n->deps[k].flags;
      plan->nodes[plan->deps[d].from].nout++;
      d++;
    }
  }
  root->plan = plan;
}

/* Builds @p b's nodes from @p plan, as cua__build_graph() would, except
 * that only the ops with a node of their own, and the root, are mapped to
 * their nodes (cua__build_get()): a then or zip built without a node is
 * not. Nothing reads those after a build but cua__check_cycles(), which a
 * build from a plan never needs (b->backward stays 0). */
int cua__build_from_plan(cua__build *b, cua_op *root, size_t *subcap) {
  const cua__plan *plan = root->plan;
  cua_runtime *rt = b->rt;
  for (size_t i = 0; i < plan->n; i++) {
    const plan_node *pn = &plan->nodes[i];
    int rc;
    cua__node *n = cua__build_add_node(b, pn->op, pn->watches, subcap, &rc);
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
        cua__edges_grow(rt, &n->deps, &n->capdeps, pn->ndeps, n->deps_inl))
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
      if (pn->then_src != 0)
        n->then_src = b->order[pn->then_src - 1];
    }
    cua__node_release(n);
    if (rc != 0)
      return rc;
  }
  cua__build_put(b, root, b->order[plan->root]);
  b->wants = b->reserving;
  return 0;
}
