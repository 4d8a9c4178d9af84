/* Dispatch: dims, counts, the count spread and selection, modes. */
#include "ruda/types.h"
#include "test.h"

static ruda_count3_t spread(uint32_t mx, uint32_t my, uint32_t mz, uint32_t n) {
  const uint32_t max[3] = {mx, my, mz};
  return ruda_count_spread(max, n);
}

#define ASSERT_COUNT(c, ex, ey, ez) \
  do {                              \
    ruda_count3_t c_ = (c);         \
    ASSERT_UEQ(c_.x, ex);           \
    ASSERT_UEQ(c_.y, ey);           \
    ASSERT_UEQ(c_.z, ez);           \
  } while (0)

#define ASSERT_DIM(d, ex, ey, ez) \
  do {                            \
    ruda_dim_t d_ = (d);          \
    ASSERT_UEQ(d_.x, ex);         \
    ASSERT_UEQ(d_.y, ey);         \
    ASSERT_UEQ(d_.z, ez);         \
  } while (0)

/* Two requests too large for x: an even one that ends in z, and an odd one
 * that rounds up on every halving (25 * 32 * 4 = 3200 >= 3177). */
TEST(count_spread_seed_even) { ASSERT_COUNT(spread(32, 32, 32, 2048), 32, 32, 2); }

TEST(count_spread_seed_odd) {
  ASSERT_COUNT(spread(48, 32, 16, 3177), 25, 32, 4);
}

TEST(count_spread_exact_fits) {
  ASSERT_COUNT(spread(32, 32, 32, 32), 32, 1, 1);
  ASSERT_COUNT(spread(32, 32, 32, 17), 17, 1, 1);
  ASSERT_COUNT(spread(65535, 65535, 65535, 65535), 65535, 1, 1);
  /* Halving x once fits x; y then fits. */
  ASSERT_COUNT(spread(32, 32, 32, 64), 32, 2, 1);
  ASSERT_COUNT(spread(32, 32, 32, 1024), 32, 32, 1);
}

TEST(count_spread_small_and_zero) {
  ASSERT_COUNT(spread(32, 32, 32, 0), 0, 1, 1);
  ASSERT_COUNT(spread(32, 32, 32, 1), 1, 1, 1);
  ASSERT_COUNT(spread(1, 1, 1, 1), 1, 1, 1);
  ASSERT_COUNT(spread(1, 1, 1, 0), 0, 1, 1);
}

TEST(count_spread_max_of_ones) {
  /* Everything ends up on z, which is never checked. */
  ASSERT_COUNT(spread(1, 1, 1, 8), 1, 1, 8);
  /* ceil halving: 5 -> 3 -> 2 -> 1 gives y = 8, then 8 -> 1 gives z = 8. */
  ASSERT_COUNT(spread(1, 1, 1, 5), 1, 1, 8);
  ASSERT_COUNT(spread(1, 4, 1, 5), 1, 4, 2);
  /* 2^32 - 1 rudas: y reaches 2^32 before it is halved; nothing wraps. */
  ASSERT_COUNT(spread(1, 1, 1, UINT32_MAX), 1, 1, UINT32_MAX);
  ASSERT_COUNT(spread(1, 65536, 1, UINT32_MAX), 1, 65536, 65536);
}

TEST(count_spread_y_halving) {
  /* x halves to 4 (y = 256), then y halves to 16 (z = 16). */
  ASSERT_COUNT(spread(4, 16, 1, 1024), 4, 16, 16);
  /* The first axis that fits stops everything: y is not checked when x
   * fits at once. */
  ASSERT_COUNT(spread(1024, 1, 1, 1024), 1024, 1, 1);
}

TEST(count_spread_zero_max_is_one) {
  /* A zero limit would never be met; it acts as 1. */
  ASSERT_COUNT(spread(0, 0, 0, 4), 1, 1, 4);
}

TEST(count_spread_never_loses_rudas) {
  /* Property: the spread covers n and fits x and y within max. */
  const uint32_t maxes[][3] = {{32, 32, 32}, {48, 32, 16}, {7, 5, 3},
                               {65535, 65535, 65535}, {1, 3, 1}};
  for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
    for (uint32_t n = 1; n < 5000; n += 37) {
      ruda_count3_t c = ruda_count_spread(maxes[m], n);
      uint64_t total = (uint64_t)c.x * c.y * c.z;
      ASSERT_UGE(total, n);
      ASSERT_ULE(c.x, maxes[m][0]);
      if (c.z > 1) ASSERT_ULE(c.y, maxes[m][1]);
    }
  }
}

static ruda_device_properties_t gpu_props(void) {
  ruda_device_properties_t p;
  memset(&p, 0, sizeof(p));
  p.hardware.plane_size_min = 32;
  p.hardware.plane_size_max = 32;
  p.hardware.max_units_per_ruda = 1024;
  p.hardware.max_ruda_count[0] = 32;
  p.hardware.max_ruda_count[1] = 32;
  p.hardware.max_ruda_count[2] = 32;
  return p;
}

TEST(count_selection_exact_and_approx) {
  ruda_device_properties_t p = gpu_props();
  ruda_count_selection_t s = ruda_count_selection_new(&p, 2048);
  ASSERT_TRUE(s.exact);
  ASSERT_UEQ(s.actual, 2048);
  ASSERT_COUNT(s.count, 32, 32, 2);

  p.hardware.max_ruda_count[0] = 48;
  p.hardware.max_ruda_count[2] = 16;
  s = ruda_count_selection_new(&p, 3177);
  ASSERT_FALSE(s.exact);
  ASSERT_UEQ(s.actual, 3200);
  ASSERT_COUNT(s.count, 25, 32, 4);

  s = ruda_count_selection_new(&p, 0);
  ASSERT_TRUE(ruda_count3_is_empty(s.count));
  ASSERT_UEQ(s.actual, 0);
  ASSERT_TRUE(s.exact);
}

TEST(count3_empty_and_format) {
  ASSERT_FALSE(ruda_count3_is_empty((ruda_count3_t){1, 1, 1}));
  ASSERT_TRUE(ruda_count3_is_empty((ruda_count3_t){0, 1, 1}));
  ASSERT_TRUE(ruda_count3_is_empty((ruda_count3_t){1, 0, 1}));
  ASSERT_TRUE(ruda_count3_is_empty((ruda_count3_t){1, 1, 0}));

  char buf[64];
  size_t n = ruda_count3_format((ruda_count3_t){25, 32, 4}, buf, sizeof(buf));
  ASSERT_STR_EQ(buf, "(25, 32, 4)");
  ASSERT_UEQ(n, strlen("(25, 32, 4)"));
  /* snprintf semantics: truncated, terminated, full length returned. */
  char small[5];
  n = ruda_count3_format((ruda_count3_t){25, 32, 4}, small, sizeof(small));
  ASSERT_UEQ(n, 11);
  ASSERT_STR_EQ(small, "(25,");
  ASSERT_UEQ(ruda_count3_format((ruda_count3_t){UINT32_MAX, 1, 1}, NULL, 0),
             strlen("(4294967295, 1, 1)"));
}

TEST(dim_basics) {
  ASSERT_DIM(ruda_dim_new_1d(5), 5, 1, 1);
  ASSERT_DIM(ruda_dim_new_2d(5, 6), 5, 6, 1);
  ASSERT_DIM(ruda_dim_new_3d(5, 6, 7), 5, 6, 7);
  ASSERT_UEQ(ruda_dim_num_elems(ruda_dim_new_3d(5, 6, 7)), 210);
  ASSERT_UEQ(ruda_dim_num_elems(ruda_dim_new_3d(UINT32_MAX, UINT32_MAX, 1)),
             (uint64_t)UINT32_MAX * UINT32_MAX);
  ASSERT_UEQ(ruda_dim_num_elems(ruda_dim_new_3d(UINT32_MAX, UINT32_MAX, 4)),
             UINT64_MAX);
  ASSERT_UEQ(ruda_dim_num_elems(ruda_dim_new_3d(UINT32_MAX, 0, 4)), 0);
  ASSERT_TRUE(ruda_dim_can_contain(ruda_dim_new_3d(4, 4, 4), ruda_dim_new_3d(4, 2, 1)));
  ASSERT_FALSE(ruda_dim_can_contain(ruda_dim_new_3d(4, 4, 4), ruda_dim_new_3d(1, 1, 5)));
  ASSERT_FALSE(ruda_dim_can_contain(ruda_dim_new_3d(4, 4, 4), ruda_dim_new_3d(8, 1, 1)));
}

/* ruda_dim_for_units on `p` with a unit limit, a core count and a widest
 * plane of its own, for `units` working units, gives (x, y, 1). */
typedef struct {
  uint32_t max_units, cores, plane_max, units, x, y;
} units_case_t;

static void expect_dims_for_units(ruda_device_properties_t p, const units_case_t *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    p.hardware.max_units_per_ruda = c[i].max_units;
    p.hardware.num_cpu_cores = c[i].cores;
    p.hardware.plane_size_max = c[i].plane_max;
    ruda_dim_t d = ruda_dim_for_units(&p, c[i].units);
    RT_CHECK_(d.x == c[i].x && d.y == c[i].y && d.z == 1,
              "case %zu: %u units give (%u, %u, %u), expected (%u, %u, 1)", i, c[i].units, d.x,
              d.y, d.z, c[i].x, c[i].y);
  }
}

/* A GPU-like device: planes (warps) of 32, 1024 units per ruda. */
TEST(dim_for_units_gpu) {
  static const units_case_t cases[] = {
      {1024, 0, 32, 1000000, 32, 8}, {1024, 0, 32, 100, 32, 2}, {1024, 0, 32, 10, 32, 1},
      {1024, 0, 32, 0, 32, 1},       {1024, 0, 32, 128, 32, 4}, {1024, 0, 32, 255, 32, 4},
      {1024, 0, 32, 256, 32, 8},     {1024, 0, 32, UINT32_MAX, 32, 8},
      /* The unit limit caps the planes: 128 units allow 4 planes of 32... */
      {128, 0, 32, 1000000, 32, 4},
      /* ...and never below one plane. */
      {16, 0, 32, 1000000, 32, 1}};
  expect_dims_for_units(gpu_props(), cases, sizeof cases / sizeof cases[0]);
}

TEST(dim_for_units_cpu) {
  ruda_device_properties_t p;
  memset(&p, 0, sizeof(p));
  p.hardware.plane_size_min = 1;
  /* planes = min(cores, working units); a CPU with SIMD planes of 4 under a
   * limit of 16 units: 16 / 4. */
  static const units_case_t cases[] = {
      {1024, 8, 1, 100, 1, 8}, {1024, 8, 1, 3, 1, 3},  {1024, 8, 1, 0, 1, 1},
      {16, 64, 1, 1000, 1, 16}, {16, 64, 4, 1000, 4, 4}};
  expect_dims_for_units(p, cases, sizeof cases / sizeof cases[0]);
}

TEST(dim_for_units_degenerate_properties) {
  ruda_device_properties_t p;
  memset(&p, 0, sizeof(p));
  /* All zero: no division by zero, a valid dim. */
  ruda_dim_t d = ruda_dim_for_units(&p, 1000);
  ASSERT_UEQ(d.x, 1);
  ASSERT_UEQ(d.y, 1);
  ASSERT_UEQ(d.z, 1);
  d = ruda_dim_for_units(NULL, 1000);
  ASSERT_UEQ(ruda_dim_num_elems(d), 1);
}

TEST(modes) {
  ASSERT_EQ(ruda_bounds_check_to_mode(RUDA_BOUNDS_ENFORCE), RUDA_EXEC_CHECKED);
  ASSERT_EQ(ruda_bounds_check_to_mode(RUDA_BOUNDS_VALIDATE), RUDA_EXEC_VALIDATE);
  ASSERT_EQ(ruda_bounds_check_to_mode(RUDA_BOUNDS_AUTO), RUDA_EXEC_UNCHECKED);
  ASSERT_EQ(ruda_bounds_check_to_mode((ruda_bounds_check_mode_t)9), RUDA_EXEC_CHECKED);
  ASSERT_STR_EQ(ruda_execution_mode_name(RUDA_EXEC_CHECKED), "Checked");
  ASSERT_STR_EQ(ruda_execution_mode_name(RUDA_EXEC_VALIDATE), "Validate");
  ASSERT_STR_EQ(ruda_execution_mode_name(RUDA_EXEC_UNCHECKED), "Unchecked");
  ASSERT_STR_EQ(ruda_execution_mode_name((ruda_execution_mode_t)9), "invalid");
}
