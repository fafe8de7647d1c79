/*
 * tests/modules/broken-placement.c: a policy that places every op on a
 * device that does not exist.
 *
 * It loads and creates fine (asking for one stream on device 0, as a sane
 * policy would), then answers device 99, stream 0 for every op. The core
 * validates each placement, so the op must fail with CUA_ERR_BAD_PLACEMENT
 * and a message naming the policy, instead of indexing past the device
 * array.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

/* Far beyond any test machine, and beyond the host backend's devices. */
#define BROKEN_PLACEMENT_DEVICE 99

static int bp_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 1);
}

/* The defect under test: a device that is not there. */
static int bp_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  (void)op;
  out->device = BROKEN_PLACEMENT_DEVICE;
  out->stream = 0;
  return 0;
}

CUA_POLICY_DEFINE(.name = "broken-placement", .version = "1.0",
                  .description = "test: places every op on device 99",
                  .create = bp_create, .place = bp_place);
