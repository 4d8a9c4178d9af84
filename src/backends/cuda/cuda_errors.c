/* The one place where CUresult and nvrtcResult become ruda errors.
 *
 * Every translated error keeps the vendor's name for the code and the call
 * that failed (ruda_status_set_vendor), so a user sees
 * "cuMemAlloc_v2 failed with CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
 * Also the backend's log helpers, which need no CUDA headers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"
#include "base/alloc.h"
#include "base/vendor_error.h"

static bool log_enabled(const char *channel) {
  const char *v = getenv("RUDA_LOG");
  if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0) return false;
  if (strcmp(v, "1") == 0 || strcmp(v, "all") == 0) return true;
  return strstr(v, channel) != NULL;
}

void ruda__cuda_log(const char *channel, const char *fmt, ...) {
  if (!log_enabled(channel)) return;
  char who[64];
  snprintf(who, sizeof who, "cuda:%s", channel);
  va_list ap;
  va_start(ap, fmt);
  ruda__stderr_linev(who, "", fmt, ap);
  va_end(ap);
}

#if !defined(RUDA_HAVE_CUDA_HEADERS)

ruda_status_t ruda__cuda_nvrtc_probe(void) {
  return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                            "NVRTC is unavailable: ruda was built without the CUDA headers");
}

ruda_status_t ruda__cuda_test_alloc_error(int code, const char *call, uint64_t size) {
  (void)code;
  (void)call;
  (void)size;
  return NULL;
}

#else

ruda_status_t ruda__cuda_nvrtc_probe(void) {
  const ruda__nvrtc_api_t *api = NULL;
  return ruda__nvrtc_api_get(&api);
}

ruda_status_t ruda__cuda_test_alloc_error(int code, const char *call, uint64_t size) {
  return ruda__cu_alloc_error((CUresult)code, call, size);
}

/* Names of the codes a user meets most, for when the driver itself could
 * not be loaded (cuGetErrorName needs it). */
static const char *builtin_name(CUresult r) {
  switch (r) {
    RUDA__CASE_NAME(CUDA_SUCCESS)
    RUDA__CASE_NAME(CUDA_ERROR_INVALID_VALUE)
    RUDA__CASE_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    RUDA__CASE_NAME(CUDA_ERROR_NOT_INITIALIZED)
    RUDA__CASE_NAME(CUDA_ERROR_NO_DEVICE)
    RUDA__CASE_NAME(CUDA_ERROR_INVALID_DEVICE)
    RUDA__CASE_NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    RUDA__CASE_NAME(CUDA_ERROR_LAUNCH_FAILED)
    RUDA__CASE_NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    RUDA__CASE_NAME(CUDA_ERROR_NOT_FOUND)
    RUDA__CASE_NAME(CUDA_ERROR_NOT_READY)
    RUDA__CASE_NAME(CUDA_ERROR_INVALID_IMAGE)
    RUDA__CASE_NAME(CUDA_ERROR_INVALID_PTX)
    default: return "CUDA_ERROR_UNKNOWN_CODE";
  }
}

const char *ruda__cu_result_name(CUresult r) {
  const ruda__cuda_api_t *api = NULL;
  ruda_status_t s = ruda__cuda_api_get(&api);
  if (s != NULL) {
    ruda_status_free(s);
    return builtin_name(r);
  }
  const char *name = NULL;
  if (api->cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) return builtin_name(r);
  return name;
}

static const char *cu_result_text(CUresult r) {
  const ruda__cuda_api_t *api = NULL;
  ruda_status_t s = ruda__cuda_api_get(&api);
  if (s != NULL) {
    ruda_status_free(s);
    return "no description";
  }
  const char *text = NULL;
  if (api->cuGetErrorString(r, &text) != CUDA_SUCCESS || text == NULL)
    return "no description";
  return text;
}

ruda_status_t ruda__cu_error(ruda_error_kind_t kind, CUresult r, const char *call,
                             const char *context_fmt, ...) {
  va_list ap;
  va_start(ap, context_fmt);
  ruda_status_t s = ruda__vendor_errorv(kind, call, ruda__cu_result_name(r), (int64_t)r,
                                        cu_result_text(r), context_fmt, ap);
  va_end(ap);
  return s;
}

ruda_status_t ruda__cu_alloc_error(CUresult r, const char *call, uint64_t size) {
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    ruda_status_t s = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
    return ruda_status_set_vendor(s, call, "CUDA_ERROR_OUT_OF_MEMORY", (int64_t)r);
  }
  return ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, call, "allocating %llu bytes",
                        (unsigned long long)size);
}

ruda_status_t ruda__nvrtc_error(ruda_error_kind_t kind, nvrtcResult r, const char *call,
                                const char *context_fmt, ...) {
  const ruda__nvrtc_api_t *api = NULL;
  const char *name = "NVRTC_ERROR";
  ruda_status_t ls = ruda__nvrtc_api_get(&api);
  if (ls == NULL) {
    const char *n = api->nvrtcGetErrorString(r);
    if (n != NULL) name = n;
  }
  ruda_status_free(ls);
  va_list ap;
  va_start(ap, context_fmt);
  ruda_status_t s = ruda__vendor_errorv(kind, call, name, (int64_t)r, "NVRTC call failed",
                                        context_fmt, ap);
  va_end(ap);
  return s;
}

bool ruda__cu_result_is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return true;
    default:
      return false;
  }
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
