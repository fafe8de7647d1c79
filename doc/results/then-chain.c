/*
 * doc/results/then-chain.c: the 1,000,000-op then-chain of issue 14, timed
 * by phase (h100host-0.2-then-chain*.txt). Not built by the tree:
 *
 *   cc -O2 -o then-chain then-chain.c $(pkg-config --cflags --libs cuasync)
 *   ./then-chain [N]     (default 1000000; host backend, round-robin)
 *
 * It builds then(then(then(s1, s2), s3), ...) of N spins of 1 ns (2N ops
 * in all: N spins and N - 1 thens), submits it at once, waits, and frees.
 */
#include <cuasync.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
  cua_runtime_options ro;
  memset(&ro, 0, sizeof ro);
  ro.size = sizeof ro;
  ro.config_text = "[runtime]\nbackend = host\npolicy = round-robin\n";
  ro.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  cua_runtime *rt;
  if (cua_runtime_create_ex(&rt, &ro) != 0) {
    fprintf(stderr, "%s\n", cua_runtime_error(NULL));
    return 1;
  }
  double t0 = now();
  cua_op *c;
  if (cua_op_spin(&c, rt, 0, 1) != 0)
    return 2;
  for (size_t i = 1; i < n; i++) {
    cua_op *s, *t;
    if (cua_op_spin(&s, rt, 0, 1) != 0 || cua_op_then(&t, c, s) != 0) {
      fprintf(stderr, "op %zu: %s\n", i, cua_runtime_error(rt));
      return 2;
    }
    cua_op_destroy(c);
    cua_op_destroy(s);
    c = t;
  }
  double t1 = now();
  cua_future *f;
  if (cua_submit(&f, rt, c, NULL) != 0) {
    fprintf(stderr, "submit: %s\n", cua_runtime_error(rt));
    return 3;
  }
  double t2 = now();
  int rc = cua_future_wait(f);
  double t3 = now();
  cua_future_destroy(f);
  cua_op_destroy(c);
  double t4 = now();
  cua_runtime_destroy(rt);
  double t5 = now();
  printf("n=%zu rc=%d build %.2f submit %.2f wait %.2f free %.2f close %.2f "
         "total %.2f s\n",
         n, rc, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t0);
  return rc != 0;
}
