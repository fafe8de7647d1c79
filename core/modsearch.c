/*
 * core/modsearch.c: where modules come from: the search path of each kind
 * (cua__module_dirs()), the policies the program registers
 * (cua_policy_register()), and scans of the path for every module, good or
 * refused (cuasync-info). Loading and checking one file is loader.c's.
 *
 * Owns: the registry of policies registered by the program, for the life
 * of the process (reg_lock, a leaf). The rest runs on the calling thread
 * with no lock.
 */
#include "config.h"

#include "internal.h"
#include "loader.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CUA_PKGLIBDIR
#error "CUA_PKGLIBDIR must be defined on the compile line"
#endif

/* ------------------------------------------------------------------ */
/* The search path. */

void cua__strv_free(char **v, size_t n) {
  size_t i;

  if (v == NULL)
    return;
  for (i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

/* Appends a copy of @p s (@p n bytes) unless it is empty or already there:
 * a directory named twice (policy_path and $CUASYNC_MODULE_PATH often
 * agree) would otherwise be searched twice and make every module in it
 * look shadowed by itself. Returns 0 or -1. */
static int strv_add(char ***v, size_t *nv, const char *s, size_t n) {
  char **grown, *d;
  size_t i;

  if (n == 0)
    return 0;
  for (i = 0; i < *nv; i++)
    if (strlen((*v)[i]) == n && memcmp((*v)[i], s, n) == 0)
      return 0;
  d = cua__malloc(n + 1);
  if (d == NULL)
    return -1;
  memcpy(d, s, n);
  d[n] = '\0';
  grown = cua__realloc(*v, (*nv + 1) * sizeof *grown);
  if (grown == NULL) {
    free(d);
    return -1;
  }
  grown[(*nv)++] = d;
  *v = grown;
  return 0;
}

char **cua__module_dirs(cua__module_kind kind, char *const *extra,
                        size_t nextra, int ignore_env, size_t *ndirs) {
  const char *env = ignore_env ? NULL : getenv("CUASYNC_MODULE_PATH");
  char **v = NULL, *installed = NULL;
  size_t n = 0, i;

  *ndirs = 0;
  if ((unsigned)kind >= CUA__MODULE_KINDS)
    return NULL;
  for (i = 0; i < nextra; i++)
    if (extra[i] != NULL && strv_add(&v, &n, extra[i], strlen(extra[i])) != 0)
      goto fail;
  while (env != NULL && *env != '\0') {
    const char *colon = strchr(env, ':');
    size_t len = colon != NULL ? (size_t)(colon - env) : strlen(env);
    if (strv_add(&v, &n, env, len) != 0)
      goto fail;
    env = colon != NULL ? colon + 1 : NULL;
  }
  installed = cua__join_path(CUA_PKGLIBDIR, cua__kinds[kind].subdir, "");
  if (installed == NULL || strv_add(&v, &n, installed, strlen(installed)) != 0)
    goto fail;
  free(installed);
  *ndirs = n;
  return v;

fail:
  free(installed);
  cua__strv_free(v, n);
  return NULL;
}

/* ------------------------------------------------------------------ */
/* Policies registered by the program (cua_policy_register()). */

/* The registry: descriptors in the program, by name, for the life of the
 * process. Guarded by reg_lock. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const cua_policy_descriptor **reg;
static size_t nreg, capreg;

void cua__registry_fork(int take) {
  if (take)
    pthread_mutex_lock(&reg_lock);
  else
    pthread_mutex_unlock(&reg_lock);
}

static const cua_policy_descriptor *registered(const char *name) {
  const cua_policy_descriptor *d = NULL;

  pthread_mutex_lock(&reg_lock);
  for (size_t i = 0; i < nreg && d == NULL; i++)
    if (strcmp(reg[i]->name, name) == 0)
      d = reg[i];
  pthread_mutex_unlock(&reg_lock);
  return d;
}

int cua__policy_register(const cua_policy_descriptor *desc, char *err,
                         size_t errlen) {
  int rc;

  if (desc == NULL) {
    cua__put_err(err, errlen, "cua_policy_register: no descriptor given");
    return CUA_ERR_INVAL;
  }
  /* A registered descriptor is as big as its size field says: the program
   * gave it, and cannot give a bigger symbol than it has. */
  rc = cua__check_desc(CUA__MODULE_POLICY, "cua_policy_register",
                       (const desc_head *)desc,
                       desc->size > sizeof *desc ? desc->size : sizeof *desc,
                       NULL, NULL, err, errlen);
  if (rc != 0)
    return rc;
  cua__fork_watch();
  pthread_mutex_lock(&reg_lock);
  for (size_t i = 0; i < nreg; i++)
    if (strcmp(reg[i]->name, desc->name) == 0) {
      pthread_mutex_unlock(&reg_lock);
      cua__put_err(err, errlen,
                   "cua_policy_register: a policy named '%s' is already "
                   "registered",
                   desc->name);
      return CUA_ERR_INVAL;
    }
  if (nreg == capreg) {
    size_t cap = capreg ? 2 * capreg : 8;
    const cua_policy_descriptor **v = realloc(reg, cap * sizeof *v);
    if (v == NULL) {
      pthread_mutex_unlock(&reg_lock);
      cua__put_err(err, errlen, "cua_policy_register: out of memory");
      return CUA_ERR_NOMEM;
    }
    reg = v;
    capreg = cap;
  }
  reg[nreg++] = desc;
  pthread_mutex_unlock(&reg_lock);
  return 0;
}

/* Opens the registered policy @p name, if there is one: 0 and *out, 1 when
 * none has the name, or a negative code. */
int cua__load_registered(cua__module **out, const char *name, char *err,
                         size_t errlen) {
  const cua_policy_descriptor *d = registered(name);
  cua__module *mod;

  if (d == NULL)
    return 1;
  mod = cua__calloc(1, sizeof *mod);
  if (mod == NULL || (mod->path = cua__strdup("(registered)")) == NULL) {
    free(mod);
    cua__put_err(err, errlen, "%s: out of memory", name);
    return CUA_ERR_NOMEM;
  }
  mod->kind = CUA__MODULE_POLICY;
  if (cua__normalise(mod, d) != 0) {
    free(mod->path);
    free(mod);
    cua__put_err(err, errlen, "%s: out of memory", name);
    return CUA_ERR_NOMEM;
  }
  *out = mod;
  return 0;
}

/* ------------------------------------------------------------------ */
/* Scanning. */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The "*.so" names in @p dir, sorted; a directory that cannot be read has
 * none. Returns 0 or -1 (out of memory). */
static int list_modules(const char *dir, char ***names, size_t *n) {
  DIR *d = opendir(dir);
  struct dirent *e;

  *names = NULL;
  *n = 0;
  if (d == NULL)
    return 0;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (cua__so_stem(e->d_name) == len)
      continue;
    if (strv_add(names, n, e->d_name, len) != 0) {
      closedir(d);
      cua__strv_free(*names, *n);
      *names = NULL;
      *n = 0;
      return -1;
    }
  }
  closedir(d);
  if (*n > 1)
    qsort(*names, *n, sizeof **names, cmp_str);
  return 0;
}

/* Whether the ELF shared object @p path defines the dynamic symbol @p sym,
 * read from its file (its section headers, .dynsym and that table's
 * strings), without loading it: no constructor runs, nothing is mapped
 * for good. 0 for anything that is not a 64-bit ELF file of this
 * machine's byte order, or that cannot be read. */
static int defines_symbol(const char *path, const char *sym) {
  int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
  Elf64_Ehdr eh;
  Elf64_Shdr *sh = NULL;
  char *strs = NULL;
  Elf64_Sym *syms = NULL;
  struct stat st;

  if (fd < 0)
    return 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
      memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shoff > (uint64_t)st.st_size ||
      (uint64_t)eh.e_shnum * sizeof *sh > (uint64_t)st.st_size - eh.e_shoff)
    goto done;
  sh = cua__malloc((size_t)eh.e_shnum * sizeof *sh);
  if (sh == NULL ||
      pread(fd, sh, (size_t)eh.e_shnum * sizeof *sh, (off_t)eh.e_shoff) !=
          (ssize_t)((size_t)eh.e_shnum * sizeof *sh))
    goto done;
  for (size_t i = 0; i < eh.e_shnum && !found; i++) {
    const Elf64_Shdr *d = &sh[i];
    if (d->sh_type != SHT_DYNSYM || d->sh_link >= eh.e_shnum ||
        d->sh_entsize != sizeof(Elf64_Sym))
      continue;
    const Elf64_Shdr *ss = &sh[d->sh_link];
    if (d->sh_size > (uint64_t)st.st_size ||
        ss->sh_size > (uint64_t)st.st_size ||
        d->sh_offset > (uint64_t)st.st_size - d->sh_size ||
        ss->sh_offset > (uint64_t)st.st_size - ss->sh_size || ss->sh_size == 0)
      continue;
    syms = cua__malloc((size_t)d->sh_size + 1);
    strs = cua__malloc((size_t)ss->sh_size + 1);
    if (syms == NULL || strs == NULL ||
        pread(fd, syms, (size_t)d->sh_size, (off_t)d->sh_offset) !=
            (ssize_t)d->sh_size ||
        pread(fd, strs, (size_t)ss->sh_size, (off_t)ss->sh_offset) !=
            (ssize_t)ss->sh_size)
      goto done;
    strs[ss->sh_size] = '\0';
    for (size_t k = 0; k < d->sh_size / sizeof *syms && !found; k++)
      found = syms[k].st_shndx != SHN_UNDEF && syms[k].st_name < ss->sh_size &&
              strcmp(strs + syms[k].st_name, sym) == 0;
    free(syms);
    free(strs);
    syms = NULL;
    strs = NULL;
  }
done:
  free(syms);
  free(strs);
  free(sh);
  close(fd);
  return found;
}

void cua__module_names(cua__module_kind kind, char *const *dirs, size_t ndirs,
                       char *err, size_t errlen) {
  const kind_info *k = &cua__kinds[kind];
  char **seen = NULL;
  size_t nseen = 0, n = 0, len = err != NULL ? strlen(err) : 0;

  if (err == NULL || len + 1 >= errlen)
    return;
  /* The program's registered policies first, then each name once, from
   * the first directory that has it, as a load by name would find it. */
  if (kind == CUA__MODULE_POLICY) {
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg; i++)
      if (strv_add(&seen, &nseen, reg[i]->name, strlen(reg[i]->name)) == 0)
        len += (size_t)snprintf(err + len, errlen - len, "%s%s",
                                n++ > 0 ? ", " : "", reg[i]->name);
    pthread_mutex_unlock(&reg_lock);
  }
  for (size_t i = 0; i < ndirs && len + 1 < errlen; i++) {
    char **names;
    size_t nn;
    if (list_modules(dirs[i], &names, &nn) != 0)
      break;
    for (size_t j = 0; j < nn && len + 1 < errlen; j++) {
      size_t nl = strlen(names[j]) - 3, s;
      for (s = 0; s < nseen; s++)
        if (strlen(seen[s]) == nl && strncmp(seen[s], names[j], nl) == 0)
          break;
      if (s < nseen)
        continue;
      char *path = cua__join_path(dirs[i], names[j], "");
      if (path != NULL && defines_symbol(path, k->symbol) &&
          strv_add(&seen, &nseen, names[j], nl) == 0)
        len += (size_t)snprintf(err + len, errlen - len, "%s%.*s",
                                n++ > 0 ? ", " : "", (int)nl, names[j]);
      free(path);
      if (len >= errlen)
        len = errlen - 1;
    }
    cua__strv_free(names, nn);
  }
  if (n == 0 && len + 1 < errlen)
    snprintf(err + len, errlen - len, "none");
  cua__strv_free(seen, nseen);
}

void cua__module_scan(cua__module_kind kind, char *const *extra, size_t nextra,
                      int ignore_env,
                      void (*cb)(const cua__module_report *r, void *arg),
                      void *arg) {
  char **dirs, **seen = NULL, **files = NULL, *path = NULL, msg[1024];
  size_t ndirs = 0, nseen = 0, nfiles = 0, i, j, s;

  if (cb == NULL)
    return;
  dirs = cua__module_dirs(kind, extra, nextra, ignore_env, &ndirs);
  if (dirs == NULL)
    return;
  for (i = 0; i < ndirs; i++) {
    if (list_modules(dirs[i], &files, &nfiles) != 0)
      goto out;
    for (j = 0; j < nfiles; j++) {
      cua__module_report r;
      cua__module *mod = NULL;
      size_t nl = cua__so_stem(files[j]);
      int other;

      memset(&r, 0, sizeof r);
      path = cua__join_path(dirs[i], files[j], "");
      if (path == NULL)
        goto out;
      files[j][nl] = '\0'; /* the name, without ".so" */
      msg[0] = '\0';
      r.status =
          cua__load_file(&mod, kind, path, files[j], &other, msg, sizeof msg);
      if (r.status != 0 && other) {
        free(path);
        path = NULL;
        continue;
      }
      for (s = 0; s < nseen; s++)
        if (strcmp(seen[s], files[j]) == 0)
          r.shadowed = 1;
      if (!r.shadowed && strv_add(&seen, &nseen, files[j], nl) != 0) {
        cua__module_unload(mod);
        goto out;
      }
      r.path = path;
      r.name = files[j];
      r.message = r.status != 0 ? msg : NULL;
      r.module = mod;
      cb(&r, arg);
      cua__module_unload(mod);
      free(path);
      path = NULL;
    }
    cua__strv_free(files, nfiles);
    files = NULL;
    nfiles = 0;
  }

out:
  free(path);
  cua__strv_free(files, nfiles);
  cua__strv_free(seen, nseen);
  cua__strv_free(dirs, ndirs);
}
