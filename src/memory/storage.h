/* Storage: where a pool's pages come from.
 *
 * A storage hands out whole allocations ("pages"); pools carve them into
 * slices. The memory layer never knows which backend stores the bytes: the
 * host storage returns malloc'ed memory, the CUDA storage device memory. An
 * allocation is described by a storage handle whose `base` is an address in
 * the backend's address space (a host pointer or a CUdeviceptr).
 *
 * Not thread-safe: a storage belongs to one memory manager, used from one
 * (the device's worker) thread.
 */
#ifndef RUDA_MEMORY_STORAGE_H
#define RUDA_MEMORY_STORAGE_H

#include <stdint.h>

#include "ruda/status.h"

typedef struct ruda__storage_handle {
  uint64_t id;     /* storage allocation id, unique per process */
  uint64_t base;   /* address of the allocation's first byte */
  uint64_t offset; /* bytes from base where this view starts */
  uint64_t size;   /* bytes in the view */
} ruda__storage_handle_t;

/* A view of a whole allocation: `size` bytes from `base`, allocation `id`
 * (what a storage's alloc returns). */
static inline ruda__storage_handle_t ruda__storage_handle_whole(uint64_t id, uint64_t base,
                                                                uint64_t size) {
  ruda__storage_handle_t h = {id, base, 0, size};
  return h;
}

/* The view's first byte. */
static inline uint64_t ruda__storage_handle_addr(const ruda__storage_handle_t *h) {
  return h->base + h->offset;
}

typedef struct ruda__storage_vtable {
  /* Allocates `size` bytes (size 0 allowed). Errors: IoError::BufferTooBig
   * when the size can never be satisfied, IoError::OutOfMemory when the
   * storage is exhausted. */
  ruda_status_t (*alloc)(void *self, uint64_t size, ruda__storage_handle_t *out);
  /* Releases an allocation, given the handle exactly as alloc() returned it
   * (offset 0, full size); may be deferred until flush(). */
  void (*dealloc)(void *self, const ruda__storage_handle_t *h);
  /* Performs deferred deallocations. */
  void (*flush)(void *self);
  /* Frees the storage object itself (after every allocation was released). */
  void (*destroy)(void *self);
} ruda__storage_vtable_t;

typedef struct ruda__storage {
  const ruda__storage_vtable_t *vt;
  void *self;
  uint64_t alignment; /* alignment of every allocation's base */
  /* Bytes the storage may hold at once (0: no limit known), named in
   * out-of-memory errors. */
  uint64_t limit;
} ruda__storage_t;

/* Host storage: zeroed, `alignment`-aligned memory from the system (mmap
 * for 256 KiB and more, so untouched pages cost nothing; posix_memalign
 * below). Size 0 gives a dangling aligned address that is never freed.
 * Deallocation is immediate; flush does nothing. `limit` caps the bytes
 * outstanding (0: no cap) so tests and users can bound it: a size above the
 * limit gives IoError::BufferTooBig, one that does not fit next to what is
 * outstanding IoError::OutOfMemory{size}, as does a refusal of the system.
 * Errors of create: RUDA_ERR_INVALID_ARGUMENT when `alignment` is not a
 * power of two, OutOfMemory. The caller owns *out (destroy through its
 * vtable, or hand it to ruda__memory_manager_create). */
ruda_status_t ruda__host_storage_create(uint64_t alignment, uint64_t limit,
                                        ruda__storage_t *out);

#endif
