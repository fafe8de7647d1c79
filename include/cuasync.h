/**
 * @file cuasync.h
 * @brief cuasync: lazy graphs of device operations, placed by pluggable
 * scheduling policies, completed through futures.
 *
 * A program opens a runtime (cua_runtime_create()), describes work as a DAG
 * of DeviceOps (the cua_op_*() constructors and combinators; building runs
 * nothing), submits the DAG (cua_submit()) and gets a future. Which device
 * and stream each op runs on is decided by the runtime's scheduling policy,
 * a module loaded as the INI configuration says (cuasync.ini(5)). Whatever
 * the policy decides, the result equals running the ops one at a time in
 * submission order: the core orders every access to a buffer with the
 * fewest cross-stream event waits.
 *
 * Conventions, for every function below:
 * - Functions that can fail return 0 or a negative #cua_errno code. A call
 *   that fails never completes a future or fires a callback later.
 * - Error messages are per thread, as errno is: every call that fails,
 *   whatever it returns (a code, or NULL, 0 or -1 where it returns no
 *   code), stores a message naming the function and the reason in a buffer
 *   of the calling thread, and cua_runtime_error() returns it. A failure on
 *   another thread never replaces it, and a successful call leaves it as it
 *   was: read it right after the call that failed. Not failures, and so
 *   without a message: #CUA_ERR_AGAIN from cua_future_poll() and
 *   cua_future_result() (pending), and a submission's own failure returned
 *   by cua_future_wait() (its message is cua_future_error()).
 * - NULL for a handle or an out-parameter fails with #CUA_ERR_INVAL (or the
 *   value the function documents, with the message set); destroying or
 *   retaining NULL does nothing. doc/misuse.md lists every function's
 *   behaviour for NULL and for handles of a closed runtime, with the code
 *   and message.
 * - Handles are opaque, created by cua_X_create() (or a constructor) into
 *   an out-parameter, and released by cua_X_destroy(); destroying NULL does
 *   nothing. Releasing a handle early is always safe: work in flight keeps
 *   the buffers and ops it uses alive until it completes.
 * - Handles outlive their runtime (see cua_runtime_destroy()): using one
 *   whose runtime is closed fails with #CUA_ERR_CANCELED, never with
 *   undefined behaviour; only the runtime handle itself becomes invalid
 *   (a policy handle stays valid too: cua_policy_open()).
 * - Thread safety: every function may be called from any thread at the same
 *   time, on the same runtime, except that a handle must not be destroyed
 *   while another thread still uses that same handle, and a runtime must
 *   not be destroyed while other threads are still inside calls on it or on
 *   its handles (buffers, ops, graphs, futures, policies): the handles
 *   outlive it, and calls made after cua_runtime_destroy() has returned
 *   fail as said above, but a call racing the destroy may use what it
 *   frees.
 * - fork(): a runtime does not survive it, as the child has none of its
 *   threads. In the child, its submissions, graph launches and waits (for
 *   a future it had pending, cua_runtime_synchronize()) fail with
 *   #CUA_ERR_CANCELED, and cua_runtime_destroy() leaves it as it is; a
 *   runtime made in the child works, also when another thread of the
 *   parent was opening or closing a runtime as it forked.
 */
#ifndef CUASYNC_H
#define CUASYNC_H

#include <cuasync/common.h>
#include <cuasync/errors.h>
#include <cuasync/version.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/** A runtime: backend, devices, stream pools, policies, buffer registry. */
typedef struct cua_runtime cua_runtime;
/** An immutable, reference-counted node of an op graph. */
typedef struct cua_op cua_op;
/** A reference-counted device allocation (or a tile of one). */
typedef struct cua_buffer cua_buffer;
/** The completion handle of one submission. */
typedef struct cua_future cua_future;
/** An instance of a scheduling policy, usable for chosen submissions. */
typedef struct cua_policy cua_policy;
/** A loaded device code module (PTX or cubin), CUDA backend only. */
typedef struct cua_module cua_module;
/** What a stream function receives: its stream, device and buffers. */
typedef struct cua_stream_ctx cua_stream_ctx;

/* ------------------------------------------------------------------------ */
/** @name Version and errors */
/**@{*/

/** The run-time version of the library, as #CUA_VERSION_HEX encodes it. */
CUA_EXTERN unsigned cua_version(void);
/** The run-time version as "MAJOR.MINOR.PATCH" (static storage). */
CUA_EXTERN const char *cua_version_string(void);
/** A one-line description of an error code (static storage); codes that are
 * not cuasync's give "unknown error". */
CUA_EXTERN const char *cua_strerror(int err);
/** The symbolic name of an error code, e.g. "CUA_ERR_CONFIG_SYNTAX"
 * (static storage); "CUA_OK" for 0, "CUA_ERR_UNKNOWN" for foreign codes. */
CUA_EXTERN const char *cua_err_name(int err);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Runtime */
/**@{*/

/** Do not read the environment: $CUASYNC_CONFIG, $CUASYNC_POLICY,
 * $CUASYNC_LAUNCH, $CUASYNC_LAUNCH_THREADS, $CUASYNC_GRAPHS,
 * $CUASYNC_MODELS, $CUASYNC_TRACE and $CUASYNC_MODULE_PATH (every
 * CUASYNC_ variable but $CUASYNC_DEBUG, which is read once per process).
 * $XDG_CACHE_HOME and $HOME are still read for the default of
 * `[runtime] models` (cuasync.ini(5)). */
#define CUA_RUNTIME_IGNORE_ENV 0x1u
/** Do not read the installed $(sysconfdir)/cuasync.ini: with no explicit
 * file or text, use the built-in default configuration. */
#define CUA_RUNTIME_NO_SYSTEM_CONFIG 0x2u

/** Options for cua_runtime_create_ex(). Zero-initialise, then set size. */
typedef struct cua_runtime_options {
  size_t size;             /**< sizeof(cua_runtime_options) */
  const char *config_path; /**< INI file to read, or NULL for the lookup */
  const char *config_text; /**< INI text to parse instead of any file */
  unsigned flags;          /**< CUA_RUNTIME_* flags (others: CUA_ERR_INVAL) */
} cua_runtime_options;

/**
 * Opens a runtime from an INI file.
 *
 * The configuration is looked up in this order: @p config_path if not NULL,
 * then $CUASYNC_CONFIG, then $(sysconfdir)/cuasync.ini; with none of them,
 * the built-in default (backend auto, policy round-robin with 4 streams per
 * device). $CUASYNC_POLICY, if set, overrides the policy name.
 *
 * @param[out] rt  the new runtime, or NULL on failure
 * @return 0, or a CUA_ERR_CONFIG_*, CUA_ERR_MODULE_* or CUA_ERR_NO_DEVICE
 *         code; the message is cua_runtime_error(NULL) on the same thread.
 */
CUA_EXTERN int cua_runtime_create(cua_runtime **rt, const char *config_path);
/** cua_runtime_create() with options (an INI text, flags). */
CUA_EXTERN int cua_runtime_create_ex(cua_runtime **rt,
                                     const cua_runtime_options *opts);
/**
 * Closes a runtime: waits for every submission to complete, fires their
 * callbacks, then frees streams, events, policies, modules and the memory
 * of every buffer. @p rt is invalid afterwards. A submission made once it
 * has begun (by a callback or host step following up its work) fails with
 * #CUA_ERR_CANCELED, "cua_submit: runtime closing"; so does
 * cua_graph_create() ("cua_graph_create: runtime closing"). From a stream
 * function (of any runtime) or a host step, map or callback of @p rt, where it
 * would wait for itself, it does nothing but say so on stderr (and as
 * cua_runtime_error(rt)): destroy the runtime from another thread. The other
 * handles the caller still holds stay valid:
 * - policy handles keep their name, a submission given one fails with
 *   #CUA_ERR_CANCELED, and cua_policy_close() frees them;
 * - futures work as before (wait, poll, result, error, fd, callback);
 * - ops and buffers (tiles too) can be queried (cua_op_get_kind(),
 *   cua_buffer_size(), cua_buffer_device(); cua_buffer_ptr() gives NULL),
 *   retained and destroyed; every other function given one fails with
 *   #CUA_ERR_CANCELED and a message saying its runtime is closed (so
 *   does cua_submit(), to any runtime);
 * - modules can be destroyed; cua_op_kernel() refuses them
 *   (#CUA_ERR_CANCELED).
 */
CUA_EXTERN void cua_runtime_destroy(cua_runtime *rt);
/**
 * The message of the calling thread's last failed cuasync call, or "" if
 * none failed on this thread. Messages are kept per thread, as errno is
 * (see the conventions above): @p rt is not consulted and may be NULL (as
 * after a failed cua_runtime_create()); a failure on another thread, even
 * on the same runtime, never replaces this thread's message, and a call
 * that succeeds leaves it as it was. The string belongs to the thread and
 * stays unchanged until its next failing call. Never NULL.
 */
CUA_EXTERN const char *cua_runtime_error(const cua_runtime *rt);
/** Waits until every submission made so far has completed. Returns 0;
 * failures are reported by each submission's future. From a stream
 * function, whose own submission it would wait for, and from a host step,
 * map or future callback of this runtime (its completion thread, which
 * would have to complete that work): #CUA_ERR_BUSY. */
CUA_EXTERN int cua_runtime_synchronize(cua_runtime *rt);
/** The backend's name, as its descriptor declares it ("cuda", "host"...);
 * NULL for a NULL @p rt. */
CUA_EXTERN const char *cua_runtime_backend(const cua_runtime *rt);
/**
 * The runtime's clock, in nanoseconds: CLOCK_MONOTONIC, or on a backend
 * with a clock of its own (the sim backend) its virtual time, which moves
 * only while the program waits (cua_future_wait(),
 * cua_runtime_synchronize()). Policies, models and observers see the same
 * clock. 0 for a NULL @p rt.
 */
CUA_EXTERN uint64_t cua_runtime_now_ns(const cua_runtime *rt);
/** The configuration file that was read, or NULL for built-in or text. */
CUA_EXTERN const char *cua_runtime_config_path(const cua_runtime *rt);
/** The name of the runtime-wide policy in use. */
CUA_EXTERN const char *cua_runtime_policy(const cua_runtime *rt);
/** Number of devices the runtime uses (after `devices =`); 0 for a NULL
 * @p rt. */
CUA_EXTERN int cua_device_count(const cua_runtime *rt);
/** Describes device @p device (0-based runtime index). */
CUA_EXTERN int cua_device_get_info(const cua_runtime *rt, int device,
                                   cua_device_info *info);

/** Counters of a runtime since it was opened (cua_runtime_stats()). */
typedef struct cua_stats {
  size_t size;                /**< sizeof(cua_stats) as the caller knows it */
  uint64_t submissions;       /**< cua_submit() calls that succeeded */
  uint64_t ops;               /**< ops that ran (device and host; a graph
                                   launch counts its graph's ops) */
  uint64_t ops_failed;        /**< ops that failed or were skipped */
  uint64_t events_recorded;   /**< events recorded for cross-stream waits */
  uint64_t event_waits;       /**< cross-stream waits inserted */
  uint64_t events_created;    /**< events created (the pool grows, then not) */
  uint64_t streams;           /**< streams created, all devices (not a
                                   graph's own streams) */
  uint64_t host_steps;        /**< host steps and maps run */
  uint64_t graphs;            /**< graphs created (cua_graph_create()) */
  uint64_t graph_launches;    /**< cua_graph_launch() calls that succeeded */
  uint64_t graph_updates;     /**< cua_graph_update() calls that succeeded */
  uint64_t graph_captures;    /**< backend graphs built (a capture at
                                   creation, one more after each update) */
  uint64_t graph_replays;     /**< submissions launched as a cached graph
                                   ([runtime] graphs = auto or always; the
                                   submission that captures counts) */
  uint64_t graph_evictions;   /**< cached graphs dropped ([runtime]
                                   graph_cache full, a buffer of theirs
                                   destroyed, or the cua_policy that
                                   placed them closed); a policy change
                                   drops the cache without counting */
  uint64_t observer_drops;    /**< records the observers fell too far behind
                                   to get (cuasync/observer.h) */
  uint64_t lists_handed_over; /**< command lists (a submission's, or a
                                   chunk of one) applied by the launch
                                   threads ([runtime] launch = thread,
                                   auto or pipeline, and launch_threads,
                                   cuasync.ini(5)) instead of the thread
                                   that decided them; a list split
                                   between launch threads counts once
                                   for each */
  uint64_t peer_waits;        /**< of event_waits, those for an event
                                   recorded on another device: the
                                   dependencies a placement puts across
                                   devices (cuasync-bench's
                                   peer_waits_per_kop) */
  uint64_t rounds_relayed;    /**< submissions whose deciding a launch
                                   thread went on with while the
                                   submitting thread launched what it
                                   decided ([runtime] launch = relay,
                                   or auto on a backend whose launches
                                   are driver calls, cuasync.ini(5)) */
  uint64_t builds_staged;     /**< submissions whose nodes were made a
                                   chunk at a time as their round decided
                                   them, instead of all before the first
                                   launch: a DAG of 1,024 ops or more
                                   submitted again, built from its plan,
                                   with no buffer access, whose device
                                   ops form one chain (zipped or not),
                                   under a policy without
                                   submission_begin() */
} cua_stats;
/** Fills @p st (st->size must be set); fields beyond st->size are skipped. */
CUA_EXTERN int cua_runtime_stats(const cua_runtime *rt, cua_stats *st);

/** One entry of a runtime's performance models (cua_runtime_models()):
 * the measured durations of one op class in one size bucket on one
 * device, or of one transfer between two memories. */
typedef struct cua_model_entry {
  size_t size;          /**< sizeof(cua_model_entry) as the library knows */
  int transfer;         /**< 1: a transfer model entry; 0: an op class */
  int device;           /**< the runtime device (transfer: destination, -1
                             for host memory) */
  int from;             /**< transfer: the source (-1: host memory) */
  cua_op_kind kind;     /**< op class: its kind (0 for a transfer) */
  const char *name;     /**< op class: the name hint, or NULL */
  const char *tag;      /**< op class: the tag hint, or NULL */
  unsigned cost_bucket; /**< op class: bits of the cost hint (0: none) */
  uint64_t bytes_min;   /**< the size bucket: bytes hints from ... */
  uint64_t bytes_max;   /**< ... to this, inclusive */
  double samples;       /**< measurements, stored and this run's */
  double samples_new;   /**< of which measured by this runtime */
  uint64_t mean_ns;     /**< mean duration */
  uint64_t stddev_ns;   /**< their spread */
  double mean_bytes;    /**< mean bytes hint of the measured ops */
} cua_model_entry;

/** Visitor of cua_runtime_models(): return 0 to go on, anything else to
 * stop (cua_runtime_models() then returns it). */
typedef int (*cua_model_fn)(const cua_model_entry *e, void *arg);

/**
 * The runtime's performance models ([runtime] models, cuasync.ini(5)):
 * calls @p fn for each entry, for the runtime's backend and devices,
 * with the entries loaded from the model file at creation merged with
 * what the runtime measured since. Runs @p fn on the calling thread with
 * no lock held, over a copy taken at the call (strings valid during the
 * call). @p file, if not NULL, gets the model file's path (valid while
 * @p rt lives), or NULL when models are kept in memory only or off.
 * Returns 0, what @p fn returned to stop, CUA_ERR_INVAL for NULL @p rt
 * or @p fn, CUA_ERR_NOMEM, or CUA_ERR_NOTSUP with models off.
 */
CUA_EXTERN int cua_runtime_models(cua_runtime *rt, cua_model_fn fn, void *arg,
                                  const char **file);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Policies at run time */
/**@{*/

/**
 * Loads a policy instance by name or path, configured from the runtime's
 * [policy.NAME] section (defaults where absent). Usable per submission
 * (cua_submit_options::policy) or runtime-wide (cua_runtime_set_policy()).
 * A handle still open when its runtime is destroyed loses its instance but
 * stays valid: cua_policy_name() answers, a submission given it fails with
 * CUA_ERR_CANCELED, and cua_policy_close() frees it. Given to a submission
 * of another runtime: CUA_ERR_INVAL.
 */
CUA_EXTERN int cua_policy_open(cua_policy **pol, cua_runtime *rt,
                               const char *name);
/**
 * Registers a policy compiled into the program, so that a configuration
 * or cua_policy_open() can name it as it names a module: @p desc is a
 * descriptor written with CUA_POLICY_INIT (cuasync/policy.h) that lives as
 * long as the process (static storage). A registered name is looked up
 * before the module search path, in every runtime of the process, and
 * stays registered until the process exits. Takes effect for policies
 * opened afterwards (a runtime created before may name it too).
 *
 * The descriptor is checked as a module's is (cuasync-policy(7)), but for
 * its pointers, which are the program's: the ABI versions
 * (#CUA_ERR_MODULE_ABI_MAJOR, #CUA_ERR_MODULE_ABI_MINOR), its size and
 * element sizes (#CUA_ERR_MODULE_BAD_SIZE), its name, schema and required
 * operations (#CUA_ERR_MODULE_INCOMPLETE). #CUA_ERR_INVAL: @p desc is NULL,
 * its name has a '/' or ends in ".so" (a configuration could never name
 * it), or a policy of that name is registered already. The message is in
 * cua_runtime_error(NULL).
 */
struct cua_policy_descriptor;
CUA_EXTERN int cua_policy_register(const struct cua_policy_descriptor *desc);
/** Closes a policy handle; submissions in flight that use it finish first. */
CUA_EXTERN void cua_policy_close(cua_policy *pol);
/** The policy's name, from its descriptor. */
CUA_EXTERN const char *cua_policy_name(const cua_policy *pol);
/**
 * Replaces the runtime-wide policy between submissions. Submissions made
 * before keep their placements; later ones use the new policy.
 */
CUA_EXTERN int cua_runtime_set_policy(cua_runtime *rt, const char *name);
/**
 * Gives device @p device its own policy (NULL: none). When a submission's
 * policy places an op on that device, the device policy then picks the
 * stream within it, as a [device.N] section's `policy =` does.
 * #CUA_ERR_BAD_DEVICE for a device the runtime does not have.
 */
CUA_EXTERN int cua_runtime_set_device_policy(cua_runtime *rt, int device,
                                             const char *name);
/** Writes the runtime policy's dump() output (its state) to a stream. */
CUA_EXTERN int cua_runtime_dump_policy(cua_runtime *rt, void *file);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Buffers */
/**@{*/

/** Allocate on first use, stream-ordered, instead of at creation. */
#define CUA_BUFFER_LAZY 0x1u

/**
 * Creates a buffer of @p bytes on @p device. Memory is allocated now, or by
 * the first op that uses it when @p flags has #CUA_BUFFER_LAZY (or an
 * explicit cua_op_alloc()). The caller holds one reference; submitted ops
 * hold their own until they complete, and the memory is freed stream-ordered
 * after the last one. #CUA_ERR_BAD_DEVICE for a device the runtime does
 * not have; #CUA_ERR_INVAL for 0 bytes or unknown flags; a failed
 * allocation gives the backend's code (#CUA_ERR_DEVICE_OOM).
 */
CUA_EXTERN int cua_buffer_create(cua_buffer **buf, cua_runtime *rt, int device,
                                 size_t bytes, unsigned flags);
/** Releases the caller's reference (the memory outlives work in flight). */
CUA_EXTERN void cua_buffer_destroy(cua_buffer *buf);
/** Takes another reference; returns @p buf. */
CUA_EXTERN cua_buffer *cua_buffer_retain(cua_buffer *buf);
/** Size in bytes (0 for NULL). */
CUA_EXTERN size_t cua_buffer_size(const cua_buffer *buf);
/** Runtime device index the memory lives on (#CUA_ERR_INVAL for NULL). */
CUA_EXTERN int cua_buffer_device(const cua_buffer *buf);
/** Device address (NULL while a lazy buffer is not allocated yet, and once
 * its runtime is closed). Reading
 * or writing through it outside an op bypasses the ordering guarantees. */
CUA_EXTERN void *cua_buffer_ptr(const cua_buffer *buf);
/**
 * Makes the buffer read-only: any number of ops may read it at once, and
 * any op that would write it fails at submission with CUA_ERR_READONLY.
 * A tile cannot be shared or unshared on its own (CUA_ERR_INVAL).
 */
CUA_EXTERN int cua_buffer_share(cua_buffer *buf);
/** Makes a shared buffer writable again (later writes are ordered after
 * every read submitted while it was shared). */
CUA_EXTERN int cua_buffer_unshare(cua_buffer *buf);
/**
 * Splits a buffer into @p n disjoint tiles of equal size, a multiple of 4
 * bytes (the size divided by @p n, rounded down to 4 bytes when that is 4
 * or more; the last takes the remainder). Tiles are buffers: different ops
 * may write different tiles concurrently. While partitioned, using the
 * whole buffer in an op fails with CUA_ERR_PARTITIONED. The caller owns
 * the @p n tile handles. A tile cannot be partitioned (CUA_ERR_NOTSUP) nor
 * freed on its own with cua_op_free() (CUA_ERR_INVAL). @p n of 0 is
 * CUA_ERR_INVAL, more tiles than bytes CUA_ERR_SIZE, a buffer partitioned
 * already CUA_ERR_PARTITIONED, a freed one CUA_ERR_FREED.
 */
CUA_EXTERN int cua_buffer_partition(cua_buffer *buf, size_t n,
                                    cua_buffer **tiles);
/** Gives the whole buffer back: later ops on it are ordered after every op
 * on its tiles, and the tiles become stale (using one: CUA_ERR_STALE).
 * CUA_ERR_INVAL for a buffer that is not partitioned. */
CUA_EXTERN int cua_buffer_unpartition(cua_buffer *buf);
/** Allocates page-locked host memory through the backend (plain memory on
 * the host backend), for fast asynchronous copies. */
CUA_EXTERN int cua_host_alloc(cua_runtime *rt, size_t bytes, void **ptr);
/** Frees memory from cua_host_alloc(). */
CUA_EXTERN void cua_host_free(cua_runtime *rt, void *ptr);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Ops: constructors
 * Every constructor writes a new op with one reference held by the caller,
 * retains the buffers and ops it references, and runs nothing. A range
 * outside its buffer, and buffers of different sizes where they must be
 * equal, are #CUA_ERR_SIZE; buffers of different runtimes are
 * #CUA_ERR_INVAL. */
/**@{*/

/** Access modes of a buffer an op declares. */
typedef enum cua_access_mode {
  CUA_READ = 1,
  CUA_WRITE = 2,
  CUA_READ_WRITE = 3
} cua_access_mode;

/** A buffer an op touches and how. */
typedef struct cua_access {
  cua_buffer *buffer;
  cua_access_mode mode;
} cua_access;

/**
 * A stream function: user code that enqueues work on the op's stream.
 *
 * On the CUDA backend it is called on the submitting (or completion)
 * thread with the op's device current, once the core has made its stream
 * wait for its inputs; it launches asynchronous work on
 * cua_ctx_stream() (a cudaStream_t) and returns. On the host backend it is
 * called on the stream's worker thread when the stream reaches it, and does
 * the work itself. Return 0, or a negative code to fail the op (with
 * cua_ctx_fail() for a message).
 */
typedef int (*cua_stream_fn)(cua_stream_ctx *ctx, void *arg);
/** Native stream handle: cudaStream_t on CUDA, an opaque handle on host. */
CUA_EXTERN void *cua_ctx_stream(const cua_stream_ctx *ctx);
/** The op's placement (runtime device index and stream index). */
CUA_EXTERN cua_placement cua_ctx_placement(const cua_stream_ctx *ctx);
/** The backend's name ("cuda", "host"...). */
CUA_EXTERN const char *cua_ctx_backend(const cua_stream_ctx *ctx);
/** Device address of the @p i-th declared access's buffer (tile offset
 * included). */
CUA_EXTERN void *cua_ctx_ptr(const cua_stream_ctx *ctx, size_t i);
/** Sets the op's result value (what cua_future_result() gives). */
CUA_EXTERN void cua_ctx_set_result(cua_stream_ctx *ctx, void *result);
/** Records a message for the failure the function is about to return. */
CUA_EXTERN void cua_ctx_fail(cua_stream_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/**
 * Stream interop: an op that makes the DAG wait for the work already
 * queued on @p native, a stream the application owns (a cudaStream_t of
 * runtime device @p device on CUDA, such as a cuBLAS, cuDNN or PyTorch
 * stream; on the host backend, a handle from cua_ctx_stream(), possibly of
 * another runtime). The handle is not checked: it must be a live stream of
 * that kind until the op has run (on the host backend, a stream of a
 * runtime not yet destroyed); anything else is undefined, as it is for
 * CUDA's own calls. "Already queued" is as of when the op is launched:
 * once its DAG inputs are placed, normally inside cua_submit(). The host
 * is never blocked; the op runs on @p device, and what consumes it runs
 * after that work. Fails the op with CUA_ERR_NOTSUP on a backend without
 * the interop calls.
 */
CUA_EXTERN int cua_op_wait_native(cua_op **op, cua_runtime *rt, int device,
                                  void *native);

/** A user stream function touching @p n buffers (copied; may be 0). */
CUA_EXTERN int cua_op_func(cua_op **op, cua_runtime *rt, cua_stream_fn fn,
                           void *arg, const cua_access *access, size_t n);
/** Built-in kernel: every float32 element of @p dst set to @p value. */
CUA_EXTERN int cua_op_fill(cua_op **op, cua_buffer *dst, float value);
/** Built-in kernel: dst[i] = src[i] for float32 elements (sizes equal). */
CUA_EXTERN int cua_op_copy(cua_op **op, cua_buffer *dst, cua_buffer *src);
/** Built-in kernel: y[i] = a * x[i] + y[i] for float32 (sizes equal). */
CUA_EXTERN int cua_op_axpy(cua_op **op, cua_buffer *y, float a, cua_buffer *x);
/** Built-in calibrated kernel that keeps @p blocks blocks busy for about
 * @p ns nanoseconds (benchmarks). The host backend computes for that long
 * (a loop calibrated once per process; under valgrind it sleeps), and a
 * duration too large for its clock never ends there. */
CUA_EXTERN int cua_op_spin(cua_op **op, cua_runtime *rt, uint64_t ns,
                           uint32_t blocks);
/** Copies @p bytes from host memory @p src into @p dst at @p dst_off.
 * @p src must stay valid until the op completes. */
CUA_EXTERN int cua_op_memcpy_h2d(cua_op **op, cua_buffer *dst, size_t dst_off,
                                 const void *src, size_t bytes);
/** Copies @p bytes of @p src from @p src_off into host memory @p dst;
 * the op's result is @p dst. */
CUA_EXTERN int cua_op_memcpy_d2h(cua_op **op, void *dst, cua_buffer *src,
                                 size_t src_off, size_t bytes);
/** Copies between buffers, on one device or between two (peer access where
 * the backend has it, staged through the host otherwise). @p dst and
 * @p src must be different buffers, whatever the ranges (CUA_ERR_INVAL). */
CUA_EXTERN int cua_op_memcpy_d2d(cua_op **op, cua_buffer *dst, size_t dst_off,
                                 cua_buffer *src, size_t src_off, size_t bytes);
/** Sets @p bytes of @p dst from @p off to the byte @p value. */
CUA_EXTERN int cua_op_memset(cua_op **op, cua_buffer *dst, size_t off,
                             int value, size_t bytes);
/** Allocates a #CUA_BUFFER_LAZY buffer on the op's stream; result: @p buf. */
CUA_EXTERN int cua_op_alloc(cua_op **op, cua_buffer *buf);
/** Frees a buffer's memory stream-ordered after every earlier use; later
 * submissions that touch it fail with CUA_ERR_FREED. A free that fails
 * before it is launched (an op it follows had failed, its placement was
 * refused) frees nothing, and the buffer is usable again; one already
 * queued on its stream frees the memory even when an op before it fails
 * (its future then reports that failure). */
CUA_EXTERN int cua_op_free(cua_op **op, cua_buffer *buf);

/** A host step: runs on the host once its inputs are complete, blocking no
 * stream; its result is what it stores in *result. Non-zero fails it. */
typedef int (*cua_host_fn)(void *arg, void **result);
/** A host step (sequence it with cua_op_then() or cua_op_zip()). Host steps
 * and maps run on the runtime's completion thread: keep them short. */
CUA_EXTERN int cua_op_host(cua_op **op, cua_runtime *rt, cua_host_fn fn,
                           void *arg);
/** Waits for all work submitted to the runtime before it (all streams),
 * work not yet on a stream too (ops waiting for host steps or earlier ops,
 * ops a pull-mode policy holds, host steps); their failures do not fail
 * it. A large chain of an earlier submission that is still being built as
 * it runs (cua_stats::builds_staged) is waited for as far as it is built. */
CUA_EXTERN int cua_op_barrier(cua_op **op, cua_runtime *rt);

/** An argument of cua_op_kernel(): a value, or a buffer's address. */
typedef struct cua_kernel_arg {
  const void *value;    /**< copied at construction; ignored if buffer set */
  size_t size;          /**< bytes of value */
  cua_buffer *buffer;   /**< pass this buffer's address (and declare access) */
  cua_access_mode mode; /**< access mode for @p buffer (0: READ_WRITE) */
} cua_kernel_arg;
/** Loads a PTX or cubin file for kernel ops (CUDA backend; others:
 * #CUA_ERR_NOTSUP). A file that cannot be opened or read, or is empty:
 * #CUA_ERR_INVAL. *@p mod is NULL after any failure. */
CUA_EXTERN int cua_module_load(cua_module **mod, cua_runtime *rt,
                               const char *path);
/** Loads a PTX text or cubin image from memory (copied), as
 * cua_module_load() does a file; 0 @p bytes: #CUA_ERR_INVAL. */
CUA_EXTERN int cua_module_load_data(cua_module **mod, cua_runtime *rt,
                                    const void *image, size_t bytes);
/** Unloads a module once no op uses it. */
CUA_EXTERN void cua_module_destroy(cua_module *mod);
/** Launches @p function of @p mod with the given geometry and arguments. */
CUA_EXTERN int cua_op_kernel(cua_op **op, cua_module *mod, const char *function,
                             const unsigned grid[3], const unsigned block[3],
                             size_t shared_bytes, const cua_kernel_arg *args,
                             size_t nargs);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Ops: combinators and hints */
/**@{*/

/** @p next runs after @p first, on @p first's stream where the policy keeps
 * chains (all standard ones do); the result is @p next's. */
CUA_EXTERN int cua_op_then(cua_op **op, cua_op *first, cua_op *next);
/** Joins @p n ops that may run concurrently; the result is an array of
 * their @p n results (valid while the future lives). */
CUA_EXTERN int cua_op_zip(cua_op **op, cua_op *const *ops, size_t n);
/** Selects result @p index of a zip. The zip is made shared: it runs once
 * for all its unzips, in this or any later submission, also for unzips made
 * after every earlier one was destroyed (once run, the zip keeps that run,
 * and its results, as long as the zip itself lives). */
CUA_EXTERN int cua_op_unzip(cua_op **op, cua_op *zip, size_t index);
/** A host-side transform of @p in's result, no device work. */
typedef int (*cua_map_fn)(void *in, void *arg, void **out);
/** Maps @p in's result through @p fn (run on the completion thread). */
CUA_EXTERN int cua_op_map(cua_op **op, cua_op *in, cua_map_fn fn, void *arg);
/** Runs @p inner exactly once, however many consumers and submissions
 * reference the shared op; later ones depend on that one run. */
CUA_EXTERN int cua_op_shared(cua_op **op, cua_op *inner);

/** Hints a policy may read. Zero-initialise (or CUA_HINTS_INIT), set size. */
typedef struct cua_hints {
  size_t size;      /**< sizeof(cua_hints) */
  const char *name; /**< copied; for errors, dumps and traces */
  const char *tag;  /**< copied; matched by affinity rules */
  int device;       /**< preferred device, -1 for none */
  uint64_t cost_ns; /**< estimated duration, 0 if unknown (a spin op sets
                         it to its duration; a 0 given to
                         cua_op_set_hints() keeps that) */
  uint64_t bytes;   /**< bytes moved, 0 if unknown (fill, copy, axpy,
                         memset and memcpy ops set it to the bytes they
                         touch; a 0 given to cua_op_set_hints() keeps it) */
  uint64_t flops;   /**< floating-point operations, 0 if unknown */
  int priority;     /**< higher runs earlier where the policy cares */
} cua_hints;
#define CUA_HINTS_INIT                                                         \
  { sizeof(cua_hints), NULL, NULL, -1, 0, 0, 0, 0 }
/**
 * Sets an op's hints, but for a 0 bytes or cost_ns where the constructor
 * set one (see cua_hints), which keeps the constructor's; fields past a
 * smaller hints->size take their CUA_HINTS_INIT values, and a size below
 * the 1.0 struct's is CUA_ERR_INVAL. Allowed only until the op is frozen,
 * that is until it is referenced by another op or submitted: then
 * CUA_ERR_BUSY (also while another thread is setting the same op's hints;
 * a cua_op_get_hints() on another thread is waited for, a copy).
 * Referencing an op from another thread at the same time is safe: either
 * the hints are set before it freezes, or this call fails with
 * CUA_ERR_BUSY.
 */
CUA_EXTERN int cua_op_set_hints(cua_op *op, const cua_hints *hints);
/**
 * Copies an op's hints into @p hints, whose size field the caller sets to
 * sizeof(cua_hints) (fields past a smaller size are left alone): what the
 * constructor set (cua_op_spin() hints its duration as cost_ns) and what
 * cua_op_set_hints() set since. To change one hint and keep the others,
 * get, change, set. name and tag point into the op: valid while it lives.
 * Works on a frozen op and after the op's runtime closed. CUA_ERR_INVAL for
 * NULL or a size below the 1.0 struct's.
 */
CUA_EXTERN int cua_op_get_hints(const cua_op *op, cua_hints *hints);
/** The op's kind; 0 (no kind) for NULL. */
CUA_EXTERN cua_op_kind cua_op_get_kind(const cua_op *op);
/** The name of an op kind, as #CUA_OP_KIND_MAP spells it ("fill",
 * "memcpy_d2h"...; static storage); "?" for a value that is not a kind. */
CUA_EXTERN const char *cua_op_kind_name(cua_op_kind kind);
/** Takes another reference; returns @p op. */
CUA_EXTERN cua_op *cua_op_retain(cua_op *op);
/** Releases the caller's reference. */
CUA_EXTERN void cua_op_destroy(cua_op *op);
/**@}*/

/* ------------------------------------------------------------------------ */
/** @name Submission and futures */
/**@{*/

/** Options of cua_submit(). Zero-initialise, set size. */
typedef struct cua_submit_options {
  size_t size;             /**< sizeof(cua_submit_options) */
  cua_policy *policy;      /**< policy for this submission, NULL: runtime's */
  int on_stream;           /**< non-zero: every op goes to @p placement */
  cua_placement placement; /**< the explicit stream when on_stream */
} cua_submit_options;

/**
 * Submits the DAG ending at @p op and returns its future. The ops run as
 * the policy places them; the future completes once every op of the DAG has
 * (one notification per submission). If the call fails, nothing of it ran
 * or will run, and *fut is NULL. The work is enqueued on the device's
 * streams before the call returns, unless a launch thread applies it
 * (`[runtime] launch = thread` or `pipeline`, or the default `auto` while
 * one thread submits faster than its submissions complete or several
 * threads submit at once; cuasync.ini(5)), which enqueues it soon after;
 * cua_future_wait_native() orders a stream of the application's after the
 * submission either way.
 */
CUA_EXTERN int cua_submit(cua_future **fut, cua_runtime *rt, cua_op *op,
                          const cua_submit_options *opts);
/** Submits on an explicit stream (device, stream index). */
CUA_EXTERN int cua_submit_on(cua_future **fut, cua_runtime *rt, cua_op *op,
                             int device, int stream);
/** Submits, waits, stores the result in *result (if not NULL), returns the
 * future's status; a failure's message is then cua_runtime_error(rt).
 * Where cua_future_wait() would be refused (a stream function, a host step,
 * map or callback of @p rt): #CUA_ERR_BUSY, and nothing is submitted. */
CUA_EXTERN int cua_submit_wait(cua_runtime *rt, cua_op *op,
                               const cua_submit_options *opts, void **result);

/** Waits for completion; returns the status (0 or the failure's code).
 * It watches the future for 20 us, then sleeps until woken, unless the
 * backend polls the device without sleeping while a thread waits (CUDA's
 * `waited_spin`, on by default: cuasync.ini(5)): then it watches without
 * sleeping until done, as cudaStreamSynchronize() spins. A future not yet
 * complete cannot be waited for from a stream function (of any runtime:
 * its work may be queued behind the function) nor from a host step, map or
 * callback of its runtime (they run on the completion thread, which
 * completes it):
 * #CUA_ERR_BUSY; poll it, or wait on another thread. */
CUA_EXTERN int cua_future_wait(cua_future *fut);
/** Waits at most @p timeout_ns; CUA_ERR_TIMEDOUT if still pending.
 * Refused with #CUA_ERR_BUSY where cua_future_wait() is. */
CUA_EXTERN int cua_future_wait_timeout(cua_future *fut, uint64_t timeout_ns);
/** CUA_ERR_AGAIN while pending, else the status. Never blocks, but on a
 * backend with a clock of its own (sim), where time moves only while the
 * program waits, a poll of a pending future lets it move one step first
 * (at most 100 ms of real time): a loop of polls goes through virtual time
 * as waits would (cuasync-sim(7)). */
CUA_EXTERN int cua_future_poll(const cua_future *fut);
/** Completion callback: called once, with the status. */
typedef void (*cua_future_cb)(cua_future *fut, int status, void *arg);
/**
 * Registers the callback (one per future: CUA_ERR_BUSY if one is set). It
 * runs once: on the completion thread when the future completes, or at once
 * on the calling thread if it has already.
 *
 * What the callback may do with @p fut: use it throughout (result, error,
 * fd), because cua_future_destroy() of the same future on another thread
 * waits until the callback has returned; and destroy it, as its last use.
 * If the future was destroyed before it completed, the callback still runs,
 * with @p fut NULL. A callback runs on the completion thread, so it must be
 * short, must not wait for other submissions, and must not wait for a lock
 * that a thread destroying its future may hold (that thread waits for it).
 */
CUA_EXTERN int cua_future_on_complete(cua_future *fut, cua_future_cb cb,
                                      void *arg);
/** A file descriptor that becomes readable (and stays so) on completion,
 * for poll/epoll/event loops. Owned by the future: do not close or read.
 * CUA_ERR_BUSY when the process or the system has no descriptor left
 * (EMFILE, ENFILE): a later call may succeed once some are closed. */
CUA_EXTERN int cua_future_fd(cua_future *fut);
/** The root op's result (CUA_ERR_AGAIN pending, or the failure's code). */
CUA_EXTERN int cua_future_result(const cua_future *fut, void **result);
/** The failure's message ("" if none or pending); valid while @p fut is. */
CUA_EXTERN const char *cua_future_error(const cua_future *fut);
/**
 * Stream interop, the other way: makes @p native, a stream the application
 * owns on runtime device @p device (see cua_op_wait_native()), wait for
 * the device work of @p fut's submission, without blocking the host; work
 * the application queues on @p native afterwards runs after it. Returns 0
 * at once if the future is complete; CUA_ERR_AGAIN if some of its ops are
 * not launched yet (host steps, or ops after them, which no stream can
 * wait for): wait for the future then; CUA_ERR_NOTSUP if the backend lacks
 * the interop calls; #CUA_ERR_BAD_DEVICE for a @p device the runtime does
 * not have. Call it from the application's thread, not from a stream
 * function (there: #CUA_ERR_BUSY) or a callback. @p native is not checked
 * (but for NULL: #CUA_ERR_INVAL), as for
 * cua_op_wait_native(); @p fut's runtime may be destroyed before @p native
 * reaches the wait (on the host backend its destruction then waits until
 * it has).
 */
CUA_EXTERN int cua_future_wait_native(cua_future *fut, int device,
                                      void *native);
/** Releases a future; the submission still runs to completion (and a
 * registered callback still fires, with a NULL future). If the future's
 * callback is running on another thread, waits for it to return first;
 * from within the callback itself it returns at once. Once per future: a
 * second call, or another cua_future_*() call given the handle, is
 * refused with #CUA_ERR_INVAL and "the future was destroyed already" (the
 * second destroy also says so on standard error) while the runtime has
 * neither reused the handle's memory for a later submission nor freed it
 * (as cua_runtime_destroy() may); after that, as after free(), the
 * behaviour is undefined. */
CUA_EXTERN void cua_future_destroy(cua_future *fut);
/**@}*/

/**
 * @defgroup graphs Graphs: capture once, replay many times
 *
 * A graph is a DAG placed once and replayed: cua_graph_create() asks the
 * policy where every op of the DAG runs, exactly as a submission would
 * (submission_begin(), place() and submitted() for each op, in the same
 * order), and records the schedule: the policy's streams as chains of
 * ops, the waits the core would insert between them as edges. The policy
 * then hears completed() for every op at once (duration 0): it is not
 * asked again, and does not see the replays.
 *
 * cua_graph_launch() replays the schedule and returns a future, as
 * cua_submit() does. On a backend that has graphs (CUDA: a CUDA graph,
 * captured from the schedule and instantiated once) a replay is
 * one graph launch; on the others (the host backend) the core replays the
 * recorded commands on the graph's own streams, with no placement, no
 * hazard analysis and no policy call. A launch is ordered against other
 * launches and other submissions as one op that writes every buffer the
 * graph's ops write and reads those they read before any of them writes
 * them (a launch whose first op overwrites a buffer that an earlier
 * failure left failed runs); launches of one graph run one after the
 * other (in the order of the cua_graph_launch() calls that made them,
 * whichever thread made them).
 *
 * What can be captured: fill, copy, axpy, spin, memcpys, memset and
 * kernel ops, joined by zip, unzip and then. Anything else (stream
 * functions, host steps, maps, alloc and free ops, barriers, shared ops,
 * waits for native streams) is refused with #CUA_ERR_CAPTURE and a
 * message naming the op. Lazily allocated buffers are allocated when the
 * graph is created (or, on CUDA, at its first launch when an earlier
 * submission's allocation is still in flight).
 *
 * The graph holds its ops and buffers: destroying them (or the graph,
 * while launches are in flight) is safe.
 *
 * With `[runtime] graphs = auto` (cuasync.ini(5), or $CUASYNC_GRAPHS),
 * cua_submit() does this by itself for DAGs submitted again and again. It
 * takes each submission's fingerprint: the DAG's shape, its ops' kinds,
 * buffers and access modes, their hints (what the policy decides from)
 * and, for kernels, the function and which arguments are buffers; not the
 * parameters (values, host pointers, ranges, kernel argument values and
 * geometry). The first submission of a fingerprint runs as usual and is
 * remembered; the second is captured and launched; later ones launch the
 * graph after updating the ops whose parameters changed. The DAG may be
 * made of new op objects each time, as a loop that builds its step anew
 * makes it; a change of shape, of a buffer or of a hint is another
 * fingerprint, captured as a graph of its own. `graphs = always` captures
 * at the first submission. A DAG that cannot be captured is remembered
 * and always submitted as usual, as is one whose result a launch does not
 * give (below). At most `graph_cache` fingerprints are kept (least
 * recently submitted first out); cua_buffer_destroy() drops those whose
 * DAG uses the buffer, cua_policy_close() those its policy placed;
 * changing a policy (cua_runtime_set_policy(),
 * cua_runtime_set_device_policy()) drops them all. cua_stats counts
 * graphs, graph_replays, graph_updates and graph_evictions. Submissions
 * on an explicit stream (cua_submit_on(), cua_submit_options::on_stream)
 * are never cached.
 * @{
 */

/** A captured DAG (cua_graph_create()). */
typedef struct cua_graph cua_graph;

/** Options of cua_graph_create(). Zero-initialise, set size. */
typedef struct cua_graph_options {
  size_t size;        /**< sizeof(cua_graph_options) */
  cua_policy *policy; /**< places the ops; NULL: the runtime's policy */
} cua_graph_options;

/** What cua_graph_get_info() reports. */
typedef struct cua_graph_info {
  size_t size;           /**< sizeof(cua_graph_info) as the caller knows it */
  size_t ops;            /**< device ops captured */
  size_t streams;        /**< streams the policy used: the graph's chains */
  size_t waits;          /**< waits between chains (edges across streams) */
  int native;            /**< 1: replayed as a backend graph (CUDA graph); 0:
                              the core replays the recorded commands */
  uint64_t launches;     /**< cua_graph_launch() calls that succeeded */
  uint64_t updates;      /**< cua_graph_update() calls that succeeded */
  uint64_t captures;     /**< backend graphs built: the first, and one more at
                              the first launch after an update that could not
                              be applied in place (0 when the backend has no
                              graphs) */
  cua_placement anchor;  /**< the stream launches are ordered on: where
                              the policy put the graph's first op */
  uint64_t node_updates; /**< ops changed in the backend graph in place at
                              a launch after an update (a CUDA graph's
                              node parameters), with no new capture */
  uint64_t place_ns;     /**< cua_graph_create()'s time before the backend:
                              building the nodes, placing them (the
                              policy's calls), recording the schedule */
  uint64_t capture_ns;   /**< cua_graph_create()'s backend capture and
                              instantiation after place_ns: all of it, or,
                              where the capture ran beside the placement
                              (a DAG of 64 device ops or more, on a
                              backend that sets a capture's dependencies
                              itself: CUDA), what it took beyond it; 0 on
                              a backend without graphs, or when the
                              capture waits for the first launch */
  size_t edges;          /**< the graph's dependencies: per op, the ops it
                              directly depends on, the fewest that keep
                              the DAG's order and each stream's (an op
                              depends on the previous op of its stream only
                              where no other dependency orders it after
                              that one). A backend that sets a capture's
                              dependencies itself (CUDA) builds exactly
                              these edges; elsewhere the replay follows
                              the streams' order and `waits` */
  uint64_t build_ns;     /**< of place_ns, the part before the policy's
                              first place(): building the DAG's nodes,
                              ordering its ops by their buffers, allocating
                              its buffers, starting the capture thread of
                              a large DAG */
  uint64_t finish_ns;    /**< the backend's end of the last capture: on
                              CUDA, instantiating the graph (part of
                              capture_ns, or of the capture beside the
                              placement); 0 where nothing was captured */
} cua_graph_info;

/**
 * Captures the DAG ending at @p op (see @ref graphs). Nothing runs. On
 * failure *g is NULL and nothing was captured: #CUA_ERR_CAPTURE for an op
 * that cannot be captured (the message names it), the codes of
 * cua_submit() for a DAG it would refuse (a cycle, a freed buffer...), a
 * policy's failure, or a backend's failure to build its graph
 * (#CUA_ERR_BACKEND, #CUA_ERR_DEVICE_OOM) with the backend's message. The
 * lazy buffers of the DAG get their memory here: a device out of memory
 * for one is #CUA_ERR_DEVICE_OOM, "allocating N bytes on device D: " and
 * the backend's message (the buffers allocated before it keep theirs).
 */
CUA_EXTERN int cua_graph_create(cua_graph **g, cua_runtime *rt, cua_op *op,
                                const cua_graph_options *opts);
/**
 * Launches a replay of @p g and returns its future; its ops run with the
 * parameters the graph has at this call (cua_graph_update() after it
 * changes later launches only). The future's result is the one a
 * submission of the DAG would give, for those parameters: a memcpy_d2h
 * root's host pointer, a zip root's array of its parts' results (each a
 * host pointer or NULL), NULL for other ops; a zip root with a zip or an
 * unzip among its parts gives NULL. #CUA_ERR_CANCELED once the runtime is
 * closed (not while cua_runtime_destroy() runs: see the thread-safety rule
 * at the top). A launch is refused, as a submission of its ops would be,
 * when one of its buffers was freed, partitioned, shared read-only for an
 * op that writes it, or is a stale tile (CUA_ERR_FREED, _PARTITIONED,
 * _READONLY, _STALE; the message names the graph's op).
 */
CUA_EXTERN int cua_graph_launch(cua_future **fut, cua_graph *g);
/**
 * Gives the captured op @p captured (an op of the DAG given to
 * cua_graph_create(), always named by that handle) the parameters of
 * @p replacement, for the launches made after this call: the values of
 * fill, axpy and memset, host pointers, offsets and sizes of memcpys, a
 * kernel's argument values and launch geometry, and the buffers
 * themselves (another buffer of the same size on the same device). The
 * graph keeps a reference to @p replacement. #CUA_ERR_INVAL when
 * @p captured is not an op of the graph or @p replacement is of another
 * runtime; #CUA_ERR_STRUCTURE when @p replacement is of another kind, or
 * uses a different number of buffers, other access modes, buffers of
 * other sizes or devices, another kernel or number of kernel arguments,
 * a buffer where the captured op has a value (or the reverse), or a new
 * buffer that another op of the graph uses (their order was captured for
 * the old one), naming what differs; capture a new graph then.
 * #CUA_ERR_CANCELED once the runtime is closing or closed.
 */
CUA_EXTERN int cua_graph_update(cua_graph *g, cua_op *captured,
                                cua_op *replacement);
/** Fills @p info (info->size must be set). */
CUA_EXTERN int cua_graph_get_info(const cua_graph *g, cua_graph_info *info);
/**
 * Where the policy placed @p op when the graph was created: its device and
 * stream (cua_placement, as place() chose them; node and reserved 0). @p op
 * is one of the device ops of the DAG given to cua_graph_create(), named
 * by that handle as for cua_graph_update(). The schedule is the graph's
 * own, so this works after its runtime closed too. For comparing a
 * policy's schedule with another, or writing it down by hand (a raw
 * capture of the same schedule, as cuasync-bench(1) does).
 * #CUA_ERR_INVAL for a NULL argument or when @p op is not one of the
 * graph's device ops.
 */
CUA_EXTERN int cua_graph_placement(const cua_graph *g, const cua_op *op,
                                   cua_placement *where);
/** Releases the graph; launches in flight run to completion. */
CUA_EXTERN void cua_graph_destroy(cua_graph *g);
/**@}*/

#endif /* CUASYNC_H */
