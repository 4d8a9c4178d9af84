/* Kernel launches of the CUDA server: the device calls of the server
 * layer's launch pipeline (ruda__stream_launch, which set the stream up,
 * ordered, kept and resolved the bindings): the module cache, dynamic
 * counts, tensor maps, info words, opt-in shared memory and thread-block
 * clusters. The vtable entry (cuda_server.c) settles faults first;
 * ruda__launch_validate validated the launch before it was queued. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_launch.h"
#include "backends/cuda/cuda_stream.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- Launch ---- */

static ruda_status_t upload_info(cuda_server_t *s, cuda_stream_t *st, const ruda_info_t *info,
                                 CUdeviceptr *out) {
  size_t bytes = info->len * sizeof(uint64_t);
  if (bytes > st->info_cap) {
    size_t cap = st->info_cap ? st->info_cap : 256;
    while (cap < bytes) cap *= 2;
    CUdeviceptr p = 0;
    ruda_status_t e = ruda__cuda_gpu_malloc(st->gpu_store, cap, &p);
    if (e) return e;
    /* Freed at the next flush: kernels before may still read it. */
    if (st->info_dev != 0) ruda__cuda_storage_retire(st->gpu_store, st->info_dev, st->info_cap);
    st->info_dev = p;
    st->info_cap = cap;
  }
  /* Pageable source: the driver stages it before returning, and the
   * stream orders this upload after the kernels that read the last one. */
  CUresult r = s->api->cuMemcpyHtoDAsync(st->info_dev, info->data, bytes, st->cu);
  if (r != CUDA_SUCCESS)
    return ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "cuMemcpyHtoDAsync", "uploading kernel info");
  *out = st->info_dev;
  return NULL;
}

#define PARAMS_INLINE 32

RUDA__HOT
ruda_status_t ruda__cuda_launch_on(cuda_server_t *s, CUstream cu, ruda__cuda_function_t *fn,
                                   const ruda_kernel_desc_t *d, ruda_count3_t grid,
                                   const ruda__launch_args_t *args,
                                   const ruda__storage_handle_t *storage, CUdeviceptr info) {
  const ruda__cuda_api_t *api = s->api;
  size_t nb = args->num_buffers, nt = args->num_tensor_maps;
  CUtensorMap *maps = NULL;
  void *psmall[PARAMS_INLINE];
  CUdeviceptr vsmall[PARAMS_INLINE];
  size_t nparams = nt + nb + 1;
  void **params = nparams <= PARAMS_INLINE ? psmall : ruda__calloc(nparams, sizeof *params);
  CUdeviceptr *vals = nb + 1 <= PARAMS_INLINE ? vsmall : ruda__calloc(nb + 1, sizeof *vals);
  ruda_status_t e = NULL;
  if (nt > 0) maps = aligned_alloc(64, nt * sizeof *maps);
  if (params == NULL || vals == NULL || (nt > 0 && maps == NULL)) {
    e = ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "kernel %s: no host memory for "
                           "its parameters", d->name);
    goto done;
  }
  /* Parameter order, as on every backend: buffers, tensor maps, info. */
  size_t np = 0;
  for (size_t i = 0; i < nb; i++) {
    vals[i] = (CUdeviceptr)ruda__storage_handle_addr(&storage[i]);
    params[np++] = &vals[i];
  }
  for (size_t i = 0; i < nt; i++) {
    uint64_t tp = ruda__storage_handle_addr(&storage[nb + i]);
    e = ruda__cuda_tensor_map_encode(api, &args->tensor_maps[i], tp, &maps[i]);
    if (e) goto done;
    params[np++] = &maps[i];
  }
  vals[nb] = info;
  params[np++] = &vals[nb];

  if (d->shared_mem_bytes > 48 * 1024 && fn->shared_mem_set < d->shared_mem_bytes) {
    CUresult r = api->cuFuncSetAttribute(fn->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         (int)d->shared_mem_bytes);
    if (r != CUDA_SUCCESS) {
      e = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "cuFuncSetAttribute",
                         "kernel %s asks for %llu bytes of shared memory", d->name,
                         (unsigned long long)d->shared_mem_bytes);
      goto done;
    }
    fn->shared_mem_set = d->shared_mem_bytes;
  }

  CUresult r;
  const char *call = "cuLaunchKernel";
  bool cluster = d->cluster_dim.x > 0 && d->cluster_dim.y > 0 && d->cluster_dim.z > 0 &&
                 (d->cluster_dim.x * d->cluster_dim.y * d->cluster_dim.z) > 1;
  if (cluster) {
    call = "cuLaunchKernelEx";
    if (api->cuLaunchKernelEx == NULL || s->cc < 90) {
      e = ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                             "kernel %s asks for a cluster of (%u, %u, %u) but this device "
                             "(sm_%u) or driver has no thread-block clusters",
                             d->name, d->cluster_dim.x, d->cluster_dim.y, d->cluster_dim.z, s->cc);
      goto done;
    }
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = d->cluster_dim.x;
    attr.value.clusterDim.y = d->cluster_dim.y;
    attr.value.clusterDim.z = d->cluster_dim.z;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = grid.x;
    cfg.gridDimY = grid.y;
    cfg.gridDimZ = grid.z;
    cfg.blockDimX = d->ruda_dim.x;
    cfg.blockDimY = d->ruda_dim.y;
    cfg.blockDimZ = d->ruda_dim.z;
    cfg.sharedMemBytes = (unsigned)d->shared_mem_bytes;
    cfg.hStream = cu;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    r = api->cuLaunchKernelEx(&cfg, fn->fn, params, NULL);
  } else {
    r = api->cuLaunchKernel(fn->fn, grid.x, grid.y, grid.z, d->ruda_dim.x, d->ruda_dim.y,
                            d->ruda_dim.z, (unsigned)d->shared_mem_bytes, cu, params, NULL);
  }
  if (r != CUDA_SUCCESS) {
    if (ruda__cu_result_is_sticky(r)) ruda__cuda_poison(&s->fault, r, d->name, true);
    e = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, call,
                       "kernel %s, count (%u, %u, %u), dim (%u, %u, %u), %llu bytes of shared "
                       "memory",
                       d->name, grid.x, grid.y, grid.z, d->ruda_dim.x, d->ruda_dim.y,
                       d->ruda_dim.z, (unsigned long long)d->shared_mem_bytes);
  }
done:
  if (params != psmall) ruda__free(params);
  if (vals != vsmall) ruda__free(vals);
  free(maps);
  return e;
}

/* The pipeline's launch (server/stream_op.h): the stream is set up, the
 * bindings ordered, kept and resolved. */
RUDA__HOT
ruda_status_t ruda__cuda_launch(void *backend, const ruda__launch_ctx_t *c) {
  cuda_server_t *s = backend;
  cuda_stream_t *st = c->stream;
  const ruda__cuda_api_t *api = s->api;
  /* The dim, shared memory and a static count were checked before the
   * launch was queued (ruda__launch_validate). */
  const ruda_kernel_desc_t *d = c->desc;
  ruda__cuda_function_t *fn = NULL;
  ruda_status_t e = ruda__cuda_module_cache_get(s->modules, c->kernel, &fn);
  if (e) return e;

  ruda_count3_t grid = c->count->fixed;
  if (c->count->dynamic) {
    /* Never read past what the device holds, whatever the view says. */
    if (c->count_buffer.size < RUDA__DYNAMIC_COUNT_BYTES) {
      return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                                "kernel '%s': a dynamic count is read from %u bytes, its buffer "
                                "has %llu",
                                d->name, RUDA__DYNAMIC_COUNT_BYTES,
                                (unsigned long long)c->count_buffer.size);
    }
    uint32_t local[3];
    uint32_t *host = st->count_host ? st->count_host : local;
    CUdeviceptr cp = (CUdeviceptr)ruda__storage_handle_addr(&c->count_buffer);
    CUresult r = api->cuMemcpyDtoHAsync(host, cp, 3 * sizeof(uint32_t), st->cu);
    if (r == CUDA_SUCCESS) r = api->cuStreamSynchronize(st->cu);
    if (r != CUDA_SUCCESS) {
      if (ruda__cu_result_is_sticky(r)) ruda__cuda_poison(&s->fault, r, d->name, true);
      return ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "cuMemcpyDtoHAsync",
                            "reading the dynamic count of kernel %s", d->name);
    }
    grid = (ruda_count3_t){host[0], host[1], host[2]};
    e = ruda__validate_count(&s->base.utilities.properties, d, grid);
    if (e) return e;
  }
  if (ruda_count3_is_empty(grid)) return NULL;

  CUdeviceptr info = 0;
  if (c->args->info.len > 0) {
    e = upload_info(s, st, &c->args->info, &info);
    if (e) return e;
  }
  e = ruda__cuda_launch_on(s, st->cu, fn, d, grid, c->args, c->buffers, info);
  if (e) return e;
  ruda__recent_kernels_note(&st->recent, d->name);
  if (ruda__drop_queue_should_flush(st->drops)) ruda__drop_queue_flush(st->drops);
  return NULL;
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
