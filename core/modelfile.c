/*
 * core/modelfile.c: the performance models' file, DIR/models-HOST.txt
 * ([runtime] models = DIR): a header line with the format and the host,
 * then one entry per line, the fields that name it (backend, device(s),
 * op class, bits of the bytes hint) and its six sums. Read when the
 * runtime opens (entries for its backend and devices become the models'
 * sums); when it is destroyed, read again, given what this runtime
 * measured (the "delta" sums) and replaced at once (rename()), all under
 * an flock() of DIR/models-HOST.lock, so that runs beside each other,
 * in one process or several, add up. A save that waits 10 s for the lock
 * keeps nothing (a warning). A file that is foreign (another host or
 * format) or not a model file is a warning on stderr and is replaced at
 * the next save; one that cannot be read is a warning and is left alone.
 * A malformed line is a warning and is skipped (entries of other
 * backends, devices or op kinds are kept, not loaded), and the writer
 * writes only lines the reader takes back (cua__models_entry_problem()). A file
 * that cannot be written is a warning too: never a failure.
 *
 * Runs on the thread that creates or destroys the runtime (no mutex: the
 * models are not shared then; the lock file orders saves to one file).
 * The store is core/modelstore.h.
 */
#include "config.h"

#include "internal.h"
#include "models.h"
#include "modelstore.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 2: durations only from ops the backend timed. A format 1 file can hold
 * intervals a device backend's completion thread saw, which counted the
 * time ops waited for their inputs (models.c), so it is not read. */
#define MODELS_VERSION 2
#define STR_(x) #x
#define STR(x) STR_(x)
#define MAX_FILE_BYTES (64u << 20)

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

#define MAX_ENTRIES 1000000
/* Malformed lines warned one by one; the rest are counted. */
#define MAX_LINE_WARNINGS 3

/* Reads the model file of @p m into @p d: 0 (an absent file is empty;
 * a malformed line is skipped, with a warning unless @p quiet); -1 after
 * a warning when the file as a whole is foreign or not a model file (then
 * @p d is empty: the file is ignored, and replaced at the next save); -2
 * when it cannot be read (not a regular file, an I/O error: a save must
 * not replace it). */
static int read_file(const cua__models *m, fdata *d, int quiet) {
  /* Not blocking on a FIFO someone left there. */
  int fd = open(m->file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  const char *bad = NULL;
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    bad = strerror(errno);
  } else if (fstat(fd, &st) != 0) {
    bad = strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    bad = "not a regular file";
  } else if (st.st_size > (off_t)MAX_FILE_BYTES) {
    bad = "larger than 64 MiB";
  }
  FILE *f = bad == NULL ? fdopen(fd, "r") : NULL;
  if (bad == NULL && f == NULL)
    bad = strerror(errno);
  if (bad != NULL) {
    if (fd >= 0 && f == NULL)
      close(fd);
    if (!quiet)
      warn("cannot read %s: %s; starting with no models (the file is "
           "left as it is)",
           m->file, bad);
    return -2;
  }
  char *line = NULL;
  size_t cap = 0, total = 0;
  ssize_t len;
  int lineno = 0, rc = 0, nbad = 0;
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
    if (lineno == 1) {
      char *fld[4];
      char *copy =
          len <= CUA__MODELS_MAX_LINE && memchr(line, '\0', (size_t)len) == NULL
              ? cua__strdup(line)
              : NULL;
      int nf = copy != NULL ? cua__models_split(copy, fld, 3) : 0;
      if (nf != 3 || strcmp(fld[0], "cuasync-models") != 0) {
        why = "not a cuasync model file";
      } else if (strcmp(fld[1], STR(MODELS_VERSION)) != 0) {
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
    /* One bad line costs that line, not the file. */
    char *fld[16];
    int nkey = 0;
    mstat s;
    if (d->n >= MAX_ENTRIES) {
      if (!quiet)
        warn("%s:%d: past the first million entries; the rest are skipped "
             "(and left out when the file is next saved)",
             m->file, lineno);
      break;
    }
    char *copy = cua__malloc((size_t)len + 1);
    if (copy == NULL) {
      why = "out of memory";
      break;
    }
    memcpy(copy, line, (size_t)len + 1);
    const char *prob =
        cua__models_entry_problem(copy, (size_t)len, fld, &nkey, &s);
    if (prob != NULL) {
      if (!quiet && nbad < MAX_LINE_WARNINGS)
        warn("%s:%d: a malformed entry (%s); skipped (it is left out when "
             "the file is next saved)",
             m->file, lineno, prob);
      nbad++;
      free(copy);
      continue;
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
  if (!quiet && nbad > MAX_LINE_WARNINGS)
    warn("%s: %d more malformed entries skipped", m->file,
         nbad - MAX_LINE_WARNINGS);
  if (why != NULL) {
    if (lineno <= 1 && total == 0)
      why = NULL; /* an empty file: nothing stored */
    else if (!quiet)
      warn("%s:%d: %s; the file is ignored (it is replaced when this run "
           "saves its models)",
           m->file, lineno, why);
  }
  int ioerr = why == NULL && ferror(f);
  free(line);
  fclose(f);
  if (ioerr) {
    if (!quiet)
      warn("cannot read %s: an I/O error; starting with no models (the "
           "file is left as it is)",
           m->file);
    fdata_free(d);
    return -2;
  }
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
    int nf = cua__models_split(copy, f, 8);
    int bad = 0;
    mfam *fam = NULL;
    unsigned b = 0;
    if (nf == 8 && strcmp(f[1], m->backend) == 0) {
      /* op BACKEND DEVICE KIND NAME TAG COSTBITS BYTESBITS */
      int dev = dev_of(m, f[2], 0), kind = cua__models_kind(f[3]);
      char *name = cua__models_unescape(f[4], &bad),
           *tag = cua__models_unescape(f[5], &bad);
      unsigned long cb = strtoul(f[6], NULL, 10);
      b = (unsigned)strtoul(f[7], NULL, 10);
      if (dev >= 0 && kind != 0 && !bad && cb <= 64 && b <= 64)
        fam = cua__mfam_find(m, 0, dev, dev, kind, name, tag, (unsigned)cb, 1);
    } else if (nf == 5 && strcmp(f[1], m->backend) == 0) {
      /* xfer BACKEND FROM TO BYTESBITS */
      int from = dev_of(m, f[2], 1), to = dev_of(m, f[3], 1);
      b = (unsigned)strtoul(f[4], NULL, 10);
      if (from >= -1 && to >= -1 && b <= 64)
        fam = cua__mfam_find(m, 1, to, from, 0, NULL, NULL, 0, 1);
    }
    free(copy);
    if (fam != NULL) {
      mbucket *k = cua__mbucket_find(fam, b, 1);
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
    cua__models_put_field(o, cua_op_kind_name((cua_op_kind)f->kind));
    fputc(' ', o);
    cua__models_put_field(o, f->name);
    fputc(' ', o);
    cua__models_put_field(o, f->tag);
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

static uint64_t key_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

/* The entry of @p d named @p key, through @p idx (open addressing over
 * d's entries, @p cap a power of two at least twice their count), or
 * d->n when there is none. */
static size_t lookup(const fdata *d, const size_t *idx, size_t cap,
                     const char *key) {
  for (size_t j = key_hash(key) & (cap - 1);; j = (j + 1) & (cap - 1)) {
    if (idx[j] == SIZE_MAX)
      return d->n;
    if (strcmp(d->v[idx[j]].key, key) == 0)
      return idx[j];
  }
}

static void index_put(const fdata *d, size_t *idx, size_t cap, size_t e) {
  size_t j = key_hash(d->v[e].key) & (cap - 1);
  while (idx[j] != SIZE_MAX)
    j = (j + 1) & (cap - 1);
  idx[j] = e;
}

/* Writes @p d's entries to @p o after the header, each only when the
 * reader would take its line back (cua__models_entry_problem()) and the file
 * stays within the reader's limits; warns of those left out. 0, or -1 on a
 * write error. */
static int write_entries(const cua__models *m, FILE *o, const fdata *d) {
  char line[CUA__MODELS_MAX_LINE + 2], chk[CUA__MODELS_MAX_LINE + 2];
  char *fld[16];
  size_t written = 0, bytes = 0, skipped = 0;
  const char *first = NULL;
  char first_key[64] = "";
  fprintf(o, "cuasync-models %d %s\n", MODELS_VERSION, m->host);
  fputs("# kind backend device(s) class bits-of-bytes: count, sums of "
        "bytes, bytes^2, ns, ns^2, bytes*ns\n",
        o);
  for (size_t i = 0; i < d->n; i++) {
    const mstat *s = &d->v[i].s;
    int len =
        snprintf(line, sizeof line, "%s %.17g %.17g %.17g %.17g %.17g %.17g",
                 d->v[i].key, s->n, s->sx, s->sxx, s->sy, s->syy, s->sxy);
    const char *prob = NULL;
    int nkey;
    mstat back;
    if (len < 0 || len > CUA__MODELS_MAX_LINE) {
      /* Only a name or tag hint makes a key this long: clipped, it
       * would be another class's, so the entry is left out. */
      prob = "a line longer than 4096 bytes (a long name or tag hint)";
    } else {
      memcpy(chk, line, (size_t)len + 1);
      prob = cua__models_entry_problem(chk, (size_t)len, fld, &nkey, &back);
      if (prob == NULL &&
          (written == MAX_ENTRIES ||
           bytes + (size_t)len + 1 > MAX_FILE_BYTES - CUA__MODELS_MAX_LINE))
        prob = "the file is full (a million entries or 64 MiB)";
    }
    if (prob != NULL) {
      if (skipped++ == 0) {
        first = prob;
        snprintf(first_key, sizeof first_key, "%s", d->v[i].key);
      }
      continue;
    }
    fputs(line, o);
    fputc('\n', o);
    written++;
    bytes += (size_t)len + 1;
  }
  if (skipped > 0)
    warn("%s: %zu entr%s not saved: %s (the first: %s...)", m->file, skipped,
         skipped == 1 ? "y" : "ies", first, first_key);
  return ferror(o) ? -1 : 0;
}

/* Merges this runtime's measurements into the file as it is now, and
 * replaces it (see the top); the caller holds the file's lock. */
static void save_locked(cua__models *m) {
  fdata d = {0};
  size_t *idx = NULL, icap = 64;
  /* A foreign or corrupt file was reported at creation, and is replaced;
   * one that cannot be read now is left as it is. */
  if (read_file(m, &d, 1) == -2) {
    warn("cannot read %s again; this run's models are not kept", m->file);
    return;
  }
  size_t fresh = 0;
  for (size_t i = 0; i < m->cap; i++)
    if (m->tab[i] != NULL)
      fresh += m->tab[i]->nbk;
  while (icap < 2 * (d.n + fresh + 1))
    icap *= 2;
  if ((idx = cua__malloc(icap * sizeof *idx)) == NULL)
    goto nomem;
  for (size_t j = 0; j < icap; j++)
    idx[j] = SIZE_MAX;
  for (size_t e = 0; e < d.n; e++)
    if (lookup(&d, idx, icap, d.v[e].key) == d.n)
      index_put(&d, idx, icap, e);
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
      size_t e = lookup(&d, idx, icap, key);
      if (e == d.n) {
        if (cua__grow(&d.v, &d.cap, d.n + 1, sizeof *d.v) != 0) {
          free(key);
          goto nomem;
        }
        memset(&d.v[d.n++], 0, sizeof *d.v);
        d.v[e].key = key;
        index_put(&d, idx, icap, e);
      } else {
        free(key);
      }
      stat_add(&d.v[e].s, &k->delta);
    }
  }
  free(idx);
  idx = NULL;
  size_t tl = strlen(m->dir) + 64;
  char *tmp = cua__malloc(tl);
  if (tmp == NULL)
    goto nomem;
  /* A name of its own: a save that timed out on the lock, or one on a
   * file system without locks, may write beside this one. */
  snprintf(tmp, tl, "%s/.models.XXXXXX", m->dir);
  int tfd = mkstemp(tmp);
  FILE *o = tfd >= 0 ? fdopen(tfd, "w") : NULL;
  if (tfd >= 0 && o == NULL)
    close(tfd);
  int ok = o != NULL;
  if (ok) {
    ok = write_entries(m, o, &d) == 0;
    ok = fclose(o) == 0 && ok;
  }
  if (!ok || rename(tmp, m->file) != 0) {
    warn("cannot write %s: %s; this run's models are not kept", m->file,
         strerror(errno));
    if (tfd >= 0)
      unlink(tmp);
  }
  free(tmp);
  fdata_free(&d);
  return;
nomem:
  warn("out of memory; this run's models are not kept");
  free(idx);
  fdata_free(&d);
}

/* How long a save waits for another's lock: saves take milliseconds (a
 * 64 MiB file, the largest read, about a second), so this is many
 * processes' saves in a row, or one that is stopped or hung. */
#define LOCK_WAIT_S 10

/* Takes DIR/models-HOST.lock, an flock() of an open file description of
 * its own (so runtimes of one process exclude each other too): the
 * descriptor, or -1 where the file cannot be opened or the file system
 * has no locks (the save goes on without one, as before locks were
 * taken), or -2 when another has held it for LOCK_WAIT_S (the save is
 * skipped: this run's measurements are lost, not another's). */
static int lock_file(const cua__models *m) {
  size_t n = strlen(m->dir) + strlen(m->host) + sizeof "/models-.lock";
  char *path = cua__malloc(n);
  if (path == NULL)
    return -1;
  snprintf(path, n, "%s/models-%s.lock", m->dir, m->host);
  /* Readable by all, as the model file is (its mode comes from the umask):
   * a directory a team shares is locked by whoever saves, and flock()
   * takes a read-only descriptor as well. */
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EACCES)
    fd = open(path, O_RDONLY | O_CLOEXEC);
  free(path);
  if (fd < 0)
    return -1;
  struct timespec t0, now, nap = {0, 1000000};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    if (errno == EINTR)
      continue;
    if (errno != EWOULDBLOCK) {
      close(fd);
      return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t waited = (int64_t)(now.tv_sec - t0.tv_sec) * 1000000000 +
                     (now.tv_nsec - t0.tv_nsec);
    if (waited >= (int64_t)LOCK_WAIT_S * 1000000000) {
      close(fd);
      return -2;
    }
    /* Polled (a blocking flock() would wait for ever), 1 ms at first,
     * doubling to 50 ms. */
    nanosleep(&nap, NULL);
    if (nap.tv_nsec < 50000000)
      nap.tv_nsec = nap.tv_nsec * 2 > 50000000 ? 50000000 : nap.tv_nsec * 2;
  }
}

static void save(cua__models *m) {
  if (mkdirs(m->dir) != 0) {
    warn("cannot create %s: %s; this run's models are not kept", m->dir,
         strerror(errno));
    return;
  }
  int lk = lock_file(m);
  if (lk == -2) {
    warn("%s: models-%s.lock was held by another save for %d s; this run's "
         "models are not kept",
         m->file, m->host, LOCK_WAIT_S);
    return;
  }
  save_locked(m);
  if (lk >= 0)
    close(lk); /* and so unlocked, after the rename */
}

/* ------------------------------------------------------- opening, closing */

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
  if ((m->host = cua__models_escaped(host)) == NULL ||
      (m->backend = cua__models_escaped(rt->be->name)) == NULL ||
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
    if ((m->devkey[d] = cua__models_escaped(key)) == NULL)
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
      cua__mfam_free(m->tab[i]);
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
