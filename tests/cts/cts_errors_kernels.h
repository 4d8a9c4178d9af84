#include <ruda/kernel_dialect.h>

/* A scalar named after a keyword of OpenCL C and of C++: C takes it, the
 * GPU compilers do not (the errors users read, tests/cts/test_cts_errors.c). */
RUDA_KERNEL(keyword_scalar, RUDA_DIM(1, 1, 1), RUDA_BUFFER(uint32_t *restrict, out),
            RUDA_SCALAR(uint32_t, private)) {
  RUDA_UNITS_NOWAIT(u) {
    out[u.abs_x] = private + 1u;
  }
}
