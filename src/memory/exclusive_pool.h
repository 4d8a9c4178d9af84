/* Exclusive pages (exclusive_pool.c): one allocation per page, pages sized
 * by a running average of the requests, freed by a periodic free-count
 * check. try_reserve returns NULL when no free page fits; alloc makes a
 * page. */
#ifndef RUDA_MEMORY_EXCLUSIVE_POOL_H
#define RUDA_MEMORY_EXCLUSIVE_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/pool_page.h"

ruda__slice_t *ruda__exclusive_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                           uint64_t size);
ruda_status_t ruda__exclusive_alloc(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t size,
                                    ruda__slice_t **out);
void ruda__exclusive_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s);
/* The free-count check, due every dealloc_period / 5 reservations (alloc_nr
 * counts them): each free page ages by one and goes at 5. Explicit: now,
 * and every free page goes. */
void ruda__exclusive_cleanup(ruda__page_store_t *ps, ruda__pool_t *p, uint64_t alloc_nr,
                             bool explicit_);

#endif
