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
#include "memory/storage.h"

/* ---- Slices, pages, pools ---- */

typedef struct ruda__page ruda__page_t;
typedef struct ruda__slice ruda__slice_t;

struct ruda__slice {
  ruda__page_t *page;
  ruda__slice_t *prev, *next;  /* sliced: physical order; persistent: free list */
  ruda__slice_t *left, *right; /* sliced free-tree children */
  uint64_t tmax;               /* sliced free-tree: largest size in subtree */
  uint64_t prio;               /* sliced free-tree: heap priority */
  ruda_memory_t *memory;       /* bound descriptor; NULL when free */
  uint64_t offset;             /* bytes from the page's start */
  uint64_t size;               /* requested bytes (used) or whole slice (free) */
  uint64_t padding;            /* alignment padding after size (used only) */
  uint64_t cursor;
  uint32_t slot;               /* slot table index while used */
  bool used;
};

struct ruda__page {
  ruda__storage_handle_t storage; /* the whole storage allocation */
  uint32_t index;                 /* position in the pool's page array */
  uint32_t id;                    /* stable id within the pool */
  uint32_t pool;                  /* index of the pool (npools: persistent) */
  uint64_t used_slices;
  uint64_t free_bytes;            /* sliced: bytes in free slices */
  ruda__slice_t *first;           /* sliced: first slice (offset 0) */
  ruda__slice_t *root;            /* sliced: free-slice tree by offset */
  ruda__slice_t *slice;           /* exclusive/persistent: the one slice */
  uint64_t free_count;            /* exclusive */
  uint64_t bucket_key;            /* persistent: effective size */
};

typedef struct ruda__bucket {
  uint64_t key;            /* effective size; 0 = empty entry (keys are > 0 except size 0) */
  bool occupied;
  ruda__slice_t *free;     /* free slices, linked through next */
  uint64_t count;          /* slices of this size (free or used) */
} ruda__bucket_t;

typedef struct ruda__pool {
  ruda__pool_options_t opt;
  uint32_t index;
  bool persistent;
  uint64_t alignment;
  ruda__page_t **pages;
  uint64_t *page_max; /* sliced: largest free slice per page (index order) */
  uint32_t npages, cap;
  uint32_t next_page_id;
  uint32_t empty_pages; /* pages without a used slice */
  double cur_avg;      /* exclusive */
  uint64_t last_check; /* exclusive */
  ruda__bucket_t *buckets; /* persistent: open addressing */
  uint32_t nbuckets, bucket_cap;
  ruda_memory_usage_t usage;
} ruda__pool_t;

struct ruda__memory_manager {
  ruda__memory_inbox_t inbox; /* descriptors whose slice became free */
  ruda__storage_t storage;
  ruda_memory_properties_t props;
  ruda__persistent_memory_t persistent_cfg;
  ruda_memory_allocation_mode_t mode;
  bool keep_empty_pages; /* ruda__memory_config_t.keep_empty_pages */
  uint64_t alloc_reserve_count;
  uint32_t npools;
  ruda__pool_t pools[RUDA_MAX_POOLS];
  ruda__pool_t persistent;
  ruda__slice_t **slots;
  uint32_t nslots, slot_cap;
  uint32_t *free_slots;
  uint32_t nfree_slots;
  ruda__slice_t *spare_slices; /* recycled slice structs, linked through next */
  /* Set when the storage refused a page during the current reservation
   * (the error then becomes the detailed OutOfMemory). */
  bool storage_refused;
  /* Set for the last try of a reservation the storage refused: new pages
   * are exactly the request's effective size (a limit below the page size
   * must not fail a request that fits). */
  bool exact_pages;
  ruda__memory_group_t *group;       /* the device's managers; NULL: none */
  ruda__memory_manager_t *group_next;
  uint64_t stream_id;                /* for messages, once in a group */
  char name[64];
};

/* ---- Helpers shared by the pool files ---- */

static inline uint64_t ruda__round_up(uint64_t v, uint64_t a) {
  if (a <= 1) return v;
  uint64_t r = v % a;
  return r ? v + (a - r) : v;
}
static inline uint64_t ruda__padding(uint64_t size, uint64_t a) {
  if (a <= 1) return 0;
  return (a - size % a) % a;
}

ruda__slice_t *ruda__slice_get(ruda__memory_manager_t *mm);
void ruda__slice_put(ruda__memory_manager_t *mm, ruda__slice_t *s);
/* Allocates `size` bytes of storage as a new page appended to the pool
 * (index npages), after giving every empty sliced page of the manager back
 * to the storage (ruda's bounded reclaim, see memory_manager.c). Errors:
 * the storage's, or OutOfMemory for metadata. */
ruda_status_t ruda__pool_page_new(ruda__memory_manager_t *mm, ruda__pool_t *p,
                                  uint64_t size, ruda__page_t **out);
/* Deallocates the page's storage (not flushed) and frees the page, putting
 * its slices back on the manager's spare list. The page must be empty and
 * is not removed from the pool's arrays (the caller compacts them with
 * ruda__pool_keep_page). */
void ruda__pool_page_free(ruda__memory_manager_t *mm, ruda__pool_t *p, ruda__page_t *pg);
/* Moves a kept page to position *j of the pool's arrays and renumbers it,
 * while the caller walks the pages in order freeing others (*j <= index). */
static inline void ruda__pool_keep_page(ruda__pool_t *p, ruda__page_t *pg, uint32_t *j) {
  p->page_max[*j] = p->page_max[pg->index];
  pg->index = *j;
  p->pages[(*j)++] = pg;
}

/* Free-slice tree (free_tree.c): a treap by offset with max-size
 * augmentation; first_fit returns the lowest-offset slice >= size. */
ruda__slice_t *ruda__free_tree_insert(ruda__slice_t *root, ruda__slice_t *node);
ruda__slice_t *ruda__free_tree_remove(ruda__slice_t *root, ruda__slice_t *node);
ruda__slice_t *ruda__free_tree_first_fit(ruda__slice_t *root, uint64_t size);
static inline uint64_t ruda__free_tree_max(const ruda__slice_t *root) {
  return root ? root->tmax : 0;
}

/* Pools. try_reserve returns NULL when nothing fits; alloc makes a page. */
ruda__slice_t *ruda__sliced_try_reserve(ruda__memory_manager_t *mm, ruda__pool_t *p,
                                        uint64_t size);
ruda_status_t ruda__sliced_alloc(ruda__memory_manager_t *mm, ruda__pool_t *p,
                                 uint64_t size, ruda__slice_t **out);
void ruda__sliced_on_free(ruda__memory_manager_t *mm, ruda__pool_t *p, ruda__slice_t *s);
/* Gives the pool's empty pages back to the storage (not flushed) and
 * renumbers the others. */
void ruda__sliced_free_empty_pages(ruda__memory_manager_t *mm, ruda__pool_t *p);
bool ruda__sliced_accept(const ruda__pool_t *p, uint64_t size);

ruda__slice_t *ruda__exclusive_try_reserve(ruda__memory_manager_t *mm, ruda__pool_t *p,
                                           uint64_t size);
ruda_status_t ruda__exclusive_alloc(ruda__memory_manager_t *mm, ruda__pool_t *p,
                                    uint64_t size, ruda__slice_t **out);
void ruda__exclusive_on_free(ruda__memory_manager_t *mm, ruda__pool_t *p, ruda__slice_t *s);
void ruda__exclusive_cleanup(ruda__memory_manager_t *mm, ruda__pool_t *p,
                             uint64_t alloc_nr, bool explicit_);

ruda__slice_t *ruda__persistent_try_reserve(ruda__memory_manager_t *mm, ruda__pool_t *p,
                                            uint64_t size);
bool ruda__persistent_has_size(const ruda__pool_t *p, uint64_t size);
ruda_status_t ruda__persistent_alloc(ruda__memory_manager_t *mm, ruda__pool_t *p,
                                     uint64_t size, ruda__slice_t **out);
void ruda__persistent_on_free(ruda__memory_manager_t *mm, ruda__pool_t *p, ruda__slice_t *s);
void ruda__persistent_cleanup(ruda__memory_manager_t *mm, ruda__pool_t *p);
void ruda__persistent_deinit(ruda__pool_t *p);

/* Marks `s` used for `size` bytes and updates the pool's usage. */
static inline void ruda__slice_mark_used(ruda__pool_t *p, ruda__slice_t *s, uint64_t size) {
  s->used = true;
  s->size = size;
  s->padding = ruda__padding(size, p->alignment);
  p->usage.number_allocs++;
  p->usage.bytes_in_use += s->size;
  p->usage.bytes_padding += s->padding;
  if (s->page->used_slices++ == 0) p->empty_pages--;
}
static inline void ruda__slice_mark_free(ruda__pool_t *p, ruda__slice_t *s) {
  s->used = false;
  p->usage.number_allocs--;
  p->usage.bytes_in_use -= s->size;
  p->usage.bytes_padding -= s->padding;
  if (--s->page->used_slices == 0) p->empty_pages++;
}

#endif
