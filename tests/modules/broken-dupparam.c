/*
 * tests/modules/broken-dupparam.c: a policy whose schema names one
 * parameter twice.
 *
 * The loader must refuse it with CUA_ERR_MODULE_INCOMPLETE, naming both
 * parameters (tests/check_loader.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>
#include <stdint.h>

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

/* "streams" twice is the defect under test. */
static const cua_param_spec dup_params[] = {
    {"streams", CUA_PARAM_INT, "1", 1, 16, NULL, "streams per device", 0},
    {"other", CUA_PARAM_INT, "1", 1, 16, NULL, "a harmless one", 0},
    {"streams", CUA_PARAM_INT, "2", 1, 16, NULL, "the same key again", 0},
};

CUA_POLICY_DEFINE(.name = "broken-dupparam", .version = "1.0",
                  .description = "test: its schema names a parameter twice",
                  CUA_POLICY_PARAMS(dup_params), .create = ok_create,
                  .place = ok_place);
