/* Fault reports of the OpenCL server (opencl_fault.h): the kernel names of
 * a stream's recent launches, and the errors of commands that failed on
 * the device. Called from any module and, for waiting on an event, from
 * any thread (futures); calls only the error translation below it. */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl_fault.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

void ruda__ocl_recent_names(const recent_kernels_t *rk, char *buf, size_t cap) {
  buf[0] = '\0';
  size_t used = 0;
  uint32_t n = rk->n < RECENT_KERNELS ? rk->n : RECENT_KERNELS;
  for (uint32_t i = 0; i < n && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", rk->names[i]);
  if (rk->total > n && used < cap) snprintf(buf + used, cap - used, " (and %u more)", rk->total - n);
  if (buf[0] == '\0') snprintf(buf, cap, "(no kernel recorded)");
}

void ruda__ocl_note_kernel(ocl_stream_t *st, const char *name) {
  recent_kernels_t *rk = &st->recent;
  rk->total++;
  if (rk->n > 0 && strncmp(rk->names[(rk->n - 1) % RECENT_KERNELS], name, 63) == 0) return;
  char *slot;
  if (rk->n < RECENT_KERNELS) {
    slot = rk->names[rk->n++];
  } else {
    memmove(rk->names[0], rk->names[1], sizeof rk->names[0] * (RECENT_KERNELS - 1));
    slot = rk->names[RECENT_KERNELS - 1];
  }
  size_t len = strnlen(name, sizeof rk->names[0] - 1);
  memcpy(slot, name, len);
  slot[len] = '\0';
}

ruda_status_t ruda__ocl_fault_error(cl_int code, const char *call, const char *kernels) {
  return ruda_status_into_server(ruda__cl_error(
      RUDA_ERR_LAUNCH_UNKNOWN, code, call,
      "a command failed on the device; kernels launched on this stream since its last sync: %s",
      kernels));
}

ruda_status_t ruda__ocl_event_error(const ruda__opencl_api_t *api, cl_event ev,
                                    const recent_kernels_t *recent) {
  cl_int r = api->clWaitForEvents(1, &ev);
  cl_int status = CL_COMPLETE;
  if (api->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) !=
      CL_SUCCESS)
    status = r == CL_SUCCESS ? CL_COMPLETE : r;
  if (r == CL_SUCCESS && status >= CL_COMPLETE) return NULL;
  char kernels[300];
  ruda__ocl_recent_names(recent, kernels, sizeof kernels);
  return ruda__ocl_fault_error(status < 0 ? status : r, "clWaitForEvents", kernels);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
