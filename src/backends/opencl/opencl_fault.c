/* Fault reports of the OpenCL server (opencl_fault.h): the kernel names of
 * a stream's recent launches, and the errors of commands that failed on
 * the device. Called from any module and, for waiting on an event, from
 * any thread (futures); calls only the error translation below it. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl_fault.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

ruda_status_t ruda__ocl_fault_error(cl_int code, const char *call, const char *kernels) {
  return ruda_status_into_server(ruda__cl_error(
      RUDA_ERR_LAUNCH_UNKNOWN, code, call,
      "a command failed on the device; kernels launched on this stream since its last sync: %s",
      kernels));
}

static bool ends_context(cl_int code) {
  return code == CL_OUT_OF_RESOURCES || code == CL_INVALID_COMMAND_QUEUE ||
         code == RUDA__CL_NV_KERNEL_FAULT;
}

void ruda__ocl_fault_note(ruda__device_loss_t *loss, cl_int code, const char *kernels) {
  if (!loss || !ends_context(code)) return;
  ruda__device_loss_mark(loss,
                         "a command failed on the device with %s (kernels: %s), which ends "
                         "its OpenCL context; ruda_device_recover makes a fresh one where the "
                         "driver allows it (buffers made before are gone)",
                         ruda__cl_error_name(code), kernels);
}

static atomic_bool g_inject;

void ruda__opencl_test_inject_fault(void) { atomic_store(&g_inject, true); }

ruda_status_t ruda__ocl_fault_injected(ruda__device_loss_t *loss, const char *name) {
  if (!atomic_load_explicit(&g_inject, memory_order_relaxed) || !atomic_exchange(&g_inject, false))
    return NULL;
  char kernels[300];
  snprintf(kernels, sizeof kernels, "%s (fault injected by a test)", name);
  ruda__ocl_fault_note(loss, CL_OUT_OF_RESOURCES, kernels);
  return ruda__ocl_fault_error(CL_OUT_OF_RESOURCES, "clEnqueueNDRangeKernel", kernels);
}

RUDA__HOT
ruda_status_t ruda__ocl_event_error(const ruda__opencl_api_t *api, cl_event ev,
                                    const ruda__recent_kernels_t *recent,
                                    ruda__device_loss_t *loss) {
  cl_int r = api->clWaitForEvents(1, &ev);
  cl_int status = CL_COMPLETE;
  if (api->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) !=
      CL_SUCCESS)
    status = r == CL_SUCCESS ? CL_COMPLETE : r;
  if (r == CL_SUCCESS && status >= CL_COMPLETE) return NULL;
  char kernels[300];
  ruda__recent_kernels_format(recent, kernels, sizeof kernels);
  if (status < 0) ruda__ocl_fault_note(loss, status, kernels);
  return ruda__ocl_fault_error(status < 0 ? status : r, "clWaitForEvents", kernels);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
