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

/* The six values the bounds kernels of the natural-form tests
 * (test_portable_kernel.c, test_cpu_compile.c) write for the unit whose
 * abs_x is `a`, each under one bound on abs_x (`< n`, `n >`, `<= n`,
 * `>= n`, `< n64`, past `continue` when `< n`), UINT32_MAX where the bound
 * leaves it unwritten. Fails the test on the first that differs. */
static inline void test_check_unit_bounds(const uint32_t o[6], uint32_t a, uint32_t n,
                                          uint64_t n64) {
  ASSERT_UEQ(o[0], a < n ? a : UINT32_MAX);
  ASSERT_UEQ(o[1], n > a ? a + 1 : UINT32_MAX);
  ASSERT_UEQ(o[2], a <= n ? a + 2 : UINT32_MAX);
  ASSERT_UEQ(o[3], a >= n ? a + 3 : UINT32_MAX);
  ASSERT_UEQ(o[4], a < n64 ? a + 4 : UINT32_MAX);
  ASSERT_UEQ(o[5], a < n ? UINT32_MAX : a + 5);
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

static inline void test_cpu_plus_one(const ruda_cpu_kernel_ctx_t *k) {
  uint32_t *v = k->buffers[0];
  v[k->ruda_pos.x] += 1;
}

/* Checks that `c` (a client of a CPU device) works end to end: `n` (at most
 * 64) u32 go up in a new buffer, a native kernel adds one to each, one
 * ruda per value, and the values read back are one more. */
static inline void test_cpu_plus_one_round_trip(ruda_client_t *c, uint32_t n) {
  uint32_t in[64], out[64];
  ASSERT_ULE(n, 64);
  for (uint32_t i = 0; i < n; i++) in[i] = i + 1;
  ruda_handle_t h = {0};
  ASSERT_OK(ruda_client_create_buffer(c, in, n * sizeof in[0], &h));
  ruda_kernel_code_t code = ruda_kernel_code_cpu(test_cpu_plus_one);
  ruda_kernel_desc_t d = test_kernel_desc("plus_one", ruda_dim_new_1d(1), &code);
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(n, 1, 1), &args));
  ASSERT_OK(ruda_client_read(c, &h, out, n * sizeof out[0]));
  for (uint32_t i = 0; i < n; i++) ASSERT_UEQ(out[i], in[i] + 1);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
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
