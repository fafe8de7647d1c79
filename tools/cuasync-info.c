/*
 * tools/cuasync-info.c: what cuasync sees on this machine.
 *
 * Prints the library version, the configuration as resolved, the backend
 * modules found (and whether each opens), the devices of the runtime the
 * configuration opens and its performance models, every policy module on
 * the search path with its parameters, and every module that was refused
 * with the loader's reason. See cuasync-info(1).
 *
 * The tool first gathers everything into a report, then renders it as a
 * table or as JSON, so that both formats always say the same thing and a
 * failure in one step (a configuration that does not open) never hides
 * what the other steps found.
 *
 * It links the core's convenience library, not the installed libcuasync,
 * because it needs the internal configuration and loader interfaces
 * (conf.h, loader.h): those are the ones that can list modules the runtime
 * would refuse, and why.
 */
#include "config.h"

#include <cuasync.h>
#include <cuasync/backend.h>
#include <cuasync/observer.h>
#include <cuasync/policy.h>

#include "conf.h"
#include "jsonstr.h"
#include "loader.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "cuasync-info"

/* Exit codes, as cuasync-info(1) documents them. */
enum {
  EXIT_OK = 0,
  EXIT_NO_RUNTIME = 1, /* the configuration did not open a runtime */
  EXIT_USAGE = 2,
};

/* What the backend probe asks for: the backend alone, with the simplest
 * policy, and nothing read from the system's configuration file. */
#define PROBE_CONFIG "[runtime]\nbackend = %s\npolicy = single-stream\n"

typedef enum format { FORMAT_TABLE, FORMAT_JSON } format;

typedef struct options {
  const char *config; /* --config FILE, or NULL for the usual lookup */
  int policies;       /* --policies: the policy view, with parameters */
  int models;         /* --models: every entry of the performance models */
  format fmt;
} options;

/* ------------------------------------------------------------------ */
/* The report. */

/* One parameter of a module's schema, copied out of the module. */
typedef struct param_info {
  char *name;
  cua_param_type type;
  char *def; /* default as INI text, NULL: none */
  double min, max;
  char *choices;
  char *help;
  unsigned flags;
  char **configured; /* values the configuration gives, in file order */
  size_t nconfigured;
} param_info;

/* A policy or backend module that loaded and passed the loader's checks. */
typedef struct module_info {
  char *name;
  char *version;
  char *description;
  char *path;
  unsigned abi_major, abi_minor;
  uint64_t flags;
  int shadowed; /* an earlier directory has a module of the same name */
  int by_path;  /* a policy the configuration names by path */
  param_info *params;
  size_t nparams;
  char *params_error; /* the configuration's section does not fit */
  /* Backends: the priority `backend = auto` reads, and whether a runtime
   * opens with it. */
  int priority;
  int probed;
  int opens;
  char *probe_error;
} module_info;

/* A module the loader refused. */
typedef struct failure_info {
  const char *kind; /* "policy", "backend", or "module": neither entry */
  char *name;
  char *path;
  int code;
  char *message;
} failure_info;

typedef struct report {
  /* Configuration. */
  cua__config *cfg; /* NULL when it did not load */
  char *config_error;
  /* Search paths, by cua__module_kind. */
  char **dirs[3];
  size_t ndirs[3];
  /* Modules. */
  module_info *backends;
  size_t nbackends;
  module_info *policies;
  size_t npolicies;
  module_info *observers;
  size_t nobservers;
  failure_info *failures;
  size_t nfailures;
  /* The runtime the configuration opens. */
  int rt_opened;
  char *rt_error;
  char *rt_backend;
  char *rt_policy;
  cua_device_info *devices;
  int ndevices;
  /* Its graphs: backend graphs (1) or replayed by the core (0); -1 with
   * graphs_error when a probe graph could not be made. */
  int graphs_native;
  char *graphs_error;
  /* Its performance models ([runtime] models). */
  const char *models_state; /* "file", "memory" or "off" */
  char *models_file;
  cua_model_entry *models; /* name and tag allocated */
  size_t nmodels;
} report;

/* ------------------------------------------------------------------ */
/* Memory. A tool that runs out of memory can only say so and stop. */

static void out_of_memory(void) {
  fprintf(stderr, "%s: out of memory\n", PROGRAM);
  exit(EXIT_NO_RUNTIME);
}

/* A descriptor's optional string as printed: "-" where it has none (JSON
 * says null). */
static const char *or_dash(const char *s) {
  return s != NULL ? s : "-";
}

static char *xstrdup(const char *s) {
  char *d;

  if (s == NULL)
    return NULL;
  d = strdup(s);
  if (d == NULL)
    out_of_memory();
  return d;
}

/* Grows an array of @p n elements of @p size bytes by one zeroed element
 * and returns the new array. */
static void *grow_array(void *array, size_t n, size_t size) {
  char *p = realloc(array, (n + 1) * size);

  if (p == NULL)
    out_of_memory();
  memset(p + n * size, 0, size);
  return p;
}

static char *xasprintf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static char *xasprintf(const char *fmt, ...) {
  va_list ap;
  char *s;
  int n;

  va_start(ap, fmt);
  n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0)
    out_of_memory();
  return s;
}

/* ------------------------------------------------------------------ */
/* Options. */

static void usage(FILE *f) {
  fprintf(f,
          "Usage: %s [OPTION]...\n"
          "Show what cuasync finds on this machine: version, configuration,\n"
          "backends and devices, policy modules, and modules that failed to "
          "load.\n"
          "\n"
          "  -c, --config FILE      open FILE instead of the usual lookup\n"
          "                         ($CUASYNC_CONFIG, then the installed "
          "cuasync.ini)\n"
          "  -p, --policies         list the policies with their parameters\n"
          "  -m, --models           list the runtime's performance models\n"
          "  -f, --format FORMAT    table (default) or json\n"
          "  -h, --help             show this help and exit\n"
          "  -V, --version          show the version and exit\n"
          "\n"
          "Exit status: 0 if the configuration opens a runtime, 1 if it does "
          "not\n"
          "(the reason is on standard error), 2 for a bad command line.\n"
          "See cuasync-info(1), cuasync.ini(5) and cuasync-policy(7).\n",
          PROGRAM);
}

static int usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static int usage_error(const char *fmt, ...) {
  va_list ap;

  fprintf(stderr, "%s: ", PROGRAM);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry '%s --help' for more information.\n", PROGRAM);
  return EXIT_USAGE;
}

/* The name of the long option that getopt_long() refused an argument to
 * (--help=x): it sets optopt to that option's value, which would read as
 * a short option the user did not type. NULL when @p val is none. */
static const char *no_argument_name(const struct option *opts, int val) {
  for (; opts->name != NULL; opts++)
    if (opts->val == val && opts->has_arg == no_argument)
      return opts->name;
  return NULL;
}

/* Standard output flushed: @p rc, or EXIT_NO_RUNTIME when it could not be
 * written (a full disk), said on standard error. */
static int output_written(int rc) {
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "%s: cannot write the output: %s\n", PROGRAM,
            strerror(errno));
    return EXIT_NO_RUNTIME;
  }
  return rc;
}

/* Parses the command line. Returns -1 to go on, or an exit code (--help
 * and --version have done their work; a bad option has been reported). */
static int parse_args(int argc, char **argv, options *o) {
  static const struct option longopts[] = {
      {"config", required_argument, NULL, 'c'},
      {"policies", no_argument, NULL, 'p'},
      {"models", no_argument, NULL, 'm'},
      {"format", required_argument, NULL, 'f'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  int c;

  memset(o, 0, sizeof *o);
  o->fmt = FORMAT_TABLE;
  opterr = 0; /* the messages below say more than getopt's */
  while ((c = getopt_long(argc, argv, ":c:pmf:hV", longopts, NULL)) != -1) {
    switch (c) {
    case 'c':
      o->config = optarg;
      break;
    case 'm':
      o->models = 1;
      break;
    case 'p':
      o->policies = 1;
      break;
    case 'f':
      if (strcmp(optarg, "table") == 0)
        o->fmt = FORMAT_TABLE;
      else if (strcmp(optarg, "json") == 0)
        o->fmt = FORMAT_JSON;
      else
        return usage_error("unknown format '%s' (expected table or json)",
                           optarg);
      break;
    case 'h':
      usage(stdout);
      return output_written(EXIT_OK);
    case 'V':
      printf("%s (cuasync) %s\n", PROGRAM, cua_version_string());
      return output_written(EXIT_OK);
    case ':':
      if (optopt != 0 && argv[optind - 1][1] != '-')
        return usage_error("option '-%c' needs an argument", optopt);
      return usage_error("option '%s' needs an argument", argv[optind - 1]);
    default:
      if (no_argument_name(longopts, optopt) != NULL)
        return usage_error("option '--%s' takes no argument",
                           no_argument_name(longopts, optopt));
      /* optopt names a bad short option, even within a cluster (-px). */
      if (optopt != 0)
        return usage_error("unknown option '-%c'", optopt);
      return usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  return -1;
}

/* ------------------------------------------------------------------ */
/* Gathering: the configuration. */

static void load_config(report *r, const options *o) {
  char err[2048];
  int rc = cua__config_load(&r->cfg, o->config, NULL, 0, err, sizeof err);

  if (rc != 0)
    r->config_error = xstrdup(err[0] != '\0' ? err : cua_strerror(rc));
}

/* The config's policy_path (extra directories for policies), if any. */
static void policy_path(const report *r, char *const **dirs, size_t *n) {
  *dirs = r->cfg != NULL ? r->cfg->policy_path : NULL;
  *n = r->cfg != NULL ? r->cfg->npolicy_path : 0;
}

static void load_search_paths(report *r) {
  char *const *extra;
  size_t nextra;
  int k;

  policy_path(r, &extra, &nextra);
  for (k = CUA__MODULE_POLICY; k <= CUA__MODULE_OBSERVER; k++) {
    r->dirs[k] = cua__module_dirs(
        (cua__module_kind)k, k == CUA__MODULE_POLICY ? extra : NULL,
        k == CUA__MODULE_POLICY ? nextra : 0, 0, &r->ndirs[k]);
    if (r->dirs[k] == NULL)
      out_of_memory();
  }
}

/* ------------------------------------------------------------------ */
/* Gathering: modules. */

static void copy_params(module_info *m, const cua_param_spec *spec, size_t n) {
  size_t i;

  if (spec == NULL || n == 0)
    return;
  m->params = calloc(n, sizeof *m->params);
  if (m->params == NULL)
    out_of_memory();
  m->nparams = n;
  for (i = 0; i < n; i++) {
    param_info *p = &m->params[i];
    p->name = xstrdup(spec[i].name);
    p->type = spec[i].type;
    p->def = xstrdup(spec[i].default_value);
    p->min = spec[i].min;
    p->max = spec[i].max;
    p->choices = xstrdup(spec[i].choices);
    p->help = xstrdup(spec[i].help);
    p->flags = spec[i].flags;
  }
}

/* Copies what the report needs out of a loaded module, which is unloaded
 * once the scan callback returns. */
/* The fields every kind of descriptor has, under the same names. */
#define COPY_COMMON(m, d)                                                      \
  do {                                                                         \
    (m)->name = xstrdup((d)->name);                                            \
    (m)->version = xstrdup((d)->version);                                      \
    (m)->description = xstrdup((d)->description);                              \
    (m)->abi_major = (d)->abi_major;                                           \
    (m)->abi_minor = (d)->abi_minor;                                           \
    (m)->flags = (d)->flags;                                                   \
    copy_params((m), (d)->params, (d)->nparams);                               \
  } while (0)

static void copy_module(module_info *m, const cua__module *mod) {
  if (mod->kind == CUA__MODULE_POLICY) {
    COPY_COMMON(m, mod->desc.policy);
  } else if (mod->kind == CUA__MODULE_OBSERVER) {
    COPY_COMMON(m, mod->desc.observer);
  } else {
    COPY_COMMON(m, mod->desc.backend);
    m->priority = cua__backend_priority(mod->desc.backend);
  }
  m->path = xstrdup(mod->path);
}
#undef COPY_COMMON

static void add_module(report *r, const cua__module *mod, int shadowed,
                       int by_path) {
  module_info *m;

  if (mod->kind == CUA__MODULE_POLICY) {
    r->policies = grow_array(r->policies, r->npolicies, sizeof *m);
    m = &r->policies[r->npolicies++];
  } else if (mod->kind == CUA__MODULE_OBSERVER) {
    r->observers = grow_array(r->observers, r->nobservers, sizeof *m);
    m = &r->observers[r->nobservers++];
  } else {
    r->backends = grow_array(r->backends, r->nbackends, sizeof *m);
    m = &r->backends[r->nbackends++];
  }
  copy_module(m, mod);
  m->shadowed = shadowed;
  m->by_path = by_path;
}

static const char *kind_word(cua__module_kind kind) {
  return kind == CUA__MODULE_POLICY     ? "policy"
         : kind == CUA__MODULE_OBSERVER ? "observer"
                                        : "backend";
}

/* A file that cannot be opened, or that has neither entry symbol, is
 * refused by both scans when it sits in a directory on both search paths
 * (as $CUASYNC_MODULE_PATH's are); it is reported once, as "module". */
static failure_info *find_twin(report *r, const char *path, int code) {
  size_t i;

  if (code != CUA_ERR_MODULE_DLOPEN && code != CUA_ERR_MODULE_NO_ENTRY)
    return NULL;
  for (i = 0; i < r->nfailures; i++)
    if (r->failures[i].code == code && strcmp(r->failures[i].path, path) == 0)
      return &r->failures[i];
  return NULL;
}

static void add_failure(report *r, cua__module_kind kind, const char *name,
                        const char *path, int code, const char *message) {
  failure_info *f = find_twin(r, path, code);

  if (f != NULL) {
    f->kind = "module";
    if (code == CUA_ERR_MODULE_NO_ENTRY) {
      free(f->message);
      f->message =
          xasprintf("%s: exports neither %s nor %s: not a cuasync "
                    "module",
                    path, CUA_POLICY_ENTRY_SYMBOL, CUA_BACKEND_ENTRY_SYMBOL);
    }
    return;
  }
  r->failures = grow_array(r->failures, r->nfailures, sizeof *f);
  f = &r->failures[r->nfailures++];
  f->kind = kind_word(kind);
  f->name = xstrdup(name);
  f->path = xstrdup(path);
  f->code = code;
  f->message = xstrdup(message != NULL ? message : cua_strerror(code));
}

typedef struct scan_ctx {
  report *r;
  cua__module_kind kind;
} scan_ctx;

static void on_scanned(const cua__module_report *m, void *arg) {
  scan_ctx *ctx = arg;

  if (m->status == 0)
    add_module(ctx->r, m->module, m->shadowed, 0);
  else
    add_failure(ctx->r, ctx->kind, m->name, m->path, m->status, m->message);
}

static void scan_modules(report *r) {
  char *const *extra;
  size_t nextra;
  scan_ctx ctx;

  policy_path(r, &extra, &nextra);
  ctx.r = r;
  ctx.kind = CUA__MODULE_POLICY;
  cua__module_scan(CUA__MODULE_POLICY, extra, nextra, 0, on_scanned, &ctx);
  ctx.kind = CUA__MODULE_BACKEND;
  cua__module_scan(CUA__MODULE_BACKEND, NULL, 0, 0, on_scanned, &ctx);
  ctx.kind = CUA__MODULE_OBSERVER;
  cua__module_scan(CUA__MODULE_OBSERVER, NULL, 0, 0, on_scanned, &ctx);
}

/* 1 if the loader takes @p name as a path rather than a name to search. */
static int is_path(const char *name) {
  size_t n = strlen(name);

  return strchr(name, '/') != NULL ||
         (n > 3 && strcmp(name + n - 3, ".so") == 0);
}

static int listed_policy(const report *r, const char *path) {
  size_t i;

  for (i = 0; i < r->npolicies; i++)
    if (strcmp(r->policies[i].path, path) == 0)
      return 1;
  return 0;
}

/* A policy the configuration names by path is on no search path, so the
 * scan cannot find it: load it as the runtime would. */
static void load_policy_by_path(report *r, const char *name) {
  char *const *extra;
  size_t nextra;
  cua__module *mod = NULL;
  char err[2048];
  int rc;

  if (!is_path(name))
    return;
  policy_path(r, &extra, &nextra);
  rc = cua__module_load(&mod, CUA__MODULE_POLICY, name, extra, nextra, 0, err,
                        sizeof err);
  if (rc != 0) {
    add_failure(r, CUA__MODULE_POLICY, name, name, rc, err);
    return;
  }
  if (!listed_policy(r, mod->path))
    add_module(r, mod, 0, 1);
  cua__module_unload(mod);
}

static void load_configured_policies(report *r) {
  size_t i;

  if (r->cfg == NULL)
    return;
  load_policy_by_path(r, r->cfg->policy);
  for (i = 0; i < r->cfg->nsections; i++) {
    const cua__section *s = &r->cfg->sections[i];
    const char *name;
    if (strncmp(s->name, "device.", 7) != 0)
      continue;
    name = cua__config_device_policy(r->cfg, atoi(s->name + 7), NULL);
    if (name != NULL)
      load_policy_by_path(r, name);
  }
}

/* Fills each parameter's configured values from the configuration's
 * [KIND.NAME] section (KIND "policy" or "backend"), or records why the
 * section does not fit. */
static void configured_values(const report *r, module_info *m,
                              const char *kind) {
  cua_param_spec *spec;
  cua_param_value *v = NULL;
  char section[512], err[2048];
  size_t i, j;

  snprintf(section, sizeof section, "%s.%s", kind, m->name);
  if (r->cfg == NULL || cua__config_section(r->cfg, section) == NULL)
    return;
  spec = calloc(m->nparams + 1, sizeof *spec);
  if (spec == NULL)
    out_of_memory();
  for (i = 0; i < m->nparams; i++) {
    spec[i].name = m->params[i].name;
    spec[i].type = m->params[i].type;
    spec[i].default_value = m->params[i].def;
    spec[i].min = m->params[i].min;
    spec[i].max = m->params[i].max;
    spec[i].choices = m->params[i].choices;
    spec[i].flags = m->params[i].flags;
  }
  if (cua__config_params(r->cfg, section, spec, m->nparams, &v, err,
                         sizeof err) != 0) {
    m->params_error = xstrdup(err);
  } else {
    for (i = 0; i < m->nparams; i++) {
      param_info *p = &m->params[i];
      const char *const *list = v[i].count > 0 ? v[i].list : &v[i].s;
      size_t n = v[i].count > 0 ? v[i].count : 1;
      if (!v[i].present)
        continue;
      p->configured = calloc(n, sizeof *p->configured);
      if (p->configured == NULL)
        out_of_memory();
      for (j = 0; j < n; j++)
        p->configured[j] = xstrdup(list[j]);
      p->nconfigured = n;
    }
  }
  cua__config_params_free(v, m->nparams);
  free(spec);
}

/* ------------------------------------------------------------------ */
/* Gathering: runtimes. */

/* Opens and closes a runtime on backend @p m alone. $CUASYNC_POLICY is
 * set aside meanwhile: it would replace the probe's policy, and a backend
 * must not look broken because of a policy experiment. No runtime (and so
 * no thread that could read the environment) exists while it is unset and
 * restored. */
static void probe_backend(module_info *m) {
  const char *env = getenv("CUASYNC_POLICY");
  char *saved = xstrdup(env), *text = xasprintf(PROBE_CONFIG, m->name);
  cua_runtime_options o;
  cua_runtime *rt = NULL;

  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.config_text = text;
  o.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  if (saved != NULL)
    unsetenv("CUASYNC_POLICY");
  m->probed = 1;
  if (cua_runtime_create_ex(&rt, &o) == 0) {
    m->opens = 1;
    cua_runtime_destroy(rt);
  } else {
    m->probe_error = xstrdup(cua_runtime_error(NULL));
  }
  if (saved != NULL && setenv("CUASYNC_POLICY", saved, 1) != 0)
    out_of_memory();
  free(saved);
  free(text);
}

/* Only the module a runtime would load is probed: not shadowed ones. */
static void probe_backends(report *r) {
  size_t i;

  for (i = 0; i < r->nbackends; i++)
    if (!r->backends[i].shadowed)
      probe_backend(&r->backends[i]);
}

static int add_model(const cua_model_entry *e, void *arg) {
  report *r = arg;
  r->models = grow_array(r->models, r->nmodels, sizeof *r->models);
  cua_model_entry *m = &r->models[r->nmodels++];
  *m = *e;
  m->name = e->name != NULL ? xstrdup(e->name) : NULL;
  m->tag = e->tag != NULL ? xstrdup(e->tag) : NULL;
  return 0;
}

/* Entries by device, transfers last, then kind, name, tag and size. */
static int cmp_model(const void *pa, const void *pb) {
  const cua_model_entry *a = pa, *b = pb;
  if (a->transfer != b->transfer)
    return a->transfer - b->transfer;
  if (a->device != b->device)
    return a->device - b->device;
  if (a->from != b->from)
    return a->from - b->from;
  if (a->kind != b->kind)
    return (int)a->kind - (int)b->kind;
  int c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
  if (c == 0)
    c = strcmp(a->tag ? a->tag : "", b->tag ? b->tag : "");
  if (c == 0)
    c = (a->cost_bucket > b->cost_bucket) - (a->cost_bucket < b->cost_bucket);
  if (c == 0)
    c = (a->bytes_min > b->bytes_min) - (a->bytes_min < b->bytes_min);
  return c;
}

static void describe_models(report *r, cua_runtime *rt) {
  const char *file = NULL;
  int rc = cua_runtime_models(rt, add_model, r, &file);
  if (rc == CUA_ERR_NOTSUP) {
    r->models_state = "off";
    return;
  }
  if (rc != 0)
    out_of_memory();
  if (r->nmodels > 1)
    qsort(r->models, r->nmodels, sizeof *r->models, cmp_model);
  r->models_state = file != NULL ? "file" : "memory";
  r->models_file = file != NULL ? xstrdup(file) : NULL;
}

/* Whether the runtime's graphs are backend graphs (CUDA graphs): a graph
 * of one fill, made and dropped. */
static void describe_graphs(report *r, cua_runtime *rt) {
  cua_buffer *b = NULL;
  cua_op *op = NULL;
  cua_graph *g = NULL;
  cua_graph_info gi;

  memset(&gi, 0, sizeof gi);
  gi.size = sizeof gi;
  r->graphs_native = -1;
  if (cua_buffer_create(&b, rt, 0, 16 * sizeof(float), 0) == 0 &&
      cua_op_fill(&op, b, 0.0f) == 0 &&
      cua_graph_create(&g, rt, op, NULL) == 0 &&
      cua_graph_get_info(g, &gi) == 0)
    r->graphs_native = gi.native;
  else
    r->graphs_error = xstrdup(cua_runtime_error(rt));
  cua_graph_destroy(g);
  cua_op_destroy(op);
  cua_buffer_destroy(b);
}

static void describe_runtime(report *r, cua_runtime *rt) {
  int i;

  describe_models(r, rt);
  describe_graphs(r, rt);

  r->rt_backend = xstrdup(cua_runtime_backend(rt));
  r->rt_policy = xstrdup(cua_runtime_policy(rt));
  r->ndevices = cua_device_count(rt);
  if (r->ndevices <= 0)
    return;
  r->devices = calloc((size_t)r->ndevices, sizeof *r->devices);
  if (r->devices == NULL)
    out_of_memory();
  for (i = 0; i < r->ndevices; i++) {
    r->devices[i].size = sizeof r->devices[i];
    if (cua_device_get_info(rt, i, &r->devices[i]) != 0)
      snprintf(r->devices[i].name, sizeof r->devices[i].name, "(%s)",
               cua_runtime_error(rt));
  }
}

/* Opens the runtime the configuration describes, as a program would. A
 * configuration that did not even load is not tried again. */
static void open_runtime(report *r, const options *o) {
  cua_runtime *rt = NULL;

  if (r->cfg == NULL) {
    r->rt_error = xstrdup(r->config_error);
    return;
  }
  if (cua_runtime_create(&rt, o->config) != 0) {
    r->rt_error = xstrdup(cua_runtime_error(NULL));
    return;
  }
  r->rt_opened = 1;
  describe_runtime(r, rt);
  cua_runtime_destroy(rt);
}

static void gather(report *r, const options *o) {
  size_t i;

  memset(r, 0, sizeof *r);
  load_config(r, o);
  load_search_paths(r);
  scan_modules(r);
  load_configured_policies(r);
  for (i = 0; i < r->npolicies; i++)
    configured_values(r, &r->policies[i], "policy");
  for (i = 0; i < r->nbackends; i++)
    configured_values(r, &r->backends[i], "backend");
  probe_backends(r);
  open_runtime(r, o);
}

/* ------------------------------------------------------------------ */
/* Freeing. */

static void free_strv(char **v, size_t n) {
  size_t i;

  for (i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

static void free_module(module_info *m) {
  size_t i;

  for (i = 0; i < m->nparams; i++) {
    free(m->params[i].name);
    free(m->params[i].def);
    free(m->params[i].choices);
    free(m->params[i].help);
    free_strv(m->params[i].configured, m->params[i].nconfigured);
  }
  free(m->params);
  free(m->name);
  free(m->version);
  free(m->description);
  free(m->path);
  free(m->params_error);
  free(m->probe_error);
}

static void free_report(report *r) {
  size_t i;
  int k;

  cua__config_free(r->cfg);
  free(r->config_error);
  for (k = 0; k < 3; k++)
    cua__strv_free(r->dirs[k], r->ndirs[k]);
  for (i = 0; i < r->nbackends; i++)
    free_module(&r->backends[i]);
  free(r->backends);
  for (i = 0; i < r->npolicies; i++)
    free_module(&r->policies[i]);
  free(r->policies);
  for (i = 0; i < r->nobservers; i++)
    free_module(&r->observers[i]);
  free(r->observers);
  for (i = 0; i < r->nfailures; i++) {
    free(r->failures[i].name);
    free(r->failures[i].path);
    free(r->failures[i].message);
  }
  free(r->failures);
  free(r->rt_error);
  free(r->rt_backend);
  free(r->rt_policy);
  free(r->graphs_error);
  free(r->devices);
  for (i = 0; i < r->nmodels; i++) {
    free((char *)r->models[i].name);
    free((char *)r->models[i].tag);
  }
  free(r->models);
  free(r->models_file);
}

/* ------------------------------------------------------------------ */
/* Words shared by both formats. */

static const char *type_name(cua_param_type t) {
  switch (t) {
  case CUA_PARAM_INT:
    return "int";
  case CUA_PARAM_DOUBLE:
    return "double";
  case CUA_PARAM_BOOL:
    return "bool";
  case CUA_PARAM_STRING:
    return "string";
  case CUA_PARAM_ENUM:
    return "enum";
  }
  return "unknown";
}

/* The values a parameter accepts, as text: "1..1024", "ops|time"... */
static void format_range(const param_info *p, char *buf, size_t len) {
  switch (p->type) {
  case CUA_PARAM_INT:
    snprintf(buf, len, "%.0f..%.0f", p->min, p->max);
    break;
  case CUA_PARAM_DOUBLE:
    snprintf(buf, len, "%g..%g", p->min, p->max);
    break;
  case CUA_PARAM_BOOL:
    snprintf(buf, len, "true|false");
    break;
  case CUA_PARAM_ENUM:
    snprintf(buf, len, "%s", p->choices != NULL ? p->choices : "?");
    break;
  default:
    snprintf(buf, len, "text");
    break;
  }
}

static void format_bytes(uint64_t bytes, char *buf, size_t len) {
  if (bytes == 0)
    snprintf(buf, len, "-");
  else if (bytes >= (1ull << 30))
    snprintf(buf, len, "%.1f GiB", (double)bytes / (double)(1ull << 30));
  else
    snprintf(buf, len, "%.1f MiB", (double)bytes / (double)(1ull << 20));
}

/* What the runtime says about its devices' compute units. */
static const char *units_word(const report *r) {
  return r->rt_backend != NULL && strcmp(r->rt_backend, "host") == 0 ? "CORES"
                                                                     : "SMS";
}

/* ------------------------------------------------------------------ */
/* Table format. */

/* Rows of text cells printed in aligned columns; the last column is not
 * padded, so long descriptions do not leave trailing blanks. */
typedef struct table {
  size_t ncols;
  char **cells;
  size_t nrows;
} table;

static void table_row(table *t, ...) {
  va_list ap;
  char **cells;
  size_t i;

  cells = realloc(t->cells, (t->nrows + 1) * t->ncols * sizeof *cells);
  if (cells == NULL)
    out_of_memory();
  t->cells = cells;
  va_start(ap, t);
  for (i = 0; i < t->ncols; i++) {
    const char *s = va_arg(ap, const char *);
    cells[t->nrows * t->ncols + i] = xstrdup(s != NULL ? s : "-");
  }
  va_end(ap);
  t->nrows++;
}

static void table_print(table *t, FILE *f, int indent) {
  size_t widths[16] = {0}, row, col, n;

  for (row = 0; row < t->nrows; row++)
    for (col = 0; col < t->ncols && col < 16; col++) {
      n = strlen(t->cells[row * t->ncols + col]);
      if (n > widths[col])
        widths[col] = n;
    }
  for (row = 0; row < t->nrows; row++) {
    fprintf(f, "%*s", indent, "");
    for (col = 0; col < t->ncols; col++) {
      const char *s = t->cells[row * t->ncols + col];
      if (col + 1 < t->ncols)
        fprintf(f, "%-*s  ", (int)widths[col], s);
      else
        fprintf(f, "%s\n", s);
    }
  }
  for (n = 0; n < t->nrows * t->ncols; n++)
    free(t->cells[n]);
  free(t->cells);
  t->cells = NULL;
  t->nrows = 0;
}

static void print_dirs(FILE *f, const char *what, char **dirs, size_t n) {
  size_t i;

  fprintf(f, "  %s searched in:", what);
  for (i = 0; i < n; i++)
    fprintf(f, "%s%s", i > 0 ? ":" : " ", dirs[i]);
  fprintf(f, "\n");
}

/* The resolved configuration, as cua__config_print() writes it, indented
 * under its heading. */
static void table_config(const report *r, FILE *f) {
  char *text = NULL, *line, *next, why[1024];
  size_t len = 0;
  FILE *mem;
  int rc;

  if (r->cfg == NULL) {
    fprintf(f, "Configuration: not loaded: %s\n", r->config_error);
    return;
  }
  fprintf(f, "Configuration: %s\n", r->cfg->origin);
  mem = open_memstream(&text, &len);
  if (mem == NULL)
    out_of_memory();
  rc = cua__config_print(r->cfg, mem, why, sizeof why);
  fclose(mem);
  if (rc != 0) {
    fprintf(f, "  (cannot be written as INI text: %s)\n", why);
    free(text);
    return;
  }
  for (line = text; line != NULL && *line != '\0'; line = next) {
    next = strchr(line, '\n');
    if (next != NULL)
      *next++ = '\0';
    fprintf(f, "%s%s\n", *line != '\0' ? "  " : "", line);
  }
  free(text);
}

/* A duration for people: ns, us, ms or s. */
static void format_ns(uint64_t ns, char *buf, size_t len) {
  if (ns < 10000)
    snprintf(buf, len, "%llu ns", (unsigned long long)ns);
  else if (ns < 10000000)
    snprintf(buf, len, "%.1f us", (double)ns / 1e3);
  else if (ns < 10000000000ull)
    snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
  else
    snprintf(buf, len, "%.1f s", (double)ns / 1e9);
}

/* A size bucket's bound: bytes, KiB, MiB or GiB (powers of two). */
static void format_size(uint64_t b, char *buf, size_t len) {
  if (b < 1024)
    snprintf(buf, len, "%llu B", (unsigned long long)b);
  else if (b < (1ull << 20))
    snprintf(buf, len, "%.0f KiB", (double)b / 1024);
  else if (b < (1ull << 30))
    snprintf(buf, len, "%.0f MiB", (double)b / (1 << 20));
  else
    snprintf(buf, len, "%.0f GiB", (double)b / (1 << 30));
}

static void table_models_summary(const report *r, FILE *f) {
  if (r->models_state == NULL)
    return;
  if (strcmp(r->models_state, "off") == 0)
    fprintf(f, "Performance models: off\n");
  else
    fprintf(f, "Performance models: %s, %zu entr%s%s\n",
            r->models_file != NULL ? r->models_file : "in memory only",
            r->nmodels, r->nmodels == 1 ? "y" : "ies",
            r->nmodels > 0 ? " (cuasync-info --models lists them)" : "");
}

/* Where an entry is measured: "0" for an op class on device 0, "host->0"
 * for a transfer. */
static void model_where(const cua_model_entry *e, char *buf, size_t len) {
  char from[16], to[16];
  snprintf(to, sizeof to, e->device < 0 ? "host" : "%d", e->device);
  if (!e->transfer) {
    snprintf(buf, len, "%s", to);
    return;
  }
  snprintf(from, sizeof from, e->from < 0 ? "host" : "%d", e->from);
  snprintf(buf, len, "%s->%s", from, to);
}

static void table_models(const report *r, FILE *f) {
  table t = {9, NULL, 0};
  char where[40], bytes[48], lo[16], hi[16], samples[24], mean[24], sd[24],
      cb[16];
  size_t i;

  if (!r->rt_opened) {
    fprintf(f, "Performance models: the runtime does not open: %s\n",
            r->rt_error);
    return;
  }
  table_models_summary(r, f);
  if (r->nmodels == 0)
    return;
  table_row(&t, "DEVICE", "KIND", "NAME", "TAG", "COST-BITS", "BYTES",
            "SAMPLES", "MEAN", "STDDEV");
  for (i = 0; i < r->nmodels; i++) {
    const cua_model_entry *e = &r->models[i];
    model_where(e, where, sizeof where);
    if (e->bytes_max == 0) {
      snprintf(bytes, sizeof bytes, "-");
    } else {
      format_size(e->bytes_min, lo, sizeof lo);
      format_size(e->bytes_max + 1, hi, sizeof hi);
      snprintf(bytes, sizeof bytes, "%s-%s", lo, hi);
    }
    snprintf(samples, sizeof samples, "%.4g", e->samples);
    format_ns(e->mean_ns, mean, sizeof mean);
    format_ns(e->stddev_ns, sd, sizeof sd);
    snprintf(cb, sizeof cb, "%u", e->cost_bucket);
    table_row(&t, where, e->transfer ? "transfer" : cua_op_kind_name(e->kind),
              e->name != NULL ? e->name : "-", e->tag != NULL ? e->tag : "-",
              e->transfer ? "-" : cb, bytes, samples, mean, sd);
  }
  table_print(&t, f, 2);
}

static const char *graphs_mode(const report *r) {
  if (r->cfg == NULL)
    return "?";
  return r->cfg->graphs == CUA__GRAPHS_AUTO     ? "auto"
         : r->cfg->graphs == CUA__GRAPHS_ALWAYS ? "always"
                                                : "off";
}

/* How graphs run, and whether submissions are cached as graphs. */
static void table_graphs(const report *r, FILE *f) {
  if (r->graphs_native < 0)
    fprintf(f, "Graphs: cannot be made: %s\n", r->graphs_error);
  else
    fprintf(f, "Graphs: %s; [runtime] graphs = %s, graph_cache = %d\n",
            r->graphs_native ? "backend graphs (captured once, one launch per "
                               "replay)"
                             : "replayed by the core (the backend has no "
                               "graphs)",
            graphs_mode(r), r->cfg != NULL ? r->cfg->graph_cache : 0);
}

static void table_runtime(const report *r, FILE *f) {
  table t = {5, NULL, 0};
  char mem[32], cc[16], units[32], idx[16];
  int i;

  if (!r->rt_opened) {
    fprintf(f, "Runtime: does not open: %s\n", r->rt_error);
    return;
  }
  fprintf(f, "Runtime: backend %s, policy %s, %d device%s\n", r->rt_backend,
          r->rt_policy, r->ndevices, r->ndevices == 1 ? "" : "s");
  table_row(&t, "DEVICE", "NAME", "MEMORY", "CC", units_word(r));
  for (i = 0; i < r->ndevices; i++) {
    const cua_device_info *d = &r->devices[i];
    snprintf(idx, sizeof idx, "%d", i);
    format_bytes(d->total_memory, mem, sizeof mem);
    if (d->compute_major > 0)
      snprintf(cc, sizeof cc, "%d.%d", d->compute_major, d->compute_minor);
    else
      snprintf(cc, sizeof cc, "-");
    snprintf(units, sizeof units, "%d", d->multiprocessors);
    table_row(&t, idx, d->name, mem, cc, units);
  }
  table_print(&t, f, 2);
  table_graphs(r, f);
  table_models_summary(r, f);
}

static const char *backend_status(const module_info *m) {
  if (m->shadowed)
    return "shadowed";
  return m->opens ? "opens" : "fails";
}

static const char *policy_note(const module_info *m) {
  if (m->shadowed)
    return "shadowed";
  return m->by_path ? "by path" : "";
}

/* The backends or policies found: a header, the folders searched, then two
 * rows per module (what it is, where it is), and a backend's probe error. */
static void table_modules(FILE *f, const char *title, const report *r,
                          cua__module_kind kind, const module_info *mods,
                          size_t n, const char *third,
                          const char *(*status)(const module_info *)) {
  table t = {4, NULL, 0};

  fprintf(f, "%s:\n", title);
  print_dirs(f,
             kind == CUA__MODULE_BACKEND    ? "backends"
             : kind == CUA__MODULE_OBSERVER ? "observers"
                                            : "policies",
             r->dirs[kind], r->ndirs[kind]);
  if (n == 0) {
    fprintf(f, "  (none found)\n");
    return;
  }
  table_row(&t, "NAME", "VERSION", third, "DESCRIPTION / PATH");
  for (size_t i = 0; i < n; i++) {
    const module_info *m = &mods[i];
    table_row(&t, m->name, or_dash(m->version), status(m),
              or_dash(m->description));
    table_row(&t, "", "", "", m->path);
    if (m->probe_error != NULL)
      table_row(&t, "", "", "", m->probe_error);
  }
  table_print(&t, f, 2);
}

/* The order in which `backend = auto` tries the backends: decreasing
 * priority, then name, as the core sorts them. */
static int cmp_auto(const void *a, const void *b) {
  const module_info *x = *(const module_info *const *)a;
  const module_info *y = *(const module_info *const *)b;
  if (x->priority != y->priority)
    return x->priority > y->priority ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* One line: the backends `auto` tries, in order, with their priorities,
 * and those it never tries (a negative priority). */
static void print_auto_order(const report *r, FILE *f) {
  const module_info **v = grow_array(NULL, 0, (r->nbackends + 1) * sizeof *v);
  size_t i, n = 0, k;
  int never;

  for (i = 0; i < r->nbackends; i++)
    if (!r->backends[i].shadowed)
      v[n++] = &r->backends[i];
  qsort(v, n, sizeof *v, cmp_auto);
  fprintf(f, "  backend = auto tries:");
  for (i = 0, k = 0; i < n; i++)
    if (v[i]->priority >= 0)
      fprintf(f, "%s%s (%d)", k++ > 0 ? ", " : " ", v[i]->name, v[i]->priority);
  if (k == 0)
    fprintf(f, " none");
  for (i = 0, never = 0; i < n; i++)
    if (v[i]->priority < 0)
      fprintf(f, "%s%s (%d)", never++ > 0 ? ", " : "; never: ", v[i]->name,
              v[i]->priority);
  fprintf(f, "\n");
  free(v);
}

static void table_backends(const report *r, FILE *f) {
  table_modules(f, "Backends", r, CUA__MODULE_BACKEND, r->backends,
                r->nbackends, "STATUS", backend_status);
  if (r->nbackends > 0)
    print_auto_order(r, f);
}

static void table_policies_brief(const report *r, FILE *f) {
  table_modules(f, "Policies", r, CUA__MODULE_POLICY, r->policies, r->npolicies,
                "NOTE", policy_note);
}

/* An observer's note: shadowed by one of its name earlier on the path. */
static const char *observer_note(const module_info *m) {
  return m->shadowed ? "shadowed" : "";
}

static void table_observers(const report *r, FILE *f) {
  table_modules(f, "Observers ([runtime] observers = NAME)", r,
                CUA__MODULE_OBSERVER, r->observers, r->nobservers, "NOTE",
                observer_note);
}

/* The configured values of a parameter, "; "-separated, or "-". */
static char *joined_values(const param_info *p) {
  size_t i, len = 1;
  char *s;

  if (p->nconfigured == 0)
    return xstrdup("-");
  for (i = 0; i < p->nconfigured; i++)
    len += strlen(p->configured[i]) + 2;
  s = calloc(1, len);
  if (s == NULL)
    out_of_memory();
  for (i = 0; i < p->nconfigured; i++) {
    if (i > 0)
      strcat(s, "; ");
    strcat(s, p->configured[i]);
  }
  return s;
}

static void table_params(const module_info *m, FILE *f) {
  table t = {6, NULL, 0};
  char range[256], type[32], *value;
  size_t i;

  if (m->nparams == 0) {
    fprintf(f, "    (no parameters)\n");
    return;
  }
  table_row(&t, "PARAMETER", "TYPE", "DEFAULT", "RANGE", "CONFIG", "HELP");
  for (i = 0; i < m->nparams; i++) {
    const param_info *p = &m->params[i];
    format_range(p, range, sizeof range);
    snprintf(type, sizeof type, "%s%s", type_name(p->type),
             (p->flags & CUA_PARAM_MULTI) ? " (multi)" : "");
    value = joined_values(p);
    table_row(&t, p->name, type, p->def != NULL ? p->def : "(none)", range,
              value, p->help);
    free(value);
  }
  table_print(&t, f, 4);
}

static void table_policies_full(const report *r, FILE *f) {
  size_t i;

  fprintf(f, "Policies:\n");
  print_dirs(f, "policies", r->dirs[CUA__MODULE_POLICY],
             r->ndirs[CUA__MODULE_POLICY]);
  if (r->npolicies == 0)
    fprintf(f, "  (none found)\n");
  for (i = 0; i < r->npolicies; i++) {
    const module_info *m = &r->policies[i];
    const char *note = policy_note(m);
    fprintf(f, "\n  %s %s: %s%s%s%s\n", m->name, or_dash(m->version),
            or_dash(m->description), *note ? " [" : "", note, *note ? "]" : "");
    fprintf(f, "    %s (ABI %u.%u%s)\n", m->path, m->abi_major, m->abi_minor,
            (m->flags & CUA_POLICY_WANTS_TIMING) ? ", wants timing" : "");
    table_params(m, f);
    if (m->params_error != NULL)
      fprintf(f, "    configuration error: %s\n", m->params_error);
  }
}

static void table_failures(const report *r, FILE *f, int policies_only) {
  size_t i, shown = 0;

  for (i = 0; i < r->nfailures; i++) {
    const failure_info *x = &r->failures[i];
    if (policies_only && strcmp(x->kind, "backend") == 0)
      continue;
    if (shown++ == 0)
      fprintf(f, "\nFailed modules:\n");
    fprintf(f, "  %s (%s, %s)\n    %s\n", x->name, x->kind,
            cua_err_name(x->code), x->message);
  }
}

static void render_table(const report *r, const options *o, FILE *f) {
  fprintf(f,
          "cuasync %s (headers %s; policy ABI %d.%d, backend ABI %d.%d, "
          "observer ABI %d.%d)\n",
          cua_version_string(), CUA_VERSION_STRING, CUA_POLICY_ABI_MAJOR,
          CUA_POLICY_ABI_MINOR, CUA_BACKEND_ABI_MAJOR, CUA_BACKEND_ABI_MINOR,
          CUA_OBSERVER_ABI_MAJOR, CUA_OBSERVER_ABI_MINOR);
  if (o->policies) {
    fprintf(f, "\n");
    table_policies_full(r, f);
    table_failures(r, f, 1);
    return;
  }
  if (o->models) {
    fprintf(f, "\n");
    table_models(r, f);
    return;
  }
  fprintf(f, "\n");
  table_config(r, f);
  fprintf(f, "\n");
  table_runtime(r, f);
  fprintf(f, "\n");
  table_backends(r, f);
  fprintf(f, "\n");
  table_policies_brief(r, f);
  fprintf(f, "\n");
  table_observers(r, f);
  table_failures(r, f, 0);
}

/* ------------------------------------------------------------------ */
/* JSON format. */

#define JSON_MAX_DEPTH 16

/* A streaming JSON writer: it only tracks where commas go. */
typedef struct json {
  FILE *f;
  int depth;
  int items[JSON_MAX_DEPTH]; /* members written at each depth */
} json;

/* Starts a member: the comma after the previous one, a new line, and the
 * key inside an object (@p key NULL inside an array). */
static void json_member(json *j, const char *key) {
  if (j->depth > 0) {
    fputs(j->items[j->depth] > 0 ? ",\n" : "\n", j->f);
    fprintf(j->f, "%*s", 2 * j->depth, "");
  }
  j->items[j->depth]++;
  if (key != NULL) {
    cua_jsonstr_put(j->f, key);
    fputs(": ", j->f);
  }
}

static void json_open(json *j, const char *key, char bracket) {
  json_member(j, key);
  fputc(bracket, j->f);
  if (j->depth + 1 < JSON_MAX_DEPTH)
    j->depth++;
  j->items[j->depth] = 0;
}

static void json_close(json *j, char bracket) {
  int had = j->items[j->depth] > 0;

  j->depth--;
  if (had)
    fprintf(j->f, "\n%*s", 2 * j->depth, "");
  fputc(bracket, j->f);
  if (j->depth == 0)
    fputc('\n', j->f);
}

static void json_string(json *j, const char *key, const char *value) {
  json_member(j, key);
  if (value != NULL)
    cua_jsonstr_put(j->f, value);
  else
    fputs("null", j->f);
}

static void json_int(json *j, const char *key, long long value) {
  json_member(j, key);
  fprintf(j->f, "%lld", value);
}

static void json_number(json *j, const char *key, double value) {
  json_member(j, key);
  if (isfinite(value))
    fprintf(j->f, "%.17g", value);
  else
    fputs("null", j->f);
}

static void json_bool(json *j, const char *key, int value) {
  json_member(j, key);
  fputs(value ? "true" : "false", j->f);
}

static void json_strv(json *j, const char *key, char *const *v, size_t n) {
  size_t i;

  json_open(j, key, '[');
  for (i = 0; i < n; i++)
    json_string(j, NULL, v[i]);
  json_close(j, ']');
}

static void json_version(json *j) {
  char abi[32];

  json_open(j, "version", '{');
  json_string(j, "library", cua_version_string());
  json_int(j, "library_hex", cua_version());
  json_string(j, "headers", CUA_VERSION_STRING);
  json_int(j, "headers_hex", CUA_VERSION_HEX);
  snprintf(abi, sizeof abi, "%d.%d", CUA_POLICY_ABI_MAJOR,
           CUA_POLICY_ABI_MINOR);
  json_string(j, "policy_abi", abi);
  snprintf(abi, sizeof abi, "%d.%d", CUA_BACKEND_ABI_MAJOR,
           CUA_BACKEND_ABI_MINOR);
  json_string(j, "backend_abi", abi);
  snprintf(abi, sizeof abi, "%d.%d", CUA_OBSERVER_ABI_MAJOR,
           CUA_OBSERVER_ABI_MINOR);
  json_string(j, "observer_abi", abi);
  json_close(j, '}');
}

static void json_sections(json *j, const cua__config *cfg) {
  size_t i, k;

  json_open(j, "sections", '[');
  for (i = 0; i < cfg->nsections; i++) {
    const cua__section *s = &cfg->sections[i];
    json_open(j, NULL, '{');
    json_string(j, "name", s->name);
    json_int(j, "line", s->line);
    json_open(j, "keys", '[');
    for (k = 0; k < s->nkv; k++) {
      json_open(j, NULL, '{');
      json_string(j, "key", s->kv[k].key);
      json_string(j, "value", s->kv[k].value);
      json_int(j, "line", s->kv[k].line);
      json_close(j, '}');
    }
    json_close(j, ']');
    json_close(j, '}');
  }
  json_close(j, ']');
}

static void json_config(json *j, const report *r) {
  const cua__config *cfg = r->cfg;
  size_t i;

  json_open(j, "config", '{');
  json_bool(j, "loaded", cfg != NULL);
  json_string(j, "error", r->config_error);
  if (cfg != NULL) {
    json_string(j, "origin", cfg->origin);
    json_string(j, "path", cfg->path);
    json_string(j, "backend", cfg->backend);
    if (cfg->devices == NULL) {
      json_string(j, "devices", "all");
    } else {
      json_open(j, "devices", '[');
      for (i = 0; i < cfg->ndevices; i++)
        json_int(j, NULL, cfg->devices[i]);
      json_close(j, ']');
    }
    json_string(j, "policy", cfg->policy);
    json_bool(j, "policy_from_env", cfg->policy_from_env);
    json_strv(j, "policy_path", cfg->policy_path, cfg->npolicy_path);
    json_string(j, "on_policy_error",
                cfg->on_policy_error == CUA__ON_POLICY_ERROR_FALLBACK
                    ? "fallback"
                    : "error");
    json_string(j, "launch", cua__conf_launch_name(cfg->launch));
    json_string(j, "graphs", graphs_mode(r));
    json_int(j, "graph_cache", cfg->graph_cache);
    json_string(j, "models", cfg->models);
    json_sections(j, cfg);
  }
  json_close(j, '}');
}

/* The models' state, and with @p list every entry. */
static void json_models(json *j, const report *r, int list) {
  size_t i;

  json_open(j, "models", '{');
  json_string(j, "state", r->models_state);
  json_string(j, "file", r->models_file);
  json_int(j, "entries", (long long)r->nmodels);
  if (list) {
    json_open(j, "list", '[');
    for (i = 0; i < r->nmodels; i++) {
      const cua_model_entry *e = &r->models[i];
      json_open(j, NULL, '{');
      json_bool(j, "transfer", e->transfer);
      json_int(j, "device", e->device);
      if (e->transfer)
        json_int(j, "from", e->from);
      else {
        json_string(j, "kind", cua_op_kind_name(e->kind));
        json_string(j, "name", e->name);
        json_string(j, "tag", e->tag);
        json_int(j, "cost_bits", e->cost_bucket);
      }
      json_int(j, "bytes_min", (long long)e->bytes_min);
      json_number(j, "bytes_max", (double)e->bytes_max);
      json_number(j, "samples", e->samples);
      json_number(j, "samples_new", e->samples_new);
      json_int(j, "mean_ns", (long long)e->mean_ns);
      json_int(j, "stddev_ns", (long long)e->stddev_ns);
      json_close(j, '}');
    }
    json_close(j, ']');
  }
  json_close(j, '}');
}

static void json_runtime(json *j, const report *r, int list_models) {
  int i;

  json_open(j, "runtime", '{');
  json_bool(j, "opened", r->rt_opened);
  json_string(j, "error", r->rt_error);
  json_string(j, "backend", r->rt_backend);
  json_string(j, "policy", r->rt_policy);
  json_open(j, "devices", '[');
  for (i = 0; i < r->ndevices; i++) {
    const cua_device_info *d = &r->devices[i];
    json_open(j, NULL, '{');
    json_int(j, "index", i);
    json_string(j, "name", d->name);
    json_int(j, "ordinal", d->ordinal);
    json_int(j, "total_memory", (long long)d->total_memory);
    json_int(j, "compute_major", d->compute_major);
    json_int(j, "compute_minor", d->compute_minor);
    json_int(j, "multiprocessors", d->multiprocessors);
    json_close(j, '}');
  }
  json_close(j, ']');
  json_open(j, "graphs", '{');
  if (r->graphs_native >= 0)
    json_bool(j, "native", r->graphs_native);
  json_string(j, "error", r->graphs_error);
  json_string(j, "mode", graphs_mode(r));
  json_int(j, "cache", r->cfg != NULL ? r->cfg->graph_cache : 0);
  json_close(j, '}');
  json_models(j, r, list_models);
  json_close(j, '}');
}

static void json_params(json *j, const module_info *m) {
  char range[256];
  size_t i;

  json_open(j, "params", '[');
  for (i = 0; i < m->nparams; i++) {
    const param_info *p = &m->params[i];
    json_open(j, NULL, '{');
    json_string(j, "name", p->name);
    json_string(j, "type", type_name(p->type));
    json_string(j, "default", p->def);
    if (p->type == CUA_PARAM_INT || p->type == CUA_PARAM_DOUBLE) {
      json_number(j, "min", p->min);
      json_number(j, "max", p->max);
    }
    json_string(j, "choices", p->choices);
    format_range(p, range, sizeof range);
    json_string(j, "range", range);
    json_bool(j, "multi", (p->flags & CUA_PARAM_MULTI) != 0);
    json_string(j, "help", p->help);
    if (p->nconfigured == 0)
      json_string(j, "configured", NULL);
    else if (p->flags & CUA_PARAM_MULTI)
      json_strv(j, "configured", p->configured, p->nconfigured);
    else
      json_string(j, "configured", p->configured[0]);
    json_close(j, '}');
  }
  json_close(j, ']');
}

static void json_module(json *j, const module_info *m, cua__module_kind kind) {
  char abi[32];

  json_open(j, NULL, '{');
  json_string(j, "name", m->name);
  json_string(j, "version", m->version);
  json_string(j, "description", m->description);
  json_string(j, "path", m->path);
  snprintf(abi, sizeof abi, "%u.%u", m->abi_major, m->abi_minor);
  json_string(j, "abi", abi);
  json_bool(j, "shadowed", m->shadowed);
  if (kind == CUA__MODULE_POLICY) {
    json_bool(j, "by_path", m->by_path);
    json_bool(j, "wants_timing", (m->flags & CUA_POLICY_WANTS_TIMING) != 0);
    json_string(j, "config_error", m->params_error);
  } else if (kind == CUA__MODULE_BACKEND) {
    json_int(j, "priority", m->priority);
    if (m->probed)
      json_bool(j, "opens", m->opens);
    else
      json_string(j, "opens", NULL);
    json_string(j, "error", m->probe_error);
  }
  json_params(j, m);
  json_close(j, '}');
}

static void json_modules(json *j, const report *r, cua__module_kind kind) {
  const module_info *v = kind == CUA__MODULE_POLICY     ? r->policies
                         : kind == CUA__MODULE_OBSERVER ? r->observers
                                                        : r->backends;
  size_t i, n = kind == CUA__MODULE_POLICY     ? r->npolicies
                : kind == CUA__MODULE_OBSERVER ? r->nobservers
                                               : r->nbackends;

  json_open(j,
            kind == CUA__MODULE_POLICY     ? "policies"
            : kind == CUA__MODULE_OBSERVER ? "observers"
                                           : "backends",
            '[');
  for (i = 0; i < n; i++)
    json_module(j, &v[i], kind);
  json_close(j, ']');
}

static void json_failures(json *j, const report *r) {
  size_t i;

  json_open(j, "failed", '[');
  for (i = 0; i < r->nfailures; i++) {
    const failure_info *x = &r->failures[i];
    json_open(j, NULL, '{');
    json_string(j, "kind", x->kind);
    json_string(j, "name", x->name);
    json_string(j, "path", x->path);
    json_string(j, "code", cua_err_name(x->code));
    json_string(j, "message", x->message);
    json_close(j, '}');
  }
  json_close(j, ']');
}

static void render_json(const report *r, const options *o, FILE *f) {
  json j;

  memset(&j, 0, sizeof j);
  j.f = f;
  json_open(&j, NULL, '{');
  json_version(&j);
  json_config(&j, r);
  json_open(&j, "search_path", '{');
  json_strv(&j, "policies", r->dirs[CUA__MODULE_POLICY],
            r->ndirs[CUA__MODULE_POLICY]);
  json_strv(&j, "backends", r->dirs[CUA__MODULE_BACKEND],
            r->ndirs[CUA__MODULE_BACKEND]);
  json_strv(&j, "observers", r->dirs[CUA__MODULE_OBSERVER],
            r->ndirs[CUA__MODULE_OBSERVER]);
  json_close(&j, '}');
  json_runtime(&j, r, o->models);
  json_modules(&j, r, CUA__MODULE_BACKEND);
  json_modules(&j, r, CUA__MODULE_POLICY);
  json_modules(&j, r, CUA__MODULE_OBSERVER);
  json_failures(&j, r);
  json_close(&j, '}');
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv) {
  options o;
  report r;
  int rc = parse_args(argc, argv, &o);

  if (rc >= 0)
    return rc;
  gather(&r, &o);
  if (o.fmt == FORMAT_JSON)
    render_json(&r, &o, stdout);
  else
    render_table(&r, &o, stdout);
  rc = r.rt_opened ? EXIT_OK : EXIT_NO_RUNTIME;
  if (!r.rt_opened)
    fprintf(stderr, "%s: the configuration does not open a runtime: %s\n",
            PROGRAM, r.rt_error);
  free_report(&r);
  return output_written(rc);
}
