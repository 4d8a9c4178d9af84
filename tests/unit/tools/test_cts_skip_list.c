/* The conformance suite's skip list as a backend declares it: a backend's
 * backend.cmake names RUDA_BACKEND_CTS_UNSUPPORTED, which its run receives
 * as RUDA_CTS_UNSUPPORTED ("feature=why|feature=why"); cts_require() skips
 * the tests needing those features with the reason, and runs the others.
 * Runs a program of the suite on cpu:0 with such a list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

static int run_suite(const char *env, char *out, size_t cap) {
  char path[1024], cmd[4096];
  snprintf(path, sizeof path, "%s/tests/cts_test_cts_memory_io", RUDA_TEST_BINARY_DIR);
  if (access(path, X_OK) != 0) SKIP("the conformance programs are not built");
  snprintf(cmd, sizeof cmd, "env -u RUDA_CTS_DEVICE %s '%s' 2>&1", env, path);
  return rt_run_command(cmd, out, cap);
}

static char g_out[1 << 17];

TEST(a_declared_feature_is_skipped_with_its_reason) {
  int code = run_suite(
      "RUDA_CTS_UNSUPPORTED='staging=not here|arbitrary_strides=declared by the test backend'",
      g_out, sizeof g_out);
  if (code != 0) rt_fail_msg(__FILE__, __LINE__, "output:\n%s", g_out);
  ASSERT_EQ(code, 0);
  ASSERT_STR_CONTAINS(g_out, "SKIP transposed_read: declared by the test backend");
  /* The other tests ran. */
  ASSERT_STR_CONTAINS(g_out, "PASS ");
}

TEST(without_a_list_the_feature_runs) {
  int code = run_suite("", g_out, sizeof g_out);
  if (code != 0) rt_fail_msg(__FILE__, __LINE__, "output:\n%s", g_out);
  ASSERT_EQ(code, 0);
  ASSERT_STR_CONTAINS(g_out, "PASS transposed_read");
  /* A feature named only as a prefix of another does not match. */
  code = run_suite("RUDA_CTS_UNSUPPORTED='arbitrary=no|strides=no'", g_out, sizeof g_out);
  ASSERT_EQ(code, 0);
  ASSERT_STR_CONTAINS(g_out, "PASS transposed_read");
}
