/* Layout policies: Contiguous(align) and Pitched(align). */
#include "memory_test_util.h"

static ruda_memory_layout_descriptor_t desc(ruda_memory_layout_strategy_t strat, uint32_t rank,
                                            const uint64_t *dims, size_t elem) {
  ruda_memory_layout_descriptor_t d;
  memset(&d, 0, sizeof d);
  d.strategy = strat;
  d.shape.rank = rank;
  for (uint32_t i = 0; i < rank; i++) d.shape.dims[i] = dims[i];
  d.elem_size = elem;
  return d;
}

static void release_all(ruda_handle_t *base, ruda_memory_layout_t *l, size_t n) {
  for (size_t i = 0; i < n; i++) ruda_handle_release(&l[i].memory);
  ruda_handle_release(base);
}

/* Lays out one optimized tensor of `rank` dims `dims` and `elem`-byte
 * elements with the pitched policy of alignment 512 on `dev`, stream
 * `stream`: its base handle goes to `base`, its view to `l`. */
static void apply_pitched(ruda_device_id_t dev, uint64_t stream, uint32_t rank,
                          const uint64_t *dims, size_t elem, ruda_handle_t *base,
                          ruda_memory_layout_t *l) {
  ruda__layout_policy_t pol = {RUDA_LAYOUT_POLICY_PITCHED, 512};
  ruda_memory_layout_descriptor_t d = desc(RUDA_LAYOUT_OPTIMIZED, rank, dims, elem);
  ASSERT_OK(ruda__layout_apply(&pol, dev, (ruda_stream_id_t){stream}, &d, 1, base, l));
}

TEST(pitched_2d_f32_align_512) {
  uint64_t dims[] = {3, 5};
  ruda_handle_t base;
  ruda_memory_layout_t l;
  ruda_device_id_t dev = {RUDA_DEVICE_TYPE_CUDA, 1};
  apply_pitched(dev, 9, 2, dims, 4, &base, &l);
  ASSERT_EQ(l.strides.rank, 2);
  ASSERT_UEQ(l.strides.values[0], 8);
  ASSERT_UEQ(l.strides.values[1], 1);
  ASSERT_UEQ(ruda_handle_size_in_used(&l.memory), 96);
  /* The allocation ends where the view does: the pool's alignment padding
   * is padding in the usage report, not bytes in use. */
  ASSERT_UEQ(base.size, 96);
  ASSERT_UEQ(l.memory.size, 96);
  ASSERT_UEQ(l.memory.offset_start, 0);
  ASSERT_UEQ(l.memory.offset_end, 0);
  ASSERT_UEQ(ruda_handle_stream(&l.memory).value, 9);
  ASSERT_TRUE(ruda_device_id_eq(ruda_handle_device(&l.memory), dev));
  ASSERT_UEQ(ruda_handle_memory_id(&l.memory), ruda_handle_memory_id(&base));
  ASSERT_OK(ruda_handle_validate(&l.memory));
  /* Base and view are two handles on one descriptor: neither may mutate. */
  ASSERT_UEQ(atomic_load(&MEM(base)->handle_refs), 2);
  ASSERT_FALSE(ruda_handle_can_mut(&base));
  ASSERT_FALSE(ruda__memory_is_bound(MEM(base)));
  ASSERT_FALSE(ruda_handle_is_bound(&base));
  release_all(&base, &l, 1);
}

TEST(pitched_3d_strides) {
  uint64_t dims[] = {2, 3, 5};
  ruda_handle_t base;
  ruda_memory_layout_t l;
  apply_pitched((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, 0, 3, dims, 4, &base, &l);
  ASSERT_UEQ(l.strides.values[0], 24);
  ASSERT_UEQ(l.strides.values[1], 8);
  ASSERT_UEQ(l.strides.values[2], 1);
  ASSERT_UEQ(ruda_handle_size_in_used(&l.memory), 6 * 32);
  release_all(&base, &l, 1);
}

TEST(pitched_contiguous_strategy_and_edge_widths) {
  ruda__layout_policy_t pol = {RUDA_LAYOUT_POLICY_PITCHED, 512};
  ruda_stream_id_t stream = {0};
  ruda_device_id_t dev = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_handle_t base;
  ruda_memory_layout_t l[4];
  uint64_t d35[] = {3, 5}, d41[] = {4, 1}, d2x100[] = {2, 100};
  ruda_memory_layout_descriptor_t ds[4] = {
      desc(RUDA_LAYOUT_CONTIGUOUS, 2, d35, 4),  /* pitch_align 1: no padding */
      desc(RUDA_LAYOUT_OPTIMIZED, 2, d41, 2),   /* width 1: pitch_align = elem */
      desc(RUDA_LAYOUT_OPTIMIZED, 2, d2x100, 8),/* 800 B rows: clamped to 512 */
      desc(RUDA_LAYOUT_OPTIMIZED, 0, NULL, 4),  /* a scalar */
  };
  ASSERT_OK(ruda__layout_apply(&pol, dev, stream, ds, 4, &base, l));
  ASSERT_UEQ(l[0].strides.values[0], 5);
  ASSERT_UEQ(ruda_handle_size_in_used(&l[0].memory), 60);
  ASSERT_UEQ(l[1].strides.values[0], 1);
  ASSERT_UEQ(ruda_handle_size_in_used(&l[1].memory), 8);
  ASSERT_UEQ(l[2].strides.values[0], 1024 / 8);
  ASSERT_UEQ(ruda_handle_size_in_used(&l[2].memory), 2048);
  ASSERT_EQ(l[3].strides.rank, 0);
  ASSERT_UEQ(ruda_handle_size_in_used(&l[3].memory), 4);
  /* Offsets: each view starts at the previous one rounded up to 512. */
  ASSERT_UEQ(l[1].memory.offset_start, 512);
  ASSERT_UEQ(l[2].memory.offset_start, 1024);
  ASSERT_UEQ(l[3].memory.offset_start, 3072);
  ASSERT_UEQ(base.size, 3072 + 4);
  for (int i = 0; i < 4; i++)
    ASSERT_UEQ(l[i].memory.offset_start + ruda_handle_size_in_used(&l[i].memory) +
                   l[i].memory.offset_end,
               base.size);
  release_all(&base, l, 4);
}

TEST(contiguous_policy) {
  ruda__layout_policy_t pol = {RUDA_LAYOUT_POLICY_CONTIGUOUS, 8};
  ruda_stream_id_t stream = {1};
  ruda_device_id_t dev = {RUDA_DEVICE_TYPE_CPU, 0};
  uint64_t a[] = {3, 5}, b[] = {2, 3, 7};
  ruda_memory_layout_descriptor_t ds[2] = {desc(RUDA_LAYOUT_OPTIMIZED, 2, a, 4),
                                           desc(RUDA_LAYOUT_CONTIGUOUS, 3, b, 1)};
  ruda_handle_t base;
  ruda_memory_layout_t l[2];
  ASSERT_OK(ruda__layout_apply(&pol, dev, stream, ds, 2, &base, l));
  ASSERT_UEQ(l[0].strides.values[0], 5); /* no pitch even when optimized */
  ASSERT_UEQ(ruda_handle_size_in_used(&l[0].memory), 60);
  ASSERT_UEQ(l[1].memory.offset_start, 64);
  ASSERT_UEQ(l[1].strides.values[0], 21);
  ASSERT_UEQ(l[1].strides.values[1], 7);
  ASSERT_UEQ(l[1].strides.values[2], 1);
  ASSERT_UEQ(ruda_handle_size_in_used(&l[1].memory), 42);
  ASSERT_UEQ(base.size, 64 + 42);
  release_all(&base, l, 2);
}

TEST(layout_views_resolve_into_one_allocation) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda__layout_policy_t pol = {RUDA_LAYOUT_POLICY_PITCHED, 512};
  ruda_stream_id_t stream = {0};
  ruda_device_id_t dev = {RUDA_DEVICE_TYPE_CPU, 0};
  uint64_t a[] = {3, 5};
  ruda_memory_layout_descriptor_t ds[2] = {desc(RUDA_LAYOUT_OPTIMIZED, 2, a, 4),
                                           desc(RUDA_LAYOUT_OPTIMIZED, 2, a, 4)};
  ruda_handle_t base;
  ruda_memory_layout_t l[2];
  ASSERT_OK(ruda__layout_apply(&pol, dev, stream, ds, 2, &base, l));
  ASSERT_OK(ruda__memory_alloc(mm, MEM(base), base.size, 0));
  ruda__storage_handle_t s0 = resolve(mm, &l[0].memory), s1 = resolve(mm, &l[1].memory);
  ASSERT_UEQ(s0.id, s1.id);
  ASSERT_UEQ(s1.offset - s0.offset, 512);
  ASSERT_UEQ(s0.size, 96);
  /* The allocation stays busy while any view lives. */
  ruda_handle_release(&base);
  ruda_handle_release(&l[0].memory);
  ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 1);
  ruda_handle_release(&l[1].memory);
  destroy_empty(mm);
}

TEST(pitched_usage_counts_used_bytes_and_padding_apart) {
  /* Issue 16: a pitched [3, 5] f32 tensor with 512-byte alignment uses 96
   * bytes of a 512-byte slice: 96 in use, 416 of padding. */
  counting_storage_t cs;
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 512, 0, NULL);
  ruda__layout_policy_t pol = {RUDA_LAYOUT_POLICY_PITCHED, 512};
  uint64_t a[] = {3, 5};
  ruda_memory_layout_descriptor_t d = desc(RUDA_LAYOUT_OPTIMIZED, 2, a, 4);
  ruda_handle_t base;
  ruda_memory_layout_t l;
  ASSERT_OK(ruda__layout_apply(&pol, (ruda_device_id_t){RUDA_DEVICE_TYPE_CUDA, 0},
                               (ruda_stream_id_t){0}, &d, 1, &base, &l));
  ASSERT_OK(ruda__memory_alloc(mm, MEM(base), base.size, 0));
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UEQ(u.number_allocs, 1);
  ASSERT_UEQ(u.bytes_in_use, 96);
  ASSERT_UEQ(u.bytes_padding, 416);
  ASSERT_UGE(u.bytes_reserved, 512);
  release_all(&base, &l, 1);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_in_use, 0);
  ruda__memory_manager_destroy(mm);
}

TEST(layout_errors) {
  ruda__layout_policy_t pol = {RUDA_LAYOUT_POLICY_PITCHED, 512};
  ruda_stream_id_t stream = {0};
  ruda_device_id_t dev = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_handle_t base;
  ruda_memory_layout_t l;
  uint64_t a[] = {3, 5};
  ruda_memory_layout_descriptor_t d = desc(RUDA_LAYOUT_OPTIMIZED, 2, a, 0);
  ASSERT_ERR_KIND(ruda__layout_apply(&pol, dev, stream, &d, 1, &base, &l), RUDA_ERR_INVALID_ARGUMENT);
  uint64_t huge[] = {UINT64_MAX / 2, 4};
  d = desc(RUDA_LAYOUT_OPTIMIZED, 2, huge, 4);
  ASSERT_ERR_KIND(ruda__layout_apply(&pol, dev, stream, &d, 1, &base, &l), RUDA_ERR_IO_BUFFER_TOO_BIG);
  pol.kind = RUDA_LAYOUT_POLICY_CONTIGUOUS;
  ASSERT_ERR_KIND(ruda__layout_apply(&pol, dev, stream, &d, 1, &base, &l), RUDA_ERR_IO_BUFFER_TOO_BIG);
  ASSERT_TRUE(ruda_handle_is_empty(&base));
  d.shape.rank = RUDA_MAX_RANK + 1;
  ASSERT_ERR_KIND(ruda__layout_apply(&pol, dev, stream, &d, 1, &base, &l), RUDA_ERR_INVALID_ARGUMENT);
}
