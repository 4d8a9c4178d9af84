/* The one place where cl_int codes become ruda errors.
 *
 * Every translated error keeps the vendor's name for the code and the call
 * that failed (ruda_status_set_vendor), so a user reads
 * "clCreateBuffer failed with CL_MEM_OBJECT_ALLOCATION_FAILURE (-4): ...".
 * Also the backend's log helpers, which need no OpenCL headers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "base/vendor_error.h"
#include "ruda/log.h"

static ruda_log_channel_t channel_of(const char *name) {
  if (strcmp(name, "compilation") == 0) return RUDA_LOG_CHANNEL_COMPILATION;
  if (strcmp(name, "memory") == 0) return RUDA_LOG_CHANNEL_MEMORY;
  return RUDA_LOG_CHANNEL_STREAMING;
}

void ruda__opencl_log(const char *channel, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda__log_taggedv(channel_of(channel), RUDA_LOG_LEVEL_BASIC, "opencl", fmt, ap);
  va_end(ap);
}

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* Numbers rather than the header's macros: extension codes are missing from
 * older headers, and the names must not depend on which header built ruda. */
static const struct {
  int code;
  const char *name;
} names[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-69, "CL_INVALID_PIPE_SIZE"},
    {-70, "CL_INVALID_DEVICE_QUEUE"},
    {-71, "CL_INVALID_SPEC_ID"},
    {-72, "CL_MAX_SIZE_RESTRICTION_EXCEEDED"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1121, "CL_CONTEXT_TERMINATED_KHR"},
    /* NVIDIA reports a kernel's illegal memory access with this unnamed code. */
    {-9999, "CL_NV_KERNEL_FAULT"},
};

const char *ruda__cl_error_name(cl_int code) {
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].code == code) return names[i].name;
  return "CL_UNKNOWN_ERROR";
}

ruda_status_t ruda__cl_error(ruda_error_kind_t kind, cl_int code, const char *call,
                             const char *context_fmt, ...) {
  va_list ap;
  va_start(ap, context_fmt);
  ruda_status_t s = ruda__vendor_errorv(kind, call, ruda__cl_error_name(code), (int64_t)code,
                                        NULL, context_fmt, ap);
  va_end(ap);
  return s;
}

ruda_status_t ruda__cl_alloc_error(cl_int code, const char *call, uint64_t size) {
  ruda_error_kind_t kind = RUDA_ERR_IO_UNKNOWN;
  if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
      code == CL_OUT_OF_HOST_MEMORY)
    kind = RUDA_ERR_IO_OUT_OF_MEMORY;
  else if (code == CL_INVALID_BUFFER_SIZE)
    kind = RUDA_ERR_IO_BUFFER_TOO_BIG;
  if (kind == RUDA_ERR_IO_UNKNOWN)
    return ruda__cl_error(kind, code, call, "allocating %llu bytes", (unsigned long long)size);
  ruda_status_t s = ruda_status_size(kind, size);
  return ruda_status_set_vendor(s, call, ruda__cl_error_name(code), (int64_t)code);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
