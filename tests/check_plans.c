/*
 * tests/check_plans.c: a DAG submitted again is built from its root's
 * plan (core/plan.c): the plan is recorded at the root's second build
 * (none for a DAG made once), never for a DAG with a shared op or of fewer
 * than 32 nodes, and a build from it gives the nodes the walk over the ops
 * gives: what a policy is told of each op (its level, its inputs, its
 * successors, the placement its "then" continues) is the same, op for op,
 * in the second submission (built by the walk) and the third (built from
 * the plan), and the results are the same; the futures of DAGs built
 * from plans wait for every op and carry failures as built.
 *
 * Runs on the backend named by $CUASYNC_TEST_BACKEND (host by default).
 */
#include "config.h"
#include "graphs.h"
#include "helpers.h"
#include "internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the recording policy was told of one op, its op ids made relative
 * to the submission's first op. */
typedef struct seen {
  uint64_t rel;
  int kind;
  uint32_t level;
  size_t ninputs, nsuccessors;
  uint64_t inputs[8]; /* relative, in the order given */
  int then_of_stream;
} seen;

#define MAX_SEEN 512
static seen log_v[MAX_SEEN];
static size_t log_n;
static uint64_t log_base; /* the submission's first op id */

/* "recorder": one stream per op kind's parity, so that "then" sources
 * land on a stream of their own; records what it is told. */
static int rec_create(const cua_policy_host *host,
                      const cua_param_value *params, void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 2);
}

static int rec_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  if (log_n < MAX_SEEN) {
    if (log_n == 0 || op->op_id < log_base)
      log_base = op->op_id;
    seen *s = &log_v[log_n++];
    memset(s, 0, sizeof *s);
    s->rel = op->op_id;
    s->kind = op->kind;
    s->level = op->level;
    s->ninputs = op->ninputs;
    s->nsuccessors = op->nsuccessors;
    for (size_t i = 0; i < op->ninputs && i < 8; i++)
      s->inputs[i] = op->inputs[i].op_id;
    s->then_of_stream = op->then_of.stream;
  }
  out->device = 0;
  out->stream = (int)(op->kind % 2);
  return 0;
}

static const cua_policy_descriptor recorder =
    CUA_POLICY_INIT(.name = "recorder", .version = "1",
                    .description = "records what it is told",
                    .create = rec_create, .place = rec_place);

static int by_rel(const void *a, const void *b) {
  const seen *x = a, *y = b;
  return x->rel < y->rel ? -1 : x->rel > y->rel;
}

/* The log of one submission, its ids relative and sorted (the order of
 * placements may vary with the chunks' timing; what each op is told may
 * not). */
static size_t take_log(seen *out) {
  size_t n = log_n;
  for (size_t i = 0; i < n; i++) {
    out[i] = log_v[i];
    out[i].rel -= log_base;
    for (size_t k = 0; k < out[i].ninputs && k < 8; k++)
      out[i].inputs[k] -= log_base;
  }
  qsort(out, n, sizeof *out, by_rel);
  log_n = 0;
  return n;
}

static cua_runtime *open_recorder(void) {
  int rc = cua_policy_register(&recorder);
  ck_assert(rc == 0 || rc == CUA_ERR_INVAL); /* registered already */
  return open_policy("recorder", NULL);
}

static cua_op *spin(cua_runtime *rt, uint64_t ns) {
  cua_op *op = NULL;
  ck_assert_int_eq(cua_op_spin(&op, rt, ns, 1), 0);
  return op;
}

static cua_op *then2(cua_op *a, cua_op *b) {
  cua_op *t = NULL;
  ck_assert_int_eq(cua_op_then(&t, a, b), 0);
  cua_op_destroy(a);
  cua_op_destroy(b);
  return t;
}

/* A DAG of every shape the walk treats apart: a chain of thens, zips of
 * two and three parts, "then(zip(a, b), op)" (built without the zip's
 * node), a named then (which keeps its node), fills and axpys on two
 * buffers (buffer hazards); about 60 nodes. */
static cua_op *mixed_dag(cua_runtime *rt, cua_buffer *x, cua_buffer *y) {
  cua_op *acc = NULL;
  for (int i = 0; i < 12; i++) {
    cua_op *a = spin(rt, 1000), *b = NULL, *c = NULL;
    ck_assert_int_eq(cua_op_fill(&b, i % 2 ? x : y, (float)i), 0);
    ck_assert_int_eq(cua_op_axpy(&c, x, 1.0f, y), 0);
    cua_op *parts[3] = {a, b, spin(rt, 2000)};
    cua_op *z = NULL;
    ck_assert_int_eq(cua_op_zip(&z, parts, i % 3 == 0 ? 2 : 3), 0);
    for (int k = 0; k < 3; k++)
      cua_op_destroy(parts[k]);
    cua_op *step = then2(z, c); /* then(zip(...), op) */
    if (i % 4 == 1) {
      cua_hints h = CUA_HINTS_INIT;
      h.name = "named";
      ck_assert_int_eq(cua_op_set_hints(step, &h), 0);
    }
    acc = acc == NULL ? step : then2(acc, step);
  }
  return acc;
}

static void read_x(cua_runtime *rt, cua_buffer *x, float *out, size_t bytes) {
  cua_op *rd = NULL;
  ck_assert_int_eq(cua_op_memcpy_d2h(&rd, out, x, 0, bytes), 0);
  ck_assert_int_eq(cua_submit_wait(rt, rd, NULL, NULL), 0);
  cua_op_destroy(rd);
}

static void submit_wait(cua_runtime *rt, cua_op *op) {
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_msg(cua_future_wait(f) == 0, "%s", cua_future_error(f));
  cua_future_destroy(f);
}

START_TEST(a_plan_builds_what_the_walk_builds) {
  cua_runtime *rt = open_recorder();
  cua_buffer *x = NULL, *y = NULL;
  ck_assert_int_eq(cua_buffer_create(&x, rt, 0, 256, 0), 0);
  ck_assert_int_eq(cua_buffer_create(&y, rt, 0, 256, 0), 0);
  cua_op *dag = mixed_dag(rt, x, y);
  static seen first[MAX_SEEN], third[MAX_SEEN];
  float v0[64], v1[64], v3[64];
  submit_wait(rt, dag);
  read_x(rt, x, v0, sizeof v0);
  ck_assert_ptr_eq(dag->plan, CUA__PLAN_SEEN); /* one build: no plan */
  /* Compared: the second submission (the walk's) and the third (the
   * plan's), each after one of the same DAG and a read-back of x, whose
   * buffer hazards give both the same inputs from before. */
  log_n = 0;
  submit_wait(rt, dag);
  size_t n1 = take_log(first);
  read_x(rt, x, v1, sizeof v1);
  ck_assert(dag->plan != NULL && dag->plan != CUA__PLAN_SEEN &&
            dag->plan != CUA__PLAN_NONE); /* recorded at the second */
  log_n = 0;                              /* (the read-back was placed too) */
  submit_wait(rt, dag);
  size_t n3 = take_log(third);
  read_x(rt, x, v3, sizeof v3);
  ck_assert_uint_gt(n1, 40);
  ck_assert_uint_eq(n1, n3);
  for (size_t i = 0; i < n1; i++) {
    const seen *a = &first[i], *b = &third[i];
    ck_assert_uint_eq(a->rel, b->rel);
    ck_assert_int_eq(a->kind, b->kind);
    ck_assert_uint_eq(a->level, b->level);
    ck_assert_uint_eq(a->ninputs, b->ninputs);
    ck_assert_uint_eq(a->nsuccessors, b->nsuccessors);
    ck_assert_int_eq(a->then_of_stream, b->then_of_stream);
    for (size_t k = 0; k < a->ninputs && k < 8; k++)
      ck_assert_uint_eq(a->inputs[k], b->inputs[k]);
  }
  /* The DAG ends with fills and axpys of x: the same values each time
   * (its first op is a fill of y, then every step rewrites both). */
  ck_assert_mem_eq(v0, v1, sizeof v1);
  ck_assert_mem_eq(v1, v3, sizeof v1);
  cua_op_destroy(dag);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* A chain of @p n spins of 1 us. */
static cua_op *spins(cua_runtime *rt, int n) {
  cua_op *acc = spin(rt, 1000);
  for (int i = 1; i < n; i++)
    acc = then2(acc, spin(rt, 1000));
  return acc;
}

/* A spin with @p f consumers, then a spin after all of them. */
static cua_op *fan(cua_runtime *rt, int f) {
  cua_op *parts[64], *wide = NULL;
  for (int i = 0; i < f; i++)
    parts[i] = spin(rt, 0);
  ck_assert_int_eq(cua_op_zip(&wide, parts, (size_t)f), 0);
  for (int i = 0; i < f; i++)
    cua_op_destroy(parts[i]);
  return then2(then2(spin(rt, 0), wide), spin(rt, 0));
}

/* A DAG without buffers built from its plan reserves its nodes'
 * dependents as it builds them (plan.c, cua__build_from_plan()), and the
 * hazard stages skip it. Fans of 5, 17 and 33 consumers, and of as many
 * producers, each one past what a node holds inline (4) or an edge
 * block (16, 32), so that a count one short overflows; then a chain.
 * Five submissions: the policy hears of the same ops, inputs and
 * successors from the plan's builds as from the walk's, and a miscounted
 * reservation would fail an op ("dependents not reserved"). */
START_TEST(a_plan_without_buffers_reserves_every_edge) {
  cua_runtime *rt = open_recorder();
  cua_op *dag =
      then2(then2(fan(rt, 5), fan(rt, 17)), then2(fan(rt, 33), spins(rt, 8)));
  static seen walk[MAX_SEEN], planned[MAX_SEEN];
  size_t nw = 0;
  for (int k = 0; k < 5; k++) {
    log_n = 0;
    submit_wait(rt, dag);
    if (k == 1)
      nw = take_log(walk);
    if (k < 2)
      continue;
    ck_assert(dag->plan != NULL && dag->plan != CUA__PLAN_SEEN &&
              dag->plan != CUA__PLAN_NONE);
    size_t np = take_log(planned);
    ck_assert_uint_eq(np, nw);
    ck_assert_uint_eq(np, 5 + 17 + 33 + 3 * 2 + 8);
    int fans_out = 0, fans_in = 0;
    for (size_t i = 0; i < np; i++) {
      ck_assert_uint_eq(walk[i].rel, planned[i].rel);
      ck_assert_uint_eq(walk[i].ninputs, planned[i].ninputs);
      ck_assert_uint_eq(walk[i].nsuccessors, planned[i].nsuccessors);
      for (size_t j = 0; j < walk[i].ninputs && j < 8; j++)
        ck_assert_uint_eq(walk[i].inputs[j], planned[i].inputs[j]);
      size_t o = planned[i].nsuccessors, in = planned[i].ninputs;
      fans_out += o == 5 || o == 17 || o == 33;
      fans_in += in == 5 || in == 17 || in == 33;
    }
    ck_assert_int_eq(fans_out, 3);
    ck_assert_int_eq(fans_in, 3);
  }
  cua_op_destroy(dag);
  cua_runtime_destroy(rt);
}
END_TEST

/* A DAG with a buffer, built from its plan, whose buffer was freed since:
 * refused whole with the usual message (the build counted the buffer's
 * access, so validation runs), and the runtime goes on. */
START_TEST(a_planned_dag_whose_buffer_was_freed_is_refused) {
  cua_runtime *rt = open_recorder();
  cua_buffer *x = NULL;
  ck_assert_int_eq(cua_buffer_create(&x, rt, 0, 256, 0), 0);
  cua_op *dag = spins(rt, 40), *fill = NULL, *fr = NULL;
  ck_assert_int_eq(cua_op_fill(&fill, x, 1.0f), 0);
  dag = then2(dag, fill);
  for (int k = 0; k < 3; k++)
    submit_wait(rt, dag);
  ck_assert(dag->plan != NULL && dag->plan != CUA__PLAN_SEEN &&
            dag->plan != CUA__PLAN_NONE);
  ck_assert_int_eq(cua_op_free(&fr, x), 0);
  submit_wait(rt, fr);
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit(&f, rt, dag, NULL), CUA_ERR_FREED);
  ck_assert_ptr_null(f);
  ck_assert_msg(strstr(cua_runtime_error(rt), "freed") != NULL, "%s",
                cua_runtime_error(rt));
  cua_op *after = spins(rt, 40);
  for (int k = 0; k < 3; k++)
    submit_wait(rt, after);
  log_n = 0;
  cua_op_destroy(after);
  cua_op_destroy(fr);
  cua_op_destroy(dag);
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt);
}
END_TEST

/* A DAG with a shared op is built every time (the shared op's node is an
 * earlier submission's), and so is one of fewer than 32 nodes. */
START_TEST(no_plan_for_shared_ops_or_small_dags) {
  cua_runtime *rt = open_recorder();
  cua_op *inner = spin(rt, 0), *sh = NULL;
  ck_assert_int_eq(cua_op_shared(&sh, inner), 0);
  cua_op_destroy(inner);
  cua_op *acc = cua_op_retain(sh);
  for (int i = 0; i < 40; i++)
    acc = then2(acc, spin(rt, 0));
  for (int k = 0; k < 3; k++)
    submit_wait(rt, acc);
  ck_assert_ptr_eq(acc->plan, CUA__PLAN_NONE);
  cua_op *small = spin(rt, 0);
  for (int i = 0; i < 10; i++)
    small = then2(small, spin(rt, 0));
  for (int k = 0; k < 3; k++)
    submit_wait(rt, small);
  ck_assert_ptr_eq(small->plan, CUA__PLAN_NONE);
  log_n = 0;
  cua_op_destroy(small);
  cua_op_destroy(acc);
  cua_op_destroy(sh);
  cua_runtime_destroy(rt);
}
END_TEST

/* ------------------------------------- futures of DAGs built from plans */

static atomic_int host_runs;
static int tokens[2];

/* A host step that counts its runs and gives &tokens[arg]. */
static int host_token(void *arg, void **result) {
  atomic_fetch_add(&host_runs, 1);
  *result = &tokens[(intptr_t)arg];
  return 0;
}

static int host_fails(void *arg, void **result) {
  (void)arg;
  *result = NULL;
  return -1;
}

/* A map that gives its input's result on. */
static int map_same(void *in, void *arg, void **out) {
  (void)arg;
  *out = in;
  return 0;
}

static cua_op *host_op(cua_runtime *rt, cua_host_fn fn, intptr_t arg) {
  cua_op *op = NULL;
  ck_assert_int_eq(cua_op_host(&op, rt, fn, (void *)arg), 0);
  return op;
}

/* Submits @p dag, waits, and returns its future's code; its result in
 * *res, or for a zip root (@p zip) its first two results in res[0] and
 * res[1], copied while the future lives (a zip's array lives with it). */
static int run_result(cua_runtime *rt, cua_op *dag, int zip, void **res) {
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit(&f, rt, dag, NULL), 0);
  int rc = cua_future_wait(f);
  void *r = NULL;
  res[0] = res[1] = NULL;
  if (rc == 0)
    ck_assert_int_eq(cua_future_result(f, &r), 0);
  if (rc == 0 && zip) {
    ck_assert_ptr_nonnull(r);
    res[0] = ((void **)r)[0];
    res[1] = ((void **)r)[1];
  } else {
    res[0] = r;
  }
  cua_future_destroy(f);
  return rc;
}

/* What the recorder cannot see, on DAGs whose roots are not device ops,
 * submitted five times (built from their plans from the third on): the
 * future waits for every op of its submission (the plan's watches) and
 * gives the root's result, and a failure reaches the ops that depend on
 * it (the edges' flags). Roots: a map of a host step after a chain; a
 * zip of a chain ending in a host step and a host step; a then whose
 * next part is a zip of two host steps (the then has no node: the zip's
 * stands for it, and the submission watches it); a chain through a host
 * step that fails. */
START_TEST(futures_of_plans_wait_for_every_op_and_fail_as_built) {
  cua_runtime *rt = open_recorder();
  cua_op *mapped = NULL, *in = then2(spins(rt, 40), host_op(rt, host_token, 0));
  ck_assert_int_eq(cua_op_map(&mapped, in, map_same, NULL), 0);
  cua_op_destroy(in);
  cua_op *parts[2] = {then2(spins(rt, 40), host_op(rt, host_token, 0)),
                      host_op(rt, host_token, 1)};
  cua_op *zipped = NULL;
  ck_assert_int_eq(cua_op_zip(&zipped, parts, 2), 0);
  cua_op_destroy(parts[0]);
  cua_op_destroy(parts[1]);
  cua_op *hz[2] = {host_op(rt, host_token, 0), host_op(rt, host_token, 1)};
  cua_op *z2 = NULL;
  ck_assert_int_eq(cua_op_zip(&z2, hz, 2), 0);
  cua_op_destroy(hz[0]);
  cua_op_destroy(hz[1]);
  cua_op *then_zip = then2(spins(rt, 40), z2);
  cua_op *failing =
      then2(then2(spins(rt, 40), host_op(rt, host_fails, 0)), spins(rt, 3));
  for (int k = 0; k < 5; k++) {
    void *res[2];
    atomic_store(&host_runs, 0);
    ck_assert_int_eq(run_result(rt, mapped, 0, res), 0);
    ck_assert_int_eq(atomic_load(&host_runs), 1);
    ck_assert_ptr_eq(res[0], &tokens[0]);
    ck_assert_int_eq(run_result(rt, zipped, 1, res), 0);
    ck_assert_int_eq(atomic_load(&host_runs), 3);
    ck_assert_ptr_eq(res[0], &tokens[0]);
    ck_assert_ptr_eq(res[1], &tokens[1]);
    ck_assert_int_eq(run_result(rt, then_zip, 1, res), 0);
    ck_assert_int_eq(atomic_load(&host_runs), 5);
    ck_assert_ptr_eq(res[0], &tokens[0]);
    ck_assert_ptr_eq(res[1], &tokens[1]);
    int rc = run_result(rt, failing, 0, res);
    ck_assert_msg(rc == CUA_ERR_DEPENDENCY || rc == CUA_ERR_OP_FAILED,
                  "submission %d: %s", k, cua_err_name(rc));
  }
  cua_op *roots[4] = {mapped, zipped, then_zip, failing};
  for (int i = 0; i < 4; i++)
    ck_assert(roots[i]->plan != NULL && roots[i]->plan != CUA__PLAN_NONE &&
              roots[i]->plan != CUA__PLAN_SEEN);
  log_n = 0;
  cua_op_destroy(mapped);
  cua_op_destroy(zipped);
  cua_op_destroy(then_zip);
  cua_op_destroy(failing);
  cua_runtime_destroy(rt);
}
END_TEST

static uint64_t staged_builds(cua_runtime *rt) {
  cua_stats st;
  memset(&st, 0, sizeof st);
  st.size = sizeof st;
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  return st.builds_staged;
}

/* A chain of 3,000 spins and a host step, submitted again, is built from
 * its plan a chunk at a time as its round decides it (plan.c, stages):
 * from its third submission on (the second records the plan and each
 * op's successors), cua_stats.builds_staged counts it; the policy is told
 * the same of each op as when the walk built it whole (level, inputs,
 * successors: the last op of a chunk too, whose successor is not made
 * when it is placed); the host step runs once each time, with its result.
 * Two such chains zipped, whose levels fall in the build order (the
 * second chain starts again at level 0), are built whole. */
START_TEST(a_large_chain_is_built_as_it_runs) {
  cua_runtime *rt = open_recorder();
  cua_op *chain = then2(spins(rt, 3000), host_op(rt, host_token, 1));
  static seen walk[MAX_SEEN], staged[MAX_SEEN];
  size_t nw = 0;
  for (int k = 0; k < 5; k++) {
    log_n = 0;
    void *res[2];
    atomic_store(&host_runs, 0);
    ck_assert_int_eq(run_result(rt, chain, 0, res), 0);
    ck_assert_int_eq(atomic_load(&host_runs), 1);
    ck_assert_ptr_eq(res[0], &tokens[1]);
    ck_assert_uint_eq(staged_builds(rt), k < 2 ? 0 : (uint64_t)k - 1);
    if (k == 1)
      nw = take_log(walk);
    if (k < 2)
      continue;
    /* (the log keeps the first MAX_SEEN placements: chunks end after 64
     * nodes, then every 256) */
    size_t ns = take_log(staged);
    ck_assert_uint_eq(ns, nw);
    ck_assert_uint_eq(ns, MAX_SEEN);
    for (size_t i = 0; i < ns; i++) {
      ck_assert_uint_eq(walk[i].rel, staged[i].rel);
      ck_assert_uint_eq(walk[i].level, staged[i].level);
      ck_assert_uint_eq(walk[i].ninputs, staged[i].ninputs);
      ck_assert_msg(walk[i].nsuccessors == staged[i].nsuccessors,
                    "op %zu: %zu successors built whole, %zu in chunks", i,
                    walk[i].nsuccessors, staged[i].nsuccessors);
      for (size_t j = 0; j < walk[i].ninputs && j < 8; j++)
        ck_assert_uint_eq(walk[i].inputs[j], staged[i].inputs[j]);
    }
  }
  cua_op *parts[2] = {spins(rt, 1500), spins(rt, 1500)}, *two = NULL;
  ck_assert_int_eq(cua_op_zip(&two, parts, 2), 0);
  cua_op_destroy(parts[0]);
  cua_op_destroy(parts[1]);
  for (int k = 0; k < 4; k++)
    submit_wait(rt, two);
  ck_assert(two->plan != NULL && two->plan != CUA__PLAN_SEEN &&
            two->plan != CUA__PLAN_NONE);
  ck_assert_uint_eq(staged_builds(rt), 3);
  log_n = 0;
  cua_op_destroy(two);
  cua_op_destroy(chain);
  cua_runtime_destroy(rt);
}
END_TEST

/* The same chain under round-robin, its ops on alternating streams: each
 * waits for the one before it across streams, at the chunks' ends too;
 * several submissions of it in flight at once, every one completes. */
START_TEST(a_chain_built_as_it_runs_waits_across_streams) {
  cua_runtime *rt = open_policy("round-robin", NULL);
  cua_op *chain = then2(spins(rt, 2500), host_op(rt, host_token, 0));
  for (int k = 0; k < 3; k++)
    submit_wait(rt, chain);
  cua_future *f[4];
  for (int k = 0; k < 4; k++)
    ck_assert_int_eq(cua_submit(&f[k], rt, chain, NULL), 0);
  for (int k = 0; k < 4; k++) {
    ck_assert_msg(cua_future_wait(f[k]) == 0, "%s", cua_future_error(f[k]));
    void *r = NULL;
    ck_assert_int_eq(cua_future_result(f[k], &r), 0);
    ck_assert_ptr_eq(r, &tokens[0]);
    cua_future_destroy(f[k]);
  }
  ck_assert_uint_eq(staged_builds(rt), 5);
  cua_op_destroy(chain);
  cua_runtime_destroy(rt);
}
END_TEST

/* A node of a chain built as it runs that cannot be made (out of host
 * memory, injected at the k-th allocation of the pools once the first
 * chunk is made): what was made runs, nothing more is made, and the
 * future fails with CUA_ERR_NOMEM and says how far the build got; the
 * runtime goes on, and the next submission of the chain succeeds. */
START_TEST(a_chain_that_runs_out_of_memory_as_it_is_built_fails_its_future) {
  cua_runtime *rt = open_recorder();
  cua_op *chain = then2(spins(rt, 2000), host_op(rt, host_token, 0));
  for (int k = 0; k < 3; k++)
    submit_wait(rt, chain);
  ck_assert_uint_eq(staged_builds(rt), 1);
  int failed = 0;
  for (long at = 200; at <= 1800; at += 800) {
    log_n = 0;
    cua__fault_arm(CUA__FAULT_ALLOC, at);
    cua_future *f = NULL;
    int rc = cua_submit(&f, rt, chain, NULL);
    int frc = rc == 0 ? cua_future_wait(f) : rc;
    cua__fault_arm(CUA__FAULT_ALLOC, 0);
    if (rc == 0 && frc != 0) {
      ck_assert_int_eq(frc, CUA_ERR_NOMEM);
      ck_assert_msg(strstr(cua_future_error(f), "out of host memory after") !=
                        NULL,
                    "%s", cua_future_error(f));
      failed++;
    }
    if (f != NULL)
      cua_future_destroy(f);
    log_n = 0;
    submit_wait(rt, chain);
  }
  ck_assert_int_ge(failed, 1);
  log_n = 0;
  cua_op_destroy(chain);
  cua_runtime_destroy(rt);
}
END_TEST

/* A stream function that submits one fill and keeps its future. */
typedef struct nested_spin {
  cua_runtime *rt;
  cua_buffer *buf;
  cua_future *fut[8];
  int n, rc;
} nested_spin;

static int submit_spin_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  nested_spin *ns = arg;
  cua_op *op = NULL;
  int rc = cua_op_fill(&op, ns->buf, 1.0f);
  if (rc == 0 && ns->n < 8)
    rc = cua_submit(&ns->fut[ns->n++], ns->rt, op, NULL);
  cua_op_destroy(op);
  if (rc != 0)
    ns->rc = rc;
  return 0;
}

/* A submission made between a chain's chunks, by a stream function of
 * the chain (on a backend that runs it at launch, the launchtime one, it
 * runs while the round applies its first chunks with rt->lock released,
 * under launch = caller): its op comes after every op of the chain, as
 * after a whole build, since a stage takes its op ids at its start. The
 * policy is told the same ids of the chain's ops, relative, in the
 * walk's build and the stages' (the fill, placed whenever the stream
 * function runs, aside). */
START_TEST(a_submission_between_chunks_comes_after_the_chain) {
  int rc = cua_policy_register(&recorder);
  ck_assert(rc == 0 || rc == CUA_ERR_INVAL); /* registered already */
  cua_runtime *rt = open_policy("recorder", "launch = caller\n");
  nested_spin ns;
  memset(&ns, 0, sizeof ns);
  ns.rt = rt;
  ck_assert_int_eq(cua_buffer_create(&ns.buf, rt, 0, 256, 0), 0);
  cua_op *fn = NULL;
  ck_assert_int_eq(cua_op_func(&fn, rt, submit_spin_fn, &ns, NULL, 0), 0);
  cua_op *chain = then2(then2(spins(rt, 40), fn), spins(rt, 2000));
  static seen walk[MAX_SEEN], staged[MAX_SEEN];
  size_t nw = 0;
  for (int k = 0; k < 4; k++) {
    log_n = 0;
    submit_wait(rt, chain);
    ck_assert_int_eq(ns.rc, 0);
    ck_assert_int_eq(ns.n, k + 1);
    ck_assert_msg(cua_future_wait(ns.fut[k]) == 0, "%s",
                  cua_future_error(ns.fut[k]));
    ck_assert_uint_eq(staged_builds(rt), k < 2 ? 0 : (uint64_t)k - 1);
    if (k == 1)
      nw = take_log(walk);
    if (k < 2)
      continue;
    size_t n = take_log(staged), a = 0, b = 0, same = 0;
    for (; a < nw && b < n; a++, b++) {
      while (a < nw && walk[a].kind == CUA_OP_FILL)
        a++;
      while (b < n && staged[b].kind == CUA_OP_FILL)
        b++;
      if (a == nw || b == n)
        break;
      ck_assert_msg(walk[a].rel == staged[b].rel,
                    "the chain's op %zu: id %llu built whole, %llu in chunks",
                    same, (unsigned long long)walk[a].rel,
                    (unsigned long long)staged[b].rel);
      same++;
    }
    ck_assert_uint_ge(same, MAX_SEEN - 2);
  }
  for (int k = 0; k < ns.n; k++)
    cua_future_destroy(ns.fut[k]);
  cua_buffer_destroy(ns.buf);
  log_n = 0;
  cua_op_destroy(chain);
  cua_runtime_destroy(rt);
}
END_TEST

/* Barriers submitted while a chain is built as it runs (from a stream
 * function early in it: between the stage's chunks on the launchtime
 * backend): a barrier waits for the chain's ops made so far, but must not
 * take the room a node keeps in its dependents for successors of a later
 * chunk. With four barriers the last node of the first chunk had its room
 * taken, and the next chunk failed ("dependents not reserved"). */
typedef struct barrier_submitter {
  cua_runtime *rt;
  int armed, n, rc;
  cua_future *fut[64];
} barrier_submitter;

static barrier_submitter bsub;

/* A stream function of the chain: the one marked submits four barriers. */
static int chain_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  if (arg == NULL || !bsub.armed)
    return 0;
  bsub.armed = 0;
  for (int k = 0; k < 4 && bsub.rc == 0; k++) {
    cua_op *b = NULL;
    bsub.rc = cua_op_barrier(&b, bsub.rt);
    if (bsub.rc == 0)
      bsub.rc = cua_submit(&bsub.fut[bsub.n], bsub.rt, b, NULL);
    if (bsub.rc == 0)
      bsub.n++;
    cua_op_destroy(b);
  }
  return 0;
}

static int host_nothing(void *arg, void **result) {
  (void)arg;
  *result = NULL;
  return 0;
}

/* A chain of 2,000 stream functions, the sixth submitting (chain_fn),
 * with a host step at @p host (or none: -1); bsub reset for @p rt. */
static cua_op *submitting_chain(cua_runtime *rt, int host) {
  memset(&bsub, 0, sizeof bsub);
  bsub.rt = rt;
  cua_op *chain = NULL;
  for (int i = 0; i < 2000; i++) {
    cua_op *f = NULL;
    if (i == host)
      ck_assert_int_eq(cua_op_host(&f, rt, host_nothing, NULL), 0);
    else
      ck_assert_int_eq(
          cua_op_func(&f, rt, chain_fn, i == 5 ? (void *)1 : NULL, NULL, 0), 0);
    chain = chain == NULL ? f : then2(chain, f);
  }
  return chain;
}

/* Waits for and frees the futures chain_fn's submissions made. */
static void wait_submitted(int want) {
  ck_assert_int_eq(bsub.n, want);
  for (int i = 0; i < bsub.n; i++) {
    ck_assert_int_eq(cua_future_wait(bsub.fut[i]), 0);
    cua_future_destroy(bsub.fut[i]);
  }
}

START_TEST(barriers_between_chunks_leave_the_chain_its_room) {
  cua_runtime *rt = open_policy("single-stream", "launch = caller\n");
  /* A host step at 30 keeps the first chunk's last ops pending when the
   * sixth op runs, so that the barriers take edges to them: four fill the
   * last one's inline room, which its successor in the next chunk was to
   * take. */
  cua_op *chain = submitting_chain(rt, 30);
  for (int k = 0; k < 5; k++) {
    bsub.armed = k >= 3;
    cua_future *f = NULL;
    ck_assert_int_eq(cua_submit(&f, rt, chain, NULL), 0);
    ck_assert_msg(cua_future_wait(f) == 0, "submission %d: %.200s", k,
                  cua_future_error(f));
    cua_future_destroy(f);
    ck_assert_int_eq(bsub.rc, 0);
  }
  ck_assert_uint_ge(staged_builds(rt), 2);
  wait_submitted(8);
  cua_op_destroy(chain);
  cua_runtime_destroy(rt);
}
END_TEST

/* The same chain under the default launch mode, where a long one is
 * relayed (its deciding goes on on a launch thread while this thread
 * launches): on a backend that runs stream functions at launch (CUDA,
 * launchtime), a stream function that submits had its submission applied
 * after chunks the launch thread decided after it, and both waited for
 * their turns on the stream (a hang, the submission whole or built as it
 * runs): the launch thread took rt->lock some time after it was woken, and
 * the stream function's submission could take it first. Such a submission
 * now waits until the round is decided (flush.c). */
START_TEST(a_long_chain_whose_stream_function_submits_does_not_hang) {
  cua_runtime *rt = open_policy("single-stream", NULL);
  cua_op *chain = submitting_chain(rt, -1);
  for (int k = 0; k < 4; k++) {
    bsub.armed = 1;
    cua_future *f = NULL;
    ck_assert_int_eq(cua_submit(&f, rt, chain, NULL), 0);
    ck_assert_int_eq(cua_future_wait(f), 0);
    cua_future_destroy(f);
    ck_assert_int_eq(bsub.rc, 0);
  }
  wait_submitted(16);
  cua_op_destroy(chain);
  cua_runtime_destroy(rt);
}
END_TEST

/* The graph cache takes a reference to a graph for a launch under way;
 * a policy swap can drop the graph from the cache (cua_graph_destroy())
 * before that launch is made. The launch then made a launch op that the
 * dropped graph kept, and that held it for ever: a service swapping
 * policies kept every such graph, its streams' threads and its buffers'
 * memory. Now such a launch keeps no op, and the graph goes with the
 * cache's reference. (The interleaving, made here in order.) */
START_TEST(a_graph_dropped_before_its_launch_goes_after_it) {
  cua_runtime *rt = open_policy("round-robin", NULL);
  cua_buffer *b = NULL;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 4096, 0), 0);
  cua_op *fill = NULL;
  ck_assert_int_eq(cua_op_fill(&fill, b, 3.0f), 0);
  cua_graph *g = NULL;
  ck_assert_int_eq(cua_graph_create(&g, rt, fill, NULL), 0);
  atomic_fetch_add(&g->refs, 1); /* the cache's, for its launch */
  cua_graph_destroy(g);          /* the cache drops it */
  cua_future *f = NULL;
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua__graph_release(g); /* the launch's holder lets it go */
  ck_assert_int_eq(cua_runtime_synchronize(rt), 0);
  cua__graphs_reap(rt);
  pthread_mutex_lock(&rt->reg_lock);
  int left = 0;
  for (cua_graph *x = rt->graphs; x != NULL; x = x->reg_next)
    left++;
  pthread_mutex_unlock(&rt->reg_lock);
  ck_assert_int_eq(left, 0);
  cua_op_destroy(fill);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("plans");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, a_plan_builds_what_the_walk_builds);
  tcase_add_test(tc, no_plan_for_shared_ops_or_small_dags);
  tcase_add_test(tc, a_plan_without_buffers_reserves_every_edge);
  tcase_add_test(tc, a_planned_dag_whose_buffer_was_freed_is_refused);
  tcase_add_test(tc, futures_of_plans_wait_for_every_op_and_fail_as_built);
  tcase_add_test(tc, a_large_chain_is_built_as_it_runs);
  tcase_add_test(tc, a_chain_built_as_it_runs_waits_across_streams);
  tcase_add_test(
      tc, a_chain_that_runs_out_of_memory_as_it_is_built_fails_its_future);
  tcase_add_test(tc, a_submission_between_chunks_comes_after_the_chain);
  tcase_add_test(tc, barriers_between_chunks_leave_the_chain_its_room);
  tcase_add_test(tc, a_long_chain_whose_stream_function_submits_does_not_hang);
  tcase_add_test(tc, a_graph_dropped_before_its_launch_goes_after_it);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  require_backend();
  return run_suite(suite());
}
