/* A kernel made from one code entry of source text, for the tests of the
 * device backends (cuda_test_util.h, opencl_test_util.h): fails the test
 * when it cannot be made. */
#ifndef RUDA_TEST_KERNEL_H
#define RUDA_TEST_KERNEL_H

#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

static inline ruda_kernel_t *test_kernel(ruda_kernel_format_t format, const char *name,
                                         const char *src, ruda_dim_t dim, uint64_t shared) {
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.ruda_dim = dim;
  d.shared_mem_bytes = shared;
  ruda_kernel_code_t code = ruda_kernel_code_text(format, src);
  d.code = &code;
  d.num_code = 1;
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  return k;
}

#endif
