/* The device reset after a fault (cuda_reset.h): every stream, module and
 * allocation dropped, the primary context reset and probed. Called by the
 * vtable's settling of a fault (cuda_server.c), on the worker thread.
 */
#include <pthread.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/cuda_profile.h"
#include "backends/cuda/cuda_reset.h"
#include "backends/cuda/cuda_stream.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

static void free_stream_part(void *ctx, ruda__stream_t *rs) {
  cuda_stream_t *st = cuda_ext(rs);
  if (st->pipe.ready) ruda__cuda_stream_free(ctx, st, false);
}

void ruda__cuda_reset_device(cuda_server_t *s) {
  const ruda__cuda_api_t *api = s->api;
  ruda__stream_table_foreach(&s->base.streams, free_stream_part, s);
  ruda__cuda_stash_forget(&s->stash);
  ruda__stream_table_foreach(&s->base.streams, ruda__cuda_profiles_forget, s);
  ruda__cuda_graphs_forget(s);
  ruda__cuda_module_cache_destroy(s->modules, true);
  s->modules = ruda__cuda_module_cache_create(api, s->cc, s->base.utilities.properties_hash,
                                              s->base.utilities.settings.cache_dir);
  pthread_mutex_lock(&s->home->lock);
  s->nevents = 0; /* events and blocks die with the context */
  s->nblocks = 0;
  pthread_mutex_unlock(&s->home->lock);
  api->cuCtxSetCurrent(NULL);
  api->cuDevicePrimaryCtxRelease(s->dev);
  CUresult r = api->cuDevicePrimaryCtxReset(s->dev);
  CUcontext ctx = NULL;
  if (r == CUDA_SUCCESS) r = api->cuDevicePrimaryCtxRetain(&ctx, s->dev);
  if (r == CUDA_SUCCESS) {
    s->ctx = ctx;
    r = api->cuCtxSetCurrent(ctx);
  }
  const char *step = r == CUDA_SUCCESS ? NULL : "cuDevicePrimaryCtxReset/Retain";
  /* Probe: a stream and a small allocation must work again. */
  CUstream probe = NULL;
  CUdeviceptr p = 0;
  if (r == CUDA_SUCCESS) {
    r = api->cuStreamCreateWithPriority(&probe, CU_STREAM_NON_BLOCKING, 0);
    if (r != CUDA_SUCCESS) step = "cuStreamCreateWithPriority";
  }
  if (r == CUDA_SUCCESS) {
    r = api->cuMemAlloc(&p, 256);
    if (r != CUDA_SUCCESS) step = "cuMemAlloc";
  }
  if (p) api->cuMemFree(p);
  if (probe) api->cuStreamDestroy(probe);
  if (r != CUDA_SUCCESS) {
    ruda__cuda_warn("the device could not be reset after a fault (%s failed with %s); "
                    "restart the process",
                    step, ruda__cu_result_name(r));
  } else {
    ruda__cuda_warn("device reset after a fault; buffers created before it are gone");
  }
  ruda__cuda_fault_reset_done(&s->fault, r == CUDA_SUCCESS, r);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
