/*
 * plugins/nvtx/nvtx.c: the nvtx observer: NVTX ranges around every op's
 * launch, and names for the CUDA streams ops go to, for users who run
 * Nsight Systems (or any NVTX tool) on their own machines. Nsight Systems
 * projects a range onto the GPU work launched inside it, so each kernel,
 * copy or memset of an op shows the op's name on the GPU's timeline.
 *
 * NVTX3 is header-only (the CUDA toolkit's nvtx3/): without a tool
 * attached ($NVTX_INJECTION64_PATH, which nsys sets), every call is a
 * test of a null pointer. The ranges are made in launch() (observer ABI
 * 1.1), on the launching thread; it takes no records
 * (CUA_OBSERVER_NO_RECORDS), so alone it costs the core no record and no
 * device time.
 *
 * [observer.nvtx]: domain (the NVTX domain, "cuasync"), stream_names
 * (on|off: name each CUDA stream "cuasync device D stream S").
 *
 * Locks: st->mu guards the set of streams already named (launch() is
 * called from any number of threads).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <cuasync/observer.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { P_DOMAIN, P_STREAM_NAMES, P_COUNT };

static const cua_param_spec nvtx_params[P_COUNT] = {
    {"domain", CUA_PARAM_STRING, "cuasync", 0, 0, NULL,
     "the NVTX domain of the ranges", 0},
    {"stream_names", CUA_PARAM_BOOL, "on", 0, 0, NULL,
     "name each CUDA stream an op goes to \"cuasync device D stream S\"", 0},
};

typedef struct nvtx_state {
  const cua_observer_host *host;
  nvtxDomainHandle_t domain;
  int name_streams; /* on CUDA, with stream_names on */
  pthread_mutex_t mu;
  void **named; /* native streams named so far */
  size_t nnamed, cap;
} nvtx_state;

/* A colour per kind of op (ARGB), so that Nsight tells them apart. */
static uint32_t kind_color(cua_op_kind k) {
  switch (k) {
  case CUA_OP_KERNEL:
  case CUA_OP_SPIN:
    return 0xFF4E79A7u;
  case CUA_OP_FUNC:
    return 0xFF59A14Fu;
  case CUA_OP_MEMCPY_H2D:
  case CUA_OP_MEMCPY_D2H:
  case CUA_OP_MEMCPY_D2D:
  case CUA_OP_COPY:
    return 0xFFF28E2Bu;
  default:
    return 0xFF76B7B2u;
  }
}

static const char *kind_name(cua_op_kind k) {
  switch (k) {
#define NV_KIND(id, val, name, launched, desc)                                 \
  case CUA_OP_##id:                                                            \
    return name;
    CUA_OP_KIND_MAP(NV_KIND)
#undef NV_KIND
  default:
    return "op";
  }
}

static int nvtx_create(const cua_observer_host *host,
                       const cua_param_value *params, void **out) {
  nvtx_state *st = calloc(1, sizeof *st);
  if (st == NULL) {
    host->log(host->core, CUA_LOG_ERROR, "out of memory");
    return -1;
  }
  st->host = host;
  const char *backend = host->backend_name(host->core);
  st->name_streams = params[P_STREAM_NAMES].i && backend != NULL &&
                     strcmp(backend, "cuda") == 0;
  pthread_mutex_init(&st->mu, NULL);
  st->domain = nvtxDomainCreateA(params[P_DOMAIN].s);
  *out = st;
  return 0;
}

static void nvtx_destroy(void *state) {
  nvtx_state *st = state;
  if (st->domain != NULL)
    nvtxDomainDestroy(st->domain);
  pthread_mutex_destroy(&st->mu);
  free(st->named);
  free(st);
}

/* Names @p native once: "cuasync device D stream S". */
static void name_stream(nvtx_state *st, void *native, int device, int stream) {
  pthread_mutex_lock(&st->mu);
  for (size_t i = 0; i < st->nnamed; i++)
    if (st->named[i] == native) {
      pthread_mutex_unlock(&st->mu);
      return;
    }
  if (st->nnamed == st->cap) {
    size_t cap = st->cap ? 2 * st->cap : 16;
    void **v = realloc(st->named, cap * sizeof *v);
    if (v == NULL) {
      pthread_mutex_unlock(&st->mu);
      return;
    }
    st->named = v;
    st->cap = cap;
  }
  st->named[st->nnamed++] = native;
  pthread_mutex_unlock(&st->mu);
  char name[64];
  snprintf(name, sizeof name, "cuasync device %d stream %d", device, stream);
  nvtxNameCudaStreamA((cudaStream_t)native, name);
}

static void nvtx_launch(void *state, const cua_obs_record *op, int phase,
                        void *native) {
  nvtx_state *st = state;
  if (phase != 0) {
    nvtxDomainRangePop(st->domain);
    return;
  }
  if (st->name_streams && native != NULL)
    name_stream(st, native, op->device, op->stream);
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = kind_color(op->op_kind);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = op->name != NULL && op->name[0] != '\0'
                        ? op->name
                        : kind_name(op->op_kind);
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = op->op_id;
  a.category = (uint32_t)op->device + 1;
  nvtxDomainRangePushEx(st->domain, &a);
}

CUA_OBSERVER_DEFINE(.name = "nvtx", .version = "1.0",
                    .description = "NVTX ranges around each op's launch and "
                                   "names for CUDA streams, for Nsight "
                                   "Systems",
                    .flags = CUA_OBSERVER_NO_RECORDS,
                    CUA_OBSERVER_PARAMS(nvtx_params), .create = nvtx_create,
                    .destroy = nvtx_destroy, .launch = nvtx_launch);
