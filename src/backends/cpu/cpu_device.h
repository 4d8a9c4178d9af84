/* What the CPU backend knows about the machine, and its settings. */
#ifndef RUDA_CPU_DEVICE_H
#define RUDA_CPU_DEVICE_H

#include "memory/memory_manager.h"
#include "ruda/types.h"

/* Fills the properties of the host: model name, cores, memory (cgroup
 * limit respected), cache sizes, and ruda's CPU limits. */
void ruda__cpu_device_properties(ruda_device_properties_t *out);

typedef struct ruda__cpu_settings {
  uint32_t devices;     /* CPU devices exposed (RUDA_CPU_DEVICES, default 1) */
  uint32_t threads;     /* participants per launch (config cpu.threads; 0: cores) */
  uint32_t spin;        /* polls before an idle pool thread sleeps */
} ruda__cpu_settings_t;

/* The CPU backend's own settings, read once; thread-safe. The settings
 * every backend shares (memory, check mode, streams) come from the server
 * layer (ruda__server_utilities_t.settings). */
const ruda__cpu_settings_t *ruda__cpu_settings(void);

#endif
