/* saxpy.h: y = a * x + y for i < n, written once for every backend. */
#include <ruda/kernel_dialect.h>

RUDA_KERNEL(saxpy, RUDA_DIM(128, 1, 1), /* 128 units per ruda */
            RUDA_BUFFER(const float *restrict, x), RUDA_BUFFER(float *restrict, y),
            RUDA_SCALAR(float, a), RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) { /* each unit of the ruda, once */
    if (u.abs_x < n) y[u.abs_x] = a * x[u.abs_x] + y[u.abs_x];
  }
}
