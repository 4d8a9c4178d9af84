/* Fault reports of the OpenCL server (opencl_fault.c): the error of a
 * command that failed on the device, naming the kernels launched on its
 * stream since the last sync (server/recent_kernels.h), (an event whose status is an error
 * code), found by waiting for its event.
 *
 * The backend keeps no poison state: a failed command fails its event, and
 * the wait that sees it reports it. So nothing is settled at the vtable's
 * entries, and this module only builds errors. The lowest module of the
 * server: anything may call it, it calls nothing above it. Only built with
 * the OpenCL headers.
 */
#ifndef RUDA_OPENCL_FAULT_H
#define RUDA_OPENCL_FAULT_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* The error for a command of the stream that failed on the device (an
 * event with a negative status, or a failed wait). */
ruda_status_t ruda__ocl_fault_error(cl_int code, const char *call, const char *kernels) RUDA__COLD;

/* Waits for `ev` (any thread): NULL when it completed, else the fault
 * error (ServerError::Launch(LaunchError::Unknown) with the event's error
 * code as the vendor code) naming the kernels of `recent`. */
ruda_status_t ruda__ocl_event_error(const ruda__opencl_api_t *api, cl_event ev,
                                    const ruda__recent_kernels_t *recent);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_FAULT_H */
