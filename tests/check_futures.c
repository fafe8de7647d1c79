/*
 * tests/check_futures.c: waiting, polling, callbacks, file descriptors,
 * early release, and many threads submitting at once.
 */
#include "helpers.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static cua_runtime *rt;

static void setup(void) {
  rt = open_policy("round-robin", NULL);
}
static void teardown(void) {
  cua_runtime_destroy(rt);
}

static cua_op *spin_op(uint64_t ns) {
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, ns, 1), 0);
  return op;
}

START_TEST(wait_timeout_and_poll) {
  cua_op *op = spin_op(200000000);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_poll(f), CUA_ERR_AGAIN);
  void *res;
  ck_assert_int_eq(cua_future_result(f, &res), CUA_ERR_AGAIN);
  ck_assert_int_eq(cua_future_wait_timeout(f, 10000000), CUA_ERR_TIMEDOUT);
  ck_assert_int_eq(cua_future_wait_timeout(f, 5000000000ull), 0);
  ck_assert_int_eq(cua_future_poll(f), 0);
  ck_assert_str_eq(cua_future_error(f), "");
  cua_future_destroy(f);
  cua_op_destroy(op);
}
END_TEST

static atomic_int cb_calls, cb_status;
static void on_done(cua_future *f, int status, void *arg) {
  (void)f;
  atomic_fetch_add(&cb_calls, 1);
  atomic_store(&cb_status, status);
  *(int *)arg = 1;
}

START_TEST(callback_fires_once_with_the_status) {
  atomic_store(&cb_calls, 0);
  cua_op *op = spin_op(20000000);
  cua_future *f;
  int flag = 0;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_on_complete(f, on_done, &flag), 0);
  ck_assert_int_eq(cua_future_on_complete(f, on_done, &flag), CUA_ERR_BUSY);
  ck_assert_int_eq(cua_future_wait(f), 0);
  for (int i = 0; i < 1000 && atomic_load(&cb_calls) == 0; i++)
    usleep(1000);
  ck_assert_int_eq(atomic_load(&cb_calls), 1);
  ck_assert_int_eq(atomic_load(&cb_status), 0);
  cua_future_destroy(f);
  /* registered after completion: called at once, on this thread */
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  flag = 0;
  ck_assert_int_eq(cua_future_on_complete(f, on_done, &flag), 0);
  ck_assert_int_eq(flag, 1);
  ck_assert_int_eq(atomic_load(&cb_calls), 2);
  cua_future_destroy(f);
  cua_op_destroy(op);
}
END_TEST

START_TEST(fd_becomes_readable_on_completion) {
  cua_op *op = spin_op(30000000);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  int fd = cua_future_fd(f);
  ck_assert_int_ge(fd, 0);
  struct pollfd p = {fd, POLLIN, 0};
  ck_assert_int_eq(poll(&p, 1, 0), 0); /* not yet */
  ck_assert_int_eq(poll(&p, 1, 5000), 1);
  ck_assert(p.revents & POLLIN);
  ck_assert_int_eq(cua_future_poll(f), 0);
  ck_assert_int_eq(cua_future_fd(f), fd); /* the same, owned by f */
  cua_future_destroy(f);
  /* asked for after completion: readable at once */
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  p.fd = cua_future_fd(f);
  ck_assert_int_eq(poll(&p, 1, 0), 1);
  cua_future_destroy(f);
  cua_op_destroy(op);
}
END_TEST

START_TEST(fd_out_of_descriptors_is_busy_and_a_later_call_succeeds) {
  cua_op *op = spin_op(0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  /* The lowest free descriptor becomes the limit: none is left below. */
  struct rlimit old, low;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
  int lowest = dup(0);
  ck_assert_int_ge(lowest, 0);
  close(lowest);
  low = old;
  low.rlim_cur = (rlim_t)lowest;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
  int rc = cua_future_fd(f);
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
  ck_assert_err(NULL, rc, CUA_ERR_BUSY,
                "cua_future_fd: eventfd: Too many open files (no file "
                "descriptor left; a later call may succeed once some are "
                "closed)");
  int fd = cua_future_fd(f);
  ck_assert_int_ge(fd, 0);
  struct pollfd p = {fd, POLLIN, 0};
  ck_assert_int_eq(poll(&p, 1, 0), 1); /* complete: readable at once */
  cua_future_destroy(f);
  cua_op_destroy(op);
}
END_TEST

START_TEST(early_release_of_futures_ops_and_buffers) {
  /* Everything released right after submission: the work still runs to
   * the end, on memory that stays alive until it has. */
  float out[1024];
  memset(out, 0, sizeof out);
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, sizeof out, 0), 0);
  cua_op *s = spin_op(20000000), *f, *rd, *t1, *t2;
  ck_assert_int_eq(cua_op_fill(&f, b, 6.0f), 0);
  ck_assert_int_eq(cua_op_memcpy_d2h(&rd, out, b, 0, sizeof out), 0);
  ck_assert_int_eq(cua_op_then(&t1, s, f), 0);
  ck_assert_int_eq(cua_op_then(&t2, t1, rd), 0);
  cua_future *fut;
  ck_assert_int_eq(cua_submit(&fut, rt, t2, NULL), 0);
  cua_op_destroy(s);
  cua_op_destroy(f);
  cua_op_destroy(rd);
  cua_op_destroy(t1);
  cua_op_destroy(t2);
  cua_buffer_destroy(b);
  cua_future_destroy(fut);
  ck_assert_int_eq(cua_runtime_synchronize(rt), 0);
  for (int i = 0; i < 1024; i++)
    ck_assert_float_eq(out[i], 6.0f);
}
END_TEST

START_TEST(destroying_the_runtime_waits_for_work) {
  cua_runtime *r2 = open_policy("round-robin", NULL);
  float out[16] = {0};
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, r2, 0, sizeof out, 0), 0);
  cua_op *s, *f, *rd, *t1, *t2;
  ck_assert_int_eq(cua_op_spin(&s, r2, 30000000, 1), 0);
  ck_assert_int_eq(cua_op_fill(&f, b, 2.0f), 0);
  ck_assert_int_eq(cua_op_memcpy_d2h(&rd, out, b, 0, sizeof out), 0);
  ck_assert_int_eq(cua_op_then(&t1, s, f), 0);
  ck_assert_int_eq(cua_op_then(&t2, t1, rd), 0);
  cua_future *fut;
  ck_assert_int_eq(cua_submit(&fut, r2, t2, NULL), 0);
  cua_runtime_destroy(r2);
  ck_assert_float_eq(out[15], 2.0f);
  /* handles outlive the runtime: they can still be queried and freed */
  ck_assert_int_eq(cua_future_poll(fut), 0);
  cua_future_destroy(fut);
  cua_op_destroy(s);
  cua_op_destroy(f);
  cua_op_destroy(rd);
  cua_op_destroy(t1);
  cua_op_destroy(t2);
  ck_assert_ptr_null(cua_buffer_ptr(b));
  cua_buffer_destroy(b);
}
END_TEST

START_TEST(submit_errors_leave_no_future) {
  cua_future *f = (cua_future *)0x1;
  ck_assert_err(rt, cua_submit(&f, rt, NULL, NULL), CUA_ERR_INVAL, "NULL");
  ck_assert_ptr_null(f);
  cua_runtime *r2 = open_policy("round-robin", NULL);
  cua_op *op;
  ck_assert_int_eq(cua_op_barrier(&op, r2), 0);
  ck_assert_err(rt, cua_submit(&f, rt, op, NULL), CUA_ERR_INVAL,
                "another runtime");
  cua_op_destroy(op);
  cua_runtime_destroy(r2);
}
END_TEST

/* 8 threads submit 100k ops in all, over their own buffers and one shared
 * read-only buffer, with cross-thread ordering through it. */
#define THREADS 8
#define OPS_PER_THREAD 12500
static cua_buffer *shared_src;

static void *submitter(void *arg) {
  int id = (int)(intptr_t)arg;
  cua_buffer *mine;
  if (cua_buffer_create(&mine, rt, 0, 256 * sizeof(float), 0))
    return (void *)1;
  cua_op *fill;
  cua_op_fill(&fill, mine, 0.0f);
  cua_submit_wait(rt, fill, NULL, NULL);
  cua_op_destroy(fill);
  int ops = 1;
  cua_future *pending[16];
  int np = 0;
  while (ops < OPS_PER_THREAD) {
    /* a small DAG: y += x (shared), then zip with a host-free fill */
    cua_op *ax, *ax2, *t;
    cua_op_axpy(&ax, mine, 1.0f, shared_src);
    cua_op_axpy(&ax2, mine, 1.0f, shared_src);
    cua_op_then(&t, ax, ax2);
    cua_future *f;
    if (cua_submit(&f, rt, t, NULL) != 0)
      return (void *)2;
    ops += 2;
    cua_op_destroy(ax);
    cua_op_destroy(ax2);
    cua_op_destroy(t);
    pending[np++] = f;
    if (np == 16) {
      for (int i = 0; i < np; i++) {
        if (cua_future_wait(pending[i]) != 0)
          return (void *)3;
        cua_future_destroy(pending[i]);
      }
      np = 0;
    }
  }
  for (int i = 0; i < np; i++) {
    if (cua_future_wait(pending[i]) != 0)
      return (void *)3;
    cua_future_destroy(pending[i]);
  }
  float h[256];
  cua_op *rd;
  cua_op_memcpy_d2h(&rd, h, mine, 0, sizeof h);
  cua_submit_wait(rt, rd, NULL, NULL);
  cua_op_destroy(rd);
  cua_buffer_destroy(mine);
  /* every axpy added 1.0 */
  float want = (float)(ops - 1);
  for (int i = 0; i < 256; i++)
    if (h[i] != want) {
      fprintf(stderr, "thread %d: %g, expected %g\n", id, h[i], want);
      return (void *)4;
    }
  return NULL;
}

START_TEST(eight_threads_submit_100k_ops) {
  ck_assert_int_eq(cua_buffer_create(&shared_src, rt, 0, 256 * 4, 0), 0);
  cua_op *f;
  ck_assert_int_eq(cua_op_fill(&f, shared_src, 1.0f), 0);
  ck_assert_int_eq(run_op(rt, f), 0);
  ck_assert_int_eq(cua_buffer_share(shared_src), 0);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    pthread_create(&th[i], NULL, submitter, (void *)(intptr_t)i);
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(th[i], &r);
    ck_assert_msg(r == NULL, "thread %d failed (%d)", i, (int)(intptr_t)r);
  }
  cua_stats st = {.size = sizeof st};
  cua_runtime_stats(rt, &st);
  ck_assert_uint_ge(st.ops, THREADS * (OPS_PER_THREAD - 1));
  cua_buffer_destroy(shared_src);
}
END_TEST

/* The callback against cua_future_destroy(): a thread that waits for a
 * future and destroys it at once must not pull the handle from under a
 * callback still running on the completion thread. destroy() waits for
 * it, so the callback can still use its future. */
static atomic_int destroyed, cb_saw_destroyed, cb_result_rc, cb_finished;
static void slow_cb(cua_future *f, int status, void *arg) {
  (void)status;
  (void)arg;
  usleep(30000);
  void *r;
  atomic_store(&cb_result_rc, f ? cua_future_result(f, &r) : -999);
  atomic_store(&cb_saw_destroyed, atomic_load(&destroyed));
  atomic_store(&cb_finished, 1);
}

static void wait_flag(atomic_int *flag) {
  for (int i = 0; i < 10000 && !atomic_load(flag); i++)
    usleep(1000);
  ck_assert_msg(atomic_load(flag), "the callback did not run");
}

START_TEST(destroy_waits_for_a_running_callback) {
  for (int k = 0; k < 5; k++) {
    atomic_store(&destroyed, 0);
    atomic_store(&cb_finished, 0);
    cua_op *op = spin_op(1000000);
    cua_future *f;
    ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
    ck_assert_int_eq(cua_future_on_complete(f, slow_cb, NULL), 0);
    ck_assert_int_eq(cua_future_wait(f), 0);
    cua_future_destroy(f);
    atomic_store(&destroyed, 1);
    wait_flag(&cb_finished);
    ck_assert_msg(atomic_load(&cb_saw_destroyed) == 0,
                  "cua_future_destroy() returned while the callback ran");
    ck_assert_int_eq(atomic_load(&cb_result_rc), 0);
    cua_op_destroy(op);
  }
}
END_TEST

/* A callback may destroy its own future (destroy does not wait for
 * itself). */
static atomic_int self_destroyed;
static void destroy_cb(cua_future *f, int status, void *arg) {
  (void)status;
  (void)arg;
  cua_future_destroy(f);
  atomic_store(&self_destroyed, 1);
}

START_TEST(a_callback_may_destroy_its_future) {
  atomic_store(&self_destroyed, 0);
  cua_op *op = spin_op(5000000);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_on_complete(f, destroy_cb, NULL), 0);
  wait_flag(&self_destroyed);
  /* Also when the future is complete already (the callback runs here). */
  atomic_store(&self_destroyed, 0);
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_int_eq(cua_future_on_complete(f, destroy_cb, NULL), 0);
  ck_assert_int_eq(atomic_load(&self_destroyed), 1);
  cua_op_destroy(op);
}
END_TEST

/* A future destroyed before it completes still fires its callback, with
 * no handle. */
static atomic_int null_cb_calls, null_cb_got_null;
static void null_cb(cua_future *f, int status, void *arg) {
  (void)status;
  (void)arg;
  atomic_store(&null_cb_got_null, f == NULL);
  atomic_store(&null_cb_calls, 1);
}

START_TEST(callback_of_a_destroyed_future_gets_no_handle) {
  atomic_store(&null_cb_calls, 0);
  cua_op *op = spin_op(20000000);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_on_complete(f, null_cb, NULL), 0);
  cua_future_destroy(f);
  wait_flag(&null_cb_calls);
  ck_assert_int_eq(atomic_load(&null_cb_got_null), 1);
  cua_op_destroy(op);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("futures");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, wait_timeout_and_poll);
  tcase_add_test(tc, callback_fires_once_with_the_status);
  tcase_add_test(tc, fd_becomes_readable_on_completion);
  tcase_add_test(tc, fd_out_of_descriptors_is_busy_and_a_later_call_succeeds);
  tcase_add_test(tc, early_release_of_futures_ops_and_buffers);
  tcase_add_test(tc, destroying_the_runtime_waits_for_work);
  tcase_add_test(tc, submit_errors_leave_no_future);
  tcase_add_test(tc, eight_threads_submit_100k_ops);
  tcase_add_test(tc, destroy_waits_for_a_running_callback);
  tcase_add_test(tc, a_callback_may_destroy_its_future);
  tcase_add_test(tc, callback_of_a_destroyed_future_gets_no_handle);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  require_backend();
  return run_suite(suite());
}
