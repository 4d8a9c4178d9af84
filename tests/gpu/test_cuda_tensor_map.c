/* Tensor maps on Hopper: a kernel loads a tile through TMA
 * (cp.async.bulk.tensor) and writes it out; the test checks the tile and
 * the zero fill past the tensor's edge, and a rejected map's precise
 * error. */
#include "cuda_test_util.h"

static const char tma_src[] =
    "struct __align__(64) TensorMap { unsigned long long v[16]; };\n"
    "extern \"C\" __global__ void tma_tile(float *out, const __grid_constant__ TensorMap map,\n"
    "                                      const unsigned long long *info) {\n"
    "  __shared__ __align__(128) float tile[8 * 16];\n"
    "  __shared__ __align__(8) unsigned long long bar;\n"
    "  unsigned int bar_a = (unsigned int)__cvta_generic_to_shared(&bar);\n"
    "  unsigned int tile_a = (unsigned int)__cvta_generic_to_shared(tile);\n"
    "  int x = (int)info[0], y = (int)info[1];\n"
    "  if (threadIdx.x == 0) {\n"
    "    asm volatile(\"mbarrier.init.shared::cta.b64 [%0], 1;\" :: \"r\"(bar_a));\n"
    "    asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
    "  }\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0) {\n"
    "    asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\"\n"
    "                 :: \"r\"(bar_a), \"r\"(8 * 16 * 4) : \"memory\");\n"
    "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes\"\n"
    "                 \" [%0], [%1, {%2, %3}], [%4];\"\n"
    "                 :: \"r\"(tile_a), \"l\"(&map), \"r\"(x), \"r\"(y), \"r\"(bar_a) : \"memory\");\n"
    "  }\n"
    "  asm volatile(\"{\\n .reg .pred p;\\n WAIT_%=:\\n\"\n"
    "               \" mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\\n\"\n"
    "               \" @!p bra WAIT_%=;\\n}\" :: \"r\"(bar_a) : \"memory\");\n"
    "  for (unsigned int i = threadIdx.x; i < 8 * 16; i += blockDim.x) out[i] = tile[i];\n"
    "}\n";

static ruda_tensor_map_meta_t map_meta(uint64_t rows, uint64_t cols) {
  ruda_tensor_map_meta_t m;
  memset(&m, 0, sizeof m);
  m.format.kind = RUDA_TENSOR_MAP_TILED;
  m.format.tile_size.rank = 2;
  m.format.tile_size.dims[0] = 8;
  m.format.tile_size.dims[1] = 16;
  m.metadata.shape.rank = 2;
  m.metadata.shape.dims[0] = rows;
  m.metadata.shape.dims[1] = cols;
  m.metadata.strides.rank = 2;
  m.metadata.strides.values[0] = cols;
  m.metadata.strides.values[1] = 1;
  m.storage_ty.kind = RUDA_STORAGE_SCALAR;
  m.storage_ty.elem = RUDA_ELEM_F32;
  m.storage_ty.packing = 1;
  return m;
}

static void load_tile(ruda_client_t *c, ruda_kernel_t *k, ruda_handle_t *tensor,
                      ruda_tensor_map_meta_t meta, int x, int y, float *out_tile) {
  ruda_handle_t out;
  ASSERT_OK(ruda_client_empty(c, 8 * 16 * 4, &out));
  uint64_t info[2] = {(uint64_t)x, (uint64_t)y};
  ruda_tensor_map_arg_t tm = {tensor, meta};
  ruda_kernel_args_t args = {&out, 1, &tm, 1, {info, 2, 2}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
  ASSERT_OK(ruda_client_read(c, &out, out_tile, 8 * 16 * 4));
  ruda_handle_release(&out);
}

TEST(tile_load_through_a_tensor_map) {
  ruda_client_t *c = cuda_client();
  if (ruda_client_properties(c)->hardware.compute_capability < 90)
    SKIP("tensor maps need sm_90 (Hopper) or newer");
  enum { ROWS = 32, COLS = 64 };
  float *data = malloc(ROWS * COLS * sizeof(float));
  ASSERT_NOT_NULL(data);
  for (int i = 0; i < ROWS * COLS; i++) data[i] = (float)i + 0.25f;
  ruda_handle_t tensor;
  ASSERT_OK(ruda_client_create_buffer(c, data, ROWS * COLS * sizeof(float), &tensor));
  ruda_kernel_t *k = cuda_kernel("tma_tile", tma_src, ruda_dim_new_1d(128), 0);
  float tile[8 * 16];

  /* Tile at column 16, row 8. */
  load_tile(c, k, &tensor, map_meta(ROWS, COLS), 16, 8, tile);
  for (int r = 0; r < 8; r++)
    for (int col = 0; col < 16; col++)
      ASSERT_DBL_NEAR(tile[r * 16 + col], data[(8 + r) * COLS + 16 + col], 0.0);

  /* Past the edge: the out-of-bounds part is zero-filled. */
  load_tile(c, k, &tensor, map_meta(ROWS, COLS), 56, 28, tile);
  for (int r = 0; r < 8; r++)
    for (int col = 0; col < 16; col++) {
      int gr = 28 + r, gc = 56 + col;
      float want = (gr < ROWS && gc < COLS) ? data[gr * COLS + gc] : 0.0f;
      ASSERT_DBL_NEAR(tile[r * 16 + col], want, 0.0);
    }
  free(data);
  ruda_handle_release(&tensor);
  ruda_kernel_release(k);
}

TEST(rejected_tensor_map_gives_a_precise_launch_error) {
  if (ruda_client_properties(cuda_client())->hardware.compute_capability < 90)
    SKIP("tensor maps need sm_90 (Hopper) or newer");
  ruda_client_t *s = cuda_stream_client();
  ruda_handle_t tensor;
  ASSERT_OK(ruda_client_empty(s, 32 * 60 * 4, &tensor));
  ruda_kernel_t *k = cuda_kernel("tma_tile", tma_src, ruda_dim_new_1d(128), 0);
  ruda_tensor_map_meta_t m = map_meta(32, 60);
  m.metadata.strides.values[0] = 61; /* 244-byte rows: not a multiple of 16 */
  float tile[8 * 16];
  ruda_handle_t out;
  ASSERT_OK(ruda_client_empty(s, sizeof tile, &out));
  uint64_t info[2] = {0, 0};
  ruda_tensor_map_arg_t tm = {&tensor, m};
  ruda_kernel_args_t args = {&out, 1, &tm, 1, {info, 2, 2}};
  ASSERT_OK(ruda_client_launch(s, k, ruda_count_static(1, 1, 1), &args));
  ruda_status_t e = ruda_client_sync(s);
  ruda_status_t u = ruda_status_find(e, RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_NOT_NULL(u);
  ASSERT_STR_CONTAINS(ruda_status_reason(u), "must be a multiple of 16");
  ruda_status_free(e);
  ruda_handle_release(&out);
  ruda_handle_release(&tensor);
  ruda_kernel_release(k);
  ruda_client_release(s);
}
