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
 * pop (no ABA). `count` bounds what a pool keeps: past `max` blocks, a
 * block goes back to the allocator.
 *
 * Blocks are not zeroed: the caller initialises what it takes, and a block
 * says whether it is fresh from the allocator (for state kept across
 * reuses, as a submission's mutex). A pool lives in its runtime struct,
 * which stays until the last object holding it is freed (see
 * cua__runtime_hold()); cua__pool_drain() then frees what is kept.
 *
 * With AddressSanitizer, pools keep nothing: every block comes from and
 * goes back to the allocator, so a use after free is still caught.
 */
#include "config.h"
#include "internal.h"

#include <stdlib.h>

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

typedef struct block {
  struct block *next;
} block;

void cua__pool_init(cua__pool *p, size_t size, size_t max,
                    void (*fini)(void *)) {
  atomic_init(&p->returned, NULL);
  pthread_mutex_init(&p->mu, NULL);
  p->taken = NULL;
  atomic_init(&p->count, 0);
  p->size = size < sizeof(block) ? sizeof(block) : size;
  p->max = POOL_KEEPS ? max : 0;
  p->fini = fini;
}

void *cua__pool_get(cua__pool *p, int *fresh) {
  /* One allocation for fault injection, whether the pool has a block or
   * not, so that a sweep reaches every caller's failure path. */
  if (cua__fault(CUA__FAULT_ALLOC))
    return NULL;
  block *b = NULL;
  if (p->max > 0 && atomic_load_explicit(&p->count, memory_order_relaxed)) {
    pthread_mutex_lock(&p->mu);
    b = p->taken;
    if (b == NULL)
      b = atomic_exchange_explicit(&p->returned, NULL, memory_order_acquire);
    if (b != NULL) {
      p->taken = b->next;
      atomic_fetch_sub_explicit(&p->count, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&p->mu);
  }
  *fresh = b == NULL;
  if (b == NULL)
    b = malloc(p->size);
  return b;
}

void cua__pool_put(cua__pool *p, void *obj) {
  if (obj == NULL)
    return;
  if (atomic_fetch_add_explicit(&p->count, 1, memory_order_relaxed) >= p->max) {
    atomic_fetch_sub_explicit(&p->count, 1, memory_order_relaxed);
    if (p->fini != NULL)
      p->fini(obj);
    free(obj);
    return;
  }
  block *b = obj;
  block *head = atomic_load_explicit(&p->returned, memory_order_relaxed);
  do
    b->next = head;
  while (!atomic_compare_exchange_weak_explicit(
      &p->returned, &head, b, memory_order_release, memory_order_relaxed));
}

/* Frees every block kept; no other thread may use the pool any more. */
void cua__pool_drain(cua__pool *p) {
  block *lists[2] = {p->taken, atomic_exchange(&p->returned, NULL)};
  p->taken = NULL;
  for (int i = 0; i < 2; i++)
    while (lists[i] != NULL) {
      block *next = lists[i]->next;
      if (p->fini != NULL)
        p->fini(lists[i]);
      free(lists[i]);
      lists[i] = next;
    }
  atomic_store(&p->count, 0);
  pthread_mutex_destroy(&p->mu);
}
