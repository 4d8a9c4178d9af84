/* What the OpenCL tests share: the client of opencl:0 (a skip with the
 * reason when there is none) and a kernel made from OpenCL C source. Only
 * with the OpenCL headers. */
#ifndef RUDA_TEST_OPENCL_TEST_UTIL_H
#define RUDA_TEST_OPENCL_TEST_UTIL_H

#include <string.h>

#include "backends/opencl/opencl_internal.h"
#include "ruda/ruda.h"
#include "test.h"
#include "test_client.h"
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

/* The first OpenCL device, and the entry points in *api; skips the test
 * (with the reason) where there is none. */
static inline const ruda__opencl_device_t *ocl_first_device(const ruda__opencl_api_t **api) {
  const ruda__opencl_device_t *devs = NULL;
  size_t n = 0;
  ruda_status_t s = ruda__opencl_devices(&devs, &n);
  if (s) {
    static char why[512];
    ruda_status_format(s, why, sizeof why);
    ruda_status_free(s);
    SKIP_UNAVAILABLE("opencl", why);
  }
  ASSERT_OK(ruda__opencl_api_get(api));
  return &devs[0];
}

/* The error of kind `cause` in the chain of the error `s` (both asserted
 * to be there), raised by the OpenCL call `call` (NULL: not checked) with
 * the code named `code`. */
static inline ruda_status_t ocl_vendor_cause(ruda_status_t s, ruda_error_kind_t cause,
                                             const char *call, const char *code) {
  ASSERT_NOT_NULL(s);
  ruda_status_t u = ruda_status_find(s, cause);
  ASSERT_NOT_NULL(u);
  if (call) ASSERT_STR_EQ(ruda_status_vendor_call(u), call);
  ASSERT_STR_EQ(ruda_status_vendor_code_name(u), code);
  return u;
}

/* A kernel whose only code is OpenCL C `src`. */
static inline ruda_kernel_t *ocl_kernel(const char *name, const char *src, ruda_dim_t dim,
                                  uint64_t shared) {
  return test_kernel(RUDA_KERNEL_FORMAT_OPENCL_C, name, src, dim, shared);
}

/* Launches `k`, whose info words are a count and a value, on the first `n`
 * u32 of `h` with `value`: 64 units per ruda. */
static inline ruda_status_t ocl_launch_over(ruda_client_t *c, ruda_kernel_t *k,
                                            const ruda_handle_t *h, uint64_t n, uint32_t value) {
  uint64_t info[2] = {n, value};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {info, 2, 2}};
  return ruda_client_launch(c, k, ruda_count_static((uint32_t)((n + 63) / 64), 1, 1), &args);
}

#endif
