/* Kernels of test_cts_fp_contract.c: a*x + y and a dot product, whose
 * results a fused multiply-add would change in the last bits. Natively
 * compiled without contraction whatever the compiler's flags. */
#define RUDA_KERNEL_FP_CONTRACT_OFF
#include <ruda/kernel_dialect.h>

#include "cts_units.h"

/* y[i] = a * x[i] + y[i], one element per unit. */
RUDA_KERNEL(fpc_axpy, RUDA_DIM(CTS_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, y), RUDA_SCALAR(float, a), RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) y[u.abs_x] = a * x[u.abs_x] + y[u.abs_x];
  }
}

/* out[r] = the dot product of row r of x and of y (`len` each), summed in
 * order by one unit. */
RUDA_KERNEL(fpc_dot, RUDA_DIM(CTS_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(const float *restrict, y), RUDA_BUFFER(float *restrict, out),
            RUDA_SCALAR(uint32_t, rows), RUDA_SCALAR(uint32_t, len)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < rows) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < len; k++)
        acc += x[(size_t)u.abs_x * len + k] * y[(size_t)u.abs_x * len + k];
      out[u.abs_x] = acc;
    }
  }
}
