/* Copies of the CUDA server (cuda_copy.c): writes, reads, sync and flush.
 * The vtable entries (cuda_server.c) settle faults, and for read, sync and
 * flush the stream's NCCL work, before calling them; these settle nothing.
 * Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_COPY_H
#define RUDA_CUDA_COPY_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

void ruda__cuda_write(cuda_server_t *s, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                      size_t count, ruda_stream_id_t stream);
/* Every read hands back a future fenced by an event (cuda_future.h). */
ruda_status_t ruda__cuda_read(cuda_server_t *s, const ruda__copy_desc_t *descs,
                              void *const *dsts, size_t count, ruda_stream_id_t stream,
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
