/* doc/results/s32-phases/be-launch.cu (thirty-second session, experiment):
 * what the CUDA backend's launch() costs around cudaLaunchKernel(), with no
 * core: the module (cuda.so) opened as the core opens it, one stream, and
 * R rounds of N launches of a 0 ns spin each way, each call timed:
 *   raw    cudaLaunchKernel() of this file's spin kernel on a stream of its own
 *   be     the backend's launch() of a SPIN op on its stream
 * and, with S32_TOUCH lines of "core-like" memory work (default 16), the
 * backend's launches with that work between each two, and batched by 8.
 * With S32_KSPIN set, raw launches through the built-in kernels'
 * launcher, cua__kernel_spin() (linked from the build tree), as the
 * bench's raw baselines do.
 * Usage: be-launch PATH/cuda.so [N] [R] */
#include <cuasync/backend.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.cuh"

/* The built-in kernels' launcher (kernels/kernels.h), which the CUDA
 * backend and cuasync-bench's raw baselines call. */
extern "C" int cua__kernel_spin(uint64_t ns, uint32_t blocks, cudaStream_t s);

/* A SPIN op of 0 ns, one block, the @p seq-th on its stream. */
static cua_backend_op spin_op(uint64_t seq) {
  cua_backend_op op;
  memset(&op, 0, sizeof op);
  op.size = sizeof op;
  op.kind = CUA_OP_SPIN;
  op.seq = seq;
  op.spin.ns = 0;
  op.spin.blocks = 1;
  return op;
}

static void logf_(void *core, cua_log_level l, const char *fmt, ...) {
  (void)core, (void)l;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}
static uint64_t now_core(void *core) {
  (void)core;
  return now();
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  size_t n = argc > 2 ? strtoul(argv[2], 0, 10) : 10000;
  int rounds = argc > 3 ? atoi(argv[3]) : 8;
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  const cua_backend_descriptor *d =
      (const cua_backend_descriptor *)dlsym(h, CUA_BACKEND_ENTRY_SYMBOL);
  cua_backend_host host;
  memset(&host, 0, sizeof host);
  host.abi_major = CUA_BACKEND_ABI_MAJOR;
  host.abi_minor = CUA_BACKEND_ABI_MINOR;
  host.size = sizeof host;
  host.log = logf_;
  host.now_ns = now_core;
  void *st = NULL;
  cua_backend_err err;
  err.msg[0] = 0;
  int ord = 0;
  if (d->create(&host, NULL, &ord, 1, &st, &err) != 0) {
    fprintf(stderr, "create: %s\n", err.msg);
    return 1;
  }
  cua_backend_stream *bs = NULL;
  if (d->stream_create(st, 0, &bs, &err) != 0) {
    fprintf(stderr, "stream_create: %s\n", err.msg);
    return 1;
  }
  cudaStream_t rs, bsn = (cudaStream_t)d->stream_native(st, bs);
  cudaSetDevice(0);
  cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking);
  /* "Core-like" work between launches: S32_TOUCH lines (default 16) of a
   * 64 MiB buffer, read and written, at pseudo-random places, as the
   * executor reads a node, an op and a command and writes a stream's
   * counters; "batched" does it for 8 ops, then launches the 8. */
  int touch = getenv("S32_TOUCH") ? atoi(getenv("S32_TOUCH")) : 16;
  size_t big = (size_t)64 << 20;
  unsigned char *mem = (unsigned char *)calloc(big, 1);
  uint64_t lcg = 12345;
  printf("round raw_call_us be_call_us raw_ms be_ms work_call_us work_ms "
         "batch8_call_us batch8_ms\n");
  uint64_t seq = 0;
  for (int r = 0; r < rounds; r++) {
    uint64_t raw = 0, be = 0, sr = 0, sb = 0;
    /* (the two ways take turns at going first) */
    for (int way = 0; way < 2; way++) {
      int is_raw = (way + r) % 2 == 0;
      int kspin = getenv("S32_KSPIN") != NULL; /* raw through cua__kernel_spin */
      uint64_t c = 0, a = now(), *sum = is_raw ? &sr : &sb;
      for (size_t k = 0; k < n; k++) {
        uint64_t t0;
        if (is_raw) {
          void *args[] = {&c};
          t0 = now();
          if (kspin)
            cua__kernel_spin(0, 1, rs);
          else
            cudaLaunchKernel((const void *)spin, dim3(1), dim3(1), args, 0, rs);
        } else {
          cua_backend_op op = spin_op(++seq);
          t0 = now();
          if (d->launch(st, bs, &op, &err) != 0) {
            fprintf(stderr, "launch: %s\n", err.msg);
            return 1;
          }
        }
        *sum += now() - t0;
      }
      cudaStreamSynchronize(is_raw ? rs : bsn);
      *(is_raw ? &raw : &be) = now() - a;
    }
    /* with work between launches, then the same work batched by 8 */
    uint64_t sw = 0, wk = 0, s8 = 0, b8 = 0;
    for (int way = 0; way < 2; way++) {
      uint64_t a = now(), *sum = way == 0 ? &sw : &s8;
      for (size_t k = 0; k < n; k += (way == 0 ? 1 : 8)) {
        size_t m = way == 0 ? 1 : 8;
        for (size_t j = 0; j < m * (size_t)touch; j++) {
          lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
          mem[(lcg >> 20) % big] += 1;
        }
        for (size_t j = 0; j < m && k + j < n; j++) {
          cua_backend_op op = spin_op(++seq);
          uint64_t t0 = now();
          if (d->launch(st, bs, &op, &err) != 0)
            return 1;
          *sum += now() - t0;
        }
      }
      cudaStreamSynchronize(bsn);
      *(way == 0 ? &wk : &b8) = now() - a;
    }
    printf("%d %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", r, sr / 1e3 / n,
           sb / 1e3 / n, raw / 1e6, be / 1e6, sw / 1e3 / n, wk / 1e6,
           s8 / 1e3 / n, b8 / 1e6);
  }
  d->stream_destroy(st, bs);
  d->destroy(st);
  return 0;
}
