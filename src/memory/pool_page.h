/* Pages and slices: the level of the memory layer below the pools.
 *
 * A page is one storage allocation; a slice is a range of a page, free or
 * bound to a descriptor. A pool (ruda__pool_t) is, at this level, its
 * options, an array of pages and its usage counters; what the pages hold is
 * up to the pool's kind (sliced_pool.c, exclusive_pool.c,
 * persistent_pool.c), which keeps its own fields here too.
 *
 * The page store (ruda__page_store_t, one per manager, embedded in it) is
 * where the pools of a manager get their pages and slice records: the
 * storage, the spare slice records, and the page rules of the manager. A
 * new page is preceded by ruda's bounded reclaim over the store's dynamic
 * pools (pool_page.c).
 *
 * Device thread only, like the manager.
 */
#ifndef RUDA_MEMORY_POOL_PAGE_H
#define RUDA_MEMORY_POOL_PAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/align.h"
#include "memory/memory_config.h"
#include "memory/storage.h"
#include "ruda/memory.h"

typedef struct ruda__page ruda__page_t;
typedef struct ruda__slice ruda__slice_t;
typedef struct ruda__bucket ruda__bucket_t; /* persistent_pool.c */

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
  /* sliced: the store's page_allocs when the page last became empty (or
   * was made); the bounded reclaim spares a page emptied since the last
   * page allocation. */
  uint64_t empty_since;
  uint64_t bucket_key;            /* persistent: effective size */
};

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

typedef struct ruda__page_store {
  ruda__storage_t storage;
  ruda__slice_t *spare_slices; /* recycled slice structs, linked through next */
  /* The manager's dynamic pools: before a new page, the empty pages of the
   * sliced ones go back to the storage (unless keep_empty_pages). */
  ruda__pool_t *pools;
  uint32_t npools;
  bool keep_empty_pages; /* ruda__memory_config_t.keep_empty_pages */
  /* Pages allocated so far (the bounded reclaim's clock). */
  uint64_t page_allocs;
  /* Set when the storage refused a page during the current reservation
   * (the manager then makes the error the detailed OutOfMemory). */
  bool storage_refused;
  /* Set for the last try of a reservation the storage refused: new pages
   * are exactly the request's effective size (a limit below the page size
   * must not fail a request that fits). */
  bool exact_pages;
} ruda__page_store_t;

/* A zeroed slice record (a spare one, else a new one); NULL when memory is
 * exhausted. put makes `s` a spare. */
ruda__slice_t *ruda__slice_get(ruda__page_store_t *ps);
void ruda__slice_put(ruda__page_store_t *ps, ruda__slice_t *s);

/* Allocates `size` bytes of storage as a new page appended to the pool
 * (index npages), after giving the empty sliced pages of the store's pools
 * back to the storage (ruda's bounded reclaim, see pool_page.c). Errors:
 * the storage's (storage_refused is then set), or OutOfMemory for
 * metadata. */
ruda_status_t ruda__pool_page_new(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t size,
                                  ruda__page_t **out);
/* A slice record (ruda__slice_get) on a new page of `page_size`
 * (ruda__pool_page_new), in *s; its page is (*s)->page. The slice spans
 * the page, free, with no memory and no neighbours; the rest of the page
 * is the caller's to set (it does not point at the slice yet). On failure
 * nothing is left taken; `size`, the request, is what an out-of-memory
 * error names. */
ruda_status_t ruda__pool_page_with_slice(ruda__page_store_t *ps, ruda__pool_t *p,
                                         uint64_t page_size, uint64_t size, ruda__slice_t **s);
/* Deallocates the page's storage (not flushed) and frees the page, putting
 * its slices back on the store's spare list. The page must be empty and
 * is not removed from the pool's arrays (the caller compacts them with
 * ruda__pool_keep_page). */
void ruda__pool_page_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__page_t *pg);
/* Moves a kept page to position *j of the pool's arrays and renumbers it,
 * while the caller walks the pages in order freeing others (*j <= index). */
static inline void ruda__pool_keep_page(ruda__pool_t *p, ruda__page_t *pg, uint32_t *j) {
  p->page_max[*j] = p->page_max[pg->index];
  pg->index = *j;
  p->pages[(*j)++] = pg;
}
/* Gives the pool's empty pages back to the storage (not flushed) and
 * renumbers the others. */
void ruda__pool_free_empty_pages(ruda__page_store_t *ps, ruda__pool_t *p);
/* Performs the storage's deferred deallocations. */
static inline void ruda__page_store_flush(ruda__page_store_t *ps) {
  ps->storage.vt->flush(ps->storage.self);
}
/* Flushes and destroys the storage (every page must have been deallocated
 * already), then frees the spare slice records. */
void ruda__page_store_destroy(ruda__page_store_t *ps);

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
