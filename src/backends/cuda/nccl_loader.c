/* NCCL's loader: libnccl.so.2 (then libnccl.so and the toolkit's lib and
 * lib64; RUDA_NCCL_LIBRARY names another file) loaded once per process on
 * the first collective through the run-time library loader
 * (base/dynlib.h), and its entry points looked up from the
 * RUDA__NCCL_SYMBOLS table of cuda_symbols.h. A missing library or a
 * missing required symbol makes the collectives answer
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, nothing else. */
#include <string.h>

#include "backends/cuda/nccl_loader.h"
#include "base/dynlib.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

static ruda__dynlib_once_t g_once = RUDA__DYNLIB_ONCE_INIT;
static ruda__dynlib_t g_lib;
static ruda__nccl_api_t g_api;

#define RUDA__DYNLIB_TABLE ruda__nccl_api_t
static const ruda__dynlib_symbol_t g_symbols[] = {RUDA__NCCL_SYMBOLS(RUDA__DYNLIB_SYMBOL)};
#undef RUDA__DYNLIB_TABLE

static ruda_status_t load(void) {
  static const char *const defaults[] = {"libnccl.so.2", "libnccl.so",
                                         "/usr/local/cuda/lib/libnccl.so.2",
                                         "/usr/local/cuda/lib64/libnccl.so.2"};
  const char *single[1];
  const char *const *names;
  size_t n = ruda__dynlib_candidates(NULL, "RUDA_NCCL_LIBRARY", defaults,
                                     sizeof defaults / sizeof defaults[0], single, &names);
  if (!ruda__dynlib_open(&g_lib, names, n))
    return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,
                              "collectives on CUDA need NCCL, which could not be loaded "
                              "(looked for %s; RUDA_NCCL_LIBRARY names another file)",
                              g_lib.tried);
  ruda__nccl_api_t api;
  memset(&api, 0, sizeof api);
  api.lib = g_lib.handle;
  api.lib_name = g_lib.name;
  const char *missing =
      ruda__dynlib_resolve(&g_lib, g_symbols, sizeof g_symbols / sizeof g_symbols[0], &api);
  if (missing) {
    ruda__dynlib_close(&g_lib);
    return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,
                              "NCCL (%s) has no symbol %s (too old?)", g_lib.name, missing);
  }
  if (api.ncclGetVersion(&api.version) != ncclSuccess) api.version = 0;
  g_api = api;
  return NULL;
}

ruda_status_t ruda__nccl_api_get(const ruda__nccl_api_t **out) {
  ruda_status_t s = ruda__dynlib_once(&g_once, load);
  *out = s ? NULL : &g_api;
  return s;
}

const ruda__nccl_api_t *ruda__nccl_api_loaded(void) {
  return ruda__dynlib_once_loaded(&g_once) ? &g_api : NULL;
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
