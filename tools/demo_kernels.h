/* The kernels of `ruda demo` (tools/cmd_demo.c), written once in the
 * portable dialect (docs/kernels.md): compiled into the command for cpu:N,
 * and their text embedded (tools/CMakeLists.txt, ruda_add_kernels) for
 * cuda:N and opencl:N. */
#ifndef RUDA_TOOLS_DEMO_KERNELS_H
#define RUDA_TOOLS_DEMO_KERNELS_H

#include <ruda/kernel_dialect.h>

#define DEMO_UNITS 256   /* units per ruda of vector_add and reduce_sum */
#define DEMO_RED_ITEMS 4 /* elements each unit of reduce_sum adds before the tree */
#define DEMO_TILE 16     /* matmul_tiled's tiles: DEMO_TILE x DEMO_TILE units */

/* c = a + b over n elements, one per unit. */
RUDA_KERNEL(vector_add, RUDA_DIM(DEMO_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(float *restrict, c),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) c[u.abs_x] = a[u.abs_x] + b[u.abs_x];
  }
}

/* out[ruda] = the sum of the ruda's DEMO_UNITS * DEMO_RED_ITEMS elements of
 * `in` (clipped to n): each unit adds DEMO_RED_ITEMS of them, a unit count
 * apart, into its shared slot; then the slots are halved level by level,
 * a barrier after each level. */
RUDA_KERNEL(reduce_sum, RUDA_DIM(DEMO_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, in),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint32_t, n),
            RUDA_SHARED(float, sh, DEMO_UNITS)) {
  uint64_t base = (uint64_t)ruda_pos.x * DEMO_UNITS * DEMO_RED_ITEMS;
  RUDA_UNITS(u) {
    float acc = 0.0f;
    for (uint32_t k = 0; k < DEMO_RED_ITEMS; ++k) {
      uint64_t i = base + u.x + (uint64_t)k * DEMO_UNITS;
      if (i < n) acc += in[i];
    }
    sh[u.x] = acc;
  }
  for (uint32_t s = DEMO_UNITS / 2; s > 0; s /= 2) {
    RUDA_RANGE(uint32_t, i, 0, s) sh[i] += sh[i + s];
  }
  RUDA_SINGLE_NOWAIT out[ruda_pos.x] = sh[0];
}

/* C = A * B (row-major, M x K times K x N): each ruda computes one tile of
 * C, staging tiles of A and B through shared memory; each unit keeps its
 * element of C in a private accumulator across the tile loop's barriers. */
RUDA_KERNEL(matmul_tiled, RUDA_DIM(DEMO_TILE, DEMO_TILE, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C), RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N),
            RUDA_SCALAR(uint32_t, K), RUDA_SHARED(float, As, DEMO_TILE * DEMO_TILE),
            RUDA_SHARED(float, Bs, DEMO_TILE * DEMO_TILE)) {
  RUDA_PRIVATE(float, acc);
  RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) = 0.0f;
  for (uint32_t t = 0; t < K; t += DEMO_TILE) {
    RUDA_UNITS(u) {
      uint32_t r = u.abs_y, k = t + u.x;
      As[u.y * DEMO_TILE + u.x] = r < M && k < K ? A[(uint64_t)r * K + k] : 0.0f;
      uint32_t kb = t + u.y, c = u.abs_x;
      Bs[u.y * DEMO_TILE + u.x] = kb < K && c < N ? B[(uint64_t)kb * N + c] : 0.0f;
    }
    for (uint32_t p = 0; p < DEMO_TILE; ++p) {
      RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) += As[u.y * DEMO_TILE + p] * Bs[p * DEMO_TILE + u.x];
    }
    RUDA_BARRIER();
  }
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_y < M && u.abs_x < N) C[(uint64_t)u.abs_y * N + u.abs_x] = RUDA_PRIV(u, acc);
  }
}

#endif
