/* The CUDA compute server (runtime_semantics.md 6.1): the server vtable of
 * src/server/server.h over the driver API. This file holds the vtable,
 * creation and destruction, fault poisoning and recovery, and profiling;
 * streams, copies and launches are in cuda_stream.c, cuda_copy.c and
 * cuda_launch.c (shared declarations: cuda_server.h).
 *
 * Streams. Each ruda stream id has its own state in the server layer's
 * stream table (errors, profiles, cursor; src/server/stream_table.h) with a
 * CUDA extension (cuda_stream_t), initialised on first use: a non-blocking
 * CUstream with the configured priority, a memory manager for device
 * memory (cuMemAllocAsync on the stream, cuMemAlloc fallback, frees
 * deferred to flush) with the configured persistent_memory, a pinned host
 * manager for staging and a drop queue for host buffers in flight. Beyond
 * streaming.max_streams states, idle ones (no live allocation, nothing in
 * flight) are reclaimed, least recently used first.
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
 *
 * Every method runs on the device's worker thread, where create_server
 * made the primary context current. Futures may be waited on from any
 * thread; they make the context current themselves, and may outlive the
 * server (it completes them when destroyed: ruda__cuda_futures_settle).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cuda/cuda_server.h"
#include "backends/cuda/cuda_nccl.h"
#include "ruda/config.h"
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

/* ---- Poisoning ---- */

/* Records a sticky fault. `reported`: the caller that saw it returns (or
 * queues) an error describing it, so the reset that follows needs no
 * second report. */
void ruda__cuda_poison(cuda_server_t *s, CUresult r, const char *text, bool reported) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&s->poisoned, &expected, (int)r)) {
    snprintf(s->poison_text, sizeof s->poison_text, "%s", text);
    atomic_store(&s->poison_reported, reported ? 1 : 0);
    atomic_store(&s->poison_text_ready, 1);
  } else if (reported) {
    atomic_store(&s->poison_reported, 1);
  }
}

/* ---- Poison handling on the worker ---- */

static void server_recover(cuda_server_t *s);

/* Called first by every method: after a fault, resets the device (on the
 * worker thread, which owns every object involved) and queues the fault on
 * `stream` unless a caller already received it. One atomic load when
 * healthy. */
void ruda__cuda_settle_poison(cuda_server_t *s, ruda_stream_id_t stream) {
  int code = atomic_load(&s->poisoned);
  if (code == 0 && s->dead == 0) return;
  if (s->dead != 0) {
    ruda__stream_t *rs = ruda__stream_get(&s->base.streams, stream);
    if (rs == NULL || !ruda__stream_errors_empty(&rs->errors)) return;
    ruda__stream_push_error(
        rs,
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
  if (e) {
    ruda__stream_t *rs = ruda__stream_get(&s->base.streams, stream);
    if (rs != NULL) ruda__stream_push_error(rs, e);
    else ruda_status_free(e);
  }
}

/* ---- Profiling (device timestamps, per stream) ---- */

/* A profile's start event is its entry's mark in the stream's profiler. An
 * error queued on the stream while the profile is open fails it
 * (ruda__stream_push_error); a fault seen while waiting for its end is
 * queued on the stream too, so it also reaches the stream's next sync:
 * observing never takes an error away from the stream. */
static ruda_status_t cuda_start_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                        ruda_profiling_token_t *out) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
  cuda_stream_t *st = ruda__cuda_stream_get(s, stream);
  if (st == NULL)
    return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "the stream could not be created");
  CUevent ev = NULL;
  CUresult r = s->api->cuEventCreate(&ev, CU_EVENT_DEFAULT);
  if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(ev, st->cu);
  if (r != CUDA_SUCCESS) {
    if (ev) s->api->cuEventDestroy(ev);
    return ruda__cu_error(RUDA_ERR_PROFILE_UNKNOWN, r, "cuEventRecord", "starting a profile");
  }
  ruda_status_t e =
      ruda__stream_profile_start(&base->streams, cuda_rs(st), ruda__now_ns(), ev, out);
  if (e) s->api->cuEventDestroy(ev);
  return e;
}

static ruda_status_t cuda_end_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_profiling_token_t token, ruda_profile_duration_t *out) {
  cuda_server_t *s = as_cuda(base);
  ruda__cuda_settle_poison(s, stream);
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  ruda__profiler_entry_t mark;
  if (rs == NULL || !ruda__profiler_take(&rs->profiler, token.id, &mark)) {
    return ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED,
                              "token %llu is not open on this stream",
                              (unsigned long long)token.id);
  }
  cuda_stream_t *st = cuda_ext(rs);
  uint64_t elapsed_ns = 0;
  /* A start event that went with a device reset leaves the host clock. */
  bool timed = st->init && mark.mark != NULL;
  if (timed) {
    CUevent end = NULL;
    CUresult r = s->api->cuEventCreate(&end, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS) r = s->api->cuEventRecord(end, st->cu);
    if (r == CUDA_SUCCESS) r = s->api->cuEventSynchronize(end);
    float ms = 0.0f;
    if (r == CUDA_SUCCESS) r = s->api->cuEventElapsedTime(&ms, (CUevent)mark.mark, end);
    if (end) s->api->cuEventDestroy(end);
    if (r != CUDA_SUCCESS) {
      char names[300];
      ruda__cuda_recent_names(&st->recent, names, sizeof names);
      ruda_status_t fe = ruda__cuda_stream_fault(s, r, "cuEventSynchronize", names);
      if (mark.error == NULL) {
        mark.error = ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, ruda_status_clone(fe));
      }
      ruda__stream_push_error(rs, fe);
    } else {
      elapsed_ns = (uint64_t)((double)ms * 1e6);
    }
  }
  if (mark.mark != NULL) s->api->cuEventDestroy((CUevent)mark.mark);
  uint64_t end_ns = timed ? mark.start_ns + elapsed_ns : ruda__now_ns();
  return ruda__profiler_finish(&mark, end_ns, timed ? RUDA_TIMING_DEVICE : RUDA_TIMING_SYSTEM,
                               out);
}

/* A device reset took every event with it: open profiles lose their start
 * marks and report that they were interrupted. */
static void forget_profile_marks(void *ctx, ruda__stream_t *rs) {
  (void)ctx;
  for (size_t i = 0; i < rs->profiler.len; i++) {
    ruda__profiler_entry_t *e = &rs->profiler.entries[i];
    e->mark = NULL;
    if (e->error == NULL) {
      e->error = ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN,
                                    "the CUDA device was reset after a fault while this "
                                    "profile was open");
    }
  }
}

static void free_stream_part(void *ctx, ruda__stream_t *rs) {
  cuda_stream_t *st = cuda_ext(rs);
  if (st->init) ruda__cuda_stream_free(ctx, st, false);
}

/* ---- Lifetime ---- */

/* After a fault: drop every stream, module and allocation, reset the
 * primary context and start over. Descriptors bound before become unbound
 * (their lookups give NotFound). Errors queued on streams are kept. */
static void server_recover(cuda_server_t *s) {
  const ruda__cuda_api_t *api = s->api;
  ruda__stream_table_foreach(&s->base.streams, free_stream_part, s);
  ruda__stream_table_foreach(&s->base.streams, forget_profile_marks, s);
  ruda__cuda_module_cache_destroy(s->modules, true);
  s->modules = ruda__cuda_module_cache_create(api, s->cc, s->base.utilities.properties_hash,
                                              s->base.utilities.settings.cache_dir);
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
  ruda__cuda_futures_settle(s, alive);
#if defined(RUDA_HAVE_NCCL_HEADERS)
  ruda__cuda_comms_destroy(s, alive);
#endif
  s->context_alive = alive;
  ruda__stream_table_deinit(&s->base.streams);
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

static const ruda__server_vtable_t cuda_vtable = {
    .name = "cuda",
    .destroy = cuda_destroy,
    .initialize_memory = ruda__cuda_initialize_memory,
    .staging = ruda__cuda_staging,
    .read = ruda__cuda_read,
    .write = ruda__cuda_write,
    .sync = ruda__cuda_sync,
    .get_resource = ruda__cuda_get_resource,
    .launch = ruda__cuda_launch,
    .flush = ruda__cuda_flush,
    .memory_usage = ruda__cuda_memory_usage,
    .memory_usage_device = ruda__cuda_memory_usage_device,
    .memory_cleanup = ruda__cuda_memory_cleanup,
    .allocation_mode = ruda__cuda_allocation_mode,
    .start_profile = cuda_start_profile,
    .end_profile = cuda_end_profile,
#if defined(RUDA_HAVE_NCCL_HEADERS)
    /* NCCL is loaded on the first collective; without it they answer
     * UnsupportedIoOperation (cuda_nccl.c). */
    .comm_enabled = true,
    .comm_reduce_types = RUDA__REDUCE_TYPES_NCCL,
    .comm_strided_send = false,
    .sync_collective = ruda__cuda_sync_collective,
    .comm_init = ruda__cuda_comm_init,
    .comm_token = ruda__cuda_comm_token,
    .collective = ruda__cuda_collective,
    .comm_destroy = ruda__cuda_comm_destroy,
    .comm_shutdown = ruda__cuda_comm_shutdown,
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
