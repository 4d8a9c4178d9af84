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

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_LAUNCH_H */
