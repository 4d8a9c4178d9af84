/* add_one.h: x[i] += 1 for i < n, written once for every backend. */
#include <ruda/kernel_dialect.h>

RUDA_KERNEL(add_one, RUDA_DIM(256, 1, 1), /* 256 units per ruda */
            RUDA_BUFFER(float *restrict, x), RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) { /* each unit of the ruda, once */
    if (u.abs_x < n) x[u.abs_x] += 1.0f;
  }
}
