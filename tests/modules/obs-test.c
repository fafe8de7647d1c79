/*
 * tests/modules/obs-test.c: an observer for tests/check_observers.c.
 *
 * Parameters ([observer.obs-test]):
 *   mode  ENUM count|fail|block, default count. count: counts the records
 *         of each kind (obs_test_count()); fail: record() fails at once;
 *         block: the first record() waits until obs_test_release() is
 *         called, so that records pile up in the core.
 *
 * It asks for the core's event records and marks too
 * (CUA_OBSERVER_COMMANDS). Its counters and the gate are process globals,
 * guarded by mu, read by the test through dlsym().
 */
#include <cuasync/errors.h>
#include <cuasync/observer.h>

#include <pthread.h>
#include <stdlib.h>

static const cua_param_spec ot_params[] = {
    {"mode", CUA_PARAM_ENUM, "count", 0, 0, "count|fail|block",
     "what record() does", 0},
};

/* Read by the test through dlsym(). */
__attribute__((visibility("default"))) void obs_test_release(void);
__attribute__((visibility("default"))) unsigned long obs_test_count(int kind);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int released;
#define NKINDS 16
static unsigned long counts[NKINDS];

__attribute__((visibility("default"))) void obs_test_release(void) {
  pthread_mutex_lock(&mu);
  released = 1;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

__attribute__((visibility("default"))) unsigned long obs_test_count(int kind) {
  pthread_mutex_lock(&mu);
  unsigned long n = kind >= 0 && kind < NKINDS ? counts[kind] : 0;
  pthread_mutex_unlock(&mu);
  return n;
}

typedef struct ot_state {
  const cua_observer_host *host;
  int mode;
} ot_state;

static int ot_create(const cua_observer_host *host,
                     const cua_param_value *params, void **state) {
  ot_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return CUA_ERR_NOMEM;
  s->host = host;
  s->mode = (int)params[0].i;
  pthread_mutex_lock(&mu);
  released = 0;
  for (int k = 0; k < NKINDS; k++)
    counts[k] = 0;
  pthread_mutex_unlock(&mu);
  *state = s;
  return 0;
}

static void ot_destroy(void *state) {
  free(state);
}

static int ot_record(void *state, const cua_obs_record *recs, size_t n,
                     size_t stride) {
  ot_state *s = state;
  if (s->mode == 1) {
    s->host->log(s->host->core, CUA_LOG_ERROR, "told to fail");
    return -1;
  }
  pthread_mutex_lock(&mu);
  while (s->mode == 2 && !released)
    pthread_cond_wait(&cv, &mu);
  for (size_t i = 0; i < n; i++) {
    const cua_obs_record *r =
        (const cua_obs_record *)(const void *)((const char *)recs + i * stride);
    if ((int)r->kind >= 0 && (int)r->kind < NKINDS)
      counts[r->kind]++;
  }
  pthread_mutex_unlock(&mu);
  return 0;
}

CUA_OBSERVER_DEFINE(.name = "obs-test", .version = "1.0",
                    .description = "counts, fails or blocks, for the tests",
                    .flags = CUA_OBSERVER_COMMANDS,
                    CUA_OBSERVER_PARAMS(ot_params), .create = ot_create,
                    .destroy = ot_destroy, .record = ot_record);
