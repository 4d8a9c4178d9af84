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
 * go to the set its id hashes to (two cache lines per set, so threads on
 * different streams do not share lines). A descriptor stays in its way
 * while it is reused: a take claims it there and its release frees it
 * there, each with one compare-and-swap on its state word, and the way
 * itself changes only when a descriptor comes in or leaves.
 *
 * The protocol, on the state word (memory_handle_internal.h):
 *   - In a way, a descriptor carries RUDA__MEMORY_CACHED. It is free when
 *     only the pool's reference is left: (generation, BOUND | CACHED, 1).
 *   - A take changes exactly that value to (generation + 1, BOUND | CACHED,
 *     2): the pool's reference and the caller's handle. Generations only
 *     grow, so a take that read the state before the descriptor moved on
 *     fails its compare-and-swap.
 *   - A release that leaves a CACHED descriptor free does nothing more.
 *   - A descriptor comes in free and owned by its releaser, which sets
 *     CACHED before the way is written; no take sees it before.
 *   - Whoever takes a descriptor out of its way (a displacement, an
 *     eviction) clears CACHED with a compare-and-swap. If it was free then,
 *     it is the remover's, which hands it to its manager's inbox; if it was
 *     in use (or a take wins the race), the release that frees it later
 *     finds CACHED clear and puts it back in or onto the inbox.
 * So a descriptor is in at most one way, a way's descriptor always carries
 * CACHED, and a free descriptor has exactly one owner: its way, its
 * releaser or its remover.
 *
 * Beside each way the set keeps the size of the descriptor put there, so
 * that a take compares sizes in one cache line instead of following eight
 * pointers. The size is a hint, written after the way: a take checks the
 * descriptor it claims, and a hint that lags only costs a look or a hit.
 *
 * The manager takes its entries back (eviction) before it would need a
 * new page, and when usage, cleanup or destroy must see every free.
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
  _Atomic uint64_t size[RUDA__REUSE_WAYS]; /* hint: the size of way[w]'s descriptor */
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

/* Puts `m`, free and owned by the caller (its state (generation, BOUND,
 * 1)), into an empty way of the set; when every way is taken, into the way
 * its size picks. Returns the displaced descriptor when that one was free
 * (the caller hands it to its manager), else NULL. */
ruda_memory_t *ruda__reuse_put(ruda__memory_reuse_t *rc, uint32_t set, ruda_memory_t *m);

/* Claims a free descriptor of exactly `size` bytes on `stream` in the set
 * and moves it to the next generation, with the pool's reference and one
 * more for the caller (who sets its handle count); NULL when none is. It
 * stays in its way. */
ruda_memory_t *ruda__reuse_take(ruda__memory_reuse_t *rc, uint32_t set, uint64_t size,
                                uint64_t stream);

/* Takes the set's descriptors bound in the manager of `owner` out of the
 * cache, free or in use, calling give(m, ctx) for each that was free.
 * Returns how many were free. */
uint32_t ruda__reuse_evict(ruda__memory_reuse_t *rc, uint32_t set,
                           const ruda__memory_inbox_t *owner,
                           void (*give)(ruda_memory_t *m, void *ctx), void *ctx);

/* Whether the set holds a free descriptor of the manager of `owner`. */
bool ruda__reuse_holds(const ruda__memory_reuse_t *rc, uint32_t set,
                       const ruda__memory_inbox_t *owner);

#endif
