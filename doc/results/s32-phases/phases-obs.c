/* doc/results/s32-phases/phases-obs.c (thirty-second session, experiment):
 * an observer that timestamps every launch() on the launching thread and,
 * when the runtime closes, writes "sub t_before t_after" lines to
 * $PHASES_OUT. */
#include <cuasync/observer.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CAP 400000
static struct { uint64_t sub, t0, t1; } ev[CAP];
static size_t nev;

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static int ph_create(const cua_observer_host *h, const cua_param_value *p,
                     void **st) {
  (void)h, (void)p;
  *st = &nev;
  return 0;
}
static void ph_destroy(void *st) {
  (void)st;
  const char *f = getenv("PHASES_OUT");
  FILE *o = f ? fopen(f, "w") : NULL;
  for (size_t i = 0; o && i < nev; i++)
    fprintf(o, "%llu %llu %llu\n", (unsigned long long)ev[i].sub,
            (unsigned long long)ev[i].t0, (unsigned long long)ev[i].t1);
  if (o)
    fclose(o);
}
static void ph_launch(void *st, const cua_obs_record *op, int phase,
                      void *native) {
  (void)st, (void)native;
  uint64_t t = now();
  if (phase == 0 && nev < CAP) {
    ev[nev].sub = op->submission;
    ev[nev].t0 = t;
  } else if (phase == 1 && nev < CAP) {
    ev[nev++].t1 = t;
  }
}
CUA_OBSERVER_DEFINE(.name = "phases", .version = "1.0",
                    .description = "launch timestamps (experiment)",
                    .flags = CUA_OBSERVER_NO_RECORDS, .create = ph_create,
                    .destroy = ph_destroy, .launch = ph_launch);
