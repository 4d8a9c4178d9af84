/* Conformance: the kernel dialect (ruda/kernel_dialect.h). Each kernel of
 * cts_dialect_kernels.h is one source, compiled natively here for cpu:N and
 * from its embedded text for cuda:N and opencl:N; the same checks run on
 * every backend. */
#include <math.h>

#include "cts.h"
#include "cts_dialect_kernels.h"
/* The tiled matmul of examples/matmul.c (tests/CMakeLists.txt embeds its
 * text here too): C = A x B through shared memory, one private accumulator
 * per unit across the tile loop's barriers. */
#include "../../examples/kernels/matmul.h"

static ruda_kernel_t *create(ruda_kernel_desc_t d) { return cts_kernel_from(d); }

static bool has_feature(uint64_t f) {
  return (ruda_client_properties(cts_client())->features & f) == f;
}

TEST(units_and_positions_in_three_dimensions) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(positions));
  enum { CX = 3, CY = 2, CZ = 2, DX = 4, DY = 2, DZ = 2 };
  enum { UNITS = CX * CY * CZ * DX * DY * DZ };
  uint32_t *out = calloc(UNITS * 16, sizeof *out);
  ruda_handle_t h = cts_upload(c, out, UNITS * 16 * sizeof *out);
  ASSERT_OK(RUDA_LAUNCH(positions, c, k, ruda_count_static(CX, CY, CZ), &h));
  ASSERT_OK(ruda_client_read(c, &h, out, UNITS * 16 * sizeof *out));
  for (uint32_t az = 0; az < CZ * DZ; az++)
    for (uint32_t ay = 0; ay < CY * DY; ay++)
      for (uint32_t ax = 0; ax < CX * DX; ax++) {
        const uint32_t *r = out + (size_t)(ax + CX * DX * (ay + CY * DY * az)) * 16;
        uint32_t ux = ax % DX, uy = ay % DY, uz = az % DZ;
        ASSERT_UEQ(r[0], ux);
        ASSERT_UEQ(r[1], uy);
        ASSERT_UEQ(r[2], uz);
        ASSERT_UEQ(r[3], ux + DX * (uy + DY * uz));
        ASSERT_UEQ(r[4], ax);
        ASSERT_UEQ(r[5], ay);
        ASSERT_UEQ(r[6], az);
        ASSERT_UEQ(r[7], ax / DX);
        ASSERT_UEQ(r[8], ay / DY);
        ASSERT_UEQ(r[9], az / DZ);
        ASSERT_UEQ(r[10], CX);
        ASSERT_UEQ(r[11], CY);
        ASSERT_UEQ(r[12], CZ);
        ASSERT_UEQ(r[13], DX);
        ASSERT_UEQ(r[14], DY);
        ASSERT_UEQ(r[15], DZ);
      }
  ruda_handle_release(&h);
  ruda_kernel_release(k);
  free(out);
}

TEST(scalars_of_every_type_through_the_typed_launcher) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(scalars));
  int64_t ints[9] = {0};
  float reals[3] = {0};
  ruda_handle_t hi = cts_upload(c, ints, sizeof ints), hr = cts_upload(c, reals, sizeof reals);
  uint64_t big = UINT64_C(0xfedcba9876543210);
  ASSERT_OK(RUDA_LAUNCH(scalars, c, k, ruda_count_static(1, 1, 1), &hi, &hr, (int8_t)-5,
                        (uint8_t)250, (int16_t)-30000, (uint16_t)60000, (int32_t)-2000000000,
                        4000000000u, INT64_C(-9000000000000), big, 1.25f, true,
                        ruda_f32_to_f16(-3.5f), ruda_f32_to_bf16(96.0f)));
  ASSERT_OK(ruda_client_read(c, &hi, ints, sizeof ints));
  ASSERT_OK(ruda_client_read(c, &hr, reals, sizeof reals));
  ASSERT_EQ(ints[0], -5);
  ASSERT_EQ(ints[1], 250);
  ASSERT_EQ(ints[2], -30000);
  ASSERT_EQ(ints[3], 60000);
  ASSERT_EQ(ints[4], -2000000000);
  ASSERT_EQ(ints[5], 4000000000);
  ASSERT_EQ(ints[6], INT64_C(-9000000000000));
  ASSERT_UEQ((uint64_t)ints[7], big >> 1);
  ASSERT_EQ(ints[8], 1);
  ASSERT_DBL_NEAR(reals[0], 1.25, 0);
  ASSERT_DBL_NEAR(reals[1], -3.5, 0);
  ASSERT_DBL_NEAR(reals[2], 96.0, 0);
  ruda_handle_release(&hi);
  ruda_handle_release(&hr);
  ruda_kernel_release(k);
}

TEST(double_scalar_on_devices_with_f64) {
  if (!has_feature(RUDA_FEATURE_F64)) SKIP("the device has no f64");
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(scalar_f64));
  double out[2] = {0};
  ruda_handle_t h = cts_upload(c, out, sizeof out);
  ASSERT_OK(RUDA_LAUNCH(scalar_f64, c, k, ruda_count_static(1, 1, 1), &h, -1.0 / 3.0, (int8_t)-9));
  ASSERT_OK(ruda_client_read(c, &h, out, sizeof out));
  ASSERT_DBL_NEAR(out[0], -1.0 / 3.0, 0);
  ASSERT_DBL_NEAR(out[1], -9.0, 0);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

TEST(buffers_of_every_element_type) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(double_all));
  enum { N = 45 };
  int8_t i8[N];
  uint8_t u8[N];
  int16_t i16[N];
  uint16_t u16[N];
  int32_t i32[N];
  uint32_t u32[N];
  int64_t i64[N];
  uint64_t u64[N];
  float f32[N];
  ruda_f16 f16[N];
  ruda_bf16 bf16[N];
  for (int i = 0; i < N; i++) {
    i8[i] = (int8_t)(i - 30);
    u8[i] = (uint8_t)(i * 2);
    i16[i] = (int16_t)(i * -500);
    u16[i] = (uint16_t)(i * 700);
    i32[i] = i * -100000;
    u32[i] = (uint32_t)i * 40000000u;
    i64[i] = (int64_t)i * -INT64_C(100000000000);
    u64[i] = (uint64_t)i * UINT64_C(100000000000);
    f32[i] = (float)i * 0.5f;
    f16[i] = ruda_f32_to_f16((float)i - 7.25f);
    bf16[i] = ruda_f32_to_bf16((float)i * 3.0f);
  }
  ruda_handle_t h[11] = {cts_upload(c, i8, sizeof i8),   cts_upload(c, u8, sizeof u8),
                         cts_upload(c, i16, sizeof i16), cts_upload(c, u16, sizeof u16),
                         cts_upload(c, i32, sizeof i32), cts_upload(c, u32, sizeof u32),
                         cts_upload(c, i64, sizeof i64), cts_upload(c, u64, sizeof u64),
                         cts_upload(c, f32, sizeof f32), cts_upload(c, f16, sizeof f16),
                         cts_upload(c, bf16, sizeof bf16)};
  ASSERT_OK(RUDA_LAUNCH(double_all, c, k, ruda_count_static(2, 1, 1), &h[0], &h[1], &h[2], &h[3],
                        &h[4], &h[5], &h[6], &h[7], &h[8], &h[9], &h[10], (uint32_t)N));
  int8_t o8[N];
  uint8_t ou8[N];
  int16_t o16[N];
  uint16_t ou16[N];
  int32_t o32[N];
  uint32_t ou32[N];
  int64_t o64[N];
  uint64_t ou64[N];
  float of32[N];
  ruda_f16 of16[N];
  ruda_bf16 obf16[N];
  ASSERT_OK(ruda_client_read(c, &h[0], o8, sizeof o8));
  ASSERT_OK(ruda_client_read(c, &h[1], ou8, sizeof ou8));
  ASSERT_OK(ruda_client_read(c, &h[2], o16, sizeof o16));
  ASSERT_OK(ruda_client_read(c, &h[3], ou16, sizeof ou16));
  ASSERT_OK(ruda_client_read(c, &h[4], o32, sizeof o32));
  ASSERT_OK(ruda_client_read(c, &h[5], ou32, sizeof ou32));
  ASSERT_OK(ruda_client_read(c, &h[6], o64, sizeof o64));
  ASSERT_OK(ruda_client_read(c, &h[7], ou64, sizeof ou64));
  ASSERT_OK(ruda_client_read(c, &h[8], of32, sizeof of32));
  ASSERT_OK(ruda_client_read(c, &h[9], of16, sizeof of16));
  ASSERT_OK(ruda_client_read(c, &h[10], obf16, sizeof obf16));
  for (int i = 0; i < N; i++) {
    ASSERT_EQ(o8[i], (int8_t)(i8[i] * 2));
    ASSERT_UEQ(ou8[i], (uint8_t)(u8[i] * 2));
    ASSERT_EQ(o16[i], (int16_t)(i16[i] * 2));
    ASSERT_UEQ(ou16[i], (uint16_t)(u16[i] * 2));
    ASSERT_EQ(o32[i], i32[i] * 2);
    ASSERT_UEQ(ou32[i], u32[i] * 2);
    ASSERT_EQ(o64[i], i64[i] * 2);
    ASSERT_UEQ(ou64[i], u64[i] * 2);
    ASSERT_DBL_NEAR(of32[i], f32[i] * 2, 0);
    ASSERT_DBL_NEAR(ruda_f16_to_f32(of16[i]), ((float)i - 7.25f) * 2, 0);
    ASSERT_DBL_NEAR(ruda_bf16_to_f32(obf16[i]), (float)i * 6.0f, 0);
  }
  for (int i = 0; i < 11; i++) ruda_handle_release(&h[i]);
  ruda_kernel_release(k);
}

TEST(f64_buffers_on_devices_with_f64) {
  if (!has_feature(RUDA_FEATURE_F64)) SKIP("the device has no f64");
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(double_f64));
  double v[40];
  for (int i = 0; i < 40; i++) v[i] = i / 3.0;
  ruda_handle_t h = cts_upload(c, v, sizeof v);
  ASSERT_OK(RUDA_LAUNCH(double_f64, c, k, ruda_count_static(2, 1, 1), &h, 40u));
  double out[40];
  ASSERT_OK(ruda_client_read(c, &h, out, sizeof out));
  for (int i = 0; i < 40; i++) ASSERT_DBL_NEAR(out[i], v[i] * 2, 0);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

TEST(barriers_in_a_uniform_loop_prefix_sum) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(scan));
  enum { RUDAS = 5, N = RUDAS * 128 };
  uint32_t in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (uint32_t)(i % 7 + 1);
  ruda_handle_t hi = cts_upload(c, in, sizeof in), ho = cts_upload(c, out, sizeof out);
  ASSERT_OK(RUDA_LAUNCH(scan, c, k, ruda_count_static(RUDAS, 1, 1), &hi, &ho));
  ASSERT_OK(ruda_client_read(c, &ho, out, sizeof out));
  for (int r = 0; r < RUDAS; r++) {
    uint32_t run = 0;
    for (int u = 0; u < 128; u++) {
      run += in[r * 128 + u];
      ASSERT_UEQ(out[r * 128 + u], run);
    }
  }
  ruda_handle_release(&hi);
  ruda_handle_release(&ho);
  ruda_kernel_release(k);
}

TEST(private_arrays_live_across_barriers) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(private_sums));
  enum { RUDAS = 3 };
  float in[RUDAS * 8 * 32], out[RUDAS * 32];
  for (int i = 0; i < RUDAS * 8 * 32; i++) in[i] = (float)(i % 11) - 3.0f;
  ruda_handle_t hi = cts_upload(c, in, sizeof in), ho = cts_upload(c, out, sizeof out);
  ASSERT_OK(RUDA_LAUNCH(private_sums, c, k, ruda_count_static(RUDAS, 1, 1), &hi, &ho));
  ASSERT_OK(ruda_client_read(c, &ho, out, sizeof out));
  for (int r = 0; r < RUDAS; r++)
    for (int u = 0; u < 32; u++) {
      float want = 0;
      for (int k4 = 0; k4 < 4; k4++) {
        float acc = 0;
        for (int round = 0; round < 8; round++)
          acc += in[(r * 8 + round) * 32 + (u + k4) % 32] * (float)(k4 + 1);
        want += acc;
      }
      ASSERT_DBL_NEAR(out[r * 32 + u], want, 1e-3);
    }
  ruda_handle_release(&hi);
  ruda_handle_release(&ho);
  ruda_kernel_release(k);
}

TEST(tiled_matmul_with_shared_memory_and_privates) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(matmul));
  const uint32_t M = 70, N = 45, K = 37;
  float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *C = malloc(M * N * 4);
  for (uint32_t i = 0; i < M * K; i++) A[i] = (float)(i % 9) - 4.0f;
  for (uint32_t i = 0; i < K * N; i++) B[i] = (float)(i % 5) * 0.5f;
  ruda_handle_t ha = cts_upload(c, A, M * K * 4), hb = cts_upload(c, B, K * N * 4),
                hc = cts_upload(c, C, M * N * 4);
  ruda_count_t count = ruda_count_static((N + MATMUL_TILE - 1) / MATMUL_TILE,
                                         (M + MATMUL_TILE - 1) / MATMUL_TILE, 1);
  ASSERT_OK(RUDA_LAUNCH(matmul, c, k, count, &ha, &hb, &hc, M, N, K));
  ASSERT_OK(ruda_client_read(c, &hc, C, M * N * 4));
  for (uint32_t r = 0; r < M; r++)
    for (uint32_t q = 0; q < N; q++) {
      float want = 0;
      for (uint32_t p = 0; p < K; p++) want += A[r * K + p] * B[p * N + q];
      ASSERT_DBL_NEAR(C[r * N + q], want, 1e-3);
    }
  ruda_handle_release(&ha);
  ruda_handle_release(&hb);
  ruda_handle_release(&hc);
  ruda_kernel_release(k);
  free(A);
  free(B);
  free(C);
}

TEST(dynamic_shared_memory_sized_at_kernel_creation) {
  ruda_client_t *c = cts_client();
  for (uint32_t per = 1; per <= 8; per *= 8) {
    ruda_kernel_desc_t d = RUDA_KERNEL_DESC(dynamic_sums);
    d.shared_mem_bytes = 64 * per * sizeof(uint32_t);
    ruda_kernel_t *k = create(d);
    enum { RUDAS = 3 };
    uint32_t in[RUDAS * 64 * 8], out[RUDAS * 64];
    for (uint32_t i = 0; i < RUDAS * 64 * per; i++) in[i] = i % 13;
    ruda_handle_t hi = cts_upload(c, in, sizeof in), ho = cts_upload(c, out, sizeof out);
    ASSERT_OK(RUDA_LAUNCH(dynamic_sums, c, k, ruda_count_static(RUDAS, 1, 1), &hi, &ho, per));
    ASSERT_OK(ruda_client_read(c, &ho, out, sizeof out));
    for (uint32_t u = 0; u < RUDAS * 64; u++) {
      uint32_t want = 0;
      for (uint32_t j = 0; j < per; j++) want += in[u * per + j];
      ASSERT_UEQ(out[u], want);
    }
    ruda_handle_release(&hi);
    ruda_handle_release(&ho);
    ruda_kernel_release(k);
  }
}

TEST(ranges_single_regions_continue_helpers_and_tables) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(ranges));
  enum { RUDAS = 3, N = 37 };
  static const uint32_t table[4] = {3, 1, 4, 1};
  uint32_t out[RUDAS * N + 2 * RUDAS];
  memset(out, 0xff, sizeof out);
  ruda_handle_t h = cts_upload(c, out, sizeof out);
  ASSERT_OK(RUDA_LAUNCH(ranges, c, k, ruda_count_static(RUDAS, 1, 1), &h, (uint32_t)N));
  ASSERT_OK(ruda_client_read(c, &h, out, sizeof out));
  for (int r = 0; r < RUDAS; r++) {
    for (uint32_t i = 0; i < N; i++) ASSERT_UEQ(out[r * N + i], 2 * i + table[i % 4]);
    ASSERT_UEQ(out[RUDAS * N + 2 * r], 8);          /* the even units of 16 */
    ASSERT_UEQ(out[RUDAS * N + 2 * r + 1], 0 + 1 + 3 + 4); /* 0..4 but 2 */
  }
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

TEST(unit_shares_cover_a_range_once) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(share_sum));
  for (uint32_t n = 0; n <= 1000; n += 333) {
    uint32_t in[1000], out = 12345;
    uint32_t want = 0;
    for (uint32_t i = 0; i < 1000; i++) {
      in[i] = i * 3 + 1;
      if (i < n) want += in[i];
    }
    ruda_handle_t hi = cts_upload(c, in, sizeof in), ho = cts_upload(c, &out, sizeof out);
    ASSERT_OK(RUDA_LAUNCH(share_sum, c, k, ruda_count_static(1, 1, 1), &hi, &ho, n));
    ASSERT_OK(ruda_client_read(c, &ho, &out, sizeof out));
    ASSERT_UEQ(out, want);
    ruda_handle_release(&hi);
    ruda_handle_release(&ho);
  }
  ruda_kernel_release(k);
}

TEST(atomics_32_bit_and_f32_add_on_buffers_and_shared_memory) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(atomics32));
  enum { RUDAS = 5, UNITS = RUDAS * 64 };
  int32_t gi[5] = {0, INT32_MAX, INT32_MIN, 0, 0};
  uint32_t gu[8] = {0, UINT32_MAX, 0, 0, 0, 0, 0, 0};
  float gf[3] = {0};
  ruda_handle_t hi = cts_upload(c, gi, sizeof gi), hu = cts_upload(c, gu, sizeof gu),
                hf = cts_upload(c, gf, sizeof gf);
  ASSERT_OK(RUDA_LAUNCH(atomics32, c, k, ruda_count_static(RUDAS, 1, 1), &hi, &hu, &hf));
  ASSERT_OK(ruda_client_read(c, &hi, gi, sizeof gi));
  ASSERT_OK(ruda_client_read(c, &hu, gu, sizeof gu));
  ASSERT_OK(ruda_client_read(c, &hf, gf, sizeof gf));
  int32_t sum = 0;
  for (int i = 0; i < UNITS; i++) sum += i - 100;
  ASSERT_EQ(gi[0], sum);
  ASSERT_EQ(gi[1], -100);
  ASSERT_EQ(gi[2], UNITS - 1 - 100);
  ASSERT_EQ(gi[3], -7);
  ASSERT_TRUE(gi[4] <= -1 && gi[4] >= -UNITS);
  ASSERT_UEQ(gu[0], UNITS);
  ASSERT_UEQ(gu[1], 5);
  ASSERT_UEQ(gu[2], UNITS - 1);
  ASSERT_UEQ(gu[3], 7);
  ASSERT_TRUE(gu[4] >= 1 && gu[4] <= UNITS);
  ASSERT_UEQ(gu[5], 2 * UNITS);
  ASSERT_UEQ(gu[6], UNITS);
  ASSERT_UEQ(gu[7], 63);
  ASSERT_DBL_NEAR(gf[0], UNITS * 0.5, 0);
  ASSERT_DBL_NEAR(gf[1], 2.5, 0);
  ASSERT_DBL_NEAR(gf[2], UNITS * 0.25, 0);
  ruda_handle_release(&hi);
  ruda_handle_release(&hu);
  ruda_handle_release(&hf);
  ruda_kernel_release(k);
}

TEST(atomics_64_bit_and_f64_add_or_a_clear_error_at_launch) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(atomics64));
  enum { RUDAS = 4, UNITS = RUDAS * 64 };
  int64_t gi[5] = {0, INT64_MAX, INT64_MIN, 0, 0};
  uint64_t gu[6] = {0, UINT64_MAX, 0, 0, 0, 0};
  double gd[2] = {0};
  ruda_handle_t hi = cts_upload(c, gi, sizeof gi), hu = cts_upload(c, gu, sizeof gu),
                hd = cts_upload(c, gd, sizeof gd);
  ruda_status_t s = RUDA_LAUNCH(atomics64, c, k, ruda_count_static(RUDAS, 1, 1), &hi, &hu, &hd);
  if (!has_feature(RUDA_FEATURE_ATOMIC_I64 | RUDA_FEATURE_F64)) {
    /* The device lacks them: the launch itself says so, naming the kernel. */
    ASSERT_NOT_NULL(s);
    ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION));
    char text[1024];
    ruda_status_format(s, text, sizeof text);
    ASSERT_STR_CONTAINS(text, "atomics64");
    ruda_status_free(s);
  } else {
    ASSERT_OK(s);
    ASSERT_OK(ruda_client_read(c, &hi, gi, sizeof gi));
    ASSERT_OK(ruda_client_read(c, &hu, gu, sizeof gu));
    ASSERT_OK(ruda_client_read(c, &hd, gd, sizeof gd));
    int64_t base = -100 - ((int64_t)1 << 40), sum = 0;
    uint64_t usum = 0;
    for (int i = 0; i < UNITS; i++) {
      sum += base + i;
      usum += ((uint64_t)1 << 40) + (uint64_t)i;
    }
    ASSERT_EQ(gi[0], sum);
    ASSERT_EQ(gi[1], base);
    ASSERT_EQ(gi[2], base + UNITS - 1);
    ASSERT_EQ(gi[3], -7);
    ASSERT_TRUE(gi[4] <= -1 && gi[4] >= -UNITS);
    ASSERT_UEQ(gu[0], usum);
    ASSERT_UEQ(gu[1], (uint64_t)1 << 40);
    ASSERT_UEQ(gu[2], ((uint64_t)1 << 40) + UNITS - 1);
    ASSERT_UEQ(gu[3], (uint64_t)7 << 35);
    ASSERT_TRUE(gu[4] >= ((uint64_t)1 << 40) && gu[4] < ((uint64_t)1 << 40) + UNITS);
    ASSERT_UEQ(gu[5], usum);
    ASSERT_DBL_NEAR(gd[0], UNITS * 0.5, 0);
    ASSERT_DBL_NEAR(gd[1], UNITS * 0.25, 0);
  }
  ruda_handle_release(&hi);
  ruda_handle_release(&hu);
  ruda_handle_release(&hd);
  ruda_kernel_release(k);
  ruda_client_release(c);
}

TEST(math_functions_f32) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(math_f32));
  float x = 0.7f, out[30];
  ruda_handle_t hx = cts_upload(c, &x, sizeof x), ho = cts_upload(c, out, sizeof out);
  ASSERT_OK(RUDA_LAUNCH(math_f32, c, k, ruda_count_static(1, 1, 1), &hx, &ho));
  ASSERT_OK(ruda_client_read(c, &ho, out, sizeof out));
  const double v = 0.7f;
  const float v10 = x * 10.0f; /* as the kernel computes it, in float */
  const double want[30] = {sqrt(v), exp(v), log(v), pow(v, 2.5), sin(v), cos(v), tan(v),
                           tanh(v), v, floorf(v10), ceilf(v10), 0.5, v, v * 2 + 1,
                           erf(v), 1 / sqrt(v), atan2(v, 2), exp2(v), log2(v),
                           roundf(v10), truncf(-v10), fmod(5.5, v), -v, 5.0,
                           cbrt(v * 8), 1, 1, 0.25 + 2.0, (double)FLT_EPSILON * FLT_MAX,
                           (double)(float)INT32_MAX + (double)(float)UINT32_MAX};
  for (int i = 0; i < 30; i++) {
    double tol = 2e-6 * (fabs(want[i]) > 1 ? fabs(want[i]) : 1);
    if (fabs(out[i] - want[i]) > tol) {
      rt_fail_msg(__FILE__, __LINE__, "math_f32 result %d: %.9g, expected %.9g", i, (double)out[i],
                  want[i]);
      rt_fail();
    }
  }
  ruda_handle_release(&hx);
  ruda_handle_release(&ho);
  ruda_kernel_release(k);
}

TEST(math_functions_f64_on_devices_with_f64) {
  if (!has_feature(RUDA_FEATURE_F64)) SKIP("the device has no f64");
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(math_f64));
  double x = 0.7, out[10];
  ruda_handle_t hx = cts_upload(c, &x, sizeof x), ho = cts_upload(c, out, sizeof out);
  ASSERT_OK(RUDA_LAUNCH(math_f64, c, k, ruda_count_static(1, 1, 1), &hx, &ho));
  ASSERT_OK(ruda_client_read(c, &ho, out, sizeof out));
  const double want[10] = {sqrt(x), exp(x),  log(x),  pow(x, 2.5),     sin(x),
                           cos(x),  tanh(x), fabs(x), floor(x * 10.0), x * 2 + 1};
  for (int i = 0; i < 10; i++) ASSERT_DBL_NEAR(out[i], want[i], 1e-12);
  ruda_handle_release(&hx);
  ruda_handle_release(&ho);
  ruda_kernel_release(k);
}

TEST(dims_chosen_at_kernel_creation) {
  ruda_client_t *c = cts_client();
  const ruda_dim_t dims[2] = {{8, 4, 1}, {5, 3, 2}};
  for (int t = 0; t < 2; t++) {
    ruda_kernel_desc_t d = RUDA_KERNEL_DESC(any_dims);
    d.ruda_dim = dims[t];
    ruda_kernel_t *k = create(d);
    uint32_t units = dims[t].x * dims[t].y * dims[t].z;
    uint32_t out[3 * 32];
    ruda_handle_t h = cts_upload(c, out, sizeof out);
    ASSERT_OK(RUDA_LAUNCH(any_dims, c, k, ruda_count_static(3, 1, 1), &h));
    ASSERT_OK(ruda_client_read(c, &h, out, sizeof out));
    for (uint32_t i = 0; i < 3 * units; i++) ASSERT_UEQ(out[i], (i % units) * 10 + dims[t].x);
    ruda_handle_release(&h);
    ruda_kernel_release(k);
  }
}

TEST(typed_launcher_rejects_a_null_buffer_at_once) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = create(RUDA_KERNEL_DESC(positions));
  ruda_status_t s = RUDA_LAUNCH(positions, c, k, ruda_count_static(1, 1, 1), NULL);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "buffer 'out' is NULL");
  ruda_status_free(s);
  ruda_kernel_release(k);
}
