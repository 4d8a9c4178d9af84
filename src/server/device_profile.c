/* The end of a device-timed profile (device_profile.h). */
#include "server/device_profile.h"

#include "server/server.h"

ruda_status_t ruda__device_profile_end(ruda__stream_table_t *t, ruda_stream_id_t stream,
                                       ruda_profiling_token_t token,
                                       const ruda__device_clock_t *clock, void *ctx,
                                       ruda_profile_duration_t *out) {
  ruda__stream_t *rs = ruda__stream_find(t, stream);
  ruda__profiler_entry_t mark;
  if (rs == NULL || !ruda__profiler_take(&rs->profiler, token.id, &mark)) {
    return ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED,
                              "token %llu is not open on this stream",
                              (unsigned long long)token.id);
  }
  uint64_t elapsed_ns = 0;
  ruda_status_t fault = NULL;
  bool timed = mark.mark != NULL && clock->elapsed(ctx, rs, mark.mark, &elapsed_ns, &fault);
  if (fault != NULL) {
    if (mark.error == NULL)
      mark.error = ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, ruda_status_clone(fault));
    ruda__stream_push_error(rs, fault);
  }
  if (mark.mark != NULL) clock->release(ctx, mark.mark);
  uint64_t end_ns = timed ? mark.start_ns + elapsed_ns : ruda__now_ns();
  return ruda__profiler_finish(&mark, end_ns, timed ? RUDA_TIMING_DEVICE : RUDA_TIMING_SYSTEM,
                               out);
}
