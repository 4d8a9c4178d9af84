/* After ruda_shutdown() clients fail cleanly with Unavailable, and handles
 * and kernels can still be released. Its own program: shutdown is final. */
#include <stdlib.h>

#include "ruda/ruda.h"
#include "test.h"

static void noop(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

TEST(calls_after_shutdown_report_unavailable) {
  ruda_client_t *c = NULL;
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ASSERT_OK(ruda_client_create(cpu, &c));
  uint32_t v[16] = {1, 2, 3};
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, v, sizeof v, &h));
  ruda_kernel_desc_t d = {.name = "noop", .ruda_dim = {1, 1, 1}, .code = &(ruda_kernel_code_t){RUDA_KERNEL_FORMAT_CPU, .cpu_fn = noop}, .num_code = 1};
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ASSERT_OK(ruda_client_sync(c));

  ruda_shutdown();
  ruda_shutdown(); /* twice is fine */

  uint32_t out[16];
  ASSERT_ERR_KIND(ruda_client_read(c, &h, out, sizeof out), RUDA_ERR_UNAVAILABLE);
  ASSERT_ERR_KIND(ruda_client_sync(c), RUDA_ERR_UNAVAILABLE);
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL)); /* dropped */
  ASSERT_OK(ruda_client_write(c, &h, v, sizeof v));                      /* dropped */
  ASSERT_ERR_KIND(ruda_client_flush(c), RUDA_ERR_UNAVAILABLE);
  ruda_client_t *again = NULL;
  ASSERT_ERR_KIND(ruda_client_create(cpu, &again), RUDA_ERR_UNAVAILABLE);
  ASSERT_NULL(again);

  ruda_handle_release(&h);
  ruda_kernel_release(k);
  ruda_client_release(c);
}
