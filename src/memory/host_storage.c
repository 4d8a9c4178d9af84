/* Host storage: zeroed, aligned memory from the system.
 *
 * Large allocations come straight from mmap: the kernel hands out zeroed
 * pages lazily, so a 128 MiB pool page costs no memset and no resident
 * memory until it is touched. Small ones use an aligned allocation +
 * memset. Both come from base/alloc.h (ruda__map_zeroed,
 * ruda__aligned_alloc), so fault injection fails them like any other host
 * allocation. Deallocation is immediate; flush has nothing to do.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "memory/storage.h"

enum { RUDA__HOST_MMAP_MIN = 256 * 1024 };

typedef struct ruda__host_storage {
  uint64_t alignment;
  uint64_t limit;
  uint64_t outstanding;
  uint64_t page;
} ruda__host_storage_t;

static _Atomic uint64_t ruda__storage_next_id = 1;

static bool ruda__host_uses_mmap(const ruda__host_storage_t *s, uint64_t size) {
  return size >= RUDA__HOST_MMAP_MIN && s->alignment <= s->page;
}

static ruda_status_t ruda__host_alloc(void *self, uint64_t size, ruda__storage_handle_t *out) {
  ruda__host_storage_t *s = self;
  memset(out, 0, sizeof *out);
  if (s->limit && size > s->limit) return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, size);
  if (size > (uint64_t)PTRDIFF_MAX - s->alignment)
    return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, size);
  if (s->limit && s->outstanding + size > s->limit)
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  void *p;
  if (size == 0) {
    /* A dangling, aligned, never dereferenced address: no allocation for
     * zero bytes, yet a non-NULL base that satisfies the alignment. */
    p = (void *)(uintptr_t)s->alignment;
  } else if (ruda__host_uses_mmap(s, size)) {
    p = ruda__map_zeroed((size_t)size);
    if (!p) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  } else {
    p = ruda__aligned_alloc((size_t)s->alignment, (size_t)size);
    if (!p) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
    memset(p, 0, (size_t)size);
  }
  s->outstanding += size;
  uint64_t id = atomic_fetch_add_explicit(&ruda__storage_next_id, 1, memory_order_relaxed);
  *out = ruda__storage_handle_whole(id, (uint64_t)(uintptr_t)p, size);
  return NULL;
}

static void ruda__host_dealloc(void *self, const ruda__storage_handle_t *h) {
  ruda__host_storage_t *s = self;
  if (h->size == 0) return;
  void *p = (void *)(uintptr_t)h->base;
  if (ruda__host_uses_mmap(s, h->size))
    ruda__unmap(p, (size_t)h->size);
  else
    ruda__free(p);
  s->outstanding -= h->size;
}

static void ruda__host_flush(void *self) { (void)self; }

static void ruda__host_destroy(void *self) { ruda__free(self); }

static const ruda__storage_vtable_t ruda__host_storage_vt = {
    ruda__host_alloc, ruda__host_dealloc, ruda__host_flush, ruda__host_destroy};

static bool ruda__is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

ruda_status_t ruda__host_storage_create(uint64_t alignment, uint64_t limit,
                                        ruda__storage_t *out) {
  memset(out, 0, sizeof *out);
  if (!ruda__is_pow2(alignment))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "host storage alignment %llu is not a power of two",
                              (unsigned long long)alignment);
  ruda__host_storage_t *s = ruda__calloc(1, sizeof *s);
  if (!s) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *s);
  s->alignment = alignment;
  s->limit = limit;
  long pg = sysconf(_SC_PAGESIZE);
  s->page = pg > 0 ? (uint64_t)pg : 4096;
  out->vt = &ruda__host_storage_vt;
  out->self = s;
  out->alignment = alignment;
  out->limit = limit;
  return NULL;
}
