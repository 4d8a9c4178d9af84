/* The one place where ncclResult_t becomes a ruda error: the error keeps
 * NCCL's name for the code, the code and the call that failed
 * (ruda_status_set_vendor), with NCCL's description and last error when
 * the library is loaded: "ncclCommInitRankConfig failed with
 * ncclInvalidUsage (5): ...". */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends/cuda/nccl_errors.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

static const char *nccl_result_name(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
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
  char context[512];
  context[0] = '\0';
  if (context_fmt) {
    va_list ap;
    va_start(ap, context_fmt);
    vsnprintf(context, sizeof context, context_fmt, ap);
    va_end(ap);
  }
  bool has_last = last && last[0];
  ruda_status_t s = ruda_status_create(kind, "%s failed with %s (%d): %s%s%s%s%s%s", call,
                                       nccl_result_name(r), (int)r, text ? text : "",
                                       has_last ? " (" : "", has_last ? last : "",
                                       has_last ? ")" : "", context[0] ? ": " : "", context);
  return ruda_status_set_vendor(s, call, nccl_result_name(r), (int64_t)r);
}

#endif /* RUDA_HAVE_NCCL_HEADERS */
