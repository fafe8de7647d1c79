/*
 * tests/modules/broken-pointers.c: a policy descriptor whose name points
 * nowhere.
 *
 * Reading the name crashed the loader (and cuasync-info, which scans every
 * module). The loader must refuse it with CUA_ERR_MODULE_INCOMPLETE before
 * reading it, naming the field (tests/check_loader.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>
#include <stdint.h>

static int ok_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)host;
  (void)params;
  *state = NULL;
  return 0;
}

static int ok_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  (void)op;
  out->device = 0;
  out->stream = 0;
  return 0;
}

/* An address no module is loaded at (the first page is never mapped). */
#define NOWHERE ((const char *)(uintptr_t)0x100)

/* The name pointing nowhere is the defect under test. */
CUA_POLICY_DEFINE(.name = NOWHERE, .version = "1.0",
                  .description = "test: its name points nowhere",
                  .create = ok_create, .place = ok_place);
