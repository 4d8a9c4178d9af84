/* What every GPU backend's compiled-kernel cache holds, whatever it keeps
 * per kernel (a CUDA module, an OpenCL program): the module table
 * (module_table.h), the disk folder (binary_cache.h), and the device
 * properties' checksum that its disk keys start from. A backend's cache
 * struct starts with a ruda__kernel_cache_t, made and freed here. Not
 * thread-safe (as the module table: its device's thread uses it). */
#ifndef RUDA_SERVER_KERNEL_CACHE_H
#define RUDA_SERVER_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/config.h"
#include "server/module_table.h"

typedef struct ruda__kernel_cache {
  ruda__module_table_t table; /* kernel hash -> the backend's entry */
  uint64_t props_checksum;
  bool disk_disabled;                 /* no folder, or writing it failed */
  char dir[RUDA_CONFIG_PATH_MAX + 8]; /* {cache root}/{backend}; "" when off */
} ruda__kernel_cache_t;

/* A zeroed backend cache struct of `size` bytes (its first member a
 * ruda__kernel_cache_t) with its table made and its disk folder
 * "{root}/{backend}" made private (ruda__binary_cache_dir: a folder that
 * is refused is warned about, "ruda[<backend>] warning: ...", and the disk
 * cache is off). NULL when memory is exhausted. */
void *ruda__kernel_cache_create(size_t size, uint64_t props_checksum, const char *root,
                                const char *backend);

/* Hands each entry to release(value, ctx), then frees the cache made by
 * ruda__kernel_cache_create (NULL: nothing). */
void ruda__kernel_cache_destroy(void *cache, void (*release)(void *value, void *ctx), void *ctx);

#endif /* RUDA_SERVER_KERNEL_CACHE_H */
