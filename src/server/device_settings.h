/* Per-device settings: what a server needs from the configuration, built in
 * one place (the server layer) so that every backend honours the same
 * options the same way. A backend reads them from its utilities
 * (ruda__server_t.utilities.settings) and never reads the configuration
 * itself.
 *
 *   memory       the pool preset and persistent_memory (enabled, disabled,
 *                enforced) for the device's main memory managers
 *   check_mode   compilation.check_mode (what launch_unchecked runs as)
 *   max_streams  streaming.max_streams: stream states kept while idle
 *   priority     streaming.priority of the device streams a backend creates
 *   cache_dir    the compiled-kernel disk cache directory, "" when the cache
 *                is off (compilation.cache = "none")
 *   fp_contract  compilation.fp_contract: the compilers' contraction of
 *                a*b+c into a fused multiply-add, given to each compiler
 *                by the ruda__fp_contract_*_option() helpers below
 */
#ifndef RUDA_SERVER_DEVICE_SETTINGS_H
#define RUDA_SERVER_DEVICE_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "memory/memory_manager.h"
#include "ruda/config.h"
#include "ruda/types.h"

typedef struct ruda__device_settings {
  ruda__memory_config_t memory;
  ruda_bounds_check_mode_t check_mode;
  uint32_t max_streams;
  ruda_stream_priority_t priority;
  char cache_dir[RUDA_CONFIG_PATH_MAX];
  ruda_fp_contract_t fp_contract;
} ruda__device_settings_t;

/* The allocation mode a stream's main memory manager starts in (and that
 * an idle stream is expected to be in): Persistent when persistent memory
 * is enforced, Auto otherwise. */
static inline ruda_memory_allocation_mode_t ruda__device_settings_initial_mode(
    const ruda__device_settings_t *s) {
  return s->memory.persistent == RUDA_PERSISTENT_MEMORY_ENFORCED ? RUDA_ALLOCATION_PERSISTENT
                                                           : RUDA_ALLOCATION_AUTO;
}

/* The settings `cfg` gives a device. Pure apart from reading the
 * environment for the cache directory ($HOME, $XDG_CACHE_HOME); thread-safe. */
void ruda__device_settings_from_config(const ruda_config_t *cfg, ruda__device_settings_t *out);

/* The settings of devices of this process, from ruda_config_get(), built
 * once. Never NULL; thread-safe. */
const ruda__device_settings_t *ruda__device_settings(void);

/* compilation.fp_contract as each kernel compiler takes it. One policy for
 * every backend: with RUDA_FP_CONTRACT_OFF no compiler fuses a*b+c, so a
 * kernel gives the same bits everywhere. Each returns a static string;
 * pure, thread-safe. Any other value counts as RUDA_FP_CONTRACT_FAST.
 *   cc      a C compiler building kernel text at run time (GCC, Clang):
 *           "-ffp-contract=off" | "-ffp-contract=fast"
 *   nvrtc   NVRTC: "--fmad=false" | "--fmad=true"
 *   opencl  clBuildProgram of a portable kernel: "-DRUDA_KERNEL_FP_CONTRACT_OFF"
 *           (the prelude then sets `#pragma OPENCL FP_CONTRACT OFF`) | ""
 *           (FP_CONTRACT ON); never -cl-mad-enable */
const char *ruda__fp_contract_cc_option(ruda_fp_contract_t mode);
const char *ruda__fp_contract_nvrtc_option(ruda_fp_contract_t mode);
const char *ruda__fp_contract_opencl_option(ruda_fp_contract_t mode);

#endif /* RUDA_SERVER_DEVICE_SETTINGS_H */
