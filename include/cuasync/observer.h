/**
 * @file cuasync/observer.h
 * @brief The observer ABI (1.2): modules that are told what a runtime did
 * (submissions, placements, waits, op start and end times), for traces and
 * timelines.
 *
 * An observer is a shared object that exports one symbol,
 * #CUA_OBSERVER_ENTRY_SYMBOL, a #cua_observer_descriptor, written with
 * #CUA_OBSERVER_DEFINE:
 * @code
 * CUA_OBSERVER_DEFINE(.name = "my-trace", .version = "1.0",
 *                     .description = "what it writes",
 *                     CUA_OBSERVER_PARAMS(my_params),
 *                     .create = my_create, .destroy = my_destroy,
 *                     .record = my_record);
 * @endcode
 * A runtime opens the observers `[runtime] observers` names (any number,
 * cuasync.ini(5)), each configured by its `[observer.NAME]` section
 * against its schema; `$CUASYNC_TRACE=FILE` adds the `perfetto` observer
 * writing FILE. The loader refuses a module as it refuses a policy
 * (cuasync-policy(7)), each refusal with its own code:
 * CUA_ERR_MODULE_NOT_FOUND, _DLOPEN, _NO_ENTRY, _ABI_MAJOR (abi_major not
 * #CUA_OBSERVER_ABI_MAJOR), _ABI_MINOR (newer than the core's), _BAD_SIZE
 * (the descriptor or an element size smaller than 1.0's, or an element size
 * over 4096 bytes), _INCOMPLETE
 * (create NULL, record NULL without CUA_OBSERVER_NO_RECORDS, a pointer
 * outside the module), _NAME_MISMATCH,
 * and CUA_ERR_MODULE_CREATE when create() fails; the runtime then does not
 * open.
 *
 * What the core guarantees:
 * - record() is called on one thread of the runtime's own (never the
 *   program's, never under a lock of the core), with batches of records
 *   in the order the core made them; create(), flush() and destroy() are
 *   called on the thread that opens or closes the runtime.
 * - The core keeps at most a bounded number of records waiting (65,536
 *   per runtime): when observers fall behind, new records are dropped and
 *   counted (cua_stats::observer_drops), and the runtime says how many on
 *   standard error when it closes. An observer never slows submissions
 *   down beyond copying a record.
 * - record() returning non-zero disables that observer: the core logs its
 *   message once and calls it no more (destroy() is still called).
 *   Results never depend on observers.
 * - Strings in a record (name, tag, policy) are copies, valid during the
 *   call only, and may be truncated (to 63 bytes).
 * - Arrays of records come with their element size (stride): read record i
 *   at `(const char *)recs + i * stride` and only fields below its size.
 * - Records tell submissions, placements, waits between streams, ops run
 *   (with their device times), graph captures, and, to observers with
 *   CUA_OBSERVER_COMMANDS (ABI 1.2), every event record and progress mark
 *   the core decides.
 * - launch() (ABI 1.1, optional) is the exception, for tools that must act
 *   at the moment of a launch (NVTX ranges, which Nsight Systems projects
 *   onto the GPU work launched inside them): it is called on the thread
 *   that launches each op, just before and just after the backend
 *   launches it, with no lock of the core held, from any number of
 *   threads at once. It must be quick and must not call cuasync.
 */
#ifndef CUASYNC_OBSERVER_H
#define CUASYNC_OBSERVER_H

#include <cuasync/common.h>
#include <cuasync/module.h>
#include <cuasync/opkinds.h>

#include <stddef.h>
#include <stdint.h>

/** ABI version of observer modules, independent of the library version. */
#define CUA_OBSERVER_ABI_MAJOR 1
#define CUA_OBSERVER_ABI_MINOR 2
/** cua_observer_descriptor::flags (ABI 1.1): it takes no records, only
 * launch(): record() is never called and may be NULL, and a runtime whose
 * observers all say so makes no record and takes no device times. */
#define CUA_OBSERVER_NO_RECORDS 0x1u
/** cua_observer_descriptor::flags (ABI 1.2): it also wants a record of
 * every event record and every progress mark the core decides
 * (CUA_OBS_RECORD, CUA_OBS_MARK), one or two more per op; the core makes
 * them only while an observer with this flag is open, so that the others
 * (perfetto) do not pay for them. Every observer gets the other kinds. */
#define CUA_OBSERVER_COMMANDS 0x2u
/** The symbol every observer module exports. */
#define CUA_OBSERVER_ENTRY_SYMBOL "cua_observer_entry"

/** What a record tells. */
typedef enum cua_obs_kind {
  /** A submission (cua_submit() and its kin): submission, t_ns (when the
   * call began: the record is made once the DAG is built and checked). */
  CUA_OBS_SUBMIT = 1,
  /** An op placed: op_id, submission, device, stream, op_kind, name, tag,
   * policy, bytes, cost_ns, inputs (the ops it depends on), t_ns. */
  CUA_OBS_PLACE = 2,
  /** A wait inserted between streams: the op op_id on (device, stream)
   * waits for the op other_op on (other_device, other_stream); t_ns. */
  CUA_OBS_WAIT = 3,
  /** An op ran: op_id, submission, device, stream, op_kind, name, tag,
   * start_ns, end_ns (see timing), code (0, or why it failed). */
  CUA_OBS_OP = 4,
  /** ABI 1.1, to launch() only, never to record(): an op is being
   * launched: op_id, submission, device, stream, op_kind, name, tag,
   * t_ns. */
  CUA_OBS_LAUNCH = 5,
  /** ABI 1.1. An op's times on the device, measured after the fact (CUPTI
   * on CUDA): op_id, start_ns, end_ns (timing MEASURED). They replace the
   * times of that op's CUA_OBS_OP record, which they may follow or
   * precede; an op has at most one. */
  CUA_OBS_TIMES = 6,
  /** ABI 1.2, only to observers with CUA_OBSERVER_COMMANDS. An event is
   * recorded on (device, stream) right after the op op_id (0: after
   * whatever the stream was last given), for waits of other streams;
   * t_ns, submission (op_id's). */
  CUA_OBS_RECORD = 7,
  /** ABI 1.2, only to observers with CUA_OBSERVER_COMMANDS. A progress
   * mark on (device, stream): once the stream gets there, the core sees
   * every op up to op_id (the last the stream was given) done; t_ns. */
  CUA_OBS_MARK = 8,
  /** ABI 1.2, only to modules built for 1.2 or later. A graph was made
   * (cua_graph_create(), or a submission the graph cache captures):
   * start_ns and end_ns (placing its ops and, where the backend captures
   * graphs then, capturing them), submission (the number its placement
   * took), ninputs_total (its ops), code (0, or why it failed). A backend
   * capture made later (at the graph's first launch, or again after an
   * update) makes no record. Each launch of a graph is a CUA_OBS_PLACE
   * and a CUA_OBS_OP of kind graph. */
  CUA_OBS_GRAPH_CAPTURE = 9,
} cua_obs_kind;

/** Where an CUA_OBS_OP record's start and end come from ([runtime]
 * observer_times, cuasync.ini(5)). In every case slices of one stream
 * never overlap, and none starts before what it waited for ended. */
typedef enum cua_obs_timing {
  /** Both measured by the backend: around the op on a host thread (host
   * backend), or by a timing event before and after it on the device
   * (CUDA, observer_times = device). */
  CUA_OBS_TIMING_MEASURED = 0,
  /** Estimated by the core from when it saw the stream progress: the end
   * is the clock of the completion pass that saw the op done, the start
   * the latest of its launch, the end of the op before it on its stream
   * and the ends of the ops it waited for (observer_times = estimated). */
  CUA_OBS_TIMING_ESTIMATED = 1,
  /** ABI 1.1. The end measured on the device (a timing event after the op,
   * CUDA, observer_times = ends, the default); the start the latest of its
   * launch, the end of the op before it on its stream and the ends of the
   * ops it waited for: exact when its stream was busy, late by the launch
   * latency (a few us) when the op found its stream idle. */
  CUA_OBS_TIMING_END_MEASURED = 2,
} cua_obs_timing;

/** Inputs a CUA_OBS_PLACE record lists at most (more are counted in
 * ninputs_total, not listed). */
#define CUA_OBS_MAX_INPUTS 16

/** One record. Fields only grow; read only those below @c size. Times are
 * on the runtime's clock, that of cua_policy_host::now_ns and
 * cua_runtime_now_ns() (CLOCK_MONOTONIC ns; virtual time under the sim
 * backend). */
typedef struct cua_obs_record {
  size_t size;               /**< sizeof(cua_obs_record) of the core */
  cua_obs_kind kind;         /**< what it tells */
  uint64_t t_ns;             /**< when the core did it (SUBMIT, PLACE, WAIT) */
  uint64_t start_ns, end_ns; /**< OP: when it ran */
  cua_obs_timing timing;     /**< OP: where start and end come from */
  uint64_t submission;       /**< the submission's number (from 1) */
  uint64_t op_id;            /**< the op (cua_op_info::op_id) */
  int device, stream;        /**< where it runs (host steps and maps make
                                  no record) */
  uint64_t other_op;         /**< WAIT: the producer waited for */
  int other_device, other_stream; /**< WAIT: where the producer ran */
  cua_op_kind op_kind;            /**< PLACE, OP: what the op does */
  const char *name;               /**< PLACE, OP: name hint, or NULL */
  const char *tag;                /**< PLACE, OP: tag hint, or NULL */
  const char *policy;             /**< PLACE: the policy that placed it */
  uint64_t bytes;                 /**< PLACE: its bytes hint, 0 unknown */
  uint64_t cost_ns;               /**< PLACE: its cost hint, 0 none */
  int code;                       /**< OP: 0, or the error it failed with */
  uint32_t ninputs;               /**< PLACE: entries of inputs */
  uint32_t ninputs_total;         /**< PLACE: inputs it has in all */
  uint64_t inputs[CUA_OBS_MAX_INPUTS]; /**< PLACE: op ids it waits for */
} cua_obs_record;

/** What the core offers an observer (its first argument: @c core). */
typedef struct cua_observer_host {
  uint32_t abi_major; /**< the core's CUA_OBSERVER_ABI_MAJOR */
  uint32_t abi_minor; /**< the core's CUA_OBSERVER_ABI_MINOR */
  size_t size;        /**< sizeof(cua_observer_host) of the core */
  void *core;         /**< opaque; first argument of every call below */
  /** Devices of the runtime. */
  int (*device_count)(void *core);
  /** Describes a device. */
  int (*device_info)(void *core, int device, cua_device_info *out);
  /** The runtime's backend name ("cuda", "host", ...). */
  const char *(*backend_name)(void *core);
  /** The runtime's clock, nanoseconds (the records' clock:
   * CLOCK_MONOTONIC, or virtual time under the sim backend). */
  uint64_t (*now_ns)(void *core);
  /** Logs a line prefixed with the observer's name: errors and warnings
   * to standard error, info and debug lines only with $CUASYNC_DEBUG;
   * the lines but debug ones logged by a failing create() or record()
   * are its message. */
  void (*log)(void *core, cua_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
      ;
} cua_observer_host;

/** An observer module's descriptor; write it with #CUA_OBSERVER_DEFINE. */
typedef struct cua_observer_descriptor {
  uint32_t abi_major;           /**< CUA_OBSERVER_ABI_MAJOR it was built with */
  uint32_t abi_minor;           /**< CUA_OBSERVER_ABI_MINOR it was built with */
  size_t size;                  /**< sizeof(cua_observer_descriptor) it knows */
  const char *name;             /**< must equal the name it is loaded by */
  const char *version;          /**< the observer's own version, free form */
  const char *description;      /**< one line */
  uint64_t flags;               /**< CUA_OBSERVER_NO_RECORDS,
                                     CUA_OBSERVER_COMMANDS, or 0 */
  const cua_param_spec *params; /**< its [observer.NAME] schema, or NULL */
  size_t nparams;               /**< entries in params */
  size_t param_spec_size;       /**< sizeof(cua_param_spec): stride of params */
  size_t param_value_size;      /**< sizeof(cua_param_value): stride of the
                                     values create() gets */
  size_t record_size;           /**< sizeof(cua_obs_record) it knows */

  /** Required. Creates an instance from @p params (nparams values in the
   * order of params, defaults filled in) into *state; 0, or a negative
   * code (the runtime then fails to open with CUA_ERR_MODULE_CREATE and
   * the lines it logged as the message). */
  int (*create)(const cua_observer_host *host, const cua_param_value *params,
                void **state);
  /** Optional. Frees the instance, after the last record(). */
  void (*destroy)(void *state);
  /** Required (but with CUA_OBSERVER_NO_RECORDS). Takes @p n records of
   * element size @p stride. 0, or non-zero to be disabled (log why
   * first). */
  int (*record)(void *state, const cua_obs_record *recs, size_t n,
                size_t stride);
  /** Optional. The runtime is closing and every record was given: write
   * what is buffered (before destroy()). */
  void (*flush)(void *state);
  /** ABI 1.1. Optional. An op is launched: @p phase 0 just before the
   * backend is asked to, 1 just after (whether or not it succeeded), on
   * the launching thread; @p op a CUA_OBS_LAUNCH record (its strings valid
   * during the call); @p native_stream the backend's own stream
   * (cudaStream_t on CUDA, as a stream function gets it), or NULL.
   * Not called for ops replayed in a graph. */
  void (*launch)(void *state, const cua_obs_record *op, int phase,
                 void *native_stream);
} cua_observer_descriptor;

#if defined(__cplusplus)
#define CUA__OBSERVER_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define CUA__OBSERVER_EXPORT __attribute__((visibility("default")))
#endif

/** A descriptor's initializer from named fields, the version and element
 * sizes filled in. */
#define CUA_OBSERVER_INIT(...)                                                 \
  {                                                                            \
    .abi_major = CUA_OBSERVER_ABI_MAJOR, .abi_minor = CUA_OBSERVER_ABI_MINOR,  \
    .size = sizeof(cua_observer_descriptor),                                   \
    .param_spec_size = sizeof(cua_param_spec),                                 \
    .param_value_size = sizeof(cua_param_value),                               \
    .record_size = sizeof(cua_obs_record), __VA_ARGS__                         \
  }

/** Defines an observer module's entry symbol from named fields. */
#define CUA_OBSERVER_DEFINE(...)                                               \
  CUA__OBSERVER_EXPORT const cua_observer_descriptor cua_observer_entry =      \
      CUA_OBSERVER_INIT(__VA_ARGS__)

/** The named fields of a parameter schema, from an array of
 * #cua_param_spec. */
#define CUA_OBSERVER_PARAMS(array_)                                            \
  .params = (array_), .nparams = sizeof(array_) / sizeof((array_)[0])

#endif /* CUASYNC_OBSERVER_H */
