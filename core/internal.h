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
  atomic_int frozen; /* 0, 1 once frozen, 2 while set_hints writes: op.c */
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
   * by its second build and instantiated by the next ones (graph.c); NULL
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

/* ------------------------------------------------------------- exec graph */

enum cua__node_state {
  CUA__NODE_PENDING = 0, /* waiting for dependencies */
  CUA__NODE_ENQUEUED,    /* device work enqueued on a stream */
  CUA__NODE_RUNNING,     /* host step running */
  CUA__NODE_DONE
};

enum cua__node_class {
  CUA__CLASS_DEVICE = 0, /* enqueued on a stream */
  CUA__CLASS_HOST,       /* host step or map: runs on the completion thread */
  CUA__CLASS_VIRTUAL     /* zip, unzip, then, shared: no work */
};

/* A dependency edge. */
#define CUA__DEP_DATA 0x1u     /* a failure of the producer fails us */
#define CUA__DEP_COMPLETE 0x2u /* we need it complete, not just enqueued */

typedef struct cua__dep {
  cua__node *node;
  unsigned flags;
} cua__dep;

/* A consumer, as its producer sees it. */
typedef struct cua__dependent {
  cua__node *node; /* strong until the producer is done */
  unsigned flags;
  int resolved;
} cua__dependent;

/* Most nodes have a few edges: the first ones live in the node itself, so
 * the common case allocates nothing more than the node. Up to
 * CUA__EDGE_BLOCK, an array comes from the runtime's edge pool (graph.c,
 * cua__edges_grow()); beyond, from the allocator. */
#define CUA__INLINE_EDGES 4
#define CUA__EDGE_BLOCK 16
/* The same for an op's inputs (combinators) past its four inline ones. */
#define CUA__INPUT_BLOCK 16

typedef struct cua__sub cua__sub;

/* What a stream function gets: in its node (no allocation per launch). */
struct cua_stream_ctx {
  cua__node *node;
  cua_runtime *rt;
  void *native;
  char *msg; /* cua_ctx_fail()'s, freed with the node */
};

struct cua__node {
  /* The fields every stage reads or writes for every node (building,
   * wiring, placement, completion) come first, on as few cache lines as
   * they fit: a large submission's passes over its nodes miss the cache
   * on each line they touch (doc/results, thirtieth session). */
  atomic_int refs;
  int cls;
  cua_op_kind kind;
  int state;
  int code;
  uint32_t level;
  unsigned want; /* dependents cua__reserve_hazards() will reserve (a
                    build from a plan sets the build's own: graph.c); 0
                    between calls */
  int queued;
  int scratch;        /* cycle check of its submission's build */
  uint32_t input_gen; /* place.c: listed among an op's inputs already */
  cua_op *op;         /* dropped once done: see finish_node() */
  cua_runtime *rt;    /* held (cua__runtime_hold()): its pool outlives us */
  uint64_t sub_id;    /* the submission that made it */
  uint64_t op_id;
  cua__dep *deps; /* deps_inl, or an allocation once it outgrows it */
  size_t ndeps, capdeps;
  size_t unresolved;
  cua__dependent *dependents;
  size_t ndependents, capdependents;
  cua__node *q_next;   /* in a round's queue */
  cua__sub **watchers; /* submissions waiting for this node */
  size_t nwatchers, capwatchers;
  cua__dep deps_inl[CUA__INLINE_EDGES];
  cua__dependent dependents_inl[CUA__INLINE_EDGES];
  cua__sub *watchers_inl[2];
  /* Placement, once enqueued, what the executor reads at launch, and
   * what placement, the models and dag.c keep per node. */
  cua__stream *stream;
  uint64_t seq;
  cua_placement pl;
  cua__polinst *placed_by;
  cua__point *point;   /* weak: the event recorded right after it, if any */
  uint64_t est_end;    /* expected end (cua_op_input::expected_end_ns) */
  uint64_t est_cost;   /* expected duration, counted in its stream's load */
  cua__node *then_src; /* weak: also a dependency; then_of is its placement */
  void *mfam;          /* its performance model's class (models.c), if any */
  size_t cmd;          /* its LAUNCH command in the round deciding it */
  size_t dag_idx;      /* dag.c: index in its submission's cua_dag */
  int pulled;  /* pull.c: 1 held by a pull-mode policy, 2 given to a stream
                  by pop() (a MARK follows its launch), else 0 */
  int sampled; /* measured alone for the models: timed by the backend
                  (duration_ns), a MARK follows its launch, the executor
                  sets t_exec */
  atomic_int doomed; /* failed: the executor must not launch it */
  int dur_estimated; /* duration_ns is the completion thread's estimate,
                        a share of an interval (complete.c), not the
                        backend's timing */
  uint64_t duration_ns;
  uint64_t t_launch;       /* when decided, if durations are measured */
  _Atomic uint64_t t_exec; /* when the executor launched it, if sampled */
  uint64_t vc_gen;         /* its stream's vc_gen when it was decided */
  cua__node *inflight_next;
  /* Outcome, and what fewer nodes use. */
  char *msg;
  char *name; /* the op's hinted name, kept once op is dropped */
  void *result;
  void **results; /* zip, shared zip, graph launch: cua__node_results() */
  size_t nresults, capresults;
  uint64_t start_ns;  /* when it started, if the backend said (observers) */
  uint64_t end_ns;    /* when it ended, if the backend said (observers) */
  uint64_t obs_dur;   /* its run time for observers only, where duration_ns
                         is not measured (an explicitly placed op) */
  uint64_t obs_end;   /* when it ended as told to observers (a virtual node:
                         its last part's), under rt->lock */
  uint64_t obs_cap;   /* observers: it ended by then at the latest (an op
                         depending on it was seen done first), 0 unknown */
  cua_stream_ctx ctx; /* FUNC: what its stream function gets */
  void **ptrs;        /* FUNC: its buffers' addresses at launch
                         (cua__node_ptrs()) */
  size_t capptrs;
  void *ptrs_inl[4];
  cua__node *free_next; /* cua__node_release()'s worklist */
  cua__node *ready_next;
  int on_ready;
  atomic_int nstates; /* buffer states (writers, readers) that hold it */
  cua_backend_event *ext_event; /* WAIT_NATIVE: recorded on the native
                                   stream, waited for by the node's */
};

/* The handle of a submission, which lives in it. */
struct cua_future {
  cua__sub *sub;
};

/* The largest node list and build order a pooled submission keeps. */
#define CUA__SUB_KEEP_MAX 1024

/* A submission; also the object behind a future. */
struct cua__sub {
  atomic_int refs; /* the user's future + the runtime while in flight */
  cua_runtime *rt;
  uint64_t id;
  cua__polinst *policy;
  int on_stream;
  cua_placement placement;
  cua__polinst *dag_policy; /* dag.c: owed submission_end() (held) */
  size_t dag_unplaced;      /* dag.c: its device ops not yet placed */
  cua__node *root;
  cua__node **nodes;       /* every node it references (own and shared) */
  cua__node *nodes_inl[8]; /* nodes' first storage */
  size_t nnodes, capnodes;
  size_t pending;
  /* Completion state, guarded by mu (outlives the runtime). */
  atomic_int done;
  int status;
  char *msg;
  cua_future_cb cb;
  void *cb_arg;
  void *cb_future;
  int efd;
  int vwaiters; /* threads counted in rt->vblocked while waiting on it */
  int waiters;  /* threads counted in rt->nwaiters while waiting on it */
  cua__sub *next_done;
  cua__sub *prev, *next; /* runtime's in-flight list */
  /* The completion callback's progress (under mu): cua_future_destroy()
   * on another thread waits while it runs (see future.c). */
  int cb_state; /* CUA__CB_* */
  pthread_t cb_thread;
  struct cua_future fut; /* the user's handle: holds a reference */
  /* Last: kept initialised while the submission sits in its runtime's
   * pool (cua__sub_new() clears what comes before). */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* The arrays a submission of more nodes than fit inline grew (its node
   * list, its build order), kept for the next one that reuses this block,
   * so that a runtime in steady state does not call the allocator for
   * them (cua__sub_keep_nodes(), cua__build_free(); freed by
   * cua__sub_fini()): up to CUA__SUB_KEEP_MAX entries each (8 KB), so
   * that the blocks of a pool of 4k submissions keep at most 64 MB; a
   * larger submission grows them again, a few allocations for thousands
   * of nodes. */
  cua__node **kept_nodes, **kept_order;
  size_t kept_nodes_cap, kept_order_cap;
};

enum { CUA__CB_IDLE = 0, CUA__CB_RUNNING, CUA__CB_DONE };

/* ------------------------------------------------------ rounds, commands */

/* A FIFO of nodes, for the queues of a scheduling round. */
typedef struct cua__queue {
  cua__node *head, *tail; /* linked through cua__node::q_next */
} cua__queue;

/* The state of one scheduling round (a submission, or what a completion
 * made ready). */
/* The command list: what a round decided, for the executor to apply with
 * no core lock held (see doc/design.md, "The command list"). */
enum cua__cmd_kind {
  CUA__CMD_WAIT = 1, /* s waits for point (recorded on another stream) */
  CUA__CMD_RECORD,   /* point is recorded at the current end of s */
  CUA__CMD_LAUNCH,   /* node's op is enqueued on s (allocating its lazy
                        buffers first), then point recorded if not NULL */
  CUA__CMD_MARK      /* s's progress becomes value when it gets there */
};

typedef struct cua__cmd {
  int kind;
  cua__stream *s;
  uint64_t ticket; /* its place among s's commands */
  cua__node *node; /* LAUNCH (the stream's in-flight list holds it) */
  cua__point *point;
  union {
    struct {
      uint64_t value; /* MARK: the value; the previous mark value in prev */
      uint64_t prev;
    };
    /* LAUNCH: its node's op, written with the command, for the executor
     * to prefetch without reading the node first (prefetch_launch()) */
    const cua_op *op;
  };
  int superseded; /* MARK: a later MARK of s is applied in the same batch
                     (launch thread), so this one is skipped */
  int keep;       /* MARK of a chunk handed over under launch = pipeline:
                     applied even in a batch (cua__coalesce_marks()) */
} cua__cmd;

typedef struct cua__cmdlist {
  cua__cmd *v;
  size_t n, cap;
  struct cua__cmdlist *box;  /* the runtime's cached holder, if taken */
  struct cua__cmdlist *next; /* in a launch thread's queue, or deferred */
  cua_runtime *defer_rt;     /* deferred (executor.c): the list's runtime */
} cua__cmdlist;

/* A launch thread (executor.c): it applies the commands of the streams
 * whose gidx modulo rt->nlaunchers is its index in rt->launchers, from lists
 * queued in decision order under rt->lock (a list of several launch threads'
 * streams is split when it is queued: cua__launcher_push()). */
#define CUA__LAUNCHERS_MAX 8
typedef struct cua__launcher {
  cua_runtime *rt;
  pthread_t thread;
  pthread_mutex_t mu;         /* guards the queue; a leaf lock */
  pthread_cond_t cv;          /* wakes it asleep */
  cua__cmdlist *head, *tail;  /* queued lists, in decision order */
  int sleeping, stop;         /* under mu */
  atomic_int queued;          /* lists in the queue (and a round to decide),
                                 watched spinning */
  struct cua__round *job;     /* a round to go on deciding (commands.c,
                                 cua__decide_rest()), under mu */
  uint64_t nqueued, taken;    /* lists queued ever, and of them taken in
                                 batches so far (under mu) */
  uint64_t job_after;         /* nqueued when job came: taken after them */
  _Atomic uint64_t applied;   /* lists it applied (tests) */
  char pad_[CUA__CACHE_LINE]; /* what another launch thread watches */
} cua__launcher;

/* A large round whose deciding a launch thread goes on with, while the
 * submitting thread applies the chunks it decides (commands.c,
 * launch = relay). On the submitting thread's stack. */
typedef struct cua__relay {
  pthread_mutex_t mu;        /* guards the queue; a leaf lock */
  pthread_cond_t cv;         /* wakes the submitting thread */
  cua__cmdlist *head, *tail; /* chunks decided, in decision order */
  atomic_int queued;         /* chunks in the queue, watched spinning */
  int done;                  /* the round is decided (under mu) */
  int sleeping;              /* the submitting thread waits on cv */
} cua__relay;

typedef struct cua__round {
  cua_runtime *rt;
  cua__queue place;    /* device nodes ready to be placed */
  cua__queue launch;   /* placed, in order */
  cua__queue settle;   /* failed or virtual nodes ready to finish */
  cua__cmdlist cmds;   /* decided, to execute once rt->lock is released */
  size_t first_launch; /* the round's first command not yet post-passed */
  size_t chunk_len;    /* launches decided since the last hand-over */
  size_t chunk_at;     /* hand over at this many (commands.c) */
  int no_chunks;       /* a hand-over failed: this thread applies the rest */
  int handed;          /* handed a chunk to the launch threads: the rest of
                          the list goes there too (commands.c) */
  int pipelined;       /* hands its chunks to the launch threads as it
                          decides them (launch = pipeline; auto, once a
                          chunk spans several launch threads: commands.c) */
  int chunked;         /* a submission's: applies its own chunks (no launch
                          thread, or it refused one), or under pipeline
                          hands them over (commands.c) */
  size_t left;         /* a submission's: nodes of its build, less the
                          launches decided (about the ops left: relay) */
  cua__relay *relay;   /* decided on a launch thread: its chunks go here */
  int defer_marks;     /* the completion thread's: marks no stream while a
                          submission applies a chunk (commands.c) */
  int kick;            /* wake the completion thread at the flush */
  int kick_backend;    /* and the backend's wait (host nodes are ready) */
  uint64_t now;        /* the clock, read by the round's first placement */
  cua__node *waiter;   /* the node whose waits are being decided (observers) */
  uint64_t obs_now;    /* observers: the clock right after a completion
                          pass read progress (every op it finishes ended by
                          then), 0 outside such a pass */
} cua__round;

/* A DAG's build, kept on its root op (graph.c). */
typedef struct cua__plan cua__plan;
#define CUA__PLAN_NONE ((cua__plan *)(uintptr_t)1)
#define CUA__PLAN_SEEN ((cua__plan *)(uintptr_t)2)
void cua__plan_free(cua__plan *plan);

/* What one submission's build produced (graph.c). */
typedef struct cua__build {
  cua_runtime *rt;
  cua__sub *sub;
  cua__node **order; /* post-order: the sequential reference order */
  size_t n, cap;
  /* op -> node, for this submission: in the ops (cua__build_get()). */
  int backward; /* a then edge runs to an earlier node: look for cycles */
  int shared;   /* a shared op's node is in it: no plan (graph.c) */
  size_t naccs; /* buffer accesses of its nodes' ops, all told: with none,
                   the stages skip their passes over buffers (hazards.c) */
  /* Set by a submission before its build (not by a capture): a build from
   * a plan then counts each node's dependents within the build as it
   * makes it (node->want, the plan's nout, and sets wants), and reserves
   * them too when no op of the plan accesses a buffer:
   * cua__reserve_hazards() then has nothing left to do (wants, no
   * accesses) or only the buffers' part (wants). */
  int reserving;
  int wants;
  /* Small DAGs (most submissions) need no allocation for the above. */
  cua__node *order_inl[16];
} cua__build;

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
  int open_rounds;   /* submissions' rounds applying a chunk (commands.c) */
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
  /* The launch threads ([runtime] launch, launch_threads; executor.c):
   * rounds queue their lists there, under rt->lock so that each queue
   * keeps decision order, and they apply them while the deciding thread
   * goes on, each the commands of its own streams. */
  int launcher_started; /* running */
  int decide_relay;     /* a large round's deciding goes on on a launch
                           thread (launch = relay, or auto on driver backends;
                           commands.c) */
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
  cua__pool list_pool;  /* command lists, arrays kept (commands.c) */
  cua__pool edge_pool;  /* nodes' edge arrays of CUA__EDGE_BLOCK (graph.c) */
  cua__pool input_pool; /* ops' input arrays of CUA__INPUT_BLOCK (op.c) */
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
/* cua__kick() at @p r's flush, once rt->lock is released (commands.c; a
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

/* ------------------------------------------------------ scheduler stages */

/* graph.c: the op DAG to nodes and edges. */
void cua__node_release(cua__node *n);
void cua__node_release_deps(cua__node *n);
void cua__node_release_dependents(cua__node *n);
int cua__add_dep(cua__node *n, cua__node *p, unsigned flags);
int cua__edges_grow(cua_runtime *rt, void *arr, size_t *cap, size_t need,
                    void *inl);
const char *cua__node_name(const cua__node *n);
void cua__fail_node(cua_runtime *rt, cua__node *n, int code, const char *msg);
cua__node *cua__build_get(const cua__build *b, const cua_op *op);
void cua__build_init(cua__build *b, cua_runtime *rt, cua__sub *sub);
void cua__build_free(cua__build *b);
int cua__build_graph(cua__build *b, cua_op *root, size_t *subcap);
int cua__check_cycles(cua__build *b, char *msg, size_t len);
/* Makes room for the p->want dependents counted for @p p (hazards.c) and
 * clears the count. */
static inline int cua__reserve_dependents(cua__node *p) {
  size_t want = p->want;
  p->want = 0;
  if (p->ndependents + want <= p->capdependents)
    return 0;
  return cua__edges_grow(p->rt, &p->dependents, &p->capdependents,
                         p->ndependents + want, p->dependents_inl);
}
/* Never fails: cua__reserve_hazards() made room for every edge. */
void cua__wire(cua_runtime *rt, cua__build *b, cua__round *r);

/* hazards.c: buffer states and cross-stream waits. */
int cua__validate(cua__build *b, char *msg, size_t len);
int cua__reserve_hazards(cua__build *b);
int cua__add_hazards(cua__node *n);
cua__point *cua__record_point(cua__round *r, cua__stream *s);
int cua__wait_for(cua__round *r, cua__stream *t, cua__stream *s, uint64_t seq,
                  cua__node *producer);
int cua__exact_points(cua__round *r);
void cua__point_free(cua_runtime *rt, cua__point *p);
void cua__point_fini(void *p);

/* dag.c: submission_begin() and submission_end(). */
void cua__dag_begin(cua_runtime *rt, cua__sub *sub, cua__node *const *order,
                    size_t n);
void cua__dag_placed(cua__node *n);
void cua__dag_end(cua__sub *sub);

/* place.c: policy calls and their validation. */
void cua__place_one(cua_runtime *rt, cua__node *n, cua__round *r);
void cua__op_devices(const cua_runtime *rt, const cua_op *op, int *data,
                     int *restrict_to);
int cua__each_input(cua_runtime *rt, const cua__node *n,
                    int (*fn)(cua__node *d, void *arg), void *arg);
void cua__op_info(cua_runtime *rt, cua__node *n, cua_op_info *in,
                  int with_inputs);
const cua_op_info *cua__info_restride(const cua_op_info *in, size_t from,
                                      size_t to, cua_op_info *tmp, void **buf);

/* place.c: asks the submission's (or runtime's) policy where @p n runs,
 * then its device's own policy; validated; sets n->pl and n->placed_by
 * (held). 0 or a failure with its message. */
int cua__place_ask(cua_runtime *rt, cua__node *n, cua__sub *sub,
                   cua_op_info *info, char *msg, size_t len);

/* place.c: @p n (placed by cua__place_ask()) counts in its stream's load
 * and its policy hears submitted(); no sequence number, no launch. */
void cua__placed_count(cua_runtime *rt, cua__node *n, const cua_op_info *info,
                       uint64_t now);

/* place.c: a node pop() gave to @p where: validated, placed, queued for
 * launch (or failed and settled); takes over the node's hold on @p p. */
void cua__place_pulled(cua_runtime *rt, cua__node *n, cua__polinst *p,
                       cua_placement where, cua__round *r);

/* pull.c: pull mode (policy ABI 2.1). */
cua__polinst *cua__pull_policy(cua_runtime *rt, const cua__sub *sub);
int cua__pull_keep(cua_runtime *rt, cua__polinst *p, cua__node *n,
                   const cua_op_info *info, char *msg, size_t len);
/* Asks pull-mode policies to fill every stream with room; the nodes
 * placed (0: nothing more this round). */
int cua__pull_fill(cua_runtime *rt, cua__round *r);
void cua__pull_drop(cua__polinst *p);

/* commands.c: rounds and launching. */
void cua__q_push(cua__queue *q, cua__node *n);
cua__node *cua__q_pop(cua__queue *q);
/* Queues a ready device node in the order nodes are placed in: by level,
 * then by op id (commands.c). Submissions' rounds and graph creation
 * (capture.c) both take their nodes from such a queue. */
void cua__place_push(cua__queue *q, cua__node *n);
void cua__settle_push(cua__round *r, cua__node *n);
void cua__ready(cua_runtime *rt, cua__node *n, cua__round *r);
void cua__resolve(cua_runtime *rt, cua__node *p, int complete, cua__round *r);
cua__cmd *cua__cmd_add(cua__round *r, int kind, cua__stream *s);
void cua__round_init(cua_runtime *rt, cua__round *r);
void cua__run_round(cua_runtime *rt, cua__round *r);
void cua__round_flush(cua_runtime *rt, cua__round *r, int relock);
/* Whether a round's list @p cl may be offered to the launch threads
 * (cua__launcher_push() refuses it anyway without one): always but under
 * launch = auto and pipeline, where only a submission's (@p relock 0),
 * while a stream of them comes from one thread or while several threads
 * submit. Under rt->lock. */
int cua__may_hand_over(cua_runtime *rt, const cua__cmdlist *cl, int relock);
void cua__cmdlist_release(cua_runtime *rt, cua__cmdlist *cl);
void cua__cmdlist_fini(void *cl);

/* executor.c: applying a command list, with no core lock held. */
void cua__exec(cua_runtime *rt, cua__cmdlist *cl);
/* Several lists applied in one scope (a relayed round's, commands.c):
 * cua__exec_in() applies each (its rt->executing count taken by the
 * caller), and lists that stream functions among them submit are applied
 * at cua__exec_close(), after them all. cua__exec_depth() says whether
 * this thread is in such a scope (or in cua__exec()). */
void cua__exec_open(void);
void cua__exec_in(cua_runtime *rt, cua__cmdlist *cl);
void cua__exec_close(void);
int cua__exec_depth(void);
/* Queues @p cl (emptied) for the launch threads: whole for the one of its
 * streams, or split between those of several (executor.c); called under
 * rt->lock, for a list whose rt->executing count the caller took. 0, or
 * -1 with @p cl as it was (the caller applies it itself) when there is no
 * launch thread, this thread is applying a list, the list is empty,
 * launches a stream function the backend runs at launch, has no holder,
 * or could not be split for lack of memory. */
int cua__launcher_push(cua_runtime *rt, cua__cmdlist *cl);
/* Hands the rest of round @p r's deciding to the last launch thread,
 * which calls cua__decide_rest() (commands.c) once the lists queued to it
 * before are applied; called under rt->lock, which the caller then
 * releases, with the launch threads started. */
void cua__launcher_decide(cua_runtime *rt, struct cua__round *r);
/* commands.c: a launch thread goes on deciding @p r (cua__launcher_decide()),
 * taking rt->lock. */
void cua__decide_rest(cua_runtime *rt, struct cua__round *r);
/* How many launch threads the commands of @p cl are for (their streams'). */
int cua__launcher_spread(const cua_runtime *rt, const cua__cmdlist *cl);
/* Whether @p cl launches a stream function that the backend runs at launch
 * (user code in the applying thread). A list that launches a stream
 * function, on any backend, is noted for good in rt->user_code_at_launch
 * (marks are batched no more). */
int cua__user_code_at_launch(cua_runtime *rt, const cua__cmdlist *cl);
/* In the lists chained from @p h (a batch a launch thread took), marks
 * every MARK that a later MARK of its stream covers as superseded, and
 * gives the last one the first one's prev. */
void cua__coalesce_marks(cua__cmdlist *h);
/* Starts / stops (after their queues are applied) the launch threads. */
int cua__launcher_start(cua_runtime *rt);
void cua__launcher_stop(cua_runtime *rt);
void cua__exec_wait_recorded(cua_runtime *rt, cua__point *p);
int cua__backend_has_native(const cua_runtime *rt);
/* Whether the backend has graphs (ABI 1.3 capture_begin...graph_destroy). */
int cua__backend_has_graphs(const cua_runtime *rt);
/* Whether it also sets a capture's dependencies itself (ABI 1.9). */
int cua__backend_has_capture_deps(const cua_runtime *rt);
/* @p op (a launched kind but FUNC) as the backend gets it, with the
 * buffers' addresses; @p params and @p ptrs (64 each) hold a kernel's
 * arguments until the launch returns. 0 or a failure in @p msg. */
int cua__backend_op(const cua_op *op, uint64_t seq, cua_backend_op *bo,
                    void **params, void **ptrs, const char *name, char *msg,
                    size_t len);
int cua__in_user_code(void);

/* capture.c, schedule.c, graphbuild.c, replay.c: graphs (see graphs.h). */
void cua__graphs_detach(cua_runtime *rt);
/* Frees the graphs released since the last call (their backend objects
 * too). Called with no core lock held. */
void cua__graphs_reap(cua_runtime *rt);
/* Destroys the capture streams (runtime_free()). */
void cua__capture_streams_free(cua_runtime *rt);
/* Applies one launch of a graph: node @p n of kind GRAPH, on its stream. */
int cua__graph_replay(cua_runtime *rt, cua__node *n, char *msg, size_t len);
/* The graph op @p op dies: drops its graph and parameters. */
void cua__graph_op_gone(cua_op *op);
/* Sets the result of @p n, a launch (GRAPH op @p op) of a graph, as its
 * DAG's would be (replay.c). CUA_ERR_NOMEM for a zip's array. */
int cua__graph_result(cua__node *n, const cua_op *op);
/* graphcache.c: [runtime] graphs = auto. Returns 1 when the submission of
 * @p op was made as a launch of its cached graph (*rc its outcome, *fut its
 * future), 0 when it must be submitted as usual. */
int cua__gcache_submit(cua_runtime *rt, cua_op *op, cua__polinst *pol,
                       cua_future **fut, int *rc);
/* Drops every cached graph (runtime_free(), a policy change). */
void cua__gcache_clear(cua_runtime *rt);
/* cua_buffer_destroy() was called on @p b: drops the cached graphs whose
 * ops use it (or a tile of it). */
void cua__gcache_buffer_gone(cua_runtime *rt, cua_buffer *b);
/* submit.c: undoes a build that will not run (nodes, shared ops' runs). */
void cua__build_undo(cua__build *b, cua__sub *sub);

/* complete.c: progress, finishing nodes, the completion thread. */
void cua__finish_node(cua_runtime *rt, cua__node *n, cua__round *r);

/* ------------------------------------------------------ observe.c */

typedef struct cua__observers cua__observers;
/* Opens the observers the configuration names (none: rt->obs stays NULL);
 * 0, or the loader's or create()'s code with the message set. */
int cua__observers_open(cua_runtime *rt);
/* Hands every record left to the observers, then flushes and frees them;
 * says on standard error how many records were dropped, if any. */
void cua__observers_close(cua_runtime *rt);
/* Copies record @p r (and its strings) for the observers; drops it when
 * the ring (65,536 records) is full. Call only when rt->obs != NULL. */
/* Calls the observers' launch() (those that have one) for @p n: phase 0
 * before its launch, returning which it called; phase 1 after, to those
 * in @p called; on the launching thread, no lock held. Call only when
 * rt->obs_launch. (The first 64 observers of a runtime get launch().) */
uint64_t cua__obs_launch(cua_runtime *rt, const cua__node *n, int phase,
                         void *native, uint64_t called);
/* A CUA_OBS_TIMES record: op @p op's device times, measured after the fact
 * by the backend (cua_backend_host::op_times); any thread. */
void cua__obs_times(cua_runtime *rt, uint64_t op, uint64_t start_ns,
                    uint64_t end_ns);
void cua__obs_emit(cua_runtime *rt, const cua_obs_record *r, const char *name,
                   const char *tag, const char *policy);
/* A CUA_OBS_RECORD or CUA_OBS_MARK record on stream @p s after node @p n
 * (NULL: none known), for observers with CUA_OBSERVER_COMMANDS; call only
 * when rt->obs_commands. */
void cua__obs_command(cua_runtime *rt, int kind, const cua__stream *s,
                      const cua__node *n);
/* Records dropped so far. */
uint64_t cua__observers_drops(const cua_runtime *rt);
void *cua__completion_thread(void *arg);

/* future.c */
cua__sub *cua__sub_new(cua_runtime *rt);
void cua__sub_release(cua__sub *s);
void cua__sub_fire(cua__sub *s);
void cua__sub_fini(void *s);
/* Keeps the node list a submission grew past its inline room in the block
 * (s->kept_nodes), for the next submission made from it; s->nodes is
 * NULL after. */
void cua__sub_keep_nodes(cua__sub *s);
/* Keeps @p arr (a grown node array of @p cap entries) in *@p kept for the
 * block's next submission, or frees it past CUA__SUB_KEEP_MAX; frees what
 * *@p kept held. */
void cua__sub_keep(cua__node ***kept, size_t *kept_cap, cua__node **arr,
                   size_t cap);
/* Gives @p n a zeroed array of @p count results (graph.c). */
int cua__node_results(cua__node *n, size_t count);
/* Gives @p n room for @p count buffer addresses in n->ptrs (graph.c). */
int cua__node_ptrs(cua__node *n, size_t count);

/* Lists @p s among the streams the completion thread reads (under
 * rt->lock; rt->active has room for every stream). */
static inline void cua__stream_activate(cua_runtime *rt, cua__stream *s) {
  s->active = 1;
  rt->active[rt->nactive++] = s;
}

#endif /* CUA_CORE_INTERNAL_H */
