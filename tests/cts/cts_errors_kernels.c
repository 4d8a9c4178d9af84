#include <ruda/kernel_dialect.h>

/* A scalar named after an OpenCL C keyword: C takes it, OpenCL does not. */
RUDA_KERNEL(keyword_scalar, RUDA_DIM(1, 1, 1), RUDA_BUFFER(uint32_t *restrict, out),
            RUDA_SCALAR(uint32_t, local)) {
  RUDA_UNITS_NOWAIT(u) {
    out[u.abs_x] = local + 1u;
  }
}
