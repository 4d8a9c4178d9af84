/* Profiles of the CUDA server (ruda_client_profile, the token calls):
 * per stream, device-timed with CUDA events recorded on the stream. The
 * vtable entries (cuda_server.c) settle faults before calling them. */
#include <stdbool.h>
#include <stdint.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_profile.h"
#include "backends/cuda/cuda_stream.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* A profile's start event is its entry's mark in the stream's profiler. An
 * error queued on the stream while the profile is open fails it
 * (ruda__stream_push_error); a fault seen while waiting for its end is
 * queued on the stream too, so it also reaches the stream's next sync:
 * observing never takes an error away from the stream. */
ruda_status_t ruda__cuda_start_profile(cuda_server_t *s, ruda_stream_id_t stream,
                                       ruda_profiling_token_t *out) {
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL)
    return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "the stream could not be created");
  CUevent ev = NULL;
  CUresult r = s->api->cuEventCreate(&ev, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(ev, st->cu);
  if (r != CUDA_SUCCESS) {
    if (ev) s->api->cuEventDestroy(ev);
    return ruda__cu_error(RUDA_ERR_PROFILE_UNKNOWN, r, "cuEventRecord", "starting a profile");
  }
  ruda_status_t e =
      ruda__stream_profile_start(&s->base.streams, cuda_rs(st), ruda__now_ns(), ev, out);
  if (e) s->api->cuEventDestroy(ev);
  return e;
}

/* The device time since the start event: an end event recorded after
 * the stream's work, waited for. A start event that went with a device
 * reset (or a stream never made ready) leaves the host clock. */
static bool cuda_elapsed(void *ctx, ruda__stream_t *rs, void *mark, uint64_t *out_ns,
                         ruda_status_t *out_fault) {
  cuda_server_t *s = ctx;
  cuda_stream_t *st = cuda_ext(rs);
  if (!st->pipe.ready) return false;
  CUevent end = NULL;
  CUresult r = s->api->cuEventCreate(&end, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(end, st->cu);
  if (r == CUDA_SUCCESS) r = s->api->cuEventSynchronize(end);
  float ms = 0.0f;
  if (r == CUDA_SUCCESS) r = s->api->cuEventElapsedTime(&ms, (CUevent)mark, end);
  if (end) s->api->cuEventDestroy(end);
  if (r != CUDA_SUCCESS) {
    char names[300];
    ruda__recent_kernels_format(&st->recent, names, sizeof names);
    *out_fault = ruda__cuda_stream_fault(&s->fault, r, "cuEventSynchronize", names);
  } else {
    *out_ns = (uint64_t)((double)ms * 1e6);
  }
  return true;
}

static void cuda_release_event(void *ctx, void *mark) {
  cuda_server_t *s = ctx;
  s->api->cuEventDestroy((CUevent)mark);
}

const ruda__device_clock_t ruda__cuda_profile_clock = {cuda_elapsed, cuda_release_event};

/* A device reset took every event with it: open profiles lose their start
 * marks and report that they were interrupted. */
void ruda__cuda_profiles_forget(void *ctx, ruda__stream_t *rs) {
  (void)ctx;
  for (size_t i = 0; i < rs->profiler.len; i++) {
    ruda__profiler_entry_t *e = &rs->profiler.entries[i];
    e->mark = NULL;
    if (e->error == NULL) {
      e->error = ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN,
                                    "the CUDA device was reset after a fault while this "
                                    "profile was open");
    }
  }
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
