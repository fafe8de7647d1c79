/*
 * tests/modules/broken-backend-ops.c: a backend descriptor with only
 * create() and destroy().
 *
 * The loader must refuse it with CUA_ERR_MODULE_INCOMPLETE and name every
 * operation the core calls without a NULL check (tests/check_loader.c),
 * instead of loading a backend that would crash at its first stream.
 * Nothing in it is ever called.
 */
#include <cuasync/backend.h>
#include <cuasync/errors.h>

#include <stddef.h>

static int bo_create(const cua_backend_host *host,
                     const cua_param_value *params, const int *ordinals,
                     int nordinals, void **state, cua_backend_err *err) {
  (void)host;
  (void)params;
  (void)ordinals;
  (void)nordinals;
  (void)err;
  *state = NULL;
  return CUA_ERR_NO_DEVICE;
}

static void bo_destroy(void *state) {
  (void)state;
}

CUA__BACKEND_EXPORT const cua_backend_descriptor cua_backend_entry = {
    .abi_major = CUA_BACKEND_ABI_MAJOR,
    .abi_minor = CUA_BACKEND_ABI_MINOR,
    .size = sizeof(cua_backend_descriptor),
    .name = "broken-backend-ops",
    .version = "1.0",
    .description = "a backend without its operations",
    .create = bo_create,
    .destroy = bo_destroy,
    .priority = -1,
};
