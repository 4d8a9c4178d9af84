/* The `ruda` command's shared helpers (tools/tools_common.c), linked into
 * this program on their own (ruda_tools_common, tools/parts.cmake): they
 * stand below the subcommands and the dispatcher (tools/ruda.c) and need
 * neither, so arrows in tools/ point one way. */
#include "tools_common.h"

#include "ruda/client.h"
#include "test.h"

TEST(is_help_takes_the_two_spellings_only) {
  ASSERT_TRUE(ruda_tools_is_help("-h"));
  ASSERT_TRUE(ruda_tools_is_help("--help"));
  ASSERT_FALSE(ruda_tools_is_help("-help"));
  ASSERT_FALSE(ruda_tools_is_help("help"));
  ASSERT_FALSE(ruda_tools_is_help(""));
}

TEST(open_device_returns_the_documented_exit_codes) {
  ruda_client_t *c = (ruda_client_t *)&c;
  ASSERT_EQ(ruda_tools_open_device("potato", &c), RUDA_EXIT_USAGE);
  ASSERT_NULL(c);
  ASSERT_EQ(ruda_tools_open_device("cpu:9", &c), RUDA_EXIT_UNAVAILABLE);
  ASSERT_NULL(c);
  ASSERT_EQ(ruda_tools_open_device("cpu", &c), RUDA_EXIT_OK);
  ASSERT_NOT_NULL(c);
  ASSERT_UEQ(ruda_client_device(c).type_id, RUDA_DEVICE_TYPE_CPU);
  ruda_client_release(c);
}
