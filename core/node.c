/*
 * core/node.c: nodes once built: their edges, reference counts, wiring and
 * failure.
 *
 * A node holds its dependencies and dependents inline, four of each, and
 * past that in arrays from the runtime's edge pool. cua__wire() counts
 * what each node of a build waits for and registers it with its
 * producers, in room hazards.c reserved before anything was committed (so
 * it cannot fail); failing a node propagates along data edges.
 *
 * Owns: a node's edge arrays, its reference count (n->refs) and its
 * failure state (n->code, n->msg, n->doomed). Everything here runs under
 * rt->lock, except cua__node_release() (stages.h) and cua__node_free(),
 * which any thread may call: reference counts are atomic, and a node is
 * freed once no one holds it.
 */
#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void edges_free(cua_runtime *rt, void *a, size_t cap, void *inl) {
  cua__pool_array_free(&rt->edge_pool, CUA__EDGE_BLOCK, a, cap, inl);
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

/* Edge arrays (a node's deps and dependents, both 16-byte entries) past
 * the inline ones: up to CUA__EDGE_BLOCK entries from the runtime's edge
 * pool (cua__pool_array_grow()), so that a node with a few more edges than
 * inline allocates nothing in steady state. Under rt->lock (the pool is
 * taken from under it). */
_Static_assert(sizeof(cua__dep) == 16 && sizeof(cua__dependent) == 16,
               "edge entries share one pool");

int cua__edges_grow(cua_runtime *rt, void *arr, size_t *cap, size_t need,
                    void *inl) {
  return cua__pool_array_grow(&rt->edge_pool, CUA__EDGE_BLOCK, arr, cap, need,
                              16, inl);
}

static void release_deps_to(cua__node *n, cua__node **todo) {
  for (size_t i = 0; i < n->ndeps; i++)
    unref(n->deps[i].node, todo);
  edges_free(n->rt, n->deps, n->capdeps, n->deps_inl);
  n->deps = n->deps_inl;
  n->capdeps = CUA__INLINE_EDGES;
  n->ndeps = 0;
}

static void release_dependents_to(cua__node *n, cua__node **todo) {
  cua__dependent *d = n->dependents;
  for (size_t i = 0; i < n->ndependents; i++)
    unref(d[i].node, todo);
  edges_free(n->rt, n->dependents, n->capdependents, n->dependents_inl);
  n->dependents = n->dependents_inl;
  n->capdependents = CUA__INLINE_EDGES;
  n->ndependents = 0;
}

void cua__node_release_deps(cua__node *n) {
  release_deps_to(n, NULL);
}

void cua__node_release_dependents(cua__node *n) {
  release_dependents_to(n, NULL);
}

/* Frees @p n, whose last reference was released (cua__node_release(),
 * stages.h); a node freed releases the nodes it holds, which may free them
 * in turn: a worklist, not recursion, since dependencies chain as deep as
 * the DAG is long. */
void cua__node_free(cua__node *n) {
  n->free_next = NULL;
  while (n != NULL) {
    cua__node *todo = n->free_next;
    release_deps_to(n, &todo);
    release_dependents_to(n, &todo);
    if (n->watchers != n->watchers_inl)
      free(n->watchers);
    free(n->msg);
    free(n->name);
    cua__pool_array_free(&n->rt->input_pool, CUA__INPUT_BLOCK, n->results,
                         n->capresults, NULL);
    free(n->ctx.msg);
    if (n->ptrs != NULL)
      cua__pool_array_free(&n->rt->input_pool, CUA__INPUT_BLOCK, n->ptrs,
                           n->capptrs, n->ptrs_inl);
    cua_op_destroy(n->op);
    cua_runtime *rt = n->rt;
    cua__pool_put(&rt->node_pool, n);
    cua__runtime_release(rt);
    n = todo;
  }
}

int cua__add_dep(cua__node *n, cua__node *p, unsigned flags) {
  /* Duplicates are harmless (each edge is counted and resolved once), so
   * only the last few are merged: a wide zip stays linear to build. A zip
   * keeps one edge per part, in order: its results are its parts'. */
  size_t from = n->kind == CUA_OP_ZIP ? n->ndeps
                : n->ndeps > 4        ? n->ndeps - 4
                                      : 0;
  for (size_t i = from; i < n->ndeps; i++)
    if (n->deps[i].node == p) {
      n->deps[i].flags |= flags;
      return 0;
    }
  if (cua__edges_grow(n->rt, &n->deps, &n->capdeps, n->ndeps + 1, n->deps_inl))
    return CUA_ERR_NOMEM;
  n->deps[n->ndeps].node = p;
  n->deps[n->ndeps].flags = flags;
  n->ndeps++;
  atomic_fetch_add(&p->refs, 1);
  return 0;
}

/* Registers @p n with its producer @p p, in room cua__reserve_dependents()
 * made: wiring cannot fail half-way. */
static void add_dependent(cua__node *p, cua__node *n, unsigned flags) {
  cua__dependent *d = p->dependents;
  d[p->ndependents].node = n;
  d[p->ndependents].flags = flags;
  d[p->ndependents].resolved = 0;
  p->ndependents++;
  atomic_fetch_add(&n->refs, 1);
}

const char *cua__node_name(const cua__node *n) {
  if (n->op != NULL && n->op->hints.name)
    return n->op->hints.name;
  if (n->op == NULL && n->name != NULL)
    return n->name;
  return cua_op_kind_name(n->kind);
}

/* @p m consumes the data of @p p, which failed: it fails too, saying why.
 * When @p p itself failed for a dependency, its message's last hop (the
 * op that failed first, and why) follows @p p's name, not the whole
 * chain: a buffer read, failed and written again by each of a thousand
 * submissions would otherwise nest a thousand hops, cut at CUA__ERRLEN
 * before the cause. */
static void dependency_failed(cua__node *m, const cua__node *p) {
  static const char hop[] = "depends on failed op '";
  char buf[CUA__ERRLEN];
  const char *why = p->msg ? p->msg : "";
  if (p->code == CUA_ERR_DEPENDENCY)
    for (const char *h = strstr(why, hop); h != NULL;
         h = strstr(h + sizeof hop - 1, hop))
      why = h;
  snprintf(buf, sizeof buf, "%s%s' (%s): %s", hop, cua__node_name(p),
           cua_err_name(p->code), why);
  m->code = CUA_ERR_DEPENDENCY;
  m->msg = cua__strdup(buf);
}

/* A free that fails (its dependency failed, or its placement) frees
 * nothing: its buffer, marked freed when it was submitted, is usable
 * again, and freed when its handle goes. (A free that ran took the
 * memory: root->ptr is NULL, and the mark stays.) */
static void free_failed(cua__node *n) {
  if (n->op == NULL || n->op->kind != CUA_OP_FREE || n->op->nacc < 1)
    return;
  cua_buffer *root = cua__buffer_root(n->op->acc[0].buf);
  if (__atomic_load_n(&root->ptr, __ATOMIC_ACQUIRE) != NULL || root->lazy)
    root->freed = 0;
}

/* Fails @p n and, through data edges, everything that consumes it. */
void cua__fail_node(cua_runtime *rt, cua__node *n, int code, const char *msg) {
  if (n->state == CUA__NODE_DONE || n->code != 0)
    return;
  n->code = code;
  atomic_store(&n->doomed, 1);
  n->msg = cua__strdup(msg ? msg : cua_strerror(code));
  free_failed(n);
  /* An explicit stack: a failure at the head of a long chain must not
   * recurse once per op. */
  size_t cap = 16, len = 0;
  cua__node **stack = cua__malloc(cap * sizeof *stack);
  if (stack == NULL)
    return;
  stack[len++] = n;
  while (len > 0) {
    cua__node *p = stack[--len];
    cua__dependent *d = p->dependents;
    for (size_t i = 0; i < p->ndependents; i++) {
      cua__node *m = d[i].node;
      if (!(d[i].flags & CUA__DEP_DATA) || m->state == CUA__NODE_DONE ||
          m->code != 0)
        continue;
      m->code = CUA_ERR_DEPENDENCY;
      atomic_store(&m->doomed, 1); /* (before its message, as always) */
      dependency_failed(m, p);
      free_failed(m);
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

/* Counts what each node still waits for and registers it with its
 * producers, in the room cua__reserve_hazards() made (so nothing here
 * allocates or fails); nodes with nothing to wait for go to the round's
 * queues. */
void cua__wire(cua_runtime *rt, cua__build *b, cua__round *r) {
  cua__wire_range(rt, b, 0, b->n, r);
}

void cua__wire_range(cua_runtime *rt, cua__build *b, size_t from, size_t to,
                     cua__round *r) {
  for (size_t i = from; i < to; i++) {
    cua__node *n = b->order[i];
    for (size_t k = 0; k < n->ndeps; k++) {
      cua__node *p = n->deps[k].node;
      unsigned fl = n->deps[k].flags;
      if (n->cls != CUA__CLASS_DEVICE || p->cls != CUA__CLASS_DEVICE)
        fl |= CUA__DEP_COMPLETE;
      n->deps[k].flags = fl;
      if (p->code != 0 && (fl & CUA__DEP_DATA) && n->code == 0) {
        dependency_failed(n, p);
        free_failed(n);
      }
      if (p->state == CUA__NODE_DONE)
        continue;
      if (!(fl & CUA__DEP_COMPLETE) && p->state == CUA__NODE_ENQUEUED)
        continue;
      /* Room was made by cua__reserve_hazards(), which counted every
       * edge: the build's, and those cua__add_hazards() added since. */
      if (p->ndependents == p->capdependents) {
        /* Cannot happen: a miscount would overflow the array. */
        cua__fail_node(rt, n, CUA_ERR_INTERNAL,
                       "internal error: dependents not reserved");
        continue;
      }
      add_dependent(p, n, fl);
      n->unresolved++;
    }
    /* (only its own edges change its count, and making it ready only
     * queues it: nothing later in this loop reads what that changes) */
    if (n->unresolved == 0)
      cua__ready(rt, n, r);
  }
}
