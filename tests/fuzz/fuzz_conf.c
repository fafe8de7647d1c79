/*
 * tests/fuzz/fuzz_conf.c: libFuzzer target for the INI configuration parser
 * and printer (core/conf.c, confruntime.c, confsyntax.c, confprint.c).
 *
 * The input is configuration text. It is parsed twice, as text and as a
 * file (through a memfd, so that read_file() runs too), and both must
 * agree. A failure must come with a known code and a message; a success
 * must print (cua__config_print()), whatever bytes its keys and values
 * hold, as text that parses back to the same configuration: the [runtime]
 * values and every other section's keys and values, byte for byte. Every
 * [policy.X] / [backend.X] section is checked against a schema holding
 * every parameter type.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FLAGS (CUA_RUNTIME_IGNORE_ENV | CUA_RUNTIME_NO_SYSTEM_CONFIG)

static const cua_param_spec schema[] = {
    {"i", CUA_PARAM_INT, "4", -5, 1024, NULL, "int", 0},
    {"d", CUA_PARAM_DOUBLE, "0.5", 0, 1, NULL, "double", 0},
    {"b", CUA_PARAM_BOOL, "false", 0, 0, NULL, "bool", 0},
    {"s", CUA_PARAM_STRING, NULL, 0, 0, NULL, "string", 0},
    {"e", CUA_PARAM_ENUM, "a", 0, 0, "a|bb|c", "enum", 0},
    {"m", CUA_PARAM_STRING, NULL, 0, 0, NULL, "multi", CUA_PARAM_MULTI},
    {"mi", CUA_PARAM_INT, NULL, 0, 10, NULL, "multi int", CUA_PARAM_MULTI},
};
#define NSCHEMA (sizeof schema / sizeof schema[0])

static void check(int cond, const char *what, const char *text) {
  if (!cond) {
    fprintf(stderr, "fuzz_conf: %s\ninput:\n%s\n", what, text);
    abort();
  }
}

static void check_params(const cua__config *cfg, const char *text) {
  char err[CUA__ERRLEN];
  for (size_t i = 0; i < cfg->nsections; i++) {
    const char *name = cfg->sections[i].name;
    if (strncmp(name, "policy.", 7) != 0 && strncmp(name, "backend.", 8) != 0)
      continue;
    cua_param_value *v = NULL;
    err[0] = '\0';
    int rc =
        cua__config_params(cfg, name, schema, NSCHEMA, &v, err, sizeof err);
    if (rc != 0) {
      check(err[0] != '\0', "cua__config_params failed without a message",
            text);
      check(strcmp(cua_err_name(rc), "CUA_ERR_UNKNOWN") != 0,
            "cua__config_params: unknown code", text);
      continue;
    }
    check(v != NULL, "cua__config_params: 0 without values", text);
    check(v[0].i >= -5 && v[0].i <= 1024, "int out of its range", text);
    check(v[1].d >= 0 && v[1].d <= 1, "double out of its range", text);
    check(v[2].i == 0 || v[2].i == 1, "bool neither 0 nor 1", text);
    check(v[4].i >= 0 && v[4].i < 3, "enum index out of range", text);
    check(v[4].s != NULL, "enum without text", text);
    for (size_t k = 0; k < v[5].count; k++)
      check(v[5].list[k] != NULL, "multi value NULL", text);
    for (size_t k = 0; k < v[6].count; k++)
      check(v[6].list[k] != NULL, "multi int value NULL", text);
    cua__config_params_free(v, NSCHEMA);
  }
}

/* The same sections and keys, in order; the same policy_path entries too
 * if @p paths (a file's relative entries are resolved against its
 * directory, text's are not). */
static int same(const cua__config *a, const cua__config *b, int paths) {
  if (strcmp(a->backend, b->backend) != 0 ||
      strcmp(a->policy, b->policy) != 0 || a->ndevices != b->ndevices ||
      a->npolicy_path != b->npolicy_path ||
      a->on_policy_error != b->on_policy_error || a->launch != b->launch)
    return 0;
  for (size_t i = 0; i < a->ndevices; i++)
    if (a->devices[i] != b->devices[i])
      return 0;
  for (size_t i = 0; paths && i < a->npolicy_path; i++)
    if (strcmp(a->policy_path[i], b->policy_path[i]) != 0)
      return 0;
  /* The printed text has [runtime] first and only its resolved keys. */
  size_t j = 0;
  for (size_t i = 0; i < a->nsections; i++) {
    const cua__section *s = &a->sections[i];
    if (strcmp(s->name, "runtime") == 0)
      continue;
    while (j < b->nsections && strcmp(b->sections[j].name, "runtime") == 0)
      j++;
    if (j >= b->nsections)
      return 0;
    const cua__section *t = &b->sections[j++];
    if (strcmp(s->name, t->name) != 0 || s->nkv != t->nkv)
      return 0;
    for (size_t k = 0; k < s->nkv; k++)
      if (strcmp(s->kv[k].key, t->kv[k].key) != 0 ||
          strcmp(s->kv[k].value, t->kv[k].value) != 0)
        return 0;
  }
  while (j < b->nsections && strcmp(b->sections[j].name, "runtime") == 0)
    j++;
  return j == b->nsections;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16)
    return 0;
  char *text = malloc(size + 1);
  memcpy(text, data, size);
  text[size] = '\0';
  size_t len = strlen(text); /* the text API stops at a NUL */

  cua__config *cfg = NULL;
  char err[CUA__ERRLEN] = "";
  int rc = cua__config_load(&cfg, NULL, text, FLAGS, err, sizeof err);
  check((rc == 0) == (cfg != NULL), "return code and config disagree", text);
  if (rc != 0) {
    check(err[0] != '\0', "failure without a message", text);
    check(strcmp(cua_err_name(rc), "CUA_ERR_UNKNOWN") != 0, "unknown code",
          text);
  }

  /* The same bytes as a file. */
  int fd = memfd_create("fuzz_conf", 0);
  if (fd >= 0) {
    if (write(fd, text, len) == (ssize_t)len) {
      char path[64];
      snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
      cua__config *fcfg = NULL;
      char ferr[CUA__ERRLEN] = "";
      int frc = cua__config_load(&fcfg, path, NULL, FLAGS, ferr, sizeof ferr);
      if (frc != rc) {
        fprintf(stderr, "text: %s: %s\nfile: %s: %s\n", cua_err_name(rc), err,
                cua_err_name(frc), ferr);
        check(0, "the text and the file parse differently", text);
      }
      if (fcfg != NULL) {
        check(cfg != NULL && same(cfg, fcfg, 0),
              "the text and the file give different configurations", text);
      }
      cua__config_free(fcfg);
    }
    close(fd);
  }

  if (cfg != NULL) {
    check_params(cfg, text);
    /* What cuasync-info prints parses back to the same configuration. */
    char *out = NULL;
    size_t outlen = 0;
    FILE *f = open_memstream(&out, &outlen);
    if (f != NULL) {
      char perr[CUA__ERRLEN] = "";
      int prc = cua__config_print(cfg, f, perr, sizeof perr);
      fclose(f);
      if (prc != 0) {
        fprintf(stderr, "print: %s: %s\n", cua_err_name(prc), perr);
        check(0, "what was read does not print", text);
      }
      cua__config *back = NULL;
      char berr[CUA__ERRLEN] = "";
      int brc = cua__config_load(&back, NULL, out, FLAGS, berr, sizeof berr);
      if (brc != 0 || !same(cfg, back, 1)) {
        fprintf(stderr, "printed:\n%s\nreparsed: %s: %s\n", out,
                cua_err_name(brc), berr);
        check(0, "the printed configuration does not parse back the same",
              text);
      }
      cua__config_free(back);
      free(out);
    }
    (void)cua__config_device_policy(cfg, 0, NULL);
  }
  cua__config_free(cfg);
  free(text);
  return 0;
}
