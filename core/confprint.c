/*
 * core/confprint.c: writing a configuration back as INI text
 * (cua__config_print(), for cuasync-info).
 *
 * The text is the configuration as resolved: [runtime] with every key
 * (defaults filled in, $CUASYNC_POLICY applied, policy_path entries
 * resolved), then the other sections with their keys as read. No lock: a
 * cua__config is not changed once cua__config_load() has returned it, so
 * any thread may print it.
 */
#include "config.h"

#include "conf.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

void cua__config_print(const cua__config *cfg, void *file) {
  FILE *f = file;
  size_t i, j;

  if (cfg == NULL || f == NULL)
    return;
  fprintf(f, "; configuration from %s\n", cfg->origin);
  fprintf(f, "[runtime]\nbackend = %s\ndevices = ", cfg->backend);
  if (cfg->devices == NULL)
    fprintf(f, "all");
  for (i = 0; i < cfg->ndevices; i++)
    fprintf(f, "%s%d", i > 0 ? "," : "", cfg->devices[i]);
  fprintf(f, "\npolicy = %s%s\n", cfg->policy,
          cfg->policy_from_env ? " ; from $CUASYNC_POLICY" : "");
  if (cfg->npolicy_path > 0) {
    fprintf(f, "policy_path = ");
    for (i = 0; i < cfg->npolicy_path; i++)
      fprintf(f, "%s%s", i > 0 ? ":" : "", cfg->policy_path[i]);
    fprintf(f, "\n");
  }
  fprintf(f, "on_policy_error = %s\n",
          cfg->on_policy_error == CUA__ON_POLICY_ERROR_FALLBACK ? "fallback"
                                                                : "error");
  for (i = 0; i < cfg->nsections; i++) {
    const cua__section *s = &cfg->sections[i];
    if (strcmp(s->name, "runtime") == 0)
      continue;
    fprintf(f, "\n[%s]\n", s->name);
    for (j = 0; j < s->nkv; j++)
      fprintf(f, "%s = %s\n", s->kv[j].key, s->kv[j].value);
  }
}
