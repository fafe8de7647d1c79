/*
 * tests/check_observers.c: observer modules (cuasync/observer.h): the
 * perfetto observer's trace of a known DAG, checked by a JSON parser
 * (tests/trace_check.py); one of names that are not UTF-8;
 * $CUASYNC_TRACE; the loader's and the
 * configuration's refusals; an observer that fails at run time; one too
 * slow to keep up (tests/modules/obs-test.c); the nvtx observer's ranges,
 * counted by an NVTX tool library (tests/modules/nvtx-inject.c).
 */
#include "helpers.h"

#include <pthread.h>

#include <cuasync/observer.h>

#include <dlfcn.h>
#include <stdint.h>
#include <unistd.h>

#define ELEMS 256
#define NBUF 6

static char trace_path[4200];

/* The text of a runtime on the test backend with @p extra sections. */
static cua_runtime *open_with(const char *extra) {
  char text[4800];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = %s\npolicy = round-robin\n%s\n"
           "[policy.round-robin]\nstreams = 3\n",
           test_backend(), extra);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  if ((rc == CUA_ERR_NO_DEVICE || rc == CUA_ERR_MODULE_NOT_FOUND) &&
      !test_backend_on_cpu()) {
    printf("skipped: backend %s unavailable\n", test_backend());
    exit(77);
  }
  ck_assert_msg(rc == 0, "runtime: %s: %s", cua_err_name(rc),
                cua_runtime_error(NULL));
  return rt;
}

/* A DAG over NBUF buffers with branches (so that round-robin puts waits
 * between its streams): fills, spins, axpys joined by zips and thens.
 * Returns the root; *nops is the number of device ops in it. */
static cua_op *known_dag(cua_runtime *rt, cua_buffer **b, int *nops) {
  cua_op *f[NBUF], *sp[3], *ax[4];
  for (int i = 0; i < NBUF; i++)
    ck_assert_int_eq(cua_op_fill(&f[i], b[i], (float)i), 0);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq(cua_op_spin(&sp[i], rt, 20000 * (uint64_t)(i + 1), 1), 0);
  ck_assert_int_eq(cua_op_axpy(&ax[0], b[0], 2.0f, b[1]), 0);
  ck_assert_int_eq(cua_op_axpy(&ax[1], b[2], 1.0f, b[3]), 0);
  ck_assert_int_eq(cua_op_axpy(&ax[2], b[4], -1.0f, b[0]), 0);
  ck_assert_int_eq(cua_op_axpy(&ax[3], b[5], 1.0f, b[2]), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = "combine";
  h.tag = "layer-1";
  ck_assert_int_eq(cua_op_set_hints(ax[0], &h), 0);
  /* zip(then(spin0, fill0), fill1) -> ax0; zip(then(spin1, fill2), fill3)
   * -> ax1; zip(ax0, fill4) -> ax2; zip(ax1, then(spin2, fill5)) -> ax3;
   * zip(ax2, ax3). */
  cua_op *t0, *t1, *t2, *z0, *z1, *z2, *z3, *c0, *c1, *c2, *c3, *root;
  ck_assert_int_eq(cua_op_then(&t0, sp[0], f[0]), 0);
  ck_assert_int_eq(cua_op_then(&t1, sp[1], f[2]), 0);
  ck_assert_int_eq(cua_op_then(&t2, sp[2], f[5]), 0);
  ck_assert_int_eq(cua_op_zip(&z0, (cua_op *[]){t0, f[1]}, 2), 0);
  ck_assert_int_eq(cua_op_then(&c0, z0, ax[0]), 0);
  ck_assert_int_eq(cua_op_zip(&z1, (cua_op *[]){t1, f[3]}, 2), 0);
  ck_assert_int_eq(cua_op_then(&c1, z1, ax[1]), 0);
  ck_assert_int_eq(cua_op_zip(&z2, (cua_op *[]){c0, f[4]}, 2), 0);
  ck_assert_int_eq(cua_op_then(&c2, z2, ax[2]), 0);
  ck_assert_int_eq(cua_op_zip(&z3, (cua_op *[]){c1, t2}, 2), 0);
  ck_assert_int_eq(cua_op_then(&c3, z3, ax[3]), 0);
  ck_assert_int_eq(cua_op_zip(&root, (cua_op *[]){c2, c3}, 2), 0);
  cua_op *all[] = {f[0],  f[1],  f[2],  f[3],  f[4],  f[5], sp[0], sp[1],
                   sp[2], ax[0], ax[1], ax[2], ax[3], t0,   t1,    t2,
                   z0,    z1,    z2,    z3,    c0,    c1,   c2,    c3};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cua_op_destroy(all[i]);
  *nops = NBUF + 3 + 4;
  return root;
}

/* Creates the buffers @p b (buffer i on device i % @p ndev), submits the
 * known DAG twice and reads b[4] back, checking the result; returns the
 * device ops of one DAG. */
static int run_known_dag_on(cua_runtime *rt, cua_buffer **b, int ndev) {
  for (int i = 0; i < NBUF; i++)
    ck_assert_int_eq(
        cua_buffer_create(&b[i], rt, i % ndev, ELEMS * sizeof(float), 0), 0);
  int nops = 0;
  for (int round = 0; round < 2; round++) {
    cua_op *root = known_dag(rt, b, &nops);
    ck_assert_int_eq(cua_submit_wait(rt, root, NULL, NULL), 0);
    cua_op_destroy(root);
  }
  /* The results are what the DAG computes, observed or not. */
  float h[ELEMS];
  read_back(rt, b[4], h);
  /* b0 = 0 + 2 * 1 = 2; b4 = 4 - b0 = 2. */
  ck_assert(h[0] == 2.0f && h[ELEMS - 1] == 2.0f);
  return nops;
}

static int run_known_dag(cua_runtime *rt, cua_buffer **b) {
  return run_known_dag_on(rt, b, 1);
}

/* Runs python3 tests/trace_check.py on the trace; fails the test with its
 * output unless it says the trace is right. */
static void check_trace_on(const char *path, int nops, uint64_t waits,
                           const char *timing, int devices) {
  /* devices: slices on that many devices; 0: on any number. */
  const char *src = getenv("CUASYNC_TEST_SRCDIR");
  char cmd[8600], dv[16] = "";
  if (devices > 0)
    snprintf(dv, sizeof dv, "%d", devices);
  snprintf(cmd, sizeof cmd,
           "python3 %s/tests/trace_check.py %s %d %llu '%s' %s 2>&1",
           src != NULL ? src : ".", path, nops, (unsigned long long)waits,
           timing != NULL ? timing : "", dv);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char out[1024] = "";
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = '\0';
  int status = pclose(p);
  ck_assert_msg(status == 0, "%s: %s", cmd, out);
  printf("%s", out);
}

/* The same, with the slices on any number of devices (round-robin rotates
 * over every device CUDA has). */
static void check_trace(const char *path, int nops, uint64_t waits,
                        const char *timing) {
  check_trace_on(path, nops, waits, timing, 0);
}

/* The trace of a known DAG, submitted twice, with each observer_times:
 * ends (the default), device, estimated. The host backend measures every
 * op on its threads whatever it says; the others (CUDA, launchtime) give
 * the ends, both times, or neither. On CUDA, CUPTI measures both (where
 * libcupti loads; events give the ends otherwise); case 3 asks for events
 * there ([backend.cuda] timestamps = events; elsewhere it is case 0, as a
 * build without CUDA refuses a section of a backend it does not have). */
START_TEST(perfetto_trace_of_a_known_dag) {
  snprintf(trace_path, sizeof trace_path, "%s/trace-%ld.json", built("tests"),
           (long)getpid());
  char extra[4400];
  static const char *const times[] = {"", "observer_times = device\n",
                                      "observer_times = estimated\n", ""};
  static const char *const want[] = {"end-measured", "measured", "estimated",
                                     "end-measured"};
  int cuda = strcmp(test_backend(), "cuda") == 0;
  snprintf(extra, sizeof extra,
           "observers = perfetto\n%s[observer.perfetto]\npath = %s\n%s",
           times[_i], trace_path,
           _i == 3 && cuda ? "[backend.cuda]\ntimestamps = events\n" : "");
  const char *timing = strcmp(test_backend(), "host") == 0 ? "measured"
                       : cuda && _i == 0 ? "measured|end-measured"
                                         : want[_i];
  cua_runtime *rt = open_with(extra);
  cua_buffer *b[NBUF];
  int nops = run_known_dag(rt, b);
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_uint_eq(st.observer_drops, 0);
  for (int i = 0; i < NBUF; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
  /* Two rounds of the DAG and the read-back. */
  check_trace(trace_path, 2 * nops + 1, st.event_waits, timing);
  unlink(trace_path);
}
END_TEST

/* The known DAG over two devices (two virtual ones on a CPU backend, the
 * first two GPUs on CUDA; one where CUDA has one): round-robin rotates its
 * ops over the devices and the buffers alternate between them, so waits
 * cross devices. The trace has a process per device with slices on it, and
 * on CUDA each op's times measured on its own device. */
START_TEST(perfetto_trace_over_two_devices) {
  snprintf(trace_path, sizeof trace_path, "%s/trace2-%ld.json", built("tests"),
           (long)getpid());
  char extra[4400];
  snprintf(extra, sizeof extra,
           "observers = perfetto\n[observer.perfetto]\npath = %s\n%s",
           trace_path, two_devices_section());
  int cuda = strcmp(test_backend(), "cuda") == 0;
  const char *timing = strcmp(test_backend(), "host") == 0 ? "measured"
                       : cuda ? "measured|end-measured"
                              : "end-measured";
  cua_runtime *rt = open_with(extra);
  int ndev = cua_device_count(rt) >= 2 ? 2 : 1;
  if (test_backend_on_cpu())
    ck_assert_int_eq(ndev, 2);
  cua_buffer *b[NBUF];
  int nops = run_known_dag_on(rt, b, ndev);
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_uint_eq(st.observer_drops, 0);
  if (ndev == 2)
    ck_assert_uint_gt(st.event_waits, 0);
  for (int i = 0; i < NBUF; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
  printf("perfetto over %d device(s): ", ndev);
  check_trace_on(trace_path, 2 * nops + 1, st.event_waits, timing, ndev);
  unlink(trace_path);
}
END_TEST

/* $CUASYNC_TRACE opens the perfetto observer without a configuration,
 * with %p as the process id. */
START_TEST(cuasync_trace_variable) {
  char pattern[4200], want[4200];
  snprintf(pattern, sizeof pattern, "%s/env-trace-%%p.json", built("tests"));
  snprintf(want, sizeof want, "%s/env-trace-%ld.json", built("tests"),
           (long)getpid());
  setenv("CUASYNC_TRACE", pattern, 1);
  cua_runtime *rt = open_with("");
  unsetenv("CUASYNC_TRACE");
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, ELEMS * sizeof(float), 0), 0);
  cua_op *f;
  ck_assert_int_eq(cua_op_fill(&f, b, 3.0f), 0);
  ck_assert_int_eq(run_op(rt, f), 0);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
  check_trace(want, 1, 0, NULL);
  unlink(want);
}
END_TEST

/* A name hint or tag that is not UTF-8 still makes a trace that is: each
 * ill-formed sequence becomes \ufffd, valid ones stay whole, and the
 * trace's parser is happy. */
START_TEST(perfetto_trace_is_utf8_whatever_the_names) {
  snprintf(trace_path, sizeof trace_path, "%s/utf-trace-%ld.json",
           built("tests"), (long)getpid());
  char extra[4400];
  snprintf(extra, sizeof extra,
           "observers = perfetto\n[observer.perfetto]\n"
           "path = %s\n",
           trace_path);
  cua_runtime *rt = open_with(extra);
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, ELEMS * sizeof(float), 0), 0);
  cua_op *f;
  ck_assert_int_eq(cua_op_fill(&f, b, 3.0f), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = "a\xff\xfe"
           "b\xc3\xa9\xe2\x82";            /* é, then a cut-off euro sign */
  h.tag = "t\xed\xa0\x80\xf0\x9f\x98\x80"; /* a surrogate, then U+1F600 */
  ck_assert_int_eq(cua_op_set_hints(f, &h), 0);
  ck_assert_int_eq(run_op(rt, f), 0);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);

  FILE *in = fopen(trace_path, "rb");
  ck_assert_ptr_nonnull(in);
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, in);
  fclose(in);
  text[n] = '\0';
  ck_assert_msg(strstr(text, "\"a\\ufffd\\ufffdb\xc3\xa9\\ufffd\"") != NULL,
                "the name hint is not in the trace as UTF-8: %.400s", text);
  ck_assert_msg(strstr(text, "\"t\\ufffd\\ufffd\\ufffd\xf0\x9f\x98\x80\"") !=
                    NULL,
                "the tag is not in the trace as UTF-8");
  ck_assert_ptr_null(memchr(text, 0xff, n));
  check_trace(trace_path, 1, 0, NULL);
  unlink(trace_path);
}
END_TEST

/* What the loader and the configuration refuse, each with its code. */
START_TEST(refusals) {
  cua_runtime *rt = NULL;
  char text[512];
#define OPEN(extra)                                                            \
  (snprintf(text, sizeof text, "[runtime]\nbackend = host\n%s", extra),        \
   open_text(&rt, text))
  /* Each says where the name or value came from (file and line, or the
   * variable), why, and the code create() returned by its name. */
  ck_assert_err(NULL, OPEN("observers = nosuch\n"), CUA_ERR_MODULE_NOT_FOUND,
                "<text>:3: [runtime] observers: observer module 'nosuch' not "
                "found: no nosuch.so in");
  ck_assert_err(NULL, OPEN("observers = perfetto, perfetto\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "[runtime] observers: 'perfetto' is named twice");
  ck_assert_err(NULL, OPEN("observers = perfetto,\"x\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "[runtime] observers: '\"x' is not a module name or path: "
                "it holds a '\"'");
  ck_assert_err(NULL, OPEN("observers = perfetto\nobserver_times = exact\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "[runtime] observer_times: 'exact' is not one of ends, "
                "device, estimated");
  ck_assert_err(NULL,
                OPEN("observers = perfetto\n[observer.perfetto]\npth = x\n"),
                CUA_ERR_CONFIG_UNKNOWN_KEY, "pth");
  ck_assert_err(NULL,
                OPEN("observers = perfetto\n[observer.perfetto]\npath = "
                     "/nonexistent/dir/t.json\n"),
                CUA_ERR_MODULE_CREATE,
                "<text>:4: [observer.perfetto]: observer 'perfetto' failed to "
                "start (CUA_ERR_INVAL): cannot write /nonexistent/dir/t.json: "
                "No such file or directory");
  ck_assert_err(NULL,
                OPEN("observers = perfetto\n[observer.perfetto]\npath =\n"),
                CUA_ERR_MODULE_CREATE,
                "<text>:4: [observer.perfetto]: observer 'perfetto' failed to "
                "start (CUA_ERR_INVAL): path is empty");
  ck_assert_err(NULL, OPEN("[observer.]\n"), CUA_ERR_CONFIG_UNKNOWN_SECTION,
                "needs a module name after 'observer.'");
  /* A policy is not an observer. */
  ck_assert_err(NULL, OPEN("observers = round-robin\n"),
                CUA_ERR_MODULE_NO_ENTRY,
                "no cua_observer_entry symbol: not an observer module");
  ck_assert_ptr_null(rt);
#undef OPEN
}
END_TEST

/* $CUASYNC_TRACE naming what cannot be written: the message names the
 * variable and says why, with the code's name. */
START_TEST(cuasync_trace_refusals) {
  cua_runtime *rt = NULL;
  char want[1024], longname[320];
  const char *dir = built("tests");
  static const char *const why[] = {
      "Is a directory", "No such file or directory", "File name too long"};
  memset(longname, 'x', 300);
  longname[300] = '\0';
  const char *values[] = {dir, "/nonexistent/dir/t.json", longname};
  for (int i = 0; i < 3; i++) {
    char value[4200];
    snprintf(value, sizeof value, "%s", values[i]);
    setenv("CUASYNC_TRACE", value, 1);
    snprintf(want, sizeof want,
             "$CUASYNC_TRACE=%.320s: observer 'perfetto' failed to start "
             "(CUA_ERR_INVAL): cannot write %.320s: %s",
             value, value, why[i]);
    ck_assert_err(NULL, open_text(&rt, "[runtime]\nbackend = host\n"),
                  CUA_ERR_MODULE_CREATE, want);
  }
  unsetenv("CUASYNC_TRACE");
  ck_assert_ptr_null(rt);
}
END_TEST

/* A trace that cannot be written when the runtime closes (a full disk) is
 * said on standard error, with the reason and where its path came from
 * (it said "writing /dev/full failed"). */
START_TEST(lost_trace_says_where_and_why) {
  if (access("/dev/full", W_OK) != 0) {
    printf("skipped: no /dev/full\n");
    return;
  }
  char log[4200];
  snprintf(log, sizeof log, "%s/lost-trace-%ld.err", built("tests"),
           (long)getpid());
  for (int env = 0; env < 2; env++) {
    cua_runtime *rt;
    if (env) {
      setenv("CUASYNC_TRACE", "/dev/full", 1);
      rt = open_with("");
      unsetenv("CUASYNC_TRACE");
    } else {
      rt = open_with(
          "observers = perfetto\n[observer.perfetto]\npath = /dev/full\n");
    }
    cua_buffer *b;
    ck_assert_int_eq(cua_buffer_create(&b, rt, 0, ELEMS * sizeof(float), 0), 0);
    cua_op *f;
    ck_assert_int_eq(cua_op_fill(&f, b, 3.0f), 0);
    ck_assert_int_eq(run_op(rt, f), 0);
    cua_buffer_destroy(b);
    /* The runtime's standard error, while it closes, into a file. */
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *err = fopen(log, "w+");
    ck_assert_ptr_nonnull(err);
    dup2(fileno(err), STDERR_FILENO);
    cua_runtime_destroy(rt);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char text[4096];
    rewind(err);
    size_t n = fread(text, 1, sizeof text - 1, err);
    text[n] = '\0';
    fclose(err);
    unlink(log);
    const char *want =
        env ? "cuasync: observer perfetto ($CUASYNC_TRACE=/dev/full): "
              "writing /dev/full: No space left on device; the trace is lost"
            : "cuasync: observer perfetto (<text>:5: [observer.perfetto]): "
              "writing /dev/full: No space left on device; the trace is lost";
    ck_assert_msg(strstr(text, want) != NULL, "stderr '%s' lacks '%s'", text,
                  want);
  }
}
END_TEST

/* An observer that fails is disabled; results and the runtime go on. */
START_TEST(failing_observer_changes_nothing) {
  cua_runtime *rt =
      open_with("observers = obs-test\n[observer.obs-test]\nmode = fail\n");
  cua_buffer *b[NBUF];
  for (int i = 0; i < NBUF; i++)
    ck_assert_int_eq(cua_buffer_create(&b[i], rt, 0, ELEMS * sizeof(float), 0),
                     0);
  int nops;
  for (int round = 0; round < 3; round++) {
    cua_op *root = known_dag(rt, b, &nops);
    ck_assert_int_eq(cua_submit_wait(rt, root, NULL, NULL), 0);
    cua_op_destroy(root);
  }
  float h[ELEMS];
  read_back(rt, b[4], h);
  ck_assert(h[0] == 2.0f);
  for (int i = 0; i < NBUF; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
}
END_TEST

typedef void (*release_fn)(void);
typedef unsigned long (*count_fn)(int);

/* The test observer's functions, from the module the runtime loaded. */
static void *obs_test_fn(const char *name) {
  void *dl =
      dlopen(built("tests/modules/.libs/obs-test.so"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_msg(dl != NULL, "obs-test.so is not loaded: %s", dlerror());
  void *f = dlsym(dl, name);
  ck_assert_ptr_nonnull(f);
  dlclose(dl);
  return f;
}

/* An observer stuck in record() stalls nothing: submissions complete,
 * records beyond the ring are dropped and counted, and once it goes on it
 * gets the rest. */
START_TEST(slow_observer_stalls_nothing) {
  cua_runtime *rt =
      open_with("observers = obs-test\n[observer.obs-test]\nmode = block\n");
  release_fn release = (release_fn)obs_test_fn("obs_test_release");
  count_fn count = (count_fn)obs_test_fn("obs_test_count");
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  /* 40,000 ops: about 80,000 records (a placement and a run each), more
   * than the 65,536 the core keeps waiting. */
  for (int k = 0; k < 40; k++) {
    cua_op *ops[1000];
    for (int i = 0; i < 1000; i++)
      ck_assert_int_eq(cua_op_fill(&ops[i], b, (float)i), 0);
    cua_op *chain = cua_op_retain(ops[0]);
    for (int i = 1; i < 1000; i++) {
      cua_op *t;
      ck_assert_int_eq(cua_op_then(&t, chain, ops[i]), 0);
      cua_op_destroy(chain);
      chain = t;
    }
    ck_assert_int_eq(cua_submit_wait(rt, chain, NULL, NULL), 0);
    cua_op_destroy(chain);
    for (int i = 0; i < 1000; i++)
      cua_op_destroy(ops[i]);
  }
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_msg(st.observer_drops > 0, "no record dropped");
  ck_assert_uint_eq(count(CUA_OBS_OP), 0); /* still stuck */
  release();
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
  /* Once released it got what was kept: everything but the drops. */
  unsigned long got = count(CUA_OBS_SUBMIT) + count(CUA_OBS_PLACE) +
                      count(CUA_OBS_WAIT) + count(CUA_OBS_OP);
  ck_assert_uint_gt(got, 60000);
}
END_TEST

/* An observer with CUA_OBSERVER_COMMANDS (obs-test) also gets the event
 * records and progress marks the core decides, and every observer a
 * record of each graph made: the known DAG (waits between round-robin's
 * streams) and a graph of it, launched once. perfetto, open beside it and
 * without the flag, gets no command records and shows the capture as an
 * instant on the host track. */
START_TEST(commands_and_graph_captures_are_recorded) {
  snprintf(trace_path, sizeof trace_path, "%s/trace-cmd-%ld.json",
           built("tests"), (long)getpid());
  char extra[4400];
  snprintf(extra, sizeof extra,
           "observers = obs-test, perfetto\n[observer.perfetto]\npath = %s\n",
           trace_path);
  cua_runtime *rt = open_with(extra);
  count_fn count = (count_fn)obs_test_fn("obs_test_count");
  cua_buffer *b[NBUF];
  int nops = run_known_dag(rt, b);
  cua_op *root = known_dag(rt, b, &nops);
  cua_graph *g = NULL;
  ck_assert_int_eq(cua_graph_create(&g, rt, root, NULL), 0);
  cua_future *f = NULL;
  ck_assert_int_eq(cua_graph_launch(&f, g), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  cua_future_destroy(f);
  cua_graph_destroy(g);
  cua_op_destroy(root);
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  for (int i = 0; i < NBUF; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
  ck_assert_uint_gt(st.event_waits, 0);
  ck_assert_uint_gt(count(CUA_OBS_WAIT), 0);
  ck_assert_msg(count(CUA_OBS_RECORD) > 0, "%lu waits but no event record told",
                count(CUA_OBS_WAIT));
  ck_assert_msg(count(CUA_OBS_MARK) > 0, "no mark told");
  ck_assert_uint_eq(count(CUA_OBS_GRAPH_CAPTURE), 1);
  FILE *t = fopen(trace_path, "r");
  ck_assert_ptr_nonnull(t);
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, t);
  fclose(t);
  text[n] = '\0';
  ck_assert_msg(strstr(text, "\"name\":\"graph capture\"") != NULL,
                "no graph capture in the trace");
  unlink(trace_path);
}
END_TEST

/* A runtime with no observer says none was dropped. */
START_TEST(no_observer_no_drops) {
  cua_runtime *rt = open_with("");
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_uint_eq(st.observer_drops, 0);
  cua_runtime_destroy(rt);
}
END_TEST

/* The nvtx observer: a range pushed before and popped after each op's
 * launch, each with a message, and on CUDA the streams named; counted by
 * the NVTX tool library NVTX loads from $NVTX_INJECTION64_PATH, as it
 * loads Nsight Systems'. Results do not change. */
START_TEST(nvtx_ranges_around_launches) {
  char inject[4200];
  ck_assert_ptr_nonnull(
      realpath(built("tests/modules/.libs/nvtx-inject.so"), inject));
  setenv("NVTX_INJECTION64_PATH", inject, 1);
  cua_runtime *rt = open_with("observers = nvtx\n");
  cua_buffer *b[NBUF];
  int nops = run_known_dag(rt, b);
  for (int i = 0; i < NBUF; i++)
    cua_buffer_destroy(b[i]);
  cua_runtime_destroy(rt);
  void *dl = dlopen(inject, RTLD_NOW | RTLD_NOLOAD);
  ck_assert_msg(dl != NULL, "NVTX did not load %s", inject);
  void (*counts)(unsigned long *) =
      (void (*)(unsigned long *))dlsym(dl, "nvtx_inject_counts");
  ck_assert_ptr_nonnull(counts);
  unsigned long c[5];
  counts(c);
  dlclose(dl);
  /* One domain; a range per launched op (the DAG twice and the read-back),
   * each popped; streams named on CUDA only. */
  ck_assert_uint_eq(c[0], 1);
  ck_assert_uint_eq(c[1], (unsigned long)(2 * nops + 1));
  ck_assert_uint_eq(c[2], c[1]);
  if (strcmp(test_backend(), "cuda") == 0)
    ck_assert_uint_ge(c[3], 1);
  else
    ck_assert_uint_eq(c[3], 0);
  ck_assert_uint_eq(c[4], 0);
  printf("nvtx: %lu ranges, %lu streams named\n", c[1], c[3]);
}
END_TEST

/* Runtimes of one process given one trace path (one $CUASYNC_TRACE),
 * open at once and closed at once: each writes a whole trace into a file
 * of its own and renames it over the path, so the path holds one whole,
 * valid trace, the last closed. They wrote into one open file at once
 * (invalid JSON, most runs). */
typedef struct same_path {
  const char *extra;
  pthread_barrier_t *both;
} same_path;

static void *traced_runtime(void *arg) {
  same_path *sp = arg;
  cua_runtime *rt = open_with(sp->extra);
  cua_buffer *b[NBUF];
  (void)run_known_dag(rt, b);
  for (int i = 0; i < NBUF; i++)
    cua_buffer_destroy(b[i]);
  pthread_barrier_wait(sp->both);
  cua_runtime_destroy(rt);
  return NULL;
}

START_TEST(runtimes_sharing_a_trace_path_leave_one_whole_trace) {
  snprintf(trace_path, sizeof trace_path, "%s/trace-shared-%ld.json",
           built("tests"), (long)getpid());
  char extra[4400];
  snprintf(extra, sizeof extra,
           "observers = perfetto\n[observer.perfetto]\npath = %s\n",
           trace_path);
  for (int round = 0; round < 4; round++) {
    pthread_barrier_t both;
    pthread_barrier_init(&both, NULL, 4);
    same_path sp = {extra, &both};
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
      ck_assert_int_eq(pthread_create(&t[i], NULL, traced_runtime, &sp), 0);
    for (int i = 0; i < 4; i++)
      pthread_join(t[i], NULL);
    pthread_barrier_destroy(&both);
    char cmd[4400 + 128];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "
             "%s 2>&1",
             trace_path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    char out[1024] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    ck_assert_msg(pclose(p) == 0, "round %d: %s", round, out);
  }
  unlink(trace_path);
}
END_TEST

int main(void) {
  require_backend();
  Suite *s = suite_create("observers");
  TCase *tc = tcase_create("observers");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, perfetto_trace_of_a_known_dag, 0, 4);
  tcase_add_test(tc, perfetto_trace_over_two_devices);
  tcase_add_test(tc, cuasync_trace_variable);
  tcase_add_test(tc, perfetto_trace_is_utf8_whatever_the_names);
  tcase_add_test(tc, no_observer_no_drops);
  /* (the nvtx observer and its test library are built with CUDA) */
  if (access(built("tests/modules/.libs/nvtx-inject.so"), R_OK) == 0)
    tcase_add_test(tc, nvtx_ranges_around_launches);
  if (test_backend_on_cpu()) {
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, cuasync_trace_refusals);
    tcase_add_test(tc, lost_trace_says_where_and_why);
    tcase_add_test(tc, failing_observer_changes_nothing);
    tcase_add_test(tc, slow_observer_stalls_nothing);
    tcase_add_test(tc, commands_and_graph_captures_are_recorded);
    tcase_add_test(tc, runtimes_sharing_a_trace_path_leave_one_whole_trace);
  }
  suite_add_tcase(s, tc);
  return run_suite(s);
}
