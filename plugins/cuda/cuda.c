/*
 * plugins/cuda/cuda.c: the CUDA backend (NVIDIA GPUs).
 *
 * Streams are non-blocking CUDA streams, events are timing-disabled CUDA
 * events, memory comes from each device's default stream-ordered pool, and
 * the built-in ops run the kernels of kernels/builtin.cu.
 *
 * Completion (how a mark becomes visible to the completion thread) has
 * three modes, chosen by [backend.cuda] completion:
 *
 * - flags: each stream owns a 64-bit word of page-locked, device-mapped
 *   host memory; a mark is a stream memory operation (cuStreamWriteValue64)
 *   that writes the mark's value there once the stream reaches it, and
 *   progress() is a plain load. This costs no host callback and no event
 *   per mark. The driver entry point is looked up through the runtime
 *   (cudaGetDriverEntryPointByVersion) so that the module links libcudart
 *   only. When memory operations do not work (old driver, unsupported
 *   device, a failed probe), the backend falls back to events and logs why.
 * - events: each mark records a pooled event; progress() queries a
 *   stream's pending events in order.
 * - callback: each mark is a cudaLaunchHostFunc() that stores the value and
 *   signals the completion thread: about 10 us per mark, the slow fallback.
 *
 * The module is C; CUDA errors are reported with their names and messages.
 * A sticky error (a kernel fault) makes a device's context unusable for the
 * rest of the process, so the backend remembers it per device and reports
 * CUA_ERR_DEVICE_LOST from then on rather than letting the runtime wait for
 * marks that will never be reached.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <cuasync/backend.h>
#include <cuasync/errors.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cupti_times.h"
#include "kernels.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

/* ------------------------------------------------------------------ types */

enum completion {
  COMPLETION_FLAGS = 0, /* the order of the ENUM choices below */
  COMPLETION_EVENTS = 1,
  COMPLETION_CALLBACK = 2,
};

static const char *const completion_names[] = {"flags", "events", "callback"};

/* Indices of the parameters in cuda_params[]. */
enum {
  PARAM_COMPLETION,
  PARAM_SPIN_US,
  PARAM_POOL_RELEASE_MB,
  PARAM_GRAPH_UPDATES,
  PARAM_TIMESTAMPS,
  PARAM_CAPTURE,
  PARAM_WAITED_SPIN,
  PARAM_COUNT
};

/* How often, at most, the backend asks CUDA whether a stream that has
 * outstanding marks hit a sticky error. Often enough that a fault is
 * reported within about a millisecond, rarely enough that the queries
 * (a microsecond or so each) cost nothing measurable. */
#define STICKY_CHECK_NS 1000000ull

/* How long a device's time anchor serves: elapsed times come as floats
 * in milliseconds, exact to about 0.06 us within a second. */
#define ANCHOR_NS 1000000000ull

/* The sleep-poll backoff of wait(): from 2 us, doubling, up to 200 us. */
#define BACKOFF_MIN_NS 2000ull
#define BACKOFF_MAX_NS 200000ull

/* A first-in first-out queue of fixed-size elements, grown on demand. */
typedef struct fifo {
  unsigned char *buf;
  size_t elem;
  size_t cap;
  size_t head;
  size_t count;
} fifo;

/* A stack of reusable events of one device and one kind (timing or not):
 * creating an event costs a few microseconds, reusing one costs nothing. */
typedef struct event_pool {
  pthread_mutex_t lock;
  cudaEvent_t *items;
  size_t count;
  size_t cap;
  unsigned flags; /* cudaEventCreateWithFlags() flags */
} event_pool;

/* A device's time anchor: an event recorded on the idle internal stream,
 * and the host clock once it completed. Counted: the device holds its
 * current one, each pending timing the one it was launched with; the last
 * release destroys it. */
typedef struct anchor {
  cudaEvent_t ev;
  uint64_t ns;
  size_t refs; /* guarded by the device's anchor_lock */
} anchor;

typedef struct gpu {
  int ordinal; /* CUDA device ordinal */
  cua_device_info info;
  cudaStream_t internal; /* non-stream-ordered allocations, the flags probe */
  cudaMemPool_t pool;    /* the default pool, NULL if pools are unsupported */
  event_pool mark_events;
  event_pool timing_events;
  /* Device times on the host clock (cua_backend_op::start_ns): the
   * current anchor, renewed every ANCHOR_NS, as elapsed times are floats in
   * ms; a replaced one lives while a pending timing still refers to it.
   * Guarded by anchor_lock. */
  pthread_mutex_t anchor_lock;
  anchor *anchor;
  /* Set once, when a sticky error is seen; lost_msg is written before lost
   * is set (release), so readers that see lost == 1 read a whole message. */
  atomic_int lost;
  pthread_mutex_t lost_lock;
  char lost_msg[400];
  /* Its primary context, which device_open() made current, for
   * use_device()'s check; NULL when the driver's cuCtxGetCurrent could not
   * be had (then it asks the runtime, cudaGetDevice()). */
  CUcontext ctx;
} gpu;

/* A mark in events mode: its value and the event recorded for it. */
typedef struct pending_mark {
  uint64_t value;
  cudaEvent_t ev;
} pending_mark;

/* A timed op: reported through *out (and *start_out, on the host clock
 * through the anchor, an event of known host time recorded before start)
 * once progress reaches seq. */
typedef struct pending_timing {
  uint64_t seq;
  cudaEvent_t start;
  cudaEvent_t end;
  uint64_t *out;
  uint64_t *start_out; /* or NULL */
  uint64_t *end_out;   /* or NULL; start is NULL when out is */
  anchor *anchor;      /* held (a reference), or NULL */
} pending_timing;

typedef struct backend backend;

/* What the next node of a stream depends on, or what an event recorded,
 * in a capture by nodes; valid while gen is the backend's cap_gen.
 * Capturing thread only. */
typedef struct frontier {
  cudaGraphNode_t *v;
  size_t n, cap;
  uint64_t gen;
} frontier;

struct cua_backend_stream {
  backend *be;
  int device; /* runtime index into be->dev */
  cudaStream_t native;
  /* The last value enqueued by mark() (launching thread) and the last value
   * progress() returned (completion thread); marked > seen means the stream
   * has outstanding marks. */
  _Atomic uint64_t marked;
  _Atomic uint64_t seen;
  /* callback mode: the last value a host function stored. */
  _Atomic uint64_t reached;
  /* flags mode: the word the stream writes, as the host and the device see
   * it (the same address under unified addressing, but asked for anyway). */
  uint64_t *flag;
  CUdeviceptr flag_dev;
  /* Set when progress() has reported this stream's device lost, so that
   * wait() stops counting the stream as one that may still change. */
  atomic_int lost_reported;
  uint64_t last_check_ns; /* completion thread only */
  pthread_mutex_t lock;   /* guards marks and timings */
  fifo marks;             /* pending_mark, events mode */
  frontier front;         /* a capture by nodes */
  fifo timings;           /* pending_timing */
};

/* An event of the ABI. It is created on one device, but the core may record
 * it on a stream of any device: CUDA requires an event and the stream that
 * records it to share a context, so the backend keeps one CUDA event per
 * device, made on first use, and remembers which one was recorded last. */
struct cua_backend_event {
  backend *be;
  int device;
  cudaEvent_t *per_device; /* be->ndev entries, NULL until used */
  atomic_int last;         /* device index of the last recording */
  frontier front;          /* a capture by nodes: what was recorded */
};

/* A host function's argument in callback mode. */
typedef struct callback_mark {
  cua_backend_stream *s;
  uint64_t value;
} callback_mark;

struct cua_backend_module {
  cudaLibrary_t lib;
  void *image; /* the NUL-terminated copy, alive while the library is */
};

typedef CUresult (*write64_fn)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
typedef CUresult (*attribute_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*error_text_fn)(CUresult, const char **);
typedef CUresult (*ctx_current_fn)(CUcontext *);

struct backend {
  const cua_backend_host *host;
  enum completion mode;
  uint64_t spin_ns;
  int ndev;
  gpu *dev;
  unsigned char *peer; /* ndev * ndev: peer[d * ndev + p] */

  write64_fn write64;
  ctx_current_fn cu_ctx_current; /* cuCtxGetCurrent, or NULL */
  error_text_fn cu_error_name;
  error_text_fn cu_error_string;

  pthread_mutex_t streams_lock;
  cua_backend_stream **streams;
  size_t nstreams;
  size_t streams_cap;

  /* wait() sleeps on wait_cond; wake(), host functions (callback mode) and
   * mark() (when the waiter sleeps with nothing outstanding) signal it. */
  pthread_mutex_t wait_lock;
  pthread_cond_t wait_cond;
  int wake_pending;         /* guarded by wait_lock */
  int waited_spin;          /* [backend.cuda] waited_spin */
  atomic_int waited;        /* a program thread waits (ABI 1.10 waited()) */
  atomic_int idle_sleeping; /* the waiter sleeps with nothing outstanding */

  int no_update_in_place; /* [backend.cuda] graph_updates = capture */
  int capture_streams;    /* [backend.cuda] capture = stream */
  /* [backend.cuda] timestamps = cupti: opened at the first op observers
   * want times of (under cupti_lock), NULL if that failed (events then). */
  int want_cupti;
  atomic_int cupti_state; /* 0 not tried, 1 open, -1 failed */
  pthread_mutex_t cupti_lock;
  cupti_client *cupti;
  /* While a capture runs (the core runs one at a time, on one thread, the
   * only one whose launches go into it: tl_cap_be), its log: after launch
   * k, its stream depended on
   * cap_front[cap_foff[k] .. cap_foff[k + 1]) (the node it made, or what
   * it depended on before when it made none), for graph_update_op() and
   * capture_deps(). cap_foff has ncap_nodes + 1 entries. Other threads'
   * launches meanwhile go to streams that are not capturing and are not
   * logged. */
  cudaGraphNode_t *cap_front;
  size_t ncap_front, cap_front_cap;
  size_t *cap_foff;
  size_t ncap_nodes, cap_foff_cap;
  frontier cap_deps; /* a stream capture's capture_deps() set */
  int cap_log_failed;
  /* A capture by nodes ([backend.cuda] capture = nodes): the graph the ops
   * are added to (NULL in a stream capture, and between captures), and
   * the capture's number (streams' and events' frontiers of an older one
   * are empty in this one). */
  cudaGraph_t cap_graph;
  uint64_t cap_gen;
};

/* The backend whose capture the calling thread is making, between
 * capture_begin() and capture_end() (the core captures on one thread and
 * runs no user code there meanwhile), and the device it made current:
 * that thread's launches go into the capture, and its device needs no
 * cudaGetDevice() check. NULL on every other thread. */
static _Thread_local const struct backend *tl_cap_be;
static _Thread_local int tl_cap_ordinal;

/* ---------------------------------------------------------------- helpers */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void be_log(const backend *be, cua_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void be_log(const backend *be, cua_log_level level, const char *fmt,
                   ...) {
  char line[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (be->host != NULL && be->host->log != NULL)
    be->host->log(be->host->core, level, "%s", line);
}

static void set_err(cua_backend_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void set_err(cua_backend_err *err, const char *fmt, ...) {
  va_list ap;
  if (err == NULL)
    return;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
}

/* Errors after which CUDA documents the process's context as unusable:
 * every later call returns the same error. The values of the driver's
 * CUresult codes are the same numbers, so this also classifies those. */
static int is_sticky(int code) {
  switch (code) {
  case cudaErrorECCUncorrectable:
  case cudaErrorNvlinkUncorrectable:
#if CUDART_VERSION >= 12040
  case cudaErrorContained:
#endif
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchTimeout:
  case cudaErrorAssert:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchFailure:
#if CUDART_VERSION >= 12080
  case cudaErrorTensorMemoryLeak:
#endif
  case cudaErrorMpsClientTerminated:
  case cudaErrorExternalDevice:
    return 1;
  default:
    return 0;
  }
}

/* Records that device @p d hit sticky error @p e (the first one wins). */
static void set_lost(backend *be, int d, cudaError_t e) {
  gpu *dv = &be->dev[d];
  int first = 0;
  pthread_mutex_lock(&dv->lost_lock);
  if (!atomic_load_explicit(&dv->lost, memory_order_relaxed)) {
    snprintf(dv->lost_msg, sizeof dv->lost_msg,
             "%s: %s (sticky error: the CUDA context is unusable; recreate "
             "the runtime)",
             cudaGetErrorName(e), cudaGetErrorString(e));
    atomic_store_explicit(&dv->lost, 1, memory_order_release);
    first = 1;
  }
  pthread_mutex_unlock(&dv->lost_lock);
  if (first)
    be_log(be, CUA_LOG_ERROR, "CUDA device %d: %s", dv->ordinal, dv->lost_msg);
}

static int is_lost(const backend *be, int d) {
  return atomic_load_explicit(&be->dev[d].lost, memory_order_acquire);
}

static int lost_err(backend *be, int d, cua_backend_err *err) {
  set_err(err, "CUDA device %d: %s", be->dev[d].ordinal, be->dev[d].lost_msg);
  return CUA_ERR_DEVICE_LOST;
}

/*
 * Turns a failed CUDA call into a cuasync code and a message "WHAT:
 * cudaErrorName: description". Sticky errors become CUA_ERR_DEVICE_LOST and
 * mark the device lost; cudaErrorMemoryAllocation becomes
 * CUA_ERR_DEVICE_OOM unless the caller passed CUA_ERR_NOMEM (host memory);
 * anything else becomes @p code. The thread's last-error slot is cleared so
 * that a non-sticky failure is not reported again by an unrelated later
 * call that reads cudaGetLastError() (user stream functions do).
 */
static int cuda_fail(backend *be, int d, cua_backend_err *err, int code,
                     cudaError_t e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

static int cuda_fail(backend *be, int d, cua_backend_err *err, int code,
                     cudaError_t e, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  (void)cudaGetLastError();
  if (is_sticky((int)e)) {
    if (d >= 0)
      set_lost(be, d, e);
    set_err(err,
            "%s: %s: %s (sticky error: the CUDA context is unusable; "
            "recreate the runtime)",
            what, cudaGetErrorName(e), cudaGetErrorString(e));
    return CUA_ERR_DEVICE_LOST;
  }
  if (e == cudaErrorMemoryAllocation && code != CUA_ERR_NOMEM)
    code = CUA_ERR_DEVICE_OOM;
  set_err(err, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
  return code;
}

/*
 * Makes device @p d current on the calling thread. CUDA's current device is
 * per thread and the core calls from many threads, so every device-specific
 * call goes through here. The check reads the thread's current context or
 * device instead of trusting a cache of our own: the application, or a
 * stream function, may switch the thread to another device between our
 * calls, and a stale cache would silently put allocations and launches on
 * the wrong GPU.
 */
static cudaError_t use_device(const backend *be, int d) {
  int cur = -1;
  if (tl_cap_be == be) { /* capturing: nothing else switches this thread */
    if (tl_cap_ordinal == be->dev[d].ordinal)
      return cudaSuccess;
    cudaError_t e = cudaSetDevice(be->dev[d].ordinal);
    tl_cap_ordinal = e == cudaSuccess ? be->dev[d].ordinal : -1;
    return e;
  }
  /* Before every launch, record, wait and mark: the driver's current
   * context, when it is the device's primary one, settles it for a quarter
   * of cudaGetDevice()'s price (8 against 35 ns on an H200; doc/results,
   * thirty-second session). Any other context is left to cudaGetDevice(),
   * as before: a context of the program's own, current on this device,
   * stays current (its launches into our streams work). */
  CUcontext ctx = NULL;
  if (be->dev[d].ctx != NULL && be->cu_ctx_current(&ctx) == CUDA_SUCCESS &&
      ctx == be->dev[d].ctx)
    return cudaSuccess;
  if (cudaGetDevice(&cur) == cudaSuccess && cur == be->dev[d].ordinal)
    return cudaSuccess;
  return cudaSetDevice(be->dev[d].ordinal);
}

/* Makes room for @p need elements of @p size in *@p arr (capacity *@p cap,
 * doubled as needed): 0, or -1 with *@p arr as it was. */
static int grow(void *arr, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return 0;
  size_t nc = *cap ? *cap : 64;
  while (nc < need)
    nc *= 2;
  void *v = realloc(*(void **)arr, nc * size);
  if (v == NULL)
    return -1;
  *(void **)arr = v;
  *cap = nc;
  return 0;
}

/* Frontier @p f as it is in the current capture by nodes: empty if it was
 * last used in an earlier one. */
static frontier *front_of(const backend *be, frontier *f) {
  if (f->gen != be->cap_gen) {
    f->gen = be->cap_gen;
    f->n = 0;
  }
  return f;
}

/* Adds the @p m nodes of @p v to @p f, each once: 0, or -1 (out of
 * memory). */
static int front_add(frontier *f, const cudaGraphNode_t *v, size_t m) {
  if (grow(&f->v, &f->cap, f->n + m, sizeof *f->v) != 0)
    return -1;
  for (size_t i = 0; i < m; i++) {
    size_t x = 0;
    while (x < f->n && f->v[x] != v[i])
      x++;
    if (x == f->n)
      f->v[f->n++] = v[i];
  }
  return 0;
}

/* ------------------------------------------------------------------- fifo */

static void fifo_init(fifo *f, size_t elem) {
  memset(f, 0, sizeof *f);
  f->elem = elem;
}

static void fifo_free(fifo *f) {
  free(f->buf);
  f->buf = NULL;
  f->cap = f->count = f->head = 0;
}

static void *fifo_at(const fifo *f, size_t i) {
  return f->buf + ((f->head + i) % f->cap) * f->elem;
}

static int fifo_push(fifo *f, const void *x) {
  if (f->count == f->cap) {
    size_t ncap = f->cap ? f->cap * 2 : 16;
    unsigned char *nbuf = malloc(ncap * f->elem);
    if (nbuf == NULL)
      return -1;
    for (size_t i = 0; i < f->count; i++)
      memcpy(nbuf + i * f->elem, fifo_at(f, i), f->elem);
    free(f->buf);
    f->buf = nbuf;
    f->cap = ncap;
    f->head = 0;
  }
  memcpy(f->buf + ((f->head + f->count) % f->cap) * f->elem, x, f->elem);
  f->count++;
  return 0;
}

static void *fifo_front(const fifo *f) {
  return f->count ? fifo_at(f, 0) : NULL;
}

static void fifo_pop(fifo *f) {
  f->head = (f->head + 1) % f->cap;
  f->count--;
}

/* ------------------------------------------------------------ event pools */

static void pool_init(event_pool *p, unsigned flags) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->lock, NULL);
  p->flags = flags;
}

/* Takes an event of device @p d from @p p, creating one when the pool is
 * empty. */
static cudaError_t pool_get(backend *be, int d, event_pool *p,
                            cudaEvent_t *ev) {
  pthread_mutex_lock(&p->lock);
  if (p->count > 0) {
    *ev = p->items[--p->count];
    pthread_mutex_unlock(&p->lock);
    return cudaSuccess;
  }
  pthread_mutex_unlock(&p->lock);
  cudaError_t e = use_device(be, d);
  if (e != cudaSuccess)
    return e;
  return cudaEventCreateWithFlags(ev, p->flags);
}

static void pool_put(event_pool *p, cudaEvent_t ev) {
  pthread_mutex_lock(&p->lock);
  if (p->count == p->cap) {
    size_t ncap = p->cap ? p->cap * 2 : 32;
    cudaEvent_t *n = realloc(p->items, ncap * sizeof *n);
    if (n == NULL) {
      pthread_mutex_unlock(&p->lock);
      cudaEventDestroy(ev);
      return;
    }
    p->items = n;
    p->cap = ncap;
  }
  p->items[p->count++] = ev;
  pthread_mutex_unlock(&p->lock);
}

/* Drops a reference to @p a of device @p d; the last one destroys it. */
static void anchor_put(backend *be, int d, anchor *a) {
  if (a == NULL)
    return;
  gpu *dv = &be->dev[d];
  pthread_mutex_lock(&dv->anchor_lock);
  int last = --a->refs == 0;
  pthread_mutex_unlock(&dv->anchor_lock);
  if (last) {
    cudaEventDestroy(a->ev);
    free(a);
  }
}

/* The device's time anchor, renewed when older than ANCHOR_NS, into *out
 * with a reference taken (anchor_put() drops it). The internal stream is
 * idle but for rare allocations: an anchor whose record and
 * synchronisation took over 50 us is taken again (twice at most), since
 * its host time may then be late. */
static cudaError_t get_anchor(backend *be, int d, anchor **out) {
  gpu *dv = &be->dev[d];
  cudaError_t e = cudaSuccess;
  anchor *old = NULL;
  *out = NULL;
  pthread_mutex_lock(&dv->anchor_lock);
  uint64_t now = now_ns();
  if (dv->anchor == NULL || now - dv->anchor->ns > ANCHOR_NS) {
    anchor *a = calloc(1, sizeof *a);
    e = a != NULL ? use_device(be, d) : cudaErrorMemoryAllocation;
    if (e == cudaSuccess)
      e = cudaEventCreateWithFlags(&a->ev, cudaEventDefault);
    for (int tries = 0; e == cudaSuccess && tries < 3; tries++) {
      uint64_t t0 = now_ns();
      e = cudaEventRecord(a->ev, dv->internal);
      if (e == cudaSuccess)
        e = cudaEventSynchronize(a->ev);
      a->ns = now_ns();
      if (a->ns - t0 < 50000)
        break;
    }
    if (e == cudaSuccess) {
      a->refs = 1; /* the device's */
      if (dv->anchor != NULL && --dv->anchor->refs == 0)
        old = dv->anchor;
      dv->anchor = a;
    } else if (a != NULL) {
      if (a->ev != NULL)
        cudaEventDestroy(a->ev);
      free(a);
    }
  }
  if (e == cudaSuccess) {
    dv->anchor->refs++;
    *out = dv->anchor;
  }
  pthread_mutex_unlock(&dv->anchor_lock);
  if (old != NULL) {
    cudaEventDestroy(old->ev);
    free(old);
  }
  return e;
}

/* Drops the device's reference to its current anchor (after every stream
 * released its timings). */
static void anchors_destroy(backend *be, int d) {
  gpu *dv = &be->dev[d];
  anchor *a = dv->anchor;
  dv->anchor = NULL;
  anchor_put(be, d, a);
}

static void pool_destroy(event_pool *p) {
  for (size_t i = 0; i < p->count; i++)
    cudaEventDestroy(p->items[i]);
  free(p->items);
  pthread_mutex_destroy(&p->lock);
}

/* ------------------------------------------------------------- parameters */

static const cua_param_spec cuda_params[PARAM_COUNT] = {
    {"completion", CUA_PARAM_ENUM, "flags", 0, 0, "flags|events|callback",
     "how the host learns that a stream reached a mark: flags (stream memory "
     "operations write host memory; falls back to events where unsupported), "
     "events (pooled events), callback (cudaLaunchHostFunc, slowest)",
     0},
    {"spin_us", CUA_PARAM_INT, "20", 0, 1000000, NULL,
     "microseconds the completion thread spins polling before it sleeps", 0},
    {"pool_release_mb", CUA_PARAM_INT, "-1", -1, 16777216, NULL,
     "release threshold of each device's memory pool in MiB; -1 keeps every "
     "freed block for reuse",
     0},
    {"graph_updates", CUA_PARAM_ENUM, "in_place", 0, 0, "in_place|capture",
     "how a graph's updated ops reach its CUDA graph: in_place (each changed "
     "node's parameters are set in the executable graph) or capture (the "
     "whole graph is captured again and cudaGraphExecUpdate() applied)",
     0},
    {"timestamps", CUA_PARAM_ENUM, "cupti", 0, 0, "cupti|events",
     "how ops' device times are taken when observers want them: cupti "
     "(CUPTI's activity records, libcupti opened at run time; events where "
     "it cannot be used, and for stream functions) or events (a timing "
     "event after each op)",
     0},
    {"capture", CUA_PARAM_ENUM, "nodes", 0, 0, "nodes|stream",
     "how cua_graph_create() builds a CUDA graph: nodes (each op added as a "
     "node with its dependencies, cudaGraphAddKernelNode() and the like) "
     "or stream (a stream capture of the ops' launches)",
     0},
    {"waited_spin", CUA_PARAM_BOOL, "true", 0, 0, NULL,
     "while a program thread waits (cua_future_wait(), "
     "cua_runtime_synchronize()), the completion thread polls without "
     "sleeping and cua_future_wait() watches its future without sleeping, "
     "as cudaStreamSynchronize() spins, so the end of a long run is seen at "
     "once; false: both sleep (the completion thread between polls after "
     "spin_us, up to 200 us)",
     0},
};

/* ------------------------------------------------------------------ flags */

static const char *cu_error_text(const backend *be, CUresult r, char *buf,
                                 size_t len) {
  const char *name = NULL, *desc = NULL;
  if (be->cu_error_name != NULL)
    be->cu_error_name(r, &name);
  if (be->cu_error_string != NULL)
    be->cu_error_string(r, &desc);
  if (name != NULL)
    snprintf(buf, len, "%s: %s", name, desc ? desc : "");
  else
    snprintf(buf, len, "CUresult %d", (int)r);
  return buf;
}

static void *driver_entry(const char *symbol, char *why, size_t len) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
#if CUDART_VERSION >= 12050
  cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &fn, 12000,
                                                   cudaEnableDefault, &q);
#else
  cudaError_t e = cudaGetDriverEntryPoint(symbol, &fn, cudaEnableDefault, &q);
#endif
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(why, len, "cudaGetDriverEntryPointByVersion(%s): %s: %s", symbol,
             cudaGetErrorName(e), cudaGetErrorString(e));
    return NULL;
  }
  if (q != cudaDriverEntryPointSuccess || fn == NULL) {
    snprintf(why, len, "the driver has no %s for CUDA 12.0 (%s)", symbol,
             q == cudaDriverEntryPointVersionNotSufficent ? "driver too old"
                                                          : "symbol not found");
    return NULL;
  }
  return fn;
}

/*
 * Checks that stream memory operations work on every device: the driver
 * offers cuStreamWriteValue64, each device reports 64-bit memory
 * operations, and a probe write into mapped host memory lands. Returns 0,
 * or -1 with the reason in @p why.
 */
static int flags_setup(backend *be, char *why, size_t len) {
  be->write64 = (write64_fn)driver_entry("cuStreamWriteValue64", why, len);
  if (be->write64 == NULL)
    return -1;
  attribute_fn attr =
      (attribute_fn)driver_entry("cuDeviceGetAttribute", why, len);
  if (attr == NULL)
    return -1;
  for (int d = 0; d < be->ndev; d++) {
    int ok = 0;
    char msg[160];
    CUresult r = attr(&ok, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                      (CUdevice)be->dev[d].ordinal);
    if (r != CUDA_SUCCESS) {
      snprintf(why, len,
               "cuDeviceGetAttribute(CAN_USE_64_BIT_STREAM_MEM_OPS) on device "
               "%d: %s",
               be->dev[d].ordinal, cu_error_text(be, r, msg, sizeof msg));
      return -1;
    }
    if (!ok) {
      snprintf(why, len,
               "CUDA device %d does not support 64-bit stream memory "
               "operations",
               be->dev[d].ordinal);
      return -1;
    }
  }
  for (int d = 0; d < be->ndev; d++) {
    uint64_t *probe = NULL;
    void *dptr = NULL;
    cudaError_t e = use_device(be, d);
    if (e == cudaSuccess)
      e = cudaHostAlloc((void **)&probe, sizeof *probe,
                        cudaHostAllocPortable | cudaHostAllocMapped);
    if (e == cudaSuccess) {
      *probe = 0;
      e = cudaHostGetDevicePointer(&dptr, probe, 0);
    }
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      snprintf(why, len, "mapped host memory on CUDA device %d: %s: %s",
               be->dev[d].ordinal, cudaGetErrorName(e), cudaGetErrorString(e));
      if (probe != NULL)
        cudaFreeHost(probe);
      return -1;
    }
    const uint64_t magic = 0x6375617379636e31ull;
    char msg[160];
    CUresult r = be->write64((CUstream)be->dev[d].internal,
                             (CUdeviceptr)(uintptr_t)dptr, magic, 0);
    if (r == CUDA_SUCCESS)
      e = cudaStreamSynchronize(be->dev[d].internal);
    int landed = r == CUDA_SUCCESS && e == cudaSuccess &&
                 __atomic_load_n(probe, __ATOMIC_ACQUIRE) == magic;
    if (r != CUDA_SUCCESS)
      snprintf(why, len, "cuStreamWriteValue64 probe on CUDA device %d: %s",
               be->dev[d].ordinal, cu_error_text(be, r, msg, sizeof msg));
    else if (e != cudaSuccess)
      snprintf(why, len, "cuStreamWriteValue64 probe on CUDA device %d: %s: %s",
               be->dev[d].ordinal, cudaGetErrorName(e), cudaGetErrorString(e));
    else if (!landed)
      snprintf(why, len,
               "cuStreamWriteValue64 probe on CUDA device %d: the value "
               "never reached host memory",
               be->dev[d].ordinal);
    cudaFreeHost(probe);
    if (!landed) {
      (void)cudaGetLastError();
      return -1;
    }
  }
  return 0;
}

/* ---------------------------------------------------------------- destroy */

/* Releases what a stream holds. The stream must be idle (synchronized) or
 * the context lost. */
static void stream_release(backend *be, cua_backend_stream *s) {
  gpu *dv = &be->dev[s->device];
  pending_mark *m;
  pending_timing *t;
  while ((m = fifo_front(&s->marks)) != NULL) {
    pool_put(&dv->mark_events, m->ev);
    fifo_pop(&s->marks);
  }
  while ((t = fifo_front(&s->timings)) != NULL) {
    if (t->start != NULL)
      pool_put(&dv->timing_events, t->start);
    pool_put(&dv->timing_events, t->end);
    anchor_put(be, s->device, t->anchor);
    fifo_pop(&s->timings);
  }
  fifo_free(&s->marks);
  fifo_free(&s->timings);
  free(s->front.v);
  if (s->flag != NULL)
    cudaFreeHost(s->flag);
  if (s->native != NULL)
    cudaStreamDestroy(s->native);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static void cuda_destroy(void *state) {
  backend *be = state;
  if (be == NULL)
    return;
  /* Every stream is drained first: host functions of callback mode point
   * at the streams, and freeing memory or events under running work would
   * be a use after free on the device. Errors are ignored, since a lost
   * context fails every call and there is nothing left to save. */
  for (size_t i = 0; i < be->nstreams; i++) {
    cua_backend_stream *s = be->streams[i];
    use_device(be, s->device);
    cudaStreamSynchronize(s->native);
  }
  for (size_t i = 0; i < be->nstreams; i++)
    stream_release(be, be->streams[i]);
  free(be->streams);
  cupti_close(be->cupti); /* everything ran: what it owes is flushed */
  be->cupti = NULL;
  for (int d = 0; d < be->ndev; d++) {
    gpu *dv = &be->dev[d];
    /* A device that create() never reached has no context; making it
     * current now would create one for nothing. */
    int opened = dv->internal != NULL && use_device(be, d) == cudaSuccess;
    if (opened) {
      cudaStreamSynchronize(dv->internal);
      cudaStreamDestroy(dv->internal);
    }
    pool_destroy(&dv->mark_events);
    pool_destroy(&dv->timing_events);
    /* Give the pool's cached, unused memory back to the device; blocks the
     * application still holds stay allocated. */
    if (opened && dv->pool != NULL)
      cudaMemPoolTrimTo(dv->pool, 0);
    anchors_destroy(be, d); /* none without a context */
    pthread_mutex_destroy(&dv->anchor_lock);
    pthread_mutex_destroy(&dv->lost_lock);
  }
  (void)cudaGetLastError();
  free(be->dev);
  free(be->peer);
  pthread_mutex_destroy(&be->streams_lock);
  pthread_mutex_destroy(&be->cupti_lock);
  pthread_mutex_destroy(&be->wait_lock);
  pthread_cond_destroy(&be->wait_cond);
  free(be->cap_front);
  free(be->cap_foff);
  free(be->cap_deps.v);
  free(be);
}

/* ----------------------------------------------------------------- create */

static int64_t param_int(const cua_param_value *params, int i) {
  if (params == NULL)
    return (int64_t)strtoll(cuda_params[i].default_value, NULL, 10);
  return params[i].i;
}

/* Opens device @p d: properties, internal stream, memory pool. */
static int device_open(backend *be, int d, int64_t release_mb,
                       cua_backend_err *err) {
  gpu *dv = &be->dev[d];
  struct cudaDeviceProp prop;
  cudaError_t e = cudaSetDevice(dv->ordinal);
  if (e == cudaSuccess)
    e = cudaFree(NULL); /* creates the primary context now */
  if (e != cudaSuccess) {
    cuda_fail(be, -1, err, CUA_ERR_NO_DEVICE, e, "initializing CUDA device %d",
              dv->ordinal);
    return CUA_ERR_NO_DEVICE;
  }
  dv->ctx = NULL;
  if (be->cu_ctx_current != NULL &&
      be->cu_ctx_current(&dv->ctx) != CUDA_SUCCESS)
    dv->ctx = NULL;
  e = cudaGetDeviceProperties(&prop, dv->ordinal);
  if (e != cudaSuccess)
    return cuda_fail(be, d, err, CUA_ERR_BACKEND, e,
                     "cudaGetDeviceProperties(%d)", dv->ordinal);
  memset(&dv->info, 0, sizeof dv->info);
  dv->info.size = sizeof dv->info;
  /* prop.name holds 256 bytes; every real device name fits in 128. */
  memcpy(dv->info.name, prop.name, sizeof dv->info.name - 1);
  dv->info.name[sizeof dv->info.name - 1] = '\0';
  dv->info.ordinal = dv->ordinal;
  dv->info.total_memory = (uint64_t)prop.totalGlobalMem;
  dv->info.compute_major = prop.major;
  dv->info.compute_minor = prop.minor;
  dv->info.multiprocessors = prop.multiProcessorCount;

  /* Loaded now rather than at their first launch, which would wait for
   * whatever runs on the device then (lazy loading). A failure here shows
   * again, with its context, at that launch. */
  int pe = cua__kernels_preload();
  if (pe != 0) {
    (void)cudaGetLastError();
    be_log(be, CUA_LOG_WARN,
           "preloading the built-in kernels on CUDA device %d: %s", dv->ordinal,
           cudaGetErrorName((cudaError_t)pe));
  }

  e = cudaStreamCreateWithFlags(&dv->internal, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    return cuda_fail(be, d, err, CUA_ERR_BACKEND, e,
                     "creating the internal stream of CUDA device %d",
                     dv->ordinal);

  int pools = 0;
  e = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported,
                             dv->ordinal);
  if (e == cudaSuccess && pools)
    e = cudaDeviceGetDefaultMemPool(&dv->pool, dv->ordinal);
  if (e != cudaSuccess || !pools) {
    (void)cudaGetLastError();
    dv->pool = NULL;
    be_log(be, CUA_LOG_WARN,
           "CUDA device %d has no stream-ordered memory pool (%s); "
           "allocations use cudaMalloc and synchronize",
           dv->ordinal, e != cudaSuccess ? cudaGetErrorName(e) : "unsupported");
    return 0;
  }
  /* The default pool's threshold is 0: every synchronization returns the
   * freed blocks to the OS, and the next allocation maps them again. -1
   * (the default) keeps them, which is what makes stream-ordered
   * allocation cheap in a long-running runtime. */
  uint64_t threshold =
      release_mb < 0 ? UINT64_MAX : (uint64_t)release_mb * 1024u * 1024u;
  e = cudaMemPoolSetAttribute(dv->pool, cudaMemPoolAttrReleaseThreshold,
                              &threshold);
  if (e != cudaSuccess)
    return cuda_fail(be, d, err, CUA_ERR_BACKEND, e,
                     "setting the release threshold of CUDA device %d's "
                     "memory pool",
                     dv->ordinal);
  return 0;
}

/* Enables peer access for every pair that supports it, for both plain
 * allocations (cudaDeviceEnablePeerAccess) and pool allocations, which do
 * not follow peer access and need cudaMemPoolSetAccess. A pair that fails
 * is logged and left without access: copies between them are then staged
 * by the driver, which is slower but correct. */
static void peers_open(backend *be) {
  for (int d = 0; d < be->ndev; d++) {
    for (int p = 0; p < be->ndev; p++) {
      int can = 0;
      if (p == d)
        continue;
      cudaError_t e =
          cudaDeviceCanAccessPeer(&can, be->dev[d].ordinal, be->dev[p].ordinal);
      if (e != cudaSuccess || !can) {
        (void)cudaGetLastError();
        continue;
      }
      e = use_device(be, d);
      if (e == cudaSuccess) {
        e = cudaDeviceEnablePeerAccess(be->dev[p].ordinal, 0);
        /* Another component of the process may have enabled it already. */
        if (e == cudaErrorPeerAccessAlreadyEnabled) {
          (void)cudaGetLastError();
          e = cudaSuccess;
        }
      }
      if (e == cudaSuccess && be->dev[p].pool != NULL) {
        struct cudaMemAccessDesc desc;
        memset(&desc, 0, sizeof desc);
        desc.location.type = cudaMemLocationTypeDevice;
        desc.location.id = be->dev[d].ordinal;
        desc.flags = cudaMemAccessFlagsProtReadWrite;
        e = cudaMemPoolSetAccess(be->dev[p].pool, &desc, 1);
      }
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        be_log(be, CUA_LOG_WARN,
               "peer access from CUDA device %d to %d failed: %s: %s",
               be->dev[d].ordinal, be->dev[p].ordinal, cudaGetErrorName(e),
               cudaGetErrorString(e));
        continue;
      }
      be->peer[d * be->ndev + p] = 1;
    }
  }
}

static int cuda_create(const cua_backend_host *host,
                       const cua_param_value *params, const int *ordinals,
                       int nordinals, void **state, cua_backend_err *err) {
  int count = 0;
  *state = NULL;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    set_err(err, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    return CUA_ERR_NO_DEVICE;
  }
  if (count <= 0) {
    set_err(err, "no CUDA device");
    return CUA_ERR_NO_DEVICE;
  }
  if (ordinals != NULL && nordinals <= 0) {
    set_err(err, "an empty list of CUDA devices was asked for");
    return CUA_ERR_INVAL;
  }
  int n = ordinals != NULL ? nordinals : count;
  for (int i = 0; ordinals != NULL && i < n; i++) {
    if (ordinals[i] < 0 || ordinals[i] >= count) {
      set_err(err, "CUDA device %d does not exist (this machine has %d: 0..%d)",
              ordinals[i], count, count - 1);
      return CUA_ERR_BAD_DEVICE;
    }
    for (int j = 0; j < i; j++) {
      if (ordinals[j] == ordinals[i]) {
        set_err(err, "CUDA device %d is listed twice", ordinals[i]);
        return CUA_ERR_BAD_DEVICE;
      }
    }
  }

  backend *be = calloc(1, sizeof *be);
  if (be == NULL) {
    set_err(err, "out of memory");
    return CUA_ERR_NOMEM;
  }
  be->host = host;
  be->ndev = n;
  be->dev = calloc((size_t)n, sizeof *be->dev);
  be->peer = calloc((size_t)n * (size_t)n, 1);
  pthread_mutex_init(&be->streams_lock, NULL);
  pthread_mutex_init(&be->cupti_lock, NULL);
  atomic_init(&be->cupti_state, 0);
  pthread_mutex_init(&be->wait_lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&be->wait_cond, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&be->idle_sleeping, 0);
  atomic_init(&be->waited, 0);
  for (int d = 0; be->dev != NULL && d < n; d++) {
    be->dev[d].ordinal = ordinals != NULL ? ordinals[d] : d;
    pool_init(&be->dev[d].mark_events, cudaEventDisableTiming);
    pool_init(&be->dev[d].timing_events, cudaEventDefault);
    pthread_mutex_init(&be->dev[d].lost_lock, NULL);
    pthread_mutex_init(&be->dev[d].anchor_lock, NULL);
    atomic_init(&be->dev[d].lost, 0);
  }
  if (be->dev == NULL || be->peer == NULL) {
    if (be->dev == NULL)
      be->ndev = 0;
    cuda_destroy(be);
    set_err(err, "out of memory");
    return CUA_ERR_NOMEM;
  }

  int64_t mode = param_int(params, PARAM_COMPLETION);
  be->mode = mode >= 0 && mode <= 2 ? (enum completion)mode : COMPLETION_FLAGS;
  be->spin_ns = (uint64_t)param_int(params, PARAM_SPIN_US) * 1000u;
  int64_t release_mb = param_int(params, PARAM_POOL_RELEASE_MB);
  be->no_update_in_place = param_int(params, PARAM_GRAPH_UPDATES) == 1;
  be->capture_streams = param_int(params, PARAM_CAPTURE) == 1;
  be->want_cupti = param_int(params, PARAM_TIMESTAMPS) == 0;
  be->waited_spin = params == NULL || params[PARAM_WAITED_SPIN].i != 0;

  be->cu_ctx_current =
      (ctx_current_fn)driver_entry("cuCtxGetCurrent", (char[160]){0}, 160);
  for (int d = 0; d < n; d++) {
    int rc = device_open(be, d, release_mb, err);
    if (rc != 0) {
      cuda_destroy(be);
      return rc;
    }
  }
  peers_open(be);

  be->cu_error_name =
      (error_text_fn)driver_entry("cuGetErrorName", (char[160]){0}, 160);
  be->cu_error_string =
      (error_text_fn)driver_entry("cuGetErrorString", (char[160]){0}, 160);
  /* Graph nodes of the built-in kernels through the driver (kernels.h);
   * without it, through the runtime. */
  cua__nodes_use_driver(
      driver_entry("cuGraphAddKernelNode", (char[160]){0}, 160));
  if (be->mode == COMPLETION_FLAGS) {
    char why[400];
    if (flags_setup(be, why, sizeof why) != 0) {
      be_log(be, CUA_LOG_WARN,
             "completion = flags is unavailable (%s); using events", why);
      be->mode = COMPLETION_EVENTS;
    }
  }
  be_log(be, CUA_LOG_INFO, "%d CUDA device(s), completion = %s, spin %llu us",
         n, completion_names[be->mode], (unsigned long long)be->spin_ns / 1000);
  *state = be;
  return 0;
}

/* ---------------------------------------------------------------- devices */

static int cuda_device_count(void *state) {
  return ((backend *)state)->ndev;
}

static int cuda_device_info(void *state, int device, cua_device_info *info) {
  backend *be = state;
  if (device < 0 || device >= be->ndev || info == NULL)
    return CUA_ERR_BAD_DEVICE;
  /* Copies only as much as the caller's struct holds, so an older caller
   * with a shorter cua_device_info is never overrun. */
  size_t want = info->size ? info->size : sizeof *info;
  size_t n = want < sizeof *info ? want : sizeof *info;
  if (n > sizeof info->size)
    memcpy((char *)info + sizeof info->size,
           (const char *)&be->dev[device].info + sizeof info->size,
           n - sizeof info->size);
  info->size = want;
  return 0;
}

static int cuda_can_access(void *state, int device, int peer) {
  backend *be = state;
  if (device < 0 || device >= be->ndev || peer < 0 || peer >= be->ndev)
    return 0;
  return device == peer || be->peer[device * be->ndev + peer];
}

/* ---------------------------------------------------------------- streams */

static int cuda_stream_create(void *state, int device, cua_backend_stream **out,
                              cua_backend_err *err) {
  backend *be = state;
  *out = NULL;
  if (device < 0 || device >= be->ndev) {
    set_err(err, "no CUDA device with index %d (the backend has %d)", device,
            be->ndev);
    return CUA_ERR_BAD_DEVICE;
  }
  if (is_lost(be, device))
    return lost_err(be, device, err);
  cua_backend_stream *s = calloc(1, sizeof *s);
  if (s == NULL) {
    set_err(err, "out of memory");
    return CUA_ERR_NOMEM;
  }
  s->be = be;
  s->device = device;
  pthread_mutex_init(&s->lock, NULL);
  fifo_init(&s->marks, sizeof(pending_mark));
  fifo_init(&s->timings, sizeof(pending_timing));
  atomic_init(&s->marked, 0);
  atomic_init(&s->seen, 0);
  atomic_init(&s->reached, 0);
  atomic_init(&s->lost_reported, 0);

  cudaError_t e = use_device(be, device);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&s->native, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    int rc = cuda_fail(be, device, err, CUA_ERR_BACKEND, e,
                       "creating a stream on CUDA device %d",
                       be->dev[device].ordinal);
    stream_release(be, s);
    return rc;
  }
  if (be->mode == COMPLETION_FLAGS) {
    /* A page of its own per stream would be wasteful, but streams are few
     * (pooled, never destroyed while the runtime lives) and a separate
     * allocation keeps the flag's lifetime that of its stream. */
    void *dptr = NULL;
    e = cudaHostAlloc((void **)&s->flag, sizeof *s->flag,
                      cudaHostAllocPortable | cudaHostAllocMapped);
    if (e == cudaSuccess) {
      *s->flag = 0;
      e = cudaHostGetDevicePointer(&dptr, s->flag, 0);
    }
    if (e != cudaSuccess) {
      int rc = cuda_fail(be, device, err, CUA_ERR_NOMEM, e,
                         "allocating the completion flag of a stream on CUDA "
                         "device %d",
                         be->dev[device].ordinal);
      stream_release(be, s);
      return rc;
    }
    s->flag_dev = (CUdeviceptr)(uintptr_t)dptr;
  }

  pthread_mutex_lock(&be->streams_lock);
  if (be->nstreams == be->streams_cap) {
    size_t ncap = be->streams_cap ? be->streams_cap * 2 : 16;
    cua_backend_stream **n = realloc(be->streams, ncap * sizeof *n);
    if (n == NULL) {
      pthread_mutex_unlock(&be->streams_lock);
      stream_release(be, s);
      set_err(err, "out of memory");
      return CUA_ERR_NOMEM;
    }
    be->streams = n;
    be->streams_cap = ncap;
  }
  be->streams[be->nstreams++] = s;
  pthread_mutex_unlock(&be->streams_lock);
  *out = s;
  return 0;
}

static void cuda_stream_destroy(void *state, cua_backend_stream *s) {
  backend *be = state;
  if (s == NULL)
    return;
  pthread_mutex_lock(&be->streams_lock);
  for (size_t i = 0; i < be->nstreams; i++) {
    if (be->streams[i] == s) {
      be->streams[i] = be->streams[--be->nstreams];
      break;
    }
  }
  pthread_mutex_unlock(&be->streams_lock);
  use_device(be, s->device);
  cudaStreamSynchronize(s->native);
  (void)cudaGetLastError();
  stream_release(be, s);
}

static void *cuda_stream_native(void *state, cua_backend_stream *s) {
  (void)state;
  return s != NULL ? (void *)s->native : NULL;
}

/* ----------------------------------------------------------------- events */

/* The CUDA event of @p e on device @p d, created on first use. */
static cudaError_t event_on(backend *be, cua_backend_event *e, int d,
                            cudaEvent_t *out) {
  cudaEvent_t ev = __atomic_load_n(&e->per_device[d], __ATOMIC_ACQUIRE);
  if (ev == NULL) {
    /* Two streams of one device may record the same event at once (the
     * core serialises per stream, not per event): the first to publish
     * its new CUDA event wins, the other destroys its own. */
    cudaEvent_t mine = NULL, expected = NULL;
    cudaError_t r = use_device(be, d);
    if (r == cudaSuccess)
      r = cudaEventCreateWithFlags(&mine, cudaEventDisableTiming);
    if (r != cudaSuccess)
      return r;
    if (__atomic_compare_exchange_n(&e->per_device[d], &expected, mine, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      ev = mine;
    } else {
      cudaEventDestroy(mine);
      ev = expected;
    }
  }
  *out = ev;
  return cudaSuccess;
}

/* The CUDA event of @p e last recorded, or NULL if it never was. */
static cudaEvent_t event_last(cua_backend_event *e) {
  int d = atomic_load_explicit(&e->last, memory_order_acquire);
  return __atomic_load_n(&e->per_device[d], __ATOMIC_ACQUIRE);
}

static int cuda_event_create(void *state, int device, cua_backend_event **out,
                             cua_backend_err *err) {
  backend *be = state;
  *out = NULL;
  if (device < 0 || device >= be->ndev) {
    set_err(err, "no CUDA device with index %d (the backend has %d)", device,
            be->ndev);
    return CUA_ERR_BAD_DEVICE;
  }
  cua_backend_event *e = calloc(1, sizeof *e);
  if (e != NULL)
    e->per_device = calloc((size_t)be->ndev, sizeof *e->per_device);
  if (e == NULL || e->per_device == NULL) {
    free(e);
    set_err(err, "out of memory");
    return CUA_ERR_NOMEM;
  }
  e->be = be;
  e->device = device;
  atomic_init(&e->last, device);
  cudaEvent_t ev;
  cudaError_t r = event_on(be, e, device, &ev);
  if (r != cudaSuccess) {
    free(e->per_device);
    free(e);
    return cuda_fail(be, device, err, CUA_ERR_BACKEND, r,
                     "creating an event on CUDA device %d",
                     be->dev[device].ordinal);
  }
  *out = e;
  return 0;
}

static void cuda_event_destroy(void *state, cua_backend_event *e) {
  backend *be = state;
  if (e == NULL)
    return;
  for (int d = 0; d < be->ndev; d++)
    if (e->per_device[d] != NULL)
      cudaEventDestroy(e->per_device[d]);
  free(e->per_device);
  free(e->front.v);
  free(e);
}

static int cuda_event_record(void *state, cua_backend_event *e,
                             cua_backend_stream *s) {
  backend *be = state;
  if (tl_cap_be == be && be->cap_graph != NULL) {
    /* A capture by nodes: the event stands for the stream's frontier. */
    frontier *ef = front_of(be, &e->front);
    const frontier *sf = front_of(be, &s->front);
    ef->n = 0;
    if (front_add(ef, sf->v, sf->n) != 0) {
      be->cap_log_failed = 1;
      return CUA_ERR_NOMEM;
    }
    return 0;
  }
  cudaEvent_t ev;
  if (is_lost(be, s->device))
    return CUA_ERR_DEVICE_LOST;
  cudaError_t r = event_on(be, e, s->device, &ev);
  if (r == cudaSuccess)
    r = use_device(be, s->device);
  if (r == cudaSuccess)
    r = cudaEventRecord(ev, s->native);
  if (r != cudaSuccess) {
    cua_backend_err err;
    int rc = cuda_fail(be, s->device, &err, CUA_ERR_BACKEND, r,
                       "recording an event on a stream of CUDA device %d",
                       be->dev[s->device].ordinal);
    be_log(be, CUA_LOG_ERROR, "%s", err.msg);
    return rc;
  }
  atomic_store_explicit(&e->last, s->device, memory_order_release);
  return 0;
}

/* Stream interop: @p native is the application's cudaStream_t of runtime
 * device @p d. */
static int cuda_native_record(void *state, int d, void *native,
                              cua_backend_event *e, cua_backend_err *err) {
  backend *be = state;
  cudaEvent_t ev;
  if (d < 0 || d >= be->ndev)
    return CUA_ERR_BAD_DEVICE;
  if (is_lost(be, d))
    return CUA_ERR_DEVICE_LOST;
  cudaError_t r = event_on(be, e, d, &ev);
  if (r == cudaSuccess)
    r = use_device(be, d);
  if (r == cudaSuccess)
    r = cudaEventRecord(ev, (cudaStream_t)native);
  if (r != cudaSuccess)
    return cuda_fail(be, d, err, CUA_ERR_BACKEND, r,
                     "recording an event on native stream %p of CUDA device "
                     "%d",
                     native, be->dev[d].ordinal);
  atomic_store_explicit(&e->last, d, memory_order_release);
  return 0;
}

static int cuda_native_wait(void *state, int d, void *native,
                            cua_backend_event *e, cua_backend_err *err) {
  backend *be = state;
  if (d < 0 || d >= be->ndev)
    return CUA_ERR_BAD_DEVICE;
  if (is_lost(be, d))
    return CUA_ERR_DEVICE_LOST;
  cudaEvent_t ev = event_last(e);
  cudaError_t r = use_device(be, d);
  if (r == cudaSuccess && ev != NULL)
    r = cudaStreamWaitEvent((cudaStream_t)native, ev, 0);
  if (r != cudaSuccess)
    return cuda_fail(be, d, err, CUA_ERR_BACKEND, r,
                     "making native stream %p of CUDA device %d wait", native,
                     be->dev[d].ordinal);
  return 0;
}

static int cuda_stream_wait_event(void *state, cua_backend_stream *s,
                                  cua_backend_event *e) {
  backend *be = state;
  if (tl_cap_be == be && be->cap_graph != NULL) {
    /* A capture by nodes: the stream's next node depends on what the
     * event recorded too (nothing, if it was not recorded in it). */
    const frontier *ef = front_of(be, &e->front);
    if (front_add(front_of(be, &s->front), ef->v, ef->n) != 0) {
      be->cap_log_failed = 1;
      return CUA_ERR_NOMEM;
    }
    return 0;
  }
  cudaEvent_t ev = event_last(e);
  if (is_lost(be, s->device))
    return CUA_ERR_DEVICE_LOST;
  cudaError_t r = use_device(be, s->device);
  /* An event never recorded has nothing to wait for; CUDA treats an
   * unrecorded event as complete, and so does this. */
  if (r == cudaSuccess && ev != NULL)
    r = cudaStreamWaitEvent(s->native, ev, 0);
  if (r != cudaSuccess) {
    cua_backend_err err;
    int rc = cuda_fail(be, s->device, &err, CUA_ERR_BACKEND, r,
                       "making a stream of CUDA device %d wait for an event",
                       be->dev[s->device].ordinal);
    be_log(be, CUA_LOG_ERROR, "%s", err.msg);
    return rc;
  }
  return 0;
}

static int cuda_event_query(void *state, cua_backend_event *e) {
  backend *be = state;
  int d = atomic_load_explicit(&e->last, memory_order_acquire);
  cudaEvent_t ev = event_last(e);
  if (ev == NULL)
    return 0;
  cudaError_t r = cudaEventQuery(ev);
  if (r == cudaSuccess)
    return 0;
  if (r == cudaErrorNotReady)
    return CUA_ERR_AGAIN;
  cua_backend_err err;
  int rc = cuda_fail(be, d, &err, CUA_ERR_BACKEND, r,
                     "querying an event of CUDA device %d", be->dev[d].ordinal);
  be_log(be, CUA_LOG_ERROR, "%s", err.msg);
  return rc;
}

/* ----------------------------------------------------------------- memory */

static int cuda_mem_alloc(void *state, int device, cua_backend_stream *s,
                          size_t bytes, void **ptr, cua_backend_err *err) {
  backend *be = state;
  *ptr = NULL;
  if (device < 0 || device >= be->ndev) {
    set_err(err, "no CUDA device with index %d (the backend has %d)", device,
            be->ndev);
    return CUA_ERR_BAD_DEVICE;
  }
  if (is_lost(be, device))
    return lost_err(be, device, err);
  gpu *dv = &be->dev[device];
  cudaError_t e = use_device(be, device);
  if (e == cudaSuccess) {
    if (dv->pool == NULL) {
      e = cudaMalloc(ptr, bytes);
    } else if (s != NULL) {
      /* From device's pool even when the stream belongs to another device:
       * the op asked for memory on @p device. */
      e = cudaMallocFromPoolAsync(ptr, bytes, dv->pool, s->native);
    } else {
      /* Not stream-ordered: allocate on the internal stream and wait, so
       * the block is usable from every stream as soon as this returns. */
      e = cudaMallocFromPoolAsync(ptr, bytes, dv->pool, dv->internal);
      if (e == cudaSuccess) {
        e = cudaStreamSynchronize(dv->internal);
        if (e != cudaSuccess)
          *ptr = NULL;
      }
    }
  }
  if (e != cudaSuccess) {
    *ptr = NULL;
    return cuda_fail(be, device, err, CUA_ERR_BACKEND, e,
                     "allocating %zu bytes on CUDA device %d (%s)", bytes,
                     dv->ordinal, dv->info.name);
  }
  return 0;
}

static void cuda_mem_free(void *state, int device, cua_backend_stream *s,
                          void *ptr) {
  backend *be = state;
  if (ptr == NULL || device < 0 || device >= be->ndev)
    return;
  gpu *dv = &be->dev[device];
  cudaError_t e = use_device(be, device);
  if (e == cudaSuccess) {
    if (dv->pool == NULL) {
      e = cudaFree(ptr);
    } else if (s != NULL) {
      e = cudaFreeAsync(ptr, s->native);
    } else {
      e = cudaFreeAsync(ptr, dv->internal);
      if (e == cudaSuccess)
        e = cudaStreamSynchronize(dv->internal);
    }
  }
  if (e != cudaSuccess) {
    cua_backend_err err;
    cuda_fail(be, device, &err, CUA_ERR_BACKEND, e,
              "freeing %p on CUDA device %d", ptr, dv->ordinal);
    /* After a sticky error every free fails; saying so once (set_lost())
     * is enough. */
    if (!is_lost(be, device))
      be_log(be, CUA_LOG_WARN, "%s", err.msg);
  }
}

static int cuda_host_alloc(void *state, size_t bytes, void **ptr,
                           cua_backend_err *err) {
  backend *be = state;
  cudaError_t e = cudaHostAlloc(ptr, bytes, cudaHostAllocPortable);
  if (e != cudaSuccess) {
    *ptr = NULL;
    return cuda_fail(be, -1, err, CUA_ERR_NOMEM, e,
                     "allocating %zu bytes of page-locked host memory", bytes);
  }
  return 0;
}

static void cuda_host_free(void *state, void *ptr) {
  (void)state;
  if (ptr != NULL && cudaFreeHost(ptr) != cudaSuccess)
    (void)cudaGetLastError();
}

/* ----------------------------------------------------------------- launch */

/* The kind's identifier ("FILL", "MEMCPY_D2D"...), from the shared list. */
static const char *op_name(cua_op_kind k) {
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

/* True if the core's op struct (op->size bytes) contains field @p f. */
#define OP_HAS(op, f)                                                          \
  ((op)->size >= offsetof(cua_backend_op, f) + sizeof((op)->f))

/* Whether @p st is capturing into a graph (an error counts as not). */
static int stream_capturing(cudaStream_t st) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(st, &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return cs == cudaStreamCaptureStatusActive;
}

/* Enqueues the work of @p op, without timing; returns its CUDA error. For
 * FUNC, *func_rc receives the function's own code. */
static cudaError_t enqueue(backend *be, cua_backend_stream *s,
                           const cua_backend_op *op, int *func_rc,
                           cua_backend_err *err) {
  cudaStream_t st = s->native;
  switch (op->kind) {
  case CUA_OP_FILL:
    return (cudaError_t)cua__kernel_fill((float *)op->dst, op->bytes / 4,
                                         op->value, st);
  case CUA_OP_COPY:
    return (cudaError_t)cua__kernel_copy(
        (float *)op->dst, (const float *)op->src, op->bytes / 4, st);
  case CUA_OP_AXPY:
    return (cudaError_t)cua__kernel_axpy(
        (float *)op->dst, (const float *)op->src, op->bytes / 4, op->value, st);
  case CUA_OP_SPIN:
    return (cudaError_t)cua__kernel_spin(op->spin.ns, op->spin.blocks, st);
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
    if (op->bytes == 0)
      return cudaSuccess;
    return cudaMemcpyAsync(op->dst, op->src, op->bytes, cudaMemcpyDefault, st);
  case CUA_OP_MEMCPY_D2D:
    if (op->bytes == 0)
      return cudaSuccess;
    if (op->dst_device != op->src_device && !stream_capturing(st))
      /* Direct over NVLink/PCIe when peer access is on, staged by the
       * driver otherwise. A stream capture refuses cudaMemcpyPeerAsync()
       * (cudaErrorStreamCaptureUnsupported), so into one a copy between
       * devices goes through cudaMemcpyAsync() with unified addressing
       * below, which the capture records as a memcpy node of the
       * multi-device graph. */
      return cudaMemcpyPeerAsync(op->dst, be->dev[op->dst_device].ordinal,
                                 op->src, be->dev[op->src_device].ordinal,
                                 op->bytes, st);
    return cudaMemcpyAsync(op->dst, op->src, op->bytes,
                           op->dst_device != op->src_device
                               ? cudaMemcpyDefault
                               : cudaMemcpyDeviceToDevice,
                           st);
  case CUA_OP_MEMSET:
    if (op->bytes == 0)
      return cudaSuccess;
    return cudaMemsetAsync(op->dst, op->byte_value, op->bytes, st);
  case CUA_OP_KERNEL: {
    dim3 grid = {op->grid[0], op->grid[1], op->grid[2]};
    dim3 block = {op->block[0], op->block[1], op->block[2]};
    return cudaLaunchKernel((const void *)op->kernel, grid, block,
                            op->kernel_params, op->shared_bytes, st);
  }
  case CUA_OP_FUNC:
    /* Whatever the thread's last error holds belongs to someone else; the
     * function's own unchecked failures are looked for afterwards. */
    (void)cudaGetLastError();
    err->msg[0] = '\0';
    *func_rc = op->func(op->func_ctx, (void *)st, err);
    if (*func_rc != 0)
      return cudaSuccess;
    return cudaGetLastError();
  default:
    return cudaErrorInvalidValue;
  }
}

/* Checks what CUDA cannot: that the op is one this backend runs and that
 * its sizes and devices make sense. */
static int validate(backend *be, const cua_backend_op *op,
                    cua_backend_err *err) {
  if (op == NULL || !OP_HAS(op, kind)) {
    set_err(err, "launch: no op, or an op struct too small");
    return CUA_ERR_INVAL;
  }
  switch (op->kind) {
  case CUA_OP_FILL:
  case CUA_OP_COPY:
  case CUA_OP_AXPY:
    if (op->bytes % 4 != 0) {
      set_err(err, "%s: %zu bytes is not a whole number of float32 elements",
              op_name(op->kind), op->bytes);
      return CUA_ERR_INVAL;
    }
    break;
  case CUA_OP_MEMCPY_D2D:
    if (op->dst_device < 0 || op->dst_device >= be->ndev ||
        op->src_device < 0 || op->src_device >= be->ndev) {
      set_err(err, "MEMCPY_D2D: device %d -> %d, but the backend has %d",
              op->src_device, op->dst_device, be->ndev);
      return CUA_ERR_BAD_DEVICE;
    }
    break;
  case CUA_OP_FUNC:
    if (!OP_HAS(op, func_ctx) || op->func == NULL) {
      set_err(err, "FUNC: no function");
      return CUA_ERR_INVAL;
    }
    break;
  case CUA_OP_KERNEL:
    if (!OP_HAS(op, kernel_params) || op->kernel == NULL) {
      set_err(err, "KERNEL: no kernel (use module_function())");
      return CUA_ERR_INVAL;
    }
    break;
  case CUA_OP_SPIN:
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMSET:
    break;
  default:
    set_err(err, "the CUDA backend does not run ops of kind %s (%d)",
            op_name(op->kind), (int)op->kind);
    return CUA_ERR_NOTSUP;
  }
  return 0;
}

/* During a capture, on the capturing thread: notes what @p s depends on
 * after the launch just made on it (the node it made, as a rule). A
 * failure to note it fails later capture_deps() calls, and leaves the
 * graph without nodes to update in place. */
static void log_capture_node(backend *be, cua_backend_stream *s) {
  enum cudaStreamCaptureStatus st;
  const cudaGraphNode_t *deps = NULL;
  size_t ndeps = 0;
  if (be->cap_graph != NULL) {
    const frontier *f = front_of(be, &s->front);
    deps = f->v;
    ndeps = f->n;
  } else if (cudaStreamGetCaptureInfo(s->native, &st, NULL, NULL, &deps, NULL,
                                      &ndeps) != cudaSuccess ||
             st != cudaStreamCaptureStatusActive) {
    (void)cudaGetLastError();
    ndeps = 0;
    be->cap_log_failed = 1;
  }
  if (grow(&be->cap_foff, &be->cap_foff_cap, be->ncap_nodes + 2,
           sizeof *be->cap_foff) != 0 ||
      grow(&be->cap_front, &be->cap_front_cap, be->ncap_front + ndeps,
           sizeof *be->cap_front) != 0) {
    be->cap_log_failed = 1;
    return;
  }
  if (be->ncap_nodes == 0)
    be->cap_foff[0] = 0;
  if (ndeps > 0)
    memcpy(be->cap_front + be->ncap_front, deps, ndeps * sizeof *deps);
  be->ncap_front += ndeps;
  be->cap_foff[++be->ncap_nodes] = be->ncap_front;
}

/* Whether ops' device times come from CUPTI: [backend.cuda] timestamps =
 * cupti, and CUPTI opened (at the first call, which says why not). */
static int cupti_for(backend *be) {
  if (!be->want_cupti)
    return 0;
  int st = atomic_load_explicit(&be->cupti_state, memory_order_acquire);
  if (st != 0)
    return st > 0;
  pthread_mutex_lock(&be->cupti_lock);
  st = atomic_load(&be->cupti_state);
  if (st == 0) {
    char why[256];
    if (cupti_open(&be->cupti, be->host, why, sizeof why) == 0) {
      st = 1;
    } else {
      st = -1;
      be->host->log(be->host->core, CUA_LOG_INFO,
                    "device times for observers from events, not CUPTI: %s",
                    why);
    }
    atomic_store_explicit(&be->cupti_state, st, memory_order_release);
  }
  pthread_mutex_unlock(&be->cupti_lock);
  return st > 0;
}

static void cuda_flush_times(void *state) {
  backend *be = state;
  if (atomic_load(&be->cupti_state) <= 0)
    return;
  /* CUPTI's forced flush does not wait for the device: records of work
   * still running would come without times. */
  pthread_mutex_lock(&be->streams_lock);
  for (size_t i = 0; i < be->nstreams; i++) {
    cua_backend_stream *s = be->streams[i];
    if (use_device(be, s->device) == cudaSuccess)
      cudaStreamSynchronize(s->native);
  }
  pthread_mutex_unlock(&be->streams_lock);
  (void)cudaGetLastError();
  cupti_flush(be->cupti);
}

/* A capture by nodes: @p op becomes a node of the graph after the
 * stream's frontier, which is then that node (an op with nothing to do
 * makes none and leaves the frontier). On the current device, the op's
 * stream's. */
static int launch_node(backend *be, cua_backend_stream *s,
                       const cua_backend_op *op, cua_backend_err *err) {
  frontier *f = front_of(be, &s->front);
  cudaGraph_t g = be->cap_graph;
  const cudaGraphNode_t *deps = f->n > 0 ? f->v : NULL;
  size_t nd = f->n;
  cudaGraphNode_t node = NULL;
  cudaError_t e = cudaSuccess;
  int ord = be->dev[s->device].ordinal; /* current: cuda_launch() made it */
  switch (op->kind) {
  case CUA_OP_FILL:
    e = (cudaError_t)cua__node_fill(&node, ord, g, deps, nd, (float *)op->dst,
                                    op->bytes / 4, op->value);
    break;
  case CUA_OP_COPY:
    e = (cudaError_t)cua__node_copy(&node, ord, g, deps, nd, (float *)op->dst,
                                    (const float *)op->src, op->bytes / 4);
    break;
  case CUA_OP_AXPY:
    e = (cudaError_t)cua__node_axpy(&node, ord, g, deps, nd, (float *)op->dst,
                                    (const float *)op->src, op->bytes / 4,
                                    op->value);
    break;
  case CUA_OP_SPIN:
    e = (cudaError_t)cua__node_spin(&node, ord, g, deps, nd, op->spin.ns,
                                    op->spin.blocks);
    break;
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMCPY_D2D:
    if (op->bytes > 0)
      e = cudaGraphAddMemcpyNode1D(
          &node, g, deps, nd, op->dst, op->src, op->bytes,
          op->kind == CUA_OP_MEMCPY_D2D && op->dst_device == op->src_device
              ? cudaMemcpyDeviceToDevice
              : cudaMemcpyDefault);
    break;
  case CUA_OP_MEMSET:
    if (op->bytes > 0) {
      struct cudaMemsetParams p;
      memset(&p, 0, sizeof p);
      p.dst = op->dst;
      p.value = (unsigned char)op->byte_value;
      p.elementSize = 1;
      p.width = op->bytes;
      p.height = 1;
      e = cudaGraphAddMemsetNode(&node, g, deps, nd, &p);
    }
    break;
  case CUA_OP_KERNEL: {
    struct cudaKernelNodeParams p;
    memset(&p, 0, sizeof p);
    p.func = op->kernel;
    p.gridDim = (dim3){op->grid[0], op->grid[1], op->grid[2]};
    p.blockDim = (dim3){op->block[0], op->block[1], op->block[2]};
    p.sharedMemBytes = (unsigned)op->shared_bytes;
    p.kernelParams = op->kernel_params;
    e = cudaGraphAddKernelNode(&node, g, deps, nd, &p);
    break;
  }
  default:
    set_err(err, "%s cannot be a node of a CUDA graph", op_name(op->kind));
    return CUA_ERR_CAPTURE;
  }
  if (e != cudaSuccess)
    return cuda_fail(be, s->device, err, CUA_ERR_LAUNCH, e,
                     "%s: adding its node to a CUDA graph on device %d",
                     op_name(op->kind), be->dev[s->device].ordinal);
  if (node != NULL) {
    f->n = 0;
    if (front_add(f, &node, 1) != 0) {
      be->cap_log_failed = 1;
      set_err(err, "out of host memory");
      return CUA_ERR_NOMEM;
    }
  }
  log_capture_node(be, s);
  return 0;
}

static int cuda_launch(void *state, cua_backend_stream *s,
                       const cua_backend_op *op, cua_backend_err *err) {
  backend *be = state;
  cua_backend_err local;
  if (err == NULL)
    err = &local;
  int rc = validate(be, op, err);
  if (rc != 0)
    return rc;
  if (is_lost(be, s->device))
    return lost_err(be, s->device, err);
  gpu *dv = &be->dev[s->device];
  cudaError_t e = use_device(be, s->device);
  if (e != cudaSuccess)
    return cuda_fail(be, s->device, err, CUA_ERR_LAUNCH, e,
                     "%s: selecting CUDA device %d", op_name(op->kind),
                     dv->ordinal);
  /* Into a capture, a copy between devices is a memcpy node, which reads
   * the pool memory of the other device directly (enqueue()): without
   * peer access that fails, so it is refused here with the reason. */
  if (op->kind == CUA_OP_MEMCPY_D2D && op->bytes > 0 &&
      op->dst_device != op->src_device &&
      !(cuda_can_access(be, op->dst_device, op->src_device) &&
        cuda_can_access(be, op->src_device, op->dst_device)) &&
      (tl_cap_be == be || stream_capturing(s->native))) {
    set_err(err,
            "MEMCPY_D2D from CUDA device %d to %d cannot be captured: peer "
            "access between them is off",
            be->dev[op->src_device].ordinal, be->dev[op->dst_device].ordinal);
    return CUA_ERR_CAPTURE;
  }

  /* A capture records the op, it does not run it: nothing to time. */
  int cap = tl_cap_be == be; /* the capturing thread launches into it */
  if (cap && be->cap_graph != NULL)
    return launch_node(be, s, op, err);
  uint64_t *duration = OP_HAS(op, duration_ns) ? op->duration_ns : NULL;
  if (cap)
    duration = NULL;
  pending_timing t = {op->seq, NULL, NULL, duration, NULL, NULL, NULL};
  /* Device times for observers from CUPTI, for an op that makes one
   * device activity: no event then. */
  /* (an op with no bytes makes no device activity, but a spin or a
   * kernel) */
  int by_cupti =
      OP_HAS(op, op) && op->op != 0 && !cap && op->kind != CUA_OP_FUNC &&
      (op->bytes > 0 || op->kind == CUA_OP_SPIN || op->kind == CUA_OP_KERNEL) &&
      cupti_for(be);
  uint64_t *start_out = duration != NULL && OP_HAS(op, start_ns) && !by_cupti
                            ? op->start_ns
                            : NULL;
  uint64_t *end_out =
      OP_HAS(op, end_ns) && !cap && !by_cupti ? op->end_ns : NULL;
  if (start_out != NULL || end_out != NULL) {
    if (get_anchor(be, s->device, &t.anchor) == cudaSuccess) {
      t.start_out = start_out;
      t.end_out = end_out;
    } else { /* left 0: the core estimates them */
      (void)cudaGetLastError();
    }
  }
  /* Timed: an event pair; only the end wanted: one event. */
  int timed = duration != NULL || t.end_out != NULL;
  if (timed) {
    e = cudaSuccess;
    if (duration != NULL)
      e = pool_get(be, s->device, &dv->timing_events, &t.start);
    if (e == cudaSuccess)
      e = pool_get(be, s->device, &dv->timing_events, &t.end);
    if (e == cudaSuccess && t.start != NULL)
      e = cudaEventRecord(t.start, s->native);
    if (e != cudaSuccess) {
      if (t.start != NULL)
        pool_put(&dv->timing_events, t.start);
      if (t.end != NULL)
        pool_put(&dv->timing_events, t.end);
      anchor_put(be, s->device, t.anchor);
      return cuda_fail(be, s->device, err, CUA_ERR_LAUNCH, e,
                       "%s: recording its start event", op_name(op->kind));
    }
  }

  int func_rc = 0;
  if (by_cupti) /* (failing, the op has no device times: estimated) */
    by_cupti = cupti_begin(be->cupti, op->op) == 0;
  e = enqueue(be, s, op, &func_rc, err);
  if (by_cupti)
    cupti_end(be->cupti, func_rc == 0 && e == cudaSuccess);
  if (func_rc == 0 && e == cudaSuccess && timed)
    e = cudaEventRecord(t.end, s->native);
  if (func_rc != 0 || e != cudaSuccess) {
    /* The start event may already be recorded; a recorded event that is
     * never waited for is harmless, and re-recording it later is allowed. */
    if (timed) {
      if (t.start != NULL)
        pool_put(&dv->timing_events, t.start);
      pool_put(&dv->timing_events, t.end);
    }
    anchor_put(be, s->device, t.anchor);
    if (func_rc != 0) {
      if (err != NULL && err->msg[0] == '\0')
        set_err(err, "FUNC: the stream function failed (%d)", func_rc);
      return func_rc;
    }
    if (op->kind == CUA_OP_FUNC)
      return cuda_fail(be, s->device, err, CUA_ERR_LAUNCH, e,
                       "FUNC on CUDA device %d: the stream function returned "
                       "0 but left a CUDA error",
                       dv->ordinal);
    if (op->kind == CUA_OP_KERNEL)
      return cuda_fail(be, s->device, err, CUA_ERR_LAUNCH, e,
                       "KERNEL on CUDA device %d (grid %ux%ux%u, block "
                       "%ux%ux%u, %zu bytes shared)",
                       dv->ordinal, op->grid[0], op->grid[1], op->grid[2],
                       op->block[0], op->block[1], op->block[2],
                       op->shared_bytes);
    return cuda_fail(be, s->device, err, CUA_ERR_LAUNCH, e,
                     "%s of %zu bytes on CUDA device %d", op_name(op->kind),
                     op->bytes, dv->ordinal);
  }
  if (cap)
    log_capture_node(be, s);
  if (timed) {
    pthread_mutex_lock(&s->lock);
    int full = fifo_push(&s->timings, &t);
    pthread_mutex_unlock(&s->lock);
    if (full != 0) {
      /* The op is enqueued; only its times are lost. */
      if (t.start != NULL)
        pool_put(&dv->timing_events, t.start);
      pool_put(&dv->timing_events, t.end);
      anchor_put(be, s->device, t.anchor);
      if (duration != NULL)
        *duration = 0;
    }
  }
  return 0;
}

/* ------------------------------------------------------------- completion */

/* Wakes the completion thread if it sleeps with nothing outstanding. */
static void signal_idle_waiter(backend *be) {
  if (atomic_load(&be->idle_sleeping)) {
    pthread_mutex_lock(&be->wait_lock);
    pthread_cond_broadcast(&be->wait_cond);
    pthread_mutex_unlock(&be->wait_lock);
  }
}

static void CUDART_CB host_mark(void *arg) {
  callback_mark *m = arg;
  cua_backend_stream *s = m->s;
  backend *be = s->be;
  /* Host functions of one stream run in order, so a plain store keeps the
   * value monotonic. No CUDA call is allowed here. */
  atomic_store_explicit(&s->reached, m->value, memory_order_release);
  free(m);
  pthread_mutex_lock(&be->wait_lock);
  pthread_cond_broadcast(&be->wait_cond);
  pthread_mutex_unlock(&be->wait_lock);
}

static int cuda_mark(void *state, cua_backend_stream *s, uint64_t value) {
  backend *be = state;
  gpu *dv = &be->dev[s->device];
  if (is_lost(be, s->device))
    return CUA_ERR_DEVICE_LOST;
  /* The driver call of flags mode runs in the current context, and the
   * runtime calls want the stream's device current as well. */
  cudaError_t e = use_device(be, s->device);
  if (e != cudaSuccess) {
    cua_backend_err err;
    int rc = cuda_fail(be, s->device, &err, CUA_ERR_BACKEND, e,
                       "mark %llu: selecting CUDA device %d",
                       (unsigned long long)value, dv->ordinal);
    be_log(be, CUA_LOG_ERROR, "%s", err.msg);
    return rc;
  }
  switch (be->mode) {
  case COMPLETION_FLAGS: {
    CUresult r = be->write64((CUstream)s->native, s->flag_dev, value, 0);
    if (r != CUDA_SUCCESS) {
      char msg[200];
      if (is_sticky((int)r))
        set_lost(be, s->device, (cudaError_t)r);
      be_log(be, CUA_LOG_ERROR, "mark %llu on CUDA device %d: %s",
             (unsigned long long)value, dv->ordinal,
             cu_error_text(be, r, msg, sizeof msg));
      return is_sticky((int)r) ? CUA_ERR_DEVICE_LOST : CUA_ERR_BACKEND;
    }
    break;
  }
  case COMPLETION_EVENTS: {
    pending_mark m = {value, NULL};
    e = pool_get(be, s->device, &dv->mark_events, &m.ev);
    if (e == cudaSuccess)
      e = cudaEventRecord(m.ev, s->native);
    if (e != cudaSuccess) {
      if (m.ev != NULL)
        pool_put(&dv->mark_events, m.ev);
      break;
    }
    pthread_mutex_lock(&s->lock);
    int full = fifo_push(&s->marks, &m);
    pthread_mutex_unlock(&s->lock);
    if (full != 0) {
      pool_put(&dv->mark_events, m.ev);
      return CUA_ERR_NOMEM;
    }
    break;
  }
  case COMPLETION_CALLBACK: {
    callback_mark *m = malloc(sizeof *m);
    if (m == NULL)
      return CUA_ERR_NOMEM;
    m->s = s;
    m->value = value;
    e = cudaLaunchHostFunc(s->native, host_mark, m);
    if (e != cudaSuccess)
      free(m);
    break;
  }
  }
  if (e != cudaSuccess) {
    cua_backend_err err;
    int rc = cuda_fail(be, s->device, &err, CUA_ERR_BACKEND, e,
                       "mark %llu on CUDA device %d", (unsigned long long)value,
                       dv->ordinal);
    be_log(be, CUA_LOG_ERROR, "%s", err.msg);
    return rc;
  }
  atomic_store(&s->marked, value);
  signal_idle_waiter(be);
  return 0;
}

/* Asks CUDA whether stream @p s hit an error. Returns 1 if its device is
 * (now) lost. */
static int check_sticky(backend *be, cua_backend_stream *s) {
  cudaError_t e = cudaStreamQuery(s->native);
  if (e == cudaSuccess || e == cudaErrorNotReady)
    return is_lost(be, s->device);
  (void)cudaGetLastError();
  /* A stream reports errors of work already enqueued, that is device
   * faults, which CUDA makes sticky. An error outside the documented list
   * is asked about once more: a sticky one comes back, while a transient
   * one (if a driver ever reports such a thing here) must not condemn the
   * device. */
  if (!is_sticky((int)e)) {
    cudaError_t again = cudaStreamQuery(s->native);
    if (again == cudaSuccess || again == cudaErrorNotReady) {
      be_log(be, CUA_LOG_WARN,
             "a stream of CUDA device %d reported %s once; ignored",
             be->dev[s->device].ordinal, cudaGetErrorName(e));
      return is_lost(be, s->device);
    }
    (void)cudaGetLastError();
    e = again;
  }
  set_lost(be, s->device, e);
  return 1;
}

/* Turns the elapsed time of a timed op into nanoseconds at *out. */
static int finish_timing(backend *be, cua_backend_stream *s,
                         const pending_timing *t) {
  float ms = 0;
  /* Only the end wanted: elapsed from the anchor, which completed before
   * the end event was recorded. */
  cudaError_t e = cudaEventElapsedTime(
      &ms, t->start != NULL ? t->start : t->anchor->ev, t->end);
  if (e == cudaErrorNotReady) {
    /* The mark after the op was seen, so the end event is complete on the
     * device; the event's own status may trail the flag by a moment. */
    (void)cudaGetLastError();
    e = cudaEventSynchronize(t->end);
    if (e == cudaSuccess)
      e = cudaEventElapsedTime(&ms, t->start != NULL ? t->start : t->anchor->ev,
                               t->end);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (is_sticky((int)e)) {
      set_lost(be, s->device, e);
      return -1;
    }
    ms = 0;
  }
  if (t->start == NULL) {
    if (e == cudaSuccess && ms >= 0)
      *t->end_out = t->anchor->ns + (uint64_t)((double)ms * 1e6);
    return 0;
  }
  *t->out = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
  if (t->end_out != NULL && e == cudaSuccess) {
    float at = 0;
    if (cudaEventElapsedTime(&at, t->anchor->ev, t->end) == cudaSuccess &&
        at >= 0)
      *t->end_out = t->anchor->ns + (uint64_t)((double)at * 1e6);
    else
      (void)cudaGetLastError();
  }
  if (t->start_out != NULL && e == cudaSuccess) {
    /* The anchor completed before the start event was recorded. */
    float at = 0;
    if (cudaEventElapsedTime(&at, t->anchor->ev, t->start) == cudaSuccess &&
        at >= 0)
      *t->start_out = t->anchor->ns + (uint64_t)((double)at * 1e6);
    else
      (void)cudaGetLastError();
  }
  return 0;
}

static int cuda_progress(void *state, cua_backend_stream *s, uint64_t *value,
                         cua_backend_err *err) {
  backend *be = state;
  gpu *dv = &be->dev[s->device];
  uint64_t seen = atomic_load(&s->seen);
  uint64_t v = seen;
  *value = seen;
  if (is_lost(be, s->device))
    goto lost;

  switch (be->mode) {
  case COMPLETION_FLAGS:
    /* A device fault is a sticky error of the whole context: the driver
     * stops its streams, so a mark enqueued after a faulted op is never
     * written, and a faulted op is never reported complete
     * (check_cuda's device_fault_is_reported_as_lost asserts it on every
     * GPU run). The stream is not asked about errors on each advance: that
     * query sat on every completion's path and took the driver's lock
     * against concurrent launches (the latency p50 went from about 1.8x to
     * 1.4x raw launch + synchronize without it, median of 4 runs on an
     * H100). A stream whose marks stop coming is asked below, once per
     * STICKY_CHECK_NS, so a fault is reported, never waited for. */
    v = __atomic_load_n(s->flag, __ATOMIC_ACQUIRE);
    break;
  case COMPLETION_CALLBACK:
    v = atomic_load_explicit(&s->reached, memory_order_acquire);
    break;
  case COMPLETION_EVENTS: {
    pending_mark *m;
    pthread_mutex_lock(&s->lock);
    while ((m = fifo_front(&s->marks)) != NULL) {
      cudaError_t e = cudaEventQuery(m->ev);
      if (e != cudaSuccess && e != cudaErrorNotReady && !is_sticky((int)e)) {
        /* As in check_sticky(): only an error that stays is believed. */
        (void)cudaGetLastError();
        e = cudaEventQuery(m->ev);
      }
      if (e == cudaErrorNotReady)
        break;
      if (e != cudaSuccess) {
        pthread_mutex_unlock(&s->lock);
        (void)cudaGetLastError();
        set_lost(be, s->device, e);
        goto lost;
      }
      v = m->value;
      pool_put(&dv->mark_events, m->ev);
      fifo_pop(&s->marks);
    }
    pthread_mutex_unlock(&s->lock);
    break;
  }
  }
  if (v < seen)
    v = seen; /* never report going back */

  /* A faulted stream never reaches its marks, and in flags and callback
   * modes nothing else would say so: ask CUDA now and then. */
  if (v < atomic_load(&s->marked)) {
    uint64_t now = now_ns();
    if (now - s->last_check_ns >= STICKY_CHECK_NS) {
      s->last_check_ns = now;
      if (check_sticky(be, s))
        goto lost;
    }
  }

  /* Timed ops up to v, and past it those whose end event completed: the
   * stream's word lags its ops where marks are batched, and the core
   * orders an op after those it waited for by their times
   * (complete.c). */
  pending_timing *t;
  pthread_mutex_lock(&s->lock);
  while ((t = fifo_front(&s->timings)) != NULL) {
    if (t->seq > v) {
      if (t->end_out == NULL && t->start_out == NULL)
        break;
      cudaError_t q = cudaEventQuery(t->end);
      if (q != cudaSuccess) {
        /* (a fault shows through the stream's own checks) */
        (void)cudaGetLastError();
        break;
      }
    }
    int rc = finish_timing(be, s, t);
    if (t->start != NULL)
      pool_put(&dv->timing_events, t->start);
    pool_put(&dv->timing_events, t->end);
    anchor_put(be, s->device, t->anchor);
    fifo_pop(&s->timings);
    if (rc != 0) {
      pthread_mutex_unlock(&s->lock);
      goto lost;
    }
  }
  pthread_mutex_unlock(&s->lock);

  atomic_store(&s->seen, v);
  *value = v;
  return 0;

lost:
  atomic_store(&s->lost_reported, 1);
  return lost_err(be, s->device, err);
}

static int cuda_poll_error(void *state, cua_backend_stream *s, uint64_t *seq,
                           int *code, cua_backend_err *err) {
  /* CUDA reports a failed launch at once (launch() returns it) and a
   * device fault as a sticky error of the whole context (progress()
   * returns CUA_ERR_DEVICE_LOST): there is never a per-op asynchronous
   * failure to hand out. */
  (void)state;
  (void)s;
  (void)seq;
  (void)code;
  (void)err;
  return 0;
}

/* What one look at the streams found. */
enum scan_result { SCAN_IDLE, SCAN_OUTSTANDING, SCAN_CHANGED };

/* Whether progress() would now report something new for @p s. */
static int stream_changed(backend *be, cua_backend_stream *s, uint64_t seen) {
  switch (be->mode) {
  case COMPLETION_FLAGS:
    return __atomic_load_n(s->flag, __ATOMIC_ACQUIRE) > seen;
  case COMPLETION_CALLBACK:
    return atomic_load_explicit(&s->reached, memory_order_acquire) > seen;
  case COMPLETION_EVENTS: {
    int changed = 0;
    pthread_mutex_lock(&s->lock);
    pending_mark *m = fifo_front(&s->marks);
    /* Any answer but "not ready" is news: done, or an error for
     * progress() to report. */
    if (m != NULL)
      changed = cudaEventQuery(m->ev) != cudaErrorNotReady;
    pthread_mutex_unlock(&s->lock);
    return changed;
  }
  }
  return 0;
}

static enum scan_result scan(backend *be, int sticky) {
  enum scan_result r = SCAN_IDLE;
  pthread_mutex_lock(&be->streams_lock);
  for (size_t i = 0; i < be->nstreams && r != SCAN_CHANGED; i++) {
    cua_backend_stream *s = be->streams[i];
    uint64_t seen = atomic_load(&s->seen);
    if (atomic_load(&s->marked) <= seen || atomic_load(&s->lost_reported))
      continue;
    r = SCAN_OUTSTANDING;
    if (stream_changed(be, s, seen) || is_lost(be, s->device) ||
        (sticky && check_sticky(be, s)))
      r = SCAN_CHANGED;
  }
  pthread_mutex_unlock(&be->streams_lock);
  return r;
}

/* Sleeps on wait_cond until @p until (monotonic ns), a signal, or a
 * pending wake(). Returns 1 if a wake() was consumed. Called with wait_lock
 * held. */
static int sleep_locked(backend *be, uint64_t until) {
  if (be->wake_pending) {
    be->wake_pending = 0;
    return 1;
  }
  struct timespec ts = {(time_t)(until / 1000000000ull),
                        (long)(until % 1000000000ull)};
  pthread_cond_timedwait(&be->wait_cond, &be->wait_lock, &ts);
  if (be->wake_pending) {
    be->wake_pending = 0;
    return 1;
  }
  return 0;
}

/* Sleeps with nothing outstanding, until a mark, a wake() or @p deadline. */
static void idle_sleep(backend *be, uint64_t deadline) {
  pthread_mutex_lock(&be->wait_lock);
  atomic_store(&be->idle_sleeping, 1);
  /* mark() stores its value before it looks at idle_sleeping, and this
   * looks at the values after storing idle_sleeping (both sequentially
   * consistent), so a mark either sees the sleeper or is seen here; and it
   * signals under wait_lock, so the signal cannot fall between this check
   * and the wait. */
  if (scan(be, 0) == SCAN_IDLE)
    sleep_locked(be, deadline);
  atomic_store(&be->idle_sleeping, 0);
  pthread_mutex_unlock(&be->wait_lock);
}

static int take_wake(backend *be) {
  int w;
  pthread_mutex_lock(&be->wait_lock);
  w = be->wake_pending;
  be->wake_pending = 0;
  pthread_mutex_unlock(&be->wait_lock);
  return w;
}

static int wait_callback(backend *be, uint64_t deadline) {
  pthread_mutex_lock(&be->wait_lock);
  for (;;) {
    /* Host functions store their value and then signal under wait_lock,
     * so looking under the lock before each sleep loses no signal. */
    enum scan_result r = scan(be, 0);
    uint64_t now = now_ns();
    if (r == SCAN_CHANGED || now >= deadline)
      break;
    if (r == SCAN_IDLE) {
      /* A mark enqueued after the scan may miss idle_sleeping and not
       * signal; that costs nothing here, because its host function signals
       * when the mark is reached, which is the moment that matters. */
      atomic_store(&be->idle_sleeping, 1);
      int woken = sleep_locked(be, deadline);
      atomic_store(&be->idle_sleeping, 0);
      if (woken)
        break;
      continue;
    }
    /* Outstanding marks: wake up every STICKY_CHECK_NS to make sure the
     * stream has not faulted, since a faulted stream runs no host
     * function. */
    uint64_t until = now + STICKY_CHECK_NS;
    if (sleep_locked(be, until < deadline ? until : deadline))
      break;
    pthread_mutex_unlock(&be->wait_lock);
    r = scan(be, 1);
    pthread_mutex_lock(&be->wait_lock);
    if (r == SCAN_CHANGED)
      break;
  }
  pthread_mutex_unlock(&be->wait_lock);
  return 0;
}

static int cuda_wait(void *state, uint64_t timeout_ns) {
  backend *be = state;
  uint64_t start = now_ns();
  uint64_t deadline =
      timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;

#ifdef __linux__
  /* The sleep-poll phase sleeps 2 us at first; the default timer slack
   * (50 us) would make that 50. wait() runs on the completion thread only,
   * so this changes that thread alone, once. */
  static _Thread_local int slack_set;
  if (!slack_set) {
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    slack_set = 1;
  }
#endif

  if (be->mode == COMPLETION_CALLBACK)
    return wait_callback(be, deadline);

  /* Spin phase: the cheapest way to see a mark that lands within a few
   * microseconds, at the price of one busy core for spin_us. With no mark
   * outstanding it spins too: the core waits only with work in flight, so
   * a mark is on its way (its executor is launching), and sleeping now
   * would cost that mark a futex call to wake this thread. */
  uint64_t now = start;
  while (now - start < be->spin_ns && now < deadline) {
    enum scan_result r = scan(be, 0);
    if (r == SCAN_CHANGED)
      return 0;
    if (take_wake(be))
      return 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    now = now_ns();
  }

  /* Sleep-poll phase, with a backoff that bounds both the latency added to
   * a completion (at most ~200 us) and the CPU spent polling. */
  uint64_t backoff = BACKOFF_MIN_NS;
  uint64_t last_sticky = now;
  for (;;) {
    now = now_ns();
    int sticky = now - last_sticky >= STICKY_CHECK_NS;
    if (sticky)
      last_sticky = now;
    enum scan_result r = scan(be, sticky);
    if (r == SCAN_CHANGED)
      return 0;
    if (r == SCAN_IDLE) {
      idle_sleep(be, deadline);
      return 0;
    }
    if (now >= deadline)
      return 0;
    if (atomic_load_explicit(&be->waited, memory_order_relaxed)) {
      /* A program thread waits: poll on, as a synchronize would. */
      if (take_wake(be))
        return 0;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      backoff = BACKOFF_MIN_NS;
      continue;
    }
    uint64_t until = now + backoff;
    if (until > deadline)
      until = deadline;
    pthread_mutex_lock(&be->wait_lock);
    int woken = sleep_locked(be, until);
    pthread_mutex_unlock(&be->wait_lock);
    if (woken)
      return 0;
    backoff = backoff * 2 < BACKOFF_MAX_NS ? backoff * 2 : BACKOFF_MAX_NS;
  }
}

static void cuda_wake(void *state) {
  backend *be = state;
  pthread_mutex_lock(&be->wait_lock);
  be->wake_pending = 1;
  pthread_cond_broadcast(&be->wait_cond);
  pthread_mutex_unlock(&be->wait_lock);
}

/* ABI 1.10. A thread starts waiting: a wait() asleep in its sleep-poll
 * phase wakes and polls on without sleeping until the last waiter is done,
 * and says so, so that the waiters watch their futures without sleeping
 * too. (The callback mode is woken by its host functions anyway.) */
static int cuda_waited(void *state, int waited) {
  backend *be = state;
  if (!be->waited_spin || be->mode == COMPLETION_CALLBACK)
    return 0;
  atomic_store_explicit(&be->waited, waited, memory_order_relaxed);
  if (waited)
    cuda_wake(be);
  return waited;
}

/* ---------------------------------------------------------------- modules */

static int cuda_module_load(void *state, const void *image, size_t bytes,
                            cua_backend_module **out, cua_backend_err *err) {
  backend *be = state;
  *out = NULL;
  if (image == NULL || bytes == 0) {
    set_err(err, "module_load: an empty image");
    return CUA_ERR_INVAL;
  }
  cua_backend_module *m = calloc(1, sizeof *m);
  /* PTX must be NUL-terminated and the caller's image need not be; one
   * byte more does not disturb a cubin or fatbin, which carry their own
   * sizes. The copy lives as long as the library, since with lazy loading
   * CUDA may read the image again when a kernel is first used. */
  if (m != NULL)
    m->image = malloc(bytes + 1);
  if (m == NULL || m->image == NULL) {
    free(m);
    set_err(err, "out of memory");
    return CUA_ERR_NOMEM;
  }
  memcpy(m->image, image, bytes);
  ((char *)m->image)[bytes] = '\0';

  char log[1024] = "";
  enum cudaJitOption opts[] = {cudaJitErrorLogBuffer,
                               cudaJitErrorLogBufferSizeBytes};
  void *vals[] = {log, (void *)(uintptr_t)sizeof log};
  cudaError_t e =
      cudaLibraryLoadData(&m->lib, m->image, opts, vals, 2, NULL, NULL, 0);
  if (e != cudaSuccess) {
    free(m->image);
    free(m);
    log[sizeof log - 1] = '\0';
    size_t n = strlen(log);
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
      log[--n] = '\0';
    return cuda_fail(be, -1, err, CUA_ERR_BACKEND, e,
                     "loading a CUDA module of %zu bytes%s%s%s", bytes,
                     n ? " (JIT log: " : "", n ? log : "", n ? ")" : "");
  }
#if CUDART_VERSION >= 12050
  /* With lazy loading (the default since CUDA 12.2) the image may not be
   * looked at until a kernel is used; counting the kernels reads it now, so
   * a bad image fails here, where the caller expects it, and not at some
   * later launch. */
  unsigned nkernels = 0;
  e = cudaLibraryGetKernelCount(&nkernels, m->lib);
  if (e != cudaSuccess) {
    cudaLibraryUnload(m->lib);
    free(m->image);
    free(m);
    return cuda_fail(be, -1, err, CUA_ERR_BACKEND, e,
                     "reading a CUDA module of %zu bytes", bytes);
  }
#endif
  *out = m;
  return 0;
}

static void cuda_module_unload(void *state, cua_backend_module *m) {
  (void)state;
  if (m == NULL)
    return;
  if (cudaLibraryUnload(m->lib) != cudaSuccess)
    (void)cudaGetLastError();
  free(m->image);
  free(m);
}

static int cuda_module_function(void *state, cua_backend_module *m,
                                const char *name, void **kernel,
                                cua_backend_err *err) {
  backend *be = state;
  cudaKernel_t k = NULL;
  *kernel = NULL;
  if (m == NULL || name == NULL) {
    set_err(err, "module_function: no module or no name");
    return CUA_ERR_INVAL;
  }
  cudaError_t e = cudaLibraryGetKernel(&k, m->lib, name);
  if (e != cudaSuccess)
    return cuda_fail(be, -1, err, CUA_ERR_BACKEND, e,
                     "looking up kernel '%s' in a CUDA module", name);
  /* A cudaKernel_t is context-independent: cudaLaunchKernel() accepts it
   * in place of a function pointer on any device (CUDA 12+). */
  *kernel = (void *)k;
  return 0;
}

/* ----------------------------------------------------------------- graphs */

/* A captured schedule: the CUDA graph (kept for updates) and its
 * executable form. */
struct cua_backend_graph {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  int device; /* of the stream it was captured on */
  /* graph's node of each launch() of its capture, NULL where unknown; NULL
   * as a whole when the log failed (then nothing is updated in place). */
  cudaGraphNode_t *nodes;
  size_t nnodes;
};

/* Hands the capture's log of nodes to @p g (replacing its own): launch
 * k's node where it made one (its stream then depended on that one node
 * alone). */
static void take_nodes(backend *be, cua_backend_graph *g) {
  free(g->nodes);
  g->nodes = NULL;
  g->nnodes = 0;
  if (!be->cap_log_failed && be->ncap_nodes > 0) {
    g->nodes = malloc(be->ncap_nodes * sizeof *g->nodes);
    if (g->nodes != NULL) {
      for (size_t k = 0; k < be->ncap_nodes; k++)
        g->nodes[k] = be->cap_foff[k + 1] - be->cap_foff[k] == 1
                          ? be->cap_front[be->cap_foff[k]]
                          : NULL;
      g->nnodes = be->ncap_nodes;
    }
  }
  be->ncap_nodes = 0;
  be->ncap_front = 0;
}

/* The next launch on @p s (in the capture) depends on what launches
 * @p launches of the capture left their streams depending on. */
static int cuda_capture_deps(void *state, cua_backend_stream *s,
                             const size_t *launches, size_t n,
                             cua_backend_err *err) {
  backend *be = state;
  if (be->cap_log_failed) {
    set_err(err, "the capture's log of nodes failed (out of host memory, or "
                 "a stream left the capture)");
    return CUA_ERR_NOMEM;
  }
  /* By nodes, the stream's frontier becomes the set; in a stream capture
   * it is gathered aside and handed to CUDA. A launch that made no node
   * left what came before it, which may be another's node too: each node
   * goes in once (front_add()). */
  frontier *f = be->cap_graph != NULL ? front_of(be, &s->front) : &be->cap_deps;
  f->n = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = launches[i];
    if (k >= be->ncap_nodes) {
      set_err(err,
              "capture_deps: launch %zu of the capture is not made yet "
              "(%zu made)",
              k, be->ncap_nodes);
      return CUA_ERR_INVAL;
    }
    if (front_add(f, be->cap_front + be->cap_foff[k],
                  be->cap_foff[k + 1] - be->cap_foff[k]) != 0) {
      be->cap_log_failed = 1;
      set_err(err, "out of host memory");
      return CUA_ERR_NOMEM;
    }
  }
  if (be->cap_graph != NULL)
    return 0;
  cudaError_t e = use_device(be, s->device);
  if (e == cudaSuccess)
    e = cudaStreamUpdateCaptureDependencies(s->native, f->n > 0 ? f->v : NULL,
                                            NULL, f->n,
                                            cudaStreamSetCaptureDependencies);
  if (e != cudaSuccess)
    return cuda_fail(be, s->device, err, CUA_ERR_BACKEND, e,
                     "setting a captured op's %zu dependencies on CUDA "
                     "device %d",
                     f->n, be->dev[s->device].ordinal);
  return 0;
}

static int cuda_capture_begin(void *state, cua_backend_stream *s,
                              cua_backend_err *err) {
  backend *be = state;
  if (is_lost(be, s->device))
    return lost_err(be, s->device, err);
  cudaError_t e = use_device(be, s->device);
  /* Relaxed: the core's other threads keep allocating and launching on
   * other streams meanwhile; nothing else touches the graph's streams. By
   * nodes, no stream captures: the capturing thread's launches, event
   * records and waits build the graph (tl_cap_be). */
  if (e == cudaSuccess && be->capture_streams)
    e = cudaStreamBeginCapture(s->native, cudaStreamCaptureModeRelaxed);
  else if (e == cudaSuccess)
    e = cudaGraphCreate(&be->cap_graph, 0);
  if (e != cudaSuccess)
    return cuda_fail(be, s->device, err, CUA_ERR_BACKEND, e,
                     "beginning a capture on CUDA device %d",
                     be->dev[s->device].ordinal);
  be->ncap_nodes = 0;
  be->ncap_front = 0;
  be->cap_log_failed = 0;
  be->cap_gen++;
  tl_cap_be = be;
  tl_cap_ordinal = be->dev[s->device].ordinal;
  return 0;
}

static int cuda_capture_end(void *state, cua_backend_stream *s,
                            cua_backend_graph *into, cua_backend_graph **out,
                            cua_backend_err *err) {
  backend *be = state;
  *out = NULL;
  cudaGraph_t gr = NULL;
  tl_cap_be = NULL;
  cudaError_t e = use_device(be, s->device);
  if (be->cap_graph != NULL) {
    gr = be->cap_graph;
    be->cap_graph = NULL;
  } else if (e == cudaSuccess) {
    e = cudaStreamEndCapture(s->native, &gr);
  }
  if (e != cudaSuccess) {
    if (gr != NULL)
      cudaGraphDestroy(gr);
    (void)cudaGetLastError();
    return cuda_fail(be, s->device, err, CUA_ERR_BACKEND, e,
                     "ending a stream capture on CUDA device %d",
                     be->dev[s->device].ordinal);
  }
  if (into != NULL) {
    cudaGraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    e = cudaGraphExecUpdate(into->exec, gr, &info);
    if (e != cudaSuccess) {
      cudaGraphDestroy(gr);
      (void)cudaGetLastError();
      set_err(err,
              "cudaGraphExecUpdate: %s (result %d): the captured graph's "
              "structure changed",
              cudaGetErrorString(e), (int)info.result);
      return CUA_ERR_STRUCTURE;
    }
    cudaGraphDestroy(into->graph);
    into->graph = gr;
    take_nodes(be, into);
    *out = into;
    return 0;
  }
  cua_backend_graph *g = calloc(1, sizeof *g);
  if (g == NULL) {
    cudaGraphDestroy(gr);
    set_err(err, "out of memory");
    return CUA_ERR_NOMEM;
  }
  g->graph = gr;
  g->device = s->device;
  take_nodes(be, g);
  /* Not uploaded here: an upload is ordered on its own stream only, and a
   * launch on another stream is ordered behind earlier launches of the
   * graph, not behind its upload (cudaGraphLaunch()); the first launch
   * uploads it, in its own stream's order. */
  e = cudaGraphInstantiateWithFlags(&g->exec, gr, 0);
  if (e != cudaSuccess) {
    if (g->exec != NULL)
      cudaGraphExecDestroy(g->exec);
    cudaGraphDestroy(gr);
    free(g);
    int code =
        e == cudaErrorMemoryAllocation ? CUA_ERR_DEVICE_OOM : CUA_ERR_BACKEND;
    return cuda_fail(be, s->device, err, code, e,
                     "instantiating a graph on CUDA device %d",
                     be->dev[s->device].ordinal);
  }
  *out = g;
  return 0;
}

static int cuda_graph_launch(void *state, cua_backend_graph *g,
                             cua_backend_stream *s, cua_backend_err *err) {
  backend *be = state;
  if (is_lost(be, s->device))
    return lost_err(be, s->device, err);
  cudaError_t e = use_device(be, s->device);
  if (e == cudaSuccess)
    e = cudaGraphLaunch(g->exec, s->native);
  if (e != cudaSuccess)
    return cuda_fail(be, s->device, err, CUA_ERR_LAUNCH, e,
                     "launching a graph on CUDA device %d",
                     be->dev[s->device].ordinal);
  return 0;
}

static void cuda_graph_destroy(void *state, cua_backend_graph *g) {
  backend *be = state;
  if (g == NULL)
    return;
  if (use_device(be, g->device) == cudaSuccess) {
    cudaGraphExecDestroy(g->exec);
    cudaGraphDestroy(g->graph);
  }
  free(g->nodes);
  free(g);
}

/* Reads a node's parameters of type T from @p from and sets them on @p to,
 * in the executable graph and in its template (for a later capture's
 * cudaGraphExecUpdate()). */
#define COPY_NODE_PARAMS(T, get, exec_set, set)                                \
  do {                                                                         \
    T p_;                                                                      \
    memset(&p_, 0, sizeof p_);                                                 \
    cudaError_t e_ = get(from, &p_);                                           \
    if (e_ == cudaSuccess)                                                     \
      e_ = exec_set(g->exec, to, &p_);                                         \
    return e_ == cudaSuccess ? set(to, &p_) : e_;                              \
  } while (0)

/* Copies the parameters of @p from (a node of a graph of one op) onto
 * @p to, a node of the same type in @p g's template, for @p g's exec. */
static cudaError_t copy_node_params(cua_backend_graph *g, cudaGraphNode_t to,
                                    cudaGraphNode_t from,
                                    enum cudaGraphNodeType type) {
  switch (type) {
  case cudaGraphNodeTypeKernel:
    COPY_NODE_PARAMS(struct cudaKernelNodeParams, cudaGraphKernelNodeGetParams,
                     cudaGraphExecKernelNodeSetParams,
                     cudaGraphKernelNodeSetParams);
  case cudaGraphNodeTypeMemcpy:
    COPY_NODE_PARAMS(struct cudaMemcpy3DParms, cudaGraphMemcpyNodeGetParams,
                     cudaGraphExecMemcpyNodeSetParams,
                     cudaGraphMemcpyNodeSetParams);
  case cudaGraphNodeTypeMemset:
    COPY_NODE_PARAMS(struct cudaMemsetParams, cudaGraphMemsetNodeGetParams,
                     cudaGraphExecMemsetNodeSetParams,
                     cudaGraphMemsetNodeSetParams);
  default:
    return cudaErrorNotSupported;
  }
}

/* Captures @p op alone on @p s into a graph of one node, and gives that
 * node's parameters to node @p k of @p g. @p s is a stream of the device
 * the op was placed on, so in a graph over several devices the node and
 * the one captured here share their device, as the exec's setters need. */
static int cuda_graph_update_op(void *state, cua_backend_graph *g, size_t k,
                                cua_backend_stream *s, const cua_backend_op *op,
                                cua_backend_err *err) {
  backend *be = state;
  if (be->no_update_in_place || g->nodes == NULL || k >= g->nnodes ||
      g->nodes[k] == NULL || op->kind == CUA_OP_FUNC)
    return CUA_ERR_NOTSUP;
  if (is_lost(be, s->device))
    return lost_err(be, s->device, err);
  cudaError_t e = use_device(be, s->device);
  if (e == cudaSuccess)
    e = cudaStreamBeginCapture(s->native, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess)
    return cuda_fail(be, s->device, err, CUA_ERR_BACKEND, e,
                     "capturing an op to update a graph on CUDA device %d",
                     be->dev[s->device].ordinal);
  int func_rc = 0;
  cudaError_t le = enqueue(be, s, op, &func_rc, err);
  cudaGraph_t one = NULL;
  e = cudaStreamEndCapture(s->native, &one);
  int rc = CUA_ERR_NOTSUP;
  cudaGraphNode_t node = NULL;
  size_t n = 0;
  enum cudaGraphNodeType want, have;
  if (le == cudaSuccess && e == cudaSuccess && one != NULL &&
      cudaGraphGetNodes(one, NULL, &n) == cudaSuccess && n == 1 &&
      cudaGraphGetNodes(one, &node, &n) == cudaSuccess && node != NULL &&
      cudaGraphNodeGetType(node, &have) == cudaSuccess &&
      cudaGraphNodeGetType(g->nodes[k], &want) == cudaSuccess && have == want &&
      copy_node_params(g, g->nodes[k], node, have) == cudaSuccess)
    rc = 0;
  if (one != NULL)
    cudaGraphDestroy(one);
  (void)cudaGetLastError(); /* a refusal leaves no sticky state */
  return rc;
}

/* ------------------------------------------------------------- descriptor */

CUA__BACKEND_EXPORT const cua_backend_descriptor cua_backend_entry = {
    .abi_major = CUA_BACKEND_ABI_MAJOR,
    .abi_minor = CUA_BACKEND_ABI_MINOR,
    .size = sizeof(cua_backend_descriptor),
    .name = "cuda",
    .version = PACKAGE_VERSION,
    .description = "NVIDIA GPUs through the CUDA runtime",
    .flags = 0,
    .params = cuda_params,
    .nparams = PARAM_COUNT,
    .create = cuda_create,
    .destroy = cuda_destroy,
    .device_count = cuda_device_count,
    .device_info = cuda_device_info,
    .can_access = cuda_can_access,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_native = cuda_stream_native,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .stream_wait_event = cuda_stream_wait_event,
    .event_query = cuda_event_query,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .launch = cuda_launch,
    .mark = cuda_mark,
    .progress = cuda_progress,
    .poll_error = cuda_poll_error,
    .wait = cuda_wait,
    .wake = cuda_wake,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .module_function = cuda_module_function,
    /* auto tries cuda first, before host */
    .priority = 200,
    .native_record = cuda_native_record,
    .native_wait = cuda_native_wait,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .graph_update_op = cuda_graph_update_op,
    .flush_times = cuda_flush_times,
    .capture_deps = cuda_capture_deps,
    .waited = cuda_waited,
};
