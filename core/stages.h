/*
 * core/stages.h: what each file of core/ offers the others, file by file
 * (doc/design.md, "Stages by file", says what each owns), and the small
 * inline helpers they share.
 *
 * Included by core/internal.h only, at its end: it uses every type
 * declared there.
 */
#ifndef CUA_CORE_STAGES_H
#define CUA_CORE_STAGES_H

/* ------------------------------------------------------ scheduler stages */

/* node.c: nodes once built: edges, references, wiring, failure. */
void cua__node_free(cua__node *n);
/* Releases one reference to @p n (NULL: none); the last frees it. Inline:
 * a build drops one for every node it makes, and a call across files for
 * each cost about 2% of a warm chain's instructions per op. */
static inline void cua__node_release(cua__node *n) {
  if (n != NULL && atomic_fetch_sub(&n->refs, 1) == 1)
    cua__node_free(n);
}
void cua__node_release_deps(cua__node *n);
void cua__node_release_dependents(cua__node *n);
int cua__add_dep(cua__node *n, cua__node *p, unsigned flags);
int cua__edges_grow(cua_runtime *rt, void *arr, size_t *cap, size_t need,
                    void *inl);
const char *cua__node_name(const cua__node *n);
void cua__fail_node(cua_runtime *rt, cua__node *n, int code, const char *msg);

/* graph.c: the op DAG to nodes and edges. */
cua__node *cua__build_get(const cua__build *b, const cua_op *op);
void cua__build_put(cua__build *b, cua_op *op, cua__node *n);
void cua__build_init(cua__build *b, cua_runtime *rt, cua__sub *sub);
void cua__build_free(cua__build *b);
cua__node *cua__build_add_node(cua__build *b, cua_op *op, unsigned watches,
                               size_t *subcap, int *rc);
int cua__build_graph(cua__build *b, cua_op *root, size_t *subcap);
/* The levels of @p b's nodes, from every edge among them: run by
 * cua__build_graph(), and again once buffer hazards added edges. */
void cua__build_levels(cua__build *b);

/* cycles.c: CUA_ERR_CYCLE for a build whose thens, with the hazards
 * between its ops, would make an op wait for itself. */
int cua__check_cycles(cua__build *b, char *msg, size_t len);

/* plan.c: a root's plan, recorded at its second build. */
int cua__plan_recorded(const cua__plan *plan);
void cua__plan_record(cua__build *b, cua_op *root);
/* Builds @p b from @p root's recorded plan (cua__plan_recorded()). */
int cua__build_from_plan(cua__build *b, cua_op *root, size_t *subcap);
/* A large build from a plan made as it is decided: 1 and @p st ready for
 * a round (r->stage) when @p root's plan allows it (nothing built yet; the
 * submission held pending), 0 when it does not (build it whole), or
 * CUA_ERR_NOMEM before anything is committed. */
int cua__stage_begin(cua__stage *st, cua__build *b, cua_op *root);
/* After the first wiring of a build that @p root's plan describes: each
 * node's successors as a policy is told of them (cua__count_successors()),
 * for builds made a chunk at a time. */
void cua__plan_record_succ(const cua__build *b, cua_op *root);
/* Makes and wires the next chunk of r->stage's nodes; after the last (or a
 * node that could not be made: the submission then fails with
 * CUA_ERR_NOMEM), clears r->stage and releases the submission's hold. */
void cua__stage_next(cua_runtime *rt, cua__round *r);

/* node.c, continued. */
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
/* The same for b->order[@p from .. @p to). */
void cua__wire_range(cua_runtime *rt, cua__build *b, size_t from, size_t to,
                     cua__round *r);

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

/* The policy that places @p sub's ops: its own, else the runtime's (also
 * for @p sub NULL); NULL for a submission on an explicit stream
 * (cua_submit_on()), which no policy places. */
static inline cua__polinst *cua__sub_policy(cua_runtime *rt,
                                            const cua__sub *sub) {
  if (sub != NULL && sub->on_stream)
    return NULL;
  return sub != NULL && sub->policy != NULL ? sub->policy : rt->policy;
}

/* dag.c: submission_begin() and submission_end(). */
/* Whether @p sub's policy is told of its whole DAG before its first
 * placement (submission_begin()): then cua__dag_begin() needs it built. */
int cua__dag_wanted(cua_runtime *rt, const cua__sub *sub);
void cua__dag_begin(cua_runtime *rt, cua__sub *sub, cua__node *const *order,
                    size_t n);
void cua__dag_placed(cua__node *n);
void cua__dag_end(cua__sub *sub);

/* place.c: policy calls and their validation. */
/* The ops waiting for @p n (through virtual ones, @p depth deep so far),
 * as a policy is told of them. */
size_t cua__count_successors(const cua__node *n, int depth);
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
void cua__cmdlist_release(cua_runtime *rt, cua__cmdlist *cl);
void cua__cmdlist_fini(void *cl);

/* flush.c: a round's list on its way to the executor. Under rt->lock. */
void cua__round_flush(cua_runtime *rt, cua__round *r, int relock);
/* Whether a round's list @p cl may be offered to the launch threads
 * (cua__launcher_push() refuses it anyway without one): always but under
 * launch = auto and pipeline, where only a submission's (@p relock 0),
 * while a stream of them comes from one thread or while several threads
 * submit. Under rt->lock. */
int cua__may_hand_over(cua_runtime *rt, const cua__cmdlist *cl, int relock);
/* A submission's round's list so far, applied by this thread with
 * rt->lock released (retaken), or queued for the launch threads (a list
 * they refuse leaves the round's later chunks to this thread: no_chunks). */
void cua__chunk_apply(cua_runtime *rt, cua__round *r);
void cua__chunk_hand_over(cua_runtime *rt, cua__round *r);
/* Relays the rest of @p r's deciding to a launch thread while this thread
 * applies its chunks; 1 once the round is decided and applied, 0 when it
 * cannot be relayed (nothing done). */
int cua__relay_start(cua_runtime *rt, cua__round *r);
/* On the launch thread deciding a relayed round: its chunk so far goes to
 * the submitting thread. */
void cua__relay_push(cua_runtime *rt, cua__round *r);

/* executor.c: applying a command list, with no core lock held. */
void cua__exec(cua_runtime *rt, cua__cmdlist *cl);
/* Several lists applied in one scope (a relayed round's, flush.c):
 * cua__exec_in() applies each (its rt->executing count taken by the
 * caller), and lists that stream functions among them submit are applied
 * at cua__exec_close(), after them all. cua__exec_depth() says whether
 * this thread is in such a scope (or in cua__exec()). */
void cua__exec_open(void);
void cua__exec_in(cua_runtime *rt, cua__cmdlist *cl);
void cua__exec_close(void);
int cua__exec_depth(void);

/* launcher.c: the launch threads and their queues. */
/* Queues @p cl (emptied) for the launch threads: whole for the one of its
 * streams, or split between those of several; called under
 * rt->lock, for a list whose rt->executing count the caller took. 0, or
 * -1 with @p cl as it was (the caller applies it itself) when there is no
 * launch thread, this thread is applying a list, the list is empty,
 * launches a stream function the backend runs at launch, has no holder,
 * or could not be split for lack of memory. */
int cua__launcher_push(cua_runtime *rt, cua__cmdlist *cl);
/* Hands the rest of round @p r's deciding to the last launch thread,
 * which calls cua__decide_rest() (flush.c) once the lists queued to it
 * before are applied; called under rt->lock, which the caller then
 * releases, with the launch threads started. */
void cua__launcher_decide(cua_runtime *rt, struct cua__round *r);
/* flush.c: a launch thread goes on deciding @p r (cua__launcher_decide()),
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

/* executor.c, continued: the backend as the executor and captures see it. */
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
/* complete.c: 1 on @p rt's completion thread, which runs its host steps,
 * maps and callbacks: a wait there for work of @p rt would wait for the
 * thread itself. */
int cua__completing(const cua_runtime *rt);
/* The calls that would wait for @p rt's work: 0, or CUA_ERR_BUSY with a
 * message naming @p fn, from a stream function (with @p done 0: what is
 * waited for is not complete) or @p rt's completion thread. */
int cua__refuse_wait(const cua_runtime *rt, const char *fn, int done);

/* capture.c, schedule.c, graphbuild.c, replay.c: graphs (see graphs.h). */
void cua__graphs_detach(cua_runtime *rt);
/* Frees the graphs released since the last call (their backend objects
 * too). Called with no core lock held. */
void cua__graphs_reap(cua_runtime *rt);
/* Destroys the capture streams (runtime_free()). */
void cua__capture_streams_free(cua_runtime *rt);
/* Applies one launch of a graph: node @p n of kind GRAPH, on its stream. */
int cua__graph_replay(cua_runtime *rt, cua__node *n, char *msg, size_t len);
/* Names access @p a of node @p n in a message: "op 'NAME', buffer A"; for a
 * graph's launch, the graph's op that names that buffer first and its
 * index there ("graph op 'NAME', buffer I"), not the launch's union. */
void cua__access_name(const cua__node *n, size_t a, char *out, size_t len);
/* The ops a launch (GRAPH op @p op) runs. */
uint64_t cua__graph_nops(const cua_op *op);
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
/* cua_policy_close() was called on @p pol: drops the cached graphs it
 * placed (they are matched by its address, which a policy opened later may
 * be given). */
void cua__gcache_policy_gone(cua_runtime *rt, const cua__polinst *pol);
/* submit.c: undoes a build that will not run (nodes, shared ops' runs). */
void cua__build_undo(cua__build *b, cua__sub *sub);

/* complete.c: progress, finishing nodes, the completion thread. */
/* One thing @p s waited for is done (a node, or a stage's hold: plan.c);
 * after the last, @p s is queued to fire. Under rt->lock. */
void cua__sub_unhold(cua_runtime *rt, cua__sub *s);
/* @p s waits for nothing more: its status from its root, then queued to
 * fire (by the completion thread). Under rt->lock. */
void cua__sub_done(cua_runtime *rt, cua__sub *s);
void cua__finish_node(cua_runtime *rt, cua__node *n, cua__round *r);

/* runtime.c: every stream_create() of the core, numbered as the backend
 * numbers them for changed() (*index, when not NULL). */
int cua__stream_create(cua_runtime *rt, int device, cua_backend_stream **bs,
                       uint32_t *index, cua_backend_err *err);
/* flush.c: a submission made inside a relayed round this thread applies
 * waits until the round is decided. */
void cua__relay_nested_wait(void);
/* rtpolicies.c: the policies a runtime opens at creation. */
int cua__open_policies(cua_runtime *rt);

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
cua__sub *cua__future_live(const cua_future *f, const char *fn);
/* Fires @p batch, submissions linked by next_done, oldest first: each is
 * marked done and its waiters woken, then their callbacks run, in that
 * order, so that a callback finds every future of the batch complete. */
void cua__subs_fire(cua__sub *batch);
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

#endif /* CUA_CORE_STAGES_H */
