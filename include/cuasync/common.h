/**
 * @file cuasync/common.h
 * @brief Definitions shared by the user API, the policy ABI and the backend
 * ABI: export macro, op kinds, placements, device descriptions.
 */
#ifndef CUASYNC_COMMON_H
#define CUASYNC_COMMON_H

#include <cuasync/opkinds.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define CUA__EXTERN_C extern "C"
#else
#define CUA__EXTERN_C
#endif

/** Marks a symbol exported by libcuasync (built with -fvisibility=hidden). */
#if defined(__GNUC__)
#define CUA_EXTERN CUA__EXTERN_C __attribute__((visibility("default")))
#else
#define CUA_EXTERN CUA__EXTERN_C
#endif

/** The kinds of DeviceOp, generated from #CUA_OP_KIND_MAP
 * (cuasync/opkinds.h), which says what each is. Values are part of the
 * policy and backend ABIs: append only. cua_op_kind_name() names them. */
typedef enum cua_op_kind {
#define CUA__OP_KIND_ENUM(id, val, name, launched, desc) CUA_OP_##id = (val),
  CUA_OP_KIND_MAP(CUA__OP_KIND_ENUM)
#undef CUA__OP_KIND_ENUM
  /** One more than the largest value (grows when a kind is appended). */
  CUA_OP_KIND_COUNT_ = 22
} cua_op_kind;

/** Where an op runs: a device of the runtime's backend and a stream index
 * within that device's stream pool, on a node (process) of the runtime.
 * Its size is fixed for good (policy ABI 2.0): @c node and @c reserved are
 * the room left for a runtime that spans several processes. Write it with
 * designated initializers, so that unnamed fields are 0. */
typedef struct cua_placement {
  int device;   /**< 0 .. device count - 1 */
  int stream;   /**< 0 .. streams obtained on that device - 1 */
  int node;     /**< the node (process) of a multi-node runtime; 0, the only
                     one, in this version (another is an invalid placement) */
  int reserved; /**< 0 (another value is an invalid placement) */
} cua_placement;

/** What a backend says about one of its devices. */
typedef struct cua_device_info {
  size_t size;           /**< sizeof(cua_device_info) as the caller knows it */
  char name[128];        /**< e.g. "NVIDIA H200" or "host worker" */
  int ordinal;           /**< the backend's own index (CUDA ordinal) */
  uint64_t total_memory; /**< bytes, 0 if unknown */
  int compute_major;     /**< CUDA compute capability, 0 for host */
  int compute_minor;
  int multiprocessors; /**< SMs, or CPU cores for host devices */
} cua_device_info;

/** Built-in kernel parameters, shared by the user API and backends. */
typedef struct cua_spin_args {
  uint64_t ns;     /**< how long each block spins */
  uint32_t blocks; /**< how many blocks (GPU) or 1 (host) */
} cua_spin_args;

#endif /* CUASYNC_COMMON_H */
