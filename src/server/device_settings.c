/* Per-device settings built from the configuration (device_settings.h). */
#include "server/device_settings.h"

#include <pthread.h>
#include <string.h>

void ruda__device_settings_from_config(const ruda_config_t *cfg, ruda__device_settings_t *out) {
  memset(out, 0, sizeof *out);
  out->memory.configuration = RUDA_MEMORY_SUBSLICES;
  /* A value outside the enum counts as the default. */
  ruda_persistent_memory_t pm = cfg->memory.persistent_memory;
  out->memory.persistent = pm == RUDA_PERSISTENT_MEMORY_DISABLED || pm == RUDA_PERSISTENT_MEMORY_ENFORCED
                               ? pm
                               : RUDA_PERSISTENT_MEMORY_ENABLED;
  out->check_mode = cfg->compilation.check_mode;
  out->max_streams = cfg->streaming.max_streams ? cfg->streaming.max_streams : 128;
  out->priority = cfg->streaming.priority;
  out->fp_contract = cfg->compilation.fp_contract;
  size_t n = ruda_config_cache_dir(cfg, out->cache_dir, sizeof out->cache_dir);
  /* A directory whose path does not fit is no directory: the cache is off
   * rather than pointed at a truncated path. */
  if (n >= sizeof out->cache_dir) out->cache_dir[0] = '\0';
}

static ruda__device_settings_t g_settings;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void load(void) { ruda__device_settings_from_config(ruda_config_get(), &g_settings); }

const ruda__device_settings_t *ruda__device_settings(void) {
  pthread_once(&g_once, load);
  return &g_settings;
}

const char *ruda__fp_contract_cc_option(ruda_fp_contract_t mode) {
  return mode == RUDA_FP_CONTRACT_OFF ? "-ffp-contract=off" : "-ffp-contract=fast";
}

const char *ruda__fp_contract_nvrtc_option(ruda_fp_contract_t mode) {
  return mode == RUDA_FP_CONTRACT_OFF ? "--fmad=false" : "--fmad=true";
}

const char *ruda__fp_contract_opencl_option(ruda_fp_contract_t mode) {
  return mode == RUDA_FP_CONTRACT_OFF ? "-DRUDA_KERNEL_FP_CONTRACT_OFF" : "";
}
