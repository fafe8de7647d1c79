/*
 * plugins/cuda/cupti_times.h: device times of ops from CUPTI's activity
 * records, for observers (plugins/cuda/cupti_times.c). Internal to the CUDA
 * backend.
 */
#ifndef CUA_CUDA_CUPTI_TIMES_H
#define CUA_CUDA_CUPTI_TIMES_H

#include <cuasync/backend.h>

#include <stddef.h>
#include <stdint.h>

/** One backend's use of CUPTI (which is one per process). */
typedef struct cupti_client cupti_client;

/** Opens libcupti (once per process) and enables its kernel, memcpy and
 * memset records, with timestamps on CLOCK_MONOTONIC, and its API callback
 * on the calls that enqueue them (or, where another subscriber holds the
 * callback API, the runtime API's and external correlation records); ops'
 * times go to @p host's op_times(). 0, or -1 with the reason in @p why
 * (no libcupti, too old, a call failed). */
int cupti_open(cupti_client **out, const cua_backend_host *host, char *why,
               size_t len);
/** Before an op's work is enqueued on the calling thread: its times will
 * go to op_times(@p op). 0, or -1 (then no times, and no cupti_end()). */
int cupti_begin(cupti_client *c, uint64_t op);
/** After the enqueue; @p ok 0 when it failed (no times then). */
void cupti_end(cupti_client *c, int ok);
/** Gives every time still owed (CUPTI's buffers flushed: the caller
 * drains its streams first); no op_times() for @p c after it. */
void cupti_flush(cupti_client *c);
/** Flushes, then forgets @p c; CUPTI's records are disabled with the last
 * client. */
void cupti_close(cupti_client *c);

#endif /* CUA_CUDA_CUPTI_TIMES_H */
