/* Owned host buffers (ruda_bytes_t) and raw resources: the memory layer's
 * public helpers that every backend and the client use. */
#include <string.h>

#include "base/alloc.h"
#include "memory/memory_handle.h"
#include "ruda/memory.h"

void ruda_bytes_release(ruda_bytes_t *b) {
  if (!b) return;
  if (b->release) b->release(b);
  memset(b, 0, sizeof *b);
}

void ruda__bytes_set(void *data, uint64_t size, ruda_bytes_property_t property,
                     void (*release)(ruda_bytes_t *self), void *owner, ruda_bytes_t *out) {
  out->data = data;
  out->size = size;
  out->property = property;
  out->release = release;
  out->owner = owner;
}

static void bytes_free_native(ruda_bytes_t *b) { ruda__free(b->owner); }

ruda_status_t ruda_bytes_from_copy(const void *data, uint64_t size, ruda_bytes_t *out) {
  if (!out || (!data && size)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_bytes_from_copy: NULL argument");
  }
  memset(out, 0, sizeof *out);
  if (size > SIZE_MAX - 1) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  void *p = ruda__malloc(size ? (size_t)size : 1);
  if (!p) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  if (size) memcpy(p, data, (size_t)size);
  ruda__bytes_set(p, size, RUDA_BYTES_NATIVE, bytes_free_native, p, out);
  return NULL;
}

static void staging_release(ruda_bytes_t *b) {
  if (b->owner) ruda__memory_release_handle(b->owner);
  b->owner = NULL;
}

void ruda__bytes_of_staging(ruda_memory_t *m, void *data, uint64_t size, ruda_bytes_t *out) {
  ruda__bytes_set(data, size, RUDA_BYTES_PINNED, staging_release, m, out);
}

void ruda_resource_release(ruda_resource_t *r) {
  if (!r) return;
  ruda_binding_release(&r->binding);
  memset(r, 0, sizeof *r);
}
