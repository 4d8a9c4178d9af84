/* The reuse cache's ways (see reuse_cache.h). */
#include <string.h>

#include "base/alloc.h"
#include "memory/reuse_cache.h"

ruda__memory_reuse_t *ruda__reuse_cache_new(void) {
  ruda__memory_reuse_t *rc = ruda__aligned_alloc(64, sizeof *rc);
  if (!rc) return NULL;
  for (uint32_t s = 0; s < RUDA__REUSE_SETS; s++)
    for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) atomic_init(&rc->set[s].way[w], NULL);
  return rc;
}

void ruda__reuse_cache_free(ruda__memory_reuse_t *rc) { ruda__free(rc); }

static inline uint64_t ruda__entry_size(ruda_memory_t *m) {
  return atomic_load_explicit(&m->size, memory_order_relaxed);
}

ruda_memory_t *ruda__reuse_put(ruda__memory_reuse_t *rc, uint32_t set, ruda_memory_t *m) {
  ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) {
    ruda_memory_t *none = NULL;
    if (atomic_load_explicit(&st->way[w], memory_order_relaxed) == NULL &&
        atomic_compare_exchange_strong_explicit(&st->way[w], &none, m, memory_order_release,
                                                memory_order_relaxed))
      return NULL;
  }
  /* Full: the way picked by the size, so that a loop over more sizes than
   * ways keeps most of them. */
  uint32_t w = (uint32_t)((ruda__entry_size(m) * 0x9E3779B97F4A7C15ull) >> 61);
  return atomic_exchange_explicit(&st->way[w], m, memory_order_acq_rel);
}

ruda_memory_t *ruda__reuse_take(ruda__memory_reuse_t *rc, uint32_t set, uint64_t size,
                                uint64_t stream, ruda_memory_t **stray) {
  ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  *stray = NULL;
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) {
    ruda_memory_t *m = atomic_load_explicit(&st->way[w], memory_order_relaxed);
    if (m == NULL || ruda__entry_size(m) != size ||
        atomic_load_explicit(&m->stream, memory_order_relaxed) != stream)
      continue;
    if (!atomic_compare_exchange_strong_explicit(&st->way[w], &m, NULL, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    /* Ours now; its fields are stable. Check them again: between the look
     * and the exchange the way may have been emptied and filled anew. */
    if (ruda__entry_size(m) == size &&
        atomic_load_explicit(&m->stream, memory_order_relaxed) == stream)
      return m;
    *stray = m;
    return NULL;
  }
  return NULL;
}

uint32_t ruda__reuse_evict(ruda__memory_reuse_t *rc, uint32_t set,
                           const ruda__memory_inbox_t *owner,
                           void (*give)(ruda_memory_t *m, void *ctx), void *ctx) {
  ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  uint32_t n = 0;
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) {
    ruda_memory_t *m = atomic_load_explicit(&st->way[w], memory_order_relaxed);
    if (m == NULL || atomic_load_explicit(&m->owner, memory_order_relaxed) != owner) continue;
    if (!atomic_compare_exchange_strong_explicit(&st->way[w], &m, NULL, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    if (atomic_load_explicit(&m->owner, memory_order_relaxed) != owner) {
      /* Refilled with another manager's descriptor meanwhile: put it back
       * (whatever that displaces goes to its own manager). */
      ruda_memory_t *d = ruda__reuse_put(rc, set, m);
      if (d) give(d, ctx);
      continue;
    }
    give(m, ctx);
    n++;
  }
  return n;
}

bool ruda__reuse_holds(const ruda__memory_reuse_t *rc, uint32_t set,
                       const ruda__memory_inbox_t *owner) {
  const ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) {
    ruda_memory_t *m =
        atomic_load_explicit((_Atomic(ruda_memory_t *) *)&st->way[w], memory_order_relaxed);
    if (m && atomic_load_explicit(&m->owner, memory_order_relaxed) == owner) return true;
  }
  return false;
}
