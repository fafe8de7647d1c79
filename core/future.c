/*
 * core/future.c: futures. A future is the user's handle on a submission;
 * its completion state has its own lock (sub->mu) so that it outlives the
 * runtime. sub->mu guards done, status, msg, efd and the callback fields;
 * cua__subs_fire() runs on the completion thread, the rest on user threads.
 *
 * The callback and cua_future_destroy(): the callback receives the future
 * handle, so the handle must outlive the call. cua__subs_fire() marks the
 * callback running (cb_state, cb_thread) under sub->mu before calling it,
 * and cua_future_destroy() on another thread waits, on sub->cv, until it
 * has returned. Destroying the future from within its own callback is
 * allowed: the callback then must not touch the handle afterwards. A
 * future destroyed before it completes still fires its callback, with
 * fut NULL.
 */
#include "config.h"
#include "internal.h"

#include <stddef.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* The submission behind @p f, or NULL, with the caller's failure set,
 * when the user destroyed @p f already. A destroyed handle is caught while
 * its block waits in the pool (pools keep blocks, and cua__sub_new()
 * clears the mark only when it reuses one); once reused, the handle is a
 * new submission's, and using it is undefined, as after free(). */
cua__sub *cua__future_live(const cua_future *f, const char *fn) {
  cua__sub *s = f->sub;
  if (atomic_load_explicit(&s->fut_gone, memory_order_relaxed)) {
    cua__fail(NULL, CUA_ERR_INVAL,
              "%s: the future was destroyed already (cua_future_destroy())",
              fn);
    return NULL;
  }
  return s;
}

/* Submissions come from their runtime's pool; the mutex and condition
 * variable stay initialised there between uses. */
cua__sub *cua__sub_new(cua_runtime *rt) {
  int fresh;
  cua__sub *s = cua__pool_get(&rt->sub_pool, &fresh);
  if (s == NULL)
    return NULL;
  memset(s, 0, offsetof(cua__sub, mu));
  if (fresh) {
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->kept_nodes = s->kept_order = NULL;
    s->kept_nodes_cap = s->kept_order_cap = 0;
  }
  atomic_init(&s->refs, 1);
  atomic_init(&s->done, 0);
  atomic_init(&s->fut_gone, 0);
  s->rt = rt;
  s->efd = -1;
  if (s->kept_nodes != NULL) {
    s->nodes = s->kept_nodes;
    s->capnodes = s->kept_nodes_cap;
    s->kept_nodes = NULL;
  } else {
    s->nodes = s->nodes_inl;
    s->capnodes = sizeof s->nodes_inl / sizeof *s->nodes_inl;
  }
  s->fut.sub = s;
  cua__runtime_hold(rt);
  return s;
}

void cua__sub_fini(void *p) {
  cua__sub *s = p;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv);
  free(s->kept_nodes);
  free(s->kept_order);
}

void cua__sub_keep(cua__node ***kept, size_t *kept_cap, cua__node **arr,
                   size_t cap) {
  free(*kept);
  *kept = NULL;
  if (cap <= CUA__SUB_KEEP_MAX) {
    *kept = arr;
    *kept_cap = cap;
  } else {
    free(arr);
  }
}

void cua__sub_keep_nodes(cua__sub *s) {
  if (s->nodes != NULL && s->nodes != s->nodes_inl)
    cua__sub_keep(&s->kept_nodes, &s->kept_nodes_cap, s->nodes, s->capnodes);
  s->nodes = NULL;
  s->nnodes = 0;
}

void cua__sub_release(cua__sub *s) {
  if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
    return;
  for (size_t i = 0; i < s->nnodes; i++)
    cua__node_release(s->nodes[i]);
  cua__sub_keep_nodes(s);
  if (s->root != NULL)
    cua__node_release(s->root);
  if (s->efd >= 0)
    close(s->efd);
  free(s->msg);
  cua_runtime *rt = s->rt;
  cua__pool_put(&rt->sub_pool, s);
  cua__runtime_release(rt);
}

static void signal_fd(int fd) {
  uint64_t one = 1;
  ssize_t w = write(fd, &one, sizeof one);
  (void)w;
}

/* Called by the completion thread, without the runtime lock, which it held
 * since status and msg were last written (so they are settled; readers
 * read them under mu once done is set). Marks @p s done and wakes its
 * waiters; a callback registered is marked running (cb_due) and runs in
 * run_callback(), after the rest of the batch is settled. */
static void settle(cua__sub *s) {
  pthread_mutex_lock(&s->mu);
  atomic_store_explicit(&s->done, 1, memory_order_release);
  if (s->vwaiters > 0) {
    /* Its waiters are running again from now on, for a simulated clock's
     * purposes (rt->vblocked): before this thread lets time move on. */
    atomic_fetch_sub(&s->rt->vblocked, s->vwaiters);
    s->vwaiters = 0;
  }
  if (s->waiters > 0) {
    /* Here, not on the waiters' threads: the runtime may be gone by the
     * time they run. */
    cua__waiting(s->rt, -s->waiters);
    s->waiters = 0;
  }
  if (s->efd >= 0)
    signal_fd(s->efd);
  s->cb_due = s->cb != NULL;
  if (s->cb_due) {
    s->cb_state = CUA__CB_RUNNING;
    s->cb_thread = pthread_self();
  }
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static void run_callback(cua__sub *s) {
  pthread_mutex_lock(&s->mu);
  int status = s->status;
  cua_future_cb cb = s->cb;
  void *arg = s->cb_arg;
  cua_future *f = s->cb_future;
  s->cb_due = 0;
  pthread_mutex_unlock(&s->mu);
  cb(f, status, arg);
  /* The runtime still holds s (its reference goes after this returns). */
  pthread_mutex_lock(&s->mu);
  s->cb_state = CUA__CB_DONE;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

void cua__subs_fire(cua__sub *batch) {
  for (cua__sub *s = batch; s != NULL; s = s->next_done)
    settle(s);
  for (cua__sub *s = batch; s != NULL; s = s->next_done)
    if (s->cb_due)
      run_callback(s);
}

int cua_future_wait(cua_future *f) {
  if (f == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_future_wait: NULL future");
  return cua_future_wait_timeout(f, UINT64_MAX);
}

int cua_future_wait_timeout(cua_future *f, uint64_t timeout_ns) {
  if (f == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL,
                     "cua_future_wait_timeout: NULL future");
  cua__sub *s = cua__future_live(f, "cua_future_wait_timeout");
  if (s == NULL)
    return CUA_ERR_INVAL;
  /* A stream function waiting may wait for work queued behind itself (on
   * its own stream, or in its own thread's command list), and a host step,
   * map or callback for work its own completion thread must complete:
   * refused, unless there is nothing left to wait for. */
  /* In a forked child, what the parent's runtime had in flight never
   * completes there. */
  if (!atomic_load_explicit(&s->done, memory_order_acquire) &&
      cua__runtime_closed(s->rt, timeout_ns == UINT64_MAX
                                     ? "cua_future_wait"
                                     : "cua_future_wait_timeout"))
    return CUA_ERR_CANCELED;
  int busy = cua__refuse_wait(
      s->rt,
      timeout_ns == UINT64_MAX ? "cua_future_wait" : "cua_future_wait_timeout",
      atomic_load_explicit(&s->done, memory_order_acquire));
  if (busy != 0)
    return busy;
  struct timespec dl = {0, 0}; /* read only with a timeout */
  if (timeout_ns != UINT64_MAX)
    dl = cua__deadline(timeout_ns);
  /* Completion is often microseconds away: watching the flag for a short
   * while saves the wake-up of a sleeping thread (several microseconds)
   * on the latency a caller sees. */
  uint64_t start = cua__now_ns();
  uint64_t spin_until = start + (timeout_ns < 20000 ? timeout_ns : 20000);
  while (!atomic_load_explicit(&s->done, memory_order_acquire) &&
         cua__now_ns() < spin_until)
    cua__cpu_relax(); /* spare a sibling hyperthread (the launch thread's) */
  pthread_mutex_lock(&s->mu);
  if (!s->done && s->rt->vclock != NULL) {
    /* A simulated clock moves on only while the program waits. */
    s->vwaiters++;
    atomic_fetch_add(&s->rt->vblocked, 1);
  }
  if (!s->done && s->rt->be_waited != NULL) {
    /* The backend may poll the device more eagerly while someone waits;
     * cua__subs_fire() counts this thread out. If it does, this thread
     * watches the flag without sleeping too, as a synchronize spins: the
     * completion is seen at once, and waking a sleeping thread can cost
     * tens of microseconds. */
    s->waiters++;
    if (cua__waiting(s->rt, 1)) {
      pthread_mutex_unlock(&s->mu);
      uint64_t until =
          timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
      while (!atomic_load_explicit(&s->done, memory_order_acquire) &&
             cua__now_ns() < until)
        cua__cpu_relax();
      pthread_mutex_lock(&s->mu);
    }
  }
  while (!s->done) {
    if (timeout_ns == UINT64_MAX) {
      pthread_cond_wait(&s->cv, &s->mu);
    } else if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT &&
               !s->done) {
      if (s->vwaiters > 0) {
        s->vwaiters--;
        atomic_fetch_sub(&s->rt->vblocked, 1);
      }
      if (s->waiters > 0) {
        s->waiters--;
        cua__waiting(s->rt, -1);
      }
      pthread_mutex_unlock(&s->mu);
      return cua__fail(s->rt, CUA_ERR_TIMEDOUT,
                       "cua_future_wait_timeout: still pending after %llu ns",
                       (unsigned long long)timeout_ns);
    }
  }
  int st = s->status;
  pthread_mutex_unlock(&s->mu);
  return st;
}

/* Under s->mu, @p s pending, on a backend with a clock of its own (sim):
 * the program that polls waits for the device as much as one that waits,
 * so it lets that clock move one step: until the future is done or the
 * clock has moved, and at most VPOLL_MAX_NS (100 ms) of real time (when
 * nothing can move it). A loop of polls thus moves through virtual time step by
 * step, as the same program's waits would. */
#define VPOLL_MAX_NS 100000000u
static void vpoll(cua__sub *s) {
  cua_runtime *rt = s->rt;
  uint64_t t0 = rt->vclock(rt->bst), until = cua__now_ns() + VPOLL_MAX_NS;
  /* Waiting only while the clock reads t0 (backend.c, b_quiescent()):
   * once it moved, the backend takes no second step for this poll, even
   * before this thread wakes up. */
  cua__runtime_hold(rt); /* its struct, should it close once s is done */
  atomic_store(&rt->vpoll_clock, t0);
  atomic_fetch_add(&rt->vpolls, 1);
  while (!s->done && rt->vclock(rt->bst) == t0 && cua__now_ns() < until) {
    struct timespec dl = cua__deadline(100000);
    pthread_cond_timedwait(&s->cv, &s->mu, &dl);
  }
  atomic_fetch_sub(&rt->vpolls, 1);
  cua__runtime_release(rt);
}

int cua_future_poll(const cua_future *f) {
  if (f == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_future_poll: NULL future");
  cua__sub *s = cua__future_live(f, "cua_future_poll");
  if (s == NULL)
    return CUA_ERR_INVAL;
  pthread_mutex_lock(&s->mu);
  if (!s->done && s->rt->vclock != NULL && !cua__in_user_code())
    vpoll(s);
  int st = s->done ? s->status : CUA_ERR_AGAIN;
  pthread_mutex_unlock(&s->mu);
  return st;
}

int cua_future_on_complete(cua_future *f, cua_future_cb cb, void *arg) {
  if (f == NULL || cb == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_future_on_complete: NULL %s",
                     f == NULL ? "future" : "callback");
  cua__sub *s = cua__future_live(f, "cua_future_on_complete");
  if (s == NULL)
    return CUA_ERR_INVAL;
  pthread_mutex_lock(&s->mu);
  if (s->cb != NULL) {
    pthread_mutex_unlock(&s->mu);
    return cua__fail(NULL, CUA_ERR_BUSY,
                     "cua_future_on_complete: the future has a callback "
                     "already (one per future)");
  }
  s->cb = cb;
  s->cb_arg = arg;
  s->cb_future = f;
  int done = s->done;
  /* status is final once done is set (the completion thread writes it
   * under rt->lock, then sets done under s->mu); before, it may still
   * change. */
  int st = done ? s->status : 0;
  /* Already complete: the completion thread fired without a callback, so
   * it is called here, on this thread; the handle is the caller's. */
  pthread_mutex_unlock(&s->mu);
  if (done)
    cb(f, st, arg);
  return 0;
}

int cua_future_fd(cua_future *f) {
  if (f == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_future_fd: NULL future");
  cua__sub *s = cua__future_live(f, "cua_future_fd");
  if (s == NULL)
    return CUA_ERR_INVAL;
  pthread_mutex_lock(&s->mu);
  if (s->efd < 0) {
    s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->efd >= 0 && s->done)
      signal_fd(s->efd);
  }
  int fd = s->efd;
  int e = errno;
  pthread_mutex_unlock(&s->mu);
  /* Out of descriptors is the process's state, not a defect: a later
   * call, once some are closed, makes the one this call could not. */
  if (fd < 0 && (e == EMFILE || e == ENFILE))
    return cua__fail(NULL, CUA_ERR_BUSY,
                     "cua_future_fd: eventfd: %s (no file descriptor left; "
                     "a later call may succeed once some are closed)",
                     strerror(e));
  if (fd < 0)
    return cua__fail(NULL, e == ENOMEM ? CUA_ERR_NOMEM : CUA_ERR_INTERNAL,
                     "cua_future_fd: eventfd: %s", strerror(e));
  return fd;
}

int cua_future_result(const cua_future *f, void **result) {
  if (f == NULL || result == NULL)
    return cua__fail(NULL, CUA_ERR_INVAL, "cua_future_result: NULL %s",
                     f == NULL ? "future" : "result");
  cua__sub *s = cua__future_live(f, "cua_future_result");
  if (s == NULL) {
    *result = NULL;
    return CUA_ERR_INVAL;
  }
  pthread_mutex_lock(&s->mu);
  int st = s->done ? s->status : CUA_ERR_AGAIN;
  pthread_mutex_unlock(&s->mu);
  *result = st == 0 ? s->root->result : NULL;
  return st;
}

const char *cua_future_error(const cua_future *f) {
  if (f == NULL) {
    cua__fail(NULL, CUA_ERR_INVAL, "cua_future_error: NULL future");
    return "";
  }
  cua__sub *s = cua__future_live(f, "cua_future_error");
  if (s == NULL)
    return "";
  pthread_mutex_lock(&s->mu);
  const char *m = s->done && s->msg ? s->msg : "";
  pthread_mutex_unlock(&s->mu);
  return m;
}

void cua_future_destroy(cua_future *f) {
  if (f == NULL)
    return;
  cua__sub *s = f->sub;
  pthread_mutex_lock(&s->mu);
  /* A callback running on another thread still uses the handle (and may
   * destroy it itself: then this destroy is the second, refused below). */
  while (s->cb_state == CUA__CB_RUNNING &&
         !pthread_equal(s->cb_thread, pthread_self()))
    pthread_cond_wait(&s->cv, &s->mu);
  if (atomic_load_explicit(&s->fut_gone, memory_order_relaxed)) {
    /* A second destroy would drop a reference the runtime still holds,
     * or put the block in the pool twice: refused, and said on standard
     * error, since the call returns nothing. */
    pthread_mutex_unlock(&s->mu);
    cua__fail(NULL, CUA_ERR_INVAL,
              "cua_future_destroy: the future was destroyed already (one "
              "cua_future_destroy() per future)");
    fprintf(stderr, "cuasync: %s\n", cua_runtime_error(NULL));
    return;
  }
  atomic_store_explicit(&s->fut_gone, 1, memory_order_relaxed);
  s->cb_future = NULL;
  pthread_mutex_unlock(&s->mu);
  cua__sub_release(s);
}
