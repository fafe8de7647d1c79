/*
 * tests/modules/broken-abi1.c: a policy module as ABI 1.0 laid it out
 * (eleven positional fields, no element sizes), as a module built against
 * cuasync 0.1's headers is.
 *
 * This core does not load 1.x modules: the loader must refuse it with
 * CUA_ERR_MODULE_ABI_MAJOR, name both versions and say to rebuild it
 * (tests/check_loader.c), before it reads anything past the first three
 * fields.
 */
#include <cuasync/errors.h>
#include <cuasync/module.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The 1.0 layout, as 0.1's <cuasync/policy.h> declared it. */
typedef struct v1_descriptor {
  uint32_t abi_major, abi_minor;
  size_t size;
  const char *name, *version, *description;
  uint64_t flags;
  const cua_param_spec *params;
  size_t nparams;
  int (*create)(const void *host, const cua_param_value *params, void **state);
  void (*destroy)(void *state);
  int (*place)(void *state, const void *op, void *out);
  void (*submitted)(void *state, const void *op, int where);
  void (*completed)(void *state, const void *op, int where, uint64_t ns);
  void (*dump)(void *state, FILE *out);
} v1_descriptor;

static int v1_create(const void *host, const cua_param_value *params,
                     void **state) {
  (void)host;
  (void)params;
  *state = NULL;
  return 0;
}

static int v1_place(void *state, const void *op, void *out) {
  (void)state;
  (void)op;
  (void)out;
  return CUA_ERR_INTERNAL;
}

__attribute__((visibility("default")))
const v1_descriptor cua_policy_entry = {1,
                                        0,
                                        sizeof(v1_descriptor),
                                        "broken-abi1",
                                        "1.0",
                                        "test: a policy built for ABI 1.0",
                                        0,
                                        NULL,
                                        0,
                                        v1_create,
                                        NULL,
                                        v1_place,
                                        NULL,
                                        NULL,
                                        NULL};
