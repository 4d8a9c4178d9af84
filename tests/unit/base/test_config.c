/* Configuration: defaults, ruda.toml schema and errors, search, environment
 * overrides, the process-wide copy and the cache directory. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/config_internal.h"
#include "ruda/config.h"
#include "ruda/status.h"
#include "test.h"

static const char *const k_env_vars[] = {
    "RUDA_CONFIG",          "RUDA_LOG_COMPILATION",   "RUDA_LOG_MEMORY",
    "RUDA_LOG_STREAMING",   "RUDA_LOG_PROFILING",     "RUDA_CHECK_MODE",
    "RUDA_MAX_STREAMS",     "RUDA_STREAM_PRIORITY",   "RUDA_PERSISTENT_MEMORY",
    "RUDA_COMPILATION_CACHE", "RUDA_CACHE_DIR",       "RUDA_CPU_THREADS",
    "RUDA_CPU_DEVICES",     "RUDA_CPU_SPIN",          "RUDA_CPU_MEMORY_LIMIT",
    "RUDA_TRACE",           "RUDA_FP_CONTRACT"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof k_env_vars / sizeof k_env_vars[0]; i++)
    unsetenv(k_env_vars[i]);
}

static ruda_config_t parse_ok(const char *text) {
  ruda_config_t c;
  ruda_status_t st = ruda_config_parse(text, strlen(text), "ruda.toml", &c);
  if (st) {
    char *m = ruda_status_to_string(st);
    fprintf(stderr, "unexpected error for:\n%s\n%s\n", text, m);
    free(m);
    ruda_status_free(st);
    memset(&c, 0xff, sizeof c.profiling); /* make the test's asserts fail */
  }
  return c;
}

static void expect_error(const char *text, uint32_t line, const char *key, const char *why) {
  ruda_config_t c;
  memset(&c, 0x5a, sizeof c);
  ruda_status_t st = ruda_config_parse(text, strlen(text), "/p/ruda.toml", &c);
  RT_CHECK_(st != NULL, "expected an error for: %s", text);
  char *m = ruda_status_to_string(st);
  bool ok = ruda_status_kind(st) == RUDA_ERR_CONFIG && ruda_status_line(st) == line &&
            ruda_status_file(st) && strcmp(ruda_status_file(st), "/p/ruda.toml") == 0 &&
            strstr(ruda_status_reason(st), why) != NULL &&
            ((key == NULL && ruda_status_key(st) == NULL) ||
             (key && ruda_status_key(st) && strcmp(ruda_status_key(st), key) == 0));
  if (!ok)
    fprintf(stderr, "input: %s\nexpected line %u key %s reason ~ \"%s\"\ngot line %u key %s:\n%s\n",
            text, line, key ? key : "(none)", why, ruda_status_line(st),
            ruda_status_key(st) ? ruda_status_key(st) : "(none)", m);
  free(m);
  ruda_status_free(st);
  /* On error the output holds the defaults. */
  ruda_config_t d;
  ruda_config_default(&d);
  RT_CHECK_(memcmp(&c, &d, sizeof c) == 0, "output is not the defaults after: %s", text);
  RT_CHECK_(ok, "wrong error for: %s", text);
}

TEST(defaults_follow_the_reference) {
  ruda_config_t c;
  memset(&c, 0x7f, sizeof c);
  ruda_config_default(&c);
  for (int ch = 0; ch < RUDA_LOG_CHANNEL_COUNT_; ch++) {
    const ruda_logger_config_t *l = ruda_config_logger(&c, (ruda_log_channel_t)ch);
    ASSERT_NOT_NULL(l);
    ASSERT_EQ(l->level, RUDA_LOG_LEVEL_DISABLED);
    ASSERT_TRUE(l->append);
    ASSERT_FALSE(l->to_stdout);
    ASSERT_FALSE(l->to_stderr);
    ASSERT_STR_EQ(l->file, "");
  }
  ASSERT_NULL(ruda_config_logger(&c, RUDA_LOG_CHANNEL_COUNT_));
  ASSERT_NULL(ruda_config_logger(NULL, RUDA_LOG_CHANNEL_MEMORY));
  /* The disk cache is on by default, in the user's cache directory. */
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_USER);
  ASSERT_EQ(c.compilation.check_mode, RUDA_BOUNDS_AUTO);
  ASSERT_EQ(c.compilation.fp_contract, RUDA_FP_CONTRACT_FAST);
  ASSERT_EQ(c.streaming.max_streams, 128);
  ASSERT_EQ(c.streaming.priority, RUDA_STREAM_PRIORITY_DEFAULT);
  ASSERT_EQ(c.memory.persistent_memory, RUDA_PERSISTENT_MEMORY_ENABLED);
  ASSERT_EQ(c.cpu.threads, 0);
  ASSERT_STR_EQ(c.trace.file, "");
  ASSERT_STR_EQ(c.source, "");
  /* An empty file gives the defaults too. */
  ruda_config_t e = parse_ok("# nothing\n");
  ASSERT_STR_EQ(e.source, "ruda.toml");
  memset(e.source, 0, sizeof e.source);
  ASSERT_MEM_EQ(&e, &c, sizeof c);
}

TEST(names) {
  ASSERT_STR_EQ(ruda_log_level_name(RUDA_LOG_LEVEL_MEDIUM), "medium");
  ASSERT_STR_EQ(ruda_log_level_name((ruda_log_level_t)42), "invalid");
  ASSERT_STR_EQ(ruda_log_channel_name(RUDA_LOG_CHANNEL_STREAMING), "streaming");
  ASSERT_STR_EQ(ruda_log_channel_name(RUDA_LOG_CHANNEL_COUNT_), "invalid");
}

TEST(every_option) {
  ruda_config_t c = parse_ok(
      "# every option\n"
      "[profiling]\n"
      "logger = { level = \"medium\", stdout = true }\n"
      "[compilation]\n"
      "logger = { level = \"full\", file = \"logs/c.log\", append = false, stderr = true }\n"
      "cache = \"global\"\n"
      "check_mode = \"validate\"\n"
      "[streaming]\n"
      "max_streams = 16\n"
      "priority = \"high\"\n"
      "[streaming.logger]\n"
      "level = \"basic\"\n"
      "[memory]\n"
      "logger.level = \"full\"\n"
      "logger.file = \"m.log\"\n"
      "persistent_memory = \"enforced\"\n"
      "[cpu]\n"
      "threads = 8\n"
      "[trace]\n"
      "file = \"trace.json\"\n");
  ASSERT_EQ(c.profiling.logger.level, RUDA_LOG_LEVEL_MEDIUM);
  ASSERT_TRUE(c.profiling.logger.to_stdout);
  ASSERT_FALSE(c.profiling.logger.to_stderr);
  ASSERT_EQ(c.compilation.logger.level, RUDA_LOG_LEVEL_FULL);
  ASSERT_STR_EQ(c.compilation.logger.file, "logs/c.log");
  ASSERT_FALSE(c.compilation.logger.append);
  ASSERT_TRUE(c.compilation.logger.to_stderr);
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_GLOBAL);
  ASSERT_EQ(c.compilation.check_mode, RUDA_BOUNDS_VALIDATE);
  ASSERT_EQ(c.streaming.max_streams, 16);
  ASSERT_EQ(c.streaming.priority, RUDA_STREAM_PRIORITY_HIGH);
  ASSERT_EQ(c.streaming.logger.level, RUDA_LOG_LEVEL_BASIC);
  ASSERT_EQ(c.memory.logger.level, RUDA_LOG_LEVEL_FULL);
  ASSERT_STR_EQ(c.memory.logger.file, "m.log");
  ASSERT_TRUE(c.memory.logger.append);
  ASSERT_EQ(c.memory.persistent_memory, RUDA_PERSISTENT_MEMORY_ENFORCED);
  ASSERT_EQ(c.cpu.threads, 8);
  ASSERT_STR_EQ(c.trace.file, "trace.json");
  ASSERT_STR_EQ(c.source, "ruda.toml");
}

TEST(enum_values) {
  static const char *const levels[] = {"disabled", "minimal", "basic", "medium", "full"};
  for (int i = 0; i < 5; i++) {
    char text[128];
    snprintf(text, sizeof text, "[profiling]\nlogger = { level = \"%s\" }\n", levels[i]);
    ruda_config_t c = parse_ok(text);
    ASSERT_EQ(c.profiling.logger.level, i);
  }
  ruda_config_t c = parse_ok("[compilation]\ncheck_mode = \"enforce\"\ncache = \"local\"");
  ASSERT_EQ(c.compilation.check_mode, RUDA_BOUNDS_ENFORCE);
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_LOCAL);
  c = parse_ok("[compilation]\nfp_contract = \"off\"");
  ASSERT_EQ(c.compilation.fp_contract, RUDA_FP_CONTRACT_OFF);
  c = parse_ok("[compilation]\nfp_contract = \"fast\"");
  ASSERT_EQ(c.compilation.fp_contract, RUDA_FP_CONTRACT_FAST);
  c = parse_ok("[compilation]\ncheck_mode = \"auto\"\ncache = \"target\"");
  ASSERT_EQ(c.compilation.check_mode, RUDA_BOUNDS_AUTO);
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_TARGET);
  c = parse_ok("[compilation]\ncache = { file = \"/var/cache/k\" }");
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_FILE);
  ASSERT_STR_EQ(c.compilation.cache.file, "/var/cache/k");
  c = parse_ok("[compilation.cache]\nfile = \"k\"");
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_FILE);
  c = parse_ok("[streaming]\npriority = \"low\"\nmax_streams = 1\n[memory]\npersistent_memory = \"disabled\"");
  ASSERT_EQ(c.streaming.priority, RUDA_STREAM_PRIORITY_LOW);
  ASSERT_EQ(c.streaming.max_streams, 1);
  ASSERT_EQ(c.memory.persistent_memory, RUDA_PERSISTENT_MEMORY_DISABLED);
  c = parse_ok("[streaming]\npriority = \"default\"\nmax_streams = 255\n[memory]\npersistent_memory = \"enabled\"");
  ASSERT_EQ(c.streaming.max_streams, 255);
  ASSERT_EQ(c.memory.persistent_memory, RUDA_PERSISTENT_MEMORY_ENABLED);
  c = parse_ok("streaming.max_streams = 3\ncpu = { threads = 0 }");
  ASSERT_EQ(c.streaming.max_streams, 3);
}

TEST(schema_errors) {
  static const struct {
    const char *text;
    uint32_t line;
    const char *key, *why;
  } cases[] = {
      {"[gpu]\n", 1, "gpu", "unknown section"},
      {"\nverbose = true\n", 2, "verbose", "unknown section"},
      {"profiling = 1\n", 1, "profiling", "expected a table, found an integer"},
      {"[profiling]\nlevel = \"full\"\n", 2, "profiling.level", "unknown key (expected logger)"},
      {"[compilation]\nfoo = 1\n", 2, "compilation.foo", "unknown key (expected logger, cache, check_mode, fp_contract, cpu_compiler or cpu_flags)"},
      {"[streaming]\nfoo = 1\n", 2, "streaming.foo", "unknown key"},
      {"[memory]\nfoo = 1\n", 2, "memory.foo", "unknown key"},
      {"[cpu]\nfoo = 1\n", 2, "cpu.foo", "unknown key (expected threads, devices, spin or memory_limit)"},
      {"[trace]\nfoo = 1\n", 2, "trace.foo", "unknown key (expected file)"},
      {"[memory]\nlogger = { level = \"full\", color = true }\n", 2, "memory.logger.color", "unknown key (expected level, file, append, stdout or stderr)"},
      {"[memory]\nlogger = \"full\"\n", 2, "memory.logger", "expected a table, found a string"},
      {"[compilation]\nlogger = { level = \"medium\" }\n", 2, "compilation.logger.level", "expected \"disabled\", \"basic\" or \"full\", found \"medium\""},
      {"[streaming.logger]\nlevel = \"minimal\"\n", 2, "streaming.logger.level", "found \"minimal\""},
      {"[profiling.logger]\nlevel = \"loud\"\n", 2, "profiling.logger.level", "expected \"disabled\", \"minimal\", \"basic\", \"medium\" or \"full\""},
      {"[profiling.logger]\nlevel = 3\n", 2, "profiling.logger.level", "expected a string, found an integer"},
      {"[memory.logger]\nstdout = \"yes\"\n", 2, "memory.logger.stdout", "expected a boolean, found a string"},
      {"[memory.logger]\nstderr = 1\n", 2, "memory.logger.stderr", "expected a boolean"},
      {"[memory.logger]\nappend = {}\n", 2, "memory.logger.append", "expected a boolean, found a table"},
      {"[memory.logger]\nfile = \"\"\n", 2, "memory.logger.file", "empty string"},
      {"[memory.logger]\nfile = true\n", 2, "memory.logger.file", "expected a string"},
      {"[compilation]\ncheck_mode = \"strict\"\n", 2, "compilation.check_mode", "expected \"enforce\", \"validate\" or \"auto\", found \"strict\""},
      {"[compilation]\ncache = \"remote\"\n", 2, "compilation.cache", "found \"remote\""},
      {"[compilation]\ncache = 5\n", 2, "compilation.cache", "or { file = \"path\" }, found an integer"},
      {"[compilation]\ncache = {}\n", 2, "compilation.cache", "needs a `file` key"},
      {"[compilation]\ncache = { dir = \"x\" }\n", 2, "compilation.cache.dir", "unknown key (expected file)"},
      {"[compilation]\ncache = { file = 1 }\n", 2, "compilation.cache.file", "expected a string"},
      {"[streaming]\nmax_streams = 0\n", 2, "streaming.max_streams", "expected an integer from 1 to 255, found 0"},
      {"[streaming]\nmax_streams = 256\n", 2, "streaming.max_streams", "found 256"},
      {"[streaming]\nmax_streams = -1\n", 2, "streaming.max_streams", "found -1"},
      {"[streaming]\nmax_streams = \"8\"\n", 2, "streaming.max_streams", "expected an integer, found a string"},
      {"[streaming]\npriority = \"urgent\"\n", 2, "streaming.priority", "\"default\", \"low\" or \"high\""},
      {"[memory]\npersistent_memory = true\n", 2, "memory.persistent_memory", "expected a string, found a boolean"},
      {"[memory]\npersistent_memory = \"on\"\n", 2, "memory.persistent_memory", "\"enabled\", \"disabled\" or \"enforced\""},
      {"[cpu]\nthreads = 65536\n", 2, "cpu.threads", "from 0 to 65535"},
      {"[trace]\nfile = 0\n", 2, "trace.file", "expected a string"},
      /* Syntax errors come through with the file's location too. */
      {"[streaming]\nmax_streams = 1.5\n", 2, "streaming.max_streams", "floats"},
      {"[streaming]\nmax_streams = 1\nmax_streams = 2\n", 3, "streaming.max_streams", "duplicate key"},
      /* The first error wins. */
      {"[cpu]\nthreads = -1\n[gpu]\n", 2, "cpu.threads", "from 0 to 65535"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_error(cases[i].text, cases[i].line, cases[i].key, cases[i].why);
  ASSERT_EQ(parse_ok("[compilation]\ncache = \"none\"").compilation.cache.location,
            RUDA_CACHE_LOCATION_NONE);
  ASSERT_EQ(parse_ok("[compilation]\ncache = \"user\"").compilation.cache.location,
            RUDA_CACHE_LOCATION_USER);
}

TEST(long_paths_are_rejected) {
  char *text = malloc(RUDA_CONFIG_PATH_MAX + 64);
  strcpy(text, "[trace]\nfile = \"");
  size_t at = strlen(text);
  memset(text + at, 'a', RUDA_CONFIG_PATH_MAX);
  strcpy(text + at + RUDA_CONFIG_PATH_MAX, "\"\n");
  expect_error(text, 2, "trace.file", "path longer than 1023 bytes");
  /* 1023 bytes fit. */
  strcpy(text + at + RUDA_CONFIG_PATH_MAX - 1, "\"\n");
  ruda_config_t c = parse_ok(text);
  ASSERT_UEQ(strlen(c.trace.file), RUDA_CONFIG_PATH_MAX - 1);
  free(text);
}

TEST(parse_arguments) {
  ASSERT_ERR_KIND(ruda_config_parse("", 0, NULL, NULL), RUDA_ERR_INVALID_ARGUMENT);
  ruda_config_t c;
  ASSERT_OK(ruda_config_parse(NULL, 0, NULL, &c));
  ASSERT_STR_EQ(c.source, "");
  ruda_status_t st = ruda_config_parse("[x]", 3, NULL, &c);
  ASSERT_STR_EQ(ruda_status_file(st), "<string>");
  ruda_status_free(st);
  /* Text need not be terminated: only `len` bytes are read. */
  ASSERT_OK(ruda_config_parse("[cpu]\nthreads = 4GARBAGE", 17, NULL, &c));
  ASSERT_EQ(c.cpu.threads, 4);
}

TEST(load_file) {
  char path[600];
  snprintf(path, sizeof path, "%s/load_file.toml", rt_tmpdir());
  rt_write_file(path, "[streaming]\nmax_streams = 7\n");
  ruda_config_t c;
  ASSERT_OK(ruda_config_load_file(path, &c));
  ASSERT_EQ(c.streaming.max_streams, 7);
  ASSERT_STR_EQ(c.source, path);

  rt_write_file(path, "[streaming]\n\n\nmax_streams = \"x\"\n");
  ruda_status_t st = ruda_config_load_file(path, &c);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
  ASSERT_STR_EQ(ruda_status_file(st), path);
  ASSERT_EQ(ruda_status_line(st), 4);
  ASSERT_STR_EQ(ruda_status_key(st), "streaming.max_streams");
  ruda_status_free(st);
  ASSERT_EQ(c.streaming.max_streams, 128);

  snprintf(path, sizeof path, "%s/does_not_exist.toml", rt_tmpdir());
  st = ruda_config_load_file(path, &c);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "cannot open the file");
  ASSERT_STR_EQ(ruda_status_file(st), path);
  ruda_status_free(st);
  /* A directory is not a readable file. */
  st = ruda_config_load_file(rt_tmpdir(), &c);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
  ruda_status_free(st);
  ASSERT_ERR_KIND(ruda_config_load_file(NULL, &c), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_config_load_file(path, NULL), RUDA_ERR_INVALID_ARGUMENT);
}

TEST(load_file_too_large) {
  char path[600];
  snprintf(path, sizeof path, "%s/large.toml", rt_tmpdir());
  FILE *f = fopen(path, "wb");
  ASSERT_NOT_NULL(f);
  for (int i = 0; i < (1 << 20) / 16 + 1; i++) fputs("# padding line.\n", f);
  fclose(f);
  ruda_config_t c;
  ruda_status_t st = ruda_config_load_file(path, &c);
  ASSERT_NOT_NULL(st);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "larger than");
  ruda_status_free(st);
}

/* tmp/search/a/ruda.toml, tmp/search/a/b/ruda.toml, tmp/search/a/b/c/d */
static void make_tree(char *root, size_t cap) {
  snprintf(root, cap, "%s/search", rt_tmpdir());
  char p[700];
  mkdir(root, 0777);
  snprintf(p, sizeof p, "%s/a", root);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/a/ruda.toml", root);
  rt_write_file(p, "[cpu]\nthreads = 1\n");
  snprintf(p, sizeof p, "%s/a/b", root);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/a/b/ruda.toml", root);
  rt_write_file(p, "[cpu]\nthreads = 2\n");
  snprintf(p, sizeof p, "%s/a/b/c", root);
  mkdir(p, 0777);
  snprintf(p, sizeof p, "%s/a/b/c/d", root);
  mkdir(p, 0777);
  /* A directory named ruda.toml is not a file. */
  snprintf(p, sizeof p, "%s/a/b/c/ruda.toml", root);
  mkdir(p, 0777);
}

TEST(search_upwards_first_match_wins) {
  char root[600], start[700], found[800], want[800];
  make_tree(root, sizeof root);
  snprintf(start, sizeof start, "%s/a/b/c/d/", root);
  ASSERT_TRUE(ruda__config_find(start, found, sizeof found));
  snprintf(want, sizeof want, "%s/a/b/ruda.toml", root);
  ASSERT_STR_EQ(found, want);
  snprintf(start, sizeof start, "%s/a", root);
  ASSERT_TRUE(ruda__config_find(start, found, sizeof found));
  snprintf(want, sizeof want, "%s/a/ruda.toml", root);
  ASSERT_STR_EQ(found, want);
  /* Too small a buffer finds nothing rather than a truncated path. */
  char tiny[8];
  ASSERT_FALSE(ruda__config_find(start, tiny, sizeof tiny));
  ASSERT_FALSE(ruda__config_find("", found, sizeof found));
  ASSERT_FALSE(ruda__config_find(NULL, found, sizeof found));
  ASSERT_FALSE(ruda__config_find("relative-dir-that-does-not-exist", found, sizeof found));
}

TEST(load_searches_from_the_current_directory) {
  clear_env();
  char root[600], start[700], cwd[PATH_MAX];
  make_tree(root, sizeof root);
  ASSERT_NOT_NULL(getcwd(cwd, sizeof cwd));
  snprintf(start, sizeof start, "%s/a/b/c/d", root);
  ASSERT_EQ(chdir(start), 0);
  ruda_config_t c;
  ruda_status_t st = ruda_config_load(&c);
  ASSERT_EQ(chdir(cwd), 0);
  ASSERT_OK(st);
  ASSERT_EQ(c.cpu.threads, 2);
  ASSERT_STR_CONTAINS(c.source, "/a/b/ruda.toml");
  /* RUDA_CONFIG names the file instead. */
  char p[800];
  snprintf(p, sizeof p, "%s/a/ruda.toml", root);
  setenv("RUDA_CONFIG", p, 1);
  ASSERT_OK(ruda_config_load(&c));
  ASSERT_EQ(c.cpu.threads, 1);
  snprintf(p, sizeof p, "%s/missing.toml", root);
  setenv("RUDA_CONFIG", p, 1);
  ASSERT_ERR_KIND(ruda_config_load(&c), RUDA_ERR_CONFIG);
  clear_env();
  ASSERT_ERR_KIND(ruda_config_load(NULL), RUDA_ERR_INVALID_ARGUMENT);
}

TEST(environment_overrides) {
  clear_env();
  ruda_config_t c;
  ruda_config_default(&c);
  static const char *const env[][2] = {
      {"RUDA_LOG_COMPILATION", "full"},      {"RUDA_LOG_MEMORY", "basic:stdout"},
      {"RUDA_LOG_STREAMING", "full:/tmp/ruda-streams.log"},
      {"RUDA_LOG_PROFILING", "medium:stderr"}, {"RUDA_CHECK_MODE", "enforce"},
      {"RUDA_FP_CONTRACT", "off"},           {"RUDA_MAX_STREAMS", "32"},
      {"RUDA_STREAM_PRIORITY", "low"},       {"RUDA_PERSISTENT_MEMORY", "disabled"},
      {"RUDA_COMPILATION_CACHE", "target"},  {"RUDA_CPU_THREADS", "3"},
      {"RUDA_TRACE", "/tmp/t.json"}};
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) setenv(env[i][0], env[i][1], 1);
  c.compilation.logger.to_stdout = true; /* kept: no sink given */
  ASSERT_OK(ruda_config_apply_env(&c));
  ASSERT_EQ(c.compilation.logger.level, RUDA_LOG_LEVEL_FULL);
  ASSERT_TRUE(c.compilation.logger.to_stdout);
  ASSERT_EQ(c.memory.logger.level, RUDA_LOG_LEVEL_BASIC);
  ASSERT_TRUE(c.memory.logger.to_stdout);
  ASSERT_EQ(c.streaming.logger.level, RUDA_LOG_LEVEL_FULL);
  ASSERT_STR_EQ(c.streaming.logger.file, "/tmp/ruda-streams.log");
  ASSERT_TRUE(c.streaming.logger.append);
  ASSERT_EQ(c.profiling.logger.level, RUDA_LOG_LEVEL_MEDIUM);
  ASSERT_TRUE(c.profiling.logger.to_stderr);
  ASSERT_EQ(c.compilation.check_mode, RUDA_BOUNDS_ENFORCE);
  ASSERT_EQ(c.compilation.fp_contract, RUDA_FP_CONTRACT_OFF);
  ASSERT_EQ(c.streaming.max_streams, 32);
  ASSERT_EQ(c.streaming.priority, RUDA_STREAM_PRIORITY_LOW);
  ASSERT_EQ(c.memory.persistent_memory, RUDA_PERSISTENT_MEMORY_DISABLED);
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_TARGET);
  ASSERT_EQ(c.cpu.threads, 3);
  ASSERT_STR_EQ(c.trace.file, "/tmp/t.json");
  /* A sink replaces the file's sinks. */
  ruda_config_t d = parse_ok("[memory.logger]\nlevel = \"full\"\nfile = \"a.log\"\nstderr = true\n");
  setenv("RUDA_LOG_MEMORY", "basic:stdout", 1);
  ASSERT_OK(ruda_config_apply_env(&d));
  ASSERT_STR_EQ(d.memory.logger.file, "");
  ASSERT_FALSE(d.memory.logger.to_stderr);
  ASSERT_TRUE(d.memory.logger.to_stdout);
  clear_env();
  /* Cache forms and an empty RUDA_TRACE (tracing off). */
  setenv("RUDA_COMPILATION_CACHE", "./kcache", 1);
  setenv("RUDA_TRACE", "", 1);
  ASSERT_OK(ruda_config_apply_env(&c));
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_FILE);
  ASSERT_STR_EQ(c.compilation.cache.file, "./kcache");
  ASSERT_STR_EQ(c.trace.file, "");
  setenv("RUDA_COMPILATION_CACHE", "none", 1);
  ASSERT_OK(ruda_config_apply_env(&c));
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_NONE);
  clear_env();
  setenv("RUDA_CACHE_DIR", "/var/tmp/k", 1);
  ASSERT_OK(ruda_config_apply_env(&c));
  ASSERT_EQ(c.compilation.cache.location, RUDA_CACHE_LOCATION_FILE);
  ASSERT_STR_EQ(c.compilation.cache.file, "/var/tmp/k");
  /* Empty values count as unset. */
  clear_env();
  setenv("RUDA_MAX_STREAMS", "", 1);
  ASSERT_OK(ruda_config_apply_env(&c));
  ASSERT_EQ(c.streaming.max_streams, 32);
  clear_env();
  ASSERT_ERR_KIND(ruda_config_apply_env(NULL), RUDA_ERR_INVALID_ARGUMENT);
}

static void expect_env_error(const char *var, const char *value, const char *why) {
  clear_env();
  setenv(var, value, 1);
  ruda_config_t c;
  ruda_config_default(&c);
  ruda_status_t st = ruda_config_apply_env(&c);
  clear_env();
  RT_CHECK_(st != NULL, "%s=%s accepted", var, value);
  char *m = ruda_status_to_string(st);
  bool ok = ruda_status_kind(st) == RUDA_ERR_CONFIG && ruda_status_key(st) &&
            strcmp(ruda_status_key(st), var) == 0 && strstr(ruda_status_reason(st), why) &&
            strstr(ruda_status_reason(st), var);
  if (!ok) fprintf(stderr, "%s=%s: expected ~ \"%s\", got:\n%s\n", var, value, why, m);
  free(m);
  ruda_status_free(st);
  RT_CHECK_(ok, "wrong error for %s=%s", var, value);
}

TEST(environment_errors) {
  expect_env_error("RUDA_LOG_COMPILATION", "medium", "with level \"disabled\", \"basic\" or \"full\"");
  expect_env_error("RUDA_LOG_MEMORY", "loud:stdout", "expected level[:sink]");
  expect_env_error("RUDA_LOG_STREAMING", "basic:", "empty sink");
  expect_env_error("RUDA_LOG_PROFILING", "averyveryverylonglevelname", "expected level[:sink]");
  expect_env_error("RUDA_CHECK_MODE", "strict", "\"enforce\", \"validate\" or \"auto\"");
  expect_env_error("RUDA_FP_CONTRACT", "on", "\"fast\" or \"off\"");
  expect_env_error("RUDA_MAX_STREAMS", "0", "from 1 to 255");
  expect_env_error("RUDA_MAX_STREAMS", "256", "from 1 to 255");
  expect_env_error("RUDA_MAX_STREAMS", "12x", "from 1 to 255");
  expect_env_error("RUDA_MAX_STREAMS", "-3", "from 1 to 255");
  expect_env_error("RUDA_MAX_STREAMS", "99999999999999999999999", "from 1 to 255");
  expect_env_error("RUDA_STREAM_PRIORITY", "max", "\"default\", \"low\" or \"high\"");
  expect_env_error("RUDA_PERSISTENT_MEMORY", "yes", "\"enabled\", \"disabled\" or \"enforced\"");
  expect_env_error("RUDA_COMPILATION_CACHE", "somewhere", "a path starting with '/' or '.'");
  expect_env_error("RUDA_CPU_THREADS", "many", "from 0 to 65535");
  char *longv = malloc(RUDA_CONFIG_PATH_MAX + 2);
  memset(longv, 'x', RUDA_CONFIG_PATH_MAX);
  longv[0] = '/';
  longv[RUDA_CONFIG_PATH_MAX] = '\0';
  expect_env_error("RUDA_TRACE", longv, "path longer than");
  expect_env_error("RUDA_CACHE_DIR", longv, "path longer than");
  free(longv);
}

/* The CPU backend's variables follow the same rules as every other one. */
TEST(cpu_variables) {
  clear_env();
  ruda_config_t c;
  ruda_config_default(&c);
  ASSERT_EQ(c.cpu.devices, 1);
  ASSERT_UEQ(c.cpu.spin, RUDA_CPU_SPIN_AUTO);
  ASSERT_UEQ(c.cpu.memory_limit, 0);
  setenv("RUDA_CPU_DEVICES", "3", 1);
  setenv("RUDA_CPU_SPIN", "0", 1);
  setenv("RUDA_CPU_MEMORY_LIMIT", "1M", 1);
  ASSERT_OK(ruda_config_apply_env(&c));
  ASSERT_EQ(c.cpu.devices, 3);
  ASSERT_UEQ(c.cpu.spin, 0);
  ASSERT_UEQ(c.cpu.memory_limit, 1u << 20);
  static const struct {
    const char *text;
    uint64_t bytes;
  } sizes[] = {{"0", 0},           {"4096", 4096},         {"4096B", 4096},
               {"64MiB", 64u << 20}, {"2K", 2048},          {"3KiB", 3072},
               {"1G", 1ull << 30}, {"2GiB", 2ull << 30},   {"1T", 1ull << 40},
               {"16777215TiB", 16777215ull << 40}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    setenv("RUDA_CPU_MEMORY_LIMIT", sizes[i].text, 1);
    ASSERT_OK(ruda_config_apply_env(&c));
    ASSERT_UEQ(c.cpu.memory_limit, sizes[i].bytes);
  }
  setenv("RUDA_CPU_SPIN", "auto", 1);
  ASSERT_OK(ruda_config_apply_env(&c));
  ASSERT_UEQ(c.cpu.spin, RUDA_CPU_SPIN_AUTO);
  clear_env();
  expect_env_error("RUDA_CPU_DEVICES", "abc", "from 1 to 64");
  expect_env_error("RUDA_CPU_DEVICES", "0", "from 1 to 64");
  expect_env_error("RUDA_CPU_DEVICES", "65", "from 1 to 64");
  expect_env_error("RUDA_CPU_SPIN", "-1", "from 0 to 100000000 or \"auto\"");
  expect_env_error("RUDA_CPU_SPIN", "100000001", "from 0 to 100000000");
  expect_env_error("RUDA_CPU_SPIN", "4294967295", "from 0 to 100000000");
  const char *bad_sizes[] = {"abc", "-1", "1 M", "1MB", "1m", "64mib", "1.5G", "M", "",
                             "16777216TiB", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
    if (!bad_sizes[i][0]) continue; /* empty counts as unset */
    expect_env_error("RUDA_CPU_MEMORY_LIMIT", bad_sizes[i], "a size in bytes");
  }
  /* The file takes the same values. */
  ruda_config_t f = parse_ok("[cpu]\ndevices = 4\nspin = \"auto\"\nmemory_limit = \"64MiB\"\n");
  ASSERT_EQ(f.cpu.devices, 4);
  ASSERT_UEQ(f.cpu.spin, RUDA_CPU_SPIN_AUTO);
  ASSERT_UEQ(f.cpu.memory_limit, 64u << 20);
  f = parse_ok("[cpu]\nspin = 500\nmemory_limit = 4096\n");
  ASSERT_UEQ(f.cpu.spin, 500);
  ASSERT_UEQ(f.cpu.memory_limit, 4096);
  expect_error("[cpu]\ndevices = 65\n", 2, "cpu.devices", "expected an integer from 1 to 64, found 65");
  expect_error("[cpu]\nspin = -1\n", 2, "cpu.spin", "from 0 to 100000000 or \"auto\", found -1");
  expect_error("[cpu]\nspin = \"fast\"\n", 2, "cpu.spin", "found a string");
  expect_error("[cpu]\nmemory_limit = \"1 M\"\n", 2, "cpu.memory_limit", "a size in bytes");
  expect_error("[cpu]\nmemory_limit = -5\n", 2, "cpu.memory_limit", "a size in bytes");
  expect_error("[cpu]\nmemory_limit = true\n", 2, "cpu.memory_limit", "found a boolean");
}

/* ruda_config_set applies the loader's rules to the fields it is given:
 * the first bad field is named, and nothing is installed. */
static void expect_set_error(const ruda_config_t *cfg, const char *key, const char *why) {
  ruda__config_reset_for_test();
  ruda_status_t st = ruda_config_set(cfg);
  RT_CHECK_(st != NULL, "ruda_config_set accepted a bad %s", key);
  char *m = ruda_status_to_string(st);
  bool ok = ruda_status_kind(st) == RUDA_ERR_CONFIG && ruda_status_key(st) &&
            strcmp(ruda_status_key(st), key) == 0 && strstr(ruda_status_reason(st), why);
  if (!ok) fprintf(stderr, "%s: expected ~ \"%s\", got:\n%s\n", key, why, m);
  free(m);
  ruda_status_free(st);
  RT_CHECK_(ok, "wrong error for a bad %s", key);
  /* Nothing was installed: a good configuration can still be set. */
  ruda_config_t good;
  ruda_config_default(&good);
  good.streaming.max_streams = 3;
  ASSERT_OK(ruda_config_set(&good));
  ASSERT_EQ(ruda_config_get()->streaming.max_streams, 3);
  ruda__config_reset_for_test();
}

TEST(set_validates_like_the_loader) {
  clear_env();
  ruda_config_t c;
#define BAD(field_stmt, key, why)   \
  do {                              \
    ruda_config_default(&c);        \
    field_stmt;                     \
    expect_set_error(&c, key, why); \
  } while (0)
  BAD(c.streaming.max_streams = 1000, "streaming.max_streams",
      "expected an integer from 1 to 255, found 1000");
  BAD(c.streaming.max_streams = 0, "streaming.max_streams", "from 1 to 255, found 0");
  BAD(c.cpu.threads = 70000, "cpu.threads", "from 0 to 65535");
  BAD(c.cpu.devices = 0, "cpu.devices", "from 1 to 64");
  BAD(c.cpu.spin = 100000001, "cpu.spin", "from 0 to 100000000");
  BAD(c.compilation.check_mode = (ruda_bounds_check_mode_t)7, "compilation.check_mode",
      "\"enforce\", \"validate\" or \"auto\", found 7");
  BAD(c.compilation.fp_contract = (ruda_fp_contract_t)2, "compilation.fp_contract",
      "\"fast\" or \"off\", found 2");
  BAD(c.streaming.priority = (ruda_stream_priority_t)-1, "streaming.priority", "found -1");
  BAD(c.memory.persistent_memory = (ruda_persistent_memory_t)3, "memory.persistent_memory",
      "\"enabled\", \"disabled\" or \"enforced\"");
  BAD(c.memory.logger.level = RUDA_LOG_LEVEL_MEDIUM, "memory.logger.level",
      "\"disabled\", \"basic\" or \"full\", found 3");
  BAD(c.profiling.logger.level = (ruda_log_level_t)9, "profiling.logger.level", "found 9");
  BAD(memset(c.trace.file, 'x', sizeof c.trace.file), "trace.file", "NUL-terminated path");
  BAD(memset(c.streaming.logger.file, '/', sizeof c.streaming.logger.file),
      "streaming.logger.file", "NUL-terminated path");
  BAD(memset(c.source, 'a', sizeof c.source), "source", "NUL-terminated path");
  BAD(c.compilation.cache.location = (ruda_cache_location_t)99, "compilation.cache",
      "found location 99");
  BAD(c.compilation.cache.location = RUDA_CACHE_LOCATION_FILE, "compilation.cache.file",
      "a path");
  BAD(memset(c.compilation.cache.file, 'k', sizeof c.compilation.cache.file),
      "compilation.cache.file", "NUL-terminated path");
  BAD(memset(&c.memory.logger.append, 7, 1), "memory.logger.append", "a boolean");
#undef BAD
  /* Every valid value passes. */
  ruda_config_default(&c);
  c.cpu.spin = 0;
  c.cpu.memory_limit = UINT64_MAX;
  c.compilation.cache.location = RUDA_CACHE_LOCATION_FILE;
  strcpy(c.compilation.cache.file, "/tmp/k");
  c.profiling.logger.level = RUDA_LOG_LEVEL_MEDIUM;
  ruda__config_reset_for_test();
  ASSERT_OK(ruda_config_set(&c));
  ruda__config_reset_for_test();
}

TEST(process_wide_get_and_set) {
  clear_env();
  ruda__config_reset_for_test();
  ruda_config_t mine;
  ruda_config_default(&mine);
  mine.streaming.max_streams = 9;
  setenv("RUDA_MAX_STREAMS", "77", 1); /* not applied to a set config */
  ASSERT_OK(ruda_config_set(&mine));
  ASSERT_ERR_KIND(ruda_config_set(&mine), RUDA_ERR_INVALID_ARGUMENT); /* twice */
  const ruda_config_t *g = ruda_config_get();
  ASSERT_NOT_NULL(g);
  ASSERT_EQ(g->streaming.max_streams, 9);
  ASSERT_PTR_EQ(ruda_config_get(), g);
  ASSERT_ERR_KIND(ruda_config_set(&mine), RUDA_ERR_INVALID_ARGUMENT); /* after get */
  ASSERT_ERR_KIND(ruda_config_set(NULL), RUDA_ERR_INVALID_ARGUMENT);
  /* Without set: loaded, with the environment. */
  ruda__config_reset_for_test();
  g = ruda_config_get();
  ASSERT_EQ(g->streaming.max_streams, 77);
  clear_env();
  ruda__config_reset_for_test();
}

TEST(get_survives_a_bad_file_and_bad_variables) {
  clear_env();
  char path[600];
  snprintf(path, sizeof path, "%s/bad_for_get.toml", rt_tmpdir());
  rt_write_file(path, "[streaming]\nmax_streams = 1000\n");
  setenv("RUDA_CONFIG", path, 1);
  setenv("RUDA_CPU_THREADS", "5", 1);
  setenv("RUDA_CHECK_MODE", "bogus", 1);
  ruda__config_reset_for_test();
  const ruda_config_t *g = ruda_config_get(); /* reports on stderr */
  ASSERT_NOT_NULL(g);
  ASSERT_EQ(g->streaming.max_streams, 128);           /* defaults */
  ASSERT_EQ(g->cpu.threads, 5);                       /* valid variables apply */
  ASSERT_EQ(g->compilation.check_mode, RUDA_BOUNDS_AUTO); /* bad ones do not */
  clear_env();
  ruda__config_reset_for_test();
}

TEST(cache_directory) {
  ruda_config_t c;
  ruda_config_default(&c);
  char buf[2048], cwd[PATH_MAX], want[PATH_MAX + 64];
  ASSERT_NOT_NULL(getcwd(cwd, sizeof cwd));
  c.compilation.cache.location = RUDA_CACHE_LOCATION_NONE;
  ASSERT_UEQ(ruda_config_cache_dir(&c, buf, sizeof buf), 0);
  ASSERT_STR_EQ(buf, "");
  c.compilation.cache.location = RUDA_CACHE_LOCATION_LOCAL;
  ruda_config_cache_dir(&c, buf, sizeof buf);
  snprintf(want, sizeof want, "%s/.ruda-cache", cwd);
  ASSERT_STR_EQ(buf, want);
  c.compilation.cache.location = RUDA_CACHE_LOCATION_TARGET;
  strcpy(c.source, "/proj/sub/ruda.toml");
  ruda_config_cache_dir(&c, buf, sizeof buf);
  ASSERT_STR_EQ(buf, "/proj/sub/target/ruda-cache");
  c.source[0] = '\0';
  char *old_xdg_cache = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  char *old_xdg_config = getenv("XDG_CONFIG_HOME") ? strdup(getenv("XDG_CONFIG_HOME")) : NULL;
  setenv("XDG_CACHE_HOME", "/xdg/cache", 1);
  ruda_config_cache_dir(&c, buf, sizeof buf);
  ASSERT_STR_EQ(buf, "/xdg/cache/ruda");
  /* The default: the user's cache directory. */
  c.compilation.cache.location = RUDA_CACHE_LOCATION_USER;
  ruda_config_cache_dir(&c, buf, sizeof buf);
  ASSERT_STR_EQ(buf, "/xdg/cache/ruda");
  c.compilation.cache.location = RUDA_CACHE_LOCATION_GLOBAL;
  setenv("XDG_CONFIG_HOME", "/xdg/config", 1);
  ruda_config_cache_dir(&c, buf, sizeof buf);
  ASSERT_STR_EQ(buf, "/xdg/config/ruda/cache");
  if (old_xdg_cache) setenv("XDG_CACHE_HOME", old_xdg_cache, 1); else unsetenv("XDG_CACHE_HOME");
  if (old_xdg_config) setenv("XDG_CONFIG_HOME", old_xdg_config, 1); else unsetenv("XDG_CONFIG_HOME");
  free(old_xdg_cache);
  free(old_xdg_config);
  c.compilation.cache.location = RUDA_CACHE_LOCATION_FILE;
  strcpy(c.compilation.cache.file, "/k/c");
  size_t n = ruda_config_cache_dir(&c, buf, 3);
  ASSERT_UEQ(n, 4);
  ASSERT_STR_EQ(buf, "/k");
  ASSERT_UEQ(ruda_config_cache_dir(&c, NULL, 0), 4);
  ASSERT_UEQ(ruda_config_cache_dir(NULL, buf, sizeof buf), 0);
}

TEST(out_of_memory_while_parsing) {
  const char *text =
      "[compilation]\nlogger = { level = \"full\", file = \"a.log\" }\ncache = { file = \"k\" }\n"
      "[streaming]\nmax_streams = 4\n";
  bool done = false;
  for (int64_t n = 0; n < 1000 && !done; n++) {
    ruda_config_t c;
    ruda__test_fail_alloc_after(n);
    ruda_status_t st = ruda_config_parse(text, strlen(text), "oom.toml", &c);
    ruda__test_fail_alloc_after(-1);
    if (st) {
      ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
      ASSERT_EQ(c.streaming.max_streams, 128);
      ruda_status_free(st);
    } else {
      ASSERT_EQ(c.streaming.max_streams, 4);
      ASSERT_STR_EQ(c.compilation.cache.file, "k");
      done = true;
    }
  }
  ASSERT_TRUE(done);
}

TEST(cpu_compiler_settings) {
  ruda_config_t cfg;
  ruda_config_default(&cfg);
  ASSERT_STR_EQ(cfg.compilation.cpu_compiler, "");
  ASSERT_STR_EQ(cfg.compilation.cpu_flags, "-O3 -march=native");
  static const char text[] = "[compilation]\ncpu_compiler = \"clang\"\ncpu_flags = \"-O2\"\n";
  ASSERT_OK(ruda_config_parse(text, sizeof text - 1, "ruda.toml", &cfg));
  ASSERT_STR_EQ(cfg.compilation.cpu_compiler, "clang");
  ASSERT_STR_EQ(cfg.compilation.cpu_flags, "-O2");
}

TEST(autotune_settings_and_their_errors) {
  ruda_config_t d;
  ruda_config_default(&d);
  ASSERT_EQ(d.autotune.level, RUDA_AUTOTUNE_BALANCED);
  ASSERT_UEQ(d.autotune.budget_ms, 1000);
  ASSERT_TRUE(d.autotune.cache);
  ASSERT_STR_EQ(d.autotune.pin, "");
  ruda_config_t c = parse_ok("[autotune]\nlevel = \"full\"\nbudget_ms = 250\ncache = false\n"
                             "pin = \"matmul_f32=b32x8_w4_k16_v4, sum_f32=u64_e64_2pass\"\n"
                             "logger = { level = \"basic\", stderr = true }\n");
  ASSERT_EQ(c.autotune.level, RUDA_AUTOTUNE_FULL);
  ASSERT_UEQ(c.autotune.budget_ms, 250);
  ASSERT_FALSE(c.autotune.cache);
  ASSERT_STR_CONTAINS(c.autotune.pin, "sum_f32=u64_e64_2pass");
  ASSERT_EQ(c.autotune.logger.level, RUDA_LOG_LEVEL_BASIC);
  ASSERT_PTR_EQ(ruda_config_logger(&c, RUDA_LOG_CHANNEL_AUTOTUNE), &c.autotune.logger);
  ASSERT_STR_EQ(ruda_log_channel_name(RUDA_LOG_CHANNEL_AUTOTUNE), "autotune");
  expect_error("[autotune]\nlevel = \"fast\"\n", 2, "autotune.level",
               "expected \"off\", \"minimal\", \"balanced\" or \"full\", found \"fast\"");
  expect_error("[autotune]\nbudget_ms = 0\n", 2, "autotune.budget_ms",
               "expected an integer from 1 to 3600000, found 0");
  expect_error("[autotune]\ncache = \"yes\"\n", 2, "autotune.cache", "expected a boolean");
  expect_error("[autotune]\npin = \"matmul_f32\"\n", 2, "autotune.pin", "op=candidate");
  expect_error("[autotune]\npin = \"a=b,,c=d\"\n", 2, "autotune.pin", "op=candidate");
  expect_error("[autotune]\nrepetitions = 3\n", 2, "autotune.repetitions", "unknown key");
  /* The environment, with the same rules. */
  ruda_config_t e;
  ruda_config_default(&e);
  setenv("RUDA_AUTOTUNE_LEVEL", "off", 1);
  setenv("RUDA_AUTOTUNE_CACHE", "0", 1);
  setenv("RUDA_AUTOTUNE_PIN", "sum_f32=u256_e16_1pass", 1);
  ASSERT_OK(ruda_config_apply_env(&e));
  ASSERT_EQ(e.autotune.level, RUDA_AUTOTUNE_OFF);
  ASSERT_FALSE(e.autotune.cache);
  ASSERT_STR_EQ(e.autotune.pin, "sum_f32=u256_e16_1pass");
  unsetenv("RUDA_AUTOTUNE_LEVEL");
  unsetenv("RUDA_AUTOTUNE_CACHE");
  unsetenv("RUDA_AUTOTUNE_PIN");
  const char *bad[][3] = {{"RUDA_AUTOTUNE_LEVEL", "fastest", "expected \"off\""},
                          {"RUDA_AUTOTUNE_BUDGET_MS", "0", "an integer from 1 to 3600000"},
                          {"RUDA_AUTOTUNE_CACHE", "maybe", "expected \"true\""},
                          {"RUDA_AUTOTUNE_PIN", "=x", "op=candidate"}};
  for (size_t i = 0; i < 4; i++) {
    ruda_config_default(&e);
    setenv(bad[i][0], bad[i][1], 1);
    ruda_status_t st = ruda_config_apply_env(&e);
    unsetenv(bad[i][0]);
    ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
    ASSERT_STR_CONTAINS(ruda_status_reason(st), bad[i][0]);
    ASSERT_STR_CONTAINS(ruda_status_reason(st), bad[i][2]);
    ruda_status_free(st);
  }
  /* ruda_config_set checks the fields too. */
  ruda_config_default(&e);
  e.autotune.budget_ms = 0;
  ruda_status_t st = ruda__config_validate(&e);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
  ASSERT_STR_EQ(ruda_status_key(st), "autotune.budget_ms");
  ruda_status_free(st);
  ruda_config_default(&e);
  strcpy(e.autotune.pin, "no equals sign");
  st = ruda__config_validate(&e);
  ASSERT_STR_EQ(ruda_status_key(st), "autotune.pin");
  ruda_status_free(st);
}
