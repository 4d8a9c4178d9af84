/* What the OpenCL tests share: the client of opencl:0 (a skip with the
 * reason when there is none) and a kernel made from OpenCL C source. Only
 * with the OpenCL headers. */
#ifndef RUDA_TEST_OPENCL_TEST_UTIL_H
#define RUDA_TEST_OPENCL_TEST_UTIL_H

#include <string.h>

#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

/* The process's client of opencl:0, made on first use; skips the test
 * (and every later one) when the device cannot be opened. */
static inline ruda_client_t *client(void) {
  static ruda_client_t *c;
  static char why[1024];
  if (c != NULL) return c;
  if (why[0]) SKIP_UNAVAILABLE("opencl", why);
  ruda_device_id_t id = {RUDA_DEVICE_TYPE_OPENCL, 0};
  ruda_status_t s = ruda_client_create(id, &c);
  if (s) {
    ruda_status_format(s, why, sizeof why);
    ruda_status_free(s);
    c = NULL;
    SKIP_UNAVAILABLE("opencl", why);
  }
  return c;
}

/* A kernel whose only code is OpenCL C `src`. */
static inline ruda_kernel_t *ocl_kernel(const char *name, const char *src, ruda_dim_t dim,
                                  uint64_t shared) {
  return test_kernel(RUDA_KERNEL_FORMAT_OPENCL_C, name, src, dim, shared);
}

#endif
