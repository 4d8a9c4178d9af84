/* The CPU backend's cache sizes: the sysfs parser on trees of our own
 * (sizes, sharing lists, instruction caches and malformed entries left
 * out), CPU lists, and on this machine hwloc, sysfs and the device
 * properties agreeing with each other. */
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/cpu/cpu_topology.h"
#include "ruda/client.h"
#include "ruda/status.h"
#include "test.h"

static void write_file(const char *dir, const char *name, const char *text) {
  char path[2048]; /* a directory of up to 1023 bytes, a name */
  snprintf(path, sizeof path, "%s/%s", dir, name);
  rt_write_file(path, text);
}

static void mkdirs(const char *path) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(buf, 0755);
    *p = '/';
  }
  mkdir(buf, 0755);
}

/* root/cpu<cpu>/cache/index<i>/{level,type,size,shared_cpu_list}; NULL
 * fields are not written. */
static void cache_entry(const char *root, unsigned cpu, unsigned i, const char *level,
                        const char *type, const char *size, const char *shared) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/cpu%u/cache/index%u", root, cpu, i);
  mkdirs(dir);
  if (level) write_file(dir, "level", level);
  if (type) write_file(dir, "type", type);
  if (size) write_file(dir, "size", size);
  if (shared) write_file(dir, "shared_cpu_list", shared);
}

static const char *tree(const char *name) {
  static char root[1024];
  snprintf(root, sizeof root, "%s/%s", rt_tmpdir(), name);
  mkdirs(root);
  return root;
}

/* `c` holds an L1 data cache of `l1` bytes shared by `l1_cpus` CPUs, an L2
 * of `l2` bytes and an L3 of `l3` bytes shared by `l3_cpus` CPUs. */
static void expect_levels(const ruda__cpu_caches_t *c, uint64_t l1, uint32_t l1_cpus,
                          uint64_t l2, uint64_t l3, uint32_t l3_cpus) {
  ASSERT_UEQ(c->level[0].size, l1);
  ASSERT_UEQ(c->level[0].shared_cpus, l1_cpus);
  ASSERT_UEQ(c->level[1].size, l2);
  ASSERT_UEQ(c->level[2].size, l3);
  ASSERT_UEQ(c->level[2].shared_cpus, l3_cpus);
}

TEST(cpu_list_count) {
  ASSERT_UEQ(ruda__cpu_list_count("0"), 1);
  ASSERT_UEQ(ruda__cpu_list_count("0-1"), 2);
  ASSERT_UEQ(ruda__cpu_list_count("0-3,8-11"), 8);
  ASSERT_UEQ(ruda__cpu_list_count("0-3,8,10-11"), 7);
  ASSERT_UEQ(ruda__cpu_list_count(""), 0);
  ASSERT_UEQ(ruda__cpu_list_count("3-1"), 0);
  ASSERT_UEQ(ruda__cpu_list_count("0,"), 0);
  ASSERT_UEQ(ruda__cpu_list_count("a"), 0);
  ASSERT_UEQ(ruda__cpu_list_count("0-4294967295"), 0); /* more than fits */
}

/* The layout of the 2-core VM whose sysconf() reported an L3 of 320 MiB. */
TEST(sysfs_levels_sizes_and_sharing) {
  const char *root = tree("epyc");
  cache_entry(root, 0, 0, "1\n", "Data\n", "32K\n", "0\n");
  cache_entry(root, 0, 1, "1\n", "Instruction\n", "64K\n", "0\n");
  cache_entry(root, 0, 2, "2\n", "Unified\n", "1024K\n", "0\n");
  cache_entry(root, 0, 3, "3\n", "Unified\n", "32768K\n", "0-1\n");
  ruda__cpu_caches_t c;
  ASSERT_TRUE(ruda__cpu_caches_from_sysfs(root, 0, &c));
  ASSERT_STR_EQ(c.source, "sysfs");
  /* L1: the data cache, not the instruction one. */
  expect_levels(&c, 32u << 10, 1, 1u << 20, 32u << 20, 2);
}

TEST(sysfs_other_cpu_and_other_units) {
  const char *root = tree("units");
  cache_entry(root, 5, 0, "1", "Data", "48K", "5,13");
  cache_entry(root, 5, 1, "2", "Unified", "2M", "5,13");
  cache_entry(root, 5, 2, "3", "Unified", "1G", "0-15");
  ruda__cpu_caches_t c;
  ASSERT_FALSE(ruda__cpu_caches_from_sysfs(root, 0, &c)); /* no cpu0 in this tree */
  ASSERT_UEQ(c.level[2].size, 0);
  ASSERT_TRUE(ruda__cpu_caches_from_sysfs(root, 5, &c));
  expect_levels(&c, 48u << 10, 2, 2u << 20, 1ull << 30, 16);
}

TEST(sysfs_malformed_entries_are_left_out) {
  const char *root = tree("bad");
  cache_entry(root, 0, 0, "1", "Data", "32Q", "0");       /* bad unit */
  cache_entry(root, 0, 1, "x", "Unified", "1024K", "0");  /* bad level */
  cache_entry(root, 0, 2, "4", "Unified", "65536K", "0"); /* L4: not reported */
  cache_entry(root, 0, 3, "2", "Unified", NULL, "0");     /* no size */
  cache_entry(root, 0, 4, "3", "Unified", "99999999999999999999K", "0"); /* overflow */
  cache_entry(root, 0, 5, "3", "Unified", "16384K", "zz"); /* size kept, sharing unknown */
  ruda__cpu_caches_t c;
  ASSERT_TRUE(ruda__cpu_caches_from_sysfs(root, 0, &c));
  ASSERT_UEQ(c.level[0].size, 0);
  ASSERT_UEQ(c.level[1].size, 0);
  ASSERT_UEQ(c.level[2].size, 16u << 20);
  ASSERT_UEQ(c.level[2].shared_cpus, 0);
  ASSERT_FALSE(ruda__cpu_caches_from_sysfs("/nonexistent/ruda", 0, &c));
  ASSERT_STR_EQ(c.source, "none");
}

static unsigned first_allowed_cpu(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (unsigned i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) return i;
  return 0;
}

/* On this machine: what the device reports is what sysfs (and hwloc, when
 * built with it) says, level by level. */
TEST(this_machine_properties_match_sysfs_and_hwloc) {
  ruda__cpu_caches_t sys;
  if (!ruda__cpu_caches_from_sysfs("/sys/devices/system/cpu", first_allowed_cpu(), &sys))
    SKIP("no cache information in /sys/devices/system/cpu here");
  ruda__cpu_caches_t hw;
  if (ruda__cpu_caches_from_hwloc(&hw)) {
    ASSERT_STR_EQ(hw.source, "hwloc");
    for (int l = 0; l < 3; ++l) {
      if (hw.level[l].size && sys.level[l].size) ASSERT_UEQ(hw.level[l].size, sys.level[l].size);
      if (hw.level[l].shared_cpus && sys.level[l].shared_cpus)
        ASSERT_UEQ(hw.level[l].shared_cpus, sys.level[l].shared_cpus);
    }
  }
  const ruda__cpu_caches_t *used = ruda__cpu_caches();
  ASSERT_TRUE(strcmp(used->source, "hwloc") == 0 || strcmp(used->source, "sysfs") == 0);
  ruda_device_properties_t p;
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ASSERT_OK(ruda_device_properties(cpu, &p));
  ASSERT_UEQ(p.hardware.cache_l1, used->level[0].size);
  ASSERT_UEQ(p.hardware.cache_l2, used->level[1].size);
  ASSERT_UEQ(p.hardware.cache_l3, used->level[2].size);
  if (sys.level[2].size) ASSERT_UEQ(p.hardware.cache_l3, sys.level[2].size);
  if (sys.level[1].size) ASSERT_UEQ(p.hardware.cache_l2, sys.level[1].size);
}
