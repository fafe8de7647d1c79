/*
 * tests/modules/bare.c: a policy with only what a descriptor must have: a
 * name, create() and place(); no version, no description, no schema.
 *
 * Everything that lists policies must cope with the fields it leaves out
 * (policy = help, tests/check_e2e.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

/* One stream on every device, so that place() below is valid. */
static int bare_create(const cua_policy_host *host,
                       const cua_param_value *params, void **state) {
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
static int bare_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  out->device = op->restrict_device >= 0 ? op->restrict_device : 0;
  out->stream = 0;
  return 0;
}

CUA_POLICY_DEFINE(.name = "bare", .create = bare_create, .place = bare_place);
