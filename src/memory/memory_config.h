/* How a memory manager is configured: the pool kinds and their options,
 * which preset (or custom list), and persistent memory. Plain data, read by
 * the pools (their options) and the manager (the whole configuration). */
#ifndef RUDA_MEMORY_CONFIG_H
#define RUDA_MEMORY_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "ruda/config.h"

typedef enum ruda__pool_kind {
  RUDA_POOL_SLICED = 0,    /* pages of page_size carved into slices */
  RUDA_POOL_EXCLUSIVE = 1, /* one allocation per page */
} ruda__pool_kind_t;

typedef struct ruda__pool_options {
  ruda__pool_kind_t kind;
  uint64_t page_size;       /* sliced */
  uint64_t max_slice_size;  /* sliced */
  uint64_t max_alloc_size;  /* exclusive */
  uint64_t dealloc_period;  /* allocations between periodic cleanups; UINT64_MAX: never */
} ruda__pool_options_t;

typedef enum ruda__memory_configuration {
  RUDA_MEMORY_SUBSLICES = 0,      /* default */
  RUDA_MEMORY_EXCLUSIVE_PAGES = 1,
  RUDA_MEMORY_CUSTOM = 2,
} ruda__memory_configuration_t;

#define RUDA_MAX_POOLS 32

typedef struct ruda__memory_config {
  ruda__memory_configuration_t configuration;
  uint32_t num_custom;
  ruda__pool_options_t custom[RUDA_MAX_POOLS];
  /* memory.persistent_memory: ENABLED, the mode setter applies; DISABLED,
   * the setter is ignored (always Auto); ENFORCED, always Persistent (the
   * setter is ignored). */
  ruda_persistent_memory_t persistent;
  /* false (default): ruda's page compaction: empty sliced pages go back to
   * the storage before a new page is taken, and large slices get pages of
   * their own size (bounded fragmentation; costs a storage allocation now
   * and then). true: pages stay until an explicit cleanup (a pool's pages
   * are reused, never reallocated, at the cost of holding every pool's
   * high-water mark). Storages whose allocations are slow or synchronising
   * (CUDA device memory) keep their pages. */
  bool keep_empty_pages;
} ruda__memory_config_t;

#endif
