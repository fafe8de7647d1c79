/*
 * tools/bench/dispatch.c: the cost of asking a policy through a loaded
 * module, against the same function compiled into the program.
 *
 * Both sides are called the way the core calls a policy: through a function
 * pointer, with a cua_op_info filled in, N times in a loop. The module is
 * the round-robin policy, dlopen()ed exactly as the core's loader does
 * (RTLD_NOW | RTLD_LOCAL, the entry symbol, create() with the defaults of
 * its parameter schema, a host table the bench provides). The static side
 * is the same source, policies/round-robin.c, compiled into the program
 * (rr-static.c) and created the same way. What differs is only where the
 * code lives (a position-independent shared object reached through its
 * descriptor, or the executable), so the difference is the price of the
 * plugin boundary itself; the core's own work around place()
 * (building the op info, validating the placement) is the same either way
 * and is measured by the workloads, not here.
 */
#include "config.h"

#include "cuasync_run.h"

#include <cuasync/policy.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------- the host table */

typedef struct fake_core {
  int streams; /* streams that exist on the one device */
} fake_core;

static int fh_device_count(void *core) {
  (void)core;
  return 1;
}

static int fh_stream_count(void *core, int device) {
  return device == 0 ? ((fake_core *)core)->streams : 0;
}

static int fh_ensure_streams(void *core, int device, int n) {
  fake_core *c = core;
  if (device != 0)
    return CUA_ERR_BAD_DEVICE;
  if (n > c->streams)
    c->streams = n;
  return 0;
}

static int fh_stream_load(void *core, int device, int stream,
                          cua_stream_load *out) {
  if (device != 0 || stream < 0 || stream >= ((fake_core *)core)->streams)
    return CUA_ERR_INVAL;
  uint64_t size = out->size;
  memset(out, 0, sizeof *out);
  out->size = size;
  return 0;
}

static uint64_t fh_now_ns(void *core) {
  (void)core;
  return bench_now_ns();
}

static void fh_log(void *core, cua_log_level level, const char *fmt, ...) {
  va_list ap;
  (void)core;
  if (level > CUA_LOG_WARN)
    return;
  va_start(ap, fmt);
  fputs("cuasync-bench: round-robin: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int fh_device_info(void *core, int device, cua_device_info *out) {
  (void)core;
  if (device != 0)
    return CUA_ERR_BAD_DEVICE;
  snprintf(out->name, sizeof out->name, "bench");
  return 0;
}

static int fh_nested_open(void *core, const char *name,
                          cua_policy_nested **out) {
  (void)core;
  (void)name;
  *out = NULL;
  return CUA_ERR_NOTSUP;
}

static int fh_nested_place(void *core, cua_policy_nested *nested,
                           const cua_op_info *op, cua_placement *out) {
  (void)core;
  (void)nested;
  (void)op;
  (void)out;
  return CUA_ERR_NOTSUP;
}

static void fh_nested_submitted(void *core, cua_policy_nested *nested,
                                const cua_op_info *op, cua_placement where) {
  (void)core;
  (void)nested;
  (void)op;
  (void)where;
}

static void fh_nested_completed(void *core, cua_policy_nested *nested,
                                const cua_op_info *op, cua_placement where,
                                uint64_t duration_ns) {
  (void)core;
  (void)nested;
  (void)op;
  (void)where;
  (void)duration_ns;
}

static void fh_nested_close(void *core, cua_policy_nested *nested) {
  (void)core;
  (void)nested;
}

/* policies/round-robin.c compiled into this program (rr-static.c). */
extern const cua_policy_descriptor bench_static_round_robin;

/* ------------------------------------------------------ the module */

/* Finds round-robin.so where the core would: each folder of
 * $CUASYNC_MODULE_PATH (and its policies/ subfolder), then the installed
 * policies. */
static int find_module(char *path, size_t len) {
  const char *env = getenv("CUASYNC_MODULE_PATH");
  if (env != NULL) {
    const char *p = env;
    while (*p) {
      size_t n = strcspn(p, ":");
      if (n > 0) {
        snprintf(path, len, "%.*s/round-robin.so", (int)n, p);
        if (access(path, R_OK) == 0)
          return 0;
        snprintf(path, len, "%.*s/policies/round-robin.so", (int)n, p);
        if (access(path, R_OK) == 0)
          return 0;
      }
      p += n;
      if (*p == ':')
        p++;
    }
  }
#ifdef CUA_PKGLIBDIR
  snprintf(path, len, "%s/policies/round-robin.so", CUA_PKGLIBDIR);
  if (access(path, R_OK) == 0)
    return 0;
#endif
  return -1;
}

/* The defaults of a parameter schema, as the core hands them to create(). */
static cua_param_value *defaults(const cua_policy_descriptor *desc) {
  cua_param_value *v = calloc(desc->nparams + 1, sizeof *v);
  if (v == NULL)
    return NULL;
  for (size_t i = 0; i < desc->nparams; i++) {
    const cua_param_spec *s = &desc->params[i];
    const char *dv = s->default_value;
    v[i].s = dv;
    if (dv == NULL)
      continue;
    switch (s->type) {
    case CUA_PARAM_INT:
      v[i].i = strtoll(dv, NULL, 0);
      v[i].d = (double)v[i].i;
      break;
    case CUA_PARAM_DOUBLE:
      v[i].d = strtod(dv, NULL);
      break;
    case CUA_PARAM_BOOL:
      v[i].i = strcmp(dv, "true") == 0 || strcmp(dv, "yes") == 0 ||
               strcmp(dv, "on") == 0 || strcmp(dv, "1") == 0;
      break;
    case CUA_PARAM_ENUM: {
      const char *c = s->choices ? s->choices : "";
      int64_t idx = 0;
      while (*c) {
        size_t n = strcspn(c, "|");
        if (n == strlen(dv) && strncmp(c, dv, n) == 0) {
          v[i].i = idx;
          break;
        }
        c += n;
        if (*c == '|')
          c++;
        idx++;
      }
      break;
    }
    default:
      break;
    }
  }
  return v;
}

typedef int (*place_fn)(void *, const cua_op_info *, cua_placement *);

/* Calls @p fn @p calls times; returns ns per call. The pointer is read
 * through a volatile so that neither side is inlined. */
static double time_calls(place_fn volatile *fnp, void *state, size_t calls,
                         uint64_t *sink) {
  cua_op_info info;
  cua_placement out;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  info.kind = CUA_OP_SPIN;
  info.preferred_device = info.data_device = info.restrict_device = -1;
  info.then_of.device = info.then_of.stream = -1;
  info.submission = 1;
  place_fn fn = *fnp;
  uint64_t t0 = bench_now_ns();
  for (size_t i = 0; i < calls; i++) {
    info.op_id = i + 1;
    if (fn(state, &info, &out) == 0)
      *sink += (uint64_t)out.stream;
  }
  uint64_t t1 = bench_now_ns();
  return (double)(t1 - t0) / (double)(calls ? calls : 1);
}

int bench_dispatch(size_t calls, double *module_ns, double *static_ns,
                   char *path, size_t pathlen, char *err, size_t len) {
  fake_core core = {0};
  cua_policy_host host;
  void *state = NULL;
  int rc = -1;

  if (find_module(path, pathlen) != 0) {
    snprintf(err, len,
             "round-robin.so not found in $CUASYNC_MODULE_PATH or the "
             "installed policies");
    return -1;
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(err, len, "dlopen %s: %s", path, dlerror());
    return -1;
  }
  const cua_policy_descriptor *desc = dlsym(h, CUA_POLICY_ENTRY_SYMBOL);
  if (desc == NULL || desc->abi_major != CUA_POLICY_ABI_MAJOR ||
      desc->place == NULL || desc->create == NULL) {
    snprintf(err, len, "%s: no usable %s descriptor", path,
             CUA_POLICY_ENTRY_SYMBOL);
    dlclose(h);
    return -1;
  }
  memset(&host, 0, sizeof host);
  host.abi_major = CUA_POLICY_ABI_MAJOR;
  host.abi_minor = CUA_POLICY_ABI_MINOR;
  host.size = sizeof host;
  host.core = &core;
  host.device_count = fh_device_count;
  host.stream_count = fh_stream_count;
  host.ensure_streams = fh_ensure_streams;
  host.stream_load = fh_stream_load;
  host.now_ns = fh_now_ns;
  host.log = fh_log;
  host.device_info = fh_device_info;
  host.nested_open = fh_nested_open;
  host.nested_place = fh_nested_place;
  host.nested_submitted = fh_nested_submitted;
  host.nested_completed = fh_nested_completed;
  host.nested_close = fh_nested_close;
  cua_param_value *params = defaults(desc);
  if (params == NULL || desc->create(&host, params, &state) != 0) {
    snprintf(err, len, "%s: create() failed", path);
    free(params);
    dlclose(h);
    return -1;
  }

  fake_core score = {0};
  cua_policy_host shost = host;
  const cua_policy_descriptor *sdesc = &bench_static_round_robin;
  void *sstate = NULL;
  shost.core = &score;
  if (sdesc->create(&shost, params, &sstate) != 0) {
    snprintf(err, len, "the static round-robin: create() failed");
    if (desc->destroy != NULL)
      desc->destroy(state);
    free(params);
    dlclose(h);
    return -1;
  }

  place_fn volatile mod = desc->place;
  place_fn volatile sta = sdesc->place;
  uint64_t sink = 0;
  size_t per = calls / 5 ? calls / 5 : 1;
  double bm = 0, bs = 0;
  /* Warm both (caches, lazy binding), then alternate rounds so that
   * frequency changes hit both sides alike; keep each side's fastest. */
  time_calls(&mod, state, per / 10 + 1, &sink);
  time_calls(&sta, sstate, per / 10 + 1, &sink);
  for (int r = 0; r < 5; r++) {
    double m = time_calls(&mod, state, per, &sink);
    double s = time_calls(&sta, sstate, per, &sink);
    bm = r == 0 || m < bm ? m : bm;
    bs = r == 0 || s < bs ? s : bs;
  }
  *module_ns = bm;
  *static_ns = bs;
  rc = sink == UINT64_MAX ? -1 : 0; /* uses sink; never true */
  if (desc->destroy != NULL)
    desc->destroy(state);
  if (sdesc->destroy != NULL)
    sdesc->destroy(sstate);
  free(params);
  dlclose(h);
  return rc;
}
