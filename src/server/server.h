/* The compute server interface (memory, copies, launches, sync, profiling
 * and, optionally, collectives and send/recv) as a vtable, plus
 * ServerUtilities (the state shared by every client of a device).
 *
 * A server is NOT thread-safe. Every method is called only from its
 * device's worker thread (src/client/device.c), in submission order.
 * Backends assume valid input: the client validates arguments once.
 *
 * Per-stream state (errors, profiles, cursor, the backend's memory managers)
 * lives in the server's stream table (stream_table.h, ruda__server_t.streams),
 * keyed by the real stream id. Errors of non-blocking methods (void return)
 * are queued on the stream's state with ruda__stream_push_error; blocking
 * methods return their status. Which methods drain queued errors follows the
 * StreamErrorMode table; ruda__stream_check() implements it.
 *
 * Settings come from the server layer (ruda__server_utilities_t.settings,
 * built from the configuration once): a backend reads them, never the
 * configuration.
 *
 * Ownership: arguments are borrowed unless a comment says "takes". Bindings
 * inside descriptors are borrowed: a backend that keeps memory alive past the
 * call (an asynchronous copy, a kernel in flight) clones the bindings it
 * needs and releases them when the device is done.
 */
#ifndef RUDA_SERVER_H
#define RUDA_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory/memory_manager.h"
#include "ruda/comm.h" /* ruda_reduce_op_t */
#include "ruda/kernel.h"
#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"
#include "server/device_settings.h"
#include "server/stream_table.h"

typedef struct ruda__server ruda__server_t;
typedef struct ruda__future ruda__future_t;
struct ruda__comm_peers;
struct ruda__coll;
struct ruda__graph;

/* A copy descriptor: the bound memory, shape, strides and element size of
 * one side of a copy. */
typedef struct ruda__copy_desc {
  ruda_binding_t binding;
  ruda_shape_t shape;
  ruda_strides_t strides;
  size_t elem_size;
} ruda__copy_desc_t;

/* The 2-D shape of a copy on a device: `height` rows of `width` bytes,
 * packed on the host and `pitch` bytes apart on the device. False for
 * layouts other than contiguous or row-pitched (ruda__copy_strides_error). */
static inline bool ruda__copy_geometry(const ruda__copy_desc_t *d, uint64_t *width,
                                       uint64_t *height, uint64_t *pitch) {
  uint32_t rank = d->shape.rank;
  uint64_t n = rank == 1 ? d->shape.dims[0] : ruda_shape_num_elems(&d->shape);
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
/* IoError::UnsupportedStrides for a `what` ("read", "write") whose layout
 * ruda__copy_geometry refuses. */
ruda_status_t ruda__copy_strides_error(const char *what);

/* A launch's arguments as the server sees them: bindings, resolved count,
 * info words (owned by the op; valid during the call). */
typedef struct ruda__launch_args {
  const ruda_binding_t *buffers;
  size_t num_buffers;
  const ruda_binding_t *tensor_map_buffers;
  const ruda_tensor_map_meta_t *tensor_maps;
  size_t num_tensor_maps;
  ruda_info_t info;
} ruda__launch_args_t;

typedef struct ruda__count {
  bool dynamic;
  ruda_count3_t fixed;
  ruda_binding_t buffer; /* dynamic only */
} ruda__count_t;

/* ---- Futures: results that complete after the worker returns ---- */

typedef struct ruda__future_vtable {
  /* Blocks until done; returns the result (owned by the caller). */
  ruda_status_t (*wait)(ruda__future_t *f);
  bool (*poll)(ruda__future_t *f);
  void (*destroy)(ruda__future_t *f);
} ruda__future_vtable_t;

struct ruda__future {
  const ruda__future_vtable_t *vt;
};

/* A future that is already complete with `status` (taken). NULL when memory
 * is exhausted (the caller then returns `status` directly). A server whose
 * operation completed without error may also return a NULL future: the
 * client treats it as done. */
ruda__future_t *ruda__future_ready(ruda_status_t status);

/* ---- The vtable ---- */

/* The types of the memory and profile methods (documented at their
 * members below), so that a backend that defines them in files of their
 * own declares each by name, once:
 *   ruda__server_staging_fn ruda__ocl_staging; */
typedef void ruda__server_initialize_memory_fn(ruda__server_t *s, ruda_memory_t *memory,
                                               uint64_t size, ruda_stream_id_t stream);
typedef ruda_status_t ruda__server_staging_fn(ruda__server_t *s, const uint64_t *sizes,
                                              size_t count, ruda_stream_id_t stream,
                                              ruda_bytes_t *out);
typedef ruda_status_t ruda__server_get_resource_fn(ruda__server_t *s, const ruda_binding_t *b,
                                                   ruda_stream_id_t stream, ruda_resource_t *out);
typedef ruda_status_t ruda__server_memory_usage_fn(ruda__server_t *s, ruda_stream_id_t stream,
                                                   ruda_memory_usage_t *out);
typedef void ruda__server_memory_cleanup_fn(ruda__server_t *s, ruda_stream_id_t stream);
typedef void ruda__server_allocation_mode_fn(ruda__server_t *s,
                                             ruda_memory_allocation_mode_t mode,
                                             ruda_stream_id_t stream);
typedef ruda_status_t ruda__server_start_profile_fn(ruda__server_t *s, ruda_stream_id_t stream,
                                                    ruda_profiling_token_t *out);
typedef ruda_status_t ruda__server_end_profile_fn(ruda__server_t *s, ruda_stream_id_t stream,
                                                  ruda_profiling_token_t token,
                                                  ruda_profile_duration_t *out);

typedef struct ruda__server_vtable {
  const char *name; /* "cpu", "cuda" */

  /* Frees the server and its driver objects. During process exit
   * (ruda__server_process_exiting()), a backend whose driver may already
   * have torn itself down in its own exit handlers may skip the driver
   * calls: the process is ending and the OS reclaims the device. */
  void (*destroy)(ruda__server_t *s);

  /* Reserves `size` bytes on `stream` and binds `memory` to them. Errors
   * are queued on the stream. (ignore, no flush) */
  ruda__server_initialize_memory_fn *initialize_memory;

  /* Optional (NULL: IoError::UnsupportedIoOperation). Pinned host buffers. */
  ruda__server_staging_fn *staging;

  /* Copies each descriptor's data into dsts[i] (contiguous row-major,
   * shape x elem_size bytes). The returned future completes when the data
   * is there; queued stream errors are returned first (drained). */
  ruda_status_t (*read)(ruda__server_t *s, const ruda__copy_desc_t *descs,
                        void *const *dsts, size_t count, ruda_stream_id_t stream,
                        ruda__future_t **out);

  /* Copies srcs[i] into each descriptor's view. Takes every srcs[i] (the
   * server releases it once the copy is done). Errors queued. */
  void (*write)(ruda__server_t *s, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                size_t count, ruda_stream_id_t stream);

  /* A future that completes when all work submitted on the stream has
   * finished; returns (drains) queued errors. */
  ruda_status_t (*sync)(ruda__server_t *s, ruda_stream_id_t stream,
                        ruda__future_t **out);

  /* The backend address of a binding's view. (ignore, no flush) */
  ruda__server_get_resource_fn *get_resource;

  /* Runs/queues the kernel. ruda__launch_validate checked the launch
   * (arguments, the kernel's dim and shared memory, a static count,
   * features) before it was queued; the backend checks a dynamic count's
   * values (ruda__validate_count) and what only it knows. Errors queued
   * (ruda__stream_push_error). */
  void (*launch)(ruda__server_t *s, ruda_kernel_t *kernel, const ruda__count_t *count,
                 const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                 ruda_stream_id_t stream);

  /* Submits outstanding work; returns (drains) queued errors. */
  ruda_status_t (*flush)(ruda__server_t *s, ruda_stream_id_t stream);

  /* Fails while errors are queued (no drain). */
  ruda__server_memory_usage_fn *memory_usage;
  /* Optional (NULL: the sum of the stream table's usage hook). Usage of the
   * whole device; never fails for queued errors. */
  ruda_status_t (*memory_usage_device)(ruda__server_t *s, ruda_memory_usage_t *out);
  ruda__server_memory_cleanup_fn *memory_cleanup;
  ruda__server_allocation_mode_fn *allocation_mode;

  /* Opens a profile on the stream (ignore, no flush). */
  ruda__server_start_profile_fn *start_profile;
  /* Closes it: its duration, or a ProfileError: NotRegistered for a token
   * not open on this stream, the stream's failure when an error was queued
   * on it while the profile was open. Observing never drains: the stream's
   * queued errors stay for its next read, flush or sync. */
  ruda__server_end_profile_fn *end_profile;

  /* True when every operation's work has finished by the time the worker
   * returns from it (the CPU backend). The client may then answer sync and
   * flush from the worker's progress counter, without a round trip, when
   * ruda__server_t.queued_errors is 0. */
  bool completes_in_order;
  /* True when operations may run on any thread, one at a time, once
   * thread_enter (when given) has prepared it: the server keeps no state
   * bound to its worker thread (every backend). A caller waiting for an
   * operation then runs the queued operations itself while no other thread
   * runs them (src/client/device.c, docs/cpu.md). */
  bool any_thread;
  /* True when a launch returns once its work is queued on the device, not
   * when the work is done (CUDA, OpenCL). The client may then make a
   * launch on the caller's thread while the device is idle, when that
   * thread would run it itself at its next wait anyway
   * (src/client/client_launch.c, "Launches made by their caller"). */
  bool launch_returns_early;

  /* Optional. Called around work that runs on a caller's thread instead of
   * the worker: a short blocking call (read, sync, flush, usage,
   * resources, staging, profile marks) made while the device was idle, or
   * (any_thread) the queued operations a waiting caller runs itself. The
   * worker is then held off, so the server is still used by one thread at
   * a time. thread_enter prepares the thread (CUDA: makes the context
   * current), sets *token to what thread_leave restores, and may refuse
   * (false: the work then goes through the worker, e.g. while a fault
   * waits to be settled there). NULL: nothing to prepare, never
   * refused. */
  bool (*thread_enter)(ruda__server_t *s, void **token);
  void (*thread_leave)(ruda__server_t *s, void *token);
  /* Optional. True while the next operation must run on the worker
   * (CUDA: a fault to settle, collectives set up). A caller running the
   * queue asks before each operation after its first and leaves the rest
   * to the worker when it is true. On the thread running the queue. NULL:
   * never. */
  bool (*wants_worker)(ruda__server_t *s);

  /* Optional (NULL: the device is never lost). Device loss
   * (ruda_device_recover): NULL when the device is not lost (nothing
   * done) or was recovered (a fresh context: every buffer made before is
   * gone); RUDA_ERR_UNAVAILABLE naming the remedy when it cannot be
   * recovered in this process. `stream`: the caller's (a fault found now
   * is reported there). Worker thread. */
  ruda_status_t (*recover)(ruda__server_t *s, ruda_stream_id_t stream);

  /* ---- Graphs (all optional; NULL: the recorded list is replayed node by
   * node, server/graph.h) ----
   * graph_build: turns a recording into the backend's own graph, *out the
   * backend's object; errors (a kernel that does not compile, a limit) are
   * returned. The recording outlives the object.
   * graph_launch: runs it once on `stream` after the work queued there
   * before, ordered after the producers of the graph's bindings like any
   * launch; errors queued on the stream.
   * graph_destroy: frees the object (the backend frees those left at
   * destroy). */
  ruda_status_t (*graph_build)(ruda__server_t *s, const struct ruda__graph *g,
                               ruda_stream_id_t stream, void **out);
  void (*graph_launch)(ruda__server_t *s, const struct ruda__graph *g, void *native,
                       ruda_stream_id_t stream);
  void (*graph_destroy)(ruda__server_t *s, void *native);

  /* ---- ServerCommunication (all optional; NULL: unsupported) ----
   * See "Communication" below and docs/collectives.md.
   * comm_enabled: the client offers collectives and send/recv
   * (include/ruda/comm.h) only when it is true. The client validates every
   * argument (sizes, element types against comm_reduce_types, ranks) and
   * queues every operation of an in-process communicator on all of its
   * participants in one global order, so a backend may block its worker
   * until the peers reach the same operation.
   * comm_reduce_types: bit (1 << t) set for every element type t that the
   * backend's reductions take (Sum, Mean, Min, Max).
   * comm_strided_send: sends may describe any strides; otherwise the client
   * only passes contiguous descriptors.
   * comm_init: creates this device's member of the communicator `peers`.
   * In one process (peers->ids set) it is called on every participant
   * concurrently and may block until all have joined; across processes
   * `token` is what comm_token made on rank 0 (NULL/0 in one process).
   * Blocking; errors are returned. Idempotent for a known id.
   * comm_token: the bootstrap token of a new communicator across
   * processes (an ncclUniqueId), made on rank 0 and broadcast by the caller.
   * collective: this participant's part of `c`; must take part even when
   * its own buffers fail (the peers wait for it). Errors are queued on
   * `stream`, like a launch.
   * sync_collective: orders `stream` after the collectives queued on the
   * device; returns its error (blocking for the caller).
   * comm_destroy: finalizes and frees the communicator `id` (a collective
   * call across its ranks: every member calls it). Blocking.
   * comm_shutdown: finalizes and frees every communicator of the device;
   * ruda_shutdown() calls it on every device concurrently, before any
   * server is destroyed. Bounded by the communication timeout.
   * host_call: resolves src and dst (either may be NULL) to host addresses
   * in stream order, after the work queued before, calls fn with them and
   * queues fn's error on `stream`; the trace shows it as a "collective"
   * slice named `name` (static storage: "all-reduce"). Backends whose
   * memory is host memory only (the CPU backend); the MPI transport uses it
   * for CPU buffers. */
  bool comm_enabled;
  uint64_t comm_reduce_types;
  bool comm_strided_send;
  ruda_status_t (*sync_collective)(ruda__server_t *s, ruda_stream_id_t stream);
  ruda_status_t (*comm_init)(ruda__server_t *s, const struct ruda__comm_peers *peers,
                             const void *token, size_t token_len);
  ruda_status_t (*comm_token)(ruda__server_t *s, void *out, size_t cap, size_t *out_len);
  void (*collective)(ruda__server_t *s, const struct ruda__coll *c, ruda_stream_id_t stream);
  ruda_status_t (*comm_destroy)(ruda__server_t *s, uint64_t id);
  void (*comm_shutdown)(ruda__server_t *s);
  void (*host_call)(ruda__server_t *s, const ruda_binding_t *src, const ruda_binding_t *dst,
                    const char *name,
                    ruda_status_t (*fn)(void *ctx, void *src, uint64_t src_bytes, void *dst,
                                        uint64_t dst_bytes),
                    void *ctx, ruda_stream_id_t stream);

  /* DLPack exchange (ruda/dlpack.h). Optional: NULL import_memory gives
   * Unavailable; NULL fence_external and native_stream mean the backend's
   * work is done when its worker returns (nothing to order, no stream).
   * import_memory binds `memory` on `stream` to memory ruda does not own
   * (ruda__memory_import; ext->release is called once the last reference
   * is gone, never when this fails). fence_external makes the foreign
   * stream `other` (a CUstream as an integer) wait for the work submitted
   * on `stream` so far, without blocking the host (an event). native_stream
   * gives the backend's stream of `stream` as an integer. (no flush) */
  ruda_status_t (*import_memory)(ruda__server_t *s, ruda_memory_t *memory,
                                 const ruda__external_memory_t *ext, ruda_stream_id_t stream);
  ruda_status_t (*fence_external)(ruda__server_t *s, ruda_stream_id_t stream, uint64_t other);
  ruda_status_t (*native_stream)(ruda__server_t *s, ruda_stream_id_t stream, uint64_t *out);
} ruda__server_vtable_t;

/* ---- ServerUtilities: shared with every client of the device ---- */

#define RUDA_MAX_COMMS 64

typedef struct ruda__server_utilities {
  ruda_device_properties_t properties;
  uint64_t properties_hash;
  char info[256];
  ruda__layout_policy_t layout_policy;
  ruda_bounds_check_mode_t check_mode; /* settings.check_mode */
  ruda__device_settings_t settings;
  /* Communication ids already initialized (hash of the sorted device ids). */
  pthread_mutex_t comms_lock;
  uint64_t comms[RUDA_MAX_COMMS];
  size_t num_comms;
} ruda__server_utilities_t;

/* Fills `u`; its settings (and check_mode) come from
 * ruda__device_settings(). */
void ruda__server_utilities_init(ruda__server_utilities_t *u,
                                 const ruda_device_properties_t *props,
                                 const char *info, ruda__layout_policy_t policy);
void ruda__server_utilities_deinit(ruda__server_utilities_t *u);

/* Cancellation (ruda_client_cancel): who may stop work the server runs.
 * The device layer owns it: `gen` grows with each cancel request, and
 * covers(ctx, stream, seq) says (thread-safe, taking a lock) whether the
 * operation `seq` of `stream` is cancelled. */
typedef struct ruda__cancel_source {
  atomic_uint gen;
  bool (*covers)(void *ctx, uint64_t stream, uint64_t seq);
  void *ctx;
} ruda__cancel_source_t;

/* What a long operation polls at its boundaries (a CPU launch between
 * rudas): taken from the server as the operation starts
 * (ruda__server_cancel_point), then asked with ruda__cancel_point_hit()
 * from any of its threads, each with its own copy. */
typedef struct ruda__cancel_point {
  const ruda__cancel_source_t *source; /* NULL: cannot be cancelled */
  uint64_t stream, seq;
  unsigned gen; /* the source's gen last looked at */
} ruda__cancel_point_t;

/* True once the operation has been cancelled. One relaxed load while no
 * new cancel request came; thread-safe on distinct points. */
static inline bool ruda__cancel_point_hit(ruda__cancel_point_t *p) {
  if (!p->source) return false;
  unsigned g = atomic_load_explicit(&p->source->gen, memory_order_acquire);
  if (__builtin_expect(g == p->gen, 1)) return false;
  p->gen = g;
  return p->source->covers(p->source->ctx, p->stream, p->seq);
}

/* A device's loss state: 0 healthy, 1 lost and not yet told to every
 * stream, 2 told, 3 being marked; `reason` is written before 1.
 * `reported`: the loss has been reported as an error nobody read (once per
 * loss, however many streams hold it; cleared by the next mark). */
typedef struct ruda__device_loss {
  atomic_int state;
  atomic_bool reported;
  char reason[320];
} ruda__device_loss_t;

/* The base of every backend server (offset 0). */
struct ruda__server {
  const ruda__server_vtable_t *vt;
  ruda__server_utilities_t utilities;
  ruda_device_id_t device;
  /* Errors queued on all streams (kept by the stream table). Written by the
   * worker, read anywhere. */
  atomic_size_t queued_errors;
  /* Set by create_server when the device computes on the host's own cores
   * (an OpenCL CPU device such as PoCL): the device's worker then sleeps as
   * soon as it is idle instead of spinning, which would take a core from
   * the device itself. */
  bool shares_host_cores;
  /* The state of every stream (stream_table.h); ruda__server_streams_init. */
  ruda__stream_table_t streams;
  /* The device's cache of released slices, set by the device layer right
   * after create_server (NULL: none). A backend hands it to its memory
   * group (ruda__memory_group_init); the client takes from it on its own
   * thread (ruda_client_empty). Outlives the server. */
  ruda__memory_reuse_t *memory_reuse;
  /* Cancellation, set by the device layer (NULL/0: none). `cancel` is the
   * device's source; before each operation it runs on the server it
   * writes `op_seq` (the operation's number, 0 when it cannot be
   * cancelled), `op_stream` and `op_gen` (the source's gen when the
   * device checked the operation was not cancelled). Read on the thread
   * running the operation. */
  const ruda__cancel_source_t *cancel;
  uint64_t op_seq, op_stream;
  unsigned op_gen;
  /* Device loss (device_loss.c), for backends that let the server layer
   * enforce it (OpenCL; CUDA keeps its own): the device's loss state, set
   * by the device layer right after create_server. It outlives the server,
   * so a backend's futures may mark it from any thread. */
  ruda__device_loss_t *loss;
};

/* Marks the device lost (a fault ended its context): from then on every
 * operation the device layer runs first settles it
 * (ruda__server_settle_lost) and no launch, write or replay reaches the
 * backend, until the backend's recover method clears it. The first call's
 * reason (printf-formatted) is kept. Any thread; NULL `l` is a no-op. */
void ruda__device_loss_mark(ruda__device_loss_t *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Whether the device is lost (one relaxed load). */
static inline bool ruda__device_loss_any(const ruda__device_loss_t *l) {
  return l && atomic_load_explicit(&l->state, memory_order_relaxed) != 0;
}
/* While lost: queues ServerError::DeviceLost on every stream the first
 * time after the loss, and on `stream` afterwards when none is queued
 * there. On the thread running the server. */
void ruda__server_settle_lost(ruda__server_t *s, ruda_stream_id_t stream);
/* After a successful recovery: the device is healthy again. */
static inline void ruda__device_loss_clear(ruda__device_loss_t *l) {
  if (l) atomic_store_explicit(&l->state, 0, memory_order_release);
}

/* The cancel point of the operation the server runs now. */
static inline ruda__cancel_point_t ruda__server_cancel_point(const ruda__server_t *s) {
  ruda__cancel_point_t p = {s->op_seq ? s->cancel : NULL, s->op_stream, s->op_seq, s->op_gen};
  return p;
}

/* Initialises s->streams for the backend's per-stream extension `ops`,
 * keeping up to settings.max_streams idle states (call after
 * ruda__server_utilities_init). Errors: RUDA_ERR_UNAVAILABLE (host memory). */
ruda_status_t ruda__server_streams_init(ruda__server_t *s, const ruda__stream_table_ops_t *ops);

/* The memory usage of every stream of the device together (s->vt's
 * memory_usage_device, else the sum over the stream table). Queued errors
 * do not make it fail. Worker thread. */
ruda_status_t ruda__server_memory_usage_device(ruda__server_t *s, ruda_memory_usage_t *out);

/* While the trace is on, one sample of the device's "memory in use" and
 * "memory reserved" counter tracks (ruda__server_memory_usage_device);
 * backends call it after an allocation and a cleanup. Worker thread. */
void ruda__server_trace_memory(ruda__server_t *s);

/* ---- Backends and their registry ---- */

/* What ruda_kernel_compile_portable_with_options asks a backend to
 * compile: `target` is CUDA's architecture (90: sm_90) or the OpenCL
 * device's index; `options` are checked (ruda__portable_check_options), all
 * of them: a GPU compiler takes its own (ruda__portable_option_for_gpu). */
typedef struct ruda__portable_compile {
  uint32_t target;
  const char *name, *text;
  size_t len;
  const char *origin;
  const char *const *options;
  size_t num_options;
} ruda__portable_compile_t;

typedef struct ruda__backend {
  uint16_t type_id;  /* RUDA_DEVICE_TYPE_* (a new backend picks an unused id) */
  const char *name;  /* "cpu", "cuda", "opencl": device names are "<name>:N" */
  /* Number of devices; RUDA_ERR_UNAVAILABLE with the reason (library not
   * found, no platform, driver error) when none can be used. Thread-safe. */
  ruda_status_t (*device_count)(uint32_t *out);
  /* Creates the server of device `index`. Called once per device, on the
   * device's worker thread. */
  ruda_status_t (*create_server)(uint16_t index, ruda__server_t **out);
  /* Optional (NULL: none): compiles a portable kernel's text ahead of
   * time (ruda_kernel_compile_portable_with_options, which checked the
   * arguments and the options). *out is ruda__malloc'ed. Thread-safe. */
  ruda_status_t (*compile_portable)(const ruda__portable_compile_t *job, void **out,
                                    size_t *out_size);
} ruda__backend_t;

/* Most backends one library holds (the device registry's bound). */
#define RUDA__MAX_BACKENDS 8

/* The backends built into this library, cpu first, NULL-terminated. The
 * list is generated at build time from the folders under src/backends/
 * (each defines `ruda__backend_<folder>`), so a new backend is one new
 * folder. Immutable; thread-safe. */
extern const ruda__backend_t *const ruda__backend_list[];

/* The backend of a device type, or NULL when none is built in. */
const ruda__backend_t *ruda__backend_for(uint16_t type_id);
/* The backend named `name[0..len)`, or NULL. */
const ruda__backend_t *ruda__backend_named(const char *name, size_t len);
/* Position of `b` in ruda__backend_list (< RUDA__MAX_BACKENDS). */
size_t ruda__backend_index(const ruda__backend_t *b);

/* Monotonic host clock in nanoseconds. */
uint64_t ruda__now_ns(void);

/* Whether the process is exiting: set (once, never cleared) by the
 * client's exit handler before it shuts the devices down, read by
 * servers' destroy. */
void ruda__server_mark_process_exit(void);
bool ruda__server_process_exiting(void);

/* ---- Communication: collectives and send/recv ---- */

/* The largest number of devices in one in-process communicator. */
#define RUDA__COMM_MAX_DEVICES 64

/* The participants of a communicator, as one of them sees it. */
typedef struct ruda__comm_peers {
  uint64_t id;        /* the communicator: ruda__comm_id() of the device set
                         in one process, the group's id across processes */
  uint32_t rank;      /* this participant's rank */
  uint32_t size;      /* number of ranks */
  /* In one process: the sorted ids of the participants (rank r is ids[r]).
   * NULL for a communicator across processes (made from a token). */
  const ruda_device_id_t *ids;
} ruda__comm_peers_t;

typedef enum ruda__coll_kind {
  RUDA__COLL_ALL_REDUCE = 0,
  RUDA__COLL_BROADCAST = 1,
  RUDA__COLL_ALL_GATHER = 2,
  RUDA__COLL_REDUCE_SCATTER = 3,
  RUDA__COLL_SEND = 4,
  RUDA__COLL_RECV = 5,
} ruda__coll_kind_t;

/* "all-reduce", "broadcast", "all-gather", "reduce-scatter", "send",
 * "recv". Thread-safe. */
const char *ruda__coll_kind_name(ruda__coll_kind_t kind);

/* One participant's part of a collective or of a send/recv. Bindings are
 * borrowed for the call. */
typedef struct ruda__coll {
  ruda__coll_kind_t kind;
  ruda__comm_peers_t peers;
  /* Input (all-reduce, all-gather, reduce-scatter, send): the data, as a
   * copy descriptor. Contiguous ([count] of elem_size) except for a send to
   * a backend with comm_strided_send. Empty binding for broadcast and recv. */
  ruda__copy_desc_t src;
  /* Output: every kind but send. Broadcast is in place: the root sends its
   * dst. */
  ruda_binding_t dst;
  /* Elements of dtype. All-reduce, broadcast, send, recv: of the message;
   * all-gather: of src (dst holds size x count); reduce-scatter: of dst
   * (src holds size x count). */
  uint64_t count;
  ruda_elem_type_t dtype; /* kinds that only move bytes use RUDA_ELEM_U8 */
  ruda_reduce_op_t op;    /* all-reduce, reduce-scatter */
  uint32_t root;          /* broadcast: the root's rank */
  uint32_t peer;          /* send: the receiver's rank; recv: the sender's */
} ruda__coll_t;

/* The bytes a participant's src and dst must hold for `c`: count elements
 * of dtype, times the communicator's size on the gathered (all-gather's
 * dst) or scattered (reduce-scatter's src) side, 0 for a side the kind
 * does not use; a send's src as if contiguous (a backend that sends
 * strided views measures the view itself). Thread-safe. */
void ruda__coll_bytes(const ruda__coll_t *c, uint64_t *out_src, uint64_t *out_dst);
/* Whether the kind reduces (all-reduce, reduce-scatter). */
static inline bool ruda__coll_is_reduction(ruda__coll_kind_t kind) {
  return kind == RUDA__COLL_ALL_REDUCE || kind == RUDA__COLL_REDUCE_SCATTER;
}

/* The communication timeout in nanoseconds: RUDA_COMM_TIMEOUT (seconds, a
 * decimal number > 0) read once, default 300 s. A wait for peers longer
 * than this fails with an error naming what was awaited. Thread-safe. */
uint64_t ruda__comm_timeout_ns(void);

/* Element types the CPU backend reduces (bits 1 << t): f64, f32, f16,
 * bf16, i8, i16, i32, i64, u8, u16, u32, u64. */
#define RUDA__REDUCE_TYPES_CPU                                                            \
  ((1ull << RUDA_ELEM_F64) | (1ull << RUDA_ELEM_F32) | (1ull << RUDA_ELEM_F16) |           \
   (1ull << RUDA_ELEM_BF16) | (1ull << RUDA_ELEM_I8) | (1ull << RUDA_ELEM_I16) |           \
   (1ull << RUDA_ELEM_I32) | (1ull << RUDA_ELEM_I64) | (1ull << RUDA_ELEM_U8) |            \
   (1ull << RUDA_ELEM_U16) | (1ull << RUDA_ELEM_U32) | (1ull << RUDA_ELEM_U64))

/* "f64, f32, ..." for the bits of `types`; snprintf semantics. Thread-safe. */
size_t ruda__elem_types_format(uint64_t types, char *buf, size_t cap);

/* ---- Launch validation ---- */

/* The one validation of a launch is ruda__launch_validate
 * (server/launch_check.h). */
/* The errors of ruda__validate_launch and ruda__validate_count, for
 * arguments they found out of the limits (out of line: every launch asks
 * the inline checks, few fail). */
ruda_status_t ruda__validate_launch_error(const ruda_device_properties_t *p, ruda_dim_t dim,
                                          uint64_t shared_mem_bytes);
ruda_status_t ruda__validate_count_error(const ruda_device_properties_t *p,
                                         const ruda_kernel_desc_t *desc, ruda_count3_t c);
/* Checks dim, units and shared memory against the properties; NULL when
 * they fit, else LaunchError::TooManyResources wrapping the
 * ResourceLimitError (RudaDim, Units or SharedMemory) that was exceeded. */
static inline ruda_status_t ruda__validate_launch(const ruda_device_properties_t *p,
                                                  ruda_dim_t dim, uint64_t shared_mem_bytes) {
  const ruda_hardware_properties_t *h = &p->hardware;
  uint64_t units;
  if (dim.x > h->max_ruda_dim[0] || dim.y > h->max_ruda_dim[1] || dim.z > h->max_ruda_dim[2] ||
      __builtin_mul_overflow((uint64_t)dim.x * dim.y, (uint64_t)dim.z, &units) ||
      units > h->max_units_per_ruda || shared_mem_bytes > h->max_shared_memory_size)
    return ruda__validate_launch_error(p, dim, shared_mem_bytes);
  return NULL;
}
/* Checks a dispatch count of kernel `desc` against max_ruda_count
 * (LaunchError::TooManyResources wrapping ResourceLimitError::RudaCount)
 * and that its total number of rudas (x * y * z) fits in 64 bits
 * (LaunchError::Unknown naming the kernel and the value). Backends
 * call it for dynamic counts, once read (static ones were checked by
 * ruda__launch_validate). */
static inline ruda_status_t ruda__validate_count(const ruda_device_properties_t *p,
                                                 const ruda_kernel_desc_t *desc,
                                                 ruda_count3_t c) {
  const uint32_t *m = p->hardware.max_ruda_count;
  uint64_t rudas;
  if (c.x > m[0] || c.y > m[1] || c.z > m[2] ||
      __builtin_mul_overflow((uint64_t)c.x * c.y, (uint64_t)c.z, &rudas))
    return ruda__validate_count_error(p, desc, c);
  return NULL;
}
/* Smallest view a dynamic count is read from (three uint32). */
#define RUDA__DYNAMIC_COUNT_BYTES 12u

#endif /* RUDA_SERVER_H */
