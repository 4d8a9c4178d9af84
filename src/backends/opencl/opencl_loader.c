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
#include <stddef.h>
#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "base/dynlib.h"

/* The test override's name ("" : none), written under the load's lock. */
static char g_override[512];

#if defined(RUDA_HAVE_OPENCL_HEADERS)

static ruda__dynlib_once_t g_once = RUDA__DYNLIB_ONCE_INIT;
static ruda__opencl_api_t g_api;

#define CL_SYMBOL(fn, required) RUDA__DYNLIB_SYMBOL(ruda__opencl_api_t, fn, required)
static const ruda__dynlib_symbol_t g_symbols[] = {RUDA__CL_SYMBOLS(CL_SYMBOL)};

/* Either way of making a queue will do (OpenCL 2.0's or 1.2's). */
static ruda_status_t has_queue(const ruda__dynlib_t *lib, void *table) {
  const ruda__opencl_api_t *api = table;
  if (api->clCreateCommandQueueWithProperties != NULL || api->clCreateCommandQueue != NULL)
    return NULL;
  return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                            "OpenCL is unavailable: %s has neither "
                            "clCreateCommandQueueWithProperties nor clCreateCommandQueue",
                            lib->name);
}

static const char *const g_names[] = {"libOpenCL.so.1", "libOpenCL.so"};
static const ruda__dynlib_spec_t g_spec = {
    RUDA_ERR_UNAVAILABLE, "OpenCL is unavailable: ", "the OpenCL ICD loader", "",
    " (an OpenCL 1.2 loader or newer is needed)", "RUDA_OPENCL_LIBRARY", g_names,
    sizeof g_names / sizeof g_names[0], g_symbols,
    sizeof g_symbols / sizeof g_symbols[0], has_queue};

ruda_status_t ruda__opencl_api_get(const ruda__opencl_api_t **out) {
  ruda_status_t s = ruda__dynlib_once_spec(&g_once, &g_spec, g_override, &g_api, sizeof g_api);
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
