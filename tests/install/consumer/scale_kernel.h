/* scale_kernel.h: x[i] = 2 x[i] + 1 for i < n, a portable kernel that the
 * consumer project embeds with ruda_add_kernels(). */
#include <ruda/kernel_dialect.h>

RUDA_KERNEL(consumer_scale, RUDA_DIM(128, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) x[u.abs_x] = 2.0f * x[u.abs_x] + 1.0f;
  }
}
