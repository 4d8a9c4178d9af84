/* Fault reports of the OpenCL server (opencl_fault.c): the error of a
 * command that failed on the device, naming the kernels launched on its
 * stream since the last sync (server/recent_kernels.h), (an event whose status is an error
 * code), found by waiting for its event.
 *
 * The backend keeps no poison state: a failed command fails its event, and
 * the wait that sees it reports it. A fault that ends the context marks
 * the device lost in the server layer (server.h), which makes every
 * stream fail; so nothing is settled at the vtable's entries, and this
 * module builds errors and notes losses. The lowest module of the
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
 * code as the vendor code) naming the kernels of `recent`; a fault that
 * ends the context also marks `loss` (ruda__ocl_fault_note). */
ruda_status_t ruda__ocl_event_error(const ruda__opencl_api_t *api, cl_event ev,
                                    const ruda__recent_kernels_t *recent,
                                    ruda__device_loss_t *loss);

/* ---- Device loss (docs/errors.md) ---- */

/* NVIDIA's code for a kernel fault: from a command's execution, and from
 * every clCreateContext of the process after one (the context cannot be
 * made again: the device stays lost until the process exits). */
#define RUDA__CL_NV_KERNEL_FAULT (-9999)

/* A command failed on the device with `code` (any thread): where the code
 * says the context is gone (CL_OUT_OF_RESOURCES or CL_INVALID_COMMAND_QUEUE
 * from a command's execution, RUDA__CL_NV_KERNEL_FAULT), the device is lost
 * (ruda__device_loss_mark on `loss`, which may be NULL). */
void ruda__ocl_fault_note(ruda__device_loss_t *loss, cl_int code, const char *kernels);
/* Consumes the fault ruda__opencl_test_inject_fault asked for: NULL, or
 * the error of kernel `name` failing (the device is then lost). */
ruda_status_t ruda__ocl_fault_injected(ruda__device_loss_t *loss, const char *name);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_FAULT_H */
