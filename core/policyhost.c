/*
 * core/policyhost.c: policy instances and the host table they call.
 *
 * Every call into a policy happens with the runtime lock held, so the
 * functions of the host table below run under it too.
 */
#include "config.h"
#include "internal.h"
#include "loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int h_device_count(void *core) {
  return ((cua__polinst *)core)->rt->ndev;
}

static int h_stream_count(void *core, int device) {
  cua_runtime *rt = ((cua__polinst *)core)->rt;
  if (device < 0 || device >= rt->ndev)
    return 0;
  return rt->devs[device].nstreams;
}

static int h_ensure_streams(void *core, int device, int n) {
  cua__polinst *p = core;
  if (device < 0 || device >= p->rt->ndev || n < 0 || n > 1024)
    return CUA_ERR_INVAL;
  return cua__ensure_streams(p->rt, device, n);
}

static int h_stream_load(void *core, int device, int stream,
                         cua_stream_load *out) {
  cua_runtime *rt = ((cua__polinst *)core)->rt;
  if (out == NULL || device < 0 || device >= rt->ndev || stream < 0 ||
      stream >= rt->devs[device].nstreams)
    return CUA_ERR_INVAL;
  size_t n = out->size && out->size < sizeof *out ? out->size : sizeof *out;
  cua_stream_load l = rt->devs[device].streams[stream]->load;
  l.size = n;
  memcpy(out, &l, n);
  return 0;
}

static uint64_t h_now(void *core) {
  cua_runtime *rt = ((cua__polinst *)core)->rt;
  return cua__rt_now(rt);
}

/* A debug line costs a comparison unless $CUASYNC_DEBUG is set: it is
 * neither formatted nor kept (place() may log one per op). What is kept
 * makes the message of a failing create() or place(). */
static void h_log(void *core, cua_log_level level, const char *fmt, ...) {
  cua__polinst *p = core;
  va_list ap;
  va_start(ap, fmt);
  cua__module_vlog(p->log, sizeof p->log, 1, "policy", p->name, level, fmt, ap);
  va_end(ap);
}

static int h_expected_duration(void *core, const cua_op_info *op, int device,
                               cua_estimate *out) {
  return cua__models_expect(((cua__polinst *)core)->rt, op, device, out);
}

static int h_expected_transfer(void *core, int from, int to, uint64_t bytes,
                               cua_estimate *out) {
  return cua__models_transfer(((cua__polinst *)core)->rt, from, to, bytes, out);
}

static int h_device_info(void *core, int device, cua_device_info *out) {
  cua_runtime *rt = ((cua__polinst *)core)->rt;
  if (device < 0 || device >= rt->ndev || out == NULL)
    return CUA_ERR_INVAL;
  return rt->be->device_info(rt->bst, device, out);
}

/*
 * The instances whose create() is running on this thread, outermost first.
 * A policy opens its nested ones from create(), on the thread that opens
 * it and under the runtime lock, so this is the chain of nesting; it lives
 * per thread because two runtimes may be opening policies at once.
 */
#define MAX_NESTING 8
static _Thread_local cua__polinst *creating[MAX_NESTING];
static _Thread_local int ncreating;

static int polinst_load(cua_runtime *rt, const char *name, cua__module **mod);
static int polinst_create(cua_runtime *rt, const char *name, cua__module *mod,
                          cua__polinst **out);

/* The nesting chain that ends at @p p: the instances being created around
 * it, or p alone when it opens a nested policy outside create(). Returns
 * its length. */
static int nesting_chain(cua__polinst *p, cua__polinst ***chain) {
  for (int i = 0; i < ncreating; i++)
    if (creating[i] == p) {
      *chain = creating;
      return i + 1;
    }
  *chain = NULL;
  return 1;
}

/*
 * A policy may not nest itself, directly or through another. Which module
 * a name means is known only once it is loaded: a path, a symbolic link or
 * a second directory may all name one file, and dlopen() then hands back
 * the same descriptor. So the check compares the loaded descriptor with
 * every policy being created around this one, and also the names the
 * descriptors declare (a copy of a module is a different file, but the
 * same policy). The depth limit is the backstop.
 */
static int h_nested_open(void *core, const char *name,
                         cua_policy_nested **out) {
  cua__polinst *p = core, *q, **chain;
  cua__module *mod = NULL;
  int depth, rc;

  if (name == NULL || out == NULL)
    return CUA_ERR_INVAL;
  depth = nesting_chain(p, &chain);
  if (depth >= MAX_NESTING) {
    h_log(core, CUA_LOG_ERROR,
          "nested policy '%s': policies nest at most %d deep", name,
          MAX_NESTING);
    return CUA_ERR_INVAL;
  }
  rc = polinst_load(p->rt, name, &mod);
  if (rc) {
    h_log(core, CUA_LOG_ERROR, "nested policy '%s': %s", name,
          cua_runtime_error(p->rt));
    return rc;
  }
  for (int i = 0; i < depth; i++) {
    const cua__polinst *a = chain != NULL ? chain[i] : p;
    if (a->d == mod->desc.policy ||
        strcmp(a->d->name, mod->desc.policy->name) == 0) {
      h_log(core, CUA_LOG_ERROR,
            "a policy cannot nest itself: '%s' is policy '%s' (%s), which "
            "is already open around it",
            name, mod->desc.policy->name, mod->path ? mod->path : "?");
      cua__module_unload(mod);
      return CUA_ERR_INVAL;
    }
  }
  rc = polinst_create(p->rt, name, mod, &q);
  if (rc) {
    h_log(core, CUA_LOG_ERROR, "nested policy '%s': %s", name,
          cua_runtime_error(p->rt));
    return rc;
  }
  q->nested = 1;
  *out = (cua_policy_nested *)q;
  return 0;
}

static int h_nested_place(void *core, cua_policy_nested *nested,
                          const cua_op_info *op, cua_placement *out) {
  cua__polinst *p = core, *q = (cua__polinst *)nested;
  cua_op_info tmp;
  void *buf = NULL;
  const cua_op_info *in =
      cua__info_restride(op, p->d->input_size, q->d->input_size, &tmp, &buf);
  int rc = q->d->place(q->state, in, out);
  free(buf);
  return rc;
}

static void h_nested_submitted(void *core, cua_policy_nested *nested,
                               const cua_op_info *op, cua_placement where) {
  cua__polinst *p = core, *q = (cua__polinst *)nested;
  cua_op_info tmp;
  void *buf = NULL;
  if (q->d->submitted == NULL)
    return;
  const cua_op_info *in =
      cua__info_restride(op, p->d->input_size, q->d->input_size, &tmp, &buf);
  q->d->submitted(q->state, in, where);
  free(buf);
}

static void h_nested_completed(void *core, cua_policy_nested *nested,
                               const cua_op_info *op, cua_placement where,
                               uint64_t ns) {
  cua__polinst *q = (cua__polinst *)nested;
  (void)core;
  if (q->d->completed)
    q->d->completed(q->state, op, where, ns);
}

static void h_nested_close(void *core, cua_policy_nested *nested) {
  (void)core;
  cua__polinst *q = (cua__polinst *)nested;
  q->closed = 1;
  cua__polinst_release(q);
}

/* Destroys the instance and unlinks it; the struct and its name stay. */
static void polinst_teardown(cua__polinst *p) {
  cua_runtime *rt = p->rt;
  for (cua__polinst **pp = &rt->policies; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  cua__pull_drop(p);
  if (p->state != NULL && p->d->destroy != NULL)
    p->d->destroy(p->state);
  p->state = NULL;
  cua__config_params_free(p->params, p->nparams);
  p->params = NULL;
  free(p->values);
  p->values = NULL;
  cua__module_unload(p->mod);
  p->mod = NULL;
}

static void polinst_free(cua__polinst *p) {
  polinst_teardown(p);
  free(p->name);
  free(p);
}

void cua__polinst_release(cua__polinst *p) {
  if (p != NULL && --p->refs == 0)
    polinst_free(p);
}

/* Loads policy module @p name; on failure sets the runtime's error. */
static int polinst_load(cua_runtime *rt, const char *name, cua__module **mod) {
  char err[CUA__ERRLEN];
  int rc =
      cua__module_load(mod, CUA__MODULE_POLICY, name, rt->cfg->policy_path,
                       rt->cfg->npolicy_path, rt->ignore_env, err, sizeof err);
  return rc ? cua__fail(rt, rc, "%s", err) : 0;
}

/* Configures from [policy.NAME] and creates an instance of the loaded
 * module @p mod, which it takes over (unloaded on failure). */
static int polinst_create(cua_runtime *rt, const char *name, cua__module *mod,
                          cua__polinst **out) {
  char err[CUA__ERRLEN];
  int rc;
  cua__polinst *p = cua__calloc(1, sizeof *p);
  if (p == NULL || (p->name = cua__strdup(mod->desc.policy->name)) == NULL) {
    free(p);
    cua__module_unload(mod);
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  }
  p->rt = rt;
  p->mod = mod;
  p->d = mod->desc.policy;
  p->refs = 1;
  /* A policy loaded by path is configured from the section of the name it
   * declares. */
  char section[256];
  snprintf(section, sizeof section, "policy.%s", p->d->name);
  rc = cua__config_params(rt->cfg, section, p->d->params, p->d->nparams,
                          &p->params, err, sizeof err);
  if (rc) {
    cua__module_unload(mod);
    free(p->name);
    free(p);
    return cua__fail(rt, rc, "%s", err);
  }
  p->nparams = p->d->nparams;
  cua_policy_host *h = &p->host;
  h->abi_major = CUA_POLICY_ABI_MAJOR;
  h->abi_minor = CUA_POLICY_ABI_MINOR;
  h->size = sizeof *h;
  h->core = p;
  h->device_count = h_device_count;
  h->stream_count = h_stream_count;
  h->ensure_streams = h_ensure_streams;
  h->stream_load = h_stream_load;
  h->now_ns = h_now;
  h->log = h_log;
  h->device_info = h_device_info;
  h->nested_open = h_nested_open;
  h->nested_place = h_nested_place;
  h->nested_submitted = h_nested_submitted;
  h->nested_completed = h_nested_completed;
  h->nested_close = h_nested_close;
  h->expected_duration = h_expected_duration;
  h->expected_transfer = h_expected_transfer;
  p->next = rt->policies;
  rt->policies = p;
  /* h_nested_open() checks nesting against the instances being created;
   * the depth limit there keeps this within the array. */
  int slot = ncreating < MAX_NESTING ? ncreating++ : -1;
  if (slot >= 0)
    creating[slot] = p;
  /* The values go out with the element size the policy was built with
   * (the fields it does not know left out, those the core does not know
   * zero). */
  const void *values;
  if (cua__params_restride(p->params, p->nparams, p->d->param_value_size,
                           &p->values, &values) != 0) {
    if (slot >= 0)
      ncreating = slot;
    polinst_free(p);
    return cua__fail(rt, CUA_ERR_NOMEM, "out of host memory");
  }
  rc = p->d->create(h, values, &p->state);
  if (slot >= 0)
    ncreating = slot;
  if (rc != 0) {
    char log[sizeof p->log], path[1024], code[160];
    cua__module_code(rc, "create()", code, sizeof code);
    snprintf(log, sizeof log, "%s", p->log);
    snprintf(path, sizeof path, "%s", mod->path ? mod->path : "?");
    p->state = NULL;
    polinst_free(p);
    return cua__fail(rt, CUA_ERR_MODULE_CREATE,
                     "policy '%s' (%s): create() failed with %s%s%s", name,
                     path, code, log[0] ? ": " : "", log);
  }
  *out = p;
  return 0;
}

/* Loads, configures from [policy.NAME] and creates an instance. Runs with
 * the runtime lock held (policies may open nested ones from create()). */
int cua__polinst_open(cua_runtime *rt, const char *name, cua__polinst **out) {
  cua__module *mod = NULL;
  int rc = polinst_load(rt, name, &mod);
  if (rc)
    return rc;
  return polinst_create(rt, name, mod, out);
}

/* Drops the runtime's own references; what remains was opened by the user
 * and not closed, and is freed outermost first so that nesting policies
 * close their nested ones themselves. */
void cua__polinst_close_all(cua_runtime *rt) {
  cua__polinst_release(rt->policy);
  rt->policy = NULL;
  cua__polinst_release(rt->fallback);
  rt->fallback = NULL;
  for (int d = 0; d < rt->ndev; d++) {
    cua__polinst_release(rt->devs[d].policy);
    rt->devs[d].policy = NULL;
  }
  for (;;) {
    cua__polinst *p = rt->policies;
    while (p != NULL && p->nested)
      p = p->next;
    if (p == NULL)
      p = rt->policies;
    if (p == NULL)
      break;
    if (p->user) {
      /* The application still holds a handle: the instance goes with the
       * runtime, the handle stays valid for cua_policy_name() and
       * cua_policy_close() (which frees it), and submissions refuse it. */
      polinst_teardown(p);
      p->dead = 1;
    } else {
      polinst_free(p);
    }
  }
}

/* --------------------------------------------------------------- public */

int cua_policy_register(const cua_policy_descriptor *desc) {
  char err[CUA__ERRLEN];
  if (desc != NULL && desc->abi_major == CUA_POLICY_ABI_MAJOR &&
      desc->name != NULL) {
    if (cua__names_file(desc->name))
      return cua__fail(NULL, CUA_ERR_INVAL,
                       "cua_policy_register: the name '%s' has a '/' or ends "
                       "in \".so\", so a configuration would name a file "
                       "instead",
                       desc->name);
  }
  int rc = cua__policy_register(desc, err, sizeof err);
  if (rc != 0)
    return cua__fail(NULL, rc, "%s", err);
  return 0;
}

/* @p rc's message (cua__polinst_open()'s, this thread's), prefixed with
 * the public function @p fn that failed, as every message is. */
static int from(cua_runtime *rt, int rc, const char *fn) {
  if (rc == 0)
    return 0;
  char msg[CUA__ERRLEN];
  snprintf(msg, sizeof msg, "%s", cua_runtime_error(rt));
  return cua__fail(rt, rc, "%s: %s", fn, msg);
}

int cua_policy_open(cua_policy **out, cua_runtime *rt, const char *name) {
  if (out == NULL || rt == NULL || name == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_policy_open: NULL argument");
  cua__polinst *p;
  pthread_mutex_lock(&rt->lock);
  int rc = cua__polinst_open(rt, name, &p);
  if (rc == 0)
    p->user = 1;
  pthread_mutex_unlock(&rt->lock);
  *out = rc ? NULL : (cua_policy *)p;
  return from(rt, rc, "cua_policy_open");
}

void cua_policy_close(cua_policy *pol) {
  if (pol == NULL)
    return;
  cua__polinst *p = (cua__polinst *)pol;
  if (p->dead) {
    /* Its runtime is gone, and the instance with it. */
    free(p->name);
    free(p);
    return;
  }
  cua_runtime *rt = p->rt;
  /* Graphs it placed (graphs = auto) are matched by its address: a policy
   * opened after it is freed may be given the same one. */
  cua__gcache_policy_gone(rt, p);
  pthread_mutex_lock(&rt->lock);
  p->closed = 1;
  p->user = 0;
  cua__polinst_release(p);
  pthread_mutex_unlock(&rt->lock);
}

const char *cua_policy_name(const cua_policy *pol) {
  if (pol == NULL) {
    cua__fail(NULL, CUA_ERR_INVAL, "cua_policy_name: NULL policy");
    return NULL;
  }
  return ((const cua__polinst *)pol)->name;
}

int cua_runtime_set_policy(cua_runtime *rt, const char *name) {
  if (rt == NULL || name == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_set_policy: NULL");
  cua__polinst *p;
  pthread_mutex_lock(&rt->lock);
  int rc = cua__polinst_open(rt, name, &p);
  if (rc == 0) {
    cua__polinst *old = rt->policy;
    rt->policy = p;
    cua__polinst_release(old);
  }
  pthread_mutex_unlock(&rt->lock);
  /* Cached graphs were placed by the policy before (graphs = auto). */
  if (rc == 0)
    cua__gcache_clear(rt);
  return from(rt, rc, "cua_runtime_set_policy");
}

int cua_runtime_set_device_policy(cua_runtime *rt, int device,
                                  const char *name) {
  if (rt == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_set_device_policy: NULL");
  if (device < 0 || device >= rt->ndev)
    return cua__fail(rt, CUA_ERR_BAD_DEVICE,
                     "cua_runtime_set_device_policy: no device %d (the "
                     "runtime has %d)",
                     device, rt->ndev);
  cua__polinst *p = NULL;
  pthread_mutex_lock(&rt->lock);
  int rc = name ? cua__polinst_open(rt, name, &p) : 0;
  if (rc == 0) {
    cua__polinst *old = rt->devs[device].policy;
    rt->devs[device].policy = p;
    cua__polinst_release(old);
  }
  pthread_mutex_unlock(&rt->lock);
  if (rc == 0)
    cua__gcache_clear(rt);
  return from(rt, rc, "cua_runtime_set_device_policy");
}

const char *cua_runtime_policy(const cua_runtime *rt) {
  if (rt == NULL) {
    cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_policy: NULL runtime");
    return NULL;
  }
  return rt->policy ? rt->policy->name : NULL;
}

int cua_runtime_dump_policy(cua_runtime *rt, void *file) {
  if (rt == NULL || file == NULL)
    return cua__fail(rt, CUA_ERR_INVAL, "cua_runtime_dump_policy: NULL %s",
                     rt == NULL ? "runtime" : "file");
  pthread_mutex_lock(&rt->lock);
  if (rt->policy->d->dump)
    rt->policy->d->dump(rt->policy->state, file);
  else
    fprintf(file, "policy %s: no dump()\n", rt->policy->name);
  pthread_mutex_unlock(&rt->lock);
  return 0;
}
