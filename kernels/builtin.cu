/*
 * kernels/builtin.cu: the built-in kernels of the CUDA backend (FILL, COPY,
 * AXPY, SPIN) and their C-callable launchers, declared in kernels.h.
 *
 * The element kernels use grid-stride loops so that any n runs correctly
 * with a bounded grid. The launchers go through cudaLaunchKernel() rather
 * than <<<>>> so that the error returned is the one of this launch: after
 * <<<>>> the only way to learn the result is cudaGetLastError(), which also
 * reports (and clears) a stale error left by unrelated code on the thread.
 */
#include "kernels.h"

#include <cuda_runtime.h>

namespace {

/* 256 threads per block suits every architecture from sm_60 up for these
 * memory-bound loops. */
constexpr unsigned kThreads = 256;

/* Enough blocks to fill any current GPU many times over; beyond that, the
 * grid-stride loop does the rest and launching more blocks only costs
 * scheduling. */
constexpr size_t kMaxBlocks = 65535;

unsigned grid_for(size_t n) {
  size_t blocks = (n + kThreads - 1) / kThreads;
  return (unsigned)(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

__global__ void fill_kernel(float *dst, size_t n, float v) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = v;
}

__global__ void copy_kernel(float *__restrict__ dst,
                            const float *__restrict__ src, size_t n) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    dst[i] = src[i];
}

__global__ void axpy_kernel(float *__restrict__ y, const float *__restrict__ x,
                            size_t n, float a) {
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride)
    y[i] = a * x[i] + y[i];
}

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  /* %globaltimer is a nanosecond clock shared by all SMs, unlike clock64(),
   * which counts cycles of one SM and would make the duration depend on
   * the clock rate. volatile keeps the compiler from hoisting the read out
   * of the loop. */
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* One thread per block: the point is to occupy the stream (and, with more
 * blocks, SMs) for a known time, not to use the SM's throughput. */
__global__ void spin_kernel(uint64_t ns) {
  uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
}

} // namespace

extern "C" int cua__kernel_fill(float *dst, size_t n, float v, cudaStream_t s) {
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&dst, &n, &v};
  return (int)cudaLaunchKernel((const void *)fill_kernel, dim3(grid_for(n)),
                               dim3(kThreads), args, 0, s);
}

extern "C" int cua__kernel_copy(float *dst, const float *src, size_t n,
                                cudaStream_t s) {
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&dst, &src, &n};
  return (int)cudaLaunchKernel((const void *)copy_kernel, dim3(grid_for(n)),
                               dim3(kThreads), args, 0, s);
}

extern "C" int cua__kernel_axpy(float *y, const float *x, size_t n, float a,
                                cudaStream_t s) {
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&y, &x, &n, &a};
  return (int)cudaLaunchKernel((const void *)axpy_kernel, dim3(grid_for(n)),
                               dim3(kThreads), args, 0, s);
}

extern "C" int cua__kernel_spin(uint64_t ns, uint32_t blocks, cudaStream_t s) {
  void *args[] = {&ns};
  return (int)cudaLaunchKernel((const void *)spin_kernel,
                               dim3(blocks ? blocks : 1), dim3(1), args, 0, s);
}

namespace {

int add_node(cudaGraphNode_t *out, cudaGraph_t g, const cudaGraphNode_t *deps,
             size_t nd, const void *f, unsigned grid, unsigned block,
             void **args) {
  cudaKernelNodeParams p = {};
  p.func = const_cast<void *>(f);
  p.gridDim = dim3(grid);
  p.blockDim = dim3(block);
  p.sharedMemBytes = 0;
  p.kernelParams = args;
  p.extra = nullptr;
  return (int)cudaGraphAddKernelNode(out, g, deps, nd, &p);
}

} // namespace

extern "C" int cua__node_fill(cudaGraphNode_t *out, cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd,
                              float *dst, size_t n, float v) {
  *out = nullptr;
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&dst, &n, &v};
  return add_node(out, g, deps, nd, (const void *)fill_kernel, grid_for(n),
                  kThreads, args);
}

extern "C" int cua__node_copy(cudaGraphNode_t *out, cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd,
                              float *dst, const float *src, size_t n) {
  *out = nullptr;
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&dst, &src, &n};
  return add_node(out, g, deps, nd, (const void *)copy_kernel, grid_for(n),
                  kThreads, args);
}

extern "C" int cua__node_axpy(cudaGraphNode_t *out, cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd, float *y,
                              const float *x, size_t n, float a) {
  *out = nullptr;
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&y, &x, &n, &a};
  return add_node(out, g, deps, nd, (const void *)axpy_kernel, grid_for(n),
                  kThreads, args);
}

extern "C" int cua__node_spin(cudaGraphNode_t *out, cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd,
                              uint64_t ns, uint32_t blocks) {
  void *args[] = {&ns};
  return add_node(out, g, deps, nd, (const void *)spin_kernel,
                  blocks ? blocks : 1, 1, args);
}

extern "C" int cua__kernels_preload(void) {
  const void *kernels[] = {(const void *)fill_kernel, (const void *)copy_kernel,
                           (const void *)axpy_kernel,
                           (const void *)spin_kernel};
  for (const void *k : kernels) {
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, k);
    if (e != cudaSuccess)
      return (int)e;
  }
  return (int)cudaSuccess;
}
