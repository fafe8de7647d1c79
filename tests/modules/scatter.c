/*
 * tests/modules/scatter.c: a test-only policy that puts every op on a
 * pseudo-random stream, ignoring then_of and every hint.
 *
 * Ordering tests run DAGs under it: since consecutive ops, chains included,
 * land on unrelated streams, any event the core forgets to insert shows up
 * as a wrong result. It still honours restrict_device (that is a rule, not a
 * hint) and asks for its streams, so every placement it makes is valid. The
 * sequence depends only on the seed, so a failure can be replayed.
 *
 * Parameters ([policy.scatter]):
 *   streams  INT, 1..1024, default 4. Streams per device.
 *   devices  ENUM all|first, default all. all: any device; first: device 0.
 *   seed     INT, 0..2^32-1, default 1. Seed of the xorshift generator.
 *   debug_poison  BOOL, default false. place() logs a CUA_LOG_DEBUG line
 *            whose argument is an invalid pointer: formatting it crashes,
 *            so a runtime without $CUASYNC_DEBUG must not format it
 *            (tests/check_sched.c).
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

enum { SC_DEVICES_ALL = 0, SC_DEVICES_FIRST = 1 };

static const cua_param_spec sc_params[] = {
    {"streams", CUA_PARAM_INT, "4", 1, 1024, NULL, "streams per device", 0},
    {"devices", CUA_PARAM_ENUM, "all", 0, 0, "all|first",
     "all: scatter over every device; first: device 0 only", 0},
    {"seed", CUA_PARAM_INT, "1", 0, 4294967295.0, NULL,
     "seed of the pseudo-random sequence", 0},
    {"debug_poison", CUA_PARAM_BOOL, "false", 0, 0, NULL,
     "log a debug line that crashes if formatted (tests only)", 0},
};

typedef struct sc_state {
  const cua_policy_host *host;
  int ndevices;
  int streams;
  int devices_mode;
  uint64_t rng;
  unsigned char *ready; /* per device: streams were ensured */
  uint64_t placed;
  uint64_t refused;
  uint64_t completed;
  int debug_poison;
  char last[64];
  uint64_t order[8]; /* the first ops placed, by op_id, for the tests */
  size_t norder;     /* name and tag completed() last saw, for the tests */
} sc_state;

/* xorshift64: tiny, and good enough to scatter ops; never seeded with 0,
 * which it would keep for ever. */
static uint64_t sc_next(sc_state *sc) {
  uint64_t x = sc->rng;

  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  sc->rng = x;
  return x;
}

static void sc_destroy(void *state) {
  sc_state *sc = state;

  if (sc == NULL)
    return;
  free(sc->ready);
  free(sc);
}

static int sc_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  sc_state *sc = calloc(1, sizeof *sc);
  uint64_t seed;

  if (sc == NULL)
    return CUA_ERR_NOMEM;
  sc->host = host;
  sc->ndevices = host->device_count(host->core);
  if (sc->ndevices < 0)
    sc->ndevices = 0;
  sc->streams = params != NULL ? (int)params[0].i : 4;
  sc->devices_mode = params != NULL ? (int)params[1].i : SC_DEVICES_ALL;
  seed = params != NULL ? (uint64_t)params[2].i : 1;
  sc->debug_poison = params != NULL ? params[3].i != 0 : 0;
  if (sc->streams < 1 || sc->streams > 1024) {
    host->log(host->core, CUA_LOG_ERROR, "streams = %d is not in 1..1024",
              sc->streams);
    sc_destroy(sc);
    return CUA_ERR_INVAL;
  }
  /* Spread the seed over all 64 bits (and away from 0) so that nearby
   * seeds give unrelated sequences from the first op on. */
  sc->rng = (seed + 1) * 0x9e3779b97f4a7c15ULL;
  sc->rng ^= sc->rng >> 31;
  if (sc->rng == 0)
    sc->rng = 0x2545f4914f6cdd1dULL;
  sc->ready = calloc((size_t)sc->ndevices + 1, sizeof *sc->ready);
  if (sc->ready == NULL) {
    sc_destroy(sc);
    return CUA_ERR_NOMEM;
  }
  *state = sc;
  return 0;
}

static int sc_place(void *state, const cua_op_info *op, cua_placement *out) {
  sc_state *sc = state;
  const cua_policy_host *h = sc->host;
  uint64_t r = sc_next(sc);
  int dev;

  if (sc->debug_poison)
    h->log(h->core, CUA_LOG_DEBUG, "op %" PRIu64 " %s", op->op_id,
           (const char *)(uintptr_t)1);

  if (sc->ndevices == 0 || op->restrict_device >= sc->ndevices) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 ": device %d requested, the runtime has %d", op->op_id,
           op->restrict_device, sc->ndevices);
    sc->refused++;
    return sc->ndevices == 0 ? CUA_ERR_NO_DEVICE : CUA_ERR_BAD_DEVICE;
  }
  if (op->restrict_device >= 0)
    dev = op->restrict_device;
  else if (sc->devices_mode == SC_DEVICES_FIRST)
    dev = 0;
  else
    dev = (int)((r >> 32) % (uint64_t)sc->ndevices);
  if (!sc->ready[dev]) {
    int rc = h->ensure_streams(h->core, dev, sc->streams);
    if (rc < 0) {
      h->log(h->core, CUA_LOG_ERROR, "cannot get %d streams on device %d",
             sc->streams, dev);
      sc->refused++;
      return rc;
    }
    sc->ready[dev] = 1;
  }
  out->device = dev;
  out->stream = (int)((r & 0xffffffffu) % (uint64_t)sc->streams);
  sc->placed++;
  if (sc->norder < sizeof sc->order / sizeof *sc->order)
    sc->order[sc->norder++] = op->op_id;
  return 0;
}

/* Counts completions and keeps the last op's name and tag, which the core
 * passes to completed() as it does to place() (tests/check_sched.c). */
static void sc_completed(void *state, const cua_op_info *op,
                         cua_placement where, uint64_t duration_ns) {
  sc_state *sc = state;

  (void)where;
  (void)duration_ns;
  sc->completed++;
  snprintf(sc->last, sizeof sc->last, "name %s tag %s",
           op->name ? op->name : "(none)", op->tag ? op->tag : "(none)");
}

static void sc_dump(void *state, FILE *out) {
  const sc_state *sc = state;

  fprintf(out,
          "scatter: %d stream(s) per device, devices %s; placed %" PRIu64
          ", refused %" PRIu64 ", completed %" PRIu64 " (last: %s)\n",
          sc->streams, sc->devices_mode == SC_DEVICES_FIRST ? "first" : "all",
          sc->placed, sc->refused, sc->completed,
          sc->last[0] ? sc->last : "none");
  fprintf(out, "scatter: first placed (op ids):");
  for (size_t i = 0; i < sc->norder; i++)
    fprintf(out, " %" PRIu64, sc->order[i]);
  fprintf(out, "\n");
}

CUA_POLICY_DEFINE(.name = "scatter", .version = "1.0",
                  .description =
                      "test only: every op on a pseudo-random stream, ignoring "
                      "then_of",
                  CUA_POLICY_PARAMS(sc_params), .create = sc_create,
                  .destroy = sc_destroy, .place = sc_place,
                  .completed = sc_completed, .dump = sc_dump);
