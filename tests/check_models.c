/*
 * tests/check_models.c: the core's performance models ([runtime] models,
 * cua_policy_host::expected_duration and ::expected_transfer,
 * cua_runtime_models()): learned from runs, kept per host and device in a
 * file a later process loads, a regression over sizes, a transfer model,
 * and files that are corrupt, foreign or unwritable (a warning, never a
 * failure). Host backend; a registered policy ("probe") records what the
 * models tell it. $CUASYNC_MODELS, which the test environment sets, is
 * unset first.
 */
#include "helpers.h"

#include <cuasync/errors.h>
#include <cuasync/policy.h>

#include <fcntl.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

/* ------------------------------------------------------------ the probe */

/* What probe's place() was told for the last op, and for an op of another
 * device (probe places on the op's preferred device, else 0). */
static cua_estimate seen, seen_other, seen_xfer;
static int seen_rc_bad_size, seen_rc_bad_dev, seen_rc_bad_xfer;

static int pr_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  for (int d = 0; d < host->device_count(host->core); d++)
    if (host->ensure_streams(host->core, d, 1) != 0)
      return CUA_ERR_NOMEM;
  *state = (void *)host;
  return 0;
}

static int pr_place(void *state, const cua_op_info *op, cua_placement *out) {
  const cua_policy_host *h = state;
  int dev = op->preferred_device >= 0 ? op->preferred_device : 0;
  int ndev = h->device_count(h->core);
  memset(&seen, 0, sizeof seen);
  seen.size = sizeof seen;
  memset(&seen_other, 0, sizeof seen_other);
  seen_other.size = sizeof seen_other;
  memset(&seen_xfer, 0, sizeof seen_xfer);
  seen_xfer.size = sizeof seen_xfer;
  ck_assert_int_eq(h->expected_duration(h->core, op, dev, &seen), 0);
  if (ndev > 1)
    ck_assert_int_eq(
        h->expected_duration(h->core, op, (dev + 1) % ndev, &seen_other), 0);
  ck_assert_int_eq(
      h->expected_transfer(h->core, -1, dev, op->bytes, &seen_xfer), 0);
  cua_estimate tiny = {.size = 1};
  seen_rc_bad_size = h->expected_duration(h->core, op, dev, &tiny);
  cua_estimate e = {.size = sizeof e};
  seen_rc_bad_dev = h->expected_duration(h->core, op, ndev, &e);
  seen_rc_bad_xfer = h->expected_transfer(h->core, -2, dev, 1, &e);
  out->device = dev;
  out->stream = 0;
  return 0;
}

static const cua_policy_descriptor probe =
    CUA_POLICY_INIT(.name = "probe", .version = "1",
                    .description = "asks the models", .create = pr_create,
                    .place = pr_place);

static void register_probe(void) {
  int rc = cua_policy_register(&probe);
  ck_assert_msg(rc == 0 || rc == CUA_ERR_INVAL, "register: %s",
                cua_runtime_error(NULL));
}

/* ------------------------------------------------------------ helpers */

static char dir[4096];

/* A fresh directory under the tests' cache ($XDG_CACHE_HOME, which
 * `make clean` removes). */
static void make_dir(void) {
  const char *cache = getenv("XDG_CACHE_HOME");
  ck_assert_msg(cache != NULL && cache[0] == '/',
                "XDG_CACHE_HOME is not set (tests/local.mk sets it)");
  mkdir(cache, 0700);
  snprintf(dir, sizeof dir, "%s/models-XXXXXX", cache);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* @p s escaped as the model file writes a field, appended to @p out at
 * @p o (room @p len); returns the new length. */
static size_t escape_into(char *out, size_t o, size_t len, const char *s) {
  if (strcmp(s, "-") == 0)
    return o + (size_t)snprintf(out + o, len - o, "%%2D");
  for (; *s && o + 4 < len; s++) {
    unsigned char c = (unsigned char)*s;
    if (c <= ' ' || c == 0x7f || c == '%' || c == '/')
      o += (size_t)snprintf(out + o, len - o, "%%%02X", c);
    else
      out[o++] = (char)c;
  }
  out[o] = '\0';
  return o;
}

/* The host name as the model file's name writes it. */
static const char *host_field(void) {
  static char out[1024];
  char host[256] = "unknown";
  if (gethostname(host, sizeof host - 1) != 0)
    strcpy(host, "unknown");
  host[sizeof host - 1] = '\0';
  escape_into(out, 0, sizeof out, host);
  return out;
}

static const char *model_file(const char *d) {
  static char buf[8192];
  snprintf(buf, sizeof buf, "%s/models-%s.txt", d, host_field());
  return buf;
}

static cua_runtime *open_models(const char *models, const char *extra) {
  char text[8192];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = probe\nmodels = %s\n%s", models,
           extra ? extra : "");
  cua_runtime *rt = NULL;
  int rc = open_text(&rt, text);
  ck_assert_msg(rc == 0, "runtime: %s", cua_runtime_error(NULL));
  return rt;
}

/* Runs a spin of @p ns named @p name on @p device. */
static void spin(cua_runtime *rt, const char *name, uint64_t ns, int device) {
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, ns, 1), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = name;
  h.device = device;
  ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
  ck_assert_msg(run_op(rt, op) == 0, "%s", cua_runtime_error(rt));
}

/* Runs a memset of @p bytes (a fresh buffer each time). */
static void memset_op(cua_runtime *rt, size_t bytes) {
  cua_buffer *b;
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, bytes, 0), 0);
  cua_op *op;
  ck_assert_int_eq(cua_op_memset(&op, b, 0, 1, bytes), 0);
  ck_assert_msg(run_op(rt, op) == 0, "%s", cua_runtime_error(rt));
  cua_buffer_destroy(b);
}

typedef struct found {
  int n;
  cua_model_entry e;
  int kind;
  const char *name;
  int transfer;
} found;

static int find_entry(const cua_model_entry *e, void *arg) {
  found *f = arg;
  if (e->transfer != f->transfer)
    return 0;
  if (!f->transfer && ((int)e->kind != f->kind || e->name == NULL ||
                       f->name == NULL || strcmp(e->name, f->name) != 0))
    return 0;
  f->n++;
  f->e = *e;
  f->e.name = NULL;
  f->e.tag = NULL;
  return 0;
}

static found lookup(cua_runtime *rt, int kind, const char *name) {
  found f = {0};
  f.kind = kind;
  f.name = name;
  f.transfer = kind < 0;
  ck_assert_int_eq(cua_runtime_models(rt, find_entry, &f, NULL), 0);
  return f;
}

static int count_entry(const cua_model_entry *e, void *arg) {
  (void)e;
  ++*(int *)arg;
  return 0;
}

static int entries(cua_runtime *rt) {
  int n = 0;
  ck_assert_int_eq(cua_runtime_models(rt, count_entry, &n, NULL), 0);
  return n;
}

/* Standard error goes to a file while a test's runtime speaks. */
static int saved_err = -1;
static char err_path[4200];

static void capture_begin(void) {
  snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
  fflush(stderr);
  saved_err = dup(2);
  int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge(fd, 0);
  dup2(fd, 2);
  close(fd);
}

static const char *capture_end(void) {
  static char buf[8192];
  fflush(stderr);
  dup2(saved_err, 2);
  close(saved_err);
  FILE *f = fopen(err_path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return NULL;
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* All of @p path, allocated anew each call (the previous one freed). */
static char *read_all_big(const char *path) {
  static char *buf;
  free(buf);
  buf = NULL;
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return NULL;
  size_t cap = 1 << 16, n = 0, k;
  buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (cap - n - 1 == 0) {
      buf = realloc(buf, cap *= 2);
      ck_assert_ptr_nonnull(buf);
    }
  }
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The host backend's device 0 as the model file names it. */
static const char *dev0_field(cua_runtime *rt) {
  static char out[512];
  cua_device_info info;
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  ck_assert_int_eq(cua_device_get_info(rt, 0, &info), 0);
  size_t o = (size_t)snprintf(out, sizeof out, "%d:", info.ordinal);
  escape_into(out, o, sizeof out, info.name);
  return out;
}

/* ------------------------------------------------------------ tests */

/* A run stores what it measured; another process loads it, and a policy
 * there gets the history as the expected duration. */
START_TEST(models_are_kept_for_the_next_process) {
  register_probe();
  make_dir();
  pid_t pid = fork();
  if (pid == 0) {
    cua_runtime *rt = open_models(dir, NULL);
    for (int i = 0; i < 4; i++)
      spin(rt, "short", 1000000, -1);
    for (int i = 0; i < 3; i++)
      spin(rt, "long", 4000000, -1);
    found f = lookup(rt, CUA_OP_SPIN, "short");
    int ok = f.n == 1 && f.e.samples == 4 && f.e.samples_new == 4;
    const char *file = NULL;
    cua_runtime_models(rt, count_entry, &(int){0}, &file);
    ok = ok && file != NULL && strcmp(file, model_file(dir)) == 0;
    cua_runtime_destroy(rt);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "the first process did not see its models");
  char *text = read_all(model_file(dir));
  ck_assert_msg(text != NULL, "no model file %s", model_file(dir));
  ck_assert_msg(strncmp(text, "cuasync-models 2 ", 17) == 0, "%s", text);

  cua_runtime *rt = open_models(dir, NULL);
  found f = lookup(rt, CUA_OP_SPIN, "short");
  ck_assert_int_eq(f.n, 1);
  ck_assert(f.e.samples == 4);
  ck_assert(f.e.samples_new == 0);
  /* A host spin never ends before its duration has passed; how much
   * later is the benchmark's business, not a test's (a loaded machine
   * stretches any spin). */
  ck_assert_uint_ge(f.e.mean_ns, 1000000);
  found g = lookup(rt, CUA_OP_SPIN, "long");
  ck_assert_int_eq(g.n, 1);
  ck_assert(g.e.samples == 3);
  ck_assert_uint_ge(g.e.mean_ns, 4000000);
  /* What a policy is told, for a fifth short spin. */
  spin(rt, "short", 1000000, -1);
  ck_assert_int_eq(seen.source, CUA_ESTIMATE_HISTORY);
  ck_assert_uint_eq(seen.ns, f.e.mean_ns);
  ck_assert(seen.samples == 4);
  ck_assert(seen.confidence > 0 && seen.confidence < 1);
  ck_assert_int_eq(seen_rc_bad_size, CUA_ERR_INVAL);
  ck_assert_int_eq(seen_rc_bad_dev, CUA_ERR_INVAL);
  ck_assert_int_eq(seen_rc_bad_xfer, CUA_ERR_INVAL);
  /* An op never measured: its cost hint. */
  spin(rt, "never", 3000, -1);
  ck_assert_int_eq(seen.source, CUA_ESTIMATE_HINT);
  ck_assert_uint_eq(seen.ns, 3000);
  ck_assert(seen.confidence == 0);
  cua_runtime_destroy(rt);

  /* The second run's sample was merged in. */
  rt = open_models(dir, NULL);
  f = lookup(rt, CUA_OP_SPIN, "short");
  ck_assert(f.e.samples == 5);
  cua_runtime_destroy(rt);
}
END_TEST

/* With no sample of an op's own size, a fit over the class's other sizes
 * answers. The file is written by hand: memsets of 1 MiB took 1 ms and of
 * 4 MiB 4 ms. */
START_TEST(a_regression_answers_for_sizes_not_measured) {
  register_probe();
  make_dir();
  cua_runtime *rt = open_models("memory", NULL);
  char dev[512];
  snprintf(dev, sizeof dev, "%s", dev0_field(rt));
  cua_runtime_destroy(rt);
  char text[4096];
  double x1 = 1048576, x4 = 4194304, y1 = 1e6, y4 = 4e6;
  snprintf(text, sizeof text,
           "cuasync-models 2 %s\n"
           "# written by check_models\n"
           "op host %s memset - - 0 21 4 %.17g %.17g %.17g %.17g %.17g\n"
           "op host %s memset - - 0 23 4 %.17g %.17g %.17g %.17g %.17g\n"
           "op cuda 0:Some%%20GPU memset - - 0 21 4 1 1 1 1 1\n",
           host_field(), dev, 4 * x1, 4 * x1 * x1, 4 * y1, 4 * y1 * y1,
           4 * x1 * y1, dev, 4 * x4, 4 * x4 * x4, 4 * y4, 4 * y4 * y4,
           4 * x4 * y4);
  write_file(model_file(dir), text);
  rt = open_models(dir, NULL);
  /* Only this backend's entries are loaded. */
  ck_assert_int_eq(entries(rt), 2);
  memset_op(rt, 2097152);
  ck_assert_int_eq(seen.source, CUA_ESTIMATE_REGRESSION);
  ck_assert_msg(seen.ns > 1950000 && seen.ns < 2050000, "expected 2 ms, %llu",
                (unsigned long long)seen.ns);
  ck_assert(seen.confidence > 0 && seen.confidence <= 0.5);
  /* A measured size answers from its history. */
  memset_op(rt, 1048576);
  ck_assert_int_eq(seen.source, CUA_ESTIMATE_HISTORY);
  ck_assert_uint_eq(seen.ns, 1000000);
  cua_runtime_destroy(rt);
  /* The other backend's entry is still in the file. */
  char *after = read_all(model_file(dir));
  ck_assert_ptr_nonnull(after);
  ck_assert_msg(strstr(after, "op cuda 0:Some%20GPU memset") != NULL, "%s",
                after);
}
END_TEST

/* Copies from host memory teach the transfer model. */
START_TEST(memcpys_teach_the_transfer_model) {
  register_probe();
  make_dir();
  cua_runtime *rt = open_models("memory", NULL);
  cua_buffer *b;
  size_t big = 8u << 20;
  char *src = calloc(1, big);
  ck_assert_ptr_nonnull(src);
  ck_assert_int_eq(cua_buffer_create(&b, rt, 0, big, 0), 0);
  for (int i = 0; i < 3; i++)
    for (size_t bytes = 1u << 20; bytes <= big; bytes *= 8) {
      cua_op *op;
      ck_assert_int_eq(cua_op_memcpy_h2d(&op, b, 0, src, bytes), 0);
      ck_assert_int_eq(run_op(rt, op), 0);
    }
  found f = lookup(rt, -1, NULL);
  ck_assert_int_ge(f.n, 1);
  ck_assert_int_eq(f.e.transfer, 1);
  ck_assert_int_eq(f.e.from, -1);
  ck_assert_int_eq(f.e.device, 0);
  /* The probe asked for host -> device 0 at the op's bytes. */
  cua_op *op;
  ck_assert_int_eq(cua_op_memcpy_h2d(&op, b, 0, src, 4u << 20), 0);
  ck_assert_int_eq(run_op(rt, op), 0);
  ck_assert_msg(seen_xfer.source == CUA_ESTIMATE_REGRESSION ||
                    seen_xfer.source == CUA_ESTIMATE_HISTORY,
                "transfer source %d", seen_xfer.source);
  ck_assert_uint_gt(seen_xfer.ns, 0);
  cua_buffer_destroy(b);
  free(src);
  cua_runtime_destroy(rt);
}
END_TEST

/* Models are per device: what device 0 ran says nothing of device 1. */
START_TEST(models_are_per_device) {
  register_probe();
  make_dir();
  cua_runtime *rt = open_models("memory", "[backend.host]\ndevices = 2\n");
  for (int i = 0; i < 3; i++)
    spin(rt, "d", 500000, 0);
  spin(rt, "d", 500000, 0);
  ck_assert_int_eq(seen.source, CUA_ESTIMATE_HISTORY);
  ck_assert_int_eq(seen_other.source, CUA_ESTIMATE_HINT);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(a_corrupt_file_is_ignored_with_a_warning) {
  register_probe();
  make_dir();
  write_file(model_file(dir), "cuasync-models 2 x\n");
  /* The right header, then a malformed line: skipped, with a warning. */
  char text[1024];
  snprintf(text, sizeof text,
           "cuasync-models 2 %s\nop host 0:x spin - - 0 0 nan 1 1 1 1 1\n",
           host_field());
  write_file(model_file(dir), text);
  capture_begin();
  cua_runtime *rt = open_models(dir, NULL);
  const char *err = capture_end();
  ck_assert_msg(strstr(err, "performance models") != NULL &&
                    strstr(err, "txt:2: a malformed entry (a sum that is "
                                "not a finite number >= 0); skipped") != NULL,
                "stderr: %s", err);
  ck_assert_int_eq(entries(rt), 0);
  spin(rt, "after", 100000, -1);
  cua_runtime_destroy(rt);
  /* Replaced by a valid file with this run's measurement. */
  rt = open_models(dir, NULL);
  ck_assert_int_eq(lookup(rt, CUA_OP_SPIN, "after").n, 1);
  cua_runtime_destroy(rt);

  /* Binary junk. */
  write_file(model_file(dir), "\x7f"
                              "ELF\x01\x02junk\n\n");
  capture_begin();
  rt = open_models(dir, NULL);
  err = capture_end();
  ck_assert_msg(strstr(err, "not a cuasync model file") != NULL, "stderr: %s",
                err);
  ck_assert_int_eq(entries(rt), 0);
  cua_runtime_destroy(rt);
}
END_TEST

/* A FIFO where the file should be: no hang at creation, and the save
 * leaves it alone; sums no run can make are a malformed entry. */
START_TEST(a_file_that_is_not_a_regular_file_is_left_alone) {
  register_probe();
  make_dir();
  ck_assert_int_eq(mkfifo(model_file(dir), 0600), 0);
  capture_begin();
  cua_runtime *rt = open_models(dir, NULL);
  spin(rt, "x", 100000, -1);
  cua_runtime_destroy(rt);
  const char *err = capture_end();
  ck_assert_msg(strstr(err, "not a regular file") != NULL &&
                    strstr(err, "again; this run's models are not kept") !=
                        NULL,
                "stderr: %s", err);
  struct stat st;
  ck_assert_int_eq(stat(model_file(dir), &st), 0);
  ck_assert(S_ISFIFO(st.st_mode));
  unlink(model_file(dir));

  char text[1024];
  snprintf(text, sizeof text,
           "cuasync-models 2 %s\nop host 0:x spin - - 0 0 1 0 0 1e300 0 0\n",
           host_field());
  write_file(model_file(dir), text);
  capture_begin();
  rt = open_models(dir, NULL);
  err = capture_end();
  ck_assert_msg(strstr(err, "txt:2: a malformed entry") != NULL, "stderr: %s",
                err);
  cua_runtime_destroy(rt);
}
END_TEST

/* Writes @p text as the model file of dir and opens a runtime on it:
 * @p warning is on stderr and no entry was read. */
static void expect_ignored(const char *text, const char *warning) {
  write_file(model_file(dir), text);
  capture_begin();
  cua_runtime *rt = open_models(dir, NULL);
  const char *err = capture_end();
  ck_assert_msg(strstr(err, warning) != NULL, "stderr: %s", err);
  ck_assert_int_eq(entries(rt), 0);
  cua_runtime_destroy(rt);
}

START_TEST(a_foreign_file_is_ignored_with_a_warning) {
  register_probe();
  make_dir();
  expect_ignored("cuasync-models 2 some-other-host\nop host 0:x spin - - 0 0 "
                 "1 1 1 1 1 1\n",
                 "written on host some-other-host, not on this one");
  char text[1024];
  snprintf(text, sizeof text, "cuasync-models 9 %s\n", host_field());
  expect_ignored(text, "another version of cuasync (format 9, this one "
                       "reads 2)");
  /* Format 1 held durations the completion thread estimated (models.c):
   * not read. */
  snprintf(text, sizeof text,
           "cuasync-models 1 %s\nop host 0:x spin - - 0 0 1 1 1 1 1 1\n",
           host_field());
  expect_ignored(text, "another version of cuasync (format 1, this one "
                       "reads 2)");
}
END_TEST

START_TEST(an_unwritable_directory_is_a_warning) {
  register_probe();
  make_dir();
  char file[4200];
  snprintf(file, sizeof file, "%s/plain", dir);
  write_file(file, "not a directory\n");
  char models[4300];
  snprintf(models, sizeof models, "%s/sub", file);
  cua_runtime *rt = open_models(models, NULL);
  spin(rt, "x", 100000, -1);
  capture_begin();
  cua_runtime_destroy(rt);
  const char *err = capture_end();
  ck_assert_msg(strstr(err, "cannot create") != NULL &&
                    strstr(err, "this run's models are not kept") != NULL,
                "stderr: %s", err);
}
END_TEST

START_TEST(models_off_and_in_memory) {
  register_probe();
  make_dir();
  cua_runtime *rt = open_models("off", NULL);
  spin(rt, "x", 100000, -1);
  spin(rt, "x", 100000, -1);
  ck_assert_int_eq(seen.source, CUA_ESTIMATE_HINT);
  ck_assert_err(rt, cua_runtime_models(rt, count_entry, &(int){0}, NULL),
                CUA_ERR_NOTSUP, "performance models are off");
  cua_runtime_destroy(rt);

  rt = open_models("memory", NULL);
  for (int i = 0; i < 4; i++)
    spin(rt, "x", 100000, -1);
  ck_assert_int_eq(seen.source, CUA_ESTIMATE_HISTORY);
  const char *file = "unset";
  ck_assert_int_eq(cua_runtime_models(rt, count_entry, &(int){0}, &file), 0);
  ck_assert_ptr_null(file);
  ck_assert_err(rt, cua_runtime_models(NULL, count_entry, NULL, NULL),
                CUA_ERR_INVAL, "NULL runtime");
  ck_assert_err(rt, cua_runtime_models(rt, NULL, NULL, NULL), CUA_ERR_INVAL,
                "NULL visitor");
  cua_runtime_destroy(rt);
}
END_TEST

static int stop_at_first(const cua_model_entry *e, void *arg) {
  (void)e;
  (void)arg;
  return 42;
}

START_TEST(a_visitor_stops_the_walk) {
  register_probe();
  cua_runtime *rt = open_models("memory", NULL);
  spin(rt, "x", 100000, -1);
  spin(rt, "y", 100000, -1);
  ck_assert_int_eq(cua_runtime_models(rt, stop_at_first, NULL, NULL), 42);
  cua_runtime_destroy(rt);
}
END_TEST

START_TEST(the_models_key_is_checked) {
  cua_runtime *rt = NULL;
  ck_assert_err(NULL, open_text(&rt, "[runtime]\nbackend = host\nmodels =\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "<text>:3: [runtime] models: the value is empty; give a "
                "directory, memory or off");
  ck_assert_err(NULL,
                open_text(&rt, "[runtime]\nbackend = host\nmodels = a\n"
                               "models = b\n"),
                CUA_ERR_CONFIG_DUPLICATE_KEY, "models");
  setenv("CUASYNC_MODELS", "relative/dir", 1);
  ck_assert_err(NULL, open_text(&rt, "[runtime]\nbackend = host\n"),
                CUA_ERR_CONFIG_BAD_VALUE,
                "$CUASYNC_MODELS: 'relative/dir' is not an absolute "
                "directory, memory or off");
  setenv("CUASYNC_MODELS", "off", 1);
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\nmodels = "
                                  "memory\n"),
                   0);
  ck_assert_err(rt, cua_runtime_models(rt, count_entry, &(int){0}, NULL),
                CUA_ERR_NOTSUP, "off");
  cua_runtime_destroy(rt);
  unsetenv("CUASYNC_MODELS");
}
END_TEST

/* A relative directory in a file is relative to that file. */
START_TEST(a_relative_directory_is_the_files) {
  register_probe();
  make_dir();
  char ini[4200];
  snprintf(ini, sizeof ini, "%s/cuasync.ini", dir);
  write_file(ini, "[runtime]\nbackend = host\npolicy = probe\nmodels = m\n");
  cua_runtime *rt = NULL;
  int rc = cua_runtime_create(&rt, ini);
  ck_assert_msg(rc == 0, "%s", cua_runtime_error(NULL));
  const char *file = NULL;
  ck_assert_int_eq(cua_runtime_models(rt, count_entry, &(int){0}, &file), 0);
  char want[4300];
  snprintf(want, sizeof want, "%s/m", dir);
  ck_assert_str_eq(file, model_file(want));
  spin(rt, "x", 100000, -1);
  cua_runtime_destroy(rt);
  struct stat st;
  ck_assert_int_eq(stat(model_file(want), &st), 0);
}
END_TEST

/* dmda and heft ask the models: a class measured long is placed by its
 * measured duration, not by a misleading cost hint. */
START_TEST(dmda_uses_measured_durations) {
  make_dir();
  char text[4096];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = dmda\nmodels = memory\n"
           "[policy.dmda]\nstreams = 2\n");
  cua_runtime *rt = NULL;
  ck_assert_int_eq(open_text(&rt, text), 0);
  /* "liar" claims 10 us and takes 2 ms. */
  for (int i = 0; i < 3; i++) {
    cua_op *op;
    ck_assert_int_eq(cua_op_spin(&op, rt, 2000000, 1), 0);
    cua_hints h = CUA_HINTS_INIT;
    h.name = "liar";
    h.cost_ns = 10000;
    ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
    ck_assert_int_eq(run_op(rt, op), 0);
  }
  found f = lookup(rt, CUA_OP_SPIN, "liar");
  ck_assert_int_eq(f.n, 1);
  ck_assert_msg(f.e.mean_ns > 1000000, "liar measured %llu",
                (unsigned long long)f.e.mean_ns);
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  ck_assert_int_eq(cua_runtime_dump_policy(rt, out), 0);
  fclose(out);
  /* The first was placed on its hint; the next two on their history. */
  ck_assert_msg(strstr(buf, "placed 3 (expected from the models 2, from "
                            "hints or default 1)") != NULL,
                "%s", buf);
  free(buf);
  cua_runtime_destroy(rt);
}
END_TEST

/* "split" places ops named "short" on stream 1 of device 0, the others on
 * stream 0. */
static int sp_create(const cua_policy_host *host, const cua_param_value *params,
                     void **state) {
  (void)params;
  if (host->ensure_streams(host->core, 0, 2) != 0)
    return CUA_ERR_NOMEM;
  *state = NULL;
  return 0;
}

static int sp_place(void *state, const cua_op_info *op, cua_placement *out) {
  (void)state;
  out->device = 0;
  out->stream = op->name != NULL && strcmp(op->name, "short") == 0;
  return 0;
}

static const cua_policy_descriptor split =
    CUA_POLICY_INIT(.name = "split", .version = "1",
                    .description = "short ops on stream 1", .create = sp_create,
                    .place = sp_place);

/* Only ops the backend timed teach the models. On a backend without host
 * threads (launchtime: every op runs inside launch(), as a stream function
 * does on CUDA) the completion thread estimates the others' durations
 * from when it saw their streams progress; a "short" op launched after a
 * "long" one on another stream and seen complete alone would teach the
 * models an interval that counts the long one's run (as on a GPU an op's
 * interval counts the time it waited for inputs on other streams). 40
 * rounds: the first 16 shorts are timed, 24 are not. */
START_TEST(only_timed_ops_teach_the_models) {
  int rc = cua_policy_register(&split);
  ck_assert_msg(rc == 0 || rc == CUA_ERR_INVAL, "register: %s",
                cua_runtime_error(NULL));
  cua_runtime *rt = NULL;
  rc = open_text(&rt, "[runtime]\nbackend = launchtime\npolicy = split\n"
                      "models = memory\n");
  ck_assert_msg(rc == 0, "%s: %s", cua_err_name(rc), cua_runtime_error(NULL));
  for (int i = 0; i < 40; i++) {
    cua_op *lo, *sh, *t;
    ck_assert_int_eq(cua_op_spin(&lo, rt, 3000000, 1), 0);
    ck_assert_int_eq(cua_op_spin(&sh, rt, 100000, 1), 0);
    cua_hints h = CUA_HINTS_INIT;
    h.name = "long";
    ck_assert_int_eq(cua_op_set_hints(lo, &h), 0);
    h.name = "short";
    ck_assert_int_eq(cua_op_set_hints(sh, &h), 0);
    ck_assert_int_eq(cua_op_then(&t, lo, sh), 0);
    cua_op_destroy(lo);
    cua_op_destroy(sh);
    ck_assert_int_eq(run_op(rt, t), 0);
  }
  found f = lookup(rt, CUA_OP_SPIN, "short");
  ck_assert_int_eq(f.n, 1);
  ck_assert_msg(f.e.samples >= 16 && f.e.mean_ns >= 100000 &&
                    f.e.mean_ns < 1000000,
                "the 100 us op measured %llu ns on average over %.0f samples",
                (unsigned long long)f.e.mean_ns, f.e.samples);
  cua_runtime_destroy(rt);
}
END_TEST

/* A spin of 1 us named @p name with the bytes hint @p bytes. */
static void spin_bytes(cua_runtime *rt, const char *name, uint64_t bytes) {
  cua_op *op;
  ck_assert_int_eq(cua_op_spin(&op, rt, 1000, 1), 0);
  cua_hints h = CUA_HINTS_INIT;
  h.name = name;
  h.bytes = bytes;
  ck_assert_int_eq(cua_op_set_hints(op, &h), 0);
  ck_assert_msg(run_op(rt, op) == 0, "%s", cua_runtime_error(rt));
}

/* Lines of @p text that start with @p prefix. */
static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  size_t len = strlen(prefix);
  for (const char *l = text; l != NULL && *l; l = strchr(l, '\n')) {
    if (*l == '\n')
      l++;
    n += strncmp(l, prefix, len) == 0;
  }
  return n;
}

/* A child of runs_side_by_side_lose_nothing: measures 5 classes of its
 * own, says so on @p ready, and destroys its runtime (saves) once
 * @p go is closed. */
static void save_at_once(int round, int child, int ready, int go) {
  char text[8192], name[64];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = probe\nmodels = %s\n", dir);
  cua_runtime *rt = NULL;
  if (open_text(&rt, text) != 0)
    _exit(2);
  for (int i = 0; i < 5; i++) {
    cua_op *op;
    snprintf(name, sizeof name, "r%d-c%d-%d", round, child, i);
    cua_hints h = CUA_HINTS_INIT;
    h.name = name;
    if (cua_op_spin(&op, rt, 1000, 1) != 0 || cua_op_set_hints(op, &h) != 0 ||
        run_op(rt, op) != 0)
      _exit(3);
  }
  char c = 'r', buf;
  if (write(ready, &c, 1) != 1 || read(go, &buf, 1) != 0)
    _exit(4);
  cua_runtime_destroy(rt);
  _exit(0);
}

/* Processes that save to one directory at the same moment add up: each
 * save re-reads the file under the lock. (Without the lock, 4 processes
 * at once lost about one save in eight; a file of 5000 other entries
 * makes each save long enough that, without it, every round would.) */
START_TEST(runs_side_by_side_lose_nothing) {
  enum { ROUNDS = 8, CHILDREN = 4 };
  register_probe();
  make_dir();
  size_t cap = 5000 * 80 + 256, o = 0;
  char *text = malloc(cap);
  ck_assert_ptr_nonnull(text);
  o += (size_t)snprintf(text, cap, "cuasync-models 2 %s\n", host_field());
  for (int i = 0; i < 5000; i++)
    o += (size_t)snprintf(text + o, cap - o,
                          "op cuda 0:GPU spin other-%d - 0 0 1 0 0 1000 "
                          "1000000 0\n",
                          i);
  write_file(model_file(dir), text);
  free(text);
  for (int r = 0; r < ROUNDS; r++) {
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid[CHILDREN];
    for (int c = 0; c < CHILDREN; c++) {
      pid[c] = fork();
      ck_assert_int_ge(pid[c], 0);
      if (pid[c] == 0) {
        close(ready[0]);
        close(go[1]);
        save_at_once(r, c, ready[1], go[0]);
      }
    }
    close(ready[1]);
    close(go[0]);
    char buf[CHILDREN];
    size_t got = 0;
    ssize_t k;
    while (got < CHILDREN && (k = read(ready[0], buf, CHILDREN - got)) > 0)
      got += (size_t)k;
    close(go[1]); /* all of them save now */
    close(ready[0]);
    for (int c = 0; c < CHILDREN; c++) {
      int status = 0;
      waitpid(pid[c], &status, 0);
      ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                    "round %d, child %d: status %d", r, c, status);
    }
  }
  cua_runtime *rt = open_models(dir, NULL);
  ck_assert_int_eq(entries(rt), ROUNDS * CHILDREN * 5);
  cua_runtime_destroy(rt);
  ck_assert_int_eq(count_lines(read_all_big(model_file(dir)), "op cuda "),
                   5000);
}
END_TEST

/* A save waits for another's lock, and gives up after 10 s with a
 * warning instead of hanging the program. */
START_TEST(a_held_lock_is_waited_for_then_given_up) {
  register_probe();
  make_dir();
  char lock[4200];
  snprintf(lock, sizeof lock, "%s/models-%s.lock", dir, host_field());
  /* Another process holds the lock for half a second from when the save
   * starts (told through the pipe go): the save waits. */
  int ready[2], go[2];
  ck_assert_int_eq(pipe(ready), 0);
  ck_assert_int_eq(pipe(go), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char g;
    int fd = open(lock, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || flock(fd, LOCK_EX) != 0 || write(ready[1], "r", 1) != 1 ||
        read(go[0], &g, 1) != 1)
      _exit(1);
    usleep(500000);
    _exit(0);
  }
  char c;
  ck_assert_int_eq(read(ready[0], &c, 1), 1);
  cua_runtime *rt = open_models(dir, NULL);
  spin(rt, "waited", 1000, -1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_int_eq(write(go[1], "g", 1), 1);
  cua_runtime_destroy(rt);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  ck_assert_msg(s > 0.3, "the save did not wait for the lock (%.3f s)", s);
  waitpid(pid, NULL, 0);
  close(ready[0]);
  close(ready[1]);
  close(go[0]);
  close(go[1]);
  rt = open_models(dir, NULL);
  ck_assert_int_eq(lookup(rt, CUA_OP_SPIN, "waited").n, 1);
  spin(rt, "stuck", 1000, -1);
  /* Held for good (here, by this process: a lock of its own open file
   * description): given up after 10 s, the file as it was. */
  int fd = open(lock, O_RDWR);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(flock(fd, LOCK_EX), 0);
  capture_begin();
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cua_runtime_destroy(rt);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const char *err = capture_end();
  close(fd);
  s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  ck_assert_msg(s > 9.5 && s < 15, "gave up after %.3f s", s);
  ck_assert_msg(strstr(err, ".lock was held by another save for 10 s; this "
                            "run's models are not kept") != NULL,
                "stderr: %s", err);
  rt = open_models(dir, NULL);
  ck_assert_int_eq(lookup(rt, CUA_OP_SPIN, "waited").n, 1);
  ck_assert_int_eq(lookup(rt, CUA_OP_SPIN, "stuck").n, 0);
  cua_runtime_destroy(rt);
}
END_TEST

/* What a run writes, the next reads back: a bytes hint past 10^18 (it
 * was a malformed entry, and the whole file was ignored), and no line
 * longer than the reader takes (an entry with a 5000-byte name is left
 * out, with a warning; it made a line the reader refused, and again the
 * whole file was lost). */
START_TEST(every_line_written_is_read_back) {
  register_probe();
  make_dir();
  char *longname = malloc(5001);
  ck_assert_ptr_nonnull(longname);
  memset(longname, 'n', 5000);
  longname[5000] = '\0';
  cua_runtime *rt = open_models(dir, NULL);
  spin_bytes(rt, "huge", ((uint64_t)1 << 60) + 1);
  spin_bytes(rt, "max", UINT64_MAX);
  spin_bytes(rt, longname, 0);
  spin_bytes(rt, "plain", 0);
  capture_begin();
  cua_runtime_destroy(rt);
  const char *err = capture_end();
  ck_assert_msg(strstr(err, "1 entry not saved: a line longer than 4096 "
                            "bytes (a long name or tag hint) (the first: "
                            "op host ") != NULL &&
                    strstr(err, " spin nnnnnnnn") != NULL,
                "stderr: %s", err);
  free(longname);
  capture_begin();
  rt = open_models(dir, NULL);
  err = capture_end();
  ck_assert_msg(err[0] == '\0', "stderr: %s", err);
  ck_assert_int_eq(entries(rt), 3);
  found f = lookup(rt, CUA_OP_SPIN, "huge");
  ck_assert_int_eq(f.n, 1);
  ck_assert(f.e.samples == 1);
  ck_assert_uint_eq(f.e.bytes_min, (uint64_t)1 << 60);
  ck_assert(f.e.mean_bytes == (double)(((uint64_t)1 << 60) + 1));
  f = lookup(rt, CUA_OP_SPIN, "max");
  ck_assert_int_eq(f.n, 1);
  ck_assert_uint_eq(f.e.bytes_max, UINT64_MAX);
  ck_assert_int_eq(lookup(rt, CUA_OP_SPIN, "plain").n, 1);
  cua_runtime_destroy(rt);
}
END_TEST

/* A malformed line is skipped with a warning that names it; the lines
 * around it are read, and the next save leaves it out. Warnings stop
 * after three lines; a count says how many more there were. */
START_TEST(a_malformed_line_costs_only_that_line) {
  register_probe();
  make_dir();
  cua_runtime *rt = open_models("memory", NULL);
  char dev[512];
  snprintf(dev, sizeof dev, "%s", dev0_field(rt));
  cua_runtime_destroy(rt);
  char text[4096];
  snprintf(text, sizeof text,
           "cuasync-models 2 %s\n"
           "op host %s spin a - 0 0 2 0 0 2000 2000000 0\n"
           "op host %s spin bad - 0 0 nan 1 1 1 1 1\n"
           "op host %s spin b - 0 0 1 0 0 1000 1000000 0\n"
           "op host %s spin bad - 0 0 1 1 1 1 1\n"
           "op host %s spin bad%%zz - 0 0 1 0 0 1 1 0\n"
           "op host %s spin bad - 0 0 -1 0 0 1 1 0\n"
           "xfer host host %s 3 1 1 1 1 1 1 junk\n",
           host_field(), dev, dev, dev, dev, dev, dev, dev);
  write_file(model_file(dir), text);
  capture_begin();
  rt = open_models(dir, NULL);
  const char *err = capture_end();
  ck_assert_msg(
      strstr(err, "txt:3: a malformed entry (a sum that is not a finite "
                  "number >= 0); skipped (it is left out when the file is "
                  "next saved)") != NULL &&
          strstr(err, "txt:5: a malformed entry (neither op and 13 fields nor "
                      "xfer and 10)") != NULL &&
          strstr(err, "txt:6: a malformed entry (a bad %XX escape)") != NULL &&
          strstr(err, "txt:7") == NULL &&
          strstr(err, "txt: 2 more malformed entries skipped") != NULL &&
          strstr(err, "ignored") == NULL,
      "stderr: %s", err);
  ck_assert_int_eq(entries(rt), 2);
  found f = lookup(rt, CUA_OP_SPIN, "a");
  ck_assert(f.n == 1 && f.e.samples == 2 && f.e.mean_ns == 1000);
  ck_assert_int_eq(lookup(rt, CUA_OP_SPIN, "b").n, 1);
  spin(rt, "c", 1000, -1);
  cua_runtime_destroy(rt);
  char *after = read_all(model_file(dir));
  ck_assert_ptr_nonnull(after);
  ck_assert_msg(strstr(after, "bad") == NULL && strstr(after, "spin a ") &&
                    strstr(after, "spin b ") && strstr(after, "spin c "),
                "%s", after);
}
END_TEST

/* Values no run writes are malformed entries, with a warning, not taken
 * (a count of 1e308 was, shown as a mean of 0 ns) nor dropped without a
 * word (a bucket past 64 was). */
START_TEST(values_out_of_range_are_malformed) {
  register_probe();
  make_dir();
  cua_runtime *rt = open_models("memory", NULL);
  char dev[512];
  snprintf(dev, sizeof dev, "%s", dev0_field(rt));
  cua_runtime_destroy(rt);
  static const struct {
    const char *fields, *why;
  } bad[] = {
      {"spin x - 0 65 1 0 0 1000 1000000 0", "a bucket that is not a number "
                                             "from 0 to 64"},
      {"spin x - 0 4294967361 1 0 0 1000 1000000 0", "a bucket"},
      {"spin x - 99 0 1 0 0 1000 1000000 0", "a bucket"},
      {"spin x - 0 +1 1 0 0 1000 1000000 0", "a bucket"},
      {"spin x - 0 0 1e308 0 0 1000 1000000 0",
       "a count that is not a whole number from 1 to 2^53"},
      {"spin x - 0 0 0.5 0 0 1000 1000000 0", "a count"},
      {"spin x - 0 0 1 0 0 2e15 4e30 0", "sums no measurement can make"},
      {"spin x - 0 0 1 2e19 4e38 1 1 2e19", "sums no measurement can make"},
      {"spin x - 0 0 1 1 1 1 1e300 1", "sums no measurement can make"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[4096];
    snprintf(text, sizeof text,
             "cuasync-models 2 %s\n"
             "op host %s spin good - 0 0 1 0 0 1000 1000000 0\n"
             "op host %s %s\n",
             host_field(), dev, dev, bad[i].fields);
    write_file(model_file(dir), text);
    capture_begin();
    rt = open_models(dir, NULL);
    const char *err = capture_end();
    char want[256];
    snprintf(want, sizeof want, "txt:3: a malformed entry (%s", bad[i].why);
    ck_assert_msg(strstr(err, want) != NULL, "%s: stderr: %s", bad[i].fields,
                  err);
    ck_assert_msg(entries(rt) == 1, "%s: %d entries", bad[i].fields,
                  entries(rt));
    ck_assert_int_eq(lookup(rt, CUA_OP_SPIN, "x").n, 0);
    cua_runtime_destroy(rt);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("models");
  TCase *t = tcase_create("models");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, models_are_kept_for_the_next_process);
  tcase_add_test(t, a_regression_answers_for_sizes_not_measured);
  tcase_add_test(t, memcpys_teach_the_transfer_model);
  tcase_add_test(t, models_are_per_device);
  tcase_add_test(t, a_corrupt_file_is_ignored_with_a_warning);
  tcase_add_test(t, a_foreign_file_is_ignored_with_a_warning);
  tcase_add_test(t, a_file_that_is_not_a_regular_file_is_left_alone);
  tcase_add_test(t, an_unwritable_directory_is_a_warning);
  tcase_add_test(t, models_off_and_in_memory);
  tcase_add_test(t, a_visitor_stops_the_walk);
  tcase_add_test(t, the_models_key_is_checked);
  tcase_add_test(t, a_relative_directory_is_the_files);
  tcase_add_test(t, dmda_uses_measured_durations);
  tcase_add_test(t, only_timed_ops_teach_the_models);
  tcase_add_test(t, runs_side_by_side_lose_nothing);
  tcase_add_test(t, a_held_lock_is_waited_for_then_given_up);
  tcase_add_test(t, every_line_written_is_read_back);
  tcase_add_test(t, a_malformed_line_costs_only_that_line);
  tcase_add_test(t, values_out_of_range_are_malformed);
  suite_add_tcase(s, t);
  return s;
}

int main(void) {
  /* The test environment keeps models in memory: these tests are about
   * the configuration's value and the files. */
  unsetenv("CUASYNC_MODELS");
  return run_suite(suite());
}
