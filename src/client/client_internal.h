/* What the files of the client share (src/client):
 *
 *   client.c          clients: creation, queries, flush, sync, memory
 *                     usage, raw resources, staging, exclusive
 *   client_future.c   public futures over the servers' futures
 *   client_io.c       allocation, creation from host data, reads, writes,
 *                     allocation modes and cleanup
 *   client_launch.c   launches (argument checks, bindings, measured
 *                     launches at profiling level basic and above)
 *   client_profile.c  profiles: the closure form and tokens
 *   client_graph.c    graphs: recording, building, replays
 *   collective.c      collectives, send/recv, to_client, the MPI
 *                     transport's entry points
 *   device.c          the device registry, the worker threads, blocking
 *                     calls (ruda__device_call), shutdown
 *
 * Each public call validates its arguments on the caller's thread; a
 * non-blocking one then queues an operation that the worker frees, a
 * blocking one runs a function on the worker through ruda__device_call().
 */
#ifndef RUDA_CLIENT_INTERNAL_H
#define RUDA_CLIENT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "client/device.h"
#include "ruda/client.h"
#include "types/thread_stream.h"

struct ruda_client {
  atomic_uint refs;
  ruda__device_t *dev;
  bool fixed_stream;
  ruda_stream_id_t stream;
};

/* The stream the client's calls go to: its own, or the calling thread's. */
static inline ruda_stream_id_t ruda__client_stream(const ruda_client_t *c) {
  return c->fixed_stream ? c->stream : ruda__stream_id_current();
}

static inline ruda_status_t ruda__client_invalid(const char *what) {
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s", what);
}

/* Every handle argument goes through this before anything is queued: a
 * live handle of this client's device whose fields agree with its memory
 * (RUDA_ERR_INVALID_HANDLE otherwise, see ruda/memory.h). */
static inline ruda_status_t ruda__client_check_view(ruda_client_t *c, const ruda_handle_t *h,
                                                    const char *who) {
  return ruda__handle_check(h, c->dev->id, who);
}

/* ruda__device_call_gated() on the client's device and stream. */
static inline ruda_status_t ruda__client_call(ruda_client_t *c, const char *who,
                                              ruda__call_kind_t kind, ruda__call_fn fn,
                                              void *ctx) {
  return ruda__device_call_gated(c->dev, who, kind, ruda__client_stream(c), fn, ctx);
}

/* ---- client_future.c ---- */

/* Waits for a server future (NULL: nothing to wait for) and destroys it. */
ruda_status_t ruda__client_future_finish(ruda__future_t *f);
/* Wraps a server result into a public future. Takes `inner` (may be NULL),
 * `early` (the status when there is no inner future) and the `bindings`
 * array (heap, n entries, kept alive until completion). When the future
 * cannot be allocated it waits for `inner` itself and returns that result
 * (*out NULL). */
ruda_status_t ruda__client_future_make(ruda__future_t *inner, ruda_status_t early,
                                       ruda_binding_t *bindings, size_t n, ruda_future_t **out);

/* ---- client_profile.c ---- */

/* Runs fn(c, ctx) inside a profile of the client's stream, opened before
 * and closed after it on the device (called on the worker, inside
 * ruda_client_exclusive); fn's status goes to *out_fn. When the profile
 * cannot open, fn runs only with `run_unmeasured` (*out_fn is NULL
 * otherwise). Returns NULL when *out holds the measured time, else the
 * error of opening (a ServerError in a ProfileError::Server) or of closing
 * the profile. */
ruda_status_t ruda__client_profile_run(ruda_client_t *c, ruda_status_t (*fn)(ruda_client_t *, void *),
                                       void *ctx, bool run_unmeasured, ruda_status_t *out_fn,
                                       ruda_profile_duration_t *out);

/* ---- client_graph.c ---- */

/* Whether the client's stream records a graph. */
bool ruda__client_recording(ruda_client_t *c);
/* When the client's stream records a graph, appends the launch (or the
 * write, its data copied) to it and sets *recorded; the caller then
 * queues nothing. Otherwise *recorded is false and nothing happens (one
 * atomic load while no stream of the device records). Errors:
 * RUDA_ERR_IO_OUT_OF_MEMORY, RUDA_ERR_INVALID_ARGUMENT (a dynamic count;
 * *recorded is then true: nothing may be queued). */
ruda_status_t ruda__client_record_launch_any(ruda_client_t *c, ruda_kernel_t *kernel,
                                             const ruda__count_t *count,
                                             const ruda__launch_args_t *args,
                                             ruda_execution_mode_t mode, bool *recorded);
/* ruda__client_record_launch_any, inline: every launch asks, and while no
 * stream of the device records the answer is one atomic load. */
static inline ruda_status_t ruda__client_record_launch(ruda_client_t *c, ruda_kernel_t *kernel,
                                                       const ruda__count_t *count,
                                                       const ruda__launch_args_t *args,
                                                       ruda_execution_mode_t mode,
                                                       bool *recorded) {
  *recorded = false;
  if (!atomic_load_explicit(&c->dev->num_recordings, memory_order_acquire)) return NULL;
  return ruda__client_record_launch_any(c, kernel, count, args, mode, recorded);
}
ruda_status_t ruda__client_record_write(ruda_client_t *c, const ruda__copy_desc_t *desc,
                                        const void *data, uint64_t size, bool *recorded);

#endif /* RUDA_CLIENT_INTERNAL_H */
