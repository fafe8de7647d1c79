/**
 * @file cuasync/policy.h
 * @brief The scheduling-policy ABI (2.1): the whole contract for policy
 * authors.
 *
 * A policy is a shared object that exports one symbol,
 * #CUA_POLICY_ENTRY_SYMBOL, a #cua_policy_descriptor, or a descriptor in
 * the program itself handed to cua_policy_register() (cuasync.h). Write
 * it with #CUA_POLICY_DEFINE (or #CUA_POLICY_INIT for a registered one):
 * named fields, the version and sizes filled in by the macro:
 * @code
 * CUA_POLICY_DEFINE(.name = "my-policy", .version = "1.0",
 *                   .description = "what it does",
 *                   CUA_POLICY_PARAMS(my_params),
 *                   .create = my_create, .destroy = my_destroy,
 *                   .place = my_place);
 * @endcode
 *
 * The core loads a module with dlopen(RTLD_NOW | RTLD_LOCAL |
 * RTLD_NODELETE): it stays mapped until the process exits. It refuses it
 * when:
 * - the symbol is missing (CUA_ERR_MODULE_NO_ENTRY);
 * - abi_major differs from #CUA_POLICY_ABI_MAJOR (CUA_ERR_MODULE_ABI_MAJOR;
 *   a module of ABI 1.x is told to be rebuilt against these headers: this
 *   core does not load 1.x modules, see cuasync-policy(7));
 * - abi_minor is newer than the core's (CUA_ERR_MODULE_ABI_MINOR);
 * - size is smaller than the ABI 2.0 descriptor (CUA_ERR_MODULE_BAD_SIZE);
 * - an element size (param_spec_size, param_value_size, input_size,
 *   dag_op_size, dag_buffer_size) is smaller than the 2.0 element's or
 *   larger than 4096 bytes (CUA_ERR_MODULE_BAD_SIZE);
 * - name differs from the name it was loaded by (CUA_ERR_MODULE_NAME_MISMATCH);
 * - the symbol is not a data object, is smaller than a descriptor's header
 *   or misaligned, or its size field exceeds the symbol
 *   (CUA_ERR_MODULE_BAD_SIZE / CUA_ERR_MODULE_INCOMPLETE);
 * - create or place is NULL, push without pop or pop without push (pull
 *   mode needs both), a pointer in the descriptor (strings, schema,
 *   operations) lies outside the module's own loaded segments, the name is
 *   empty or has control characters, the schema names a parameter twice,
 *   or names one that no INI line can set (empty, a blank at either end,
 *   '=' or ':', a ';' after a blank, a first ';', '#' or '['), or
 *   describes one no configuration could satisfy or this library could
 *   not honour (a type that is no cua_param_type, a range that holds no
 *   value, an enum without choices or with an empty one, a default that
 *   does not parse, flags this library does not know, CUA_PARAM_PATH on
 *   a type other than CUA_PARAM_STRING)
 *   (CUA_ERR_MODULE_INCOMPLETE, each with its own message);
 * - create() returns non-zero (CUA_ERR_MODULE_CREATE).
 * Fields beyond the descriptor's size count as absent.
 *
 * Arrays: every array of structs that crosses the boundary has its
 * element size in the descriptor (param_spec_size, param_value_size,
 * input_size, dag_op_size, dag_buffer_size), which #CUA_POLICY_INIT sets to
 * the sizes of the headers the policy was built with; the core reads and
 * writes those arrays with that stride, so a policy indexes them as plain
 * C arrays, and a later minor version may grow an element without
 * breaking it. Single structs (cua_op_info, cua_stream_load, cua_dag,
 * cua_policy_host) carry their own size.
 * cua_placement has a fixed size, with room for a node.
 *
 * The policy answers one question per op: where does it run? It calls the
 * core only through the #cua_policy_host table handed to create(), so it
 * never links against libcuasync.
 *
 * What the core guarantees to a policy:
 * - Threads: the core serialises every call into one policy instance
 *   (create, place, submitted, completed, submission_begin, submission_end,
 *   dump, destroy never overlap for one instance), so a policy needs no
 *   locks for its own state. place(), submitted(), submission_begin() and
 *   submission_end() run on the thread that submits (or on the completion
 *   thread for ops whose inputs include a host step); completed() runs on
 *   the runtime's completion thread. None of them may call back into the
 *   public API (cuasync.h) of the same runtime.
 * - Order: create() first, destroy() last and once, after every op the
 *   instance placed has completed. Within a submission,
 *   submission_begin() comes before its first place(), and
 *   submission_end() after its last op was placed (or failed); an op is
 *   placed once every device op it depends on is placed and every host
 *   step or map it waits for has completed; ops placeable at once are
 *   placed by level (0 for an op with no input in its submission, else one
 *   more than its inputs' highest), and within a level in submission order
 *   (the DAG's depth-first post-order: op ids), as far as they become
 *   placeable in time (one that does so more than 64 ops behind its place
 *   goes after the others). So placement is breadth-first, and an op's
 *   inputs are placed before it.
 *   An op that waits for a host step is placed in a later round, once the
 *   step completes. submitted() follows place() at once when the core
 *   accepted the placement; completed() comes once per op submitted(),
 *   after it. A large submission's first ops may run, and their
 *   completed() come, before its later ops are placed: the submitting
 *   thread applies its decisions in chunks as it makes them.
 * - Validation: the core checks every placement (a device and stream that
 *   exist, the device the op must run on, node 0, reserved 0) and fails
 *   the op, not the program, when one is wrong; a policy need not check
 *   what it is told (devices exist, restrict_device is a real device or
 *   -1, inputs are placed ops, streams obtained with ensure_streams() stay
 *   valid for the runtime's life).
 * - Correctness is never the policy's job: whatever valid placement it
 *   makes, the core inserts the event waits that keep results equal to
 *   sequential execution.
 *
 * See cuasync-policy(7) and doc/policy-guide.md.
 */
#ifndef CUASYNC_POLICY_H
#define CUASYNC_POLICY_H

#include <cuasync/common.h>
#include <cuasync/module.h>

#include <stdio.h>

/** ABI version of policy modules, independent of the library version. */
#define CUA_POLICY_ABI_MAJOR 2
#define CUA_POLICY_ABI_MINOR 1
/** The symbol every policy module exports. */
#define CUA_POLICY_ENTRY_SYMBOL "cua_policy_entry"

/** The policy wants per-op durations in completed(): measured on the host
 * backend; on the others (CUDA), estimated without an event per op: the
 * ops a stream completed between two looks of the completion thread share
 * the time it observed them take, but for the first 16 ops of each
 * performance-model class and size, which the backend times (an event
 * pair each on CUDA). */
#define CUA_POLICY_WANTS_TIMING 0x1u

/** Where an input of an op stands when the op is placed. */
typedef enum cua_input_state {
  CUA_INPUT_PLACED = 0, /**< placed, not known complete */
  CUA_INPUT_DONE = 1,   /**< known complete */
  CUA_INPUT_HOST = 2,   /**< a host step or map, complete (an op waiting
                             for one is placed once it completed) */
} cua_input_state;

/** One op an op waits for (an element of cua_op_info::inputs). The core
 * writes these with the descriptor's input_size as the stride. */
typedef struct cua_op_input {
  uint64_t op_id;           /**< the producer's cua_op_info::op_id */
  cua_op_kind kind;         /**< what it does */
  cua_input_state state;    /**< placed, done, or a host step */
  cua_placement where;      /**< where it was placed; device -1 for a host
                                 step */
  uint64_t expected_end_ns; /**< when it is expected to finish, on the
                                 host table's now_ns() clock: its expected
                                 start (the latest of the scheduling
                                 round that placed it, its stream's
                                 expected end and its inputs' expected
                                 ends) plus its expected duration (the
                                 performance model's mean for its class
                                 and size on that device, else its cost
                                 hint); 0 once done and for a host step */
  uint64_t bytes;           /**< its bytes hint (what it produces, as far
                                 as the hint says), 0 unknown */
} cua_op_input;

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
                             device and stream -1; a then after a zip
                             continues no stream, and an op is continued
                             once: of a fan-out after it (then(a, zip(b,
                             c)), two thens after a) only the first device
                             op built gets a's placement */
  int data_device;       /**< the device all its buffers live on, -1 if
                              none or mixed */
  int restrict_device;   /**< >= 0: the placement must be on this device
                              (the op's buffers or a device policy demand
                              it); -1: any device */
  /** Depth in the submission's DAG: the device and host ops on the longest
   * path that ends here of inputs, then edges and buffer hazards between
   * ops of this submission (an op that uses a buffer an earlier op of the
   * submission writes, or writes one it reads), 0: none before it; zips,
   * unzips and shared ops add none. Ops of one level cannot depend on each
   * other within the submission. */
  uint32_t level;
  uint64_t submission; /**< id of the submission, increasing */
  uint64_t op_id;      /**< unique per executed op, increasing */
  /** The device ops and host steps it waits for (inputs and then edges,
   * seen through zips, unzips and thens that have no op of their own), of
   * this submission and earlier ones, each once. Valid during the call;
   * NULL with ninputs 0 in completed(). */
  const cua_op_input *inputs;
  size_t ninputs; /**< entries in inputs */
  /** The ops of submissions made so far that wait for this one (seen
   * through zips and unzips), so 0 for the DAG's last op. */
  size_t nsuccessors;
} cua_op_info;

/** Load of one stream, as the core counts it. */
typedef struct cua_stream_load {
  size_t size;            /**< sizeof(cua_stream_load) as the caller knows */
  uint64_t ops_in_flight; /**< placed, not known complete */
  uint64_t est_busy_ns;   /**< sum of their expected durations (as in
                               cua_op_input::expected_end_ns) */
  uint64_t ops_total;     /**< placed since the stream was created */
  /** When the stream is expected to have run what was placed on it, on
   * the now_ns() clock, from expected durations (as
   * cua_op_input::expected_end_ns);
   * never earlier than the last op placed there. */
  uint64_t expected_end_ns;
} cua_stream_load;

/** Where an estimate of cua_policy_host::expected_duration or
 * cua_policy_host::expected_transfer comes from. */
typedef enum cua_estimate_source {
  CUA_ESTIMATE_NONE = 0,  /**< nothing known: ns is 0 */
  CUA_ESTIMATE_HINT,      /**< the op's cost hint (no measurement yet) */
  CUA_ESTIMATE_HISTORY,   /**< the mean of measurements of this class and
                               size bucket on this device */
  CUA_ESTIMATE_REGRESSION /**< a + b * bytes, fitted over the class's
                               other size buckets on this device */
} cua_estimate_source;

/** An expected duration from the core's performance models (see
 * cua_policy_host::expected_duration). Set @c size before the call: the
 * core writes only the fields that fit in it. */
typedef struct cua_estimate {
  size_t size;        /**< sizeof(cua_estimate) as the caller knows it */
  uint64_t ns;        /**< expected duration, nanoseconds */
  uint64_t stddev_ns; /**< spread of the measurements (0: unknown) */
  double samples;     /**< measurements behind it (a double: a model
                           file is sums, see cuasync-policy(7)) */
  /** 0 (nothing measured) to 1: samples / (samples + 2) divided by
   * (1 + stddev / mean) for a history; half of that times the fit's r^2
   * for a regression; 0 for a hint. */
  double confidence;
  int source; /**< a #cua_estimate_source */
} cua_estimate;

/** One op of a submission's DAG (an element of cua_dag::ops, written with
 * the descriptor's dag_op_size as the stride). */
typedef struct cua_dag_op {
  uint64_t op_id;       /**< as place() will be told */
  cua_op_kind kind;     /**< what it does */
  const char *name;     /**< hint: name, or NULL */
  const char *tag;      /**< hint: tag, or NULL */
  int preferred_device; /**< hint: device, or -1 */
  int priority;         /**< hint: priority */
  uint64_t cost_ns;     /**< hint: estimated duration, 0 unknown */
  uint64_t bytes;       /**< hint: bytes moved, 0 unknown */
  uint64_t flops;       /**< hint: flops, 0 unknown */
  uint32_t level;       /**< as cua_op_info::level */
  int host;             /**< 1: a host step or map, run by the core */
  /** Indices into cua_dag::ops of the ops of this DAG it waits for (as
   * cua_op_info::inputs, without the ops of earlier submissions). */
  const size_t *inputs;
  size_t ninputs;
  /** Indices into cua_dag::ops of the ops of this DAG that wait for it. */
  const size_t *successors;
  size_t nsuccessors;
  /** Indices into cua_dag::buffers of the buffers (and tiles) it uses,
   * and for each the access: CUA_ACCESS_READ, CUA_ACCESS_WRITE or both,
   * the bits of cua_access_mode. */
  const size_t *buffers;
  const unsigned *access;
  size_t nbuffers;
  int data_device;     /**< as cua_op_info::data_device */
  int restrict_device; /**< as cua_op_info::restrict_device */
} cua_dag_op;

/** Access bits of cua_dag_op::access. */
#define CUA_ACCESS_READ 0x1u
#define CUA_ACCESS_WRITE 0x2u

/** One buffer a DAG uses (an element of cua_dag::buffers, written with the
 * descriptor's dag_buffer_size as the stride). */
typedef struct cua_dag_buffer {
  uint64_t bytes; /**< its size (a tile's own size) */
  int device;     /**< the device its memory lives on */
} cua_dag_buffer;

/** The whole DAG of a submission, as submission_begin() sees it: its ops
 * that have not run yet, in the order they would be placed if nothing
 * waited (the DAG's post-order: every op after its inputs). Valid during
 * the call. */
typedef struct cua_dag {
  size_t size;           /**< sizeof(cua_dag) as the core knows it */
  uint64_t submission;   /**< as cua_op_info::submission */
  const cua_dag_op *ops; /**< nops entries */
  size_t nops;
  const cua_dag_buffer *buffers; /**< nbuffers entries */
  size_t nbuffers;
} cua_dag;

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
   * needed); returns 0 or a negative code (CUA_ERR_INVAL for a bad device
   * or an @p n outside 0..1024). Streams 0..n-1 are then valid
   * placements. Streams are shared by all policies of the runtime. */
  int (*ensure_streams)(void *core, int device, int n);
  /** Load of a stream; 0 or CUA_ERR_INVAL for a bad device/stream. */
  int (*stream_load)(void *core, int device, int stream, cua_stream_load *out);
  /** The runtime's clock, nanoseconds (cua_runtime_now_ns()):
   * CLOCK_MONOTONIC, or the virtual time of a backend with a clock of its
   * own (sim, cuasync-sim(7)). */
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
   * (affinity's nested policy). Close it in destroy(). A policy cannot
   * nest itself, directly or through another, and policies nest at most 8
   * deep (CUA_ERR_INVAL, with a log line). */
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
  /** The core's performance model: how long @p op is expected to take on
   * @p device. Models are measured durations per op class (kind, name,
   * tag, bucket of the cost hint), size bucket (log2 of the bytes hint)
   * and device, learned from the ops the backend times (on the host
   * backend every op; on CUDA the first 16 of each class, size bucket and
   * device in a runtime, each with an event pair, so that the time an op
   * waits for its inputs is not counted) and kept per host between runs
   * ([runtime] models in cuasync.ini(5)). With no
   * measurement of the op's own size bucket (or fewer than 3), a
   * regression over the class's other sizes answers, if there are two;
   * else the op's cost hint (#CUA_ESTIMATE_HINT); else
   * #CUA_ESTIMATE_NONE with ns 0. Kinds that do no timed work (alloc,
   * free, barrier, host steps, combinators) are always NONE. Returns 0, or
   * CUA_ERR_INVAL for a NULL @p op or @p out, a bad device, or
   * out->size smaller than its first two fields. */
  int (*expected_duration)(void *core, const cua_op_info *op, int device,
                           cua_estimate *out);
  /** The transfer model: how long moving @p bytes from @p from to @p to
   * takes (a device, or -1 for host memory), fitted as latency + bytes /
   * bandwidth from the memcpy ops the runtime ran between them (H2D, D2H,
   * D2D and peer copies). #CUA_ESTIMATE_NONE (ns 0) when nothing was
   * measured between them. Returns 0, or CUA_ERR_INVAL as above. */
  int (*expected_transfer)(void *core, int from, int to, uint64_t bytes,
                           cua_estimate *out);
} cua_policy_host;

/** The descriptor a policy module exports as #CUA_POLICY_ENTRY_SYMBOL (or
 * a program registers with cua_policy_register()). Write it with
 * #CUA_POLICY_DEFINE or #CUA_POLICY_INIT, which fill the first three
 * fields and the element sizes. */
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
  size_t param_spec_size;       /**< sizeof(cua_param_spec): stride of params */
  size_t param_value_size;      /**< sizeof(cua_param_value): stride of the
                                     values create() gets */
  size_t input_size;            /**< sizeof(cua_op_input): stride of
                                     cua_op_info::inputs */
  size_t dag_op_size;     /**< sizeof(cua_dag_op): stride of cua_dag::ops */
  size_t dag_buffer_size; /**< sizeof(cua_dag_buffer): stride of
                               cua_dag::buffers */

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
   * progress observed (see that flag); else 0. For an op of a graph
   * (cua_graph_create()), it comes right after the capture, on the
   * capturing thread, with a duration of 0; replays are not reported.
   * @p op is what place() was
   * told but for its inputs (NULL here, ninputs 0); name and tag are valid
   * for the duration of the call.
   */
  void (*completed)(void *state, const cua_op_info *op, cua_placement where,
                    uint64_t duration_ns);
  /** Optional (default: nothing). Writes a human-readable state summary. */
  void (*dump)(void *state, FILE *out);
  /** Optional (default: nothing). A submission this instance places (as
   * its cua_submit_options::policy or the runtime's policy) begins: the
   * whole DAG, before the first place() of its ops. No op of the
   * submission is launched before it returns, so a plan made here whole
   * delays the first launch by all of it (heft plans each op when place()
   * first asks for it instead). Not called for a submission whose ops all
   * ran before, nor for a nested or [device.N] policy. */
  void (*submission_begin)(void *state, const cua_dag *dag);
  /** Optional (default: nothing). Every op of the submission
   * submission_begin() announced has been placed (or failed). */
  void (*submission_end)(void *state, uint64_t submission);

  /* ABI 2.1. A 2.0 module's descriptor ends above: these count as absent. */

  /**
   * Optional, with pop() (one without the other: the module is refused,
   * CUA_ERR_MODULE_INCOMPLETE): pull mode (late binding, as StarPU's
   * push/pop).
   * An op this instance places (as the runtime's or a submission's
   * policy) is ready, everything it waits for placed or done: instead of
   * calling place(), the core hands it over here, and the policy keeps its
   * op_id until pop() gives it to a stream. @p op is as place() gets it
   * (valid during the call). Return 0, or a negative code, which fails the
   * op with CUA_ERR_POLICY (on_policy_error = fallback does not apply to
   * pull mode). place() is still required: the core calls it where it
   * cannot wait, for the policy opened as a nested or [device.N] policy.
   * In pull mode the stream pop() is offered is the placement: a device's
   * own [device.N] policy is not consulted.
   */
  int (*push)(void *state, const cua_op_info *op);
  /**
   * Optional, with push(): stream @p where has fewer than [runtime]
   * pull_depth ops in flight (cuasync.ini(5)). Return 1 with *op_id set to
   * an op push() gave and pop() has not returned yet, to run there next,
   * or 0 to give it nothing. The core asks every stream with room, device
   * by device, after each scheduling round (a submission, completions),
   * until each is full or declines. A policy must give an op it holds to
   * an idle stream it may run on: if it holds ops when no stream has
   * anything in flight, nothing would ask it again, and the core fails
   * those ops (CUA_ERR_POLICY). An op given to a stream of a device it may
   * not run on fails with CUA_ERR_BAD_PLACEMENT; an op_id it does not hold
   * (say, one of the ops the core failed as above: those are gone) is
   * ignored, said once on stderr, and pop() asked again (16 times at
   * most). submitted() follows each op given, completed() its end, as in
   * push mode.
   */
  int (*pop)(void *state, cua_placement where, uint64_t *op_id);
} cua_policy_descriptor;

#ifdef __cplusplus
#define CUA__POLICY_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define CUA__POLICY_EXPORT __attribute__((visibility("default")))
#endif

/**
 * The initializer of a #cua_policy_descriptor from named fields: the
 * version, the descriptor's size and every element size come from these
 * headers; the rest are the arguments, as designated initializers
 * (.name = ..., .place = ...). Fields not named are NULL or 0. For a
 * descriptor handed to cua_policy_register():
 * @code
 * static const cua_policy_descriptor mine =
 *     CUA_POLICY_INIT(.name = "mine", .place = mine_place,
 *                     .create = mine_create);
 * @endcode
 */
#define CUA_POLICY_INIT(...)                                                   \
  {                                                                            \
    .abi_major = CUA_POLICY_ABI_MAJOR, .abi_minor = CUA_POLICY_ABI_MINOR,      \
    .size = sizeof(cua_policy_descriptor),                                     \
    .param_spec_size = sizeof(cua_param_spec),                                 \
    .param_value_size = sizeof(cua_param_value),                               \
    .input_size = sizeof(cua_op_input), .dag_op_size = sizeof(cua_dag_op),     \
    .dag_buffer_size = sizeof(cua_dag_buffer), __VA_ARGS__                     \
  }

/** Defines a policy module's entry symbol from named fields (see
 * #CUA_POLICY_INIT): a policy file is its logic plus this one define. */
#define CUA_POLICY_DEFINE(...)                                                 \
  CUA__POLICY_EXPORT const cua_policy_descriptor cua_policy_entry =            \
      CUA_POLICY_INIT(__VA_ARGS__)

/** The named fields of a parameter schema, from an array of
 * #cua_param_spec (its length taken with sizeof). */
#define CUA_POLICY_PARAMS(array_)                                              \
  .params = (array_), .nparams = sizeof(array_) / sizeof((array_)[0])

#endif /* CUASYNC_POLICY_H */
