/*
 * tests/modules/broken-tiny.c: a module whose cua_policy_entry is a
 * single byte.
 *
 * The loader read a whole descriptor header from it (out of bounds, and
 * unaligned for UBSan). It must refuse it with CUA_ERR_MODULE_BAD_SIZE,
 * naming the symbol's size, before reading it (tests/check_loader.c).
 */
#include <cuasync/policy.h>

/* The one-byte entry symbol is the defect under test. */
CUA__POLICY_EXPORT const char cua_policy_entry = 1;
