/* Loads the CUDA driver (libcuda.so.1) and NVRTC with dlopen() and fills
 * the symbol tables of cuda_symbols.h. One binary runs with or without
 * them: a missing library is RUDA_ERR_UNAVAILABLE naming every file name
 * that was tried, never a link failure or a crash.
 *
 * Both loads happen once per process, on first use, under a mutex; the
 * result (the table or the error) is kept until process exit. The test hook
 * ruda__cuda_loader_test_override() forgets it so a test can load again
 * from an absent name.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"
#include "base/alloc.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_override_cuda[256];
static char g_override_nvrtc[256];
static bool g_has_override_cuda, g_has_override_nvrtc;

#if defined(RUDA_HAVE_CUDA_HEADERS)

#define RUDA__STR_(x) #x
#define RUDA__STR(x) RUDA__STR_(x)

static bool g_cuda_tried;
static ruda_status_t g_cuda_error; /* kept; callers get clones */
static ruda__cuda_api_t g_cuda;

static bool g_nvrtc_tried;
static ruda_status_t g_nvrtc_error;
static ruda__nvrtc_api_t g_nvrtc;

/* dlopen()s the first name of `names` that loads; appends every tried name
 * and the last dlerror() to `tried`. */
static void *open_first(const char *const *names, size_t n, const char **out_name,
                        char *tried, size_t cap) {
  size_t used = 0;
  tried[0] = '\0';
  const char *last_err = NULL;
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL || names[i][0] == '\0') continue;
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
      *out_name = names[i];
      return h;
    }
    last_err = dlerror();
    int w = snprintf(tried + used, used < cap ? cap - used : 0, "%s%s",
                     used ? ", " : "", names[i]);
    if (w > 0) used += (size_t)w;
  }
  if (last_err != NULL && used < cap)
    snprintf(tried + used, cap - used, " (last error: %s)", last_err);
  return NULL;
}

static void *symbol(void *lib, const char *name) {
  dlerror();
  return dlsym(lib, name);
}

/* ISO C has no conversion from void* to a function pointer; copy the bits. */
#define RUDA__SET_FN(dst, sym) memcpy(&(dst), &(sym), sizeof(dst))

static ruda_status_t load_cuda_locked(void) {
  static const char *const defaults[] = {"libcuda.so.1", "libcuda.so"};
  const char *single[1];
  const char *const *names = defaults;
  size_t n = 2;
  if (g_has_override_cuda) {
    single[0] = g_override_cuda;
    names = single;
    n = 1;
  } else if (getenv("RUDA_CUDA_DRIVER_LIBRARY") != NULL) {
    single[0] = getenv("RUDA_CUDA_DRIVER_LIBRARY");
    names = single;
    n = 1;
  }
  char tried[1024];
  const char *name = NULL;
  void *lib = open_first(names, n, &name, tried, sizeof tried);
  if (lib == NULL)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "CUDA is unavailable: the CUDA driver library could not "
                              "be loaded (looked for %s)",
                              tried);
  ruda__cuda_api_t api;
  memset(&api, 0, sizeof api);
  api.lib = lib;
  api.lib_name = name;
#define RUDA__CU_LOAD(fn, required)                                                  \
  do {                                                                               \
    void *s_ = symbol(lib, RUDA__STR(fn));                                           \
    if (s_ == NULL && (required)) {                                                  \
      dlclose(lib);                                                                  \
      return ruda_status_create(RUDA_ERR_UNAVAILABLE,                                \
                                "CUDA is unavailable: %s has no symbol %s (driver "  \
                                "too old?)",                                         \
                                name, RUDA__STR(fn));                                \
    }                                                                                \
    if (s_ != NULL) RUDA__SET_FN(api.fn, s_);                                        \
  } while (0);
  RUDA__CU_SYMBOLS(RUDA__CU_LOAD)
#undef RUDA__CU_LOAD
  CUresult r = api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    /* The driver is present but unusable (no device, driver/kernel module
     * mismatch): unavailable, keeping the vendor's code. */
    const char *en = NULL;
    if (api.cuGetErrorName(r, &en) != CUDA_SUCCESS || en == NULL) en = "CUDA_ERROR_UNKNOWN";
    ruda_status_t s = ruda_status_create(RUDA_ERR_UNAVAILABLE,
                                         "CUDA is unavailable: cuInit failed with %s (%d) "
                                         "(driver library %s)",
                                         en, (int)r, name);
    dlclose(lib);
    return ruda_status_set_vendor(s, "cuInit", en, (int64_t)r);
  }
  int v = 0;
  if (api.cuDriverGetVersion(&v) == CUDA_SUCCESS) api.driver_version = v;
  g_cuda = api;
  return NULL;
}

ruda_status_t ruda__cuda_api_get(const ruda__cuda_api_t **out) {
  pthread_mutex_lock(&g_lock);
  if (!g_cuda_tried) {
    g_cuda_error = load_cuda_locked();
    g_cuda_tried = true;
  }
  ruda_status_t s = g_cuda_error ? ruda_status_clone(g_cuda_error) : NULL;
  pthread_mutex_unlock(&g_lock);
  *out = s ? NULL : &g_cuda;
  return s;
}

static ruda_status_t load_nvrtc_locked(void) {
  char p1[512], p2[512];
  const char *cuda_path = getenv("CUDA_PATH");
  snprintf(p1, sizeof p1, "%s/lib64/libnvrtc.so.13",
           cuda_path && cuda_path[0] ? cuda_path : "/usr/local/cuda");
  snprintf(p2, sizeof p2, "%s/lib64/libnvrtc.so.12",
           cuda_path && cuda_path[0] ? cuda_path : "/usr/local/cuda");
  const char *defaults[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                            "libnvrtc.so", p1, p2};
  const char *single[1];
  const char *const *names = defaults;
  size_t n = sizeof defaults / sizeof defaults[0];
  if (g_has_override_nvrtc) {
    single[0] = g_override_nvrtc;
    names = single;
    n = 1;
  } else if (getenv("RUDA_NVRTC_LIBRARY") != NULL) {
    single[0] = getenv("RUDA_NVRTC_LIBRARY");
    names = single;
    n = 1;
  }
  char tried[2048];
  const char *name = NULL;
  void *lib = open_first(names, n, &name, tried, sizeof tried);
  if (lib == NULL)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "NVRTC is unavailable: the CUDA runtime compiler could not "
                              "be loaded (looked for %s); CUDA C kernels cannot be "
                              "compiled, PTX and CUBIN kernels still load",
                              tried);
  ruda__nvrtc_api_t api;
  memset(&api, 0, sizeof api);
  api.lib = lib;
  /* `name` may point into this frame (p1/p2): keep a static copy. */
  static char name_copy[512];
  snprintf(name_copy, sizeof name_copy, "%s", name);
  api.lib_name = name_copy;
#define RUDA__NVRTC_LOAD(fn, required)                                               \
  do {                                                                               \
    void *s_ = symbol(lib, RUDA__STR(fn));                                           \
    if (s_ == NULL && (required)) {                                                  \
      dlclose(lib);                                                                  \
      return ruda_status_create(RUDA_ERR_UNAVAILABLE,                                \
                                "NVRTC is unavailable: %s has no symbol %s",         \
                                name_copy, RUDA__STR(fn));                           \
    }                                                                                \
    if (s_ != NULL) RUDA__SET_FN(api.fn, s_);                                        \
  } while (0);
  RUDA__NVRTC_SYMBOLS(RUDA__NVRTC_LOAD)
#undef RUDA__NVRTC_LOAD
  if (api.nvrtcVersion(&api.major, &api.minor) != NVRTC_SUCCESS) api.major = api.minor = 0;
  g_nvrtc = api;
  return NULL;
}

const ruda__nvrtc_api_t *ruda__nvrtc_api_loaded(void) {
  pthread_mutex_lock(&g_lock);
  const ruda__nvrtc_api_t *api = g_nvrtc_tried && !g_nvrtc_error ? &g_nvrtc : NULL;
  pthread_mutex_unlock(&g_lock);
  return api;
}

ruda_status_t ruda__nvrtc_api_get(const ruda__nvrtc_api_t **out) {
  pthread_mutex_lock(&g_lock);
  if (!g_nvrtc_tried) {
    g_nvrtc_error = load_nvrtc_locked();
    g_nvrtc_tried = true;
  }
  ruda_status_t s = g_nvrtc_error ? ruda_status_clone(g_nvrtc_error) : NULL;
  pthread_mutex_unlock(&g_lock);
  *out = s ? NULL : &g_nvrtc;
  return s;
}

#endif /* RUDA_HAVE_CUDA_HEADERS */

void ruda__cuda_loader_test_override(const char *libcuda, const char *libnvrtc) {
  pthread_mutex_lock(&g_lock);
  g_has_override_cuda = libcuda != NULL;
  g_has_override_nvrtc = libnvrtc != NULL;
  snprintf(g_override_cuda, sizeof g_override_cuda, "%s", libcuda ? libcuda : "");
  snprintf(g_override_nvrtc, sizeof g_override_nvrtc, "%s", libnvrtc ? libnvrtc : "");
#if defined(RUDA_HAVE_CUDA_HEADERS)
  /* The old tables stay mapped (servers may still point at them); only the
   * cached result is forgotten. */
  g_cuda_tried = false;
  ruda_status_free(g_cuda_error);
  g_cuda_error = NULL;
  g_nvrtc_tried = false;
  ruda_status_free(g_nvrtc_error);
  g_nvrtc_error = NULL;
#endif
  pthread_mutex_unlock(&g_lock);
}
