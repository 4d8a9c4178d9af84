/* SlicedPool: pages of page_size carved into slices (first fit, split,
 * coalesce).
 *
 * Large slices get a page of their own size (unless keep_empty_pages):
 * a new page for a slice larger than a quarter of page_size (and at most
 * max_slice_size) is exactly the slice's effective size, so one 33 MiB
 * slice does not pin a 128 MiB page. Such a page is an ordinary page of the
 * pool: first fit reuses it for any request that fits once it is free.
 *
 * Each page keeps its slices in offset order (a doubly linked list) and its
 * free slices in a tree (free_tree.c). Free slices are coalesced as soon as
 * the manager learns that they are free, so no two free slices are ever
 * adjacent and a page never has to be coalesced before it is tried. The
 * pool keeps, per page, the size of its largest free
 * slice in a flat array, so pages that cannot fit a request are skipped
 * without touching them.
 */
#include <stdlib.h>

#include "memory/free_tree.h"
#include "memory/pool_page.h"
#include "memory/sliced_pool.h"

bool ruda__sliced_accept(const ruda__pool_t *p, uint64_t size) {
  uint64_t page = p->opt.page_size;
  if (ruda__round_up(size, p->alignment) > page) return false;
  if (size <= p->opt.max_slice_size) return true;
  /* Under 20% of the page wasted: (page - size) * 5 < page, written so it
   * cannot overflow. */
  return size <= page && page > 0 && page - size <= (page - 1) / 5;
}

static void ruda__sliced_set_max(ruda__pool_t *p, ruda__page_t *pg) {
  p->page_max[pg->index] = ruda__free_tree_max(pg->root);
}

/* Takes `eff` bytes at the start of free slice `s` (already out of the tree),
 * putting the rest back as a new free slice right after it. */
/* The caller made sure that a spare slice struct exists, so this cannot
 * fail. */
static ruda__slice_t *ruda__sliced_take(ruda__page_store_t *ps, ruda__pool_t *p,
                                        ruda__page_t *pg, ruda__slice_t *s, uint64_t size,
                                        uint64_t eff) {
  if (s->size > eff) {
    ruda__slice_t *rest = ruda__slice_get(ps);
    rest->page = pg;
    rest->offset = s->offset + eff;
    rest->size = s->size - eff;
    rest->padding = 0;
    rest->used = false;
    rest->memory = NULL;
    rest->prev = s;
    rest->next = s->next;
    if (s->next) s->next->prev = rest;
    s->next = rest;
    pg->root = ruda__free_tree_insert(pg->root, rest);
  }
  pg->free_bytes -= eff;
  ruda__slice_mark_used(p, s, size);
  ruda__sliced_set_max(p, pg);
  return s;
}

static ruda__slice_t *ruda__sliced_try_page(ruda__page_store_t *ps, ruda__pool_t *p,
                                            ruda__page_t *pg, uint64_t size, uint64_t eff) {
  ruda__slice_t *s = ruda__free_tree_first_fit(pg->root, eff);
  if (!s) return NULL;
  /* Make sure the split can be represented before changing anything. */
  if (s->size > eff && !ps->spare_slices) {
    ruda__slice_t *spare = ruda__slice_get(ps);
    if (!spare) return NULL;
    ruda__slice_put(ps, spare);
  }
  pg->root = ruda__free_tree_remove(pg->root, s);
  return ruda__sliced_take(ps, p, pg, s, size, eff);
}

ruda__slice_t *ruda__sliced_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                        uint64_t size) {
  uint64_t eff = size + ruda__padding(size, p->alignment);
  const uint64_t *mx = p->page_max;
  for (uint32_t i = 0, n = p->npages; i < n; i++) {
    if (mx[i] < eff) continue;
    ruda__slice_t *s = ruda__sliced_try_page(ps, p, p->pages[i], size, eff);
    if (s) return s;
  }
  return NULL;
}

/* The size of a new page for `size` (accepted by the pool). The 20% rule's
 * sizes above max_slice_size already fill most of a page: they keep it. */
static uint64_t ruda__sliced_page_size(const ruda__page_store_t *ps, const ruda__pool_t *p,
                                       uint64_t size) {
  uint64_t page = p->opt.page_size, eff = size + ruda__padding(size, p->alignment);
  if (ps->exact_pages) return eff;        /* the storage refused a whole page */
  if (ps->keep_empty_pages) return page; /* fixed-size pages */
  return size <= p->opt.max_slice_size && eff > page / 4 ? eff : page;
}

ruda_status_t ruda__sliced_alloc(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t size,
                                 ruda__slice_t **out) {
  uint64_t page_size = ruda__sliced_page_size(ps, p, size);
  ruda__slice_t *first;
  ruda_status_t st = ruda__pool_page_with_slice(ps, p, page_size, size, &first);
  if (st) return st;
  ruda__page_t *pg = first->page;
  pg->first = first;
  pg->free_bytes = page_size;
  pg->root = ruda__free_tree_insert(NULL, first);
  ruda__sliced_set_max(p, pg);
  *out = ruda__sliced_try_page(ps, p, pg, size, size + ruda__padding(size, p->alignment));
  if (!*out) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  return NULL;
}

static void ruda__sliced_unlink(ruda__page_t *pg, ruda__slice_t *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    pg->first = s->next;
  if (s->next) s->next->prev = s->prev;
}

void ruda__sliced_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s) {
  ruda__page_t *pg = s->page;
  ruda__slice_mark_free(p, s);
  if (pg->used_slices == 0) pg->empty_since = ps->page_allocs;
  /* A free slice covers its padding too. */
  s->size += s->padding;
  s->padding = 0;
  pg->free_bytes += s->size;
  ruda__slice_t *prev = s->prev, *next = s->next;
  if (prev && !prev->used) {
    pg->root = ruda__free_tree_remove(pg->root, prev);
    prev->size += s->size;
    ruda__sliced_unlink(pg, s);
    ruda__slice_put(ps, s);
    s = prev;
  }
  if (next && !next->used) {
    pg->root = ruda__free_tree_remove(pg->root, next);
    s->size += next->size;
    ruda__sliced_unlink(pg, next);
    ruda__slice_put(ps, next);
  }
  if (s->size == 0 && (s->prev || s->next)) {
    /* An empty slice between two used ones covers nothing. */
    ruda__sliced_unlink(pg, s);
    ruda__slice_put(ps, s);
  } else {
    pg->root = ruda__free_tree_insert(pg->root, s);
  }
  ruda__sliced_set_max(p, pg);
}
