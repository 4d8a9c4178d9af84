/* NCCL's loader: libnccl.so.2 (then libnccl.so and the toolkit's lib and
 * lib64; RUDA_NCCL_LIBRARY names another file) loaded once per process on
 * the first collective through the run-time library loader
 * (base/dynlib.h), and its entry points looked up from the
 * RUDA__NCCL_SYMBOLS table of cuda_symbols.h. A missing library or a
 * missing required symbol makes the collectives answer
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, nothing else. */
#include <stddef.h>
#include <string.h>

#include "backends/cuda/nccl_loader.h"
#include "base/dynlib.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

static ruda__dynlib_once_t g_once = RUDA__DYNLIB_ONCE_INIT;
static ruda__nccl_api_t g_api;

#define NCCL_SYMBOL(fn, required) RUDA__DYNLIB_SYMBOL(ruda__nccl_api_t, fn, required)
static const ruda__dynlib_symbol_t g_symbols[] = {RUDA__NCCL_SYMBOLS(NCCL_SYMBOL)};

static const char *const g_names[] = {"libnccl.so.2", "libnccl.so",
                                     "/usr/local/cuda/lib/libnccl.so.2",
                                     "/usr/local/cuda/lib64/libnccl.so.2"};
static ruda_status_t nccl_version(const ruda__dynlib_t *lib, void *table) {
  ruda__nccl_api_t *api = table;
  if (api->ncclGetVersion(&api->version) != ncclSuccess) api->version = 0;
  return NULL;
}

static const ruda__dynlib_spec_t g_spec = {
    RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, "collectives on CUDA need NCCL: ", "NCCL",
    "; RUDA_NCCL_LIBRARY names another file", " (too old?)", "RUDA_NCCL_LIBRARY", g_names,
    sizeof g_names / sizeof g_names[0], g_symbols, sizeof g_symbols / sizeof g_symbols[0],
    nccl_version};

ruda_status_t ruda__nccl_api_get(const ruda__nccl_api_t **out) {
  ruda_status_t s = ruda__dynlib_once_spec(&g_once, &g_spec, NULL, &g_api, sizeof g_api);
  *out = s ? NULL : &g_api;
  return s;
}

const ruda__nccl_api_t *ruda__nccl_api_loaded(void) {
  return ruda__dynlib_once_loaded(&g_once) ? &g_api : NULL;
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
