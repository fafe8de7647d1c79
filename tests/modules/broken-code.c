/*
 * tests/modules/broken-code.c: a policy whose place() returns whatever
 * code the op's priority hint says (0: device 0, stream 0), so a test can
 * make it return codes outside the error list (-12345, +3) and check that
 * the message names them.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

static int bc_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 1);
}

static int bc_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  out->device = 0;
  out->stream = 0;
  return op->priority;
}

CUA_POLICY_DEFINE(.name = "broken-code", .version = "1.0",
                  .description =
                      "test: place() returns the op's priority as its code",
                  .create = bc_create, .place = bc_place);
