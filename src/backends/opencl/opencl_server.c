/* The OpenCL compute server: the server vtable of src/server/server.h over
 * the OpenCL API, on any platform's device (PoCL in CI). This file is the
 * top of the backend: the vtable, creation and destruction. The vtable
 * points straight at the implementations (opencl_memory.c, opencl_copy.c,
 * opencl_launch.c, opencl_profile.c): the backend keeps no poison state
 * (a command that fails on the device fails its event, reported by the
 * wait that sees it), so there is nothing to settle at the entries. The
 * modules and their order are listed in opencl_types.h.
 *
 * Device. One cl_context per device (server), created on the device's
 * worker thread; every OpenCL call of the server is made there, except the
 * waits and polls of futures (OpenCL calls are thread-safe).
 *
 * Streams. Each ruda stream id gets its own state, found by the id itself
 * (no aliasing of ids onto slots): an in-order command queue with
 * profiling on, a memory manager for device memory, one for pinned
 * staging, its error list, and a cursor bumped by every operation. The
 * host buffer a non-blocking write copies from is released by the
 * driver's event callback as soon as that copy has completed; transfers
 * of 1 MiB or more from or to pageable memory are blocking (opencl_copy.c
 * says why). Operations submit their commands (clFlush) before they
 * return, so work starts promptly.
 *
 * Memory. Pools take pages from clCreateBuffer; a slice is (page, offset).
 * Copies address it directly (clEnqueue{Read,Write}Buffer[Rect] take an
 * offset). Kernels receive a cl_mem per buffer: the page itself when the
 * view covers it, else a sub-buffer (clCreateSubBuffer), cached per page by
 * (offset, size) and released with the page. Sub-buffers must start at a
 * multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN, which is why the slice
 * alignment (ruda_device_properties_t.memory.alignment) is at least that:
 * every pooled buffer can be a kernel argument; an offset view narrowed to
 * an unaligned start cannot (LaunchError::Unknown says so). Pinned staging
 * is CL_MEM_ALLOC_HOST_PTR pages mapped once. Releasing a page never
 * waits: OpenCL keeps a memory object until the commands using it finish.
 *
 * Fences. Every command a stream enqueues (copies, info uploads, barriers,
 * profile markers, and kernels on CPU devices) is enqueued with an event,
 * and the stream keeps the newest one (ocl_stream_t.last). The queue is in
 * order, so that event completing means all of the stream's work has:
 * syncs, reads and kept bindings wait on it, and nobody enqueues a marker
 * (on PoCL a marker is one more command through the driver's scheduler,
 * and its own flush wakes every driver thread). Once the newest command is
 * seen complete the stream lets it go, and a sync with nothing in flight
 * answers at once. Where a kernel's event costs as much as a marker
 * (NVIDIA's OpenCL: ocl_server_t.kernel_events), kernels go without one;
 * a read's or a sync's future after them finishes the queue (clFinish) on
 * the waiting thread and publishes how far that reached (the stream's
 * finish mark), and a poll of it enqueues a marker; a cross-stream wait or
 * kept bindings after them use a marker.
 *
 * Cross-stream use. A binding of another stream makes the operation's
 * queue wait (a barrier on this queue with the origin's newest event) when
 * the origin has work in flight, and the binding is kept (cloned) until
 * the consuming work's newest event has completed (polled on the worker).
 *
 * Reads, syncs. A read enqueues copies straight into the destinations
 * and returns a future fenced by the last copy's event (none when the
 * copies were blocking and are done); the caller waits on it (no second
 * hand-off from the worker). A command that fails on the device (an event
 * whose status is an error code) is reported by the wait as
 * ServerError::Launch(LaunchError::Unknown) naming the kernels
 * launched on the stream since its last sync; errors of enqueue calls are
 * queued on the stream and returned by its next flush, sync or read.
 *
 * Kernels. OpenCL C built with clBuildProgram (see opencl_compile.c for the
 * caches). Parameters: one __global pointer per buffer, then
 * `__global const ulong *info` (NULL without info words), then, when the
 * kernel declares one more parameter, a `__local` pointer to
 * shared_mem_bytes of dynamic local memory. The work-group is ruda_dim;
 * the global size is count x ruda_dim.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_copy.h"
#include "backends/opencl/opencl_fault.h"
#include "backends/opencl/opencl_launch.h"
#include "backends/opencl/opencl_memory.h"
#include "backends/opencl/opencl_profile.h"
#include "backends/opencl/opencl_stream.h"
#include "backends/opencl/opencl_types.h"
#include "base/env.h"
#include "server/server.h"

#if !defined(RUDA_HAVE_OPENCL_HEADERS)

static ruda_status_t opencl_device_count(uint32_t *out) {
  *out = 0;
  return ruda__opencl_probe();
}

static ruda_status_t opencl_create_server(uint16_t index, ruda__server_t **out) {
  (void)index;
  *out = NULL;
  return ruda__opencl_probe();
}

#else /* RUDA_HAVE_OPENCL_HEADERS */

/* ---- Lifetime ---- */

static void finish_queue(void *ctx, ruda__stream_t *rs) {
  ocl_server_t *s = ctx;
  ocl_stream_t *st = ocl_ext(rs);
  if (st->pipe.ready) s->api->clFinish(st->queue);
}

static void opencl_destroy(ruda__server_t *base) {
  ocl_server_t *s = as_ocl(base);
  const ruda__opencl_api_t *api = s->api;
  /* At process exit a GPU driver's objects are left to the OS: NVIDIA's
   * OpenCL tears down its own state in exit handlers that can run before
   * ruda's, and a clFinish or clRelease* after that crashes (seen on the
   * H200: a segfault on the worker thread after every test had passed).
   * CPU devices (PoCL) are released as usual, which keeps leak checkers
   * meaningful. */
  if (ruda__server_process_exiting() && !base->shares_host_cores) return;
  ruda__stream_table_foreach(&base->streams, finish_queue, s);
  /* The queues are finished; the callbacks releasing the host buffers of
   * their writes (pinned staging among them) may still be running on the
   * driver's threads. */
  while (atomic_load(&s->pending_releases) > 0) sched_yield();
  ruda__stream_table_deinit(&base->streams);
  ruda__free(s->pinned);
  ruda__copy_pool_destroy(s->copies);
  ruda__opencl_program_cache_destroy(s->programs);
  if (s->service) {
    api->clFinish(s->service);
    api->clReleaseCommandQueue(s->service);
  }
  if (s->ctx) api->clReleaseContext(s->ctx);
  ruda__server_utilities_deinit(&s->base.utilities);
  ruda__free(s);
}

/* The context and the queue for the server's own commands, new
 * (ruda__cl_error naming the failing call otherwise). */
/* The context and the service queue; *code is the failing call's code
 * (CL_SUCCESS when none failed). */
static ruda_status_t context_make(ocl_server_t *s, uint16_t index, cl_int *code) {
  const ruda__opencl_api_t *api = s->api;
  const ruda__opencl_device_t *dev = s->dev;
  cl_context_properties cprops[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev->platform, 0};
  cl_int r = CL_SUCCESS;
  s->ctx = api->clCreateContext(cprops, 1, &dev->device, NULL, NULL, &r);
  *code = r;
  if (r != CL_SUCCESS || s->ctx == NULL) {
    s->ctx = NULL;
    return ruda__cl_error(RUDA_ERR_UNAVAILABLE, r, "clCreateContext", "device opencl:%u (%s)",
                          index, dev->props.name);
  }
  if (api->clCreateCommandQueueWithProperties != NULL)
    s->service = api->clCreateCommandQueueWithProperties(s->ctx, dev->device, NULL, &r);
  if (s->service == NULL && api->clCreateCommandQueue != NULL)
    s->service = api->clCreateCommandQueue(s->ctx, dev->device, 0, &r);
  if (s->service == NULL) {
    *code = r;
    api->clReleaseContext(s->ctx);
    s->ctx = NULL;
    return ruda__cl_error(RUDA_ERR_UNAVAILABLE, r, "clCreateCommandQueue",
                          "device opencl:%u (%s)", index, dev->props.name);
  }
  return NULL;
}

/* Device loss (docs/errors.md): a fresh context. Every stream starts
 * afresh (its queue, its memory and its queued errors go with the old
 * context: buffers made before report NotFound), compiled programs are
 * built again. The device stays lost when a new context cannot be made:
 * after a real kernel fault NVIDIA's driver refuses every new context of
 * the process (RUDA__CL_NV_KERNEL_FAULT), as its CUDA driver does. */
static ruda_status_t opencl_recover(ruda__server_t *base, ruda_stream_id_t stream) {
  (void)stream;
  ocl_server_t *s = as_ocl(base);
  if (!ruda__device_loss_any(base->loss)) return NULL;
  const ruda__opencl_api_t *api = s->api;
  ruda__stream_table_foreach(&base->streams, finish_queue, s); /* fails fast on a dead one */
  while (atomic_load(&s->pending_releases) > 0) sched_yield();
  ruda__stream_table_deinit(&base->streams);
  ruda__opencl_program_cache_destroy(s->programs);
  s->programs = NULL;
  if (s->service) {
    api->clFinish(s->service);
    api->clReleaseCommandQueue(s->service);
    s->service = NULL;
  }
  if (s->ctx) api->clReleaseContext(s->ctx);
  s->ctx = NULL;
  ruda__stream_table_ops_t ops = ruda__ocl_stream_ops;
  ops.ctx = s;
  cl_int code = CL_SUCCESS;
  ruda_status_t e = context_make(s, base->device.index_id, &code);
  if (e != NULL && code == RUDA__CL_NV_KERNEL_FAULT) {
    ruda_status_t out = ruda_status_create(
        RUDA_ERR_UNAVAILABLE,
        "opencl:%u cannot be recovered in this process: after a kernel fault NVIDIA's OpenCL "
        "driver refuses every new context (clCreateContext: CL_NV_KERNEL_FAULT) until the "
        "process exits; restart the process (see examples/supervisor.c)",
        base->device.index_id);
    ruda_status_free(e);
    return out;
  }
  if (e == NULL) e = ruda__server_streams_init(base, &ops);
  if (e == NULL) {
    s->programs = ruda__opencl_program_cache_create(api, s->ctx, s->dev,
                                                    base->utilities.properties_hash,
                                                    base->utilities.settings.cache_dir);
    if (s->programs == NULL) e = ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory");
  }
  if (e) {
    const char *why = ruda_status_reason(e);
    ruda_status_t out = ruda_status_create(RUDA_ERR_UNAVAILABLE,
                                           "opencl:%u could not be recovered and stays lost: %s",
                                           base->device.index_id, why ? why : "?");
    ruda_status_free(e);
    return out;
  }
  ruda__device_loss_clear(base->loss);
  return NULL;
}

RUDA__HOT
static void opencl_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                          const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                          ruda_stream_id_t stream) {
  (void)mode; /* OpenCL C kernels do their own bounds checks */
  ruda__stream_launch(&as_ocl(base)->pipeline, kernel, count, args, stream, ruda__ocl_launch);
}

static ruda_status_t opencl_end_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                        ruda_profiling_token_t token,
                                        ruda_profile_duration_t *out) {
  return ruda__device_profile_end(&base->streams, stream, token, &ruda__ocl_profile_clock,
                                  as_ocl(base), out);
}

static const ruda__server_vtable_t opencl_vtable = {
    .name = "opencl",
    .destroy = opencl_destroy,
    .recover = opencl_recover,
    .initialize_memory = ruda__ocl_initialize_memory,
    .staging = ruda__ocl_staging,
    .read = ruda__ocl_read,
    .write = ruda__ocl_write,
    .sync = ruda__ocl_sync,
    /* Nothing of an OpenCL server is tied to its worker thread: a waiting
     * caller may run the queue itself (docs/opencl.md). */
    .any_thread = true,
    .launch_returns_early = true,
    .get_resource = ruda__ocl_get_resource,
    .launch = opencl_launch,
    .flush = ruda__ocl_flush,
    .memory_usage = ruda__ocl_memory_usage,
    .memory_cleanup = ruda__ocl_memory_cleanup,
    .allocation_mode = ruda__ocl_allocation_mode,
    .start_profile = ruda__ocl_start_profile,
    .end_profile = opencl_end_profile,
    .completes_in_order = false,
    .comm_enabled = false,
};

static ruda_status_t opencl_device_count(uint32_t *out) {
  *out = 0;
  const ruda__opencl_device_t *devs = NULL;
  size_t n = 0;
  ruda_status_t e = ruda__opencl_devices(&devs, &n);
  if (e) return e;
  *out = n > UINT16_MAX ? UINT16_MAX : (uint32_t)n;
  return NULL;
}

/* Whether kernels are enqueued with an event (docs/design/opencl.md): on CPU
 * devices, where an event is free; not on GPUs, where it costs NVIDIA's
 * driver about 8 us and a sync after a kernel finishes the queue instead.
 * RUDA_OPENCL_KERNEL_EVENTS=0 or 1 chooses either on any device (the
 * tests run the GPUs' way on PoCL with 0). */
static bool kernel_events_wanted(const ruda__opencl_device_t *dev) {
  const char *e = getenv("RUDA_OPENCL_KERNEL_EVENTS");
  if (e != NULL && (strcmp(e, "0") == 0 || strcmp(e, "1") == 0)) return e[0] == '1';
  return (dev->type & CL_DEVICE_TYPE_CPU) != 0;
}

/* The smallest pageable write staged through pinned memory (0: none):
 * RUDA_OPENCL_STAGE_MIN_KIB when set, else 8 MiB on a device with memory
 * of its own and none where device memory is host memory (PoCL), where
 * staging would only add a copy. */
static uint64_t stage_min_wanted(const ruda__opencl_device_t *dev) {
  long long kib = ruda__env_int("RUDA_OPENCL_STAGE_MIN_KIB", dev->unified_memory ? 0 : 8192);
  if (kib <= 0) return 0;
  return (uint64_t)kib > UINT64_MAX / 1024u ? UINT64_MAX : (uint64_t)kib * 1024u;
}

static ruda_status_t opencl_create_server(uint16_t index, ruda__server_t **out) {
  *out = NULL;
  const ruda__opencl_device_t *devs = NULL;
  size_t n = 0;
  ruda_status_t e = ruda__opencl_devices(&devs, &n);
  if (e) return e;
  if (index >= n)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "opencl:%u does not exist (%zu OpenCL device%s)", index, n,
                              n == 1 ? "" : "s");
  const ruda__opencl_api_t *api = NULL;
  e = ruda__opencl_api_get(&api);
  if (e) return e;
  const ruda__opencl_device_t *dev = &devs[index];
  ocl_server_t *s = ruda__calloc(1, sizeof *s);
  if (s == NULL) return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory");
  s->api = api;
  s->dev = dev;
  cl_int code = CL_SUCCESS;
  e = context_make(s, index, &code);
  if (e) {
    ruda__free(s);
    return e;
  }
  ruda__layout_policy_t policy = {RUDA_LAYOUT_POLICY_PITCHED, dev->props.memory.alignment};
  ruda__server_utilities_init(&s->base.utilities, &dev->props, dev->info, policy);
  s->base.vt = &opencl_vtable;
  s->base.device.type_id = RUDA_DEVICE_TYPE_OPENCL;
  s->base.device.index_id = index;
  s->base.shares_host_cores = (dev->type & CL_DEVICE_TYPE_CPU) != 0;
  s->kernel_events = kernel_events_wanted(dev);
  atomic_init(&s->pending_releases, 0);
  s->stage_min = stage_min_wanted(dev);
  if (s->stage_min > 0) {
    s->copies = ruda__copy_pool_for_staging("RUDA_OPENCL_COPY_THREADS", "RUDA_OPENCL_COPY_STREAMING");
    if (s->copies == NULL) s->stage_min = 0;
  }
  ruda__stream_table_ops_t ops = ruda__ocl_stream_ops;
  ops.ctx = s;
  e = ruda__server_streams_init(&s->base, &ops);
  s->pipeline = (ruda__stream_pipeline_t){&s->base, &ruda__ocl_event_fence,
                                          &ruda__ocl_marker_timer, ruda__ocl_stream_setup, s,
                                          &s->memory_group, 0};
  s->programs = ruda__opencl_program_cache_create(api, s->ctx, dev,
                                                  s->base.utilities.properties_hash,
                                                  s->base.utilities.settings.cache_dir);
  if (e != NULL || s->programs == NULL) {
    ruda_status_free(e);
    opencl_destroy(&s->base);
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory");
  }
  *out = &s->base;
  return NULL;
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */

const ruda__backend_t ruda__backend_opencl = {
    .type_id = RUDA_DEVICE_TYPE_OPENCL,
    .name = "opencl",
    .device_count = opencl_device_count,
    .create_server = opencl_create_server,
#if defined(RUDA_HAVE_OPENCL_HEADERS)
    .compile_portable = ruda__opencl_compile_portable,
#endif
};
