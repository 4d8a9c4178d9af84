/* `ruda kernels check`: building portable kernels for OpenCL without the
 * OpenCL backend (tools/kernel_check_opencl.c). Not thread-safe. */
#ifndef RUDA_TOOLS_KERNEL_CHECK_H
#define RUDA_TOOLS_KERNEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ruda_tools_opencl ruda_tools_opencl_t;

/* Opens OpenCL device `index` (counted across every platform, in the ICD
 * loader's order). NULL with the reason in `why` when the loader, a
 * platform or the device is missing. */
ruda_tools_opencl_t *ruda_tools_opencl_open(unsigned index, char *why, size_t cap);
/* "opencl:0 <device> (<platform>, <version>)". */
const char *ruda_tools_opencl_name(const ruda_tools_opencl_t *o);
/* Builds `source` for the device; true on success. *out_log is the build
 * log (malloc'ed; may be NULL when empty). */
bool ruda_tools_opencl_build(ruda_tools_opencl_t *o, const char *source, size_t len,
                             char **out_log);
void ruda_tools_opencl_close(ruda_tools_opencl_t *o);

#endif
