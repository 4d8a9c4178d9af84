/* Copies of the CUDA server (cuda_copy.c): writes, reads, sync and flush.
 * The vtable entries (cuda_server.c) settle faults, and for read, sync and
 * flush the stream's NCCL work, before calling them; these settle nothing.
 * Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_COPY_H
#define RUDA_CUDA_COPY_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* The device calls of the server layer's copy pipeline
 * (server/stream_op.h: ruda__stream_write, ruda__stream_read; `backend` is
 * the server), which the vtable entries run:
 *   write_part: one prepared view of a write (pinned, small pageable, or
 *     pipelined through pinned staging); `src` released once read;
 *   read_start: a small read of an idle stream served at once from the
 *     prepared first view (cuStreamSynchronize, no future), else the
 *     read's future (cuda_future.h), with a pinned block when the read is
 *     small;
 *   read_part: one prepared view, staged in the block, straight into a
 *     pinned destination, or through staging;
 *   read_end: the future's event, recorded whatever happened (copies
 *     enqueued before an early error still write into staging that the
 *     future releases). */
ruda_status_t ruda__cuda_write_part(void *backend, const ruda__copy_ctx_t *c, ruda_bytes_t *src);
bool ruda__cuda_read_start(void *backend, void *stream, const ruda__copy_desc_t *descs,
                           size_t count, const ruda__copy_ctx_t *first, void *const *dsts,
                           void **op, ruda_status_t *err);
ruda_status_t ruda__cuda_read_part(void *backend, const ruda__copy_ctx_t *c, void *dst,
                                   void *op);
ruda_status_t ruda__cuda_read_end(void *backend, void *stream, void *op, ruda_status_t early,
                                  ruda__future_t **out);
/* A sync of a stream known idle (everything up to its cursor completed)
 * needs no future; otherwise its future waits on an event. */
ruda_status_t ruda__cuda_sync(cuda_server_t *s, ruda_stream_id_t stream, ruda__future_t **out);
/* A flush in two steps around a possible device reset: the check asks the
 * stream whether its work hit a sticky fault and, if so, poisons the
 * server and returns true (the caller then settles the poison, which
 * resets the device); ruda__cuda_flush then releases what finished work
 * held and drains the stream's errors. */
/* Enqueues the copy of packed host bytes (pinned, so that a graph may
 * capture it) into d's view on `cu`, bounded by what the device holds; no
 * ordering, no trace. Errors returned: IoError::UnsupportedStrides,
 * IoError::Unknown (the view is too small, the driver call). */
ruda_status_t ruda__cuda_copy_in_on(cuda_server_t *s, CUstream cu, const ruda__copy_desc_t *d,
                                    void *host);
bool ruda__cuda_flush_check(cuda_server_t *s, ruda_stream_id_t stream);
ruda_status_t ruda__cuda_flush(cuda_server_t *s, ruda_stream_id_t stream);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_COPY_H */
