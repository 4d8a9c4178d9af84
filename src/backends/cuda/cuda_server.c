/* The CUDA compute server: the server vtable of src/server/server.h over
 * the driver API. This file is the top of the backend: the vtable, whose
 * entries settle faults once (and, for sync, read and flush, the stream's
 * NCCL work) and then call the implementation in the module below
 * (cuda_memory.c, cuda_copy.c, cuda_launch.c, cuda_profile.c,
 * cuda_nccl.c), creation and destruction, and recovery after a fault
 * (the reset itself is cuda_reset.c's). The
 * modules and their order are listed in cuda_types.h.
 *
 * Streams. Each ruda stream id has its own state in the server layer's
 * stream table (errors, profiles, cursor; src/server/stream_table.h) with a
 * CUDA extension (cuda_stream_t), initialised on first use: a non-blocking
 * CUstream with the configured priority, a memory manager for device
 * memory (cuMemAlloc pages, kept until a cleanup, taken from and given
 * back to the server's stash of idle pages as states come and go; or
 * cuMemAllocAsync on the stream) with the configured persistent_memory,
 * a pinned host manager for staging and a drop queue for host buffers in
 * flight. Beyond streaming.max_streams states, idle ones (no live
 * allocation, nothing in flight) are reclaimed, least recently used first.
 *
 * Cross-stream use. A binding whose stream differs from the operation's
 * makes the operation's stream wait on an event recorded on the origin
 * (when the origin has had work since the last such wait), and the binding
 * is kept (cloned) until an event recorded after the consuming work has
 * completed: polled on the device thread at the consumer's next operation,
 * and on every stream at any sync, flush, memory report or cleanup, so
 * that memory returns once the consumer's work is known complete.
 *
 * Profiles are per stream: an event recorded on the stream at start and
 * end (device time).
 *
 * Faults. A kernel fault (illegal address, ...) poisons the CUDA context.
 * It is reported at the next sync/flush/read as
 * ServerError::Launch(LaunchError::Unknown) naming the kernels launched
 * since the last completed sync; afterwards the server resets the primary
 * context so the device is usable again (old buffers report NotFound).
 * Any file, on any thread, may poison (cuda_fault.c holds the state and
 * builds the errors); only this file acts on it, once, at the entry of the
 * next operation on the worker (settle_poison), since the reset frees
 * every stream.
 *
 * Methods run one at a time, on the device's worker thread (where
 * create_server made the primary context current) or on a caller's thread
 * that cuda_thread_enter prepared: a short call made while the device was
 * idle, or the queue run by a caller waiting for its answer. Recovery and
 * NCCL's settling stay on the worker (cuda_thread_enter refuses while they
 * are pending). Futures may be waited on from any thread; they make the
 * context current themselves, and may outlive the server (it completes
 * them when destroyed: ruda__cuda_futures_settle).
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/cuda_copy.h"
#include "backends/cuda/cuda_fault.h"
#include "backends/cuda/cuda_future.h"
#include "backends/cuda/cuda_graph.h"
#include "backends/cuda/cuda_launch.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/cuda_nccl.h"
#include "backends/cuda/cuda_profile.h"
#include "backends/cuda/cuda_reset.h"
#include "backends/cuda/cuda_stream.h"
#include "backends/cuda/cuda_types.h"
#include "base/env.h"
#include "ruda/config.h"
#include "server/portable_kernel.h"
#include "server/server.h"

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

/* ---- Settling faults, at the entry of an operation ---- */

/* After a fault: resets the device (on the worker thread, which owns
 * every object involved) and queues the fault on `stream` unless a caller
 * already received it. */
RUDA__COLD
static void settle_fault(cuda_server_t *s, ruda_stream_id_t stream) {
  cuda_fault_t *f = &s->fault;
  ruda__stream_t *rs;
  if (f->dead == 0) {
    ruda_status_t e = ruda__cuda_fault_unreported(f);
    ruda__cuda_reset_device(s);
    rs = ruda__stream_get(&s->base.streams, stream);
    if (e) {
      if (rs != NULL) ruda__stream_push_error(rs, e);
      else ruda_status_free(e);
    }
    if (f->dead == 0) return;
    /* Just lost (docs/errors.md, "Device loss"): every stream fails at
     * once with DeviceLost. */
    ruda__cuda_fault_lost_all(f, &s->base.streams, s->base.device.index_id);
  } else {
    /* Lost before: each later operation's stream fails again. */
    rs = ruda__stream_get(&s->base.streams, stream);
    if (rs != NULL) ruda__cuda_fault_lost_one(f, rs, s->base.device.index_id);
  }
  ruda__cuda_fault_unpoison(f);
}

/* Called first by the vtable entries below: one atomic load when
 * healthy. */
static inline void settle_poison(cuda_server_t *s, ruda_stream_id_t stream) {
  if (ruda__cuda_faulted(&s->fault)) settle_fault(s, stream);
}

/* settle_poison, then the stream's NCCL work (ruda__cuda_comms_settle):
 * for sync and read (wait) and flush (no wait). */
static inline void settle_with_comms(cuda_server_t *s, ruda_stream_id_t stream, bool wait) {
  settle_poison(s, stream);
#if defined(RUDA_HAVE_NCCL_HEADERS)
  ruda__cuda_comms_settle(s, stream, wait);
#else
  (void)wait;
#endif
}

/* ---- Recovery ---- */

/* Device loss: a reset context works again at once (settle_fault); a dead
 * one cannot be brought back in this process. */
static ruda_status_t cuda_recover(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream); /* a fault not settled yet: reset or lose it now */
  if (s->fault.dead == 0) return NULL;
  return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                            "cuda:%u cannot be recovered in this process: after a kernel fault "
                            "(%s) the CUDA driver keeps the context dead until the process "
                            "exits; restart the process (see examples/supervisor.c)",
                            base->device.index_id, ruda__cu_result_name((CUresult)s->fault.dead));
}

/* ---- Lifetime ---- */

static void cuda_destroy(ruda__server_t *base) {
  cuda_server_t *s = as_cuda(base);
  bool alive = !ruda__cuda_faulted(&s->fault);
  s->api->cuCtxSetCurrent(s->ctx);
  /* Futures still held by callers (ruda_shutdown, exit) complete now: their
   * staging and events live in this context. */
  if (alive) alive = s->api->cuCtxSynchronize() == CUDA_SUCCESS;
  ruda__cuda_futures_settle(s, alive);
#if defined(RUDA_HAVE_NCCL_HEADERS)
  ruda__cuda_comms_destroy(s, alive);
#endif
  s->context_alive = alive;
  ruda__stream_table_deinit(&s->base.streams);
  /* After the streams, which stash their pages. */
  if (!alive) ruda__cuda_stash_forget(&s->stash); /* the context took them */
  ruda__cuda_stash_destroy(&s->stash);
  /* After the streams: their drop queues held the replays' references. */
  ruda__cuda_graphs_free(s, alive);
  ruda__cuda_module_cache_destroy(s->modules, !alive);
  ruda__copy_pool_destroy(s->copies);
  for (size_t i = 0; i < s->nevents; i++) s->api->cuEventDestroy(s->events[i]);
  for (size_t i = 0; i < s->nblocks; i++) s->api->cuMemFreeHost(s->blocks[i]);
  for (size_t i = 0; i < s->nfutures; i++) ruda__cuda_future_free(s->futures[i]);
  s->api->cuDevicePrimaryCtxRelease(s->dev);
  ruda__server_utilities_deinit(&s->base.utilities);
  future_home_t *h = s->home;
  ruda__free(s);
  pthread_mutex_lock(&h->lock);
  ruda__cuda_home_release_locked(h);
}

/* ---- The vtable: settle, then the implementation ---- */

static void cuda_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                   ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  ruda__cuda_initialize_memory(s, memory, size, stream);
}

static ruda_status_t cuda_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                  ruda_stream_id_t stream, ruda_bytes_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__cuda_staging(s, sizes, count, stream, out);
}

/* sync and read wait for the stream's NCCL work first (its errors and
 * timeouts are then queued on the stream, which they drain). */
RUDA__HOT
static ruda_status_t cuda_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                               void *const *dsts, size_t count, ruda_stream_id_t stream,
                               ruda__future_t **out) {
  cuda_server_t *s = as_cuda(base);
  *out = NULL;
  settle_with_comms(s, stream, true);
  return ruda__stream_read(&s->pipeline, descs, dsts, count, stream, out, ruda__cuda_read_start,
                           ruda__cuda_read_part, ruda__cuda_read_end);
}

static void cuda_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                       size_t count, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  ruda__stream_write(&s->pipeline, descs, srcs, count, stream, ruda__cuda_write_part);
}

RUDA__HOT
static ruda_status_t cuda_sync(ruda__server_t *base, ruda_stream_id_t stream,
                               ruda__future_t **out) {
  cuda_server_t *s = as_cuda(base);
  *out = NULL;
  settle_with_comms(s, stream, true);
  return ruda__cuda_sync(s, stream, out);
}

static ruda_status_t cuda_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                       ruda_stream_id_t stream, ruda_resource_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__cuda_get_resource(s, b, out);
}

static ruda_status_t cuda_import_memory(ruda__server_t *base, ruda_memory_t *memory,
                                        const ruda__external_memory_t *ext,
                                        ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__cuda_import_memory(s, memory, ext, stream);
}

static ruda_status_t cuda_fence_external(ruda__server_t *base, ruda_stream_id_t stream,
                                         uint64_t other) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__cuda_fence_external(s, stream, other);
}

static ruda_status_t cuda_native_stream(ruda__server_t *base, ruda_stream_id_t stream,
                                        uint64_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__cuda_native_stream(s, stream, out);
}

RUDA__HOT
static void cuda_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                        const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                        ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  (void)mode; /* CUDA C kernels do their own bounds checks */
  settle_poison(s, stream);
  ruda__stream_launch(&s->pipeline, kernel, count, args, stream, ruda__cuda_launch);
}

/* flush only polls the stream's NCCL work; a sticky fault it finds on the
 * stream is settled at once (the device is reset), then the flush goes on
 * over what is left. */
static ruda_status_t cuda_flush(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_with_comms(s, stream, false);
  if (ruda__cuda_flush_check(s, stream)) settle_poison(s, stream);
  return ruda__cuda_flush(s, stream);
}

/* Memory reports settle no fault: they report queued errors without
 * draining them. */
static ruda_status_t cuda_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                       ruda_memory_usage_t *out) {
  return ruda__cuda_memory_usage(as_cuda(base), stream, out);
}

static ruda_status_t cuda_memory_usage_device(ruda__server_t *base, ruda_memory_usage_t *out) {
  return ruda__cuda_memory_usage_device(as_cuda(base), out);
}

static void cuda_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  ruda__cuda_memory_cleanup(s, stream);
}

static void cuda_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                                 ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  ruda__cuda_allocation_mode(s, mode, stream);
}

static ruda_status_t cuda_start_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                        ruda_profiling_token_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__cuda_start_profile(s, stream, out);
}

static ruda_status_t cuda_end_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_profiling_token_t token, ruda_profile_duration_t *out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__device_profile_end(&base->streams, stream, token, &ruda__cuda_profile_clock, s,
                                  out);
}

#if defined(RUDA_HAVE_NCCL_HEADERS)
/* Of the communication methods only the collective settles faults. */
static ruda_status_t cuda_sync_collective(ruda__server_t *base, ruda_stream_id_t stream) {
  return ruda__cuda_sync_collective(as_cuda(base), stream);
}

static ruda_status_t cuda_comm_init(ruda__server_t *base, const ruda__comm_peers_t *peers,
                                    const void *token, size_t token_len) {
  return ruda__cuda_comm_init(as_cuda(base), peers, token, token_len);
}

static ruda_status_t cuda_comm_token(ruda__server_t *base, void *out, size_t cap,
                                     size_t *out_len) {
  (void)base;
  return ruda__cuda_comm_token(out, cap, out_len);
}

static void cuda_collective(ruda__server_t *base, const ruda__coll_t *c,
                            ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  ruda__cuda_collective(s, c, stream);
}

static ruda_status_t cuda_comm_destroy(ruda__server_t *base, uint64_t id) {
  return ruda__cuda_comm_destroy(as_cuda(base), id);
}

static void cuda_comm_shutdown(ruda__server_t *base) { ruda__cuda_comm_shutdown(as_cuda(base)); }
#endif

static ruda_status_t cuda_graph_build(ruda__server_t *base, const ruda__graph_t *g,
                                       ruda_stream_id_t stream, void **out) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  return ruda__cuda_graph_build(s, g, stream, out);
}

static void cuda_graph_launch(ruda__server_t *base, const ruda__graph_t *g, void *native,
                              ruda_stream_id_t stream) {
  cuda_server_t *s = as_cuda(base);
  settle_poison(s, stream);
  ruda__cuda_graph_launch(s, g, native, stream);
}

static void cuda_graph_destroy(ruda__server_t *base, void *native) {
  ruda__cuda_graph_destroy(as_cuda(base), native);
}

/* Work on a caller's thread (a short call while the device was idle, or
 * the queue run by a waiting caller): the context is made current there.
 * A thread that had no context keeps this one (its next call needs it
 * again); another context is restored. Refused while a fault waits to be
 * settled, or while collectives are set up: recovery and NCCL's settling
 * stay on the worker. */
/* Work that only the worker does is pending: recovery after a fault, or
 * NCCL's settling once collectives are set up. */
static bool cuda_wants_worker(ruda__server_t *base) {
  cuda_server_t *s = as_cuda(base);
  return ruda__cuda_faulted(&s->fault) || s->comms != NULL;
}

RUDA__HOT
static bool cuda_thread_enter(ruda__server_t *base, void **token) {
  cuda_server_t *s = as_cuda(base);
  if (cuda_wants_worker(base)) return false;
  CUcontext prev = NULL;
  if (s->api->cuCtxGetCurrent(&prev) != CUDA_SUCCESS) prev = NULL;
  if (prev != s->ctx && s->api->cuCtxSetCurrent(s->ctx) != CUDA_SUCCESS) return false;
  *token = prev;
  return true;
}

RUDA__HOT
static void cuda_thread_leave(ruda__server_t *base, void *token) {
  cuda_server_t *s = as_cuda(base);
  CUcontext prev = token;
  if (prev != NULL && prev != s->ctx) s->api->cuCtxSetCurrent(prev);
}

static const ruda__server_vtable_t cuda_vtable = {
    .name = "cuda",
    .destroy = cuda_destroy,
    .recover = cuda_recover,
    .initialize_memory = cuda_initialize_memory,
    .staging = cuda_staging,
    .read = cuda_read,
    .write = cuda_write,
    .sync = cuda_sync,
    .get_resource = cuda_get_resource,
    .import_memory = cuda_import_memory,
    .fence_external = cuda_fence_external,
    .native_stream = cuda_native_stream,
    .launch = cuda_launch,
    .flush = cuda_flush,
    .memory_usage = cuda_memory_usage,
    .memory_usage_device = cuda_memory_usage_device,
    .memory_cleanup = cuda_memory_cleanup,
    .allocation_mode = cuda_allocation_mode,
    .start_profile = cuda_start_profile,
    .end_profile = cuda_end_profile,
    /* A waiting caller may run the queue itself once cuda_thread_enter
     * made the context current there (docs/design/cuda.md). */
    .any_thread = true,
    .launch_returns_early = true,
    .thread_enter = cuda_thread_enter,
    .thread_leave = cuda_thread_leave,
    .wants_worker = cuda_wants_worker,
    .graph_build = cuda_graph_build,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
#if defined(RUDA_HAVE_NCCL_HEADERS)
    /* NCCL is loaded on the first collective; without it they answer
     * UnsupportedIoOperation (cuda_nccl.c). */
    .comm_enabled = true,
    .comm_reduce_types = RUDA__REDUCE_TYPES_NCCL,
    .comm_strided_send = false,
    .sync_collective = cuda_sync_collective,
    .comm_init = cuda_comm_init,
    .comm_token = cuda_comm_token,
    .collective = cuda_collective,
    .comm_destroy = cuda_comm_destroy,
    .comm_shutdown = cuda_comm_shutdown,
#else
    .comm_enabled = false,
#endif
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
                              api->head.lib_name);
  *out = (uint32_t)n;
  return NULL;
}

static int env_int(const char *name, int fallback) {
  long long v = ruda__env_int(name, fallback);
  return v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : (int)v;
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
  s->stash.api = api;
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

  /* Stream priority and count, pools, check mode and the disk cache come
   * from the server layer's settings. */
  const ruda__device_settings_t *set = &s->base.utilities.settings;
  int least = 0, greatest = 0;
  api->cuCtxGetStreamPriorityRange(&least, &greatest);
  s->priority = 0;
  if (set->priority == RUDA_STREAM_PRIORITY_LOW) s->priority = least;
  if (set->priority == RUDA_STREAM_PRIORITY_HIGH) s->priority = greatest;
  s->context_alive = true;

  ruda__stream_table_ops_t ops = ruda__cuda_stream_ops;
  ops.ctx = s;
  e = ruda__server_streams_init(&s->base, &ops);
  s->pipeline = (ruda__stream_pipeline_t){&s->base, &ruda__cuda_event_fence,
                                          &ruda__cuda_event_timer, ruda__cuda_stream_setup, s,
                                          &s->memory_group, 0};
  s->modules = ruda__cuda_module_cache_create(api, s->cc, s->base.utilities.properties_hash,
                                              set->cache_dir);
  s->home = ruda__calloc(1, sizeof *s->home);
  if (e != NULL || s->modules == NULL || s->home == NULL) {
    ruda_status_free(e);
    ruda__free(s->home);
    ruda__stream_table_deinit(&s->base.streams);
    ruda__cuda_module_cache_destroy(s->modules, false);
    ruda__server_utilities_deinit(&s->base.utilities);
    api->cuDevicePrimaryCtxRelease(dev);
    ruda__free(s);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory");
  }
  pthread_mutex_init(&s->home->lock, NULL);
  s->home->refs = 1; /* the server's */
  s->copies = ruda__copy_pool_for_staging("RUDA_CUDA_COPY_THREADS", "RUDA_CUDA_COPY_STREAMING");
  /* The staging ring of pageable writes to idle streams: 32 slots of
   * 1 MiB (cuda_copy.c). On the H200 host a 256 MiB write went 27-43 GB/s
   * through it against 25-37 GB/s staged whole, alternating in the same
   * runs (42-44 GB/s in three later runs; 2026-12-03), in 32 MiB of pinned
   * memory instead of 256 MiB; with plain stores instead of streaming ones
   * it went 24-35 GB/s. */
  int slots = env_int("RUDA_CUDA_STAGE_SLOTS", 32);
  int chunk_kib = env_int("RUDA_CUDA_STAGE_CHUNK_KIB", 1024);
  if (slots > RUDA__CUDA_STAGE_MAX_SLOTS) slots = RUDA__CUDA_STAGE_MAX_SLOTS;
  s->stage_slots = slots > 0 && chunk_kib > 0 ? (size_t)slots : 0;
  s->stage_chunk = (size_t)(chunk_kib > 0 ? chunk_kib : 1) * 1024u;
  int spin_us = env_int("RUDA_CUDA_WAIT_SPIN_US", WAIT_SPIN_US);
  s->wait_spin_ns = spin_us > 0 ? (uint64_t)spin_us * 1000u : 0;
  atomic_init(&s->fault.poisoned, 0);
  atomic_init(&s->fault.poison_reported, 0);
  atomic_init(&s->fault.generation, 0);
  atomic_init(&s->fault.poison_text_ready, 0);
  *out = &s->base;
  return NULL;
}

static ruda_status_t cuda_compile_portable(const ruda__portable_compile_t *job, void **out,
                                            size_t *out_size) {
  const char *opts[64]; /* -O, -f and -m options are the CPU compiler's */
  size_t n = ruda__portable_gpu_options(job->options, job->num_options, opts, 64);
  return ruda__cuda_nvrtc_compile_portable(job->name, job->text, job->len, job->origin,
                                           job->target, opts, n, out, out_size);
}

const ruda__backend_t ruda__backend_cuda = {RUDA_DEVICE_TYPE_CUDA, "cuda", cuda_device_count,
                                            cuda_create_server, cuda_compile_portable};

#endif /* RUDA_HAVE_CUDA_HEADERS */
