/*
 * tests/earliest.h: "earliest-end", a policy compiled into the test
 * programs and registered with cua_policy_register() (policy ABI 2.0,
 * written with CUA_POLICY_INIT's named fields).
 *
 * It places each op on the stream, among the devices the op may use,
 * whose expected end (cua_stream_load::expected_end_ns) comes first,
 * keeping a then chain on its stream. It also checks what the core tells
 * it, and refuses the op (CUA_ERR_INTERNAL, with the reason logged) at the
 * first broken promise, so any suite that runs it fails on one:
 * - submission_begin() comes before the first place() of a submission's
 *   ops, and its DAG is well formed (inputs before the op, successors the
 *   inputs turned around, buffer indices in range);
 * - every op placed while its submission's DAG is open is in that DAG;
 * - every input is an op placed before (by this instance or another), on
 *   the placement it was placed on, and an input's expected end is not
 *   after the op's own stream's;
 * - submission_end() comes once per submission_begin(), after its device
 *   ops were placed.
 * Everything it saw is kept in earliest_seen for the suites to read (the
 * policy runs in the test's own process).
 */
#ifndef CUA_TESTS_EARLIEST_H
#define CUA_TESTS_EARLIEST_H

#include <cuasync.h>
#include <cuasync/policy.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define EARLIEST_MAX_OPS 4096
#define EARLIEST_MAX_DAGS 64

/* One op the policy placed. */
typedef struct earliest_op {
  uint64_t op_id, submission;
  char name[32];
  cua_placement where;
  uint64_t expected_end; /* the stream's expected end after it */
  size_t ninputs, nsuccessors;
  uint64_t inputs[8];
  cua_input_state input_state[8];
  uint64_t input_end[8];
} earliest_op;

/* One DAG submission_begin() announced. */
typedef struct earliest_dag {
  uint64_t submission;
  size_t nops, nbuffers, ndevice, placed;
  int ended;
  uint64_t ids[256];
  char names[256][32];
  size_t ninputs[256], nsucc[256], nbuf[256];
  size_t inputs[256][4];
  unsigned access[256][4];
  uint64_t buf_bytes[16];
} earliest_dag;

static struct {
  earliest_op ops[EARLIEST_MAX_OPS];
  size_t nops;
  earliest_dag dags[EARLIEST_MAX_DAGS];
  size_t begins, ends;
  int64_t streams; /* its parameter, as create() got it */
} earliest_seen;

typedef struct earliest_state {
  const cua_policy_host *host;
  int streams;
} earliest_state;

static int earliest_refuse(earliest_state *s, const char *why, uint64_t id) {
  s->host->log(s->host->core, CUA_LOG_ERROR,
               "broken promise: %s (op %" PRIu64 ")", why, id);
  return CUA_ERR_INTERNAL;
}

static earliest_op *earliest_find(uint64_t id) {
  for (size_t i = earliest_seen.nops; i-- > 0;)
    if (earliest_seen.ops[i].op_id == id)
      return &earliest_seen.ops[i];
  return NULL;
}

/* DAGs are kept in a ring by submission id: the last 64. */
static earliest_dag *earliest_dag_of(uint64_t sub) {
  earliest_dag *g = &earliest_seen.dags[sub % EARLIEST_MAX_DAGS];
  return g->submission == sub ? g : NULL;
}

static int earliest_create(const cua_policy_host *host,
                           const cua_param_value *params, void **state) {
  earliest_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  s->streams = (int)params[0].i;
  earliest_seen.streams = params[0].i;
  for (int d = 0; d < host->device_count(host->core); d++) {
    int rc = host->ensure_streams(host->core, d, s->streams);
    if (rc != 0) {
      free(s);
      return rc;
    }
  }
  *state = s;
  return 0;
}

static void earliest_destroy(void *state) {
  free(state);
}

static void earliest_begin(void *state, const cua_dag *dag) {
  earliest_state *s = state;
  earliest_seen.begins++;
  earliest_dag *g = &earliest_seen.dags[dag->submission % EARLIEST_MAX_DAGS];
  memset(g, 0, sizeof *g);
  g->submission = dag->submission;
  g->nops = dag->nops;
  g->nbuffers = dag->nbuffers;
  for (size_t i = 0; i < dag->nops; i++) {
    const cua_dag_op *o = &dag->ops[i];
    g->ndevice += !o->host;
    if (i >= 256)
      continue;
    g->ids[i] = o->op_id;
    snprintf(g->names[i], sizeof g->names[i], "%s", o->name ? o->name : "");
    g->ninputs[i] = o->ninputs;
    g->nsucc[i] = o->nsuccessors;
    g->nbuf[i] = o->nbuffers;
    for (size_t k = 0; k < o->ninputs && k < 4; k++)
      g->inputs[i][k] = o->inputs[k];
    for (size_t k = 0; k < o->nbuffers && k < 4; k++)
      g->access[i][k] = o->access[k];
    /* Well formed: inputs come first, successors mirror them. */
    for (size_t k = 0; k < o->ninputs; k++) {
      size_t j = o->inputs[k], m;
      if (j >= i)
        g->ended = -1;
      for (m = 0; j < dag->nops && m < dag->ops[j].nsuccessors; m++)
        if (dag->ops[j].successors[m] == i)
          break;
      if (j >= dag->nops || m == dag->ops[j].nsuccessors)
        g->ended = -1;
    }
    for (size_t k = 0; k < o->nbuffers; k++)
      if (o->buffers[k] >= dag->nbuffers ||
          (o->access[k] & ~(CUA_ACCESS_READ | CUA_ACCESS_WRITE)) != 0 ||
          o->access[k] == 0)
        g->ended = -1;
  }
  for (size_t b = 0; b < dag->nbuffers && b < 16; b++)
    g->buf_bytes[b] = dag->buffers[b].bytes;
  if (g->ended == -1)
    s->host->log(s->host->core, CUA_LOG_ERROR, "malformed DAG");
}

static void earliest_end(void *state, uint64_t submission) {
  (void)state;
  earliest_seen.ends++;
  earliest_dag *g = earliest_dag_of(submission);
  if (g != NULL && g->ended == 0)
    g->ended = 1;
  else if (g != NULL)
    g->ended = -2; /* twice, or after a malformed DAG */
}

static int earliest_place(void *state, const cua_op_info *op,
                          cua_placement *out) {
  earliest_state *s = state;
  earliest_dag *g = earliest_dag_of(op->submission);
  if (g != NULL && g->ended < 0)
    return earliest_refuse(s, "malformed DAG or submission_end() twice",
                           op->op_id);
  if (g != NULL && g->ended == 1)
    return earliest_refuse(s, "placed after submission_end()", op->op_id);
  if (g != NULL) {
    size_t i;
    for (i = 0; i < g->nops && i < 256; i++)
      if (g->ids[i] == op->op_id)
        break;
    if (i == g->nops)
      return earliest_refuse(s, "an op not in its submission's DAG", op->op_id);
    g->placed++;
  }
  for (size_t k = 0; k < op->ninputs; k++) {
    const cua_op_input *in = &op->inputs[k];
    if (in->op_id >= op->op_id)
      return earliest_refuse(s, "an input made after the op", op->op_id);
    if (in->state == CUA_INPUT_HOST) {
      if (in->where.device != -1)
        return earliest_refuse(s, "a host step with a placement", op->op_id);
      continue;
    }
    const earliest_op *e = earliest_find(in->op_id);
    if (e != NULL && (e->where.device != in->where.device ||
                      e->where.stream != in->where.stream))
      return earliest_refuse(s, "an input's placement changed", op->op_id);
    if (in->where.device < 0 || in->state > CUA_INPUT_HOST)
      return earliest_refuse(s, "an input with no placement", op->op_id);
  }
  /* The stream whose expected end comes first; a then chain stays. */
  int best_d = -1, best_s = -1;
  uint64_t best = UINT64_MAX;
  int nd = s->host->device_count(s->host->core);
  for (int d = 0; d < nd; d++) {
    if (op->restrict_device >= 0 && d != op->restrict_device)
      continue;
    for (int st = 0; st < s->streams; st++) {
      cua_stream_load l;
      memset(&l, 0, sizeof l);
      l.size = sizeof l;
      if (s->host->stream_load(s->host->core, d, st, &l) != 0)
        return earliest_refuse(s, "stream_load() failed", op->op_id);
      if (l.expected_end_ns < best) {
        best = l.expected_end_ns;
        best_d = d;
        best_s = st;
      }
    }
  }
  if (op->then_of.device >= 0 &&
      (op->restrict_device < 0 || op->then_of.device == op->restrict_device) &&
      op->then_of.stream < s->streams) {
    best_d = op->then_of.device;
    best_s = op->then_of.stream;
  }
  out->device = best_d;
  out->stream = best_s;
  if (earliest_seen.nops < EARLIEST_MAX_OPS) {
    earliest_op *e = &earliest_seen.ops[earliest_seen.nops++];
    memset(e, 0, sizeof *e);
    e->op_id = op->op_id;
    e->submission = op->submission;
    snprintf(e->name, sizeof e->name, "%s", op->name ? op->name : "");
    e->where = *out;
    e->ninputs = op->ninputs;
    e->nsuccessors = op->nsuccessors;
    for (size_t k = 0; k < op->ninputs && k < 8; k++) {
      e->inputs[k] = op->inputs[k].op_id;
      e->input_state[k] = op->inputs[k].state;
      e->input_end[k] = op->inputs[k].expected_end_ns;
    }
  }
  return 0;
}

static void earliest_submitted(void *state, const cua_op_info *op,
                               cua_placement where) {
  earliest_state *s = state;
  earliest_op *e = earliest_find(op->op_id);
  cua_stream_load l;
  memset(&l, 0, sizeof l);
  l.size = sizeof l;
  if (e != NULL &&
      s->host->stream_load(s->host->core, where.device, where.stream, &l) == 0)
    e->expected_end = l.expected_end_ns;
}

static const cua_param_spec earliest_params[] = {
    {"streams", CUA_PARAM_INT, "4", 1, 64, NULL, "streams per device", 0},
};

static const cua_policy_descriptor earliest_policy = CUA_POLICY_INIT(
        .name = "earliest-end", .version = "1.0",
        .description =
            "test: the stream whose expected end comes first; checks "
            "what the core promises",
        CUA_POLICY_PARAMS(earliest_params), .create = earliest_create,
        .destroy = earliest_destroy, .place = earliest_place,
        .submitted = earliest_submitted, .submission_begin = earliest_begin,
        .submission_end = earliest_end);

/* Registers it once per process. */
static inline void earliest_register(void) {
  static int done;
  if (done)
    return;
  int rc = cua_policy_register(&earliest_policy);
  if (rc != 0) {
    fprintf(stderr, "cua_policy_register: %s\n", cua_runtime_error(NULL));
    exit(99);
  }
  done = 1;
}

#endif /* CUA_TESTS_EARLIEST_H */
