/*
 * tests/check_conformance.c: what every policy must do, run against the
 * four standard policies, the out-of-tree example (doc/examples/
 * custom-policy, built here as a test module), the test policy "scatter"
 * and "earliest-end" (tests/earliest.h), registered from memory with
 * cua_policy_register() and written against ABI 2.0's named fields: valid
 * placements for every op kind, correct results on random DAGs, state that
 * survives thousands of submissions, submissions from several threads, and
 * clean destruction (valgrind checks the last).
 */
#include "earliest.h"
#include "helpers.h"

#include <pthread.h>
#include <stdint.h>

static const char *const policies[] = {
    "single-stream", "round-robin",  "least-loaded", "affinity",
    "random",        "scatter",      "earliest-end", "heft",
    "dmda",          "work-stealing"};
#define NPOL (sizeof policies / sizeof *policies)

static cua_runtime *open_pol(int i) {
  /* A CPU backend gets two virtual devices; CUDA keeps the ones it has. */
  char extra[512];
  const char *rules = "";
  if (strcmp(policies[i], "affinity") == 0)
    rules = test_backend_on_cpu()
                ? "[policy.affinity]\nrule = tag:a -> 1\nrule = tag:b -> 0\n"
                : "[policy.affinity]\nrule = tag:a -> 0\n";
  snprintf(extra, sizeof extra, "%s%s", rules, two_devices_section());
  return open_policy(policies[i], extra);
}

static int step(void *arg, void **res) {
  (void)arg;
  *res = NULL;
  return 0;
}

/* One of every op kind, submitted under the policy, each must succeed. */
START_TEST(places_every_op_kind_validly) {
  cua_runtime *rt = open_pol(_i);
  int ndev = cua_device_count(rt);
  for (int dev = 0; dev < ndev; dev++) {
    cua_buffer *a, *b, *lazy;
    float host[64];
    for (int i = 0; i < 64; i++)
      host[i] = (float)i;
    ck_assert_int_eq(cua_buffer_create(&a, rt, dev, sizeof host, 0), 0);
    ck_assert_int_eq(cua_buffer_create(&b, rt, dev, sizeof host, 0), 0);
    ck_assert_int_eq(
        cua_buffer_create(&lazy, rt, dev, sizeof host, CUA_BUFFER_LAZY), 0);
    cua_op *ops[12];
    int n = 0;
    ck_assert_int_eq(cua_op_memcpy_h2d(&ops[n++], a, 0, host, sizeof host), 0);
    ck_assert_int_eq(cua_op_fill(&ops[n++], b, 1.0f), 0);
    ck_assert_int_eq(cua_op_axpy(&ops[n++], b, 2.0f, a), 0);
    ck_assert_int_eq(cua_op_copy(&ops[n++], a, b), 0);
    ck_assert_int_eq(cua_op_memcpy_d2d(&ops[n++], b, 0, a, 0, sizeof host), 0);
    ck_assert_int_eq(cua_op_memset(&ops[n++], a, 0, 0, 16), 0);
    ck_assert_int_eq(cua_op_spin(&ops[n++], rt, 1000, 1), 0);
    ck_assert_int_eq(cua_op_alloc(&ops[n++], lazy), 0);
    ck_assert_int_eq(cua_op_free(&ops[n++], lazy), 0);
    ck_assert_int_eq(cua_op_host(&ops[n++], rt, step, NULL), 0);
    ck_assert_int_eq(cua_op_barrier(&ops[n++], rt), 0);
    ck_assert_int_eq(cua_op_memcpy_d2h(&ops[n++], host, b, 0, sizeof host), 0);
    /* tagged and device-hinted variants for the policies that read them */
    cua_hints h = CUA_HINTS_INIT;
    h.tag = dev ? "a" : "b";
    h.device = dev;
    h.cost_ns = 1000;
    ck_assert_int_eq(cua_op_set_hints(ops[1], &h), 0);
    cua_op *seq = ops[0];
    cua_op_retain(seq);
    for (int i = 1; i < n; i++) {
      cua_op *t;
      ck_assert_int_eq(cua_op_then(&t, seq, ops[i]), 0);
      cua_op_destroy(seq);
      seq = t;
    }
    int rc = cua_submit_wait(rt, seq, NULL, NULL);
    ck_assert_msg(rc == 0, "policy %s, device %d: %s", policies[_i], dev,
                  cua_runtime_error(rt));
    for (int i = 0; i < 64; i++)
      ck_assert_float_eq(host[i], 1.0f + 2.0f * (float)i);
    cua_op_destroy(seq);
    for (int i = 0; i < n; i++)
      cua_op_destroy(ops[i]);
    cua_buffer_destroy(a);
    cua_buffer_destroy(b);
    cua_buffer_destroy(lazy);
  }
  cua_runtime_destroy(rt);
}
END_TEST

/* A chain of axpys over 3 buffers spread over the devices, with random
 * structure: compared with the same arithmetic on the host. */
START_TEST(random_dags_give_sequential_results) {
  cua_runtime *rt = open_pol(_i);
  int ndev = cua_device_count(rt);
  enum { NB = 3, E = 32 };
  cua_buffer *b[NB];
  float ref[NB][E];
  for (int k = 0; k < NB; k++) {
    ck_assert_int_eq(cua_buffer_create(&b[k], rt, k % ndev, E * 4, 0), 0);
    cua_op *f;
    ck_assert_int_eq(cua_op_fill(&f, b[k], (float)k), 0);
    ck_assert_int_eq(run_op(rt, f), 0);
    for (int i = 0; i < E; i++)
      ref[k][i] = (float)k;
  }
  uint64_t x = 88172645463325252ull + (uint64_t)_i;
  for (int dag = 0; dag < 200; dag++) {
    cua_op *acc = NULL;
    int len = 1 + (int)(x % 6);
    for (int j = 0; j < len; j++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      int d = (int)(x % NB), s = (int)((x >> 8) % NB);
      cua_op *op;
      if ((x >> 16) % 3 == 0) {
        float v = (float)((x >> 20) % 50);
        ck_assert_int_eq(cua_op_fill(&op, b[d], v), 0);
        for (int i = 0; i < E; i++)
          ref[d][i] = v;
      } else {
        ck_assert_int_eq(cua_op_axpy(&op, b[d], -1.0f, b[s]), 0);
        float t[E];
        for (int i = 0; i < E; i++)
          t[i] = ref[d][i] - ref[s][i];
        memcpy(ref[d], t, sizeof t);
      }
      if (acc == NULL) {
        acc = op;
      } else {
        cua_op *c;
        if ((x >> 30) & 1)
          ck_assert_int_eq(cua_op_then(&c, acc, op), 0);
        else
          ck_assert_int_eq(cua_op_zip(&c, (cua_op *[]){acc, op}, 2), 0);
        cua_op_destroy(acc);
        cua_op_destroy(op);
        acc = c;
      }
    }
    ck_assert_int_eq(run_op(rt, acc), 0);
  }
  for (int k = 0; k < NB; k++) {
    float h[E];
    read_back(rt, b[k], h);
    for (int i = 0; i < E; i++)
      ck_assert_msg(h[i] == ref[k][i], "policy %s: b%d[%d] = %g, expected %g",
                    policies[_i], k, i, h[i], ref[k][i]);
    cua_buffer_destroy(b[k]);
  }
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(state_survives_thousands_of_submissions) {
  cua_runtime *rt = open_pol(_i);
  cua_buffer *x;
  ck_assert_int_eq(cua_buffer_create(&x, rt, 0, 256, 0), 0);
  cua_future *f[64];
  for (int i = 0; i < 5000; i++) {
    cua_op *op;
    ck_assert_int_eq(cua_op_fill(&op, x, (float)i), 0);
    ck_assert_int_eq(cua_submit(&f[i % 64], rt, op, NULL), 0);
    cua_op_destroy(op);
    if (i % 64 == 63)
      for (int k = 0; k < 64; k++) {
        ck_assert_int_eq(cua_future_wait(f[k]), 0);
        cua_future_destroy(f[k]);
      }
  }
  for (int k = 0; k < 5000 % 64; k++) {
    ck_assert_int_eq(cua_future_wait(f[k]), 0);
    cua_future_destroy(f[k]);
  }
  float h[64];
  read_back(rt, x, h);
  ck_assert_float_eq(h[63], 4999.0f);
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt);
}
END_TEST

typedef struct thr {
  cua_runtime *rt;
  int ok;
} thr;

static void *thread_main(void *arg) {
  thr *t = arg;
  cua_buffer *x;
  if (cua_buffer_create(&x, t->rt, 0, 1024, 0))
    return NULL;
  int ok = 1;
  for (int i = 0; i < 500 && ok; i++) {
    cua_op *a, *b, *c;
    cua_op_fill(&a, x, 1.0f);
    cua_op_axpy(&b, x, 1.0f, x);
    cua_op_then(&c, a, b);
    ok = cua_submit_wait(t->rt, c, NULL, NULL) == 0;
    cua_op_destroy(a);
    cua_op_destroy(b);
    cua_op_destroy(c);
  }
  float h[256];
  cua_op *rd;
  cua_op_memcpy_d2h(&rd, h, x, 0, sizeof h);
  ok = ok && cua_submit_wait(t->rt, rd, NULL, NULL) == 0 && h[255] == 2.0f;
  cua_op_destroy(rd);
  cua_buffer_destroy(x);
  t->ok = ok;
  return NULL;
}

START_TEST(submissions_from_several_threads) {
  cua_runtime *rt = open_pol(_i);
  pthread_t th[4];
  thr t[4];
  for (int i = 0; i < 4; i++) {
    t[i].rt = rt;
    t[i].ok = 0;
    pthread_create(&th[i], NULL, thread_main, &t[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(t[i].ok, "policy %s: thread %d failed", policies[_i], i);
  }
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(open_close_many_times) {
  for (int i = 0; i < 30; i++) {
    cua_runtime *rt = open_pol(_i);
    cua_policy *p;
    ck_assert_int_eq(cua_policy_open(&p, rt, policies[_i]), 0);
    ck_assert_str_eq(cua_policy_name(p), policies[_i]);
    cua_op *op;
    ck_assert_int_eq(cua_op_spin(&op, rt, 100, 1), 0);
    cua_submit_options o = {.size = sizeof o, .policy = p};
    ck_assert_int_eq(cua_submit_wait(rt, op, &o, NULL), 0);
    cua_op_destroy(op);
    cua_policy_close(p);
    cua_runtime_destroy(rt);
  }
}
END_TEST

/* The research workflow: the policy changes between submissions, runtime
 * wide, per device and per submission, without reopening. */
START_TEST(policy_swapped_at_run_time) {
  cua_runtime *rt = open_policy("round-robin", two_devices_section());
  cua_buffer *x;
  ck_assert_int_eq(cua_buffer_create(&x, rt, 0, 1024, 0), 0);
  for (size_t i = 0; i < NPOL; i++) {
    if (strcmp(policies[i], "affinity") == 0)
      continue;
    ck_assert_msg(cua_runtime_set_policy(rt, policies[i]) == 0, "%s",
                  cua_runtime_error(rt));
    ck_assert_str_eq(cua_runtime_policy(rt), policies[i]);
    cua_op *op;
    ck_assert_int_eq(cua_op_fill(&op, x, (float)i), 0);
    ck_assert_int_eq(run_op(rt, op), 0);
  }
  ck_assert_int_eq(cua_runtime_set_device_policy(rt, 0, "single-stream"), 0);
  ck_assert_int_eq(cua_runtime_set_device_policy(rt, 0, NULL), 0);
  ck_assert_err(rt, cua_runtime_set_device_policy(rt, 9, "single-stream"),
                CUA_ERR_BAD_DEVICE, "no device 9");
  ck_assert_err(rt, cua_runtime_set_policy(rt, "nope"),
                CUA_ERR_MODULE_NOT_FOUND,
                "cua_runtime_set_policy: policy module 'nope' not found");
  ck_assert_err(rt, cua_runtime_set_device_policy(rt, 0, ""), CUA_ERR_INVAL,
                "cua_runtime_set_device_policy: no module name given");
  cua_policy *none = NULL;
  ck_assert_err(rt, cua_policy_open(&none, rt, "nope"),
                CUA_ERR_MODULE_NOT_FOUND, "cua_policy_open: policy module");
  ck_assert_ptr_null(none);
  ck_assert_str_eq(cua_runtime_policy(rt), policies[NPOL - 1]);
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("conformance");
  TCase *tc = tcase_create("every policy");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, places_every_op_kind_validly, 0, NPOL);
  tcase_add_loop_test(tc, random_dags_give_sequential_results, 0, NPOL);
  tcase_add_loop_test(tc, state_survives_thousands_of_submissions, 0, NPOL);
  tcase_add_loop_test(tc, submissions_from_several_threads, 0, NPOL);
  tcase_add_loop_test(tc, open_close_many_times, 0, NPOL);
  tcase_add_test(tc, policy_swapped_at_run_time);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  require_backend();
  earliest_register(); /* before the forks: every test inherits it */
  return run_suite(suite());
}
