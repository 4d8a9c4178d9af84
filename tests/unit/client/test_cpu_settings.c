/* The CPU backend takes its settings from the configuration: the number of
 * devices (RUDA_CPU_DEVICES) and the per-stream memory limit
 * (RUDA_CPU_MEMORY_LIMIT, with units) are honoured, not silently dropped.
 * Its own program: the configuration is read once per process. */
#include <stdlib.h>

#include "ruda/ruda.h"
#include "test.h"

TEST(devices_and_memory_limit_come_from_the_configuration) {
  setenv("RUDA_CPU_DEVICES", "2", 1);
  setenv("RUDA_CPU_MEMORY_LIMIT", "1MiB", 1);
  setenv("RUDA_CPU_SPIN", "0", 1);
  const ruda_config_t *cfg = ruda_config_get();
  ASSERT_EQ(cfg->cpu.devices, 2);
  ASSERT_UEQ(cfg->cpu.memory_limit, 1u << 20);
  ASSERT_UEQ(cfg->cpu.spin, 0);
  uint32_t n = 0;
  ASSERT_OK(ruda_device_count(RUDA_DEVICE_TYPE_CPU, &n));
  ASSERT_EQ(n, 2);
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 1}, &c));
  ruda_client_t *none = NULL;
  ASSERT_ERR_KIND(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 2}, &none),
                  RUDA_ERR_INVALID_ARGUMENT);
  /* 8 MiB on a stream limited to 1 MiB: refused, reported on the stream,
   * and the stream is usable afterwards. */
  ruda_handle_t big;
  ASSERT_OK(ruda_client_empty(c, 8u << 20, &big));
  ruda_status_t s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  bool memory_error = ruda_status_find(s, RUDA_ERR_IO_OUT_OF_MEMORY) ||
                      ruda_status_find(s, RUDA_ERR_IO_BUFFER_TOO_BIG);
  if (!memory_error) {
    char *text = ruda_status_to_string(s);
    fprintf(stderr, "%s\n", text);
    free(text);
  }
  ruda_status_free(s);
  ASSERT_TRUE(memory_error);
  ruda_handle_release(&big);
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_release(c);
  unsetenv("RUDA_CPU_DEVICES");
  unsetenv("RUDA_CPU_MEMORY_LIMIT");
  unsetenv("RUDA_CPU_SPIN");
}
