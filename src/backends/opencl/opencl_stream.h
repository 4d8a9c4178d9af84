/* Streams of the OpenCL server (opencl_stream.c): the OpenCL part of each
 * stream's state in the server layer's stream table (its in-order queue,
 * memory managers over cl_mem storages, the sub-buffers of their pages),
 * the event fence and marker timer of the operation pipeline
 * (server/stream_op.h: ordering, kept bindings, the timeline trace), and
 * deferred releases of host buffers.
 *
 * Below the memory methods, futures, copies, launches and profiles; above
 * the fault reports only. Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_STREAM_H
#define RUDA_OPENCL_STREAM_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* A stream's OpenCL part is reached through the pipeline:
 * ruda__stream_pipe_get(&s->pipeline, id) (set up on first use) and
 * ruda__stream_pipe_find (never creates). */
/* The pipeline's stream_init and fence (server/stream_op.h; `backend`
 * is the server): the queue and memory managers of a stream made on first
 * use, and the event of a stream's newest command (a marker when it has
 * none) waited on with a barrier. */
bool ruda__ocl_stream_setup(void *backend, ruda__stream_t *rs);
extern const ruda__stream_fence_t ruda__ocl_event_fence;
/* The pipeline's timer for the trace: markers (profiling is on for every
 * queue). */
extern const ruda__stream_timer_t ruda__ocl_marker_timer;
/* The stream table's hooks for the OpenCL part (ctx: the server). */
extern const ruda__stream_table_ops_t ruda__ocl_stream_ops;

/* The page and offset of a binding's view (ruda__stream_resolve: through
 * the memory manager of the stream that owns it): IoError::NotFound when
 * unbound. *out_size is what the page holds from the offset on. */
static inline ruda_status_t ruda__ocl_resolve(ocl_server_t *s, const ruda_binding_t *b,
                                              page_t **out_page, uint64_t *out_offset,
                                              uint64_t *out_size) {
  ruda__storage_handle_t h;
  ruda_status_t e = ruda__stream_resolve(&s->pipeline, NULL, b, &h);
  if (e) return e;
  *out_page = (page_t *)(uintptr_t)h.base;
  *out_offset = h.offset;
  *out_size = h.size;
  return NULL;
}
/* A cl_mem covering exactly [offset, offset + size) of `page`: the page
 * itself when the view is the whole page, else a cached sub-buffer.
 * LaunchError::Unknown when `offset` is not a multiple of the device's
 * base-address alignment. */
ruda_status_t ruda__ocl_view_mem(ocl_server_t *s, page_t *page, uint64_t offset, uint64_t size,
                                 cl_mem *out);
/* Whether [p, p + bytes) lies in a pinned staging page of any stream. */
bool ruda__ocl_host_is_pinned(const ocl_server_t *s, const void *p, uint64_t bytes);
/* Pinned staging of `size` bytes from the stream's pinned pool. */
ruda_status_t ruda__ocl_pinned_reserve(ocl_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
                                       void **out_ptr);

/* ruda__stream_pipe_poll without waiting, on every stream with kept
 * bindings or trace slices. */
void ruda__ocl_gc_poll_all(ocl_server_t *s);
/* The stream's newest command (st->last): ruda__ocl_note_command takes
 * `ev` (the stream's reference now; NULL for a command enqueued without
 * an event), ruda__ocl_note_event retains it first. Every command
 * enqueued on a stream's queue is noted by one of them. */
void ruda__ocl_note_command(ocl_server_t *s, ocl_stream_t *st, cl_event ev);
void ruda__ocl_note_event(ocl_server_t *s, ocl_stream_t *st, cl_event ev);
/* Clears st->last_unknown when the stream's newest command, enqueued
 * without an event, is known complete (a finishing future covered it).
 * The stream's thread (the one running the server's ops). */
void ruda__ocl_settle_unknown(ocl_stream_t *st);
/* The stream's finish mark (created on first use), with a reference for
 * the caller (NULL without memory); ..._release drops one. */
ocl_finish_mark_t *ruda__ocl_finish_mark(ocl_stream_t *st);
void ruda__ocl_finish_mark_release(ocl_finish_mark_t *m);
/* The newest command's event while it has not completed successfully
 * (borrowed; *status its execution status, an error code when it failed),
 * NULL once it has (the stream lets it go) or when there is none or it
 * has no event (check st->last_unknown first). */
cl_event ruda__ocl_last_event(ocl_server_t *s, ocl_stream_t *st, cl_int *status);
/* Submits the stream's enqueued work (clFlush) when there is any. */
void ruda__ocl_submit(ocl_server_t *s, ocl_stream_t *st);

/* Releases `bytes` (taken) when `ev` (taken) completes, from the
 * driver's callback; when no callback can be set, waits for the stream
 * and releases it now. */
void ruda__ocl_release_when_done(ocl_server_t *s, ocl_stream_t *st, cl_event ev,
                                 ruda_bytes_t *bytes);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_STREAM_H */
