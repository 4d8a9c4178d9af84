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
 * manager call (see memory_handle_internal.h and docs/design/memory.md).
 */
#ifndef RUDA_MEMORY_MANAGER_H
#define RUDA_MEMORY_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/memory_config.h"
#include "memory/storage.h"
#include "ruda/memory.h"
#include "ruda/types.h"

/* The memory layer's face: the other layers include this header alone, and
 * it brings the handles, the layout policies and the drop queue along. The
 * manager itself uses none but the handles. */
#include "memory/drop_queue.h"
#include "memory/layout_policy.h"
#include "memory/memory_handle.h"

/* ---- Presets ---- */

/* Computes the pool list of a preset (SubSlices or ExclusivePages) for a
 * max page size and alignment (docs/design/memory.md, "Presets"). Returns the count
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
  /* The device's reuse cache (reuse_cache.h), which the client takes from
   * on its own thread (ruda__handle_reuse); NULL: releases always go to
   * the inbox. Must outlive every manager of the group. */
  ruda__memory_reuse_t *reuse;
};

void ruda__memory_group_init(ruda__memory_group_t *g, ruda_device_id_t device,
                             ruda__memory_reuse_t *reuse);
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
 * Two of ruda's own deviations (docs/design/memory.md): before any pool takes a
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

/* Memory ruda does not own (a DLPack import): `base` in the backend's
 * address space (storage handle base), `size` bytes. `release(ctx)` is
 * called exactly once: by the release (on any thread) that drops the last
 * handle or binding of the descriptor, or, when handles are still alive
 * then, when the manager is destroyed (they then look up as NotFound).
 * The pools never see the memory: nothing of it is reused or freed by
 * them, and its record leaves the manager at its next call. */
typedef struct ruda__external_memory {
  uint64_t base;
  uint64_t size;
  void (*release)(void *ctx);
  void *ctx;
} ruda__external_memory_t;

/* Binds `assigned` (unbound) to `ext`. Errors: RUDA_ERR_INVALID_ARGUMENT
 * (NULL or bound descriptor), IoError::OutOfMemory (release is then not
 * called: the caller still owns the memory). */
ruda_status_t ruda__memory_import(ruda__memory_manager_t *mm, ruda_memory_t *assigned,
                                  const ruda__external_memory_t *ext);

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

#endif
