/*
 * plugins/hostmem.h: the built-in memory ops (fill, axpy, copies, memset)
 * run on host memory, for the backends whose buffers live there: the host
 * backend (plugins/host/host.c) and the sim backend with `data = real`
 * (plugins/sim/machine.cc). Header-only, C and C++; no state, no lock.
 */
#ifndef CUASYNC_PLUGINS_HOSTMEM_H
#define CUASYNC_PLUGINS_HOSTMEM_H

#include <cuasync/backend.h>

#include <stddef.h>
#include <string.h>

/* Runs @p op on host memory if it is a built-in memory op; returns 1 when
 * it was one, 0 for any other kind (stream functions, spins, ...). Copies
 * are memmove(): overlapping ranges are a caller bug on a GPU, but here
 * they cost nothing to get right. */
static inline int cua_hostmem_run(const cua_backend_op *op) {
  size_t n = op->bytes / sizeof(float);
  switch (op->kind) {
  case CUA_OP_FILL: {
    float *y = (float *)op->dst;
    for (size_t i = 0; i < n; i++)
      y[i] = op->value;
    return 1;
  }
  case CUA_OP_AXPY: {
    float *y = (float *)op->dst;
    const float *x = (const float *)op->src;
    for (size_t i = 0; i < n; i++)
      y[i] += op->value * x[i];
    return 1;
  }
  case CUA_OP_COPY:
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMCPY_D2D:
    if (op->bytes > 0)
      memmove(op->dst, op->src, op->bytes);
    return 1;
  case CUA_OP_MEMSET:
    if (op->bytes > 0)
      memset(op->dst, op->byte_value, op->bytes);
    return 1;
  default:
    return 0;
  }
}

#endif
