/*
 * core/modelline.c: one line of the performance models' file
 * (core/modelfile.c): fields escaped and unescaped, a line split, and the
 * one rule of what a line may hold (cua__models_entry_problem()), which
 * the reader applies to what it reads and the writer to what it writes,
 * so that the writer never writes a line the next run would refuse.
 *
 * Pure functions of their arguments: no state, no lock.
 */
#include "config.h"

#include "internal.h"
#include "modelstore.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ fields */

void cua__models_put_field(FILE *f, const char *s) {
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
char *cua__models_escaped(const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  cua__models_put_field(f, s);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* Decodes a field in place; NULL for "-". Sets *bad on a malformed escape. */
char *cua__models_unescape(char *s, int *bad) {
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

int cua__models_kind(const char *s) {
#define KIND(id, val, name, launched, desc)                                    \
  if (strcmp(s, name) == 0)                                                    \
    return val;
  CUA_OP_KIND_MAP(KIND)
#undef KIND
  return 0;
}

/* Splits @p line into at most @p max space-separated fields. */
int cua__models_split(char *line, char **f, int max) {
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

/* What a measurement can make, as a mean over an entry's count: a bytes
 * hint is a uint64_t (2^64, with room for the sums' rounding), a duration
 * at most 10^15 ns (11 days); a count is a whole number up to 2^53, the
 * last one a double adds 1 to exactly. */
#define MAX_MEAN_BYTES 1.9e19
#define MAX_MEAN_NS 1e15
#define MAX_COUNT 9007199254740992.0

static const char *parse_sums(char **f, mstat *s) {
  double *v[6] = {&s->n, &s->sx, &s->sxx, &s->sy, &s->syy, &s->sxy};
  for (int i = 0; i < 6; i++) {
    char *end;
    errno = 0;
    *v[i] = strtod(f[i], &end);
    if (*end != '\0' || errno != 0 || !isfinite(*v[i]) || *v[i] < 0)
      return "a sum that is not a finite number >= 0";
  }
  if (!(s->n >= 1 && s->n <= MAX_COUNT && s->n == floor(s->n)))
    return "a count that is not a whole number from 1 to 2^53";
  if (s->sx / s->n > MAX_MEAN_BYTES ||
      s->sxx / s->n > MAX_MEAN_BYTES * MAX_MEAN_BYTES ||
      s->sy / s->n > MAX_MEAN_NS || s->syy / s->n > MAX_MEAN_NS * MAX_MEAN_NS ||
      s->sxy / s->n > MAX_MEAN_BYTES * MAX_MEAN_NS)
    return "sums no measurement can make (a mean beyond 2^64 bytes or "
           "10^15 ns)";
  return NULL;
}

/* Whether @p s is a field as put_field() writes it: each '%' starts an
 * escape of two hex digits, not %00. */
static int field_ok(const char *s) {
  for (; *s; s++) {
    if (*s != '%')
      continue;
    if (!isxdigit((unsigned char)s[1]) || !isxdigit((unsigned char)s[2]) ||
        (s[1] == '0' && s[2] == '0'))
      return 0;
    s += 2;
  }
  return 1;
}

/* Whether @p s is a bucket: bits of a uint64_t, 0 to 64, in decimal. */
static int bits_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 2 || strspn(s, "0123456789") != n)
    return 0;
  return atoi(s) <= 64;
}

/* Why the entry @p line (of @p len bytes, no newline) is malformed, or
 * NULL when it is not; then @p line is split into @p fld, *nkey is the
 * number of fields that name the entry and @p s holds its sums. The
 * reader skips a malformed line, and the writer checks each line with
 * this before it writes it, so that it never writes one the next run
 * would refuse. */
const char *cua__models_entry_problem(char *line, size_t len, char **fld,
                                      int *nkey, mstat *s) {
  if (len > CUA__MODELS_MAX_LINE)
    return "a line longer than 4096 bytes";
  if (memchr(line, '\0', len) != NULL)
    return "a NUL byte";
  int nf = cua__models_split(line, fld, 14);
  *nkey = nf == 14 && strcmp(fld[0], "op") == 0     ? 8
          : nf == 11 && strcmp(fld[0], "xfer") == 0 ? 5
                                                    : -1;
  if (*nkey < 0)
    return "neither op and 13 fields nor xfer and 10";
  for (int i = 1; i < *nkey - (*nkey == 8 ? 2 : 1); i++)
    if (!field_ok(fld[i]))
      return "a bad %XX escape";
  if (!bits_ok(fld[*nkey - 1]) || (*nkey == 8 && !bits_ok(fld[6])))
    return "a bucket that is not a number from 0 to 64";
  return parse_sums(fld + *nkey, s);
}
