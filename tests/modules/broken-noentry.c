/*
 * tests/modules/broken-noentry.c: a policy module without the entry symbol.
 *
 * Its descriptor is fine, but it is exported as "policy_entry" (the cua_
 * prefix forgotten) instead of CUA_POLICY_ENTRY_SYMBOL, so the loader finds
 * no cua_policy_entry and must refuse the file with CUA_ERR_MODULE_NO_ENTRY
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

/* The wrong name is the whole point: everything else is a valid policy. */
CUA__POLICY_EXPORT const cua_policy_descriptor policy_entry = {
    .abi_major = CUA_POLICY_ABI_MAJOR,
    .abi_minor = CUA_POLICY_ABI_MINOR,
    .size = sizeof(cua_policy_descriptor),
    .name = "broken-noentry",
    .version = "1.0",
    .description = "test: exports its descriptor under the wrong symbol",
    .create = ok_create,
    .place = ok_place,
};
