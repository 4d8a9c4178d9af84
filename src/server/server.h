/* The compute server interface (the seed's ComputeServer and
 * ServerCommunication) as a vtable, plus ServerUtilities.
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
#include "ruda/client.h"
#include "ruda/comm.h" /* ruda_reduce_op_t */
#include "ruda/kernel.h"
#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"
#include "server/device_settings.h"
#include "server/stream_table.h"

typedef struct ruda__server ruda__server_t;
typedef struct ruda__future ruda__future_t;

/* A copy descriptor (the seed's CopyDescriptor). */
typedef struct ruda__copy_desc {
  ruda_binding_t binding;
  ruda_shape_t shape;
  ruda_strides_t strides;
  size_t elem_size;
} ruda__copy_desc_t;

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

typedef struct ruda__server_vtable {
  const char *name; /* "cpu", "cuda" */

  void (*destroy)(ruda__server_t *s);

  /* Reserves `size` bytes on `stream` and binds `memory` to them. Errors
   * are queued on the stream. (ignore, no flush) */
  void (*initialize_memory)(ruda__server_t *s, ruda_memory_t *memory, uint64_t size,
                            ruda_stream_id_t stream);

  /* Optional (NULL: IoError::UnsupportedIoOperation). Pinned host buffers. */
  ruda_status_t (*staging)(ruda__server_t *s, const uint64_t *sizes, size_t count,
                           ruda_stream_id_t stream, ruda_bytes_t *out);

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
  ruda_status_t (*get_resource)(ruda__server_t *s, const ruda_binding_t *b,
                                ruda_stream_id_t stream, ruda_resource_t *out);

  /* Runs/queues the kernel. The server layer (ruda__server_launch) has
   * checked the kernel's dim and shared memory and a static count; the
   * backend checks a dynamic count's values (ruda__validate_count) and
   * what only it knows. Errors queued (ruda__stream_push_error). */
  void (*launch)(ruda__server_t *s, ruda_kernel_t *kernel, const ruda__count_t *count,
                 const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                 ruda_stream_id_t stream);

  /* Submits outstanding work; returns (drains) queued errors. */
  ruda_status_t (*flush)(ruda__server_t *s, ruda_stream_id_t stream);

  /* Fails while errors are queued (no drain). */
  ruda_status_t (*memory_usage)(ruda__server_t *s, ruda_stream_id_t stream,
                                ruda_memory_usage_t *out);
  /* Optional (NULL: the sum of the stream table's usage hook). Usage of the
   * whole device; never fails for queued errors. */
  ruda_status_t (*memory_usage_device)(ruda__server_t *s, ruda_memory_usage_t *out);
  void (*memory_cleanup)(ruda__server_t *s, ruda_stream_id_t stream);
  void (*allocation_mode)(ruda__server_t *s, ruda_memory_allocation_mode_t mode,
                          ruda_stream_id_t stream);

  /* Opens a profile on the stream (ignore, no flush). */
  ruda_status_t (*start_profile)(ruda__server_t *s, ruda_stream_id_t stream,
                                 ruda_profiling_token_t *out);
  /* Closes it: its duration, or a ProfileError: NotRegistered for a token
   * not open on this stream, the stream's failure when an error was queued
   * on it while the profile was open. Observing never drains: the stream's
   * queued errors stay for its next read, flush or sync. */
  ruda_status_t (*end_profile)(ruda__server_t *s, ruda_stream_id_t stream,
                               ruda_profiling_token_t token,
                               ruda_profile_duration_t *out);

  /* True when every operation's work has finished by the time the worker
   * returns from it (the CPU backend). The client may then answer sync and
   * flush from the worker's progress counter, without a round trip, when
   * ruda__server_t.queued_errors is 0. */
  bool completes_in_order;

  /* ---- ServerCommunication (all optional; NULL: unsupported) ----
   * comm_enabled: the client offers collectives (include/ruda/comm.h) only
   * when it is true; the client has validated every argument, and queues a
   * collective on every participant in the same global order.
   * comm_init: creates this device's member of the communicator of `ids`
   * (sorted, n >= 1, this device among them). Called once per device set,
   * on every participant concurrently; may block until all have joined.
   * all_reduce: every participant must reach the collective even when its
   * own part failed (its peers wait for it). Errors are queued on `stream`
   * and NULL returned, like a launch; a non-NULL return is logged and
   * dropped by the client.
   * sync_collective: orders `stream` after the collectives; returns its
   * error (blocking for the caller). */
  bool comm_enabled;
  ruda_status_t (*sync_collective)(ruda__server_t *s, ruda_stream_id_t stream);
  ruda_status_t (*comm_init)(ruda__server_t *s, const ruda_device_id_t *ids, size_t n);
  ruda_status_t (*all_reduce)(ruda__server_t *s, const ruda_binding_t *src,
                              const ruda_binding_t *dst, ruda_elem_type_t dtype,
                              ruda_stream_id_t stream, ruda_reduce_op_t op,
                              const ruda_device_id_t *ids, size_t n);
  ruda_status_t (*send)(ruda__server_t *s, const ruda__copy_desc_t *desc,
                        ruda_elem_type_t dtype, ruda_stream_id_t stream,
                        ruda_device_id_t dst);
  ruda_status_t (*recv)(ruda__server_t *s, ruda_memory_t *memory, uint64_t size,
                        ruda_elem_type_t dtype, ruda_stream_id_t stream,
                        ruda_device_id_t src);
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

/* The base of every backend server (offset 0). */
struct ruda__server {
  const ruda__server_vtable_t *vt;
  ruda__server_utilities_t utilities;
  ruda_device_id_t device;
  /* Errors queued on all streams (kept by the stream table). Written by the
   * worker, read anywhere. */
  atomic_size_t queued_errors;
  /* The state of every stream (stream_table.h); ruda__server_streams_init. */
  ruda__stream_table_t streams;
};

/* Initialises s->streams for the backend's per-stream extension `ops`,
 * keeping up to settings.max_streams idle states (call after
 * ruda__server_utilities_init). Errors: RUDA_ERR_UNAVAILABLE (host memory). */
ruda_status_t ruda__server_streams_init(ruda__server_t *s, const ruda__stream_table_ops_t *ops);

/* The server layer's launch: validates what does not depend on the backend
 * (the kernel's dim and shared memory against the properties, a static
 * count against max_ruda_count and the 64-bit ruda total, a dynamic count
 * view of at least 12 bytes) and queues a launch error on `stream` for a
 * launch that cannot run; otherwise calls s->vt->launch. Worker thread. */
void ruda__server_launch(ruda__server_t *s, ruda_kernel_t *kernel, const ruda__count_t *count,
                         const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                         ruda_stream_id_t stream);

/* The memory usage of every stream of the device together (s->vt's
 * memory_usage_device, else the sum over the stream table). Queued errors
 * do not make it fail. Worker thread. */
ruda_status_t ruda__server_memory_usage_device(ruda__server_t *s, ruda_memory_usage_t *out);

/* ---- Backends and their registry ---- */

typedef struct ruda__backend {
  uint16_t type_id;  /* RUDA_DEVICE_TYPE_* (a new backend picks an unused id) */
  const char *name;  /* "cpu", "cuda", "opencl": device names are "<name>:N" */
  /* Number of devices; RUDA_ERR_UNAVAILABLE with the reason (library not
   * found, no platform, driver error) when none can be used. Thread-safe. */
  ruda_status_t (*device_count)(uint32_t *out);
  /* Creates the server of device `index`. Called once per device, on the
   * device's worker thread. */
  ruda_status_t (*create_server)(uint16_t index, ruda__server_t **out);
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

/* ---- Collectives shared by the client and the backends ---- */

/* Element types every collective backend reduces: f64, f32, f16, bf16, i8,
 * i32, i64, u8, u32, u64. Thread-safe. */
bool ruda__reduce_dtype_supported(ruda_elem_type_t t);

/* ---- Launch validation shared by backends ---- */

/* Checks dim, units and shared memory against the properties; returns the
 * seed's LaunchError::TooManyResources(ResourceLimitError::...). */
ruda_status_t ruda__validate_launch(const ruda_device_properties_t *p, ruda_dim_t dim,
                                    uint64_t shared_mem_bytes);
/* Checks a dispatch count of kernel `desc` against max_ruda_count and that
 * its total number of rudas (x * y * z) fits in 64 bits;
 * LaunchError::Unknown naming the kernel, the limit and the value. Backends
 * call it for dynamic counts (static ones were checked by
 * ruda__server_launch). */
ruda_status_t ruda__validate_count(const ruda_device_properties_t *p,
                                   const ruda_kernel_desc_t *desc, ruda_count3_t c);
/* Smallest view a dynamic count is read from (three uint32). */
#define RUDA__DYNAMIC_COUNT_BYTES 12u

#endif /* RUDA_SERVER_H */
