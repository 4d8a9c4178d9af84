/* PersistentPool: exact-size buckets, one storage allocation per slice,
 * freed only by an explicit cleanup. Buckets live in an open-addressing
 * table keyed by effective size (size + padding). alloc and try_reserve
 * both compute the key with ruda__persistent_key(), so a reservation always
 * looks in the bucket that alloc filled for the same request. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "memory/persistent_pool.h"
#include "memory/pool_page.h"

struct ruda__bucket {
  uint64_t key;            /* effective size; 0 = empty entry (keys are > 0 except size 0) */
  bool occupied;
  ruda__slice_t *free;     /* free slices, linked through next */
  uint64_t count;          /* slices of this size (free or used) */
};

/* The effective size, or 0 when it does not fit in 64 bits. 0 is never a
 * key otherwise (size 0 has key 0 too, but only sizes near 2^64 wrap, and
 * those are refused before they reach a bucket). */
static uint64_t ruda__persistent_key(const ruda__pool_t *p, uint64_t size) {
  uint64_t pad = ruda__padding(size, p->alignment);
  return size > UINT64_MAX - pad ? 0 : size + pad;
}

/* Sizes the pool can hold at all: a key that does not wrap, at most the
 * pool's max_alloc_size. Before this check a request of UINT64_MAX wrapped
 * to key 0 and was served the free slice of a 0-byte reservation. */
static bool ruda__persistent_fits(const ruda__pool_t *p, uint64_t size) {
  return size <= p->opt.max_alloc_size &&
         size <= UINT64_MAX - ruda__padding(size, p->alignment);
}

static uint64_t ruda__hash64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static ruda__bucket_t *ruda__bucket_find(const ruda__pool_t *p, uint64_t key) {
  if (!p->bucket_cap) return NULL;
  uint32_t mask = p->bucket_cap - 1;
  for (uint32_t i = (uint32_t)ruda__hash64(key) & mask;; i = (i + 1) & mask) {
    ruda__bucket_t *b = &p->buckets[i];
    if (!b->occupied) return NULL;
    if (b->key == key) return b;
  }
}

static bool ruda__bucket_table_grow(ruda__pool_t *p, uint32_t cap);

/* Finds or creates the bucket; NULL when memory is exhausted. */
static ruda__bucket_t *ruda__bucket_get(ruda__pool_t *p, uint64_t key) {
  ruda__bucket_t *b = ruda__bucket_find(p, key);
  if (b) return b;
  if ((p->nbuckets + 1) * 4 > p->bucket_cap * 3 &&
      !ruda__bucket_table_grow(p, p->bucket_cap ? p->bucket_cap * 2 : 16))
    return NULL;
  uint32_t mask = p->bucket_cap - 1;
  uint32_t i = (uint32_t)ruda__hash64(key) & mask;
  while (p->buckets[i].occupied) i = (i + 1) & mask;
  b = &p->buckets[i];
  memset(b, 0, sizeof *b);
  b->occupied = true;
  b->key = key;
  p->nbuckets++;
  return b;
}

static bool ruda__bucket_table_grow(ruda__pool_t *p, uint32_t cap) {
  ruda__bucket_t *nb = ruda__calloc(cap, sizeof *nb);
  if (!nb) return false;
  ruda__bucket_t *old = p->buckets;
  uint32_t old_cap = p->bucket_cap;
  p->buckets = nb;
  p->bucket_cap = cap;
  p->nbuckets = 0;
  for (uint32_t i = 0; i < old_cap; i++) {
    if (!old[i].occupied) continue;
    ruda__bucket_t *b = ruda__bucket_get(p, old[i].key);
    b->free = old[i].free;
    b->count = old[i].count;
  }
  ruda__free(old);
  return true;
}

bool ruda__persistent_has_size(const ruda__pool_t *p, uint64_t size) {
  return ruda__persistent_fits(p, size) &&
         ruda__bucket_find(p, ruda__persistent_key(p, size)) != NULL;
}

ruda__slice_t *ruda__persistent_try_reserve(ruda__page_store_t *ps, ruda__pool_t *p,
                                            uint64_t size) {
  (void)ps;
  if (!ruda__persistent_fits(p, size)) return NULL;
  ruda__bucket_t *b = ruda__bucket_find(p, ruda__persistent_key(p, size));
  if (!b || !b->free) return NULL;
  ruda__slice_t *s = b->free;
  b->free = s->next;
  s->next = NULL;
  ruda__slice_mark_used(p, s, size);
  return s;
}

ruda_status_t ruda__persistent_alloc(ruda__page_store_t *ps, ruda__pool_t *p,
                                     uint64_t size, ruda__slice_t **out) {
  if (!ruda__persistent_fits(p, size)) return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, size);
  uint64_t key = ruda__persistent_key(p, size);
  ruda__slice_t *s;
  ruda_status_t st = ruda__pool_page_with_slice(ps, p, key, size, &s);
  if (st) return st;
  ruda__page_t *pg = s->page;
  /* The bucket only exists once its first slice does. */
  ruda__bucket_t *b = ruda__bucket_get(p, key);
  if (!b) {
    p->npages--;
    ruda__pool_page_free(ps, p, pg); /* no slice attached yet */
    ruda__slice_put(ps, s);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  }
  b->count++;
  pg->bucket_key = key;
  pg->slice = s;
  ruda__slice_mark_used(p, s, size);
  *out = s;
  return NULL;
}

void ruda__persistent_on_free(ruda__page_store_t *ps, ruda__pool_t *p, ruda__slice_t *s) {
  (void)ps;
  ruda__slice_mark_free(p, s);
  ruda__bucket_t *b = ruda__bucket_find(p, s->page->bucket_key);
  s->next = b->free;
  b->free = s;
}

void ruda__persistent_cleanup(ruda__page_store_t *ps, ruda__pool_t *p) {
  uint32_t j = 0;
  for (uint32_t i = 0; i < p->npages; i++) {
    ruda__page_t *pg = p->pages[i];
    if (pg->slice->used)
      ruda__pool_keep_page(p, pg, &j);
    else
      ruda__pool_page_free(ps, p, pg);
  }
  p->npages = j;
  /* Rebuild the map from the slices that are left (all used). */
  if (p->buckets) memset(p->buckets, 0, sizeof(ruda__bucket_t) * p->bucket_cap);
  p->nbuckets = 0;
  for (uint32_t i = 0; i < p->npages; i++) {
    /* The table never shrinks, so this cannot need to grow. */
    ruda__bucket_t *b = ruda__bucket_get(p, p->pages[i]->bucket_key);
    b->count++;
  }
}

void ruda__persistent_deinit(ruda__pool_t *p) {
  ruda__free(p->buckets);
  p->buckets = NULL;
  p->bucket_cap = p->nbuckets = 0;
}
