/*
 * tests/helpers.h: fixtures shared by the Check suites.
 *
 * The test environment (tests/local.mk) sets CUASYNC_MODULE_PATH to the
 * modules of the build tree, CUASYNC_TEST_FIXTURES to tests/fixtures and
 * CUASYNC_TEST_BUILDDIR to the build tree, XDG_CACHE_HOME to tests/cache
 * there and CUASYNC_MODELS to memory (no test depends on another's
 * measurements), and unsets CUASYNC_CONFIG and CUASYNC_POLICY.
 */
#ifndef CUA_TESTS_HELPERS_H
#define CUA_TESTS_HELPERS_H

#include <cuasync.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/** The path of fixture file @p name (static buffer, one at a time). */
static inline const char *fixture(const char *name) {
  static char buf[4096];
  const char *dir = getenv("CUASYNC_TEST_FIXTURES");
  snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "tests/fixtures", name);
  return buf;
}

/** The path of a built file relative to the build tree (static buffer). */
static inline const char *built(const char *rel) {
  static char buf[4096];
  const char *dir = getenv("CUASYNC_TEST_BUILDDIR");
  snprintf(buf, sizeof buf, "%s/%s", dir ? dir : ".", rel);
  return buf;
}

/** Opens a runtime from INI text, ignoring the system configuration. The
 * text may name the backend; when it does not, the environment variable
 * CUASYNC_TEST_BACKEND (default "host") is used through a [runtime] line
 * prepended by the caller (see host_config()). */
static inline int open_text(cua_runtime **rt, const char *text) {
  cua_runtime_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.config_text = text;
  o.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  return cua_runtime_create_ex(rt, &o);
}

/** Asserts that @p call returned @p code and that the message contains
 * @p needle (NULL: any). */
#define ck_assert_err(rt, call, code, needle)                                  \
  do {                                                                         \
    int rc_ = (call);                                                          \
    ck_assert_msg(rc_ == (code), "%s returned %s (%d), expected %s: %s",       \
                  #call, cua_err_name(rc_), rc_, cua_err_name(code),           \
                  cua_runtime_error(rt));                                      \
    if ((needle) != NULL)                                                      \
      ck_assert_msg(strstr(cua_runtime_error(rt), (needle)) != NULL,           \
                    "message '%s' lacks '%s'", cua_runtime_error(rt),          \
                    (const char *)(needle));                                   \
  } while (0)

/** Runs a suite with fork mode on; returns the process exit code. */
static inline int run_suite(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* ------------------------------------------------------------------------
 * Backend selection: the op, ordering and random-DAG suites run on the
 * backend named by $CUASYNC_TEST_BACKEND (default host; tests/cuda/ and
 * tests/launchtime/ rerun them on cuda and on the launchtime test backend).
 * On "cuda" without a usable GPU they exit 77 saying why: a skipped CUDA
 * test did not pass. */

static inline const char *test_backend(void) {
  const char *b = getenv("CUASYNC_TEST_BACKEND");
  return b && *b ? b : "host";
}

/** 1 if the test backend runs ops on the CPU in host memory (host,
 * launchtime, sim with data = real), where a stream function does its work
 * itself; 0 on CUDA. */
static inline int test_backend_on_cpu(void) {
  return strcmp(test_backend(), "host") == 0 ||
         strcmp(test_backend(), "launchtime") == 0 ||
         strcmp(test_backend(), "sim") == 0;
}

/** The [backend.sim] section the suites run the sim backend with: real
 * data, so that results can be checked. */
#define SIM_TEST_SECTION "[backend.sim]\ndata = real\n"

/** The [backend.NAME] section that gives a CPU test backend two virtual
 * devices ("" on CUDA, which has the devices it has). Static storage. */
static inline const char *two_devices_section(void) {
  static char buf[128];
  if (!test_backend_on_cpu())
    return "";
  if (strcmp(test_backend(), "sim") == 0)
    return SIM_TEST_SECTION "gpus = 2\n";
  snprintf(buf, sizeof buf, "[backend.%s]\ndevices = 2\n", test_backend());
  return buf;
}

/** Opens a runtime on the test backend with @p policy and extra INI text
 * (sections), then $CUASYNC_TEST_EXTRA's (a suite run again with another
 * backend setting), or exits 77 when the CUDA backend has no device. */
static inline cua_runtime *open_policy(const char *policy, const char *extra) {
  char text[4096];
  const char *more = getenv("CUASYNC_TEST_EXTRA");
  /* The sim backend with real data, unless the text has its section. */
  const char *sim =
      strcmp(test_backend(), "sim") == 0 &&
              (extra == NULL || strstr(extra, "[backend.sim]") == NULL)
          ? SIM_TEST_SECTION
          : "";
  snprintf(text, sizeof text,
           "[runtime]\nbackend = %s\npolicy = %s\n%s\n%s\n%s", test_backend(),
           policy, extra ? extra : "", more ? more : "", sim);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  if (rc == CUA_ERR_NO_DEVICE || rc == CUA_ERR_MODULE_NOT_FOUND) {
    if (!test_backend_on_cpu()) {
      printf("skipped: backend %s unavailable: %s\n", test_backend(),
             cua_runtime_error(NULL));
      exit(77);
    }
  }
  ck_assert_msg(rc == 0, "runtime: %s: %s", cua_err_name(rc),
                cua_runtime_error(NULL));
  return rt;
}

/** Exits 77 up front if the test backend is absent. The probe runs in a
 * child process: a CUDA context does not survive fork(), so the parent,
 * which forks every test, must never create one. */
static inline void require_backend(void) {
  int pfd[2];
  if (pipe(pfd) != 0) {
    perror("pipe");
    exit(99);
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    cua_runtime *rt = NULL;
    char text[256];
    snprintf(text, sizeof text,
             "[runtime]\nbackend = %s\npolicy = single-stream\n",
             test_backend());
    int rc = open_text(&rt, text);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s (%s)", cua_runtime_error(NULL),
             cua_err_name(rc));
    if (write(pfd[1], msg, strlen(msg)) < 0)
      rc = -1;
    if (rc == 0)
      cua_runtime_destroy(rt);
    _exit(rc == 0 ? 0 : 1);
  }
  close(pfd[1]);
  char msg[1024] = "";
  ssize_t n = read(pfd[0], msg, sizeof msg - 1);
  msg[n > 0 ? n : 0] = '\0';
  close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("skipped: backend %s unavailable: %s\n", test_backend(), msg);
    /* The CPU backends are always built: missing, they are a failure. */
    exit(test_backend_on_cpu() ? 99 : 77);
  }
}

/** Reads a float buffer back (submit + wait a d2h copy). */
static inline void read_back(cua_runtime *rt, cua_buffer *b, float *out) {
  cua_op *op;
  ck_assert_int_eq(cua_op_memcpy_d2h(&op, out, b, 0, cua_buffer_size(b)), 0);
  int rc = cua_submit_wait(rt, op, NULL, NULL);
  ck_assert_msg(rc == 0, "read back: %s", cua_runtime_error(rt));
  cua_op_destroy(op);
}

/** Submits @p op (consuming the caller's reference) and waits. */
static inline int run_op(cua_runtime *rt, cua_op *op) {
  int rc = cua_submit_wait(rt, op, NULL, NULL);
  cua_op_destroy(op);
  return rc;
}
/** then(...then(ops[0], ops[1])..., ops[n - 1]), consuming the caller's
 * references to @p ops (n >= 1). */
static inline cua_op *then_chain(cua_op *const *ops, size_t n) {
  cua_op *chain = ops[0];
  for (size_t k = 1; k < n; k++) {
    cua_op *t;
    ck_assert_int_eq(cua_op_then(&t, chain, ops[k]), 0);
    cua_op_destroy(chain);
    cua_op_destroy(ops[k]);
    chain = t;
  }
  return chain;
}
#endif /* CUA_TESTS_HELPERS_H */
