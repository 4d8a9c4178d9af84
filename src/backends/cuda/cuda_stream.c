/* Streams of the CUDA server: the CUDA part of each stream's state (in the
 * server layer's stream table): the device and pinned storages under its
 * memory managers, its creation, reclaim and teardown; the pools of events
 * and small-read blocks; cross-stream ordering and the deferred releases
 * that go with it (the drop queue); the fence and the timer of the
 * server layer's operation pipeline. See cuda_server.c for the design. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_stream.h"
#include "base/env.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* ---- Storages ---- */

/* False when memory is exhausted: the caller frees the page at once. */
static bool page_list_push(page_list_t *l, uint64_t addr, uint64_t size) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    struct listed_page *np = ruda__realloc(l->pages, cap * sizeof *np);
    if (np == NULL) return false;
    l->pages = np;
    l->cap = cap;
  }
  l->pages[l->n++] = (struct listed_page){addr, size};
  l->bytes += size;
  return true;
}

/* Forgets every page of `l` (freed, or gone with a reset context). */
static void page_list_clear(page_list_t *l) {
  l->n = 0;
  l->bytes = 0;
}

/* A stashed page of exactly `size` bytes (pools ask for few sizes), the
 * latest first; false when there is none. */
static bool stash_take(page_stash_t *st, uint64_t size, CUdeviceptr *out) {
  page_list_t *l = &st->list;
  for (size_t i = l->n; i-- > 0;) {
    if (l->pages[i].size != size) continue;
    *out = (CUdeviceptr)l->pages[i].addr;
    l->bytes -= size;
    l->pages[i] = l->pages[--l->n];
    return true;
  }
  return false;
}

void ruda__cuda_stash_drain(page_stash_t *st) {
  page_list_t *l = &st->list;
  for (size_t i = 0; i < l->n; i++) st->api->cuMemFree((CUdeviceptr)l->pages[i].addr);
  page_list_clear(l);
}

void ruda__cuda_stash_forget(page_stash_t *st) { page_list_clear(&st->list); }

void ruda__cuda_stash_destroy(page_stash_t *st) {
  ruda__cuda_stash_drain(st);
  ruda__free(st->list.pages);
  st->list = (page_list_t){0};
}

/* cuMemAllocAsync on the stream (once more after the stream's pending frees
 * when out of memory); else a stashed page or cuMemAlloc (once more after
 * freeing the stash when out of memory). */
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
  if (!g->use_async) {
    if (stash_take(g->stash, n, out)) return NULL;
    r = g->api->cuMemAlloc(out, n);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && g->stash->list.n > 0) {
      ruda__cuda_log("memory", "out of memory for %llu bytes: freeing %llu stashed bytes",
                     (unsigned long long)size, (unsigned long long)g->stash->list.bytes);
      ruda__cuda_stash_drain(g->stash);
      r = g->api->cuMemAlloc(out, n);
    }
  }
  if (r != CUDA_SUCCESS)
    return ruda__cu_alloc_error(r, g->use_async ? "cuMemAllocAsync" : "cuMemAlloc", size);
  return NULL;
}

void ruda__cuda_storage_retire(void *storage, uint64_t addr, uint64_t size) {
  deferred_frees_t *d = storage;
  if (!page_list_push(&d->pending, addr, size)) d->free_page(storage, addr, size);
}

void ruda__cuda_storage_flush(void *storage) {
  deferred_frees_t *d = storage;
  for (size_t i = 0; i < d->pending.n; i++)
    d->free_page(storage, d->pending.pages[i].addr, d->pending.pages[i].size);
  page_list_clear(&d->pending);
}

/* Flushes a device or pinned storage and frees it. */
static void storage_destroy(void *storage) {
  deferred_frees_t *d = storage;
  ruda__cuda_storage_flush(storage);
  ruda__free(d->pending.pages);
  ruda__free(storage);
}

/* A device page's free_page: now (in stream order with cuMemFreeAsync), or
 * stashed when the state is going away with nothing in flight. */
static void gpu_free_now(void *storage, uint64_t p, uint64_t size) {
  gpu_storage_t *g = storage;
  if (g->use_async)
    g->api->cuMemFreeAsync((CUdeviceptr)p, g->stream);
  else if (!g->to_stash || !page_list_push(&g->stash->list, p, size))
    g->api->cuMemFree((CUdeviceptr)p);
}

static ruda_status_t gpu_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  gpu_storage_t *g = self;
  CUdeviceptr p = 0;
  ruda_status_t e = ruda__cuda_gpu_malloc(g, size, &p);
  if (e) return e;
  *out = ruda__storage_handle_whole(++g->next_id, (uint64_t)p, size);
  ruda__cuda_log("memory", "device page of %llu bytes at 0x%llx", (unsigned long long)size,
                 (unsigned long long)p);
  return NULL;
}

static void gpu_dealloc(void *self, const ruda__storage_handle_t *h) {
  ruda__cuda_storage_retire(self, h->base, h->size ? h->size : 1);
}

static const ruda__storage_vtable_t gpu_storage_vt = {gpu_alloc, gpu_dealloc,
                                                      ruda__cuda_storage_flush, storage_destroy};

static ruda_status_t pinned_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  pinned_storage_t *p = self;
  void *ptr = NULL;
  CUresult r = p->api->cuMemAllocHost(&ptr, size ? (size_t)size : 1);
  if (r != CUDA_SUCCESS) return ruda__cu_alloc_error(r, "cuMemAllocHost", size);
  *out = ruda__storage_handle_whole(++p->next_id, (uint64_t)(uintptr_t)ptr, size);
  return NULL;
}

static void pinned_dealloc(void *self, const ruda__storage_handle_t *h) {
  ruda__cuda_storage_retire(self, h->base, h->size);
}

/* A pinned page's free_page. */
static void pinned_free_now(void *storage, uint64_t p, uint64_t size) {
  (void)size;
  ((pinned_storage_t *)storage)->api->cuMemFreeHost((void *)(uintptr_t)p);
}

static const ruda__storage_vtable_t pinned_storage_vt = {pinned_alloc, pinned_dealloc,
                                                         ruda__cuda_storage_flush, storage_destroy};

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
  if (gen == ruda__cuda_generation(&s->fault) && s->nevents < EVENT_POOL) {
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

void ruda__cuda_block_put(cuda_server_t *s, void *block) {
  if (block == NULL) return;
  pthread_mutex_lock(&s->home->lock);
  if (s->nblocks < READ_BLOCKS) {
    s->blocks[s->nblocks++] = block;
    block = NULL;
  }
  pthread_mutex_unlock(&s->home->lock);
  if (block != NULL) s->api->cuMemFreeHost(block);
}

/* ---- How far a stream is known complete ---- */

cuda_synced_t *ruda__cuda_synced_new(void) {
  cuda_synced_t *c = ruda__malloc(sizeof *c);
  if (c == NULL) return NULL;
  atomic_init(&c->cursor, 0);
  atomic_init(&c->refs, 1);
  return c;
}

RUDA__HOT
void ruda__cuda_synced_release(cuda_synced_t *c) {
  if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) ruda__free(c);
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

/* ---- Streams ---- */

static ruda_status_t stream_init(cuda_server_t *s, cuda_stream_t *st) {
  const ruda__cuda_api_t *api = s->api;
  CUresult r = api->cuStreamCreateWithPriority(&st->cu, CU_STREAM_NON_BLOCKING, s->priority);
  if (r != CUDA_SUCCESS)
    return ruda__cu_error(RUDA_ERR_SERVER_GENERIC, r, "cuStreamCreateWithPriority", NULL);
  ruda_status_t e = NULL;
  st->gpu_store = ruda__calloc(1, sizeof *st->gpu_store);
  st->pin_store = ruda__calloc(1, sizeof *st->pin_store);
  if (!st->gpu_store || !st->pin_store) goto no_memory;
  st->gpu_store->frees.free_page = gpu_free_now;
  st->gpu_store->api = api;
  st->gpu_store->stream = st->cu;
  st->gpu_store->use_async = api->cuMemAllocAsync != NULL && api->cuMemFreeAsync != NULL &&
                             ruda__env_int("RUDA_CUDA_ASYNC_ALLOC", 0) != 0;
  st->gpu_store->stash = &s->stash;
  st->pin_store->frees.free_page = pinned_free_now;
  st->pin_store->api = api;
  const ruda_device_properties_t *props = &s->base.utilities.properties;
  /* The configured pools and persistent_memory (server layer settings). */
  ruda__memory_config_t cfg = s->base.utilities.settings.memory;
  /* Device pages stay until an explicit cleanup (memory_cleanup): the
   * driver's allocations cost far more than they save, and cuMemFree
   * waits for the device. */
  cfg.keep_empty_pages = true;
  ruda__storage_t gs = {&gpu_storage_vt, st->gpu_store, props->memory.alignment, 0};
  /* A manager takes its storage, even when it fails (and frees it then). */
  e = ruda__memory_manager_create(gs, props->memory, &cfg, "Main GPU Memory", &st->gpu);
  if (e) {
    st->gpu_store = NULL;
    goto fail;
  }
  ruda_memory_properties_t pprops = {PINNED_PAGE, 16};
  /* Staging is short-lived: its pool never keeps persistent slices. */
  ruda__memory_config_t pcfg = cfg;
  pcfg.persistent = RUDA_PERSISTENT_MEMORY_DISABLED;
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
  if (api->cuMemAllocHost(&ch, SCRATCH_BYTES) == CUDA_SUCCESS) st->count_host = ch;
  /* Without it (no host memory) the stream is simply never known idle. */
  st->synced = ruda__cuda_synced_new();
  st->pipe.memory = st->gpu;
  return NULL;
no_memory:
  e = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory creating a stream");
fail:
  ruda__cuda_stream_free(s, st, true);
  return e;
}

bool ruda__cuda_stream_setup(void *backend, ruda__stream_t *rs) {
  cuda_server_t *s = backend;
  if (s->fault.dead != 0) return false; /* the vtable entry queued the reason */
  ruda_status_t e = stream_init(s, cuda_ext(rs));
  if (e) ruda__stream_push_error(rs, e);
  return e == NULL;
}

/* Kept bindings pin memory of their origin stream; a report or a cleanup
 * of any stream should not count memory that only finished work holds. */
RUDA__HOT
void ruda__cuda_gc_poll_all(cuda_server_t *s) {
  if (s->pipeline.busy == 0 || ruda__cuda_faulted(&s->fault)) return;
  ruda__stream_pipe_poll_all(&s->pipeline);
}

/* ---- The pipeline's timer: events with timing ---- */

static void *timing_mark(void *backend, void *stream) {
  cuda_server_t *s = backend;
  CUevent ev = NULL;
  if (s->api->cuEventCreate(&ev, CU_EVENT_DEFAULT) != CUDA_SUCCESS) return NULL;
  s->api->cuEventRecord(ev, ((cuda_stream_t *)stream)->cu);
  return ev;
}

static int timing_elapsed(void *backend, void *start, void *end, bool wait, uint64_t *ns) {
  cuda_server_t *s = backend;
  CUresult r = wait ? s->api->cuEventSynchronize(end) : s->api->cuEventQuery(end);
  if (r == CUDA_ERROR_NOT_READY) return -1;
  float ms = 0.0f;
  if (r != CUDA_SUCCESS || s->api->cuEventElapsedTime(&ms, start, end) != CUDA_SUCCESS) return 0;
  *ns = (uint64_t)((double)ms * 1e6);
  return 1;
}

static void timing_release(void *backend, void *mark) {
  ((cuda_server_t *)backend)->api->cuEventDestroy(mark);
}

const ruda__stream_timer_t ruda__cuda_event_timer = {timing_mark, timing_elapsed, timing_release};

/* ---- The pipeline's fence: pooled events ---- */

static ruda__fence_made_t event_record(void *backend, void *stream, void **out) {
  cuda_server_t *s = backend;
  CUevent ev = NULL;
  if (ruda__cuda_event_get(s, &ev) != CUDA_SUCCESS) return RUDA__FENCE_FAILED;
  s->api->cuEventRecord(ev, ((cuda_stream_t *)stream)->cu);
  *out = ev;
  return RUDA__FENCE_MADE;
}

static bool event_wait_on(void *backend, void *stream, void *fence) {
  cuda_server_t *s = backend;
  return s->api->cuStreamWaitEvent(((cuda_stream_t *)stream)->cu, fence, 0) == CUDA_SUCCESS;
}

static bool event_query(void *backend, void *fence, bool wait) {
  cuda_server_t *s = backend;
  CUresult r = wait ? s->api->cuEventSynchronize(fence) : s->api->cuEventQuery(fence);
  return r != CUDA_ERROR_NOT_READY;
}

static void event_synchronize(void *backend, void *stream) {
  cuda_server_t *s = backend;
  s->api->cuStreamSynchronize(((cuda_stream_t *)stream)->cu);
}

static void event_release(void *backend, void *fence) {
  cuda_server_t *s = backend;
  ruda__cuda_event_put(s, fence, ruda__cuda_generation(&s->fault));
}

const ruda__stream_fence_t ruda__cuda_event_fence = {event_record, event_wait_on, event_query,
                                                      event_synchronize, event_release};

/* ---- Deferred releases ---- */

/* Pinned staging of `size` bytes from the stream's pinned pool. */
ruda_status_t ruda__cuda_pinned_reserve(cuda_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
                                        void **out_ptr) {
  ruda_memory_t *m = ruda__memory_new();
  if (m == NULL) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda_status_t e = ruda__memory_alloc(st->pinned, m, size, cuda_rs(st)->cursor);
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

/* ---- Teardown and reclaim ---- */

void ruda__cuda_stream_free(cuda_server_t *s, cuda_stream_t *st, bool context_alive) {
  const ruda__cuda_api_t *api = s->api;
  if (st->cu != NULL && context_alive) api->cuStreamSynchronize(st->cu);
  ruda__stream_pipe_deinit(&s->pipeline, st, context_alive);
  ruda__drop_queue_destroy(st->drops);
  /* Nothing is in flight any more: cuMemAlloc pages go to the stash. */
  if (st->gpu_store != NULL) st->gpu_store->to_stash = context_alive;
  if (st->info_dev) gpu_free_now(st->gpu_store, st->info_dev, st->info_cap);
  /* A manager owns its storage; a storage without one is freed here. */
  if (st->gpu) ruda__memory_manager_destroy(st->gpu);
  else if (st->gpu_store) storage_destroy(st->gpu_store);
  if (st->pinned) ruda__memory_manager_destroy(st->pinned);
  else if (st->pin_store) storage_destroy(st->pin_store);
  if (st->count_host) api->cuMemFreeHost(st->count_host);
  if (st->cu != NULL) api->cuStreamDestroy(st->cu);
  ruda__cuda_synced_release(st->synced);
  memset(st, 0, sizeof *st);
}

/* Whether the CUDA part of a stream holds nothing: no work in flight, no
 * kept binding, no staged host buffer, no live allocation, the default
 * allocation mode. Finished work is released on the way. */
static bool cuda_stream_quiesce(void *ctx, ruda__stream_t *rs) {
  cuda_server_t *s = ctx;
  cuda_stream_t *st = cuda_ext(rs);
  if (!st->pipe.ready) return true;
  /* After a fault only the reset may touch the context. */
  if (ruda__cuda_faulted(&s->fault)) return false;
  if (s->api->cuStreamQuery(st->cu) != CUDA_SUCCESS) return false;
  /* Everything enqueued has completed: these do not wait. */
  if (!ruda__stream_pipe_settled(&s->pipeline, st)) return false;
  ruda__drop_queue_flush(st->drops);
  ruda__drop_queue_flush(st->drops);
  return ruda__stream_pipe_memory_idle(&s->pipeline, st, st->pinned);
}

/* Frees the CUDA part and the start events of the stream's open profiles. */
static void cuda_stream_release(void *ctx, ruda__stream_t *rs) {
  cuda_server_t *s = ctx;
  cuda_stream_t *st = cuda_ext(rs);
  for (size_t i = 0; i < rs->profiler.len; i++) {
    if (rs->profiler.entries[i].mark != NULL && s->context_alive)
      s->api->cuEventDestroy((CUevent)rs->profiler.entries[i].mark);
    rs->profiler.entries[i].mark = NULL;
  }
  if (st->pipe.ready) ruda__cuda_stream_free(s, st, s->context_alive);
}

/* ctx is set per server in cuda_create_server. */
const ruda__stream_table_ops_t ruda__cuda_stream_ops = {sizeof(cuda_stream_t), cuda_stream_quiesce,
                                                        cuda_stream_release,
                                                        ruda__stream_pipe_usage, NULL};

#endif /* RUDA_HAVE_CUDA_HEADERS */
