/* Two forms of the same kernel, x[i] *= s: the tuner picks the faster one
 * per device and size (docs/guide/11-tuning-kernels.md). */
#include <ruda/kernel_dialect.h>

/* guide-begin: kernels */
RUDA_KERNEL(scale_range, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk)) {
  const uint64_t begin = (uint64_t)ruda_pos.x * chunk, end = RUDA_MIN(begin + chunk, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) x[i] *= s;
}

RUDA_KERNEL(scale_units, RUDA_DIM(256, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk)) {
  RUDA_UNITS_NOWAIT(u) {
    const uint64_t i = (uint64_t)ruda_pos.x * 256 + u.x;
    if (i < n) x[i] *= s;
  }
}
/* guide-end: kernels */
