/* The CUDA backend's GPU-free paths: loading from an absent library, the
 * vendor error translation, and the tensor-map validation. Runs everywhere
 * (with or without a GPU, with or without the CUDA headers at build time). */
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda_internal.h"
#include "ruda/client.h"
#include "ruda/status.h"
#include "test.h"
#include "test_client.h"

TEST(absent_driver_library_is_unavailable_and_named) {
  ruda__cuda_loader_test_override("libruda-absent-driver.so.7", "libruda-absent-nvrtc.so.7");
  uint32_t n = 99;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n);
  ruda__cuda_loader_test_override(NULL, NULL);
  ASSERT_UEQ(n, 0);
  /* Built with headers: names the library looked for; without: says so. */
  test_expect_library_absent(s, "CUDA", "libruda-absent-driver.so.7", "CUDA driver library");
}

TEST(absent_nvrtc_is_unavailable_and_named) {
  ruda__cuda_loader_test_override(NULL, "libruda-absent-nvrtc.so.7");
  ruda_status_t s = ruda__cuda_nvrtc_probe();
  ruda__cuda_loader_test_override(NULL, NULL);
  test_expect_library_absent(s, "CUDA", "libruda-absent-nvrtc.so.7", "NVRTC");
}

TEST(device_count_reports_a_reason_when_unavailable) {
  uint32_t n = 0;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n);
  if (s == NULL) {
    ASSERT_UGT(n, 0);
    return;
  }
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_UNAVAILABLE);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "CUDA is unavailable");
  ruda_status_free(s);
}

TEST(out_of_memory_translation_keeps_vendor_fields) {
  ruda_status_t s = ruda__cuda_test_alloc_error(2 /* CUDA_ERROR_OUT_OF_MEMORY */, "cuMemAlloc",
                                                1ull << 40);
  if (s == NULL) SKIP("built without the CUDA headers: no CUresult translation");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_UEQ(ruda_status_size_field(s), 1ull << 40);
  ASSERT_STR_EQ(ruda_status_vendor_call(s), "cuMemAlloc");
  ASSERT_STR_EQ(ruda_status_vendor_code_name(s), "CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_EQ(ruda_status_vendor_code(s), 2);
  ruda_status_free(s);

  s = ruda__cuda_test_alloc_error(1 /* CUDA_ERROR_INVALID_VALUE */, "cuMemAllocAsync", 64);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_IO_UNKNOWN);
  ASSERT_STR_EQ(ruda_status_vendor_call(s), "cuMemAllocAsync");
  ASSERT_STR_EQ(ruda_status_vendor_code_name(s), "CUDA_ERROR_INVALID_VALUE");
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "cuMemAllocAsync failed with CUDA_ERROR_INVALID_VALUE");
  ruda_status_free(s);
}

/* ---- Tensor-map validation ---- */

/* A valid 2-D f32 tensor of 64 x 128 with a 32 x 32 tile, 128 B swizzle
 * off (tile rows of 128 bytes need no swizzle span). */
static ruda_tensor_map_meta_t tiled_f32(void) {
  ruda_tensor_map_meta_t m = {
      .format = {.kind = RUDA_TENSOR_MAP_TILED, .tile_size = {.rank = 2, .dims = {32, 32}}},
      .metadata = {.shape = {.rank = 2, .dims = {64, 128}},
                   .strides = {.rank = 2, .values = {128, 1}}},
      .storage_ty = {.kind = RUDA_STORAGE_SCALAR, .elem = RUDA_ELEM_F32, .packing = 1},
  };
  return m;
}

#define ADDR 0x7f0000000000ull

static void expect_reason(const ruda_tensor_map_meta_t *m, uint64_t addr, int version,
                          const char *needle) {
  ruda_status_t s = ruda__cuda_tensor_map_check(m, addr, version);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), needle);
  ruda_status_free(s);
}

TEST(tensor_map_valid_tiled_passes) {
  ruda_tensor_map_meta_t m = tiled_f32();
  ASSERT_NULL(ruda__cuda_tensor_map_check(&m, ADDR, 13000));
  m.swizzle = RUDA_TENSOR_MAP_SWIZZLE_B128;
  ASSERT_NULL(ruda__cuda_tensor_map_check(&m, ADDR, 13000));
}

TEST(tensor_map_alignment) {
  ruda_tensor_map_meta_t m = tiled_f32();
  expect_reason(&m, ADDR + 8, 13000, "aligned to 16 bytes");
}

TEST(tensor_map_rank) {
  ruda_tensor_map_meta_t m = tiled_f32();
  m.metadata.shape.rank = 6;
  m.metadata.strides.rank = 6;
  expect_reason(&m, ADDR, 13000, "tensor rank 6 must be between 1 and 5");
  m = tiled_f32();
  m.interleave = RUDA_TENSOR_MAP_INTERLEAVE_B16;
  expect_reason(&m, ADDR, 13000, "at least 3 when interleaved");
}

TEST(tensor_map_strides) {
  ruda_tensor_map_meta_t m = tiled_f32();
  m.metadata.strides.values[0] = 130; /* 520 bytes */
  expect_reason(&m, ADDR, 13000, "stride of dimension 0 is 520 bytes; must be a multiple of 16");
}

TEST(tensor_map_dimensions) {
  ruda_tensor_map_meta_t m = tiled_f32();
  m.metadata.shape.dims[0] = 1ull << 33;
  expect_reason(&m, ADDR, 13000, "dimension 0 is 8589934592");
  m = tiled_f32();
  m.storage_ty.elem = RUDA_ELEM_E2M1X2;
  m.metadata.shape.dims[1] = 127;
  expect_reason(&m, ADDR, 13000, "even innermost dimension");
}

TEST(tensor_map_tile_rules) {
  ruda_tensor_map_meta_t m = tiled_f32();
  m.format.tile_size.dims[0] = 512;
  expect_reason(&m, ADDR, 13000, "tile dimension 0 is 512; must be between 1 and 256");
  m = tiled_f32();
  m.format.tile_size.rank = 1;
  expect_reason(&m, ADDR, 13000, "tile rank 1 must equal the tensor rank 2");
  m = tiled_f32();
  m.swizzle = RUDA_TENSOR_MAP_SWIZZLE_B64; /* 32 f32 = 128 B > 64 B span */
  expect_reason(&m, ADDR, 13000, "at most the swizzle span of 64 bytes");
}

TEST(tensor_map_element_strides_and_fill) {
  ruda_tensor_map_meta_t m = tiled_f32();
  m.elem_stride.rank = 2;
  m.elem_stride.values[0] = 9;
  m.elem_stride.values[1] = 1;
  expect_reason(&m, ADDR, 13000, "element stride of dimension 0 is 9");
  m.elem_stride.values[0] = 2;
  m.elem_stride.values[1] = 2;
  expect_reason(&m, ADDR, 13000, "innermost element stride is 2");
  m = tiled_f32();
  m.storage_ty.elem = RUDA_ELEM_I32;
  m.oob_fill = RUDA_OOB_FILL_NAN;
  expect_reason(&m, ADDR, 13000, "NaN out-of-bounds fill needs a float type, got i32");
}

TEST(tensor_map_versions) {
  ruda_tensor_map_meta_t m = tiled_f32();
  m.swizzle = RUDA_TENSOR_MAP_SWIZZLE_B128_ATOM_32B;
  expect_reason(&m, ADDR, 12040, "swizzle atoms need CUDA 12.8");
  ASSERT_NULL(ruda__cuda_tensor_map_check(&m, ADDR, 12080));
  m = tiled_f32();
  m.format.kind = RUDA_TENSOR_MAP_IM2COL_WIDE;
  expect_reason(&m, ADDR, 12040, "Im2colWide needs CUDA 12.8");
}

TEST(tensor_map_im2col_rules) {
  ruda_tensor_map_meta_t m;
  memset(&m, 0, sizeof m);
  m.format.kind = RUDA_TENSOR_MAP_IM2COL;
  m.metadata.shape.rank = 4; /* NHWC */
  uint64_t dims[4] = {2, 16, 16, 64};
  for (int i = 0; i < 4; i++) m.metadata.shape.dims[i] = dims[i];
  m.metadata.strides.rank = 4;
  m.metadata.strides.values[3] = 1;
  m.metadata.strides.values[2] = 64;
  m.metadata.strides.values[1] = 64 * 16;
  m.metadata.strides.values[0] = 64 * 16 * 16;
  m.storage_ty.elem = RUDA_ELEM_F16;
  m.storage_ty.packing = 1;
  m.format.num_corners = 2;
  m.format.pixel_box_lower_corner[0] = -1;
  m.format.pixel_box_lower_corner[1] = -1;
  m.format.pixel_box_upper_corner[0] = -1;
  m.format.pixel_box_upper_corner[1] = -1;
  m.format.channels_per_pixel = 64;
  m.format.pixels_per_column = 128;
  ASSERT_NULL(ruda__cuda_tensor_map_check(&m, ADDR, 13000));
  m.format.pixel_box_lower_corner[1] = -200;
  expect_reason(&m, ADDR, 13000, "within [-128, 127] for rank 4");
  m.format.pixel_box_lower_corner[1] = -1;
  m.format.num_corners = 3;
  expect_reason(&m, ADDR, 13000, "must be 2 (rank - 2)");
  m.format.num_corners = 2;
  m.format.channels_per_pixel = 300;
  expect_reason(&m, ADDR, 13000, "channels per pixel is 300");
  m.format.channels_per_pixel = 64;
  m.format.pixels_per_column = 2048;
  expect_reason(&m, ADDR, 13000, "pixels per column is 2048");
}

TEST(tensor_map_interleave_b32_needs_b32_swizzle) {
  ruda_tensor_map_meta_t m = tiled_f32();
  m.metadata.shape.rank = 3;
  m.metadata.shape.dims[0] = 4;
  m.metadata.shape.dims[1] = 64;
  m.metadata.shape.dims[2] = 128;
  m.metadata.strides.rank = 3;
  m.metadata.strides.values[0] = 64 * 128;
  m.metadata.strides.values[1] = 128;
  m.metadata.strides.values[2] = 1;
  m.format.tile_size.rank = 3;
  m.format.tile_size.dims[0] = 1;
  m.format.tile_size.dims[1] = 8;
  m.format.tile_size.dims[2] = 8;
  m.interleave = RUDA_TENSOR_MAP_INTERLEAVE_B32;
  expect_reason(&m, ADDR, 13000, "32-byte interleave requires 32-byte swizzle");
  m.swizzle = RUDA_TENSOR_MAP_SWIZZLE_B32;
  ASSERT_NULL(ruda__cuda_tensor_map_check(&m, ADDR, 13000));
  expect_reason(&m, ADDR + 16, 13000, "aligned to 32 bytes when interleaved");
}
