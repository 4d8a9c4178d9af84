/* Shapes, strides and memory layout descriptors. */
#include <stdlib.h>

#include "ruda/status.h"
#include "ruda/types.h"
#include "test.h"

static ruda_strides_t strides_of(uint32_t rank, const uint64_t *v) {
  ruda_strides_t st;
  memset(&st, 0, sizeof(st));
  st.rank = rank;
  for (uint32_t i = 0; i < rank; i++) st.values[i] = v[i];
  return st;
}

TEST(shape_init_copies_dims) {
  const uint64_t dims[3] = {2, 3, 4};
  ruda_shape_t s;
  memset(&s, 0xab, sizeof(s));
  ASSERT_OK(ruda_shape_init(&s, 3, dims));
  ASSERT_UEQ(s.rank, 3);
  ASSERT_UEQ(s.dims[0], 2);
  ASSERT_UEQ(s.dims[1], 3);
  ASSERT_UEQ(s.dims[2], 4);
  ASSERT_UEQ(s.dims[3], 0); /* the rest is zeroed */
  ASSERT_UEQ(s.dims[RUDA_MAX_RANK - 1], 0);
  ASSERT_UEQ(ruda_shape_num_elems(&s), 24);

  ASSERT_OK(ruda_shape_init(&s, 0, NULL));
  ASSERT_UEQ(s.rank, 0);
  ASSERT_UEQ(ruda_shape_num_elems(&s), 1);

  const uint64_t max_dims[RUDA_MAX_RANK] = {1, 2, 1, 2, 1, 2, 1, 2};
  ASSERT_OK(ruda_shape_init(&s, RUDA_MAX_RANK, max_dims));
  ASSERT_UEQ(ruda_shape_num_elems(&s), 16);
}

TEST(shape_init_rejects_bad_arguments) {
  const uint64_t dims[RUDA_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  ruda_shape_t s;
  ASSERT_ERR_KIND(ruda_shape_init(&s, RUDA_MAX_RANK + 1, dims),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_shape_init(&s, UINT32_MAX, dims),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_shape_init(&s, 2, NULL), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_shape_init(NULL, 1, dims), RUDA_ERR_INVALID_ARGUMENT);
}

TEST(shape_helpers_and_num_elems) {
  ruda_shape_t a = ruda_shape_1d(7);
  ASSERT_UEQ(a.rank, 1);
  ASSERT_UEQ(a.dims[0], 7);
  ASSERT_UEQ(ruda_shape_num_elems(&a), 7);
  ruda_shape_t b = ruda_shape_2d(3, 5);
  ASSERT_UEQ(b.rank, 2);
  ASSERT_UEQ(b.dims[0], 3);
  ASSERT_UEQ(b.dims[1], 5);
  ASSERT_UEQ(b.dims[2], 0);
  ASSERT_UEQ(ruda_shape_num_elems(&b), 15);
  ruda_shape_t z = ruda_shape_2d(0, 5);
  ASSERT_UEQ(ruda_shape_num_elems(&z), 0);
  /* Overflow saturates instead of wrapping to a small size. */
  ruda_shape_t big = ruda_shape_2d(UINT64_C(1) << 40, UINT64_C(1) << 40);
  ASSERT_UEQ(ruda_shape_num_elems(&big), UINT64_MAX);
  /* ...but a zero dim anywhere still gives 0. */
  const uint64_t dims[3] = {UINT64_C(1) << 40, UINT64_C(1) << 40, 0};
  ruda_shape_t s;
  ASSERT_OK(ruda_shape_init(&s, 3, dims));
  ASSERT_UEQ(ruda_shape_num_elems(&s), 0);
  ASSERT_UEQ(ruda_shape_num_elems(NULL), 0);
}

TEST(strides_contiguous_values) {
  const uint64_t dims[4] = {2, 3, 4, 5};
  ruda_shape_t s;
  ASSERT_OK(ruda_shape_init(&s, 4, dims));
  ruda_strides_t st = ruda_strides_contiguous(&s);
  ASSERT_UEQ(st.rank, 4);
  ASSERT_UEQ(st.values[0], 60);
  ASSERT_UEQ(st.values[1], 20);
  ASSERT_UEQ(st.values[2], 5);
  ASSERT_UEQ(st.values[3], 1);
  ASSERT_TRUE(ruda_strides_is_contiguous(&s, &st));
  ASSERT_TRUE(ruda_strides_is_pitched(&s, &st));

  ruda_shape_t scalar;
  ASSERT_OK(ruda_shape_init(&scalar, 0, NULL));
  ruda_strides_t sst = ruda_strides_contiguous(&scalar);
  ASSERT_UEQ(sst.rank, 0);
  ASSERT_TRUE(ruda_strides_is_contiguous(&scalar, &sst));
  ASSERT_TRUE(ruda_strides_is_pitched(&scalar, &sst));
}

TEST(strides_is_contiguous_rejects) {
  ruda_shape_t s = ruda_shape_2d(4, 8);
  const uint64_t transposed[2] = {1, 4};
  const uint64_t padded[2] = {16, 1};
  const uint64_t good[2] = {8, 1};
  ruda_strides_t t = strides_of(2, transposed);
  ruda_strides_t p = strides_of(2, padded);
  ruda_strides_t g = strides_of(2, good);
  ASSERT_TRUE(ruda_strides_is_contiguous(&s, &g));
  ASSERT_FALSE(ruda_strides_is_contiguous(&s, &t));
  ASSERT_FALSE(ruda_strides_is_contiguous(&s, &p));
  /* Rank mismatch. */
  ruda_strides_t r1 = strides_of(1, good + 1);
  ASSERT_FALSE(ruda_strides_is_contiguous(&s, &r1));
  ASSERT_FALSE(ruda_strides_is_contiguous(NULL, &g));
  ASSERT_FALSE(ruda_strides_is_contiguous(&s, NULL));
}

TEST(strides_is_pitched_cases) {
  const uint64_t dims[3] = {2, 3, 5};
  ruda_shape_t s;
  ASSERT_OK(ruda_shape_init(&s, 3, dims));
  static const struct {
    uint64_t strides[3];
    bool pitched;
  } cases[] = {
      /* Rows of 5 padded to 8: planes are 3 * 8 = 24. */
      {{24, 8, 1}, true},
      /* Exactly the row length is also pitched (pitch == width). */
      {{15, 5, 1}, true},
      /* Padding between planes is not allowed. */
      {{32, 8, 1}, false},
      /* A pitch shorter than a row overlaps rows. */
      {{12, 4, 1}, false},
      /* The innermost stride must be 1. */
      {{48, 16, 2}, false},
      /* Column-major. */
      {{1, 2, 6}, false}};
  ruda_strides_t st;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    st = strides_of(3, cases[i].strides);
    RT_CHECK_(ruda_strides_is_pitched(&s, &st) == cases[i].pitched, "case %zu: pitched is not %d",
              i, cases[i].pitched);
  }
  const uint64_t *pitched = cases[0].strides;
  st = strides_of(3, pitched);
  ASSERT_FALSE(ruda_strides_is_contiguous(&s, &st));
  /* Rank 1: only stride 1. */
  ruda_shape_t v = ruda_shape_1d(9);
  const uint64_t one = 1, two = 2;
  st = strides_of(1, &one);
  ASSERT_TRUE(ruda_strides_is_pitched(&v, &st));
  st = strides_of(1, &two);
  ASSERT_FALSE(ruda_strides_is_pitched(&v, &st));
  /* Rank mismatch and an outer stride that would overflow. */
  st = strides_of(2, pitched + 1);
  ASSERT_FALSE(ruda_strides_is_pitched(&s, &st));
  const uint64_t huge_dims[3] = {2, UINT64_C(1) << 40, 5};
  ASSERT_OK(ruda_shape_init(&s, 3, huge_dims));
  const uint64_t wrap[3] = {0, UINT64_C(1) << 40, 1};
  st = strides_of(3, wrap);
  ASSERT_FALSE(ruda_strides_is_pitched(&s, &st));
}

TEST(memory_layout_descriptors) {
  ruda_shape_t s = ruda_shape_2d(3, 7);
  ruda_memory_layout_descriptor_t o = ruda_memory_layout_optimized(s, 4);
  ASSERT_EQ(o.strategy, RUDA_LAYOUT_OPTIMIZED);
  ASSERT_UEQ(o.elem_size, 4);
  ASSERT_UEQ(o.shape.rank, 2);
  ASSERT_UEQ(o.shape.dims[1], 7);
  ruda_memory_layout_descriptor_t c = ruda_memory_layout_contiguous(s, 2);
  ASSERT_EQ(c.strategy, RUDA_LAYOUT_CONTIGUOUS);
  ASSERT_UEQ(c.elem_size, 2);
  ASSERT_UEQ(c.shape.dims[0], 3);
}

TEST(num_bytes_is_overflow_checked) {
  uint64_t out = 7;
  ruda_shape_t s = ruda_shape_2d(3, 5);
  ASSERT_TRUE(ruda_shape_num_bytes(&s, 4, &out));
  ASSERT_UEQ(out, 60);
  ruda_shape_t empty = ruda_shape_2d(0, UINT64_MAX);
  ASSERT_TRUE(ruda_shape_num_bytes(&empty, 8, &out));
  ASSERT_UEQ(out, 0);
  out = 7;
  ruda_shape_t big = ruda_shape_1d(UINT64_C(1) << 62);
  ASSERT_FALSE(ruda_shape_num_bytes(&big, 8, &out)); /* 2^65 bytes */
  ASSERT_UEQ(out, 7);
  ASSERT_TRUE(ruda_shape_num_bytes(&big, 2, &out));
  ASSERT_UEQ(out, UINT64_C(1) << 63);
  ruda_shape_t wraps = ruda_shape_2d(UINT64_C(1) << 33, UINT64_C(1) << 33);
  ASSERT_FALSE(ruda_shape_num_bytes(&wraps, 1, &out)); /* num_elems saturates */
  ASSERT_FALSE(ruda_shape_num_bytes(NULL, 1, &out));
}

TEST(extent_of_strided_views) {
  uint64_t out = 0;
  ruda_shape_t s = ruda_shape_2d(3, 5);
  ruda_strides_t contiguous = ruda_strides_contiguous(&s);
  ASSERT_TRUE(ruda_shape_extent(&s, &contiguous, 4, &out));
  ASSERT_UEQ(out, 60);
  const uint64_t pitched[2] = {8, 1};
  ruda_strides_t st = strides_of(2, pitched);
  ASSERT_TRUE(ruda_shape_extent(&s, &st, 4, &out));
  ASSERT_UEQ(out, (2 * 8 + 4 + 1) * 4); /* the last row ends at its width */
  const uint64_t transposed[2] = {1, 3};
  st = strides_of(2, transposed);
  ASSERT_TRUE(ruda_shape_extent(&s, &st, 4, &out));
  ASSERT_UEQ(out, (2 + 12 + 1) * 4);
  ruda_shape_t scalar;
  ASSERT_OK(ruda_shape_init(&scalar, 0, NULL));
  ruda_strides_t none = strides_of(0, NULL);
  ASSERT_TRUE(ruda_shape_extent(&scalar, &none, 8, &out));
  ASSERT_UEQ(out, 8);
  ruda_shape_t empty = ruda_shape_2d(0, 5);
  const uint64_t any[2] = {UINT64_MAX, UINT64_MAX};
  st = strides_of(2, any);
  ASSERT_TRUE(ruda_shape_extent(&empty, &st, 4, &out));
  ASSERT_UEQ(out, 0);
  /* Contiguous vectors (the byte reads and writes): n x elem_size, 0 for
   * none, and no wrap. */
  const uint64_t one[1] = {1};
  st = strides_of(1, one);
  ruda_shape_t v = ruda_shape_1d(7);
  ASSERT_TRUE(ruda_shape_extent(&v, &st, 4, &out));
  ASSERT_UEQ(out, 28);
  v = ruda_shape_1d(0);
  ASSERT_TRUE(ruda_shape_extent(&v, &st, UINT64_MAX, &out));
  ASSERT_UEQ(out, 0);
  out = 12345;
  v = ruda_shape_1d(UINT64_C(1) << 62);
  ASSERT_FALSE(ruda_shape_extent(&v, &st, 4, &out));
  ASSERT_UEQ(out, 12345);
  v = ruda_shape_1d(UINT64_MAX);
  ASSERT_TRUE(ruda_shape_extent(&v, &st, 1, &out));
  ASSERT_UEQ(out, UINT64_MAX);
}

TEST(extent_overflow_is_refused) {
  /* Issue 9: [2, 2] with strides {2^30, 2^64 - 1 - 2^30} wrapped to a
   * small extent: 2^30 + 2^64 - 1 - 2^30 + 1 = 2^64. */
  uint64_t out = 12345;
  ruda_shape_t s = ruda_shape_2d(2, 2);
  const uint64_t evil[2] = {UINT64_C(1) << 30, UINT64_MAX - (UINT64_C(1) << 30)};
  ruda_strides_t st = strides_of(2, evil);
  ASSERT_FALSE(ruda_shape_extent(&s, &st, 1, &out));
  ASSERT_UEQ(out, 12345);
  /* A single term that overflows, the +1, and the element size. */
  const uint64_t big[2] = {UINT64_C(1) << 63, 1};
  st = strides_of(2, big);
  ruda_shape_t three = ruda_shape_2d(3, 1);
  ASSERT_FALSE(ruda_shape_extent(&three, &st, 1, &out));
  const uint64_t max1[1] = {UINT64_MAX};
  st = strides_of(1, max1);
  ruda_shape_t two = ruda_shape_1d(2);
  ASSERT_FALSE(ruda_shape_extent(&two, &st, 1, &out));
  const uint64_t half[1] = {UINT64_C(1) << 62};
  st = strides_of(1, half);
  ASSERT_TRUE(ruda_shape_extent(&two, &st, 1, &out));
  ASSERT_FALSE(ruda_shape_extent(&two, &st, 4, &out));
  /* Rank mismatch, rank too large, NULL. */
  st = strides_of(1, half);
  ASSERT_FALSE(ruda_shape_extent(&s, &st, 1, &out));
  ASSERT_FALSE(ruda_shape_extent(NULL, &st, 1, &out));
  ASSERT_FALSE(ruda_shape_extent(&s, NULL, 1, &out));
}
