/* Conformance: every backend honours the settings the server layer builds
 * from the configuration: memory.persistent_memory (disabled, enabled,
 * enforced), compilation.check_mode, and compilation.cache (on by default
 * in the user's cache directory, "none" honoured) where the backend has a
 * disk cache.
 *
 * The configuration is read once per process, so each setting runs in a
 * child process (this program re-executed with only `settings_child`),
 * which installs its configuration with ruda_config_set() before its first
 * client. */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cts.h"

static char g_self[4096];

__attribute__((constructor)) static void remember_self(void) {
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
  g_self[n > 0 ? n : 0] = '\0';
}

/* Runs `scenario` in a child; its exit status (77: skipped). */
static int run_child(const char *scenario, const char *xdg_cache) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("RUDA_CTS_SETTINGS", scenario, 1);
    if (xdg_cache) setenv("XDG_CACHE_HOME", xdg_cache, 1);
    execl(g_self, g_self, "settings_child", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 126;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void expect_child(const char *scenario, const char *xdg_cache) {
  int code = run_child(scenario, xdg_cache);
  if (code == 77) SKIP("skipped in the child (see its output above)");
  ASSERT_EQ(code, 0);
}

/* ---- Child scenarios ---- */

static void install(ruda_config_t *cfg) { ASSERT_OK(ruda_config_set(cfg)); }

static ruda_memory_usage_t usage(ruda_client_t *c) {
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  return u;
}

/* Reserves 1024 bytes on a fresh stream in `mode` and returns how much
 * the stream then holds from the device. */
static uint64_t reserved_for_1024(ruda_memory_allocation_mode_t mode, ruda_handle_t *h,
                                  ruda_client_t **out) {
  ruda_client_t *c = cts_fresh_stream_client();
  ASSERT_OK(ruda_client_allocation_mode(c, mode));
  ASSERT_OK(ruda_client_empty(c, 1024, h));
  ruda_memory_usage_t u = usage(c);
  ASSERT_UEQ(u.number_allocs, 1);
  ASSERT_UEQ(u.bytes_in_use, 1024);
  *out = c;
  return u.bytes_reserved;
}

static void persistent_scenario(ruda_persistent_memory_t setting) {
  ruda_config_t cfg;
  ruda_config_default(&cfg);
  cfg.memory.persistent_memory = setting;
  install(&cfg);
  ruda_handle_t hp, ha;
  ruda_client_t *cp, *ca;
  uint64_t persistent = reserved_for_1024(RUDA_ALLOCATION_PERSISTENT, &hp, &cp);
  uint64_t automatic = reserved_for_1024(RUDA_ALLOCATION_AUTO, &ha, &ca);
  printf("  persistent_memory=%d: persistent mode reserves %llu, auto reserves %llu\n",
         (int)setting, (unsigned long long)persistent, (unsigned long long)automatic);
  switch (setting) {
    case RUDA_PERSISTENT_MEMORY_ENABLED:
      /* The mode decides: an exact slice, or one from a page. */
      ASSERT_UEQ(persistent, 1024);
      ASSERT_UGT(automatic, 1024);
      break;
    case RUDA_PERSISTENT_MEMORY_DISABLED:
      /* The persistent request is served like any other. */
      ASSERT_UGT(persistent, 1024);
      ASSERT_UEQ(persistent, automatic);
      break;
    case RUDA_PERSISTENT_MEMORY_ENFORCED:
      /* Every reservation is persistent, exactly its size. */
      ASSERT_UEQ(persistent, 1024);
      ASSERT_UEQ(automatic, 1024);
      break;
  }
  /* Data round-trips either way. */
  uint8_t in[1024], back[1024];
  for (int i = 0; i < 1024; i++) in[i] = (uint8_t)(i * 13);
  ASSERT_OK(ruda_client_write(cp, &hp, in, sizeof in));
  ASSERT_OK(ruda_client_read(cp, &hp, back, sizeof back));
  ASSERT_MEM_EQ(in, back, sizeof in);
  ruda_handle_release(&hp);
  ruda_handle_release(&ha);
  ASSERT_OK(ruda_client_sync(cp));
  ASSERT_OK(ruda_client_sync(ca));
  ruda_client_release(cp);
  ruda_client_release(ca);
}

static void check_mode_scenario(void) {
  ruda_config_t cfg;
  ruda_config_default(&cfg);
  cfg.compilation.check_mode = RUDA_BOUNDS_VALIDATE;
  install(&cfg);
  ruda_client_t *c = cts_client();
  ASSERT_EQ(ruda_client_check_mode(c), RUDA_BOUNDS_VALIDATE);
  ASSERT_EQ(ruda_bounds_check_to_mode(ruda_client_check_mode(c)), RUDA_EXEC_VALIDATE);
  /* A launch in the configured mode runs. */
  uint32_t v[CTS_UNITS] = {0};
  ruda_handle_t h = cts_upload(c, v, sizeof v);
  ruda_kernel_t *k = cts_kernel_fill_u32();
  uint64_t info[2] = {CTS_UNITS, 4};
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1, .info = {info, 2, 2}};
  ASSERT_OK(ruda_client_launch_unchecked(c, k, ruda_count_static(1, 1, 1), &args));
  ASSERT_OK(ruda_client_read(c, &h, v, sizeof v));
  ASSERT_UEQ(v[CTS_UNITS - 1], 4);
  ruda_kernel_release(k);
  ruda_handle_release(&h);
}

/* Whether `dir` holds a regular file at any depth. */
static bool holds_a_file(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  struct dirent *e;
  while (!found && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (S_ISREG(st.st_mode)) found = true;
    else if (S_ISDIR(st.st_mode)) found = holds_a_file(path);
  }
  closedir(d);
  return found;
}

static void cache_scenario(bool off) {
  ruda_config_t cfg;
  ruda_config_default(&cfg);
  if (off) cfg.compilation.cache.location = RUDA_CACHE_LOCATION_NONE;
  install(&cfg); /* before anything reads the configuration (cts_require does) */
  cts_require("disk_cache");
  /* The default is the user's cache directory ($XDG_CACHE_HOME/ruda, a
   * fresh directory given by the parent). */
  char dir[4096];
  ASSERT_UGT(ruda_config_cache_dir(&cfg, dir, sizeof dir) + (off ? 1 : 0), 0);
  char want[4096];
  snprintf(want, sizeof want, "%s/ruda", getenv("XDG_CACHE_HOME"));
  if (!off) ASSERT_STR_EQ(dir, want);
  uint32_t v[CTS_UNITS];
  cts_fill_and_read(cts_client(), ruda_count_static(1, 1, 1), 8, v);
  ASSERT_UEQ(v[0], 8);
  if (off) {
    ASSERT_FALSE(holds_a_file(want));
  } else {
    ASSERT_TRUE(holds_a_file(want));
  }
}

TEST(settings_child) {
  const char *s = getenv("RUDA_CTS_SETTINGS");
  if (!s) SKIP("runs only in a child process of the other tests");
  if (strcmp(s, "persistent_disabled") == 0) persistent_scenario(RUDA_PERSISTENT_MEMORY_DISABLED);
  else if (strcmp(s, "persistent_enabled") == 0) persistent_scenario(RUDA_PERSISTENT_MEMORY_ENABLED);
  else if (strcmp(s, "persistent_enforced") == 0) persistent_scenario(RUDA_PERSISTENT_MEMORY_ENFORCED);
  else if (strcmp(s, "check_mode") == 0) check_mode_scenario();
  else if (strcmp(s, "cache_none") == 0) cache_scenario(true);
  else if (strcmp(s, "cache_default") == 0) cache_scenario(false);
  else ASSERT_TRUE(!"unknown scenario");
}

/* ---- The tests (parent side) ---- */

TEST(persistent_memory_disabled_serves_persistent_requests_like_any_other) {
  expect_child("persistent_disabled", NULL);
}
TEST(persistent_memory_enabled_follows_the_allocation_mode) {
  expect_child("persistent_enabled", NULL);
}
TEST(persistent_memory_enforced_makes_every_reservation_persistent) {
  expect_child("persistent_enforced", NULL);
}
TEST(check_mode_from_the_configuration) { expect_child("check_mode", NULL); }

static void fresh_dir(char *out, size_t cap, const char *what) {
  snprintf(out, cap, "%s/%s-%ld-%ld", rt_tmpdir(), what, (long)getpid(), (long)time(NULL));
  ASSERT_EQ(mkdir(out, 0755), 0);
}

TEST(compilation_cache_none_writes_nothing) {
  char dir[2048];
  fresh_dir(dir, sizeof dir, "xdg-none");
  expect_child("cache_none", dir);
}
TEST(compilation_cache_is_on_by_default_in_the_user_cache_directory) {
  char dir[2048];
  fresh_dir(dir, sizeof dir, "xdg-default");
  expect_child("cache_default", dir);
}
