/* The compiled-module table: one per device (server), or one per process
 * where a backend's loaded code is the process's (the CPU backend's shared
 * objects), from a kernel's stable hash (ruda_kernel_hash) to what its
 * backend built and loaded for it (a CUDA module and function, an OpenCL
 * program and kernel, a function of a shared object). Every backend that compiles kernels at run time keeps its
 * loaded code here; the disk caches are binary_cache.h.
 *
 * Open addressing with linear probing, power-of-two capacity, grown at half
 * full; entries are never removed one by one (the table lives as long as
 * its device). Not thread-safe: the caller serialises finds and inserts
 * (the backends call it from the device's own thread or under a lock of
 * theirs). A value's memory is the caller's: the
 * table stores the pointer, and destroy hands each one back to a release
 * callback. */
#ifndef RUDA_SERVER_MODULE_TABLE_H
#define RUDA_SERVER_MODULE_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "ruda/types.h"

typedef struct ruda__module_slot {
  ruda_hash128_t key;
  void *value; /* NULL: the slot is empty */
} ruda__module_slot_t;

typedef struct ruda__module_table {
  ruda__module_slot_t *slots;
  size_t cap; /* a power of two */
  size_t len;
} ruda__module_table_t;

/* An empty table (64 slots to start). false: out of memory (*t is then
 * left empty, and destroy on it does nothing). */
bool ruda__module_table_init(ruda__module_table_t *t);

/* Calls release(value, ctx) for each value (when release is not NULL),
 * then frees the slots. *t is left empty. */
void ruda__module_table_destroy(ruda__module_table_t *t, void (*release)(void *value, void *ctx),
                                void *ctx);

/* Adds key -> value (value not NULL; key not already present). false: out
 * of memory growing the table (the table is unchanged; value is still the
 * caller's). */
bool ruda__module_table_insert(ruda__module_table_t *t, ruda_hash128_t key, void *value);

static inline size_t ruda__module_table_home(const ruda__module_table_t *t, ruda_hash128_t k) {
  return (size_t)(k.lo ^ (k.hi * 0x9e3779b97f4a7c15ull)) & (t->cap - 1);
}

/* The value stored for key, or NULL. Inline: it is on every launch's
 * path. */
static inline void *ruda__module_table_find(const ruda__module_table_t *t, ruda_hash128_t key) {
  if (t->cap == 0) return NULL;
  for (size_t i = ruda__module_table_home(t, key), n = 0; n < t->cap;
       i = (i + 1) & (t->cap - 1), n++) {
    const ruda__module_slot_t *s = &t->slots[i];
    if (s->value == NULL) return NULL;
    if (s->key.lo == key.lo && s->key.hi == key.hi) return s->value;
  }
  return NULL;
}

#endif
