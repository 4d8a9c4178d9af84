/* What the CPU backend knows about the machine, and its settings. */
#ifndef RUDA_CPU_DEVICE_H
#define RUDA_CPU_DEVICE_H

#include "memory/memory_manager.h"
#include "ruda/types.h"

/* Fills the properties of the host: model name, cores, memory (cgroup
 * limit respected), cache sizes (cpu_topology.h: hwloc or sysfs), and
 * ruda's CPU limits. */
void ruda__cpu_device_properties(ruda_device_properties_t *out);

typedef struct ruda__cpu_settings {
  uint32_t devices;     /* CPU devices exposed (config cpu.devices, default 1) */
  uint32_t threads;     /* participants per launch (config cpu.threads; 0: cores) */
  uint32_t spin;        /* polls before an idle pool thread sleeps */
  uint64_t memory_limit; /* bytes per stream's host storage; 0: none */
} ruda__cpu_settings_t;

/* The CPU backend's own settings, read once; thread-safe. The settings
 * every backend shares (memory, check mode, streams) come from the server
 * layer (ruda__server_utilities_t.settings). */
const ruda__cpu_settings_t *ruda__cpu_settings(void);

#endif
