/*
 * tests/helpers.h: fixtures shared by the Check suites.
 *
 * The test environment (tests/local.mk) sets CUASYNC_MODULE_PATH to the
 * modules of the build tree, CUASYNC_TEST_FIXTURES to tests/fixtures and
 * CUASYNC_TEST_BUILDDIR to the build tree, and unsets CUASYNC_CONFIG and
 * CUASYNC_POLICY.
 */
#ifndef CUA_TESTS_HELPERS_H
#define CUA_TESTS_HELPERS_H

#include <cuasync.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    ck_assert_msg(rc_ == (code), "%s returned %s (%d), expected %s: %s", #call, \
                  cua_err_name(rc_), rc_, cua_err_name(code),                  \
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

#endif /* CUA_TESTS_HELPERS_H */
