/*
 * core/flush.c: a round's command list on its way to the executor: at the
 * round's end (cua__round_flush()), in chunks while a large submission is
 * still being decided, handed to the launch threads, or relayed.
 *
 * Chunks: a submission's round (commands.c, cua__run_round()) applies
 * what it decided so far, with rt->lock released, only between decisions
 * (cua__chunk_apply()), or queues it for the launch threads
 * (cua__chunk_hand_over()), so that the device starts on the first ops
 * while the rest are decided.
 *
 * A relayed round (launch = relay, and auto on driver backends:
 * cua__relay_start()) goes on being decided by a launch thread, under
 * rt->lock (cua__decide_rest()), while the submitting thread applies its
 * chunks, and then its tail, with no core lock, in one executor scope
 * (relay_apply(), which calls the executor, and so the backend and stream
 * functions, as cua__round_flush() does); their queue, the round's
 * cua__relay, is guarded by its own mu, a leaf lock, and the round itself
 * belongs to the launch thread from the hand-over until it sets
 * relay->done.
 *
 * Owns: when and by whom a round's list is applied, the kick that wakes
 * the completion thread after it, and rt->open_rounds (submissions' rounds
 * applying a chunk or relayed, during which the completion thread's
 * rounds mark nothing: commands.c). Everything here is called under
 * rt->lock and releases it only around applying a list (or, on a relayed
 * round's submitting thread, until the round is decided), except
 * cua__decide_rest(), which a launch thread calls without it and which
 * takes it.
 */
#include "config.h"
#include "internal.h"

#include <string.h>

/* A chunk handed to the launch threads is twice as long as the one
 * before, up to CHUNK_MAX launches (commands.c says why). */
#define CHUNK_MAX 256

/* Without a launch thread, a submission's round (r->chunked, set by
 * do_submit()) applies its list in chunks itself, between decisions, with
 * rt->lock released: the first after CHUNK_FIRST launches, each next one
 * twice as long, with no cap, so that a DAG of N ops releases the lock
 * about log2(N / CHUNK_FIRST) times. The device starts on the first ops
 * while the rest are decided: on an H200, the 50 us stencil of 1,024
 * tasks under round-robin waited 0.8 ms of decisions (after 1 ms of
 * building) before its first op started, 5% of its makespan; with the
 * chunks, 1.08-1.10x raw-streams instead of 1.13-1.17x (doc/results,
 * fifteenth session). These keep the marks every MARK_EVERY launches,
 * batched with nothing. (The third session tried chunks of at
 * most CHUNK_MAX launches: a chain of 10,000 short kernels took the lock
 * back 40 times, against the completion thread, and ran 1.2x slower.) */
void cua__chunk_apply(cua_runtime *rt, cua__round *r) {
  (void)cua__exact_points(r);
  cua__kick_at_flush(rt, r);
  rt->open_rounds++;
  cua__round_flush(rt, r, 1);
  rt->open_rounds--;
  r->chunk_len = 0;
  r->chunk_at *= 2;
  r->now = 0; /* the next placement reads the clock again */
}

void cua__chunk_hand_over(cua_runtime *rt, cua__round *r) {
  (void)cua__exact_points(r);
  atomic_fetch_add(&rt->executing, 1);
  if (cua__launcher_push(rt, &r->cmds) != 0) {
    /* Not now (a stream function to launch, no holder): the rest of the
     * round is decided in chunks that this thread applies (cua__chunk_apply()),
     * as without a launch thread, each still offered to the launch thread
     * first once a chunk went there (r->handed, cua__round_flush()). */
    atomic_fetch_sub(&rt->executing, 1);
    r->no_chunks = 1;
    return;
  }
  r->first_launch = 0;
  r->handed = 1;
  r->chunk_len = 0;
  r->chunk_at = r->chunk_at * 2 > CHUNK_MAX ? CHUNK_MAX : r->chunk_at * 2;
  r->now = 0; /* the next placement reads the clock again, as after a chunk
               * of its own: its expected start and its trace instant */
}

/* launch = relay (and auto on driver backends): a submission's round with
 * at least RELAY_MIN nodes of its build left to decide at its first chunk
 * goes on deciding on a launch thread, while the submitting thread
 * applies the chunks it decides (relay_apply()). The launches stay on the
 * submitting thread, as a program's own would be, and the deciding,
 * several times faster than the launches it decides, runs beside them
 * instead of between them. */
#define RELAY_MIN 128
#define RELAY_SPIN_NS 20000u

/* Ends a relayed round's current chunk: its exact points attached, a
 * stream function among its launches noted (launch threads stop batching
 * marks, as when a list is offered to them), its list moved to *@p out,
 * and the next chunk twice as long. */
static void relay_take_chunk(cua_runtime *rt, cua__round *r,
                             cua__cmdlist *out) {
  (void)cua__exact_points(r);
  (void)cua__user_code_at_launch(rt, &r->cmds);
  *out = r->cmds;
  memset(&r->cmds, 0, sizeof r->cmds);
  r->first_launch = 0;
  r->chunk_len = 0;
  r->chunk_at *= 2;
  r->now = 0; /* the next placement reads the clock again */
}

/* A launch thread's chunk of a relayed round goes to the submitting
 * thread (under rt->lock, which the launch thread holds). A list without
 * a holder stays in r->cmds and grows into the next chunk, or the tail. */
void cua__relay_push(cua_runtime *rt, cua__round *r) {
  cua__cmdlist *h = r->cmds.box;
  if (h == NULL || r->cmds.n == 0)
    return;
  atomic_fetch_add(&rt->executing, 1);
  relay_take_chunk(rt, r, h);
  h->next = NULL;
  cua__relay *q = r->relay;
  pthread_mutex_lock(&q->mu);
  if (q->tail != NULL)
    q->tail->next = h;
  else
    q->head = h;
  q->tail = h;
  atomic_fetch_add_explicit(&q->queued, 1, memory_order_release);
  if (q->sleeping)
    pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

/* The submitting thread's part of a relayed round: with rt->lock
 * released, applies @p first (its first chunk), every chunk the launch
 * thread decides, in decision order, and once the round is decided its
 * tail (r->cmds: exact points and marks), then takes rt->lock back with
 * nothing left to apply. All of them in one executor scope
 * (cua__exec_open()): a stream function among them that submits has its
 * lists applied after the tail, since they are decided after the whole
 * round (cua__relay_nested_wait() makes sure of it). So every list of
 * the round is applied by this thread, in decision order, and none is
 * handed to a launch thread behind a list decided later. */
/* The relayed round this thread applies, if any: a stream function among
 * its lists that submits waits until the round is decided
 * (cua__relay_nested_wait()). */
static _Thread_local cua__relay *tls_relay;

/* A submission made while this thread applies a relayed round (a stream
 * function of it submitting, on a backend that runs them at launch) waits,
 * with no lock held, until the launch thread has decided the whole round:
 * its list, applied after the round's (cua__exec_open()), must come after
 * all of the round's on every stream. The launch thread takes rt->lock
 * some time after it is woken, and a stream function of the first chunk
 * could take it first: its submission then took turns on a stream before
 * chunks the launch thread decided later, which this thread applies
 * first, and both waited for each other (a hang). The launch thread never
 * waits for this thread while it decides. */
void cua__relay_nested_wait(void) {
  cua__relay *q = tls_relay;
  if (q == NULL)
    return;
  pthread_mutex_lock(&q->mu);
  while (!q->done)
    pthread_cond_wait(&q->cv, &q->mu);
  pthread_mutex_unlock(&q->mu);
}

static void relay_apply(cua_runtime *rt, cua__round *r, cua__cmdlist *first) {
  cua__relay *q = r->relay;
  atomic_fetch_add(&rt->executing, 1);
  pthread_mutex_unlock(&rt->lock);
  cua__wake_completion(rt); /* (its marks, as after a list) */
  cua__exec_open();
  tls_relay = q; /* (never nested: cua__relay_start()) */
  cua__exec_in(rt, first);
  cua__cmdlist_release(rt, first);
  for (;;) {
    if (atomic_load_explicit(&q->queued, memory_order_acquire) == 0) {
      uint64_t until = cua__now_ns() + RELAY_SPIN_NS;
      for (unsigned i = 1;
           atomic_load_explicit(&q->queued, memory_order_acquire) == 0; i++) {
        cua__cpu_relax();
        if (i % 64 == 0 && cua__now_ns() >= until)
          break;
      }
    }
    pthread_mutex_lock(&q->mu);
    while (q->head == NULL && !q->done) {
      q->sleeping = 1;
      pthread_cond_wait(&q->cv, &q->mu);
      q->sleeping = 0;
    }
    cua__cmdlist *h = q->head;
    int done = q->done;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    if (h == NULL && done)
      break;
    while (h != NULL) {
      cua__cmdlist *next = h->next;
      atomic_fetch_sub_explicit(&q->queued, 1, memory_order_relaxed);
      /* Applied from a copy: releasing clears the list it is given, and
       * the holder itself goes back to the pool. */
      cua__cmdlist cl = *h;
      cl.next = NULL;
      cua__exec_in(rt, &cl);
      cua__cmdlist_release(rt, &cl);
      h = next;
    }
    cua__wake_completion(rt);
  }
  /* The tail: the round is this thread's again (relay->done). */
  if (r->cmds.n > 0) {
    (void)cua__user_code_at_launch(rt, &r->cmds);
    atomic_fetch_add(&rt->executing, 1);
    cua__exec_in(rt, &r->cmds);
  }
  cua__cmdlist_release(rt, &r->cmds);
  r->first_launch = 0;
  tls_relay = NULL;
  cua__exec_close();
  cua__wake_completion(rt);
  pthread_mutex_lock(&rt->lock);
  rt->open_rounds--;
}

/* Hands the rest of @p r's deciding to a launch thread (the submitting
 * thread then applies its chunks: relay_apply()); 0 when it cannot: no
 * launch thread, fewer than RELAY_MIN nodes left to decide, or this thread
 * is applying a list already (a stream function submitting). */
int cua__relay_start(cua_runtime *rt, cua__round *r) {
  if (r->left < RELAY_MIN || !rt->launcher_started || cua__exec_depth() > 0)
    return 0;
  cua__relay q;
  memset(&q, 0, sizeof q);
  pthread_mutex_init(&q.mu, NULL);
  pthread_cond_init(&q.cv, NULL);
  atomic_init(&q.queued, 0);
  cua__cmdlist first;
  relay_take_chunk(rt, r, &first);
  r->relay = &q;
  rt->open_rounds++;
  rt->stats.rounds_relayed++;
  cua__launcher_decide(rt, r);
  relay_apply(rt, r, &first);
  r->relay = NULL;
  pthread_cond_destroy(&q.cv);
  pthread_mutex_destroy(&q.mu);
  return 1;
}

void cua__decide_rest(cua_runtime *rt, cua__round *r) {
  cua__relay *q = r->relay;
  pthread_mutex_lock(&rt->lock);
  cua__run_round(rt, r);
  pthread_mutex_unlock(&rt->lock);
  /* r is the submitting thread's again from here, its tail in r->cmds. */
  pthread_mutex_lock(&q->mu);
  q->done = 1;
  /* (the submitting thread, waiting for chunks, or a submission of a
   * stream function of its, waiting for this: cua__relay_nested_wait()) */
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

void cua__kick_at_flush(cua_runtime *rt, cua__round *r) {
  r->kick = 1;
  r->kick_backend |= rt->ready_head != NULL;
}

/* The kick a round asked for, with rt->lock released: what it wakes the
 * completion thread for was decided under the lock, and that thread
 * checks for work under the lock before it waits, so none is lost; woken
 * now, it does not block at once on the lock this thread still held. */
static void unlock_and_kick(cua_runtime *rt, cua__round *r) {
  if (!r->kick) {
    pthread_mutex_unlock(&rt->lock);
    return;
  }
  int wake = r->kick_backend && rt->be->wake != NULL;
  r->kick = r->kick_backend = 0;
  /* Counted as executing: a thread that waits for this submission's future
   * and then destroys the runtime waits for this signal too
   * (cua_runtime_destroy()). */
  atomic_fetch_add(&rt->executing, 1);
  pthread_mutex_unlock(&rt->lock);
  cua__wake_completion(rt);
  if (wake)
    rt->be->wake(rt->bst);
  atomic_fetch_sub(&rt->executing, 1);
}

/* launch = auto: a submission's list goes to the launch threads
 * - while submissions come faster than they complete (at least
 *   AUTO_PENDING of them, this one included, are not done) from one
 *   thread (no other thread is in cua_submit()), or
 * - while several threads submit at once;
 * otherwise the submitting thread applies it, as with launch = caller.
 * So a program that submits and waits (latency) pays no hand-over and no
 * wake-up on its latency; one thread that submits many ops without
 * waiting decides while the launch threads launch, which batches the
 * marks of what queued meanwhile; and several submitting threads decide
 * one after the other under rt->lock while the launch threads launch,
 * each on its own streams, instead of each applying its own lists, which
 * made them take turns on the same streams and compete in the driver: on
 * an H200 (doc/results, twenty-fifth session, three rounds), four threads
 * submitting one small kernel each under round-robin took 4.9-5.5 us per
 * submission applying their own lists and 3.4-4.2 us handing them over,
 * with two launch threads (one thread alone: 3.0-3.9 us).
 * A round of the completion thread is applied by the thread that decided
 * it, and so are a large submission's own chunks, unless, with several
 * launch threads, one of them spans the streams of more than one
 * (cua__run_round()). Not done: rt->nsubs - rt->nsubs_done, as a
 * submission that is done may not be removed yet (the completion thread
 * fires its future before it takes rt->lock back to remove it), and a
 * thread that waits for each future would otherwise see it pending. 3:
 * two others not done, so that one long submission in the background
 * does not turn a submit-and-wait loop beside it into a stream. */
#define AUTO_PENDING 3

int cua__may_hand_over(cua_runtime *rt, const cua__cmdlist *cl, int relock) {
  if (!cua__launch_by_rule(rt->cfg->launch))
    return 1;
  if (!relock && rt->vclock == NULL) {
    int submitting =
        atomic_load_explicit(&rt->submitting, memory_order_relaxed);
    if (submitting > 1 ||
        (submitting == 1 && rt->nsubs - rt->nsubs_done >= AUTO_PENDING))
      return 1;
  }
  /* Applied here: a stream function among its launches still stops the
   * launch thread from batching marks, as if it had been offered. */
  (void)cua__user_code_at_launch(rt, cl);
  return 0;
}

/* Applies the round's commands. Called with rt->lock held; releases it
 * while the executor runs, and takes it again if @p relock. */
void cua__round_flush(cua_runtime *rt, cua__round *r, int relock) {
  if (r->cmds.n == 0) {
    if (!relock)
      unlock_and_kick(rt, r);
    cua__cmdlist_release(rt, &r->cmds);
    return;
  }
  atomic_fetch_add(&rt->executing, 1);
  if ((r->handed || cua__may_hand_over(rt, &r->cmds, relock)) &&
      cua__launcher_push(rt, &r->cmds) == 0) {
    if (!relock)
      unlock_and_kick(rt, r);
    r->first_launch = 0;
    return;
  }
  unlock_and_kick(rt, r);
  cua__exec(rt, &r->cmds);
  cua__cmdlist_release(rt, &r->cmds);
  if (relock)
    pthread_mutex_lock(&rt->lock);
  r->first_launch = 0;
}
