/* The kernels of examples/mpi_data_parallel.c, written once (cpu:N, cuda:N,
 * opencl:N). Buffers: x[n][DP_FEATURES] samples, y[n] targets, w and grad
 * [DP_FEATURES]. */
#ifndef EXAMPLE_MPI_DATA_PARALLEL_KERNELS_H
#define EXAMPLE_MPI_DATA_PARALLEL_KERNELS_H

#include <ruda/kernel_dialect.h>

#define DP_FEATURES 8
#define DP_UNITS 128

/* Ruda j computes grad[j] = 2/n sum_i x[i][j] (x[i] . w - y[i]): its units
 * share the samples, then halve their partial sums through shared memory. */
RUDA_KERNEL(gradient, RUDA_DIM(DP_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(const float *restrict, y), RUDA_BUFFER(const float *restrict, w),
            RUDA_BUFFER(float *restrict, grad), RUDA_SCALAR(uint64_t, n),
            RUDA_SHARED(float, part, DP_UNITS)) {
  const uint32_t j = ruda_pos.x;
  RUDA_UNITS(u) {
    float g = 0.0f;
    RUDA_UNIT_SHARE(u, uint64_t, i, 0, n) {
      float r = -y[i];
      for (int f = 0; f < DP_FEATURES; f++) r += x[i * DP_FEATURES + (uint64_t)f] * w[f];
      g += x[i * DP_FEATURES + j] * r;
    }
    part[u.x] = g;
  }
  for (uint32_t s = DP_UNITS / 2; s > 0; s /= 2) {
    RUDA_RANGE(uint32_t, k, 0, s) part[k] += part[k + s];
  }
  RUDA_SINGLE_NOWAIT grad[j] = 2.0f * part[0] / (float)n;
}

/* Ruda j: w[j] -= lr * grad[j]. */
RUDA_KERNEL(update, RUDA_DIM(1, 1, 1), RUDA_BUFFER(float *restrict, w),
            RUDA_BUFFER(const float *restrict, grad), RUDA_SCALAR(float, lr)) {
  RUDA_SINGLE_NOWAIT w[ruda_pos.x] -= lr * grad[ruda_pos.x];
}

#endif
