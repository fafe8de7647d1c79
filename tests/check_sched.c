/*
 * tests/check_sched.c: the scheduler's seams: exact cross-stream waits,
 * user code outside the core lock, cycles a then can make, and the
 * submission options' version check. Runs on the backend named by
 * $CUASYNC_TEST_BACKEND (host by default; tests/launchtime and tests/cuda
 * run it on the others).
 */
#include "earliest.h"
#include "helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define N 1024

/* The launchtime test backend runs every op inside launch(), on the
 * submitting thread: nothing overlaps, and it has no native streams. The
 * tests that need either run on host and cuda only. */
static int runs_ops_at_launch(void) {
  return strcmp(test_backend(), "launchtime") == 0;
}

static cua_runtime *open_two_streams(void) {
  return open_policy("round-robin", "[policy.round-robin]\nstreams = 2\n");
}

static cua_buffer *buffer(cua_runtime *rt) {
  cua_buffer *b = NULL;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, N * sizeof(float), 0), 0);
  return b;
}

static void run_on(cua_runtime *rt, cua_op *op, int stream) {
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit_on(&f, rt, op, 0, stream), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
}

static float first_value(cua_runtime *rt, cua_buffer *b) {
  static float host[N];
  cua_op *rd = NULL;
  ck_assert_int_eq(cua_op_memcpy_d2h(&rd, host, b, 0, sizeof host), 0);
  ck_assert_int_eq(cua_submit_wait(rt, rd, NULL, NULL), 0);
  cua_op_destroy(rd);
  return host[0];
}

/* A consumer submitted later, on another stream, waits for its producer
 * and not for the long op queued after the producer on the producer's
 * stream: it completes while that op still runs. (Waiting at the
 * producer stream's end, as 0.1 did, makes it finish after the spin.) */
START_TEST(later_consumer_waits_for_its_producer_only) {
  if (runs_ops_at_launch())
    return;
  cua_runtime *rt = open_two_streams();
  cua_buffer *x = buffer(rt), *z = buffer(rt);
  cua_op *init = NULL;
  ck_assert_int_eq(cua_op_fill(&init, z, 0.0f), 0);
  run_on(rt, init, 1); /* both streams exist from here on */
  /* No copy has run yet: with CUDA's lazy loading, the copy kernel's first
   * launch would wait for the spin below, unless the backend preloads its
   * kernels (it does). */
  cua_op *p = NULL, *spin = NULL, *chain = NULL, *c = NULL;
  ck_assert_int_eq(cua_op_fill(&p, x, 7.0f), 0);
  ck_assert_int_eq(cua_op_spin(&spin, rt, 1500000000ull, 1), 0);
  ck_assert_int_eq(cua_op_then(&chain, p, spin), 0);
  cua_future *f1 = NULL, *f2 = NULL;
  ck_assert_int_eq(cua_submit_on(&f1, rt, chain, 0, 0), 0);
  ck_assert_int_eq(cua_op_copy(&c, z, x), 0);
  ck_assert_int_eq(cua_submit_on(&f2, rt, c, 0, 1), 0);
  ck_assert_int_eq(cua_future_wait(f2), 0);
  ck_assert_msg(cua_future_poll(f1) == CUA_ERR_AGAIN,
                "the consumer completed only after the spin queued behind "
                "its producer: it waited for the producer stream's end");
  ck_assert_int_eq(cua_future_wait(f1), 0);
  ck_assert(first_value(rt, z) == 7.0f);
  cua_future_destroy(f1);
  cua_future_destroy(f2);
  cua_op_destroy(init);
  cua_op_destroy(p);
  cua_op_destroy(spin);
  cua_op_destroy(chain);
  cua_op_destroy(c);
  cua_buffer_destroy(x);
  cua_buffer_destroy(z);
  cua_runtime_destroy(rt);
}
END_TEST

/* ------------------------------------------------- user code and the lock */

typedef struct blocker {
  cua_runtime *rt;
  atomic_int started, other_done;
  int saw_other;
  cua_stats st;
  int stats_rc;
} blocker;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs until another thread's unrelated submission has completed (or 5 s
 * passed), calling the runtime's public API meanwhile. */
static int blocking_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  blocker *b = arg;
  memset(&b->st, 0, sizeof b->st);
  b->st.size = sizeof b->st;
  b->stats_rc = cua_runtime_stats(b->rt, &b->st);
  atomic_store(&b->started, 1);
  uint64_t end = now_ns() + 5000000000ull;
  while (!atomic_load(&b->other_done) && now_ns() < end) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  b->saw_other = atomic_load(&b->other_done);
  return 0;
}

static void *submit_blocker(void *arg) {
  blocker *b = arg;
  cua_op *op = NULL;
  ck_assert_int_eq(cua_op_func(&op, b->rt, blocking_fn, b, NULL, 0), 0);
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit_on(&f, b->rt, op, 0, 0), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua_op_destroy(op);
  return NULL;
}

/* A stream function that runs long (on CUDA and the launch-time backend:
 * inside the submitting thread's launch) blocks no other submission: an
 * unrelated one from another thread is decided, launched and completed
 * while it runs. It may call the runtime's API (here cua_runtime_stats). */
START_TEST(stream_function_blocks_no_other_submission) {
  cua_runtime *rt = open_two_streams();
  cua_buffer *y = buffer(rt);
  cua_op *warm = NULL;
  ck_assert_int_eq(cua_op_fill(&warm, y, 1.0f), 0);
  run_on(rt, warm, 1);
  blocker b;
  memset(&b, 0, sizeof b);
  b.rt = rt;
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, submit_blocker, &b), 0);
  while (!atomic_load(&b.started))
    sched_yield();
  cua_op *other = NULL;
  ck_assert_int_eq(cua_op_fill(&other, y, 3.0f), 0);
  run_on(rt, other, 1);
  atomic_store(&b.other_done, 1);
  pthread_join(t, NULL);
  ck_assert_msg(b.saw_other, "an unrelated submission waited for a stream "
                             "function of another thread to return");
  ck_assert_int_eq(b.stats_rc, 0);
  ck_assert(b.st.submissions >= 2);
  ck_assert(first_value(rt, y) == 3.0f);
  cua_op_destroy(warm);
  cua_op_destroy(other);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

typedef struct nested {
  cua_runtime *rt;
  cua_buffer *buf;
  cua_future *fut;
  int rc, wait_rc, sync_rc;
  char wait_msg[256]; /* messages are per thread: read where it failed */
  char sync_msg[256];
} nested;

/* Submits from inside a stream function, and tries to wait (refused: the
 * work it would wait for may be queued behind this very function). */
static int submitting_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  nested *n = arg;
  cua_op *op = NULL;
  n->rc = cua_op_fill(&op, n->buf, 5.0f);
  if (n->rc == 0)
    n->rc = cua_submit(&n->fut, n->rt, op, NULL);
  cua_op_destroy(op);
  if (n->rc == 0) {
    n->wait_rc = cua_future_wait(n->fut);
    snprintf(n->wait_msg, sizeof n->wait_msg, "%s", cua_runtime_error(n->rt));
    /* Waiting for every submission, this one's among them: refused too
     * (it hung). */
    n->sync_rc = cua_runtime_synchronize(n->rt);
    snprintf(n->sync_msg, sizeof n->sync_msg, "%s", cua_runtime_error(n->rt));
    /* Destroying it would wait for this very function: refused (stderr). */
    cua_runtime_destroy(n->rt);
  }
  return 0;
}

START_TEST(stream_function_may_submit_but_not_wait) {
  cua_runtime *rt = open_two_streams();
  nested n;
  memset(&n, 0, sizeof n);
  n.rt = rt;
  n.buf = buffer(rt);
  cua_op *op = NULL;
  ck_assert_int_eq(cua_op_func(&op, rt, submitting_fn, &n, NULL, 0), 0);
  run_on(rt, op, 0);
  ck_assert_int_eq(n.rc, 0);
  ck_assert_ptr_nonnull(n.fut);
  ck_assert_int_eq(n.wait_rc, CUA_ERR_BUSY);
  ck_assert_ptr_nonnull(strstr(n.wait_msg, "stream function"));
  ck_assert_int_eq(n.sync_rc, CUA_ERR_BUSY);
  ck_assert_str_eq(n.sync_msg,
                   "cua_runtime_synchronize: called from a stream function, "
                   "where waiting could deadlock (what it waits for may be "
                   "queued behind it); wait after the stream function "
                   "returns");
  ck_assert_int_eq(cua_future_wait(n.fut), 0);
  ck_assert(first_value(rt, n.buf) == 5.0f);
  cua_future_destroy(n.fut);
  cua_op_destroy(op);
  cua_buffer_destroy(n.buf);
  cua_runtime_destroy(rt);
}
END_TEST

/* The calls that wait for a runtime's work, made on its completion thread
 * (a host step, a map, a future's callback), would wait for the thread
 * itself: refused with CUA_ERR_BUSY, nothing submitted, the runtime not
 * destroyed; a future already complete, or another runtime's, is waited
 * for. They hung. */
typedef struct on_ct {
  cua_runtime *rt, *other;
  cua_buffer *buf;
  cua_future *done, *theirs;
  int wait_rc, sync_rc, sw_rc, done_rc, theirs_rc;
  uint64_t subs_before, subs_after;
  char wait_msg[256], sync_msg[256], sw_msg[256];
  atomic_int finished, go;
} on_ct;

static void waits_on_completion_thread(on_ct *c) {
  cua_op *op = NULL;
  cua_future *f = NULL;
  ck_assert_int_eq(cua_op_fill(&op, c->buf, 6.0f), 0);
  ck_assert_int_eq(cua_submit(&f, c->rt, op, NULL), 0);
  c->wait_rc = cua_future_wait(f);
  snprintf(c->wait_msg, sizeof c->wait_msg, "%s", cua_runtime_error(c->rt));
  c->sync_rc = cua_runtime_synchronize(c->rt);
  snprintf(c->sync_msg, sizeof c->sync_msg, "%s", cua_runtime_error(c->rt));
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(c->rt, &st), 0);
  c->subs_before = st.submissions;
  c->sw_rc = cua_submit_wait(c->rt, op, NULL, NULL);
  snprintf(c->sw_msg, sizeof c->sw_msg, "%s", cua_runtime_error(c->rt));
  ck_assert_int_eq(cua_runtime_stats(c->rt, &st), 0);
  c->subs_after = st.submissions;
  cua_runtime_destroy(c->rt); /* refused: said on stderr */
  c->done_rc = cua_future_wait(c->done);
  c->theirs_rc = cua_future_wait(c->theirs);
  cua_future_destroy(f); /* (completes later; destroying it is fine) */
  cua_op_destroy(op);
  atomic_store(&c->finished, 1);
}

static int ct_step(void *arg, void **result) {
  (void)result;
  waits_on_completion_thread(arg);
  return 0;
}

/* Holds its future open until the callback is registered. */
static int ct_gate(void *arg, void **result) {
  (void)result;
  on_ct *c = arg;
  while (!atomic_load(&c->go))
    sched_yield();
  return 0;
}

static void ct_callback(cua_future *fut, int status, void *arg) {
  (void)fut;
  (void)status;
  waits_on_completion_thread(arg);
}

START_TEST(waits_on_the_completion_thread_are_refused) {
  for (int where = 0; where < 2; where++) {
    on_ct c;
    memset(&c, 0, sizeof c);
    c.rt = open_two_streams();
    c.other = open_two_streams();
    c.buf = buffer(c.rt);
    cua_op *first = NULL, *theirs = NULL, *op = NULL;
    cua_buffer *ob = buffer(c.other);
    ck_assert_int_eq(cua_op_fill(&first, c.buf, 1.0f), 0);
    ck_assert_int_eq(cua_submit(&c.done, c.rt, first, NULL), 0);
    ck_assert_int_eq(cua_future_wait(c.done), 0);
    ck_assert_int_eq(cua_op_fill(&theirs, ob, 2.0f), 0);
    ck_assert_int_eq(cua_submit(&c.theirs, c.other, theirs, NULL), 0);
    cua_future *f = NULL;
    if (where == 0) {
      ck_assert_int_eq(cua_op_host(&op, c.rt, ct_step, &c), 0);
      ck_assert_int_eq(cua_submit(&f, c.rt, op, NULL), 0);
      ck_assert_int_eq(cua_future_wait(f), 0);
    } else {
      ck_assert_int_eq(cua_op_host(&op, c.rt, ct_gate, &c), 0);
      ck_assert_int_eq(cua_submit(&f, c.rt, op, NULL), 0);
      ck_assert_int_eq(cua_future_on_complete(f, ct_callback, &c), 0);
      atomic_store(&c.go, 1);
      ck_assert_int_eq(cua_future_wait(f), 0);
    }
    while (!atomic_load(&c.finished)) /* (a callback runs after the wait) */
      sched_yield();
    ck_assert_int_eq(cua_runtime_synchronize(c.rt), 0);
    ck_assert_int_eq(c.wait_rc, CUA_ERR_BUSY);
    ck_assert_str_eq(c.wait_msg,
                     "cua_future_wait: called from a host step, map or "
                     "callback of this runtime, on its completion thread, "
                     "which would have to complete what it waits for; wait "
                     "on another thread");
    ck_assert_int_eq(c.sync_rc, CUA_ERR_BUSY);
    ck_assert_ptr_nonnull(strstr(c.sync_msg, "cua_runtime_synchronize: "
                                             "called from a host step"));
    ck_assert_int_eq(c.sw_rc, CUA_ERR_BUSY);
    ck_assert_ptr_nonnull(
        strstr(c.sw_msg, "cua_submit_wait: called from a host step"));
    ck_assert_uint_eq(c.subs_after, c.subs_before);
    ck_assert_int_eq(c.done_rc, 0);
    ck_assert_int_eq(c.theirs_rc, 0);
    /* The runtime was not destroyed: it still runs work. */
    ck_assert_int_eq(cua_submit_wait(c.rt, first, NULL, NULL), 0);
    cua_future_destroy(f);
    cua_future_destroy(c.done);
    cua_future_destroy(c.theirs);
    cua_op_destroy(first);
    cua_op_destroy(theirs);
    cua_op_destroy(op);
    cua_buffer_destroy(c.buf);
    cua_buffer_destroy(ob);
    cua_runtime_destroy(c.rt);
    cua_runtime_destroy(c.other);
  }
}
END_TEST

/* Futures that complete together fire in the order their submissions
 * completed, all marked complete before any callback runs: a callback
 * may wait for an earlier future of its batch (it was refused as not yet
 * complete, and callbacks ran newest first). */
typedef struct order_cb {
  cua_future *earlier;
  int wait_rc;
  char seen[8];
  atomic_int started, n, go;
} order_cb;

static int order_gate(void *arg, void **result) {
  (void)result;
  order_cb *o = arg;
  while (!atomic_load(&o->go))
    sched_yield();
  return 0;
}

static void order_first(cua_future *fut, int status, void *arg) {
  (void)fut;
  (void)status;
  order_cb *o = arg;
  o->seen[atomic_fetch_add(&o->started, 1)] = 'b';
  atomic_fetch_add(&o->n, 1); /* (after its mark: the test reads it) */
}

static void order_second(cua_future *fut, int status, void *arg) {
  (void)fut;
  (void)status;
  order_cb *o = arg;
  o->wait_rc = cua_future_wait(o->earlier);
  o->seen[atomic_fetch_add(&o->started, 1)] = 'a';
  atomic_fetch_add(&o->n, 1);
}

START_TEST(callbacks_of_a_batch_run_in_completion_order) {
  cua_runtime *rt = open_two_streams();
  cua_buffer *x = buffer(rt), *y = buffer(rt);
  order_cb o;
  memset(&o, 0, sizeof o);
  cua_op *gate = NULL, *fill = NULL, *copy = NULL;
  cua_future *fg = NULL, *fb = NULL, *fa = NULL;
  ck_assert_int_eq(cua_op_host(&gate, rt, order_gate, &o), 0);
  ck_assert_int_eq(cua_submit(&fg, rt, gate, NULL), 0);
  ck_assert_int_eq(cua_op_fill(&fill, x, 2.0f), 0);
  ck_assert_int_eq(cua_submit(&fb, rt, fill, NULL), 0);
  ck_assert_int_eq(cua_op_copy(&copy, y, x), 0);
  ck_assert_int_eq(cua_submit(&fa, rt, copy, NULL), 0);
  o.earlier = fb;
  ck_assert_int_eq(cua_future_on_complete(fb, order_first, &o), 0);
  ck_assert_int_eq(cua_future_on_complete(fa, order_second, &o), 0);
  /* Both complete while the completion thread runs the gate. */
  struct timespec ts = {0, 100000000};
  nanosleep(&ts, NULL);
  atomic_store(&o.go, 1);
  ck_assert_int_eq(cua_future_wait(fa), 0);
  while (atomic_load(&o.n) < 2)
    sched_yield();
  ck_assert_int_eq(o.wait_rc, 0);
  ck_assert_msg(o.seen[0] == 'b' && o.seen[1] == 'a', "callbacks ran %c, %c",
                o.seen[0], o.seen[1]);
  ck_assert(first_value(rt, y) == 2.0f);
  cua_future *fs[] = {fg, fb, fa};
  cua_op *ops[] = {gate, fill, copy};
  for (size_t i = 0; i < 3; i++) {
    cua_future_destroy(fs[i]);
    cua_op_destroy(ops[i]);
  }
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* A callback that submits the next step of its work and registers itself
 * on it, for ever: cua_runtime_destroy() refuses submissions once it has
 * begun (CUA_ERR_CANCELED), so the chain ends and destroy returns. It
 * waited for ever, every callback submitting another step. */
typedef struct endless {
  cua_runtime *rt;
  cua_buffer *buf;
  atomic_int steps, refused, graph_refused;
  char msg[256], graph_msg[256];
} endless;

static void endless_step(cua_future *fut, int status, void *arg) {
  (void)status;
  endless *e = arg;
  cua_future_destroy(fut);
  cua_op *op = NULL;
  cua_future *next = NULL;
  int rc = cua_op_fill(&op, e->buf, 1.0f);
  if (rc == 0)
    rc = cua_submit(&next, e->rt, op, NULL);
  if (rc != 0) {
    snprintf(e->msg, sizeof e->msg, "%s", cua_runtime_error(e->rt));
    atomic_store(&e->refused, rc);
    /* A graph of the same op is refused too: its launches would be. */
    cua_graph *g = NULL;
    int grc = op != NULL ? cua_graph_create(&g, e->rt, op, NULL) : rc;
    snprintf(e->graph_msg, sizeof e->graph_msg, "%s", cua_runtime_error(e->rt));
    atomic_store(&e->graph_refused, grc);
    cua_graph_destroy(g);
    cua_op_destroy(op);
    return;
  }
  cua_op_destroy(op);
  atomic_fetch_add(&e->steps, 1);
  if (cua_future_on_complete(next, endless_step, e) != 0)
    cua_future_destroy(next);
}

START_TEST(destroy_ends_callbacks_that_submit_for_ever) {
  endless e;
  memset(&e, 0, sizeof e);
  e.rt = open_two_streams();
  e.buf = buffer(e.rt);
  cua_op *op = NULL;
  cua_future *f = NULL;
  ck_assert_int_eq(cua_op_fill(&op, e.buf, 1.0f), 0);
  ck_assert_int_eq(cua_submit(&f, e.rt, op, NULL), 0);
  cua_op_destroy(op);
  ck_assert_int_eq(cua_future_on_complete(f, endless_step, &e), 0);
  while (atomic_load(&e.steps) < 50)
    sched_yield();
  cua_runtime_destroy(e.rt);
  ck_assert_int_eq(atomic_load(&e.refused), CUA_ERR_CANCELED);
  ck_assert_str_eq(e.msg, "cua_submit: runtime closing");
  ck_assert_int_eq(atomic_load(&e.graph_refused), CUA_ERR_CANCELED);
  ck_assert_str_eq(e.graph_msg, "cua_graph_create: runtime closing");
  cua_buffer_destroy(e.buf); /* (the callbacks used it until the end) */
}
END_TEST

/* ------------------------------------------------------- relayed rounds */

/* Whether a runtime opened with "launch = relay" relays: not under another
 * $CUASYNC_LAUNCH (the launch* wrappers), nor in virtual time. */
static int relays(void) {
  const char *env = getenv("CUASYNC_LAUNCH");
  return (env == NULL || *env == '\0' || strcmp(env, "relay") == 0) &&
         strcmp(test_backend(), "sim") != 0;
}

static uint64_t rounds_relayed(cua_runtime *rt) {
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  return st.rounds_relayed;
}

/* A chain of @p n fills of @p b (values 0 .. n-1), with @p mid, if not
 * NULL, in place of the fill at index @p at. */
static cua_op *fill_chain(cua_buffer *b, int n, cua_op *mid, int at) {
  cua_op *chain = NULL;
  for (int i = 0; i < n; i++) {
    cua_op *op = NULL;
    if (mid != NULL && i == at)
      op = cua_op_retain(mid);
    else
      ck_assert_int_eq(cua_op_fill(&op, b, (float)i), 0);
    if (chain == NULL) {
      chain = op;
      continue;
    }
    cua_op *t = NULL;
    ck_assert_int_eq(cua_op_then(&t, chain, op), 0);
    cua_op_destroy(chain);
    cua_op_destroy(op);
    chain = t;
  }
  return chain;
}

/* launch = relay: a stream function in a relayed round submits. On a
 * backend that runs it at launch (launchtime, CUDA) it runs on the
 * submitting thread while a launch thread decides the rest of the round,
 * which holds rt->lock until the round is decided: the nested submission
 * is decided after the whole round, and its list is applied after the
 * round's (a list applied at once would wait for commands this thread had
 * not applied yet: a deadlock, found in review). */
START_TEST(a_stream_function_submits_inside_a_relayed_round) {
  cua_runtime *rt = open_policy("single-stream", "launch = relay\n");
  nested n;
  memset(&n, 0, sizeof n);
  n.rt = rt;
  n.buf = buffer(rt);
  cua_buffer *b = buffer(rt);
  cua_op *fn = NULL;
  ck_assert_int_eq(cua_op_func(&fn, rt, submitting_fn, &n, NULL, 0), 0);
  cua_op *chain = fill_chain(b, 600, fn, 200);
  cua_op_destroy(fn);
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit(&f, rt, chain, NULL), 0);
  ck_assert_msg(cua_future_wait(f) == 0, "%s", cua_future_error(f));
  ck_assert_int_eq(n.rc, 0);
  ck_assert_ptr_nonnull(n.fut);
  ck_assert_int_eq(n.wait_rc, CUA_ERR_BUSY);
  ck_assert_int_eq(cua_future_wait(n.fut), 0);
  ck_assert(first_value(rt, n.buf) == 5.0f);
  ck_assert(first_value(rt, b) == 599.0f);
  if (relays())
    ck_assert_uint_eq(rounds_relayed(rt), 1);
  cua_future_destroy(n.fut);
  cua_future_destroy(f);
  cua_op_destroy(chain);
  cua_buffer_destroy(b);
  cua_buffer_destroy(n.buf);
  cua_runtime_destroy(rt);
}
END_TEST

typedef struct beside {
  cua_runtime *rt;
  cua_buffer *buf;
  atomic_int stop;
  long submitted;
  int rc;
} beside;

/* Waits for and destroys @p bs's @p n futures in @p fs, keeping the first
 * failure in bs->rc. */
static void wait_beside(beside *bs, cua_future **fs, int n) {
  for (int i = 0; i < n; i++) {
    int w = cua_future_wait(fs[i]);
    if (bs->rc == 0)
      bs->rc = w;
    cua_future_destroy(fs[i]);
  }
}

/* Submits one fill after another, 64 in flight at most, until told to
 * stop. */
static void *submit_beside(void *arg) {
  beside *bs = arg;
  cua_future *fs[64];
  int nf = 0;
  while (!atomic_load(&bs->stop) && bs->rc == 0) {
    cua_op *op = NULL;
    bs->rc = cua_op_fill(&op, bs->buf, 1.0f);
    if (bs->rc == 0)
      bs->rc = cua_submit(&fs[nf], bs->rt, op, NULL);
    cua_op_destroy(op);
    if (bs->rc == 0) {
      nf++;
      bs->submitted++;
    }
    if (nf == 64 || bs->rc != 0) {
      wait_beside(bs, fs, nf);
      nf = 0;
    }
  }
  wait_beside(bs, fs, nf);
  return NULL;
}

/* launch = relay with another thread submitting small ops meanwhile:
 * once the launch thread has decided a relayed round and released
 * rt->lock, the other thread's submissions are decided while the
 * submitting thread still applies the round's chunks, and go to the
 * launch thread; the round's tail is applied by its submitting thread,
 * not queued to the launch thread behind them (which waited for the
 * tail's commands forever: a deadlock, found in review). Every chain's
 * last value arrives. */
START_TEST(relayed_rounds_beside_another_submitting_thread) {
  cua_runtime *rt = open_policy("single-stream", "launch = relay\n");
  beside bs;
  memset(&bs, 0, sizeof bs);
  bs.rt = rt;
  bs.buf = buffer(rt);
  cua_buffer *b = buffer(rt);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, submit_beside, &bs), 0);
  for (int round = 0; round < 30; round++) {
    cua_op *chain = fill_chain(b, 600, NULL, 0);
    cua_future *f = NULL;
    ck_assert_int_eq(cua_submit(&f, rt, chain, NULL), 0);
    ck_assert_msg(cua_future_wait(f) == 0, "%s", cua_future_error(f));
    cua_future_destroy(f);
    cua_op_destroy(chain);
    ck_assert(first_value(rt, b) == 599.0f);
  }
  atomic_store(&bs.stop, 1);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(bs.rc, 0);
  ck_assert_int_gt(bs.submitted, 0);
  ck_assert(first_value(rt, bs.buf) == 1.0f);
  /* (a round is relayed only while no other thread is in cua_submit() at
   * its first chunk: some are, not all) */
  if (relays())
    ck_assert_uint_gt(rounds_relayed(rt), 0);
  cua_buffer_destroy(b);
  cua_buffer_destroy(bs.buf);
  cua_runtime_destroy(rt);
}
END_TEST

/* ----------------------------------------------- a large DAG starts early */

/* "counter": places every op on stream 0 of device 0 and counts its
 * place() calls where a stream function can read them without the
 * runtime's lock. Its HOLD_AT-th place() waits (up to 10 s) until that
 * stream function has run: if the ops decided so far were applied, it
 * has, at once; if nothing is applied before the whole DAG is decided, it
 * cannot have, and it runs after the last placement. So what the function
 * sees depends on the runtime, not on how threads are scheduled. */
#define HOLD_AT 100
static atomic_ulong places;
static atomic_int fn_ran;

static int counter_create(const cua_policy_host *host,
                          const cua_param_value *params, void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 1);
}

static int counter_place(void *state, const cua_op_info *op,
                         cua_placement *out) {
  (void)state;
  (void)op;
  if (atomic_fetch_add(&places, 1) + 1 == HOLD_AT)
    for (int i = 0; i < 100000 && !atomic_load(&fn_ran); i++) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  out->device = 0;
  out->stream = 0;
  return 0;
}

static const cua_policy_descriptor counter =
    CUA_POLICY_INIT(.name = "counter", .version = "1",
                    .description = "counts its placements",
                    .create = counter_create, .place = counter_place);

static int count_placed_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  *(unsigned long *)arg = atomic_load(&places);
  atomic_store(&fn_ran, 1);
  return 0;
}

/* A DAG submitted whole starts to run before all of it is decided: the
 * round applies its decisions in chunks as it goes (the first after 16
 * launches; with a launch thread, that thread applies them, or the
 * submitting thread those it cannot take). The first op of a chain of
 * 1 + 2047 ops, a stream function, reads how many ops were placed when it
 * ran: at most HOLD_AT, since the policy waits for it there. Every op
 * ran, in order. */
START_TEST(a_large_dag_starts_before_it_is_all_decided) {
  enum { LINKS = 2047 };
  int rc = cua_policy_register(&counter);
  ck_assert(rc == 0 || rc == CUA_ERR_INVAL); /* registered already */
  cua_runtime *rt = open_policy("counter", NULL);
  cua_buffer *b = buffer(rt);
  unsigned long seen = 0;
  cua_op *chain = NULL;
  ck_assert_int_eq(cua_op_func(&chain, rt, count_placed_fn, &seen, NULL, 0), 0);
  for (int i = 1; i <= LINKS; i++) {
    cua_op *f = NULL, *t = NULL;
    ck_assert_int_eq(cua_op_fill(&f, b, (float)i), 0);
    ck_assert_int_eq(cua_op_then(&t, chain, f), 0);
    cua_op_destroy(chain);
    cua_op_destroy(f);
    chain = t;
  }
  atomic_store(&places, 0);
  atomic_store(&fn_ran, 0);
  ck_assert_int_eq(cua_submit_wait(rt, chain, NULL, NULL), 0);
  ck_assert(seen >= 1);
  ck_assert_msg(seen <= HOLD_AT,
                "the first op ran when %lu of the %d ops were placed: "
                "nothing ran before the whole DAG was decided",
                seen, 1 + LINKS);
  ck_assert(first_value(rt, b) == (float)LINKS);
  cua_op_destroy(chain);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

/* ---------------------------------------------------------------- cycles */

static void expect_cycle(cua_runtime *rt, cua_op *dag) {
  cua_future *f = (cua_future *)&f;
  ck_assert_err(rt, cua_submit(&f, rt, dag, NULL), CUA_ERR_CYCLE,
                "would have to run after itself");
  ck_assert_ptr_null(f);
}

/* A shared op placed after itself in one DAG is refused, never a future
 * that cannot complete. */
START_TEST(then_placing_an_op_after_itself_is_a_cycle) {
  cua_runtime *rt = open_two_streams();
  cua_buffer *x = buffer(rt), *y = buffer(rt);
  cua_op *f = NULL, *s = NULL, *t = NULL, *a = NULL, *b = NULL, *c = NULL;
  ck_assert_int_eq(cua_op_fill(&f, x, 1.0f), 0);
  ck_assert_int_eq(cua_op_shared(&s, f), 0);
  ck_assert_int_eq(cua_op_fill(&t, y, 2.0f), 0);
  ck_assert_int_eq(cua_op_then(&a, s, s), 0); /* then(S, S) */
  expect_cycle(rt, a);
  cua_op *inner = NULL;
  ck_assert_int_eq(cua_op_then(&inner, t, s), 0);
  ck_assert_int_eq(cua_op_then(&b, s, inner), 0); /* then(S, then(T, S)) */
  expect_cycle(rt, b);
  cua_op *first = NULL;
  ck_assert_int_eq(cua_op_then(&first, s, t), 0);
  ck_assert_int_eq(cua_op_then(&c, first, s), 0); /* then(then(S, T), S) */
  expect_cycle(rt, c);
  /* Nothing of them ran: the shared op still runs, once, when submitted
   * where it is not after itself. */
  cua_op *parts[] = {s, s}, *z = NULL;
  ck_assert_int_eq(cua_op_zip(&z, parts, 2), 0);
  cua_future *fz = NULL;
  ck_assert_int_eq(cua_submit(&fz, rt, z, NULL), 0);
  ck_assert_int_eq(cua_future_wait(fz), 0);
  ck_assert(first_value(rt, x) == 1.0f);
  cua_future_destroy(fz);
  cua_op *ops[] = {f, s, t, a, inner, b, first, c, z};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* A cycle through a buffer: in zip(X, then(G, X)) with X and G writing
 * one buffer, G follows X for the buffer (X comes first in the zip) and
 * X follows G for the then; so with two unzips of one zip. Refused, as a
 * then's cycle is: the submission hung, with every later use of the
 * buffer and the runtime's destruction. The same parts on two buffers
 * run, in the DAG's order; graphs refuse it too. */
START_TEST(a_cycle_through_a_buffer_is_refused) {
  cua_runtime *rt = open_two_streams();
  cua_buffer *x = buffer(rt), *y = buffer(rt);
  cua_op *X = NULL, *G = NULL, *t = NULL, *z = NULL;
  ck_assert_int_eq(cua_op_fill(&X, x, 1.0f), 0);
  ck_assert_int_eq(cua_op_fill(&G, x, 2.0f), 0);
  ck_assert_int_eq(cua_op_then(&t, G, X), 0);
  cua_op *parts[] = {X, t};
  ck_assert_int_eq(cua_op_zip(&z, parts, 2), 0);
  expect_cycle(rt, z);
  cua_graph *g = (cua_graph *)&g;
  ck_assert_err(rt, cua_graph_create(&g, rt, z, NULL), CUA_ERR_CYCLE,
                "or after an op that must follow it for a buffer");
  ck_assert_ptr_null(g);
  /* Two unzips of one zip, the form the unzip docs suggest. */
  cua_op *A = NULL, *B = NULL, *zz = NULL, *u0 = NULL, *u1 = NULL, *t2 = NULL,
         *z2 = NULL;
  ck_assert_int_eq(cua_op_fill(&A, x, 3.0f), 0);
  ck_assert_int_eq(cua_op_fill(&B, y, 4.0f), 0);
  cua_op *ab[] = {A, B};
  ck_assert_int_eq(cua_op_zip(&zz, ab, 2), 0);
  ck_assert_int_eq(cua_op_unzip(&u0, zz, 0), 0);
  ck_assert_int_eq(cua_op_unzip(&u1, zz, 1), 0);
  ck_assert_int_eq(cua_op_then(&t2, G, u1), 0);
  cua_op *parts2[] = {u0, t2};
  ck_assert_int_eq(cua_op_zip(&z2, parts2, 2), 0);
  expect_cycle(rt, z2);
  /* Nothing ran, nothing hangs: x is still usable. */
  cua_op *F = NULL;
  ck_assert_int_eq(cua_op_fill(&F, x, 5.0f), 0);
  ck_assert_int_eq(cua_submit_wait(rt, F, NULL, NULL), 0);
  ck_assert(first_value(rt, x) == 5.0f);
  /* With G on the other buffer there is no cycle: X, G, then X once. */
  cua_op *Gy = NULL, *t3 = NULL, *z3 = NULL;
  ck_assert_int_eq(cua_op_fill(&Gy, y, 6.0f), 0);
  ck_assert_int_eq(cua_op_then(&t3, Gy, X), 0);
  cua_op *parts3[] = {X, t3};
  ck_assert_int_eq(cua_op_zip(&z3, parts3, 2), 0);
  ck_assert_int_eq(cua_submit_wait(rt, z3, NULL, NULL), 0);
  ck_assert(first_value(rt, x) == 1.0f && first_value(rt, y) == 6.0f);
  cua_op *ops[] = {X, G, t, z, A, B, zz, u0, u1, t2, z2, F, Gy, t3, z3};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* A shared op that ran in an earlier submission, in the middle of a
 * chain: what follows it still follows what came before it. In
 * then(then(then(F, D), S), Y) the then around S kept the only edge to D,
 * and Y, standing for it by its last part alone, waited for S (done) but
 * not for D; in then(then(F, D), then(S, Z)) the walk for Z's starts
 * stopped at S. Y and Z then ran before D on their other device. F is a
 * slow stream function writing b, D copies b to the host, and the check
 * (a host step after Y; Z itself) sees D's copy or counts an early run. */
static float order_dst[16];

static int slow_sevens(cua_stream_ctx *ctx, void *arg) {
  (void)arg;
  struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  float *p = cua_ctx_ptr(ctx, 0);
  for (int i = 0; i < 16; i++)
    p[i] = 7.0f;
  return 0;
}

static int nothing_to_do(void *arg, void **result) {
  (void)arg;
  *result = NULL;
  return 0;
}

static int sees_sevens_host(void *arg, void **result) {
  if (order_dst[0] != 7.0f)
    (*(int *)arg)++;
  *result = NULL;
  return 0;
}

static int sees_sevens_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  if (order_dst[0] != 7.0f)
    (*(int *)arg)++;
  return 0;
}

START_TEST(what_follows_a_shared_op_run_before_follows_the_chain) {
  if (strcmp(test_backend(), "host") != 0)
    return; /* (a stream function writing through cua_ctx_ptr(): the CPU) */
  cua_runtime *rt = NULL;
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\npolicy = "
                                  "round-robin\nlaunch = caller\n"
                                  "[backend.host]\ndevices = 2\n"),
                   0);
  cua_buffer *b = NULL, *c = NULL;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  ck_assert_int_eq(cua_buffer_create(&c, rt, 1, 64, 0), 0);
  cua_op *inner = NULL, *S = NULL;
  ck_assert_int_eq(cua_op_host(&inner, rt, nothing_to_do, NULL), 0);
  ck_assert_int_eq(cua_op_shared(&S, inner), 0);
  ck_assert_int_eq(cua_submit_wait(rt, S, NULL, NULL), 0);
  int early = 0;
  for (int form = 0; form < 2; form++) {
    for (int i = 0; i < 5; i++) {
      memset(order_dst, 0, sizeof order_dst);
      cua_access ab = {b, CUA_READ_WRITE}, ac = {c, CUA_READ_WRITE};
      cua_op *F = NULL, *D = NULL, *t1 = NULL, *t2 = NULL, *Y = NULL,
             *t3 = NULL, *H = NULL, *root = NULL;
      ck_assert_int_eq(cua_op_func(&F, rt, slow_sevens, NULL, &ab, 1), 0);
      ck_assert_int_eq(cua_op_memcpy_d2h(&D, order_dst, b, 0, sizeof order_dst),
                       0);
      ck_assert_int_eq(cua_op_then(&t1, F, D), 0);
      if (form == 0) {
        ck_assert_int_eq(cua_op_then(&t2, t1, S), 0);
        ck_assert_int_eq(cua_op_fill(&Y, c, 1.0f), 0);
        ck_assert_int_eq(cua_op_then(&t3, t2, Y), 0);
        ck_assert_int_eq(cua_op_host(&H, rt, sees_sevens_host, &early), 0);
        ck_assert_int_eq(cua_op_then(&root, t3, H), 0);
      } else {
        ck_assert_int_eq(cua_op_func(&Y, rt, sees_sevens_fn, &early, &ac, 1),
                         0);
        ck_assert_int_eq(cua_op_then(&t2, S, Y), 0);
        ck_assert_int_eq(cua_op_then(&root, t1, t2), 0);
      }
      ck_assert_int_eq(cua_submit_wait(rt, root, NULL, NULL), 0);
      ck_assert_msg(early == 0, "form %d, run %d: ran before D completed", form,
                    i);
      cua_op *all[] = {F, D, t1, t2, Y, t3, H, root};
      for (size_t k = 0; k < 8; k++)
        cua_op_destroy(all[k]);
    }
  }
  cua_op_destroy(S);
  cua_op_destroy(inner);
  cua_buffer_destroy(b);
  cua_buffer_destroy(c);
  cua_runtime_destroy(rt);
}
END_TEST

/* ------------------------------------------------------------- options */

START_TEST(submit_options_without_size_are_refused) {
  cua_runtime *rt = open_two_streams();
  cua_buffer *x = buffer(rt);
  cua_op *op = NULL;
  ck_assert_int_eq(cua_op_fill(&op, x, 1.0f), 0);
  cua_submit_options o;
  memset(&o, 0, sizeof o);
  o.on_stream = 1; /* would be ignored silently with size 0 */
  cua_future *f = (cua_future *)&f;
  ck_assert_err(rt, cua_submit(&f, rt, op, &o), CUA_ERR_INVAL,
                "opts->size is 0; set it to sizeof(cua_submit_options)");
  ck_assert_ptr_null(f);
  o.size = sizeof o;
  o.placement.device = 0;
  o.placement.stream = 1;
  ck_assert_int_eq(cua_submit(&f, rt, op, &o), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua_op_destroy(op);
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt);
}
END_TEST

/* A place() that returns a code outside the error list: the message says
 * which number it returned, not just "unknown error". */
START_TEST(place_codes_outside_the_list_are_named) {
  cua_runtime *rt = NULL;
  char text[256];
  snprintf(text, sizeof text, "[runtime]\nbackend = %s\npolicy = broken-code\n",
           test_backend());
  ck_assert_int_eq(open_text(&rt, text), 0);
  cua_buffer *x = buffer(rt);
  int codes[] = {-12345, 3};
  for (size_t i = 0; i < 2; i++) {
    cua_op *op = NULL;
    ck_assert_int_eq(cua_op_fill(&op, x, 1.0f), 0);
    cua_hints h = CUA_HINTS_INIT;
    h.priority = codes[i];
    ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
    cua_future *f = NULL;
    ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
    ck_assert_int_eq(cua_future_wait(f), CUA_ERR_POLICY);
    char want[96];
    snprintf(want, sizeof want,
             "returned %d, which is not a cuasync error code", codes[i]);
    ck_assert_msg(strstr(cua_future_error(f), want) != NULL, "%s",
                  cua_future_error(f));
    cua_future_destroy(f);
    cua_op_destroy(op);
  }
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt);
}
END_TEST

/* A policy handle outlives its runtime: its name stays, submissions refuse
 * it, closing frees it (ASan and valgrind see no use after free). */
START_TEST(policy_handle_outlives_its_runtime) {
  cua_runtime *rt = open_two_streams(), *rt2 = open_two_streams();
  cua_policy *p = NULL;
  ck_assert_int_eq(cua_policy_open(&p, rt, "single-stream"), 0);
  cua_buffer *x = buffer(rt2);
  cua_op *op = NULL;
  ck_assert_int_eq(cua_op_fill(&op, x, 1.0f), 0);
  cua_submit_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.policy = p;
  cua_future *f = (cua_future *)&f;
  ck_assert_err(rt2, cua_submit(&f, rt2, op, &o), CUA_ERR_INVAL,
                "the policy belongs to another runtime");
  ck_assert_ptr_null(f);
  cua_runtime_destroy(rt);
  ck_assert_str_eq(cua_policy_name(p), "single-stream");
  ck_assert_err(rt2, cua_submit(&f, rt2, op, &o), CUA_ERR_CANCELED,
                "the policy's runtime is closed");
  cua_policy_close(p);
  o.policy = NULL;
  ck_assert_int_eq(cua_submit(&f, rt2, op, &o), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua_op_destroy(op);
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt2);
}
END_TEST

/* The stream-function context accessors answer NULL neutrally. */
START_TEST(context_accessors_take_null) {
  ck_assert_ptr_null(cua_ctx_stream(NULL));
  ck_assert_int_eq(cua_ctx_placement(NULL).device, -1);
  ck_assert_int_eq(cua_ctx_placement(NULL).stream, -1);
  ck_assert_ptr_null(cua_ctx_backend(NULL));
  ck_assert_ptr_null(cua_ctx_ptr(NULL, 0));
  cua_ctx_set_result(NULL, NULL);
  cua_ctx_fail(NULL, "%s", "nothing");
}
END_TEST

/* ------------------------------------------------------ stream interop */

static int capture_native(cua_stream_ctx *ctx, void *arg) {
  *(void **)arg = cua_ctx_stream(ctx);
  return 0;
}

/* Runtime a stands for the application's own stream code (cuBLAS, a
 * PyTorch stream...): cuasync knows nothing of what it queues there. Its
 * stream 0's native handle is the "native stream". Ordering is proved by
 * data: without the interop calls each copy would read the buffer before
 * the long-delayed fill wrote it. */
/* The application's stream code enqueues as it is called: runtime a, which
 * stands for it, applies its lists on the submitting thread even when the
 * suite runs with a launch thread ($CUASYNC_LAUNCH=thread), which would
 * enqueue a's work only after cua_submit() returns. */
static cua_runtime *open_native_stand_in(void) {
  const char *env = getenv("CUASYNC_LAUNCH");
  char *keep = env != NULL ? strdup(env) : NULL;
  unsetenv("CUASYNC_LAUNCH");
  cua_runtime *rt = open_two_streams();
  if (keep != NULL) {
    setenv("CUASYNC_LAUNCH", keep, 1);
    free(keep);
  }
  return rt;
}

START_TEST(native_streams_are_ordered_both_ways) {
  if (runs_ops_at_launch())
    return;
  cua_runtime *a = open_native_stand_in(), *b = open_two_streams();
  void *na = NULL;
  cua_op *cap = NULL;
  ck_assert_int_eq(cua_op_func(&cap, a, capture_native, &na, NULL, 0), 0);
  run_on(a, cap, 0);
  ck_assert_ptr_nonnull(na);
  cua_buffer *xa = buffer(a), *ya = buffer(a), *xb = buffer(b);
  /* b waits for what a queued on its stream. */
  cua_op *spin = NULL, *fill = NULL, *late = NULL;
  ck_assert_int_eq(cua_op_spin(&spin, a, 300000000ull, 1), 0);
  ck_assert_int_eq(cua_op_fill(&fill, xa, 7.0f), 0);
  ck_assert_int_eq(cua_op_then(&late, spin, fill), 0);
  cua_future *fa = NULL;
  ck_assert_int_eq(cua_submit_on(&fa, a, late, 0, 0), 0);
  cua_op *w = NULL, *cp = NULL, *dag = NULL;
  ck_assert_int_eq(cua_op_wait_native(&w, b, 0, na), 0);
  ck_assert_int_eq(
      cua_op_memcpy_h2d(&cp, xb, 0, cua_buffer_ptr(xa), N * sizeof(float)), 0);
  ck_assert_int_eq(cua_op_then(&dag, w, cp), 0);
  run_on(b, dag, 1);
  ck_assert(first_value(b, xb) == 7.0f);
  ck_assert_int_eq(cua_future_wait(fa), 0);
  /* a's stream waits for b's future. */
  cua_op *spin2 = NULL, *fill2 = NULL, *late2 = NULL;
  ck_assert_int_eq(cua_op_spin(&spin2, b, 300000000ull, 1), 0);
  ck_assert_int_eq(cua_op_fill(&fill2, xb, 9.0f), 0);
  ck_assert_int_eq(cua_op_then(&late2, spin2, fill2), 0);
  cua_future *fb = NULL;
  ck_assert_int_eq(cua_submit_on(&fb, b, late2, 0, 0), 0);
  ck_assert_int_eq(cua_future_wait_native(fb, 0, na), 0);
  cua_op *cp2 = NULL;
  ck_assert_int_eq(
      cua_op_memcpy_h2d(&cp2, ya, 0, cua_buffer_ptr(xb), N * sizeof(float)), 0);
  run_on(a, cp2, 0);
  ck_assert(first_value(a, ya) == 9.0f);
  ck_assert_int_eq(cua_future_wait(fb), 0);
  /* Misuse: NULL, a device that does not exist. */
  cua_op *bad = (cua_op *)&bad;
  ck_assert_err(b, cua_op_wait_native(&bad, b, 0, NULL), CUA_ERR_INVAL,
                "NULL argument");
  ck_assert_ptr_null(bad);
  ck_assert_err(b, cua_op_wait_native(&bad, b, 7, na), CUA_ERR_BAD_DEVICE,
                "no device 7");
  ck_assert_int_eq(cua_future_wait_native(NULL, 0, na), CUA_ERR_INVAL);
  ck_assert_int_eq(cua_future_wait_native(fb, 0, na), 0); /* complete */
  cua_future_destroy(fa);
  cua_future_destroy(fb);
  cua_op *ops[] = {cap, spin, fill, late, w, cp, dag, spin2, fill2, late2, cp2};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(xa);
  cua_buffer_destroy(ya);
  cua_buffer_destroy(xb);
  cua_runtime_destroy(b);
  cua_runtime_destroy(a);
}
END_TEST

/* The runtime whose future a native stream waits for may be destroyed
 * before that stream gets to the wait: the stream goes on (CUDA allows
 * destroying an event a stream waits for). On the host backend the wait
 * read the destroyed runtime's event (ASan and valgrind saw it); now
 * destroy() waits until the other runtime's stream has passed it. Both
 * streams are held by stream functions the test releases, so the wait is
 * queued and not yet reached when b is destroyed. */
typedef struct native_gone {
  atomic_int a_go, b_go, destroyed;
  cua_runtime *b;
} native_gone;

static int hold_a(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  native_gone *g = arg;
  while (!atomic_load(&g->a_go))
    sched_yield();
  return 0;
}

static int hold_b(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  native_gone *g = arg;
  while (!atomic_load(&g->b_go))
    sched_yield();
  return 0;
}

static void *destroy_b(void *arg) {
  native_gone *g = arg;
  cua_runtime_destroy(g->b);
  atomic_store(&g->destroyed, 1);
  return NULL;
}

START_TEST(a_runtime_waited_for_natively_may_be_destroyed) {
  /* (host only: stream functions that block their stream would block the
   * submitting thread where they run at launch, as on CUDA) */
  if (strcmp(test_backend(), "host") != 0)
    return;
  cua_runtime *a = open_native_stand_in();
  native_gone g;
  memset(&g, 0, sizeof g);
  g.b = open_two_streams();
  void *na = NULL;
  cua_op *cap = NULL;
  ck_assert_int_eq(cua_op_func(&cap, a, capture_native, &na, NULL, 0), 0);
  run_on(a, cap, 0);
  cua_buffer *xa = buffer(a);
  cua_op *ha = NULL, *hb = NULL, *after = NULL;
  cua_future *fa = NULL, *fb = NULL, *fa2 = NULL;
  ck_assert_int_eq(cua_op_func(&ha, a, hold_a, &g, NULL, 0), 0);
  ck_assert_int_eq(cua_submit_on(&fa, a, ha, 0, 0), 0);
  ck_assert_int_eq(cua_op_func(&hb, g.b, hold_b, &g, NULL, 0), 0);
  ck_assert_int_eq(cua_submit_on(&fb, g.b, hb, 0, 0), 0);
  ck_assert_int_eq(cua_future_poll(fb), CUA_ERR_AGAIN);
  ck_assert_int_eq(cua_future_wait_native(fb, 0, na), 0); /* queued on a */
  atomic_store(&g.b_go, 1);
  ck_assert_int_eq(cua_future_wait(fb), 0);
  cua_future_destroy(fb);
  cua_op_destroy(hb);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, destroy_b, &g), 0);
  struct timespec ts = {0, 100000000};
  nanosleep(&ts, NULL);
  /* a's stream 0 has not reached the wait: b's destruction waits for it */
  ck_assert_msg(!atomic_load(&g.destroyed),
                "runtime b was destroyed while a's stream was still to read "
                "its event");
  atomic_store(&g.a_go, 1);
  pthread_join(t, NULL);
  ck_assert_int_eq(cua_op_fill(&after, xa, 4.0f), 0);
  ck_assert_int_eq(cua_submit_on(&fa2, a, after, 0, 0), 0);
  ck_assert_int_eq(cua_future_wait(fa2), 0);
  ck_assert_int_eq(cua_future_wait(fa), 0);
  ck_assert(first_value(a, xa) == 4.0f);
  cua_future_destroy(fa);
  cua_future_destroy(fa2);
  cua_op_destroy(cap);
  cua_op_destroy(ha);
  cua_op_destroy(after);
  cua_buffer_destroy(xa);
  cua_runtime_destroy(a);
}
END_TEST

/* A submission whose host step has not run has work no stream can wait
 * for: CUA_ERR_AGAIN, and the caller waits on the host instead. */
static int slow_host(void *arg, void **result) {
  (void)arg;
  *result = NULL;
  struct timespec ts = {0, 200000000};
  nanosleep(&ts, NULL);
  return 0;
}

START_TEST(native_wait_for_pending_host_step_is_again) {
  if (runs_ops_at_launch())
    return;
  cua_runtime *a = open_two_streams();
  void *na = NULL;
  cua_op *cap = NULL, *h = NULL;
  ck_assert_int_eq(cua_op_func(&cap, a, capture_native, &na, NULL, 0), 0);
  run_on(a, cap, 0);
  ck_assert_int_eq(cua_op_host(&h, a, slow_host, NULL), 0);
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit(&f, a, h, NULL), 0);
  ck_assert_err(a, cua_future_wait_native(f, 0, na), CUA_ERR_AGAIN,
                "not launched yet");
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua_op_destroy(cap);
  cua_op_destroy(h);
  cua_runtime_destroy(a);
}
END_TEST

static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An idle runtime costs about no CPU: its completion thread sleeps until
 * there is work (measured as process CPU time over half a second). */
START_TEST(idle_runtime_uses_no_cpu) {
  cua_runtime *rt = open_two_streams();
  cua_buffer *x = buffer(rt);
  cua_op *op = NULL;
  ck_assert_int_eq(cua_op_fill(&op, x, 1.0f), 0);
  run_on(rt, op, 0);
  run_on(rt, op, 1);
  uint64_t c0 = cpu_ns();
  struct timespec ts = {0, 500000000};
  nanosleep(&ts, NULL);
  uint64_t used = cpu_ns() - c0;
  ck_assert_msg(used < 25000000u,
                "idle for 0.5 s, the process used %.1f ms "
                "of CPU",
                used / 1e6);
  cua_op_destroy(op);
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt);
}
END_TEST

/* Levels count the edges thens make: round-robin's by_level gives the
 * i-th op of each level the i-th slot (stream i on one device; over every
 * device's streams on several). Three ops, then three after all of them
 * (then(zip(f0, f1, f2), g)): the g are level 1 and run where the f ran.
 * (With every op at level 0, as 0.1 had it, they took slots 3 4 5: streams
 * 3 0 1 on one device.) */
static int record_stream(cua_stream_ctx *ctx, void *arg) {
  cua_placement pl = cua_ctx_placement(ctx);
  *(int *)arg = pl.device * 1024 + pl.stream;
  return 0;
}

START_TEST(levels_count_then_edges) {
  cua_runtime *rt =
      open_policy("round-robin", "[policy.round-robin]\n"
                                 "streams = 4\nby_level = true\n");
  int where[6] = {-1, -1, -1, -1, -1, -1};
  cua_op *f[3], *g[3], *t[3], *z, *root;
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(cua_op_func(&f[i], rt, record_stream, &where[i], NULL, 0),
                     0);
    ck_assert_int_eq(
        cua_op_func(&g[i], rt, record_stream, &where[3 + i], NULL, 0), 0);
  }
  ck_assert_int_eq(cua_op_zip(&z, f, 3), 0);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(cua_op_then(&t[i], z, g[i]), 0);
  ck_assert_int_eq(cua_op_zip(&root, t, 3), 0);
  ck_assert_int_eq(cua_submit_wait(rt, root, NULL, NULL), 0);
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(where[i] >= 0 && (i == 0 || where[i] != where[i - 1]),
                  "level-0 op %d ran on device %d stream %d", i,
                  where[i] / 1024, where[i] % 1024);
    ck_assert_msg(where[3 + i] == where[i],
                  "level-1 op %d ran on device %d stream %d, level-0 op %d "
                  "on device %d stream %d",
                  i, where[3 + i] / 1024, where[3 + i] % 1024, i,
                  where[i] / 1024, where[i] % 1024);
  }
  if (cua_device_count(rt) == 1)
    for (int i = 0; i < 3; i++)
      ck_assert_int_eq(where[i], i);
  for (int i = 0; i < 3; i++) {
    cua_op_destroy(f[i]);
    cua_op_destroy(g[i]);
    cua_op_destroy(t[i]);
  }
  cua_op_destroy(z);
  cua_op_destroy(root);
  cua_runtime_destroy(rt);
}
END_TEST

/* What cua_runtime_dump_policy() writes for @p rt, in @p text. */
static void dump_policy(cua_runtime *rt, char *text, size_t len) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(cua_runtime_dump_policy(rt, f), 0);
  rewind(f);
  size_t got = fread(text, 1, len - 1, f);
  text[got] = '\0';
  fclose(f);
}

/* completed() is told the op's name and tag, as place() is (the test
 * policy "scatter" keeps the last ones it saw and dumps them). */
START_TEST(completed_is_told_name_and_tag) {
  cua_runtime *rt = open_policy("scatter", NULL);
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = "alpha";
  h.tag = "beta";
  ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
  ck_assert_int_eq(cua_submit_wait(rt, op, NULL, NULL), 0);
  char text[512];
  dump_policy(rt, text, sizeof text);
  ck_assert_msg(strstr(text, "completed 1 (last: name alpha tag beta)"),
                "dump: %s", text);
  cua_op_destroy(op);
  cua_runtime_destroy(rt);
}
END_TEST

/* Without $CUASYNC_DEBUG, a policy's debug lines are not formatted: the
 * test policy logs one per op whose argument crashes if formatted. */
START_TEST(debug_lines_are_not_formatted_without_debug) {
  if (getenv("CUASYNC_DEBUG") != NULL)
    return; /* formatting is then wanted: nothing to check */
  cua_runtime *rt =
      open_policy("scatter", "[policy.scatter]\ndebug_poison = true\n");
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_submit_wait(rt, op, NULL, NULL), 0);
  cua_op_destroy(op);
  cua_runtime_destroy(rt);
}
END_TEST

/* Submits @p root on @p rt (a scatter runtime), asserts that the policy
 * was first asked to place the ops @p want (op ids), then destroys the
 * @p n ops of @p all and the runtime. */
static void expect_placed(cua_runtime *rt, cua_op *root, const char *want,
                          cua_op **all, size_t n) {
  ck_assert_int_eq(cua_submit_wait(rt, root, NULL, NULL), 0);
  char text[512], line[64];
  dump_policy(rt, text, sizeof text);
  snprintf(line, sizeof line, "first placed (op ids): %s\n", want);
  ck_assert_msg(strstr(text, line), "dump: %s", text);
  for (size_t i = 0; i < n; i++)
    cua_op_destroy(all[i]);
  cua_runtime_destroy(rt);
}

/* place() is called breadth-first, as policy.h says: zip(then(a1, a2),
 * then(b1, b2)) is numbered a1 a2 b1 b2 (1 2 3 4, submission order) and
 * placed a1 b1 a2 b2 (a2 and b2 become placeable once a1 and b1 are). */
START_TEST(place_order_is_breadth_first) {
  cua_runtime *rt = open_policy("scatter", NULL);
  cua_op *a1, *a2, *b1, *b2, *ta, *tb, *z;
  ck_assert_int_eq(cua_op_spin(&a1, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_spin(&a2, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_spin(&b1, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_spin(&b2, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_then(&ta, a1, a2), 0);
  ck_assert_int_eq(cua_op_then(&tb, b1, b2), 0);
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){ta, tb}, 2), 0);
  cua_op *all[] = {a1, a2, b1, b2, ta, tb, z};
  expect_placed(rt, z, "1 3 2 4", all, sizeof all / sizeof *all);
}
END_TEST

/* Ops of one level that become placeable out of the order they were made
 * are placed in that order: zip(then(zip(a, b), d), then(a, e)) numbers a b
 * d e (1 2 3 4); e becomes placeable once a is placed, d only once b is,
 * and still d is placed before e (first in, first out would give 1 2 4 3;
 * a random DAG's streams then need more waits). */
START_TEST(place_order_within_a_level_is_creation_order) {
  cua_runtime *rt = open_policy("scatter", NULL);
  cua_op *a, *b, *d, *e, *ab, *td, *te, *z;
  ck_assert_int_eq(cua_op_spin(&a, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_spin(&b, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_spin(&d, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_spin(&e, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_zip(&ab, (cua_op *[]){a, b}, 2), 0);
  ck_assert_int_eq(cua_op_then(&td, ab, d), 0);
  ck_assert_int_eq(cua_op_then(&te, a, e), 0);
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){td, te}, 2), 0);
  cua_op *all[] = {a, b, d, e, ab, td, te, z};
  expect_placed(rt, z, "1 2 3 4", all, sizeof all / sizeof *all);
}
END_TEST

/* ------------------------------------------------ what a policy is told */

/* An op with a name and a cost hint. */
static cua_op *hinted(cua_op *op, const char *name, uint64_t cost_ns) {
  cua_hints h = CUA_HINTS_INIT;
  h.name = name;
  h.cost_ns = cost_ns;
  ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
  return op;
}

static const earliest_op *seen_op(const char *name) {
  for (size_t i = 0; i < earliest_seen.nops; i++)
    if (strcmp(earliest_seen.ops[i].name, name) == 0)
      return &earliest_seen.ops[i];
  ck_abort_msg("the policy never placed op '%s'", name);
  return NULL;
}

static const earliest_dag *seen_dag(void) {
  for (size_t i = 0; i < EARLIEST_MAX_DAGS; i++)
    if (earliest_seen.dags[i].submission != 0)
      return &earliest_seen.dags[i];
  ck_abort_msg("no submission_begin()");
  return NULL;
}

static size_t dag_index(const earliest_dag *g, const char *name) {
  for (size_t i = 0; i < g->nops; i++)
    if (strcmp(g->names[i], name) == 0)
      return i;
  ck_abort_msg("op '%s' is not in the DAG", name);
  return 0;
}

/* then(then(zip(a, b), c), d), c = axpy(y += 2 x), d = copy(z <- y): a
 * policy registered from memory (tests/earliest.h) is told c's inputs as
 * the op ids of a and b, where they went and when they should end, the
 * successor counts, and the whole DAG before the first place(). */
START_TEST(policy_sees_inputs_successors_and_the_dag) {
  earliest_register();
  cua_runtime *rt =
      open_policy("earliest-end", "[policy.earliest-end]\nstreams = 3\n");
  ck_assert_int_eq(earliest_seen.streams, 3);
  cua_buffer *x = buffer(rt), *y = buffer(rt), *z = buffer(rt);
  cua_op *a, *b, *c, *d, *zab, *t1, *t2;
  ck_assert_int_eq(cua_op_fill(&a, x, 1.0f), 0);
  ck_assert_int_eq(cua_op_fill(&b, y, 2.0f), 0);
  ck_assert_int_eq(cua_op_axpy(&c, y, 2.0f, x), 0);
  ck_assert_int_eq(cua_op_copy(&d, z, y), 0);
  hinted(a, "a", 1000000);
  hinted(b, "b", 2000000);
  hinted(c, "c", 1000000);
  hinted(d, "d", 0);
  ck_assert_int_eq(cua_op_zip(&zab, (cua_op *[]){a, b}, 2), 0);
  ck_assert_int_eq(cua_op_then(&t1, zab, c), 0);
  ck_assert_int_eq(cua_op_then(&t2, t1, d), 0);
  ck_assert_int_eq(cua_submit_wait(rt, t2, NULL, NULL), 0);

  const earliest_op *ea = seen_op("a"), *eb = seen_op("b"), *ec = seen_op("c"),
                    *ed = seen_op("d");
  /* Inputs: c waits for a and b (through the zip), d for c. */
  ck_assert_uint_eq(ea->ninputs, 0);
  ck_assert_uint_eq(ec->ninputs, 2);
  ck_assert_msg((ec->inputs[0] == ea->op_id && ec->inputs[1] == eb->op_id) ||
                    (ec->inputs[1] == ea->op_id && ec->inputs[0] == eb->op_id),
                "c's inputs are ops %" PRIu64 " and %" PRIu64
                ", not a (%" PRIu64 ") and b (%" PRIu64 ")",
                ec->inputs[0], ec->inputs[1], ea->op_id, eb->op_id);
  ck_assert_uint_eq(ed->ninputs, 1);
  ck_assert_uint_eq(ed->inputs[0], ec->op_id);
  /* Successors. */
  ck_assert_uint_eq(ea->nsuccessors, 1);
  ck_assert_uint_eq(eb->nsuccessors, 1);
  ck_assert_uint_eq(ec->nsuccessors, 1);
  ck_assert_uint_eq(ed->nsuccessors, 0);
  /* a and b went to two streams (the second was idle), and each input's
   * expected end is its stream's after it: a's 1 ms and b's 2 ms of cost
   * on top of the round's clock. */
  ck_assert_msg(ea->where.stream != eb->where.stream ||
                    ea->where.device != eb->where.device,
                "a and b on one stream");
  ck_assert_uint_eq(eb->expected_end - ea->expected_end, 1000000);
  for (int k = 0; k < 2; k++) {
    const earliest_op *in = ec->inputs[k] == ea->op_id ? ea : eb;
    if (ec->input_state[k] == CUA_INPUT_PLACED)
      ck_assert_uint_eq(ec->input_end[k], in->expected_end);
    else
      ck_assert_int_eq(ec->input_state[k], CUA_INPUT_DONE);
  }
  /* c starts after both and costs 1 ms. */
  ck_assert_uint_ge(ec->expected_end, eb->expected_end + 1000000);

  /* The DAG, once, before any place(), in post-order. */
  ck_assert_uint_eq(earliest_seen.begins, 1);
  ck_assert_uint_eq(earliest_seen.ends, 1);
  const earliest_dag *g = seen_dag();
  ck_assert_int_eq(g->ended, 1);
  ck_assert_uint_eq(g->nops, 4);
  ck_assert_uint_eq(g->ndevice, 4);
  ck_assert_uint_eq(g->placed, 4);
  size_t ia = dag_index(g, "a"), ib = dag_index(g, "b"), ic = dag_index(g, "c"),
         id = dag_index(g, "d");
  ck_assert_uint_eq(g->ids[ia], ea->op_id);
  ck_assert_uint_eq(g->ninputs[ic], 2);
  ck_assert_msg((g->inputs[ic][0] == ia && g->inputs[ic][1] == ib) ||
                    (g->inputs[ic][0] == ib && g->inputs[ic][1] == ia),
                "c's DAG inputs");
  ck_assert_uint_eq(g->ninputs[id], 1);
  ck_assert_uint_eq(g->inputs[id][0], ic);
  ck_assert_uint_eq(g->nsucc[ia], 1);
  ck_assert_uint_eq(g->nsucc[id], 0);
  /* Buffers x, y, z; c reads x and reads and writes y. */
  ck_assert_uint_eq(g->nbuffers, 3);
  ck_assert_uint_eq(g->buf_bytes[0], N * sizeof(float));
  ck_assert_uint_eq(g->nbuf[ic], 2);
  ck_assert_uint_eq(g->access[ic][0] | g->access[ic][1],
                    CUA_ACCESS_READ | CUA_ACCESS_WRITE);
  ck_assert_uint_eq(g->nbuf[ia], 1);
  ck_assert_uint_eq(g->access[ia][0], CUA_ACCESS_WRITE);
  ck_assert_float_eq(first_value(rt, z), 4.0f);

  cua_op *all[] = {a, b, c, d, zab, t1, t2};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    cua_op_destroy(all[i]);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_buffer_destroy(z);
  cua_runtime_destroy(rt);
}
END_TEST

static int nothing(void *arg, void **res) {
  (void)arg;
  *res = NULL;
  return 0;
}

/* then(then(a, h), b) with h a host step: b is placed in a later round,
 * once h ran, and submission_end() waits for it (the policy refuses an op
 * placed after its submission ended). b is told h as a host step. A
 * submission to an explicit stream asks no policy: no DAG. */
START_TEST(submission_end_comes_after_ops_behind_a_host_step) {
  earliest_register();
  cua_runtime *rt = open_policy("earliest-end", NULL);
  cua_op *a, *h, *b, *t1, *t2;
  ck_assert_int_eq(cua_op_spin(&a, rt, 1000000, 1), 0);
  ck_assert_int_eq(cua_op_host(&h, rt, nothing, NULL), 0);
  ck_assert_int_eq(cua_op_spin(&b, rt, 1000, 1), 0);
  hinted(a, "a", 0);
  hinted(h, "h", 0);
  hinted(b, "b", 0);
  ck_assert_int_eq(cua_op_then(&t1, a, h), 0);
  ck_assert_int_eq(cua_op_then(&t2, t1, b), 0);
  ck_assert_int_eq(cua_submit_wait(rt, t2, NULL, NULL), 0);
  const earliest_dag *g = seen_dag();
  ck_assert_uint_eq(g->nops, 3);
  ck_assert_uint_eq(g->ndevice, 2);
  ck_assert_uint_eq(g->placed, 2);
  ck_assert_int_eq(g->ended, 1);
  ck_assert_uint_eq(earliest_seen.ends, 1);
  const earliest_op *eb = seen_op("b");
  ck_assert_uint_eq(eb->ninputs, 1);
  ck_assert_int_eq(eb->input_state[0], CUA_INPUT_HOST);
  ck_assert_uint_eq(eb->input_end[0], 0);

  cua_op *c;
  ck_assert_int_eq(cua_op_spin(&c, rt, 1000, 1), 0);
  run_on(rt, c, 0);
  ck_assert_uint_eq(earliest_seen.begins, 1);
  cua_op *all[] = {a, h, b, t1, t2, c};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    cua_op_destroy(all[i]);
  cua_runtime_destroy(rt);
}
END_TEST

/* A placement on node 1 (or with reserved set) is invalid in a runtime of
 * one node: the op fails with CUA_ERR_BAD_PLACEMENT naming the policy. */
static int node_create(const cua_policy_host *host,
                       const cua_param_value *params, void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 1);
}
static int node_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  *out = (cua_placement){.device = 0,
                         .stream = 0,
                         .node = op->priority == 1 ? 1 : 0,
                         .reserved = op->priority == 2 ? 7 : 0};
  return 0;
}
static const cua_policy_descriptor node_policy =
    CUA_POLICY_INIT(.name = "other-node", .create = node_create,
                    .place = node_place);

START_TEST(a_placement_on_another_node_is_refused) {
  ck_assert_int_eq(cua_policy_register(&node_policy), 0);
  cua_runtime *rt = open_policy("other-node", NULL);
  for (int prio = 0; prio < 3; prio++) {
    cua_op *op;
    ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
    cua_hints h = CUA_HINTS_INIT;
    h.priority = prio;
    ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
    cua_future *f;
    ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
    int rc = cua_future_wait(f);
    if (prio == 0) {
      ck_assert_int_eq(rc, 0);
    } else {
      ck_assert_int_eq(rc, CUA_ERR_BAD_PLACEMENT);
      ck_assert_msg(strstr(cua_future_error(f),
                           prio == 1 ? "on node 1 (reserved 0), but this "
                                       "runtime has one node"
                                     : "on node 0 (reserved 7)") != NULL,
                    "message: %s", cua_future_error(f));
      ck_assert_ptr_nonnull(strstr(cua_future_error(f), "other-node"));
    }
    cua_future_destroy(f);
    cua_op_destroy(op);
  }
  cua_runtime_destroy(rt);
}
END_TEST

/* ------------------------------------------------------------------
 * Pull mode (policy ABI 2.1): "fifo-pull" keeps the ops it is pushed and
 * gives the oldest that may run there to each stream that asks; its mode
 * makes it misbehave in one way or another. */

enum { PULL_FIFO, PULL_HOARD, PULL_BAD_ID, PULL_ANY_DEVICE };
static int pull_mode;
static uint64_t pull_ids[4096];
static int pull_restrict[4096];
static size_t pull_n;
static int pulls, pushes, pull_submits, pull_completes;
static uint64_t pull_max_in_flight; /* at pop() */

static int fp_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  *state = (void *)host;
  for (int d = 0; d < host->device_count(host->core); d++) {
    int rc = host->ensure_streams(host->core, d, 2);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int fp_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  out->device = op->restrict_device >= 0 ? op->restrict_device : 0;
  out->stream = 0;
  return 0;
}

static int fp_push(void *state, const cua_op_info *op) {
  (void)state;
  if (op->name != NULL && strcmp(op->name, "refuse") == 0)
    return CUA_ERR_INTERNAL;
  ck_assert_uint_lt(pull_n, 4096);
  pull_ids[pull_n] = op->op_id;
  pull_restrict[pull_n] = op->restrict_device;
  pull_n++;
  pushes++;
  return 0;
}

static int fp_pop(void *state, cua_placement where, uint64_t *op_id) {
  const cua_policy_host *h = state;
  cua_stream_load l = {.size = sizeof l};
  ck_assert_int_eq(h->stream_load(h->core, where.device, where.stream, &l), 0);
  if (l.ops_in_flight > pull_max_in_flight)
    pull_max_in_flight = l.ops_in_flight;
  if (pull_mode == PULL_HOARD)
    return 0;
  if (pull_mode == PULL_BAD_ID) {
    *op_id = 987654321;
    return 1;
  }
  for (size_t i = 0; i < pull_n; i++) {
    if (pull_mode != PULL_ANY_DEVICE && pull_restrict[i] >= 0 &&
        pull_restrict[i] != where.device)
      continue;
    *op_id = pull_ids[i];
    memmove(&pull_ids[i], &pull_ids[i + 1],
            (pull_n - i - 1) * sizeof *pull_ids);
    memmove(&pull_restrict[i], &pull_restrict[i + 1],
            (pull_n - i - 1) * sizeof *pull_restrict);
    pull_n--;
    pulls++;
    return 1;
  }
  return 0;
}

static void fp_submitted(void *state, const cua_op_info *op,
                         cua_placement where) {
  (void)state;
  (void)op;
  (void)where;
  pull_submits++;
}

static void fp_completed(void *state, const cua_op_info *op,
                         cua_placement where, uint64_t ns) {
  (void)state;
  (void)op;
  (void)where;
  (void)ns;
  pull_completes++;
}

static const cua_policy_descriptor fifo_pull =
    CUA_POLICY_INIT(.name = "fifo-pull", .create = fp_create, .place = fp_place,
                    .push = fp_push, .pop = fp_pop, .submitted = fp_submitted,
                    .completed = fp_completed);

static cua_runtime *open_pull(int depth, const char *extra) {
  int rc = cua_policy_register(&fifo_pull);
  ck_assert(rc == 0 || rc == CUA_ERR_INVAL); /* registered already */
  pull_mode = PULL_FIFO;
  pull_n = 0;
  pulls = pushes = pull_submits = pull_completes = 0;
  pull_max_in_flight = 0;
  char cfg[1024];
  snprintf(cfg, sizeof cfg,
           "[runtime]\nbackend = %s\npolicy = fifo-pull\n"
           "pull_depth = %d\n%s",
           test_backend(), depth, extra ? extra : "");
  cua_runtime *rt = NULL;
  rc = open_text(&rt, cfg);
  if (rc == CUA_ERR_NO_DEVICE && !test_backend_on_cpu()) {
    printf("skipped: no device\n");
    exit(77);
  }
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  return rt;
}

static cua_op *named_spin(cua_runtime *rt, const char *name, uint64_t ns) {
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, ns, 1), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = name;
  ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
  return op;
}

/* Ops go to streams as they have room: no stream ever has pull_depth ops
 * in flight when it is asked, every op pushed is popped once, and the
 * data is right (a chain and a fan-in over the two streams). */
START_TEST(pull_mode_fills_streams_to_their_depth) {
  cua_runtime *rt = open_pull(2, NULL);
  cua_op *spins[24];
  for (int i = 0; i < 24; i++)
    spins[i] = named_spin(rt, "s", 100000);
  cua_op *z;
  ck_assert_int_eq(cua_op_zip(&z, spins, 24), 0);
  for (int i = 0; i < 24; i++)
    cua_op_destroy(spins[i]);
  ck_assert_int_eq(run_op(rt, z), 0);
  ck_assert_int_eq(pushes, 24);
  ck_assert_int_eq(pulls, 24);
  ck_assert_int_eq(pull_submits, 24);
  ck_assert_uint_le(pull_max_in_flight, 1);

  /* Data: a = 2; b = 1; b += 3a (then); c = 5; c += 1b: c = 12. */
  cua_buffer *a = buffer(rt), *b = buffer(rt), *c = buffer(rt);
  cua_op *fa, *fb, *fc, *ax1, *ax2, *t1, *t2, *zz;
  ck_assert_int_eq(cua_op_fill(&fa, a, 2), 0);
  ck_assert_int_eq(cua_op_fill(&fb, b, 1), 0);
  ck_assert_int_eq(cua_op_fill(&fc, c, 5), 0);
  ck_assert_int_eq(cua_op_axpy(&ax1, b, 3, a), 0);
  ck_assert_int_eq(cua_op_axpy(&ax2, c, 1, b), 0);
  cua_op *firsts[3] = {fa, fb, fc};
  ck_assert_int_eq(cua_op_zip(&zz, firsts, 3), 0);
  ck_assert_int_eq(cua_op_then(&t1, zz, ax1), 0);
  ck_assert_int_eq(cua_op_then(&t2, t1, ax2), 0);
  ck_assert_int_eq(run_op(rt, t2), 0);
  ck_assert(first_value(rt, c) == 12.0f);
  cua_op *ops[] = {fa, fb, fc, ax1, ax2, t1, zz};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(a);
  cua_buffer_destroy(b);
  cua_buffer_destroy(c);
  cua_runtime_destroy(rt);
  ck_assert_int_eq(pull_completes, pull_submits);
}
END_TEST

/* A policy that keeps its ops while every stream is idle would hang the
 * program: the core fails them, and the runtime goes on. */
START_TEST(a_pull_policy_that_keeps_its_ops_fails_them) {
  cua_runtime *rt = open_pull(2, NULL);
  pull_mode = PULL_HOARD;
  cua_op *op = named_spin(rt, "kept", 1000);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), CUA_ERR_POLICY);
  ck_assert_msg(strstr(cua_future_error(f),
                       "policy 'fifo-pull' (pull mode) kept 1 ready op and "
                       "gave none to any stream while every stream was "
                       "idle") != NULL,
                "%s", cua_future_error(f));
  cua_future_destroy(f);
  cua_op_destroy(op);
  pull_mode = PULL_FIFO;
  pull_n = 0;
  ck_assert_int_eq(run_op(rt, named_spin(rt, "after", 1000)), 0);

  /* An op id it does not hold: ignored (said once), then the same. */
  pull_mode = PULL_BAD_ID;
  op = named_spin(rt, "bad", 1000);
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), CUA_ERR_POLICY);
  cua_future_destroy(f);
  cua_op_destroy(op);

  /* push() refuses: the op fails, naming the policy and the op. */
  pull_mode = PULL_FIFO;
  pull_n = 0;
  op = named_spin(rt, "refuse", 1000);
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), CUA_ERR_POLICY);
  ck_assert_msg(strstr(cua_future_error(f),
                       "policy 'fifo-pull' failed to take op 'refuse' "
                       "(push()): CUA_ERR_INTERNAL") != NULL,
                "%s", cua_future_error(f));
  cua_future_destroy(f);
  cua_op_destroy(op);
  cua_runtime_destroy(rt);
}
END_TEST

/* pop() gives an op to a device it may not run on: it fails with
 * CUA_ERR_BAD_PLACEMENT, as a bad place() does. */
START_TEST(a_pulled_op_on_a_wrong_device_is_refused) {
  if (!test_backend_on_cpu())
    return; /* needs two devices */
  cua_runtime *rt = open_pull(1, two_devices_section());
  pull_mode = PULL_ANY_DEVICE;
  cua_buffer *b = NULL;
  ck_assert_int_eq(
      cua_buffer_create(&b, rt, 1, N * sizeof(float), CUA_BUFFER_LAZY), 0);
  cua_op *op; /* allocations run on their buffer's device */
  ck_assert_int_eq(cua_op_alloc(&op, b), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), CUA_ERR_BAD_PLACEMENT);
  ck_assert_msg(strstr(cua_future_error(f),
                       "policy 'fifo-pull' gave op 'alloc' to device 0 "
                       "stream 0 (pop()), but it must run on device 1") != NULL,
                "%s", cua_future_error(f));
  cua_future_destroy(f);
  cua_op_destroy(op);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

static int failing_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  (void)arg;
  return -1;
}

/* An op held by the policy whose producer fails meanwhile is failed with
 * it when pop() returns it: its future reports the failure, nothing
 * hangs. */
START_TEST(a_held_op_fails_with_its_producer) {
  cua_runtime *rt = open_pull(1, NULL);
  cua_buffer *b = buffer(rt);
  cua_access acc = {b, CUA_WRITE};
  cua_op *slow = named_spin(rt, "slow", 20000000), *bad, *use, *t1, *t2;
  ck_assert_int_eq(cua_op_func(&bad, rt, failing_fn, NULL, &acc, 1), 0);
  ck_assert_int_eq(cua_op_fill(&use, b, 3), 0);
  ck_assert_int_eq(cua_op_then(&t1, slow, bad), 0);
  ck_assert_int_eq(cua_op_then(&t2, t1, use), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, t2, NULL), 0);
  int rc = cua_future_wait(f);
  ck_assert_msg(rc != 0, "the chain succeeded");
  cua_future_destroy(f);
  cua_op *ops[] = {slow, bad, use, t1, t2};
  for (size_t i = 0; i < 5; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(b);
  /* Still usable. */
  ck_assert_int_eq(run_op(rt, named_spin(rt, "after", 1000)), 0);
  cua_runtime_destroy(rt);
}
END_TEST

/* Levels count the buffer hazards between a submission's ops: five
 * fills of one buffer, zipped (no edge among them in the DAG), run one
 * after the other, so their levels are 0 to 4, in place() and in
 * submission_begin()'s DAG, submitted and captured alike. */
#define LV_OPS 5
static _Atomic uint32_t lv_place[LV_OPS], lv_dag[LV_OPS];
static _Atomic uint64_t lv_first;

static int lv_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 2);
}
static int lv_place_fn(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  uint64_t k = op->op_id - atomic_load(&lv_first);
  if (k < LV_OPS)
    atomic_store(&lv_place[k], op->level);
  out->device = op->restrict_device >= 0 ? op->restrict_device : 0;
  out->stream = (int)(op->op_id % 2);
  return 0;
}
static void lv_begin(void *state, const cua_dag *dag) {
  (void)state;
  if (dag->nops == 0)
    return;
  atomic_store(&lv_first, dag->ops[0].op_id);
  for (size_t i = 0; i < dag->nops && i < LV_OPS; i++)
    atomic_store(&lv_dag[i], dag->ops[i].level);
}

START_TEST(levels_count_the_buffer_hazards_within_a_submission) {
  static const cua_policy_descriptor lv =
      CUA_POLICY_INIT(.name = "level-probe", .create = lv_create,
                      .place = lv_place_fn, .submission_begin = lv_begin);
  ck_assert_int_eq(cua_policy_register(&lv), 0);
  cua_runtime *rt = open_policy("level-probe", NULL);
  cua_buffer *b = buffer(rt);
  cua_op *fill[LV_OPS], *all;
  for (int i = 0; i < LV_OPS; i++)
    ck_assert_int_eq(cua_op_fill(&fill[i], b, (float)i), 0);
  ck_assert_int_eq(cua_op_zip(&all, fill, LV_OPS), 0);
  for (int pass = 0; pass < 3; pass++) { /* built, then from its plan */
    for (int i = 0; i < LV_OPS; i++)
      lv_place[i] = lv_dag[i] = 99;
    if (pass < 2) {
      ck_assert_int_eq(cua_submit_wait(rt, all, NULL, NULL), 0);
    } else {
      cua_graph *g = NULL;
      int rc = cua_graph_create(&g, rt, all, NULL);
      ck_assert_msg(rc == 0, "%s", cua_runtime_error(rt));
      cua_graph_destroy(g);
    }
    for (int i = 0; i < LV_OPS; i++) {
      ck_assert_msg(lv_place[i] == (uint32_t)i, "pass %d: op %d at level %u",
                    pass, i, lv_place[i]);
      ck_assert_msg(lv_dag[i] == (uint32_t)i, "pass %d: dag op %d at level %u",
                    pass, i, lv_dag[i]);
    }
  }
  cua_op_destroy(all);
  for (int i = 0; i < LV_OPS; i++)
    cua_op_destroy(fill[i]);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(pull_depth_is_checked) {
  cua_runtime *rt = NULL;
  ck_assert_err(NULL,
                open_text(&rt, "[runtime]\nbackend = host\npull_depth = 0\n"),
                CUA_ERR_CONFIG_OUT_OF_RANGE,
                "<text>:3: [runtime] pull_depth: 0 is out of range [1, 1024]");
  ck_assert_err(NULL,
                open_text(&rt, "[runtime]\nbackend = host\npull_depth = two\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "[runtime] pull_depth: 'two' is not an integer");
}
END_TEST

/* A fan-out after a then is placed as the fan-out it is: the first start
 * of the next part continues the op's stream (then_of), the others are
 * placed freely, so that round-robin does not queue them all on that one
 * stream (before, then(a, zip(b, c)) ran b and c one after the other on
 * a's stream). The same for two thens after one op. A chain still stays on
 * its stream, and so does each chain of a fan-out. */
static int host_nothing(void *arg, void **result) {
  (void)arg;
  *result = NULL;
  return 0;
}

START_TEST(a_fan_out_after_a_then_runs_on_several_streams) {
  cua_runtime *rt =
      open_policy("round-robin", "[policy.round-robin]\nstreams = 4\n");
  for (int form = 0; form < 2; form++) {
    int where[5] = {-1, -1, -1, -1, -1};
    cua_op *f[5];
    for (int i = 0; i < 5; i++)
      ck_assert_int_eq(
          cua_op_func(&f[i], rt, record_stream, &where[i], NULL, 0), 0);
    cua_op *root;
    if (form == 0) {
      /* then(then(a, zip(b, then(c, e))), d) */
      cua_op *ce, *bc, *abc;
      ck_assert_int_eq(cua_op_then(&ce, f[2], f[4]), 0);
      cua_op *parts[2] = {f[1], ce};
      ck_assert_int_eq(cua_op_zip(&bc, parts, 2), 0);
      ck_assert_int_eq(cua_op_then(&abc, f[0], bc), 0);
      ck_assert_int_eq(cua_op_then(&root, abc, f[3]), 0);
      cua_op_destroy(ce);
      cua_op_destroy(bc);
      cua_op_destroy(abc);
    } else {
      /* zip(then(a, b), then(a, then(c, e)), d) */
      cua_op *ab, *ce, *ace;
      ck_assert_int_eq(cua_op_then(&ab, f[0], f[1]), 0);
      ck_assert_int_eq(cua_op_then(&ce, f[2], f[4]), 0);
      ck_assert_int_eq(cua_op_then(&ace, f[0], ce), 0);
      cua_op *parts[3] = {ab, ace, f[3]};
      ck_assert_int_eq(cua_op_zip(&root, parts, 3), 0);
      cua_op_destroy(ab);
      cua_op_destroy(ce);
      cua_op_destroy(ace);
    }
    ck_assert_int_eq(cua_submit_wait(rt, root, NULL, NULL), 0);
    ck_assert_msg(where[1] == where[0], "form %d: b ran on %d, a on %d", form,
                  where[1], where[0]);
    ck_assert_msg(where[2] != where[0],
                  "form %d: c ran on a's stream %d, after b: the fan-out was "
                  "kept on one stream",
                  form, where[0]);
    ck_assert_msg(where[4] == where[2], "form %d: e ran on %d, c on %d", form,
                  where[4], where[2]);
    for (int i = 0; i < 5; i++)
      cua_op_destroy(f[i]);
    cua_op_destroy(root);
  }
  /* A host step among the starts claims nothing (no policy places it):
   * then(a, zip(h, b)) keeps b on a's stream. */
  int where[2] = {-1, -1};
  cua_op *a, *b, *h, *hb, *root;
  ck_assert_int_eq(cua_op_func(&a, rt, record_stream, &where[0], NULL, 0), 0);
  ck_assert_int_eq(cua_op_func(&b, rt, record_stream, &where[1], NULL, 0), 0);
  ck_assert_int_eq(cua_op_host(&h, rt, host_nothing, NULL), 0);
  cua_op *parts[2] = {h, b};
  ck_assert_int_eq(cua_op_zip(&hb, parts, 2), 0);
  ck_assert_int_eq(cua_op_then(&root, a, hb), 0);
  ck_assert_int_eq(cua_submit_wait(rt, root, NULL, NULL), 0);
  ck_assert_msg(where[1] == where[0], "b ran on %d, a on %d", where[1],
                where[0]);
  cua_op_destroy(a);
  cua_op_destroy(b);
  cua_op_destroy(h);
  cua_op_destroy(hb);
  cua_op_destroy(root);
  cua_runtime_destroy(rt);
}
END_TEST

/* A barrier waits for all work submitted before it, work not yet on a
 * stream too: an op that waits for a slow host step, or that a pull-mode
 * policy still holds. Before, a barrier was ordered only after what the
 * streams had been given, and its host step ran before the earlier op. */
static atomic_int bar_finished;
static int bar_slow_host(void *arg, void **result) {
  (void)arg;
  usleep(30000);
  *result = NULL;
  return 0;
}
static int bar_count(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  (void)arg;
  atomic_fetch_add(&bar_finished, 1);
  return 0;
}
static int bar_check(void *arg, void **result) {
  *(int *)arg = atomic_load(&bar_finished);
  *result = NULL;
  return 0;
}

START_TEST(a_barrier_waits_for_work_not_yet_on_a_stream) {
  const char *policies[] = {"round-robin", "single-stream", "least-loaded",
                            "work-stealing"};
  for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
    char text[256];
    snprintf(text, sizeof text, "[runtime]\nbackend = host\npolicy = %s\n",
             policies[k]);
    cua_runtime *rt = NULL;
    ck_assert_int_eq(open_text(&rt, text), 0);
    atomic_store(&bar_finished, 0);
    int seen = -1;
    cua_op *h, *f, *a, *b, *c, *bc;
    ck_assert_int_eq(cua_op_host(&h, rt, bar_slow_host, NULL), 0);
    ck_assert_int_eq(cua_op_func(&f, rt, bar_count, NULL, NULL, 0), 0);
    ck_assert_int_eq(cua_op_then(&a, h, f), 0);
    ck_assert_int_eq(cua_op_barrier(&b, rt), 0);
    ck_assert_int_eq(cua_op_host(&c, rt, bar_check, &seen), 0);
    ck_assert_int_eq(cua_op_then(&bc, b, c), 0);
    cua_future *fa, *fb;
    ck_assert_int_eq(cua_submit(&fa, rt, a, NULL), 0);
    ck_assert_int_eq(cua_submit(&fb, rt, bc, NULL), 0);
    ck_assert_int_eq(cua_future_wait(fb), 0);
    ck_assert_msg(seen == 1,
                  "%s: the barrier's host step ran with %d of 1 earlier "
                  "op done",
                  policies[k], seen);
    ck_assert_int_eq(cua_future_wait(fa), 0);
    cua_future_destroy(fa);
    cua_future_destroy(fb);
    cua_op *ops[] = {h, f, a, b, c, bc};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
      cua_op_destroy(ops[i]);
    cua_runtime_destroy(rt);
  }
}
END_TEST

int main(void) {
  require_backend();
  Suite *s = suite_create("sched");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, later_consumer_waits_for_its_producer_only);
  tcase_add_test(tc, stream_function_blocks_no_other_submission);
  tcase_add_test(tc, stream_function_may_submit_but_not_wait);
  tcase_add_test(tc, waits_on_the_completion_thread_are_refused);
  tcase_add_test(tc, callbacks_of_a_batch_run_in_completion_order);
  tcase_add_test(tc, destroy_ends_callbacks_that_submit_for_ever);
  tcase_add_test(tc, a_stream_function_submits_inside_a_relayed_round);
  tcase_add_test(tc, relayed_rounds_beside_another_submitting_thread);
  tcase_add_test(tc, a_large_dag_starts_before_it_is_all_decided);
  tcase_add_test(tc, then_placing_an_op_after_itself_is_a_cycle);
  tcase_add_test(tc, a_cycle_through_a_buffer_is_refused);
  tcase_add_test(tc, what_follows_a_shared_op_run_before_follows_the_chain);
  tcase_add_test(tc, submit_options_without_size_are_refused);
  tcase_add_test(tc, context_accessors_take_null);
  tcase_add_test(tc, place_codes_outside_the_list_are_named);
  tcase_add_test(tc, policy_handle_outlives_its_runtime);
  tcase_add_test(tc, idle_runtime_uses_no_cpu);
  tcase_add_test(tc, native_streams_are_ordered_both_ways);
  tcase_add_test(tc, a_runtime_waited_for_natively_may_be_destroyed);
  tcase_add_test(tc, native_wait_for_pending_host_step_is_again);
  tcase_add_test(tc, levels_count_then_edges);
  tcase_add_test(tc, a_fan_out_after_a_then_runs_on_several_streams);
  tcase_add_test(tc, a_barrier_waits_for_work_not_yet_on_a_stream);
  tcase_add_test(tc, completed_is_told_name_and_tag);
  tcase_add_test(tc, debug_lines_are_not_formatted_without_debug);
  tcase_add_test(tc, place_order_is_breadth_first);
  tcase_add_test(tc, place_order_within_a_level_is_creation_order);
  tcase_add_test(tc, policy_sees_inputs_successors_and_the_dag);
  tcase_add_test(tc, submission_end_comes_after_ops_behind_a_host_step);
  tcase_add_test(tc, pull_mode_fills_streams_to_their_depth);
  tcase_add_test(tc, a_pull_policy_that_keeps_its_ops_fails_them);
  tcase_add_test(tc, a_pulled_op_on_a_wrong_device_is_refused);
  tcase_add_test(tc, a_held_op_fails_with_its_producer);
  tcase_add_test(tc, pull_depth_is_checked);
  tcase_add_test(tc, levels_count_the_buffer_hazards_within_a_submission);
  tcase_add_test(tc, a_placement_on_another_node_is_refused);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
