/*
 * tests/modules/broken-funcentry.c: a module whose cua_policy_entry is a
 * function, not a descriptor.
 *
 * The loader read the function's code as a descriptor. It must refuse it
 * with CUA_ERR_MODULE_NO_ENTRY, saying the symbol is a function
 * (tests/check_loader.c).
 */
#include <cuasync/policy.h>

int cua_policy_entry(void);

/* The function named like the entry symbol is the defect under test. */
CUA__POLICY_EXPORT int cua_policy_entry(void) {
  return 1;
}
