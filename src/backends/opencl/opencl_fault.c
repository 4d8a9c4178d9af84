/* Fault reports of the OpenCL server (opencl_fault.h): the kernel names of
 * a stream's recent launches, and the errors of commands that failed on
 * the device. Called from any module and, for waiting on an event, from
 * any thread (futures); calls only the error translation below it. */
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

RUDA__HOT
ruda_status_t ruda__ocl_event_error(const ruda__opencl_api_t *api, cl_event ev,
                                    const ruda__recent_kernels_t *recent) {
  cl_int r = api->clWaitForEvents(1, &ev);
  cl_int status = CL_COMPLETE;
  if (api->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) !=
      CL_SUCCESS)
    status = r == CL_SUCCESS ? CL_COMPLETE : r;
  if (r == CL_SUCCESS && status >= CL_COMPLETE) return NULL;
  char kernels[300];
  ruda__recent_kernels_format(recent, kernels, sizeof kernels);
  return ruda__ocl_fault_error(status < 0 ? status : r, "clWaitForEvents", kernels);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
