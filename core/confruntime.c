/*
 * core/confruntime.c: the [runtime] keys of a configuration and their
 * values (backend, devices, policy, policy_path, on_policy_error,
 * launch, launch_threads, models, pull_depth, graphs, graph_cache,
 * observers, observer_times).
 *
 * Each value is checked and stored, resolved, into the cua__config being
 * parsed (core/conf.c hands them over from its inih key handler); defaults
 * and $CUASYNC_POLICY are applied after the parse, by conf.c. No lock: a
 * parse runs on the caller's thread of cua__config_load() and the
 * configuration is not shared until it returns.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys [runtime] accepts, listed in messages. */
static const char *const runtime_keys[] = {
    "backend",         "devices",     "policy",    "policy_path",
    "on_policy_error", "launch",      "models",    "pull_depth",
    "graphs",          "graph_cache", "observers", "observer_times",
    "launch_threads"};
#define NRUNTIME_KEYS (sizeof runtime_keys / sizeof runtime_keys[0])

/* backend = auto | NAME | PATH. Which names exist is known only once the
 * backend search path is read, when the runtime opens (core/backend.c):
 * any backend module on it is a backend, so here only an empty value is
 * refused. */
static int set_backend(cua__conf_parser *p, const char *value) {
  char *v;

  if (*value == '\0')
    return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[runtime] backend: the value is empty; give auto, a "
                          "backend name or the path of a .so");
  v = cua__strdup(value);
  if (v == NULL)
    return cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
  free(p->cfg->backend);
  p->cfg->backend = v;
  p->cfg->backend_line = p->line;
  return 0;
}

/* devices = all | N[,N...]: distinct non-negative device numbers. */
static int set_devices(cua__conf_parser *p, const char *value) {
  const char *s = value;
  int *list = NULL, *grown;
  size_t n = 0, i;
  int dev;

  p->cfg->devices_line = p->line;
  if (strcmp(value, "all") == 0) {
    free(p->cfg->devices);
    p->cfg->devices = NULL;
    p->cfg->ndevices = 0;
    return 0;
  }
  for (;;) {
    const char *start, *end, *comma = strchr(s, ',');
    end = comma != NULL ? comma : s + strlen(s);
    for (start = s; start < end && isspace((unsigned char)*start); start++)
      ;
    while (end > start && isspace((unsigned char)end[-1]))
      end--;
    if (start == end) {
      cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                     "[runtime] devices: '%s' has an empty entry; expected "
                     "'all' or a comma-separated list of device numbers",
                     value);
      goto fail;
    }
    if (cua__conf_parse_index(start, (size_t)(end - start), &dev) != 0) {
      cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                     "[runtime] devices: '%.*s' is not a device number; "
                     "expected 'all' or a comma-separated list of non-negative "
                     "integers",
                     (int)(end - start), start);
      goto fail;
    }
    for (i = 0; i < n; i++) {
      if (list[i] == dev) {
        cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                       "[runtime] devices: device %d is listed twice", dev);
        goto fail;
      }
    }
    grown = cua__realloc(list, (n + 1) * sizeof *list);
    if (grown == NULL) {
      cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
      goto fail;
    }
    list = grown;
    list[n++] = dev;
    if (comma == NULL)
      break;
    s = comma + 1;
  }
  free(p->cfg->devices);
  p->cfg->devices = list;
  p->cfg->ndevices = n;
  return 0;

fail:
  free(list);
  return p->code;
}

static int set_policy(cua__conf_parser *p, const char *value) {
  char *v;

  if (*value == '\0')
    return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[runtime] policy: the value is empty; give a policy "
                          "name or the path of a .so");
  v = cua__strdup(value);
  if (v == NULL)
    return cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
  free(p->cfg->policy);
  p->cfg->policy = v;
  p->cfg->policy_line = p->line;
  return 0;
}

/* policy_path = DIR[:DIR...]. A relative entry in a file means relative to
 * that file, so that a configuration kept next to a build tree works from
 * any working directory; in text or the built-in default there is no such
 * anchor and it stays relative to the working directory. */
static int set_policy_path(cua__conf_parser *p, const char *value) {
  const char *s = value;
  char **dirs = NULL, **grown;
  size_t n = 0, i;

  for (;;) {
    const char *colon = strchr(s, ':');
    size_t len = colon != NULL ? (size_t)(colon - s) : strlen(s), dl;
    char *d;

    if (len == 0) {
      cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                     "[runtime] policy_path: '%s' has an empty entry; expected "
                     "':'-separated directories",
                     value);
      goto fail;
    }
    /* The directory of the file, with its '/', before a relative entry. */
    dl = s[0] != '/' && p->dir != NULL ? strlen(p->dir) + 1 : 0;
    d = cua__malloc(dl + len + 1);
    if (d != NULL) {
      if (dl > 0) {
        memcpy(d, p->dir, dl - 1);
        d[dl - 1] = '/';
      }
      memcpy(d + dl, s, len);
      d[dl + len] = '\0';
    }
    if (d == NULL)
      goto nomem;
    grown = cua__realloc(dirs, (n + 1) * sizeof *dirs);
    if (grown == NULL) {
      free(d);
      goto nomem;
    }
    dirs = grown;
    dirs[n++] = d;
    if (colon == NULL)
      break;
    s = colon + 1;
  }
  for (i = 0; i < p->cfg->npolicy_path; i++)
    free(p->cfg->policy_path[i]);
  free(p->cfg->policy_path);
  p->cfg->policy_path = dirs;
  p->cfg->npolicy_path = n;
  return 0;

nomem:
  cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
fail:
  for (i = 0; i < n; i++)
    free(dirs[i]);
  free(dirs);
  return p->code;
}

static int set_on_policy_error(cua__conf_parser *p, const char *value) {
  if (strcmp(value, "error") == 0)
    p->cfg->on_policy_error = CUA__ON_POLICY_ERROR_FAIL;
  else if (strcmp(value, "fallback") == 0)
    p->cfg->on_policy_error = CUA__ON_POLICY_ERROR_FALLBACK;
  else
    return cua__conf_fail(
        p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
        "[runtime] on_policy_error: '%s' is not one of error, "
        "fallback",
        value);
  return 0;
}

/* launch = caller | thread | auto | pipeline | relay: who applies a round's
 * commands (see core/flush.c, core/launcher.c and core/executor.c). */
int cua__conf_launch_value(const char *value) {
  if (strcmp(value, "caller") == 0)
    return CUA__LAUNCH_CALLER;
  if (strcmp(value, "thread") == 0)
    return CUA__LAUNCH_THREAD;
  if (strcmp(value, "auto") == 0)
    return CUA__LAUNCH_AUTO;
  if (strcmp(value, "pipeline") == 0)
    return CUA__LAUNCH_PIPELINE;
  if (strcmp(value, "relay") == 0)
    return CUA__LAUNCH_RELAY;
  return -1;
}

const char *cua__conf_launch_name(int launch) {
  return launch == CUA__LAUNCH_THREAD     ? "thread"
         : launch == CUA__LAUNCH_AUTO     ? "auto"
         : launch == CUA__LAUNCH_PIPELINE ? "pipeline"
         : launch == CUA__LAUNCH_RELAY    ? "relay"
                                          : "caller";
}

static int set_launch(cua__conf_parser *p, const char *value) {
  int v = cua__conf_launch_value(value);
  if (v < 0)
    return cua__conf_fail(
        p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
        "[runtime] launch: '%s' is not one of caller, thread, "
        "auto, pipeline, relay",
        value);
  p->cfg->launch = v;
  return 0;
}

/* launch_threads = auto | N, 1..8 (CUA__LAUNCHERS_MAX): how many launch
 * threads apply the lists handed over, each the commands of its own
 * streams (core/launcher.c); auto is 0 (cua__launcher_start() decides).
 * The values, and the messages, for the file and $CUASYNC_LAUNCH_THREADS
 * alike (conf.c). */
int cua__conf_launch_threads_value(const char *value, char *err,
                                   size_t errlen) {
  if (strcmp(value, "auto") == 0)
    return 0;
  char *end;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || errno != 0) {
    cua__put_err(err, errlen, "'%.64s' is not auto or an integer", value);
    return CUA_ERR_CONFIG_BAD_VALUE;
  }
  if (v < 1 || v > CUA__LAUNCHERS_MAX) {
    cua__put_err(err, errlen, "%ld is out of range [1, %d]", v,
                 CUA__LAUNCHERS_MAX);
    return CUA_ERR_CONFIG_OUT_OF_RANGE;
  }
  return (int)v;
}

static int set_launch_threads(cua__conf_parser *p, const char *value) {
  char why[128];
  int v = cua__conf_launch_threads_value(value, why, sizeof why);
  if (v < 0)
    return cua__conf_fail(p, v, p->line, "[runtime] launch_threads: %s", why);
  p->cfg->launch_threads = v;
  return 0;
}

/* models = DIR | memory | off: where performance models are kept
 * (core/models.c). A relative directory in a file is relative to that
 * file, as policy_path's entries are. */
static int set_models(cua__conf_parser *p, const char *value) {
  char *v;
  size_t dl = 0;

  if (*value == '\0')
    return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[runtime] models: the value is empty; give a "
                          "directory, memory or off");
  if (strcmp(value, "off") != 0 && strcmp(value, "memory") != 0 &&
      value[0] != '/' && p->dir != NULL)
    dl = strlen(p->dir) + 1;
  v = cua__malloc(dl + strlen(value) + 1);
  if (v == NULL)
    return cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
  if (dl > 0) {
    memcpy(v, p->dir, dl - 1);
    v[dl - 1] = '/';
  }
  strcpy(v + dl, value);
  free(p->cfg->models);
  p->cfg->models = v;
  p->cfg->models_from = 0;
  return 0;
}

/* pull_depth = N, 1..1024. */
static int set_pull_depth(cua__conf_parser *p, const char *value) {
  char *end;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || errno != 0)
    return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[runtime] pull_depth: '%s' is not an integer",
                          value);
  if (v < 1 || v > 1024)
    return cua__conf_fail(p, CUA_ERR_CONFIG_OUT_OF_RANGE, p->line,
                          "[runtime] pull_depth: %ld is out of range [1, 1024]",
                          v);
  p->cfg->pull_depth = (int)v;
  return 0;
}

/* graphs = off | auto | always: whether submissions are replayed as
 * graphs (core/graphcache.c). */
int cua__conf_graphs_value(const char *value) {
  if (strcmp(value, "off") == 0)
    return CUA__GRAPHS_OFF;
  if (strcmp(value, "auto") == 0)
    return CUA__GRAPHS_AUTO;
  if (strcmp(value, "always") == 0)
    return CUA__GRAPHS_ALWAYS;
  return -1;
}

static int set_graphs(cua__conf_parser *p, const char *value) {
  int v = cua__conf_graphs_value(value);
  if (v >= 0)
    p->cfg->graphs = v;
  else
    return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[runtime] graphs: '%s' is not one of off, auto, "
                          "always",
                          value);
  return 0;
}

/* graph_cache = N, 1..4096. */
static int set_graph_cache(cua__conf_parser *p, const char *value) {
  char *end;
  errno = 0;
  long v = strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || errno != 0)
    return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[runtime] graph_cache: '%s' is not an integer",
                          value);
  if (v < 1 || v > 4096)
    return cua__conf_fail(p, CUA_ERR_CONFIG_OUT_OF_RANGE, p->line,
                          "[runtime] graph_cache: %ld is out of range [1, "
                          "4096]",
                          v);
  p->cfg->graph_cache = (int)v;
  return 0;
}

/* Adds observer @p name (@p n bytes) to the configuration, unless it is
 * there already. Returns 0, or CUA_ERR_NOMEM. */
int cua__conf_add_observer(cua__config *cfg, const char *name, size_t n) {
  for (size_t i = 0; i < cfg->nobservers; i++)
    if (strlen(cfg->observers[i]) == n &&
        memcmp(cfg->observers[i], name, n) == 0)
      return 0;
  char **v = cua__realloc(cfg->observers, (cfg->nobservers + 1) * sizeof *v);
  if (v == NULL)
    return CUA_ERR_NOMEM;
  cfg->observers = v;
  char *d = cua__malloc(n + 1);
  if (d == NULL)
    return CUA_ERR_NOMEM;
  memcpy(d, name, n);
  d[n] = '\0';
  cfg->observers[cfg->nobservers++] = d;
  return 0;
}

/* observers = NAME[, NAME...] (commas or blanks between names): the
 * observer modules the runtime opens, in order. A name given twice is
 * refused, and so is one with a '"' (no module's name or path has one,
 * and the list, written back by confprint.c, must not start with one: a
 * leading '"' would read as a quoted value); an empty value means none. */
static int set_observers(cua__conf_parser *p, const char *value) {
  const char *s = value;
  p->cfg->observers_line = p->line;
  while (*s != '\0') {
    while (*s == ',' || isspace((unsigned char)*s))
      s++;
    if (*s == '\0')
      break;
    const char *e = s;
    while (*e != '\0' && *e != ',' && !isspace((unsigned char)*e))
      e++;
    size_t n = (size_t)(e - s);
    if (memchr(s, '"', n) != NULL)
      return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                            "[runtime] observers: '%.*s' is not a module "
                            "name or path: it holds a '\"'",
                            (int)n, s);
    for (size_t i = 0; i < p->cfg->nobservers; i++)
      if (strlen(p->cfg->observers[i]) == n &&
          memcmp(p->cfg->observers[i], s, n) == 0)
        return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                              "[runtime] observers: '%.*s' is named twice",
                              (int)n, s);
    if (cua__conf_add_observer(p->cfg, s, n) != 0)
      return cua__conf_fail(p, CUA_ERR_NOMEM, p->line, "out of memory");
    s = e;
  }
  return 0;
}

/* observer_times = ends | device | estimated: where observers' op times
 * come from on backends that do not run ops on host threads (executor.c,
 * complete.c). */
static int set_observer_times(cua__conf_parser *p, const char *value) {
  if (strcmp(value, "ends") == 0)
    p->cfg->observer_times = CUA__OBS_TIMES_ENDS;
  else if (strcmp(value, "device") == 0)
    p->cfg->observer_times = CUA__OBS_TIMES_DEVICE;
  else if (strcmp(value, "estimated") == 0)
    p->cfg->observer_times = CUA__OBS_TIMES_ESTIMATED;
  else
    return cua__conf_fail(p, CUA_ERR_CONFIG_BAD_VALUE, p->line,
                          "[runtime] observer_times: '%s' is not one of "
                          "ends, device, estimated",
                          value);
  return 0;
}

int cua__conf_runtime_key(cua__conf_parser *p, const char *key,
                          const char *value) {
  char valid[256];
  size_t i, off = 0;

  if (strcmp(key, "backend") == 0)
    return set_backend(p, value);
  if (strcmp(key, "devices") == 0)
    return set_devices(p, value);
  if (strcmp(key, "policy") == 0)
    return set_policy(p, value);
  if (strcmp(key, "policy_path") == 0)
    return set_policy_path(p, value);
  if (strcmp(key, "on_policy_error") == 0)
    return set_on_policy_error(p, value);
  if (strcmp(key, "launch") == 0)
    return set_launch(p, value);
  if (strcmp(key, "launch_threads") == 0)
    return set_launch_threads(p, value);
  if (strcmp(key, "models") == 0)
    return set_models(p, value);
  if (strcmp(key, "pull_depth") == 0)
    return set_pull_depth(p, value);
  if (strcmp(key, "graphs") == 0)
    return set_graphs(p, value);
  if (strcmp(key, "graph_cache") == 0)
    return set_graph_cache(p, value);
  if (strcmp(key, "observers") == 0)
    return set_observers(p, value);
  if (strcmp(key, "observer_times") == 0)
    return set_observer_times(p, value);
  valid[0] = '\0';
  for (i = 0; i < NRUNTIME_KEYS && off < sizeof valid; i++) {
    int n = snprintf(valid + off, sizeof valid - off, "%s%s", i > 0 ? ", " : "",
                     runtime_keys[i]);
    if (n < 0)
      break;
    off += (size_t)n;
  }
  return cua__conf_fail(p, CUA_ERR_CONFIG_UNKNOWN_KEY, p->line,
                        "[runtime] %s: unknown key; valid keys are %s", key,
                        valid);
}
