/*
 * policies/round-robin.c: rotates ops over a pool of streams per device.
 *
 * Parameters ([policy.round-robin]):
 *   streams   INT, 1..1024, default 4. Streams used on each device.
 *   by_level  BOOL, default false. Spread the ops of one DAG level over the
 *             streams, Taskflow style (see below), instead of rotating per op.
 *   devices   ENUM all|preferred, default all. all: rotate over every
 *             device's streams and ignore device hints. preferred: an op
 *             with a preferred device hint (else a data device, where its
 *             buffers live) stays on that device and rotates over its
 *             streams; ops with neither rotate over all devices.
 *
 * Rules common to both modes:
 * - An op that continues another (cua_op_then) runs exactly where that one
 *   ran, so a chain costs no event; unless it must run on another device.
 * - An op whose buffers demand a device (restrict_device) rotates over that
 *   device's streams only.
 * - Every device has its own stream cursor, so ops confined to a device and
 *   ops free to go anywhere share one fair rotation on it.
 *
 * Per-op rotation visits (device, stream) pairs device first: with 2
 * devices and 4 streams the order is (0,0) (1,0) (0,1) (1,1) (0,2) ... so
 * that any run of consecutive ops is spread over the devices as evenly as it
 * is over the streams.
 *
 * by_level. Ops of one level of a DAG cannot depend on each other, so they
 * are the ones worth running side by side. Taskflow's round-robin capturer
 * puts the i-th node of every level on stream i % N, every level starting at
 * stream 0. That keeps parallel chains on their own streams: the i-th chain
 * is the i-th op of each of its levels, so its edges need no event.
 * Starting each level where the previous one left off would instead shift
 * every chain by the width of the level before it, making nearly every edge
 * cross streams. So within a submission this policy does as Taskflow does:
 * the i-th op placed at level L gets slot base + i, whatever the order in
 * which levels are visited. Across submissions the rotation goes on: each new
 * submission's base is where the widest level of the submissions before it
 * left off, so many small independent submissions (a single chain each) do
 * not all pile up on stream 0. A slot s maps to stream s % N on a device the
 * op is confined to, and to pair s of the device-first order above
 * otherwise.
 *
 * The per-level counters of the RR_SUBS most recently seen submissions are
 * kept (ops of an older submission, placed late because they waited on a
 * host step, start a fresh entry: a placement hint, not a correctness
 * matter), and levels fold modulo RR_MAX_LEVELS, which bounds memory on very
 * deep DAGs at the cost of one extra stream switch every RR_MAX_LEVELS
 * levels.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RR_SUBS 4
#define RR_MAX_LEVELS 65536u

enum { RR_DEVICES_ALL = 0, RR_DEVICES_PREFERRED = 1 };

static const cua_param_spec rr_params[] = {
    {"streams", CUA_PARAM_INT, "4", 1, 1024, NULL,
     "streams in the rotation on each device", 0},
    {"by_level", CUA_PARAM_BOOL, "false", 0, 0, NULL,
     "spread each DAG level over the streams (Taskflow style) instead of "
     "rotating per op",
     0},
    {"devices", CUA_PARAM_ENUM, "all", 0, 0, "all|preferred",
     "all: rotate over every device; preferred: keep ops on their hinted or "
     "data device",
     0},
};

/* by_level bookkeeping for one submission. */
typedef struct rr_sub {
  uint64_t id;     /* submission id */
  uint64_t base;   /* slot of the first op of each of its levels */
  uint64_t used;   /* tick of last use, for eviction; 0: slot empty */
  uint32_t *width; /* per level (mod RR_MAX_LEVELS): ops placed so far */
  uint32_t nlevels;
} rr_sub;

typedef struct rr_state {
  const cua_policy_host *host;
  int ndevices;
  int streams;
  int by_level;
  int devices_mode;
  unsigned char *ready; /* per device: streams were ensured */
  uint64_t *cursor;     /* per device: rotation count on it */
  uint64_t dev_cursor;  /* rotation count over devices */
  uint64_t next_base;   /* by_level: base of the next new submission */
  uint64_t tick;
  rr_sub subs[RR_SUBS];
  uint64_t *placed;   /* per (device, stream) of the pool */
  uint64_t kept_then; /* ops placed where their then_of ran */
  uint64_t refused;
} rr_state;

static void rr_destroy(void *state) {
  rr_state *rr = state;

  if (rr == NULL)
    return;
  for (int i = 0; i < RR_SUBS; i++)
    free(rr->subs[i].width);
  free(rr->ready);
  free(rr->cursor);
  free(rr->placed);
  free(rr);
}

static int rr_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  rr_state *rr = calloc(1, sizeof *rr);
  size_t nd;

  if (rr == NULL)
    return CUA_ERR_NOMEM;
  rr->host = host;
  rr->ndevices = host->device_count(host->core);
  if (rr->ndevices < 0)
    rr->ndevices = 0;
  rr->streams = params != NULL ? (int)params[0].i : 4;
  rr->by_level = params != NULL ? params[1].i != 0 : 0;
  rr->devices_mode = params != NULL ? (int)params[2].i : RR_DEVICES_ALL;
  if (rr->streams < 1 || rr->streams > 1024) {
    host->log(host->core, CUA_LOG_ERROR, "streams = %d is not in 1..1024",
              rr->streams);
    rr_destroy(rr);
    return CUA_ERR_INVAL;
  }
  /* One spare slot keeps calloc() from returning NULL for zero devices. */
  nd = (size_t)rr->ndevices + 1;
  rr->ready = calloc(nd, sizeof *rr->ready);
  rr->cursor = calloc(nd, sizeof *rr->cursor);
  rr->placed = calloc(nd * (size_t)rr->streams, sizeof *rr->placed);
  if (rr->ready == NULL || rr->cursor == NULL || rr->placed == NULL) {
    rr_destroy(rr);
    return CUA_ERR_NOMEM;
  }
  *state = rr;
  return 0;
}

/* Whether the op can run exactly where the op it continues ran. */
static int rr_then_usable(const rr_state *rr, const cua_op_info *op) {
  const cua_placement *t = &op->then_of;

  if (t->device < 0 || t->device >= rr->ndevices || t->stream < 0)
    return 0;
  if (op->restrict_device >= 0 && t->device != op->restrict_device)
    return 0;
  return t->stream < rr->host->stream_count(rr->host->core, t->device);
}

/* The device the op is confined to, or -1 when it may go anywhere. */
static int rr_confined(const rr_state *rr, const cua_op_info *op) {
  if (op->restrict_device >= 0)
    return op->restrict_device;
  if (rr->devices_mode != RR_DEVICES_PREFERRED)
    return -1;
  if (op->preferred_device >= 0 && op->preferred_device < rr->ndevices)
    return op->preferred_device;
  if (op->data_device >= 0 && op->data_device < rr->ndevices)
    return op->data_device;
  return -1;
}

/* The by_level entry of the op's submission, created (evicting the least
 * recently used one) when it is new. */
static rr_sub *rr_sub_for(rr_state *rr, uint64_t id) {
  rr_sub *victim = &rr->subs[0];

  rr->tick++;
  for (int i = 0; i < RR_SUBS; i++) {
    rr_sub *s = &rr->subs[i];
    if (s->used != 0 && s->id == id) {
      s->used = rr->tick;
      return s;
    }
    if (s->used < victim->used)
      victim = s;
  }
  if (victim->nlevels > 0)
    memset(victim->width, 0, victim->nlevels * sizeof *victim->width);
  victim->id = id;
  victim->base = rr->next_base;
  victim->used = rr->tick;
  return victim;
}

/* by_level: the slot of the op, or 0 with *ok = 0 when memory ran out (the
 * caller then rotates per op, which is still a valid placement). */
static uint64_t rr_level_slot(rr_state *rr, const cua_op_info *op, int *ok) {
  rr_sub *s = rr_sub_for(rr, op->submission);
  uint32_t lvl = op->level % RR_MAX_LEVELS;
  uint64_t slot;

  if (lvl >= s->nlevels) {
    uint32_t n = s->nlevels ? s->nlevels : 16;
    uint32_t *w;
    while (n <= lvl)
      n *= 2;
    if (n > RR_MAX_LEVELS)
      n = RR_MAX_LEVELS;
    w = realloc(s->width, n * sizeof *w);
    if (w == NULL) {
      *ok = 0;
      return 0;
    }
    memset(w + s->nlevels, 0, (n - s->nlevels) * sizeof *w);
    s->width = w;
    s->nlevels = n;
  }
  slot = s->base + s->width[lvl]++;
  if (slot + 1 > rr->next_base)
    rr->next_base = slot + 1;
  *ok = 1;
  return slot;
}

static int rr_ensure(rr_state *rr, int dev) {
  const cua_policy_host *h = rr->host;
  int rc;

  /* Streams live as long as the runtime, so asking once is enough. */
  if (rr->ready[dev])
    return 0;
  rc = h->ensure_streams(h->core, dev, rr->streams);
  if (rc < 0) {
    h->log(h->core, CUA_LOG_ERROR, "cannot get %d streams on device %d (%d)",
           rr->streams, dev, rc);
    return rc;
  }
  rr->ready[dev] = 1;
  return 0;
}

static int rr_place(void *state, const cua_op_info *op, cua_placement *out) {
  rr_state *rr = state;
  const cua_policy_host *h = rr->host;
  int dev, stream, rc, ok = 0;
  uint64_t slot = 0;

  if (rr->ndevices == 0) {
    h->log(h->core, CUA_LOG_ERROR, "op %" PRIu64 ": the runtime has no device",
           op->op_id);
    rr->refused++;
    return CUA_ERR_NO_DEVICE;
  }
  if (op->restrict_device >= rr->ndevices) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 " must run on device %d, but the runtime has %d",
           op->op_id, op->restrict_device, rr->ndevices);
    rr->refused++;
    return CUA_ERR_BAD_DEVICE;
  }
  if (rr_then_usable(rr, op)) {
    *out = op->then_of;
    rr->kept_then++;
    return 0;
  }
  dev = rr_confined(rr, op);
  if (rr->by_level)
    slot = rr_level_slot(rr, op, &ok);
  if (ok && dev >= 0) {
    stream = (int)(slot % (uint64_t)rr->streams);
  } else if (ok) {
    dev = (int)(slot % (uint64_t)rr->ndevices);
    stream = (int)((slot / (uint64_t)rr->ndevices) % (uint64_t)rr->streams);
  } else {
    if (dev < 0)
      dev = (int)(rr->dev_cursor++ % (uint64_t)rr->ndevices);
    stream = (int)(rr->cursor[dev]++ % (uint64_t)rr->streams);
  }
  rc = rr_ensure(rr, dev);
  if (rc < 0) {
    rr->refused++;
    return rc;
  }
  rr->placed[(size_t)dev * (size_t)rr->streams + (size_t)stream]++;
  out->device = dev;
  out->stream = stream;
  return 0;
}

static void rr_dump(void *state, FILE *out) {
  const rr_state *rr = state;

  fprintf(out, "round-robin: %d stream(s) per device, %s, devices %s\n",
          rr->streams, rr->by_level ? "by level" : "per op",
          rr->devices_mode == RR_DEVICES_PREFERRED ? "preferred" : "all");
  for (int d = 0; d < rr->ndevices; d++) {
    const uint64_t *p = rr->placed + (size_t)d * (size_t)rr->streams;
    uint64_t sum = 0;
    for (int s = 0; s < rr->streams; s++)
      sum += p[s];
    if (sum == 0)
      continue;
    fprintf(out, "  device %d: %" PRIu64 " ops", d, sum);
    /* Long pools would flood the dump: show their spread instead. */
    if (rr->streams <= 16) {
      fputc(':', out);
      for (int s = 0; s < rr->streams; s++)
        fprintf(out, " %" PRIu64, p[s]);
    } else {
      uint64_t lo = p[0], hi = p[0];
      for (int s = 1; s < rr->streams; s++) {
        lo = p[s] < lo ? p[s] : lo;
        hi = p[s] > hi ? p[s] : hi;
      }
      fprintf(out, ", %" PRIu64 "..%" PRIu64 " per stream", lo, hi);
    }
    fputc('\n', out);
  }
  fprintf(out,
          "  kept on their then_of stream: %" PRIu64 ", refused: %" PRIu64 "\n",
          rr->kept_then, rr->refused);
}

CUA_POLICY_DEFINE(.name = "round-robin", .version = "1.0",
                  .description =
                      "rotates ops over N streams per device; then chains stay "
                      "on their stream",
                  CUA_POLICY_PARAMS(rr_params), .create = rr_create,
                  .destroy = rr_destroy, .place = rr_place, .dump = rr_dump);
