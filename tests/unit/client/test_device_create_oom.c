/* A failed allocation while the first client of a device is created is an
 * error that says what failed, and it is not remembered: the next
 * ruda_client_create tries again and the device then works. Fails the Nth
 * allocation for N = 0, 1, 2... until creation succeeds. Its own program:
 * the device must not exist before the loop. */
#include <stdlib.h>

#include "base/alloc.h"
#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

TEST(failed_first_create_is_reported_and_not_cached) {
  /* The configuration is read once per process; read it before injecting
   * so that the loop exercises the device's creation. */
  (void)ruda_config_get();
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *c = NULL;
  int failures = 0;
  for (int64_t n = 0; n < 100000 && !c; n++) {
    ruda__test_fail_alloc_after(n);
    ruda_status_t s = ruda_client_create(cpu, &c);
    uint64_t failed = ruda__test_failed_allocs();
    ruda__test_fail_alloc_after(-1);
    if (!s) {
      ASSERT_NOT_NULL(c);
      break;
    }
    ASSERT_NULL(c);
    ASSERT_UGT(failed, 0);
    failures++;
    char *text = ruda_status_to_string(s);
    ASSERT_NOT_NULL(text);
    if (strstr(text, "No reason provided") || !strstr(text, "out of host memory")) {
      fprintf(stderr, "failing allocation %lld gave:\n%s\n", (long long)n, text);
    }
    ASSERT_TRUE(strstr(text, "No reason provided") == NULL);
    ASSERT_STR_CONTAINS(text, "out of host memory");
    free(text);
    ruda_status_free(s);
  }
  ASSERT_NOT_NULL(c);
  /* At least one allocation of the creation was failed and reported. */
  ASSERT_GT(failures, 0);

  /* The device works as if nothing had happened. */
  test_cpu_plus_one_round_trip(c, 8);
  /* A second client shares the device. */
  ruda_client_t *c2 = NULL;
  ASSERT_OK(ruda_client_create(cpu, &c2));
  ASSERT_OK(ruda_client_sync(c2));
  ruda_client_release(c2);
  ruda_client_release(c);
}
