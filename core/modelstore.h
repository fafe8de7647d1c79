/*
 * core/modelstore.h: the performance models' store, shared by the files
 * that keep it: core/models.c (the service: families of sums, what
 * policies are told, what completions add), core/modelfile.c (the model
 * file: reading, merging, writing) and core/modelline.c (one line of it).
 * Nothing else includes it. Every
 * use is under rt->lock, or on the thread creating or destroying the
 * runtime (models.c says which).
 */
#ifndef CUA_CORE_MODELSTORE_H
#define CUA_CORE_MODELSTORE_H

#include "internal.h"

#include <stdint.h>
#include <stdio.h>

#define MAX_FAMILIES 65536

typedef struct mstat {
  double n, sx, sxx, sy, syy, sxy;
} mstat;

typedef struct mbucket {
  unsigned b;       /* bits of the bytes hint: [2^(b-1), 2^b - 1]; 0 is 0 */
  unsigned sampled; /* ops given a mark of their own to be measured */
  mstat all;        /* loaded + measured */
  mstat delta;      /* measured by this runtime, not yet saved */
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
  mfam *last;     /* the family found last: ops come in runs of one class */
};

/* log2 of @p v rounded up: the bucket of a size or a cost (0 for 0). */
static inline unsigned bits_of(uint64_t v) {
  unsigned b = 0;
  for (; v > 0; v >>= 1)
    b++;
  return b;
}

static inline void stat_add(mstat *a, const mstat *b) {
  a->n += b->n;
  a->sx += b->sx;
  a->sxx += b->sxx;
  a->sy += b->sy;
  a->syy += b->syy;
  a->sxy += b->sxy;
}

/* models.c: the family of a class on a device (a transfer: to, from), made
 * when @p add and there is room; a size bucket of it. */
mfam *cua__mfam_find_slow(cua__models *m, int transfer, int dev, int from,
                          int kind, const char *name, const char *tag,
                          unsigned cb, int add);
/* (Ops come in runs of one class: the family found last is checked
 * inline, its name and tag by pointer, which catches unnamed ops and
 * transfers (both NULL); a family keeps its own copies of names, so a
 * named op takes the call, which compares them as strings.) */
static inline mfam *cua__mfam_find(cua__models *m, int transfer, int dev,
                                   int from, int kind, const char *name,
                                   const char *tag, unsigned cb, int add) {
  mfam *l = m->last;
  if (l != NULL && l->kind == kind && l->dev == dev && l->from == from &&
      l->transfer == transfer && l->cb == cb && l->name == name &&
      l->tag == tag)
    return l;
  return cua__mfam_find_slow(m, transfer, dev, from, kind, name, tag, cb, add);
}
mbucket *cua__mbucket_find(mfam *f, unsigned b, int add);
void cua__mfam_free(mfam *f);

/* modelfile.c: a field of the model file (NULL or "" is "-"; bytes that
 * would split a field or a line, '%%', '/' and a "-" alone as %XX). */
/* modelline.c: a line of the model file. */
#define CUA__MODELS_MAX_LINE 4096
void cua__models_put_field(FILE *f, const char *s);
char *cua__models_escaped(const char *s);
/* Decodes a field in place; NULL for "-". Sets *bad on a malformed escape. */
char *cua__models_unescape(char *s, int *bad);
/* The op kind named @p s, 0 for none. */
int cua__models_kind(const char *s);
/* Splits @p line into at most @p max space-separated fields: their count,
 * or max + 1 when there are more. */
int cua__models_split(char *line, char **f, int max);
/* Why the entry @p line (of @p len bytes, no newline) is malformed, or
 * NULL when it is not; then @p line is split into @p fld (14 fields), *nkey
 * is the number of fields that name the entry and @p s holds its sums. */
const char *cua__models_entry_problem(char *line, size_t len, char **fld,
                                      int *nkey, mstat *s);

#endif /* CUA_CORE_MODELSTORE_H */
