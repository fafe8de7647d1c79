/*
 * core/models.c: performance models, the core's service to policies
 * (cua_policy_host::expected_duration and ::expected_transfer): measured
 * durations per op class (kind, name, tag, bucket of the cost hint), size
 * bucket (bits of the bytes hint) and device, and a transfer model per
 * pair of memories, learned from every op the runtime runs and kept per
 * host in a file between runs ([runtime] models).
 *
 * Every entry keeps sums (count, bytes, bytes^2, ns, ns^2, bytes*ns), so
 * a size bucket's history is their mean and spread, a class's regression
 * over sizes is a least-squares fit of them, and two processes' entries
 * merge by adding them: the file is read at creation and, at destroy,
 * read again, given what this runtime measured (the "delta" sums) and
 * replaced at once (rename()), so that runs beside each other lose
 * nothing but a race's last writer.
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

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MODELS_VERSION 1
#define MAX_FAMILIES 65536
#define MAX_FILE_BYTES (64u << 20)

typedef struct mstat {
  double n, sx, sxx, sy, syy, sxy;
} mstat;

typedef struct mbucket {
  unsigned b;  /* bits of the bytes hint: [2^(b-1), 2^b - 1]; 0 is 0 */
  mstat all;   /* loaded + measured */
  mstat delta; /* measured by this runtime, not yet saved */
} mbucket;

typedef struct mfam {
  uint64_t hash;
  int transfer;
  int dev, from; /* runtime devices; -1 host memory (transfers) */
  int kind;
  char *name, *tag;
  unsigned cb; /* bits of the cost hint */
  mbucket *bk;
  size_t nbk, capbk;
} mfam;

struct cua__models {
  char *file; /* NULL: memory only */
  char *dir;
  char *host;    /* escaped host name */
  char *backend; /* escaped */
  char **devkey; /* escaped "ordinal:name" per runtime device */
  int ndev;
  mfam **tab; /* open addressing, power of two */
  size_t cap, n;
  int dirty;
  size_t dropped; /* classes not kept (MAX_FAMILIES) */
};

/* ------------------------------------------------------------ helpers */

static unsigned bits_of(uint64_t v) {
  unsigned b = 0;
  for (; v > 0; v >>= 1)
    b++;
  return b;
}

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
static void put_field(FILE *f, const char *s) {
  if (s == NULL || *s == '\0') {
    fputc('-', f);
    return;
  }
  if (strcmp(s, "-") == 0) {
    fputs("%2D", f);
    return;
  }
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c <= ' ' || c == 0x7f || c == '%' || c == '/')
      fprintf(f, "%%%02X", c);
    else
      fputc(c, f);
  }
}

/* The escaped form of @p s, allocated. */
static char *escaped(const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  put_field(f, s);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Decodes a field in place; NULL for "-". Sets *bad on a malformed escape. */
static char *unescape(char *s, int *bad) {
  if (strcmp(s, "-") == 0)
    return NULL;
  char *w = s;
  for (char *r = s; *r; r++) {
    if (*r != '%') {
      *w++ = *r;
      continue;
    }
    unsigned v;
    char hex[3] = {r[1], r[1] ? r[2] : 0, 0};
    char *end;
    if (hex[0] == 0 || hex[1] == 0) {
      *bad = 1;
      return s;
    }
    v = (unsigned)strtoul(hex, &end, 16);
    if (*end != '\0' || v == 0) {
      *bad = 1;
      return s;
    }
    *w++ = (char)v;
    r += 2;
  }
  *w = '\0';
  return s;
}

static void stat_add(mstat *a, const mstat *b) {
  a->n += b->n;
  a->sx += b->sx;
  a->sxx += b->sxx;
  a->sy += b->sy;
  a->syy += b->syy;
  a->sxy += b->sxy;
}

/* ------------------------------------------------------------ families */

static mfam *fam_find(cua__models *m, int transfer, int dev, int from, int kind,
                      const char *name, const char *tag, unsigned cb, int add) {
  uint64_t h = fam_hash(transfer, dev, from, kind, name, tag, cb);
  if (m->cap > 0) {
    for (size_t j = h & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
      mfam *f = m->tab[j];
      if (f == NULL)
        break;
      if (f->hash == h && f->transfer == transfer && f->dev == dev &&
          f->from == from && f->kind == kind && f->cb == cb &&
          str_eq(f->name, name) && str_eq(f->tag, tag))
        return f;
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
  return f;
}

static mbucket *bucket_find(mfam *f, unsigned b, int add) {
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

static void fam_free(mfam *f) {
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

static int kind_by_name(const char *s) {
#define KIND(id, val, name, launched, desc)                                    \
  if (strcmp(s, name) == 0)                                                    \
    return val;
  CUA_OP_KIND_MAP(KIND)
#undef KIND
  return 0;
}

/* ------------------------------------------------------------ the file */

/* One entry as the file has it: the fields before the sums, verbatim. */
typedef struct fentry {
  char *key;
  mstat s;
} fentry;

typedef struct fdata {
  fentry *v;
  size_t n, cap;
} fdata;

static void fdata_free(fdata *d) {
  for (size_t i = 0; i < d->n; i++)
    free(d->v[i].key);
  free(d->v);
  memset(d, 0, sizeof *d);
}

static void warn(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static void warn(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "cuasync: warning: performance models: %s\n", line);
}

/* Splits @p line into at most @p max space-separated fields. */
static int split(char *line, char **f, int max) {
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " ", &save); t != NULL;
       t = strtok_r(NULL, " ", &save)) {
    if (n == max)
      return max + 1;
    f[n++] = t;
  }
  return n;
}

static int parse_sums(char **f, mstat *s) {
  double *v[6] = {&s->n, &s->sx, &s->sxx, &s->sy, &s->syy, &s->sxy};
  for (int i = 0; i < 6; i++) {
    char *end;
    errno = 0;
    *v[i] = strtod(f[i], &end);
    if (*end != '\0' || errno != 0 || !isfinite(*v[i]) || *v[i] < 0)
      return -1;
  }
  return s->n > 0 ? 0 : -1;
}

/* Reads the model file of @p m into @p d: 0 (an absent file is empty), or
 * -1 after a warning when it is unreadable, foreign or corrupt (then @p d
 * is empty: the file is ignored, and replaced at the next save). */
static int read_file(const cua__models *m, fdata *d, int quiet) {
  FILE *f = fopen(m->file, "r");
  if (f == NULL) {
    if (errno == ENOENT || quiet)
      return errno == ENOENT ? 0 : -1;
    warn("cannot read %s: %s; starting with no models", m->file,
         strerror(errno));
    return -1;
  }
  char *line = NULL;
  size_t cap = 0, total = 0;
  ssize_t len;
  int lineno = 0, rc = 0;
  const char *why = NULL;
  while ((len = getline(&line, &cap, f)) >= 0) {
    lineno++;
    total += (size_t)len;
    if (total > MAX_FILE_BYTES) {
      why = "larger than 64 MiB";
      break;
    }
    if (len > 0 && line[len - 1] == '\n')
      line[--len] = '\0';
    if (memchr(line, '\0', (size_t)len) != NULL) {
      why = "a NUL byte";
      break;
    }
    if (lineno == 1) {
      char *fld[4];
      char *copy = cua__strdup(line);
      if (copy == NULL) {
        why = "out of memory";
        break;
      }
      int nf = split(copy, fld, 3);
      if (nf != 3 || strcmp(fld[0], "cuasync-models") != 0) {
        why = "not a cuasync model file";
      } else if (strcmp(fld[1], "1") != 0) {
        if (!quiet)
          warn("%s was written by another version of cuasync (format %s, this "
               "one reads %d); ignored",
               m->file, fld[1], MODELS_VERSION);
        rc = -1;
      } else if (strcmp(fld[2], m->host) != 0) {
        if (!quiet)
          warn("%s was written on host %s, not on this one (%s); ignored",
               m->file, fld[2], m->host);
        rc = -1;
      }
      free(copy);
      if (why != NULL || rc != 0)
        break;
      continue;
    }
    if (len == 0 || line[0] == '#')
      continue;
    char *fld[16];
    char *copy = cua__strdup(line);
    if (copy == NULL) {
      why = "out of memory";
      break;
    }
    int nf = split(copy, fld, 14);
    int nkey = nf == 14 && strcmp(fld[0], "op") == 0     ? 8
               : nf == 11 && strcmp(fld[0], "xfer") == 0 ? 5
                                                         : -1;
    mstat s;
    if (nkey < 0 || parse_sums(fld + nkey, &s) != 0) {
      free(copy);
      why = "a malformed entry";
      break;
    }
    /* The key, verbatim: the fields before the sums, one space apart. */
    size_t klen = (size_t)(fld[nkey - 1] - copy) + strlen(fld[nkey - 1]);
    for (size_t i = 0; i < klen; i++)
      if (copy[i] == '\0')
        copy[i] = ' ';
    copy[klen] = '\0';
    if (cua__grow(&d->v, &d->cap, d->n + 1, sizeof *d->v) != 0) {
      free(copy);
      why = "out of memory";
      break;
    }
    d->v[d->n].key = copy;
    d->v[d->n].s = s;
    d->n++;
  }
  if (why != NULL) {
    if (lineno <= 1 && total == 0)
      why = NULL; /* an empty file: nothing stored */
    else if (!quiet)
      warn("%s:%d: %s; the file is ignored (it is replaced when this run "
           "saves its models)",
           m->file, lineno, why);
  }
  free(line);
  fclose(f);
  if (why != NULL || rc != 0) {
    fdata_free(d);
    return -1;
  }
  return 0;
}

/* The runtime device whose key is @p key, -1 for host memory ("host"), or
 * -2 for another device or backend's. */
static int dev_of(const cua__models *m, const char *key, int host_ok) {
  if (host_ok && strcmp(key, "host") == 0)
    return -1;
  for (int d = 0; d < m->ndev; d++)
    if (strcmp(m->devkey[d], key) == 0)
      return d;
  return -2;
}

/* Adds the file's entries for this backend and these devices to @p m. */
static int load_entries(cua__models *m, const fdata *d) {
  for (size_t i = 0; i < d->n; i++) {
    char *copy = cua__strdup(d->v[i].key);
    if (copy == NULL)
      return CUA_ERR_NOMEM;
    char *f[10];
    int nf = split(copy, f, 8);
    int bad = 0;
    mfam *fam = NULL;
    unsigned b = 0;
    if (nf == 8 && strcmp(f[1], m->backend) == 0) {
      /* op BACKEND DEVICE KIND NAME TAG COSTBITS BYTESBITS */
      int dev = dev_of(m, f[2], 0), kind = kind_by_name(f[3]);
      char *name = unescape(f[4], &bad), *tag = unescape(f[5], &bad);
      unsigned long cb = strtoul(f[6], NULL, 10);
      b = (unsigned)strtoul(f[7], NULL, 10);
      if (dev >= 0 && kind != 0 && !bad && cb <= 64 && b <= 64)
        fam = fam_find(m, 0, dev, dev, kind, name, tag, (unsigned)cb, 1);
    } else if (nf == 5 && strcmp(f[1], m->backend) == 0) {
      /* xfer BACKEND FROM TO BYTESBITS */
      int from = dev_of(m, f[2], 1), to = dev_of(m, f[3], 1);
      b = (unsigned)strtoul(f[4], NULL, 10);
      if (from >= -1 && to >= -1 && b <= 64)
        fam = fam_find(m, 1, to, from, 0, NULL, NULL, 0, 1);
    }
    free(copy);
    if (fam != NULL) {
      mbucket *k = bucket_find(fam, b, 1);
      if (k == NULL)
        return CUA_ERR_NOMEM;
      stat_add(&k->all, &d->v[i].s);
    }
  }
  return 0;
}

/* The file's key of @p f's bucket @p k, allocated. */
static char *entry_key(const cua__models *m, const mfam *f, const mbucket *k) {
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&buf, &len);
  if (o == NULL)
    return NULL;
  if (f->transfer) {
    fprintf(o, "xfer %s %s %s %u", m->backend,
            f->from < 0 ? "host" : m->devkey[f->from],
            f->dev < 0 ? "host" : m->devkey[f->dev], k->b);
  } else {
    fprintf(o, "op %s %s ", m->backend, m->devkey[f->dev]);
    put_field(o, cua_op_kind_name((cua_op_kind)f->kind));
    fputc(' ', o);
    put_field(o, f->name);
    fputc(' ', o);
    put_field(o, f->tag);
    fprintf(o, " %u %u", f->cb, k->b);
  }
  if (fclose(o) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

static int mkdirs(const char *dir) {
  char *p = cua__strdup(dir);
  if (p == NULL)
    return -1;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST) {
        free(p);
        return -1;
      }
      *s = c;
      if (c == '\0')
        break;
    }
  }
  free(p);
  return 0;
}

/* Merges this runtime's measurements into the file (see the top). */
static void save(cua__models *m) {
  fdata d = {0};
  if (mkdirs(m->dir) != 0) {
    warn("cannot create %s: %s; this run's models are not kept", m->dir,
         strerror(errno));
    return;
  }
  read_file(m, &d, 1); /* a bad file was reported at creation: replaced */
  for (size_t i = 0; i < m->cap; i++) {
    mfam *f = m->tab[i];
    if (f == NULL)
      continue;
    for (size_t j = 0; j < f->nbk; j++) {
      mbucket *k = &f->bk[j];
      if (k->delta.n <= 0)
        continue;
      char *key = entry_key(m, f, k);
      if (key == NULL)
        goto nomem;
      size_t e = 0;
      while (e < d.n && strcmp(d.v[e].key, key) != 0)
        e++;
      if (e == d.n) {
        if (cua__grow(&d.v, &d.cap, d.n + 1, sizeof *d.v) != 0) {
          free(key);
          goto nomem;
        }
        memset(&d.v[d.n++], 0, sizeof *d.v);
        d.v[e].key = key;
      } else {
        free(key);
      }
      stat_add(&d.v[e].s, &k->delta);
    }
  }
  size_t tl = strlen(m->dir) + 64;
  char *tmp = cua__malloc(tl);
  if (tmp == NULL)
    goto nomem;
  snprintf(tmp, tl, "%s/.models.%ld.tmp", m->dir, (long)getpid());
  FILE *o = fopen(tmp, "w");
  int ok = o != NULL;
  if (ok) {
    fprintf(o, "cuasync-models %d %s\n", MODELS_VERSION, m->host);
    fputs("# kind backend device(s) class bits-of-bytes: count, sums of "
          "bytes, bytes^2, ns, ns^2, bytes*ns\n",
          o);
    for (size_t i = 0; i < d.n; i++) {
      const mstat *s = &d.v[i].s;
      fprintf(o, "%s %.17g %.17g %.17g %.17g %.17g %.17g\n", d.v[i].key, s->n,
              s->sx, s->sxx, s->sy, s->syy, s->sxy);
    }
    ok = !ferror(o);
    ok = fclose(o) == 0 && ok;
  }
  if (!ok || rename(tmp, m->file) != 0) {
    warn("cannot write %s: %s; this run's models are not kept", m->file,
         strerror(errno));
    unlink(tmp);
  }
  free(tmp);
  fdata_free(&d);
  return;
nomem:
  warn("out of memory; this run's models are not kept");
  fdata_free(&d);
}

/* ------------------------------------------------------------ the service */

int cua__models_open(cua_runtime *rt) {
  const char *mode = rt->cfg->models;
  if (mode == NULL || strcmp(mode, "off") == 0)
    return 0;
  cua__models *m = cua__calloc(1, sizeof *m);
  if (m == NULL)
    return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
  rt->models = m;
  char host[256] = "unknown";
  if (gethostname(host, sizeof host - 1) != 0)
    strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  m->ndev = rt->ndev;
  if ((m->host = escaped(host)) == NULL ||
      (m->backend = escaped(rt->be->name)) == NULL ||
      (m->devkey = cua__calloc((size_t)rt->ndev + 1, sizeof *m->devkey)) ==
          NULL)
    goto nomem;
  for (int d = 0; d < rt->ndev; d++) {
    cua_device_info info;
    char key[160];
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (rt->be->device_info(rt->bst, d, &info) != 0)
      snprintf(info.name, sizeof info.name, "device");
    info.name[sizeof info.name - 1] = '\0';
    snprintf(key, sizeof key, "%d:%s", info.ordinal, info.name);
    if ((m->devkey[d] = escaped(key)) == NULL)
      goto nomem;
  }
  if (strcmp(mode, "memory") == 0)
    return 0;
  size_t n = strlen(mode) + strlen(m->host) + sizeof "/models-.txt";
  if ((m->dir = cua__strdup(mode)) == NULL ||
      (m->file = cua__malloc(n)) == NULL)
    goto nomem;
  snprintf(m->file, n, "%s/models-%s.txt", mode, m->host);
  fdata d = {0};
  if (read_file(m, &d, 0) == 0) {
    int rc = load_entries(m, &d);
    fdata_free(&d);
    if (rc != 0)
      goto nomem;
  }
  return 0;
nomem:
  cua__models_close(rt);
  return cua__fail(NULL, CUA_ERR_NOMEM, "out of host memory");
}

void cua__models_close(cua_runtime *rt) {
  cua__models *m = rt->models;
  if (m == NULL)
    return;
  if (m->file != NULL && m->dirty)
    save(m);
  for (size_t i = 0; i < m->cap; i++)
    if (m->tab[i] != NULL)
      fam_free(m->tab[i]);
  free(m->tab);
  for (int d = 0; m->devkey != NULL && d < m->ndev; d++)
    free(m->devkey[d]);
  free(m->devkey);
  free(m->host);
  free(m->backend);
  free(m->dir);
  free(m->file);
  free(m);
  rt->models = NULL;
}

static void sample(mfam *f, uint64_t bytes, uint64_t ns, double w) {
  mbucket *k = bucket_find(f, bits_of(bytes), 1);
  if (k == NULL)
    return;
  double x = (double)bytes, y = (double)ns;
  mstat s = {w, w * x, w * x * x, w * y, w * y * y, w * x * y};
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
  double w = n->dur_share > 1 ? 1.0 / n->dur_share : 1.0;
  mfam *f = n->mfam != NULL ? n->mfam
                            : fam_find(m, 0, n->pl.device, n->pl.device,
                                       op->kind, op->hints.name, op->hints.tag,
                                       bits_of(op->hints.cost_ns), 1);
  if (f != NULL)
    sample(f, op->hints.bytes, n->duration_ns, w);
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
      (f = fam_find(m, 1, to, from, 0, NULL, NULL, 0, 1)) != NULL)
    sample(f, op->bytes, n->duration_ns, w);
  m->dirty = 1;
}

/* The mean and spread of @p s, and a history's confidence. */
static void from_history(const mstat *s, cua_estimate *e) {
  double mean = s->sy / s->n;
  double var = s->syy / s->n - mean * mean;
  double sd = var > 0 ? sqrt(var) : 0;
  e->ns = (uint64_t)(mean + 0.5);
  e->stddev_ns = (uint64_t)(sd + 0.5);
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
  e->ns = (uint64_t)(y + 0.5);
  e->stddev_ns = res > 0 ? (uint64_t)(sqrt(res) + 0.5) : 0;
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
                      : fam_find(m, 0, device, device, op->kind, op->name,
                                 op->tag, bits_of(op->cost_ns), 0);
  const mbucket *k = f != NULL ? bucket_find(f, bits_of(op->bytes), 0) : NULL;
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
  mfam *f = m == NULL ? NULL : fam_find(m, 1, to, from, 0, NULL, NULL, 0, 0);
  if (f != NULL && from_regression(f, (double)bytes, &e) != 0) {
    /* One size measured: its bandwidth, with no latency. */
    mstat t = {0};
    for (size_t i = 0; i < f->nbk; i++)
      stat_add(&t, &f->bk[i].all);
    if (t.n > 0 && t.sx > 0) {
      e.ns = (uint64_t)((double)bytes * t.sy / t.sx + 0.5);
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
      f != NULL ? bucket_find((mfam *)f, bits_of(bytes), 0) : NULL;
  if (k != NULL && k->all.n > 0)
    return (uint64_t)(k->all.sy / k->all.n);
  return hint;
}

uint64_t cua__models_attach(cua_runtime *rt, cua__node *n) {
  const cua_op *op = n->op;
  cua__models *m = rt->models;
  if (m == NULL || n->pl.device < 0 || n->pl.device >= m->ndev ||
      !kind_timed(op->kind))
    return op->hints.cost_ns;
  mfam *f = fam_find(m, 0, n->pl.device, n->pl.device, op->kind, op->hints.name,
                     op->hints.tag, bits_of(op->hints.cost_ns), 1);
  n->mfam = f;
  return guess(f, op->hints.bytes, op->hints.cost_ns);
}

uint64_t cua__models_guess(cua_runtime *rt, const cua__node *n) {
  (void)rt;
  const cua_op *op = n->op;
  if (op == NULL)
    return 0;
  return guess(n->mfam, op->hints.bytes, op->hints.cost_ns);
}

int cua__models_sampling(const cua_runtime *rt, const cua__node *n) {
  if (rt->models == NULL || rt->host_exec || n->mfam == NULL || n->op == NULL)
    return 0;
  const mbucket *k = bucket_find(n->mfam, bits_of(n->op->hints.bytes), 0);
  return k == NULL || k->all.n < CUA__MODELS_SAMPLE;
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
    if (m->tab[i] != NULL)
      count += m->tab[i]->nbk;
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
