/*
 * tests/modules/nvtx-inject.c: an NVTX tool library for the nvtx observer's
 * test (tests/check_observers.c): NVTX loads it from
 * $NVTX_INJECTION64_PATH, as Nsight Systems' own, and it counts the calls
 * the observer makes: domains created, ranges pushed (each with a
 * non-empty ASCII message, or counted as bad) and popped, streams named.
 * nvtx_inject_counts() reads them.
 */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <stdatomic.h>
#include <stddef.h>

int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
void nvtx_inject_counts(unsigned long out[5]);

static atomic_ulong creates, pushes, pops, names, bad;

static nvtxDomainHandle_t NVTX_API fake_create(const char *name) {
  (void)name;
  atomic_fetch_add(&creates, 1);
  return (nvtxDomainHandle_t)(uintptr_t)0x1000;
}

static int NVTX_API fake_push(nvtxDomainHandle_t d,
                              const nvtxEventAttributes_t *a) {
  (void)d;
  if (a == NULL || a->messageType != NVTX_MESSAGE_TYPE_ASCII ||
      a->message.ascii == NULL || a->message.ascii[0] == '\0')
    atomic_fetch_add(&bad, 1);
  atomic_fetch_add(&pushes, 1);
  return 0;
}

static int NVTX_API fake_pop(nvtxDomainHandle_t d) {
  (void)d;
  atomic_fetch_add(&pops, 1);
  return 0;
}

static void NVTX_API fake_name_stream(cudaStream_t s, const char *name) {
  (void)s;
  if (name == NULL || name[0] == '\0')
    atomic_fetch_add(&bad, 1);
  atomic_fetch_add(&names, 1);
}

static int set(const NvtxExportTableCallbacks *cb, NvtxCallbackModule m,
               unsigned id, NvtxFunctionPointer f) {
  NvtxFunctionTable t = NULL;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(m, &t, &size) || t == NULL || id >= size)
    return 0;
  *t[id] = f;
  return 1;
}

__attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
  if (cb == NULL)
    return 0;
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA,
      (NvtxFunctionPointer)fake_create);
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx,
      (NvtxFunctionPointer)fake_push);
  set(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop,
      (NvtxFunctionPointer)fake_pop);
  set(cb, NVTX_CB_MODULE_CUDART, NVTX_CBID_CUDART_NameCudaStreamA,
      (NvtxFunctionPointer)fake_name_stream);
  return 1;
}

__attribute__((visibility("default"))) void
nvtx_inject_counts(unsigned long out[5]) {
  out[0] = atomic_load(&creates);
  out[1] = atomic_load(&pushes);
  out[2] = atomic_load(&pops);
  out[3] = atomic_load(&names);
  out[4] = atomic_load(&bad);
}
