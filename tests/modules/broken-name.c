/*
 * tests/modules/broken-name.c: a policy whose descriptor name differs from
 * its file name.
 *
 * Loaded by name as "broken-name", it calls itself "not-the-file-name": the
 * loader must refuse it with CUA_ERR_MODULE_NAME_MISMATCH, naming both
 * (tests/check_loader.c). Loaded by path, the name is not compared and it
 * loads.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

/* Asks for one stream on every device, so that place() below is valid. */
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

/* Stream 0 of the device the op must run on, else of device 0. */
static int ok_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  out->device = op->restrict_device >= 0 ? op->restrict_device : 0;
  out->stream = 0;
  return 0;
}

/* The wrong name is the defect under test. */
CUA_POLICY_DEFINE(.name = "not-the-file-name", .version = "1.0",
                  .description = "test: its name differs from its file name",
                  .create = ok_create, .place = ok_place);
