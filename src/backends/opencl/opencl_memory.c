/* The memory methods of the OpenCL server: allocation in the stream's
 * device pool, pinned staging buffers, resources (a cl_mem per view),
 * usage reports, cleanup and the allocation mode. See opencl_server.c for
 * the design. */
#include <stdint.h>
#include <string.h>

#include "backends/opencl/opencl_memory.h"
#include "backends/opencl/opencl_stream.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

void ruda__ocl_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                 ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  ocl_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL) return; /* the handle stays unbound: later uses report NotFound */
  /* More than the device has can never succeed; drivers that allocate
   * lazily (PoCL) would otherwise accept it here and fail at first use. */
  if (size > s->dev->global_mem) {
    ruda__stream_push_error(ocl_rs(st), ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size));
    ruda__opencl_log("memory", "%llu bytes requested; the device has %llu bytes in all",
                     (unsigned long long)size, (unsigned long long)s->dev->global_mem);
    return;
  }
  ruda__stream_alloc(&s->pipeline, st, memory, size);
}

ruda_status_t ruda__ocl_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                ruda_stream_id_t stream, ruda_bytes_t *out) {
  ocl_server_t *s = as_ocl(base);
  ocl_stream_t *st = ruda__stream_pipe_get(&s->pipeline, stream);
  if (st == NULL)
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  ruda_status_t e = NULL;
  for (size_t i = 0; i < count; i++) {
    ruda_memory_t *m = NULL;
    void *p = NULL;
    e = ruda__ocl_pinned_reserve(st, sizes[i], &m, &p);
    if (e) {
      for (size_t k = 0; k < i; k++) ruda_bytes_release(&out[k]);
      return e;
    }
    ruda__bytes_of_staging(m, p, sizes[i], &out[i]);
  }
  return NULL;
}

ruda_status_t ruda__ocl_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                     ruda_stream_id_t stream, ruda_resource_t *out) {
  (void)stream;
  ocl_server_t *s = as_ocl(base);
  page_t *p = NULL;
  uint64_t off = 0, size = 0;
  ruda_status_t e = ruda__ocl_resolve(s, b, &p, &off, &size);
  if (e) return e;
  cl_mem m = NULL;
  e = ruda__ocl_view_mem(s, p, off, size, &m);
  if (e) return ruda_status_wrap(RUDA_ERR_IO_EXECUTION, ruda_status_into_server(e));
  out->address = (uint64_t)(uintptr_t)m;
  out->size = size;
  return NULL;
}

ruda_status_t ruda__ocl_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                     ruda_memory_usage_t *out) {
  memset(out, 0, sizeof *out);
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  if (rs == NULL) return NULL; /* a stream without state holds nothing */
  ruda_status_t e = ruda__stream_check(rs, RUDA__MODE_CHECK);
  if (e) return e;
  ruda__ocl_gc_poll_all(as_ocl(base));
  ocl_stream_t *st = ocl_ext(rs);
  if (st->pipe.ready) *out = ruda__memory_usage(st->dev);
  return NULL;
}

void ruda__ocl_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  ruda__ocl_gc_poll_all(s);
  ocl_stream_t *st = ruda__stream_pipe_find(&s->pipeline, stream);
  if (st == NULL) return;
  ruda__memory_cleanup(st->dev, true);
  /* Pinned pages may still be read by copies in flight. */
  s->api->clFinish(st->queue);
  st->dirty = false;
  ruda__memory_cleanup(st->pinned, true);
  ruda__server_trace_memory(base);
}

void ruda__ocl_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                               ruda_stream_id_t stream) {
  ocl_stream_t *st = ruda__stream_pipe_get(&as_ocl(base)->pipeline, stream);
  if (st != NULL) ruda__memory_set_mode(st->dev, mode);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
