/*
 * core/conf.c: the INI configuration: where it is looked up, and parsing
 * it with inih into a cua__config (sections and keys with their lines).
 * The [runtime] values are checked in core/confruntime.c, quoted values
 * read in core/confsyntax.c, the printer is core/confprint.c, reading a
 * file is core/conffile.c. No lock:
 * cua__config_load() runs on its caller's thread, and the configuration it
 * returns is not changed afterwards (only freed), so it is read without one.
 *
 * The whole input (a file or the caller's text) is read into memory first
 * and handed to inih line by line through our own reader. The reader is
 * where we know the line number (Debian's inih does not pass it to the
 * handler), where [section] headers are checked (inih only reports them
 * implicitly, through the section of the next key, so an empty unknown
 * section would otherwise go unnoticed), and where leading blanks are
 * dropped: inih would take an indented line for a continuation of the
 * previous value, a Python configparser feature that silently turns an
 * indented `key = value` into part of another key's value.
 *
 * The first error wins: once one is recorded the reader ends the input, so
 * later lines are not even parsed. inih reports its own syntax errors (a
 * line with neither '=' nor ':') only through its return value, the first
 * such line; it is compared with the line of our first error, and the
 * earlier of the two is reported.
 *
 * What the format accepts, beyond config.h: comments are lines starting
 * with ';' or '#', and ';' after a blank inside a line (inih's inline
 * comments; '#' is not one there). "key: value" is read as "key = value"
 * (inih). A value that starts with '"' is quoted, with backslash escapes
 * (cua__conf_unquote()). A key before any [section] is a syntax error. A
 * section given twice is a syntax error, not a merge: which of two [runtime]
 * blocks a reader would look at is exactly the doubt the check removes. Lines
 * are limited to inih's buffer (ini_max_line, 200 bytes in Debian's build); a
 * longer one is a syntax error rather than being split in two.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <ini.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CUA_SYSCONFDIR
#error "CUA_SYSCONFDIR must be defined on the compile line"
#endif

/* The installed configuration file. */
#define SYSTEM_CONFIG CUA_SYSCONFDIR "/cuasync.ini"

/* The policy used when neither the file nor $CUASYNC_POLICY names one. */
#define DEFAULT_POLICY "round-robin"

/* No [section] header seen yet. */
#define NO_SECTION ((size_t)-1)

/* Later errors are dropped: they are often consequences of the first. */
int cua__conf_fail(cua__conf_parser *p, int code, int line, const char *fmt,
                   ...) {
  va_list ap;
  int n;

  if (p->code != 0)
    return p->code;
  p->code = code;
  p->err_line = line;
  if (p->err == NULL || p->errlen == 0)
    return code;
  n = snprintf(p->err, p->errlen, "%s:%d: ", p->cfg->origin, line);
  if (n >= 0 && (size_t)n < p->errlen) {
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return code;
}

static char *dup_mem(const char *s, size_t n) {
  char *d = cua__malloc(n + 1);

  if (d != NULL) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* Parses a non-negative decimal int without sign, blanks or leading zeros,
 * so that one number has one spelling ("device.1" and "device.01" must not
 * be two sections for the same device). Returns 0 or -1. */
int cua__conf_parse_index(const char *s, size_t n, int *out) {
  long v = 0;
  size_t i;

  if (n == 0 || (n > 1 && s[0] == '0'))
    return -1;
  for (i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
    if (v > INT_MAX)
      return -1;
  }
  *out = (int)v;
  return 0;
}

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
         c == '\v';
}

/* ------------------------------------------------------------------ */
/* Sections and keys. */

static cua__section *add_section(cua__config *cfg, const char *name, size_t n,
                                 int line) {
  cua__section *s;

  /* Arrays grow geometrically: a file of thousands of lines must not cost
   * a reallocation (and a copy) per line. */
  if (cua__grow(&cfg->sections, &cfg->seccap, cfg->nsections + 1,
                sizeof *cfg->sections) != 0)
    return NULL;
  s = &cfg->sections[cfg->nsections];
  memset(s, 0, sizeof *s);
  s->name = dup_mem(name, n);
  if (s->name == NULL)
    return NULL;
  s->line = line;
  cfg->nsections++;
  return s;
}

static int add_kv(cua__section *s, const char *key, const char *value,
                  int line) {
  cua__kv *kv;

  if (cua__grow(&s->kv, &s->kvcap, s->nkv + 1, sizeof *s->kv) != 0)
    return CUA_ERR_NOMEM;
  kv = &s->kv[s->nkv];
  kv->key = cua__strdup(key);
  kv->value = cua__strdup(value);
  kv->line = line;
  if (kv->key == NULL || kv->value == NULL) {
    free(kv->key);
    free(kv->value);
    return CUA_ERR_NOMEM;
  }
  s->nkv++;
  return 0;
}

static const cua__kv *find_kv(const cua__section *s, const char *key) {
  size_t i;

  for (i = 0; i < s->nkv; i++)
    if (strcmp(s->kv[i].key, key) == 0)
      return &s->kv[i];
  return NULL;
}

const cua__section *cua__config_section(const cua__config *cfg,
                                        const char *name) {
  size_t i;

  if (cfg == NULL || name == NULL)
    return NULL;
  for (i = 0; i < cfg->nsections; i++)
    if (strcmp(cfg->sections[i].name, name) == 0)
      return &cfg->sections[i];
  return NULL;
}

/* Checks a [header]'s name: "runtime", "policy.NAME", "backend.NAME",
 * "observer.NAME" or "device.N". Returns 0, or the error recorded. */
static int check_section_name(cua__conf_parser *p, const char *name, size_t n) {
  static const char *const prefixes[] = {"policy.", "backend.", "observer."};
  size_t i;
  int dev;

  if (n == 7 && memcmp(name, "runtime", 7) == 0)
    return 0;
  for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    size_t pl = strlen(prefixes[i]);
    if (n >= pl && memcmp(name, prefixes[i], pl) == 0) {
      if (n == pl)
        return cua__conf_fail(p, CUA_ERR_CONFIG_UNKNOWN_SECTION, p->line,
                              "[%.*s]: the section needs a module name after "
                              "'%s'",
                              (int)n, name, prefixes[i]);
      return 0;
    }
  }
  if (n >= 7 && memcmp(name, "device.", 7) == 0) {
    if (cua__conf_parse_index(name + 7, n - 7, &dev) != 0)
      return cua__conf_fail(p, CUA_ERR_CONFIG_UNKNOWN_SECTION, p->line,
                            "[%.*s]: N in [device.N] must be a non-negative "
                            "integer (no sign, no leading zeros)",
                            (int)n, name);
    return 0;
  }
  return cua__conf_fail(p, CUA_ERR_CONFIG_UNKNOWN_SECTION, p->line,
                        "unknown section [%.*s]; valid sections are [runtime], "
                        "[policy.NAME], [backend.NAME], [observer.NAME] and "
                        "[device.N]",
                        (int)n, name);
}

/* Handles a line that starts with '[': checks its syntax and name, and
 * makes it the current section. @p s is the line without leading blanks. */
static int on_header(cua__conf_parser *p, const char *s) {
  const char *close = strchr(s, ']');
  const char *rest;
  size_t n, i;
  cua__section *sec;

  if (close == NULL)
    return cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                          "section header lacks its closing ']'");
  /* inih ignores whatever follows ']'; a stray word there is more likely
   * a mistake than a comment, so only blanks and comments may follow. */
  for (rest = close + 1; is_blank(*rest); rest++)
    ;
  if (*rest != '\0' && *rest != ';' && *rest != '#')
    return cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                          "unexpected text after ']': '%s'", rest);
  n = (size_t)(close - (s + 1));
  if (check_section_name(p, s + 1, n) != 0)
    return p->code;
  for (i = 0; i < p->cfg->nsections; i++) {
    const cua__section *o = &p->cfg->sections[i];
    if (strlen(o->name) == n && memcmp(o->name, s + 1, n) == 0)
      return cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                            "section [%s] given twice (first at line %d)",
                            o->name, o->line);
  }
  sec = add_section(p->cfg, s + 1, n, p->line);
  if (sec == NULL)
    return cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
  p->cur = p->cfg->nsections - 1;
  return 0;
}

/* ------------------------------------------------------------------ */
/* inih callbacks. */

/* Hands inih the next line, without leading blanks, and handles [section]
 * headers on the way. Returns NULL at the end of the input or once an
 * error has been recorded, which ends the parse. */
static char *read_line(char *str, int num, void *stream) {
  cua__conf_parser *p = stream;
  const char *s, *nl;
  size_t len;

  if (p->code != 0 || p->pos >= p->len)
    return NULL;
  s = p->text + p->pos;
  nl = memchr(s, '\n', p->len - p->pos);
  len = nl != NULL ? (size_t)(nl - s) + 1 : p->len - p->pos;
  p->pos += len;
  p->line++;
  if (memchr(s, '\0', len) != NULL) {
    cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                   "the line contains a NUL byte");
    return NULL;
  }
  /* A UTF-8 byte order mark is dropped here rather than by inih, so that a
   * header on the first line is recognised below. */
  if (p->line == 1 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
    s += 3;
    len -= 3;
  }
  /* Every blank inih knows (isspace(): '\v', '\f' and '\r' too) goes:
   * inih would take a line that still starts with one for the continuation
   * of the previous value, and see a header there behind our back. */
  while (len > 0 && *s != '\n' && isspace((unsigned char)*s)) {
    s++;
    len--;
  }
  /* inih's line buffer is fixed (ini_max_line); a longer line would be cut
   * and its tail parsed as a line of its own. The buffer holds the line,
   * its newline and a NUL; a last line without a newline is held to the
   * same length, which cua__conf_line_max() tells the printer (it ends
   * every line with a newline). */
  if (num < 3 || len - (nl != NULL) > (size_t)num - 2) {
    cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                   "the line is longer than %d characters", num - 2);
    return NULL;
  }
  memcpy(str, s, len);
  str[len] = '\0';
  if (str[0] == '[' && on_header(p, str) != 0)
    return NULL;
  return str;
}

/* The reader's limit, from the size of inih's buffer, for the printer:
 * inih calls the reader with it before anything else. */
static char *probe_line(char *str, int num, void *stream) {
  (void)str;
  *(int *)stream = num;
  return NULL;
}

static int probe_key(void *user, const char *section, const char *name,
                     const char *value) {
  (void)user;
  (void)section;
  (void)name;
  (void)value;
  return 1;
}

size_t cua__conf_line_max(void) {
  int num = 0;

  ini_parse_stream(probe_line, &num, probe_key, NULL);
  return num < 3 ? 0 : (size_t)num - 2;
}

static int on_key(void *user, const char *section, const char *name,
                  const char *raw) {
  cua__conf_parser *p = user;
  cua__section *sec;
  const cua__kv *first;
  const char *value = raw;
  char *unquoted = NULL;
  int rc;

  (void)section; /* inih truncates long names; p->cur has the whole one. */
  if (p->code != 0)
    return 1;
  /* A key before any header is a syntax error rather than an unknown
   * section: there is no section name to report, and the likely fix is a
   * missing [runtime] line above it. */
  if (p->cur == NO_SECTION) {
    cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                   "key '%s' comes before any [section] header", name);
    return 1;
  }
  sec = &p->cfg->sections[p->cur];
  if (*name == '\0') {
    cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, p->line,
                   "a key name is missing before '='");
    return 1;
  }
  if (*raw == '"') {
    if (cua__conf_unquote(p, sec->name, name, raw, &unquoted) != 0)
      return 1;
    value = unquoted;
  }
  if (strcmp(sec->name, "runtime") == 0 ||
      strncmp(sec->name, "device.", 7) == 0) {
    if (strncmp(sec->name, "device.", 7) == 0 && strcmp(name, "policy") != 0) {
      cua__conf_fail(p, CUA_ERR_CONFIG_UNKNOWN_KEY, p->line,
                     "[%s] %s: unknown key; the only valid key is policy",
                     sec->name, name);
      goto done;
    }
    first = find_kv(sec, name);
    if (first != NULL) {
      cua__conf_fail(p, CUA_ERR_CONFIG_DUPLICATE_KEY, p->line,
                     "[%s] %s: given twice (first at line %d)", sec->name, name,
                     first->line);
      goto done;
    }
    if (strcmp(sec->name, "runtime") == 0)
      rc = cua__conf_runtime_key(p, name, value);
    else if (*value == '\0')
      rc = cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[%s] policy: the value is empty; give a policy name "
                          "or the path of a .so",
                          sec->name);
    else
      rc = 0;
    if (rc != 0)
      goto done;
  }
  /* [policy.NAME] and [backend.NAME] keys are kept as read, repeats
   * included (CUA_PARAM_MULTI), and checked by cua__config_params(). */
  if (add_kv(sec, name, value, p->line) != 0)
    cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
done:
  free(unquoted);
  return 1;
}

/* Describes the line inih refused: the only lines it refuses, now that
 * headers are checked by the reader, are those without '=' or ':'. */
static void syntax_error(cua__conf_parser *p, int line) {
  const char *s = p->text, *end = p->text + p->len, *nl;
  int i;

  for (i = 1; i < line && s < end; i++) {
    nl = memchr(s, '\n', (size_t)(end - s));
    s = nl != NULL ? nl + 1 : end;
  }
  while (s < end && (*s == ' ' || *s == '\t'))
    s++;
  nl = s;
  while (nl < end && *nl != '\n')
    nl++;
  while (nl > s && is_blank(nl[-1]))
    nl--;
  p->code = 0; /* this error is earlier than any recorded one */
  cua__conf_fail(p, CUA_ERR_CONFIG_SYNTAX, line,
                 "expected 'key = value' or a [section] header, got '%.*s'",
                 (int)(nl - s), s);
}

/* ------------------------------------------------------------------ */
/* Loading. */

static int parse_text(cua__config *cfg, const char *text, size_t len,
                      const char *dir, char *err, size_t errlen) {
  cua__conf_parser p;
  int r;

  memset(&p, 0, sizeof p);
  p.cfg = cfg;
  p.text = text;
  p.len = len;
  p.cur = NO_SECTION;
  p.dir = dir;
  p.err = err;
  p.errlen = errlen;
  r = ini_parse_stream(read_line, &p, on_key, &p);
  if (r > 0 && (p.code == 0 || r < p.err_line))
    syntax_error(&p, r);
  else if (r < 0 && p.code == 0)
    cua__conf_fail(&p, CUA_ERR_NOMEM, p.line, "inih could not allocate memory");
  return p.code;
}

/* Fills in what the input did not say, and applies $CUASYNC_POLICY,
 * $CUASYNC_LAUNCH, $CUASYNC_LAUNCH_THREADS and $CUASYNC_GRAPHS (a value of
 * the last three that their keys would refuse is CUA_ERR_CONFIG_BAD_VALUE,
 * or CUA_ERR_CONFIG_OUT_OF_RANGE for a number of launch threads, with its
 * message in @p err). */
/* models: $CUASYNC_MODELS over the file's value; with neither,
 * $XDG_CACHE_HOME/cuasync, else $HOME/.cache/cuasync, else memory. */
static int resolve_models(cua__config *cfg, unsigned flags, char *err,
                          size_t errlen) {
  const char *env =
      (flags & CUA_RUNTIME_IGNORE_ENV) ? NULL : getenv("CUASYNC_MODELS");
  char *v;

  if (env != NULL && *env != '\0') {
    if (strcmp(env, "off") != 0 && strcmp(env, "memory") != 0 &&
        env[0] != '/') {
      cua__put_err(err, errlen,
                   "$CUASYNC_MODELS: '%.64s' is not an absolute directory, "
                   "memory or off",
                   env);
      return CUA_ERR_CONFIG_BAD_VALUE;
    }
    if ((v = cua__strdup(env)) == NULL)
      return CUA_ERR_NOMEM;
    free(cfg->models);
    cfg->models = v;
    cfg->models_from = 1;
    return 0;
  }
  if (cfg->models != NULL)
    return 0;
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  size_t n;
  if (xdg != NULL && xdg[0] == '/') {
    n = strlen(xdg) + sizeof "/cuasync";
    if ((v = cua__malloc(n)) != NULL)
      snprintf(v, n, "%s/cuasync", xdg);
  } else if (home != NULL && home[0] == '/') {
    n = strlen(home) + sizeof "/.cache/cuasync";
    if ((v = cua__malloc(n)) != NULL)
      snprintf(v, n, "%s/.cache/cuasync", home);
  } else {
    v = cua__strdup("memory");
  }
  if (v == NULL)
    return CUA_ERR_NOMEM;
  cfg->models = v;
  cfg->models_from = 2;
  return 0;
}

static int resolve(cua__config *cfg, unsigned flags, char *err, size_t errlen) {
  const char *env;
  char *v;
  int rc;

  env = (flags & CUA_RUNTIME_IGNORE_ENV) ? NULL : getenv("CUASYNC_LAUNCH");
  if (env != NULL && *env != '\0') {
    int l = cua__conf_launch_value(env);
    if (l < 0) {
      cua__put_err(err, errlen,
                   "$CUASYNC_LAUNCH: '%.64s' is not one of caller, thread, "
                   "auto, pipeline, relay",
                   env);
      return CUA_ERR_CONFIG_BAD_VALUE;
    }
    cfg->launch = l;
    cfg->launch_from_env = 1;
  }
  env = (flags & CUA_RUNTIME_IGNORE_ENV) ? NULL : getenv("CUASYNC_GRAPHS");
  if (env != NULL && *env != '\0') {
    int gm = cua__conf_graphs_value(env);
    if (gm < 0) {
      cua__put_err(err, errlen,
                   "$CUASYNC_GRAPHS: '%.64s' is not one of off, auto, always",
                   env);
      return CUA_ERR_CONFIG_BAD_VALUE;
    }
    cfg->graphs = gm;
    cfg->graphs_from_env = 1;
  }

  if (cfg->backend == NULL && (cfg->backend = cua__strdup("auto")) == NULL)
    return CUA_ERR_NOMEM;
  if ((rc = resolve_models(cfg, flags, err, errlen)) != 0)
    return rc;
  env = (flags & CUA_RUNTIME_IGNORE_ENV) ? NULL
                                         : getenv("CUASYNC_LAUNCH_THREADS");
  if (env != NULL && *env != '\0') {
    char why[128];
    int n = cua__conf_launch_threads_value(env, why, sizeof why);
    if (n < 0) {
      cua__put_err(err, errlen, "$CUASYNC_LAUNCH_THREADS: %s", why);
      return n;
    }
    cfg->launch_threads = n;
    cfg->launch_threads_from_env = 1;
  }
  if (cfg->pull_depth == 0)
    cfg->pull_depth = 2;
  if (cfg->graph_cache == 0)
    cfg->graph_cache = 16;
  /* $CUASYNC_TRACE=FILE: the perfetto observer, writing FILE. */
  cfg->nobs_conf = cfg->nobservers;
  env = (flags & CUA_RUNTIME_IGNORE_ENV) ? NULL : getenv("CUASYNC_TRACE");
  if (env != NULL && *env != '\0') {
    if ((cfg->trace = cua__strdup(env)) == NULL ||
        cua__conf_add_observer(cfg, "perfetto", strlen("perfetto")) != 0)
      return CUA_ERR_NOMEM;
  }
  env = (flags & CUA_RUNTIME_IGNORE_ENV) ? NULL : getenv("CUASYNC_POLICY");
  if (env != NULL && *env != '\0') {
    v = cua__strdup(env);
    if (v == NULL)
      return CUA_ERR_NOMEM;
    free(cfg->policy);
    cfg->policy = v;
    cfg->policy_from_env = 1;
    /* The line no longer explains the value: messages about the policy
     * then name the variable instead. */
    cfg->policy_line = 0;
  }
  if (cfg->policy == NULL &&
      (cfg->policy = cua__strdup(DEFAULT_POLICY)) == NULL)
    return CUA_ERR_NOMEM;
  return 0;
}

int cua__config_load(cua__config **out, const char *path, const char *text,
                     unsigned flags, char *err, size_t errlen) {
  cua__config *cfg;
  const char *file = NULL, *env = NULL;
  char *buf = NULL, *dir = NULL, why[256];
  size_t len = 0;
  int rc;

  if (out == NULL)
    return CUA_ERR_INVAL;
  *out = NULL;
  if (err != NULL && errlen > 0)
    err[0] = '\0';
  cfg = cua__calloc(1, sizeof *cfg);
  if (cfg == NULL) {
    cua__put_err(err, errlen, "out of memory while reading the configuration");
    return CUA_ERR_NOMEM;
  }
  cfg->launch = CUA__LAUNCH_AUTO;

  /* Lookup order: the text, the explicit path, $CUASYNC_CONFIG, the
   * installed file, the built-in default. An empty $CUASYNC_CONFIG counts
   * as unset, as shells make "unset" hard to tell from "empty". */
  if (text == NULL && path != NULL) {
    file = path;
  } else if (text == NULL && !(flags & CUA_RUNTIME_IGNORE_ENV) &&
             (env = getenv("CUASYNC_CONFIG")) != NULL && *env != '\0') {
    file = env;
  } else if (text == NULL && !(flags & CUA_RUNTIME_NO_SYSTEM_CONFIG)) {
    if (cua__conf_read_file(SYSTEM_CONFIG, &buf, &len, why, sizeof why) == 0) {
      file = SYSTEM_CONFIG;
    } else if (errno == ENOMEM) {
      goto nomem;
    } else if (errno != ENOENT) {
      /* Present but unreadable: silently using the default instead would
       * hide the administrator's configuration. */
      cua__put_err(err, errlen, "%s: cannot read the configuration file: %s",
                   SYSTEM_CONFIG, why);
      rc = CUA_ERR_CONFIG_NOT_FOUND;
      goto fail;
    }
  }

  if (text != NULL) {
    cfg->origin = cua__strdup("<text>");
    if (cfg->origin == NULL)
      goto nomem;
    rc = parse_text(cfg, text, strlen(text), NULL, err, errlen);
  } else if (file != NULL) {
    if (buf == NULL &&
        cua__conf_read_file(file, &buf, &len, why, sizeof why) != 0) {
      char *shown;
      if (errno == ENOMEM || (shown = cua__conf_short_path(file)) == NULL)
        goto nomem;
      cua__put_err(err, errlen, "%s%s: cannot read the configuration file: %s",
                   file == env ? "$CUASYNC_CONFIG=" : "", shown, why);
      free(shown);
      rc = CUA_ERR_CONFIG_NOT_FOUND;
      goto fail;
    }
    cfg->path = cua__strdup(file);
    /* Messages name the file by its origin, which for a very long path is
     * shortened so that they still end with what is wrong. */
    cfg->origin = cua__conf_short_path(file);
    dir = cua__conf_dir_of(file);
    if (cfg->path == NULL || cfg->origin == NULL || dir == NULL)
      goto nomem;
    rc = parse_text(cfg, buf, len, dir, err, errlen);
  } else {
    cfg->origin = cua__strdup("<built-in>");
    if (cfg->origin == NULL)
      goto nomem;
    rc = 0;
  }
  if (rc != 0)
    goto fail;
  rc = resolve(cfg, flags, err, errlen);
  if (rc == CUA_ERR_CONFIG_BAD_VALUE || rc == CUA_ERR_CONFIG_OUT_OF_RANGE)
    goto fail;
  if (rc != 0)
    goto nomem;
  free(buf);
  cfg->dir = dir; /* the configuration's from here */
  *out = cfg;
  return 0;

nomem:
  cua__put_err(err, errlen, "out of memory while reading the configuration");
  rc = CUA_ERR_NOMEM;
fail:
  free(buf);
  free(dir);
  cua__config_free(cfg);
  return rc;
}

void cua__config_free(cua__config *cfg) {
  size_t i, j;

  if (cfg == NULL)
    return;
  for (i = 0; i < cfg->nsections; i++) {
    for (j = 0; j < cfg->sections[i].nkv; j++) {
      free(cfg->sections[i].kv[j].key);
      free(cfg->sections[i].kv[j].value);
    }
    free(cfg->sections[i].kv);
    free(cfg->sections[i].name);
  }
  free(cfg->sections);
  free(cfg->dir);
  for (i = 0; i < cfg->npolicy_path; i++)
    free(cfg->policy_path[i]);
  free(cfg->policy_path);
  free(cfg->devices);
  free(cfg->backend);
  free(cfg->policy);
  free(cfg->models);
  for (i = 0; i < cfg->nobservers; i++)
    free(cfg->observers[i]);
  free(cfg->observers);
  free(cfg->trace);
  free(cfg->path);
  free(cfg->origin);
  free(cfg);
}

const char *cua__config_device_policy(const cua__config *cfg, int device,
                                      int *line) {
  char name[32];
  const cua__section *sec;
  const cua__kv *kv;

  if (line != NULL)
    *line = 0;
  if (device < 0)
    return NULL;
  snprintf(name, sizeof name, "device.%d", device);
  sec = cua__config_section(cfg, name);
  if (sec == NULL || (kv = find_kv(sec, "policy")) == NULL)
    return NULL;
  if (line != NULL)
    *line = kv->line;
  return kv->value;
}
