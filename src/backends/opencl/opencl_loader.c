/* Loads the OpenCL ICD loader (libOpenCL.so.1) with dlopen() and fills the
 * symbol table of opencl_symbols.h. One binary runs with or without it: a
 * missing library is RUDA_ERR_UNAVAILABLE naming every file name that was
 * tried, never a link failure or a crash.
 *
 * The load goes through the run-time library loader (base/dynlib.h): once
 * per process, on first use; the result (the table or the error) is kept
 * until process exit.
 * ruda__opencl_loader_forget() (behind the test hook
 * ruda__opencl_loader_test_override() of opencl_device.c, which also
 * forgets the device list) lets a test load again from another name.
 *
 * The bottom of the backend: it calls nothing of the backend above it.
 */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "base/dynlib.h"

/* The test override's name ("" : none), written under the load's lock. */
static char g_override[512];

#if defined(RUDA_HAVE_OPENCL_HEADERS)

static ruda__dynlib_once_t g_once = RUDA__DYNLIB_ONCE_INIT;
static ruda__dynlib_t g_lib;
static ruda__opencl_api_t g_api;

#define RUDA__DYNLIB_TABLE ruda__opencl_api_t
static const ruda__dynlib_symbol_t g_symbols[] = {RUDA__CL_SYMBOLS(RUDA__DYNLIB_SYMBOL)};
#undef RUDA__DYNLIB_TABLE

static ruda_status_t load(void) {
  static const char *const defaults[] = {"libOpenCL.so.1", "libOpenCL.so"};
  const char *single[1];
  const char *const *names;
  size_t n = ruda__dynlib_candidates(g_override, "RUDA_OPENCL_LIBRARY", defaults,
                                     sizeof defaults / sizeof defaults[0], single, &names);
  if (!ruda__dynlib_open(&g_lib, names, n))
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "OpenCL is unavailable: the OpenCL ICD loader could not be "
                              "loaded (looked for %s)",
                              g_lib.tried);
  ruda__opencl_api_t api;
  memset(&api, 0, sizeof api);
  api.lib = g_lib.handle;
  api.lib_name = g_lib.name;
  const char *missing =
      ruda__dynlib_resolve(&g_lib, g_symbols, sizeof g_symbols / sizeof g_symbols[0], &api);
  if (missing) {
    ruda__dynlib_close(&g_lib);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "OpenCL is unavailable: %s has no symbol %s (an OpenCL 1.2 "
                              "loader or newer is needed)",
                              g_lib.name, missing);
  }
  if (api.clCreateCommandQueueWithProperties == NULL && api.clCreateCommandQueue == NULL) {
    ruda__dynlib_close(&g_lib);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "OpenCL is unavailable: %s has neither "
                              "clCreateCommandQueueWithProperties nor clCreateCommandQueue",
                              g_lib.name);
  }
  g_api = api;
  return NULL;
}

ruda_status_t ruda__opencl_api_get(const ruda__opencl_api_t **out) {
  ruda_status_t s = ruda__dynlib_once(&g_once, load);
  *out = s ? NULL : &g_api;
  return s;
}

static void set_override(void *lib) {
  snprintf(g_override, sizeof g_override, "%s", lib ? (const char *)lib : "");
}

void ruda__opencl_loader_forget(const char *lib) {
  /* The old table stays mapped (servers may still point at it); only the
   * cached result is forgotten. */
  ruda__dynlib_once_forget(&g_once, set_override, (void *)lib);
}

#else /* RUDA_HAVE_OPENCL_HEADERS */

void ruda__opencl_loader_forget(const char *lib) { (void)lib; }

#endif /* RUDA_HAVE_OPENCL_HEADERS */
