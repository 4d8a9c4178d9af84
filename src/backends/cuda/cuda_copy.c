/* Copies of the CUDA server: the device calls of the server layer's copy
 * pipeline (ruda__stream_write, ruda__stream_read: the stream set up, the
 * bindings ordered, kept and resolved, the trace bracketed): writes
 * (pinned, small pageable, pipelined through pinned staging), reads into
 * event-fenced futures; and sync and flush. The vtable entries
 * (cuda_server.c) settle faults and NCCL work before calling them. See
 * cuda_server.c for the design. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backends/cuda/cuda_copy.h"
#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_future.h"
#include "backends/cuda/cuda_stream.h"
#include "base/sync.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- Copies ---- */

/* Copies `height` rows of `width` bytes between host memory, where the rows
 * are packed, and device memory, where they are `pitch` bytes apart. */
RUDA__HOT
static CUresult copy_rows(const ruda__cuda_api_t *api, CUstream stream, bool to_device,
                          void *host, CUdeviceptr dev, uint64_t width, uint64_t height,
                          uint64_t pitch) {
  if (height <= 1 || pitch == width) {
    size_t n = (size_t)(width * height);
    return to_device ? api->cuMemcpyHtoDAsync(dev, host, n, stream)
                     : api->cuMemcpyDtoHAsync(host, dev, n, stream);
  }
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof c);
  c.WidthInBytes = (size_t)width;
  c.Height = (size_t)height;
  /* The host's rows are packed, the device's `pitch` apart; each side
   * sets the address field its memory type names (the other stays 0). */
  c.srcMemoryType = to_device ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
  c.srcHost = to_device ? host : NULL;
  c.srcDevice = to_device ? 0 : dev;
  c.srcPitch = (size_t)(to_device ? width : pitch);
  c.dstMemoryType = to_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  c.dstHost = to_device ? NULL : host;
  c.dstDevice = to_device ? dev : 0;
  c.dstPitch = (size_t)(to_device ? pitch : width);
  return api->cuMemcpy2DAsync(&c, stream);
}

ruda_status_t ruda__cuda_copy_in_on(cuda_server_t *s, CUstream cu, const ruda__copy_desc_t *d,
                                    void *host) {
  ruda__copy_ctx_t c;
  ruda_status_t e = ruda__stream_copy_part(&s->pipeline, NULL, d, "write", &c);
  if (e || c.bytes == 0) return e;
  CUdeviceptr dst = (CUdeviceptr)ruda__storage_handle_addr(&c.target);
  CUresult r = copy_rows(s->api, cu, true, host, dst, c.width, c.height, c.pitch);
  if (r != CUDA_SUCCESS) {
    return ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, "cuMemcpyHtoDAsync", "writing %llu bytes",
                          (unsigned long long)c.bytes);
  }
  return NULL;
}

static bool host_is_pinned(const ruda__cuda_api_t *api, const void *p) {
  unsigned int type = 0;
  CUresult r = api->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          (CUdeviceptr)(uintptr_t)p);
  return r == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST;
}

/* The DMA side of a write staged through a ring (server/host_copy.h): chunk
 * c goes out of its slot once copied, and an event recorded after it tells
 * when the slot may take chunk c + slots. While it waits for a chunk this
 * thread hands back the slots whose DMA has completed, and copies chunks
 * itself only when the pool's threads did not join. After a
 * failed call (or without events) a slot is given back only once the
 * stream has finished, so the copy never writes a slot the DMA still
 * reads. */
static CUresult ring_dma(cuda_server_t *s, cuda_stream_t *st, ruda__copy_job_t *job,
                         CUdeviceptr dst) {
  const ruda__cuda_api_t *api = s->api;
  const size_t slots = job->slots;
  CUevent ev[RUDA__CUDA_STAGE_MAX_SLOTS];
  uint64_t gen = ruda__cuda_generation(&s->fault);
  size_t nev = 0;
  while (nev < slots && ruda__cuda_event_get(s, &ev[nev]) == CUDA_SUCCESS) nev++;
  bool by_sync = nev < slots;
  CUresult r = CUDA_SUCCESS;
  size_t confirmed = 0; /* chunks whose DMA has completed */
  for (size_t c = 0; c < job->nchunks; c++) {
    for (;;) {
      /* Slots whose DMA has completed go back at once. */
      while (confirmed < c) {
        CUresult q = by_sync ? api->cuStreamSynchronize(st->cu)
                             : api->cuEventQuery(ev[confirmed % slots]);
        if (q == CUDA_ERROR_NOT_READY) break;
        if (q != CUDA_SUCCESS && r == CUDA_SUCCESS) r = q;
        confirmed = by_sync ? c : confirmed + 1;
        ruda__copy_job_grant(job, confirmed + slots);
      }
      /* With the pool's threads at the copies, this thread only grants
       * and issues: a chunk it copied would hold up both. */
      if (job->pooled ? ruda__copy_job_ready(job, c) : ruda__copy_job_try_chunk(job, c)) break;
      if (job->pooled) ruda__cpu_relax();
    }
    size_t off, len;
    ruda__copy_job_chunk(job, c, &off, &len);
    CUresult rc = api->cuMemcpyHtoDAsync(dst + off, ruda__copy_job_dst(job, c), len, st->cu);
    if (rc == CUDA_SUCCESS && !by_sync) rc = api->cuEventRecord(ev[c % slots], st->cu);
    if (rc != CUDA_SUCCESS) {
      if (r == CUDA_SUCCESS) r = rc;
      by_sync = true;
    }
  }
  for (size_t i = 0; i < nev; i++) ruda__cuda_event_put(s, ev[i], gen);
  return r;
}

/* A contiguous pageable write staged by the copy pool while the DMA of
 * the chunks before runs: through the ring (slots > 0) or into `stage`
 * whole. The job lives on this stack: the pool's threads have let go of it
 * when ruda__copy_job_finish returns. */
static CUresult pipelined_write(cuda_server_t *s, cuda_stream_t *st, CUdeviceptr dst,
                                void *stage, const void *src, uint64_t bytes, size_t slots) {
  ruda__copy_job_t job;
  ruda__copy_job_start(s->copies, &job, stage, src, (size_t)bytes,
                       slots ? s->stage_chunk : STAGE_CHUNK, slots);
  CUresult r = CUDA_SUCCESS;
  if (slots) {
    r = ring_dma(s, st, &job, dst);
  } else {
    for (size_t c = 0; c < job.nchunks; c++) {
      ruda__copy_job_wait_chunk(&job, c);
      size_t off, len;
      ruda__copy_job_chunk(&job, c, &off, &len);
      CUresult rc = s->api->cuMemcpyHtoDAsync(dst + off, ruda__copy_job_dst(&job, c), len, st->cu);
      if (rc != CUDA_SUCCESS && r == CUDA_SUCCESS) r = rc;
    }
  }
  ruda__copy_job_finish(s->copies, &job);
  return r;
}

RUDA__HOT
ruda_status_t ruda__cuda_write_part(void *backend, const ruda__copy_ctx_t *c, ruda_bytes_t *src) {
  cuda_server_t *s = backend;
  cuda_stream_t *st = c->stream;
  const ruda__cuda_api_t *api = s->api;
  uint64_t width = c->width, height = c->height, pitch = c->pitch, bytes = c->bytes;
  CUdeviceptr dst = (CUdeviceptr)ruda__storage_handle_addr(&c->target);
  CUresult r;
  if (src->property == RUDA_BYTES_PINNED) {
    r = copy_rows(api, st->cu, true, src->data, dst, width, height, pitch);
    ruda_bytes_t *held = ruda__malloc(sizeof *held);
    if (held != NULL && r == CUDA_SUCCESS) {
      *held = *src;
      memset(src, 0, sizeof *src);
      ruda__cuda_drop_when_done(s, st, held, bytes, ruda__cuda_drop_bytes);
    } else {
      ruda__free(held);
      api->cuStreamSynchronize(st->cu);
      ruda_bytes_release(src);
    }
  } else {
    ruda_memory_t *stage = NULL;
    void *sp = NULL;
    /* A contiguous copy larger than the staging ring goes through it
     * when the stream has nothing unfinished: slots come back as the
     * DMA completes, so on a busy stream the write would wait for the
     * work before it. */
    size_t slots = 0;
    uint64_t stage_bytes = bytes;
    size_t chunk = ruda__copy_chunk_size((size_t)bytes, s->stage_chunk);
    if (s->stage_slots > 0 && (height == 1 || pitch == width) &&
        bytes / s->stage_slots > chunk &&
        (ruda__cuda_stream_idle(st) || api->cuStreamQuery(st->cu) == CUDA_SUCCESS)) {
      slots = s->stage_slots;
      stage_bytes = (uint64_t)chunk * slots;
    }
    ruda_status_t pe =
        bytes < SMALL_COPY ? NULL : ruda__cuda_pinned_reserve(st, stage_bytes, &stage, &sp);
    if (stage == NULL) {
      /* Small copies (or no pinned memory): the driver stages pageable
       * memory itself before the call returns. */
      ruda_status_free(pe);
      r = copy_rows(api, st->cu, true, src->data, dst, width, height, pitch);
      ruda_bytes_release(src);
    } else if (height > 1 && pitch != width) {
      ruda__copy_parallel(s->copies, sp, src->data, (size_t)bytes, STAGE_CHUNK);
      ruda_bytes_release(src);
      r = copy_rows(api, st->cu, true, sp, dst, width, height, pitch);
      ruda__cuda_drop_when_done(s, st, stage, bytes, ruda__cuda_drop_memory);
    } else {
      /* Pipelined: chunks are copied into pinned memory by the copy pool
       * while the DMA of the chunks before them runs. */
      r = pipelined_write(s, st, dst, sp, src->data, bytes, slots);
      ruda_bytes_release(src);
      ruda__cuda_drop_when_done(s, st, stage, bytes, ruda__cuda_drop_memory);
    }
  }
  if (ruda__drop_queue_should_flush(st->drops)) ruda__drop_queue_flush(st->drops);
  if (r == CUDA_SUCCESS) return NULL;
  if (ruda__cu_result_is_sticky(r))
    ruda__cuda_poison(&s->fault, r, "a copy failed after a device fault", true);
  return ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, "cuMemcpyHtoDAsync", "writing %llu bytes",
                        (unsigned long long)bytes);
}

/* ---- Reads, sync, flush ---- */

/* A small read (one view of at most SMALL_READ bytes, owned by this
 * stream) of a stream whose work is known complete: copied into a pinned
 * block and waited for at once with cuStreamSynchronize, like
 * cuMemcpyDtoH, instead of an event and a future. The wait covers this
 * copy alone (the stream is idle), so it holds off the worker only for as
 * long. False when the read does not qualify (nothing done); otherwise
 * *out is the read's error or NULL. */
static inline __attribute__((always_inline)) bool read_idle_small(cuda_server_t *s,
                                                                 const ruda__copy_ctx_t *c,
                                                                 void *dst, ruda_status_t *out) {
  cuda_stream_t *st = c->stream;
  ruda__stream_t *rs = c->rs;
  uint64_t width = c->width, height = c->height, pitch = c->pitch, bytes = c->bytes;
  if (ruda__trace_on() || c->desc->binding.stream.value != rs->id ||
      !ruda__cuda_stream_idle(st) || bytes > SMALL_READ || bytes == 0) {
    return false;
  }
  *out = NULL;
  CUdeviceptr src = (CUdeviceptr)ruda__storage_handle_addr(&c->target);
  /* Tiny reads use the stream's own pinned scratch: no pool, no lock. */
  bool scratch = bytes <= SCRATCH_BYTES && st->count_host != NULL;
  void *block = scratch ? (void *)st->count_host : ruda__cuda_block_get(s);
  if (block == NULL) return false;
  const ruda__cuda_api_t *api = s->api;
  CUresult r = copy_rows(api, st->cu, false, block, src, width, height, pitch);
  if (r == CUDA_SUCCESS) r = api->cuStreamSynchronize(st->cu);
  ruda__stream_advance(&s->base.streams, rs);
  if (r == CUDA_SUCCESS) {
    memcpy(dst, block, (size_t)bytes);
    ruda__cuda_synced_note(st->synced, rs->cursor);
    ruda__recent_kernels_clear(&st->recent);
  } else if (ruda__cu_result_is_sticky(r)) {
    char kernels[300];
    ruda__recent_kernels_format(&st->recent, kernels, sizeof kernels);
    *out = ruda__cuda_stream_fault(&s->fault, r, "cuMemcpyDtoHAsync", kernels);
  } else {
    *out = ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, "cuMemcpyDtoHAsync", "reading %llu bytes",
                          (unsigned long long)bytes);
  }
  if (!scratch) ruda__cuda_block_put(s, block);
  return true;
}

/* Every read hands back a future fenced by an event: the caller waits on
 * the device itself (no second hand-off from the worker after the copy),
 * then the future copies staged parts into the destinations. Reads of at
 * most SMALL_READ bytes in all are staged in one pooled pinned block; larger
 * ones go straight into pinned destinations, else through pinned staging.
 */
RUDA__HOT
bool ruda__cuda_read_start(void *backend, void *stream, const ruda__copy_desc_t *descs,
                           size_t count, const ruda__copy_ctx_t *first, void *const *dsts,
                           void **op, ruda_status_t *err) {
  cuda_server_t *s = backend;
  cuda_stream_t *st = stream;
  if (count == 1 && first != NULL && read_idle_small(s, first, dsts[0], err)) return true;
  cuda_future_t *f = ruda__cuda_future_new(s, st, count);
  if (f == NULL) {
    *err = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "out of host memory for a read");
    return false;
  }
  uint64_t total = 0;
  for (size_t i = 0; i < count && total <= SMALL_READ; i++) {
    uint64_t width, height, pitch;
    total += ruda__copy_geometry(&descs[i], &width, &height, &pitch) ? width * height
                                                                      : SMALL_READ + 1;
  }
  if (total <= SMALL_READ) f->block = ruda__cuda_block_get(s);
  *op = f;
  return false;
}

RUDA__HOT
ruda_status_t ruda__cuda_read_part(void *backend, const ruda__copy_ctx_t *c, void *dst,
                                   void *op) {
  cuda_server_t *s = backend;
  cuda_stream_t *st = c->stream;
  cuda_future_t *f = op;
  const ruda__cuda_api_t *api = s->api;
  uint64_t width = c->width, height = c->height, pitch = c->pitch, bytes = c->bytes;
  CUdeviceptr src = (CUdeviceptr)ruda__storage_handle_addr(&c->target);
  uint64_t block_off = 0;
  if (f->block != NULL && f->nparts > 0) {
    const read_part_t *prev = &f->parts[f->nparts - 1];
    block_off = (uint64_t)((const char *)prev->staged - (const char *)f->block) +
                ((prev->size + 15) & ~(uint64_t)15);
  }
  read_part_t *p = &f->parts[f->nparts++];
  p->dst = dst;
  p->size = bytes;
  CUresult r;
  if (f->block != NULL) {
    void *sp = (char *)f->block + block_off;
    p->staged = sp;
    r = copy_rows(api, st->cu, false, sp, src, width, height, pitch);
  } else if (host_is_pinned(api, dst)) {
    r = copy_rows(api, st->cu, false, dst, src, width, height, pitch);
  } else {
    void *sp = NULL;
    ruda_status_t pe = ruda__cuda_pinned_reserve(st, bytes, &p->stage, &sp);
    if (pe == NULL) {
      p->staged = sp;
      r = copy_rows(api, st->cu, false, sp, src, width, height, pitch);
    } else {
      /* No pinned memory: copy synchronously into the pageable dst. */
      ruda_status_free(pe);
      r = api->cuStreamSynchronize(st->cu);
      if (r == CUDA_SUCCESS) r = copy_rows(api, st->cu, false, dst, src, width, height, pitch);
      if (r == CUDA_SUCCESS) r = api->cuStreamSynchronize(st->cu);
    }
  }
  if (r == CUDA_SUCCESS) return NULL;
  if (ruda__cu_result_is_sticky(r)) {
    char kernels[300];
    ruda__recent_kernels_format(&f->recent, kernels, sizeof kernels);
    return ruda__cuda_stream_fault(&s->fault, r, "cuMemcpyDtoHAsync", kernels);
  }
  return ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, "cuMemcpyDtoHAsync", "reading %llu bytes",
                        (unsigned long long)bytes);
}

RUDA__HOT
ruda_status_t ruda__cuda_read_end(void *backend, void *stream, void *op, ruda_status_t early,
                                  ruda__future_t **out) {
  cuda_server_t *s = backend;
  cuda_stream_t *st = stream;
  cuda_future_t *f = op;
  ruda_status_t fe = ruda__cuda_future_record(s, st, f);
  f->early = early ? early : fe;
  if (early) ruda_status_free(fe);
  /* The read waits for all work before it: a later fault is in later
   * kernels. */
  ruda__recent_kernels_clear(&st->recent);
  ruda__cuda_future_covers(st, f, cuda_rs(st)->cursor);
  *out = &f->base;
  return NULL;
}

RUDA__HOT
ruda_status_t ruda__cuda_sync(cuda_server_t *s, ruda_stream_id_t stream, ruda__future_t **out) {
  *out = NULL;
  ruda__stream_t *rs = ruda__stream_find(&s->base.streams, stream);
  ruda_status_t e = rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
  if (e) return e;
  /* Bindings kept for finished work of any stream go back first: a sync is
   * where a caller expects memory to return. */
  ruda__cuda_gc_poll_all(s);
  cuda_stream_t *st = ruda__stream_pipe_find(&s->pipeline, stream);
  if (st == NULL) {
    *out = ruda__future_ready(NULL);
    return NULL;
  }
  ruda__stream_trace_sync(&s->pipeline, st);
  if (st->pipe.nspans) ruda__stream_pipe_poll(&s->pipeline, st, false);
  /* Nothing enqueued since the last completed wait: nothing to wait for. */
  if (!ruda__trace_on() && ruda__cuda_stream_idle(st)) return NULL;
  cuda_future_t *f = ruda__cuda_future_new(s, st, 0);
  if (f == NULL) {
    CUresult r = s->api->cuStreamSynchronize(st->cu);
    return r == CUDA_SUCCESS ? NULL : ruda__cuda_fault_error(r, "cuStreamSynchronize", "");
  }
  f->early = ruda__cuda_future_record(s, st, f);
  ruda__cuda_future_covers(st, f, rs->cursor);
  ruda__recent_kernels_clear(&st->recent);
  *out = &f->base;
  return NULL;
}

bool ruda__cuda_flush_check(cuda_server_t *s, ruda_stream_id_t stream) {
  cuda_stream_t *st = ruda__stream_pipe_find(&s->pipeline, stream);
  if (st == NULL) return false;
  CUresult r = s->api->cuStreamQuery(st->cu);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY && ruda__cu_result_is_sticky(r)) {
    char names[300];
    ruda__recent_kernels_format(&st->recent, names, sizeof names);
    ruda__cuda_poison(&s->fault, r, names, false);
    return true; /* the caller resets the device: st is empty after it */
  }
  return false;
}

ruda_status_t ruda__cuda_flush(cuda_server_t *s, ruda_stream_id_t stream) {
  ruda__cuda_gc_poll_all(s);
  cuda_stream_t *st = ruda__stream_pipe_find(&s->pipeline, stream);
  if (st != NULL) {
    ruda__drop_queue_flush(st->drops);
    ruda__cuda_storage_flush(st->gpu_store);
  }
  ruda__stream_t *rs = ruda__stream_find(&s->base.streams, stream);
  ruda_status_t e = rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
  if (e && st != NULL) ruda__memory_cleanup(st->gpu, false);
  return e;
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
