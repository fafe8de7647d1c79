/*
 * tests/check_faults.c: allocation, thread creation and dlopen failures at
 * every point of a runtime's life.
 *
 * For each standard policy and each kind of failure (cua__fault_arm(): the
 * k-th cua__malloc/calloc/realloc/strdup, pthread_create or dlopen of
 * core/ fails), a child process runs the scenario below with the k-th call
 * failing, for k = 1, 2, ... until a run where the k-th call never came.
 * The scenario opens a runtime on the host backend, runs a small DAG (fill,
 * axpy, then, zip, host step, map, d2h, a shared op run once and reused, a
 * per-submission policy, a policy swap), then a burst of ops queued behind
 * a stream function that holds its stream's worker (more queue items than
 * the host backend keeps in one block, so that the queue allocates), and
 * captures, launches and updates a graph, submits one step built anew three
 * times through the graph cache (the runtime has graphs = auto), and
 * closes it. The burst is then(function, zip(BURST spins)), which gives
 * the function BURST dependents: growing that array may fail too (it is
 * reserved before anything is committed, so cua_submit() fails; it used to
 * hang, as cua__wire()'s error was dropped). The host backend allocates and
 * starts its threads through the core's services (cua_backend_host alloc,
 * thread_create), so its failures are injected too. Each run must end with an
 * error code and a message, or succeed with correct results; it must not crash,
 * hang (alarm per child) or leak (the children exit through exit(), so under
 * the ASan build LeakSanitizer checks each one).
 *
 * When a child fails, the stack of the injected failure is printed
 * (symbolized with addr2line). Failures whose allocation is made in
 * core/exec.c are known defects of that file (being rewritten): they are
 * listed and skipped, unless $CUASYNC_FAULTS_STRICT is set.
 *
 * An error must come with a message (cua_runtime_error(), or the future's);
 * those that do not are listed with the allocation that failed.
 *
 * $CUASYNC_FAULTS_SKIP: skip (.ci/run does under ThreadSanitizer, where
 * the sweep is slow and finds nothing LeakSanitizer does not).
 * $CUASYNC_FAULTS_TIMEOUT: seconds per child (default 2: the scenario
 * takes milliseconds; more under sanitizers).
 * $CUASYNC_FAULTS_POLICIES: the policies to sweep, separated by commas or
 * blanks (default: every one; tests/launchsplit/faults.sh sweeps two).
 */
#include "config.h"
#include "helpers.h"
#include "internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define ELEMS 64
#define PARALLEL 8
/* Ops queued at once behind burst_fn on one stream: more than the host
 * backend's ITEMS_PER_BLOCK (32) queue items. */
#define BURST 36

static const char *const kind_names[] = {"allocation", "thread creation",
                                         "dlopen"};

/* ------------------------------------------------------------ the child */

static int report_fd = -1;

/* On the failing thread: the stack of the injected failure, as
 * "object offset" lines, written at once (the child may hang or crash
 * later). */
static void on_fault(int kind) {
  void *frames[40];
  int n = backtrace(frames, 40);
  char line[1200];
  (void)kind;
  for (int i = 1; i < n; i++) {
    Dl_info di;
    if (dladdr(frames[i], &di) == 0 || di.dli_fname == NULL)
      continue;
    /* Return addresses point after the call: -1 lands in it. */
    int len =
        snprintf(line, sizeof line, "F %s %#lx\n", di.dli_fname,
                 (unsigned long)((char *)frames[i] - (char *)di.dli_fbase - 1));
    if (len > 0 && write(report_fd, line, (size_t)len) < 0)
      return;
  }
}

static atomic_int host_runs, cb_runs, burst_runs;

static int host_fn(void *arg, void **result) {
  (void)arg;
  atomic_fetch_add(&host_runs, 1);
  *result = NULL;
  return 0;
}

/* Holds its stream's worker long enough for the rest of the burst to be
 * queued behind it. */
static int burst_fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  (void)arg;
  atomic_fetch_add(&burst_runs, 1);
  struct timespec ts = {0, 30 * 1000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
  return 0;
}

static int map_fn(void *in, void *arg, void **out) {
  (void)arg;
  *out = in;
  return 0;
}

static void cb_fn(cua_future *f, int status, void *arg) {
  (void)f;
  (void)status;
  (void)arg;
  atomic_fetch_add(&cb_runs, 1);
}

/* What the scenario returns: 0, or the first failing call's code (and its
 * message in msg). */
typedef struct outcome {
  int rc;
  char where[64];
  char msg[512];
} outcome;

#define TRY(o, rt, call)                                                       \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0) {                                                            \
      (o)->rc = rc_;                                                           \
      snprintf((o)->where, sizeof(o)->where, "%.60s", #call);                  \
      snprintf((o)->msg, sizeof(o)->msg, "%s", cua_runtime_error(rt));         \
      goto out;                                                                \
    }                                                                          \
  } while (0)

/* A submission's status: 0, or its code and the future's message. */
#define WAIT(o, f)                                                             \
  do {                                                                         \
    int rc_ = cua_future_wait(f);                                              \
    if (rc_ != 0) {                                                            \
      (o)->rc = rc_;                                                           \
      snprintf((o)->where, sizeof(o)->where, "future of %s", #f);              \
      snprintf((o)->msg, sizeof(o)->msg, "%s", cua_future_error(f));           \
      goto out;                                                                \
    }                                                                          \
  } while (0)

static void fail_child(const char *fmt, const char *a, double b, double c) {
  fprintf(stderr, fmt, a, b, c);
  fflush(stderr);
  _exit(3);
}

static void scenario(const char *policy, outcome *o) {
  char text[512];
  cua_runtime *rt = NULL;
  cua_buffer *a = NULL, *b = NULL;
  cua_op *fa = NULL, *fb = NULL, *z1 = NULL, *ax = NULL, *h = NULL, *d2h = NULL,
         *m = NULL, *z2 = NULL, *t1 = NULL, *t2 = NULL, *inner = NULL,
         *sh = NULL, *cp = NULL, *t3 = NULL, *d2h2 = NULL, *t4 = NULL,
         *bf = NULL, *bz = NULL, *bt = NULL, *bs[BURST] = {NULL};
  cua_future *f1 = NULL, *f2 = NULL, *f3 = NULL, *f4 = NULL, *gfut = NULL;
  cua_policy *pol = NULL;
  cua_graph *graph = NULL;
  cua_op *gs[3] = {NULL}, *gnew = NULL, *gread = NULL;
  static float out1[ELEMS], out2[ELEMS], out3[ELEMS];

  memset(o, 0, sizeof *o);
  snprintf(text, sizeof text,
           "[runtime]\nbackend = host\npolicy = %s\ngraphs = auto\n"
           "[policy.round-robin]\nstreams = 3\n"
           "[policy.affinity]\nrule = tag:x -> 0\n",
           policy);
  {
    int rc = open_text(&rt, text);
    if (rc != 0) {
      o->rc = rc;
      snprintf(o->where, sizeof o->where, "cua_runtime_create_ex");
      snprintf(o->msg, sizeof o->msg, "%s", cua_runtime_error(NULL));
      return;
    }
  }
  TRY(o, rt, cua_buffer_create(&a, rt, 0, ELEMS * 4, 0));
  TRY(o, rt, cua_buffer_create(&b, rt, 0, ELEMS * 4, CUA_BUFFER_LAZY));

  /* then(zip(fill a, fill b), then(axpy, zip(host, map(d2h)))) */
  TRY(o, rt, cua_op_fill(&fa, a, 1.0f));
  TRY(o, rt, cua_op_fill(&fb, b, 2.0f));
  TRY(o, rt, cua_op_zip(&z1, (cua_op *[]){fa, fb}, 2));
  TRY(o, rt, cua_op_axpy(&ax, b, 3.0f, a));
  TRY(o, rt, cua_op_host(&h, rt, host_fn, NULL));
  TRY(o, rt, cua_op_memcpy_d2h(&d2h, out1, b, 0, ELEMS * 4));
  TRY(o, rt, cua_op_map(&m, d2h, map_fn, NULL));
  TRY(o, rt, cua_op_zip(&z2, (cua_op *[]){h, m}, 2));
  TRY(o, rt, cua_op_then(&t1, ax, z2));
  TRY(o, rt, cua_op_then(&t2, z1, t1));
  TRY(o, rt, cua_submit(&f1, rt, t2, NULL));
  TRY(o, rt, cua_future_on_complete(f1, cb_fn, NULL));
  WAIT(o, f1);
  for (int i = 0; i < ELEMS; i++)
    if (out1[i] != 5.0f)
      fail_child("%s: wrong result %g, expected %g\n", policy, out1[i], 5.0);
  if (atomic_load(&host_runs) != 1)
    fail_child("%s: host step ran %g times, expected %g\n", policy,
               atomic_load(&host_runs), 1);

  /* A shared op run once, under a policy of its own, then reused after a
   * runtime-wide policy swap. */
  TRY(o, rt, cua_policy_open(&pol, rt, "single-stream"));
  TRY(o, rt, cua_op_fill(&inner, a, 4.0f));
  TRY(o, rt, cua_op_shared(&sh, inner));
  TRY(o, rt, cua_op_copy(&cp, b, a));
  TRY(o, rt, cua_op_then(&t3, sh, cp));
  cua_submit_options so;
  memset(&so, 0, sizeof so);
  so.size = sizeof so;
  so.policy = pol;
  TRY(o, rt, cua_submit(&f2, rt, t3, &so));
  TRY(o, rt, cua_runtime_set_policy(rt, "least-loaded"));
  TRY(o, rt, cua_op_memcpy_d2h(&d2h2, out2, b, 0, ELEMS * 4));
  TRY(o, rt, cua_op_then(&t4, sh, d2h2));
  TRY(o, rt, cua_submit(&f3, rt, t4, NULL));
  WAIT(o, f2);
  WAIT(o, f3);
  for (int i = 0; i < ELEMS; i++)
    if (out2[i] != 4.0f)
      fail_child("%s: wrong result %g after the shared op, expected %g\n",
                 policy, out2[i], 4.0);

  /* The burst, on one stream (the single-stream policy of both
   * submissions): burst_fn, then zip(spin x BURST) queued behind it. */
  TRY(o, rt, cua_op_func(&bf, rt, burst_fn, NULL, NULL, 0));
  for (int i = 0; i < BURST; i++)
    TRY(o, rt, cua_op_spin(&bs[i], rt, 0, 1));
  TRY(o, rt, cua_op_zip(&bz, bs, BURST));
  TRY(o, rt, cua_op_then(&bt, bf, bz));
  TRY(o, rt, cua_submit(&f4, rt, bt, &so));
  WAIT(o, f4);
  if (atomic_load(&burst_runs) != 1)
    fail_child("%s: the burst's stream function ran %g times, expected %g\n",
               policy, atomic_load(&burst_runs), 1);

  /* A graph of then(fill b 0, axpy b += 2a) (a is 4), launched, its axpy
   * updated to 3a, launched again; then the same step built anew three
   * times (graphs = auto: remembered, captured, updated), each read back. */
  TRY(o, rt, cua_op_fill(&gs[0], b, 0.0f));
  TRY(o, rt, cua_op_axpy(&gs[1], b, 2.0f, a));
  TRY(o, rt, cua_op_then(&gs[2], gs[0], gs[1]));
  TRY(o, rt, cua_graph_create(&graph, rt, gs[2], NULL));
  TRY(o, rt, cua_graph_launch(&gfut, graph));
  WAIT(o, gfut);
  cua_future_destroy(gfut);
  gfut = NULL;
  TRY(o, rt, cua_op_axpy(&gnew, b, 3.0f, a));
  TRY(o, rt, cua_graph_update(graph, gs[1], gnew));
  TRY(o, rt, cua_graph_launch(&gfut, graph));
  WAIT(o, gfut);
  cua_future_destroy(gfut);
  gfut = NULL;
  TRY(o, rt, cua_op_memcpy_d2h(&gread, out3, b, 0, ELEMS * 4));
  TRY(o, rt, cua_submit_wait(rt, gread, NULL, NULL));
  if (out3[0] != 12.0f)
    fail_child("%s: wrong graph result %g, expected %g\n", policy, out3[0],
               12.0);
  for (int k = 1; k <= 3; k++) {
    for (int i = 0; i < 3; i++) {
      cua_op_destroy(gs[i]);
      gs[i] = NULL;
    }
    TRY(o, rt, cua_op_fill(&gs[0], b, 0.0f));
    TRY(o, rt, cua_op_axpy(&gs[1], b, (float)k, a));
    TRY(o, rt, cua_op_then(&gs[2], gs[0], gs[1]));
    TRY(o, rt, cua_submit_wait(rt, gs[2], NULL, NULL));
    TRY(o, rt, cua_submit_wait(rt, gread, NULL, NULL));
    if (out3[ELEMS - 1] != 4.0f * (float)k)
      fail_child("%s: wrong cached graph result %g, expected %g\n", policy,
                 out3[ELEMS - 1], 4.0 * k);
  }

out:
  cua_future_destroy(f1);
  cua_future_destroy(f2);
  cua_future_destroy(f3);
  cua_future_destroy(f4);
  cua_future_destroy(gfut);
  cua_graph_destroy(graph);
  for (int i = 0; i < 3; i++)
    cua_op_destroy(gs[i]);
  cua_op_destroy(gnew);
  cua_op_destroy(gread);
  cua_op *ops[] = {fa, fb, z1,    ax, h,  d2h, m,    z2,
                   t1, t2, inner, sh, cp, t3,  d2h2, t4};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    cua_op_destroy(ops[i]);
  cua_op_destroy(bf);
  cua_op_destroy(bz);
  cua_op_destroy(bt);
  for (int i = 0; i < BURST; i++)
    cua_op_destroy(bs[i]);
  cua_buffer_destroy(a);
  cua_buffer_destroy(b);
  cua_policy_close(pol);
  cua_runtime_destroy(rt);
  if (f1 != NULL && o->rc == 0 && atomic_load(&cb_runs) != 1)
    fail_child("%s: the callback ran %g times, expected %g\n", policy,
               atomic_load(&cb_runs), 1);
}

/* ----------------------------------------------------------- the parent */

static int timeout_s(void) {
  const char *e = getenv("CUASYNC_FAULTS_TIMEOUT");
  return e && atoi(e) > 0 ? atoi(e) : 2;
}

/* Symbolizes the "F object offset" lines of @p rep into @p out (function
 * and file:line per frame, innermost first) and returns whether a frame is
 * in core/exec.c: the failure then happened while exec.c was handling a
 * submission or a completion, and recovering from it is exec.c's job. */
static int symbolize(const char *rep, char *out, size_t outlen) {
  int exec_c = 0;
  size_t used = 0;
  char obj[1024] = "", cmd[8192];
  int ncmd = 0;
  out[0] = '\0';
  /* One addr2line per object (frames of one object come together). */
  for (const char *p = rep;; p += 2) {
    char o[1024] = "";
    unsigned long off = 0;
    p = strstr(p, "F ");
    if (p == NULL || sscanf(p, "F %1023s %lx", o, &off) != 2)
      o[0] = '\0';
    if (ncmd > 0 && (strcmp(o, obj) != 0 || ncmd > 7000)) {
      FILE *f = popen(cmd, "r");
      char fn[256], file[512];
      while (f != NULL && fgets(fn, sizeof fn, f) != NULL &&
             fgets(file, sizeof file, f) != NULL) {
        fn[strcspn(fn, "\n")] = '\0';
        file[strcspn(file, "\n")] = '\0';
        const char *base = strstr(file, "core/");
        if (base != NULL && strncmp(base, "core/exec.c", 11) == 0)
          exec_c = 1;
        int n = snprintf(out + used, outlen - used, "    %s (%s)\n", fn,
                         base ? base : file);
        if (n > 0 && (size_t)n < outlen - used)
          used += (size_t)n;
      }
      if (f != NULL)
        pclose(f);
      ncmd = 0;
    }
    if (o[0] == '\0')
      break;
    if (ncmd == 0) {
      snprintf(obj, sizeof obj, "%s", o);
      ncmd = snprintf(cmd, sizeof cmd, "addr2line -f -e '%s'", o);
    }
    ncmd += snprintf(cmd + ncmd, sizeof cmd - (size_t)ncmd, " %#lx", off);
    if (ncmd > 7000)
      snprintf(cmd + ncmd, sizeof cmd - (size_t)ncmd, " 2>/dev/null");
  }
  return exec_c;
}

typedef struct sweep_stats {
  int runs, ok, errors, failures, skipped, nomsg;
  char skipped_list[4096];
  char nomsg_list[4096];
} sweep_stats;

/* A child running the scenario with the k-th call of @p kind failing. */
typedef struct child {
  pid_t pid;
  int fd;
  long k;
} child;

static child start_one(const char *policy, int kind, long k, int patience) {
  int pfd[2];
  ck_assert_int_eq(pipe(pfd), 0);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    close(pfd[0]);
    report_fd = pfd[1];
    /* Check's SIGALRM handler, inherited, would kill the whole test. */
    signal(SIGALRM, SIG_DFL);
    alarm((unsigned)(timeout_s() * patience));
    cua__fault_set_hook(on_fault);
    cua__fault_arm(kind, k);
    outcome o;
    scenario(policy, &o);
    char line[800];
    for (char *c = o.msg; *c; c++)
      if (*c == '\n')
        *c = ' ';
    int n =
        snprintf(line, sizeof line, "R %d %d %d %s in %s: %s\n",
                 cua__fault_fired(kind), o.rc, o.rc != 0 && o.msg[0] == '\0',
                 cua_err_name(o.rc), o.where, o.msg);
    if (write(report_fd, line, (size_t)n) < 0)
      _exit(4);
    close(report_fd);
    exit(0); /* through exit(): LeakSanitizer runs here */
  }
  close(pfd[1]);
  return (child){pid, pfd[0], k};
}

/* Collects child @p ch. Returns 1 when its k-th call came (so k + 1 is
 * worth trying), 0 when it did not. */
static int finish_one(const char *policy, int kind, child ch, sweep_stats *st,
                      int retry) {
  long k = ch.k;
  static char rep[65536];
  size_t len = 0;
  ssize_t r;
  while ((r = read(ch.fd, rep + len, sizeof rep - 1 - len)) > 0)
    len += (size_t)r;
  rep[len] = '\0';
  close(ch.fd);
  int status = 0;
  while (waitpid(ch.pid, &status, 0) < 0 && errno == EINTR)
    ;
  st->runs++;

  const char *res = strstr(rep, "R ");
  int fired = 0, rc = 0, nomsg = 0;
  char why[256] = "";
  if (res != NULL)
    sscanf(res, "R %d %d %d", &fired, &rc, &nomsg);
  if (WIFSIGNALED(status))
    snprintf(why, sizeof why, "%s (signal %d)",
             WTERMSIG(status) == SIGALRM ? "hung" : "crashed",
             WTERMSIG(status));
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    snprintf(why, sizeof why,
             "exited with %d (a sanitizer report or a wrong result: see above)",
             WEXITSTATUS(status));
  else if (res == NULL)
    snprintf(why, sizeof why, "no report");
  else if (rc != 0 && (strcmp(cua_err_name(rc), "CUA_ERR_UNKNOWN") == 0))
    snprintf(why, sizeof why, "unknown error code %d", rc);
  else if (!fired && rc != 0)
    snprintf(why, sizeof why, "an error though nothing failed");

  if (why[0] == '\0') {
    if (rc == 0)
      st->ok++;
    else
      st->errors++;
    if (nomsg) {
      /* Every failing call says why (cua_runtime_error()). */
      st->nomsg++;
      const char *in = strstr(res, " in ");
      size_t u = strlen(st->nomsg_list);
      char stack[8192], where[256] = "";
      symbolize(rep, stack, sizeof stack);
      /* The allocation's caller in core/, and its caller. */
      int nw = 0;
      for (char *l = strtok(stack, "\n"); l != NULL && nw < 2;
           l = strtok(NULL, "\n"))
        if (strstr(l, "(core/") != NULL && strstr(l, "core/util.c") == NULL) {
          size_t wl = strlen(where);
          snprintf(where + wl, sizeof where - wl, "%s%s", nw++ ? " <-" : "",
                   l + 3);
        }
      if (in != NULL && u < sizeof st->nomsg_list - 400)
        snprintf(st->nomsg_list + u, sizeof st->nomsg_list - u,
                 "\n    #%ld%.*s: failed allocation in%s", k,
                 (int)strcspn(in, ":\n"), in, where);
    }
    return fired || res == NULL;
  }
  char stack[8192];
  int in_exec = symbolize(rep, stack, sizeof stack);
  /* A run that only looks hung on a loaded machine: once more, with five
   * times the time. */
  if (retry && !in_exec && WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    st->runs--;
    return finish_one(policy, kind, start_one(policy, kind, k, 5), st, 0);
  }
  const char *known = in_exec && getenv("CUASYNC_FAULTS_STRICT") == NULL
                          ? "KNOWN core/exec.c defect, skipped"
                          : "FAILURE";
  printf("faults: %s: %s #%ld failing: %s: %s\n  %s  stack of the injected "
         "failure:\n%s",
         policy, kind_names[kind], k, why, known, res ? res : "(no result)\n",
         stack);
  fflush(stdout);
  if (in_exec && getenv("CUASYNC_FAULTS_STRICT") == NULL) {
    st->skipped++;
    size_t u = strlen(st->skipped_list);
    snprintf(st->skipped_list + u, sizeof st->skipped_list - u, " %s#%ld(%s)",
             kind_names[kind], k, why);
  } else {
    st->failures++;
  }
  return 1;
}

/* Whether $CUASYNC_FAULTS_POLICIES (names separated by commas or
 * blanks; unset or empty: every one) lists @p policy. */
static int swept(const char *policy) {
  const char *e = getenv("CUASYNC_FAULTS_POLICIES");
  size_t n = strlen(policy);
  if (e == NULL || *e == '\0')
    return 1;
  for (const char *p = e; (p = strstr(p, policy)) != NULL; p += n)
    if ((p == e || p[-1] == ',' || p[-1] == ' ') &&
        (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
      return 1;
  return 0;
}

static void sweep(const char *policy) {
  sweep_stats st;
  memset(&st, 0, sizeof st);
  if (!swept(policy)) {
    printf("%s: not swept ($CUASYNC_FAULTS_POLICIES)\n", policy);
    return;
  }
  for (int kind = 0; kind < CUA__FAULT_KINDS; kind++) {
    /* A few children at a time: a hang costs its timeout once per batch. */
    long k = 1, last = 0;
    int more = 1;
    while (more && k < 20000) {
      child ch[PARALLEL];
      for (int i = 0; i < PARALLEL; i++)
        ch[i] = start_one(policy, kind, k + i, 1);
      for (int i = 0; i < PARALLEL; i++)
        if (finish_one(policy, kind, ch[i], &st, 1))
          last = ch[i].k;
        else
          more = 0;
      k += PARALLEL;
    }
    printf("faults: %s: %s: %ld points\n", policy, kind_names[kind], last);
  }
  printf("faults: %s: %d runs: %d succeeded, %d returned an error, %d "
         "known exec.c defects skipped, %d failures\n",
         policy, st.runs, st.ok, st.errors, st.skipped, st.failures);
  if (st.skipped)
    printf("faults: %s: skipped (core/exec.c):%s\n", policy, st.skipped_list);
  if (st.nomsg)
    printf("faults: %s: %d errors came without a message "
           "(cua_runtime_error() empty):%s\n",
           policy, st.nomsg, st.nomsg_list);
  fflush(stdout);
  ck_assert_msg(st.nomsg == 0, "%s: %d errors without a message (see the log)",
                policy, st.nomsg);
  ck_assert_msg(st.failures == 0, "%s: %d runs failed (see the log)", policy,
                st.failures);
}

START_TEST(faults_single_stream) {
  sweep("single-stream");
}
END_TEST

START_TEST(faults_round_robin) {
  sweep("round-robin");
}
END_TEST

START_TEST(faults_least_loaded) {
  sweep("least-loaded");
}
END_TEST

START_TEST(faults_heft) {
  sweep("heft");
}
END_TEST

START_TEST(faults_work_stealing) {
  sweep("work-stealing");
}
END_TEST

START_TEST(faults_affinity) {
  sweep("affinity");
}
END_TEST

/* Out of memory while a submission is wired to its producers fails the
 * submission (cua_submit() returns CUA_ERR_NOMEM) before anything runs; it
 * used to be found only when the edge was registered, after the buffers'
 * hazards were committed, and only the node failed: an op ordered after
 * it by a hazard alone no longer waited for its producer. Here the fill
 * has 7 consumers (6 reads and the then), more than a node holds inline,
 * and is pending while it is wired (behind a host step), so each consumer
 * registers with it. In steady state (after a first run) the core's pools
 * and the host backend's caches make every allocation of cua_submit() one
 * of the decision's: so any k that fails must fail the call itself, and a
 * call that succeeds must run everything correctly. (Not under ASan, where
 * the pools keep nothing: see below.) */
#define READS 6
/* zip(then(host step, fill a), READS copies of a to out): its root. */
static cua_op *reads_dag(cua_runtime *rt, cua_buffer *a, float value,
                         float out[READS][ELEMS]) {
  cua_op *h, *fill, *parts[READS + 1], *z;
  ck_assert_int_eq(cua_op_host(&h, rt, host_fn, NULL), 0);
  ck_assert_int_eq(cua_op_fill(&fill, a, value), 0);
  ck_assert_int_eq(cua_op_then(&parts[0], h, fill), 0);
  for (int i = 0; i < READS; i++)
    ck_assert_int_eq(cua_op_memcpy_d2h(&parts[i + 1], out[i], a, 0, ELEMS * 4),
                     0);
  ck_assert_int_eq(cua_op_zip(&z, parts, READS + 1), 0);
  cua_op_destroy(h);
  cua_op_destroy(fill);
  for (int i = 0; i <= READS; i++)
    cua_op_destroy(parts[i]);
  return z;
}

START_TEST(wiring_out_of_memory_fails_the_submission) {
  /* Under AddressSanitizer the pools keep nothing, so allocations made
   * after the decision (command lists, points) may fail an op as they
   * should: the premise of a steady state without them is gone. */
  if (!cua__pool_keeps()) {
    printf("wiring_out_of_memory_fails_the_submission: skipped, the pools "
           "keep nothing in this build\n");
    return;
  }
  cua_runtime *rt;
  ck_assert_int_eq(open_text(&rt, "[runtime]\nbackend = host\n"
                                  "policy = single-stream\n"),
                   0);
  cua_buffer *a;
  ck_assert_int_eq(cua_buffer_create(&a, rt, 0, ELEMS * 4, 0), 0);
  static float out[READS][ELEMS];
  cua_future *f;
  /* Warm the pools and caches, then count the allocations of one call. */
  long calls = 0;
  for (int i = 0; i < 4; i++) {
    cua_op *z = reads_dag(rt, a, 1.0f, out);
    cua__fault_arm(CUA__FAULT_ALLOC, 0);
    ck_assert_int_eq(cua_submit(&f, rt, z, NULL), 0);
    calls = cua__fault_calls(CUA__FAULT_ALLOC);
    ck_assert_int_eq(cua_future_wait(f), 0);
    cua_future_destroy(f);
    cua_op_destroy(z);
  }
  ck_assert_int_gt(calls, 0);
  int refused = 0;
  for (long k = 1; k <= calls; k++) {
    float value = (float)(k + 1);
    cua_op *z = reads_dag(rt, a, value, out);
    cua__fault_arm(CUA__FAULT_ALLOC, k);
    int rc = cua_submit(&f, rt, z, NULL);
    cua__fault_arm(CUA__FAULT_ALLOC, 0);
    cua_op_destroy(z);
    if (rc != 0) {
      ck_assert_int_eq(rc, CUA_ERR_NOMEM);
      ck_assert_ptr_nonnull(
          strstr(cua_runtime_error(rt), "out of host memory"));
      refused++;
      continue;
    }
    ck_assert_msg(cua_future_wait(f) == 0,
                  "k=%ld of %ld: submitted, then failed: %s", k, calls,
                  cua_future_error(f));
    cua_future_destroy(f);
    for (int i = 0; i < READS; i++)
      for (int e = 0; e < ELEMS; e++)
        ck_assert_float_eq(out[i][e], value);
  }
  ck_assert_int_gt(refused, 0);
  cua_buffer_destroy(a);
  cua_runtime_destroy(rt);
}
END_TEST

/* The injection itself: the k-th call fails once, later ones succeed. */
START_TEST(injection_fails_the_kth_call_once) {
  cua__fault_arm(CUA__FAULT_ALLOC, 2);
  void *p1 = cua__malloc(8), *p2 = cua__malloc(8), *p3 = cua__strdup("x");
  ck_assert_ptr_nonnull(p1);
  ck_assert_ptr_null(p2);
  ck_assert_ptr_nonnull(p3);
  ck_assert_int_eq(cua__fault_calls(CUA__FAULT_ALLOC), 3);
  ck_assert_int_eq(cua__fault_fired(CUA__FAULT_ALLOC), 1);
  free(p1);
  free(p3);
  cua__fault_arm(CUA__FAULT_DLOPEN, 1);
  ck_assert_ptr_null(cua__dlopen("libc.so.6", RTLD_NOW));
  ck_assert_str_eq(cua__dlerror(), "injected failure");
  cua__fault_arm(CUA__FAULT_THREAD, 1);
  pthread_t t;
  ck_assert_int_eq(cua__pthread_create(&t, NULL, NULL, NULL), EAGAIN);
  cua__fault_arm(CUA__FAULT_ALLOC, 0);
  void *p4 = cua__calloc(1, 1);
  ck_assert_ptr_nonnull(p4);
  free(p4);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("faults");
  TCase *tc = tcase_create("sweep");
  tcase_set_timeout(tc, 1800);
  tcase_add_test(tc, injection_fails_the_kth_call_once);
  tcase_add_test(tc, faults_single_stream);
  tcase_add_test(tc, faults_round_robin);
  tcase_add_test(tc, faults_least_loaded);
  tcase_add_test(tc, faults_affinity);
  tcase_add_test(tc, faults_heft);
  tcase_add_test(tc, faults_work_stealing);
  suite_add_tcase(s, tc);
  tc = tcase_create("wiring");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, wiring_out_of_memory_fails_the_submission);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if (getenv("CUASYNC_FAULTS_SKIP") != NULL) {
    printf("skipped: $CUASYNC_FAULTS_SKIP is set\n");
    return 77;
  }
  require_backend();
  return run_suite(suite());
}
