/*
 * tests/modules/broken-abi-major.c: a policy built for the next major ABI.
 *
 * A module whose abi_major differs from the core's may lay out its
 * descriptor differently, so the loader must refuse it before reading
 * anything past the first three fields: CUA_ERR_MODULE_ABI_MAJOR, with both
 * versions in the message (tests/check_loader.c).
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
    /* One more than the core: the defect under test. */
    .abi_major = CUA_POLICY_ABI_MAJOR + 1,
    .abi_minor = CUA_POLICY_ABI_MINOR,
    .size = sizeof(cua_policy_descriptor),
    .name = "broken-abi-major",
    .version = "1.0",
    .description = "test: claims the next major policy ABI",
    .create = ok_create,
    .place = ok_place,
};
