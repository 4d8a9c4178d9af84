/* What the guide says about which calls wait, on cuda:0 (chapters 4 and 5;
 * tests/unit/client/test_blocking_calls.c is the same on cpu:0): behind a
 * kernel that spins for about a second, ruda_client_read_async returns
 * once the copy is issued, before the kernel ends, and its future
 * completes with the kernel's result; ruda_client_get_resource returns
 * without waiting for the kernel to finish (it is answered once the
 * kernel is issued). Skips where CUDA is unavailable. */
#include <time.h>

#include "cuda_test_util.h"

static const char spin_src[] =
    "extern \"C\" __global__ void spin_write(unsigned long long *out,\n"
    "                                        const unsigned long long *info) {\n"
    "  long long t0 = clock64();\n"
    "  while (clock64() - t0 < (long long)info[0]) {}\n"
    "  out[0] = 42;\n"
    "}\n";

static double seconds_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* The spinning kernel queued on a fresh 8-byte buffer holding 7. */
static ruda_kernel_t *queue_spin(ruda_client_t *c, ruda_handle_t *h) {
  ruda_kernel_t *k = cuda_kernel("spin_write", spin_src, ruda_dim_new_1d(1), 0);
  uint64_t seven = 7;
  ASSERT_OK(ruda_client_create_buffer(c, &seven, sizeof seven, h));
  ASSERT_OK(ruda_client_sync(c));
  uint64_t info[1] = {2000000000ull}; /* cycles: about a second at 2 GHz */
  ruda_kernel_args_t args = {h, 1, NULL, 0, {info, 1, 1}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));
  return k;
}

TEST(read_async_returns_before_the_queued_kernel_ends) {
  ruda_client_t *c = cuda_client();
  ruda_handle_t h;
  ruda_kernel_t *k = queue_spin(c, &h);
  uint64_t out = 0;
  ruda_future_t *f = NULL;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ASSERT_OK(ruda_client_read_async(c, &h, &out, sizeof out, &f));
  double issued = seconds_since(&t0);
  bool done_at_once = ruda_future_poll(f);
  ASSERT_OK(ruda_future_wait(f));
  double completed = seconds_since(&t0);
  printf("read_async returned after %.3f s, completed after %.3f s\n", issued, completed);
  ASSERT_TRUE(issued < 0.25);
  ASSERT_FALSE(done_at_once);
  ASSERT_UEQ(out, 42);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

TEST(get_resource_is_answered_once_the_work_is_issued) {
  ruda_client_t *c = cuda_client();
  ruda_handle_t h;
  ruda_kernel_t *k = queue_spin(c, &h);
  ruda_resource_t r = {0};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ASSERT_OK(ruda_client_get_resource(c, &h, &r));
  double answered = seconds_since(&t0);
  printf("get_resource answered after %.3f s\n", answered);
  ASSERT_TRUE(answered < 0.25);
  ASSERT_TRUE(r.address != 0);
  ASSERT_UEQ(r.size, 8);
  ruda_resource_release(&r);
  ASSERT_OK(ruda_client_sync(c));
  uint64_t out = 0;
  ASSERT_OK(ruda_client_read(c, &h, &out, sizeof out));
  ASSERT_UEQ(out, 42);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}
