/* C = A x B (f32, row-major, any sizes), written once (cpu:N, cuda:N,
 * opencl:N): each ruda computes one MATMUL_TILE x MATMUL_TILE tile of C,
 * staging tiles of A and B through shared memory; each unit keeps its
 * element of C in a private accumulator across the tile loop's barriers. */
#ifndef EXAMPLE_MATMUL_KERNELS_H
#define EXAMPLE_MATMUL_KERNELS_H

#include <ruda/kernel_dialect.h>

#define MATMUL_TILE 16

RUDA_KERNEL(matmul, RUDA_DIM(MATMUL_TILE, MATMUL_TILE, 1), RUDA_BUFFER(const float *restrict, A),
            RUDA_BUFFER(const float *restrict, B), RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MATMUL_TILE * MATMUL_TILE),
            RUDA_SHARED(float, Bs, MATMUL_TILE * MATMUL_TILE)) {
  RUDA_PRIVATE(float, acc);
  RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) = 0.0f;
  for (uint32_t t = 0; t < K; t += MATMUL_TILE) {
    RUDA_UNITS(u) {
      uint32_t r = u.abs_y, c = t + u.x;
      As[u.y * MATMUL_TILE + u.x] = r < M && c < K ? A[(size_t)r * K + c] : 0.0f;
      r = t + u.y;
      c = u.abs_x;
      Bs[u.y * MATMUL_TILE + u.x] = r < K && c < N ? B[(size_t)r * N + c] : 0.0f;
    }
    /* The dot product as a uniform loop around a unit region: on a CPU the
     * loop over units is the inner, vectorised one; on a GPU each unit
     * loops over p as CUDA C would. */
    for (int p = 0; p < MATMUL_TILE; p++) {
      RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) += As[u.y * MATMUL_TILE + p] * Bs[p * MATMUL_TILE + u.x];
    }
    RUDA_BARRIER();
  }
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_y < M && u.abs_x < N) C[(size_t)u.abs_y * N + u.abs_x] = RUDA_PRIV(u, acc);
  }
}

#endif
