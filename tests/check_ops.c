/*
 * tests/check_ops.c: each op kind and combinator does what cuasync.h says,
 * on the backend named by $CUASYNC_TEST_BACKEND (host by default).
 */
#include "helpers.h"

#include <stdatomic.h>
#include <time.h>

#define N 256

static cua_runtime *rt;
static const char *policy = "round-robin";

static void setup(void) {
  rt = open_policy(policy, NULL);
}
static void teardown(void) {
  cua_runtime_destroy(rt);
}

static cua_buffer *buf(size_t n) {
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, n * sizeof(float), 0), 0);
  return b;
}

static void expect_all(cua_buffer *b, float want) {
  size_t n = cua_buffer_size(b) / sizeof(float);
  float *h = malloc(n * sizeof *h);
  read_back(rt, b, h);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(h[i] == want, "element %zu is %g, expected %g", i, h[i],
                  want);
  free(h);
}

START_TEST(builtin_kernels_fill_copy_axpy) {
  cua_buffer *x = buf(N), *y = buf(N);
  cua_op *f1, *f2, *ax, *s1, *s2, *cp;
  ck_assert_int_eq(cua_op_fill(&f1, x, 2.0f), 0);
  ck_assert_int_eq(cua_op_fill(&f2, y, 1.0f), 0);
  ck_assert_int_eq(cua_op_axpy(&ax, y, 3.0f, x), 0);
  ck_assert_int_eq(cua_op_then(&s1, f1, f2), 0);
  ck_assert_int_eq(cua_op_then(&s2, s1, ax), 0);
  ck_assert_int_eq(run_op(rt, s2), 0);
  expect_all(y, 7.0f);
  ck_assert_int_eq(cua_op_copy(&cp, x, y), 0);
  ck_assert_int_eq(run_op(rt, cp), 0);
  expect_all(x, 7.0f);
  cua_op_destroy(f1);
  cua_op_destroy(f2);
  cua_op_destroy(ax);
  cua_op_destroy(s1);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
}
END_TEST

START_TEST(memcpy_and_memset_in_every_direction) {
  cua_buffer *a = buf(N), *b = buf(N);
  float in[N], out[N];
  for (int i = 0; i < N; i++)
    in[i] = (float)i;
  cua_op *h2d, *d2d, *ms;
  ck_assert_int_eq(cua_op_memcpy_h2d(&h2d, a, 0, in, sizeof in), 0);
  ck_assert_int_eq(run_op(rt, h2d), 0);
  ck_assert_int_eq(cua_op_memcpy_d2d(&d2d, b, 0, a, 0, sizeof in), 0);
  ck_assert_int_eq(run_op(rt, d2d), 0);
  read_back(rt, b, out);
  for (int i = 0; i < N; i++)
    ck_assert_float_eq(out[i], (float)i);
  ck_assert_int_eq(cua_op_memset(&ms, b, 4, 0, 8), 0);
  ck_assert_int_eq(run_op(rt, ms), 0);
  read_back(rt, b, out);
  ck_assert_float_eq(out[0], 0.0f);
  ck_assert_float_eq(out[1], 0.0f);
  ck_assert_float_eq(out[2], 0.0f);
  ck_assert_float_eq(out[3], 3.0f);
  /* Ranges are checked when the op is built. */
  ck_assert_err(rt, cua_op_memset(&ms, b, N * 4, 0, 1), CUA_ERR_SIZE,
                "outside the buffer");
  ck_assert_err(rt, cua_op_memcpy_d2d(&d2d, b, 0, a, 8, sizeof in),
                CUA_ERR_SIZE, "source");
  cua_buffer_destroy(a);
  cua_buffer_destroy(b);
}
END_TEST

static atomic_int runs;
static int count_run(void *arg, void **result) {
  atomic_fetch_add(&runs, 1);
  *result = arg;
  return 0;
}

START_TEST(shared_runs_exactly_once_across_consumers_and_submissions) {
  atomic_store(&runs, 0);
  cua_op *h, *sh, *z, *b, *m;
  ck_assert_int_eq(cua_op_host(&h, rt, count_run, (void *)0x42), 0);
  ck_assert_int_eq(cua_op_shared(&sh, h), 0);
  ck_assert_err(rt, cua_op_map(&m, sh, NULL, NULL), CUA_ERR_INVAL, "NULL");
  /* two consumers in one DAG */
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){sh, sh}, 2), 0);
  ck_assert_int_eq(run_op(rt, z), 0);
  ck_assert_int_eq(atomic_load(&runs), 1);
  /* later submissions reuse that run */
  for (int i = 0; i < 3; i++) {
    void *res = NULL;
    ck_assert_int_eq(cua_submit_wait(rt, sh, NULL, &res), 0);
    ck_assert_ptr_eq(res, (void *)0x42);
  }
  ck_assert_int_eq(cua_op_zip(&b, (cua_op *[]){sh, h}, 2), 0);
  ck_assert_int_eq(run_op(rt, b), 0);
  /* h on its own is not shared: it ran once more */
  ck_assert_int_eq(atomic_load(&runs), 2);
  cua_op_destroy(sh);
  cua_op_destroy(h);
}
END_TEST

static int plus_one(void *in, void *arg, void **out) {
  (void)arg;
  *out = (void *)((uintptr_t)in + 1);
  return 0;
}

START_TEST(zip_unzip_and_map) {
  atomic_store(&runs, 0);
  cua_op *a, *b, *z, *u0, *u1, *m;
  ck_assert_int_eq(cua_op_host(&a, rt, count_run, (void *)10), 0);
  ck_assert_int_eq(cua_op_host(&b, rt, count_run, (void *)20), 0);
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){a, b}, 2), 0);
  void *res = NULL;
  cua_future *fz;
  ck_assert_int_eq(cua_submit(&fz, rt, z, NULL), 0);
  ck_assert_int_eq(cua_future_wait(fz), 0);
  ck_assert_int_eq(cua_future_result(fz, &res), 0);
  void **pair = res; /* valid while the future lives */
  ck_assert_ptr_eq(pair[0], (void *)10);
  ck_assert_ptr_eq(pair[1], (void *)20);
  cua_future_destroy(fz);
  ck_assert_int_eq(atomic_load(&runs), 2);
  /* unzip shares the zip: both halves, separately submitted, one run */
  ck_assert_int_eq(cua_op_unzip(&u0, z, 0), 0);
  ck_assert_int_eq(cua_op_unzip(&u1, u0, 1) == CUA_ERR_INVAL ? 0 : 1, 0);
  ck_assert_int_eq(cua_op_unzip(&u1, z, 1), 0);
  ck_assert_err(rt, cua_op_unzip(&m, z, 2), CUA_ERR_INVAL, "out of range");
  atomic_store(&runs, 0);
  ck_assert_int_eq(cua_submit_wait(rt, u1, NULL, &res), 0);
  ck_assert_ptr_eq(res, (void *)20);
  ck_assert_int_eq(cua_op_map(&m, u0, plus_one, NULL), 0);
  ck_assert_int_eq(cua_submit_wait(rt, m, NULL, &res), 0);
  ck_assert_ptr_eq(res, (void *)11);
  ck_assert_int_eq(atomic_load(&runs), 2); /* a and b once each */
  cua_op_destroy(m);
  cua_op_destroy(u0);
  cua_op_destroy(u1);
  cua_op_destroy(z);
  cua_op_destroy(a);
  cua_op_destroy(b);
}
END_TEST

/* The zip runs once for all its unzips, also those made after every
 * earlier one is gone: the shared wrapper goes with the last unzip, the
 * run stays with the zip. Unzips dropped before any submission leave no
 * run behind: the zip runs when an unzip is first submitted. */
START_TEST(unzip_after_the_last_unzip_reuses_the_run) {
  atomic_store(&runs, 0);
  cua_op *a, *b, *z, *u;
  ck_assert_int_eq(cua_op_host(&a, rt, count_run, (void *)10), 0);
  ck_assert_int_eq(cua_op_host(&b, rt, count_run, (void *)20), 0);
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){a, b}, 2), 0);
  ck_assert_int_eq(cua_op_unzip(&u, z, 1), 0);
  cua_op_destroy(u);
  ck_assert_int_eq(atomic_load(&runs), 0);
  for (int k = 0; k < 4; k++) {
    void *res = NULL;
    ck_assert_int_eq(cua_op_unzip(&u, z, (size_t)k % 2), 0);
    ck_assert_int_eq(cua_submit_wait(rt, u, NULL, &res), 0);
    ck_assert_ptr_eq(res, (void *)(uintptr_t)(k % 2 ? 20 : 10));
    cua_op_destroy(u);
    int n = atomic_load(&runs);
    ck_assert_msg(n == 2, "%d host steps ran: the zip ran again", n);
  }
  cua_op_destroy(z);
  cua_op_destroy(a);
  cua_op_destroy(b);
}
END_TEST

START_TEST(diamond_runs_its_root_once_per_submission) {
  cua_buffer *x = buf(N), *y = buf(N), *w = buf(N);
  cua_op *root, *l, *r, *j, *d, *dag1, *dag2;
  ck_assert_int_eq(cua_op_fill(&root, x, 1.0f), 0);
  ck_assert_int_eq(cua_op_axpy(&l, y, 2.0f, x), 0); /* y += 2x */
  ck_assert_int_eq(cua_op_axpy(&r, w, 3.0f, x), 0); /* w += 3x */
  ck_assert_int_eq(cua_op_then(&dag1, root, l), 0);
  ck_assert_int_eq(cua_op_then(&dag2, root, r), 0);
  ck_assert_int_eq(cua_op_zip(&j, (cua_op *[]){dag1, dag2}, 2), 0);
  cua_op *zy, *zw, *init;
  ck_assert_int_eq(cua_op_fill(&zy, y, 0.0f), 0);
  ck_assert_int_eq(cua_op_fill(&zw, w, 0.0f), 0);
  ck_assert_int_eq(cua_op_zip(&init, (cua_op *[]){zy, zw}, 2), 0);
  ck_assert_int_eq(cua_op_then(&d, init, j), 0);
  ck_assert_int_eq(run_op(rt, d), 0);
  expect_all(y, 2.0f);
  expect_all(w, 3.0f);
  cua_op *ops[] = {root, l, r, j, dag1, dag2, zy, zw, init};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_buffer_destroy(w);
}
END_TEST

START_TEST(lazy_buffers_alloc_and_free) {
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, N * 4, CUA_BUFFER_LAZY), 0);
  ck_assert_ptr_null(cua_buffer_ptr(b));
  cua_op *f, *fr, *again;
  ck_assert_int_eq(cua_op_fill(&f, b, 5.0f), 0); /* allocates on first use */
  ck_assert_int_eq(run_op(rt, f), 0);
  ck_assert_ptr_nonnull(cua_buffer_ptr(b));
  expect_all(b, 5.0f);
  ck_assert_int_eq(cua_op_free(&fr, b), 0);
  ck_assert_int_eq(run_op(rt, fr), 0);
  ck_assert_int_eq(cua_op_fill(&again, b, 1.0f), 0);
  ck_assert_err(rt, run_op(rt, again), CUA_ERR_FREED, "freed");
  cua_buffer *eager;
  ck_assert_int_eq(cua_buffer_create(&eager, rt, 0, 64, 0), 0);
  ck_assert_err(rt, cua_op_alloc(&f, eager), CUA_ERR_INVAL, "LAZY");
  cua_buffer *none;
  ck_assert_err(rt, cua_buffer_create(&none, rt, 7, 64, 0), CUA_ERR_BAD_DEVICE,
                "no device 7");
  cua_buffer_destroy(eager);
  cua_buffer_destroy(b);
}
END_TEST

START_TEST(barrier_orders_after_everything_before) {
  cua_buffer *x = buf(N);
  cua_op *spin, *fill, *bar, *after, *rd;
  ck_assert_int_eq(cua_op_spin(&spin, rt, 200000000, 1), 0);
  ck_assert_int_eq(cua_op_fill(&fill, x, 9.0f), 0);
  cua_future *f1;
  ck_assert_int_eq(cua_op_then(&rd, spin, fill), 0);
  ck_assert_int_eq(cua_submit(&f1, rt, rd, NULL), 0);
  ck_assert_int_eq(cua_op_barrier(&bar, rt), 0);
  ck_assert_int_eq(cua_submit_wait(rt, bar, NULL, NULL), 0);
  /* The barrier completed, so everything before it has; f1's future
   * itself completes once the completion thread sees its stream's mark,
   * which may come a moment after the barrier's stream's (the 200 ms spin
   * would still be running if the barrier had not waited for it). */
  ck_assert_int_eq(cua_future_wait_timeout(f1, 100000000), 0);
  cua_future_destroy(f1);
  (void)after;
  cua_op_destroy(spin);
  cua_op_destroy(fill);
  cua_op_destroy(bar);
  cua_op_destroy(rd);
  cua_buffer_destroy(x);
}
END_TEST

/* cua_op_get_hints() gives what the constructor set and what set_hints
 * set since, so one hint can change without losing the others. */
START_TEST(hints_read_back_and_change_one) {
  cua_op *s;
  ck_assert_int_eq(cua_op_spin(&s, rt, 5000, 1), 0);
  cua_hints h = CUA_HINTS_INIT;
  ck_assert_int_eq(cua_op_get_hints(s, &h), 0);
  ck_assert_uint_eq(h.cost_ns, 5000); /* the spin's own estimate */
  ck_assert_ptr_null(h.name);
  ck_assert_int_eq(h.device, -1);
  h.name = "spin-a";
  h.priority = 3;
  ck_assert_int_eq(cua_op_set_hints(s, &h), 0);
  cua_hints back = CUA_HINTS_INIT;
  ck_assert_int_eq(cua_op_get_hints(s, &back), 0);
  ck_assert_uint_eq(back.cost_ns, 5000);
  ck_assert_str_eq(back.name, "spin-a");
  ck_assert_ptr_ne(back.name, h.name); /* the op's own copy */
  ck_assert_int_eq(back.priority, 3);
  /* A frozen op still answers. */
  ck_assert_int_eq(cua_submit_wait(rt, s, NULL, NULL), 0);
  memset(&back, 0, sizeof back);
  back.size = sizeof back;
  ck_assert_int_eq(cua_op_get_hints(s, &back), 0);
  ck_assert_str_eq(back.name, "spin-a");
  cua_op_destroy(s);
}
END_TEST

START_TEST(hints_are_frozen_once_used) {
  cua_op *a, *b;
  ck_assert_int_eq(cua_op_host(&a, rt, count_run, NULL), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = "step";
  h.tag = "t";
  ck_assert_int_eq(cua_op_set_hints(a, &h), 0);
  ck_assert_int_eq(cua_op_then(&b, a, a), 0);
  ck_assert_err(rt, cua_op_set_hints(a, &h), CUA_ERR_BUSY, "frozen");
  cua_op_destroy(a);
  cua_op_destroy(b);
}
END_TEST

START_TEST(shared_buffers_are_read_only) {
  cua_buffer *x = buf(N), *y = buf(N);
  cua_op *f, *ax;
  ck_assert_int_eq(cua_op_fill(&f, x, 1.0f), 0);
  ck_assert_int_eq(run_op(rt, f), 0);
  ck_assert_int_eq(cua_buffer_share(x), 0);
  ck_assert_int_eq(cua_op_axpy(&ax, y, 1.0f, x), 0); /* reads x: fine */
  ck_assert_int_eq(run_op(rt, ax), 0);
  ck_assert_int_eq(cua_op_fill(&f, x, 2.0f), 0);
  cua_future *fut = (cua_future *)1;
  ck_assert_err(rt, cua_submit(&fut, rt, f, NULL), CUA_ERR_READONLY,
                "read-only");
  ck_assert_ptr_null(fut);
  ck_assert_int_eq(cua_buffer_unshare(x), 0);
  ck_assert_int_eq(run_op(rt, f), 0);
  expect_all(x, 2.0f);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
}
END_TEST

START_TEST(partition_tiles_then_unpartition) {
  cua_buffer *x = buf(N);
  cua_buffer *t[4];
  ck_assert_int_eq(cua_buffer_partition(x, 4, t), 0);
  cua_op *fills[4], *z;
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(cua_op_fill(&fills[i], t[i], (float)i), 0);
  ck_assert_int_eq(cua_op_zip(&z, fills, 4), 0);
  ck_assert_int_eq(run_op(rt, z), 0);
  cua_op *whole;
  ck_assert_int_eq(cua_op_fill(&whole, x, 1.0f), 0);
  cua_future *fut;
  ck_assert_err(rt, cua_submit(&fut, rt, whole, NULL), CUA_ERR_PARTITIONED,
                "partitioned");
  ck_assert_err(rt, cua_buffer_partition(x, 2, t), CUA_ERR_PARTITIONED,
                "already");
  ck_assert_int_eq(cua_buffer_unpartition(x), 0);
  float h[N];
  read_back(rt, x, h);
  for (int i = 0; i < N; i++)
    ck_assert_float_eq(h[i], (float)(i / (N / 4)));
  ck_assert_err(rt, run_op(rt, fills[0]), CUA_ERR_STALE, "stale");
  for (int i = 1; i < 4; i++)
    cua_op_destroy(fills[i]);
  cua_op_destroy(whole);
  for (int i = 0; i < 4; i++)
    cua_buffer_destroy(t[i]);
  cua_buffer_destroy(x);
}
END_TEST

/* ---- stream functions: CPU backends only (CUDA ones need a kernel) ---- */

static int fn_double(cua_stream_ctx *ctx, void *arg) {
  float *p = cua_ctx_ptr(ctx, 0);
  for (int i = 0; i < N; i++)
    p[i] *= 2.0f;
  ck_assert_ptr_nonnull(cua_ctx_stream(ctx));
  ck_assert_str_eq(cua_ctx_backend(ctx), test_backend());
  cua_ctx_set_result(ctx, arg);
  return 0;
}

static int fn_fail(cua_stream_ctx *ctx, void *arg) {
  (void)arg;
  cua_ctx_fail(ctx, "kernel exploded at %d", 42);
  return CUA_ERR_OP_FAILED;
}

START_TEST(stream_function_sees_its_buffers_and_sets_result) {
  if (!test_backend_on_cpu())
    return;
  cua_buffer *x = buf(N);
  cua_op *f, *fn, *s;
  ck_assert_int_eq(cua_op_fill(&f, x, 4.0f), 0);
  cua_access acc = {x, CUA_READ_WRITE};
  ck_assert_int_eq(cua_op_func(&fn, rt, fn_double, (void *)7, &acc, 1), 0);
  ck_assert_int_eq(cua_op_then(&s, f, fn), 0);
  void *res;
  ck_assert_int_eq(cua_submit_wait(rt, s, NULL, &res), 0);
  ck_assert_ptr_eq(res, (void *)7);
  expect_all(x, 8.0f);
  cua_access bad = {x, 9};
  ck_assert_err(rt, cua_op_func(&fn, rt, fn_double, NULL, &bad, 1),
                CUA_ERR_INVAL, "bad mode");
  cua_op_destroy(f);
  cua_op_destroy(fn);
  cua_op_destroy(s);
  cua_buffer_destroy(x);
}
END_TEST

START_TEST(failure_fails_dependents_but_not_independent_work) {
  if (!test_backend_on_cpu())
    return;
  cua_buffer *x = buf(N), *y = buf(N), *z = buf(N);
  cua_access acc = {x, CUA_WRITE};
  cua_op *bad, *dep, *chain, *indep;
  ck_assert_int_eq(cua_op_func(&bad, rt, fn_fail, NULL, &acc, 1), 0);
  ck_assert_int_eq(cua_op_copy(&dep, y, x), 0); /* reads x */
  ck_assert_int_eq(cua_op_then(&chain, bad, dep), 0);
  ck_assert_int_eq(cua_op_fill(&indep, z, 1.0f), 0);
  cua_future *f1, *f2;
  ck_assert_int_eq(cua_submit(&f1, rt, chain, NULL), 0);
  ck_assert_int_eq(cua_submit(&f2, rt, indep, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f1), CUA_ERR_DEPENDENCY);
  ck_assert_msg(strstr(cua_future_error(f1), "kernel exploded at 42") != NULL,
                "%s", cua_future_error(f1));
  ck_assert_int_eq(cua_future_wait(f2), 0);
  /* A later submission reading the poisoned buffer fails too... */
  cua_op *later;
  ck_assert_int_eq(cua_op_copy(&later, z, x), 0);
  ck_assert_err(rt, run_op(rt, later), CUA_ERR_DEPENDENCY, "kernel exploded");
  /* ...until a plain write overwrites it. */
  cua_op *fix, *later2;
  ck_assert_int_eq(cua_op_fill(&fix, x, 0.0f), 0);
  ck_assert_int_eq(run_op(rt, fix), 0);
  ck_assert_int_eq(cua_op_copy(&later2, z, x), 0);
  ck_assert_int_eq(run_op(rt, later2), 0);
  cua_future_destroy(f1);
  cua_future_destroy(f2);
  cua_op_destroy(bad);
  cua_op_destroy(dep);
  cua_op_destroy(chain);
  cua_op_destroy(indep);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_buffer_destroy(z);
}
END_TEST

/* A buffer read, failed and written again by submission after submission
 * keeps the first failure's cause in every message, at a bounded length:
 * the message names the op it depends on and the op that failed first. */
START_TEST(a_failure_read_again_and_again_keeps_its_cause) {
  if (!test_backend_on_cpu())
    return;
  cua_buffer *x = buf(N);
  cua_access w = {x, CUA_WRITE}, rw = {x, CUA_READ_WRITE};
  cua_op *bad, *again;
  ck_assert_int_eq(cua_op_func(&bad, rt, fn_fail, NULL, &w, 1), 0);
  ck_assert_int_eq(cua_submit_wait(rt, bad, NULL, NULL), CUA_ERR_OP_FAILED);
  ck_assert_int_eq(cua_op_func(&again, rt, fn_double, NULL, &rw, 1), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = "again";
  ck_assert_int_eq(cua_op_set_hints(again, &h), 0);
  for (int i = 0; i < 300; i++) {
    cua_future *f;
    ck_assert_int_eq(cua_submit(&f, rt, again, NULL), 0);
    ck_assert_int_eq(cua_future_wait(f), CUA_ERR_DEPENDENCY);
    const char *m = cua_future_error(f);
    ck_assert_msg(strstr(m, "kernel exploded at 42") != NULL, "%d: %s", i, m);
    ck_assert_msg(strlen(m) < 400, "%d: %zu bytes: %s", i, strlen(m), m);
    if (i > 0)
      ck_assert_msg(strstr(m, "depends on failed op 'again' "
                              "(CUA_ERR_DEPENDENCY): depends on failed op") !=
                        NULL,
                    "%s", m);
    cua_future_destroy(f);
  }
  cua_op_destroy(bad);
  cua_op_destroy(again);
  cua_buffer_destroy(x);
}
END_TEST

/* A free that fails before it is launched (here: after a shared op that
 * failed already) frees nothing: its buffer is usable again, and can be
 * freed later. It stayed marked freed, refused for ever (CUA_ERR_FREED). */
START_TEST(a_free_that_never_ran_leaves_its_buffer_usable) {
  if (!test_backend_on_cpu())
    return;
  cua_buffer *b = buf(N);
  cua_op *bad = NULL, *once = NULL, *fr = NULL, *t = NULL;
  ck_assert_int_eq(cua_op_func(&bad, rt, fn_fail, NULL, NULL, 0), 0);
  ck_assert_int_eq(cua_op_shared(&once, bad), 0);
  ck_assert_int_ne(cua_submit_wait(rt, once, NULL, NULL), 0);
  ck_assert_int_eq(cua_op_free(&fr, b), 0);
  ck_assert_int_eq(cua_op_then(&t, once, fr), 0);
  ck_assert_err(rt, cua_submit_wait(rt, t, NULL, NULL), CUA_ERR_DEPENDENCY,
                "kernel exploded at 42");
  cua_op *fill = NULL, *fr2 = NULL;
  ck_assert_int_eq(cua_op_fill(&fill, b, 7.0f), 0);
  ck_assert_int_eq(cua_submit_wait(rt, fill, NULL, NULL), 0);
  expect_all(b, 7.0f);
  ck_assert_int_eq(cua_op_free(&fr2, b), 0);
  ck_assert_int_eq(cua_submit_wait(rt, fr2, NULL, NULL), 0);
  cua_op *ops[] = {bad, once, fr, t, fill, fr2};
  for (size_t i = 0; i < 6; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(b);
}
END_TEST

/* then(a, then(b, then(c, ...))) 40k deep: walks through nested thens are
 * iterative, and the result is the last op's. */
START_TEST(deeply_nested_thens_run_in_order) {
  cua_buffer *x = buf(16);
  enum { DEPTH = 40000 };
  cua_op *acc;
  ck_assert_int_eq(cua_op_fill(&acc, x, (float)DEPTH), 0);
  for (int i = DEPTH - 1; i >= 1; i--) {
    cua_op *f, *t;
    ck_assert_int_eq(cua_op_fill(&f, x, (float)i), 0);
    ck_assert_int_eq(cua_op_then(&t, f, acc), 0);
    cua_op_destroy(f);
    cua_op_destroy(acc);
    acc = t;
  }
  ck_assert_int_eq(run_op(rt, acc), 0);
  expect_all(x, (float)DEPTH);
  cua_buffer_destroy(x);
}
END_TEST

/* A then whose next part waits for its first part has no node of its own
 * (graph.c): its next part's end stands for it. What it means must not
 * change: in a zip it is one part of its own, and when its next part has
 * nothing left to wait (a shared op that ran already), it keeps a node
 * and still completes, and fails, with its first part. */
static atomic_int slow_done;
static int slow_step(void *arg, void **result) {
  struct timespec ts = {0, 30 * 1000 * 1000};
  nanosleep(&ts, NULL);
  atomic_store(&slow_done, 1);
  *result = NULL;
  return arg != NULL ? 7 : 0; /* a non-NULL arg fails the step */
}

START_TEST(a_then_keeps_its_meaning_without_a_node) {
  cua_op *a, *b, *t, *z, *sh, *slow, *bad, *t2;
  void *res = NULL;
  ck_assert_int_eq(cua_op_host(&a, rt, count_run, (void *)10), 0);
  ck_assert_int_eq(cua_op_host(&b, rt, count_run, (void *)20), 0);
  ck_assert_int_eq(cua_op_then(&t, a, b), 0);
  /* zip(then(a, b), b, a, a): four parts, four results */
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){t, b, a, a}, 4), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, z, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_int_eq(cua_future_result(f, &res), 0);
  void **r = res;
  ck_assert_ptr_eq(r[0], (void *)20);
  ck_assert_ptr_eq(r[1], (void *)20);
  ck_assert_ptr_eq(r[2], (void *)10);
  ck_assert_ptr_eq(r[3], (void *)10);
  cua_future_destroy(f);
  cua_op_destroy(z);
  /* then(slow, shared op that ran): completes with slow, fails with it */
  ck_assert_int_eq(cua_op_shared(&sh, b), 0);
  ck_assert_int_eq(cua_submit_wait(rt, sh, NULL, &res), 0);
  ck_assert_int_eq(cua_op_host(&slow, rt, slow_step, NULL), 0);
  ck_assert_int_eq(cua_op_then(&t2, slow, sh), 0);
  atomic_store(&slow_done, 0);
  ck_assert_int_eq(cua_submit_wait(rt, t2, NULL, &res), 0);
  ck_assert_int_eq(atomic_load(&slow_done), 1);
  ck_assert_ptr_eq(res, (void *)20);
  cua_op_destroy(t2);
  /* then(sh, sh), sh having run: both parts are sh's one node (one edge),
   * and the result is still the next part's */
  ck_assert_int_eq(cua_op_then(&t2, sh, sh), 0);
  res = NULL;
  ck_assert_int_eq(cua_submit_wait(rt, t2, NULL, &res), 0);
  ck_assert_ptr_eq(res, (void *)20);
  cua_op_destroy(t2);
  ck_assert_int_eq(cua_op_host(&bad, rt, slow_step, (void *)1), 0);
  ck_assert_int_eq(cua_op_then(&t2, bad, sh), 0);
  atomic_store(&slow_done, 0);
  ck_assert_int_ne(cua_submit_wait(rt, t2, NULL, &res), 0);
  ck_assert_int_eq(atomic_load(&slow_done), 1);
  cua_op_destroy(t2);
  cua_op_destroy(bad);
  cua_op_destroy(slow);
  cua_op_destroy(sh);
  cua_op_destroy(t);
  cua_op_destroy(a);
  cua_op_destroy(b);
}
END_TEST

/* then(zip(a, b, ...), op), the way a task waiting for several others is
 * written, builds no node for the zip (graph.c): op waits for every part
 * directly. Shown by failures, since these ops share no buffer: a failed
 * part fails op; a then whose next part is such a then orders that
 * part's parts (its starts) after its first part; and an op that is both
 * a part of the zip and the next part is still a cycle. */
START_TEST(a_then_after_a_zip_waits_for_every_part) {
  if (!test_backend_on_cpu())
    return;
  cua_buffer *x = buf(N), *y = buf(N), *z = buf(N), *w = buf(N);
  cua_access acc = {x, CUA_WRITE};
  cua_op *bad, *ok, *zp, *dep, *t;
  ck_assert_int_eq(cua_op_func(&bad, rt, fn_fail, NULL, &acc, 1), 0);
  ck_assert_int_eq(cua_op_fill(&ok, z, 1.0f), 0);
  ck_assert_int_eq(cua_op_zip(&zp, (cua_op *[]){ok, bad}, 2), 0);
  ck_assert_int_eq(cua_op_fill(&dep, y, 3.0f), 0);
  ck_assert_int_eq(cua_op_then(&t, zp, dep), 0);
  ck_assert_err(rt, cua_submit_wait(rt, t, NULL, NULL), CUA_ERR_DEPENDENCY,
                "kernel exploded at 42");
  /* then(bad, then(zip(a, b), c)): a and b start the next part. */
  cua_op *a, *b, *c, *zab, *inner, *outer;
  ck_assert_int_eq(cua_op_fill(&a, z, 1.0f), 0);
  ck_assert_int_eq(cua_op_fill(&b, w, 2.0f), 0);
  ck_assert_int_eq(cua_op_fill(&c, y, 3.0f), 0);
  ck_assert_int_eq(cua_op_zip(&zab, (cua_op *[]){a, b}, 2), 0);
  ck_assert_int_eq(cua_op_then(&inner, zab, c), 0);
  ck_assert_int_eq(cua_op_then(&outer, bad, inner), 0);
  ck_assert_err(rt, cua_submit_wait(rt, outer, NULL, NULL), CUA_ERR_DEPENDENCY,
                "kernel exploded at 42");
  /* Plain writes clear what the failures poisoned; without bad before
   * it, the inner then runs and writes its three buffers. */
  ck_assert_int_eq(cua_submit_wait(rt, ok, NULL, NULL), 0);
  cua_op *fw;
  ck_assert_int_eq(cua_op_fill(&fw, w, 5.0f), 0);
  ck_assert_int_eq(cua_submit_wait(rt, fw, NULL, NULL), 0);
  ck_assert_int_eq(cua_submit_wait(rt, inner, NULL, NULL), 0);
  expect_all(z, 1.0f);
  expect_all(w, 2.0f);
  expect_all(y, 3.0f);
  /* then(zip(ok, c), c): c after itself. */
  cua_op *zc, *cyc;
  ck_assert_int_eq(cua_op_zip(&zc, (cua_op *[]){ok, c}, 2), 0);
  ck_assert_int_eq(cua_op_then(&cyc, zc, c), 0);
  cua_future *f = (cua_future *)&f;
  ck_assert_err(rt, cua_submit(&f, rt, cyc, NULL), CUA_ERR_CYCLE,
                "would have to run after itself");
  ck_assert_ptr_null(f);
  cua_op *ops[] = {bad, ok,  zp,    dep,   t,  a,  b,
                   c,   zab, inner, outer, fw, zc, cyc};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_buffer_destroy(z);
  cua_buffer_destroy(w);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ops");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, builtin_kernels_fill_copy_axpy);
  tcase_add_test(tc, memcpy_and_memset_in_every_direction);
  tcase_add_test(tc, shared_runs_exactly_once_across_consumers_and_submissions);
  tcase_add_test(tc, zip_unzip_and_map);
  tcase_add_test(tc, unzip_after_the_last_unzip_reuses_the_run);
  tcase_add_test(tc, diamond_runs_its_root_once_per_submission);
  tcase_add_test(tc, lazy_buffers_alloc_and_free);
  tcase_add_test(tc, barrier_orders_after_everything_before);
  tcase_add_test(tc, hints_are_frozen_once_used);
  tcase_add_test(tc, hints_read_back_and_change_one);
  tcase_add_test(tc, shared_buffers_are_read_only);
  tcase_add_test(tc, partition_tiles_then_unpartition);
  tcase_add_test(tc, stream_function_sees_its_buffers_and_sets_result);
  tcase_add_test(tc, failure_fails_dependents_but_not_independent_work);
  tcase_add_test(tc, a_failure_read_again_and_again_keeps_its_cause);
  tcase_add_test(tc, a_free_that_never_ran_leaves_its_buffer_usable);
  tcase_add_test(tc, deeply_nested_thens_run_in_order);
  tcase_add_test(tc, a_then_keeps_its_meaning_without_a_node);
  tcase_add_test(tc, a_then_after_a_zip_waits_for_every_part);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  require_backend();
  return run_suite(suite());
}
