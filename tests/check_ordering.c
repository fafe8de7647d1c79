/*
 * tests/check_ordering.c: whatever the placement, results equal sequential
 * execution. Ops are scattered over streams by the test policy "scatter"
 * (which ignores then-chains), or forced onto chosen streams; slow ops
 * (spins) before the producers make any missing event show as a wrong value.
 */
#include "helpers.h"

#include <inttypes.h>

#define N 1024
#define SPIN_NS 2000000u

static cua_runtime *rt;

static void setup(void) {
  rt = open_policy("scatter", "[policy.scatter]\nstreams = 4\nseed = 7\n");
}
static void teardown(void) {
  cua_runtime_destroy(rt);
}

static cua_buffer *buf(void) {
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, N * sizeof(float), 0), 0);
  return b;
}

static void expect_all(cua_buffer *b, float want) {
  float h[N];
  read_back(rt, b, h);
  for (int i = 0; i < N; i++)
    ck_assert_msg(h[i] == want, "element %d is %g, expected %g", i, h[i], want);
}

/* then(spin, op): a slow producer. */
static cua_op *slow(cua_op *op) {
  cua_op *spin, *t;
  ck_assert_int_eq(cua_op_spin(&spin, rt, SPIN_NS, 1), 0);
  ck_assert_int_eq(cua_op_then(&t, spin, op), 0);
  cua_op_destroy(spin);
  cua_op_destroy(op);
  return t;
}

START_TEST(read_after_write_across_streams_and_submissions) {
  cua_buffer *x = buf(), *y = buf();
  for (int it = 1; it <= 40; it++) {
    cua_op *w, *r;
    ck_assert_int_eq(cua_op_fill(&w, x, (float)it), 0);
    w = slow(w);
    ck_assert_int_eq(cua_op_copy(&r, y, x), 0);
    cua_future *f1, *f2;
    ck_assert_int_eq(cua_submit(&f1, rt, w, NULL), 0);
    ck_assert_int_eq(cua_submit(&f2, rt, r, NULL), 0);
    ck_assert_int_eq(cua_future_wait(f2), 0);
    ck_assert_int_eq(cua_future_wait(f1), 0);
    expect_all(y, (float)it);
    cua_future_destroy(f1);
    cua_future_destroy(f2);
    cua_op_destroy(w);
    cua_op_destroy(r);
  }
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
}
END_TEST

START_TEST(write_after_read_waits_for_the_reader) {
  cua_buffer *x = buf(), *y = buf();
  for (int it = 1; it <= 30; it++) {
    cua_op *init, *zy, *rd, *wr;
    ck_assert_int_eq(cua_op_fill(&init, x, (float)it), 0);
    ck_assert_int_eq(run_op(rt, init), 0);
    ck_assert_int_eq(cua_op_fill(&zy, y, 0.0f), 0);
    ck_assert_int_eq(run_op(rt, zy), 0);
    /* a slow reader of x, then a writer of x in a later submission */
    ck_assert_int_eq(cua_op_axpy(&rd, y, 1.0f, x), 0);
    rd = slow(rd);
    ck_assert_int_eq(cua_op_fill(&wr, x, -1.0f), 0);
    cua_future *f1, *f2;
    ck_assert_int_eq(cua_submit(&f1, rt, rd, NULL), 0);
    ck_assert_int_eq(cua_submit(&f2, rt, wr, NULL), 0);
    ck_assert_int_eq(cua_future_wait(f1), 0);
    ck_assert_int_eq(cua_future_wait(f2), 0);
    expect_all(y, (float)it);
    expect_all(x, -1.0f);
    cua_future_destroy(f1);
    cua_future_destroy(f2);
    cua_op_destroy(rd);
    cua_op_destroy(wr);
  }
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
}
END_TEST

START_TEST(write_after_write_keeps_the_last) {
  cua_buffer *x = buf();
  for (int it = 0; it < 30; it++) {
    cua_op *a, *b, *z;
    ck_assert_int_eq(cua_op_fill(&a, x, 1.0f), 0);
    a = slow(a);
    ck_assert_int_eq(cua_op_fill(&b, x, 2.0f), 0);
    ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){a, b}, 2), 0);
    ck_assert_int_eq(run_op(rt, z), 0);
    expect_all(x, 2.0f);
    cua_op_destroy(a);
    cua_op_destroy(b);
  }
  cua_buffer_destroy(x);
}
END_TEST

START_TEST(tiles_written_concurrently_then_read_whole) {
  cua_buffer *x = buf(), *y = buf();
  cua_buffer *t[4];
  for (int it = 0; it < 10; it++) {
    ck_assert_int_eq(cua_buffer_partition(x, 4, t), 0);
    cua_op *w[4], *z;
    for (int i = 0; i < 4; i++) {
      ck_assert_int_eq(cua_op_fill(&w[i], t[i], (float)(it + i)), 0);
      w[i] = slow(w[i]);
    }
    ck_assert_int_eq(cua_op_zip(&z, w, 4), 0);
    cua_future *f;
    ck_assert_int_eq(cua_submit(&f, rt, z, NULL), 0);
    ck_assert_int_eq(cua_buffer_unpartition(x), 0);
    cua_op *c;
    ck_assert_int_eq(cua_op_copy(&c, y, x), 0);
    ck_assert_int_eq(run_op(rt, c), 0);
    ck_assert_int_eq(cua_future_wait(f), 0);
    float h[N];
    read_back(rt, y, h);
    for (int i = 0; i < N; i++)
      ck_assert_float_eq(h[i], (float)(it + i / (N / 4)));
    cua_future_destroy(f);
    cua_op_destroy(z);
    for (int i = 0; i < 4; i++) {
      cua_op_destroy(w[i]);
      cua_buffer_destroy(t[i]);
    }
  }
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
}
END_TEST

START_TEST(forced_placement_on_different_streams) {
  cua_buffer *x = buf(), *y = buf();
  for (int it = 1; it <= 20; it++) {
    cua_op *w, *r;
    ck_assert_int_eq(cua_op_fill(&w, x, (float)it), 0);
    w = slow(w);
    ck_assert_int_eq(cua_op_copy(&r, y, x), 0);
    cua_future *f1, *f2;
    ck_assert_int_eq(cua_submit_on(&f1, rt, w, 0, 5), 0);
    ck_assert_int_eq(cua_submit_on(&f2, rt, r, 0, 6), 0);
    ck_assert_int_eq(cua_future_wait(f2), 0);
    expect_all(y, (float)it);
    cua_future_wait(f1);
    cua_future_destroy(f1);
    cua_future_destroy(f2);
    cua_op_destroy(w);
    cua_op_destroy(r);
  }
  cua_future *f;
  cua_op *r;
  ck_assert_int_eq(cua_op_copy(&r, y, x), 0);
  ck_assert_err(rt, cua_submit_on(&f, rt, r, 4, 0), CUA_ERR_BAD_PLACEMENT,
                "no device 4");
  cua_op_destroy(r);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
}
END_TEST

/* Same-stream producers and consumers need no event at all. */
START_TEST(one_stream_never_records_an_event) {
  cua_runtime *r1 = open_policy("single-stream", NULL);
  cua_buffer *x, *y;
  ck_assert_int_eq(cua_buffer_create(&x, r1, 0, N * 4, 0), 0);
  ck_assert_int_eq(cua_buffer_create(&y, r1, 0, N * 4, 0), 0);
  for (int i = 0; i < 200; i++) {
    cua_op *a, *b, *t;
    ck_assert_int_eq(cua_op_fill(&a, x, (float)i), 0);
    ck_assert_int_eq(cua_op_axpy(&b, y, 1.0f, x), 0);
    ck_assert_int_eq(cua_op_then(&t, a, b), 0);
    cua_future *f;
    ck_assert_int_eq(cua_submit(&f, r1, t, NULL), 0);
    cua_future_destroy(f);
    cua_op_destroy(a);
    cua_op_destroy(b);
    cua_op_destroy(t);
  }
  cua_runtime_synchronize(r1);
  cua_stats st = {.size = sizeof st};
  cua_runtime_stats(r1, &st);
  ck_assert_uint_eq(st.events_recorded, 0);
  ck_assert_uint_eq(st.event_waits, 0);
  ck_assert_uint_eq(st.streams, 1);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(r1);
}
END_TEST

/* A consumer ordered after a producer through a third stream needs no
 * second wait: vector clocks see the transitive order. */
START_TEST(transitive_order_needs_no_extra_wait) {
  cua_buffer *x = buf(), *y = buf(), *z = buf();
  cua_op *a, *b, *c;
  ck_assert_int_eq(cua_op_fill(&a, x, 1.0f), 0);
  ck_assert_int_eq(cua_op_copy(&b, y, x), 0);       /* waits on a */
  ck_assert_int_eq(cua_op_axpy(&c, z, 1.0f, y), 0); /* waits on b */
  cua_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
  cua_future *fa, *fb, *fc;
  cua_runtime_stats(rt, &s0);
  ck_assert_int_eq(cua_submit_on(&fa, rt, a, 0, 1), 0);
  ck_assert_int_eq(cua_submit_on(&fb, rt, b, 0, 2), 0);
  ck_assert_int_eq(cua_submit_on(&fc, rt, c, 0, 3), 0);
  cua_future_wait(fc);
  cua_runtime_stats(rt, &s1);
  /* at most one wait per cross-stream edge (fewer if already complete) */
  ck_assert_uint_le(s1.event_waits - s0.event_waits, 2);
  cua_future_destroy(fa);
  cua_future_destroy(fb);
  cua_future_destroy(fc);
  cua_op_destroy(a);
  cua_op_destroy(b);
  cua_op_destroy(c);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_buffer_destroy(z);
}
END_TEST

/* A consumer of two producers on one other stream waits at most once, for
 * the later of them, whichever order its inputs name them in: the stream
 * runs in order. The producers are slow, so on the host backend neither
 * is done when the consumer is decided; on a backend that runs ops at
 * launch (tests/launchtime/) they may be, and no wait is needed. */
START_TEST(one_wait_for_two_producers_on_one_stream) {
  for (int later_x = 0; later_x < 2; later_x++) {
    cua_buffer *x = buf(), *y = buf();
    cua_op *p1, *p2, *c;
    /* p1 on stream 1, then p2 on stream 1; c = x + y on stream 2 */
    ck_assert_int_eq(cua_op_fill(&p1, later_x ? y : x, 2.0f), 0);
    p1 = slow(p1);
    ck_assert_int_eq(cua_op_fill(&p2, later_x ? x : y, 3.0f), 0);
    ck_assert_int_eq(cua_op_axpy(&c, y, 1.0f, x), 0);
    cua_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    cua_future *f1, *f2, *f3;
    cua_runtime_stats(rt, &s0);
    ck_assert_int_eq(cua_submit_on(&f1, rt, p1, 0, 1), 0);
    ck_assert_int_eq(cua_submit_on(&f2, rt, p2, 0, 1), 0);
    ck_assert_int_eq(cua_submit_on(&f3, rt, c, 0, 2), 0);
    ck_assert_int_eq(cua_future_wait(f3), 0);
    cua_runtime_stats(rt, &s1);
    ck_assert_msg(s1.event_waits - s0.event_waits <= 1,
                  "%" PRIu64 " waits with the later producer writing %s",
                  s1.event_waits - s0.event_waits, later_x ? "x" : "y");
    expect_all(y, 5.0f);
    cua_future_destroy(f1);
    cua_future_destroy(f2);
    cua_future_destroy(f3);
    cua_op_destroy(p1);
    cua_op_destroy(p2);
    cua_op_destroy(c);
    cua_buffer_destroy(x);
    cua_buffer_destroy(y);
  }
}
END_TEST

START_TEST(events_are_pooled) {
  cua_buffer *x = buf(), *y = buf();
  cua_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
  for (int round = 0; round < 2; round++) {
    cua_runtime_stats(rt, &s0);
    for (int i = 0; i < 300; i++) {
      cua_op *w, *r, *t;
      ck_assert_int_eq(cua_op_fill(&w, x, (float)i), 0);
      ck_assert_int_eq(cua_op_copy(&r, y, x), 0);
      ck_assert_int_eq(cua_op_then(&t, w, r), 0);
      ck_assert_int_eq(run_op(rt, t), 0);
      cua_op_destroy(w);
      cua_op_destroy(r);
    }
    cua_runtime_stats(rt, &s1);
  }
  /* in steady state (second round) no event is created */
  ck_assert_uint_eq(s1.events_created, s0.events_created);
  ck_assert_uint_gt(s1.events_recorded, s0.events_recorded);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("ordering");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, read_after_write_across_streams_and_submissions);
  tcase_add_test(tc, write_after_read_waits_for_the_reader);
  tcase_add_test(tc, write_after_write_keeps_the_last);
  tcase_add_test(tc, tiles_written_concurrently_then_read_whole);
  tcase_add_test(tc, forced_placement_on_different_streams);
  tcase_add_test(tc, one_stream_never_records_an_event);
  tcase_add_test(tc, transitive_order_needs_no_extra_wait);
  tcase_add_test(tc, one_wait_for_two_producers_on_one_stream);
  tcase_add_test(tc, events_are_pooled);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  require_backend();
  return run_suite(suite());
}
