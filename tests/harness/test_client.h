/* Clients for the tests: one of cpu:0, and the checks of what a client's
 * memory holds. */
#ifndef RUDA_TEST_CLIENT_H
#define RUDA_TEST_CLIENT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

/* A new client of cpu:0 (the caller releases it); fails the test where it
 * cannot be made. */
static inline ruda_client_t *test_cpu_client(void) {
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &c));
  return c;
}

/* Asserts that `u` counts `allocs` allocations and `in_use` bytes in use. */
static inline void test_expect_usage(ruda_memory_usage_t u, uint64_t allocs, uint64_t in_use) {
  ASSERT_UEQ(u.number_allocs, allocs);
  ASSERT_UEQ(u.bytes_in_use, in_use);
}

/* The memory usage of `c`'s stream (ruda_client_memory_usage must succeed). */
static inline ruda_memory_usage_t test_client_usage(ruda_client_t *c) {
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  return u;
}

/* Asserts that `s` says a backend's library is unavailable: a reason that
 * names `library` and `what` it is, or, in a build without the backend's
 * headers, one that says so ("without the `headers` headers"); frees `s`. */
static inline void test_expect_library_absent(ruda_status_t s, const char *headers,
                                              const char *library, const char *what) {
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_UNAVAILABLE);
  char without[128];
  snprintf(without, sizeof without, "without the %s headers", headers);
  const char *r = ruda_status_reason(s);
  ASSERT_NOT_NULL(r);
  if (strstr(r, without) == NULL) {
    ASSERT_STR_CONTAINS(r, library);
    ASSERT_STR_CONTAINS(r, what);
  }
  ruda_status_free(s);
}

/* Asserts that the `n` bytes `c` reads from `h` are those of `want`. */
static inline void test_expect_read(ruda_client_t *c, const ruda_handle_t *h, const void *want,
                                    size_t n) {
  void *got = malloc(n ? n : 1);
  ASSERT_NOT_NULL(got);
  ruda_status_t s = ruda_client_read(c, h, got, n);
  bool same = !s && memcmp(got, want, n) == 0;
  free(got);
  ASSERT_OK(s);
  RT_CHECK_(same, "the %zu bytes read back differ from those written", n);
}

#endif
