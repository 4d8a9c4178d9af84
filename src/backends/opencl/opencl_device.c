/* OpenCL devices: every platform's devices as opencl:N, and their
 * properties read with clGetDeviceInfo.
 *
 * Order: platforms sorted by name, then version, then the order the ICD
 * loader lists them in (which follows the vendor files' directory order and
 * is not stable across machines); within a platform, the order of
 * clGetDeviceIDs(CL_DEVICE_TYPE_ALL). The same machine therefore always
 * numbers its devices the same way.
 *
 * Above the loader (opencl_loader.c), which it calls; also the load probe
 * and the loader's test hook, which forget the device list with the load.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "base/alloc.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* Extension queries not every header has. */
#define RUDA__CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define RUDA__CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define RUDA__CL_DEVICE_WARP_SIZE_NV 0x4003
#define RUDA__CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_done;
static ruda_status_t g_error;
static ruda__opencl_device_t *g_devices;
static size_t g_count;
/* Lists forgotten by a test override, kept reachable (servers may point
 * into them). */
static ruda__opencl_device_t *g_retired[16];
static size_t g_nretired;

static uint64_t info_u64(const ruda__opencl_api_t *api, cl_device_id d, cl_device_info what,
                         uint64_t fallback) {
  cl_ulong v = 0;
  if (api->clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return fallback;
  return (uint64_t)v;
}

static uint32_t info_uint(const ruda__opencl_api_t *api, cl_device_id d, cl_device_info what,
                          uint32_t fallback) {
  cl_uint v = 0;
  if (api->clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return fallback;
  return (uint32_t)v;
}

static size_t info_size(const ruda__opencl_api_t *api, cl_device_id d, cl_device_info what,
                        size_t fallback) {
  size_t v = 0;
  if (api->clGetDeviceInfo(d, what, sizeof v, &v, NULL) != CL_SUCCESS) return fallback;
  return v;
}

static void info_str(const ruda__opencl_api_t *api, cl_device_id d, cl_device_info what,
                     char *out, size_t cap) {
  out[0] = '\0';
  if (api->clGetDeviceInfo(d, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
  out[cap - 1] = '\0';
}

/* Whether the space-separated `list` holds `ext`. */
static bool has_word(const char *list, const char *ext) {
  size_t n = strlen(ext);
  for (const char *p = list; (p = strstr(p, ext)) != NULL; p += n) {
    bool start = p == list || p[-1] == ' ';
    bool end = p[n] == '\0' || p[n] == ' ';
    if (start && end) return true;
  }
  return false;
}

static void trim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n')) s[--n] = '\0';
}

ruda_status_t ruda__opencl_device_query(const ruda__opencl_api_t *api, ruda__opencl_device_t *d) {
  cl_device_id dev = d->device;
  ruda_device_properties_t *p = &d->props;
  memset(p, 0, sizeof *p);
  cl_int r = api->clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof p->name, p->name, NULL);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_UNAVAILABLE, r, "clGetDeviceInfo", "CL_DEVICE_NAME");
  p->name[sizeof p->name - 1] = '\0';
  trim(p->name);
  cl_device_type type = 0;
  r = api->clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_UNAVAILABLE, r, "clGetDeviceInfo", "CL_DEVICE_TYPE");
  d->type = type;
  info_str(api, dev, CL_DEVICE_VERSION, d->device_version, sizeof d->device_version);
  info_str(api, dev, CL_DEVICE_OPENCL_C_VERSION, d->c_version, sizeof d->c_version);
  info_str(api, dev, CL_DRIVER_VERSION, d->driver_version, sizeof d->driver_version);
  trim(d->device_version);
  trim(d->c_version);
  trim(d->driver_version);
  unsigned cmaj = 1, cmin = 0;
  if (sscanf(d->c_version, "OpenCL C %u.%u", &cmaj, &cmin) != 2) cmaj = 1, cmin = 0;
  d->c_major = cmaj;
  d->c_minor = cmin;

  size_t ext_len = 0;
  char *ext = NULL;
  if (api->clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_len) == CL_SUCCESS &&
      ext_len > 0 && (ext = ruda__malloc(ext_len + 1)) != NULL) {
    if (api->clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, ext_len, ext, NULL) != CL_SUCCESS)
      ext[0] = '\0';
    ext[ext_len] = '\0';
  }
  const char *exts = ext ? ext : "";
  d->fp64 = has_word(exts, "cl_khr_fp64") ||
            info_u64(api, dev, CL_DEVICE_DOUBLE_FP_CONFIG, 0) != 0;
  d->fp16 = has_word(exts, "cl_khr_fp16");
  d->int64_atomics = has_word(exts, "cl_khr_int64_base_atomics");
  d->float_atomics = has_word(exts, "cl_ext_float_atomics");
  bool nv = has_word(exts, "cl_nv_device_attribute_query");
  bool amd = has_word(exts, "cl_amd_device_attribute_query");
  ruda__free(ext);

  cl_uint bits = info_uint(api, dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, 1024);
  d->base_align = bits >= 8 ? bits / 8 : 1;
  d->max_alloc = info_u64(api, dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, 128ull << 20);
  d->global_mem = info_u64(api, dev, CL_DEVICE_GLOBAL_MEM_SIZE, d->max_alloc);
  d->local_mem = info_u64(api, dev, CL_DEVICE_LOCAL_MEM_SIZE, 16384);
  d->max_param_size = info_size(api, dev, CL_DEVICE_MAX_PARAMETER_SIZE, 1024);
  d->unified_memory = info_uint(api, dev, CL_DEVICE_HOST_UNIFIED_MEMORY, 0) != 0;

  /* Slices start at the base-address alignment so that every pooled slice
   * can be a sub-buffer (see opencl_server.c); at least 64 bytes. */
  uint64_t align = d->base_align < 64 ? 64 : d->base_align;
  if ((align & (align - 1)) != 0) align = 4096;
  p->memory.alignment = align;
  uint64_t page = d->max_alloc;
  p->memory.max_page_size = page / align * align;

  ruda_hardware_properties_t *h = &p->hardware;
  uint32_t units = info_uint(api, dev, CL_DEVICE_MAX_COMPUTE_UNITS, 1);
  size_t wg = info_size(api, dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, 256);
  size_t items[3] = {1, 1, 1};
  cl_uint dims = info_uint(api, dev, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, 3);
  if (dims >= 3) api->clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL);
  h->load_width = 128;
  uint32_t plane = 1;
  if (nv) plane = info_uint(api, dev, RUDA__CL_DEVICE_WARP_SIZE_NV, 32);
  if (amd) plane = info_uint(api, dev, RUDA__CL_DEVICE_WAVEFRONT_WIDTH_AMD, 64);
  h->plane_size_min = plane;
  h->plane_size_max = plane;
  /* Kernel parameters: one pointer per buffer, then the info pointer and
   * the dynamic local memory. */
  size_t ptrs = d->max_param_size / sizeof(cl_mem);
  h->max_bindings = ptrs > 2 ? (uint32_t)(ptrs - 2) : 1;
  h->max_shared_memory_size = d->local_mem;
  h->max_ruda_count[0] = 2147483647u;
  h->max_ruda_count[1] = 65535u;
  h->max_ruda_count[2] = 65535u;
  h->max_units_per_ruda = wg > UINT32_MAX ? UINT32_MAX : (uint32_t)wg;
  for (int i = 0; i < 3; i++)
    h->max_ruda_dim[i] = items[i] > UINT32_MAX ? UINT32_MAX : (uint32_t)items[i];
  if (type & CL_DEVICE_TYPE_CPU)
    h->num_cpu_cores = units;
  else
    h->num_streaming_multiprocessors = units;
  h->max_vector_size = UINT32_MAX;
  h->total_memory = d->global_mem;
  h->cache_l1 = 0;
  h->cache_l2 = info_u64(api, dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, 0);
  h->warp_size = plane;
  if (nv) {
    uint32_t maj = info_uint(api, dev, RUDA__CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, 0);
    uint32_t min = info_uint(api, dev, RUDA__CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, 0);
    h->compute_capability = maj * 10 + min;
  }

  uint64_t f = RUDA_FEATURE_DYNAMIC_COUNT | RUDA_FEATURE_SHARED_MEMORY;
  if (d->fp64) f |= RUDA_FEATURE_F64;
  if (d->fp16) f |= RUDA_FEATURE_F16;
  if (d->int64_atomics) f |= RUDA_FEATURE_ATOMIC_I64;
  if (d->float_atomics) f |= RUDA_FEATURE_ATOMIC_F32_ADD;
  p->features = f;
  p->timing_method = RUDA_TIMING_DEVICE;

  char mem[32];
  snprintf(mem, sizeof mem, "%.1f GiB", (double)d->global_mem / (1024.0 * 1024.0 * 1024.0));
  snprintf(d->info, sizeof d->info, "%s, %s, %s (%s), %s, %u compute units, %s%s%s", p->name,
           d->platform_name, d->c_version, d->device_version,
           (type & CL_DEVICE_TYPE_GPU) ? "GPU" : (type & CL_DEVICE_TYPE_CPU) ? "CPU" : "accelerator",
           units, mem, d->fp64 ? ", fp64" : "", d->int64_atomics ? ", int64 atomics" : "");
  return NULL;
}

typedef struct platform_entry {
  cl_platform_id id;
  char name[128];
  char version[128];
  size_t order;
} platform_entry_t;

static int platform_cmp(const void *a, const void *b) {
  const platform_entry_t *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  if (c == 0) c = strcmp(x->version, y->version);
  if (c == 0) c = x->order < y->order ? -1 : x->order > y->order;
  return c;
}

static ruda_status_t enumerate_locked(void) {
  const ruda__opencl_api_t *api = NULL;
  ruda_status_t e = ruda__opencl_api_get(&api);
  if (e) return e;
  cl_uint np = 0;
  cl_int r = api->clGetPlatformIDs(0, NULL, &np);
  if (r != CL_SUCCESS || np == 0) {
    /* Where the loader looked: OCL_ICD_VENDORS when set, else the
     * system's list of installed drivers. */
    const char *vendors = getenv("OCL_ICD_VENDORS");
    bool from_env = vendors != NULL && vendors[0] != '\0';
    ruda_status_t s = ruda_status_create(
        RUDA_ERR_UNAVAILABLE,
        "OpenCL is unavailable: the ICD loader (%s) found no platform (clGetPlatformIDs "
        "gave %s (%d), %u platforms); it looked for drivers (*.icd files) in %s%s",
        api->head.lib_name, ruda__cl_error_name(r), (int)r, (unsigned)np,
        from_env ? vendors : "/etc/OpenCL/vendors",
        from_env ? " (OCL_ICD_VENDORS)" : " (OCL_ICD_VENDORS names another folder)");
    return r != CL_SUCCESS ? ruda_status_set_vendor(s, "clGetPlatformIDs", ruda__cl_error_name(r), r)
                           : s;
  }
  cl_platform_id *ids = ruda__calloc(np, sizeof *ids);
  platform_entry_t *plats = ruda__calloc(np, sizeof *plats);
  if (ids == NULL || plats == NULL) {
    ruda__free(ids);
    ruda__free(plats);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory listing OpenCL platforms");
  }
  r = api->clGetPlatformIDs(np, ids, NULL);
  if (r != CL_SUCCESS) {
    ruda__free(ids);
    ruda__free(plats);
    return ruda__cl_error(RUDA_ERR_UNAVAILABLE, r, "clGetPlatformIDs", "listing %u platforms",
                          (unsigned)np);
  }
  for (cl_uint i = 0; i < np; i++) {
    plats[i].id = ids[i];
    plats[i].order = i;
    if (api->clGetPlatformInfo(ids[i], CL_PLATFORM_NAME, sizeof plats[i].name, plats[i].name,
                               NULL) != CL_SUCCESS)
      plats[i].name[0] = '\0';
    if (api->clGetPlatformInfo(ids[i], CL_PLATFORM_VERSION, sizeof plats[i].version,
                               plats[i].version, NULL) != CL_SUCCESS)
      plats[i].version[0] = '\0';
    plats[i].name[sizeof plats[i].name - 1] = '\0';
    plats[i].version[sizeof plats[i].version - 1] = '\0';
  }
  ruda__free(ids);
  qsort(plats, np, sizeof *plats, platform_cmp);

  ruda__opencl_device_t *devs = NULL;
  size_t n = 0, cap = 0;
  char skipped[512] = "";
  for (cl_uint i = 0; i < np; i++) {
    cl_uint nd = 0;
    r = api->clGetDeviceIDs(plats[i].id, CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (r != CL_SUCCESS || nd == 0) {
      size_t used = strlen(skipped);
      snprintf(skipped + used, sizeof skipped - used, "%s%s: %s", used ? "; " : "",
               plats[i].name, r != CL_SUCCESS ? ruda__cl_error_name(r) : "no device");
      continue;
    }
    cl_device_id *dids = ruda__calloc(nd, sizeof *dids);
    if (dids == NULL || api->clGetDeviceIDs(plats[i].id, CL_DEVICE_TYPE_ALL, nd, dids, NULL) != CL_SUCCESS) {
      ruda__free(dids);
      continue;
    }
    for (cl_uint k = 0; k < nd; k++) {
      ruda__opencl_device_t *grown = ruda__grow(devs, &cap, n, sizeof *grown, 4);
      if (grown == NULL) break;
      devs = grown;
      ruda__opencl_device_t *d = &devs[n];
      memset(d, 0, sizeof *d);
      d->platform = plats[i].id;
      d->device = dids[k];
      snprintf(d->platform_name, sizeof d->platform_name, "%s", plats[i].name);
      snprintf(d->platform_version, sizeof d->platform_version, "%s", plats[i].version);
      ruda_status_t qe = ruda__opencl_device_query(api, d);
      if (qe) {
        ruda_status_free(qe);
        continue;
      }
      n++;
    }
    ruda__free(dids);
  }
  ruda__free(plats);
  if (n == 0) {
    ruda__free(devs);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "OpenCL is unavailable: %u platform%s but no usable device (%s)",
                              (unsigned)np, np == 1 ? "" : "s", skipped);
  }
  g_devices = devs;
  g_count = n;
  return NULL;
}

ruda_status_t ruda__opencl_devices(const ruda__opencl_device_t **out, size_t *count) {
  pthread_mutex_lock(&g_lock);
  if (!g_done) {
    g_error = enumerate_locked();
    g_done = true;
  }
  ruda_status_t s = g_error ? ruda_status_clone(g_error) : NULL;
  *out = s ? NULL : g_devices;
  *count = s ? 0 : g_count;
  pthread_mutex_unlock(&g_lock);
  return s;
}

void ruda__opencl_devices_forget(void) {
  pthread_mutex_lock(&g_lock);
  /* The old array is kept alive: servers created from it still point into
   * it. Tests only. */
  if (g_devices != NULL && g_nretired < sizeof g_retired / sizeof g_retired[0])
    g_retired[g_nretired++] = g_devices;
  g_done = false;
  ruda_status_free(g_error);
  g_error = NULL;
  g_devices = NULL;
  g_count = 0;
  pthread_mutex_unlock(&g_lock);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */

/* ---- The load result, the test hook ---- */

#if defined(RUDA_HAVE_OPENCL_HEADERS)

ruda_status_t ruda__opencl_probe(void) {
  const ruda__opencl_device_t *devs = NULL;
  size_t n = 0;
  return ruda__opencl_devices(&devs, &n);
}

#else /* !RUDA_HAVE_OPENCL_HEADERS */

ruda_status_t ruda__opencl_probe(void) {
  return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                            "OpenCL is unavailable: ruda was built without the OpenCL headers "
                            "(CL/cl.h not found at configure time)");
}

#endif

void ruda__opencl_loader_test_override(const char *lib) {
  ruda__opencl_loader_forget(lib);
#if defined(RUDA_HAVE_OPENCL_HEADERS)
  ruda__opencl_devices_forget();
#endif
}
