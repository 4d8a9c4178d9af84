/* Streams of the CUDA server (cuda_stream.c): the CUDA part of each
 * stream's state in the server layer's stream table, the storages under its
 * memory managers, the server's event and small-read block pools, the
 * event fence and timer of the operation pipeline (server/stream_op.h:
 * ordering, kept bindings, the timeline trace), and deferred releases
 * (the drop queue).
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
/* Frees the page at `addr` of `size` bytes of a device or pinned storage
 * (deferred_frees_t) at the storage's next flush (work in flight may still
 * use it); at once when memory for the list is exhausted. */
void ruda__cuda_storage_retire(void *storage, uint64_t addr, uint64_t size);
/* Frees every page a device or pinned storage retired. */
void ruda__cuda_storage_flush(void *storage);
/* The server's stash of idle cuMemAlloc pages (page_stash_t): drain frees
 * them (cuMemFree waits for the device), forget drops them after a reset,
 * destroy drains and frees the list. */
void ruda__cuda_stash_drain(page_stash_t *st);
void ruda__cuda_stash_forget(page_stash_t *st);
void ruda__cuda_stash_destroy(page_stash_t *st);

/* ---- Event and block pools ---- */

/* Events without timing and small-read blocks from the server's pools
 * (under home->lock; any thread). */
CUresult ruda__cuda_event_get(cuda_server_t *s, CUevent *out);
void ruda__cuda_event_put(cuda_server_t *s, CUevent ev, uint64_t gen);
void *ruda__cuda_block_get(cuda_server_t *s);
/* Gives a small-read block back to the pool (freed when the pool is full). */
void ruda__cuda_block_put(cuda_server_t *s, void *block);

/* ---- Streams ---- */

/* A stream's CUDA part is reached through the pipeline:
 * ruda__stream_pipe_get(&s->pipeline, id) (set up on first use) and
 * ruda__stream_pipe_find (never creates). */
/* The pipeline's stream_init and fence (server/stream_op.h; `backend`
 * is the server): the CUDA part of a stream made on first use (not once
 * the device is lost), and pooled events recorded on the streams. */
bool ruda__cuda_stream_setup(void *backend, ruda__stream_t *rs);
extern const ruda__stream_fence_t ruda__cuda_event_fence;
/* The pipeline's timer for the trace: events with timing, created per
 * slice. */
extern const ruda__stream_timer_t ruda__cuda_event_timer;
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
static inline void ruda__cuda_synced_note(cuda_synced_t *c, uint64_t cursor) {
  uint64_t seen = atomic_load_explicit(&c->cursor, memory_order_relaxed);
  while (seen < cursor &&
         !atomic_compare_exchange_weak_explicit(&c->cursor, &seen, cursor, memory_order_release,
                                                memory_order_relaxed)) {
  }
}
/* Whether everything on `st` up to its current cursor is known complete. */
static inline bool ruda__cuda_stream_idle(cuda_stream_t *st) {
  return st->synced != NULL && atomic_load_explicit(&st->synced->cursor, memory_order_acquire) >=
                                   ruda__stream_of_ext(st)->cursor;
}

/* ---- Kept bindings, addresses, deferred releases ---- */

/* Releases the kept bindings of finished work on every stream (no wait). */
void ruda__cuda_gc_poll_all(cuda_server_t *s);
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

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_STREAM_H */
