/*
 * policies/least-loaded.c: each op goes to the stream with the least work in
 * flight, over every device it may run on.
 *
 * Parameters ([policy.least-loaded]):
 *   measure          ENUM ops|time, default time. ops: the core's count of
 *                    ops in flight on each stream (host->stream_load()).
 *                    time: this policy's own estimate of the work in flight
 *                    on each stream, in nanoseconds.
 *   streams          INT, 1..1024, default 4. Streams considered per device.
 *   default_cost_ns  INT, 0..1e12, default 10000. Estimate for an op with no
 *                    cost hint and no measurement yet.
 *   alpha            DOUBLE, 0..1, default 0.25. Weight of a new measurement
 *                    in the moving average of an op's duration (0 keeps the
 *                    first measurement for ever, 1 keeps only the latest).
 *
 * Estimates (measure = time). submitted() adds the op's estimate to the
 * stream it was enqueued on and completed() takes exactly that amount off
 * again, so estimates refined in between never unbalance the sums. The
 * estimate is, in order: the moving average of measured durations of ops of
 * the same kind and name; else the op's cost_ns hint; else the average of
 * unnamed ops of its kind (ranked after the hint because it mixes unrelated
 * ops); else default_cost_ns. Ops that occupy no stream (host steps, zip,
 * unzip, map) count as 0. completed() refines the average with the measured
 * duration (0 means "not measured" and is ignored); the flag
 * CUA_POLICY_WANTS_TIMING asks the CUDA backend to measure. Names are keyed
 * at submitted(), when the op's strings are still valid; at most
 * LL_MAX_STATS distinct (kind, name) keys are learnt, later ones fall back to
 * their hints. measure = ops keeps no per-op state at all.
 *
 * Choice: the least loaded stream of the pool; ties go to the lowest
 * (device, stream), except that the stream of the op this one continues
 * (then_of) is kept unless another is lighter by more than one op's worth
 * (the predecessor's own load there is no reason to move), which keeps
 * chains on one stream when nothing is gained by moving them; and it is
 * always kept when the previous place() call put its op there: that op is
 * then, as in a chain, most likely the one this continues, the last of its
 * stream, and this one could start no sooner elsewhere (moving would only
 * add an event). restrict_device limits the candidates to that device.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define LL_MAX_STATS 4096

enum { LL_OPS = 0, LL_TIME = 1 };

static const cua_param_spec ll_params[] = {
    {"measure", CUA_PARAM_ENUM, "time", 0, 0, "ops|time",
     "ops: fewest ops in flight; time: least estimated work in flight", 0},
    {"streams", CUA_PARAM_INT, "4", 1, 1024, NULL,
     "streams considered on each device", 0},
    {"default_cost_ns", CUA_PARAM_INT, "10000", 0, 1e12, NULL,
     "estimated duration of an op with no cost hint and no measurement", 0},
    {"alpha", CUA_PARAM_DOUBLE, "0.25", 0, 1, NULL,
     "weight of a new measurement in the moving average of durations", 0},
};

/* What has been measured for one (kind, name). */
typedef struct ll_stat {
  char *name; /* NULL: unnamed ops of this kind */
  int kind;
  double avg_ns;
  uint64_t samples;
} ll_stat;

/* An op submitted and not yet completed (measure = time). */
typedef struct ll_flight {
  uint64_t op_id;
  uint64_t est; /* what was added to busy[slot] */
  int32_t stat; /* index in stats, or -1 */
  int32_t slot; /* index in busy, or -1 when outside the pool */
  int used;
} ll_flight;

typedef struct ll_state {
  const cua_policy_host *host;
  int ndevices;
  int measure;
  int streams;
  uint64_t default_cost;
  double alpha;
  unsigned char *ready; /* per device: streams were ensured */
  uint64_t *busy;       /* per pool stream: estimated ns in flight */
  uint64_t *placed;     /* per pool stream: ops placed */
  ll_stat *stats;       /* dense; indices are stable */
  size_t nstats, capstats;
  int32_t *stat_index; /* open addressing into stats, -1 empty */
  size_t stat_index_cap;
  ll_flight *flight; /* open addressing by op_id */
  size_t flight_cap, nflight;
  uint64_t kept_then, refused, measured;
  cua_placement last; /* where the previous place() call put its op */
} ll_state;

static uint64_t ll_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

static uint64_t ll_key_hash(int kind, const char *name) {
  uint64_t h = 1469598103934665603ULL ^ (uint64_t)(unsigned)kind;

  if (name == NULL)
    return ll_mix(h);
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    h = (h ^ *p) * 1099511628211ULL;
  return ll_mix(h + 1);
}

static void ll_destroy(void *state) {
  ll_state *ll = state;

  if (ll == NULL)
    return;
  for (size_t i = 0; i < ll->nstats; i++)
    free(ll->stats[i].name);
  free(ll->stats);
  free(ll->stat_index);
  free(ll->flight);
  free(ll->ready);
  free(ll->busy);
  free(ll->placed);
  free(ll);
}

static int ll_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  ll_state *ll = calloc(1, sizeof *ll);
  size_t nd, pool;

  if (ll == NULL)
    return CUA_ERR_NOMEM;
  ll->host = host;
  ll->last.device = ll->last.stream = -1;
  ll->ndevices = host->device_count(host->core);
  if (ll->ndevices < 0)
    ll->ndevices = 0;
  ll->measure = params != NULL ? (int)params[0].i : LL_TIME;
  ll->streams = params != NULL ? (int)params[1].i : 4;
  ll->default_cost = params != NULL ? (uint64_t)params[2].i : 10000;
  ll->alpha = params != NULL ? params[3].d : 0.25;
  if (ll->streams < 1 || ll->streams > 1024 || ll->alpha < 0 || ll->alpha > 1) {
    host->log(host->core, CUA_LOG_ERROR,
              "streams = %d (1..1024) or alpha = %g (0..1) out of range",
              ll->streams, ll->alpha);
    ll_destroy(ll);
    return CUA_ERR_INVAL;
  }
  /* One spare device slot keeps calloc() from returning NULL for a runtime
   * with no device. */
  nd = (size_t)ll->ndevices + 1;
  pool = nd * (size_t)ll->streams;
  ll->ready = calloc(nd, sizeof *ll->ready);
  ll->busy = calloc(pool, sizeof *ll->busy);
  ll->placed = calloc(pool, sizeof *ll->placed);
  if (ll->ready == NULL || ll->busy == NULL || ll->placed == NULL) {
    ll_destroy(ll);
    return CUA_ERR_NOMEM;
  }
  *state = ll;
  return 0;
}

/* Ops that occupy no stream add nothing to its estimated work. */
static int ll_no_stream_work(int kind) {
  return kind == CUA_OP_HOST || kind == CUA_OP_ZIP || kind == CUA_OP_UNZIP ||
         kind == CUA_OP_MAP;
}

static int ll_stat_same(const ll_stat *st, int kind, const char *name) {
  if (st->kind != kind)
    return 0;
  if (st->name == NULL || name == NULL)
    return st->name == name;
  return strcmp(st->name, name) == 0;
}

/* Rebuilds the index with @p cap slots (a power of two). */
static int ll_stat_reindex(ll_state *ll, size_t cap) {
  int32_t *idx = malloc(cap * sizeof *idx);

  if (idx == NULL)
    return -1;
  for (size_t i = 0; i < cap; i++)
    idx[i] = -1;
  for (size_t i = 0; i < ll->nstats; i++) {
    size_t j = ll_key_hash(ll->stats[i].kind, ll->stats[i].name) & (cap - 1);
    while (idx[j] >= 0)
      j = (j + 1) & (cap - 1);
    idx[j] = (int32_t)i;
  }
  free(ll->stat_index);
  ll->stat_index = idx;
  ll->stat_index_cap = cap;
  return 0;
}

/* The index of the (kind, name) statistics, created when new; -1 when the
 * table is full or memory ran out (the op then goes by its hints). */
static int32_t ll_stat_get(ll_state *ll, int kind, const char *name) {
  size_t j;
  ll_stat *st;

  if (ll->stat_index != NULL) {
    j = ll_key_hash(kind, name) & (ll->stat_index_cap - 1);
    for (; ll->stat_index[j] >= 0; j = (j + 1) & (ll->stat_index_cap - 1))
      if (ll_stat_same(&ll->stats[ll->stat_index[j]], kind, name))
        return ll->stat_index[j];
  }
  if (ll->nstats >= LL_MAX_STATS)
    return -1;
  if (ll->nstats == ll->capstats) {
    size_t cap = ll->capstats ? ll->capstats * 2 : 16;
    ll_stat *s = realloc(ll->stats, cap * sizeof *s);
    if (s == NULL)
      return -1;
    ll->stats = s;
    ll->capstats = cap;
  }
  /* Keep the index at most half full so probes stay short. */
  if ((ll->nstats + 1) * 2 > ll->stat_index_cap &&
      ll_stat_reindex(ll, ll->stat_index_cap ? ll->stat_index_cap * 2 : 32) < 0)
    return -1;
  st = &ll->stats[ll->nstats];
  memset(st, 0, sizeof *st);
  st->kind = kind;
  if (name != NULL) {
    size_t n = strlen(name) + 1;
    if ((st->name = malloc(n)) == NULL)
      return -1;
    memcpy(st->name, name, n);
  }
  j = ll_key_hash(kind, name) & (ll->stat_index_cap - 1);
  while (ll->stat_index[j] >= 0)
    j = (j + 1) & (ll->stat_index_cap - 1);
  ll->stat_index[j] = (int32_t)ll->nstats;
  return (int32_t)ll->nstats++;
}

static uint64_t ll_round(double ns) {
  return ns <= 0 ? 0 : (uint64_t)(ns + 0.5);
}

/* The op's estimated duration, and in *stat where its measurement goes. */
static uint64_t ll_estimate(ll_state *ll, const cua_op_info *op,
                            int32_t *stat) {
  const ll_stat *st;

  *stat = -1;
  if (ll_no_stream_work((int)op->kind))
    return 0;
  *stat = ll_stat_get(ll, (int)op->kind, op->name);
  st = *stat >= 0 ? &ll->stats[*stat] : NULL;
  if (st != NULL && st->samples > 0 && op->name != NULL)
    return ll_round(st->avg_ns);
  if (op->cost_ns > 0)
    return op->cost_ns;
  if (st != NULL && st->samples > 0)
    return ll_round(st->avg_ns);
  return ll->default_cost;
}

/* The slot of op @p id in the in-flight table, or -1. */
static long ll_flight_find(const ll_state *ll, uint64_t id) {
  size_t mask = ll->flight_cap - 1;

  if (ll->flight_cap == 0)
    return -1;
  for (size_t j = ll_mix(id) & mask; ll->flight[j].used; j = (j + 1) & mask)
    if (ll->flight[j].op_id == id)
      return (long)j;
  return -1;
}

static void ll_flight_put(ll_flight *tab, size_t cap, const ll_flight *e) {
  size_t j = ll_mix(e->op_id) & (cap - 1);

  while (tab[j].used)
    j = (j + 1) & (cap - 1);
  tab[j] = *e;
  tab[j].used = 1;
}

static int ll_flight_insert(ll_state *ll, const ll_flight *e) {
  if ((ll->nflight + 1) * 2 > ll->flight_cap) {
    size_t cap = ll->flight_cap ? ll->flight_cap * 2 : 64;
    ll_flight *tab = calloc(cap, sizeof *tab);
    if (tab == NULL)
      return -1;
    for (size_t i = 0; i < ll->flight_cap; i++)
      if (ll->flight[i].used)
        ll_flight_put(tab, cap, &ll->flight[i]);
    free(ll->flight);
    ll->flight = tab;
    ll->flight_cap = cap;
  }
  ll_flight_put(ll->flight, ll->flight_cap, e);
  ll->nflight++;
  return 0;
}

/* Removes slot @p i, shifting later entries of its probe run back so that
 * lookups never stop early at the hole (no tombstones to clean up). */
static void ll_flight_remove(ll_state *ll, size_t i) {
  size_t mask = ll->flight_cap - 1;
  size_t j = i;

  ll->flight[i].used = 0;
  for (;;) {
    size_t home;
    j = (j + 1) & mask;
    if (!ll->flight[j].used)
      break;
    home = ll_mix(ll->flight[j].op_id) & mask;
    /* The entry at j may stay when its home lies cyclically in (i, j]. */
    if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
      continue;
    ll->flight[i] = ll->flight[j];
    ll->flight[j].used = 0;
    i = j;
  }
  ll->nflight--;
}

static int ll_ensure(ll_state *ll, int dev) {
  const cua_policy_host *h = ll->host;
  int rc;

  /* Streams live as long as the runtime, so asking once is enough. */
  if (ll->ready[dev])
    return 0;
  rc = h->ensure_streams(h->core, dev, ll->streams);
  if (rc < 0) {
    h->log(h->core, CUA_LOG_ERROR, "cannot get %d streams on device %d (%d)",
           ll->streams, dev, rc);
    return rc;
  }
  ll->ready[dev] = 1;
  return 0;
}

static int ll_in_pool(const ll_state *ll, int dev, int stream) {
  return dev >= 0 && dev < ll->ndevices && stream >= 0 && stream < ll->streams;
}

/* The load of a stream under the configured measure; non-zero when it is
 * not known (a stream outside the pool under measure = time, or one the
 * core refuses to describe). */
static int ll_load(const ll_state *ll, int dev, int stream, uint64_t *load) {
  const cua_policy_host *h = ll->host;
  cua_stream_load l;

  if (ll->measure == LL_TIME) {
    if (!ll_in_pool(ll, dev, stream))
      return -1;
    *load = ll->busy[(size_t)dev * (size_t)ll->streams + (size_t)stream];
    return 0;
  }
  memset(&l, 0, sizeof l);
  l.size = sizeof l;
  if (h->stream_load(h->core, dev, stream, &l) < 0)
    return -1;
  *load = l.ops_in_flight;
  return 0;
}

static int ll_place(void *state, const cua_op_info *op, cua_placement *out) {
  ll_state *ll = state;
  const cua_policy_host *h = ll->host;
  int lo = 0, hi = ll->ndevices, rc = CUA_ERR_POLICY;
  int best_dev = -1, best_stream = -1;
  uint64_t best = 0, load;
  const cua_placement *t = &op->then_of;

  if (ll->ndevices == 0) {
    h->log(h->core, CUA_LOG_ERROR, "op %" PRIu64 ": the runtime has no device",
           op->op_id);
    ll->refused++;
    return CUA_ERR_NO_DEVICE;
  }
  if (op->restrict_device >= ll->ndevices) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 " must run on device %d, but the runtime has %d",
           op->op_id, op->restrict_device, ll->ndevices);
    ll->refused++;
    return CUA_ERR_BAD_DEVICE;
  }
  if (op->restrict_device >= 0) {
    lo = op->restrict_device;
    hi = lo + 1;
  }
  for (int d = lo; d < hi; d++) {
    /* A device whose streams cannot be had is skipped; the op fails only
     * when no device is left. */
    int erc = ll_ensure(ll, d);
    if (erc < 0) {
      rc = erc;
      continue;
    }
    for (int s = 0; s < ll->streams; s++) {
      if (ll_load(ll, d, s, &load) != 0)
        continue;
      if (best_dev < 0 || load < best) {
        best = load;
        best_dev = d;
        best_stream = s;
      }
    }
  }
  if (best_dev < 0) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 ": no usable stream on device(s) %d..%d", op->op_id,
           lo, hi - 1);
    ll->refused++;
    return rc;
  }
  /* The chain's stream is kept unless another is lighter by more than one
   * op's worth: a continuation cannot start before the op it continues
   * ends, so the load that op puts on its own stream is no reason to move
   * (moving would only add an event). The op's own estimate stands for its
   * predecessor's. The stream exists (the op it continues ran there), so no
   * ensure is needed. */
  int32_t stat;
  uint64_t slack = ll->measure == LL_TIME ? ll_estimate(ll, op, &stat) : 1;
  /* The op placed just before is the one this continues, as in a chain:
   * it is the last op of its stream, so this one could not start sooner
   * anywhere else, and moving would only add an event. */
  int chained = t->device == ll->last.device && t->stream == ll->last.stream;
  if (t->device >= lo && t->device < hi && t->stream >= 0 &&
      t->stream < h->stream_count(h->core, t->device) &&
      ll_load(ll, t->device, t->stream, &load) == 0 &&
      (chained || load <= best + slack)) {
    *out = *t;
    ll->kept_then++;
  } else {
    out->device = best_dev;
    out->stream = best_stream;
  }
  if (ll_in_pool(ll, out->device, out->stream))
    ll->placed[(size_t)out->device * (size_t)ll->streams +
               (size_t)out->stream]++;
  ll->last = *out;
  return 0;
}

static void ll_submitted(void *state, const cua_op_info *op,
                         cua_placement where) {
  ll_state *ll = state;
  ll_flight e;
  long old;

  if (ll->measure != LL_TIME)
    return;
  memset(&e, 0, sizeof e);
  e.op_id = op->op_id;
  e.est = ll_estimate(ll, op, &e.stat);
  e.slot = ll_in_pool(ll, where.device, where.stream)
               ? (int32_t)((size_t)where.device * (size_t)ll->streams +
                           (size_t)where.stream)
               : -1;
  /* A second notification for one op replaces the first, never adds. */
  if ((old = ll_flight_find(ll, op->op_id)) >= 0) {
    const ll_flight *o = &ll->flight[old];
    if (o->slot >= 0)
      ll->busy[o->slot] -=
          o->est < ll->busy[o->slot] ? o->est : ll->busy[o->slot];
    ll_flight_remove(ll, (size_t)old);
  }
  /* Without an entry completed() could not take the estimate off again, so
   * the sum is only raised once the entry exists. */
  if (ll_flight_insert(ll, &e) == 0 && e.slot >= 0)
    ll->busy[e.slot] += e.est;
}

static void ll_completed(void *state, const cua_op_info *op,
                         cua_placement where, uint64_t duration_ns) {
  ll_state *ll = state;
  long i;
  ll_flight e;

  if (ll->measure != LL_TIME || (i = ll_flight_find(ll, op->op_id)) < 0)
    return;
  e = ll->flight[i];
  ll_flight_remove(ll, (size_t)i);
  if (e.slot >= 0)
    ll->busy[e.slot] -= e.est < ll->busy[e.slot] ? e.est : ll->busy[e.slot];
  if (duration_ns > 0 && e.stat >= 0) {
    ll_stat *st = &ll->stats[e.stat];
    /* The first measurement replaces the guess outright; later ones move
     * the average by alpha. */
    if (st->samples == 0)
      st->avg_ns = (double)duration_ns;
    else
      st->avg_ns += ll->alpha * ((double)duration_ns - st->avg_ns);
    st->samples++;
    ll->measured++;
  }
}

static void ll_dump(void *state, FILE *out) {
  const ll_state *ll = state;

  fprintf(out,
          "least-loaded: measure %s, %d stream(s) per device, default cost "
          "%" PRIu64 " ns, alpha %g\n",
          ll->measure == LL_TIME ? "time" : "ops", ll->streams,
          ll->default_cost, ll->alpha);
  for (int d = 0; d < ll->ndevices; d++) {
    const uint64_t *p = ll->placed + (size_t)d * (size_t)ll->streams;
    const uint64_t *b = ll->busy + (size_t)d * (size_t)ll->streams;
    uint64_t ops = 0, ns = 0;
    for (int s = 0; s < ll->streams; s++) {
      ops += p[s];
      ns += b[s];
    }
    if (ops > 0 || ns > 0)
      fprintf(out,
              "  device %d: %" PRIu64 " ops placed, %" PRIu64
              " ns estimated in flight\n",
              d, ops, ns);
  }
  fprintf(out,
          "  in flight %zu, kept on their then_of stream %" PRIu64
          ", measurements %" PRIu64 ", refused %" PRIu64 "\n",
          ll->nflight, ll->kept_then, ll->measured, ll->refused);
  fprintf(out, "  learnt durations: %zu\n", ll->nstats);
  for (size_t i = 0; i < ll->nstats && i < 8; i++)
    if (ll->stats[i].samples > 0)
      fprintf(out, "    kind %d %s: %.0f ns over %" PRIu64 " run(s)\n",
              ll->stats[i].kind,
              ll->stats[i].name ? ll->stats[i].name : "(unnamed)",
              ll->stats[i].avg_ns, ll->stats[i].samples);
}

CUA_POLICY_DEFINE(
        .name = "least-loaded", .version = "1.0",
        .description = "the stream with the least work in flight, in ops or in "
                       "estimated time",
        .flags = CUA_POLICY_WANTS_TIMING, CUA_POLICY_PARAMS(ll_params),
        .create = ll_create, .destroy = ll_destroy, .place = ll_place,
        .submitted = ll_submitted, .completed = ll_completed, .dump = ll_dump);
