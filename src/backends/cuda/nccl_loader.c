/* NCCL's loader: libnccl.so.2 (then libnccl.so and the toolkit's lib and
 * lib64; RUDA_NCCL_LIBRARY names another file) dlopen()ed once per process
 * on the first collective, and its entry points looked up from the
 * RUDA__NCCL_SYMBOLS table of cuda_symbols.h. A missing library or a
 * missing required symbol makes the collectives answer
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, nothing else. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/nccl_loader.h"

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

const ruda__nccl_api_t *ruda__nccl_api_loaded(void) {
  pthread_mutex_lock(&g_lock);
  const ruda__nccl_api_t *api = g_tried && !g_error ? &g_api : NULL;
  pthread_mutex_unlock(&g_lock);
  return api;
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
