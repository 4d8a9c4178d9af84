/* Internal structures of the memory layer: the manager's, for
 * memory_manager.c and the memory tests. The other files include the
 * headers of their own module and of the modules below it, never this one:
 * the descriptor's fields, the state word and how frees reach a manager are
 * in memory_handle_internal.h; slices, pages, pools and the page store in
 * pool_page.h.
 *
 * The layer's modules, bottom first. A file includes and calls only files
 * listed before it, so nothing calls back up: a pool gets its pages and
 * slice records from the page store and never sees the manager, and a
 * release on any thread reaches the manager only by pushing the descriptor
 * onto the inbox that the manager stored in it when it bound it.
 *
 *   storage.h, host_storage.c     where pages come from: the storage
 *                                  vtable, the host storage
 *   align.h                       alignment arithmetic
 *   memory_usage.c                usage sums and report text
 *   memory_handle.c               the descriptor table, handles, bindings
 *     (memory_handle.h,            and their checks, the state word, the
 *      memory_handle_internal.h)   push onto a manager's inbox
 *   host_bytes.c                  owned host buffers; raw resources
 *   layout_policy.c               several views of one allocation
 *   drop_queue.c                  deferred release of host buffers
 *   memory_config.h               pool options, manager configuration
 *   pool_page.c                   slices, pages and the page store: slice
 *                                  records, pages from the storage and
 *                                  back, the bounded reclaim
 *   free_tree.c                   the free slices of a sliced page
 *   sliced_pool.c, exclusive_pool.c, persistent_pool.c
 *                                 the pool kinds, over the page store
 *   memory_manager.c              presets, routing, reserve + bind,
 *                                  lookup, the inbox drain, cleanup, mode,
 *                                  usage, per-pool report
 *
 * memory_manager.h is also the layer's face: the other layers include it
 * alone, and it brings the handles, layout policies and drop queue along.
 *
 * A manager is one stream's memory, used on its device's worker thread
 * only (docs/design/memory.md).
 */
#ifndef RUDA_MEMORY_INTERNAL_H
#define RUDA_MEMORY_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/memory_config.h"
#include "memory/memory_handle_internal.h"
#include "memory/pool_page.h"
#include "ruda/memory.h"

/* Memory ruda does not own bound to a descriptor (ruda__memory_import): a
 * page and a slice of their own, outside every pool, so that lookups and
 * views work as for pool memory. */
#define RUDA__EXTERNAL_POOL UINT32_MAX
typedef struct ruda__external {
  ruda__page_t page;   /* page.pool = RUDA__EXTERNAL_POOL */
  ruda__slice_t slice;
  struct ruda__external *prev, *next; /* the manager's list */
} ruda__external_t;

struct ruda__memory_manager {
  /* First, so that the pools' store is the manager's own address (no
   * extra register on the reservation path). store.pools is `pools`. */
  ruda__page_store_t store;   /* the storage, spare slices, page rules */
  ruda__memory_inbox_t inbox; /* descriptors whose slice became free */
  ruda_memory_properties_t props;
  ruda_persistent_memory_t persistent_cfg;
  ruda_memory_allocation_mode_t mode;
  uint64_t alloc_reserve_count;
  uint32_t npools;
  ruda__pool_t pools[RUDA_MAX_POOLS];
  ruda__pool_t persistent;
  ruda__slice_t **slots;
  uint32_t nslots, slot_cap;
  uint32_t *free_slots;
  uint32_t nfree_slots;
  /* Tags, not memory_manager.h's typedefs: this file includes nothing of
   * the manager's module. */
  /* Imported memory: its descriptors' inbox (never with a reuse cache:
   * the producer's memory must not be handed to a reservation) and the
   * live imports. */
  ruda__memory_inbox_t ext_inbox;
  ruda__external_t *externals;
  struct ruda__memory_group *group;  /* the device's managers; NULL: none */
  struct ruda__memory_manager *group_next;
  uint64_t stream_id;                /* for messages, once in a group */
  char name[64];
};

#endif
