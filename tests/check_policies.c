/*
 * tests/check_policies.c: the standard policies (and the test policy
 * scatter), each loaded with dlopen() from the build tree and driven through
 * a fake host table, without the core.
 *
 * The fake host gives full control over what a policy sees: the device
 * count, the streams that exist, the per-stream loads, the clock. It records
 * every ensure_streams() request and every log line, and implements
 * nested_open() by loading another policy module the same way, so affinity
 * runs with real nested policies. Parameter values are built from each
 * module's own schema (defaults, then "key=value" overrides) and their
 * strings are freed right after create(), so a policy that keeps a pointer
 * into them fails under valgrind. completed() gets op pointers that point
 * into an inaccessible page, since the header says they are no longer valid
 * then.
 *
 * Run under valgrind with CK_FORK=no to check for leaks:
 *   CK_FORK=no valgrind --leak-check=full tests/check_policies
 */
#include "helpers.h"

#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>

#define MAXDEV 8
#define MAXSTREAMS 1100
#define MAXLOG 64
#define MAXPARAMS 16
#define MAXKV 8

/* ------------------------------------------------------------------------ */
/* A policy instance loaded from its module. */

typedef struct inst {
  void *dl;
  const cua_policy_descriptor *d;
  void *state;
} inst;

struct cua_policy_nested {
  inst in;
};

/* The fake core behind the host table. */
typedef struct fake {
  cua_policy_host host;
  int ndev;
  int nstreams[MAXDEV];   /* streams that exist */
  int max_ensure[MAXDEV]; /* largest n asked of ensure_streams() */
  int ensure_calls;
  int fail_ensure;                  /* ensure_streams() fails when set */
  uint64_t ops[MAXDEV][MAXSTREAMS]; /* what stream_load() reports */
  uint64_t now;
  char log[MAXLOG][512];
  int nlog;
  /* Nested policies: the configuration of nested_cfg_name, if any. */
  const char *nested_cfg_name;
  const char *nested_kv[MAXKV];
  char nested_name[4096]; /* last name nested_open() was asked for */
  int nested_opens, nested_closes, nested_places, nested_submits,
      nested_completes;
  int nested_restrict; /* restrict_device of the last nested_place() op */
  int nested_sabotage; /* nested_place() moves the op to another device */
  /* The performance model: ops named model_name take model_ns on device
   * model_dev; transfers take xfer_ns once it is set. */
  const char *model_name;
  uint64_t model_ns;
  int model_dev;
  uint64_t xfer_ns;
  int model_calls, xfer_calls;
} fake;

static int inst_open(inst *p, fake *f, const char *name, const char *const *kv);
static void inst_close(inst *p);

static int fk_device_count(void *core) {
  return ((fake *)core)->ndev;
}

static int fk_stream_count(void *core, int d) {
  fake *f = core;
  return d >= 0 && d < f->ndev ? f->nstreams[d] : 0;
}

static int fk_ensure_streams(void *core, int d, int n) {
  fake *f = core;

  f->ensure_calls++;
  if (d < 0 || d >= f->ndev || n < 1)
    return CUA_ERR_INVAL;
  if (f->fail_ensure)
    return CUA_ERR_BACKEND;
  if (n > MAXSTREAMS)
    return CUA_ERR_NOMEM;
  if (n > f->max_ensure[d])
    f->max_ensure[d] = n;
  if (n > f->nstreams[d])
    f->nstreams[d] = n;
  return 0;
}

static int fk_stream_load(void *core, int d, int s, cua_stream_load *out) {
  fake *f = core;

  if (d < 0 || d >= f->ndev || s < 0 || s >= f->nstreams[d])
    return CUA_ERR_INVAL;
  out->ops_in_flight = f->ops[d][s];
  out->est_busy_ns = 0;
  out->ops_total = 0;
  /* As the core counts it: never before now, later with more in flight. */
  out->expected_end_ns = f->now + f->ops[d][s] * 1000;
  return 0;
}

static uint64_t fk_now(void *core) {
  return ((fake *)core)->now;
}

static void fk_log(void *core, cua_log_level level, const char *fmt, ...) {
  fake *f = core;
  va_list ap;

  (void)level;
  va_start(ap, fmt);
  vsnprintf(f->log[f->nlog % MAXLOG], sizeof f->log[0], fmt, ap);
  va_end(ap);
  f->nlog++;
}

static int fk_device_info(void *core, int d, cua_device_info *out) {
  fake *f = core;

  if (d < 0 || d >= f->ndev)
    return CUA_ERR_BAD_DEVICE;
  snprintf(out->name, sizeof out->name, "fake %d", d);
  out->ordinal = d;
  return 0;
}

static int fk_nested_open(void *core, const char *name,
                          cua_policy_nested **out) {
  fake *f = core;
  cua_policy_nested *n = calloc(1, sizeof *n);
  int rc;

  ck_assert_ptr_nonnull(n);
  snprintf(f->nested_name, sizeof f->nested_name, "%s", name);
  rc = inst_open(&n->in, f, name,
                 f->nested_cfg_name && strcmp(f->nested_cfg_name, name) == 0
                     ? f->nested_kv
                     : NULL);
  if (rc != 0) {
    free(n);
    return rc;
  }
  f->nested_opens++;
  *out = n;
  return 0;
}

static int fk_nested_place(void *core, cua_policy_nested *n,
                           const cua_op_info *op, cua_placement *out) {
  fake *f = core;
  int rc;

  f->nested_places++;
  f->nested_restrict = op->restrict_device;
  rc = n->in.d->place(n->in.state, op, out);
  if (rc == 0 && f->nested_sabotage)
    out->device = (out->device + 1) % f->ndev;
  return rc;
}

static void fk_nested_submitted(void *core, cua_policy_nested *n,
                                const cua_op_info *op, cua_placement where) {
  ((fake *)core)->nested_submits++;
  if (n->in.d->submitted != NULL)
    n->in.d->submitted(n->in.state, op, where);
}

static void fk_nested_completed(void *core, cua_policy_nested *n,
                                const cua_op_info *op, cua_placement where,
                                uint64_t duration_ns) {
  ((fake *)core)->nested_completes++;
  if (n->in.d->completed != NULL)
    n->in.d->completed(n->in.state, op, where, duration_ns);
}

static void fk_nested_close(void *core, cua_policy_nested *n) {
  ((fake *)core)->nested_closes++;
  inst_close(&n->in);
  free(n);
}

static int fk_expected_duration(void *core, const cua_op_info *op, int dev,
                                cua_estimate *out) {
  fake *f = core;
  f->model_calls++;
  if (op == NULL || out == NULL || dev < 0 || dev >= f->ndev)
    return CUA_ERR_INVAL;
  cua_estimate e = {.size = out->size};
  if (f->model_name != NULL && op->name != NULL &&
      strcmp(op->name, f->model_name) == 0 && dev == f->model_dev) {
    e.ns = f->model_ns;
    e.samples = 10;
    e.confidence = 0.8;
    e.source = CUA_ESTIMATE_HISTORY;
  } else if (op->cost_ns > 0) {
    e.ns = op->cost_ns;
    e.source = CUA_ESTIMATE_HINT;
  }
  memcpy(out, &e, out->size < sizeof e ? out->size : sizeof e);
  return 0;
}

static int fk_expected_transfer(void *core, int from, int to, uint64_t bytes,
                                cua_estimate *out) {
  fake *f = core;
  (void)bytes;
  f->xfer_calls++;
  if (out == NULL || from < -1 || to < -1 || from >= f->ndev || to >= f->ndev)
    return CUA_ERR_INVAL;
  cua_estimate e = {.size = out->size};
  if (f->xfer_ns > 0) {
    e.ns = f->xfer_ns;
    e.source = CUA_ESTIMATE_REGRESSION;
  }
  memcpy(out, &e, out->size < sizeof e ? out->size : sizeof e);
  return 0;
}

static fake *fake_new(int ndev) {
  fake *f = calloc(1, sizeof *f);

  ck_assert_ptr_nonnull(f);
  ck_assert_int_le(ndev, MAXDEV);
  f->ndev = ndev;
  f->host.abi_major = CUA_POLICY_ABI_MAJOR;
  f->host.abi_minor = CUA_POLICY_ABI_MINOR;
  f->host.size = sizeof f->host;
  f->host.core = f;
  f->host.device_count = fk_device_count;
  f->host.stream_count = fk_stream_count;
  f->host.ensure_streams = fk_ensure_streams;
  f->host.stream_load = fk_stream_load;
  f->host.now_ns = fk_now;
  f->host.log = fk_log;
  f->host.device_info = fk_device_info;
  f->host.nested_open = fk_nested_open;
  f->host.nested_place = fk_nested_place;
  f->host.nested_submitted = fk_nested_submitted;
  f->host.nested_completed = fk_nested_completed;
  f->host.nested_close = fk_nested_close;
  f->host.expected_duration = fk_expected_duration;
  f->host.expected_transfer = fk_expected_transfer;
  return f;
}

/* Whether a log line contains @p needle. */
static int log_has(const fake *f, const char *needle) {
  int n = f->nlog < MAXLOG ? f->nlog : MAXLOG;

  for (int i = 0; i < n; i++)
    if (strstr(f->log[i], needle) != NULL)
      return 1;
  return 0;
}

static const char *log_all(const fake *f) {
  static char buf[MAXLOG * 520];
  int n = f->nlog < MAXLOG ? f->nlog : MAXLOG;

  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    strcat(buf, f->log[i]);
    strcat(buf, " | ");
  }
  return buf;
}

/* ------------------------------------------------------------------------ */
/* Loading modules and building their parameters from their schemas. */

static const char *module_path(const char *name) {
  static char rel[512];

  if (strchr(name, '/') != NULL)
    return name;
  if (strcmp(name, "scatter") == 0)
    snprintf(rel, sizeof rel, "tests/modules/.libs/%s.so", name);
  else
    snprintf(rel, sizeof rel, "policies/.libs/%s.so", name);
  return built(rel);
}

/* Loads and checks module @p name as the core's loader would; NULL (with
 * *dl NULL) when there is no such file, which nested_open() reports as an
 * error rather than a test failure. */
static const cua_policy_descriptor *load_desc(const char *name, void **dl) {
  const cua_policy_descriptor *d;

  *dl = dlopen(module_path(name), RTLD_NOW | RTLD_LOCAL);
  if (*dl == NULL)
    return NULL;
  d = dlsym(*dl, CUA_POLICY_ENTRY_SYMBOL);
  ck_assert_msg(d != NULL, "%s has no %s", name, CUA_POLICY_ENTRY_SYMBOL);
  ck_assert_uint_eq(d->abi_major, CUA_POLICY_ABI_MAJOR);
  ck_assert_uint_le(d->abi_minor, CUA_POLICY_ABI_MINOR);
  ck_assert_uint_ge(d->size, sizeof *d);
  /* Loaded by path, the name is not compared (as in the core). */
  if (strchr(name, '/') == NULL)
    ck_assert_str_eq(d->name, name);
  ck_assert_ptr_nonnull(d->create);
  ck_assert_ptr_nonnull(d->place);
  return d;
}

static char *xstrdup(const char *s) {
  char *c = malloc(strlen(s) + 1);
  ck_assert_ptr_nonnull(c);
  return strcpy(c, s);
}

/* Sets @p v from INI text @p text as the core would (the fixture's own
 * mistakes abort the test). */
static void parse_value(const cua_param_spec *sp, const char *text,
                        cua_param_value *v) {
  char *end;

  free((char *)v->s);
  v->s = xstrdup(text);
  switch (sp->type) {
  case CUA_PARAM_INT:
    v->i = strtoll(text, &end, 10);
    ck_assert_msg(*end == '\0', "%s = %s is no integer", sp->name, text);
    v->d = (double)v->i;
    ck_assert_msg(v->d >= sp->min && v->d <= sp->max, "%s = %s out of range",
                  sp->name, text);
    break;
  case CUA_PARAM_DOUBLE:
    v->d = strtod(text, &end);
    ck_assert_msg(*end == '\0' && v->d >= sp->min && v->d <= sp->max, "%s = %s",
                  sp->name, text);
    break;
  case CUA_PARAM_BOOL:
    v->i = strcmp(text, "true") == 0 || strcmp(text, "yes") == 0 ||
           strcmp(text, "on") == 0 || strcmp(text, "1") == 0;
    ck_assert_msg(v->i || strcmp(text, "false") == 0 ||
                      strcmp(text, "no") == 0 || strcmp(text, "off") == 0 ||
                      strcmp(text, "0") == 0,
                  "%s = %s is no boolean", sp->name, text);
    break;
  case CUA_PARAM_ENUM: {
    const char *c = sp->choices;
    size_t len = strlen(text);
    int64_t idx = 0;
    ck_assert_ptr_nonnull(c);
    for (;;) {
      const char *bar = strchr(c, '|');
      size_t n = bar ? (size_t)(bar - c) : strlen(c);
      if (n == len && strncmp(c, text, n) == 0)
        break;
      ck_assert_msg(bar != NULL, "%s = %s is not in %s", sp->name, text,
                    sp->choices);
      c = bar + 1;
      idx++;
    }
    v->i = idx;
    break;
  }
  case CUA_PARAM_STRING:
    break;
  default:
    ck_abort_msg("%s has an unknown type %d", sp->name, (int)sp->type);
  }
}

static void free_values(const cua_policy_descriptor *d, cua_param_value *v) {
  for (size_t i = 0; i < d->nparams; i++) {
    free((char *)v[i].s);
    for (size_t j = 0; j < v[i].count; j++)
      free((char *)v[i].list[j]);
    free((void *)v[i].list);
  }
}

/* Builds the values of @p d's schema: defaults, then @p kv ("key=value",
 * NULL-terminated; NULL for none). */
static void build_values(const cua_policy_descriptor *d, const char *const *kv,
                         cua_param_value *v) {
  ck_assert_uint_le(d->nparams, MAXPARAMS);
  memset(v, 0, MAXPARAMS * sizeof *v);
  for (size_t i = 0; i < d->nparams; i++)
    if (d->params[i].default_value != NULL)
      parse_value(&d->params[i], d->params[i].default_value, &v[i]);
  for (size_t k = 0; kv != NULL && kv[k] != NULL; k++) {
    const char *eq = strchr(kv[k], '=');
    size_t i;
    ck_assert_ptr_nonnull(eq);
    for (i = 0; i < d->nparams; i++)
      if (strlen(d->params[i].name) == (size_t)(eq - kv[k]) &&
          strncmp(d->params[i].name, kv[k], (size_t)(eq - kv[k])) == 0)
        break;
    ck_assert_msg(i < d->nparams, "%s has no key in '%s'", d->name, kv[k]);
    if (d->params[i].flags & CUA_PARAM_MULTI) {
      const char **l = realloc((void *)v[i].list, (v[i].count + 1) * sizeof *l);
      ck_assert_ptr_nonnull(l);
      l[v[i].count++] = xstrdup(eq + 1);
      v[i].list = l;
      free((char *)v[i].s);
      v[i].s = xstrdup(l[0]);
    } else {
      ck_assert_msg(!v[i].present, "%s given twice", d->params[i].name);
      parse_value(&d->params[i], eq + 1, &v[i]);
    }
    v[i].present = 1;
  }
}

/* Opens policy @p name with parameters @p kv; returns create()'s code. */
static int inst_open(inst *p, fake *f, const char *name,
                     const char *const *kv) {
  cua_param_value v[MAXPARAMS];
  int rc;

  memset(p, 0, sizeof *p);
  p->d = load_desc(name, &p->dl);
  if (p->d == NULL) {
    fk_log(f, CUA_LOG_ERROR, "cannot load '%s': %s", name, dlerror());
    return CUA_ERR_MODULE_DLOPEN;
  }
  build_values(p->d, kv, v);
  rc = p->d->create(&f->host, p->d->nparams ? v : NULL, &p->state);
  /* The values die with create(): a policy must copy what it keeps. */
  free_values(p->d, v);
  if (rc != 0) {
    dlclose(p->dl);
    p->dl = NULL;
  }
  return rc;
}

static void inst_close(inst *p) {
  if (p->dl == NULL)
    return;
  if (p->d->destroy != NULL)
    p->d->destroy(p->state);
  dlclose(p->dl);
  p->dl = NULL;
}

static void open_ok(inst *p, fake *f, const char *name, const char *const *kv) {
  int rc = inst_open(p, f, name, kv);
  ck_assert_msg(rc == 0, "%s create failed (%d): %s", name, rc, log_all(f));
}

/* ------------------------------------------------------------------------ */
/* Ops. */

static uint64_t next_op_id = 1;

static cua_op_info op_new(void) {
  cua_op_info op;

  memset(&op, 0, sizeof op);
  op.size = sizeof op;
  op.kind = CUA_OP_FUNC;
  op.preferred_device = -1;
  op.then_of.device = -1;
  op.then_of.stream = -1;
  op.data_device = -1;
  op.restrict_device = -1;
  op.submission = 1;
  op.op_id = next_op_id++;
  return op;
}

static void assert_valid(const fake *f, const cua_op_info *op, cua_placement pl,
                         const char *who) {
  ck_assert_msg(pl.device >= 0 && pl.device < f->ndev, "%s: device %d of %d",
                who, pl.device, f->ndev);
  ck_assert_msg(pl.stream >= 0 && pl.stream < f->nstreams[pl.device],
                "%s: stream %d on device %d, which has %d", who, pl.stream,
                pl.device, f->nstreams[pl.device]);
  if (op->restrict_device >= 0)
    ck_assert_msg(pl.device == op->restrict_device,
                  "%s: op restricted to device %d placed on %d", who,
                  op->restrict_device, pl.device);
}

static cua_placement place(inst *p, fake *f, const cua_op_info *op) {
  cua_placement pl = {.device = -1, .stream = -1};
  int rc = p->d->place(p->state, op, &pl);

  ck_assert_msg(rc == 0, "%s place failed (%d): %s", p->d->name, rc,
                log_all(f));
  assert_valid(f, op, pl, p->d->name);
  return pl;
}

/* place() then submitted(), as the core does for an op it enqueues. */
static cua_placement run(inst *p, fake *f, const cua_op_info *op) {
  cua_placement pl = place(p, f, op);

  if (p->d->submitted != NULL)
    p->d->submitted(p->state, op, pl);
  return pl;
}

static void complete(inst *p, const cua_op_info *op, cua_placement where,
                     uint64_t ns) {
  cua_op_info c = *op;

  if (p->d->completed == NULL)
    return;
  /* The header: completed() gets what place() got but for the inputs
   * (NULL, none); name and tag are valid during the call. */
  c.inputs = NULL;
  c.ninputs = 0;
  p->d->completed(p->state, &c, where, ns);
}

#define assert_at(pl, dev, str)                                                \
  do {                                                                         \
    cua_placement pl_ = (pl);                                                  \
    ck_assert_msg(pl_.device == (dev) && pl_.stream == (str),                  \
                  "placed on (%d,%d), expected (%d,%d)", pl_.device,           \
                  pl_.stream, (dev), (str));                                   \
  } while (0)

static char *dump_text(inst *p) {
  static char buf[8192];
  FILE *t = tmpfile();
  size_t n;

  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_nonnull(p->d->dump);
  p->d->dump(p->state, t);
  rewind(t);
  n = fread(buf, 1, sizeof buf - 1, t);
  buf[n] = '\0';
  fclose(t);
  return buf;
}

/* ------------------------------------------------------------------------ */
/* single-stream */

START_TEST(test_single_stream_stays_on_stream_0) {
  fake *f = fake_new(3);
  inst p;

  open_ok(&p, f, "single-stream", NULL);
  srand(7);
  for (int i = 0; i < 2000; i++) {
    cua_op_info op = op_new();
    cua_placement pl;
    int expect;
    op.restrict_device = rand() % 3 == 0 ? rand() % 3 : -1;
    op.preferred_device = rand() % 6 - 1; /* -1 .. 4, some nonexistent */
    op.then_of.device = rand() % 3;
    op.then_of.stream = 0;
    op.kind = (cua_op_kind)(rand() % 22);
    pl = run(&p, f, &op);
    expect = op.restrict_device >= 0 ? op.restrict_device
             : op.preferred_device >= 0 && op.preferred_device < 3
                 ? op.preferred_device
                 : 0;
    assert_at(pl, expect, 0);
  }
  for (int d = 0; d < 3; d++)
    ck_assert_int_eq(f->max_ensure[d], 1);
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_single_stream_device_param) {
  fake *f = fake_new(3);
  inst p;
  const char *const two[] = {"device=2", NULL};
  const char *const five[] = {"device=5", NULL};
  cua_op_info op = op_new();

  open_ok(&p, f, "single-stream", two);
  op.preferred_device = 1;
  assert_at(run(&p, f, &op), 2, 0);
  /* A required device beats the configured one. */
  op.restrict_device = 0;
  assert_at(run(&p, f, &op), 0, 0);
  ck_assert_int_eq(f->max_ensure[2], 1);
  ck_assert_int_eq(f->max_ensure[0], 1);
  ck_assert_int_eq(f->max_ensure[1], 0);
  inst_close(&p);

  ck_assert_int_lt(inst_open(&p, f, "single-stream", five), 0);
  ck_assert_msg(log_has(f, "device = 5"), "log: %s", log_all(f));
  free(f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* round-robin */

START_TEST(test_rr_rotates_across_devices) {
  fake *f = fake_new(2);
  inst p;
  int count[2][4] = {{0}};

  open_ok(&p, f, "round-robin", NULL);
  /* Device first: (0,0) (1,0) (0,1) (1,1) ... */
  for (int i = 0; i < 16; i++) {
    cua_op_info op = op_new();
    cua_placement pl = run(&p, f, &op);
    assert_at(pl, i % 2, (i / 2) % 4);
    count[pl.device][pl.stream]++;
  }
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < 4; s++)
      ck_assert_int_eq(count[d][s], 2);
  ck_assert_int_eq(f->max_ensure[0], 4);
  ck_assert_int_eq(f->max_ensure[1], 4);
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_rr_rotates_per_device) {
  fake *f = fake_new(2);
  inst p;
  const char *const kv[] = {"streams=3", NULL};

  open_ok(&p, f, "round-robin", kv);
  for (int i = 0; i < 7; i++) {
    cua_op_info op = op_new();
    op.restrict_device = 1;
    assert_at(run(&p, f, &op), 1, i % 3);
  }
  /* Device 1's cursor is shared with free ops: the next free op that lands
   * on device 1 continues its rotation (stream 7 % 3 = 1). */
  {
    cua_op_info a = op_new(), b = op_new();
    assert_at(run(&p, f, &a), 0, 0);
    assert_at(run(&p, f, &b), 1, 1);
  }
  ck_assert_int_eq(f->max_ensure[1], 3);
  ck_assert_int_eq(f->max_ensure[0], 3);
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_rr_keeps_then_chains) {
  fake *f = fake_new(2);
  inst p;
  cua_op_info op;

  open_ok(&p, f, "round-robin", NULL);
  op = op_new();
  assert_at(run(&p, f, &op), 0, 0);
  op = op_new();
  assert_at(run(&p, f, &op), 1, 0);
  /* A then op runs exactly where its predecessor did, and does not move the
   * rotation on. */
  for (int i = 0; i < 5; i++) {
    op = op_new();
    op.then_of.device = 1;
    op.then_of.stream = 0;
    assert_at(run(&p, f, &op), 1, 0);
  }
  op = op_new();
  assert_at(run(&p, f, &op), 0, 1);
  /* Unless the op must run on another device. */
  op = op_new();
  op.then_of.device = 1;
  op.then_of.stream = 0;
  op.restrict_device = 0;
  assert_at(run(&p, f, &op), 0, 2);
  /* A then_of naming no real stream is ignored. */
  op = op_new();
  op.then_of.device = 1;
  op.then_of.stream = 99;
  assert_at(run(&p, f, &op), 1, 1);
  op = op_new();
  op.then_of.device = 7;
  op.then_of.stream = 0;
  assert_at(run(&p, f, &op), 0, 3);
  ck_assert_ptr_nonnull(strstr(dump_text(&p), "then_of stream: 5"));
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_rr_devices_preferred) {
  fake *f = fake_new(2);
  inst p;
  const char *const pref[] = {"devices=preferred", NULL};
  cua_op_info op;

  open_ok(&p, f, "round-robin", pref);
  for (int i = 0; i < 5; i++) {
    op = op_new();
    op.preferred_device = 1;
    op.data_device = 0; /* the hint comes first */
    assert_at(run(&p, f, &op), 1, i % 4);
  }
  op = op_new();
  op.data_device = 0;
  assert_at(run(&p, f, &op), 0, 0);
  op = op_new();
  op.data_device = 0;
  assert_at(run(&p, f, &op), 0, 1);
  /* Neither: rotate over the devices. */
  op = op_new();
  assert_at(run(&p, f, &op), 0, 2);
  op = op_new();
  assert_at(run(&p, f, &op), 1, 1);
  /* A hint naming no device is ignored. */
  op = op_new();
  op.preferred_device = 5;
  assert_at(run(&p, f, &op), 0, 3);
  inst_close(&p);

  /* devices = all ignores the hints. */
  open_ok(&p, f, "round-robin", NULL);
  for (int i = 0; i < 4; i++) {
    op = op_new();
    op.preferred_device = 1;
    op.data_device = 1;
    ck_assert_int_eq(run(&p, f, &op).device, i % 2);
  }
  inst_close(&p);
  free(f);
}
END_TEST

static cua_op_info level_op(uint64_t sub, uint32_t level) {
  cua_op_info op = op_new();

  op.submission = sub;
  op.level = level;
  return op;
}

START_TEST(test_rr_by_level_aligns_levels) {
  fake *f = fake_new(1);
  inst p;
  const char *const kv[] = {"by_level=yes", NULL};
  cua_op_info op;

  open_ok(&p, f, "round-robin", kv);
  /* Submission 1: three chains of three ops, placed chain by chain. The
   * i-th op of each level goes to stream i, so each chain keeps a stream. */
  for (int chain = 0; chain < 3; chain++)
    for (uint32_t lvl = 0; lvl < 3; lvl++) {
      op = level_op(1, lvl);
      assert_at(run(&p, f, &op), 0, chain);
    }
  /* A join at level 3 starts at the base again. */
  op = level_op(1, 3);
  assert_at(run(&p, f, &op), 0, 0);
  /* Submission 2 starts where submission 1's widest level left off (3),
   * levels visited breadth first this time. */
  for (uint32_t lvl = 0; lvl < 2; lvl++)
    for (int i = 0; i < 3; i++) {
      op = level_op(2, lvl);
      assert_at(run(&p, f, &op), 0, (3 + i) % 4);
    }
  /* Ops of submission 1 placed late still use submission 1's levels. */
  op = level_op(1, 0);
  assert_at(run(&p, f, &op), 0, 3);
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_rr_by_level_rotates_submissions) {
  fake *f = fake_new(1);
  inst p;
  const char *const kv[] = {"by_level=true", NULL};

  open_ok(&p, f, "round-robin", kv);
  /* Single-chain submissions must not all pile up on stream 0: each starts
   * one further, and its chain stays on that stream. */
  for (uint64_t sub = 1; sub <= 9; sub++)
    for (uint32_t lvl = 0; lvl < 4; lvl++) {
      cua_op_info op = level_op(sub, lvl);
      assert_at(run(&p, f, &op), 0, (int)((sub - 1) % 4));
    }
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_rr_by_level_devices_and_restrict) {
  fake *f = fake_new(2);
  inst p;
  const char *const kv[] = {"by_level=true", "streams=2", NULL};
  cua_op_info op;

  open_ok(&p, f, "round-robin", kv);
  /* Four independent ops of one level: slots 0..3 in device-first order. */
  for (int i = 0; i < 4; i++) {
    op = level_op(1, 0);
    assert_at(run(&p, f, &op), i % 2, (i / 2) % 2);
  }
  /* Confined to device 1: slot 4 -> stream 0, slot 5 -> stream 1. */
  for (int i = 0; i < 2; i++) {
    op = level_op(1, 0);
    op.restrict_device = 1;
    assert_at(run(&p, f, &op), 1, i);
  }
  /* then_of beats the level slot. */
  op = level_op(1, 1);
  op.then_of.device = 1;
  op.then_of.stream = 1;
  assert_at(run(&p, f, &op), 1, 1);
  /* Many interleaved submissions (more than the policy remembers) and
   * absurd levels still give valid placements. */
  for (int i = 0; i < 500; i++) {
    op = level_op((uint64_t)(i % 13), (uint32_t)(i * 2654435761u));
    run(&p, f, &op);
  }
  inst_close(&p);
  free(f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* least-loaded */

START_TEST(test_ll_ops_avoids_busy_streams) {
  fake *f = fake_new(2);
  inst p;
  const char *const kv[] = {"measure=ops", NULL};
  cua_op_info op = op_new();

  open_ok(&p, f, "least-loaded", kv);
  /* Idle everywhere: the lowest (device, stream). */
  assert_at(run(&p, f, &op), 0, 0);
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < 4; s++)
      f->ops[d][s] = 3;
  f->ops[1][2] = 1;
  f->ops[0][3] = 2;
  op = op_new();
  assert_at(run(&p, f, &op), 1, 2);
  /* Restricted to device 0: its least loaded stream. */
  op = op_new();
  op.restrict_device = 0;
  assert_at(run(&p, f, &op), 0, 3);
  /* Ties: the lowest index... */
  f->ops[1][2] = 2;
  op = op_new();
  assert_at(run(&p, f, &op), 0, 3);
  /* ... unless the op continues a chain on a stream that ties. */
  op = op_new();
  op.then_of.device = 1;
  op.then_of.stream = 2;
  assert_at(run(&p, f, &op), 1, 2);
  /* A chain whose op was placed just before stays on its stream, even a
   * busier one: that op is the stream's last, so this one could start no
   * sooner anywhere else. */
  f->ops[1][2] = 9;
  assert_at(run(&p, f, &op), 1, 2);
  /* Otherwise a chain on a busier stream moves. */
  cua_op_info other = op_new();
  assert_at(run(&p, f, &other), 0, 3);
  assert_at(run(&p, f, &op), 0, 3);
  inst_close(&p);
  free(f);
}
END_TEST

static cua_op_info cost_op(uint64_t cost, const char *name) {
  cua_op_info op = op_new();

  op.cost_ns = cost;
  op.name = name;
  return op;
}

START_TEST(test_ll_time_avoids_long_op) {
  fake *f = fake_new(1);
  inst p;
  const char *const kv[] = {"streams=2", NULL};
  cua_op_info big, small[3];
  cua_placement bigpl, pl[3];

  open_ok(&p, f, "least-loaded", kv);
  ck_assert(p.d->flags & CUA_POLICY_WANTS_TIMING);
  big = cost_op(1000000000, "long");
  bigpl = run(&p, f, &big);
  assert_at(bigpl, 0, 0);
  /* The core's op counts say nothing here (all 0): the estimate decides. */
  for (int i = 0; i < 3; i++) {
    small[i] = cost_op(1000, NULL);
    pl[i] = run(&p, f, &small[i]);
    assert_at(pl[i], 0, 1);
  }
  /* Once the long op is done, its stream is the idle one. */
  complete(&p, &big, bigpl, 0);
  {
    cua_op_info op = cost_op(1000, NULL);
    assert_at(run(&p, f, &op), 0, 0);
  }
  for (int i = 0; i < 3; i++)
    complete(&p, &small[i], pl[i], 0);
  inst_close(&p);
  free(f);
}
END_TEST

/* Runs a named op to completion with a measured duration. */
static void measure(inst *p, fake *f, const char *name, uint64_t ns) {
  cua_op_info op = cost_op(0, name);
  cua_placement pl = run(p, f, &op);

  complete(p, &op, pl, ns);
}

/* Places @p big (no hint) on stream 0 of two, then counts how many 1 ms ops
 * go to stream 1 before one goes back to stream 0: that is how long the
 * policy thinks @p big runs, in ms. */
static int estimate_ms(inst *p, fake *f, const char *big) {
  cua_op_info b = cost_op(0, big), s[64];
  cua_placement bpl = run(p, f, &b), spl[64];
  int n = 0, on1 = 0;

  assert_at(bpl, 0, 0);
  for (; n < 64; n++) {
    s[n] = cost_op(1000000, NULL);
    spl[n] = run(p, f, &s[n]);
    if (spl[n].stream == 0) {
      n++;
      break;
    }
    on1++;
  }
  complete(p, &b, bpl, 0);
  for (int i = 0; i < n; i++)
    complete(p, &s[i], spl[i], 0);
  return on1;
}

START_TEST(test_ll_time_uses_measured_durations) {
  fake *f = fake_new(1);
  inst p;
  const char *const kv[] = {"streams=2", "alpha=0.5", "default_cost_ns=1000",
                            NULL};

  open_ok(&p, f, "least-loaded", kv);
  /* Unknown: default cost (1 us), so the first 1 ms op balances at once. */
  ck_assert_int_eq(estimate_ms(&p, f, "gemm"), 1);
  /* Measured 5 ms: five 1 ms ops fit beside it (ties go to stream 0). */
  measure(&p, f, "gemm", 5000000);
  ck_assert_int_eq(estimate_ms(&p, f, "gemm"), 5);
  /* Not measured (0) is ignored. */
  measure(&p, f, "gemm", 0);
  ck_assert_int_eq(estimate_ms(&p, f, "gemm"), 5);
  /* alpha 0.5: 5 ms and then 1 ms average to 3 ms. */
  measure(&p, f, "gemm", 1000000);
  ck_assert_int_eq(estimate_ms(&p, f, "gemm"), 3);
  /* The measurement belongs to its name only. */
  ck_assert_int_eq(estimate_ms(&p, f, "other"), 1);
  /* A measurement beats the hint for a named op. */
  {
    cua_op_info b = cost_op(1000, "gemm");
    cua_placement bpl = run(&p, f, &b);
    cua_op_info s = cost_op(2000000, NULL);
    cua_placement spl = run(&p, f, &s);
    cua_op_info t = cost_op(1, NULL);
    /* gemm estimated 3 ms, s 2 ms: the next goes beside s. */
    assert_at(bpl, 0, 0);
    assert_at(spl, 0, 1);
    assert_at(run(&p, f, &t), 0, 1);
    complete(&p, &b, bpl, 0);
    complete(&p, &s, spl, 0);
    complete(&p, &t, (cua_placement){.device = 0, .stream = 1}, 0);
  }
  ck_assert_ptr_nonnull(strstr(dump_text(&p), "gemm"));
  inst_close(&p);
  free(f);
}
END_TEST

/* heft plans each op when place() first asks for it or for a later op
 * of its order, and that plan is the one made all at once: a random DAG
 * of HEFT_OPS ops over two devices, placed in DAG order by one instance
 * and in reverse by another (each place() then plans up to its op, most
 * of the DAG at once). After begin and one place(), only that op is
 * planned. */
#define HEFT_OPS 300
START_TEST(test_heft_plans_as_asked) {
  static cua_dag_op ops[HEFT_OPS];
  static size_t ins[HEFT_OPS * 3], succ[HEFT_OPS * 3], nsucc[HEFT_OPS];
  size_t nin = 0;
  srand(11);
  memset(ops, 0, sizeof ops);
  memset(nsucc, 0, sizeof nsucc);
  uint64_t base = next_op_id;
  for (size_t i = 0; i < HEFT_OPS; i++) {
    cua_dag_op *op = &ops[i];
    op->op_id = base + i;
    op->kind = CUA_OP_FUNC;
    op->preferred_device = op->data_device = op->restrict_device = -1;
    op->cost_ns = 1000 * (uint64_t)(1 + rand() % 50);
    op->inputs = &ins[nin];
    for (int k = 0; i > 0 && k < rand() % 4; k++) {
      size_t j = (size_t)rand() % i;
      int dup = 0;
      for (size_t q = 0; q < op->ninputs; q++)
        dup |= op->inputs[q] == j;
      if (dup)
        continue;
      ins[nin++] = j;
      op->ninputs++;
      if (ops[j].level + 1 > op->level)
        op->level = ops[j].level + 1;
      nsucc[j]++;
    }
  }
  next_op_id = base + HEFT_OPS;
  size_t off = 0;
  for (size_t i = 0; i < HEFT_OPS; i++) {
    ops[i].successors = &succ[off];
    off += nsucc[i];
  }
  for (size_t i = 0; i < HEFT_OPS; i++)
    for (size_t k = 0; k < ops[i].ninputs; k++) {
      cua_dag_op *in = &ops[ops[i].inputs[k]];
      ((size_t *)in->successors)[in->nsuccessors++] = i;
    }
  cua_dag dag = {
      .size = sizeof dag, .submission = 1, .ops = ops, .nops = HEFT_OPS};
  cua_placement got[2][HEFT_OPS];
  for (int way = 0; way < 2; way++) {
    fake *f = fake_new(2);
    inst p;
    open_ok(&p, f, "heft", NULL);
    p.d->submission_begin(p.state, &dag);
    cua_op_info op = op_new();
    for (size_t r = 0; r < HEFT_OPS; r++) {
      size_t i = way == 0 ? r : HEFT_OPS - 1 - r;
      op.op_id = ops[i].op_id;
      op.cost_ns = ops[i].cost_ns;
      got[way][i] = place(&p, f, &op);
      if (way == 0 && r == 0)
        ck_assert_msg(strstr(dump_text(&p), "ops planned 1,") != NULL,
                      "after one place(): %s", dump_text(&p));
    }
    ck_assert_ptr_nonnull(strstr(dump_text(&p), "ops planned 300,"));
    p.d->submission_end(p.state, 1);
    inst_close(&p);
    free(f);
  }
  for (size_t i = 0; i < HEFT_OPS; i++)
    assert_at(got[1][i], got[0][i].device, got[0][i].stream);
  /* A DAG without edges (the core may give every op inputs NULL): each op
   * where it finishes first, the three of them on three streams. */
  cua_dag_op lone[3];
  memset(lone, 0, sizeof lone);
  for (size_t i = 0; i < 3; i++) {
    lone[i].op_id = next_op_id + i;
    lone[i].kind = CUA_OP_FUNC;
    lone[i].preferred_device = lone[i].data_device = -1;
    lone[i].restrict_device = -1;
    lone[i].cost_ns = 10000;
  }
  cua_dag flat = {.size = sizeof flat, .submission = 2, .ops = lone, .nops = 3};
  fake *f = fake_new(1);
  inst p;
  open_ok(&p, f, "heft", NULL);
  p.d->submission_begin(p.state, &flat);
  int used = 0;
  for (size_t i = 0; i < 3; i++) {
    cua_op_info op = op_new();
    op.submission = 2;
    op.op_id = lone[i].op_id;
    op.cost_ns = 10000;
    used |= 1 << place(&p, f, &op).stream;
  }
  ck_assert_int_eq(used, 7);
  p.d->submission_end(p.state, 2);
  inst_close(&p);
  free(f);
}
END_TEST

/* dmda takes the core's model over a cost hint, per device, and the
 * transfer model over peer_gbps. (heft plans whole DAGs, which this
 * harness does not give; check_models runs it on a runtime.) */
START_TEST(test_dmda_asks_the_models) {
  const char *const names[] = {"dmda"};
  for (int k = 0; k < 1; k++) {
    fake *f = fake_new(1);
    inst p;
    const char *const kv[] = {"streams=2", "default_cost_ns=1000", NULL};
    f->model_name = "big";
    f->model_ns = 5000000;
    f->model_dev = 0;
    open_ok(&p, f, names[k], kv);
    /* "big" claims 1 us, the model says 5 ms: 1 ms ops go beside it, two
     * in a row, where its hint would have let the second share its
     * stream. */
    cua_op_info a = cost_op(1000, "big"), b = cost_op(1000000, NULL),
                c = cost_op(1000000, NULL);
    cua_placement pa = run(&p, f, &a), pb = run(&p, f, &b), pc = run(&p, f, &c);
    ck_assert_msg(pb.stream != pa.stream && pc.stream != pa.stream,
                  "%s: big on %d, then %d and %d", names[k], pa.stream,
                  pb.stream, pc.stream);
    ck_assert_int_gt(f->model_calls, 0);
    complete(&p, &a, pa, 5000000);
    complete(&p, &b, pb, 1000000);
    complete(&p, &c, pc, 1000000);
    inst_close(&p);
    free(f);
  }
  /* The transfer model replaces peer_gbps: an op whose data is on device
   * 1 is kept there when reaching it from device 0 would take 1 s. */
  {
    fake *f = fake_new(2);
    inst p;
    const char *const kv[] = {"streams=1", "peer_gbps=1000000", NULL};
    f->xfer_ns = 1000000000;
    open_ok(&p, f, "dmda", kv);
    cua_op_info a = cost_op(1000, NULL);
    a.data_device = 1;
    a.bytes = 1;
    /* Device 0 busy for 1 ms first: without the transfer model the op
     * would still go to 1 (it is free), so busy device 1 instead. */
    cua_op_info busy = cost_op(1000000, NULL);
    busy.restrict_device = 1;
    cua_placement pbusy = run(&p, f, &busy);
    assert_at(pbusy, 1, 0);
    cua_placement pa = run(&p, f, &a);
    assert_at(pa, 1, 0);
    ck_assert_int_gt(f->xfer_calls, 0);
    complete(&p, &busy, pbusy, 1000000);
    complete(&p, &a, pa, 1000);
    inst_close(&p);
    free(f);
  }
}
END_TEST

START_TEST(test_ll_time_chain_wins_ties) {
  fake *f = fake_new(2);
  inst p;
  cua_op_info a = cost_op(5000, NULL), b;
  cua_placement pa, pb;

  open_ok(&p, f, "least-loaded", NULL);
  pa = run(&p, f, &a);
  complete(&p, &a, pa, 4000);
  /* All idle again: the chain's stream (1,3) ties with (0,0) and wins. */
  b = cost_op(5000, NULL);
  b.then_of.device = 1;
  b.then_of.stream = 3;
  pb = run(&p, f, &b);
  assert_at(pb, 1, 3);
  /* Restricted elsewhere: the chain is broken. */
  b = cost_op(5000, NULL);
  b.then_of = pb;
  b.restrict_device = 0;
  ck_assert_int_eq(run(&p, f, &b).device, 0);
  inst_close(&p);
  free(f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* affinity */

static const char *const two_rules[] = {"rule=tag:prefill -> 0",
                                        "rule=  tag:decode->1  ", NULL};

static cua_op_info tag_op(const char *tag) {
  cua_op_info op = op_new();

  op.tag = tag;
  return op;
}

START_TEST(test_affinity_follows_tags) {
  fake *f = fake_new(2);
  inst p;

  open_ok(&p, f, "affinity", two_rules);
  ck_assert_str_eq(f->nested_name, "round-robin");
  ck_assert_int_eq(f->nested_opens, 1);
  for (int i = 0; i < 8; i++) {
    cua_op_info d = tag_op("decode"), q = tag_op("prefill");
    cua_placement pd = run(&p, f, &d), pq = run(&p, f, &q);
    ck_assert_int_eq(pd.device, 1);
    ck_assert_int_eq(pq.device, 0);
    /* The nested round-robin rotates within the device. */
    ck_assert_int_eq(pd.stream, i % 4);
    ck_assert_int_eq(f->nested_restrict, 0);
  }
  ck_assert_int_eq(f->nested_places, 16);
  ck_assert_int_eq(f->nested_submits, 16);
  inst_close(&p);
  ck_assert_int_eq(f->nested_closes, 1);
  free(f);
}
END_TEST

START_TEST(test_affinity_decision_order) {
  fake *f = fake_new(3);
  inst p;
  const char *const kv[] = {"rule=tag:t -> 2", "fallback=first", NULL};
  cua_op_info op;

  open_ok(&p, f, "affinity", kv);
  /* restrict_device beats the hint, the tag and the data. */
  op = tag_op("t");
  op.restrict_device = 0;
  op.preferred_device = 1;
  op.data_device = 1;
  ck_assert_int_eq(run(&p, f, &op).device, 0);
  /* The hint beats the tag. */
  op.restrict_device = -1;
  ck_assert_int_eq(run(&p, f, &op).device, 1);
  ck_assert_int_eq(f->nested_restrict, 1);
  /* The tag beats the data. */
  op.preferred_device = -1;
  ck_assert_int_eq(run(&p, f, &op).device, 2);
  /* A hint naming no device is ignored. */
  op.preferred_device = 9;
  ck_assert_int_eq(run(&p, f, &op).device, 2);
  /* The data beats the fallback. */
  op.tag = "unknown";
  ck_assert_int_eq(run(&p, f, &op).device, 1);
  op.tag = NULL;
  ck_assert_int_eq(run(&p, f, &op).device, 1);
  /* Nothing: fallback first. */
  op.data_device = -1;
  for (int i = 0; i < 5; i++)
    ck_assert_int_eq(run(&p, f, &op).device, 0);
  ck_assert_ptr_nonnull(strstr(dump_text(&p), "tag:t -> 2"));
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_affinity_fallback_spread) {
  fake *f = fake_new(2);
  inst p;
  int seen[2] = {0, 0};

  open_ok(&p, f, "affinity", two_rules);
  for (int i = 0; i < 8; i++) {
    cua_op_info op = tag_op(i % 2 ? "other" : NULL);
    seen[run(&p, f, &op).device]++;
    /* The nested policy was free to choose. */
    ck_assert_int_eq(f->nested_restrict, -1);
  }
  ck_assert_int_eq(seen[0], 4);
  ck_assert_int_eq(seen[1], 4);
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_affinity_fallback_error) {
  fake *f = fake_new(2);
  inst p;
  const char *const kv[] = {"rule=tag:a -> 1", "fallback=error", NULL};
  cua_op_info op = tag_op("b");
  cua_placement pl;

  open_ok(&p, f, "affinity", kv);
  op.name = "mystery";
  ck_assert_int_eq(p.d->place(p.state, &op, &pl), CUA_ERR_POLICY);
  ck_assert_msg(log_has(f, "mystery") && log_has(f, "fallback = error"),
                "log: %s", log_all(f));
  op.tag = "a";
  ck_assert_int_eq(run(&p, f, &op).device, 1);
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_affinity_bad_rules_fail_create) {
  static const char *const bad[] = {
      "prefill -> 0", "tag:prefill => 0",
      "tag: -> 0",    "tag:x ->",
      "tag:x -> -1",  "tag:x -> one",
      "tag:x -> 1 2", "name:x -> 0",
      "tag:x -> 2",   "tag:x -> 99999999999999999999",
  };

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    fake *f = fake_new(2);
    inst p;
    char rule[128], quoted[140];
    const char *kv[] = {"rule=tag:ok -> 1", rule, NULL};
    snprintf(rule, sizeof rule, "rule=%s", bad[i]);
    snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
    ck_assert_msg(inst_open(&p, f, "affinity", kv) < 0, "'%s' accepted",
                  bad[i]);
    ck_assert_msg(log_has(f, quoted), "log lacks %s: %s", quoted, log_all(f));
    /* Nothing was opened, or it was closed again. */
    ck_assert_int_eq(f->nested_opens, f->nested_closes);
    free(f);
  }
  {
    fake *f = fake_new(2);
    inst p;
    const char *const dup[] = {"rule=tag:a -> 0", "rule=tag:a -> 0",
                               "rule=tag:a -> 1", NULL};
    const char *const same[] = {"rule=tag:a -> 0", "rule=tag:a->0", NULL};
    ck_assert_int_eq(inst_open(&p, f, "affinity", dup), CUA_ERR_INVAL);
    ck_assert(log_has(f, "'tag:a -> 1'"));
    open_ok(&p, f, "affinity", same);
    inst_close(&p);
    free(f);
  }
}
END_TEST

START_TEST(test_affinity_within) {
  fake *f = fake_new(2);
  inst p;
  const char *const ss[] = {"within=single-stream", "rule=tag:x -> 1", NULL};
  const char *const self[] = {"within=affinity", NULL};
  const char *const none[] = {"within=no-such-policy", NULL};

  open_ok(&p, f, "affinity", ss);
  ck_assert_str_eq(f->nested_name, "single-stream");
  for (int i = 0; i < 10; i++) {
    cua_op_info op = tag_op(i % 2 ? "x" : NULL);
    op.data_device = i % 2 ? -1 : 0;
    assert_at(run(&p, f, &op), i % 2, 0);
  }
  ck_assert_int_le(f->max_ensure[0], 1);
  ck_assert_int_le(f->max_ensure[1], 1);
  inst_close(&p);
  ck_assert_int_eq(f->nested_closes, 1);

  ck_assert_int_lt(inst_open(&p, f, "affinity", self), 0);
  ck_assert(log_has(f, "within = 'affinity'"));
  ck_assert_int_lt(inst_open(&p, f, "affinity", none), 0);
  ck_assert(log_has(f, "within = 'no-such-policy'"));
  ck_assert_int_eq(f->nested_opens, f->nested_closes);
  /* A path works too (the core then does not compare the name). */
  {
    char path[4200];
    const char *kv[] = {path, NULL};
    snprintf(path, sizeof path, "within=%s",
             built("policies/.libs/single-stream.so"));
    open_ok(&p, f, "affinity", kv);
    ck_assert_ptr_nonnull(strstr(f->nested_name, "single-stream.so"));
    inst_close(&p);
  }
  ck_assert_int_eq(f->nested_opens, f->nested_closes);
  free(f);
}
END_TEST

START_TEST(test_affinity_forwards_and_checks_nested) {
  fake *f = fake_new(2);
  inst p;
  const char *const kv[] = {"within=least-loaded", "rule=tag:x -> 1", NULL};
  cua_op_info op = tag_op("x");
  cua_placement pl;

  f->nested_cfg_name = "least-loaded";
  f->nested_kv[0] = "streams=2";
  open_ok(&p, f, "affinity", kv);
  op.cost_ns = 1000000;
  pl = run(&p, f, &op);
  assert_at(pl, 1, 0);
  ck_assert_int_eq(f->max_ensure[1], 2);
  ck_assert_int_eq(f->nested_submits, 1);
  /* Stream 0 of device 1 is busy with it, as the nested policy knows. */
  op = tag_op("x");
  assert_at(run(&p, f, &op), 1, 1);
  complete(&p, &op, pl, 5);
  ck_assert_int_eq(f->nested_completes, 1);
  /* A nested policy that ignores the device it was given fails the op. */
  f->nested_sabotage = 1;
  op = tag_op("x");
  ck_assert_int_eq(p.d->place(p.state, &op, &pl), CUA_ERR_BAD_PLACEMENT);
  ck_assert(log_has(f, "least-loaded"));
  inst_close(&p);
  free(f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Every policy. */

typedef struct config {
  const char *name;
  const char *kv[MAXKV];
  int may_refuse; /* place() may fail ops (affinity, fallback = error) */
} config;

static const config configs[] = {
    {"single-stream", {NULL}, 0},
    {"single-stream", {"device=2", NULL}, 0},
    {"round-robin", {NULL}, 0},
    {"round-robin", {"by_level=true", "streams=3", NULL}, 0},
    {"round-robin", {"devices=preferred", "streams=1", NULL}, 0},
    {"least-loaded", {NULL}, 0},
    {"least-loaded", {"measure=ops", "streams=2", NULL}, 0},
    {"least-loaded", {"alpha=1", "default_cost_ns=0", "streams=7", NULL}, 0},
    {"affinity", {"rule=tag:a -> 0", "rule=tag:b -> 2", NULL}, 0},
    {"affinity", {"within=least-loaded", "fallback=first", NULL}, 0},
    {"affinity",
     {"within=scatter", "rule=tag:c -> 1", "fallback=error", NULL},
     1},
    {"scatter", {NULL}, 0},
    {"scatter", {"devices=first", "seed=7", "streams=5", NULL}, 0},
    {"heft", {NULL}, 0},
    {"heft", {"streams=2", "default_cost_ns=0", "peer_gbps=0.001", NULL}, 0},
    {"dmda", {NULL}, 0},
    {"dmda", {"streams=3", "peer_gbps=1", "default_cost_ns=0", NULL}, 0},
    {"work-stealing", {NULL}, 0},
    {"work-stealing",
     {"streams=3", "steal=false", "default_cost_ns=0", NULL},
     0},
};
#define NCONFIGS ((int)(sizeof configs / sizeof configs[0]))

START_TEST(test_descriptor_and_schema) {
  const config *c = &configs[_i];
  void *dl;
  const cua_policy_descriptor *d = load_desc(c->name, &dl);
  cua_param_value v[MAXPARAMS];

  ck_assert_msg(d != NULL, "dlopen %s: %s", module_path(c->name), dlerror());

  ck_assert_ptr_nonnull(d->version);
  ck_assert_ptr_nonnull(d->description);
  ck_assert_ptr_nonnull(d->dump);
  ck_assert(d->nparams == 0 || d->params != NULL);
  for (size_t i = 0; i < d->nparams; i++) {
    ck_assert_ptr_nonnull(d->params[i].name);
    ck_assert_ptr_nonnull(d->params[i].help);
    ck_assert(d->params[i].type != CUA_PARAM_ENUM ||
              d->params[i].choices != NULL);
  }
  /* Every default parses and lies in its own range. */
  build_values(d, c->kv, v);
  free_values(d, v);
  dlclose(dl);
}
END_TEST

START_TEST(test_honours_restrict_device) {
  const config *c = &configs[_i];
  fake *f = fake_new(3);
  inst p;

  open_ok(&p, f, c->name, c->kv);
  for (int i = 0; i < 300; i++) {
    cua_op_info op = op_new();
    op.restrict_device = i % 3;
    op.preferred_device = (i + 1) % 3;
    op.data_device = (i + 2) % 3;
    op.then_of.device = (i + 1) % 3;
    op.then_of.stream = 0;
    op.tag = i % 2 ? "a" : "b";
    ck_assert_int_eq(run(&p, f, &op).device, i % 3);
  }
  /* A device that does not exist is an error, never a crash. */
  {
    cua_op_info op = op_new();
    cua_placement pl;
    op.restrict_device = 3;
    ck_assert_int_lt(p.d->place(p.state, &op, &pl), 0);
  }
  inst_close(&p);
  free(f);
}
END_TEST

static const char *random_name(char *buf, size_t len) {
  static const char *const names[] = {"gemm", "copy", "x", ""};

  switch (rand() % 4) {
  case 0:
    return NULL;
  case 1:
    /* Many distinct names, more than least-loaded learns. */
    snprintf(buf, len, "op-%d", rand() % 6000);
    return buf;
  default:
    return names[rand() % 4];
  }
}

typedef struct pending {
  cua_op_info op;
  cua_placement pl;
} pending;

START_TEST(test_places_random_ops_validly) {
  const config *c = &configs[_i];
  fake *f = fake_new(3);
  inst p;
  static const char *const tags[] = {NULL, "a", "b", "c", "zz"};
  cua_placement *done = calloc(10000, sizeof *done);
  pending *fl = calloc(10000, sizeof *fl);
  size_t nfl = 0, ndone = 0;
  uint64_t sub = 1;
  int refused = 0;
  char namebuf[32];

  ck_assert_ptr_nonnull(done);
  ck_assert_ptr_nonnull(fl);
  srand(1234 + (unsigned)_i);
  open_ok(&p, f, c->name, c->kv);
  for (int i = 0; i < 10000; i++) {
    cua_op_info op = op_new();
    cua_placement pl = {.device = -1, .stream = -1};
    cua_op_input in[2];
    int rc;
    op.kind = (cua_op_kind)(rand() % 23); /* some are not kinds at all */
    op.name = random_name(namebuf, sizeof namebuf);
    op.tag = tags[rand() % 5];
    op.preferred_device = rand() % 6 - 1;
    op.cost_ns = rand() % 3 ? 0 : (uint64_t)rand() * 1000;
    op.bytes = (uint64_t)rand();
    op.priority = rand() % 5 - 2;
    op.data_device = rand() % 5 - 1;
    op.restrict_device = rand() % 3 ? -1 : rand() % 3;
    op.level = rand() % 10 ? (uint32_t)(rand() % 40) : (uint32_t)rand();
    if (rand() % 20 == 0)
      sub++;
    op.submission = rand() % 10 ? sub : sub - (uint64_t)(rand() % 3);
    if (ndone > 0 && rand() % 2)
      op.then_of = done[rand() % ndone];
    else if (rand() % 10 == 0)
      op.then_of = (cua_placement){.device = rand() % 6 - 1,
                                   .stream = rand() % 2000 - 1};
    if (ndone > 1 && rand() % 2) {
      memset(in, 0, sizeof in);
      for (int k = 0; k < 2; k++) {
        size_t j = (size_t)rand() % ndone;
        in[k].op_id = j + 1;
        in[k].where = done[j];
        in[k].expected_end_ns = f->now + (uint64_t)(rand() % 100000);
      }
      op.inputs = in;
      op.ninputs = 2;
    }
    f->ops[rand() % 3][rand() % 4] = (uint64_t)(rand() % 5);
    f->now += 1000;
    rc = p.d->place(p.state, &op, &pl);
    if (rc != 0) {
      ck_assert_msg(c->may_refuse && rc == CUA_ERR_POLICY,
                    "%s refused op %d (%d): %s", c->name, i, rc, log_all(f));
      refused++;
      continue;
    }
    assert_valid(f, &op, pl, c->name);
    done[ndone++] = pl;
    if (rand() % 10 == 0)
      continue; /* placed, but never enqueued */
    if (p.d->submitted != NULL)
      p.d->submitted(p.state, &op, pl);
    fl[nfl].op = op;
    fl[nfl].op.name = op.name ? "n" : NULL; /* namebuf is reused */
    fl[nfl].op.inputs = NULL;
    fl[nfl++].pl = pl;
    /* Complete a few in-flight ops, in any order. */
    while (nfl > 0 && rand() % 3 == 0) {
      size_t k = (size_t)rand() % nfl;
      complete(&p, &fl[k].op, fl[k].pl,
               rand() % 4 ? (uint64_t)rand() % 10000000 : 0);
      fl[k] = fl[--nfl];
    }
  }
  if (c->may_refuse)
    ck_assert_int_gt(refused, 0);
  while (nfl > 0) {
    nfl--;
    complete(&p, &fl[nfl].op, fl[nfl].pl, 1000);
  }
  /* With nothing in flight, least-loaded is back to its first choice. */
  if (strcmp(c->name, "least-loaded") == 0) {
    cua_op_info op = op_new();
    memset(f->ops, 0, sizeof f->ops);
    assert_at(run(&p, f, &op), 0, 0);
  }
  ck_assert_uint_gt(strlen(dump_text(&p)), 0);
  inst_close(&p);
  free(done);
  free(fl);
  free(f);
}
END_TEST

START_TEST(test_create_destroy_many) {
  const config *c = &configs[_i];
  fake *f = fake_new(3);

  for (int i = 0; i < 1000; i++) {
    inst p;
    open_ok(&p, f, c->name, c->kv);
    if (i % 100 == 0) {
      cua_op_info op = tag_op("a");
      op.name = "gemm";
      op.data_device = 1; /* decides the device under fallback = error */
      complete(&p, &op, run(&p, f, &op), 100);
      op = op_new();
      op.data_device = 1;
      run(&p, f, &op); /* destroyed with this op in flight */
    }
    inst_close(&p);
  }
  ck_assert_int_eq(f->nested_opens, f->nested_closes);
  free(f);
}
END_TEST

START_TEST(test_many_instances_at_once) {
  const config *c = &configs[_i];
  fake *f = fake_new(3);
  inst p[16];

  for (int i = 0; i < 16; i++)
    open_ok(&p[i], f, c->name, c->kv);
  for (int i = 0; i < 160; i++) {
    cua_op_info op = tag_op("a");
    op.data_device = i % 3;
    run(&p[i % 16], f, &op);
  }
  for (int i = 0; i < 16; i++)
    inst_close(&p[i]);
  free(f);
}
END_TEST

START_TEST(test_stream_failure_reported) {
  const config *c = &configs[_i];
  fake *f = fake_new(3);
  inst p;
  cua_op_info op = tag_op("a");
  cua_placement pl;

  f->fail_ensure = 1;
  if (inst_open(&p, f, c->name, c->kv) != 0) {
    /* Failing at create is allowed, if it says why. */
    ck_assert_int_gt(f->nlog, 0);
    free(f);
    return;
  }
  op.data_device = 0;
  ck_assert_int_lt(p.d->place(p.state, &op, &pl), 0);
  ck_assert_int_gt(f->nlog, 0);
  /* The device comes back: placements work again. */
  f->fail_ensure = 0;
  run(&p, f, &op);
  inst_close(&p);
  free(f);
}
END_TEST

START_TEST(test_no_device) {
  const config *c = &configs[_i];
  fake *f = fake_new(0);
  inst p;
  cua_op_info op = op_new();
  cua_placement pl;

  if (inst_open(&p, f, c->name, c->kv) != 0) {
    ck_assert_int_gt(f->nlog, 0);
    free(f);
    return;
  }
  ck_assert_int_lt(p.d->place(p.state, &op, &pl), 0);
  ck_assert_int_gt(f->nlog, 0);
  ck_assert_uint_gt(strlen(dump_text(&p)), 0);
  inst_close(&p);
  free(f);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* scatter */

START_TEST(test_scatter_ignores_chains_and_replays) {
  fake *f = fake_new(2);
  inst a, b;
  const char *const kv[] = {"seed=42", NULL};
  const char *const first[] = {"devices=first", "streams=8", NULL};
  int moved = 0, seen[2][4] = {{0}};

  open_ok(&a, f, "scatter", kv);
  open_ok(&b, f, "scatter", kv);
  for (int i = 0; i < 400; i++) {
    cua_op_info op = op_new();
    cua_placement pa, pb;
    op.then_of.device = 0;
    op.then_of.stream = 0;
    pa = run(&a, f, &op);
    pb = run(&b, f, &op);
    assert_at(pb, pa.device, pa.stream);
    moved += pa.device != 0 || pa.stream != 0;
    seen[pa.device][pa.stream]++;
  }
  ck_assert_int_gt(moved, 200);
  for (int d = 0; d < 2; d++)
    for (int s = 0; s < 4; s++)
      ck_assert_int_gt(seen[d][s], 10);
  inst_close(&a);
  inst_close(&b);

  open_ok(&a, f, "scatter", first);
  for (int i = 0; i < 100; i++) {
    cua_op_info op = op_new();
    ck_assert_int_eq(run(&a, f, &op).device, 0);
  }
  ck_assert_int_eq(f->max_ensure[0], 8);
  inst_close(&a);
  free(f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("policies");
  TCase *t;

  t = tcase_create("single-stream");
  tcase_add_test(t, test_single_stream_stays_on_stream_0);
  tcase_add_test(t, test_single_stream_device_param);
  suite_add_tcase(s, t);

  t = tcase_create("round-robin");
  tcase_add_test(t, test_rr_rotates_across_devices);
  tcase_add_test(t, test_rr_rotates_per_device);
  tcase_add_test(t, test_rr_keeps_then_chains);
  tcase_add_test(t, test_rr_devices_preferred);
  tcase_add_test(t, test_rr_by_level_aligns_levels);
  tcase_add_test(t, test_rr_by_level_rotates_submissions);
  tcase_add_test(t, test_rr_by_level_devices_and_restrict);
  suite_add_tcase(s, t);

  t = tcase_create("least-loaded");
  tcase_add_test(t, test_ll_ops_avoids_busy_streams);
  tcase_add_test(t, test_ll_time_avoids_long_op);
  tcase_add_test(t, test_ll_time_uses_measured_durations);
  tcase_add_test(t, test_dmda_asks_the_models);
  tcase_add_test(t, test_heft_plans_as_asked);
  tcase_add_test(t, test_ll_time_chain_wins_ties);
  suite_add_tcase(s, t);

  t = tcase_create("affinity");
  tcase_add_test(t, test_affinity_follows_tags);
  tcase_add_test(t, test_affinity_decision_order);
  tcase_add_test(t, test_affinity_fallback_spread);
  tcase_add_test(t, test_affinity_fallback_error);
  tcase_add_test(t, test_affinity_bad_rules_fail_create);
  tcase_add_test(t, test_affinity_within);
  tcase_add_test(t, test_affinity_forwards_and_checks_nested);
  suite_add_tcase(s, t);

  t = tcase_create("scatter");
  tcase_add_test(t, test_scatter_ignores_chains_and_replays);
  suite_add_tcase(s, t);

  t = tcase_create("every policy");
  tcase_set_timeout(t, 600);
  tcase_add_loop_test(t, test_descriptor_and_schema, 0, NCONFIGS);
  tcase_add_loop_test(t, test_honours_restrict_device, 0, NCONFIGS);
  tcase_add_loop_test(t, test_places_random_ops_validly, 0, NCONFIGS);
  tcase_add_loop_test(t, test_create_destroy_many, 0, NCONFIGS);
  tcase_add_loop_test(t, test_many_instances_at_once, 0, NCONFIGS);
  tcase_add_loop_test(t, test_stream_failure_reported, 0, NCONFIGS);
  tcase_add_loop_test(t, test_no_device, 0, NCONFIGS);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  return run_suite(suite());
}
