/* A kernel file for the Python tests: y = a * x + y + BIAS, BIAS a -D
 * constant (0 by default). */
#include <ruda/kernel_dialect.h>

#ifndef BIAS
#define BIAS 0
#endif

RUDA_KERNEL(saxpy, RUDA_DIM(64, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, y), RUDA_SCALAR(uint32_t, n), RUDA_SCALAR(float, a)) {
  RUDA_UNITS(u) {
    if (u.abs_x < n) y[u.abs_x] = a * x[u.abs_x] + y[u.abs_x] + (float)BIAS;
  }
}
