/* Helpers shared by the memory layer's tests: a storage that counts what it
 * does (wrapping the host storage) and short-hands for binding handles. */
#ifndef RUDA_MEMORY_TEST_UTIL_H
#define RUDA_MEMORY_TEST_UTIL_H

#include <stdlib.h>

#include "memory/memory_internal.h"
#include "memory/memory_manager.h"
#include "memory/storage.h"
#include "ruda/memory.h"
#include "ruda/status.h"
#include "test.h"

#define MIB (1024ull * 1024ull)

typedef struct counting_storage {
  ruda__storage_t inner;
  uint64_t allocs, deallocs, flushes, failed;
  uint64_t outstanding_bytes, outstanding;
  bool destroyed;
} counting_storage_t;

static ruda_status_t cs_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  counting_storage_t *cs = self;
  ruda_status_t st = cs->inner.vt->alloc(cs->inner.self, size, out);
  if (st) {
    cs->failed++;
    return st;
  }
  cs->allocs++;
  cs->outstanding++;
  cs->outstanding_bytes += size;
  return NULL;
}
static void cs_dealloc(void *self, const ruda__storage_handle_t *h) {
  counting_storage_t *cs = self;
  cs->deallocs++;
  cs->outstanding--;
  cs->outstanding_bytes -= h->size;
  cs->inner.vt->dealloc(cs->inner.self, h);
}
static void cs_flush(void *self) {
  counting_storage_t *cs = self;
  cs->flushes++;
  cs->inner.vt->flush(cs->inner.self);
}
static void cs_destroy(void *self) {
  counting_storage_t *cs = self;
  cs->destroyed = true;
  cs->inner.vt->destroy(cs->inner.self);
}
static const ruda__storage_vtable_t cs_vt = {cs_alloc, cs_dealloc, cs_flush, cs_destroy};

/* Wraps a new host storage; `cs` must outlive the manager. */
static inline ruda__storage_t counting_storage(counting_storage_t *cs, uint64_t align,
                                               uint64_t limit) {
  memset(cs, 0, sizeof *cs);
  ruda_status_t st = ruda__host_storage_create(align, limit, &cs->inner);
  if (st) {
    ruda_status_free(st);
    abort();
  }
  ruda__storage_t s = {&cs_vt, cs, align, limit};
  return s;
}

static inline ruda_memory_properties_t props_of(uint64_t max_page, uint64_t align) {
  ruda_memory_properties_t p = {max_page, align};
  return p;
}

/* A manager over a counting host storage with a default config. */
static inline ruda__memory_manager_t *mk_manager(counting_storage_t *cs, uint64_t max_page,
                                                 uint64_t align, uint64_t limit,
                                                 const ruda__memory_config_t *cfg) {
  ruda__memory_manager_t *mm = NULL;
  ruda_status_t st = ruda__memory_manager_create(counting_storage(cs, align, limit),
                                                 props_of(max_page, align), cfg, "test", &mm);
  if (st) {
    ruda_status_free(st);
    return NULL;
  }
  return mm;
}

/* The manager most tests use: pages up to 128 MiB, 256-byte alignment, no
 * limit, the default config. */
static inline ruda__memory_manager_t *default_manager(counting_storage_t *cs) {
  return mk_manager(cs, 128 * MIB, 256, 0, NULL);
}

/* A default manager holding one slice of 64 bytes, whose handle goes to
 * `h`. */
#define MANAGER_WITH_SLICE(cs, mm, h)                 \
  counting_storage_t cs;                              \
  ruda__memory_manager_t *mm = default_manager(&cs); \
  ruda_handle_t h;                                    \
  ALLOC(mm, 64, &h)

/* Checks that the only handle `h` of its slice can mutate it, that a clone
 * takes that away from both, and that releasing the clone gives it back. */
static inline void expect_clone_blocks_mut(ruda_handle_t *h) {
  ASSERT_TRUE(ruda_handle_can_mut(h));
  ruda_handle_t c = ruda_handle_clone(h);
  ASSERT_FALSE(ruda_handle_can_mut(h));
  ASSERT_FALSE(ruda_handle_can_mut(&c));
  ruda_handle_release(&c);
  ASSERT_TRUE(ruda_handle_is_empty(&c));
  ASSERT_TRUE(ruda_handle_can_mut(h));
}

/* Asserts that the usage of `mm` (taking its cached slices back) counts
 * `allocs` allocations and `in_use` bytes in use. */
static inline void expect_usage(ruda__memory_manager_t *mm, uint64_t allocs, uint64_t in_use) {
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UEQ(u.number_allocs, allocs);
  ASSERT_UEQ(u.bytes_in_use, in_use);
}

/* Checks that `mm` holds no allocation any more, then destroys it. */
static inline void destroy_empty(ruda__memory_manager_t *mm) {
  ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 0);
  ruda__memory_manager_destroy(mm);
}

/* Creates a descriptor and binds it; returns the status, fills *out. */
static inline ruda_status_t try_alloc(ruda__memory_manager_t *mm, uint64_t size,
                                      ruda_handle_t *out) {
  memset(out, 0, sizeof *out);
  ruda_memory_t *m = ruda__memory_new();
  if (!m) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, 0);
  ruda_status_t st = ruda__memory_alloc(mm, m, size, 0);
  *out = ruda__handle_wrap(m, size, (ruda_stream_id_t){0});
  if (st) ruda_handle_release(out);
  return st;
}

#define ALLOC(mm, size, h) ASSERT_OK(try_alloc((mm), (size), (h)))

/* A new handle of `size` bytes (the test fails where it cannot be made). */
static inline ruda_handle_t alloc_handle(ruda__memory_manager_t *mm, uint64_t size) {
  ruda_handle_t h;
  ALLOC(mm, size, &h);
  return h;
}

/* The descriptor of a live handle (NULL when stale or empty). */
#define MEM(h) ruda__handle_memory(&(h))

static inline ruda__storage_handle_t resolve(ruda__memory_manager_t *mm, const ruda_handle_t *h) {
  ruda__storage_handle_t sh;
  memset(&sh, 0, sizeof sh);
  ruda_binding_t b = ruda_handle_binding(h);
  ruda_status_t st = ruda__memory_resolve_binding(mm, &b, &sh);
  ruda_binding_release(&b);
  if (st) ruda_status_free(st);
  return sh;
}

static inline uint64_t addr_of(ruda__memory_manager_t *mm, const ruda_handle_t *h) {
  ruda__storage_handle_t sh = resolve(mm, h);
  return ruda__storage_handle_addr(&sh);
}

#endif
