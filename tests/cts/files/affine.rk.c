/* A kernel file that no test program is built with: test_cts_kernel_file.c
 * loads it at run time (ruda_kernel_from_file) with -D constants. */
#include <ruda/kernel_dialect.h>

#include "affine_consts.h"

#ifndef SCALE
#define SCALE 2
#endif

RUDA_KERNEL(affine, RUDA_DIM(BLOCK, 1, 1), RUDA_BUFFER(const int32_t *restrict, in),
            RUDA_BUFFER(int32_t *restrict, out), RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS(u) {
    if (u.abs_x < n) out[u.abs_x] = in[u.abs_x] * SCALE + OFFSET;
  }
}

RUDA_KERNEL(broken, RUDA_DIM(64, 1, 1), RUDA_BUFFER(int32_t *, out)) {
  RUDA_UNITS(u) {
#ifdef BREAK_IT
    out[u.abs_x] = undeclared_name;
#else
    out[u.abs_x] = 0;
#endif
  }
}
