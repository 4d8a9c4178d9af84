/* Kernel launches of the CUDA server (cuda_launch.c). The vtable entry
 * (cuda_server.c) settles faults before calling it; it settles nothing.
 * Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_LAUNCH_H
#define RUDA_CUDA_LAUNCH_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* Launches `kernel` on `stream`; errors are queued on the stream as
 * launch errors naming the kernel. */
void ruda__cuda_launch(cuda_server_t *s, ruda_kernel_t *kernel, const ruda__count_t *count,
                       const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                       ruda_stream_id_t stream);

/* The driver call of a launch: resolves the buffers and tensor maps of
 * `args` (in the documented order, then `info`, the device address of the
 * info words or 0), sets the function's shared-memory limit when the
 * kernel needs more than 48 KiB, and launches `fn` with `grid` on `cu`
 * (a stream that may be capturing a graph). Orders nothing, traces
 * nothing; a sticky driver error poisons the server. Errors are returned
 * (RUDA_ERR_LAUNCH_UNKNOWN naming the driver call, IoError::NotFound for
 * a buffer not bound here). */
ruda_status_t ruda__cuda_launch_on(cuda_server_t *s, CUstream cu, ruda__cuda_function_t *fn,
                                   const ruda_kernel_desc_t *d, ruda_count3_t grid,
                                   const ruda__launch_args_t *args, CUdeviceptr info);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_LAUNCH_H */
