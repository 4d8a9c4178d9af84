/* The rendezvous registry (src/comm/rendezvous.c) allocates through
 * base/alloc.h: when memory runs out, creating a communicator's rendezvous
 * is an error that says so, nothing half-made is registered, and the same
 * id works once memory is back. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "comm/rendezvous.h"
#include "ruda/ruda.h"
#include "test.h"

TEST(no_memory_for_a_rendezvous_is_an_error_and_not_cached) {
  const uint64_t id = 0x5eed0f00dull;
  ruda_device_id_t ids[2] = {{RUDA_DEVICE_TYPE_CPU, 0}, {RUDA_DEVICE_TYPE_CPU, 1}};
  ruda__rendezvous_t *rv = (ruda__rendezvous_t *)ids; /* anything but NULL */
  ruda__test_fail_alloc_after(0);
  ruda_status_t s = ruda__rendezvous_get(id, 2, ids, &rv);
  uint64_t injected = ruda__test_failed_allocs();
  ruda__test_fail_alloc_after(-1);
  ASSERT_UGE(injected, 1);
  ASSERT_NULL(rv);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_GENERIC);
  char text[256];
  ruda_status_format(s, text, sizeof text);
  ruda_status_free(s);
  /* The status itself may have been the preallocated fallback; when it
   * was made, it says what failed. */
  if (strstr(text, "communicator")) ASSERT_STR_CONTAINS(text, "out of host memory");

  ASSERT_OK(ruda__rendezvous_get(id, 2, ids, &rv));
  ASSERT_NOT_NULL(rv);
  ruda__rendezvous_t *again = NULL;
  ASSERT_OK(ruda__rendezvous_get(id, 2, ids, &again));
  ASSERT_PTR_EQ(again, rv);
  /* A size that differs from the registered one is refused. */
  ASSERT_ERR_KIND(ruda__rendezvous_get(id, 3, NULL, &again), RUDA_ERR_SERVER_GENERIC);
}
