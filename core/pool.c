/*
 * core/pool.c: per-runtime caches of the fixed-size objects the hot path
 * makes and frees for every op and submission (ops, nodes, submissions,
 * recorded points), so that a runtime in steady state does not call the
 * allocator.
 *
 * A pool is two stacks of free blocks. Any thread gives a block back by
 * pushing it on `returned`, lock-free (a compare-and-swap). A thread that
 * takes one pops from `taken` under the pool's own mutex (a leaf lock,
 * never held while anything else is called) and, when `taken` is empty,
 * moves the whole of `returned` there with one exchange. Only the holder
 * of the mutex pops, so a popped block cannot come back in the middle of a
 * pop (no ABA). A pool whose blocks are only ever taken under another lock
 * (`outer`: nodes, submissions and points are made under rt->lock) skips
 * its own mutex: that lock serialises the pops.
 *
 * New blocks are carved from slabs of 64, so a burst of new objects (a
 * large DAG built at once) costs the allocator one call per 64, until the
 * slabs hold `max` blocks; blocks past that come from the allocator one by
 * one and go back to it when the pool already keeps `max`. So a pool keeps
 * at most about `max` blocks, and its slabs until the runtime goes.
 *
 * Blocks are not zeroed: the caller initialises what it takes, and a block
 * says whether it is fresh from the allocator (for state kept across
 * reuses, as a submission's mutex). A pool lives in its runtime struct,
 * which stays until the last object holding it is freed (see
 * cua__runtime_hold()); cua__pool_drain() then frees what is kept.
 *
 * A pool with `prefetch` set (nodes) fetches, at each get, the lines of the
 * block two gets on, for writing (prefetch_block()).
 *
 * With AddressSanitizer, pools keep nothing: every block comes from and
 * goes back to the allocator, so a use after free is still caught.
 */
#include "config.h"
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define POOL_KEEPS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_KEEPS 0
#endif
#endif
#ifndef POOL_KEEPS
#define POOL_KEEPS 1
#endif

/* Every block has a header of two words before it: where it came from,
 * and, while it is free, the next free block. A free block's own bytes are
 * left as they were, for state kept across reuses. */
typedef struct block block;

#define HDR 16 /* keeps blocks 16-byte aligned, as malloc's */
#define FROM_HEAP ((uintptr_t)1)
#define FROM_SLAB ((uintptr_t)2)
#define SLAB_BLOCKS 64

static uintptr_t *origin(void *obj) {
  return (uintptr_t *)((char *)obj - HDR);
}

static block **link_of(void *obj) {
  return (block **)((char *)obj - HDR + sizeof(uintptr_t));
}

int cua__pool_keeps(void) {
  return POOL_KEEPS;
}

void cua__pool_init(cua__pool *p, size_t size, size_t max, void (*fini)(void *),
                    int outer) {
  atomic_init(&p->returned, NULL);
  pthread_mutex_init(&p->mu, NULL);
  p->taken = NULL;
  atomic_init(&p->count, 0);
  size = size ? size : 1;
  p->size = (size + HDR - 1) / HDR * HDR;
  p->max = POOL_KEEPS ? max : 0;
  p->fini = fini;
  p->outer = outer;
  p->prefetch = 0;
  p->slabs = NULL;
  p->carve = p->carve_end = NULL;
  p->slab_blocks = 0;
}

/* A block never used, under p->mu: carved from the current slab while
 * the pool's slabs hold fewer than max blocks, else from the allocator. */
static void *fresh_block(cua__pool *p) {
  size_t stride = HDR + p->size;
  if (p->carve == p->carve_end && p->slab_blocks + SLAB_BLOCKS <= p->max) {
    /* The slab's first HDR + sizeof(void *) bytes link the slabs. */
    char *slab = malloc(HDR + SLAB_BLOCKS * stride);
    if (slab != NULL) {
      *(void **)slab = p->slabs;
      p->slabs = slab;
      p->carve = slab + HDR;
      p->carve_end = p->carve + SLAB_BLOCKS * stride;
      p->slab_blocks += SLAB_BLOCKS;
    }
  }
  char *b;
  if (p->carve != p->carve_end) {
    b = p->carve;
    p->carve += stride;
    *(uintptr_t *)b = FROM_SLAB;
  } else {
    b = malloc(stride);
    if (b == NULL)
      return NULL;
    *(uintptr_t *)b = FROM_HEAP;
  }
  return b + HDR;
}

/* The lines of a block a later get will take (@p b, or NULL), header
 * included, fetched for writing while the caller initialises this one:
 * a large DAG's build takes thousands of nodes in a row, each last
 * written by the thread that freed it, often on another core, and each of
 * their lines missed in turn. A hint only. */
static inline void prefetch_block(const cua__pool *p, const block *b) {
  if (b == NULL)
    return;
  uintptr_t c = (uintptr_t)b - HDR;
  uintptr_t end = c + (p->size + HDR < 1024 ? p->size + HDR : 1024);
  for (c &= ~(uintptr_t)(CUA__CACHE_LINE - 1); c < end; c += CUA__CACHE_LINE)
    __builtin_prefetch((const void *)c, 1);
}

void *cua__pool_get(cua__pool *p, int *fresh) {
  /* One allocation for fault injection, whether the pool has a block or
   * not, so that a sweep reaches every caller's failure path. */
  if (cua__fault(CUA__FAULT_ALLOC))
    return NULL;
  if (p->max == 0) {
    *fresh = 1;
    return malloc(p->size);
  }
  if (!p->outer)
    pthread_mutex_lock(&p->mu);
  block *b = p->taken;
  if (b == NULL)
    b = atomic_exchange_explicit(&p->returned, NULL, memory_order_acquire);
  if (b != NULL) {
    p->taken = *link_of(b);
    atomic_fetch_sub_explicit(&p->count, 1, memory_order_relaxed);
    *fresh = 0;
    /* Two blocks on: the next one's lines were fetched at the last get,
     * its header (the link read here) with them. */
    if (p->prefetch && p->taken != NULL)
      prefetch_block(p, *link_of(p->taken));
  } else {
    b = fresh_block(p);
    *fresh = 1;
  }
  if (!p->outer)
    pthread_mutex_unlock(&p->mu);
  return b;
}

void cua__pool_put(cua__pool *p, void *obj) {
  if (obj == NULL)
    return;
  if (p->max == 0) {
    if (p->fini != NULL)
      p->fini(obj);
    free(obj);
    return;
  }
  /* Slab blocks are always kept (their slab goes at drain); blocks of
   * the allocator while fewer than max are. */
  if (atomic_fetch_add_explicit(&p->count, 1, memory_order_relaxed) >= p->max &&
      *origin(obj) == FROM_HEAP) {
    atomic_fetch_sub_explicit(&p->count, 1, memory_order_relaxed);
    if (p->fini != NULL)
      p->fini(obj);
    free(origin(obj));
    return;
  }
  void *head = atomic_load_explicit(&p->returned, memory_order_relaxed);
  do
    *link_of(obj) = head;
  while (!atomic_compare_exchange_weak_explicit(
      &p->returned, &head, obj, memory_order_release, memory_order_relaxed));
}

/* Arrays that outgrow an object's inline room (a node's edges, an op's
 * inputs): up to @p nblock entries, one block of the pool (whose blocks
 * hold exactly that many); beyond, from the allocator. A pool block is
 * the one array whose capacity is exactly @p nblock (the allocator's start
 * at twice that). @p arr points at the array pointer, @p inl is the
 * object's inline array, @p size an entry's size. */
int cua__pool_array_grow_slow(cua__pool *p, size_t nblock, void *arr,
                              size_t *cap, size_t need, size_t size,
                              void *inl) {
  void **a = arr;
  if (need <= *cap)
    return 0;
  void *q;
  size_t n;
  if (need <= nblock) {
    int fresh;
    q = cua__pool_get(p, &fresh);
    n = nblock;
  } else {
    n = 2 * nblock;
    while (n < need)
      n *= 2;
    if (*a != inl && *cap != nblock) {
      q = cua__realloc(*a, n * size);
      if (q == NULL)
        return CUA_ERR_NOMEM;
      *a = q;
      *cap = n;
      return 0;
    }
    q = cua__malloc(n * size);
  }
  if (q == NULL)
    return CUA_ERR_NOMEM;
  memcpy(q, *a, *cap * size);
  cua__pool_array_free(p, nblock, *a, *cap, inl);
  *a = q;
  *cap = n;
  return 0;
}

void cua__pool_array_free_slow(cua__pool *p, size_t nblock, void *a,
                               size_t cap) {
  if (cap == nblock)
    cua__pool_put(p, a);
  else
    free(a);
}

/* Frees every block kept and every slab; no other thread may use the pool
 * any more, and every block taken from it must have been given back. */
void cua__pool_drain(cua__pool *p) {
  block *lists[2] = {p->taken, atomic_exchange(&p->returned, NULL)};
  p->taken = NULL;
  for (int i = 0; i < 2; i++)
    while (lists[i] != NULL) {
      block *next = *link_of(lists[i]);
      if (p->fini != NULL)
        p->fini(lists[i]);
      if (*origin(lists[i]) == FROM_HEAP)
        free(origin(lists[i]));
      lists[i] = next;
    }
  while (p->slabs != NULL) {
    void *next = *(void **)p->slabs;
    free(p->slabs);
    p->slabs = next;
  }
  atomic_store(&p->count, 0);
  pthread_mutex_destroy(&p->mu);
}
