/*
 * core/place.c: placement: asking policies where each op runs.
 *
 * For each device node made ready in a round, the submission's policy (or
 * the runtime's, or the explicit stream of cua_submit_on()) picks a device
 * and stream, then that device's own [device.N] policy may pick the
 * stream; every answer is validated (a device or stream that does not
 * exist, or a device the op's buffers cannot be reached from, fails the op
 * with a message naming the policy). The node gets its stream's next
 * sequence number and goes to the round's launch queue.
 *
 * Runs under rt->lock, which is what serialises calls into a policy
 * instance (policies need no locks of their own).
 */
#include "config.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- placement */

static int buffers_device(const cua_op *op) {
  int dev = -1;
  for (size_t i = 0; i < op->nacc; i++) {
    int d = op->acc[i].buf->device;
    if (dev == -1)
      dev = d;
    else if (dev != d)
      return -2;
  }
  return dev;
}

/* Where @p op's buffers all live (-1: none or mixed) and the device it must
 * run on (-1: any). */
void cua__op_devices(const cua_runtime *rt, const cua_op *op, int *data,
                     int *restrict_to) {
  int dd = buffers_device(op);
  *data = dd >= 0 ? dd : -1;
  *restrict_to = -1;
  /* Memory a device cannot reach pins the op to where its data lives
   * (device-to-device copies excepted: the backend routes them). */
  if (!rt->all_peers && op->kind != CUA_OP_MEMCPY_D2D &&
      op->kind != CUA_OP_GRAPH && op->nacc > 0)
    *restrict_to = op->acc[0].buf->device;
  if (op->kind == CUA_OP_ALLOC || op->kind == CUA_OP_FREE)
    *restrict_to = op->acc[0].buf->device;
  if (op->kind == CUA_OP_WAIT_NATIVE)
    *restrict_to = op->native_device;
}

/* Calls @p fn for every device or host node @p n waits for, seen through
 * virtual nodes (zips, unzips, thens without a node of their own, shared
 * ops), each once (marked with a new rt->input_gen). Stops at the first
 * non-zero answer and returns it. */
static int each_input_at(cua_runtime *rt, const cua__node *n, int depth,
                         int (*fn)(cua__node *d, void *arg), void *arg) {
  for (size_t i = 0; i < n->ndeps; i++) {
    cua__node *d = n->deps[i].node;
    if (d->input_gen == rt->input_gen)
      continue;
    d->input_gen = rt->input_gen;
    int rc = 0;
    if (d->cls != CUA__CLASS_VIRTUAL)
      rc = fn(d, arg);
    else if (depth < 64) /* virtual nodes are short chains: a backstop */
      rc = each_input_at(rt, d, depth + 1, fn, arg);
    if (rc != 0)
      return rc;
  }
  return 0;
}

int cua__each_input(cua_runtime *rt, const cua__node *n,
                    int (*fn)(cua__node *d, void *arg), void *arg) {
  if (++rt->input_gen == 0)
    rt->input_gen = 1;
  return each_input_at(rt, n, 0, fn, arg);
}

/* cua__each_input()'s visitor for place(): appends @p d to rt->inputs. */
static int add_input(cua__node *d, void *arg) {
  cua_runtime *rt = arg;
  if (cua__grow(&rt->inputs, &rt->ninputs_cap, rt->ninputs + 1,
                sizeof *rt->inputs) != 0)
    return -1;
  cua_op_input *in = &rt->inputs[rt->ninputs++];
  memset(in, 0, sizeof *in);
  in->op_id = d->op_id;
  in->kind = d->kind;
  in->bytes = d->op != NULL ? d->op->hints.bytes : 0;
  if (d->cls == CUA__CLASS_HOST) {
    in->state = CUA_INPUT_HOST;
    in->where.device = in->where.stream = -1;
  } else {
    in->where = d->pl;
    in->state = d->state == CUA__NODE_DONE ? CUA_INPUT_DONE : CUA_INPUT_PLACED;
    in->expected_end_ns = in->state == CUA_INPUT_DONE ? 0 : d->est_end;
  }
  return 0;
}

/* The ops waiting for @p n, seen through virtual ones. */
size_t cua__count_successors(const cua__node *n, int depth) {
  size_t c = 0;
  for (size_t i = 0; i < n->ndependents; i++) {
    const cua__node *d = n->dependents[i].node;
    if (d->cls != CUA__CLASS_VIRTUAL)
      c++;
    else if (depth < 64)
      c += cua__count_successors(d, depth + 1);
  }
  return c;
}

/* The policy's view of @p n, with its inputs (in rt->inputs, valid until
 * the next call) if @p with_inputs, else none, as completed() gets. Nodes
 * do not keep it: it is made again for completed() from the op, which a
 * node keeps until it is done. */
void cua__op_info(cua_runtime *rt, cua__node *n, cua_op_info *in,
                  int with_inputs) {
  const cua_op *op = n->op;
  memset(in, 0, sizeof *in);
  in->size = sizeof *in;
  in->kind = op->kind;
  in->name = op->hints.name;
  in->tag = op->hints.tag;
  in->preferred_device = op->hints.device;
  in->cost_ns = op->hints.cost_ns;
  in->bytes = op->hints.bytes;
  in->flops = op->hints.flops;
  in->priority = op->hints.priority;
  in->then_of.device = in->then_of.stream = -1;
  if (n->then_src != NULL && n->then_src->pl.device >= 0)
    in->then_of = n->then_src->pl;
  cua__op_devices(rt, op, &in->data_device, &in->restrict_device);
  in->level = n->level;
  in->submission = n->sub_id;
  in->op_id = n->op_id;
  in->nsuccessors =
      n->staged_succ != 0 ? n->staged_succ - 1 : cua__count_successors(n, 0);
  if (!with_inputs)
    return;
  rt->ninputs = 0;
  if (cua__each_input(rt, n, add_input, rt) != 0)
    rt->ninputs = 0; /* out of memory: the policy sees no inputs, no worse */
  in->inputs = rt->ninputs > 0 ? rt->inputs : NULL;
  in->ninputs = rt->ninputs;
}

/* @p in for a policy whose cua_op_input has @p to bytes, when its inputs
 * are @p from bytes apart: @p in itself when they agree, else a copy in
 * @p tmp with the inputs at the new stride in *buf (free()d by the
 * caller); out of memory, a copy without inputs (the policy then sees
 * none, as when they could not be gathered). Never NULL. */
const cua_op_info *cua__info_restride(const cua_op_info *in, size_t from,
                                      size_t to, cua_op_info *tmp, void **buf) {
  *buf = NULL;
  if (from == to || in->ninputs == 0 || in->inputs == NULL)
    return in;
  char *v = cua__calloc(in->ninputs, to);
  *tmp = *in;
  if (v == NULL) {
    tmp->inputs = NULL;
    tmp->ninputs = 0;
    return tmp;
  }
  for (size_t i = 0; i < in->ninputs; i++)
    memcpy(v + i * to, (const char *)in->inputs + i * from,
           from < to ? from : to);
  tmp->inputs = (const cua_op_input *)(void *)v;
  *buf = v;
  return tmp;
}

static int valid_placement(cua_runtime *rt, const cua_op_info *in,
                           cua_placement pl) {
  if (pl.device < 0 || pl.device >= rt->ndev)
    return 0;
  if (pl.stream < 0 || pl.stream >= rt->devs[pl.device].nstreams)
    return 0;
  if (pl.node != 0 || pl.reserved != 0)
    return 0;
  if (in->restrict_device >= 0 && pl.device != in->restrict_device)
    return 0;
  return 1;
}

static int policy_place(cua_runtime *rt, cua__polinst *p, const cua_op_info *in,
                        cua_placement *pl, char *msg, size_t len) {
  p->log[0] = '\0';
  cua_op_info tmp;
  void *buf = NULL;
  const cua_op_info *pin = cua__info_restride(in, sizeof(cua_op_input),
                                              p->d->input_size, &tmp, &buf);
  int rc = p->d->place(p->state, pin, pl);
  free(buf);
  if (rc != 0) {
    /* A code outside the list is named as the number it is. */
    char code[200], num[160];
    if (rc > 0 || strcmp(cua_err_name(rc), "CUA_ERR_UNKNOWN") == 0)
      snprintf(code, sizeof code, "returned %s",
               cua__module_code(rc, "place()", num, sizeof num));
    else
      snprintf(code, sizeof code, "%s", cua_err_name(rc));
    snprintf(msg, len, "policy '%s' failed to place op '%s': %s%s%s", p->name,
             in->name ? in->name : cua_op_kind_name(in->kind), code,
             p->log[0] ? ": " : "", p->log);
    return CUA_ERR_POLICY;
  }
  if (!valid_placement(rt, in, *pl)) {
    /* Named by the first check that failed, in valid_placement()'s order. */
    const char *who = in->name ? in->name : cua_op_kind_name(in->kind);
    int nst = pl->device >= 0 && pl->device < rt->ndev
                  ? rt->devs[pl->device].nstreams
                  : 0;
    char must[64] = "";
    if (in->restrict_device >= 0)
      snprintf(must, sizeof must, "; the op must run on device %d",
               in->restrict_device);
    if (pl->device < 0 || pl->device >= rt->ndev)
      snprintf(msg, len,
               "policy '%s' placed op '%s' on device %d, which does not "
               "exist (the runtime has %d device%s, 0 to %d%s)",
               p->name, who, pl->device, rt->ndev, rt->ndev == 1 ? "" : "s",
               rt->ndev - 1, must);
    else if (pl->stream < 0 || pl->stream >= nst)
      snprintf(msg, len,
               "policy '%s' placed op '%s' on device %d stream %d, which does "
               "not exist (that device has %d stream%s, 0 to %d%s)",
               p->name, who, pl->device, pl->stream, nst, nst == 1 ? "" : "s",
               nst - 1, must);
    else if (pl->node != 0 || pl->reserved != 0)
      snprintf(msg, len,
               "policy '%s' placed op '%s' on node %d (reserved %d), but this "
               "runtime has one node, 0 (and reserved must be 0)",
               p->name, who, pl->node, pl->reserved);
    else
      snprintf(msg, len,
               "policy '%s' placed op '%s' on device %d, but it must run on "
               "device %d (where its buffers live)",
               p->name, who, pl->device, in->restrict_device);
    return CUA_ERR_BAD_PLACEMENT;
  }
  return 0;
}

/* Asks *@p p; when it fails and on_policy_error = fallback, asks
 * single-stream instead, from a blank placement (what the failed policy
 * left in it, a node or a reserved field, must not make the fallback fail
 * too), and sets *@p p to it. The first failure is printed once. */
static int place_or_fall_back(cua_runtime *rt, cua__polinst **p,
                              const cua_op_info *info, cua_placement *pl,
                              char *msg, size_t len) {
  int rc = policy_place(rt, *p, info, pl, msg, len);
  if (rc == 0 || rt->cfg->on_policy_error != CUA__ON_POLICY_ERROR_FALLBACK)
    return rc;
  if (rt->fallback == NULL &&
      cua__polinst_open(rt, "single-stream", &rt->fallback) != 0)
    return rc;
  if (rt->policy_error == NULL) {
    rt->policy_error = cua__strdup(msg);
    fprintf(stderr,
            "cuasync: falling back to single-stream (on_policy_error = "
            "fallback): %s\n",
            msg);
  }
  *p = rt->fallback;
  *pl = (cua_placement){.device = -1, .stream = -1};
  return policy_place(rt, *p, info, pl, msg, len);
}

/* Asks the submission's (or runtime's) policy, then the device's own
 * policy if that device has one. */
int cua__place_ask(cua_runtime *rt, cua__node *n, cua__sub *sub,
                   cua_op_info *info, char *msg, size_t len) {
  if (sub != NULL && sub->on_stream) {
    cua_placement pl = sub->placement;
    if (!valid_placement(rt, info, pl)) {
      char why[96] = "";
      if (info->restrict_device >= 0 && pl.device != info->restrict_device)
        snprintf(why, sizeof why,
                 " (it must run on device %d, where its buffers live)",
                 info->restrict_device);
      snprintf(msg, len,
               "explicit placement device %d stream %d is not valid for op "
               "'%s'%s",
               pl.device, pl.stream, cua__node_name(n), why);
      return CUA_ERR_BAD_PLACEMENT;
    }
    n->pl = pl;
    n->placed_by = NULL;
    return 0;
  }
  cua__polinst *p = cua__sub_policy(rt, sub); /* (not on_stream: above) */
  cua_placement pl = {.device = -1, .stream = -1};
  int rc = place_or_fall_back(rt, &p, info, &pl, msg, len);
  if (rc != 0)
    return rc;
  cua__polinst *dp = rt->devs[pl.device].policy;
  if (dp != NULL && dp != p) {
    cua_op_info in2 = *info;
    in2.restrict_device = pl.device;
    rc = place_or_fall_back(rt, &dp, &in2, &pl, msg, len);
    if (rc != 0)
      return rc;
    p = dp;
  }
  n->pl = pl;
  n->placed_by = p;
  p->refs++;
  return 0;
}

/* A placed node counts in its stream's load (its expected cost and end,
 * from @p now at the earliest) and its policy hears of it (submitted()).
 * Shared by a submission's placement and a graph's capture (capture.c),
 * which puts the loads back afterwards. */
void cua__placed_count(cua_runtime *rt, cua__node *n, const cua_op_info *info,
                       uint64_t now) {
  cua__stream *s = rt->devs[n->pl.device].streams[n->pl.stream];
  n->stream = s;
  s->load.ops_in_flight++;
  s->load.ops_total++;
  n->est_cost = cua__models_attach(rt, n);
  s->load.est_busy_ns += n->est_cost;
  /* Its expected end: after its stream's and its inputs' expected ends. */
  uint64_t start =
      now > s->load.expected_end_ns ? now : s->load.expected_end_ns;
  for (size_t i = 0; i < info->ninputs; i++)
    if (info->inputs[i].expected_end_ns > start)
      start = info->inputs[i].expected_end_ns;
  n->est_end = start + n->est_cost;
  s->load.expected_end_ns = n->est_end;
  cua__polinst *p = n->placed_by;
  if (p != NULL && p->d->submitted) {
    cua_op_info tmp;
    void *buf = NULL;
    const cua_op_info *pin = cua__info_restride(info, sizeof(cua_op_input),
                                                p->d->input_size, &tmp, &buf);
    p->d->submitted(p->state, pin, n->pl);
    free(buf);
  }
  n->state = CUA__NODE_ENQUEUED;
}

/* Tells the observers where @p n was placed, by which policy, and which
 * ops it depends on. */
static void obs_place(cua_runtime *rt, const cua__node *n,
                      const cua_op_info *info, uint64_t now) {
  cua_obs_record o = {.kind = CUA_OBS_PLACE,
                      .t_ns = now,
                      .submission = n->sub_id,
                      .op_id = n->op_id,
                      .device = n->pl.device,
                      .stream = n->pl.stream,
                      .op_kind = n->op->kind,
                      .bytes = n->op->hints.bytes,
                      .cost_ns = n->op->hints.cost_ns,
                      .ninputs_total = (uint32_t)info->ninputs};
  for (size_t i = 0; i < info->ninputs && i < CUA_OBS_MAX_INPUTS; i++)
    o.inputs[o.ninputs++] = info->inputs[i].op_id;
  cua__obs_emit(rt, &o, n->op->hints.name, n->op->hints.tag,
                n->placed_by != NULL ? n->placed_by->name : "explicit");
}

/* A placed node gets its stream's next number, counts in its load, and is
 * queued for launch; its policy hears of it (submitted()). */
static void placed(cua_runtime *rt, cua__node *n, cua__round *r,
                   const cua_op_info *info) {
  /* One clock read per round. */
  if (r->now == 0)
    r->now = cua__rt_now(rt);
  cua__placed_count(rt, n, info, r->now);
  n->seq = ++n->stream->seq;
  if (rt->obs != NULL)
    obs_place(rt, n, info, r->now);
  cua__q_push(&r->launch, n);
  cua__dag_placed(n);
  cua__resolve(rt, n, 0, r);
}

/* Places one device node (or hands it to its pull-mode policy) and gives
 * it its stream's next number. */
void cua__place_one(cua_runtime *rt, cua__node *n, cua__round *r) {
  char msg[CUA__ERRLEN];
  cua__sub *sub = n->nwatchers > 0 ? n->watchers[0] : NULL;
  cua_op_info info;
  cua__op_info(rt, n, &info, 1);
  cua__polinst *pp = cua__pull_policy(rt, sub);
  int rc = pp != NULL ? cua__pull_keep(rt, pp, n, &info, msg, sizeof msg)
                      : cua__place_ask(rt, n, sub, &info, msg, sizeof msg);
  if (rc == 0) {
    if (pp == NULL)
      placed(rt, n, r, &info);
    return;
  }
  cua__fail_node(rt, n, rc, msg);
  cua__dag_placed(n);
  cua__settle_push(r, n);
}

void cua__place_pulled(cua_runtime *rt, cua__node *n, cua__polinst *p,
                       cua_placement where, cua__round *r) {
  cua_op_info info;
  cua__op_info(rt, n, &info, 1);
  if (!valid_placement(rt, &info, where)) {
    char msg[CUA__ERRLEN];
    snprintf(msg, sizeof msg,
             "policy '%s' gave op '%s' to device %d stream %d (pop()), but "
             "it must run on device %d (where its buffers live)",
             p->name, cua__node_name(n), where.device, where.stream,
             info.restrict_device);
    cua__polinst_release(p);
    cua__fail_node(rt, n, CUA_ERR_BAD_PLACEMENT, msg);
    cua__dag_placed(n);
    cua__settle_push(r, n);
    return;
  }
  n->pl = where;
  n->placed_by = p; /* the hold the table had */
  placed(rt, n, r, &info);
}
