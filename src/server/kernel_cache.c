/* What every GPU backend's compiled-kernel cache holds (kernel_cache.h). */
#include "server/kernel_cache.h"

#include "base/alloc.h"
#include "base/log_internal.h"
#include "server/binary_cache.h"

void *ruda__kernel_cache_create(size_t size, uint64_t props_checksum, const char *root,
                                const char *backend) {
  ruda__kernel_cache_t *k = ruda__calloc(1, size);
  if (k == NULL) return NULL;
  if (!ruda__module_table_init(&k->table)) {
    ruda__free(k);
    return NULL;
  }
  k->props_checksum = props_checksum;
  char why[sizeof k->dir + 256];
  k->disk_disabled = !ruda__binary_cache_dir(root, backend, k->dir, sizeof k->dir, why,
                                             sizeof why);
  if (why[0]) ruda__warn(backend, "%s", why);
  return k;
}

void ruda__kernel_cache_destroy(void *cache, void (*release)(void *value, void *ctx), void *ctx) {
  ruda__kernel_cache_t *k = cache;
  if (k == NULL) return;
  ruda__module_table_destroy(&k->table, release, ctx);
  ruda__free(k);
}
