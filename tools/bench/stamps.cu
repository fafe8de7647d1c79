/*
 * tools/bench/stamps.cu: the ways to take device timestamps of every task
 * that cuasync-bench --timestamps compares (raw-ts-* baselines), so that
 * the observers' choice (doc/results) comes from a measurement:
 *
 *   events  a timing event recorded before and after each task, read with
 *           cudaEventElapsedTime() (what the CUDA backend does for
 *           observers);
 *   device  a one-thread kernel before and after each task that writes
 *           the GPU's global timer to device memory, copied back once;
 *   cupti   CUPTI's activity API (kernel, memcpy and memset records, and
 *           external correlation ids pushed around each task's launch,
 *           which CUPTI gives with the runtime API's records only),
 *           libcupti opened at run time.
 *
 * A run takes the stamps; reading them (elapsed times, the copy, CUPTI's
 * flush) happens after the run's clock stops, and checks that every task
 * got its start and end, so a mechanism that silently lost stamps fails
 * rather than looking cheap.
 *
 * Host-only code compiled by nvcc, as C++ (see raw.cu), one kernel.
 */
#include "config.h"

#include "stamps.h"

#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<cupti.h>)
#include <cupti.h>
#define STAMPS_HAVE_CUPTI 1

#include "../../plugins/cuda/cupti_api.h"
#endif
#endif

struct bench_stamps {
  int kind;
  size_t n;
  cudaEvent_t *ev;            /* events: 2 per task */
  unsigned long long **slots; /* device: per device, 2 per task */
  int ndev;
  int *task_dev;                /* device: the device of each task's stream */
  size_t records, correlations; /* cupti: seen in the last read */
};

namespace {

__global__ void stamp_kernel(unsigned long long *slot) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *slot = t;
}

int ck(cudaError_t e, const char *what, char *err, size_t len) {
  if (e == cudaSuccess)
    return 0;
  snprintf(err, len, "%s: %s", what, cudaGetErrorString(e));
  return -1;
}

#ifdef STAMPS_HAVE_CUPTI
/* libcupti, opened once; its entry points. */
struct cupti_lib {
  int tried, ok;
  char why[200];
  cua_cupti_api f;
};
cupti_lib cupti;
bench_stamps *cupti_owner; /* the stamps CUPTI's buffers are counted for */

/* External correlations come with the runtime API's records only. */
const CUpti_ActivityKind cupti_kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

int cupti_load(void) {
  if (cupti.tried)
    return cupti.ok ? 0 : -1;
  cupti.tried = 1;
  if (cua_cupti_open(&cupti.f, cupti.why, sizeof cupti.why) != 0)
    return -1;
  cupti.ok = 1;
  return 0;
}

void CUPTIAPI cupti_buffer_requested(uint8_t **buf, size_t *size,
                                     size_t *max_records) {
  *size = 8 << 20;
  *buf = (uint8_t *)aligned_alloc(8, *size);
  *max_records = 0;
}

void CUPTIAPI cupti_buffer_completed(CUcontext, uint32_t, uint8_t *buf, size_t,
                                     size_t valid) {
  CUpti_Activity *rec = NULL;
  while (buf != NULL && cupti.f.next(buf, valid, &rec) == CUPTI_SUCCESS) {
    if (cupti_owner == NULL)
      continue;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMSET:
      cupti_owner->records++;
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      cupti_owner->correlations++;
      break;
    default:
      break;
    }
  }
  free(buf);
}
#endif

} // namespace

extern "C" int bench_stamps_open(bench_stamps **out, int kind, size_t n,
                                 int ndev, const int *task_dev, char *err,
                                 size_t len) {
  *out = NULL;
  bench_stamps *st = (bench_stamps *)calloc(1, sizeof *st);
  if (st == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  st->kind = kind;
  st->n = n;
  st->ndev = ndev;
  int rc = 0;
  if (kind == BENCH_STAMPS_EVENTS) {
    st->ev = (cudaEvent_t *)calloc(2 * n + 1, sizeof *st->ev);
    if (st->ev == NULL) {
      snprintf(err, len, "out of memory");
      rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < 2 * n; i++)
      rc = ck(cudaSetDevice(task_dev[i / 2]), "cudaSetDevice", err, len) ||
           ck(cudaEventCreate(&st->ev[i]), "cudaEventCreate", err, len);
  } else if (kind == BENCH_STAMPS_DEVICE) {
    st->slots = (unsigned long long **)calloc((size_t)ndev, sizeof *st->slots);
    st->task_dev = (int *)malloc((n + 1) * sizeof *st->task_dev);
    if (st->slots == NULL || st->task_dev == NULL) {
      snprintf(err, len, "out of memory");
      rc = -1;
    } else {
      memcpy(st->task_dev, task_dev, n * sizeof *task_dev);
    }
    for (int d = 0; rc == 0 && d < ndev; d++)
      rc = ck(cudaSetDevice(d), "cudaSetDevice", err, len) ||
           ck(cudaMalloc((void **)&st->slots[d],
                         (2 * n + 1) * sizeof **st->slots),
              "cudaMalloc", err, len) ||
           ck(cudaMemset(st->slots[d], 0, (2 * n + 1) * sizeof **st->slots),
              "cudaMemset", err, len);
  } else {
#ifdef STAMPS_HAVE_CUPTI
    if (cupti_load() != 0) {
      snprintf(err, len, "%s", cupti.why);
      rc = -1;
    } else if (cupti_owner != NULL) {
      snprintf(err, len, "CUPTI stamps are already in use");
      rc = -1;
    } else if (cupti.f.callbacks(cupti_buffer_requested,
                                 cupti_buffer_completed) != CUPTI_SUCCESS) {
      snprintf(err, len, "cuptiActivityRegisterCallbacks failed");
      rc = -1;
    } else {
      for (size_t i = 0;
           rc == 0 && i < sizeof cupti_kinds / sizeof *cupti_kinds; i++)
        if (cupti.f.enable(cupti_kinds[i]) != CUPTI_SUCCESS) {
          snprintf(err, len, "cuptiActivityEnable(%d) failed",
                   (int)cupti_kinds[i]);
          rc = -1;
        }
      if (rc == 0)
        cupti_owner = st;
    }
#else
    snprintf(err, len, "built without cupti.h");
    rc = -1;
#endif
  }
  if (rc != 0) {
    bench_stamps_close(st);
    return -1;
  }
  *out = st;
  return 0;
}

extern "C" int bench_stamps_take(bench_stamps *st, size_t k, int after,
                                 void *stream, int dev, char *err, size_t len) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (st->kind) {
  case BENCH_STAMPS_EVENTS:
    return ck(cudaEventRecord(st->ev[2 * k + (size_t)after], s),
              "cudaEventRecord", err, len);
  case BENCH_STAMPS_DEVICE:
    stamp_kernel<<<1, 1, 0, s>>>(st->slots[dev] + 2 * k + (size_t)after);
    return ck(cudaGetLastError(), "stamp kernel launch", err, len);
  default:
#ifdef STAMPS_HAVE_CUPTI
    if (!after) {
      if (cupti.f.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, k + 1) !=
          CUPTI_SUCCESS) {
        snprintf(err, len, "cuptiActivityPushExternalCorrelationId failed");
        return -1;
      }
    } else {
      uint64_t id = 0;
      if (cupti.f.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &id) !=
              CUPTI_SUCCESS ||
          id != k + 1) {
        snprintf(err, len, "cuptiActivityPopExternalCorrelationId failed");
        return -1;
      }
    }
#endif
    return 0;
  }
}

extern "C" int bench_stamps_read(bench_stamps *st, char *err, size_t len) {
  size_t bad = 0;
  if (st->kind == BENCH_STAMPS_EVENTS) {
    for (size_t k = 0; k < st->n; k++) {
      float ms = -1;
      if (ck(cudaEventElapsedTime(&ms, st->ev[2 * k], st->ev[2 * k + 1]),
             "cudaEventElapsedTime", err, len))
        return -1;
      bad += ms < 0;
    }
  } else if (st->kind == BENCH_STAMPS_DEVICE) {
    unsigned long long *h =
        (unsigned long long *)calloc(2 * st->n + 1, sizeof *h);
    if (h == NULL) {
      snprintf(err, len, "out of memory");
      return -1;
    }
    for (int d = 0; d < st->ndev; d++) {
      if (ck(cudaSetDevice(d), "cudaSetDevice", err, len) ||
          ck(cudaMemcpy(h, st->slots[d], 2 * st->n * sizeof *h,
                        cudaMemcpyDeviceToHost),
             "cudaMemcpy", err, len)) {
        free(h);
        return -1;
      }
      for (size_t k = 0; k < st->n; k++)
        if (st->task_dev[k] == d)
          bad += h[2 * k] == 0 || h[2 * k + 1] < h[2 * k];
      if (ck(cudaMemset(st->slots[d], 0, 2 * st->n * sizeof *h), "cudaMemset",
             err, len)) {
        free(h);
        return -1;
      }
    }
    free(h);
  } else {
#ifdef STAMPS_HAVE_CUPTI
    if (cupti.f.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS) {
      snprintf(err, len, "cuptiActivityFlushAll failed");
      return -1;
    }
    if (st->records < st->n || st->correlations < st->n) {
      snprintf(err, len,
               "CUPTI gave %zu device records and %zu external correlations "
               "for %zu tasks",
               st->records, st->correlations, st->n);
      st->records = st->correlations = 0;
      return -1;
    }
    st->records = st->correlations = 0; /* the next run counts afresh */
#endif
  }
  if (bad != 0) {
    snprintf(err, len, "%zu of %zu tasks lack a start or an end stamp", bad,
             st->n);
    return -1;
  }
  return 0;
}

extern "C" void bench_stamps_close(bench_stamps *st) {
  if (st == NULL)
    return;
  for (size_t i = 0; st->ev != NULL && i < 2 * st->n; i++)
    if (st->ev[i] != NULL)
      cudaEventDestroy(st->ev[i]);
  for (int d = 0; st->slots != NULL && d < st->ndev; d++)
    if (st->slots[d] != NULL)
      cudaFree(st->slots[d]);
#ifdef STAMPS_HAVE_CUPTI
  if (cupti_owner == st) {
    cupti.f.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (size_t i = 0; i < sizeof cupti_kinds / sizeof *cupti_kinds; i++)
      cupti.f.disable(cupti_kinds[i]);
    cupti_owner = NULL;
  }
#endif
  free(st->ev);
  free(st->slots);
  free(st->task_dev);
  free(st);
}
