/* The CPU backend's run-time compile of portable kernel text
 * (backends/cpu/cpu_compile.c): the disk cache and what it refuses, the
 * compiler setting, the allowed options. The cache lives in this test's own
 * folder (RUDA_CACHE_DIR, set before ruda reads its configuration). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/cpu/cpu_compile.h"
#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

static char g_cache[1024];

static const char k_text[] =
    "#include <ruda/kernel_dialect.h>\n"
    "RUDA_KERNEL(triple, RUDA_DIM(32, 1, 1), RUDA_BUFFER(uint32_t *restrict, x),\n"
    "            RUDA_SCALAR(uint32_t, n)) {\n"
    "  RUDA_UNITS(u) { if (u.abs_x < n) x[u.abs_x] = x[u.abs_x] * FACTOR + u.abs_x; }\n"
    "}\n";

static ruda_client_t *client(void) {
  static ruda_client_t *c;
  if (!c) {
    if (!g_cache[0]) {
      snprintf(g_cache, sizeof g_cache, "%s/cache", rt_tmpdir());
      setenv("RUDA_CACHE_DIR", g_cache, 1);
    }
    ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &c));
  }
  return c;
}

static ruda_kernel_t *kernel(const char *factor_opt) {
  return test_kernel_from_text(k_text, "triple.c", factor_opt);
}

static ruda_status_t run(ruda_kernel_t *k, uint32_t factor, bool check) {
  ruda_client_t *c = client();
  enum { N = 100 };
  uint32_t x[N];
  for (uint32_t i = 0; i < N; i++) x[i] = i;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, x, sizeof x, &h));
  uint64_t n = N;
  ruda_kernel_args_t args = {
      .buffers = &h,
      .num_buffers = 1,
      .info = {.data = &n, .len = 1, .dynamic_metadata_offset = 1},
  };
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(4, 1, 1), &args);
  if (!s) s = ruda_client_read(c, &h, x, sizeof x);
  if (!s && check)
    for (uint32_t i = 0; i < N; i++) ASSERT_UEQ(x[i], i * factor + i);
  ruda_handle_release(&h);
  return s;
}

/* The one cache file of the kernel (the folder holds no other .so). */
static bool cache_file(char *out, size_t cap) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "ls %s/cpu/*.so 2>/dev/null | head -1", g_cache);
  FILE *p = popen(cmd, "r");
  if (!p) return false;
  bool ok = fgets(out, (int)cap, p) != NULL;
  pclose(p);
  if (ok) out[strcspn(out, "\n")] = '\0';
  return ok && out[0];
}

TEST(compiles_once_then_loads_from_the_disk_cache) {
  ruda_kernel_t *k = kernel("-DFACTOR=3");
  ruda__cpu_compile_stats_t a = ruda__cpu_compile_stats();
  ASSERT_OK(run(k, 3, true));
  ruda__cpu_compile_stats_t b = ruda__cpu_compile_stats();
  ASSERT_UEQ(b.compiles, a.compiles + 1);
  /* The folder is private, the file the user's. */
  char dir[1100], path[1200];
  snprintf(dir, sizeof dir, "%s/cpu", g_cache);
  struct stat st;
  ASSERT_EQ(stat(dir, &st), 0);
  ASSERT_UEQ(st.st_mode & 0777, 0700);
  ASSERT_TRUE(cache_file(path, sizeof path));
  ASSERT_EQ(stat(path, &st), 0);
  ASSERT_UEQ(st.st_mode & 077, 0);
  /* A second process (here: the table forgotten) loads instead of compiling. */
  ruda__cpu_compile_forget();
  ASSERT_OK(run(k, 3, true));
  ruda__cpu_compile_stats_t c = ruda__cpu_compile_stats();
  ASSERT_UEQ(c.compiles, b.compiles);
  ASSERT_UEQ(c.disk_hits, b.disk_hits + 1);
  /* In memory from then on. */
  ASSERT_OK(run(k, 3, true));
  ASSERT_UEQ(ruda__cpu_compile_stats().memory_hits, c.memory_hits + 1);
  ruda_kernel_release(k);
}

TEST(a_tampered_or_foreign_cache_file_is_never_loaded) {
  ruda_kernel_t *k = kernel("-DFACTOR=5");
  ASSERT_OK(run(k, 5, true));
  char path[1200];
  ASSERT_TRUE(cache_file(path, sizeof path));
  /* Every .so of the folder gets a flipped byte past the header: the
   * checksum no longer matches. */
  char cmd[1400];
  snprintf(cmd, sizeof cmd,
           "for f in %s/cpu/*.so; do printf '\\x7f' | dd of=\"$f\" bs=1 seek=100 conv=notrunc "
           "2>/dev/null; done",
           g_cache);
  ASSERT_EQ(system(cmd), 0);
  ruda__cpu_compile_forget();
  ruda__cpu_compile_stats_t a = ruda__cpu_compile_stats();
  ASSERT_OK(run(k, 5, true));
  ruda__cpu_compile_stats_t b = ruda__cpu_compile_stats();
  ASSERT_UGE(b.disk_skips, a.disk_skips + 1);
  ASSERT_UEQ(b.compiles, a.compiles + 1);
  ASSERT_UEQ(b.disk_hits, a.disk_hits);
  /* A file others may write is refused too. */
  snprintf(cmd, sizeof cmd, "chmod 0666 %s/cpu/*.so", g_cache);
  ASSERT_EQ(system(cmd), 0);
  ruda__cpu_compile_forget();
  a = ruda__cpu_compile_stats();
  ASSERT_OK(run(k, 5, true));
  b = ruda__cpu_compile_stats();
  ASSERT_UGE(b.disk_skips, a.disk_skips + 1);
  ASSERT_UEQ(b.disk_hits, a.disk_hits);
  ruda_kernel_release(k);
}

TEST(options_outside_the_allowed_set_are_refused_at_launch) {
  /* A kernel made with ruda_kernel_create directly reaches the check at
   * launch. */
  const char *opts[] = {"-DFACTOR=2", "-o/tmp/elsewhere"};
  ruda_kernel_code_t code = {RUDA_KERNEL_FORMAT_PORTABLE, k_text, 0, NULL, "triple", opts, 2,
                             "triple.c"};
  ruda_kernel_desc_t d = test_kernel_desc("triple", ruda_dim_new_1d(32), &code);
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ruda_status_t s = run(k, 2, false);
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "compile option \"-o/tmp/elsewhere\" is not allowed");
  free(text);
  ruda_status_free(s);
  ruda_kernel_release(k);
}

/* The natural form compiled at run time (one copy of the body, unswitched
 * on whether abs_x fits in 31 bits, then split at the bound: cpu.h's
 * RUDA__CPU_UNITS): bounds written each way round, inclusive, from below,
 * 64-bit and through `continue`, placed before, at and inside each of four
 * rudas, and past them all, give what one unit at a time would. */
static const char k_bounds_text[] =
    "#include <ruda/kernel_dialect.h>\n"
    "RUDA_KERNEL(bounds, RUDA_DIM(64, 1, 1), RUDA_BUFFER(uint32_t *restrict, out),\n"
    "            RUDA_SCALAR(uint32_t, n), RUDA_SCALAR(uint64_t, n64)) {\n"
    "  RUDA_UNITS_NOWAIT(u) {\n"
    "    uint32_t *o = out + 6 * u.abs_x;\n"
    "    if (u.abs_x < n) o[0] = u.abs_x;\n"
    "    if (n > u.abs_x) o[1] = u.abs_x + 1;\n"
    "    if (u.abs_x <= n) o[2] = u.abs_x + 2;\n"
    "    if (u.abs_x >= n) o[3] = u.abs_x + 3;\n"
    "    if (u.abs_x < n64) o[4] = u.abs_x + 4;\n"
    "    if (u.abs_x < n) continue;\n"
    "    o[5] = u.abs_x + 5;\n"
    "  }\n"
    "}\n";

TEST(the_natural_form_compiled_at_run_time_splits_at_any_bound) {
  ruda_client_t *c = client();
  ruda_kernel_t *k = test_kernel_from_text(k_bounds_text, "bounds.c", NULL);
  enum { UNITS = 4 * 64 };
  static uint32_t out[6 * UNITS];
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, out, sizeof out, &h));
  static const uint32_t bounds[] = {0, 1, 63, 64, 65, 100, 191, 255, 256, 1000, UINT32_MAX};
  for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
    uint32_t n = bounds[b];
    memset(out, 0xff, sizeof out);
    ASSERT_OK(ruda_client_write(c, &h, out, sizeof out));
    uint64_t info[2] = {n, n == UINT32_MAX ? (uint64_t)n + 1 : n};
    ruda_kernel_args_t args = {
        .buffers = &h,
        .num_buffers = 1,
        .info = {.data = info, .len = 2, .dynamic_metadata_offset = 2},
    };
    ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(4, 1, 1), &args));
    ASSERT_OK(ruda_client_read(c, &h, out, sizeof out));
    for (uint32_t a = 0; a < UNITS; a++) test_check_unit_bounds(out + 6 * a, a, n, info[1]);
  }
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}
