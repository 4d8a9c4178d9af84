/* Streams of the OpenCL server: the per-stream state (its in-order command
 * queue, memory managers, errors), the cl_mem storages under the memory
 * managers and the sub-buffers of their pages, the fence and the timer of
 * the operation pipeline (server/stream_op.h: ordering, kept bindings, the
 * timeline trace), and deferred releases of host buffers. See
 * opencl_server.c for the design. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_stream.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* ---- Pages and sub-buffers ---- */

static void page_drop_subs(ocl_server_t *s, page_t *p) {
  for (size_t i = 0; i < p->capsubs; i++)
    if (p->subs[i].mem != NULL) s->api->clReleaseMemObject(p->subs[i].mem);
  ruda__free(p->subs);
  p->subs = NULL;
  p->nsubs = p->capsubs = 0;
}

static bool pinned_add(ocl_server_t *s, const void *host, uint64_t size) {
  if (s->npinned == s->cappinned) {
    size_t cap = s->cappinned ? s->cappinned * 2 : 8;
    pinned_range_t *n = ruda__realloc(s->pinned, cap * sizeof *n);
    if (n == NULL) return false;
    s->pinned = n;
    s->cappinned = cap;
  }
  s->pinned[s->npinned++] = (pinned_range_t){host, size};
  return true;
}

static void pinned_remove(ocl_server_t *s, const void *host) {
  for (size_t i = 0; i < s->npinned; i++)
    if (s->pinned[i].host == host) {
      s->pinned[i] = s->pinned[--s->npinned];
      return;
    }
}

RUDA__HOT
bool ruda__ocl_host_is_pinned(const ocl_server_t *s, const void *p, uint64_t bytes) {
  uintptr_t a = (uintptr_t)p;
  for (size_t i = 0; i < s->npinned; i++) {
    uintptr_t base = (uintptr_t)s->pinned[i].host;
    uint64_t size = s->pinned[i].size;
    if (a >= base && a - base <= size && bytes <= size - (a - base)) return true;
  }
  return false;
}

/* Releases a page. OpenCL keeps a memory object alive until the commands
 * that use it have finished, so nothing waits here. */
static void page_free(ocl_server_t *s, page_t *p) {
  if (p->host != NULL) pinned_remove(s, p->host);
  page_drop_subs(s, p);
  if (p->host != NULL) s->api->clEnqueueUnmapMemObject(s->service, p->mem, p->host, 0, NULL, NULL);
  if (p->mem != NULL) s->api->clReleaseMemObject(p->mem);
  ruda__free(p);
}

static size_t sub_slot(uint64_t offset, uint64_t size, size_t cap) {
  uint64_t h = (offset * 0x9e3779b97f4a7c15ull) ^ (size * 0xc2b2ae3d27d4eb4full);
  return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static bool subs_grow(page_t *p) {
  size_t ncap = p->capsubs ? p->capsubs * 2 : 16;
  subbuf_t *ns = ruda__calloc(ncap, sizeof *ns);
  if (ns == NULL) return false;
  for (size_t i = 0; i < p->capsubs; i++) {
    if (p->subs[i].mem == NULL) continue;
    size_t j = sub_slot(p->subs[i].offset, p->subs[i].size, ncap);
    while (ns[j].mem != NULL) j = (j + 1) & (ncap - 1);
    ns[j] = p->subs[i];
  }
  ruda__free(p->subs);
  p->subs = ns;
  p->capsubs = ncap;
  return true;
}

ruda_status_t ruda__ocl_view_mem(ocl_server_t *s, page_t *p, uint64_t offset, uint64_t size,
                                 cl_mem *out) {
  if ((offset == 0 && size == p->size) || size == 0) {
    *out = p->mem;
    return NULL;
  }
  if (p->capsubs > 0) {
    for (size_t i = sub_slot(offset, size, p->capsubs);; i = (i + 1) & (p->capsubs - 1)) {
      subbuf_t *e = &p->subs[i];
      if (e->mem == NULL) break;
      if (e->offset == offset && e->size == size) {
        *out = e->mem;
        return NULL;
      }
    }
  }
  uint64_t align = s->dev->base_align;
  if (align > 1 && offset % align != 0)
    return ruda_status_create(
        RUDA_ERR_LAUNCH_UNKNOWN,
        "a kernel argument starts %llu bytes into its allocation, which is not a multiple of "
        "the device's base-address alignment (%llu bytes, CL_DEVICE_MEM_BASE_ADDR_ALIGN): "
        "OpenCL kernels see buffers as sub-buffers; offset views passed to kernels must be "
        "aligned",
        (unsigned long long)offset, (unsigned long long)align);
  /* Old sub-buffers are dropped rather than letting the table grow without
   * bound; commands still using them keep them alive. */
  if (p->nsubs >= SUBBUF_MAX) page_drop_subs(s, p);
  if ((p->nsubs + 1) * 2 > p->capsubs && !subs_grow(p))
    return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "no host memory for a sub-buffer");
  cl_buffer_region region = {(size_t)offset, (size_t)size};
  cl_int r = CL_SUCCESS;
  cl_mem sub = s->api->clCreateSubBuffer(p->mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                         &region, &r);
  if (r != CL_SUCCESS || sub == NULL)
    return ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "clCreateSubBuffer",
                          "a view of %llu bytes at offset %llu", (unsigned long long)size,
                          (unsigned long long)offset);
  size_t j = sub_slot(offset, size, p->capsubs);
  while (p->subs[j].mem != NULL) j = (j + 1) & (p->capsubs - 1);
  p->subs[j] = (subbuf_t){offset, size, sub};
  p->nsubs++;
  *out = sub;
  return NULL;
}

/* ---- Storages ---- */

static ruda_status_t store_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  cl_storage_t *g = self;
  ocl_server_t *s = g->server;
  const ruda__opencl_api_t *api = s->api;
  page_t *p = ruda__calloc(1, sizeof *p);
  if (p == NULL) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  size_t n = size ? (size_t)size : 1;
  cl_mem_flags flags = CL_MEM_READ_WRITE | (g->pinned ? CL_MEM_ALLOC_HOST_PTR : 0);
  cl_int r = CL_SUCCESS;
  p->mem = api->clCreateBuffer(s->ctx, flags, n, NULL, &r);
  if (r != CL_SUCCESS || p->mem == NULL) {
    ruda__free(p);
    return ruda__cl_alloc_error(r, "clCreateBuffer", size);
  }
  p->size = size;
  if (g->pinned) {
    p->host = api->clEnqueueMapBuffer(s->service, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                      n, 0, NULL, NULL, &r);
    if (r != CL_SUCCESS || p->host == NULL) {
      api->clReleaseMemObject(p->mem);
      ruda__free(p);
      return ruda__cl_alloc_error(r, "clEnqueueMapBuffer", size);
    }
    /* Unlisted, reads into it are only slower (blocking, Copies). */
    (void)pinned_add(s, p->host, size);
  }
  *out = ruda__storage_handle_whole(++g->next_id, (uint64_t)(uintptr_t)p, size);
  ruda__opencl_log("memory", "%s page of %llu bytes", g->pinned ? "pinned" : "device",
                   (unsigned long long)size);
  return NULL;
}

static void store_dealloc(void *self, const ruda__storage_handle_t *h) {
  cl_storage_t *g = self;
  page_free(g->server, (page_t *)(uintptr_t)h->base);
}

static void store_flush(void *self) { (void)self; }

static void store_destroy(void *self) { ruda__free(self); }

static const ruda__storage_vtable_t store_vt = {store_alloc, store_dealloc, store_flush,
                                                store_destroy};

/* ---- Stream setup ---- */

static cl_command_queue make_queue(ocl_server_t *s, cl_int *r) {
  const ruda__opencl_api_t *api = s->api;
  if (api->clCreateCommandQueueWithProperties != NULL) {
    cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q = api->clCreateCommandQueueWithProperties(s->ctx, s->dev->device, props, r);
    if (*r == CL_SUCCESS || api->clCreateCommandQueue == NULL) return q;
  }
  return api->clCreateCommandQueue(s->ctx, s->dev->device, CL_QUEUE_PROFILING_ENABLE, r);
}

static ruda_status_t stream_init(ocl_server_t *s, ocl_stream_t *st) {
  cl_int r = CL_SUCCESS;
  st->api = s->api;
  st->queue = make_queue(s, &r);
  if (r != CL_SUCCESS || st->queue == NULL) {
    st->queue = NULL;
    return ruda__cl_error(RUDA_ERR_SERVER_GENERIC, r, "clCreateCommandQueueWithProperties",
                          "creating the queue of stream %llu", (unsigned long long)ocl_rs(st)->id);
  }
  st->dev_store = ruda__calloc(1, sizeof *st->dev_store);
  st->pin_store = ruda__calloc(1, sizeof *st->pin_store);
  if (st->dev_store == NULL || st->pin_store == NULL)
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory creating a stream");
  st->dev_store->server = s;
  st->pin_store->server = s;
  st->pin_store->pinned = true;
  const ruda_device_properties_t *props = &s->base.utilities.properties;
  ruda__memory_config_t cfg = s->base.utilities.settings.memory;
  /* Pages stay until an explicit cleanup: on GPU drivers clCreateBuffer
   * and a page's first use cost far more than keeping it. */
  cfg.keep_empty_pages = true;
  ruda__storage_t ds = {&store_vt, st->dev_store, props->memory.alignment, s->dev->global_mem};
  /* A manager takes its storage, even when it fails. */
  ruda_status_t e = ruda__memory_manager_create(ds, props->memory, &cfg, "Main OpenCL Memory",
                                                &st->dev);
  st->dev_store = NULL;
  if (e) return e;
  ruda_memory_properties_t pprops = {PINNED_PAGE, 64};
  ruda__memory_config_t pcfg = cfg;
  pcfg.persistent = RUDA_PERSISTENT_MEMORY_DISABLED;
  ruda__storage_t ps = {&store_vt, st->pin_store, 64, 0};
  e = ruda__memory_manager_create(ps, pprops, &pcfg, "Pinned OpenCL Staging", &st->pinned);
  st->pin_store = NULL;
  if (e) return e;
  st->pipe.memory = st->dev;
  return NULL;
}

static void stream_free(ocl_server_t *s, ocl_stream_t *st);

bool ruda__ocl_stream_setup(void *backend, ruda__stream_t *rs) {
  ocl_server_t *s = backend;
  ocl_stream_t *st = ocl_ext(rs);
  ruda_status_t e = stream_init(s, st);
  if (e) {
    stream_free(s, st);
    ruda__stream_push_error(rs, e);
    return false;
  }
  ruda__opencl_log("streaming", "stream %llu: command queue created", (unsigned long long)rs->id);
  return true;
}

ruda_status_t ruda__ocl_pinned_reserve(ocl_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
                                       void **out_ptr) {
  ruda_memory_t *m = ruda__memory_new();
  if (m == NULL) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda_status_t e = ruda__memory_alloc(st->pinned, m, size, ocl_rs(st)->cursor);
  ruda__storage_handle_t h;
  if (e == NULL) e = ruda__memory_resolve(st->pinned, m, 0, 0, &h);
  if (e) {
    ruda__memory_release_handle(m);
    return e;
  }
  page_t *p = (page_t *)(uintptr_t)h.base;
  *out_mem = m;
  *out_ptr = (char *)p->host + h.offset;
  return NULL;
}

/* ---- Commands and the queue ---- */

RUDA__HOT
void ruda__ocl_note_command(ocl_server_t *s, ocl_stream_t *st, cl_event ev) {
  if (st->last != NULL) s->api->clReleaseEvent(st->last);
  st->last = ev;
  st->last_unknown = ev == NULL;
  st->last_fenced = false;
  if (ev == NULL) st->unknown_seq++;
}

RUDA__HOT
void ruda__ocl_settle_unknown(ocl_stream_t *st) {
  if (st->last_unknown && st->mark != NULL &&
      atomic_load_explicit(&st->mark->finished, memory_order_acquire) >= st->unknown_seq)
    st->last_unknown = false;
}

ocl_finish_mark_t *ruda__ocl_finish_mark(ocl_stream_t *st) {
  if (st->mark == NULL) {
    ocl_finish_mark_t *m = ruda__calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    if (st->api->clRetainCommandQueue(st->queue) != CL_SUCCESS) {
      ruda__free(m);
      return NULL;
    }
    atomic_init(&m->finished, 0);
    atomic_init(&m->refs, 1); /* the stream's */
    m->api = st->api;
    m->queue = st->queue;
    st->mark = m;
  }
  atomic_fetch_add_explicit(&st->mark->refs, 1, memory_order_relaxed);
  return st->mark;
}

RUDA__HOT
void ruda__ocl_finish_mark_release(ocl_finish_mark_t *m) {
  if (m != NULL && atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1) {
    m->api->clReleaseCommandQueue(m->queue);
    ruda__free(m);
  }
}

void ruda__ocl_note_event(ocl_server_t *s, ocl_stream_t *st, cl_event ev) {
  if (ev != NULL && s->api->clRetainEvent(ev) != CL_SUCCESS) ev = NULL;
  ruda__ocl_note_command(s, st, ev);
}

RUDA__HOT
cl_event ruda__ocl_last_event(ocl_server_t *s, ocl_stream_t *st, cl_int *status) {
  *status = CL_COMPLETE;
  if (st->last == NULL) return NULL;
  cl_int v = CL_COMPLETE;
  if (s->api->clGetEventInfo(st->last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof v, &v, NULL) !=
      CL_SUCCESS)
    v = CL_QUEUED; /* unknown: waited for like pending work */
  /* Finished: completed, or failed and reported by a fence already. */
  if (v == CL_COMPLETE || (v < 0 && st->last_fenced)) {
    s->api->clReleaseEvent(st->last);
    st->last = NULL;
    return NULL;
  }
  *status = v;
  return st->last;
}

RUDA__HOT
void ruda__ocl_submit(ocl_server_t *s, ocl_stream_t *st) {
  if (!st->dirty) return;
  s->api->clFlush(st->queue);
  st->dirty = false;
}

static bool event_done(const ruda__opencl_api_t *api, cl_event ev, bool wait) {
  if (wait) {
    api->clWaitForEvents(1, &ev);
    return true;
  }
  cl_int status = CL_QUEUED;
  if (api->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) !=
      CL_SUCCESS)
    return true;
  return status <= CL_COMPLETE; /* complete or failed */
}

/* ---- The pipeline's fence: the stream's newest command ---- */

/* The event of the stream's newest command (a marker when it has none),
 * its queue submitted, since an event in another queue's wait list needs
 * that; idle when the newest command has completed. */
static ruda__fence_made_t event_record(void *backend, void *stream, void **out) {
  ocl_server_t *s = backend;
  ocl_stream_t *st = stream;
  cl_int status = CL_COMPLETE;
  ruda__ocl_settle_unknown(st);
  cl_event ev = st->last_unknown ? NULL : ruda__ocl_last_event(s, st, &status);
  if (ev != NULL) {
    if (s->api->clRetainEvent(ev) != CL_SUCCESS) return RUDA__FENCE_FAILED;
  } else if (st->last_unknown) {
    if (s->api->clEnqueueMarkerWithWaitList(st->queue, 0, NULL, &ev) != CL_SUCCESS)
      return RUDA__FENCE_FAILED;
    st->dirty = true;
    ruda__ocl_note_event(s, st, ev);
  } else {
    return RUDA__FENCE_IDLE;
  }
  ruda__ocl_submit(s, st);
  *out = ev;
  return RUDA__FENCE_MADE;
}

/* A barrier on the stream's queue. */
static bool event_wait_on(void *backend, void *stream, void *fence) {
  ocl_server_t *s = backend;
  ocl_stream_t *st = stream;
  cl_event ev = fence, barrier = NULL;
  if (s->api->clEnqueueBarrierWithWaitList(st->queue, 1, &ev, &barrier) != CL_SUCCESS)
    return false;
  st->dirty = true;
  ruda__ocl_note_command(s, st, barrier);
  return true;
}

static bool event_query(void *backend, void *fence, bool wait) {
  return event_done(((ocl_server_t *)backend)->api, fence, wait);
}

static void queue_finish(void *backend, void *stream) {
  ocl_stream_t *st = stream;
  ((ocl_server_t *)backend)->api->clFinish(st->queue);
  st->dirty = false;
}

static void event_release(void *backend, void *fence) {
  ((ocl_server_t *)backend)->api->clReleaseEvent(fence);
}

const ruda__stream_fence_t ruda__ocl_event_fence = {event_record, event_wait_on, event_query,
                                                     queue_finish, event_release};

static void gc_poll_one(void *ctx, ruda__stream_t *rs) {
  ocl_server_t *s = ctx;
  ocl_stream_t *st = ocl_ext(rs);
  if (st->pipe.ready && (st->pipe.nkept || st->pipe.nspans))
    ruda__stream_pipe_poll(&s->pipeline, st, false);
}

/* Kept bindings pin memory of their origin stream: a report, a sync or a
 * cleanup of any stream should not count memory that only finished work
 * of another stream holds. */
void ruda__ocl_gc_poll_all(ocl_server_t *s) {
  ruda__stream_table_foreach(&s->base.streams, gc_poll_one, s);
}

typedef struct held_bytes {
  ruda_bytes_t bytes;
  atomic_size_t *pending;
} held_bytes_t;

/* Runs on a driver thread once the copy reading the bytes has finished
 * (or failed). Touches nothing of the server but the counter, last. */
static void CL_CALLBACK release_bytes_cb(cl_event ev, cl_int status, void *user) {
  (void)status;
  held_bytes_t *h = user;
  atomic_size_t *pending = h->pending;
  ruda_bytes_release(&h->bytes);
  ruda__free(h);
  const ruda__opencl_api_t *api = NULL;
  ruda_status_t e = ruda__opencl_api_get(&api);
  if (e == NULL) api->clReleaseEvent(ev);
  ruda_status_free(e);
  atomic_fetch_sub(pending, 1);
}

void ruda__ocl_release_when_done(ocl_server_t *s, ocl_stream_t *st, cl_event ev,
                                 ruda_bytes_t *bytes) {
  held_bytes_t *h = ev != NULL ? ruda__malloc(sizeof *h) : NULL;
  if (h != NULL) {
    h->bytes = *bytes;
    h->pending = &s->pending_releases;
    atomic_fetch_add(&s->pending_releases, 1);
    if (s->api->clSetEventCallback(ev, CL_COMPLETE, release_bytes_cb, h) == CL_SUCCESS) {
      memset(bytes, 0, sizeof *bytes);
      return;
    }
    atomic_fetch_sub(&s->pending_releases, 1);
    ruda__free(h);
  }
  s->api->clFinish(st->queue);
  st->dirty = false;
  if (ev != NULL) s->api->clReleaseEvent(ev);
  ruda_bytes_release(bytes);
}

/* ---- The pipeline's timer: markers ---- */

/* A marker after everything enqueued so far (the queue is in order): the
 * time between two markers' ends is that of the commands between them.
 * Not noted as the stream's newest command: it orders nothing. */
static void *marker_mark(void *backend, void *stream) {
  ocl_server_t *s = backend;
  ocl_stream_t *st = stream;
  cl_event ev = NULL;
  if (s->api->clEnqueueMarkerWithWaitList(st->queue, 0, NULL, &ev) != CL_SUCCESS) return NULL;
  st->dirty = true;
  return ev;
}

static int marker_elapsed(void *backend, void *start, void *end, bool wait, uint64_t *ns) {
  const ruda__opencl_api_t *api = ((ocl_server_t *)backend)->api;
  if (!event_done(api, end, wait)) return -1;
  cl_ulong t0 = 0, t1 = 0;
  if (api->clGetEventProfilingInfo(start, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL) !=
          CL_SUCCESS ||
      api->clGetEventProfilingInfo(end, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) !=
          CL_SUCCESS ||
      t1 < t0)
    return 0;
  *ns = (uint64_t)(t1 - t0);
  return 1;
}

const ruda__stream_timer_t ruda__ocl_marker_timer = {marker_mark, marker_elapsed, event_release};

/* ---- Teardown and reclaim ---- */

/* Frees the OpenCL part of a stream, whether fully or partly set up,
 * after finishing its work. */
static void stream_free(ocl_server_t *s, ocl_stream_t *st) {
  const ruda__opencl_api_t *api = s->api;
  if (st->queue != NULL) api->clFinish(st->queue);
  ruda__stream_pipe_deinit(&s->pipeline, st, true);
  if (st->last != NULL) api->clReleaseEvent(st->last);
  for (int i = 0; i < INFO_RING; i++) {
    if (st->ring[i].done) api->clReleaseEvent(st->ring[i].done);
    ruda__free(st->ring[i].host);
  }
  ruda__free(st->info_last);
  if (st->info_mem) api->clReleaseMemObject(st->info_mem);
  /* A manager owns its storage; a storage without one is freed here. */
  if (st->dev) ruda__memory_manager_destroy(st->dev);
  else ruda__free(st->dev_store);
  if (st->pinned) ruda__memory_manager_destroy(st->pinned);
  else ruda__free(st->pin_store);
  if (st->queue != NULL) api->clReleaseCommandQueue(st->queue);
  ruda__ocl_finish_mark_release(st->mark);
  memset(st, 0, sizeof *st);
}

static bool event_complete(const ruda__opencl_api_t *api, cl_event ev) {
  return ev == NULL || event_done(api, ev, false);
}

/* Whether the OpenCL part of a stream holds nothing: no kept binding, no
 * traced command or info upload in flight, no live allocation (staging
 * held by a write in flight counts as one), the default allocation mode.
 * Finished work is released on the way. Commands still queued need
 * nothing from the stream: OpenCL keeps a queue and its memory objects
 * alive until they complete. */
static bool ocl_stream_quiesce(void *ctx, ruda__stream_t *rs) {
  ocl_server_t *s = ctx;
  ocl_stream_t *st = ocl_ext(rs);
  if (!st->pipe.ready) return true;
  if (!ruda__stream_pipe_settled(&s->pipeline, st)) return false;
  for (int i = 0; i < INFO_RING; i++)
    if (!event_complete(s->api, st->ring[i].done)) return false;
  return ruda__stream_pipe_memory_idle(&s->pipeline, st, st->pinned);
}

/* Frees the OpenCL part and the start markers of the stream's open
 * profiles. */
static void ocl_stream_release(void *ctx, ruda__stream_t *rs) {
  ocl_server_t *s = ctx;
  for (size_t i = 0; i < rs->profiler.len; i++) {
    if (rs->profiler.entries[i].mark != NULL)
      s->api->clReleaseEvent((cl_event)rs->profiler.entries[i].mark);
    rs->profiler.entries[i].mark = NULL;
  }
  ocl_stream_t *st = ocl_ext(rs);
  if (st->pipe.ready) stream_free(s, st);
}

/* ctx is set per server in opencl_create_server. */
const ruda__stream_table_ops_t ruda__ocl_stream_ops = {sizeof(ocl_stream_t), ocl_stream_quiesce,
                                                       ocl_stream_release,
                                                       ruda__stream_pipe_usage, NULL};

#endif /* RUDA_HAVE_OPENCL_HEADERS */
