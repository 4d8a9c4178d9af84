/* An ICD loader that finds no platform: OCL_ICD_VENDORS names an empty
 * folder, so the loader loads and clGetPlatformIDs finds no driver. The
 * OpenCL backend is then Unavailable, naming the loader, the call and the
 * folder it looked in; a client on opencl:0 fails the same way.
 *
 * A program of its own: the ICD loader reads OCL_ICD_VENDORS once per
 * process, on the first OpenCL call, so nothing may call OpenCL before
 * this test sets it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/opencl/opencl_internal.h"
#include "ruda/client.h"
#include "ruda/status.h"
#include "test.h"

TEST(no_platform_is_unavailable_naming_the_folder_looked_in) {
  char dir[600];
  snprintf(dir, sizeof dir, "%s/empty-vendors", rt_tmpdir());
  ASSERT_TRUE(mkdir(dir, 0700) == 0 || access(dir, F_OK) == 0);
  ASSERT_EQ(setenv("OCL_ICD_VENDORS", dir, 1), 0);
  /* Forget any earlier load result (nothing loaded yet in this program). */
  ruda__opencl_loader_test_override(NULL);

  uint32_t n = 99;
  ruda_status_t s = ruda_device_count(RUDA_DEVICE_TYPE_OPENCL, &n);
  if (s == NULL) {
    /* Some loaders (the one NVIDIA's driver ships) do not read
     * OCL_ICD_VENDORS: there is no way to hide the platforms from them. */
    static char why[256];
    snprintf(why, sizeof why,
             "this ICD loader ignores OCL_ICD_VENDORS (it found %u device%s anyway)", n,
             n == 1 ? "" : "s");
    SKIP(why);
  }
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_UNAVAILABLE);
  ASSERT_UEQ(n, 0);
  const char *r = ruda_status_reason(s);
  if (strstr(r, "without the OpenCL headers") || strstr(r, "could not be loaded")) {
    static char why[1024];
    snprintf(why, sizeof why, "no ICD loader to test with: %s", r);
    ruda_status_free(s);
    SKIP_UNAVAILABLE("opencl", why);
  }
  ASSERT_STR_CONTAINS(r, "found no platform");
  ASSERT_STR_CONTAINS(r, "libOpenCL");       /* the loader */
  ASSERT_STR_CONTAINS(r, "clGetPlatformIDs"); /* the call */
  ASSERT_STR_CONTAINS(r, dir);               /* where it looked */
  ASSERT_STR_CONTAINS(r, "OCL_ICD_VENDORS");
  ruda_status_free(s);

  ruda_client_t *c = NULL;
  ruda_device_id_t id = {RUDA_DEVICE_TYPE_OPENCL, 0};
  s = ruda_client_create(id, &c);
  ASSERT_NOT_NULL(s);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_UNAVAILABLE));
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "found no platform");
  free(text);
  ruda_status_free(s);
  ASSERT_NULL(c);
}
