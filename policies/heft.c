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
 * When. submission_begin() asks the models, ranks and orders the ops, and
 * copies what the planner needs of the DAG (valid only during the call);
 * the planner itself (plan_one()) runs in place(), as far along the order
 * as the op asked for: the core places in that order, so each place()
 * mostly plans one op, and the first ops reach their streams without
 * waiting for the whole plan (on two H200s, 1,024 ops took 0.4-0.7 ms to
 * plan). The plan is the same as one made all at once: an op is planned
 * after every op before it in the order, and nothing the planner reads
 * changes in between.
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

/* An op of a plan, by op id: its index in the submission's DAG. */
typedef struct heft_slot {
  uint64_t op_id;
  size_t i;
} heft_slot;

/* An op's device before the planner gets to it. */
#define UNPLANNED (-2)

/* An op and its rank, to sort by decreasing rank (ties: DAG order, inputs
 * first). */
typedef struct ranked {
  uint64_t rank;
  size_t i;
} ranked;

/* The plan of one submission: per DAG index, the device and stream, each
 * UNPLANNED until the planner (plan_one()) gets to it (device -1: a host
 * step, or an op that must run on a device the runtime lacks, which
 * place() decides on the live loads), and the ops by op id for place().
 * The planner's state lives here until every op is planned. */
typedef struct heft_plan {
  uint64_t submission;
  heft_slot *slots; /* sorted by op id */
  size_t n;
  int *pdev, *pstr; /* per DAG index: planned device and stream */
  struct heft_plan *next;
  uint64_t now, span;
  /* The planner's state (planner_free()). */
  size_t cursor;       /* the next op of order[] to plan */
  ranked *order;       /* the order they are planned in */
  uint64_t *finish;    /* per DAG index: planned finish */
  uint64_t *on;        /* n * devices: w(i, d) + remote(i, d) */
  size_t *in_off, *in; /* inputs of op i: in[in_off[i] .. in_off[i + 1]) */
  unsigned char *host; /* per DAG index: a host step */
  int *restrict_dev;   /* per DAG index: cua_dag_op::restrict_device */
  uint64_t *free_at;   /* devices * streams: when each stream is free */
  uint64_t *at_st;     /* devices * streams: the op's readiness */
} heft_plan;

typedef struct heft_state {
  const cua_policy_host *host;
  int ndev, streams;
  uint64_t default_cost;
  double peer_gbps;
  int by_rank; /* order = rank: plan by decreasing upward rank */
  uint64_t wait_ns, device_wait_ns; /* a dependency across streams */
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
  *state = s;
  return 0;
}

/* The planner's state, once every op is planned (or the plan goes). */
static void planner_free(heft_plan *p) {
  free(p->order);
  free(p->finish);
  free(p->on);
  free(p->in_off);
  free(p->in);
  free(p->host);
  free(p->restrict_dev);
  free(p->free_at);
  free(p->at_st);
  p->order = NULL;
  p->in_off = p->in = NULL;
  p->finish = p->on = p->free_at = p->at_st = NULL;
  p->restrict_dev = NULL;
  p->host = NULL;
}

static void plan_free(heft_plan *p) {
  planner_free(p);
  free(p->slots);
  free(p->pdev);
  free(p->pstr);
  free(p);
}

static void heft_destroy(void *state) {
  heft_state *s = state;
  while (s->plans != NULL) {
    heft_plan *p = s->plans;
    s->plans = p->next;
    plan_free(p);
  }
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
static void plan_ready_device(const heft_state *s, const size_t *inputs,
                              size_t ninputs, const uint64_t *finish,
                              const int *pdev, const int *pstr, int dev,
                              uint64_t now, uint64_t *ready) {
  uint64_t base = now, hi = 0, own = 0, other = 0;
  int hs = -1;
  for (size_t k = 0; k < ninputs; k++) {
    size_t j = inputs[k];
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
    for (size_t k = 0; k < ninputs; k++) {
      size_t j = inputs[k];
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

/* Plans the next op of @p p's order: the stream, over the devices it may
 * use, where it would finish first (ties: the stream of its input that
 * finishes last, which saves an event). */
static void plan_one(heft_state *s, heft_plan *p) {
  size_t i = p->order[p->cursor++].i;
  size_t nd = s->ndev > 0 ? (size_t)s->ndev : 1;
  size_t ns = (size_t)s->streams;
  const size_t *inputs = p->in + p->in_off[i];
  size_t ninputs = p->in_off[i + 1] - p->in_off[i];
  uint64_t ready = p->now;
  size_t last = SIZE_MAX; /* the input that finishes last */
  for (size_t k = 0; k < ninputs; k++) {
    size_t j = inputs[k];
    if (p->finish[j] >= ready) {
      ready = p->finish[j];
      last = j;
    }
  }
  p->pdev[i] = p->pstr[i] = -1;
  if (p->host[i]) {
    p->finish[i] = ready;
    return;
  }
  int rd = p->restrict_dev[i];
  int bd = -1, bs = -1;
  uint64_t best = UINT64_MAX;
  /* The streams' readiness for each device it may use. */
  for (int d = 0; d < s->ndev; d++)
    if (rd < 0 || d == rd)
      plan_ready_device(s, inputs, ninputs, p->finish, p->pdev, p->pstr, d,
                        p->now, p->at_st + (size_t)d * ns);
  /* The last input's stream first, so that a tie keeps it. */
  if (last != SIZE_MAX && p->pdev[last] >= 0 &&
      (rd < 0 || rd == p->pdev[last])) {
    bd = p->pdev[last];
    bs = p->pstr[last];
    size_t k = (size_t)bd * ns + (size_t)bs;
    best = (p->free_at[k] > p->at_st[k] ? p->free_at[k] : p->at_st[k]) +
           p->on[i * nd + (size_t)bd];
  }
  for (int d = 0; d < s->ndev; d++) {
    if (rd >= 0 && d != rd)
      continue;
    uint64_t extra = p->on[i * nd + (size_t)d];
    for (size_t st = 0; st < ns; st++) {
      uint64_t f = p->free_at[(size_t)d * ns + st];
      uint64_t at = p->at_st[(size_t)d * ns + st];
      uint64_t end = (f > at ? f : at) + extra;
      if (end < best) {
        best = end;
        bd = d;
        bs = (int)st;
      }
    }
  }
  if (bd < 0)
    return; /* restricted to a device the runtime lacks: core refuses */
  p->finish[i] = best;
  if (best > p->span)
    p->span = best;
  p->pdev[i] = bd;
  p->pstr[i] = bs;
  p->free_at[(size_t)bd * ns + (size_t)bs] = best;
  s->planned++;
}

/* Plans @p p's ops up to DAG op @p i (an op is planned after every op
 * before it in the plan's order, so the plan is the same however far
 * ahead of place() it is made); the planner's state goes once every op is
 * planned. */
static void plan_to(heft_state *s, heft_plan *p, size_t i) {
  while (p->pdev[i] == UNPLANNED && p->cursor < p->n)
    plan_one(s, p);
  if (p->order != NULL && p->cursor == p->n)
    planner_free(p);
}

/* What the planner needs of the DAG, which is only valid during
 * submission_begin(): each op's inputs, whether it is a host step, where
 * it must run, and w(i, d) + remote(i, d) for each device it may use
 * (@p w, w(i, d), becomes p->on). */
static int plan_copy(heft_state *s, heft_plan *p, const cua_dag *dag,
                     uint64_t *w) {
  size_t n = dag->nops, e = 0;
  size_t nd = s->ndev > 0 ? (size_t)s->ndev : 1;
  for (size_t i = 0; i < n; i++)
    e += dag->ops[i].ninputs;
  p->in_off = calloc(n + 1, sizeof *p->in_off);
  p->in = calloc(e ? e : 1, sizeof *p->in);
  p->host = calloc(n, sizeof *p->host);
  p->restrict_dev = calloc(n, sizeof *p->restrict_dev);
  p->on = w;
  if (p->in_off == NULL || p->in == NULL || p->host == NULL ||
      p->restrict_dev == NULL)
    return -1;
  e = 0;
  for (size_t i = 0; i < n; i++) {
    const cua_dag_op *op = &dag->ops[i];
    p->in_off[i] = e;
    if (op->ninputs > 0) /* (a DAG without edges may give inputs NULL) */
      memcpy(p->in + e, op->inputs, op->ninputs * sizeof *op->inputs);
    e += op->ninputs;
    p->host[i] = op->host != 0;
    p->restrict_dev[i] = op->restrict_device;
    if (op->host)
      continue;
    for (int d = 0; d < s->ndev; d++)
      if (op->restrict_device < 0 || d == op->restrict_device)
        p->on[i * nd + (size_t)d] += remote_ns(s, dag, op, d);
  }
  p->in_off[n] = e;
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
  size_t nd = s->ndev > 0 ? (size_t)s->ndev : 1;
  size_t nst = nd * (size_t)s->streams;
  uint64_t *rank = calloc(n, sizeof *rank);
  /* w(i, d), asked of the models once per op and device: the ranks need
   * every device's, the placement each device's again (plan_copy() hands
   * it to the plan). */
  uint64_t *w = calloc(n * nd, sizeof *w);
  heft_plan *plan = calloc(1, sizeof *plan);
  int ok = rank != NULL && w != NULL && plan != NULL;
  if (ok) {
    plan->slots = calloc(n, sizeof *plan->slots);
    plan->order = calloc(n, sizeof *plan->order);
    plan->finish = calloc(n, sizeof *plan->finish);
    plan->pdev = calloc(n, sizeof *plan->pdev);
    plan->pstr = calloc(n, sizeof *plan->pstr);
    plan->free_at = calloc(nst, sizeof *plan->free_at);
    plan->at_st = calloc(nst, sizeof *plan->at_st);
    ok = plan->slots != NULL && plan->order != NULL && plan->finish != NULL &&
         plan->pdev != NULL && plan->pstr != NULL && plan->free_at != NULL &&
         plan->at_st != NULL;
  }
  if (ok) {
    /* Upward ranks: successors come later in the DAG's order. An op that
     * asks the models what the op before it asked (the same kind, name,
     * tag and hints: a DAG's tasks mostly do) gets the same answers,
     * which cannot change while the core plans (under its lock). */
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
        plan->order[i].rank = rank[i];
        plan->order[i].i = i;
      }
      qsort(plan->order, n, sizeof *plan->order, cmp_rank);
    } else {
      ok = placement_order(dag, plan->order) == 0;
    }
  }
  if (ok) {
    ok = plan_copy(s, plan, dag, w) == 0;
    w = NULL; /* the plan's now */
  }
  if (!ok) {
    /* Without a plan, place() decides on the live loads. */
    s->host->log(s->host->core, CUA_LOG_WARN,
                 "out of memory planning submission %" PRIu64, dag->submission);
    if (plan != NULL)
      plan_free(plan);
    goto out;
  }

  /* Streams are free at their expected end, or now. */
  plan->now = plan->span = s->host->now_ns(s->host->core);
  for (int d = 0; d < s->ndev; d++)
    for (int st = 0; st < s->streams; st++) {
      cua_stream_load l;
      memset(&l, 0, sizeof l);
      l.size = sizeof l;
      uint64_t at = plan->now;
      if (s->host->stream_load(s->host->core, d, st, &l) == 0 &&
          l.expected_end_ns > at)
        at = l.expected_end_ns;
      plan->free_at[(size_t)d * (size_t)s->streams + (size_t)st] = at;
    }

  /* The ops by op id, for place()'s binary search, each unplanned.
   * Today's core numbers a DAG's ops in its order, so they come sorted;
   * they are sorted here only if they do not. */
  int sorted = 1;
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && dag->ops[i - 1].op_id >= dag->ops[i].op_id)
      sorted = 0;
    plan->slots[i].op_id = dag->ops[i].op_id;
    plan->slots[i].i = i;
    plan->pdev[i] = UNPLANNED;
  }
  if (!sorted)
    qsort(plan->slots, n, sizeof *plan->slots, cmp_slot);
  plan->n = n;
  plan->submission = dag->submission;
  plan->next = s->plans;
  s->plans = plan;
  s->dags++;

out:
  free(w);
  free(rank);
}

static void heft_end(void *state, uint64_t submission) {
  heft_state *s = state;
  for (heft_plan **pp = &s->plans; *pp != NULL; pp = &(*pp)->next)
    if ((*pp)->submission == submission) {
      heft_plan *p = *pp;
      /* (Of what it planned: ops never asked for, host steps last in the
       * order or failed ones, may leave the planner unfinished.) */
      s->last_span = p->span - p->now;
      *pp = p->next;
      plan_free(p);
      return;
    }
}

/* Where @p op's submission's plan puts it, into *@p out, planned now if
 * it was not yet: 1, or 0 when no plan places it. */
static int planned(heft_state *s, const cua_op_info *op, cua_placement *out) {
  for (heft_plan *p = s->plans; p != NULL; p = p->next) {
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
    if (lo == p->n || p->slots[lo].op_id != op->op_id)
      return 0;
    size_t i = p->slots[lo].i;
    plan_to(s, p, i);
    out->device = p->pdev[i];
    out->stream = p->pstr[i];
    return out->device >= 0;
  }
  return 0;
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
  cua_placement pl;
  if (planned(s, op, &pl) &&
      (op->restrict_device < 0 || op->restrict_device == pl.device)) {
    out->device = pl.device;
    out->stream = pl.stream;
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
