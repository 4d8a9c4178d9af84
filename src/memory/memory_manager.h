/* The memory manager of one stream of one device: a list of dynamic pools
 * plus a persistent pool over one storage.
 *
 * Memory is handed out before it is bound: the client creates a descriptor
 * (ruda__memory_new) and hands it out as a handle before the device knows
 * about it; the device's worker later calls ruda__memory_alloc() which
 * reserves a slice and binds the descriptor to it. The slice is free again
 * once only the pool's own reference to the descriptor is left.
 *
 * Not thread-safe: a manager is used only from its device's worker thread.
 * Descriptor reference counts are atomic and may change concurrently: a
 * release on any thread that leaves only the pool's reference pushes the
 * descriptor onto the manager's lock-free inbox, drained by the next
 * manager call (see memory_internal.h and docs/memory.md).
 */
#ifndef RUDA_MEMORY_MANAGER_H
#define RUDA_MEMORY_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/storage.h"
#include "ruda/memory.h"
#include "ruda/types.h"

/* ---- Descriptors and handles (the internals behind ruda_handle_t) ---- */

/* A new unbound descriptor holding one handle reference (the caller's), or
 * NULL when memory (or the table's 2^32 slots) is exhausted. Its size,
 * stream and device are unset until ruda__handle_wrap/ruda__handle_create.
 * Thread-safe. The retain/release functions below are thread-safe too and
 * trust the caller to hold a reference (no generation check); the last
 * release recycles the descriptor's slot. */
ruda_memory_t *ruda__memory_new(void);
/* Whether `m` (NULL: false) is bound to a slice. Reads the location, which
 * only the device thread writes: call it there. Never fails. */
bool ruda__memory_is_bound(const ruda_memory_t *m);
/* The id handles of `m` carry (slot + generation; 0 for NULL). Thread-safe;
 * never fails. */
uint64_t ruda__memory_id(const ruda_memory_t *m);
/* Raw reference counting (handles count in both, bindings only in total). */
void ruda__memory_retain_handle(ruda_memory_t *m);
void ruda__memory_retain_binding(ruda_memory_t *m);
void ruda__memory_release_handle(ruda_memory_t *m);
void ruda__memory_release_binding(ruda_memory_t *m);

/* A new handle of `size` bytes on (device, stream), unbound, holding the
 * only reference of a new descriptor that records all three (the client's
 * ruda_client_empty and friends). OutOfMemory when no descriptor can be
 * made (*out is then empty). Thread-safe. */
ruda_status_t ruda__handle_create(uint64_t size, ruda_device_id_t device,
                                  ruda_stream_id_t stream, ruda_handle_t *out);
/* Wraps the caller's reference to `m` (from ruda__memory_new) into a handle
 * of `size` bytes on `stream` with no device (tests, benchmarks and
 * internal pools). Takes the reference; NULL gives an empty handle. */
ruda_handle_t ruda__handle_wrap(ruda_memory_t *m, uint64_t size, ruda_stream_id_t stream);
/* The descriptor a handle or binding names while it is live (generation
 * current, a user reference left), else NULL (empty, stale, forged). The
 * pointer stays valid for as long as the caller holds the handle or
 * binding. A table index and a compare; thread-safe. */
ruda_memory_t *ruda__handle_memory(const ruda_handle_t *h);
ruda_memory_t *ruda__binding_memory(const ruda_binding_t *b);
/* The check the client runs on every handle argument before anything is
 * queued: NULL when `h` is live, belongs to `device`, and its size,
 * stream and offsets agree with its descriptor; otherwise
 * RUDA_ERR_INVALID_HANDLE whose reason starts with "<who>: " ("write:
 * handle #12.3 was released", "read: handle #12.3 belongs to cuda:0, not
 * cpu:0"). A table index and a few compares; thread-safe. */
ruda_status_t ruda__handle_check(const ruda_handle_t *h, ruda_device_id_t device,
                                 const char *who);
/* ruda__handle_check, then a new binding of the view in *out (owned by the
 * caller). On error *out is empty. Thread-safe. */
ruda_status_t ruda__handle_bind(const ruda_handle_t *h, ruda_device_id_t device,
                                const char *who, ruda_binding_t *out);
/* ruda__handle_check for a binding, against the device its memory
 * records. Thread-safe. */
ruda_status_t ruda__binding_check(const ruda_binding_t *b, const char *who);

/* ---- Pool configuration ---- */

typedef enum ruda__pool_kind {
  RUDA_POOL_SLICED = 0,    /* pages of page_size carved into slices */
  RUDA_POOL_EXCLUSIVE = 1, /* one allocation per page */
} ruda__pool_kind_t;

typedef struct ruda__pool_options {
  ruda__pool_kind_t kind;
  uint64_t page_size;       /* sliced */
  uint64_t max_slice_size;  /* sliced */
  uint64_t max_alloc_size;  /* exclusive */
  uint64_t dealloc_period;  /* allocations between periodic cleanups; UINT64_MAX: never */
} ruda__pool_options_t;

typedef enum ruda__memory_configuration {
  RUDA_MEMORY_SUBSLICES = 0,      /* default */
  RUDA_MEMORY_EXCLUSIVE_PAGES = 1,
  RUDA_MEMORY_CUSTOM = 2,
} ruda__memory_configuration_t;

typedef enum ruda__persistent_memory {
  RUDA_PERSISTENT_ENABLED = 0,  /* the mode setter applies (default) */
  RUDA_PERSISTENT_DISABLED = 1, /* the setter is ignored; always Auto */
  RUDA_PERSISTENT_ENFORCED = 2, /* always Persistent; the setter is ignored */
} ruda__persistent_memory_t;

#define RUDA_MAX_POOLS 32

typedef struct ruda__memory_config {
  ruda__memory_configuration_t configuration;
  uint32_t num_custom;
  ruda__pool_options_t custom[RUDA_MAX_POOLS];
  ruda__persistent_memory_t persistent;
  /* false (default): ruda's page compaction: empty sliced pages go back to
   * the storage before a new page is taken, and large slices get pages of
   * their own size (bounded fragmentation; costs a storage allocation now
   * and then). true: pages stay until an explicit cleanup (a pool's pages
   * are reused, never reallocated, at the cost of holding every pool's
   * high-water mark). Storages whose allocations are slow or synchronising
   * (CUDA device memory) keep their pages. */
  bool keep_empty_pages;
} ruda__memory_config_t;

/* Computes the pool list of a preset (SubSlices or ExclusivePages) for a
 * max page size and alignment (docs/memory.md, "Presets"). Returns the count
 * (0 for RUDA_MEMORY_CUSTOM). Pure; thread-safe. */
uint32_t ruda__memory_presets(ruda__memory_configuration_t c,
                              ruda_memory_properties_t props,
                              ruda__pool_options_t out[RUDA_MAX_POOLS]);

/* ---- The manager ---- */

typedef struct ruda__memory_manager ruda__memory_manager_t;
typedef struct ruda__memory_group ruda__memory_group_t;

/* Takes ownership of `storage` (destroyed with the manager, or right away
 * when creation fails). `name` is copied and used in log lines ("Main CPU",
 * "Main GPU Memory"). `cfg` NULL means SubSlices with persistent memory
 * enabled. The initial mode is Persistent when cfg->persistent is ENFORCED,
 * Auto otherwise. Errors: RUDA_ERR_INVALID_ARGUMENT for a zero alignment or
 * max page size, a custom list of 0 or more than RUDA_MAX_POOLS pools, a
 * sliced pool with page_size 0 or an exclusive pool whose max_alloc_size is
 * not a multiple of the alignment; OutOfMemory. The caller owns *out. */
ruda_status_t ruda__memory_manager_create(ruda__storage_t storage,
                                          ruda_memory_properties_t props,
                                          const ruda__memory_config_t *cfg,
                                          const char *name,
                                          ruda__memory_manager_t **out);
/* The managers of one device (one per stream), so that an out-of-memory
 * error can name what the whole device holds, and a device-wide usage can
 * be summed. Owned by the server (zeroed storage, or ruda__memory_group_init);
 * used on the device's worker thread only, like its managers. */
struct ruda__memory_group {
  char device[32]; /* "cpu:0", "cuda:1" */
  ruda__memory_manager_t *first;
};

void ruda__memory_group_init(ruda__memory_group_t *g, ruda_device_id_t device);
/* Adds `mm` (which must not be in a group) to `g` as the manager of stream
 * `stream`; ruda__memory_manager_destroy takes it out again. */
void ruda__memory_manager_join(ruda__memory_manager_t *mm, ruda__memory_group_t *g,
                               uint64_t stream);
/* Usage summed over the group's managers (taking in released frees).
 * Worker thread only; never fails. */
ruda_memory_usage_t ruda__memory_group_usage(ruda__memory_group_t *g);

/* Frees every page and the storage. Live descriptors stay valid as objects
 * but become unbound (lookups give NotFound). NULL is a no-op. Must not run
 * while another thread releases handles or bindings bound in this manager
 * (the server destroys its managers after its streams are idle). */
void ruda__memory_manager_destroy(ruda__memory_manager_t *mm);

/* Reserves `size` bytes and binds `assigned` to the slice, recording
 * `cursor` (the stream position of the binding). The caller keeps its own
 * reference to `assigned`; the pool takes one more.
 * Two of ruda's own deviations (docs/memory.md): before any pool takes a
 * new page from the storage, every empty sliced page goes back to it
 * (flushed); and a sliced pool gives a slice larger than a quarter of its
 * page (up to max_slice_size) a new page of the slice's effective size
 * instead of page_size. When the storage refuses a page larger than the
 * request (a limit below the page size), the pool falls back to a page of
 * the request's own size before failing. Errors: BufferTooBig{size} when
 * no pool accepts the size (above the max page size, or within the
 * alignment of 2^64); OutOfMemory{size} when the storage refuses even
 * after whole free pages of every pool were given back to it (one retry, so
 * that memory idle in another pool is not lost to the request), its reason
 * naming the request, the
 * storage's limit, what the stream and the device (the manager's group)
 * hold in use and reserved, and the stream's largest free block;
 * `assigned` stays unbound then and the manager stays usable. Binding NULL
 * or an already bound descriptor gives RUDA_ERR_INVALID_ARGUMENT. */
ruda_status_t ruda__memory_alloc(ruda__memory_manager_t *mm, ruda_memory_t *assigned,
                                 uint64_t size, uint64_t cursor);

/* Resolves a view to its storage: the slice's storage handle narrowed by the
 * view's offsets. IoError::NotFound when the descriptor is NULL, unbound,
 * stale, or bound in another manager; RUDA_ERR_INVALID_ARGUMENT when the
 * offsets exceed the slice. */
ruda_status_t ruda__memory_resolve(ruda__memory_manager_t *mm, ruda_memory_t *m,
                                   uint64_t offset_start, uint64_t offset_end,
                                   ruda__storage_handle_t *out);
/* Resolves a binding (what every backend copy and launch goes through):
 * IoError::NotFound when the binding is empty, stale ("handle #12.3 was
 * released"), unbound or bound in another manager, as above; and, whatever
 * the binding's fields say, the view is bounded by what the device really
 * allocated: RUDA_ERR_INVALID_HANDLE when the binding's size is not its
 * slice's ("handle #12.3 says its allocation holds 1073741824 bytes; the
 * device allocated 64") or its offsets leave the slice. out->size is the
 * view's size in bytes: copies must fit in it. */
ruda_status_t ruda__memory_resolve_binding(ruda__memory_manager_t *mm, const ruda_binding_t *b,
                                           ruda__storage_handle_t *out);
/* The cursor recorded when `m` was bound; NotFound as above. */
ruda_status_t ruda__memory_cursor(ruda__memory_manager_t *mm, ruda_memory_t *m,
                                  uint64_t *out);
/* Whether this manager holds the binding of `m`: false where a lookup
 * would give NotFound. Never fails. */
bool ruda__memory_owns(ruda__memory_manager_t *mm, const ruda_memory_t *m);

/* Explicit cleanup returns whole free pages to the storage (persistent
 * free slices, whole free sliced pages, free exclusive pages) and flushes
 * it; implicit (explicit = false) runs only the exclusive pools' periodic
 * free-count check. Reservations never run it, but one that needs a new
 * page first returns the empty sliced pages (see ruda__memory_alloc), and
 * one that finds the storage exhausted runs it once before retrying. */
void ruda__memory_cleanup(ruda__memory_manager_t *mm, bool explicit_);
/* Applies `mode` only when persistent memory is ENABLED (DISABLED keeps
 * Auto, ENFORCED keeps Persistent); unknown values are ignored. */
void ruda__memory_set_mode(ruda__memory_manager_t *mm, ruda_memory_allocation_mode_t mode);
ruda_memory_allocation_mode_t ruda__memory_mode(const ruda__memory_manager_t *mm);
/* Exact usage of this manager (one stream): sums of the dynamic pools and
 * the persistent pool, after taking in the frees released so far. */
ruda_memory_usage_t ruda__memory_usage(const ruda__memory_manager_t *mm);
/* Per-pool report text (one line per pool: kind and options, pages,
 * allocations, in use, padding, free, reserved; then the usage report)
 * written into the caller's `buf`; snprintf semantics. Never fails. */
size_t ruda__memory_report(const ruda__memory_manager_t *mm, char *buf, size_t cap);

/* ---- Layout policies (client side, no device round trip) ---- */

typedef enum ruda__layout_policy_kind {
  RUDA_LAYOUT_POLICY_CONTIGUOUS = 0,
  RUDA_LAYOUT_POLICY_PITCHED = 1,
} ruda__layout_policy_kind_t;

typedef struct ruda__layout_policy {
  ruda__layout_policy_kind_t kind;
  uint64_t alignment;
} ruda__layout_policy_t;

/* Applies the policy to `count` descriptors: creates one new unbound base
 * handle (*out_base, on `device` and `stream`, sized to end where the last
 * view ends) and one offset view per descriptor (out_layouts[i].memory is a
 * handle clone narrowed to the descriptor, out_layouts[i].strides its
 * strides); views start at multiples of the policy's alignment. The caller
 * owns every returned handle. RUDA_ERR_INVALID_ARGUMENT for a zero
 * elem_size or a rank above RUDA_MAX_RANK; IoError::BufferTooBig when a
 * size, stride or the total overflows 64 bits; OutOfMemory. Thread-safe. */
ruda_status_t ruda__layout_apply(const ruda__layout_policy_t *policy, ruda_device_id_t device,
                                 ruda_stream_id_t stream,
                                 const ruda_memory_layout_descriptor_t *descs,
                                 size_t count, ruda_handle_t *out_base,
                                 ruda_memory_layout_t *out_layouts);

/* ---- Deferred release of host buffers in flight (drop queue) ---- */

/* A fence: `wait` blocks until all work submitted before `make` returned it
 * has completed; `destroy` frees it. */
typedef struct ruda__fence_ops {
  void *(*make)(void *ctx);
  void (*wait)(void *ctx, void *fence);
  void (*destroy)(void *ctx, void *fence);
  void *ctx;
} ruda__fence_ops_t;

typedef void (*ruda__drop_fn)(void *item);

typedef struct ruda__drop_queue ruda__drop_queue_t;

/* Flushes when `max_count` buffers (0: default 64) or `max_bytes` (0:
 * default 64 MiB) are staged. NULL when memory is exhausted or a fence
 * operation is missing. Not thread-safe: one queue per stream, used on the
 * device thread. */
ruda__drop_queue_t *ruda__drop_queue_create(uint32_t max_count, uint64_t max_bytes,
                                           ruda__fence_ops_t fence);
/* Stages `item` (`bytes` long) to be dropped with `drop` (NULL: nothing to
 * call) once it is safe. Errors: OutOfMemory (the item is not staged). */
ruda_status_t ruda__drop_queue_push(ruda__drop_queue_t *q, void *item, uint64_t bytes,
                                    ruda__drop_fn drop);
bool ruda__drop_queue_should_flush(const ruda__drop_queue_t *q);
/* Waits on the previous fence and drops what it covered, then moves the
 * staged items under a new fence (so a flush waits only for work queued
 * before the previous flush, never for what was just submitted). */
void ruda__drop_queue_flush(ruda__drop_queue_t *q);
/* Waits for everything and drops every item; frees the queue. NULL is a
 * no-op. */
void ruda__drop_queue_destroy(ruda__drop_queue_t *q);

#endif
