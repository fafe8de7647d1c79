/*
 * core/backend.c: finding, checking and opening the runtime's backend.
 *
 * The core knows no backend by name: any NAME.so on the backend search
 * path (cua__module_dirs()) that exports the backend entry is the backend
 * NAME. `backend = NAME` (or a path) loads that module; `backend = auto`
 * scans the path and tries every backend in decreasing declared priority
 * (cua_backend_descriptor::priority), skipping those whose create() fails
 * and never trying those with a negative priority. Every [backend.NAME]
 * section is checked against the schema of the backend of that name,
 * whether or not it is the one opened, as [policy.NAME] sections are.
 *
 * Runs once, in cua_runtime_create_ex(), on the creating thread, before
 * the runtime has other threads: no lock is needed or taken. The only state
 * written is the runtime's backend fields (rt->bmod, be, bst, bparams,
 * nbparams, bhost, host_exec), read-only afterwards.
 *
 * Also here: cua__waiting(), which counts the program threads blocked in a
 * wait and tells the backend (waited(), ABI 1.10) under rt->waiters_mu.
 */
#include "config.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void b_log(void *core, cua_log_level level, const char *fmt, ...) {
  cua_runtime *rt = core;
  /* Lines that would not be printed are not formatted. */
  if (level > CUA_LOG_WARN && !cua__debug())
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "cuasync: %s: %s\n", rt->be ? rt->be->name : "backend", line);
}

static uint64_t b_now(void *core) {
  return cua__rt_now((cua_runtime *)core);
}

/* ABI 1.8: the program waits, and every decided command was applied. */
static int b_quiescent(void *core) {
  cua_runtime *rt = core;
  if (rt->vclock == NULL || atomic_load(&rt->executing) != 0)
    return 0;
  return atomic_load(&rt->vblocked) > 0 ||
         (atomic_load(&rt->vpolls) > 0 &&
          rt->vclock(rt->bst) == atomic_load(&rt->vpoll_clock));
}

/* The backend's allocations and threads go through the core's fault
 * injection points (cua__malloc(), cua__pthread_create()), so that
 * tests/check_faults.c fails them as it fails the core's own. */
static void *b_alloc(void *core, size_t bytes, size_t align) {
  (void)core;
  if (align <= _Alignof(max_align_t))
    return cua__malloc(bytes);
  if (cua__fault(CUA__FAULT_ALLOC))
    return NULL;
  void *p = NULL;
  return posix_memalign(&p, align, bytes ? bytes : 1) == 0 ? p : NULL;
}

static void b_free(void *core, void *ptr) {
  (void)core;
  free(ptr);
}

/* ABI 1.7: device times measured after the fact, to the observers. */
static void b_op_times(void *core, uint64_t op, uint64_t start_ns,
                       uint64_t end_ns) {
  cua__obs_times(core, op, start_ns, end_ns);
}

static int b_thread_create(void *core, pthread_t *thread,
                           const pthread_attr_t *attr, void *(*fn)(void *),
                           void *arg) {
  (void)core;
  return cua__pthread_create(thread, attr, fn, arg);
}

/* Where a configuration error about the backend points: the line of
 * `backend =`, or just the origin when the name was defaulted. */
static void backend_where(const cua__config *cfg, char *buf, size_t len) {
  if (cfg->backend_line > 0)
    snprintf(buf, len, "%s:%d: backend = %s: ", cfg->origin, cfg->backend_line,
             cfg->backend);
  else
    snprintf(buf, len, "backend %s: ", cfg->backend);
}

/* Appends to the message in @p buf; truncates, never overflows. */
static void msg_add(char *buf, size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void msg_add(char *buf, size_t len, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n + 1 >= len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - n, fmt, ap);
  va_end(ap);
}

/* The backends on the search path, for `backend = auto` and for messages:
 * the first good module of each name, as a load by name would pick it. */
typedef struct found_backend {
  char *name;
  char *path;
  int priority;
} found_backend;

typedef struct backend_list {
  found_backend *v;
  size_t n, cap;
  int nomem;
  /* Files that could not be loaded (out of file descriptors, a library
   * missing...): how many, and the first one's reason, for a message
   * saying that no backend was found. */
  size_t nfailed;
  char failed[512];
} backend_list;

static void on_backend_found(const cua__module_report *r, void *arg) {
  backend_list *l = arg;
  if (r->status != 0 && l->nfailed++ == 0)
    snprintf(l->failed, sizeof l->failed, "%s: %s", r->path,
             r->message ? r->message : cua_strerror(r->status));
  if (r->status != 0 || l->nomem)
    return;
  const cua_backend_descriptor *d = r->module->desc.backend;
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i].name, d->name) == 0)
      return;
  if (cua__grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
    l->nomem = 1;
    return;
  }
  found_backend *f = &l->v[l->n];
  f->name = cua__strdup(d->name);
  f->path = cua__strdup(r->path);
  f->priority = cua__backend_priority(d);
  if (f->name == NULL || f->path == NULL) {
    free(f->name);
    free(f->path);
    l->nomem = 1;
    return;
  }
  l->n++;
}

/* Decreasing priority, then by name, so that the order of `auto` does not
 * depend on the order of the directories. */
static int cmp_found(const void *a, const void *b) {
  const found_backend *x = a, *y = b;
  if (x->priority != y->priority)
    return x->priority > y->priority ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void backends_free(backend_list *l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->v[i].name);
    free(l->v[i].path);
  }
  free(l->v);
  memset(l, 0, sizeof *l);
}

/* Every backend module on the search path, sorted as `auto` tries them.
 * Returns 0 or CUA_ERR_NOMEM. */
static int find_backends(const cua_runtime *rt, backend_list *l) {
  memset(l, 0, sizeof *l);
  cua__module_scan(CUA__MODULE_BACKEND, NULL, 0, rt->ignore_env,
                   on_backend_found, l);
  if (l->nomem) {
    backends_free(l);
    return CUA_ERR_NOMEM;
  }
  if (l->n > 1)
    qsort(l->v, l->n, sizeof *l->v, cmp_found);
  return 0;
}

/* "cuda, host, ..." or "none", for messages about an unknown name. */
static void backend_names(const cua_runtime *rt, char *buf, size_t len) {
  backend_list l;
  buf[0] = '\0';
  if (find_backends(rt, &l) != 0) {
    snprintf(buf, len, "(out of memory listing them)");
    return;
  }
  if (l.n == 0)
    snprintf(buf, len, "none");
  for (size_t i = 0; i < l.n; i++)
    msg_add(buf, len, "%s%s", i > 0 ? ", " : "", l.v[i].name);
  backends_free(&l);
}

static int is_config_error(int rc) {
  return rc <= CUA_ERR_CONFIG_NOT_FOUND && rc >= CUA_ERR_CONFIG_DUPLICATE_KEY;
}

/* The line of the configuration that a backend's configuration error
 * @p msg is about, when it starts "[SECTION] KEY:" (as cuasync-backend(7)
 * asks), KEY given in @p section; else 0. A value the core cannot check
 * (a string the backend parses) is then cited as the core's own errors
 * are. */
static int key_line(const cua__config *cfg, const char *section,
                    const char *msg) {
  size_t sl = strlen(section);
  if (msg[0] != '[' || strncmp(msg + 1, section, sl) != 0 ||
      strncmp(msg + 1 + sl, "] ", 2) != 0)
    return 0;
  const char *key = msg + sl + 3, *colon = strchr(key, ':');
  const cua__section *sec = cua__config_section(cfg, section);
  for (size_t i = 0; colon != NULL && sec != NULL && i < sec->nkv; i++)
    if (strlen(sec->kv[i].key) == (size_t)(colon - key) &&
        strncmp(sec->kv[i].key, key, (size_t)(colon - key)) == 0)
      return sec->kv[i].line;
  return 0;
}

/* Opens backend @p name (a name or a path). Fails with the loader's code
 * (CUA_ERR_MODULE_NOT_FOUND...), a CUA_ERR_CONFIG_* code for its
 * [backend.NAME] section, or the code of its create() (CUA_ERR_NO_DEVICE
 * when it has no usable device, so that `backend = auto` moves on), with
 * the reason in @p err. */
static int open_backend(cua_runtime *rt, const char *name, char *err,
                        size_t errlen) {
  cua__module *mod = NULL;
  int rc = cua__module_load(&mod, CUA__MODULE_BACKEND, name, NULL, 0,
                            rt->ignore_env, err, errlen);
  if (rc)
    return rc;
  const cua_backend_descriptor *d = mod->desc.backend;
  /* A backend loaded by path is configured from the section of the name
   * it declares, as a policy is. */
  char section[256];
  snprintf(section, sizeof section, "backend.%s", d->name);
  cua_param_value *params = NULL;
  rc = cua__config_params(rt->cfg, section, d->params, d->nparams, &params, err,
                          errlen);
  if (rc) {
    cua__module_unload(mod);
    return rc;
  }
  rt->bhost.abi_major = CUA_BACKEND_ABI_MAJOR;
  rt->bhost.abi_minor = CUA_BACKEND_ABI_MINOR;
  rt->bhost.size = sizeof rt->bhost;
  rt->bhost.core = rt;
  rt->bhost.log = b_log;
  rt->bhost.now_ns = b_now;
  rt->bhost.alloc = b_alloc;
  rt->bhost.free = b_free;
  rt->bhost.thread_create = b_thread_create;
  rt->bhost.op_times = b_op_times;
  rt->bhost.quiescent = b_quiescent;
  cua_backend_err berr = {{0}};
  void *st = NULL;
  rc = d->create(&rt->bhost, params, rt->cfg->devices, (int)rt->cfg->ndevices,
                 &st, &berr);
  if (rc) {
    char code[160];
    int line = key_line(rt->cfg, section, berr.msg);
    if (is_config_error(rc) && line > 0)
      snprintf(err, errlen, "%s:%d: %s", rt->cfg->origin, line, berr.msg);
    else
      snprintf(err, errlen, "backend '%s' (%s): create() failed with %s: %s",
               d->name, mod->path,
               cua__module_code(rc, "create()", code, sizeof code),
               berr.msg[0] ? berr.msg : cua_strerror(rc));
    cua__config_params_free(params, d->nparams);
    cua__module_unload(mod);
    return rc;
  }
  if (d->device_count(st) <= 0) {
    snprintf(err, errlen, "backend '%s' (%s) has no device", d->name,
             mod->path);
    d->destroy(st);
    cua__config_params_free(params, d->nparams);
    cua__module_unload(mod);
    return CUA_ERR_NO_DEVICE;
  }
  rt->bmod = mod;
  rt->be = d;
  rt->bst = st;
  if (d->size >=
      offsetof(cua_backend_descriptor, clock_ns) + sizeof d->clock_ns)
    rt->vclock = d->clock_ns;
  if (d->size >= offsetof(cua_backend_descriptor, changed) + sizeof d->changed)
    rt->be_changed = d->changed;
  if (d->size >= offsetof(cua_backend_descriptor, waited) + sizeof d->waited)
    rt->be_waited = d->waited;
  if (rt->vclock != NULL &&
      d->size >= offsetof(cua_backend_descriptor, round) + sizeof d->round)
    rt->be_round = d->round;
  rt->bparams = params;
  rt->nbparams = d->nparams;
  rt->host_exec = (d->flags & CUA_BACKEND_HOST_EXEC) != 0;
  return 0;
}

int cua__waiting(cua_runtime *rt, int delta) {
  if (rt->be_waited == NULL)
    return 0;
  pthread_mutex_lock(&rt->waiters_mu);
  int was = rt->nwaiters;
  rt->nwaiters += delta;
  if (was == 0 && rt->nwaiters != 0)
    rt->waiters_spin = rt->be_waited(rt->bst, 1) != 0;
  else if (was != 0 && rt->nwaiters == 0)
    (void)rt->be_waited(rt->bst, 0);
  int spin = delta > 0 && rt->waiters_spin;
  pthread_mutex_unlock(&rt->waiters_mu);
  return spin;
}

/* backend = auto: every backend on the path with a priority of 0 or more,
 * highest first; the first that opens is used. One that fails to open (no
 * device, no driver, a library missing) is skipped, saying why under
 * $CUASYNC_DEBUG; a bad [backend.NAME] section is an error, not a reason
 * to move on. */
static int choose_auto(cua_runtime *rt, char *err, size_t errlen) {
  backend_list l;
  char one[CUA__ERRLEN], where[512];
  int rc = find_backends(rt, &l);
  if (rc)
    return cua__fail(NULL, rc, "out of host memory");
  backend_where(rt->cfg, where, sizeof where);
  snprintf(err, errlen, "%sno backend opened:", where);
  int tried = 0, bad_device = 0, no_device = 0;
  for (size_t i = 0; i < l.n; i++) {
    if (l.v[i].priority < 0)
      continue;
    tried++;
    rc = open_backend(rt, l.v[i].name, one, sizeof one);
    if (rc == 0) {
      backends_free(&l);
      return 0;
    }
    if (is_config_error(rc)) {
      backends_free(&l);
      return cua__fail(NULL, rc, "%s", one);
    }
    bad_device += rc == CUA_ERR_BAD_DEVICE;
    no_device += rc == CUA_ERR_NO_DEVICE;
    if (cua__debug())
      fprintf(stderr, "cuasync: backend auto: skipping %s: %s\n", l.v[i].name,
              one);
    msg_add(err, errlen, "%s %s", tried > 1 ? ";" : "", one);
  }
  if (tried == 0) {
    char dirs[CUA__ERRLEN] = "", unread[CUA__ERRLEN] = "";
    size_t nd = 0;
    char **d =
        cua__module_dirs(CUA__MODULE_BACKEND, NULL, 0, rt->ignore_env, &nd);
    for (size_t i = 0; i < nd; i++) {
      msg_add(dirs, sizeof dirs, "%s%s", i ? ", " : "", d[i]);
      /* A folder that is there but cannot be read (out of file
       * descriptors...) is no folder without backends. */
      DIR *dh = opendir(d[i]);
      if (dh != NULL)
        closedir(dh);
      else if (errno != ENOENT && errno != ENOTDIR)
        msg_add(unread, sizeof unread, "; %s cannot be read: %s", d[i],
                strerror(errno));
    }
    cua__strv_free(d, nd);
    char failed[640] = "";
    if (l.nfailed > 0)
      snprintf(failed, sizeof failed,
               "; %zu module file%s could not be loaded, the first %s",
               l.nfailed, l.nfailed == 1 ? "" : "s", l.failed);
    backends_free(&l);
    return cua__fail(NULL, CUA_ERR_NO_DEVICE,
                     "%sno backend module found for auto; searched: %s%s%s",
                     where, dirs, unread, failed);
  }
  backends_free(&l);
  /* A device that the backends with devices lack (the others have none):
   * the line that named it, with its code. */
  if (bad_device > 0 && bad_device + no_device == tried &&
      rt->cfg->ndevices > 0 && rt->cfg->devices_line > 0)
    return cua__fail(NULL, CUA_ERR_BAD_DEVICE, "%s:%d: devices: %s",
                     rt->cfg->origin, rt->cfg->devices_line, err);
  return cua__fail(NULL, CUA_ERR_NO_DEVICE, "%s", err);
}

static int choose_backend(cua_runtime *rt) {
  char err[CUA__ERRLEN], where[512];
  const char *want = rt->cfg->backend ? rt->cfg->backend : "auto";
  if (strcmp(want, "auto") == 0)
    return choose_auto(rt, err, sizeof err);
  int rc = open_backend(rt, want, err, sizeof err);
  if (rc == 0)
    return 0;
  if (is_config_error(rc))
    return cua__fail(NULL, rc, "%s", err);
  backend_where(rt->cfg, where, sizeof where);
  /* A device the backend lacks: the line that named it. */
  if (rc == CUA_ERR_BAD_DEVICE && rt->cfg->ndevices > 0 &&
      rt->cfg->devices_line > 0)
    return cua__fail(NULL, rc, "%s:%d: devices: %s", rt->cfg->origin,
                     rt->cfg->devices_line, err);
  if (rc == CUA_ERR_MODULE_NOT_FOUND) {
    char names[1024];
    backend_names(rt, names, sizeof names);
    return cua__fail(NULL, rc,
                     "%sno backend named '%s' (backends found: %s): %s", where,
                     want, names, err);
  }
  return cua__fail(NULL, rc, "%s%s", where, err);
}

/* Every [backend.NAME] section must name a backend on the search path, and
 * its keys must fit that backend's schema, whether or not it is the one in
 * use, as for policies. The backend in use had its section checked when it
 * opened. */
static int check_backend_sections(cua_runtime *rt) {
  const cua__config *cfg = rt->cfg;
  for (size_t i = 0; i < cfg->nsections; i++) {
    const cua__section *sec = &cfg->sections[i];
    if (strncmp(sec->name, "backend.", 8) != 0)
      continue;
    const char *name = sec->name + 8;
    if (rt->be != NULL && strcmp(rt->be->name, name) == 0)
      continue;
    char err[CUA__ERRLEN];
    cua__module *mod = NULL;
    int rc = cua__module_load(&mod, CUA__MODULE_BACKEND, name, NULL, 0,
                              rt->ignore_env, err, sizeof err);
    if (rc == CUA_ERR_MODULE_NOT_FOUND) {
      char names[1024];
      backend_names(rt, names, sizeof names);
      return cua__fail(NULL, CUA_ERR_CONFIG_UNKNOWN_SECTION,
                       "%s:%d: [%s]: no backend named '%s' (backends found: "
                       "%s): %s",
                       cfg->origin, sec->line, sec->name, name, names, err);
    }
    if (rc)
      return cua__fail(NULL, rc, "%s:%d: [%s]: %s", cfg->origin, sec->line,
                       sec->name, err);
    const cua_backend_descriptor *d = mod->desc.backend;
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

/* Opens the configured backend, then checks the other [backend.NAME]
 * sections. */
int cua__backend_open(cua_runtime *rt) {
  int rc = choose_backend(rt);
  return rc ? rc : check_backend_sections(rt);
}
