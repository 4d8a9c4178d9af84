/* The reuse cache's ways and the CACHED protocol (see reuse_cache.h). */
#include <string.h>

#include "base/alloc.h"
#include "memory/reuse_cache.h"

static _Atomic uint64_t ruda__reuse_epochs;

ruda__memory_reuse_t *ruda__reuse_cache_new(void) {
  ruda__memory_reuse_t *rc = ruda__aligned_alloc(64, sizeof *rc);
  if (!rc) return NULL;
  for (uint32_t s = 0; s < RUDA__REUSE_SETS; s++)
    for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) {
      atomic_init(&rc->set[s].way[w], NULL);
      atomic_init(&rc->set[s].size[w], 0);
    }
  rc->epoch = atomic_fetch_add_explicit(&ruda__reuse_epochs, 1, memory_order_relaxed) + 1;
  atomic_init(&rc->local_on, ruda__fence_heavy_ready());
  atomic_init(&rc->locals, NULL);
  if (pthread_mutex_init(&rc->lock, NULL) != 0) {
    ruda__free(rc);
    return NULL;
  }
  return rc;
}

void ruda__reuse_cache_set_local(ruda__memory_reuse_t *rc, bool on) {
  atomic_store_explicit(&rc->local_on, on && ruda__fence_heavy_ready(), memory_order_relaxed);
}

void ruda__reuse_cache_free(ruda__memory_reuse_t *rc) {
  if (!rc) return;
  ruda__reuse_local_free_all(rc);
  pthread_mutex_destroy(&rc->lock);
  ruda__free(rc);
}

/* `m` was taken out of its way by the caller: clears CACHED. Returns `m`
 * when it was free (it is the caller's now), NULL when it is in use (its
 * last release will see CACHED clear). */
static ruda_memory_t *ruda__reuse_settle(ruda_memory_t *m) {
  uint64_t s = atomic_load_explicit(&m->state, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&m->state, &s, s & ~RUDA__MEMORY_CACHED,
                                                memory_order_acq_rel, memory_order_relaxed)) {
  }
  return RUDA__MEMORY_COUNT(s) == 1 ? m : NULL;
}

ruda_memory_t *ruda__reuse_put(ruda__memory_reuse_t *rc, uint32_t set, ruda_memory_t *m) {
  ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  uint64_t size = ruda__entry_size(m);
  uint32_t home = ruda__reuse_home(size);
  /* Ours and in no way yet: no take can see it before the way is written,
   * and no retain succeeds on a descriptor with one reference. */
  uint64_t s = atomic_load_explicit(&m->state, memory_order_relaxed);
  atomic_store_explicit(&m->state, s | RUDA__MEMORY_CACHED, memory_order_relaxed);
  for (uint32_t i = 0; i < RUDA__REUSE_WAYS; i++) {
    uint32_t w = (home + i) % RUDA__REUSE_WAYS;
    ruda_memory_t *none = NULL;
    if (atomic_load_explicit(&st->way[w], memory_order_relaxed) == NULL &&
        atomic_compare_exchange_strong_explicit(&st->way[w], &none, m, memory_order_release,
                                                memory_order_relaxed)) {
      atomic_store_explicit(&st->size[w], size, memory_order_relaxed);
      return NULL;
    }
  }
  /* Full: the home way, so that a loop over more sizes than ways keeps
   * most of them. */
  ruda_memory_t *out = atomic_exchange_explicit(&st->way[home], m, memory_order_acq_rel);
  atomic_store_explicit(&st->size[home], size, memory_order_relaxed);
  return out ? ruda__reuse_settle(out) : NULL;
}

uint32_t ruda__reuse_evict(ruda__memory_reuse_t *rc, uint32_t set,
                           const ruda__memory_inbox_t *owner,
                           void (*give)(ruda_memory_t *m, void *ctx), void *ctx) {
  ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  uint32_t n = 0;
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) {
    ruda_memory_t *m = atomic_load_explicit(&st->way[w], memory_order_relaxed);
    if (m == NULL || atomic_load_explicit(&m->owner, memory_order_relaxed) != owner) continue;
    if (!atomic_compare_exchange_strong_explicit(&st->way[w], &m, NULL, memory_order_acq_rel,
                                                 memory_order_relaxed))
      continue;
    /* Out of the cache and settled; should the way have been refilled
     * with another manager's descriptor meanwhile, that one goes to its
     * own manager (give reads the owner). */
    if (ruda__reuse_settle(m)) {
      give(m, ctx);
      n++;
    }
  }
  return n;
}

bool ruda__reuse_holds(const ruda__memory_reuse_t *rc, uint32_t set,
                       const ruda__memory_inbox_t *owner) {
  const ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++) {
    ruda_memory_t *m =
        atomic_load_explicit((_Atomic(ruda_memory_t *) *)&st->way[w], memory_order_acquire);
    if (m == NULL || atomic_load_explicit(&m->owner, memory_order_relaxed) != owner) continue;
    if (RUDA__MEMORY_COUNT(atomic_load_explicit(&m->state, memory_order_relaxed)) == 1)
      return true;
  }
  return false;
}
