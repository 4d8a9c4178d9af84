/* The packed info words of a launch (MetadataBindingInfo). */
#include <stdlib.h>

#include "base/alloc.h"
#include "ruda/status.h"
#include "ruda/types.h"
#include "test.h"

static uint64_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static uint64_t pack2(uint64_t lo, uint64_t hi) { return lo | (hi << 32); }

/* Word contents below are written for a little-endian host (every target
 * ruda supports); elsewhere the bytes are right but the words read
 * differently. */
static void require_little_endian(void) {
  const uint16_t one = 1;
  uint8_t first;
  memcpy(&first, &one, 1);
  if (first != 1) SKIP("word-level expectations assume a little-endian host");
}

#define ASSERT_WORDS(info, ...)                                         \
  do {                                                                  \
    const uint64_t want_[] = {__VA_ARGS__};                             \
    size_t n_ = sizeof(want_) / sizeof(want_[0]);                       \
    ASSERT_UEQ((info).len, n_);                                         \
    for (size_t i_ = 0; i_ < n_; i_++) {                                \
      if ((info).data[i_] != want_[i_]) {                               \
        rt_fail_msg(__FILE__, __LINE__,                                 \
                    "word %zu: 0x%016" PRIx64 " vs 0x%016" PRIx64, i_,  \
                    (info).data[i_], want_[i_]);                        \
        rt_fail();                                                      \
      }                                                                 \
    }                                                                   \
  } while (0)

TEST(info_full_layout) {
  require_little_endian();
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  const float f[3] = {1.0f, 2.0f, 3.0f};
  const uint8_t u8[2] = {7, 9};
  const uint64_t stat[3] = {10, 20, 30};
  const uint64_t dyn[2] = {100, UINT64_C(0x1122334455667788)};
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, f, 3);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_U8, u8, 2);
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, stat, 3);
  ruda_info_builder_push_dynamic_metadata(&b, RUDA_ADDRESS_U64, dyn, 2);
  ruda_info_t info;
  ASSERT_OK(ruda_info_builder_finish(&b, &info));
  /* three f32 take 2 words; two u8 take 1; three u32 metadata 2; two u64 2 */
  ASSERT_WORDS(info, pack2(f32_bits(1.0f), f32_bits(2.0f)), f32_bits(3.0f),
               0x0907, pack2(10, 20), 30, 100, UINT64_C(0x1122334455667788));
  ASSERT_UEQ(info.dynamic_metadata_offset, 5);
  ruda_info_builder_deinit(&b);
}

TEST(info_groups_continue_across_pushes_of_one_type) {
  require_little_endian();
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  const uint16_t a[3] = {0x1111, 0x2222, 0x3333};
  const uint16_t c[3] = {0x4444, 0x5555, 0x6666};
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_U16, a, 3);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_U16, c, 3);
  const double d = 0.5;
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F64, &d, 1);
  const uint64_t m1[1] = {1}, m2[2] = {2, 3};
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, m1, 1);
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, m2, 2);
  ruda_info_t info;
  ASSERT_OK(ruda_info_builder_finish(&b, &info));
  uint64_t dbits;
  memcpy(&dbits, &d, 8);
  ASSERT_WORDS(info, UINT64_C(0x4444333322221111), 0x66665555, dbits,
               pack2(1, 2), 3);
  /* No dynamic metadata: the offset is the end. */
  ASSERT_UEQ(info.dynamic_metadata_offset, 5);
  ruda_info_builder_deinit(&b);
}

TEST(info_u64_metadata_and_mixed_address_types) {
  require_little_endian();
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  const uint64_t u32s[1] = {5};
  const uint64_t u64s[1] = {UINT64_C(1) << 40};
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, u32s, 1);
  /* A switch of address type starts a new word. */
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U64, u64s, 1);
  ruda_info_builder_push_dynamic_metadata(&b, RUDA_ADDRESS_U32, u32s, 1);
  ruda_info_t info;
  ASSERT_OK(ruda_info_builder_finish(&b, &info));
  ASSERT_WORDS(info, 5, UINT64_C(1) << 40, 5);
  ASSERT_UEQ(info.dynamic_metadata_offset, 2);
  ruda_info_builder_deinit(&b);
}

TEST(info_sizes_of_scalar_groups) {
  require_little_endian();
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  const int16_t i16[5] = {1, 2, 3, 4, 5}; /* 10 bytes: 2 words */
  const uint32_t bools[3] = {1, 0, 1};    /* bool is stored as u32: 2 words */
  const uint8_t fp8[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}; /* 2 words */
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_I16, i16, 5);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_BOOL, bools, 3);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_E4M3, fp8, 9);
  ruda_info_t info;
  ASSERT_OK(ruda_info_builder_finish(&b, &info));
  ASSERT_WORDS(info, UINT64_C(0x0004000300020001), 5, pack2(1, 0), 1,
               UINT64_C(0x0807060504030201), 9);
  ruda_info_builder_deinit(&b);
}

TEST(info_empty_and_dynamic_only) {
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  ruda_info_t info;
  ASSERT_OK(ruda_info_builder_finish(&b, &info));
  ASSERT_UEQ(info.len, 0);
  ASSERT_UEQ(info.dynamic_metadata_offset, 0);
  /* Pushing zero values is allowed. */
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, NULL, 0);
  const uint64_t v[1] = {42};
  ruda_info_builder_push_dynamic_metadata(&b, RUDA_ADDRESS_U64, v, 1);
  ASSERT_OK(ruda_info_builder_finish(&b, &info));
  ASSERT_UEQ(info.len, 1);
  ASSERT_UEQ(info.data[0], 42);
  ASSERT_UEQ(info.dynamic_metadata_offset, 0);
  ruda_info_builder_deinit(&b);
  ruda_info_builder_deinit(&b); /* deinit twice is harmless */
}

TEST(info_grows_past_initial_capacity) {
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  enum { N = 1000 };
  uint64_t *vals = malloc(N * sizeof(uint64_t));
  ASSERT_NOT_NULL(vals);
  for (uint64_t i = 0; i < N; i++) vals[i] = i * 3;
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U64, vals, N);
  ruda_info_builder_push_dynamic_metadata(&b, RUDA_ADDRESS_U32, vals, N);
  free(vals);
  ruda_info_t info;
  ASSERT_OK(ruda_info_builder_finish(&b, &info));
  ASSERT_UEQ(info.len, N + N / 2);
  ASSERT_UEQ(info.dynamic_metadata_offset, N);
  ASSERT_UEQ(info.data[N - 1], (N - 1) * 3);
  uint32_t last;
  memcpy(&last, (const unsigned char *)info.data + 8 * N + 4 * (N - 1), 4);
  ASSERT_UEQ(last, (N - 1) * 3);
  ruda_info_builder_deinit(&b);
}

static ruda_status_t finish_status(ruda_info_builder_t *b) {
  ruda_info_t info;
  return ruda_info_builder_finish(b, &info);
}

TEST(info_scalars_after_metadata_fail) {
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  const uint64_t m[1] = {1};
  const float f = 1.0f;
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, m, 1);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, &f, 1);
  ASSERT_NOT_NULL(b.error);
  /* Later pushes are ignored; the first failure is reported, each time. */
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, m, 1);
  ASSERT_UEQ(b.len, 1);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
  ASSERT_NULL(b.error);
  /* The builder is usable again after deinit. */
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, &f, 1);
  ASSERT_OK(finish_status(&b));
  ruda_info_builder_deinit(&b);
}

TEST(info_static_after_dynamic_fails) {
  ruda_info_builder_t b;
  ruda_info_builder_init(&b);
  const uint64_t m[1] = {1};
  ruda_info_builder_push_dynamic_metadata(&b, RUDA_ADDRESS_U32, m, 1);
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, m, 1);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
}

TEST(info_misuse_fails) {
  ruda_info_builder_t b;
  const float f = 1.0f;
  const uint8_t u = 1;
  /* A type's second group. */
  ruda_info_builder_init(&b);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, &f, 1);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_U8, &u, 1);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, &f, 1);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
  /* An invalid element type. */
  ruda_info_builder_init(&b);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_COUNT_, &f, 1);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
  /* NULL values. */
  ruda_info_builder_init(&b);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F32, NULL, 2);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
  ruda_info_builder_init(&b);
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U64, NULL, 2);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
  /* A value too large for a u32 address. */
  ruda_info_builder_init(&b);
  const uint64_t big[2] = {1, UINT64_C(1) << 32};
  ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U32, big, 2);
  ASSERT_UEQ(b.len, 0); /* nothing half-written */
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
  /* An invalid address type. */
  ruda_info_builder_init(&b);
  ruda_info_builder_push_dynamic_metadata(&b, (ruda_address_type_t)5, big, 1);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
  /* NULL arguments to finish. */
  ruda_info_builder_init(&b);
  ASSERT_ERR_KIND(ruda_info_builder_finish(&b, NULL), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_t info;
  ASSERT_ERR_KIND(ruda_info_builder_finish(NULL, &info), RUDA_ERR_INVALID_ARGUMENT);
  ruda_info_builder_deinit(&b);
}

/* Sizes no allocation can satisfy are reported as LaunchError::OutOfMemory
 * from _finish, never attempted and never a crash. */
TEST(info_out_of_memory) {
  ruda_info_builder_t b;
  const uint8_t byte = 1;
  ruda_info_builder_init(&b);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_F64, &byte, SIZE_MAX / 4);
  ASSERT_NOT_NULL(b.error);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_LAUNCH_OUT_OF_MEMORY);
  ruda_info_builder_deinit(&b);

  ruda_info_builder_init(&b);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_U8, &byte, 1);
  ruda_info_builder_push_scalars(&b, RUDA_ELEM_U16, &byte, SIZE_MAX / 2 - 1);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_LAUNCH_OUT_OF_MEMORY);
  ruda_info_builder_deinit(&b);

  ruda_info_builder_init(&b);
  const uint64_t v = 1;
  ruda_info_builder_push_dynamic_metadata(&b, RUDA_ADDRESS_U64, &v, SIZE_MAX / 8);
  ASSERT_ERR_KIND(finish_status(&b), RUDA_ERR_LAUNCH_OUT_OF_MEMORY);
  /* The builder still frees cleanly. */
  ruda_info_builder_deinit(&b);
}

/* The words come from ruda's allocator: failing its Nth allocation, for N
 * = 0, 1, 2... until the build succeeds, runs every out-of-memory path.
 * Each failure is LaunchError::OutOfMemory, and the words read back right
 * once it succeeds. */
TEST(info_every_allocation_failure_path) {
  const uint32_t scalars[20] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  const uint64_t meta[40] = {7};
  bool done = false;
  uint64_t failures = 0;
  for (int64_t n = 0; !done && n < 100; n++) {
    ruda_info_builder_t b;
    ruda_info_builder_init(&b);
    ruda__test_fail_alloc_after(n);
    ruda_info_builder_push_scalars(&b, RUDA_ELEM_U32, scalars, 20);
    ruda_info_builder_push_static_metadata(&b, RUDA_ADDRESS_U64, meta, 40);
    ruda_info_t info;
    ruda_status_t st = ruda_info_builder_finish(&b, &info);
    ruda__test_fail_alloc_after(-1);
    if (st != NULL) {
      failures++;
      ASSERT_ERR_KIND(st, RUDA_ERR_LAUNCH_OUT_OF_MEMORY);
    } else {
      ASSERT_UEQ(info.len, 50);
      ASSERT_UEQ(info.data[0], pack2(1, 2));
      ASSERT_UEQ(info.data[10], 7);
      done = true;
    }
    ruda_info_builder_deinit(&b);
  }
  ASSERT_TRUE(done);
  ASSERT_UGT(failures, 0);
}
