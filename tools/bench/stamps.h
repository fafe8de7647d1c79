/*
 * tools/bench/stamps.h: device timestamps of every task of a raw baseline,
 * three ways (tools/bench/stamps.cu), for cuasync-bench --timestamps.
 */
#ifndef CUA_BENCH_STAMPS_H
#define CUA_BENCH_STAMPS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum bench_stamps_kind {
  BENCH_STAMPS_EVENTS = 0, /**< a timing event before and after each task */
  BENCH_STAMPS_DEVICE = 1, /**< a kernel writing %globaltimer around each */
  BENCH_STAMPS_CUPTI = 2   /**< CUPTI activity records, correlated by id */
};

typedef struct bench_stamps bench_stamps;

/** Sets up stamps of @p kind for @p n tasks over @p ndev devices
 * (@p task_dev: the device of each task); 0, or -1 with @p err set (CUPTI
 * unavailable, out of memory, a CUDA error). */
int bench_stamps_open(bench_stamps **st, int kind, size_t n, int ndev,
                      const int *task_dev, char *err, size_t len);
/** Takes task @p k's start (@p after 0, just before its launch) or end
 * (@p after 1, just after) on @p stream (a cudaStream_t) of device
 * @p dev, the current device. 0 or -1. */
int bench_stamps_take(bench_stamps *st, size_t k, int after, void *stream,
                      int dev, char *err, size_t len);
/** After a run, every stream idle: reads the stamps back and checks that
 * every task has a start and an end; 0 or -1. */
int bench_stamps_read(bench_stamps *st, char *err, size_t len);
void bench_stamps_close(bench_stamps *st);

#ifdef __cplusplus
}
#endif

#endif /* CUA_BENCH_STAMPS_H */
