/*
 * tests/check_cuda.c: the CUDA backend module, driven directly through its
 * descriptor (no core runtime involved).
 *
 * Every test opens its own backend: Check runs each test in a forked child,
 * and a CUDA context does not survive fork(), so the parent process never
 * initializes CUDA. Even the "is there a GPU" probe in main() runs in a
 * child of its own. Without the module (configure found no CUDA) or without
 * a usable GPU, the suite exits 77 (skipped) and says why.
 *
 * Each test prints what it measured (latencies, durations, whether the
 * negative control raced) so that a run on a GPU machine documents itself.
 */
#include <cuasync/backend.h>
#include <cuasync/errors.h>

#include "helpers.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MODULE_PATH "plugins/.libs/cuda.so"
#define PTX_PATH "tests/axpb.ptx"

/* The three completion modes, in the order of the schema's choices. */
static const char *const cu_modes[] = {"flags", "events", "callback"};

static void *dl;                        /* the module */
static const cua_backend_descriptor *D; /* its descriptor */

/* ------------------------------------------------------------- utilities */

static uint64_t cu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *cu_errname(int rc) {
  switch (rc) {
  case 0:
    return "CUA_OK";
#define X(name, val, desc)                                                     \
  case val:                                                                    \
    return "CUA_ERR_" #name;
    CUA_ERRNO_MAP(X)
#undef X
  default:
    return "(unknown code)";
  }
}

/* The last log line that said which completion mode is in effect, and the
 * last warning, so tests can tell a fallback from the mode asked for. */
static char cu_mode_line[600];
static char cu_warn_line[600];

static void cu_test_log(void *core, cua_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cu_test_log(void *core, cua_log_level level, const char *fmt, ...) {
  char line[600];
  va_list ap;
  (void)core;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (strstr(line, "completion = ") != NULL)
    snprintf(cu_mode_line, sizeof cu_mode_line, "%s", line);
  if (level <= CUA_LOG_WARN)
    snprintf(cu_warn_line, sizeof cu_warn_line, "%s", line);
  fprintf(stderr, "check_cuda: backend log [%d]: %s\n", (int)level, line);
}

static uint64_t cu_test_now(void *core) {
  (void)core;
  return cu_now_ns();
}

/* Designated: the fields this table leaves out (the allocation and thread
 * services of ABI 1.2) are NULL, and the backend falls back to libc's. */
static const cua_backend_host cu_host_table = {
    .abi_major = CUA_BACKEND_ABI_MAJOR,
    .abi_minor = CUA_BACKEND_ABI_MINOR,
    .size = sizeof(cua_backend_host),
    .core = NULL,
    .log = cu_test_log,
    .now_ns = cu_test_now,
};

/*
 * Builds the parameter values from the module's own schema, defaults
 * filled in as the core would, with completion set to @p completion (NULL:
 * the default) and spin_us to @p spin_us (negative: the default). Returns
 * 0, or -1 if a value is not among an ENUM's choices. It asserts nothing,
 * since it also runs outside any test (in the probe process), where a Check
 * assertion would abort.
 */
static int cu_make_params(cua_param_value *v, const char *completion,
                          int spin_us) {
  memset(v, 0, D->nparams * sizeof *v);
  for (size_t i = 0; i < D->nparams; i++) {
    const cua_param_spec *p = &D->params[i];
    const char *text = p->default_value;
    if (completion != NULL && strcmp(p->name, "completion") == 0)
      text = completion;
    if (spin_us >= 0 && strcmp(p->name, "spin_us") == 0) {
      static char buf[32];
      snprintf(buf, sizeof buf, "%d", spin_us);
      text = buf;
    }
    v[i].present = text != p->default_value;
    v[i].s = text;
    if (p->type == CUA_PARAM_ENUM) {
      /* The index of text among the '|'-separated choices. */
      const char *c = p->choices;
      int64_t idx = 0;
      size_t len = strlen(text);
      while (c != NULL) {
        if (strncmp(c, text, len) == 0 && (c[len] == '|' || c[len] == '\0'))
          break;
        c = strchr(c, '|');
        if (c != NULL)
          c++;
        idx++;
      }
      if (c == NULL)
        return -1;
      v[i].i = idx;
    } else if (p->type == CUA_PARAM_BOOL) {
      v[i].i = strcmp(text, "true") == 0 || strcmp(text, "yes") == 0 ||
               strcmp(text, "on") == 0 || strcmp(text, "1") == 0;
      v[i].d = (double)v[i].i;
    } else if (p->type == CUA_PARAM_INT) {
      v[i].i = strtoll(text, NULL, 10);
      v[i].d = (double)v[i].i;
    } else if (p->type == CUA_PARAM_DOUBLE) {
      v[i].d = strtod(text, NULL);
    }
  }
  return 0;
}

/* One open backend per test process. */
static void *st;

/* A stream and the sequence numbers the test gave its ops. */
typedef struct tstream {
  cua_backend_stream *s;
  int device;
  uint64_t seq;
} tstream;

static void cu_open_backend(const char *completion) {
  cua_param_value v[16];
  cua_backend_err err = {""};
  ck_assert(D->nparams <= 16);
  ck_assert_msg(cu_make_params(v, completion, -1) == 0,
                "'%s' is not a completion mode of the schema", completion);
  cu_mode_line[0] = '\0';
  int rc = D->create(&cu_host_table, v, NULL, 0, &st, &err);
  ck_assert_msg(rc == 0, "create(completion=%s) returned %s (%d): %s",
                completion ? completion : "default", cu_errname(rc), rc,
                err.msg);
  ck_assert_ptr_nonnull(st);
}

static void cu_close_backend(void) {
  D->destroy(st);
  st = NULL;
}

static tstream cu_new_stream(int device) {
  tstream t = {NULL, device, 0};
  cua_backend_err err = {""};
  int rc = D->stream_create(st, device, &t.s, &err);
  ck_assert_msg(rc == 0, "stream_create(%d): %s: %s", device, cu_errname(rc),
                err.msg);
  ck_assert_ptr_nonnull(t.s);
  ck_assert_ptr_nonnull(D->stream_native(st, t.s));
  return t;
}

static cua_backend_op cu_new_op(cua_op_kind kind) {
  cua_backend_op o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.kind = kind;
  return o;
}

static int cu_try_launch(tstream *t, cua_backend_op *o, cua_backend_err *err) {
  o->seq = t->seq + 1;
  int rc = D->launch(st, t->s, o, err);
  if (rc == 0)
    t->seq++;
  return rc;
}

static void cu_launch(tstream *t, cua_backend_op *o) {
  cua_backend_err err = {""};
  int rc = cu_try_launch(t, o, &err);
  ck_assert_msg(rc == 0, "launch of op kind %d on device %d: %s (%d): %s",
                (int)o->kind, t->device, cu_errname(rc), rc, err.msg);
}

/* Marks @p t at its last op and waits (through wait()/progress(), as the
 * core does) until the stream reaches it. Returns the progress() code;
 * fails the test after @p timeout_s seconds. */
static int cu_try_sync(tstream *t, double timeout_s, cua_backend_err *err) {
  uint64_t want = t->seq, v = 0;
  int rc = D->mark(st, t->s, want);
  if (rc != 0) {
    snprintf(err->msg, sizeof err->msg, "mark(%llu) failed",
             (unsigned long long)want);
    return rc;
  }
  uint64_t deadline = cu_now_ns() + (uint64_t)(timeout_s * 1e9);
  for (;;) {
    rc = D->progress(st, t->s, &v, err);
    if (rc != 0 || v >= want)
      return rc;
    ck_assert_msg(cu_now_ns() < deadline,
                  "stream on device %d did not reach mark %llu within %.1f s "
                  "(progress %llu)",
                  t->device, (unsigned long long)want, timeout_s,
                  (unsigned long long)v);
    ck_assert_int_eq(D->wait(st, 10000000), 0);
  }
}

static void cu_sync_stream(tstream *t) {
  cua_backend_err err = {""};
  int rc = cu_try_sync(t, 60, &err);
  ck_assert_msg(rc == 0, "progress on device %d: %s (%d): %s", t->device,
                cu_errname(rc), rc, err.msg);
}

static void *cu_dev_alloc(int device, size_t bytes) {
  void *p = NULL;
  cua_backend_err err = {""};
  int rc = D->mem_alloc(st, device, NULL, bytes, &p, &err);
  ck_assert_msg(rc == 0, "mem_alloc(%zu bytes on device %d): %s: %s", bytes,
                device, cu_errname(rc), err.msg);
  ck_assert_ptr_nonnull(p);
  return p;
}

static void *cu_pinned_alloc(size_t bytes) {
  void *p = NULL;
  cua_backend_err err = {""};
  int rc = D->host_alloc(st, bytes, &p, &err);
  ck_assert_msg(rc == 0, "host_alloc(%zu): %s: %s", bytes, cu_errname(rc),
                err.msg);
  return p;
}

static void cu_op_fill(tstream *t, void *dst, size_t n, float v) {
  cua_backend_op o = cu_new_op(CUA_OP_FILL);
  o.dst = dst;
  o.bytes = n * 4;
  o.value = v;
  cu_launch(t, &o);
}

static void cu_op_copy(tstream *t, void *dst, const void *src, size_t n) {
  cua_backend_op o = cu_new_op(CUA_OP_COPY);
  o.dst = dst;
  o.src = src;
  o.bytes = n * 4;
  cu_launch(t, &o);
}

static void cu_op_spin(tstream *t, uint64_t ns, uint32_t blocks,
                       uint64_t *duration) {
  cua_backend_op o = cu_new_op(CUA_OP_SPIN);
  o.spin.ns = ns;
  o.spin.blocks = blocks;
  o.duration_ns = duration;
  cu_launch(t, &o);
}

static void cu_op_memcpy(tstream *t, cua_op_kind kind, void *dst,
                         const void *src, size_t bytes) {
  cua_backend_op o = cu_new_op(kind);
  o.dst = dst;
  o.src = src;
  o.bytes = bytes;
  o.dst_device = o.src_device = t->device;
  cu_launch(t, &o);
}

/* Copies @p n floats of device memory back into @p host (pinned) on @p t
 * and waits for them. */
static void cu_read_back(tstream *t, float *host, const void *dev, size_t n) {
  cu_op_memcpy(t, CUA_OP_MEMCPY_D2H, host, dev, n * 4);
  cu_sync_stream(t);
}

/*
 * Element-wise checks of large buffers compare plainly and call Check only
 * on the first mismatch. Every ck_assert*() that PASSES costs a write(2):
 * Check (0.15) records it as the test's last location (_mark_point() ->
 * ppack() -> fwrite() + fflush() to the runner's temporary file), about
 * 1 to 1.5 us. One assertion per element of a 1M-float buffer is therefore
 * more than a second per buffer and ~40 MB of temporary file; a loop that
 * checks such a buffer 200 times (the hazard test) ran into the test case's
 * timeout after ~79 rounds, which looked exactly like a hang in the backend.
 */

/* Asserts host[0..n) == v, naming the first element that differs. */
static void cu_expect_all(const float *host, size_t n, float v,
                          const char *what) {
  for (size_t i = 0; i < n; i++)
    if (host[i] != v)
      ck_abort_msg("%s: element %zu of %zu is %g, expected %g", what, i, n,
                   (double)host[i], (double)v);
}

/* Asserts host[0..n) == (float)(base + step * i). */
static void cu_expect_ramp(const float *host, size_t n, double base,
                           double step, const char *what) {
  for (size_t i = 0; i < n; i++) {
    float want = (float)(base + step * (double)i);
    if (host[i] != want)
      ck_abort_msg("%s: element %zu of %zu is %g, expected %g", what, i, n,
                   (double)host[i], (double)want);
  }
}

/* Asserts that every byte of host[0..n) is @p v. */
static void cu_expect_bytes(const unsigned char *host, size_t n, int v,
                            const char *what) {
  for (size_t i = 0; i < n; i++)
    if (host[i] != (unsigned char)v)
      ck_abort_msg("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n,
                   host[i], (unsigned)(unsigned char)v);
}

static char *cu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  ck_assert_msg(n > 0, "%s is empty", path);
  char *buf = malloc((size_t)n);
  ck_assert_ptr_nonnull(buf);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n; /* deliberately not NUL-terminated */
  return buf;
}

/* ------------------------------------------------------------ descriptor */

START_TEST(test_descriptor_schema) {
  ck_assert_str_eq(D->name, "cuda");
  ck_assert_uint_eq(D->abi_major, CUA_BACKEND_ABI_MAJOR);
  ck_assert_uint_eq(D->size, sizeof(cua_backend_descriptor));
  ck_assert_uint_eq(D->nparams, 7);
  ck_assert_str_eq(D->params[0].name, "completion");
  ck_assert_int_eq(D->params[0].type, CUA_PARAM_ENUM);
  ck_assert_str_eq(D->params[0].default_value, "flags");
  ck_assert_str_eq(D->params[0].choices, "flags|events|callback");
  ck_assert_str_eq(D->params[1].name, "spin_us");
  ck_assert_int_eq(D->params[1].type, CUA_PARAM_INT);
  ck_assert_str_eq(D->params[1].default_value, "20");
  ck_assert(D->params[1].min == 0 && D->params[1].max == 1000000);
  ck_assert_str_eq(D->params[2].name, "pool_release_mb");
  ck_assert_str_eq(D->params[2].default_value, "-1");
  ck_assert(D->params[2].min == -1);
  ck_assert_str_eq(D->params[3].name, "graph_updates");
  ck_assert_str_eq(D->params[3].default_value, "in_place");
  ck_assert_str_eq(D->params[3].choices, "in_place|capture");
  ck_assert_str_eq(D->params[4].name, "timestamps");
  ck_assert_str_eq(D->params[4].default_value, "cupti");
  ck_assert_str_eq(D->params[4].choices, "cupti|events");
  ck_assert_str_eq(D->params[5].name, "capture");
  ck_assert_str_eq(D->params[5].default_value, "nodes");
  ck_assert_str_eq(D->params[5].choices, "nodes|stream");
  ck_assert_str_eq(D->params[6].name, "waited_spin");
  ck_assert_int_eq(D->params[6].type, CUA_PARAM_BOOL);
  ck_assert_str_eq(D->params[6].default_value, "true");
  ck_assert_ptr_nonnull(D->waited);
  ck_assert_ptr_nonnull(D->module_load);
  ck_assert_ptr_nonnull(D->host_alloc);
  ck_assert(!(D->flags & CUA_BACKEND_HOST_EXEC));
}
END_TEST

/* ---------------------------------------------------------------- devices */

START_TEST(test_device_info_describes_each_gpu) {
  cu_open_backend(NULL);
  int n = D->device_count(st);
  ck_assert_int_ge(n, 1);
  for (int d = 0; d < n; d++) {
    cua_device_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    ck_assert_int_eq(D->device_info(st, d, &info), 0);
    printf("check_cuda: device %d: %s, ordinal %d, %.1f GiB, sm_%d%d, %d SMs\n",
           d, info.name, info.ordinal, (double)info.total_memory / (1 << 30),
           info.compute_major, info.compute_minor, info.multiprocessors);
    ck_assert_msg(info.name[0] != '\0', "device %d has no name", d);
    ck_assert_int_eq(info.ordinal, d);
    ck_assert_uint_gt(info.total_memory, 0);
    ck_assert_int_ge(info.compute_major, 3);
    ck_assert_int_gt(info.multiprocessors, 0);
    ck_assert_int_eq(D->can_access(st, d, d), 1);
  }
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(D->device_info(st, n, &info), CUA_ERR_BAD_DEVICE);
  ck_assert_int_eq(D->device_info(st, -1, &info), CUA_ERR_BAD_DEVICE);
  cua_backend_stream *s = NULL;
  cua_backend_err err = {""};
  ck_assert_int_eq(D->stream_create(st, n, &s, &err), CUA_ERR_BAD_DEVICE);
  cu_close_backend();
}
END_TEST

START_TEST(test_bad_ordinal_is_refused) {
  cu_open_backend(NULL);
  int n = D->device_count(st);
  cu_close_backend();
  cua_param_value v[16];
  ck_assert(D->nparams <= 16);
  ck_assert_int_eq(cu_make_params(v, NULL, -1), 0);
  int ord[1] = {n + 3};
  cua_backend_err err = {""};
  void *s2 = NULL;
  int rc = D->create(&cu_host_table, v, ord, 1, &s2, &err);
  ck_assert_msg(rc == CUA_ERR_BAD_DEVICE, "create(ordinal %d) returned %s: %s",
                ord[0], cu_errname(rc), err.msg);
  ck_assert_ptr_null(s2);
  ck_assert_msg(strstr(err.msg, "does not exist") != NULL, "message: %s",
                err.msg);
  /* A valid explicit ordinal works and is reported as such. */
  int last[1] = {n - 1};
  rc = D->create(&cu_host_table, v, last, 1, &s2, &err);
  ck_assert_msg(rc == 0, "create(ordinal %d): %s: %s", last[0], cu_errname(rc),
                err.msg);
  ck_assert_int_eq(D->device_count(s2), 1);
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(D->device_info(s2, 0, &info), 0);
  ck_assert_int_eq(info.ordinal, n - 1);
  D->destroy(s2);
}
END_TEST

/* -------------------------------------------------------------------- ops */

START_TEST(test_fill_copy_axpy_memset_results) {
  cu_open_backend(NULL);
  tstream t = cu_new_stream(0);
  /* An odd count, so grid-stride tails are covered. */
  const size_t n = (1u << 20) + 7;
  float *x = cu_dev_alloc(0, n * 4), *y = cu_dev_alloc(0, n * 4),
        *z = cu_dev_alloc(0, n * 4), *w = cu_dev_alloc(0, n * 4);
  float *h = cu_pinned_alloc(n * 4);

  cu_op_fill(&t, x, n, 2.5f);
  cu_read_back(&t, h, x, n);
  cu_expect_all(h, n, 2.5f, "FILL x=2.5");

  cu_op_fill(&t, y, n, 1.0f);
  cua_backend_op o = cu_new_op(CUA_OP_AXPY);
  o.dst = y;
  o.src = x;
  o.bytes = n * 4;
  o.value = 3.0f;
  cu_launch(&t, &o);
  cu_read_back(&t, h, y, n);
  cu_expect_all(h, n, 8.5f, "AXPY y = 3 * 2.5 + 1");

  cu_op_copy(&t, z, y, n);
  cu_read_back(&t, h, z, n);
  cu_expect_all(h, n, 8.5f, "COPY z = y");

  /* MEMSET sets bytes: 0x3f3f3f3f is the float 0.74663f. */
  o = cu_new_op(CUA_OP_MEMSET);
  o.dst = w;
  o.bytes = n * 4;
  o.byte_value = 0x3f;
  cu_launch(&t, &o);
  cu_read_back(&t, h, w, n);
  cu_expect_bytes((const unsigned char *)h, n * 4, 0x3f, "MEMSET");

  /* A partial FILL leaves the rest alone. */
  cu_op_fill(&t, x, 100, -1.0f);
  cu_read_back(&t, h, x, n);
  cu_expect_all(h, 100, -1.0f, "partial FILL");
  cu_expect_all(h + 100, n - 100, 2.5f, "beyond partial FILL");

  /* Zero-sized ops are no-ops, not launch errors. */
  cu_op_fill(&t, x, 0, 9.0f);
  cu_op_copy(&t, z, y, 0);
  cu_sync_stream(&t);

  /* A float op on a byte count that is not a whole number of floats. */
  cua_backend_err err = {""};
  o = cu_new_op(CUA_OP_FILL);
  o.dst = x;
  o.bytes = 6;
  ck_assert_int_eq(cu_try_launch(&t, &o, &err), CUA_ERR_INVAL);

  D->host_free(st, h);
  D->mem_free(st, 0, NULL, x);
  D->mem_free(st, 0, NULL, y);
  D->mem_free(st, 0, t.s, z);
  D->mem_free(st, 0, t.s, w);
  cu_sync_stream(&t);
  cu_close_backend();
}
END_TEST

START_TEST(test_memcpy_h2d_d2h_d2d) {
  cu_open_backend(NULL);
  tstream t = cu_new_stream(0);
  const size_t n = 3u << 18;
  float *pinned = cu_pinned_alloc(n * 4);
  float *pageable = malloc(n * 4);
  ck_assert_ptr_nonnull(pageable);
  for (size_t i = 0; i < n; i++) {
    pinned[i] = (float)i;
    pageable[i] = (float)(n - i);
  }
  /* Stream-ordered allocations, used on the same stream. */
  void *a = NULL, *c = NULL;
  cua_backend_err err = {""};
  ck_assert_int_eq(D->mem_alloc(st, 0, t.s, n * 4, &a, &err), 0);
  ck_assert_int_eq(D->mem_alloc(st, 0, t.s, n * 4, &c, &err), 0);

  cu_op_memcpy(&t, CUA_OP_MEMCPY_H2D, a, pinned, n * 4);
  cu_op_memcpy(&t, CUA_OP_MEMCPY_D2D, c, a, n * 4);
  /* The H2D reads pinned asynchronously: it must be done before pinned is
   * cleared for the read-back (clearing it at once let the copy read
   * zeros, seen once on the H100). */
  cu_sync_stream(&t);
  memset(pinned, 0, n * 4);
  cu_read_back(&t, pinned, c, n);
  cu_expect_ramp(pinned, n, 0.0, 1.0, "H2D(pinned)+D2D");

  cu_op_memcpy(&t, CUA_OP_MEMCPY_H2D, a, pageable, n * 4);
  float *back = malloc(n * 4);
  ck_assert_ptr_nonnull(back);
  cu_op_memcpy(&t, CUA_OP_MEMCPY_D2H, back, a, n * 4);
  cu_sync_stream(&t);
  ck_assert_msg(memcmp(back, pageable, n * 4) == 0,
                "H2D/D2H through pageable memory changed the data");

  D->mem_free(st, 0, t.s, a);
  D->mem_free(st, 0, t.s, c);
  cu_sync_stream(&t);
  free(back);
  free(pageable);
  D->host_free(st, pinned);
  cu_close_backend();
}
END_TEST

START_TEST(test_spin_lasts_at_least_its_duration) {
  cu_open_backend(NULL);
  tstream t = cu_new_stream(0);
  const uint64_t ns = 20000000; /* 20 ms */
  uint64_t measured = 0;
  uint64_t t0 = cu_now_ns();
  cu_op_spin(&t, ns, 4, &measured);
  cu_sync_stream(&t);
  uint64_t host = cu_now_ns() - t0;
  printf("check_cuda: SPIN %.3f ms: host clock %.3f ms, events %.3f ms\n",
         ns / 1e6, host / 1e6, measured / 1e6);
  ck_assert_msg(host >= ns, "SPIN of %llu ns finished after %llu ns",
                (unsigned long long)ns, (unsigned long long)host);
  ck_assert_msg(measured >= ns * 99 / 100 && measured <= host + 1000000,
                "SPIN of %llu ns timed by events at %llu ns (host %llu ns)",
                (unsigned long long)ns, (unsigned long long)measured,
                (unsigned long long)host);
  cu_close_backend();
}
END_TEST

/* ------------------------------------------------------------- completion */

START_TEST(test_marks_and_progress_in_each_mode) {
  const char *mode = cu_modes[_i];
  cu_open_backend(mode);
  printf("check_cuda: [%s] %s\n", mode, cu_mode_line);
  ck_assert_msg(strstr(cu_mode_line, mode) != NULL,
                "asked for completion = %s, got: '%s' (last warning: '%s')",
                mode, cu_mode_line, cu_warn_line);
  tstream t = cu_new_stream(0);
  uint64_t v = 99;
  cua_backend_err err = {""};
  ck_assert_int_eq(D->progress(st, t.s, &v, &err), 0);
  ck_assert_uint_eq(v, 0);

  /* A mark behind a 100 ms kernel is not reached at once, then is. */
  cu_op_spin(&t, 100000000, 1, NULL);
  ck_assert_int_eq(D->mark(st, t.s, t.seq), 0);
  ck_assert_int_eq(D->progress(st, t.s, &v, &err), 0);
  ck_assert_msg(v < t.seq, "[%s] progress %llu before a 100 ms kernel ended",
                mode, (unsigned long long)v);
  cu_sync_stream(&t);

  /* Many marks: progress never goes back and ends at the last one. */
  float *x = cu_dev_alloc(0, 4096);
  uint64_t last = 0;
  for (int i = 0; i < 200; i++) {
    cu_op_fill(&t, x, 1024, (float)i);
    ck_assert_int_eq(D->mark(st, t.s, t.seq), 0);
    ck_assert_int_eq(D->progress(st, t.s, &v, &err), 0);
    ck_assert_msg(v >= last && v <= t.seq, "[%s] progress %llu after %llu",
                  mode, (unsigned long long)v, (unsigned long long)last);
    last = v;
  }
  cu_sync_stream(&t);
  ck_assert_int_eq(D->progress(st, t.s, &v, &err), 0);
  ck_assert_uint_eq(v, t.seq);

  /* Two streams progress independently. */
  tstream u = cu_new_stream(0);
  cu_op_spin(&u, 200000000, 1, NULL);
  ck_assert_int_eq(D->mark(st, u.s, u.seq), 0);
  cu_op_fill(&t, x, 1024, 1.0f);
  cu_sync_stream(&t);
  ck_assert_int_eq(D->progress(st, u.s, &v, &err), 0);
  ck_assert_msg(v < u.seq, "[%s] a stream behind a 200 ms kernel progressed",
                mode);
  cu_sync_stream(&u);
  D->mem_free(st, 0, NULL, x);
  cu_close_backend();
}
END_TEST

START_TEST(test_wait_returns_promptly_after_a_mark) {
  const char *mode = cu_modes[_i];
  cu_open_backend(mode);
  tstream t = cu_new_stream(0);
  cu_op_spin(&t, 1000, 1, NULL); /* warm up the kernel and the stream */
  cu_sync_stream(&t);
  double worst = 0, total = 0;
  const int rounds = 20;
  for (int r = 0; r < rounds; r++) {
    const uint64_t ns = 2000000; /* 2 ms */
    uint64_t t0 = cu_now_ns(), v = 0;
    cu_op_spin(&t, ns, 1, NULL);
    ck_assert_int_eq(D->mark(st, t.s, t.seq), 0);
    cua_backend_err err = {""};
    int waits = 0;
    for (;;) {
      ck_assert_int_eq(D->progress(st, t.s, &v, &err), 0);
      if (v >= t.seq)
        break;
      /* A long timeout: only a working wake-up makes this loop quick. */
      ck_assert_int_eq(D->wait(st, 2000000000ull), 0);
      ck_assert_int_lt(++waits, 100000);
    }
    double late = ((double)(cu_now_ns() - t0) - (double)ns) / 1e3;
    total += late;
    if (late > worst)
      worst = late;
  }
  printf("check_cuda: [%s] mark seen %.1f us after a 2 ms kernel on average, "
         "%.1f us at worst (launch included)\n",
         mode, total / rounds, worst);
  ck_assert_msg(worst < 50000, "[%s] wait() noticed a mark %.1f us late", mode,
                worst);
  cu_close_backend();
}
END_TEST

static void *cu_wake_later(void *arg) {
  (void)arg;
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL);
  D->wake(st);
  return NULL;
}

START_TEST(test_wait_times_out_and_wakes) {
  const char *mode = cu_modes[_i];
  cu_open_backend(mode);
  tstream t = cu_new_stream(0);
  /* Nothing outstanding: wait() sleeps until its timeout. */
  uint64_t t0 = cu_now_ns();
  ck_assert_int_eq(D->wait(st, 30000000), 0);
  uint64_t slept = cu_now_ns() - t0;
  ck_assert_msg(slept >= 25000000 && slept < 1000000000ull,
                "[%s] wait(30 ms) with nothing outstanding took %.3f ms", mode,
                slept / 1e6);

  /* wake() cuts a long wait short, idle or not. */
  for (int busy = 0; busy < 2; busy++) {
    if (busy) {
      cu_op_spin(&t, 2000000000ull, 1, NULL); /* 2 s */
      ck_assert_int_eq(D->mark(st, t.s, t.seq), 0);
    }
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, cu_wake_later, NULL), 0);
    t0 = cu_now_ns();
    uint64_t took = 0;
    /* wait() may return early on its own (it reports "may have changed"),
     * so keep waiting until the wake arrives or 5 s pass. */
    do {
      ck_assert_int_eq(D->wait(st, 5000000000ull), 0);
      took = cu_now_ns() - t0;
    } while (took < 45000000);
    pthread_join(th, NULL);
    printf("check_cuda: [%s] wake() ended a 5 s wait (%s) after %.1f ms\n",
           mode, busy ? "kernel running" : "idle", took / 1e6);
    ck_assert_msg(took < 1000000000ull,
                  "[%s] wait(5 s) ignored wake() (%s): %.3f ms", mode,
                  busy ? "busy" : "idle", took / 1e6);
  }
  cu_sync_stream(&t);
  cu_close_backend();
}
END_TEST

static void *cu_waited_later(void *arg) {
  (void)arg;
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL);
  (void)D->waited(st, 1);
  return NULL;
}

/* waited(1) (backend ABI 1.10) wakes a wait() asleep between polls, which
 * then polls on without sleeping until waited(0); it says so, except in
 * callback mode, where host functions wake the waiter anyway. */
START_TEST(test_waited_wakes_a_sleeping_wait) {
  const char *mode = cu_modes[_i];
  int callback = strcmp(mode, "callback") == 0;
  cu_open_backend(mode);
  tstream t = cu_new_stream(0);
  cu_op_spin(&t, 2000000000ull, 1, NULL); /* 2 s */
  ck_assert_int_eq(D->mark(st, t.s, t.seq), 0);
  /* Past spin_us the wait sleeps; waited(1) 50 ms later ends it. */
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, cu_waited_later, NULL), 0);
  uint64_t t0 = cu_now_ns(), took = 0;
  do {
    ck_assert_int_eq(D->wait(st, 5000000000ull), 0);
    took = cu_now_ns() - t0;
  } while (took < 45000000);
  pthread_join(th, NULL);
  printf("check_cuda: [%s] waited(1) ended a 5 s wait after %.1f ms\n", mode,
         took / 1e6);
  if (!callback)
    ck_assert_msg(took < 1000000000ull,
                  "[%s] wait(5 s) ignored waited(1): %.3f ms", mode,
                  took / 1e6);
  /* While waited, a wait() with the kernel running returns at its
   * deadline, polling (no mark is reached before). */
  t0 = cu_now_ns();
  ck_assert_int_eq(D->wait(st, 20000000), 0);
  ck_assert_uint_lt(cu_now_ns() - t0, 1000000000ull);
  ck_assert_int_eq(D->waited(st, 1), callback ? 0 : 1);
  ck_assert_int_eq(D->waited(st, 0), 0);
  uint64_t v = 0;
  cua_backend_err err = {""};
  for (int i = 0; i < 1000; i++) {
    ck_assert_int_eq(D->progress(st, t.s, &v, &err), 0);
    if (v >= t.seq)
      break;
    ck_assert_int_eq(D->wait(st, 100000000), 0);
  }
  ck_assert_uint_eq(v, t.seq);
  cu_close_backend();
}
END_TEST

START_TEST(test_durations_are_reported) {
  const char *mode = cu_modes[_i];
  cu_open_backend(mode);
  tstream t = cu_new_stream(0);
  uint64_t d1 = 0, d2 = 0, d3 = 0;
  cu_op_spin(&t, 2000000, 1, &d1);
  cu_op_spin(&t, 5000000, 2, &d2);
  float *x = cu_dev_alloc(0, 1 << 24);
  cua_backend_op o = cu_new_op(CUA_OP_FILL);
  o.dst = x;
  o.bytes = 1 << 24;
  o.duration_ns = &d3;
  cu_launch(&t, &o);
  cu_sync_stream(&t);
  printf("check_cuda: [%s] durations: spin 2 ms -> %.3f ms, spin 5 ms -> "
         "%.3f ms, fill 16 MiB -> %.3f ms\n",
         mode, d1 / 1e6, d2 / 1e6, d3 / 1e6);
  ck_assert_msg(d1 >= 1980000 && d1 < 1000000000ull, "[%s] spin 2 ms: %llu ns",
                mode, (unsigned long long)d1);
  ck_assert_msg(d2 >= 4950000 && d2 < 1000000000ull, "[%s] spin 5 ms: %llu ns",
                mode, (unsigned long long)d2);
  ck_assert_msg(d3 > 0 && d3 < 1000000000ull, "[%s] fill: %llu ns", mode,
                (unsigned long long)d3);
  D->mem_free(st, 0, NULL, x);
  cu_close_backend();
}
END_TEST

/* ---------------------------------------------------------------- hazards */

/*
 * Stream A writes x (after a spin, so it is slow), stream B copies x into
 * y. With B waiting for an event recorded on A, y must hold the value of
 * this round every time; without the wait, B would usually read the
 * previous round's x. The same event is re-recorded every round. Returns
 * the number of rounds that read stale data (0 with the event, or the test
 * fails). CHECK_CUDA_TRACE=1 logs each round and what it cost.
 */
static int cu_hazard_rounds(int use_event, int rounds, size_t n,
                            uint64_t spin_ns, const char *label) {
  tstream a = cu_new_stream(0), b = cu_new_stream(0);
  float *x = cu_dev_alloc(0, n * 4), *y = cu_dev_alloc(0, n * 4);
  float *h = cu_pinned_alloc(n * 4);
  cua_backend_event *ev = NULL;
  cua_backend_err err = {""};
  const int trace = getenv("CHECK_CUDA_TRACE") != NULL;
  ck_assert_int_eq(D->event_create(st, 0, &ev, &err), 0);
  cu_op_fill(&a, x, n, -1.0f);
  cu_sync_stream(&a);
  int raced = 0;
  double worst_ms = 0, check_ms = 0;
  uint64_t t_start = cu_now_ns();
  for (int i = 0; i < rounds; i++) {
    uint64_t t0 = cu_now_ns();
    /* Values stay exact in a float (rounds < 2^24). */
    float want = (float)i;
    cu_op_spin(&a, spin_ns, 1, NULL);
    cu_op_fill(&a, x, n, want);
    if (use_event) {
      ck_assert_int_eq(D->event_record(st, ev, a.s), 0);
      ck_assert_int_eq(D->stream_wait_event(st, b.s, ev), 0);
    }
    cu_op_copy(&b, y, x, n);
    if (trace)
      fprintf(stderr, "%s: round %d: a.seq %llu b.seq %llu\n", label, i,
              (unsigned long long)a.seq, (unsigned long long)b.seq);
    cu_read_back(&b, h, y, n);
    uint64_t t1 = cu_now_ns();
    if (use_event) {
      cu_expect_all(h, n, want, "y after an event-ordered copy");
    } else {
      for (size_t k = 0; k < n; k++) {
        if (h[k] != want) {
          raced++;
          break;
        }
      }
    }
    uint64_t t2 = cu_now_ns();
    cu_sync_stream(&a);
    double ms = (double)(cu_now_ns() - t0) / 1e6;
    check_ms += (double)(t2 - t1) / 1e6;
    if (ms > worst_ms)
      worst_ms = ms;
    if (trace)
      fprintf(stderr, "%s: round %d: done in %.3f ms (checking y: %.3f ms)\n",
              label, i, ms, (double)(t2 - t1) / 1e6);
  }
  printf("check_cuda: %s: %d rounds of %zu floats in %.1f ms (worst round "
         "%.3f ms, checking %.1f ms in all)\n",
         label, rounds, n, (double)(cu_now_ns() - t_start) / 1e6, worst_ms,
         check_ms);
  D->event_destroy(st, ev);
  D->host_free(st, h);
  D->mem_free(st, 0, NULL, x);
  D->mem_free(st, 0, NULL, y);
  return raced;
}

START_TEST(test_cross_stream_event_orders_real_kernels) {
  cu_open_backend(NULL);
  ck_assert_int_eq(cu_hazard_rounds(1, 200, 1u << 20, 200000, "event"), 0);
  printf("check_cuda: cross-stream copy ordered by an event: 200/200 rounds "
         "correct\n");
  cu_close_backend();
}
END_TEST

START_TEST(test_cross_stream_without_event_control) {
  /* The negative control: it shows the hazard test above can fail. It
   * asserts nothing, since a race is likely but never certain. */
  cu_open_backend(NULL);
  int raced = cu_hazard_rounds(0, 200, 1u << 20, 200000, "no event");
  printf("check_cuda: negative control (no event): %s (%d of 200 rounds read "
         "stale data)\n",
         raced ? "race observed" : "no race observed", raced);
  cu_close_backend();
}
END_TEST

/* The event-ordered hazard loop for far more rounds than the 200 above, in
 * each completion mode: one event re-recorded thousands of times, thousands
 * of cross-stream waits and of marks per stream. Anything of fixed size in
 * the backend or the driver that event_record(), stream_wait_event() or
 * mark() could fill (and block on) shows up here as a failure or a
 * timeout, with CHECK_CUDA_TRACE=1 naming the round. */
START_TEST(test_cross_stream_event_many_rounds) {
  const char *mode = cu_modes[_i];
  char label[64];
  snprintf(label, sizeof label, "[%s] event, many rounds", mode);
  cu_open_backend(mode);
  ck_assert_int_eq(cu_hazard_rounds(1, 5000, 1u << 16, 20000, label), 0);
  cu_close_backend();
}
END_TEST

/*
 * The cause of a "hang" seen on an H200: cu_expect_all() asserted once per
 * element, and Check makes every passing assertion a write(2), so the
 * 200-round hazard test spent over a second per round checking 1M floats
 * and hit the test case's timeout after ~79 rounds. The helpers must stay
 * plain loops: this checks 48M elements, tens of milliseconds as plain
 * loops and about a minute with an assertion per element.
 */
START_TEST(test_large_buffer_checks_are_cheap) {
  const size_t n = 8u << 20;
  float *f = malloc(n * sizeof *f), *r = malloc(n * sizeof *r);
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(r);
  for (size_t i = 0; i < n; i++) {
    f[i] = 1.5f;
    r[i] = (float)i;
  }
  uint64_t t0 = cu_now_ns();
  cu_expect_all(f, n, 1.5f, "cu_expect_all");
  cu_expect_ramp(r, n, 0.0, 1.0, "cu_expect_ramp");
  memset(f, 0x3f, n * sizeof *f);
  cu_expect_bytes((const unsigned char *)f, n * sizeof *f, 0x3f,
                  "cu_expect_bytes");
  double ms = (double)(cu_now_ns() - t0) / 1e6;
  free(f);
  free(r);
  printf("check_cuda: checking 2 x 8M floats and 32 MiB of bytes took %.1f "
         "ms\n",
         ms);
  ck_assert_msg(ms < 2000,
                "checking 2 x 8M floats and 32 MiB took %.1f ms: do the check "
                "helpers call Check once per element again?",
                ms);
}
END_TEST

START_TEST(test_event_record_query_wait) {
  cu_open_backend(NULL);
  tstream a = cu_new_stream(0), b = cu_new_stream(0);
  cua_backend_event *ev = NULL;
  cua_backend_err err = {""};
  ck_assert_int_eq(D->event_create(st, 0, &ev, &err), 0);
  ck_assert_int_eq(D->event_query(st, ev), 0); /* never recorded */
  cu_op_spin(&a, 100000000, 1, NULL);
  ck_assert_int_eq(D->event_record(st, ev, a.s), 0);
  ck_assert_int_eq(D->event_query(st, ev), CUA_ERR_AGAIN);
  ck_assert_int_eq(D->stream_wait_event(st, b.s, ev), 0);
  float *x = cu_dev_alloc(0, 4096);
  cu_op_fill(&b, x, 1024, 3.0f);
  cu_sync_stream(&b);
  /* B waited for A's event, so the event is complete by now. */
  ck_assert_int_eq(D->event_query(st, ev), 0);
  cu_sync_stream(&a);
  D->event_destroy(st, ev);
  D->mem_free(st, 0, NULL, x);
  cu_close_backend();
}
END_TEST

/* ------------------------------------------------------------ multi-GPU */

START_TEST(test_peer_copy_between_two_gpus) {
  cu_open_backend(NULL);
  int n = D->device_count(st);
  if (n < 2) {
    printf("check_cuda: test_peer_copy_between_two_gpus: skipped: %d CUDA "
           "device (needs 2)\n",
           n);
    cu_close_backend();
    return;
  }
  printf("check_cuda: peer access 0->1: %d, 1->0: %d\n",
         D->can_access(st, 0, 1), D->can_access(st, 1, 0));
  tstream s0 = cu_new_stream(0), s1 = cu_new_stream(1);
  const size_t cnt = (1u << 22) + 3;
  float *x0 = cu_dev_alloc(0, cnt * 4), *x1 = cu_dev_alloc(1, cnt * 4);
  float *h = cu_pinned_alloc(cnt * 4);

  /* 0 -> 1, on a stream of the destination device. */
  cu_op_fill(&s0, x0, cnt, 7.0f);
  cu_sync_stream(&s0);
  cua_backend_op o = cu_new_op(CUA_OP_MEMCPY_D2D);
  o.dst = x1;
  o.src = x0;
  o.bytes = cnt * 4;
  o.dst_device = 1;
  o.src_device = 0;
  cu_launch(&s1, &o);
  cu_read_back(&s1, h, x1, cnt);
  cu_expect_all(h, cnt, 7.0f, "peer copy 0 -> 1 on device 1");

  /* 1 -> 0, on a stream of the source device, ordered by an event. */
  cu_op_fill(&s1, x1, cnt, 9.0f);
  cua_backend_event *ev = NULL;
  cua_backend_err err = {""};
  ck_assert_int_eq(D->event_create(st, 1, &ev, &err), 0);
  ck_assert_int_eq(D->event_record(st, ev, s1.s), 0);
  ck_assert_int_eq(D->stream_wait_event(st, s0.s, ev), 0);
  o.dst = x0;
  o.src = x1;
  o.dst_device = 0;
  o.src_device = 1;
  cu_launch(&s0, &o);
  cu_read_back(&s0, h, x0, cnt);
  cu_expect_all(h, cnt, 9.0f, "peer copy 1 -> 0 on device 0");

  /* With peer access, a kernel on device 1 reads device 0's pool memory
   * directly (this needs cudaMemPoolSetAccess, not only peer access). */
  if (D->can_access(st, 1, 0)) {
    cu_op_fill(&s0, x0, cnt, 11.0f);
    cu_sync_stream(&s0);
    cu_op_copy(&s1, x1, x0, cnt);
    cu_read_back(&s1, h, x1, cnt);
    cu_expect_all(h, cnt, 11.0f, "COPY kernel on device 1 reading device 0");
  } else {
    printf("check_cuda: no peer access 1->0: direct kernel access not "
           "tested\n");
  }
  D->event_destroy(st, ev);
  D->host_free(st, h);
  D->mem_free(st, 0, NULL, x0);
  D->mem_free(st, 1, NULL, x1);
  cu_close_backend();
}
END_TEST

/* ---------------------------------------------------------------- modules */

START_TEST(test_ptx_module_kernel_runs) {
  cu_open_backend(NULL);
  size_t len = 0;
  char *ptx = cu_read_file(built(PTX_PATH), &len);
  cua_backend_module *m = NULL;
  cua_backend_err err = {""};
  int rc = D->module_load(st, ptx, len, &m, &err);
  free(ptx); /* the backend keeps its own copy */
  ck_assert_msg(rc == 0, "module_load(%s): %s: %s", built(PTX_PATH),
                cu_errname(rc), err.msg);
  void *k = NULL;
  rc = D->module_function(st, m, "axpb", &k, &err);
  ck_assert_msg(rc == 0, "module_function(axpb): %s: %s", cu_errname(rc),
                err.msg);
  ck_assert_ptr_nonnull(k);

  tstream t = cu_new_stream(0);
  unsigned n = 100003;
  float *x = cu_dev_alloc(0, n * 4), *y = cu_dev_alloc(0, n * 4);
  float *h = cu_pinned_alloc(n * 4);
  cu_op_fill(&t, x, n, 2.0f);
  float a = 3.0f, b = 0.5f;
  void *params[] = {&y, &x, &a, &b, &n};
  cua_backend_op o = cu_new_op(CUA_OP_KERNEL);
  o.kernel = k;
  o.grid[0] = (n + 255) / 256;
  o.grid[1] = o.grid[2] = 1;
  o.block[0] = 256;
  o.block[1] = o.block[2] = 1;
  o.kernel_params = params;
  cu_launch(&t, &o);
  cu_read_back(&t, h, y, n);
  cu_expect_all(h, n, 6.5f, "axpb from the PTX module");

  rc = D->module_function(st, m, "no_such_kernel", &k, &err);
  ck_assert_int_ne(rc, 0);
  ck_assert_msg(strstr(err.msg, "cudaError") != NULL &&
                    strstr(err.msg, "no_such_kernel") != NULL,
                "message: %s", err.msg);
  D->module_unload(st, m);

  /* A bad image is refused with CUDA's reason: by module_load() itself, or
   * at the latest by the first lookup where loading is lazy. */
  const char junk[] = {'n', 'o', 't', ' ', 'p', 't', 'x'};
  rc = D->module_load(st, junk, sizeof junk, &m, &err);
  if (rc == 0) {
    printf("check_cuda: junk module accepted by module_load (lazy)\n");
    rc = D->module_function(st, m, "axpb", &k, &err);
    D->module_unload(st, m);
  }
  ck_assert_msg(rc != 0, "a junk module was loaded and used");
  ck_assert_msg(strstr(err.msg, "cudaError") != NULL, "message: %s", err.msg);
  printf("check_cuda: junk module refused: %s\n", err.msg);

  D->host_free(st, h);
  D->mem_free(st, 0, NULL, x);
  D->mem_free(st, 0, NULL, y);
  cu_close_backend();
}
END_TEST

/* ----------------------------------------------------------------- errors */

START_TEST(test_out_of_memory_is_reported) {
  cu_open_backend(NULL);
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(D->device_info(st, 0, &info), 0);
  size_t too_much = (size_t)info.total_memory * 2;
  tstream t = cu_new_stream(0);
  for (int ordered = 0; ordered < 2; ordered++) {
    void *p = (void *)1;
    cua_backend_err err = {""};
    int rc = D->mem_alloc(st, 0, ordered ? t.s : NULL, too_much, &p, &err);
    printf("check_cuda: allocating %zu bytes (%s): %s\n", too_much,
           ordered ? "stream-ordered" : "synchronous", err.msg);
    ck_assert_msg(rc == CUA_ERR_DEVICE_OOM, "mem_alloc(%zu) returned %s: %s",
                  too_much, cu_errname(rc), err.msg);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err.msg, "cudaErrorMemoryAllocation") != NULL,
                  "message: %s", err.msg);
  }
  /* The backend still works. */
  float *x = cu_dev_alloc(0, 4096);
  float h[1024];
  cu_op_fill(&t, x, 1024, 4.0f);
  cu_op_memcpy(&t, CUA_OP_MEMCPY_D2H, h, x, sizeof h);
  cu_sync_stream(&t);
  cu_expect_all(h, 1024, 4.0f, "FILL after an OOM");
  D->mem_free(st, 0, NULL, x);
  cu_close_backend();
}
END_TEST

START_TEST(test_launch_failure_is_reported_and_recoverable) {
  cu_open_backend(NULL);
  size_t len = 0;
  char *ptx = cu_read_file(built(PTX_PATH), &len);
  cua_backend_module *m = NULL;
  cua_backend_err err = {""};
  ck_assert_int_eq(D->module_load(st, ptx, len, &m, &err), 0);
  free(ptx);
  void *k = NULL;
  ck_assert_int_eq(D->module_function(st, m, "axpb", &k, &err), 0);

  tstream t = cu_new_stream(0);
  float *x = cu_dev_alloc(0, 4096), *y = cu_dev_alloc(0, 4096);
  float a = 1, b = 1;
  unsigned n = 1024;
  void *params[] = {&y, &x, &a, &b, &n};
  cua_backend_op o = cu_new_op(CUA_OP_KERNEL);
  o.kernel = k;
  o.grid[0] = o.grid[1] = o.grid[2] = 1;
  o.block[0] = 4096; /* more threads than any GPU allows in a block */
  o.block[1] = o.block[2] = 1;
  o.kernel_params = params;
  uint64_t before = t.seq;
  int rc = cu_try_launch(&t, &o, &err);
  printf("check_cuda: 4096-thread block: %s: %s\n", cu_errname(rc), err.msg);
  ck_assert_msg(rc == CUA_ERR_LAUNCH, "launch returned %s: %s", cu_errname(rc),
                err.msg);
  ck_assert_msg(strstr(err.msg, "cudaErrorInvalidConfiguration") != NULL ||
                    strstr(err.msg, "cudaErrorInvalidValue") != NULL,
                "message: %s", err.msg);
  ck_assert_uint_eq(t.seq, before);

  /* Not sticky: the next launches work and see no stale error. */
  float h[1024];
  cu_op_fill(&t, x, 1024, 5.0f);
  cu_op_memcpy(&t, CUA_OP_MEMCPY_D2H, h, x, sizeof h);
  cu_sync_stream(&t);
  cu_expect_all(h, 1024, 5.0f, "FILL after a failed launch");
  D->module_unload(st, m);
  D->mem_free(st, 0, NULL, x);
  D->mem_free(st, 0, NULL, y);
  cu_close_backend();
}
END_TEST

/* A stream function: memsets its buffer through the CUDA runtime that the
 * module loaded (this test does not link libcudart itself). */
typedef int (*memset_async_fn)(void *, int, size_t, void *);

typedef struct func_ctx {
  memset_async_fn memset_async;
  void *dst;
  size_t bytes;
  int fail;
} func_ctx;

static int cu_stream_func(void *ctx, void *native, cua_backend_err *err) {
  func_ctx *c = ctx;
  if (c->fail) {
    snprintf(err->msg, sizeof err->msg, "the test's function failed");
    return CUA_ERR_OP_FAILED;
  }
  return c->memset_async(c->dst, 0x11, c->bytes, native) == 0
             ? 0
             : CUA_ERR_OP_FAILED;
}

START_TEST(test_func_runs_on_the_stream) {
  cu_open_backend(NULL);
  tstream t = cu_new_stream(0);
  func_ctx c;
  memset(&c, 0, sizeof c);
  c.memset_async = (memset_async_fn)dlsym(dl, "cudaMemsetAsync");
  ck_assert_msg(c.memset_async != NULL, "cudaMemsetAsync not found: %s",
                dlerror());
  c.bytes = 1 << 16;
  c.dst = cu_dev_alloc(0, c.bytes);
  unsigned char *h = cu_pinned_alloc(c.bytes);
  cua_backend_op o = cu_new_op(CUA_OP_FUNC);
  o.func = cu_stream_func;
  o.func_ctx = &c;
  cu_launch(&t, &o);
  cu_op_memcpy(&t, CUA_OP_MEMCPY_D2H, h, c.dst, c.bytes);
  cu_sync_stream(&t);
  cu_expect_bytes(h, c.bytes, 0x11, "FUNC memset");

  c.fail = 1;
  cua_backend_err err = {""};
  int rc = cu_try_launch(&t, &o, &err);
  ck_assert_int_eq(rc, CUA_ERR_OP_FAILED);
  ck_assert_str_eq(err.msg, "the test's function failed");
  D->host_free(st, h);
  D->mem_free(st, 0, NULL, c.dst);
  cu_close_backend();
}
END_TEST

/* A context of the program's own, made current on the backend's device,
 * stays current through the backend's launches, marks and waits, and the
 * ops still run: the backend's check of the current device takes its fast
 * path only for the device's primary context and otherwise asks
 * cudaGetDevice(), which does not switch a context of the same device. (A
 * first version switched any other context to the primary one.) The driver
 * calls come from libcuda itself, the old entry points of CUDA 12's ABI. */
typedef int (*cu_ctx_create_fn)(void **ctx, unsigned flags, int dev);
typedef int (*cu_ctx_fn)(void **ctx);
typedef int (*cu_ctx_destroy_fn)(void *ctx);
typedef int (*cu_device_get_fn)(int *dev, int ordinal);

START_TEST(test_a_programs_own_context_stays_current) {
  cu_open_backend(NULL);
  tstream t = cu_new_stream(0);
  void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(cu != NULL, "libcuda.so.1: %s", dlerror());
  cu_ctx_create_fn create = (cu_ctx_create_fn)dlsym(cu, "cuCtxCreate_v2");
  cu_ctx_fn get = (cu_ctx_fn)dlsym(cu, "cuCtxGetCurrent");
  cu_ctx_fn pop = (cu_ctx_fn)dlsym(cu, "cuCtxPopCurrent_v2");
  cu_ctx_destroy_fn destroy = (cu_ctx_destroy_fn)dlsym(cu, "cuCtxDestroy_v2");
  cu_device_get_fn device_get = (cu_device_get_fn)dlsym(cu, "cuDeviceGet");
  ck_assert(create && get && pop && destroy && device_get);
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(D->device_info(st, 0, &info), 0);
  /* The primary context, current after the backend's own calls. */
  cu_op_spin(&t, 1000, 1, NULL);
  cu_sync_stream(&t);
  void *primary = NULL, *mine = NULL, *cur = NULL;
  ck_assert_int_eq(get(&primary), 0);
  int dev = -1;
  ck_assert_int_eq(device_get(&dev, info.ordinal), 0);
  ck_assert_int_eq(create(&mine, 0, dev), 0); /* and makes it current */
  ck_assert_ptr_nonnull(mine);
  ck_assert_ptr_ne(mine, primary);
  for (int k = 0; k < 3; k++)
    cu_op_spin(&t, 1000, 1, NULL);
  cu_sync_stream(&t);
  ck_assert_int_eq(get(&cur), 0);
  ck_assert_msg(cur == mine,
                "the program's context %p was replaced by %p (primary %p)",
                mine, cur, primary);
  ck_assert_int_eq(pop(&cur), 0);
  ck_assert_ptr_eq(cur, mine);
  ck_assert_int_eq(destroy(mine), 0);
  dlclose(cu);
  cu_close_backend();
}
END_TEST

START_TEST(test_device_fault_is_reported_as_lost) {
  const char *mode = cu_modes[_i];
  cu_open_backend(mode);
  size_t len = 0;
  char *ptx = cu_read_file(built(PTX_PATH), &len);
  cua_backend_module *m = NULL;
  cua_backend_err err = {""};
  ck_assert_int_eq(D->module_load(st, ptx, len, &m, &err), 0);
  free(ptx);
  void *k = NULL;
  ck_assert_int_eq(D->module_function(st, m, "fault", &k, &err), 0);

  tstream t = cu_new_stream(0);
  /* A second, idle-then-busy stream must not hang either. */
  tstream u = cu_new_stream(0);
  float *bad = (float *)(uintptr_t)0x10;
  void *params[] = {&bad};
  cua_backend_op o = cu_new_op(CUA_OP_KERNEL);
  o.kernel = k;
  o.grid[0] = o.grid[1] = o.grid[2] = 1;
  o.block[0] = o.block[1] = o.block[2] = 1;
  o.kernel_params = params;
  cu_launch(&t, &o);
  uint64_t t0 = cu_now_ns();
  int rc = cu_try_sync(&t, 30, &err);
  double ms = (cu_now_ns() - t0) / 1e6;
  printf("check_cuda: [%s] fault reported after %.2f ms: %s: %s\n", mode, ms,
         cu_errname(rc), err.msg);
  ck_assert_msg(rc == CUA_ERR_DEVICE_LOST, "[%s] progress returned %s: %s",
                mode, cu_errname(rc), err.msg);
  ck_assert_msg(strstr(err.msg, "cudaErrorIllegalAddress") != NULL &&
                    strstr(err.msg, "sticky error") != NULL,
                "[%s] message: %s", mode, err.msg);
  /* Everything after is refused with the same reason, at once. */
  float *x = NULL;
  rc = D->mem_alloc(st, 0, NULL, 4096, (void **)&x, &err);
  ck_assert_int_eq(rc, CUA_ERR_DEVICE_LOST);
  cua_backend_op f = cu_new_op(CUA_OP_SPIN);
  f.spin.ns = 1000;
  rc = cu_try_launch(&u, &f, &err);
  ck_assert_int_eq(rc, CUA_ERR_DEVICE_LOST);
  ck_assert_msg(strstr(err.msg, "recreate the runtime") != NULL, "message: %s",
                err.msg);
  /* wait() does not spin on a stream already reported lost. */
  t0 = cu_now_ns();
  ck_assert_int_eq(D->wait(st, 20000000), 0);
  ck_assert_uint_lt(cu_now_ns() - t0, 1000000000ull);
  D->module_unload(st, m);
  cu_close_backend(); /* must not hang on the faulted context */
}
END_TEST

START_TEST(test_destroy_with_work_in_flight) {
  const char *mode = cu_modes[_i];
  cu_open_backend(mode);
  tstream t = cu_new_stream(0);
  uint64_t d = 0;
  float *x = cu_dev_alloc(0, 1 << 20);
  cu_op_spin(&t, 20000000, 2, &d);
  cu_op_fill(&t, x, 1 << 18, 1.0f);
  ck_assert_int_eq(D->mark(st, t.s, t.seq), 0);
  D->mem_free(st, 0, t.s, x);
  uint64_t t0 = cu_now_ns();
  cu_close_backend();
  printf("check_cuda: [%s] destroy with a 20 ms kernel in flight took %.2f "
         "ms\n",
         mode, (cu_now_ns() - t0) / 1e6);
}
END_TEST

/* ------------------------------------------------------------------- main */

static Suite *cuda_suite(void) {
  Suite *s = suite_create("cuda");
  TCase *tc;

  tc = tcase_create("descriptor");
  tcase_add_test(tc, test_descriptor_schema);
  tcase_add_test(tc, test_large_buffer_checks_are_cheap);
  suite_add_tcase(s, tc);

  tc = tcase_create("devices");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_device_info_describes_each_gpu);
  tcase_add_test(tc, test_bad_ordinal_is_refused);
  suite_add_tcase(s, tc);

  tc = tcase_create("ops");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fill_copy_axpy_memset_results);
  tcase_add_test(tc, test_memcpy_h2d_d2h_d2d);
  tcase_add_test(tc, test_spin_lasts_at_least_its_duration);
  tcase_add_test(tc, test_func_runs_on_the_stream);
  tcase_add_test(tc, test_a_programs_own_context_stays_current);
  suite_add_tcase(s, tc);

  tc = tcase_create("completion");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_marks_and_progress_in_each_mode, 0, 3);
  tcase_add_loop_test(tc, test_wait_returns_promptly_after_a_mark, 0, 3);
  tcase_add_loop_test(tc, test_wait_times_out_and_wakes, 0, 3);
  tcase_add_loop_test(tc, test_waited_wakes_a_sleeping_wait, 0, 3);
  tcase_add_loop_test(tc, test_durations_are_reported, 0, 3);
  tcase_add_loop_test(tc, test_destroy_with_work_in_flight, 0, 3);
  suite_add_tcase(s, tc);

  tc = tcase_create("ordering");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_event_record_query_wait);
  tcase_add_test(tc, test_cross_stream_event_orders_real_kernels);
  tcase_add_test(tc, test_cross_stream_without_event_control);
  tcase_add_loop_test(tc, test_cross_stream_event_many_rounds, 0, 3);
  suite_add_tcase(s, tc);

  tc = tcase_create("multi-gpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_peer_copy_between_two_gpus);
  suite_add_tcase(s, tc);

  tc = tcase_create("modules");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_ptx_module_kernel_runs);
  suite_add_tcase(s, tc);

  tc = tcase_create("errors");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_out_of_memory_is_reported);
  tcase_add_test(tc, test_launch_failure_is_reported_and_recoverable);
  tcase_add_loop_test(tc, test_device_fault_is_reported_as_lost, 0, 3);
  suite_add_tcase(s, tc);
  return s;
}

/*
 * Asks a child process whether the backend opens here, so that this
 * process never initializes CUDA (its forked test children could not use
 * it). Returns create()'s code, with its message in @p why; -1000 if the
 * child died.
 */
static int cu_probe_in_child(char *why, size_t len) {
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(why, len, "pipe: %s", strerror(errno));
    return -1000;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, len, "fork: %s", strerror(errno));
    return -1000;
  }
  if (pid == 0) {
    close(fds[0]);
    cua_param_value v[16];
    cua_backend_err err = {""};
    void *state = NULL;
    int rc = CUA_ERR_INVAL;
    if (D->nparams <= 16 && cu_make_params(v, NULL, -1) == 0)
      rc = D->create(&cu_host_table, v, NULL, 0, &state, &err);
    if (rc == 0)
      D->destroy(state);
    ssize_t w1 = write(fds[1], &rc, sizeof rc);
    ssize_t w2 = write(fds[1], err.msg, sizeof err.msg);
    _exit(w1 == (ssize_t)sizeof rc && w2 == (ssize_t)sizeof err.msg ? 0 : 1);
  }
  close(fds[1]);
  int rc = -1000, status = 0;
  char msg[sizeof(((cua_backend_err *)0)->msg)] = "";
  ssize_t r1 = read(fds[0], &rc, sizeof rc);
  ssize_t r2 = read(fds[0], msg, sizeof msg);
  close(fds[0]);
  waitpid(pid, &status, 0);
  if (r1 != (ssize_t)sizeof rc || r2 <= 0) {
    snprintf(why, len, "the probe process died (status 0x%x)", status);
    return -1000;
  }
  msg[sizeof msg - 1] = '\0';
  snprintf(why, len, "%s", msg);
  return rc;
}

int main(void) {
  const char *path = built(MODULE_PATH);
  char module[4096];
  snprintf(module, sizeof module, "%s", path);
  if (access(module, F_OK) != 0) {
    printf("check_cuda: CUDA backend not built (configure found no CUDA)\n");
    return 77;
  }
  dl = dlopen(module, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    /* Built but not loadable (an undefined symbol...): a real failure. */
    printf("check_cuda: cannot load %s: %s\n", module, dlerror());
    return EXIT_FAILURE;
  }
  D = (const cua_backend_descriptor *)dlsym(dl, CUA_BACKEND_ENTRY_SYMBOL);
  if (D == NULL || D->abi_major != CUA_BACKEND_ABI_MAJOR) {
    printf("check_cuda: %s has no usable %s\n", module,
           CUA_BACKEND_ENTRY_SYMBOL);
    return EXIT_FAILURE;
  }
  char why[600];
  int rc = cu_probe_in_child(why, sizeof why);
  if (rc == CUA_ERR_NO_DEVICE) {
    printf("check_cuda: skipped: %s\n", why);
    return 77;
  }
  if (rc != 0) {
    printf("check_cuda: the CUDA backend failed to open: %s (%d): %s\n",
           cu_errname(rc), rc, why);
    return EXIT_FAILURE;
  }
  return run_suite(cuda_suite());
}
