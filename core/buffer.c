/*
 * core/buffer.c: buffers, tiles, sharing, and their lifetimes.
 *
 * A buffer's memory is freed when its last reference goes. References are
 * held by the caller's handle, by ops that name it and by tiles; submitted
 * ops hold their op, so memory never goes while work in flight uses it.
 *
 * A tile is a handle onto part of a partitioned buffer. Its ordering state
 * lives in the parent (tstates), so that unpartition can merge every tile's
 * last writers and readers even when the tile handles are already gone.
 *
 * Locking: refs are atomic; the runtime's registry of live buffers
 * (reg_prev/reg_next) is guarded by rt->reg_lock; sharing, partitions and
 * ordering state by rt->lock. When the runtime closes, cua__buffers_detach()
 * frees the memory of every buffer still held and clears its rt: functions
 * on such a buffer fail with CUA_ERR_CANCELED (see live()). A tile's rt is
 * its parent's, read through cua__buffer_root().
 */
#include "config.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int cua_buffer_create(cua_buffer **out, cua_runtime *rt, int device,
                      size_t bytes, unsigned flags) {
  if (out == NULL || rt == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_buffer_create: NULL %s",
                     out == NULL ? "buffer pointer" : "runtime");
  *out = NULL;
  if (device < 0 || device >= rt->ndev)
    return cua__fail(rt, CUA_ERR_BAD_DEVICE,
                     "cua_buffer_create: no device %d (the runtime has %d)",
                     device, rt->ndev);
  if (bytes == 0)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_buffer_create: 0 bytes");
  if (flags & ~CUA_BUFFER_LAZY)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_buffer_create: unknown flags 0x%x",
                     flags);
  cua_buffer *b = cua__calloc(1, sizeof *b);
  if (b == NULL)
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  atomic_init(&b->refs, 1);
  b->rt = rt;
  b->device = device;
  b->bytes = bytes;
  b->lazy = (flags & CUA_BUFFER_LAZY) != 0;
  b->planned = !b->lazy;
  if (!b->lazy) {
    cua_backend_err err = {{0}};
    int rc = rt->be->mem_alloc(rt->bst, device, NULL, bytes, &b->ptr, &err);
    if (rc) {
      free(b);
      return cua__fail(rt, rc, "cua_buffer_create: %zu bytes on device %d: %s",
                       bytes, device, err.msg[0] ? err.msg : cua_strerror(rc));
    }
  }
  pthread_mutex_lock(&rt->reg_lock);
  b->reg_next = rt->buffers;
  if (rt->buffers)
    rt->buffers->reg_prev = b;
  rt->buffers = b;
  pthread_mutex_unlock(&rt->reg_lock);
  *out = b;
  return 0;
}

cua_buffer *cua_buffer_retain(cua_buffer *b) {
  if (b != NULL)
    atomic_fetch_add(&b->refs, 1);
  return b;
}

size_t cua_buffer_size(const cua_buffer *b) {
  if (b == NULL) {
    cua__fail(NULL, CUA_ERR_INVAL, "cua_buffer_size: NULL buffer");
    return 0;
  }
  return b->bytes;
}

int cua_buffer_device(const cua_buffer *b) {
  if (b == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_buffer_device: NULL buffer");
  return b->device;
}

cua_buffer *cua__buffer_root(cua_buffer *b) {
  return b->parent ? b->parent : b;
}

void *cua__buffer_addr(const cua_buffer *b) {
  const cua_buffer *r = b->parent ? b->parent : b;
  /* The executor allocates lazy buffers with no core lock held. */
  void *p = __atomic_load_n(&r->ptr, __ATOMIC_ACQUIRE);
  return p ? (char *)p + b->offset : NULL;
}

void *cua_buffer_ptr(const cua_buffer *b) {
  if (b == NULL) {
    cua__fail(NULL, CUA_ERR_INVAL, "cua_buffer_ptr: NULL buffer");
    return NULL;
  }
  return cua__buffer_addr(b);
}

cua__bstate *cua__buffer_state(cua_buffer *b) {
  return b->parent ? &b->parent->tstates[b->tile_index] : &b->st;
}

/* Whether an op may touch @p b with @p mode now; the message says why not. */
int cua__buffer_check(cua_buffer *b, cua_access_mode mode, char *msg,
                      size_t len) {
  cua_buffer *r = cua__buffer_root(b);
  if (r->freed) {
    cua__put_err(msg, len, "the buffer was freed by an earlier cua_op_free()");
    return CUA_ERR_FREED;
  }
  if (b->parent != NULL &&
      (!b->parent->partitioned || b->gen != b->parent->partition_gen)) {
    cua__put_err(msg, len,
                 "the tile is stale: its buffer was unpartitioned since");
    return CUA_ERR_STALE;
  }
  if (b->parent == NULL && b->partitioned) {
    cua__put_err(msg, len,
                 "the buffer is partitioned into %zu tiles: use the tiles, or "
                 "cua_buffer_unpartition() first",
                 b->ntiles);
    return CUA_ERR_PARTITIONED;
  }
  if ((mode & CUA_WRITE) && r->shared) {
    cua__put_err(msg, len,
                 "write access to a shared (read-only) buffer: "
                 "cua_buffer_unshare() it first");
    return CUA_ERR_READONLY;
  }
  return 0;
}

/* The runtime of @p b (a tile: its parent's), or a failure for a NULL
 * buffer or one whose runtime is closed, naming @p what. */
static int live(cua_buffer *b, const char *what, cua_runtime **rt) {
  *rt = NULL;
  if (b == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "%s: NULL buffer", what);
  *rt = cua__buffer_root(b)->rt;
  if (*rt == NULL)
    return cua__fail(NULL, CUA_ERR_CANCELED,
                     "%s: the buffer's runtime is closed "
                     "(cua_runtime_destroy() was called)",
                     what);
  return 0;
}

int cua_buffer_share(cua_buffer *b) {
  cua_runtime *rt;
  int rc = live(b, "cua_buffer_share", &rt);
  if (rc)
    return rc;
  if (b->parent != NULL)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_buffer_share: share the whole buffer, not a tile");
  pthread_mutex_lock(&rt->lock);
  b->shared = 1;
  pthread_mutex_unlock(&rt->lock);
  return 0;
}

int cua_buffer_unshare(cua_buffer *b) {
  cua_runtime *rt;
  int rc = live(b, "cua_buffer_unshare", &rt);
  if (rc)
    return rc;
  if (b->parent != NULL)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_buffer_unshare: unshare the whole buffer, not a "
                     "tile");
  pthread_mutex_lock(&rt->lock);
  b->shared = 0;
  pthread_mutex_unlock(&rt->lock);
  return 0;
}

int cua__bstate_add(cua__node ***v, size_t *n, size_t *cap, cua__node *node) {
  for (size_t i = 0; i < *n; i++)
    if ((*v)[i] == node)
      return 0;
  if (cua__grow(v, cap, *n + 1, sizeof **v))
    return CUA_ERR_NOMEM;
  (*v)[(*n)++] = node;
  atomic_fetch_add(&node->refs, 1);
  atomic_fetch_add_explicit(&node->nstates, 1, memory_order_relaxed);
  return 0;
}

/* Drops a buffer state's reference to @p node. */
void cua__bstate_drop(cua__node *node) {
  atomic_fetch_sub_explicit(&node->nstates, 1, memory_order_relaxed);
  cua__node_release(node);
}

static int bstate_copy(cua__bstate *dst, const cua__bstate *src) {
  for (size_t i = 0; i < src->nwriters; i++)
    if (cua__bstate_add(&dst->writers, &dst->nwriters, &dst->capwriters,
                        src->writers[i]))
      return CUA_ERR_NOMEM;
  for (size_t i = 0; i < src->nreaders; i++)
    if (cua__bstate_add(&dst->readers, &dst->nreaders, &dst->capreaders,
                        src->readers[i]))
      return CUA_ERR_NOMEM;
  return 0;
}

int cua_buffer_partition(cua_buffer *b, size_t n, cua_buffer **tiles) {
  cua_runtime *rt;
  int rc = live(b, "cua_buffer_partition", &rt);
  if (rc)
    return rc;
  if (tiles == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_buffer_partition: NULL tiles");
  if (n == 0)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_buffer_partition: 0 tiles");
  if (b->parent != NULL)
    return cua__fail(rt, CUA_ERR_NOTSUP,
                     "cua_buffer_partition: a tile cannot be partitioned");
  if (n > b->bytes)
    return cua__fail(rt, CUA_ERR_SIZE,
                     "cua_buffer_partition: %zu tiles of a %zu-byte buffer", n,
                     b->bytes);
  pthread_mutex_lock(&rt->lock);
  if (b->partitioned)
    rc = cua__fail(rt, CUA_ERR_PARTITIONED,
                   "cua_buffer_partition: the buffer is already partitioned");
  else if (b->freed)
    rc = cua__fail(rt, CUA_ERR_FREED, "cua_buffer_partition: buffer freed");
  cua__bstate *st = NULL;
  if (rc == 0 && (st = cua__calloc(n, sizeof *st)) == NULL)
    rc = cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  for (size_t i = 0; i < n && rc == 0; i++)
    if (bstate_copy(&st[i], &b->st))
      rc = cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  size_t made = 0;
  /* Tiles are 4-byte aligned where possible, so float kernels work on
   * them; the last takes the remainder. */
  size_t each = b->bytes / n;
  if (each >= 4)
    each -= each % 4;
  for (; made < n && rc == 0; made++) {
    cua_buffer *t = cua__calloc(1, sizeof *t);
    if (t == NULL) {
      rc = cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
      break;
    }
    atomic_init(&t->refs, 1);
    t->rt = rt;
    t->device = b->device;
    t->offset = made * each;
    t->bytes = made + 1 == n ? b->bytes - t->offset : each;
    t->parent = cua_buffer_retain(b);
    t->tile_index = made;
    t->gen = b->partition_gen + 1;
    tiles[made] = t;
  }
  if (rc != 0) {
    for (size_t i = 0; i < made; i++) {
      cua__buffer_release(tiles[i]->parent);
      free(tiles[i]);
      tiles[i] = NULL;
    }
    if (st != NULL)
      for (size_t i = 0; i < n; i++)
        cua__bstate_clear(&st[i]);
    free(st);
    pthread_mutex_unlock(&rt->lock);
    return rc;
  }
  b->tstates = st;
  b->ntiles = n;
  b->partitioned = 1;
  b->partition_gen++;
  pthread_mutex_unlock(&rt->lock);
  return 0;
}

int cua_buffer_unpartition(cua_buffer *b) {
  cua_runtime *rt;
  int rc = live(b, "cua_buffer_unpartition", &rt);
  if (rc)
    return rc;
  pthread_mutex_lock(&rt->lock);
  if (!b->partitioned) {
    pthread_mutex_unlock(&rt->lock);
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_buffer_unpartition: the buffer is not partitioned");
  }
  /* Later ops on the whole buffer are ordered after everything any tile
   * saw: the union of the tiles' writers and readers. */
  cua__bstate merged = {0};
  for (size_t i = 0; i < b->ntiles && rc == 0; i++)
    rc = bstate_copy(&merged, &b->tstates[i]);
  if (rc) {
    cua__bstate_clear(&merged);
    pthread_mutex_unlock(&rt->lock);
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  }
  for (size_t i = 0; i < b->ntiles; i++)
    cua__bstate_clear(&b->tstates[i]);
  free(b->tstates);
  b->tstates = NULL;
  b->ntiles = 0;
  cua__bstate_clear(&b->st);
  b->st = merged;
  b->partitioned = 0;
  pthread_mutex_unlock(&rt->lock);
  return 0;
}

void cua__bstate_clear(cua__bstate *st) {
  for (size_t i = 0; i < st->nwriters; i++)
    cua__bstate_drop(st->writers[i]);
  for (size_t i = 0; i < st->nreaders; i++)
    cua__bstate_drop(st->readers[i]);
  free(st->writers);
  free(st->readers);
  memset(st, 0, sizeof *st);
}

/* The application lets go of its reference: the graphs cached for DAGs
 * that use the buffer go first (graphcache.c), then the reference. */
void cua_buffer_destroy(cua_buffer *b) {
  if (b == NULL)
    return;
  /* A tile's rt is not cleared when the runtime closes; its root's is. */
  cua_runtime *rt = cua__buffer_root(b)->rt;
  if (rt != NULL && rt->cfg->graphs != CUA__GRAPHS_OFF)
    cua__gcache_buffer_gone(rt, b);
  cua__buffer_release(b);
}

void cua__buffer_release(cua_buffer *b) {
  if (b == NULL || atomic_fetch_sub(&b->refs, 1) != 1)
    return;
  cua_runtime *rt = b->rt;
  if (b->parent != NULL) {
    cua__buffer_release(b->parent);
    free(b);
    return;
  }
  if (rt != NULL) {
    pthread_mutex_lock(&rt->reg_lock);
    if (b->reg_prev)
      b->reg_prev->reg_next = b->reg_next;
    else
      rt->buffers = b->reg_next;
    if (b->reg_next)
      b->reg_next->reg_prev = b->reg_prev;
    pthread_mutex_unlock(&rt->reg_lock);
    /* Every op that used the memory has completed (it held a reference),
     * so freeing it now cannot race with device work. */
    if (b->ptr != NULL && !b->freed)
      rt->be->mem_free(rt->bst, b->device, NULL, b->ptr);
  }
  cua__bstate_clear(&b->st);
  for (size_t i = 0; i < b->ntiles; i++)
    cua__bstate_clear(&b->tstates[i]);
  free(b->tstates);
  free(b);
}

/* The runtime is closing: free the memory of buffers the caller still
 * holds and leave them as inert handles that can only be destroyed. */
void cua__buffers_detach(cua_runtime *rt) {
  pthread_mutex_lock(&rt->reg_lock);
  for (cua_buffer *b = rt->buffers; b != NULL; b = b->reg_next) {
    if (b->ptr != NULL && !b->freed)
      rt->be->mem_free(rt->bst, b->device, NULL, b->ptr);
    b->ptr = NULL;
    b->rt = NULL;
    cua__bstate_clear(&b->st);
    for (size_t i = 0; i < b->ntiles; i++)
      cua__bstate_clear(&b->tstates[i]);
  }
  rt->buffers = NULL;
  pthread_mutex_unlock(&rt->reg_lock);
}
