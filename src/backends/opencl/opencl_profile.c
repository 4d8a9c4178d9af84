/* Profiles of the OpenCL server (ruda_client_profile, the token calls):
 * per stream, timed from the command queue's event timestamps
 * (CL_PROFILING_COMMAND_END), so their duration is device time. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/opencl/opencl_fault.h"
#include "backends/opencl/opencl_profile.h"
#include "backends/opencl/opencl_stream.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* The device time of `ev` (CL_PROFILING_COMMAND_END) once it completed. */
static bool event_end_ns(const ruda__opencl_api_t *api, cl_event ev, uint64_t *out) {
  if (api->clWaitForEvents(1, &ev) != CL_SUCCESS) return false;
  cl_ulong t = 0;
  if (api->clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t, &t, NULL) != CL_SUCCESS)
    return false;
  *out = (uint64_t)t;
  return true;
}

ruda_status_t ruda__ocl_start_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_profiling_token_t *out) {
  ocl_server_t *s = as_ocl(base);
  ocl_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL)
    return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "the stream could not be created");
  cl_event ev = NULL;
  cl_int r = s->api->clEnqueueMarkerWithWaitList(st->queue, 0, NULL, &ev);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_PROFILE_UNKNOWN, r, "clEnqueueMarkerWithWaitList",
                          "starting a profile");
  st->dirty = true;
  ruda__ocl_note_event(s, st, ev);
  ruda__ocl_submit(s, st);
  ruda_status_t e =
      ruda__stream_profile_start(&base->streams, ocl_rs(st), ruda__now_ns(), ev, out);
  if (e) s->api->clReleaseEvent(ev);
  return e;
}

/* The device time since the start marker: from the end timestamps of it
 * and of an end marker enqueued after the stream's work. A marker that
 * went with a lost device (or a stream never made ready), or a device
 * without timestamps, leaves the host clock. */
static bool ocl_elapsed(void *ctx, ruda__stream_t *rs, void *mark, uint64_t *out_ns,
                        ruda_status_t *out_fault) {
  ocl_server_t *s = ctx;
  const ruda__opencl_api_t *api = s->api;
  ocl_stream_t *st = ocl_ext(rs);
  if (!st->pipe.ready) return false;
  bool timed = true;
  cl_event end = NULL;
  cl_int r = api->clEnqueueMarkerWithWaitList(st->queue, 0, NULL, &end);
  if (r == CL_SUCCESS) ruda__ocl_note_event(s, st, end);
  api->clFlush(st->queue);
  st->dirty = false;
  uint64_t t0 = 0, t1 = 0;
  ruda_status_t fe = NULL;
  if (r != CL_SUCCESS) {
    fe = ruda_status_into_server(ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r,
                                                "clEnqueueMarkerWithWaitList",
                                                "ending a profile"));
  } else {
    fe = ruda__ocl_event_error(api, end, &st->recent, s->base.loss);
    if (fe == NULL && event_end_ns(api, (cl_event)mark, &t0) && event_end_ns(api, end, &t1) &&
        t1 >= t0)
      *out_ns = t1 - t0;
    else if (fe == NULL)
      timed = false; /* no timestamps: the host clock */
  }
  if (end) api->clReleaseEvent(end);
  *out_fault = fe;
  return timed;
}

static void ocl_release_event(void *ctx, void *mark) {
  ocl_server_t *s = ctx;
  s->api->clReleaseEvent((cl_event)mark);
}

const ruda__device_clock_t ruda__ocl_profile_clock = {ocl_elapsed, ocl_release_event};

#endif /* RUDA_HAVE_OPENCL_HEADERS */
