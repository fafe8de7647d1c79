/*
 * core/internal.h: the runtime's data structures, shared by the files of
 * core/. Nothing here is installed.
 *
 * Locking: one mutex per runtime (rt->lock) guards the scheduling state:
 * streams, nodes, buffer states, policies, submissions. Every call into a
 * policy and every launch happens under it, which is what lets policies be
 * written without locks. User code (host steps, maps, callbacks) always runs
 * with it released. Buffers and futures have their own small locks for what
 * outlives the runtime (reference counts, completion state).
 */
#ifndef CUA_CORE_INTERNAL_H
#define CUA_CORE_INTERNAL_H

#include <cuasync.h>
#include <cuasync/backend.h>
#include <cuasync/policy.h>

#include "conf.h"
#include "loader.h"

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
/* Grows *arr (elements of @p size) to hold at least @p need; 0 or NOMEM.
 * With @p inl not NULL, *arr may point at that inline storage (of *cap
 * elements), which is copied out, never freed. */
int cua__grow_inl(void *arr, size_t *cap, size_t need, size_t size, void *inl);
#define cua__grow(arr, cap, need, size)                                        \
  cua__grow_inl(arr, cap, need, size, NULL)

/* Sets the runtime's last error (rt may be NULL: the thread's create error)
 * and returns @p code. */
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
  size_t nvc;
  struct cua__point *next;
} cua__point;

typedef struct cua__node cua__node;

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
  cua_stream_load load;
} cua__stream;

/* --------------------------------------------------------------- policies */

typedef struct cua__polinst {
  cua_runtime *rt;
  cua__module *mod;
  const cua_policy_descriptor *d;
  void *state;
  cua_param_value *params;
  size_t nparams;
  cua_policy_host host;
  char *name;
  int refs; /* handle/runtime + nodes placed and not completed */
  int closed;
  int nested;                /* opened by another policy, which closes it */
  char log[1024];            /* recent log lines, for create() failures */
  struct cua__polinst *next; /* the runtime's list of instances */
} cua__polinst;

/* ------------------------------------------------------------------ ops */

typedef struct cua__access {
  cua_buffer *buf;
  cua_access_mode mode;
} cua__access;

struct cua_op {
  atomic_int refs;
  int frozen;
  cua_op_kind kind;
  cua_runtime *rt;
  cua_hints hints;
  char *name, *tag;
  cua__access *acc;
  size_t nacc;
  cua_op **inputs; /* combinator inputs, then's (first, next) */
  size_t ninputs;
  /* Kind-specific parameters. */
  cua_stream_fn fn;
  cua_host_fn host_fn;
  cua_map_fn map_fn;
  void *arg;
  void *hptr; /* host pointer of memcpy h2d/d2h */
  size_t dst_off, src_off, bytes;
  float value;
  int byte_value;
  cua_spin_args spin;
  size_t index; /* unzip */
  /* KERNEL */
  cua_module *mod;
  void *kernel;
  unsigned grid[3], block[3];
  size_t shared_bytes;
  unsigned char *argdata; /* packed argument values */
  size_t *argoff;         /* offsets into argdata, per argument */
  int *argbuf;            /* index into acc, or -1 */
  size_t nargs;
  /* SHARED: the node of its one run, once submitted. */
  cua__node *shared_node;
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
 * the common case allocates nothing more than the node. */
#define CUA__INLINE_EDGES 4

typedef struct cua__sub cua__sub;

struct cua__node {
  atomic_int refs;
  cua_op *op; /* dropped once done: see finish_node() */
  char *name; /* the op's hinted name, kept once op is dropped */
  cua_op_kind kind;
  int cls;
  int state;
  uint64_t op_id;
  cua__dep *deps; /* deps_inl, or an allocation once it outgrows it */
  size_t ndeps, capdeps;
  size_t unresolved;
  cua__dependent *dependents;
  size_t ndependents, capdependents;
  cua__sub **watchers; /* submissions waiting for this node */
  size_t nwatchers, capwatchers;
  cua__dep deps_inl[CUA__INLINE_EDGES];
  cua__dependent dependents_inl[CUA__INLINE_EDGES];
  cua__sub *watchers_inl[2];
  uint32_t level;
  cua__node *then_src; /* weak: also a dependency; then_of is its placement */
  /* Placement, once enqueued. */
  cua__stream *stream;
  uint64_t seq;
  cua__point *point; /* weak: the event recorded right after it, if any */
  cua_placement pl;
  cua__polinst *placed_by;
  cua_op_info info; /* scalars kept for completed() */
  uint64_t duration_ns;
  /* Outcome. */
  int code;
  char *msg;
  void *result;
  void **results; /* zip */
  size_t nresults;
  void **ptrs; /* FUNC: resolved buffer addresses */
  cua_stream_ctx *ctx;
  cua__node *inflight_next;
  cua__node *free_next; /* cua__node_release()'s worklist */
  cua__node *ready_next;
  int on_ready;
};

struct cua_stream_ctx {
  cua__node *node;
  cua_runtime *rt;
  void *native;
  char *msg;
};

/* A submission; also the object behind a future. */
struct cua__sub {
  atomic_int refs; /* the user's future + the runtime while in flight */
  cua_runtime *rt;
  uint64_t id;
  cua__polinst *policy;
  int on_stream;
  cua_placement placement;
  cua__node *root;
  cua__node **nodes; /* every node it references (own and shared) */
  size_t nnodes;
  size_t pending;
  /* Completion state, guarded by mu (outlives the runtime). */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_int done;
  int status;
  char *msg;
  cua_future_cb cb;
  void *cb_arg;
  void *cb_future;
  int efd;
  cua__sub *next_done;
  cua__sub *prev, *next; /* runtime's in-flight list */
};

struct cua_future {
  cua__sub *sub;
};

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
  /* Policies. */
  cua__polinst *policy;   /* runtime-wide */
  cua__polinst *fallback; /* single-stream, loaded on first need */
  cua__polinst *policies; /* every instance, for closing */
  char *policy_error;     /* why the fallback was taken, if it was */
  /* Submissions and completion. */
  cua__sub *subs; /* in flight */
  size_t nsubs;
  cua__node *ready_head, *ready_tail; /* host nodes ready to run */
  cua__sub *done_head;                /* submissions to fire */
  pthread_t thread;
  int thread_started;
  pthread_cond_t work; /* wakes the completion thread */
  pthread_cond_t idle; /* signalled when a submission completes */
  int stopping;
  uint64_t next_sub, next_op;
  cua_stats stats;
  /* Buffers and modules still alive (for destroy). */
  pthread_mutex_t reg_lock;
  cua_buffer *buffers;
  cua_module *modules;
  /* The last error. */
  pthread_mutex_t err_lock;
  char err[CUA__ERRLEN];
};

/* runtime.c */
int cua__stream_get(cua_runtime *rt, int device, int index, cua__stream **out);
int cua__ensure_streams(cua_runtime *rt, int device, int n);
int cua__event_get(cua_runtime *rt, int device, cua_backend_event **ev);
void cua__event_put(cua_runtime *rt, int device, cua_backend_event *ev);
void cua__kick(cua_runtime *rt);

/* policyhost.c */
int cua__polinst_open(cua_runtime *rt, const char *name, cua__polinst **out);
void cua__polinst_release(cua__polinst *p);
void cua__polinst_close_all(cua_runtime *rt);

/* op.c */
void cua__op_freeze(cua_op *op);
int cua__op_is_host(const cua_op *op);

/* buffer.c */
void *cua__buffer_addr(const cua_buffer *b);
cua_buffer *cua__buffer_root(cua_buffer *b);
cua__bstate *cua__buffer_state(cua_buffer *b);
int cua__buffer_check(cua_buffer *b, cua_access_mode mode, char *msg,
                      size_t len);
int cua__bstate_add(cua__node ***v, size_t *n, size_t *cap, cua__node *node);
void cua__bstate_clear(cua__bstate *st);
void cua__buffers_detach(cua_runtime *rt);
void cua__modules_detach(cua_runtime *rt);

/* exec.c */
void *cua__completion_thread(void *arg);
void cua__node_release(cua__node *n);

/* future.c */
cua__sub *cua__sub_new(cua_runtime *rt);
void cua__sub_release(cua__sub *s);
void cua__sub_fire(cua__sub *s);

#endif /* CUA_CORE_INTERNAL_H */
