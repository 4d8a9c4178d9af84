/* The CI guard: without an OpenCL device the conformance suite on opencl:0
 * and the OpenCL unit tests skip (exit 77), unless RUDA_REQUIRE_DEVICE names
 * opencl, which turns "device unavailable" into a failure (.ci/run sets it,
 * so a broken PoCL cannot pass as a skip). Runs those test programs of the
 * build tree with the loader pointed at a file that does not exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

typedef struct child {
  int code;
  char out[65536];
} child_t;

/* Runs the test program `name` of the build tree with `env` (assignments)
 * in front, RUDA_REQUIRE_DEVICE removed from what this test inherited. */
static void run_child(const char *name, const char *env, child_t *r) {
  char path[1024], cmd[4096];
  snprintf(path, sizeof path, "%s/tests/%s", RUDA_TEST_BINARY_DIR, name);
  if (access(path, X_OK) != 0) SKIP("the test programs are not built");
  snprintf(cmd, sizeof cmd,
           "env -u RUDA_REQUIRE_DEVICE RUDA_OPENCL_LIBRARY=/nonexistent/libruda-no-OpenCL.so.1 "
           "%s '%s' 2>&1",
           env, path);
  r->code = rt_run_command(cmd, r->out, sizeof r->out);
}

static child_t g_child;

TEST(the_suite_on_an_absent_opencl_device_skips_by_default) {
  run_child("cts_test_cts_settings", "RUDA_CTS_DEVICE=opencl:0", &g_child);
  if (g_child.code != 77) rt_fail_msg(__FILE__, __LINE__, "output:\n%s", g_child.out);
  ASSERT_EQ(g_child.code, 77);
  ASSERT_STR_CONTAINS(g_child.out, "SKIP");
  ASSERT_STR_CONTAINS(g_child.out, "libruda-no-OpenCL.so.1");
  /* Requiring another backend changes nothing. */
  run_child("cts_test_cts_settings", "RUDA_CTS_DEVICE=opencl:0 RUDA_REQUIRE_DEVICE=cuda",
            &g_child);
  ASSERT_EQ(g_child.code, 77);
}

TEST(the_suite_on_an_absent_opencl_device_fails_when_required) {
  run_child("cts_test_cts_settings", "RUDA_CTS_DEVICE=opencl:0 RUDA_REQUIRE_DEVICE=opencl",
            &g_child);
  if (g_child.code != 1) rt_fail_msg(__FILE__, __LINE__, "output:\n%s", g_child.out);
  ASSERT_EQ(g_child.code, 1);
  ASSERT_STR_CONTAINS(g_child.out, "RUDA_REQUIRE_DEVICE=opencl requires it");
  ASSERT_STR_CONTAINS(g_child.out, "opencl:0");
  ASSERT_STR_CONTAINS(g_child.out, "libruda-no-OpenCL.so.1");
  ASSERT_NULL(strstr(g_child.out, "\nSKIP "));
  /* A list naming opencl among others, and a device name, count too. */
  run_child("cts_test_cts_settings",
            "RUDA_CTS_DEVICE=opencl:0 'RUDA_REQUIRE_DEVICE=cuda, opencl:0'", &g_child);
  ASSERT_EQ(g_child.code, 1);
}

TEST(the_opencl_unit_tests_fail_when_required) {
  run_child("unit_test_opencl_backend", "", &g_child);
  if (g_child.code != 77) rt_fail_msg(__FILE__, __LINE__, "output:\n%s", g_child.out);
  ASSERT_EQ(g_child.code, 77);
  run_child("unit_test_opencl_backend", "RUDA_REQUIRE_DEVICE=opencl", &g_child);
  if (g_child.code != 1) rt_fail_msg(__FILE__, __LINE__, "output:\n%s", g_child.out);
  ASSERT_EQ(g_child.code, 1);
  ASSERT_STR_CONTAINS(g_child.out, "RUDA_REQUIRE_DEVICE=opencl requires it");
}
