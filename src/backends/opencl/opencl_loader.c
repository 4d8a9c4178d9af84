/* Loads the OpenCL ICD loader (libOpenCL.so.1) with dlopen() and fills the
 * symbol table of opencl_symbols.h. One binary runs with or without it: a
 * missing library is RUDA_ERR_UNAVAILABLE naming every file name that was
 * tried, never a link failure or a crash.
 *
 * The load happens once per process, on first use, under a mutex; the
 * result (the table or the error) is kept until process exit.
 * ruda__opencl_loader_forget() (behind the test hook
 * ruda__opencl_loader_test_override() of opencl_device.c, which also
 * forgets the device list) lets a test load again from another name.
 *
 * The bottom of the backend: it calls nothing of the backend above it.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "base/alloc.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_override[512];
static bool g_has_override;

#if defined(RUDA_HAVE_OPENCL_HEADERS)

#define RUDA__STR_(x) #x
#define RUDA__STR(x) RUDA__STR_(x)

static bool g_tried;
static ruda_status_t g_error; /* kept; callers get clones */
static ruda__opencl_api_t g_api;
static char g_name[512];

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
    int w = snprintf(tried + used, used < cap ? cap - used : 0, "%s%s", used ? ", " : "",
                     names[i]);
    if (w > 0) used += (size_t)w;
  }
  if (last_err != NULL && used < cap) snprintf(tried + used, cap - used, " (last error: %s)", last_err);
  return NULL;
}

/* ISO C has no conversion from void* to a function pointer; copy the bits. */
#define RUDA__SET_FN(dst, sym) memcpy(&(dst), &(sym), sizeof(dst))

static ruda_status_t load_locked(void) {
  static const char *const defaults[] = {"libOpenCL.so.1", "libOpenCL.so"};
  const char *single[1];
  const char *const *names = defaults;
  size_t n = sizeof defaults / sizeof defaults[0];
  const char *env = getenv("RUDA_OPENCL_LIBRARY");
  if (g_has_override) {
    single[0] = g_override;
    names = single;
    n = 1;
  } else if (env != NULL && env[0] != '\0') {
    single[0] = env;
    names = single;
    n = 1;
  }
  char tried[1024];
  const char *name = NULL;
  void *lib = open_first(names, n, &name, tried, sizeof tried);
  if (lib == NULL)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "OpenCL is unavailable: the OpenCL ICD loader could not be "
                              "loaded (looked for %s)",
                              tried);
  snprintf(g_name, sizeof g_name, "%s", name);
  ruda__opencl_api_t api;
  memset(&api, 0, sizeof api);
  api.lib = lib;
  api.lib_name = g_name;
#define RUDA__CL_LOAD(fn, required)                                                      \
  do {                                                                                   \
    dlerror();                                                                           \
    void *s_ = dlsym(lib, RUDA__STR(fn));                                                \
    if (s_ == NULL && (required)) {                                                      \
      dlclose(lib);                                                                      \
      return ruda_status_create(RUDA_ERR_UNAVAILABLE,                                    \
                                "OpenCL is unavailable: %s has no symbol %s (an OpenCL " \
                                "1.2 loader or newer is needed)",                        \
                                g_name, RUDA__STR(fn));                                  \
    }                                                                                    \
    if (s_ != NULL) RUDA__SET_FN(api.fn, s_);                                            \
  } while (0);
  RUDA__CL_SYMBOLS(RUDA__CL_LOAD)
#undef RUDA__CL_LOAD
  if (api.clCreateCommandQueueWithProperties == NULL && api.clCreateCommandQueue == NULL) {
    dlclose(lib);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "OpenCL is unavailable: %s has neither "
                              "clCreateCommandQueueWithProperties nor clCreateCommandQueue",
                              g_name);
  }
  g_api = api;
  return NULL;
}

ruda_status_t ruda__opencl_api_get(const ruda__opencl_api_t **out) {
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

#endif /* RUDA_HAVE_OPENCL_HEADERS */

void ruda__opencl_loader_forget(const char *lib) {
  pthread_mutex_lock(&g_lock);
  g_has_override = lib != NULL;
  snprintf(g_override, sizeof g_override, "%s", lib ? lib : "");
#if defined(RUDA_HAVE_OPENCL_HEADERS)
  /* The old table stays mapped (servers may still point at it); only the
   * cached result is forgotten. */
  g_tried = false;
  ruda_status_free(g_error);
  g_error = NULL;
#endif
  pthread_mutex_unlock(&g_lock);
}
