/* Log channels: levels, sinks (files, stderr), deduplication, threads, the
 * lazy setup from the configuration, and the balanced name format. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config_internal.h"
#include "ruda/config.h"
#include "ruda/log.h"
#include "ruda/status.h"
#include "test.h"

static size_t count_lines(const char *s) {
  size_t n = 0;
  for (; s && *s; s++) n += *s == '\n';
  return n;
}

static void tmp_path(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", rt_tmpdir(), name);
}

/* The file at `path` holds exactly `want`. */
static void expect_file(const char *path, const char *want) {
  char *text = rt_read_file(path);
  ASSERT_STR_EQ(text, want);
  free(text);
}

/* Points `l` at the file `path` with `level`, truncating it. */
static void to_file(ruda_logger_config_t *l, ruda_log_level_t level, const char *path) {
  l->level = level;
  l->append = false;
  snprintf(l->file, sizeof l->file, "%s", path);
}

/* Configures logging from the defaults with only channel `ch` on, at
 * `level`, into the new file `name` of the temporary directory, whose path
 * goes to `path`. */
static void configure_file(ruda_log_channel_t ch, ruda_log_level_t level, const char *name,
                           char *path, size_t cap) {
  tmp_path(path, cap, name);
  ruda_config_t c;
  ruda_config_default(&c);
  ruda_logger_config_t *l = ch == RUDA_LOG_CHANNEL_MEMORY      ? &c.memory.logger
                            : ch == RUDA_LOG_CHANNEL_STREAMING ? &c.streaming.logger
                            : ch == RUDA_LOG_CHANNEL_PROFILING ? &c.profiling.logger
                                                               : &c.compilation.logger;
  to_file(l, level, path);
  ASSERT_OK(ruda_log_configure(&c));
}

/* ---- balanced names ------------------------------------------------------ */

static void expect_balanced(const char *name, const char *want) {
  rt_expect_text_format(ruda_name_balanced, name, want);
}

TEST(balanced_reference_example) {
  expect_balanced(
      "burn_cubecl::kernel::unary_numeric::unary_numeric::UnaryNumeric<f32, "
      "burn_cubecl::tensor::base::CubeTensor<_>::copy::Copy, "
      "cubecl_cuda::runtime::CudaRuntime>",
      "UnaryNumeric | f32 | CubeTensor | Copy | CudaRuntime");
}

TEST(balanced_other_shapes) {
  expect_balanced("triad_f32", "triad_f32");
  expect_balanced("ruda::kernels::Fill", "Fill");
  expect_balanced("a::B<c::D<e::F>, G>", "B | D | F | G");
  expect_balanced("Matmul<(f16, f32), &'static str, [u8; 4]>", "Matmul | f16 | f32 | str | u8 | 4");
  expect_balanced("Reduce<_, _>", "Reduce");
  expect_balanced("", "");
  expect_balanced("<>::", "");
  expect_balanced(NULL, "");
}

TEST(balanced_truncates_like_snprintf) {
  char buf[8];
  memset(buf, 'x', sizeof buf);
  size_t n = ruda_name_balanced("x::Alpha<Beta>", buf, sizeof buf);
  ASSERT_UEQ(n, strlen("Alpha | Beta"));
  ASSERT_STR_EQ(buf, "Alpha |");
  ASSERT_UEQ(ruda_name_balanced("x::Alpha<Beta>", NULL, 0), n);
  char one[1] = {'x'};
  ruda_name_balanced("Alpha", one, 1);
  ASSERT_EQ(one[0], '\0');
}

/* ---- levels -------------------------------------------------------------- */

TEST(levels_follow_the_configuration) {
  ruda_config_t c;
  ruda_config_default(&c);
  char path[600];
  tmp_path(path, sizeof path, "levels.log");
  c.profiling.logger.level = RUDA_LOG_LEVEL_MEDIUM;
  snprintf(c.profiling.logger.file, sizeof c.profiling.logger.file, "%s", path);
  c.memory.logger.level = RUDA_LOG_LEVEL_BASIC;
  snprintf(c.memory.logger.file, sizeof c.memory.logger.file, "%s", path);
  ASSERT_OK(ruda_log_configure(&c));
  ASSERT_TRUE(ruda_log_enabled(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_MINIMAL));
  ASSERT_TRUE(ruda_log_enabled(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_MEDIUM));
  ASSERT_FALSE(ruda_log_enabled(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_FULL));
  ASSERT_TRUE(ruda_log_enabled(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_BASIC));
  ASSERT_FALSE(ruda_log_enabled(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL));
  ASSERT_FALSE(ruda_log_enabled(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_BASIC));
  ASSERT_FALSE(ruda_log_enabled(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_MINIMAL));
  ASSERT_FALSE(ruda_log_enabled(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_DISABLED));
  ASSERT_FALSE(ruda_log_enabled(RUDA_LOG_CHANNEL_COUNT_, RUDA_LOG_LEVEL_BASIC));
  ASSERT_FALSE(ruda_log_enabled((ruda_log_channel_t)-1, RUDA_LOG_LEVEL_BASIC));
  ASSERT_EQ(ruda_log_level(RUDA_LOG_CHANNEL_PROFILING), RUDA_LOG_LEVEL_MEDIUM);
  ASSERT_EQ(ruda_log_level(RUDA_LOG_CHANNEL_COUNT_), RUDA_LOG_LEVEL_DISABLED);

  /* Only enabled messages reach the sink; both channels share the file. */
  ruda_log(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_MEDIUM, "kernel %s took %d us", "fill", 12);
  ruda_log(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_FULL, "not written");
  ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_BASIC, "reserved %d bytes\n", 64);
  ruda_log(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_BASIC, "not written either");
  ruda_log_shutdown();
  expect_file(path, "[ruda profiling] kernel fill took 12 us\n"
              "[ruda memory] reserved 64 bytes\n");
}

TEST(file_sinks_append_truncate_and_parent_dirs) {
  char dir[600], path[700];
  tmp_path(dir, sizeof dir, "nested");
  snprintf(path, sizeof path, "%s/deeper/still/c.log", dir);
  ruda_config_t c;
  ruda_config_default(&c);
  to_file(&c.compilation.logger, RUDA_LOG_LEVEL_FULL, path);
  ASSERT_OK(ruda_log_configure(&c));
  ruda_log(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_BASIC, "one");
  /* Flushed per line: visible before the sink is closed. */
  expect_file(path, "[ruda compilation] one\n");
  ruda_log_shutdown();
  /* append = true keeps what is there. */
  c.compilation.logger.append = true;
  ASSERT_OK(ruda_log_configure(&c));
  ruda_log(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_FULL, "two");
  ruda_log_shutdown();
  expect_file(path, "[ruda compilation] one\n[ruda compilation] two\n");
  /* append = false truncates. */
  c.compilation.logger.append = false;
  ASSERT_OK(ruda_log_configure(&c));
  ruda_log(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_FULL, "three");
  ruda_log_shutdown();
  expect_file(path, "[ruda compilation] three\n");
}

TEST(same_file_is_one_sink) {
  char path[600], alias[700];
  tmp_path(path, sizeof path, "shared.log");
  /* The same file spelled differently, opened in truncate mode by both
   * channels: one sink, so the second open does not wipe the first line. */
  snprintf(alias, sizeof alias, "%s/./shared.log", rt_tmpdir());
  FILE *f = fopen(path, "w");
  fclose(f);
  ruda_config_t c;
  ruda_config_default(&c);
  to_file(&c.streaming.logger, RUDA_LOG_LEVEL_FULL, path);
  to_file(&c.memory.logger, RUDA_LOG_LEVEL_FULL, alias);
  ASSERT_OK(ruda_log_configure(&c));
  ruda_log(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_FULL, "s");
  ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL, "m");
  ruda_log(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_FULL, "s2");
  ruda_log_shutdown();
  expect_file(path, "[ruda streaming] s\n[ruda memory] m\n[ruda streaming] s2\n");
}

/* Runs `fn` with fd 2 pointing at a file and returns what was written. */
static char *capture_stderr(void (*fn)(void)) {
  char path[600];
  tmp_path(path, sizeof path, "stderr.txt");
  fflush(stderr);
  int saved = dup(2);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  close(fd);
  fn();
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  return rt_read_file(path);
}

static void log_to_stderr_sinks(void) {
  ruda_config_t c;
  ruda_config_default(&c);
  c.streaming.logger.level = RUDA_LOG_LEVEL_BASIC; /* no sink: stderr */
  c.memory.logger.level = RUDA_LOG_LEVEL_BASIC;
  c.memory.logger.to_stderr = true;
  ruda_status_t st = ruda_log_configure(&c);
  ruda_status_free(st);
  ruda_log(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_BASIC, "to stderr by default");
  ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_BASIC, "to stderr explicitly");
  ruda_log_shutdown();
}

TEST(stderr_sink_and_default_sink) {
  char *text = capture_stderr(log_to_stderr_sinks);
  ASSERT_STR_EQ(text,
                "[ruda streaming] to stderr by default\n"
                "[ruda memory] to stderr explicitly\n");
  free(text);
}

TEST(unopenable_file_is_reported_and_skipped) {
  char blocker[600], bad[700], good[700];
  tmp_path(blocker, sizeof blocker, "not_a_dir");
  FILE *f = fopen(blocker, "w");
  fclose(f);
  snprintf(bad, sizeof bad, "%s/x.log", blocker); /* parent is a file */
  tmp_path(good, sizeof good, "good.log");
  ruda_config_t c;
  ruda_config_default(&c);
  c.compilation.logger.level = RUDA_LOG_LEVEL_BASIC;
  snprintf(c.compilation.logger.file, sizeof c.compilation.logger.file, "%s", bad);
  to_file(&c.memory.logger, RUDA_LOG_LEVEL_BASIC, good);
  ruda_status_t st = ruda_log_configure(&c);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_CONFIG);
  ASSERT_STR_EQ(ruda_status_file(st), bad);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "cannot open the log file");
  ruda_status_free(st);
  ruda_log(RUDA_LOG_CHANNEL_COMPILATION, RUDA_LOG_LEVEL_BASIC, "goes nowhere, no crash");
  ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_BASIC, "still written");
  ruda_log_shutdown();
  expect_file(good, "[ruda memory] still written\n");
}

TEST(long_messages) {
  char path[600];
  configure_file(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL, "long.log", path, sizeof path);
  char *big = malloc(5000);
  memset(big, 'y', 4999);
  big[4999] = '\0';
  ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL, "%s", big);
  ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL, "%s", "");
  ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL, NULL);
  ruda_log_shutdown();
  char *text = rt_read_file(path);
  ASSERT_UEQ(strlen(text), strlen("[ruda memory] ") + 4999 + 1 + strlen("[ruda memory] \n"));
  ASSERT_EQ(count_lines(text), 2);
  free(text);
  free(big);
}

enum { THREADS = 8, LINES = 500 };

static void *log_thread(void *arg) {
  int id = (int)(intptr_t)arg;
  for (int i = 0; i < LINES; i++)
    if (ruda_log_enabled(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_BASIC))
      ruda_log(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_BASIC,
               "thread %d line %d ................................................", id, i);
  return NULL;
}

TEST(threads_never_interleave) {
  char path[600];
  configure_file(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_BASIC, "threads.log", path, sizeof path);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, log_thread, (void *)(intptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  ruda_log_shutdown();
  char *text = rt_read_file(path);
  ASSERT_UEQ(count_lines(text), THREADS * LINES);
  /* Every line is whole. */
  size_t good = 0;
  for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
    *nl = '\0';
    int id, i;
    char dots[80];
    if (sscanf(line, "[ruda streaming] thread %d line %d %79s", &id, &i, dots) == 3 &&
        strlen(dots) == 48 && strlen(line) < 120)
      good++;
  }
  ASSERT_UEQ(good, THREADS * LINES);
  free(text);
}

TEST(lazy_setup_from_the_process_configuration) {
  char path[600];
  tmp_path(path, sizeof path, "lazy.log");
  ruda__config_reset_for_test();
  ruda_config_t c;
  ruda_config_default(&c);
  to_file(&c.profiling.logger, RUDA_LOG_LEVEL_BASIC, path);
  ASSERT_OK(ruda_config_set(&c));
  ruda_log_shutdown(); /* forget any earlier setup */
  ASSERT_TRUE(ruda_log_enabled(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_BASIC));
  ruda_log(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_BASIC, "lazy");
  ruda_log_shutdown();
  expect_file(path, "[ruda profiling] lazy\n");
  /* configure(NULL) uses the process configuration too. */
  ASSERT_OK(ruda_log_configure(NULL));
  ASSERT_EQ(ruda_log_level(RUDA_LOG_CHANNEL_PROFILING), RUDA_LOG_LEVEL_BASIC);
  ruda_log_shutdown();
  ruda__config_reset_for_test();
}
