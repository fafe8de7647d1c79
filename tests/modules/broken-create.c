/*
 * tests/modules/broken-create.c: a policy whose create() always fails.
 *
 * The module itself is valid, so the loader accepts it (it never calls
 * create()); the runtime then calls create(), which logs the line below
 * through the host table and returns CUA_ERR_INVAL. Opening a runtime or a
 * policy with it must fail with CUA_ERR_MODULE_CREATE and a message that
 * carries this log line, so that a policy can say why it refused to start.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

/* The exact text the runtime tests look for in the error message. */
#define BROKEN_CREATE_MESSAGE                                                  \
  "create() fails on purpose (tests/modules/broken-create.c)"

static int bc_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  (void)state;
  host->log(host->core, CUA_LOG_ERROR, "%s", BROKEN_CREATE_MESSAGE);
  return CUA_ERR_INVAL;
}

/* Never called, since no instance is ever created; present so that the
 * loader has nothing to object to. */
static int bc_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  (void)op;
  out->device = 0;
  out->stream = 0;
  return 0;
}

CUA_POLICY_DEFINE(.name = "broken-create", .version = "1.0",
                  .description = "test: create() always fails",
                  .create = bc_create, .place = bc_place);
