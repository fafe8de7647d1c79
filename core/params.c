/*
 * core/params.c: module parameters: the values of a [policy.X] or
 * [backend.X] section checked against the module's own schema (type,
 * range, choices, lists), with defaults for what the section leaves out
 * and file:line in every error. No lock: a runtime's configuration is
 * read-only once loaded.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"
#include "loader.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Module parameters. */

/* Parses @p text as a value of @p spec into @p v (i, d; s and list are the
 * caller's). On failure writes the reason (no prefix) into @p why and
 * returns the code. */
static int parse_value(const cua_param_spec *spec, const char *text,
                       cua_param_value *v, char *why, size_t whylen) {
  static const char *const truths[] = {"true", "yes", "on", "1"};
  static const char *const lies[] = {"false", "no", "off", "0"};
  char *end;
  size_t i;

  switch (spec->type) {
  case CUA_PARAM_INT: {
    long long x;
    errno = 0;
    x = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || isspace((unsigned char)text[0])) {
      cua__put_err(why, whylen, "'%s' is not an integer", text);
      return CUA_ERR_CONFIG_BAD_VALUE;
    }
    /* A schema's range may reach past what an int64_t holds: a value
     * strtoll() cannot hold is then out of that, not of the schema's. */
    if (errno == ERANGE && (x == LLONG_MAX ? spec->max >= (double)LLONG_MAX
                                           : spec->min <= (double)LLONG_MIN)) {
      cua__put_err(why, whylen,
                   "%s is out of range: it does not fit a 64-bit integer "
                   "[%lld, %lld]",
                   text, LLONG_MIN, LLONG_MAX);
      return CUA_ERR_CONFIG_OUT_OF_RANGE;
    }
    if (errno == ERANGE || (double)x < spec->min || (double)x > spec->max) {
      cua__put_err(why, whylen, "%s is out of range [%.0f, %.0f]", text,
                   spec->min, spec->max);
      return CUA_ERR_CONFIG_OUT_OF_RANGE;
    }
    v->i = x;
    v->d = (double)x;
    return 0;
  }
  case CUA_PARAM_DOUBLE: {
    double x;
    errno = 0;
    x = strtod(text, &end);
    if (end == text || *end != '\0' || isspace((unsigned char)text[0]) ||
        isnan(x) || (isinf(x) && errno != ERANGE)) {
      cua__put_err(why, whylen, "'%s' is not a finite number", text);
      return CUA_ERR_CONFIG_BAD_VALUE;
    }
    /* Too near 0 to hold: strtod() gives 0 or a value that lost digits,
     * which is not what the text says. */
    if (errno == ERANGE && !isinf(x)) {
      cua__put_err(why, whylen,
                   "%s is out of range: it is too near 0 for a double (the "
                   "smallest is %g)",
                   text, DBL_MIN);
      return CUA_ERR_CONFIG_OUT_OF_RANGE;
    }
    if ((errno == ERANGE && isinf(x)) || x < spec->min || x > spec->max) {
      cua__put_err(why, whylen, "%s is out of range [%g, %g]", text, spec->min,
                   spec->max);
      return CUA_ERR_CONFIG_OUT_OF_RANGE;
    }
    v->d = x;
    return 0;
  }
  case CUA_PARAM_BOOL:
    for (i = 0; i < sizeof truths / sizeof truths[0]; i++) {
      if (strcasecmp(text, truths[i]) == 0 || strcasecmp(text, lies[i]) == 0) {
        v->i = strcasecmp(text, truths[i]) == 0;
        v->d = (double)v->i;
        return 0;
      }
    }
    cua__put_err(why, whylen,
                 "'%s' is not a boolean (true/false, yes/no, on/off, 1/0)",
                 text);
    return CUA_ERR_CONFIG_BAD_VALUE;
  case CUA_PARAM_STRING:
    return 0;
  case CUA_PARAM_ENUM: {
    const char *c = spec->choices;
    size_t n = strlen(text);
    int64_t idx = 0;
    if (c == NULL) {
      cua__put_err(why, whylen, "the enum parameter has no choices");
      return CUA_ERR_INTERNAL;
    }
    for (;;) {
      const char *bar = strchr(c, '|');
      size_t cl = bar != NULL ? (size_t)(bar - c) : strlen(c);
      if (cl == n && memcmp(c, text, n) == 0) {
        v->i = idx;
        v->d = (double)idx;
        return 0;
      }
      if (bar == NULL)
        break;
      c = bar + 1;
      idx++;
    }
    cua__put_err(why, whylen, "'%s' is not one of %s", text, spec->choices);
    return CUA_ERR_CONFIG_BAD_VALUE;
  }
  }
  cua__put_err(why, whylen, "the parameter has an unknown type %d",
               (int)spec->type);
  return CUA_ERR_INTERNAL;
}

int cua__params_check_schema(const char *path, const cua_param_spec *params,
                             size_t nparams, size_t stride, char *err,
                             size_t errlen) {
  for (size_t i = 0; params != NULL && i < nparams; i++) {
    const cua_param_spec *ps = cua__spec_at(params, stride, i);
    char why[256];
    const char *pname = ps->name != NULL ? ps->name : "?";
    if (ps->type < CUA_PARAM_INT || ps->type > CUA_PARAM_ENUM) {
      cua__put_err(err, errlen,
                   "%s: parameter '%s' of the descriptor's schema has type "
                   "%d, which is no cua_param_type",
                   path, pname, (int)ps->type);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
    if ((ps->type == CUA_PARAM_INT || ps->type == CUA_PARAM_DOUBLE) &&
        !(ps->type == CUA_PARAM_INT ? ceil(ps->min) <= floor(ps->max)
                                    : ps->min <= ps->max)) {
      cua__put_err(err, errlen,
                   "%s: parameter '%s' of the descriptor's schema has the "
                   "range [%g, %g], which holds no value",
                   path, pname, ps->min, ps->max);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
    if (ps->type == CUA_PARAM_ENUM &&
        (ps->choices == NULL || ps->choices[0] == '\0')) {
      cua__put_err(err, errlen,
                   "%s: parameter '%s' of the descriptor's schema is an enum "
                   "without choices",
                   path, pname);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
    /* An empty word ("a||b", "|a", "a|") is a choice no value selects
     * except an empty one: a slip in the schema, not a choice. */
    if (ps->type == CUA_PARAM_ENUM &&
        (ps->choices[0] == '|' || strstr(ps->choices, "||") != NULL ||
         ps->choices[strlen(ps->choices) - 1] == '|')) {
      cua__put_err(err, errlen,
                   "%s: parameter '%s' of the descriptor's schema is an enum "
                   "whose choices '%s' include an empty one",
                   path, pname, ps->choices);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
    /* Flags this library does not know are what a module built against a
     * newer cuasync.h asks for: refused rather than ignored. */
    if ((ps->flags & ~(CUA_PARAM_MULTI | CUA_PARAM_PATH)) != 0) {
      cua__put_err(err, errlen,
                   "%s: parameter '%s' of the descriptor's schema has flags "
                   "0x%x, which this cuasync does not know (it knows "
                   "CUA_PARAM_MULTI 0x1 and CUA_PARAM_PATH 0x2)",
                   path, pname,
                   ps->flags & ~(CUA_PARAM_MULTI | CUA_PARAM_PATH));
      return CUA_ERR_MODULE_INCOMPLETE;
    }
    if ((ps->flags & CUA_PARAM_PATH) != 0 && ps->type != CUA_PARAM_STRING) {
      cua__put_err(err, errlen,
                   "%s: parameter '%s' of the descriptor's schema has "
                   "CUA_PARAM_PATH, which only a CUA_PARAM_STRING parameter "
                   "takes",
                   path, pname);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
    cua_param_value v = {0};
    if (ps->default_value != NULL &&
        parse_value(ps, ps->default_value, &v, why, sizeof why) != 0) {
      cua__put_err(err, errlen,
                   "%s: parameter '%s' of the descriptor's schema has an "
                   "invalid default: %s",
                   path, pname, why);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
  }
  return 0;
}

/* Appends a copy of @p text to a value: to its list for a MULTI parameter,
 * and as its s (replacing an earlier one) in every case. */
static int store_text(cua_param_value *v, const char *text, int multi) {
  char *s = cua__strdup(text), *item = NULL;
  const char **list;

  if (s == NULL)
    return CUA_ERR_NOMEM;
  if (multi) {
    /* The list's capacity is not stored (the struct is the module ABI's):
     * it is the smallest power of two, at least 4, that holds count, so
     * the list grows, doubling, when count is 0 or such a power. */
    size_t c = v->count;
    list = (const char **)v->list;
    item = cua__strdup(text);
    if (item != NULL && (c == 0 || (c >= 4 && (c & (c - 1)) == 0))) {
      list = c <= SIZE_MAX / 2 / sizeof *list
                 ? cua__realloc((void *)v->list, (c ? 2 * c : 4) * sizeof *list)
                 : NULL;
      if (list != NULL)
        v->list = list;
    }
    if (item == NULL || list == NULL) {
      free(item);
      free(s);
      return CUA_ERR_NOMEM;
    }
    list[v->count++] = item;
  }
  free((void *)v->s);
  v->s = s;
  return 0;
}

/* Frees the strings of one value and clears it. */
static void clear_value(cua_param_value *v) {
  size_t i;

  for (i = 0; i < v->count; i++)
    free((void *)v->list[i]);
  free((void *)v->list);
  free((void *)v->s);
  memset(v, 0, sizeof *v);
}

int cua__params_restride(const cua_param_value *v, size_t n, size_t stride,
                         void **copy, const void **out) {
  *copy = NULL;
  *out = v;
  if (stride == sizeof(cua_param_value) || n == 0)
    return 0;
  char *c = cua__calloc(n, stride);
  if (c == NULL)
    return CUA_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    memcpy(c + i * stride, &v[i],
           stride < sizeof(cua_param_value) ? stride : sizeof(cua_param_value));
  *copy = c;
  *out = c;
  return 0;
}

void cua__config_params_free(cua_param_value *values, size_t nspec) {
  size_t i;

  if (values == NULL)
    return;
  for (i = 0; i < nspec; i++)
    clear_value(&values[i]);
  free(values);
}

/* The spec names, ", "-separated, for messages about an unknown key. */
static void list_keys(const cua_param_spec *spec, size_t nspec, char *buf,
                      size_t len) {
  size_t i, off = 0;
  int n;

  buf[0] = '\0';
  if (nspec == 0) {
    snprintf(buf, len, "none (the section takes no keys)");
    return;
  }
  for (i = 0; i < nspec && off < len; i++) {
    n = snprintf(buf + off, len - off, "%s%s", i > 0 ? ", " : "", spec[i].name);
    if (n < 0)
      return;
    off += (size_t)n;
  }
}

int cua__config_params(const cua__config *cfg, const char *name,
                       const cua_param_spec *spec, size_t nspec,
                       cua_param_value **out, char *err, size_t errlen) {
  const cua__section *sec = cua__config_section(cfg, name);
  const char *origin = cfg != NULL ? cfg->origin : "<built-in>";
  cua_param_value *values;
  char why[512], keys[512];
  size_t i, j;
  int rc;

  if (out == NULL || name == NULL || (spec == NULL && nspec > 0))
    return CUA_ERR_INVAL;
  *out = NULL;
  if (err != NULL && errlen > 0)
    err[0] = '\0';
  values = cua__calloc(nspec > 0 ? nspec : 1, sizeof *values);
  if (values == NULL) {
    cua__put_err(err, errlen, "out of memory");
    return CUA_ERR_NOMEM;
  }

  /* Defaults first: a module whose own default does not parse is a bug in
   * the module, reported as such whatever the file says. */
  for (i = 0; i < nspec; i++) {
    const cua_param_spec *ps = &spec[i];
    if (ps->name == NULL) {
      cua__put_err(err, errlen,
                   "[%s]: parameter %zu of the module's schema has "
                   "no name",
                   name, i);
      rc = CUA_ERR_INTERNAL;
      goto fail;
    }
    if (ps->default_value == NULL)
      continue;
    rc = parse_value(ps, ps->default_value, &values[i], why, sizeof why);
    if (rc == 0)
      rc = store_text(&values[i], ps->default_value,
                      (ps->flags & CUA_PARAM_MULTI) != 0);
    if (rc == CUA_ERR_NOMEM)
      goto nomem;
    if (rc != 0) {
      cua__put_err(err, errlen, "[%s] %s: the module's default is invalid: %s",
                   name, ps->name, why);
      rc = CUA_ERR_INTERNAL;
      goto fail;
    }
  }

  for (j = 0; sec != NULL && j < sec->nkv; j++) {
    const cua__kv *kv = &sec->kv[j];
    const cua_param_spec *ps = NULL;
    cua_param_value *v;
    int multi;

    for (i = 0; i < nspec; i++) {
      if (strcmp(spec[i].name, kv->key) == 0) {
        ps = &spec[i];
        break;
      }
    }
    if (ps == NULL) {
      list_keys(spec, nspec, keys, sizeof keys);
      cua__put_err(err, errlen,
                   "%s:%d: [%s] %s: unknown key; valid keys are %s", origin,
                   kv->line, name, kv->key, keys);
      rc = CUA_ERR_CONFIG_UNKNOWN_KEY;
      goto fail;
    }
    v = &values[i];
    multi = (ps->flags & CUA_PARAM_MULTI) != 0;
    if (v->present && !multi) {
      size_t k;
      int first = 0;
      for (k = 0; k < j; k++) {
        if (strcmp(sec->kv[k].key, kv->key) == 0) {
          first = sec->kv[k].line;
          break;
        }
      }
      cua__put_err(err, errlen,
                   "%s:%d: [%s] %s: given twice (first at line %d)", origin,
                   kv->line, name, kv->key, first);
      rc = CUA_ERR_CONFIG_DUPLICATE_KEY;
      goto fail;
    }
    /* The first value given replaces the default, list and all. */
    if (!v->present)
      clear_value(v);
    rc = parse_value(ps, kv->value, v, why, sizeof why);
    if (rc == CUA_ERR_INTERNAL) {
      cua__put_err(err, errlen, "[%s] %s: the module's schema is invalid: %s",
                   name, ps->name, why);
      goto fail;
    }
    if (rc != 0) {
      cua__put_err(err, errlen, "%s:%d: [%s] %s: %s", origin, kv->line, name,
                   kv->key, why);
      goto fail;
    }
    /* A relative file name in a file: from that file's directory. */
    char *joined = NULL;
    if ((ps->flags & CUA_PARAM_PATH) && ps->type == CUA_PARAM_STRING &&
        cfg->dir != NULL && kv->value[0] != '/' && kv->value[0] != '\0' &&
        (joined = cua__join_path(cfg->dir, kv->value, "")) == NULL)
      goto nomem;
    rc = store_text(v, joined != NULL ? joined : kv->value, multi);
    free(joined);
    if (rc != 0)
      goto nomem;
    v->present = 1;
  }
  *out = values;
  return 0;

nomem:
  cua__put_err(err, errlen, "out of memory");
  rc = CUA_ERR_NOMEM;
fail:
  cua__config_params_free(values, nspec);
  return rc;
}
