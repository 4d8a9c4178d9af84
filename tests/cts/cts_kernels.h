/* The conformance suite's kernels, written once in ruda's kernel dialect:
 * compiled natively for cpu:N (cts_support.c includes this file), and from
 * the embedded text by NVRTC for cuda:N and by the OpenCL compiler for
 * opencl:N. info word 0 is the element count where there is one. */
#include <ruda/kernel_dialect.h>

#include "cts_units.h"

/* c = a + b over n elements, one per unit. */
RUDA_KERNEL(add_f32, RUDA_DIM(CTS_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(float *restrict, c),
            RUDA_SCALAR(uint64_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    uint64_t i = u.abs_x;
    if (i < n) c[i] = a[i] + b[i];
  }
}

/* out[i] = value for i < n. */
RUDA_KERNEL(fill_u32, RUDA_DIM(CTS_UNITS, 1, 1), RUDA_BUFFER(uint32_t *restrict, out),
            RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint32_t, value)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) out[u.abs_x] = value;
  }
}

/* Does nothing, with whatever dims its kernel object is given. */
RUDA_KERNEL(empty, RUDA_DIM_ANY) {}

/* out[ruda] = the sum of the ruda's CTS_UNITS inputs, as a tree in shared
 * memory sized when the kernel object is created. */
RUDA_KERNEL(sum_shared, RUDA_DIM(CTS_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, in),
            RUDA_BUFFER(float *restrict, out), RUDA_SHARED_DYNAMIC(float, sh)) {
  RUDA_UNITS(u) sh[u.x] = in[u.abs_x];
  for (uint32_t s = ruda_dim.x / 2; s > 0; s /= 2) {
    RUDA_RANGE(uint32_t, i, 0, s) sh[i] += sh[i + s];
  }
  RUDA_SINGLE_NOWAIT out[ruda_pos.x] = sh[0];
}

/* x[i] += 1 for i < n. */
RUDA_KERNEL(inc_u32, RUDA_DIM(CTS_UNITS, 1, 1), RUDA_BUFFER(uint32_t *restrict, x),
            RUDA_SCALAR(uint64_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) x[u.abs_x] += 1u;
  }
}
