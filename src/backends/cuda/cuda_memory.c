/* The memory methods of the CUDA server: allocation in the stream's device
 * pool, pinned staging buffers, resources (device addresses), usage
 * reports, cleanup and the allocation mode. See cuda_server.c for the
 * design. */
#include <stddef.h>
#include <string.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_stream.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

void ruda__cuda_initialize_memory(cuda_server_t *s, ruda_memory_t *memory, uint64_t size,
                                  ruda_stream_id_t stream) {
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return;
  ruda__stream_alloc(&s->pipeline, st, memory, size);
}

ruda_status_t ruda__cuda_staging(cuda_server_t *s, const uint64_t *sizes, size_t count,
                                 ruda_stream_id_t stream, ruda_bytes_t *out) {
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  for (size_t i = 0; i < count; i++) {
    ruda_memory_t *m = NULL;
    void *p = NULL;
    ruda_status_t e = ruda__cuda_pinned_reserve(st, sizes[i], &m, &p);
    if (e) {
      for (size_t k = 0; k < i; k++) ruda_bytes_release(&out[k]);
      return e;
    }
    ruda__bytes_of_staging(m, p, sizes[i], &out[i]);
  }
  return NULL;
}

ruda_status_t ruda__cuda_import_memory(cuda_server_t *s, ruda_memory_t *memory,
                                      const ruda__external_memory_t *ext,
                                      ruda_stream_id_t stream) {
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  return ruda__memory_import(st->gpu, memory, ext);
}

ruda_status_t ruda__cuda_fence_external(cuda_server_t *s, ruda_stream_id_t stream,
                                        uint64_t other) {
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  CUevent ev = NULL;
  CUresult r = ruda__cuda_event_get(s, &ev);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(ev, st->cu);
  if (r == CUDA_SUCCESS) r = s->api->cuStreamWaitEvent((CUstream)(uintptr_t)other, ev, 0);
  if (ev != NULL) ruda__cuda_event_put(s, ev, ruda__cuda_generation(&s->fault));
  if (r != CUDA_SUCCESS)
    return ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamWaitEvent",
                          "DLPack: the consumer's stream waiting for cuda:%u",
                          s->base.device.index_id);
  return NULL;
}

ruda_status_t ruda__cuda_native_stream(cuda_server_t *s, ruda_stream_id_t stream,
                                       uint64_t *out) {
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  *out = (uint64_t)(uintptr_t)st->cu;
  return NULL;
}

ruda_status_t ruda__cuda_get_resource(cuda_server_t *s, const ruda_binding_t *b,
                                      ruda_resource_t *out) {
  CUdeviceptr p = 0;
  uint64_t held = 0;
  ruda_status_t e = ruda__cuda_resolve(s, NULL, b, &p, &held);
  if (e) return e;
  out->address = (uint64_t)p;
  uint64_t view = ruda_binding_size_in_used(b);
  out->size = view < held ? view : held;
  return NULL;
}

ruda_status_t ruda__cuda_memory_usage(cuda_server_t *s, ruda_stream_id_t stream,
                                      ruda_memory_usage_t *out) {
  memset(out, 0, sizeof *out);
  ruda__stream_t *rs = ruda__stream_find(&s->base.streams, stream);
  if (rs == NULL) return NULL; /* a stream without state holds nothing */
  ruda_status_t e = ruda__stream_check(rs, RUDA__MODE_CHECK);
  if (e) return e;
  /* Memory of this stream that other streams kept for finished work is
   * free again. */
  ruda__cuda_gc_poll_all(s);
  cuda_stream_t *st = cuda_ext(rs);
  if (st->pipe.ready) *out = ruda__memory_usage(st->gpu);
  return NULL;
}

ruda_status_t ruda__cuda_memory_usage_device(cuda_server_t *s, ruda_memory_usage_t *out) {
  ruda__cuda_gc_poll_all(s);
  *out = ruda__stream_table_usage(&s->base.streams);
  /* Idle pages of reclaimed states are still held from the device. */
  out->bytes_reserved += s->stash.list.bytes;
  return NULL;
}

void ruda__cuda_memory_cleanup(cuda_server_t *s, ruda_stream_id_t stream) {
  ruda__cuda_gc_poll_all(s);
  /* The pages reclaimed states left go back to the driver too. */
  ruda__cuda_stash_drain(&s->stash);
  cuda_stream_t *st = ruda__stream_pipe_find(&s->pipeline, stream);
  if (st == NULL) return;
  ruda__drop_queue_flush(st->drops);
  ruda__memory_cleanup(st->gpu, true);
  ruda__memory_cleanup(st->pinned, true);
  ruda__cuda_storage_flush(st->gpu_store);
  /* Pinned pages may still be read by copies in flight. */
  s->api->cuStreamSynchronize(st->cu);
  ruda__cuda_storage_flush(st->pin_store);
  ruda__server_trace_memory(&s->base);
}

void ruda__cuda_allocation_mode(cuda_server_t *s, ruda_memory_allocation_mode_t mode,
                                ruda_stream_id_t stream) {
  cuda_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return;
  ruda__memory_set_mode(st->gpu, mode);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
