/* Memory and copies of the OpenCL server: the memory methods of the
 * vtable, writes, reads and the event-fenced futures they and syncs return,
 * sync and flush. See opencl_server.c for the design. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_server.h"
#include "server/trace.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* ---- Vtable: memory ---- */

void ruda__ocl_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                 ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  ocl_stream_t *st = ruda__ocl_stream_get(s, stream);
  if (st == NULL) return; /* the handle stays unbound: later uses report NotFound */
  ruda_status_t e = NULL;
  /* More than the device has can never succeed; drivers that allocate
   * lazily (PoCL) would otherwise accept it here and fail at first use. */
  if (size > s->dev->global_mem) {
    ruda__stream_push_error(ocl_rs(st), ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size));
    ruda__opencl_log("memory", "%llu bytes requested; the device has %llu bytes in all",
                     (unsigned long long)size, (unsigned long long)s->dev->global_mem);
    return;
  }
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0;
  e = ruda__memory_alloc(st->dev, memory, size, ocl_rs(st)->cursor);
  if (t0)
    ruda__trace_slice(s->base.device, stream.value, "alloc", "alloc", t0, ruda__now_ns(), size);
  if (e) ruda__stream_push_error(ocl_rs(st), e);
}

static void staging_release(ruda_bytes_t *b) {
  if (b->owner) ruda__memory_release_handle(b->owner);
  b->owner = NULL;
}

ruda_status_t ruda__ocl_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                ruda_stream_id_t stream, ruda_bytes_t *out) {
  ocl_server_t *s = as_ocl(base);
  ocl_stream_t *st = ruda__ocl_stream_get(s, stream);
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
    out[i].data = p;
    out[i].size = sizes[i];
    out[i].property = RUDA_BYTES_PINNED;
    out[i].release = staging_release;
    out[i].owner = m;
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
  if (st->init) *out = ruda__memory_usage(st->dev);
  return NULL;
}

void ruda__ocl_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  ruda__ocl_gc_poll_all(s);
  ocl_stream_t *st = ruda__ocl_stream_find(s, stream);
  if (st == NULL) return;
  ruda__memory_cleanup(st->dev, true);
  /* Pinned pages may still be read by copies in flight. */
  s->api->clFinish(st->queue);
  st->dirty = false;
  ruda__memory_cleanup(st->pinned, true);
}

void ruda__ocl_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                               ruda_stream_id_t stream) {
  ocl_stream_t *st = ruda__ocl_stream_get(as_ocl(base), stream);
  if (st != NULL) ruda__memory_set_mode(st->dev, mode);
}

/* ---- Copies ---- */

/* The 2-D shape of a copy: rows of `width` bytes, `pitch` bytes apart on
 * the device. False for layouts other than contiguous or row-pitched. */
static bool copy_geometry(const ruda__copy_desc_t *d, uint64_t *width, uint64_t *height,
                          uint64_t *pitch) {
  uint32_t rank = d->shape.rank;
  uint64_t n = ruda_shape_num_elems(&d->shape);
  if (rank <= 1 || ruda_strides_is_contiguous(&d->shape, &d->strides)) {
    *width = n * d->elem_size;
    *height = 1;
    *pitch = *width;
    return true;
  }
  if (d->strides.rank != rank || !ruda_strides_is_pitched(&d->shape, &d->strides)) return false;
  uint64_t last = d->shape.dims[rank - 1];
  *width = last * d->elem_size;
  *height = last ? n / last : 0;
  *pitch = d->strides.values[rank - 2] * d->elem_size;
  return true;
}

/* The copy of `d` against a view of `view_size` bytes: NULL when it fits. */
static ruda_status_t check_extent(uint64_t width, uint64_t height, uint64_t pitch,
                                  uint64_t view_size) {
  if (height == 0 || width == 0) return NULL;
  uint64_t need = (height - 1) * pitch + width;
  if (need > view_size)
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN,
                              "copy of %llu bytes exceeds the view of %llu bytes",
                              (unsigned long long)need, (unsigned long long)view_size);
  return NULL;
}

/* Enqueues a non-blocking copy of `height` rows of `width` bytes between
 * host memory, where the rows are packed, and device memory at `offset` of
 * `mem`, where they are `pitch` bytes apart. */
static cl_int copy_rows(const ruda__opencl_api_t *api, cl_command_queue q, bool to_device,
                        void *host, cl_mem mem, uint64_t offset, uint64_t width, uint64_t height,
                        uint64_t pitch, cl_event *ev, const char **call) {
  if (height <= 1 || pitch == width) {
    size_t n = (size_t)(width * height);
    *call = to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer";
    return to_device ? api->clEnqueueWriteBuffer(q, mem, CL_FALSE, (size_t)offset, n, host, 0,
                                                 NULL, ev)
                     : api->clEnqueueReadBuffer(q, mem, CL_FALSE, (size_t)offset, n, host, 0,
                                                NULL, ev);
  }
  size_t buffer_origin[3] = {(size_t)offset, 0, 0};
  size_t host_origin[3] = {0, 0, 0};
  size_t region[3] = {(size_t)width, (size_t)height, 1};
  *call = to_device ? "clEnqueueWriteBufferRect" : "clEnqueueReadBufferRect";
  return to_device ? api->clEnqueueWriteBufferRect(q, mem, CL_FALSE, buffer_origin, host_origin,
                                                   region, (size_t)pitch, 0, (size_t)width, 0,
                                                   host, 0, NULL, ev)
                   : api->clEnqueueReadBufferRect(q, mem, CL_FALSE, buffer_origin, host_origin,
                                                  region, (size_t)pitch, 0, (size_t)width, 0,
                                                  host, 0, NULL, ev);
}

void ruda__ocl_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                     size_t count, ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  const ruda__opencl_api_t *api = s->api;
  ocl_stream_t *st = ruda__ocl_stream_get(s, stream);
  if (st == NULL) {
    for (size_t i = 0; i < count; i++) ruda_bytes_release(&srcs[i]);
    return;
  }
  ruda_status_t e = NULL;
  keep_list_t keep = {0};
  for (size_t i = 0; i < count; i++) ruda__ocl_order_binding(s, st, &descs[i].binding, &keep);
  bool trace = ruda__ocl_trace_wanted();
  for (size_t i = 0; i < count; i++) {
    const ruda__copy_desc_t *d = &descs[i];
    ruda_bytes_t *src = &srcs[i];
    uint64_t width, height, pitch;
    if (!copy_geometry(d, &width, &height, &pitch)) {
      ruda__stream_push_error(ocl_rs(st),
                               ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                                                  "write: only contiguous and row-pitched "
                                                  "layouts can be copied"));
      ruda_bytes_release(src);
      continue;
    }
    uint64_t bytes = width * height;
    page_t *p = NULL;
    uint64_t off = 0, view = 0;
    e = ruda__ocl_resolve(s, &d->binding, &p, &off, &view);
    if (e == NULL) e = check_extent(width, height, pitch, view);
    if (e == NULL && src->size < bytes)
      e = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "write: %llu bytes given, %llu needed",
                             (unsigned long long)src->size, (unsigned long long)bytes);
    if (e || bytes == 0) {
      if (e) ruda__stream_push_error(ocl_rs(st), e);
      ruda_bytes_release(src);
      continue;
    }
    cl_event ev = NULL;
    const char *call = "";
    cl_int r = copy_rows(api, st->queue, true, src->data, p->mem, off, width, height, pitch,
                         &ev, &call);
    if (r != CL_SUCCESS) {
      ruda__stream_push_error(ocl_rs(st),
                               ruda__cl_error(RUDA_ERR_IO_UNKNOWN, r, call, "writing %llu bytes",
                                              (unsigned long long)bytes));
      ruda_bytes_release(src);
      continue;
    }
    st->dirty = true;
    if (trace && api->clRetainEvent(ev) == CL_SUCCESS)
      ruda__ocl_trace_add(s, st, ev, "copy", "write", bytes);
    /* The copy reads `src` until it completes; it is released then (a
     * caller may be waiting for that: large inputs are borrowed). */
    ruda__ocl_release_when_done(s, st, ev, src);
  }
  ruda__ocl_op_end(s, st, &keep);
}

/* ---- Futures ---- */

/* A read or a sync: completes when `event` (a marker after the work) has,
 * on whichever thread waits. Reads land in their destinations directly, so
 * a future holds nothing of the server's and may outlive it. */
typedef struct ocl_future {
  ruda__future_t base;
  const ruda__opencl_api_t *api;
  cl_event event;      /* NULL once waited */
  ruda_status_t early; /* error found while enqueueing; the result once done */
  recent_kernels_t recent;
  bool done;
  pthread_mutex_t lock;
} ocl_future_t;

ruda_status_t ruda__ocl_event_error(const ruda__opencl_api_t *api, cl_event ev,
                                    const recent_kernels_t *recent) {
  cl_int r = api->clWaitForEvents(1, &ev);
  cl_int status = CL_COMPLETE;
  if (api->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) !=
      CL_SUCCESS)
    status = r == CL_SUCCESS ? CL_COMPLETE : r;
  if (r == CL_SUCCESS && status >= CL_COMPLETE) return NULL;
  char kernels[300];
  ruda__ocl_recent_names(recent, kernels, sizeof kernels);
  return ruda__ocl_fault_error(status < 0 ? status : r, "clWaitForEvents", kernels);
}

static ruda_status_t ocl_future_wait(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  pthread_mutex_lock(&f->lock);
  if (!f->done) {
    if (f->event != NULL) {
      ruda_status_t e = ruda__ocl_event_error(f->api, f->event, &f->recent);
      if (f->early == NULL)
        f->early = e;
      else
        ruda_status_free(e);
      f->api->clReleaseEvent(f->event);
      f->event = NULL;
    }
    f->done = true;
  }
  ruda_status_t st = f->early;
  f->early = NULL;
  pthread_mutex_unlock(&f->lock);
  return st;
}

static bool ocl_future_poll(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  pthread_mutex_lock(&f->lock);
  bool ready = f->done || f->event == NULL;
  if (!ready) {
    cl_int status = CL_COMPLETE;
    if (f->api->clGetEventInfo(f->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                               &status, NULL) != CL_SUCCESS)
      status = CL_COMPLETE;
    ready = status <= CL_COMPLETE;
  }
  pthread_mutex_unlock(&f->lock);
  return ready;
}

static void ocl_future_destroy(ruda__future_t *base) {
  ocl_future_t *f = (ocl_future_t *)base;
  /* Never waited: wait, so no copy into a destination outlives the
   * future. */
  ruda_status_free(ocl_future_wait(base));
  pthread_mutex_destroy(&f->lock);
  ruda__free(f);
}

static const ruda__future_vtable_t ocl_future_vt = {ocl_future_wait, ocl_future_poll,
                                                    ocl_future_destroy};

/* A future for the work enqueued so far on `st`, with `early` (taken) as
 * its first error. Always fenced by a marker, so copies enqueued before an
 * early error have finished when it completes. Submits the work. */
static ruda_status_t future_make(ocl_server_t *s, ocl_stream_t *st, ruda_status_t early,
                                 ruda__future_t **out) {
  const ruda__opencl_api_t *api = s->api;
  cl_event ev = NULL;
  cl_int r = api->clEnqueueMarkerWithWaitList(st->queue, 0, NULL, &ev);
  api->clFlush(st->queue);
  st->dirty = false;
  ocl_future_t *f = ruda__calloc(1, sizeof *f);
  if (f == NULL || r != CL_SUCCESS) {
    /* Wait here instead. */
    cl_int fr = api->clFinish(st->queue);
    ruda_status_t e = early;
    if (e == NULL && r != CL_SUCCESS && fr != CL_SUCCESS) {
      char kernels[300];
      ruda__ocl_recent_names(&st->recent, kernels, sizeof kernels);
      e = ruda__ocl_fault_error(fr, "clFinish", kernels);
    }
    if (ev != NULL) {
      ruda_status_t fe = ruda__ocl_event_error(api, ev, &st->recent);
      if (e == NULL) e = fe;
      else ruda_status_free(fe);
      api->clReleaseEvent(ev);
    }
    ruda__free(f);
    *out = NULL;
    return e;
  }
  f->base.vt = &ocl_future_vt;
  f->api = api;
  f->event = ev;
  f->early = early;
  f->recent = st->recent;
  pthread_mutex_init(&f->lock, NULL);
  *out = &f->base;
  return NULL;
}

/* ---- Vtable: read, sync, flush ---- */

/* Reads land straight in the destinations (the caller keeps them valid until
 * the future completes), through non-blocking clEnqueueRead{Buffer,
 * BufferRect}; the future waits on a marker after them. */
ruda_status_t ruda__ocl_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                             void *const *dsts, size_t count, ruda_stream_id_t stream,
                             ruda__future_t **out) {
  ocl_server_t *s = as_ocl(base);
  const ruda__opencl_api_t *api = s->api;
  *out = NULL;
  ocl_stream_t *st = ruda__ocl_stream_get(s, stream);
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  ruda_status_t e = rs != NULL ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
  if (e) return e;
  if (st == NULL)
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  if (st->ngc || st->ntrace) ruda__ocl_gc_poll(s, st, false);
  keep_list_t keep = {0};
  for (size_t i = 0; i < count; i++) ruda__ocl_order_binding(s, st, &descs[i].binding, &keep);
  bool trace = ruda__ocl_trace_wanted();
  ruda_status_t early = NULL;
  for (size_t i = 0; i < count && early == NULL; i++) {
    const ruda__copy_desc_t *d = &descs[i];
    uint64_t width, height, pitch;
    if (!copy_geometry(d, &width, &height, &pitch)) {
      early = ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                                 "read: only contiguous and row-pitched layouts can be copied");
      break;
    }
    uint64_t bytes = width * height;
    if (bytes == 0) continue;
    page_t *p = NULL;
    uint64_t off = 0, view = 0;
    early = ruda__ocl_resolve(s, &d->binding, &p, &off, &view);
    if (early == NULL) early = check_extent(width, height, pitch, view);
    if (early) break;
    cl_event ev = NULL;
    const char *call = "";
    cl_int r = copy_rows(api, st->queue, false, dsts[i], p->mem, off, width, height, pitch,
                         trace ? &ev : NULL, &call);
    if (r != CL_SUCCESS) {
      early = ruda__cl_error(RUDA_ERR_IO_UNKNOWN, r, call, "reading %llu bytes",
                             (unsigned long long)bytes);
      break;
    }
    if (trace) ruda__ocl_trace_add(s, st, ev, "copy", "read", bytes);
  }
  e = future_make(s, st, early, out);
  /* The read waits for all work before it: a later fault is in later
   * kernels. */
  st->recent.n = 0;
  st->recent.total = 0;
  ruda__ocl_op_end(s, st, &keep);
  return e;
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
  if (!st->init) return NULL;
  /* Bindings kept for finished work of any stream go back first: a sync
   * is where a caller expects memory to return. */
  ruda__ocl_gc_poll_all(s);
  if (ruda__trace_on()) {
    uint64_t now = ruda__now_ns();
    ruda__trace_slice(s->base.device, stream.value, "sync", "sync", now, now, 0);
  }
  e = future_make(s, st, NULL, out);
  st->recent.n = 0;
  st->recent.total = 0;
  return e;
}

ruda_status_t ruda__ocl_flush(ruda__server_t *base, ruda_stream_id_t stream) {
  ocl_server_t *s = as_ocl(base);
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  if (rs == NULL) return NULL;
  ocl_stream_t *st = ocl_ext(rs);
  if (st->init) {
    ruda__ocl_submit(s, st);
    ruda__ocl_gc_poll_all(s);
  }
  ruda_status_t e = ruda__stream_check(rs, RUDA__MODE_DRAIN);
  if (e && st->init) ruda__memory_cleanup(st->dev, false);
  return e;
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
