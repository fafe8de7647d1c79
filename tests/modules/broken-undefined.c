/*
 * tests/modules/broken-undefined.c: a policy that calls a function no
 * library defines.
 *
 * tests/local.mk links it with --unresolved-symbols=ignore-all, so the
 * link succeeds, as it would for a module built against a newer library
 * or missing one of its dependencies. dlopen(RTLD_NOW) resolves every
 * symbol at load time and must refuse it: CUA_ERR_MODULE_DLOPEN, with
 * dlerror()'s "undefined symbol" text (tests/check_loader.c). With lazy
 * binding it would load and crash at the first place() instead.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

/* Defined nowhere, on purpose. */
extern int cua_test_defined_nowhere(const cua_op_info *op);

static int bu_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  *state = NULL;
  return host->ensure_streams(host->core, 0, 1);
}

/* The call below is what leaves the symbol undefined in the module. */
static int bu_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  out->device = 0;
  out->stream = cua_test_defined_nowhere(op);
  return 0;
}

CUA_POLICY_DEFINE(.name = "broken-undefined", .version = "1.0",
                  .description = "test: needs a symbol that nothing defines",
                  .create = bu_create, .place = bu_place);
