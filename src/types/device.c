/* Device ids and per-thread stream ids. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/sync.h"
#include "ruda/types.h"
#include "types/device_names.h"
#include "types/thread_stream.h"

static const struct {
  uint16_t type;
  const char *name;
} builtin_types[] = {
    {RUDA_DEVICE_TYPE_CPU, "cpu"},
    {RUDA_DEVICE_TYPE_CUDA, "cuda"},
    {RUDA_DEVICE_TYPE_OPENCL, "opencl"},
};

const char *ruda__device_type_builtin_name(uint16_t type_id) {
  for (size_t i = 0; i < sizeof builtin_types / sizeof builtin_types[0]; i++) {
    if (builtin_types[i].type == type_id) return builtin_types[i].name;
  }
  return NULL;
}

const uint16_t *ruda__device_type_builtin_ids(size_t *count) {
  static const uint16_t ids[] = {RUDA_DEVICE_TYPE_CPU, RUDA_DEVICE_TYPE_CUDA,
                                 RUDA_DEVICE_TYPE_OPENCL};
  *count = sizeof ids / sizeof ids[0];
  return ids;
}

bool ruda__device_type_builtin_id(const char *name, size_t len, uint16_t *out) {
  for (size_t i = 0; i < sizeof builtin_types / sizeof builtin_types[0]; i++) {
    const char *n = builtin_types[i].name;
    if (strlen(n) == len && memcmp(n, name, len) == 0) {
      *out = builtin_types[i].type;
      return true;
    }
  }
  return false;
}

/* The registry's lookup (device_names.h). Installed before main by the
 * server layer, read from any thread. */
/* Static storage: starts as a null pointer (an atomic function pointer
 * takes no NULL initialiser in every compiler). */
static _Atomic(ruda__device_type_name_fn) g_lookup;

ruda__device_type_name_fn ruda__device_type_names_install(ruda__device_type_name_fn lookup) {
  return atomic_exchange_explicit(&g_lookup, lookup, memory_order_acq_rel);
}

ruda__device_type_name_fn ruda__device_type_names_installed(void) {
  return atomic_load_explicit(&g_lookup, memory_order_acquire);
}

const char *ruda__device_type_known_name(uint16_t type_id) {
  ruda__device_type_name_fn lookup = ruda__device_type_names_installed();
  const char *name = lookup ? lookup(type_id) : NULL;
  return name ? name : ruda__device_type_builtin_name(type_id);
}

int ruda_device_id_cmp(ruda_device_id_t a, ruda_device_id_t b) {
  if (a.type_id != b.type_id) return a.type_id < b.type_id ? -1 : 1;
  if (a.index_id != b.index_id) return a.index_id < b.index_id ? -1 : 1;
  return 0;
}

RUDA__HOT
bool ruda_device_id_eq(ruda_device_id_t a, ruda_device_id_t b) {
  return a.type_id == b.type_id && a.index_id == b.index_id;
}

size_t ruda_device_id_format(ruda_device_id_t id, char *buf, size_t cap) {
  const char *name = ruda__device_type_known_name(id.type_id);
  int n = name ? snprintf(buf, cap, "%s:%u", name, (unsigned)id.index_id)
               : snprintf(buf, cap, "device-type-%u:%u", (unsigned)id.type_id,
                          (unsigned)id.index_id);
  return n < 0 ? 0 : (size_t)n;
}

/* The process-wide stream counter: the documented, lazily used global that
 * makes every OS thread its own stream. */
static atomic_uint_fast64_t g_next_stream = 0;

RUDA__THREAD_LOCAL ruda__thread_stream_t ruda__thread_stream;

ruda_stream_id_t ruda_stream_id_next(void) {
  ruda_stream_id_t id = {
      (uint64_t)atomic_fetch_add_explicit(&g_next_stream, 1,
                                          memory_order_relaxed)};
  return id;
}

ruda_stream_id_t ruda__thread_stream_draw(void) {
  ruda__thread_stream.value = ruda_stream_id_next().value;
  ruda__thread_stream.set = true;
  ruda_stream_id_t id = {ruda__thread_stream.value};
  return id;
}

RUDA__HOT
ruda_stream_id_t ruda_stream_id_current(void) { return ruda__stream_id_current(); }

ruda_stream_id_t ruda_stream_id_swap(ruda_stream_id_t id) {
  /* The thread's own id is drawn first (if it had none), so the value
   * returned is always a real stream the caller can swap back to. */
  ruda_stream_id_t prev = ruda__stream_id_current();
  ruda__thread_stream.value = id.value;
  return prev;
}
