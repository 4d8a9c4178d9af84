/* Memory and copies of the CUDA server: the memory methods of the vtable,
 * writes (pinned, small pageable, pipelined through pinned staging), reads
 * and the event-fenced futures they and syncs return, sync and flush. See
 * cuda_server.c for the design. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_nccl.h"
#include "backends/cuda/cuda_server.h"
#include "server/trace.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- Vtable: memory ---- */

void ruda__cuda_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                  ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  if (st == NULL) return;
  ruda_status_t e = ruda__memory_alloc(st->gpu, memory, size, cuda_rs(st)->cursor);
  if (e) ruda__stream_push_error(cuda_rs(st), e);
}

static void staging_release(ruda_bytes_t *b) {
  if (b->owner) ruda__memory_release_handle(b->owner);
  b->owner = NULL;
}

ruda_status_t ruda__cuda_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                 ruda_stream_id_t stream, ruda_bytes_t *out) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  for (size_t i = 0; i < count; i++) {
    ruda_memory_t *m = NULL;
    void *p = NULL;
    ruda_status_t e = ruda__cuda_pinned_reserve(st, sizes[i], &m, &p);
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

ruda_status_t ruda__cuda_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                      ruda_stream_id_t stream, ruda_resource_t *out) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
  CUdeviceptr p = 0;
  uint64_t held = 0;
  ruda_status_t e = ruda__cuda_resolve(s, b, &p, &held);
  if (e) return e;
  out->address = (uint64_t)p;
  uint64_t view = ruda_binding_size_in_used(b);
  out->size = view < held ? view : held;
  return NULL;
}

ruda_status_t ruda__cuda_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_memory_usage_t *out) {
  cuda_server_t *s = as_cuda(base);
  memset(out, 0, sizeof *out);
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  if (rs == NULL) return NULL; /* a stream without state holds nothing */
  ruda_status_t e = ruda__stream_check(rs, RUDA__MODE_CHECK);
  if (e) return e;
  /* Memory of this stream that other streams kept for finished work is
   * free again. */
  ruda__cuda_gc_poll_all(s);
  cuda_stream_t *st = cuda_ext(rs);
  if (st->init) *out = ruda__memory_usage(st->gpu);
  return NULL;
}

ruda_status_t ruda__cuda_memory_usage_device(ruda__server_t *base, ruda_memory_usage_t *out) {
  ruda__cuda_gc_poll_all(as_cuda(base));
  *out = ruda__stream_table_usage(&base->streams);
  return NULL;
}

void ruda__cuda_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
  ruda__cuda_gc_poll_all(s);
  cuda_stream_t *st = ruda__cuda_stream_find(s, stream);
  if (st == NULL) return;
  ruda__drop_queue_flush(st->drops);
  ruda__memory_cleanup(st->gpu, true);
  ruda__memory_cleanup(st->pinned, true);
  ruda__cuda_gpu_flush(st->gpu_store);
  /* Pinned pages may still be read by copies in flight. */
  s->api->cuStreamSynchronize(st->cu);
  ruda__cuda_pinned_flush(st->pin_store);
}

void ruda__cuda_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                                ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  if (st == NULL) return;
  ruda__memory_set_mode(st->gpu, mode);
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
  *width = d->shape.dims[rank - 1] * d->elem_size;
  *height = rank >= 2 ? n / (d->shape.dims[rank - 1] ? d->shape.dims[rank - 1] : 1) : 1;
  *pitch = d->strides.values[rank - 2] * d->elem_size;
  return true;
}

/* The device address of a copy's view, with the copy bounded by what the
 * device allocated for it (not by what the binding claims): the furthest
 * byte the shape and strides reach, overflow-checked, must lie inside. */
static ruda_status_t copy_target(cuda_server_t *s, const ruda__copy_desc_t *d, const char *what,
                                 CUdeviceptr *out) {
  uint64_t view = 0, need = 0;
  ruda_status_t e = ruda__cuda_resolve(s, &d->binding, out, &view);
  if (e) return e;
  if (!ruda_shape_extent(&d->shape, &d->strides, d->elem_size, &need))
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "%s: the strides reach past 2^64 bytes", what);
  if (need > view)
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN,
                              "%s: the copy reaches %llu bytes, the view holds %llu", what,
                              (unsigned long long)need, (unsigned long long)view);
  return NULL;
}

/* Copies `height` rows of `width` bytes between host memory, where the rows
 * are packed, and device memory, where they are `pitch` bytes apart. */
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
  if (to_device) {
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.srcPitch = (size_t)width;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = dev;
    c.dstPitch = (size_t)pitch;
  } else {
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = dev;
    c.srcPitch = (size_t)pitch;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = host;
    c.dstPitch = (size_t)width;
  }
  return api->cuMemcpy2DAsync(&c, stream);
}

static bool host_is_pinned(const ruda__cuda_api_t *api, const void *p) {
  unsigned int type = 0;
  CUresult r = api->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          (CUdeviceptr)(uintptr_t)p);
  return r == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST;
}

void ruda__cuda_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                      size_t count, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  const ruda__cuda_api_t *api = s->api;
  ruda__cuda_settle_poison(s, stream);
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  if (st == NULL) {
    for (size_t i = 0; i < count; i++) ruda_bytes_release(&srcs[i]);
    return;
  }
  keep_list_t keep = {0};
  for (size_t i = 0; i < count; i++) ruda__cuda_order_binding(s, st, &descs[i].binding, &keep);
  for (size_t i = 0; i < count; i++) {
    const ruda__copy_desc_t *d = &descs[i];
    ruda_bytes_t *src = &srcs[i];
    uint64_t width, height, pitch;
    if (!copy_geometry(d, &width, &height, &pitch)) {
      ruda__stream_push_error(cuda_rs(st),
                              ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                                                 "write: only contiguous and row-pitched "
                                                 "layouts can be copied"));
      ruda_bytes_release(src);
      continue;
    }
    uint64_t bytes = width * height;
    CUdeviceptr dst = 0;
    ruda_status_t e = copy_target(s, d, "write", &dst);
    if (e == NULL && src->size < bytes)
      e = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "write: %llu bytes given, %llu needed",
                             (unsigned long long)src->size, (unsigned long long)bytes);
    if (e) {
      ruda__stream_push_error(cuda_rs(st), e);
      ruda_bytes_release(src);
      continue;
    }
    if (bytes == 0) {
      ruda_bytes_release(src);
      continue;
    }
    CUresult r;
    long tr = ruda__cuda_trace_begin(s, st, "copy", "write", bytes);
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
      ruda_status_t pe =
          bytes < SMALL_COPY ? NULL : ruda__cuda_pinned_reserve(st, bytes, &stage, &sp);
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
        ruda__copy_job_t *job = ruda__malloc(sizeof *job);
        r = CUDA_SUCCESS;
        if (job != NULL) {
          ruda__copy_job_start(s->copies, job, sp, src->data, (size_t)bytes, STAGE_CHUNK);
          for (size_t c = 0; c < job->nchunks; c++) {
            ruda__copy_job_wait_chunk(job, c);
            size_t off, len;
            ruda__copy_job_chunk(job, c, &off, &len);
            CUresult rc = api->cuMemcpyHtoDAsync(dst + off, (char *)sp + off, len, st->cu);
            if (rc != CUDA_SUCCESS && r == CUDA_SUCCESS) r = rc;
          }
          ruda__copy_job_finish(s->copies, job);
          ruda__free(job);
        } else {
          memcpy(sp, src->data, (size_t)bytes);
          r = api->cuMemcpyHtoDAsync(dst, sp, (size_t)bytes, st->cu);
        }
        ruda_bytes_release(src);
        ruda__cuda_drop_when_done(s, st, stage, bytes, ruda__cuda_drop_memory);
      }
    }
    ruda__cuda_trace_end(s, st, tr);
    if (r != CUDA_SUCCESS) {
      if (ruda__cu_result_is_sticky(r))
        ruda__cuda_poison(s, r, "a copy failed after a device fault", true);
      ruda__stream_push_error(cuda_rs(st),
                              ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, "cuMemcpyHtoDAsync",
                                             "writing %llu bytes", (unsigned long long)bytes));
    }
  }
  if (ruda__drop_queue_should_flush(st->drops)) ruda__drop_queue_flush(st->drops);
  ruda__cuda_op_end(s, st, &keep);
}

/* ---- Futures ---- */

/* One descriptor of a read: where its bytes land, and where they are
 * copied from once the future's event has completed. */
typedef struct read_part {
  void *dst;
  const void *staged; /* NULL: copied straight into dst */
  uint64_t size;
  ruda_memory_t *stage; /* pinned staging from the stream's pool, or NULL */
} read_part_t;

/* A read or a sync: completes when `event` has, on whichever thread waits.
 * A read's staged parts are copied out then, and its staging released.
 *
 * Lifetime: the future is on its server's live list from future_new until
 * it is destroyed. Waiting happens under `lock`; when the server is
 * destroyed first (ruda_shutdown, exit), it settles every live future under
 * that lock (ruda__cuda_futures_settle: the result is kept, the event,
 * block and staging go back) and sets `server` to NULL, after which the
 * future touches nothing but itself and `home`. */
typedef struct cuda_future {
  ruda__future_t base;
  cuda_server_t *server; /* NULL once settled by the server's destroy */
  CUevent event;
  ruda_status_t early; /* error found while enqueueing; the result once done */
  read_part_t *parts;   /* `one` for a single descriptor */
  size_t nparts;
  read_part_t one;
  void *block; /* small reads: the pinned block the parts are staged in */
  /* future_new clears the fields above; those below are set one by one. */
  recent_kernels_t recent; /* formatted only when a fault is reported */
  uint64_t generation;
  bool done; /* completed: a wait returns what `early` still holds */
  future_home_t *home;
  struct cuda_future *prev, *next; /* home->live, under home->lock */
  pthread_mutex_t lock;            /* waiting, polling, settling */
} cuda_future_t;

static ruda_status_t future_finish(cuda_future_t *f, CUresult r) {
  cuda_server_t *s = f->server;
  ruda_status_t st = f->early;
  f->early = NULL;
  if (r != CUDA_SUCCESS && st == NULL) {
    char kernels[300];
    ruda__cuda_recent_names(&f->recent, kernels, sizeof kernels);
    if (ruda__cu_result_is_sticky(r) && f->generation == atomic_load(&s->generation)) {
      char text[400];
      snprintf(text, sizeof text, "kernels: %s", kernels);
      ruda__cuda_poison(s, r, text, true);
    }
    st = ruda__cuda_fault_error(r, "cuEventSynchronize", kernels);
  }
  for (size_t i = 0; i < f->nparts; i++) {
    read_part_t *p = &f->parts[i];
    if (st == NULL && p->staged != NULL && p->size > 0) {
      ruda__copy_parallel(p->size >= PARALLEL_READ_OUT ? s->copies : NULL, p->dst, p->staged,
                          (size_t)p->size, STAGE_CHUNK);
    }
    if (p->stage) ruda__memory_release_handle(p->stage);
    p->stage = NULL;
  }
  f->nparts = 0;
  return st;
}

/* Waits for `ev`: polls it for up to `spin_ns` first (a short kernel is done
 * before a blocking wait would even start), then blocks. */
static CUresult event_wait(const ruda__cuda_api_t *api, CUevent ev, uint64_t spin_ns) {
  if (spin_ns > 0) {
    uint64_t start = ruda__now_ns();
    do {
      CUresult r = api->cuEventQuery(ev);
      if (r != CUDA_ERROR_NOT_READY) return r;
    } while (ruda__now_ns() - start < spin_ns);
  }
  return api->cuEventSynchronize(ev);
}

/* The waiting thread may never have used the context. */
static void make_current(const ruda__cuda_api_t *api, CUcontext ctx) {
  CUcontext cur = NULL;
  if (api->cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != ctx) api->cuCtxSetCurrent(ctx);
}

static ruda_status_t cuda_future_wait(ruda__future_t *base) {
  cuda_future_t *f = (cuda_future_t *)base;
  pthread_mutex_lock(&f->lock);
  ruda_status_t st;
  if (f->done) {
    st = f->early;
    f->early = NULL;
  } else {
    /* Not done: not settled, so the server is alive until we unlock. */
    const ruda__cuda_api_t *api = f->server->api;
    CUresult r = CUDA_SUCCESS;
    if (f->event != NULL) {
      make_current(api, f->server->ctx);
      r = event_wait(api, f->event, f->server->wait_spin_ns);
    }
    f->done = true;
    st = future_finish(f, r);
  }
  pthread_mutex_unlock(&f->lock);
  return st;
}

static bool cuda_future_poll(ruda__future_t *base) {
  cuda_future_t *f = (cuda_future_t *)base;
  pthread_mutex_lock(&f->lock);
  bool ready = f->done || f->event == NULL;
  if (!ready) {
    make_current(f->server->api, f->server->ctx);
    ready = f->server->api->cuEventQuery(f->event) != CUDA_ERROR_NOT_READY;
  }
  pthread_mutex_unlock(&f->lock);
  return ready;
}

static void future_unlink(future_home_t *h, cuda_future_t *f) {
  if (f->prev != NULL) f->prev->next = f->next;
  else h->live = f->next;
  if (f->next != NULL) f->next->prev = f->prev;
  f->prev = f->next = NULL;
}

void ruda__cuda_future_free(cuda_future_t *f) {
  pthread_mutex_destroy(&f->lock);
  ruda__free(f);
}

/* Drops one reference to `h` (its lock held; released here). */
void ruda__cuda_home_release_locked(future_home_t *h) {
  bool last = --h->refs == 0;
  pthread_mutex_unlock(&h->lock);
  if (last) {
    pthread_mutex_destroy(&h->lock);
    ruda__free(h);
  }
}

/* Gives the future's event, block and the future itself back to the
 * server's pools (one lock); what does not fit, or belongs to a context
 * that was reset, is freed. A future the server settled holds none of them
 * and only leaves its home. */
static void cuda_future_destroy(ruda__future_t *base) {
  cuda_future_t *f = (cuda_future_t *)base;
  /* Never waited: wait so the staging is not released under a copy. */
  ruda_status_free(cuda_future_wait(base));
  if (f->parts != &f->one) ruda__free(f->parts);
  f->parts = NULL;
  future_home_t *h = f->home;
  pthread_mutex_lock(&h->lock);
  cuda_server_t *s = f->server; /* written under this lock */
  CUevent ev = f->event;
  void *block = f->block;
  bool current = false;
  if (s != NULL) {
    future_unlink(h, f);
    current = f->generation == atomic_load(&s->generation);
    if (ev != NULL && current && s->nevents < EVENT_POOL) {
      s->events[s->nevents++] = ev;
      ev = NULL;
    }
    if (block != NULL && current && s->nblocks < READ_BLOCKS) {
      s->blocks[s->nblocks++] = block;
      block = NULL;
    }
    if (s->nfutures < FUTURE_POOL) {
      s->futures[s->nfutures++] = f;
      f = NULL;
    }
    /* Leftovers are freed under the lock: once it is released the server
     * may be destroyed (this future is no longer on its list), and with it
     * the context they belong to. */
    if (ev != NULL) s->api->cuEventDestroy(ev);
    /* A block from before a context reset went with that context. */
    if (block != NULL && current) s->api->cuMemFreeHost(block);
  }
  if (f != NULL) ruda__cuda_future_free(f);
  ruda__cuda_home_release_locked(h);
}

static const ruda__future_vtable_t cuda_future_vt = {cuda_future_wait, cuda_future_poll,
                                                     cuda_future_destroy};

/* A future for work on `st` with room for `nparts` read parts, holding a
 * pooled event when one is free (future_record creates one otherwise), on
 * the server's live list. NULL when memory is exhausted. */
static cuda_future_t *future_new(cuda_server_t *s, cuda_stream_t *st, size_t nparts) {
  future_home_t *h = s->home;
  cuda_future_t *f = NULL;
  CUevent ev = NULL;
  pthread_mutex_lock(&h->lock);
  if (s->nfutures > 0) f = s->futures[--s->nfutures];
  if (s->nevents > 0) ev = s->events[--s->nevents];
  pthread_mutex_unlock(&h->lock);
  if (f == NULL) {
    f = ruda__malloc(sizeof *f);
    if (f == NULL) {
      if (ev != NULL) ruda__cuda_event_put(s, ev, atomic_load(&s->generation));
      return NULL;
    }
    pthread_mutex_init(&f->lock, NULL);
  }
  memset(f, 0, offsetof(cuda_future_t, recent));
  f->base.vt = &cuda_future_vt;
  f->server = s;
  f->event = ev;
  f->parts = &f->one;
  if (nparts > 1) {
    read_part_t *parts = ruda__calloc(nparts, sizeof *parts);
    if (parts == NULL) {
      if (ev != NULL) ruda__cuda_event_put(s, ev, atomic_load(&s->generation));
      ruda__cuda_future_free(f);
      return NULL;
    }
    f->parts = parts;
  }
  f->recent.n = st != NULL ? st->recent.n : 0;
  f->recent.total = st != NULL ? st->recent.total : 0;
  for (uint32_t i = 0; i < f->recent.n && i < RECENT_KERNELS; i++)
    memcpy(f->recent.names[i], st->recent.names[i], sizeof f->recent.names[i]);
  f->generation = atomic_load(&s->generation);
  f->done = false;
  f->home = h;
  f->prev = NULL;
  /* Only the worker links and settles, so the future is complete before
   * anyone else can find it. */
  pthread_mutex_lock(&h->lock);
  f->next = h->live;
  if (h->live != NULL) h->live->prev = f;
  h->live = f;
  h->refs++;
  pthread_mutex_unlock(&h->lock);
  return f;
}

static ruda_status_t future_record(cuda_server_t *s, cuda_stream_t *st, cuda_future_t *f) {
  CUresult r = f->event != NULL ? CUDA_SUCCESS
                                : s->api->cuEventCreate(&f->event, CU_EVENT_DISABLE_TIMING);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(f->event, st->cu);
  if (r != CUDA_SUCCESS) {
    if (f->event) s->api->cuEventDestroy(f->event);
    f->event = NULL;
    CUresult r2 = s->api->cuStreamSynchronize(st->cu);
    if (r2 != CUDA_SUCCESS) {
      char kernels[300];
      ruda__cuda_recent_names(&f->recent, kernels, sizeof kernels);
      return ruda__cuda_stream_fault(s, r2, "cuStreamSynchronize", kernels);
    }
  }
  return NULL;
}

/* The server is being destroyed: completes every live future now, while
 * its context, staging and copy pool still exist. With `alive` the streams
 * have been synchronised, so each future gets its data (a read's staged
 * parts are copied out; the caller promised `dst` stays valid until the
 * future completes); otherwise RUDA_ERR_UNAVAILABLE. Their events and
 * blocks are freed, and they forget the server. A future being waited on
 * another thread finishes that wait first (its lock). Worker only. */
void ruda__cuda_futures_settle(cuda_server_t *s, bool alive) {
  future_home_t *h = s->home;
  pthread_mutex_lock(&h->lock);
  uint64_t gen = atomic_load(&s->generation);
  for (cuda_future_t *f = h->live, *next; f != NULL; f = next) {
    next = f->next;
    pthread_mutex_lock(&f->lock);
    /* A future from before a context reset holds objects of that context,
     * which went with it. */
    bool current = f->generation == gen;
    if (!f->done) {
      CUresult r = CUDA_SUCCESS;
      if (!current) {
        r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
      } else if (!alive && f->early == NULL) {
        f->early = ruda_status_create(RUDA_ERR_UNAVAILABLE,
                                      "cuda:%u was shut down after a device fault before this "
                                      "operation completed",
                                      s->base.device.index_id);
      } else if (alive && f->event != NULL) {
        r = s->api->cuEventSynchronize(f->event);
      }
      f->early = future_finish(f, r);
      f->done = true;
    }
    if (f->event != NULL && current) s->api->cuEventDestroy(f->event);
    if (f->block != NULL && current) s->api->cuMemFreeHost(f->block);
    f->event = NULL;
    f->block = NULL;
    f->server = NULL;
    f->prev = f->next = NULL;
    pthread_mutex_unlock(&f->lock);
  }
  h->live = NULL;
  pthread_mutex_unlock(&h->lock);
}

/* ---- Vtable: read, sync, flush ---- */

/* Every read hands back a future fenced by an event: the caller waits on
 * the device itself (no second hand-off from the worker after the copy),
 * then the future copies staged parts into the destinations. Reads of at
 * most SMALL_READ bytes in all are staged in one pooled pinned block; larger
 * ones go straight into pinned destinations, else through pinned staging. */
ruda_status_t ruda__cuda_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                              void *const *dsts, size_t count, ruda_stream_id_t stream,
                              ruda__future_t **out) {
  cuda_server_t *s = as_cuda(base);
  const ruda__cuda_api_t *api = s->api;
  *out = NULL;
  ruda__cuda_settle_poison(s, stream);
#if defined(RUDA_HAVE_NCCL_HEADERS)
  ruda__cuda_comms_settle(s, stream, true);
#endif
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  ruda_status_t e = rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
  if (e) return e;
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  if (st->ngc || st->ntrace) ruda__cuda_gc_poll(s, st, false);
  cuda_future_t *f = future_new(s, st, count);
  if (f == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "out of host memory for a read");
  keep_list_t keep = {0};
  for (size_t i = 0; i < count; i++) ruda__cuda_order_binding(s, st, &descs[i].binding, &keep);

  uint64_t total = 0;
  for (size_t i = 0; i < count && total <= SMALL_READ; i++) {
    uint64_t width, height, pitch;
    total += copy_geometry(&descs[i], &width, &height, &pitch) ? width * height : SMALL_READ + 1;
  }
  if (total <= SMALL_READ) f->block = ruda__cuda_block_get(s);
  uint64_t block_off = 0;

  for (size_t i = 0; i < count && f->early == NULL; i++) {
    const ruda__copy_desc_t *d = &descs[i];
    uint64_t width, height, pitch;
    if (!copy_geometry(d, &width, &height, &pitch)) {
      f->early = ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                                    "read: only contiguous and row-pitched layouts can be copied");
      break;
    }
    uint64_t bytes = width * height;
    if (bytes == 0) continue;
    CUdeviceptr src = 0;
    e = copy_target(s, d, "read", &src);
    if (e) {
      f->early = e;
      break;
    }
    read_part_t *p = &f->parts[f->nparts++];
    p->dst = dsts[i];
    p->size = bytes;
    CUresult r;
    long tr = ruda__cuda_trace_begin(s, st, "copy", "read", bytes);
    if (f->block != NULL) {
      void *sp = (char *)f->block + block_off;
      block_off += (bytes + 15) & ~(uint64_t)15;
      p->staged = sp;
      r = copy_rows(api, st->cu, false, sp, src, width, height, pitch);
    } else if (host_is_pinned(api, dsts[i])) {
      r = copy_rows(api, st->cu, false, dsts[i], src, width, height, pitch);
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
        if (r == CUDA_SUCCESS) r = copy_rows(api, st->cu, false, dsts[i], src, width, height, pitch);
        if (r == CUDA_SUCCESS) r = api->cuStreamSynchronize(st->cu);
      }
    }
    ruda__cuda_trace_end(s, st, tr);
    if (r != CUDA_SUCCESS) {
      if (ruda__cu_result_is_sticky(r)) {
        char kernels[300];
        ruda__cuda_recent_names(&f->recent, kernels, sizeof kernels);
        f->early = ruda__cuda_stream_fault(s, r, "cuMemcpyDtoHAsync", kernels);
      } else {
        f->early = ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, "cuMemcpyDtoHAsync",
                                  "reading %llu bytes", (unsigned long long)bytes);
      }
    }
  }
  /* Always fenced: copies enqueued before an early error still write into
   * staging that the future releases. */
  ruda_status_t fe = future_record(s, st, f);
  if (f->early == NULL)
    f->early = fe;
  else
    ruda_status_free(fe);
  /* The read waits for all work before it: a later fault is in later
   * kernels. */
  st->recent.n = 0;
  st->recent.total = 0;
  ruda__cuda_op_end(s, st, &keep);
  *out = &f->base;
  return NULL;
}

ruda_status_t ruda__cuda_sync(ruda__server_t *base, ruda_stream_id_t stream,
                              ruda__future_t **out) {
  cuda_server_t *s = as_cuda(base);
  *out = NULL;
  ruda__cuda_settle_poison(s, stream);
#if defined(RUDA_HAVE_NCCL_HEADERS)
  ruda__cuda_comms_settle(s, stream, true);
#endif
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  ruda_status_t e = rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
  if (e) return e;
  /* Bindings kept for finished work of any stream go back first: a sync is
   * where a caller expects memory to return. */
  ruda__cuda_gc_poll_all(s);
  cuda_stream_t *st = ruda__cuda_stream_find(s, stream);
  if (st == NULL) {
    *out = ruda__future_ready(NULL);
    return NULL;
  }
  if (st->ntrace) ruda__cuda_gc_poll(s, st, false);
  cuda_future_t *f = future_new(s, st, 0);
  if (f == NULL) {
    CUresult r = s->api->cuStreamSynchronize(st->cu);
    return r == CUDA_SUCCESS ? NULL : ruda__cuda_fault_error(r, "cuStreamSynchronize", "");
  }
  f->early = future_record(s, st, f);
  st->recent.n = 0;
  st->recent.total = 0;
  *out = &f->base;
  return NULL;
}

ruda_status_t ruda__cuda_flush(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
#if defined(RUDA_HAVE_NCCL_HEADERS)
  ruda__cuda_comms_settle(s, stream, false);
#endif
  cuda_stream_t *st = ruda__cuda_stream_find(s, stream);
  if (st != NULL) {
    CUresult r = s->api->cuStreamQuery(st->cu);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY && ruda__cu_result_is_sticky(r)) {
      char names[300];
      ruda__cuda_recent_names(&st->recent, names, sizeof names);
      ruda__cuda_poison(s, r, names, false);
      ruda__cuda_settle_poison(s, stream); /* resets the device: st is empty after it */
    }
  }
  ruda__cuda_gc_poll_all(s);
  st = ruda__cuda_stream_find(s, stream);
  if (st != NULL) {
    ruda__drop_queue_flush(st->drops);
    ruda__cuda_gpu_flush(st->gpu_store);
  }
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  ruda_status_t e = rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
  if (e && st != NULL) ruda__memory_cleanup(st->gpu, false);
  return e;
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
