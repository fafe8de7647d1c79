/*
 * policies/heft.c: HEFT, list scheduling of the whole DAG of a submission
 * (Topcuoglu, Hariri and Wu, "Performance-effective and low-complexity task
 * scheduling for heterogeneous computing", IEEE TPDS 13(3), 2002).
 *
 * Parameters ([policy.heft]):
 *   streams          INT, 1..1024, default 4. Streams used on each device.
 *   default_cost_ns  INT, 0..10^12, default 10000. The duration assumed for
 *                    an op the performance models know nothing of and
 *                    without a cost hint.
 *   peer_gbps        DOUBLE, 0.001..10^6, default 25. Bytes per nanosecond
 *                    (GB/s) at which an op reads or writes a buffer that
 *                    lives on another device than its own, for pairs of
 *                    devices the transfer model has not measured.
 *   order            ENUM placement|rank, default placement (below).
 *   wait_ns          INT, 0..10^9, default 5000. What a dependency between
 *                    two streams of one device adds to the consumer's start
 *                    (an event recorded on one stream, waited for on the
 *                    other).
 *   device_wait_ns   INT, 0..10^9, default 20000. The same between streams
 *                    of two devices.
 *
 * How it plans. submission_begin() gets the DAG (policy ABI 2.0). Each op
 * i gets a cost w(i, d) on each device d: the core's performance model
 * (cua_policy_host::expected_duration, measured durations kept between
 * runs), else its cost hint, else default_cost_ns (host steps 0); and an
 * upward rank: rank(i) = mean over devices of w(i, d) + the largest rank
 * of its successors, the length of the longest path from it to the DAG's
 * end. Taking ops by decreasing rank (a topological order), each op goes
 * to the stream, over the devices it may use, where it would finish first:
 *   finish = max(stream free, inputs' finish + wait) + w(i, d) + remote(i, d)
 * where wait is 0 for an input on the same stream (a stream runs its ops in
 * order), wait_ns for one on another stream of the device and
 * device_wait_ns for one on another device: HEFT's communication cost
 * between processors. Without it, two identical devices whose measured
 * durations differ by noise pull every op to the device measured faster,
 * and independent chains get interleaved on its streams.
 * where remote is the transfer model's time (expected_transfer) for the
 * bytes of its buffers on other devices, or those bytes over peer_gbps
 * (data stays where its buffer lives in cuasync: an op on another device
 * reaches it across the link). Ties keep the stream of the
 * input that finishes last, which saves an event. A stream is free, at
 * first, at its expected end as the core counts it (work placed earlier,
 * from cost hints). The plan is kept until submission_end().
 *
 * place() then answers from the plan. An op not in a plan (a policy opened
 * as a [device.N] or nested policy gets no DAG, and a submission of one op
 * gets no plan) is placed the same way, on the live loads: the stream
 * whose expected end, with the op's inputs' expected ends, lets it finish
 * first.
 *
 * Cost: O((V + E) * D + V * D * S) per submission for V ops, E edges, D
 * devices and S streams (an op's inputs are read once per device, not
 * once per candidate stream), and a binary search per place().
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const cua_param_spec heft_params[] = {
    {"streams", CUA_PARAM_INT, "4", 1, 1024, NULL,
     "streams used on each device", 0},
    {"default_cost_ns", CUA_PARAM_INT, "10000", 0, 1e12, NULL,
     "duration assumed for an op without a cost hint", 0},
    {"peer_gbps", CUA_PARAM_DOUBLE, "25", 0.001, 1e6, NULL,
     "GB/s at which an op reaches a buffer on another device", 0},
    {"order", CUA_PARAM_ENUM, "placement", 0, 0, "placement|rank",
     "plan the ops in the order the core places them, or by decreasing "
     "upward rank (textbook HEFT)",
     0},
    {"wait_ns", CUA_PARAM_INT, "5000", 0, 1e9, NULL,
     "time a dependency between two streams of one device adds", 0},
    {"device_wait_ns", CUA_PARAM_INT, "20000", 0, 1e9, NULL,
     "time a dependency between streams of two devices adds", 0},
};

/* One op's place in a plan. */
typedef struct heft_slot {
  uint64_t op_id;
  int device, stream;
} heft_slot;

/* The plan of one submission, sorted by op id. */
typedef struct heft_plan {
  uint64_t submission;
  heft_slot *slots;
  size_t n;
  struct heft_plan *next;
} heft_plan;

typedef struct heft_state {
  const cua_policy_host *host;
  int ndev, streams;
  uint64_t default_cost;
  double peer_gbps;
  int by_rank; /* order = rank: plan by decreasing upward rank */
  uint64_t wait_ns, device_wait_ns; /* a dependency across streams */
  uint64_t *free_at;                /* ndev * streams: the planner's scratch */
  heft_plan *plans;                 /* open submissions */
  /* For dump(). */
  uint64_t planned, from_plan, live, dags, last_span;
} heft_state;

static int heft_create(const cua_policy_host *host,
                       const cua_param_value *params, void **state) {
  heft_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  s->streams = (int)params[0].i;
  s->default_cost = (uint64_t)params[1].i;
  s->peer_gbps = params[2].d;
  s->by_rank = params[3].i == 1;
  s->wait_ns = (uint64_t)params[4].i;
  s->device_wait_ns = (uint64_t)params[5].i;
  s->ndev = host->device_count(host->core);
  for (int d = 0; d < s->ndev; d++) {
    int rc = host->ensure_streams(host->core, d, s->streams);
    if (rc != 0) {
      host->log(host->core, CUA_LOG_ERROR, "cannot get %d streams on device %d",
                s->streams, d);
      free(s);
      return rc;
    }
  }
  s->free_at = calloc((size_t)s->ndev * (size_t)s->streams, sizeof *s->free_at);
  if (s->free_at == NULL) {
    free(s);
    return CUA_ERR_NOMEM;
  }
  *state = s;
  return 0;
}

static void plan_free(heft_plan *p) {
  free(p->slots);
  free(p);
}

static void heft_destroy(void *state) {
  heft_state *s = state;
  while (s->plans != NULL) {
    heft_plan *p = s->plans;
    s->plans = p->next;
    plan_free(p);
  }
  free(s->free_at);
  free(s);
}

/* The time @p op would spend reaching buffers on devices other than
 * @p dev. */
static uint64_t remote_ns(const heft_state *s, const cua_dag *dag,
                          const cua_dag_op *op, int dev) {
  uint64_t ns = 0;
  for (size_t k = 0; k < op->nbuffers; k++) {
    const cua_dag_buffer *b = &dag->buffers[op->buffers[k]];
    if (b->device == dev)
      continue;
    cua_estimate e = {.size = sizeof e};
    if (s->host->expected_transfer(s->host->core, b->device, dev, b->bytes,
                                   &e) == 0 &&
        e.source != CUA_ESTIMATE_NONE)
      ns += e.ns;
    else
      ns += (uint64_t)((double)b->bytes / s->peer_gbps);
  }
  return ns;
}

/* What @p in is expected to take on @p dev. */
static uint64_t expect(const heft_state *s, const cua_op_info *in, int dev) {
  cua_estimate e = {.size = sizeof e};
  if (s->host->expected_duration(s->host->core, in, dev, &e) == 0 &&
      (e.source == CUA_ESTIMATE_HISTORY || e.source == CUA_ESTIMATE_REGRESSION))
    return e.ns;
  return in->cost_ns > 0 ? in->cost_ns : s->default_cost;
}

/* w(i, d) of the plan for every device d into @p w (0 for a host step);
 * returns their mean, what the upward rank counts. */
static uint64_t costs_of(const heft_state *s, const cua_dag_op *op,
                         uint64_t *w) {
  if (op->host)
    return 0;
  cua_op_info in = {.size = sizeof in,
                    .kind = op->kind,
                    .name = op->name,
                    .tag = op->tag,
                    .cost_ns = op->cost_ns,
                    .bytes = op->bytes};
  double sum = 0;
  for (int d = 0; d < s->ndev; d++) {
    w[d] = expect(s, &in, d);
    sum += (double)w[d];
  }
  return s->ndev > 0 ? (uint64_t)(sum / s->ndev) : 0;
}

static int same_str(const char *a, const char *b) {
  return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Whether costs_of() would ask the models the same of @p a and @p b. */
static int same_costs(const cua_dag_op *a, const cua_dag_op *b) {
  return a->host == b->host && a->kind == b->kind && a->cost_ns == b->cost_ns &&
         a->bytes == b->bytes && same_str(a->name, b->name) &&
         same_str(a->tag, b->tag);
}

/* What a dependency on an op placed on (@p from_dev, @p from_str) adds
 * for an op on (@p dev, @p str): nothing on the same stream, which runs
 * its ops in order; else an event recorded and waited for. */
static uint64_t wait_cost(const heft_state *s, int from_dev, int from_str,
                          int dev, int str) {
  if (from_dev < 0 || (from_dev == dev && from_str == str))
    return 0;
  return from_dev == dev ? s->wait_ns : s->device_wait_ns;
}

/* When the inputs of @p op in the plan are ready for each stream of device
 * @p dev, into ready[stream]: the last of their finishes, each with its
 * wait_cost() (and @p now at the earliest), in O(inputs + streams). An
 * input on another device (or none: a host step) adds its wait to every
 * stream alike; one on this device adds wait_ns on every stream but its
 * own. So a stream's readiness is the largest of: what the other devices'
 * inputs give (@c base), and what this device's give, which is their
 * largest finish + wait_ns (@c hi, from an input on stream @c hs) on any
 * stream but @c hs, and on @c hs the larger of its own inputs' finishes
 * and the other streams' largest finish + wait_ns. */
static void plan_ready_device(const heft_state *s, const cua_dag_op *op,
                              const uint64_t *finish, const int *pdev,
                              const int *pstr, int dev, uint64_t now,
                              uint64_t *ready) {
  uint64_t base = now, hi = 0, own = 0, other = 0;
  int hs = -1;
  for (size_t k = 0; k < op->ninputs; k++) {
    size_t j = op->inputs[k];
    if (pdev[j] != dev) {
      uint64_t t = finish[j] + (pdev[j] < 0 ? 0 : s->device_wait_ns);
      if (t > base)
        base = t;
    } else if (hs < 0 || finish[j] + s->wait_ns > hi) {
      hi = finish[j] + s->wait_ns;
      hs = pstr[j];
    }
  }
  if (hs >= 0)
    for (size_t k = 0; k < op->ninputs; k++) {
      size_t j = op->inputs[k];
      if (pdev[j] != dev)
        continue;
      if (pstr[j] == hs) {
        if (finish[j] > own)
          own = finish[j];
      } else if (finish[j] + s->wait_ns > other) {
        other = finish[j] + s->wait_ns;
      }
    }
  for (int st = 0; st < s->streams; st++) {
    uint64_t r = base;
    uint64_t mine = st == hs ? (own > other ? own : other) : hs >= 0 ? hi : 0;
    ready[st] = mine > r ? mine : r;
  }
}

static int cmp_slot(const void *a, const void *b) {
  uint64_t x = ((const heft_slot *)a)->op_id, y = ((const heft_slot *)b)->op_id;
  return x < y ? -1 : x > y;
}

/* An op and its rank, to sort by decreasing rank (ties: DAG order, inputs
 * first). */
typedef struct ranked {
  uint64_t rank;
  size_t i;
} ranked;

static int cmp_rank(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank > y->rank ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

/* Whether DAG op @p a is placed before op @p b when both are placeable:
 * by level, then in the DAG's order (policy.h). */
static int placed_before(const cua_dag *dag, size_t a, size_t b) {
  uint32_t la = dag->ops[a].level, lb = dag->ops[b].level;
  return la != lb ? la < lb : a < b;
}

/* How far behind its place an op that becomes placeable late may still be
 * put in it (policy.h: 64). */
#define PLACE_ORDER_MAX 64

/* Queues op @p i among the placeable ones, order[@p head, *@p tail), where
 * the core would: after the others unless it goes before the last, and
 * then at its place if that is within PLACE_ORDER_MAX of the head. */
static void order_push(const cua_dag *dag, ranked *order, size_t head,
                       size_t *tail, size_t i) {
  size_t at = *tail;
  if (at > head && placed_before(dag, i, order[at - 1].i)) {
    size_t k = head;
    while (k < *tail && k - head <= PLACE_ORDER_MAX &&
           !placed_before(dag, i, order[k].i))
      k++;
    if (k - head <= PLACE_ORDER_MAX) {
      memmove(&order[k + 1], &order[k], (*tail - k) * sizeof *order);
      at = k;
    }
  }
  order[at].i = i;
  (*tail)++;
}

/* The order in which the core will place the ops (policy.h): breadth-first,
 * by level and then in the DAG's order, as they become placeable, from the
 * ops with no input. A stream runs its ops in the order they are placed, so
 * a plan made in this order is the one the streams will follow. */
static int placement_order(const cua_dag *dag, ranked *order) {
  size_t n = dag->nops, head = 0, tail = 0;
  size_t *left = calloc(n ? n : 1, sizeof *left);
  if (left == NULL)
    return -1;
  for (size_t i = 0; i < n; i++) {
    left[i] = dag->ops[i].ninputs;
    if (left[i] == 0)
      order_push(dag, order, head, &tail, i);
  }
  while (head < tail) {
    const cua_dag_op *op = &dag->ops[order[head++].i];
    for (size_t k = 0; k < op->nsuccessors; k++)
      if (--left[op->successors[k]] == 0)
        order_push(dag, order, head, &tail, op->successors[k]);
  }
  free(left);
  return 0;
}

static void heft_begin(void *state, const cua_dag *dag) {
  heft_state *s = state;
  size_t n = dag->nops;
  /* One op has nothing to rank: place() decides it on the live loads,
   * which also see its inputs of earlier submissions (a plan sees only
   * the submission's own), and a submission of one task costs no plan. */
  if (n <= 1)
    return;
  uint64_t *rank = calloc(n, sizeof *rank);
  uint64_t *finish = calloc(n, sizeof *finish);
  ranked *order = calloc(n, sizeof *order);
  heft_plan *plan = calloc(1, sizeof *plan);
  heft_slot *slots = calloc(n, sizeof *slots);
  int *pdev = calloc(n, sizeof *pdev), *pstr = calloc(n, sizeof *pstr);
  /* w(i, d), asked of the models once per op and device: the ranks need
   * every device's, the placement each device's again; then, in the same
   * block, on[d]: the op being placed on device d, its remote reads
   * included. */
  size_t nd = s->ndev > 0 ? (size_t)s->ndev : 1;
  uint64_t *w = calloc((n + 1) * nd, sizeof *w);
  uint64_t *on = w != NULL ? w + n * nd : NULL;
  /* Each stream's readiness for the op being placed, by device. */
  uint64_t *at_st = calloc(nd * (size_t)s->streams, sizeof *at_st);
  if (rank == NULL || finish == NULL || order == NULL || plan == NULL ||
      slots == NULL || pdev == NULL || pstr == NULL || w == NULL ||
      at_st == NULL) {
    /* Without a plan, place() decides on the live loads. */
    s->host->log(s->host->core, CUA_LOG_WARN,
                 "out of memory planning submission %" PRIu64, dag->submission);
    free(plan);
    free(slots);
    goto out;
  }
  /* Upward ranks: successors come later in the DAG's order. An op that
   * asks the models what the op before it asked (the same kind, name,
   * tag and hints: a DAG's tasks mostly do) gets the same answers, which
   * cannot change while the core plans (under its lock). */
  const cua_dag_op *prev = NULL;
  uint64_t prev_mean = 0;
  for (size_t i = n; i-- > 0;) {
    const cua_dag_op *op = &dag->ops[i];
    uint64_t best = 0;
    for (size_t k = 0; k < op->nsuccessors; k++)
      if (rank[op->successors[k]] > best)
        best = rank[op->successors[k]];
    if (prev != NULL && same_costs(prev, op)) {
      memcpy(w + i * nd, w + (size_t)(prev - dag->ops) * nd, nd * sizeof *w);
    } else {
      prev_mean = costs_of(s, op, w + i * nd);
      prev = op;
    }
    rank[i] = prev_mean + best;
  }
  if (s->by_rank) {
    for (size_t i = 0; i < n; i++) {
      order[i].rank = rank[i];
      order[i].i = i;
    }
    qsort(order, n, sizeof *order, cmp_rank);
  } else if (placement_order(dag, order) != 0) {
    s->host->log(s->host->core, CUA_LOG_WARN,
                 "out of memory planning submission %" PRIu64, dag->submission);
    free(plan);
    free(slots);
    goto out;
  }

  /* Streams are free at their expected end, or now. */
  uint64_t now = s->host->now_ns(s->host->core), span = now;
  for (int d = 0; d < s->ndev; d++)
    for (int st = 0; st < s->streams; st++) {
      cua_stream_load l;
      memset(&l, 0, sizeof l);
      l.size = sizeof l;
      uint64_t at = now;
      if (s->host->stream_load(s->host->core, d, st, &l) == 0 &&
          l.expected_end_ns > at)
        at = l.expected_end_ns;
      s->free_at[(size_t)d * (size_t)s->streams + (size_t)st] = at;
    }

  size_t nslots = 0;
  for (size_t r = 0; r < n; r++) {
    size_t i = order[r].i;
    const cua_dag_op *op = &dag->ops[i];
    uint64_t ready = now;
    size_t last = SIZE_MAX; /* the input that finishes last */
    for (size_t k = 0; k < op->ninputs; k++) {
      size_t j = op->inputs[k];
      if (finish[j] >= ready) {
        ready = finish[j];
        last = j;
      }
    }
    pdev[i] = pstr[i] = -1;
    if (op->host) {
      finish[i] = ready;
      continue;
    }
    int bd = -1, bs = -1;
    uint64_t best = UINT64_MAX;
    /* on[d] and the streams' readiness for each device it may use. */
    for (int d = 0; d < s->ndev; d++)
      if (op->restrict_device < 0 || d == op->restrict_device) {
        on[d] = w[i * nd + (size_t)d] + remote_ns(s, dag, op, d);
        plan_ready_device(s, op, finish, pdev, pstr, d, now,
                          at_st + (size_t)d * (size_t)s->streams);
      }
    /* The last input's stream first, so that a tie keeps it. */
    if (last != SIZE_MAX && pdev[last] >= 0 &&
        (op->restrict_device < 0 || op->restrict_device == pdev[last])) {
      bd = pdev[last];
      bs = pstr[last];
      size_t k = (size_t)bd * (size_t)s->streams + (size_t)bs;
      best = (s->free_at[k] > at_st[k] ? s->free_at[k] : at_st[k]) + on[bd];
    }
    for (int d = 0; d < s->ndev; d++) {
      if (op->restrict_device >= 0 && d != op->restrict_device)
        continue;
      uint64_t extra = on[d];
      for (int st = 0; st < s->streams; st++) {
        uint64_t f = s->free_at[(size_t)d * (size_t)s->streams + (size_t)st];
        uint64_t at = at_st[(size_t)d * (size_t)s->streams + (size_t)st];
        uint64_t end = (f > at ? f : at) + extra;
        if (end < best) {
          best = end;
          bd = d;
          bs = st;
        }
      }
    }
    if (bd < 0)
      continue; /* restricted to a device the runtime lacks: core refuses */
    finish[i] = best;
    if (best > span)
      span = best;
    pdev[i] = bd;
    pstr[i] = bs;
    s->free_at[(size_t)bd * (size_t)s->streams + (size_t)bs] = best;
  }
  /* The slots by op id, for place()'s binary search. Today's core numbers
   * a DAG's ops in its order, so they come sorted; they are sorted here
   * only if they do not. */
  int sorted = 1;
  for (size_t i = 0; i < n; i++) {
    if (pdev[i] < 0)
      continue;
    if (nslots > 0 && slots[nslots - 1].op_id >= dag->ops[i].op_id)
      sorted = 0;
    slots[nslots].op_id = dag->ops[i].op_id;
    slots[nslots].device = pdev[i];
    slots[nslots].stream = pstr[i];
    nslots++;
  }
  if (!sorted)
    qsort(slots, nslots, sizeof *slots, cmp_slot);
  plan->submission = dag->submission;
  plan->slots = slots;
  plan->n = nslots;
  plan->next = s->plans;
  s->plans = plan;
  s->planned += nslots;
  s->dags++;
  s->last_span = span - now;

out:
  free(at_st);
  free(w);
  free(rank);
  free(finish);
  free(order);
  free(pdev);
  free(pstr);
}

static void heft_end(void *state, uint64_t submission) {
  heft_state *s = state;
  for (heft_plan **pp = &s->plans; *pp != NULL; pp = &(*pp)->next)
    if ((*pp)->submission == submission) {
      heft_plan *p = *pp;
      *pp = p->next;
      plan_free(p);
      return;
    }
}

static const heft_slot *planned(const heft_state *s, const cua_op_info *op) {
  for (const heft_plan *p = s->plans; p != NULL; p = p->next) {
    if (p->submission != op->submission)
      continue;
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (p->slots[mid].op_id < op->op_id)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < p->n && p->slots[lo].op_id == op->op_id ? &p->slots[lo] : NULL;
  }
  return NULL;
}

/* When the inputs of @p op are ready for stream (@p dev, @p str), on the
 * live loads: the last of their expected ends, each placed one with its
 * wait_cost() (a done one or a host step waits for nothing). */
static uint64_t live_ready(const heft_state *s, const cua_op_info *op, int dev,
                           int str) {
  uint64_t ready = 0;
  for (size_t k = 0; k < op->ninputs; k++) {
    const cua_op_input *in = &op->inputs[k];
    uint64_t t = in->expected_end_ns;
    if (in->state == CUA_INPUT_PLACED)
      t += wait_cost(s, in->where.device, in->where.stream, dev, str);
    if (t > ready)
      ready = t;
  }
  return ready;
}

static int heft_place(void *state, const cua_op_info *op, cua_placement *out) {
  heft_state *s = state;
  const heft_slot *sl = planned(s, op);
  if (sl != NULL &&
      (op->restrict_device < 0 || op->restrict_device == sl->device)) {
    out->device = sl->device;
    out->stream = sl->stream;
    s->from_plan++;
    return 0;
  }
  /* On the live loads: the stream where it would finish first. */
  int bd = -1, bs = -1;
  uint64_t best = UINT64_MAX;
  if (op->then_of.device >= 0 && op->then_of.stream < s->streams &&
      op->then_of.device < s->ndev &&
      (op->restrict_device < 0 || op->restrict_device == op->then_of.device)) {
    cua_stream_load l;
    memset(&l, 0, sizeof l);
    l.size = sizeof l;
    if (s->host->stream_load(s->host->core, op->then_of.device,
                             op->then_of.stream, &l) == 0) {
      bd = op->then_of.device;
      bs = op->then_of.stream;
      uint64_t ready = live_ready(s, op, bd, bs);
      best = (l.expected_end_ns > ready ? l.expected_end_ns : ready) +
             expect(s, op, bd);
    }
  }
  for (int d = 0; d < s->ndev; d++) {
    if (op->restrict_device >= 0 && d != op->restrict_device)
      continue;
    uint64_t cost = expect(s, op, d), remote = 0;
    if (op->data_device >= 0 && op->data_device != d) {
      cua_estimate e = {.size = sizeof e};
      remote = s->host->expected_transfer(s->host->core, op->data_device, d,
                                          op->bytes, &e) == 0 &&
                       e.source != CUA_ESTIMATE_NONE
                   ? e.ns
                   : (uint64_t)((double)op->bytes / s->peer_gbps);
    }
    for (int st = 0; st < s->streams; st++) {
      cua_stream_load l;
      memset(&l, 0, sizeof l);
      l.size = sizeof l;
      if (s->host->stream_load(s->host->core, d, st, &l) != 0)
        continue;
      uint64_t ready = live_ready(s, op, d, st);
      uint64_t end = (l.expected_end_ns > ready ? l.expected_end_ns : ready) +
                     cost + remote;
      if (end < best) {
        best = end;
        bd = d;
        bs = st;
      }
    }
  }
  if (bd < 0) {
    s->host->log(s->host->core, CUA_LOG_ERROR,
                 "no stream on device %d for op '%s'", op->restrict_device,
                 op->name ? op->name : "(unnamed)");
    return CUA_ERR_BAD_DEVICE;
  }
  out->device = bd;
  out->stream = bs;
  s->live++;
  return 0;
}

static void heft_dump(void *state, FILE *out) {
  const heft_state *s = state;
  size_t open = 0;
  for (const heft_plan *p = s->plans; p != NULL; p = p->next)
    open++;
  fprintf(out,
          "heft: %d streams per device, default cost %" PRIu64
          " ns, peer %.3g GB/s, waits %" PRIu64 " ns (one device) and %" PRIu64
          " ns (two)\n"
          "  DAGs planned %" PRIu64 " (open %zu), ops planned %" PRIu64
          ", placed from a plan %" PRIu64 ", on live loads %" PRIu64 "\n"
          "  last plan's span %" PRIu64 " ns\n",
          s->streams, s->default_cost, s->peer_gbps, s->wait_ns,
          s->device_wait_ns, s->dags, open, s->planned, s->from_plan, s->live,
          s->last_span);
}

CUA_POLICY_DEFINE(.name = "heft", .version = "1.1",
                  .description = "HEFT: the whole DAG list-scheduled by "
                                 "upward rank, each op where it finishes "
                                 "first",
                  CUA_POLICY_PARAMS(heft_params), .create = heft_create,
                  .destroy = heft_destroy, .place = heft_place,
                  .dump = heft_dump, .submission_begin = heft_begin,
                  .submission_end = heft_end);
