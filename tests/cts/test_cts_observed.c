/* Conformance: observing never changes which call reports an error. This
 * program runs with profiling at "basic" (every launch is measured), a
 * timeline trace and every log channel on, set before the first client
 * (the configuration is read once per process). Each test checks that
 * errors reach the same calls as without observation: a good launch
 * returns OK even when an earlier error is queued, and the stream's next
 * sync reports every error exactly once. */
#include <stdio.h>
#include <unistd.h>

#include "cts.h"

static char g_dir[1024];

__attribute__((constructor)) static void observe_everything(void) {
  const char *tmp = getenv("RUDA_TEST_TMP");
  snprintf(g_dir, sizeof g_dir, "%s", tmp && *tmp ? tmp : "/tmp");
  char path[1200];
  snprintf(path, sizeof path, "basic:%s/observed-%d-profiling.log", g_dir, (int)getpid());
  setenv("RUDA_LOG_PROFILING", path, 1);
  snprintf(path, sizeof path, "full:%s/observed-%d.log", g_dir, (int)getpid());
  setenv("RUDA_LOG_STREAMING", path, 1);
  setenv("RUDA_LOG_MEMORY", path, 1);
  setenv("RUDA_LOG_COMPILATION", path, 1);
  snprintf(path, sizeof path, "%s/observed-%d-trace.json", g_dir, (int)getpid());
  setenv("RUDA_TRACE", path, 1);
}

/* Fails on the stream, never at the call. */
static ruda_kernel_t *failing_kernel(ruda_client_t *c) {
  (void)c;
  return cts_kernel_unrunnable();
}

static void expect_errors(ruda_status_t s, size_t n, ruda_error_kind_t kind) {
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_UNHEALTHY);
  ASSERT_UEQ(ruda_status_error_count(s), n);
  for (size_t i = 0; i < n; i++) ASSERT_NOT_NULL(ruda_status_find(ruda_status_error_at(s, i), kind));
  ruda_status_free(s);
}

/* Launches fill_u32 over `h` (n elements) with `value`. */
static ruda_status_t fill(ruda_client_t *c, ruda_handle_t *h, uint32_t n, uint32_t value) {
  return cts_fill_u32(c, h, n, value, ruda_count_static(n / CTS_UNITS, 1, 1));
}

TEST(a_good_launch_never_returns_an_earlier_error) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *bad = failing_kernel(c);
  /* The failing launch itself returns OK, as without profiling. */
  ASSERT_OK(ruda_client_launch(c, bad, ruda_count_static(1, 1, 1), NULL));
  ruda_handle_t h = cts_empty(c, CTS_UNITS * 4);
  ASSERT_OK(fill(c, &h, CTS_UNITS, 5));
  ASSERT_OK(fill(c, &h, CTS_UNITS, 6));
  /* The next sync reports it, exactly once; the good work ran. */
  expect_errors(ruda_client_sync(c), 1, RUDA_ERR_LAUNCH_COMPILATION);
  ASSERT_OK(ruda_client_sync(c));
  uint32_t v[CTS_UNITS];
  ASSERT_OK(ruda_client_read(c, &h, v, sizeof v));
  ASSERT_UEQ(v[CTS_UNITS - 1], 6);
  ruda_handle_release(&h);
  ruda_kernel_release(bad);
  ruda_client_release(c);
}

TEST(an_allocation_failure_is_reported_by_the_next_read_only) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t big, h;
  cts_empty_unallocatable(c, &big);
  uint32_t init[CTS_UNITS] = {0};
  ASSERT_OK(ruda_client_create_buffer(c, init, sizeof init, &h));
  ASSERT_OK(fill(c, &h, CTS_UNITS, 7));
  /* The read drains the stream: the allocation failure, once. */
  uint32_t v[CTS_UNITS];
  ruda_status_t s = ruda_client_read(c, &h, v, sizeof v);
  ASSERT_NOT_NULL(s);
  ASSERT_UEQ(ruda_status_error_count(s), 1);
  ASSERT_TRUE(ruda_status_find(s, RUDA_ERR_IO_BUFFER_TOO_BIG) ||
              ruda_status_find(s, RUDA_ERR_IO_OUT_OF_MEMORY));
  ruda_status_free(s);
  ASSERT_OK(ruda_client_read(c, &h, v, sizeof v));
  ASSERT_UEQ(v[0], 7);
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&big);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

TEST(a_kernel_failure_reaches_its_sync_under_profiling) {
  cts_require("cpu_kernel_fail");
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *k = cts_kernel_fail();
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(4, 1, 1), NULL));
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL)); /* ruda 0 only: fine */
  ruda_status_t s = ruda_client_sync(c);
  cts_expect_error(s, RUDA_ERR_LAUNCH_UNKNOWN, "ruda 1 saw a bad value");
  ASSERT_UEQ(ruda_status_error_count(s), 1);
  ruda_status_free(s);
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_release(k);
  ruda_client_release(c);
}

TEST(explicit_profiles_inside_observation_leave_errors_queued) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *bad = failing_kernel(c);
  ruda_profiling_token_t t;
  ruda_profile_duration_t d;
  ASSERT_OK(ruda_client_profile_start(c, &t));
  ASSERT_OK(ruda_client_launch(c, bad, ruda_count_static(1, 1, 1), NULL));
  ruda_status_t s = ruda_client_profile_end(c, t, &d);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_family(s), RUDA_FAMILY_PROFILE);
  ruda_status_free(s);
  expect_errors(ruda_client_flush(c), 1, RUDA_ERR_LAUNCH_COMPILATION);
  ASSERT_OK(ruda_client_flush(c));
  ruda_kernel_release(bad);
  ruda_client_release(c);
}

/* Each thread (its own stream) mixes good and failing launches and checks
 * that every sync reports exactly its own failures. */
static int stress_thread(int id) {
  int wrong = 0;
  ruda_client_t *c = cts_client();
  ruda_kernel_t *bad = failing_kernel(c);
  ruda_handle_t h;
  ruda_status_t e = ruda_client_empty(c, CTS_UNITS * 4, &h);
  if (e) {
    ruda_status_free(e);
    ruda_kernel_release(bad);
    return 1;
  }
  for (int round = 0; round < 20; round++) {
    int n = (round * 7 + id) % 3;
    for (int k = 0; k < 3; k++) {
      ruda_status_t s = k < n ? ruda_client_launch(c, bad, ruda_count_static(1, 1, 1), NULL)
                              : fill(c, &h, CTS_UNITS, (uint32_t)round);
      if (s) {
        ruda_status_free(s);
        wrong++;
      }
    }
    ruda_status_t s = ruda_client_sync(c);
    if ((s ? ruda_status_error_count(s) : 0) != (size_t)n) wrong++;
    ruda_status_free(s);
  }
  ruda_handle_release(&h);
  ruda_kernel_release(bad);
  return wrong;
}

TEST(threads_with_profiling_tracing_and_logging_get_their_own_errors) {
  cts_on_threads(4, stress_thread);
}

TEST(observation_was_on) {
  /* The profiling log got the summary of the measured launches. */
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t h = cts_empty(c, CTS_UNITS * 4);
  ASSERT_OK(fill(c, &h, CTS_UNITS, 1));
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&h);
  ruda_client_release(c);
  char path[1200];
  snprintf(path, sizeof path, "%s/observed-%d-profiling.log", g_dir, (int)getpid());
  FILE *f = fopen(path, "r");
  ASSERT_NOT_NULL(f);
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  ASSERT_STR_CONTAINS(buf, "fill_u32");
}
