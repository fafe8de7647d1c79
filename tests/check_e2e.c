/*
 * tests/check_e2e.c: from an INI file to a completed future, and the
 * runtime-level errors of policy modules (create() failing, invalid
 * placements, fallback).
 */
#include "helpers.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N 1024

typedef struct check {
  float *host;
  size_t n;
  float want;
  int bad;
} check;

static int check_values(void *arg, void **result) {
  check *c = arg;
  for (size_t i = 0; i < c->n; i++)
    if (c->host[i] != c->want)
      c->bad++;
  *result = c;
  return c->bad ? CUA_ERR_OP_FAILED : 0;
}

START_TEST(ini_file_to_completed_future) {
  cua_runtime *rt = NULL;
  int rc = cua_runtime_create(&rt, fixture("e2e.ini"));
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  ck_assert_str_eq(cua_runtime_backend(rt), "host");
  ck_assert_str_eq(cua_runtime_policy(rt), "single-stream");
  ck_assert_ptr_nonnull(cua_runtime_config_path(rt));
  /* allocate (lazily), fill, copy back, check on the host */
  cua_buffer *buf;
  ck_assert_int_eq(
      cua_buffer_create(&buf, rt, 0, N * sizeof(float), CUA_BUFFER_LAZY), 0);
  float host[N];
  check c = {host, N, 3.5f, 0};
  cua_op *alloc, *fill, *copy, *verify, *a, *b, *dag;
  ck_assert_int_eq(cua_op_alloc(&alloc, buf), 0);
  ck_assert_int_eq(cua_op_fill(&fill, buf, 3.5f), 0);
  ck_assert_int_eq(cua_op_memcpy_d2h(&copy, host, buf, 0, sizeof host), 0);
  ck_assert_int_eq(cua_op_host(&verify, rt, check_values, &c), 0);
  ck_assert_int_eq(cua_op_then(&a, alloc, fill), 0);
  ck_assert_int_eq(cua_op_then(&b, a, copy), 0);
  ck_assert_int_eq(cua_op_then(&dag, b, verify), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, dag, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  void *res = NULL;
  ck_assert_int_eq(cua_future_result(f, &res), 0);
  ck_assert_ptr_eq(res, &c);
  ck_assert_int_eq(c.bad, 0);
  cua_future_destroy(f);
  cua_op *ops[] = {alloc, fill, copy, verify, a, b, dag};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(buf);
  cua_stats st = {.size = sizeof st};
  ck_assert_int_eq(cua_runtime_stats(rt, &st), 0);
  ck_assert_uint_eq(st.submissions, 1);
  ck_assert_uint_eq(st.events_recorded, 0); /* one stream: no events */
  ck_assert_uint_eq(st.streams, 1);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(builtin_default_without_any_file) {
  cua_runtime_options o = {.size = sizeof o,
                           .flags = CUA_RUNTIME_NO_SYSTEM_CONFIG |
                                    CUA_RUNTIME_IGNORE_ENV};
  cua_runtime *rt;
  /* The module path comes from the environment in the build tree, so only
   * the configuration is built in here. */
  o.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  ck_assert_int_eq(cua_runtime_create_ex(&rt, &o), 0);
  ck_assert_ptr_null(cua_runtime_config_path(rt));
  ck_assert_str_eq(cua_runtime_policy(rt), "round-robin");
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(policy_create_failure_is_reported_with_its_message) {
  cua_runtime *rt = NULL;
  int rc =
      open_text(&rt, "[runtime]\nbackend = host\npolicy = broken-create\n");
  ck_assert_int_eq(rc, CUA_ERR_MODULE_CREATE);
  ck_assert_ptr_null(rt);
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m, "<text>:3:") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "create() failed") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "broken-create") != NULL, "%s", m);
}
END_TEST

START_TEST(invalid_placement_fails_the_op_naming_the_policy) {
  cua_runtime *rt = NULL;
  int rc =
      open_text(&rt, "[runtime]\nbackend = host\npolicy = broken-placement\n");
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  cua_op *op;
  ck_assert_int_eq(cua_op_fill(&op, b, 1.0f), 0);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), CUA_ERR_BAD_PLACEMENT);
  const char *m = cua_future_error(f);
  ck_assert_msg(strstr(m, "policy 'broken-placement'") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "device 99") != NULL, "%s", m);
  /* An op without a name hint is named by its kind, as everywhere. */
  ck_assert_msg(strstr(m, "placed op 'fill' on device 99, which does not "
                          "exist (the runtime has 1 device, 0 to 0)") != NULL,
                "%s", m);
  cua_future_destroy(f);
  /* The runtime stays usable with a working policy. */
  ck_assert_int_eq(cua_runtime_set_policy(rt, "single-stream"), 0);
  ck_assert_int_eq(cua_submit_wait(rt, op, NULL, NULL), 0);
  cua_op_destroy(op);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(policy_error_falls_back_to_single_stream_when_configured) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = "
                          "broken-placement\non_policy_error = fallback\n");
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  cua_op *op;
  ck_assert_int_eq(cua_op_fill(&op, b, 1.0f), 0);
  ck_assert_int_eq(run_op(rt, op), 0);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

/* The fallback starts from a blank placement: a node (or reserved field)
 * the failed policy set must not make single-stream's placement fail too. */
START_TEST(fallback_ignores_the_failed_policys_node) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = "
                          "broken-placement\non_policy_error = fallback\n"
                          "[policy.broken-placement]\nmode = node\n");
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  cua_op *op;
  ck_assert_int_eq(cua_op_fill(&op, b, 1.0f), 0);
  ck_assert_int_eq(run_op(rt, op), 0);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

/* A [device.N] policy's failures: the op fails with a message that names
 * the stream count and the device the op must run on; with
 * on_policy_error = fallback, single-stream places it on that device. */
START_TEST(device_policy_errors_fall_back_when_configured) {
  static const char *const modes[] = {"stream", "fail", "node"};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) {
    for (int fallback = 0; fallback <= 1; fallback++) {
      char text[512];
      snprintf(text, sizeof text,
               "[runtime]\nbackend = host\npolicy = round-robin\n%s"
               "[device.0]\npolicy = broken-placement\n"
               "[policy.broken-placement]\nmode = %s\n",
               fallback ? "on_policy_error = fallback\n" : "", modes[i]);
      cua_runtime *rt = NULL;
      int rc = open_text(&rt, text);
      ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
      cua_buffer *b;
      ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
      cua_op *op;
      ck_assert_int_eq(cua_op_fill(&op, b, 1.0f), 0);
      cua_future *f;
      ck_assert_int_eq(cua_submit(&f, rt, op, NULL), 0);
      rc = cua_future_wait(f);
      const char *m = cua_future_error(f);
      if (fallback) {
        ck_assert_msg(rc == 0, "mode %s: %s", modes[i], m);
      } else if (i == 1) {
        ck_assert_int_eq(rc, CUA_ERR_POLICY);
        ck_assert_msg(strstr(m, "refusing op") != NULL, "%s", m);
      } else {
        ck_assert_int_eq(rc, CUA_ERR_BAD_PLACEMENT);
        ck_assert_msg(strstr(m, "policy 'broken-placement'") != NULL, "%s", m);
        if (i == 0) {
          ck_assert_msg(strstr(m, "stream 99, which does not exist (that "
                                  "device has ") != NULL,
                        "%s", m);
          ck_assert_msg(strstr(m, "; the op must run on device 0)") != NULL,
                        "%s", m);
        } else {
          ck_assert_msg(strstr(m, "on node 1") != NULL, "%s", m);
        }
      }
      cua_future_destroy(f);
      cua_op_destroy(op);
      cua_buffer_destroy(b);
      cua_runtime_destroy(rt);
    }
  }
}
END_TEST

START_TEST(missing_policy_lists_the_paths_searched) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = nope\n");
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NOT_FOUND);
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m, "<text>:3:") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "nope") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "policies/.libs") != NULL, "%s", m);
}
END_TEST

START_TEST(env_policy_overrides_the_file) {
  setenv("CUASYNC_POLICY", "single-stream", 1);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = round-robin\n");
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  ck_assert_str_eq(cua_runtime_policy(rt), "single-stream");
  cua_runtime_destroy(rt);
  setenv("CUASYNC_POLICY", "nope", 1);
  rc = open_text(&rt, "[runtime]\nbackend = host\n");
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NOT_FOUND);
  ck_assert_msg(strstr(cua_runtime_error(NULL), "$CUASYNC_POLICY") != NULL,
                "%s", cua_runtime_error(NULL));
  unsetenv("CUASYNC_POLICY");
}
END_TEST

START_TEST(unknown_policy_section_is_an_error_with_its_line) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\n\n[policy.nosuch]\n");
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_UNKNOWN_SECTION);
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m,
                       "<text>:4: [policy.nosuch]: no policy named "
                       "'nosuch' is installed or on the policy path") != NULL &&
                    strstr(m, "$CUASYNC_POLICY") == NULL,
                "%s", m);
  /* A section for a policy the configuration loads by path, which
   * $CUASYNC_POLICY replaced: the message says why it is not found. */
  setenv("CUASYNC_POLICY", "round-robin", 1);
  rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = ./nosuch.so\n"
                      "[policy.nosuch]\n");
  unsetenv("CUASYNC_POLICY");
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_UNKNOWN_SECTION);
  m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m, "; $CUASYNC_POLICY replaced [runtime] policy, which "
                          "may have named this one by its path") != NULL,
                "%s", m);
}
END_TEST

START_TEST(policy_section_validated_against_schema) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = round-robin\n"
                          "[policy.round-robin]\nstreams = 0\n");
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_OUT_OF_RANGE);
  ck_assert_msg(strstr(cua_runtime_error(NULL), "<text>:5:") != NULL, "%s",
                cua_runtime_error(NULL));
}
END_TEST

START_TEST(device_section_beyond_device_count) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\n[device.3]\n"
                          "policy = single-stream\n");
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_OUT_OF_RANGE);
  ck_assert_msg(strstr(cua_runtime_error(NULL), "<text>:3:") != NULL, "%s",
                cua_runtime_error(NULL));
}
END_TEST

START_TEST(unknown_backend_section) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\n[backend.opencl]\n");
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_UNKNOWN_SECTION);
  ck_assert_msg(strstr(cua_runtime_error(NULL), "<text>:3:") != NULL, "%s",
                cua_runtime_error(NULL));
}
END_TEST

/* What auto must pick is decided by what this machine has: the CUDA
 * backend when it opens (a built module and a device), else host. The test
 * runs in a child of the suite (fork mode), so the probe's CUDA context
 * does not outlive it. */
START_TEST(auto_backend_picks_cuda_when_it_opens_else_host) {
  cua_runtime *rt = NULL;
  int rc =
      open_text(&rt, "[runtime]\nbackend = cuda\npolicy = single-stream\n");
  /* Any failure (no module built, no driver, no device) means host. */
  const char *want = rc == 0 ? "cuda" : "host";
  cua_runtime_destroy(rt);
  rt = NULL;
  rc = open_text(&rt, "[runtime]\nbackend = auto\npolicy = single-stream\n");
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  ck_assert_str_eq(cua_runtime_backend(rt), want);
  cua_runtime_destroy(rt);
}
END_TEST

/* backend = auto with a device no backend has: CUA_ERR_BAD_DEVICE at the
 * devices line, as with a named backend (it was CUA_ERR_NO_DEVICE, with
 * no line and a stray ';'). */
START_TEST(auto_backend_without_the_named_device_cites_the_line) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = auto\ndevices = 200\n");
  ck_assert_int_eq(rc, CUA_ERR_BAD_DEVICE);
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strncmp(m, "<text>:3: devices: ", 19) == 0, "%s", m);
  ck_assert_msg(strstr(m, "no backend opened: ") != NULL, "%s", m);
  ck_assert_msg(m[strlen(m) - 1] != ';', "%s", m);
}
END_TEST

/* Out of file descriptors, backend = auto says so, instead of that no
 * backend module is there. */
START_TEST(auto_backend_out_of_file_descriptors_says_so) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    struct rlimit rl = {64, 64};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
      _exit(3);
    while (dup(0) >= 0)
      ;
    cua_runtime *rt = NULL;
    int rc = open_text(&rt, "[runtime]\nbackend = auto\n");
    const char *m = cua_runtime_error(NULL);
    if (rc == 0)
      _exit(4);
    if (strstr(m, "Too many open files") == NULL) {
      fprintf(stderr, "%s: %s\n", cua_err_name(rc), m);
      _exit(5);
    }
    _exit(0);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child status %d", status);
}
END_TEST

/* A host step that says it began, then holds its completion thread until
 * the test lets it go. */
static atomic_int held_began, held_release;
static int held_step(void *arg, void **result) {
  (void)arg;
  (void)result;
  atomic_store(&held_began, 1);
  struct timespec ms = {0, 1000000};
  while (!atomic_load(&held_release))
    nanosleep(&ms, NULL);
  return 0;
}

/* A runtime does not survive fork(): the child has none of its threads.
 * There its calls fail with CUA_ERR_CANCELED and say so, a future of the
 * parent's still pending is not waited for (it never completes there),
 * and destroying it leaves it alone (it crashed joining threads that are
 * not there); a runtime made in the child works.
 *
 * The parent forks only once its runtime's threads are at rest (the
 * completion thread in the held step, the others waiting for work): a
 * child forked while another thread is inside the allocator of an
 * AddressSanitizer build (GCC 12's, which takes no lock around fork())
 * can hang at its first malloc(), which is the sanitizer's, not the
 * runtime's (CI saw it). */
START_TEST(a_runtime_made_before_fork_is_refused_in_the_child) {
  cua_runtime *rt = NULL;
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\n"), 0);
  cua_buffer *b = NULL;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 4096, 0), 0);
  cua_op *held = NULL, *fill = NULL;
  atomic_store(&held_began, 0);
  atomic_store(&held_release, 0);
  ck_assert_int_eq(cua_op_host(&held, rt, held_step, NULL), 0);
  cua_future *pending = NULL;
  ck_assert_int_eq(cua_submit(&pending, rt, held, NULL), 0);
  ck_assert_int_eq(cua_op_fill(&fill, b, 1.0f), 0);
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 20000 && !atomic_load(&held_began); i++)
    nanosleep(&ms, NULL);
  ck_assert_int_eq(atomic_load(&held_began), 1);
  nanosleep(&ms, NULL); /* the other threads back at rest */
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    cua_future *f = NULL;
    int rc = cua_submit(&f, rt, fill, NULL);
    if (rc != CUA_ERR_CANCELED ||
        strstr(cua_runtime_error(rt), "cua_submit: the runtime was made "
                                      "before this process was forked") == NULL)
      _exit(3);
    if (cua_future_wait(pending) != CUA_ERR_CANCELED ||
        cua_runtime_synchronize(rt) != CUA_ERR_CANCELED)
      _exit(4);
    cua_runtime_destroy(rt); /* left alone, said on stderr */
#if defined(__SANITIZE_THREAD__)
    /* (ThreadSanitizer ends a child of a threaded process that starts
     * threads) */
    _exit(0);
#endif
    cua_runtime *mine = NULL;
    if (open_text(&mine, "[runtime]\nbackend = host\n") != 0)
      _exit(5);
    cua_buffer *x = NULL;
    cua_op *op = NULL;
    if (cua_buffer_create(&x, mine, 0, 4096, 0) != 0 ||
        cua_op_fill(&op, x, 2.0f) != 0 ||
        cua_submit_wait(mine, op, NULL, NULL) != 0)
      _exit(6);
    cua_op_destroy(op);
    cua_buffer_destroy(x);
    cua_runtime_destroy(mine);
    _exit(0);
  }
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "child status %d", status);
  /* The parent's runtime goes on. */
  ck_assert_int_eq(cua_future_poll(pending), CUA_ERR_AGAIN);
  atomic_store(&held_release, 1);
  ck_assert_int_eq(cua_future_wait(pending), 0);
  ck_assert_int_eq(cua_submit_wait(rt, fill, NULL, NULL), 0);
  cua_future_destroy(pending);
  cua_op_destroy(held);
  cua_op_destroy(fill);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

/* Another thread opening and closing runtimes while the program forks:
 * the process-wide locks it takes (the loader's around dlopen(), the
 * policy registry's) were left locked in a child forked while it held
 * one, and the child's first runtime hung on it. Each child makes a
 * runtime, runs an op on it and exits; one that has not within 10 s is
 * the hang. (Not under the sanitizers: their runtimes' own locks are not
 * held across fork() in GCC 12, whatever the program does.) */
static atomic_int opener_stop;
static void *opener(void *arg) {
  (void)arg;
  while (!atomic_load(&opener_stop)) {
    cua_runtime *rt = NULL;
    if (open_text(&rt, "[runtime]\nbackend = host\npolicy = affinity\n"
                       "[policy.affinity]\nwithin = round-robin\n") == 0)
      cua_runtime_destroy(rt);
  }
  return NULL;
}

START_TEST(a_child_forked_while_runtimes_open_can_make_one) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  fprintf(stderr, "a_child_forked_while_runtimes_open_can_make_one: "
                  "skipped under a sanitizer\n");
  return;
#endif
  atomic_store(&opener_stop, 0);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, opener, NULL), 0);
  int hung = 0, failed = 0;
  for (int i = 0; i < 500 && !hung; i++) {
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      cua_runtime *rt = NULL;
      cua_op *op = NULL;
      if (open_text(&rt, "[runtime]\nbackend = host\npolicy = affinity\n"
                         "[policy.affinity]\nwithin = round-robin\n") != 0 ||
          cua_op_spin(&op, rt, 1000, 1) != 0 ||
          cua_submit_wait(rt, op, NULL, NULL) != 0)
        _exit(5);
      cua_op_destroy(op);
      cua_runtime_destroy(rt);
      _exit(0);
    }
    int status = 0;
    struct timespec ms = {0, 1000000};
    int k = 0;
    while (waitpid(pid, &status, WNOHANG) == 0 && k < 10000) {
      nanosleep(&ms, NULL);
      k++;
    }
    if (k == 10000) {
      hung = 1;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
    }
  }
  atomic_store(&opener_stop, 1);
  pthread_join(th, NULL);
  ck_assert_msg(!hung, "a forked child hung making a runtime");
  ck_assert_int_eq(failed, 0);
}
END_TEST

/* A free given an explicit stream on another device than its buffer's:
 * the op fails saying where it must run (the message said only that the
 * placement was not valid). */
START_TEST(explicit_placement_says_where_an_op_must_run) {
  cua_runtime *rt = NULL;
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\npolicy = "
                                  "round-robin\n[backend.host]\ndevices = 2\n"),
                   0);
  cua_buffer *b = NULL;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 1, 4096, 0), 0);
  cua_op *fr = NULL;
  ck_assert_int_eq(cua_op_free(&fr, b), 0);
  cua_future *f = NULL;
  ck_assert_int_eq(cua_submit_on(&f, rt, fr, 0, 0), 0);
  ck_assert_int_eq(cua_future_wait(f), CUA_ERR_BAD_PLACEMENT);
  ck_assert_msg(strstr(cua_future_error(f),
                       "explicit placement device 0 stream 0 is not valid for "
                       "op 'free' (it must run on device 1, where its buffers "
                       "live)") != NULL,
                "%s", cua_future_error(f));
  cua_future_destroy(f);
  cua_op_destroy(fr);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(virtual_host_devices_and_device_policy) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = round-robin\n"
                          "[backend.host]\ndevices = 3\n"
                          "[device.1]\npolicy = single-stream\n");
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  ck_assert_int_eq(cua_device_count(rt), 3);
  cua_device_info di = {.size = sizeof di};
  ck_assert_int_eq(cua_device_get_info(rt, 2, &di), 0);
  ck_assert_int_eq(cua_device_get_info(rt, 3, &di), CUA_ERR_BAD_DEVICE);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(policy_help_lists_the_policies_and_fails_the_open) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = help\n");
  ck_assert_int_eq(rc, CUA_ERR_INVAL);
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m, " round-robin (streams, by_level, devices)") &&
                    strstr(m, " least-loaded (") && strstr(m, " affinity (") &&
                    strstr(m, " single-stream (") &&
                    strstr(m, " heft (streams, default_cost_ns, peer_gbps, "
                              "order, wait_ns, device_wait_ns)") &&
                    strstr(m, " dmda (") && strstr(m, " work-stealing (") &&
                    strstr(m, "cuasync-info --policies"),
                "%s", m);
}
END_TEST

/* A descriptor may leave out its version and description (the macro makes
 * them NULL): policy = help writes "-" for them, as cuasync-info does,
 * never a NULL through %s. tests/modules/bare.c has neither. */
START_TEST(policy_help_writes_a_dash_for_a_missing_version) {
  char path[] = "/tmp/cuasync-help-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  unlink(path);
  fflush(stderr);
  int saved = dup(STDERR_FILENO);
  ck_assert_int_ge(saved, 0);
  ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = help\n");
  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  ck_assert_int_eq(rc, CUA_ERR_INVAL);
  ck_assert_msg(strstr(cua_runtime_error(NULL), " bare ()") != NULL, "%s",
                cua_runtime_error(NULL));
  char text[65536];
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  ck_assert_int_gt(n, 0);
  text[n] = '\0';
  /* The line of bare alone in the messages: the whole text is too long
   * for one. */
  const char *line = strstr(text, "\n  bare ");
  ck_assert_msg(line != NULL, "no line for bare in: %.200s", text);
  static const char want[] = "\n  bare -: - (";
  ck_assert_msg(strncmp(line, want, sizeof want - 1) == 0, "%.80s", line + 1);
  ck_assert_msg(strstr(text, "(null)") == NULL, "%.80s",
                strstr(text, "(null)"));
}
END_TEST

/* Every policy's INI section is checked against its schema, with the line
 * of the offending key. */
static const struct bad_param {
  const char *policy, *line, *needle;
  int code;
} bad_params[] = {
    {"single-stream", "device = -2", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"single-stream", "device = zero", "device", CUA_ERR_CONFIG_BAD_VALUE},
    {"single-stream", "streams = 2", "streams", CUA_ERR_CONFIG_UNKNOWN_KEY},
    {"round-robin", "streams = 0", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"round-robin", "streams = 4096", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"round-robin", "by_level = perhaps", "by_level", CUA_ERR_CONFIG_BAD_VALUE},
    {"round-robin", "devices = some", "all", CUA_ERR_CONFIG_BAD_VALUE},
    {"least-loaded", "measure = bytes", "ops", CUA_ERR_CONFIG_BAD_VALUE},
    {"least-loaded", "alpha = 1.5", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"least-loaded", "default_cost_ns = -1", "range",
     CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"least-loaded", "streams = four", "streams", CUA_ERR_CONFIG_BAD_VALUE},
    {"affinity", "fallback = never", "spread", CUA_ERR_CONFIG_BAD_VALUE},
    {"affinity", "within = round-robin\nwithin = single-stream", "within",
     CUA_ERR_CONFIG_DUPLICATE_KEY},
    {"affinity", "rules = tag:a -> 0", "rules", CUA_ERR_CONFIG_UNKNOWN_KEY},
    {"heft", "streams = 0", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"heft", "peer_gbps = 0", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"heft", "default_cost_ns = soon", "default_cost_ns",
     CUA_ERR_CONFIG_BAD_VALUE},
    {"heft", "order = random", "placement", CUA_ERR_CONFIG_BAD_VALUE},
    {"dmda", "default_cost_ns = -1", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
    {"dmda", "alpha = 0.5", "unknown key", CUA_ERR_CONFIG_UNKNOWN_KEY},
    {"dmda", "peer_gbps = fast", "peer_gbps", CUA_ERR_CONFIG_BAD_VALUE},
    {"work-stealing", "steal = maybe", "steal", CUA_ERR_CONFIG_BAD_VALUE},
    {"work-stealing", "streams = 2000", "range", CUA_ERR_CONFIG_OUT_OF_RANGE},
};

START_TEST(policy_parameters_are_validated_with_their_line) {
  const struct bad_param *b = &bad_params[_i];
  char text[512];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = %s\n\n[policy.%s]\n%s\n",
           b->policy, b->policy, b->line);
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  ck_assert_msg(rc == b->code, "%s: '%s' gave %s: %s", b->policy, b->line,
                cua_err_name(rc), cua_runtime_error(NULL));
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m, "<text>:6:") != NULL ||
                    (b->code == CUA_ERR_CONFIG_DUPLICATE_KEY &&
                     strstr(m, "<text>:7:") != NULL),
                "%s", m);
  ck_assert_msg(strstr(m, b->needle) != NULL, "'%s' lacks '%s'", m, b->needle);
}
END_TEST

START_TEST(affinity_rule_errors_fail_create_quoting_the_rule) {
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = affinity\n"
                          "[policy.affinity]\nrule = tag prefill to 0\n");
  ck_assert_int_eq(rc, CUA_ERR_MODULE_CREATE);
  ck_assert_msg(strstr(cua_runtime_error(NULL), "tag prefill to 0") != NULL,
                "%s", cua_runtime_error(NULL));
  rc = open_text(&rt, "[runtime]\nbackend = host\npolicy = affinity\n"
                      "[policy.affinity]\nrule = tag:a -> 5\n");
  ck_assert_int_eq(rc, CUA_ERR_MODULE_CREATE);
  ck_assert_msg(strstr(cua_runtime_error(NULL), "tag:a -> 5") != NULL, "%s",
                cua_runtime_error(NULL));
}
END_TEST

/* affinity's `within` naming affinity itself, by any spelling, recursed
 * until the stack overflowed: the check compared names as written. The
 * host now compares the loaded module (and the name it declares) with
 * every policy being created around the nested one. */
static void expect_self_nesting_refused(const char *within,
                                        const char *needle) {
  char text[8192];
  cua_runtime *rt = NULL;
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = affinity\n"
           "[policy.affinity]\nwithin = %s\n",
           within);
  int rc = open_text(&rt, text);
  ck_assert_msg(rc == CUA_ERR_MODULE_CREATE, "within = %s: %s: %s", within,
                cua_err_name(rc), cua_runtime_error(NULL));
  ck_assert_ptr_null(rt);
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m, needle) != NULL, "within = %s: '%s' lacks '%s'",
                within, m, needle);
}

#define SELF "a policy cannot nest itself: "

START_TEST(affinity_within_itself_by_path_is_refused) {
  char path[4096], dir[] = "/tmp/cuasync-nest-XXXXXX", link[4200];
  snprintf(path, sizeof path, "%s", built("policies/.libs/affinity.so"));
  expect_self_nesting_refused(path, SELF);
  expect_self_nesting_refused("affinity", "name another policy");
  /* Other spellings of the same file. */
  char *slash = strrchr(path, '/');
  char spelled[4200];
  snprintf(spelled, sizeof spelled, "%.*s/.//%s", (int)(slash - path), path,
           slash + 1);
  expect_self_nesting_refused(spelled, SELF);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(link, sizeof link, "%s/other-name.so", dir);
  ck_assert_int_eq(symlink(path, link), 0);
  expect_self_nesting_refused(link, SELF);
  unlink(link);
  /* A copy is another file, but the same policy. */
  snprintf(link, sizeof link, "%s/copy.so", dir);
  char cmd[8500];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, link);
  ck_assert_int_eq(system(cmd), 0);
  expect_self_nesting_refused(link, SELF);
  unlink(link);
  rmdir(dir);
}
END_TEST

/* The same check holds when the outer policy is opened by path and the
 * nested one by name. */
START_TEST(affinity_by_path_within_itself_by_other_path_is_refused) {
  char text[16384], path[4096];
  cua_runtime *rt = NULL;
  snprintf(path, sizeof path, "%s", built("policies/.libs/affinity.so"));
  char *slash = strrchr(path, '/');
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = %s\n"
           "[policy.affinity]\nwithin = %.*s/./%s\n",
           path, (int)(slash - path), path, slash + 1);
  ck_assert_err(NULL, open_text(&rt, text), CUA_ERR_MODULE_CREATE,
                "a policy cannot nest itself");
  /* A legitimate nesting still works. */
  ck_assert_int_eq(open_text(&rt,
                             "[runtime]\nbackend = host\npolicy = affinity\n"
                             "[policy.affinity]\nwithin = single-stream\n"),
                   0);
  cua_runtime_destroy(rt);
}
END_TEST

/* Allocation failures on the policy-open path. The suite is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc (tests/local.mk), so that the
 * k-th allocation made by the core (linked in statically) can be made to fail;
 * modules and libc allocate through the real functions (Check, linked
 * statically, through these too). */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
static long fail_at = -1, nallocs;
/* While counting (steady_state_allocates_nothing_per_op), every allocation
 * the core makes, on any of its threads. */
static atomic_int counting;
static atomic_long counted;

static void count_one(void) {
  if (atomic_load_explicit(&counting, memory_order_relaxed))
    atomic_fetch_add(&counted, 1);
}

void *__wrap_malloc(size_t n) {
  count_one();
  if (fail_at >= 0 && nallocs++ == fail_at)
    return NULL;
  return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size) {
  count_one();
  if (fail_at >= 0 && nallocs++ == fail_at)
    return NULL;
  return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
  count_one();
  return __real_realloc(p, n);
}

/* cua__polinst_open() did not check the copy of the policy's name, and a
 * nested open then compared a name with NULL (SIGSEGV). Every allocation
 * of opening affinity (which nests round-robin) fails in turn: each must
 * give an error naming the lack of memory, and none may crash. */
START_TEST(policy_open_survives_each_failed_allocation) {
  cua_runtime *rt = NULL;
  ck_assert_int_eq(
      open_text(&rt, "[runtime]\nbackend = host\npolicy = single-stream\n"), 0);
  long k;
  for (k = 0; k < 1000; k++) {
    cua_policy *pol = NULL;
    nallocs = 0;
    fail_at = k;
    int rc = cua_policy_open(&pol, rt, "affinity");
    fail_at = -1;
    if (rc == 0) {
      cua_policy_close(pol);
      if (nallocs <= k)
        break; /* no allocation failed: every one has been tried */
      continue;
    }
    const char *m = cua_runtime_error(rt);
    ck_assert_msg(rc == CUA_ERR_NOMEM || rc == CUA_ERR_MODULE_CREATE,
                  "allocation %ld: %s: %s", k, cua_err_name(rc), m);
    ck_assert_msg(strstr(m, "out of") != NULL || strstr(m, "NOMEM") != NULL,
                  "allocation %ld: %s: %s", k, cua_err_name(rc), m);
  }
  ck_assert_msg(k > 3 && k < 1000, "%ld allocations", k);
  cua_runtime_destroy(rt);
}
END_TEST

/* The hot path (issue 9): once a runtime is warm, a submission allocates
 * nothing from the heap, per op or per submission: its ops, nodes,
 * submission, points and command lists come from the runtime's pools, and
 * what a stream function's or a kernel's launch needs lives in its node.
 * Counted here are the allocations of the core (linked in statically) on
 * every thread, from cua_submit() until the futures are ready, for a DAG
 * of every kind of op the host backend runs, with the ops already built;
 * each stream function submits one more op, as a program that makes work
 * as it goes does. On the host backend and on the launchtime test backend,
 * which runs stream functions inside launch(), as CUDA does: there the
 * nested submission's commands are deferred to the end of the list being
 * applied (core/executor.c). */
int cua__pool_keeps(void); /* core/pool.c */

typedef struct steady {
  cua_runtime *rt;
  cua_op *nested; /* what each stream function submits */
  atomic_int calls;
  atomic_int nfuts;
  cua_future *futs[16];
} steady;

static int counted_fn(cua_stream_ctx *ctx, void *arg) {
  steady *st = arg;
  atomic_fetch_add(&st->calls, 1);
  int k = atomic_fetch_add(&st->nfuts, 1);
  if (k >= 16 || cua_submit(&st->futs[k], st->rt, st->nested, NULL) != 0)
    return CUA_ERR_OP_FAILED;
  return cua_ctx_ptr(ctx, 0) != NULL ? 0 : CUA_ERR_OP_FAILED;
}

static int counted_step(void *arg, void **result) {
  steady *st = arg;
  atomic_fetch_add(&st->calls, 1);
  *result = arg;
  return 0;
}

/* zip of @p links chains (fill a; stream function reading a; copy b from
 * a; spin; host step; copy of b back to the host), a and b a pair of
 * buffers per link. */
static cua_op *steady_dag(steady *st, cua_buffer **a, cua_buffer **b, int links,
                          float *out) {
  cua_op *parts[16];
  ck_assert_int_le(links, 16);
  for (int i = 0; i < links; i++) {
    cua_op *o[6];
    cua_access acc = {a[i], CUA_READ};
    ck_assert_int_eq(cua_op_fill(&o[0], a[i], (float)i), 0);
    ck_assert_int_eq(cua_op_func(&o[1], st->rt, counted_fn, st, &acc, 1), 0);
    ck_assert_int_eq(cua_op_copy(&o[2], b[i], a[i]), 0);
    ck_assert_int_eq(cua_op_spin(&o[3], st->rt, 0, 1), 0);
    ck_assert_int_eq(cua_op_host(&o[4], st->rt, counted_step, st), 0);
    ck_assert_int_eq(cua_op_memcpy_d2h(&o[5], out + i * 4, b[i], 0, 16), 0);
    parts[i] = then_chain(o, 6);
  }
  cua_op *z;
  ck_assert_int_eq(cua_op_zip(&z, parts, (size_t)links), 0);
  for (int i = 0; i < links; i++)
    cua_op_destroy(parts[i]);
  return z;
}

static long steady_allocations(steady *st, cua_buffer **a, cua_buffer **b,
                               int links, float *out) {
  atomic_store(&st->calls, 0);
  atomic_store(&st->nfuts, 0);
  cua_op *z = steady_dag(st, a, b, links, out);
  cua_future *f;
  /* (no assertion while counting: Check allocates for each) */
  atomic_store(&counted, 0);
  atomic_store(&counting, 1);
  int rc = cua_submit(&f, st->rt, z, NULL);
  int wrc = rc == 0 ? cua_future_wait(f) : rc;
  int nrc = 0;
  for (int k = 0; k < links && rc == 0; k++)
    if (cua_future_wait(st->futs[k]) != 0)
      nrc = -1;
  atomic_store(&counting, 0);
  ck_assert_int_eq(rc, 0);
  ck_assert_msg(wrc == 0, "%s", cua_future_error(f));
  ck_assert_int_eq(nrc, 0);
  cua_future_destroy(f);
  cua_op_destroy(z);
  ck_assert_int_eq(atomic_load(&st->calls), 2 * links);
  ck_assert_int_eq(atomic_load(&st->nfuts), links);
  for (int k = 0; k < links; k++)
    cua_future_destroy(st->futs[k]);
  for (int i = 0; i < links; i++)
    ck_assert_float_eq(out[i * 4 + 3], (float)i);
  return atomic_load(&counted);
}

/* A stream function gets its buffers' addresses as they were when it was
 * launched, even where it runs later (the host backend, on a worker) and
 * a free of its buffer was launched meanwhile: the free clears the
 * buffer's pointer at once, though the memory goes only in stream order.
 * (Reading the addresses when the function ran gave it NULL.) */
static int ptr_seen(cua_stream_ctx *ctx, void *arg) {
  *(void **)arg = cua_ctx_ptr(ctx, 0);
  return 0;
}

START_TEST(stream_function_gets_its_buffer_before_a_later_free) {
  cua_runtime *rt;
  ck_assert_int_eq(
      open_text(&rt, "[runtime]\nbackend = host\npolicy = single-stream\n"), 0);
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  void *seen = NULL;
  cua_access acc = {b, CUA_READ};
  cua_op *o[4], *chain;
  ck_assert_int_eq(cua_op_fill(&o[0], b, 1.0f), 0);
  /* (the worker is busy for 20 ms: the free is launched before the
   * function runs) */
  ck_assert_int_eq(cua_op_spin(&o[1], rt, 20000000, 1), 0);
  ck_assert_int_eq(cua_op_func(&o[2], rt, ptr_seen, &seen, &acc, 1), 0);
  ck_assert_int_eq(cua_op_free(&o[3], b), 0);
  chain = then_chain(o, 4);
  cua_future *f;
  ck_assert_int_eq(cua_submit(&f, rt, chain, NULL), 0);
  ck_assert_int_eq(cua_future_wait(f), 0);
  ck_assert_ptr_nonnull(seen);
  cua_future_destroy(f);
  cua_op_destroy(chain);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

static const char *const steady_cases[][2] = {
    {"host", "single-stream"},
    {"host", "round-robin"},
    {"launchtime", "single-stream"},
    {"launchtime", "round-robin"},
};

START_TEST(steady_state_allocates_nothing_per_op) {
  /* Under AddressSanitizer the pools keep nothing (cua__pool_keeps()). */
  if (!cua__pool_keeps()) {
    printf("steady_state_allocates_nothing_per_op: skipped, the pools keep "
           "nothing in this build\n");
    return;
  }
  const char *backend = steady_cases[_i][0], *policy = steady_cases[_i][1];
  char text[128];
  snprintf(text, sizeof text, "[runtime]\nbackend = %s\npolicy = %s\n", backend,
           policy);
  static steady st;
  ck_assert_int_eq(open_text(&st.rt, text), 0);
  ck_assert_int_eq(cua_op_spin(&st.nested, st.rt, 0, 1), 0);
  cua_buffer *a[16], *b[16];
  float out[16 * 4];
  for (int i = 0; i < 16; i++) {
    ck_assert_int_eq(cua_buffer_create(&a[i], st.rt, 0, 64, 0), 0);
    ck_assert_int_eq(cua_buffer_create(&b[i], st.rt, 0, 64, 0), 0);
  }
  /* Warm: pools, events, streams, buffers; and the arrays that pooled
   * blocks keep (a command list's, a submission's node list and build
   * order), each grown to the largest that used it. */
  for (int k = 0; k < 20; k++) {
    (void)steady_allocations(&st, a, b, 2, out);
    (void)steady_allocations(&st, a, b, 16, out);
  }
  /* The fewest of a few runs: a submission's block goes back to its pool
   * only once both the program and the completion thread let it go, so
   * the next submission may take a block of the pool that no larger
   * submission used yet (its node list and build order then grow once).
   * An allocation per op or per submission is in every run. */
  long small = -1, big = -1;
  for (int k = 0; k < 10; k++) {
    long s2 = steady_allocations(&st, a, b, 2, out);
    long s16 = steady_allocations(&st, a, b, 16, out);
    small = small < 0 || s2 < small ? s2 : small;
    big = big < 0 || s16 < big ? s16 : big;
  }
  ck_assert_msg(small == 0 && big == 0,
                "%s, %s: %ld allocations for 23 nodes and 2 submissions "
                "from stream functions, %ld for 177 nodes and 16",
                backend, policy, small, big);
  for (int i = 0; i < 16; i++) {
    cua_buffer_destroy(a[i]);
    cua_buffer_destroy(b[i]);
  }
  cua_op_destroy(st.nested);
  cua_runtime_destroy(st.rt);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("e2e");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, ini_file_to_completed_future);
  tcase_add_test(tc, builtin_default_without_any_file);
  tcase_add_test(tc, policy_create_failure_is_reported_with_its_message);
  tcase_add_test(tc, invalid_placement_fails_the_op_naming_the_policy);
  tcase_add_test(tc, policy_error_falls_back_to_single_stream_when_configured);
  tcase_add_test(tc, fallback_ignores_the_failed_policys_node);
  tcase_add_test(tc, device_policy_errors_fall_back_when_configured);
  tcase_add_test(tc, missing_policy_lists_the_paths_searched);
  tcase_add_test(tc, env_policy_overrides_the_file);
  tcase_add_test(tc, unknown_policy_section_is_an_error_with_its_line);
  tcase_add_test(tc, policy_section_validated_against_schema);
  tcase_add_test(tc, device_section_beyond_device_count);
  tcase_add_test(tc, unknown_backend_section);
  tcase_add_test(tc, auto_backend_picks_cuda_when_it_opens_else_host);
  tcase_add_test(tc, auto_backend_without_the_named_device_cites_the_line);
  tcase_add_test(tc, auto_backend_out_of_file_descriptors_says_so);
  tcase_add_test(tc, a_runtime_made_before_fork_is_refused_in_the_child);
  tcase_add_test(tc, a_child_forked_while_runtimes_open_can_make_one);
  tcase_add_test(tc, explicit_placement_says_where_an_op_must_run);
  tcase_add_test(tc, virtual_host_devices_and_device_policy);
  tcase_add_test(tc, policy_help_lists_the_policies_and_fails_the_open);
  tcase_add_test(tc, policy_help_writes_a_dash_for_a_missing_version);
  tcase_add_loop_test(tc, policy_parameters_are_validated_with_their_line, 0,
                      sizeof bad_params / sizeof *bad_params);
  tcase_add_test(tc, affinity_rule_errors_fail_create_quoting_the_rule);
  tcase_add_test(tc, affinity_within_itself_by_path_is_refused);
  tcase_add_test(tc, affinity_by_path_within_itself_by_other_path_is_refused);
  tcase_add_test(tc, policy_open_survives_each_failed_allocation);
  tcase_add_test(tc, stream_function_gets_its_buffer_before_a_later_free);
  tcase_add_loop_test(tc, steady_state_allocates_nothing_per_op, 0,
                      sizeof steady_cases / sizeof *steady_cases);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return run_suite(suite());
}
