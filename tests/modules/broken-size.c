/*
 * tests/modules/broken-size.c: a policy whose descriptor claims to be
 * smaller than the ABI 1.0 descriptor.
 *
 * Its size stops just before create, so by the "fields beyond size are
 * absent" rule it has no operations at all; the loader must refuse it with
 * CUA_ERR_MODULE_BAD_SIZE, naming both sizes (tests/check_loader.c).
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
    .abi_minor = CUA_POLICY_ABI_MINOR,
    /* Too small: the defect under test. */
    .size = offsetof(cua_policy_descriptor, create),
    .name = "broken-size",
    .version = "1.0",
    .description = "test: declares a truncated descriptor",
    .create = ok_create,
    .place = ok_place,
};
