/*
 * tools/bench/threads.c: the plain-threads baseline of the host backend.
 *
 * What a programmer would write without cuasync: N worker threads share
 * one FIFO of ready tasks under a mutex; each task has a count of
 * unfinished predecessors, and the worker that finishes a task decrements
 * its successors' counts and queues those that reach zero. A SPIN task
 * sleeps its duration exactly as the host backend does (clock_nanosleep()
 * to an absolute deadline), an AXPY runs on host memory, a copy is a
 * memcpy(). The workers are created once and wait between runs, as a
 * thread pool would.
 */
#include "config.h"

#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bench_threads {
  const bench_dag *dag;
  int nthreads;
  pthread_t *th;
  int started;         /* threads created */
  size_t *succ_off;    /* n + 1 */
  int32_t *succ;       /* successors, CSR */
  float **dev;         /* per buffer: the "device" copy */
  float **hin, **hout; /* per buffer: host chunks (copies) */
  float *x;            /* AXPY input */
  pthread_mutex_t mu;
  pthread_cond_t work; /* the queue got a task, or stop */
  pthread_cond_t idle; /* the run is done */
  int32_t *remaining;  /* per task: unfinished predecessors */
  int32_t *queue;      /* ready tasks, FIFO, n slots */
  size_t qhead, qtail, done;
  int stop;
};

static void sleep_until(uint64_t deadline) {
  struct timespec ts;
  ts.tv_sec = (time_t)(deadline / 1000000000u);
  ts.tv_nsec = (long)(deadline % 1000000000u);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
    ;
}

static void axpy(float *y, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    y[i] = 0.5f * x[i] + y[i];
}

static void execute(bench_threads *th, const bench_task *t) {
  const bench_dag *d = th->dag;
  switch (t->kind) {
  case BENCH_SPIN:
    sleep_until(bench_now_ns() + d->ns);
    break;
  case BENCH_AXPY:
    axpy(th->dev[t->buf], th->x, d->bytes / sizeof(float));
    break;
  case BENCH_H2D:
    memcpy(th->dev[t->buf], th->hin[t->buf], d->bytes);
    break;
  default:
    memcpy(th->hout[t->buf], th->dev[t->buf], d->bytes);
    break;
  }
}

static void *worker(void *arg) {
  bench_threads *th = arg;
  pthread_mutex_lock(&th->mu);
  for (;;) {
    while (!th->stop && th->qhead == th->qtail)
      pthread_cond_wait(&th->work, &th->mu);
    if (th->stop)
      break;
    int32_t k = th->queue[th->qhead++];
    pthread_mutex_unlock(&th->mu);
    execute(th, &th->dag->task[k]);
    pthread_mutex_lock(&th->mu);
    size_t woke = 0;
    for (size_t i = th->succ_off[k]; i < th->succ_off[k + 1]; i++) {
      int32_t s = th->succ[i];
      if (--th->remaining[s] == 0) {
        th->queue[th->qtail++] = s;
        woke++;
      }
    }
    /* This worker takes one of them itself on its next turn. */
    if (woke > 1)
      pthread_cond_broadcast(&th->work);
    if (++th->done == th->dag->n)
      pthread_cond_signal(&th->idle);
  }
  pthread_mutex_unlock(&th->mu);
  return NULL;
}

void bench_threads_close(bench_threads *th) {
  if (th == NULL)
    return;
  if (th->started > 0) {
    pthread_mutex_lock(&th->mu);
    th->stop = 1;
    pthread_cond_broadcast(&th->work);
    pthread_mutex_unlock(&th->mu);
    for (int i = 0; i < th->started; i++)
      pthread_join(th->th[i], NULL);
  }
  pthread_mutex_destroy(&th->mu);
  pthread_cond_destroy(&th->work);
  pthread_cond_destroy(&th->idle);
  for (size_t b = 0; b < th->dag->nbuf; b++) {
    if (th->dev != NULL)
      free(th->dev[b]);
    if (th->hin != NULL)
      free(th->hin[b]);
    if (th->hout != NULL)
      free(th->hout[b]);
  }
  free(th->dev);
  free(th->hin);
  free(th->hout);
  free(th->x);
  free(th->th);
  free(th->succ_off);
  free(th->succ);
  free(th->remaining);
  free(th->queue);
  free(th);
}

static int alloc_memory(bench_threads *th) {
  const bench_dag *d = th->dag;
  size_t nb = d->nbuf;
  if (nb == 0)
    return 0;
  th->dev = calloc(nb, sizeof *th->dev);
  th->hin = calloc(nb, sizeof *th->hin);
  th->hout = calloc(nb, sizeof *th->hout);
  th->x = calloc(1, d->bytes);
  if (th->dev == NULL || th->hin == NULL || th->hout == NULL || th->x == NULL)
    return -1;
  for (size_t i = 0; i < d->bytes / sizeof(float); i++)
    th->x[i] = 1.0f;
  for (size_t b = 0; b < nb; b++) {
    th->dev[b] = calloc(1, d->bytes);
    th->hin[b] = calloc(1, d->bytes);
    th->hout[b] = calloc(1, d->bytes);
    if (th->dev[b] == NULL || th->hin[b] == NULL || th->hout[b] == NULL)
      return -1;
  }
  return 0;
}

int bench_threads_open(bench_threads **out, const bench_dag *d, int nthreads,
                       char *err, size_t len) {
  bench_threads *th = calloc(1, sizeof *th);
  size_t n = d->n;
  *out = NULL;
  if (th == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  th->dag = d;
  th->nthreads = nthreads > 0 ? nthreads : 1;
  pthread_mutex_init(&th->mu, NULL);
  pthread_cond_init(&th->work, NULL);
  pthread_cond_init(&th->idle, NULL);
  th->th = calloc((size_t)th->nthreads, sizeof *th->th);
  th->succ_off = calloc(n + 1, sizeof *th->succ_off);
  th->succ = malloc((d->edges ? d->edges : 1) * sizeof *th->succ);
  th->remaining = calloc(n ? n : 1, sizeof *th->remaining);
  th->queue = calloc(n ? n : 1, sizeof *th->queue);
  if (th->th == NULL || th->succ_off == NULL || th->succ == NULL ||
      th->remaining == NULL || th->queue == NULL || alloc_memory(th) != 0) {
    bench_threads_close(th);
    snprintf(err, len, "out of memory for the threads baseline");
    return -1;
  }
  /* Successor lists (CSR), from the predecessor lists. */
  for (size_t k = 0; k < n; k++)
    for (int p = 0; p < d->task[k].npred; p++)
      th->succ_off[d->task[k].pred[p] + 1]++;
  for (size_t k = 0; k < n; k++)
    th->succ_off[k + 1] += th->succ_off[k];
  size_t *fill = calloc(n ? n : 1, sizeof *fill);
  if (fill == NULL) {
    bench_threads_close(th);
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (size_t k = 0; k < n; k++)
    for (int p = 0; p < d->task[k].npred; p++) {
      int32_t q = d->task[k].pred[p];
      th->succ[th->succ_off[q] + fill[q]++] = (int32_t)k;
    }
  free(fill);
  for (int i = 0; i < th->nthreads; i++) {
    int rc = pthread_create(&th->th[i], NULL, worker, th);
    if (rc != 0) {
      bench_threads_close(th);
      snprintf(err, len, "pthread_create: %s", strerror(rc));
      return -1;
    }
    th->started++;
  }
  *out = th;
  return 0;
}

int bench_threads_run(bench_threads *th, uint64_t *ns, char *err, size_t len) {
  const bench_dag *d = th->dag;
  (void)err;
  (void)len;
  pthread_mutex_lock(&th->mu);
  th->qhead = th->qtail = th->done = 0;
  for (size_t k = 0; k < d->n; k++)
    th->remaining[k] = d->task[k].npred;
  uint64_t t0 = bench_now_ns();
  for (size_t k = 0; k < d->n; k++)
    if (d->task[k].npred == 0)
      th->queue[th->qtail++] = (int32_t)k;
  pthread_cond_broadcast(&th->work);
  while (th->done < d->n)
    pthread_cond_wait(&th->idle, &th->mu);
  uint64_t t1 = bench_now_ns();
  pthread_mutex_unlock(&th->mu);
  *ns = t1 - t0;
  return 0;
}

/* ------------------------------------------------------------ latency */

typedef struct ping {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t posted, acked;
  int stop;
} ping;

static void *pong(void *arg) {
  ping *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->acked == p->posted)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->stop)
      break;
    /* The task: a spin of 0 ns, as the host backend runs it. */
    uint64_t now = bench_now_ns();
    pthread_mutex_unlock(&p->mu);
    sleep_until(now);
    pthread_mutex_lock(&p->mu);
    p->acked = p->posted;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int bench_threads_latency(size_t iters, uint64_t *samples, char *err,
                          size_t len) {
  ping p;
  pthread_t t;
  memset(&p, 0, sizeof p);
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv, NULL);
  int rc = pthread_create(&t, NULL, pong, &p);
  if (rc != 0) {
    snprintf(err, len, "pthread_create: %s", strerror(rc));
    return -1;
  }
  const size_t warmup = 10;
  for (size_t i = 0; i < warmup + iters; i++) {
    uint64_t t0 = bench_now_ns();
    pthread_mutex_lock(&p.mu);
    p.posted++;
    pthread_cond_broadcast(&p.cv);
    while (p.acked != p.posted)
      pthread_cond_wait(&p.cv, &p.mu);
    pthread_mutex_unlock(&p.mu);
    uint64_t t1 = bench_now_ns();
    if (i >= warmup)
      samples[i - warmup] = t1 - t0;
  }
  pthread_mutex_lock(&p.mu);
  p.stop = 1;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  pthread_join(t, NULL);
  pthread_mutex_destroy(&p.mu);
  pthread_cond_destroy(&p.cv);
  return 0;
}

uint64_t bench_threads_axpy_ns(size_t bytes) {
  size_t n = bytes / sizeof(float);
  float *x = calloc(n ? n : 1, sizeof *x), *y = calloc(n ? n : 1, sizeof *y);
  uint64_t best = 0;
  if (x == NULL || y == NULL) {
    free(x);
    free(y);
    return 0;
  }
  axpy(y, x, n); /* fault the pages in */
  uint64_t t0 = bench_now_ns();
  const int reps = 20;
  for (int r = 0; r < reps; r++)
    axpy(y, x, n);
  best = (bench_now_ns() - t0) / (uint64_t)reps;
  /* y is read so that the loop is not dropped as dead code. */
  if (n > 0 && y[0] != 0.0f)
    best++;
  free(x);
  free(y);
  return best;
}
