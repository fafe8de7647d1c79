/*
 * core/runtime.c: opening and closing a runtime, streams, event pools,
 * device queries, counters, code modules. Finding and opening the backend
 * is core/backend.c's.
 *
 * Locking: the runtime struct is written by the thread that opens it
 * before any other thread can see it, and freed once its last hold is
 * dropped (cua__runtime_release(): rt->holds, atomic). In between, streams
 * (cua__ensure_streams()), event pools and rt->stats are rt->lock's; the
 * list of code modules is rt->reg_lock's (a leaf lock), and a module load
 * calls the backend under rt->lock; rt->closed, rt->work_gen and the
 * graph and hand-over counters are atomics, read without a lock.
 */
#include "config.h"
#include "internal.h"

#include <errno.h>
#include <sched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- streams */

/* Every stream_create() of the core: numbered as the backend numbers them
 * for changed() (the n-th successful call is n), whoever calls. */
int cua__stream_create(cua_runtime *rt, int device, cua_backend_stream **bs,
                       uint32_t *index, cua_backend_err *err) {
  pthread_mutex_lock(&rt->screate_mu);
  int rc = rt->be->stream_create(rt->bst, device, bs, err);
  uint32_t i = rt->screated;
  if (rc == 0)
    rt->screated++;
  pthread_mutex_unlock(&rt->screate_mu);
  if (index != NULL)
    *index = i;
  return rc;
}

int cua__ensure_streams(cua_runtime *rt, int device, int n) {
  cua__device *dv = &rt->devs[device];
  while (dv->nstreams < n) {
    size_t cap = (size_t)dv->capstreams, gcap = (size_t)rt->capstreams;
    size_t acap = (size_t)rt->capactive;
    /* rt->active has room for every stream: listing one never fails. */
    if (cua__grow(&dv->streams, &cap, (size_t)dv->nstreams + 1,
                  sizeof *dv->streams) ||
        cua__grow(&rt->streams, &gcap, (size_t)rt->nstreams + 1,
                  sizeof *rt->streams) ||
        cua__grow(&rt->active, &acap, (size_t)rt->nstreams + 1,
                  sizeof *rt->active))
      return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
    dv->capstreams = (int)cap;
    rt->capstreams = (int)gcap;
    rt->capactive = (int)acap;
    cua__stream *s = cua__calloc(1, sizeof *s);
    if (s == NULL)
      return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
    cua_backend_err err = {{0}};
    uint32_t cidx = 0;
    int rc = cua__stream_create(rt, device, &s->bs, &cidx, &err);
    if (rc == 0 && cua__grow(&rt->smap, &rt->capsmap, (size_t)cidx + 1,
                             sizeof *rt->smap)) {
      rt->be->stream_destroy(rt->bst, s->bs);
      free(s);
      return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
    }
    if (rc) {
      free(s);
      return cua__fail(rt, rc, "creating stream %d on device %d: %s",
                       dv->nstreams, device,
                       err.msg[0] ? err.msg : cua_strerror(rc));
    }
    /* Its creation index names it in changed(); a graph's or a capture's
     * streams between (NULL) are not the runtime's. */
    while (rt->nsmap < (size_t)cidx)
      rt->smap[rt->nsmap++] = NULL;
    rt->smap[cidx] = s;
    if (rt->nsmap <= (size_t)cidx)
      rt->nsmap = (size_t)cidx + 1;
    s->device = device;
    s->index = dv->nstreams;
    s->gidx = rt->nstreams;
    s->load.size = sizeof s->load;
    dv->streams[dv->nstreams++] = s;
    rt->streams[rt->nstreams++] = s;
    rt->stats.streams++;
  }
  return 0;
}

int cua__event_get(cua_runtime *rt, int device, cua_backend_event **ev) {
  cua__device *dv = &rt->devs[device];
  if (dv->nfree_events > 0) {
    *ev = dv->free_events[--dv->nfree_events];
    return 0;
  }
  cua_backend_err err = {{0}};
  int rc = rt->be->event_create(rt->bst, device, ev, &err);
  if (rc == 0)
    rt->stats.events_created++;
  return rc;
}

void cua__event_put(cua_runtime *rt, int device, cua_backend_event *ev) {
  cua__device *dv = &rt->devs[device];
  if (cua__grow(&dv->free_events, &dv->capfree_events, dv->nfree_events + 1,
                sizeof *dv->free_events)) {
    rt->be->event_destroy(rt->bst, ev);
    return;
  }
  dv->free_events[dv->nfree_events++] = ev;
}

void cua__wake_completion(cua_runtime *rt) {
  atomic_fetch_add_explicit(&rt->work_gen, 1, memory_order_release);
  pthread_cond_signal(&rt->work);
}

void cua__kick(cua_runtime *rt) {
  cua__wake_completion(rt);
  if (rt->ready_head != NULL && rt->be->wake != NULL)
    rt->be->wake(rt->bst);
}

/* -------------------------------------------------------------- runtime */

static void runtime_free(cua_runtime *rt);

/* rt->lock spins briefly before it sleeps where the C library offers it
 * (glibc's adaptive mutex): every submitting thread and the completion
 * thread take it for a few microseconds at a time, and with several
 * submitting threads, sleeping and waking on it cost more than the work
 * it guards. On an H200 (doc/results, twenty-fifth session, three
 * rounds), four threads submitting small kernels took 3.3-3.6 us per
 * submission with it against 3.4-4.2 us without; one thread, the same. */
static void init_runtime_lock(pthread_mutex_t *mu) {
#if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
  pthread_mutexattr_t a;
  if (pthread_mutexattr_init(&a) == 0) {
    int ok = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP) == 0 &&
             pthread_mutex_init(mu, &a) == 0;
    pthread_mutexattr_destroy(&a);
    if (ok)
      return;
  }
#endif
  pthread_mutex_init(mu, NULL);
}

/* fork(): a child has none of the runtime's threads (the completion
 * thread, the launch threads, the backend's), so a runtime made before
 * it is unusable there. A count of the forks this process is the child
 * of, bumped by pthread_atfork() in the child, tells: a load per check.
 * The process-wide leaf locks are held across the fork, so that none is
 * left locked in the child by a thread that is not there (a child making
 * a runtime would hang on it). Taken in the one order (dl_mu before
 * reg_lock: a module's constructor, run under dl_mu, may register a
 * policy), let go in the other. */
static atomic_uint fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void on_fork_prepare(void) {
  cua__loader_fork(1);
  cua__registry_fork(1);
  cua__unzip_fork(1);
}
static void on_fork_parent(void) {
  cua__unzip_fork(0);
  cua__registry_fork(0);
  cua__loader_fork(0);
}
static void on_fork_child(void) {
  atomic_fetch_add(&fork_gen, 1);
  on_fork_parent();
}
static void fork_watch(void) {
  (void)pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}
void cua__fork_watch(void) {
  pthread_once(&fork_once, fork_watch);
}

int cua_runtime_create_ex(cua_runtime **out, const cua_runtime_options *o) {
  if (out == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_runtime_create: NULL rt");
  *out = NULL;
  cua_runtime_options opts;
  memset(&opts, 0, sizeof opts);
  if (o != NULL) {
    if (o->size == 0 || o->size > sizeof opts)
      return cua__fail(NULL, CUA_ERR_INVAL,
                       "cua_runtime_create_ex: options.size is %zu (expected "
                       "%zu)",
                       o->size, sizeof opts);
    memcpy(&opts, o, o->size);
  }
  unsigned known = CUA_RUNTIME_IGNORE_ENV | CUA_RUNTIME_NO_SYSTEM_CONFIG;
  if ((opts.flags & ~known) != 0)
    return cua__fail(NULL, CUA_ERR_INVAL,
                     "cua_runtime_create_ex: options.flags has unknown bits "
                     "0x%x (known: CUA_RUNTIME_IGNORE_ENV, "
                     "CUA_RUNTIME_NO_SYSTEM_CONFIG)",
                     opts.flags & ~known);
  cua__fork_watch();
  cua_runtime *rt = cua__calloc(1, sizeof *rt);
  if (rt == NULL)
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  rt->fork_gen = atomic_load(&fork_gen);
  init_runtime_lock(&rt->lock);
  pthread_mutex_init(&rt->reg_lock, NULL);
  pthread_mutex_init(&rt->capture_mu, NULL);
  pthread_mutex_init(&rt->screate_mu, NULL);
  pthread_mutex_init(&rt->gcache_mu, NULL);
  pthread_mutex_init(&rt->exec_mu, NULL);
  pthread_mutex_init(&rt->waiters_mu, NULL);
  pthread_cond_init(&rt->exec_cv, NULL);
  atomic_init(&rt->closed, 0);
  atomic_init(&rt->holds, 1); /* the runtime's own, dropped by destroy */
  pthread_cond_init(&rt->work, NULL);
  pthread_cond_init(&rt->idle, NULL);
  for (int k = 0; k < CUA__LAUNCHERS_MAX; k++) {
    cua__launcher *l = &rt->launchers[k];
    l->rt = rt;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    atomic_init(&l->queued, 0);
  }
  /* Up to 16k ops and nodes (about 10 MB each) and 4k submissions, points
   * and command lists are kept for reuse (a list per submission waits in
   * the launch threads' queues while one thread streams submissions). Ops
   * are made on any thread; the rest only under rt->lock, which then
   * guards taking from their pools. */
  cua__pool_init(&rt->op_pool, sizeof(cua_op), 16384, NULL, 0);
  cua__pool_init(&rt->node_pool, sizeof(cua__node), 16384, NULL, 1);
  rt->node_pool.prefetch = 1;
  cua__pool_init(&rt->sub_pool, sizeof(cua__sub), 4096, cua__sub_fini, 1);
  cua__pool_init(&rt->point_pool, sizeof(cua__point), 4096, cua__point_fini, 1);
  cua__pool_init(&rt->list_pool, sizeof(cua__cmdlist), 4096, cua__cmdlist_fini,
                 1);
  /* Nodes' edge arrays past the inline ones (4096 of 256 bytes at most). */
  cua__pool_init(&rt->edge_pool, CUA__EDGE_BLOCK * sizeof(cua__dep), 4096, NULL,
                 1);
  /* Ops' input arrays past the inline ones; ops are made on any thread. */
  cua__pool_init(&rt->input_pool, CUA__INPUT_BLOCK * sizeof(cua_op *), 4096,
                 NULL, 0);
  rt->stats.size = sizeof rt->stats;
  rt->ignore_env = (opts.flags & CUA_RUNTIME_IGNORE_ENV) != 0;
  char err[CUA__ERRLEN];
  int rc = cua__config_load(&rt->cfg, opts.config_path, opts.config_text,
                            opts.flags, err, sizeof err);
  if (rc) {
    cua__fail(NULL, rc, "%s", err);
    goto fail;
  }
  if ((rc = cua__backend_open(rt)) != 0)
    goto fail;
  int ndev = rt->be->device_count(rt->bst);
  rt->devs = cua__calloc((size_t)ndev, sizeof *rt->devs);
  if (rt->devs == NULL) {
    rc = cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
    goto fail;
  }
  rt->ndev = ndev;
  /* (stops at the first pair that is not: a simulated machine of 65,536
   * GPUs has 4 billion pairs) */
  rt->all_peers = 1;
  for (int a = 0; a < rt->ndev && rt->all_peers; a++)
    for (int b = 0; b < rt->ndev && rt->all_peers; b++)
      if (a != b &&
          (rt->be->can_access == NULL || !rt->be->can_access(rt->bst, a, b)))
        rt->all_peers = 0;
  if ((rc = cua__models_open(rt)) != 0)
    goto fail;
  pthread_mutex_lock(&rt->lock);
  rc = cua__open_policies(rt);
  pthread_mutex_unlock(&rt->lock);
  if (rc)
    goto fail;
  if ((rc = cua__observers_open(rt)) != 0)
    goto fail;
  if ((rc = cua__launcher_start(rt)) != 0) {
    cua__fail(NULL, rc, "cannot start the launch threads");
    goto fail;
  }
  if (cua__pthread_create(&rt->thread, NULL, cua__completion_thread, rt)) {
    rc =
        cua__fail(NULL, CUA_ERR_INTERNAL, "cannot start the completion thread");
    goto fail;
  }
  rt->thread_started = 1;
  *out = rt;
  return 0;
fail:
  cua__launcher_stop(rt);
  runtime_free(rt);
  return rc;
}

int cua_runtime_create(cua_runtime **rt, const char *config_path) {
  cua_runtime_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.config_path = config_path;
  return cua_runtime_create_ex(rt, &o);
}

static void runtime_free(cua_runtime *rt) {
  atomic_store(&rt->closed, 1);
  /* Everything ran: the backend gives the device times it still owes
   * (backend ABI 1.7), then the observers get the last records. */
  if (rt->obs != NULL && rt->be != NULL &&
      rt->be->size >= offsetof(cua_backend_descriptor, flush_times) +
                          sizeof rt->be->flush_times &&
      rt->be->flush_times != NULL)
    rt->be->flush_times(rt->bst);
  cua__observers_close(rt);
  if (rt->be != NULL) {
    cua__gcache_clear(rt);
    cua__graphs_detach(rt);
    cua__capture_streams_free(rt);
    cua__buffers_detach(rt);
    cua__modules_detach(rt);
  }
  pthread_mutex_lock(&rt->lock);
  cua__polinst_close_all(rt);
  pthread_mutex_unlock(&rt->lock);
  cua__models_close(rt);
  for (int i = 0; i < rt->nstreams; i++) {
    cua__stream *s = rt->streams[i];
    while (s->points_head != NULL) {
      cua__point *p = s->points_head;
      s->points_head = p->next;
      rt->be->event_destroy(rt->bst, p->event);
      cua__pool_put(&rt->point_pool, p);
    }
    rt->be->stream_destroy(rt->bst, s->bs);
    free(s->vc);
    free(s);
  }
  free(rt->streams);
  free(rt->smap);
  free(rt->active);
  for (int d = 0; d < rt->ndev && rt->devs != NULL; d++) {
    cua__device *dv = &rt->devs[d];
    for (size_t i = 0; i < dv->nfree_events; i++)
      rt->be->event_destroy(rt->bst, dv->free_events[i]);
    free(dv->free_events);
    free(dv->streams);
  }
  free(rt->devs);
  if (rt->be != NULL) {
    rt->be->destroy(rt->bst);
    cua__config_params_free(rt->bparams, rt->nbparams);
    cua__module_unload(rt->bmod);
  }
  cua__config_free(rt->cfg);
  free(rt->policy_error);
  free(rt->inputs);
  pthread_mutex_destroy(&rt->lock);
  pthread_mutex_destroy(&rt->reg_lock);
  pthread_mutex_destroy(&rt->capture_mu);
  pthread_mutex_destroy(&rt->screate_mu);
  pthread_mutex_destroy(&rt->gcache_mu);
  pthread_mutex_destroy(&rt->exec_mu);
  pthread_mutex_destroy(&rt->waiters_mu);
  pthread_cond_destroy(&rt->exec_cv);
  pthread_cond_destroy(&rt->work);
  pthread_cond_destroy(&rt->idle);
  for (int k = 0; k < CUA__LAUNCHERS_MAX; k++) {
    pthread_mutex_destroy(&rt->launchers[k].mu);
    pthread_cond_destroy(&rt->launchers[k].cv);
  }
  cua__runtime_release(rt);
}

/* Ops are the one handle that does not go through a registry: a list
 * under reg_lock would cost every op a lock and four pointer writes, and
 * detaching would then write op->rt, which op functions read unlocked.
 * Instead each op holds the runtime struct itself (one atomic increment at
 * creation, one decrement when freed); so do nodes and submissions, which
 * may outlive the runtime in ops and futures. cua_runtime_destroy() frees
 * all the runtime owns and sets closed; the struct, now only `closed`,
 * `holds` and the pools these objects go back to, stays until the last of
 * them is freed, so op->rt is never dangling and never reused by another
 * runtime. */
void cua__runtime_hold(cua_runtime *rt) {
  atomic_fetch_add_explicit(&rt->holds, 1, memory_order_relaxed);
}

void cua__runtime_release(cua_runtime *rt) {
  if (atomic_fetch_sub_explicit(&rt->holds, 1, memory_order_acq_rel) != 1)
    return;
  cua__pool_drain(&rt->op_pool);
  cua__pool_drain(&rt->node_pool);
  cua__pool_drain(&rt->sub_pool);
  cua__pool_drain(&rt->point_pool);
  cua__pool_drain(&rt->list_pool);
  cua__pool_drain(&rt->edge_pool);
  cua__pool_drain(&rt->input_pool);
  free(rt);
}

int cua__runtime_closed(const cua_runtime *rt, const char *what) {
  if (cua__forked(rt))
    return cua__fail(rt, CUA_ERR_CANCELED,
                     "%s: the runtime was made before this process was "
                     "forked, and its threads are the parent's: make a "
                     "runtime in this process",
                     what);
  if (!atomic_load_explicit(&rt->closed, memory_order_acquire))
    return 0;
  return cua__fail(rt, CUA_ERR_CANCELED,
                   "%s: the op's runtime is closed (cua_runtime_destroy() was "
                   "called)",
                   what);
}

int cua__forked(const cua_runtime *rt) {
  return rt != NULL &&
         atomic_load_explicit(&fork_gen, memory_order_relaxed) != rt->fork_gen;
}

/* Blocks until no submission is in flight, as a waiting program thread:
 * for a simulated clock (rt->vblocked) and for the backend's waited()
 * (cua__waiting(), taken outside rt->lock). Returns at once, telling no
 * one, when nothing is in flight. */
static void wait_idle(cua_runtime *rt) {
  pthread_mutex_lock(&rt->lock);
  if (rt->nsubs == 0) {
    pthread_mutex_unlock(&rt->lock);
    return;
  }
  pthread_mutex_unlock(&rt->lock);
  cua__waiting(rt, 1);
  pthread_mutex_lock(&rt->lock);
  if (rt->vclock != NULL)
    atomic_fetch_add(&rt->vblocked, 1);
  while (rt->nsubs > 0)
    pthread_cond_wait(&rt->idle, &rt->lock);
  if (rt->vclock != NULL)
    atomic_fetch_sub(&rt->vblocked, 1);
  pthread_mutex_unlock(&rt->lock);
  cua__waiting(rt, -1);
}

void cua_runtime_destroy(cua_runtime *rt) {
  if (rt == NULL)
    return;
  /* In a forked child the runtime's threads are not there to join: it is
   * left as it is (its memory is the child's copy), and said so. */
  if (cua__runtime_closed(rt, "cua_runtime_destroy") != 0) {
    fprintf(stderr, "cuasync: %s; it is not destroyed\n",
            cua_runtime_error(rt));
    return;
  }
  /* It waits for the work in flight, and joins the completion thread: from
   * a stream function or that thread, never. Refused, loudly, as the call
   * returns nothing. */
  if (cua__refuse_wait(rt, "cua_runtime_destroy", 0) != 0) {
    fprintf(stderr, "cuasync: %s; the runtime is not destroyed\n",
            cua_runtime_error(rt));
    return;
  }
  /* From here on a submission is refused: callbacks that submit a
   * follow-up of their own work would otherwise keep wait_idle() waiting
   * for ever. */
  pthread_mutex_lock(&rt->lock);
  rt->closing = 1;
  pthread_mutex_unlock(&rt->lock);
  wait_idle(rt);
  pthread_mutex_lock(&rt->lock);
  rt->stopping = 1;
  cua__wake_completion(rt);
  pthread_mutex_unlock(&rt->lock);
  if (rt->be->wake)
    rt->be->wake(rt->bst);
  if (rt->thread_started)
    pthread_join(rt->thread, NULL);
  /* A submitter may still be leaving the executor after its last command
   * completed its future. */
  while (atomic_load(&rt->executing) > 0)
    sched_yield();
  cua__launcher_stop(rt);
  runtime_free(rt);
}

int cua_runtime_synchronize(cua_runtime *rt) {
  if (rt == NULL)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_runtime_synchronize: NULL runtime");
  /* A stream function would wait for its own submission, a host step,
   * map or callback for its own completion thread: refused, as
   * cua_future_wait() is there. */
  int busy = cua__refuse_wait(rt, "cua_runtime_synchronize", 0);
  if (busy != 0)
    return busy;
  if (cua__forked(rt))
    return cua__runtime_closed(rt, "cua_runtime_synchronize");
  wait_idle(rt);
  return 0;
}

uint64_t cua_runtime_now_ns(const cua_runtime *rt) {
  return rt == NULL ? 0 : cua__rt_now(rt);
}

const char *cua_runtime_backend(const cua_runtime *rt) {
  if (rt == NULL) {
    cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_backend: NULL runtime");
    return NULL;
  }
  return rt->be->name;
}

const char *cua_runtime_config_path(const cua_runtime *rt) {
  if (rt == NULL) {
    cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_config_path: NULL runtime");
    return NULL;
  }
  return rt->cfg->path;
}

int cua_device_count(const cua_runtime *rt) {
  if (rt == NULL) {
    cua__fail(rt, CUA_ERR_INVAL, "cua_device_count: NULL runtime");
    return 0;
  }
  return rt->ndev;
}

int cua_device_get_info(const cua_runtime *rt, int device,
                        cua_device_info *info) {
  if (rt == NULL || info == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_device_get_info: NULL %s",
                     rt == NULL ? "runtime" : "info");
  if (device < 0 || device >= rt->ndev)
    return cua__fail(rt, CUA_ERR_BAD_DEVICE,
                     "cua_device_get_info: no device %d (the runtime has %d)",
                     device, rt->ndev);
  cua_device_info tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.size = sizeof tmp;
  int rc = rt->be->device_info(rt->bst, device, &tmp);
  if (rc)
    return cua__fail(rt, rc, "cua_device_get_info: device %d: %s", device,
                     cua_strerror(rc));
  size_t n = info->size && info->size < sizeof tmp ? info->size : sizeof tmp;
  tmp.size = n;
  memcpy(info, &tmp, n);
  return rc;
}

int cua_runtime_stats(const cua_runtime *rt, cua_stats *st) {
  if (rt == NULL || st == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_stats: NULL %s",
                     rt == NULL ? "runtime" : "stats");
  if (st->size == 0)
    return cua__fail(rt, CUA_ERR_INVAL,
                     "cua_runtime_stats: stats.size is 0 (set it to "
                     "sizeof(cua_stats))");
  cua_runtime *w = (cua_runtime *)rt;
  pthread_mutex_lock(&w->lock);
  cua_stats tmp = rt->stats;
  pthread_mutex_unlock(&w->lock);
  tmp.graphs = atomic_load(&w->n_graphs);
  tmp.graph_launches = atomic_load(&w->n_graph_launches);
  tmp.graph_updates = atomic_load(&w->n_graph_updates);
  tmp.graph_captures = atomic_load(&w->n_graph_captures);
  tmp.graph_replays = atomic_load(&w->n_graph_replays);
  tmp.graph_evictions = atomic_load(&w->n_graph_evictions);
  tmp.observer_drops = cua__observers_drops(rt);
  tmp.lists_handed_over = atomic_load(&w->lists_handed);
  size_t n = st->size < sizeof tmp ? st->size : sizeof tmp;
  tmp.size = n;
  memcpy(st, &tmp, n);
  return 0;
}

int cua_host_alloc(cua_runtime *rt, size_t bytes, void **ptr) {
  if (rt == NULL || ptr == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_host_alloc: NULL %s",
                     rt == NULL ? "runtime" : "ptr");
  if (bytes == 0)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_host_alloc: 0 bytes");
  if (rt->be->host_alloc == NULL) {
    *ptr = cua__malloc(bytes);
    return *ptr ? 0 : cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  }
  cua_backend_err err = {{0}};
  int rc = rt->be->host_alloc(rt->bst, bytes, ptr, &err);
  return rc ? cua__fail(rt, rc, "cua_host_alloc: %zu bytes: %s", bytes,
                        err.msg[0] ? err.msg : cua_strerror(rc))
            : 0;
}

void cua_host_free(cua_runtime *rt, void *ptr) {
  if (rt == NULL || ptr == NULL)
    return;
  if (rt->be->host_free == NULL)
    free(ptr);
  else
    rt->be->host_free(rt->bst, ptr);
}

/* -------------------------------------------------------- code modules */

/* Loads @p bytes of device code into a new module; @p fn names the
 * public function in messages. */
static int load_image(cua_module **out, cua_runtime *rt, const void *image,
                      size_t bytes, const char *fn) {
  if (rt->be->module_load == NULL)
    return cua__fail(rt, CUA_ERR_NOTSUP,
                     "%s: the %s backend cannot load device code modules", fn,
                     rt->be->name);
  cua_module *m = cua__calloc(1, sizeof *m);
  if (m == NULL)
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  cua_backend_err err = {{0}};
  pthread_mutex_lock(&rt->lock);
  int rc = rt->be->module_load(rt->bst, image, bytes, &m->bm, &err);
  pthread_mutex_unlock(&rt->lock);
  if (rc) {
    free(m);
    return cua__fail(rt, rc, "%s: %s", fn,
                     err.msg[0] ? err.msg : cua_strerror(rc));
  }
  m->rt = rt;
  atomic_init(&m->refs, 1);
  pthread_mutex_lock(&rt->reg_lock);
  m->next = rt->modules;
  rt->modules = m;
  pthread_mutex_unlock(&rt->reg_lock);
  *out = m;
  return 0;
}

int cua_module_load_data(cua_module **out, cua_runtime *rt, const void *image,
                         size_t bytes) {
  if (out != NULL)
    *out = NULL;
  if (out == NULL || rt == NULL || image == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_module_load_data: NULL %s",
                     out == NULL  ? "mod"
                     : rt == NULL ? "runtime"
                                  : "image");
  if (bytes == 0)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_module_load_data: 0 bytes");
  return load_image(out, rt, image, bytes, "cua_module_load_data");
}

int cua_module_load(cua_module **out, cua_runtime *rt, const char *path) {
  if (out != NULL)
    *out = NULL;
  if (out == NULL || rt == NULL || path == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_module_load: NULL %s",
                     out == NULL  ? "mod"
                     : rt == NULL ? "runtime"
                                  : "path");
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_module_load: cannot open %s: %s",
                     path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (n == 0) {
    fclose(f);
    return cua__fail(rt, CUA_ERR_INVAL, "cua_module_load: %s is empty", path);
  }
  char *buf = n > 0 ? cua__malloc((size_t)n + 1) : NULL;
  if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(buf);
    return cua__fail(rt, CUA_ERR_INVAL, "cua_module_load: cannot read %s",
                     path);
  }
  fclose(f);
  buf[n] = '\0';
  int rc = load_image(out, rt, buf, (size_t)n + 1, "cua_module_load");
  free(buf);
  return rc;
}

void cua_module_destroy(cua_module *m) {
  if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
    return;
  cua_runtime *rt = m->rt;
  if (rt != NULL) {
    pthread_mutex_lock(&rt->reg_lock);
    for (cua_module **pp = &rt->modules; *pp; pp = &(*pp)->next)
      if (*pp == m) {
        *pp = m->next;
        break;
      }
    pthread_mutex_unlock(&rt->reg_lock);
    rt->be->module_unload(rt->bst, m->bm);
  }
  free(m);
}

void cua__modules_detach(cua_runtime *rt) {
  pthread_mutex_lock(&rt->reg_lock);
  for (cua_module *m = rt->modules; m != NULL; m = m->next) {
    rt->be->module_unload(rt->bst, m->bm);
    m->rt = NULL;
  }
  rt->modules = NULL;
  pthread_mutex_unlock(&rt->reg_lock);
}
