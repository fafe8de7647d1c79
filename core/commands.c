/*
 * core/commands.c: scheduling rounds and the command list they produce.
 *
 * A round starts with the nodes a submission (or a completion) made ready
 * and runs, under rt->lock, until nothing more is ready: it places device
 * nodes (place.c), decides their launches in placement order, settles
 * virtual and failed nodes (complete.c), and appends what the backend must
 * do to the round's command list: WAIT for a producer's point, RECORD a
 * point, LAUNCH an op, MARK a stream's progress. Every command of a stream
 * gets that stream's next ticket, so commands decided by different threads
 * are applied in the order they were decided (executor.c).
 *
 * Owns: the ready queues, routing of ready nodes, the round's decisions
 * and its command list, and the order of a consumer's waits (while
 * rt->open_rounds, counted by flush.c, says a submission's round is
 * applying a chunk, the completion thread's rounds mark nothing: they
 * leave it to that round). Everything here runs under
 * rt->lock and calls no backend and no user code. How the list leaves
 * the round is flush.c's: cua__round_flush() releases the lock, wakes the
 * completion thread if the round asked for it (the backend's wake() among
 * it) and hands the list to the executor; a submission's round also
 * applies chunks between its decisions (cua__chunk_apply()), when it holds
 * nothing but nodes ready to be placed, hands them to the launch threads,
 * or is relayed.
 */
#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- ready queues */

/* The round's queues link nodes through n->q_next (a node is in at most one
 * at a time): pushing never allocates, so never fails. */
void cua__q_push(cua__queue *q, cua__node *n) {
  if (n->queued)
    return; /* already in a queue of this round: once is enough */
  n->queued = 1;
  n->q_next = NULL;
  if (q->tail != NULL)
    q->tail->q_next = n;
  else
    q->head = n;
  q->tail = n;
}

/* The settle queue holds a reference to each node in it: a virtual node
 * nothing waits for (a zip a then stands for by its parts) may lose its
 * last other holder while queued, once its submission has fired. */
void cua__settle_push(cua__round *r, cua__node *n) {
  if (n->queued)
    return;
  atomic_fetch_add(&n->refs, 1);
  cua__q_push(&r->settle, n);
}

/* How far cua__place_push() looks for a ready node's place before it
 * appends it instead (one arriving far out of order). policy.h and heft's
 * copy of the order say 64 too. */
#define PLACE_ORDER_MAX 64

/* Whether ready node @p a is placed before @p b: by level (breadth-first),
 * then in the order they were made (op ids, the build's post-order). */
static int place_before(const cua__node *a, const cua__node *b) {
  return a->level != b->level ? a->level < b->level : a->op_id < b->op_id;
}

/* A place queue keeps ready device nodes breadth-first, by level, and
 * within a level in the order they were made, as far as they come in that
 * order. First in, first out instead put a random DAG's ops of one level
 * on their streams in the order their last inputs were placed, which
 * needed about 0.2 more waits per op for the same placement (micro-random
 * under round-robin: 1.21 against 1.00). Most nodes come in order and are
 * appended; one that does not is inserted, unless its place is more than
 * PLACE_ORDER_MAX nodes from the head. */
void cua__place_push(cua__queue *q, cua__node *n) {
  if (n->queued)
    return;
  if (q->tail == NULL || !place_before(n, q->tail)) {
    cua__q_push(q, n);
    return;
  }
  cua__node **at = &q->head;
  for (int i = 0; !place_before(n, *at); i++) {
    if (i == PLACE_ORDER_MAX) {
      cua__q_push(q, n);
      return;
    }
    at = &(*at)->q_next; /* never the end: n goes before the tail */
  }
  n->queued = 1;
  n->q_next = *at;
  *at = n;
}

cua__node *cua__q_pop(cua__queue *q) {
  cua__node *n = q->head;
  if (n != NULL) {
    q->head = n->q_next;
    if (q->head == NULL)
      q->tail = NULL;
    n->q_next = NULL;
    n->queued = 0;
  }
  return n;
}

static void host_ready(cua_runtime *rt, cua__node *n) {
  if (n->on_ready)
    return;
  n->on_ready = 1;
  atomic_fetch_add(&n->refs, 1);
  n->ready_next = NULL;
  if (rt->ready_tail)
    rt->ready_tail->ready_next = n;
  else
    rt->ready_head = n;
  rt->ready_tail = n;
}

/* A node's last dependency was resolved: route it. */
void cua__ready(cua_runtime *rt, cua__node *n, cua__round *r) {
  if (n->code != 0 || n->cls == CUA__CLASS_VIRTUAL) {
    cua__settle_push(r, n);
    return;
  }
  if (n->cls == CUA__CLASS_HOST) {
    host_ready(rt, n);
    return;
  }
  cua__place_push(&r->place, n);
}

/* Resolves the dependents of @p p that waited for it to be placed
 * (@p complete 0) or to complete (@p complete 1). */
void cua__resolve(cua_runtime *rt, cua__node *p, int complete, cua__round *r) {
  cua__dependent *d = p->dependents;
  for (size_t i = 0; i < p->ndependents; i++) {
    if (d[i].resolved || (!complete && (d[i].flags & CUA__DEP_COMPLETE)))
      continue;
    d[i].resolved = 1;
    cua__node *m = d[i].node;
    if (m->unresolved > 0 && --m->unresolved == 0)
      cua__ready(rt, m, r);
  }
}

/* ---------------------------------------------------------- command list */

/* Appends a command for stream @p s with its next ticket; NULL when out of
 * memory (nothing was appended, no ticket taken). */
cua__cmd *cua__cmd_add(cua__round *r, int kind, cua__stream *s) {
  cua__cmdlist *cl = &r->cmds;
  if (cl->v == NULL && cl->box == NULL) {
    /* The round's first command: a list kept from an earlier round
     * (rt->lock guards taking from the pool). */
    int fresh;
    cua__cmdlist *box = cua__pool_get(&r->rt->list_pool, &fresh);
    if (box != NULL) {
      if (fresh)
        memset(box, 0, sizeof *box);
      *cl = *box;
      cl->n = 0;
      cl->box = box;
      cl->next = NULL;
    }
  }
  if (cl->n == cl->cap && cua__grow(&cl->v, &cl->cap, cl->n + 1, sizeof *cl->v))
    return NULL;
  cua__cmd *c = &cl->v[cl->n++];
  memset(c, 0, sizeof *c);
  c->kind = kind;
  c->s = s;
  c->ticket = s->tickets++;
  return c;
}

static void inflight_push(cua_runtime *rt, cua__stream *s, cua__node *n) {
  atomic_fetch_add(&n->refs, 1);
  if (!s->active)
    cua__stream_activate(rt, s);
  n->inflight_next = NULL;
  if (s->inflight_tail)
    s->inflight_tail->inflight_next = n;
  else
    s->inflight_head = n;
  s->inflight_tail = n;
}

/* The most producers whose waits are ordered (wait_producers()); past
 * them, waits are decided in the deps' order. */
#define WAIT_ORDERED 16

/* Makes @p n's stream wait for its producers on other streams, with the
 * fewest waits: of the producers on one stream only the latest (the stream
 * runs in order), and the latest decided first (descending op ids), since
 * its point is the one most likely ordered after the others, which
 * cua__wait_for() then skips by the vector clocks. In the deps' order, a
 * random DAG's consumer waited about 1.3 times per op where 1.0 did
 * (micro-random, round-robin). */
static int wait_producers(cua__round *r, cua__node *n) {
  cua__stream *s = n->stream;
  cua__node *w[WAIT_ORDERED];
  size_t nw = 0;
  int rc = 0;
  for (size_t i = 0; i < n->ndeps && rc == 0; i++) {
    cua__node *p = n->deps[i].node;
    if (p->cls != CUA__CLASS_DEVICE || p->state == CUA__NODE_DONE ||
        p->stream == NULL || p->stream == s)
      continue;
    size_t j = 0;
    while (j < nw && w[j]->stream != p->stream)
      j++;
    if (j < nw) {
      if (p->seq > w[j]->seq)
        w[j] = p;
    } else if (nw < WAIT_ORDERED) {
      w[nw++] = p;
    } else {
      rc = cua__wait_for(r, s, p->stream, p->seq, p);
    }
  }
  for (size_t a = 1; a < nw; a++)
    for (size_t b = a; b > 0 && w[b - 1]->op_id < w[b]->op_id; b--) {
      cua__node *x = w[b];
      w[b] = w[b - 1];
      w[b - 1] = x;
    }
  for (size_t j = 0; j < nw && rc == 0; j++)
    rc = cua__wait_for(r, s, w[j]->stream, w[j]->seq, w[j]);
  return rc;
}

/* Decides the launch of placed node @p n: waits for its producers on other
 * streams, then the LAUNCH itself. */
static int decide_launch(cua_runtime *rt, cua__round *r, cua__node *n,
                         char *msg, size_t len) {
  cua_op *op = n->op;
  cua__stream *s = n->stream;
  r->waiter = n;
  int rc = wait_producers(r, n);
  if (rc == 0 && op->kind == CUA_OP_BARRIER)
    for (int i = 0; i < rt->nstreams && rc == 0; i++) {
      cua__stream *o = rt->streams[i];
      rc = cua__wait_for(r, s, o, o == s ? 0 : o->launched, NULL);
    }
  r->waiter = NULL;
  if (rc == 0 && op->kind == CUA_OP_WAIT_NATIVE && n->ext_event == NULL &&
      (rc = cua__event_get(rt, s->device, &n->ext_event)) != 0) {
    snprintf(msg, len, "no event to wait for native stream %p: %s", op->native,
             cua_strerror(rc));
    return rc;
  }
  /* A graph launch's result, as its DAG's would be (replay.c). */
  if (rc == 0 && op->kind == CUA_OP_GRAPH && n->results == NULL &&
      (rc = cua__graph_result(n, op)) != 0) {
    snprintf(msg, len, "the graph launch's result: out of host memory");
    return rc;
  }
  cua__cmd *c = rc == 0 ? cua__cmd_add(r, CUA__CMD_LAUNCH, s) : NULL;
  if (c == NULL) {
    snprintf(msg, len, "inserting a cross-stream wait: %s",
             cua_strerror(rc ? rc : CUA_ERR_NOMEM));
    return rc ? rc : CUA_ERR_NOMEM;
  }
  c->node = n;
  c->op = op;
  n->cmd = r->cmds.n - 1;
  /* The round's clock (read once, by its first placement) stands for
   * when the op was launched: no clock read per op. */
  if (!rt->host_exec && (rt->models != NULL || rt->obs != NULL ||
                         (n->placed_by != NULL &&
                          (n->placed_by->d->flags & CUA_POLICY_WANTS_TIMING))))
    n->t_launch = r->now != 0 ? r->now : (r->now = cua__rt_now(rt));
  n->vc_gen = s->vc_gen;
  /* Results known now, so the executor writes nothing the completion
   * thread reads. */
  if (op->kind == CUA_OP_ALLOC)
    n->result = op->acc[0].buf;
  else if (op->kind == CUA_OP_MEMCPY_D2H)
    n->result = op->hptr;

  else if (op->kind == CUA_OP_FREE)
    cua__buffer_root(op->acc[0].buf)->freed = 1;
  return 0;
}

/* A MARK of what @p s has launched, which its launch thread applies as it
 * is if @p keep (a handed-over chunk's of a pipelined round); -1 when out
 * of memory (the completion thread's next round marks it). */
static int mark_stream(cua__round *r, cua__stream *s, int keep) {
  cua__cmd *c = cua__cmd_add(r, CUA__CMD_MARK, s);
  if (c == NULL)
    return -1;
  c->value = s->launched;
  c->prev = s->marked;
  c->keep = keep;
  s->marked = s->launched;
  if (r->rt->obs_commands)
    cua__obs_command(r->rt, CUA_OBS_MARK, s, s->inflight_tail);
  return 0;
}

/* A round of the completion thread marks nothing while a submission's
 * round applies a chunk with rt->lock out (rt->open_rounds): that round
 * marks every stream that got work when it ends, this round's launches
 * included. A MARK decided now would take its stream's ticket after the
 * chunk's commands, so the completion thread would sleep in the executor
 * until the chunk reached that stream, the submitting thread would wake
 * it (a futex call) after each of its commands, and its next chunk would
 * wait for that MARK in turn. */
static void mark_streams(cua_runtime *rt, cua__round *r) {
  if (r->defer_marks && rt->open_rounds > 0)
    return;
  for (int i = 0; i < rt->nstreams; i++) {
    cua__stream *s = rt->streams[i];
    if (s->marked < s->launched &&
        mark_stream(r, s, r->handed && r->pipelined) != 0)
      break;
  }
}

/* With launch threads, a long round hands its list over in chunks as it
 * decides them (every round under launch = thread; under pipeline, a
 * submission's round while no other thread is submitting; under auto,
 * such a round once a chunk of it spans several launch threads'
 * streams: cua__run_round()), so that the
 * device starts on the first ops while the rest are decided (a large
 * submission would otherwise launch nothing until all of it is decided):
 * the first chunk after CHUNK_FIRST launches, each next one twice as
 * long, up to CHUNK_MAX (flush.c). A chunk has its exact points attached. Once
 * one chunk went, the rest of the round's list is offered there too
 * (r->handed); a chunk the launch threads refuse (it launches a stream
 * function) is applied by this thread, and the tickets keep every
 * stream's commands in order across them. The chunk is queued for the
 * launch threads (in decision order, rt->lock held throughout; split
 * between them by stream, launcher.c), so its launches overlap the next
 * decisions. Without a launch thread, a submission's round applies its
 * own chunks (cua__chunk_apply(), flush.c).
 *
 * Under launch = thread the streams are marked only at the round's end
 * (marks in between had the completion thread finish ops, under rt->lock,
 * while the round still decided: on a chain of short kernels, in the third
 * session, that cost more than the early start gained); then the
 * completion thread finishes every op of a large round after its last
 * launch. Under pipeline each stream is marked every CHUNK_MARK_EVERY
 * launches (auto's pipelined rounds: every MARK_EVERY), and the launch
 * threads apply those marks, and the round's last ones, as they are
 * (cmd->keep), not batched with other lists' marks
 * (cua__coalesce_marks()). On an H200 (doc/results, twenty-third session,
 * ten interleaved rounds): micro-random under round-robin 0.93-1.13x
 * raw-streams in 3 rounds but 1.23-1.60x in the others, where auto (the
 * submitting thread applying its own chunks) ran 1.34-1.44x; micro-chain
 * 1.01-1.07x raw in 3 rounds, 1.15-1.38x in the others (auto 1.02-1.45x).
 * With the marks at the end, or every 64 launches, or batched, it gained
 * nothing. A likely cause is where the launch thread runs: on such
 * machines the same launch takes 20-35% longer on some vCPUs than on
 * others (doc/results, thirtieth session). */
#define CHUNK_FIRST 16
#define CHUNK_MARK_EVERY 16

/* Without chunks (no launch thread), the list is applied only once the
 * round has decided everything, with rt->lock released: a MARK every
 * MARK_EVERY launches of a stream then lets the completion thread finish
 * ops while the device still runs the later ones, instead of finishing
 * the whole DAG's ops after the device is done. A mark costs the applying
 * thread about a third of a launch, so one per 64 launches is about 0.5%
 * of them. On an H100 (doc/results, thirteenth session, four interleaved
 * rounds): a chain of 10,000 short kernels 1.24x -> 1.17x raw, the 50 us
 * stencil, tree and random patterns 1.14, 1.13, 1.22 -> 1.11, 1.12, 1.17x
 * raw-streams under round-robin. */
#define MARK_EVERY 64

/* Places, decides launches and settles until nothing more is ready, then
 * marks every stream that got work. Commands go to r->cmds; the caller
 * applies them with cua__round_flush() once it may release rt->lock (with
 * a launch thread, a long round hands chunks over before:
 * cua__chunk_hand_over()). */
void cua__run_round(cua_runtime *rt, cua__round *r) {
  r->rt = rt;
  /* Pipeline hands a submission's chunks over while it is the only thread
   * submitting (with several, their whole lists go to the launch threads:
   * cua__may_hand_over()). Auto applies a large round in its own chunks,
   * as without a launch thread, unless there are several launch threads
   * and a chunk's commands are for the streams of more than one of them:
   * then the rest of the round goes as under pipeline, and its launches on
   * different streams run in parallel (on an H200, doc/results, twenty-fourth
   * session: micro-random under round-robin on 4 streams at 0.90-1.19x
   * raw-streams with two launch threads, against 0.96-1.58x with one). */
  int solo = r->chunked && rt->launcher_started &&
             atomic_load_explicit(&rt->submitting, memory_order_relaxed) == 1;
  r->pipelined = solo && rt->cfg->launch == CUA__LAUNCH_PIPELINE;
  int may_pipeline =
      solo && rt->cfg->launch == CUA__LAUNCH_AUTO && rt->nlaunchers > 1;
  int handing = rt->launcher_started &&
                (rt->cfg->launch == CUA__LAUNCH_THREAD || r->pipelined);
  /* A mark every MARK_EVERY launches of a stream, but every
   * CHUNK_MARK_EVERY in the chunks of launch = pipeline. Auto's handed
   * chunks keep MARK_EVERY: each mark is a write between two kernels of
   * the stream, and with one every 16 the 50 us patterns ran 1.08-1.14x
   * raw-streams instead of 1.03-1.09x (H200, three interleaved rounds of
   * an experiment build that read the interval from the environment;
   * doc/results, twenty-fourth session). */
  uint64_t chunk_mark_every =
      rt->cfg->launch == CUA__LAUNCH_PIPELINE ? CHUNK_MARK_EVERY : MARK_EVERY;
  for (;;) {
    cua__node *n;
    int chunks = handing && !r->no_chunks;
    /* (and when the launch thread refused a chunk: the rest of the
     * round's chunks are applied by this thread, as without one) */
    int own = r->chunked && (!handing || r->no_chunks);
    /* Chunks launch early only if launches are decided as soon as they
     * are placed; otherwise every placement comes first. */
    if ((!(chunks || own) || r->launch.head == NULL) &&
        (n = cua__q_pop(&r->place)) != NULL) {
      if (n->code != 0) {
        /* Failed while it waited here with rt->lock out between chunks
         * (a producer's launch failed): settled as a node that failed
         * before its placement, and no policy is asked about it. */
        cua__dag_placed(n);
        cua__settle_push(r, n);
        continue;
      }
      cua__place_one(rt, n, r);
      continue;
    }
    if ((n = cua__q_pop(&r->launch)) != NULL) {
      char msg[CUA__ERRLEN];
      int rc = n->code;
      if (rc == 0)
        rc = decide_launch(rt, r, n, msg, sizeof msg);
      else
        snprintf(msg, sizeof msg, "%s", n->msg ? n->msg : "");
      n->stream->launched = n->seq;
      if (r->left > 0)
        r->left--;
      if (rc != 0)
        cua__fail_node(rt, n, rc, msg);
      /* A graph's launch runs its graph's ops. */
      rt->stats.ops += n->kind == CUA_OP_GRAPH ? cua__graph_nops(n->op) : 1;
      inflight_push(rt, n->stream, n);
      /* A MARK of its own: in pull mode, so that the completion thread
       * sees each op end and its stream is offered again as soon as it
       * has room; for an op whose model has few samples yet (CUDA), timed
       * by the backend, so that the completion thread sees its own end. */
      n->sampled = cua__models_sampling(rt, n);
      if (n->pulled == 2 || n->sampled ||
          ((!chunks || r->pipelined) &&
           n->stream->launched - n->stream->marked >=
               (chunks ? chunk_mark_every : MARK_EVERY)))
        (void)mark_stream(r, n->stream, chunks && r->pipelined);
      if (chunks && ++r->chunk_len >= r->chunk_at && r->place.head != NULL)
        cua__chunk_hand_over(rt, r);
      /* Its own chunk only between decisions: with nothing placed and
       * not decided (their stream numbers are taken) and nothing to
       * settle, what the round still holds is only nodes ready to be
       * placed, which no other round touches while rt->lock is out. */
      if (own && ++r->chunk_len >= r->chunk_at && r->place.head != NULL &&
          r->launch.head == NULL && r->settle.head == NULL) {
        if (r->relay != NULL) {
          cua__relay_push(rt, r);
        } else if (may_pipeline && !r->no_chunks &&
                   cua__launcher_spread(rt, &r->cmds) > 1) {
          r->pipelined = 1;
          handing = 1;
          cua__chunk_hand_over(rt, r);
        } else if (rt->decide_relay && solo && cua__relay_start(rt, r)) {
          return; /* decided on the launch thread and applied */
        } else {
          cua__chunk_apply(rt, r);
        }
      }
      continue;
    }
    if ((n = cua__q_pop(&r->settle)) != NULL) {
      /* Virtual nodes whose parts completed, and failed nodes that will
       * never run; failed nodes already on a stream finish in order. */
      if (n->state == CUA__NODE_PENDING)
        cua__finish_node(rt, n, r);
      cua__node_release(n);
      continue;
    }
    /* Streams with room ask pull-mode policies for the ops they hold. */
    if (cua__pull_fill(rt, r) > 0 || r->settle.head != NULL)
      continue;
    /* Everything built is decided: a large build made as it is decided
     * makes its next chunk (plan.c). */
    if (r->stage != NULL) {
      cua__stage_next(rt, r);
      continue;
    }
    break;
  }
  /* Exact waits for later rounds; without memory, later consumers wait at
   * the stream's end instead, which is correct, only later. */
  (void)cua__exact_points(r);
  mark_streams(rt, r);
  if (rt->ready_head != NULL)
    cua__kick(rt);
}

void cua__round_init(cua_runtime *rt, cua__round *r) {
  memset(r, 0, sizeof *r);
  r->rt = rt;
  r->chunk_at = CHUNK_FIRST;
}

/* Command lists (a holder and its array) come from the runtime's pool at a
 * round's first command and go back to it, array kept, once applied: by
 * the executor, without the lock. */
void cua__cmdlist_release(cua_runtime *rt, cua__cmdlist *cl) {
  cua__cmdlist *box = cl->box;
  if (box != NULL) {
    cua__cmdlist keep = *cl;
    keep.n = 0;
    keep.box = NULL;
    keep.next = NULL;
    keep.defer_rt = NULL;
    *box = keep;
    cua__pool_put(&rt->list_pool, box);
  } else {
    free(cl->v);
  }
  memset(cl, 0, sizeof *cl);
}

void cua__cmdlist_fini(void *p) {
  free(((cua__cmdlist *)p)->v);
}
