/* The one place where ncclResult_t becomes a ruda error: the error keeps
 * NCCL's name for the code, the code and the call that failed
 * (ruda_status_set_vendor), with NCCL's description and last error when
 * the library is loaded: "ncclCommInitRankConfig failed with
 * ncclInvalidUsage (5): ...". */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda/nccl_errors.h"
#include "base/vendor_error.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

static const char *nccl_result_name(ncclResult_t r) {
  switch (r) {
    RUDA__CASE_NAME(ncclSuccess)
    RUDA__CASE_NAME(ncclUnhandledCudaError)
    RUDA__CASE_NAME(ncclSystemError)
    RUDA__CASE_NAME(ncclInternalError)
    RUDA__CASE_NAME(ncclInvalidArgument)
    RUDA__CASE_NAME(ncclInvalidUsage)
    RUDA__CASE_NAME(ncclRemoteError)
    RUDA__CASE_NAME(ncclInProgress)
    default: return "ncclResult_unknown";
  }
}

ruda_status_t ruda__nccl_error(ruda_error_kind_t kind, ncclResult_t r, const char *call,
                               const char *context_fmt, ...) {
  const char *text = "no description";
  const char *last = NULL;
  const ruda__nccl_api_t *api = ruda__nccl_api_loaded();
  if (api) {
    if (api->ncclGetErrorString) text = api->ncclGetErrorString(r);
    if (api->ncclGetLastError) last = api->ncclGetLastError(NULL);
  }
  bool has_last = last && last[0];
  char description[768];
  snprintf(description, sizeof description, "%s%s%s%s", text ? text : "", has_last ? " (" : "",
           has_last ? last : "", has_last ? ")" : "");
  va_list ap;
  va_start(ap, context_fmt);
  ruda_status_t s = ruda__vendor_errorv(kind, call, nccl_result_name(r), (int64_t)r, description,
                                        context_fmt, ap);
  va_end(ap);
  return s;
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
