/* Pages and slices (pool_page.h): slice records, page creation and release
 * through the storage, and ruda's bounded reclaim before a new page. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "memory/pool_page.h"

/* ---- Slice records ---- */

ruda__slice_t *ruda__slice_get(ruda__page_store_t *ps) {
  ruda__slice_t *s = ps->spare_slices;
  if (s) {
    ps->spare_slices = s->next;
  } else {
    s = ruda__malloc(sizeof *s);
    if (!s) return NULL;
  }
  memset(s, 0, sizeof *s);
  return s;
}

void ruda__slice_put(ruda__page_store_t *ps, ruda__slice_t *s) {
  s->next = ps->spare_slices;
  ps->spare_slices = s;
}

/* ---- Pages ---- */

/* Bounded reclaim (unless keep_empty_pages, which keeps every page until an
 * explicit cleanup): before any pool takes a new page from the storage, the
 * empty pages of the sliced pools go back to it, flushed so that the
 * storage can hand their bytes out again. Otherwise the manager holds the
 * sum of every pool's own high-water mark. A page that became empty since
 * the previous page allocation is spared this once: when the live set
 * moves between pools (a few sizes reserved and released in turn), freeing
 * a page that was just emptied only makes its pool take a new one at its
 * next reservation, so every other reservation would cost the storage an
 * allocation and a deallocation. Spared pages go at the next page
 * allocation if still empty, so what a manager holds beyond its live set
 * is at most the pages emptied between two page allocations. Near the
 * storage's limit (the new page would not fit beside what the store
 * holds), nothing is spared. Pools count their empty pages, so with none
 * this is a loop over at most RUDA_MAX_POOLS counters, and it runs only
 * when a page is allocated. Exclusive pages keep their free-count ageing
 * and persistent slices are kept on purpose, so neither is touched. */
static void ruda__pool_reclaim_pages(ruda__page_store_t *ps, ruda__pool_t *p, bool spare) {
  uint32_t j = 0;
  for (uint32_t i = 0; i < p->npages; i++) {
    ruda__page_t *pg = p->pages[i];
    if (pg->used_slices == 0 && !(spare && pg->empty_since >= ps->page_allocs))
      ruda__pool_page_free(ps, p, pg);
    else
      ruda__pool_keep_page(p, pg, &j);
  }
  p->npages = j;
}

void ruda__pool_free_empty_pages(ruda__page_store_t *ps, ruda__pool_t *p) {
  ruda__pool_reclaim_pages(ps, p, false);
}

static void ruda__page_store_reclaim(ruda__page_store_t *ps, uint64_t size) {
  if (ps->keep_empty_pages) return;
  bool spare = true;
  if (ps->storage.limit) {
    uint64_t held = 0;
    for (uint32_t i = 0; i < ps->npools; i++) held += ps->pools[i].usage.bytes_reserved;
    spare = held <= ps->storage.limit && size <= ps->storage.limit - held;
  }
  bool freed = false;
  for (uint32_t i = 0; i < ps->npools; i++) {
    ruda__pool_t *p = &ps->pools[i];
    if (p->empty_pages == 0 || p->opt.kind != RUDA_POOL_SLICED) continue;
    uint32_t before = p->npages;
    ruda__pool_reclaim_pages(ps, p, spare);
    freed = freed || p->npages != before;
  }
  if (freed) ruda__page_store_flush(ps);
}

ruda_status_t ruda__pool_page_new(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t size,
                                  ruda__page_t **out) {
  if (p->npages == p->cap) {
    uint32_t cap = p->cap ? p->cap * 2 : 8;
    ruda__page_t **np = ruda__realloc(p->pages, cap * sizeof *np);
    if (!np) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
    p->pages = np;
    uint64_t *nm = ruda__realloc(p->page_max, cap * sizeof *nm);
    if (!nm) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
    p->page_max = nm;
    p->cap = cap;
  }
  ruda__page_t *pg = ruda__calloc(1, sizeof *pg);
  if (!pg) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda__page_store_reclaim(ps, size);
  ruda_status_t st = ps->storage.vt->alloc(ps->storage.self, size, &pg->storage);
  if (st) {
    ps->storage_refused = true;
    ruda__free(pg);
    return st;
  }
  pg->index = p->npages;
  pg->pool = p->index;
  pg->id = p->next_page_id++;
  pg->empty_since = ++ps->page_allocs;
  p->pages[p->npages] = pg;
  p->page_max[p->npages] = 0;
  p->npages++;
  p->empty_pages++;
  p->usage.bytes_reserved += size;
  *out = pg;
  return NULL;
}

ruda_status_t ruda__pool_page_with_slice(ruda__page_store_t *ps, ruda__pool_t *p,
                                         uint64_t page_size, uint64_t size, ruda__slice_t **s) {
  *s = ruda__slice_get(ps);
  if (!*s) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda__page_t *pg;
  ruda_status_t st = ruda__pool_page_new(ps, p, page_size, &pg);
  if (st) {
    ruda__slice_put(ps, *s);
    *s = NULL;
    return st;
  }
  (*s)->page = pg;
  (*s)->offset = 0;
  (*s)->size = page_size;
  (*s)->padding = 0;
  (*s)->used = false;
  (*s)->memory = NULL;
  (*s)->prev = (*s)->next = NULL;
  return NULL;
}

void ruda__pool_page_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__page_t *pg) {
  for (ruda__slice_t *s = pg->first, *n; s; s = n) {
    n = s->next;
    ruda__slice_put(ps, s);
  }
  if (pg->slice) ruda__slice_put(ps, pg->slice);
  p->usage.bytes_reserved -= pg->storage.size;
  p->empty_pages--;
  ps->storage.vt->dealloc(ps->storage.self, &pg->storage);
  ruda__free(pg);
}

void ruda__page_store_destroy(ruda__page_store_t *ps) {
  ruda__page_store_flush(ps);
  ps->storage.vt->destroy(ps->storage.self);
  ruda__slice_t *s = ps->spare_slices;
  while (s) {
    ruda__slice_t *n = s->next;
    ruda__free(s);
    s = n;
  }
  ps->spare_slices = NULL;
}
