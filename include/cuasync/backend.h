/**
 * @file cuasync/backend.h
 * @brief The backend-module ABI: where work runs (cuda, host, sim).
 *
 * A backend module exports #CUA_BACKEND_ENTRY_SYMBOL, a
 * #cua_backend_descriptor, and is loaded and checked as a policy is (see
 * policy.h; the same error codes), but for element sizes (a backend
 * declares none), registration and `policy_path` (backends are found on
 * $CUASYNC_MODULE_PATH and in the installed directory only); cuasync-
 * backend(7) says it all. It offers devices, in-order streams,
 * events, memory, and the execution of one op at a time on a stream. The
 * core decides everything else: placement (through the policy), ordering
 * (events), completion (marks), lifetimes.
 *
 * Threads: the core serialises calls that change a stream (launch, mark,
 * event_record, stream_wait_event on that stream); progress(), poll_error()
 * and event_query() may be called from the completion thread at the same
 * time as launches on other threads; wait() runs on the completion thread
 * only.
 *
 * Sequence numbers: the core numbers the ops of each stream 1, 2, 3...
 * (cua_backend_op::seq) and enqueues marks with such numbers. A stream's
 * progress is the value of the last mark it executed. A backend that
 * detects an asynchronous failure of op seq N records it (poll_error())
 * before progress can reach N.
 */
#ifndef CUASYNC_BACKEND_H
#define CUASYNC_BACKEND_H

#include <cuasync/common.h>
#include <cuasync/errors.h>
#include <cuasync/module.h>

#include <pthread.h>

#define CUA_BACKEND_ABI_MAJOR 1
/* 1.1: cua_backend_descriptor::priority, native_record, native_wait.
 * 1.2: cua_backend_host::alloc, free, thread_create.
 * 1.3: capture_begin, capture_end, graph_launch, graph_destroy.
 * 1.4: graph_update_op.
 * 1.5: cua_backend_op::start_ns.
 * 1.6: cua_backend_op::end_ns.
 * 1.7: cua_backend_op::op, cua_backend_host::op_times, flush_times.
 * 1.8: cua_backend_op::est_ns, cua_backend_host::quiescent, clock_ns,
 *      changed.
 * 1.9: capture_deps.
 * 1.10: waited.
 * 1.11: round, cua_backend_op::policy. */
#define CUA_BACKEND_ABI_MINOR 11
#define CUA_BACKEND_ENTRY_SYMBOL "cua_backend_entry"

/** Stream functions run on a host worker when the stream reaches them,
 * not at enqueue time (the host backend). */
#define CUA_BACKEND_HOST_EXEC 0x1u

/** cua_backend_descriptor::priority of a backend that declares none (a
 * descriptor of ABI 1.0, or one that leaves the field zero). */
#define CUA_BACKEND_PRIORITY_DEFAULT 0

typedef struct cua_backend_stream cua_backend_stream; /**< backend-defined */
typedef struct cua_backend_event cua_backend_event;   /**< backend-defined */
typedef struct cua_backend_module cua_backend_module; /**< backend-defined */
typedef struct cua_backend_graph cua_backend_graph;   /**< backend-defined */

/** A message buffer for the failing call's detail. */
typedef struct cua_backend_err {
  char msg[512];
} cua_backend_err;

/**
 * The core's services for a backend. Grows only at the end: a backend
 * reads a field only when @p size covers it (and the pointer is not NULL),
 * and otherwise uses the field's documented default, so that it also runs
 * under a core older than its headers. Every function takes #core as its
 * first argument and may be called from any thread, the backend's own
 * threads included, from create() until destroy() returns.
 */
typedef struct cua_backend_host {
  uint32_t abi_major;
  uint32_t abi_minor;
  size_t size; /**< sizeof(cua_backend_host) of the core */
  void *core;  /**< the first argument of every function below */
  /** Logs a line prefixed with the backend's name. */
  void (*log)(void *core, cua_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
      ;
  /** The runtime's clock, nanoseconds: monotonic, or the backend's own
   * clock_ns() (ABI 1.8) where it has one. */
  uint64_t (*now_ns)(void *core);

  /* ---- ABI 1.2 ---- */

  /**
   * Allocates @p bytes of host memory (at least one byte when @p bytes is
   * 0) aligned to @p align, which is 0 (malloc()'s alignment) or a power of
   * two. Returns NULL when out of memory: the backend then fails the call
   * it was serving (CUA_ERR_NOMEM, CUA_ERR_DEVICE_OOM for device memory)
   * with a message, and stays usable. The memory is released with #free,
   * and only with it. The core's allocations and the backend's thus fail
   * alike under the test suite's fault injection (tests/check_faults.c),
   * which reaches a backend only through this table.
   * Absent: the backend uses malloc() (aligned_alloc()) and free().
   */
  void *(*alloc)(void *core, size_t bytes, size_t align);
  /** Releases memory from #alloc; NULL does nothing. Absent: free(). A
   * backend uses #alloc and #free both or neither. */
  void (*free)(void *core, void *ptr);
  /**
   * Starts a thread, as pthread_create() with the same arguments: returns
   * 0, or an errno code (EAGAIN) with no thread started. The backend joins
   * or detaches it as it would any thread. Absent: pthread_create().
   */
  int (*thread_create)(void *core, pthread_t *thread,
                       const pthread_attr_t *attr, void *(*fn)(void *),
                       void *arg);

  /* ---- ABI 1.7 ---- */

  /**
   * Tells the observers when op @p op (cua_backend_op::op) ran on the
   * device, on CLOCK_MONOTONIC in nanoseconds, measured after the fact
   * (CUPTI's activity records on CUDA): from any thread, at any time
   * until the backend's flush_times() returns; at most once per op.
   */
  void (*op_times)(void *core, uint64_t op, uint64_t start_ns, uint64_t end_ns);

  /* ---- ABI 1.8 ---- */

  /**
   * For a backend with a clock of its own (cua_backend_descriptor::
   * clock_ns, a simulator): 1 when the program waits for the backend and
   * the core has nothing left to hand it, that is, some application
   * thread is blocked in a future wait, cua_runtime_synchronize() or
   * cua_runtime_destroy(), and every command list decided so far has been
   * applied (launched). Time may then move on without changing what the
   * program does; it must not otherwise, or the program's next submission
   * would land at a time that depends on the host's thread scheduling.
   * The core counts a waiter as unblocked from the moment the completion
   * thread fires its future, before that thread next calls wait(). Any
   * thread. Always 0 when the backend has no clock_ns.
   */
  int (*quiescent)(void *core);
} cua_backend_host;

/** One op for a stream, with everything resolved to addresses. */
typedef struct cua_backend_op {
  size_t size;        /**< sizeof(cua_backend_op) of the core */
  cua_op_kind kind;   /**< FUNC, FILL, COPY, AXPY, SPIN, MEMCPY_*, MEMSET,
                           KERNEL (the core does everything else itself) */
  uint64_t seq;       /**< this op's sequence number on its stream */
  void *dst;          /**< destination address (y for AXPY) */
  const void *src;    /**< source address (x for AXPY) */
  size_t bytes;       /**< bytes to copy/set; elements * 4 for float ops */
  int dst_device;     /**< device of dst (MEMCPY_D2D), runtime index */
  int src_device;     /**< device of src (MEMCPY_D2D) */
  float value;        /**< FILL value; AXPY a */
  int byte_value;     /**< MEMSET byte */
  cua_spin_args spin; /**< SPIN duration and blocks */
  /** FUNC: the core's wrapper of the user function; returns 0 or a code,
   * with the message written to err. */
  int (*func)(void *func_ctx, void *native_stream, cua_backend_err *err);
  void *func_ctx;
  /** KERNEL: function from module_function(), geometry, argument pointers
   * (valid until launch returns). */
  void *kernel;
  unsigned grid[3];
  unsigned block[3];
  size_t shared_bytes;
  void **kernel_params;
  /** If not NULL, the backend stores the op's measured duration here
   * before progress() reports seq as reached. */
  uint64_t *duration_ns;
  /** ABI 1.5. If not NULL (only with duration_ns), the backend may store
   * when the op started, on CLOCK_MONOTONIC in nanoseconds (the core's
   * clock), before progress() reports seq as reached; left 0 when it
   * cannot tell (observers then estimate it). */
  uint64_t *start_ns;
  /** ABI 1.6. If not NULL (then duration_ns is NULL but for a model's
   * sample), the backend may store when the op ended, on CLOCK_MONOTONIC in
   * nanoseconds, before progress() reports seq as reached; left 0 when it
   * cannot tell. Observers with [runtime] observer_times = ends: one
   * timestamp per op instead of two. */
  uint64_t *end_ns;
  /** ABI 1.7. Non-zero when observers want the op's device times: a
   * backend that measures them after the fact gives them later through
   * cua_backend_host::op_times() with this id, and then leaves end_ns,
   * start_ns and (unless a model samples the op) duration_ns alone. */
  uint64_t op;
  /** ABI 1.8. How long the core expects the op to run, in nanoseconds:
   * the mean of its performance model, else its cost hint; 0 when it has
   * neither. A simulator runs the op for this long. */
  uint64_t est_ns;
  /** ABI 1.11. The name of the policy module that decided where this op
   * runs, or NULL when no policy did (a placement the program gave with
   * cua_submit_on(), an op of a graph's replay). A simulator that models
   * the host charges the policy's decision before the launch. */
  const char *policy;
} cua_backend_op;

/**
 * The descriptor a backend module exports, as #CUA_BACKEND_ENTRY_SYMBOL.
 *
 * A backend is found by name: `backend = NAME` in [runtime] loads the first
 * NAME.so on the backend search path ($CUASYNC_MODULE_PATH, then the
 * installed backends) whose descriptor is named NAME, and its
 * [backend.NAME] section is checked against #params. The struct grows only
 * at the end: @p size tells the core which fields the module has, and a
 * field beyond it takes its documented default.
 */
/* Required (the loader refuses a descriptor without them, with
 * CUA_ERR_MODULE_INCOMPLETE): create, destroy, device_count, device_info,
 * stream_create, stream_destroy, stream_native, event_create,
 * event_destroy, event_record, stream_wait_event, event_query, mem_alloc,
 * mem_free, launch, mark, progress, poll_error and wait. The others are
 * optional, each with the default its comment gives. */
typedef struct cua_backend_descriptor {
  uint32_t abi_major;
  uint32_t abi_minor;
  size_t size; /**< sizeof(cua_backend_descriptor) of the module */
  const char *name;
  const char *version;
  const char *description;
  uint64_t flags;               /**< CUA_BACKEND_* */
  const cua_param_spec *params; /**< schema of [backend.NAME] */
  size_t nparams;

  /**
   * Opens the backend on the devices with the given backend ordinals
   * (@p ordinals NULL: every device). Returns CUA_ERR_NO_DEVICE with the
   * reason in @p err when it has no usable device (no driver...), so that
   * `backend = auto` can fall back.
   */
  int (*create)(const cua_backend_host *host, const cua_param_value *params,
                const int *ordinals, int nordinals, void **state,
                cua_backend_err *err);
  void (*destroy)(void *state);
  int (*device_count)(void *state);
  int (*device_info)(void *state, int device, cua_device_info *info);
  /** 1 if an op on @p device may access memory of @p peer. */
  int (*can_access)(void *state, int device, int peer);

  int (*stream_create)(void *state, int device, cua_backend_stream **out,
                       cua_backend_err *err);
  void (*stream_destroy)(void *state, cua_backend_stream *s);
  /** The handle given to stream functions (cudaStream_t on CUDA). */
  void *(*stream_native)(void *state, cua_backend_stream *s);

  int (*event_create)(void *state, int device, cua_backend_event **out,
                      cua_backend_err *err);
  void (*event_destroy)(void *state, cua_backend_event *e);
  /** Records @p e at the current end of @p s (re-recording is allowed). */
  int (*event_record)(void *state, cua_backend_event *e, cua_backend_stream *s);
  /** Makes @p s wait for the last recording of @p e. */
  int (*stream_wait_event)(void *state, cua_backend_stream *s,
                           cua_backend_event *e);
  /** 0 if the last recording has completed, CUA_ERR_AGAIN if not. */
  int (*event_query)(void *state, cua_backend_event *e);

  /** Allocates device memory; stream-ordered on @p s when not NULL. */
  int (*mem_alloc)(void *state, int device, cua_backend_stream *s, size_t bytes,
                   void **ptr, cua_backend_err *err);
  /** Frees device memory; stream-ordered on @p s when not NULL. */
  void (*mem_free)(void *state, int device, cua_backend_stream *s, void *ptr);

  /** Enqueues one op on @p s. Synchronous failures (bad launch, invalid
   * argument) return a code with @p err; the op is then not enqueued. */
  int (*launch)(void *state, cua_backend_stream *s, const cua_backend_op *op,
                cua_backend_err *err);
  /** Enqueues a mark: when @p s reaches it, its progress becomes @p value. */
  int (*mark)(void *state, cua_backend_stream *s, uint64_t value);
  /** Reads the progress of @p s into *value. Returns 0, or a negative code
   * (CUA_ERR_DEVICE_LOST) when the stream can never progress again, with the
   * reason in @p err. */
  int (*progress)(void *state, cua_backend_stream *s, uint64_t *value,
                  cua_backend_err *err);
  /** Pops one asynchronous op failure of @p s: returns 1 and fills *seq,
   * *code and @p err, or 0 if there is none. */
  int (*poll_error)(void *state, cua_backend_stream *s, uint64_t *seq,
                    int *code, cua_backend_err *err);

  /**
   * Blocks the completion thread until the progress of some stream may
   * have changed (a mark executed, an error recorded) or @p timeout_ns
   * passed. Returns 0 either way. This is where a backend spends its spin
   * budget, polls flags or events, or sleeps on a condition variable.
   */
  int (*wait)(void *state, uint64_t timeout_ns);
  /** Wakes a thread blocked in wait() (the runtime is closing). */
  void (*wake)(void *state);

  /** Optional (NULL: plain malloc is used). Page-locked host memory, for
   * fast copies. */
  int (*host_alloc)(void *state, size_t bytes, void **ptr,
                    cua_backend_err *err);
  void (*host_free)(void *state, void *ptr);

  /** Optional (NULL: CUA_ERR_NOTSUP). Loads a PTX/cubin image. */
  int (*module_load)(void *state, const void *image, size_t bytes,
                     cua_backend_module **out, cua_backend_err *err);
  void (*module_unload)(void *state, cua_backend_module *m);
  /** Looks up a kernel of a loaded module, usable for KERNEL ops on any
   * device. */
  int (*module_function)(void *state, cua_backend_module *m, const char *name,
                         void **kernel, cua_backend_err *err);

  /* ---- ABI 1.1 ---- */

  /**
   * Where `backend = auto` tries this backend: backends are tried in
   * decreasing priority (equal priorities by name), and the first whose
   * create() succeeds is used; one that fails (CUA_ERR_NO_DEVICE: no
   * driver, no device) is skipped. A negative priority keeps the backend
   * out of `auto` altogether: it opens only by name (test and experimental
   * backends). Absent (a 1.0 descriptor): #CUA_BACKEND_PRIORITY_DEFAULT.
   * The standard backends declare cuda 200, host 100 and sim -1.
   */
  int priority;
  /* Streams the caller owns (cua_op_wait_native(),
   * cua_future_wait_native()). */
  /** Optional (NULL: CUA_ERR_NOTSUP). Records @p e at the current end of
   * @p native, a stream the application owns on runtime device @p device
   * (a cudaStream_t on CUDA; on the host backend, a handle from
   * cua_ctx_stream()). Called by the executor, on any thread. */
  int (*native_record)(void *state, int device, void *native,
                       cua_backend_event *e, cua_backend_err *err);
  /** Optional (NULL: CUA_ERR_NOTSUP). Makes @p native wait, without
   * blocking the host, for the last recording of @p e. */
  int (*native_wait)(void *state, int device, void *native,
                     cua_backend_event *e, cua_backend_err *err);

  /* ---- ABI 1.3: graphs (cua_graph_create()) ----
   * All four or none (NULL): without them the core replays a graph's
   * recorded commands itself. The core captures on streams of a graph's
   * own, which nothing else uses meanwhile: begin on one of them, then
   * the same calls as a replay (event_record() and stream_wait_event()
   * fork the graph's other streams from it and join them back, launch()
   * enqueues each op, with duration_ns NULL; with capture_deps() (1.9),
   * an op's dependencies are set by it instead of by events), then end on
   * the same stream. No mark() is made during a capture. */

  /** Starts capturing the work enqueued on @p s (and on the streams that
   * come to wait for it) instead of running it. */
  int (*capture_begin)(void *state, cua_backend_stream *s,
                       cua_backend_err *err);
  /**
   * Ends the capture begun on @p s. With @p into NULL, makes an executable
   * graph of what was captured, ready to launch (instantiated),
   * in *out. With @p into, updates @p into to the parameters captured (the
   * same structure, other values) and sets *out to @p into; a capture
   * whose structure differs fails with CUA_ERR_STRUCTURE and leaves
   * @p into as it was. Any failure of an enqueue during the capture is
   * reported here too (the capture is then discarded).
   */
  int (*capture_end)(void *state, cua_backend_stream *s,
                     cua_backend_graph *into, cua_backend_graph **out,
                     cua_backend_err *err);
  /** Enqueues one replay of @p g on @p s: later work on @p s runs after
   * all of it. Replays of one graph may be in flight at once. */
  int (*graph_launch)(void *state, cua_backend_graph *g, cua_backend_stream *s,
                      cua_backend_err *err);
  /** Frees @p g; called once no replay of it is in flight. */
  void (*graph_destroy)(void *state, cua_backend_graph *g);

  /* ABI 1.4 (optional; NULL: every update captures the graph again) */

  /**
   * Gives op @p k of @p g (the k-th launch() of the capture that made or
   * last updated @p g, counting launch() calls only) the parameters of
   * @p op, an op of the same kind on the same device, for the replays
   * launched after this call; replays in flight keep theirs. @p s is a
   * stream of that device the backend may use while the call runs (to
   * capture @p op alone, say); nothing else uses it meanwhile. Returns 0,
   * or CUA_ERR_NOTSUP when the op cannot be changed in place (the core
   * then captures the whole graph again and updates it through
   * capture_end()); any other failure too leaves @p g as it was.
   */
  int (*graph_update_op)(void *state, cua_backend_graph *g, size_t k,
                         cua_backend_stream *s, const cua_backend_op *op,
                         cua_backend_err *err);

  /* ABI 1.7 (optional) */

  /** The runtime is closing and every op ran: make every op_times() call
   * still owed now; none may follow once this returns. */
  void (*flush_times)(void *state);

  /* ABI 1.8 (optional) */

  /**
   * The backend's clock, in nanoseconds, never 0: a simulated backend's
   * virtual time. When not NULL, the runtime reads time from it instead of
   * CLOCK_MONOTONIC for everything it reports or decides on (the policy
   * host table's now_ns(), stream loads, durations, observers' records),
   * and the backend fills cua_backend_op::start_ns, end_ns and duration_ns
   * on this clock. Such a backend moves its time on only while
   * cua_backend_host::quiescent() says so, and only from inside wait()
   * calls of the completion thread, one step per call, so that the core
   * sees every step before the next. Any thread.
   */
  uint64_t (*clock_ns)(void *state);
  /**
   * Optional (NULL: the completion thread reads every stream with work in
   * flight on each pass, which costs a machine of thousands of streams
   * more than the ops). Writes to @p out the streams whose progress or
   * errors changed since the last call, each once, as their creation
   * indices (the n-th successful stream_create() of this backend instance
   * is n, from 0; never reused), sets *n, and returns 0; returns 1 when
   * more than @p max changed or it lost count: the core then reads every
   * stream. Called by the completion thread only.
   */
  int (*changed)(void *state, uint32_t *out, size_t max, size_t *n);

  /* ABI 1.9 (optional; with the graph entries of 1.3) */

  /**
   * During a capture (capture_begin() to capture_end(), on the capturing
   * thread): the next launch() on @p s, a stream of the capture, depends
   * on exactly the work of the launches numbered @p launches[0..n) of this
   * capture (launch() calls counted from 0 at capture_begin(), each number
   * smaller than the next launch's; none repeated), and no longer on what
   * came before it on @p s; with @p n 0, on nothing in the graph. After
   * that launch, @p s is where it would be after any launch: the launch
   * after it depends on it. When this entry is there, the core makes a
   * capture's dependencies with it alone: no event_record() or
   * stream_wait_event() between the ops of the capture, only the fork of
   * the graph's streams at its start and their join at its end. So a
   * stream's order costs no edge where another dependency implies it,
   * and the graph has the fewest edges that keep every order. Returns 0;
   * any failure fails the capture (the core ends it and reports the
   * error).
   */
  int (*capture_deps)(void *state, cua_backend_stream *s,
                      const size_t *launches, size_t n, cua_backend_err *err);

  /* ABI 1.10 (optional) */

  /**
   * Whether a program thread is blocked waiting for work of this runtime
   * (cua_future_wait() past its own short spin, cua_runtime_synchronize(),
   * cua_runtime_destroy()): @p waited is 1 when the first such thread
   * starts waiting, 0 when the last one is done. A backend whose wait()
   * sleeps between polls may poll without sleeping while @p waited is 1,
   * as the toolkit's own synchronize spins, so that the end of a long run
   * is seen at once instead of up to a sleep late; when it goes to 1, a
   * wait() asleep should wake up. Returns, for a 1, whether it polls so:
   * then the threads waiting in cua_future_wait() watch their future
   * without sleeping too (a sleeping thread's wake-up costs tens of
   * microseconds on some machines); the return value of a 0 is ignored.
   * Called from any thread, the calls in the order of the changes, never
   * two at once; it must not call back into the runtime.
   */
  int (*waited)(void *state, int waited);

  /* ABI 1.11 (optional; read only from a backend with clock_ns) */

  /**
   * For a backend with a clock of its own (clock_ns, a simulator), which
   * models the host's time: a submission's scheduling round begins. Before
   * its first command the core has built @p nodes nodes (the submission's
   * ops not yet run, after validation and buffer hazards, its virtual nodes
   * included) and, where @p policy plans a whole DAG at once (a policy with
   * submission_begin(), as heft), made that plan. @p policy is the name of
   * the policy module deciding the round, or NULL when the program placed
   * the submission itself (cua_submit_on()). Each op a policy then places
   * carries its name in cua_backend_op::policy. With one submitting
   * thread, every launch(), event_record() and stream_wait_event() until
   * the next call belongs to this round (with several, rounds' commands
   * may interleave). A simulator charges its modelled host thread for the
   * build and the plan before the round's first op can start. Called with
   * the runtime lock held, from the submitting thread; it must not call
   * back into the runtime and must not fail.
   */
  void (*round)(void *state, size_t nodes, const char *policy);
} cua_backend_descriptor;

#ifdef __cplusplus
#define CUA__BACKEND_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define CUA__BACKEND_EXPORT __attribute__((visibility("default")))
#endif

#endif /* CUASYNC_BACKEND_H */
