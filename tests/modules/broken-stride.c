/*
 * tests/modules/broken-stride.c: a policy whose descriptor, written
 * without CUA_POLICY_INIT, declares its cua_param_value smaller than ABI
 * 2.0's: the core would write create()'s values past what the policy
 * reads. The loader must refuse it: CUA_ERR_MODULE_BAD_SIZE naming the
 * field and both sizes (tests/check_loader.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

static int ok_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 1);
}

static int ok_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  out->device = op->restrict_device >= 0 ? op->restrict_device : 0;
  out->stream = 0;
  return 0;
}

CUA__POLICY_EXPORT const cua_policy_descriptor cua_policy_entry = {
    .abi_major = CUA_POLICY_ABI_MAJOR,
    .abi_minor = CUA_POLICY_ABI_MINOR,
    .size = sizeof(cua_policy_descriptor),
    .name = "broken-stride",
    .version = "1.0",
    .description = "test: declares a cua_param_value of 8 bytes",
    .param_spec_size = sizeof(cua_param_spec),
    /* The defect under test. */
    .param_value_size = 8,
    .input_size = sizeof(cua_op_input),
    .dag_op_size = sizeof(cua_dag_op),
    .dag_buffer_size = sizeof(cua_dag_buffer),
    .create = ok_create,
    .place = ok_place,
};
