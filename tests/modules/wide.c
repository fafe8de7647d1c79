/*
 * tests/modules/wide.c: a policy whose array elements are larger than the
 * core's, as those of a later minor version of ABI 2 will be: its schema
 * entries, the parameter values it reads and the inputs it is told each
 * carry 16 bytes more (a field of a later version, which the core does not
 * know and must leave zero).
 *
 * So the core must read its schema and write its values and inputs with
 * the strides its descriptor declares. It checks what it gets, counts
 * what it saw and prints it in dump() (tests/check_loader.c):
 * "wide: first=F second=S extra=E inputs=N bad=B".
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct wide_spec {
  cua_param_spec s;
  uint64_t later[2];
} wide_spec;
typedef struct wide_value {
  cua_param_value v;
  uint64_t later[2];
} wide_value;
typedef struct wide_input {
  cua_op_input in;
  uint64_t later[2];
} wide_input;

typedef struct wide_state {
  int64_t first;
  char second[32];
  uint64_t extra; /* the later fields of the values: must be 0 */
  uint64_t inputs, bad;
} wide_state;

static int wide_create(const cua_policy_host *host,
                       const cua_param_value *params, void **state) {
  const wide_value *v = (const wide_value *)(const void *)params;
  wide_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->first = v[0].v.i;
  snprintf(s->second, sizeof s->second, "%s", v[1].v.s ? v[1].v.s : "?");
  s->extra = v[0].later[0] | v[0].later[1] | v[1].later[0] | v[1].later[1];
  *state = s;
  for (int d = 0; d < host->device_count(host->core); d++)
    if (host->ensure_streams(host->core, d, 2) != 0)
      return CUA_ERR_INTERNAL;
  return 0;
}

static void wide_destroy(void *state) {
  free(state);
}

static int wide_place(void *state, const cua_op_info *op, cua_placement *out) {
  wide_state *s = state;
  const wide_input *in = (const wide_input *)(const void *)op->inputs;
  for (size_t i = 0; i < op->ninputs; i++) {
    s->inputs++;
    if (in[i].in.op_id == 0 || in[i].in.op_id >= op->op_id ||
        in[i].later[0] != 0 || in[i].later[1] != 0)
      s->bad++;
  }
  out->device = op->restrict_device >= 0 ? op->restrict_device : 0;
  out->stream = (int)(op->op_id % 2);
  return 0;
}

static void wide_dump(void *state, FILE *out) {
  const wide_state *s = state;
  fprintf(out,
          "wide: first=%" PRId64 " second=%s extra=%" PRIu64 " inputs=%" PRIu64
          " bad=%" PRIu64 "\n",
          s->first, s->second, s->extra, s->inputs, s->bad);
}

static const wide_spec wide_params[] = {
    {{"first", CUA_PARAM_INT, "1", 0, 100, NULL, "an integer", 0}, {7, 7}},
    {{"second", CUA_PARAM_STRING, "two", 0, 0, NULL, "a string", 0}, {7, 7}},
};

CUA__POLICY_EXPORT const cua_policy_descriptor cua_policy_entry = {
    .abi_major = CUA_POLICY_ABI_MAJOR,
    .abi_minor = CUA_POLICY_ABI_MINOR,
    .size = sizeof(cua_policy_descriptor),
    .name = "wide",
    .version = "1.0",
    .description = "test: array elements larger than the core's",
    .params = &wide_params[0].s,
    .nparams = sizeof wide_params / sizeof wide_params[0],
    .param_spec_size = sizeof(wide_spec),
    .param_value_size = sizeof(wide_value),
    .input_size = sizeof(wide_input),
    .dag_op_size = sizeof(cua_dag_op),
    .dag_buffer_size = sizeof(cua_dag_buffer),
    .create = wide_create,
    .destroy = wide_destroy,
    .place = wide_place,
    .dump = wide_dump,
};
