/* NCCL's loader (nccl_loader.c): whether the build has the NCCL headers
 * (RUDA_HAVE_NCCL_HEADERS, found next to the CUDA headers), the table of
 * NCCL entry points, and its one load per process. Its codes are
 * translated in nccl_errors.c; the collectives are cuda_nccl.c's.
 */
#ifndef RUDA_NCCL_LOADER_H
#define RUDA_NCCL_LOADER_H

#if defined(RUDA_HAVE_CUDA_HEADERS) && defined(__has_include)
#if __has_include(<nccl.h>)
#define RUDA_HAVE_NCCL_HEADERS 1
#endif
#endif

#if defined(RUDA_HAVE_NCCL_HEADERS)

/* nccl.h declares a few functions without a prototype (f()). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "backends/cuda/cuda_symbols.h"
#include "base/dynlib.h"
#include "ruda/status.h"

typedef struct ruda__nccl_api {
  ruda__dynlib_head_t head; /* first: base/dynlib.h's loader fills it */
  int version;
  RUDA__NCCL_SYMBOLS(RUDA__DYNLIB_FIELD)
} ruda__nccl_api_t;

/* The NCCL table, loaded once per process. Thread-safe. Errors:
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION naming every file tried. */
ruda_status_t ruda__nccl_api_get(const ruda__nccl_api_t **out);

/* The table when a load already succeeded, else NULL; never loads (the
 * error translation uses it for NCCL's own texts). */
const ruda__nccl_api_t *ruda__nccl_api_loaded(void);

#endif /* RUDA_HAVE_NCCL_HEADERS */

#endif /* RUDA_NCCL_LOADER_H */
