/* c = a + b, written once: compiled into the program for cpu:N, and from
 * its embedded text for cuda:N and opencl:N (examples/CMakeLists.txt embeds
 * it with ruda_add_kernels). */
#ifndef EXAMPLE_VECTOR_ADD_KERNELS_H
#define EXAMPLE_VECTOR_ADD_KERNELS_H

#include <ruda/kernel_dialect.h>

#define VECTOR_ADD_UNITS 256

RUDA_KERNEL(vector_add, RUDA_DIM(VECTOR_ADD_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(float *restrict, c),
            RUDA_SCALAR(uint64_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) c[u.abs_x] = a[u.abs_x] + b[u.abs_x];
  }
}

#endif
