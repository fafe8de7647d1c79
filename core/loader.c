/*
 * core/loader.c: finding, loading and checking policy and backend modules.
 *
 * A module is a shared object exporting one descriptor. Loading it is a
 * ladder of checks (dlopen, entry symbol, ABI major, ABI minor, size, name,
 * required operations), each refusing the file with its own code and a
 * message that names the file and the reason; nothing in the module is
 * called. A refused file does not end a search by name: a later directory
 * may hold a good module of the same name, and the final message lists
 * every file refused, so that a stale build earlier in the path is visible
 * rather than silently skipped. Where the files are looked for (the search
 * path, scans) and the policies a program registers are modsearch.c's;
 * the checks of a descriptor's pointers and names, modcheck.c's.
 *
 * Runs on the calling thread (creating or destroying a runtime, a tool's
 * scan) with no core lock; dl_mu, a leaf, around dlopen() and the reading
 * of the link map it made (runtimes opened on several threads at once).
 */
#include "config.h"

#include "conf.h"
#include "internal.h"
#include "loader.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/*
 * The smallest descriptor each ABI accepts: the x.0 descriptor, which ends
 * with submission_end() for policies (ABI 2.0) and module_function() for
 * backends (ABI 1.0). Fields appended later are absent from older modules
 * (size tells), so these sizes must stay what they are when the structs
 * grow; so must the element sizes of ABI 2.0 below.
 */
#define POLICY_DESC_MIN_SIZE                                                   \
  (offsetof(cua_policy_descriptor, submission_end) +                           \
   sizeof(((cua_policy_descriptor *)0)->submission_end))
#define BACKEND_DESC_MIN_SIZE                                                  \
  (offsetof(cua_backend_descriptor, module_function) +                         \
   sizeof(((cua_backend_descriptor *)0)->module_function))

#define OBSERVER_DESC_MIN_SIZE                                                 \
  (offsetof(cua_observer_descriptor, flush) +                                  \
   sizeof(((cua_observer_descriptor *)0)->flush))

const kind_info cua__kinds[CUA__MODULE_KINDS] = {
    {"policy", CUA_POLICY_ENTRY_SYMBOL, "policies", CUA_POLICY_ABI_MAJOR,
     CUA_POLICY_ABI_MINOR, POLICY_DESC_MIN_SIZE},
    {"backend", CUA_BACKEND_ENTRY_SYMBOL, "backends", CUA_BACKEND_ABI_MAJOR,
     CUA_BACKEND_ABI_MINOR, BACKEND_DESC_MIN_SIZE},
    {"observer", CUA_OBSERVER_ENTRY_SYMBOL, "observers", CUA_OBSERVER_ABI_MAJOR,
     CUA_OBSERVER_ABI_MINOR, OBSERVER_DESC_MIN_SIZE},
};

/* Appends to a message already in @p err (truncating, never overflowing). */
static void add_err(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void add_err(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  size_t n;

  if (err == NULL || errlen == 0)
    return;
  n = strlen(err);
  if (n + 1 >= errlen)
    return;
  va_start(ap, fmt);
  vsnprintf(err + n, errlen - n, fmt, ap);
  va_end(ap);
}

char *cua__join_path(const char *dir, const char *name, const char *ext) {
  size_t dl = strlen(dir), nl = strlen(name), el = strlen(ext);
  char *p = cua__malloc(dl + 1 + nl + el + 1);

  if (p == NULL)
    return NULL;
  memcpy(p, dir, dl);
  p[dl] = '/';
  memcpy(p + dl + 1, name, nl);
  memcpy(p + dl + 1 + nl, ext, el + 1);
  return p;
}

size_t cua__so_stem(const char *name) {
  size_t n = strlen(name);

  return n > 3 && strcmp(name + n - 3, ".so") == 0 ? n - 3 : n;
}

int cua__names_file(const char *name) {
  return strchr(name, '/') != NULL || cua__so_stem(name) != strlen(name);
}

/* ------------------------------------------------------------------ */
/* Loading one file. */

/* The operations a descriptor must have, by kind; appends the names of the
 * missing ones to @p missing. Returns how many are missing. */
static int missing_ops(cua__module_kind kind, const void *desc, char *missing,
                       size_t len) {
  int n = 0;

  missing[0] = '\0';
#define CUA__REQUIRE(type, field)                                              \
  do {                                                                         \
    if (((const type *)desc)->field == NULL) {                                 \
      add_err(missing, len, "%s%s()", n > 0 ? ", " : "", #field);              \
      n++;                                                                     \
    }                                                                          \
  } while (0)
  if (kind == CUA__MODULE_POLICY) {
    CUA__REQUIRE(cua_policy_descriptor, create);
    CUA__REQUIRE(cua_policy_descriptor, place);
  } else if (kind == CUA__MODULE_OBSERVER) {
    CUA__REQUIRE(cua_observer_descriptor, create);
    if (!(((const cua_observer_descriptor *)desc)->flags &
          CUA_OBSERVER_NO_RECORDS))
      CUA__REQUIRE(cua_observer_descriptor, record);
  } else {
    CUA__REQUIRE(cua_backend_descriptor, create);
    CUA__REQUIRE(cua_backend_descriptor, destroy);
    CUA__REQUIRE(cua_backend_descriptor, device_count);
    CUA__REQUIRE(cua_backend_descriptor, device_info);
    CUA__REQUIRE(cua_backend_descriptor, stream_create);
    CUA__REQUIRE(cua_backend_descriptor, stream_destroy);
    CUA__REQUIRE(cua_backend_descriptor, stream_native);
    CUA__REQUIRE(cua_backend_descriptor, event_create);
    CUA__REQUIRE(cua_backend_descriptor, event_destroy);
    CUA__REQUIRE(cua_backend_descriptor, event_record);
    CUA__REQUIRE(cua_backend_descriptor, stream_wait_event);
    CUA__REQUIRE(cua_backend_descriptor, event_query);
    CUA__REQUIRE(cua_backend_descriptor, mem_alloc);
    CUA__REQUIRE(cua_backend_descriptor, mem_free);
    CUA__REQUIRE(cua_backend_descriptor, launch);
    CUA__REQUIRE(cua_backend_descriptor, mark);
    CUA__REQUIRE(cua_backend_descriptor, progress);
    CUA__REQUIRE(cua_backend_descriptor, poll_error);
    CUA__REQUIRE(cua_backend_descriptor, wait);
  }
#undef CUA__REQUIRE
  return n;
}

/* The element sizes of policy ABI 2.0: a descriptor may declare larger
 * ones (a later minor version), never smaller. They stay what they are
 * when the structs grow. */
#define SPEC_MIN_SIZE                                                          \
  (offsetof(cua_param_spec, flags) + sizeof(((cua_param_spec *)0)->flags))
#define VALUE_MIN_SIZE                                                         \
  (offsetof(cua_param_value, count) + sizeof(((cua_param_value *)0)->count))
#define INPUT_MIN_SIZE                                                         \
  (offsetof(cua_op_input, bytes) + sizeof(((cua_op_input *)0)->bytes))
#define DAG_OP_MIN_SIZE                                                        \
  (offsetof(cua_dag_op, restrict_device) +                                     \
   sizeof(((cua_dag_op *)0)->restrict_device))
#define DAG_BUFFER_MIN_SIZE                                                    \
  (offsetof(cua_dag_buffer, device) + sizeof(((cua_dag_buffer *)0)->device))
#define RECORD_MIN_SIZE                                                        \
  (offsetof(cua_obs_record, inputs) + sizeof(((cua_obs_record *)0)->inputs))

/* The name and parameter schema (with its stride), which sit at the same
 * place in both descriptors; a backend's schema is a plain array. */
static void desc_name_params(cua__module_kind kind, const void *desc,
                             const char **name, const cua_param_spec **params,
                             size_t *nparams, size_t *stride) {
  if (kind == CUA__MODULE_POLICY) {
    const cua_policy_descriptor *d = desc;
    *name = d->name;
    *params = d->params;
    *nparams = d->nparams;
    *stride = d->param_spec_size;
  } else if (kind == CUA__MODULE_OBSERVER) {
    const cua_observer_descriptor *d = desc;
    *name = d->name;
    *params = d->params;
    *nparams = d->nparams;
    *stride = d->param_spec_size;
  } else {
    const cua_backend_descriptor *d = desc;
    *name = d->name;
    *params = d->params;
    *nparams = d->nparams;
    *stride = sizeof(cua_param_spec);
  }
}

/* An element size a descriptor declares: its field, the struct it is the
 * size of, where it sits, and the size of the ABI's first version. */
typedef struct size_field {
  const char *field, *type;
  size_t off, min;
} size_field;

static const size_field policy_sizes[] = {
    {"param_spec_size", "cua_param_spec",
     offsetof(cua_policy_descriptor, param_spec_size), SPEC_MIN_SIZE},
    {"param_value_size", "cua_param_value",
     offsetof(cua_policy_descriptor, param_value_size), VALUE_MIN_SIZE},
    {"input_size", "cua_op_input", offsetof(cua_policy_descriptor, input_size),
     INPUT_MIN_SIZE},
    {"dag_op_size", "cua_dag_op", offsetof(cua_policy_descriptor, dag_op_size),
     DAG_OP_MIN_SIZE},
    {"dag_buffer_size", "cua_dag_buffer",
     offsetof(cua_policy_descriptor, dag_buffer_size), DAG_BUFFER_MIN_SIZE},
};

static const size_field observer_sizes[] = {
    {"param_spec_size", "cua_param_spec",
     offsetof(cua_observer_descriptor, param_spec_size), SPEC_MIN_SIZE},
    {"param_value_size", "cua_param_value",
     offsetof(cua_observer_descriptor, param_value_size), VALUE_MIN_SIZE},
    {"record_size", "cua_obs_record",
     offsetof(cua_observer_descriptor, record_size), RECORD_MIN_SIZE},
};

/* Checks the element sizes of a policy's or an observer's descriptor. */
static int check_strides(cua__module_kind kind, const char *path, const void *d,
                         char *err, size_t errlen) {
  int pol = kind == CUA__MODULE_POLICY;
  const size_field *f = pol ? policy_sizes : observer_sizes;
  size_t n = pol ? sizeof policy_sizes / sizeof policy_sizes[0]
                 : sizeof observer_sizes / sizeof observer_sizes[0];
  for (size_t i = 0; i < n; i++) {
    size_t v;
    memcpy(&v, (const char *)d + f[i].off, sizeof v);
    /* A size beyond a page is no element of any minor version: a
     * descriptor written without the define. */
    if (v < f[i].min || v > 4096) {
      cua__put_err(err, errlen,
                   "%s: the descriptor's %s is %zu; the %s ABI %u.0 %s has "
                   "%zu bytes (write the descriptor with %s, which sets it)",
                   path, f[i].field, v, cua__kinds[kind].word,
                   (unsigned)cua__kinds[kind].abi_major, f[i].type, f[i].min,
                   pol ? "CUA_POLICY_DEFINE or CUA_POLICY_INIT"
                       : "CUA_OBSERVER_DEFINE");
      return CUA_ERR_MODULE_BAD_SIZE;
    }
  }
  return 0;
}

/*
 * The checks of a descriptor at @p head once it is known to be readable
 * for @p symsize bytes (a module's, whose pointers are then checked
 * against @p map; or, with @p map NULL, a registered one, which lives in
 * the program): the ABI, the size, the name and schema, the operations.
 */
int cua__check_desc(cua__module_kind kind, const char *path,
                    const desc_head *head, size_t symsize, const mod_map *map,
                    const char *expect, char *err, size_t errlen) {
  const kind_info *k = &cua__kinds[kind];
  const cua_param_spec *params;
  const char *name;
  size_t nparams, stride, i;
  char missing[256];
  int rc;

  if (head->abi_major != k->abi_major) {
    cua__put_err(err, errlen,
                 "%s: built for %s ABI %u.%u, this core has %u.%u (the major "
                 "versions must be equal)%s",
                 path, k->word, (unsigned)head->abi_major,
                 (unsigned)head->abi_minor, (unsigned)k->abi_major,
                 (unsigned)k->abi_minor,
                 kind == CUA__MODULE_POLICY && head->abi_major == 1
                     ? ": rebuild it against these headers, with the "
                       "descriptor written as CUA_POLICY_DEFINE(.name = ..., "
                       ".place = ...) (cuasync-policy(7), ABI VERSIONS)"
                     : "");
    return CUA_ERR_MODULE_ABI_MAJOR;
  }
  if (head->abi_minor > k->abi_minor) {
    cua__put_err(err, errlen,
                 "%s: built for %s ABI %u.%u, this core has %u.%u (the module "
                 "is newer than the core)",
                 path, k->word, (unsigned)head->abi_major,
                 (unsigned)head->abi_minor, (unsigned)k->abi_major,
                 (unsigned)k->abi_minor);
    return CUA_ERR_MODULE_ABI_MINOR;
  }
  if (head->size < k->min_size) {
    cua__put_err(err, errlen,
                 "%s: descriptor size is %zu bytes, smaller than the %zu bytes "
                 "of the %s ABI %u.0 descriptor",
                 path, head->size, k->min_size, k->word,
                 (unsigned)k->abi_major);
    return CUA_ERR_MODULE_BAD_SIZE;
  }
  if (head->size > symsize) {
    cua__put_err(
        err, errlen,
        "%s: the descriptor says it has %zu bytes, but the %s symbol has "
        "only %zu",
        path, head->size, k->symbol, symsize);
    return CUA_ERR_MODULE_BAD_SIZE;
  }
  if (kind != CUA__MODULE_BACKEND &&
      (rc = check_strides(kind, path, head, err, errlen)) != 0)
    return rc;
  if (map != NULL &&
      (rc = cua__modcheck_pointers(kind, k, path, head, head->size, map, err,
                                   errlen)) != 0)
    return rc;
  desc_name_params(kind, head, &name, &params, &nparams, &stride);
  if (name == NULL) {
    cua__put_err(err, errlen, "%s: the %s descriptor has no name", path,
                 k->word);
    return CUA_ERR_MODULE_INCOMPLETE;
  }
  rc = cua__modcheck_names(k, path, name, params, nparams, stride, err, errlen);
  if (rc != 0)
    return rc;
  if (expect != NULL && strcmp(name, expect) != 0) {
    cua__put_err(err, errlen,
                 "%s: the descriptor is named '%s', not '%s' as the file is",
                 path, name, expect);
    return CUA_ERR_MODULE_NAME_MISMATCH;
  }
  if (missing_ops(kind, head, missing, sizeof missing) > 0) {
    cua__put_err(err, errlen,
                 "%s: the %s descriptor lacks required operations: %s", path,
                 k->word, missing);
    return CUA_ERR_MODULE_INCOMPLETE;
  }
  if (kind == CUA__MODULE_POLICY) {
    /* Pull mode (2.1) is push() and pop() together. */
    const cua_policy_descriptor *d = (const void *)head;
    int push =
        d->size >= offsetof(cua_policy_descriptor, push) + sizeof d->push &&
        d->push != NULL;
    int pop = d->size >= offsetof(cua_policy_descriptor, pop) + sizeof d->pop &&
              d->pop != NULL;
    if (push != pop) {
      cua__put_err(err, errlen,
                   "%s: the policy descriptor has %s() but not %s(): pull "
                   "mode needs both (cuasync-policy(7))",
                   path, push ? "push" : "pop", push ? "pop" : "push");
      return CUA_ERR_MODULE_INCOMPLETE;
    }
  }
  /* The schema is read by the configuration code without further checks
   * of its shape, so an impossible one is refused here. */
  if (nparams > 0 && params == NULL) {
    cua__put_err(err, errlen,
                 "%s: the descriptor has %zu parameters but no "
                 "params array",
                 path, nparams);
    return CUA_ERR_MODULE_INCOMPLETE;
  }
  for (i = 0; i < nparams; i++) {
    const char *pname = cua__spec_at(params, stride, i)->name;
    if (pname == NULL) {
      cua__put_err(err, errlen,
                   "%s: parameter %zu of the descriptor has no name", path, i);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
    /* A parameter is set by a line "name = value": one that no line can
     * give would keep its default for ever, and a section setting it
     * would be told the key is unknown. */
    if (!cua__conf_key_ok(pname)) {
      cua__put_err(err, errlen,
                   "%s: parameter %zu of the descriptor is named '%s', which "
                   "no INI line can set (an INI key is not empty, has no "
                   "blank at either end, no '=' or ':', no ';' after a "
                   "blank, and does not start with ';', '#' or '[')",
                   path, i, pname);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
  }
  return cua__params_check_schema(path, params, nparams, stride, err, errlen);
}

/* A policy's and an observer's descriptors are laid out alike up to
 * param_value_size, so that cua__normalise() reads either through the policy's
 * view. */
_Static_assert(offsetof(cua_policy_descriptor, params) ==
                       offsetof(cua_observer_descriptor, params) &&
                   offsetof(cua_policy_descriptor, nparams) ==
                       offsetof(cua_observer_descriptor, nparams) &&
                   offsetof(cua_policy_descriptor, param_spec_size) ==
                       offsetof(cua_observer_descriptor, param_spec_size),
               "policy and observer descriptors differ in their schema");

/*
 * A policy's or an observer's descriptor whose schema has another element
 * size than the core's is copied, with its schema, into memory of the
 * module's (so the configuration code reads plain arrays), and one smaller
 * than the core's (an earlier minor version) into a descriptor of the
 * core's size; other descriptors, and backends', are used in place.
 * Returns 0 or CUA_ERR_NOMEM.
 */
int cua__normalise(cua__module *mod, const void *head) {
  const cua_policy_descriptor *d = head; /* or an observer's, alike */
  int pol = mod->kind == CUA__MODULE_POLICY;
  if (mod->kind == CUA__MODULE_BACKEND) {
    mod->desc.backend = head;
    return 0;
  }
  size_t core =
      pol ? sizeof(cua_policy_descriptor) : sizeof(cua_observer_descriptor);
  size_t ops = pol ? offsetof(cua_policy_descriptor, create)
                   : offsetof(cua_observer_descriptor, create);
  int restride = d->param_spec_size != sizeof(cua_param_spec) && d->nparams;
  void *copy = NULL;
  cua_param_spec *specs = NULL;
  if (restride || d->size < core) {
    /* A descriptor of an earlier minor version is copied too, so that the
     * fields it lacks read as absent (NULL), never past its end. */
    copy = cua__calloc(1, core);
    specs = restride ? cua__calloc(d->nparams, sizeof *specs) : NULL;
    if (copy == NULL || (restride && specs == NULL)) {
      free(copy);
      free(specs);
      return CUA_ERR_NOMEM;
    }
    /* Whole fields only: a size that ends inside an operation's pointer
     * leaves that operation absent. */
    size_t n = d->size < core ? d->size : core;
    if (n > ops)
      n -= (n - ops) % sizeof(void (*)(void));
    memcpy(copy, d, n);
    if (restride) {
      cua_policy_descriptor *c = copy;
      for (size_t i = 0; i < d->nparams; i++)
        memcpy(&specs[i], cua__spec_at(d->params, d->param_spec_size, i),
               sizeof *specs);
      c->params = specs;
      c->param_spec_size = sizeof *specs;
    }
  }
  mod->own_params = specs;
  if (pol) {
    mod->own_desc = copy;
    mod->desc.policy = copy != NULL ? copy : head;
  } else {
    mod->own_obs = copy;
    mod->desc.observer = copy != NULL ? copy : head;
  }
  return 0;
}

/* Runtimes opened on several threads at once load the same modules at
 * once: the dynamic loader serialises dlopen() itself, but the module's
 * link map and segments, which dlopen() of another thread wrote, are read
 * here (cua__modcheck_map()) under this lock too, so that the order is
 * one that every checker sees (ThreadSanitizer saw a race). A leaf lock,
 * held only around dlopen() and the reading of its link map. */
static pthread_mutex_t dl_mu = PTHREAD_MUTEX_INITIALIZER;

void cua__loader_fork(int take) {
  if (take)
    pthread_mutex_lock(&dl_mu);
  else
    pthread_mutex_unlock(&dl_mu);
}

/*
 * Loads and checks @p path as a module of @p kind; @p expect is the name it
 * must declare (NULL: any). On failure writes "PATH: reason" into @p err
 * and returns the code; *other is then set to 1 when the file has no entry
 * symbol of @p kind but has the other kind's (a backend met in a policy
 * directory), which a scan skips without a word.
 */
int cua__load_file(cua__module **out, cua__module_kind kind, const char *path,
                   const char *expect, int *other, char *err, size_t errlen) {
  const kind_info *k = &cua__kinds[kind];
  cua__module *mod = NULL;
  const desc_head *head;
  mod_map map;
  size_t symsize = 0;
  void *dl;
  int rc;

  *out = NULL;
  if (other != NULL)
    *other = 0;
  (void)dlerror(); /* clears an older message */
  /* Modules are never unmapped: the CUDA runtime that the cuda backend
   * links registers exit handlers and threads that must not outlive its
   * code, and any file may be that one (a scan for policies opens backends
   * too). A module loaded once stays mapped for the life of the process;
   * dlclose() still drops the reference. */
  cua__fork_watch();
  pthread_mutex_lock(&dl_mu);
  dl = cua__dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (dl == NULL) {
    const char *why = cua__dlerror();
    cua__put_err(err, errlen, "%s: dlopen failed: %s", path,
                 why != NULL ? why : "unknown reason");
    pthread_mutex_unlock(&dl_mu);
    return CUA_ERR_MODULE_DLOPEN;
  }
  pthread_mutex_unlock(&dl_mu);
  head = dlsym(dl, k->symbol);
  if (head == NULL) {
    for (int o = 0; other != NULL && o < CUA__MODULE_KINDS; o++)
      if (o != (int)kind && dlsym(dl, cua__kinds[o].symbol) != NULL)
        *other = 1;
    cua__put_err(err, errlen, "%s: no %s symbol: not %s %s module", path,
                 k->symbol, k->word[0] == 'o' ? "an" : "a", k->word);
    rc = CUA_ERR_MODULE_NO_ENTRY;
    goto fail;
  }
  pthread_mutex_lock(&dl_mu);
  int mapped = cua__modcheck_map(dl, &map);
  pthread_mutex_unlock(&dl_mu);
  if (mapped != 0) {
    cua__put_err(err, errlen, "%s: cannot find the module's loaded segments",
                 path);
    rc = CUA_ERR_MODULE_DLOPEN;
    goto fail;
  }
  rc = cua__modcheck_entry(k, path, head, &map, &symsize, err, errlen);
  if (rc != 0)
    goto fail;
  rc = cua__check_desc(kind, path, head, symsize, &map, expect, err, errlen);
  if (rc != 0)
    goto fail;

  mod = cua__calloc(1, sizeof *mod);
  if (mod == NULL || (mod->path = cua__strdup(path)) == NULL) {
    cua__put_err(err, errlen, "%s: out of memory", path);
    rc = CUA_ERR_NOMEM;
    goto fail;
  }
  mod->kind = kind;
  mod->dl = dl;
  if (cua__normalise(mod, head) != 0) {
    cua__put_err(err, errlen, "%s: out of memory", path);
    rc = CUA_ERR_NOMEM;
    goto fail;
  }
  *out = mod;
  return 0;

fail:
  if (mod != NULL)
    free(mod->path);
  free(mod);
  dlclose(dl);
  return rc;
}

int cua__backend_priority(const cua_backend_descriptor *d) {
  if (d == NULL ||
      d->size < offsetof(cua_backend_descriptor, priority) + sizeof d->priority)
    return CUA_BACKEND_PRIORITY_DEFAULT;
  return d->priority;
}

void cua__module_unload(cua__module *mod) {
  if (mod == NULL)
    return;
  if (mod->dl != NULL)
    dlclose(mod->dl);
  free(mod->own_params);
  free(mod->own_desc);
  free(mod->own_obs);
  free(mod->path);
  free(mod);
}

/* 1 if @p path names something (a file, a dangling link does not count). */
static int exists(const char *path) {
  struct stat st;

  return stat(path, &st) == 0;
}

/* Loads a name that is a path. A bare "x.so" means the file in the working
 * directory: given to dlopen() as is, it would be looked up in the
 * library search path instead. */
static int load_path(cua__module **out, cua__module_kind kind, const char *name,
                     char *err, size_t errlen) {
  char *path = NULL;
  int rc;

  if (strchr(name, '/') == NULL) {
    path = cua__join_path(".", name, "");
    if (path == NULL) {
      cua__put_err(err, errlen, "%s: out of memory", name);
      return CUA_ERR_NOMEM;
    }
  }
  if (!exists(path != NULL ? path : name)) {
    cua__put_err(err, errlen, "%s: cannot load %s module: %s", name,
                 cua__kinds[kind].word, strerror(errno));
    rc = CUA_ERR_MODULE_NOT_FOUND;
  } else {
    rc = cua__load_file(out, kind, path != NULL ? path : name, NULL, NULL, err,
                        errlen);
  }
  free(path);
  return rc;
}

int cua__module_load(cua__module **out, cua__module_kind kind, const char *name,
                     char *const *extra, size_t nextra, int ignore_env,
                     char *err, size_t errlen) {
  const kind_info *k;
  char **dirs = NULL, *file = NULL, *refusals = NULL, one[1024];
  size_t ndirs = 0, i, rlen = 0;
  int rc, first = 0, found = 0;

  if (out == NULL)
    return CUA_ERR_INVAL;
  *out = NULL;
  if (err != NULL && errlen > 0)
    err[0] = '\0';
  if (name == NULL || *name == '\0' || (unsigned)kind >= CUA__MODULE_KINDS) {
    cua__put_err(err, errlen, "no module name given");
    return CUA_ERR_INVAL;
  }
  k = &cua__kinds[kind];
  if (kind == CUA__MODULE_POLICY &&
      (rc = cua__load_registered(out, name, err, errlen)) <= 0)
    return rc;
  if (cua__names_file(name))
    return load_path(out, kind, name, err, errlen);

  dirs = cua__module_dirs(kind, extra, nextra, ignore_env, &ndirs);
  if (dirs == NULL) {
    cua__put_err(err, errlen, "out of memory");
    return CUA_ERR_NOMEM;
  }
  /* Each refusal is kept whole in its own buffer and collected, so that
   * the caller's buffer can receive a summary in one go at the end. */
  refusals = cua__malloc(4096);
  if (refusals == NULL)
    goto nomem;
  refusals[0] = '\0';
  for (i = 0; i < ndirs; i++) {
    file = cua__join_path(dirs[i], name, ".so");
    if (file == NULL)
      goto nomem;
    if (!exists(file)) {
      free(file);
      file = NULL;
      continue;
    }
    found++;
    rc = cua__load_file(out, kind, file, name, NULL, one, sizeof one);
    free(file);
    file = NULL;
    if (rc == 0)
      goto done;
    if (first == 0)
      first = rc;
    rlen += (size_t)snprintf(refusals + rlen, rlen < 4096 ? 4096 - rlen : 0,
                             "%s%s", rlen > 0 ? "; " : "", one);
    if (rlen >= 4096)
      rlen = 4095;
  }

  if (found == 0) {
    cua__put_err(err, errlen,
                 "%s module '%s' not found: no %s.so in: ", k->word, name,
                 name);
    rc = CUA_ERR_MODULE_NOT_FOUND;
  } else {
    cua__put_err(err, errlen,
                 "%s module '%s' could not be loaded: %s; searched: ", k->word,
                 name, refusals);
    rc = first;
  }
  for (i = 0; i < ndirs; i++)
    add_err(err, errlen, "%s%s", i > 0 ? ", " : "", dirs[i]);
  if (found == 0 && err != NULL && kind != CUA__MODULE_BACKEND) {
    /* A misspelt name: say which there are, by the files' symbols, without
     * loading them (this may run under rt->lock). A backend's message
     * lists them already (backend.c). */
    add_err(err, errlen, " (%s modules found: ", k->word);
    cua__module_names(kind, dirs, ndirs, err, errlen);
    add_err(err, errlen, ")");
  }
  goto done;

nomem:
  cua__put_err(err, errlen, "out of memory");
  rc = CUA_ERR_NOMEM;
done:
  if (*out != NULL)
    rc = 0;
  free(refusals);
  cua__strv_free(dirs, ndirs);
  return rc;
}
