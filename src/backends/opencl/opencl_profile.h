/* Profiles of the OpenCL server (opencl_profile.c), of the vtable's
 * types (src/server/server.h). Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_PROFILE_H
#define RUDA_OPENCL_PROFILE_H

#include "backends/opencl/opencl_types.h"
#include "server/device_profile.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

ruda__server_start_profile_fn ruda__ocl_start_profile;
/* The clock that ends a profile (server/device_profile.h; its context the
 * ocl_server_t): the device time between the start marker's end timestamp
 * and one enqueued at the end. */
extern const ruda__device_clock_t ruda__ocl_profile_clock;

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_PROFILE_H */
