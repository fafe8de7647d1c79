/*
 * tests/check_random_dag.c: the property that defines cuasync. Thousands of
 * random DAGs (random ops with random access modes over a few buffers,
 * random then/zip structure, several submissions in flight at once) give
 * exactly the results of running their ops one at a time in submission
 * order, under every placement the policies make, including the "scatter"
 * policy that ignores then-chains and a forced placement on two devices.
 *
 * $CUASYNC_RANDOM_DAGS sets the number of DAGs per policy (default 1000).
 */
#include "helpers.h"

#include <stdint.h>

#define NBUF 4
#define ELEMS 64

static cua_runtime *rt;
static cua_buffer *bufs[NBUF];
static float ref[NBUF][ELEMS];
static uint64_t rng;

static uint32_t rnd(uint32_t n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng % n);
}

/* What one random op does to the buffers, kept so that a DAG submitted
 * again can be applied to the reference again (effect()). */
typedef struct effect_rec {
  int kind, d, s;
  float v;
  size_t off, n;
} effect_rec;
static effect_rec effects[512];
static size_t neffects;

static void effect(const effect_rec *e) {
  switch (e->kind) {
  case 0: /* fill */
    for (int i = 0; i < ELEMS; i++)
      ref[e->d][i] = e->v;
    break;
  case 1: { /* axpy */
    float tmp[ELEMS];
    for (int i = 0; i < ELEMS; i++)
      tmp[i] = e->v * ref[e->s][i] + ref[e->d][i];
    memcpy(ref[e->d], tmp, sizeof tmp);
    break;
  }
  case 2: /* copy, or a byte range of one */
    memcpy(&ref[e->d][e->off], &ref[e->s][e->off], e->n * 4);
    break;
  }
}

/* Applies @p e to the reference, and keeps it (the first 512 of a DAG). */
static void apply_effect(effect_rec e) {
  effect(&e);
  if (neffects < sizeof effects / sizeof *effects)
    effects[neffects] = e;
  neffects++;
}

/* One random op, applied to the reference as it is built (the reference
 * order is the submission's post-order, which the builder follows). */
static cua_op *random_op(void) {
  cua_op *op = NULL;
  int d = (int)rnd(NBUF), s = (int)rnd(NBUF);
  switch (rnd(6)) {
  case 0: { /* fill: write */
    float v = (float)rnd(100);
    ck_assert_int_eq(cua_op_fill(&op, bufs[d], v), 0);
    apply_effect((effect_rec){.kind = 0, .d = d, .v = v});
    break;
  }
  case 1: /* axpy: read-write d, read s */
  case 2: {
    float a = rnd(2) ? 1.0f : -1.0f;
    ck_assert_int_eq(cua_op_axpy(&op, bufs[d], a, bufs[s]), 0);
    apply_effect((effect_rec){.kind = 1, .d = d, .s = s, .v = a});
    break;
  }
  case 3: { /* copy: write d, read s */
    if (s == d)
      s = (d + 1) % NBUF;
    ck_assert_int_eq(cua_op_copy(&op, bufs[d], bufs[s]), 0);
    apply_effect((effect_rec){.kind = 2, .d = d, .s = s, .n = ELEMS});
    break;
  }
  case 4: { /* a byte range copy between buffers */
    if (s == d)
      s = (d + 1) % NBUF;
    size_t off = rnd(ELEMS / 2), n = 1 + rnd(ELEMS / 2);
    ck_assert_int_eq(
        cua_op_memcpy_d2d(&op, bufs[d], off * 4, bufs[s], off * 4, n * 4), 0);
    apply_effect((effect_rec){.kind = 2, .d = d, .s = s, .off = off, .n = n});
    break;
  }
  default: { /* a short spin before a write, to let races show */
    cua_op *spin, *w;
    float v = (float)rnd(100);
    ck_assert_int_eq(cua_op_spin(&spin, rt, 1000 * rnd(200), 1), 0);
    ck_assert_int_eq(cua_op_fill(&w, bufs[d], v), 0);
    apply_effect((effect_rec){.kind = 0, .d = d, .v = v});
    ck_assert_int_eq(cua_op_then(&op, spin, w), 0);
    cua_op_destroy(spin);
    cua_op_destroy(w);
    break;
  }
  }
  return op;
}

/* A random DAG of @p n ops whose post-order is their construction order:
 * ops are folded left to right into then-chains and zips. */
static cua_op *random_dag(int n) {
  cua_op *acc = random_op();
  for (int i = 1; i < n; i++) {
    cua_op *next = random_op(), *c;
    if (rnd(2))
      ck_assert_int_eq(cua_op_then(&c, acc, next), 0);
    else
      ck_assert_int_eq(cua_op_zip(&c, (cua_op *[]){acc, next}, 2), 0);
    cua_op_destroy(acc);
    cua_op_destroy(next);
    acc = c;
  }
  return acc;
}

static int dags_per_policy(void) {
  const char *e = getenv("CUASYNC_RANDOM_DAGS");
  return e ? atoi(e) : 1000;
}

/* DAGs of min_ops to max_ops ops, dags_per_policy() / fewer of them; the
 * chunk test makes fewer, larger ones. */
static int min_ops = 1, max_ops = 8, fewer = 1;
/* run_policy() leaves rt open, for the caller to read its stats. */
static int keep_open;
/* run_policy() submits each DAG three times. */
static int resubmit;

static void run_policy(const char *policy, const char *extra, int devices) {
  rt = open_policy(policy, extra);
  rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)strlen(policy);
  int ndev = cua_device_count(rt);
  for (int b = 0; b < NBUF; b++) {
    int dev = devices > 1 && ndev > 1 ? b % ndev : 0;
    ck_assert_int_eq(
        cua_buffer_create(&bufs[b], rt, dev, ELEMS * sizeof(float), 0), 0);
    cua_op *z;
    ck_assert_int_eq(cua_op_fill(&z, bufs[b], (float)b), 0);
    ck_assert_int_eq(run_op(rt, z), 0);
    for (int i = 0; i < ELEMS; i++)
      ref[b][i] = (float)b;
  }
  int ndags = dags_per_policy() / fewer;
  if (ndags < 1)
    ndags = 1;
  long checked = 0;
  for (int dag = 0; dag < ndags; dag++) {
    /* Several submissions in flight at once: order holds across them.
     * With resubmit, one DAG goes three times, all in flight: the third
     * builds its nodes from the plan its second build recorded (plan.c). */
    int nsub = resubmit ? 3 : 1 + (int)rnd(3);
    cua_future *f[3];
    cua_op *again = NULL;
    for (int k = 0; k < nsub; k++) {
      if (again != NULL) {
        ck_assert_uint_le(neffects, sizeof effects / sizeof *effects);
        for (size_t e = 0; e < neffects; e++)
          effect(&effects[e]);
        ck_assert_int_eq(cua_submit(&f[k], rt, again, NULL), 0);
        continue;
      }
      neffects = 0;
      cua_op *op =
          random_dag(min_ops + (int)rnd((uint32_t)(max_ops - min_ops + 1)));
      ck_assert_int_eq(cua_submit(&f[k], rt, op, NULL), 0);
      if (resubmit)
        again = op;
      else
        cua_op_destroy(op);
    }
    cua_op_destroy(again);
    for (int k = 0; k < nsub; k++) {
      ck_assert_msg(cua_future_wait(f[k]) == 0, "%s", cua_future_error(f[k]));
      cua_future_destroy(f[k]);
    }
    /* Check every buffer after some DAGs (reading back is a submission
     * too, ordered like the rest). */
    if (dag % 5 == 4 || dag == ndags - 1) {
      for (int b = 0; b < NBUF; b++) {
        float h[ELEMS];
        read_back(rt, bufs[b], h);
        for (int i = 0; i < ELEMS; i++)
          ck_assert_msg(h[i] == ref[b][i],
                        "policy %s, DAG %d, buffer %d[%d] = %g, sequential "
                        "reference %g",
                        policy, dag, b, i, h[i], ref[b][i]);
        checked++;
      }
    }
  }
  printf("random_dag: %s: %d DAGs, %ld buffer checks, all equal to the "
         "sequential reference\n",
         policy, ndags, checked);
  for (int b = 0; b < NBUF; b++)
    cua_buffer_destroy(bufs[b]);
  if (!keep_open)
    cua_runtime_destroy(rt);
}

START_TEST(scatter_matches_sequential) {
  run_policy("scatter", "[policy.scatter]\nstreams = 4\n", 1);
}
END_TEST

START_TEST(scatter_two_devices_matches_sequential) {
  char extra[256];
  snprintf(extra, sizeof extra, "[policy.scatter]\nstreams = 3\n%s",
           two_devices_section());
  run_policy("scatter", extra, 2);
}
END_TEST

START_TEST(round_robin_matches_sequential) {
  run_policy("round-robin", "[policy.round-robin]\nstreams = 4\n", 1);
}
END_TEST

START_TEST(least_loaded_matches_sequential) {
  run_policy("least-loaded", NULL, 1);
}
END_TEST

/* Pull mode: ops bound to streams only as streams have room (a depth of
 * 1 makes the most late decisions), across two devices. */
START_TEST(work_stealing_matches_sequential) {
  char extra[256];
  snprintf(extra, sizeof extra,
           "pull_depth = 1\n[policy.work-stealing]\nstreams = "
           "3\n%s",
           two_devices_section());
  run_policy("work-stealing", extra, 2);
}
END_TEST

START_TEST(single_stream_matches_sequential) {
  run_policy("single-stream", NULL, 1);
}
END_TEST

/* DAGs of 17 to 80 ops, several in flight: each is applied in chunks as
 * its round decides it (the first after 16 launches), the runtime lock
 * released between chunks, while the other submissions' rounds and the
 * completion thread run. Scatter puts most consumers on another stream
 * than their producers, so chunk boundaries fall between producers and
 * consumers that need waits. */
START_TEST(large_dags_in_chunks_match_sequential) {
  min_ops = 17;
  max_ops = 80;
  fewer = 5; /* (200 DAGs of about 48 ops by default) */
  run_policy("scatter", "[policy.scatter]\nstreams = 4\n", 1);
  run_policy("round-robin", "[policy.round-robin]\nstreams = 3\n", 1);
  min_ops = 1;
  max_ops = 8;
  fewer = 1;
}
END_TEST

/* launch = relay: DAGs of 150 to 400 ops, several in flight, each
 * decided on a launch thread after its first chunk while this thread
 * applies the chunks (flush.c). Under $CUASYNC_LAUNCH (the launch*
 * wrappers) the variable's mode runs instead, and nothing relays. */
START_TEST(relayed_dags_match_sequential) {
  min_ops = 150;
  max_ops = 400;
  fewer = 20; /* (50 DAGs by default) */
  const char *env = getenv("CUASYNC_LAUNCH");
  /* (the sim backend decides a round whole, in virtual time) */
  int relays = (env == NULL || *env == '\0' || strcmp(env, "relay") == 0) &&
               strcmp(test_backend(), "sim") != 0;
  const char *extra[] = {
      "launch = relay\n[policy.scatter]\nstreams = 4\n",
      "launch = relay\n",
  };
  const char *policy[] = {"scatter", "single-stream"};
  for (int i = 0; i < 2; i++) {
    keep_open = 1;
    run_policy(policy[i], extra[i], 1);
    cua_stats st = {.size = sizeof st};
    ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
    if (relays)
      ck_assert_uint_gt(st.rounds_relayed, 0);
    else
      ck_assert_uint_eq(st.rounds_relayed, 0);
    cua_runtime_destroy(rt);
    keep_open = 0;
  }
  min_ops = 1;
  max_ops = 8;
  fewer = 1;
}
END_TEST

/* DAGs of 40 to 160 ops submitted three times, all in flight: the third
 * submission of each is built from its root's plan, made by the second
 * (plan.c), and the results still equal the reference's, which applies
 * the DAG's ops three times, in order. */
START_TEST(resubmitted_dags_match_sequential) {
  min_ops = 40;
  max_ops = 160;
  fewer = 10;
  resubmit = 1;
  run_policy("scatter", "[policy.scatter]\nstreams = 4\n", 1);
  run_policy("round-robin", "[policy.round-robin]\nstreams = 3\n", 1);
  run_policy("single-stream", NULL, 1);
  resubmit = 0;
  min_ops = 1;
  max_ops = 8;
  fewer = 1;
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("random_dag");
  TCase *tc = tcase_create("property");
  tcase_set_timeout(tc, 900);
  tcase_add_test(tc, scatter_matches_sequential);
  tcase_add_test(tc, scatter_two_devices_matches_sequential);
  tcase_add_test(tc, round_robin_matches_sequential);
  tcase_add_test(tc, least_loaded_matches_sequential);
  tcase_add_test(tc, single_stream_matches_sequential);
  tcase_add_test(tc, work_stealing_matches_sequential);
  tcase_add_test(tc, large_dags_in_chunks_match_sequential);
  tcase_add_test(tc, relayed_dags_match_sequential);
  tcase_add_test(tc, resubmitted_dags_match_sequential);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  require_backend();
  return run_suite(suite());
}
