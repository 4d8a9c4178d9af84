/* Futures that outlive their server: ruda_shutdown() (as at exit) destroys
 * the CUDA server while read and sync futures are still held. Waiting them
 * afterwards returns a status, the data or RUDA_ERR_UNAVAILABLE, without
 * touching the server's freed memory (run under ASan by
 * `scripts/gpu_check.sh --asan`). Its own program: after the shutdown the
 * device stays down for the rest of the process. */
#include "cuda_test_util.h"

/* The result of a future waited after the shutdown: success (with the
 * `n` bytes it read, if any), or RUDA_ERR_UNAVAILABLE (status freed). */
static void expect_data_or_unavailable(ruda_status_t s, const void *got, const void *want,
                                       size_t n, const char *what) {
  if (s == NULL) {
    printf("  %s: completed%s\n", what, n > 0 ? " with the data" : "");
    if (n > 0) ASSERT_MEM_EQ(got, want, n);
    return;
  }
  char *t = status_text(s);
  printf("  %s: %s\n", what, t);
  free(t);
  ASSERT_ERR_KIND(s, RUDA_ERR_UNAVAILABLE);
}

TEST(futures_waited_after_shutdown) {
  ruda_client_t *c = cuda_client();
  /* A small read (staged in a pooled pinned block), a large pageable read
   * (staged in the stream's pinned pool), and a sync after a kernel. */
  uint32_t small[16], small_back[16];
  for (uint32_t i = 0; i < 16; i++) small[i] = 0xC0DE0000u + i;
  memset(small_back, 0, sizeof small_back);
  enum { BIG = 1 << 18 }; /* 1 MiB of u32 */
  uint32_t *big = malloc(BIG * sizeof *big), *big_back = malloc(BIG * sizeof *big_back);
  ASSERT_TRUE(big != NULL && big_back != NULL);
  for (uint32_t i = 0; i < BIG; i++) big[i] = i * 2654435761u;
  memset(big_back, 0, BIG * sizeof *big_back);

  ruda_handle_t hs, hb, hf;
  ASSERT_OK(ruda_client_create_buffer(c, small, sizeof small, &hs));
  ASSERT_OK(ruda_client_create_buffer(c, big, BIG * sizeof *big, &hb));
  ASSERT_OK(ruda_client_empty(c, 256 * sizeof(uint32_t), &hf));
  ruda_kernel_t *k = cuda_kernel("fill", cuda_fill_src, ruda_dim_new_1d(256), 0);
  uint64_t info[2] = {256, 7};
  ruda_kernel_args_t args = {&hf, 1, NULL, 0, {info, 2, 2}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args));

  ruda_future_t *fs = NULL, *fb = NULL, *fy = NULL;
  ASSERT_OK(ruda_client_read_async(c, &hs, small_back, sizeof small_back, &fs));
  ASSERT_OK(ruda_client_read_async(c, &hb, big_back, BIG * sizeof *big_back, &fb));
  ASSERT_OK(ruda_client_sync_async(c, &fy));

  ruda_shutdown();

  expect_data_or_unavailable(ruda_future_wait(fb), big_back, big, BIG * sizeof *big,
                             "large read");
  expect_data_or_unavailable(ruda_future_wait(fs), small_back, small, sizeof small,
                             "small read");
  expect_data_or_unavailable(ruda_future_wait(fy), NULL, NULL, 0, "sync");

  /* The client outlives the device: calls fail, releases are safe. */
  ASSERT_ERR_KIND(ruda_client_sync(c), RUDA_ERR_UNAVAILABLE);
  ASSERT_ERR_KIND(ruda_client_read(c, &hs, small_back, sizeof small_back), RUDA_ERR_UNAVAILABLE);
  ruda_handle_release(&hs);
  ruda_handle_release(&hb);
  ruda_handle_release(&hf);
  ruda_kernel_release(k);
  ruda_client_release(c);
  free(big);
  free(big_back);
}
