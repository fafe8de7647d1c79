/*
 * random-policy.c: an example scheduling policy for cuasync, built outside
 * the cuasync tree against the installed headers (see README.md).
 *
 * Policy "random": each op goes to a pseudo-random stream of a
 * pseudo-random device, except that
 * - an op whose buffers demand a device (op->restrict_device >= 0) always
 *   goes to that device: a policy must honour it, or the core fails the op;
 * - an op with priority > 0 goes to stream 0 of its device, and ordinary
 *   ops never do (when there are at least two streams). Stream 0 is then a
 *   lane kept for urgent work: a priority op never queues behind ordinary
 *   ops on its own stream, only behind the ops whose results it needs. With
 *   streams = 1 there is no room for a separate lane and every op shares
 *   stream 0.
 *
 * Nothing here has to be correct about ordering: the core inserts whatever
 * event waits keep results equal to running the ops one by one, whatever
 * streams the policy picks.
 *
 * Parameters, in the [policy.random] section of the INI file:
 *   seed     INT, 0..4294967295, default 1. Same seed, same placements.
 *   streams  INT, 1..1024, default 4. Streams used on each device.
 *
 * The policy calls the core only through the host table handed to create(),
 * so it does not link against libcuasync.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>

/* The INI schema. The core checks the section against it and hands
 * create() one value per entry, in this order, defaults filled in. */
static const cua_param_spec random_params[] = {
    {"seed", CUA_PARAM_INT, "1", 0, 4294967295.0, NULL,
     "seed of the pseudo-random choices", 0},
    {"streams", CUA_PARAM_INT, "4", 1, 1024, NULL,
     "streams per device; stream 0 is kept for ops with priority > 0", 0},
};

typedef struct random_state {
  const cua_policy_host *host;
  int ndevices;
  int streams;
  uint64_t rng;
  unsigned char *ready; /* per device: its streams were asked for */
  uint64_t ordinary, urgent, refused;
} random_state;

/* xorshift64*: small, fast, and plenty for spreading ops. */
static uint64_t random_next(random_state *r) {
  r->rng ^= r->rng >> 12;
  r->rng ^= r->rng << 25;
  r->rng ^= r->rng >> 27;
  return r->rng * 0x2545f4914f6cdd1dULL;
}

/* A number in 0..n-1 (n > 0); the high bits of xorshift64* are its best. */
static int random_below(random_state *r, int n) {
  return (int)((random_next(r) >> 32) % (uint64_t)n);
}

static void random_destroy(void *state) {
  random_state *r = state;

  if (r == NULL)
    return;
  free(r->ready);
  free(r);
}

static int random_create(const cua_policy_host *host,
                         const cua_param_value *params, void **state) {
  random_state *r = calloc(1, sizeof *r);

  if (r == NULL)
    return CUA_ERR_NOMEM;
  r->host = host;
  r->ndevices = host->device_count(host->core);
  if (r->ndevices < 0)
    r->ndevices = 0;
  r->streams = (int)params[1].i;
  /* xorshift never leaves 0, so the seed is mixed into a non-zero state. */
  r->rng = ((uint64_t)params[0].i + 1) * 0x9e3779b97f4a7c15ULL;
  if (r->rng == 0)
    r->rng = 1;
  /* One spare entry: calloc(0) may return NULL. */
  r->ready = calloc((size_t)r->ndevices + 1, 1);
  if (r->ready == NULL) {
    random_destroy(r);
    return CUA_ERR_NOMEM;
  }
  *state = r;
  return 0;
}

static int random_place(void *state, const cua_op_info *op,
                        cua_placement *out) {
  random_state *r = state;
  const cua_policy_host *h = r->host;
  int dev;

  if (r->ndevices == 0 || op->restrict_device >= r->ndevices) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 ": device %d is required, the runtime has %d",
           op->op_id, op->restrict_device, r->ndevices);
    r->refused++;
    return r->ndevices == 0 ? CUA_ERR_NO_DEVICE : CUA_ERR_BAD_DEVICE;
  }
  dev = op->restrict_device >= 0 ? op->restrict_device
                                 : random_below(r, r->ndevices);
  /* A stream index is only valid once the core has been asked for it.
   * Streams live as long as the runtime, so once per device is enough. */
  if (!r->ready[dev]) {
    int rc = h->ensure_streams(h->core, dev, r->streams);
    if (rc < 0) {
      h->log(h->core, CUA_LOG_ERROR, "cannot get %d streams on device %d",
             r->streams, dev);
      r->refused++;
      return rc;
    }
    r->ready[dev] = 1;
  }
  out->device = dev;
  if (op->priority > 0 || r->streams == 1) {
    out->stream = 0;
  } else {
    out->stream = 1 + random_below(r, r->streams - 1);
  }
  if (op->priority > 0)
    r->urgent++;
  else
    r->ordinary++;
  return 0;
}

static void random_dump(void *state, FILE *out) {
  const random_state *r = state;

  fprintf(out,
          "random: %d stream(s) per device; %" PRIu64 " ordinary ops, %" PRIu64
          " priority ops on stream 0, %" PRIu64 " refused\n",
          r->streams, r->ordinary, r->urgent, r->refused);
}

/* The one symbol cuasync looks for. No submitted()/completed(): this
 * policy keeps no per-op state. */
CUA_POLICY_DEFINE(
        .name = "random", .version = "1.0",
        .description = "pseudo-random streams; priority > 0 ops on stream 0",
        CUA_POLICY_PARAMS(random_params), .create = random_create,
        .destroy = random_destroy, .place = random_place, .dump = random_dump);
