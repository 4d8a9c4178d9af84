/* Kernel launches of the OpenCL server (opencl_launch.c): the device
 * calls of the server layer's launch pipeline (server/stream_op.h). Only
 * built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_LAUNCH_H
#define RUDA_OPENCL_LAUNCH_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* The pipeline's `launch` (`backend` is the server): the program, checks
 * against the built kernel, a dynamic count read and checked, the
 * arguments and info words set, the kernel enqueued. Errors
 * are returned (the pipeline queues them). */
ruda_status_t ruda__ocl_launch(void *backend, const ruda__launch_ctx_t *ctx);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_LAUNCH_H */
