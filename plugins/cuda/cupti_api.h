/*
 * plugins/cuda/cupti_api.h: libcupti opened at run time (dlopen), and the
 * activity- and callback-API entry points cuasync uses, for the CUDA
 * backend's device times (cupti_times.c) and cuasync-bench --timestamps
 * (tools/bench/stamps.cu). Header-only, C and C++ (nvcc); include it after
 * <cupti.h>. No state of its own: each user keeps its table and the lock
 * that guards it.
 */
#ifndef CUASYNC_PLUGINS_CUPTI_API_H
#define CUASYNC_PLUGINS_CUPTI_API_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

typedef struct cua_cupti_api {
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*callbacks)(CUpti_BuffersCallbackRequestFunc,
                           CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*flush)(uint32_t);
  CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*push)(CUpti_ExternalCorrelationKind, uint64_t);
  CUptiResult (*pop)(CUpti_ExternalCorrelationKind, uint64_t *);
  CUptiResult (*clock)(CUpti_TimestampCallbackFunc);
  /* The callback API: the correlation id of a launch, as it is made. */
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc,
                           void *);
  CUptiResult (*enable_cb)(uint32_t, CUpti_SubscriberHandle,
                           CUpti_CallbackDomain, CUpti_CallbackId);
} cua_cupti_api;

/* Opens libcupti (the names the toolkit installs, then its usual
 * folders) and fills @p api. Returns 0, or -1 with why in @p why. The
 * library stays loaded: CUPTI keeps hooks in the driver. */
static inline int cua_cupti_open(cua_cupti_api *api, char *why, size_t len) {
  static const char *const names[] = {
      "libcupti.so", "libcupti.so.13", "libcupti.so.12",
      "/usr/local/cuda/lib64/libcupti.so",
      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};
  void *h = NULL;
  for (size_t i = 0; h == NULL && i < sizeof names / sizeof *names; i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(why, len, "libcupti not found (%s)", dlerror());
    return -1;
  }
  static const char *const syms[] = {"cuptiActivityEnable",
                                     "cuptiActivityDisable",
                                     "cuptiActivityRegisterCallbacks",
                                     "cuptiActivityFlushAll",
                                     "cuptiActivityGetNextRecord",
                                     "cuptiActivityPushExternalCorrelationId",
                                     "cuptiActivityPopExternalCorrelationId",
                                     "cuptiActivityRegisterTimestampCallback",
                                     "cuptiSubscribe",
                                     "cuptiEnableCallback"};
  void **f[] = {(void **)&api->enable,    (void **)&api->disable,
                (void **)&api->callbacks, (void **)&api->flush,
                (void **)&api->next,      (void **)&api->push,
                (void **)&api->pop,       (void **)&api->clock,
                (void **)&api->subscribe, (void **)&api->enable_cb};
  for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
    if ((*f[i] = dlsym(h, syms[i])) == NULL) {
      snprintf(why, len, "libcupti lacks %s", syms[i]);
      return -1;
    }
  return 0;
}

#endif
