/*
 * tools/bench/threads.c: the plain-threads baseline of the host backend.
 *
 * What a programmer would write without cuasync: N worker threads share
 * one FIFO of ready tasks under a mutex; each task has a count of
 * unfinished predecessors, and the worker that finishes a task decrements
 * its successors' counts and queues those that reach zero. A SPIN task
 * computes for its duration exactly as the host backend's spins do (a
 * calibrated chain of multiply-adds, topped up to the deadline by the
 * clock), an AXPY runs on host memory, a copy is a memcpy(). The workers
 * are created once and wait between runs, as a thread pool would.
 *
 * Also here: the plain-threads equivalents of the submit and latency
 * workloads.
 */
#include "config.h"

#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
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

/* The host backend's spin (plugins/host/host.c, spin_for()), copied: the
 * same work, the same calibration. */
#define SPIN_CHUNK 256u
#define SPIN_CALIB_ITERS 65536
#define SPIN_CALIB_ROUNDS 5
#define SPIN_YIELD_CHUNKS 256 /* chunks between sched_yield() calls */

static pthread_once_t spin_once = PTHREAD_ONCE_INIT;
static double spin_iters_per_ns = 1.0;
/* The work's input (read-only) and output (per thread, so that workers do
 * not race): volatile, so that the compiler keeps the work and keeps it
 * where it is. */
static const volatile double spin_seed = 0.5;
static _Thread_local volatile double spin_sink;

static double spin_work(double x, uint64_t iters) {
  for (uint64_t i = 0; i < iters; i++)
    x = x * 0.999999 + 1e-6;
  return x;
}

static void spin_calibrate(void) {
  uint64_t best = UINT64_MAX;
  double x = spin_work(spin_seed, SPIN_CALIB_ITERS);
  for (int r = 0; r < SPIN_CALIB_ROUNDS; r++) {
    uint64_t t0 = bench_now_ns();
    x = spin_work(x, SPIN_CALIB_ITERS);
    /* A volatile store between the clock reads: the compiler may not move
     * the (otherwise unobservable) work out of the timed interval. */
    spin_sink = x;
    uint64_t t = bench_now_ns() - t0;
    if (t > 0 && t < best)
      best = t;
  }
  spin_sink = x;
  if (best != UINT64_MAX)
    spin_iters_per_ns = (double)SPIN_CALIB_ITERS / (double)best;
}

void bench_threads_spin(uint64_t ns) {
  if (ns == 0)
    return;
  pthread_once(&spin_once, spin_calibrate);
  uint64_t now = bench_now_ns();
  uint64_t deadline = ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
  double want = (double)ns * spin_iters_per_ns;
  uint64_t iters = want >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)want;
  /* Not from a constant: the compiler would fold the loop (1.0 is the
   * map's fixed point). */
  double x = spin_seed;
  for (unsigned chunk = 1; iters > 0; chunk++) {
    uint64_t step = iters < SPIN_CHUNK ? iters : SPIN_CHUNK;
    x = spin_work(x, step);
    iters -= step;
    /* About every 100 us, a thread waiting for a CPU may have this one: a
     * spin should not hold back the host threads that launch work. */
    if (chunk % SPIN_YIELD_CHUNKS == 0)
      sched_yield();
  }
  spin_sink = x; /* the work is done before the clock is read */
  while (bench_now_ns() < deadline)
    x = spin_work(x, SPIN_CHUNK);
  spin_sink = x;
}

static void axpy(float *y, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    y[i] = 0.5f * x[i] + y[i];
}

static void execute(bench_threads *th, const bench_task *t) {
  const bench_dag *d = th->dag;
  switch (t->kind) {
  case BENCH_SPIN:
    bench_threads_spin(bench_task_ns(d, t));
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
  pthread_once(&spin_once, spin_calibrate); /* untimed */
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
    /* The task: a spin of 0 ns, which the host backend skips. */
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

/* ------------------------------------------------------------- submit */

/* One worker and its queue of empty tasks: a counter is a queue whose
 * items are all alike. */
typedef struct sub_queue {
  pthread_mutex_t mu;
  pthread_cond_t work, idle;
  uint64_t posted, done;
  int sleeping, stop;
  pthread_t th;
} sub_queue;

typedef struct sub_pool {
  sub_queue *q;
  int nq;
  int nthreads;
  size_t n;
  pthread_mutex_t gate_mu; /* the posters start together */
  pthread_cond_t gate_cv;
  int gate; /* 0: wait, 1: go, 2: give up */
} sub_pool;

static void *sub_worker(void *arg) {
  sub_queue *q = arg;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (!q->stop && q->done == q->posted) {
      q->sleeping = 1;
      pthread_cond_wait(&q->work, &q->mu);
      q->sleeping = 0;
    }
    if (q->stop)
      break;
    /* Runs the task (empty) outside the lock, as a pool would. */
    pthread_mutex_unlock(&q->mu);
    pthread_mutex_lock(&q->mu);
    if (++q->done == q->posted)
      pthread_cond_broadcast(&q->idle);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

typedef struct sub_arg {
  sub_pool *pool;
  int t;
} sub_arg;

static void sub_post(sub_pool *p, int t) {
  size_t share = p->n / (size_t)p->nthreads +
                 ((size_t)t < p->n % (size_t)p->nthreads ? 1 : 0);
  for (size_t i = 0; i < share; i++) {
    sub_queue *q = &p->q[((size_t)t + i) % (size_t)p->nq];
    pthread_mutex_lock(&q->mu);
    q->posted++;
    if (q->sleeping)
      pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
  }
}

static void *sub_thread(void *arg) {
  sub_arg *a = arg;
  sub_pool *p = a->pool;
  pthread_mutex_lock(&p->gate_mu);
  while (p->gate == 0)
    pthread_cond_wait(&p->gate_cv, &p->gate_mu);
  int go = p->gate == 1;
  pthread_mutex_unlock(&p->gate_mu);
  if (go)
    sub_post(p, a->t);
  return NULL;
}

static void sub_open_gate(sub_pool *p, int state) {
  pthread_mutex_lock(&p->gate_mu);
  p->gate = state;
  pthread_cond_broadcast(&p->gate_cv);
  pthread_mutex_unlock(&p->gate_mu);
}

int bench_threads_submit(int nthreads, size_t n, int nworkers, uint64_t *ns,
                         char *err, size_t len) {
  sub_pool p;
  pthread_t th[64];
  sub_arg args[64];
  int started = 0, made = 0, rc = 0;
  memset(&p, 0, sizeof p);
  p.nq = nworkers > 0 ? nworkers : 1;
  p.nthreads = nthreads < 1 ? 1 : nthreads > 64 ? 64 : nthreads;
  p.n = n;
  p.q = calloc((size_t)p.nq, sizeof *p.q);
  if (p.q == NULL) {
    snprintf(err, len, "out of memory");
    return -1;
  }
  for (int i = 0; i < p.nq && rc == 0; i++) {
    sub_queue *q = &p.q[i];
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->idle, NULL);
    made++;
    rc = pthread_create(&q->th, NULL, sub_worker, q);
    if (rc == 0)
      started++;
  }
  pthread_mutex_init(&p.gate_mu, NULL);
  pthread_cond_init(&p.gate_cv, NULL);
  int posters = 0;
  for (int t = 0; rc == 0 && p.nthreads > 1 && t < p.nthreads; t++) {
    args[t] = (sub_arg){&p, t};
    rc = pthread_create(&th[t], NULL, sub_thread, &args[t]);
    if (rc == 0)
      posters++;
  }
  if (rc == 0) {
    uint64_t t0 = bench_now_ns();
    if (p.nthreads > 1)
      sub_open_gate(&p, 1);
    else
      sub_post(&p, 0);
    for (int t = 0; t < posters; t++)
      pthread_join(th[t], NULL);
    for (int i = 0; i < p.nq; i++) {
      sub_queue *q = &p.q[i];
      pthread_mutex_lock(&q->mu);
      while (q->done != q->posted)
        pthread_cond_wait(&q->idle, &q->mu);
      pthread_mutex_unlock(&q->mu);
    }
    *ns = bench_now_ns() - t0;
  } else {
    snprintf(err, len, "pthread_create: %s", strerror(rc));
    sub_open_gate(&p, 2);
    for (int t = 0; t < posters; t++)
      pthread_join(th[t], NULL);
  }
  pthread_mutex_destroy(&p.gate_mu);
  pthread_cond_destroy(&p.gate_cv);
  for (int i = 0; i < started; i++) {
    sub_queue *q = &p.q[i];
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->th, NULL);
  }
  for (int i = 0; i < made; i++) {
    pthread_mutex_destroy(&p.q[i].mu);
    pthread_cond_destroy(&p.q[i].work);
    pthread_cond_destroy(&p.q[i].idle);
  }
  free(p.q);
  return rc ? -1 : 0;
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
