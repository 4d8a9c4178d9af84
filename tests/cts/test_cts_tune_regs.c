/* The register-blocked matmul kernels of the tuned matmul
 * (src/tune/kernels/matmul_regs_body.h), launched directly on every
 * backend: the tuner offers them on GPUs only, and they must compute the
 * right result everywhere. The sizes give whole tiles (the path without
 * bounds checks), edges in m, n and k, one element, and several k tiles. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cts.h"
#include "cts_matmul_data.h"
#include "tune/kernels/tuned_kernels.h"

/* The kernels, and the tile of C each ruda computes (rows, columns). */
enum { NUM_RG = 6 };
static const uint32_t k_tile[NUM_RG][2] = {{128, 128}, {128, 64}, {64, 64},
                                           {128, 128}, {64, 64},  {128, 64}};
#define RUN_KERNEL(name)                                                       \
  do {                                                                     \
    ASSERT_OK(RUDA_KERNEL_CREATE(name, &kern));                            \
    ASSERT_OK(RUDA_LAUNCH(name, c, kern, count, &ha, &hb, &hc, m, n, k)); \
  } while (0)

/* Launches kernel `which` (k_tile's order) on C = A * B of these sizes
 * and checks C against a plain loop. */
static void check_regs(int which, uint32_t m, uint32_t n, uint32_t k) {
  ruda_client_t *c = cts_client();
  float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
  float *got = malloc(sizeof(float) * m * n), *want = malloc(sizeof(float) * m * n);
  ASSERT_TRUE(a && b && got && want);
  cts_matmul_data(a, b, want, m, n, k);
  ruda_handle_t ha, hb, hc;
  ASSERT_OK(ruda_client_create_buffer(c, a, sizeof(float) * m * k, &ha));
  ASSERT_OK(ruda_client_create_buffer(c, b, sizeof(float) * k * n, &hb));
  for (uint32_t i = 0; i < m * n; i++) got[i] = NAN; /* every element must be written */
  ASSERT_OK(ruda_client_create_buffer(c, got, sizeof(float) * m * n, &hc));
  ruda_kernel_t *kern = NULL;
  ruda_count_t count = ruda_count_static((n + k_tile[which][1] - 1) / k_tile[which][1],
                                         (m + k_tile[which][0] - 1) / k_tile[which][0], 1);
  switch (which) {
    case 0: RUN_KERNEL(tuned_mm_r16x16_t8x8_k8); break;
    case 1: RUN_KERNEL(tuned_mm_r16x16_t8x4_k16); break;
    case 2: RUN_KERNEL(tuned_mm_r16x16_t4x4_k16); break;
    case 3: RUN_KERNEL(tuned_mm_r16x16_t8x8_k8_rolled); break;
    case 4: RUN_KERNEL(tuned_mm_r8x8_t8x8_k8); break;
    default: RUN_KERNEL(tuned_mm_r8x16_t8x8_k8); break;
  }
  ASSERT_OK(ruda_client_read(c, &hc, got, sizeof(float) * m * n));
  for (uint32_t i = 0; i < m * n; i++) {
    if (!(fabs(got[i] - want[i]) <= 1e-3))
      fprintf(stderr, "kernel %d, %u x %u x %u: C[%u] = %g, want %g\n", which, m, n, k, i,
              got[i], want[i]);
    ASSERT_DBL_NEAR(got[i], want[i], 1e-3);
  }
  ruda_kernel_release(kern);
  ruda_handle_release(&ha);
  ruda_handle_release(&hb);
  ruda_handle_release(&hc);
  free(a);
  free(b);
  free(got);
  free(want);
}

TEST(tune_regs_matmul_right_on_whole_tiles_and_edges) {
  static const uint32_t sizes[][3] = {
      {128, 128, 32}, /* whole tiles only, four k tiles of 8 */
      {256, 192, 48}, /* whole tiles and (128 x 128) a ruda at the n edge */
      {130, 136, 37}, /* whole tiles, edges in m, n and a part k tile */
      {1, 1, 1},      /* one element */
      {70, 45, 300},  /* no whole tile, many k tiles */
  };
  for (int which = 0; which < NUM_RG; which++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
      check_regs(which, sizes[s][0], sizes[s][1], sizes[s][2]);
}

/* The tuned matmul offers them on GPUs, and only there. */
TEST(tune_regs_offered_on_gpus_only) {
  ruda_client_t *c = cts_client();
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_builtin_op(c, "matmul_f32", &op));
  size_t regs = 0;
  for (size_t i = 0; i < ruda_tune_op_num_candidates(op); i++)
    if (strncmp(ruda_tune_op_candidate_name(op, i), "r16x16_", 7) == 0 ||
        strncmp(ruda_tune_op_candidate_name(op, i), "r8x", 3) == 0)
      regs++;
  const ruda_device_properties_t *p = ruda_client_properties(c);
  ASSERT_TRUE(p != NULL);
  ASSERT_UEQ(regs, p->hardware.num_cpu_cores == 0 ? NUM_RG : 0);
}
