/* Descriptors (the seed's ManagedMemoryHandle), handles and bindings. */
#include <stdlib.h>
#include <string.h>

#include "memory/memory_internal.h"
#include "ruda/memory.h"

static _Atomic uint64_t ruda__memory_next_id = 1;

ruda_memory_t *ruda__memory_new(void) {
  ruda_memory_t *m = malloc(sizeof *m);
  if (!m) return NULL;
  atomic_init(&m->total_refs, 1);
  atomic_init(&m->handle_refs, 1);
  atomic_init(&m->owner, NULL);
  m->id = atomic_fetch_add_explicit(&ruda__memory_next_id, 1, memory_order_relaxed);
  m->freed_next = NULL;
  memset(&m->loc, 0, sizeof m->loc);
  return m;
}

bool ruda__memory_is_bound(const ruda_memory_t *m) {
  return m && m->loc.init &&
         atomic_load_explicit(&((ruda_memory_t *)m)->owner, memory_order_relaxed) != NULL;
}

uint64_t ruda__memory_id(const ruda_memory_t *m) { return m ? m->id : 0; }

void ruda__memory_retain_handle(ruda_memory_t *m) {
  atomic_fetch_add_explicit(&m->handle_refs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->total_refs, 1, memory_order_relaxed);
}

void ruda__memory_retain_binding(ruda_memory_t *m) {
  atomic_fetch_add_explicit(&m->total_refs, 1, memory_order_relaxed);
}

/* Drops one user reference. Leaving BOUND + 1, the pool's slice is the only
 * holder: tell the manager. Leaving 0 (unbound), nobody holds it: free it. */
static void ruda__memory_drop_total(ruda_memory_t *m) {
  uint64_t prev = atomic_fetch_sub_explicit(&m->total_refs, 1, memory_order_acq_rel);
  if (prev == RUDA__MEMORY_BOUND + 2) {
    struct ruda__memory_manager *mm = atomic_load_explicit(&m->owner, memory_order_acquire);
    if (mm) ruda__memory_manager_notify_free(mm, m);
  } else if (prev == 1) {
    free(m);
  }
}

void ruda__memory_release_handle(ruda_memory_t *m) {
  atomic_fetch_sub_explicit(&m->handle_refs, 1, memory_order_relaxed);
  ruda__memory_drop_total(m);
}

void ruda__memory_release_binding(ruda_memory_t *m) { ruda__memory_drop_total(m); }

void ruda__memory_pool_retain(ruda_memory_t *m) {
  atomic_fetch_add_explicit(&m->handle_refs, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->total_refs, RUDA__MEMORY_BOUND + 1, memory_order_release);
}

void ruda__memory_pool_release(ruda_memory_t *m) {
  atomic_fetch_sub_explicit(&m->handle_refs, 1, memory_order_relaxed);
  uint64_t prev =
      atomic_fetch_sub_explicit(&m->total_refs, RUDA__MEMORY_BOUND + 1, memory_order_acq_rel);
  if (prev == RUDA__MEMORY_BOUND + 1) free(m);
}

/* ---- Public handles and bindings ---- */

uint64_t ruda_handle_size_in_used(const ruda_handle_t *h) {
  return h->size - h->offset_start - h->offset_end;
}

ruda_handle_t ruda_handle_clone(const ruda_handle_t *h) {
  if (h->memory) ruda__memory_retain_handle(h->memory);
  return *h;
}

void ruda_handle_release(ruda_handle_t *h) {
  if (!h || !h->memory) return;
  ruda__memory_release_handle(h->memory);
  memset(h, 0, sizeof *h);
}

bool ruda_handle_can_mut(const ruda_handle_t *h) {
  if (!h->memory) return false;
  return atomic_load_explicit(&h->memory->handle_refs, memory_order_acquire) <= 2;
}

ruda_status_t ruda_handle_offset_start(ruda_handle_t *h, uint64_t bytes) {
  if (bytes > ruda_handle_size_in_used(h))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "offset_start of %llu bytes on a view of %llu bytes",
                              (unsigned long long)bytes,
                              (unsigned long long)ruda_handle_size_in_used(h));
  h->offset_start += bytes;
  return NULL;
}

ruda_status_t ruda_handle_offset_end(ruda_handle_t *h, uint64_t bytes) {
  if (bytes > ruda_handle_size_in_used(h))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "offset_end of %llu bytes on a view of %llu bytes",
                              (unsigned long long)bytes,
                              (unsigned long long)ruda_handle_size_in_used(h));
  h->offset_end += bytes;
  return NULL;
}

static ruda_binding_t ruda__binding_of(const ruda_handle_t *h) {
  ruda_binding_t b = {h->memory, h->offset_start, h->offset_end, h->size, h->stream};
  return b;
}

ruda_binding_t ruda_handle_binding(const ruda_handle_t *h) {
  if (h->memory) ruda__memory_retain_binding(h->memory);
  return ruda__binding_of(h);
}

ruda_binding_t ruda_handle_into_binding(ruda_handle_t *h) {
  ruda_binding_t b = ruda__binding_of(h);
  /* The total count is kept: the handle's reference becomes the binding's. */
  if (h->memory) atomic_fetch_sub_explicit(&h->memory->handle_refs, 1, memory_order_relaxed);
  memset(h, 0, sizeof *h);
  return b;
}

ruda_binding_t ruda_binding_clone(const ruda_binding_t *b) {
  if (b->memory) ruda__memory_retain_binding(b->memory);
  return *b;
}

void ruda_binding_release(ruda_binding_t *b) {
  if (!b || !b->memory) return;
  ruda__memory_release_binding(b->memory);
  memset(b, 0, sizeof *b);
}

uint64_t ruda_binding_size_in_used(const ruda_binding_t *b) {
  return b->size - b->offset_start - b->offset_end;
}

uint64_t ruda_handle_memory_id(const ruda_handle_t *h) {
  return h->memory ? h->memory->id : 0;
}
