/*
 * tests/modules/broken-badplace.c: a policy descriptor whose place()
 * points nowhere.
 *
 * The runtime crashed on the first op it placed. The loader must refuse it
 * with CUA_ERR_MODULE_INCOMPLETE, saying which operation does not point to
 * code in the module (tests/check_loader.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>
#include <stdint.h>

static int ok_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)host;
  (void)params;
  *state = NULL;
  return 0;
}

typedef int (*place_fn)(void *, const cua_op_info *, cua_placement *);

/* The place() pointing nowhere is the defect under test. */
CUA_POLICY_DEFINE(.name = "broken-badplace", .version = "1.0",
                  .description = "test: its place() points nowhere",
                  .create = ok_create, .place = (place_fn)(uintptr_t)0x200);
