/* Device properties: the stable checksum and feature queries. */
#include <string.h>

#include "types/hasher.h"

/* Bumped whenever the serialization below changes, so that old cache
 * entries keyed on a checksum are never mistaken for new ones. */
#define RUDA_PROPERTIES_FORMAT 1u
/* An arbitrary fixed seed, separating checksums from other hashes. */
#define RUDA_PROPERTIES_SEED UINT64_C(0x7275646170726f70) /* "rudaprop" */

static size_t name_len(const char *name, size_t cap) {
  const void *nul = memchr(name, '\0', cap);
  return nul ? (size_t)((const char *)nul - name) : cap;
}

/* Every field, in declaration order, as little-endian integers of fixed
 * width. The name contributes its bytes up to the terminator only, so
 * whatever follows the terminator in the buffer does not matter. */
uint64_t ruda_device_properties_checksum(const ruda_device_properties_t *p) {
  if (p == NULL) return 0;
  ruda__hasher_t h;
  ruda__hasher_init(&h, RUDA_PROPERTIES_SEED);
  ruda__hasher_u32(&h, RUDA_PROPERTIES_FORMAT);

  ruda__hasher_bytes(&h, p->name, name_len(p->name, sizeof(p->name)));
  ruda__hasher_u64(&h, p->features);

  ruda__hasher_u64(&h, p->memory.max_page_size);
  ruda__hasher_u64(&h, p->memory.alignment);

  const ruda_hardware_properties_t *hw = &p->hardware;
  ruda__hasher_u32(&h, hw->load_width);
  ruda__hasher_u32(&h, hw->plane_size_min);
  ruda__hasher_u32(&h, hw->plane_size_max);
  ruda__hasher_u32(&h, hw->max_bindings);
  ruda__hasher_u64(&h, hw->max_shared_memory_size);
  for (int i = 0; i < 3; i++) ruda__hasher_u32(&h, hw->max_ruda_count[i]);
  ruda__hasher_u32(&h, hw->max_units_per_ruda);
  for (int i = 0; i < 3; i++) ruda__hasher_u32(&h, hw->max_ruda_dim[i]);
  ruda__hasher_u32(&h, hw->num_streaming_multiprocessors);
  ruda__hasher_u32(&h, hw->num_cpu_cores);
  ruda__hasher_u32(&h, hw->num_tensor_cores);
  ruda__hasher_u32(&h, hw->min_tensor_cores_dim);
  ruda__hasher_u32(&h, hw->max_vector_size);
  ruda__hasher_u64(&h, hw->total_memory);
  ruda__hasher_u64(&h, hw->cache_l1);
  ruda__hasher_u64(&h, hw->cache_l2);
  ruda__hasher_u64(&h, hw->cache_l3);
  ruda__hasher_u32(&h, hw->compute_capability);
  ruda__hasher_u32(&h, hw->warp_size);

  ruda__hasher_u32(&h, (uint32_t)p->timing_method);

  ruda_hash128_t r = ruda__hasher_final(&h);
  return r.lo ^ r.hi;
}

bool ruda_device_properties_has(const ruda_device_properties_t *p,
                                uint64_t feature) {
  /* All requested bits must be present; asking for no feature is false. */
  return p != NULL && feature != 0 && (p->features & feature) == feature;
}
