/* Copies of the OpenCL server: the device calls of the server layer's copy
 * pipeline (ruda__stream_write, ruda__stream_read: the stream set up, the
 * bindings ordered, kept and resolved, the trace bracketed): writes, reads
 * into event-fenced futures; and sync and flush. See opencl_server.c for
 * the design. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "backends/opencl/opencl_copy.h"
#include "backends/opencl/opencl_future.h"
#include "backends/opencl/opencl_stream.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* ---- Copies ---- */

/* Transfers of at least this many bytes between device memory and
 * pageable host memory are enqueued blocking. The caller waits for them
 * anyway (a large write borrows the caller's bytes until the copy is done,
 * a read waits for its future), and a blocking transfer is the one a
 * driver pipelines through its own staging of pageable memory: with
 * NVIDIA's OpenCL a non-blocking 256 MiB write from pageable memory ran at
 * 4.1-5.2 GB/s, the blocking call at 6-7 GB/s (the H200 host); on a CPU
 * device (PoCL) device memory is host memory and either way is one
 * memcpy. Transfers from or into pinned staging stay non-blocking. The
 * worker is busy for a blocking transfer: other streams' operations on the
 * device wait behind it. */
#define BLOCKING_COPY (1u << 20)

/* Enqueues a copy (`blocking`: returns once it is done) of `height` rows of
 * `width` bytes between host memory, where the rows are packed, and device
 * memory at `offset` of `mem`, where they are `pitch` bytes apart. */
RUDA__HOT
static cl_int copy_rows(const ruda__opencl_api_t *api, cl_command_queue q, bool to_device,
                        bool blocking, void *host, cl_mem mem, uint64_t offset, uint64_t width,
                        uint64_t height, uint64_t pitch, cl_event *ev, const char **call) {
  cl_bool b = blocking ? CL_TRUE : CL_FALSE;
  if (height <= 1 || pitch == width) {
    size_t n = (size_t)(width * height);
    *call = to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
    return to_device ? api->clEnqueueWriteBuffer(q, mem, b, (size_t)offset, n, host, 0, NULL, ev)
                     : api->clEnqueueReadBuffer(q, mem, b, (size_t)offset, n, host, 0, NULL, ev);
  }
  size_t buffer_origin[3] = {(size_t)offset, 0, 0};
  size_t host_origin[3] = {0, 0, 0};
  size_t region[3] = {(size_t)width, (size_t)height, 1};
  *call = to_device ? "clEnqueueWriteBufferRect" : "clEnqueueReadBufferRect";
  return to_device ? api->clEnqueueWriteBufferRect(q, mem, b, buffer_origin, host_origin, region,
                                                   (size_t)pitch, 0, (size_t)width, 0, host, 0,
                                                   NULL, ev)
                   : api->clEnqueueReadBufferRect(q, mem, b, buffer_origin, host_origin, region,
                                                  (size_t)pitch, 0, (size_t)width, 0, host, 0,
                                                  NULL, ev);
}

/* Staged writes: a contiguous write from pageable memory of at least
 * s->stage_min bytes (on devices with memory of their own) is copied into
 * pinned staging of its size by the copy pool, chunk by chunk, and each
 * chunk is enqueued (non-blocking, from the pinned mapping) as soon as it
 * is there, so the host copies and the transfer overlap. The driver's own
 * pageable path copies and transfers in turn: on the H200 host NVIDIA's
 * OpenCL writes 256 MiB from pageable memory at 6-7.7 GB/s and from
 * pinned memory at 54.7 GB/s. The caller's bytes are free once the last
 * chunk is copied; the staging goes back when the last transfer
 * completes. */
#define STAGE_CHUNK (1u << 20)
/* Chunks enqueued between two submissions (clFlush), so that the first
 * transfers start while later chunks are still being copied. */
#define STAGE_FLUSH_EVERY 8u

static atomic_uint_fast64_t g_staged_writes, g_staged_reads;

uint64_t ruda__ocl_staged_writes(void) { return atomic_load(&g_staged_writes); }
uint64_t ruda__ocl_staged_reads(void) { return atomic_load(&g_staged_reads); }

/* Pinned staging of `bytes` from the stream's pool, as bytes that give it
 * back when released; false when none can be had. */
static bool stage_get(ocl_stream_t *st, uint64_t bytes, ruda_bytes_t *held) {
  ruda_memory_t *m = NULL;
  void *p = NULL;
  ruda_status_t e = ruda__ocl_pinned_reserve(st, bytes, &m, &p);
  if (e) {
    ruda_status_free(e);
    return false;
  }
  ruda__bytes_of_staging(m, p, bytes, held);
  return true;
}

/* False, having done nothing, when no pinned staging could be had (the
 * caller writes the plain way); else true, with *err the error, if any. */
static bool staged_write(ocl_server_t *s, ocl_stream_t *st, cl_mem mem, uint64_t offset,
                         const void *src, uint64_t bytes, ruda_status_t *err) {
  const ruda__opencl_api_t *api = s->api;
  *err = NULL;
  ruda_bytes_t held;
  if (!stage_get(st, bytes, &held)) return false;
  char *stage = held.data;
  ruda__copy_job_t job;
  ruda__copy_job_start(s->copies, &job, stage, src, (size_t)bytes, STAGE_CHUNK, 0);
  cl_int r = CL_SUCCESS;
  cl_event last = NULL;
  size_t enqueued = 0;
  for (size_t c = 0; c < job.nchunks && r == CL_SUCCESS; c++) {
    ruda__copy_job_wait_chunk(&job, c);
    size_t off, len;
    ruda__copy_job_chunk(&job, c, &off, &len);
    r = api->clEnqueueWriteBuffer(st->queue, mem, CL_FALSE, (size_t)offset + off, len,
                                  stage + off, 0, NULL,
                                  c + 1 == job.nchunks ? &last : NULL);
    if (r == CL_SUCCESS && ++enqueued % STAGE_FLUSH_EVERY == 1) api->clFlush(st->queue);
  }
  ruda__copy_job_finish(s->copies, &job);
  atomic_fetch_add_explicit(&g_staged_writes, 1, memory_order_relaxed);
  if (enqueued > 0) st->dirty = true;
  if (r != CL_SUCCESS) {
    *err = ruda__cl_error(RUDA_ERR_IO_UNKNOWN, r, "clEnqueueWriteBuffer",
                          "writing %llu bytes (staged, chunk %zu of %zu)",
                          (unsigned long long)bytes, enqueued + 1, job.nchunks);
    /* The chunks enqueued before still read the staging. */
    api->clFinish(st->queue);
    ruda_bytes_release(&held);
    return true;
  }
  ruda__ocl_note_event(s, st, last);
  ruda__ocl_release_when_done(s, st, last, &held);
  return true;
}

/* The device calls of one view of a write (the pipeline's `write`,
 * server/stream_op.h): staged, blocking, or released from the driver's
 * callback once the copy has read it. */
RUDA__HOT
static ruda_status_t write_part(void *backend, const ruda__copy_ctx_t *c, ruda_bytes_t *src) {
  ocl_server_t *s = backend;
  ocl_stream_t *st = c->stream;
  page_t *p = (page_t *)(uintptr_t)c->target.base;
  uint64_t off = c->target.offset, bytes = c->bytes;
  ruda_status_t e = NULL;
  if (s->stage_min > 0 && bytes >= s->stage_min && src->property != RUDA_BYTES_PINNED &&
      (c->height == 1 || c->pitch == c->width) &&
      staged_write(s, st, p->mem, off, src->data, bytes, &e)) {
    return e; /* copied: the pipeline releases `src`, a borrowing caller returns now */
  }
  cl_event ev = NULL;
  const char *call = "";
  bool blocking = src->property != RUDA_BYTES_PINNED && bytes >= BLOCKING_COPY;
  cl_int r = copy_rows(s->api, st->queue, true, blocking, src->data, p->mem, off, c->width,
                       c->height, c->pitch, &ev, &call);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_IO_UNKNOWN, r, call, "writing %llu bytes",
                          (unsigned long long)bytes);
  st->dirty = !blocking;
  if (blocking) {
    ruda__ocl_note_command(s, st, ev);
    return NULL; /* read already: the pipeline releases `src` */
  }
  ruda__ocl_note_event(s, st, ev);
  /* The copy reads `src` until it completes; it is released then (a
   * caller may be waiting for that: large inputs are borrowed). */
  ruda__ocl_release_when_done(s, st, ev, src);
  return NULL;
}

void ruda__ocl_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                     size_t count, ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  ocl_stream_t *st = ruda__stream_write(&s->pipeline, descs, srcs, count, stream, write_part);
  if (st != NULL) ruda__ocl_submit(s, st);
}

/* ---- Reads, sync, flush ---- */

/* Staged reads, the mirror of staged writes: a contiguous read into
 * pageable memory of at least s->stage_min bytes is transferred into
 * pinned staging chunk by chunk (non-blocking, an event each), and the
 * copy pool copies each chunk out as soon as its event completes, while
 * later chunks are still in flight. On the H200 host NVIDIA's OpenCL reads
 * 256 MiB into pageable memory at 10.4-10.8 GB/s and into pinned memory at
 * 55 GB/s. Waits on this thread, as the blocking read it replaces.
 * False, having done nothing, when no staging could be had. */
static bool staged_read(ocl_server_t *s, ocl_stream_t *st, cl_mem mem, uint64_t offset,
                        void *dst, uint64_t bytes, ruda_status_t *err) {
  const ruda__opencl_api_t *api = s->api;
  *err = NULL;
  /* An event per chunk, the job's chunks (allocated first: without them
   * nothing has started and the plain read takes over). */
  size_t chunk = ruda__copy_chunk_size((size_t)bytes, STAGE_CHUNK);
  cl_event *evs = ruda__calloc(((size_t)bytes + chunk - 1) / chunk, sizeof *evs);
  ruda_bytes_t held;
  if (evs == NULL || !stage_get(st, bytes, &held)) {
    ruda__free(evs);
    return false;
  }
  char *stage = held.data;
  ruda__copy_job_t job;
  ruda__copy_job_start_held(s->copies, &job, dst, stage, (size_t)bytes, STAGE_CHUNK);
  cl_int r = CL_SUCCESS;
  size_t enqueued = 0;
  for (size_t c = 0; c < job.nchunks && r == CL_SUCCESS; c++) {
    size_t off, len;
    ruda__copy_job_chunk(&job, c, &off, &len);
    r = api->clEnqueueReadBuffer(st->queue, mem, CL_FALSE, (size_t)offset + off, len,
                                 stage + off, 0, NULL, &evs[c]);
    if (r == CL_SUCCESS && ++enqueued % STAGE_FLUSH_EVERY == 1) api->clFlush(st->queue);
  }
  api->clFlush(st->queue);
  const char *call = "clEnqueueReadBuffer";
  for (size_t c = 0; c < enqueued; c++) {
    cl_int w = api->clWaitForEvents(1, &evs[c]);
    if (w != CL_SUCCESS && r == CL_SUCCESS) {
      r = w;
      call = "clWaitForEvents";
    }
    /* Copied out only when it arrived; after a failure every chunk is
     * granted so that the job ends (the destination is undefined then). */
    ruda__copy_job_grant(&job, r == CL_SUCCESS ? c + 1 : job.nchunks);
  }
  ruda__copy_job_grant(&job, job.nchunks);
  ruda__copy_job_finish(s->copies, &job);
  atomic_fetch_add_explicit(&g_staged_reads, 1, memory_order_relaxed);
  if (enqueued > 0) {
    ruda__ocl_note_event(s, st, evs[enqueued - 1]);
    st->dirty = false; /* the queue is in order: all before it has completed */
  }
  for (size_t c = 0; c < enqueued; c++) api->clReleaseEvent(evs[c]);
  ruda__free(evs);
  ruda_bytes_release(&held);
  if (r != CL_SUCCESS)
    *err = ruda__cl_error(RUDA_ERR_IO_UNKNOWN, r, call, "reading %llu bytes (staged)",
                          (unsigned long long)bytes);
  return true;
}

/* Reads land straight in the destinations (the caller keeps them valid until
 * the future completes), through clEnqueueRead{Buffer,BufferRect}:
 * non-blocking, except large reads into pageable memory (BLOCKING_COPY);
 * the future waits on the last one's event (none when they are done).
 * The pipeline's three steps (server/stream_op.h): nothing to start, */
static bool read_start(void *backend, void *stream, const ruda__copy_desc_t *descs,
                       size_t count, const ruda__copy_ctx_t *first, void *const *dsts, void **op,
                       ruda_status_t *err) {
  (void)backend, (void)stream, (void)descs, (void)count, (void)first, (void)dsts, (void)op;
  (void)err;
  return false;
}

/* the copy of one prepared view (staged, or straight into `dst`), */
RUDA__HOT
static ruda_status_t read_part(void *backend, const ruda__copy_ctx_t *c, void *dst, void *op) {
  (void)op;
  ocl_server_t *s = backend;
  ocl_stream_t *st = c->stream;
  page_t *p = (page_t *)(uintptr_t)c->target.base;
  uint64_t off = c->target.offset, bytes = c->bytes;
  ruda_status_t e = NULL;
  bool pinned_dst = ruda__ocl_host_is_pinned(s, dst, bytes);
  if (s->stage_min > 0 && bytes >= s->stage_min && !pinned_dst &&
      (c->height == 1 || c->pitch == c->width) &&
      staged_read(s, st, p->mem, off, dst, bytes, &e)) {
    return e; /* done, or `e` says why not */
  }
  cl_event ev = NULL;
  const char *call = "";
  bool blocking = bytes >= BLOCKING_COPY && !pinned_dst;
  cl_int r = copy_rows(s->api, st->queue, false, blocking, dst, p->mem, off, c->width, c->height,
                       c->pitch, &ev, &call);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_IO_UNKNOWN, r, call, "reading %llu bytes",
                          (unsigned long long)bytes);
  st->dirty = !blocking;
  ruda__ocl_note_command(s, st, ev);
  return NULL;
}

/* and the future, on the last command's event, carrying `early`. */
RUDA__HOT
static ruda_status_t read_end(void *backend, void *stream, void *op, ruda_status_t early,
                              ruda__future_t **out) {
  (void)op;
  ocl_server_t *s = backend;
  ocl_stream_t *st = stream;
  ruda_status_t e = ruda__ocl_future_make(s, st, early, out);
  /* The read waits for all work before it: a later fault is in later
   * kernels. */
  st->recent.n = 0;
  st->recent.total = 0;
  ruda__ocl_submit(s, st);
  return e;
}

RUDA__HOT
ruda_status_t ruda__ocl_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                             void *const *dsts, size_t count, ruda_stream_id_t stream,
                             ruda__future_t **out) {
  return ruda__stream_read(&as_ocl(base)->pipeline, descs, dsts, count, stream, out, read_start,
                           read_part, read_end);
}

ruda_status_t ruda__ocl_sync(ruda__server_t *base, ruda_stream_id_t stream,
                             ruda__future_t **out) {
  ocl_server_t *s = as_ocl(base);
  *out = NULL;
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  if (rs == NULL) return NULL; /* nothing ever ran on it */
  ruda_status_t e = ruda__stream_check(rs, RUDA__MODE_DRAIN);
  if (e) return e;
  ocl_stream_t *st = ocl_ext(rs);
  if (!st->pipe.ready) return NULL;
  /* Bindings kept for finished work of any stream go back first: a sync
   * is where a caller expects memory to return. */
  ruda__ocl_gc_poll_all(s);
  ruda__stream_trace_sync(&s->pipeline, st);
  e = ruda__ocl_future_make(s, st, NULL, out);
  st->recent.n = 0;
  st->recent.total = 0;
  return e;
}

ruda_status_t ruda__ocl_flush(ruda__server_t *base, ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  if (rs == NULL) return NULL;
  ocl_stream_t *st = ocl_ext(rs);
  if (st->pipe.ready) {
    ruda__ocl_submit(s, st);
    ruda__ocl_gc_poll_all(s);
  }
  ruda_status_t e = ruda__stream_check(rs, RUDA__MODE_DRAIN);
  if (e && st->pipe.ready) ruda__memory_cleanup(st->dev, false);
  return e;
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
