/* ruda/client.h: the thread-safe front door to a device.
 *
 * Each device has one compute server, created on first use and reached only
 * through clients. A device worker thread executes submitted operations in
 * order; non-blocking calls (empty, create, write, launch, memory_cleanup,
 * allocation_mode) return once the operation is queued, blocking calls
 * (read, sync, flush, memory_usage, get_resource, profile) wait for it.
 *
 * Streams: every OS thread has its own stream by default (ruda/types.h,
 * ruda_stream_id_current); a client made with ruda_client_on_stream() is
 * pinned to an explicit stream. Memory is pooled per stream. Operations on
 * one stream run in submission order; a buffer used on another stream is
 * ordered after its producer and stays alive until the consumer is done.
 *
 * Errors of non-blocking operations are queued on their stream and returned
 * by the stream's next flush, sync or read as
 * ServerError::ServerUnhealthy{errors}; the stream is healthy afterwards and
 * other streams are never affected. Every stream id has its own errors and
 * memory, however many streams have existed (the state of idle streams is
 * reclaimed beyond [streaming] max_streams; nothing pending is ever
 * dropped). Which operations drain or ignore queued errors follows the
 * StreamErrorMode table:
 *   read, flush, sync:            fail with the queued errors and drain them
 *   memory_usage:                 fails while errors are queued (no drain)
 *   everything else:              runs regardless, drains nothing
 * Observing never changes which call reports an error: profiling (at any
 * [profiling] level, or with the calls below), tracing and logging leave
 * queued errors where they are.
 *
 * Handle arguments are checked before anything is queued: an empty handle,
 * a copy kept after its memory's last handle was released, a handle of
 * another device, or one whose size, offsets or stream were edited is
 * refused at once with RUDA_ERR_INVALID_HANDLE (ruda/memory.h gives the
 * texts); such a handle never reaches the device. Sizes computed from
 * shapes, strides and element sizes are overflow-checked: a copy whose byte
 * count or strided extent does not fit in 64 bits, or whose extent exceeds
 * the handle's view, is RUDA_ERR_INVALID_ARGUMENT.
 *
 * Thread-safety: every function here may be called from any thread. A
 * client object is ref-counted and may be shared between threads.
 *
 * Calls from inside a CPU kernel: a kernel runs as part of its device's
 * work, so a client call made from a kernel would wait for the launch it
 * belongs to (or re-enter the device in the middle of it). Every function
 * here that takes a client (and ruda_shutdown) returns
 * RUDA_ERR_INVALID_ARGUMENT, naming the kernel, when called from inside a
 * kernel, and does nothing; the launch and the device carry on normally.
 *
 * Shutdown: ruda_shutdown() may race any other call. A blocking call that
 * starts after it began returns RUDA_ERR_UNAVAILABLE; one already in
 * progress completes first (ruda_shutdown waits for it).
 */
#ifndef RUDA_CLIENT_H
#define RUDA_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/kernel.h"
#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* ---- Devices ---- */

/* Number of devices of a backend type. RUDA_ERR_UNAVAILABLE (with the reason:
 * library not found, no device, driver error, "the <name> backend is not
 * built into this ruda library") when the backend cannot run here; *out is
 * then 0. A type no ruda backend has (not a RUDA_DEVICE_TYPE_* value) is
 * RUDA_ERR_UNAVAILABLE too ("no backend for device type N"), with *out 0:
 * the count is a probe of what can run here, answered "none" for every
 * type it cannot run, so loops over types need no special case. Asking for
 * a device of such a type (ruda_client_create, ruda_device_properties) is
 * a caller error instead: RUDA_ERR_INVALID_ARGUMENT. */
ruda_status_t ruda_device_count(uint16_t type_id, uint32_t *out);
/* The device types this library knows: those of the backends built into
 * it, in the order they are listed, then the built-in RUDA_DEVICE_TYPE_*
 * values whose backend it was built without (ruda_device_count gives the
 * reason for those). Writes at most `cap` ids into `out` (NULL when cap is
 * 0) and returns how many there are, so a call with cap 0 sizes the
 * array. Pure; thread-safe. */
size_t ruda_device_types(uint16_t *out, size_t cap);
/* Properties of a device, without creating a client (the server is created
 * if needed). */
ruda_status_t ruda_device_properties(ruda_device_id_t id, ruda_device_properties_t *out);

/* ---- Clients ---- */

typedef struct ruda_client ruda_client_t;

/* A client for `device`, creating its server on first use (process-wide,
 * exactly once even when threads race). The caller owns one reference.
 * Errors: RUDA_ERR_UNAVAILABLE (backend or device absent, including a
 * RUDA_DEVICE_TYPE_* whose backend this library was built without),
 * RUDA_ERR_INVALID_ARGUMENT (index out of range, or a type no ruda backend
 * has: see ruda_device_count). */
ruda_status_t ruda_client_create(ruda_device_id_t device, ruda_client_t **out);
/* A new client on the same device pinned to `stream`. */
ruda_status_t ruda_client_on_stream(ruda_client_t *c, ruda_stream_id_t stream,
                                    ruda_client_t **out);
ruda_client_t *ruda_client_retain(ruda_client_t *c);
/* NULL is a no-op. The device's server lives until process exit or
 * ruda_shutdown(). */
void ruda_client_release(ruda_client_t *c);

ruda_device_id_t ruda_client_device(const ruda_client_t *c);
/* The stream operations of this client run on: its fixed stream, or the
 * calling thread's. */
ruda_stream_id_t ruda_client_stream(const ruda_client_t *c);
/* Borrowed; valid while the client lives. */
const ruda_device_properties_t *ruda_client_properties(const ruda_client_t *c);
uint64_t ruda_client_properties_checksum(const ruda_client_t *c);
/* Backend-specific information ("CUDA 13.0, driver 580.159, sm_90"). */
const char *ruda_client_info(const ruda_client_t *c);
/* The bounds check mode read from the configuration. */
ruda_bounds_check_mode_t ruda_client_check_mode(const ruda_client_t *c);

/* ---- Futures ---- */

/* A pending result of an asynchronous read or sync. */
typedef struct ruda_future ruda_future_t;

/* Waits for completion, returns the operation's status and frees the
 * future. */
ruda_status_t ruda_future_wait(ruda_future_t *f);
/* True once the operation has completed (ruda_future_wait then does not
 * block). */
bool ruda_future_poll(ruda_future_t *f);

/* ---- Allocation ---- */

/* An uninitialized buffer of `size` bytes (contiguous). Non-blocking: the
 * handle is usable at once; allocation failures (BufferTooBig, OutOfMemory
 * naming the request, the limit, the stream's and device's usage and the
 * largest free block) surface on the stream, after which
 * ruda_handle_is_bound() reads false. Memory of exactly `size` bytes
 * released earlier on the same stream may come back without a round trip
 * to the device (its contents are then whatever was left in it; the
 * handle is bound at once). The caller owns the handle. */
ruda_status_t ruda_client_empty(ruda_client_t *c, uint64_t size, ruda_handle_t *out);
/* A tensor with the device's optimized (possibly pitched) layout; honour
 * out->strides. Like ruda_client_empty: non-blocking, and memory of the
 * total its layout needs, released earlier on the same stream, may come
 * back bound at once. */
ruda_status_t ruda_client_empty_tensor(ruda_client_t *c, const ruda_shape_t *shape,
                                       size_t elem_size, ruda_memory_layout_t *out);
/* Several tensors in one allocation, each an offset view of it (the
 * allocation may come from released memory of its total size, as above). */
ruda_status_t ruda_client_empty_tensors(ruda_client_t *c,
                                        const ruda_memory_layout_descriptor_t *descs,
                                        size_t count, ruda_memory_layout_t *out);
/* A buffer holding a copy of `data[0..size)`. `data` is copied before the
 * call returns: below 1 MiB into a host buffer (the call does not wait for
 * the device); from 1 MiB up the device's worker copies it straight from
 * `data` (into device memory or pinned staging) while the call waits for
 * that copy, but not for the rest of the stream. */
ruda_status_t ruda_client_create_buffer(ruda_client_t *c, const void *data,
                                        uint64_t size, ruda_handle_t *out);
/* Same, taking ownership of `bytes` (no copy on the caller's thread; pinned
 * bytes upload directly). *bytes is zeroed, also on error.
 * RUDA_ERR_INVALID_ARGUMENT when bytes->data is NULL with a non-zero size
 * (the bytes are released). */
ruda_status_t ruda_client_create_buffer_from_bytes(ruda_client_t *c, ruda_bytes_t *bytes,
                                                   ruda_handle_t *out);
/* A tensor from contiguous row-major `data` (shape x elem_size bytes) in the
 * device's optimized layout. */
ruda_status_t ruda_client_create_tensor(ruda_client_t *c, const void *data,
                                        const ruda_shape_t *shape, size_t elem_size,
                                        ruda_memory_layout_t *out);
/* Copies `size` bytes of `data` into the handle's view (contiguous).
 * `data` is copied before the call returns, as for ruda_client_create_buffer.
 * RUDA_ERR_INVALID_ARGUMENT when size exceeds the view. */
ruda_status_t ruda_client_write(ruda_client_t *c, const ruda_handle_t *h,
                                const void *data, uint64_t size);
/* Writes contiguous row-major `data` into a tensor view with `strides`
 * (pitched layouts supported; other strides give UnsupportedStrides). */
ruda_status_t ruda_client_write_tensor(ruda_client_t *c, const ruda_handle_t *h,
                                       const ruda_shape_t *shape,
                                       const ruda_strides_t *strides, size_t elem_size,
                                       const void *data);

/* ---- Reading ---- */

/* Copies the handle's view (size_in_used bytes, at most `cap`) into `dst`.
 * Blocking. Returns the stream's queued errors first (and drains them). */
ruda_status_t ruda_client_read(ruda_client_t *c, const ruda_handle_t *h, void *dst,
                               uint64_t cap);
/* Asynchronous form: `dst` must stay valid until the future completes.
 * Blocks until the device has issued the copy, after the work queued
 * before it: on GPU backends the copy then runs while the caller goes on
 * and the future completes with it; on cpu:N the copy is made when it is
 * issued, so the call returns after the queued work and the copy have run
 * (the future has completed). The stream's queued errors come back from
 * ruda_future_wait, drained as ruda_client_read drains them. */
ruda_status_t ruda_client_read_async(ruda_client_t *c, const ruda_handle_t *h,
                                     void *dst, uint64_t cap, ruda_future_t **out);
/* Reads a tensor view with `strides` into contiguous row-major `dst`
 * (shape x elem_size bytes). UnsupportedStrides for layouts the backend
 * cannot copy. */
ruda_status_t ruda_client_read_tensor(ruda_client_t *c, const ruda_handle_t *h,
                                      const ruda_shape_t *shape,
                                      const ruda_strides_t *strides, size_t elem_size,
                                      void *dst);
ruda_status_t ruda_client_read_tensor_async(ruda_client_t *c, const ruda_handle_t *h,
                                            const ruda_shape_t *shape,
                                            const ruda_strides_t *strides,
                                            size_t elem_size, void *dst,
                                            ruda_future_t **out);

/* Host buffers of the given sizes that are fast to upload from (pinned).
 * IoError::UnsupportedIoOperation on backends without them (CPU). */
ruda_status_t ruda_client_staging(ruda_client_t *c, const uint64_t *sizes, size_t count,
                                  ruda_bytes_t *out);

/* ---- Raw resources ---- */

/* The backend's own address and size of the handle's view (a host pointer
 * on cpu:N, a CUdeviceptr on CUDA, a cl_mem on OpenCL), for interoperation;
 * *out holds a binding that keeps the memory alive until
 * ruda_resource_release(). Blocking: the device answers after the work
 * queued before it on the device (on cpu:N that work has run and the memory
 * holds its results; on a GPU it has been issued, not necessarily finished:
 * ruda_client_sync first). Neither returns nor drains queued errors.
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL), RUDA_ERR_INVALID_HANDLE,
 * RUDA_ERR_UNAVAILABLE (shut down), or the device's error when the view
 * cannot be resolved (its allocation failed). Thread-safe. */
ruda_status_t ruda_client_get_resource(ruda_client_t *c, const ruda_handle_t *h,
                                       ruda_resource_t *out);

/* ---- Launching ---- */

/* Launches `kernel` with Checked execution. Non-blocking: invalid arguments
 * (NULL kernel, too many buffers, a read-only DLPack import bound where
 * the kernel may write it: ruda/dlpack.h) return at once with
 * RUDA_ERR_INVALID_ARGUMENT, a bad handle argument with
 * RUDA_ERR_INVALID_HANDLE ("launch of 'k', buffer 2: handle #12.3 was
 * released"), a dynamic count whose view holds under 12 bytes with
 * LaunchError::Unknown. A launch the device's properties rule out returns
 * at once, and queues nothing, with the error the device would report:
 * ServerError::Launch(LaunchError::TooManyResources(
 * ResourceLimitError::RudaDim / Units / SharedMemory{requested, max}))
 * (a static count above max_ruda_count: ServerError::Launch(
 * LaunchError::Unknown)), naming the kernel and the stream
 * (ruda_status_kernel, ruda_status_stream). What only the device can find
 * (compilation, a dynamic count, kernel failures) surfaces on the stream as
 * ServerError::Launch(...), also naming the kernel and the stream. */
ruda_status_t ruda_client_launch(ruda_client_t *c, ruda_kernel_t *kernel,
                                 ruda_count_t count, const ruda_kernel_args_t *args);
/* Same, with the execution mode the configured bounds-check mode maps to
 * (Enforce -> Checked, Validate -> Validate, Auto -> Unchecked). Unchecked
 * kernels may access memory out of bounds. */
ruda_status_t ruda_client_launch_unchecked(ruda_client_t *c, ruda_kernel_t *kernel,
                                           ruda_count_t count,
                                           const ruda_kernel_args_t *args);

/* ---- Synchronisation ---- */

/* Submits outstanding work; returns (and drains) the stream's errors. */
ruda_status_t ruda_client_flush(ruda_client_t *c);
/* Waits until all work submitted on the stream has finished; returns (and
 * drains) the stream's errors. */
ruda_status_t ruda_client_sync(ruda_client_t *c);
/* ruda_client_sync without waiting: *out (owned by the caller, freed by
 * ruda_future_wait) completes when the work submitted before the call has
 * finished, and its wait returns (and drains) the stream's errors. A call
 * that cannot start returns its error at once with *out NULL:
 * RUDA_ERR_INVALID_ARGUMENT (NULL argument, called from inside a kernel),
 * RUDA_ERR_UNAVAILABLE (after ruda_shutdown). */
ruda_status_t ruda_client_sync_async(ruda_client_t *c, ruda_future_t **out);

/* ---- Cancellation ---- */

/* Cancels the work queued on the client's stream (its fixed stream, or the
 * calling thread's), whichever client of the stream queued it:
 *   - launches, writes and graph replays queued before the call and not yet
 *     started are dropped: they never run, and the memory and kernels they
 *     hold are released;
 *   - a launch running on cpu:N stops at its next ruda boundary (rudas
 *     already started finish; no new one starts);
 *   - on cuda:N and opencl:N only what has not yet been handed to the
 *     driver is dropped: work the device has been given runs to its end
 *     (neither API can stop a kernel).
 * What was dropped or stopped surfaces as ServerError::Cancelled on the
 * stream: its next flush, sync or read returns it (a sync waiting behind
 * the dropped work returns at once with it), and the stream is usable
 * again afterwards. Allocations, mode changes, collectives and blocking
 * calls are never dropped; other streams are not touched. Work queued
 * after the call, or by another thread while the call runs, is not
 * cancelled (the latter may be). Non-blocking; thread-safe: typically
 * called from another thread than the one waiting. Errors:
 * RUDA_ERR_INVALID_ARGUMENT (NULL client, called from inside a kernel),
 * RUDA_ERR_UNAVAILABLE (after ruda_shutdown, out of host memory). */
ruda_status_t ruda_client_cancel(ruda_client_t *c);

/* ---- Graphs ----
 *
 * A graph is a sequence of launches and writes recorded once on a stream
 * and replayed many times, each replay as cheap as one operation: on CUDA
 * the recording becomes a CUDA graph (one cuGraphLaunch per replay), on the
 * other backends the device worker runs the recorded list in one go.
 *
 * Between ruda_client_graph_begin() and ruda_client_graph_end() on a
 * stream, every launch and every write (ruda_client_write,
 * ruda_client_write_tensor) made on that stream of that device, through any
 * client, is recorded instead of run; the write's data is copied when it
 * is recorded. Everything else runs at once as usual: allocations
 * (including ruda_client_create_buffer's initial data), reads, syncs,
 * other streams. A replay runs the recorded operations in order, after the
 * work queued before it on the replaying stream, with the buffers'
 * contents of that moment: write new inputs, replay, read the outputs.
 * The graph keeps every buffer it uses alive (it holds bindings) until it
 * is released. Launches with a dynamic count cannot be recorded
 * (RUDA_ERR_INVALID_ARGUMENT at the launch).
 *
 * Errors: a launch or write refused at the call (bad handle, a limit) is
 * refused while recording too, and is not recorded. On CUDA,
 * ruda_client_graph_end() returns the errors of building the graph (a
 * kernel that does not compile, naming it); elsewhere such errors, and on
 * every backend the errors of a replayed kernel, are reported like those
 * of any launch: queued on the replaying stream for its next flush, sync
 * or read.
 *
 * Thread-safety: the functions may be called from any thread; a graph may
 * be replayed from several threads and streams of its device at once. */

typedef struct ruda_graph ruda_graph_t;

/* Starts recording the client's stream. Errors: RUDA_ERR_INVALID_ARGUMENT
 * (NULL client, the stream already records, called from inside a kernel),
 * RUDA_ERR_IO_OUT_OF_MEMORY, RUDA_ERR_UNAVAILABLE (after ruda_shutdown). */
ruda_status_t ruda_client_graph_begin(ruda_client_t *c);
/* Ends the recording of the client's stream and returns the graph in *out
 * (the caller owns one reference). Blocking: on CUDA the graph is built
 * and instantiated here. On error *out is NULL and the recording is
 * discarded. Errors: RUDA_ERR_INVALID_ARGUMENT (NULL argument, the stream
 * does not record), the build's errors (CUDA: RUDA_ERR_SERVER_LAUNCH with
 * the kernel's CompilationError or limit; RUDA_ERR_LAUNCH_UNKNOWN naming
 * the failing driver call), RUDA_ERR_UNAVAILABLE. */
ruda_status_t ruda_client_graph_end(ruda_client_t *c, ruda_graph_t **out);
/* Queues one replay of `g` on the client's stream. Non-blocking; errors of
 * the replayed work are queued on that stream. Errors at the call:
 * RUDA_ERR_INVALID_ARGUMENT (NULL argument, a graph of another device,
 * the client's stream records a graph), RUDA_ERR_IO_OUT_OF_MEMORY,
 * RUDA_ERR_UNAVAILABLE. */
ruda_status_t ruda_client_graph_replay(ruda_client_t *c, ruda_graph_t *g);
/* Reference counting; the last release frees the graph (on CUDA through
 * the device's worker) and its bindings. NULL is a no-op. */
ruda_graph_t *ruda_graph_retain(ruda_graph_t *g);
void ruda_graph_release(ruda_graph_t *g);
/* What was recorded. */
size_t ruda_graph_num_launches(const ruda_graph_t *g);
size_t ruda_graph_num_writes(const ruda_graph_t *g);

/* ---- Memory management ---- */

/* Usage of this client's stream's pools (zero for a stream that holds no
 * memory). Fails with ServerUnhealthy while errors are queued on the stream
 * (they stay queued). Blocking. */
ruda_status_t ruda_client_memory_usage(ruda_client_t *c, ruda_memory_usage_t *out);
/* Usage of the whole device: the sum over every stream's pools (device
 * memory; a backend's own pinned staging is not counted). Queued errors do
 * not make it fail and stay queued. Blocking; thread-safe. Errors:
 * RUDA_ERR_INVALID_ARGUMENT (NULL argument), RUDA_ERR_UNAVAILABLE (after
 * ruda_shutdown). */
ruda_status_t ruda_client_memory_usage_device(ruda_client_t *c, ruda_memory_usage_t *out);
/* Returns free pages of the stream's pools to the system/driver.
 * Non-blocking. */
ruda_status_t ruda_client_memory_cleanup(ruda_client_t *c);
/* Switches the stream's pools between Auto and Persistent allocation (the
 * configuration may disable or enforce persistent mode). Non-blocking. */
ruda_status_t ruda_client_allocation_mode(ruda_client_t *c,
                                          ruda_memory_allocation_mode_t mode);
/* Runs fn(ctx) with the stream in Persistent mode, then back to Auto. Returns
 * fn's status. */
ruda_status_t ruda_client_persistent_scope(ruda_client_t *c,
                                           ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                           void *ctx);

/* ---- Profiling and exclusive access ---- */

/* Runs fn(c, ctx) and measures the device time of the work it submits on the
 * stream (device timestamps where the backend has them). Profiles may nest.
 * fn's own error is returned as is; an error queued on the stream while the
 * profile was open as a ProfileError wrapping a copy of it. That error also
 * stays queued on the stream: its next read, flush or sync still reports
 * it. */
ruda_status_t ruda_client_profile(ruda_client_t *c, const char *name,
                                  ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                  void *ctx, ruda_profile_duration_t *out);
/* Opens a profile on the client's stream and returns its token, unique on
 * the device. Profiles may nest and overlap (end them in any order); the
 * work measured is what is submitted on the stream between start and end.
 * Blocking; thread-safe. Errors: RUDA_ERR_INVALID_ARGUMENT (NULL argument),
 * ProfileError::Unknown (the backend could not start it),
 * RUDA_ERR_UNAVAILABLE (after ruda_shutdown). A token never ended keeps
 * its stream's state alive. */
ruda_status_t ruda_client_profile_start(ruda_client_t *c, ruda_profiling_token_t *out);
/* Ends the profile `token` opened on the client's stream: its duration in
 * *out. Errors: ProfileError::NotRegistered for a token that is not open on
 * this stream (never opened, already ended, or opened on another stream);
 * a ProfileError wrapping a copy of an error queued on the stream while the
 * profile was open (the error stays queued for the stream's next read,
 * flush or sync); RUDA_ERR_INVALID_ARGUMENT; RUDA_ERR_UNAVAILABLE.
 * Blocking; thread-safe. */
ruda_status_t ruda_client_profile_end(ruda_client_t *c, ruda_profiling_token_t token,
                                      ruda_profile_duration_t *out);
/* Runs fn(c, ctx) on the thread that runs the device's operations (its
 * worker; on the CPU backend possibly a thread waiting for the device) with
 * no other operation of any thread interleaved; client calls made inside
 * fn run inline.
 * ruda_shutdown() called inside fn returns RUDA_ERR_INVALID_ARGUMENT and
 * does nothing (it would wait for fn). Errors: fn's status;
 * RUDA_ERR_UNAVAILABLE after ruda_shutdown(); RUDA_ERR_INVALID_ARGUMENT
 * from inside a kernel. */
ruda_status_t ruda_client_exclusive(ruda_client_t *c,
                                    ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                    void *ctx);

/* ---- Device loss ----
 *
 * A fault that ends a device's context (on cuda:N a kernel's illegal
 * address and the rest of CUDA's sticky errors, when the driver refuses to
 * reset the context, as 580.x drivers do; on opencl:N a command failing
 * with a code that ends the context, as a kernel fault on NVIDIA's OpenCL
 * does) leaves the device lost: every
 * operation of every stream of that device fails with
 * ServerError::DeviceLost, at once and never with a hang (a stream's
 * error stays queued until its next flush, sync or read, and comes back
 * at each later call), while other devices keep working. docs/errors.md
 * ("Device loss") gives the behaviour of each backend. */

/* Brings a lost device back where its API allows it. NULL when the device
 * is not lost (nothing is done) or was recovered: on opencl:N a fresh
 * context, every stream starting afresh (errors still queued on them are
 * dropped; buffers made before report an error and can still be
 * released); RUDA_ERR_UNAVAILABLE,
 * naming the remedy, when it cannot be recovered in this process: CUDA
 * keeps a context that had a sticky fault dead until the process exits,
 * so the process must be restarted (examples/supervisor.c shows a
 * supervisor that restarts its worker process). Errors also:
 * RUDA_ERR_INVALID_ARGUMENT (no such device, called from inside a
 * kernel), RUDA_ERR_UNAVAILABLE (after ruda_shutdown). Blocking (in order
 * after the device's queued work); thread-safe. */
ruda_status_t ruda_device_recover(ruda_device_id_t id);

/* ---- Errors nobody read ----
 *
 * An error of a non-blocking call waits on its stream for the stream's next
 * flush, sync or read. When no such call can come any more it is reported
 * instead of being lost:
 *   - when the last client of a device is released (ruda_client_release
 *     of the last reference to the last client of that device, whatever
 *     its stream): every stream of the device is synced, in order after
 *     the work queued before, and the errors found are reported;
 *   - at ruda_shutdown() (and so at process exit): the same, for every
 *     device, before its server is destroyed. At process exit a GPU's
 *     work still running is not waited for: only the errors the device
 *     has already reported are (call ruda_shutdown() before exit, or sync,
 *     to have the others).
 * A client made later on a stream whose errors were reported finds the
 * stream healthy. Each error is reported once, with its device and stream;
 * the error of a launch names its kernel (ruda_status_kernel). A lost
 * device (ServerError::DeviceLost) is not synced for this: its loss is
 * reported once, by the first stream that still holds it unread, however
 * many streams do, and not again at a later report.
 *
 * By default each is written to stderr (through the [streaming] log
 * channel's sinks when that channel is enabled), as
 *   [ruda streaming] error never read on cpu:0 stream 3 (... released):
 *   A launch of kernel 'k' on stream 3 failed ...
 * ruda_set_lost_error_handler() lets the application take them instead. */

/* Called once for each error nobody read. `error` is borrowed: valid
 * during the call only (ruda_status_clone() keeps a copy). Called on the
 * thread that runs the device's work (its worker, or a thread waiting for
 * it) or the thread in ruda_shutdown(), possibly for several devices at
 * once: it must be thread-safe, must not block for long, and must not call
 * ruda client functions (they would wait for the call that runs it). */
typedef void (*ruda_lost_error_fn)(void *user, ruda_device_id_t device,
                                   ruda_stream_id_t stream, ruda_status_t error);

/* Sets the handler of errors nobody read (NULL: back to the default, the
 * log's stderr sink) and the `user` pointer passed to it; returns nothing
 * and cannot fail. The previous handler may still be running on another
 * thread when this returns. Thread-safe. */
void ruda_set_lost_error_handler(ruda_lost_error_fn fn, void *user);

/* ---- Process lifetime ---- */

/* Waits for every device's queued work and for the blocking calls in
 * progress, destroys every server and joins every worker. Blocking calls
 * that start once it has begun return RUDA_ERR_UNAVAILABLE; non-blocking
 * ones queued after the workers stopped are dropped (their memory and
 * bindings released); new clients cannot be created; handles, kernels and
 * clients can still be released. Calling it twice, or from several threads
 * at once, is harmless (each call returns once everything is stopped); an
 * atexit hook calls it. Thread-safe: may race any other ruda call.
 * Errors: RUDA_ERR_INVALID_ARGUMENT when called where it would wait for
 * itself: inside ruda_client_exclusive / ruda_client_profile's function (on
 * a device worker) or inside a kernel. Nothing is shut down then and the
 * runtime stays usable. */
ruda_status_t ruda_shutdown(void);

RUDA_END_DECLS

#endif /* RUDA_CLIENT_H */
