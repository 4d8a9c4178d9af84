/* Per-ruda sums through shared memory, written once (cpu:N, cuda:N,
 * opencl:N). Each ruda sums REDUCTION_UNITS values of `in` at a time into
 * its units' private accumulators, then halves a shared array level by
 * level, with a barrier after each level, and writes one partial sum. */
#ifndef EXAMPLE_REDUCTION_KERNELS_H
#define EXAMPLE_REDUCTION_KERNELS_H

#include <ruda/kernel_dialect.h>

#define REDUCTION_UNITS 256

/* out[ruda] = in[ruda * per .. (ruda + 1) * per) summed, clipped to n. */
RUDA_KERNEL(partial_sum, RUDA_DIM(REDUCTION_UNITS, 1, 1), RUDA_BUFFER(const double *restrict, in),
            RUDA_BUFFER(double *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, per), RUDA_SHARED(double, sh, REDUCTION_UNITS)) {
  RUDA_PRIVATE(double, acc);
  uint64_t begin = (uint64_t)ruda_pos.x * per;
  uint64_t end = RUDA_MIN(begin + per, n);
  RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) = 0.0;
  /* Uniform loop: every unit takes one value of each block of units. */
  for (uint64_t b = begin; b < end; b += REDUCTION_UNITS) {
    RUDA_UNITS_NOWAIT(u) {
      if (b + u.x < end) RUDA_PRIV(u, acc) += in[b + u.x];
    }
  }
  RUDA_UNITS(u) sh[u.x] = RUDA_PRIV(u, acc);
  /* A barrier in a loop whose trip count every unit shares. */
  for (uint32_t s = REDUCTION_UNITS / 2; s > 0; s /= 2) {
    RUDA_RANGE(uint32_t, i, 0, s) sh[i] += sh[i + s];
  }
  RUDA_SINGLE_NOWAIT out[ruda_pos.x] = sh[0];
}

#endif
