/* Device properties: the stable checksum and feature queries. */
#include <stddef.h>
#include <stdlib.h>

#include "ruda/types.h"
#include "test.h"

static ruda_device_properties_t sample_gpu(void) {
  ruda_device_properties_t p;
  memset(&p, 0, sizeof(p));
  strcpy(p.name, "NVIDIA H200");
  p.features = RUDA_FEATURE_F16 | RUDA_FEATURE_BF16 | RUDA_FEATURE_F64 |
               RUDA_FEATURE_TMA | RUDA_FEATURE_FP8;
  p.memory.max_page_size = UINT64_C(1) << 30;
  p.memory.alignment = 256;
  ruda_hardware_properties_t *h = &p.hardware;
  h->load_width = 128;
  h->plane_size_min = 32;
  h->plane_size_max = 32;
  h->max_bindings = 1024;
  h->max_shared_memory_size = 232448;
  h->max_ruda_count[0] = 2147483647u;
  h->max_ruda_count[1] = 65535;
  h->max_ruda_count[2] = 65535;
  h->max_units_per_ruda = 1024;
  h->max_ruda_dim[0] = 1024;
  h->max_ruda_dim[1] = 1024;
  h->max_ruda_dim[2] = 64;
  h->num_streaming_multiprocessors = 132;
  h->num_cpu_cores = 0;
  h->num_tensor_cores = 528;
  h->min_tensor_cores_dim = 16;
  h->max_vector_size = 4;
  h->total_memory = UINT64_C(150) << 30;
  h->cache_l1 = 256 * 1024;
  h->cache_l2 = 50 * 1024 * 1024;
  h->cache_l3 = 0;
  h->compute_capability = 90;
  h->warp_size = 32;
  p.timing_method = RUDA_TIMING_DEVICE;
  return p;
}

TEST(checksum_is_deterministic) {
  ruda_device_properties_t a = sample_gpu();
  ruda_device_properties_t b = sample_gpu();
  ASSERT_UEQ(ruda_device_properties_checksum(&a),
             ruda_device_properties_checksum(&b));
  ASSERT_UEQ(ruda_device_properties_checksum(&a),
             ruda_device_properties_checksum(&a));
}

/* Pinned: a silent change to the serialization (field order, widths, seed,
 * hash) would make every on-disk cache entry unreachable or, worse, reuse
 * entries across different devices. Change this only together with
 * RUDA_PROPERTIES_FORMAT. */
TEST(checksum_golden_value) {
  ruda_device_properties_t a = sample_gpu();
  ASSERT_UEQ(ruda_device_properties_checksum(&a), UINT64_C(0x3a3a53591fc08017));
  ruda_device_properties_t zero;
  memset(&zero, 0, sizeof(zero));
  ASSERT_UEQ(ruda_device_properties_checksum(&zero), UINT64_C(0x5ec6c57ce8375bbb));
}

/* Bytes after the name's terminator and padding between fields do not
 * count: the checksum is of the values, not of the memory. */
TEST(checksum_ignores_bytes_that_are_not_values) {
  ruda_device_properties_t a = sample_gpu();
  ruda_device_properties_t b;
  memset(&b, 0x5a, sizeof(b));
  ruda_device_properties_t src = sample_gpu();
  memcpy(b.name, src.name, strlen(src.name) + 1);
  b.features = src.features;
  b.memory = src.memory;
  b.hardware = src.hardware;
  b.timing_method = src.timing_method;
  ASSERT_UEQ(ruda_device_properties_checksum(&a),
             ruda_device_properties_checksum(&b));
  /* A name that fills the whole buffer without a terminator is fine. */
  memset(a.name, 'x', sizeof(a.name));
  uint64_t full = ruda_device_properties_checksum(&a);
  a.name[sizeof(a.name) - 1] = 'y';
  ASSERT_UNE(full, ruda_device_properties_checksum(&a));
}

typedef struct field {
  const char *name;
  size_t offset;
  size_t size;
} field_t;

#define F(member)                                                     \
  {#member, offsetof(ruda_device_properties_t, member),               \
   sizeof(((ruda_device_properties_t *)0)->member)}

static const field_t kFields[] = {
    F(features),
    F(memory.max_page_size),
    F(memory.alignment),
    F(hardware.load_width),
    F(hardware.plane_size_min),
    F(hardware.plane_size_max),
    F(hardware.max_bindings),
    F(hardware.max_shared_memory_size),
    F(hardware.max_ruda_count[0]),
    F(hardware.max_ruda_count[1]),
    F(hardware.max_ruda_count[2]),
    F(hardware.max_units_per_ruda),
    F(hardware.max_ruda_dim[0]),
    F(hardware.max_ruda_dim[1]),
    F(hardware.max_ruda_dim[2]),
    F(hardware.num_streaming_multiprocessors),
    F(hardware.num_cpu_cores),
    F(hardware.num_tensor_cores),
    F(hardware.min_tensor_cores_dim),
    F(hardware.max_vector_size),
    F(hardware.total_memory),
    F(hardware.cache_l1),
    F(hardware.cache_l2),
    F(hardware.cache_l3),
    F(hardware.compute_capability),
    F(hardware.warp_size),
    F(timing_method),
};

/* Changing any one field, in its lowest or its highest byte, changes the
 * checksum; so does every name change, and no two changes collide. */
TEST(checksum_changes_with_every_field) {
  const ruda_device_properties_t base = sample_gpu();
  const uint64_t base_sum = ruda_device_properties_checksum(&base);
  size_t nfields = sizeof(kFields) / sizeof(kFields[0]);
  uint64_t *seen = calloc(nfields * 2 + 8, sizeof(uint64_t));
  ASSERT_NOT_NULL(seen);
  size_t nseen = 0;
  for (size_t i = 0; i < nfields; i++) {
    for (int which = 0; which < 2; which++) {
      ruda_device_properties_t p = base;
      unsigned char *bytes = (unsigned char *)&p + kFields[i].offset;
      /* Flip the value's low bit, or its top bit, whatever the host's byte
       * order: go through an integer of the field's width. */
      if (kFields[i].size == 8) {
        uint64_t v;
        memcpy(&v, bytes, 8);
        v ^= which ? UINT64_C(1) << 63 : 1;
        memcpy(bytes, &v, 8);
      } else {
        uint32_t v;
        memcpy(&v, bytes, 4);
        v ^= which ? UINT32_C(1) << 31 : 1;
        memcpy(bytes, &v, 4);
      }
      uint64_t sum = ruda_device_properties_checksum(&p);
      if (sum == base_sum) {
        rt_fail_msg(__FILE__, __LINE__, "changing %s did not change it",
                    kFields[i].name);
        free(seen);
        rt_fail();
      }
      for (size_t j = 0; j < nseen; j++) ASSERT_UNE(seen[j], sum);
      seen[nseen++] = sum;
    }
  }
  const char *names[] = {"NVIDIA H20", "NVIDIA H2000", "nvidia H200", ""};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    ruda_device_properties_t p = base;
    memset(p.name, 0, sizeof(p.name));
    strcpy(p.name, names[i]);
    uint64_t sum = ruda_device_properties_checksum(&p);
    ASSERT_UNE(sum, base_sum);
    for (size_t j = 0; j < nseen; j++) ASSERT_UNE(seen[j], sum);
    seen[nseen++] = sum;
  }
  free(seen);
  /* The table covers every field: a field added to the struct without a
   * line here (and in the serialization) fails this. */
  size_t hw = 0, mem = 0;
  for (size_t i = 0; i < nfields; i++) {
    if (strncmp(kFields[i].name, "hardware.", 9) == 0) hw += kFields[i].size;
    if (strncmp(kFields[i].name, "memory.", 7) == 0) mem += kFields[i].size;
  }
  ASSERT_UEQ(hw, sizeof(base.hardware));
  ASSERT_UEQ(mem, sizeof(base.memory));
  ASSERT_UEQ(offsetof(ruda_device_properties_t, timing_method) +
                 sizeof(base.timing_method),
             sizeof(base.name) + sizeof(base.features) + sizeof(base.memory) +
                 sizeof(base.hardware) + sizeof(base.timing_method));
}

TEST(checksum_of_null_is_zero) {
  ASSERT_UEQ(ruda_device_properties_checksum(NULL), 0);
}

TEST(properties_has_feature) {
  ruda_device_properties_t p = sample_gpu();
  ASSERT_TRUE(ruda_device_properties_has(&p, RUDA_FEATURE_TMA));
  ASSERT_TRUE(ruda_device_properties_has(&p, RUDA_FEATURE_F16 | RUDA_FEATURE_BF16));
  ASSERT_FALSE(ruda_device_properties_has(&p, RUDA_FEATURE_CLUSTERS));
  /* All bits must be present. */
  ASSERT_FALSE(ruda_device_properties_has(&p, RUDA_FEATURE_TMA | RUDA_FEATURE_CLUSTERS));
  ASSERT_FALSE(ruda_device_properties_has(&p, 0));
  ASSERT_FALSE(ruda_device_properties_has(NULL, RUDA_FEATURE_TMA));
}
