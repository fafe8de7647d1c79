/*
 * tests/check_config.c: the INI configuration (core/conf.c, confruntime.c,
 * confprint.c, conffile.c and params.c).
 *
 * Every error class is checked for its code, its "ORIGIN:LINE:" prefix and
 * the words of its message; then the lookup order, the environment
 * variables, policy_path resolution, module parameter schemas and the
 * printer. Inline texts (origin "<text>") keep each case next to its
 * assertions; files in tests/fixtures/ cover what needs a real file.
 */
#include "helpers.h"

#include "conf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN 1024

/* Flags that keep the user's environment and the installed file out. */
#define HERMETIC (CUA_RUNTIME_IGNORE_ENV | CUA_RUNTIME_NO_SYSTEM_CONFIG)

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

/* Loads @p text and asserts the code, that the message starts with
 * @p prefix and that it contains @p needle (NULL: not checked). */
static void expect_text_error(const char *text, int code, const char *prefix,
                              const char *needle) {
  cua__config *cfg = (cua__config *)1;
  char err[ERRLEN];
  int rc;

  rc = cua__config_load(&cfg, NULL, text, HERMETIC, err, sizeof err);
  ck_assert_msg(rc == code, "'%s': got %s, expected %s (message: %s)", text,
                code_name(rc), code_name(code), rc != 0 ? err : "");
  ck_assert_ptr_null(cfg);
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
                "message '%s' does not start with '%s'", err, prefix);
  if (needle != NULL)
    ck_assert_msg(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err,
                  needle);
}

/* Loads @p text, which must be valid. */
static cua__config *load_ok(const char *text) {
  cua__config *cfg = NULL;
  char err[ERRLEN];
  int rc;

  rc = cua__config_load(&cfg, NULL, text, HERMETIC, err, sizeof err);
  ck_assert_msg(rc == 0, "'%s': %s: %s", text, code_name(rc), err);
  ck_assert_ptr_nonnull(cfg);
  return cfg;
}

/* ------------------------------------------------------------------ */
/* Syntax. */

START_TEST(line_without_equals_is_a_syntax_error) {
  expect_text_error("[runtime]\nbackend = host\nnoequals\n",
                    CUA_ERR_CONFIG_SYNTAX,
                    "<text>:3: ", "expected 'key = value'");
  expect_text_error("[runtime]\nbackend = host\nnoequals\n",
                    CUA_ERR_CONFIG_SYNTAX, "<text>:3: ", "'noequals'");
}
END_TEST

START_TEST(header_without_bracket_is_a_syntax_error) {
  expect_text_error("; comment\n[runtime\nbackend = host\n",
                    CUA_ERR_CONFIG_SYNTAX, "<text>:2: ", "closing ']'");
}
END_TEST

START_TEST(text_after_header_is_a_syntax_error) {
  expect_text_error("[runtime] backend = host\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:1: ", "unexpected text after ']'");
}
END_TEST

START_TEST(key_before_any_section_is_a_syntax_error) {
  expect_text_error("\nbackend = host\n[runtime]\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "before any [section]");
}
END_TEST

START_TEST(empty_key_is_a_syntax_error) {
  expect_text_error("[runtime]\n= host\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "key name is missing");
}
END_TEST

START_TEST(overlong_line_is_a_syntax_error) {
  char text[1024];

  /* inih's line buffer is 200 bytes; a longer line must not be split into
   * two lines silently. */
  snprintf(text, sizeof text, "[policy.x]\n\nk = %0500d\n", 7);
  expect_text_error(text, CUA_ERR_CONFIG_SYNTAX, "<text>:3: ", "longer than");
}
END_TEST

START_TEST(repeated_section_is_a_syntax_error) {
  expect_text_error("[runtime]\nbackend = host\n[policy.x]\nk = 1\n"
                    "[runtime]\npolicy = x\n",
                    CUA_ERR_CONFIG_SYNTAX, "<text>:5: ",
                    "section [runtime] given twice (first at line 1)");
  /* Also when the first one had no keys. */
  expect_text_error("[policy.x]\n[policy.x]\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "first at line 1");
}
END_TEST

START_TEST(first_error_in_file_order_wins) {
  /* A syntax error that inih finds before our own error on a later line. */
  expect_text_error("[runtime]\noops\non_policy_error = maybe\n",
                    CUA_ERR_CONFIG_SYNTAX, "<text>:2: ", NULL);
  /* Our error first: the syntax error later is never reached. */
  expect_text_error("[runtime]\non_policy_error = maybe\noops\n",
                    CUA_ERR_CONFIG_BAD_VALUE, "<text>:2: ", NULL);
  /* A bad header after a bad line. */
  expect_text_error("[runtime]\noops\n[nope]\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", NULL);
}
END_TEST

START_TEST(indented_keys_comments_bom_and_crlf_are_accepted) {
  cua__config *cfg;

  /* An indented line is a key of its own, not a continuation of the
   * previous value (inih's multi-line mode would make it one). */
  cfg = load_ok("\xEF\xBB\xBF[runtime]\r\n  backend = host ; inline\r\n"
                "\tpolicy = least-loaded\r\n# hash comment\r\n; semicolon\r\n"
                "  [device.0]   ; a comment after the header\r\n"
                "  policy = x\r\n");
  ck_assert_str_eq(cfg->backend, "host");
  ck_assert_str_eq(cfg->policy, "least-loaded");
  ck_assert_int_eq(cfg->policy_line, 3);
  ck_assert_uint_eq(cfg->nsections, 2);
  ck_assert_int_eq(cfg->sections[1].line, 6);
  ck_assert_str_eq(cfg->sections[1].kv[0].value, "x");
  ck_assert_int_eq(cfg->sections[1].kv[0].line, 7);
  cua__config_free(cfg);
}
END_TEST

START_TEST(control_blanks_do_not_continue_the_previous_value) {
  cua__config *cfg;
  const cua__section *sec;

  /* inih takes a line that starts with any blank for the continuation of
   * the previous value; '\v', '\f' and '\r' are blanks too, and the reader
   * dropped only spaces and tabs, so this gave k = "b = c ;d". */
  cfg = load_ok("[policy.x]\nk = a\n\vb = c ;d\n\f\r c = d\n");
  sec = cua__config_section(cfg, "policy.x");
  ck_assert_ptr_nonnull(sec);
  ck_assert_uint_eq(sec->nkv, 3);
  ck_assert_str_eq(sec->kv[0].key, "k");
  ck_assert_str_eq(sec->kv[0].value, "a");
  ck_assert_str_eq(sec->kv[1].key, "b");
  ck_assert_str_eq(sec->kv[1].value, "c");
  ck_assert_int_eq(sec->kv[1].line, 3);
  ck_assert_str_eq(sec->kv[2].key, "c");
  ck_assert_str_eq(sec->kv[2].value, "d");
  cua__config_free(cfg);
  /* A header after such a blank is a header (inih switched sections
   * behind the reader's back, and k landed in [runtime]). */
  cfg = load_ok("[runtime]\nbackend = host\n\v[policy.q]\nk = v\n");
  ck_assert_uint_eq(cfg->nsections, 2);
  ck_assert_str_eq(cfg->sections[1].name, "policy.q");
  ck_assert_uint_eq(cfg->sections[1].nkv, 1);
  ck_assert_str_eq(cfg->sections[1].kv[0].value, "v");
  cua__config_free(cfg);
}
END_TEST

START_TEST(quoted_values_take_backslash_escapes) {
  cua__config *cfg;
  const cua__section *sec;
  static const char *const want[] = {"x ;y",
                                     "  padded  ",
                                     "tab\there\nnl\rcr",
                                     "\x01\x7f\xc3\xa9",
                                     "say \"hi\" \\ back",
                                     "",
                                     "#x;y",
                                     "\xc3\xa9t\xc3\xa9",
                                     "plain \"quotes\" inside",
                                     ";"};
  size_t i;

  cfg = load_ok("[runtime]\npolicy = \"my \\;policy\"\n"
                "[policy.x]\n"
                "a = \"x \\;y\"\n"
                "b = \"  padded  \"  ; a comment\n"
                "c = \"tab\\there\\nnl\\rcr\"\n"
                "d = \"\\x01\\x7F\\xc3\\xa9\"\n"
                "e = \"say \\\"hi\\\" \\\\ back\"\n"
                "f = \"\"\n"
                "g = \"#x;y\"\n"
                "h = \"\xc3\xa9t\xc3\xa9\"\n"
                "i = plain \"quotes\" inside\n"
                "j: \";\"\n");
  ck_assert_str_eq(cfg->policy, "my ;policy");
  sec = cua__config_section(cfg, "policy.x");
  ck_assert_ptr_nonnull(sec);
  ck_assert_uint_eq(sec->nkv, sizeof want / sizeof want[0]);
  for (i = 0; i < sec->nkv; i++)
    ck_assert_msg(strcmp(sec->kv[i].value, want[i]) == 0,
                  "%s: got '%s', expected '%s'", sec->kv[i].key,
                  sec->kv[i].value, want[i]);
  cua__config_free(cfg);
}
END_TEST

START_TEST(bad_quoted_values_are_syntax_errors) {
  expect_text_error(
      "[policy.x]\nk = \"abc\n", CUA_ERR_CONFIG_SYNTAX,
      "<text>:2: ", "[policy.x] k: the quoted value lacks its closing '\"'");
  /* inih cuts the comment before the value is seen: the message says how
   * to write the ';'. */
  expect_text_error("[policy.x]\nk = \"a ;b\"\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "write it \\;");
  expect_text_error(
      "[policy.x]\nk = \"a\"b\n", CUA_ERR_CONFIG_SYNTAX,
      "<text>:2: ", "[policy.x] k: text after the closing '\"': 'b'");
  expect_text_error("[policy.x]\nk = \"\\q\"\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "unknown escape '\\q'");
  expect_text_error("[policy.x]\nk = \"\\x4\"\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "'\\x' needs two hexadecimal digits");
  expect_text_error("[policy.x]\nk = \"a\\x00\"\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "cannot hold a NUL byte");
  expect_text_error("[policy.x]\nk = \"a\tb\"\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "control character 0x09 between quotes");
  expect_text_error("[policy.x]\nk = \"a\\\"\n", CUA_ERR_CONFIG_SYNTAX,
                    "<text>:2: ", "lacks its closing");
  /* The [runtime] checks see the value without its quotes. */
  expect_text_error("[runtime]\npolicy = \"\"\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "[runtime] policy: the value is empty");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Sections. */

START_TEST(unknown_section_is_refused_with_its_line) {
  expect_text_error("[runtime]\nbackend = host\n\n[frobnicate]\nx = 1\n",
                    CUA_ERR_CONFIG_UNKNOWN_SECTION,
                    "<text>:4: ", "unknown section [frobnicate]");
  /* Even without keys, which inih alone would never report. */
  expect_text_error("[runtime]\n[bogus]\n", CUA_ERR_CONFIG_UNKNOWN_SECTION,
                    "<text>:2: ", "[bogus]");
  expect_text_error("[Runtime]\n", CUA_ERR_CONFIG_UNKNOWN_SECTION,
                    "<text>:1: ", "[Runtime]");
  expect_text_error("[]\n", CUA_ERR_CONFIG_UNKNOWN_SECTION, "<text>:1: ", NULL);
}
END_TEST

START_TEST(module_sections_need_a_name) {
  expect_text_error("[policy.]\n", CUA_ERR_CONFIG_UNKNOWN_SECTION,
                    "<text>:1: ", "[policy.]");
  expect_text_error("\n[backend.]\n", CUA_ERR_CONFIG_UNKNOWN_SECTION,
                    "<text>:2: ", "[backend.]");
}
END_TEST

START_TEST(device_section_needs_a_non_negative_integer) {
  static const char *const bad[] = {"device.x",  "device.-1",
                                    "device.01", "device.",
                                    "device.1a", "device.99999999999"};
  char text[128], needle[64];
  size_t i;

  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, "[runtime]\n\n[%s]\npolicy = x\n", bad[i]);
    snprintf(needle, sizeof needle, "[%s]", bad[i]);
    expect_text_error(text, CUA_ERR_CONFIG_UNKNOWN_SECTION,
                      "<text>:3: ", needle);
  }
}
END_TEST

START_TEST(device_section_accepts_only_policy) {
  expect_text_error("[device.0]\npolicy = x\nstreams = 2\n",
                    CUA_ERR_CONFIG_UNKNOWN_KEY,
                    "<text>:3: ", "[device.0] streams: unknown key");
  expect_text_error("[device.3]\npolicy =\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "empty");
  expect_text_error("[device.2]\npolicy = a\n\npolicy = b\n",
                    CUA_ERR_CONFIG_DUPLICATE_KEY,
                    "<text>:4: ", "first at line 2");
}
END_TEST

START_TEST(module_sections_keep_every_key_with_its_line) {
  cua__config *cfg = load_ok("[policy.affinity]\nrule = a\nrule = b\n"
                             "[backend.host]\nanything = goes\n");
  const cua__section *s = cua__config_section(cfg, "policy.affinity");

  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->line, 1);
  ck_assert_uint_eq(s->nkv, 2);
  ck_assert_str_eq(s->kv[1].key, "rule");
  ck_assert_str_eq(s->kv[1].value, "b");
  ck_assert_int_eq(s->kv[1].line, 3);
  s = cua__config_section(cfg, "backend.host");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->kv[0].line, 5);
  ck_assert_ptr_null(cua__config_section(cfg, "policy.nope"));
  ck_assert_ptr_null(cua__config_section(cfg, "runtime"));
  cua__config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* [runtime]. */

START_TEST(unknown_runtime_key_lists_the_valid_ones) {
  expect_text_error("[runtime]\nbackend = host\nstreams = 4\n",
                    CUA_ERR_CONFIG_UNKNOWN_KEY,
                    "<text>:3: ", "[runtime] streams: unknown key");
  expect_text_error(
      "[runtime]\nbackend = host\nstreams = 4\n", CUA_ERR_CONFIG_UNKNOWN_KEY,
      "<text>:3: ",
      "backend, devices, policy, policy_path, on_policy_error, launch");
}
END_TEST

START_TEST(duplicate_runtime_key_names_the_first_line) {
  expect_text_error("[runtime]\npolicy = a\nbackend = host\npolicy = b\n",
                    CUA_ERR_CONFIG_DUPLICATE_KEY, "<text>:4: ",
                    "[runtime] policy: given twice (first at line 2)");
}
END_TEST

/* Any name may be a backend (a NAME.so on the backend path): the parser
 * keeps it with its line, and the runtime looks it up when it opens
 * (tests/check_backends.c). Only an empty value is refused here. */
START_TEST(backend_name_is_kept_with_its_line_and_empty_refused) {
  cua__config *cfg = load_ok("[runtime]\npolicy = x\nbackend = gpu\n");
  ck_assert_str_eq(cfg->backend, "gpu");
  ck_assert_int_eq(cfg->backend_line, 3);
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\npolicy = x\n");
  ck_assert_str_eq(cfg->backend, "auto");
  ck_assert_int_eq(cfg->backend_line, 0);
  cua__config_free(cfg);
  expect_text_error("[runtime]\nbackend =\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ",
                    "[runtime] backend: the value is empty; give auto, a "
                    "backend name or the path of a .so");
}
END_TEST

START_TEST(bad_devices_lists_are_refused) {
  expect_text_error("[runtime]\ndevices = 0,x\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "'x' is not a device number");
  expect_text_error("[runtime]\ndevices = -1\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "'-1' is not a device number");
  expect_text_error("[runtime]\ndevices = 0,,1\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "empty entry");
  expect_text_error("[runtime]\ndevices = 0,\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "empty entry");
  expect_text_error("[runtime]\ndevices =\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "devices");
  expect_text_error("[runtime]\n\ndevices = 1, 0, 1\n",
                    CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:3: ", "device 1 is listed twice");
  expect_text_error("[runtime]\ndevices = ALL\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "'ALL'");
  expect_text_error("[runtime]\ndevices = 3000000000\n",
                    CUA_ERR_CONFIG_BAD_VALUE, "<text>:2: ", NULL);
}
END_TEST

START_TEST(devices_list_is_parsed) {
  cua__config *cfg = load_ok("[runtime]\ndevices = 2, 0 ,7\n");

  ck_assert_uint_eq(cfg->ndevices, 3);
  ck_assert_int_eq(cfg->devices[0], 2);
  ck_assert_int_eq(cfg->devices[1], 0);
  ck_assert_int_eq(cfg->devices[2], 7);
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\ndevices = all\n");
  ck_assert_ptr_null(cfg->devices);
  ck_assert_uint_eq(cfg->ndevices, 0);
  cua__config_free(cfg);
}
END_TEST

START_TEST(bad_policy_is_refused) {
  expect_text_error("[runtime]\npolicy =\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "[runtime] policy");
}
END_TEST

START_TEST(bad_policy_path_is_refused) {
  expect_text_error("[runtime]\npolicy_path = a::b\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "empty entry");
  expect_text_error("[runtime]\npolicy_path =\n", CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "[runtime] policy_path");
}
END_TEST

START_TEST(bad_on_policy_error_is_refused) {
  expect_text_error("[runtime]\non_policy_error = ignore\n",
                    CUA_ERR_CONFIG_BAD_VALUE,
                    "<text>:2: ", "'ignore' is not one of error, fallback");
}
END_TEST

START_TEST(launch_is_caller_thread_auto_pipeline_or_relay) {
  cua__config *cfg = load_ok("[runtime]\nlaunch = thread\n");
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_THREAD);
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\nlaunch = auto\n");
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_AUTO);
  ck_assert_str_eq(cua__conf_launch_name(cfg->launch), "auto");
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\nlaunch = caller\n");
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_CALLER);
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\nlaunch = pipeline\n");
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_PIPELINE);
  ck_assert_str_eq(cua__conf_launch_name(cfg->launch), "pipeline");
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\nlaunch = relay\n");
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_RELAY);
  ck_assert_str_eq(cua__conf_launch_name(cfg->launch), "relay");
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\n");
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_AUTO);
  cua__config_free(cfg);
  expect_text_error(
      "[runtime]\nlaunch = later\n", CUA_ERR_CONFIG_BAD_VALUE, "<text>:2: ",
      "[runtime] launch: 'later' is not one of caller, thread, auto, "
      "pipeline, relay");
}
END_TEST

START_TEST(env_launch_overrides_the_file) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  setenv("CUASYNC_LAUNCH", "thread", 1);
  rc = cua__config_load(&cfg, NULL, "[runtime]\nlaunch = caller\n",
                        CUA_RUNTIME_NO_SYSTEM_CONFIG, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_THREAD);
  ck_assert_int_eq(cfg->launch_from_env, 1);
  cua__config_free(cfg);
  /* Not with CUA_RUNTIME_IGNORE_ENV. */
  rc = cua__config_load(&cfg, NULL, "[runtime]\nlaunch = caller\n",
                        CUA_RUNTIME_NO_SYSTEM_CONFIG | CUA_RUNTIME_IGNORE_ENV,
                        err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(cfg->launch, CUA__LAUNCH_CALLER);
  cua__config_free(cfg);
  setenv("CUASYNC_LAUNCH", "soon", 1);
  cfg = NULL;
  rc = cua__config_load(&cfg, NULL, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  unsetenv("CUASYNC_LAUNCH");
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_BAD_VALUE);
  ck_assert_ptr_null(cfg);
  ck_assert_str_eq(
      err,
      "$CUASYNC_LAUNCH: 'soon' is not one of caller, thread, auto, pipeline, "
      "relay");
}
END_TEST

/* launch_threads = auto (the default, 0: the runtime decides) | 1..8,
 * $CUASYNC_LAUNCH_THREADS over it. */
START_TEST(launch_threads_is_one_to_eight) {
  cua__config *cfg = load_ok("[runtime]\n");
  ck_assert_int_eq(cfg->launch_threads, 0);
  ck_assert_int_eq(cfg->launch_threads_from_env, 0);
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\nlaunch_threads = auto\n");
  ck_assert_int_eq(cfg->launch_threads, 0);
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\nlaunch_threads = 1\n");
  ck_assert_int_eq(cfg->launch_threads, 1);
  cua__config_free(cfg);
  cfg = load_ok("[runtime]\nlaunch_threads = 8\n");
  ck_assert_int_eq(cfg->launch_threads, 8);
  cua__config_free(cfg);
  expect_text_error(
      "[runtime]\nlaunch_threads = 0\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
      "<text>:2: ", "[runtime] launch_threads: 0 is out of range [1, 8]");
  expect_text_error(
      "[runtime]\nlaunch_threads = 9\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
      "<text>:2: ", "[runtime] launch_threads: 9 is out of range [1, 8]");
  expect_text_error(
      "[runtime]\nlaunch_threads = two\n", CUA_ERR_CONFIG_BAD_VALUE,
      "<text>:2: ",
      "[runtime] launch_threads: 'two' is not auto or an integer");
}
END_TEST

START_TEST(env_launch_threads_overrides_the_file) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  setenv("CUASYNC_LAUNCH_THREADS", "3", 1);
  rc = cua__config_load(&cfg, NULL, "[runtime]\nlaunch_threads = 1\n",
                        CUA_RUNTIME_NO_SYSTEM_CONFIG, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(cfg->launch_threads, 3);
  ck_assert_int_eq(cfg->launch_threads_from_env, 1);
  cua__config_free(cfg);
  /* Not with CUA_RUNTIME_IGNORE_ENV. */
  rc = cua__config_load(&cfg, NULL, "[runtime]\nlaunch_threads = 1\n",
                        CUA_RUNTIME_NO_SYSTEM_CONFIG | CUA_RUNTIME_IGNORE_ENV,
                        err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(cfg->launch_threads, 1);
  cua__config_free(cfg);
  static const struct {
    const char *value;
    int code;
    const char *msg;
  } bad[] = {
      {"0", CUA_ERR_CONFIG_OUT_OF_RANGE,
       "$CUASYNC_LAUNCH_THREADS: 0 is out of range [1, 8]"},
      {"12", CUA_ERR_CONFIG_OUT_OF_RANGE,
       "$CUASYNC_LAUNCH_THREADS: 12 is out of range [1, 8]"},
      {"many", CUA_ERR_CONFIG_BAD_VALUE,
       "$CUASYNC_LAUNCH_THREADS: 'many' is not auto or an integer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("CUASYNC_LAUNCH_THREADS", bad[i].value, 1);
    cfg = NULL;
    rc = cua__config_load(&cfg, NULL, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                          sizeof err);
    ck_assert_int_eq(rc, bad[i].code);
    ck_assert_ptr_null(cfg);
    ck_assert_str_eq(err, bad[i].msg);
  }
  unsetenv("CUASYNC_LAUNCH_THREADS");
}
END_TEST

START_TEST(runtime_values_are_resolved) {
  cua__config *cfg =
      load_ok("[runtime]\nbackend = cuda\non_policy_error = fallback\n"
              "policy_path = rel:/abs\n");

  ck_assert_str_eq(cfg->backend, "cuda");
  ck_assert_int_eq(cfg->on_policy_error, CUA__ON_POLICY_ERROR_FALLBACK);
  /* Not from a file: relative entries stay relative. */
  ck_assert_uint_eq(cfg->npolicy_path, 2);
  ck_assert_str_eq(cfg->policy_path[0], "rel");
  ck_assert_str_eq(cfg->policy_path[1], "/abs");
  ck_assert_str_eq(cfg->policy, "round-robin");
  ck_assert_int_eq(cfg->policy_line, 0);
  ck_assert_ptr_null(cfg->path);
  ck_assert_str_eq(cfg->origin, "<text>");
  cua__config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Files and lookup order. */

START_TEST(file_errors_are_reported_as_file_and_line) {
  char path[4096], prefix[4200], err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  snprintf(path, sizeof path, "%s", fixture("unknown-key.ini"));
  snprintf(prefix, sizeof prefix, "%s:5: ", path);
  rc = cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_UNKNOWN_KEY);
  ck_assert_ptr_null(cfg);
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
                "'%s' does not start with '%s'", err, prefix);
  ck_assert_ptr_nonnull(strstr(err, "threads"));
}
END_TEST

START_TEST(good_file_is_read_whole) {
  char path[4096], dir[4096], want[8192], err[ERRLEN];
  cua__config *cfg = NULL;
  const cua__section *s;
  int rc, line;

  snprintf(path, sizeof path, "%s", fixture("good.ini"));
  snprintf(dir, sizeof dir, "%s", fixture(""));
  dir[strlen(dir) - 1] = '\0'; /* fixture("") ends with '/' */
  rc = cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->path, path);
  ck_assert_str_eq(cfg->origin, path);
  ck_assert_str_eq(cfg->backend, "host");
  ck_assert_uint_eq(cfg->ndevices, 2);
  ck_assert_str_eq(cfg->policy, "single-stream");
  ck_assert_int_eq(cfg->policy_line, 6);
  ck_assert_int_eq(cfg->policy_from_env, 0);
  ck_assert_int_eq(cfg->on_policy_error, CUA__ON_POLICY_ERROR_FALLBACK);
  /* A relative policy_path entry is relative to the file's directory. */
  ck_assert_uint_eq(cfg->npolicy_path, 2);
  snprintf(want, sizeof want, "%s/policies", dir);
  ck_assert_str_eq(cfg->policy_path[0], want);
  ck_assert_str_eq(cfg->policy_path[1], "/opt/cuasync/policies");
  ck_assert_uint_eq(cfg->nsections, 5);
  s = cua__config_section(cfg, "policy.affinity");
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->line, 13);
  ck_assert_uint_eq(s->nkv, 3);
  ck_assert_str_eq(cua__config_device_policy(cfg, 1, &line), "least-loaded");
  ck_assert_int_eq(line, 22);
  ck_assert_ptr_null(cua__config_device_policy(cfg, 0, &line));
  ck_assert_int_eq(line, 0);
  ck_assert_ptr_null(cua__config_device_policy(cfg, -1, NULL));
  cua__config_free(cfg);
}
END_TEST

START_TEST(policy_path_relative_to_a_relative_file) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  /* A file named without a directory is in the working directory. */
  ck_assert_int_eq(chdir(fixture("")), 0);
  rc = cua__config_load(&cfg, "good.ini", NULL, HERMETIC, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->policy_path[0], "./policies");
  cua__config_free(cfg);
}
END_TEST

START_TEST(missing_explicit_file_is_not_found) {
  char err[ERRLEN];
  cua__config *cfg = (cua__config *)1;
  int rc;

  rc = cua__config_load(&cfg, "/nonexistent/cuasync-test.ini", NULL, HERMETIC,
                        err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_NOT_FOUND);
  ck_assert_ptr_null(cfg);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/cuasync-test.ini"));
  ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
  ck_assert_ptr_null(strstr(err, "CUASYNC_CONFIG"));
}
END_TEST

START_TEST(directory_as_file_is_not_found) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  rc = cua__config_load(&cfg, "/", NULL, HERMETIC, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err, strerror(EISDIR)));
}
END_TEST

START_TEST(missing_env_file_names_the_variable) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  setenv("CUASYNC_CONFIG", "/nonexistent/from-env.ini", 1);
  rc = cua__config_load(&cfg, NULL, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_NOT_FOUND);
  ck_assert_ptr_null(cfg);
  ck_assert_ptr_nonnull(strstr(err, "$CUASYNC_CONFIG"));
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/from-env.ini"));
  ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
}
END_TEST

START_TEST(explicit_path_beats_env) {
  char good[4096], err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  setenv("CUASYNC_CONFIG", fixture("env.ini"), 1);
  snprintf(good, sizeof good, "%s", fixture("good.ini"));
  rc = cua__config_load(&cfg, good, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->path, good);
  ck_assert_str_eq(cfg->policy, "single-stream");
  cua__config_free(cfg);
}
END_TEST

START_TEST(text_beats_path) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  rc = cua__config_load(&cfg, "/nonexistent.ini", "[runtime]\npolicy = t\n",
                        HERMETIC, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_ptr_null(cfg->path);
  ck_assert_str_eq(cfg->origin, "<text>");
  ck_assert_str_eq(cfg->policy, "t");
  cua__config_free(cfg);
}
END_TEST

START_TEST(env_file_is_used_without_a_path) {
  char env[4096], err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  snprintf(env, sizeof env, "%s", fixture("env.ini"));
  setenv("CUASYNC_CONFIG", env, 1);
  rc = cua__config_load(&cfg, NULL, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->path, env);
  ck_assert_str_eq(cfg->origin, env);
  ck_assert_int_eq(cfg->policy_line, 5);
  cua__config_free(cfg);
}
END_TEST

START_TEST(ignore_env_skips_the_env_file) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  setenv("CUASYNC_CONFIG", "/nonexistent/from-env.ini", 1);
  rc = cua__config_load(&cfg, NULL, NULL, HERMETIC, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_ptr_null(cfg->path);
  ck_assert_str_eq(cfg->origin, "<built-in>");
  cua__config_free(cfg);
}
END_TEST

START_TEST(empty_env_counts_as_unset) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  setenv("CUASYNC_CONFIG", "", 1);
  setenv("CUASYNC_POLICY", "", 1);
  rc = cua__config_load(&cfg, NULL, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->origin, "<built-in>");
  ck_assert_str_eq(cfg->policy, "round-robin");
  ck_assert_int_eq(cfg->policy_from_env, 0);
  cua__config_free(cfg);
}
END_TEST

START_TEST(no_system_config_gives_the_built_in_default) {
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  unsetenv("CUASYNC_CONFIG");
  unsetenv("CUASYNC_POLICY");
  rc = cua__config_load(&cfg, NULL, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_ptr_null(cfg->path);
  ck_assert_str_eq(cfg->origin, "<built-in>");
  ck_assert_uint_eq(cfg->nsections, 0);
  ck_assert_str_eq(cfg->backend, "auto");
  ck_assert_ptr_null(cfg->devices);
  ck_assert_str_eq(cfg->policy, "round-robin");
  ck_assert_int_eq(cfg->policy_line, 0);
  ck_assert_int_eq(cfg->policy_from_env, 0);
  ck_assert_uint_eq(cfg->npolicy_path, 0);
  ck_assert_int_eq(cfg->on_policy_error, CUA__ON_POLICY_ERROR_FAIL);
  cua__config_free(cfg);
}
END_TEST

START_TEST(system_config_is_read_when_present) {
  const char *sys = CUA_SYSCONFDIR "/cuasync.ini";
  char err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  /* Whichever way this machine is set up, the result must follow it. */
  unsetenv("CUASYNC_CONFIG");
  rc = cua__config_load(&cfg, NULL, NULL, 0, err, sizeof err);
  if (access(sys, F_OK) != 0) {
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_str_eq(cfg->origin, "<built-in>");
  } else if (rc == 0) {
    ck_assert_str_eq(cfg->path, sys);
  } else {
    ck_assert_ptr_nonnull(strstr(err, sys));
  }
  cua__config_free(cfg);
}
END_TEST

START_TEST(env_policy_overrides_the_file) {
  char good[4096], err[ERRLEN];
  cua__config *cfg = NULL;
  int rc;

  setenv("CUASYNC_POLICY", "least-loaded", 1);
  snprintf(good, sizeof good, "%s", fixture("good.ini"));
  rc = cua__config_load(&cfg, good, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->policy, "least-loaded");
  ck_assert_int_eq(cfg->policy_from_env, 1);
  ck_assert_int_eq(cfg->policy_line, 0);
  cua__config_free(cfg);

  /* Also over the built-in default. */
  rc = cua__config_load(&cfg, NULL, NULL, CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->policy, "least-loaded");
  ck_assert_int_eq(cfg->policy_from_env, 1);
  cua__config_free(cfg);

  /* Not with IGNORE_ENV. */
  rc = cua__config_load(&cfg, good, NULL, HERMETIC, err, sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_str_eq(cfg->policy, "single-stream");
  ck_assert_int_eq(cfg->policy_from_env, 0);
  ck_assert_int_eq(cfg->policy_line, 6);
  cua__config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Module parameters. */

enum { P_STREAMS, P_RATIO, P_SPIN, P_WITHIN, P_MODE, P_RULE, P_COUNT };

static const cua_param_spec test_spec[P_COUNT] = {
    {"streams", CUA_PARAM_INT, "4", 1, 64, NULL, "streams per device", 0},
    {"ratio", CUA_PARAM_DOUBLE, "0.5", 0, 1, NULL, "a fraction", 0},
    {"spin", CUA_PARAM_BOOL, "no", 0, 0, NULL, "spin or sleep", 0},
    {"within", CUA_PARAM_STRING, NULL, 0, 0, NULL, "nested policy", 0},
    {"mode", CUA_PARAM_ENUM, "ops", 0, 0, "ops|time|bytes", "load measure", 0},
    {"rule", CUA_PARAM_STRING, NULL, 0, 0, NULL, "a rule", CUA_PARAM_MULTI},
};

/* Checks [policy.test] of @p text against test_spec; the code is returned
 * and the values (on success) left in *vals. */
static int params_of(const char *text, cua_param_value **vals, char *err) {
  cua__config *cfg = load_ok(text);
  int rc = cua__config_params(cfg, "policy.test", test_spec, P_COUNT, vals, err,
                              ERRLEN);
  cua__config_free(cfg);
  return rc;
}

static void expect_params_error(const char *text, int code, const char *prefix,
                                const char *needle) {
  cua_param_value *vals = (cua_param_value *)1;
  char err[ERRLEN];
  int rc = params_of(text, &vals, err);

  ck_assert_msg(rc == code, "'%s': got %s, expected %s (message: %s)", text,
                code_name(rc), code_name(code), rc != 0 ? err : "");
  ck_assert_ptr_null(vals);
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
                "message '%s' does not start with '%s'", err, prefix);
  if (needle != NULL)
    ck_assert_msg(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err,
                  needle);
}

START_TEST(params_defaults_are_filled_in) {
  cua_param_value *v = NULL;
  char err[ERRLEN];
  int rc = params_of("[runtime]\n", &v, err);

  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(v[P_STREAMS].present, 0);
  ck_assert_int_eq(v[P_STREAMS].i, 4);
  ck_assert_double_eq(v[P_STREAMS].d, 4.0);
  ck_assert_str_eq(v[P_STREAMS].s, "4");
  ck_assert_double_eq(v[P_RATIO].d, 0.5);
  ck_assert_int_eq(v[P_SPIN].i, 0);
  ck_assert_str_eq(v[P_SPIN].s, "no");
  ck_assert_int_eq(v[P_WITHIN].present, 0);
  ck_assert_ptr_null(v[P_WITHIN].s);
  ck_assert_int_eq(v[P_MODE].i, 0);
  ck_assert_str_eq(v[P_MODE].s, "ops");
  ck_assert_uint_eq(v[P_RULE].count, 0);
  ck_assert_ptr_null(v[P_RULE].list);
  cua__config_params_free(v, P_COUNT);

  /* Without any configuration at all. */
  rc = cua__config_params(NULL, "policy.test", test_spec, P_COUNT, &v, err,
                          sizeof err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(v[P_STREAMS].i, 4);
  cua__config_params_free(v, P_COUNT);
}
END_TEST

START_TEST(params_given_values_are_present) {
  cua_param_value *v = NULL;
  char err[ERRLEN];
  int rc = params_of("[policy.test]\nstreams = 64\nratio = 1e-1\nspin = ON\n"
                     "within = round-robin\nmode = bytes\n",
                     &v, err);
  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(v[P_STREAMS].present, 1);
  ck_assert_int_eq(v[P_STREAMS].i, 64);
  ck_assert_double_eq(v[P_STREAMS].d, 64.0);
  ck_assert_int_eq(v[P_RATIO].present, 1);
  ck_assert_double_eq_tol(v[P_RATIO].d, 0.1, 1e-12);
  ck_assert_str_eq(v[P_RATIO].s, "1e-1");
  ck_assert_int_eq(v[P_SPIN].present, 1);
  ck_assert_int_eq(v[P_SPIN].i, 1);
  ck_assert_str_eq(v[P_WITHIN].s, "round-robin");
  ck_assert_int_eq(v[P_WITHIN].present, 1);
  ck_assert_int_eq(v[P_MODE].i, 2);
  ck_assert_int_eq(v[P_RULE].present, 0);
  cua__config_params_free(v, P_COUNT);
}
END_TEST

START_TEST(params_bool_spellings) {
  static const char *const yes[] = {"true", "YES", "on", "1"};
  static const char *const no[] = {"false", "No", "OFF", "0"};
  cua_param_value *v = NULL;
  char text[128], err[ERRLEN];
  size_t i;

  for (i = 0; i < 4; i++) {
    snprintf(text, sizeof text, "[policy.test]\nspin = %s\n", yes[i]);
    ck_assert_int_eq(params_of(text, &v, err), 0);
    ck_assert_int_eq(v[P_SPIN].i, 1);
    cua__config_params_free(v, P_COUNT);
    snprintf(text, sizeof text, "[policy.test]\nspin = %s\n", no[i]);
    ck_assert_int_eq(params_of(text, &v, err), 0);
    ck_assert_int_eq(v[P_SPIN].i, 0);
    cua__config_params_free(v, P_COUNT);
  }
}
END_TEST

START_TEST(params_multi_keeps_every_value_in_order) {
  cua_param_value *v = NULL;
  char err[ERRLEN];
  int rc = params_of("[policy.test]\nrule = tag:prefill -> 0\nstreams = 2\n"
                     "rule = tag:decode -> 1\nrule = x\n",
                     &v, err);

  ck_assert_msg(rc == 0, "%s", err);
  ck_assert_int_eq(v[P_RULE].present, 1);
  ck_assert_uint_eq(v[P_RULE].count, 3);
  ck_assert_str_eq(v[P_RULE].list[0], "tag:prefill -> 0");
  ck_assert_str_eq(v[P_RULE].list[1], "tag:decode -> 1");
  ck_assert_str_eq(v[P_RULE].list[2], "x");
  ck_assert_str_eq(v[P_RULE].s, "x");
  cua__config_params_free(v, P_COUNT);
}
END_TEST

START_TEST(params_multi_default_is_replaced_by_given_values) {
  static const cua_param_spec spec[] = {
      {"tag", CUA_PARAM_INT, "7", 0, 100, NULL, "", CUA_PARAM_MULTI},
  };
  cua__config *cfg = load_ok("[policy.m]\ntag = 1\ntag = 2\n");
  cua_param_value *v = NULL;
  char err[ERRLEN];

  ck_assert_int_eq(
      cua__config_params(cfg, "policy.m", spec, 1, &v, err, sizeof err), 0);
  ck_assert_uint_eq(v[0].count, 2);
  ck_assert_str_eq(v[0].list[0], "1");
  ck_assert_str_eq(v[0].list[1], "2");
  cua__config_params_free(v, 1);
  ck_assert_int_eq(
      cua__config_params(cfg, "policy.absent", spec, 1, &v, err, sizeof err),
      0);
  ck_assert_int_eq(v[0].present, 0);
  ck_assert_uint_eq(v[0].count, 1);
  ck_assert_str_eq(v[0].list[0], "7");
  ck_assert_int_eq(v[0].i, 7);
  cua__config_params_free(v, 1);
  cua__config_free(cfg);
}
END_TEST

START_TEST(params_unknown_key_lists_the_valid_ones) {
  expect_params_error("[policy.test]\nstreams = 2\nstream = 3\n",
                      CUA_ERR_CONFIG_UNKNOWN_KEY,
                      "<text>:3: ", "[policy.test] stream: unknown key");
  expect_params_error("[policy.test]\nstreams = 2\nstream = 3\n",
                      CUA_ERR_CONFIG_UNKNOWN_KEY,
                      "<text>:3: ", "streams, ratio, spin, within, mode, rule");
}
END_TEST

START_TEST(params_section_without_schema_takes_no_keys) {
  cua__config *cfg = load_ok("[policy.none]\n\nx = 1\n");
  cua_param_value *v = (cua_param_value *)1;
  char err[ERRLEN];

  ck_assert_int_eq(
      cua__config_params(cfg, "policy.none", NULL, 0, &v, err, sizeof err),
      CUA_ERR_CONFIG_UNKNOWN_KEY);
  ck_assert_ptr_null(v);
  ck_assert_ptr_nonnull(strstr(err, "<text>:3: [policy.none] x"));
  ck_assert_ptr_nonnull(strstr(err, "takes no keys"));
  cua__config_free(cfg);
}
END_TEST

START_TEST(params_int_out_of_range_names_the_range) {
  expect_params_error(
      "[policy.test]\nstreams = 65\n", CUA_ERR_CONFIG_OUT_OF_RANGE,
      "<text>:2: ", "[policy.test] streams: 65 is out of range [1, 64]");
  expect_params_error("[policy.test]\n\nstreams = 0\n",
                      CUA_ERR_CONFIG_OUT_OF_RANGE, "<text>:3: ", "[1, 64]");
  expect_params_error("[policy.test]\nstreams = 99999999999999999999\n",
                      CUA_ERR_CONFIG_OUT_OF_RANGE, "<text>:2: ", "[1, 64]");
}
END_TEST

START_TEST(params_bad_int_is_refused) {
  expect_params_error("[policy.test]\nstreams = 4x\n", CUA_ERR_CONFIG_BAD_VALUE,
                      "<text>:2: ", "'4x' is not an integer");
  expect_params_error("[policy.test]\nstreams = 1.5\n",
                      CUA_ERR_CONFIG_BAD_VALUE, "<text>:2: ", "not an integer");
  expect_params_error("[policy.test]\nstreams =\n", CUA_ERR_CONFIG_BAD_VALUE,
                      "<text>:2: ", "not an integer");
}
END_TEST

START_TEST(params_bad_double_is_refused) {
  expect_params_error("[policy.test]\nratio = half\n", CUA_ERR_CONFIG_BAD_VALUE,
                      "<text>:2: ", "'half' is not a finite number");
  expect_params_error("[policy.test]\nratio = nan\n", CUA_ERR_CONFIG_BAD_VALUE,
                      "<text>:2: ", NULL);
  expect_params_error("[policy.test]\nratio = 1.5\n",
                      CUA_ERR_CONFIG_OUT_OF_RANGE,
                      "<text>:2: ", "out of range [0, 1]");
  /* Too near 0 for a double: not read as 0, which it does not say. */
  expect_params_error("[policy.test]\nratio = 1e-400\n",
                      CUA_ERR_CONFIG_OUT_OF_RANGE, "<text>:2: ",
                      "[policy.test] ratio: 1e-400 is out of range: it is too "
                      "near 0 for a double (the smallest is 2.22507e-308)");
  expect_params_error("[policy.test]\nratio = -1e-310\n",
                      CUA_ERR_CONFIG_OUT_OF_RANGE, "<text>:2: ", "too near 0");
}
END_TEST

START_TEST(params_bad_bool_is_refused) {
  expect_params_error("[policy.test]\nspin = maybe\n", CUA_ERR_CONFIG_BAD_VALUE,
                      "<text>:2: ",
                      "'maybe' is not a boolean (true/false, yes/no, on/off, "
                      "1/0)");
}
END_TEST

START_TEST(params_enum_outside_choices_lists_them) {
  expect_params_error("[policy.test]\nmode = fast\n", CUA_ERR_CONFIG_BAD_VALUE,
                      "<text>:2: ", "'fast' is not one of ops|time|bytes");
  /* Choices match whole words only. */
  expect_params_error("[policy.test]\nmode = op\n", CUA_ERR_CONFIG_BAD_VALUE,
                      "<text>:2: ", NULL);
}
END_TEST

START_TEST(params_duplicate_key_names_the_first_line) {
  expect_params_error("[policy.test]\nstreams = 2\n\nstreams = 3\n",
                      CUA_ERR_CONFIG_DUPLICATE_KEY, "<text>:4: ",
                      "[policy.test] streams: given twice (first at line 2)");
}
END_TEST

START_TEST(params_bad_module_default_is_internal) {
  static const cua_param_spec bad_default[] = {
      {"streams", CUA_PARAM_INT, "many", 1, 64, NULL, "", 0},
  };
  static const cua_param_spec no_choices[] = {
      {"mode", CUA_PARAM_ENUM, "a", 0, 0, NULL, "", 0},
  };
  cua__config *cfg = load_ok("[runtime]\n");
  cua_param_value *v = (cua_param_value *)1;
  char err[ERRLEN];

  ck_assert_int_eq(cua__config_params(cfg, "policy.bad", bad_default, 1, &v,
                                      err, sizeof err),
                   CUA_ERR_INTERNAL);
  ck_assert_ptr_null(v);
  ck_assert_ptr_nonnull(strstr(err, "[policy.bad] streams"));
  ck_assert_ptr_nonnull(strstr(err, "default"));
  ck_assert_int_eq(
      cua__config_params(cfg, "policy.bad", no_choices, 1, &v, err, sizeof err),
      CUA_ERR_INTERNAL);
  ck_assert_ptr_nonnull(strstr(err, "[policy.bad] mode"));
  cua__config_free(cfg);
}
END_TEST

START_TEST(params_errors_in_a_file_name_file_and_line) {
  static const cua_param_spec spec[] = {
      {"streams", CUA_PARAM_INT, "4", 1, 64, NULL, "", 0},
  };
  char path[4096], prefix[4200], err[ERRLEN];
  cua__config *cfg = NULL;
  cua_param_value *v = NULL;

  snprintf(path, sizeof path, "%s", fixture("bad-params.ini"));
  ck_assert_int_eq(
      cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err), 0);
  ck_assert_int_eq(
      cua__config_params(cfg, "policy.test", spec, 1, &v, err, sizeof err),
      CUA_ERR_CONFIG_OUT_OF_RANGE);
  snprintf(prefix, sizeof prefix, "%s:5: [policy.test] streams: ", path);
  ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0,
                "'%s' does not start with '%s'", err, prefix);
  cua__config_free(cfg);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Printing. */

/* Prints @p cfg, which must print, and returns the text (free() it). */
static char *print_ok(const cua__config *cfg) {
  char *text = NULL, err[ERRLEN] = "";
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  int rc;

  ck_assert_ptr_nonnull(f);
  rc = cua__config_print(cfg, f, err, sizeof err);
  fclose(f);
  ck_assert_msg(rc == 0, "print: %s: %s", code_name(rc), err);
  return text;
}

/* Asserts that @p cfg prints as text that reads back as the same
 * configuration: the [runtime] values and every other section's keys and
 * values, byte for byte. */
static void expect_reads_back(const cua__config *cfg) {
  char err[ERRLEN], *text = print_ok(cfg);
  cua__config *again = NULL;
  size_t i, j;

  ck_assert_msg(
      cua__config_load(&again, NULL, text, HERMETIC, err, sizeof err) == 0,
      "%s in:\n%s", err, text);
  ck_assert_str_eq(again->backend, cfg->backend);
  ck_assert_str_eq(again->policy, cfg->policy);
  ck_assert_uint_eq(again->ndevices, cfg->ndevices);
  for (i = 0; i < cfg->ndevices; i++)
    ck_assert_int_eq(again->devices[i], cfg->devices[i]);
  ck_assert_uint_eq(again->npolicy_path, cfg->npolicy_path);
  for (i = 0; i < cfg->npolicy_path; i++)
    ck_assert_str_eq(again->policy_path[i], cfg->policy_path[i]);
  ck_assert_int_eq(again->on_policy_error, cfg->on_policy_error);
  ck_assert_int_eq(again->launch, cfg->launch);
  ck_assert_uint_eq(again->nobservers, cfg->nobservers);
  for (i = 0; i < cfg->nobservers; i++)
    ck_assert_str_eq(again->observers[i], cfg->observers[i]);
  for (i = 0; i < cfg->nsections; i++) {
    const cua__section *s = &cfg->sections[i];
    const cua__section *t = cua__config_section(again, s->name);
    ck_assert_ptr_nonnull(t);
    if (strcmp(s->name, "runtime") == 0)
      continue;
    ck_assert_uint_eq(t->nkv, s->nkv);
    for (j = 0; j < s->nkv; j++) {
      ck_assert_msg(strcmp(t->kv[j].key, s->kv[j].key) == 0 &&
                        strcmp(t->kv[j].value, s->kv[j].value) == 0,
                    "[%s] '%s' = '%s' read back as '%s' = '%s' from:\n%s",
                    s->name, s->kv[j].key, s->kv[j].value, t->kv[j].key,
                    t->kv[j].value, text);
    }
  }
  cua__config_free(again);
  free(text);
}

START_TEST(printed_configuration_reads_back_the_same) {
  char good[4096], err[ERRLEN], *text;
  cua__config *cfg = NULL;

  setenv("CUASYNC_POLICY", "least-loaded", 1);
  snprintf(good, sizeof good, "%s", fixture("good.ini"));
  ck_assert_int_eq(cua__config_load(&cfg, good, NULL,
                                    CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                                    sizeof err),
                   0);
  text = print_ok(cfg);
  ck_assert_ptr_nonnull(strstr(text, "policy = least-loaded"));
  ck_assert_ptr_nonnull(strstr(text, "$CUASYNC_POLICY"));
  ck_assert_ptr_nonnull(strstr(text, "devices = 0,1\n"));
  ck_assert_ptr_nonnull(strstr(text, "rule = tag:decode -> 1\n"));
  free(text);
  expect_reads_back(cfg);
  cua__config_free(cfg);
}
END_TEST

/* The longest line the parser takes, from the message of a longer one. */
static int line_limit(void) {
  char text[20000], err[ERRLEN];
  cua__config *cfg = NULL;
  int n = 0;

  snprintf(text, sizeof text, "[policy.x]\nk = %09990d\n", 0);
  ck_assert_int_eq(
      cua__config_load(&cfg, NULL, text, HERMETIC, err, sizeof err),
      CUA_ERR_CONFIG_SYNTAX);
  ck_assert_int_eq(sscanf(strstr(err, "longer than"), "longer than %d", &n), 1);
  return n;
}

START_TEST(printed_value_starting_with_a_semicolon_reads_back) {
  cua__config *cfg;

  /* "k =;x" holds ";x", which "k = ;x" made a comment. */
  cfg = load_ok("[runtime]\nbackend =;x\n[policy.x]\nk =;x\nk =;\n");
  ck_assert_str_eq(cfg->sections[1].kv[0].value, ";x");
  expect_reads_back(cfg);
  cua__config_free(cfg);
}
END_TEST

START_TEST(printed_quoted_values_read_back) {
  cua__config *cfg;
  char *text;
  size_t i;

  /* Comment characters after blanks, leading and trailing blanks, control
   * characters, quotes and backslashes: what only a quoted value holds. */
  cfg = load_ok("[runtime]\npolicy = \"my \\;policy\"\n"
                "policy_path = \"/a \\;b:\\x01c\"\n"
                "[policy.x]\n"
                "a = \"x \\;y\"\n"
                "b = \"  padded  \"\n"
                "c = \"tab\\there\\nnl\\rcr\"\n"
                "d = \"\\x01\\x7F\\xc3\\xa9 \\x0b;\"\n"
                "e = \"say \\\"hi\\\" \\\\ back\"\n"
                "f = \"\"\n"
                "g = \"\\\"starts with a quote\"\n"
                "h = \" \\;\"\n");
  ck_assert_str_eq(cfg->sections[1].kv[7].value, " ;");
  expect_reads_back(cfg);
  /* The text holds no control character but its line ends: they are
   * written as escapes. */
  text = print_ok(cfg);
  for (i = 0; text[i] != '\0'; i++)
    ck_assert_msg((unsigned char)text[i] >= 0x20 || text[i] == '\n',
                  "byte 0x%02x at %zu in:\n%s", (unsigned char)text[i], i,
                  text);
  free(text);
  cua__config_free(cfg);
}
END_TEST

START_TEST(printed_plain_bytes_read_back) {
  cua__config *cfg;

  /* What plain values and keys already held and printed back: '#', ';'
   * not after a blank, bytes beyond ASCII, control characters inside. */
  cfg = load_ok("[policy.x]\n"
                "a#b = #x\n"
                "a;b = a;b#c\n"
                "k\xc3\xa9 = \xc3\xa9t\xc3\xa9\n"
                "k\x01x = a\x01"
                "b\n"
                "\xc3\xa9 = \xff\xfe\n");
  ck_assert_str_eq(cfg->sections[0].kv[2].key, "k\xc3\xa9");
  expect_reads_back(cfg);
  cua__config_free(cfg);
}
END_TEST

START_TEST(printed_env_policy_reads_back) {
  cua__config *cfg = NULL;
  char err[ERRLEN];

  /* $CUASYNC_POLICY is not read from a line: it may hold anything, line
   * breaks included, which made the printed text another configuration. */
  setenv("CUASYNC_POLICY", "odd ;policy\n[runtime]", 1);
  ck_assert_int_eq(cua__config_load(&cfg, NULL, "[runtime]\nbackend = host\n",
                                    CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                                    sizeof err),
                   0);
  ck_assert_str_eq(cfg->policy, "odd ;policy\n[runtime]");
  expect_reads_back(cfg);
  cua__config_free(cfg);
}
END_TEST

/* Writes @p prefix followed by a number from 1000 up, @p sep between
 * them, into @p list until the next would pass @p room bytes. */
static void numbered_list(char *list, size_t len, const char *prefix,
                          const char *sep, size_t room) {
  size_t n = 0;
  list[0] = '\0';
  for (int i = 0; n + strlen(prefix) + 4 + strlen(sep) <= room && n < len; i++)
    n += (size_t)snprintf(list + n, len - n, "%s%s%d", i ? sep : "", prefix,
                          i + 1000);
}

START_TEST(printed_lines_fit_the_line_limit) {
  int max = line_limit();
  char text[4096], list[2048];
  size_t n = 0;
  cua__config *cfg;
  int i;

  ck_assert_int_gt(max, 40);
  ck_assert_int_lt(max, 2000);
  /* Lines exactly as long as the parser takes: "k = " would be longer. */
  snprintf(text, sizeof text, "[runtime]\nbackend=%0*d\n[policy.x]\nk=%0*d\n",
           max - 8, 1, max - 2, 2);
  cfg = load_ok(text);
  expect_reads_back(cfg);
  cua__config_free(cfg);
  /* The last line, without a newline, is held to the same length: one
   * character more was read, and printed as a line too long to read. */
  snprintf(text, sizeof text, "[policy.x]\nk=%0*d", max - 1, 3);
  expect_text_error(text, CUA_ERR_CONFIG_SYNTAX, "<text>:2: ", "longer than");
  /* A quoted value as long as a line can be: every byte needs an escape. */
  n = (size_t)snprintf(text, sizeof text, "[policy.x]\nk=\"");
  for (i = 0; i < (max - 4) / 2; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "\\\"");
  snprintf(text + n, sizeof text - n, "\"\n");
  cfg = load_ok(text);
  expect_reads_back(cfg);
  cua__config_free(cfg);
  /* The device list as long as a line can hold. */
  numbered_list(list, sizeof list, "", ",", (size_t)max - 8);
  snprintf(text, sizeof text, "[runtime]\ndevices=%s\n", list);
  cfg = load_ok(text);
  expect_reads_back(cfg);
  cua__config_free(cfg);
  /* Observer names one blank apart, as many as a line holds (the printer
   * once joined them with ", ", a byte longer each: found by fuzz_conf),
   * and names one comma apart, one of them a ';' (a blank before it would
   * make it a comment). */
  numbered_list(list, sizeof list, "o", " ", (size_t)max - 10);
  snprintf(text, sizeof text, "[runtime]\nobservers=%s\n", list);
  cfg = load_ok(text);
  ck_assert_uint_gt(cfg->nobservers, 20);
  expect_reads_back(cfg);
  cua__config_free(cfg);
  /* A name of control bytes (quoted, each would be \xHH) beside one
   * that is a ';': plain, a blank before the ';' would start a comment. */
  n = (size_t)snprintf(text, sizeof text, "[runtime]\nobservers=o");
  for (i = 0; i < 60; i++)
    text[n++] = '\x0f';
  snprintf(text + n, sizeof text - n, "1,,,;x,,(,;\n");
  cfg = load_ok(text);
  ck_assert_uint_eq(cfg->nobservers, 4);
  ck_assert_str_eq(cfg->observers[1], ";x");
  expect_reads_back(cfg);
  cua__config_free(cfg);
}
END_TEST

START_TEST(printed_origin_comment_is_one_short_line) {
  char dir[] = "/tmp/cuasync-nl\n[runtime]-XXXXXX", path[1024], err[ERRLEN];
  cua__config *cfg = NULL;
  FILE *f;

  /* The origin is a path, which may hold a line break... */
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/%0230d.ini", dir, 0);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[runtime]\nbackend = host\n", f);
  fclose(f);
  ck_assert_int_eq(
      cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err), 0);
  /* ...and be longer than a line (243 bytes here, after shortening). */
  ck_assert_uint_gt(strlen(cfg->origin), (size_t)line_limit());
  expect_reads_back(cfg);
  cua__config_free(cfg);
  unlink(path);
  rmdir(dir);
}
END_TEST

/* Asserts that printing @p cfg fails with @p code and @p needle in the
 * message, and writes nothing. */
static void expect_print_refused(const cua__config *cfg, int code,
                                 const char *needle) {
  char *text = NULL, err[ERRLEN] = "";
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  int rc;

  ck_assert_ptr_nonnull(f);
  rc = cua__config_print(cfg, f, err, sizeof err);
  fclose(f);
  ck_assert_msg(rc == code, "print: got %s, expected %s (%s)", code_name(rc),
                code_name(code), err);
  ck_assert_msg(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err,
                needle);
  ck_assert_uint_eq(len, 0);
  free(text);
}

START_TEST(printer_refuses_what_text_cannot_hold) {
  char dir[] = "/tmp/cuasync-a:b-XXXXXX", path[256], err[ERRLEN], big[600];
  cua__config *cfg = NULL;
  FILE *f;

  /* A relative policy_path entry resolved against a directory with a ':':
   * the entry would read back as two. */
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/c.ini", dir);
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[runtime]\npolicy_path = mods\n", f);
  fclose(f);
  ck_assert_int_eq(
      cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err), 0);
  expect_print_refused(cfg, CUA_ERR_CONFIG_BAD_VALUE,
                       "[runtime] policy_path: the entry '");
  expect_print_refused(cfg, CUA_ERR_CONFIG_BAD_VALUE,
                       "holds ':', which separates entries");
  cua__config_free(cfg);
  unlink(path);
  rmdir(dir);

  /* $CUASYNC_POLICY longer than a line. */
  memset(big, 'p', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  setenv("CUASYNC_POLICY", big, 1);
  ck_assert_int_eq(cua__config_load(&cfg, NULL, "[runtime]\n",
                                    CUA_RUNTIME_NO_SYSTEM_CONFIG, err,
                                    sizeof err),
                   0);
  expect_print_refused(cfg, CUA_ERR_CONFIG_BAD_VALUE,
                       "[runtime] policy: the value (599 bytes) makes a line "
                       "longer than");
  cua__config_free(cfg);
  unsetenv("CUASYNC_POLICY");

  /* Keys and section names the parser cannot produce, put in by hand. */
  cfg = load_ok("[policy.x]\nk = v\n");
  free(cfg->sections[0].kv[0].key);
  cfg->sections[0].kv[0].key = strdup("a=b");
  expect_print_refused(cfg, CUA_ERR_CONFIG_BAD_VALUE,
                       "[policy.x] a=b: the key cannot be written");
  free(cfg->sections[0].name);
  cfg->sections[0].name = strdup("policy.a]b");
  expect_print_refused(cfg, CUA_ERR_CONFIG_BAD_VALUE,
                       "[policy.a]b]: the section name cannot be written");
  cua__config_free(cfg);

  expect_print_refused(NULL, CUA_ERR_INVAL, "NULL");
}
END_TEST

/* The lookup tests set the variables they need, and only those. */
/* ------------------------------------------------------------------ */
/* Files that are not configuration files. */

/* Loads @p path and asserts CUA_ERR_CONFIG_NOT_FOUND with @p needle. */
static void expect_file_refused(const char *path, const char *needle) {
  cua__config *cfg = (cua__config *)1;
  char err[ERRLEN];
  int rc;

  rc = cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err);
  ck_assert_msg(rc == CUA_ERR_CONFIG_NOT_FOUND, "%s: got %s (%s)", path,
                code_name(rc), rc != 0 ? err : "");
  ck_assert_ptr_null(cfg);
  ck_assert_msg(strstr(err, "cannot read the configuration file") != NULL &&
                    strstr(err, needle) != NULL,
                "message '%s' lacks '%s'", err, needle);
}

/* A FIFO without a writer blocked fopen() for ever. */
START_TEST(fifo_as_config_is_refused_at_once) {
  char dir[] = "/tmp/cuasync-fifo-XXXXXX", path[64];

  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/config.ini", dir);
  ck_assert_int_eq(mkfifo(path, 0600), 0);
  expect_file_refused(path, "it is a FIFO, not a regular file");
  unlink(path);
  rmdir(dir);
}
END_TEST

/* /dev/zero was read without end. */
START_TEST(device_as_config_is_refused) {
  expect_file_refused("/dev/zero", "it is a character device, not a regular");
  expect_file_refused("/dev/urandom", "it is a character device");
}
END_TEST

START_TEST(config_over_16_mib_is_refused) {
  char path[] = "/tmp/cuasync-big-XXXXXX";
  int fd = mkstemp(path);

  ck_assert_int_ge(fd, 0);
  /* Sparse: no disk is used. */
  ck_assert_int_eq(ftruncate(fd, ((off_t)16 << 20) + 1), 0);
  close(fd);
  expect_file_refused(path, "it is 16777217 bytes, more than the 16 MiB a "
                            "configuration file may have");
  unlink(path);
}
END_TEST

/* Messages about a very long path used to be cut (at 2 KB in the
 * runtime's message) before the reason. */
START_TEST(long_config_path_message_keeps_the_reason) {
  char path[5100], err[ERRLEN];
  cua__config *cfg = NULL;
  cua_runtime *rt = NULL;
  cua_runtime_options o;
  int rc;

  strcpy(path, "/nonexistent/");
  memset(path + 13, 'a', 5000 - 13);
  strcpy(path + 5000, ".ini");
  rc = cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_NOT_FOUND);
  ck_assert_msg(strstr(err, "aaa...aaa") != NULL, "%s", err);
  ck_assert_msg(strstr(err, strerror(ENAMETOOLONG)) != NULL,
                "message '%s' lacks the reason", err);

  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.config_path = path;
  o.flags = HERMETIC;
  ck_assert_int_eq(cua_runtime_create_ex(&rt, &o), CUA_ERR_CONFIG_NOT_FOUND);
  ck_assert_msg(strstr(cua_runtime_error(NULL), strerror(ENAMETOOLONG)) != NULL,
                "message '%s' lacks the reason", cua_runtime_error(NULL));
}
END_TEST

/* The same for an error inside a file whose path is long (but openable):
 * every message names it by its shortened origin. */
START_TEST(long_config_path_syntax_error_keeps_the_reason) {
  char base[] = "/tmp/cuasync-long-XXXXXX", path[4000], name[201];
  cua__config *cfg = NULL;
  char err[ERRLEN];
  size_t n;
  int i, rc;
  FILE *f;

  ck_assert_ptr_nonnull(mkdtemp(base));
  memset(name, 'd', 200);
  name[200] = '\0';
  n = (size_t)snprintf(path, sizeof path, "%s", base);
  for (i = 0; i < 15; i++) {
    n += (size_t)snprintf(path + n, sizeof path - n, "/%s", name);
    ck_assert_int_eq(mkdir(path, 0700), 0);
  }
  snprintf(path + n, sizeof path - n, "/c.ini");
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("[runtime]\nnoequals\n", f);
  fclose(f);
  rc = cua__config_load(&cfg, path, NULL, HERMETIC, err, sizeof err);
  ck_assert_int_eq(rc, CUA_ERR_CONFIG_SYNTAX);
  ck_assert_msg(strstr(err, "ddd...ddd") != NULL &&
                    strstr(err, "/c.ini:2: expected 'key = value'") != NULL,
                "message '%s' lacks the reason", err);
  /* Clean up, innermost first. */
  unlink(path);
  for (i = 0; i < 15; i++) {
    *strrchr(path, '/') = '\0';
    rmdir(path);
  }
  rmdir(base);
}
END_TEST

/* Each `rule =` line cost a reallocation of every array it lands in
 * (20k lines: 46 s under ASan). The arrays grow geometrically now; the test
 * proves that 20000 keys parse, in order, within the suite's timeout. */
START_TEST(twenty_thousand_lines_parse) {
  enum { N = 20000 };
  static const cua_param_spec spec[] = {
      {"rule", CUA_PARAM_STRING, NULL, 0, 0, NULL, "", CUA_PARAM_MULTI},
  };
  size_t cap = (size_t)N * 32 + 64, n = 0;
  char *text = malloc(cap), err[ERRLEN];
  cua_param_value *v = NULL;
  const cua__section *sec;
  cua__config *cfg;
  int i;

  ck_assert_ptr_nonnull(text);
  n += (size_t)snprintf(text + n, cap - n, "[policy.big]\n");
  for (i = 0; i < N; i++)
    n += (size_t)snprintf(text + n, cap - n, "rule = tag:t%d -> 0\n", i);
  cfg = load_ok(text);
  sec = cua__config_section(cfg, "policy.big");
  ck_assert_ptr_nonnull(sec);
  ck_assert_uint_eq(sec->nkv, N);
  ck_assert_int_eq(sec->kv[N - 1].line, N + 1);
  ck_assert_uint_le(sec->kvcap, 2 * (size_t)N); /* grown by doubling */
  ck_assert_int_eq(
      cua__config_params(cfg, "policy.big", spec, 1, &v, err, sizeof err), 0);
  ck_assert_uint_eq(v[0].count, N);
  ck_assert_str_eq(v[0].list[0], "tag:t0 -> 0");
  ck_assert_str_eq(v[0].list[N - 1], "tag:t19999 -> 0");
  cua__config_params_free(v, 1);
  cua__config_free(cfg);
  free(text);
}
END_TEST

static void clear_env(void) {
  unsetenv("CUASYNC_CONFIG");
  unsetenv("CUASYNC_POLICY");
}

static Suite *suite(void) {
  Suite *s = suite_create("config");
  TCase *tc;

  tc = tcase_create("syntax");
  tcase_add_test(tc, line_without_equals_is_a_syntax_error);
  tcase_add_test(tc, header_without_bracket_is_a_syntax_error);
  tcase_add_test(tc, text_after_header_is_a_syntax_error);
  tcase_add_test(tc, key_before_any_section_is_a_syntax_error);
  tcase_add_test(tc, empty_key_is_a_syntax_error);
  tcase_add_test(tc, overlong_line_is_a_syntax_error);
  tcase_add_test(tc, repeated_section_is_a_syntax_error);
  tcase_add_test(tc, first_error_in_file_order_wins);
  tcase_add_test(tc, indented_keys_comments_bom_and_crlf_are_accepted);
  tcase_add_test(tc, control_blanks_do_not_continue_the_previous_value);
  tcase_add_test(tc, quoted_values_take_backslash_escapes);
  tcase_add_test(tc, bad_quoted_values_are_syntax_errors);
  suite_add_tcase(s, tc);

  tc = tcase_create("sections");
  tcase_add_test(tc, unknown_section_is_refused_with_its_line);
  tcase_add_test(tc, module_sections_need_a_name);
  tcase_add_test(tc, device_section_needs_a_non_negative_integer);
  tcase_add_test(tc, device_section_accepts_only_policy);
  tcase_add_test(tc, module_sections_keep_every_key_with_its_line);
  suite_add_tcase(s, tc);

  tc = tcase_create("runtime");
  tcase_add_test(tc, unknown_runtime_key_lists_the_valid_ones);
  tcase_add_test(tc, duplicate_runtime_key_names_the_first_line);
  tcase_add_test(tc, backend_name_is_kept_with_its_line_and_empty_refused);
  tcase_add_test(tc, bad_devices_lists_are_refused);
  tcase_add_test(tc, devices_list_is_parsed);
  tcase_add_test(tc, bad_policy_is_refused);
  tcase_add_test(tc, bad_policy_path_is_refused);
  tcase_add_test(tc, bad_on_policy_error_is_refused);
  tcase_add_test(tc, launch_is_caller_thread_auto_pipeline_or_relay);
  tcase_add_test(tc, launch_threads_is_one_to_eight);
  tcase_add_test(tc, env_launch_threads_overrides_the_file);
  tcase_add_test(tc, env_launch_overrides_the_file);
  tcase_add_test(tc, runtime_values_are_resolved);
  suite_add_tcase(s, tc);

  tc = tcase_create("lookup");
  tcase_add_checked_fixture(tc, clear_env, NULL);
  tcase_add_test(tc, file_errors_are_reported_as_file_and_line);
  tcase_add_test(tc, good_file_is_read_whole);
  tcase_add_test(tc, policy_path_relative_to_a_relative_file);
  tcase_add_test(tc, missing_explicit_file_is_not_found);
  tcase_add_test(tc, directory_as_file_is_not_found);
  tcase_add_test(tc, missing_env_file_names_the_variable);
  tcase_add_test(tc, explicit_path_beats_env);
  tcase_add_test(tc, text_beats_path);
  tcase_add_test(tc, env_file_is_used_without_a_path);
  tcase_add_test(tc, ignore_env_skips_the_env_file);
  tcase_add_test(tc, empty_env_counts_as_unset);
  tcase_add_test(tc, no_system_config_gives_the_built_in_default);
  tcase_add_test(tc, system_config_is_read_when_present);
  tcase_add_test(tc, env_policy_overrides_the_file);
  suite_add_tcase(s, tc);

  tc = tcase_create("not_config_files");
  /* A hang (FIFO) or an endless read (/dev/zero) fails here, not at the
   * suite's timeout. */
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, fifo_as_config_is_refused_at_once);
  tcase_add_test(tc, device_as_config_is_refused);
  tcase_add_test(tc, config_over_16_mib_is_refused);
  tcase_add_test(tc, long_config_path_message_keeps_the_reason);
  tcase_add_test(tc, long_config_path_syntax_error_keeps_the_reason);
  tcase_add_test(tc, twenty_thousand_lines_parse);
  suite_add_tcase(s, tc);

  tc = tcase_create("params");
  tcase_add_test(tc, params_defaults_are_filled_in);
  tcase_add_test(tc, params_given_values_are_present);
  tcase_add_test(tc, params_bool_spellings);
  tcase_add_test(tc, params_multi_keeps_every_value_in_order);
  tcase_add_test(tc, params_multi_default_is_replaced_by_given_values);
  tcase_add_test(tc, params_unknown_key_lists_the_valid_ones);
  tcase_add_test(tc, params_section_without_schema_takes_no_keys);
  tcase_add_test(tc, params_int_out_of_range_names_the_range);
  tcase_add_test(tc, params_bad_int_is_refused);
  tcase_add_test(tc, params_bad_double_is_refused);
  tcase_add_test(tc, params_bad_bool_is_refused);
  tcase_add_test(tc, params_enum_outside_choices_lists_them);
  tcase_add_test(tc, params_duplicate_key_names_the_first_line);
  tcase_add_test(tc, params_bad_module_default_is_internal);
  tcase_add_test(tc, params_errors_in_a_file_name_file_and_line);
  suite_add_tcase(s, tc);

  tc = tcase_create("print");
  tcase_add_checked_fixture(tc, clear_env, NULL);
  tcase_add_test(tc, printed_configuration_reads_back_the_same);
  tcase_add_test(tc, printed_value_starting_with_a_semicolon_reads_back);
  tcase_add_test(tc, printed_quoted_values_read_back);
  tcase_add_test(tc, printed_plain_bytes_read_back);
  tcase_add_test(tc, printed_env_policy_reads_back);
  tcase_add_test(tc, printed_lines_fit_the_line_limit);
  tcase_add_test(tc, printed_origin_comment_is_one_short_line);
  tcase_add_test(tc, printer_refuses_what_text_cannot_hold);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return run_suite(suite());
}
