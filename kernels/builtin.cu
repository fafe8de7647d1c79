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

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <mutex>

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

/* The built-in kernels, in the order the node functions name them. */
enum { K_FILL, K_COPY, K_AXPY, K_SPIN, K_COUNT };
const void *const kernels[K_COUNT] = {
    (const void *)fill_kernel, (const void *)copy_kernel,
    (const void *)axpy_kernel, (const void *)spin_kernel};

/* Graph nodes go through the driver's cuGraphAddKernelNode(), given by
 * the backend (cua__nodes_use_driver()), with each kernel's function on
 * the current device, looked up once per device: the runtime's
 * cudaGraphAddKernelNode() looks the kernel up again at every call. On an
 * H200 host that made the capture of a 10,000-node chain run 600-950 ns
 * per node behind the placement that feeds it, against 200-600 ns this
 * way. The function is the one of the device's primary context, which is
 * the runtime's and the backend's (a program that resets the device, or
 * makes another context current, is not supported while a runtime is
 * open). Built with CUDA before 12.0, or without the driver's entry point
 * or the device's function, the runtime's call is used. */
std::atomic<void *> driver_add{nullptr};

#if CUDART_VERSION >= 12000
typedef CUresult (*add_fn)(CUgraphNode *, CUgraph, const CUgraphNode *,
                           size_t, const CUDA_KERNEL_NODE_PARAMS_v2 *);

/* Each device's functions, looked up at the device's first node. */
constexpr int kMaxDevices = 64;

struct device_funcs {
  std::atomic<bool> ready;
  CUfunction f[K_COUNT];
};

device_funcs dev_funcs[kMaxDevices];
std::mutex dev_funcs_mu;

/* Kernel @p which's function on device @p dev, the current one. */
CUfunction function_for(int dev, int which) {
  if (dev < 0 || dev >= kMaxDevices)
    return nullptr;
  device_funcs &d = dev_funcs[dev];
  if (!d.ready.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> hold(dev_funcs_mu);
    if (!d.ready.load(std::memory_order_relaxed)) {
      for (int i = 0; i < K_COUNT; i++) {
        cudaFunction_t f = nullptr;
        if (cudaGetFuncBySymbol(&f, kernels[i]) != cudaSuccess) {
          (void)cudaGetLastError();
          return nullptr;
        }
        d.f[i] = (CUfunction)f;
      }
      d.ready.store(true, std::memory_order_release);
    }
  }
  return d.f[which];
}
#endif

int add_node(cudaGraphNode_t *out, int device, cudaGraph_t g,
             const cudaGraphNode_t *deps, size_t nd, int which, unsigned grid,
             unsigned block, void **args) {
#if CUDART_VERSION >= 12000
  add_fn add = (add_fn)driver_add.load(std::memory_order_relaxed);
  CUfunction fn = add != nullptr ? function_for(device, which) : nullptr;
  if (fn != nullptr) {
    CUDA_KERNEL_NODE_PARAMS_v2 p = {};
    p.func = fn;
    p.gridDimX = grid;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = block;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    /* The driver's codes are the runtime's for what can happen here
     * (invalid value, out of memory, invalid context). */
    return (int)add((CUgraphNode *)out, (CUgraph)g, (const CUgraphNode *)deps,
                    nd, &p);
  }
#else
  (void)device;
#endif
  cudaKernelNodeParams p = {};
  p.func = const_cast<void *>(kernels[which]);
  p.gridDim = dim3(grid);
  p.blockDim = dim3(block);
  p.sharedMemBytes = 0;
  p.kernelParams = args;
  p.extra = nullptr;
  return (int)cudaGraphAddKernelNode(out, g, deps, nd, &p);
}

} // namespace

extern "C" int cua__node_fill(cudaGraphNode_t *out, int device,
                              cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd,
                              float *dst, size_t n, float v) {
  *out = nullptr;
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&dst, &n, &v};
  return add_node(out, device, g, deps, nd, K_FILL, grid_for(n),
                  kThreads, args);
}

extern "C" int cua__node_copy(cudaGraphNode_t *out, int device,
                              cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd,
                              float *dst, const float *src, size_t n) {
  *out = nullptr;
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&dst, &src, &n};
  return add_node(out, device, g, deps, nd, K_COPY, grid_for(n),
                  kThreads, args);
}

extern "C" int cua__node_axpy(cudaGraphNode_t *out, int device,
                              cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd, float *y,
                              const float *x, size_t n, float a) {
  *out = nullptr;
  if (n == 0)
    return (int)cudaSuccess;
  void *args[] = {&y, &x, &n, &a};
  return add_node(out, device, g, deps, nd, K_AXPY, grid_for(n),
                  kThreads, args);
}

extern "C" int cua__node_spin(cudaGraphNode_t *out, int device,
                              cudaGraph_t g,
                              const cudaGraphNode_t *deps, size_t nd,
                              uint64_t ns, uint32_t blocks) {
  void *args[] = {&ns};
  return add_node(out, device, g, deps, nd, K_SPIN,
                  blocks ? blocks : 1, 1, args);
}

extern "C" int cua__kernels_preload(void) {
  for (const void *k : kernels) {
    cudaFuncAttributes attr;
    cudaError_t e = cudaFuncGetAttributes(&attr, k);
    if (e != cudaSuccess)
      return (int)e;
  }
  return (int)cudaSuccess;
}

extern "C" void cua__nodes_use_driver(void *add) {
  driver_add.store(add, std::memory_order_relaxed);
}
