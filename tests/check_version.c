/* tests/check_version.c: the headers and the library agree on versions and
 * errors. */
#include "helpers.h"

START_TEST(header_and_library_versions_agree) {
  ck_assert_uint_eq(cua_version(), CUA_VERSION_HEX);
  ck_assert_str_eq(cua_version_string(), CUA_VERSION_STRING);
  char buf[64];
  snprintf(buf, sizeof buf, "%d.%d.%d", CUA_VERSION_MAJOR, CUA_VERSION_MINOR,
           CUA_VERSION_PATCH);
  ck_assert_str_eq(buf, CUA_VERSION_STRING);
}
END_TEST

START_TEST(every_error_has_a_name_and_a_description) {
#define CHECK_ONE(name, val, desc)                                             \
  ck_assert_str_eq(cua_err_name(val), "CUA_ERR_" #name);                       \
  ck_assert_str_eq(cua_strerror(val), desc);                                   \
  ck_assert_int_lt(val, 0);
  CUA_ERRNO_MAP(CHECK_ONE)
#undef CHECK_ONE
  ck_assert_str_eq(cua_err_name(0), "CUA_OK");
  ck_assert_str_eq(cua_err_name(12345), "CUA_ERR_UNKNOWN");
  ck_assert_str_eq(cua_strerror(-9999), "unknown error");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("version");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, header_and_library_versions_agree);
  tcase_add_test(tc, every_error_has_a_name_and_a_description);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return run_suite(suite());
}
