/*
 * tests/check_loader.c: finding, loading and checking modules
 * (core/loader.c, core/modsearch.c), with the deliberately broken
 * policies of tests/modules/.
 *
 * Each broken module has exactly one defect; loading it by name must fail
 * with that defect's code and a message naming the file and the reason
 * (both versions, both sizes, both names, dlerror()'s text...). Searches
 * use explicit directories and ignore $CUASYNC_MODULE_PATH unless the test
 * is about it, so that they do not depend on what else is built.
 */
#include "helpers.h"

#include <math.h>

/* "../core/loader.h": see check_config.c about the include path. */
#include "../core/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 4096

/* The symbolic name of a code, for failure messages (cua_err_name() lives
 * in a part of the library this suite does not link). */
static const char *code_name(int code) {
  switch (code) {
  case 0:
    return "CUA_OK";
#define CUA__NAME_CASE(name, val, desc)                                        \
  case val:                                                                    \
    return "CUA_ERR_" #name;
    CUA_ERRNO_MAP(CUA__NAME_CASE)
#undef CUA__NAME_CASE
  }
  return "unknown code";
}

/* The directory the test modules are built in. */
static char mods[4096];
/* A scratch directory, created per test and removed after it. */
static char tmp[4096];

static void setup(void) {
  snprintf(mods, sizeof mods, "%s", built("tests/modules/.libs"));
  snprintf(tmp, sizeof tmp, "%s", "/tmp/cuasync-loader-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmp));
}

/* Removes what the tests put in the scratch directory (plain files). */
static void teardown(void) {
  static const char *const names[] = {"broken-create.so", "broken-abi-major.so",
                                      "single-stream.so", "renamed-policy.so"};
  char path[8192];
  size_t i;

  for (i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", tmp, names[i]);
    unlink(path);
  }
  rmdir(tmp);
}

/* Copies a built module into the scratch directory under another name. */
static void copy_module(const char *from, const char *to) {
  char src[8192], dst[8192], buf[65536];
  ssize_t n;
  int in, out;

  snprintf(src, sizeof src, "%s/%s", mods, from);
  snprintf(dst, sizeof dst, "%s/%s", tmp, to);
  in = open(src, O_RDONLY);
  ck_assert_msg(in >= 0, "%s: %s", src, strerror(errno));
  out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  ck_assert_msg(out >= 0, "%s: %s", dst, strerror(errno));
  while ((n = read(in, buf, sizeof buf)) > 0)
    ck_assert_int_eq(write(out, buf, (size_t)n), n);
  ck_assert_int_eq(n, 0);
  close(in);
  close(out);
}

/* Loads policy @p name from the test modules only and asserts the code and
 * that the message contains each of the NULL-terminated needles. */
static void expect_refusal(const char *name, int code, ...) {
  char *dirs[1] = {mods}, err[ERRLEN];
  cua__module *mod = (cua__module *)1;
  const char *needle;
  va_list ap;
  int rc;

  rc = cua__module_load(&mod, CUA__MODULE_POLICY, name, dirs, 1, 1, err,
                        sizeof err);
  ck_assert_msg(rc == code, "%s: got %s, expected %s (message: %s)", name,
                code_name(rc), code_name(code), rc != 0 ? err : "");
  ck_assert_ptr_null(mod);
  va_start(ap, code);
  while ((needle = va_arg(ap, const char *)) != NULL)
    ck_assert_msg(strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'",
                  name, err, needle);
  va_end(ap);
}

/* The path of test module @p name (static buffer). */
static const char *mod_path(const char *name) {
  static char path[8192];

  snprintf(path, sizeof path, "%s/%s.so", mods, name);
  return path;
}

/* ------------------------------------------------------------------ */
/* One defect each. */

START_TEST(missing_entry_symbol_is_refused) {
  char file[8300];

  snprintf(file, sizeof file, "%s: no cua_policy_entry",
           mod_path("broken-noentry"));
  expect_refusal("broken-noentry", CUA_ERR_MODULE_NO_ENTRY, file, NULL);
}
END_TEST

START_TEST(other_abi_major_is_refused_naming_both_versions) {
  char want[128];

  snprintf(want, sizeof want, "built for policy ABI %d.%d, this core has %d.%d",
           CUA_POLICY_ABI_MAJOR + 1, CUA_POLICY_ABI_MINOR, CUA_POLICY_ABI_MAJOR,
           CUA_POLICY_ABI_MINOR);
  expect_refusal("broken-abi-major", CUA_ERR_MODULE_ABI_MAJOR,
                 mod_path("broken-abi-major"), want, NULL);
}
END_TEST

START_TEST(newer_abi_minor_is_refused_naming_both_versions) {
  char want[128];

  snprintf(want, sizeof want, "built for policy ABI %d.%d, this core has %d.%d",
           CUA_POLICY_ABI_MAJOR, CUA_POLICY_ABI_MINOR + 1, CUA_POLICY_ABI_MAJOR,
           CUA_POLICY_ABI_MINOR);
  expect_refusal("broken-abi-minor", CUA_ERR_MODULE_ABI_MINOR,
                 mod_path("broken-abi-minor"), want, NULL);
}
END_TEST

START_TEST(short_descriptor_is_refused_naming_both_sizes) {
  char have[64], need[64];

  snprintf(have, sizeof have, "size is %zu bytes",
           offsetof(cua_policy_descriptor, create));
  snprintf(need, sizeof need, "%zu bytes of the policy ABI %d.0 descriptor",
           offsetof(cua_policy_descriptor, submission_end) +
               sizeof(void (*)(void)),
           CUA_POLICY_ABI_MAJOR);
  expect_refusal("broken-size", CUA_ERR_MODULE_BAD_SIZE,
                 mod_path("broken-size"), have, need, NULL);
}
END_TEST

START_TEST(name_mismatch_is_refused_naming_both_names) {
  expect_refusal("broken-name", CUA_ERR_MODULE_NAME_MISMATCH,
                 mod_path("broken-name"), "'not-the-file-name'",
                 "'broken-name'", NULL);
}
END_TEST

START_TEST(missing_place_is_refused_naming_it) {
  char err[ERRLEN], *dirs[1] = {mods};
  cua__module *mod = NULL;

  expect_refusal("broken-noplace", CUA_ERR_MODULE_INCOMPLETE,
                 mod_path("broken-noplace"), "place()", NULL);
  /* Only the missing one is named. */
  ck_assert_int_eq(cua__module_load(&mod, CUA__MODULE_POLICY, "broken-noplace",
                                    dirs, 1, 1, err, sizeof err),
                   CUA_ERR_MODULE_INCOMPLETE);
  ck_assert_ptr_null(strstr(err, "create()"));
}
END_TEST

START_TEST(undefined_symbol_fails_at_dlopen_with_dlerror_text) {
  expect_refusal("broken-undefined", CUA_ERR_MODULE_DLOPEN,
                 mod_path("broken-undefined"), "undefined symbol",
                 "cua_test_defined_nowhere", NULL);
}
END_TEST

START_TEST(failing_create_still_loads) {
  char err[ERRLEN], *dirs[1] = {mods};
  cua__module *mod = NULL;
  int rc;

  /* The loader never calls create(); the runtime does (and fails then). */
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-create", dirs, 1, 1,
                        err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_ptr_nonnull(mod);
  ck_assert_int_eq(mod->kind, CUA__MODULE_POLICY);
  ck_assert_ptr_nonnull(mod->dl);
  ck_assert_str_eq(mod->path, mod_path("broken-create"));
  ck_assert_str_eq(mod->desc.policy->name, "broken-create");
  ck_assert_ptr_nonnull(mod->desc.policy->create);
  ck_assert_ptr_nonnull(mod->desc.policy->place);
  cua__module_unload(mod);
  /* So does the placement-breaking one, whose defect shows only at run
   * time. */
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-placement", dirs, 1,
                        1, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(mod->desc.policy->name, "broken-placement");
  cua__module_unload(mod);
  cua__module_unload(NULL);
}
END_TEST

START_TEST(policy_is_not_a_backend) {
  char err[ERRLEN], *dirs[1] = {mods};
  cua__module *mod = NULL;

  ck_assert_int_eq(cua__module_load(&mod, CUA__MODULE_BACKEND, "broken-create",
                                    dirs, 1, 1, err, sizeof err),
                   CUA_ERR_MODULE_NO_ENTRY);
  ck_assert_ptr_nonnull(strstr(err, "no cua_backend_entry"));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Searching. */

START_TEST(not_found_lists_every_directory_searched) {
  char err[ERRLEN], want[8300], *dirs[2] = {tmp, mods};
  cua__module *mod = (cua__module *)1;
  int rc;

  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "no-such-policy", dirs, 2, 1,
                        err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NOT_FOUND);
  ck_assert_ptr_null(mod);
  snprintf(want, sizeof want, "no no-such-policy.so in: %s, %s, %s", tmp, mods,
           CUA_PKGLIBDIR "/policies");
  ck_assert_msg(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);
}
END_TEST

START_TEST(refused_file_does_not_stop_the_search) {
  char err[ERRLEN], *dirs[2] = {tmp, mods};
  cua__module *mod = NULL;
  int rc;

  /* A stale, incompatible build of broken-create earlier in the path. */
  copy_module("broken-abi-major.so", "broken-create.so");
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-create", dirs, 2, 1,
                        err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(mod->path, mod_path("broken-create"));
  cua__module_unload(mod);
}
END_TEST

START_TEST(refusals_are_all_reported_with_the_first_code) {
  char err[ERRLEN], first[8300], second[8300], *dirs[2] = {tmp, mods};
  cua__module *mod = (cua__module *)1;
  int rc;

  /* One refusal and nothing else: its code, its file and reason, and the
   * directories searched. */
  copy_module("broken-abi-major.so", "broken-create.so");
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-create", dirs, 1, 1,
                        err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_ABI_MAJOR);
  ck_assert_ptr_null(mod);
  snprintf(first, sizeof first, "%s/broken-create.so: built for policy ABI",
           tmp);
  ck_assert_msg(strstr(err, first) != NULL, "'%s' lacks '%s'", err, first);
  snprintf(second, sizeof second, "searched: %s, %s", tmp,
           CUA_PKGLIBDIR "/policies");
  ck_assert_msg(strstr(err, second) != NULL, "'%s' lacks '%s'", err, second);

  /* Two refusals for different reasons: the code is the first one's and
   * both files are described. */
  copy_module("broken-noentry.so", "broken-abi-major.so");
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-abi-major", dirs, 2,
                        1, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NO_ENTRY);
  snprintf(first, sizeof first, "%s/broken-abi-major.so: no cua_policy_entry",
           tmp);
  snprintf(second, sizeof second, "%s: built for",
           mod_path("broken-abi-major"));
  ck_assert_msg(strstr(err, first) != NULL, "'%s' lacks '%s'", err, first);
  ck_assert_msg(strstr(err, second) != NULL, "'%s' lacks '%s'", err, second);
  ck_assert(strstr(err, first) < strstr(err, second));
}
END_TEST

START_TEST(stale_copy_does_not_hide_the_real_policy) {
  char err[ERRLEN], real[8192], want[8300], *dirs[2] = {tmp, real};
  cua__module *mod = NULL;
  int rc;

  /* The standard policy, behind an incompatible file of the same name. */
  snprintf(real, sizeof real, "%s", built("policies/.libs"));
  copy_module("broken-abi-major.so", "single-stream.so");
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "single-stream", dirs, 2, 1,
                        err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  snprintf(want, sizeof want, "%s/single-stream.so", real);
  ck_assert_str_eq(mod->path, want);
  ck_assert_str_eq(mod->desc.policy->name, "single-stream");
  cua__module_unload(mod);
}
END_TEST

START_TEST(host_backend_has_every_required_operation) {
  char err[ERRLEN], dir[8192], *dirs[1] = {dir};
  cua__module *mod = NULL;
  int rc;

  snprintf(dir, sizeof dir, "%s", built("plugins/.libs"));
  rc = cua__module_load(&mod, CUA__MODULE_BACKEND, "host", dirs, 1, 1, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(mod->kind, CUA__MODULE_BACKEND);
  ck_assert_str_eq(mod->desc.backend->name, "host");
  cua__module_unload(mod);
  /* And it is no policy. */
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "host", dirs, 1, 1, err,
                        sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NO_ENTRY);
  ck_assert_ptr_nonnull(strstr(err, "no cua_policy_entry"));
}
END_TEST

START_TEST(module_path_env_is_searched_unless_ignored) {
  char err[ERRLEN], env[8300];
  cua__module *mod = NULL;
  int rc;

  snprintf(env, sizeof env, "/nonexistent::%s", mods);
  setenv("CUASYNC_MODULE_PATH", env, 1);
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-create", NULL, 0, 0,
                        err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  cua__module_unload(mod);
  mod = (cua__module *)1;
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-create", NULL, 0, 1,
                        err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NOT_FOUND);
  ck_assert_ptr_null(mod);
  ck_assert_ptr_null(strstr(err, mods));
}
END_TEST

START_TEST(search_dirs_come_in_order_without_repeats) {
  char *extra[3] = {"/a", "/b", "/a"};
  char **dirs;
  size_t n;

  setenv("CUASYNC_MODULE_PATH", "/c::/b:/d", 1);
  dirs = cua__module_dirs(CUA__MODULE_POLICY, extra, 3, 0, &n);
  ck_assert_uint_eq(n, 5);
  ck_assert_str_eq(dirs[0], "/a");
  ck_assert_str_eq(dirs[1], "/b");
  ck_assert_str_eq(dirs[2], "/c");
  ck_assert_str_eq(dirs[3], "/d");
  ck_assert_str_eq(dirs[4], CUA_PKGLIBDIR "/policies");
  cua__strv_free(dirs, n);
  dirs = cua__module_dirs(CUA__MODULE_BACKEND, extra, 1, 1, &n);
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(dirs[0], "/a");
  ck_assert_str_eq(dirs[1], CUA_PKGLIBDIR "/backends");
  cua__strv_free(dirs, n);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Paths. */

START_TEST(path_is_loaded_as_is_without_name_check) {
  char err[ERRLEN];
  cua__module *mod = NULL;
  int rc;

  rc = cua__module_load(&mod, CUA__MODULE_POLICY, mod_path("broken-name"), NULL,
                        0, 1, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(mod->desc.policy->name, "not-the-file-name");
  cua__module_unload(mod);
}
END_TEST

/* Loaded by path, a policy takes its parameters from the section of the
 * name its descriptor declares; a section named after the file instead is
 * refused, and the message says which section was meant. (A copy under a
 * name that is on no search path: broken-name.so is found by name.) */
START_TEST(section_named_after_the_file_says_the_policys_name) {
  char text[8600], needle[8400], path[8200];
  cua_runtime *rt = NULL;

  copy_module("broken-name.so", "renamed-policy.so");
  snprintf(path, sizeof path, "%s/renamed-policy.so", tmp);
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = %s\n"
           "[policy.renamed-policy]\n",
           path);
  snprintf(needle, sizeof needle,
           "[policy.renamed-policy]: no policy named 'renamed-policy' is "
           "installed or on the policy path; the policy loaded from %s is "
           "named 'not-the-file-name': its section is "
           "[policy.not-the-file-name] (",
           path);
  ck_assert_err(NULL, open_text(&rt, text), CUA_ERR_CONFIG_UNKNOWN_SECTION,
                needle);
  ck_assert_ptr_null(rt);
  /* The section of its own name is the one it reads. */
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = %s\n"
           "[policy.not-the-file-name]\n",
           path);
  ck_assert_int_eq(open_text(&rt, text), 0);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(path_refusal_names_the_file) {
  char err[ERRLEN], want[8300];
  cua__module *mod = (cua__module *)1;
  int rc;

  rc = cua__module_load(&mod, CUA__MODULE_POLICY, mod_path("broken-abi-major"),
                        NULL, 0, 1, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_ABI_MAJOR);
  ck_assert_ptr_null(mod);
  snprintf(want, sizeof want, "%s: built for", mod_path("broken-abi-major"));
  ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s' vs '%s'", err,
                want);
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "/nonexistent/x.so", NULL, 0,
                        1, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.so"));
  ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
}
END_TEST

START_TEST(bare_so_name_is_in_the_working_directory) {
  char err[ERRLEN];
  cua__module *mod = NULL;
  int rc;

  ck_assert_int_eq(chdir(mods), 0);
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-create.so", NULL, 0,
                        1, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(mod->desc.policy->name, "broken-create");
  cua__module_unload(mod);
  ck_assert_int_eq(chdir(tmp), 0);
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, "broken-create.so", NULL, 0,
                        1, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_MODULE_NOT_FOUND);
}
END_TEST

START_TEST(empty_name_is_invalid) {
  char err[ERRLEN];
  cua__module *mod = NULL;

  ck_assert_int_eq(cua__module_load(&mod, CUA__MODULE_POLICY, "", NULL, 0, 1,
                                    err, sizeof err),
                   CUA_ERR_INVAL);
  ck_assert_int_eq(cua__module_load(&mod, CUA__MODULE_POLICY, NULL, NULL, 0, 1,
                                    err, sizeof err),
                   CUA_ERR_INVAL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Scanning. */

#define MAX_REPORTS 64

/* What a scan reported, copied out of the callback. */
typedef struct scan_log {
  size_t n;
  struct {
    char path[1024];
    char name[256];
    int status;
    char message[1024];
    int had_module;
    int shadowed;
  } r[MAX_REPORTS];
} scan_log;

static void record(const cua__module_report *r, void *arg) {
  scan_log *log = arg;

  ck_assert_uint_lt(log->n, MAX_REPORTS);
  snprintf(log->r[log->n].path, sizeof log->r[0].path, "%s", r->path);
  snprintf(log->r[log->n].name, sizeof log->r[0].name, "%s", r->name);
  log->r[log->n].status = r->status;
  snprintf(log->r[log->n].message, sizeof log->r[0].message, "%s",
           r->message != NULL ? r->message : "");
  log->r[log->n].had_module = r->module != NULL;
  /* The module is usable during the callback. */
  if (r->module != NULL)
    ck_assert_str_eq(r->module->desc.policy->name, r->name);
  else
    ck_assert_ptr_nonnull(r->message);
  log->r[log->n].shadowed = r->shadowed;
  log->n++;
}

/* The index of the report for @p path, or -1. */
static int find_report(const scan_log *log, const char *path) {
  size_t i;

  for (i = 0; i < log->n; i++)
    if (strcmp(log->r[i].path, path) == 0)
      return (int)i;
  return -1;
}

START_TEST(scan_reports_every_module_with_its_status) {
  static const struct {
    const char *name;
    int status;
  } want[] = {
      {"broken-abi-major", CUA_ERR_MODULE_ABI_MAJOR},
      {"broken-abi-minor", CUA_ERR_MODULE_ABI_MINOR},
      {"broken-abi1", CUA_ERR_MODULE_ABI_MAJOR},
      {"broken-create", 0},
      {"broken-name", CUA_ERR_MODULE_NAME_MISMATCH},
      {"broken-noentry", CUA_ERR_MODULE_NO_ENTRY},
      {"broken-noplace", CUA_ERR_MODULE_INCOMPLETE},
      {"broken-placement", 0},
      {"broken-size", CUA_ERR_MODULE_BAD_SIZE},
      {"broken-stride", CUA_ERR_MODULE_BAD_SIZE},
      {"broken-undefined", CUA_ERR_MODULE_DLOPEN},
  };
  static scan_log log;
  char *dirs[1] = {mods};
  size_t i;
  int at, last = -1;

  cua__module_scan(CUA__MODULE_POLICY, dirs, 1, 1, record, &log);
  for (i = 0; i < sizeof want / sizeof want[0]; i++) {
    at = find_report(&log, mod_path(want[i].name));
    ck_assert_msg(at >= 0, "no report for %s", want[i].name);
    /* Sorted by name within the directory. */
    ck_assert_int_gt(at, last);
    last = at;
    ck_assert_str_eq(log.r[at].name, want[i].name);
    ck_assert_msg(log.r[at].status == want[i].status, "%s: %s, expected %s",
                  want[i].name, code_name(log.r[at].status),
                  code_name(want[i].status));
    ck_assert_int_eq(log.r[at].had_module, want[i].status == 0);
    ck_assert_int_eq(log.r[at].shadowed, 0);
    if (want[i].status != 0)
      ck_assert_ptr_nonnull(strstr(log.r[at].message, mod_path(want[i].name)));
  }
}
END_TEST

START_TEST(scan_marks_later_duplicates_shadowed) {
  static scan_log log;
  char *dirs[2] = {mods, tmp}, copy[8300];
  int at;

  copy_module("broken-create.so", "broken-create.so");
  cua__module_scan(CUA__MODULE_POLICY, dirs, 2, 1, record, &log);
  at = find_report(&log, mod_path("broken-create"));
  ck_assert_int_ge(at, 0);
  ck_assert_int_eq(log.r[at].shadowed, 0);
  snprintf(copy, sizeof copy, "%s/broken-create.so", tmp);
  at = find_report(&log, copy);
  ck_assert_int_ge(at, 0);
  ck_assert_int_eq(log.r[at].status, 0);
  ck_assert_int_eq(log.r[at].shadowed, 1);
}
END_TEST

START_TEST(scan_for_backends_skips_policies) {
  static scan_log log;
  char *dirs[1] = {mods};

  /* Scanning for backends: every working policy module is skipped without
   * a word; a file with no entry symbol of either kind, or that cannot be
   * opened, is still reported. */
  cua__module_scan(CUA__MODULE_BACKEND, dirs, 1, 1, record, &log);
  ck_assert_int_lt(find_report(&log, mod_path("broken-create")), 0);
  ck_assert_int_lt(find_report(&log, mod_path("broken-abi-major")), 0);
  ck_assert_int_ge(find_report(&log, mod_path("broken-noentry")), 0);
  ck_assert_int_eq(log.r[find_report(&log, mod_path("broken-noentry"))].status,
                   CUA_ERR_MODULE_NO_ENTRY);
  ck_assert_int_eq(
      log.r[find_report(&log, mod_path("broken-undefined"))].status,
      CUA_ERR_MODULE_DLOPEN);
}
END_TEST

START_TEST(scan_for_policies_skips_backends) {
  static scan_log log;
  char dir[8192], host[8300], *dirs[1] = {dir};

  snprintf(dir, sizeof dir, "%s", built("plugins/.libs"));
  snprintf(host, sizeof host, "%s/host.so", dir);
  ck_assert_int_eq(access(host, F_OK), 0);
  cua__module_scan(CUA__MODULE_POLICY, dirs, 1, 1, record, &log);
  ck_assert_int_lt(find_report(&log, host), 0);
}
END_TEST

/* Descriptors that are not what they claim: each is refused, with its
 * reason, before anything it points to is read. */
START_TEST(empty_name_is_refused) {
  char err[ERRLEN];
  cua__module *mod = (cua__module *)1;

  expect_refusal("broken-emptyname", CUA_ERR_MODULE_INCOMPLETE,
                 mod_path("broken-emptyname"),
                 "the policy descriptor's name is empty", NULL);
  /* By path too, where the name is not compared with the file's. */
  ck_assert_int_eq(cua__module_load(&mod, CUA__MODULE_POLICY,
                                    mod_path("broken-emptyname"), NULL, 0, 1,
                                    err, sizeof err),
                   CUA_ERR_MODULE_INCOMPLETE);
  ck_assert_ptr_null(mod);
  ck_assert_ptr_nonnull(strstr(err, "name is empty"));
}
END_TEST

START_TEST(control_character_in_name_is_refused) {
  expect_refusal(
      "broken-ctrlname", CUA_ERR_MODULE_INCOMPLETE, mod_path("broken-ctrlname"),
      "name contains a control character (byte 0x0a at offset 6)", NULL);
}
END_TEST

START_TEST(duplicate_parameter_names_are_refused) {
  expect_refusal("broken-dupparam", CUA_ERR_MODULE_INCOMPLETE,
                 mod_path("broken-dupparam"),
                 "parameters 0 and 2 of the descriptor's schema are both "
                 "named 'streams'",
                 NULL);
}
END_TEST

START_TEST(name_pointing_nowhere_is_refused) {
  expect_refusal("broken-pointers", CUA_ERR_MODULE_INCOMPLETE,
                 mod_path("broken-pointers"),
                 "the policy descriptor's name (0x100) does not point to a "
                 "string in the module",
                 NULL);
}
END_TEST

START_TEST(operation_pointing_nowhere_is_refused) {
  expect_refusal("broken-badplace", CUA_ERR_MODULE_INCOMPLETE,
                 mod_path("broken-badplace"),
                 "the policy descriptor's place() (0x200) does not point to "
                 "code in the module",
                 NULL);
}
END_TEST

/* Backends share the loader, and its checks. */
START_TEST(backend_string_pointing_nowhere_is_refused) {
  char err[ERRLEN];
  cua__module *mod = (cua__module *)1;
  int rc =
      cua__module_load(&mod, CUA__MODULE_BACKEND, mod_path("broken-backend"),
                       NULL, 0, 1, err, sizeof err);

  ck_assert_msg(rc == CUA_ERR_MODULE_INCOMPLETE, "%s: %s", code_name(rc), err);
  ck_assert_ptr_null(mod);
  ck_assert_msg(strstr(err, "the backend descriptor's description (0x100) "
                            "does not point to a string in the module") != NULL,
                "%s", err);
}
END_TEST

/* A backend without the operations the core calls unchecked: refused,
 * each named, rather than loaded to crash at its first stream. */
START_TEST(backend_without_its_operations_is_refused) {
  char err[ERRLEN];
  cua__module *mod = (cua__module *)1;
  int rc = cua__module_load(&mod, CUA__MODULE_BACKEND,
                            mod_path("broken-backend-ops"), NULL, 0, 1, err,
                            sizeof err);

  ck_assert_msg(rc == CUA_ERR_MODULE_INCOMPLETE, "%s: %s", code_name(rc), err);
  ck_assert_ptr_null(mod);
  ck_assert_msg(
      strstr(err, "the backend descriptor lacks required operations: "
                  "device_count(), device_info(), stream_create(), "
                  "stream_destroy(), stream_native(), event_create(), "
                  "event_destroy(), event_record(), stream_wait_event(), "
                  "event_query(), mem_alloc(), mem_free(), launch(), mark(), "
                  "progress(), poll_error(), wait()") != NULL,
      "%s", err);
}
END_TEST

START_TEST(one_byte_entry_symbol_is_refused) {
  char want[128];

  snprintf(want, sizeof want,
           "the cua_policy_entry symbol has 1 byte(s), fewer than the %zu of "
           "a descriptor's header",
           2 * sizeof(uint32_t) + sizeof(size_t));
  expect_refusal("broken-tiny", CUA_ERR_MODULE_BAD_SIZE,
                 mod_path("broken-tiny"), want, NULL);
}
END_TEST

START_TEST(misaligned_entry_symbol_is_refused) {
  char want[128];

  snprintf(want, sizeof want,
           "not aligned to %zu bytes as a descriptor must be",
           _Alignof(size_t));
  expect_refusal("broken-unaligned", CUA_ERR_MODULE_BAD_SIZE,
                 mod_path("broken-unaligned"),
                 "the cua_policy_entry symbol is at", want, NULL);
}
END_TEST

START_TEST(function_entry_symbol_is_refused) {
  expect_refusal("broken-funcentry", CUA_ERR_MODULE_NO_ENTRY,
                 mod_path("broken-funcentry"),
                 "the cua_policy_entry symbol is a function, not a policy "
                 "descriptor",
                 NULL);
}
END_TEST

/* cuasync-info scans every module of the path (the test environment's
 * includes these broken ones): it must list the refusals, not crash. */
START_TEST(info_lists_broken_descriptors_without_crashing) {
  char cmd[16800], line[4096];
  int saw_pointers = 0, saw_tiny = 0, status;
  FILE *p;

  char ini[8300];
  snprintf(ini, sizeof ini, "%s/info.ini", tmp);
  p = fopen(ini, "w");
  ck_assert_ptr_nonnull(p);
  fputs("[runtime]\nbackend = host\n", p);
  fclose(p);
  snprintf(cmd, sizeof cmd, "'%s' -c '%s' 2>&1", built("tools/cuasync-info"),
           ini);
  p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  while (fgets(line, sizeof line, p) != NULL) {
    if (strstr(line, "does not point to a string in the module") != NULL)
      saw_pointers = 1;
    if (strstr(line, "fewer than the") != NULL)
      saw_tiny = 1;
  }
  status = pclose(p);
  ck_assert_msg(WIFEXITED(status), "cuasync-info died (status %d)", status);
  ck_assert_msg(saw_pointers && saw_tiny,
                "cuasync-info did not list the refusals");
  unlink(ini);
}
END_TEST

/* What cua_runtime_dump_policy() writes for @p rt, in @p text. */
static void dump_policy(cua_runtime *rt, char *text, size_t len) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(cua_runtime_dump_policy(rt, f), 0);
  rewind(f);
  text[fread(text, 1, len - 1, f)] = '\0';
  fclose(f);
}

/* A module built against 0.1's headers (ABI 1.0) is told to be rebuilt. */
START_TEST(abi1_module_is_told_to_rebuild) {
  char want[128];

  snprintf(want, sizeof want, "built for policy ABI 1.0, this core has %d.%d",
           CUA_POLICY_ABI_MAJOR, CUA_POLICY_ABI_MINOR);
  expect_refusal("broken-abi1", CUA_ERR_MODULE_ABI_MAJOR,
                 mod_path("broken-abi1"), want,
                 "rebuild it against these headers",
                 "CUA_POLICY_DEFINE(.name = ...", NULL);
}
END_TEST

START_TEST(small_element_size_is_refused_naming_both_sizes) {
  char want[160];

  snprintf(want, sizeof want,
           "param_value_size is 8; the policy ABI %d.0 cua_param_value has "
           "%zu bytes",
           CUA_POLICY_ABI_MAJOR, sizeof(cua_param_value));
  expect_refusal("broken-stride", CUA_ERR_MODULE_BAD_SIZE,
                 mod_path("broken-stride"), want, "CUA_POLICY_INIT", NULL);
}
END_TEST

/* Elements larger than the core's (a later minor version's): the schema is
 * read, and the values and inputs written, with the module's strides. */
START_TEST(larger_elements_are_read_and_written_with_their_stride) {
  char *dirs[1] = {mods}, err[ERRLEN];
  cua__module *mod = NULL;

  ck_assert_int_eq(cua__module_load(&mod, CUA__MODULE_POLICY, "wide", dirs, 1,
                                    1, err, sizeof err),
                   0);
  /* The schema as the core's code reads it: a plain array. */
  ck_assert_uint_eq(mod->desc.policy->nparams, 2);
  ck_assert_uint_eq(mod->desc.policy->param_spec_size, sizeof(cua_param_spec));
  ck_assert_str_eq(mod->desc.policy->params[1].name, "second");
  ck_assert_str_eq(mod->desc.policy->params[1].default_value, "two");
  cua__module_unload(mod);

  cua_runtime *rt = NULL;
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\npolicy = wide\n"
                                  "[policy.wide]\nsecond = given\n"),
                   0);
  cua_buffer *b;
  cua_op *ops[6], *t;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, 64, 0), 0);
  ck_assert_int_eq(cua_op_fill(&ops[0], b, 1.0f), 0);
  for (int i = 1; i < 6; i++) {
    cua_op *f;
    ck_assert_int_eq(cua_op_fill(&f, b, (float)i), 0);
    ck_assert_int_eq(cua_op_then(&ops[i], ops[i - 1], f), 0);
    cua_op_destroy(f);
  }
  t = ops[5];
  ck_assert_int_eq(cua_submit_wait(rt, t, NULL, NULL), 0);
  char text[512];
  dump_policy(rt, text, sizeof text);
  ck_assert_msg(strstr(text, "wide: first=1 second=given extra=0 inputs=5 "
                             "bad=0") != NULL,
                "dump: %s", text);
  for (int i = 0; i < 6; i++)
    cua_op_destroy(ops[i]);
  cua_buffer_destroy(b);
  cua_runtime_destroy(rt);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Policies registered from memory (cua_policy_register()). */

static int reg_create(const cua_policy_host *host,
                      const cua_param_value *params, void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 1);
}
static int reg_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  (void)op;
  out->device = 0;
  out->stream = 0;
  return 0;
}
static void reg_dump(void *state, FILE *out) {
  (void)state;
  fputs("the registered one\n", out);
}

START_TEST(registered_policy_comes_before_the_search_path) {
  /* Named as a standard policy: the program's own wins. */
  static const cua_policy_descriptor mine =
      CUA_POLICY_INIT(.name = "round-robin", .create = reg_create,
                      .place = reg_place, .dump = reg_dump);
  ck_assert_int_eq(cua_policy_register(&mine), 0);
  cua_runtime *rt = NULL;
  ck_assert_int_eq(
      open_text(&rt, "[runtime]\nbackend = host\npolicy = round-robin\n"), 0);
  char text[256];
  dump_policy(rt, text, sizeof text);
  ck_assert_str_eq(text, "the registered one\n");
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
  ck_assert_int_eq(cua_submit_wait(rt, op, NULL, NULL), 0);
  cua_op_destroy(op);
  /* cua_policy_open() finds it too. */
  cua_policy *pol;
  ck_assert_int_eq(cua_policy_open(&pol, rt, "round-robin"), 0);
  ck_assert_str_eq(cua_policy_name(pol), "round-robin");
  cua_policy_close(pol);
  cua_runtime_destroy(rt);
}
END_TEST

/* A module built against 2.0 is a 2.0 descriptor: what lies past its size
 * (pull mode's push() and pop() in 2.1) is never read. */
START_TEST(an_abi_2_0_module_loads_in_push_mode) {
  cua_runtime *rt = NULL;
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\npolicy = "
                                  "abi20\n"),
                   0);
  for (int i = 0; i < 3; i++) {
    cua_op *op;
    ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
    ck_assert_int_eq(cua_submit_wait(rt, op, NULL, NULL), 0);
    cua_op_destroy(op);
  }
  cua_runtime_destroy(rt);
}
END_TEST

static int reg_push(void *state, const cua_op_info *op) {
  (void)state;
  (void)op;
  return 0;
}

static int reg_pop(void *state, cua_placement where, uint64_t *op_id) {
  (void)state;
  (void)where;
  (void)op_id;
  return 0;
}

static int reg_create_positive(const cua_policy_host *host,
                               const cua_param_value *params, void **state) {
  (void)host;
  (void)params;
  *state = NULL;
  return 5;
}

/* A create() that fails with a code outside the list: the message names
 * the number it returned, not CUA_ERR_UNKNOWN. */
START_TEST(a_create_returning_no_error_code_is_named_by_its_number) {
  static const cua_policy_descriptor pos =
      CUA_POLICY_INIT(.name = "create-positive", .create = reg_create_positive,
                      .place = reg_place);
  ck_assert_int_eq(cua_policy_register(&pos), 0);
  cua_runtime *rt = NULL;
  ck_assert_err(NULL,
                open_text(&rt, "[runtime]\nbackend = host\npolicy = "
                               "create-positive\n"),
                CUA_ERR_MODULE_CREATE,
                "create() failed with 5, which is not a cuasync error code "
                "(create() returns 0 or a negative CUA_ERR_*)");
  ck_assert_ptr_null(rt);
}
END_TEST

/* An INT parameter whose range reaches past int64_t: a value that does
 * not fit one is out of range, and the message says of what (it named
 * the schema's range, which holds the value). */
START_TEST(an_int_past_64_bits_is_out_of_range_of_64_bits) {
  static const cua_param_spec wide_range[] = {
      {"k", CUA_PARAM_INT, "0", -1e30, 1e30, NULL, "h", 0}};
  static const cua_policy_descriptor big =
      CUA_POLICY_INIT(.name = "bigint", .create = reg_create,
                      .place = reg_place, CUA_POLICY_PARAMS(wide_range));
  static const char *const values[] = {
      "9223372036854775808", "-9223372036854775809", "99999999999999999999999"};
  ck_assert_int_eq(cua_policy_register(&big), 0);
  for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
    char text[256], needle[128];
    cua_runtime *rt = NULL;
    snprintf(text, sizeof text,
             "[runtime]\nbackend = host\npolicy = bigint\n"
             "[policy.bigint]\nk = %s\n",
             values[i]);
    snprintf(needle, sizeof needle,
             "[policy.bigint] k: %s is out of range: it does not fit a "
             "64-bit integer [-9223372036854775808, 9223372036854775807]",
             values[i]);
    ck_assert_err(NULL, open_text(&rt, text), CUA_ERR_CONFIG_OUT_OF_RANGE,
                  needle);
    ck_assert_ptr_null(rt);
  }
  /* The largest that fits is taken. */
  cua_runtime *rt = NULL;
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\npolicy = "
                                  "bigint\n[policy.bigint]\n"
                                  "k = 9223372036854775807\n"),
                   0);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(register_refusals_have_their_codes_and_messages) {
  static const cua_policy_descriptor good =
      CUA_POLICY_INIT(.name = "mine", .create = reg_create, .place = reg_place);
  static cua_policy_descriptor d;

  ck_assert_err(NULL, cua_policy_register(NULL), CUA_ERR_INVAL,
                "cua_policy_register: no descriptor given");
  ck_assert_int_eq(cua_policy_register(&good), 0);
  ck_assert_err(NULL, cua_policy_register(&good), CUA_ERR_INVAL,
                "a policy named 'mine' is already registered");
  d = good;
  d.name = "dir/mine";
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_INVAL,
                "the name 'dir/mine' has a '/' or ends in \".so\"");
  d.name = "mine.so";
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_INVAL, "'mine.so'");
  d = good;
  d.name = "";
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_INCOMPLETE,
                "name is empty");
  d = good;
  d.name = "half";
  d.push = reg_push;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_INCOMPLETE,
                "has push() but not pop(): pull mode needs both");
  /* A size that ends inside pop(): only push() is there. */
  d = good;
  d.name = "half";
  d.push = reg_push;
  d.pop = reg_pop;
  d.size = offsetof(cua_policy_descriptor, pop) + 4;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_INCOMPLETE,
                "has push() but not pop()");
  d = good;
  d.name = "half";
  d.pop = reg_pop;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_INCOMPLETE,
                "has pop() but not push()");
  d = good;
  d.name = "other";
  d.abi_major = 1;
  d.abi_minor = 0;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_ABI_MAJOR,
                "cua_policy_register: built for policy ABI 1.0");
  d = good;
  d.name = "other";
  d.abi_minor = CUA_POLICY_ABI_MINOR + 1;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_ABI_MINOR,
                "newer than the core");
  d = good;
  d.name = "other";
  d.size = 16;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_BAD_SIZE,
                "descriptor size is 16 bytes");
  d = good;
  d.name = "other";
  d.input_size = 0;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_BAD_SIZE,
                "input_size is 0");
  d = good;
  d.name = "other";
  d.place = NULL;
  ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_INCOMPLETE,
                "lacks required operations: place()");
  /* A schema no configuration could satisfy is refused at load, not when
   * a runtime opens the policy (CUA_ERR_INTERNAL, whatever the file set). */
  static const struct {
    cua_param_spec spec;
    const char *needle;
  } bad_specs[] = {
      {{"a", CUA_PARAM_INT, "100", 0, 10, NULL, "h", 0},
       "parameter 'a' of the descriptor's schema has an invalid default: 100 "
       "is out of range [0, 10]"},
      {{"a", CUA_PARAM_ENUM, "z", 0, 0, "x|y", "h", 0},
       "parameter 'a' of the descriptor's schema has an invalid default: 'z' "
       "is not one of x|y"},
      {{"a", CUA_PARAM_INT, NULL, 10, 0, NULL, "h", 0},
       "parameter 'a' of the descriptor's schema has the range [10, 0], which "
       "holds no value"},
      {{"a", CUA_PARAM_DOUBLE, NULL, NAN, 1, NULL, "h", 0},
       "has the range [nan, 1]"},
      {{"a", CUA_PARAM_INT, NULL, 0.5, 0.9, NULL, "h", 0},
       "has the range [0.5, 0.9], which holds no value"},
      {{"a", CUA_PARAM_ENUM, NULL, 0, 0, NULL, "h", 0},
       "parameter 'a' of the descriptor's schema is an enum without choices"},
      {{"a", CUA_PARAM_ENUM, NULL, 0, 0, "", "h", 0}, "without choices"},
      {{"a", (cua_param_type)9, NULL, 0, 0, NULL, "h", 0},
       "has type 9, which is no cua_param_type"},
      {{"a", CUA_PARAM_BOOL, "maybe", 0, 0, NULL, "h", 0},
       "invalid default: 'maybe' is not a boolean"},
      {{"a", CUA_PARAM_ENUM, NULL, 0, 0, "x||y", "h", 0},
       "parameter 'a' of the descriptor's schema is an enum whose choices "
       "'x||y' include an empty one"},
      {{"a", CUA_PARAM_ENUM, NULL, 0, 0, "|x", "h", 0},
       "choices '|x' include an empty one"},
      {{"a", CUA_PARAM_ENUM, NULL, 0, 0, "x|", "h", 0},
       "choices 'x|' include an empty one"},
      {{"a", CUA_PARAM_STRING, NULL, 0, 0, NULL, "h", 0x10},
       "parameter 'a' of the descriptor's schema has flags 0x10, which this "
       "cuasync does not know (it knows CUA_PARAM_MULTI 0x1 and "
       "CUA_PARAM_PATH 0x2)"},
      {{"a", CUA_PARAM_INT, NULL, 0, 9, NULL, "h", CUA_PARAM_PATH},
       "parameter 'a' of the descriptor's schema has CUA_PARAM_PATH, which "
       "only a CUA_PARAM_STRING parameter takes"},
  };
  for (size_t i = 0; i < sizeof bad_specs / sizeof *bad_specs; i++) {
    d = good;
    d.name = "other";
    d.params = &bad_specs[i].spec;
    d.nparams = 1;
    ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_INCOMPLETE,
                  bad_specs[i].needle);
  }
  /* A parameter is set by a line "name = value": a name no line can give
   * is refused, naming the parameter. */
  static const char *const unkeyable[] = {
      "", " lead", "trail\t", "a=b", "a:b", ";a", "#a", "[a", "a ;b"};
  for (size_t i = 0; i < sizeof unkeyable / sizeof *unkeyable; i++) {
    static cua_param_spec spec = {NULL, CUA_PARAM_INT, "1", 0, 9, NULL, "h", 0};
    char needle[128];
    spec.name = unkeyable[i];
    d = good;
    d.name = "other";
    d.params = &spec;
    d.nparams = 1;
    snprintf(needle, sizeof needle,
             "parameter 0 of the descriptor is named '%s', which no INI line "
             "can set",
             unkeyable[i]);
    ck_assert_err(NULL, cua_policy_register(&d), CUA_ERR_MODULE_INCOMPLETE,
                  needle);
  }
  /* None of the refused ones was registered. */
  cua_runtime *rt = NULL;
  ck_assert_err(NULL,
                open_text(&rt, "[runtime]\nbackend = host\npolicy = other\n"),
                CUA_ERR_MODULE_NOT_FOUND, "policy module 'other' not found");
  /* A name not found: the message says which there are, the program's
   * registered ones first, read from the files without loading them. */
  const char *m = cua_runtime_error(NULL);
  ck_assert_msg(strstr(m, "(policy modules found: mine, ") != NULL &&
                    strstr(m, "round-robin") != NULL &&
                    strstr(m, "single-stream") != NULL,
                "%s", m);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("loader");
  TCase *tc;

  tc = tcase_create("defects");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, missing_entry_symbol_is_refused);
  tcase_add_test(tc, abi1_module_is_told_to_rebuild);
  tcase_add_test(tc, small_element_size_is_refused_naming_both_sizes);
  tcase_add_test(tc, larger_elements_are_read_and_written_with_their_stride);
  tcase_add_test(tc, registered_policy_comes_before_the_search_path);
  tcase_add_test(tc, register_refusals_have_their_codes_and_messages);
  tcase_add_test(tc, an_int_past_64_bits_is_out_of_range_of_64_bits);
  tcase_add_test(tc, a_create_returning_no_error_code_is_named_by_its_number);
  tcase_add_test(tc, an_abi_2_0_module_loads_in_push_mode);
  tcase_add_test(tc, other_abi_major_is_refused_naming_both_versions);
  tcase_add_test(tc, newer_abi_minor_is_refused_naming_both_versions);
  tcase_add_test(tc, short_descriptor_is_refused_naming_both_sizes);
  tcase_add_test(tc, name_mismatch_is_refused_naming_both_names);
  tcase_add_test(tc, missing_place_is_refused_naming_it);
  tcase_add_test(tc, undefined_symbol_fails_at_dlopen_with_dlerror_text);
  tcase_add_test(tc, failing_create_still_loads);
  tcase_add_test(tc, policy_is_not_a_backend);
  tcase_add_test(tc, empty_name_is_refused);
  tcase_add_test(tc, control_character_in_name_is_refused);
  tcase_add_test(tc, duplicate_parameter_names_are_refused);
  tcase_add_test(tc, name_pointing_nowhere_is_refused);
  tcase_add_test(tc, operation_pointing_nowhere_is_refused);
  tcase_add_test(tc, one_byte_entry_symbol_is_refused);
  tcase_add_test(tc, misaligned_entry_symbol_is_refused);
  tcase_add_test(tc, backend_string_pointing_nowhere_is_refused);
  tcase_add_test(tc, backend_without_its_operations_is_refused);
  tcase_add_test(tc, function_entry_symbol_is_refused);
  tcase_add_test(tc, info_lists_broken_descriptors_without_crashing);
  suite_add_tcase(s, tc);

  tc = tcase_create("search");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, not_found_lists_every_directory_searched);
  tcase_add_test(tc, refused_file_does_not_stop_the_search);
  tcase_add_test(tc, refusals_are_all_reported_with_the_first_code);
  tcase_add_test(tc, stale_copy_does_not_hide_the_real_policy);
  tcase_add_test(tc, host_backend_has_every_required_operation);
  tcase_add_test(tc, module_path_env_is_searched_unless_ignored);
  tcase_add_test(tc, search_dirs_come_in_order_without_repeats);
  suite_add_tcase(s, tc);

  tc = tcase_create("paths");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, path_is_loaded_as_is_without_name_check);
  tcase_add_test(tc, section_named_after_the_file_says_the_policys_name);
  tcase_add_test(tc, path_refusal_names_the_file);
  tcase_add_test(tc, bare_so_name_is_in_the_working_directory);
  tcase_add_test(tc, empty_name_is_invalid);
  suite_add_tcase(s, tc);

  tc = tcase_create("scan");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, scan_reports_every_module_with_its_status);
  tcase_add_test(tc, scan_marks_later_duplicates_shadowed);
  tcase_add_test(tc, scan_for_backends_skips_policies);
  tcase_add_test(tc, scan_for_policies_skips_backends);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return run_suite(suite());
}
