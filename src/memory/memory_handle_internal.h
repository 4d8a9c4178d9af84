/* The descriptor's own fields (struct ruda_memory), for the memory layer
 * only: memory_handle.c, which owns descriptors, and the manager, which
 * binds them to slices.
 *
 * Descriptors live in a process-wide table (memory_handle.c) of slabs that
 * are never freed: a handle names its descriptor by slot and generation,
 * so reading a descriptor through a stale handle reads a live object whose
 * generation no longer matches, never freed memory. A slot is recycled with
 * its generation bumped once nothing references it.
 *
 * The state word. Everything that decides whether a descriptor is alive
 * sits in one atomic 64-bit word, changed only by compare-and-swap:
 *   bits 32..63  generation of the slot (>= 1 while in use)
 *   bit  31      RUDA__MEMORY_BOUND: a pool slice holds the descriptor
 *   bit  30      RUDA__MEMORY_CACHED: the descriptor sits in a way of the
 *                device's reuse cache (reuse_cache.h), free or in use
 *   bits  0..29  references: handles + bindings (+ 1 for the pool's slice)
 * A user retain succeeds only while the generation is the handle's and a
 * user reference is left (count > 1 when bound, > 0 when not), so a stale id
 * can never retain a recycled descriptor, nor revive one whose last user
 * reference is gone but whose slice the device has not taken back yet.
 *
 * How a slice is known to be free. A user releases handles on any thread
 * and never calls into the manager, so the manager cannot learn about frees
 * synchronously. Instead, a bound descriptor points at the inbox of the
 * manager holding its slice (a lock-free Treiber stack the manager owns),
 * and the release that leaves exactly "BOUND + 1" (only the pool's own
 * reference) pushes the descriptor onto it, here in the handle layer.
 * Because the flag and the pool's count are added and removed in one atomic
 * operation, exactly one release per binding sees that value, even when it
 * races with the bind itself. The device thread takes the inbox at the
 * start of every manager call, drops the pool's reference (which recycles
 * the descriptor) and gives the slice back to its pool. A descriptor in the
 * reuse cache (CACHED) is not pushed: its release leaves it free in the
 * cache, and it reaches the inbox when the cache lets it go.
 */
#ifndef RUDA_MEMORY_HANDLE_INTERNAL_H
#define RUDA_MEMORY_HANDLE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory/memory_handle.h"

#define RUDA__MEMORY_BOUND (1ull << 31)
#define RUDA__MEMORY_CACHED (1ull << 30)
#define RUDA__MEMORY_COUNT_MASK (RUDA__MEMORY_CACHED - 1)
#define RUDA__MEMORY_GEN(state) ((uint32_t)((state) >> 32))
#define RUDA__MEMORY_COUNT(state) ((state) & RUDA__MEMORY_COUNT_MASK)

/* Where the binding is, in the manager's terms (written by the manager on
 * the device thread; the handle layer only clears it). */
typedef struct ruda__memory_location {
  uint32_t pool;  /* index in the manager's pools; npools = persistent */
  uint32_t page;  /* id of the page inside its pool (stable, not an index) */
  uint32_t slice; /* slot of the slice in the manager's slot table */
  uint8_t init;   /* 0: unbound */
} ruda__memory_location_t;

/* A manager's inbox of descriptors whose slice became free (see above).
 * Pushed on any thread by the release that leaves only the pool's
 * reference; taken whole by the manager on its device thread. */
typedef struct ruda__memory_inbox {
  _Atomic(ruda_memory_t *) head; /* linked through freed_next */
  /* The device's reuse cache (reuse_cache.h), where releases on any
   * thread put the descriptors of this manager instead of pushing them
   * here; NULL: none, or not now (the manager is in Persistent mode).
   * Written by the manager, read by releases. */
  _Atomic(ruda__memory_reuse_t *) reuse;
  uint32_t reuse_set; /* the set of the manager's stream */
} ruda__memory_inbox_t;

struct ruda_memory {
  _Atomic uint64_t state;       /* generation | BOUND | references (see above) */
  _Atomic uint32_t handle_refs; /* user handles (bindings and the pool not counted) */
  _Atomic uint32_t free_next;   /* table free list: next slot + 1 (0: end) */
  /* What the handles of this generation were made for, written before the
   * id is handed out; atomics only so that a stale reader on another thread
   * is not a data race. */
  _Atomic uint64_t size;
  _Atomic uint64_t stream;
  _Atomic uint64_t device;      /* RUDA__DEVICE_SET | type << 16 | index; 0: none */
  _Atomic uint32_t flags;       /* RUDA__MEMORY_READ_ONLY; reset by ruda__memory_new */
  /* Memory ruda does not own (ruda__memory_import): called once, by the
   * release that leaves only the pool's reference, or by the manager's
   * destroy; taken by exchange so that exactly one of them calls it. */
  _Atomic(void (*)(void *)) ext_release;
  void *ext_ctx;
  uint32_t slot;                /* own slot in the table (constant) */
  /* The inbox of the manager holding the binding, which is also how a
   * manager recognises its own descriptors; NULL while unbound. Stored with
   * release ordering after `loc` is written (device thread only). */
  _Atomic(ruda__memory_inbox_t *) owner;
  struct ruda_memory *freed_next; /* inbox link */
  ruda__memory_location_t loc;    /* device thread only */
};

#define RUDA__DEVICE_SET (1ull << 32)
static inline uint64_t ruda__device_pack(ruda_device_id_t d) {
  return RUDA__DEVICE_SET | (uint64_t)d.type_id << 16 | d.index_id;
}

/* The generation of a live descriptor (the caller holds a reference). */
static inline uint32_t ruda__memory_gen(const ruda_memory_t *m) {
  return RUDA__MEMORY_GEN(atomic_load_explicit(&((ruda_memory_t *)m)->state,
                                               memory_order_relaxed));
}

/* Hands imported memory back to its producer, once (the first caller
 * only). */
static inline void ruda__memory_ext_release(ruda_memory_t *m) {
  void (*fn)(void *) = atomic_exchange_explicit(&m->ext_release, NULL, memory_order_acq_rel);
  if (fn) fn(m->ext_ctx);
}

/* The pool's reference (device thread): one handle reference plus the
 * BOUND flag. Release frees the descriptor when nothing else holds it. */
void ruda__memory_pool_retain(ruda_memory_t *m);
void ruda__memory_pool_release(ruda_memory_t *m);

static inline void ruda__memory_inbox_init(ruda__memory_inbox_t *in) {
  atomic_init(&in->head, NULL);
  atomic_init(&in->reuse, NULL);
  in->reuse_set = 0;
}

/* Takes the manager's descriptors out of the reuse cache into its inbox
 * (no-op without a cache), so that the next take sees their frees. Its
 * device thread only. Returns how many. */
uint32_t ruda__memory_inbox_evict(ruda__memory_inbox_t *in);
/* Switches the inbox's reuse cache (NULL: off). Switching it off takes the
 * manager's descriptors out of the old cache into the inbox. Its device
 * thread only. */
void ruda__memory_inbox_set_reuse(ruda__memory_inbox_t *in, ruda__memory_reuse_t *rc);
/* Whether the reuse cache holds descriptors of the inbox's manager. */
bool ruda__memory_inbox_has_cached(const ruda__memory_inbox_t *in);

/* Takes every descriptor pushed so far (NULL: none), linked through
 * freed_next. The inbox's owner only (its device thread). */
static inline ruda_memory_t *ruda__memory_inbox_take(ruda__memory_inbox_t *in) {
  if (!atomic_load_explicit(&in->head, memory_order_relaxed)) return NULL;
  return atomic_exchange_explicit(&in->head, NULL, memory_order_acquire);
}

#endif
