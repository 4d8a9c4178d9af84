/* Loads the CUDA driver (libcuda.so.1) and NVRTC through the run-time
 * library loader (base/dynlib.h) and fills the symbol tables of
 * cuda_symbols.h. One binary runs with or without them: a missing library
 * is RUDA_ERR_UNAVAILABLE naming every file name that was tried and why it
 * failed, never a link failure or a crash.
 *
 * Both loads happen once per process, on first use; the result (the table
 * or the error) is kept until process exit. The test hook
 * ruda__cuda_loader_test_override() forgets it so a test can load again
 * from an absent name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"
#include "base/dynlib.h"

/* The test override's names ("" : none), written under both loads' locks
 * (ruda__cuda_loader_test_override), read by the loads under theirs. */
static char g_override_cuda[256];
static char g_override_nvrtc[256];

#if defined(RUDA_HAVE_CUDA_HEADERS)

static ruda__dynlib_once_t g_cuda_once = RUDA__DYNLIB_ONCE_INIT;
static ruda__cuda_api_t g_cuda;
static ruda__dynlib_once_t g_nvrtc_once = RUDA__DYNLIB_ONCE_INIT;
static ruda__nvrtc_api_t g_nvrtc;

#define CU_SYMBOL(fn, required) RUDA__DYNLIB_SYMBOL(ruda__cuda_api_t, fn, required)
#define NVRTC_SYMBOL(fn, required) RUDA__DYNLIB_SYMBOL(ruda__nvrtc_api_t, fn, required)
static const ruda__dynlib_symbol_t g_cu_symbols[] = {RUDA__CU_SYMBOLS(CU_SYMBOL)};
static const ruda__dynlib_symbol_t g_nvrtc_symbols[] = {RUDA__NVRTC_SYMBOLS(NVRTC_SYMBOL)};

/* The driver's entry points, then cuInit: a driver present but unusable
 * (no device, driver/kernel module mismatch) is unavailable too, keeping
 * the vendor's code. */
static ruda_status_t init_cuda(const ruda__dynlib_t *lib, void *table) {
  ruda__cuda_api_t *api = table;
  CUresult r = api->cuInit(0);
  if (r == CUDA_SUCCESS) {
    int v = 0;
    if (api->cuDriverGetVersion(&v) == CUDA_SUCCESS) api->driver_version = v;
    return NULL;
  }
  const char *en = NULL;
  if (api->cuGetErrorName(r, &en) != CUDA_SUCCESS || en == NULL) en = "CUDA_ERROR_UNKNOWN";
  ruda_status_t s = ruda_status_create(RUDA_ERR_UNAVAILABLE,
                                       "CUDA is unavailable: cuInit failed with %s (%d) "
                                       "(driver library %s)",
                                       en, (int)r, lib->name);
  return ruda_status_set_vendor(s, "cuInit", en, (int64_t)r);
}

static const char *const g_cuda_names[] = {"libcuda.so.1", "libcuda.so"};
static const ruda__dynlib_spec_t g_cuda_spec = {
    RUDA_ERR_UNAVAILABLE, "CUDA is unavailable: ", "the CUDA driver library", "",
    " (driver too old?)", "RUDA_CUDA_DRIVER_LIBRARY", g_cuda_names,
    sizeof g_cuda_names / sizeof g_cuda_names[0], g_cu_symbols,
    sizeof g_cu_symbols / sizeof g_cu_symbols[0], init_cuda};

ruda_status_t ruda__cuda_api_get(const ruda__cuda_api_t **out) {
  ruda_status_t s =
      ruda__dynlib_once_spec(&g_cuda_once, &g_cuda_spec, g_override_cuda, &g_cuda, sizeof g_cuda);
  *out = s ? NULL : &g_cuda;
  return s;
}

static ruda_status_t nvrtc_version(const ruda__dynlib_t *lib, void *table) {
  ruda__nvrtc_api_t *api = table;
  if (api->nvrtcVersion(&api->major, &api->minor) != NVRTC_SUCCESS) api->major = api->minor = 0;
  return NULL;
}

/* The candidates depend on CUDA_PATH, read when the load runs. */
static ruda_status_t load_nvrtc(ruda__dynlib_t *lib) {
  char p1[512], p2[512];
  const char *cuda_path = getenv("CUDA_PATH");
  snprintf(p1, sizeof p1, "%s/lib64/libnvrtc.so.13",
           cuda_path && cuda_path[0] ? cuda_path : "/usr/local/cuda");
  snprintf(p2, sizeof p2, "%s/lib64/libnvrtc.so.12",
           cuda_path && cuda_path[0] ? cuda_path : "/usr/local/cuda");
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2",
                         "libnvrtc.so", p1, p2};
  const ruda__dynlib_spec_t spec = {
      RUDA_ERR_UNAVAILABLE, "NVRTC is unavailable: ", "the CUDA runtime compiler",
      "; CUDA C kernels cannot be compiled, PTX and CUBIN kernels still load", "",
      "RUDA_NVRTC_LIBRARY", names, sizeof names / sizeof names[0], g_nvrtc_symbols,
      sizeof g_nvrtc_symbols / sizeof g_nvrtc_symbols[0], nvrtc_version};
  return ruda__dynlib_load_spec(lib, &spec, g_override_nvrtc, &g_nvrtc, sizeof g_nvrtc);
}

const ruda__nvrtc_api_t *ruda__nvrtc_api_loaded(void) {
  return ruda__dynlib_once_loaded(&g_nvrtc_once) ? &g_nvrtc : NULL;
}

ruda_status_t ruda__nvrtc_api_get(const ruda__nvrtc_api_t **out) {
  ruda_status_t s = ruda__dynlib_once(&g_nvrtc_once, load_nvrtc);
  *out = s ? NULL : &g_nvrtc;
  return s;
}

static void set_override(void *ctx) {
  const char *const *names = ctx;
  snprintf(g_override_cuda, sizeof g_override_cuda, "%s", names[0] ? names[0] : "");
  snprintf(g_override_nvrtc, sizeof g_override_nvrtc, "%s", names[1] ? names[1] : "");
}

void ruda__cuda_loader_test_override(const char *libcuda, const char *libnvrtc) {
  /* The old tables stay mapped (servers may still point at them); only the
   * cached results are forgotten. The names change under both locks. */
  const char *names[2] = {libcuda, libnvrtc};
  pthread_mutex_lock(&g_nvrtc_once.lock);
  ruda__dynlib_once_forget(&g_cuda_once, set_override, names);
  pthread_mutex_unlock(&g_nvrtc_once.lock);
  ruda__dynlib_once_forget(&g_nvrtc_once, NULL, NULL);
}

#else /* RUDA_HAVE_CUDA_HEADERS */

void ruda__cuda_loader_test_override(const char *libcuda, const char *libnvrtc) {
  (void)libcuda;
  (void)libnvrtc;
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
