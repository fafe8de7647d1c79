/**
 * @file cuasync/common.h
 * @brief Definitions shared by the user API, the policy ABI and the backend
 * ABI: export macro, op kinds, placements, device descriptions.
 */
#ifndef CUASYNC_COMMON_H
#define CUASYNC_COMMON_H

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

/** The kinds of DeviceOp. Values are part of the policy ABI: append only. */
typedef enum cua_op_kind {
  CUA_OP_FUNC = 1,       /**< user stream function (launches its own work) */
  CUA_OP_FILL = 2,       /**< built-in kernel: fill float32 elements */
  CUA_OP_COPY = 3,       /**< built-in kernel: element copy between buffers */
  CUA_OP_AXPY = 4,       /**< built-in kernel: y = a * x + y, float32 */
  CUA_OP_SPIN = 5,       /**< built-in kernel: busy for a given duration */
  CUA_OP_MEMCPY_H2D = 6, /**< copy host memory into a buffer */
  CUA_OP_MEMCPY_D2H = 7, /**< copy a buffer into host memory */
  CUA_OP_MEMCPY_D2D = 8, /**< copy between buffers, also across devices */
  CUA_OP_MEMSET = 9,     /**< set bytes of a buffer */
  CUA_OP_ALLOC = 10,   /**< allocate a lazily created buffer, stream-ordered */
  CUA_OP_FREE = 11,    /**< free a buffer, stream-ordered after its uses */
  CUA_OP_HOST = 12,    /**< host step: runs on the host, blocks no stream */
  CUA_OP_BARRIER = 13, /**< waits for all work submitted before it */
  CUA_OP_ZIP = 14,     /**< joins N ops; no work of its own */
  CUA_OP_UNZIP = 15,   /**< selects one result of a zip; no work */
  CUA_OP_MAP = 16,     /**< host-side transform of a result; no device work */
  CUA_OP_THEN = 17,    /**< sequence: second op after the first */
  CUA_OP_SHARED = 18,  /**< runs its inner op once for all consumers */
  CUA_OP_KERNEL = 19,  /**< kernel from a loaded PTX/cubin module */
  CUA_OP_WAIT_NATIVE = 20, /**< waits for work queued on a caller's stream */
  CUA_OP_KIND_COUNT_ = 21
} cua_op_kind;

/** Where an op runs: a device of the runtime's backend and a stream index
 * within that device's stream pool. */
typedef struct cua_placement {
  int device; /**< 0 .. device count - 1 */
  int stream; /**< 0 .. streams obtained on that device - 1 */
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
