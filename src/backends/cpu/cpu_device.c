#include "backends/cpu/cpu_device.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ruda/config.h"

/* ruda's CPU limits. A CPU kernel loops over its units itself, so these are
 * conventions that keep kernels portable to GPUs, not hardware limits. */
enum {
  CPU_MAX_UNITS = 1024,
  CPU_MAX_DIM_XY = 1024,
  CPU_MAX_DIM_Z = 64,
  CPU_MAX_BINDINGS = 1024,
  CPU_ALIGNMENT = 64, /* a cache line: vector loads never straddle two */
};
#define CPU_MAX_SHARED (1u << 20) /* per ruda; a private block in L2 */

static uint32_t online_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return (uint32_t)n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
}

static uint64_t read_u64_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[64] = {0};
  uint64_t v = 0;
  if (fgets(buf, sizeof buf, f)) {
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(buf, &end, 10);
    if (!errno && end != buf) v = x;
  }
  fclose(f);
  return v;
}

static uint64_t total_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (1ull << 30);
  uint64_t cg = read_u64_file("/sys/fs/cgroup/memory.max");
  if (cg && cg < total) total = cg;
  return total;
}

static void model_name(char *out, size_t cap) {
  snprintf(out, cap, "CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) break;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    size_t n = strcspn(colon, "\n");
    if (n >= cap) n = cap - 1;
    memcpy(out, colon, n);
    out[n] = 0;
    break;
  }
  fclose(f);
}

static uint64_t cache_size(int name) {
#ifdef _SC_LEVEL1_DCACHE_SIZE
  long v = sysconf(name);
  return v > 0 ? (uint64_t)v : 0;
#else
  (void)name;
  return 0;
#endif
}

void ruda__cpu_device_properties(ruda_device_properties_t *p) {
  memset(p, 0, sizeof *p);
  model_name(p->name, sizeof p->name);
  uint64_t mem = total_memory();
  p->features = RUDA_FEATURE_F64 | RUDA_FEATURE_DYNAMIC_COUNT | RUDA_FEATURE_SHARED_MEMORY;
  p->memory.alignment = CPU_ALIGNMENT;
  p->memory.max_page_size = mem / CPU_ALIGNMENT * CPU_ALIGNMENT;
  ruda_hardware_properties_t *h = &p->hardware;
  h->load_width = 512;
  h->plane_size_min = 1;
  h->plane_size_max = 1;
  h->max_bindings = CPU_MAX_BINDINGS;
  h->max_shared_memory_size = CPU_MAX_SHARED;
  h->max_ruda_count[0] = h->max_ruda_count[1] = h->max_ruda_count[2] = UINT32_MAX;
  h->max_units_per_ruda = CPU_MAX_UNITS;
  h->max_ruda_dim[0] = CPU_MAX_DIM_XY;
  h->max_ruda_dim[1] = CPU_MAX_DIM_XY;
  h->max_ruda_dim[2] = CPU_MAX_DIM_Z;
  h->num_cpu_cores = online_cores();
  h->max_vector_size = UINT32_MAX;
  h->total_memory = mem;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  h->cache_l1 = cache_size(_SC_LEVEL1_DCACHE_SIZE);
  h->cache_l2 = cache_size(_SC_LEVEL2_CACHE_SIZE);
  h->cache_l3 = cache_size(_SC_LEVEL3_CACHE_SIZE);
#endif
  p->timing_method = RUDA_TIMING_DEVICE;
}

static ruda__cpu_settings_t settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static uint32_t env_u32(const char *name, uint32_t fallback, uint32_t lo, uint32_t hi) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  char *end = NULL;
  errno = 0;
  unsigned long x = strtoul(v, &end, 10);
  if (errno || *end || x < lo || x > hi) return fallback;
  return (uint32_t)x;
}

static void load_settings(void) {
  const ruda_config_t *cfg = ruda_config_get();
  uint32_t cores = online_cores();
  settings.devices = env_u32("RUDA_CPU_DEVICES", 1, 1, 64);
  settings.threads = cfg->cpu.threads ? cfg->cpu.threads : cores;
  /* Spinning helpers pay off only when they do not take the core of the
   * thread they wait for: with two cores or fewer they sleep at once. */
  settings.spin = env_u32("RUDA_CPU_SPIN", cores > 2 ? 20000 : 0, 0, 100000000);
}

const ruda__cpu_settings_t *ruda__cpu_settings(void) {
  pthread_once(&settings_once, load_settings);
  return &settings;
}
