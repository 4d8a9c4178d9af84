/* Kernel launches of the CUDA server (cuda_launch.c): the device calls of
 * the server layer's launch pipeline (ruda__stream_launch). The vtable
 * entry (cuda_server.c) settles faults before the pipeline runs.
 * Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_LAUNCH_H
#define RUDA_CUDA_LAUNCH_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* The device calls of a launch the pipeline prepared (the pipeline's
 * `launch`, server/stream_op.h; `backend` is the server): the module, a
 * dynamic count read and checked, the info words uploaded, the driver
 * call. Errors are returned (the pipeline queues them and brackets the
 * call for the trace). */
ruda_status_t ruda__cuda_launch(void *backend, const ruda__launch_ctx_t *ctx);

/* The driver call of a launch: passes the buffers and tensor maps of
 * `args` at the addresses of `storage` (args->num_buffers entries, then
 * args->num_tensor_maps; in the documented order, then `info`, the device
 * address of the info words or 0), sets the function's shared-memory
 * limit when the kernel needs more than 48 KiB, and launches `fn` with
 * `grid` on `cu` (a stream that may be capturing a graph). Orders nothing,
 * traces nothing; a sticky driver error poisons the server. Errors are
 * returned (RUDA_ERR_LAUNCH_UNKNOWN naming the driver call). */
ruda_status_t ruda__cuda_launch_on(cuda_server_t *s, CUstream cu, ruda__cuda_function_t *fn,
                                   const ruda_kernel_desc_t *d, ruda_count3_t grid,
                                   const ruda__launch_args_t *args,
                                   const ruda__storage_handle_t *storage, CUdeviceptr info);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_LAUNCH_H */
