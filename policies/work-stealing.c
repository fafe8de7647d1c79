/*
 * policies/work-stealing.c: work stealing, in pull mode (policy ABI 2.1).
 *
 * Parameters ([policy.work-stealing]):
 *   streams          INT, 1..1024, default 4. Streams used on each device.
 *   steal            BOOL, default true. Whether a stream whose own queue
 *                    is empty takes work from another's (false: each
 *                    stream runs only its own queue, for comparison).
 *   default_cost_ns  INT, 0..10^12, default 10000. The work counted for an
 *                    op the performance models know nothing of and without
 *                    a cost hint.
 *
 * One queue per stream. An op, when it is ready (push()), joins the queue
 * of the stream that holds its data: the stream of the op it continues,
 * else that of its input expected to end last; an op with neither joins
 * the queue with the least expected work (queued plus in flight), on a
 * device it may run on. Expected work is the core's performance model
 * (expected_duration), else the cost hint, else default_cost_ns. A stream
 * with room (pop()) takes the oldest op of its own queue; with its own
 * queue empty it steals the newest op, that may run on its device, from
 * the queue with the most expected work. So a stream that drew long ops
 * hands its backlog to those that drew short ones, as they go idle,
 * whatever was guessed when the ops were queued. The op at the head of a
 * queue whose input is still in flight on that queue's stream (the next
 * link of a chain) is not stolen: its stream runs it right after that
 * input, where a thief would wait for the input through an event anyway;
 * the ops behind it (the other children of a fan-out) are.
 *
 * place() (the policy opened nested or for a [device.N] section, where
 * the core cannot wait) puts the op on the stream with the least expected
 * work in flight, keeping the op it continues on its stream on a tie.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const cua_param_spec ws_params[] = {
    {"streams", CUA_PARAM_INT, "4", 1, 1024, NULL,
     "streams used on each device", 0},
    {"steal", CUA_PARAM_BOOL, "true", 0, 0, NULL,
     "a stream with an empty queue takes work from another's", 0},
    {"default_cost_ns", CUA_PARAM_INT, "10000", 0, 1e12, NULL,
     "work counted for an op with no model and no cost hint", 0},
};

typedef struct ws_item {
  uint64_t op_id, est;
  int restrict_device;
  int bound; /* queued behind an input not done on its home stream: at
                the head of its queue, its stream runs it next, right
                after that input, with no wait, where a thief would only
                wait for the input through an event */
} ws_item;

/* A ring: oldest at head. */
typedef struct ws_queue {
  ws_item *v;
  size_t head, n, cap;
  uint64_t work; /* sum of est queued */
} ws_queue;

typedef struct ws_state {
  const cua_policy_host *host;
  int ndev, streams, steal;
  uint64_t default_cost;
  ws_queue *q; /* ndev * streams */
  uint64_t pushed, own, stolen, placed;
} ws_state;

static int ws_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  ws_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  s->streams = (int)params[0].i;
  s->steal = (int)params[1].i;
  s->default_cost = (uint64_t)params[2].i;
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
  s->q = calloc((size_t)s->ndev * (size_t)s->streams, sizeof *s->q);
  if (s->q == NULL) {
    free(s);
    return CUA_ERR_NOMEM;
  }
  *state = s;
  return 0;
}

static void ws_destroy(void *state) {
  ws_state *s = state;
  for (size_t i = 0; i < (size_t)s->ndev * (size_t)s->streams; i++)
    free(s->q[i].v);
  free(s->q);
  free(s);
}

static ws_queue *queue_of(ws_state *s, int dev, int stream) {
  if (dev < 0 || dev >= s->ndev || stream < 0 || stream >= s->streams)
    return NULL;
  return &s->q[(size_t)dev * (size_t)s->streams + (size_t)stream];
}

static int q_push(ws_queue *q, ws_item it) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 16;
    ws_item *v = malloc(cap * sizeof *v);
    if (v == NULL)
      return CUA_ERR_NOMEM;
    for (size_t i = 0; i < q->n; i++)
      v[i] = q->v[(q->head + i) % q->cap];
    free(q->v);
    q->v = v;
    q->head = 0;
    q->cap = cap;
  }
  q->v[(q->head + q->n) % q->cap] = it;
  q->n++;
  q->work += it.est;
  return 0;
}

/* Removes the item @p k places after the head. */
static ws_item q_take(ws_queue *q, size_t k) {
  ws_item it = q->v[(q->head + k) % q->cap];
  if (k == 0) { /* the oldest: no shift */
    q->head = (q->head + 1) % q->cap;
    q->n--;
    q->work -= it.est < q->work ? it.est : q->work;
    return it;
  }
  for (size_t i = k; i + 1 < q->n; i++)
    q->v[(q->head + i) % q->cap] = q->v[(q->head + i + 1) % q->cap];
  q->n--;
  q->work -= it.est < q->work ? it.est : q->work;
  return it;
}

/* Expected work of @p op on @p dev. */
static uint64_t expect(const ws_state *s, const cua_op_info *op, int dev) {
  cua_estimate e = {.size = sizeof e};
  if (s->host->expected_duration(s->host->core, op, dev, &e) == 0 &&
      e.source != CUA_ESTIMATE_NONE)
    return e.ns;
  return op->cost_ns > 0 ? op->cost_ns : s->default_cost;
}

/* Expected work in flight on a stream, as the core counts it. */
static uint64_t in_flight(const ws_state *s, int dev, int stream) {
  cua_stream_load l;
  memset(&l, 0, sizeof l);
  l.size = sizeof l;
  if (s->host->stream_load(s->host->core, dev, stream, &l) != 0)
    return 0;
  return l.est_busy_ns;
}

static int allowed(const cua_op_info *op, int dev) {
  return op->restrict_device < 0 || op->restrict_device == dev;
}

/* The stream whose data @p op continues, if it is one of ours; *bound
 * says an input of @p op on it is not done yet. */
static int home_of(const ws_state *s, const cua_op_info *op, int *dev,
                   int *stream, int *bound) {
  *bound = 0;
  if (queue_of((ws_state *)s, op->then_of.device, op->then_of.stream) != NULL &&
      allowed(op, op->then_of.device)) {
    *dev = op->then_of.device;
    *stream = op->then_of.stream;
    for (size_t k = 0; k < op->ninputs; k++)
      if (op->inputs[k].state == CUA_INPUT_PLACED &&
          op->inputs[k].where.device == *dev &&
          op->inputs[k].where.stream == *stream)
        *bound = 1;
    return 1;
  }
  uint64_t best = 0;
  int found = 0;
  for (size_t k = 0; k < op->ninputs; k++) {
    const cua_op_input *in = &op->inputs[k];
    if (in->state != CUA_INPUT_PLACED ||
        queue_of((ws_state *)s, in->where.device, in->where.stream) == NULL ||
        !allowed(op, in->where.device))
      continue;
    if (!found || in->expected_end_ns > best) {
      best = in->expected_end_ns;
      *dev = in->where.device;
      *stream = in->where.stream;
      found = 1;
    }
  }
  *bound = found;
  return found;
}

/* The stream with the least expected work (queued and in flight) that
 * @p op may run on. */
static int least_work(const ws_state *s, const cua_op_info *op, int queued,
                      int *dev, int *stream) {
  uint64_t best = UINT64_MAX;
  int found = 0;
  for (int d = 0; d < s->ndev; d++) {
    if (!allowed(op, d))
      continue;
    for (int st = 0; st < s->streams; st++) {
      uint64_t w = in_flight(s, d, st);
      if (queued)
        w += s->q[(size_t)d * (size_t)s->streams + (size_t)st].work;
      if (w < best) {
        best = w;
        *dev = d;
        *stream = st;
        found = 1;
      }
    }
  }
  return found;
}

static int ws_push(void *state, const cua_op_info *op) {
  ws_state *s = state;
  int dev = -1, stream = -1, bound = 0;
  if (!home_of(s, op, &dev, &stream, &bound) &&
      !least_work(s, op, 1, &dev, &stream)) {
    s->host->log(s->host->core, CUA_LOG_ERROR,
                 "no stream on device %d for op '%s'", op->restrict_device,
                 op->name ? op->name : "(unnamed)");
    return CUA_ERR_BAD_DEVICE;
  }
  ws_item it = {op->op_id, expect(s, op, dev), op->restrict_device, bound};
  int rc = q_push(queue_of(s, dev, stream), it);
  if (rc == 0)
    s->pushed++;
  return rc;
}

static int ws_pop(void *state, cua_placement where, uint64_t *op_id) {
  ws_state *s = state;
  ws_queue *q = queue_of(s, where.device, where.stream);
  if (q != NULL && q->n > 0) {
    *op_id = q_take(q, 0).op_id;
    s->own++;
    return 1;
  }
  if (!s->steal)
    return 0;
  /* Steal: from the queue with the most expected work, its newest op
   * that may run here and is not the bound head of its queue; failing
   * that, from
   * any queue that has one. */
  ws_queue *victim = NULL;
  for (size_t i = 0; i < (size_t)s->ndev * (size_t)s->streams; i++) {
    ws_queue *v = &s->q[i];
    if (v->n > 0 && v != q && (victim == NULL || v->work > victim->work))
      victim = v;
  }
  for (int pass = 0; pass < 2 && victim != NULL; pass++) {
    for (size_t k = victim->n; k-- > 0;) {
      const ws_item *it = &victim->v[(victim->head + k) % victim->cap];
      if (!(k == 0 && it->bound) &&
          (it->restrict_device < 0 || it->restrict_device == where.device)) {
        *op_id = q_take(victim, k).op_id;
        s->stolen++;
        return 1;
      }
    }
    victim = NULL;
    for (size_t i = 0; i < (size_t)s->ndev * (size_t)s->streams; i++) {
      ws_queue *v = &s->q[i];
      for (size_t k = 0; k < v->n && victim == NULL && v != q; k++) {
        const ws_item *it = &v->v[(v->head + k) % v->cap];
        if (!(k == 0 && it->bound) &&
            (it->restrict_device < 0 || it->restrict_device == where.device))
          victim = v;
      }
      if (victim != NULL)
        break;
    }
  }
  return 0;
}

static int ws_place(void *state, const cua_op_info *op, cua_placement *out) {
  ws_state *s = state;
  int dev = -1, stream = -1;
  if (!least_work(s, op, 0, &dev, &stream)) {
    s->host->log(s->host->core, CUA_LOG_ERROR,
                 "no stream on device %d for op '%s'", op->restrict_device,
                 op->name ? op->name : "(unnamed)");
    return CUA_ERR_BAD_DEVICE;
  }
  /* A tie keeps the op it continues on its stream. */
  if (queue_of(s, op->then_of.device, op->then_of.stream) != NULL &&
      allowed(op, op->then_of.device) &&
      in_flight(s, op->then_of.device, op->then_of.stream) <=
          in_flight(s, dev, stream)) {
    dev = op->then_of.device;
    stream = op->then_of.stream;
  }
  out->device = dev;
  out->stream = stream;
  s->placed++;
  return 0;
}

static void ws_dump(void *state, FILE *out) {
  const ws_state *s = state;
  size_t queued = 0;
  for (size_t i = 0; i < (size_t)s->ndev * (size_t)s->streams; i++)
    queued += s->q[i].n;
  fprintf(out,
          "work-stealing: %d streams per device, steal %s\n"
          "  pushed %" PRIu64 ", run from their own queue %" PRIu64
          ", stolen %" PRIu64 ", placed without queue %" PRIu64
          ", queued now %zu\n",
          s->streams, s->steal ? "on" : "off", s->pushed, s->own, s->stolen,
          s->placed, queued);
}

CUA_POLICY_DEFINE(.name = "work-stealing", .version = "1.0",
                  .description = "a queue per stream, ops pulled as streams "
                                 "have room; idle streams steal",
                  CUA_POLICY_PARAMS(ws_params), .create = ws_create,
                  .destroy = ws_destroy, .place = ws_place, .push = ws_push,
                  .pop = ws_pop, .dump = ws_dump);
