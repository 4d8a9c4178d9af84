/* CUDA devices: enumeration and the properties ruda reports for them, read
 * from the driver (the choices are listed in docs/design/cuda.md). */
#include <stdio.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

static int attr(const ruda__cuda_api_t *api, CUdevice dev, CUdevice_attribute a,
                int fallback) {
  int v = 0;
  if (api->cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) return fallback;
  return v;
}

static uint64_t features_for(uint32_t cc, int driver_version) {
  uint64_t f = RUDA_FEATURE_F16 | RUDA_FEATURE_F64 | RUDA_FEATURE_ATOMIC_F32_ADD |
               RUDA_FEATURE_DYNAMIC_COUNT | RUDA_FEATURE_SHARED_MEMORY |
               RUDA_FEATURE_ATOMIC_I64;
  if (cc >= 60) f |= RUDA_FEATURE_ATOMIC_F64_ADD;
  if (cc >= 70)
    f |= RUDA_FEATURE_ATOMIC_F16 | RUDA_FEATURE_BARRIER | RUDA_FEATURE_PIPELINE |
         RUDA_FEATURE_PLANE_SYNC | RUDA_FEATURE_GRID_CONSTANTS;
  if (cc >= 75) f |= RUDA_FEATURE_LDMATRIX;
  if (cc >= 80) f |= RUDA_FEATURE_COPY_ASYNC | RUDA_FEATURE_BF16;
  if (cc >= 89) f |= RUDA_FEATURE_FP8;
  if (cc >= 90)
    f |= RUDA_FEATURE_TMA | RUDA_FEATURE_TENSOR_MAP | RUDA_FEATURE_CLUSTERS |
         RUDA_FEATURE_ELECT_SYNC | RUDA_FEATURE_STMATRIX;
  if (cc >= 100 && driver_version >= 12080) f |= RUDA_FEATURE_TMA_IM2COL_WIDE;
  if (cc >= 100 && cc < 130) f |= RUDA_FEATURE_FP4_FP6;
  return f;
}

ruda_status_t ruda__cuda_device_properties(const ruda__cuda_api_t *api, CUdevice dev,
                                           ruda_device_properties_t *out, char *info,
                                           size_t info_cap) {
  memset(out, 0, sizeof *out);
  CUresult r = api->cuDeviceGetName(out->name, (int)sizeof out->name, dev);
  if (r != CUDA_SUCCESS) return ruda__cu_error(RUDA_ERR_UNAVAILABLE, r, "cuDeviceGetName", NULL);
  size_t total = 0;
  r = api->cuDeviceTotalMem(&total, dev);
  if (r != CUDA_SUCCESS)
    return ruda__cu_error(RUDA_ERR_UNAVAILABLE, r, "cuDeviceTotalMem", NULL);

  uint32_t major = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
  uint32_t minor = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
  uint32_t cc = major * 10 + minor;

  out->memory.max_page_size = (uint64_t)total / 4;
  out->memory.alignment = 512; /* cuMemAllocPitch's row alignment */

  ruda_hardware_properties_t *h = &out->hardware;
  uint32_t warp = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32);
  h->load_width = 128;
  h->plane_size_min = warp;
  h->plane_size_max = warp;
  h->max_bindings = 1024;
  h->max_shared_memory_size =
      (uint64_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                     attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152));
  h->max_ruda_count[0] = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647);
  h->max_ruda_count[1] = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535);
  h->max_ruda_count[2] = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535);
  h->max_units_per_ruda = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024);
  h->max_ruda_dim[0] = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024);
  h->max_ruda_dim[1] = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024);
  h->max_ruda_dim[2] = (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64);
  h->num_streaming_multiprocessors =
      (uint32_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
  h->num_cpu_cores = 0;
  if (cc == 70 || cc == 75)
    h->num_tensor_cores = 8;
  else if (cc >= 80 && cc <= 100)
    h->num_tensor_cores = 4;
  h->min_tensor_cores_dim = cc >= 70 ? 8 : 0;
  h->max_vector_size = UINT32_MAX;
  h->total_memory = (uint64_t)total;
  h->cache_l1 = (uint64_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0);
  h->cache_l2 = (uint64_t)attr(api, dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0);
  h->cache_l3 = 0;
  h->compute_capability = cc;
  h->warp_size = warp;

  out->features = features_for(cc, api->driver_version);
  out->timing_method = RUDA_TIMING_DEVICE;

  if (info != NULL && info_cap > 0)
    snprintf(info, info_cap, "%s, sm_%u, CUDA driver %d.%d (%s), %u SMs, %.1f GiB", out->name,
             cc, api->driver_version / 1000, (api->driver_version % 1000) / 10,
             api->head.lib_name, h->num_streaming_multiprocessors,
             (double)total / (1024.0 * 1024.0 * 1024.0));
  return NULL;
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
