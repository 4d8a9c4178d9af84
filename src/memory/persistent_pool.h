/* The persistent pool (persistent_pool.c): exact-size buckets, one storage
 * allocation per slice, freed only by an explicit cleanup. try_reserve
 * returns NULL when no free slice of the effective size is left; alloc
 * makes one. */
#ifndef RUDA_MEMORY_PERSISTENT_POOL_H
#define RUDA_MEMORY_PERSISTENT_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/pool_page.h"

ruda__slice_t *ruda__persistent_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                            uint64_t size);
/* Whether a bucket for the effective size of `size` exists. */
bool ruda__persistent_has_size(const ruda__pool_t *p, uint64_t size);
ruda_status_t ruda__persistent_alloc(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t size,
                                     ruda__slice_t **out);
void ruda__persistent_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s);
/* Frees every free slice; buckets left empty disappear. */
void ruda__persistent_cleanup(ruda__page_store_t *ps, ruda__pool_t *p);
/* Frees the bucket table (the pages are the caller's). */
void ruda__persistent_deinit(ruda__pool_t *p);

#endif
