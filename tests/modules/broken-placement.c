/*
 * tests/modules/broken-placement.c: a policy whose placements are wrong,
 * in the way its parameter "mode" says:
 *
 *   device  (the default) device 99, which no test machine has
 *   stream  stream 99 of the op's device (restrict_device, else 0)
 *   node    device 0 stream 0, but node 1
 *   fail    place() returns CUA_ERR_INVAL with a log line
 *
 * It loads and creates fine (asking for one stream on device 0, as a sane
 * policy would). The core validates each placement, so the op must fail
 * with CUA_ERR_BAD_PLACEMENT (CUA_ERR_POLICY for "fail") and a message
 * naming the policy, instead of indexing past the device array; with
 * on_policy_error = fallback, single-stream places it instead, also when
 * this policy is a [device.N] one (tests/check_e2e.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Far beyond any test machine, and beyond the host backend's devices. */
#define BROKEN_PLACEMENT_DEVICE 99
#define BROKEN_PLACEMENT_STREAM 99

enum { BP_DEVICE, BP_STREAM, BP_NODE, BP_FAIL };

static const cua_param_spec bp_params[] = {
    {"mode", CUA_PARAM_ENUM, "device", 0, 0, "device|stream|node|fail",
     "how every placement is wrong", 0},
};

typedef struct bp_state {
  const cua_policy_host *host;
  int mode;
} bp_state;

static int bp_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  bp_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  s->mode = (int)params[0].i;
  *state = s;
  return host->ensure_streams(host->core, 0, 1);
}

static void bp_destroy(void *state) {
  free(state);
}

/* The defect under test. */
static int bp_place(void *state, const cua_op_info *op, cua_placement *out) {
  const bp_state *s = state;
  switch (s->mode) {
  case BP_STREAM:
    out->device = op->restrict_device >= 0 ? op->restrict_device : 0;
    out->stream = BROKEN_PLACEMENT_STREAM;
    return 0;
  case BP_NODE:
    out->device = 0;
    out->stream = 0;
    out->node = 1;
    return 0;
  case BP_FAIL:
    s->host->log(s->host->core, CUA_LOG_ERROR, "refusing op %llu",
                 (unsigned long long)op->op_id);
    return CUA_ERR_INVAL;
  default:
    out->device = BROKEN_PLACEMENT_DEVICE;
    out->stream = 0;
    return 0;
  }
}

CUA_POLICY_DEFINE(.name = "broken-placement", .version = "1.0",
                  .description = "test: places every op where it cannot run",
                  CUA_POLICY_PARAMS(bp_params), .create = bp_create,
                  .destroy = bp_destroy, .place = bp_place);
