/*
 * plugins/host/host.c: the host backend, CPU worker threads that behave like
 * CUDA streams.
 *
 * Every stream is one worker thread draining an in-order FIFO queue of items
 * (ops, marks, event records, event waits, stream-ordered frees), so the
 * core, the policies and the tests see the same semantics as on a GPU: work
 * runs asynchronously, in order within a stream, concurrently across
 * streams, and cross-stream order exists only through events. All "device"
 * memory is host memory, so every copy kind is a memcpy and every stream may
 * access every device's memory.
 *
 * Memory: queue items live in blocks of ITEMS_PER_BLOCK, and a stream keeps
 * the blocks its worker has drained (up to SPARE_BLOCKS_MAX, beyond which
 * they are freed); events are carved from chunks of EVENTS_PER_CHUNK, kept
 * per backend instance, and a chunk whose events are all free is freed
 * unless it is the only such chunk. A stream in steady state therefore
 * allocates nothing per op, a burst of N items costs N / ITEMS_PER_BLOCK
 * allocations, and what a burst took is given back once it has drained.
 * Out of memory, nothing is lost: a stream function's error record is
 * taken when it is launched (reused, up to ERR_FREE_MAX per stream), so a
 * launch fails rather than a failure going unreported; a stream-ordered
 * free with no memory for its queue item waits in the allocation's own
 * header for the items queued before it (the stream's deferred list;
 * its bytes count against memory_mb until then, as a queued free's do).
 * Every allocation and worker thread goes through the core's services
 * (cua_backend_host alloc, free, thread_create, ABI 1.2) when the core has
 * them, so that the core's fault injection reaches this backend too.
 *
 * Locks, and the only order in which they nest: a stream's queue lock, then
 * an event's lock (event_record() bumps the record generation while it
 * appends the record item, so that the generation a later wait captures
 * always has its record item enqueued). The state lock (stream list, event
 * chunks, the count of its events' items on other instances' streams), a
 * device's memory lock, a stream's error lock and the wait lock are
 * leaves. An instance is destroyed only once those items have run: stream
 * interop queues them on another runtime's streams, and they read the
 * event.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np() */
#endif

#include <cuasync/backend.h>
#include <cuasync/errors.h>

#include "../hostmem.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Under valgrind, which runs one thread at a time, a computing spin would
 * stall every other thread: spins sleep there (see spin_for()). */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define HOST_UNDER_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#endif
#endif
#ifndef HOST_UNDER_VALGRIND
#define HOST_UNDER_VALGRIND() 0
#endif

#ifdef PACKAGE_VERSION
#define HOST_VERSION PACKAGE_VERSION
#else
#define HOST_VERSION "0.1.0"
#endif

/* Allocations are 64-byte aligned, like the cache lines the float kernels
 * stream through, and carry a header of that size in front. */
#define HOST_ALIGN 64u
#define MEM_MAGIC 0x63756173686d656dull /* "cuashmem" */

/* The garbage that fresh device memory is filled with, so that tests catch
 * reads of memory no op has written (cudaMalloc does not zero either). */
#define MEM_GARBAGE 0xA5

/* Indices into the parameter schema (and the values create() receives). */
enum { PARAM_DEVICES, PARAM_MEMORY_MB, PARAM_COUNT };

typedef struct host_state host_state;

/* One virtual device: its ordinal among the `devices` virtual ones and the
 * accounting of its memory against `memory_mb`. */
typedef struct host_device {
  int ordinal;    /* backend ordinal: 0 .. devices - 1 */
  int nstreams;   /* streams created so far, for thread names; under st->lock */
  uint64_t limit; /* bytes, 0 for unlimited */
  pthread_mutex_t mem_lock;
  uint64_t used;             /* bytes held; under mem_lock */
  struct mem_header *allocs; /* live allocations; under mem_lock */
} host_device;

/* The header in front of every device allocation. It records what a free
 * must give back to the accounting, and links the allocation into its
 * device's list so that destroy() can release what is left, as destroying a
 * CUDA context does. */
typedef struct mem_header {
  uint64_t magic;
  size_t bytes; /* bytes counted against the limit: the rounded request */
  host_device *dev;
  struct mem_header *prev, *next;
  /* A stream-ordered free that found no memory for its queue item waits
   * in its stream's list, until the worker has run the first `after`
   * items ever queued (see host_mem_free()). */
  struct mem_header *defer_next;
  uint64_t defer_after;
} mem_header;

_Static_assert(sizeof(mem_header) <= HOST_ALIGN,
               "the allocation header must fit in one alignment unit");

/* The kinds of queue item. */
typedef enum item_kind {
  ITEM_OP,
  ITEM_MARK,
  ITEM_RECORD,
  ITEM_WAIT,
  ITEM_FREE,
} item_kind;

/* One entry of a stream's queue, in a block of them (item_block). */
typedef struct item {
  item_kind kind;
  /* ITEM_OP of a stream function (the one kind that can fail): its error
   * record, taken when it is queued, so that a failure is never lost for
   * want of memory. */
  struct stream_error *err;
  union {
    cua_backend_op op; /* ITEM_OP: a copy, the caller's struct is transient */
    uint64_t mark;     /* ITEM_MARK: the progress value */
    struct {
      cua_backend_event *ev; /* holds a reference until executed */
      uint64_t gen;          /* the record generation made or awaited */
      int foreign;           /* ev belongs to another instance (stream interop):
                                counted in its st->foreign until executed */
    } event;                 /* ITEM_RECORD, ITEM_WAIT */
    void *ptr;               /* ITEM_FREE */
  } u;
} item;

/* Items per block: a block is about 5 KiB, and a burst of N items takes
 * N / ITEMS_PER_BLOCK allocations. */
#define ITEMS_PER_BLOCK 32
/* Drained blocks a stream keeps for later bursts; more are freed. */
#define SPARE_BLOCKS_MAX 4

/* A stream's queue is a list of blocks, filled in order: the launching
 * thread writes at the tail, the worker reads from the head. */
typedef struct item_block {
  struct item_block *next;
  item items[ITEMS_PER_BLOCK];
} item_block;

/* An asynchronous op failure waiting for poll_error(). */
typedef struct stream_error {
  struct stream_error *next;
  uint64_t seq;
  int code;
  char msg[sizeof(((cua_backend_err *)0)->msg)];
} stream_error;

struct cua_backend_stream {
  host_state *st;
  host_device *dev;
  cua_backend_stream *prev, *next; /* the state's list; under st->lock */
  pthread_t thread;
  char name[16]; /* the thread's name: Linux allows 15 characters */

  pthread_mutex_t lock; /* the queue, spare, sleeping, stopping */
  pthread_cond_t cond;  /* signalled when the sleeping worker has work */
  /* The queue: the items from head_blk->items[head_idx] to the one before
   * tail_blk->items[tail_idx], through the blocks linked from head_blk.
   * Never without a block: empty is head == tail. The positions move only
   * under the lock; the items between them that the worker has taken as a
   * batch are read by it without the lock, and the launching threads only
   * write past the tail. */
  item_block *head_blk, *tail_blk;
  unsigned head_idx, tail_idx;
  item_block *spare; /* drained blocks, nspare of them */
  unsigned nspare;
  int sleeping;
  int running; /* the worker is executing an item it popped */
  int stopping;
  uint64_t nqueued;     /* items ever committed */
  uint64_t nexecuted;   /* items ever run (set after each batch) */
  mem_header *deferred; /* frees waiting for nexecuted (see mem_free) */
  atomic_int ndeferred; /* entries in deferred: the worker reads it
                           without the lock before each mark */

  _Atomic uint64_t progress; /* the value of the last mark executed */

  pthread_mutex_t err_lock;
  stream_error *err_head, *err_tail;
  atomic_size_t nerrors;  /* lets poll_error() skip err_lock when empty */
  stream_error *err_free; /* records to reuse; under err_lock */
  size_t nerr_free;
};

struct cua_backend_event {
  host_state *st;
  struct event_chunk *chunk;    /* where it was carved from */
  cua_backend_event *next_free; /* the chunk's free list; under st->lock */
  pthread_mutex_t lock;
  pthread_cond_t cond; /* signalled when completed grows and waiters > 0 */
  uint64_t recorded;   /* generations recorded so far */
  uint64_t completed;  /* the highest generation the streams reached */
  int waiters;
  /* The handle the core holds plus one per queued record or wait item, so
   * that destroying an event with work still pending is safe (CUDA allows
   * it too). */
  atomic_int refs;
};

/* Events per chunk, and how many chunks with every event free the state
 * keeps (a chunk is about 4 KiB). */
#define EVENTS_PER_CHUNK 32
#define EMPTY_CHUNKS_MAX 1

/* A chunk of events. Each event's lock and condition variable are
 * initialised once, when the chunk is made, and destroyed with it. */
typedef struct event_chunk {
  struct event_chunk *prev, *next; /* st->chunks_avail or chunks_full */
  cua_backend_event *free;         /* events not in use */
  unsigned nfree;
  cua_backend_event events[EVENTS_PER_CHUNK];
} event_chunk;

/* The core's allocation and thread services (ABI 1.2), or the C library's
 * where the core has none. */
typedef struct host_svc {
  void *core;
  void *(*alloc)(void *core, size_t bytes, size_t align);
  void (*free)(void *core, void *ptr);
  int (*thread_create)(void *core, pthread_t *thread,
                       const pthread_attr_t *attr, void *(*fn)(void *),
                       void *arg);
} host_svc;

struct host_state {
  cua_backend_host host; /* a copy; fields beyond the core's size are 0 */
  host_svc svc;
  host_device *devices;
  int ndevices;
  long ncpus;

  pthread_mutex_t lock; /* the stream list, nstreams, the event chunks,
                           foreign */
  cua_backend_stream *streams;
  /* Record and wait items of this instance's events queued on another
   * instance's streams (another runtime's, through stream interop), not
   * executed yet: destroy() waits for them (foreign_cond), as they read
   * the events' memory. */
  unsigned foreign;
  pthread_cond_t foreign_cond;
  event_chunk *chunks_avail; /* chunks with a free event */
  event_chunk *chunks_full;  /* chunks without */
  unsigned nempty;           /* chunks whose events are all free */

  /* wait()/wake(): signals counts marks and errors; wait() returns once it
   * differs from seen, so a mark executed just before wait() blocks is not
   * lost. */
  pthread_mutex_t wait_lock;
  pthread_cond_t wait_cond;
  uint64_t signals;
  uint64_t seen;
  int waiting;
  int woken;
};

/* ------------------------------------------------------------- helpers */

#if defined(__GNUC__)
#define HOST_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define HOST_PRINTF(f, a)
#endif

static void set_err(cua_backend_err *err, const char *fmt, ...)
    HOST_PRINTF(2, 3);
static void host_log(host_state *st, cua_log_level level, const char *fmt, ...)
    HOST_PRINTF(3, 4);

static void set_err(cua_backend_err *err, const char *fmt, ...) {
  if (err == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
}

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Logs through the core when its table has a log function. */
static void host_log(host_state *st, cua_log_level level, const char *fmt,
                     ...) {
  char line[512];
  if (st->host.log == NULL)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  st->host.log(st->host.core, level, "%s", line);
}

/* The C library's services, for a core without them. */
static void *libc_alloc(void *core, size_t bytes, size_t align) {
  (void)core;
  if (bytes == 0)
    bytes = 1;
  if (align <= _Alignof(max_align_t))
    return malloc(bytes);
  if (bytes > SIZE_MAX - align)
    return NULL;
  /* aligned_alloc() wants a multiple of the alignment. */
  return aligned_alloc(align, (bytes + align - 1) / align * align);
}

static void libc_free(void *core, void *ptr) {
  (void)core;
  free(ptr);
}

static int libc_thread_create(void *core, pthread_t *thread,
                              const pthread_attr_t *attr, void *(*fn)(void *),
                              void *arg) {
  (void)core;
  return pthread_create(thread, attr, fn, arg);
}

/* Whether the core's table has field f (its size covers it). */
#define HOST_HAS(h, f)                                                         \
  ((h)->size >= offsetof(cua_backend_host, f) + sizeof(h)->f && (h)->f != NULL)

static void svc_init(host_svc *v, const cua_backend_host *host) {
  v->core = host != NULL ? host->core : NULL;
  v->alloc = libc_alloc;
  v->free = libc_free;
  v->thread_create = libc_thread_create;
  if (host == NULL)
    return;
  /* Both or neither: memory is freed by the allocator it came from. */
  if (HOST_HAS(host, alloc) && HOST_HAS(host, free)) {
    v->alloc = host->alloc;
    v->free = host->free;
  }
  if (HOST_HAS(host, thread_create))
    v->thread_create = host->thread_create;
}

static void *svc_alloc(host_state *st, size_t bytes, size_t align) {
  return st->svc.alloc(st->svc.core, bytes, align);
}

static void svc_free(host_state *st, void *ptr) {
  if (ptr != NULL)
    st->svc.free(st->svc.core, ptr);
}

static host_device *device_at(host_state *st, int device) {
  if (device < 0 || device >= st->ndevices)
    return NULL;
  return &st->devices[device];
}

/* Tells wait() that the progress or the errors of some stream changed. */
static void notify(host_state *st) {
  pthread_mutex_lock(&st->wait_lock);
  st->signals++;
  if (st->waiting > 0)
    pthread_cond_signal(&st->wait_cond);
  pthread_mutex_unlock(&st->wait_lock);
}

/* --------------------------------------------------------------- memory */

static int mem_acquire(host_state *st, host_device *dev, size_t bytes,
                       void **ptr, cua_backend_err *err) {
  size_t body = bytes == 0 ? HOST_ALIGN : bytes;
  if (body > SIZE_MAX - 2 * HOST_ALIGN) {
    set_err(err, "host device %d: out of memory: %zu bytes requested",
            dev->ordinal, bytes);
    return CUA_ERR_DEVICE_OOM;
  }
  body = (body + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;

  /* The limit counts what the caller asked for (rounded to the alignment),
   * not the header, so that memory_mb = 1 holds exactly two 512 KiB
   * buffers, as whoever sets the limit would expect. */
  pthread_mutex_lock(&dev->mem_lock);
  if (dev->limit != 0 && (body > dev->limit || dev->used > dev->limit - body)) {
    uint64_t used = dev->used;
    pthread_mutex_unlock(&dev->mem_lock);
    set_err(err,
            "host device %d: out of memory: %zu bytes requested, %llu bytes "
            "in use, limit %llu bytes (memory_mb = %llu)",
            dev->ordinal, bytes, (unsigned long long)used,
            (unsigned long long)dev->limit,
            (unsigned long long)(dev->limit >> 20));
    return CUA_ERR_DEVICE_OOM;
  }
  dev->used += body;
  pthread_mutex_unlock(&dev->mem_lock);

  mem_header *h = svc_alloc(st, body + HOST_ALIGN, HOST_ALIGN);
  if (h == NULL) {
    pthread_mutex_lock(&dev->mem_lock);
    dev->used -= body;
    pthread_mutex_unlock(&dev->mem_lock);
    set_err(err,
            "host device %d: out of memory: %zu bytes requested, the "
            "system allocator refused",
            dev->ordinal, bytes);
    return CUA_ERR_DEVICE_OOM;
  }
  memset(h, MEM_GARBAGE, body + HOST_ALIGN);
  h->magic = MEM_MAGIC;
  h->bytes = body;
  h->dev = dev;
  h->prev = NULL;

  pthread_mutex_lock(&dev->mem_lock);
  h->next = dev->allocs;
  if (dev->allocs != NULL)
    dev->allocs->prev = h;
  dev->allocs = h;
  pthread_mutex_unlock(&dev->mem_lock);

  *ptr = (char *)h + HOST_ALIGN;
  return CUA_OK;
}

/* Frees a device allocation and gives its bytes back to its device (the one
 * it was allocated on, whatever device the caller names). */
static void mem_release(host_state *st, void *ptr) {
  if (ptr == NULL)
    return;
  mem_header *h = (mem_header *)((char *)ptr - HOST_ALIGN);
  if (h->magic != MEM_MAGIC) {
    /* A pointer this backend did not allocate (or, best effort, one freed
     * already) would corrupt the heap: refusing it leaves the process alive
     * to report the bug. */
    host_log(st, CUA_LOG_ERROR, "mem_free(%p): not a live allocation", ptr);
    return;
  }
  host_device *dev = h->dev;
  pthread_mutex_lock(&dev->mem_lock);
  if (h->prev != NULL)
    h->prev->next = h->next;
  else
    dev->allocs = h->next;
  if (h->next != NULL)
    h->next->prev = h->prev;
  dev->used -= h->bytes;
  pthread_mutex_unlock(&dev->mem_lock);
  h->magic = 0;
  svc_free(st, h);
}

/* --------------------------------------------------------------- events */

static void chunk_push(event_chunk **list, event_chunk *c) {
  c->prev = NULL;
  c->next = *list;
  if (*list != NULL)
    (*list)->prev = c;
  *list = c;
}

static void chunk_unlink(event_chunk **list, event_chunk *c) {
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    *list = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  c->prev = c->next = NULL;
}

static event_chunk *chunk_new(host_state *st) {
  event_chunk *c = svc_alloc(st, sizeof *c, 0);
  if (c == NULL)
    return NULL;
  memset(c, 0, sizeof *c);
  for (int i = EVENTS_PER_CHUNK - 1; i >= 0; i--) {
    cua_backend_event *e = &c->events[i];
    e->st = st;
    e->chunk = c;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    e->next_free = c->free;
    c->free = e;
  }
  c->nfree = EVENTS_PER_CHUNK;
  return c;
}

static void chunk_free(host_state *st, event_chunk *c) {
  for (int i = 0; i < EVENTS_PER_CHUNK; i++) {
    pthread_cond_destroy(&c->events[i].cond);
    pthread_mutex_destroy(&c->events[i].lock);
  }
  svc_free(st, c);
}

/* A fresh event with one reference, or NULL when out of memory. */
static cua_backend_event *event_alloc(host_state *st) {
  pthread_mutex_lock(&st->lock);
  event_chunk *c = st->chunks_avail;
  if (c == NULL) {
    pthread_mutex_unlock(&st->lock);
    c = chunk_new(st);
    if (c == NULL)
      return NULL;
    pthread_mutex_lock(&st->lock);
    chunk_push(&st->chunks_avail, c);
    st->nempty++;
  }
  cua_backend_event *e = c->free;
  c->free = e->next_free;
  if (c->nfree-- == EVENTS_PER_CHUNK)
    st->nempty--;
  if (c->nfree == 0) {
    chunk_unlink(&st->chunks_avail, c);
    chunk_push(&st->chunks_full, c);
  }
  pthread_mutex_unlock(&st->lock);
  /* Nobody else refers to it (its last user dropped its last reference
   * before it went back to the chunk, under st->lock). */
  e->next_free = NULL;
  e->recorded = 0;
  e->completed = 0;
  e->waiters = 0;
  atomic_store_explicit(&e->refs, 1, memory_order_relaxed);
  return e;
}

/* Gives an event without references back to its chunk, and frees the chunk
 * when all its events are free and another such chunk is kept already. */
static void event_release(cua_backend_event *e) {
  host_state *st = e->st;
  event_chunk *c = e->chunk, *drop = NULL;
  pthread_mutex_lock(&st->lock);
  e->next_free = c->free;
  c->free = e;
  if (c->nfree++ == 0) {
    chunk_unlink(&st->chunks_full, c);
    chunk_push(&st->chunks_avail, c);
  }
  if (c->nfree == EVENTS_PER_CHUNK) {
    if (st->nempty >= EMPTY_CHUNKS_MAX) {
      chunk_unlink(&st->chunks_avail, c);
      drop = c;
    } else {
      st->nempty++;
    }
  }
  pthread_mutex_unlock(&st->lock);
  if (drop != NULL)
    chunk_free(st, drop);
}

static void event_unref(cua_backend_event *e) {
  if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
    event_release(e);
}

/* An item of @p e's about to go on stream @p s: when @p s is another
 * instance's, counted in e's (host_destroy() waits for it). */
static int foreign_begin(const cua_backend_event *e,
                         const cua_backend_stream *s) {
  if (s->st == e->st)
    return 0;
  pthread_mutex_lock(&e->st->lock);
  e->st->foreign++;
  pthread_mutex_unlock(&e->st->lock);
  return 1;
}

/* A foreign item of @p owner's executed (or never queued). @p owner may be
 * freed as soon as its lock is released. */
static void foreign_end(host_state *owner) {
  pthread_mutex_lock(&owner->lock);
  if (--owner->foreign == 0)
    pthread_cond_broadcast(&owner->foreign_cond);
  pthread_mutex_unlock(&owner->lock);
}

/* A record item reached: generation gen of e is complete. Completion is a
 * maximum, like CUDA's "the last recording": if e was re-recorded on another
 * stream that got there first, the older generation counts as done too. */
static void event_complete(cua_backend_event *e, uint64_t gen) {
  pthread_mutex_lock(&e->lock);
  if (gen > e->completed)
    e->completed = gen;
  if (e->waiters > 0)
    pthread_cond_broadcast(&e->cond);
  pthread_mutex_unlock(&e->lock);
}

static void event_block(cua_backend_event *e, uint64_t gen) {
  pthread_mutex_lock(&e->lock);
  while (e->completed < gen) {
    e->waiters++;
    pthread_cond_wait(&e->cond, &e->lock);
    e->waiters--;
  }
  pthread_mutex_unlock(&e->lock);
}

/* --------------------------------------------------------------- worker */

/* Error records a stream keeps for reuse; more are freed. One is taken for
 * every stream function queued, so a stream keeps as many as it had queued
 * at once, up to this many (about 34 KB), and then allocates nothing for
 * them however many it runs (tests/check_e2e.c,
 * steady_state_allocates_nothing_per_op). */
#define ERR_FREE_MAX 64

/* A record for a stream function about to be queued: reused, or new
 * (NULL when out of memory: the launch fails, synchronously). */
static stream_error *err_take(cua_backend_stream *s) {
  pthread_mutex_lock(&s->err_lock);
  stream_error *e = s->err_free;
  if (e != NULL) {
    s->err_free = e->next;
    s->nerr_free--;
  }
  pthread_mutex_unlock(&s->err_lock);
  return e != NULL ? e : svc_alloc(s->st, sizeof *e, 0);
}

static void err_give(cua_backend_stream *s, stream_error *e) {
  pthread_mutex_lock(&s->err_lock);
  if (s->nerr_free < ERR_FREE_MAX) {
    e->next = s->err_free;
    s->err_free = e;
    s->nerr_free++;
    e = NULL;
  }
  pthread_mutex_unlock(&s->err_lock);
  svc_free(s->st, e);
}

/* Queues op seq's failure for poll_error(), in the record reserved for it
 * when it was launched. */
static void push_error(cua_backend_stream *s, stream_error *e, uint64_t seq,
                       int code, const cua_backend_err *err) {
  e->next = NULL;
  e->seq = seq;
  e->code = code;
  if (err->msg[0] != '\0')
    snprintf(e->msg, sizeof e->msg, "%s", err->msg);
  else
    snprintf(e->msg, sizeof e->msg, "stream function of op %llu failed (%d)",
             (unsigned long long)seq, code);
  pthread_mutex_lock(&s->err_lock);
  if (s->err_tail != NULL)
    s->err_tail->next = e;
  else
    s->err_head = e;
  s->err_tail = e;
  atomic_fetch_add_explicit(&s->nerrors, 1, memory_order_release);
  pthread_mutex_unlock(&s->err_lock);
  notify(s->st);
}

/* Sleeps until an absolute monotonic time (polling loops only: spins
 * compute, see spin_for()). */
static void sleep_until(uint64_t deadline) {
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline / 1000000000u);
  ts.tv_nsec = (long)(deadline % 1000000000u);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* Spins: a SPIN op of ns nanoseconds keeps its worker's CPU busy computing
 * for that long, as Task Bench's compute-bound kernel does, so that spins
 * compete for CPUs as real tasks do and end without a sleep's timer slack.
 * The work is a dependent chain of multiply-adds; how many of them take a
 * nanosecond is measured once per process (spin_calibrate(), the fastest of
 * a few rounds, at the first host_create()). A spin runs its calibrated
 * iteration count, then, if the monotonic clock says that less than ns has
 * passed (the calibration ran fast), keeps computing until it has: a spin
 * never ends early, and is longer than ns only where its CPU was taken
 * away from it. The deadline saturates: a spin of UINT64_MAX runs until
 * the process ends. Under valgrind (where it can tell) a spin sleeps until
 * its deadline instead: valgrind runs one thread at a time, and a thread
 * that computes would hold back the others, the submitting thread too. */
#define SPIN_CHUNK 256u        /* iterations between clock reads */
#define SPIN_CALIB_ITERS 65536 /* iterations of one calibration round */
#define SPIN_CALIB_ROUNDS 5
#define SPIN_YIELD_CHUNKS 256 /* chunks between sched_yield() calls */

static pthread_once_t spin_once = PTHREAD_ONCE_INIT;
static double spin_iters_per_ns = 1.0; /* written once, by spin_calibrate() */
/* The work's input (read-only, volatile so that the compiler cannot fold
 * the loop) and its output (SPIN_SINK below). */
static const volatile double spin_seed = 0.5;
/* Keeps the compiler from dropping the spin loop's arithmetic. Not a
 * thread-local: TLS in a dlopen()ed module made LeakSanitizer's tracer
 * crash (signal 11) at every leak check. */
#define SPIN_SINK(x) __asm__ volatile("" : : "x"(x))

static double spin_work(double x, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++)
    x = x * 0.999999 + 1e-6;
  return x;
}

static void spin_calibrate(void) {
  uint64_t best = UINT64_MAX;
  double x = spin_work(spin_seed, SPIN_CALIB_ITERS); /* warms the CPU up */
  for (int r = 0; r < SPIN_CALIB_ROUNDS; r++) {
    uint64_t t0 = mono_ns();
    x = spin_work(x, SPIN_CALIB_ITERS);
    /* A volatile store between the clock reads: the compiler may not move
     * the (otherwise unobservable) work out of the timed interval. */
    SPIN_SINK(x);
    uint64_t t = mono_ns() - t0;
    if (t > 0 && t < best)
      best = t;
  }
  SPIN_SINK(x);
  if (best != UINT64_MAX)
    spin_iters_per_ns = (double)SPIN_CALIB_ITERS / (double)best;
}

/* Saturating now + ns. */
static uint64_t deadline_after(uint64_t now, uint64_t ns) {
  return ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
}

static void spin_for(uint64_t ns) {
  uint64_t deadline = deadline_after(mono_ns(), ns);
  if (HOST_UNDER_VALGRIND()) {
    sleep_until(deadline);
    return;
  }
  double want = (double)ns * spin_iters_per_ns;
  /* 2^64 as a double; a cast of anything at or above it is undefined. */
  uint64_t iters = want >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)want;
  /* Not from a constant: the compiler would fold the loop (1.0 is the
   * map's fixed point). */
  double x = spin_seed;
  for (unsigned chunk = 1; iters > 0; chunk++) {
    uint64_t step = iters < SPIN_CHUNK ? iters : SPIN_CHUNK;
    x = spin_work(x, step);
    iters -= step;
    /* About every 100 us, a thread waiting for a CPU may have this one: a
     * spin should not hold back the host threads that launch work. */
    if (chunk % SPIN_YIELD_CHUNKS == 0)
      sched_yield();
  }
  SPIN_SINK(x); /* the work is done before the clock is read */
  while (mono_ns() < deadline)
    x = spin_work(x, SPIN_CHUNK);
  SPIN_SINK(x);
}

static void run_op(cua_backend_stream *s, const cua_backend_op *op,
                   stream_error *rec) {
  uint64_t t0 = op->duration_ns != NULL ? mono_ns() : 0;
  if (op->duration_ns != NULL && op->start_ns != NULL)
    *op->start_ns = t0;

  switch (op->kind) {
  case CUA_OP_FUNC: {
    cua_backend_err err;
    err.msg[0] = '\0';
    int rc = op->func(op->func_ctx, s, &err);
    if (rc != 0)
      push_error(s, rec, op->seq, rc, &err);
    else
      err_give(s, rec);
    break;
  }
  case CUA_OP_SPIN:
    if (op->spin.ns > 0)
      spin_for(op->spin.ns);
    break;
  default:
    cua_hostmem_run(op); /* the memory ops: launch() let no other in */
    break;
  }

  /* Stored before the next mark publishes progress (release), so whoever
   * sees the mark sees the duration. */
  if (op->duration_ns != NULL)
    *op->duration_ns = mono_ns() - t0;
}

static void run_item(cua_backend_stream *s, item *it) {
  switch (it->kind) {
  case ITEM_OP:
    run_op(s, &it->u.op, it->err);
    break;
  case ITEM_MARK:
    atomic_store_explicit(&s->progress, it->u.mark, memory_order_release);
    notify(s->st);
    break;
  case ITEM_RECORD:
  case ITEM_WAIT: {
    host_state *owner = it->u.event.ev->st;
    if (it->kind == ITEM_RECORD)
      event_complete(it->u.event.ev, it->u.event.gen);
    else
      event_block(it->u.event.ev, it->u.event.gen);
    event_unref(it->u.event.ev);
    if (it->u.event.foreign)
      foreign_end(owner);
    break;
  }
  case ITEM_FREE:
    mem_release(s->st, it->u.ptr);
    break;
  }
}

static int queue_empty(const cua_backend_stream *s) {
  return s->head_blk == s->tail_blk && s->head_idx == s->tail_idx;
}

/* Moves the head of s to (end, end_idx) and keeps or frees the blocks
 * before it; s->lock is held. Returns the blocks to free (linked), which
 * the caller frees with the lock released. */
static item_block *queue_consumed(cua_backend_stream *s, item_block *end,
                                  unsigned end_idx) {
  item_block *drop = NULL;
  while (s->head_blk != end) {
    item_block *b = s->head_blk;
    s->head_blk = b->next;
    if (s->nspare < SPARE_BLOCKS_MAX) {
      b->next = s->spare;
      s->spare = b;
      s->nspare++;
    } else {
      b->next = drop;
      drop = b;
    }
  }
  s->head_idx = end_idx;
  /* Drained: the block starts over, so that a stream that keeps up with
   * its launches uses one block for ever. */
  if (queue_empty(s))
    s->head_idx = s->tail_idx = 0;
  return drop;
}

/* Unlinks the deferred frees the stream has run far enough for; under
 * s->lock. */
static mem_header *deferred_due(cua_backend_stream *s) {
  mem_header *due = NULL, **at = &s->deferred;
  while (*at != NULL) {
    mem_header *h = *at;
    if (h->defer_after <= s->nexecuted) {
      *at = h->defer_next;
      h->defer_next = due;
      due = h;
      atomic_fetch_sub(&s->ndeferred, 1);
    } else {
      at = &h->defer_next;
    }
  }
  return due;
}

static void release_all(host_state *st, mem_header *h) {
  while (h != NULL) {
    mem_header *next = h->defer_next;
    mem_release(st, (char *)h + HOST_ALIGN);
    h = next;
  }
}

static void *worker_main(void *arg) {
  cua_backend_stream *s = arg;
  pthread_setname_np(pthread_self(), s->name);

  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (queue_empty(s) && !s->stopping) {
      s->sleeping = 1;
      pthread_cond_wait(&s->cond, &s->lock);
      s->sleeping = 0;
    }
    if (queue_empty(s))
      break; /* stopping, and drained */
    /* The whole queue is taken at once, so that the lock the launching
     * thread needs is taken once per batch rather than once per item. */
    item_block *b = s->head_blk, *end = s->tail_blk;
    unsigned i = s->head_idx, end_idx = s->tail_idx;
    uint64_t upto = s->nqueued, ran = s->nexecuted;
    s->running = 1;
    pthread_mutex_unlock(&s->lock);

    /* Every block before end was linked before the batch was taken. */
    while (b != end || i != end_idx) {
      if (i == ITEMS_PER_BLOCK) {
        b = b->next;
        i = 0;
        continue;
      }
      /* A mark tells the core that what came before it is done, frees
       * included: the deferred ones it passes go back first, so that
       * memory freed by a completed op is there to allocate again. */
      if (b->items[i].kind == ITEM_MARK &&
          atomic_load_explicit(&s->ndeferred, memory_order_relaxed) > 0) {
        pthread_mutex_lock(&s->lock);
        s->nexecuted = ran;
        mem_header *due = deferred_due(s);
        pthread_mutex_unlock(&s->lock);
        release_all(s->st, due);
      }
      run_item(s, &b->items[i++]);
      ran++;
    }

    pthread_mutex_lock(&s->lock);
    s->running = 0;
    s->nexecuted = upto;
    item_block *drop = queue_consumed(s, end, end_idx);
    mem_header *due = s->deferred != NULL ? deferred_due(s) : NULL;
    if (drop != NULL || due != NULL) {
      pthread_mutex_unlock(&s->lock);
      while (drop != NULL) {
        item_block *next = drop->next;
        svc_free(s->st, drop);
        drop = next;
      }
      release_all(s->st, due);
      pthread_mutex_lock(&s->lock);
    }
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* ---------------------------------------------------------------- queue */

/* Takes s->lock and returns the item past the tail to fill, or NULL (lock
 * released) when no memory is left for a new block. The caller fills the
 * item and calls queue_commit(). */
static item *queue_begin(cua_backend_stream *s) {
  pthread_mutex_lock(&s->lock);
  if (s->tail_idx < ITEMS_PER_BLOCK)
    return &s->tail_blk->items[s->tail_idx];
  item_block *b = s->spare;
  if (b != NULL) {
    s->spare = b->next;
    s->nspare--;
  } else {
    /* Under the lock: the worker waits for it only when it has drained
     * everything before, and this happens once per ITEMS_PER_BLOCK items
     * of a burst. */
    b = svc_alloc(s->st, sizeof *b, 0);
    if (b == NULL) {
      pthread_mutex_unlock(&s->lock);
      return NULL;
    }
  }
  b->next = NULL;
  s->tail_blk->next = b;
  s->tail_blk = b;
  s->tail_idx = 0;
  return &b->items[0];
}

/* Appends the item from queue_begin(), releases s->lock and wakes the
 * worker if it sleeps; a busy worker finds the item when it comes back. */
static void queue_commit(cua_backend_stream *s, item *it) {
  (void)it; /* it is &s->tail_blk->items[s->tail_idx] */
  s->tail_idx++;
  s->nqueued++;
  int wake = s->sleeping;
  pthread_mutex_unlock(&s->lock);
  if (wake)
    pthread_cond_signal(&s->cond);
}

/* -------------------------------------------------------------- streams */

static void stream_stop(cua_backend_stream *s) {
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  int wake = s->sleeping;
  pthread_mutex_unlock(&s->lock);
  if (wake)
    pthread_cond_signal(&s->cond);
}

/* Frees a stream whose worker is gone or never started. */
static void stream_free(cua_backend_stream *s) {
  host_state *st = s->st;
  item_block *lists[2] = {s->head_blk, s->spare};
  for (int l = 0; l < 2; l++) {
    for (item_block *b = lists[l], *next; b != NULL; b = next) {
      next = b->next;
      svc_free(st, b);
    }
  }
  release_all(st, s->deferred); /* none once a worker drained it */
  s->deferred = NULL;
  stream_error *errs[2] = {s->err_head, s->err_free};
  for (int l = 0; l < 2; l++)
    for (stream_error *e = errs[l], *next; e != NULL; e = next) {
      next = e->next;
      svc_free(st, e);
    }
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->err_lock);
  svc_free(st, s);
}

/* Joins a stopped stream's worker (which drains its queue first) and frees
 * the stream. */
static void stream_join_free(cua_backend_stream *s) {
  host_state *st = s->st;
  pthread_join(s->thread, NULL);

  pthread_mutex_lock(&st->lock);
  if (s->prev != NULL)
    s->prev->next = s->next;
  else
    st->streams = s->next;
  if (s->next != NULL)
    s->next->prev = s->prev;
  pthread_mutex_unlock(&st->lock);

  stream_free(s);
}

static int host_stream_create(void *state, int device, cua_backend_stream **out,
                              cua_backend_err *err) {
  host_state *st = state;
  host_device *dev = device_at(st, device);
  if (dev == NULL) {
    set_err(err, "stream_create: no device %d (the host backend has %d)",
            device, st->ndevices);
    return CUA_ERR_BAD_DEVICE;
  }
  cua_backend_stream *s = svc_alloc(st, sizeof *s, 0);
  item_block *first = svc_alloc(st, sizeof *first, 0);
  if (s == NULL || first == NULL) {
    svc_free(st, first);
    svc_free(st, s);
    set_err(err, "stream_create: out of host memory");
    return CUA_ERR_NOMEM;
  }
  memset(s, 0, sizeof *s);
  s->st = st;
  s->dev = dev;
  first->next = NULL;
  s->head_blk = s->tail_blk = first;
  atomic_init(&s->progress, 0);
  atomic_init(&s->ndeferred, 0);
  atomic_init(&s->nerrors, 0);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  pthread_mutex_init(&s->err_lock, NULL);

  pthread_mutex_lock(&st->lock);
  int index = dev->nstreams++;
  pthread_mutex_unlock(&st->lock);
  snprintf(s->name, sizeof s->name, "cua-host-%d.%d", dev->ordinal, index);

  /* Workers run with every signal blocked, so that the application's
   * handlers (and Check's timeout alarm) run on the application's threads,
   * never on a thread of the library. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc =
      st->svc.thread_create(st->svc.core, &s->thread, NULL, worker_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    set_err(err, "stream_create: cannot start a worker thread: %s",
            strerror(rc));
    stream_free(s);
    return CUA_ERR_BACKEND;
  }

  pthread_mutex_lock(&st->lock);
  s->next = st->streams;
  if (st->streams != NULL)
    st->streams->prev = s;
  st->streams = s;
  pthread_mutex_unlock(&st->lock);

  *out = s;
  return CUA_OK;
}

static void host_stream_destroy(void *state, cua_backend_stream *s) {
  if (s == NULL)
    return;
  stream_stop(s);
  stream_join_free(s);
}

static void *host_stream_native(void *state, cua_backend_stream *s) {
  return s;
}

/* --------------------------------------------------------------- events */

static int host_event_create(void *state, int device, cua_backend_event **out,
                             cua_backend_err *err) {
  host_state *st = state;
  if (device_at(st, device) == NULL) {
    set_err(err, "event_create: no device %d (the host backend has %d)", device,
            st->ndevices);
    return CUA_ERR_BAD_DEVICE;
  }
  cua_backend_event *e = event_alloc(st);
  if (e == NULL) {
    set_err(err, "event_create: out of host memory");
    return CUA_ERR_NOMEM;
  }
  *out = e;
  return CUA_OK;
}

static void host_event_destroy(void *state, cua_backend_event *e) {
  if (e != NULL)
    event_unref(e);
}

static int host_event_record(void *state, cua_backend_event *e,
                             cua_backend_stream *s) {
  if (e == NULL || s == NULL)
    return CUA_ERR_INVAL;
  int foreign = foreign_begin(e, s);
  item *it = queue_begin(s);
  if (it == NULL) {
    if (foreign)
      foreign_end(e->st);
    return CUA_ERR_NOMEM;
  }
  it->u.event.foreign = foreign;
  /* The generation is taken while the stream's lock is held, so it cannot
   * be awaited before its record item is in a queue. */
  pthread_mutex_lock(&e->lock);
  uint64_t gen = ++e->recorded;
  pthread_mutex_unlock(&e->lock);
  atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
  it->kind = ITEM_RECORD;
  it->u.event.ev = e;
  it->u.event.gen = gen;
  queue_commit(s, it);
  return CUA_OK;
}

static int host_stream_wait_event(void *state, cua_backend_stream *s,
                                  cua_backend_event *e) {
  if (e == NULL || s == NULL)
    return CUA_ERR_INVAL;
  pthread_mutex_lock(&e->lock);
  uint64_t gen = e->recorded;
  int done = e->completed >= gen;
  pthread_mutex_unlock(&e->lock);
  /* Never recorded, or already reached: CUDA does not wait either, and the
   * stream is spared a queue item. */
  if (done)
    return CUA_OK;
  int foreign = foreign_begin(e, s);
  item *it = queue_begin(s);
  if (it == NULL) {
    if (foreign)
      foreign_end(e->st);
    return CUA_ERR_NOMEM;
  }
  it->u.event.foreign = foreign;
  atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
  it->kind = ITEM_WAIT;
  it->u.event.ev = e;
  it->u.event.gen = gen;
  queue_commit(s, it);
  return CUA_OK;
}

/* Stream interop: the application's "native" host stream is a handle from
 * cua_ctx_stream(), that is, a stream of this backend (of any runtime). */
static int host_native_record(void *state, int device, void *native,
                              cua_backend_event *e, cua_backend_err *err) {
  (void)device;
  int rc = host_event_record(state, e, native);
  if (rc)
    set_err(err, "recording an event on native stream %p: %s", native,
            rc == CUA_ERR_NOMEM ? "out of host memory" : "invalid argument");
  return rc;
}

static int host_native_wait(void *state, int device, void *native,
                            cua_backend_event *e, cua_backend_err *err) {
  (void)device;
  int rc = host_stream_wait_event(state, native, e);
  if (rc)
    set_err(err, "making native stream %p wait: %s", native,
            rc == CUA_ERR_NOMEM ? "out of host memory" : "invalid argument");
  return rc;
}

static int host_event_query(void *state, cua_backend_event *e) {
  if (e == NULL)
    return CUA_ERR_INVAL;
  pthread_mutex_lock(&e->lock);
  int done = e->completed >= e->recorded;
  pthread_mutex_unlock(&e->lock);
  return done ? CUA_OK : CUA_ERR_AGAIN;
}

/* --------------------------------------------------------------- memory */

static int host_mem_alloc(void *state, int device, cua_backend_stream *s,
                          size_t bytes, void **ptr, cua_backend_err *err) {
  host_state *st = state;
  host_device *dev = device_at(st, device);
  if (dev == NULL) {
    set_err(err, "mem_alloc: no device %d (the host backend has %d)", device,
            st->ndevices);
    return CUA_ERR_BAD_DEVICE;
  }
  if (ptr == NULL) {
    set_err(err, "mem_alloc: ptr is NULL");
    return CUA_ERR_INVAL;
  }
  /* Even a stream-ordered allocation is made now: memory usable earlier
   * than the stream reaches the allocation is indistinguishable to the
   * stream's ops, and only the accounting would differ. */
  return mem_acquire(st, dev, bytes, ptr, err);
}

static void host_mem_free(void *state, int device, cua_backend_stream *s,
                          void *ptr) {
  host_state *st = state;
  if (ptr == NULL)
    return;
  if (s != NULL) {
    item *it = queue_begin(s);
    if (it != NULL) {
      it->kind = ITEM_FREE;
      it->u.ptr = ptr;
      queue_commit(s, it);
      return;
    }
    /* No memory for the free item. Freeing now could pull the memory from
     * under a queued op, and waiting for the stream would never end when
     * this is its own worker (a stream function freeing memory): the
     * allocation's header holds it in the stream's list of deferred frees,
     * which the worker releases once it has run every item queued before
     * this call. An idle stream has nothing left to run: free it now. */
    mem_header *h = (mem_header *)((char *)ptr - HOST_ALIGN);
    pthread_mutex_lock(&s->lock);
    if (h->magic == MEM_MAGIC && (!queue_empty(s) || s->running)) {
      h->defer_after = s->nqueued;
      h->defer_next = s->deferred;
      s->deferred = h;
      atomic_fetch_add(&s->ndeferred, 1);
      pthread_mutex_unlock(&s->lock);
      return;
    }
    pthread_mutex_unlock(&s->lock);
  }
  mem_release(st, ptr);
}

static int host_host_alloc(void *state, size_t bytes, void **ptr,
                           cua_backend_err *err) {
  host_state *st = state;
  size_t body = bytes == 0 ? HOST_ALIGN : bytes;
  if (ptr == NULL) {
    set_err(err, "host_alloc: ptr is NULL");
    return CUA_ERR_INVAL;
  }
  if (body > SIZE_MAX - HOST_ALIGN) {
    set_err(err, "host_alloc: %zu bytes is too large", bytes);
    return CUA_ERR_NOMEM;
  }
  body = (body + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;
  void *p = svc_alloc(st, body, HOST_ALIGN);
  if (p == NULL) {
    set_err(err, "host_alloc: out of host memory for %zu bytes", bytes);
    return CUA_ERR_NOMEM;
  }
  *ptr = p;
  return CUA_OK;
}

static void host_host_free(void *state, void *ptr) {
  svc_free(state, ptr);
}

/* ------------------------------------------------------------ execution */

/* The kind's identifier ("FILL", "MEMCPY_D2D"...), from the shared list. */
static const char *kind_name(cua_op_kind k) {
  switch (k) {
#define KIND_ID(id, val, name, launched, desc)                                 \
  case CUA_OP_##id:                                                            \
    return #id;
    CUA_OP_KIND_MAP(KIND_ID)
#undef KIND_ID
  default:
    return "?";
  }
}

/* Checks what can be checked at enqueue time, as a CUDA launch does. */
static int check_op(const cua_backend_op *op, cua_backend_err *err) {
  int needs_dst = 0, needs_src = 0;
  switch (op->kind) {
  case CUA_OP_FUNC:
    if (op->func == NULL) {
      set_err(err, "launch: FUNC op %llu has no function",
              (unsigned long long)op->seq);
      return CUA_ERR_INVAL;
    }
    return CUA_OK;
  case CUA_OP_SPIN:
    return CUA_OK;
  case CUA_OP_FILL:
  case CUA_OP_MEMSET:
    needs_dst = 1;
    break;
  case CUA_OP_COPY:
  case CUA_OP_AXPY:
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMCPY_D2D:
    needs_dst = needs_src = 1;
    break;
  case CUA_OP_KERNEL:
    set_err(err,
            "launch: KERNEL op %llu: the host backend cannot run module "
            "kernels (it loads no PTX or cubin)",
            (unsigned long long)op->seq);
    return CUA_ERR_NOTSUP;
  default:
    set_err(err, "launch: op %llu has kind %s (%d), which is not a stream op",
            (unsigned long long)op->seq, kind_name(op->kind), (int)op->kind);
    return CUA_ERR_INVAL;
  }
  if (op->bytes > 0 &&
      ((needs_dst && op->dst == NULL) || (needs_src && op->src == NULL))) {
    set_err(err,
            "launch: op %llu (%s) moves %zu bytes through a NULL "
            "pointer",
            (unsigned long long)op->seq, kind_name(op->kind), op->bytes);
    return CUA_ERR_INVAL;
  }
  return CUA_OK;
}

static int host_launch(void *state, cua_backend_stream *s,
                       const cua_backend_op *op, cua_backend_err *err) {
  if (s == NULL || op == NULL) {
    set_err(err, "launch: NULL stream or op");
    return CUA_ERR_INVAL;
  }
  if (op->size < offsetof(cua_backend_op, seq) + sizeof op->seq) {
    set_err(err, "launch: op size %zu is too small", op->size);
    return CUA_ERR_INVAL;
  }
  /* A core built against other headers may hand a shorter or longer op:
   * only the common prefix is read, and missing fields count as zero. */
  cua_backend_op copy;
  const cua_backend_op *o = op;
  if (op->size < sizeof copy) {
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, op, op->size);
    o = &copy;
  }
  int rc = check_op(o, err);
  if (rc != CUA_OK)
    return rc;

  stream_error *rec = NULL;
  if (o->kind == CUA_OP_FUNC && (rec = err_take(s)) == NULL) {
    set_err(err, "launch: out of host memory for an error record");
    return CUA_ERR_NOMEM;
  }
  item *it = queue_begin(s);
  if (it == NULL) {
    if (rec != NULL)
      err_give(s, rec);
    set_err(err, "launch: out of host memory for a queue entry");
    return CUA_ERR_NOMEM;
  }
  it->kind = ITEM_OP;
  it->err = rec;
  memcpy(&it->u.op, o, sizeof it->u.op);
  it->u.op.size = sizeof it->u.op;
  /* Kernel arguments are only valid during launch(); KERNEL never gets
   * here, but no dangling pointer should be kept either. */
  it->u.op.kernel_params = NULL;
  queue_commit(s, it);
  return CUA_OK;
}

static int host_mark(void *state, cua_backend_stream *s, uint64_t value) {
  if (s == NULL)
    return CUA_ERR_INVAL;
  item *it = queue_begin(s);
  if (it == NULL)
    return CUA_ERR_NOMEM;
  it->kind = ITEM_MARK;
  it->u.mark = value;
  queue_commit(s, it);
  return CUA_OK;
}

static int host_progress(void *state, cua_backend_stream *s, uint64_t *value,
                         cua_backend_err *err) {
  *value = atomic_load_explicit(&s->progress, memory_order_acquire);
  return CUA_OK;
}

static int host_poll_error(void *state, cua_backend_stream *s, uint64_t *seq,
                           int *code, cua_backend_err *err) {
  /* The completion thread polls every stream often; most have no error, and
   * they need not take a lock to say so. */
  if (atomic_load_explicit(&s->nerrors, memory_order_acquire) == 0)
    return 0;
  pthread_mutex_lock(&s->err_lock);
  stream_error *e = s->err_head;
  if (e != NULL) {
    s->err_head = e->next;
    if (s->err_head == NULL)
      s->err_tail = NULL;
    atomic_fetch_sub_explicit(&s->nerrors, 1, memory_order_relaxed);
  }
  pthread_mutex_unlock(&s->err_lock);
  if (e == NULL)
    return 0;
  if (seq != NULL)
    *seq = e->seq;
  if (code != NULL)
    *code = e->code;
  set_err(err, "%s", e->msg);
  err_give(s, e);
  return 1;
}

static int host_wait(void *state, uint64_t timeout_ns) {
  host_state *st = state;
  struct timespec deadline;
  /* Beyond about 30 years the timeout is taken as "forever", which also
   * keeps the deadline arithmetic from overflowing time_t. */
  int forever = timeout_ns >= (uint64_t)1000000000u * 1000000000u;
  if (!forever) {
    uint64_t d = mono_ns() + timeout_ns;
    deadline.tv_sec = (time_t)(d / 1000000000u);
    deadline.tv_nsec = (long)(d % 1000000000u);
  }

  pthread_mutex_lock(&st->wait_lock);
  while (st->signals == st->seen && !st->woken && timeout_ns > 0) {
    st->waiting++;
    int rc = forever ? pthread_cond_wait(&st->wait_cond, &st->wait_lock)
                     : pthread_cond_timedwait(&st->wait_cond, &st->wait_lock,
                                              &deadline);
    st->waiting--;
    if (rc == ETIMEDOUT)
      break;
  }
  st->seen = st->signals;
  st->woken = 0;
  pthread_mutex_unlock(&st->wait_lock);
  return 0;
}

static void host_wake(void *state) {
  host_state *st = state;
  pthread_mutex_lock(&st->wait_lock);
  st->woken = 1;
  pthread_cond_broadcast(&st->wait_cond);
  pthread_mutex_unlock(&st->wait_lock);
}

/* -------------------------------------------------------------- devices */

static int host_device_count(void *state) {
  host_state *st = state;
  return st->ndevices;
}

static int host_device_info(void *state, int device, cua_device_info *info) {
  host_state *st = state;
  host_device *dev = device_at(st, device);
  if (dev == NULL)
    return CUA_ERR_BAD_DEVICE;
  if (info == NULL || info->size == 0)
    return CUA_ERR_INVAL;
  cua_device_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "host device %d", dev->ordinal);
  d.ordinal = dev->ordinal;
  d.total_memory = dev->limit;
  d.multiprocessors = (int)st->ncpus;
  /* Only as much as the caller's struct holds, which keeps its size. */
  size_t n = info->size < sizeof d ? info->size : sizeof d;
  d.size = info->size;
  memcpy(info, &d, n);
  return CUA_OK;
}

static int host_can_access(void *state, int device, int peer) {
  host_state *st = state;
  return device_at(st, device) != NULL && device_at(st, peer) != NULL;
}

/* ------------------------------------------------------- create/destroy */

static void free_state(host_state *st) {
  for (int i = 0; i < st->ndevices; i++)
    pthread_mutex_destroy(&st->devices[i].mem_lock);
  svc_free(st, st->devices);
  pthread_cond_destroy(&st->wait_cond);
  pthread_cond_destroy(&st->foreign_cond);
  pthread_mutex_destroy(&st->wait_lock);
  pthread_mutex_destroy(&st->lock);
  svc_free(st, st);
}

static int host_create(const cua_backend_host *host,
                       const cua_param_value *params, const int *ordinals,
                       int nordinals, void **state, cua_backend_err *err) {
  int64_t ndev = params != NULL ? params[PARAM_DEVICES].i : 1;
  int64_t memory_mb = params != NULL ? params[PARAM_MEMORY_MB].i : 0;
  if (ndev < 1 || ndev > 64) {
    set_err(err, "devices = %lld is out of range 1..64", (long long)ndev);
    return CUA_ERR_INVAL;
  }
  if (memory_mb < 0 || memory_mb > 1048576) {
    set_err(err, "memory_mb = %lld is out of range 0..1048576",
            (long long)memory_mb);
    return CUA_ERR_INVAL;
  }
  int n = ordinals != NULL ? nordinals : (int)ndev;
  if (n <= 0) {
    set_err(err, "no host device selected");
    return CUA_ERR_NO_DEVICE;
  }
  for (int i = 0; ordinals != NULL && i < n; i++) {
    if (ordinals[i] < 0 || ordinals[i] >= ndev) {
      set_err(err,
              "no host device %d: the host backend has %lld "
              "(devices = %lld in [backend.host])",
              ordinals[i], (long long)ndev, (long long)ndev);
      return CUA_ERR_BAD_DEVICE;
    }
    for (int j = 0; j < i; j++) {
      if (ordinals[j] == ordinals[i]) {
        set_err(err, "host device %d is selected twice", ordinals[i]);
        return CUA_ERR_BAD_DEVICE;
      }
    }
  }

  pthread_once(&spin_once, spin_calibrate);
  host_svc svc;
  svc_init(&svc, host);
  host_state *st = svc.alloc(svc.core, sizeof *st, 0);
  host_device *devices = svc.alloc(svc.core, (size_t)n * sizeof *devices, 0);
  if (st == NULL || devices == NULL) {
    if (devices != NULL)
      svc.free(svc.core, devices);
    if (st != NULL)
      svc.free(svc.core, st);
    set_err(err, "out of host memory");
    return CUA_ERR_NOMEM;
  }
  memset(st, 0, sizeof *st);
  memset(devices, 0, (size_t)n * sizeof *devices);
  st->svc = svc;
  st->devices = devices;
  if (host != NULL) {
    size_t hn = host->size < sizeof st->host ? host->size : sizeof st->host;
    memcpy(&st->host, host, hn);
  }
  st->ndevices = n;
  st->ncpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (st->ncpus < 1)
    st->ncpus = 1;
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->foreign_cond, NULL);
  pthread_mutex_init(&st->wait_lock, NULL);
  /* wait() has deadlines on the monotonic clock, which setting the time of
   * day does not move. */
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&st->wait_cond, &ca);
  pthread_condattr_destroy(&ca);
  for (int i = 0; i < n; i++) {
    host_device *dev = &st->devices[i];
    dev->ordinal = ordinals != NULL ? ordinals[i] : i;
    dev->limit = (uint64_t)memory_mb << 20;
    pthread_mutex_init(&dev->mem_lock, NULL);
  }
  *state = st;
  return CUA_OK;
}

static void host_destroy(void *state) {
  host_state *st = state;
  if (st == NULL)
    return;
  /* Every worker is told to stop first, so that the queues drain in
   * parallel; a worker stops only once its queue is empty. Waits across
   * streams resolve because every awaited record is already queued. */
  for (cua_backend_stream *s = st->streams; s != NULL; s = s->next)
    stream_stop(s);
  while (st->streams != NULL)
    stream_join_free(st->streams);
  /* Items of these events on other instances' streams (stream interop)
   * read them until they run: the core waited for this runtime's work, so
   * every generation they await is recorded and reached, and each runs as
   * soon as its stream gets to it. */
  pthread_mutex_lock(&st->lock);
  while (st->foreign > 0)
    pthread_cond_wait(&st->foreign_cond, &st->lock);
  pthread_mutex_unlock(&st->lock);

  /* The workers are gone, and with them every reference from a queue item:
   * the events still in use are the handles the core did not destroy. */
  size_t live_events = 0;
  event_chunk *lists[2] = {st->chunks_avail, st->chunks_full};
  for (int l = 0; l < 2; l++) {
    for (event_chunk *c = lists[l], *next; c != NULL; c = next) {
      next = c->next;
      live_events += EVENTS_PER_CHUNK - c->nfree;
      chunk_free(st, c);
    }
  }
  if (live_events > 0)
    host_log(st, CUA_LOG_DEBUG, "%zu events were still live at destroy; freed",
             live_events);
  size_t leftover = 0;
  for (int i = 0; i < st->ndevices; i++) {
    host_device *dev = &st->devices[i];
    while (dev->allocs != NULL) {
      mem_header *h = dev->allocs;
      dev->allocs = h->next;
      h->magic = 0;
      svc_free(st, h);
      leftover++;
    }
  }
  if (leftover > 0)
    host_log(st, CUA_LOG_DEBUG,
             "%zu device allocations were still live at destroy; freed",
             leftover);
  free_state(st);
}

/* ----------------------------------------------------------- descriptor */

static const cua_param_spec host_params[PARAM_COUNT] = {
    [PARAM_DEVICES] = {"devices", CUA_PARAM_INT, "1", 1, 64, NULL,
                       "virtual host devices, to study multi-device policies "
                       "without GPUs",
                       0},
    [PARAM_MEMORY_MB] = {"memory_mb", CUA_PARAM_INT, "0", 0, 1048576, NULL,
                         "per-device allocation limit in MiB (0: unlimited), "
                         "so that out-of-memory paths can be tested",
                         0},
};

CUA__BACKEND_EXPORT const cua_backend_descriptor cua_backend_entry = {
    .abi_major = CUA_BACKEND_ABI_MAJOR,
    .abi_minor = CUA_BACKEND_ABI_MINOR,
    .size = sizeof(cua_backend_descriptor),
    .name = "host",
    .version = HOST_VERSION,
    .description = "CPU worker threads that behave like CUDA streams",
    .flags = CUA_BACKEND_HOST_EXEC,
    .params = host_params,
    .nparams = PARAM_COUNT,
    .create = host_create,
    .destroy = host_destroy,
    .device_count = host_device_count,
    .device_info = host_device_info,
    .can_access = host_can_access,
    .stream_create = host_stream_create,
    .stream_destroy = host_stream_destroy,
    .stream_native = host_stream_native,
    .event_create = host_event_create,
    .event_destroy = host_event_destroy,
    .event_record = host_event_record,
    .stream_wait_event = host_stream_wait_event,
    .event_query = host_event_query,
    .mem_alloc = host_mem_alloc,
    .mem_free = host_mem_free,
    .launch = host_launch,
    .mark = host_mark,
    .progress = host_progress,
    .poll_error = host_poll_error,
    .wait = host_wait,
    .wake = host_wake,
    .host_alloc = host_host_alloc,
    .host_free = host_host_free,
    .module_load = NULL,
    .module_unload = NULL,
    .module_function = NULL,
    /* auto tries host after cuda */
    .priority = 100,
    .native_record = host_native_record,
    .native_wait = host_native_wait,
};
