/* Internal structures of the memory layer: slices, pages, pools and the
 * manager. Only the memory layer includes this file. The descriptor's
 * fields, the state word and the inbox through which frees reach a manager
 * are in memory_handle_internal.h.
 *
 * Sliced pages coalesce a freed slice with its free neighbours at once and
 * keep their free slices in an offset-ordered tree, so "coalesce, then
 * first fit" gives the same slice with no scan of the page.
 */
#ifndef RUDA_MEMORY_INTERNAL_H
#define RUDA_MEMORY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory/memory_handle_internal.h"
#include "memory/memory_manager.h"
#include "memory/pool_page.h"
#include "memory/storage.h"

struct ruda__memory_manager {
  ruda__memory_inbox_t inbox; /* descriptors whose slice became free */
  ruda__page_store_t store;   /* the storage, spare slices, page rules */
  ruda_memory_properties_t props;
  ruda__persistent_memory_t persistent_cfg;
  ruda_memory_allocation_mode_t mode;
  uint64_t alloc_reserve_count;
  uint32_t npools;
  ruda__pool_t pools[RUDA_MAX_POOLS];
  ruda__pool_t persistent;
  ruda__slice_t **slots;
  uint32_t nslots, slot_cap;
  uint32_t *free_slots;
  uint32_t nfree_slots;
  ruda__memory_group_t *group;       /* the device's managers; NULL: none */
  ruda__memory_manager_t *group_next;
  uint64_t stream_id;                /* for messages, once in a group */
  char name[64];
};

/* Free-slice tree (free_tree.c): a treap by offset with max-size
 * augmentation; first_fit returns the lowest-offset slice >= size. */
ruda__slice_t *ruda__free_tree_insert(ruda__slice_t *root, ruda__slice_t *node);
ruda__slice_t *ruda__free_tree_remove(ruda__slice_t *root, ruda__slice_t *node);
ruda__slice_t *ruda__free_tree_first_fit(ruda__slice_t *root, uint64_t size);
static inline uint64_t ruda__free_tree_max(const ruda__slice_t *root) {
  return root ? root->tmax : 0;
}

/* Pools. try_reserve returns NULL when nothing fits; alloc makes a page. */
ruda__slice_t *ruda__sliced_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                        uint64_t size);
ruda_status_t ruda__sliced_alloc(ruda__page_store_t *ps, ruda__pool_t *p,
                                 uint64_t size, ruda__slice_t **out);
void ruda__sliced_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s);
bool ruda__sliced_accept(const ruda__pool_t *p, uint64_t size);

ruda__slice_t *ruda__exclusive_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                           uint64_t size);
ruda_status_t ruda__exclusive_alloc(ruda__page_store_t *ps, ruda__pool_t *p,
                                    uint64_t size, ruda__slice_t **out);
void ruda__exclusive_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s);
void ruda__exclusive_cleanup(ruda__page_store_t *ps, ruda__pool_t *p,
                             uint64_t alloc_nr, bool explicit_);

ruda__slice_t *ruda__persistent_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                            uint64_t size);
bool ruda__persistent_has_size(const ruda__pool_t *p, uint64_t size);
ruda_status_t ruda__persistent_alloc(ruda__page_store_t *ps, ruda__pool_t *p,
                                     uint64_t size, ruda__slice_t **out);
void ruda__persistent_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s);
void ruda__persistent_cleanup(ruda__page_store_t *ps, ruda__pool_t *p);
void ruda__persistent_deinit(ruda__pool_t *p);

#endif
