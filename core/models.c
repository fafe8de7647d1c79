/*
 * core/models.c: performance models, the core's service to policies
 * (cua_policy_host::expected_duration and ::expected_transfer): measured
 * durations per op class (kind, name, tag, bucket of the cost hint), size
 * bucket (bits of the bytes hint) and device, and a transfer model per
 * pair of memories, learned from every op the runtime runs.
 * core/modelfile.c keeps them per host in a file between runs ([runtime]
 * models); core/modelstore.h is the store both share.
 *
 * Every entry keeps sums (count, bytes, bytes^2, ns, ns^2, bytes*ns), so
 * a size bucket's history is their mean and spread, a class's regression
 * over sizes is a least-squares fit of them, and two processes' entries
 * merge by adding them.
 *
 * Locking: rt->models is written by the thread that creates the runtime
 * (before its policies are opened) and by the one that destroys it (after
 * they are closed); in between it is read and written under rt->lock
 * (place(), completion, cua_runtime_models()'s copy). Families are never
 * freed before the runtime is, so their strings outlive a copy.
 */
#include "config.h"

#include "internal.h"
#include "models.h"
#include "modelstore.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0x100000001b3ull;
}

static uint64_t hash_str(uint64_t h, const char *s) {
  if (s == NULL)
    return mix(h, 0x51ed270b27u);
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return mix(h, 1);
}

static uint64_t fam_hash(int transfer, int dev, int from, int kind,
                         const char *name, const char *tag, unsigned cb) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = mix(h, (uint64_t)transfer);
  h = mix(h, (uint64_t)(dev + 2));
  h = mix(h, (uint64_t)(from + 2));
  h = mix(h, (uint64_t)kind);
  h = hash_str(h, name);
  h = hash_str(h, tag);
  h = mix(h, cb);
  return h;
}

static int str_eq(const char *a, const char *b) {
  if (a == NULL || b == NULL)
    return a == b;
  return strcmp(a, b) == 0;
}

/* A field of the file: NULL or "" is "-"; bytes that would split a field
 * or a line, '%', '/' (file names) and a "-" alone are written %XX. */
/* A duration or size from the sums, as an integer: never negative, never
 * past what a uint64_t holds (sums read from a file may be anything the
 * parser lets through). */
static uint64_t to_u64(double x) {
  if (!(x > 0))
    return 0;
  if (x >= 1e18)
    return (uint64_t)1e18;
  return (uint64_t)(x + 0.5);
}

/* ------------------------------------------------------------ families */

mfam *cua__mfam_find_slow(cua__models *m, int transfer, int dev, int from,
                          int kind, const char *name, const char *tag,
                          unsigned cb, int add) {
  mfam *l = m->last;
  if (l != NULL && l->kind == kind && l->dev == dev && l->from == from &&
      l->transfer == transfer && l->cb == cb && str_eq(l->name, name) &&
      str_eq(l->tag, tag))
    return l;
  uint64_t h = fam_hash(transfer, dev, from, kind, name, tag, cb);
  if (m->cap > 0) {
    for (size_t j = h & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
      mfam *f = m->tab[j];
      if (f == NULL)
        break;
      if (f->hash == h && f->transfer == transfer && f->dev == dev &&
          f->from == from && f->kind == kind && f->cb == cb &&
          str_eq(f->name, name) && str_eq(f->tag, tag))
        return m->last = f;
    }
  }
  if (!add)
    return NULL;
  if (m->n >= MAX_FAMILIES) {
    m->dropped++;
    return NULL;
  }
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 64;
    mfam **t = cua__calloc(cap, sizeof *t);
    if (t == NULL)
      return NULL;
    for (size_t i = 0; i < m->cap; i++)
      if (m->tab[i] != NULL) {
        size_t j = m->tab[i]->hash & (cap - 1);
        while (t[j] != NULL)
          j = (j + 1) & (cap - 1);
        t[j] = m->tab[i];
      }
    free(m->tab);
    m->tab = t;
    m->cap = cap;
  }
  mfam *f = cua__calloc(1, sizeof *f);
  if (f == NULL)
    return NULL;
  f->hash = h;
  f->transfer = transfer;
  f->dev = dev;
  f->from = from;
  f->kind = kind;
  f->cb = cb;
  if ((name != NULL && (f->name = cua__strdup(name)) == NULL) ||
      (tag != NULL && (f->tag = cua__strdup(tag)) == NULL)) {
    free(f->name);
    free(f);
    return NULL;
  }
  size_t j = h & (m->cap - 1);
  while (m->tab[j] != NULL)
    j = (j + 1) & (m->cap - 1);
  m->tab[j] = f;
  m->n++;
  return m->last = f;
}

mbucket *cua__mbucket_find(mfam *f, unsigned b, int add) {
  for (size_t i = 0; i < f->nbk; i++)
    if (f->bk[i].b == b)
      return &f->bk[i];
  if (!add || cua__grow(&f->bk, &f->capbk, f->nbk + 1, sizeof *f->bk) != 0)
    return NULL;
  mbucket *k = &f->bk[f->nbk++];
  memset(k, 0, sizeof *k);
  k->b = b;
  return k;
}

void cua__mfam_free(mfam *f) {
  free(f->name);
  free(f->tag);
  free(f->bk);
  free(f);
}

/* Whether durations of @p kind are modelled: kinds that do timed work. */
static int kind_timed(int kind) {
  switch (kind) {
  case CUA_OP_FUNC:
  case CUA_OP_FILL:
  case CUA_OP_COPY:
  case CUA_OP_AXPY:
  case CUA_OP_SPIN:
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMCPY_D2D:
  case CUA_OP_MEMSET:
  case CUA_OP_KERNEL:
    return 1;
  default:
    return 0;
  }
}

/* ------------------------------------------------------------ the service */

static void sample(mfam *f, uint64_t bytes, uint64_t ns) {
  mbucket *k = cua__mbucket_find(f, bits_of(bytes), 1);
  if (k == NULL)
    return;
  double x = (double)bytes, y = (double)ns;
  mstat s = {1, x, x * x, y, y * y, x * y};
  stat_add(&k->all, &s);
  stat_add(&k->delta, &s);
}

/* The device whose memory @p b is: -1 for none (no transfer). */
static int buf_dev(const cua_buffer *b) {
  return b != NULL ? b->device : -2;
}

void cua__models_measured(cua_runtime *rt, const cua__node *n) {
  cua__models *m = rt->models;
  const cua_op *op = n->op;
  if (m == NULL || op == NULL || n->code != 0 || n->duration_ns == 0 ||
      n->pl.device < 0 || n->pl.device >= m->ndev || !kind_timed(op->kind))
    return;
  /* Only an op the backend timed teaches the models (the host backend
   * times every op; a device backend the ops a class samples, with an
   * event pair). A share of an interval several ops ran in says what the
   * models already guessed (the shares are in proportion to it), and
   * hundreds of such shares would outweigh the few exact samples and pull
   * every class of a batch to one mean. An op seen complete alone is no
   * better: its interval runs from its launch, or the end of the op before
   * it, so inside a DAG it also counts the time the op waited for inputs
   * on other streams (on two H200s, one such sample of 17 ms among the
   * 500 us spins of a class drew heft's plans of independent chains over
   * the devices: 1.24x the makespan round-robin got). */
  if (n->dur_estimated)
    return;
  mfam *f = n->mfam != NULL
                ? n->mfam
                : cua__mfam_find(m, 0, n->pl.device, n->pl.device, op->kind,
                                 op->hints.name, op->hints.tag,
                                 bits_of(op->hints.cost_ns), 1);
  if (f != NULL)
    sample(f, op->hints.bytes, n->duration_ns);
  int from = -2, to = -2;
  if (op->kind == CUA_OP_MEMCPY_H2D && op->nacc >= 1) {
    from = -1;
    to = buf_dev(op->acc[0].buf);
  } else if (op->kind == CUA_OP_MEMCPY_D2H && op->nacc >= 1) {
    from = buf_dev(op->acc[0].buf);
    to = -1;
  } else if (op->kind == CUA_OP_MEMCPY_D2D && op->nacc >= 2) {
    from = buf_dev(op->acc[1].buf);
    to = buf_dev(op->acc[0].buf);
  }
  if (from >= -1 && to >= -1 && from < m->ndev && to < m->ndev &&
      (f = cua__mfam_find(m, 1, to, from, 0, NULL, NULL, 0, 1)) != NULL)
    sample(f, op->bytes, n->duration_ns);
  m->dirty = 1;
}

/* The mean and spread of @p s, and a history's confidence. */
static void from_history(const mstat *s, cua_estimate *e) {
  double mean = s->sy / s->n;
  double var = s->syy / s->n - mean * mean;
  double sd = var > 0 ? sqrt(var) : 0;
  e->ns = to_u64(mean);
  e->stddev_ns = to_u64(sd);
  e->samples = s->n;
  e->confidence = s->n / (s->n + 2) / (1 + (mean > 0 ? sd / mean : 1));
  e->source = CUA_ESTIMATE_HISTORY;
}

/* a + b * x fitted over @p f's buckets with two sizes or more; 0 if it
 * gives a positive duration at @p x. */
static int from_regression(const mfam *f, double x, cua_estimate *e) {
  mstat t = {0};
  size_t used = 0;
  for (size_t i = 0; i < f->nbk; i++)
    if (f->bk[i].all.n > 0) {
      stat_add(&t, &f->bk[i].all);
      used++;
    }
  if (used < 2)
    return -1;
  double den = t.n * t.sxx - t.sx * t.sx;
  if (!(den > 1e-9 * t.n * t.sxx))
    return -1;
  double cov = t.n * t.sxy - t.sx * t.sy;
  double b = cov / den, a = (t.sy - b * t.sx) / t.n;
  double y = a + b * x;
  if (!(y > 0))
    return -1;
  double vy = t.n * t.syy - t.sy * t.sy;
  double r2 = vy > 0 ? cov * cov / (den * vy) : 1;
  double res = (t.syy - a * t.sy - b * t.sxy) / t.n;
  e->ns = to_u64(y);
  e->stddev_ns = res > 0 ? to_u64(sqrt(res)) : 0;
  e->samples = t.n;
  e->confidence = 0.5 * (r2 > 1 ? 1 : r2) * t.n / (t.n + 2);
  e->source = CUA_ESTIMATE_REGRESSION;
  return 0;
}

static int put_estimate(const cua_estimate *e, cua_estimate *out) {
  size_t sz = out->size < sizeof *e ? out->size : sizeof *e;
  cua_estimate full = *e;
  full.size = out->size;
  memcpy(out, &full, sz);
  return 0;
}

int cua__models_expect(cua_runtime *rt, const cua_op_info *op, int device,
                       cua_estimate *out) {
  if (op == NULL || out == NULL ||
      out->size < offsetof(cua_estimate, stddev_ns) || device < 0 ||
      device >= rt->ndev)
    return CUA_ERR_INVAL;
  cua_estimate e;
  memset(&e, 0, sizeof e);
  cua__models *m = rt->models;
  if (!kind_timed(op->kind))
    return put_estimate(&e, out);
  mfam *f = m == NULL ? NULL
                      : cua__mfam_find(m, 0, device, device, op->kind, op->name,
                                       op->tag, bits_of(op->cost_ns), 0);
  const mbucket *k =
      f != NULL ? cua__mbucket_find(f, bits_of(op->bytes), 0) : NULL;
  if (k != NULL && k->all.n >= 3)
    from_history(&k->all, &e);
  else if (f != NULL && from_regression(f, (double)op->bytes, &e) == 0)
    ;
  else if (k != NULL && k->all.n > 0)
    from_history(&k->all, &e);
  else if (op->cost_ns > 0) {
    e.ns = op->cost_ns;
    e.source = CUA_ESTIMATE_HINT;
  }
  return put_estimate(&e, out);
}

int cua__models_transfer(cua_runtime *rt, int from, int to, uint64_t bytes,
                         cua_estimate *out) {
  if (out == NULL || out->size < offsetof(cua_estimate, stddev_ns) ||
      from < -1 || from >= rt->ndev || to < -1 || to >= rt->ndev)
    return CUA_ERR_INVAL;
  cua_estimate e;
  memset(&e, 0, sizeof e);
  cua__models *m = rt->models;
  mfam *f =
      m == NULL ? NULL : cua__mfam_find(m, 1, to, from, 0, NULL, NULL, 0, 0);
  if (f != NULL && from_regression(f, (double)bytes, &e) != 0) {
    /* One size measured: its bandwidth, with no latency. */
    mstat t = {0};
    for (size_t i = 0; i < f->nbk; i++)
      stat_add(&t, &f->bk[i].all);
    if (t.n > 0 && t.sx > 0) {
      e.ns = to_u64((double)bytes * t.sy / t.sx);
      e.samples = t.n;
      e.confidence = 0.5 * t.n / (t.n + 2);
      e.source = CUA_ESTIMATE_HISTORY;
    }
  }
  return put_estimate(&e, out);
}

/* The mean of @p f's bucket for @p bytes, else @p hint. */
static uint64_t guess(const mfam *f, uint64_t bytes, uint64_t hint) {
  const mbucket *k =
      f != NULL ? cua__mbucket_find((mfam *)f, bits_of(bytes), 0) : NULL;
  if (k != NULL && k->all.n > 0)
    return to_u64(k->all.sy / k->all.n);
  return hint;
}

uint64_t cua__models_attach(cua_runtime *rt, cua__node *n) {
  const cua_op *op = n->op;
  cua__models *m = rt->models;
  if (m == NULL || n->pl.device < 0 || n->pl.device >= m->ndev ||
      !kind_timed(op->kind))
    return op->hints.cost_ns;
  mfam *f =
      cua__mfam_find(m, 0, n->pl.device, n->pl.device, op->kind, op->hints.name,
                     op->hints.tag, bits_of(op->hints.cost_ns), 1);
  n->mfam = f;
  return guess(f, op->hints.bytes, op->hints.cost_ns);
}

int cua__models_sampling(const cua_runtime *rt, cua__node *n) {
  if (rt->models == NULL || rt->host_exec || n->mfam == NULL || n->op == NULL)
    return 0;
  /* Counted by marks given, not by samples: an op marked alone may still
   * be seen complete with others (a short one) and teach nothing, and
   * must not keep every op of its class marked. */
  mbucket *k = cua__mbucket_find(n->mfam, bits_of(n->op->hints.bytes), 1);
  if (k == NULL || k->all.n >= CUA__MODELS_SAMPLE ||
      k->sampled >= CUA__MODELS_SAMPLE)
    return 0;
  k->sampled++;
  return 1;
}

/* ------------------------------------------------------------ public */

int cua_runtime_models(cua_runtime *rt, cua_model_fn fn, void *arg,
                       const char **file) {
  if (rt == NULL || fn == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_models: NULL %s",
                     rt == NULL ? "runtime" : "visitor");
  if (cua__runtime_closed(rt, "cua_runtime_models"))
    return CUA_ERR_CANCELED;
  pthread_mutex_lock(&rt->lock);
  cua__models *m = rt->models;
  if (m == NULL) {
    pthread_mutex_unlock(&rt->lock);
    if (file != NULL)
      *file = NULL;
    return cua__fail(rt, CUA_ERR_NOTSUP,
                     "cua_runtime_models: performance models are off "
                     "([runtime] models = off)");
  }
  if (file != NULL)
    *file = m->file;
  size_t count = 0;
  for (size_t i = 0; i < m->cap; i++)
    for (size_t j = 0; m->tab[i] != NULL && j < m->tab[i]->nbk; j++)
      count += m->tab[i]->bk[j].all.n > 0;
  cua_model_entry *v = count > 0 ? cua__calloc(count, sizeof *v) : NULL;
  if (count > 0 && v == NULL) {
    pthread_mutex_unlock(&rt->lock);
    return cua__fail(rt, CUA_ERR_NOMEM, "cua_runtime_models: out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < m->cap; i++) {
    const mfam *f = m->tab[i];
    for (size_t j = 0; f != NULL && j < f->nbk; j++) {
      const mbucket *b = &f->bk[j];
      if (!(b->all.n > 0))
        continue; /* made for sampling, nothing measured yet */
      cua_model_entry *e = &v[k++];
      cua_estimate est;
      memset(&est, 0, sizeof est);
      from_history(&b->all, &est);
      e->size = sizeof *e;
      e->transfer = f->transfer;
      e->device = f->dev;
      e->from = f->from;
      e->kind = (cua_op_kind)f->kind;
      e->name = f->name;
      e->tag = f->tag;
      e->cost_bucket = f->cb;
      e->bytes_min = b->b == 0 ? 0 : (uint64_t)1 << (b->b - 1);
      e->bytes_max = b->b == 0    ? 0
                     : b->b >= 64 ? UINT64_MAX
                                  : ((uint64_t)1 << b->b) - 1;
      e->samples = b->all.n;
      e->samples_new = b->delta.n;
      e->mean_ns = est.ns;
      e->stddev_ns = est.stddev_ns;
      e->mean_bytes = b->all.sx / b->all.n;
    }
  }
  pthread_mutex_unlock(&rt->lock);
  int rc = 0;
  for (size_t i = 0; i < k && rc == 0; i++)
    rc = fn(&v[i], arg);
  free(v);
  return rc;
}
