/* The host's caches, as the CPU backend reports them in its device
 * properties (cache_l1, cache_l2, cache_l3).
 *
 * Sizes are those of one cache of each level as seen by the first CPU the
 * process may run on (its L3 slice, not the sum over sockets), read from
 * hwloc when ruda was built with it, else from Linux's sysfs
 * (/sys/devices/system/cpu/cpuN/cache/index*). sysconf()'s cache values
 * are not used: glibc derives them from CPUID, which virtual machines
 * often report wrongly (an L3 of 320 MiB where there are 32 MiB). */
#ifndef RUDA_CPU_TOPOLOGY_H
#define RUDA_CPU_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ruda__cpu_cache {
  uint64_t size;        /* bytes; 0 when unknown */
  uint32_t shared_cpus; /* logical CPUs sharing this cache; 0 when unknown */
} ruda__cpu_cache_t;

typedef struct ruda__cpu_caches {
  ruda__cpu_cache_t level[3]; /* L1 data, L2, L3 */
  const char *source;         /* "hwloc", "sysfs" or "none" (static text) */
} ruda__cpu_caches_t;

/* The caches of logical CPU `cpu` under `root` (normally
 * "/sys/devices/system/cpu"; tests pass a tree of their own): every
 * cpu<cpu>/cache/index<i>/ with a `level` of 1 to 3 and a `type` other than
 * Instruction gives that level's `size` ("32K", "1024K", "2M"...) and the
 * number of CPUs in `shared_cpu_list` ("0-3,8-11"). Unreadable or malformed
 * entries are left out. Returns false when no level could be read (then
 * *out is all zero). Thread-safe. */
bool ruda__cpu_caches_from_sysfs(const char *root, uint32_t cpu, ruda__cpu_caches_t *out);

/* The same from hwloc for the first CPU of the process's binding. Returns
 * false when ruda was built without hwloc or hwloc fails. Thread-safe. */
bool ruda__cpu_caches_from_hwloc(ruda__cpu_caches_t *out);

/* hwloc, else sysfs for the first CPU the process may run on, else zeros
 * with source "none". Computed once per process; thread-safe. */
const ruda__cpu_caches_t *ruda__cpu_caches(void);

/* The number of CPUs in a Linux CPU list ("0-3,8,10-11" is 7); 0 for an
 * empty or malformed list. */
uint32_t ruda__cpu_list_count(const char *list);

#endif
