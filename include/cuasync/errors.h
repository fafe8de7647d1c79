/**
 * @file cuasync/errors.h
 * @brief Error codes of cuasync, as one X-macro list.
 *
 * Every cuasync call that can fail returns an @c int: 0 (#CUA_OK) on
 * success, one of the negative codes below on failure. The code says the
 * class of failure; the detailed message (file and line of a config error,
 * the dlerror() text of a failed load, the CUDA error of a failed op) is kept
 * per thread (cua_runtime_error()) or per future (cua_future_error()).
 *
 * #CUA_ERR_CANCELED is also the code of any call given a handle (op,
 * buffer, tile, module) whose runtime was closed by cua_runtime_destroy().
 *
 * #CUA_ERR_CYCLE: cua_submit() of a DAG in which a then places an op
 * after itself (the same op twice in one DAG runs once, so then(S, S)
 * would make it wait for itself).
 *
 * Reserved: two codes are never returned by this version, and are kept
 * (never renumbered or reused) for the cases they name:
 * - #CUA_ERR_DEVICE_FAULT: for a backend that can pin an asynchronous
 *   fault on one op. CUDA cannot: a device fault is a sticky error of the
 *   whole context, reported as #CUA_ERR_DEVICE_LOST.
 * - #CUA_ERR_RESULT: a future's result is the failure's code while failed
 *   and #CUA_ERR_AGAIN while pending; there is no other case.
 */
#ifndef CUASYNC_ERRORS_H
#define CUASYNC_ERRORS_H

/**
 * The list of errors: X(NAME, value, "description"). Values are stable
 * across releases and never reused; new codes are appended.
 */
#define CUA_ERRNO_MAP(X)                                                       \
  X(INVAL, -1, "invalid argument")                                             \
  X(NOMEM, -2, "out of host memory")                                           \
  X(AGAIN, -3, "not ready yet")                                                \
  X(TIMEDOUT, -4, "timed out")                                                 \
  X(BUSY, -5, "resource busy")                                                 \
  X(NOTSUP, -6, "operation not supported")                                     \
  X(INTERNAL, -7, "internal error")                                            \
  X(CONFIG_NOT_FOUND, -10, "configuration file not found")                     \
  X(CONFIG_SYNTAX, -11, "configuration syntax error")                          \
  X(CONFIG_UNKNOWN_SECTION, -12, "unknown configuration section")              \
  X(CONFIG_UNKNOWN_KEY, -13, "unknown configuration key")                      \
  X(CONFIG_BAD_VALUE, -14, "bad configuration value")                          \
  X(CONFIG_OUT_OF_RANGE, -15, "configuration value out of range")              \
  X(CONFIG_DUPLICATE_KEY, -16, "configuration key given twice")                \
  X(MODULE_NOT_FOUND, -20, "module not found")                                 \
  X(MODULE_DLOPEN, -21, "module could not be loaded")                          \
  X(MODULE_NO_ENTRY, -22, "module has no entry symbol")                        \
  X(MODULE_ABI_MAJOR, -23, "module ABI major version differs")                 \
  X(MODULE_ABI_MINOR, -24, "module ABI minor version is newer than the core")  \
  X(MODULE_BAD_SIZE, -25, "module descriptor has a bad size")                  \
  X(MODULE_NAME_MISMATCH, -26, "module name does not match")                   \
  X(MODULE_CREATE, -27, "module create() failed")                              \
  X(MODULE_INCOMPLETE, -28, "module descriptor lacks a required operation")    \
  X(NO_DEVICE, -30, "no device available")                                     \
  X(BAD_DEVICE, -31, "no such device")                                         \
  X(BAD_PLACEMENT, -32, "policy returned an invalid placement")                \
  X(POLICY, -33, "scheduling policy failed")                                   \
  X(BACKEND, -34, "backend operation failed")                                  \
  X(DEVICE_OOM, -35, "out of device memory")                                   \
  X(LAUNCH, -36, "kernel launch failed")                                       \
  X(DEVICE_FAULT, -37, "asynchronous device fault")                            \
  X(DEVICE_LOST, -38, "device lost (sticky error)")                            \
  X(OP_FAILED, -40, "operation failed")                                        \
  X(DEPENDENCY, -41, "a dependency failed")                                    \
  X(READONLY, -42, "write access to a shared read-only buffer")                \
  X(PARTITIONED, -43, "buffer is partitioned into tiles")                      \
  X(STALE, -44, "tile no longer valid")                                        \
  X(FREED, -45, "buffer was freed")                                            \
  X(CYCLE, -46, "operation graph has a cycle")                                 \
  X(SIZE, -47, "size or range mismatch")                                       \
  X(CANCELED, -48, "canceled because the runtime is closing")                  \
  X(RESULT, -49, "result not available")                                       \
  X(CAPTURE, -50, "op cannot be captured in a graph")                          \
  X(STRUCTURE, -51, "graph update would change its structure")

/** The error codes, CUA_ERR_ followed by the names of #CUA_ERRNO_MAP. */
typedef enum cua_errno {
  CUA_OK = 0,
#define CUA__ERR_ENUM(name, val, desc) CUA_ERR_##name = (val),
  CUA_ERRNO_MAP(CUA__ERR_ENUM)
#undef CUA__ERR_ENUM
} cua_errno;

#endif /* CUASYNC_ERRORS_H */
