/*
 * core/nodes.h: the scheduler's working structures: nodes and their edges
 * (node.c, graph.c), submissions and futures (future.c, submit.c), rounds
 * and their command lists (commands.c, flush.c, executor.c), launch
 * threads (launcher.c), builds and plans (graph.c, plan.c).
 *
 * Included by core/internal.h only, at its place there (it uses the types
 * declared before it, and the runtime after it uses these); each field
 * says which lock guards it, internal.h's opening the locks' rules.
 */
#ifndef CUA_CORE_NODES_H
#define CUA_CORE_NODES_H

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
 * CUA__EDGE_BLOCK, an array comes from the runtime's edge pool (node.c,
 * cua__edges_grow()); beyond, from the allocator. */
#define CUA__INLINE_EDGES 4
/* The submissions watching a node, inline before an allocation. */
#define CUA__INLINE_WATCHERS 2
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
                    build from a plan sets the build's own: plan.c); 0
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
  cua__sub *watchers_inl[CUA__INLINE_WATCHERS];
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
  /* Made a chunk at a time (plan.c, stages): its successors as the whole
   * build's wiring counts them, plus 1 (0: count its dependents), and
   * whether a device dependent of it comes in a later chunk (hazards.c
   * then records a point after it, as for a consumer not yet placed).
   * Last, so that the lines above stay as they were laid out. */
  uint32_t staged_succ;
  int late_deps;
  /* A then's next part continues this node's stream (graph.c, add_after():
   * the first start to claim it gets it as its then_src; the others of a
   * fan-out are placed freely, so that they may run concurrently). */
  int then_taken;
  /* A then's own node: add_after() gave every start of its next part the
   * edge from its first part, so its next part's end is ordered after its
   * first (add_device_dep() may stand for it by its next part alone). 0
   * when a start was done already or an earlier submission's shared run:
   * then the node is all that waits for its first part. */
  int then_ordered;
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
  int cb_due; /* settled with a callback still to run (completion thread) */
  /* The user destroyed the future (set under mu): a second
   * cua_future_destroy(), or a call given the handle afterwards, is told
   * so while the block has not been reused (future.c). */
  atomic_int fut_gone;
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

/* A launch thread (launcher.c): it applies the commands of the streams
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
  struct cua__round *job;     /* a round to go on deciding (flush.c,
                                 cua__decide_rest()), under mu */
  uint64_t nqueued, taken;    /* lists queued ever, and of them taken in
                                 batches so far (under mu) */
  uint64_t job_after;         /* nqueued when job came: taken after them */
  _Atomic uint64_t applied;   /* lists it applied (tests) */
  char pad_[CUA__CACHE_LINE]; /* what another launch thread watches */
} cua__launcher;

/* A large round whose deciding a launch thread goes on with, while the
 * submitting thread applies the chunks it decides (flush.c,
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
  size_t chunk_at;     /* hand over at this many (commands.c, flush.c) */
  int no_chunks;       /* a hand-over failed: this thread applies the rest */
  int handed;          /* handed a chunk to the launch threads: the rest of
                          the list goes there too (flush.c) */
  int pipelined;       /* hands its chunks to the launch threads as it
                          decides them (launch = pipeline; auto, once a
                          chunk spans several launch threads: commands.c) */
  int chunked;         /* a submission's: applies its own chunks (no launch
                          thread, or it refused one), or under pipeline
                          hands them over (commands.c) */
  size_t left;         /* a submission's: nodes of its build, less the
                          launches decided (about the ops left: relay) */
  cua__relay *relay;   /* decided on a launch thread: its chunks go here */
  struct cua__stage *stage; /* a submission's build made as it is decided
                               (plan.c), until its last node */
  int defer_marks;          /* the completion thread's: marks no stream while a
                               submission applies a chunk (commands.c) */
  int kick;                 /* wake the completion thread at the flush */
  int kick_backend;         /* and the backend's wait (host nodes are ready) */
  uint64_t now;             /* the clock, read by the round's first placement */
  cua__node *waiter; /* the node whose waits are being decided (observers) */
  uint64_t obs_now;  /* observers: the clock right after a completion
                        pass read progress (every op it finishes ended by
                        then), 0 outside such a pass */
} cua__round;

/* A large build from a plan, made a chunk at a time by the submission's
 * round (plan.c, cua__stage_begin()); on the submitting thread's stack. */
typedef struct cua__stage {
  struct cua__build *b;
  cua_op *root;
  size_t n;     /* the plan's nodes, all told */
  size_t next;  /* the plan's next node to make */
  size_t chunk; /* how many the next chunk makes */
} cua__stage;

/* A DAG's build, kept on its root op (plan.c). */
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
  int shared;   /* a shared op's node is in it: no plan (plan.c) */
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
  /* A stage's op ids, taken whole at its start so that its nodes' ids
   * follow each other as a whole build's do, whatever other submissions
   * take between its chunks: the next one to give, 0 for none (plan.c). */
  uint64_t next_id;
  /* Small DAGs (most submissions) need no allocation for the above. */
  cua__node *order_inl[16];
} cua__build;

#endif /* CUA_CORE_NODES_H */
