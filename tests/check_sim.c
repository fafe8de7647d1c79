/*
 * tests/check_sim.c: the sim backend (plugins/sim/): makespans of cases
 * with a closed-form answer (a chain, independent ops over streams, ops
 * sharing a GPU, transfers sharing a link, peer and cross-node copies);
 * virtual time seen by the program and by policies; identical traces run
 * after run; refusals of bad sections and machine files with file and
 * line; a placement on a GPU the machine lacks.
 */
#include "helpers.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Machine without per-op overhead, so that makespans are the closed form. */
#define EXACT "launch_ns = 0\n"

static cua_runtime *open_sim_streams(const char *policy, const char *sim,
                                     int streams) {
  char text[4096];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = sim\npolicy = %s\n[policy.%s]\nstreams = %d\n"
           "[backend.sim]\n%s",
           policy, policy, streams, sim);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  ck_assert_msg(rc == 0, "runtime: %s: %s", cua_err_name(rc),
                cua_runtime_error(NULL));
  return rt;
}

static cua_runtime *open_sim(const char *policy, const char *sim) {
  return open_sim_streams(policy, sim, 4);
}

/* Submits every op of @p ops on (device, stream) of @p where (a stream
 * below 0: where the policy places it), waits for them all and returns
 * the virtual time it took. */
static uint64_t run_on(cua_runtime *rt, cua_op **ops, int n, const int *dev,
                       const int *stream) {
  cua_future *f[64];
  ck_assert_int_le(n, 64);
  uint64_t t0 = cua_runtime_now_ns(rt);
  for (int i = 0; i < n; i++) {
    int rc = stream[i] < 0 ? cua_submit(&f[i], rt, ops[i], NULL)
                           : cua_submit_on(&f[i], rt, ops[i], dev ? dev[i] : 0,
                                           stream[i]);
    ck_assert_msg(rc == 0, "submit: %s", cua_runtime_error(rt));
  }
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(cua_future_wait(f[i]), 0);
    cua_future_destroy(f[i]);
    cua_op_destroy(ops[i]);
  }
  return cua_runtime_now_ns(rt) - t0;
}

#define ck_assert_ns(got, want)                                                \
  do {                                                                         \
    uint64_t g_ = (got), w_ = (want);                                          \
    ck_assert_msg(g_ + 2 >= w_ && g_ <= w_ + 2, "%llu ns, expected %llu",      \
                  (unsigned long long)g_, (unsigned long long)w_);             \
  } while (0)

START_TEST(chain) {
  /* Ten 100 us spins on one stream: 1 ms. */
  cua_runtime *rt = open_sim("round-robin", EXACT);
  ck_assert_str_eq(cua_runtime_backend(rt), "sim");
  cua_op *ops[10];
  int st[10] = {0};
  for (int i = 0; i < 10; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 100000, 1), 0);
  ck_assert_ns(run_on(rt, ops, 10, NULL, st), 1000000);
  /* With 3 us of overhead per op: 1.03 ms. */
  cua_runtime_destroy(rt);
  rt = open_sim("round-robin", "launch_ns = 3000\n");
  for (int i = 0; i < 10; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 100000, 1), 0);
  ck_assert_ns(run_on(rt, ops, 10, NULL, st), 1030000);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(independent_streams) {
  /* 16 one-block spins of 100 us over 4 streams: 4 rounds, 400 us. */
  cua_runtime *rt = open_sim("round-robin", EXACT);
  cua_op *ops[16];
  int st[16];
  for (int i = 0; i < 16; i++) {
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 100000, 1), 0);
    st[i] = i % 4;
  }
  ck_assert_ns(run_on(rt, ops, 16, NULL, st), 400000);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(shared_gpu) {
  /* Whole-GPU spins (as many blocks as SMs) on 4 streams share the GPU:
   * four of 100 us at once end together at 400 us. Half-GPU ones: two run
   * at full speed, four take 200 us. */
  cua_runtime *rt = open_sim("round-robin", EXACT "sms = 8\n");
  cua_op *ops[4];
  int st[4] = {0, 1, 2, 3};
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 100000, 8), 0);
  ck_assert_ns(run_on(rt, ops, 4, NULL, st), 400000);
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 100000, 4), 0);
  ck_assert_ns(run_on(rt, ops, 4, NULL, st), 200000);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(shared_link) {
  /* 10 MB host-to-GPU at 10 GB/s with 2 us latency: 1.002 ms alone; two
   * at once on two streams share the GPU's PCIe link: 2.002 ms. */
  cua_runtime *rt =
      open_sim("round-robin", EXACT "pcie_gbps = 10\npcie_latency_ns = 2000\n");
  size_t bytes = 10000000;
  char *host = malloc(bytes);
  ck_assert_ptr_nonnull(host);
  cua_buffer *b[2];
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(cua_buffer_create(&b[i], rt, 0, bytes, 0), 0);
  cua_op *ops[2];
  int st[2] = {0, 1};
  ck_assert_int_eq(cua_op_memcpy_h2d(&ops[0], b[0], 0, host, bytes), 0);
  ck_assert_ns(run_on(rt, ops, 1, NULL, st), 1002000);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(cua_op_memcpy_h2d(&ops[i], b[i], 0, host, bytes), 0);
  ck_assert_ns(run_on(rt, ops, 2, NULL, st), 2002000);
  for (int i = 0; i < 2; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
  free(host);
}
END_TEST

START_TEST(peer_and_network) {
  /* GPU 0 to GPU 1 in one node: both NVLink ports (100 GB/s, 1 us each):
   * 10 MB in 100 us + 2 us. Across nodes: PCIe, both network ports, PCIe
   * (latencies 2 + 5 + 5 + 2 us), at the slowest link's 20 GB/s. */
  const char *m = EXACT "gpus = 2\nnvlink_gbps = 100\nnvlink_latency_ns = "
                        "1000\npcie_gbps = 40\npcie_latency_ns = 2000\n"
                        "net_gbps = 20\nnet_latency_ns = 5000\n";
  for (int nodes = 1; nodes <= 2; nodes++) {
    char text[1024];
    snprintf(text, sizeof text, "%sgpus_per_node = %d\n", m, 3 - nodes);
    cua_runtime *rt = open_sim("round-robin", text);
    ck_assert_int_eq(cua_device_count(rt), 2);
    size_t bytes = 10000000;
    cua_buffer *src, *dst;
    ck_assert_int_eq(cua_buffer_create(&src, rt, 0, bytes, 0), 0);
    ck_assert_int_eq(cua_buffer_create(&dst, rt, 1, bytes, 0), 0);
    cua_op *op;
    ck_assert_int_eq(cua_op_memcpy_d2d(&op, dst, 0, src, 0, bytes), 0);
    int dev[1] = {1}, st[1] = {0};
    uint64_t t = run_on(rt, &op, 1, dev, st);
    if (nodes == 1)
      ck_assert_ns(t, 102000);
    else
      ck_assert_ns(t, 514000);
    cua_buffer_destroy(src);
    cua_buffer_destroy(dst);
    cua_runtime_destroy(rt);
  }
}
END_TEST

/* The modelled host's round (ABI 1.11): each submission first builds its
 * nodes and makes its policy's plan, then each launch costs the decision
 * of the policy that placed the op and the launch itself. */
#define ROUND_COSTS                                                            \
  EXACT "host_launch_ns = 10000\nhost_build_ns = 1000\n"                       \
        "host_plan_ns = 0, round-robin=3000\n"                                 \
        "host_decide_ns = 2000, least-loaded=500\n"

/* Ten one-op submissions of 1 us spins, each placed by @p policy (or, with
 * @p pinned, by the program on stream i % 4); the virtual time they take. */
static uint64_t ten_submissions(const char *policy, const char *sim,
                                int pinned) {
  cua_runtime *rt = open_sim(policy, sim);
  cua_op *ops[10];
  int st[10];
  for (int i = 0; i < 10; i++) {
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 1000, 1), 0);
    st[i] = pinned ? i % 4 : -1;
  }
  uint64_t t = run_on(rt, ops, 10, NULL, st);
  cua_runtime_destroy(rt);
  return t;
}

START_TEST(host_time) {
  /* Launches take turns on the modelled host: ten 1 us spins over four
   * streams, each launch 10 us of host time, end 1 us after the tenth
   * launch: 101 us. Event records and waits cost host_event_ns too. */
  ck_assert_ns(
      ten_submissions("round-robin", EXACT "host_launch_ns = 10000\n", 1),
      101000);
}
END_TEST

START_TEST(host_rounds) {
  /* round-robin: each submission costs 1 node x (1 us build + 3 us plan),
   * a 2 us decision and a 10 us launch, 16 us; the last spin ends 1 us
   * after 160 us. */
  ck_assert_ns(ten_submissions("round-robin", ROUND_COSTS, 0), 161000);
  /* least-loaded: no plan, a 0.5 us decision: 11.5 us each. */
  ck_assert_ns(ten_submissions("least-loaded", ROUND_COSTS, 0), 116000);
  /* Placed by the program: no plan and no decision, 11 us each. */
  ck_assert_ns(ten_submissions("round-robin", ROUND_COSTS, 1), 111000);
  /* The build alone still delays the launch that follows it. */
  ck_assert_ns(
      ten_submissions("round-robin", EXACT "host_build_ns = 100000\n", 0),
      1001000);
  /* One submission of a zip of four 1 us spins (five nodes: the spins and
   * the zip, which launches nothing): 5 x 4 us of build and plan before
   * the first decision, then four decisions and launches of 12 us each;
   * the fourth spin, on a stream of its own, ends 1 us after the last. */
  cua_runtime *rt = open_sim("round-robin", ROUND_COSTS);
  cua_op *ops[8], *z;
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_zip(&z, ops, 4), 0);
  uint64_t t0 = cua_runtime_now_ns(rt);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, z, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_ns(cua_runtime_now_ns(rt) - t0, 5 * 4000 + 4 * 12000 + 1000);
  cua_future_destroy(f);
  cua_op_destroy(z);
  for (int i = 0; i < 4; i++)
    cua_op_destroy(ops[i]);
  cua_runtime_destroy(rt);
  /* A graph's replay decides nothing: eight 1 us spins over four streams
   * take 2 us with a decision cost as without one. */
  rt = open_sim("round-robin", EXACT "host_decide_ns = 10000\n");
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_zip(&z, ops, 8), 0);
  cua_graph *g = NULL;
  int rc = cua_graph_create(&g, rt, z, NULL);
  ck_assert_msg(rc == 0, "graph: %s", cua_runtime_error(rt));
  t0 = cua_runtime_now_ns(rt);
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_ns(cua_runtime_now_ns(rt) - t0, 2000);
  cua_future_destroy(f);
  cua_graph_destroy(g);
  cua_op_destroy(z);
  for (int i = 0; i < 8; i++)
    cua_op_destroy(ops[i]);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(host_launch_threads) {
  /* With two modelled launch threads, streams 0 and 2 launch on one and
   * 1 and 3 on the other: ten 1 us spins over four streams, each launch
   * 10 us, end 1 us after the fifth launch of each thread: 51 us (101 us
   * with one, host_time above). */
  ck_assert_ns(ten_submissions("round-robin",
                               EXACT "host_launch_ns = 10000\n"
                                     "host_launch_threads = 2\n",
                               1),
               51000);
  /* Builds, plans and decisions stay on the host thread; each launch
   * starts once its decision is made and its launch thread is free.
   * Submission k (one op, on stream k % 4) is decided at 6 (k + 1) us
   * (1 us build, 3 us plan, 2 us decision, host_rounds above); thread 0
   * launches ops 0, 2, 4, 6, 8 at 6, 18, 30, 42, 54 us, thread 1 ops 1,
   * 3, 5, 7, 9 at 12, 24, 36, 48, 60: the last spin ends at 60 + 10 + 1
   * us (161 us with one thread). */
  ck_assert_ns(ten_submissions("round-robin",
                               ROUND_COSTS "host_launch_threads = 2\n", 0),
               71000);
}
END_TEST

/* One submission of a zip of twelve 1 us spins under round-robin over
 * one stream, each decision 1 us of host time, with [backend.sim]
 * extra keys @p chunks; the virtual time it takes. */
static uint64_t twelve_on_one_stream(const char *chunks) {
  char sim[256];
  snprintf(sim, sizeof sim, EXACT "host_decide_ns = 1000\n%s", chunks);
  cua_runtime *rt = open_sim_streams("round-robin", sim, 1);
  cua_op *ops[12], *z;
  for (int i = 0; i < 12; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_zip(&z, ops, 12), 0);
  for (int i = 0; i < 12; i++)
    cua_op_destroy(ops[i]);
  int st[1] = {-1};
  uint64_t t = run_on(rt, &z, 1, NULL, st);
  cua_runtime_destroy(rt);
  return t;
}

START_TEST(host_chunks) {
  /* Without chunks, spin k starts once its own decision is made, at
   * k + 1 us: the twelfth ends at 13 us. */
  ck_assert_ns(twelve_on_one_stream(""), 13000);
  /* In chunks of 2, 4, 4 and 2 launches (the first after 2, each next
   * twice as long, at most 4), which reach the stream once their last
   * decision is made, at 2, 6, 10 and 12 us: spins 0-1 run from 2 to 4,
   * 2-5 from 6 to 10, 6-9 from 10 to 14, 10-11 from 14 to 16. */
  ck_assert_ns(twelve_on_one_stream("host_chunk_first = 2\n"
                                    "host_chunk_max = 4\n"),
               16000);
  /* Uncapped, the third chunk holds the last six, sent at 12 us: 18 us. */
  ck_assert_ns(twelve_on_one_stream("host_chunk_first = 2\n"
                                    "host_chunk_max = 1000\n"),
               18000);
  /* One-op submissions are their own chunks: as without. */
  cua_runtime *rt = open_sim_streams("round-robin",
                                     EXACT "host_decide_ns = 1000\n"
                                           "host_chunk_first = 2\n",
                                     1);
  cua_op *ops[12];
  int st[12];
  for (int i = 0; i < 12; i++) {
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 1000, 1), 0);
    st[i] = -1;
  }
  ck_assert_ns(run_on(rt, ops, 12, NULL, st), 13000);
  cua_runtime_destroy(rt);
}
END_TEST

/* then(zip(spin of @p a_ns, spin of @p b_ns), spin of @p c_ns) under
 * round-robin over @p streams streams per device of [backend.sim] @p sim:
 * the first two on the first two streams (or devices), the third after
 * both; the virtual time it takes. */
static uint64_t join_of_spins(const char *sim, int streams, uint64_t a_ns,
                              uint64_t b_ns, uint64_t c_ns, cua_stats *st) {
  cua_runtime *rt = open_sim_streams("round-robin", sim, streams);
  cua_op *a, *b, *c, *z, *root;
  ck_assert_int_eq(cua_op_spin(&a, rt, a_ns, 1), 0);
  ck_assert_int_eq(cua_op_spin(&b, rt, b_ns, 1), 0);
  ck_assert_int_eq(cua_op_spin(&c, rt, c_ns, 1), 0);
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){a, b}, 2), 0);
  ck_assert_int_eq(cua_op_then(&root, z, c), 0);
  cua_op_destroy(a);
  cua_op_destroy(b);
  cua_op_destroy(c);
  cua_op_destroy(z);
  int where[1] = {-1};
  uint64_t t = run_on(rt, &root, 1, NULL, where);
  if (st != NULL) {
    st->size = sizeof *st;
    ck_assert_int_eq(cua_runtime_stats(rt, st), 0);
  }
  cua_runtime_destroy(rt);
  return t;
}

START_TEST(a_wait_follows_its_record) {
  /* then(zip(A, C), B) under round-robin over two streams: A on stream 0,
   * C on stream 1, B back on stream 0 after a wait for C's record. With
   * two modelled launch threads (stream 0 on one, stream 1 on the other),
   * 10 us per launch and 5 us per record and wait: A's launch ends at 10
   * us on thread 0, C's at 10 us on thread 1 and its record at 15; the
   * wait, on thread 0, starts only then (the core applies a wait after
   * its record), ends at 20, and B's launch at 30: B, a 1 us spin, ends
   * at 31 us. */
  ck_assert_ns(join_of_spins(EXACT "host_launch_ns = 10000\n"
                                   "host_event_ns = 5000\n"
                                   "host_launch_threads = 2\n",
                             2, 1000, 1000, 1000, NULL),
               31000);
}
END_TEST

START_TEST(peer_wait) {
  /* then(zip(A, B), C) under round-robin over two GPUs with one stream
   * each: A on GPU 0, B on GPU 1, C back on GPU 0 after both, waiting
   * for B's record across GPUs. With B a 10 us spin and A and C 1 us: C
   * ends at 10 + 1 us, and with peer_wait_ns = 5000 at 10 + 5 + 1 us.
   * With A the 10 us spin and B 1 us, B's record was reached at 1 us and
   * its wait is over at 6 us, before A ends: 11 us either way. */
  for (int late = 0; late < 2; late++)
    for (int pw = 0; pw < 2; pw++) {
      uint64_t want = late && pw ? 16000 : 11000;
      ck_assert_ns(join_of_spins(pw ? EXACT "gpus = 2\npeer_wait_ns = 5000\n"
                                    : EXACT "gpus = 2\n",
                                 1, late ? 1000 : 10000, late ? 10000 : 1000,
                                 1000, NULL),
                   want);
    }
  /* Within one GPU (two streams), a wait costs no device time. */
  ck_assert_ns(
      join_of_spins(EXACT "peer_wait_ns = 5000\n", 2, 1000, 10000, 1000, NULL),
      11000);
}
END_TEST

START_TEST(peer_wait_busy) {
  /* As peer_wait, with peer_wait_busy_ns = 3000: once the wait across
   * GPUs is over (peer_wait_ns after B's record), stream 0 spends 3 us
   * more on it. B late (10 us): C starts at 10 + 5 + 3 and ends at 19 us.
   * B early (1 us): the wait is over at 6 us, but A holds stream 0 until
   * 10: C starts at 10 + 3, ends at 14 us (the wait was launched before B
   * ended, so the driver could not drop it). */
  ck_assert_ns(join_of_spins(EXACT "gpus = 2\npeer_wait_ns = 5000\n"
                                   "peer_wait_busy_ns = 3000\n",
                             1, 1000, 10000, 1000, NULL),
               19000);
  ck_assert_ns(join_of_spins(EXACT "gpus = 2\npeer_wait_ns = 5000\n"
                                   "peer_wait_busy_ns = 3000\n",
                             1, 10000, 1000, 1000, NULL),
               14000);
  /* Without peer_wait_ns, the busy time alone: 10 + 3 + 1 us. */
  ck_assert_ns(join_of_spins(EXACT "gpus = 2\npeer_wait_busy_ns = 3000\n", 1,
                             1000, 10000, 1000, NULL),
               14000);
  /* Within one GPU, none. */
  ck_assert_ns(join_of_spins(EXACT "peer_wait_busy_ns = 3000\n", 2, 1000, 10000,
                             1000, NULL),
               11000);
  /* A wait issued after its record was reached is dropped. One modelled
   * host thread, 10 us per launch, 5 us per record and wait: A launched
   * at 10 us (runs 10-11), B at 20 (runs 20-21), B's record at 25 (its
   * host call: the record is reached then), the wait issued at 30, C
   * launched at 40: C ends at 41 us. Had the wait been kept, its 20 us on
   * the stream would end at 50, C at 51; with peer_wait_ns = 20000 as
   * well, at 25 + 20 + 1 = 46, C at 47: a dropped wait costs nothing at
   * all. */
  ck_assert_ns(join_of_spins(EXACT "gpus = 2\nhost_launch_ns = 10000\n"
                                   "host_event_ns = 5000\n"
                                   "peer_wait_busy_ns = 20000\n",
                             1, 1000, 1000, 1000, NULL),
               41000);
  ck_assert_ns(join_of_spins(EXACT "gpus = 2\nhost_launch_ns = 10000\n"
                                   "host_event_ns = 5000\n"
                                   "peer_wait_ns = 20000\n"
                                   "peer_wait_busy_ns = 1000\n",
                             1, 1000, 1000, 1000, NULL),
               41000);
}
END_TEST

/* A submission made from a completion callback while the program waits
 * in cua_runtime_synchronize(): the core counts the program as waiting
 * while that submission decides, which must not end its chunks early. */
typedef struct cb_submit {
  cua_runtime *rt;
  cua_op *big;
  cua_future *_Atomic fut;
  _Atomic uint64_t done_ns;
} cb_submit;

static void big_done(cua_future *f, int status, void *arg) {
  (void)f;
  (void)status;
  cb_submit *c = arg;
  atomic_store(&c->done_ns, cua_runtime_now_ns(c->rt));
}

static void submit_big(cua_future *f, int status, void *arg) {
  (void)f;
  (void)status;
  cb_submit *c = arg;
  cua_future *x = NULL;
  if (cua_submit(&x, c->rt, c->big, NULL) != 0)
    abort();
  if (cua_future_on_complete(x, big_done, c) != 0)
    abort();
  atomic_store(&c->fut, x);
}

/* The virtual time at which the callback's zip of 400 spins ends. */
static uint64_t submitted_while_waiting(void) {
  cua_runtime *rt =
      open_sim_streams("round-robin",
                       EXACT "host_decide_ns = 1000\nhost_launch_ns = 500\n"
                             "host_chunk_first = 4\n",
                       2);
  cb_submit c = {.rt = rt};
  cua_op *ops[400], *a;
  for (int i = 0; i < 400; i++)
    ck_assert_int_eq(cua_op_spin(&ops[i], rt, 2000, 1), 0);
  ck_assert_int_eq(cua_op_zip(&c.big, ops, 400), 0);
  for (int i = 0; i < 400; i++)
    cua_op_destroy(ops[i]);
  ck_assert_int_eq(cua_op_spin(&a, rt, 1000, 1), 0);
  uint64_t t0 = cua_runtime_now_ns(rt);
  cua_future *fa;
  ck_assert_int_eq(cua_submit_on(&fa, rt, a, 0, 0), 0);
  ck_assert_int_eq(cua_future_on_complete(fa, submit_big, &c), 0);
  ck_assert_int_eq(cua_runtime_synchronize(rt), 0);
  while (atomic_load(&c.fut) == NULL)
    usleep(100);
  ck_assert_int_eq(cua_future_wait(atomic_load(&c.fut)), 0);
  while (atomic_load(&c.done_ns) == 0)
    usleep(100);
  uint64_t t = atomic_load(&c.done_ns) - t0;
  cua_future_destroy(atomic_load(&c.fut));
  cua_future_destroy(fa);
  cua_op_destroy(a);
  cua_op_destroy(c.big);
  cua_runtime_destroy(rt);
  return t;
}

START_TEST(chunks_keep_runs_identical) {
  uint64_t first = submitted_while_waiting();
  for (int i = 0; i < 3; i++) {
    uint64_t t = submitted_while_waiting();
    ck_assert_msg(t == first, "run %d: %llu ns, the first %llu ns", i + 2,
                  (unsigned long long)t, (unsigned long long)first);
  }
}
END_TEST

START_TEST(host_peer_wait) {
  /* then(zip(A, B), C) over two GPUs of one stream each, two modelled
   * launch threads: A on GPU 0 (thread 0), B on GPU 1 (thread 1), C on
   * GPU 0 after a wait for B's record. 10 us per launch, 5 us per record
   * and wait: B's record ends at 15 us, the wait at 20, C's launch at 30,
   * C at 31 us (as a_wait_follows_its_record within one GPU). With
   * host_peer_wait_ns = 20000 the wait, for a record on another GPU,
   * ends at 35: C at 46 us. Within one GPU it changes nothing. */
#define PEER_COSTS                                                             \
  EXACT "host_launch_ns = 10000\nhost_event_ns = 5000\n"                       \
        "host_launch_threads = 2\n"
  ck_assert_ns(
      join_of_spins(PEER_COSTS "gpus = 2\n", 1, 1000, 1000, 1000, NULL), 31000);
  ck_assert_ns(join_of_spins(PEER_COSTS "gpus = 2\nhost_peer_wait_ns = 20000\n",
                             1, 1000, 1000, 1000, NULL),
               46000);
  ck_assert_ns(join_of_spins(PEER_COSTS "host_peer_wait_ns = 20000\n", 2, 1000,
                             1000, 1000, NULL),
               31000);
}
END_TEST

START_TEST(host_record_costs) {
  /* As a_wait_follows_its_record, with host_record_ns = 15000: C's
   * record, on thread 1, ends at 25 us, the wait at 30, B's launch at 40:
   * B ends at 41 us. host_event_ns still prices the wait. */
  ck_assert_ns(join_of_spins(EXACT "host_launch_ns = 10000\n"
                                   "host_event_ns = 5000\n"
                                   "host_record_ns = 15000\n"
                                   "host_launch_threads = 2\n",
                             2, 1000, 1000, 1000, NULL),
               41000);
}
END_TEST

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

START_TEST(host_contention) {
  /* then(zip(A, B), C), round-robin over two streams, A a 20 us spin, B
   * and C 1 us; 10 us per decision and per launch, two launch threads.
   * The host thread decides A, B and C from 0 to 30 us. Without
   * contention A's launch runs from 10 to 20 us and A to 40, C after it
   * on A's stream: 41 us. With host_contention = 1, calls on the launch
   * threads take twice as long until 30 us: A's launch, from 10 us, ends
   * at 30, A at 50, C at 51 (B's launch, from 20 us, ends at 35: 5 us of
   * its work at half speed until 30, the other 5 at full). With one
   * modelled launch thread the launches are the host thread's own: no
   * contention,
   * and A's launch ends at 20, B's decision at 30, its launch at 40 and
   * C's decision and launch at 60: C ends at 61 us either way. */
#define CONTENTION_COSTS                                                       \
  EXACT "host_decide_ns = 10000\nhost_launch_ns = 10000\n"
  ck_assert_ns(join_of_spins(CONTENTION_COSTS "host_launch_threads = 2\n", 2,
                             20000, 1000, 1000, NULL),
               41000);
  ck_assert_ns(join_of_spins(CONTENTION_COSTS "host_launch_threads = 2\n"
                                              "host_contention = 1\n",
                             2, 20000, 1000, 1000, NULL),
               51000);
  ck_assert_ns(join_of_spins(CONTENTION_COSTS "host_contention = 1\n", 2, 20000,
                             1000, 1000, NULL),
               join_of_spins(CONTENTION_COSTS, 2, 20000, 1000, 1000, NULL));
  /* Per policy: the submission's policy (round-robin here) takes its own
   * factor, a policy not listed the first item's. */
  ck_assert_ns(join_of_spins(CONTENTION_COSTS "host_launch_threads = 2\n"
                                              "host_contention = 0, "
                                              "round-robin=1\n",
                             2, 20000, 1000, 1000, NULL),
               51000);
  ck_assert_ns(join_of_spins(CONTENTION_COSTS "host_launch_threads = 2\n"
                                              "host_contention = 1, dmda=0\n",
                             2, 20000, 1000, 1000, NULL),
               51000);
  ck_assert_ns(join_of_spins(CONTENTION_COSTS "host_launch_threads = 2\n"
                                              "host_contention = 1, "
                                              "round-robin = 0\n",
                             2, 20000, 1000, 1000, NULL),
               41000);
  /* A list in a machine file, and the section's key replacing the whole
   * list (not merged with it). An underflow is about 0. */
  char path[256], sim[1024];
  snprintf(path, sizeof path, "sim-contention-%d.ini", (int)getpid());
  write_file(path, "host_contention = 0, round-robin=1, dmda=0\n");
  snprintf(sim, sizeof sim,
           CONTENTION_COSTS "host_launch_threads = 2\nmachine = %s\n", path);
  ck_assert_ns(join_of_spins(sim, 2, 20000, 1000, 1000, NULL), 51000);
  snprintf(sim, sizeof sim,
           CONTENTION_COSTS "host_launch_threads = 2\nmachine = %s\n"
                            "host_contention = 1e-400, dmda=1\n",
           path);
  ck_assert_ns(join_of_spins(sim, 2, 20000, 1000, 1000, NULL), 41000);
  unlink(path);
}
END_TEST

START_TEST(host_launch_cold) {
  /* then(zip(A, B), C) over two streams and two launch threads, 10 us
   * per launch: A and B go to idle streams, so with host_launch_cold_ns
   * = 30000 their launches end at 30 us; C follows A on its stream, which
   * has A queued: 10 us, from 30 to 40, and C ends at 41 (21 without). */
  ck_assert_ns(join_of_spins(EXACT "host_launch_ns = 10000\n"
                                   "host_launch_threads = 2\n",
                             2, 1000, 1000, 1000, NULL),
               21000);
  ck_assert_ns(join_of_spins(EXACT "host_launch_ns = 10000\n"
                                   "host_launch_cold_ns = 30000\n"
                                   "host_launch_threads = 2\n",
                             2, 1000, 1000, 1000, NULL),
               41000);
  /* A stream whose ops have all ended is idle again: one-op submissions
   * on it, each waited for, pay the cold launch every time (31 us each,
   * 11 without the key). */
  for (int cold = 0; cold < 2; cold++) {
    cua_runtime *rt = open_sim_streams(
        "round-robin",
        cold ? EXACT "host_launch_ns = 10000\nhost_launch_cold_ns = 30000\n"
             : EXACT "host_launch_ns = 10000\n",
        1);
    cua_op *op;
    ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
    for (int i = 0; i < 3; i++) {
      uint64_t t0 = cua_runtime_now_ns(rt);
      cua_future *f;
      ck_assert_int_eq(cua_submit_on(&f, rt, op, 0, 0), 0);
      ck_assert_int_eq(cua_future_wait(f), 0);
      cua_future_destroy(f);
      ck_assert_ns(cua_runtime_now_ns(rt) - t0, cold ? 31000 : 11000);
    }
    cua_op_destroy(op);
    cua_runtime_destroy(rt);
  }
}
END_TEST

START_TEST(stats_count_waits_across_devices) {
  /* then(zip(A, B), C): C waits for B on another stream, of another GPU
   * over two GPUs of one stream, of the same GPU over one of two. */
  cua_stats st;
  memset(&st, 0, sizeof st);
  (void)join_of_spins(EXACT "gpus = 2\n", 1, 1000, 1000, 1000, &st);
  ck_assert_uint_eq(st.event_waits, 1);
  ck_assert_uint_eq(st.peer_waits, 1);
  memset(&st, 0, sizeof st);
  (void)join_of_spins(EXACT, 2, 1000, 1000, 1000, &st);
  ck_assert_uint_eq(st.event_waits, 1);
  ck_assert_uint_eq(st.peer_waits, 0);
}
END_TEST

START_TEST(time_stands_still_while_submitting) {
  /* Virtual time moves only while the program waits: submitting, and real
   * time passing, do not move it. */
  cua_runtime *rt = open_sim("round-robin", EXACT);
  uint64_t t0 = cua_runtime_now_ns(rt);
  ck_assert_uint_ge(t0, 1000000000u);
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, 50000000, 1), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  usleep(20000);
  ck_assert_uint_eq(cua_runtime_now_ns(rt), t0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_ns(cua_runtime_now_ns(rt) - t0, 50000000);
  cua_future_destroy(f);
  cua_op_destroy(op);
  /* A poll of a pending future lets time move one step: spins of 10 and
   * 30 ms on two streams; polling the second, the first poll ends at the
   * first's end, the second at its own. */
  cua_op *sp[2];
  cua_future *fs[2];
  t0 = cua_runtime_now_ns(rt);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(
        cua_op_spin(&sp[i], rt, 10000000 * (uint64_t)(2 * i + 1), 1), 0);
    ck_assert_int_eq(cua_submit_on(&fs[i], rt, sp[i], 0, i), 0);
  }
  /* (A poll gives up after a while of real time when nothing moves the
   * clock, which a loaded machine may reach: polls loop until it moved.) */
  int rc;
  do
    rc = cua_future_poll(fs[1]);
  while (rc == CUA_ERR_AGAIN && cua_runtime_now_ns(rt) == t0);
  ck_assert_int_eq(rc, CUA_ERR_AGAIN);
  ck_assert_ns(cua_runtime_now_ns(rt) - t0, 10000000);
  ck_assert_int_eq(cua_future_poll(fs[0]), 0);
  /* Pending at 10 ms, or at 30 ms until the completion thread has fired
   * it (a poll returns once the clock moved): never later. */
  while ((rc = cua_future_poll(fs[1])) == CUA_ERR_AGAIN) {
    uint64_t at = cua_runtime_now_ns(rt) - t0;
    ck_assert_msg(at == 10000000 || at == 30000000, "pending at %llu ns",
                  (unsigned long long)at);
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_ns(cua_runtime_now_ns(rt) - t0, 30000000);
  for (int i = 0; i < 2; i++) {
    cua_future_destroy(fs[i]);
    cua_op_destroy(sp[i]);
  }
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(data_real) {
  /* data = real: buffers are host memory and built-in ops run. */
  cua_runtime *rt = open_sim("round-robin", "data = real\ngpus = 2\n");
  float in[256], out[256];
  for (int i = 0; i < 256; i++)
    in[i] = (float)i;
  cua_buffer *a, *b;
  ck_assert_int_eq(cua_buffer_create(&a, rt, 0, sizeof in, 0), 0);
  ck_assert_int_eq(cua_buffer_create(&b, rt, 1, sizeof in, 0), 0);
  cua_op *ops[4];
  ck_assert_int_eq(cua_op_memcpy_h2d(&ops[0], a, 0, in, sizeof in), 0);
  ck_assert_int_eq(cua_op_fill(&ops[1], b, 1.0f), 0);
  ck_assert_int_eq(cua_op_axpy(&ops[2], b, 2.0f, a), 0);
  cua_op *t1, *t2;
  ck_assert_int_eq(cua_op_zip(&t1, ops, 2), 0);
  ck_assert_int_eq(cua_op_then(&t2, t1, ops[2]), 0);
  ck_assert_int_eq(run_op(rt, t2), 0);
  cua_op_destroy(t1);
  for (int i = 0; i < 3; i++)
    cua_op_destroy(ops[i]);
  read_back(rt, b, out);
  for (int i = 0; i < 256; i++)
    ck_assert_float_eq(out[i], 1.0f + 2.0f * (float)i);
  cua_buffer_destroy(a);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

/* A random-looking DAG over 2 GPUs under @p policy, traced to @p path;
 * returns the makespan. */
static uint64_t traced_run(const char *policy, const char *path) {
  char text[4096];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = sim\npolicy = %s\nobservers = perfetto\n"
           "[observer.perfetto]\npath = %s\n[backend.sim]\ngpus = 2\n"
           "jitter = 0.3\nseed = 7\n",
           policy, path);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  cua_buffer *b[8];
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(cua_buffer_create(&b[i], rt, i % 2, 1 << 20, 0), 0);
  uint64_t t0 = cua_runtime_now_ns(rt);
  for (int round = 0; round < 3; round++) {
    cua_op *ops[24];
    for (int i = 0; i < 24; i++) {
      int k = (i * 7 + round) % 8;
      if (i % 3 == 0)
        ck_assert_int_eq(cua_op_spin(&ops[i], rt, 10000 + 3000 * (uint64_t)i,
                                     1 + (uint32_t)(i % 4)),
                         0);
      else if (i % 3 == 1)
        ck_assert_int_eq(cua_op_fill(&ops[i], b[k], (float)i), 0);
      else
        ck_assert_int_eq(cua_op_axpy(&ops[i], b[k], 1.0f, b[(k + 3) % 8]), 0);
    }
    cua_op *z;
    ck_assert_int_eq(cua_op_zip(&z, ops, 24), 0);
    ck_assert_int_eq(run_op(rt, z), 0);
    for (int i = 0; i < 24; i++)
      cua_op_destroy(ops[i]);
  }
  uint64_t span = cua_runtime_now_ns(rt) - t0;
  for (int i = 0; i < 8; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
  return span;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(fread(s, 1, (size_t)n, f), n);
  s[n] = '\0';
  fclose(f);
  return s;
}

START_TEST(deterministic) {
  const char *policies[] = {"round-robin", "least-loaded", "heft", "dmda"};
  for (int p = 0; p < 4; p++) {
    char a[256], b[256];
    snprintf(a, sizeof a, "sim-trace-%d-a.json", (int)getpid());
    snprintf(b, sizeof b, "sim-trace-%d-b.json", (int)getpid());
    uint64_t s1 = traced_run(policies[p], a);
    uint64_t s2 = traced_run(policies[p], b);
    ck_assert_msg(s1 == s2, "%s: makespans %llu and %llu differ", policies[p],
                  (unsigned long long)s1, (unsigned long long)s2);
    char *ta = slurp(a), *tb = slurp(b);
    ck_assert_msg(strcmp(ta, tb) == 0, "%s: the two traces differ",
                  policies[p]);
    ck_assert_ptr_nonnull(strstr(ta, "\"ph\""));
    free(ta);
    free(tb);
    unlink(a);
    unlink(b);
  }
}
END_TEST

START_TEST(many_streams_keep_order) {
  /* 300 streams (beyond CUA__VC_STREAMS_MAX: event points without vector
   * clocks), real data: 600 ops on 6 buffers, each its own submission,
   * round-robin over the streams, equal the same ops run in order. */
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = sim\npolicy = round-robin\n"
                          "[policy.round-robin]\nstreams = 300\n"
                          "[backend.sim]\ndata = real\njitter = 0.5\n");
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  enum { NB = 6, NE = 64, NOPS = 600 };
  cua_buffer *b[NB];
  float ref[NB][NE], out[NE];
  for (int i = 0; i < NB; i++) {
    ck_assert_int_eq(cua_buffer_create(&b[i], rt, 0, NE * sizeof(float), 0), 0);
    for (int e = 0; e < NE; e++)
      ref[i][e] = 0.0f;
  }
  unsigned x = 12345;
  for (int k = 0; k < NOPS; k++) {
    x = x * 1103515245u + 12345u;
    int d = (int)((x >> 8) % NB), src = (int)((x >> 16) % NB), kind = k % 3;
    if (src == d)
      src = (d + 1) % NB;
    cua_op *op;
    if (kind == 0) {
      ck_assert_int_eq(cua_op_fill(&op, b[d], (float)(k % 7)), 0);
      for (int e = 0; e < NE; e++)
        ref[d][e] = (float)(k % 7);
    } else if (kind == 1) {
      ck_assert_int_eq(cua_op_axpy(&op, b[d], 0.5f, b[src]), 0);
      for (int e = 0; e < NE; e++)
        ref[d][e] += 0.5f * ref[src][e];
    } else {
      ck_assert_int_eq(cua_op_copy(&op, b[d], b[src]), 0);
      for (int e = 0; e < NE; e++)
        ref[d][e] = ref[src][e];
    }
    cua_future *f;
    ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
    cua_future_destroy(f);
    cua_op_destroy(op);
  }
  for (int i = 0; i < NB; i++) {
    read_back(rt, b[i], out);
    for (int e = 0; e < NE; e++)
      ck_assert_float_eq(out[e], ref[i][e]);
  }
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_uint_ge(st.streams, 250); /* it did spread over them */
  for (int i = 0; i < NB; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
}
END_TEST

static void refused(const char *sim, int code, const char *needle) {
  char text[2048];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = sim\npolicy = round-robin\n[backend.sim]\n%s",
           sim);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  ck_assert_msg(rc == code, "%s: got %s, expected %s: %s", sim,
                cua_err_name(rc), cua_err_name(code), cua_runtime_error(NULL));
  ck_assert_msg(strstr(cua_runtime_error(NULL), needle) != NULL,
                "message '%s' lacks '%s'", cua_runtime_error(NULL), needle);
}

START_TEST(bad_sections) {
  refused("gpus = 0\n", CUA_ERR_CONFIG_OUT_OF_RANGE, "gpus");
  refused("gpu = 4\n", CUA_ERR_CONFIG_UNKNOWN_KEY, "gpu");
  refused("data = maybe\n", CUA_ERR_CONFIG_BAD_VALUE, "data");
  /* Host cost lists: 'NS', then 'POLICY=NS'. */
  refused("host_plan_ns = x\n", CUA_ERR_CONFIG_BAD_VALUE,
          "[backend.sim] host_plan_ns: 'x' is not an integer; write 'NS' "
          "then 'POLICY=NS', comma-separated");
  refused("host_decide_ns = 900, heft=1, heft=2\n", CUA_ERR_CONFIG_BAD_VALUE,
          "[backend.sim] host_decide_ns: policy 'heft' given twice");
  refused("host_decide_ns = heft=1, 900\n", CUA_ERR_CONFIG_BAD_VALUE,
          "host_decide_ns: '900': only the first item may be a bare NS");
  refused("host_decide_ns = -5\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_decide_ns: -5 is out of range [0, 1e+09]");
  refused("host_decide_ns = 99999999999999999999\n",
          CUA_ERR_CONFIG_OUT_OF_RANGE,
          "host_decide_ns: 99999999999999999999 is out of range");
  refused("host_decide_ns = 900, heft=1,\n", CUA_ERR_CONFIG_BAD_VALUE,
          "[backend.sim] host_decide_ns: an empty item; write 'NS' then");
  refused("host_plan_ns = a b=3\n", CUA_ERR_CONFIG_BAD_VALUE,
          "host_plan_ns: 'a b' is not a policy name");
  refused("host_build_ns = -1\n", CUA_ERR_CONFIG_OUT_OF_RANGE, "host_build_ns");
  refused("host_launch_threads = 9\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "host_launch_threads: 9 is out of range [1, 8]");
  refused("host_launch_threads = 0\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "host_launch_threads: 0 is out of range [1, 8]");
  refused("host_chunk_first = -1\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_chunk_first: -1 is out of range");
  refused("host_chunk_max = 0\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_chunk_max: 0 is out of range");
  refused("host_chunk_first = 16\nhost_chunk_max = 8\n",
          CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_chunk_max: 8 is below host_chunk_first (16)");
  refused("host_peer_wait_ns = -2\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_peer_wait_ns: -2 is out of range");
  refused("host_record_ns = -2\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_record_ns: -2 is out of range");
  refused("host_launch_cold_ns = -2\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_launch_cold_ns: -2 is out of range");
  refused("host_contention = 11\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_contention: 11 is out of range");
  refused("host_contention = -0.5\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_contention: -0.5 is out of range");
  refused("host_contention = 0.5, dmda=12\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_contention: 12 is out of range [0, 10]");
  refused("host_contention = 0.5, dmda=much\n", CUA_ERR_CONFIG_BAD_VALUE,
          "[backend.sim] host_contention: 'much' is not a number; write 'X' "
          "then 'POLICY=X', comma-separated");
  refused("host_contention = dmda=0.4, 0.5\n", CUA_ERR_CONFIG_BAD_VALUE,
          "host_contention: '0.5': only the first item may be a bare X");
  refused("host_contention = 0.5, dmda=0.4, dmda=0.3\n",
          CUA_ERR_CONFIG_BAD_VALUE,
          "[backend.sim] host_contention: policy 'dmda' given twice");
  refused("host_contention = 1e999\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] host_contention: 1e999 is out of range [0, 10]");
  refused("host_contention = 0.5,\n", CUA_ERR_CONFIG_BAD_VALUE,
          "[backend.sim] host_contention: an empty item");
  refused("peer_wait_ns = -1\n", CUA_ERR_CONFIG_OUT_OF_RANGE, "peer_wait_ns");
  refused("peer_wait_busy_ns = -1\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "[backend.sim] peer_wait_busy_ns: -1 is out of range");
  refused("peer_wait_busy_ns = 1000000001\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "peer_wait_busy_ns: 1000000001 is out of range");
  refused("peer_wait_ns = 1000000001\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
          "peer_wait_ns: 1000000001 is out of range");
  refused("machine = /nonexistent/m.ini\n", CUA_ERR_CONFIG_NOT_FOUND,
          "/nonexistent/m.ini");
  /* A directory read as nothing: the defaults, silently. */
  refused("machine = /\n", CUA_ERR_CONFIG_NOT_FOUND,
          "machine file /: cannot read it: Is a directory");
  /* A string the backend parses itself is cited at its line, as the
   * core's own checks are (the section's header is line 4). */
  refused("gpus = 2\nhost_plan_ns = x\n", CUA_ERR_CONFIG_BAD_VALUE,
          "<text>:6: [backend.sim] host_plan_ns: 'x' is not an integer");
  char path[256], line[512];
  snprintf(path, sizeof path, "sim-machine-%d.ini", (int)getpid());
  snprintf(line, sizeof line, "machine = %s\n", path);
  write_file(path, "# two nodes\ngpus = 4\ngpus_per_node = 2\nsmz = 3\n");
  char want[400];
  snprintf(want, sizeof want, "%s:4: unknown key 'smz'", path);
  refused(line, CUA_ERR_CONFIG_UNKNOWN_KEY, want);
  write_file(path, "gpus = 4\n\nsms = many\n");
  snprintf(want, sizeof want, "%s:3: sms: 'many' is not an integer", path);
  refused(line, CUA_ERR_CONFIG_BAD_VALUE, want);
  write_file(path, "gpus = 4\nhost_launch_threads = 12\n");
  snprintf(want, sizeof want, "%s:2: host_launch_threads: 12 is out of range",
           path);
  refused(line, CUA_ERR_CONFIG_OUT_OF_RANGE, want);
  write_file(path, "gpus = 4\nnet_gbps = -3\n");
  snprintf(want, sizeof want, "%s:2: net_gbps: -3 is out of range", path);
  refused(line, CUA_ERR_CONFIG_OUT_OF_RANGE, want);
  write_file(path, "gpus = 4\nhost_decide_ns = 1000, =3\n");
  snprintf(want, sizeof want, "%s:2: host_decide_ns: '=3' names no policy",
           path);
  refused(line, CUA_ERR_CONFIG_BAD_VALUE, want);
  write_file(path, "gpus = 4\nhost_contention = 0.4, heft=10.5\n");
  snprintf(want, sizeof want,
           "%s:2: host_contention: 10.5 is out of range [0, 10]", path);
  refused(line, CUA_ERR_CONFIG_OUT_OF_RANGE, want);
  write_file(path, "gpus 4\n");
  snprintf(want, sizeof want, "%s:1: expected 'key = value'", path);
  refused(line, CUA_ERR_CONFIG_SYNTAX, want);
  write_file(path, "gpus = 4\ngpus = 5\n");
  snprintf(want, sizeof want, "%s:2: 'gpus' given twice", path);
  refused(line, CUA_ERR_CONFIG_DUPLICATE_KEY, want);
  write_file(path, "machine = other.ini\n");
  snprintf(want, sizeof want, "%s:1: unknown key 'machine'", path);
  refused(line, CUA_ERR_CONFIG_UNKNOWN_KEY, want);
  /* A good file; the section's own keys override it. */
  write_file(path, "gpus = 4\ngpus_per_node = 2\nsms = 16\n");
  char text[1024];
  snprintf(text, sizeof text, "%sgpus = 3\n", line);
  cua_runtime *rt = open_sim("round-robin", text);
  ck_assert_int_eq(cua_device_count(rt), 3);
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(cua_device_get_info(rt, 2, &info), 0);
  ck_assert_int_eq(info.multiprocessors, 16);
  ck_assert_ptr_nonnull(strstr(info.name, "node 1"));
  /* Sim backends open at once share one simulation: of one machine. */
  cua_runtime *rt2 = NULL;
  ck_assert_int_eq(open_text(&rt2, "[runtime]\nbackend = sim\n"), CUA_ERR_BUSY);
  ck_assert_ptr_nonnull(strstr(cua_runtime_error(NULL), "another machine"));
  snprintf(text, sizeof text,
           "[runtime]\nbackend = sim\npolicy = round-robin\n"
           "[backend.sim]\n%sgpus = 3\ndata = real\n",
           line);
  ck_assert_int_eq(open_text(&rt2, text), 0);
  ck_assert_int_eq(cua_device_count(rt2), 3);
  cua_runtime_destroy(rt2);
  cua_runtime_destroy(rt);
  unlink(path);
}
END_TEST

START_TEST(missing_device) {
  /* A placement on a GPU the machine lacks: the usual error. */
  cua_runtime *rt = open_sim("round-robin", "gpus = 2\n");
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
  cua_future *f = NULL;
  ck_assert_err(rt, cua_submit_on(&f, rt, op, 2, 0), CUA_ERR_BAD_PLACEMENT,
                "no device 2");
  cua_op_destroy(op);
  cua_runtime_destroy(rt);
  /* Devices asked for that the machine lacks. */
  cua_runtime *r2 = NULL;
  ck_assert_int_eq(
      open_text(&r2, "[runtime]\nbackend = sim\ndevices = 0,5\n[backend.sim]\n"
                     "gpus = 2\n"),
      CUA_ERR_BAD_DEVICE);
  ck_assert_ptr_nonnull(strstr(cua_runtime_error(NULL), "has 2 GPUs"));
}
END_TEST

/* A relative machine file in a configuration file is that file's
 * directory's (CUA_PARAM_PATH), as policy_path and models are, whatever
 * the working directory. */
START_TEST(a_relative_machine_file_is_the_configuration_s) {
  char dir[] = "/tmp/cuasync-simcfg-XXXXXX", path[256], cwd[4096];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/m3.machine", dir);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("gpus = 3\n", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/sim.ini", dir);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[runtime]\nbackend = sim\npolicy = round-robin\n"
        "[backend.sim]\nmachine = m3.machine\n",
        f);
  fclose(f);
  ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
  ck_assert_int_eq(chdir("/"), 0);
  cua_runtime *rt = NULL;
  cua_runtime_options o = {.size = sizeof o,
                           .config_path = path,
                           .flags = CUA_RUNTIME_NO_SYSTEM_CONFIG};
  int rc = cua_runtime_create_ex(&rt, &o);
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  ck_assert_int_eq(cua_device_count(rt), 3);
  cua_runtime_destroy(rt);
  /* In text, the working directory's: not found from /. */
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = sim\n"
                                  "[backend.sim]\nmachine = m3.machine\n"),
                   CUA_ERR_CONFIG_NOT_FOUND);
  ck_assert_ptr_nonnull(
      strstr(cua_runtime_error(NULL), "machine file m3.machine: cannot open"));
  ck_assert_int_eq(chdir(cwd), 0);
  unlink(path);
  snprintf(path, sizeof path, "%s/m3.machine", dir);
  unlink(path);
  rmdir(dir);
}
END_TEST

/* A program that exits with a sim runtime open, work in flight: the
 * simulation's thread still runs while exit() runs the destructors, which
 * freed the simulation under it (a crash at exit, most runs). */
START_TEST(exiting_with_a_runtime_open_is_clean) {
  for (int k = 0; k < 5; k++) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      cua_runtime *rt = NULL;
      if (open_text(&rt, "[runtime]\nbackend = sim\npolicy = round-robin\n"
                         "[backend.sim]\ngpus = 2\n") != 0)
        _exit(3);
      for (int i = 0; i < 8; i++) {
        cua_op *op;
        cua_future *f;
        if (cua_op_spin(&op, rt, 1000000, 1) != 0 ||
            cua_submit(&f, rt, op, NULL) != 0)
          _exit(4);
      }
      exit(0);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "the program exited with status %d (signal %d)",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                  WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  }
}
END_TEST

/* changed() names streams by their backend creation index, which counts a
 * graph's own streams too: a runtime stream made after a graph's (here by
 * cua_submit_on() to stream 5) must still be seen when its op ends. Before
 * the core numbered every stream_create() (cua__stream_create()), the
 * index of such a stream named none of the runtime's, so its op was seen
 * done only once no other stream changed: c below, 1 ms beside a lane of
 * 200 ops of 100 us on stream 0, completed at 6.2 ms of virtual time. */
START_TEST(a_stream_made_after_a_graph_is_seen) {
  cua_runtime *rt = open_sim_streams("round-robin", EXACT, 2);
  cua_op *a, *b, *z;
  ck_assert_int_eq(cua_op_spin(&a, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_op_spin(&b, rt, 1000, 1), 0);
  cua_op *parts[2] = {a, b};
  ck_assert_int_eq(cua_op_zip(&z, parts, 2), 0);
  cua_graph *g;
  ck_assert_int_eq(cua_graph_create(&g, rt, z, NULL), 0);
  cua_graph_info gi = {.size = sizeof gi};
  ck_assert_int_eq(cua_graph_get_info(g, &gi), 0);
  ck_assert_int_eq(gi.native, 0); /* its streams are the backend's */
  cua_op *lane = NULL;
  for (int i = 0; i < 200; i++) {
    cua_op *sp, *t;
    ck_assert_int_eq(cua_op_spin(&sp, rt, 100000, 1), 0);
    if (lane == NULL) {
      lane = sp;
      continue;
    }
    ck_assert_int_eq(cua_op_then(&t, lane, sp), 0);
    cua_op_destroy(lane);
    cua_op_destroy(sp);
    lane = t;
  }
  cua_op *c;
  ck_assert_int_eq(cua_op_spin(&c, rt, 1000000, 1), 0);
  uint64_t t0 = cua_runtime_now_ns(rt);
  cua_future *fl, *fc;
  ck_assert_int_eq(cua_submit_on(&fl, rt, lane, 0, 0), 0);
  ck_assert_int_eq(cua_submit_on(&fc, rt, c, 0, 5), 0);
  ck_assert_int_eq(cua_future_wait(fc), 0);
  ck_assert_uint_eq(cua_runtime_now_ns(rt) - t0, 1000000);
  ck_assert_int_eq(cua_future_wait(fl), 0);
  ck_assert_uint_eq(cua_runtime_now_ns(rt) - t0, 20000000);
  cua_future_destroy(fl);
  cua_future_destroy(fc);
  cua_op_destroy(c);
  cua_op_destroy(lane);
  cua_graph_destroy(g);
  cua_op_destroy(z);
  cua_op_destroy(a);
  cua_op_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim");
  TCase *tc = tcase_create("sim");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, chain);
  tcase_add_test(tc, independent_streams);
  tcase_add_test(tc, shared_gpu);
  tcase_add_test(tc, shared_link);
  tcase_add_test(tc, peer_and_network);
  tcase_add_test(tc, host_time);
  tcase_add_test(tc, host_rounds);
  tcase_add_test(tc, host_launch_threads);
  tcase_add_test(tc, host_chunks);
  tcase_add_test(tc, peer_wait);
  tcase_add_test(tc, peer_wait_busy);
  tcase_add_test(tc, stats_count_waits_across_devices);
  tcase_add_test(tc, host_peer_wait);
  tcase_add_test(tc, host_record_costs);
  tcase_add_test(tc, host_contention);
  tcase_add_test(tc, host_launch_cold);
  tcase_add_test(tc, chunks_keep_runs_identical);
  tcase_add_test(tc, a_wait_follows_its_record);
  tcase_add_test(tc, time_stands_still_while_submitting);
  tcase_add_test(tc, data_real);
  tcase_add_test(tc, deterministic);
  tcase_add_test(tc, many_streams_keep_order);
  tcase_add_test(tc, a_stream_made_after_a_graph_is_seen);
  tcase_add_test(tc, a_relative_machine_file_is_the_configuration_s);
  tcase_add_test(tc, exiting_with_a_runtime_open_is_clean);
  tcase_add_test(tc, bad_sections);
  tcase_add_test(tc, missing_device);
  suite_add_tcase(s, tc);
  return run_suite(s);
}
