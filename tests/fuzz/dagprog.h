/*
 * tests/fuzz/dagprog.h: an interpreter that turns bytes into a sequence of
 * public API calls building, submitting and waiting for DAGs, and checks
 * the results against a sequential reference.
 *
 * Used by the DAG fuzzer (tests/fuzz/fuzz_dag.c, bytes from libFuzzer) and
 * by the stress test (tests/check_stress.c, random bytes, several threads
 * at once, each on its own buffers).
 *
 * Model: a stack of DAGs under construction, each with the list of its
 * effects on the buffers in post-order (its construction order: DAGs are
 * only combined top-two, older first). Submitting folds the stack into one
 * DAG; if the submission succeeds its effects are applied to the
 * reference, which is compared with the buffers' contents at check points.
 * A shared op (cua_op_shared, or the zip behind cua_op_unzip) keeps its
 * effects in a record applied once, by the first submission that runs it;
 * it is reused only once it has run (a reuse in the DAG that runs it may
 * place it after itself, `then(S, S)`, which cua_submit() refuses with
 * CUA_ERR_CYCLE: the model does not predict that). The zip behind unzips
 * runs once also when every unzip made so far was destroyed before the
 * next one is made (dp_share() keeps none). An op writing the read-only
 * buffer makes its submission fail with CUA_ERR_READONLY, and nothing of
 * it runs.
 *
 * Any mismatch prints what it saw and aborts.
 */
#ifndef CUA_TESTS_DAGPROG_H
#define CUA_TESTS_DAGPROG_H

#include <cuasync.h>

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DP_NBUF 4     /* buffers a program writes */
#define DP_ELEMS 16   /* floats per buffer */
#define DP_STACK 6    /* DAGs under construction */
#define DP_SHARED 6   /* shared ops kept for reuse */
#define DP_FUTURES 6  /* submissions in flight */
#define DP_RO DP_NBUF /* source index of the read-only buffer */

enum {
  DP_E_FILL,
  DP_E_AXPY,
  DP_E_COPY,
  DP_E_D2D,
  DP_E_MEMSET,
  DP_E_HOST,
  DP_E_SHARED,
  DP_E_RO_WRITE,
  DP_E_NOTHING
};

typedef struct dp_effect {
  int kind;
  int d, s;
  float v;
  size_t off, soff, n;
  int rec; /* DP_E_SHARED: the record */
} dp_effect;

typedef struct dp_effects {
  dp_effect *v;
  size_t n, cap;
} dp_effects;

typedef struct dp_entry {
  cua_op *op;
  dp_effects fx;
  size_t nzip; /* a zip of nzip inputs, else 0 */
} dp_entry;

typedef struct dp_shared {
  cua_op *op; /* the shared op, or the zip its unzips select from */
  size_t nzip;
  dp_effects fx;
  int applied;
  int used; /* the record slot holds something */
} dp_shared;

typedef struct dp_ctx dp_ctx;

/* What a callback gets: the program. */
typedef struct dp_cbrec {
  dp_ctx *c;
} dp_cbrec;

typedef struct dp_future {
  cua_future *f;
  dp_cbrec *cb; /* the callback registered, or NULL */
} dp_future;

struct dp_ctx {
  /* Given by the driver. */
  cua_runtime *rt;
  cua_buffer *buf[DP_NBUF];
  int owned[DP_NBUF]; /* may be destroyed and re-created (not a tile) */
  cua_buffer *ro;     /* shared read-only buffer, or NULL */
  float ro_ref[DP_ELEMS];
  cua_policy **policies; /* for cua_submit_options::policy */
  size_t npolicies;
  const char *who; /* for messages */
  /* State. */
  float ref[DP_NBUF][DP_ELEMS];
  dp_entry stack[DP_STACK];
  size_t nstack;
  dp_shared shared[DP_SHARED];
  dp_future fut[DP_FUTURES];
  size_t nfut;
  atomic_long host_runs; /* host steps and maps that ran */
  long host_expected;
  atomic_long cb_runs;
  atomic_long cb_bad;
  long cb_expected;
  dp_cbrec **recs; /* freed once every callback has run */
  size_t nrecs, caprecs;
  const uint8_t *p, *end;
  long submissions, checks;
};

static void dp_die(dp_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3), noreturn))
#endif
    ;
static void dp_die(dp_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "dagprog %s: ", c->who ? c->who : "");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (runtime error: %s)\n", cua_runtime_error(c->rt));
  va_end(ap);
  abort();
}

#define DP_OK(c, call)                                                         \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0)                                                              \
      dp_die(c, "%s: %s", #call, cua_err_name(rc_));                           \
  } while (0)

/* $DAGPROG_TRACE set: every step is printed (to read a finding). */
static atomic_int dp_tracing = -1;
static void dp_trace(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void dp_trace(const char *fmt, ...) {
  if (atomic_load(&dp_tracing) < 0)
    atomic_store(&dp_tracing, getenv("DAGPROG_TRACE") != NULL);
  if (!atomic_load(&dp_tracing))
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static unsigned dp_byte(dp_ctx *c) {
  return c->p < c->end ? *c->p++ : 0;
}

static void fx_add(dp_ctx *c, dp_effects *e, dp_effect x) {
  if (e->n == e->cap) {
    e->cap = e->cap ? e->cap * 2 : 8;
    e->v = realloc(e->v, e->cap * sizeof *e->v);
    if (e->v == NULL)
      dp_die(c, "out of memory");
  }
  e->v[e->n++] = x;
}

static void fx_cat(dp_ctx *c, dp_effects *a, dp_effects *b) {
  for (size_t i = 0; i < b->n; i++)
    fx_add(c, a, b->v[i]);
  free(b->v);
  memset(b, 0, sizeof *b);
}

/* Whether the effects (unapplied shared ones included) write the read-only
 * buffer. */
static int fx_poisoned(dp_ctx *c, const dp_effects *e) {
  for (size_t i = 0; i < e->n; i++) {
    if (e->v[i].kind == DP_E_RO_WRITE)
      return 1;
    if (e->v[i].kind == DP_E_SHARED && !c->shared[e->v[i].rec].applied &&
        fx_poisoned(c, &c->shared[e->v[i].rec].fx))
      return 1;
  }
  return 0;
}

static const float *dp_src(dp_ctx *c, int s) {
  return s == DP_RO ? c->ro_ref : c->ref[s];
}

static void fx_apply(dp_ctx *c, const dp_effects *e) {
  for (size_t i = 0; i < e->n; i++) {
    const dp_effect *x = &e->v[i];
    float *d = x->d >= 0 && x->d < DP_NBUF ? c->ref[x->d] : NULL;
    switch (x->kind) {
    case DP_E_FILL:
      for (int k = 0; k < DP_ELEMS; k++)
        d[k] = x->v;
      break;
    case DP_E_AXPY: {
      float tmp[DP_ELEMS];
      const float *s = dp_src(c, x->s);
      for (int k = 0; k < DP_ELEMS; k++)
        tmp[k] = x->v * s[k] + d[k];
      memcpy(d, tmp, sizeof tmp);
      break;
    }
    case DP_E_COPY:
      memmove(d, dp_src(c, x->s), sizeof c->ref[0]);
      break;
    case DP_E_D2D:
      memmove((char *)d + x->off, (const char *)dp_src(c, x->s) + x->soff,
              x->n);
      break;
    case DP_E_MEMSET:
      memset((char *)d + x->off, (int)x->v, x->n);
      break;
    case DP_E_HOST:
      c->host_expected++;
      break;
    case DP_E_SHARED: {
      dp_shared *r = &c->shared[x->rec];
      if (!r->applied) {
        r->applied = 1;
        fx_apply(c, &r->fx);
      }
      break;
    }
    default:
      break;
    }
  }
}

static int dp_host_fn(void *arg, void **result) {
  dp_ctx *c = arg;
  atomic_fetch_add(&c->host_runs, 1);
  *result = NULL;
  return 0;
}

static int dp_map_fn(void *in, void *arg, void **out) {
  dp_ctx *c = arg;
  atomic_fetch_add(&c->host_runs, 1);
  *out = in;
  return 0;
}

static void dp_cb(cua_future *f, int status, void *arg) {
  dp_cbrec *r = arg;
  (void)f;
  if (status != 0)
    atomic_fetch_add(&r->c->cb_bad, 1);
  atomic_fetch_add(&r->c->cb_runs, 1);
}

static void dp_push(dp_ctx *c, cua_op *op, dp_effect x, size_t nzip) {
  dp_entry *e = &c->stack[c->nstack++];
  memset(e, 0, sizeof *e);
  e->op = op;
  e->nzip = nzip;
  fx_add(c, &e->fx, x);
}

/* One random device op (or host step) pushed on the stack. */
static void dp_leaf(dp_ctx *c, unsigned what) {
  cua_op *op = NULL;
  dp_effect x;
  memset(&x, 0, sizeof x);
  x.d = (int)(dp_byte(c) % DP_NBUF);
  unsigned sb = dp_byte(c);
  x.s = (int)(sb % (DP_NBUF + (c->ro != NULL)));
  cua_buffer *src = x.s == DP_RO ? c->ro : c->buf[x.s];
  cua_buffer *dst = c->buf[x.d];
  switch (what % 9) {
  case 0:
    x.kind = DP_E_FILL;
    x.v = (float)(dp_byte(c) % 50);
    DP_OK(c, cua_op_fill(&op, dst, x.v));
    break;
  case 1:
    x.kind = DP_E_AXPY;
    x.v = (sb & 0x80) ? -1.0f : 1.0f;
    DP_OK(c, cua_op_axpy(&op, dst, x.v, src));
    break;
  case 2:
    if (x.s == x.d)
      x.s = (x.d + 1) % DP_NBUF, src = c->buf[x.s];
    x.kind = DP_E_COPY;
    DP_OK(c, cua_op_copy(&op, dst, src));
    break;
  case 3: {
    if (x.s == x.d)
      x.s = (x.d + 1) % DP_NBUF, src = c->buf[x.s];
    x.kind = DP_E_D2D;
    x.off = 4 * (dp_byte(c) % DP_ELEMS);
    x.soff = 4 * (dp_byte(c) % DP_ELEMS);
    size_t room = DP_ELEMS * 4 - (x.off > x.soff ? x.off : x.soff);
    x.n = 4 * (1 + dp_byte(c) % (room / 4));
    DP_OK(c, cua_op_memcpy_d2d(&op, dst, x.off, src, x.soff, x.n));
    break;
  }
  case 4: {
    static const int bytes[3] = {0, 0x3f, 0x40};
    x.kind = DP_E_MEMSET;
    x.off = 4 * (dp_byte(c) % DP_ELEMS);
    x.n = 4 * (1 + dp_byte(c) % ((DP_ELEMS * 4 - x.off) / 4));
    x.v = (float)bytes[dp_byte(c) % 3];
    DP_OK(c, cua_op_memset(&op, dst, x.off, (int)x.v, x.n));
    break;
  }
  case 5:
    x.kind = DP_E_HOST;
    DP_OK(c, cua_op_host(&op, c->rt, dp_host_fn, c));
    break;
  case 6:
    x.kind = DP_E_NOTHING; /* no effect */
    DP_OK(c, cua_op_spin(&op, c->rt, 1000u * (dp_byte(c) % 50), 1));
    break;
  case 7:
    if (c->ro != NULL && (dp_byte(c) & 7) == 0) {
      x.kind = DP_E_RO_WRITE;
      DP_OK(c, cua_op_fill(&op, c->ro, 1.0f));
      break;
    }
    x.kind = DP_E_NOTHING;
    DP_OK(c, cua_op_barrier(&op, c->rt));
    break;
  default: {
    /* With hints: a name, a tag, a device and a cost. */
    cua_hints h = CUA_HINTS_INIT;
    x.kind = DP_E_FILL;
    x.v = (float)(dp_byte(c) % 50);
    DP_OK(c, cua_op_fill(&op, dst, x.v));
    h.name = "dagprog-fill";
    h.tag = (dp_byte(c) & 1) ? "hot" : "cold";
    h.device = (int)(dp_byte(c) % 3) - 1;
    h.cost_ns = dp_byte(c) * 100u;
    DP_OK(c, cua_op_set_hints(op, &h));
    break;
  }
  }
  dp_trace("leaf %d: kind %d d %d s %d v %g off %zu soff %zu n %zu -> op %p",
           (int)c->nstack, x.kind, x.d, x.s, x.v, x.off, x.soff, x.n,
           (void *)op);
  dp_push(c, op, x, 0);
}

static void dp_pop(dp_ctx *c, dp_entry *out) {
  *out = c->stack[--c->nstack];
}

/* then(older, newer) or zip(older, newer [, third]). */
static void dp_combine(dp_ctx *c, int zip) {
  if (c->nstack < 2)
    return;
  dp_entry a, b;
  cua_op *op = NULL;
  size_t nzip = 0;
  if (zip && c->nstack >= 3 && (dp_byte(c) & 1)) {
    dp_entry z;
    dp_pop(c, &z);
    dp_pop(c, &b);
    dp_pop(c, &a);
    DP_OK(c, cua_op_zip(&op, (cua_op *[]){a.op, b.op, z.op}, 3));
    fx_cat(c, &a.fx, &b.fx);
    fx_cat(c, &a.fx, &z.fx);
    cua_op_destroy(z.op);
    nzip = 3;
  } else {
    dp_pop(c, &b);
    dp_pop(c, &a);
    if (zip) {
      DP_OK(c, cua_op_zip(&op, (cua_op *[]){a.op, b.op}, 2));
      nzip = 2;
    } else {
      DP_OK(c, cua_op_then(&op, a.op, b.op));
    }
    fx_cat(c, &a.fx, &b.fx);
  }
  dp_trace("%s of %p %p -> %p", zip ? "zip" : "then", (void *)a.op,
           (void *)b.op, (void *)op);
  cua_op_destroy(a.op);
  cua_op_destroy(b.op);
  c->stack[c->nstack] = a;
  c->stack[c->nstack].op = op;
  c->stack[c->nstack].nzip = nzip;
  c->nstack++;
}

static int dp_new_record(dp_ctx *c) {
  for (int i = 0; i < DP_SHARED; i++)
    if (!c->shared[i].used)
      return i;
  /* Full: forget one that has run (its op is released). Effects naming it
   * become nothing, which is what a shared op that has run does. */
  for (int i = 0; i < DP_SHARED; i++)
    if (c->shared[i].applied) {
      for (size_t e = 0; e < c->nstack + DP_SHARED; e++) {
        dp_effects *fx =
            e < c->nstack ? &c->stack[e].fx : &c->shared[e - c->nstack].fx;
        for (size_t k = 0; k < fx->n; k++)
          if (fx->v[k].kind == DP_E_SHARED && fx->v[k].rec == i)
            fx->v[k].kind = DP_E_NOTHING;
      }
      cua_op_destroy(c->shared[i].op);
      free(c->shared[i].fx.v);
      memset(&c->shared[i], 0, sizeof c->shared[i]);
      return i;
    }
  return -1;
}

/* shared(top), or unzip(top, i) when top is a zip. */
static void dp_share(dp_ctx *c, int unzip) {
  if (c->nstack < 1)
    return;
  dp_entry *t = &c->stack[c->nstack - 1];
  if (unzip && t->nzip == 0)
    return;
  int r = dp_new_record(c);
  if (r < 0)
    return;
  dp_shared *s = &c->shared[r];
  cua_op *op = NULL;
  s->used = 1;
  s->fx = t->fx;
  memset(&t->fx, 0, sizeof t->fx);
  if (unzip) {
    s->op = t->op; /* the record keeps the zip */
    s->nzip = t->nzip;
    /* No unzip is kept: the zip runs once even when every unzip made so
     * far is gone before dp_reuse() makes a new one. */
    DP_OK(c, cua_op_unzip(&op, s->op, dp_byte(c) % s->nzip));
  } else {
    DP_OK(c, cua_op_shared(&s->op, t->op));
    cua_op_destroy(t->op);
    op = cua_op_retain(s->op);
  }
  c->nstack--;
  dp_trace("%s record %d: %p -> %p", unzip ? "unzip" : "shared", r,
           (void *)s->op, (void *)op);
  dp_effect x;
  memset(&x, 0, sizeof x);
  x.kind = DP_E_SHARED;
  x.rec = r;
  dp_push(c, op, x, 0);
}

/* A shared op that has already run, again (it does not run twice). */
static void dp_reuse(dp_ctx *c) {
  int r = (int)(dp_byte(c) % DP_SHARED);
  dp_shared *s = &c->shared[r];
  if (!s->used || !s->applied)
    return;
  cua_op *op = NULL;
  if (s->nzip)
    DP_OK(c, cua_op_unzip(&op, s->op, dp_byte(c) % s->nzip));
  else
    op = cua_op_retain(s->op);
  dp_trace("reuse record %d (%p) -> %p", r, (void *)s->op, (void *)op);
  dp_effect x;
  memset(&x, 0, sizeof x);
  x.kind = DP_E_SHARED;
  x.rec = r;
  dp_push(c, op, x, 0);
}

static void dp_map(dp_ctx *c) {
  if (c->nstack < 1)
    return;
  dp_entry *t = &c->stack[c->nstack - 1];
  cua_op *op = NULL;
  DP_OK(c, cua_op_map(&op, t->op, dp_map_fn, c));
  dp_trace("map of %p -> %p", (void *)t->op, (void *)op);
  cua_op_destroy(t->op);
  t->op = op;
  t->nzip = 0;
  dp_effect x;
  memset(&x, 0, sizeof x);
  x.kind = DP_E_HOST;
  fx_add(c, &t->fx, x);
}

static void dp_wait_one(dp_ctx *c, size_t i, unsigned how);

/* Folds the stack into one DAG and submits it. */
static void dp_submit(dp_ctx *c) {
  if (c->nstack == 0)
    return;
  unsigned how = dp_byte(c);
  while (c->nstack > 1)
    dp_combine(c, how & 1);
  if (c->nfut == DP_FUTURES)
    dp_wait_one(c, 0, 0);
  dp_entry e;
  dp_pop(c, &e);
  int expect = fx_poisoned(c, &e.fx) ? CUA_ERR_READONLY : 0;
  cua_submit_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  if (c->npolicies > 0 && (how & 6) == 2)
    o.policy = c->policies[(how >> 3) % c->npolicies];
  if ((how & 0x30) == 0x30 && expect == 0) {
    o.on_stream = 1;
    o.placement.device = 0;
    o.placement.stream = (int)((how >> 6) % 2);
  }
  cua_future *f = NULL;
  int rc = cua_submit(&f, c->rt, e.op, &o);
  dp_trace("submit %p policy %s on_stream %d stream %d: %s -> future %p",
           (void *)e.op, o.policy ? cua_policy_name(o.policy) : "runtime",
           o.on_stream, o.placement.stream, cua_err_name(rc), (void *)f);
  if (rc != expect)
    dp_die(c, "cua_submit returned %s, expected %s", cua_err_name(rc),
           cua_err_name(expect));
  if (rc == 0) {
    if (f == NULL)
      dp_die(c, "cua_submit: 0 but no future");
    fx_apply(c, &e.fx);
    c->submissions++;
    dp_future *df = &c->fut[c->nfut++];
    df->f = f;
    df->cb = NULL;
    if (how & 0x80) {
      dp_cbrec *r = calloc(1, sizeof *r);
      if (r == NULL ||
          (c->nrecs == c->caprecs &&
           (c->recs = realloc(c->recs, (c->caprecs = 2 * c->caprecs + 8) *
                                           sizeof *c->recs)) == NULL))
        dp_die(c, "out of memory");
      r->c = c;
      c->recs[c->nrecs++] = r;
      DP_OK(c, cua_future_on_complete(f, dp_cb, r));
      df->cb = r;
      c->cb_expected++;
    }
  } else if (f != NULL) {
    dp_die(c, "failed cua_submit left a future");
  }
  cua_op_destroy(e.op);
  free(e.fx.v);
}

static void dp_forget(dp_ctx *c, size_t i) {
  /* A future may be destroyed while its callback is on its way:
   * cua_future_destroy() waits for a callback that is running. */
  cua_future_destroy(c->fut[i].f);
  c->fut[i] = c->fut[--c->nfut];
}

/* Waits for future @p i (or times out, polls, or drops it early). */
static void dp_wait_one(dp_ctx *c, size_t i, unsigned how) {
  cua_future *f = c->fut[i].f;
  int rc;
  dp_trace("wait %p how %u", (void *)f, how % 5);
  switch (how % 5) {
  case 1:
    rc = cua_future_wait_timeout(f, 1000u * (how % 64));
    if (rc == CUA_ERR_TIMEDOUT)
      return;
    break;
  case 2:
    rc = cua_future_poll(f);
    if (rc == CUA_ERR_AGAIN)
      return;
    break;
  case 3:
    dp_forget(c, i); /* still runs: checked at the next check point */
    return;
  default:
    rc = cua_future_wait(f);
    break;
  }
  if (rc != 0)
    dp_die(c, "future: %s: %s", cua_err_name(rc), cua_future_error(f));
  void *res = (void *)1;
  if (cua_future_result(f, &res) != 0)
    dp_die(c, "cua_future_result failed on a completed future");
  dp_forget(c, i);
}

/* Waits for everything and compares the buffers with the reference. */
static void dp_check(dp_ctx *c) {
  dp_trace("check");
  while (c->nfut > 0)
    dp_wait_one(c, c->nfut - 1, 0);
  for (int b = 0; b < DP_NBUF; b++) {
    float h[DP_ELEMS];
    cua_op *op = NULL;
    DP_OK(c, cua_op_memcpy_d2h(&op, h, c->buf[b], 0, sizeof h));
    void *res = NULL;
    int rc = cua_submit_wait(c->rt, op, NULL, &res);
    cua_op_destroy(op);
    if (rc != 0)
      dp_die(c, "read back: %s", cua_err_name(rc));
    if (res != h)
      dp_die(c, "d2h result %p, expected %p", res, (void *)h);
    dp_trace("  buffer %d: %g %g .. %g, reference %g %g .. %g", b, h[0], h[1],
             h[DP_ELEMS - 1], c->ref[b][0], c->ref[b][1],
             c->ref[b][DP_ELEMS - 1]);
    for (int k = 0; k < DP_ELEMS && !getenv("DAGPROG_NOCHECK"); k++)
      if (memcmp(&h[k], &c->ref[b][k], sizeof h[k]) != 0)
        dp_die(c,
               "buffer %d[%d] = %g, the sequential reference says %g (after "
               "%ld submissions)",
               b, k, h[k], c->ref[b][k], c->submissions);
  }
  /* Callbacks may still be on their way from the completion thread, and
   * host steps of submissions whose future was destroyed early are not
   * ordered before the read-backs (they touch no buffer): give them time. */
  for (int t = 0; t < 20000 && (atomic_load(&c->cb_runs) < c->cb_expected ||
                                atomic_load(&c->host_runs) < c->host_expected);
       t++)
    nanosleep(&(struct timespec){0, 100000}, NULL);
  if (atomic_load(&c->host_runs) != c->host_expected)
    dp_die(c, "%ld host steps and maps ran, %ld expected",
           atomic_load(&c->host_runs), c->host_expected);
  if (atomic_load(&c->cb_runs) != c->cb_expected || atomic_load(&c->cb_bad))
    dp_die(c, "%ld callbacks ran (%ld with a failure), %ld expected",
           atomic_load(&c->cb_runs), atomic_load(&c->cb_bad), c->cb_expected);
  for (size_t i = 0; i < c->nrecs; i++)
    free(c->recs[i]);
  c->nrecs = 0;
  c->checks++;
}

/* Replaces buffer @p b by a new one, while work on the old one may still
 * be in flight; only between DAGs (nothing under construction uses it). */
static void dp_recreate(dp_ctx *c, unsigned how) {
  int b = (int)(how % DP_NBUF);
  if (!c->owned[b] || c->nstack > 0)
    return;
  /* With nothing under construction, a shared op that has not run never
   * will (reuse needs a run): drop those, they may name the buffer. */
  for (int i = 0; i < DP_SHARED; i++)
    if (c->shared[i].used && !c->shared[i].applied) {
      cua_op_destroy(c->shared[i].op);
      free(c->shared[i].fx.v);
      memset(&c->shared[i], 0, sizeof c->shared[i]);
    }
  dp_trace("recreate buffer %d", b);
  cua_buffer_destroy(c->buf[b]);
  c->buf[b] = NULL;
  DP_OK(c, cua_buffer_create(&c->buf[b], c->rt, 0, sizeof c->ref[b],
                             (how & 0x40) ? CUA_BUFFER_LAZY : 0));
  cua_op *op = NULL;
  float v = (float)(how % 7);
  DP_OK(c, cua_op_fill(&op, c->buf[b], v));
  int rc = cua_submit_wait(c->rt, op, NULL, NULL);
  cua_op_destroy(op);
  if (rc != 0)
    dp_die(c, "fill of a new buffer: %s", cua_err_name(rc));
  for (int k = 0; k < DP_ELEMS; k++)
    c->ref[b][k] = v;
}

/* Sets the reference of buffer @p b to what it holds now (after the
 * driver filled it). */
static void dp_set_ref(dp_ctx *c, int b, float v) {
  for (int k = 0; k < DP_ELEMS; k++)
    c->ref[b][k] = v;
}

/* Runs the program in [p, end). */
static void dp_run(dp_ctx *c, const uint8_t *p, size_t n) {
  c->p = p;
  c->end = p + n;
  while (c->p < c->end) {
    unsigned op = dp_byte(c);
    switch (op % 16) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
      if (c->nstack == DP_STACK)
        dp_combine(c, op & 0x10);
      dp_leaf(c, dp_byte(c));
      break;
    case 5:
    case 6:
      dp_combine(c, 0);
      break;
    case 7:
      dp_combine(c, 1);
      break;
    case 8:
      dp_map(c);
      break;
    case 9:
      dp_share(c, 0);
      break;
    case 10:
      dp_share(c, 1);
      break;
    case 11:
      if (c->nstack < DP_STACK)
        dp_reuse(c);
      break;
    case 12:
    case 13:
      dp_submit(c);
      break;
    case 14:
      if (c->nfut > 0) {
        unsigned how = dp_byte(c);
        dp_wait_one(c, how % c->nfut, how >> 3);
      }
      break;
    default:
      if (op & 0x10)
        dp_recreate(c, dp_byte(c));
      else
        dp_check(c);
      break;
    }
  }
}

/* Submits what is left, checks, and frees every handle of the program
 * (not the driver's buffers and policies). */
static void dp_finish(dp_ctx *c) {
  c->p = c->end;
  dp_submit(c);
  dp_check(c);
  /* Shared ops that never ran (their DAG was never submitted) are fine. */
  for (int i = 0; i < DP_SHARED; i++) {
    if (c->shared[i].used) {
      cua_op_destroy(c->shared[i].op);
      free(c->shared[i].fx.v);
    }
    memset(&c->shared[i], 0, sizeof c->shared[i]);
  }
  free(c->recs);
  c->recs = NULL;
  c->caprecs = 0;
}

#endif /* CUA_TESTS_DAGPROG_H */
