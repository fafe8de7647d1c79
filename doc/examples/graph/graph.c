/*
 * graph.c: a decode-style loop with a cuasync graph.
 *
 * One step of the loop reads an input vector, updates a running state and
 * writes an output vector:
 *
 *   x <- in[t]                 memcpy_h2d
 *   a <- x;  a <- 2x + a       copy, axpy      (a = 3x)
 *   h <- x + h                 axpy            (h = the sum of the inputs)
 *   y <- h;  y <- a + y        copy, axpy      (y = h + 3x)
 *   out[t] <- y                memcpy_d2h
 *
 * The step is captured once (cua_graph_create(): the policy places every op
 * once), then each iteration points the two copies at this step's host
 * arrays (cua_graph_update()) and replays the graph (cua_graph_launch()).
 * On the CUDA backend a replay is one CUDA graph launch.
 *
 * Then the same loop without the graph API, on a second runtime opened with
 * [runtime] graphs = auto: each iteration builds the step anew and submits
 * it; the runtime knows the step by its fingerprint, captures it at its
 * second submission and replays it after, updating the copies. The
 * future's result is the step's (the copy out's host array).
 *
 *   ./graph [config.ini] [steps]
 *
 * With no configuration file the runtime uses round-robin over 2 streams on
 * the best backend there is (CUDA, else the host backend).
 */
#include <cuasync.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096

static int fail(cua_runtime *rt, const char *what) {
  fprintf(stderr, "graph: %s: %s\n", what, cua_runtime_error(rt));
  return 1;
}

/* The runtime @p config describes, or by default round-robin over 2
 * streams on the best backend there is. NULL on failure. */
static cua_runtime *open_runtime(const char *config) {
  cua_runtime *rt = NULL;
  int rc;
  if (config != NULL) {
    rc = cua_runtime_create(&rt, config);
  } else {
    cua_runtime_options o;
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.config_text = "[runtime]\npolicy = round-robin\n"
                    "[policy.round-robin]\nstreams = 2\n";
    rc = cua_runtime_create_ex(&rt, &o);
  }
  return rc == 0 ? rt : NULL;
}

/* The loop's four buffers, the state h cleared. 0, or 1 on failure. */
static int make_buffers(cua_runtime *rt, cua_buffer **x, cua_buffer **a,
                        cua_buffer **h, cua_buffer **y) {
  cua_op *zero;
  if (cua_buffer_create(x, rt, 0, N * sizeof(float), 0) ||
      cua_buffer_create(a, rt, 0, N * sizeof(float), 0) ||
      cua_buffer_create(h, rt, 0, N * sizeof(float), 0) ||
      cua_buffer_create(y, rt, 0, N * sizeof(float), 0) ||
      cua_op_fill(&zero, *h, 0.0f))
    return 1;
  int rc = cua_submit_wait(rt, zero, NULL, NULL);
  cua_op_destroy(zero);
  return rc != 0;
}

/* The step's ops and how they join, the copies those of step t. */
typedef struct step_ops {
  cua_op *h2d, *d2h, *ca, *a3, *hx, *cy, *ya;
  cua_op *branch_a, *branches, *join, *body, *step, *whole;
} step_ops;

/* The copies of step t: in[t] -> x, y -> out[t]. */
static int step_copies(cua_buffer *x, cua_buffer *y, float *in, float *out,
                       int t, cua_op **h2d, cua_op **d2h) {
  if (cua_op_memcpy_h2d(h2d, x, 0, in + (size_t)t * N, N * sizeof(float)))
    return 1;
  return cua_op_memcpy_d2h(d2h, out + (size_t)t * N, y, 0, N * sizeof(float));
}

/* One step, as a DAG: the copy in, two branches, the join, the copy out;
 * s->whole is its root. 0, or 1 with the runtime's error. */
static int build_step(cua_buffer *x, cua_buffer *a, cua_buffer *h,
                      cua_buffer *y, float *in, float *out, int t,
                      step_ops *s) {
  memset(s, 0, sizeof *s);
  return step_copies(x, y, in, out, t, &s->h2d, &s->d2h) ||
         cua_op_copy(&s->ca, a, x) || cua_op_axpy(&s->a3, a, 2.0f, x) ||
         cua_op_axpy(&s->hx, h, 1.0f, x) || cua_op_copy(&s->cy, y, h) ||
         cua_op_axpy(&s->ya, y, 1.0f, a) ||
         cua_op_then(&s->branch_a, s->ca, s->a3) ||
         cua_op_zip(&s->branches, (cua_op *[]){s->branch_a, s->hx}, 2) ||
         cua_op_then(&s->join, s->cy, s->ya) ||
         cua_op_then(&s->body, s->h2d, s->branches) ||
         cua_op_then(&s->step, s->body, s->join) ||
         cua_op_then(&s->whole, s->step, s->d2h);
}

static void free_step(step_ops *s) {
  cua_op *ops[] = {s->h2d,  s->d2h,  s->ca,       s->a3,       s->hx,
                   s->cy,   s->ya,   s->branch_a, s->branches, s->join,
                   s->body, s->step, s->whole};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
}

/* Errors of out[] against the loop's definition:
 * out[t][i] = (sum of in[s][i] for s <= t) + 3 in[t][i]. */
static long check(const float *in, const float *out, int steps) {
  long bad = 0;
  for (int i = 0; i < N; i++) {
    float sum = 0;
    for (int t = 0; t < steps; t++) {
      sum += in[(size_t)t * N + i];
      float want = sum + 3.0f * in[(size_t)t * N + i];
      bad += out[(size_t)t * N + i] != want;
    }
  }
  return bad;
}

/* The loop again, on a runtime opened with graphs = auto: each step built
 * anew and submitted. Returns the errors in out2[], or -1. */
static long auto_loop(const char *config, int steps, float *in, float *out2) {
  setenv("CUASYNC_GRAPHS", "auto", 1); /* over [runtime] graphs */
  cua_runtime *rt = open_runtime(config);
  unsetenv("CUASYNC_GRAPHS");
  if (rt == NULL)
    return fail(NULL, "opening the second runtime"), -1;
  cua_buffer *x, *a, *h, *y;
  if (make_buffers(rt, &x, &a, &h, &y))
    return fail(rt, "the second runtime's buffers"), -1;
  long wrong_results = 0;
  for (int t = 0; t < steps; t++) {
    step_ops s;
    void *res = NULL;
    if (build_step(x, a, h, y, in, out2, t, &s) ||
        cua_submit_wait(rt, s.whole, NULL, &res))
      return fail(rt, "submitting a step"), -1;
    wrong_results += res != out2 + (size_t)t * N;
    free_step(&s);
  }
  cua_stats st = {.size = sizeof st};
  cua_runtime_stats(rt, &st);
  printf("auto: %d steps built anew and submitted: %llu graph(s), %llu "
         "replays, %llu op updates; %s\n",
         steps, (unsigned long long)st.graphs,
         (unsigned long long)st.graph_replays,
         (unsigned long long)st.graph_updates,
         wrong_results == 0 ? "each future's result is its step's output"
                            : "WRONG FUTURE RESULTS");
  cua_buffer_destroy(x);
  cua_buffer_destroy(a);
  cua_buffer_destroy(h);
  cua_buffer_destroy(y);
  cua_runtime_destroy(rt);
  return check(in, out2, steps) + wrong_results;
}

int main(int argc, char **argv) {
  int steps = argc > 2 ? atoi(argv[2]) : 16;
  if (steps < 1)
    steps = 16;
  cua_runtime *rt = open_runtime(argc > 1 ? argv[1] : NULL);
  if (rt == NULL)
    return fail(NULL, "opening the runtime");

  /* Page-locked host arrays: every step's input and output. */
  float *in = NULL, *out = NULL;
  if (cua_host_alloc(rt, (size_t)steps * N * sizeof(float), (void **)&in) ||
      cua_host_alloc(rt, (size_t)steps * N * sizeof(float), (void **)&out))
    return fail(rt, "cua_host_alloc");
  for (int t = 0; t < steps; t++)
    for (int i = 0; i < N; i++)
      in[(size_t)t * N + i] = (float)((t + 1) * (i % 7));

  cua_buffer *x, *a, *h, *y;
  if (make_buffers(rt, &x, &a, &h, &y))
    return fail(rt, "the buffers");

  /* One step, as a DAG: the copy in, two branches, the join, the copy out. */
  step_ops s;
  if (build_step(x, a, h, y, in, out, 0, &s))
    return fail(rt, "building the step");
  cua_graph *g;
  if (cua_graph_create(&g, rt, s.whole, NULL))
    return fail(rt, "cua_graph_create");

  for (int t = 0; t < steps; t++) {
    if (t > 0) {
      cua_op *nh2d, *nd2h;
      if (step_copies(x, y, in, out, t, &nh2d, &nd2h) ||
          cua_graph_update(g, s.h2d, nh2d) || cua_graph_update(g, s.d2h, nd2h))
        return fail(rt, "cua_graph_update");
      cua_op_destroy(nh2d);
      cua_op_destroy(nd2h);
    }
    cua_future *f;
    if (cua_graph_launch(&f, g))
      return fail(rt, "cua_graph_launch");
    if (cua_future_wait(f)) {
      fprintf(stderr, "graph: step %d: %s\n", t, cua_future_error(f));
      return 1;
    }
    cua_future_destroy(f);
  }

  long bad = check(in, out, steps);
  cua_graph_info info = {.size = sizeof info};
  cua_graph_get_info(g, &info);
  printf("graph: %d steps of %d elements on the %s backend, policy %s\n", steps,
         N, cua_runtime_backend(rt), cua_runtime_policy(rt));
  printf("  %zu ops on %zu stream(s), %zu wait(s) between them; %s; "
         "%llu launches, %llu updates, %llu backend captures\n",
         info.ops, info.streams, info.waits,
         info.native ? "replayed as a backend graph"
                     : "replayed by the core from its recorded commands",
         (unsigned long long)info.launches, (unsigned long long)info.updates,
         (unsigned long long)info.captures);
  printf("  %s\n", bad == 0 ? "every output correct" : "WRONG OUTPUTS");

  cua_graph_destroy(g);
  free_step(&s);

  float *out2 = NULL;
  if (cua_host_alloc(rt, (size_t)steps * N * sizeof(float), (void **)&out2))
    return fail(rt, "cua_host_alloc");
  long bad2 = auto_loop(argc > 1 ? argv[1] : NULL, steps, in, out2);
  printf("  %s\n", bad2 == 0 ? "every output correct" : "WRONG OUTPUTS");
  if (bad2 != 0)
    bad = bad != 0 ? bad : 1;
  cua_host_free(rt, out2);
  cua_buffer_destroy(x);
  cua_buffer_destroy(a);
  cua_buffer_destroy(h);
  cua_buffer_destroy(y);
  cua_host_free(rt, in);
  cua_host_free(rt, out);
  cua_runtime_destroy(rt);
  return bad == 0 ? 0 : 1;
}
