/* The tuned matmul's CPU code once more, compiled for AVX2 and FMA: on a
 * CPU device whose processor has them, these replace the portable build's
 * candidates of matmul_f32 (tune_builtin.c), under names ending in
 * "_avx2". The library itself is
 * built for the baseline instruction set; only these functions use more,
 * and only where the processor reports it (__builtin_cpu_supports). */
#include "tune/tune_internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("O3")
#include "tune/kernels/tuned_kernels.h"

bool ruda__tune_have_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* The descriptions of the matmul kernels, in tune_builtin.c's order. */
size_t ruda__tune_matmul_avx2_descs(ruda_kernel_desc_t *out, size_t cap) {
  if (cap < 6) return 0;
  out[0] = RUDA_KERNEL_DESC(tuned_mm_b16x16_w1_k16);
  out[1] = RUDA_KERNEL_DESC(tuned_mm_b16x16_w2_k16_v2);
  out[2] = RUDA_KERNEL_DESC(tuned_mm_b32x8_w4_k16_v4);
  out[3] = RUDA_KERNEL_DESC(tuned_mm_b64x1_w8_k64_v4);
  out[4] = RUDA_KERNEL_DESC(tuned_mm_b64x4_w4_k32_v4);
  out[5] = RUDA_KERNEL_DESC(tuned_mm_b128x1_w4_k64_v4);
  return 6;
}
#pragma GCC pop_options
#else
bool ruda__tune_have_avx2(void) { return false; }
size_t ruda__tune_matmul_avx2_descs(ruda_kernel_desc_t *out, size_t cap) {
  (void)out;
  (void)cap;
  return 0;
}
#endif
