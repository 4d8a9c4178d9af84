/* ExclusiveMemoryPool: one allocation per page, pages sized by a running
 * average of the requests, freed by a periodic free-count check. */
#include <stdlib.h>

#include "memory/exclusive_pool.h"
#include "memory/pool_page.h"

ruda__slice_t *ruda__exclusive_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                           uint64_t size) {
  (void)ps;
  p->cur_avg = 0.99 * p->cur_avg + 0.01 * (double)size;
  if (p->empty_pages == 0) return NULL;
  ruda__page_t *best = NULL;
  for (uint32_t i = 0; i < p->npages; i++) {
    ruda__page_t *pg = p->pages[i];
    if (pg->slice->used || pg->storage.size < size) continue;
    if (!best || pg->free_count < best->free_count) {
      best = pg;
      if (best->free_count == 0) break;
    }
  }
  if (!best) return NULL;
  if (best->free_count > 0) best->free_count--;
  ruda__slice_mark_used(p, best->slice, size);
  return best->slice;
}

ruda_status_t ruda__exclusive_alloc(ruda__page_store_t *ps, ruda__pool_t *p,
                                    uint64_t size, ruda__slice_t **out) {
  if (size > p->opt.max_alloc_size) return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, size);
  double avg = p->cur_avg;
  uint64_t want = avg > (double)size ? (uint64_t)avg : size;
  if (want > p->opt.max_alloc_size) want = p->opt.max_alloc_size;
  /* After a refusal of the storage, a page of the request's own size. */
  uint64_t alloc_size = ruda__round_up(ps->exact_pages ? size : want, p->alignment);
  ruda__slice_t *s;
  ruda_status_t st = ruda__pool_page_with_slice(ps, p, alloc_size, size, &s);
  if (st) return st;
  s->page->slice = s;
  s->page->free_count = 4;
  ruda__slice_mark_used(p, s, size);
  *out = s;
  return NULL;
}

void ruda__exclusive_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s) {
  (void)ps;
  ruda__slice_mark_free(p, s);
}

void ruda__exclusive_cleanup(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t alloc_nr,
                             bool explicit_) {
  uint64_t period = p->opt.dealloc_period / 5;
  if (!explicit_ && alloc_nr - p->last_check < period) return;
  p->last_check = alloc_nr;
  uint32_t j = 0;
  for (uint32_t i = 0; i < p->npages; i++) {
    ruda__page_t *pg = p->pages[i];
    if (!pg->slice->used) {
      pg->free_count++;
      if (pg->free_count >= 5 || explicit_) {
        ruda__pool_page_free(ps, p, pg);
        continue;
      }
    }
    ruda__pool_keep_page(p, pg, &j);
  }
  p->npages = j;
}
