/*
 * policies/single-stream.c: every op on stream 0 of one device.
 *
 * Ops then run in submission order and the core never has to insert a
 * cross-stream event, which makes this policy the baseline that the others
 * are measured against, and a safe choice while a problem is being narrowed
 * down. It asks for exactly one stream per device it uses, never more.
 *
 * Parameters ([policy.single-stream]):
 *   device  INT, -1..1023, default -1. The device every op runs on. With -1,
 *           an op goes to its preferred device hint when that device exists,
 *           else to device 0. An op whose buffers demand a device
 *           (restrict_device) always goes there, whatever this says.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>

static const cua_param_spec ss_params[] = {
    {"device", CUA_PARAM_INT, "-1", -1, 1023, NULL,
     "device for every op; -1: the op's preferred device, else device 0", 0},
};

typedef struct ss_state {
  const cua_policy_host *host;
  int ndevices;
  int device;           /* configured device, or -1 for "follow the hints" */
  unsigned char *ready; /* per device: stream 0 was ensured */
  uint64_t *placed;     /* per device: ops placed there */
  uint64_t refused;     /* place() calls that returned an error */
} ss_state;

static void ss_destroy(void *state) {
  ss_state *ss = state;

  if (ss == NULL)
    return;
  free(ss->ready);
  free(ss->placed);
  free(ss);
}

static int ss_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  ss_state *ss = calloc(1, sizeof *ss);

  if (ss == NULL)
    return CUA_ERR_NOMEM;
  ss->host = host;
  ss->ndevices = host->device_count(host->core);
  if (ss->ndevices < 0)
    ss->ndevices = 0;
  ss->device = params != NULL ? (int)params[0].i : -1;
  if (ss->device >= 0 && ss->device >= ss->ndevices) {
    host->log(host->core, CUA_LOG_ERROR,
              "device = %d, but the runtime has %d device(s)", ss->device,
              ss->ndevices);
    ss_destroy(ss);
    return CUA_ERR_BAD_DEVICE;
  }
  /* One extra slot keeps calloc(0) from returning NULL on a runtime with
   * no device, where place() then refuses every op. */
  ss->ready = calloc((size_t)ss->ndevices + 1, sizeof *ss->ready);
  ss->placed = calloc((size_t)ss->ndevices + 1, sizeof *ss->placed);
  if (ss->ready == NULL || ss->placed == NULL) {
    ss_destroy(ss);
    return CUA_ERR_NOMEM;
  }
  *state = ss;
  return 0;
}

/* The device an op goes to: the one it must run on, else the configured
 * one, else its hint when that names a real device, else 0. */
static int ss_device(const ss_state *ss, const cua_op_info *op) {
  if (op->restrict_device >= 0)
    return op->restrict_device;
  if (ss->device >= 0)
    return ss->device;
  if (op->preferred_device >= 0 && op->preferred_device < ss->ndevices)
    return op->preferred_device;
  return 0;
}

static int ss_place(void *state, const cua_op_info *op, cua_placement *out) {
  ss_state *ss = state;
  const cua_policy_host *h = ss->host;
  int dev = ss_device(ss, op);

  if (ss->ndevices == 0) {
    h->log(h->core, CUA_LOG_ERROR, "op %" PRIu64 ": the runtime has no device",
           op->op_id);
    ss->refused++;
    return CUA_ERR_NO_DEVICE;
  }
  if (dev >= ss->ndevices) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 " must run on device %d, but the runtime has %d",
           op->op_id, dev, ss->ndevices);
    ss->refused++;
    return CUA_ERR_BAD_DEVICE;
  }
  /* Streams are never destroyed while the runtime lives, so one successful
   * ensure_streams() per device is enough. */
  if (!ss->ready[dev]) {
    int rc = h->ensure_streams(h->core, dev, 1);
    if (rc < 0) {
      h->log(h->core, CUA_LOG_ERROR, "no stream on device %d (error %d)", dev,
             rc);
      ss->refused++;
      return rc;
    }
    ss->ready[dev] = 1;
  }
  ss->placed[dev]++;
  out->device = dev;
  out->stream = 0;
  return 0;
}

static void ss_dump(void *state, FILE *out) {
  const ss_state *ss = state;

  if (ss->device >= 0)
    fprintf(out, "single-stream: device %d, stream 0\n", ss->device);
  else
    fprintf(out, "single-stream: stream 0 of the hinted device (else 0)\n");
  for (int d = 0; d < ss->ndevices; d++)
    if (ss->placed[d] > 0)
      fprintf(out, "  device %d: %" PRIu64 " ops\n", d, ss->placed[d]);
  fprintf(out, "  refused: %" PRIu64 "\n", ss->refused);
}

CUA_POLICY_DEFINE(.name = "single-stream", .version = "1.0",
                  .description =
                      "every op on stream 0 of one device, in submission order",
                  CUA_POLICY_PARAMS(ss_params), .create = ss_create,
                  .destroy = ss_destroy, .place = ss_place, .dump = ss_dump);
