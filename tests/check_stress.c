/*
 * tests/check_stress.c: several threads submitting random DAGs to one
 * runtime at once, each checked against its own sequential reference.
 *
 * Each worker runs random programs of tests/fuzz/dagprog.h (every
 * combinator: then, zip, unzip, map, shared; host steps; timeouts, polls,
 * callbacks, futures destroyed before completion, buffers destroyed and
 * re-created while work on them is in flight; per-submission policies and
 * explicit streams) on buffers of its own: three whole buffers and one tile
 * of a buffer partitioned between the workers, plus a read-only buffer
 * shared by all (and written by none: those submissions must fail). A
 * swapper thread replaces the runtime-wide policy all the while.
 *
 * Futures with a callback are destroyed also while it may be running
 * (cua_future_destroy() waits for it).
 *
 * $CUASYNC_STRESS_SECONDS: how long (default 10; .ci/run uses fewer under
 * the sanitizers). $CUASYNC_STRESS_SEED: the first seed (default fixed).
 */
#include "helpers.h"

#include "fuzz/dagprog.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define NWORKERS 4

static const char *const policy_names[] = {"single-stream", "round-robin",
                                           "least-loaded", "affinity"};
#define NPOL 4

static cua_runtime *rt;
static cua_buffer *ro, *parted, *tiles[NWORKERS];
static cua_policy *pols[NPOL];
static uint64_t deadline_ns;
static atomic_int stop;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double seconds(void) {
  const char *e = getenv("CUASYNC_STRESS_SECONDS");
  return e && atof(e) > 0 ? atof(e) : 10.0;
}

static uint64_t first_seed(void) {
  const char *e = getenv("CUASYNC_STRESS_SEED");
  return e ? strtoull(e, NULL, 0) : 0x5DEECE66Dull;
}

static void must(int rc, const char *what) {
  ck_assert_msg(rc == 0, "%s: %s: %s", what, cua_err_name(rc),
                cua_runtime_error(rt));
}

static void fill_wait(cua_buffer *b, float v) {
  cua_op *op = NULL;
  must(cua_op_fill(&op, b, v), "fill");
  must(cua_submit_wait(rt, op, NULL, NULL), "fill wait");
  cua_op_destroy(op);
}

typedef struct worker {
  int id;
  pthread_t thread;
  dp_ctx c;
  uint64_t seed;
  long programs;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  dp_ctx *c = &w->c;
  char who[64];
  snprintf(who, sizeof who, "stress worker %d", w->id);
  c->who = who;
  c->rt = rt;
  for (int b = 0; b < DP_NBUF - 1; b++) {
    must(cua_buffer_create(&c->buf[b], rt, 0, sizeof c->ref[b], 0), "buffer");
    fill_wait(c->buf[b], (float)(b + w->id));
    dp_set_ref(c, b, (float)(b + w->id));
    c->owned[b] = 1;
  }
  c->buf[DP_NBUF - 1] = tiles[w->id];
  dp_set_ref(c, DP_NBUF - 1, 0.0f);
  c->ro = ro;
  for (int k = 0; k < DP_ELEMS; k++)
    c->ro_ref[k] = 2.0f;
  c->policies = pols;
  c->npolicies = NPOL;

  uint64_t rng = w->seed;
  uint8_t prog[512];
  while (now_ns() < deadline_ns) {
    for (size_t i = 0; i < sizeof prog; i++) {
      rng ^= rng << 13;
      rng ^= rng >> 7;
      rng ^= rng << 17;
      prog[i] = (uint8_t)(rng >> 24);
    }
    dp_run(c, prog, sizeof prog);
    dp_check(c);
    w->programs++;
  }
  dp_finish(c);
  for (int b = 0; b < DP_NBUF - 1; b++)
    cua_buffer_destroy(c->buf[b]);
  return NULL;
}

static void *swapper(void *arg) {
  long *swaps = arg;
  for (unsigned i = 0; !atomic_load(&stop); i++) {
    int rc = cua_runtime_set_policy(rt, policy_names[i % NPOL]);
    if (rc != 0) {
      fprintf(stderr, "stress: set_policy %s: %s: %s\n", policy_names[i % NPOL],
              cua_err_name(rc), cua_runtime_error(rt));
      abort();
    }
    (*swaps)++;
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
  return NULL;
}

START_TEST(threads_match_their_sequential_reference) {
  rt = open_policy("round-robin", "[policy.round-robin]\nstreams = 4\n"
                                  "[policy.affinity]\nrule = tag:hot -> 0\n");
  must(cua_buffer_create(&ro, rt, 0, DP_ELEMS * 4, 0), "buffer");
  fill_wait(ro, 2.0f);
  must(cua_buffer_share(ro), "share");
  must(cua_buffer_create(&parted, rt, 0, NWORKERS * DP_ELEMS * 4, 0), "buffer");
  fill_wait(parted, 0.0f);
  must(cua_buffer_partition(parted, NWORKERS, tiles), "partition");
  for (int i = 0; i < NPOL; i++)
    must(cua_policy_open(&pols[i], rt, policy_names[i]), "policy");

  double secs = seconds();
  deadline_ns = now_ns() + (uint64_t)(secs * 1e9);
  static worker w[NWORKERS];
  uint64_t seed = first_seed();
  printf("stress: %d workers for %.1f s, seed %#llx\n", NWORKERS, secs,
         (unsigned long long)seed);
  for (int i = 0; i < NWORKERS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].id = i;
    w[i].seed = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1);
    ck_assert_int_eq(pthread_create(&w[i].thread, NULL, work, &w[i]), 0);
  }
  pthread_t sw;
  long swaps = 0;
  ck_assert_int_eq(pthread_create(&sw, NULL, swapper, &swaps), 0);
  long programs = 0, subs = 0, checks = 0;
  for (int i = 0; i < NWORKERS; i++) {
    pthread_join(w[i].thread, NULL);
    programs += w[i].programs;
    subs += w[i].c.submissions;
    checks += w[i].c.checks;
  }
  atomic_store(&stop, 1);
  pthread_join(sw, NULL);
  printf("stress: %ld programs, %ld submissions, %ld checks against the "
         "sequential reference, %ld policy swaps: all equal\n",
         programs, subs, checks, swaps);

  /* The tiles' work is all done: the whole buffer again. */
  must(cua_buffer_unpartition(parted), "unpartition");
  for (int i = 0; i < NWORKERS; i++)
    cua_buffer_destroy(tiles[i]);
  for (int i = 0; i < NPOL; i++)
    cua_policy_close(pols[i]);
  cua_buffer_destroy(parted);
  cua_buffer_destroy(ro);
  cua_runtime_destroy(rt);
  ck_assert_int_gt(checks, 0);
}
END_TEST

/* Found by the DAG fuzzer: a zip's shared wrapper is weak (the zip cannot
 * hold it), so once the unzips made so far are gone, a new unzip makes a
 * new wrapper; the zip must not run a second time, since cua_op_unzip()
 * promises one run "in this or any later submission". A second run would
 * copy a over b after b was set to 48. */
START_TEST(unzip_later_does_not_run_the_zip_again) {
  rt = open_policy("single-stream", NULL);
  cua_buffer *a, *b;
  must(cua_buffer_create(&a, rt, 0, DP_ELEMS * 4, 0), "buffer");
  must(cua_buffer_create(&b, rt, 0, DP_ELEMS * 4, 0), "buffer");
  fill_wait(a, 1.0f);
  fill_wait(b, 2.0f);
  cua_op *fa, *cp, *z, *u0, *f48, *u1, *t;
  must(cua_op_fill(&fa, a, 0.0f), "fill");
  must(cua_op_copy(&cp, b, a), "copy");
  must(cua_op_zip(&z, (cua_op *[]){fa, cp}, 2), "zip");
  cua_op_destroy(fa);
  cua_op_destroy(cp);
  must(cua_op_unzip(&u0, z, 0), "unzip");
  must(cua_submit_wait(rt, u0, NULL, NULL), "submit"); /* a = b = 0 */
  cua_op_destroy(u0);
  must(cua_op_fill(&f48, b, 48.0f), "fill");
  must(cua_op_unzip(&u1, z, 1), "unzip");
  must(cua_op_then(&t, f48, u1), "then");
  must(cua_submit_wait(rt, t, NULL, NULL), "submit"); /* b = 48, no rerun */
  float h[DP_ELEMS];
  read_back(rt, b, h);
  ck_assert_msg(h[0] == 48.0f,
                "b = %g: the zip ran again (sequential semantics: 48)", h[0]);
  cua_op_destroy(t);
  cua_op_destroy(u1);
  cua_op_destroy(f48);
  cua_op_destroy(z);
  cua_buffer_destroy(a);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("stress");
  TCase *tc = tcase_create("threads");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, threads_match_their_sequential_reference);
  tcase_add_test(tc, unzip_later_does_not_run_the_zip_again);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  require_backend();
  return run_suite(suite());
}
