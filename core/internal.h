/*
 * core/internal.h: the runtime's data structures, shared by the files of
 * core/. Nothing here is installed.
 *
 * Locking: one mutex per runtime (rt->lock) guards the scheduling state:
 * streams' decision state, nodes, buffer states, policies, submissions.
 * Every call into a policy happens under it, which is what lets policies
 * be written without locks. Deciding happens under it; doing does not: a
 * round's commands (launches, waits, records, marks, allocations, stream
 * functions on CUDA) are applied by the executor with no core lock held,
 * in per-stream ticket order (atomics, executor.c). User code (stream
 * functions, host steps, maps, callbacks) never runs under a core lock.
 * Buffers and futures have their own small locks for what outlives the
 * runtime (reference counts, completion state). doc/design.md has the
 * whole table.
 */
#ifndef CUA_CORE_INTERNAL_H
#define CUA_CORE_INTERNAL_H

#include <cuasync.h>
#include <cuasync/backend.h>
#include <cuasync/observer.h>
#include <cuasync/policy.h>

#include "conf.h"
#include "loader.h"
#include "models.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#define CUA__ERRLEN 2048

/* ------------------------------------------------------------------ util */

/* Every allocation, thread creation and dlopen of core/ goes through these,
 * so that tests can make the k-th one fail (cua__fault_arm()). */
void *cua__malloc(size_t n);
void *cua__calloc(size_t n, size_t size);
void *cua__realloc(void *p, size_t n);
char *cua__strdup(const char *s);
/* A module operation's failure code @p rc as words: its CUA_ERR_* name,
 * or, for a code outside the list (positive, or unknown), "N, which is
 * not a cuasync error code (@p what returns 0 or a negative CUA_ERR_*)".
 * Into @p buf; returns it. */
const char *cua__module_code(int rc, const char *what, char *buf, size_t len);
/* Writes a failure's message into a caller's buffer (truncated if it must
 * be; nothing when @p err is NULL). */
void cua__put_err(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int cua__pthread_create(pthread_t *t, const pthread_attr_t *attr,
                        void *(*fn)(void *), void *arg);
void *cua__dlopen(const char *path, int flags);
/* dlerror(), or "injected failure" after a failure cua__dlopen() made. */
const char *cua__dlerror(void);

/* Fault injection, for tests: after cua__fault_arm(kind, k), the k-th call
 * of that kind fails (once); k = 0 disarms every kind but keeps counting. */
enum {
  CUA__FAULT_ALLOC = 0,
  CUA__FAULT_THREAD,
  CUA__FAULT_DLOPEN,
  CUA__FAULT_KINDS
};
void cua__fault_arm(int kind, long k);
/* Calls of @p kind since the last cua__fault_arm(), and whether one failed. */
long cua__fault_calls(int kind);
int cua__fault_fired(int kind);
/* Called (on the failing thread) when an injected failure happens. */
void cua__fault_set_hook(void (*hook)(int kind));
/* 1 if this call of @p kind must fail. */
int cua__fault(int kind);
uint64_t cua__now_ns(void);
/* The CLOCK_MONOTONIC time @p timeout_ns from now, as a deadline for
 * pthread_cond_timedwait() (condition variables made with that clock). */
struct timespec cua__deadline(uint64_t timeout_ns);
/* The runtime's time: the backend's clock when it has one (sim), else
 * CLOCK_MONOTONIC. */
#define cua__rt_now(rt)                                                        \
  ((rt)->vclock != NULL ? (rt)->vclock((rt)->bst) : cua__now_ns())
/* A spin-wait's pause: tells the CPU (and a sibling hyperthread) that this
 * thread is only watching memory. */
static inline void cua__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}
/* Grows *arr (elements of @p size) to hold at least @p need; 0 or NOMEM.
 * With @p inl not NULL, *arr may point at that inline storage (of *cap
 * elements), which is copied out, never freed. */
/* Whether $CUASYNC_DEBUG is set (read once). */
int cua__debug(void);
/* A log line of a module's host table (policies, observers): debug lines
 * only with $CUASYNC_DEBUG (not even formatted without it); each line
 * formatted, and, but debug lines unless @p keep_debug, appended to
 * @p keep ("; "-separated, while it fits) for the message of a failing
 * call; errors and warnings, and everything with $CUASYNC_DEBUG, to
 * standard error as "cuasync: KIND NAME: line". */
void cua__module_vlog(char *keep, size_t keeplen, int keep_debug,
                      const char *kind, const char *name, cua_log_level level,
                      const char *fmt, va_list ap);
int cua__grow_slow(void *arr, size_t *cap, size_t need, size_t size, void *inl);
static inline int cua__grow_inl(void *arr, size_t *cap, size_t need,
                                size_t size, void *inl) {
  return need <= *cap ? 0 : cua__grow_slow(arr, cap, need, size, inl);
}
#define cua__grow(arr, cap, need, size)                                        \
  cua__grow_inl(arr, cap, need, size, NULL)

/* pool.c: caches of fixed-size blocks, per runtime, so that the hot path
 * does not call the allocator (see pool.c for the locking). */
typedef struct cua__pool {
  _Atomic(void *) returned; /* given back by any thread (lock-free) */
  pthread_mutex_t mu;       /* guards taken (unless outer); a leaf lock */
  void *taken;              /* popped by whoever holds mu */
  atomic_size_t count;      /* blocks kept in both */
  size_t size, max;
  void (*fini)(void *); /* before a kept block goes back to the allocator */
  int outer;            /* taken only under a lock of the caller's, not mu */
  int prefetch;         /* a get prefetches the lines of the block two gets on
                           (nodes: a large build takes thousands in a row); set
                           after init */
  /* Under mu (or the outer lock): blocks are carved from slabs of 64 while the
   * slabs hold fewer than max blocks; slabs go back to the allocator at drain.
   */
  void *slabs;
  char *carve, *carve_end;
  size_t slab_blocks;
} cua__pool;
void cua__pool_init(cua__pool *p, size_t size, size_t max, void (*fini)(void *),
                    int outer);
/* A block of the pool's size, not zeroed; *fresh says it comes from the
 * allocator (never used before). NULL when out of memory (an allocation
 * for fault injection). */
void *cua__pool_get(cua__pool *p, int *fresh);
void cua__pool_put(cua__pool *p, void *obj);
/* An array of @p size-byte entries (*arr, *cap of them: @p inl, its
 * inline storage, or a block of @p block entries from @p p, or an
 * allocation past that) grown to @p need entries; freed the same way.
 * The common cases (room enough, the inline storage) are inline; the
 * _slow functions are for the rest (free_slow only for an array that
 * is neither NULL nor the inline storage). */
int cua__pool_array_grow_slow(cua__pool *p, size_t block, void *arr,
                              size_t *cap, size_t need, size_t size, void *inl);
void cua__pool_array_free_slow(cua__pool *p, size_t block, void *a, size_t cap);
static inline int cua__pool_array_grow(cua__pool *p, size_t block, void *arr,
                                       size_t *cap, size_t need, size_t size,
                                       void *inl) {
  return need <= *cap
             ? 0
             : cua__pool_array_grow_slow(p, block, arr, cap, need, size, inl);
}
static inline void cua__pool_array_free(cua__pool *p, size_t block, void *a,
                                        size_t cap, void *inl) {
  if (a != inl && a != NULL)
    cua__pool_array_free_slow(p, block, a, cap);
}
/* Whether pools keep blocks (not under AddressSanitizer). */
int cua__pool_keeps(void);
void cua__pool_drain(cua__pool *p);

/* Sets the calling thread's last error message, which cua_runtime_error()
 * returns, and returns @p code. @p rt is not used (the message is per
 * thread, so it may be NULL or a closed runtime); it says which runtime the
 * failure is about, for the reader. */
int cua__fail(const cua_runtime *rt, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int cua__vfail(const cua_runtime *rt, int code, const char *fmt, va_list ap);

/* ---------------------------------------------------------------- streams */

/* A recorded event: "stream s has reached seq", with what s was ordered
 * after at that point (its vector clock), so that one wait can stand for
 * every dependency it covers transitively. */
typedef struct cua__point {
  uint64_t seq;
  cua_backend_event *event;
  uint64_t *vc; /* vc[g]: highest seq of stream g ordered before this point */
  size_t nvc, capvc;
  struct cua__point *next, *prev; /* the stream's points, by seq */
  /* The command that records it: its stream and ticket there. A wait for
   * the point is executed only once that command has been. */
  struct cua__stream *stream;
  uint64_t ticket;
  atomic_int users;  /* WAIT commands decided and not yet executed */
  atomic_int failed; /* the record failed: waiting for it fails */
} cua__point;

typedef struct cua__node cua__node;

/* A cache line: fields written per op by different threads are kept at
 * least this far apart. */
#define CUA__CACHE_LINE 64

/* Streams beyond which event points carry no vector clock (hazards.c). */
#define CUA__VC_STREAMS_MAX 256

/* Streams a pass takes from the backend's changed() (ABI 1.8). */
#define CUA__CHANGED_MAX 256

typedef struct cua__stream {
  cua_backend_stream *bs;
  int device;
  int index;         /* within the device */
  int gidx;          /* within the runtime (vector clock index) */
  uint64_t seq;      /* last sequence number given (at placement) */
  uint64_t launched; /* last sequence number enqueued on the backend */
  uint64_t marked;   /* last mark enqueued */
  uint64_t done;     /* progress observed */
  uint64_t *vc;      /* what this stream's end is ordered after */
  size_t nvc;
  cua__point *points_head, *points_tail;    /* increasing seq */
  cua__node *inflight_head, *inflight_tail; /* enqueued, increasing seq */
  int active; /* listed in rt->active (complete.c) */
  cua_stream_load load;
  uint64_t vc_gen;  /* changes whenever vc does */
  uint64_t t_done;  /* when progress was last seen to move (durations) */
  uint64_t obs_end; /* the end of its last op told to observers */
  /* Commands (commands.c, executor.c): tickets are given under rt->lock in
   * decision order; the executor applies a stream's commands in ticket
   * order, whichever thread holds them. */
  uint64_t tickets; /* given */
  /* What the applying thread writes for every command, a cache line away
   * from what the deciding thread writes for every op (above): when they
   * are two threads (the launch thread), a shared line would move between
   * their cores twice per command. */
  char exec_pad_[CUA__CACHE_LINE];
  _Atomic uint64_t executed; /* applied: the next ticket to run */
  _Atomic uint64_t exec_seq; /* last seq whose launch was applied */
  atomic_int wait_failed;    /* a WAIT failed: fail the next launch */
  struct cua__cmd
      *last_mark;         /* its launch thread only: while it scans a batch */
  unsigned mark_run;      /* and how many marks it skipped in a row */
  uint64_t marks_applied; /* MARKs given to the backend; written by the
                             thread applying the stream's turn (tests) */
  char exec_end_pad_[CUA__CACHE_LINE];
} cua__stream;

/* --------------------------------------------------------------- policies */

typedef struct cua__polinst {
  cua_runtime *rt;
  cua__module *mod;
  const cua_policy_descriptor *d;
  void *state;
  cua_param_value *params;
  size_t nparams;
  void *values; /* params at the policy's param_value_size, if another */
  cua_policy_host host;
  char *name;
  int refs; /* handle/runtime + nodes placed and not completed */
  int closed;
  int nested;                /* opened by another policy, which closes it */
  char log[1024];            /* recent log lines, for create() failures */
  struct cua__polinst *next; /* the runtime's list of instances */
  int user; /* an application handle (cua_policy_open()) not yet closed */
  int dead; /* its runtime closed: only the name is left, for the handle */
  /* Pull mode (pull.c): the ops it holds, by op id (open addressing). */
  struct cua__node **pull;
  size_t pull_n, pull_cap;
  int pull_warned; /* pop() gave an op it did not hold: said once */
} cua__polinst;

/* ------------------------------------------------------------------ ops */

typedef struct cua__access {
  cua_buffer *buf;
  cua_access_mode mode;
} cua__access;

struct cua_op {
  /* What building a submission reads of every op first (64 bytes: one
   * cache line where the block is 64-byte aligned; pool blocks are
   * 16-byte aligned), then its inline inputs and its access list, then
   * its hints: a large submission's build misses the cache on each line
   * it touches (doc/results, thirtieth session). */
  atomic_int refs;
  atomic_int frozen; /* 0, 1 once frozen, 2 while set_hints writes, 3
                        while get_hints reads: op.c */
  cua_op_kind kind;
  /* Its node in the submission being built, when build_sub is that
   * submission's id (graph.c); under rt->lock. */
  uint64_t build_sub;
  cua__node *build_node;
  cua_op **inputs; /* combinator inputs, then's (first, next); inputs_inl
                      or an allocation */
  size_t ninputs;
  /* SHARED: the node of its one run, once submitted. ZIP: the node of its
   * unzips' shared wrapper's run, kept once that wrapper is gone (op.c). */
  cua__node *shared_node;
  cua_runtime *rt;
  cua_op *inputs_inl[4];
  size_t capinputs;
  cua__access *acc; /* acc_inl, or an allocation once it outgrows it */
  size_t nacc, capacc;
  cua_hints hints;
  char *name, *tag;
  /* As a submission's root: the nodes and edges its DAG builds, recorded
   * by its second build and instantiated by the next ones (plan.c); NULL
   * before, CUA__PLAN_SEEN after the first, CUA__PLAN_NONE for a DAG that
   * is built every time. Under rt->lock; freed with the op. */
  struct cua__plan *plan;
  cua__access acc_inl[2];
  /* Kind-specific parameters: one group per family of kinds. */
  union {
    struct {      /* FILL, MEMSET, COPY, AXPY, MEMCPY_*, SPIN */
      void *hptr; /* host pointer of memcpy h2d/d2h */
      size_t dst_off, src_off, bytes;
      float value;
      int byte_value;
      cua_spin_args spin;
    };
    struct { /* FUNC, HOST, MAP; UNZIP */
      cua_stream_fn fn;
      cua_host_fn host_fn;
      cua_map_fn map_fn;
      void *arg;
      size_t index; /* unzip */
    };
    struct { /* KERNEL */
      cua_module *mod;
      void *kernel;
      unsigned grid[3], block[3];
      size_t shared_bytes;
      unsigned char *argdata; /* packed argument values */
      size_t argbytes;        /* bytes of argdata */
      size_t *argoff;         /* offsets into argdata, per argument */
      int *argbuf;            /* index into acc, or -1 */
      size_t nargs;
    };
    struct { /* WAIT_NATIVE: the application's stream and its device */
      void *native;
      int native_device;
    };
    struct { /* GRAPH: the graph and the parameters this launch runs */
      struct cua_graph *graph;      /* held */
      struct cua__gparams *gparams; /* held */
    };
  };
  /* ZIP: the shared wrapper its unzips use (weak, see op.c). */
  cua_op *unzip_shared;
  cua_op *free_next; /* cua_op_destroy()'s worklist */
};

struct cua_module {
  cua_runtime *rt;
  cua_backend_module *bm;
  atomic_int refs;
  struct cua_module *next;
};

/* ---------------------------------------------------------------- buffers */

/* Who touched a buffer last: the ordering state the core keeps per buffer
 * and per tile. */
typedef struct cua__bstate {
  cua__node **writers; /* last write(s): several after unpartition */
  size_t nwriters, capwriters;
  cua__node **readers; /* reads since */
  size_t nreaders, capreaders;
  /* cua__reserve_hazards()'s simulation of the submission; zero between
   * calls. */
  size_t sim_w, sim_r, sim_rmax;
  int sim_on;
  cua__node *sim_writer; /* the submission's last writer (NULL: writers) */
} cua__bstate;

struct cua_buffer {
  atomic_int refs;
  cua_runtime *rt; /* NULL once the runtime is gone */
  int device;
  size_t bytes;
  size_t offset;      /* tiles: offset within the parent */
  cua_buffer *parent; /* tiles: the partitioned buffer (retained) */
  size_t tile_index;  /* tiles: index into parent->tstates */
  unsigned gen;       /* tiles: the partition they belong to */
  void *ptr;          /* root allocation (NULL: lazy, not allocated) */
  int lazy, freed, shared, partitioned;
  unsigned partition_gen; /* root: increases with every partition */
  cua__bstate st;         /* root: ordering state of the whole buffer */
  cua__bstate *tstates;   /* root, while partitioned: one per tile */
  size_t ntiles;
  struct cua_buffer *reg_prev, *reg_next; /* the runtime's registry */
  int planned;     /* root: allocated, or an op decided that allocates it */
  int sim_planned; /* cua__reserve_hazards() scratch, 0 between calls */
};

/* Nodes, submissions, rounds, commands, builds. */
#include "nodes.h"

/* ----------------------------------------------------------------- runtime */

typedef struct cua__device {
  cua__stream **streams;
  int nstreams, capstreams;
  cua__polinst *policy; /* [device.N] policy, or NULL */
  cua_backend_event **free_events;
  size_t nfree_events, capfree_events;
} cua__device;

struct cua_runtime {
  pthread_mutex_t lock;
  cua__config *cfg;
  int ignore_env;
  /* Backend. */
  cua__module *bmod;
  const cua_backend_descriptor *be;
  void *bst;
  cua_param_value *bparams;
  size_t nbparams;
  cua_backend_host bhost;
  int host_exec;
  int ndev;
  cua__device *devs;
  int all_peers;
  /* Streams, all devices, by global index. */
  cua__stream **streams;
  int nstreams, capstreams;
  /* The streams with work in flight or points to free, which the
   * completion thread reads (under rt->lock): not every stream of a
   * machine of thousands of them (the sim backend). */
  cua__stream **active;
  int nactive, capactive;
  /* The backend's changed() (ABI 1.8), or NULL; passes it had none. */
  int (*be_changed)(void *bst, uint32_t *out, size_t max, size_t *n);
  unsigned quiet_passes;
  /* changed() names streams by their backend creation index, which counts
   * every stream_create() of the backend, a graph's and the capture
   * streams too (capture.c, graphbuild.c): every call goes through
   * cua__stream_create(), which numbers them under screate_mu (a leaf), and
   * smap maps an index to the runtime's stream (NULL for the others; under
   * rt->lock, as the streams). */
  pthread_mutex_t screate_mu;
  uint32_t screated;
  cua__stream **smap;
  size_t nsmap, capsmap;
  /* Policies. */
  cua__polinst *policy;             /* runtime-wide */
  cua__polinst *fallback;           /* single-stream, loaded on first need */
  cua__polinst *policies;           /* every instance, for closing */
  char *policy_error;               /* why the fallback was taken, if it was */
  cua__models *models;              /* performance models (models.c), or NULL */
  struct cua__observers *obs;       /* observers (observe.c), or NULL: set at
                                       open, cleared at close, read unlocked */
  struct cua__observers *observers; /* every observer (observe.c), or NULL;
                                       obs is it when one takes records */
  int obs_launch;                   /* some observer has launch() (observe.c) */
  int obs_commands;                 /* RECORD, MARK wanted (observe.c) */
  size_t pull_held;                 /* ops pull-mode policies hold (pull.c) */
  int host_running;                 /* host steps running (complete.c) */
  cua_op_input *inputs;             /* place.c: the op being placed's inputs */
  size_t ninputs, ninputs_cap;      /* */
  uint32_t input_gen; /* place.c: marks nodes listed once per op */
  /* Submissions and completion. */
  cua__sub *subs; /* in flight */
  size_t nsubs;
  size_t nsubs_done; /* of them, done (their futures fire or fired) */
  int open_rounds;   /* submissions' rounds applying a chunk (flush.c) */
  cua__node *ready_head, *ready_tail; /* host nodes ready to run */
  cua__sub *done_head;                /* submissions to fire */
  pthread_t thread;
  int thread_started;
  pthread_cond_t work; /* wakes the completion thread */
  /* Counts the signals of work: the idle completion thread watches it a
   * short while before it sleeps (complete.c); on a line of its own, away
   * from what a round writes for every op (next_op, stats), since a
   * thread spinning on a shared line takes it back at every such write. */
  char work_pad_[CUA__CACHE_LINE];
  atomic_uint work_gen;
  char work_end_pad_[CUA__CACHE_LINE];
  pthread_cond_t idle; /* signalled when a submission completes */
  int stopping;
  int closing;       /* cua_runtime_destroy() began: submissions are refused */
  unsigned fork_gen; /* the process's fork count when made (cua__forked()) */
  uint64_t next_sub, next_op;
  cua_stats stats;
  /* (read for every command applied, by whichever thread applies it; the
   * stats above are written for every op decided) */
  char stats_pad_[CUA__CACHE_LINE];
  /* Buffers and modules still alive (for destroy). */
  pthread_mutex_t reg_lock;
  cua_buffer *buffers;
  cua_module *modules;
  /* The executor's slow path: threads waiting for a stream's turn. */
  pthread_mutex_t exec_mu;
  pthread_cond_t exec_cv;
  atomic_int exec_waiters;
  atomic_int executing; /* command lists being applied (destroy waits) */
  /* A backend with a clock of its own (a simulator, ABI 1.8): the
   * runtime's time, and the application threads blocked waiting for it
   * (future.c, runtime.c), which cua_backend_host::quiescent() reads. */
  uint64_t (*vclock)(void *bst);
  atomic_int vblocked;
  /* Threads polling a pending future (future.c) at virtual time
   * vpoll_clock: they count as waiting only until the clock moves, so a
   * poll lets it move one step. */
  atomic_int vpolls;
  _Atomic uint64_t vpoll_clock;
  /* Its round() (ABI 1.11), told of each submission's round: NULL
   * without vclock. */
  void (*be_round)(void *bst, size_t nodes, const char *policy);
  /* Program threads blocked in a wait (future.c, runtime.c), for the
   * backend's waited() (ABI 1.10), which hears each change between none and
   * some; waiters_mu guards nwaiters and orders the calls. A leaf lock:
   * taken under a submission's mu or alone, never around rt->lock. */
  int (*be_waited)(void *bst, int waited);
  pthread_mutex_t waiters_mu;
  int nwaiters;
  int waiters_spin; /* the last waited(1) returned non-zero */
  /* The launch threads ([runtime] launch, launch_threads; launcher.c):
   * rounds queue their lists there, under rt->lock so that each queue
   * keeps decision order, and they apply them while the deciding thread
   * goes on, each the commands of its own streams. */
  int launcher_started; /* running */
  int decide_relay;     /* a large round's deciding goes on on a launch
                           thread (launch = relay, or auto on driver backends;
                           flush.c) */
  int nlaunchers;       /* how many run: cfg->launch_threads */
  cua__launcher launchers[CUA__LAUNCHERS_MAX];
  atomic_int user_code_at_launch; /* a stream function was launched:
                                     marks are not batched */
  _Atomic uint64_t lists_handed;  /* lists the launch threads applied
                                     (cua_stats.lists_handed_over) */
  atomic_int submitting;          /* threads in cua_submit() (launch = auto and
                                     pipeline) */
  /* Ops outlive their runtime: each holds the struct (not what it owns)
   * from creation until it is freed, and cua_runtime_destroy() sets closed
   * and drops the runtime's own hold; the last one frees the struct (see
   * cua__runtime_hold()). Op functions read closed to refuse ops of a
   * closed runtime, with no registry to keep. */
  atomic_int closed;
  /* Alone on its cache line (padding, not _Alignas: the struct comes from
   * calloc): every node made and freed counts here, from the submitting
   * and the completion threads, while closed is read by every op call. */
  char holds_pad0[64];
  atomic_size_t holds;
  char holds_pad1[64];
  /* Caches of the hot path's objects (pool.c). Ops, nodes and submissions
   * hold the runtime struct, so these stay while any of them lives. */
  cua__pool op_pool, node_pool, sub_pool, point_pool;
  cua__pool list_pool;      /* command lists, arrays kept (commands.c) */
  cua__pool edge_pool;      /* nodes' edge arrays of CUA__EDGE_BLOCK (node.c) */
  cua__pool input_pool;     /* ops' input arrays of CUA__INPUT_BLOCK (op.c) */
  struct cua_graph *graphs; /* alive (capture.c), under reg_lock */
  /* Graphs whose last launch completed, to be freed with no core lock held
   * (replay.c, cua__graphs_reap()); under reg_lock. */
  struct cua_graph *_Atomic graph_reap;
  /* cua_stats' graph counters, counted outside rt->lock. */
  _Atomic uint64_t n_graphs, n_graph_launches, n_graph_updates,
      n_graph_captures, n_graph_evictions, n_graph_replays;
  /* [runtime] graphs = auto: the repeated submissions' graphs
   * (graphcache.c); gcache_mu guards them, a leaf lock. */
  pthread_mutex_t gcache_mu;
  struct cua__gentry *gcache; /* most recently used first */
  size_t ngcache;
  uint64_t gcache_gen; /* one more each time the cache is cleared */
  /* Backends with graphs: the streams captures run on, per device, shared
   * by every graph (graphbuild.c); capture_mu guards them and is held for
   * the whole of a capture, so captures run one at a time. Under it only a
   * fed capture's feed lock (capture.c) is taken. */
  pthread_mutex_t capture_mu;
  cua_backend_stream **cap_streams; /* cap_dev[i] is the device of [i] */
  int *cap_dev;
  size_t ncap, capcap;
  /* The events captures record, per device (ndev stacks), lent to one
   * capture at a time: a graph on a backend with graphs has none of its
   * own. Also under capture_mu. */
  struct cua__evstack {
    cua_backend_event **v;
    size_t n, cap;
  } * cap_events;
};

/* backend.c: opens the configured backend (`auto` by priority) and checks
 * every [backend.NAME] section; on failure the message is
 * cua_runtime_error(NULL). */
int cua__backend_open(cua_runtime *rt);
/* A program thread starts (+1) or stops (-1) waiting, or several stop at
 * once (-n): tells the backend's waited() when the count leaves or reaches
 * zero. Returns, for a start, whether the backend polls without sleeping
 * meanwhile (the waiter may then watch without sleeping too). Takes
 * rt->waiters_mu; any thread, never under rt->lock. */
int cua__waiting(cua_runtime *rt, int delta);

/* runtime.c */
int cua__ensure_streams(cua_runtime *rt, int device, int n);
int cua__event_get(cua_runtime *rt, int device, cua_backend_event **ev);
void cua__event_put(cua_runtime *rt, int device, cua_backend_event *ev);
/* Wakes the completion thread (rt->work_gen, rt->work); any thread, with
 * or without rt->lock. */
void cua__wake_completion(cua_runtime *rt);
/* That, and the backend's wake() when host steps are ready; under
 * rt->lock. */
void cua__kick(cua_runtime *rt);
/* cua__kick() at @p r's flush, once rt->lock is released (flush.c; a
 * flush that releases it, relock 0): the woken thread then does not block
 * on the lock its waker still holds. */
void cua__kick_at_flush(cua_runtime *rt, cua__round *r);
/* Holds the runtime struct for an op / releases it; the last release of a
 * closed runtime frees the struct. */
void cua__runtime_hold(cua_runtime *rt);
void cua__runtime_release(cua_runtime *rt);
/* Whether @p rt was closed: then fails with CUA_ERR_CANCELED and a message
 * naming @p what. */
int cua__runtime_closed(const cua_runtime *rt, const char *what);
/* 1 in a child forked after @p rt was made (runtime.c): its threads are
 * not there, so it cannot run anything. */
int cua__forked(const cua_runtime *rt);
/* The process-wide leaf locks (dl_mu, reg_lock, unzip_lock) are taken
 * before a fork() and let go after it, in parent and child, so that a child
 * forked while another thread held one can still make a runtime. Registers
 * the handlers once (runtime.c); called by what takes those locks first. */
void cua__fork_watch(void);
/* Takes (@p take 1) or lets go (0) one file's process-wide lock, for
 * cua__fork_watch()'s handlers: loader.c's dl_mu, modsearch.c's reg_lock,
 * combine.c's unzip_lock. */
void cua__loader_fork(int take);
void cua__registry_fork(int take);
void cua__unzip_fork(int take);

/* policyhost.c */
int cua__polinst_open(cua_runtime *rt, const char *name, cua__polinst **out);
void cua__polinst_release(cua__polinst *p);
void cua__polinst_close_all(cua_runtime *rt);

/* op.c */
void cua__op_freeze(cua_op *op);
/* Appends an access of @p b (retained) to @p op; 0 or NOMEM. */
int cua__op_add_access(cua_op *op, cua_buffer *b, cua_access_mode mode);
int cua__op_is_host(const cua_op *op);
/* A new op of @p kind (one reference, holding @p rt); 0 or a failure with
 * its message. */
int cua__op_new(cua_op **out, cua_runtime *rt, cua_op_kind kind);
/* Appends @p in (retained and frozen) to @p op's inputs. */
int cua__op_add_input(cua_op *op, cua_op *in);
/* Hands @p op to the caller when @p rc is 0; else frees it. Returns rc. */
int cua__op_finish(cua_op **out, cua_op *op, int rc);

/* combine.c */
void cua__op_wrapper_gone(cua_op *op);

/* buffer.c */
void *cua__buffer_addr(const cua_buffer *b);
cua_buffer *cua__buffer_root(cua_buffer *b);
/* Drops a reference the core holds (an op's); cua_buffer_destroy() is the
 * application's. */
void cua__buffer_release(cua_buffer *b);
cua__bstate *cua__buffer_state(cua_buffer *b);
int cua__buffer_check(cua_buffer *b, cua_access_mode mode, char *msg,
                      size_t len);
int cua__bstate_add(cua__node ***v, size_t *n, size_t *cap, cua__node *node);
void cua__bstate_clear(cua__bstate *st);
void cua__bstate_drop(cua__node *node);
void cua__buffers_detach(cua_runtime *rt);
void cua__modules_detach(cua_runtime *rt);

/* What each stage file offers the others. */
#include "stages.h"

#endif /* CUA_CORE_INTERNAL_H */
