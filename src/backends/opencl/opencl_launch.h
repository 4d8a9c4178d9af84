/* Kernel launches of the OpenCL server (opencl_launch.c), with the
 * vtable's signature (src/server/server.h). Only built with the OpenCL
 * headers.
 */
#ifndef RUDA_OPENCL_LAUNCH_H
#define RUDA_OPENCL_LAUNCH_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

void ruda__ocl_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                      const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                      ruda_stream_id_t stream);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_LAUNCH_H */
