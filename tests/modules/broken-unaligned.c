/*
 * tests/modules/broken-unaligned.c: a module whose cua_policy_entry is a
 * whole, valid descriptor at an odd address.
 *
 * The loader read it unaligned (undefined behaviour, reported by UBSan).
 * It must refuse it with CUA_ERR_MODULE_BAD_SIZE, naming the alignment
 * (tests/check_loader.c). C cannot place an exported object at an odd
 * address, so the symbol is defined in assembly, one byte into a packed
 * holder.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <stddef.h>

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

struct holder {
  char pad;
  cua_policy_descriptor d;
} __attribute__((packed));

__attribute__((used)) static const struct holder holder = {
    0, CUA_POLICY_INIT(.name = "broken-unaligned", .version = "1.0",
                       .description = "test: its descriptor is misaligned",
                       .create = ok_create, .place = ok_place)};

/* The odd address is the defect under test; the size is the
 * descriptor's. */
_Static_assert(sizeof(cua_policy_descriptor) == 184, "update .size below");
__asm__(".globl cua_policy_entry\n"
        ".type cua_policy_entry, @object\n"
        ".set cua_policy_entry, holder + 1\n"
        ".size cua_policy_entry, 184\n");
