/*
 * tests/modules/abi20.c: a policy module as built against the ABI 2.0
 * headers: abi_minor 0 and a descriptor that ends at submission_end (its
 * size says so). What follows it in memory here is a decoy: a push() and
 * a pop() that abort, where the 2.1 descriptor has its pull-mode fields.
 * The core must load it in push mode and never read past its size
 * (tests/check_loader.c, an_abi_2_0_module_loads_in_push_mode).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>
#include <stdlib.h>

static int v_create(const cua_policy_host *host, const cua_param_value *params,
                    void **state) {
  (void)params;
  *state = (void *)host;
  return host->ensure_streams(host->core, 0, 1);
}

static int v_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  (void)op;
  out->device = 0;
  out->stream = 0;
  return 0;
}

static int v_push(void *state, const cua_op_info *op) {
  (void)state;
  (void)op;
  abort();
}

static int v_pop(void *state, cua_placement where, uint64_t *op_id) {
  (void)state;
  (void)where;
  (void)op_id;
  abort();
}

CUA__POLICY_EXPORT const cua_policy_descriptor cua_policy_entry = {
    .abi_major = CUA_POLICY_ABI_MAJOR,
    .abi_minor = 0,
    .size = offsetof(cua_policy_descriptor, submission_end) +
            sizeof(void (*)(void)),
    .name = "abi20",
    .version = "1",
    .description = "built against ABI 2.0",
    .param_spec_size = sizeof(cua_param_spec),
    .param_value_size = sizeof(cua_param_value),
    .input_size = sizeof(cua_op_input),
    .dag_op_size = sizeof(cua_dag_op),
    .dag_buffer_size = sizeof(cua_dag_buffer),
    .create = v_create,
    .place = v_place,
    .push = v_push,
    .pop = v_pop,
};
