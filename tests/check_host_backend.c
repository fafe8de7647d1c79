/*
 * tests/check_host_backend.c: the host backend, driven directly through its
 * descriptor (dlopen + dlsym), with a host table filled in here, so that it
 * is tested apart from the core.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_getname_np() */
#endif

#include "helpers.h"

#include <cuasync/backend.h>
#include <cuasync/errors.h>

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define MS 1000000ull

/* Spins sleep under valgrind (plugins/host/host.c, spin_for()). */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#endif
#endif
#ifndef UNDER_VALGRIND
#define UNDER_VALGRIND() 0
#endif

/* ------------------------------------------------------------- fixture */

static void *module;
static const cua_backend_descriptor *B;

static void test_log(void *core, cua_log_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "host backend [%d]: ", (int)level);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t test_now(void *core) {
  return now_ns();
}

static const cua_backend_host host_table = {
    .abi_major = CUA_BACKEND_ABI_MAJOR,
    .abi_minor = CUA_BACKEND_ABI_MINOR,
    .size = sizeof(cua_backend_host),
    .core = NULL,
    .log = test_log,
    .now_ns = test_now,
};

/* A host table whose allocator fails while fail_alloc is set, for the
 * backend's out-of-memory paths (ABI 1.2: it allocates through the core). */
static atomic_int fail_alloc;

static void *test_alloc(void *core, size_t bytes, size_t align) {
  (void)core;
  if (atomic_load(&fail_alloc))
    return NULL;
  return align ? aligned_alloc(align, (bytes + align - 1) / align * align)
               : malloc(bytes);
}

static void test_free(void *core, void *ptr) {
  (void)core;
  free(ptr);
}

/* The table the next backend is created with. */
static const cua_backend_host *table = &host_table;

/* Makes the next backend allocate through test_alloc(). */
static void use_failing_table(void) {
  static cua_backend_host failing;
  failing = host_table;
  failing.alloc = test_alloc;
  failing.free = test_free;
  table = &failing;
}

static void load_module(void) {
  const char *path = built("plugins/.libs/host.so");
  module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(module != NULL, "dlopen(%s): %s", path, dlerror());
  B = dlsym(module, CUA_BACKEND_ENTRY_SYMBOL);
  ck_assert_msg(B != NULL, "dlsym: %s", dlerror());
}

static void unload_module(void) {
  /* Not dlclose()d: valgrind then still names the module's frames. */
  B = NULL;
}

/* The parameter values the core would pass, in schema order. */
static void *open_backend_ex(int devices, int memory_mb, const int *ordinals,
                             int n, int expect, const char *needle) {
  static char dtext[32], mtext[32];
  snprintf(dtext, sizeof dtext, "%d", devices);
  snprintf(mtext, sizeof mtext, "%d", memory_mb);
  cua_param_value params[2];
  memset(params, 0, sizeof params);
  params[0].present = 1;
  params[0].i = devices;
  params[0].d = devices;
  params[0].s = dtext;
  params[1].present = 1;
  params[1].i = memory_mb;
  params[1].d = memory_mb;
  params[1].s = mtext;
  void *state = NULL;
  cua_backend_err err;
  err.msg[0] = '\0';
  int rc = B->create(table, params, ordinals, n, &state, &err);
  ck_assert_msg(rc == expect, "create returned %d, expected %d: %s", rc, expect,
                err.msg);
  if (needle != NULL)
    ck_assert_msg(strstr(err.msg, needle) != NULL, "message '%s' lacks '%s'",
                  err.msg, needle);
  return state;
}

static void *open_backend(int devices, int memory_mb) {
  void *st = open_backend_ex(devices, memory_mb, NULL, 0, CUA_OK, NULL);
  ck_assert_ptr_nonnull(st);
  return st;
}

static cua_backend_stream *new_stream(void *st, int device) {
  cua_backend_stream *s = NULL;
  cua_backend_err err;
  int rc = B->stream_create(st, device, &s, &err);
  ck_assert_msg(rc == CUA_OK, "stream_create: %s", err.msg);
  return s;
}

static cua_backend_event *new_event(void *st, int device) {
  cua_backend_event *e = NULL;
  cua_backend_err err;
  int rc = B->event_create(st, device, &e, &err);
  ck_assert_msg(rc == CUA_OK, "event_create: %s", err.msg);
  return e;
}

static uint64_t progress_of(void *st, cua_backend_stream *s) {
  uint64_t v = 0;
  cua_backend_err err;
  ck_assert_int_eq(B->progress(st, s, &v, &err), CUA_OK);
  return v;
}

/* Enqueues a mark and waits, as the completion thread would, until the
 * stream reaches it. Fails after 20 s. */
static void sync_stream(void *st, cua_backend_stream *s, uint64_t value) {
  ck_assert_int_eq(B->mark(st, s, value), CUA_OK);
  uint64_t deadline = now_ns() + 20000 * MS;
  while (progress_of(st, s) < value) {
    ck_assert_msg(now_ns() < deadline, "stream never reached mark %llu",
                  (unsigned long long)value);
    B->wait(st, 100 * MS);
  }
}

static cua_backend_op make_op(cua_op_kind kind, uint64_t seq) {
  cua_backend_op op;
  memset(&op, 0, sizeof op);
  op.size = sizeof op;
  op.kind = kind;
  op.seq = seq;
  return op;
}

static void launch_ok(void *st, cua_backend_stream *s,
                      const cua_backend_op *op) {
  cua_backend_err err;
  err.msg[0] = '\0';
  int rc = B->launch(st, s, op, &err);
  ck_assert_msg(rc == CUA_OK, "launch of kind %d: %d %s", (int)op->kind, rc,
                err.msg);
}

static void launch_func(void *st, cua_backend_stream *s, uint64_t seq,
                        int (*fn)(void *, void *, cua_backend_err *),
                        void *ctx) {
  cua_backend_op op = make_op(CUA_OP_FUNC, seq);
  op.func = fn;
  op.func_ctx = ctx;
  launch_ok(st, s, &op);
}

static void launch_spin(void *st, cua_backend_stream *s, uint64_t seq,
                        uint64_t ns) {
  cua_backend_op op = make_op(CUA_OP_SPIN, seq);
  op.spin.ns = ns;
  op.spin.blocks = 1;
  launch_ok(st, s, &op);
}

static void *dev_alloc(void *st, int device, size_t bytes) {
  void *p = NULL;
  cua_backend_err err;
  int rc = B->mem_alloc(st, device, NULL, bytes, &p, &err);
  ck_assert_msg(rc == CUA_OK, "mem_alloc(%zu): %s", bytes, err.msg);
  return p;
}

/* ---------------------------------------------------- stream functions */

/* An append-only log of integers written by stream functions. */
typedef struct seq_log {
  int n;
  int v[20000];
} seq_log;

typedef struct log_entry {
  seq_log *log;
  int value;
} log_entry;

static int fn_append(void *ctx, void *native, cua_backend_err *err) {
  log_entry *e = ctx;
  e->log->v[e->log->n++] = e->value;
  return 0;
}

static int fn_set_flag(void *ctx, void *native, cua_backend_err *err) {
  atomic_store((atomic_int *)ctx, 1);
  return 0;
}

typedef struct observer {
  atomic_int *flag;
  int seen;
  uint64_t at;
} observer;

static int fn_observe(void *ctx, void *native, cua_backend_err *err) {
  observer *o = ctx;
  o->seen = atomic_load(o->flag);
  o->at = now_ns();
  return 0;
}

static int fn_count(void *ctx, void *native, cua_backend_err *err) {
  (*(int *)ctx)++;
  return 0;
}

/* Holds its stream until *ctx is set. */
static int fn_wait_flag(void *ctx, void *native, cua_backend_err *err) {
  while (!atomic_load((atomic_int *)ctx))
    sched_yield();
  return 0;
}

/* ----------------------------------------------------------- the tests */

START_TEST(descriptor_has_abi_name_flags_and_schema) {
  ck_assert_uint_eq(B->abi_major, CUA_BACKEND_ABI_MAJOR);
  ck_assert_uint_eq(B->abi_minor, CUA_BACKEND_ABI_MINOR);
  ck_assert_uint_eq(B->size, sizeof(cua_backend_descriptor));
  ck_assert_str_eq(B->name, "host");
  ck_assert_ptr_nonnull(B->version);
  ck_assert_ptr_nonnull(B->description);
  ck_assert(B->flags & CUA_BACKEND_HOST_EXEC);

  ck_assert_uint_eq(B->nparams, 2);
  ck_assert_str_eq(B->params[0].name, "devices");
  ck_assert_int_eq(B->params[0].type, CUA_PARAM_INT);
  ck_assert_str_eq(B->params[0].default_value, "1");
  ck_assert(B->params[0].min == 1 && B->params[0].max == 64);
  ck_assert_ptr_nonnull(strstr(B->params[0].help, "virtual host devices"));
  ck_assert_str_eq(B->params[1].name, "memory_mb");
  ck_assert_int_eq(B->params[1].type, CUA_PARAM_INT);
  ck_assert_str_eq(B->params[1].default_value, "0");
  ck_assert(B->params[1].min == 0 && B->params[1].max == 1048576);
  ck_assert_ptr_nonnull(B->params[1].help);

  /* Every required operation is there; modules are not supported. */
  ck_assert(B->create && B->destroy && B->device_count && B->device_info &&
            B->can_access && B->stream_create && B->stream_destroy &&
            B->stream_native && B->event_create && B->event_destroy &&
            B->event_record && B->stream_wait_event && B->event_query &&
            B->mem_alloc && B->mem_free && B->launch && B->mark &&
            B->progress && B->poll_error && B->wait && B->wake &&
            B->host_alloc && B->host_free);
  ck_assert_ptr_null(B->module_load);
  ck_assert_ptr_null(B->module_unload);
  ck_assert_ptr_null(B->module_function);
}
END_TEST

START_TEST(devices_param_sets_device_count_and_info) {
  void *st = open_backend(3, 0);
  ck_assert_int_eq(B->device_count(st), 3);
  for (int d = 0; d < 3; d++) {
    cua_device_info info;
    memset(&info, 0x5a, sizeof info);
    info.size = sizeof info;
    ck_assert_int_eq(B->device_info(st, d, &info), CUA_OK);
    char want[64];
    snprintf(want, sizeof want, "host device %d", d);
    ck_assert_str_eq(info.name, want);
    ck_assert_int_eq(info.ordinal, d);
    ck_assert_uint_eq(info.total_memory, 0);
    ck_assert_int_eq(info.compute_major, 0);
    ck_assert_int_gt(info.multiprocessors, 0);
    ck_assert_uint_eq(info.size, sizeof info);
  }
  for (int d = 0; d < 3; d++)
    for (int p = 0; p < 3; p++)
      ck_assert_int_eq(B->can_access(st, d, p), 1);
  B->destroy(st);

  /* With the default parameters (NULL) there is one device. */
  void *def = NULL;
  cua_backend_err err;
  ck_assert_int_eq(B->create(&host_table, NULL, NULL, 0, &def, &err), CUA_OK);
  ck_assert_int_eq(B->device_count(def), 1);
  B->destroy(def);

  /* memory_mb shows as the devices' total memory. */
  st = open_backend(1, 3);
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(B->device_info(st, 0, &info), CUA_OK);
  ck_assert_uint_eq(info.total_memory, 3ull << 20);
  B->destroy(st);
}
END_TEST

START_TEST(ordinals_select_virtual_devices) {
  int ord[2] = {2, 0};
  void *st = open_backend_ex(3, 0, ord, 2, CUA_OK, NULL);
  ck_assert_int_eq(B->device_count(st), 2);
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(B->device_info(st, 0, &info), CUA_OK);
  ck_assert_int_eq(info.ordinal, 2);
  ck_assert_str_eq(info.name, "host device 2");
  ck_assert_int_eq(B->device_info(st, 1, &info), CUA_OK);
  ck_assert_int_eq(info.ordinal, 0);
  ck_assert_str_eq(info.name, "host device 0");
  B->destroy(st);
}
END_TEST

START_TEST(bad_ordinal_and_bad_device_are_refused) {
  int ord[2] = {0, 2};
  void *st = open_backend_ex(2, 0, ord, 2, CUA_ERR_BAD_DEVICE, "device 2");
  ck_assert_ptr_null(st);
  int neg[1] = {-1};
  open_backend_ex(2, 0, neg, 1, CUA_ERR_BAD_DEVICE, "device -1");
  int dup[2] = {1, 1};
  open_backend_ex(2, 0, dup, 2, CUA_ERR_BAD_DEVICE, "twice");

  st = open_backend(2, 0);
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(B->device_info(st, 2, &info), CUA_ERR_BAD_DEVICE);
  ck_assert_int_eq(B->device_info(st, -1, &info), CUA_ERR_BAD_DEVICE);
  ck_assert_int_eq(B->can_access(st, 0, 2), 0);
  cua_backend_stream *s = NULL;
  cua_backend_err err;
  ck_assert_int_eq(B->stream_create(st, 2, &s, &err), CUA_ERR_BAD_DEVICE);
  ck_assert_ptr_nonnull(strstr(err.msg, "device 2"));
  cua_backend_event *e = NULL;
  ck_assert_int_eq(B->event_create(st, 5, &e, &err), CUA_ERR_BAD_DEVICE);
  void *p = NULL;
  ck_assert_int_eq(B->mem_alloc(st, 3, NULL, 64, &p, &err), CUA_ERR_BAD_DEVICE);
  B->destroy(st);
}
END_TEST

START_TEST(ops_on_a_stream_run_in_order) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  static seq_log log;
  static log_entry entries[2000];
  log.n = 0;
  for (int i = 0; i < 2000; i++) {
    entries[i].log = &log;
    entries[i].value = i;
    launch_func(st, s, (uint64_t)i + 1, fn_append, &entries[i]);
    if (i % 97 == 0)
      launch_spin(st, s, 0, 10000); /* lets the queue build up */
  }
  sync_stream(st, s, 1);
  ck_assert_int_eq(log.n, 2000);
  for (int i = 0; i < 2000; i++)
    ck_assert_int_eq(log.v[i], i);
  B->destroy(st);
}
END_TEST

START_TEST(builtin_ops_have_their_effects) {
  void *st = open_backend(2, 0);
  cua_backend_stream *s = new_stream(st, 0);
  enum { N = 1000 };
  float *x = dev_alloc(st, 0, N * sizeof(float));
  float *y = dev_alloc(st, 0, N * sizeof(float));
  float *z = dev_alloc(st, 1, N * sizeof(float));
  float host[N], back[N];
  for (int i = 0; i < N; i++)
    host[i] = (float)i;

  cua_backend_op op = make_op(CUA_OP_FILL, 1);
  op.dst = y;
  op.bytes = N * sizeof(float);
  op.value = 2.0f;
  launch_ok(st, s, &op);

  op = make_op(CUA_OP_MEMCPY_H2D, 2);
  op.dst = x;
  op.src = host;
  op.bytes = sizeof host;
  launch_ok(st, s, &op);

  op = make_op(CUA_OP_AXPY, 3); /* y = 3 x + y = 3 i + 2 */
  op.dst = y;
  op.src = x;
  op.bytes = N * sizeof(float);
  op.value = 3.0f;
  launch_ok(st, s, &op);

  op = make_op(CUA_OP_MEMCPY_D2D, 4); /* across devices */
  op.dst = z;
  op.src = y;
  op.bytes = N * sizeof(float);
  op.dst_device = 1;
  op.src_device = 0;
  launch_ok(st, s, &op);

  op = make_op(CUA_OP_COPY, 5); /* x = y, element copy */
  op.dst = x;
  op.src = y;
  op.bytes = N * sizeof(float);
  launch_ok(st, s, &op);

  op = make_op(CUA_OP_MEMSET, 6); /* the first 16 bytes of y: zero */
  op.dst = y;
  op.bytes = 16;
  op.byte_value = 0;
  launch_ok(st, s, &op);

  op = make_op(CUA_OP_MEMCPY_D2H, 7);
  op.dst = back;
  op.src = z;
  op.bytes = sizeof back;
  launch_ok(st, s, &op);

  sync_stream(st, s, 7);
  for (int i = 0; i < N; i++) {
    float want = 3.0f * (float)i + 2.0f;
    ck_assert_float_eq(back[i], want);
    ck_assert_float_eq(x[i], want);
    ck_assert_float_eq(z[i], want);
    ck_assert_float_eq(y[i], i < 4 ? 0.0f : want);
  }

  /* MEMSET with a non-zero byte, on a range's middle only. */
  op = make_op(CUA_OP_MEMSET, 8);
  op.dst = (char *)z + 4;
  op.bytes = 8;
  op.byte_value = 0x7f;
  launch_ok(st, s, &op);
  sync_stream(st, s, 8);
  const unsigned char *zb = (const unsigned char *)z;
  for (int i = 4; i < 12; i++)
    ck_assert_uint_eq(zb[i], 0x7f);
  ck_assert_float_eq(z[0], 2.0f);
  ck_assert_float_eq(z[3], 11.0f);

  B->mem_free(st, 0, NULL, x);
  B->mem_free(st, 0, NULL, y);
  B->mem_free(st, 1, NULL, z);
  B->destroy(st);
}
END_TEST

START_TEST(fresh_device_memory_is_garbage_filled) {
  void *st = open_backend(1, 0);
  unsigned char *p = dev_alloc(st, 0, 100);
  for (int i = 0; i < 100; i++)
    ck_assert_uint_eq(p[i], 0xA5);
  ck_assert_uint_eq((uintptr_t)p % 64, 0);
  B->mem_free(st, 0, NULL, p);
  B->mem_free(st, 0, NULL, NULL); /* does nothing */

  void *h = NULL;
  cua_backend_err err;
  ck_assert_int_eq(B->host_alloc(st, 1000, &h, &err), CUA_OK);
  ck_assert_uint_eq((uintptr_t)h % 64, 0);
  memset(h, 1, 1000);
  B->host_free(st, h);
  B->destroy(st);
}
END_TEST

START_TEST(spin_takes_at_least_its_duration) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  uint64_t dur = UINT64_MAX;
  cua_backend_op op = make_op(CUA_OP_SPIN, 1);
  op.spin.ns = 30 * MS;
  op.spin.blocks = 1;
  op.duration_ns = &dur;
  uint64_t t0 = now_ns();
  launch_ok(st, s, &op);
  /* The launch is asynchronous: it returns long before the spin ends. */
  ck_assert_uint_lt(now_ns() - t0, 20 * MS);
  sync_stream(st, s, 1);
  ck_assert_uint_ge(now_ns() - t0, 30 * MS);
  ck_assert_uint_ge(dur, 30 * MS);
  ck_assert_uint_lt(dur, 10000 * MS);
  B->destroy(st);
}
END_TEST

static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A spin computes (Task Bench's compute-bound kernel) instead of sleeping:
 * the process spends CPU time on it (not under valgrind, where it sleeps). */
START_TEST(spin_computes_instead_of_sleeping) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  /* A sleep would use microseconds of CPU; a spin most of its 40 ms, but
   * a loaded machine takes some away (9 ms of 40 once, with two other
   * builds on two cores): the best of three spins, against 4 ms. */
  uint64_t best = 0;
  for (uint64_t k = 1; k <= 3 && best < 15 * MS; k++) {
    uint64_t c0 = cpu_ns(), t0 = now_ns();
    launch_spin(st, s, k, 40 * MS);
    sync_stream(st, s, k);
    uint64_t cpu = cpu_ns() - c0, wall = now_ns() - t0;
    ck_assert_uint_ge(wall, 40 * MS);
    if (cpu > best)
      best = cpu;
  }
  ck_assert_msg(best >= 4 * MS || UNDER_VALGRIND(),
                "a 40 ms spin used %llu ns of CPU", (unsigned long long)best);
  B->destroy(st);
}
END_TEST

/* spin(UINT64_MAX) used to wrap its deadline and end at once. It has no
 * end now, and spins cannot be cancelled: the test ends its (forked)
 * process itself once it has seen the spin still running. */
START_TEST(a_huge_spin_does_not_end_at_once) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  launch_spin(st, s, 1, UINT64_MAX);
  ck_assert_int_eq(B->mark(st, s, 1), CUA_OK);
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
  ck_assert_uint_eq(progress_of(st, s), 0);
  /* UINT64_MAX - now used to wrap too. */
  cua_backend_stream *s2 = new_stream(st, 0);
  launch_spin(st, s2, 1, UINT64_MAX - now_ns() + 1);
  ck_assert_int_eq(B->mark(st, s2, 1), CUA_OK);
  nanosleep(&ts, NULL);
  ck_assert_uint_eq(progress_of(st, s2), 0);
  _exit(0); /* the suite forks every test (run_suite(): CK_FORK) */
}
END_TEST

START_TEST(cross_stream_event_wait_blocks) {
  void *st = open_backend(2, 0);
  cua_backend_stream *a = new_stream(st, 0);
  cua_backend_stream *b = new_stream(st, 1);
  cua_backend_event *e = new_event(st, 0);
  atomic_int flag = 0;
  observer obs = {&flag, -1, 0};

  uint64_t t0 = now_ns();
  launch_spin(st, a, 1, 50 * MS);
  launch_func(st, a, 2, fn_set_flag, &flag);
  ck_assert_int_eq(B->event_record(st, e, a), CUA_OK);
  ck_assert_int_eq(B->stream_wait_event(st, b, e), CUA_OK);
  launch_func(st, b, 1, fn_observe, &obs);

  sync_stream(st, b, 1);
  ck_assert_int_eq(obs.seen, 1);
  ck_assert_uint_ge(obs.at - t0, 50 * MS);
  sync_stream(st, a, 2);
  B->event_destroy(st, e);
  B->destroy(st);
}
END_TEST

START_TEST(wait_on_a_never_recorded_event_is_a_no_op) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  cua_backend_event *e = new_event(st, 0);
  int count = 0;
  ck_assert_int_eq(B->stream_wait_event(st, s, e), CUA_OK);
  launch_func(st, s, 1, fn_count, &count);
  sync_stream(st, s, 1);
  ck_assert_int_eq(count, 1);
  B->event_destroy(st, e);
  B->destroy(st);
}
END_TEST

START_TEST(event_query_before_and_after_completion) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  cua_backend_event *e = new_event(st, 0);
  /* Never recorded: nothing to wait for, as in CUDA. */
  ck_assert_int_eq(B->event_query(st, e), CUA_OK);
  launch_spin(st, s, 1, 50 * MS);
  ck_assert_int_eq(B->event_record(st, e, s), CUA_OK);
  ck_assert_int_eq(B->event_query(st, e), CUA_ERR_AGAIN);
  sync_stream(st, s, 1);
  ck_assert_int_eq(B->event_query(st, e), CUA_OK);
  B->event_destroy(st, e);
  B->destroy(st);
}
END_TEST

START_TEST(event_can_be_recorded_again) {
  void *st = open_backend(1, 0);
  cua_backend_stream *a = new_stream(st, 0);
  cua_backend_stream *b = new_stream(st, 0);
  cua_backend_stream *c = new_stream(st, 0);
  cua_backend_event *e = new_event(st, 0);

  ck_assert_int_eq(B->event_record(st, e, a), CUA_OK);
  sync_stream(st, a, 1);
  ck_assert_int_eq(B->event_query(st, e), CUA_OK);

  /* Recorded again, on another stream: a wait now means the second
   * recording, and the query says not ready until it completes. */
  atomic_int flag = 0;
  observer obs = {&flag, -1, 0};
  launch_spin(st, b, 1, 50 * MS);
  launch_func(st, b, 2, fn_set_flag, &flag);
  ck_assert_int_eq(B->event_record(st, e, b), CUA_OK);
  ck_assert_int_eq(B->event_query(st, e), CUA_ERR_AGAIN);
  ck_assert_int_eq(B->stream_wait_event(st, c, e), CUA_OK);
  launch_func(st, c, 1, fn_observe, &obs);
  sync_stream(st, c, 1);
  ck_assert_int_eq(obs.seen, 1);
  ck_assert_int_eq(B->event_query(st, e), CUA_OK);

  /* Pooling: an event destroyed while its recording is queued stays valid
   * for the stream that still has to reach it. */
  launch_spin(st, a, 2, 20 * MS);
  ck_assert_int_eq(B->event_record(st, e, a), CUA_OK);
  ck_assert_int_eq(B->stream_wait_event(st, b, e), CUA_OK);
  B->event_destroy(st, e);
  sync_stream(st, b, 3);
  sync_stream(st, a, 2);
  B->destroy(st);
}
END_TEST

START_TEST(marks_set_progress) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  ck_assert_uint_eq(progress_of(st, s), 0);
  int count = 0;
  launch_spin(st, s, 1, 30 * MS);
  ck_assert_int_eq(B->mark(st, s, 1), CUA_OK);
  launch_func(st, s, 2, fn_count, &count);
  ck_assert_int_eq(B->mark(st, s, 2), CUA_OK);
  /* Marks are asynchronous: the spin holds them back. */
  ck_assert_uint_eq(progress_of(st, s), 0);
  sync_stream(st, s, 3);
  ck_assert_uint_eq(progress_of(st, s), 3);
  ck_assert_int_eq(count, 1);

  /* stream_native is what stream functions receive. */
  ck_assert_ptr_nonnull(B->stream_native(st, s));
  B->destroy(st);
}
END_TEST

typedef struct native_probe {
  void *native;
  char name[32];
} native_probe;

static int fn_probe(void *ctx, void *native, cua_backend_err *err) {
  native_probe *p = ctx;
  p->native = native;
  pthread_getname_np(pthread_self(), p->name, sizeof p->name);
  return 0;
}

START_TEST(functions_get_the_native_stream_on_a_named_worker) {
  int ord[2] = {1, 0};
  void *st = open_backend_ex(2, 0, ord, 2, CUA_OK, NULL);
  cua_backend_stream *s0 = new_stream(st, 0);
  cua_backend_stream *s1 = new_stream(st, 0);
  native_probe p0, p1;
  memset(&p0, 0, sizeof p0);
  memset(&p1, 0, sizeof p1);
  launch_func(st, s0, 1, fn_probe, &p0);
  launch_func(st, s1, 1, fn_probe, &p1);
  sync_stream(st, s0, 1);
  sync_stream(st, s1, 1);
  ck_assert_ptr_eq(p0.native, B->stream_native(st, s0));
  ck_assert_ptr_eq(p1.native, B->stream_native(st, s1));
  ck_assert_str_eq(p0.name, "cua-host-1.0");
  ck_assert_str_eq(p1.name, "cua-host-1.1");
  B->destroy(st);
}
END_TEST

START_TEST(wait_returns_when_a_mark_executes) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  B->wait(st, 0); /* forgets what happened before */
  launch_spin(st, s, 1, 50 * MS);
  ck_assert_int_eq(B->mark(st, s, 1), CUA_OK);
  uint64_t t0 = now_ns();
  ck_assert_int_eq(B->wait(st, 10000 * MS), 0);
  uint64_t waited = now_ns() - t0;
  ck_assert_uint_eq(progress_of(st, s), 1);
  ck_assert_uint_ge(waited, 30 * MS);
  ck_assert_uint_lt(waited, 5000 * MS);
  B->destroy(st);
}
END_TEST

START_TEST(wait_does_not_lose_an_earlier_mark) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  B->wait(st, 0);
  sync_stream(st, s, 1); /* its own waits may have consumed the signal */
  ck_assert_int_eq(B->mark(st, s, 2), CUA_OK);
  while (progress_of(st, s) < 2)
    sched_yield();
  /* The mark executed before wait() was called: it returns at once. */
  uint64_t t0 = now_ns();
  B->wait(st, 10000 * MS);
  ck_assert_uint_lt(now_ns() - t0, 5000 * MS);
  B->destroy(st);
}
END_TEST

START_TEST(wait_times_out_when_nothing_happens) {
  void *st = open_backend(1, 0);
  (void)new_stream(st, 0);
  B->wait(st, 0);
  uint64_t t0 = now_ns();
  ck_assert_int_eq(B->wait(st, 50 * MS), 0);
  uint64_t waited = now_ns() - t0;
  ck_assert_uint_ge(waited, 50 * MS);
  ck_assert_uint_lt(waited, 5000 * MS);
  B->destroy(st);
}
END_TEST

static void *wake_later(void *st) {
  struct timespec ts = {0, 50 * 1000000};
  nanosleep(&ts, NULL);
  B->wake(st);
  return NULL;
}

START_TEST(wake_interrupts_wait) {
  void *st = open_backend(1, 0);
  B->wait(st, 0);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, wake_later, st), 0);
  uint64_t t0 = now_ns();
  B->wait(st, UINT64_MAX);
  ck_assert_uint_lt(now_ns() - t0, 5000 * MS);
  pthread_join(t, NULL);
  B->destroy(st);
}
END_TEST

static int fn_fail_every_7th(void *ctx, void *native, cua_backend_err *err) {
  int *i = ctx;
  if (*i % 7 != 0)
    return 0;
  snprintf(err->msg, sizeof err->msg, "boom %d", *i);
  return CUA_ERR_DEVICE_FAULT;
}

START_TEST(function_failure_is_reported_before_the_next_mark) {
  enum { N = 700 };
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  static int idx[N + 1];
  for (int i = 1; i <= N; i++) {
    idx[i] = i;
    launch_func(st, s, (uint64_t)i, fn_fail_every_7th, &idx[i]);
    ck_assert_int_eq(B->mark(st, s, (uint64_t)i), CUA_OK);
  }
  int after = 0;
  launch_func(st, s, N + 1, fn_count, &after);
  ck_assert_int_eq(B->mark(st, s, N + 1), CUA_OK);

  /* The completion thread's view: whenever progress says seq p is reached,
   * every failure of an op <= p can already be popped. */
  int expected_next = 7;
  uint64_t deadline = now_ns() + 20000 * MS;
  for (;;) {
    uint64_t p = progress_of(st, s);
    uint64_t seq;
    int code;
    cua_backend_err err;
    while (B->poll_error(st, s, &seq, &code, &err) == 1) {
      ck_assert_uint_eq(seq, (uint64_t)expected_next);
      ck_assert_int_eq(code, CUA_ERR_DEVICE_FAULT);
      char want[32];
      snprintf(want, sizeof want, "boom %d", expected_next);
      ck_assert_str_eq(err.msg, want);
      expected_next += 7;
    }
    uint64_t reached = p > N ? N : p;
    ck_assert_msg((uint64_t)expected_next > reached,
                  "progress %llu but failure of op %d not reported",
                  (unsigned long long)p, expected_next);
    if (p == N + 1)
      break;
    ck_assert(now_ns() < deadline);
    B->wait(st, 10 * MS);
  }
  ck_assert_int_eq(expected_next, N + 7);
  /* Execution went on after every failure. */
  ck_assert_int_eq(after, 1);
  uint64_t seq;
  int code;
  cua_backend_err err;
  ck_assert_int_eq(B->poll_error(st, s, &seq, &code, &err), 0);
  B->destroy(st);
}
END_TEST

/* A stream function's failure is queued for poll_error() in a record
 * taken when it was launched: it is reported even when memory has run out
 * by the time it fails (it used to be only logged). Launching one with no
 * record to be had fails the launch, synchronously. */
START_TEST(function_failure_is_reported_out_of_memory) {
  use_failing_table();
  void *st = open_backend(1, 0);
  table = &host_table;
  cua_backend_stream *s = new_stream(st, 0);
  atomic_int go = 0;
  static int idx[8];
  launch_func(st, s, 1, fn_wait_flag, &go);
  for (int i = 0; i < 7; i++) {
    idx[i] = 7 * (i + 1);
    launch_func(st, s, (uint64_t)i + 2, fn_fail_every_7th, &idx[i]);
  }
  ck_assert_int_eq(B->mark(st, s, 8), CUA_OK);
  atomic_store(&fail_alloc, 1);
  atomic_store(&go, 1);
  uint64_t deadline = now_ns() + 20000 * MS;
  while (progress_of(st, s) < 8) {
    ck_assert(now_ns() < deadline);
    B->wait(st, 10 * MS);
  }
  for (int i = 0; i < 7; i++) {
    uint64_t seq;
    int code;
    cua_backend_err err;
    ck_assert_int_eq(B->poll_error(st, s, &seq, &code, &err), 1);
    ck_assert_uint_eq(seq, (uint64_t)i + 2);
    ck_assert_int_eq(code, CUA_ERR_DEVICE_FAULT);
  }
  /* A new stream has no record to reuse: the launch itself fails. */
  cua_backend_stream *s2 = NULL;
  cua_backend_err err;
  atomic_store(&fail_alloc, 0);
  s2 = new_stream(st, 0);
  atomic_store(&fail_alloc, 1);
  cua_backend_op op = make_op(CUA_OP_FUNC, 1);
  op.func = fn_count;
  int count = 0;
  op.func_ctx = &count;
  err.msg[0] = '\0';
  ck_assert_int_eq(B->launch(st, s2, &op, &err), CUA_ERR_NOMEM);
  ck_assert_msg(strstr(err.msg, "out of host memory") != NULL, "%s", err.msg);
  atomic_store(&fail_alloc, 0);
  /* The records are reused, and the stream goes on. */
  launch_func(st, s, 9, fn_count, &count);
  sync_stream(st, s, 9);
  ck_assert_int_eq(count, 1);
  B->destroy(st);
}
END_TEST

/* A stream-ordered free from the stream's own worker (a stream function
 * freeing memory) when its queue item cannot be allocated: it used to
 * wait for the stream to go idle, which its own worker never does. It is
 * now deferred until the items queued before it have run. */
typedef struct free_ctx {
  void *st;
  cua_backend_stream *s;
  void *ptr;
  atomic_int go, done;
} free_ctx;

static int fn_free_out_of_memory(void *ctx, void *native,
                                 cua_backend_err *err) {
  free_ctx *c = ctx;
  while (!atomic_load(&c->go))
    sched_yield();
  atomic_store(&fail_alloc, 1);
  B->mem_free(c->st, 0, c->s, c->ptr);
  atomic_store(&fail_alloc, 0);
  atomic_store(&c->done, 1);
  return 0;
}

START_TEST(own_worker_frees_out_of_memory_without_hanging) {
  use_failing_table();
  void *st = open_backend(1, 1);
  table = &host_table;
  cua_backend_stream *s = new_stream(st, 0);
  free_ctx c = {st, s, dev_alloc(st, 0, 1 << 20), 0, 0};
  float out = 0;
  /* The function, then enough items to fill the stream's first queue
   * block (32 items): the free then needs a new block. A fill and a copy
   * of the memory come after the function, before the free. */
  launch_func(st, s, 1, fn_free_out_of_memory, &c);
  cua_backend_op op = make_op(CUA_OP_FILL, 2);
  op.dst = c.ptr;
  op.bytes = 1 << 20;
  op.value = 3.0f;
  launch_ok(st, s, &op);
  op = make_op(CUA_OP_MEMCPY_D2H, 3);
  op.dst = &out;
  op.src = (float *)c.ptr + 100;
  op.bytes = sizeof out;
  launch_ok(st, s, &op);
  for (int i = 0; i < 29; i++)
    ck_assert_int_eq(B->mark(st, s, 3), CUA_OK);
  atomic_store(&c.go, 1);
  uint64_t deadline = now_ns() + 20000 * MS;
  while (!atomic_load(&c.done))
    ck_assert_msg(now_ns() < deadline, "the stream function never returned");
  sync_stream(st, s, 4);
  ck_assert_float_eq(out, 3.0f);
  /* The free happened: the device's whole megabyte is back by the time
   * the progress that passes it is seen (the worker releases a deferred
   * free before it publishes a mark after it). */
  void *p = NULL;
  cua_backend_err e;
  ck_assert_msg(B->mem_alloc(st, 0, NULL, 1 << 20, &p, &e) == CUA_OK,
                "the free had not happened when the mark after it was seen: "
                "%s",
                e.msg);
  B->mem_free(st, 0, NULL, p);
  B->destroy(st);
}
END_TEST

START_TEST(durations_are_stored_before_progress) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  enum { N = 200 };
  static uint64_t dur[N];
  for (int i = 0; i < N; i++) {
    dur[i] = UINT64_MAX;
    cua_backend_op op = make_op(CUA_OP_SPIN, (uint64_t)i + 1);
    op.spin.ns = i % 50 == 0 ? 5 * MS : 1000;
    op.duration_ns = &dur[i];
    launch_ok(st, s, &op);
    ck_assert_int_eq(B->mark(st, s, (uint64_t)i + 1), CUA_OK);
  }
  uint64_t deadline = now_ns() + 20000 * MS;
  uint64_t p;
  do {
    p = progress_of(st, s);
    for (uint64_t i = 0; i < p; i++)
      ck_assert_uint_ne(dur[i], UINT64_MAX);
    ck_assert(now_ns() < deadline);
  } while (p < N);
  for (int i = 0; i < N; i += 50)
    ck_assert_uint_ge(dur[i], 5 * MS);

  /* A core whose op struct ends before duration_ns: the field is absent. */
  uint64_t untouched = 42;
  cua_backend_op op = make_op(CUA_OP_SPIN, N + 1);
  op.size = offsetof(cua_backend_op, duration_ns);
  op.spin.ns = 1000;
  op.duration_ns = &untouched;
  launch_ok(st, s, &op);
  sync_stream(st, s, N + 1);
  ck_assert_uint_eq(untouched, 42);
  B->destroy(st);
}
END_TEST

START_TEST(memory_mb_limits_allocations_per_device) {
  void *st = open_backend(2, 1);
  void *a = dev_alloc(st, 0, 512 << 10);
  void *b = dev_alloc(st, 0, 512 << 10);
  void *p = NULL;
  cua_backend_err err;
  err.msg[0] = '\0';
  ck_assert_int_eq(B->mem_alloc(st, 0, NULL, 1, &p, &err), CUA_ERR_DEVICE_OOM);
  ck_assert_msg(strstr(err.msg, "host device 0") != NULL, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "1 bytes requested") != NULL, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "limit 1048576 bytes") != NULL, "%s", err.msg);
  /* Too large on its own, even on an empty device. */
  ck_assert_int_eq(B->mem_alloc(st, 1, NULL, (1 << 20) + 1, &p, &err),
                   CUA_ERR_DEVICE_OOM);
  ck_assert_msg(strstr(err.msg, "host device 1") != NULL, "%s", err.msg);
  ck_assert_msg(strstr(err.msg, "1048577 bytes requested") != NULL, "%s",
                err.msg);
  /* The other device has its own budget. */
  void *c = dev_alloc(st, 1, 1 << 20);
  /* Freeing gives the memory back. */
  B->mem_free(st, 0, NULL, a);
  a = dev_alloc(st, 0, 512 << 10);
  /* Left allocated: destroy() releases what the core did not free. */
  (void)b;
  (void)c;
  B->destroy(st);
}
END_TEST

START_TEST(stream_ordered_free_waits_for_the_stream) {
  void *st = open_backend(1, 1);
  cua_backend_stream *s = new_stream(st, 0);
  float *buf = dev_alloc(st, 0, 1 << 20);
  float out = 0;
  launch_spin(st, s, 1, 50 * MS);
  cua_backend_op op = make_op(CUA_OP_FILL, 2);
  op.dst = buf;
  op.bytes = 1 << 20;
  op.value = 7.0f;
  launch_ok(st, s, &op);
  op = make_op(CUA_OP_MEMCPY_D2H, 3); /* reads buf after the spin */
  op.dst = &out;
  op.src = buf + 1000;
  op.bytes = sizeof out;
  launch_ok(st, s, &op);
  B->mem_free(st, 0, s, buf);

  /* The free has not happened yet: the device is still full. */
  void *p = NULL;
  cua_backend_err err;
  ck_assert_int_eq(B->mem_alloc(st, 0, NULL, 1 << 20, &p, &err),
                   CUA_ERR_DEVICE_OOM);
  sync_stream(st, s, 3);
  ck_assert_float_eq(out, 7.0f);
  p = dev_alloc(st, 0, 1 << 20);
  B->mem_free(st, 0, s, p);
  B->destroy(st); /* drains the queued free */
}
END_TEST

START_TEST(kernel_ops_and_unknown_kinds_are_refused) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  cua_backend_err err;
  err.msg[0] = '\0';
  cua_backend_op op = make_op(CUA_OP_KERNEL, 1);
  op.grid[0] = op.block[0] = 1;
  ck_assert_int_eq(B->launch(st, s, &op, &err), CUA_ERR_NOTSUP);
  ck_assert_msg(strstr(err.msg, "KERNEL") != NULL, "%s", err.msg);

  op = make_op(CUA_OP_ZIP, 1);
  ck_assert_int_eq(B->launch(st, s, &op, &err), CUA_ERR_INVAL);
  ck_assert_msg(strstr(err.msg, "kind ZIP (14)") != NULL, "%s", err.msg);
  op = make_op(CUA_OP_FUNC, 1); /* no function */
  ck_assert_int_eq(B->launch(st, s, &op, &err), CUA_ERR_INVAL);
  op = make_op(CUA_OP_FILL, 1);
  op.bytes = 4;
  ck_assert_int_eq(B->launch(st, s, &op, &err), CUA_ERR_INVAL);

  /* Nothing was enqueued; the stream works on. */
  int count = 0;
  launch_func(st, s, 1, fn_count, &count);
  sync_stream(st, s, 1);
  ck_assert_int_eq(count, 1);
  B->destroy(st);
}
END_TEST

/* Stress: 4 streams, each fed by its own thread, 10000 ops each with a mark
 * every 10 ops and, every 100 ops, an event recorded on its stream and a
 * wait for its neighbour's, while this thread plays the completion thread. */
enum {
  STRESS_STREAMS = 4,
  STRESS_OPS = 10000,
  STRESS_EVERY = 10,
  STRESS_EVENT_EVERY = 100
};

typedef struct stress_stream {
  void *st;
  cua_backend_stream *s;
  int counter;  /* incremented by stream functions, in order */
  int disorder; /* set when a function ran out of order */
  float *buf;
  int index;                    /* row of stress_ctxs */
  cua_backend_event *ev;        /* recorded on this stream */
  cua_backend_event *neighbour; /* recorded on another, awaited here */
} stress_stream;

typedef struct stress_ctx {
  stress_stream *ss;
  int i;
} stress_ctx;

static int fn_stress(void *ctx, void *native, cua_backend_err *err) {
  stress_ctx *c = ctx;
  if (c->ss->counter != c->i)
    c->ss->disorder = 1;
  c->ss->counter++;
  return 0;
}

static stress_ctx stress_ctxs[STRESS_STREAMS][STRESS_OPS];

static void *stress_feed(void *arg) {
  stress_stream *ss = arg;
  for (int i = 0; i < STRESS_OPS; i++) {
    cua_backend_op op;
    memset(&op, 0, sizeof op);
    op.size = sizeof op;
    op.seq = (uint64_t)i + 1;
    if (i % 3 == 2) {
      op.kind = CUA_OP_FILL;
      op.dst = ss->buf;
      op.bytes = 64 * sizeof(float);
      op.value = (float)i;
    } else {
      op.kind = CUA_OP_FUNC;
      op.func = fn_stress;
      op.func_ctx = &stress_ctxs[ss->index][i];
    }
    cua_backend_err err;
    if (B->launch(ss->st, ss->s, &op, &err) != CUA_OK)
      return (void *)1;
    if ((i + 1) % STRESS_EVERY == 0 &&
        B->mark(ss->st, ss->s, (uint64_t)i + 1) != CUA_OK)
      return (void *)1;
    if ((i + 1) % STRESS_EVENT_EVERY == 0 &&
        (B->event_record(ss->st, ss->ev, ss->s) != CUA_OK ||
         B->stream_wait_event(ss->st, ss->s, ss->neighbour) != CUA_OK))
      return (void *)1;
  }
  return NULL;
}

START_TEST(four_streams_ten_thousand_ops_with_marks) {
  void *st = open_backend(2, 0);
  static stress_stream ss[STRESS_STREAMS];
  int funcs = 0;
  for (int i = 0; i < STRESS_OPS; i++)
    funcs += i % 3 != 2;
  for (int k = 0; k < STRESS_STREAMS; k++) {
    memset(&ss[k], 0, sizeof ss[k]);
    ss[k].st = st;
    ss[k].s = new_stream(st, k % 2);
    ss[k].buf = dev_alloc(st, k % 2, 64 * sizeof(float));
    ss[k].index = k;
    ss[k].ev = new_event(st, k % 2);
    int n = 0;
    for (int i = 0; i < STRESS_OPS; i++) {
      stress_ctxs[k][i].ss = &ss[k];
      stress_ctxs[k][i].i = n;
      n += i % 3 != 2;
    }
  }
  for (int k = 0; k < STRESS_STREAMS; k++)
    ss[k].neighbour = ss[(k + 1) % STRESS_STREAMS].ev;
  pthread_t feeders[STRESS_STREAMS];
  for (int k = 0; k < STRESS_STREAMS; k++)
    ck_assert_int_eq(pthread_create(&feeders[k], NULL, stress_feed, &ss[k]), 0);

  uint64_t last[STRESS_STREAMS] = {0};
  uint64_t deadline = now_ns() + 60000 * MS;
  int done = 0;
  while (!done) {
    B->wait(st, 50 * MS);
    done = 1;
    for (int k = 0; k < STRESS_STREAMS; k++) {
      uint64_t p = progress_of(st, ss[k].s);
      ck_assert_uint_ge(p, last[k]); /* never goes back */
      ck_assert_uint_eq(p % STRESS_EVERY, 0);
      last[k] = p;
      if (p < STRESS_OPS)
        done = 0;
    }
    ck_assert_msg(now_ns() < deadline, "stress did not finish");
  }
  for (int k = 0; k < STRESS_STREAMS; k++) {
    void *rv;
    pthread_join(feeders[k], &rv);
    ck_assert_ptr_null(rv);
    ck_assert_int_eq(ss[k].counter, funcs);
    ck_assert_int_eq(ss[k].disorder, 0);
    ck_assert_float_eq(ss[k].buf[0], (float)(STRESS_OPS - 2));
    B->mem_free(st, k % 2, NULL, ss[k].buf);
  }
  for (int k = 0; k < STRESS_STREAMS; k++)
    B->event_destroy(st, ss[k].ev);
  B->destroy(st);
}
END_TEST

START_TEST(destroy_drains_queued_work) {
  void *st = open_backend(2, 0);
  cua_backend_stream *a = new_stream(st, 0);
  cua_backend_stream *b = new_stream(st, 1);
  cua_backend_event *e = new_event(st, 0);
  static int ca, cb;
  ca = cb = 0;
  void *mem = dev_alloc(st, 0, 4096);
  launch_spin(st, a, 1, 30 * MS);
  for (int i = 0; i < 100; i++)
    launch_func(st, a, (uint64_t)i + 2, fn_count, &ca);
  ck_assert_int_eq(B->event_record(st, e, a), CUA_OK);
  ck_assert_int_eq(B->stream_wait_event(st, b, e), CUA_OK);
  for (int i = 0; i < 100; i++)
    launch_func(st, b, (uint64_t)i + 1, fn_count, &cb);
  B->mem_free(st, 0, b, mem);
  /* Neither the streams nor the event are destroyed first: destroy() must
   * drain, join and free everything itself. */
  B->destroy(st);
  ck_assert_int_eq(ca, 100);
  ck_assert_int_eq(cb, 100);
}
END_TEST

START_TEST(stream_destroy_drains_its_queue) {
  void *st = open_backend(1, 0);
  cua_backend_stream *s = new_stream(st, 0);
  static int count;
  count = 0;
  launch_spin(st, s, 1, 30 * MS);
  for (int i = 0; i < 50; i++)
    launch_func(st, s, (uint64_t)i + 2, fn_count, &count);
  B->stream_destroy(st, s);
  ck_assert_int_eq(count, 50);
  B->stream_destroy(st, NULL); /* does nothing */
  B->destroy(st);
}
END_TEST

/* ---------------------------------------------------------------- suite */

static Suite *suite(void) {
  Suite *s = suite_create("host_backend");
  TCase *tc = tcase_create("descriptor");
  tcase_add_checked_fixture(tc, load_module, unload_module);
  tcase_add_test(tc, descriptor_has_abi_name_flags_and_schema);
  tcase_add_test(tc, devices_param_sets_device_count_and_info);
  tcase_add_test(tc, ordinals_select_virtual_devices);
  tcase_add_test(tc, bad_ordinal_and_bad_device_are_refused);
  suite_add_tcase(s, tc);

  tc = tcase_create("streams");
  tcase_add_checked_fixture(tc, load_module, unload_module);
  tcase_add_test(tc, ops_on_a_stream_run_in_order);
  tcase_add_test(tc, builtin_ops_have_their_effects);
  tcase_add_test(tc, fresh_device_memory_is_garbage_filled);
  tcase_add_test(tc, spin_takes_at_least_its_duration);
  tcase_add_test(tc, spin_computes_instead_of_sleeping);
  tcase_add_test(tc, a_huge_spin_does_not_end_at_once);
  tcase_add_test(tc, marks_set_progress);
  tcase_add_test(tc, functions_get_the_native_stream_on_a_named_worker);
  tcase_add_test(tc, kernel_ops_and_unknown_kinds_are_refused);
  tcase_add_test(tc, durations_are_stored_before_progress);
  tcase_add_test(tc, function_failure_is_reported_before_the_next_mark);
  tcase_add_test(tc, function_failure_is_reported_out_of_memory);
  suite_add_tcase(s, tc);

  tc = tcase_create("events");
  tcase_add_checked_fixture(tc, load_module, unload_module);
  tcase_add_test(tc, cross_stream_event_wait_blocks);
  tcase_add_test(tc, wait_on_a_never_recorded_event_is_a_no_op);
  tcase_add_test(tc, event_query_before_and_after_completion);
  tcase_add_test(tc, event_can_be_recorded_again);
  suite_add_tcase(s, tc);

  tc = tcase_create("wait");
  tcase_add_checked_fixture(tc, load_module, unload_module);
  tcase_add_test(tc, wait_returns_when_a_mark_executes);
  tcase_add_test(tc, wait_does_not_lose_an_earlier_mark);
  tcase_add_test(tc, wait_times_out_when_nothing_happens);
  tcase_add_test(tc, wake_interrupts_wait);
  suite_add_tcase(s, tc);

  tc = tcase_create("memory");
  tcase_add_checked_fixture(tc, load_module, unload_module);
  tcase_add_test(tc, memory_mb_limits_allocations_per_device);
  tcase_add_test(tc, stream_ordered_free_waits_for_the_stream);
  tcase_add_test(tc, own_worker_frees_out_of_memory_without_hanging);
  suite_add_tcase(s, tc);

  tc = tcase_create("lifetime");
  tcase_add_checked_fixture(tc, load_module, unload_module);
  tcase_add_test(tc, four_streams_ten_thousand_ops_with_marks);
  tcase_add_test(tc, destroy_drains_queued_work);
  tcase_add_test(tc, stream_destroy_drains_its_queue);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return run_suite(suite());
}
