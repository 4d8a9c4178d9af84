/* NCCL collectives of the CUDA server (runtime_semantics.md 6.1,
 * "Collectives"): the dlopen()ed library, the translation of ncclResult_t,
 * and comm_init / all_reduce / sync_collective.
 *
 * Single process, one worker thread per device: comm_init of a device set
 * runs on every participant's worker at once; each calls ncclCommInitRank
 * with the set's process-wide ncclUniqueId (made once by ncclGetUniqueId)
 * and blocks until all ranks have joined.
 *
 * Streams: each server has one comm stream (non-blocking, the configured
 * priority). An all-reduce makes the comm stream wait on an event recorded
 * on the compute stream (src and dst are ready), runs ncclAllReduce there,
 * and makes the compute stream wait on the comm stream again, so later work
 * on the stream (reads of dst, the pool reusing src or dst) is ordered after
 * the collective without a host wait. sync_collective repeats that last
 * step.
 *
 * Communicators are not destroyed with the server: ncclCommDestroy may wait
 * for its peers, whose workers ruda_shutdown() stops one after the other.
 * They live until process exit, like the unique-id registry.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_nccl.h"
#include "backends/cuda/cuda_server.h"
#include "comm/comm_id.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

#define RUDA__NSTR_(x) #x
#define RUDA__NSTR(x) RUDA__NSTR_(x)
#define RUDA__SET_FN(dst, sym) memcpy(&(dst), &(sym), sizeof(dst))

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_tried;
static ruda_status_t g_error;
static ruda__nccl_api_t g_api;

static ruda_status_t load_locked(void) {
  const char *names[] = {"libnccl.so.2", "libnccl.so", "/usr/local/cuda/lib/libnccl.so.2",
                         "/usr/local/cuda/lib64/libnccl.so.2"};
  const char *single[1];
  const char *const *list = names;
  size_t n = sizeof names / sizeof names[0];
  const char *env = getenv("RUDA_NCCL_LIBRARY");
  if (env && env[0]) {
    single[0] = env;
    list = single;
    n = 1;
  }
  char tried[1024];
  size_t used = 0;
  tried[0] = '\0';
  void *lib = NULL;
  const char *name = NULL;
  const char *last = NULL;
  for (size_t i = 0; i < n && !lib; i++) {
    lib = dlopen(list[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      name = list[i];
      break;
    }
    last = dlerror();
    int w = snprintf(tried + used, used < sizeof tried ? sizeof tried - used : 0, "%s%s",
                     used ? ", " : "", list[i]);
    if (w > 0) used += (size_t)w;
  }
  if (!lib) {
    return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,
                              "collectives on CUDA need NCCL, which could not be loaded "
                              "(looked for %s%s%s; RUDA_NCCL_LIBRARY names another file)",
                              tried, last ? "; last error: " : "", last ? last : "");
  }
  ruda__nccl_api_t api;
  memset(&api, 0, sizeof api);
  api.lib = lib;
  api.lib_name = name;
#define RUDA__NCCL_LOAD(fn, required)                                                  \
  do {                                                                                 \
    dlerror();                                                                         \
    void *s_ = dlsym(lib, RUDA__NSTR(fn));                                             \
    if (s_ == NULL && (required)) {                                                    \
      dlclose(lib);                                                                    \
      return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,                  \
                                "NCCL (%s) has no symbol %s (too old?)", name,         \
                                RUDA__NSTR(fn));                                       \
    }                                                                                  \
    if (s_ != NULL) RUDA__SET_FN(api.fn, s_);                                          \
  } while (0);
  RUDA__NCCL_SYMBOLS(RUDA__NCCL_LOAD)
#undef RUDA__NCCL_LOAD
  if (api.ncclGetVersion(&api.version) != ncclSuccess) api.version = 0;
  g_api = api;
  return NULL;
}

ruda_status_t ruda__nccl_api_get(const ruda__nccl_api_t **out) {
  pthread_mutex_lock(&g_lock);
  if (!g_tried) {
    g_error = load_locked();
    g_tried = true;
  }
  ruda_status_t s = g_error ? ruda_status_clone(g_error) : NULL;
  pthread_mutex_unlock(&g_lock);
  *out = s ? NULL : &g_api;
  return s;
}

/* ---- ncclResult_t: the one place it is translated ---- */

static const char *nccl_result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult_unknown";
  }
}

ruda_status_t ruda__nccl_error(ruda_error_kind_t kind, ncclResult_t r, const char *call,
                               const char *context_fmt, ...) {
  const char *text = "no description";
  const char *last = NULL;
  if (g_tried && !g_error) {
    if (g_api.ncclGetErrorString) text = g_api.ncclGetErrorString(r);
    if (g_api.ncclGetLastError) last = g_api.ncclGetLastError(NULL);
  }
  char context[512];
  context[0] = '\0';
  if (context_fmt) {
    va_list ap;
    va_start(ap, context_fmt);
    vsnprintf(context, sizeof context, context_fmt, ap);
    va_end(ap);
  }
  bool has_last = last && last[0];
  ruda_status_t s = ruda_status_create(kind, "%s failed with %s (%d): %s%s%s%s%s%s", call,
                                       nccl_result_name(r), (int)r, text ? text : "",
                                       has_last ? " (" : "", has_last ? last : "",
                                       has_last ? ")" : "", context[0] ? ": " : "", context);
  return ruda_status_set_vendor(s, call, nccl_result_name(r), (int64_t)r);
}

bool ruda__nccl_dtype(ruda_elem_type_t t, ncclDataType_t *out) {
  switch (t) {
    case RUDA_ELEM_F64: *out = ncclFloat64; return true;
    case RUDA_ELEM_F32: *out = ncclFloat32; return true;
    case RUDA_ELEM_F16: *out = ncclFloat16; return true;
    case RUDA_ELEM_BF16: *out = ncclBfloat16; return true;
    case RUDA_ELEM_I8: *out = ncclInt8; return true;
    case RUDA_ELEM_I32: *out = ncclInt32; return true;
    case RUDA_ELEM_I64: *out = ncclInt64; return true;
    case RUDA_ELEM_U8: *out = ncclUint8; return true;
    case RUDA_ELEM_U32: *out = ncclUint32; return true;
    case RUDA_ELEM_U64: *out = ncclUint64; return true;
    default: return false;
  }
}

/* ---- Process-wide unique ids, one per CommunicationId ---- */

typedef struct uid_entry {
  struct uid_entry *next;
  uint64_t id;
  ncclUniqueId uid;
} uid_entry_t;

static pthread_mutex_t g_uid_lock = PTHREAD_MUTEX_INITIALIZER;
static uid_entry_t *g_uids;

static ruda_status_t unique_id(const ruda__nccl_api_t *api, uint64_t id, ncclUniqueId *out) {
  pthread_mutex_lock(&g_uid_lock);
  uid_entry_t *e = g_uids;
  while (e && e->id != id) e = e->next;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e) {
      pthread_mutex_unlock(&g_uid_lock);
      return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory");
    }
    ncclResult_t r = api->ncclGetUniqueId(&e->uid);
    if (r != ncclSuccess) {
      free(e);
      pthread_mutex_unlock(&g_uid_lock);
      return ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, "ncclGetUniqueId", NULL);
    }
    e->id = id;
    e->next = g_uids;
    g_uids = e;
  }
  *out = e->uid;
  pthread_mutex_unlock(&g_uid_lock);
  return NULL;
}

/* ---- The server's communicators (worker thread only) ---- */

struct ruda__cuda_comms {
  const ruda__nccl_api_t *api;
  CUstream stream; /* the comm stream */
  CUevent to_comm, to_compute;
  size_t n, cap;
  struct {
    uint64_t id;
    ncclComm_t comm;
  } *items;
};

static ncclComm_t find_comm(const struct ruda__cuda_comms *c, uint64_t id) {
  for (size_t i = 0; c && i < c->n; i++) {
    if (c->items[i].id == id) return c->items[i].comm;
  }
  return NULL;
}

static ruda_status_t comms_get(cuda_server_t *s, struct ruda__cuda_comms **out) {
  *out = s->comms;
  if (s->comms) return NULL;
  const ruda__nccl_api_t *api = NULL;
  ruda_status_t e = ruda__nccl_api_get(&api);
  if (e) return e;
  struct ruda__cuda_comms *c = calloc(1, sizeof *c);
  if (!c) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory");
  c->api = api;
  CUresult r = s->api->cuStreamCreateWithPriority(&c->stream, CU_STREAM_NON_BLOCKING, s->priority);
  if (r == CUDA_SUCCESS) r = s->api->cuEventCreate(&c->to_comm, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS) r = s->api->cuEventCreate(&c->to_compute, CU_EVENT_DISABLE_TIMING);
  if (r != CUDA_SUCCESS) {
    if (c->to_comm) s->api->cuEventDestroy(c->to_comm);
    if (c->stream) s->api->cuStreamDestroy(c->stream);
    free(c);
    return ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamCreateWithPriority",
                          "creating the comm stream of cuda:%u", s->base.device.index_id);
  }
  s->comms = c;
  *out = c;
  return NULL;
}

ruda_status_t ruda__cuda_comm_init(ruda__server_t *base, const ruda_device_id_t *ids, size_t n) {
  cuda_server_t *s = as_cuda(base);
  s->api->cuCtxSetCurrent(s->ctx);
  struct ruda__cuda_comms *c = NULL;
  ruda_status_t e = comms_get(s, &c);
  if (e) return e;
  uint64_t id = ruda__comm_id(ids, n);
  if (find_comm(c, id)) return NULL;
  size_t rank = ruda__comm_rank(ids, n, base->device);
  if (rank == n) {
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "comm_init: cuda:%u is not a participant",
                              base->device.index_id);
  }
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 4;
    void *p = realloc(c->items, cap * sizeof *c->items);
    if (!p) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory");
    c->items = p;
    c->cap = cap;
  }
  ncclUniqueId uid;
  e = unique_id(c->api, id, &uid);
  if (e) return e;
  ncclComm_t comm = NULL;
  ncclResult_t r = c->api->ncclCommInitRank(&comm, (int)n, uid, (int)rank);
  if (r != ncclSuccess) {
    return ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, r, "ncclCommInitRank",
                            "cuda:%u as rank %zu of %zu", base->device.index_id, rank, n);
  }
  c->items[c->n].id = id;
  c->items[c->n].comm = comm;
  c->n++;
  return NULL;
}

/* Makes `waiter` wait for the work queued so far on `from`. */
static CUresult stream_after(cuda_server_t *s, CUevent ev, CUstream from, CUstream waiter) {
  CUresult r = s->api->cuEventRecord(ev, from);
  if (r == CUDA_SUCCESS) r = s->api->cuStreamWaitEvent(waiter, ev, 0);
  return r;
}

ruda_status_t ruda__cuda_all_reduce(ruda__server_t *base, const ruda_binding_t *src,
                                    const ruda_binding_t *dst, ruda_elem_type_t dtype,
                                    ruda_stream_id_t stream, ruda_reduce_op_t op,
                                    const ruda_device_id_t *ids, size_t n) {
  cuda_server_t *s = as_cuda(base);
  const ruda__cuda_api_t *api = s->api;
  ruda__cuda_settle_poison(s, stream);
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  struct ruda__cuda_comms *c = s->comms;
  ncclComm_t comm = find_comm(c, ruda__comm_id(ids, n));
  ncclDataType_t type = ncclFloat32;
  uint64_t bytes = src->size - src->offset_start - src->offset_end;
  size_t esize = ruda_elem_type_size(dtype);
  size_t count = esize ? (size_t)(bytes / esize) : 0;
  ruda_status_t e = NULL;
  keep_list_t keep = {0};
  CUdeviceptr sp = 0, dp = 0, scratch = 0;
  if (!st) return NULL; /* no slot: nothing can be queued or reported */
  if (!comm || !ruda__nccl_dtype(dtype, &type)) {
    e = ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                           "all-reduce on cuda:%u: no communicator or element type %s",
                           base->device.index_id, ruda_elem_type_name(dtype));
    goto done; /* the client never lets this happen: no peer waits */
  }
  ruda__cuda_order_binding(s, st, src, &keep);
  ruda__cuda_order_binding(s, st, dst, &keep);
  e = ruda__cuda_resolve(s, src, &sp, NULL);
  if (!e) e = ruda__cuda_resolve(s, dst, &dp, NULL);
  if (e) {
    /* The peers wait for this rank inside NCCL: take part with scratch
     * memory so they finish (with a wrong result, reported here). */
    if (count && api->cuMemAlloc(&scratch, bytes) != CUDA_SUCCESS) scratch = 0;
    sp = dp = scratch;
    if (count && !scratch) goto done;
  }
  CUresult r = stream_after(s, c->to_comm, st->cu, c->stream);
  if (r != CUDA_SUCCESS) {
    ruda_status_free(e);
    e = ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamWaitEvent",
                       "ordering the comm stream of cuda:%u", base->device.index_id);
    goto done;
  }
  long tr = ruda__cuda_trace_begin(s, st, "comm", "all_reduce", bytes);
  ncclResult_t nr = c->api->ncclAllReduce((const void *)(uintptr_t)sp, (void *)(uintptr_t)dp,
                                          count, type, op == RUDA_REDUCE_MEAN ? ncclAvg : ncclSum,
                                          comm, (cudaStream_t)c->stream);
  ruda__cuda_trace_end(s, st, tr);
  if (nr != ncclSuccess && !e) {
    e = ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, nr, "ncclAllReduce",
                         "%zu elements of %s on cuda:%u", count, ruda_elem_type_name(dtype),
                         base->device.index_id);
  }
  r = stream_after(s, c->to_compute, c->stream, st->cu);
  if (r != CUDA_SUCCESS && !e) {
    e = ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamWaitEvent",
                       "ordering stream %llu of cuda:%u after the comm stream",
                       (unsigned long long)stream.value, base->device.index_id);
  }
  if (scratch) {
    api->cuStreamSynchronize(c->stream);
    api->cuMemFree(scratch);
  }
done:
  if (e) ruda__stream_push_error(cuda_rs(st), e);
  ruda__cuda_op_end(s, st, &keep);
  return NULL;
}

ruda_status_t ruda__cuda_sync_collective(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  struct ruda__cuda_comms *c = s->comms;
  if (!c) return NULL; /* no collective ever ran here */
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  if (!st) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory creating a stream");
  CUresult r = stream_after(s, c->to_compute, c->stream, st->cu);
  if (r != CUDA_SUCCESS) {
    return ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamWaitEvent",
                          "sync_collective on cuda:%u", base->device.index_id);
  }
  return NULL;
}

void ruda__cuda_comms_destroy(cuda_server_t *s, bool alive) {
  struct ruda__cuda_comms *c = s->comms;
  if (!c) return;
  /* Communicators are kept (see the top of this file). */
  if (alive) s->api->cuStreamSynchronize(c->stream);
  s->api->cuEventDestroy(c->to_comm);
  s->api->cuEventDestroy(c->to_compute);
  s->api->cuStreamDestroy(c->stream);
  free(c->items);
  free(c);
  s->comms = NULL;
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
