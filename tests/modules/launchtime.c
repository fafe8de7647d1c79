/*
 * tests/modules/launchtime.c: a test backend that runs every op inside its
 * launch() call, on the calling thread.
 *
 * The CUDA backend runs a stream function (cua_op_func) inside launch(), on
 * the thread that launches it; the host backend runs it later, on a worker.
 * This backend does the former for every op, so that CI, which has no GPU,
 * exercises the path where the core's launching thread runs user code: a
 * core that calls launch() under a lock blocks every other submission for
 * as long as the op runs, and a stream function that calls back into the
 * runtime finds that lock taken.
 *
 * What makes it a complete backend in a few hundred lines: nothing is ever
 * pending. A stream is in order because each op finished before launch()
 * returned; an event is complete when it is recorded, so waiting for one
 * is nothing to do; a mark publishes its value at once; a stream-ordered
 * free frees at once (every earlier op of the stream has run). All device
 * memory is host memory, as on the host backend, and `devices = N` in
 * [backend.launchtime] gives N virtual devices that can all reach each
 * other's memory, so multi-device policies run here too.
 *
 * Failures are reported as the CUDA backend reports them: synchronously,
 * from launch(). Nothing fails asynchronously, so poll_error() never has
 * anything.
 *
 * Threads: launch(), mark() and the event and memory calls run on whatever
 * thread the core calls them from; progress() reads an atomic; wait() and
 * wake() use one mutex and condition variable, signalled by every mark.
 *
 * It is a test module (never installed), and declares a negative priority:
 * `backend = auto` never picks it; `backend = launchtime` does.
 *
 * Built again with LT_GRAPHS defined, it is the backend "launchgraph": the
 * same, with graphs (backend ABI 1.3, 1.4 and 1.9), so that CI runs the
 * core's captures as the CUDA backend gets them, the capture of a large DAG
 * beside its placement (on a thread of cua_graph_create()) included. A
 * capture records each launch (a stream joins the capture when it waits
 * for an event recorded in it, as in a CUDA stream capture); a replay runs
 * the recorded ops in their capture's order, which keeps every dependency;
 * capture_deps() checks that it is given earlier launches only, each once,
 * and fails the capture otherwise. Stream functions
 * and module kernels are not captured (the capture fails, naming them).
 *
 * Built a second time with LT_NODEVICE defined, it is the backend
 * "nodevice": the highest priority of all, and a create() that always finds
 * no device, so that the tests see `backend = auto` skip it. Its schema is
 * its own (a `reason` for the message), to show that a [backend.NAME]
 * section is checked against the backend of that name.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <cuasync/backend.h>
#include <cuasync/errors.h>

#include "../../plugins/hostmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef LT_NODEVICE
#define LT_NAME "nodevice"
#define LT_PRIORITY 1000
#elif defined LT_GRAPHS
#define LT_NAME "launchgraph"
#define LT_PRIORITY (-1)
#else
#define LT_NAME "launchtime"
#define LT_PRIORITY (-1)
#endif

/* Indices into the parameter schema. */
#ifdef LT_NODEVICE
enum { PARAM_REASON, PARAM_COUNT };
#else
enum { PARAM_DEVICES, PARAM_WAITERS_SPIN, PARAM_COUNT };
#endif

/* Fresh device memory is garbage, as on a GPU and on the host backend, so
 * that a read of memory no op wrote shows. */
#define MEM_GARBAGE 0xA5

typedef struct lt_state {
  int ndevices;
  int *ordinals; /* backend ordinal of each runtime device */
  pthread_mutex_t lock;
  pthread_cond_t cond; /* signalled by mark() and wake() */
  uint64_t signals;    /* marks executed; under lock */
  uint64_t seen;       /* signals wait() has returned for; under lock */
  int woken;           /* wake() was called; under lock */
  int waited;          /* the last waited() call's value; under lock */
  int waiters_spin;    /* [backend.launchtime] waiters_spin */
} lt_state;

/* The core's waited() calls (backend ABI 1.10), for tests/check_backends.c,
 * which finds this array with dlsym(): [0] and [1] count the calls with 0
 * and with 1, [2] the calls out of turn (a value equal to the last one, a
 * 0 first, or a 1 left at destroy()), over every instance. */
__attribute__((visibility("default"))) _Atomic long lt_waited_calls[3];

struct lt_capture;

struct cua_backend_stream {
  lt_state *st;
  int device;
  _Atomic uint64_t progress;
  struct lt_capture *_Atomic cap; /* the capture it is part of
                                     (launchgraph), or NULL */
};

/* Events complete when recorded: there is nothing to hold. */
struct cua_backend_event {
  int device;
  struct lt_capture *_Atomic cap; /* recorded in a capture (launchgraph) */
};

/* A capture (launchgraph): the ops launched into it, in order, and the
 * streams and events it touched, let go at its end. The first failure of
 * an enqueue is kept for capture_end(), which reports it. */
typedef struct lt_capture {
  cua_backend_op *ops;
  size_t nops, capops;
  void **streams; /* cua_backend_stream *, each once */
  size_t nstreams, capstreams;
  void **events; /* cua_backend_event *, each once */
  size_t nevents, capevents;
  int rc;
  char msg[sizeof(((cua_backend_err *)0)->msg)];
} lt_capture;

/* An executable graph: the ops to run, in order. */
struct cua_backend_graph {
  cua_backend_op *ops;
  size_t nops;
};

static void set_err(cua_backend_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

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

static int valid_device(const lt_state *st, int device) {
  return device >= 0 && device < st->ndevices;
}

/* -------------------------------------------------------------- devices */

static int lt_create(const cua_backend_host *host,
                     const cua_param_value *params, const int *ordinals,
                     int nordinals, void **state, cua_backend_err *err) {
  (void)host;
#ifdef LT_NODEVICE
  (void)ordinals;
  (void)nordinals;
  (void)state;
  set_err(err, "%s", params != NULL && params[0].s != NULL ? params[0].s : "");
  return CUA_ERR_NO_DEVICE;
#else
  int64_t ndev = params != NULL ? params[PARAM_DEVICES].i : 1;
  int n = ordinals != NULL ? nordinals : (int)ndev;
  if (n <= 0) {
    set_err(err, "no launchtime device selected");
    return CUA_ERR_NO_DEVICE;
  }
  for (int i = 0; ordinals != NULL && i < n; i++) {
    if (ordinals[i] < 0 || ordinals[i] >= ndev) {
      set_err(err,
              "no launchtime device %d: the backend has %lld (devices = "
              "%lld in [backend.launchtime])",
              ordinals[i], (long long)ndev, (long long)ndev);
      return CUA_ERR_BAD_DEVICE;
    }
  }
  lt_state *st = calloc(1, sizeof *st);
  if (st == NULL || (st->ordinals = calloc((size_t)n, sizeof(int))) == NULL) {
    free(st);
    set_err(err, "out of host memory");
    return CUA_ERR_NOMEM;
  }
  st->ndevices = n;
  st->waiters_spin = params != NULL && params[PARAM_WAITERS_SPIN].i != 0;
  for (int i = 0; i < n; i++)
    st->ordinals[i] = ordinals != NULL ? ordinals[i] : i;
  pthread_mutex_init(&st->lock, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&st->cond, &ca);
  pthread_condattr_destroy(&ca);
  *state = st;
  return CUA_OK;
#endif
}

static void lt_destroy(void *state) {
  lt_state *st = state;
  if (st == NULL)
    return;
  if (st->waited)
    lt_waited_calls[2]++; /* a waiter never counted out */
  pthread_cond_destroy(&st->cond);
  pthread_mutex_destroy(&st->lock);
  free(st->ordinals);
  free(st);
}

static int lt_device_count(void *state) {
  return ((lt_state *)state)->ndevices;
}

static int lt_device_info(void *state, int device, cua_device_info *info) {
  lt_state *st = state;
  if (!valid_device(st, device))
    return CUA_ERR_BAD_DEVICE;
  if (info == NULL || info->size == 0)
    return CUA_ERR_INVAL;
  cua_device_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "launchtime device %d", st->ordinals[device]);
  d.ordinal = st->ordinals[device];
  d.multiprocessors = 1;
  size_t n = info->size < sizeof d ? info->size : sizeof d;
  d.size = info->size;
  memcpy(info, &d, n);
  return CUA_OK;
}

static int lt_can_access(void *state, int device, int peer) {
  lt_state *st = state;
  return valid_device(st, device) && valid_device(st, peer);
}

/* -------------------------------------------------------------- streams */

static int lt_stream_create(void *state, int device, cua_backend_stream **out,
                            cua_backend_err *err) {
  lt_state *st = state;
  if (!valid_device(st, device)) {
    set_err(err, "stream_create: no device %d (the backend has %d)", device,
            st->ndevices);
    return CUA_ERR_BAD_DEVICE;
  }
  cua_backend_stream *s = calloc(1, sizeof *s);
  if (s == NULL) {
    set_err(err, "stream_create: out of host memory");
    return CUA_ERR_NOMEM;
  }
  s->st = st;
  s->device = device;
  atomic_init(&s->progress, 0);
  *out = s;
  return CUA_OK;
}

static void lt_stream_destroy(void *state, cua_backend_stream *s) {
  (void)state;
  free(s);
}

static void *lt_stream_native(void *state, cua_backend_stream *s) {
  (void)state;
  return s;
}

/* --------------------------------------------------------------- events */

static int lt_event_create(void *state, int device, cua_backend_event **out,
                           cua_backend_err *err) {
  lt_state *st = state;
  if (!valid_device(st, device)) {
    set_err(err, "event_create: no device %d (the backend has %d)", device,
            st->ndevices);
    return CUA_ERR_BAD_DEVICE;
  }
  cua_backend_event *e = calloc(1, sizeof *e);
  if (e == NULL) {
    set_err(err, "event_create: out of host memory");
    return CUA_ERR_NOMEM;
  }
  e->device = device;
  *out = e;
  return CUA_OK;
}

static void lt_event_destroy(void *state, cua_backend_event *e) {
  (void)state;
  free(e);
}

/* Keeps @p p in a capture's list *v (of *n, room for *cap), once.
 * Returns 0 or CUA_ERR_NOMEM. */
static int cap_keep(void ***v, size_t *n, size_t *cap, void *p) {
  for (size_t i = 0; i < *n; i++)
    if ((*v)[i] == p)
      return CUA_OK;
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 8;
    void **nv = realloc(*v, c * sizeof *nv);
    if (nv == NULL)
      return CUA_ERR_NOMEM;
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = p;
  return CUA_OK;
}

/* Everything launched on @p s has run: the recording is complete now. In
 * a capture, the event marks a point of it (launchgraph). */
static int lt_event_record(void *state, cua_backend_event *e,
                           cua_backend_stream *s) {
  (void)state;
  if (e == NULL || s == NULL)
    return CUA_ERR_INVAL;
  lt_capture *c = atomic_load_explicit(&s->cap, memory_order_relaxed);
  if (c != NULL &&
      cap_keep(&c->events, &c->nevents, &c->capevents, e) != CUA_OK)
    return CUA_ERR_NOMEM;
  atomic_store_explicit(&e->cap, c, memory_order_relaxed);
  return CUA_OK;
}

/* The recording waited for is complete: nothing to wait for. A stream that
 * waits for a point of a capture joins it (launchgraph). */
static int lt_stream_wait_event(void *state, cua_backend_stream *s,
                                cua_backend_event *e) {
  (void)state;
  if (e == NULL || s == NULL)
    return CUA_ERR_INVAL;
  lt_capture *c = atomic_load_explicit(&e->cap, memory_order_relaxed);
  if (c != NULL &&
      atomic_load_explicit(&s->cap, memory_order_relaxed) == NULL) {
    if (cap_keep(&c->streams, &c->nstreams, &c->capstreams, s) != CUA_OK)
      return CUA_ERR_NOMEM;
    atomic_store_explicit(&s->cap, c, memory_order_relaxed);
  }
  return CUA_OK;
}

static int lt_event_query(void *state, cua_backend_event *e) {
  (void)state;
  return e != NULL ? CUA_OK : CUA_ERR_INVAL;
}

/* --------------------------------------------------------------- memory */

static int lt_mem_alloc(void *state, int device, cua_backend_stream *s,
                        size_t bytes, void **ptr, cua_backend_err *err) {
  lt_state *st = state;
  (void)s;
  if (!valid_device(st, device)) {
    set_err(err, "mem_alloc: no device %d (the backend has %d)", device,
            st->ndevices);
    return CUA_ERR_BAD_DEVICE;
  }
  size_t body = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  /* Over 1 TiB is what no device has: refused before the allocator (the
   * sanitizers' allocators abort on such a request instead of failing). */
  void *p = body >= bytes && body <= ((size_t)1 << 40) ? aligned_alloc(64, body)
                                                       : NULL;
  if (p == NULL) {
    set_err(err, "launchtime device %d: out of memory: %zu bytes requested",
            device, bytes);
    return CUA_ERR_DEVICE_OOM;
  }
  memset(p, MEM_GARBAGE, body);
  *ptr = p;
  return CUA_OK;
}

/* Stream-ordered or not, every earlier op of the stream has run. */
static void lt_mem_free(void *state, int device, cua_backend_stream *s,
                        void *ptr) {
  (void)state;
  (void)device;
  (void)s;
  free(ptr);
}

/* ------------------------------------------------------------ execution */

static void sleep_until(uint64_t deadline) {
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline / 1000000000u);
  ts.tv_nsec = (long)(deadline % 1000000000u);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

/* What can be refused before running anything, as a CUDA launch does. */
static int check_op(const lt_state *st, const cua_backend_op *op,
                    cua_backend_err *err) {
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
  case CUA_OP_MEMCPY_D2D:
    if (!valid_device(st, op->dst_device) ||
        !valid_device(st, op->src_device)) {
      set_err(err,
              "launch: MEMCPY_D2D op %llu: device %d -> %d, but the "
              "backend has %d",
              (unsigned long long)op->seq, op->src_device, op->dst_device,
              st->ndevices);
      return CUA_ERR_BAD_DEVICE;
    }
    /* fall through */
  case CUA_OP_COPY:
  case CUA_OP_AXPY:
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
    needs_dst = needs_src = 1;
    break;
  case CUA_OP_KERNEL:
    set_err(err,
            "launch: KERNEL op %llu: the launchtime backend cannot run "
            "module kernels (it loads no PTX or cubin)",
            (unsigned long long)op->seq);
    return CUA_ERR_NOTSUP;
  default:
    set_err(err, "launch: op %llu has kind %s (%d), which is not a stream op",
            (unsigned long long)op->seq, kind_name(op->kind), (int)op->kind);
    return CUA_ERR_INVAL;
  }
  if (op->bytes > 0 &&
      ((needs_dst && op->dst == NULL) || (needs_src && op->src == NULL))) {
    set_err(err, "launch: op %llu (%s) moves %zu bytes through a NULL pointer",
            (unsigned long long)op->seq, kind_name(op->kind), op->bytes);
    return CUA_ERR_INVAL;
  }
  return CUA_OK;
}

/* Runs @p op now. Returns 0, or the stream function's code with its
 * message in @p err. */
static int run_op(cua_backend_stream *s, const cua_backend_op *op,
                  cua_backend_err *err) {
  switch (op->kind) {
  case CUA_OP_FUNC: {
    err->msg[0] = '\0';
    int rc = op->func(op->func_ctx, s, err);
    if (rc != 0 && err->msg[0] == '\0')
      set_err(err, "FUNC: the stream function failed (%d)", rc);
    return rc;
  }
  case CUA_OP_SPIN:
    if (op->spin.ns > 0)
      sleep_until(mono_ns() + op->spin.ns);
    return 0;
  default:
    cua_hostmem_run(op); /* the memory ops: check_op() let no other in */
    return 0;
  }
}

/* Records @p o in capture @p c instead of running it. A failure is kept
 * for capture_end(), as a CUDA capture reports it. */
static int cap_launch(lt_capture *c, const cua_backend_op *o) {
  if (c->rc != 0)
    return CUA_OK;
  if (o->kind == CUA_OP_FUNC || o->kind == CUA_OP_KERNEL) {
    c->rc = CUA_ERR_NOTSUP;
    snprintf(c->msg, sizeof c->msg,
             "launch: op %llu (%s) cannot be captured by the launchgraph "
             "backend",
             (unsigned long long)o->seq, kind_name(o->kind));
    return CUA_OK;
  }
  if (c->nops == c->capops) {
    size_t n = c->capops ? 2 * c->capops : 64;
    cua_backend_op *v = realloc(c->ops, n * sizeof *v);
    if (v == NULL) {
      c->rc = CUA_ERR_NOMEM;
      snprintf(c->msg, sizeof c->msg, "launch: out of host memory");
      return CUA_OK;
    }
    c->ops = v;
    c->capops = n;
  }
  cua_backend_op *k = &c->ops[c->nops++];
  *k = *o;
  k->size = sizeof *k;
  k->duration_ns = k->start_ns = k->end_ns = NULL;
  return CUA_OK;
}

static int lt_launch(void *state, cua_backend_stream *s,
                     const cua_backend_op *op, cua_backend_err *err) {
  lt_state *st = state;
  cua_backend_err local;
  if (err == NULL)
    err = &local;
  if (s == NULL || op == NULL) {
    set_err(err, "launch: NULL stream or op");
    return CUA_ERR_INVAL;
  }
  if (op->size < offsetof(cua_backend_op, seq) + sizeof op->seq) {
    set_err(err, "launch: op size %zu is too small", op->size);
    return CUA_ERR_INVAL;
  }
  /* Only the prefix the core's struct has is read; the rest is zero. */
  cua_backend_op copy;
  const cua_backend_op *o = op;
  if (op->size < sizeof copy) {
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, op, op->size);
    o = &copy;
  }
  int rc = check_op(st, o, err);
  if (rc != CUA_OK)
    return rc;
  lt_capture *c = atomic_load_explicit(&s->cap, memory_order_relaxed);
  if (c != NULL)
    return cap_launch(c, o);
  uint64_t t0 = o->duration_ns != NULL ? mono_ns() : 0;
  rc = run_op(s, o, err);
  /* As the CUDA backend does when observers ask for device times. */
  if (rc == 0 && o->duration_ns != NULL) {
    *o->duration_ns = mono_ns() - t0;
    if (o->start_ns != NULL)
      *o->start_ns = t0;
  }
  if (rc == 0 && o->end_ns != NULL)
    *o->end_ns = mono_ns();
  return rc;
}

static int lt_mark(void *state, cua_backend_stream *s, uint64_t value) {
  lt_state *st = state;
  if (s == NULL)
    return CUA_ERR_INVAL;
  atomic_store_explicit(&s->progress, value, memory_order_release);
  pthread_mutex_lock(&st->lock);
  st->signals++;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
  return CUA_OK;
}

static int lt_progress(void *state, cua_backend_stream *s, uint64_t *value,
                       cua_backend_err *err) {
  (void)state;
  (void)err;
  *value = atomic_load_explicit(&s->progress, memory_order_acquire);
  return CUA_OK;
}

static int lt_poll_error(void *state, cua_backend_stream *s, uint64_t *seq,
                         int *code, cua_backend_err *err) {
  (void)state;
  (void)s;
  (void)seq;
  (void)code;
  (void)err;
  return 0; /* every failure was returned by launch() */
}

/* Returns once a mark ran since the last return, wake() was called, or the
 * timeout passed. */
static int lt_wait(void *state, uint64_t timeout_ns) {
  lt_state *st = state;
  int forever = timeout_ns >= (uint64_t)1000000000u * 1000000000u;
  struct timespec deadline = {0, 0};
  if (!forever) {
    uint64_t d = mono_ns() + timeout_ns;
    deadline.tv_sec = (time_t)(d / 1000000000u);
    deadline.tv_nsec = (long)(d % 1000000000u);
  }
  pthread_mutex_lock(&st->lock);
  while (st->signals == st->seen && !st->woken && timeout_ns > 0) {
    int rc = forever ? pthread_cond_wait(&st->cond, &st->lock)
                     : pthread_cond_timedwait(&st->cond, &st->lock, &deadline);
    if (rc == ETIMEDOUT)
      break;
  }
  st->seen = st->signals;
  st->woken = 0;
  pthread_mutex_unlock(&st->lock);
  return 0;
}

static void lt_wake(void *state) {
  lt_state *st = state;
  pthread_mutex_lock(&st->lock);
  st->woken = 1;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
}

/* A program thread waits (1) or the last one is done (0): nothing to do
 * here, where nothing is ever pending, but the calls are counted and must
 * alternate, starting with 1. With waiters_spin, the waiting threads are
 * asked to watch their futures without sleeping, as the CUDA backend
 * asks. */
static int lt_waited(void *state, int waited) {
  lt_state *st = state;
  pthread_mutex_lock(&st->lock);
  lt_waited_calls[waited != 0]++;
  if ((waited != 0) == st->waited)
    lt_waited_calls[2]++;
  st->waited = waited != 0;
  pthread_mutex_unlock(&st->lock);
  return waited && st->waiters_spin;
}

/* --------------------------------------------------------------- graphs */

#ifdef LT_GRAPHS
static int lt_capture_begin(void *state, cua_backend_stream *s,
                            cua_backend_err *err) {
  (void)state;
  if (atomic_load_explicit(&s->cap, memory_order_relaxed) != NULL) {
    set_err(err, "capture_begin: the stream is capturing already");
    return CUA_ERR_INVAL;
  }
  lt_capture *c = calloc(1, sizeof *c);
  if (c == NULL ||
      cap_keep(&c->streams, &c->nstreams, &c->capstreams, s) != CUA_OK) {
    free(c);
    set_err(err, "capture_begin: out of host memory");
    return CUA_ERR_NOMEM;
  }
  atomic_store_explicit(&s->cap, c, memory_order_relaxed);
  return CUA_OK;
}

/* The ops of @p a and @p b have the same structure: kinds and devices
 * (values, pointers and sizes are parameters, as in a CUDA graph's
 * update). */
static int same_structure(const cua_backend_op *a, size_t na,
                          const cua_backend_op *b, size_t nb) {
  if (na != nb)
    return 0;
  for (size_t i = 0; i < na; i++)
    if (a[i].kind != b[i].kind || a[i].dst_device != b[i].dst_device ||
        a[i].src_device != b[i].src_device)
      return 0;
  return 1;
}

/* The capture @p s is part of, or NULL with @p what's error set. */
static lt_capture *capturing(cua_backend_stream *s, const char *what,
                             cua_backend_err *err) {
  lt_capture *c = atomic_load_explicit(&s->cap, memory_order_relaxed);
  if (c == NULL)
    set_err(err, "%s: the stream is not capturing", what);
  return c;
}

static int lt_capture_end(void *state, cua_backend_stream *s,
                          cua_backend_graph *into, cua_backend_graph **out,
                          cua_backend_err *err) {
  (void)state;
  *out = NULL;
  lt_capture *c = capturing(s, "capture_end", err);
  if (c == NULL)
    return CUA_ERR_INVAL;
  for (size_t i = 0; i < c->nstreams; i++)
    atomic_store_explicit(&((cua_backend_stream *)c->streams[i])->cap, NULL,
                          memory_order_relaxed);
  for (size_t i = 0; i < c->nevents; i++)
    atomic_store_explicit(&((cua_backend_event *)c->events[i])->cap, NULL,
                          memory_order_relaxed);
  int rc = c->rc;
  if (rc != 0)
    set_err(err, "%s", c->msg);
  else if (into != NULL &&
           !same_structure(into->ops, into->nops, c->ops, c->nops)) {
    set_err(err, "capture_end: the captured graph's structure changed");
    rc = CUA_ERR_STRUCTURE;
  } else if (into != NULL) {
    free(into->ops);
    into->ops = c->ops;
    into->nops = c->nops;
    c->ops = NULL;
    *out = into;
  } else {
    cua_backend_graph *g = calloc(1, sizeof *g);
    if (g == NULL) {
      set_err(err, "capture_end: out of host memory");
      rc = CUA_ERR_NOMEM;
    } else {
      g->ops = c->ops;
      g->nops = c->nops;
      c->ops = NULL;
      *out = g;
    }
  }
  free(c->ops);
  free(c->streams);
  free(c->events);
  free(c);
  return rc;
}

/* Runs the graph's ops in their capture's order, which keeps every
 * dependency, as launch() runs one. */
static int lt_graph_launch(void *state, cua_backend_graph *g,
                           cua_backend_stream *s, cua_backend_err *err) {
  lt_state *st = state;
  if (atomic_load_explicit(&s->cap, memory_order_relaxed) != NULL) {
    set_err(err, "graph_launch: graphs are not captured into graphs here");
    return CUA_ERR_NOTSUP;
  }
  for (size_t i = 0; i < g->nops; i++) {
    int rc = check_op(st, &g->ops[i], err);
    if (rc == CUA_OK)
      rc = run_op(s, &g->ops[i], err);
    if (rc != CUA_OK)
      return rc;
  }
  return CUA_OK;
}

static void lt_graph_destroy(void *state, cua_backend_graph *g) {
  (void)state;
  if (g == NULL)
    return;
  free(g->ops);
  free(g);
}

/* Op @p k takes @p op's parameters: same kind, size and devices. */
static int lt_graph_update_op(void *state, cua_backend_graph *g, size_t k,
                              cua_backend_stream *s, const cua_backend_op *op,
                              cua_backend_err *err) {
  (void)state;
  (void)s;
  (void)err;
  if (k >= g->nops || op->size < sizeof *op ||
      !same_structure(&g->ops[k], 1, op, 1) || op->kind == CUA_OP_FUNC ||
      op->kind == CUA_OP_KERNEL)
    return CUA_ERR_NOTSUP;
  g->ops[k] = *op;
  g->ops[k].duration_ns = g->ops[k].start_ns = g->ops[k].end_ns = NULL;
  return CUA_OK;
}

/* Checks what the core promises: launches of this capture made already,
 * none twice. */
static int lt_capture_deps(void *state, cua_backend_stream *s,
                           const size_t *launches, size_t n,
                           cua_backend_err *err) {
  (void)state;
  lt_capture *c = capturing(s, "capture_deps", err);
  if (c == NULL)
    return CUA_ERR_INVAL;
  if (c->rc != 0) { /* a launch was refused: that is the failure */
    set_err(err, "%s", c->msg);
    return c->rc;
  }
  for (size_t i = 0; i < n; i++) {
    if (launches[i] >= c->nops) {
      set_err(err, "capture_deps: dependency %zu is launch %zu, of %zu made", i,
              launches[i], c->nops);
      return CUA_ERR_INVAL;
    }
    for (size_t j = 0; j < i; j++)
      if (launches[j] == launches[i]) {
        set_err(err, "capture_deps: launch %zu is given twice", launches[i]);
        return CUA_ERR_INVAL;
      }
  }
  return CUA_OK;
}
#endif

/* ----------------------------------------------------------- descriptor */

#ifdef LT_NODEVICE
static const cua_param_spec lt_params[PARAM_COUNT] = {
    {"reason", CUA_PARAM_STRING, "this test backend never has a device", 0, 0,
     NULL, "what create() says when it fails", 0},
};
#else
static const cua_param_spec lt_params[PARAM_COUNT] = {
    [PARAM_DEVICES] = {"devices", CUA_PARAM_INT, "1", 1, 64, NULL,
                       "virtual devices, to run multi-device policies", 0},
    [PARAM_WAITERS_SPIN] = {"waiters_spin", CUA_PARAM_BOOL, "false", 0, 0, NULL,
                            "waited(1) asks the threads waiting on futures "
                            "to watch them without sleeping",
                            0},
};
#endif

CUA__BACKEND_EXPORT const cua_backend_descriptor cua_backend_entry = {
    .abi_major = CUA_BACKEND_ABI_MAJOR,
    .abi_minor = CUA_BACKEND_ABI_MINOR,
    .size = sizeof(cua_backend_descriptor),
    .name = LT_NAME,
    .version = "1.0",
#ifdef LT_NODEVICE
    .description = "test backend: create() never finds a device",
#else
    .description = "test backend: every op runs inside launch(), on the "
                   "launching thread"
#ifdef LT_GRAPHS
                   ", with graphs"
#endif
    ,
#endif
    .flags = 0,
    .params = lt_params,
    .nparams = PARAM_COUNT,
    .create = lt_create,
    .destroy = lt_destroy,
    .device_count = lt_device_count,
    .device_info = lt_device_info,
    .can_access = lt_can_access,
    .stream_create = lt_stream_create,
    .stream_destroy = lt_stream_destroy,
    .stream_native = lt_stream_native,
    .event_create = lt_event_create,
    .event_destroy = lt_event_destroy,
    .event_record = lt_event_record,
    .stream_wait_event = lt_stream_wait_event,
    .event_query = lt_event_query,
    .mem_alloc = lt_mem_alloc,
    .mem_free = lt_mem_free,
    .launch = lt_launch,
    .mark = lt_mark,
    .progress = lt_progress,
    .poll_error = lt_poll_error,
    .wait = lt_wait,
    .wake = lt_wake,
    .host_alloc = NULL,
    .host_free = NULL,
    .module_load = NULL,
    .module_unload = NULL,
    .module_function = NULL,
    /* launchtime: tests name it, `backend = auto` must never pick it;
     * nodevice: auto tries it first, and must skip it. */
    .priority = LT_PRIORITY,
    .waited = lt_waited,
#ifdef LT_GRAPHS
    .capture_begin = lt_capture_begin,
    .capture_end = lt_capture_end,
    .graph_launch = lt_graph_launch,
    .graph_destroy = lt_graph_destroy,
    .graph_update_op = lt_graph_update_op,
    .capture_deps = lt_capture_deps,
#endif
};
