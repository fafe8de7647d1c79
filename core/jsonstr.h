/*
 * core/jsonstr.h: a JSON string as every JSON writer of cuasync puts it:
 * cuasync-info (tools/cuasync-info.c), cuasync-bench (tools/bench/output.c)
 * and the perfetto observer (plugins/perfetto/perfetto.c), which links no
 * part of the core, hence header-only. No state, no lock.
 *
 * JSON is UTF-8 (RFC 8259), but the strings written come from files,
 * names and hints that may hold any byte: valid UTF-8 sequences are copied
 * whole, each ill-formed one (a stray continuation byte, a truncated
 * sequence, an overlong form, a surrogate, a code point past U+10FFFF)
 * becomes one U+FFFD, written as \ufffd, per maximal invalid subpart as
 * Unicode recommends (so a truncated sequence costs one U+FFFD, not one
 * per byte). Quotes, backslashes and control characters are escaped.
 */
#ifndef CUASYNC_CORE_JSONSTR_H
#define CUASYNC_CORE_JSONSTR_H

#include <stddef.h>
#include <stdio.h>

/* How many bytes of the UTF-8 sequence at @p p are well formed: its whole
 * length (2 to 4) if it is, else the length of its longest valid prefix
 * (at least 1), which is what to replace by one U+FFFD. *@p ok says
 * which. @p p[0] is a byte of 0x80 or more. */
static inline size_t cua_jsonstr_seq(const unsigned char *p, int *ok) {
  unsigned char c = p[0], lo = 0x80, hi = 0xbf;
  size_t len, i;

  *ok = 0;
  if (c >= 0xc2 && c <= 0xdf)
    len = 2;
  else if (c >= 0xe0 && c <= 0xef)
    len = 3;
  else if (c >= 0xf0 && c <= 0xf4)
    len = 4;
  else
    return 1; /* a continuation byte, C0, C1 or F5..FF: never a lead */
  /* The second byte's range excludes overlong forms (E0, F0), the
   * surrogates (ED) and code points past U+10FFFF (F4). */
  if (c == 0xe0)
    lo = 0xa0;
  else if (c == 0xed)
    hi = 0x9f;
  else if (c == 0xf0)
    lo = 0x90;
  else if (c == 0xf4)
    hi = 0x8f;
  for (i = 1; i < len; i++) {
    if (p[i] < lo || p[i] > hi)
      return i;
    lo = 0x80;
    hi = 0xbf;
  }
  *ok = 1;
  return len;
}

/* Writes @p s to @p f as a quoted JSON string (NULL as ""). */
static inline void cua_jsonstr_put(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");

  fputc('"', f);
  while (*p != '\0') {
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      fputc('\\', f);
      fputc(c, f);
      p++;
    } else if (c == '\n') {
      fputs("\\n", f);
      p++;
    } else if (c == '\t') {
      fputs("\\t", f);
      p++;
    } else if (c < 0x20 || c == 0x7f) {
      fprintf(f, "\\u%04x", c);
      p++;
    } else if (c < 0x80) {
      fputc(c, f);
      p++;
    } else {
      int ok;
      size_t n = cua_jsonstr_seq(p, &ok);
      if (ok)
        fwrite(p, 1, n, f);
      else
        fputs("\\ufffd", f);
      p += n;
    }
  }
  fputc('"', f);
}

#endif
