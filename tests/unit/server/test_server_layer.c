/* The server layer around a backend: per-device settings built from the
 * configuration, the one launch validation (ruda__launch_validate), count
 * checks, and the device-wide usage. Driven with a fake backend server. */
#include <stdlib.h>
#include <string.h>

#include "server/launch_check.h"
#include "server/server.h"
#include "test.h"

/* ---- Settings ---- */

TEST(settings_follow_the_configuration) {
  ruda_config_t cfg;
  ruda_config_default(&cfg);
  ruda__device_settings_t s;
  ruda__device_settings_from_config(&cfg, &s);
  ASSERT_EQ(s.memory.persistent, RUDA_PERSISTENT_MEMORY_ENABLED);
  ASSERT_EQ(s.memory.configuration, RUDA_MEMORY_SUBSLICES);
  ASSERT_EQ(s.check_mode, RUDA_BOUNDS_AUTO);
  ASSERT_UEQ(s.max_streams, 128);
  ASSERT_EQ(s.priority, RUDA_STREAM_PRIORITY_DEFAULT);
  ASSERT_EQ(s.fp_contract, RUDA_FP_CONTRACT_FAST);
  ASSERT_STR_EQ(ruda__fp_contract_cc_option(s.fp_contract), "-ffp-contract=fast");
  ASSERT_STR_EQ(ruda__fp_contract_nvrtc_option(s.fp_contract), "--fmad=true");
  ASSERT_STR_EQ(ruda__fp_contract_opencl_option(s.fp_contract), "");
  /* The cache is on by default, in the user's cache directory. */
  char want[2048];
  ruda_config_cache_dir(&cfg, want, sizeof want);
  ASSERT_UGT(strlen(s.cache_dir), 0);
  ASSERT_STR_EQ(s.cache_dir, want);

  cfg.memory.persistent_memory = RUDA_PERSISTENT_MEMORY_DISABLED;
  cfg.compilation.check_mode = RUDA_BOUNDS_VALIDATE;
  cfg.streaming.max_streams = 7;
  cfg.streaming.priority = RUDA_STREAM_PRIORITY_HIGH;
  cfg.compilation.cache.location = RUDA_CACHE_LOCATION_NONE;
  ruda__device_settings_from_config(&cfg, &s);
  ASSERT_EQ(s.memory.persistent, RUDA_PERSISTENT_MEMORY_DISABLED);
  ASSERT_EQ(s.check_mode, RUDA_BOUNDS_VALIDATE);
  ASSERT_UEQ(s.max_streams, 7);
  ASSERT_EQ(s.priority, RUDA_STREAM_PRIORITY_HIGH);
  ASSERT_STR_EQ(s.cache_dir, "");
  cfg.compilation.fp_contract = RUDA_FP_CONTRACT_OFF;
  ruda__device_settings_from_config(&cfg, &s);
  ASSERT_EQ(s.fp_contract, RUDA_FP_CONTRACT_OFF);
  ASSERT_STR_EQ(ruda__fp_contract_cc_option(s.fp_contract), "-ffp-contract=off");
  ASSERT_STR_EQ(ruda__fp_contract_nvrtc_option(s.fp_contract), "--fmad=false");
  ASSERT_STR_EQ(ruda__fp_contract_opencl_option(s.fp_contract), "-DRUDA_KERNEL_FP_CONTRACT_OFF");

  cfg.memory.persistent_memory = RUDA_PERSISTENT_MEMORY_ENFORCED;
  cfg.compilation.cache.location = RUDA_CACHE_LOCATION_FILE;
  strcpy(cfg.compilation.cache.file, "/var/tmp/kernels");
  ruda__device_settings_from_config(&cfg, &s);
  ASSERT_EQ(s.memory.persistent, RUDA_PERSISTENT_MEMORY_ENFORCED);
  ASSERT_STR_EQ(s.cache_dir, "/var/tmp/kernels");
}

/* ---- A fake backend ---- */

typedef struct fake_server {
  ruda__server_t base;
} fake_server_t;

static ruda_memory_usage_t fake_usage(void *ctx, ruda__stream_t *st) {
  (void)ctx;
  ruda_memory_usage_t u = {1, st->id, 0, 2 * st->id};
  return u;
}

static const ruda__server_vtable_t fake_vt = {.name = "fake"};

static void fake_init(fake_server_t *f) {
  memset(f, 0, sizeof *f);
  ruda_device_properties_t props;
  memset(&props, 0, sizeof props);
  props.hardware.max_ruda_count[0] = props.hardware.max_ruda_count[1] =
      props.hardware.max_ruda_count[2] = UINT32_MAX;
  props.hardware.max_ruda_dim[0] = props.hardware.max_ruda_dim[1] = 1024;
  props.hardware.max_ruda_dim[2] = 64;
  props.hardware.max_units_per_ruda = 1024;
  props.hardware.max_shared_memory_size = 4096;
  ruda__layout_policy_t policy = {RUDA_LAYOUT_POLICY_CONTIGUOUS, 64};
  ruda__server_utilities_init(&f->base.utilities, &props, "fake", policy);
  f->base.vt = &fake_vt;
  ruda__stream_table_ops_t ops = {0, NULL, NULL, fake_usage, f};
  ASSERT_OK(ruda__server_streams_init(&f->base, &ops));
}

static void fake_deinit(fake_server_t *f) {
  ruda__stream_table_deinit(&f->base.streams);
  ruda__server_utilities_deinit(&f->base.utilities);
}

static void noop(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

static ruda_kernel_t *kernel(const char *name, uint32_t units, uint64_t shared) {
  ruda_kernel_code_t code = ruda_kernel_code_cpu(noop);
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.ruda_dim = ruda_dim_new_1d(units);
  d.shared_mem_bytes = shared;
  d.code = &code;
  d.num_code = 1;
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  if (s) ruda_status_free(s);
  return k;
}

TEST(one_validation_rejects_launches_that_cannot_run) {
  fake_server_t f;
  fake_init(&f);
  const ruda_device_properties_t *p = &f.base.utilities.properties;
  ruda_device_id_t dev = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_stream_id_t stream = {1128};
  ruda_kernel_t *k = kernel("wide", 64, 0);
  ruda_kernel_t *big = kernel("greedy", 1, 8192);
  ASSERT_NOT_NULL(k);
  ASSERT_NOT_NULL(big);
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  ruda_count_t ok = ruda_count_static(4, 1, 1);
  ruda_count_t wraps = ruda_count_static(1u << 22, 1u << 21, 1u << 21);
  ASSERT_OK(ruda__launch_validate(dev, p, stream, k, ok, &args));
  /* (2^22, 2^21, 2^21) = 2^64 rudas (the total wraps) are refused, and the
   * error names the kernel, the value, the limit and the stream. */
  ruda_status_t s = ruda__launch_validate(dev, p, stream, k, wraps, &args);
  ASSERT_NOT_NULL(s);
  char text[1024];
  ruda_status_format(s, text, sizeof text);
  ASSERT_STR_CONTAINS(text, "kernel 'wide'");
  ASSERT_STR_CONTAINS(text, "(4194304, 2097152, 2097152)");
  ASSERT_STR_CONTAINS(text, "18446744073709551615");
  ASSERT_STR_CONTAINS(text, "1128");
  ruda_status_free(s);
  s = ruda__launch_validate(dev, p, stream, big, ok, &args);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_RESOURCE_SHARED_MEMORY));
  ruda_status_free(s);
  /* A count promising an array that is not there. */
  args.num_buffers = 1;
  s = ruda__launch_validate(dev, p, stream, k, ok, &args);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ruda_status_free(s);
  ruda_kernel_release(k);
  ruda_kernel_release(big);
  fake_deinit(&f);
}

TEST(count_checks_name_the_kernel_limit_and_value) {
  ruda_device_properties_t p;
  memset(&p, 0, sizeof p);
  p.hardware.max_ruda_count[0] = 2147483647;
  p.hardware.max_ruda_count[1] = p.hardware.max_ruda_count[2] = 65535;
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "k";
  d.ruda_dim = ruda_dim_new_1d(256);
  ASSERT_OK(ruda__validate_count(&p, &d, (ruda_count3_t){2147483647, 65535, 65535}));
  ruda_status_t s = ruda__validate_count(&p, &d, (ruda_count3_t){1, 65536, 1});
  ASSERT_NOT_NULL(s);
  /* Over the device's limit: TooManyResources, as for dims and shared
   * memory, headed by what was exceeded. */
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES);
  ruda_status_t rc = ruda_status_cause(s);
  ASSERT_EQ(ruda_status_kind(rc), RUDA_ERR_RESOURCE_RUDA_COUNT);
  uint32_t req[3], max[3];
  ASSERT_TRUE(ruda_status_dims(rc, req, max));
  ASSERT_UEQ(req[1], 65536);
  ASSERT_UEQ(max[1], 65535);
  char text[512];
  ruda_status_format(s, text, sizeof text);
  ASSERT_STR_CONTAINS(text, "Too many resources were requested during launch\n"
                            "Ruda count exceeds the device's maximum.\n"
                            "Requested (1, 65536, 1), max is (2147483647, 65535, 65535).");
  ruda_status_free(s);
  /* Within every axis, more rudas in all than 64 bits count. */
  p.hardware.max_ruda_count[1] = p.hardware.max_ruda_count[2] = UINT32_MAX;
  p.hardware.max_ruda_count[0] = UINT32_MAX;
  ASSERT_OK(ruda__validate_count(&p, &d, (ruda_count3_t){UINT32_MAX, UINT32_MAX, 1}));
  s = ruda__validate_count(&p, &d, (ruda_count3_t){UINT32_MAX, UINT32_MAX, 2});
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "(4294967295, 4294967295, 2)");
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "18446744073709551615 rudas");
  ruda_status_free(s);
}

TEST(device_usage_sums_every_stream) {
  fake_server_t f;
  fake_init(&f);
  for (uint64_t id = 1; id <= 4; id++) ASSERT_NOT_NULL(ruda__stream_get(&f.base.streams, (ruda_stream_id_t){id}));
  ruda_memory_usage_t u;
  ASSERT_OK(ruda__server_memory_usage_device(&f.base, &u));
  ASSERT_UEQ(u.number_allocs, 4);
  ASSERT_UEQ(u.bytes_in_use, 10);
  ASSERT_UEQ(u.bytes_reserved, 20);
  fake_deinit(&f);
}
