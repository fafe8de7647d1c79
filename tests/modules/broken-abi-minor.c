/*
 * tests/modules/broken-abi-minor.c: a policy built for a newer minor ABI.
 *
 * A newer minor version may rely on host-table fields or semantics this
 * core lacks, so the loader must refuse it (older minors are fine):
 * CUA_ERR_MODULE_ABI_MINOR, with both versions in the message
 * (tests/check_loader.c).
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

CUA__POLICY_EXPORT const cua_policy_descriptor cua_policy_entry = {
    .abi_major = CUA_POLICY_ABI_MAJOR,
    /* One more than the core: the defect under test. */
    .abi_minor = CUA_POLICY_ABI_MINOR + 1,
    .size = sizeof(cua_policy_descriptor),
    .name = "broken-abi-minor",
    .version = "1.0",
    .description = "test: claims a newer minor policy ABI",
    .create = ok_create,
    .place = ok_place,
};
