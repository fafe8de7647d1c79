/*
 * tests/modules/broken-noplace.c: a policy without place().
 *
 * place() is required, so the loader must refuse the module with
 * CUA_ERR_MODULE_INCOMPLETE and name the missing operation
 * (tests/check_loader.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

/* Asks for one stream on every device: create() itself is fine. */
static int ok_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  int d, n = host->device_count(host->core), rc;

  (void)params;
  for (d = 0; d < n; d++) {
    rc = host->ensure_streams(host->core, d, 1);
    if (rc != 0)
      return rc;
  }
  *state = NULL;
  return 0;
}

/* place is NULL: the defect under test. */
CUA_POLICY_DEFINE(.name = "broken-noplace", .version = "1.0",
                  .description = "test: has no place()", .create = ok_create);
