/* Stream slots of the CUDA server: the device and pinned storages under
 * each slot's memory managers, the pools of events and small-read blocks,
 * slot creation and teardown, cross-stream ordering and the deferred
 * releases that go with it (gc batches, the drop queue), the timeline
 * trace, and the kernel names and errors of fault reports. See
 * cuda_server.c for the design. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_server.h"
#include "server/trace.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- Storages ---- */

/* False when memory is exhausted: the caller frees `addr` at once. */
static bool pending_push(pending_frees_t *p, uint64_t addr) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    uint64_t *na = ruda__realloc(p->addrs, cap * sizeof *na);
    if (na == NULL) return false;
    p->addrs = na;
    p->cap = cap;
  }
  p->addrs[p->n++] = addr;
  return true;
}

/* cuMemAllocAsync on the stream (once more after the stream's pending frees
 * when out of memory), else cuMemAlloc. */
ruda_status_t ruda__cuda_gpu_malloc(gpu_storage_t *g, uint64_t size, CUdeviceptr *out) {
  size_t n = size ? (size_t)size : 1;
  CUresult r = CUDA_ERROR_NOT_SUPPORTED;
  if (g->use_async) {
    r = g->api->cuMemAllocAsync(out, n, g->stream);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      /* Frees queued on the stream may not have happened yet: finish them
       * and try once more before reporting. */
      g->api->cuStreamSynchronize(g->stream);
      r = g->api->cuMemAllocAsync(out, n, g->stream);
    }
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_OUT_OF_MEMORY) g->use_async = false;
  }
  if (!g->use_async) r = g->api->cuMemAlloc(out, n);
  if (r != CUDA_SUCCESS)
    return ruda__cu_alloc_error(r, g->use_async ? "cuMemAllocAsync" : "cuMemAlloc", size);
  return NULL;
}

void ruda__cuda_gpu_free_now(gpu_storage_t *g, CUdeviceptr p) {
  if (g->use_async)
    g->api->cuMemFreeAsync(p, g->stream);
  else
    g->api->cuMemFree(p);
}

static ruda_status_t gpu_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  gpu_storage_t *g = self;
  CUdeviceptr p = 0;
  ruda_status_t e = ruda__cuda_gpu_malloc(g, size, &p);
  if (e) return e;
  out->id = ++g->next_id;
  out->base = (uint64_t)p;
  out->offset = 0;
  out->size = size;
  ruda__cuda_log("memory", "device page of %llu bytes at 0x%llx", (unsigned long long)size,
                 (unsigned long long)p);
  return NULL;
}

static void gpu_dealloc(void *self, const ruda__storage_handle_t *h) {
  gpu_storage_t *g = self;
  if (!pending_push(&g->pending, h->base)) ruda__cuda_gpu_free_now(g, (CUdeviceptr)h->base);
}

void ruda__cuda_gpu_flush(void *self) {
  gpu_storage_t *g = self;
  for (size_t i = 0; i < g->pending.n; i++)
    ruda__cuda_gpu_free_now(g, (CUdeviceptr)g->pending.addrs[i]);
  g->pending.n = 0;
}

static void gpu_destroy(void *self) {
  gpu_storage_t *g = self;
  ruda__cuda_gpu_flush(g);
  ruda__free(g->pending.addrs);
  ruda__free(g);
}

static const ruda__storage_vtable_t gpu_storage_vt = {gpu_alloc, gpu_dealloc, ruda__cuda_gpu_flush,
                                                      gpu_destroy};

static ruda_status_t pinned_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  pinned_storage_t *p = self;
  void *ptr = NULL;
  CUresult r = p->api->cuMemAllocHost(&ptr, size ? (size_t)size : 1);
  if (r != CUDA_SUCCESS) return ruda__cu_alloc_error(r, "cuMemAllocHost", size);
  out->id = ++p->next_id;
  out->base = (uint64_t)(uintptr_t)ptr;
  out->offset = 0;
  out->size = size;
  return NULL;
}

static void pinned_dealloc(void *self, const ruda__storage_handle_t *h) {
  pinned_storage_t *p = self;
  if (!pending_push(&p->pending, h->base)) p->api->cuMemFreeHost((void *)(uintptr_t)h->base);
}

void ruda__cuda_pinned_flush(void *self) {
  pinned_storage_t *p = self;
  for (size_t i = 0; i < p->pending.n; i++)
    p->api->cuMemFreeHost((void *)(uintptr_t)p->pending.addrs[i]);
  p->pending.n = 0;
}

static void pinned_destroy(void *self) {
  pinned_storage_t *p = self;
  ruda__cuda_pinned_flush(p);
  ruda__free(p->pending.addrs);
  ruda__free(p);
}

static const ruda__storage_vtable_t pinned_storage_vt = {pinned_alloc, pinned_dealloc,
                                                         ruda__cuda_pinned_flush, pinned_destroy};

/* ---- Event and block pools ---- */

CUresult ruda__cuda_event_get(cuda_server_t *s, CUevent *out) {
  pthread_mutex_lock(&s->home->lock);
  if (s->nevents > 0) {
    *out = s->events[--s->nevents];
    pthread_mutex_unlock(&s->home->lock);
    return CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&s->home->lock);
  return s->api->cuEventCreate(out, CU_EVENT_DISABLE_TIMING);
}

/* Returns an event of generation `gen` (events of a context that was reset
 * are not kept). */
void ruda__cuda_event_put(cuda_server_t *s, CUevent ev, uint64_t gen) {
  if (ev == NULL) return;
  pthread_mutex_lock(&s->home->lock);
  if (gen == atomic_load(&s->generation) && s->nevents < EVENT_POOL) {
    s->events[s->nevents++] = ev;
    ev = NULL;
  }
  pthread_mutex_unlock(&s->home->lock);
  if (ev != NULL) s->api->cuEventDestroy(ev);
}

/* A pinned block of SMALL_READ bytes; NULL when none can be allocated. */
void *ruda__cuda_block_get(cuda_server_t *s) {
  void *b = NULL;
  pthread_mutex_lock(&s->home->lock);
  if (s->nblocks > 0) b = s->blocks[--s->nblocks];
  pthread_mutex_unlock(&s->home->lock);
  if (b == NULL && s->api->cuMemAllocHost(&b, SMALL_READ) != CUDA_SUCCESS) b = NULL;
  return b;
}

/* ---- Fences for the drop queue ---- */

static void *fence_make(void *ctx) {
  fence_ctx_t *f = ctx;
  CUevent ev = NULL;
  if (f->api->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return NULL;
  if (f->api->cuEventRecord(ev, f->stream) != CUDA_SUCCESS) {
    f->api->cuEventDestroy(ev);
    return NULL;
  }
  return ev;
}
static void fence_wait(void *ctx, void *fence) {
  fence_ctx_t *f = ctx;
  if (fence != NULL)
    f->api->cuEventSynchronize((CUevent)fence);
  else
    f->api->cuStreamSynchronize(f->stream);
}
static void fence_destroy(void *ctx, void *fence) {
  fence_ctx_t *f = ctx;
  if (fence != NULL) f->api->cuEventDestroy((CUevent)fence);
}

/* ---- Fault reports ---- */

void ruda__cuda_recent_names(const recent_kernels_t *rk, char *buf, size_t cap) {
  buf[0] = '\0';
  size_t used = 0;
  uint32_t n = rk->n < RECENT_KERNELS ? rk->n : RECENT_KERNELS;
  for (uint32_t i = 0; i < n && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", rk->names[i]);
  if (rk->total > n && used < cap)
    snprintf(buf + used, cap - used, " (and %u more)", rk->total - n);
  if (buf[0] == '\0') snprintf(buf, cap, "(no kernel recorded)");
}

/* The error for a fault seen while waiting on the stream. */
ruda_status_t ruda__cuda_fault_error(CUresult r, const char *call, const char *kernels) {
  ruda_status_t s = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, call,
                                   "a kernel failed on the device; kernels launched on this "
                                   "stream since its last sync: %s",
                                   kernels);
  return ruda_status_into_server(s);
}

/* The error for a failure `r` of `call` on work of a stream; a sticky one
 * (the context is gone) also poisons the server, reported by this error. */
ruda_status_t ruda__cuda_stream_fault(cuda_server_t *s, CUresult r, const char *call,
                                      const char *kernels) {
  if (ruda__cu_result_is_sticky(r)) ruda__cuda_poison(s, r, kernels, true);
  return ruda__cuda_fault_error(r, call, kernels);
}

/* ---- Slots ---- */

static ruda_status_t stream_init(cuda_server_t *s, cuda_stream_t *st) {
  const ruda__cuda_api_t *api = s->api;
  CUresult r = api->cuStreamCreateWithPriority(&st->cu, CU_STREAM_NON_BLOCKING, s->priority);
  if (r != CUDA_SUCCESS)
    return ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamCreateWithPriority", NULL);
  ruda_status_t e = NULL;
  st->last_synced = ruda__calloc(s->max_streams, sizeof *st->last_synced);
  st->gpu_store = ruda__calloc(1, sizeof *st->gpu_store);
  st->pin_store = ruda__calloc(1, sizeof *st->pin_store);
  if (!st->last_synced || !st->gpu_store || !st->pin_store) goto no_memory;
  st->gpu_store->api = api;
  st->gpu_store->stream = st->cu;
  st->gpu_store->use_async = api->cuMemAllocAsync != NULL && api->cuMemFreeAsync != NULL &&
                             getenv("RUDA_CUDA_NO_ASYNC_ALLOC") == NULL;
  st->pin_store->api = api;
  const ruda_device_properties_t *props = &s->base.utilities.properties;
  ruda__memory_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.configuration = RUDA_MEMORY_SUBSLICES;
  cfg.persistent = RUDA_PERSISTENT_ENABLED;
  /* Device pages stay until an explicit cleanup, as in the reference:
   * cuMemAllocAsync/cuMemFreeAsync churn costs far more than it saves. */
  cfg.keep_empty_pages = true;
  ruda__storage_t gs = {&gpu_storage_vt, st->gpu_store, props->memory.alignment, 0};
  /* A manager takes its storage, even when it fails (and frees it then). */
  e = ruda__memory_manager_create(gs, props->memory, &cfg, "Main GPU Memory", &st->gpu);
  if (e) {
    st->gpu_store = NULL;
    goto fail;
  }
  ruda_memory_properties_t pprops = {PINNED_PAGE, 16};
  ruda__memory_config_t pcfg = cfg;
  pcfg.persistent = RUDA_PERSISTENT_DISABLED;
  ruda__storage_t ps = {&pinned_storage_vt, st->pin_store, 16, 0};
  e = ruda__memory_manager_create(ps, pprops, &pcfg, "Pinned CPU Memory", &st->pinned);
  if (e) {
    st->pin_store = NULL;
    goto fail;
  }
  st->fence = (fence_ctx_t){api, st->cu};
  ruda__fence_ops_t ops = {fence_make, fence_wait, fence_destroy, &st->fence};
  st->drops = ruda__drop_queue_create(64, 64ull << 20, ops);
  if (st->drops == NULL) goto no_memory;
  void *ch = NULL;
  if (api->cuMemAllocHost(&ch, 4 * sizeof(uint32_t)) == CUDA_SUCCESS) st->count_host = ch;
  st->cursor = 1;
  st->init = true;
  return NULL;
no_memory:
  e = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory creating a stream");
fail:
  ruda__cuda_stream_free(s, st, true);
  return e;
}

/* The slot of `id`, created on first use. On failure the error is queued
 * on the slot (whose error list always exists) and NULL is returned. */
cuda_stream_t *ruda__cuda_stream_get(cuda_server_t *s, ruda_stream_id_t id) {
  cuda_stream_t *st = slot_for(s, id);
  if (st->init) return st;
  if (s->dead != 0) return NULL; /* ruda__cuda_settle_poison queued the reason */
  ruda_status_t e = stream_init(s, st);
  if (e) {
    ruda__stream_errors_push(&st->errors, e);
    return NULL;
  }
  if (!s->memory_group.device[0]) ruda__memory_group_init(&s->memory_group, s->base.device);
  ruda__memory_manager_join(st->gpu, &s->memory_group, id.value);
  return st;
}

static void trace_poll(cuda_server_t *s, cuda_stream_t *st, bool wait);

void ruda__cuda_gc_poll(cuda_server_t *s, cuda_stream_t *st, bool wait) {
  if (st->ntrace) trace_poll(s, st, wait);
  size_t w = 0;
  for (size_t i = 0; i < st->ngc; i++) {
    gc_batch_t *b = &st->gc[i];
    CUresult r = wait ? s->api->cuEventSynchronize(b->event) : s->api->cuEventQuery(b->event);
    if (r == CUDA_ERROR_NOT_READY) {
      st->gc[w++] = *b;
      continue;
    }
    for (size_t k = 0; k < b->n; k++) ruda_binding_release(&b->bindings[k]);
    ruda__free(b->bindings);
    ruda__cuda_event_put(s, b->event, atomic_load(&s->generation));
  }
  st->ngc = w;
}

/* ---- Timeline trace ---- */

typedef struct trace_item {
  CUevent start, end;
  uint64_t enqueued_ns, bytes;
  const char *category;
  char name[64];
} trace_item_t;

/* Starts a device-timed slice: returns its index, or -1 when the trace is
 * off (one relaxed load) or events are unavailable. */
long ruda__cuda_trace_begin(cuda_server_t *s, cuda_stream_t *st, const char *category,
                            const char *name, uint64_t bytes) {
  if (!ruda__trace_on()) return -1;
  if (st->ntrace == st->captrace) {
    size_t cap = st->captrace ? st->captrace * 2 : 64;
    trace_item_t *nt = ruda__realloc(st->trace, cap * sizeof *nt);
    if (nt == NULL) return -1;
    st->trace = nt;
    st->captrace = cap;
  }
  trace_item_t *t = &st->trace[st->ntrace];
  memset(t, 0, sizeof *t);
  if (s->api->cuEventCreate(&t->start, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return -1;
  if (s->api->cuEventCreate(&t->end, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    s->api->cuEventDestroy(t->start);
    return -1;
  }
  s->api->cuEventRecord(t->start, st->cu);
  t->enqueued_ns = ruda__now_ns();
  t->bytes = bytes;
  t->category = category;
  snprintf(t->name, sizeof t->name, "%s", name);
  return (long)st->ntrace++;
}

void ruda__cuda_trace_end(cuda_server_t *s, cuda_stream_t *st, long idx) {
  if (idx < 0) return;
  s->api->cuEventRecord(st->trace[idx].end, st->cu);
}

/* Emits the finished slices of `st` in order. Durations come from the
 * device; a slice is placed at the later of its enqueue time and the end
 * of the slice before it on the stream (the device clock has no exact
 * mapping to the host's). */
static void trace_poll(cuda_server_t *s, cuda_stream_t *st, bool wait) {
  size_t done = 0;
  for (; done < st->ntrace; done++) {
    trace_item_t *t = &st->trace[done];
    CUresult r = wait ? s->api->cuEventSynchronize(t->end) : s->api->cuEventQuery(t->end);
    if (r == CUDA_ERROR_NOT_READY) break;
    float ms = 0.0f;
    if (r == CUDA_SUCCESS && s->api->cuEventElapsedTime(&ms, t->start, t->end) == CUDA_SUCCESS) {
      uint64_t start = t->enqueued_ns > st->trace_last_end ? t->enqueued_ns : st->trace_last_end;
      uint64_t end = start + (uint64_t)((double)ms * 1e6);
      ruda__trace_slice(s->base.device, st->index, t->category, t->name, start, end, t->bytes);
      st->trace_last_end = end;
    }
    s->api->cuEventDestroy(t->start);
    s->api->cuEventDestroy(t->end);
  }
  if (done > 0) {
    memmove(st->trace, st->trace + done, (st->ntrace - done) * sizeof *st->trace);
    st->ntrace -= done;
  }
}

/* ---- Cross-stream ordering, deferred releases ---- */

/* Orders `st` after the work on `b`'s stream when that is another slot (an
 * event, recorded when the origin has had work since the last wait), and
 * keeps a clone of `b` in `keep`. */
void ruda__cuda_order_binding(cuda_server_t *s, cuda_stream_t *st, const ruda_binding_t *b,
                              keep_list_t *keep) {
  if (ruda_binding_is_empty(b)) return;
  cuda_stream_t *origin = slot_for(s, b->stream);
  if (origin == st || !origin->init) return;
  if (st->last_synced[origin->index] < origin->cursor) {
    CUevent ev = NULL;
    if (ruda__cuda_event_get(s, &ev) == CUDA_SUCCESS) {
      /* The wait captures the record made now; the event can be reused. */
      s->api->cuEventRecord(ev, origin->cu);
      s->api->cuStreamWaitEvent(st->cu, ev, 0);
      ruda__cuda_event_put(s, ev, atomic_load(&s->generation));
    } else {
      s->api->cuStreamSynchronize(origin->cu);
    }
    st->last_synced[origin->index] = origin->cursor;
    ruda__cuda_log("stream", "Waiting on stream slot %u from slot %u", origin->index,
                   st->index);
  }
  if (keep->n == keep->cap) {
    size_t cap = keep->cap ? keep->cap * 2 : 4;
    ruda_binding_t *ni = ruda__realloc(keep->items, cap * sizeof *ni);
    if (ni == NULL) {
      keep->sync = true;
      return;
    }
    keep->items = ni;
    keep->cap = cap;
  }
  keep->items[keep->n++] = ruda_binding_clone(b);
}

static void keep_release(keep_list_t *keep) {
  for (size_t i = 0; i < keep->n; i++) ruda_binding_release(&keep->items[i]);
  ruda__free(keep->items);
}

/* Ends an operation on `st` (other slots now see it as new work) and keeps
 * `keep` (taken) alive until the work enqueued so far has completed. */
void ruda__cuda_op_end(cuda_server_t *s, cuda_stream_t *st, keep_list_t *keep) {
  st->cursor++;
  if (keep->n == 0 && !keep->sync) return;
  CUevent ev = NULL;
  if (st->ngc == st->gccap) {
    size_t cap = st->gccap ? st->gccap * 2 : 8;
    gc_batch_t *ng = ruda__realloc(st->gc, cap * sizeof *ng);
    if (ng != NULL) {
      st->gc = ng;
      st->gccap = cap;
    }
  }
  if (keep->sync || st->ngc == st->gccap || ruda__cuda_event_get(s, &ev) != CUDA_SUCCESS) {
    s->api->cuStreamSynchronize(st->cu);
    keep_release(keep);
    return;
  }
  s->api->cuEventRecord(ev, st->cu);
  st->gc[st->ngc++] = (gc_batch_t){ev, keep->items, keep->n};
}

ruda_status_t ruda__cuda_resolve(cuda_server_t *s, const ruda_binding_t *b, CUdeviceptr *out) {
  return ruda__cuda_resolve_view(s, b, out, NULL);
}

ruda_status_t ruda__cuda_resolve_view(cuda_server_t *s, const ruda_binding_t *b, CUdeviceptr *out,
                                      uint64_t *out_size) {
  cuda_stream_t *origin = slot_for(s, b->stream);
  if (!origin->init || ruda_binding_is_empty(b))
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "the buffer is not bound on this device");
  ruda__storage_handle_t h;
  ruda_status_t e = ruda__memory_resolve_binding(origin->gpu, b, &h);
  if (e) return e;
  *out = (CUdeviceptr)ruda__storage_handle_addr(&h);
  if (out_size) *out_size = h.size;
  return NULL;
}

/* Pinned staging of `size` bytes from the stream's pinned pool. */
ruda_status_t ruda__cuda_pinned_reserve(cuda_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
                                        void **out_ptr) {
  ruda_memory_t *m = ruda__memory_new();
  if (m == NULL) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda_status_t e = ruda__memory_alloc(st->pinned, m, size, st->cursor);
  if (e) {
    ruda__memory_release_handle(m);
    return e;
  }
  ruda__storage_handle_t h;
  e = ruda__memory_resolve(st->pinned, m, 0, 0, &h);
  if (e) {
    ruda__memory_release_handle(m);
    return e;
  }
  *out_mem = m;
  *out_ptr = (void *)(uintptr_t)ruda__storage_handle_addr(&h);
  return NULL;
}

void ruda__cuda_drop_memory(void *item) { ruda__memory_release_handle(item); }

void ruda__cuda_drop_bytes(void *item) {
  ruda_bytes_t *b = item;
  ruda_bytes_release(b);
  ruda__free(b);
}

/* Drops `item` once the copies enqueued so far on `st` have completed (the
 * drop queue); when it cannot be queued, waits for them and drops it now. */
void ruda__cuda_drop_when_done(cuda_server_t *s, cuda_stream_t *st, void *item, uint64_t bytes,
                               ruda__drop_fn drop) {
  ruda_status_t e = ruda__drop_queue_push(st->drops, item, bytes, drop);
  if (e == NULL) return;
  ruda_status_free(e);
  s->api->cuStreamSynchronize(st->cu);
  drop(item);
}

/* ---- Slot teardown ---- */

/* Frees what `st` holds, whether fully or partly initialized, and leaves the
 * slot empty (its index and error list kept). */
void ruda__cuda_stream_free(cuda_server_t *s, cuda_stream_t *st, bool context_alive) {
  const ruda__cuda_api_t *api = s->api;
  if (st->cu != NULL && context_alive) api->cuStreamSynchronize(st->cu);
  ruda__cuda_gc_poll(s, st, true);
  ruda__free(st->gc);
  ruda__free(st->trace);
  ruda__drop_queue_destroy(st->drops);
  /* A manager owns its storage; a storage without one is freed here. */
  if (st->gpu) ruda__memory_manager_destroy(st->gpu);
  else if (st->gpu_store) gpu_destroy(st->gpu_store);
  if (st->pinned) ruda__memory_manager_destroy(st->pinned);
  else if (st->pin_store) pinned_destroy(st->pin_store);
  if (st->info_dev) api->cuMemFree(st->info_dev);
  if (st->count_host) api->cuMemFreeHost(st->count_host);
  if (st->cu != NULL) api->cuStreamDestroy(st->cu);
  ruda__free(st->last_synced);
  ruda__stream_errors_t errors = st->errors;
  uint32_t index = st->index;
  memset(st, 0, sizeof *st);
  st->index = index;
  st->errors = errors;
}

void ruda__cuda_stream_teardown(cuda_server_t *s, cuda_stream_t *st, bool context_alive) {
  if (st->init) ruda__cuda_stream_free(s, st, context_alive);
  ruda__stream_errors_deinit(&st->errors);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
