/**
 * @file cuasync/policy.h
 * @brief The scheduling-policy ABI: the whole contract for policy authors.
 *
 * A policy is a shared object that exports one symbol,
 * #CUA_POLICY_ENTRY_SYMBOL, a #cua_policy_descriptor. The core loads it with
 * dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE): a module stays mapped until
 * the process exits. It refuses it when:
 * - the symbol is missing (CUA_ERR_MODULE_NO_ENTRY);
 * - abi_major differs from #CUA_POLICY_ABI_MAJOR (CUA_ERR_MODULE_ABI_MAJOR);
 * - abi_minor is newer than the core's (CUA_ERR_MODULE_ABI_MINOR);
 * - size is smaller than the ABI 1.0 descriptor (CUA_ERR_MODULE_BAD_SIZE);
 * - name differs from the name it was loaded by (CUA_ERR_MODULE_NAME_MISMATCH);
 * - the symbol is not a data object, is smaller than a descriptor's header
 *   or misaligned, or its size field exceeds the symbol
 *   (CUA_ERR_MODULE_BAD_SIZE / CUA_ERR_MODULE_INCOMPLETE);
 * - create or place is NULL, a pointer in the descriptor (strings, schema,
 *   operations) lies outside the module's own loaded segments, the name is
 *   empty or has control characters, or the schema names a parameter twice
 *   (CUA_ERR_MODULE_INCOMPLETE, each with its own message);
 * - create() returns non-zero (CUA_ERR_MODULE_CREATE).
 * Fields beyond the descriptor's size count as absent.
 *
 * The policy answers one question per op: where does it run? It calls the
 * core only through the #cua_policy_host table handed to create(), so it
 * never links against libcuasync.
 *
 * Threads: the core serialises every call into one policy instance (create,
 * place, submitted, completed, dump, destroy never overlap for one
 * instance), so a policy needs no locks for its own state. place() and
 * submitted() run on the thread that submits (or on the completion thread
 * for ops whose inputs include a host step); completed() runs on the
 * runtime's completion thread. None of them may call back into the public
 * API (cuasync.h) of the same runtime.
 *
 * Order: within a submission, an op is placed once every device op it
 * depends on is placed and every host step or map it waits for has
 * completed; ops that become placeable together are placed first in,
 * first out, from the ops with nothing before them in submission order
 * (the DAG's depth-first post-order). So placement is breadth-first, and
 * an op's inputs are placed before it. An op that waits for a host step is
 * placed in a later round, once the step completes.
 *
 * Correctness is never the policy's job: whatever valid placement it makes,
 * the core inserts the event waits that keep results equal to sequential
 * execution.
 *
 * Writing one: implement place() (and create() to ask for streams), then
 * @code
 * CUA_POLICY_DEFINE("my-policy", "1.0", "what it does", 0, my_params,
 *                   my_create, my_destroy, my_place, NULL, NULL, NULL);
 * @endcode
 * See cuasync-policy(7) and doc/policy-guide.md.
 */
#ifndef CUASYNC_POLICY_H
#define CUASYNC_POLICY_H

#include <cuasync/common.h>
#include <cuasync/module.h>

#include <stdio.h>

/** ABI version of policy modules, independent of the library version. */
#define CUA_POLICY_ABI_MAJOR 1
#define CUA_POLICY_ABI_MINOR 0
/** The symbol every policy module exports. */
#define CUA_POLICY_ENTRY_SYMBOL "cua_policy_entry"

/** The policy wants per-op durations in completed(): measured on the host
 * backend; on the others (CUDA), estimated without any event per op: the
 * ops a stream completed between two looks of the completion thread share
 * the time it observed them take. */
#define CUA_POLICY_WANTS_TIMING 0x1u

/** What the policy is told about the op to place. Fields only grow. */
typedef struct cua_op_info {
  size_t size;           /**< sizeof(cua_op_info) as the core knows it */
  cua_op_kind kind;      /**< what the op does */
  const char *name;      /**< hint: name, or NULL */
  const char *tag;       /**< hint: tag, or NULL */
  int preferred_device;  /**< hint: device, or -1 */
  uint64_t cost_ns;      /**< hint: estimated duration, 0 unknown */
  uint64_t bytes;        /**< hint: bytes moved, 0 unknown */
  uint64_t flops;        /**< hint: flops, 0 unknown */
  int priority;          /**< hint: priority */
  cua_placement then_of; /**< placement of the op this one continues
                             (cua_op_then: the last op of its first part,
                             through thens, shared ops and unzips), or
                             {-1, -1}; a then after a zip continues no
                             stream */
  int data_device;       /**< the device all its buffers live on, -1 if
                              none or mixed */
  int restrict_device;   /**< >= 0: the placement must be on this device
                              (the op's buffers or a device policy demand
                              it); -1: any device */
  /** Depth in the submission's DAG: the device and host ops on the longest
   * path of inputs and then edges that ends here (0: none before it; zips,
   * unzips and shared ops add none). Ops of one level cannot depend on
   * each other through those edges. */
  uint32_t level;
  uint64_t submission;         /**< id of the submission, increasing */
  uint64_t op_id;              /**< unique per executed op, increasing */
  size_t ninputs;              /**< how many inputs already placed on devices
                                    (the first 8 of them) */
  const cua_placement *inputs; /**< their placements (valid during call) */
} cua_op_info;

/** Load of one stream, as the core counts it. */
typedef struct cua_stream_load {
  size_t size;            /**< sizeof(cua_stream_load) as the caller knows */
  uint64_t ops_in_flight; /**< placed, not known complete */
  uint64_t est_busy_ns;   /**< sum of cost_ns hints of those ops */
  uint64_t ops_total;     /**< placed since the stream was created */
} cua_stream_load;

/** A nested policy instance opened through the host table. */
typedef struct cua_policy_nested cua_policy_nested;

/**
 * The core's services, handed to create(). Valid until destroy() returns.
 * Grows only at the end; check @c size before using a later field.
 */
typedef struct cua_policy_host {
  uint32_t abi_major; /**< the core's CUA_POLICY_ABI_MAJOR */
  uint32_t abi_minor; /**< the core's CUA_POLICY_ABI_MINOR */
  size_t size;        /**< sizeof(cua_policy_host) of the core */
  void *core;         /**< opaque; first argument of every call below */
  /** Devices of the runtime. */
  int (*device_count)(void *core);
  /** Streams that exist on @p device (in the runtime's shared pool). */
  int (*stream_count)(void *core, int device);
  /** Makes sure @p device has at least @p n streams (creating them if
   * needed); returns 0 or a negative code. Streams 0..n-1 are then valid
   * placements. Streams are shared by all policies of the runtime. */
  int (*ensure_streams)(void *core, int device, int n);
  /** Load of a stream; 0 or CUA_ERR_INVAL for a bad device/stream. */
  int (*stream_load)(void *core, int device, int stream, cua_stream_load *out);
  /** Monotonic clock, nanoseconds. */
  uint64_t (*now_ns)(void *core);
  /** Logs a line (prefixed with the policy's name) to the runtime's log.
   * Errors and warnings go to standard error, info and debug lines only
   * with $CUASYNC_DEBUG set; lines logged by a failing create() or place()
   * are its message. Without $CUASYNC_DEBUG, CUA_LOG_DEBUG lines are not
   * formatted at all, so place() may log one per op at no cost. */
  void (*log)(void *core, cua_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
      ;
  /** Describes a device. */
  int (*device_info)(void *core, int device, cua_device_info *out);
  /** Opens another policy by name, configured from its own INI section
   * (affinity's nested policy). Close it in destroy(). */
  int (*nested_open)(void *core, const char *name, cua_policy_nested **out);
  /** Asks a nested policy to place @p op. */
  int (*nested_place)(void *core, cua_policy_nested *nested,
                      const cua_op_info *op, cua_placement *out);
  /** Forwards submitted/completed notifications to a nested policy. */
  void (*nested_submitted)(void *core, cua_policy_nested *nested,
                           const cua_op_info *op, cua_placement where);
  void (*nested_completed)(void *core, cua_policy_nested *nested,
                           const cua_op_info *op, cua_placement where,
                           uint64_t duration_ns);
  /** Closes a nested policy. */
  void (*nested_close)(void *core, cua_policy_nested *nested);
} cua_policy_host;

/** The descriptor a policy module exports as #CUA_POLICY_ENTRY_SYMBOL. */
typedef struct cua_policy_descriptor {
  uint32_t abi_major;           /**< CUA_POLICY_ABI_MAJOR it was built with */
  uint32_t abi_minor;           /**< CUA_POLICY_ABI_MINOR it was built with */
  size_t size;                  /**< sizeof(cua_policy_descriptor) it knows */
  const char *name;             /**< must equal the name it is loaded by */
  const char *version;          /**< the policy's own version, free form */
  const char *description;      /**< one line */
  uint64_t flags;               /**< CUA_POLICY_* flags */
  const cua_param_spec *params; /**< its INI section's schema, or NULL */
  size_t nparams;               /**< entries in params */

  /**
   * Required. Creates an instance. @p params has @c nparams values in the
   * order of @c params (defaults filled in). Store the instance in *state.
   * Return 0, or a negative code (the load then fails with
   * CUA_ERR_MODULE_CREATE and the policy's log lines as the message).
   * Called once per instance, when the runtime (or cua_policy_open())
   * opens it.
   */
  int (*create)(const cua_policy_host *host, const cua_param_value *params,
                void **state);
  /** Optional (default: nothing). Frees the instance; called once, after
   * every op it placed has completed. */
  void (*destroy)(void *state);
  /**
   * Required. Chooses where @p op runs: a device (honouring
   * op->restrict_device) and a stream index obtained with ensure_streams().
   * Return 0, or a negative code to fail the op with CUA_ERR_POLICY (the
   * code and the policy's log lines are in the message). An invalid
   * placement fails the op with CUA_ERR_BAD_PLACEMENT naming the policy.
   */
  int (*place)(void *state, const cua_op_info *op, cua_placement *out);
  /** Optional (default: nothing). Called right after place() succeeded (and
   * the core accepted the placement), before the op is launched; when a
   * [device.N] policy re-placed the op within its device, that policy is
   * the one told, here and in completed(). */
  void (*submitted)(void *state, const cua_op_info *op, cua_placement where);
  /**
   * Optional (default: nothing). Called once the core knows the op is
   * complete. @p duration_ns is its run time: measured on the host
   * backend; on CUDA, with CUA_POLICY_WANTS_TIMING, estimated from the
   * progress observed (see that flag); else 0. @p op is what place() was
   * told but for its inputs (NULL here, ninputs 0); name and tag are valid
   * for the duration of the call.
   */
  void (*completed)(void *state, const cua_op_info *op, cua_placement where,
                    uint64_t duration_ns);
  /** Optional (default: nothing). Writes a human-readable state summary. */
  void (*dump)(void *state, FILE *out);
} cua_policy_descriptor;

#ifdef __cplusplus
#define CUA__POLICY_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define CUA__POLICY_EXPORT __attribute__((visibility("default")))
#endif

/**
 * Defines the entry symbol of a policy module in one line. @p params_ is an
 * array of #cua_param_spec (its size is taken with sizeof); a policy with no
 * parameters uses CUA_POLICY_DEFINE_NOPARAMS.
 */
#define CUA_POLICY_DEFINE(name_, version_, description_, flags_, params_,      \
                          create_, destroy_, place_, submitted_, completed_,   \
                          dump_)                                               \
  CUA__POLICY_EXPORT const cua_policy_descriptor cua_policy_entry = {          \
      CUA_POLICY_ABI_MAJOR,                                                    \
      CUA_POLICY_ABI_MINOR,                                                    \
      sizeof(cua_policy_descriptor),                                           \
      (name_),                                                                 \
      (version_),                                                              \
      (description_),                                                          \
      (flags_),                                                                \
      (params_),                                                               \
      sizeof(params_) / sizeof((params_)[0]),                                  \
      (create_),                                                               \
      (destroy_),                                                              \
      (place_),                                                                \
      (submitted_),                                                            \
      (completed_),                                                            \
      (dump_)}

/** CUA_POLICY_DEFINE for a policy with no parameters. */
#define CUA_POLICY_DEFINE_NOPARAMS(name_, version_, description_, flags_,      \
                                   create_, destroy_, place_, submitted_,      \
                                   completed_, dump_)                          \
  CUA__POLICY_EXPORT const cua_policy_descriptor cua_policy_entry = {          \
      CUA_POLICY_ABI_MAJOR,                                                    \
      CUA_POLICY_ABI_MINOR,                                                    \
      sizeof(cua_policy_descriptor),                                           \
      (name_),                                                                 \
      (version_),                                                              \
      (description_),                                                          \
      (flags_),                                                                \
      NULL,                                                                    \
      0,                                                                       \
      (create_),                                                               \
      (destroy_),                                                              \
      (place_),                                                                \
      (submitted_),                                                            \
      (completed_),                                                            \
      (dump_)}

#endif /* CUASYNC_POLICY_H */
