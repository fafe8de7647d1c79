/*
 * tests/fuzz/fuzz_dag.c: libFuzzer target driving the public API with DAG
 * descriptions on the host backend.
 *
 * The first byte picks the runtime's policy (single-stream, round-robin,
 * least-loaded, affinity, round-robin by level); the rest is a program for
 * tests/fuzz/dagprog.h (ops on four buffers and a shared read-only one,
 * then / zip / unzip / map / shared, submissions with per-submission
 * policies or explicit streams, waits, timeouts, callbacks, early
 * destruction of futures and buffers), whose results are checked against
 * the sequential reference. Each input opens and closes its own runtime.
 *
 * Needs $CUASYNC_MODULE_PATH (tests/fuzz/run.sh sets it).
 */
#include "dagprog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const configs[] = {
    "policy = single-stream\n",
    "policy = round-robin\n[policy.round-robin]\nstreams = 3\n",
    "policy = least-loaded\n[policy.least-loaded]\nstreams = 2\n",
    "policy = affinity\n[policy.affinity]\nrule = tag:hot -> 0\n",
    "policy = round-robin\n[policy.round-robin]\nby_level = true\n",
};
#define NCONF (sizeof configs / sizeof configs[0])

static void must(int rc, const char *what) {
  if (rc != 0) {
    fprintf(stderr, "fuzz_dag: %s: %s: %s\n", what, cua_err_name(rc),
            cua_runtime_error(NULL));
    abort();
  }
}

static int fill_wait(cua_runtime *rt, cua_buffer *b, float v) {
  cua_op *op = NULL;
  int rc = cua_op_fill(&op, b, v);
  if (rc == 0)
    rc = cua_submit_wait(rt, op, NULL, NULL);
  cua_op_destroy(op);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 2048)
    return 0;
  char text[512];
  snprintf(text, sizeof text, "[runtime]\nbackend = host\n%s",
           configs[data[0] % NCONF]);
  cua_runtime_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.config_text = text;
  o.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;

  static dp_ctx c; /* large: not on the stack */
  memset(&c, 0, sizeof c);
  c.who = "fuzz_dag";
  must(cua_runtime_create_ex(&c.rt, &o), "runtime");
  for (int b = 0; b < DP_NBUF; b++) {
    must(cua_buffer_create(&c.buf[b], c.rt, 0, sizeof c.ref[b], 0), "buffer");
    must(fill_wait(c.rt, c.buf[b], (float)b), "fill");
    dp_set_ref(&c, b, (float)b);
    c.owned[b] = 1;
  }
  must(cua_buffer_create(&c.ro, c.rt, 0, sizeof c.ro_ref, 0), "buffer");
  must(fill_wait(c.rt, c.ro, 2.0f), "fill");
  must(cua_buffer_share(c.ro), "share");
  for (int k = 0; k < DP_ELEMS; k++)
    c.ro_ref[k] = 2.0f;
  cua_policy *pols[2] = {NULL, NULL};
  must(cua_policy_open(&pols[0], c.rt, "single-stream"), "policy");
  must(cua_policy_open(&pols[1], c.rt, "least-loaded"), "policy");
  c.policies = pols;
  c.npolicies = 2;

  dp_run(&c, data + 1, size - 1);
  dp_finish(&c);

  cua_policy_close(pols[0]);
  cua_policy_close(pols[1]);
  for (int b = 0; b < DP_NBUF; b++)
    cua_buffer_destroy(c.buf[b]);
  cua_buffer_destroy(c.ro);
  cua_runtime_destroy(c.rt);
  return 0;
}
