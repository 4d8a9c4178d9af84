/* NCCL's error translation (nccl_errors.c): the one place where an
 * ncclResult_t becomes a ruda error, keeping NCCL's name for the code and
 * the failing call.
 */
#ifndef RUDA_NCCL_ERRORS_H
#define RUDA_NCCL_ERRORS_H

#include "backends/cuda/nccl_loader.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

#include "ruda/status.h"

/* An error of `kind` for ncclResult_t `r` returned by `call`, keeping
 * NCCL's name and text; `context_fmt` (printf, may be NULL) says what was
 * being done. */
ruda_status_t ruda__nccl_error(ruda_error_kind_t kind, ncclResult_t r, const char *call,
                               const char *context_fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* RUDA_HAVE_NCCL_HEADERS */

#endif /* RUDA_NCCL_ERRORS_H */
