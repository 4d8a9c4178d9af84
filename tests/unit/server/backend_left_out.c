/* A ruda built without some backends: this program links every layer with
 * a backend list of the CPU backend only (tests/CMakeLists.txt generates it
 * from src/server/backend_list.c.in, the template of the library's own
 * list), as a build that leaves the CUDA and OpenCL backends out would.
 *
 *   - a device type ruda knows but this build left out (opencl, cuda) is
 *     RUDA_ERR_UNAVAILABLE, with a text that says the backend is not built
 *     in, from ruda_client_create, ruda_device_properties and
 *     ruda_device_count alike; its names still parse;
 *   - a type no ruda build knows (999) is RUDA_ERR_INVALID_ARGUMENT from
 *     ruda_client_create and ruda_device_properties (a request for one
 *     device that cannot exist), and
 *     RUDA_ERR_UNAVAILABLE with count 0 from ruda_device_count (the probe
 *     of what can run here answers "none" for every type it cannot run;
 *     include/ruda/client.h documents both);
 *   - the backends that are built in work as usual.
 * Its name does not start with test_, so the glob of tests/CMakeLists.txt
 * leaves it to its own target (unit_backend_left_out). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "server/server.h"
#include "test.h"
#include "test_kernel.h"

static void expect_not_built(ruda_status_t s, const char *name) {
  char want[128];
  snprintf(want, sizeof want, "the %s backend is not built into this ruda library", name);
  ASSERT_ERR_TEXT(s, RUDA_ERR_UNAVAILABLE, want);
}

TEST(this_program_has_the_cpu_backend_only) {
  ASSERT_NOT_NULL(ruda__backend_list[0]);
  ASSERT_STR_EQ(ruda__backend_list[0]->name, "cpu");
  ASSERT_NULL(ruda__backend_list[1]);
  ASSERT_NULL(ruda__backend_for(RUDA_DEVICE_TYPE_OPENCL));
  ASSERT_NULL(ruda__backend_for(RUDA_DEVICE_TYPE_CUDA));
  ASSERT_NULL(ruda__backend_named("opencl", 6));
}

TEST(a_type_left_out_is_unavailable_because_it_is_not_built_in) {
  static const struct {
    uint16_t type;
    const char *name;
  } left_out[] = {{RUDA_DEVICE_TYPE_OPENCL, "opencl"}, {RUDA_DEVICE_TYPE_CUDA, "cuda"}};
  for (size_t i = 0; i < sizeof left_out / sizeof left_out[0]; i++) {
    ruda_device_id_t id = {left_out[i].type, 0};
    ruda_client_t *c = (ruda_client_t *)&id; /* anything but NULL */
    expect_not_built(ruda_client_create(id, &c), left_out[i].name);
    ASSERT_NULL(c);
    ruda_device_id_t other = {left_out[i].type, 3};
    expect_not_built(ruda_client_create(other, &c), left_out[i].name);
    ruda_device_properties_t props;
    expect_not_built(ruda_device_properties(id, &props), left_out[i].name);
    uint32_t count = 7;
    expect_not_built(ruda_device_count(left_out[i].type, &count), left_out[i].name);
    ASSERT_UEQ(count, 0);
    /* Its names are still ruda's: they parse and print. */
    ruda_device_id_t parsed;
    char text[32];
    snprintf(text, sizeof text, "%s:2", left_out[i].name);
    ASSERT_OK(ruda_device_parse(text, &parsed));
    ASSERT_UEQ(parsed.type_id, left_out[i].type);
    ASSERT_UEQ(parsed.index_id, 2);
    ASSERT_STR_EQ(ruda_device_type_name(left_out[i].type), left_out[i].name);
  }
}

TEST(an_unknown_type_is_invalid_to_create_and_counts_no_device) {
  ruda_device_id_t unknown = {999, 0};
  ruda_client_t *c = NULL;
  ASSERT_ERR_TEXT(ruda_client_create(unknown, &c), RUDA_ERR_INVALID_ARGUMENT,
                  "unknown device type 999");
  ASSERT_NULL(c);
  ruda_device_properties_t props;
  ASSERT_ERR_KIND(ruda_device_properties(unknown, &props), RUDA_ERR_INVALID_ARGUMENT);
  uint32_t count = 7;
  ruda_status_t s = ruda_device_count(999, &count);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_UNAVAILABLE);
  char text[512];
  ruda_status_format(s, text, sizeof text);
  ASSERT_STR_CONTAINS(text, "no backend for device type 999");
  ASSERT_TRUE(strstr(text, "not built") == NULL);
  ruda_status_free(s);
  ASSERT_UEQ(count, 0);
  ASSERT_NULL(ruda_device_type_name(999));
}

TEST(the_backend_that_is_built_in_works) {
  uint32_t n = 0;
  ASSERT_OK(ruda_device_count(RUDA_DEVICE_TYPE_CPU, &n));
  ASSERT_UGE(n, 1);
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &c));
  test_cpu_plus_one_round_trip(c, 4);
  ruda_client_release(c);
}
