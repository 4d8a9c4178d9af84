/* CommunicationId: the identity of a set of devices taking part in
 * collectives, a hash of the sorted device ids (so the same set gives the
 * same id whatever order it was listed in). Header-only, so every layer can
 * compute it. */
#ifndef RUDA_COMM_COMM_ID_H
#define RUDA_COMM_COMM_ID_H

#include <stddef.h>
#include <stdint.h>

#include "ruda/types.h"

static inline int ruda__comm_device_cmp(ruda_device_id_t a, ruda_device_id_t b) {
  if (a.type_id != b.type_id) return a.type_id < b.type_id ? -1 : 1;
  if (a.index_id != b.index_id) return a.index_id < b.index_id ? -1 : 1;
  return 0;
}

/* Sorts ids[0..n) in place (n is small: insertion sort). */
static inline void ruda__comm_sort_ids(ruda_device_id_t *ids, size_t n) {
  for (size_t i = 1; i < n; i++) {
    ruda_device_id_t v = ids[i];
    size_t j = i;
    while (j > 0 && ruda__comm_device_cmp(ids[j - 1], v) > 0) {
      ids[j] = ids[j - 1];
      j--;
    }
    ids[j] = v;
  }
}

/* FNV-1a over the sorted (type, index) pairs. `sorted` must be sorted. */
static inline uint64_t ruda__comm_id(const ruda_device_id_t *sorted, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    uint32_t w = ((uint32_t)sorted[i].type_id << 16) | sorted[i].index_id;
    for (int k = 0; k < 4; k++) {
      h ^= (w >> (8 * k)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  h ^= n;
  h *= 1099511628211ull;
  return h;
}

/* The position of `self` in `sorted`, or n when absent. */
static inline size_t ruda__comm_rank(const ruda_device_id_t *sorted, size_t n,
                                     ruda_device_id_t self) {
  for (size_t i = 0; i < n; i++) {
    if (ruda__comm_device_cmp(sorted[i], self) == 0) return i;
  }
  return n;
}

#endif
