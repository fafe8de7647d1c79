/*
 * core/confprint.c: writing a configuration back as INI text
 * (cua__config_print(), for cuasync-info), so that it reads back the same.
 *
 * The text is the configuration as resolved: [runtime] with every key
 * (defaults filled in, $CUASYNC_POLICY applied, policy_path entries
 * resolved), then the other sections with their keys as read. A value is
 * written plain when inih gives it back as it is, else quoted with the
 * escapes the parser reads (both in core/confsyntax.c); a line that " = "
 * would make longer than the parser takes is written with a bare '='.
 * Whatever the parser read fits this way: its own line did. What cannot be
 * written (see conf.h) is found in a first pass that writes nothing, so a
 * refusal leaves no half-written text.
 *
 * No lock: a cua__config is not changed once cua__config_load() has
 * returned it, so any thread may print it.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One pass over the configuration. */
typedef struct printer {
  FILE *f;    /* NULL: the first pass, which only checks */
  size_t max; /* the longest line the parser reads */
  int code;   /* first refusal, 0 if none */
  char *err;  /* its message */
  size_t errlen;
} printer;

static int refuse(printer *pr, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static int refuse(printer *pr, int code, const char *fmt, ...) {
  va_list ap;

  if (pr->code != 0)
    return pr->code;
  pr->code = code;
  if (pr->err != NULL && pr->errlen > 0) {
    va_start(ap, fmt);
    vsnprintf(pr->err, pr->errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

/*
 * Writes "key = value" in the first form that reads back the same and
 * fits on a line: plain, quoted, then both again with a bare '=', and a
 * plain value with control characters only when quoting makes it too long.
 * @p note is a comment for the end of the line (or, if it does not fit
 * there, for a line of its own before it), or NULL.
 */
static int put_kv(printer *pr, const char *sec, const char *key,
                  const char *value, const char *note) {
  size_t kl = strlen(key), vl = strlen(value),
         ql = cua__conf_quote(NULL, value), len;
  int sp = cua__conf_plain(value, 1), tp = cua__conf_plain(value, 0);
  const struct {
    int ok, spaced, quoted;
  } forms[] = {
      {sp == CUA__PLAIN_NICE, 1, 0}, {1, 1, 1},
      {tp == CUA__PLAIN_NICE, 0, 0}, {1, 0, 1},
      {sp == CUA__PLAIN_RAW, 1, 0},  {tp == CUA__PLAIN_RAW, 0, 0},
  };
  size_t i, nforms = sizeof forms / sizeof forms[0];

  if (!cua__conf_key_ok(key))
    return refuse(pr, CUA_ERR_CONFIG_BAD_VALUE,
                  "[%s] %s: the key cannot be written: a key holds no '=', "
                  "':', line break or ';' after a blank, has no blanks at "
                  "its ends, and does not start with ';', '#' or '['",
                  sec, key);
  for (i = 0; i < nforms; i++) {
    if (!forms[i].ok)
      continue;
    len = kl + (forms[i].spaced ? 3 : 1) + (forms[i].quoted ? ql : vl);
    if (len <= pr->max)
      break;
  }
  if (i == nforms)
    return refuse(pr, CUA_ERR_CONFIG_BAD_VALUE,
                  "[%s] %s: the value (%zu bytes) makes a line longer than "
                  "the %zu characters the parser reads",
                  sec, key, vl, pr->max);
  if (pr->f == NULL)
    return 0;
  if (note != NULL && len + strlen(note) + 3 > pr->max) {
    fprintf(pr->f, "; %s\n", note);
    note = NULL;
  }
  fputs(key, pr->f);
  fputs(forms[i].spaced ? " = " : "=", pr->f);
  if (forms[i].quoted)
    cua__conf_quote(pr->f, value);
  else
    fputs(value, pr->f);
  if (note != NULL)
    fprintf(pr->f, " ; %s", note);
  putc('\n', pr->f);
  return 0;
}

/* Writes "[name]". */
static int put_header(printer *pr, const char *name) {
  size_t n = strlen(name);

  if (!cua__conf_name_ok(name))
    return refuse(pr, CUA_ERR_CONFIG_BAD_VALUE,
                  "[%s]: the section name cannot be written: it is empty or "
                  "holds ']', a line break or a ';' after a blank",
                  name);
  if (n + 2 > pr->max)
    return refuse(pr, CUA_ERR_CONFIG_BAD_VALUE,
                  "[%s]: the section name (%zu bytes) makes a line longer "
                  "than the %zu characters the parser reads",
                  name, n, pr->max);
  if (pr->f != NULL)
    fprintf(pr->f, "\n[%s]\n", name);
  return 0;
}

/* Writes bytes [from, to) of @p s as it reads with control bytes as \xHH,
 * and returns the whole length of that. */
static size_t put_visible(FILE *f, const char *s, size_t from, size_t to) {
  size_t pos = 0, k;
  char e[8];

  for (; *s != '\0'; s++) {
    if ((unsigned char)*s < 0x20 || *s == 0x7f) {
      snprintf(e, sizeof e, "\\x%02x", (unsigned)(unsigned char)*s);
    } else {
      e[0] = *s;
      e[1] = '\0';
    }
    for (k = 0; e[k] != '\0'; k++, pos++)
      if (f != NULL && pos >= from && pos < to)
        putc(e[k], f);
  }
  return pos;
}

/* The comment that names the origin: a path may hold line breaks, and be
 * longer than a line (its middle then goes). */
static void put_origin(printer *pr, const char *origin) {
  static const char head[] = "; configuration from ";
  size_t n = put_visible(NULL, origin, 0, 0), room, keep;

  if (pr->f == NULL)
    return;
  if (pr->max < sizeof head + 8) {
    fputs(";\n", pr->f);
    return;
  }
  room = pr->max - (sizeof head - 1);
  fputs(head, pr->f);
  if (n <= room) {
    put_visible(pr->f, origin, 0, n);
  } else {
    keep = (room - 3) / 2;
    put_visible(pr->f, origin, 0, keep);
    fputs("...", pr->f);
    put_visible(pr->f, origin, n - (room - 3 - keep), n);
  }
  putc('\n', pr->f);
}

/* One pass: everything checked, and written when pr->f is set. */
static int print_pass(printer *pr, const cua__config *cfg, const char *devices,
                      const char *path) {
  size_t i, j;

  put_origin(pr, cfg->origin);
  if (pr->f != NULL)
    fputs("[runtime]\n", pr->f);
  put_kv(pr, "runtime", "backend", cfg->backend, NULL);
  put_kv(pr, "runtime", "devices", devices, NULL);
  put_kv(pr, "runtime", "policy", cfg->policy,
         cfg->policy_from_env ? "from $CUASYNC_POLICY" : NULL);
  if (cfg->npolicy_path > 0)
    put_kv(pr, "runtime", "policy_path", path, NULL);
  put_kv(pr, "runtime", "on_policy_error",
         cfg->on_policy_error == CUA__ON_POLICY_ERROR_FALLBACK ? "fallback"
                                                               : "error",
         NULL);
  put_kv(pr, "runtime", "launch", cua__conf_launch_name(cfg->launch),
         cfg->launch_from_env ? "from $CUASYNC_LAUNCH" : NULL);
  {
    char nl[16];
    if (cfg->launch_threads == 0)
      snprintf(nl, sizeof nl, "auto");
    else
      snprintf(nl, sizeof nl, "%d", cfg->launch_threads);
    put_kv(pr, "runtime", "launch_threads", nl,
           cfg->launch_threads_from_env ? "from $CUASYNC_LAUNCH_THREADS"
                                        : NULL);
  }
  {
    char depth[16];
    snprintf(depth, sizeof depth, "%d", cfg->pull_depth);
    put_kv(pr, "runtime", "pull_depth", depth, NULL);
    put_kv(pr, "runtime", "graphs",
           cfg->graphs == CUA__GRAPHS_AUTO     ? "auto"
           : cfg->graphs == CUA__GRAPHS_ALWAYS ? "always"
                                               : "off",
           cfg->graphs_from_env ? "from $CUASYNC_GRAPHS" : NULL);
    snprintf(depth, sizeof depth, "%d", cfg->graph_cache);
    put_kv(pr, "runtime", "graph_cache", depth, NULL);
  }
  if (cfg->nobservers > 0) {
    char names[512];
    size_t off = 0;
    names[0] = '\0';
    for (i = 0; i < cfg->nobservers && off < sizeof names; i++) {
      /* A bare comma between names: never longer than the value read,
       * which had at least one comma or blank between each two, and no
       * blank that would make a ';' after it start a comment. */
      int w = snprintf(names + off, sizeof names - off, "%s%s",
                       i > 0 ? "," : "", cfg->observers[i]);
      if (w < 0)
        break;
      off += (size_t)w;
    }
    put_kv(pr, "runtime", "observers", names,
           cfg->trace != NULL ? "perfetto from $CUASYNC_TRACE" : NULL);
    put_kv(pr, "runtime", "observer_times",
           cfg->observer_times == CUA__OBS_TIMES_ESTIMATED ? "estimated"
           : cfg->observer_times == CUA__OBS_TIMES_DEVICE  ? "device"
                                                           : "ends",
           NULL);
  }
  put_kv(pr, "runtime", "models", cfg->models,
         cfg->models_from == 1   ? "from $CUASYNC_MODELS"
         : cfg->models_from == 2 ? "default"
                                 : NULL);
  for (i = 0; i < cfg->nsections && pr->code == 0; i++) {
    const cua__section *s = &cfg->sections[i];
    if (strcmp(s->name, "runtime") == 0)
      continue;
    put_header(pr, s->name);
    for (j = 0; j < s->nkv; j++)
      put_kv(pr, s->name, s->kv[j].key, s->kv[j].value, NULL);
  }
  return pr->code;
}

/* The values of devices and policy_path as one line gives them. */
static int join_runtime(printer *pr, const cua__config *cfg, char **devices,
                        char **path) {
  size_t n = 4, i, off = 0;

  for (i = 0; i < cfg->ndevices; i++)
    n += 12;
  *devices = cua__malloc(n);
  for (i = 0, n = 1; i < cfg->npolicy_path; i++)
    n += strlen(cfg->policy_path[i]) + 1;
  *path = cua__malloc(n);
  if (*devices == NULL || *path == NULL)
    return refuse(pr, CUA_ERR_NOMEM, "out of memory");
  if (cfg->devices == NULL)
    strcpy(*devices, "all");
  for (i = 0; i < cfg->ndevices; i++)
    off += (size_t)sprintf(*devices + off, "%s%d", i > 0 ? "," : "",
                           cfg->devices[i]);
  **path = '\0';
  for (i = 0, off = 0; i < cfg->npolicy_path; i++) {
    const char *d = cfg->policy_path[i];
    if (strchr(d, ':') != NULL)
      return refuse(pr, CUA_ERR_CONFIG_BAD_VALUE,
                    "[runtime] policy_path: the entry '%s' holds ':', which "
                    "separates entries",
                    d);
    off += (size_t)sprintf(*path + off, "%s%s", i > 0 ? ":" : "", d);
  }
  return 0;
}

int cua__config_print(const cua__config *cfg, void *file, char *err,
                      size_t errlen) {
  printer pr = {NULL, 0, 0, err, errlen};
  char *devices = NULL, *path = NULL;

  if (err != NULL && errlen > 0)
    err[0] = '\0';
  if (cfg == NULL || file == NULL) {
    cua__put_err(err, errlen, "cua__config_print: NULL %s",
                 cfg == NULL ? "configuration" : "file");
    return CUA_ERR_INVAL;
  }
  pr.max = cua__conf_line_max();
  if (pr.max == 0) {
    cua__put_err(err, errlen,
                 "out of memory: inih could not say its line length");
    return CUA_ERR_NOMEM;
  }
  if (join_runtime(&pr, cfg, &devices, &path) == 0 &&
      print_pass(&pr, cfg, devices, path) == 0) {
    pr.f = file;
    print_pass(&pr, cfg, devices, path);
  }
  free(devices);
  free(path);
  return pr.code;
}
