/*
 * core/graphs.h: a captured graph (cua_graph), shared by capture.c (which
 * places a DAG once), schedule.c (which records its schedule as it is
 * placed), graphbuild.c (which captures the schedule into a backend graph,
 * or replays it op by op) and replay.c (which launches the graph, updates
 * it and frees it).
 *
 * The schedule is immutable once captured: the graph's chains (one per
 * stream the policy used, each a stream of the graph's own), its ops in
 * placement order, and for each op the ops of other chains it waits for.
 * What an update changes is the ops whose parameters run (cua__gparams),
 * copied on write so that a launch keeps the parameters it was made with.
 *
 * Locking: g->mu (a leaf lock) guards cur and launch_op; the counters are
 * atomic; the backend graph (bg, bg_version, bg_params) and the chains'
 * sequence numbers are touched only while the anchor stream's turn is held
 * by the executor (launches of one graph are applied one at a time), or
 * before the graph is published; auto_root is the graph cache's, under
 * g->auto_mu (taken before g->mu and rt->lock); the runtime's registry of
 * graphs is guarded by rt->reg_lock.
 */
#ifndef CUA_CORE_GRAPHS_H
#define CUA_CORE_GRAPHS_H

#include "internal.h"

/* One captured device op. */
typedef struct cua__gop {
  cua_op *key;   /* the op as the user names it (held) */
  size_t chain;  /* index into cua_graph::chains */
  size_t *waits; /* ops of other chains it waits for (indices into ops) */
  size_t nwaits;
  long event; /* index into cua_graph::events recorded after it, or -1 */
  /* A capture with explicit dependencies (backend capture_deps()): the
   * chain's previous op (index into ops) when the op depends on it
   * directly; -1 when one of its waits orders it after that op already,
   * or it is the chain's first. */
  long prev;
} cua__gop;

/* One chain: the ops the policy put on one stream, in order. */
typedef struct cua__gchain {
  cua_placement pl;       /* where the policy put them */
  cua_backend_stream *bs; /* the graph's own stream on pl.device */
  uint64_t seq;           /* ops enqueued on bs (replays by the core) */
  long end_event;         /* index into events: joins it to the anchor */
} cua__gchain;

/* The parameters a launch runs: per op, the op whose parameters run. */
typedef struct cua__gparams {
  atomic_int refs;
  uint64_t version; /* 1 at capture, one more per update */
  cua_op **ops;     /* held */
  size_t n;
} cua__gparams;

struct cua_graph {
  atomic_int refs; /* the user's handle, each launch op */
  cua_runtime *rt; /* held (cua__runtime_hold()) */
  cua__gop *ops;   /* in placement order */
  size_t nops;
  size_t *wait_store; /* every op's waits, one allocation */
  cua__gchain *chains;
  size_t nchains;
  size_t nwaits;
  /* The edges of the graph with explicit dependencies: per op, its waits
   * and its prev; the fewest that keep the DAG's and the streams' orders
   * (see schedule.c). */
  size_t nedges;
  cua_backend_event **events; /* [0]: the fork, recorded on the anchor */
  int *event_dev;
  size_t nevents;
  cua_placement anchor; /* chain 0's placement: launches are ordered there */
  /* key -> index into ops (open addressing, a power of two). */
  size_t *index;
  size_t index_cap;
  pthread_mutex_t mu;
  /* Held by the graph cache (graphcache.c) across one submission's
   * updates and launch; taken before mu and rt->lock. */
  pthread_mutex_t auto_mu;
  /* Graph cache: the DAG (its root, held) whose parameters cur has, under
   * auto_mu; a submission of that very root launches with no check. */
  cua_op *auto_root;
  /* Graph cache: per op, its position in the canonical order of the DAGs
   * of the graph's fingerprint; set before the graph is cached, then
   * read-only. */
  size_t *auto_pos;
  cua__gparams *cur; /* what the next launch runs */
  cua_op *launch_op; /* a GRAPH op for cur, made by the next launch */
  /* The result a launch's future gives, as its DAG's would: res[i] the
   * op (index into ops) whose host pointer is part i, a memcpy_d2h, or -1
   * for none; one part, or with res_zip the nres parts of a zip root.
   * res_ok is 0 when the root's result has another form (a zip in a
   * zip, an unzip): its launches' futures then give none. */
  long *res;
  size_t nres;
  int res_zip, res_ok;
  int native; /* the backend has graphs */
  cua_backend_graph *bg;
  uint64_t bg_version;     /* the parameters' version bg has */
  cua__gparams *bg_params; /* and those parameters (held) */
  atomic_uint_fast64_t launches, updates, captures, node_updates;
  uint64_t place_ns, capture_ns;  /* cua_graph_create(): see cua_graph_info */
  uint64_t build_ns;              /* of place_ns, before the placement */
  atomic_uint_fast64_t finish_ns; /* the last capture's end (instantiation) */
  int dead; /* the runtime closed: its backend objects are gone */
  /* cua_graph_destroy() ran (under mu): a launch still made by a holder of
   * another reference (the graph cache's, for a launch under way) makes
   * its own launch op and keeps none, since a kept one would hold the
   * graph for ever. */
  int destroyed;
  struct cua_graph *reg_prev, *reg_next; /* rt->graphs, under reg_lock */
};

/* The name of an op in messages: its hint, else its kind's. */
static inline const char *cua__gop_name(const cua_op *op) {
  return op->hints.name ? op->hints.name : cua_op_kind_name(op->kind);
}

/* A slot for pointer @p p in an open-addressed table of @p cap (a power
 * of two) entries: the graph's index of ops, the capture's buffers. */
static inline size_t cua__ptr_hash(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

/* The schedule as cua__rec_op() makes it (schedule.c), op by op in placement
 * order. Each chain has a vector clock: covered[ch][x] is the last position of
 * chain x known complete at the current end of chain ch (-1: none). With the
 * clock each op had (snap, while it fits), a wait for a producer that an
 * earlier wait already orders after (through a third chain too) is not
 * recorded: fewer edges, cheaper to instantiate and to replay. The same
 * clocks tell which ops a wait orders after their chain's previous op: a
 * backend that sets a capture's dependencies itself (capture_deps())
 * gives those no edge to it, and its graph has the transitive reduction
 * of the DAG's order and the streams'. A chain placed round-robin over
 * four streams is then one edge per op, as on one stream. The clocks'
 * stride (capc) grows with the chains. */
typedef struct cua__recorder {
  size_t n;                      /* device ops */
  size_t *chain_of, *pos, *gidx; /* per device node: its chain, its place
                                    there, its index in g->ops */
  size_t *chain_len;             /* per chain */
  size_t *chain_last;            /* per chain: its last op, index into ops */
  long *covered;                 /* capc x capc */
  long *snap;                    /* per device node x capc, or NULL */
  size_t capc;
  size_t *cand; /* one op's producers, one per chain */
} cua__recorder;

/* schedule.c: the schedule recorded op by op. */
/* Room for @p n device ops, whose producer lists are at most @p maxp long
 * and @p npreds long in all: g->ops, g->chains, g->wait_store. */
int cua__rec_init(cua__recorder *r, cua_graph *g, size_t n, size_t maxp,
                  size_t npreds);
/* Records device op @p i (of the n), just placed at @p pl, as op g->nops:
 * its chain, its waits (the producers @p preds[0..np), indices among the
 * n, not yet ordered before it, but those another of them orders after),
 * whether it needs an edge to its chain's previous op. 0 or
 * CUA_ERR_NOMEM. */
int cua__rec_op(cua__recorder *r, cua_graph *g, size_t i, cua_placement pl,
                cua_op *op, const size_t *preds, size_t np);
/* Once every op is recorded: the chains' end events, the anchor. */
void cua__rec_end(cua_graph *g);
void cua__rec_free(cua__recorder *r);

/* graphbuild.c */
/* Enqueues @p g's schedule with parameters @p gp: forks the chains from
 * @p anchor (on device anchor_dev), enqueues every op, joins the chains
 * back into @p anchor. A chain whose stream is @p anchor needs no fork.
 * With @p deps (a capture on a backend with capture_deps()), each op's
 * dependencies are set by that call instead of by events. */
int cua__graph_enqueue(cua_runtime *rt, cua_graph *g, cua__gparams *gp,
                       cua_backend_stream *anchor, int deps, char *msg,
                       size_t len);
/* Builds the backend graph for @p gp (a new one, or an update of g->bg).
 * With no lock held, by the thread that has the anchor's turn (or the
 * creator, before the graph is published). */
int cua__graph_capture(cua_runtime *rt, cua_graph *g, cua__gparams *gp,
                       char *msg, size_t len);
/* Lends the graph's chains the runtime's capture streams (the k-th chain
 * on a device gets that device's k-th), and takes them back. Under
 * rt->capture_mu. */
int cua__graph_lend_streams(cua_runtime *rt, cua_graph *g, char *msg,
                            size_t len);
void cua__graph_return_streams(cua_graph *g);
/* What feeds cua__graph_capture_fed(): waits until at least @p want ops
 * of g->ops are recorded or the recording ended, and returns how many are
 * (*done: 0 more may come, 1 all came, -1 the recording failed). */
typedef size_t (*cua__gfeed)(void *arg, size_t want, int *done);
/* Captures @p g's schedule (a new backend graph, dependencies by
 * capture_deps()) while it is recorded: ops g->ops[0..) as @p feed hands
 * them over, at most @p maxops, on chains known as their ops come. On the
 * thread that captures, with no lock held (rt->capture_mu is taken);
 * returns once the recording ended, whatever happened (CUA_ERR_CANCELED,
 * and no message, when the recording failed). g->bg_params is left to the
 * caller. */
int cua__graph_capture_fed(cua_runtime *rt, cua_graph *g, size_t maxops,
                           cua__gfeed feed, void *arg, char *msg, size_t len);
/* The fed capture's thread and what it is fed (graphbuild.c): capture.c
 * places, stores the count of ops recorded (cua__feed_put(), @p done 1 at
 * the end, -1 when the placement failed) and joins f->thread; mu is a
 * leaf, taken under rt->lock only to wake the capture thread. */
typedef struct cua__feed {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_size_t ready; /* ops of g->ops recorded (stored by the placement) */
  atomic_size_t want;  /* what the sleeping capture thread waits for, or
                          SIZE_MAX: the placement signals only then */
  int done;            /* 1: all recorded, -1: the placement failed (mu) */
  cua_runtime *rt;
  cua_graph *g;
  size_t maxops;
  pthread_t thread;
  int rc; /* the capture's, once the thread is joined */
  char msg[CUA__ERRLEN];
} cua__feed;
/* Starts the capture thread: 0, or non-zero when it could not start (the
 * capture then follows the placement). */
int cua__feed_start(cua__feed *f, cua_runtime *rt, cua_graph *g, size_t maxops);
void cua__feed_put(cua__feed *f, size_t ready, int done);
/* After the thread is joined. */
void cua__feed_free(cua__feed *f);

/* replay.c */
void cua__gparams_release(cua__gparams *gp);
/* cua_graph_launch(), its failures named as @p fn's: the graph cache launches
 * for a submission, whose refusals are cua_submit()'s. */
int cua__graph_launch(cua_future **fut, cua_graph *g, const char *fn);
/* The index in g->ops of the op the user names @p key, or -1. */
long cua__graph_find(const cua_graph *g, const cua_op *key);
void cua__graph_release(cua_graph *g);
/* Frees what the backend made for @p g (streams, events, its graph). */
void cua__graph_free_backend(cua_runtime *rt, cua_graph *g);

#endif /* CUA_CORE_GRAPHS_H */
