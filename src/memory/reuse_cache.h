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
 * with a new generation, without the device (docs/design/memory.md, "The reuse
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
 * Each size has a home way (a hash of the size); puts and takes start
 * there and go round the set, so the few sizes of a loop each sit at or
 * near their home and a take usually compares one hint.
 *
 * The manager takes its entries back (eviction) before it would need a
 * new page, and when usage, cleanup or destroy must see every free.
 * Thread-safe: any thread puts, takes and evicts.
 */
#ifndef RUDA_MEMORY_REUSE_CACHE_H
#define RUDA_MEMORY_REUSE_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/sync.h"
#include "memory/memory_handle_internal.h"

#define RUDA__REUSE_SETS 64u
#define RUDA__REUSE_WAYS 8u

typedef struct ruda__reuse_set {
  _Atomic(ruda_memory_t *) way[RUDA__REUSE_WAYS];
  _Atomic uint64_t size[RUDA__REUSE_WAYS]; /* hint: the size of way[w]'s descriptor */
} ruda__reuse_set_t;

typedef struct ruda__reuse_local ruda__reuse_local_t; /* the threads' ways, below */

struct ruda__memory_reuse {
  ruda__reuse_set_t set[RUDA__REUSE_SETS];
  /* The threads' own ways (below), in front of the sets. */
  uint64_t epoch;       /* no other cache of the process has it */
  _Atomic bool local_on; /* false: no thread gets ways (no heavy fence) */
  pthread_mutex_t lock; /* attaching ways, and removers */
  _Atomic(ruda__reuse_local_t *) locals;
};

/* ruda__reuse_cache_new and _free are declared in memory_handle.h, for
 * the layers above. A new cache gives threads their own ways where the
 * heavy fence exists; this turns them off (or on again) for the threads
 * that attach from now on (tests of the shared sets). */
void ruda__reuse_cache_set_local(ruda__memory_reuse_t *rc, bool on);

/* The set of stream `stream`. */
static inline uint32_t ruda__reuse_set_of(uint64_t stream) {
  return (uint32_t)((stream * 0x9E3779B97F4A7C15ull) >> 58);
}

/* Puts `m`, free and owned by the caller (its state (generation, BOUND,
 * 1)), into the first empty way of the set from its size's home; when
 * every way is taken, into the home way. Returns the displaced
 * descriptor when that one was free (the caller hands it to its manager),
 * else NULL. */
ruda_memory_t *ruda__reuse_put(ruda__memory_reuse_t *rc, uint32_t set, ruda_memory_t *m);

static inline uint64_t ruda__entry_size(ruda_memory_t *m) {
  return atomic_load_explicit(&m->size, memory_order_relaxed);
}

/* A take leaves at most this generation: the next release may then still
 * put the descriptor into the cache or the inbox with a generation to
 * spare (memory_handle.c retires a slot at UINT32_MAX). */
#define RUDA__REUSE_LAST_GEN (UINT32_MAX - 2u)

/* The way a size is put into first, and taken from first: the sizes of
 * a loop spread over the ways, so a take usually looks at one. */
static inline uint64_t ruda__size_hash(uint64_t size) { return size * 0x9E3779B97F4A7C15ull; }
_Static_assert(RUDA__REUSE_WAYS == 8u, "ruda__reuse_home keeps the top 3 bits of the hash");
static inline uint32_t ruda__reuse_home(uint64_t size) {
  return (uint32_t)(ruda__size_hash(size) >> 61);
}

/* Claims a free descriptor of exactly `size` bytes on `stream` in the set
 * and moves it to the next generation, with the pool's reference and one
 * more for the caller (who sets its handle count); NULL when none is. It
 * stays in its way. Inline: the fast path of ruda_client_empty. */
static inline ruda_memory_t *ruda__reuse_take(ruda__memory_reuse_t *rc, uint32_t set,
                                              uint64_t size, uint64_t stream) {
  ruda__reuse_set_t *st = &rc->set[set % RUDA__REUSE_SETS];
  uint32_t home = ruda__reuse_home(size);
  for (uint32_t i = 0; i < RUDA__REUSE_WAYS; i++) {
    uint32_t w = (home + i) % RUDA__REUSE_WAYS;
    if (atomic_load_explicit(&st->size[w], memory_order_relaxed) != size) continue;
    ruda_memory_t *m = atomic_load_explicit(&st->way[w], memory_order_acquire);
    if (m == NULL) continue;
    /* The state first: while it keeps this value, size and stream are
     * this generation's, and the claim below fails if it moved on. */
    uint64_t s = atomic_load_explicit(&m->state, memory_order_acquire);
    uint32_t gen = RUDA__MEMORY_GEN(s);
    if (s != ((uint64_t)gen << 32 | RUDA__MEMORY_BOUND | RUDA__MEMORY_CACHED | 1) ||
        gen >= RUDA__REUSE_LAST_GEN || ruda__entry_size(m) != size ||
        atomic_load_explicit(&m->stream, memory_order_relaxed) != stream)
      continue;
    uint64_t ns = (uint64_t)(gen + 1) << 32 | RUDA__MEMORY_BOUND | RUDA__MEMORY_CACHED | 2;
    if (atomic_compare_exchange_strong_explicit(&m->state, &s, ns, memory_order_acq_rel,
                                                memory_order_relaxed))
      return m;
  }
  return NULL;
}

/* Takes the set's descriptors bound in the manager of `owner` out of the
 * cache, free or in use, calling give(m, ctx) for each that was free.
 * Returns how many were free. */
uint32_t ruda__reuse_evict(ruda__memory_reuse_t *rc, uint32_t set,
                           const ruda__memory_inbox_t *owner,
                           void (*give)(ruda_memory_t *m, void *ctx), void *ctx);

/* Whether the set holds a free descriptor of the manager of `owner`. */
bool ruda__reuse_holds(const ruda__memory_reuse_t *rc, uint32_t set,
                       const ruda__memory_inbox_t *owner);

/* ---- The threads' own ways ----
 *
 * Released slices a thread takes back without an atomic read-modify-write.
 *
 * A take from the device's shared sets (above) claims its
 * descriptor with a compare-and-swap, because any thread on the stream
 * may claim the same one. In a loop that reserves and releases on one
 * thread that claim is half the cost of the pair (docs/design/memory.md, "The
 * thread's ways"). So each thread that takes from a device's cache gets 8
 * ways of its own there (ruda__reuse_local_t): the release of a handle on
 * that thread puts the freed descriptor into them, and the thread's next
 * reservation of that size on that stream takes it out again, with plain
 * loads and stores on both sides.
 *
 * Ownership. A descriptor in a thread's way is free (generation, BOUND, 1)
 * and belongs to that way: nothing else writes its state word, because a
 * stale retain or release fails on a descriptor with only the pool's
 * reference, without writing. The owner thread moves descriptors in and
 * out. Anyone else who must see every free (the manager before it takes
 * a new page, usage, cleanup, destroy) is a remover, and the two meet in
 * Dekker's pattern over two words of the ways:
 *   - the owner stores busy = 1, runs a light fence (the compiler's),
 *     loads `steal`, and keeps out of its ways when it is set; it stores
 *     busy = 0 (release) when it is done with them;
 *   - a remover (under the cache's lock) stores steal = 1, runs the heavy
 *     fence (every thread of the process runs a full fence:
 *     base/sync.h), waits until busy is 0, takes out what it needs, and
 *     stores steal = 0 (release).
 * Either the owner's busy store is visible to the remover after its heavy
 * fence, and the remover waits for the owner to leave, or the owner's
 * steal load sees the remover's store, and the owner keeps out. So the
 * owner's fast path stays free of atomic read-modify-writes and of full
 * fences; removers pay a system call, and are rare. Where the heavy fence
 * does not exist (no membarrier), a cache has no thread's ways.
 *
 * Lifetime. The ways belong to the cache's list (freed with the cache)
 * and to their thread (until it exits or uses more than
 * RUDA__LOCAL_REFS devices' caches at once): a count of two references.
 * A thread finds its ways through a thread-local table keyed by the cache
 * and its epoch (a number no other cache has), so ways of a freed cache are
 * never used even when a new cache lands at the same address. Ways whose
 * thread has gone keep their descriptors for removers and are adopted by
 * the next thread that attaches to the cache.
 */

#define RUDA__LOCAL_WAYS 16u

/* The way a size is put into first and taken from first (the top bits of
 * the hash ruda__reuse_home keeps 3 of). */
_Static_assert(RUDA__LOCAL_WAYS == 16u, "ruda__local_home keeps the top 4 bits of the hash");
static inline uint32_t ruda__local_home(uint64_t size) {
  return (uint32_t)(ruda__size_hash(size) >> 60);
}
#define RUDA__LOCAL_REFS 4u

struct ruda__reuse_local {
  _Atomic uint32_t busy;  /* the owner is in its ways */
  _Atomic uint32_t steal; /* a remover is in them: the owner keeps out */
  _Atomic uint32_t refs;  /* the cache's list + the owner thread */
  bool marked;            /* a remover's mark (under the cache's lock) */
  _Atomic(ruda_memory_t *) way[RUDA__LOCAL_WAYS];
  _Atomic uint64_t size[RUDA__LOCAL_WAYS]; /* the size of way[w]'s descriptor */
  _Atomic(struct ruda__reuse_local *) next; /* the cache's list */
};

/* A thread's entry for one cache: its ways there (NULL: none, the cache
 * has them off). */
typedef struct ruda__local_ref {
  const ruda__memory_reuse_t *rc;
  uint64_t epoch;
  ruda__reuse_local_t *local;
} ruda__local_ref_t;

extern RUDA__THREAD_LOCAL ruda__local_ref_t ruda__thread_locals[RUDA__LOCAL_REFS];

/* The calling thread's entry for `rc`, NULL when it has none yet. */
static inline ruda__local_ref_t *ruda__reuse_local_ref(const ruda__memory_reuse_t *rc) {
  for (uint32_t i = 0; i < RUDA__LOCAL_REFS; i++) {
    ruda__local_ref_t *r = &ruda__thread_locals[i];
    if (r->rc == rc && r->epoch == rc->epoch) return r;
  }
  return NULL;
}

/* Makes the calling thread's entry for `rc`, adopting ways whose thread
 * has gone or making new ones; returns its ways (NULL: the cache has them
 * off, or memory is exhausted). Takes the cache's lock. */
ruda__reuse_local_t *ruda__reuse_local_attach(ruda__memory_reuse_t *rc);

static inline bool ruda__local_enter(ruda__reuse_local_t *l) {
  atomic_store_explicit(&l->busy, 1, memory_order_relaxed);
  ruda__fence_light();
  if (__builtin_expect(atomic_load_explicit(&l->steal, memory_order_acquire) != 0, 0)) {
    atomic_store_explicit(&l->busy, 0, memory_order_release);
    return false;
  }
  return true;
}

static inline void ruda__local_leave(ruda__reuse_local_t *l) {
  atomic_store_explicit(&l->busy, 0, memory_order_release);
}

/* Takes a descriptor of exactly `size` bytes on `stream` out of `l`, the
 * calling thread's ways (ruda__reuse_local_ref, or _attach on its first
 * take), and moves it to the next generation with the pool's reference
 * and one more for the caller (who sets its handle count); NULL when none
 * is. The fast path of ruda_client_empty. */
static inline ruda_memory_t *ruda__reuse_local_take_from(ruda__reuse_local_t *l, uint64_t size,
                                                         uint64_t stream) {
  if (!ruda__local_enter(l)) return NULL;
  ruda_memory_t *m = NULL;
  uint32_t home = ruda__local_home(size);
  for (uint32_t i = 0; i < RUDA__LOCAL_WAYS; i++) {
    uint32_t w = (home + i) % RUDA__LOCAL_WAYS;
    if (atomic_load_explicit(&l->size[w], memory_order_relaxed) != size) continue;
    ruda_memory_t *c = atomic_load_explicit(&l->way[w], memory_order_relaxed);
    if (c == NULL || atomic_load_explicit(&c->stream, memory_order_relaxed) != stream) continue;
    atomic_store_explicit(&l->way[w], NULL, memory_order_relaxed);
    atomic_store_explicit(&l->size[w], 0, memory_order_relaxed);
    m = c;
    break;
  }
  ruda__local_leave(l);
  if (!m) return NULL;
  /* Ours alone (see above), free, and put in below RUDA__REUSE_LAST_GEN. */
  uint32_t gen = RUDA__MEMORY_GEN(atomic_load_explicit(&m->state, memory_order_relaxed));
  atomic_store_explicit(&m->state,
                        (uint64_t)(gen + 1) << 32 | RUDA__MEMORY_BOUND | 2,
                        memory_order_release);
  return m;
}

/* Puts `m`, free, not CACHED and owned by the caller, with a generation
 * below RUDA__REUSE_LAST_GEN, into the calling thread's ways for its
 * cache `rc`: true when it went in. A descriptor it displaced from a full
 * set of ways is the caller's then (*displaced; NULL: none). False, with
 * nothing changed, when the thread has no ways there or a remover is in
 * them. */
static inline bool ruda__reuse_local_put(ruda__memory_reuse_t *rc, ruda_memory_t *m,
                                         ruda_memory_t **displaced) {
  ruda__local_ref_t *r = ruda__reuse_local_ref(rc);
  ruda__reuse_local_t *l = r ? r->local : NULL;
  *displaced = NULL;
  if (!l || !ruda__local_enter(l)) return false;
  uint64_t size = ruda__entry_size(m);
  uint32_t home = ruda__local_home(size);
  uint32_t w = home;
  for (uint32_t i = 0; i < RUDA__LOCAL_WAYS; i++) {
    uint32_t x = (home + i) % RUDA__LOCAL_WAYS;
    if (atomic_load_explicit(&l->way[x], memory_order_relaxed) == NULL) {
      w = x;
      break;
    }
  }
  *displaced = atomic_load_explicit(&l->way[w], memory_order_relaxed);
  atomic_store_explicit(&l->way[w], m, memory_order_relaxed);
  atomic_store_explicit(&l->size[w], size, memory_order_relaxed);
  ruda__local_leave(l);
  return true;
}

/* Takes the descriptors bound in the manager of `owner` out of every
 * thread's ways of `rc` (each is free), calling give(m, ctx) for each.
 * Returns how many. Takes the cache's lock; runs the heavy fence when
 * some ways hold one. */
uint32_t ruda__reuse_local_evict(ruda__memory_reuse_t *rc, const ruda__memory_inbox_t *owner,
                                 void (*give)(ruda_memory_t *m, void *ctx), void *ctx);

/* Whether some thread's ways of `rc` hold a descriptor of the manager of
 * `owner` (a hint: the owners move on meanwhile). */
bool ruda__reuse_local_holds(const ruda__memory_reuse_t *rc, const ruda__memory_inbox_t *owner);

/* Frees the cache's lists of ways (ruda__reuse_cache_free): ways whose
 * thread still holds them are freed when it lets go. */
void ruda__reuse_local_free_all(ruda__memory_reuse_t *rc);

#endif
