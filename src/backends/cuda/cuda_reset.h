/* The device reset after a fault (cuda_reset.c), above every module but
 * the vtable. Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_RESET_H
#define RUDA_CUDA_RESET_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* After a fault: drops every stream's CUDA part, module and allocation,
 * resets the primary context and probes it (a stream and a small
 * allocation), then records the outcome in the fault state
 * (ruda__cuda_fault_reset_done: healthy again, or the device is lost).
 * Descriptors bound before become unbound (their lookups give NotFound);
 * errors queued on streams are kept. Worker thread. */
void ruda__cuda_reset_device(cuda_server_t *s);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_RESET_H */
