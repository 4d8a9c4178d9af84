/* Internal structures of the memory layer: descriptors, slices, pages,
 * pools and the manager. Only the memory layer include this file.
 *
 * Descriptors live in a process-wide table (memory_handle.c) of slabs that
 * are never freed: a handle names its descriptor by slot and generation,
 * so reading a descriptor through a stale handle reads a live object whose
 * generation no longer matches, never freed memory. A slot is recycled with
 * its generation bumped once nothing references it.
 *
 * The state word. Everything that decides whether a descriptor is alive
 * sits in one atomic 64-bit word, changed only by compare-and-swap:
 *   bits 32..63  generation of the slot (>= 1 while in use)
 *   bit  31      RUDA__MEMORY_BOUND: a pool slice holds the descriptor
 *   bits  0..30  references: handles + bindings (+ 1 for the pool's slice)
 * A user retain succeeds only while the generation is the handle's and a
 * user reference is left (count > 1 when bound, > 0 when not), so a stale id
 * can never retain a recycled descriptor, nor revive one whose last user
 * reference is gone but whose slice the device has not taken back yet.
 *
 * How a slice is known to be free. A user releases handles on any thread
 * and never calls into the manager, so the manager cannot learn about frees
 * synchronously. Instead, the release that leaves exactly "BOUND + 1" (only
 * the pool's own reference) pushes the descriptor onto its manager's
 * lock-free inbox (a Treiber stack). Because the flag and the pool's count
 * are added and removed in one atomic operation, exactly one release per
 * binding sees that value, even when it races with the bind itself. The
 * device thread drains the inbox at the start of every manager call, drops
 * the pool's reference (which recycles the descriptor) and marks the slice
 * free: sliced pages coalesce it with its free neighbours at once and keep
 * their free slices in an offset-ordered tree, so "coalesce, then first
 * fit" gives the same slice with no scan of the page.
 */
#ifndef RUDA_MEMORY_INTERNAL_H
#define RUDA_MEMORY_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory/memory_manager.h"
#include "memory/storage.h"

/* ---- Descriptor ---- */

#define RUDA__MEMORY_BOUND (1ull << 31)
#define RUDA__MEMORY_COUNT_MASK (RUDA__MEMORY_BOUND - 1)
#define RUDA__MEMORY_GEN(state) ((uint32_t)((state) >> 32))
#define RUDA__MEMORY_COUNT(state) ((state) & RUDA__MEMORY_COUNT_MASK)

typedef struct ruda__memory_location {
  uint32_t pool;  /* index in the manager's pools; npools = persistent */
  uint32_t page;  /* id of the page inside its pool (stable, not an index) */
  uint32_t slice; /* slot of the slice in the manager's slot table */
  uint8_t init;   /* 0: unbound */
} ruda__memory_location_t;

struct ruda_memory {
  _Atomic uint64_t state;       /* generation | BOUND | references (see above) */
  _Atomic uint32_t handle_refs; /* user handles (bindings and the pool not counted) */
  _Atomic uint32_t free_next;   /* table free list: next slot + 1 (0: end) */
  /* What the handles of this generation were made for, written before the
   * id is handed out; atomics only so that a stale reader on another thread
   * is not a data race. */
  _Atomic uint64_t size;
  _Atomic uint64_t stream;
  _Atomic uint64_t device;      /* RUDA__DEVICE_SET | type << 16 | index; 0: none */
  uint32_t slot;                /* own slot in the table (constant) */
  /* The manager holding the binding; NULL while unbound. Stored with
   * release ordering after `loc` is written (device thread only). */
  _Atomic(struct ruda__memory_manager *) owner;
  struct ruda_memory *freed_next; /* inbox link */
  ruda__memory_location_t loc;    /* device thread only */
};

#define RUDA__DEVICE_SET (1ull << 32)
static inline uint64_t ruda__device_pack(ruda_device_id_t d) {
  return RUDA__DEVICE_SET | (uint64_t)d.type_id << 16 | d.index_id;
}

/* The generation of a live descriptor (the caller holds a reference). */
static inline uint32_t ruda__memory_gen(const ruda_memory_t *m) {
  return RUDA__MEMORY_GEN(atomic_load_explicit(&((ruda_memory_t *)m)->state,
                                               memory_order_relaxed));
}

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
  _Atomic(ruda_memory_t *) inbox; /* descriptors whose slice became free */
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

/* The pool's reference (device thread): one handle reference plus the
 * BOUND flag. Release frees the descriptor when nothing else holds it. */
void ruda__memory_pool_retain(ruda_memory_t *m);
void ruda__memory_pool_release(ruda_memory_t *m);

/* Pushes `m` onto its manager's inbox (any thread). */
void ruda__memory_manager_notify_free(struct ruda__memory_manager *mm, ruda_memory_t *m);

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
