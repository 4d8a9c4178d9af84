/* The reuse cache: released slices kept for the next reservation of the
 * same size on the same stream, taken on the caller's thread.
 *
 * A reservation through the manager costs a descriptor from the table, the
 * device lock, a stream lookup, a pool search, the bind, and, at the
 * release, a push onto the manager's inbox that the next reservation
 * drains. Programs that allocate in a loop ask for the same few sizes
 * again and again, so each device keeps a small cache of bound
 * descriptors whose slice became free: the release that leaves only the
 * pool's reference puts the descriptor here instead of into the inbox, and
 * the next ruda_client_empty of that size on that stream takes it back
 * with a new generation, without the device (docs/memory.md, "The reuse
 * cache").
 *
 * The cache is 64 sets of 8 ways of descriptor pointers; a stream's entries
 * go to the set its id hashes to (one cache line per set, so threads on
 * different streams do not share lines). A way is changed only by
 * compare-and-swap or exchange, and a descriptor is in at most one way:
 * whoever takes it out of its way owns it. While cached, a descriptor is
 * bound, its state is (generation, BOUND, 1) and nothing else holds it.
 *
 * This file only moves pointers; memory_handle.c makes the state changes
 * and the manager takes its entries back (eviction) before it would need
 * a new page, and when usage, cleanup or destroy must see every free.
 * Thread-safe: any thread puts, takes and evicts.
 */
#ifndef RUDA_MEMORY_REUSE_CACHE_H
#define RUDA_MEMORY_REUSE_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory/memory_handle_internal.h"

#define RUDA__REUSE_SETS 64u
#define RUDA__REUSE_WAYS 8u

typedef struct ruda__reuse_set {
  _Atomic(ruda_memory_t *) way[RUDA__REUSE_WAYS];
} ruda__reuse_set_t;

struct ruda__memory_reuse {
  ruda__reuse_set_t set[RUDA__REUSE_SETS];
};

/* ruda__reuse_cache_new and _free are declared in memory_handle.h, for
 * the layers above. */

/* The set of stream `stream`. */
static inline uint32_t ruda__reuse_set_of(uint64_t stream) {
  return (uint32_t)((stream * 0x9E3779B97F4A7C15ull) >> 58);
}

/* Puts `m` into an empty way of the set; when every way is taken, into
 * the way its size picks, and returns the descriptor it displaced (the
 * caller hands that one to its manager), else NULL. */
ruda_memory_t *ruda__reuse_put(ruda__memory_reuse_t *rc, uint32_t set, ruda_memory_t *m);

/* Takes a cached descriptor of exactly `size` bytes on `stream` out of the
 * set, or NULL. When a way changed under the look (its descriptor was
 * taken, freed and cached again for another size), the descriptor taken
 * is not the one asked for: it is returned in *stray for the caller to
 * hand to its manager. */
ruda_memory_t *ruda__reuse_take(ruda__memory_reuse_t *rc, uint32_t set, uint64_t size,
                                uint64_t stream, ruda_memory_t **stray);

/* Takes the set's descriptors bound in the manager of `owner` out of the
 * cache, calling give(m, ctx) for each. Returns how many. */
uint32_t ruda__reuse_evict(ruda__memory_reuse_t *rc, uint32_t set,
                           const ruda__memory_inbox_t *owner,
                           void (*give)(ruda_memory_t *m, void *ctx), void *ctx);

/* Whether the set holds a descriptor of the manager of `owner`. */
bool ruda__reuse_holds(const ruda__memory_reuse_t *rc, uint32_t set,
                       const ruda__memory_inbox_t *owner);

#endif
