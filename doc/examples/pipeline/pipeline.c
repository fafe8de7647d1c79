/*
 * pipeline.c: a small cuasync pipeline, built against the installed library
 * (see README.md).
 *
 *   copy in     x <- in                          (host to device)
 *   in parallel y <- 2, then y <- 3x + y         (y = 3x + 2)
 *               z <- 1, then z <- -x + z         (z = 1 - x)
 *   join        y <- z + y                       (y = 2x + 3)
 *   copy out    out <- y                         (device to host)
 *
 * The whole pipeline is one DAG, submitted once. Nothing in it says which
 * stream anything runs on: the policy decides, and the core inserts the
 * event waits that the buffers need (both branches read x after the copy
 * in; the join reads z after its branch wrote it). The program checks
 * out[i] == 2 * in[i] + 3, prints a summary, and exits 0 if every element
 * is right, 1 otherwise.
 *
 * Usage: pipeline [CONFIG.ini]
 * Without an argument the runtime is opened from the text below (host
 * backend, round-robin over 2 streams), so the program runs the same on
 * any machine. With one, that INI file is read instead (pipeline.ini is a
 * copy of the text to edit). $CUASYNC_POLICY still overrides the policy.
 */
#include <cuasync.h>

#include <stdio.h>
#include <stdlib.h>

#define N (1u << 16) /* elements */

static const char config_text[] = "[runtime]\n"
                                  "backend = host\n"
                                  "policy = round-robin\n"
                                  "\n"
                                  "[policy.round-robin]\n"
                                  "streams = 2\n"
                                  "\n"
                                  "[backend.host]\n"
                                  "devices = 1\n";

/* What the program owns; everything starts NULL, so that cleanup can run
 * from any point. */
typedef struct pipeline {
  cua_runtime *rt;
  float *in, *out;       /* host memory, from cua_host_alloc() */
  cua_buffer *x, *y, *z; /* device buffers of N floats */
  cua_op *dag;
} pipeline;

/* Reports a failed call with cuasync's detailed message. */
static int fail(const pipeline *p, const char *what, int rc) {
  fprintf(stderr, "pipeline: %s: %s (%s): %s\n", what, cua_strerror(rc),
          cua_err_name(rc), cua_runtime_error(p->rt));
  return rc;
}

static int open_runtime(pipeline *p, const char *path) {
  cua_runtime_options o = {0};
  int rc;

  o.size = sizeof o;
  if (path != NULL)
    o.config_path = path;
  else
    o.config_text = config_text;
  rc = cua_runtime_create_ex(&p->rt, &o);
  if (rc != 0)
    return fail(p, "opening the runtime", rc);
  return 0;
}

static int alloc_memory(pipeline *p) {
  const size_t bytes = N * sizeof(float);
  int rc;

  if ((rc = cua_host_alloc(p->rt, bytes, (void **)&p->in)) != 0 ||
      (rc = cua_host_alloc(p->rt, bytes, (void **)&p->out)) != 0)
    return fail(p, "allocating host memory", rc);
  if ((rc = cua_buffer_create(&p->x, p->rt, 0, bytes, 0)) != 0 ||
      (rc = cua_buffer_create(&p->y, p->rt, 0, bytes, 0)) != 0 ||
      (rc = cua_buffer_create(&p->z, p->rt, 0, bytes, 0)) != 0)
    return fail(p, "creating the buffers", rc);
  for (unsigned i = 0; i < N; i++) {
    p->in[i] = (float)(i % 1024) * 0.5f;
    p->out[i] = -1.0f;
  }
  return 0;
}

/* Names an op, for error messages and policy dumps. Only possible before
 * the op is used by another one. */
static int name_op(cua_op *op, const char *name) {
  cua_hints h = CUA_HINTS_INIT;

  h.name = name;
  return cua_op_set_hints(op, &h);
}

/* first, then next: *out = cua_op_then(first, next), and the caller's
 * references to both are given up (the combinator holds its own). */
static int chain(cua_op **out, cua_op *first, cua_op *next) {
  int rc = cua_op_then(out, first, next);

  cua_op_destroy(first);
  cua_op_destroy(next);
  return rc;
}

/* One branch: dst <- fill, then dst <- a * x + dst. */
static int branch(cua_op **out, cua_buffer *dst, float fill, float a,
                  cua_buffer *x, const char *name) {
  cua_op *f = NULL, *ax = NULL;
  int rc;

  if ((rc = cua_op_fill(&f, dst, fill)) != 0 ||
      (rc = cua_op_axpy(&ax, dst, a, x)) != 0 ||
      (rc = name_op(ax, name)) != 0) {
    cua_op_destroy(f);
    cua_op_destroy(ax);
    return rc;
  }
  return chain(out, f, ax);
}

/* Builds copy-in -> zip(branch y, branch z) -> join -> copy-out. */
static int build(pipeline *p) {
  const size_t bytes = N * sizeof(float);
  cua_op *copy_in = NULL, *by = NULL, *bz = NULL, *par = NULL, *join = NULL,
         *copy_out = NULL, *tail = NULL, *mid = NULL;
  int rc;

  if ((rc = cua_op_memcpy_h2d(&copy_in, p->x, 0, p->in, bytes)) != 0 ||
      (rc = name_op(copy_in, "copy in")) != 0 ||
      (rc = branch(&by, p->y, 2.0f, 3.0f, p->x, "y = 3x + 2")) != 0 ||
      (rc = branch(&bz, p->z, 1.0f, -1.0f, p->x, "z = 1 - x")) != 0)
    goto out;
  {
    cua_op *both[2] = {by, bz};
    if ((rc = cua_op_zip(&par, both, 2)) != 0)
      goto out;
  }
  if ((rc = cua_op_axpy(&join, p->y, 1.0f, p->z)) != 0 ||
      (rc = name_op(join, "join: y = y + z")) != 0 ||
      (rc = cua_op_memcpy_d2h(&copy_out, p->out, p->y, 0, bytes)) != 0 ||
      (rc = name_op(copy_out, "copy out")) != 0)
    goto out;
  /* chain() takes over both references it is given, even on failure. */
  rc = chain(&tail, join, copy_out);
  join = copy_out = NULL;
  if (rc == 0) {
    rc = chain(&mid, par, tail);
    par = tail = NULL;
  }
  if (rc == 0) {
    rc = chain(&p->dag, copy_in, mid);
    copy_in = mid = NULL;
  }
out:
  cua_op_destroy(copy_in);
  cua_op_destroy(by);
  cua_op_destroy(bz);
  cua_op_destroy(par);
  cua_op_destroy(join);
  cua_op_destroy(copy_out);
  cua_op_destroy(tail);
  cua_op_destroy(mid);
  return rc != 0 ? fail(p, "building the pipeline", rc) : 0;
}

static int run(pipeline *p) {
  void *result = NULL;
  int rc = cua_submit_wait(p->rt, p->dag, NULL, &result);

  if (rc != 0)
    return fail(p, "running the pipeline", rc);
  if (result != p->out) {
    fprintf(stderr, "pipeline: the result is %p, not the output array %p\n",
            result, (void *)p->out);
    return CUA_ERR_RESULT;
  }
  return 0;
}

/* Counts the elements that differ from 2 * in + 3 (all values are small
 * multiples of 0.5, exact in float, so any difference is an error). */
static unsigned count_wrong(const pipeline *p, unsigned *first) {
  unsigned wrong = 0;

  for (unsigned i = 0; i < N; i++) {
    if (p->out[i] != 2.0f * p->in[i] + 3.0f) {
      if (wrong == 0)
        *first = i;
      wrong++;
    }
  }
  return wrong;
}

static void report(const pipeline *p, unsigned wrong, unsigned first) {
  cua_stats st = {0};

  st.size = sizeof st;
  cua_runtime_stats(p->rt, &st);
  printf("pipeline: %u elements on the %s backend, policy %s, %d device%s\n", N,
         cua_runtime_backend(p->rt), cua_runtime_policy(p->rt),
         cua_device_count(p->rt), cua_device_count(p->rt) == 1 ? "" : "s");
  printf("  out[i] = 2 * in[i] + 3:  in[1] = %g -> out[1] = %g,  "
         "in[%u] = %g -> out[%u] = %g\n",
         p->in[1], p->out[1], N - 1, p->in[N - 1], N - 1, p->out[N - 1]);
  printf("  %llu ops on %llu stream(s), %llu cross-stream wait(s) inserted\n",
         (unsigned long long)st.ops, (unsigned long long)st.streams,
         (unsigned long long)st.event_waits);
  if (wrong == 0)
    printf("  all %u results correct\n", N);
  else
    printf("  WRONG: %u of %u results, first at %u: %g, expected %g\n", wrong,
           N, first, p->out[first], 2.0f * p->in[first] + 3.0f);
}

static void cleanup(pipeline *p) {
  cua_op_destroy(p->dag);
  cua_buffer_destroy(p->x);
  cua_buffer_destroy(p->y);
  cua_buffer_destroy(p->z);
  if (p->rt != NULL) {
    cua_host_free(p->rt, p->in);
    cua_host_free(p->rt, p->out);
  }
  cua_runtime_destroy(p->rt);
}

int main(int argc, char **argv) {
  pipeline p = {0};
  unsigned wrong = N, first = 0;

  if (argc > 2) {
    fprintf(stderr, "usage: %s [CONFIG.ini]\n", argv[0]);
    return 2;
  }
  if (open_runtime(&p, argc == 2 ? argv[1] : NULL) == 0 &&
      alloc_memory(&p) == 0 && build(&p) == 0 && run(&p) == 0) {
    wrong = count_wrong(&p, &first);
    report(&p, wrong, first);
  }
  cleanup(&p);
  return wrong == 0 ? 0 : 1;
}
