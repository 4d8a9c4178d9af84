/* The end of a device-timed profile (ruda_client_profile's token calls on
 * a GPU backend): what every such backend does around its own clock. The
 * backend opens a profile with a start marker of its device
 * (ruda__stream_profile_start) and, at its end, supplies only how to read
 * the device time since that marker and how to release it. */
#ifndef RUDA_SERVER_DEVICE_PROFILE_H
#define RUDA_SERVER_DEVICE_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "server/stream_table.h"

typedef struct ruda__device_clock {
  /* The device time from `mark` (a start marker on rs) to now, into
   * *out_ns: true when the device timed it, false for the host clock (the
   * stream not ready, no timestamps). A fault seen while waiting goes in
   * *out_fault (owned by the caller; the time is then 0). */
  bool (*elapsed)(void *ctx, ruda__stream_t *rs, void *mark, uint64_t *out_ns,
                  ruda_status_t *out_fault);
  /* Releases a start marker. */
  void (*release)(void *ctx, void *mark);
} ruda__device_clock_t;

/* Ends profile `token` of `stream`: takes its entry, times it with
 * `clock` when its marker is still there (a device reset takes markers
 * away: then the host clock), releases the marker and fills *out. A fault
 * fails the profile (ProfileError::Server) and is queued on the stream
 * too, so that its next sync sees it: observing never takes an error away
 * from a stream. Errors: ProfileError::NotRegistered when the token is not
 * open on the stream, the profile's recorded error, the fault. Called on
 * the server's worker. */
ruda_status_t ruda__device_profile_end(ruda__stream_table_t *t, ruda_stream_id_t stream,
                                       ruda_profiling_token_t token,
                                       const ruda__device_clock_t *clock, void *ctx,
                                       ruda_profile_duration_t *out);

#endif /* RUDA_SERVER_DEVICE_PROFILE_H */
