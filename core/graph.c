/*
 * core/graph.c: from the op DAG to nodes and edges.
 *
 * A submission turns the DAG below its root op into nodes, in depth-first
 * post-order: the "submission order" that results must match. Each node
 * gets dependency edges: its DAG inputs (through zips and thens, to the
 * device nodes they stand for), the "runs after" edges of then, and (from
 * hazards.c) its buffer hazards. An op that appears twice in one DAG is
 * built once, which is the only way a cycle can appear (checked in
 * cycles.c).
 * What happens to the nodes afterwards (their edges' arrays, reference
 * counts, wiring, failure) is node.c's. A root submitted again is built
 * from the plan its second build recorded on it (plan.c), with no walk
 * over its ops.
 *
 * Owns: a build (cua__build: its order of nodes, and op->build_sub and
 * op->build_node, which map an op to its node in the build), making a
 * node, and a then's and zip's collapsing. Everything here runs under
 * rt->lock.
 */
#include "config.h"
#include "internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- making nodes */

/* What kind of node @p op makes (CUA__CLASS_*). */
static int op_class(const cua_op *op) {
  return op->kind == CUA_OP_ZIP || op->kind == CUA_OP_UNZIP ||
                 op->kind == CUA_OP_THEN || op->kind == CUA_OP_SHARED
             ? CUA__CLASS_VIRTUAL
         : cua__op_is_host(op) ? CUA__CLASS_HOST
                               : CUA__CLASS_DEVICE;
}

static cua__node *node_new(cua__build *b, cua_op *op) {
  cua_runtime *rt = b->rt;
  int fresh;
  cua__node *n = cua__pool_get(&rt->node_pool, &fresh);
  if (n == NULL)
    return NULL;
  memset(n, 0, sizeof *n);
  atomic_init(&n->refs, 1);
  n->rt = rt;
  cua__runtime_hold(rt);
  n->op = cua_op_retain(op);
  n->kind = op->kind;
  n->cls = op_class(op);
  /* (a stage's ids were taken at its start: plan.c) */
  n->op_id = b->next_id != 0 ? b->next_id++ : ++rt->next_op;
  n->pl.device = n->pl.stream = -1;
  n->deps = n->deps_inl;
  n->capdeps = CUA__INLINE_EDGES;
  n->dependents = n->dependents_inl;
  n->capdependents = CUA__INLINE_EDGES;
  n->watchers = n->watchers_inl;
  n->capwatchers = CUA__INLINE_WATCHERS;
  return n;
}

/* An explicit stack for walks through nested zips and thens, which may be
 * as deep as the DAG is long: no recursion. Of nodes (add_device_dep())
 * or of ops (add_after()). */
typedef struct walk_stack {
  void **v;
  size_t len, cap;
  void *inl[16];
} walk_stack;

static void ns_init(walk_stack *st) {
  st->v = st->inl;
  st->len = 0;
  st->cap = sizeof st->inl / sizeof *st->inl;
}

static int ns_push(walk_stack *st, void *n) {
  if (cua__grow_inl(&st->v, &st->cap, st->len + 1, sizeof *st->v, st->inl))
    return CUA_ERR_NOMEM;
  st->v[st->len++] = n;
  return 0;
}

static void ns_free(walk_stack *st) {
  if (st->v != st->inl)
    free(st->v);
}

/* Adds a dependency of a device node on @p p; a virtual producer stands for
 * the producers it joins, so device consumers of a zip wait on its parts
 * with events instead of waiting for the whole zip to complete. */
static int add_device_dep(cua__node *n, cua__node *p0, unsigned flags) {
  if (p0->cls != CUA__CLASS_VIRTUAL || p0->state == CUA__NODE_DONE)
    return cua__add_dep(n, p0, flags); /* the common case: no walk */
  walk_stack st;
  ns_init(&st);
  int rc = ns_push(&st, p0);
  while (rc == 0 && st.len > 0) {
    cua__node *p = st.v[--st.len];
    if (p->cls != CUA__CLASS_VIRTUAL || p->state == CUA__NODE_DONE) {
      rc = cua__add_dep(n, p, flags);
    } else if (p->op != NULL && p->op->kind == CUA_OP_THEN && p->ndeps == 2 &&
               p->then_ordered) {
      /* then(first, next) ends with next, which is already ordered after
       * first: standing for next alone keeps long chains linear. Not when
       * add_after() could not order it (a start of next done already, or
       * an earlier submission's shared run): its node alone waits for
       * first, so both parts are walked. */
      rc = ns_push(&st, p->deps[1].node);
    } else {
      for (size_t i = p->ndeps; i-- > 0 && rc == 0;)
        rc = ns_push(&st, p->deps[i].node);
    }
  }
  ns_free(&st);
  return rc;
}

/* -------------------------------------------------------------- building */

/* An op's node in the submission being built is kept in the op itself
 * (build_sub, build_node), under rt->lock: an op belongs to one runtime,
 * and its runtime builds one submission at a time, whose id (unique, ever
 * increasing) says whether the op's fields are this build's. */
cua__node *cua__build_get(const cua__build *b, const cua_op *op) {
  return op->build_sub == b->sub->id ? op->build_node : NULL;
}

void cua__build_init(cua__build *b, cua_runtime *rt, cua__sub *sub) {
  b->rt = rt;
  b->sub = sub;
  b->n = 0;
  if (sub->kept_order != NULL) { /* a larger build's, kept (nodes.h) */
    b->order = sub->kept_order;
    b->cap = sub->kept_order_cap;
    sub->kept_order = NULL;
  } else {
    b->order = b->order_inl;
    b->cap = sizeof b->order_inl / sizeof *b->order_inl;
  }
  b->backward = 0;
  b->shared = 0;
  b->naccs = 0;
  b->reserving = b->wants = 0;
  b->next_id = 0;
}

/* A virtual node's array of @p count results (a zip's, a shared zip's
 * copy, a graph launch's), zeroed: up to CUA__INPUT_BLOCK entries from the
 * runtime's input pool, as an op's inputs, so that a runtime in steady
 * state does not call the allocator for it; beyond, from the allocator.
 * Freed with the node (cua__node_release()). */
int cua__node_results(cua__node *n, size_t count) {
  size_t cap = count ? count : 1;
  void **r;
  if (cap <= CUA__INPUT_BLOCK) {
    int fresh;
    r = cua__pool_get(&n->rt->input_pool, &fresh);
    cap = CUA__INPUT_BLOCK;
  } else {
    r = cua__malloc(cap * sizeof *r);
  }
  if (r == NULL)
    return CUA_ERR_NOMEM;
  memset(r, 0, cap * sizeof *r);
  cua__pool_array_free(&n->rt->input_pool, CUA__INPUT_BLOCK, n->results,
                       n->capresults, NULL);
  n->results = r;
  n->capresults = cap;
  n->nresults = count;
  return 0;
}

/* A stream function's node's room for its buffers' addresses: inline up
 * to four, then a block of the input pool up to CUA__INPUT_BLOCK, then
 * the allocator; freed with the node. */
int cua__node_ptrs(cua__node *n, size_t count) {
  if (n->ptrs == NULL) {
    n->ptrs = n->ptrs_inl;
    n->capptrs = sizeof n->ptrs_inl / sizeof *n->ptrs_inl;
  }
  return cua__pool_array_grow(&n->rt->input_pool, CUA__INPUT_BLOCK, &n->ptrs,
                              &n->capptrs, count, sizeof *n->ptrs, n->ptrs_inl);
}

/* The order array, if it outgrew the inline one, stays with the
 * submission's block for the next build made from it (nodes.h); the
 * submission lives at least until its builder is done with it. */
void cua__build_free(cua__build *b) {
  if (b->order != b->order_inl)
    cua__sub_keep(&b->sub->kept_order, &b->sub->kept_order_cap, b->order,
                  b->cap);
  b->order = b->order_inl;
}

void cua__build_put(cua__build *b, cua_op *op, cua__node *n) {
  op->build_sub = b->sub->id;
  op->build_node = n;
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
  if (cua__grow_inl(&s->nodes, cap, s->nnodes + 1, sizeof *s->nodes,
                    s->nodes_inl))
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

/* "then": every real node that starts @p next0's part of the DAG runs after
 * @p first. The walk goes over ops, since a then without a node of its own
 * (see cua__build_graph()) still starts with its first part. *whole says
 * whether every start got the edge: 0 when a start is done already or is
 * an earlier submission's shared run, or when there was none. */
static int add_after(cua__build *b, cua_op *next0, cua__node *first,
                     int *whole) {
  walk_stack st;
  ns_init(&st);
  int rc = 0, added = 0;
  *whole = 1;
  st.v[st.len++] = next0;
  while (rc == 0 && st.len > 0) {
    cua_op *op = st.v[--st.len];
    /* NULL for a zip built without a node (zip_elidable()): its parts
     * start it, as they start a zip with one. */
    cua__node *next = cua__build_get(b, op);
    if (next != NULL &&
        (next->state == CUA__NODE_DONE || next->sub_id != b->sub->id)) {
      *whole = 0; /* done, or a shared run of an earlier submission */
      continue;
    }
    if (next != NULL && next->cls != CUA__CLASS_VIRTUAL && next->op == op) {
      /* One continuation per op: a fan-out's other device starts (then(a,
       * zip(b, c)), or two thens after one op) get no then_of, so that a
       * policy that keeps a then on its stream does not put them all
       * there, one after the other. A host step is placed by no policy:
       * it claims nothing. */
      cua__node *src = next->then_src == NULL && next->cls == CUA__CLASS_DEVICE
                           ? then_source(first)
                           : NULL;
      if (src != NULL && !src->then_taken) {
        next->then_src = src;
        src->then_taken = 1;
      }
      /* Nodes are made in post-order, with increasing ids: every other
       * edge of the build runs from a lower id to a higher one. */
      if (first->op_id >= next->op_id)
        b->backward = 1;
      rc = next->cls == CUA__CLASS_DEVICE
               ? add_device_dep(next, first, CUA__DEP_DATA)
               : cua__add_dep(next, first, CUA__DEP_DATA | CUA__DEP_COMPLETE);
      added = 1;
      continue;
    }
    /* A then starts with its first part (with or without a node of its
     * own); a zip with all of its parts; shared and unzip with theirs. */
    size_t nd = op->kind == CUA_OP_THEN ? 1 : op->ninputs;
    if (op->kind == CUA_OP_THEN) {
      /* then(s, z) whose s is done already, or an earlier submission's
       * shared run: s orders nothing after first, so z's starts are
       * starts too. */
      cua__node *s = cua__build_get(b, op->inputs[0]);
      if (s != NULL && (s->state == CUA__NODE_DONE || s->sub_id != b->sub->id))
        nd = 2;
    }
    if (cua__grow_inl(&st.v, &st.cap, st.len + nd, sizeof *st.v, st.inl)) {
      rc = CUA_ERR_NOMEM;
      break;
    }
    for (size_t i = nd; i-- > 0;)
      st.v[st.len++] = op->inputs[i];
  }
  ns_free(&st);
  if (!added)
    *whole = 0;
  return rc;
}

/* Levels (cua_op_info.level): a device or host node's level is the number
 * of device and host nodes on the longest path of this submission's edges
 * (inputs and thens, and the buffer hazards between its ops once
 * cua__add_hazards() or a capture's added them: the caller then runs this
 * pass again) that ends at it; zips, unzips, shared and thens add none.
 * Every edge of the build runs forward in the build's post-order (inputs
 * are built first, a then orders its next part, built after its first
 * part, and a hazard ties an op to one earlier in that order), so one pass
 * in that order sees every producer first. A virtual node keeps in `level`
 * the level its consumers start from; nodes of earlier submissions count
 * as none. */
void cua__build_levels(cua__build *b) {
  for (size_t i = 0; i < b->n; i++) {
    cua__node *n = b->order[i];
    uint32_t lv = 0;
    for (size_t k = 0; k < n->ndeps; k++) {
      const cua__node *p = n->deps[k].node;
      if (p->sub_id != b->sub->id)
        continue;
      uint32_t from = p->cls == CUA__CLASS_VIRTUAL ? p->level : p->level + 1;
      if (from > lv)
        lv = from;
    }
    n->level = lv;
  }
}

/* "then(zip(a, b, ...), op)", the way a task that waits for several
 * others is written, needs no node for the zip: op's node waits for a, b,
 * ... directly (add_device_dep() would walk through the zip's node to them
 * anyway), the then collapses into op's node (add_after() always finds
 * op's fresh node, so the edge is whole), and nothing else in the build
 * refers to the zip's node. Building it would double a task's nodes, and
 * its edges would be counted, wired and completed for nothing. So the
 * zip's parts are built in its place, when the then is unnamed, the zip
 * is unnamed and not built yet, and the next part is a device op not built
 * yet. If the next part is built while the parts are (it appears among
 * them), the zip is built after all, where post-order would have built it.
 * A zip left without a node is built when something else in the build
 * needs it (then it comes after its parts, as post-order wants). */
static int zip_elidable(const cua__build *b, const cua_op *op) {
  if (op->kind != CUA_OP_THEN || op->ninputs != 2 || op->hints.name != NULL ||
      op->hints.tag != NULL)
    return 0;
  const cua_op *z = op->inputs[0], *next = op->inputs[1];
  return z->kind == CUA_OP_ZIP && z->ninputs > 0 && z->hints.name == NULL &&
         z->hints.tag == NULL && cua__build_get(b, z) == NULL &&
         cua__build_get(b, next) == NULL && op_class(next) == CUA__CLASS_DEVICE;
}

/* A new node of @p op in @p b: listed in the submission (which holds a
 * reference), watched by it @p watches times, appended to the build's
 * order. The caller gets it with a reference of its own to release, also
 * when listing failed (*rc); NULL (*rc set) when none could be made.
 * Shared by the walk (build_node()) and plans (plan.c). */
cua__node *cua__build_add_node(cua__build *b, cua_op *op, unsigned watches,
                               size_t *subcap, int *rc) {
  cua__node *n = node_new(b, op);
  *rc = n == NULL ? CUA_ERR_NOMEM : 0;
  if (n == NULL)
    return NULL;
  n->sub_id = b->sub->id;
  b->naccs += op->nacc;
  cua__build_put(b, op, n);
  *rc = sub_add(b->sub, n, subcap);
  for (unsigned w = 0; w < watches && *rc == 0; w++)
    *rc = watch(b->sub, n);
  if (*rc == 0 && cua__grow_inl(&b->order, &b->cap, b->n + 1, sizeof *b->order,
                                b->order_inl) != 0)
    *rc = CUA_ERR_NOMEM;
  if (*rc == 0)
    b->order[b->n++] = n;
  return n;
}

/* A barrier waits for all work submitted before it. What was decided
 * already, it waits for on the streams when it is decided itself
 * (commands.c, decide_launch()); what was not (ops waiting for a host step
 * or an earlier op, ops a pull-mode policy holds, host steps not done),
 * it waits for by an edge to each such node of the submissions in flight:
 * order only, so that their failures do not fail it. Its build then has
 * edges out of itself: no plan. A large chain of an earlier submission
 * still being made as it runs (plan.c, stages) is waited for as far as it
 * is made and wired. The walk goes over every node of the submissions in
 * flight (not done), under rt->lock: a barrier behind 10,000 pending ops
 * took about 10 ms under ThreadSanitizer, 36 us behind none. */
static int barrier_deps(cua__build *b, cua__node *n) {
  int rc = 0;
  b->shared = 1;
  for (cua__sub *s = b->rt->subs; s != NULL && rc == 0; s = s->next) {
    if (s == b->sub || s->pending == 0)
      continue; /* (done: every node settled) */
    for (size_t i = 0; i < s->nnodes && rc == 0; i++) {
      cua__node *p = s->nodes[i];
      if (p->cls == CUA__CLASS_VIRTUAL || p->state == CUA__NODE_DONE ||
          (p->cls == CUA__CLASS_DEVICE && p->state == CUA__NODE_ENQUEUED))
        continue;
      /* A node of a chain still being built as it runs whose successors
       * are not all made keeps exactly the room they will take in its
       * dependents (plan.c): no edge, which would take it. */
      if (p->staged_succ != 0 && p->ndependents + 1 < p->staged_succ)
        continue;
      rc = cua__add_dep(n, p,
                        p->cls == CUA__CLASS_DEVICE ? 0 : CUA__DEP_COMPLETE);
    }
  }
  return rc;
}

/* The node of @p op, once its inputs are built: made, listed in the
 * submission and the build's order, its input edges added. */
static int build_node(cua__build *b, cua_op *op, cua_op *root, size_t *subcap) {
  cua__op_freeze(op);
  /* The submission waits for every op that does work, and for the root;
   * a zip or then inside the DAG completes with its parts anyway. */
  int rc;
  cua__node *n = cua__build_add_node(
      b, op, op_class(op) != CUA__CLASS_VIRTUAL || op == root, subcap, &rc);
  if (n == NULL)
    return rc;
  for (size_t i = 0; i < op->ninputs && rc == 0; i++) {
    cua__node *p = cua__build_get(b, op->inputs[i]);
    unsigned fl = CUA__DEP_DATA;
    if (n->cls == CUA__CLASS_DEVICE)
      rc = add_device_dep(n, p, fl);
    else
      rc = cua__add_dep(n, p, fl | CUA__DEP_COMPLETE);
  }
  if (rc == 0 && op->kind == CUA_OP_SHARED) {
    b->shared = 1;
    op->shared_node = n;
    atomic_fetch_add(&n->refs, 1);
  }
  if (rc == 0 && op->kind == CUA_OP_BARRIER)
    rc = barrier_deps(b, n);
  cua__node_release(n);
  return rc;
}

/* Builds the nodes of the DAG below @p root in post-order, iteratively
 * (or from the root's plan). */
int cua__build_graph(cua__build *b, cua_op *root, size_t *subcap) {
  if (cua__plan_recorded(root->plan))
    return cua__build_from_plan(b, root, subcap);
  typedef struct frame {
    cua_op *op;
    size_t next;
    /* A then whose zip has no node (zip_elidable()): 1 while the zip's
     * parts are built (next counts them), 2 after. */
    int elide;
  } frame;
  /* Small DAGs (most submissions) need no allocation for the stack. */
  frame inl[32];
  size_t cap = sizeof inl / sizeof *inl, len = 0;
  frame *st = inl;
  st[len++] = (frame){root, 0, 0};
  int rc = 0;
  while (len > 0 && rc == 0) {
    frame *f = &st[len - 1];
    cua_op *op = f->op;
    if (f->next == 0 && cua__build_get(b, op) != NULL) {
      len--;
      continue;
    }
    /* A shared op that already ran (or is running) in an earlier
     * submission is not built again: its node is reused. */
    if (op->kind == CUA_OP_SHARED && op->shared_node != NULL) {
      cua__node *n = op->shared_node;
      b->shared = 1;
      atomic_fetch_add(&n->refs, 1);
      cua__build_put(b, op, n);
      rc = sub_add(b->sub, n, subcap);
      if (rc == 0 && n->state != CUA__NODE_DONE &&
          (n->cls != CUA__CLASS_VIRTUAL || op == root))
        rc = watch(b->sub, n);
      cua__node_release(n);
      len--;
      continue;
    }
    if (f->next == 0 && f->elide == 0 && zip_elidable(b, op))
      f->elide = 1;
    /* The inputs to build first: a then's zip's parts while its zip is
     * built without a node, else the op's own inputs. */
    const cua_op *from = f->elide == 1 ? op->inputs[0] : op;
    if (f->next < from->ninputs) {
      cua_op *in = from->inputs[f->next++];
      if (cua__build_get(b, in) == NULL) {
        if (cua__grow_inl(&st, &cap, len + 1, sizeof *st, inl) != 0) {
          rc = CUA_ERR_NOMEM;
          break;
        }
        st[len++] = (frame){in, 0, 0};
      }
      continue;
    }
    if (f->elide == 1) {
      /* The parts are built (the zip cannot be among them: an op is made
       * after its inputs). The zip goes on without a node unless the next
       * part was built among them. */
      f->elide = 2;
      f->next = 1;
      if (cua__build_get(b, op->inputs[1]) != NULL) {
        f->elide = 0;
        if ((rc = build_node(b, op->inputs[0], root, subcap)) != 0)
          break;
      }
      continue;
    }
    if (f->elide == 2) {
      /* The next part is this build's fresh device node, made after
       * every part of the zip (so no edge here runs backwards): each part
       * is a producer of it, and the then collapses into it. */
      cua__node *end = cua__build_get(b, op->inputs[1]);
      const cua_op *zip = op->inputs[0];
      for (size_t i = 0; i < zip->ninputs && rc == 0; i++) {
        cua__node *p = cua__build_get(b, zip->inputs[i]);
        rc = add_device_dep(end, p, CUA__DEP_DATA);
      }
      if (rc != 0)
        break;
      cua__op_freeze(op);
      cua__build_put(b, op, end);
      len--;
      continue;
    }
    /* Every input is built. A then whose first part now precedes every
     * start of its next part has no node of its own: its next part's end
     * stands for it (ends, results and failures are the same), which
     * halves the nodes of a chain of thens. A named or tagged then keeps
     * its node, for its name in messages. */
    int whole = 0;
    if (op->kind == CUA_OP_THEN) {
      rc =
          add_after(b, op->inputs[1], cua__build_get(b, op->inputs[0]), &whole);
      if (rc != 0)
        break;
      if (whole && op->hints.name == NULL && op->hints.tag == NULL) {
        cua__node *end = cua__build_get(b, op->inputs[1]);
        cua__op_freeze(op);
        cua__build_put(b, op, end);
        if (op == root && end->cls == CUA__CLASS_VIRTUAL)
          rc = watch(b->sub, end);
        len--;
        continue;
      }
    }
    rc = build_node(b, op, root, subcap);
    if (rc == 0 && op->kind == CUA_OP_THEN)
      cua__build_get(b, op)->then_ordered = whole;
    len--;
  }
  if (st != inl)
    free(st);
  if (rc == 0)
    cua__build_levels(b);
  if (rc == 0 && (root->plan == NULL || root->plan == CUA__PLAN_SEEN))
    cua__plan_record(b, root);
  return rc;
}
