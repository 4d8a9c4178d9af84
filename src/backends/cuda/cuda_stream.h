/* Streams of the CUDA server (cuda_stream.c): the CUDA part of each
 * stream's state in the server layer's stream table, the storages under its
 * memory managers, the server's event and small-read block pools, the
 * event fence of the operation pipeline (server/stream_op.h: ordering and
 * kept bindings), deferred releases (the drop queue), and the timeline
 * trace.
 *
 * Below the memory methods, futures, copies, launches, profiles and
 * collectives; above the fault state only. Only built with the CUDA
 * headers.
 */
#ifndef RUDA_CUDA_STREAM_H
#define RUDA_CUDA_STREAM_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- Storages ---- */

ruda_status_t ruda__cuda_gpu_malloc(gpu_storage_t *g, uint64_t size, CUdeviceptr *out);
/* Frees the device page `p` of `size` bytes at the storage's next flush
 * (work in flight may still use it). */
void ruda__cuda_gpu_retire(gpu_storage_t *g, CUdeviceptr p, uint64_t size);
/* The server's stash of idle cuMemAlloc pages (page_stash_t): drain frees
 * them (cuMemFree waits for the device), forget drops them after a reset,
 * destroy drains and frees the list. */
void ruda__cuda_stash_drain(page_stash_t *st);
void ruda__cuda_stash_forget(page_stash_t *st);
void ruda__cuda_stash_destroy(page_stash_t *st);
void ruda__cuda_gpu_flush(void *self);
void ruda__cuda_pinned_flush(void *self);

/* ---- Event and block pools ---- */

/* Events without timing and small-read blocks from the server's pools
 * (under home->lock; any thread). */
CUresult ruda__cuda_event_get(cuda_server_t *s, CUevent *out);
void ruda__cuda_event_put(cuda_server_t *s, CUevent ev, uint64_t gen);
void *ruda__cuda_block_get(cuda_server_t *s);
/* Gives a small-read block back to the pool (freed when the pool is full). */
void ruda__cuda_block_put(cuda_server_t *s, void *block);

/* ---- Streams ---- */

/* The CUDA part of stream `id`, initialised on first use; NULL when it
 * cannot be (the reason is queued on the stream when its state exists). */
static inline cuda_stream_t *ruda__cuda_stream_get(cuda_server_t *s, ruda_stream_id_t id) {
  return ruda__stream_pipe_get(&s->pipeline, id);
}
/* The CUDA part of a stream that exists and was initialised, or NULL
 * (never creates anything). */
static inline cuda_stream_t *ruda__cuda_stream_find(cuda_server_t *s, ruda_stream_id_t id) {
  return ruda__stream_pipe_find(&s->pipeline, id);
}
/* Sets up s->pipeline: the event fence, stream set-up, memory group. */
void ruda__cuda_pipeline_init(cuda_server_t *s);
/* Frees what `st` holds, whether fully or partly initialised, and leaves it
 * uninitialised (the stream's state, errors and profiles, stays). */
void ruda__cuda_stream_free(cuda_server_t *s, cuda_stream_t *st, bool context_alive);
/* The stream table's hooks (ctx is set per server in cuda_create_server). */
extern const ruda__stream_table_ops_t ruda__cuda_stream_ops;

/* ---- How far a stream is known complete (cuda_synced_t) ---- */

/* A new record (NULL when memory is exhausted: the stream is then never
 * known idle), its release, and a completed cursor noted (monotonic; any
 * thread). */
cuda_synced_t *ruda__cuda_synced_new(void);
void ruda__cuda_synced_release(cuda_synced_t *c);
void ruda__cuda_synced_note(cuda_synced_t *c, uint64_t cursor);
/* Whether everything on `st` up to its current cursor is known complete. */
bool ruda__cuda_stream_idle(cuda_stream_t *st);

/* ---- Kept bindings, addresses, deferred releases ---- */

/* Releases the kept bindings of finished work on every stream (no wait). */
void ruda__cuda_gc_poll_all(cuda_server_t *s);
/* Releases the kept bindings of finished work on `st` and emits its
 * finished trace slices (`wait`: waits for all of it). */
void ruda__cuda_gc_poll(cuda_server_t *s, cuda_stream_t *st, bool wait);
/* The device address of a binding's view (ruda__stream_resolve);
 * *out_size (may be NULL) receives the bytes the device really holds from
 * that address on, whatever the view says. IoError::NotFound when the
 * memory is not bound on this device. `near` (may be NULL): the stream the
 * operation runs on. */
static inline ruda_status_t ruda__cuda_resolve(cuda_server_t *s, cuda_stream_t *near,
                                               const ruda_binding_t *b, CUdeviceptr *out,
                                               uint64_t *out_size) {
  ruda__storage_handle_t h;
  ruda_status_t e = ruda__stream_resolve(&s->pipeline, near, b, &h);
  if (e) return e;
  *out = (CUdeviceptr)ruda__storage_handle_addr(&h);
  if (out_size != NULL) *out_size = h.size;
  return NULL;
}
/* Pinned staging of `size` bytes from the stream's pinned pool. */
ruda_status_t ruda__cuda_pinned_reserve(cuda_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
                                        void **out_ptr);
/* Drop functions for the drop queue: a pinned staging handle, and a
 * heap-held ruda_bytes_t. */
void ruda__cuda_drop_memory(void *item);
void ruda__cuda_drop_bytes(void *item);
/* Drops `item` once the copies enqueued so far on `st` have completed. */
void ruda__cuda_drop_when_done(cuda_server_t *s, cuda_stream_t *st, void *item, uint64_t bytes,
                               ruda__drop_fn drop);

/* ---- Timeline trace ---- */

/* Starts a device-timed slice: its index, or -1 when the trace is off. */
long ruda__cuda_trace_begin(cuda_server_t *s, cuda_stream_t *st, const char *category,
                            const char *name, uint64_t bytes);
void ruda__cuda_trace_end(cuda_server_t *s, cuda_stream_t *st, long idx);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_STREAM_H */
