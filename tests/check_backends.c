/*
 * tests/check_backends.c: backends by name. Any backend module on the
 * search path is a backend: `backend = NAME` loads it, `backend = auto`
 * tries them by the priority each declares, and every [backend.NAME]
 * section is checked against the schema of the backend of that name, with
 * file and line in the message. Uses the test backends of tests/modules:
 * launchtime (runs every op inside launch(), priority -1: never auto) and
 * nodevice (never finds a device, priority 1000: auto tries it first).
 * Also: the op kinds as one list (cua_op_kind_name()).
 */
#include "helpers.h"

/* "../core/loader.h": see check_config.c about the include path. */
#include "../core/loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

/* Opens @p text and expects failure with @p code and every needle (up to
 * four, NULL-terminated) in cua_runtime_error(NULL). */
static void expect_open_error(const char *text, int code, const char *n1,
                              const char *n2, const char *n3, const char *n4) {
  cua_runtime *rt = (cua_runtime *)1;
  int rc = open_text(&rt, text);
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(rc == code, "'%s' gave %s, expected %s: %s", text,
                cua_err_name(rc), cua_err_name(code), m);
  ck_assert_ptr_null(rt);
  const char *needles[] = {n1, n2, n3, n4};
  for (size_t i = 0; i < 4; i++)
    ck_assert_msg(needles[i] == NULL || strstr(m, needles[i]) != NULL,
                  "message '%s' lacks '%s'", m, needles[i]);
}

static cua_runtime *open_ok(const char *text) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  ck_assert_msg(rc == 0, "'%s': %s: %s", text, cua_err_name(rc),
                cua_runtime_error(NULL));
  return rt;
}

/* ------------------------------------------------------------ by name */

START_TEST(backend_with_another_name_loads_by_name_with_its_section) {
  cua_runtime *rt = open_ok("[runtime]\nbackend = launchtime\n"
                            "policy = round-robin\n"
                            "[backend.launchtime]\ndevices = 3\n");
  ck_assert_str_eq(cua_runtime_backend(rt), "launchtime");
  ck_assert_int_eq(cua_device_count(rt), 3);
  cua_device_info di = {.size = sizeof di};
  ck_assert_int_eq(cua_device_get_info(rt, 2, &di), 0);
  ck_assert_str_eq(di.name, "launchtime device 2");
  /* It runs work: a fill, read back. */
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 2, 16 * sizeof(float), 0), 0);
  cua_op *op;
  ck_assert_int_eq(cua_op_fill(&op, b, 2.5f), 0);
  ck_assert_int_eq(run_op(rt, op), 0);
  float h[16];
  read_back(rt, b, h);
  for (int i = 0; i < 16; i++)
    ck_assert(h[i] == 2.5f);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(backend_loaded_by_path_reads_the_section_of_its_name) {
  char text[8192];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = %s\npolicy = single-stream\n"
           "[backend.launchtime]\ndevices = 2\n",
           built("tests/modules/.libs/launchtime.so"));
  cua_runtime *rt = open_ok(text);
  ck_assert_str_eq(cua_runtime_backend(rt), "launchtime");
  ck_assert_int_eq(cua_device_count(rt), 2);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(unknown_backend_lists_the_backends_and_directories) {
  expect_open_error("[runtime]\npolicy = single-stream\nbackend = gpu\n",
                    CUA_ERR_MODULE_NOT_FOUND,
                    "<text>:3: backend = gpu: no backend named 'gpu' "
                    "(backends found: nodevice, ",
                    "host, launchgraph, launchtime",
                    "no gpu.so in: ", "plugins/.libs");
}
END_TEST

START_TEST(backend_whose_create_fails_gives_its_code_and_reason) {
  expect_open_error("[runtime]\nbackend = nodevice\n", CUA_ERR_NO_DEVICE,
                    "<text>:2: backend = nodevice: backend 'nodevice' (",
                    "nodevice.so): create() failed with CUA_ERR_NO_DEVICE: "
                    "this test backend never has a device",
                    NULL, NULL);
  /* The values of its own section reach its create(). */
  expect_open_error("[runtime]\nbackend = nodevice\n"
                    "[backend.nodevice]\nreason = unplugged\n",
                    CUA_ERR_NO_DEVICE, "<text>:2: ",
                    "create() failed with CUA_ERR_NO_DEVICE: unplugged", NULL,
                    NULL);
  /* Another create() failure, with another code: a device the backend
   * lacks, said at the line that names it. */
  expect_open_error("[runtime]\nbackend = launchtime\ndevices = 0,5\n"
                    "[backend.launchtime]\ndevices = 2\n",
                    CUA_ERR_BAD_DEVICE,
                    "<text>:3: devices: backend 'launchtime'",
                    "create() failed with CUA_ERR_BAD_DEVICE: no launchtime "
                    "device 5: the backend has 2",
                    NULL, NULL);
}
END_TEST

/* ------------------------------------------------ [backend.NAME] schemas */

START_TEST(unknown_key_lists_the_backends_own_keys) {
  expect_open_error("[runtime]\nbackend = launchtime\n\n"
                    "[backend.launchtime]\ncolour = red\n",
                    CUA_ERR_CONFIG_UNKNOWN_KEY,
                    "<text>:5: [backend.launchtime] colour: unknown key; "
                    "valid keys are devices",
                    NULL, NULL, NULL);
  /* A key of another backend's schema is unknown to this one. */
  expect_open_error("[runtime]\nbackend = host\n"
                    "[backend.nodevice]\ndevices = 2\n",
                    CUA_ERR_CONFIG_UNKNOWN_KEY,
                    "<text>:4: [backend.nodevice] devices: unknown key; "
                    "valid keys are reason",
                    NULL, NULL, NULL);
  expect_open_error("[runtime]\nbackend = host\n"
                    "[backend.host]\ndevices = 2\nreason = x\n",
                    CUA_ERR_CONFIG_UNKNOWN_KEY,
                    "<text>:5: [backend.host] reason: unknown key; valid "
                    "keys are devices, memory_mb",
                    NULL, NULL, NULL);
}
END_TEST

START_TEST(bad_values_in_a_backend_section_are_refused_with_their_line) {
  expect_open_error("[runtime]\nbackend = launchtime\n"
                    "[backend.launchtime]\ndevices = two\n",
                    CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:4: [backend.launchtime] devices: 'two' is not an "
                    "integer",
                    NULL, NULL, NULL);
  expect_open_error("[runtime]\nbackend = launchtime\n"
                    "[backend.launchtime]\ndevices = 65\n",
                    CUA_ERR_CONFIG_OUT_OF_RANGE,
                    "<text>:4: [backend.launchtime] devices: 65 is out of "
                    "range [1, 64]",
                    NULL, NULL, NULL);
  expect_open_error("[runtime]\nbackend = host\n"
                    "[backend.launchtime]\ndevices = 1\ndevices = 2\n",
                    CUA_ERR_CONFIG_DUPLICATE_KEY,
                    "<text>:5: [backend.launchtime] devices: given twice "
                    "(first at line 4)",
                    NULL, NULL, NULL);
}
END_TEST

/* As for policies, a section is checked whether or not its backend is the
 * one in use: a typo for later does not wait to be found. */
START_TEST(sections_of_backends_not_in_use_are_checked_too) {
  expect_open_error("[runtime]\nbackend = host\npolicy = single-stream\n"
                    "[backend.launchtime]\ndevices = 0\n",
                    CUA_ERR_CONFIG_OUT_OF_RANGE,
                    "<text>:5: [backend.launchtime] devices: 0 is out of "
                    "range [1, 64]",
                    NULL, NULL, NULL);
  cua_runtime *rt = open_ok("[runtime]\nbackend = host\n"
                            "policy = single-stream\n"
                            "[backend.launchtime]\ndevices = 4\n"
                            "[backend.nodevice]\nreason = x\n");
  ck_assert_str_eq(cua_runtime_backend(rt), "host");
  ck_assert_int_eq(cua_device_count(rt), 1);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(section_for_no_backend_lists_the_backends_found) {
  expect_open_error("[runtime]\nbackend = host\n[backend.opencl]\n",
                    CUA_ERR_CONFIG_UNKNOWN_SECTION,
                    "<text>:3: [backend.opencl]: no backend named 'opencl' "
                    "(backends found: nodevice, ",
                    "host, launchgraph, launchtime",
                    "no opencl.so in: ", "plugins/.libs");
}
END_TEST

/* ----------------------------------------------------------------- auto */

/* nodevice declares the highest priority and never has a device; launchtime
 * declares a negative one. auto skips the first and never tries the second:
 * it opens cuda where a GPU is, host elsewhere. */
START_TEST(auto_skips_a_backend_without_device_and_never_a_negative_one) {
  /* What to expect comes from the machine: cuda if it opens here (this
   * test runs in a forked child, so the probe's CUDA context is its own). */
  cua_runtime *probe = NULL;
  int has_cuda = open_text(&probe, "[runtime]\nbackend = cuda\n"
                                   "policy = single-stream\n") == 0;
  cua_runtime_destroy(probe);
  cua_runtime *rt = open_ok("[runtime]\nbackend = auto\n"
                            "policy = single-stream\n");
  ck_assert_str_eq(cua_runtime_backend(rt), has_cuda ? "cuda" : "host");
  cua_runtime_destroy(rt);
}
END_TEST

/* With only the test backends on the path, nothing opens: the message
 * says what was tried and why, and launchtime was not tried. */
START_TEST(auto_with_no_backend_that_opens_says_why) {
  if (access(CUA_PKGLIBDIR "/backends", F_OK) == 0)
    return; /* installed backends would be found too */
  setenv("CUASYNC_MODULE_PATH", built("tests/modules/.libs"), 1);
  cua_runtime *rt = (cua_runtime *)1;
  int rc = open_text(&rt, "[runtime]\nbackend = auto\n"
                          "[backend.nodevice]\nreason = none here\n");
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(rc == CUA_ERR_NO_DEVICE, "%s: %s", cua_err_name(rc), m);
  ck_assert_ptr_null(rt);
  ck_assert_msg(strstr(m, "<text>:2: backend = auto: no backend opened: "
                          "backend 'nodevice' (") != NULL,
                "%s", m);
  ck_assert_msg(strstr(m, "CUA_ERR_NO_DEVICE: none here") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "launchtime") == NULL, "%s", m);
}
END_TEST

START_TEST(descriptors_declare_priorities_and_old_ones_default) {
  char err[4096];
  cua__module *mod = NULL;
  static const struct {
    const char *name;
    int priority;
  } want[] = {{"host", 100}, {"launchtime", -1}, {"nodevice", 1000}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    int rc = cua__module_load(&mod, CUA__MODULE_BACKEND, want[i].name, NULL, 0,
                              0, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(cua__backend_priority(mod->desc.backend),
                     want[i].priority);
    ck_assert_uint_eq(mod->desc.backend->abi_minor, CUA_BACKEND_ABI_MINOR);
    cua__module_unload(mod);
  }
  /* A 1.0 descriptor ends before the field: the default, whatever lies
   * beyond its size. */
  cua_backend_descriptor d;
  memset(&d, 0, sizeof d);
  d.size = offsetof(cua_backend_descriptor, priority);
  d.priority = 77;
  ck_assert_int_eq(cua__backend_priority(&d), CUA_BACKEND_PRIORITY_DEFAULT);
  d.size = sizeof d;
  ck_assert_int_eq(cua__backend_priority(&d), 77);
  ck_assert_int_eq(CUA_BACKEND_ABI_MINOR, 11);
}
END_TEST

/* -------------------------------------------------- launch-time execution */

static pthread_t submitter;
static atomic_int ran_on_submitter;

static int fn_where(cua_stream_ctx *ctx, void *arg) {
  (void)arg;
  atomic_store(&ran_on_submitter,
               pthread_equal(pthread_self(), submitter) ? 1 : 2);
  ck_assert_str_eq(cua_ctx_backend(ctx), "launchtime");
  return 0;
}

/* The defining property of the launchtime backend: a stream function has
 * run, on the submitting thread, by the time cua_submit() returns. */
START_TEST(launchtime_runs_stream_functions_inside_submit) {
  cua_runtime *rt = open_ok("[runtime]\nbackend = launchtime\n"
                            "policy = single-stream\n");
  submitter = pthread_self();
  atomic_store(&ran_on_submitter, 0);
  cua_op *op;
  ck_assert_int_eq(cua_op_func(&op, rt, fn_where, NULL, NULL, 0), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(atomic_load(&ran_on_submitter), 1);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua_op_destroy(op);
  cua_runtime_destroy(rt);
}
END_TEST

/* ------------------------------------- user code outside the core's lock */

/* User code never runs under a core lock: launches (and so stream
 * functions, on backends that run them inside launch(), launchtime here and
 * cuda for real) are applied by the executor after the round that decided
 * them released rt->lock. With 0.1's scheduler, which launched under the
 * lock, the first test waited about 45 ms and the second deadlocked. */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static atomic_int slow_started;

static int fn_slow(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  (void)arg;
  atomic_store(&slow_started, 1);
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  return 0;
}

static void *submit_slow(void *arg) {
  cua_runtime *rt = arg;
  cua_op *op;
  ck_assert_int_eq(cua_op_func(&op, rt, fn_slow, NULL, NULL, 0), 0);
  ck_assert_int_eq(run_op(rt, op), 0);
  return NULL;
}

START_TEST(slow_stream_function_does_not_delay_another_thread) {
  cua_runtime *rt = open_ok("[runtime]\nbackend = launchtime\n"
                            "policy = round-robin\n");
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  /* The best of a few tries: on a loaded machine (sanitizers, CI) one
   * submission alone may take milliseconds, but one serialised behind the
   * stream function takes 45 ms every time. */
  uint64_t best = UINT64_MAX;
  for (int attempt = 0; attempt < 5 && best >= 5000000; attempt++) {
    atomic_store(&slow_started, 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, submit_slow, rt), 0);
    while (!atomic_load(&slow_started))
      sched_yield();
    uint64_t t0 = now_ns();
    cua_op *op;
    ck_assert_int_eq(cua_op_fill(&op, b, 1.0f), 0);
    ck_assert_int_eq(run_op(rt, op), 0);
    uint64_t waited = now_ns() - t0;
    pthread_join(t, NULL);
    if (waited < best)
      best = waited;
  }
  ck_assert_msg(best < 5000000,
                "an unrelated submission took %llu us (best of 5) "
                "behind a 50 ms stream function",
                (unsigned long long)(best / 1000));
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

static int fn_calls_runtime(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  cua_stats st = {.size = sizeof st};
  return cua_runtime_stats(arg, &st);
}

START_TEST(stream_function_may_call_the_runtime) {
  cua_runtime *rt = open_ok("[runtime]\nbackend = launchtime\n"
                            "policy = single-stream\n");
  cua_op *op;
  ck_assert_int_eq(cua_op_func(&op, rt, fn_calls_runtime, rt, NULL, 0), 0);
  ck_assert_int_eq(run_op(rt, op), 0);
  cua_runtime_destroy(rt);
}
END_TEST

/* ---------------------------------------------------- waiting (ABI 1.10) */

static int sleep_step(void *arg, void **result) {
  (void)result;
  struct timespec ts = {0, (long)(uintptr_t)arg};
  nanosleep(&ts, NULL);
  return 0;
}

static cua_future *submit_sleep(cua_runtime *rt, long ns) {
  cua_op *op;
  ck_assert_int_eq(cua_op_host(&op, rt, sleep_step, (void *)(uintptr_t)ns), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  cua_op_destroy(op);
  return f;
}

static void *wait_future(void *f) {
  ck_assert_int_eq(cua_future_wait(f), 0);
  return NULL;
}

/* The launchtime backend's count of waited() calls (lt_waited_calls),
 * from the module the runtime loaded; *h to dlclose(). */
static _Atomic long *waited_calls(void **h) {
  *h = dlopen(built("tests/modules/.libs/launchtime.so"),
              RTLD_NOW | RTLD_NOLOAD);
  ck_assert_msg(*h != NULL, "launchtime.so is not loaded: %s", dlerror());
  _Atomic long *calls = dlsym(*h, "lt_waited_calls");
  ck_assert_ptr_nonnull(calls);
  return calls;
}

/* One thread waits on a @p ns host step: waited(1) then waited(0), once
 * each, by the time the wait returns. */
static void wait_one(cua_runtime *rt, _Atomic long *calls, long ns) {
  long off = calls[0], on = calls[1];
  cua_future *f = submit_sleep(rt, ns);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_int_eq(calls[1], on + 1);
  ck_assert_int_eq(calls[0], off + 1);
  cua_future_destroy(f);
}

/* The backend hears when program threads start and stop waiting (once
 * for all of them, then once when the last is done), so that the CUDA one
 * polls without sleeping meanwhile; counted by the launchtime backend. */
START_TEST(backend_hears_when_threads_wait_and_when_they_are_done) {
  cua_runtime *rt = open_ok("[runtime]\nbackend = launchtime\n"
                            "policy = round-robin\n");
  void *h;
  _Atomic long *calls = waited_calls(&h);
  long off0 = calls[0], on0 = calls[1];
  ck_assert_int_eq(calls[2], 0);

  /* One thread waits: 1 while it waits, 0 once it returns. */
  wait_one(rt, calls, 100000000);

  /* A wait that times out is counted out too. */
  cua_future *f = submit_sleep(rt, 300000000);
  ck_assert_int_eq(cua_future_wait_timeout(f, 20000000), CUA_ERR_TIMEDOUT);
  ck_assert_int_eq(calls[1], on0 + 2);
  ck_assert_int_eq(calls[0], off0 + 2);

  /* Three threads on one future and this one in synchronize(): a 1 when
   * the first starts, a 0 when the last is done, and always in turn. */
  pthread_t t[3];
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, wait_future, f), 0);
  ck_assert_int_eq(cua_runtime_synchronize(rt), 0);
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  ck_assert_int_ge(calls[1], on0 + 3);
  ck_assert_int_eq(calls[1] - on0, calls[0] - off0);
  ck_assert_int_eq(calls[2], 0);
  cua_future_destroy(f);

  /* cua_runtime_destroy() waits too, and leaves nobody counted in. */
  f = submit_sleep(rt, 50000000);
  cua_future_destroy(f);
  long on = calls[1];
  cua_runtime_destroy(rt);
  ck_assert_int_eq(calls[1], on + 1);
  ck_assert_int_eq(calls[1] - on0, calls[0] - off0);
  ck_assert_int_eq(calls[2], 0);
  dlclose(h);
}
END_TEST

/* A backend that polls without sleeping while someone waits has the
 * waiters watch their futures without sleeping too: the same results, the
 * same timeouts, every waiter counted out. */
START_TEST(waiters_asked_to_spin_wait_and_time_out_as_sleepers_do) {
  cua_runtime *rt = open_ok("[runtime]\nbackend = launchtime\n"
                            "policy = round-robin\n"
                            "[backend.launchtime]\nwaiters_spin = true\n");
  void *h;
  _Atomic long *calls = waited_calls(&h);
  long off0 = calls[0], on0 = calls[1];
  wait_one(rt, calls, 50000000);

  /* Past its deadline a spinning waiter gives up as a sleeping one does,
   * and three threads spin on one future until it is done. */
  cua_future *f = submit_sleep(rt, 300000000);
  uint64_t t0 = now_ns();
  ck_assert_int_eq(cua_future_wait_timeout(f, 30000000), CUA_ERR_TIMEDOUT);
  ck_assert_uint_ge(now_ns() - t0, 30000000);
  ck_assert_str_eq(cua_runtime_error(rt),
                   "cua_future_wait_timeout: still pending after 30000000 "
                   "ns");
  ck_assert_int_eq(calls[1], on0 + 2);
  ck_assert_int_eq(calls[0], off0 + 2);
  pthread_t t[3];
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, wait_future, f), 0);
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  ck_assert_int_eq(cua_future_poll(f), 0);
  ck_assert_int_eq(calls[1] - on0, calls[0] - off0);
  ck_assert_int_eq(calls[2], 0);
  cua_future_destroy(f);
  cua_runtime_destroy(rt);
  ck_assert_int_eq(calls[1] - on0, calls[0] - off0);
  ck_assert_int_eq(calls[2], 0);
  dlclose(h);
}
END_TEST

/* -------------------------------------------------------------- op kinds */

START_TEST(op_kinds_are_one_list_with_names) {
  int n = 0;
#define CHECK_KIND(id, val, name, launched, desc)                              \
  ck_assert_int_eq(CUA_OP_##id, val);                                          \
  ck_assert_str_eq(cua_op_kind_name(CUA_OP_##id), name);                       \
  ck_assert(launched == 0 || launched == 1);                                   \
  ck_assert(strlen(desc) > 0);                                                 \
  n++;
  CUA_OP_KIND_MAP(CHECK_KIND)
#undef CHECK_KIND
  ck_assert_int_eq(n, CUA_OP_KIND_COUNT_ - 1);
  ck_assert_str_eq(cua_op_kind_name(CUA_OP_MEMCPY_D2H), "memcpy_d2h");
  ck_assert_str_eq(cua_op_kind_name((cua_op_kind)0), "?");
  ck_assert_str_eq(cua_op_kind_name(CUA_OP_KIND_COUNT_), "?");
  ck_assert_str_eq(cua_op_kind_name((cua_op_kind)-1), "?");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("backends");
  TCase *tc = tcase_create("by name");
  tcase_add_test(tc, backend_with_another_name_loads_by_name_with_its_section);
  tcase_add_test(tc, backend_loaded_by_path_reads_the_section_of_its_name);
  tcase_add_test(tc, unknown_backend_lists_the_backends_and_directories);
  tcase_add_test(tc, backend_whose_create_fails_gives_its_code_and_reason);
  tcase_add_test(tc, unknown_key_lists_the_backends_own_keys);
  tcase_add_test(tc,
                 bad_values_in_a_backend_section_are_refused_with_their_line);
  tcase_add_test(tc, sections_of_backends_not_in_use_are_checked_too);
  tcase_add_test(tc, section_for_no_backend_lists_the_backends_found);
  tcase_add_test(tc,
                 auto_skips_a_backend_without_device_and_never_a_negative_one);
  tcase_add_test(tc, auto_with_no_backend_that_opens_says_why);
  tcase_add_test(tc, descriptors_declare_priorities_and_old_ones_default);
  tcase_add_test(tc, launchtime_runs_stream_functions_inside_submit);
  suite_add_tcase(s, tc);
  TCase *tu = tcase_create("unlocked launch");
  tcase_set_timeout(tu, 10);
  tcase_add_test(tu, slow_stream_function_does_not_delay_another_thread);
  tcase_add_test(tu, stream_function_may_call_the_runtime);
  suite_add_tcase(s, tu);
  TCase *tw = tcase_create("waiting");
  tcase_set_timeout(tw, 60);
  tcase_add_test(tw, backend_hears_when_threads_wait_and_when_they_are_done);
  tcase_add_test(tw, waiters_asked_to_spin_wait_and_time_out_as_sleepers_do);
  suite_add_tcase(s, tw);
  TCase *tk = tcase_create("op kinds");
  tcase_add_test(tk, op_kinds_are_one_list_with_names);
  suite_add_tcase(s, tk);
  return s;
}

int main(void) {
  return run_suite(suite());
}
