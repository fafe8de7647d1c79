/*
 * kernels/kernels.h: launchers of the built-in kernels (kernels/builtin.cu).
 *
 * The CUDA backend (plugins/cuda/cuda.c, plain C) calls these to run the
 * FILL, COPY, AXPY and SPIN ops. Each launcher enqueues one kernel on @p s
 * and returns the cudaError_t of the launch as an int: cudaSuccess (0), or
 * the synchronous launch error (invalid configuration, a sticky error left
 * by an earlier fault...). Asynchronous faults of the kernel itself show up
 * later, on the stream. A launcher given no work (n == 0) launches nothing
 * and returns 0, because a grid of zero blocks is an invalid configuration.
 *
 * All element counts are float32 elements, not bytes.
 */
#ifndef CUA_KERNELS_H
#define CUA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/** dst[i] = v for i < n. */
int cua__kernel_fill(float *dst, size_t n, float v, cudaStream_t s);

/** dst[i] = src[i] for i < n; the ranges must not overlap. */
int cua__kernel_copy(float *dst, const float *src, size_t n, cudaStream_t s);

/** y[i] = a * x[i] + y[i] for i < n. */
int cua__kernel_axpy(float *y, const float *x, size_t n, float a,
                     cudaStream_t s);

/** Keeps @p blocks blocks (at least 1) busy for @p ns nanoseconds each, as
 * measured by the GPU's global timer. */
int cua__kernel_spin(uint64_t ns, uint32_t blocks, cudaStream_t s);

/* The same work as a kernel node of graph @p g after @p deps (@p nd of
 * them), on the current device, whose ordinal the caller gives as
 * @p device: *out the node, NULL (and 0) when there is nothing to do
 * (n == 0). Return the cudaError_t. */
int cua__node_fill(cudaGraphNode_t *out, int device, cudaGraph_t g,
                   const cudaGraphNode_t *deps, size_t nd, float *dst, size_t n,
                   float v);
int cua__node_copy(cudaGraphNode_t *out, int device, cudaGraph_t g,
                   const cudaGraphNode_t *deps, size_t nd, float *dst,
                   const float *src, size_t n);
int cua__node_axpy(cudaGraphNode_t *out, int device, cudaGraph_t g,
                   const cudaGraphNode_t *deps, size_t nd, float *y,
                   const float *x, size_t n, float a);
int cua__node_spin(cudaGraphNode_t *out, int device, cudaGraph_t g,
                   const cudaGraphNode_t *deps, size_t nd, uint64_t ns,
                   uint32_t blocks);

/** Loads the kernels above on the current device now, so that their first
 * launch does not: with CUDA's lazy loading (the default since 12.2), a
 * kernel's module is loaded at its first use, and that load waits for the
 * kernels running on the device. Returns the cudaError_t of the first
 * failure, or 0. */
int cua__kernels_preload(void);

/** The driver's cuGraphAddKernelNode() (as the CUDA 12.0 driver API gives
 * it, or NULL): the cua__node_* functions then add their nodes through it,
 * with each device's function looked up once, instead of through the
 * runtime's cudaGraphAddKernelNode(), which looks the kernel up at every
 * call. The CUDA backend sets it when it opens. */
void cua__nodes_use_driver(void *add);

#ifdef __cplusplus
}
#endif

#endif /* CUA_KERNELS_H */
