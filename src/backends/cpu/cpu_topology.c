/* The host's caches from hwloc or sysfs (see cpu_topology.h). */
#include "backends/cpu/cpu_topology.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RUDA_HAVE_HWLOC
#include <hwloc.h>
#endif

/* Reads the first line of `path` (without its newline) into buf. */
static bool read_line(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fgets(buf, (int)cap, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = '\0';
  return ok;
}

/* "32K", "1024K", "2M", "1G" or a plain byte count; 0 when malformed. */
static uint64_t parse_size(const char *s) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return 0;
  uint64_t shift = 0;
  switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: return 0;
  }
  if (*end && end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2])) return 0;
  if (shift && v > (UINT64_MAX >> shift)) return 0;
  return (uint64_t)v << shift;
}

uint32_t ruda__cpu_list_count(const char *list) {
  uint64_t n = 0;
  const char *p = list;
  while (*p) {
    char *end = NULL;
    errno = 0;
    unsigned long lo = strtoul(p, &end, 10);
    if (errno || end == p) return 0;
    unsigned long hi = lo;
    p = end;
    if (*p == '-') {
      const char *q = p + 1;
      hi = strtoul(q, &end, 10);
      if (errno || end == q || hi < lo) return 0;
      p = end;
    }
    n += (uint64_t)(hi - lo) + 1;
    if (n > UINT32_MAX) return 0;
    if (*p == ',') {
      p++;
      if (!*p) return 0;
    } else if (*p) {
      return 0;
    }
  }
  return (uint32_t)n;
}

bool ruda__cpu_caches_from_sysfs(const char *root, uint32_t cpu, ruda__cpu_caches_t *out) {
  memset(out, 0, sizeof *out);
  out->source = "none";
  bool any = false;
  char path[1024], line[512];
  /* Linux numbers the entries index0..indexN without gaps; stop at the
   * first missing one (a bound keeps a strange tree finite). */
  for (unsigned i = 0; i < 64; ++i) {
    int n = snprintf(path, sizeof path, "%s/cpu%u/cache/index%u/level", root, (unsigned)cpu, i);
    if (n < 0 || (size_t)n >= sizeof path) break;
    if (!read_line(path, line, sizeof line)) break;
    char *end = NULL;
    long level = strtol(line, &end, 10);
    if (end == line || *end || level < 1 || level > 3) continue;
    snprintf(path, sizeof path, "%s/cpu%u/cache/index%u/type", root, (unsigned)cpu, i);
    if (read_line(path, line, sizeof line) && strcmp(line, "Instruction") == 0) continue;
    snprintf(path, sizeof path, "%s/cpu%u/cache/index%u/size", root, (unsigned)cpu, i);
    if (!read_line(path, line, sizeof line)) continue;
    uint64_t size = parse_size(line);
    if (!size) continue;
    ruda__cpu_cache_t *c = &out->level[level - 1];
    c->size = size;
    snprintf(path, sizeof path, "%s/cpu%u/cache/index%u/shared_cpu_list", root, (unsigned)cpu, i);
    c->shared_cpus = read_line(path, line, sizeof line) ? ruda__cpu_list_count(line) : 0;
    any = true;
  }
  if (any) out->source = "sysfs";
  return any;
}

bool ruda__cpu_caches_from_hwloc(ruda__cpu_caches_t *out) {
  memset(out, 0, sizeof *out);
  out->source = "none";
#if defined(RUDA_HAVE_HWLOC) && HWLOC_API_VERSION >= 0x00020000
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return false;
  /* Only CPUs and caches are needed: no PCI or OS devices. */
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
  bool any = false;
  hwloc_bitmap_t set = NULL;
  if (hwloc_topology_load(topo) != 0) goto out_topology;
  set = hwloc_bitmap_alloc();
  if (!set) goto out_topology;
  int first = -1;
  if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) first = hwloc_bitmap_first(set);
  hwloc_obj_t pu = first >= 0 ? hwloc_get_pu_obj_by_os_index(topo, (unsigned)first)
                              : hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, 0);
  for (hwloc_obj_t o = pu ? pu->parent : NULL; o; o = o->parent) {
    if (!hwloc_obj_type_is_dcache(o->type)) continue;
    unsigned depth = o->attr->cache.depth;
    if (depth < 1 || depth > 3 || o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
    ruda__cpu_cache_t *c = &out->level[depth - 1];
    if (c->size) continue; /* the closest cache of a level wins */
    c->size = o->attr->cache.size;
    int w = o->cpuset ? hwloc_bitmap_weight(o->cpuset) : -1;
    c->shared_cpus = w > 0 ? (uint32_t)w : 0;
    any = any || c->size != 0;
  }
  hwloc_bitmap_free(set);
out_topology:
  hwloc_topology_destroy(topo);
  if (any) out->source = "hwloc";
  return any;
#else
  return false;
#endif
}

static uint32_t first_allowed_cpu(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (uint32_t i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) return i;
  }
  return 0;
}

static ruda__cpu_caches_t caches;
static pthread_once_t caches_once = PTHREAD_ONCE_INIT;

static void load_caches(void) {
  if (ruda__cpu_caches_from_hwloc(&caches)) return;
  if (ruda__cpu_caches_from_sysfs("/sys/devices/system/cpu", first_allowed_cpu(), &caches)) return;
  memset(&caches, 0, sizeof caches);
  caches.source = "none";
}

const ruda__cpu_caches_t *ruda__cpu_caches(void) {
  pthread_once(&caches_once, load_caches);
  return &caches;
}
