/* The CUDA compute server (runtime_semantics.md 6.1): the server vtable of
 * src/server/server.h over the driver API.
 *
 * Streams. Each ruda stream id maps to a slot (id mod max_streams, 128 by
 * default, RUDA_CUDA_MAX_STREAMS). A slot is created on first use and owns
 * a non-blocking CUstream with the configured priority, a memory manager
 * for device memory (cuMemAllocAsync on the stream, cuMemAlloc fallback,
 * frees deferred to flush), a pinned host manager for staging, the
 * stream's error list and a drop queue for host buffers in flight.
 *
 * Cross-stream use. A binding whose stream differs from the operation's
 * makes the operation's stream wait on an event recorded on the origin
 * (when the origin has had work since the last such wait), and the binding
 * is kept (cloned) until an event recorded after the consuming work has
 * completed (polled on the device thread; no GC thread is needed).
 *
 * Faults. A kernel fault (illegal address, ...) poisons the CUDA context.
 * It is reported at the next sync/flush/read as
 * ServerError::Launch(LaunchError::Unknown) naming the kernels launched
 * since the last completed sync; afterwards the server resets the primary
 * context so the device is usable again (old buffers report NotFound).
 *
 * Every method runs on the device's worker thread, where create_server
 * made the primary context current. Futures may be waited on from any
 * thread; they make the context current themselves, and may outlive the
 * server (it completes them when destroyed: futures_settle).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/cuda_internal.h"
#include "base/alloc.h"
#include "ruda/config.h"
#include "server/server.h"
#include "server/trace.h"

#if !defined(RUDA_HAVE_CUDA_HEADERS)

static ruda_status_t cuda_unavailable(void) {
  return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                            "CUDA is unavailable: ruda was built without the CUDA headers "
                            "(cuda.h not found at configure time)");
}
static ruda_status_t cuda_device_count(uint32_t *out) {
  *out = 0;
  return cuda_unavailable();
}
static ruda_status_t cuda_create_server(uint16_t index, ruda__server_t **out) {
  (void)index;
  *out = NULL;
  return cuda_unavailable();
}
const ruda__backend_t ruda__backend_cuda = {RUDA_DEVICE_TYPE_CUDA, "cuda", cuda_device_count,
                                            cuda_create_server};

#else /* RUDA_HAVE_CUDA_HEADERS */

#include "backends/cuda/cuda_host_copy.h"

#define MAX_SLOTS 256
#define SMALL_COPY (64u * 1024u)     /* below: driver-staged pageable copies */
#define STAGE_CHUNK (4u * 1024u * 1024u)
#define PARALLEL_READ_OUT (8u << 20) /* from: staged reads are copied out in parallel */
#define PINNED_PAGE (1ull << 30)
#define RECENT_KERNELS 4
#define SMALL_READ (64u * 1024u) /* reads of at most this many bytes in all: one pinned block */
#define READ_BLOCKS 16            /* pinned blocks kept for small reads */
#define EVENT_POOL 256
#define FUTURE_POOL 16            /* future objects kept for reuse */
#define WAIT_SPIN_US 20           /* default of RUDA_CUDA_WAIT_SPIN_US */

typedef struct cuda_server cuda_server_t;

/* ---- Storages ---- */

/* Pages whose free waits for the next flush: work in flight may still use
 * them. */
typedef struct pending_frees {
  uint64_t *addrs;
  size_t n, cap;
} pending_frees_t;

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

typedef struct gpu_storage {
  const ruda__cuda_api_t *api;
  CUstream stream;
  bool use_async;
  pending_frees_t pending;
  uint64_t next_id;
} gpu_storage_t;

/* cuMemAllocAsync on the stream (once more after the stream's pending frees
 * when out of memory), else cuMemAlloc. */
static ruda_status_t gpu_malloc(gpu_storage_t *g, uint64_t size, CUdeviceptr *out) {
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

static void gpu_free_now(gpu_storage_t *g, CUdeviceptr p) {
  if (g->use_async)
    g->api->cuMemFreeAsync(p, g->stream);
  else
    g->api->cuMemFree(p);
}

static ruda_status_t gpu_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  gpu_storage_t *g = self;
  CUdeviceptr p = 0;
  ruda_status_t e = gpu_malloc(g, size, &p);
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
  if (!pending_push(&g->pending, h->base)) gpu_free_now(g, (CUdeviceptr)h->base);
}

static void gpu_flush(void *self) {
  gpu_storage_t *g = self;
  for (size_t i = 0; i < g->pending.n; i++) gpu_free_now(g, (CUdeviceptr)g->pending.addrs[i]);
  g->pending.n = 0;
}

static void gpu_destroy(void *self) {
  gpu_storage_t *g = self;
  gpu_flush(g);
  ruda__free(g->pending.addrs);
  ruda__free(g);
}

static const ruda__storage_vtable_t gpu_storage_vt = {gpu_alloc, gpu_dealloc, gpu_flush,
                                                      gpu_destroy};

typedef struct pinned_storage {
  const ruda__cuda_api_t *api;
  pending_frees_t pending;
  uint64_t next_id;
} pinned_storage_t;

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

static void pinned_flush(void *self) {
  pinned_storage_t *p = self;
  for (size_t i = 0; i < p->pending.n; i++)
    p->api->cuMemFreeHost((void *)(uintptr_t)p->pending.addrs[i]);
  p->pending.n = 0;
}

static void pinned_destroy(void *self) {
  pinned_storage_t *p = self;
  pinned_flush(p);
  ruda__free(p->pending.addrs);
  ruda__free(p);
}

static const ruda__storage_vtable_t pinned_storage_vt = {pinned_alloc, pinned_dealloc,
                                                         pinned_flush, pinned_destroy};

/* ---- Streams ---- */

/* What the drop queue's fences record on (see fence_make). */
typedef struct fence_ctx {
  const ruda__cuda_api_t *api;
  CUstream stream;
} fence_ctx_t;

typedef struct gc_batch {
  CUevent event;
  ruda_binding_t *bindings;
  size_t n;
} gc_batch_t;

/* Kernels launched on a stream since its last completed sync, for fault
 * reports: the last RECENT_KERNELS distinct names and how many in all. */
typedef struct recent_kernels {
  char names[RECENT_KERNELS][64];
  uint32_t n, total;
} recent_kernels_t;

typedef struct cuda_stream {
  bool init;
  uint32_t index;
  CUstream cu;
  gpu_storage_t *gpu_store;
  pinned_storage_t *pin_store;
  ruda__memory_manager_t *gpu;
  ruda__memory_manager_t *pinned;
  ruda__stream_errors_t errors;
  ruda__drop_queue_t *drops;
  fence_ctx_t fence; /* the drop queue's context */
  uint64_t cursor;
  uint64_t *last_synced; /* per origin slot: origin cursor at the last wait */
  gc_batch_t *gc;
  size_t ngc, gccap;
  /* Kernel info words: one device buffer per stream is enough, because
   * the upload of launch n+1 is ordered after kernel n on the stream. */
  CUdeviceptr info_dev;
  size_t info_cap;
  /* Pinned scratch for dynamic counts. */
  uint32_t *count_host;
  /* Timeline trace (RUDA_TRACE): device-timed slices waiting for their
   * end event. */
  struct trace_item *trace;
  size_t ntrace, captrace;
  uint64_t trace_last_end; /* host ns where the previous slice ended */
  recent_kernels_t recent;
} cuda_stream_t;

/* What a server's futures share with it and may outlive it with: the lock
 * over the server's pools, the list of live futures, and a count of the
 * references (the server's and one per live future). Whichever lets go last
 * frees it. A future that the server settled when it was destroyed no
 * longer points at the server. */
typedef struct future_home {
  pthread_mutex_t lock;
  size_t refs;
  struct cuda_future *live; /* futures not yet destroyed, doubly linked */
} future_home_t;

typedef struct profile_mark {
  uint64_t token;
  CUevent start;
  uint64_t start_ns;
} profile_mark_t;

struct cuda_server {
  ruda__server_t base;
  const ruda__cuda_api_t *api;
  CUdevice dev;
  CUcontext ctx;
  uint32_t cc;
  int priority;
  uint32_t max_streams;
  cuda_stream_t *streams;
  ruda__cuda_module_cache_t *modules;
  ruda__profiler_t profiler;
  profile_mark_t *marks;
  size_t nmarks, capmarks;
  ruda__copy_pool_t *copies;
  /* Events without timing and pinned blocks for small reads, reused; futures
   * return theirs from any thread, hence home->lock over them. Both belong
   * to the context of one generation. */
  future_home_t *home;
  CUevent events[EVENT_POOL];
  size_t nevents;
  void *blocks[READ_BLOCKS];
  size_t nblocks;
  /* Future objects: made on the worker, freed on the waiting thread (glibc's
   * slow cross-thread path), so a few are recycled here. */
  struct cuda_future *futures[FUTURE_POOL];
  size_t nfutures;
  /* How long a future's wait polls its event before blocking in
   * cuEventSynchronize (RUDA_CUDA_WAIT_SPIN_US). */
  uint64_t wait_spin_ns;
  /* Set when a reset after a fault did not bring the device back: every
   * operation then fails with this code. */
  int dead;
  /* First sticky error seen (CUresult) and its description; set from any
   * thread (futures), acted on by the worker. */
  _Atomic int poisoned;
  _Atomic int poison_reported; /* a caller already received the fault */
  _Atomic uint64_t generation; /* bumped by every reset */
  char poison_text[512];
  _Atomic int poison_text_ready;
};

static cuda_server_t *as_cuda(ruda__server_t *s) { return (cuda_server_t *)s; }

static CUresult event_get(cuda_server_t *s, CUevent *out) {
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
static void event_put(cuda_server_t *s, CUevent ev, uint64_t gen) {
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
static void *block_get(cuda_server_t *s) {
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

/* ---- Poisoning ---- */

/* Records a sticky fault. `reported`: the caller that saw it returns (or
 * queues) an error describing it, so the reset that follows needs no
 * second report. */
static void poison(cuda_server_t *s, CUresult r, const char *text, bool reported) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&s->poisoned, &expected, (int)r)) {
    snprintf(s->poison_text, sizeof s->poison_text, "%s", text);
    atomic_store(&s->poison_reported, reported ? 1 : 0);
    atomic_store(&s->poison_text_ready, 1);
  } else if (reported) {
    atomic_store(&s->poison_reported, 1);
  }
}

static void recent_names(const recent_kernels_t *rk, char *buf, size_t cap) {
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
static ruda_status_t fault_error(CUresult r, const char *call, const char *kernels) {
  ruda_status_t s = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, call,
                                   "a kernel failed on the device; kernels launched on this "
                                   "stream since its last sync: %s",
                                   kernels);
  return ruda_status_into_server(s);
}

/* The error for a failure `r` of `call` on work of a stream; a sticky one
 * (the context is gone) also poisons the server, reported by this error. */
static ruda_status_t stream_fault(cuda_server_t *s, CUresult r, const char *call,
                                  const char *kernels) {
  if (ruda__cu_result_is_sticky(r)) poison(s, r, kernels, true);
  return fault_error(r, call, kernels);
}

/* ---- Slots ---- */

static cuda_stream_t *slot_for(cuda_server_t *s, ruda_stream_id_t id) {
  return &s->streams[id.value % s->max_streams];
}

static void stream_free(cuda_server_t *s, cuda_stream_t *st, bool context_alive);

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
  ruda__storage_t gs = {&gpu_storage_vt, st->gpu_store, props->memory.alignment};
  /* A manager takes its storage, even when it fails (and frees it then). */
  e = ruda__memory_manager_create(gs, props->memory, &cfg, "Main GPU Memory", &st->gpu);
  if (e) {
    st->gpu_store = NULL;
    goto fail;
  }
  ruda_memory_properties_t pprops = {PINNED_PAGE, 16};
  ruda__memory_config_t pcfg = cfg;
  pcfg.persistent = RUDA_PERSISTENT_DISABLED;
  ruda__storage_t ps = {&pinned_storage_vt, st->pin_store, 16};
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
  stream_free(s, st, true);
  return e;
}

/* The slot of `id`, created on first use. On failure the error is queued
 * on the slot (whose error list always exists) and NULL is returned. */
static cuda_stream_t *stream_get(cuda_server_t *s, ruda_stream_id_t id) {
  cuda_stream_t *st = slot_for(s, id);
  if (st->init) return st;
  if (s->dead != 0) return NULL; /* settle_poison queued the reason */
  ruda_status_t e = stream_init(s, st);
  if (e) {
    ruda__stream_errors_push(&st->errors, e);
    return NULL;
  }
  return st;
}

static void trace_poll(cuda_server_t *s, cuda_stream_t *st, bool wait);

static void gc_poll(cuda_server_t *s, cuda_stream_t *st, bool wait) {
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
    event_put(s, b->event, atomic_load(&s->generation));
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
static long trace_begin(cuda_server_t *s, cuda_stream_t *st, const char *category,
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

static void trace_end(cuda_server_t *s, cuda_stream_t *st, long idx) {
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

/* The bindings an operation uses from other streams' slots, cloned to keep
 * their memory alive until the operation's work has completed. */
typedef struct keep_list {
  ruda_binding_t *items;
  size_t n, cap;
  bool sync; /* a clone failed: op_end waits for the work instead */
} keep_list_t;

/* Orders `st` after the work on `b`'s stream when that is another slot (an
 * event, recorded when the origin has had work since the last wait), and
 * keeps a clone of `b` in `keep`. */
static void order_binding(cuda_server_t *s, cuda_stream_t *st, const ruda_binding_t *b,
                          keep_list_t *keep) {
  if (b->memory == NULL) return;
  cuda_stream_t *origin = slot_for(s, b->stream);
  if (origin == st || !origin->init) return;
  if (st->last_synced[origin->index] < origin->cursor) {
    CUevent ev = NULL;
    if (event_get(s, &ev) == CUDA_SUCCESS) {
      /* The wait captures the record made now; the event can be reused. */
      s->api->cuEventRecord(ev, origin->cu);
      s->api->cuStreamWaitEvent(st->cu, ev, 0);
      event_put(s, ev, atomic_load(&s->generation));
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
static void op_end(cuda_server_t *s, cuda_stream_t *st, keep_list_t *keep) {
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
  if (keep->sync || st->ngc == st->gccap || event_get(s, &ev) != CUDA_SUCCESS) {
    s->api->cuStreamSynchronize(st->cu);
    keep_release(keep);
    return;
  }
  s->api->cuEventRecord(ev, st->cu);
  st->gc[st->ngc++] = (gc_batch_t){ev, keep->items, keep->n};
}

static ruda_status_t resolve(cuda_server_t *s, const ruda_binding_t *b, CUdeviceptr *out) {
  cuda_stream_t *origin = slot_for(s, b->stream);
  if (!origin->init || b->memory == NULL)
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "the buffer is not bound on this device");
  ruda__storage_handle_t h;
  ruda_status_t e = ruda__memory_resolve(origin->gpu, b->memory, b->offset_start, b->offset_end, &h);
  if (e) return e;
  *out = (CUdeviceptr)ruda__storage_handle_addr(&h);
  return NULL;
}

/* Pinned staging of `size` bytes from the stream's pinned pool. */
static ruda_status_t pinned_reserve(cuda_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
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

static void drop_memory(void *item) { ruda__memory_release_handle(item); }

static void drop_bytes(void *item) {
  ruda_bytes_t *b = item;
  ruda_bytes_release(b);
  ruda__free(b);
}

/* Drops `item` once the copies enqueued so far on `st` have completed (the
 * drop queue); when it cannot be queued, waits for them and drops it now. */
static void drop_when_done(cuda_server_t *s, cuda_stream_t *st, void *item, uint64_t bytes,
                           ruda__drop_fn drop) {
  ruda_status_t e = ruda__drop_queue_push(st->drops, item, bytes, drop);
  if (e == NULL) return;
  ruda_status_free(e);
  s->api->cuStreamSynchronize(st->cu);
  drop(item);
}

/* ---- Poison handling on the worker ---- */

static void server_recover(cuda_server_t *s);

/* Called first by every method: after a fault, resets the device (on the
 * worker thread, which owns every object involved) and queues the fault on
 * `stream` unless a caller already received it. One atomic load when
 * healthy. */
static void settle_poison(cuda_server_t *s, ruda_stream_id_t stream) {
  int code = atomic_load(&s->poisoned);
  if (code == 0 && s->dead == 0) return;
  if (s->dead != 0) {
    cuda_stream_t *slot = slot_for(s, stream);
    if (!ruda__stream_errors_empty(&slot->errors)) return;
    ruda__stream_errors_push(
        &slot->errors,
        ruda_status_into_server(ruda_status_set_vendor(
            ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                               "the CUDA device is lost after a kernel fault (%s) and could "
                               "not be reset; restart the process",
                               ruda__cu_result_name((CUresult)s->dead)),
            "cuDevicePrimaryCtxReset", ruda__cu_result_name((CUresult)s->dead), s->dead)));
    atomic_store(&s->poisoned, 0);
    return;
  }
  ruda_status_t e = NULL;
  if (!atomic_load(&s->poison_reported)) {
    char text[600];
    snprintf(text, sizeof text, "%s", atomic_load(&s->poison_text_ready) ? s->poison_text : "");
    e = ruda_status_into_server(ruda_status_set_vendor(
        ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                           "a kernel failed on the device (%s): %s; the CUDA context was "
                           "reset and buffers created before are gone",
                           ruda__cu_result_name((CUresult)code), text),
        "cuStreamSynchronize", ruda__cu_result_name((CUresult)code), code));
  }
  server_recover(s);
  if (e) ruda__stream_errors_push(&slot_for(s, stream)->errors, e);
}

/* ---- Vtable: memory ---- */

static void cuda_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                   ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  cuda_stream_t *st = stream_get(s, stream);
  if (st == NULL) return;
  ruda_status_t e = ruda__memory_alloc(st->gpu, memory, size, st->cursor);
  if (e) ruda__stream_errors_push(&st->errors, e);
}

static void staging_release(ruda_bytes_t *b) {
  if (b->owner) ruda__memory_release_handle(b->owner);
  b->owner = NULL;
}

static ruda_status_t cuda_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                  ruda_stream_id_t stream, ruda_bytes_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  cuda_stream_t *st = stream_get(s, stream);
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  for (size_t i = 0; i < count; i++) {
    ruda_memory_t *m = NULL;
    void *p = NULL;
    ruda_status_t e = pinned_reserve(st, sizes[i], &m, &p);
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

static ruda_status_t cuda_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                       ruda_stream_id_t stream, ruda_resource_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  CUdeviceptr p = 0;
  ruda_status_t e = resolve(s, b, &p);
  if (e) return e;
  out->address = (uint64_t)p;
  out->size = ruda_binding_size_in_used(b);
  return NULL;
}

static ruda_status_t cuda_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                       ruda_memory_usage_t *out) {
  cuda_server_t *s = as_cuda(base);
  cuda_stream_t *st = slot_for(s, stream);
  ruda_status_t e = ruda__stream_errors_check(&st->errors, RUDA__MODE_CHECK);
  if (e) return e;
  memset(out, 0, sizeof *out);
  if (st->init) *out = ruda__memory_usage(st->gpu);
  return NULL;
}

static void cuda_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  cuda_stream_t *st = slot_for(s, stream);
  if (!st->init) return;
  gc_poll(s, st, false);
  ruda__drop_queue_flush(st->drops);
  ruda__memory_cleanup(st->gpu, true);
  ruda__memory_cleanup(st->pinned, true);
  gpu_flush(st->gpu_store);
  /* Pinned pages may still be read by copies in flight. */
  s->api->cuStreamSynchronize(st->cu);
  pinned_flush(st->pin_store);
}

static void cuda_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                                 ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  cuda_stream_t *st = stream_get(s, stream);
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

static void cuda_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                       size_t count, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  const ruda__cuda_api_t *api = s->api;
  settle_poison(s, stream);
  cuda_stream_t *st = stream_get(s, stream);
  if (st == NULL) {
    for (size_t i = 0; i < count; i++) ruda_bytes_release(&srcs[i]);
    return;
  }
  keep_list_t keep = {0};
  for (size_t i = 0; i < count; i++) order_binding(s, st, &descs[i].binding, &keep);
  for (size_t i = 0; i < count; i++) {
    const ruda__copy_desc_t *d = &descs[i];
    ruda_bytes_t *src = &srcs[i];
    uint64_t width, height, pitch;
    if (!copy_geometry(d, &width, &height, &pitch)) {
      ruda__stream_errors_push(&st->errors,
                               ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                                                  "write: only contiguous and row-pitched "
                                                  "layouts can be copied"));
      ruda_bytes_release(src);
      continue;
    }
    uint64_t bytes = width * height;
    CUdeviceptr dst = 0;
    ruda_status_t e = resolve(s, &d->binding, &dst);
    if (e == NULL && src->size < bytes)
      e = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "write: %llu bytes given, %llu needed",
                             (unsigned long long)src->size, (unsigned long long)bytes);
    if (e) {
      ruda__stream_errors_push(&st->errors, e);
      ruda_bytes_release(src);
      continue;
    }
    if (bytes == 0) {
      ruda_bytes_release(src);
      continue;
    }
    CUresult r;
    long tr = trace_begin(s, st, "copy", "write", bytes);
    if (src->property == RUDA_BYTES_PINNED) {
      r = copy_rows(api, st->cu, true, src->data, dst, width, height, pitch);
      ruda_bytes_t *held = ruda__malloc(sizeof *held);
      if (held != NULL && r == CUDA_SUCCESS) {
        *held = *src;
        memset(src, 0, sizeof *src);
        drop_when_done(s, st, held, bytes, drop_bytes);
      } else {
        ruda__free(held);
        api->cuStreamSynchronize(st->cu);
        ruda_bytes_release(src);
      }
    } else {
      ruda_memory_t *stage = NULL;
      void *sp = NULL;
      ruda_status_t pe = bytes < SMALL_COPY ? NULL : pinned_reserve(st, bytes, &stage, &sp);
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
        drop_when_done(s, st, stage, bytes, drop_memory);
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
        drop_when_done(s, st, stage, bytes, drop_memory);
      }
    }
    trace_end(s, st, tr);
    if (r != CUDA_SUCCESS) {
      if (ruda__cu_result_is_sticky(r)) poison(s, r, "a copy failed after a device fault", true);
      ruda__stream_errors_push(&st->errors,
                               ruda__cu_error(RUDA_ERR_IO_UNKNOWN, r, "cuMemcpyHtoDAsync",
                                              "writing %llu bytes", (unsigned long long)bytes));
    }
  }
  if (ruda__drop_queue_should_flush(st->drops)) ruda__drop_queue_flush(st->drops);
  op_end(s, st, &keep);
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
 * that lock (futures_settle: the result is kept, the event, block and
 * staging go back) and sets `server` to NULL, after which the future
 * touches nothing but itself and `home`. */
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
    recent_names(&f->recent, kernels, sizeof kernels);
    if (ruda__cu_result_is_sticky(r) && f->generation == atomic_load(&s->generation)) {
      char text[400];
      snprintf(text, sizeof text, "kernels: %s", kernels);
      poison(s, r, text, true);
    }
    st = fault_error(r, "cuEventSynchronize", kernels);
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

static void future_free(cuda_future_t *f) {
  pthread_mutex_destroy(&f->lock);
  ruda__free(f);
}

/* Drops one reference to `h` (its lock held; released here). */
static void home_release_locked(future_home_t *h) {
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
  if (f != NULL) future_free(f);
  home_release_locked(h);
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
      if (ev != NULL) event_put(s, ev, atomic_load(&s->generation));
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
      if (ev != NULL) event_put(s, ev, atomic_load(&s->generation));
      future_free(f);
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
      recent_names(&f->recent, kernels, sizeof kernels);
      return stream_fault(s, r2, "cuStreamSynchronize", kernels);
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
static void futures_settle(cuda_server_t *s, bool alive) {
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
static ruda_status_t cuda_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                               void *const *dsts, size_t count, ruda_stream_id_t stream,
                               ruda__future_t **out) {
  cuda_server_t *s = as_cuda(base);
  const ruda__cuda_api_t *api = s->api;
  *out = NULL;
  settle_poison(s, stream);
  cuda_stream_t *st = stream_get(s, stream);
  cuda_stream_t *slot = slot_for(s, stream);
  ruda_status_t e = ruda__stream_errors_check(&slot->errors, RUDA__MODE_DRAIN);
  if (e) return e;
  if (st == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
  if (st->ngc || st->ntrace) gc_poll(s, st, false);
  cuda_future_t *f = future_new(s, st, count);
  if (f == NULL) return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "out of host memory for a read");
  keep_list_t keep = {0};
  for (size_t i = 0; i < count; i++) order_binding(s, st, &descs[i].binding, &keep);

  uint64_t total = 0;
  for (size_t i = 0; i < count && total <= SMALL_READ; i++) {
    uint64_t width, height, pitch;
    total += copy_geometry(&descs[i], &width, &height, &pitch) ? width * height : SMALL_READ + 1;
  }
  if (total <= SMALL_READ) f->block = block_get(s);
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
    e = resolve(s, &d->binding, &src);
    if (e) {
      f->early = e;
      break;
    }
    read_part_t *p = &f->parts[f->nparts++];
    p->dst = dsts[i];
    p->size = bytes;
    CUresult r;
    long tr = trace_begin(s, st, "copy", "read", bytes);
    if (f->block != NULL) {
      void *sp = (char *)f->block + block_off;
      block_off += (bytes + 15) & ~(uint64_t)15;
      p->staged = sp;
      r = copy_rows(api, st->cu, false, sp, src, width, height, pitch);
    } else if (host_is_pinned(api, dsts[i])) {
      r = copy_rows(api, st->cu, false, dsts[i], src, width, height, pitch);
    } else {
      void *sp = NULL;
      ruda_status_t pe = pinned_reserve(st, bytes, &p->stage, &sp);
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
    trace_end(s, st, tr);
    if (r != CUDA_SUCCESS) {
      if (ruda__cu_result_is_sticky(r)) {
        char kernels[300];
        recent_names(&f->recent, kernels, sizeof kernels);
        f->early = stream_fault(s, r, "cuMemcpyDtoHAsync", kernels);
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
  op_end(s, st, &keep);
  *out = &f->base;
  return NULL;
}

static ruda_status_t cuda_sync(ruda__server_t *base, ruda_stream_id_t stream,
                               ruda__future_t **out) {
  cuda_server_t *s = as_cuda(base);
  *out = NULL;
  settle_poison(s, stream);
  cuda_stream_t *slot = slot_for(s, stream);
  ruda_status_t e = ruda__stream_errors_check(&slot->errors, RUDA__MODE_DRAIN);
  if (e) return e;
  if (!slot->init) {
    *out = ruda__future_ready(NULL);
    return NULL;
  }
  cuda_stream_t *st = slot;
  if (st->ngc || st->ntrace) gc_poll(s, st, false);
  cuda_future_t *f = future_new(s, st, 0);
  if (f == NULL) {
    CUresult r = s->api->cuStreamSynchronize(st->cu);
    return r == CUDA_SUCCESS ? NULL : fault_error(r, "cuStreamSynchronize", "");
  }
  f->early = future_record(s, st, f);
  st->recent.n = 0;
  st->recent.total = 0;
  *out = &f->base;
  return NULL;
}

static ruda_status_t cuda_flush(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  cuda_stream_t *st = slot_for(s, stream);
  if (st->init) {
    CUresult r = s->api->cuStreamQuery(st->cu);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY && ruda__cu_result_is_sticky(r)) {
      char names[300];
      recent_names(&st->recent, names, sizeof names);
      poison(s, r, names, false);
      settle_poison(s, stream); /* resets the device: st is empty after it */
    }
  }
  if (st->init) {
    gc_poll(s, st, false);
    ruda__drop_queue_flush(st->drops);
    gpu_flush(st->gpu_store);
  }
  ruda_status_t e = ruda__stream_errors_check(&st->errors, RUDA__MODE_DRAIN);
  if (e) {
    ruda__profiler_error(&s->profiler, e);
    if (st->init) ruda__memory_cleanup(st->gpu, false);
  }
  return e;
}

/* ---- Launch ---- */

static ruda_status_t upload_info(cuda_server_t *s, cuda_stream_t *st, const ruda_info_t *info,
                                 CUdeviceptr *out) {
  size_t bytes = info->len * sizeof(uint64_t);
  if (bytes > st->info_cap) {
    size_t cap = st->info_cap ? st->info_cap : 256;
    while (cap < bytes) cap *= 2;
    CUdeviceptr p = 0;
    ruda_status_t e = gpu_malloc(st->gpu_store, cap, &p);
    if (e) return e;
    /* Freed in stream order: kernels before may still read it. */
    if (st->info_dev != 0) gpu_free_now(st->gpu_store, st->info_dev);
    st->info_dev = p;
    st->info_cap = cap;
  }
  /* Pageable source: the driver stages it before returning, and the
   * stream orders this upload after the kernels that read the last one. */
  CUresult r = s->api->cuMemcpyHtoDAsync(st->info_dev, info->data, bytes, st->cu);
  if (r != CUDA_SUCCESS)
    return ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "cuMemcpyHtoDAsync", "uploading kernel info");
  *out = st->info_dev;
  return NULL;
}

static void note_kernel(cuda_stream_t *st, const char *name) {
  recent_kernels_t *rk = &st->recent;
  rk->total++;
  if (rk->n > 0 && strncmp(rk->names[(rk->n - 1) % RECENT_KERNELS], name, 63) == 0) return;
  char *slot;
  if (rk->n < RECENT_KERNELS) {
    slot = rk->names[rk->n++];
  } else {
    memmove(rk->names[0], rk->names[1], sizeof rk->names[0] * (RECENT_KERNELS - 1));
    slot = rk->names[RECENT_KERNELS - 1];
  }
  size_t len = strnlen(name, sizeof rk->names[0] - 1);
  memcpy(slot, name, len);
  slot[len] = '\0';
}

static void push_launch_error(cuda_server_t *s, cuda_stream_t *st, ruda_status_t e) {
  if (!ruda__profiler_is_empty(&s->profiler)) ruda__profiler_error(&s->profiler, e);
  ruda__stream_errors_push(&st->errors, e);
}

#define PARAMS_INLINE 32

static void cuda_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                        const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                        ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  const ruda__cuda_api_t *api = s->api;
  (void)mode; /* CUDA C kernels do their own bounds checks */
  settle_poison(s, stream);
  cuda_stream_t *st = stream_get(s, stream);
  if (st == NULL) return;
  if (st->ngc) gc_poll(s, st, false);
  const ruda_kernel_desc_t *d = ruda_kernel_desc(kernel);
  ruda_status_t e = ruda__validate_launch(&s->base.utilities.properties, d->ruda_dim,
                                          d->shared_mem_bytes);
  if (e) {
    push_launch_error(s, st, e);
    return;
  }
  ruda__cuda_function_t *fn = NULL;
  e = ruda__cuda_module_cache_get(s->modules, kernel, &fn);
  if (e) {
    push_launch_error(s, st, e);
    return;
  }

  ruda_count3_t grid = count->fixed;
  size_t nb = args->num_buffers, nt = args->num_tensor_maps;
  keep_list_t keep = {0};
  for (size_t i = 0; i < nb; i++) order_binding(s, st, &args->buffers[i], &keep);
  for (size_t i = 0; i < nt; i++) order_binding(s, st, &args->tensor_map_buffers[i], &keep);
  if (count->dynamic) order_binding(s, st, &count->buffer, &keep);

  CUtensorMap *maps = NULL;
  void *psmall[PARAMS_INLINE];
  CUdeviceptr vsmall[PARAMS_INLINE];
  size_t nparams = nt + nb + 1;
  void **params = nparams <= PARAMS_INLINE ? psmall : ruda__calloc(nparams, sizeof *params);
  CUdeviceptr *vals = nb + 1 <= PARAMS_INLINE ? vsmall : ruda__calloc(nb + 1, sizeof *vals);
  if (nt > 0) maps = aligned_alloc(64, nt * sizeof *maps);
  if (params == NULL || vals == NULL || (nt > 0 && maps == NULL)) {
    e = ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "kernel %s: no host memory for "
                           "its parameters", d->name);
    goto fail;
  }

  if (count->dynamic) {
    CUdeviceptr cp = 0;
    e = resolve(s, &count->buffer, &cp);
    if (e) goto fail;
    uint32_t local[3];
    uint32_t *host = st->count_host ? st->count_host : local;
    CUresult r = api->cuMemcpyDtoHAsync(host, cp, 3 * sizeof(uint32_t), st->cu);
    if (r == CUDA_SUCCESS) r = api->cuStreamSynchronize(st->cu);
    if (r != CUDA_SUCCESS) {
      e = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "cuMemcpyDtoHAsync",
                         "reading the dynamic count of kernel %s", d->name);
      if (ruda__cu_result_is_sticky(r)) poison(s, r, d->name, true);
      goto fail;
    }
    grid.x = host[0];
    grid.y = host[1];
    grid.z = host[2];
  }
  e = ruda__validate_count(&s->base.utilities.properties, grid);
  if (e) goto fail;
  if (ruda_count3_is_empty(grid)) goto done;

  size_t np = 0;
  for (size_t i = 0; i < nt; i++) {
    CUdeviceptr tp = 0;
    e = resolve(s, &args->tensor_map_buffers[i], &tp);
    if (e) goto fail;
    e = ruda__cuda_tensor_map_encode(api, &args->tensor_maps[i], (uint64_t)tp, &maps[i]);
    if (e) goto fail;
    params[np++] = &maps[i];
  }
  for (size_t i = 0; i < nb; i++) {
    e = resolve(s, &args->buffers[i], &vals[i]);
    if (e) goto fail;
    params[np++] = &vals[i];
  }
  vals[nb] = 0;
  if (args->info.len > 0) {
    e = upload_info(s, st, &args->info, &vals[nb]);
    if (e) goto fail;
  }
  params[np++] = &vals[nb];

  if (d->shared_mem_bytes > 48 * 1024 && fn->shared_mem_set < d->shared_mem_bytes) {
    CUresult r = api->cuFuncSetAttribute(fn->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         (int)d->shared_mem_bytes);
    if (r != CUDA_SUCCESS) {
      e = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "cuFuncSetAttribute",
                         "kernel %s asks for %llu bytes of shared memory", d->name,
                         (unsigned long long)d->shared_mem_bytes);
      goto fail;
    }
    fn->shared_mem_set = d->shared_mem_bytes;
  }

  CUresult r;
  const char *call = "cuLaunchKernel";
  bool cluster = d->cluster_dim.x > 0 && d->cluster_dim.y > 0 && d->cluster_dim.z > 0 &&
                 (d->cluster_dim.x * d->cluster_dim.y * d->cluster_dim.z) > 1;
  if (cluster) {
    call = "cuLaunchKernelEx";
    if (api->cuLaunchKernelEx == NULL || s->cc < 90) {
      e = ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                             "kernel %s asks for a cluster of (%u, %u, %u) but this device "
                             "(sm_%u) or driver has no thread-block clusters",
                             d->name, d->cluster_dim.x, d->cluster_dim.y, d->cluster_dim.z, s->cc);
      goto fail;
    }
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = d->cluster_dim.x;
    attr.value.clusterDim.y = d->cluster_dim.y;
    attr.value.clusterDim.z = d->cluster_dim.z;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = grid.x;
    cfg.gridDimY = grid.y;
    cfg.gridDimZ = grid.z;
    cfg.blockDimX = d->ruda_dim.x;
    cfg.blockDimY = d->ruda_dim.y;
    cfg.blockDimZ = d->ruda_dim.z;
    cfg.sharedMemBytes = (unsigned)d->shared_mem_bytes;
    cfg.hStream = st->cu;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    long tr = trace_begin(s, st, "kernel", d->name, 0);
    r = api->cuLaunchKernelEx(&cfg, fn->fn, params, NULL);
    trace_end(s, st, tr);
  } else {
    long tr = trace_begin(s, st, "kernel", d->name, 0);
    r = api->cuLaunchKernel(fn->fn, grid.x, grid.y, grid.z, d->ruda_dim.x, d->ruda_dim.y,
                            d->ruda_dim.z, (unsigned)d->shared_mem_bytes, st->cu, params, NULL);
    trace_end(s, st, tr);
  }
  if (r != CUDA_SUCCESS) {
    if (ruda__cu_result_is_sticky(r)) poison(s, r, d->name, true);
    e = ruda__cu_error(RUDA_ERR_LAUNCH_UNKNOWN, r, call,
                       "kernel %s, count (%u, %u, %u), dim (%u, %u, %u), %llu bytes of shared "
                       "memory",
                       d->name, grid.x, grid.y, grid.z, d->ruda_dim.x, d->ruda_dim.y,
                       d->ruda_dim.z, (unsigned long long)d->shared_mem_bytes);
    goto fail;
  }
  note_kernel(st, d->name);
  if (ruda__drop_queue_should_flush(st->drops)) ruda__drop_queue_flush(st->drops);
  goto done;
fail:
  push_launch_error(s, st, e);
done:
  if (params != psmall) ruda__free(params);
  if (vals != vsmall) ruda__free(vals);
  free(maps);
  op_end(s, st, &keep);
}

/* ---- Profiling (device timestamps) ---- */

static ruda_status_t cuda_start_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                        ruda_profiling_token_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  cuda_stream_t *st = stream_get(s, stream);
  if (st == NULL)
    return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "the stream could not be created");
  if (s->nmarks == s->capmarks) {
    size_t cap = s->capmarks ? s->capmarks * 2 : 8;
    profile_mark_t *nm = ruda__realloc(s->marks, cap * sizeof *nm);
    if (nm == NULL) return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "out of host memory");
    s->marks = nm;
    s->capmarks = cap;
  }
  CUevent ev = NULL;
  CUresult r = s->api->cuEventCreate(&ev, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(ev, st->cu);
  if (r != CUDA_SUCCESS) {
    if (ev) s->api->cuEventDestroy(ev);
    return ruda__cu_error(RUDA_ERR_PROFILE_UNKNOWN, r, "cuEventRecord", "starting a profile");
  }
  uint64_t now = ruda__now_ns();
  ruda_status_t e = ruda__profiler_start(&s->profiler, now, out);
  if (e) {
    s->api->cuEventDestroy(ev);
    return ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, e);
  }
  s->marks[s->nmarks++] = (profile_mark_t){out->id, ev, now};
  return NULL;
}

static ruda_status_t cuda_end_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_profiling_token_t token, ruda_profile_duration_t *out) {
  cuda_server_t *s = as_cuda(base);
  cuda_stream_t *st = slot_for(s, stream);
  profile_mark_t mark = {0, NULL, 0};
  bool found = false;
  for (size_t i = 0; i < s->nmarks; i++) {
    if (s->marks[i].token != token.id) continue;
    mark = s->marks[i];
    s->marks[i] = s->marks[--s->nmarks];
    found = true;
    break;
  }
  if (!found) return ruda__profiler_stop(&s->profiler, token, ruda__now_ns(), RUDA_TIMING_DEVICE, out);
  uint64_t elapsed_ns = 0;
  if (st->init) {
    CUevent end = NULL;
    CUresult r = s->api->cuEventCreate(&end, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(end, st->cu);
    if (r == CUDA_SUCCESS) r = s->api->cuEventSynchronize(end);
    float ms = 0.0f;
    if (r == CUDA_SUCCESS) r = s->api->cuEventElapsedTime(&ms, mark.start, end);
    if (end) s->api->cuEventDestroy(end);
    if (r != CUDA_SUCCESS) {
      char names[300];
      recent_names(&st->recent, names, sizeof names);
      ruda_status_t fe = stream_fault(s, r, "cuEventSynchronize", names);
      ruda__profiler_error(&s->profiler, fe);
      ruda_status_free(fe);
    } else {
      elapsed_ns = (uint64_t)((double)ms * 1e6);
    }
  }
  s->api->cuEventDestroy(mark.start);
  ruda_status_t q = ruda__stream_errors_check(&st->errors, RUDA__MODE_DRAIN);
  if (q) {
    ruda__profiler_error(&s->profiler, q);
    ruda_status_free(q);
  }
  return ruda__profiler_stop(&s->profiler, token, mark.start_ns + elapsed_ns, RUDA_TIMING_DEVICE,
                             out);
}

/* ---- Lifetime ---- */

/* Frees what `st` holds, whether fully or partly initialized, and leaves the
 * slot empty (its index and error list kept). */
static void stream_free(cuda_server_t *s, cuda_stream_t *st, bool context_alive) {
  const ruda__cuda_api_t *api = s->api;
  if (st->cu != NULL && context_alive) api->cuStreamSynchronize(st->cu);
  gc_poll(s, st, true);
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

static void stream_teardown(cuda_server_t *s, cuda_stream_t *st, bool context_alive) {
  if (st->init) stream_free(s, st, context_alive);
  ruda__stream_errors_deinit(&st->errors);
}

/* After a fault: drop every stream, module and allocation, reset the
 * primary context and start over. Descriptors bound before become unbound
 * (their lookups give NotFound). Errors queued on streams are kept. */
static void server_recover(cuda_server_t *s) {
  const ruda__cuda_api_t *api = s->api;
  for (uint32_t i = 0; i < s->max_streams; i++) {
    if (s->streams[i].init) stream_free(s, &s->streams[i], false);
  }
  ruda__cuda_module_cache_destroy(s->modules, true);
  s->modules = ruda__cuda_module_cache_create(api, s->cc, s->base.utilities.properties_hash);
  s->nmarks = 0; /* their events died with the context */
  pthread_mutex_lock(&s->home->lock);
  s->nevents = 0; /* events and blocks die with the context */
  s->nblocks = 0;
  pthread_mutex_unlock(&s->home->lock);
  int code = atomic_load(&s->poisoned);
  api->cuCtxSetCurrent(NULL);
  api->cuDevicePrimaryCtxRelease(s->dev);
  CUresult r = api->cuDevicePrimaryCtxReset(s->dev);
  CUcontext ctx = NULL;
  if (r == CUDA_SUCCESS) r = api->cuDevicePrimaryCtxRetain(&ctx, s->dev);
  if (r == CUDA_SUCCESS) {
    s->ctx = ctx;
    r = api->cuCtxSetCurrent(ctx);
  }
  const char *step = r == CUDA_SUCCESS ? NULL : "cuDevicePrimaryCtxReset/Retain";
  /* Probe: a stream and a small allocation must work again. */
  CUstream probe = NULL;
  CUdeviceptr p = 0;
  if (r == CUDA_SUCCESS) {
    r = api->cuStreamCreateWithPriority(&probe, CU_STREAM_NON_BLOCKING, 0);
    if (r != CUDA_SUCCESS) step = "cuStreamCreateWithPriority";
  }
  if (r == CUDA_SUCCESS) {
    r = api->cuMemAlloc(&p, 256);
    if (r != CUDA_SUCCESS) step = "cuMemAlloc";
  }
  if (p) api->cuMemFree(p);
  if (probe) api->cuStreamDestroy(probe);
  if (r != CUDA_SUCCESS) {
    if (s->dead == 0) s->dead = code ? code : (int)r;
    ruda__cuda_warn("the device could not be reset after a fault (%s failed with %s); "
                    "restart the process",
                    step, ruda__cu_result_name(r));
  } else {
    ruda__cuda_warn("device reset after a fault; buffers created before it are gone");
  }
  atomic_fetch_add(&s->generation, 1);
  atomic_store(&s->poison_text_ready, 0);
  atomic_store(&s->poison_reported, 0);
  atomic_store(&s->poisoned, 0);
}

static void cuda_destroy(ruda__server_t *base) {
  cuda_server_t *s = as_cuda(base);
  bool alive = atomic_load(&s->poisoned) == 0 && s->dead == 0;
  s->api->cuCtxSetCurrent(s->ctx);
  /* Futures still held by callers (ruda_shutdown, exit) complete now: their
   * staging and events live in this context. */
  if (alive) alive = s->api->cuCtxSynchronize() == CUDA_SUCCESS;
  futures_settle(s, alive);
  for (uint32_t i = 0; i < s->max_streams; i++) stream_teardown(s, &s->streams[i], alive);
  ruda__cuda_module_cache_destroy(s->modules, !alive);
  for (size_t i = 0; i < s->nmarks; i++) s->api->cuEventDestroy(s->marks[i].start);
  ruda__free(s->marks);
  ruda__profiler_deinit(&s->profiler);
  ruda__copy_pool_destroy(s->copies);
  for (size_t i = 0; i < s->nevents; i++) s->api->cuEventDestroy(s->events[i]);
  for (size_t i = 0; i < s->nblocks; i++) s->api->cuMemFreeHost(s->blocks[i]);
  for (size_t i = 0; i < s->nfutures; i++) future_free(s->futures[i]);
  s->api->cuDevicePrimaryCtxRelease(s->dev);
  ruda__server_utilities_deinit(&s->base.utilities);
  ruda__free(s->streams);
  future_home_t *h = s->home;
  ruda__free(s);
  pthread_mutex_lock(&h->lock);
  home_release_locked(h);
}

static const ruda__server_vtable_t cuda_vtable = {
    .name = "cuda",
    .destroy = cuda_destroy,
    .initialize_memory = cuda_initialize_memory,
    .staging = cuda_staging,
    .read = cuda_read,
    .write = cuda_write,
    .sync = cuda_sync,
    .get_resource = cuda_get_resource,
    .launch = cuda_launch,
    .flush = cuda_flush,
    .memory_usage = cuda_memory_usage,
    .memory_cleanup = cuda_memory_cleanup,
    .allocation_mode = cuda_allocation_mode,
    .start_profile = cuda_start_profile,
    .end_profile = cuda_end_profile,
    .comm_enabled = false,
};

static ruda_status_t cuda_device_count(uint32_t *out) {
  *out = 0;
  const ruda__cuda_api_t *api = NULL;
  ruda_status_t e = ruda__cuda_api_get(&api);
  if (e) return e;
  int n = 0;
  CUresult r = api->cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) return ruda__cu_error(RUDA_ERR_UNAVAILABLE, r, "cuDeviceGetCount", NULL);
  if (n <= 0)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                              "CUDA is unavailable: the driver (%s) reports no device",
                              api->lib_name);
  *out = (uint32_t)n;
  return NULL;
}

static int env_int(const char *name, int fallback) {
  const char *v = getenv(name);
  if (v == NULL || v[0] == '\0') return fallback;
  return atoi(v);
}

static ruda_status_t cuda_create_server(uint16_t index, ruda__server_t **out) {
  *out = NULL;
  const ruda__cuda_api_t *api = NULL;
  ruda_status_t e = ruda__cuda_api_get(&api);
  if (e) return e;
  CUdevice dev = 0;
  CUresult r = api->cuDeviceGet(&dev, (int)index);
  if (r != CUDA_SUCCESS)
    return ruda__cu_error(RUDA_ERR_INVALID_ARGUMENT, r, "cuDeviceGet", "device cuda:%u", index);
  cuda_server_t *s = ruda__calloc(1, sizeof *s);
  if (s == NULL) return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory");
  s->api = api;
  s->dev = dev;
  r = api->cuDevicePrimaryCtxRetain(&s->ctx, dev);
  if (r != CUDA_SUCCESS) {
    ruda__free(s);
    return ruda__cu_error(RUDA_ERR_UNAVAILABLE, r, "cuDevicePrimaryCtxRetain", "device cuda:%u", index);
  }
  r = api->cuCtxSetCurrent(s->ctx);
  if (r != CUDA_SUCCESS) {
    api->cuDevicePrimaryCtxRelease(dev);
    ruda__free(s);
    return ruda__cu_error(RUDA_ERR_UNAVAILABLE, r, "cuCtxSetCurrent", "device cuda:%u", index);
  }
  ruda_device_properties_t props;
  char info[256];
  e = ruda__cuda_device_properties(api, dev, &props, info, sizeof info);
  if (e) {
    api->cuDevicePrimaryCtxRelease(dev);
    ruda__free(s);
    return e;
  }
  s->cc = props.hardware.compute_capability;
  ruda__layout_policy_t policy = {RUDA_LAYOUT_POLICY_PITCHED, 512};
  ruda__server_utilities_init(&s->base.utilities, &props, info, policy);
  s->base.vt = &cuda_vtable;
  s->base.device.type_id = RUDA_DEVICE_TYPE_CUDA;
  s->base.device.index_id = index;

  /* Priority and stream count from the configuration ([streaming]). */
  int least = 0, greatest = 0;
  api->cuCtxGetStreamPriorityRange(&least, &greatest);
  const ruda_config_t *cfg = ruda_config_get();
  s->priority = 0;
  if (cfg->streaming.priority == RUDA_STREAM_PRIORITY_LOW) s->priority = least;
  if (cfg->streaming.priority == RUDA_STREAM_PRIORITY_HIGH) s->priority = greatest;

  int ms = env_int("RUDA_CUDA_MAX_STREAMS", (int)cfg->streaming.max_streams);
  if (ms < 1) ms = 1;
  if (ms > MAX_SLOTS) ms = MAX_SLOTS;
  s->max_streams = (uint32_t)ms;
  s->streams = ruda__calloc(s->max_streams, sizeof *s->streams);
  s->modules = ruda__cuda_module_cache_create(api, s->cc, s->base.utilities.properties_hash);
  s->home = ruda__calloc(1, sizeof *s->home);
  if (s->streams == NULL || s->modules == NULL || s->home == NULL) {
    ruda__free(s->home);
    ruda__free(s->streams);
    ruda__cuda_module_cache_destroy(s->modules, false);
    ruda__server_utilities_deinit(&s->base.utilities);
    api->cuDevicePrimaryCtxRelease(dev);
    ruda__free(s);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory");
  }
  pthread_mutex_init(&s->home->lock, NULL);
  s->home->refs = 1; /* the server's */
  for (uint32_t i = 0; i < s->max_streams; i++) s->streams[i].index = i;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = env_int("RUDA_CUDA_COPY_THREADS", cores >= 8 ? 6 : (int)(cores / 2));
  if (threads < 0) threads = 0;
  s->copies = ruda__copy_pool_create((unsigned)threads);
  int spin_us = env_int("RUDA_CUDA_WAIT_SPIN_US", WAIT_SPIN_US);
  s->wait_spin_ns = spin_us > 0 ? (uint64_t)spin_us * 1000u : 0;
  atomic_init(&s->poisoned, 0);
  atomic_init(&s->poison_reported, 0);
  atomic_init(&s->generation, 0);
  atomic_init(&s->poison_text_ready, 0);
  *out = &s->base;
  return NULL;
}

const ruda__backend_t ruda__backend_cuda = {RUDA_DEVICE_TYPE_CUDA, "cuda", cuda_device_count,
                                            cuda_create_server};

#endif /* RUDA_HAVE_CUDA_HEADERS */
