/*
 * tests/fuzz/fuzz_params.c: libFuzzer target for module parameter values
 * against the schema of each standard policy.
 *
 * Input: one byte picks the policy (single-stream, round-robin,
 * least-loaded, affinity), then records of one byte picking a key of its
 * schema (0xff: the key's name is the bytes up to the next ' ') and the
 * value, up to the next newline. They become a [policy.NAME] section, which
 * goes through the same validation as an INI file (cua__config_load(),
 * cua__config_params()); accepted values must lie in the schema's ranges,
 * and a runtime is then opened with them on the host backend, so that the
 * policy's create() reads them too, and runs one op.
 *
 * Needs $CUASYNC_MODULE_PATH to name the build tree's policies/.libs and
 * plugins/.libs (tests/fuzz/run.sh sets it).
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"single-stream", "round-robin",
                                    "least-loaded", "affinity"};
#define NPOL 4
static const cua_policy_descriptor *desc[NPOL];
static cua__module *mods[NPOL]; /* kept: loaded once per process */

static void die(const char *what, const char *text) {
  fprintf(stderr, "fuzz_params: %s\ninput:\n%s\n", what, text);
  abort();
}

static void load_schemas(void) {
  char err[CUA__ERRLEN];
  for (int i = 0; i < NPOL; i++) {
    cua__module *m = NULL;
    if (cua__module_load(&mods[i], CUA__MODULE_POLICY, names[i], NULL, 0, 0,
                         err, sizeof err) != 0) {
      fprintf(stderr,
              "fuzz_params: cannot load %s (set CUASYNC_MODULE_PATH): %s\n",
              names[i], err);
      exit(2);
    }
    m = mods[i];
    desc[i] = m->desc.policy;
  }
}

static int n_choices(const char *c) {
  int n = 1;
  for (; *c; c++)
    n += *c == '|';
  return n;
}

/* Accepted values must be what the schema allows. */
static void check_values(const cua_policy_descriptor *d,
                         const cua_param_value *v, const char *text) {
  for (size_t i = 0; i < d->nparams; i++) {
    const cua_param_spec *sp = &d->params[i];
    if (!v[i].present && sp->default_value == NULL)
      continue;
    switch (sp->type) {
    case CUA_PARAM_INT:
      if ((double)v[i].i < sp->min || (double)v[i].i > sp->max)
        die("INT value accepted out of range", text);
      break;
    case CUA_PARAM_DOUBLE:
      if (!(v[i].d >= sp->min && v[i].d <= sp->max))
        die("DOUBLE value accepted out of range (or NaN)", text);
      break;
    case CUA_PARAM_BOOL:
      if (v[i].i != 0 && v[i].i != 1)
        die("BOOL value neither 0 nor 1", text);
      break;
    case CUA_PARAM_ENUM:
      if (v[i].i < 0 || v[i].i >= n_choices(sp->choices))
        die("ENUM index out of range", text);
      break;
    default:
      break;
    }
    if (sp->flags & CUA_PARAM_MULTI)
      for (size_t k = 0; k < v[i].count; k++)
        if (v[i].list[k] == NULL)
          die("MULTI value NULL", text);
  }
}

static int fill_result(cua_runtime *rt) {
  cua_buffer *b = NULL;
  cua_op *f = NULL, *r = NULL, *t = NULL;
  float h[4] = {0, 0, 0, 0};
  int rc = cua_buffer_create(&b, rt, 0, sizeof h, 0);
  if (rc == 0)
    rc = cua_op_fill(&f, b, 7.0f);
  if (rc == 0)
    rc = cua_op_memcpy_d2h(&r, h, b, 0, sizeof h);
  if (rc == 0)
    rc = cua_op_then(&t, f, r);
  if (rc == 0)
    rc = cua_submit_wait(rt, t, NULL, NULL);
  cua_op_destroy(t);
  cua_op_destroy(r);
  cua_op_destroy(f);
  cua_buffer_destroy(b);
  if (rc == 0 && (h[0] != 7.0f || h[3] != 7.0f))
    return -1;
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (desc[0] == NULL)
    load_schemas();
  if (size < 1 || size > 4096)
    return 0;
  int pol = data[0] % NPOL;
  const cua_policy_descriptor *d = desc[pol];
  size_t cap = 256 + size * 32;
  char *text = malloc(cap);
  int n = snprintf(text, cap,
                   "[runtime]\nbackend = host\npolicy = %s\n[policy.%s]\n",
                   names[pol], names[pol]);
  size_t pos = (size_t)n, i = 1;
  while (i < size) {
    uint8_t k = data[i++];
    if (k == 0xff) { /* a key of arbitrary text */
      while (i < size && data[i] != ' ' && data[i] != '\n')
        text[pos++] = data[i] ? (char)data[i] : '_', i++;
      if (i < size)
        i++;
    } else {
      const char *key = d->params[k % d->nparams].name;
      pos += (size_t)sprintf(text + pos, "%s", key);
    }
    text[pos++] = ' ';
    text[pos++] = '=';
    text[pos++] = ' ';
    while (i < size && data[i] != '\n') {
      char c = (char)data[i++];
      text[pos++] = c == '\0' || c == '\r' ? ' ' : c;
    }
    if (i < size)
      i++;
    text[pos++] = '\n';
  }
  text[pos] = '\0';

  char sec[64], err[CUA__ERRLEN] = "";
  snprintf(sec, sizeof sec, "policy.%s", names[pol]);
  cua__config *cfg = NULL;
  int rc = cua__config_load(
      &cfg, NULL, text, CUA_RUNTIME_IGNORE_ENV | CUA_RUNTIME_NO_SYSTEM_CONFIG,
      err, sizeof err);
  int prc = rc;
  if (rc == 0) {
    cua_param_value *v = NULL;
    prc = cua__config_params(cfg, sec, d->params, d->nparams, &v, err,
                             sizeof err);
    if (prc == 0) {
      check_values(d, v, text);
      cua__config_params_free(v, d->nparams);
    } else if (err[0] == '\0') {
      die("schema check failed without a message", text);
    }
  }
  cua__config_free(cfg);

  /* The runtime reads the same section the same way, then the policy's
   * create() reads the values. */
  cua_runtime_options o;
  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.config_text = text;
  o.flags = CUA_RUNTIME_NO_SYSTEM_CONFIG;
  cua_runtime *rt = NULL;
  int crc = cua_runtime_create_ex(&rt, &o);
  if (prc != 0 && crc != prc) {
    fprintf(stderr, "schema: %s: %s\nruntime: %s: %s\n", cua_err_name(prc), err,
            cua_err_name(crc), cua_runtime_error(NULL));
    die("the runtime and the schema check disagree", text);
  }
  if (crc != 0) {
    if (rt != NULL)
      die("failed runtime_create left a runtime", text);
    if (cua_runtime_error(NULL)[0] == '\0')
      die("runtime_create failed without a message", text);
    if (strcmp(cua_err_name(crc), "CUA_ERR_UNKNOWN") == 0)
      die("runtime_create: unknown code", text);
  } else {
    if (fill_result(rt) != 0)
      die("a fill under the configured policy failed", text);
    cua_runtime_destroy(rt);
  }
  free(text);
  return 0;
}
