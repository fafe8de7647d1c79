/*
 * tests/modules/broken-backend.c: a backend descriptor whose description
 * points nowhere.
 *
 * Backends go through the same loader as policies: it must refuse this one
 * with CUA_ERR_MODULE_INCOMPLETE before reading the string, naming the
 * field (tests/check_loader.c). Nothing else in it matters: the check comes
 * before the required operations are looked at.
 */
#include <cuasync/backend.h>

#include <stdint.h>

/* The description pointing nowhere is the defect under test. */
CUA__BACKEND_EXPORT const cua_backend_descriptor cua_backend_entry = {
    .abi_major = CUA_BACKEND_ABI_MAJOR,
    .abi_minor = CUA_BACKEND_ABI_MINOR,
    .size = sizeof(cua_backend_descriptor),
    .name = "broken-backend",
    .version = "1.0",
    .description = (const char *)(uintptr_t)0x100,
};
