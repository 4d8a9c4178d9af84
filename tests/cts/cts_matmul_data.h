/* Inputs and the expected result of a conformance matmul, C[m x n] =
 * A[m x k] * B[k x n], row major: small integers (exact in f32 for the
 * sizes the tests use), and C from a plain loop. */
#ifndef CTS_MATMUL_DATA_H
#define CTS_MATMUL_DATA_H

#include <stdint.h>

static inline void cts_matmul_data(float *a, float *b, float *want, uint32_t m, uint32_t n,
                                   uint32_t k) {
  for (uint32_t i = 0; i < m * k; i++) a[i] = (float)((i * 7) % 13) - 6.0f;
  for (uint32_t i = 0; i < k * n; i++) b[i] = (float)((i * 5) % 11) - 5.0f;
  for (uint32_t i = 0; i < m; i++)
    for (uint32_t j = 0; j < n; j++) {
      float s = 0;
      for (uint32_t p = 0; p < k; p++) s += a[i * k + p] * b[p * n + j];
      want[i * n + j] = s;
    }
}

#endif
