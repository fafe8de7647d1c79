/*
 * core/rtpolicies.c: the policies a runtime opens when it is created: the
 * runtime-wide one (`[runtime] policy`, or $CUASYNC_POLICY), each
 * `[device.N]` one, `policy = help` (the open fails with every policy on
 * the path and its parameters), and the check of every `[policy.NAME]`
 * section against its policy's schema, used or not.
 *
 * Under rt->lock, which cua_runtime_create_ex() holds around it on the
 * creating thread, before the runtime has other threads (opening a policy
 * calls into it, which is done under that lock).
 */
#include "config.h"
#include "internal.h"
#include "loader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A section named after the file of a policy loaded by path, whose
 * descriptor says another name (random-policy.so is policy 'random'): the
 * usual slip, written into @p out for the message ("" when it is not). */
static void file_name_hint(const cua_runtime *rt, const char *name, char *out,
                           size_t len) {
  out[0] = '\0';
  for (const cua__polinst *p = rt->policies; p; p = p->next) {
    const char *path = p->mod != NULL ? p->mod->path : NULL;
    if (path == NULL || strcmp(p->d->name, name) == 0)
      continue;
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = cua__so_stem(base);
    if (n == strlen(name) && strncmp(base, name, n) == 0) {
      snprintf(out, len,
               "; the policy loaded from %s is named '%s': its section is "
               "[policy.%s]",
               path, p->d->name, p->d->name);
      return;
    }
  }
}

/* Every [policy.NAME] section must name a policy that exists, and its keys
 * must fit that policy's schema, whether or not it is used now: a typo in
 * a section for later would otherwise go unnoticed. */
static int check_policy_sections(cua_runtime *rt) {
  const cua__config *cfg = rt->cfg;
  for (size_t i = 0; i < cfg->nsections; i++) {
    const cua__section *sec = &cfg->sections[i];
    if (strncmp(sec->name, "policy.", 7) != 0)
      continue;
    const char *name = sec->name + 7;
    int loaded = 0;
    for (cua__polinst *p = rt->policies; p; p = p->next)
      if (strcmp(p->d->name, name) == 0)
        loaded = 1;
    if (loaded)
      continue;
    char err[CUA__ERRLEN];
    cua__module *mod = NULL;
    int rc =
        cua__module_load(&mod, CUA__MODULE_POLICY, name, cfg->policy_path,
                         cfg->npolicy_path, rt->ignore_env, err, sizeof err);
    if (rc == CUA_ERR_MODULE_NOT_FOUND) {
      /* The hint before the search's list, which may fill the message. */
      char hint[1200];
      file_name_hint(rt, name, hint, sizeof hint);
      return cua__fail(NULL, CUA_ERR_CONFIG_UNKNOWN_SECTION,
                       "%s:%d: [%s]: no policy named '%s' is installed or "
                       "on the policy path%s (%s)%s",
                       cfg->origin, sec->line, sec->name, name, hint, err,
                       cfg->policy_from_env
                           ? "; $CUASYNC_POLICY replaced [runtime] policy, "
                             "which may have named this one by its path"
                           : "");
    }
    if (rc)
      return cua__fail(NULL, rc, "%s:%d: [%s]: %s", cfg->origin, sec->line,
                       sec->name, err);
    const cua_policy_descriptor *d = mod->desc.policy;
    cua_param_value *v = NULL;
    rc = cua__config_params(cfg, sec->name, d->params, d->nparams, &v, err,
                            sizeof err);
    cua__config_params_free(v, d->nparams);
    cua__module_unload(mod);
    if (rc)
      return cua__fail(NULL, rc, "%s", err);
  }
  return 0;
}

/* `policy = help` (or CUASYNC_POLICY=help): the open fails, and its message
 * lists every policy on the path with its parameters, for a quick look from
 * any program without reaching for cuasync-info. */
typedef struct help_buf {
  char *text;
  size_t len, cap;
} help_buf;

static void help_add(help_buf *h, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= sizeof line)
    n = sizeof line - 1;
  if (cua__grow(&h->text, &h->cap, h->len + (size_t)n + 1, 1) == 0) {
    memcpy(h->text + h->len, line, (size_t)n + 1);
    h->len += (size_t)n;
  }
}

/* The two texts of `policy = help`: the whole (standard error) and a
 * short one that fits an error message (names and parameter names). */
typedef struct help_pair {
  help_buf full, brief;
  int n;
} help_pair;

static void help_policy(const cua__module_report *r, void *arg) {
  help_pair *hp = arg;
  help_buf *h = &hp->full;
  if (r->status != 0 || r->shadowed)
    return;
  const cua_policy_descriptor *d = r->module->desc.policy;
  help_add(&hp->brief, "%s %s (", hp->n++ ? "," : "", d->name);
  for (size_t i = 0; i < d->nparams; i++)
    help_add(&hp->brief, "%s%s", i ? ", " : "", d->params[i].name);
  help_add(&hp->brief, ")");
  /* version and description are optional (NULL when the descriptor
   * leaves them out): "-", as cuasync-info writes them. */
  help_add(h, "\n  %s %s: %s (%s)", d->name, d->version ? d->version : "-",
           d->description ? d->description : "-", r->path);
  for (size_t i = 0; i < d->nparams; i++) {
    const cua_param_spec *p = &d->params[i];
    help_add(h, "\n      %s = %s", p->name,
             p->default_value ? p->default_value : "(none)");
    if (p->type == CUA_PARAM_INT || p->type == CUA_PARAM_DOUBLE)
      help_add(h, " [%g..%g]", p->min, p->max);
    if (p->type == CUA_PARAM_ENUM)
      help_add(h, " [%s]", p->choices);
    help_add(h, "  %s", p->help ? p->help : "");
  }
}

static int policy_help(cua_runtime *rt) {
  help_pair hp;
  memset(&hp, 0, sizeof hp);
  help_add(&hp.full, "policy = help: the policies found are:");
  cua__module_scan(CUA__MODULE_POLICY, rt->cfg->policy_path,
                   rt->cfg->npolicy_path, rt->ignore_env, help_policy, &hp);
  /* The message names every policy and its parameters; their defaults,
   * ranges and help, which outgrow a message, go to standard error. */
  int rc = cua__fail(NULL, CUA_ERR_INVAL,
                     "policy = help: the policies found are (with their "
                     "parameters):%s; defaults, ranges and help are on "
                     "standard error and in cuasync-info --policies",
                     hp.brief.text ? hp.brief.text : " none");
  fprintf(stderr, "cuasync: %s\n", hp.full.text ? hp.full.text : "");
  free(hp.full.text);
  free(hp.brief.text);
  return rc;
}

/* The runtime-wide policy, each [device.N] policy, then every
 * [policy.NAME] section checked. Called by cua_runtime_create_ex(). */
int cua__open_policies(cua_runtime *rt) {
  const cua__config *cfg = rt->cfg;
  if (strcmp(cfg->policy, "help") == 0)
    return policy_help(rt);
  int rc = cua__polinst_open(rt, cfg->policy, &rt->policy);
  if (rc) {
    char msg[CUA__ERRLEN];
    snprintf(msg, sizeof msg, "%s", cua_runtime_error(rt));
    if (cfg->policy_from_env)
      return cua__fail(NULL, rc, "$CUASYNC_POLICY=%s: %s", cfg->policy, msg);
    if (cfg->policy_line > 0)
      return cua__fail(NULL, rc, "%s:%d: policy = %s: %s", cfg->origin,
                       cfg->policy_line, cfg->policy, msg);
    return cua__fail(NULL, rc, "policy %s: %s", cfg->policy, msg);
  }
  for (size_t i = 0; i < cfg->nsections; i++) {
    const cua__section *sec = &cfg->sections[i];
    if (strncmp(sec->name, "device.", 7) != 0)
      continue;
    int dev = atoi(sec->name + 7), line = 0;
    const char *name = cua__config_device_policy(cfg, dev, &line);
    if (dev >= rt->ndev)
      return cua__fail(NULL, CUA_ERR_CONFIG_OUT_OF_RANGE,
                       "%s:%d: [%s]: the runtime has %d device%s (0..%d)",
                       cfg->origin, sec->line, sec->name, rt->ndev,
                       rt->ndev == 1 ? "" : "s", rt->ndev - 1);
    if (name == NULL)
      continue;
    rc = cua__polinst_open(rt, name, &rt->devs[dev].policy);
    if (rc) {
      char msg[CUA__ERRLEN];
      snprintf(msg, sizeof msg, "%s", cua_runtime_error(rt));
      return cua__fail(NULL, rc, "%s:%d: [%s] policy = %s: %s", cfg->origin,
                       line, sec->name, name, msg);
    }
  }
  return check_policy_sections(rt);
}
