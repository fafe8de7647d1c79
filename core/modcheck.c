/*
 * core/modcheck.c: checking a module's descriptor before anything in it is
 * read: the entry symbol's kind, size and alignment, every pointer it holds
 * (inside the module's own loaded segments), names and schemas. Called by
 * the loader (loader.c) on the loading thread; no lock.
 */
#include "config.h"

#include "internal.h"
#include "loader.h"

#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Checking a descriptor before it is read. */

/*
 * Nothing in a descriptor is trusted before it is checked: a module may
 * export its entry symbol as a function or a single byte, or fill the
 * descriptor with pointers to nowhere, and reading through them would
 * crash the program that loads it (cuasync-info included). So the entry
 * symbol must be a data object (STT_OBJECT, from dladdr1()'s symbol entry)
 * big enough and aligned for a descriptor, and every pointer the core
 * follows (strings, the schema and its strings, the operations) must lie
 * in a loaded segment of the module itself: strings and the schema in a
 * readable one, with the string's NUL in the same segment, operations in
 * an executable one. The segments come from the module's program headers
 * (dl_iterate_phdr()), which, unlike dladdr(), leave out the gaps between
 * them.
 */

static int collect_segments(struct dl_phdr_info *info, size_t size, void *arg) {
  mod_map *m = arg;
  int i;

  (void)size;
  if (info->dlpi_addr != m->base || info->dlpi_name == NULL ||
      strcmp(info->dlpi_name, m->name) != 0)
    return 0;
  for (i = 0; i < info->dlpi_phnum && m->n < MAX_SEGMENTS; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
      continue;
    m->seg[m->n].lo = info->dlpi_addr + ph->p_vaddr;
    m->seg[m->n].hi = m->seg[m->n].lo + ph->p_memsz;
    m->seg[m->n].flags = ph->p_flags;
    m->n++;
  }
  return 1;
}

/* Fills @p m with the loaded segments of @p dl. Returns 0 or -1. */
int cua__modcheck_map(void *dl, mod_map *m) {
  struct link_map *lm = NULL;

  memset(m, 0, sizeof *m);
  if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
    return -1;
  m->name = lm->l_name;
  m->base = lm->l_addr;
  dl_iterate_phdr(collect_segments, m);
  return m->n > 0 ? 0 : -1;
}

/* The segment of @p m with @p flags that holds [p, p + n), or NULL. */
static const mod_segment *segment_of(const mod_map *m, const void *p, size_t n,
                                     unsigned flags) {
  uintptr_t a = (uintptr_t)p;
  int i;

  for (i = 0; i < m->n; i++) {
    const mod_segment *g = &m->seg[i];
    if ((g->flags & flags) == flags && a >= g->lo && a < g->hi &&
        n <= g->hi - a)
      return g;
  }
  return NULL;
}

/* 1 if @p s is NULL or a string wholly inside a readable segment. */
static int string_ok(const mod_map *m, const char *s) {
  const mod_segment *g;

  if (s == NULL)
    return 1;
  g = segment_of(m, s, 1, PF_R);
  return g != NULL && memchr(s, '\0', g->hi - (uintptr_t)s) != NULL;
}

/* What an ELF symbol type is, for messages. */
static const char *symbol_kind(unsigned type) {
  switch (type) {
  case STT_FUNC:
    return "a function";
  case STT_NOTYPE:
    return "a symbol without a type";
  case STT_TLS:
    return "a thread-local variable";
  case STT_GNU_IFUNC:
    return "an indirect function";
  default:
    return "not a data object";
  }
}

/* Checks the entry symbol at @p head: a data object of at least the
 * descriptor's header, aligned for it. Sets *symsize to its size. Returns
 * 0, or a code with the reason in @p err. */
int cua__modcheck_entry(const kind_info *k, const char *path, const void *head,
                        const mod_map *m, size_t *symsize, char *err,
                        size_t errlen) {
  const ElfW(Sym) *sym = NULL;
  Dl_info info;
  size_t align = _Alignof(desc_head);

  if (dladdr1(head, &info, (void **)&sym, RTLD_DL_SYMENT) == 0 || sym == NULL ||
      info.dli_saddr != head) {
    cua__put_err(err, errlen, "%s: the %s symbol has no symbol table entry",
                 path, k->symbol);
    return CUA_ERR_MODULE_NO_ENTRY;
  }
  if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT) {
    cua__put_err(err, errlen, "%s: the %s symbol is %s, not a %s descriptor",
                 path, k->symbol, symbol_kind(ELF64_ST_TYPE(sym->st_info)),
                 k->word);
    return CUA_ERR_MODULE_NO_ENTRY;
  }
  if (sym->st_size < sizeof(desc_head)) {
    cua__put_err(err, errlen,
                 "%s: the %s symbol has %zu byte(s), fewer than the %zu of a "
                 "descriptor's header",
                 path, k->symbol, (size_t)sym->st_size, sizeof(desc_head));
    return CUA_ERR_MODULE_BAD_SIZE;
  }
  if ((uintptr_t)head % align != 0) {
    cua__put_err(err, errlen,
                 "%s: the %s symbol is at %p, not aligned to %zu bytes as a "
                 "descriptor must be",
                 path, k->symbol, head, align);
    return CUA_ERR_MODULE_BAD_SIZE;
  }
  if (segment_of(m, head, (size_t)sym->st_size, PF_R) == NULL) {
    cua__put_err(err, errlen,
                 "%s: the %s symbol lies outside the module's loaded segments",
                 path, k->symbol);
    return CUA_ERR_MODULE_BAD_SIZE;
  }
  *symsize = (size_t)sym->st_size;
  return 0;
}

/* Checks every pointer of descriptor @p desc (whose first @p size bytes
 * are known to be readable) against the module's segments. Returns 0, or
 * CUA_ERR_MODULE_INCOMPLETE naming the first bad field. */
int cua__modcheck_pointers(cua__module_kind kind, const kind_info *k,
                           const char *path, const void *desc, size_t size,
                           const mod_map *m, char *err, size_t errlen) {
  const cua_policy_descriptor *pd = desc;
  const cua_param_spec *params = pd->params;
  size_t nparams = pd->nparams, i, off, first, known;
  /* The schema's element size: the policy declares it (checked before). */
  /* (an observer's descriptor has the policy's layout up to
   * param_value_size) */
  size_t stride = kind != CUA__MODULE_BACKEND ? pd->param_spec_size
                                              : sizeof(cua_param_spec);
  const char *bad;
  typedef void (*any_fn)(void);

  /* name, version, description, params and nparams sit at the same
   * offsets in both descriptors. */
  const char *const strings[3] = {pd->name, pd->version, pd->description};
  static const char *const fields[3] = {"name", "version", "description"};
  for (i = 0; i < 3; i++) {
    if (!string_ok(m, strings[i])) {
      cua__put_err(err, errlen,
                   "%s: the %s descriptor's %s (%p) does not point to a string "
                   "in the module",
                   path, k->word, fields[i], (const void *)strings[i]);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
  }
  if (params != NULL &&
      (nparams > SIZE_MAX / stride ||
       segment_of(m, params, nparams * stride, PF_R) == NULL)) {
    cua__put_err(
        err, errlen,
        "%s: the %s descriptor's params (%p, %zu entries) do not lie in "
        "the module",
        path, k->word, (const void *)params, nparams);
    return CUA_ERR_MODULE_INCOMPLETE;
  }
  for (i = 0; params != NULL && i < nparams; i++) {
    const cua_param_spec *ps = cua__spec_at(params, stride, i);
    bad = !string_ok(m, ps->name)            ? "name"
          : !string_ok(m, ps->default_value) ? "default value"
          : !string_ok(m, ps->choices)       ? "choices"
          : !string_ok(m, ps->help)          ? "help"
                                             : NULL;
    if (bad != NULL) {
      cua__put_err(
          err, errlen,
          "%s: the %s of parameter %zu of the descriptor does not point "
          "to a string in the module",
          path, bad, i);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
  }
  /* The operations: every field from create() to the end of what both
   * the module and the core know is a function pointer, but the backend's
   * priority (an int, in a pointer-sized slot). */
  first = kind == CUA__MODULE_POLICY ? offsetof(cua_policy_descriptor, create)
          : kind == CUA__MODULE_OBSERVER
              ? offsetof(cua_observer_descriptor, create)
              : offsetof(cua_backend_descriptor, create);
  known = kind == CUA__MODULE_POLICY     ? sizeof(cua_policy_descriptor)
          : kind == CUA__MODULE_OBSERVER ? sizeof(cua_observer_descriptor)
                                         : sizeof(cua_backend_descriptor);
  if (size > known)
    size = known;
  for (off = first; off + sizeof(any_fn) <= size; off += sizeof(any_fn)) {
    if (kind == CUA__MODULE_BACKEND &&
        off == offsetof(cua_backend_descriptor, priority) / sizeof(any_fn) *
                   sizeof(any_fn))
      continue;
    any_fn fn;
    memcpy(&fn, (const char *)desc + off, sizeof fn);
    if (fn != NULL &&
        segment_of(m, (const void *)(uintptr_t)fn, 1, PF_X) == NULL) {
      static const char *const policy_ops[] = {"create()",
                                               "destroy()",
                                               "place()",
                                               "submitted()",
                                               "completed()",
                                               "dump()",
                                               "submission_begin()",
                                               "submission_end()",
                                               "push()",
                                               "pop()"};
      static const char *const observer_ops[] = {
          "create()", "destroy()", "record()", "flush()", "launch()"};
      size_t op = (off - first) / sizeof(any_fn);
      char what[64];
      if (kind == CUA__MODULE_POLICY &&
          op < sizeof policy_ops / sizeof policy_ops[0])
        snprintf(what, sizeof what, "%s", policy_ops[op]);
      else if (kind == CUA__MODULE_OBSERVER &&
               op < sizeof observer_ops / sizeof observer_ops[0])
        snprintf(what, sizeof what, "%s", observer_ops[op]);
      else
        snprintf(what, sizeof what, "operation at offset %zu", off);
      cua__put_err(
          err, errlen,
          "%s: the %s descriptor's %s (%p) does not point to code in the "
          "module",
          path, k->word, what, (void *)(uintptr_t)fn);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
  }
  return 0;
}

/* Checks the name a descriptor declares (known to be a string) and its
 * schema's parameter names. Returns 0, or CUA_ERR_MODULE_INCOMPLETE. */
int cua__modcheck_names(const kind_info *k, const char *path, const char *name,
                        const cua_param_spec *params, size_t nparams,
                        size_t stride, char *err, size_t errlen) {
  size_t i, j;

  if (*name == '\0') {
    cua__put_err(err, errlen, "%s: the %s descriptor's name is empty", path,
                 k->word);
    return CUA_ERR_MODULE_INCOMPLETE;
  }
  /* A name becomes a file name, a section name and a word in messages. */
  for (i = 0; name[i] != '\0'; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c < 0x20 || c == 0x7f) {
      cua__put_err(err, errlen,
                   "%s: the %s descriptor's name contains a control character "
                   "(byte 0x%02x at offset %zu)",
                   path, k->word, c, i);
      return CUA_ERR_MODULE_INCOMPLETE;
    }
  }
  /* Two parameters of one name would make a key mean either. */
  for (i = 0; params != NULL && i < nparams; i++)
    for (j = 0; j < i; j++) {
      const char *a = cua__spec_at(params, stride, i)->name;
      const char *b = cua__spec_at(params, stride, j)->name;
      if (a != NULL && b != NULL && strcmp(a, b) == 0) {
        cua__put_err(
            err, errlen,
            "%s: parameters %zu and %zu of the descriptor's schema are "
            "both named '%s'",
            path, j, i, a);
        return CUA_ERR_MODULE_INCOMPLETE;
      }
    }
  return 0;
}
