/* Kernels of one code entry for the tests: test_kernel_desc describes one,
 * test_kernel makes one from source text (the tests of the device
 * backends, cuda_test_util.h, opencl_test_util.h) and fails the test when
 * it cannot be made. */
#ifndef RUDA_TEST_KERNEL_H
#define RUDA_TEST_KERNEL_H

#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

/* The description of kernel `name` with the one code entry `code`
 * (borrowed), the other fields zero. */
static inline ruda_kernel_desc_t test_kernel_desc(const char *name, ruda_dim_t dim,
                                                  const ruda_kernel_code_t *code) {
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.ruda_dim = dim;
  d.code = code;
  d.num_code = 1;
  return d;
}

/* The kernel of the portable kernel `text` (NUL-terminated), compiled with
 * the one option `option` (NULL: none); `origin` names it in messages.
 * Fails the test when it cannot be made. */
static inline ruda_kernel_t *test_kernel_from_text(const char *text, const char *origin,
                                                   const char *option) {
  ruda_kernel_source_t src;
  memset(&src, 0, sizeof src);
  if (option) {
    src.options = &option;
    src.num_options = 1;
  }
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_from_text(text, 0, origin, &src, &k));
  return k;
}

/* Launches `k` on one ruda over the one buffer `h`, then syncs: the
 * launch's error, else the stream's, else NULL. */
static inline ruda_status_t test_launch_and_sync(ruda_client_t *c, ruda_kernel_t *k,
                                                 const ruda_handle_t *h) {
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.buffers = h;
  args.num_buffers = 1;
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args);
  return s ? s : ruda_client_sync(c);
}

static inline ruda_kernel_t *test_kernel(ruda_kernel_format_t format, const char *name,
                                         const char *src, ruda_dim_t dim, uint64_t shared) {
  ruda_kernel_code_t code = ruda_kernel_code_text(format, src);
  ruda_kernel_desc_t d = test_kernel_desc(name, dim, &code);
  d.shared_mem_bytes = shared;
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  return k;
}

#endif
