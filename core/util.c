/*
 * core/util.c: version, error and op kind names and messages, small
 * helpers, and the fault injection points of allocation, thread creation
 * and dlopen.
 *
 * The last error message is per thread (see cua__vfail()): no lock.
 */
#include "config.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

unsigned cua_version(void) {
  return CUA_VERSION_HEX;
}

const char *cua_version_string(void) {
  return CUA_VERSION_STRING;
}

const char *cua_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
#define CUA__ERR_DESC(name, val, desc)                                         \
  case (val):                                                                  \
    return desc;
    CUA_ERRNO_MAP(CUA__ERR_DESC)
#undef CUA__ERR_DESC
  default:
    return "unknown error";
  }
}

const char *cua_err_name(int err) {
  switch (err) {
  case 0:
    return "CUA_OK";
#define CUA__ERR_NAME(name, val, desc)                                         \
  case (val):                                                                  \
    return "CUA_ERR_" #name;
    CUA_ERRNO_MAP(CUA__ERR_NAME)
#undef CUA__ERR_NAME
  default:
    return "CUA_ERR_UNKNOWN";
  }
}

const char *cua_op_kind_name(cua_op_kind kind) {
  switch ((int)kind) {
#define CUA__KIND_NAME(id, val, name, launched, desc)                          \
  case (val):                                                                  \
    return name;
    CUA_OP_KIND_MAP(CUA__KIND_NAME)
#undef CUA__KIND_NAME
  default:
    return "?";
  }
}

/* CUA_OP_KIND_COUNT_ is written by hand in the enum: it must stay one more
 * than every value of the list. */
#define CUA__KIND_BELOW_COUNT(id, val, name, launched, desc)                   \
  _Static_assert((val) > 0 && (val) < CUA_OP_KIND_COUNT_,                      \
                 "CUA_OP_KIND_COUNT_ must exceed CUA_OP_" #id);
CUA_OP_KIND_MAP(CUA__KIND_BELOW_COUNT)
#undef CUA__KIND_BELOW_COUNT

/* Fault injection (tests/check_faults.c): cua__fault_arm(kind, k) makes the
 * k-th call of that kind from then on fail, once. Compiled always, so that
 * the normal and the sanitizer builds test what ships; unarmed, it costs
 * one relaxed load and a branch predicted not taken per call. */
static atomic_int fault_armed;
static atomic_long fault_left[CUA__FAULT_KINDS];
static atomic_long fault_calls[CUA__FAULT_KINDS];
static atomic_int fault_fired[CUA__FAULT_KINDS];
static void (*_Atomic fault_hook)(int kind);

void cua__fault_set_hook(void (*hook)(int kind)) {
  atomic_store(&fault_hook, hook);
}

void cua__fault_arm(int kind, long k) {
  for (int i = 0; i < CUA__FAULT_KINDS; i++) {
    atomic_store(&fault_calls[i], 0);
    atomic_store(&fault_fired[i], 0);
    atomic_store(&fault_left[i], i == kind ? k : 0);
  }
  atomic_store(&fault_armed, 1);
}

long cua__fault_calls(int kind) {
  return atomic_load(&fault_calls[kind]);
}

int cua__fault_fired(int kind) {
  return atomic_load(&fault_fired[kind]);
}

int cua__fault(int kind) {
  if (__builtin_expect(
          !atomic_load_explicit(&fault_armed, memory_order_relaxed), 1))
    return 0;
  atomic_fetch_add(&fault_calls[kind], 1);
  if (atomic_load(&fault_left[kind]) > 0 &&
      atomic_fetch_sub(&fault_left[kind], 1) == 1) {
    atomic_store(&fault_fired[kind], 1);
    void (*hook)(int) = atomic_load(&fault_hook);
    if (hook != NULL)
      hook(kind);
    return 1;
  }
  return 0;
}

void *cua__malloc(size_t n) {
  if (cua__fault(CUA__FAULT_ALLOC))
    return NULL;
  return malloc(n ? n : 1);
}

void *cua__calloc(size_t n, size_t size) {
  if (cua__fault(CUA__FAULT_ALLOC))
    return NULL;
  return calloc(n ? n : 1, size ? size : 1);
}

void *cua__realloc(void *p, size_t n) {
  if (cua__fault(CUA__FAULT_ALLOC))
    return NULL;
  return realloc(p, n ? n : 1);
}

const char *cua__module_code(int rc, const char *what, char *buf, size_t len) {
  if (rc > 0 || strcmp(cua_err_name(rc), "CUA_ERR_UNKNOWN") == 0)
    snprintf(buf, len,
             "%d, which is not a cuasync error code (%s returns 0 "
             "or a negative CUA_ERR_*)",
             rc, what);
  else
    snprintf(buf, len, "%s", cua_err_name(rc));
  return buf;
}

void cua__put_err(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;

  if (err == NULL || errlen == 0)
    return;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

char *cua__strdup(const char *s) {
  if (s == NULL)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = cua__malloc(n);
  if (d != NULL)
    memcpy(d, s, n);
  return d;
}

int cua__pthread_create(pthread_t *t, const pthread_attr_t *attr,
                        void *(*fn)(void *), void *arg) {
  if (cua__fault(CUA__FAULT_THREAD))
    return EAGAIN;
  return pthread_create(t, attr, fn, arg);
}

void *cua__dlopen(const char *path, int flags) {
  if (cua__fault(CUA__FAULT_DLOPEN))
    return NULL;
  return dlopen(path, flags);
}

const char *cua__dlerror(void) {
  const char *e = dlerror();
  return e != NULL ? e : "injected failure";
}

uint64_t cua__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec cua__deadline(uint64_t timeout_ns) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  uint64_t ns = (uint64_t)dl.tv_nsec + timeout_ns % 1000000000u;
  dl.tv_sec += (time_t)(timeout_ns / 1000000000u + ns / 1000000000u);
  dl.tv_nsec = (long)(ns % 1000000000u);
  return dl;
}

int cua__grow_slow(void *arr, size_t *cap, size_t need, size_t size,
                   void *inl) {
  void **p = arr;
  size_t n = *cap ? *cap * 2 : 4;
  while (n < need)
    n *= 2;
  void *q;
  if (inl != NULL && *p == inl) {
    q = cua__malloc(n * size);
    if (q != NULL)
      memcpy(q, inl, *cap * size);
  } else {
    q = cua__realloc(*p, n * size);
  }
  if (q == NULL)
    return CUA_ERR_NOMEM;
  *p = q;
  *cap = n;
  return 0;
}

/* $CUASYNC_DEBUG, read once per process (log lines below WARN are
 * formatted only when it is set). */
static pthread_once_t debug_once = PTHREAD_ONCE_INIT;
static int debug_on;
static void debug_read(void) {
  debug_on = getenv("CUASYNC_DEBUG") != NULL;
}
int cua__debug(void) {
  pthread_once(&debug_once, debug_read);
  return debug_on;
}

void cua__module_vlog(char *keep, size_t keeplen, int keep_debug,
                      const char *kind, const char *name, cua_log_level level,
                      const char *fmt, va_list ap) {
  int debug = cua__debug();
  if (level >= CUA_LOG_DEBUG && !debug)
    return;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  if (level < CUA_LOG_DEBUG || keep_debug) {
    size_t used = strlen(keep);
    if (used + strlen(line) + 3 < keeplen)
      snprintf(keep + used, keeplen - used, "%s%s", used ? "; " : "", line);
  }
  if (level <= CUA_LOG_WARN || debug)
    fprintf(stderr, "cuasync: %s %s: %s\n", kind, name, line);
}

/* The error model, as errno's: every failing call stores its message in
 * a buffer of the calling thread, and cua_runtime_error() returns it.
 * Nothing is shared between threads, so no lock guards it, a message is
 * never overwritten by another thread's failure, and the runtime is never
 * touched (a handle of a closed runtime can still fail with a message).
 * A successful call leaves the message alone. */
static _Thread_local char last_err[CUA__ERRLEN];

int cua__vfail(const cua_runtime *rt, int code, const char *fmt, va_list ap) {
  (void)rt;
  /* Formatted aside first: the arguments may include last_err itself (a
   * message that wraps the one before it). */
  char tmp[CUA__ERRLEN];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  memcpy(last_err, tmp, strlen(tmp) + 1);
  return code;
}

int cua__fail(const cua_runtime *rt, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cua__vfail(rt, code, fmt, ap);
  va_end(ap);
  return code;
}

const char *cua_runtime_error(const cua_runtime *rt) {
  (void)rt;
  return last_err;
}
