/*
 * tests/check_graph.c: graphs (cua_graph_create(), launch, update).
 *
 * The property: random DAGs captured under every policy and replayed
 * several times, with updates between replays, give exactly the results of
 * running their ops one at a time, in submission order, once per replay.
 * Then ordering against other submissions and between threads (proved by
 * data), updates and their refusals, what cannot be captured, and
 * lifetimes. Runs on $CUASYNC_TEST_BACKEND (tests/cuda/graph.sh reruns it
 * on CUDA, tests/launchtime/graph.sh on the launchtime test backend).
 *
 * $CUASYNC_RANDOM_DAGS sets the number of DAGs per policy (default 1000,
 * of which a tenth are graphs here).
 */
#include "helpers.h"

#include <dirent.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>

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

/* One op of a random DAG, kept so that the reference can run it again and
 * an update can change it. */
typedef struct rop {
  int kind; /* 0 fill, 1 axpy, 2 copy, 3 d2d range */
  int d, s;
  float v;
  size_t off, n;
  cua_op *key;  /* the op as captured */
  cua_op *spin; /* kind 4: a spin before the fill, to let races show */
  uint64_t spin_ns;
} rop;

static rop rops[256];
static int nrops;
/* How random_dag() joined op i to the ones before it: 1 zip, 0 then. */
static int joins[256];
/* run_policy()'s DAGs: base + rnd(span) ops each, count of them (0: the
 * property count). */
static int dag_base = 1, dag_span = 12, dag_count;

static cua_op *make_op(const rop *r) {
  cua_op *op = NULL;
  switch (r->kind) {
  case 0:
    ck_assert_int_eq(cua_op_fill(&op, bufs[r->d], r->v), 0);
    break;
  case 1:
    ck_assert_int_eq(cua_op_axpy(&op, bufs[r->d], r->v, bufs[r->s]), 0);
    break;
  case 2:
    ck_assert_int_eq(cua_op_copy(&op, bufs[r->d], bufs[r->s]), 0);
    break;
  default:
    ck_assert_int_eq(cua_op_memcpy_d2d(&op, bufs[r->d], r->off * 4, bufs[r->s],
                                       r->off * 4, r->n * 4),
                     0);
    break;
  }
  return op;
}

static void apply_ref(const rop *r) {
  switch (r->kind) {
  case 0:
    for (int i = 0; i < ELEMS; i++)
      ref[r->d][i] = r->v;
    break;
  case 1: {
    float tmp[ELEMS];
    for (int i = 0; i < ELEMS; i++)
      tmp[i] = r->v * ref[r->s][i] + ref[r->d][i];
    memcpy(ref[r->d], tmp, sizeof tmp);
    break;
  }
  case 2:
    memcpy(ref[r->d], ref[r->s], sizeof ref[r->d]);
    break;
  default:
    memmove(&ref[r->d][r->off], &ref[r->s][r->off], r->n * 4);
    break;
  }
}

static cua_op *random_op(void) {
  rop *r = &rops[nrops++];
  memset(r, 0, sizeof *r);
  r->kind = (int)rnd(5);
  r->d = (int)rnd(NBUF);
  r->s = (int)rnd(NBUF);
  if (r->kind >= 2 && r->s == r->d)
    r->s = (r->d + 1) % NBUF;
  r->v = r->kind == 1 ? (rnd(2) ? 1.0f : -1.0f) : (float)rnd(100);
  r->off = rnd(ELEMS / 2);
  r->n = 1 + rnd(ELEMS / 2);
  if (r->kind == 4) {
    r->kind = 0; /* a fill, after a spin */
    r->spin_ns = 1000 * rnd(200);
    ck_assert_int_eq(cua_op_spin(&r->spin, rt, r->spin_ns, 1), 0);
  }
  r->key = make_op(r);
  if (r->spin == NULL)
    return cua_op_retain(r->key);
  cua_op *t;
  ck_assert_int_eq(cua_op_then(&t, r->spin, r->key), 0);
  return t;
}

/* Ops folded left to right into then-chains and zips: the post-order is
 * the construction order. */
/* then(acc, next) or zip(acc, next), consuming both references. */
static cua_op *join(cua_op *acc, cua_op *next, int zip) {
  cua_op *c;
  if (!zip)
    ck_assert_int_eq(cua_op_then(&c, acc, next), 0);
  else
    ck_assert_int_eq(cua_op_zip(&c, (cua_op *[]){acc, next}, 2), 0);
  cua_op_destroy(acc);
  cua_op_destroy(next);
  return c;
}

static cua_op *random_dag(int n) {
  cua_op *acc = random_op();
  for (int i = 1; i < n; i++) {
    cua_op *next = random_op();
    joins[i] = !rnd(2);
    acc = join(acc, next, joins[i]);
  }
  return acc;
}

/* Reads a buffer back on an explicit stream: not through the graph cache,
 * so that the automatic mode's tests count their own DAGs only. */
static void read_direct(cua_buffer *b, float *h) {
  cua_op *op;
  cua_future *f;
  ck_assert_int_eq(cua_op_memcpy_d2h(&op, h, b, 0, ELEMS * sizeof(float)), 0);
  ck_assert_int_eq(cua_submit_on(&f, rt, op, cua_buffer_device(b), 0), 0);
  ck_assert_msg(cua_future_wait(f) == 0, "read back: %s", cua_future_error(f));
  cua_future_destroy(f);
  cua_op_destroy(op);
}

static void check_buffers(const char *policy, int dag) {
  for (int b = 0; b < NBUF; b++) {
    float h[ELEMS];
    read_direct(bufs[b], h);
    for (int i = 0; i < ELEMS; i++)
      ck_assert_msg(h[i] == ref[b][i],
                    "%s: graph %d: buffer %d [%d] = %g, expected %g", policy,
                    dag, b, i, (double)h[i], (double)ref[b][i]);
  }
}

static int graphs_per_policy(void) {
  const char *e = getenv("CUASYNC_RANDOM_DAGS");
  int n = e ? atoi(e) / 10 : 100;
  return n > 0 ? n : 1;
}

static void run_policy(const char *policy, const char *extra, int devices) {
  rt = open_policy(policy, extra);
  rng = 0x9E3779B97F4A7C15ull ^ (uint64_t)strlen(policy) ^
        (uint64_t)devices << 40;
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
  int n = dag_count > 0 ? dag_count : graphs_per_policy();
  size_t streams = 0, waits = 0;
  uint64_t captures = 0, in_place = 0;
  int progress = getenv("CUASYNC_TEST_PROGRESS") != NULL;
  for (int dag = 0; dag < n; dag++) {
    if (progress) {
      printf("graph: %s: %d\n", policy, dag);
      fflush(stdout);
    }
    nrops = 0;
    cua_op *root = random_dag(dag_base + (int)rnd((uint32_t)dag_span));
    cua_graph *g = NULL;
    int rc = cua_graph_create(&g, rt, root, NULL);
    ck_assert_msg(rc == 0, "%s: capture: %s", policy, cua_runtime_error(rt));
    cua_op_destroy(root);
    cua_graph_info info = {.size = sizeof info};
    ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
    int nspins = 0;
    for (int i = 0; i < nrops; i++)
      nspins += rops[i].spin != NULL;
    ck_assert_int_eq((int)info.ops, nrops + nspins);
    streams += info.streams;
    waits += info.waits;
    int replays = 1 + (int)rnd(4);
    for (int k = 0; k < replays; k++) {
      /* Several launches in flight, then a check. */
      cua_future *f;
      rc = cua_graph_launch(&f, g);
      ck_assert_msg(rc == 0, "%s: launch: %s", policy, cua_runtime_error(rt));
      for (int i = 0; i < nrops; i++)
        apply_ref(&rops[i]);
      /* A replay of a few ops takes milliseconds: a minute is a hang (a
       * failure, not a stuck suite). */
      rc = cua_future_wait_timeout(f, 60000000000ull);
      ck_assert_msg(rc == 0, "%s: graph %d, replay %d: %s %s", policy, dag, k,
                    cua_err_name(rc),
                    rc == CUA_ERR_TIMEDOUT ? "(a minute)"
                                           : cua_future_error(f));
      cua_future_destroy(f);
      /* An update: a fill's value, an axpy's factor, a range's offset
       * and length. */
      rop *r = &rops[rnd((uint32_t)nrops)];
      if (r->kind == 0)
        r->v = (float)rnd(100);
      else if (r->kind == 1)
        r->v = -r->v;
      else if (r->kind == 3) {
        r->off = rnd(ELEMS / 2);
        r->n = 1 + rnd(ELEMS / 2);
      }
      cua_op *nop = make_op(r);
      rc = cua_graph_update(g, r->key, nop);
      ck_assert_msg(rc == 0, "%s: update: %s", policy, cua_runtime_error(rt));
      cua_op_destroy(nop);
    }
    if (dag % 4 == 3 || dag == n - 1)
      check_buffers(policy, dag);
    for (int i = 0; i < nrops; i++) {
      cua_op_destroy(rops[i].key);
      cua_op_destroy(rops[i].spin);
    }
    ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
    captures += info.captures;
    in_place += info.node_updates;
    cua_graph_destroy(g);
  }
  check_buffers(policy, n);
  printf("graph: %s: %d graphs (%zu streams, %zu waits between them in all), "
         "replayed with updates (%llu backend captures, %llu ops updated in "
         "place), all equal to the sequential reference\n",
         policy, n, streams, waits, (unsigned long long)captures,
         (unsigned long long)in_place);
  for (int b = 0; b < NBUF; b++)
    cua_buffer_destroy(bufs[b]);
  cua_runtime_destroy(rt);
}

START_TEST(round_robin_matches_sequential) {
  run_policy("round-robin", "[policy.round-robin]\nstreams = 4\n", 1);
}
END_TEST

START_TEST(scatter_two_devices_matches_sequential) {
  char extra[256];
  snprintf(extra, sizeof extra, "[policy.scatter]\nstreams = 3\n%s",
           two_devices_section());
  run_policy("scatter", extra, 2);
}
END_TEST

START_TEST(least_loaded_matches_sequential) {
  run_policy("least-loaded", NULL, 1);
}
END_TEST

START_TEST(dmda_heft_matches_sequential) {
  run_policy("dmda", NULL, 1);
  run_policy("heft", two_devices_section(), 2);
}
END_TEST

START_TEST(work_stealing_matches_sequential) {
  run_policy("work-stealing", "[policy.work-stealing]\nstreams = 3\n", 1);
}
END_TEST

/* DAGs of 64 to 190 ops: on CUDA their capture runs while they are
 * placed (a thread of cua_graph_create() captures each op as it is
 * recorded), and policies use more streams. */
START_TEST(large_graphs_match_sequential) {
  dag_base = 64;
  dag_span = 127;
  dag_count = 4;
  run_policy("round-robin", NULL, 1);
  run_policy("least-loaded", NULL, 1);
  run_policy("heft", two_devices_section(), 2);
  dag_base = 1;
  dag_span = 12;
  dag_count = 0;
}
END_TEST

START_TEST(single_stream_matches_sequential) {
  run_policy("single-stream", NULL, 1);
}
END_TEST

/* ----------------------------------------------------------- semantics */

static cua_buffer *make_buf(float v) {
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, ELEMS * sizeof(float), 0), 0);
  cua_op *f;
  ck_assert_int_eq(cua_op_fill(&f, b, v), 0);
  ck_assert_int_eq(run_op(rt, f), 0);
  return b;
}

static float first(cua_buffer *b) {
  float h[ELEMS];
  read_direct(b, h);
  for (int i = 1; i < ELEMS; i++)
    ck_assert(h[i] == h[0]);
  return h[0];
}

/* y += x as a graph of one op. */
static cua_graph *axpy_graph(cua_buffer *y, cua_buffer *x, cua_op **key) {
  cua_op *op;
  ck_assert_int_eq(cua_op_axpy(&op, y, 1.0f, x), 0);
  cua_graph *g;
  ck_assert_msg(cua_graph_create(&g, rt, op, NULL) == 0, "%s",
                cua_runtime_error(rt));
  if (key != NULL)
    *key = op;
  else
    cua_op_destroy(op);
  return g;
}

START_TEST(replays_accumulate) {
  rt = open_policy("round-robin", "[policy.round-robin]\nstreams = 3\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1);
  cua_graph *g = axpy_graph(y, x, NULL);
  for (int i = 0; i < 10; i++) {
    cua_future *f;
    ck_assert_int_eq(cua_graph_launch(&f, g), 0);
    cua_future_destroy(f);
  }
  ck_assert(first(y) == 10.0f);
  cua_graph_info info = {.size = sizeof info};
  ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
  ck_assert_int_eq((int)info.launches, 10);
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_int_eq((int)st.graphs, 1);
  ck_assert_int_eq((int)st.graph_launches, 10);
  ck_assert_int_eq((int)st.graph_updates, 0);
  ck_assert_int_eq((int)st.graph_captures, (int)info.captures);
  ck_assert_int_eq((int)info.ops, 1);
  ck_assert_int_eq((int)info.streams, 1);
  /* What creating it took: placement always, a backend capture only on a
   * backend with graphs. */
  ck_assert_uint_gt(info.place_ns, 0);
  ck_assert_uint_gt(info.build_ns, 0);
  ck_assert_uint_le(info.build_ns, info.place_ns);
  if (info.native) {
    /* The capture's end (instantiation) is part of its time. */
    ck_assert_uint_gt(info.capture_ns, 0);
    ck_assert_uint_gt(info.finish_ns, 0);
    ck_assert_uint_le(info.finish_ns, info.capture_ns);
  } else {
    ck_assert_uint_eq(info.capture_ns, 0);
    ck_assert_uint_eq(info.finish_ns, 0);
  }
  cua_graph_destroy(g);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* Graph launches and ordinary submissions on the same buffers, none
 * waited for until the end: each sees the others in call order. */
START_TEST(interleaved_with_submissions) {
  rt = open_policy("round-robin", "[policy.round-robin]\nstreams = 4\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1);
  cua_graph *g = axpy_graph(y, x, NULL); /* y += x */
  float want = 0;
  cua_future *f[60];
  for (int i = 0; i < 60; i++) {
    if (i % 3 == 2) {
      /* x = i: the next launches add it */
      cua_op *fill;
      ck_assert_int_eq(cua_op_fill(&fill, x, (float)i), 0);
      ck_assert_int_eq(cua_submit(&f[i], rt, fill, NULL), 0);
      cua_op_destroy(fill);
    } else {
      ck_assert_int_eq(cua_graph_launch(&f[i], g), 0);
      want += i < 2 ? 1.0f : (float)(i - i % 3 - 1);
    }
  }
  for (int i = 0; i < 60; i++) {
    ck_assert_int_eq(cua_future_wait(f[i]), 0);
    cua_future_destroy(f[i]);
  }
  ck_assert_msg(first(y) == want, "y = %g, expected %g", (double)first(y),
                (double)want);
  cua_graph_destroy(g);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

static cua_graph *shared_graph;

static void *launcher(void *arg) {
  (void)arg;
  for (int i = 0; i < 25; i++) {
    cua_future *f;
    if (cua_graph_launch(&f, shared_graph) != 0)
      return (void *)1;
    cua_future_destroy(f);
  }
  return NULL;
}

START_TEST(four_threads_launch_one_graph) {
  rt = open_policy("round-robin", "[policy.round-robin]\nstreams = 4\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1), *z = make_buf(0);
  /* Two ops on two streams: y += x, then z = y (a cross-stream wait). */
  cua_op *a, *c, *t;
  ck_assert_int_eq(cua_op_axpy(&a, y, 1.0f, x), 0);
  ck_assert_int_eq(cua_op_copy(&c, z, y), 0);
  ck_assert_int_eq(cua_op_zip(&t, (cua_op *[]){a, c}, 2), 0);
  ck_assert_msg(cua_graph_create(&shared_graph, rt, t, NULL) == 0, "%s",
                cua_runtime_error(rt));
  cua_op_destroy(a);
  cua_op_destroy(c);
  cua_op_destroy(t);
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(pthread_create(&th[i], NULL, launcher, NULL), 0);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    ck_assert_msg(r == NULL, "a launch failed");
  }
  ck_assert_int_eq(cua_runtime_synchronize(rt), 0);
  ck_assert(first(y) == 100.0f);
  ck_assert(first(z) == 100.0f);
  cua_graph_info info = {.size = sizeof info};
  ck_assert_int_eq(cua_graph_get_info(shared_graph, &info), 0);
  ck_assert_int_eq((int)info.launches, 100);
  cua_graph_destroy(shared_graph);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_buffer_destroy(z);
  cua_runtime_destroy(rt);
}
END_TEST

/* An update changes later launches only, a launch made before it keeps
 * its parameters, and a buffer can be rebound. */
START_TEST(update_values_and_buffers) {
  rt = open_policy("round-robin", "[policy.round-robin]\nstreams = 2\n");
  cua_buffer *y = make_buf(0), *y2 = make_buf(0), *small;
  ck_assert_int_eq(cua_buffer_create(&small, rt, 0, 16, 0), 0);
  cua_op *fill;
  ck_assert_int_eq(cua_op_fill(&fill, y, 5.0f), 0);
  cua_graph *g;
  ck_assert_int_eq(cua_graph_create(&g, rt, fill, NULL), 0);
  cua_future *f1, *f2;
  ck_assert_int_eq(cua_graph_launch(&f1, g), 0);
  cua_op *seven;
  ck_assert_int_eq(cua_op_fill(&seven, y, 7.0f), 0);
  ck_assert_int_eq(cua_graph_update(g, fill, seven), 0);
  ck_assert_int_eq(cua_future_wait(f1), 0);
  cua_future_destroy(f1);
  ck_assert(first(y) == 5.0f);
  ck_assert_int_eq(cua_graph_launch(&f2, g), 0);
  ck_assert_int_eq(cua_future_wait(f2), 0);
  cua_future_destroy(f2);
  ck_assert(first(y) == 7.0f);
  /* Rebound to y2: y keeps 7. The op is still named by its first handle. */
  cua_op *other;
  ck_assert_int_eq(cua_op_fill(&other, y2, 9.0f), 0);
  ck_assert_int_eq(cua_graph_update(g, fill, other), 0);
  ck_assert_int_eq(cua_graph_launch(&f2, g), 0);
  ck_assert_int_eq(cua_future_wait(f2), 0);
  cua_future_destroy(f2);
  ck_assert(first(y) == 7.0f);
  ck_assert(first(y2) == 9.0f);
  /* Refusals. */
  cua_op *wrong, *tiny;
  ck_assert_int_eq(cua_op_memset(&wrong, y, 0, 0, 8), 0);
  ck_assert_err(rt, cua_graph_update(g, fill, wrong), CUA_ERR_STRUCTURE,
                "the replacement is a memset op, the captured op a fill op");
  ck_assert_int_eq(cua_op_fill(&tiny, small, 1.0f), 0);
  ck_assert_err(rt, cua_graph_update(g, fill, tiny), CUA_ERR_STRUCTURE,
                "16 bytes");
  ck_assert_err(rt, cua_graph_update(g, seven, tiny), CUA_ERR_INVAL,
                "is not one of the graph's device ops");
  ck_assert_err(rt, cua_graph_update(g, NULL, tiny), CUA_ERR_INVAL,
                "NULL argument");
  cua_graph_info info = {.size = sizeof info};
  ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
  ck_assert_int_eq((int)info.updates, 2);
  /* A backend graph (CUDA) took both updates in place: one capture. */
  if (info.native) {
    ck_assert_int_eq((int)info.captures, 1);
    ck_assert_int_eq((int)info.node_updates, 2);
  } else {
    ck_assert_int_eq((int)info.node_updates, 0);
  }
  info.size = 4;
  ck_assert_err(rt, cua_graph_get_info(g, &info), CUA_ERR_INVAL,
                "set it to sizeof(cua_graph_info)");
  cua_op_destroy(wrong);
  cua_op_destroy(tiny);
  cua_op_destroy(other);
  cua_op_destroy(seven);
  cua_op_destroy(fill);
  cua_graph_destroy(g);
  cua_buffer_destroy(small);
  cua_buffer_destroy(y2);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* A rebinding onto a buffer other ops of the graph use would change the
 * order captured among them: refused. */
START_TEST(rebinding_onto_a_used_buffer_is_refused) {
  rt = open_policy("round-robin", "[policy.round-robin]\nstreams = 2\n");
  cua_buffer *a = make_buf(0), *b = make_buf(0);
  cua_op *fa, *fb, *z, *fab;
  ck_assert_int_eq(cua_op_fill(&fa, a, 1.0f), 0);
  ck_assert_int_eq(cua_op_fill(&fb, b, 2.0f), 0);
  ck_assert_int_eq(cua_op_zip(&z, (cua_op *[]){fa, fb}, 2), 0);
  cua_graph *g;
  ck_assert_int_eq(cua_graph_create(&g, rt, z, NULL), 0);
  ck_assert_int_eq(cua_op_fill(&fab, b, 3.0f), 0);
  ck_assert_err(rt, cua_graph_update(g, fa, fab), CUA_ERR_STRUCTURE,
                "used by another op of the graph");
  cua_op_destroy(fab);
  cua_op_destroy(fa);
  cua_op_destroy(fb);
  cua_op_destroy(z);
  cua_graph_destroy(g);
  cua_buffer_destroy(a);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

static int host_step(void *arg, void **result) {
  (void)arg;
  *result = NULL;
  return 0;
}

static int stream_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  (void)arg;
  return 0;
}

static int map_fn(void *in, void *arg, void **out) {
  (void)arg;
  *out = in;
  return 0;
}

/* What cannot be captured is refused, naming the op. */
START_TEST(uncapturable_ops_are_refused) {
  rt = open_policy("round-robin", NULL);
  cua_buffer *y = make_buf(0);
  cua_op *fill, *h, *t, *fn, *m, *bar, *sh, *alloc;
  ck_assert_int_eq(cua_op_fill(&fill, y, 1.0f), 0);
  ck_assert_int_eq(cua_op_host(&h, rt, host_step, NULL), 0);
  cua_hints hints = CUA_HINTS_INIT;
  hints.name = "my-host-step";
  ck_assert_int_eq(cua_op_set_hints(h, &hints), 0);
  ck_assert_int_eq(cua_op_then(&t, fill, h), 0);
  cua_graph *g = (cua_graph *)1;
  ck_assert_err(rt, cua_graph_create(&g, rt, t, NULL), CUA_ERR_CAPTURE,
                "op 'my-host-step' (host) cannot be captured");
  ck_assert_ptr_null(g);
  ck_assert_int_eq(cua_op_func(&fn, rt, stream_fn, NULL, NULL, 0), 0);
  ck_assert_err(rt, cua_graph_create(&g, rt, fn, NULL), CUA_ERR_CAPTURE,
                "(func) cannot be captured: a stream function");
  ck_assert_int_eq(cua_op_map(&m, fill, map_fn, NULL), 0);
  ck_assert_err(rt, cua_graph_create(&g, rt, m, NULL), CUA_ERR_CAPTURE,
                "(map) cannot be captured");
  ck_assert_int_eq(cua_op_barrier(&bar, rt), 0);
  ck_assert_err(rt, cua_graph_create(&g, rt, bar, NULL), CUA_ERR_CAPTURE,
                "(barrier) cannot be captured");
  ck_assert_int_eq(cua_op_shared(&sh, fill), 0);
  ck_assert_err(rt, cua_graph_create(&g, rt, sh, NULL), CUA_ERR_CAPTURE,
                "(shared) cannot be captured");
  cua_buffer *lazy;
  ck_assert_int_eq(
      cua_buffer_create(&lazy, rt, 0, ELEMS * sizeof(float), CUA_BUFFER_LAZY),
      0);
  ck_assert_int_eq(cua_op_alloc(&alloc, lazy), 0);
  ck_assert_err(rt, cua_graph_create(&g, rt, alloc, NULL), CUA_ERR_CAPTURE,
                "(alloc) cannot be captured");
  /* The refusals left nothing behind: the shared op still runs, once. */
  ck_assert_int_eq(cua_submit_wait(rt, sh, NULL, NULL), 0);
  ck_assert_err(rt, cua_graph_create(NULL, rt, fill, NULL), CUA_ERR_INVAL,
                "NULL argument");
  cua_graph_options o = {.size = 3};
  ck_assert_err(rt, cua_graph_create(&g, rt, fill, &o), CUA_ERR_INVAL,
                "sizeof(cua_graph_options)");
  ck_assert_err(rt, cua_graph_launch(NULL, NULL), CUA_ERR_INVAL,
                "NULL argument");
  /* A lazy buffer gets its memory at capture. */
  cua_op *lf;
  ck_assert_int_eq(cua_op_fill(&lf, lazy, 4.0f), 0);
  ck_assert_int_eq(cua_graph_create(&g, rt, lf, NULL), 0);
  cua_future *f;
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  ck_assert(first(lazy) == 4.0f);
  cua_graph_destroy(g);
  cua_op_destroy(lf);
  cua_op_destroy(alloc);
  cua_buffer_destroy(lazy);
  cua_op_destroy(sh);
  cua_op_destroy(bar);
  cua_op_destroy(m);
  cua_op_destroy(fn);
  cua_op_destroy(t);
  cua_op_destroy(h);
  cua_op_destroy(fill);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* Out of device memory while the graph gets its memory (a lazy buffer of
 * its DAG is allocated when the graph is created): CUA_ERR_DEVICE_OOM
 * naming the size and device, no graph, and the runtime goes on. On the
 * host backend through memory_mb, elsewhere a size no device has. */
START_TEST(out_of_device_memory_at_creation) {
  int host = strcmp(test_backend(), "host") == 0;
  rt =
      open_policy("round-robin", host ? "[backend.host]\nmemory_mb = 1\n" : "");
  size_t bytes = host ? (size_t)2 << 20 : (size_t)1 << 52;
  cua_buffer *lazy, *y = make_buf(0);
  ck_assert_int_eq(cua_buffer_create(&lazy, rt, 0, bytes, CUA_BUFFER_LAZY), 0);
  cua_op *big, *small, *both;
  ck_assert_int_eq(cua_op_fill(&big, lazy, 1.0f), 0);
  ck_assert_int_eq(cua_op_fill(&small, y, 2.0f), 0);
  ck_assert_int_eq(cua_op_zip(&both, (cua_op *[]){small, big}, 2), 0);
  cua_graph *g = (cua_graph *)1;
  char want[96];
  snprintf(want, sizeof want, "allocating %zu bytes on device 0", bytes);
  ck_assert_err(rt, cua_graph_create(&g, rt, both, NULL), CUA_ERR_DEVICE_OOM,
                want);
  ck_assert_ptr_null(g);
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_int_eq((int)st.graphs, 0);
  /* The runtime goes on: the small op alone is captured and replayed. */
  ck_assert_int_eq(cua_graph_create(&g, rt, small, NULL), 0);
  cua_future *f;
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  ck_assert(first(y) == 2.0f);
  cua_graph_destroy(g);
  cua_op_destroy(both);
  cua_op_destroy(small);
  cua_op_destroy(big);
  cua_buffer_destroy(lazy);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* Destroying the graph, its ops and buffers with launches in flight is
 * safe; a graph outliving its runtime can only be destroyed. */
START_TEST(lifetimes) {
  rt = open_policy("round-robin", "[policy.round-robin]\nstreams = 2\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1);
  cua_op *key;
  cua_graph *g = axpy_graph(y, x, &key);
  cua_future *f[8];
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(cua_graph_launch(&f[i], g), 0);
  cua_graph_destroy(g);
  cua_op_destroy(key);
  cua_buffer_destroy(x);
  for (int i = 0; i < 8; i++) {
    ck_assert_int_eq(cua_future_wait(f[i]), 0);
    cua_future_destroy(f[i]);
  }
  ck_assert(first(y) == 8.0f);
  x = make_buf(2);
  g = axpy_graph(y, x, NULL);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
  cua_future *late = (cua_future *)1;
  ck_assert_err(NULL, cua_graph_launch(&late, g), CUA_ERR_CANCELED,
                "runtime is closing or closed");
  ck_assert_ptr_null(late);
  cua_graph_destroy(g);
}
END_TEST

/* A launch's future gives the result the DAG's submission would: the host
 * pointer of a copy out, for the parameters the launch ran. */
START_TEST(launch_gives_results) {
  rt = open_policy("round-robin", "");
  cua_buffer *y = make_buf(3);
  float a[ELEMS], b[ELEMS];
  cua_op *d2h, *d2h_b;
  ck_assert_int_eq(cua_op_memcpy_d2h(&d2h, a, y, 0, sizeof a), 0);
  ck_assert_int_eq(cua_op_memcpy_d2h(&d2h_b, b, y, 0, sizeof b), 0);
  cua_graph *g;
  ck_assert_int_eq(cua_graph_create(&g, rt, d2h, NULL), 0);
  void *res = NULL;
  cua_future *f;
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_int_eq(cua_future_result(f, &res), 0);
  ck_assert_ptr_eq(res, a);
  ck_assert(a[0] == 3.0f);
  cua_future_destroy(f);
  ck_assert_int_eq(cua_graph_update(g, d2h, d2h_b), 0);
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_int_eq(cua_future_result(f, &res), 0);
  ck_assert_ptr_eq(res, b);
  ck_assert(b[ELEMS - 1] == 3.0f);
  cua_future_destroy(f);
  cua_graph_destroy(g);
  cua_op_destroy(d2h);
  cua_op_destroy(d2h_b);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* cua_graph_placement() gives each op where the policy put it: round-robin
 * deals a zip's ops over its streams in turn, and a then keeps its op on
 * its predecessor's stream. */
START_TEST(placement_is_the_policys) {
  rt = open_policy("round-robin",
                   "[policy.round-robin]\nstreams = 3\ndevices = preferred\n");
  cua_buffer *b[6];
  cua_op *ops[6];
  for (int i = 0; i < 6; i++) {
    b[i] = make_buf(0);
    ck_assert_int_eq(cua_op_fill(&ops[i], b[i], (float)i), 0);
  }
  cua_op *tail;
  ck_assert_int_eq(cua_op_fill(&tail, b[5], 9.0f), 0);
  cua_op *last;
  ck_assert_int_eq(cua_op_then(&last, ops[5], tail), 0);
  cua_op *parts[6] = {ops[0], ops[1], ops[2], ops[3], ops[4], last};
  cua_op *root;
  ck_assert_int_eq(cua_op_zip(&root, parts, 6), 0);
  cua_graph *g;
  ck_assert_msg(cua_graph_create(&g, rt, root, NULL) == 0, "%s",
                cua_runtime_error(rt));
  cua_op_destroy(root);
  cua_op_destroy(last);
  int used[3] = {0, 0, 0};
  cua_placement pl[6], pt;
  for (int i = 0; i < 6; i++) {
    ck_assert_int_eq(cua_graph_placement(g, ops[i], &pl[i]), 0);
    ck_assert_int_eq(pl[i].device, 0);
    ck_assert_int_eq(pl[i].node, 0);
    ck_assert_int_eq(pl[i].reserved, 0);
    ck_assert(pl[i].stream >= 0 && pl[i].stream < 3);
    used[pl[i].stream]++;
  }
  ck_assert_int_eq(used[0], 2);
  ck_assert_int_eq(used[1], 2);
  ck_assert_int_eq(used[2], 2);
  ck_assert_int_eq(cua_graph_placement(g, tail, &pt), 0);
  ck_assert_int_eq(pt.device, pl[5].device);
  ck_assert_int_eq(pt.stream, pl[5].stream);
  cua_graph_info info = {.size = sizeof info};
  ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
  ck_assert_int_eq((int)info.ops, 7);
  ck_assert_int_eq((int)info.streams, 3);
  /* A zip is not one of the graph's device ops. */
  cua_op *z;
  ck_assert_int_eq(cua_op_zip(&z, ops, 2), 0);
  ck_assert_int_eq(cua_graph_placement(g, z, &pt), CUA_ERR_INVAL);
  ck_assert_str_eq(cua_runtime_error(rt),
                   "cua_graph_placement: op 'zip' is not one of the graph's "
                   "device ops");
  ck_assert_int_eq(cua_graph_placement(NULL, ops[0], &pt), CUA_ERR_INVAL);
  ck_assert_int_eq(cua_graph_placement(g, NULL, &pt), CUA_ERR_INVAL);
  cua_op_destroy(z);
  cua_graph_destroy(g);
  for (int i = 0; i < 6; i++) {
    cua_op_destroy(ops[i]);
    cua_buffer_destroy(b[i]);
  }
  cua_op_destroy(tail);
  cua_runtime_destroy(rt);
}
END_TEST

/* A graph's edges are the fewest that keep the DAG's order and each
 * stream's: a chain spread round-robin over four streams has one edge per
 * op but the first (a wait each, which orders it after its stream's
 * previous op too: 11 edges, not 11 + 8); independent ops have only their
 * streams' order; a diamond's join waits for both sides. The replays give
 * what running the ops in order gives. */
START_TEST(edges_are_the_fewest_that_keep_order) {
  /* devices = preferred: the four streams of device 0, where the
   * buffers are, however many devices there are. */
  rt = open_policy("round-robin",
                   "[policy.round-robin]\nstreams = 4\ndevices = preferred\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1);
  /* A zip: round-robin gives each op the next stream (a then would keep
   * its op on its predecessor's); y's hazards chain them. */
  cua_op *acc = NULL;
  for (int i = 0; i < 12; i++) {
    cua_op *a;
    ck_assert_int_eq(cua_op_axpy(&a, y, 1.0f, x), 0);
    acc = acc == NULL ? a : join(acc, a, 1);
  }
  cua_graph *g;
  ck_assert_msg(cua_graph_create(&g, rt, acc, NULL) == 0, "%s",
                cua_runtime_error(rt));
  cua_op_destroy(acc);
  cua_graph_info info = {.size = sizeof info};
  ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
  ck_assert_int_eq((int)info.ops, 12);
  ck_assert_int_eq((int)info.streams, 4);
  ck_assert_int_eq((int)info.waits, 11);
  ck_assert_int_eq((int)info.edges, 11);
  for (int k = 0; k < 3; k++) {
    cua_future *f;
    ck_assert_int_eq(cua_graph_launch(&f, g), 0);
    ck_assert_msg(cua_future_wait(f) == 0, "%s", cua_future_error(f));
    cua_future_destroy(f);
  }
  ck_assert(first(y) == 36.0f);
  cua_graph_destroy(g);

  /* Eight independent fills over four streams: two per stream. */
  cua_buffer *b[8];
  cua_op *fills[8];
  for (int i = 0; i < 8; i++) {
    b[i] = make_buf(0);
    ck_assert_int_eq(cua_op_fill(&fills[i], b[i], (float)(i + 1)), 0);
  }
  cua_op *z;
  ck_assert_int_eq(cua_op_zip(&z, fills, 8), 0);
  ck_assert_int_eq(cua_graph_create(&g, rt, z, NULL), 0);
  ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
  ck_assert_int_eq((int)info.streams, 4);
  ck_assert_int_eq((int)info.waits, 0);
  ck_assert_int_eq((int)info.edges, 4);
  cua_future *f;
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  for (int i = 0; i < 8; i++)
    ck_assert(first(b[i]) == (float)(i + 1));
  cua_graph_destroy(g);
  cua_op_destroy(z);
  for (int i = 0; i < 8; i++)
    cua_op_destroy(fills[i]);

  /* A diamond: b0 = 5, then b1 += b0 and b2 += b0 beside each other,
   * then b3 += b1 and b3 += b2 (b3 = 0 before). */
  cua_op *top, *l, *r, *j1, *j2;
  ck_assert_int_eq(cua_op_fill(&top, b[0], 5.0f), 0);
  ck_assert_int_eq(cua_op_fill(&l, b[3], 0.0f), 0);
  cua_op *lr[2];
  ck_assert_int_eq(cua_op_axpy(&lr[0], b[1], 1.0f, b[0]), 0);
  ck_assert_int_eq(cua_op_axpy(&lr[1], b[2], 1.0f, b[0]), 0);
  ck_assert_int_eq(cua_op_zip(&r, lr, 2), 0);
  cua_op_destroy(lr[0]);
  cua_op_destroy(lr[1]);
  ck_assert_int_eq(cua_op_axpy(&j1, b[3], 1.0f, b[1]), 0);
  ck_assert_int_eq(cua_op_axpy(&j2, b[3], 1.0f, b[2]), 0);
  cua_op *d = join(join(join(join(top, l, 1), r, 0), j1, 0), j2, 0);
  ck_assert_int_eq(cua_graph_create(&g, rt, d, NULL), 0);
  cua_op_destroy(d);
  ck_assert_int_eq(cua_graph_get_info(g, &info), 0);
  ck_assert_int_eq((int)info.ops, 6);
  /* A then orders its next part after all of its first: each side
   * depends on both fills (2 + 2), j1 on its side (b3's fill comes before
   * through it), j2 on j1 and the other side: 7, the DAG's own; the
   * streams' order adds none here. */
  ck_assert_int_eq((int)info.edges, 7);
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  ck_assert(first(b[1]) == 7.0f); /* 2 + 5 */
  ck_assert(first(b[2]) == 8.0f); /* 3 + 5 */
  ck_assert(first(b[3]) == 15.0f);
  cua_graph_destroy(g);
  for (int i = 0; i < 8; i++)
    cua_buffer_destroy(b[i]);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* --------------------------------------------------------- automatic mode */

static cua_stats stats_of(void) {
  cua_stats st;
  memset(&st, 0, sizeof st);
  st.size = sizeof st;
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  return st;
}

/* The DAG random_dag() made, made again from rops[] and joins[] (new op
 * objects, the parameters rops[] has now): the same structure. */
static cua_op *rebuild_dag(void) {
  cua_op *acc = NULL;
  for (int i = 0; i < nrops; i++) {
    rop *r = &rops[i];
    cua_op *key = make_op(r), *next = key;
    cua_op *spin = NULL;
    if (r->spin != NULL) {
      ck_assert_int_eq(cua_op_spin(&spin, rt, r->spin_ns, 1), 0);
      ck_assert_int_eq(cua_op_then(&next, spin, key), 0);
      cua_op_destroy(spin);
    } else {
      cua_op_retain(key);
    }
    cua_op_destroy(key);
    acc = acc == NULL ? next : join(acc, next, joins[i]);
  }
  return acc;
}

/* Random DAGs, each submitted four times, as a loop that builds its step
 * anew: the first as made, then twice rebuilt with a new scalar (in auto
 * mode the second submission is captured, the third updates it), then with
 * a range moved (another fingerprint when its byte count changes). Results
 * equal the sequential reference in auto and always modes. */
static void run_auto(const char *mode) {
  char cfg[128];
  snprintf(cfg, sizeof cfg,
           "graphs = %s\ngraph_cache = 8\n[policy.round-robin]\nstreams = 3\n",
           mode);
  rt = open_policy("round-robin", cfg);
  rng = 0x1234567ull;
  for (int b = 0; b < NBUF; b++) {
    ck_assert_int_eq(
        cua_buffer_create(&bufs[b], rt, 0, ELEMS * sizeof(float), 0), 0);
    cua_op *z;
    ck_assert_int_eq(cua_op_fill(&z, bufs[b], (float)b), 0);
    ck_assert_int_eq(run_op(rt, z), 0);
    for (int i = 0; i < ELEMS; i++)
      ref[b][i] = (float)b;
  }
  int n = graphs_per_policy();
  uint64_t min_replays = 0, subs = 0;
  uint64_t base = stats_of().graph_replays; /* always: the fills above */
  for (int dag = 0; dag < n; dag++) {
    nrops = 0;
    int nops = 1 + (int)rnd(10);
    cua_op *root = random_dag(nops);
    /* A zip of a zip: a result a launch's future does not give, never
     * replayed. */
    int replayable = !(nops >= 3 && joins[nops - 1] && joins[nops - 2]);
    for (int k = 0; k < 4; k++) {
      if (k > 0) {
        rop *r = &rops[rnd((uint32_t)nrops)];
        if (k == 3 && r->kind == 3) {
          r->off = rnd(ELEMS / 2);
          r->n = 1 + rnd(ELEMS / 2);
        } else if (k < 3 && r->kind == 0) {
          r->v = (float)(100 + rnd(100));
        } else if (k < 3 && r->kind == 1) {
          r->v = -r->v;
        }
        cua_op_destroy(root);
        root = rebuild_dag();
      }
      cua_future *f;
      ck_assert_int_eq(cua_submit(&f, rt, root, NULL), 0);
      for (int i = 0; i < nrops; i++)
        apply_ref(&rops[i]);
      ck_assert_msg(cua_future_wait(f) == 0, "%s", cua_future_error(f));
      cua_future_destroy(f);
      subs += replayable;
    }
    /* Submissions 2 and 3 have the fingerprint of one before them. */
    min_replays += replayable ? 2 : 0;
    cua_op_destroy(root);
    for (int i = 0; i < nrops; i++) {
      cua_op_destroy(rops[i].key);
      cua_op_destroy(rops[i].spin);
    }
    if (dag % 4 == 3 || dag == n - 1)
      check_buffers(mode, dag);
  }
  cua_stats st = stats_of();
  st.graph_replays -= base;
  if (strcmp(mode, "always") == 0)
    ck_assert_msg(st.graph_replays == subs, "%llu replays, expected %llu",
                  (unsigned long long)st.graph_replays,
                  (unsigned long long)subs);
  else
    ck_assert_msg(st.graph_replays >= min_replays && st.graph_replays < subs,
                  "%llu replays, expected %llu or more, below %llu",
                  (unsigned long long)st.graph_replays,
                  (unsigned long long)min_replays, (unsigned long long)subs);
  ck_assert_uint_gt(st.graph_updates, 0);
  printf("graph: %s: %d DAGs submitted four times, rebuilt with new "
         "parameters: %llu graphs, %llu replays, %llu updates, %llu "
         "evictions, all equal to the sequential reference\n",
         mode, n, (unsigned long long)st.graphs,
         (unsigned long long)st.graph_replays,
         (unsigned long long)st.graph_updates,
         (unsigned long long)st.graph_evictions);
  for (int b = 0; b < NBUF; b++)
    cua_buffer_destroy(bufs[b]);
  cua_runtime_destroy(rt);
}

static int poison_fn(cua_stream_ctx *ctx, void *arg) {
  (void)arg;
  cua_ctx_fail(ctx, "poisoned on purpose");
  return CUA_ERR_OP_FAILED;
}

/* Leaves @p b failed: its last writer is a stream function that failed. */
static void poison(cua_buffer *b) {
  cua_access w = {b, CUA_WRITE};
  cua_op *p;
  ck_assert_int_eq(cua_op_func(&p, rt, poison_fn, NULL, &w, 1), 0);
  ck_assert_int_eq(run_op(rt, p), CUA_ERR_OP_FAILED); /* (destroys p) */
}

/* h2d(x) -> copy(y, x) -> d2h(y), built anew: its future's status. */
static int copy_through(cua_buffer *x, cua_buffer *y, const float *in,
                        float *out) {
  cua_op *h2d, *cp, *d2h, *a, *dag;
  ck_assert_int_eq(cua_op_memcpy_h2d(&h2d, x, 0, in, ELEMS * sizeof *in), 0);
  ck_assert_int_eq(cua_op_copy(&cp, y, x), 0);
  ck_assert_int_eq(cua_op_memcpy_d2h(&d2h, out, y, 0, ELEMS * sizeof *out), 0);
  ck_assert_int_eq(cua_op_then(&a, h2d, cp), 0);
  ck_assert_int_eq(cua_op_then(&dag, a, d2h), 0);
  int rc = cua_submit_wait(rt, dag, NULL, NULL);
  cua_op *all[] = {h2d, cp, d2h, a, dag};
  for (size_t i = 0; i < 5; i++)
    cua_op_destroy(all[i]);
  return rc;
}

/* A launch consumes only what its ops read before they write it: a graph
 * whose first op overwrites a buffer left failed runs (as the same ops
 * submitted do), and does not leave every buffer it touches failed for the
 * launches after it; one that reads the failed buffer fails, naming the
 * cause, and runs again once the buffer is written. Explicitly and in
 * graphs = auto. */
START_TEST(a_launch_recovers_a_buffer_its_first_op_overwrites) {
  for (int mode = 0; mode < 2; mode++) {
    rt = open_policy("round-robin", mode ? "graphs = auto\n" : "");
    cua_buffer *x = make_buf(1), *y = make_buf(2);
    float in[ELEMS], out[ELEMS];
    cua_op *h2d, *cp, *d2h, *a, *dag, *rd;
    ck_assert_int_eq(cua_op_memcpy_h2d(&h2d, x, 0, in, sizeof in), 0);
    ck_assert_int_eq(cua_op_copy(&cp, y, x), 0);
    ck_assert_int_eq(cua_op_memcpy_d2h(&d2h, out, y, 0, sizeof out), 0);
    ck_assert_int_eq(cua_op_then(&a, h2d, cp), 0);
    ck_assert_int_eq(cua_op_then(&dag, a, d2h), 0);
    ck_assert_int_eq(cua_op_memcpy_d2h(&rd, out, x, 0, sizeof out), 0);
    cua_graph *g = NULL, *reader = NULL;
    if (mode == 0) {
      ck_assert_int_eq(cua_graph_create(&g, rt, dag, NULL), 0);
      ck_assert_int_eq(cua_graph_create(&reader, rt, rd, NULL), 0);
    }
    for (int round = 0; round < 6; round++) {
      poison(x);
      for (int i = 0; i < ELEMS; i++)
        in[i] = (float)(round + 5);
      int rc;
      if (mode == 0) {
        cua_future *f;
        ck_assert_int_eq(cua_graph_launch(&f, g), 0);
        rc = cua_future_wait(f);
        ck_assert_msg(rc == 0, "round %d: %s", round, cua_future_error(f));
        cua_future_destroy(f);
      } else {
        rc = copy_through(x, y, in, out);
        ck_assert_msg(rc == 0, "round %d: %s", round, cua_runtime_error(rt));
      }
      for (int i = 0; i < ELEMS; i++)
        ck_assert(out[i] == (float)(round + 5));
    }
    if (mode == 0) {
      /* The reader consumes x: it fails while x is failed, with the cause,
       * and runs once the graph wrote x again. */
      poison(x);
      cua_future *f;
      ck_assert_int_eq(cua_graph_launch(&f, reader), 0);
      ck_assert_int_eq(cua_future_wait(f), CUA_ERR_DEPENDENCY);
      ck_assert_msg(strstr(cua_future_error(f), "poisoned on purpose") != NULL,
                    "%s", cua_future_error(f));
      cua_future_destroy(f);
      ck_assert_int_eq(cua_graph_launch(&f, g), 0);
      ck_assert_int_eq(cua_future_wait(f), 0);
      cua_future_destroy(f);
      ck_assert_int_eq(cua_graph_launch(&f, reader), 0);
      ck_assert_int_eq(cua_future_wait(f), 0);
      cua_future_destroy(f);
      cua_graph_destroy(g);
      cua_graph_destroy(reader);
    } else {
      cua_stats st = stats_of();
      ck_assert_int_ge((int)st.graph_replays, 3);
    }
    cua_op *all[] = {h2d, cp, d2h, a, dag, rd};
    for (size_t i = 0; i < 6; i++)
      cua_op_destroy(all[i]);
    cua_buffer_destroy(x);
    cua_buffer_destroy(y);
    cua_runtime_destroy(rt);
  }
}
END_TEST

/* A launch refused for a buffer names the call and the graph's op that
 * uses the buffer, not the submission and the launch's union of buffers;
 * so does a submission that graphs = auto turns into a launch. */
START_TEST(a_refused_launch_names_the_graphs_op) {
  for (int mode = 0; mode < 2; mode++) {
    rt = open_policy("round-robin", mode ? "graphs = always\n" : "");
    cua_buffer *x = make_buf(1), *y = make_buf(2), *z = make_buf(3);
    cua_op *fill, *cp, *dag, *fr;
    ck_assert_int_eq(cua_op_fill(&fill, z, 4.0f), 0);
    ck_assert_int_eq(cua_op_copy(&cp, y, x), 0);
    cua_hints h = CUA_HINTS_INIT;
    h.name = "mycopy";
    ck_assert_int_eq(cua_op_set_hints(cp, &h), 0);
    ck_assert_int_eq(cua_op_then(&dag, fill, cp), 0);
    cua_graph *g = NULL;
    if (mode == 0)
      ck_assert_int_eq(cua_graph_create(&g, rt, dag, NULL), 0);
    else
      ck_assert_int_eq(cua_submit_wait(rt, dag, NULL, NULL), 0); /* cached */
    ck_assert_int_eq(cua_op_free(&fr, x), 0);
    ck_assert_int_eq(run_op(rt, fr), 0);
    cua_future *f = NULL;
    const char *want = mode == 0 ? "cua_graph_launch: graph op 'mycopy', "
                                   "buffer "
                                 : "cua_submit: graph op 'mycopy', buffer ";
    ck_assert_err(rt,
                  mode == 0 ? cua_graph_launch(&f, g)
                            : cua_submit_wait(rt, dag, NULL, NULL),
                  CUA_ERR_FREED, want);
    ck_assert_msg(strstr(cua_runtime_error(rt), "freed") != NULL, "%s",
                  cua_runtime_error(rt));
    ck_assert_ptr_null(f);
    if (g != NULL)
      cua_graph_destroy(g);
    cua_op *all[] = {fill, cp, dag}; /* (run_op() destroyed fr) */
    for (size_t i = 0; i < 3; i++)
      cua_op_destroy(all[i]);
    cua_buffer_destroy(x);
    cua_buffer_destroy(y);
    cua_buffer_destroy(z);
    cua_runtime_destroy(rt);
  }
}
END_TEST

/* A memset's length and a spin's duration are parameters, though their
 * constructors copy them into the bytes and cost hints: a step whose sizes
 * change is replayed (updated), with the right results, not captured
 * anew for every size. A hint the program sets itself still counts. */
START_TEST(auto_mode_replays_a_step_whose_sizes_change) {
  rt = open_policy("round-robin", "graphs = auto\n");
  cua_buffer *x = make_buf(0);
  for (int i = 0; i < 24; i++) {
    size_t len = 4 * (size_t)(1 + i % 16);
    cua_op *clear, *set, *spin, *a, *dag;
    ck_assert_int_eq(cua_op_memset(&clear, x, 0, 0, ELEMS * sizeof(float)), 0);
    ck_assert_int_eq(cua_op_memset(&set, x, 0, 0x3f, len), 0);
    ck_assert_int_eq(cua_op_spin(&spin, rt, 1000u * (uint64_t)(1 + i % 5), 1),
                     0);
    ck_assert_int_eq(cua_op_then(&a, clear, set), 0);
    ck_assert_int_eq(cua_op_then(&dag, spin, a), 0);
    ck_assert_int_eq(cua_submit_wait(rt, dag, NULL, NULL), 0);
    unsigned char h[ELEMS * sizeof(float)];
    read_direct(x, (float *)(void *)h);
    for (size_t k = 0; k < sizeof h; k++)
      ck_assert_msg(h[k] == (k < len ? 0x3f : 0), "step %d byte %zu: %u", i, k,
                    h[k]);
    cua_op *all[] = {clear, set, spin, a, dag};
    for (size_t k = 0; k < 5; k++)
      cua_op_destroy(all[k]);
  }
  cua_stats st = stats_of();
  ck_assert_int_eq((int)st.graphs, 1);
  ck_assert_int_eq((int)st.graph_replays, 23);
  cua_buffer_destroy(x);
  cua_runtime_destroy(rt);
}
END_TEST

/* cua_stats.ops counts the ops a launch runs, as submitting them would
 * (a launch counted one: a dashboard saw a third of the ops once graphs
 * were on). */
START_TEST(a_launch_counts_its_graphs_ops) {
  rt = open_policy("round-robin", "");
  cua_buffer *x = make_buf(1), *y = make_buf(2);
  cua_op *f1, *f2, *ax, *a, *dag;
  ck_assert_int_eq(cua_op_fill(&f1, x, 1.0f), 0);
  ck_assert_int_eq(cua_op_fill(&f2, y, 2.0f), 0);
  ck_assert_int_eq(cua_op_axpy(&ax, y, 3.0f, x), 0);
  ck_assert_int_eq(cua_op_then(&a, f1, f2), 0);
  ck_assert_int_eq(cua_op_then(&dag, a, ax), 0);
  cua_graph *g = NULL;
  ck_assert_int_eq(cua_graph_create(&g, rt, dag, NULL), 0);
  uint64_t before = stats_of().ops;
  for (int i = 0; i < 5; i++) {
    cua_future *f = NULL;
    ck_assert_int_eq(cua_graph_launch(&f, g), 0);
    ck_assert_int_eq(cua_future_wait(f), 0);
    cua_future_destroy(f);
  }
  ck_assert_uint_eq(stats_of().ops - before, 15);
  cua_graph_destroy(g);
  cua_op *all[] = {f1, f2, ax, a, dag};
  for (size_t i = 0; i < 5; i++)
    cua_op_destroy(all[i]);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(auto_mode_matches_sequential) {
  run_auto("auto");
}
END_TEST

START_TEST(always_mode_matches_sequential) {
  run_auto("always");
}
END_TEST

static int auto_host_calls;

static int count_host(void *arg, void **result) {
  (void)arg;
  auto_host_calls++;
  *result = NULL;
  return 0;
}

/* fill(y, v) then axpy(y += a * x): one decode-style step, made anew. */
static cua_op *step(cua_buffer *y, float v, float a, cua_buffer *x) {
  cua_op *fill, *ax, *t;
  ck_assert_int_eq(cua_op_fill(&fill, y, v), 0);
  ck_assert_int_eq(cua_op_axpy(&ax, y, a, x), 0);
  ck_assert_int_eq(cua_op_then(&t, fill, ax), 0);
  cua_op_destroy(fill);
  cua_op_destroy(ax);
  return t;
}

static void submit_step(cua_buffer *y, float v, float a, cua_buffer *x) {
  cua_op *t = step(y, v, a, x);
  ck_assert_int_eq(cua_submit_wait(rt, t, NULL, NULL), 0);
  cua_op_destroy(t);
}

/* A loop that builds its step anew each time: one graph, replayed and
 * updated, with the results of running the ops one by one. */
START_TEST(auto_mode_updates_parameters) {
  rt = open_policy("round-robin", "graphs = auto\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1);
  for (int i = 0; i < 20; i++) {
    /* The same scalars twice in a row: a replay with no update. */
    float v = (float)(i / 2), a = (float)(1 + i / 2);
    submit_step(y, v, a, x);
    ck_assert(first(y) == v + a);
  }
  cua_stats st = stats_of();
  ck_assert_int_eq((int)st.graphs, 1);
  ck_assert_int_eq((int)st.graph_replays, 19);
  /* Submission 2 captured submission 2's scalars; each of the 9 later
   * changes updates both ops. */
  ck_assert_int_eq((int)st.graph_updates, 18);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* A change of structure is another fingerprint: captured as a graph of
 * its own, the first one stays cached. A buffer the application destroys
 * takes the graphs that use it out of the cache. */
START_TEST(auto_mode_structure_and_buffers) {
  rt = open_policy("round-robin", "graphs = auto\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1), *z = make_buf(3);
  for (int i = 0; i < 3; i++) {
    submit_step(y, 1.0f, 2.0f, x);
    ck_assert(first(y) == 3.0f);
    submit_step(y, 1.0f, 2.0f, z); /* another buffer: another graph */
    ck_assert(first(y) == 7.0f);
  }
  /* One op more: another structure. */
  for (int i = 0; i < 3; i++) {
    cua_op *t = step(y, 1.0f, 1.0f, x), *c, *t2;
    ck_assert_int_eq(cua_op_copy(&c, z, y), 0);
    ck_assert_int_eq(cua_op_then(&t2, t, c), 0);
    ck_assert_int_eq(cua_submit_wait(rt, t2, NULL, NULL), 0);
    cua_op_destroy(t2);
    cua_op_destroy(c);
    cua_op_destroy(t);
    ck_assert(first(z) == 2.0f);
  }
  cua_stats st = stats_of();
  ck_assert_int_eq((int)st.graphs, 3);
  ck_assert_int_eq((int)st.graph_replays, 6);
  ck_assert_int_eq((int)st.graph_evictions, 0);
  /* z is in two of the three: both go; the one of x and y stays. */
  cua_buffer_destroy(z);
  st = stats_of();
  ck_assert_int_eq((int)st.graph_evictions, 2);
  submit_step(y, 1.0f, 2.0f, x);
  ck_assert(first(y) == 3.0f);
  st = stats_of();
  ck_assert_int_eq((int)st.graph_replays, 7);
  ck_assert_int_eq((int)st.graphs, 3);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  ck_assert_int_eq((int)stats_of().graph_evictions, 3);
  cua_runtime_destroy(rt);
}
END_TEST

/* A cached graph is matched by the policy that placed it: one of a closed
 * policy handle went on being replayed for a policy opened later at the
 * same address (the allocator's to give), placed as the closed one said.
 * cua_policy_close() drops the graphs its policy placed. */
static void submit_step_with(cua_policy *pol, cua_buffer *y, float v, float a,
                             cua_buffer *x) {
  cua_op *t = step(y, v, a, x);
  cua_submit_options o = {.size = sizeof o, .policy = pol};
  ck_assert_int_eq(cua_submit_wait(rt, t, &o, NULL), 0);
  cua_op_destroy(t);
}

START_TEST(auto_mode_forgets_the_graphs_of_a_closed_policy) {
  rt = open_policy("round-robin", "graphs = auto\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1);
  cua_policy *a = NULL, *b = NULL;
  ck_assert_int_eq(cua_policy_open(&a, rt, "single-stream"), 0);
  for (int i = 0; i < 2; i++)
    submit_step_with(a, y, 1.0f, 2.0f, x);
  cua_stats st = stats_of();
  ck_assert_int_eq((int)st.graphs, 1);
  ck_assert_int_eq((int)st.graph_replays, 1);
  uintptr_t was = (uintptr_t)a;
  cua_policy_close(a);
  ck_assert_int_eq((int)stats_of().graph_evictions, 1);
  ck_assert_int_eq(cua_policy_open(&b, rt, "single-stream"), 0);
  if ((uintptr_t)b != was)
    printf("auto_mode_forgets_the_graphs_of_a_closed_policy: the new policy "
           "has another address; only the eviction is tested\n");
  for (int i = 0; i < 2; i++)
    submit_step_with(b, y, 1.0f, 2.0f, x);
  ck_assert(first(y) == 3.0f);
  st = stats_of();
  /* b's own graph: captured anew, then replayed once. */
  ck_assert_int_eq((int)st.graphs, 2);
  ck_assert_int_eq((int)st.graph_replays, 2);
  cua_policy_close(b);
  cua_buffer_destroy(x);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* Four threads submit the same step, built anew each time with a factor
 * of their own (y += k * x, then z = y): one fingerprint, so one cached
 * graph, updated and launched by turns, and the same root resubmitted
 * (the path that skips the walk). Sums commute: y ends as the sum of all
 * the factors, whatever the order. */
static cua_buffer *auto_y, *auto_x, *auto_z;

static void *auto_submitter(void *arg) {
  int k = (int)(intptr_t)arg;
  for (int i = 0; i < 25; i++) {
    cua_op *a, *c, *t;
    if (cua_op_axpy(&a, auto_y, (float)k, auto_x) ||
        cua_op_copy(&c, auto_z, auto_y) || cua_op_then(&t, a, c))
      return (void *)1;
    /* Every fifth step twice: the second time the same root. */
    int rc = cua_submit_wait(rt, t, NULL, NULL);
    if (rc == 0 && i % 5 == 0)
      rc = cua_submit_wait(rt, t, NULL, NULL);
    cua_op_destroy(a);
    cua_op_destroy(c);
    cua_op_destroy(t);
    if (rc != 0)
      return (void *)1;
  }
  return NULL;
}

START_TEST(auto_mode_four_threads) {
  rt = open_policy("round-robin", "graphs = auto\n[policy.round-robin]\n"
                                  "streams = 3\n");
  auto_y = make_buf(0);
  auto_x = make_buf(1);
  auto_z = make_buf(0);
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(
        pthread_create(&th[i], NULL, auto_submitter, (void *)(intptr_t)(i + 1)),
        0);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    ck_assert_msg(r == NULL, "a submission failed: %s", cua_runtime_error(rt));
  }
  /* Each thread: 25 steps and 5 repeats of factor k: 30 k. */
  float want = 30.0f * (1 + 2 + 3 + 4);
  ck_assert_msg(first(auto_y) == want, "y = %g, expected %g",
                (double)first(auto_y), (double)want);
  cua_stats st = stats_of();
  /* 120 submissions of one fingerprint, one graph. Those made while a
   * thread captures it run as usual; every later one of the capturing
   * thread's (25 at least) replays. */
  ck_assert_int_eq((int)st.graphs, 1);
  ck_assert_uint_ge(st.graph_replays, 25);
  printf("graph: auto, four threads: 120 submissions of one step, %llu "
         "replays, %llu updates, all sums right\n",
         (unsigned long long)st.graph_replays,
         (unsigned long long)st.graph_updates);
  cua_buffer_destroy(auto_x);
  cua_buffer_destroy(auto_y);
  cua_buffer_destroy(auto_z);
  cua_runtime_destroy(rt);
}
END_TEST

/* What auto mode leaves to ordinary submissions, and its cache's bound. */
START_TEST(auto_mode_limits) {
  rt = open_policy("round-robin", "graphs = auto\ngraph_cache = 2\n");
  cua_buffer *y = make_buf(0), *x = make_buf(1);
  /* A host step: never captured, runs every time. */
  cua_op *fill, *h, *t;
  ck_assert_int_eq(cua_op_fill(&fill, y, 2.0f), 0);
  ck_assert_int_eq(cua_op_host(&h, rt, count_host, NULL), 0);
  ck_assert_int_eq(cua_op_then(&t, fill, h), 0);
  for (int k = 0; k < 3; k++)
    ck_assert_int_eq(cua_submit_wait(rt, t, NULL, NULL), 0);
  ck_assert_int_eq(auto_host_calls, 3);
  ck_assert_int_eq((int)stats_of().graph_replays, 0);
  /* Roots with results (copies out, a zip of them): a launch's future
   * gives what the submission's would, for the parameters it ran. */
  float out[2][ELEMS];
  for (int k = 0; k < 4; k++) {
    cua_op *d2h[2], *z, *t2;
    for (int i = 0; i < 2; i++)
      ck_assert_int_eq(
          cua_op_memcpy_d2h(&d2h[i], out[(k + i) % 2], y, 0, sizeof out[0]), 0);
    ck_assert_int_eq(cua_op_then(&t2, fill, d2h[0]), 0);
    void *res = NULL;
    memset(out, 0, sizeof out);
    ck_assert_int_eq(cua_submit_wait(rt, t2, NULL, &res), 0);
    ck_assert_ptr_eq(res, out[k % 2]);
    ck_assert(out[k % 2][ELEMS - 1] == 2.0f);
    ck_assert_int_eq(cua_op_zip(&z, d2h, 2), 0);
    cua_future *f; /* a zip's result lives as long as its future */
    ck_assert_int_eq(cua_submit(&f, rt, z, NULL), 0);
    ck_assert_int_eq(cua_future_wait(f), 0);
    ck_assert_int_eq(cua_future_result(f, &res), 0);
    ck_assert_ptr_nonnull(res);
    ck_assert_ptr_eq(((void **)res)[0], out[k % 2]);
    ck_assert_ptr_eq(((void **)res)[1], out[(k + 1) % 2]);
    cua_future_destroy(f);
    ck_assert(out[(k + 1) % 2][0] == 2.0f);
    for (int i = 0; i < 2; i++)
      cua_op_destroy(d2h[i]);
    cua_op_destroy(z);
    cua_op_destroy(t2);
  }
  /* Each of the two DAGs: seen, captured, then two replays with the
   * host pointers updated. */
  ck_assert_int_eq((int)stats_of().graph_replays, 6);
  ck_assert_int_eq((int)stats_of().graphs, 2);
  /* Three DAGs (three buffers read) in turn through a cache of two:
   * evictions, right results. */
  cua_buffer *xs[3] = {x, make_buf(2), make_buf(3)};
  cua_op *ax[3];
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(cua_op_axpy(&ax[i], y, 1.0f, xs[i]), 0);
  float want = 2.0f;
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 2; k++) { /* seen, then captured */
        ck_assert_int_eq(cua_submit_wait(rt, ax[i], NULL, NULL), 0);
        want += (float)(i + 1);
      }
  ck_assert(first(y) == want);
  ck_assert_uint_gt(stats_of().graph_evictions, 0);
  /* One DAG over and over: replayed from the second submission on. */
  uint64_t before = stats_of().graph_replays;
  for (int k = 0; k < 5; k++) {
    ck_assert_int_eq(cua_submit_wait(rt, ax[0], NULL, NULL), 0);
    want += 1.0f;
  }
  ck_assert(first(y) == want);
  ck_assert_uint_ge(stats_of().graph_replays - before, 4);
  ck_assert_int_eq(auto_host_calls, 3);
  for (int i = 0; i < 3; i++)
    cua_op_destroy(ax[i]);
  cua_op_destroy(t);
  cua_op_destroy(h);
  cua_op_destroy(fill);
  for (int i = 0; i < 3; i++)
    cua_buffer_destroy(xs[i]);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(auto_mode_config_errors) {
  cua_runtime *r = NULL;
  ck_assert_err(NULL, open_text(&r, "[runtime]\ngraphs = sometimes\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "[runtime] graphs: 'sometimes' is not one of off, auto, "
                "always");
  ck_assert_err(NULL, open_text(&r, "[runtime]\ngraph_cache = 0\n"),
                CUA_ERR_CONFIG_OUT_OF_RANGE,
                "[runtime] graph_cache: 0 is out of range [1, 4096]");
  ck_assert_err(NULL, open_text(&r, "[runtime]\ngraph_cache = many\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "[runtime] graph_cache: 'many' is not an integer");
  /* $CUASYNC_GRAPHS overrides the key. */
  setenv("CUASYNC_GRAPHS", "sometimes", 1);
  ck_assert_err(NULL, open_text(&r, "[runtime]\ngraphs = off\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "$CUASYNC_GRAPHS: 'sometimes' is not one of off, auto, always");
  setenv("CUASYNC_GRAPHS", "always", 1);
  ck_assert_int_eq(open_text(&rt, "[runtime]\ngraphs = off\n"), 0);
  unsetenv("CUASYNC_GRAPHS");
  cua_buffer *y = make_buf(1); /* its fill: captured at once */
  ck_assert_int_eq((int)stats_of().graphs, 1);
  ck_assert_int_eq((int)stats_of().graph_replays, 1);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
}
END_TEST

/* $CUASYNC_TEST_WATCHDOG=S: a test still running after S seconds prints
 * every thread's stack (for a hang seen on a machine with no debugger). */
static void print_stack(int sig) {
  (void)sig;
  void *pc[32];
  int n = backtrace(pc, 32);
  char head[64];
  int len = snprintf(head, sizeof head, "--- thread %ld\n",
                     (long)syscall(SYS_gettid));
  if (write(2, head, (size_t)len) < 0)
    return;
  backtrace_symbols_fd(pc, n, 2);
}

static void *watchdog(void *arg) {
  sleep((unsigned)(uintptr_t)arg);
  signal(SIGUSR1, print_stack);
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d != NULL && (e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') {
      syscall(SYS_tgkill, getpid(), atoi(e->d_name), SIGUSR1);
      usleep(200000);
    }
  if (d != NULL)
    closedir(d);
  return NULL;
}

static void arm_watchdog(void) {
  const char *e = getenv("CUASYNC_TEST_WATCHDOG");
  pthread_t t;
  if (e != NULL && atoi(e) > 0 &&
      pthread_create(&t, NULL, watchdog, (void *)(uintptr_t)atoi(e)) == 0)
    pthread_detach(t);
}

static Suite *suite(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("property");
  tcase_set_timeout(tc, 900);
  tcase_add_checked_fixture(tc, arm_watchdog, NULL);
  tcase_add_test(tc, round_robin_matches_sequential);
  tcase_add_test(tc, scatter_two_devices_matches_sequential);
  tcase_add_test(tc, least_loaded_matches_sequential);
  tcase_add_test(tc, dmda_heft_matches_sequential);
  tcase_add_test(tc, work_stealing_matches_sequential);
  tcase_add_test(tc, single_stream_matches_sequential);
  tcase_add_test(tc, large_graphs_match_sequential);
  suite_add_tcase(s, tc);
  TCase *tsem = tcase_create("semantics");
  tcase_set_timeout(tsem, 300);
  tcase_add_checked_fixture(tsem, arm_watchdog, NULL);
  tcase_add_test(tsem, replays_accumulate);
  tcase_add_test(tsem, interleaved_with_submissions);
  tcase_add_test(tsem, four_threads_launch_one_graph);
  tcase_add_test(tsem, update_values_and_buffers);
  tcase_add_test(tsem, rebinding_onto_a_used_buffer_is_refused);
  tcase_add_test(tsem, uncapturable_ops_are_refused);
  tcase_add_test(tsem, out_of_device_memory_at_creation);
  tcase_add_test(tsem, lifetimes);
  tcase_add_test(tsem, launch_gives_results);
  tcase_add_test(tsem, a_launch_counts_its_graphs_ops);
  tcase_add_test(tsem, a_launch_recovers_a_buffer_its_first_op_overwrites);
  tcase_add_test(tsem, a_refused_launch_names_the_graphs_op);
  tcase_add_test(tsem, edges_are_the_fewest_that_keep_order);
  tcase_add_test(tsem, placement_is_the_policys);
  tcase_add_test(tsem, auto_mode_matches_sequential);
  tcase_add_test(tsem, always_mode_matches_sequential);
  tcase_add_test(tsem, auto_mode_updates_parameters);
  tcase_add_test(tsem, auto_mode_replays_a_step_whose_sizes_change);
  tcase_add_test(tsem, auto_mode_structure_and_buffers);
  tcase_add_test(tsem, auto_mode_four_threads);
  tcase_add_test(tsem, auto_mode_forgets_the_graphs_of_a_closed_policy);
  tcase_add_test(tsem, auto_mode_limits);
  tcase_add_test(tsem, auto_mode_config_errors);
  suite_add_tcase(s, tsem);
  return s;
}

int main(void) {
  require_backend();
  return run_suite(suite());
}
