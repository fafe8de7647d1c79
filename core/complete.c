/*
 * core/complete.c: progress, finishing nodes, and the completion thread.
 *
 * The completion thread reads each stream's progress (the last mark it
 * executed) and asynchronous errors from the backend, finishes the nodes
 * up to it in order (policies' completed(), durations, results of virtual
 * nodes), runs the rounds their completion makes ready, runs host steps
 * and maps, and fires futures (eventfd, callbacks). It holds rt->lock
 * except while it runs user code (host steps, maps, callbacks), applies a
 * round's commands (executor.c) or waits in the backend's wait().
 */
#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ completion */

/* The runtime whose completion thread this is (NULL on other threads). */
static _Thread_local const cua_runtime *tls_completing;

int cua__completing(const cua_runtime *rt) {
  return rt != NULL && tls_completing == rt;
}

int cua__refuse_wait(const cua_runtime *rt, const char *fn, int done) {
  if (done)
    return 0;
  if (cua__in_user_code())
    return cua__fail(rt, CUA_ERR_BUSY,
                     "%s: called from a stream function, where waiting could "
                     "deadlock (what it waits for may be queued behind it); "
                     "wait after the stream function returns",
                     fn);
  if (cua__completing(rt))
    return cua__fail(rt, CUA_ERR_BUSY,
                     "%s: called from a host step, map or callback of this "
                     "runtime, on its completion thread, which would have to "
                     "complete what it waits for; wait on another thread",
                     fn);
  return 0;
}

static void compute_virtual_result(cua__node *n) {
  if (n->code != 0)
    return;
  switch (n->op->kind) {
  case CUA_OP_ZIP:
    if (cua__node_results(n, n->ndeps) == 0)
      for (size_t i = 0; i < n->ndeps; i++)
        n->results[i] = n->deps[i].node->result;
    n->result = n->results;
    break;
  case CUA_OP_UNZIP: {
    /* Its input is the zip's shared wrapper, which copied the results. */
    cua__node *z = n->deps[0].node;
    void **res = z->results;
    n->result = res && n->op->index < z->nresults ? res[n->op->index] : NULL;
    break;
  }
  case CUA_OP_THEN:
    /* Its next part's result: the last edge (then_source() reads it so
     * too). Its two input edges are one when both parts are the same
     * node, then(S, S) with S a shared op that ran in an earlier
     * submission (cua__add_dep() merges duplicates), so not deps[1]. */
    n->result = n->ndeps > 0 ? n->deps[n->ndeps - 1].node->result : NULL;
    break;
  case CUA_OP_SHARED:
    if (n->ndeps > 0) {
      n->result = n->deps[0].node->result;
      cua__node *z = n->deps[0].node;
      if (z->results != NULL) {
        if (cua__node_results(n, z->nresults) == 0)
          memcpy(n->results, z->results, z->nresults * sizeof *n->results);
        n->result = n->results;
      }
    }
    break;
  default:
    break;
  }
}

static void sub_node_done(cua_runtime *rt, cua__sub *s, cua__node *n) {
  if (n->code != 0 && s->status == 0) {
    s->status = n->code;
    free(s->msg);
    char buf[CUA__ERRLEN];
    snprintf(buf, sizeof buf, "op '%s': %s", cua__node_name(n),
             n->msg ? n->msg : cua_strerror(n->code));
    s->msg = cua__strdup(buf);
  }
  cua__sub_unhold(rt, s);
}

void cua__sub_unhold(cua_runtime *rt, cua__sub *s) {
  if (s->pending > 0 && --s->pending == 0)
    cua__sub_done(rt, s);
}

void cua__sub_done(cua_runtime *rt, cua__sub *s) {
  cua__dag_end(s); /* if ops failed before they could be placed */
  /* The root's own failure wins over the first failure seen (a large
   * build that failed part-way may have no root: plan.c); a failure
   * elsewhere in the DAG that the root does not depend on still fails
   * the submission, with the first message. */
  if (s->root != NULL && s->root->code != 0) {
    s->status = s->root->code;
    free(s->msg);
    char buf[CUA__ERRLEN];
    snprintf(buf, sizeof buf, "op '%s': %s", cua__node_name(s->root),
             s->root->msg ? s->root->msg : cua_strerror(s->root->code));
    s->msg = cua__strdup(buf);
  }
  s->next_done = rt->done_head;
  rt->done_head = s;
  rt->nsubs_done++;
}

/* Tells the observers when @p n ran: as the backend measured it, else
 * estimated (ending now, starting at the later of its launch and the end of
 * the op before it on its stream, so that one stream's ops never overlap). */
/* Caps the end observers will be told for @p d, not done yet, and for
 * everything it depends on that is not done either, at @p t: an op seen
 * done at t proves all of them ended by then. */
static void obs_cap_end(cua__node *d, uint64_t t) {
  if (d->state == CUA__NODE_DONE || (d->obs_cap != 0 && d->obs_cap <= t))
    return;
  d->obs_cap = t;
  for (size_t i = 0; i < d->ndeps; i++)
    obs_cap_end(d->deps[i].node, t);
  /* And what ran before it on its stream. */
  if (d->stream != NULL && d->cls == CUA__CLASS_DEVICE)
    for (cua__node *m = d->stream->inflight_head;
         m != NULL && m != d && m->seq < d->seq; m = m->inflight_next)
      obs_cap_end(m, t);
}

/* When @p d, which an op that measured times are told for depends on,
 * ended as far as is known: as told to observers once it is done; before,
 * as its backend measured it (a completion pass reads every stream's
 * progress, which writes the times, before it finishes any op, so a
 * producer whose stream is finished later in the pass has its times
 * already); a virtual node by what it depends on. */
static uint64_t obs_dep_end(const cua__node *d) {
  if (d->state == CUA__NODE_DONE)
    return d->obs_end;
  if (d->end_ns != 0)
    return d->end_ns;
  if (d->start_ns != 0)
    return d->start_ns + (d->obs_dur != 0 ? d->obs_dur : d->duration_ns);
  uint64_t e = 0;
  if (d->cls != CUA__CLASS_DEVICE)
    for (size_t i = 0; i < d->ndeps; i++) {
      uint64_t de = obs_dep_end(d->deps[i].node);
      if (de > e)
        e = de;
    }
  return e;
}

static void obs_op(cua_runtime *rt, cua__node *n, const cua__round *r) {
  cua__stream *s = n->stream;
  uint64_t start, end;
  cua_obs_timing timing = CUA_OBS_TIMING_MEASURED;
  /* (obs_dur first: duration_ns may hold the models' estimate) */
  uint64_t dur = n->obs_dur != 0 ? n->obs_dur : n->duration_ns;
  if (n->start_ns != 0) {
    start = n->start_ns;
    end = start + dur;
    /* An op the backend did not run itself (an alloc, a barrier) is
     * estimated and may end later than it did: what follows it stays
     * after it. */
    uint64_t after = s->obs_end;
    for (size_t i = 0; i < n->ndeps; i++) {
      uint64_t de = obs_dep_end(n->deps[i].node);
      if (de > after)
        after = de;
    }
    if (start < after) {
      end += after - start;
      start = after;
    }
  } else if (n->end_ns != 0) {
    /* Its end measured on the device; it started at the latest of its
     * launch, the end of the op before it on its stream and the ends of
     * what it waited for (exact when its stream was busy). */
    timing = CUA_OBS_TIMING_END_MEASURED;
    end = n->end_ns;
    if (end < s->obs_end)
      end = s->obs_end;
    start = n->t_launch; /* (t_exec, after the launch call, may be later
                            than the op's start) */
    if (start < s->obs_end)
      start = s->obs_end;
    for (size_t i = 0; i < n->ndeps; i++) {
      uint64_t de = obs_dep_end(n->deps[i].node);
      if (de > start)
        start = de;
    }
    /* The anchors of two devices may disagree by a microsecond or so. */
    if (start > end)
      end = start;
  } else {
    /* Every op a pass finishes ends at the pass's clock: so an op and
     * what it waited for, seen done in one pass in either order, stay in
     * order. */
    timing = CUA_OBS_TIMING_ESTIMATED;
    end = r != NULL && r->obs_now != 0 ? r->obs_now : cua__rt_now(rt);
    if (end < s->obs_end)
      end = s->obs_end;
    uint64_t te = atomic_load_explicit(&n->t_exec, memory_order_relaxed);
    start = te > n->t_launch ? te : n->t_launch;
    if (start < s->obs_end)
      start = s->obs_end;
    /* It ended by then: a consumer of it was seen done first. */
    if (n->obs_cap != 0 && n->obs_cap < end)
      end = n->obs_cap > s->obs_end ? n->obs_cap : s->obs_end;
    /* Nor before what it waited for ended. One not seen done yet (its
     * stream's progress was read before it ended, this op's after) ended
     * by this op's end: it is told so, and this op starts there. */
    for (size_t i = 0; i < n->ndeps; i++) {
      cua__node *d = n->deps[i].node;
      uint64_t de = d->state == CUA__NODE_DONE ? d->obs_end : end;
      if (d->state != CUA__NODE_DONE)
        obs_cap_end(d, end);
      if (de > start)
        start = de;
    }
    if (start == 0 || start > end)
      start = end;
  }
  n->obs_end = end;
  if (end > s->obs_end)
    s->obs_end = end;
  cua_obs_record o = {.kind = CUA_OBS_OP,
                      .start_ns = start,
                      .end_ns = end,
                      .timing = timing,
                      .submission = n->sub_id,
                      .op_id = n->op_id,
                      .device = n->pl.device,
                      .stream = n->pl.stream,
                      .op_kind = n->op->kind,
                      .code = n->code};
  cua__obs_emit(rt, &o, n->op->hints.name, n->op->hints.tag, NULL);
}

void cua__finish_node(cua_runtime *rt, cua__node *n, cua__round *r) {
  if (n->state == CUA__NODE_DONE)
    return;
  if (n->cls == CUA__CLASS_VIRTUAL)
    compute_virtual_result(n);
  n->state = CUA__NODE_DONE;
  if (n->code != 0)
    rt->stats.ops_failed++;
  if (n->stream != NULL) {
    cua_stream_load *l = &n->stream->load;
    if (l->ops_in_flight > 0)
      l->ops_in_flight--;
    l->est_busy_ns -=
        n->est_cost < l->est_busy_ns ? n->est_cost : l->est_busy_ns;
  }
  if (n->ext_event != NULL) {
    /* The stream waited for it (or never will): the event may go back. */
    cua__event_put(rt, n->stream->device, n->ext_event);
    n->ext_event = NULL;
  }
  if (rt->models != NULL && n->cls == CUA__CLASS_DEVICE)
    cua__models_measured(rt, n);
  if (rt->obs != NULL && n->cls == CUA__CLASS_DEVICE && n->stream != NULL)
    obs_op(rt, n, r);
  else if (rt->obs != NULL)
    for (size_t i = 0; i < n->ndeps; i++)
      if (n->deps[i].node->obs_end > n->obs_end)
        n->obs_end = n->deps[i].node->obs_end;
  if (n->placed_by != NULL) {
    cua__polinst *p = n->placed_by;
    if (p->d->completed != NULL) {
      cua_op_info in;
      cua__op_info(rt, n, &in, 0);
      p->d->completed(p->state, &in, n->pl, n->duration_ns);
    }
    n->placed_by = NULL;
    cua__polinst_release(p);
  }
  cua__resolve(rt, n, 1, r);
  for (size_t i = 0; i < n->nwatchers; i++)
    sub_node_done(rt, n->watchers[i], n);
  n->nwatchers = 0;
  cua__node_release_dependents(n);
  /* A virtual node keeps its parts: their results are its result. */
  if (n->cls != CUA__CLASS_VIRTUAL)
    cua__node_release_deps(n);
  /* Buffer states keep done nodes (the last writer, or a failure that
   * poisons the buffer), and the op holds the buffers: dropping the op
   * here breaks that cycle, so buffers are freed once their handles are. */
  if (n->op->hints.name != NULL)
    n->name = cua__strdup(n->op->hints.name);
  cua_op *op = n->op;
  n->op = NULL;
  cua_op_destroy(op);
}

/* Durations for policies that want them and for the performance models,
 * without asking the backend to time each op (an event pair per op on
 * CUDA): the ops a stream completed since the last look ran one after the
 * other, between the later of that look and the first one's launch, and
 * now. Each gets a share of that interval in proportion to what it was
 * expected to take when placed (est_cost: its model's mean, else its cost
 * hint; equal shares when one of them has neither), and is marked as
 * estimated: such a duration never teaches the models (models.c). An op the
 * backend timed itself (a model's sample, executor.c) keeps that duration
 * and its time is taken out of the interval before the others share it. */
static void estimate_durations(cua_runtime *rt, cua__stream *s, uint64_t upto) {
  size_t k = 0, seen = 0;
  uint64_t start = 0, timed = 0;
  double total = 0;
  int equal = 0;
  for (cua__node *n = s->inflight_head; n != NULL && n->seq <= upto;
       n = n->inflight_next) {
    if (seen++ == 0) {
      uint64_t te = atomic_load_explicit(&n->t_exec, memory_order_relaxed);
      start = te > n->t_launch ? te : n->t_launch;
    }
    /* One the backend timed (a model's sample) keeps its duration and
     * takes it out of the interval the others share. */
    if (n->t_launch != 0 && n->duration_ns != 0) {
      timed += n->duration_ns;
      continue;
    }
    k++;
    if (n->est_cost == 0)
      equal = 1;
    total += (double)n->est_cost;
  }
  if (seen == 0 || start == 0)
    return;
  uint64_t now = cua__rt_now(rt);
  if (s->t_done > start)
    start = s->t_done;
  uint64_t span = now > start ? now - start : 0;
  span = span > timed ? span - timed : 0;
  if (k == 0) {
    s->t_done = now;
    return;
  }
  for (cua__node *n = s->inflight_head; n != NULL && n->seq <= upto;
       n = n->inflight_next)
    if (n->t_launch != 0 && n->duration_ns == 0) {
      n->duration_ns =
          equal || k == 1
              ? span / k
              : (uint64_t)((double)span * (double)n->est_cost / total);
      n->dur_estimated = 1;
    }
  s->t_done = now;
}

/* Reads progress and errors of every stream and completes what finished.
 * Errors are read after progress: a failure of op N is recorded before
 * progress can pass N, so every op seen complete has had its failure
 * seen too, and consumers are failed before they can complete. */
static int process_progress(cua_runtime *rt, cua__round *r, int *more) {
  int any = 0;
  uint64_t stackv[64];
  /* Only the streams with work in flight or points to free (rt->active):
   * the others have nothing to read. A backend that says which streams
   * changed (ABI 1.8) narrows that to them; every 64th pass in which none
   * did reads them all, for points whose last wait was applied since. */
  int na = rt->nactive, full = 1;
  cua__stream *chg[CUA__CHANGED_MAX];
  if (rt->be_changed != NULL) {
    uint32_t idx[CUA__CHANGED_MAX];
    size_t n = 0;
    if (rt->be_changed(rt->bst, idx, CUA__CHANGED_MAX, &n) == 0 &&
        (n > 0 || ++rt->quiet_passes % 64 != 0)) {
      na = 0;
      for (size_t i = 0; i < n && i < CUA__CHANGED_MAX; i++)
        if (idx[i] < rt->nsmap && rt->smap[idx[i]] != NULL)
          chg[na++] = rt->smap[idx[i]];
      full = 0;
    }
  }
  /* rt->active is read by index: a policy's completed() may make a stream,
   * which may move the array. */
#define ACT(i) (full ? rt->active[(i)] : chg[(i)])
  uint64_t *vals = na <= 64 ? stackv : cua__malloc((size_t)na * sizeof *vals);
  if (vals == NULL)
    return 0;
  for (int i = 0; i < na; i++) {
    cua__stream *s = ACT(i);
    vals[i] = s->done;
    if (s->inflight_head == NULL)
      continue;
    /* Only msg[0] is cleared: zeroing all 512 bytes costs about 70
     * instructions per call (callgrind), on every pass. */
    cua_backend_err err;
    err.msg[0] = '\0';
    int rc = rt->be->progress(rt->bst, s->bs, &vals[i], &err);
    if (rc != 0) {
      /* The stream can never progress: fail everything on it. */
      for (cua__node *n = s->inflight_head; n; n = n->inflight_next)
        cua__fail_node(rt, n, rc, err.msg[0] ? err.msg : cua_strerror(rc));
      /* Only what the executor is done with; the rest is doomed and
       * finishes on a later pass. */
      vals[i] = atomic_load_explicit(&s->exec_seq, memory_order_acquire);
    }
  }
  for (int i = 0; i < na; i++) {
    cua__stream *s = ACT(i);
    uint64_t seq;
    int code;
    cua_backend_err err;
    err.msg[0] = '\0';
    while (rt->be->poll_error(rt->bst, s->bs, &seq, &code, &err) == 1) {
      for (cua__node *n = s->inflight_head; n; n = n->inflight_next)
        if (n->seq == seq) {
          cua__fail_node(rt, n, code, err.msg);
          break;
        }
      err.msg[0] = '\0';
    }
  }
  if (rt->obs != NULL) {
    /* Progress read once more, its values unused: an op seen done above
     * had every op it waited for on other streams done before it started,
     * so this read sees those too and their backend times are written
     * (obs_dep_end() orders the op after them, whichever stream is
     * finished first below). */
    for (int i = 0; i < na; i++) {
      cua__stream *s = ACT(i);
      uint64_t again = vals[i];
      cua_backend_err err;
      err.msg[0] = '\0';
      if (s->inflight_head != NULL &&
          rt->be->progress(rt->bst, s->bs, &again, &err) == 0 &&
          again > vals[i])
        *more = 1; /* (the backend has seen it: no wait() would wake) */
    }
    r->obs_now = cua__rt_now(rt);
  }
  for (int i = 0; i < na; i++) {
    cua__stream *s = ACT(i);
    if (vals[i] > s->done) {
      estimate_durations(rt, s, vals[i]);
      s->done = vals[i];
    }
    while (s->inflight_head != NULL && s->inflight_head->seq <= s->done) {
      cua__node *n = s->inflight_head;
      s->inflight_head = n->inflight_next;
      if (s->inflight_head == NULL)
        s->inflight_tail = NULL;
      cua__finish_node(rt, n, r);
      cua__node_release(n);
      any = 1;
    }
    /* A point goes once its stream is done past it, its record has been
     * applied and no decided wait still needs it. */
    while (s->points_head != NULL && s->points_head->seq <= s->done &&
           atomic_load(&s->points_head->users) == 0 &&
           atomic_load(&s->executed) > s->points_head->ticket) {
      cua__point *p = s->points_head;
      s->points_head = p->next;
      if (s->points_head == NULL)
        s->points_tail = NULL;
      else
        s->points_head->prev = NULL;
      cua__point_free(rt, p);
    }
  }
  if (vals != stackv)
    free(vals);
  /* Streams left with nothing to read leave the list (finishing nodes may
   * have made rounds that added streams at its end: they stay). */
  if (!full) {
    r->obs_now = 0;
    return any;
  }
  int k = 0;
  for (int i = 0; i < rt->nactive; i++) {
    cua__stream *s = rt->active[i];
    if (s->inflight_head == NULL && s->points_head == NULL)
      s->active = 0;
    else
      rt->active[k++] = s;
  }
  rt->nactive = k;
  r->obs_now = 0;
  return any;
#undef ACT
}

/* Runs one host step or map with the lock released. */
static void run_host_node(cua_runtime *rt, cua__node *n) {
  cua_op *op = n->op;
  int rc = 0;
  void *result = NULL;
  void *in = n->ndeps > 0 ? n->deps[0].node->result : NULL;
  n->state = CUA__NODE_RUNNING;
  rt->host_running++;
  pthread_mutex_unlock(&rt->lock);
  if (op->kind == CUA_OP_HOST)
    rc = op->host_fn(op->arg, &result);
  else
    rc = op->map_fn(in, op->arg, &result);
  pthread_mutex_lock(&rt->lock);
  rt->host_running--;
  rt->stats.host_steps++;
  rt->stats.ops++;
  n->result = result;
  if (rc != 0) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s returned %d",
             op->kind == CUA_OP_HOST ? "the host step" : "the map function",
             rc);
    cua__fail_node(rt, n, rc < 0 ? rc : CUA_ERR_OP_FAILED, buf);
  }
}

/* How long the idle completion thread watches for work before it sleeps:
 * a program that submits op after op sends the next within microseconds,
 * and a kick that finds no sleeper costs neither thread a futex call. */
#define IDLE_WATCH_NS 20000u

/* With rt->lock held: releases it, watches rt->work_gen for up to
 * IDLE_WATCH_NS, and takes it again. */
static void idle_watch(cua_runtime *rt) {
  unsigned gen = atomic_load_explicit(&rt->work_gen, memory_order_acquire);
  pthread_mutex_unlock(&rt->lock);
  uint64_t until = cua__now_ns() + IDLE_WATCH_NS;
  while (atomic_load_explicit(&rt->work_gen, memory_order_acquire) == gen &&
         cua__now_ns() < until)
    cua__cpu_relax();
  pthread_mutex_lock(&rt->lock);
}

static int pending_device_work(cua_runtime *rt) {
  for (int i = 0; i < rt->nactive; i++)
    if (rt->active[i]->inflight_head != NULL)
      return 1;
  return 0;
}

void *cua__completion_thread(void *arg) {
  cua_runtime *rt = arg;
  tls_completing = rt;
  int watched = 0; /* idle_watch() ran since the last pass with work */
  pthread_mutex_lock(&rt->lock);
  for (;;) {
    cua__round r;
    cua__round_init(rt, &r);
    r.defer_marks = 1;
    int more = 0; /* progress seen and not yet finished: pass again */
    process_progress(rt, &r, &more);
    cua__run_round(rt, &r);
    cua__round_flush(rt, &r, 1);
    /* Host steps ready to run. */
    while (rt->ready_head != NULL) {
      cua__node *n = rt->ready_head;
      rt->ready_head = n->ready_next;
      if (rt->ready_head == NULL)
        rt->ready_tail = NULL;
      if (n->code == 0 && n->state == CUA__NODE_PENDING)
        run_host_node(rt, n);
      cua__round_init(rt, &r);
      r.defer_marks = 1;
      cua__finish_node(rt, n, &r);
      cua__run_round(rt, &r);
      cua__node_release(n);
      cua__round_flush(rt, &r, 1);
    }
    /* Futures to fire, outside the lock, all that are done at once: the
     * lock is taken twice per batch, not per submission. */
    if (rt->done_head != NULL) {
      /* Oldest first (the list is pushed at its head): callbacks run in
       * the order their submissions completed. */
      cua__sub *done = NULL;
      while (rt->done_head != NULL) {
        cua__sub *s = rt->done_head;
        rt->done_head = s->next_done;
        s->next_done = done;
        done = s;
      }
      for (cua__sub *s = done; s != NULL; s = s->next_done)
        if (s->policy != NULL) {
          /* The policy handle of this submission may be closed now. */
          cua__polinst_release(s->policy);
          s->policy = NULL;
        }
      pthread_mutex_unlock(&rt->lock);
      cua__subs_fire(done);
      pthread_mutex_lock(&rt->lock);
      for (cua__sub *s = done; s != NULL; s = s->next_done) {
        if (s->prev)
          s->prev->next = s->next;
        else
          rt->subs = s->next;
        if (s->next)
          s->next->prev = s->prev;
        rt->nsubs--;
        rt->nsubs_done--;
      }
      pthread_cond_broadcast(&rt->idle);
      pthread_mutex_unlock(&rt->lock);
      while (done != NULL) {
        cua__sub *s = done;
        done = s->next_done;
        /* The submission no longer needs its nodes, except the root whose
         * result the future reports. */
        for (size_t i = 0; i < s->nnodes; i++)
          cua__node_release(s->nodes[i]);
        cua__sub_keep_nodes(s);
        cua__sub_release(s);
      }
      cua__graphs_reap(rt); /* graphs whose last launch ended just now */
      pthread_mutex_lock(&rt->lock);
    }
    if (rt->stopping && rt->nsubs == 0 && !pending_device_work(rt))
      break;
    if (rt->ready_head != NULL || rt->done_head != NULL || more) {
      watched = 0;
      continue;
    }
    if (pending_device_work(rt)) {
      watched = 0;
      pthread_mutex_unlock(&rt->lock);
      rt->be->wait(rt->bst, 1000000);
      pthread_mutex_lock(&rt->lock);
    } else if (!watched) {
      /* Then one more pass: whatever came is seen under the lock, as the
       * wait below would have seen it. */
      watched = 1;
      idle_watch(rt);
    } else {
      watched = 0;
      pthread_cond_wait(&rt->work, &rt->lock);
    }
  }
  pthread_mutex_unlock(&rt->lock);
  return NULL;
}
