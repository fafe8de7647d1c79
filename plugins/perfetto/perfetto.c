/*
 * plugins/perfetto/perfetto.c: the perfetto observer: writes what a
 * runtime did as Chrome Trace Event JSON, which ui.perfetto.dev and
 * chrome://tracing open.
 *
 * Parameters ([observer.perfetto]):
 *   path   STRING, default "cuasync-trace-%p.json". The file written when
 *          the runtime closes; %p is the process id, %% a '%'.
 *          $CUASYNC_TRACE sets it (and opens this observer).
 *
 * The trace: a process per device ("device N: NAME"), a thread (track) per
 * stream ("stream S"), and a process "host" with a track "submissions".
 * Each op that ran is a complete event ("ph": "X") on its stream's track,
 * named by its name hint or kind, with args: op id, kind, tag, submission,
 * policy, bytes, cost hint, inputs (the ids of the ops it depends on, at
 * most 16), device, stream, timing ("measured", "end-measured" or "estimated"),
 * and the error code of a failed op. Each submission is an instant event on the
 * host track, each placement an instant event with the policy's choice. Each
 * dependency between ops on different streams is a flow (an arrow from the
 * producer's slice to the consumer's: "ph": "s" and "f", category
 * "dependency"), and each wait the core inserted between streams a flow of
 * category "wait". Times are microseconds from the first record.
 * otherData.summary holds the ops, the makespan, the critical path by the
 * slices' durations, the waits, and per stream its ops, busy time and idle
 * gaps. Everything is kept in memory and written by flush().
 *
 * Owns its instance only; record() runs on the runtime's observer thread,
 * the rest on the thread opening or closing the runtime: no lock needed.
 */
#include <cuasync/errors.h>
#include <cuasync/observer.h>

#include "jsonstr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const cua_param_spec pf_params[] = {
    {"path", CUA_PARAM_STRING, "cuasync-trace-%p.json", 0, 0, NULL,
     "the JSON file written when the runtime closes (%p: process id)", 0},
};

/* What it keeps of a record. */
typedef struct pf_rec {
  cua_obs_kind kind;
  uint64_t t0, t1;
  uint64_t op, other, submission;
  int device, stream, other_device, other_stream;
  int kind_op, code, timing;
  uint64_t bytes, cost;
  char *name, *tag, *policy;
  uint32_t ninputs;
  uint64_t *inputs;
} pf_rec;

typedef struct pf_state {
  const cua_observer_host *host;
  char *path;
  pf_rec *v;
  size_t n, cap;
  int failed;
} pf_state;

static char *dup_or_null(const char *s) {
  if (s == NULL)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d != NULL)
    memcpy(d, s, n);
  return d;
}

/* The path with %p replaced by the process id and %% by '%'. */
static char *expand(const char *pattern) {
  size_t n = strlen(pattern), cap = n + 32;
  char *out = malloc(cap);
  if (out == NULL)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (o + 24 >= cap) {
      char *g = realloc(out, cap *= 2);
      if (g == NULL) {
        free(out);
        return NULL;
      }
      out = g;
    }
    if (pattern[i] == '%' && pattern[i + 1] == 'p') {
      o += (size_t)snprintf(out + o, cap - o, "%ld", (long)getpid());
      i++;
    } else if (pattern[i] == '%' && pattern[i + 1] == '%') {
      out[o++] = '%';
      i++;
    } else {
      out[o++] = pattern[i];
    }
  }
  out[o] = '\0';
  return out;
}

static int pf_create(const cua_observer_host *host,
                     const cua_param_value *params, void **state) {
  pf_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  const char *p = params[0].s != NULL ? params[0].s : "cuasync-trace-%p.json";
  if (*p == '\0') {
    host->log(host->core, CUA_LOG_ERROR, "path is empty");
    free(s);
    return CUA_ERR_INVAL;
  }
  s->path = expand(p);
  if (s->path == NULL) {
    free(s);
    return CUA_ERR_NOMEM;
  }
  /* Refuse a path that cannot be written now rather than lose the trace
   * at the end. */
  FILE *f = fopen(s->path, "a"); /* not truncated until the trace is written */
  if (f == NULL) {
    host->log(host->core, CUA_LOG_ERROR, "cannot write %s: %s", s->path,
              strerror(errno));
    free(s->path);
    free(s);
    return CUA_ERR_INVAL;
  }
  fclose(f);
  *state = s;
  return 0;
}

static void rec_free(pf_rec *r) {
  free(r->name);
  free(r->tag);
  free(r->policy);
  free(r->inputs);
}

static void pf_destroy(void *state) {
  pf_state *s = state;
  for (size_t i = 0; i < s->n; i++)
    rec_free(&s->v[i]);
  free(s->v);
  free(s->path);
  free(s);
}

static int pf_record(void *state, const cua_obs_record *recs, size_t n,
                     size_t stride) {
  pf_state *s = state;
  for (size_t i = 0; i < n; i++) {
    const cua_obs_record *r =
        (const cua_obs_record *)(const void *)((const char *)recs + i * stride);
    if (r->kind != CUA_OBS_SUBMIT && r->kind != CUA_OBS_PLACE &&
        r->kind != CUA_OBS_WAIT && r->kind != CUA_OBS_OP &&
        r->kind != CUA_OBS_TIMES && r->kind != CUA_OBS_GRAPH_CAPTURE)
      continue;
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 1024;
      pf_rec *g = realloc(s->v, cap * sizeof *g);
      if (g == NULL) {
        s->host->log(s->host->core, CUA_LOG_ERROR,
                     "out of memory after %zu records", s->n);
        return CUA_ERR_NOMEM;
      }
      s->v = g;
      s->cap = cap;
    }
    pf_rec *k = &s->v[s->n];
    memset(k, 0, sizeof *k);
    k->kind = r->kind;
    k->t0 = r->kind == CUA_OBS_OP || r->kind == CUA_OBS_TIMES ||
                    r->kind == CUA_OBS_GRAPH_CAPTURE
                ? r->start_ns
                : r->t_ns;
    k->t1 = r->end_ns;
    k->op = r->op_id;
    /* (a graph capture's: its ops) */
    k->other =
        r->kind == CUA_OBS_GRAPH_CAPTURE ? r->ninputs_total : r->other_op;
    k->submission = r->submission;
    k->device = r->device;
    k->stream = r->stream;
    k->other_device = r->other_device;
    k->other_stream = r->other_stream;
    k->kind_op = (int)r->op_kind;
    k->code = r->code;
    k->timing = (int)r->timing;
    k->bytes = r->bytes;
    k->cost = r->cost_ns;
    k->name = dup_or_null(r->name);
    k->tag = dup_or_null(r->tag);
    k->policy = dup_or_null(r->policy);
    if (r->kind == CUA_OBS_PLACE && r->ninputs > 0) {
      k->inputs = malloc(r->ninputs * sizeof *k->inputs);
      if (k->inputs != NULL) {
        memcpy(k->inputs, r->inputs, r->ninputs * sizeof *k->inputs);
        k->ninputs = r->ninputs;
      }
    }
    s->n++;
  }
  return 0;
}

/* @p ns after @p base as microseconds with three decimals, written by hand
 * so that no locale's decimal comma gets into the JSON. */
static void put_us(FILE *f, uint64_t ns, uint64_t base) {
  uint64_t d = ns > base ? ns - base : 0;
  fprintf(f, "%" PRIu64 ".%03u", d / 1000, (unsigned)(d % 1000));
}

static const char *kind_name(int k) {
  switch (k) {
#define PF_KIND(id, val, name, launched, desc)                                 \
  case CUA_OP_##id:                                                            \
    return name;
    CUA_OP_KIND_MAP(PF_KIND)
#undef PF_KIND
  default:
    return "op";
  }
}

/* Process ids: device d is d + 1, the host 0. */
#define PID(d) ((d) + 1)

static int cmp_op(const void *a, const void *b) {
  const pf_rec *x = *(pf_rec *const *)a, *y = *(pf_rec *const *)b;
  return x->op < y->op ? -1 : x->op > y->op;
}

/* The OP record of op @p id among @p ops (sorted), or NULL. */
static const pf_rec *find_op(pf_rec **ops, size_t n, uint64_t id) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ops[mid]->op < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && ops[lo]->op == id ? ops[lo] : NULL;
}

/* A flow from the end of @p from's slice to the start of @p to's. */
static void put_flow(FILE *f, const char *cat, uint64_t id, const pf_rec *from,
                     const pf_rec *to, uint64_t base) {
  fprintf(f,
          ",\n{\"ph\":\"s\",\"cat\":\"%s\",\"name\":\"%s\",\"id\":%" PRIu64
          ",\"pid\":%d,\"tid\":%d,\"ts\":",
          cat, cat, id, PID(from->device), from->stream);
  /* A nanosecond before the producer's end, so that the arrow leaves its
   * slice. */
  put_us(f, from->t1 > from->t0 ? from->t1 - 1 : from->t1, base);
  fprintf(f,
          "}"
          ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"%s\",\"name\":\"%s\","
          "\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"ts\":",
          cat, cat, id, PID(to->device), to->stream);
  put_us(f, to->t0, base);
  fprintf(f, "}");
}

/* One stream's share of the summary. */
typedef struct pf_stream {
  int device, stream;
  size_t ops;
  uint64_t busy, first, last;
} pf_stream;

/* What a policy researcher reads first, into otherData.summary: the ops,
 * the makespan, the critical path (the longest chain of dependencies, by
 * the slices' durations), the waits inserted, and per stream its ops, busy
 * time and idle gaps (between its first start and its last end). */
static int put_summary(const pf_state *s, FILE *f, pf_rec **ops, size_t nops,
                       pf_rec **places, size_t nplaces) {
  uint64_t t0 = UINT64_MAX, t1 = 0, cpmax = 0;
  size_t waits = 0, nst = 0;
  pf_stream *st = NULL;
  uint64_t *cp = malloc((nops ? nops : 1) * sizeof *cp);
  if (cp == NULL)
    return -1;
  for (size_t i = 0; i < s->n; i++)
    waits += s->v[i].kind == CUA_OBS_WAIT;
  /* Op ids grow with construction, and an op's inputs exist before it:
   * in id order, every input's path is known before its consumer's. */
  for (size_t i = 0; i < nops; i++) {
    const pf_rec *r = ops[i];
    if (r->t0 < t0)
      t0 = r->t0;
    if (r->t1 > t1)
      t1 = r->t1;
    uint64_t before = 0;
    const pf_rec *p = find_op(places, nplaces, r->op);
    for (uint32_t k = 0; p != NULL && k < p->ninputs; k++) {
      size_t lo = 0, hi = i;
      while (lo < hi) { /* the input among the ops before this one */
        size_t mid = lo + (hi - lo) / 2;
        if (ops[mid]->op < p->inputs[k])
          lo = mid + 1;
        else
          hi = mid;
      }
      if (lo < i && ops[lo]->op == p->inputs[k] && cp[lo] > before)
        before = cp[lo];
    }
    cp[i] = before + (r->t1 - r->t0);
    if (cp[i] > cpmax)
      cpmax = cp[i];
    size_t j = 0;
    while (j < nst && (st[j].device != r->device || st[j].stream != r->stream))
      j++;
    if (j == nst) {
      pf_stream *g = realloc(st, (nst + 1) * sizeof *g);
      if (g == NULL) {
        free(st);
        free(cp);
        return -1;
      }
      st = g;
      st[nst++] = (pf_stream){r->device, r->stream, 0, 0, r->t0, r->t1};
    }
    st[j].ops++;
    st[j].busy += r->t1 - r->t0;
    if (r->t0 < st[j].first)
      st[j].first = r->t0;
    if (r->t1 > st[j].last)
      st[j].last = r->t1;
  }
  fprintf(f, ",\"summary\":{\"ops\":%zu,\"makespan_us\":", nops);
  put_us(f, nops ? t1 : 0, nops ? t0 : 0);
  fprintf(f, ",\"critical_path_us\":");
  put_us(f, cpmax, 0);
  fprintf(f, ",\"waits\":%zu,\"streams\":[", waits);
  for (size_t j = 0; j < nst; j++) {
    uint64_t span = st[j].last - st[j].first;
    fprintf(f, "%s{\"device\":%d,\"stream\":%d,\"ops\":%zu,\"busy_us\":",
            j ? "," : "", st[j].device, st[j].stream, st[j].ops);
    put_us(f, st[j].busy, 0);
    fprintf(f, ",\"idle_us\":");
    put_us(f, span > st[j].busy ? span - st[j].busy : 0, 0);
    fprintf(f, "}");
  }
  fprintf(f, "]}");
  free(st);
  free(cp);
  return 0;
}

static int write_trace(pf_state *s, FILE *f) {
  uint64_t base = UINT64_MAX;
  size_t nops = 0;
  int maxdev = -1;
  for (size_t i = 0; i < s->n; i++) {
    if (s->v[i].t0 != 0 && s->v[i].t0 < base)
      base = s->v[i].t0;
    if (s->v[i].kind == CUA_OBS_OP)
      nops++;
    if (s->v[i].device > maxdev)
      maxdev = s->v[i].device;
  }
  if (base == UINT64_MAX)
    base = 0;
  size_t nplaces = 0;
  for (size_t i = 0; i < s->n; i++)
    nplaces += s->v[i].kind == CUA_OBS_PLACE;
  pf_rec **ops = malloc((nops ? nops : 1) * sizeof *ops);
  pf_rec **places = malloc((nplaces ? nplaces : 1) * sizeof *places);
  if (ops == NULL || places == NULL) {
    free(ops);
    free(places);
    return -1;
  }
  nops = nplaces = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (s->v[i].kind == CUA_OBS_OP)
      ops[nops++] = &s->v[i];
    else if (s->v[i].kind == CUA_OBS_PLACE)
      places[nplaces++] = &s->v[i];
  }
  qsort(ops, nops, sizeof *ops, cmp_op);
  qsort(places, nplaces, sizeof *places, cmp_op);
  /* Device times measured after the fact replace their ops' own. */
  for (size_t i = 0; i < s->n; i++) {
    const pf_rec *t = &s->v[i];
    pf_rec *o = t->kind == CUA_OBS_TIMES
                    ? (pf_rec *)(uintptr_t)find_op(ops, nops, t->op)
                    : NULL;
    if (o != NULL && t->t1 >= t->t0) {
      o->t0 = t->t0;
      o->t1 = t->t1;
      o->timing = CUA_OBS_TIMING_MEASURED;
    }
  }

  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"backend\":");
  cua_jsonstr_put(f, s->host->backend_name(s->host->core));
  if (put_summary(s, f, ops, nops, places, nplaces) != 0) {
    free(ops);
    free(places);
    return -1;
  }
  fprintf(f, "},\"traceEvents\":[\n");
  fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,"
             "\"args\":{\"name\":\"host\"}}");
  fprintf(f, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":0,"
             "\"args\":{\"name\":\"submissions and placements\"}}");
  int ndev = s->host->device_count(s->host->core);
  for (int d = 0; d < ndev || d <= maxdev; d++) {
    cua_device_info di;
    memset(&di, 0, sizeof di);
    di.size = sizeof di;
    char label[192];
    if (d < ndev && s->host->device_info(s->host->core, d, &di) == 0)
      snprintf(label, sizeof label, "device %d: %s", d, di.name);
    else
      snprintf(label, sizeof label, "device %d", d);
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,"
            "\"tid\":0,\"args\":{\"name\":",
            PID(d));
    cua_jsonstr_put(f, label);
    fprintf(f, "}}");
  }
  /* A name for each stream that appears (device, stream pairs kept in a
   * small sorted list). */
  int *named = NULL;
  size_t nnamed = 0;
  for (size_t i = 0; i < nops; i++) {
    int key = ops[i]->device * 4096 + ops[i]->stream, seen = 0;
    for (size_t j = 0; j < nnamed && !seen; j++)
      seen = named[j] == key;
    if (seen)
      continue;
    int *g = realloc(named, (nnamed + 1) * sizeof *g);
    if (g == NULL)
      break;
    named = g;
    named[nnamed++] = key;
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
            "\"args\":{\"name\":\"stream %d\"}}",
            PID(ops[i]->device), ops[i]->stream, ops[i]->stream);
  }
  free(named);
  uint64_t flow = 0;
  for (size_t i = 0; i < s->n; i++) {
    const pf_rec *r = &s->v[i];
    switch (r->kind) {
    case CUA_OBS_SUBMIT:
      fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":\"submit\",\"pid\":0,"
                 "\"tid\":0,\"ts\":");
      put_us(f, r->t0, base);
      fprintf(f, ",\"args\":{\"submission\":%" PRIu64 "}}", r->submission);
      break;
    case CUA_OBS_PLACE: {
      fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":\"place\",\"pid\":0,"
                 "\"tid\":0,\"ts\":");
      put_us(f, r->t0, base);
      fprintf(f,
              ",\"args\":{\"op\":%" PRIu64 ",\"submission\":%" PRIu64
              ",\"device\":%d,\"stream\":%d,\"policy\":",
              r->op, r->submission, r->device, r->stream);
      cua_jsonstr_put(f, r->policy);
      fprintf(f, "}}");
      /* Dependencies between streams, as flows between the slices. */
      const pf_rec *to = find_op(ops, nops, r->op);
      for (uint32_t k = 0; to != NULL && k < r->ninputs; k++) {
        const pf_rec *from = find_op(ops, nops, r->inputs[k]);
        if (from != NULL &&
            (from->device != to->device || from->stream != to->stream))
          put_flow(f, "dependency", ++flow, from, to, base);
      }
      break;
    }
    case CUA_OBS_WAIT: {
      const pf_rec *to = find_op(ops, nops, r->op);
      const pf_rec *from = r->other ? find_op(ops, nops, r->other) : NULL;
      if (to != NULL && from != NULL)
        put_flow(f, "wait", ++flow, from, to, base);
      break;
    }
    case CUA_OBS_LAUNCH: /* (never recorded: launch() only) */
    case CUA_OBS_TIMES:  /* (applied to their ops above) */
      break;
    case CUA_OBS_OP: {
      fprintf(f, ",\n{\"ph\":\"X\",\"name\":");
      cua_jsonstr_put(f, r->name != NULL ? r->name : kind_name(r->kind_op));
      fprintf(f,
              ",\"cat\":\"op\",\"pid\":%d,\"tid\":%d,\"ts\":", PID(r->device),
              r->stream);
      put_us(f, r->t0, base);
      fprintf(f, ",\"dur\":");
      put_us(f, r->t1, r->t0);
      fprintf(f,
              ",\"args\":{\"op\":%" PRIu64 ",\"kind\":\"%s\","
              "\"submission\":%" PRIu64 ",\"device\":%d,\"stream\":%d,"
              "\"timing\":\"%s\"",
              r->op, kind_name(r->kind_op), r->submission, r->device, r->stream,
              r->timing == CUA_OBS_TIMING_MEASURED       ? "measured"
              : r->timing == CUA_OBS_TIMING_END_MEASURED ? "end-measured"
                                                         : "estimated");
      /* What its placement said. */
      const pf_rec *p = find_op(places, nplaces, r->op);
      if (p != NULL) {
        fprintf(f, ",\"policy\":");
        cua_jsonstr_put(f, p->policy);
        fprintf(f,
                ",\"bytes\":%" PRIu64 ",\"cost_ns\":%" PRIu64 ",\"inputs\":[",
                p->bytes, p->cost);
        for (uint32_t k = 0; k < p->ninputs; k++)
          fprintf(f, "%s%" PRIu64, k ? "," : "", p->inputs[k]);
        fprintf(f, "]");
      }
      if (r->tag != NULL) {
        fprintf(f, ",\"tag\":");
        cua_jsonstr_put(f, r->tag);
      }
      if (r->code != 0)
        fprintf(f, ",\"error\":%d", r->code);
      fprintf(f, "}}");
      break;
    }
    case CUA_OBS_GRAPH_CAPTURE:
      fprintf(f, ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":\"graph capture\","
                 "\"pid\":0,\"tid\":0,\"ts\":");
      put_us(f, r->t0, base);
      fprintf(f,
              ",\"args\":{\"submission\":%" PRIu64 ",\"ops\":%" PRIu64
              ",\"capture_us\":",
              r->submission, r->other);
      put_us(f, r->t1 > r->t0 ? r->t1 : r->t0, r->t0);
      fprintf(f, ",\"error\":%d}}", r->code);
      break;
    default:
      break;
    }
  }
  fprintf(f, "\n]}\n");
  free(ops);
  free(places);
  return 0;
}

/* Writes the trace; a failure is logged with its reason (the runtime is
 * closing: there is no caller to return it to). Into a file of its own
 * beside the path, renamed over it once whole: runtimes of one process
 * given the same path (one $CUASYNC_TRACE) each write a whole trace, the
 * last closed wins, and none is ever read half-written or interleaved
 * with another's. A path that is not a regular file (a FIFO, /dev/...),
 * or whose directory takes no new file, is written in place. */
static void pf_flush(void *state) {
  pf_state *s = state;
  struct stat st;
  char *tmp = NULL;
  FILE *f = NULL;
  if (stat(s->path, &st) != 0 || S_ISREG(st.st_mode)) {
    size_t n = strlen(s->path) + 64;
    tmp = malloc(n);
    if (tmp != NULL) {
      snprintf(tmp, n, "%s.%ld.%p.tmp", s->path, (long)getpid(), (void *)s);
      f = fopen(tmp, "w");
      if (f == NULL) {
        free(tmp);
        tmp = NULL;
      }
    }
  }
  if (f == NULL)
    f = fopen(s->path, "w");
  if (f == NULL) {
    s->host->log(s->host->core, CUA_LOG_ERROR,
                 "cannot write %s: %s; the trace is lost", s->path,
                 strerror(errno));
    return;
  }
  int rc = write_trace(s, f);
  /* A write that failed (a full disk) set the stream's error and errno;
   * the flush fails again with the same reason. */
  int err = 0;
  if (fflush(f) != 0 || ferror(f))
    err = errno != 0 ? errno : EIO;
  if (fclose(f) != 0 && err == 0)
    err = errno != 0 ? errno : EIO;
  if (tmp != NULL) {
    if (err == 0 && rename(tmp, s->path) != 0)
      err = errno != 0 ? errno : EIO;
    if (err != 0)
      (void)unlink(tmp);
    free(tmp);
  }
  if (err != 0)
    s->host->log(s->host->core, CUA_LOG_ERROR,
                 "writing %s: %s; the trace is lost", s->path, strerror(err));
  else if (rc != 0)
    s->host->log(s->host->core, CUA_LOG_ERROR,
                 "writing %s: out of host memory; the trace is incomplete",
                 s->path);
}

CUA_OBSERVER_DEFINE(.name = "perfetto", .version = "1.0",
                    .description = "Chrome Trace Event JSON for "
                                   "ui.perfetto.dev: a track per stream",
                    CUA_OBSERVER_PARAMS(pf_params), .create = pf_create,
                    .destroy = pf_destroy, .record = pf_record,
                    .flush = pf_flush);
