/*
 * core/confsyntax.c: values and names as inih reads them, both ways.
 *
 * Reading, for core/conf.c: quoted values and their escapes. Writing, for
 * core/confprint.c: whether a value reads back as it is, its quoted form,
 * and whether a key or a section name can be written at all. Both follow
 * what inih does to a line (blanks stripped around keys and values, a ';'
 * after a blank starting a comment, the first '=' or ':' ending the key),
 * in one place so that the printer writes exactly what the parser reads.
 * No lock and no state: the functions only look at their arguments.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A blank to inih: isspace() there strips it around keys and values and
 * makes a ';' after it a comment. C's own blanks too, whatever the locale
 * says. */
static int blank(unsigned char c) {
  return isspace(c) || c == ' ' || (c >= '\t' && c <= '\r');
}

static int control(unsigned char c) {
  return c < 0x20 || c == 0x7f;
}

/* ------------------------------------------------------------------ */
/* Reading. */

/* The escapes of a quoted value, for messages. */
#define ESCAPES "\\\\ \\\" \\; \\n \\t \\r and \\xHH"

static int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/*
 * Reads a quoted value (@p v starts with '"'; inih has already dropped
 * the blanks around it and a comment after it) into *out (cua__malloc()).
 * Between the quotes, a backslash starts an escape: \\ \" \; \n \t \r or \xHH;
 * control characters must be escapes, any other byte stands for itself.
 * cua__conf_quote() below writes what it reads. Returns 0 or the error
 * recorded.
 */
int cua__conf_unquote(cua__conf_parser *p, const char *sec, const char *key,
                      const char *v, char **out) {
  char *d = cua__malloc(strlen(v) + 1), *o = d;
  const char *s;
  int hi, lo;

  *out = NULL;
  if (d == NULL)
    return cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
  for (s = v + 1; *s != '"'; s++) {
    unsigned char c = (unsigned char)*s;

    if (c == '\0' || (c == '\\' && s[1] == '\0'))
      goto unclosed;
    if (c < 0x20 || c == 0x7f) {
      cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                     "[%s] %s: control character 0x%02x between quotes; "
                     "write it as an escape (\\t, \\n, \\r or \\xHH)",
                     sec, key, (unsigned)c);
      goto fail;
    }
    if (c != '\\') {
      *o++ = (char)c;
      continue;
    }
    switch (*++s) {
    case '\\':
    case '"':
    case ';':
      *o++ = *s;
      break;
    case 'n':
      *o++ = '\n';
      break;
    case 't':
      *o++ = '\t';
      break;
    case 'r':
      *o++ = '\r';
      break;
    case 'x':
      hi = hex_digit(s[1]);
      lo = hi < 0 ? -1 : hex_digit(s[2]);
      if (lo < 0) {
        cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                       "[%s] %s: '\\x' needs two hexadecimal digits", sec, key);
        goto fail;
      }
      if (hi == 0 && lo == 0) {
        cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                       "[%s] %s: a value cannot hold a NUL byte (\\x00)", sec,
                       key);
        goto fail;
      }
      *o++ = (char)(hi * 16 + lo);
      s += 2;
      break;
    default:
      if ((unsigned char)*s < 0x20 || *s == 0x7f)
        cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                       "[%s] %s: unknown escape: '\\' before byte 0x%02x; "
                       "the escapes are " ESCAPES,
                       sec, key, (unsigned)(unsigned char)*s);
      else
        cua__conf_fail(
            p, CUA_ERR_CONFIG_SYNTAX, p->line,
            "[%s] %s: unknown escape '\\%c'; the escapes are " ESCAPES, sec,
            key, *s);
      goto fail;
    }
  }
  if (s[1] != '\0') {
    cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                   "[%s] %s: text after the closing '\"': '%s'", sec, key,
                   s + 1);
    goto fail;
  }
  *o = '\0';
  *out = d;
  return 0;

unclosed:
  /* Often a ';' after a blank: inih cut the line there, as a comment. */
  cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                 "[%s] %s: the quoted value lacks its closing '\"' (a ';' "
                 "after a blank starts a comment even between quotes: write "
                 "it \\;)",
                 sec, key);
fail:
  free(d);
  return p->code;
}

/* ------------------------------------------------------------------ */
/* Writing. */

/* Whether @p v written as it is after "key =" (@p spaced: "key = ") reads
 * back as itself: CUA__PLAIN_NICE, CUA__PLAIN_RAW if it holds control
 * characters (it reads back, but quoted they are visible), or
 * CUA__PLAIN_NO. inih drops blanks at both ends and a comment from a ';'
 * after a blank, and a leading '"' starts a quoted value. */
int cua__conf_plain(const char *v, int spaced) {
  const unsigned char *s = (const unsigned char *)v;
  size_t n = strlen(v), i;
  int nice = 1;

  if (n == 0) /* "key =" reads "", but `key = ""` says so */
    return spaced ? CUA__PLAIN_NO : CUA__PLAIN_NICE;
  if (s[0] == '"' || blank(s[0]) || blank(s[n - 1]) || (spaced && s[0] == ';'))
    return CUA__PLAIN_NO;
  for (i = 0; i < n; i++) {
    if (s[i] == '\n' || (s[i] == ';' && i > 0 && blank(s[i - 1])))
      return CUA__PLAIN_NO;
    if (control(s[i]))
      nice = 0;
  }
  return nice ? CUA__PLAIN_NICE : CUA__PLAIN_RAW;
}

/* Writes @p v quoted into @p file (a FILE *; NULL: nothing) and returns
 * the length of that, quotes included. Each byte takes its shortest form:
 * \\ \" \n \t \r for those, \xHH for other control bytes, \; for a ';'
 * after a blank (inih would cut the line there), and the byte itself for
 * the rest, beyond ASCII included. As cua__conf_unquote() takes neither a
 * raw control byte nor a raw ';' after a blank, a value read from a quoted
 * line is never written longer than it was read. */
size_t cua__conf_quote(void *file, const char *v) {
  FILE *f = file;
  const unsigned char *s = (const unsigned char *)v;
  unsigned char last = '"';
  size_t n = 2, el;
  char hex[8];
  const char *e;

  if (f != NULL)
    putc('"', f);
  for (; *s != '\0'; s++) {
    switch (*s) {
    case '\\':
      e = "\\\\";
      break;
    case '"':
      e = "\\\"";
      break;
    case '\n':
      e = "\\n";
      break;
    case '\t':
      e = "\\t";
      break;
    case '\r':
      e = "\\r";
      break;
    case ';':
      e = blank(last) ? "\\;" : NULL;
      break;
    default:
      e = NULL;
      if (control(*s)) {
        snprintf(hex, sizeof hex, "\\x%02x", (unsigned)*s);
        e = hex;
      }
    }
    if (e == NULL) {
      if (f != NULL)
        putc(*s, f);
      last = *s;
      n++;
      continue;
    }
    el = strlen(e);
    if (f != NULL)
      fputs(e, f);
    last = (unsigned char)e[el - 1];
    n += el;
  }
  if (f != NULL)
    putc('"', f);
  return n;
}

/* Whether "key = ..." gives @p key back: inih ends a key at the first '='
 * or ':' (or a comment) and strips its blanks, and a line that starts
 * with ';', '#' or '[' is no key. */
int cua__conf_key_ok(const char *key) {
  const unsigned char *s = (const unsigned char *)key;
  size_t n = strlen(key), i;

  if (n == 0 || blank(s[0]) || blank(s[n - 1]) || s[0] == ';' || s[0] == '#' ||
      s[0] == '[')
    return 0;
  for (i = 0; i < n; i++)
    if (s[i] == '=' || s[i] == ':' || s[i] == '\n' ||
        (s[i] == ';' && i > 0 && blank(s[i - 1])))
      return 0;
  return 1;
}

/* Whether "[name]" gives @p name back: inih ends the name at the first
 * ']' (or a comment). */
int cua__conf_name_ok(const char *name) {
  const unsigned char *s = (const unsigned char *)name;
  size_t i;

  if (*s == '\0')
    return 0;
  for (i = 0; s[i] != '\0'; i++)
    if (s[i] == ']' || s[i] == '\n' ||
        (s[i] == ';' && i > 0 && blank(s[i - 1])))
      return 0;
  return 1;
}
