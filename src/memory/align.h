/* Alignment arithmetic shared by the pools, the manager and the layout
 * policies. */
#ifndef RUDA_MEMORY_ALIGN_H
#define RUDA_MEMORY_ALIGN_H

#include <stdint.h>

static inline uint64_t ruda__round_up(uint64_t v, uint64_t a) {
  if (a <= 1) return v;
  uint64_t r = v % a;
  return r ? v + (a - r) : v;
}
static inline uint64_t ruda__padding(uint64_t size, uint64_t a) {
  if (a <= 1) return 0;
  return (a - size % a) % a;
}

#endif
