/*
 * plugins/cuda/cupti_times.c: device times of ops from CUPTI's activity records
 * ([backend.cuda] timestamps = cupti), for observers. cuasync-bench
 * --timestamps measured CUPTI as the cheapest way to time every op
 * (doc/results, eleventh session): no event per op on the launching
 * thread.
 *
 * How: an op's enqueue is bracketed by cupti_begin() and cupti_end(); a
 * callback of CUPTI's callback API, enabled only for the calls that
 * enqueue kernels, copies and memsets, notes the correlation id of the
 * call made in between (its device record carries the same id), and
 * cupti_end() links that id to the op. Where CUPTI refuses the callback
 * (another subscriber, as under Nsight Systems), the op's enqueue runs
 * between a push and a pop of an external correlation id instead, and
 * CUPTI links each runtime API call made in between to it
 * (CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION records, which need the
 * runtime API's records of every call). The callback costs the launching
 * thread less: no record of each API call, no push and pop (doc/results,
 * fifteenth session). When both halves of an op are in (the link and the
 * device record), its start and end (on CLOCK_MONOTONIC: CUPTI's
 * timestamps come from a callback of ours) go to the core through
 * cua_backend_host::op_times(). Records arrive when CUPTI hands over a
 * full buffer, and at cupti_flush(), which the core calls before it
 * closes the observers.
 *
 * Only ops that make one device activity are timed this way (built-in
 * kernels, copies, memsets); the backend times stream functions with
 * events. libcupti is opened with dlopen(), so the backend does not
 * depend on it.
 *
 * Locks: cp.mu guards the tables and the ids; CUPTI calls the buffer
 * callbacks on its own thread or inside cuptiActivityFlushAll(), and they
 * take it. The API callback runs on the launching thread, inside the
 * launch, and touches only that thread's own variables. op_times() is
 * called with cp.mu held: the core takes only its observers' lock there.
 * cp.en_mu (taken before cp.mu, never inside a callback) guards the number
 * of clients and turning CUPTI's records on and off, which is never done
 * with cp.mu held.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cupti_times.h"

#include <stdio.h>

#if defined(__has_include)
#if !__has_include(<cupti.h>)
#define CUA_NO_CUPTI 1
#endif
#endif

#ifdef CUA_NO_CUPTI
int cupti_open(cupti_client **out, const cua_backend_host *host, char *why,
               size_t len) {
  (void)host;
  *out = NULL;
  snprintf(why, len, "built without cupti.h");
  return -1;
}
int cupti_begin(cupti_client *c, uint64_t op) {
  (void)c;
  (void)op;
  return -1;
}
void cupti_end(cupti_client *c, int ok) {
  (void)c;
  (void)ok;
}
void cupti_flush(cupti_client *c) {
  (void)c;
}
void cupti_close(cupti_client *c) {
  (void)c;
}
#else

#include <cupti.h>

#include "cupti_api.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An open-addressing table from a non-zero 64-bit key to a value. */
typedef struct slot {
  uint64_t key; /* 0: empty */
  uint64_t a, b, c, g, x;
  void *p;
} slot;

typedef struct table {
  slot *v;
  size_t cap, n; /* cap a power of two */
} table;

struct cupti_client {
  const cua_backend_host *host;
};

static struct {
  pthread_mutex_t mu, en_mu;
  int tried, ok, clients;
  int by_callback; /* the API callback links ops (else ext ids) */
  CUpti_SubscriberHandle sub;
  uint64_t gen; /* buffer callbacks so far */
  char why[200];
  uint64_t next_id;
  table ext;       /* external id -> p: client, a: op */
  table corr;      /* correlation id -> a: op and p: its client (API
                      callback), or x: its external id (0: neither, not
                      linked yet), b: start, c: end (0: no device record
                      yet), g: the callback generation it was made in */
  cua_cupti_api f; /* libcupti's entry points */
} cp = {.mu = PTHREAD_MUTEX_INITIALIZER, .en_mu = PTHREAD_MUTEX_INITIALIZER};

/* The op this thread is enqueueing (0: none) and the correlation id of the
 * call that enqueued its work (0: none yet), for the API callback. */
static _Thread_local uint64_t tl_op;
static _Thread_local uint32_t tl_corr;

/* The device records that time an op; with external ids, the runtime
 * API's records and the links too (the last two kinds). */
static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
#define NKINDS (sizeof kinds / sizeof kinds[0])
#define NKINDS_CALLBACK 4 /* the first four: no API records, no links */

/* The runtime API calls that enqueue an op's device work (the CUDA
 * backend's kernels, copies and memsets), which the API callback
 * watches. */
static const CUpti_CallbackId launch_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
#if defined(CUPTI_API_VERSION) && CUPTI_API_VERSION >= 130000
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000};
#define NCBIDS (sizeof launch_cbids / sizeof launch_cbids[0])

/* ------------------------------------------------------------ the tables */

static uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  return k;
}

static slot *t_find(table *t, uint64_t key) {
  if (t->cap == 0)
    return NULL;
  for (size_t i = mix(key) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
    if (t->v[i].key == key)
      return &t->v[i];
    if (t->v[i].key == 0)
      return NULL;
  }
}

/* The slot of @p key, made (zeroed) if absent; NULL when out of memory. */
static slot *t_get(table *t, uint64_t key) {
  slot *s = t_find(t, key);
  if (s != NULL)
    return s;
  if (2 * (t->n + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 1024;
    slot *v = calloc(cap, sizeof *v);
    if (v == NULL)
      return NULL;
    for (size_t i = 0; i < t->cap; i++) {
      if (t->v[i].key == 0)
        continue;
      size_t j = mix(t->v[i].key) & (cap - 1);
      while (v[j].key != 0)
        j = (j + 1) & (cap - 1);
      v[j] = t->v[i];
    }
    free(t->v);
    t->v = v;
    t->cap = cap;
  }
  size_t i = mix(key) & (t->cap - 1);
  while (t->v[i].key != 0)
    i = (i + 1) & (t->cap - 1);
  memset(&t->v[i], 0, sizeof t->v[i]);
  t->v[i].key = key;
  t->n++;
  return &t->v[i];
}

/* Removes @p s (a slot of @p t), shifting back what follows it. */
static void t_del(table *t, slot *s) {
  size_t i = (size_t)(s - t->v);
  t->v[i].key = 0;
  t->n--;
  for (size_t j = (i + 1) & (t->cap - 1); t->v[j].key != 0;
       j = (j + 1) & (t->cap - 1)) {
    size_t home = mix(t->v[j].key) & (t->cap - 1);
    /* Does the entry at j belong at or before the hole at i? */
    if ((j > i && (home <= i || home > j)) ||
        (j < i && (home <= i && home > j))) {
      t->v[i] = t->v[j];
      t->v[j].key = 0;
      i = j;
    }
  }
}

/* ----------------------------------------------------- CUPTI's callbacks */

static uint64_t CUPTIAPI mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size,
                                      size_t *max_records) {
  *size = 4 << 20;
  *buf = aligned_alloc(8, *size);
  if (*buf == NULL)
    *size = 0;
  *max_records = 0;
}

/* Both halves of correlation @p c are in: the op's times go to the core. */
static void deliver(slot *c) {
  cupti_client *cl = c->p;
  uint64_t op = c->a;
  slot *e = c->x != 0 ? t_find(&cp.ext, c->x) : NULL;
  if (e != NULL) {
    cl = e->p;
    op = e->a;
    t_del(&cp.ext, e);
  }
  if (cl != NULL && op != 0 && cl->host->op_times != NULL)
    cl->host->op_times(cl->host->core, op, c->b, c->c);
  t_del(&cp.corr, c);
}

static int linked(const slot *c) {
  return c->a != 0 || c->x != 0;
}

/* Correlation @p id's slot, made if it is new and then stamped with the
 * buffer generation (for sweep()); NULL without memory. */
static slot *corr_get(uint32_t id) {
  slot *c = t_get(&cp.corr, id);
  if (c != NULL && !linked(c) && c->c == 0)
    c->g = cp.gen;
  return c;
}

/* A device record: correlation @p id ran from @p start to @p end. */
static void device_record(uint32_t id, uint64_t start, uint64_t end) {
  /* (a record flushed before the work ended has no times) */
  if (id == 0 || start == 0 || end == 0 || end < start)
    return;
  slot *c = corr_get(id);
  if (c == NULL)
    return;
  c->b = start;
  c->c = end;
  if (linked(c))
    deliver(c);
}

/* Correlation @p id enqueued op @p op of @p cl (API callback), or was
 * made under external id @p x. */
static void link_op(uint32_t id, cupti_client *cl, uint64_t op, uint64_t x) {
  slot *c = corr_get(id);
  if (c == NULL)
    return;
  c->a = op;
  c->p = cl;
  c->x = x;
  if (c->c != 0)
    deliver(c);
}

/* Drops what will never be joined: device records of other work (user
 * kernels, stream functions, other profilers' ranges) left unlinked for
 * two buffers, and with external ids, links whose id is no longer waited
 * for (an API call that made no device work, an op whose client is
 * gone). */
static void sweep(void) {
  for (size_t i = 0; i < cp.corr.cap;) {
    slot *c = &cp.corr.v[i];
    if (c->key != 0 && ((c->x != 0 && t_find(&cp.ext, c->x) == NULL) ||
                        (!linked(c) && c->g + 2 <= cp.gen)))
      t_del(&cp.corr, c); /* (what shifts into i is looked at next) */
    else
      i++;
  }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream,
                                      uint8_t *buf, size_t size, size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *r = NULL;
  pthread_mutex_lock(&cp.mu);
  cp.gen++;
  while (buf != NULL && valid > 0 &&
         cp.f.next(buf, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const CUpti_ActivityKernel10 *k = (const void *)r;
      device_record(k->correlationId, k->start, k->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const CUpti_ActivityMemcpy6 *m = (const void *)r;
      device_record(m->correlationId, m->start, m->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const CUpti_ActivityMemcpyPtoP4 *m = (const void *)r;
      device_record(m->correlationId, m->start, m->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const CUpti_ActivityMemset4 *m = (const void *)r;
      device_record(m->correlationId, m->start, m->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      /* Every call the external id covers is linked to it; the first
       * device record of one of them times the op, and the sweep drops
       * the others. */
      const CUpti_ActivityExternalCorrelation *x = (const void *)r;
      if (x->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1 ||
          x->correlationId == 0 || t_find(&cp.ext, x->externalId) == NULL)
        break;
      link_op(x->correlationId, NULL, 0, x->externalId);
      break;
    }
    default:
      break;
    }
  }
  sweep();
  pthread_mutex_unlock(&cp.mu);
  free(buf);
}

/* ------------------------------------------------------------- the API */

/* The API callback: the correlation id of the call that enqueues the op
 * this thread is enqueueing (the first such call, if it makes several). */
static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain domain,
                            CUpti_CallbackId cbid, const void *data) {
  (void)ud;
  (void)domain;
  (void)cbid;
  const CUpti_CallbackData *cb = data;
  if (tl_op != 0 && tl_corr == 0 && cb->callbackSite == CUPTI_API_ENTER)
    tl_corr = cb->correlationId;
}

/* Turns the API callback on or off for the launch calls; 0 when CUPTI
 * took every change. */
static int watch_launches(uint32_t on) {
  int rc = 0;
  for (size_t i = 0; i < NCBIDS; i++)
    if (cp.f.enable_cb(on, cp.sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                       launch_cbids[i]) != CUPTI_SUCCESS)
      rc = -1;
  return rc;
}

/* The activity kinds enabled: the links need the last two only without
 * the API callback. */
static size_t nkinds(void) {
  return cp.by_callback ? NKINDS_CALLBACK : NKINDS;
}

/* Opens libcupti and turns the records on; with cp.mu held. */
static int load(void) {
  if (cp.tried)
    return cp.ok ? 0 : -1;
  cp.tried = 1;
  if (cua_cupti_open(&cp.f, cp.why, sizeof cp.why) != 0)
    return -1;
  if (cp.f.clock(mono_ns) != CUPTI_SUCCESS ||
      cp.f.callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
    snprintf(cp.why, sizeof cp.why,
             "CUPTI refused its timestamp or buffer callbacks");
    return -1;
  }
  /* One subscriber per process: where another one holds CUPTI's callback
   * API, the external ids link ops instead. */
  cp.by_callback = cp.f.subscribe(&cp.sub, on_api, NULL) == CUPTI_SUCCESS;
  cp.ok = 1;
  return 0;
}

int cupti_open(cupti_client **out, const cua_backend_host *host, char *why,
               size_t len) {
  *out = NULL;
  if (host->size <
          offsetof(cua_backend_host, op_times) + sizeof host->op_times ||
      host->op_times == NULL) {
    snprintf(why, len, "the core takes no times after the fact (ABI < 1.7)");
    return -1;
  }
  cupti_client *c = calloc(1, sizeof *c);
  if (c == NULL) {
    snprintf(why, len, "out of memory");
    return -1;
  }
  c->host = host;
  pthread_mutex_lock(&cp.en_mu);
  int rc = load();
  if (rc == 0 && cp.clients == 0 && cp.by_callback && watch_launches(1) != 0) {
    (void)watch_launches(0);
    cp.by_callback = 0; /* the external ids, then */
  }
  size_t nk = nkinds();
  if (rc == 0 && cp.clients == 0)
    for (size_t i = 0; i < nk && rc == 0; i++)
      if (cp.f.enable(kinds[i]) != CUPTI_SUCCESS) {
        snprintf(cp.why, sizeof cp.why,
                 "cuptiActivityEnable(%d) failed (another profiler "
                 "attached?)",
                 (int)kinds[i]);
        for (size_t j = 0; j < i; j++)
          cp.f.disable(kinds[j]);
        if (cp.by_callback)
          (void)watch_launches(0);
        rc = -1;
      }
  if (rc == 0)
    cp.clients++;
  else
    snprintf(why, len, "%s", cp.why);
  pthread_mutex_unlock(&cp.en_mu);
  if (rc != 0) {
    free(c);
    return -1;
  }
  *out = c;
  return 0;
}

int cupti_begin(cupti_client *c, uint64_t op) {
  if (cp.by_callback) {
    /* (op ids start at 1: 0 is "none") */
    tl_op = op;
    tl_corr = 0;
    return 0;
  }
  pthread_mutex_lock(&cp.mu);
  uint64_t id = ++cp.next_id;
  slot *e = t_get(&cp.ext, id);
  if (e != NULL) {
    e->p = c;
    e->a = op;
  }
  pthread_mutex_unlock(&cp.mu);
  if (e == NULL)
    return -1;
  if (cp.f.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, id) != CUPTI_SUCCESS) {
    pthread_mutex_lock(&cp.mu);
    slot *s = t_find(&cp.ext, id);
    if (s != NULL)
      t_del(&cp.ext, s);
    pthread_mutex_unlock(&cp.mu);
    return -1;
  }
  return 0;
}

void cupti_end(cupti_client *c, int ok) {
  if (cp.by_callback) {
    uint64_t op = tl_op;
    uint32_t id = tl_corr;
    tl_op = 0;
    tl_corr = 0;
    if (!ok || id == 0)
      return; /* no device work was enqueued: no times (estimated) */
    pthread_mutex_lock(&cp.mu);
    link_op(id, c, op, 0);
    pthread_mutex_unlock(&cp.mu);
    return;
  }
  uint64_t id = 0;
  cp.f.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &id);
  if (ok || id == 0)
    return;
  pthread_mutex_lock(&cp.mu);
  slot *s = t_find(&cp.ext, id);
  if (s != NULL)
    t_del(&cp.ext, s);
  pthread_mutex_unlock(&cp.mu);
}

/* Forgets what @p c still waits for: it will never be told (op_times()
 * is not called for @p c after this). */
static void forget(cupti_client *c) {
  pthread_mutex_lock(&cp.mu);
  for (size_t i = 0; i < cp.ext.cap;) {
    slot *e = &cp.ext.v[i];
    if (e->key != 0 && e->p == c)
      t_del(&cp.ext, e);
    else
      i++;
  }
  for (size_t i = 0; i < cp.corr.cap;) {
    slot *k = &cp.corr.v[i];
    if (k->key != 0 && k->a != 0 && k->p == c)
      t_del(&cp.corr, k); /* linked, its device record never came */
    else
      i++;
  }
  pthread_mutex_unlock(&cp.mu);
}

void cupti_flush(cupti_client *c) {
  /* Not under cp.mu: the flush calls buffer_completed(), which takes it.
   * The caller has let its streams drain, so its records are complete. */
  cp.f.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  forget(c);
}

void cupti_close(cupti_client *c) {
  if (c == NULL)
    return;
  forget(c);
  pthread_mutex_lock(&cp.en_mu);
  if (--cp.clients == 0) {
    /* Not under cp.mu: CUPTI may wait for a buffer callback, which
     * takes it. */
    if (cp.by_callback)
      (void)watch_launches(0);
    for (size_t i = 0; i < nkinds(); i++)
      cp.f.disable(kinds[i]);
    cp.f.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&cp.mu);
    free(cp.ext.v);
    free(cp.corr.v);
    memset(&cp.ext, 0, sizeof cp.ext);
    memset(&cp.corr, 0, sizeof cp.corr);
    pthread_mutex_unlock(&cp.mu);
  }
  pthread_mutex_unlock(&cp.en_mu);
  free(c);
}

#endif /* CUA_NO_CUPTI */
