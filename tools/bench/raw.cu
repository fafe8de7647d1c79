/*
 * tools/bench/raw.cu: the raw CUDA baselines of cuasync-bench, the
 * hand-written equivalents of a workload DAG:
 *
 *   serial   every task on one non-blocking stream of device 0, in the
 *            DAG's topological order (a stream orders everything);
 *   streams  the plan's streams, with an event recorded after exactly the
 *            tasks a consumer on another stream waits for, and
 *            cudaStreamWaitEvent() before each such consumer;
 *   graph    the streams version captured once (stream capture, forked
 *            from and joined back to the first stream) and instantiated
 *            before any run; a run is one cudaGraphLaunch().
 *
 * and the raw sides of the micro-benchmarks: submission rate (launches from
 * one or more threads), launch + synchronise latency, callback latency.
 *
 * Every task uses the same launchers as the CUDA backend
 * (kernels/kernels.h); copies are cudaMemcpyAsync() with pinned host
 * memory. Every CUDA call is checked. A run starts on idle devices (every
 * device synchronised before the clock starts) and ends when every stream
 * it used is synchronised, so the host clock brackets all of the work.
 *
 * Host-only code compiled by nvcc, as C++: no exceptions, no templates.
 */
#include "config.h"

#include "bench.h"
#include "kernels.h"
#include "stamps.h"

#include <cuda_runtime.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bench_raw {
  int mode;              /* SERIAL, STREAMS or GRAPH */
  bench_stamps *stamps;  /* raw-ts-*: STREAMS with a device stamp around
                            each task (stamps.cu), or NULL */
  uint64_t build_ns; /* graph: capture and instantiation */
  uint64_t inst_ns;  /* graph: the last instantiation alone */
  bench_plan own_plan; /* bench_raw_keep_plan(): the plan it holds */
  const bench_dag *dag;
  const bench_plan *plan;
  int ndev;              /* devices used */
  int nstreams;          /* streams in all */
  cudaStream_t *streams; /* nstreams */
  int *stream_dev;       /* device of each stream */
  cudaEvent_t *events;   /* per task: recorded after it, or NULL */
  cudaEvent_t fork;      /* graph: the capture's fork point */
  cudaEvent_t *join;     /* graph: per stream, joins back to stream 0 */
  float **bufs;          /* per buffer */
  float **x;             /* per device: AXPY input */
  void **hin, **hout;    /* per buffer: pinned host chunks */
  cudaGraph_t graph;
  cudaGraphExec_t exec;
};

namespace {

__global__ void bench_empty_kernel(void) {}

int ck(cudaError_t e, const char *what, char *err, size_t len) {
  if (e == cudaSuccess)
    return 0;
  snprintf(err, len, "%s: %s (%s)", what, cudaGetErrorString(e),
           cudaGetErrorName(e));
  return -1;
}

int ck_int(int e, const char *what, char *err, size_t len) {
  return ck((cudaError_t)e, what, err, len);
}

/* Waits for every device the baseline uses: nothing of an earlier run,
 * or of another contender, is still running when the clock starts. */
int sync_devices(int ndev, char *err, size_t len) {
  for (int d = 0; d < ndev; d++)
    if (ck(cudaSetDevice(d), "cudaSetDevice", err, len) ||
        ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err, len))
      return -1;
  return 0;
}

int launch_task(bench_raw *r, size_t k, cudaStream_t s, int dev, char *err,
                size_t len) {
  const bench_dag *d = r->dag;
  const bench_task *t = &d->task[k];
  size_t n = d->bytes / sizeof(float);
  switch (t->kind) {
  case BENCH_SPIN:
    return ck_int(cua__kernel_spin(bench_task_ns(d, t), d->blocks, s),
                  "spin launch", err,
                  len);
  case BENCH_AXPY:
    return ck_int(cua__kernel_axpy(r->bufs[t->buf], r->x[dev], n, 0.5f, s),
                  "axpy launch", err, len);
  case BENCH_H2D:
    return ck(cudaMemcpyAsync(r->bufs[t->buf], r->hin[t->buf], d->bytes,
                              cudaMemcpyHostToDevice, s),
              "cudaMemcpyAsync H2D", err, len);
  default:
    return ck(cudaMemcpyAsync(r->hout[t->buf], r->bufs[t->buf], d->bytes,
                              cudaMemcpyDeviceToHost, s),
              "cudaMemcpyAsync D2H", err, len);
  }
}

/* Enqueues the whole DAG (what a run times, or what the graph captures). */
int enqueue(bench_raw *r, char *err, size_t len) {
  const bench_dag *d = r->dag;
  const bench_plan *p = r->plan;
  int cur = -1;
  for (size_t k = 0; k < d->n; k++) {
    int s = r->mode == BENCH_RAW_SERIAL ? 0 : p->stream[k];
    int dev = r->stream_dev[s];
    cudaStream_t st = r->streams[s];
    if (dev != cur) {
      if (ck(cudaSetDevice(dev), "cudaSetDevice", err, len))
        return -1;
      cur = dev;
    }
    if (r->mode != BENCH_RAW_SERIAL)
      for (size_t w = p->wait_off[k]; w < p->wait_off[k + 1]; w++)
        if (ck(cudaStreamWaitEvent(st, r->events[p->wait[w]], 0),
               "cudaStreamWaitEvent", err, len))
          return -1;
    if (r->stamps != NULL &&
        bench_stamps_take(r->stamps, k, 0, st, dev, err, len))
      return -1;
    if (launch_task(r, k, st, dev, err, len))
      return -1;
    if (r->stamps != NULL &&
        bench_stamps_take(r->stamps, k, 1, st, dev, err, len))
      return -1;
    if (r->mode != BENCH_RAW_SERIAL && p->record[k] &&
        ck(cudaEventRecord(r->events[k], st), "cudaEventRecord", err, len))
      return -1;
  }
  return 0;
}

int make_streams(bench_raw *r, char *err, size_t len) {
  int per = r->mode == BENCH_RAW_SERIAL ? 1 : r->plan->nstreams;
  r->nstreams = per * r->ndev;
  r->streams = (cudaStream_t *)calloc((size_t)r->nstreams, sizeof *r->streams);
  r->stream_dev = (int *)calloc((size_t)r->nstreams, sizeof *r->stream_dev);
  if (r->streams == NULL || r->stream_dev == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (int i = 0; i < r->nstreams; i++) {
    r->stream_dev[i] = i / per;
    if (ck(cudaSetDevice(r->stream_dev[i]), "cudaSetDevice", err, len) ||
        ck(cudaStreamCreateWithFlags(&r->streams[i], cudaStreamNonBlocking),
           "cudaStreamCreateWithFlags", err, len))
      return -1;
  }
  return 0;
}

int make_memory(bench_raw *r, char *err, size_t len) {
  const bench_dag *d = r->dag;
  int has_axpy = 0, has_copy = 0;
  for (size_t k = 0; k < d->n; k++) {
    has_axpy |= d->task[k].kind == BENCH_AXPY;
    has_copy |= d->task[k].kind == BENCH_H2D || d->task[k].kind == BENCH_D2H;
  }
  if (d->nbuf == 0)
    return 0;
  r->bufs = (float **)calloc(d->nbuf, sizeof *r->bufs);
  r->hin = (void **)calloc(d->nbuf, sizeof *r->hin);
  r->hout = (void **)calloc(d->nbuf, sizeof *r->hout);
  r->x = (float **)calloc((size_t)r->ndev, sizeof *r->x);
  int *dev = (int *)calloc(d->nbuf, sizeof *dev);
  if (r->bufs == NULL || r->hin == NULL || r->hout == NULL || r->x == NULL ||
      dev == NULL) {
    free(dev);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = d->n; k-- > 0;)
    if (d->task[k].buf >= 0)
      dev[d->task[k].buf] =
          r->mode == BENCH_RAW_SERIAL ? 0 : d->task[k].device % r->ndev;
  int rc = 0;
  for (size_t b = 0; b < d->nbuf && rc == 0; b++) {
    rc = ck(cudaSetDevice(dev[b]), "cudaSetDevice", err, len) ||
         ck(cudaMalloc((void **)&r->bufs[b], d->bytes), "cudaMalloc", err,
            len) ||
         ck(cudaMemset(r->bufs[b], 0, d->bytes), "cudaMemset", err, len);
    if (rc == 0 && has_copy)
      rc =
          ck(cudaMallocHost(&r->hin[b], d->bytes), "cudaMallocHost", err,
             len) ||
          ck(cudaMallocHost(&r->hout[b], d->bytes), "cudaMallocHost", err, len);
    if (rc == 0 && has_copy)
      memset(r->hin[b], 0, d->bytes);
  }
  free(dev);
  for (int i = 0; i < r->ndev && rc == 0 && has_axpy; i++) {
    int s = i * (r->nstreams / r->ndev);
    rc = ck(cudaSetDevice(i), "cudaSetDevice", err, len) ||
         ck(cudaMalloc((void **)&r->x[i], d->bytes), "cudaMalloc", err, len) ||
         ck_int(cua__kernel_fill(r->x[i], d->bytes / sizeof(float), 1.0f,
                                 r->streams[s]),
                "fill launch", err, len) ||
         ck(cudaStreamSynchronize(r->streams[s]), "cudaStreamSynchronize", err,
            len);
  }
  return rc ? -1 : 0;
}

int make_events(bench_raw *r, char *err, size_t len) {
  const bench_dag *d = r->dag;
  const bench_plan *p = r->plan;
  r->events = (cudaEvent_t *)calloc(d->n ? d->n : 1, sizeof *r->events);
  if (r->events == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < d->n; k++) {
    if (!p->record[k])
      continue;
    if (ck(cudaSetDevice(r->stream_dev[p->stream[k]]), "cudaSetDevice", err,
           len) ||
        ck(cudaEventCreateWithFlags(&r->events[k], cudaEventDisableTiming),
           "cudaEventCreateWithFlags", err, len))
      return -1;
  }
  return 0;
}

/* raw-ts-*: the stamps of every task, on the device of its stream. */
int open_stamps(bench_raw *r, int kind, char *err, size_t len) {
  const bench_dag *d = r->dag;
  int *dev = (int *)calloc(d->n ? d->n : 1, sizeof *dev);
  if (dev == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < d->n; k++)
    dev[k] = r->stream_dev[r->plan->stream[k]];
  int rc = bench_stamps_open(&r->stamps, kind, d->n, r->ndev, dev, err, len);
  free(dev);
  return rc;
}

/* Captures the streams version into a graph and instantiates it. */
int capture(bench_raw *r, char *err, size_t len) {
  cudaStream_t origin = r->streams[0];
  r->join = (cudaEvent_t *)calloc((size_t)r->nstreams, sizeof *r->join);
  if (r->join == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (int i = 0; i < r->nstreams; i++)
    if (ck(cudaSetDevice(r->stream_dev[i]), "cudaSetDevice", err, len) ||
        ck(cudaEventCreateWithFlags(&r->join[i], cudaEventDisableTiming),
           "cudaEventCreateWithFlags", err, len))
      return -1;
  if (ck(cudaSetDevice(0), "cudaSetDevice", err, len) ||
      ck(cudaEventCreateWithFlags(&r->fork, cudaEventDisableTiming),
         "cudaEventCreateWithFlags", err, len))
    return -1;
  /* Thread-local mode: the cuasync runtimes' own threads may keep calling
   * CUDA meanwhile without invalidating the capture. */
  if (ck(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal),
         "cudaStreamBeginCapture", err, len))
    return -1;
  int rc = ck(cudaEventRecord(r->fork, origin), "cudaEventRecord", err, len);
  for (int i = 1; i < r->nstreams && rc == 0; i++)
    rc = ck(cudaStreamWaitEvent(r->streams[i], r->fork, 0),
            "cudaStreamWaitEvent (fork)", err, len);
  if (rc == 0)
    rc = enqueue(r, err, len);
  for (int i = 1; i < r->nstreams && rc == 0; i++)
    rc = ck(cudaSetDevice(r->stream_dev[i]), "cudaSetDevice", err, len) ||
         ck(cudaEventRecord(r->join[i], r->streams[i]), "cudaEventRecord", err,
            len) ||
         ck(cudaSetDevice(0), "cudaSetDevice", err, len) ||
         ck(cudaStreamWaitEvent(origin, r->join[i], 0),
            "cudaStreamWaitEvent (join)", err, len);
  /* End the capture even after a failure, so the stream is usable again;
   * the first error is the one reported. */
  cudaGraph_t g = NULL;
  char err2[256];
  cudaSetDevice(0);
  int rc2 = ck(cudaStreamEndCapture(origin, &g), "cudaStreamEndCapture", err2,
               sizeof err2);
  r->graph = g;
  if (rc != 0)
    return -1;
  if (rc2 != 0) {
    snprintf(err, len, "%s", err2);
    return -1;
  }
  uint64_t t0 = bench_now_ns();
  rc = ck(cudaGraphInstantiate(&r->exec, r->graph, 0), "cudaGraphInstantiate",
          err, len);
  r->inst_ns = bench_now_ns() - t0;
  return rc;
}

/* Drops what capture() made, to make it again. */
void uncapture(bench_raw *r) {
  if (r->exec != NULL)
    cudaGraphExecDestroy(r->exec);
  if (r->graph != NULL)
    cudaGraphDestroy(r->graph);
  for (int i = 0; r->join != NULL && i < r->nstreams; i++)
    if (r->join[i] != NULL)
      cudaEventDestroy(r->join[i]);
  if (r->fork != NULL)
    cudaEventDestroy(r->fork);
  free(r->join);
  r->exec = NULL;
  r->graph = NULL;
  r->join = NULL;
  r->fork = NULL;
}

/* capture(), timed: what a graph costs to make, per node; the fastest of
 * BENCH_CAPTURES captures (one alone varies by up to 2x with what the
 * driver did before, which only adds), the last one kept. */
int timed_capture(bench_raw *r, char *err, size_t len) {
  uint64_t t[BENCH_CAPTURES];
  for (int i = 0; i < BENCH_CAPTURES; i++) {
    if (i > 0)
      uncapture(r);
    uint64_t t0 = bench_now_ns();
    if (capture(r, err, len) != 0)
      return -1;
    t[i] = bench_now_ns() - t0;
  }
  r->build_ns = bench_min_u64(t, BENCH_CAPTURES);
  return 0;
}

} // namespace

extern "C" int bench_raw_recapture(bench_raw *r, uint64_t *ns,
                                   uint64_t *inst_ns, char *err, size_t len) {
  *ns = 0;
  if (inst_ns != NULL)
    *inst_ns = 0;
  if (r->mode != BENCH_RAW_GRAPH) {
    snprintf(err, len, "recapture: not a raw-graph baseline");
    return -1;
  }
  uncapture(r);
  uint64_t t0 = bench_now_ns();
  if (capture(r, err, len) != 0)
    return -1;
  *ns = bench_now_ns() - t0;
  if (inst_ns != NULL)
    *inst_ns = r->inst_ns;
  return 0;
}

extern "C" uint64_t bench_raw_build_ns(const bench_raw *r) {
  return r->build_ns;
}

extern "C" int bench_raw_available(char *why, size_t len) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(why, len, "no usable CUDA device: %s", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0) {
    snprintf(why, len, "no CUDA device");
    return 0;
  }
  return 1;
}

extern "C" int bench_raw_sysinfo(bench_sysinfo *info) {
  memset(info, 0, sizeof *info);
  if (cudaDriverGetVersion(&info->driver_version) != cudaSuccess)
    info->driver_version = 0;
  if (cudaRuntimeGetVersion(&info->runtime_version) != cudaSuccess)
    info->runtime_version = 0;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0)
    return -1;
  info->gpus = n;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess)
    return -1;
  snprintf(info->gpu, sizeof info->gpu, "%s", prop.name);
  info->cc_major = prop.major;
  info->cc_minor = prop.minor;
  return 0;
}

extern "C" void bench_raw_keep_plan(bench_raw *r, bench_plan *plan) {
  r->own_plan = *plan;
  memset(plan, 0, sizeof *plan);
  r->plan = &r->own_plan;
}

extern "C" void bench_raw_close(bench_raw *r) {
  if (r == NULL)
    return;
  /* Nothing may still use what is freed below. */
  char ignored[64];
  sync_devices(r->ndev, ignored, sizeof ignored);
  bench_stamps_close(r->stamps);
  if (r->exec != NULL)
    cudaGraphExecDestroy(r->exec);
  if (r->graph != NULL)
    cudaGraphDestroy(r->graph);
  for (size_t k = 0; r->events != NULL && k < r->dag->n; k++)
    if (r->events[k] != NULL)
      cudaEventDestroy(r->events[k]);
  for (int i = 0; r->join != NULL && i < r->nstreams; i++)
    if (r->join[i] != NULL)
      cudaEventDestroy(r->join[i]);
  if (r->fork != NULL)
    cudaEventDestroy(r->fork);
  for (size_t b = 0; r->bufs != NULL && b < r->dag->nbuf; b++) {
    if (r->bufs[b] != NULL)
      cudaFree(r->bufs[b]);
    if (r->hin != NULL && r->hin[b] != NULL)
      cudaFreeHost(r->hin[b]);
    if (r->hout != NULL && r->hout[b] != NULL)
      cudaFreeHost(r->hout[b]);
  }
  for (int i = 0; r->x != NULL && i < r->ndev; i++)
    if (r->x[i] != NULL)
      cudaFree(r->x[i]);
  for (int i = 0; r->streams != NULL && i < r->nstreams; i++)
    if (r->streams[i] != NULL)
      cudaStreamDestroy(r->streams[i]);
  free(r->events);
  free(r->join);
  free(r->bufs);
  free(r->hin);
  free(r->hout);
  free(r->x);
  free(r->streams);
  free(r->stream_dev);
  bench_plan_free(&r->own_plan);
  free(r);
}

extern "C" int bench_raw_open(bench_raw **out, const bench_dag *dag,
                              const bench_plan *plan, int mode, char *err,
                              size_t len) {
  *out = NULL;
  bench_raw *r = (bench_raw *)calloc(1, sizeof *r);
  if (r == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  int stamps = mode == BENCH_RAW_TS_EVENTS   ? BENCH_STAMPS_EVENTS
               : mode == BENCH_RAW_TS_DEVICE ? BENCH_STAMPS_DEVICE
               : mode == BENCH_RAW_TS_CUPTI  ? BENCH_STAMPS_CUPTI
                                             : -1;
  if (stamps >= 0)
    mode = BENCH_RAW_STREAMS;
  r->mode = mode;
  r->dag = dag;
  r->plan = plan;
  r->ndev = mode == BENCH_RAW_SERIAL ? 1 : plan->ndevices;
  int have = 0;
  if (ck(cudaGetDeviceCount(&have), "cudaGetDeviceCount", err, len)) {
    free(r);
    return -1;
  }
  if (have < r->ndev) {
    snprintf(err, len, "the plan needs %d CUDA devices, %d visible", r->ndev,
             have);
    free(r);
    return -1;
  }
  if (make_streams(r, err, len) || make_memory(r, err, len) ||
      (mode != BENCH_RAW_SERIAL && make_events(r, err, len)) ||
      (mode == BENCH_RAW_GRAPH && timed_capture(r, err, len)) ||
      (stamps >= 0 && open_stamps(r, stamps, err, len)) ||
      sync_devices(r->ndev, err, len)) {
    bench_raw_close(r);
    return -1;
  }
  *out = r;
  return 0;
}

extern "C" int bench_raw_run(bench_raw *r, uint64_t *ns, char *err,
                             size_t len) {
  if (sync_devices(r->ndev, err, len))
    return -1;
  uint64_t t0 = bench_now_ns();
  if (r->mode == BENCH_RAW_GRAPH) {
    if (ck(cudaSetDevice(0), "cudaSetDevice", err, len) ||
        ck(cudaGraphLaunch(r->exec, r->streams[0]), "cudaGraphLaunch", err,
           len) ||
        ck(cudaStreamSynchronize(r->streams[0]), "cudaStreamSynchronize", err,
           len))
      return -1;
  } else {
    if (enqueue(r, err, len))
      return -1;
    for (int i = 0; i < r->nstreams; i++)
      if (ck(cudaStreamSynchronize(r->streams[i]), "cudaStreamSynchronize", err,
             len))
        return -1;
  }
  *ns = bench_now_ns() - t0;
  /* Reading the stamps is not timed (an observer reads them on a thread
   * of its own), but a mechanism that lost some fails. */
  if (r->stamps != NULL && bench_stamps_read(r->stamps, err, len))
    return -1;
  return 0;
}

namespace {

/* The submit workload: what one launching thread does. */
struct submit_ctx {
  cudaStream_t *streams;
  int nstreams, nthreads, t;
  size_t n;
  pthread_mutex_t *mu;
  pthread_cond_t *cv;
  int *gate; /* 0: wait, 1: go, 2: give up */
  cudaError_t err;
};

void submit_launch(submit_ctx *c) {
  size_t share = c->n / (size_t)c->nthreads +
                 ((size_t)c->t < c->n % (size_t)c->nthreads ? 1 : 0);
  c->err = cudaSetDevice(0);
  for (size_t i = 0; i < share && c->err == cudaSuccess; i++)
    c->err = (cudaError_t)cua__kernel_spin(
        0, 1, c->streams[((size_t)c->t + i) % (size_t)c->nstreams]);
}

void *submit_thread(void *arg) {
  submit_ctx *c = (submit_ctx *)arg;
  pthread_mutex_lock(c->mu);
  while (*c->gate == 0)
    pthread_cond_wait(c->cv, c->mu);
  int go = *c->gate == 1;
  pthread_mutex_unlock(c->mu);
  if (go)
    submit_launch(c);
  return NULL;
}

void open_gate(pthread_mutex_t *mu, pthread_cond_t *cv, int *gate, int v) {
  pthread_mutex_lock(mu);
  *gate = v;
  pthread_cond_broadcast(cv);
  pthread_mutex_unlock(mu);
}

} // namespace

extern "C" int bench_raw_submit(int nthreads, size_t n, int nstreams,
                                uint64_t *ns, char *err, size_t len) {
  if (nthreads < 1)
    nthreads = 1;
  if (nthreads > 64)
    nthreads = 64;
  if (nstreams < 1)
    nstreams = 1;
  cudaStream_t *streams =
      (cudaStream_t *)calloc((size_t)nstreams, sizeof *streams);
  submit_ctx ctx[64];
  pthread_t th[64];
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  int gate = 0, made = 0, posters = 0, rc = 0;
  if (streams == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  rc = ck(cudaSetDevice(0), "cudaSetDevice", err, len);
  for (int i = 0; i < nstreams && rc == 0; i++) {
    rc = ck(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking),
            "cudaStreamCreateWithFlags", err, len);
    if (rc == 0)
      made++;
  }
  /* Warm-up: every stream has run a kernel before the clock starts. */
  for (int i = 0; i < nstreams && rc == 0; i++)
    rc = ck_int(cua__kernel_spin(0, 1, streams[i]), "spin launch", err, len);
  if (rc == 0)
    rc = ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err, len);
  for (int t = 0; t < nthreads; t++) {
    ctx[t].streams = streams;
    ctx[t].nstreams = nstreams;
    ctx[t].nthreads = nthreads;
    ctx[t].t = t;
    ctx[t].n = n;
    ctx[t].mu = &mu;
    ctx[t].cv = &cv;
    ctx[t].gate = &gate;
    ctx[t].err = cudaSuccess;
  }
  for (int t = 0; rc == 0 && nthreads > 1 && t < nthreads; t++) {
    int e = pthread_create(&th[t], NULL, submit_thread, &ctx[t]);
    if (e != 0) {
      snprintf(err, len, "pthread_create: %s", strerror(e));
      rc = -1;
    } else {
      posters++;
    }
  }
  uint64_t t0 = bench_now_ns();
  if (rc == 0 && nthreads > 1)
    open_gate(&mu, &cv, &gate, 1);
  else if (rc == 0)
    submit_launch(&ctx[0]);
  else
    open_gate(&mu, &cv, &gate, 2);
  for (int t = 0; t < posters; t++)
    pthread_join(th[t], NULL);
  for (int t = 0; rc == 0 && t < nthreads; t++)
    rc = ck(ctx[t].err, "spin launch", err, len);
  for (int i = 0; i < made && rc == 0; i++)
    rc = ck(cudaStreamSynchronize(streams[i]), "cudaStreamSynchronize", err,
            len);
  if (rc == 0)
    *ns = bench_now_ns() - t0;
  for (int i = 0; i < made; i++) {
    cudaStreamSynchronize(streams[i]);
    cudaStreamDestroy(streams[i]);
  }
  free(streams);
  return rc ? -1 : 0;
}

extern "C" int bench_raw_sync_latency(size_t iters, uint64_t *samples,
                                      uint64_t *launch, char *err, size_t len) {
  cudaStream_t s = NULL;
  const size_t warmup = 10;
  if (ck(cudaSetDevice(0), "cudaSetDevice", err, len) ||
      ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err, len) ||
      ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
         "cudaStreamCreateWithFlags", err, len))
    return -1;
  int rc = 0;
  for (size_t i = 0; i < warmup + iters && rc == 0; i++) {
    uint64_t t0 = bench_now_ns();
    rc = ck_int(cua__kernel_spin(0, 1, s), "spin launch", err, len);
    uint64_t tl = bench_now_ns();
    rc = rc || ck(cudaStreamSynchronize(s), "cudaStreamSynchronize", err, len);
    uint64_t t1 = bench_now_ns();
    if (rc == 0 && i >= warmup) {
      samples[i - warmup] = t1 - t0;
      if (launch != NULL)
        launch[i - warmup] = tl - t0;
    }
  }
  cudaStreamDestroy(s);
  return rc ? -1 : 0;
}

namespace {
void CUDART_CB stamp_callback(void *arg) {
  __atomic_store_n((uint64_t *)arg, bench_now_ns(), __ATOMIC_RELEASE);
}
} // namespace

extern "C" int bench_raw_callback_latency(size_t iters, uint64_t *samples,
                                          char *err, size_t len) {
  cudaStream_t s = NULL;
  uint64_t stamp = 0;
  const size_t warmup = 10;
  if (ck(cudaSetDevice(0), "cudaSetDevice", err, len) ||
      ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err, len) ||
      ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
         "cudaStreamCreateWithFlags", err, len))
    return -1;
  int rc = 0;
  for (size_t i = 0; i < warmup + iters && rc == 0; i++) {
    __atomic_store_n(&stamp, 0, __ATOMIC_RELAXED);
    uint64_t t0 = bench_now_ns();
    rc = ck(cudaLaunchKernel((const void *)bench_empty_kernel, dim3(1), dim3(1),
                             NULL, 0, s),
            "empty kernel launch", err, len) ||
         ck(cudaLaunchHostFunc(s, stamp_callback, &stamp), "cudaLaunchHostFunc",
            err, len) ||
         ck(cudaStreamSynchronize(s), "cudaStreamSynchronize", err, len);
    /* The synchronisation returns after the callback has run. */
    uint64_t fired = __atomic_load_n(&stamp, __ATOMIC_ACQUIRE);
    if (rc == 0 && fired < t0) {
      snprintf(err, len, "the host callback did not run");
      rc = -1;
    }
    if (rc == 0 && i >= warmup)
      samples[i - warmup] = fired - t0;
  }
  cudaStreamDestroy(s);
  return rc ? -1 : 0;
}

extern "C" int bench_raw_axpy_ns(size_t bytes, uint64_t *ns, char *err,
                                 size_t len) {
  float *x = NULL, *y = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t a = NULL, b = NULL;
  size_t n = bytes / sizeof(float);
  const int reps = 50;
  float ms = 0;
  int rc = ck(cudaSetDevice(0), "cudaSetDevice", err, len) ||
           ck(cudaMalloc((void **)&x, bytes), "cudaMalloc", err, len) ||
           ck(cudaMalloc((void **)&y, bytes), "cudaMalloc", err, len) ||
           ck(cudaMemset(x, 0, bytes), "cudaMemset", err, len) ||
           ck(cudaMemset(y, 0, bytes), "cudaMemset", err, len) ||
           ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
              "cudaStreamCreateWithFlags", err, len) ||
           ck(cudaEventCreate(&a), "cudaEventCreate", err, len) ||
           ck(cudaEventCreate(&b), "cudaEventCreate", err, len);
  for (int i = 0; i < 5 && rc == 0; i++)
    rc = ck_int(cua__kernel_axpy(y, x, n, 0.5f, s), "axpy launch", err, len);
  if (rc == 0)
    rc = ck(cudaEventRecord(a, s), "cudaEventRecord", err, len);
  for (int i = 0; i < reps && rc == 0; i++)
    rc = ck_int(cua__kernel_axpy(y, x, n, 0.5f, s), "axpy launch", err, len);
  if (rc == 0)
    rc = ck(cudaEventRecord(b, s), "cudaEventRecord", err, len) ||
         ck(cudaEventSynchronize(b), "cudaEventSynchronize", err, len) ||
         ck(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime", err, len);
  if (rc == 0)
    *ns = (uint64_t)((double)ms * 1e6 / reps);
  if (s != NULL)
    cudaStreamSynchronize(s);
  if (a != NULL)
    cudaEventDestroy(a);
  if (b != NULL)
    cudaEventDestroy(b);
  if (s != NULL)
    cudaStreamDestroy(s);
  cudaFree(x);
  cudaFree(y);
  return rc ? -1 : 0;
}
