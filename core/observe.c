/*
 * core/observe.c: the runtime's observers (cuasync/observer.h): opens the
 * modules `[runtime] observers` names, keeps the records the core makes in
 * a bounded ring, and hands them to the observers on a thread of its own.
 *
 * Locks: obs->mu guards the ring (head, count, drops, closing, and the
 * entries past head + count). Whoever makes a record takes it for the copy
 * only (the core's other locks may be held then: rt->lock for placements,
 * waits and completions); the observer thread takes it to note which
 * entries to move out and, after copying them with it released, to free
 * them. Observers are called
 * with no lock of the core held: record() on the observer thread, create(),
 * flush() and destroy() on the thread opening or closing the runtime.
 */
#include "conf.h"
#include "internal.h"
#include "loader.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Records kept waiting at most, and handed over per call. The observer
 * thread looks every OBS_PERIOD_NS, and is woken early only when
 * OBS_WAKE records wait: a wake-up per record would cost every record a
 * futex call on the thread making it. */
#define OBS_RING 65536
#define OBS_BATCH 1024
#define OBS_WAKE 8192
#define OBS_PERIOD_NS 2000000
#define OBS_STR 64

/* A record and copies of its strings, packed one after the other in strs
 * (name, tag, policy: offsets, -1 for none), and of only r.ninputs
 * inputs: so that a record touches as few cache lines of the ring as it
 * can (the ring is larger than a cache, and records are made under the
 * core's lock). */
typedef struct obs_entry {
  cua_obs_record r;
  int16_t name, tag, policy;
  char strs[3 * OBS_STR];
} obs_entry;

/* One open observer. */
typedef struct obs_one {
  struct cua__observers *o;
  cua__module *mod;
  const cua_observer_descriptor *d;
  void *state;
  cua_param_value *params;
  size_t nparams;
  void *values; /* params at the module's param_value_size, if another */
  cua_observer_host host;
  char *name;
  atomic_int dead; /* record() failed: neither it nor launch() called
                      again (read by launching threads) */
  char log[1024];  /* recent log lines, for a failing create() or record() */
  char *where;     /* where its parameters came from (configured_at()) */
  int flushing;    /* in flush(): its log lines say where */
} obs_one;

struct cua__observers {
  cua_runtime *rt;
  obs_one *v;
  size_t n;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  obs_entry *ring; /* OBS_RING entries */
  size_t head, count;
  uint64_t drops;
  int closing;
  pthread_t thread;
  int started;
};

/* ------------------------------------------------------- the host table */

static int h_device_count(void *core) {
  return ((obs_one *)core)->o->rt->ndev;
}

static int h_device_info(void *core, int device, cua_device_info *out) {
  return cua_device_get_info(((obs_one *)core)->o->rt, device, out);
}

static const char *h_backend_name(void *core) {
  return ((obs_one *)core)->o->rt->be->name;
}

static uint64_t h_now_ns(void *core) {
  cua_runtime *rt = ((obs_one *)core)->o->rt;
  return cua__rt_now(rt);
}

/* As a policy's log(), but debug lines are not kept: the rest makes the
 * message of a failing create() or record(). */
static void h_log(void *core, cua_log_level level, const char *fmt, ...) {
  obs_one *w = core;
  char label[1400];
  va_list ap;
  /* What flush() logs is the only word of a trace lost as the runtime
   * closes: it names where the observer's parameters came from. */
  if (w->flushing && w->where != NULL)
    snprintf(label, sizeof label, "%s (%s)", w->name, w->where);
  else
    snprintf(label, sizeof label, "%s", w->name);
  va_start(ap, fmt);
  cua__module_vlog(w->log, sizeof w->log, 0, "observer", label, level, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------- the ring */

/* Appends @p src (at most OBS_STR - 1 bytes of it) to @p e's strings at
 * *at; returns its offset, or -1 for NULL. */
static int16_t put_str(obs_entry *e, size_t *at, const char *src) {
  if (src == NULL)
    return -1;
  size_t n = strlen(src);
  if (n >= OBS_STR) {
    /* Cut at a character's start, not inside a UTF-8 sequence. */
    n = OBS_STR - 1;
    while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
      n--;
  }
  int16_t off = (int16_t)*at;
  memcpy(e->strs + *at, src, n);
  e->strs[*at + n] = '\0';
  *at += n + 1;
  return off;
}

void cua__obs_emit(cua_runtime *rt, const cua_obs_record *r, const char *name,
                   const char *tag, const char *policy) {
  cua__observers *o = rt->obs;
  if (o == NULL)
    return;
  pthread_mutex_lock(&o->mu);
  if (o->count == OBS_RING || o->closing) {
    o->drops += !o->closing;
    pthread_mutex_unlock(&o->mu);
    return;
  }
  obs_entry *e = &o->ring[(o->head + o->count) % OBS_RING];
  uint32_t ni = r->ninputs <= CUA_OBS_MAX_INPUTS ? r->ninputs : 0;
  memcpy(&e->r, r, offsetof(cua_obs_record, inputs) + ni * sizeof r->inputs[0]);
  e->r.size = sizeof e->r;
  e->r.ninputs = ni;
  size_t at = 0;
  e->name = put_str(e, &at, name);
  e->tag = put_str(e, &at, tag);
  e->policy = put_str(e, &at, policy);
  if (++o->count == OBS_WAKE)
    pthread_cond_signal(&o->cv);
  pthread_mutex_unlock(&o->mu);
}

void cua__obs_command(cua_runtime *rt, int kind, const cua__stream *s,
                      const cua__node *n) {
  cua_obs_record o = {.kind = (cua_obs_kind)kind,
                      .t_ns = cua__rt_now(rt),
                      .submission = n != NULL ? n->sub_id : 0,
                      .op_id = n != NULL ? n->op_id : 0,
                      .device = s->device,
                      .stream = s->index};
  cua__obs_emit(rt, &o, NULL, NULL, NULL);
}

static int is_command(const cua_obs_record *r) {
  return r->kind == CUA_OBS_RECORD || r->kind == CUA_OBS_MARK;
}

/* Whether observer @p w is given record @p r: the commands' only with
 * CUA_OBSERVER_COMMANDS, the kinds of ABI 1.2 only to modules built for
 * it. */
static int wants(const obs_one *w, const cua_obs_record *r) {
  if (is_command(r))
    return (w->d->flags & CUA_OBSERVER_COMMANDS) != 0;
  if (r->kind == CUA_OBS_GRAPH_CAPTURE)
    return w->d->abi_minor >= 2;
  return 1;
}

/* Hands @p n records to every observer; @p rest (room for @p n) holds, for
 * an observer that does not want them all, those it does (commands are
 * made only while an observer wants them, captures are rare: most batches
 * go whole to everyone). */
static void deliver(cua__observers *o, obs_entry *batch, cua_obs_record *recs,
                    cua_obs_record *rest, size_t n) {
  int special = 0;
  for (size_t i = 0; i < n; i++) {
    const obs_entry *e = &batch[i];
    recs[i] = e->r;
    recs[i].name = e->name >= 0 ? e->strs + e->name : NULL;
    recs[i].tag = e->tag >= 0 ? e->strs + e->tag : NULL;
    recs[i].policy = e->policy >= 0 ? e->strs + e->policy : NULL;
    special |= is_command(&recs[i]) || recs[i].kind == CUA_OBS_GRAPH_CAPTURE;
  }
  for (size_t k = 0; k < o->n; k++) {
    obs_one *w = &o->v[k];
    if (w->dead || (w->d->flags & CUA_OBSERVER_NO_RECORDS))
      continue;
    const cua_obs_record *give = recs;
    size_t ngive = n;
    if (special) {
      size_t m = 0;
      for (size_t i = 0; i < n; i++)
        if (wants(w, &recs[i]))
          rest[m++] = recs[i];
      if (m == 0)
        continue;
      if (m < n) {
        give = rest;
        ngive = m;
      }
    }
    w->log[0] = '\0';
    if (w->d->record(w->state, give, ngive, sizeof *recs) != 0) {
      w->dead = 1;
      fprintf(stderr,
              "cuasync: observer %s failed and is disabled: %s (results are "
              "not affected)\n",
              w->name, w->log[0] ? w->log : "record() returned non-zero");
    }
  }
}

static void *obs_thread(void *arg) {
  cua__observers *o = arg;
  obs_entry *batch = malloc(OBS_BATCH * sizeof *batch);
  cua_obs_record *recs = malloc(2 * OBS_BATCH * sizeof *recs);
  pthread_mutex_lock(&o->mu);
  for (;;) {
    while (o->count == 0 && !o->closing) {
      struct timespec until = cua__deadline(OBS_PERIOD_NS);
      pthread_cond_timedwait(&o->cv, &o->mu, &until);
    }
    if (o->count == 0)
      break; /* closing, all handed over */
    size_t n = o->count < OBS_BATCH ? o->count : OBS_BATCH, h = o->head;
    pthread_mutex_unlock(&o->mu);
    /* Copied out with the lock released: records are added only past
     * head + count, and these n stay counted until the copy is done. */
    if (batch != NULL && recs != NULL)
      for (size_t i = 0; i < n; i++)
        batch[i] = o->ring[(h + i) % OBS_RING];
    pthread_mutex_lock(&o->mu);
    o->head = (o->head + n) % OBS_RING;
    o->count -= n;
    if (batch == NULL || recs == NULL)
      o->drops += n; /* no memory for a batch: lost, and counted */
    pthread_mutex_unlock(&o->mu);
    if (batch != NULL && recs != NULL)
      deliver(o, batch, recs, recs + OBS_BATCH, n);
    pthread_mutex_lock(&o->mu);
  }
  pthread_mutex_unlock(&o->mu);
  free(batch);
  free(recs);
  return NULL;
}

/* ------------------------------------------------------ open and close */

/* Whether $CUASYNC_TRACE sets @p w's path (it is the perfetto observer). */
static int traced(const cua__config *cfg, const obs_one *w) {
  return cfg->trace != NULL && strcmp(w->name, "perfetto") == 0;
}

/* The perfetto observer's `path`, replaced by $CUASYNC_TRACE. */
static int trace_override(cua__config *cfg, obs_one *w) {
  if (!traced(cfg, w))
    return 0;
  for (size_t i = 0; i < w->d->nparams; i++) {
    const cua_param_spec *ps = &w->d->params[i];
    if (strcmp(ps->name, "path") != 0 || ps->type != CUA_PARAM_STRING)
      continue;
    char *s = cua__strdup(cfg->trace);
    if (s == NULL)
      return CUA_ERR_NOMEM;
    free((char *)w->params[i].s);
    w->params[i].s = s;
    w->params[i].present = 1;
  }
  return 0;
}

/* Where observer @p i of the configuration was named, for messages:
 * "FILE:LINE: [runtime] observers", "$CUASYNC_TRACE=FILE", or "". */
static const char *named_at(const cua__config *cfg, size_t i, char *buf,
                            size_t len) {
  if (i < cfg->nobs_conf && cfg->observers_line > 0)
    snprintf(buf, len, "%s:%d: [runtime] observers", cfg->origin,
             cfg->observers_line);
  else if (cfg->trace != NULL)
    snprintf(buf, len, "$CUASYNC_TRACE=%s", cfg->trace);
  else
    buf[0] = '\0';
  return buf;
}

/* Where @p w's parameters came from, for messages: the variable that set
 * its path, else its [observer.NAME] section, else where it was named
 * (it runs with its defaults). */
static const char *configured_at(const cua__config *cfg, size_t i,
                                 const obs_one *w, const char *section,
                                 char *buf, size_t len) {
  const cua__section *sec = cua__config_section(cfg, section);
  if (traced(cfg, w))
    snprintf(buf, len, "$CUASYNC_TRACE=%s", cfg->trace);
  else if (sec != NULL && sec->line > 0)
    snprintf(buf, len, "%s:%d: [%s]", cfg->origin, sec->line, section);
  else
    named_at(cfg, i, buf, len);
  return buf;
}

/* Opens observer @p i of the configuration into @p w. */
static int open_one(cua_runtime *rt, cua__observers *o, size_t i, obs_one *w) {
  char err[CUA__ERRLEN], section[256], at[1200], code[160];
  const char *name = rt->cfg->observers[i];
  w->o = o;
  if ((w->name = cua__strdup(name)) == NULL)
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  int rc = cua__module_load(&w->mod, CUA__MODULE_OBSERVER, name, NULL, 0,
                            rt->ignore_env, err, sizeof err);
  if (rc != 0) {
    named_at(rt->cfg, i, at, sizeof at);
    return cua__fail(NULL, rc, "%s%s%s", at, at[0] ? ": " : "", err);
  }
  w->d = w->mod->desc.observer;
  snprintf(section, sizeof section, "observer.%s", name);
  rc = cua__config_params(rt->cfg, section, w->d->params, w->d->nparams,
                          &w->params, err, sizeof err);
  if (rc != 0)
    return cua__fail(NULL, rc, "%s", err);
  w->nparams = w->d->nparams;
  if ((rc = trace_override(rt->cfg, w)) != 0)
    return cua__fail(NULL, rc, "out of host memory");
  w->host.abi_major = CUA_OBSERVER_ABI_MAJOR;
  w->host.abi_minor = CUA_OBSERVER_ABI_MINOR;
  w->host.size = sizeof w->host;
  w->host.core = w;
  w->host.device_count = h_device_count;
  w->host.device_info = h_device_info;
  w->host.backend_name = h_backend_name;
  w->host.now_ns = h_now_ns;
  w->host.log = h_log;
  w->log[0] = '\0';
  /* The values go out with the element size the module was built with. */
  const void *values;
  if (cua__params_restride(w->params, w->nparams, w->d->param_value_size,
                           &w->values, &values) != 0)
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  configured_at(rt->cfg, i, w, section, at, sizeof at);
  rc = w->d->create(&w->host, values, &w->state);
  if (rc != 0) {
    w->state = NULL;
    return cua__fail(NULL, CUA_ERR_MODULE_CREATE,
                     "%s%sobserver '%s' failed to start (%s): %s", at,
                     at[0] ? ": " : "", name,
                     cua__module_code(rc, "create()", code, sizeof code),
                     w->log[0] ? w->log : "create() returned an error");
  }
  /* For what flush() logs: the runtime is closing then, and only the
   * line on standard error can say where the failing value came from. */
  if (at[0] != '\0' && (w->where = cua__strdup(at)) == NULL)
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  w->log[0] = '\0';
  return 0;
}

static void free_one(obs_one *w, int started) {
  if (w->d != NULL && w->state != NULL) {
    /* Nothing to flush when the runtime never opened. */
    if (w->d->flush != NULL && !w->dead && started) {
      w->flushing = 1;
      w->d->flush(w->state);
      w->flushing = 0;
    }
    if (w->d->destroy != NULL)
      w->d->destroy(w->state);
  }
  if (w->params != NULL)
    cua__config_params_free(w->params, w->nparams);
  free(w->values);
  cua__module_unload(w->mod);
  free(w->name);
  free(w->where);
}

void cua__observers_close(cua_runtime *rt) {
  cua__observers *o = rt->observers;
  if (o == NULL)
    return;
  if (o->started) {
    pthread_mutex_lock(&o->mu);
    o->closing = 1;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
    pthread_join(o->thread, NULL);
  }
  rt->obs = NULL;
  rt->observers = NULL;
  rt->obs_launch = 0;
  rt->obs_commands = 0;
  for (size_t i = 0; i < o->n; i++)
    free_one(&o->v[i], o->started);
  if (o->drops > 0)
    fprintf(stderr,
            "cuasync: observers: %llu records dropped: the observers fell "
            "behind (at most %d wait)\n",
            (unsigned long long)o->drops, OBS_RING);
  pthread_mutex_destroy(&o->mu);
  pthread_cond_destroy(&o->cv);
  free(o->v);
  free(o->ring);
  free(o);
}

int cua__observers_open(cua_runtime *rt) {
  const cua__config *cfg = rt->cfg;
  if (cfg->nobservers == 0)
    return 0;
  cua__observers *o = cua__calloc(1, sizeof *o);
  if (o == NULL)
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  o->rt = rt;
  pthread_mutex_init(&o->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&o->cv, &ca);
  pthread_condattr_destroy(&ca);
  o->v = cua__calloc(cfg->nobservers, sizeof *o->v);
  rt->observers = o;
  if (o->v == NULL) {
    cua__observers_close(rt);
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  }
  int records = 0, commands = 0;
  for (size_t i = 0; i < cfg->nobservers; i++) {
    int rc = open_one(rt, o, i, &o->v[o->n]);
    o->n++;
    if (rc != 0) {
      cua__observers_close(rt);
      return rc;
    }
    records |= !(o->v[i].d->flags & CUA_OBSERVER_NO_RECORDS);
    commands |= !(o->v[i].d->flags & CUA_OBSERVER_NO_RECORDS) &&
                (o->v[i].d->flags & CUA_OBSERVER_COMMANDS);
    rt->obs_launch |= o->v[i].d->launch != NULL;
  }
  /* Observers that take no records (launch() only) cost the core no
   * record, no ring, no thread and no device times. */
  if (!records)
    return 0;
  o->ring = cua__malloc(OBS_RING * sizeof *o->ring);
  if (o->ring == NULL) {
    cua__observers_close(rt);
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  }
  /* Touched now, so that no record pays a page fault under the core's
   * locks. */
  memset(o->ring, 0, OBS_RING * sizeof *o->ring);
  if (cua__pthread_create(&o->thread, NULL, obs_thread, o) != 0) {
    cua__observers_close(rt);
    return cua__fail(NULL, CUA_ERR_INTERNAL,
                     "cannot start the observers' thread");
  }
  o->started = 1;
  rt->obs = o;
  rt->obs_commands = commands;
  return 0;
}

void cua__obs_times(cua_runtime *rt, uint64_t op, uint64_t start_ns,
                    uint64_t end_ns) {
  if (rt->obs == NULL)
    return;
  cua_obs_record r = {.size = sizeof r,
                      .kind = CUA_OBS_TIMES,
                      .t_ns = cua__rt_now(rt),
                      .op_id = op,
                      .start_ns = start_ns,
                      .end_ns = end_ns,
                      .timing = CUA_OBS_TIMING_MEASURED};
  cua__obs_emit(rt, &r, NULL, NULL, NULL);
}

uint64_t cua__obs_launch(cua_runtime *rt, const cua__node *n, int phase,
                         void *native, uint64_t called) {
  cua__observers *o = rt->observers;
  const cua_op *op = n->op;
  cua_obs_record r = {.size = sizeof r,
                      .kind = CUA_OBS_LAUNCH,
                      .t_ns = cua__rt_now(rt),
                      .submission = n->sub_id,
                      .op_id = n->op_id,
                      .device = n->pl.device,
                      .stream = n->pl.stream,
                      .op_kind = op->kind,
                      .name = op->hints.name,
                      .tag = op->hints.tag};
  /* Phase 1 goes to exactly those phase 0 went to (one disabled in
   * between still ends what it began). */
  uint64_t mask = 0;
  for (size_t i = 0; i < o->n && i < 64; i++) {
    obs_one *w = &o->v[i];
    int go = phase == 0 ? w->d->launch != NULL && !atomic_load(&w->dead)
                        : (called >> i) & 1;
    if (go) {
      w->d->launch(w->state, &r, phase, native);
      mask |= (uint64_t)1 << i;
    }
  }
  return mask;
}

uint64_t cua__observers_drops(const cua_runtime *rt) {
  cua__observers *o = rt->obs; /* (none without records) */
  if (o == NULL)
    return 0;
  pthread_mutex_lock(&o->mu);
  uint64_t d = o->drops;
  pthread_mutex_unlock(&o->mu);
  return d;
}
