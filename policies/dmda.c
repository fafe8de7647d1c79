/*
 * policies/dmda.c: dmda, dynamic earliest finish with data-transfer cost
 * and a history of measured durations (StarPU's "deque model data aware",
 * in its push form).
 *
 * Parameters ([policy.dmda]):
 *   streams          INT, 1..1024, default 4. Streams used on each device.
 *   default_cost_ns  INT, 0..10^12, default 10000. The duration assumed for
 *                    an op with no history and no cost hint.
 *   peer_gbps        DOUBLE, 0.001..10^6, default 25. GB/s at which an op
 *                    reaches buffers on another device than its own.
 *   alpha            DOUBLE, 0..1, default 0.25. Weight of a new
 *                    measurement in a history's moving average.
 *
 * Each op, as it is placed, goes to the stream (over the devices it may
 * use) where it would finish first:
 *   finish = max(now, stream free, inputs' expected ends)
 *            + expected duration on that device + transfer
 * The expected duration comes from a history of measured durations
 * (CUA_POLICY_WANTS_TIMING) kept per (kind, name, tag, size bucket of the
 * bytes hint, bucket of the cost hint, device); with no sample yet, the
 * op's cost hint, else default_cost_ns. The cost hint's bucket is part of
 * the class: without it, the average of a kind's short and long ops
 * replaced every op's own hint once measured, and dmda placed a workload
 * of unequal spins as round-robin does (on the H100, 1.14x heft's
 * makespan on independent tasks). The transfer is the op's bytes hint over
 * peer_gbps when its data lives on another device. A tie keeps the stream of
 * the op it continues. The policy keeps each stream's expected free time
 * itself: an op placed pushes it by the op's expectation, and each completion
 * corrects it by what the op really took (an idle stream is free now).
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
     "GB/s at which an op reaches buffers on another device", 0},
    {"alpha", CUA_PARAM_DOUBLE, "0.25", 0, 1, NULL,
     "weight of a new measurement in a history's moving average", 0},
};

/* One history: an op class on a device. */
typedef struct dm_hist {
  uint64_t key; /* 0: empty slot */
  double avg_ns;
  uint64_t samples;
} dm_hist;

/* An op in flight on a stream, oldest first. */
typedef struct dm_flight {
  uint64_t op_id, est;
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
  double peer_gbps, alpha;
  dm_stream *st; /* ndev * streams */
  dm_hist *hist;
  size_t nhist, caphist; /* power of two */
  /* For dump(). */
  uint64_t placed, from_history, from_hint, measured;
} dm_state;

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash_str(uint64_t h, const char *s) {
  if (s == NULL)
    return mix(h, 0x51ed270b27u);
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return mix(h, 1);
}

/* log2 of @p v, rounded up (0 for 0). */
static uint64_t bucket_of(uint64_t v) {
  uint64_t b = 0;
  for (; v > 0; v >>= 1)
    b++;
  return b;
}

/* The class of @p op on @p dev: kind, name, tag, size bucket (log2 of the
 * bytes hint), cost bucket (log2 of the cost hint: ops whose hints differ
 * eightfold are not one class, even of one kind and name), device. */
static uint64_t key_of(const cua_op_info *op, int dev) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, (uint64_t)op->kind);
  h = hash_str(h, op->name);
  h = hash_str(h, op->tag);
  h = mix(h, bucket_of(op->bytes));
  h = mix(h, bucket_of(op->cost_ns));
  h = mix(h, (uint64_t)(dev + 1));
  return h ? h : 1;
}

static dm_hist *hist_find(dm_state *s, uint64_t key, int add) {
  if (s->caphist == 0 || (add && (s->nhist + 1) * 2 > s->caphist)) {
    if (!add && s->caphist == 0)
      return NULL;
    size_t cap = s->caphist ? 2 * s->caphist : 64;
    dm_hist *v = calloc(cap, sizeof *v);
    if (v == NULL)
      return NULL;
    for (size_t i = 0; i < s->caphist; i++)
      if (s->hist[i].key != 0) {
        size_t j = s->hist[i].key & (cap - 1);
        while (v[j].key != 0)
          j = (j + 1) & (cap - 1);
        v[j] = s->hist[i];
      }
    free(s->hist);
    s->hist = v;
    s->caphist = cap;
  }
  size_t j = key & (s->caphist - 1);
  while (s->hist[j].key != 0 && s->hist[j].key != key)
    j = (j + 1) & (s->caphist - 1);
  if (s->hist[j].key == key)
    return &s->hist[j];
  if (!add)
    return NULL;
  s->hist[j].key = key;
  s->nhist++;
  return &s->hist[j];
}

static int dm_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  dm_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  s->streams = (int)params[0].i;
  s->default_cost = (uint64_t)params[1].i;
  s->peer_gbps = params[2].d;
  s->alpha = params[3].d;
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
  free(s->hist);
  free(s);
}

/* What @p op is expected to take on @p dev. */
static uint64_t expect(dm_state *s, const cua_op_info *op, int dev, int *from) {
  if (op->kind == CUA_OP_BARRIER || op->kind == CUA_OP_WAIT_NATIVE ||
      op->kind == CUA_OP_ALLOC || op->kind == CUA_OP_FREE) {
    *from = 0;
    return 0;
  }
  const dm_hist *h = hist_find(s, key_of(op, dev), 0);
  if (h != NULL && h->samples > 0) {
    *from = 1;
    return (uint64_t)h->avg_ns;
  }
  *from = 2;
  return op->cost_ns > 0 ? op->cost_ns : s->default_cost;
}

static dm_stream *stream_of(dm_state *s, cua_placement p) {
  if (p.device < 0 || p.device >= s->ndev || p.stream < 0 ||
      p.stream >= s->streams)
    return NULL;
  return &s->st[(size_t)p.device * (size_t)s->streams + (size_t)p.stream];
}

static int dm_place(void *state, const cua_op_info *op, cua_placement *out) {
  dm_state *s = state;
  uint64_t now = s->host->now_ns(s->host->core), ready = now;
  for (size_t k = 0; k < op->ninputs; k++)
    if (op->inputs[k].expected_end_ns > ready)
      ready = op->inputs[k].expected_end_ns;
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
      uint64_t cost = expect(s, op, d, &f);
      if (op->data_device >= 0 && op->data_device != d)
        cost += (uint64_t)((double)op->bytes / s->peer_gbps);
      for (int st = 0; st < s->streams; st++) {
        if (pass == 0 && st != op->then_of.stream)
          continue;
        const dm_stream *x =
            &s->st[(size_t)d * (size_t)s->streams + (size_t)st];
        uint64_t start = x->free_at > ready ? x->free_at : ready;
        if (start + cost < best) {
          best = start + cost;
          bd = d;
          bs = st;
          from = f;
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
  s->placed++;
  if (from == 1)
    s->from_history++;
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
  uint64_t now = s->host->now_ns(s->host->core), ready = now;
  for (size_t k = 0; k < op->ninputs; k++)
    if (op->inputs[k].expected_end_ns > ready)
      ready = op->inputs[k].expected_end_ns;
  int f;
  uint64_t est = expect(s, op, where.device, &f);
  if (op->data_device >= 0 && op->data_device != where.device)
    est += (uint64_t)((double)op->bytes / s->peer_gbps);
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
  x->q[(x->head + x->n) % x->cap] = (dm_flight){op->op_id, est};
  x->n++;
  uint64_t start = x->free_at > ready ? x->free_at : ready;
  x->free_at = start + est;
}

static void dm_completed(void *state, const cua_op_info *op,
                         cua_placement where, uint64_t duration_ns) {
  dm_state *s = state;
  dm_stream *x = stream_of(s, where);
  if (duration_ns > 0 && where.device >= 0 && where.device < s->ndev) {
    dm_hist *h = hist_find(s, key_of(op, where.device), 1);
    if (h != NULL) {
      h->avg_ns =
          h->samples == 0
              ? (double)duration_ns
              : h->avg_ns + s->alpha * ((double)duration_ns - h->avg_ns);
      h->samples++;
      s->measured++;
    }
  }
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
          " ns, peer %.3g GB/s, alpha %g\n"
          "  placed %" PRIu64 " (expected from history %" PRIu64
          ", from hints or default %" PRIu64 "), measured %" PRIu64
          ", histories %zu\n",
          s->streams, s->default_cost, s->peer_gbps, s->alpha, s->placed,
          s->from_history, s->from_hint, s->measured, s->nhist);
}

CUA_POLICY_DEFINE(.name = "dmda", .version = "1.0",
                  .description = "each op where it would finish first, by "
                                 "measured history and transfer cost",
                  .flags = CUA_POLICY_WANTS_TIMING,
                  CUA_POLICY_PARAMS(dm_params), .create = dm_create,
                  .destroy = dm_destroy, .place = dm_place,
                  .submitted = dm_submitted, .completed = dm_completed,
                  .dump = dm_dump);
