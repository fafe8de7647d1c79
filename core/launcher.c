/*
 * core/launcher.c: the launch threads ([runtime] launch_threads).
 *
 * Launch thread k applies (executor.c) the commands of the streams whose
 * gidx is k modulo their number, from its own queue, in decision order; a
 * list for the streams of several is split when it is queued
 * (push_split()). The tickets order them across threads as they order
 * the lists of submitting threads. A launch thread batches the lists
 * queued since it last looked, and of the marks of one stream among them
 * applies only some (cua__coalesce_marks()). Under launch = relay, the
 * last launch thread may also be given a submission's round to go on
 * deciding (its job: cua__launcher_decide(), decided under rt->lock by
 * flush.c's cua__decide_rest()).
 *
 * Owns: each launch thread's queue and job (its mu and cv; lists are
 * queued under rt->lock, so in decision order), s->last_mark and
 * cmd->superseded, which only the stream's launch thread touches, while
 * it batches marks, and the runtime's user_code_at_launch flag (atomic).
 * A launch thread applies its lists with no core lock held.
 */
#include "config.h"
#include "internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long an idle launch thread watches its queue before it sleeps: long
 * enough to stay awake between the submissions of a busy program (a few
 * microseconds apart), short enough that an idle runtime costs no CPU. */
#define LAUNCHER_SPIN_NS 50000u

int cua__user_code_at_launch(cua_runtime *rt, const cua__cmdlist *cl) {
  /* (a backend that runs stream functions on its own threads refuses no
   * list: once noted, there is nothing left to look for) */
  if (rt->host_exec &&
      atomic_load_explicit(&rt->user_code_at_launch, memory_order_relaxed))
    return 0;
  for (size_t i = 0; i < cl->n; i++)
    if (cl->v[i].kind == CUA__CMD_LAUNCH &&
        cl->v[i].node->kind == CUA_OP_FUNC) {
      /* From now on stream functions run, and one may poll a future whose
       * mark a later mark of a batch would cover while that later mark
       * waits behind the function (on its stream, or for it): the launch
       * thread applies every mark (see cua__coalesce_marks()). On a
       * backend that runs them on threads of its own (host), that is all:
       * its lists may still go to the launch thread. */
      atomic_store(&rt->user_code_at_launch, 1);
      return !rt->host_exec;
    }
  return 0;
}

/* The index of the launch thread of stream @p s. */
static inline int launcher_of(const cua_runtime *rt, const cua__stream *s) {
  return rt->nlaunchers > 1 ? s->gidx % rt->nlaunchers : 0;
}

int cua__launcher_spread(const cua_runtime *rt, const cua__cmdlist *cl) {
  if (rt->nlaunchers <= 1)
    return cl->n > 0;
  unsigned seen = 0;
  int n = 0;
  for (size_t i = 0; i < cl->n; i++) {
    unsigned bit = 1u << launcher_of(rt, cl->v[i].s);
    if (!(seen & bit)) {
      seen |= bit;
      n++;
    }
  }
  return n;
}

static void launcher_queue(cua__launcher *l, cua__cmdlist *h) {
  h->next = NULL;
  pthread_mutex_lock(&l->mu);
  l->nqueued++;
  if (l->tail != NULL)
    l->tail->next = h;
  else
    l->head = h;
  l->tail = h;
  atomic_fetch_add_explicit(&l->queued, 1, memory_order_release);
  if (l->sleeping)
    pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

/* Gives the holders of a split that failed back to the pool (from a
 * copy: releasing clears the list it is given, and the holder itself goes
 * back); -1. */
static int split_failed(cua_runtime *rt, cua__cmdlist **part) {
  for (int m = 0; m < rt->nlaunchers; m++)
    if (part[m] != NULL) {
      cua__cmdlist tmp = *part[m];
      cua__cmdlist_release(rt, &tmp);
    }
  return -1;
}

/* A list whose commands are for the streams of several launch threads is
 * split into one list per launch thread, each in a holder from the
 * runtime's pool, its commands in their order: each launch thread applies
 * its streams' commands in decision order, and the tickets order the
 * commands of one stream and a wait after its record across threads, as
 * between submitting threads (the file's opening). Under rt->lock. 0, or
 * -1 (nothing queued) when a holder could not be had. */
static int push_split(cua_runtime *rt, cua__cmdlist *cl) {
  cua__cmdlist *part[CUA__LAUNCHERS_MAX] = {NULL};
  int nparts = 0;
  for (size_t i = 0; i < cl->n; i++) {
    int k = launcher_of(rt, cl->v[i].s);
    if (part[k] != NULL)
      continue;
    int fresh;
    cua__cmdlist *h = cua__pool_get(&rt->list_pool, &fresh);
    if (h == NULL)
      return split_failed(rt, part);
    if (fresh)
      memset(h, 0, sizeof *h);
    h->n = 0;
    h->box = h;
    part[k] = h;
    nparts++;
  }
  for (size_t i = 0; i < cl->n; i++) {
    cua__cmdlist *h = part[launcher_of(rt, cl->v[i].s)];
    if (h->n == h->cap &&
        cua__grow(&h->v, &h->cap, h->n + 1, sizeof *h->v) != 0)
      return split_failed(rt, part);
    h->v[h->n++] = cl->v[i];
  }
  /* The caller counted one list executing; each part is one. */
  atomic_fetch_add(&rt->executing, nparts - 1);
  cua__cmdlist_release(rt, cl);
  for (int m = 0; m < rt->nlaunchers; m++)
    if (part[m] != NULL)
      launcher_queue(&rt->launchers[m], part[m]);
  return 0;
}

int cua__launcher_push(cua_runtime *rt, cua__cmdlist *cl) {
  if (!rt->launcher_started || cl->n == 0)
    return -1;
  /* A stream function that the backend runs at launch would hold the
   * launch thread, and every list queued behind it, for as long as it
   * runs: lists that launch one are applied by the thread that decided
   * them, as without a launch thread. Looked for before any other
   * refusal, so that a stream function launched by a list refused for
   * another reason (below) still stops the launch threads from batching
   * marks. */
  if (cua__user_code_at_launch(rt, cl) || cua__exec_depth() > 0)
    return -1;
  /* The list travels in its holder (a list without one, whose holder
   * could not be had, is applied by the caller). */
  cua__cmdlist *h = cl->box;
  if (h == NULL)
    return -1;
  int k = launcher_of(rt, cl->v[0].s);
  if (rt->nlaunchers > 1)
    for (size_t i = 1; i < cl->n; i++)
      if (launcher_of(rt, cl->v[i].s) != k)
        return push_split(rt, cl);
  *h = *cl;
  memset(cl, 0, sizeof *cl);
  launcher_queue(&rt->launchers[k], h);
  return 0;
}

void cua__launcher_decide(cua_runtime *rt, struct cua__round *r) {
  cua__launcher *l = &rt->launchers[rt->nlaunchers - 1];
  pthread_mutex_lock(&l->mu);
  l->job = r;
  l->job_after = l->nqueued;
  atomic_fetch_add_explicit(&l->queued, 1, memory_order_release);
  if (l->sleeping)
    pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

/* Of the MARKs of one stream in a batch of lists taken at once, only the
 * last of every MARK_RUN is applied: a mark says that the stream got to
 * its value, so it covers every earlier one, and each mark the device
 * writes costs the launching thread about as much as a third of a launch
 * (doc/results). A program that submits faster than the launch thread
 * applies gets one mark per stream per MARK_RUN of its lists instead of
 * one per submission; a failed mark still hands marking back to the
 * completion thread (apply()), from the value before the skipped ones.
 * Not one per batch: one thread that submits 10,000 ops without waiting
 * has most of them queued when it is done, and the launch thread takes
 * them as one batch; with only its last mark, the completion thread
 * finished none of them before the device had run them all, and then all
 * of them, after the end (on an H200, about a fifth of the run:
 * doc/results, twenty-first session).
 *
 * The price: a future of the batch completes when its stream reaches the
 * next mark applied, after up to MARK_RUN - 1 later ops there. And
 * it must not be paid where stream functions run: such code may poll a
 * future of the batch while the later mark that covers its own waits
 * behind that code (a later command of its stream, or of one that waits
 * for it), which would never end; on a backend that runs them at launch
 * it may even wait in the executor for its turn. So once a runtime has
 * launched a stream function, on any backend, every mark is applied
 * (user_code_at_launch).
 * A pipelined round's marks in its chunks (cmd->keep: one every 16
 * launches of a stream under launch = pipeline, every 64 in auto's,
 * commands.c) are applied as they are, and cover none before them. A
 * launch thread's batch holds only its own streams' commands, so no other
 * thread scans these streams' marks meanwhile. */
#define MARK_RUN 16

void cua__coalesce_marks(cua__cmdlist *h) {
  if (h == NULL || h->next == NULL)
    return;
  for (cua__cmdlist *l = h; l != NULL; l = l->next)
    for (size_t i = 0; i < l->n; i++) {
      cua__cmd *c = &l->v[i];
      if (c->kind != CUA__CMD_MARK)
        continue;
      cua__stream *s = c->s;
      if (c->keep) {
        /* A chunk's mark (launch = pipeline, commands.c) is applied, and
         * covers none before it. */
        s->last_mark = NULL;
        s->mark_run = 0;
        continue;
      }
      if (s->last_mark != NULL && s->mark_run < MARK_RUN - 1) {
        s->last_mark->superseded = 1;
        c->prev = s->last_mark->prev;
        s->mark_run++;
      } else {
        s->mark_run = 0; /* the one before (if any) is applied */
      }
      s->last_mark = c;
    }
  for (cua__cmdlist *l = h; l != NULL; l = l->next)
    for (size_t i = 0; i < l->n; i++) {
      l->v[i].s->last_mark = NULL;
      l->v[i].s->mark_run = 0;
    }
}

static void *launcher_main(void *arg) {
  cua__launcher *l = arg;
  cua_runtime *rt = l->rt;
  pthread_mutex_lock(&l->mu);
  for (;;) {
    if (l->head == NULL && l->job == NULL && !l->stop) {
      /* Watch the queue for a while, then sleep. */
      pthread_mutex_unlock(&l->mu);
      uint64_t until = cua__now_ns() + LAUNCHER_SPIN_NS;
      for (unsigned i = 1;
           atomic_load_explicit(&l->queued, memory_order_acquire) == 0; i++) {
        /* Watched with a pause, not a system call, so a list queued now
         * is seen within a fraction of a microsecond; the clock is read
         * every 64 turns, and the CPU given away every 1024. */
        cua__cpu_relax();
        if (i % 64 == 0 && cua__now_ns() >= until)
          break;
        if (i % 1024 == 0)
          sched_yield();
      }
      pthread_mutex_lock(&l->mu);
      while (l->head == NULL && l->job == NULL && !l->stop) {
        l->sleeping = 1;
        pthread_cond_wait(&l->cv, &l->mu);
        l->sleeping = 0;
      }
    }
    if (l->job != NULL && (l->head == NULL || l->taken >= l->job_after)) {
      /* A round to go on deciding, once the lists queued before it are
       * applied (their tickets come first; the batch taken last held
       * them all if it was taken after the round came), not after those
       * queued since, which may be many. */
      struct cua__round *r = l->job;
      l->job = NULL;
      atomic_fetch_sub_explicit(&l->queued, 1, memory_order_relaxed);
      pthread_mutex_unlock(&l->mu);
      cua__decide_rest(rt, r);
      pthread_mutex_lock(&l->mu);
      continue;
    }
    if (l->head == NULL)
      break; /* stopping, and everything queued is applied */
    cua__cmdlist *h = l->head;
    l->head = l->tail = NULL;
    l->taken = l->nqueued;
    pthread_mutex_unlock(&l->mu);
    /* (its batch holds only its own streams' commands: no other launch
     * thread scans these streams' marks) */
    if (!atomic_load(&rt->user_code_at_launch))
      cua__coalesce_marks(h);
    while (h != NULL) {
      cua__cmdlist *next = h->next;
      atomic_fetch_sub_explicit(&l->queued, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&rt->lists_handed, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&l->applied, 1, memory_order_relaxed);
      /* Applied from a copy: releasing clears the list it is given,
       * and the holder itself goes back to the pool. */
      cua__cmdlist cl = *h;
      cl.next = NULL;
      cua__exec(rt, &cl);
      cua__cmdlist_release(rt, &cl);
      h = next;
    }
    pthread_mutex_lock(&l->mu);
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

/* launch_threads = auto: two launch threads where launches are calls into
 * a device's driver, which takes launches on different streams from
 * several threads at once (on an H200, 1.4-1.7x the rate of one thread
 * with two: doc/results, twenty-fourth session), and where the machine has
 * the CPUs for them; one on a backend that runs ops on host threads (host,
 * sim), whose launches are queue pushes: there a second launch thread
 * only competes with the workers for CPUs (on a 2-core machine, the host
 * backend's micro-random under round-robin ran 5.5-8.4x the threads
 * baseline with two against 4.8-5.8x with one). */
static int auto_launch_threads(const cua_runtime *rt) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return rt->host_exec || cpus < 4 ? 1 : 2;
}

int cua__launcher_start(cua_runtime *rt) {
  if (rt->cfg->launch == CUA__LAUNCH_CALLER)
    return 0;
  int n = rt->cfg->launch_threads > 0 ? rt->cfg->launch_threads
                                      : auto_launch_threads(rt);
  rt->nlaunchers = n < 1 ? 1 : n > CUA__LAUNCHERS_MAX ? CUA__LAUNCHERS_MAX : n;
  for (int k = 0; k < rt->nlaunchers; k++) {
    cua__launcher *l = &rt->launchers[k];
    if (cua__pthread_create(&l->thread, NULL, launcher_main, l) != 0) {
      rt->nlaunchers = k;
      cua__launcher_stop(rt);
      return CUA_ERR_INTERNAL;
    }
  }
  rt->launcher_started = 1;
  /* (auto: where launches are driver calls, which cost several times the
   * deciding; a host backend's launches are queue pushes, and there the
   * submitting thread would mostly wait for the launch thread) */
  rt->decide_relay = rt->cfg->launch == CUA__LAUNCH_RELAY ||
                     (rt->cfg->launch == CUA__LAUNCH_AUTO && !rt->host_exec);
  return 0;
}

void cua__launcher_stop(cua_runtime *rt) {
  for (int k = 0; k < rt->nlaunchers; k++) {
    cua__launcher *l = &rt->launchers[k];
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
  }
  for (int k = 0; k < rt->nlaunchers; k++)
    pthread_join(rt->launchers[k].thread, NULL);
  rt->nlaunchers = 0;
  rt->launcher_started = 0;
}
