/*
 * core/loader.h: finding and loading policy, backend and observer modules
 * (core/loader.c; the search path, registered policies and scans:
 * core/modsearch.c), internal.
 */
#ifndef CUA_CORE_LOADER_H
#define CUA_CORE_LOADER_H

#include <cuasync.h>
#include <cuasync/backend.h>
#include <cuasync/observer.h>
#include <cuasync/policy.h>

#include <stddef.h>

typedef enum cua__module_kind {
  CUA__MODULE_POLICY = 0,
  CUA__MODULE_BACKEND = 1,
  CUA__MODULE_OBSERVER = 2
} cua__module_kind;
#define CUA__MODULE_KINDS 3

/** A loaded, checked module. */
typedef struct cua__module {
  cua__module_kind kind;
  void *dl;   /* dlopen() handle */
  char *path; /* the file loaded */
  union {
    const cua_policy_descriptor *policy;
    const cua_backend_descriptor *backend;
    const cua_observer_descriptor *observer;
  } desc;
  /* A policy descriptor whose schema had another element size, copied
   * with its schema at the core's (desc.policy then points here). */
  cua_policy_descriptor *own_desc;
  cua_observer_descriptor *own_obs; /* the same for an observer */
  cua_param_spec *own_params;
} cua__module;

/* Element @p i of a schema of element size @p stride. */
static inline const cua_param_spec *cua__spec_at(const cua_param_spec *params,
                                                 size_t stride, size_t i) {
  return (const cua_param_spec *)(const void *)((const char *)params +
                                                i * stride);
}

/* cua_policy_register(): checks @p desc as the loader checks a module's
 * (but its pointers, which are the program's) and adds it to the
 * process's registry, where a policy name is looked up before the search
 * path. Returns 0, CUA_ERR_INVAL (no descriptor, a name taken), or the
 * loader's code, with the message in @p err. */
int cua__policy_register(const cua_policy_descriptor *desc, char *err,
                         size_t errlen);

/**
 * The directories searched for modules of @p kind, in order: @p extra
 * (the config's policy_path, for policies), then the ':'-separated entries
 * of $CUASYNC_MODULE_PATH (unless @p ignore_env), then the installed
 * CUA_PKGLIBDIR "/policies" or "/backends". Free with cua__strv_free().
 */
char **cua__module_dirs(cua__module_kind kind, char *const *extra,
                        size_t nextra, int ignore_env, size_t *ndirs);
void cua__strv_free(char **v, size_t n);

/**
 * Loads module @p name of @p kind. A policy registered with
 * cua_policy_register() under @p name comes first. A name containing '/'
 * (or ending in ".so") is a path, loaded as is; the descriptor's name is
 * then not compared. Otherwise each directory D of cua__module_dirs() is tried
 * in order with D/NAME.so; a file that exists but is refused does not stop the
 * search: the next directory is tried, and if none succeeds, the error is
 * the one of the first file refused (or CUA_ERR_MODULE_NOT_FOUND when no file
 * existed), and the message lists every file tried and why each was refused.
 *
 * Checks, in order, each with its own code (see policy.h): dlopen with
 * RTLD_NOW | RTLD_LOCAL (CUA_ERR_MODULE_DLOPEN, with dlerror()), the entry
 * symbol (CUA_ERR_MODULE_NO_ENTRY), that it is a data object
 * (CUA_ERR_MODULE_NO_ENTRY, saying what it is instead), of at least a
 * descriptor header's size, aligned, inside the module
 * (CUA_ERR_MODULE_BAD_SIZE), abi_major (CUA_ERR_MODULE_ABI_MAJOR,
 * naming the module's and the core's versions), abi_minor
 * (CUA_ERR_MODULE_ABI_MINOR, both versions), size at least the 1.0
 * descriptor's and at most the symbol's (CUA_ERR_MODULE_BAD_SIZE, both
 * sizes), every pointer of the descriptor inside the module's own loaded
 * segments (strings and the schema readable, operations executable;
 * CUA_ERR_MODULE_INCOMPLETE naming the field), a name that is not empty and
 * has no control characters (CUA_ERR_MODULE_INCOMPLETE), no parameter
 * named twice (CUA_ERR_MODULE_INCOMPLETE, naming both), name equal to
 * @p name (CUA_ERR_MODULE_NAME_MISMATCH, both names), required operations
 * present (CUA_ERR_MODULE_INCOMPLETE, naming the missing one). Nothing the
 * descriptor points to is read before it has been checked.
 * Does not call create(): the caller does.
 */
int cua__module_load(cua__module **out, cua__module_kind kind, const char *name,
                     char *const *extra, size_t nextra, int ignore_env,
                     char *err, size_t errlen);
void cua__module_unload(cua__module *mod);

/** The priority a backend declares for `backend = auto`
 * (cua_backend_descriptor::priority), or CUA_BACKEND_PRIORITY_DEFAULT for a
 * descriptor too short to have the field. */
int cua__backend_priority(const cua_backend_descriptor *d);

/** What cua__module_scan() reports for each *.so file of the search path. */
typedef struct cua__module_report {
  const char *path;
  const char *name;          /* file name without ".so" */
  int status;                /* 0 loaded and checked, else the error code */
  const char *message;       /* why it was refused (status != 0) */
  const cua__module *module; /* when status == 0; valid during callback */
  int shadowed;              /* 1 if an earlier directory has the same name */
} cua__module_report;

/** Appends to @p err the names of the modules of @p kind in @p dirs (and
 * the program's registered policies), each once, ", "-separated, or
 * "none": the files' dynamic symbols are read, nothing is loaded. */
void cua__module_names(cua__module_kind kind, char *const *dirs, size_t ndirs,
                       char *err, size_t errlen);

/** Tries every *.so in every directory of the search path (sorted by name
 * within a directory) and calls @p cb for each. */
void cua__module_scan(cua__module_kind kind, char *const *extra, size_t nextra,
                      int ignore_env,
                      void (*cb)(const cua__module_report *r, void *arg),
                      void *arg);

/* ------------------------------ loader.c, modcheck.c and modsearch.c */

/* The first fields of every descriptor, fixed for all ABI versions. */
typedef struct desc_head {
  uint32_t abi_major;
  uint32_t abi_minor;
  size_t size;
} desc_head;

/* What differs between the two kinds of module. */
typedef struct kind_info {
  const char *word;   /* "policy", "backend" or "observer", for messages */
  const char *symbol; /* the entry symbol */
  const char *subdir; /* under CUA_PKGLIBDIR */
  uint32_t abi_major;
  uint32_t abi_minor;
  size_t min_size;
} kind_info;

#define MAX_SEGMENTS 16

typedef struct mod_segment {
  uintptr_t lo, hi; /* [lo, hi) */
  unsigned flags;   /* PF_R, PF_W, PF_X */
} mod_segment;

typedef struct mod_map {
  const char *name; /* link_map's l_name, to find it among the objects */
  uintptr_t base;   /* link_map's l_addr */
  mod_segment seg[MAX_SEGMENTS];
  int n;
} mod_map;

int cua__modcheck_map(void *dl, mod_map *m);
int cua__modcheck_entry(const kind_info *k, const char *path, const void *head,
                        const mod_map *m, size_t *symsize, char *err,
                        size_t errlen);
int cua__modcheck_pointers(cua__module_kind kind, const kind_info *k,
                           const char *path, const void *desc, size_t size,
                           const mod_map *m, char *err, size_t errlen);
int cua__modcheck_names(const kind_info *k, const char *path, const char *name,
                        const cua_param_spec *params, size_t nparams,
                        size_t stride, char *err, size_t errlen);
/* params.c: a schema a configuration could never satisfy (a type that is
 * none, a range that holds no value, an enum without choices, a default
 * that does not parse), refused at load with CUA_ERR_MODULE_INCOMPLETE. */
int cua__params_check_schema(const char *path, const cua_param_spec *params,
                             size_t nparams, size_t stride, char *err,
                             size_t errlen);

/* loader.c, for modsearch.c: each kind's entry symbol, ABI and folder;
 * "DIR/NAMEEXT" (NULL when out of memory); the checks of a descriptor;
 * its copy in the core's layout where it needs one; loading one file
 * (@p expect: the name it must declare, or NULL; *@p other: the file has
 * the other kind's entry symbol). */
extern const kind_info cua__kinds[CUA__MODULE_KINDS];
char *cua__join_path(const char *dir, const char *name, const char *ext);
/* loader.c: the length of @p name less its ".so" ending (the whole length
 * when it has none, or is no more than ".so"); and 1 when the loader takes
 * @p name as a file (a '/' in it, or that ending), 0 when it is a module
 * name to search for. */
size_t cua__so_stem(const char *name);
int cua__names_file(const char *name);
int cua__check_desc(cua__module_kind kind, const char *path,
                    const desc_head *head, size_t symsize, const mod_map *map,
                    const char *expect, char *err, size_t errlen);
int cua__normalise(cua__module *mod, const void *head);
int cua__load_file(cua__module **out, cua__module_kind kind, const char *path,
                   const char *expect, int *other, char *err, size_t errlen);
/* modsearch.c, for loader.c: opens the policy the program registered as
 * @p name: 0 and *out, 1 when none has the name, or a negative code. */
int cua__load_registered(cua__module **out, const char *name, char *err,
                         size_t errlen);

#endif /* CUA_CORE_LOADER_H */
