/*
 * policies/dmda.c: dmda, dynamic earliest finish with data-transfer cost
 * and the core's performance models (StarPU's "deque model data aware",
 * in its push form).
 *
 * Parameters ([policy.dmda]):
 *   streams          INT, 1..1024, default 4. Streams used on each device.
 *   default_cost_ns  INT, 0..10^12, default 10000. The duration assumed for
 *                    an op the models know nothing of and with no cost hint.
 *   peer_gbps        DOUBLE, 0.001..10^6, default 25. GB/s at which an op
 *                    reaches buffers on another device than its own, until
 *                    the transfer model has measured that pair.
 *   wait_ns          INT, 0..10^9, default 5000. What a dependency on an op
 *                    of another stream of the device adds to the start (an
 *                    event recorded there and waited for).
 *   device_wait_ns   INT, 0..10^9, default 20000. The same for an op on
 *                    another device.
 *
 * Each op, as it is placed, goes to the stream (over the devices it may
 * use) where it would finish first:
 *   finish = max(now, stream free, inputs' expected ends + wait)
 *            + expected duration on that device + transfer
 * where wait is 0 for an input placed on that stream (a stream runs its
 * ops in order) or done, wait_ns for one on another stream of the device,
 * device_wait_ns for one on another device. Without it, devices whose
 * measured durations differ by noise pull ops from the stream of the op
 * they continue to the device measured faster.
 * The expected duration is the core's performance model
 * (cua_policy_host::expected_duration: measured durations per kind, name,
 * tag, cost-hint bucket, size bucket and device, kept between runs), which
 * falls back to the op's cost hint; with neither, default_cost_ns. The
 * transfer, when the op's data lives on another device, is the transfer
 * model's (expected_transfer) once it has measured that pair of devices,
 * else the bytes hint over peer_gbps. A tie keeps the stream of the op it
 * continues. The policy keeps each stream's expected free time itself: an
 * op placed pushes it by the op's expectation, and each completion
 * corrects it by what the op really took (CUA_POLICY_WANTS_TIMING; an idle
 * stream is free now).
 *
 * Unlike heft, it needs no view of the whole DAG: it decides op by op, so
 * it fits submissions of one task each as well as whole DAGs.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const cua_param_spec dm_params[] = {
    {"streams", CUA_PARAM_INT, "4", 1, 1024, NULL,
     "streams used on each device", 0},
    {"default_cost_ns", CUA_PARAM_INT, "10000", 0, 1e12, NULL,
     "duration assumed with no history and no cost hint", 0},
    {"peer_gbps", CUA_PARAM_DOUBLE, "25", 0.001, 1e6, NULL,
     "GB/s to another device's buffers until the transfer model knows", 0},
    {"wait_ns", CUA_PARAM_INT, "5000", 0, 1e9, NULL,
     "time a dependency between two streams of one device adds", 0},
    {"device_wait_ns", CUA_PARAM_INT, "20000", 0, 1e9, NULL,
     "time a dependency between streams of two devices adds", 0},
};

/* An op in flight on a stream, oldest first. */
typedef struct dm_flight {
  uint64_t op_id, est;
  uint64_t end; /* its expected end, as this policy counts */
} dm_flight;

typedef struct dm_stream {
  uint64_t free_at; /* expected free time (now_ns() clock) */
  dm_flight *q;     /* ring of ops in flight */
  size_t head, n, cap;
} dm_stream;

typedef struct dm_state {
  const cua_policy_host *host;
  int ndev, streams;
  uint64_t default_cost;
  double peer_gbps;
  uint64_t wait_ns, device_wait_ns; /* a dependency across streams */
  dm_stream *st;                    /* ndev * streams */
  /* For dump(). */
  uint64_t placed, from_model, from_hint, measured;
} dm_state;

static int dm_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  dm_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  s->streams = (int)params[0].i;
  s->default_cost = (uint64_t)params[1].i;
  s->peer_gbps = params[2].d;
  s->wait_ns = (uint64_t)params[3].i;
  s->device_wait_ns = (uint64_t)params[4].i;
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
  s->st = calloc((size_t)s->ndev * (size_t)s->streams, sizeof *s->st);
  if (s->st == NULL) {
    free(s);
    return CUA_ERR_NOMEM;
  }
  *state = s;
  return 0;
}

static void dm_destroy(void *state) {
  dm_state *s = state;
  for (size_t i = 0; i < (size_t)s->ndev * (size_t)s->streams; i++)
    free(s->st[i].q);
  free(s->st);
  free(s);
}

/* What @p op is expected to take on @p dev: *from is 1 when the core's
 * models measured it, 2 for a hint or the default, 0 for no work. */
static uint64_t expect(dm_state *s, const cua_op_info *op, int dev, int *from) {
  if (op->kind == CUA_OP_BARRIER || op->kind == CUA_OP_WAIT_NATIVE ||
      op->kind == CUA_OP_ALLOC || op->kind == CUA_OP_FREE) {
    *from = 0;
    return 0;
  }
  cua_estimate e = {.size = sizeof e};
  if (s->host->expected_duration(s->host->core, op, dev, &e) == 0 &&
      (e.source == CUA_ESTIMATE_HISTORY ||
       e.source == CUA_ESTIMATE_REGRESSION)) {
    *from = 1;
    return e.ns;
  }
  *from = 2;
  return op->cost_ns > 0 ? op->cost_ns : s->default_cost;
}

/* Reaching @p op's data from @p dev. */
static uint64_t transfer(dm_state *s, const cua_op_info *op, int dev) {
  if (op->data_device < 0 || op->data_device == dev)
    return 0;
  cua_estimate e = {.size = sizeof e};
  if (s->host->expected_transfer(s->host->core, op->data_device, dev, op->bytes,
                                 &e) == 0 &&
      e.source != CUA_ESTIMATE_NONE)
    return e.ns;
  return (uint64_t)((double)op->bytes / s->peer_gbps);
}

static dm_stream *stream_of(dm_state *s, cua_placement p) {
  if (p.device < 0 || p.device >= s->ndev || p.stream < 0 ||
      p.stream >= s->streams)
    return NULL;
  return &s->st[(size_t)p.device * (size_t)s->streams + (size_t)p.stream];
}

/* When input @p in is expected to end. An input this policy placed ends
 * when its own count says (the newest ops of its stream are looked up,
 * most recent first), so that the op's start and its streams' free times
 * come from one count: mixing them with the core's expected ends made a
 * chain hop to an idle stream whenever the two counts drifted apart.
 * Others: the core's expected end. */
static uint64_t input_end(dm_state *s, const cua_op_input *in) {
  uint64_t end = in->expected_end_ns;
  dm_stream *x = in->state == CUA_INPUT_PLACED ? stream_of(s, in->where) : NULL;
  for (size_t i = 0; x != NULL && i < x->n && i < 64; i++) {
    const dm_flight *f = &x->q[(x->head + x->n - 1 - i) % x->cap];
    if (f->op_id == in->op_id) {
      end = f->end;
      break;
    }
  }
  return end;
}

/* When @p op can start at the earliest on stream (@p dev, @p str): now,
 * or after its inputs, @p ends[k] being input k's input_end() (looked up
 * here when @p ends is NULL), each placed one on another stream with the
 * wait it adds. */
static uint64_t ready_at(dm_state *s, const cua_op_info *op,
                         const uint64_t *ends, uint64_t now, int dev, int str) {
  uint64_t ready = now;
  for (size_t k = 0; k < op->ninputs; k++) {
    const cua_op_input *in = &op->inputs[k];
    uint64_t end = ends != NULL ? ends[k] : input_end(s, in);
    if (in->state == CUA_INPUT_PLACED && in->where.device >= 0 &&
        (in->where.device != dev || in->where.stream != str))
      end += in->where.device == dev ? s->wait_ns : s->device_wait_ns;
    if (end > ready)
      ready = end;
  }
  return ready;
}

/* The input_end() of each of @p op's inputs, in @p buf if they fit (16),
 * else in memory of their own (freed by the caller when not @p buf);
 * NULL when out of memory (ready_at() then looks each up itself). */
static uint64_t *input_ends(dm_state *s, const cua_op_info *op, uint64_t *buf) {
  uint64_t *ends = op->ninputs <= 16 ? buf : malloc(op->ninputs * sizeof *ends);
  if (ends != NULL)
    for (size_t k = 0; k < op->ninputs; k++)
      ends[k] = input_end(s, &op->inputs[k]);
  return ends;
}

static int dm_place(void *state, const cua_op_info *op, cua_placement *out) {
  dm_state *s = state;
  uint64_t now = s->host->now_ns(s->host->core), buf[16];
  uint64_t *ends = input_ends(s, op, buf);
  int bd = -1, bs = -1, from = 0;
  uint64_t best = UINT64_MAX;
  /* The stream of the op it continues first, so that a tie keeps it. */
  dm_stream *t = stream_of(s, op->then_of);
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < s->ndev; d++) {
      if (op->restrict_device >= 0 && d != op->restrict_device)
        continue;
      if (pass == 0 && (t == NULL || d != op->then_of.device))
        continue;
      int f;
      uint64_t cost = expect(s, op, d, &f) + transfer(s, op, d);
      for (int st = 0; st < s->streams; st++) {
        if (pass == 0 && st != op->then_of.stream)
          continue;
        const dm_stream *x =
            &s->st[(size_t)d * (size_t)s->streams + (size_t)st];
        uint64_t ready = ready_at(s, op, ends, now, d, st);
        uint64_t start = x->free_at > ready ? x->free_at : ready;
        if (start + cost < best) {
          best = start + cost;
          bd = d;
          bs = st;
          from = f;
        }
      }
    }
  if (ends != buf)
    free(ends); /* NULL too */
  if (bd < 0) {
    s->host->log(s->host->core, CUA_LOG_ERROR,
                 "no stream on device %d for op '%s'", op->restrict_device,
                 op->name ? op->name : "(unnamed)");
    return CUA_ERR_BAD_DEVICE;
  }
  out->device = bd;
  out->stream = bs;
  s->placed++;
  if (from == 1)
    s->from_model++;
  else if (from == 2)
    s->from_hint++;
  return 0;
}

static void dm_submitted(void *state, const cua_op_info *op,
                         cua_placement where) {
  dm_state *s = state;
  dm_stream *x = stream_of(s, where);
  if (x == NULL)
    return; /* a stream outside its pool (a device policy's choice) */
  uint64_t now = s->host->now_ns(s->host->core), buf[16];
  uint64_t *ends = input_ends(s, op, buf);
  uint64_t ready = ready_at(s, op, ends, now, where.device, where.stream);
  if (ends != buf)
    free(ends);
  int f;
  uint64_t est =
      expect(s, op, where.device, &f) + transfer(s, op, where.device);
  if (x->n == x->cap) {
    size_t cap = x->cap ? 2 * x->cap : 16;
    dm_flight *q = malloc(cap * sizeof *q);
    if (q == NULL)
      return; /* untracked: the stream's estimate is only less exact */
    for (size_t i = 0; i < x->n; i++)
      q[i] = x->q[(x->head + i) % x->cap];
    free(x->q);
    x->q = q;
    x->head = 0;
    x->cap = cap;
  }
  uint64_t start = x->free_at > ready ? x->free_at : ready;
  x->q[(x->head + x->n) % x->cap] = (dm_flight){op->op_id, est, start + est};
  x->n++;
  x->free_at = start + est;
}

static void dm_completed(void *state, const cua_op_info *op,
                         cua_placement where, uint64_t duration_ns) {
  dm_state *s = state;
  dm_stream *x = stream_of(s, where);
  if (duration_ns > 0)
    s->measured++;
  if (x == NULL)
    return;
  /* Streams complete in order: the op is at the head, or near it. */
  for (size_t i = 0; i < x->n; i++) {
    size_t at = (x->head + i) % x->cap;
    if (x->q[at].op_id != op->op_id)
      continue;
    uint64_t est = x->q[at].est;
    x->q[at] = x->q[x->head];
    x->head = (x->head + 1) % x->cap;
    x->n--;
    uint64_t now = s->host->now_ns(s->host->core);
    if (x->n == 0) {
      x->free_at = now; /* idle: free now, whatever was guessed */
    } else if (duration_ns > 0) {
      /* Correct the guess by what the op really took. */
      uint64_t ahead = x->free_at > now ? x->free_at - now : 0;
      if (duration_ns < est)
        x->free_at -= est - duration_ns < ahead ? est - duration_ns : ahead;
      else
        x->free_at += duration_ns - est;
    }
    return;
  }
}

static void dm_dump(void *state, FILE *out) {
  const dm_state *s = state;
  fprintf(out,
          "dmda: %d streams per device, default cost %" PRIu64
          " ns, peer %.3g GB/s, waits %" PRIu64 " ns (one device) and %" PRIu64
          " ns (two)\n"
          "  placed %" PRIu64 " (expected from the models %" PRIu64
          ", from hints or default %" PRIu64 "), measured %" PRIu64 "\n",
          s->streams, s->default_cost, s->peer_gbps, s->wait_ns,
          s->device_wait_ns, s->placed, s->from_model, s->from_hint,
          s->measured);
}

CUA_POLICY_DEFINE(.name = "dmda", .version = "1.1",
                  .description = "each op where it would finish first, by "
                                 "performance models and transfer cost",
                  .flags = CUA_POLICY_WANTS_TIMING,
                  CUA_POLICY_PARAMS(dm_params), .create = dm_create,
                  .destroy = dm_destroy, .place = dm_place,
                  .submitted = dm_submitted, .completed = dm_completed,
                  .dump = dm_dump);
