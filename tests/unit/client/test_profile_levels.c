/* Profiling level "basic": every launch is measured and the summary table
 * printed at sync lists each kernel with its count. Its own program because
 * the configuration is read once per process. */
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "server/profile_summary.h"
#include "test.h"

static char captured[8192];

static void capture(const char *text, void *ctx) {
  (void)ctx;
  strncat(captured, text, sizeof captured - strlen(captured) - 1);
}

static void noop(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

TEST(basic_level_summarises_launches_at_sync) {
  setenv("RUDA_LOG_PROFILING", "basic", 1);
  ruda__profile_summary_set_sink(capture, NULL);
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &c));
  ruda_kernel_desc_t d = {.name = "my_kernel", .ruda_dim = {1, 1, 1}, .code = &(ruda_kernel_code_t){RUDA_KERNEL_FORMAT_CPU, .cpu_fn = noop}, .num_code = 1};
  ruda_kernel_desc_t d2 = {.name = "other_kernel", .ruda_dim = {1, 1, 1}, .code = &(ruda_kernel_code_t){RUDA_KERNEL_FORMAT_CPU, .cpu_fn = noop}, .num_code = 1};
  ruda_kernel_t *k = NULL, *k2 = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ASSERT_OK(ruda_kernel_create(&d2, &k2));
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(4, 1, 1), NULL));
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(4, 1, 1), NULL));
  ASSERT_OK(ruda_client_launch(c, k2, ruda_count_static(1, 1, 1), NULL));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_STR_CONTAINS(captured, "my_kernel");
  ASSERT_STR_CONTAINS(captured, "other_kernel");
  /* The table was reset: a second sync prints nothing new about them. */
  size_t len = strlen(captured);
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_EQ(strstr(captured + len, "my_kernel") == NULL, 1);
  ruda_kernel_release(k);
  ruda_kernel_release(k2);
  ruda_client_release(c);
  ruda__profile_summary_set_sink(NULL, NULL);
}
