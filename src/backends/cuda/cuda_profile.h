/* Profiles of the CUDA server (cuda_profile.c): start and end of a
 * device-timed profile on a stream, and what a device reset does to the
 * open ones. The vtable entries (cuda_server.c) settle faults before
 * calling them; these settle nothing. Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_PROFILE_H
#define RUDA_CUDA_PROFILE_H

#include "backends/cuda/cuda_types.h"
#include "server/device_profile.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

ruda_status_t ruda__cuda_start_profile(cuda_server_t *s, ruda_stream_id_t stream,
                                       ruda_profiling_token_t *out);
/* The clock that ends a profile (server/device_profile.h; its context the
 * cuda_server_t): the device time between the start event and one
 * recorded at the end, a fault seen while waiting for it reported. */
extern const ruda__device_clock_t ruda__cuda_profile_clock;
/* A stream-table visitor for after a device reset: the open profiles of
 * `rs` lose their start events (they went with the context) and will
 * report that they were interrupted. */
void ruda__cuda_profiles_forget(void *ctx, ruda__stream_t *rs);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_PROFILE_H */
