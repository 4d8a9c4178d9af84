/* Profiles of the OpenCL server (opencl_profile.c), with the vtable's
 * signatures (src/server/server.h). Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_PROFILE_H
#define RUDA_OPENCL_PROFILE_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

ruda_status_t ruda__ocl_start_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_profiling_token_t *out);
ruda_status_t ruda__ocl_end_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                    ruda_profiling_token_t token, ruda_profile_duration_t *out);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_PROFILE_H */
