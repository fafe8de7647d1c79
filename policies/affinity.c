/*
 * policies/affinity.c: chooses the device of each op from what the op says
 * about itself, and leaves the stream within that device to a nested policy.
 *
 * Parameters ([policy.affinity]):
 *   rule      STRING, may be repeated, no default. "tag:NAME -> DEVICE":
 *             ops tagged NAME run on DEVICE. Rules are parsed when the
 *             policy is created; a malformed rule, a device the runtime does
 *             not have, or one tag sent to two devices fails the creation
 *             with a log line quoting the rule.
 *   within    STRING, default "round-robin". The policy, opened through the
 *             host (configured from its own [policy.NAME] section), that
 *             picks the stream within the chosen device. Naming affinity
 *             itself, by name or by any path to the module, fails the
 *             creation (the host refuses a policy that nests itself).
 *   fallback  ENUM spread|first|error, default spread. When nothing below
 *             decides the device: spread lets the nested policy choose any
 *             device, first uses device 0, error fails the op with
 *             CUA_ERR_POLICY.
 *
 * The device is decided, first match wins, by: the device the op must run
 * on (restrict_device); its preferred device hint; the rule for its tag; the
 * device its buffers live on (data_device); the fallback. Hints naming a
 * device the runtime does not have are ignored. The nested policy then gets
 * a copy of the op whose restrict_device is the chosen device, and must put
 * the op there: a placement elsewhere fails the op, since the core cannot
 * know that the device was this policy's decision. submitted() and
 * completed() are forwarded to the nested policy with the same copy
 * (restrict_device set to the device the op went to).
 *
 * Giving each device its own policy is what [device.N] `policy =` does in
 * the core; this policy is for routing by tags and data.
 */
#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

enum { AF_SPREAD = 0, AF_FIRST = 1, AF_ERROR = 2 };

/* Why a device was chosen, for dump(). */
enum {
  AF_BY_RESTRICT,
  AF_BY_HINT,
  AF_BY_TAG,
  AF_BY_DATA,
  AF_BY_FALLBACK,
  AF_NREASONS
};

static const char *const af_reason_names[AF_NREASONS] = {
    "required device", "device hint", "tag rule", "data device", "fallback"};

static const cua_param_spec af_params[] = {
    {"rule", CUA_PARAM_STRING, NULL, 0, 0, NULL,
     "tag:NAME -> DEVICE (repeatable): ops tagged NAME run on DEVICE",
     CUA_PARAM_MULTI},
    {"within", CUA_PARAM_STRING, "round-robin", 0, 0, NULL,
     "policy that picks the stream within the chosen device", 0},
    {"fallback", CUA_PARAM_ENUM, "spread", 0, 0, "spread|first|error",
     "when nothing decides the device: nested policy's choice, device 0, or "
     "fail the op",
     0},
};

typedef struct af_rule {
  char *tag;
  int device;
} af_rule;

typedef struct af_state {
  const cua_policy_host *host;
  int ndevices;
  af_rule *rules;
  size_t nrules;
  char *within;
  int fallback;
  cua_policy_nested *nested;
  uint64_t by_reason[AF_NREASONS];
  uint64_t refused;
} af_state;

static void af_destroy(void *state) {
  af_state *af = state;

  if (af == NULL)
    return;
  if (af->nested != NULL)
    af->host->nested_close(af->host->core, af->nested);
  for (size_t i = 0; i < af->nrules; i++)
    free(af->rules[i].tag);
  free(af->rules);
  free(af->within);
  free(af);
}

/* A copy of the first @p n bytes of @p s; strndup() is POSIX, not C. */
static char *af_copy(const char *s, size_t n) {
  char *c = malloc(n + 1);

  if (c != NULL) {
    memcpy(c, s, n);
    c[n] = '\0';
  }
  return c;
}

static const char *af_skip_space(const char *p) {
  while (isspace((unsigned char)*p))
    p++;
  return p;
}

/* Parses "tag:NAME -> DEVICE" into @p out; on error logs a line quoting the
 * rule and returns a negative code. */
static int af_parse_rule(const af_state *af, const char *text, af_rule *out) {
  const cua_policy_host *h = af->host;
  const char *name = af_skip_space(text), *arrow, *end, *num;
  char *num_end;
  long dev;

  if (strncmp(name, "tag:", 4) != 0) {
    h->log(h->core, CUA_LOG_ERROR,
           "rule '%s': expected 'tag:NAME -> DEVICE' (only tag rules exist)",
           text);
    return CUA_ERR_INVAL;
  }
  name = af_skip_space(name + 4);
  arrow = strstr(name, "->");
  if (arrow == NULL) {
    h->log(h->core, CUA_LOG_ERROR,
           "rule '%s': missing '->' (expected 'tag:NAME -> DEVICE')", text);
    return CUA_ERR_INVAL;
  }
  end = arrow;
  while (end > name && isspace((unsigned char)end[-1]))
    end--;
  if (end == name) {
    h->log(h->core, CUA_LOG_ERROR, "rule '%s': the tag name is empty", text);
    return CUA_ERR_INVAL;
  }
  num = af_skip_space(arrow + 2);
  errno = 0;
  /* strtol() alone would accept a sign, and "" as 0. */
  dev = isdigit((unsigned char)*num) ? strtol(num, &num_end, 10) : -1;
  if (dev < 0 || errno != 0 || *af_skip_space(num_end) != '\0') {
    h->log(h->core, CUA_LOG_ERROR,
           "rule '%s': expected a device number after '->'", text);
    return CUA_ERR_INVAL;
  }
  if (dev >= af->ndevices) {
    h->log(h->core, CUA_LOG_ERROR,
           "rule '%s': device %ld does not exist (the runtime has %d)", text,
           dev, af->ndevices);
    return CUA_ERR_BAD_DEVICE;
  }
  if ((out->tag = af_copy(name, (size_t)(end - name))) == NULL)
    return CUA_ERR_NOMEM;
  out->device = (int)dev;
  return 0;
}

/* The rule for @p tag, or NULL. Rules are few, so a scan is enough. */
static const af_rule *af_rule_for(const af_state *af, const char *tag) {
  if (tag == NULL)
    return NULL;
  for (size_t i = 0; i < af->nrules; i++)
    if (strcmp(af->rules[i].tag, tag) == 0)
      return &af->rules[i];
  return NULL;
}

static int af_add_rules(af_state *af, const cua_param_value *v) {
  const cua_policy_host *h = af->host;

  if (v->count == 0)
    return 0;
  af->rules = calloc(v->count, sizeof *af->rules);
  if (af->rules == NULL)
    return CUA_ERR_NOMEM;
  for (size_t i = 0; i < v->count; i++) {
    af_rule r;
    const af_rule *same;
    int rc = af_parse_rule(af, v->list[i], &r);
    if (rc < 0)
      return rc;
    /* One tag sent to two devices is a configuration mistake, and guessing
     * which one was meant would hide it. */
    if ((same = af_rule_for(af, r.tag)) != NULL) {
      int dev = same->device;
      free(r.tag);
      if (dev == r.device)
        continue;
      h->log(h->core, CUA_LOG_ERROR,
             "rule '%s': tag already sent to device %d by an earlier rule",
             v->list[i], dev);
      return CUA_ERR_INVAL;
    }
    af->rules[af->nrules++] = r;
  }
  return 0;
}

static int af_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  af_state *af = calloc(1, sizeof *af);
  const char *within = "round-robin";
  int rc;

  if (af == NULL)
    return CUA_ERR_NOMEM;
  af->host = host;
  af->ndevices = host->device_count(host->core);
  if (af->ndevices < 0)
    af->ndevices = 0;
  af->fallback = AF_SPREAD;
  if (params != NULL) {
    if ((rc = af_add_rules(af, &params[0])) < 0)
      goto fail;
    if (params[1].s != NULL)
      within = params[1].s;
    af->fallback = (int)params[2].i;
    if (af->fallback < AF_SPREAD || af->fallback > AF_ERROR)
      af->fallback = AF_SPREAD;
  }
  /* The name is refused here with a plain message; any other spelling of
   * this module (a path, a link, a copy) only the loaded module tells, and
   * the host's nested_open() refuses those. */
  if (*within == '\0' || strcmp(within, "affinity") == 0) {
    host->log(host->core, CUA_LOG_ERROR,
              "within = '%s': name another policy to pick streams", within);
    rc = CUA_ERR_INVAL;
    goto fail;
  }
  if ((af->within = af_copy(within, strlen(within))) == NULL) {
    rc = CUA_ERR_NOMEM;
    goto fail;
  }
  rc = host->nested_open(host->core, within, &af->nested);
  if (rc < 0) {
    af->nested = NULL;
    host->log(host->core, CUA_LOG_ERROR,
              "within = '%s': the nested policy could not be opened (%d)",
              within, rc);
    goto fail;
  }
  *state = af;
  return 0;

fail:
  af_destroy(af);
  return rc;
}

/* The device for @p op, or -1 to let the nested policy choose; *reason
 * says which rule decided. */
static int af_device(af_state *af, const cua_op_info *op, int *reason) {
  const af_rule *r;

  if (op->restrict_device >= 0) {
    *reason = AF_BY_RESTRICT;
    return op->restrict_device;
  }
  if (op->preferred_device >= 0 && op->preferred_device < af->ndevices) {
    *reason = AF_BY_HINT;
    return op->preferred_device;
  }
  if ((r = af_rule_for(af, op->tag)) != NULL) {
    *reason = AF_BY_TAG;
    return r->device;
  }
  if (op->data_device >= 0 && op->data_device < af->ndevices) {
    *reason = AF_BY_DATA;
    return op->data_device;
  }
  *reason = AF_BY_FALLBACK;
  return af->fallback == AF_FIRST ? 0 : -1;
}

static int af_place(void *state, const cua_op_info *op, cua_placement *out) {
  af_state *af = state;
  const cua_policy_host *h = af->host;
  cua_op_info copy;
  int reason, dev, rc;

  if (af->ndevices == 0) {
    h->log(h->core, CUA_LOG_ERROR, "op %" PRIu64 ": the runtime has no device",
           op->op_id);
    af->refused++;
    return CUA_ERR_NO_DEVICE;
  }
  if (op->restrict_device >= af->ndevices) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 " must run on device %d, but the runtime has %d",
           op->op_id, op->restrict_device, af->ndevices);
    af->refused++;
    return CUA_ERR_BAD_DEVICE;
  }
  dev = af_device(af, op, &reason);
  if (reason == AF_BY_FALLBACK && af->fallback == AF_ERROR) {
    h->log(h->core, CUA_LOG_ERROR,
           "op %" PRIu64 " (%s%s%s): no device hint, tag rule or data device "
           "decides its device, and fallback = error",
           op->op_id, op->name ? op->name : "unnamed", op->tag ? ", tag " : "",
           op->tag ? op->tag : "");
    af->refused++;
    return CUA_ERR_POLICY;
  }
  /* Only the fields this policy was built with are copied, so the copy says
   * so in its size. */
  copy = *op;
  copy.size = sizeof copy;
  copy.restrict_device = dev;
  rc = h->nested_place(h->core, af->nested, &copy, out);
  if (rc < 0) {
    af->refused++;
    return rc;
  }
  if (dev >= 0 && out->device != dev) {
    h->log(h->core, CUA_LOG_ERROR,
           "nested policy '%s' put op %" PRIu64 " on device %d, not on "
           "device %d as required",
           af->within, op->op_id, out->device, dev);
    af->refused++;
    return CUA_ERR_BAD_PLACEMENT;
  }
  af->by_reason[reason]++;
  return 0;
}

static void af_submitted(void *state, const cua_op_info *op,
                         cua_placement where) {
  af_state *af = state;
  cua_op_info copy = *op;

  copy.size = sizeof copy;
  copy.restrict_device = where.device;
  af->host->nested_submitted(af->host->core, af->nested, &copy, where);
}

static void af_completed(void *state, const cua_op_info *op,
                         cua_placement where, uint64_t duration_ns) {
  af_state *af = state;
  cua_op_info copy = *op;

  copy.size = sizeof copy;
  copy.restrict_device = where.device;
  af->host->nested_completed(af->host->core, af->nested, &copy, where,
                             duration_ns);
}

static void af_dump(void *state, FILE *out) {
  const af_state *af = state;
  static const char *const fallbacks[] = {"spread", "first", "error"};

  fprintf(out, "affinity: %zu rule(s), within %s, fallback %s\n", af->nrules,
          af->within, fallbacks[af->fallback]);
  for (size_t i = 0; i < af->nrules; i++)
    fprintf(out, "  rule tag:%s -> %d\n", af->rules[i].tag,
            af->rules[i].device);
  fprintf(out, "  decided by:");
  for (int r = 0; r < AF_NREASONS; r++)
    fprintf(out, " %s %" PRIu64 "%s", af_reason_names[r], af->by_reason[r],
            r + 1 < AF_NREASONS ? "," : "");
  fprintf(out, "; refused %" PRIu64 "\n", af->refused);
}

CUA_POLICY_DEFINE(
        .name = "affinity", .version = "1.0",
        .description =
            "device from the op's hint, tag rule or data; stream from a "
            "nested policy",
        CUA_POLICY_PARAMS(af_params), .create = af_create,
        .destroy = af_destroy, .place = af_place, .submitted = af_submitted,
        .completed = af_completed, .dump = af_dump);
