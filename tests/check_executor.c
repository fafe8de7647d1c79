/*
 * tests/check_executor.c: the executor's own logic, on command lists made
 * by hand (core/executor.c and core/launcher.c; the suites that run DAGs
 * cover the rest).
 *
 * Mark batching: of the MARKs of one stream in a batch of lists the launch
 * thread took at once, only the last of every 16 is applied; it carries
 * the prev of the first it covers, so that a failure hands marking back
 * from the value before all of them; other streams' marks and other
 * commands are left alone.
 * The launch thread, given three such lists at once, gives the backend
 * one mark (three once batching is off). And batching stops for good once
 * a stream function is launched, on any backend (the host one runs them
 * on its workers, CUDA and the launchtime test backend at launch): such a
 * function may poll a future of a batch whose covering mark waits behind
 * it.
 *
 * Who applies a submission's list ([runtime] launch): caller never hands
 * one to the launch thread, thread hands every one over, auto only while
 * submissions come faster than they complete, or while several threads
 * submit at once (cua_stats's lists_handed_over counts them).
 */
#include "config.h"
#include "helpers.h"
#include "internal.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A runtime of @p text, whatever $CUASYNC_LAUNCH and
 * $CUASYNC_LAUNCH_THREADS the suite runs with (tests/launchthread/,
 * tests/launchsplit/): the launch mode and threads under test are the
 * text's (two launch threads where it does not say). */
static cua_runtime *open_mode(const char *text) {
  static const char *const vars[] = {"CUASYNC_LAUNCH",
                                     "CUASYNC_LAUNCH_THREADS"};
  char *was[2];
  for (int i = 0; i < 2; i++) {
    const char *env = getenv(vars[i]);
    was[i] = env != NULL ? strdup(env) : NULL;
    unsetenv(vars[i]);
  }
  cua_runtime *rt;
  int rc = open_text(&rt, text);
  for (int i = 0; i < 2; i++) {
    if (was[i] != NULL)
      setenv(vars[i], was[i], 1);
    free(was[i]);
  }
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  return rt;
}

static void cmd(cua__cmdlist *l, cua__cmd *v, int kind, cua__stream *s,
                uint64_t value, uint64_t prev) {
  memset(&v[l->n], 0, sizeof v[l->n]);
  v[l->n].kind = kind;
  v[l->n].s = s;
  v[l->n].value = value;
  v[l->n].prev = prev;
  l->n++;
}

START_TEST(only_the_last_mark_of_each_stream_in_a_batch_is_applied) {
  cua__stream a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  cua__cmd v1[4], v2[4], v3[4];
  cua__cmdlist l1, l2, l3;
  memset(&l1, 0, sizeof l1);
  memset(&l2, 0, sizeof l2);
  memset(&l3, 0, sizeof l3);
  l1.v = v1;
  l2.v = v2;
  l3.v = v3;
  l1.next = &l2;
  l2.next = &l3;
  /* Stream a is marked in every list, b in the first only. */
  cmd(&l1, v1, CUA__CMD_LAUNCH, &a, 0, 0);
  cmd(&l1, v1, CUA__CMD_MARK, &a, 1, 0);
  cmd(&l1, v1, CUA__CMD_MARK, &b, 5, 4);
  cmd(&l2, v2, CUA__CMD_LAUNCH, &a, 0, 0);
  cmd(&l2, v2, CUA__CMD_MARK, &a, 2, 1);
  cmd(&l3, v3, CUA__CMD_RECORD, &b, 0, 0);
  cmd(&l3, v3, CUA__CMD_MARK, &a, 3, 2);
  cua__coalesce_marks(&l1);
  ck_assert_int_eq(v1[1].superseded, 1);
  ck_assert_int_eq(v2[1].superseded, 1);
  ck_assert_int_eq(v3[1].superseded, 0);
  ck_assert_uint_eq(v3[1].value, 3);
  ck_assert_uint_eq(v3[1].prev, 0); /* the first skipped mark's prev */
  ck_assert_int_eq(v1[2].superseded, 0);
  ck_assert_uint_eq(v1[2].prev, 4);
  ck_assert_int_eq(v1[0].superseded, 0);
  ck_assert_int_eq(v3[0].superseded, 0);
  /* The scan leaves nothing behind in the streams. */
  ck_assert_ptr_null(a.last_mark);
  ck_assert_ptr_null(b.last_mark);
  /* A batch of one list is applied as it is. */
  cua__cmd w[2];
  cua__cmdlist one;
  memset(&one, 0, sizeof one);
  one.v = w;
  cmd(&one, w, CUA__CMD_MARK, &a, 7, 3);
  cmd(&one, w, CUA__CMD_MARK, &a, 8, 7);
  cua__coalesce_marks(&one);
  ck_assert_int_eq(w[0].superseded, 0);
  ck_assert_int_eq(w[1].superseded, 0);
}
END_TEST

/* A chunk's mark (cmd->keep, launch = pipeline, commands.c) is applied as
 * it is: no later
 * mark supersedes it, and it supersedes none; the marks of other lists
 * around it are still batched. */
START_TEST(a_chunks_mark_is_applied_in_a_batch) {
  cua__stream a;
  memset(&a, 0, sizeof a);
  enum { N = 4 };
  cua__cmd v[N];
  cua__cmdlist l[N];
  memset(l, 0, sizeof l);
  for (int i = 0; i < N; i++) {
    l[i].v = &v[i];
    cmd(&l[i], &v[i], CUA__CMD_MARK, &a, (uint64_t)i + 1, (uint64_t)i);
    l[i].next = i + 1 < N ? &l[i + 1] : NULL;
  }
  v[1].keep = 1;
  cua__coalesce_marks(&l[0]);
  ck_assert_int_eq(v[0].superseded, 0); /* the next one is a chunk's */
  ck_assert_int_eq(v[1].superseded, 0);
  ck_assert_int_eq(v[2].superseded, 1); /* covered by the last */
  ck_assert_int_eq(v[3].superseded, 0);
  ck_assert_uint_eq(v[3].prev, 2); /* from the chunk's mark's value */
  ck_assert_uint_eq(v[1].prev, 1);
  ck_assert_ptr_null(a.last_mark);
  ck_assert_uint_eq(a.mark_run, 0);
}
END_TEST

/* A long batch keeps one mark in every 16 of a stream (MARK_RUN), so that
 * the completion thread finishes ops while the rest of the batch is
 * launched: of 40 lists with one MARK each, marks 15, 31 and 39 are
 * applied, each carrying the prev of the first one it covers. */
START_TEST(a_long_batch_keeps_a_mark_in_every_sixteen) {
  cua__stream a;
  memset(&a, 0, sizeof a);
  enum { N = 40 };
  static cua__cmd v[N];
  static cua__cmdlist l[N];
  memset(l, 0, sizeof l);
  for (int i = 0; i < N; i++) {
    l[i].v = &v[i];
    cmd(&l[i], &v[i], CUA__CMD_MARK, &a, (uint64_t)i + 1, (uint64_t)i);
    l[i].next = i + 1 < N ? &l[i + 1] : NULL;
  }
  cua__coalesce_marks(&l[0]);
  for (int i = 0; i < N; i++)
    ck_assert_msg(v[i].superseded == !(i == 15 || i == 31 || i == N - 1),
                  "mark %d: superseded %d", i, v[i].superseded);
  ck_assert_uint_eq(v[15].prev, 0);  /* covers marks 0..15 */
  ck_assert_uint_eq(v[31].prev, 16); /* 16..31, after mark 15's value */
  ck_assert_uint_eq(v[N - 1].prev, 32);
  ck_assert_ptr_null(a.last_mark);
  ck_assert_uint_eq(a.mark_run, 0);
}
END_TEST

/* Queues @p n lists at once for the launch thread, each with one MARK of
 * stream @p s (value 0: the stream is already there), as rounds do, so
 * that it takes them as one batch. */
static void queue_marks(cua_runtime *rt, cua__stream *s, int n) {
  cua__cmdlist *first = NULL, *last = NULL;
  pthread_mutex_lock(&rt->lock);
  for (int i = 0; i < n; i++) {
    int fresh;
    cua__cmdlist *h = cua__pool_get(&rt->list_pool, &fresh);
    ck_assert_ptr_nonnull(h);
    if (fresh)
      memset(h, 0, sizeof *h);
    h->n = 0;
    h->box = h;
    h->next = NULL;
    if (h->cap == 0) {
      h->v = calloc(1, sizeof *h->v);
      ck_assert_ptr_nonnull(h->v);
      h->cap = 1;
    }
    memset(&h->v[0], 0, sizeof h->v[0]);
    h->v[0].kind = CUA__CMD_MARK;
    h->v[0].s = s;
    h->v[0].ticket = s->tickets++;
    h->v[0].value = 0;
    h->v[0].prev = 0;
    h->n = 1;
    atomic_fetch_add(&rt->executing, 1);
    if (last != NULL)
      last->next = h;
    else
      first = h;
    last = h;
  }
  cua__launcher *l = &rt->launchers[0]; /* s's, of one launch thread */
  pthread_mutex_lock(&l->mu);
  ck_assert_ptr_null(l->head); /* the launch thread is idle */
  l->head = first;
  l->tail = last;
  atomic_fetch_add(&l->queued, n);
  if (l->sleeping)
    pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
  pthread_mutex_unlock(&rt->lock);
}

/* The launch thread applies what cua__coalesce_marks() left. */
START_TEST(the_launch_thread_applies_one_mark_per_stream_per_batch) {
  for (int stream_fn = 0; stream_fn < 2; stream_fn++) {
    cua_runtime *rt = open_mode("[runtime]\nbackend = host\n"
                                "launch = thread\n");
    pthread_mutex_lock(&rt->lock);
    ck_assert_int_eq(cua__ensure_streams(rt, 0, 1), 0);
    cua__stream *s = rt->streams[0];
    pthread_mutex_unlock(&rt->lock);
    /* As if a stream function had run in a submitting thread. */
    atomic_store(&rt->user_code_at_launch, stream_fn);
    uint64_t before = s->marks_applied;
    queue_marks(rt, s, 3);
    uint64_t t0 = cua__now_ns();
    while (atomic_load(&s->executed) < s->tickets &&
           cua__now_ns() - t0 < 10000000000ull)
      sched_yield();
    ck_assert_uint_eq(atomic_load(&s->executed), s->tickets);
    /* Read after executed (acquire): the applying thread wrote it first. */
    uint64_t applied = s->marks_applied - before;
    ck_assert_uint_eq(applied, (stream_fn ? 3u : 1u));
    cua_runtime_destroy(rt);
  }
}
END_TEST

static int nop(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  (void)arg;
  return 0;
}

static cua_runtime *open_launch(const char *launch) {
  char text[256];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\nlaunch = %s\n"
           "policy = round-robin\n",
           launch);
  return open_mode(text);
}

/* Runs a stream function and a spin on a runtime with a launch thread
 * (launch = @p launch) on @p backend; returns whether marks are still
 * batched there. */
static int batching_after_a_stream_function(const char *backend,
                                            const char *launch) {
  char text[256];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = %s\nlaunch = %s\n"
           "policy = single-stream\n",
           backend, launch);
  cua_runtime *rt = open_mode(text);
  ck_assert_int_eq(atomic_load(&rt->user_code_at_launch), 0);
  cua_op *f, *s, *t;
  ck_assert_int_eq(cua_op_func(&f, rt, nop, NULL, NULL, 0), 0);
  ck_assert_int_eq(cua_op_spin(&s, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_then(&t, f, s), 0);
  cua_future *fut;
  ck_assert_int_eq(cua_submit(&fut, rt, t, NULL), 0);
  ck_assert_int_eq(cua_future_wait(fut), 0);
  int batching = !atomic_load(&rt->user_code_at_launch);
  cua_future_destroy(fut);
  cua_op_destroy(t);
  cua_op_destroy(s);
  cua_op_destroy(f);
  cua_runtime_destroy(rt);
  return batching;
}

/* A stream function of one runtime that submits a stream function to
 * another, whose list the launch threads would take (several submissions
 * pending there): the list is applied by the stream function's thread,
 * and the other runtime still notes that it launched a stream function. */
typedef struct {
  cua_runtime *other;
  int rc;
} nested_arg;

static int submit_func_to_other(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  nested_arg *a = arg;
  cua_op *g;
  cua_future *f;
  a->rc = cua_op_func(&g, a->other, nop, NULL, NULL, 0);
  if (a->rc == 0) {
    a->rc = cua_submit(&f, a->other, g, NULL);
    cua_op_destroy(g);
    if (a->rc == 0)
      cua_future_destroy(f);
  }
  return 0;
}

START_TEST(a_nested_submission_notes_its_stream_function) {
  const char *text = "[runtime]\nbackend = launchtime\nlaunch = auto\n"
                     "policy = round-robin\n";
  cua_runtime *r1 = open_mode(text), *r2 = open_mode(text);
  /* Three long spins pending on r2: its next submission's list would go
   * to its launch thread by auto's rule. */
  cua_future *sp[3];
  for (int i = 0; i < 3; i++) {
    cua_op *op;
    ck_assert_int_eq(cua_op_spin(&op, r2, 200000000, 1), 0);
    ck_assert_int_eq(cua_submit(&sp[i], r2, op, NULL), 0);
    cua_op_destroy(op);
  }
  ck_assert_int_eq(atomic_load(&r2->user_code_at_launch), 0);
  nested_arg a = {r2, -1};
  cua_op *f;
  ck_assert_int_eq(cua_op_func(&f, r1, submit_func_to_other, &a, NULL, 0), 0);
  ck_assert_int_eq(cua_submit_wait(r1, f, NULL, NULL), 0);
  cua_op_destroy(f);
  ck_assert_int_eq(a.rc, 0);
  ck_assert_int_eq(atomic_load(&r2->user_code_at_launch), 1);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(cua_future_wait(sp[i]), 0);
    cua_future_destroy(sp[i]);
  }
  cua_runtime_destroy(r1);
  cua_runtime_destroy(r2);
}
END_TEST

START_TEST(no_batching_once_a_stream_function_is_launched) {
  /* The host backend runs stream functions on its own workers, the
   * launchtime one at launch; either way such a function may poll a
   * future whose mark a batch would move behind it. */
  ck_assert_int_eq(batching_after_a_stream_function("host", "thread"), 0);
  ck_assert_int_eq(batching_after_a_stream_function("launchtime", "thread"), 0);
  /* launch = auto applies a lone submission's list itself, and still
   * notes the stream function it ran. */
  ck_assert_int_eq(batching_after_a_stream_function("host", "auto"), 0);
  ck_assert_int_eq(batching_after_a_stream_function("launchtime", "auto"), 0);
  ck_assert_int_eq(batching_after_a_stream_function("launchtime", "pipeline"),
                   0);
}
END_TEST

static uint64_t lists_handed_over(cua_runtime *rt) {
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  return st.lists_handed_over;
}

/* Submits @p root (which it destroys), waits for it; the lists the launch
 * threads applied meanwhile. */
static uint64_t submit_counting_handed(cua_runtime *rt, cua_op *root) {
  uint64_t before = lists_handed_over(rt);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, root, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua_op_destroy(root);
  return lists_handed_over(rt) - before;
}

/* Submits @p n spins of @p ns each, waiting for each one before the next
 * if @p wait, else for all of them at the end; returns the lists the
 * launch thread applied meanwhile. */
static uint64_t handed_over(const char *launch, int n, uint64_t ns, int wait) {
  cua_runtime *rt = open_launch(launch);
  cua_future **f = calloc((size_t)n, sizeof *f);
  ck_assert_ptr_nonnull(f);
  uint64_t before = lists_handed_over(rt);
  for (int i = 0; i < n; i++) {
    cua_op *op;
    ck_assert_int_eq(cua_op_spin(&op, rt, ns, 1), 0);
    ck_assert_int_eq(cua_submit(&f[i], rt, op, NULL), 0);
    cua_op_destroy(op);
    if (wait)
      ck_assert_int_eq(cua_future_wait(f[i]), 0);
  }
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(cua_future_wait(f[i]), 0);
    cua_future_destroy(f[i]);
  }
  free(f);
  uint64_t handed = lists_handed_over(rt) - before;
  cua_runtime_destroy(rt);
  return handed;
}

/* launch = caller never hands a list over; launch = thread hands over
 * every submission's. */
START_TEST(caller_keeps_every_list_and_thread_hands_each_over) {
  ck_assert_uint_eq(handed_over("caller", 40, 200000, 0), 0);
  ck_assert_uint_ge(handed_over("thread", 40, 1000, 1), 40);
  ck_assert_uint_ge(handed_over("thread", 40, 200000, 0), 40);
}
END_TEST

/* launch = auto: a program that waits for each submission before the next
 * applies every list itself (no hand-over, no wake-up on its latency);
 * one that submits a stream of long ops without waiting may hand lists
 * over, and applies itself what it does not: every future completes
 * either way. (Which lists go is timing: the rule itself is tested
 * below.) */
START_TEST(auto_hands_over_only_a_stream_of_submissions) {
  ck_assert_uint_eq(handed_over("auto", 40, 1000, 1), 0);
  ck_assert_uint_le(handed_over("auto", 100, 1000000, 0), 100);
}
END_TEST

/* Several threads submitting at once under auto: a list goes to the
 * launch thread while another thread is in cua_submit() too (one that
 * waits for rt->lock is). Two threads that each wait for every
 * submission never have three pending, so under the one-thread rule
 * alone none of their lists would go; they start each submission
 * together (a barrier), so that they overlap. Every future completes. */
typedef struct {
  cua_runtime *rt;
  pthread_barrier_t *go;
  int n;
  int rc; /* the first failure (checked by the test's thread) */
} mt_arg;

static void *mt_submitter(void *p) {
  mt_arg *a = p;
  cua_op *op = NULL;
  int rc = cua_op_spin(&op, a->rt, 1000, 1);
  for (int i = 0; i < a->n; i++) {
    /* (every thread reaches every barrier, whatever failed) */
    pthread_barrier_wait(a->go);
    cua_future *f;
    if (rc == 0 && (rc = cua_submit(&f, a->rt, op, NULL)) == 0) {
      rc = cua_future_wait(f);
      cua_future_destroy(f);
    }
  }
  if (op != NULL)
    cua_op_destroy(op);
  a->rc = rc;
  return NULL;
}

START_TEST(auto_hands_over_the_lists_of_several_submitting_threads) {
  enum { T = 2, N = 300 };
  cua_runtime *rt = open_launch("auto");
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, T);
  pthread_t th[T];
  mt_arg a[T];
  uint64_t before = lists_handed_over(rt);
  cua_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
  ck_assert_int_eq(cua_runtime_stats(rt, &s0), 0);
  for (int t = 0; t < T; t++) {
    a[t] = (mt_arg){rt, &go, N, -1};
    ck_assert_int_eq(pthread_create(&th[t], NULL, mt_submitter, &a[t]), 0);
  }
  for (int t = 0; t < T; t++) {
    pthread_join(th[t], NULL);
    ck_assert_int_eq(a[t].rc, 0);
  }
  pthread_barrier_destroy(&go);
  ck_assert_int_eq(cua_runtime_stats(rt, &s1), 0);
  ck_assert_uint_eq(s1.ops - s0.ops, T * N);
  ck_assert_uint_gt(lists_handed_over(rt) - before, 0);
  cua_runtime_destroy(rt);
}
END_TEST

/* A chain of @p n spins of 0 ns. */
static cua_op *spin_chain(cua_runtime *rt, int n) {
  cua_op **ops = calloc((size_t)n, sizeof *ops);
  ck_assert_ptr_nonnull(ops);
  for (int i = 0; i < n; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 0, 1), 0);
  cua_op *chain = then_chain(ops, (size_t)n);
  free(ops);
  return chain;
}

/* One submission of a chain of @p n spins of 0 ns on one stream, under
 * launch = @p launch; returns the lists the launch thread applied, and in
 * *@p marks the marks applied on the stream. */
static uint64_t chain_handed_over(const char *launch, int n, uint64_t *marks) {
  char text[256];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\nlaunch = %s\n"
           "policy = single-stream\n",
           launch);
  cua_runtime *rt = open_mode(text);
  uint64_t handed = submit_counting_handed(rt, spin_chain(rt, n));
  cua_runtime_synchronize(rt);
  pthread_mutex_lock(&rt->lock);
  ck_assert_int_eq(rt->nstreams, 1);
  *marks = rt->streams[0]->marks_applied;
  pthread_mutex_unlock(&rt->lock);
  cua_runtime_destroy(rt);
  return handed;
}

/* A large submission from one thread: under pipeline, its round hands
 * its list to the launch thread in chunks as it decides them (16
 * launches, then 32, 64, 128, ...), and the rest of the list once it is
 * decided, with a mark every 16 launches of the stream, each applied;
 * under thread, in the same chunks, marked at the round's end; under
 * caller and auto, the submitting thread applies it in its own chunks,
 * with a mark every 64 launches. */
START_TEST(pipeline_hands_a_large_submission_over_in_chunks) {
  uint64_t marks;
  ck_assert_uint_ge(chain_handed_over("pipeline", 400, &marks), 5);
  ck_assert_uint_ge(marks, 400 / 16);
  ck_assert_uint_ge(chain_handed_over("thread", 400, &marks), 5);
  ck_assert_uint_lt(marks, 400 / 64);
  ck_assert_uint_eq(chain_handed_over("auto", 400, &marks), 0);
  ck_assert_uint_ge(marks, 400 / 64);
  ck_assert_uint_lt(marks, 400 / 16);
  ck_assert_uint_eq(chain_handed_over("caller", 400, &marks), 0);
  ck_assert_uint_ge(marks, 400 / 64);
  ck_assert_uint_lt(marks, 400 / 16);
  /* A small one (under CHUNK_FIRST launches) from a thread that waits
   * for it is applied by that thread under pipeline, as under auto. */
  ck_assert_uint_eq(chain_handed_over("pipeline", 10, &marks), 0);
}
END_TEST

/* launch_threads = auto: one launch thread on a backend that runs ops on
 * host threads (host), where launches are queue pushes; what the file
 * says otherwise. (Two on a device backend with 4 or more CPUs online:
 * this machine may have fewer.) */
START_TEST(launch_threads_auto_is_one_on_the_host_backend) {
  static const struct {
    const char *text;
    int n;
  } cases[] = {
      {"[runtime]\nbackend = host\nlaunch = thread\n", 1},
      {"[runtime]\nbackend = host\nlaunch = thread\nlaunch_threads = auto\n",
       1},
      {"[runtime]\nbackend = host\nlaunch = thread\nlaunch_threads = 3\n", 3},
      {"[runtime]\nbackend = host\nlaunch = caller\nlaunch_threads = 3\n", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cua_runtime *rt = open_mode(cases[i].text);
    ck_assert_msg(rt->nlaunchers == cases[i].n, "%s: %d launch threads",
                  cases[i].text, rt->nlaunchers);
    cua_runtime_destroy(rt);
  }
}
END_TEST

/* With two launch threads, a list whose commands are for streams of both
 * (gidx 0 and 1: one each) is split when it is queued: each thread
 * applies its own stream's commands, in their order. */
START_TEST(a_list_for_two_launch_threads_is_split) {
  cua_runtime *rt = open_mode("[runtime]\nbackend = host\nlaunch = thread\n"
                              "launch_threads = 2\n");
  ck_assert_int_eq(rt->nlaunchers, 2);
  pthread_mutex_lock(&rt->lock);
  ck_assert_int_eq(cua__ensure_streams(rt, 0, 2), 0);
  cua__stream *s[2] = {rt->streams[0], rt->streams[1]};
  ck_assert_int_eq(s[0]->gidx, 0);
  ck_assert_int_eq(s[1]->gidx, 1);
  uint64_t applied[2] = {atomic_load(&rt->launchers[0].applied),
                         atomic_load(&rt->launchers[1].applied)};
  uint64_t marks[2] = {s[0]->marks_applied, s[1]->marks_applied};
  /* MARKs of value 0 (each stream is already there): 0, 1, 0, 1, 0. */
  cua__round r;
  cua__round_init(rt, &r);
  for (int i = 0; i < 5; i++) {
    cua__cmd *c = cua__cmd_add(&r, CUA__CMD_MARK, s[i % 2]);
    ck_assert_ptr_nonnull(c);
  }
  ck_assert_int_eq(cua__launcher_spread(rt, &r.cmds), 2);
  atomic_fetch_add(&rt->executing, 1);
  ck_assert_int_eq(cua__launcher_push(rt, &r.cmds), 0);
  ck_assert_uint_eq(r.cmds.n, 0); /* taken */
  pthread_mutex_unlock(&rt->lock);
  uint64_t t0 = cua__now_ns();
  while (
      (atomic_load(&s[0]->executed) < 3 || atomic_load(&s[1]->executed) < 2) &&
      cua__now_ns() - t0 < 10000000000ull)
    sched_yield();
  ck_assert_uint_eq(atomic_load(&s[0]->executed), 3);
  ck_assert_uint_eq(atomic_load(&s[1]->executed), 2);
  /* one list each; no mark batched within a list */
  ck_assert_uint_eq(atomic_load(&rt->launchers[0].applied) - applied[0], 1);
  ck_assert_uint_eq(atomic_load(&rt->launchers[1].applied) - applied[1], 1);
  ck_assert_uint_eq(s[0]->marks_applied - marks[0], 3);
  ck_assert_uint_eq(s[1]->marks_applied - marks[1], 2);
  cua_runtime_destroy(rt);
}
END_TEST

/* One submission of @p chains chains of @p len spins of 0 ns, under
 * launch = auto with @p threads launch threads and round-robin over 4
 * streams (each chain on a stream); returns the lists the launch threads
 * applied. */
static uint64_t chains_handed_over(int threads, int chains, int len) {
  char text[256];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\nlaunch = auto\n"
           "launch_threads = %d\npolicy = round-robin\n",
           threads);
  cua_runtime *rt = open_mode(text);
  cua_op *parts[8];
  ck_assert_int_le(chains, 8);
  for (int c = 0; c < chains; c++) {
    parts[c] = spin_chain(rt, len);
  }
  cua_op *z;
  ck_assert_int_eq(cua_op_zip(&z, parts, (size_t)chains), 0);
  for (int c = 0; c < chains; c++)
    cua_op_destroy(parts[c]);
  uint64_t handed = submit_counting_handed(rt, z);
  cua_runtime_destroy(rt);
  return handed;
}

/* launch = auto with several launch threads: a large submission whose
 * chunk has commands for the streams of more than one of them goes to
 * them as under pipeline (split per thread); with one launch thread, or
 * on one stream, it is applied by the submitting thread. */
START_TEST(auto_hands_a_large_submission_over_to_several_launch_threads) {
  ck_assert_uint_ge(chains_handed_over(2, 4, 100), 5);
  ck_assert_uint_ge(chains_handed_over(4, 4, 100), 5);
  ck_assert_uint_eq(chains_handed_over(1, 4, 100), 0);
  ck_assert_uint_eq(chains_handed_over(2, 1, 400), 0);
}
END_TEST

/* The rule of launch = auto (cua__may_hand_over()): a submission's list
 * goes to the launch threads while three submissions, this one included,
 * are not done (done ones not yet removed do not count) and no other
 * thread is submitting, or while several threads submit at once; never a
 * round of the completion thread (relock); pipeline the same. Under
 * caller and thread, every list may be offered. */
START_TEST(the_rule_of_launch_auto) {
  cua_runtime *rt = open_launch("auto");
  cua__cmdlist cl;
  memset(&cl, 0, sizeof cl);
  pthread_mutex_lock(&rt->lock);
  size_t nsubs = rt->nsubs, done = rt->nsubs_done;
  ck_assert_uint_eq(nsubs, 0);
  struct {
    size_t nsubs, done;
    int submitting, relock, want;
  } cases[] = {
      {1, 0, 1, 0, 0}, /* one submission: applied by its thread */
      {2, 0, 1, 0, 0}, /* one other not done */
      {3, 0, 1, 0, 1}, /* a stream */
      {3, 1, 1, 0, 0}, /* one of them done, its future firing */
      {9, 0, 2, 0, 1}, /* another thread submitting */
      {1, 0, 2, 0, 1}, /* the same, with nothing else pending */
      {1, 0, 4, 0, 1}, /* four threads */
      {9, 0, 2, 1, 0}, /* the completion thread's round */
      {9, 0, 1, 1, 0}, /* the same */
  };
  /* pipeline hands a submission's list over by the same rule. */
  for (int mode = 0; mode < 2; mode++) {
    rt->cfg->launch = mode ? CUA__LAUNCH_PIPELINE : CUA__LAUNCH_AUTO;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
      rt->nsubs = cases[i].nsubs;
      rt->nsubs_done = cases[i].done;
      atomic_store(&rt->submitting, cases[i].submitting);
      ck_assert_msg(cua__may_hand_over(rt, &cl, cases[i].relock) ==
                        cases[i].want,
                    "%s, case %zu", mode ? "pipeline" : "auto", i);
    }
  }
  rt->nsubs = nsubs;
  rt->nsubs_done = done;
  atomic_store(&rt->submitting, 0);
  /* The other modes offer every list. */
  rt->cfg->launch = CUA__LAUNCH_THREAD;
  ck_assert_int_eq(cua__may_hand_over(rt, &cl, 1), 1);
  rt->cfg->launch = CUA__LAUNCH_CALLER;
  ck_assert_int_eq(cua__may_hand_over(rt, &cl, 0), 1);
  rt->cfg->launch = CUA__LAUNCH_AUTO;
  pthread_mutex_unlock(&rt->lock);
  cua_runtime_destroy(rt);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("executor");
  TCase *tc = tcase_create("marks");
  tcase_add_test(tc, only_the_last_mark_of_each_stream_in_a_batch_is_applied);
  tcase_add_test(tc, a_chunks_mark_is_applied_in_a_batch);
  tcase_add_test(tc, a_long_batch_keeps_a_mark_in_every_sixteen);
  tcase_add_test(tc, the_launch_thread_applies_one_mark_per_stream_per_batch);
  tcase_add_test(tc, no_batching_once_a_stream_function_is_launched);
  tcase_add_test(tc, a_nested_submission_notes_its_stream_function);
  suite_add_tcase(s, tc);
  tc = tcase_create("modes");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, caller_keeps_every_list_and_thread_hands_each_over);
  tcase_add_test(tc, auto_hands_over_only_a_stream_of_submissions);
  tcase_add_test(tc, auto_hands_over_the_lists_of_several_submitting_threads);
  tcase_add_test(tc, pipeline_hands_a_large_submission_over_in_chunks);
  tcase_add_test(tc, the_rule_of_launch_auto);
  tcase_add_test(tc, launch_threads_auto_is_one_on_the_host_backend);
  tcase_add_test(tc, a_list_for_two_launch_threads_is_split);
  tcase_add_test(tc,
                 auto_hands_a_large_submission_over_to_several_launch_threads);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return run_suite(suite());
}
