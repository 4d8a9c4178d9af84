/* Descriptors, the process-wide handle table, handles and bindings.
 *
 * The table. Descriptors live in slabs that are never freed: slab k holds
 * RUDA__SLAB0 << k descriptors, slots numbered on from the slabs before it,
 * so 23 slabs cover every 32-bit slot and finding a slot is a shift, a
 * count of leading zeros and an index. Slots no longer referenced go onto a
 * lock-free free list (a stack whose head carries a tag against ABA) with
 * their generation bumped; a slot whose generation would wrap is retired
 * instead, so an id names one allocation for the life of the process.
 * Slabs are published with release ordering after they are zeroed, so a
 * lookup of any 32-bit slot reads either NULL or a real descriptor.
 *
 * See memory_handle_internal.h for the state word and how frees reach a
 * manager (the inbox it installs in every descriptor it binds).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "memory/memory_handle_internal.h"
#include "memory/reuse_cache.h"
#include "ruda/memory.h"

#define RUDA__SLAB0 1024u
#define RUDA__MAX_SLABS 23u

static _Atomic(ruda_memory_t *) ruda__slabs[RUDA__MAX_SLABS];
static _Atomic uint64_t ruda__free_head; /* tag << 32 | (slot + 1); low 0: empty */
static uint64_t ruda__fresh;             /* next never used slot (under the lock) */
static pthread_mutex_t ruda__table_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint32_t ruda__id_slot(uint64_t id) { return (uint32_t)id; }
static inline uint32_t ruda__id_gen(uint64_t id) { return (uint32_t)(id >> 32); }
static inline uint64_t ruda__id_make(uint32_t slot, uint32_t gen) {
  return (uint64_t)gen << 32 | slot;
}

static inline unsigned ruda__slab_of(uint32_t slot, uint64_t *first) {
  uint64_t q = (uint64_t)(slot / RUDA__SLAB0) + 1;
  unsigned k = 63u - (unsigned)__builtin_clzll(q);
  *first = (uint64_t)RUDA__SLAB0 * ((1ull << k) - 1);
  return k;
}

/* The descriptor of `slot`, or NULL when its slab does not exist. */
static inline ruda_memory_t *ruda__memory_at(uint32_t slot) {
  uint64_t first;
  unsigned k = ruda__slab_of(slot, &first);
  if (k >= RUDA__MAX_SLABS) return NULL;
  ruda_memory_t *slab = atomic_load_explicit(&ruda__slabs[k], memory_order_acquire);
  return slab ? &slab[slot - first] : NULL;
}

/* A never used slot, creating its slab when needed; NULL when memory or
 * slots are exhausted (nothing is consumed then). */
static ruda_memory_t *ruda__memory_fresh(void) {
  ruda_memory_t *m = NULL;
  pthread_mutex_lock(&ruda__table_lock);
  uint64_t slot = ruda__fresh;
  if (slot < UINT32_MAX) {
    uint64_t first;
    unsigned k = ruda__slab_of((uint32_t)slot, &first);
    ruda_memory_t *slab = atomic_load_explicit(&ruda__slabs[k], memory_order_relaxed);
    if (!slab) {
      uint64_t n = (uint64_t)RUDA__SLAB0 << k;
      slab = ruda__calloc((size_t)n, sizeof *slab);
      if (slab) {
        for (uint64_t i = 0; i < n; i++) slab[i].slot = (uint32_t)(first + i);
        atomic_store_explicit(&ruda__slabs[k], slab, memory_order_release);
      }
    }
    if (slab) {
      m = &slab[slot - first];
      ruda__fresh = slot + 1;
    }
  }
  pthread_mutex_unlock(&ruda__table_lock);
  return m;
}

static ruda_memory_t *ruda__memory_take(void) {
  uint64_t head = atomic_load_explicit(&ruda__free_head, memory_order_acquire);
  while ((uint32_t)head != 0) {
    ruda_memory_t *m = ruda__memory_at((uint32_t)head - 1);
    if (!m) break; /* cannot happen: only slots of published slabs are listed */
    uint32_t next = atomic_load_explicit(&m->free_next, memory_order_relaxed);
    uint64_t nh = ((head >> 32) + 1) << 32 | next;
    if (atomic_compare_exchange_weak_explicit(&ruda__free_head, &head, nh,
                                              memory_order_acquire, memory_order_acquire))
      return m;
  }
  return ruda__memory_fresh();
}

/* Puts a slot whose state already carries its next generation (count 0)
 * back on the free list. */
static void ruda__memory_recycle(ruda_memory_t *m, uint32_t gen) {
  if (gen == UINT32_MAX) return; /* retired: its ids would repeat */
  uint64_t head = atomic_load_explicit(&ruda__free_head, memory_order_relaxed);
  uint64_t nh;
  do {
    atomic_store_explicit(&m->free_next, (uint32_t)head, memory_order_relaxed);
    nh = ((head >> 32) + 1) << 32 | (m->slot + 1ull);
  } while (!atomic_compare_exchange_weak_explicit(&ruda__free_head, &head, nh,
                                                  memory_order_release, memory_order_relaxed));
}

/* The state a slot of generation `gen` takes once nothing references it. */
static inline uint64_t ruda__state_retired(uint32_t gen) {
  return gen == UINT32_MAX ? (uint64_t)gen << 32 : (uint64_t)(gen + 1) << 32;
}

ruda_memory_t *ruda__memory_new(void) {
  ruda_memory_t *m = ruda__memory_take();
  if (!m) return NULL;
  uint32_t gen = RUDA__MEMORY_GEN(atomic_load_explicit(&m->state, memory_order_relaxed));
  if (gen == 0) gen = 1; /* a fresh slot */
  atomic_store_explicit(&m->handle_refs, 1, memory_order_relaxed);
  atomic_store_explicit(&m->size, 0, memory_order_relaxed);
  atomic_store_explicit(&m->stream, 0, memory_order_relaxed);
  atomic_store_explicit(&m->device, 0, memory_order_relaxed);
  atomic_store_explicit(&m->owner, NULL, memory_order_relaxed);
  atomic_store_explicit(&m->flags, 0, memory_order_relaxed);
  atomic_store_explicit(&m->ext_release, NULL, memory_order_relaxed);
  m->ext_ctx = NULL;
  m->freed_next = NULL;
  memset(&m->loc, 0, sizeof m->loc);
  atomic_store_explicit(&m->state, (uint64_t)gen << 32 | 1, memory_order_release);
  return m;
}

bool ruda__memory_is_bound(const ruda_memory_t *m) {
  return m && m->loc.init &&
         atomic_load_explicit(&((ruda_memory_t *)m)->owner, memory_order_relaxed) != NULL;
}

uint64_t ruda__memory_id(const ruda_memory_t *m) {
  return m ? ruda__id_make(m->slot, ruda__memory_gen(m)) : 0;
}

/* ---- Reference counting ---- */

/* Adds one reference when `gen` is current and a user reference is left. */
RUDA__HOT
static bool ruda__memory_try_retain(ruda_memory_t *m, uint32_t gen) {
  uint64_t s = atomic_load_explicit(&m->state, memory_order_relaxed);
  for (;;) {
    uint64_t c = RUDA__MEMORY_COUNT(s);
    if (RUDA__MEMORY_GEN(s) != gen || c <= ((s & RUDA__MEMORY_BOUND) ? 1u : 0u) ||
        c == RUDA__MEMORY_COUNT_MASK)
      return false;
    if (atomic_compare_exchange_weak_explicit(&m->state, &s, s + 1, memory_order_relaxed,
                                              memory_order_relaxed))
      return true;
  }
}

/* Pushes `m` onto the inbox of the manager holding its slice (any thread). */
static void ruda__memory_inbox_push(ruda__memory_inbox_t *in, ruda_memory_t *m) {
  ruda_memory_t *head = atomic_load_explicit(&in->head, memory_order_relaxed);
  do {
    m->freed_next = head;
  } while (!atomic_compare_exchange_weak_explicit(&in->head, &head, m, memory_order_release,
                                                  memory_order_relaxed));
}

/* Hands a cached or displaced descriptor to the manager holding it. */
static void ruda__memory_give_back(ruda_memory_t *m, void *ctx) {
  (void)ctx;
  ruda__memory_inbox_t *in = atomic_load_explicit(&m->owner, memory_order_acquire);
  if (in) ruda__memory_inbox_push(in, m);
}

/* The slice of `m` (generation `gen`) became free: into the device's
 * shared sets, or onto the inbox when the manager has no cache or the
 * generation cannot move on (a reuse takes the next one). */
static void ruda__memory_free_shared(ruda__memory_inbox_t *in, ruda__memory_reuse_t *rc,
                                     ruda_memory_t *m, uint32_t gen) {
  if (!rc || gen >= UINT32_MAX - 1) {
    ruda__memory_inbox_push(in, m);
    return;
  }
  ruda_memory_t *displaced = ruda__reuse_put(rc, in->reuse_set, m);
  if (displaced) ruda__memory_give_back(displaced, NULL);
}

/* A free descriptor the calling thread's ways let go of: to its manager. */
RUDA__COLD
static void ruda__memory_free_displaced(ruda_memory_t *m) {
  ruda__memory_inbox_t *in = atomic_load_explicit(&m->owner, memory_order_acquire);
  if (in)
    ruda__memory_free_shared(in, atomic_load_explicit(&in->reuse, memory_order_relaxed), m,
                             ruda__memory_gen(m));
}

/* The slice of `m` (generation `gen`) became free: into the calling
 * thread's ways of the device's reuse cache when it has them and a reuse
 * can take the next generation, else into the shared sets or onto the
 * manager's inbox. A descriptor the thread's ways displace goes the
 * shared way, to its own manager. */
static inline __attribute__((always_inline)) void ruda__memory_free_slice(ruda__memory_inbox_t *in,
                                                                     ruda_memory_t *m,
                                                                     uint32_t gen) {
  /* Imported memory goes back to its producer now: nothing of ruda holds
   * it any more (launches and reads in flight hold bindings). */
  if (__builtin_expect(atomic_load_explicit(&m->ext_release, memory_order_relaxed) != NULL, 0))
    ruda__memory_ext_release(m);
  ruda__memory_reuse_t *rc = atomic_load_explicit(&in->reuse, memory_order_relaxed);
  ruda_memory_t *out;
  if (rc && gen < RUDA__REUSE_LAST_GEN && ruda__reuse_local_put(rc, m, &out)) {
    if (out) ruda__memory_free_displaced(out);
    return;
  }
  ruda__memory_free_shared(in, rc, m, gen);
}

/* Takes the manager's descriptors out of the threads' ways and the shared
 * sets of `rc`. */
static uint32_t ruda__memory_evict_from(ruda__memory_inbox_t *in, ruda__memory_reuse_t *rc) {
  return ruda__reuse_local_evict(rc, in, ruda__memory_give_back, NULL) +
         ruda__reuse_evict(rc, in->reuse_set, in, ruda__memory_give_back, NULL);
}

uint32_t ruda__memory_inbox_evict(ruda__memory_inbox_t *in) {
  ruda__memory_reuse_t *rc = atomic_load_explicit(&in->reuse, memory_order_relaxed);
  return rc ? ruda__memory_evict_from(in, rc) : 0;
}

void ruda__memory_inbox_set_reuse(ruda__memory_inbox_t *in, ruda__memory_reuse_t *rc) {
  ruda__memory_reuse_t *old = atomic_exchange_explicit(&in->reuse, rc, memory_order_relaxed);
  if (old && old != rc) ruda__memory_evict_from(in, old);
}

bool ruda__memory_inbox_has_cached(const ruda__memory_inbox_t *in) {
  ruda__memory_reuse_t *rc =
      atomic_load_explicit(&((ruda__memory_inbox_t *)in)->reuse, memory_order_relaxed);
  return rc && (ruda__reuse_local_holds(rc, in) || ruda__reuse_holds(rc, in->reuse_set, in));
}

/* Drops one user reference when `gen` is current and one is left. Leaving
 * BOUND + 1, the pool's slice is the only holder: the descriptor goes into
 * the reuse cache or its manager's inbox, unless it is in the cache
 * already. Leaving nothing (unbound), the slot is recycled. */
RUDA__HOT
static bool ruda__memory_drop(ruda_memory_t *m, uint32_t gen) {
  uint64_t s = atomic_load_explicit(&m->state, memory_order_relaxed), ns, c;
  bool bound;
  for (;;) {
    c = RUDA__MEMORY_COUNT(s);
    bound = (s & RUDA__MEMORY_BOUND) != 0;
    if (RUDA__MEMORY_GEN(s) != gen || c <= (bound ? 1u : 0u)) return false;
    ns = !bound && c == 1 ? ruda__state_retired(gen) : s - 1;
    if (atomic_compare_exchange_weak_explicit(&m->state, &s, ns, memory_order_acq_rel,
                                              memory_order_relaxed))
      break;
  }
  if (bound && c == 2) {
    /* Free now; in the reuse cache it stays there, free. */
    ruda__memory_inbox_t *in = atomic_load_explicit(&m->owner, memory_order_acquire);
    if (in && !(s & RUDA__MEMORY_CACHED)) ruda__memory_free_slice(in, m, gen);
  } else if (!bound && c == 1) {
    ruda__memory_recycle(m, gen);
  }
  return true;
}

void ruda__memory_release_handle(ruda_memory_t *m) {
  atomic_fetch_sub_explicit(&m->handle_refs, 1, memory_order_relaxed);
  ruda__memory_drop(m, ruda__memory_gen(m));
}

void ruda__memory_pool_retain(ruda_memory_t *m) {
  atomic_fetch_add_explicit(&m->state, RUDA__MEMORY_BOUND + 1, memory_order_release);
}

void ruda__memory_pool_release(ruda_memory_t *m) {
  uint64_t s = atomic_load_explicit(&m->state, memory_order_relaxed), ns, c;
  for (;;) {
    c = RUDA__MEMORY_COUNT(s);
    ns = c == 1 ? ruda__state_retired(RUDA__MEMORY_GEN(s))
                : (s - (RUDA__MEMORY_BOUND + 1)) & ~RUDA__MEMORY_CACHED;
    if (atomic_compare_exchange_weak_explicit(&m->state, &s, ns, memory_order_acq_rel,
                                              memory_order_relaxed))
      break;
  }
  if (c == 1) ruda__memory_recycle(m, RUDA__MEMORY_GEN(s));
}

/* ---- Lookups and checks ---- */

/* The descriptor `id` names while it is live (its generation current and a
 * user reference left), else NULL. For a handle (`as_handle`), a handle
 * reference must be left too: once the last handle is released, a copy of
 * it is stale even while queued work still holds bindings of the memory. */
static inline bool ruda__memory_is_live(ruda_memory_t *m, uint32_t gen, bool as_handle) {
  uint64_t s = atomic_load_explicit(&m->state, memory_order_acquire);
  if (RUDA__MEMORY_GEN(s) != gen ||
      RUDA__MEMORY_COUNT(s) <= ((s & RUDA__MEMORY_BOUND) ? 1u : 0u))
    return false;
  return !as_handle || atomic_load_explicit(&m->handle_refs, memory_order_relaxed) != 0;
}

static inline ruda_memory_t *ruda__memory_live(uint64_t id, bool as_handle) {
  uint32_t gen = ruda__id_gen(id);
  if (gen == 0) return NULL;
  ruda_memory_t *m = ruda__memory_at(ruda__id_slot(id));
  return m && ruda__memory_is_live(m, gen, as_handle) ? m : NULL;
}

void ruda__memory_set_read_only(ruda_memory_t *m) {
  atomic_fetch_or_explicit(&m->flags, RUDA__MEMORY_READ_ONLY, memory_order_relaxed);
}

bool ruda__handle_read_only(const ruda_handle_t *h) {
  ruda_memory_t *m = h ? ruda__memory_live(h->id, true) : NULL;
  return m && (atomic_load_explicit(&m->flags, memory_order_relaxed) & RUDA__MEMORY_READ_ONLY);
}

ruda_memory_t *ruda__handle_memory(const ruda_handle_t *h) {
  return h ? ruda__memory_live(h->id, true) : NULL;
}

RUDA__HOT
ruda_memory_t *ruda__binding_memory(const ruda_binding_t *b) {
  return b ? ruda__memory_live(b->id, false) : NULL;
}

typedef enum ruda__view_fault {
  RUDA__VIEW_OK = 0,
  RUDA__VIEW_EMPTY,
  RUDA__VIEW_UNKNOWN,  /* no such slot, or generation 0 */
  RUDA__VIEW_RELEASED, /* generation moved on, or no user reference left */
  RUDA__VIEW_DEVICE,   /* the device field disagrees with the descriptor */
  RUDA__VIEW_STREAM,
  RUDA__VIEW_SIZE,
  RUDA__VIEW_OFFSETS,
} ruda__view_fault_t;

/* What is wrong with a view (the common fields of handles and bindings). */
static inline ruda__view_fault_t ruda__view_check(uint64_t id, uint64_t offset_start,
                                                  uint64_t offset_end, uint64_t size,
                                                  ruda_stream_id_t stream,
                                                  ruda_device_id_t device, bool as_handle,
                                                  ruda_memory_t **out) {
  if (id == 0) return RUDA__VIEW_EMPTY;
  uint32_t gen = ruda__id_gen(id);
  ruda_memory_t *m = gen ? ruda__memory_at(ruda__id_slot(id)) : NULL;
  if (!m) return RUDA__VIEW_UNKNOWN;
  *out = m;
  uint64_t s = atomic_load_explicit(&m->state, memory_order_acquire);
  if (RUDA__MEMORY_GEN(s) != gen) return gen < RUDA__MEMORY_GEN(s) ? RUDA__VIEW_RELEASED
                                                                 : RUDA__VIEW_UNKNOWN;
  if (RUDA__MEMORY_COUNT(s) <= ((s & RUDA__MEMORY_BOUND) ? 1u : 0u)) return RUDA__VIEW_RELEASED;
  if (as_handle && atomic_load_explicit(&m->handle_refs, memory_order_relaxed) == 0)
    return RUDA__VIEW_RELEASED;
  uint64_t dev = atomic_load_explicit(&m->device, memory_order_relaxed);
  if (dev && dev != ruda__device_pack(device)) return RUDA__VIEW_DEVICE;
  if (atomic_load_explicit(&m->stream, memory_order_relaxed) != stream.value)
    return RUDA__VIEW_STREAM;
  if (atomic_load_explicit(&m->size, memory_order_relaxed) != size) return RUDA__VIEW_SIZE;
  if (offset_start > size || offset_end > size - offset_start) return RUDA__VIEW_OFFSETS;
  return RUDA__VIEW_OK;
}

static ruda_device_id_t ruda__device_unpack(uint64_t d) {
  ruda_device_id_t id = {(uint16_t)(d >> 16), (uint16_t)d};
  return id;
}

/* The device a view's memory belongs to: the one its descriptor records,
 * else (memory made without a device, by internal code) the view's field. */
static ruda_device_id_t ruda__owner_device(const ruda_memory_t *m, ruda_device_id_t field) {
  uint64_t d = m ? atomic_load_explicit(&((ruda_memory_t *)m)->device, memory_order_relaxed) : 0;
  return d ? ruda__device_unpack(d) : field;
}

/* The error for a fault found by ruda__view_check. Cold. */
RUDA__COLD
static ruda_status_t ruda__view_error(ruda__view_fault_t f, const ruda_memory_t *m,
                                      uint64_t id, uint64_t offset_start, uint64_t offset_end,
                                      uint64_t size, ruda_stream_id_t stream,
                                      ruda_device_id_t owner, ruda_device_id_t device,
                                      const char *who) {
  const char *sep = who && *who ? ": " : "";
  who = who ? who : "";
  unsigned slot = ruda__id_slot(id), gen = ruda__id_gen(id);
  ruda_memory_t *mm = (ruda_memory_t *)m;
  char a[32], b[32];
  switch (f) {
    case RUDA__VIEW_OK: return NULL;
    case RUDA__VIEW_EMPTY:
      return ruda_status_create(RUDA_ERR_INVALID_HANDLE,
                                "%s%sthe handle is empty (released, or never created)", who,
                                sep);
    case RUDA__VIEW_UNKNOWN:
      return ruda_status_create(RUDA_ERR_INVALID_HANDLE,
                                "%s%shandle #%u.%u was not made by ruda (an edited or "
                                "uninitialised struct)",
                                who, sep, slot, gen);
    case RUDA__VIEW_RELEASED:
      return ruda_status_create(RUDA_ERR_INVALID_HANDLE, "%s%shandle #%u.%u was released", who,
                                sep, slot, gen);
    case RUDA__VIEW_DEVICE:
      ruda_device_id_format(owner, a, sizeof a);
      ruda_device_id_format(device, b, sizeof b);
      return ruda_status_create(RUDA_ERR_INVALID_HANDLE,
                                "%s%shandle #%u.%u belongs to %s, not %s", who, sep, slot, gen,
                                a, b);
    case RUDA__VIEW_STREAM:
      return ruda_status_create(
          RUDA_ERR_INVALID_HANDLE,
          "%s%shandle #%u.%u says its memory is on stream %llu; it is on stream %llu (an "
          "edited struct)",
          who, sep, slot, gen, (unsigned long long)stream.value,
          (unsigned long long)atomic_load_explicit(&mm->stream, memory_order_relaxed));
    case RUDA__VIEW_SIZE:
      return ruda_status_create(
          RUDA_ERR_INVALID_HANDLE,
          "%s%shandle #%u.%u says its allocation holds %llu bytes; it holds %llu", who, sep,
          slot, gen, (unsigned long long)size,
          (unsigned long long)atomic_load_explicit(&mm->size, memory_order_relaxed));
    case RUDA__VIEW_OFFSETS:
      return ruda_status_create(RUDA_ERR_INVALID_HANDLE,
                                "%s%shandle #%u.%u views [+%llu, -%llu] of an allocation of "
                                "%llu bytes",
                                who, sep, slot, gen, (unsigned long long)offset_start,
                                (unsigned long long)offset_end, (unsigned long long)size);
  }
  return NULL;
}

/* Checks a view (`field`: the device the view's struct names) against
 * `device`, or, when `device` is NULL, against the device of its memory. */
static ruda_status_t ruda__check(uint64_t id, uint64_t offset_start, uint64_t offset_end,
                                 uint64_t size, ruda_stream_id_t stream,
                                 ruda_device_id_t field, const ruda_device_id_t *device,
                                 bool as_handle, const char *who) {
  ruda_memory_t *m = NULL;
  if (id && ruda__id_gen(id)) m = ruda__memory_at(ruda__id_slot(id));
  ruda_device_id_t owner = ruda__owner_device(m, field);
  ruda_device_id_t want = device ? *device : owner;
  ruda__view_fault_t f =
      ruda__view_check(id, offset_start, offset_end, size, stream, want, as_handle, &m);
  if (f == RUDA__VIEW_OK && !ruda_device_id_eq(field, want)) {
    if (!ruda_device_id_eq(owner, field)) {
      char a[32], b[32];
      ruda_device_id_format(field, a, sizeof a);
      ruda_device_id_format(owner, b, sizeof b);
      return ruda_status_create(RUDA_ERR_INVALID_HANDLE,
                                "%s%shandle #%u.%u names %s but its memory is on %s (an "
                                "edited struct)",
                                who ? who : "", who && *who ? ": " : "", ruda__id_slot(id),
                                ruda__id_gen(id), a, b);
    }
    f = RUDA__VIEW_DEVICE;
  }
  if (f == RUDA__VIEW_OK) return NULL;
  return ruda__view_error(f, m, id, offset_start, offset_end, size, stream, owner, want, who);
}

ruda_status_t ruda__handle_check(const ruda_handle_t *h, ruda_device_id_t device,
                                 const char *who) {
  if (!h) return ruda__check(0, 0, 0, 0, (ruda_stream_id_t){0}, device, &device, true, who);
  return ruda__check(h->id, h->offset_start, h->offset_end, h->size, h->stream, h->device,
                     &device, true, who);
}

static ruda_binding_t ruda__binding_of(const ruda_handle_t *h);

RUDA__HOT
ruda_status_t ruda__handle_bind_flags(const ruda_handle_t *h, ruda_device_id_t device,
                                      const char *who, ruda_binding_t *out, uint32_t *flags) {
  /* The hot path (every handle argument of every launch): one lookup, the
   * checks, one CAS. Errors are worked out again on the cold path. */
  ruda_memory_t *m = NULL;
  if (h && ruda_device_id_eq(h->device, device) &&
      ruda__view_check(h->id, h->offset_start, h->offset_end, h->size, h->stream, device, true,
                       &m) == RUDA__VIEW_OK &&
      ruda__memory_try_retain(m, ruda__id_gen(h->id))) {
    *out = ruda__binding_of(h);
    *flags = atomic_load_explicit(&m->flags, memory_order_relaxed);
    return NULL;
  }
  *flags = 0;
  memset(out, 0, sizeof *out);
  ruda_status_t st = ruda__handle_check(h, device, who);
  /* Released by another thread between the check and the retain. */
  if (!st)
    st = ruda__view_error(RUDA__VIEW_RELEASED, NULL, h->id, 0, 0, 0, h->stream, device, device,
                          who);
  return st;
}

RUDA__HOT
ruda_status_t ruda__handle_bind(const ruda_handle_t *h, ruda_device_id_t device,
                                const char *who, ruda_binding_t *out) {
  uint32_t flags;
  return ruda__handle_bind_flags(h, device, who, out, &flags);
}

ruda_status_t ruda_handle_validate(const ruda_handle_t *h) {
  if (!h) return ruda__check(0, 0, 0, 0, (ruda_stream_id_t){0}, (ruda_device_id_t){0, 0}, NULL,
                             true, NULL);
  return ruda__check(h->id, h->offset_start, h->offset_end, h->size, h->stream, h->device, NULL,
                     true, NULL);
}

ruda_status_t ruda__binding_check(const ruda_binding_t *b, const char *who) {
  return ruda__check(b->id, b->offset_start, b->offset_end, b->size, b->stream, b->device, NULL,
                     false, who);
}

/* ---- Handles made by the runtime ---- */

ruda_handle_t ruda__handle_wrap(ruda_memory_t *m, uint64_t size, ruda_stream_id_t stream) {
  ruda_handle_t h;
  memset(&h, 0, sizeof h);
  if (!m) return h;
  atomic_store_explicit(&m->size, size, memory_order_relaxed);
  atomic_store_explicit(&m->stream, stream.value, memory_order_relaxed);
  h.id = ruda__memory_id(m);
  h.size = size;
  h.stream = stream;
  return h;
}

ruda_status_t ruda__handle_create(uint64_t size, ruda_device_id_t device,
                                  ruda_stream_id_t stream, ruda_handle_t *out) {
  memset(out, 0, sizeof *out);
  ruda_memory_t *m = ruda__memory_new();
  if (!m) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *m);
  atomic_store_explicit(&m->device, ruda__device_pack(device), memory_order_relaxed);
  *out = ruda__handle_wrap(m, size, stream);
  out->device = device;
  return NULL;
}

/* Claimed `m` for a new handle: the new generation holds the pool's
 * reference and this handle, and no id of it exists yet, so the count is
 * a plain store. */
static inline bool ruda__reuse_fill(ruda_memory_t *m, uint64_t size, ruda_device_id_t device,
                                    ruda_stream_id_t stream, ruda_handle_t *out) {
  atomic_store_explicit(&m->handle_refs, 1, memory_order_relaxed);
  memset(out, 0, sizeof *out);
  out->id = ruda__id_make(m->slot, ruda__memory_gen(m));
  out->size = size;
  out->stream = stream;
  out->device = device;
  return true;
}

/* The thread's ways missed (or it has none yet: it attaches first, and
 * looks in its new ways, which may be an exited thread's): the shared set
 * of the stream. */
__attribute__((noinline))
static bool ruda__handle_reuse_shared(ruda__memory_reuse_t *rc, uint64_t size,
                                      ruda_device_id_t device, ruda_stream_id_t stream,
                                      ruda_handle_t *out, bool attached) {
  ruda_memory_t *m = NULL;
  if (!attached) {
    ruda__reuse_local_t *l = ruda__reuse_local_attach(rc);
    if (l) m = ruda__reuse_local_take_from(l, size, stream.value);
  }
  if (!m) m = ruda__reuse_take(rc, ruda__reuse_set_of(stream.value), size, stream.value);
  return m && ruda__reuse_fill(m, size, device, stream, out);
}

/* The thread's ways first; a miss goes on in a tail call, so that the
 * hit stays short. */
RUDA__HOT
bool ruda__handle_reuse(ruda__memory_reuse_t *rc, uint64_t size, ruda_device_id_t device,
                        ruda_stream_id_t stream, ruda_handle_t *out) {
  if (!rc) return false;
  ruda__local_ref_t *r = ruda__reuse_local_ref(rc);
  ruda_memory_t *m = r && r->local ? ruda__reuse_local_take_from(r->local, size, stream.value)
                                   : NULL;
  if (__builtin_expect(m == NULL, 0))
    return ruda__handle_reuse_shared(rc, size, device, stream, out, r != NULL);
  return ruda__reuse_fill(m, size, device, stream, out);
}

/* ---- Public handles and bindings ---- */

bool ruda_handle_is_empty(const ruda_handle_t *h) { return !h || h->id == 0; }

RUDA__HOT
bool ruda_binding_is_empty(const ruda_binding_t *b) { return !b || b->id == 0; }

uint64_t ruda_handle_size_in_used(const ruda_handle_t *h) {
  if (h->offset_start > h->size || h->offset_end > h->size - h->offset_start) return 0;
  return h->size - h->offset_start - h->offset_end;
}

ruda_device_id_t ruda_handle_device(const ruda_handle_t *h) { return h->device; }

ruda_stream_id_t ruda_handle_stream(const ruda_handle_t *h) { return h->stream; }

ruda_handle_t ruda_handle_clone(const ruda_handle_t *h) {
  ruda_handle_t c;
  memset(&c, 0, sizeof c);
  ruda_memory_t *m = ruda__memory_live(h->id, true);
  if (!m || !ruda__memory_try_retain(m, ruda__id_gen(h->id))) return c;
  if (atomic_fetch_add_explicit(&m->handle_refs, 1, memory_order_relaxed) == 0) {
    /* The last handle went in between: `h` was a stale copy. */
    atomic_fetch_sub_explicit(&m->handle_refs, 1, memory_order_relaxed);
    ruda__memory_drop(m, ruda__id_gen(h->id));
    return c;
  }
  return *h;
}

/* The release of a handle that is the only reference besides the pool's,
 * with one compare-and-swap where the general path takes two atomic
 * operations: returns false, having changed nothing, when `m` is not in
 * that state (generation `gen`, the pool's reference and one handle's).
 * The handle count goes to zero before the state does: once the state
 * leaves one reference, a take from the reuse cache may claim the
 * descriptor and write its own count. With a single handle reference
 * nothing else counts in handle_refs (a clone adds to it after adding a
 * reference, a release takes from it before dropping one); a clone racing
 * this release, from a copy of this very handle, either sees the zero and
 * gives up, or its reference makes the compare-and-swap fail and the count
 * is put back for the general path. */
RUDA__HOT
static bool ruda__handle_release_last(ruda_memory_t *m, uint32_t gen) {
  uint64_t s = atomic_load_explicit(&m->state, memory_order_relaxed);
  if ((s & ~RUDA__MEMORY_CACHED) != ((uint64_t)gen << 32 | RUDA__MEMORY_BOUND | 2) ||
      atomic_load_explicit(&m->handle_refs, memory_order_relaxed) != 1)
    return false;
  atomic_store_explicit(&m->handle_refs, 0, memory_order_relaxed);
  if (!atomic_compare_exchange_strong_explicit(&m->state, &s, s - 1, memory_order_acq_rel,
                                               memory_order_relaxed)) {
    atomic_fetch_add_explicit(&m->handle_refs, 1, memory_order_relaxed);
    return false;
  }
  /* Free; one in the reuse cache stays there. */
  ruda__memory_inbox_t *in = atomic_load_explicit(&m->owner, memory_order_acquire);
  if (in && !(s & RUDA__MEMORY_CACHED)) ruda__memory_free_slice(in, m, gen);
  return true;
}

RUDA__HOT
void ruda_handle_release(ruda_handle_t *h) {
  if (!h || !h->id) return;
  uint32_t gen = ruda__id_gen(h->id);
  ruda_memory_t *m = gen ? ruda__memory_at(ruda__id_slot(h->id)) : NULL;
  if (m && !ruda__handle_release_last(m, gen) && ruda__memory_is_live(m, gen, true)) {
    /* Counted before the reference goes: afterwards the slot may belong
     * to someone else. */
    atomic_fetch_sub_explicit(&m->handle_refs, 1, memory_order_relaxed);
    ruda__memory_drop(m, gen);
  }
  memset(h, 0, sizeof *h);
}

bool ruda_handle_can_mut(const ruda_handle_t *h) {
  ruda_memory_t *m = ruda__memory_live(h->id, true);
  return m && atomic_load_explicit(&m->handle_refs, memory_order_acquire) == 1;
}

bool ruda_handle_is_bound(const ruda_handle_t *h) {
  ruda_memory_t *m = ruda__memory_live(h->id, true);
  return m && atomic_load_explicit(&m->owner, memory_order_acquire) != NULL;
}

static ruda_status_t ruda__handle_offset(ruda_handle_t *h, uint64_t bytes, bool start) {
  ruda_status_t st = ruda_handle_validate(h);
  if (st) return st;
  uint64_t n = ruda_handle_size_in_used(h);
  if (bytes > n)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s of %llu bytes on a view of %llu bytes",
                              start ? "offset_start" : "offset_end", (unsigned long long)bytes,
                              (unsigned long long)n);
  if (start)
    h->offset_start += bytes;
  else
    h->offset_end += bytes;
  return NULL;
}

ruda_status_t ruda_handle_offset_start(ruda_handle_t *h, uint64_t bytes) {
  return ruda__handle_offset(h, bytes, true);
}

ruda_status_t ruda_handle_offset_end(ruda_handle_t *h, uint64_t bytes) {
  return ruda__handle_offset(h, bytes, false);
}

static ruda_binding_t ruda__binding_of(const ruda_handle_t *h) {
  ruda_binding_t b = {h->id, h->offset_start, h->offset_end, h->size, h->stream, h->device};
  return b;
}

ruda_binding_t ruda_handle_binding(const ruda_handle_t *h) {
  ruda_binding_t b;
  memset(&b, 0, sizeof b);
  ruda_memory_t *m = ruda__memory_live(h->id, true);
  if (!m || !ruda__memory_try_retain(m, ruda__id_gen(h->id))) return b;
  return ruda__binding_of(h);
}

ruda_binding_t ruda_handle_into_binding(ruda_handle_t *h) {
  ruda_binding_t b;
  memset(&b, 0, sizeof b);
  ruda_memory_t *m = ruda__memory_live(h->id, true);
  if (m) {
    /* The total count is kept: the handle's reference becomes the binding's. */
    atomic_fetch_sub_explicit(&m->handle_refs, 1, memory_order_relaxed);
    b = ruda__binding_of(h);
  }
  memset(h, 0, sizeof *h);
  return b;
}

ruda_binding_t ruda_binding_clone(const ruda_binding_t *b) {
  ruda_binding_t c;
  memset(&c, 0, sizeof c);
  ruda_memory_t *m = b->id ? ruda__memory_at(ruda__id_slot(b->id)) : NULL;
  if (!m || !ruda__memory_try_retain(m, ruda__id_gen(b->id))) return c;
  return *b;
}

RUDA__HOT
void ruda_binding_release(ruda_binding_t *b) {
  if (!b || !b->id) return;
  ruda_memory_t *m = ruda__memory_at(ruda__id_slot(b->id));
  if (m && ruda__id_gen(b->id)) ruda__memory_drop(m, ruda__id_gen(b->id));
  memset(b, 0, sizeof *b);
}

RUDA__HOT
uint64_t ruda_binding_size_in_used(const ruda_binding_t *b) {
  if (b->offset_start > b->size || b->offset_end > b->size - b->offset_start) return 0;
  return b->size - b->offset_start - b->offset_end;
}

uint64_t ruda_handle_memory_id(const ruda_handle_t *h) { return h->id; }
