/* Sliced pages (sliced_pool.c): pages of page_size carved into slices,
 * first fit, split, coalesce. Pages and slice records come from the page
 * store (pool_page.h). try_reserve returns NULL when nothing fits; alloc
 * makes a page. */
#ifndef RUDA_MEMORY_SLICED_POOL_H
#define RUDA_MEMORY_SLICED_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/pool_page.h"

/* Whether the pool takes `size`: at most max_slice_size, or at most
 * page_size with under 20% of the page wasted. */
bool ruda__sliced_accept(const ruda__pool_t *p, uint64_t size);
ruda__slice_t *ruda__sliced_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                        uint64_t size);
ruda_status_t ruda__sliced_alloc(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t size,
                                 ruda__slice_t **out);
/* Frees `s` and coalesces it with its free neighbours. */
void ruda__sliced_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s);

#endif
