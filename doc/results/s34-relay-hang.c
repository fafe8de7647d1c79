/* doc/results/s34-relay-hang.c (thirty-fourth session, not built): a chain of
 * 2,000 stream functions whose sixth submits (ARM0=1 FUNC=1: four more stream
 * functions; without FUNC: four barriers) hangs under launch = auto (relayed)
 * on the launchtime test backend, and so on CUDA: the nested submission's
 * list is applied after chunks a launch thread decided after it, and both
 * wait for their turns on the stream. With launch = caller it completes.
 *   cc -I include -o hang doc/results/s34-relay-hang.c -L .libs -lcuasync
 *   ARM0=1 FUNC=1 CUASYNC_MODULE_PATH=... ./hang 4 5 -1
 * (args: submissions per armed run, index of the submitting function,
 * index of a host step or -1). Fixed in b932ecd (cua__relay_nested_wait()). */
/* A staged (plan-built, chunked) chain; a stream function early in it
 * submits NB barriers while the chain's later chunks are not made yet. */
#include <cuasync.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cua_runtime *grt;
static int nb_to_submit, armed;
static cua_future *bf[64];
static int nbf;

static int hostfn(void *arg, void **result) {
  (void)arg;
  usleep(20000);
  *result = NULL;
  return 0;
}
static int fn(cua_stream_ctx *ctx, void *arg) {
  (void)ctx;
  if (armed && arg == (void *)1) {
    armed = 0;
    for (int k = 0; k < nb_to_submit; k++) {
      cua_op *b;
      if (getenv("FUNC") ? cua_op_func(&b, grt, fn, NULL, NULL, 0)
                         : cua_op_barrier(&b, grt))
        abort();
      if (cua_submit(&bf[nbf], grt, b, NULL) == 0)
        nbf++;
      else
        fprintf(stderr, "barrier submit: %s\n", cua_runtime_error(grt));
      cua_op_destroy(b);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int n = 2000, at = argc > 2 ? atoi(argv[2]) : 5,
      hat = argc > 3 ? atoi(argv[3]) : -1;
  nb_to_submit = argc > 1 ? atoi(argv[1]) : 4;
  const char *be = getenv("BE") ? getenv("BE") : "launchtime";
  char text[256];
  snprintf(text, sizeof text,
           "[runtime]\nbackend = %s\npolicy = single-stream\n", be);
  cua_runtime_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.config_text = text;
  o.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  if (cua_runtime_create_ex(&grt, &o)) {
    fprintf(stderr, "rt: %s\n", cua_runtime_error(NULL));
    return 2;
  }
  cua_op *acc = NULL;
  for (int i = 0; i < n; i++) {
    cua_op *f;
    if (i == hat) {
      if (cua_op_host(&f, grt, hostfn, NULL))
        abort();
    } else if (cua_op_func(&f, grt, fn, i == at ? (void *)1 : NULL, NULL, 0))
      abort();
    if (acc == NULL)
      acc = f;
    else {
      cua_op *t;
      if (cua_op_then(&t, acc, f))
        abort();
      cua_op_destroy(acc);
      cua_op_destroy(f);
      acc = t;
    }
  }
  int bad = 0;
  for (int k = 0; k < 5; k++) {
    armed = getenv("ARM0") ? 1 : k >= 3;
    cua_future *fu;
    if (cua_submit(&fu, grt, acc, NULL)) {
      fprintf(stderr, "submit: %s\n", cua_runtime_error(grt));
      return 2;
    }
    int rc = cua_future_wait(fu);
    cua_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    cua_runtime_stats(grt, &st);
    printf("submission %d: rc=%s staged=%llu %s\n", k, cua_err_name(rc),
           (unsigned long long)st.builds_staged,
           rc ? cua_future_error(fu) : "");
    if (rc)
      bad = 1;
    cua_future_destroy(fu);
  }
  for (int i = 0; i < nbf; i++) {
    int rc = cua_future_wait(bf[i]);
    if (rc) {
      printf("barrier %d: %s %s\n", i, cua_err_name(rc),
             cua_future_error(bf[i]));
      bad = 1;
    }
    cua_future_destroy(bf[i]);
  }
  printf("barriers submitted: %d\n", nbf);
  cua_op_destroy(acc);
  cua_runtime_destroy(grt);
  return bad;
}
