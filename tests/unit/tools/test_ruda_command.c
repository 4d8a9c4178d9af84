/* The `ruda` command end to end: devices, demo (with a trace), bench,
 * help and exit codes. Runs the built binary (tools/ruda in the build
 * tree); skips when it has not been built. */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_check.h"
#include "ruda/client.h"
#include "ruda/memory.h"
#include "ruda/status.h"
#include "server/server.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RUDA_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RUDA_UNDER_SANITIZER 1
#endif
#endif

static const char *binary(void) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/tools/ruda", RUDA_TEST_BINARY_DIR);
  if (access(path, X_OK) != 0) SKIP("the ruda command is not built (build the ruda_cmd target)");
  return path;
}

typedef struct run_result {
  int code;
  char *out; /* stdout (stderr goes to the test's stderr) */
  size_t len;
} run_result_t;

/* Runs `ruda <args>` with optional environment assignments in front. */
static run_result_t run(const char *env, const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s %s", env ? env : "", binary(), args);
  run_result_t r = {-1, NULL, 0};
  FILE *p = popen(cmd, "r");
  ASSERT_NOT_NULL(p);
  size_t cap = 4096;
  r.out = malloc(cap);
  ASSERT_NOT_NULL(r.out);
  size_t n;
  while ((n = fread(r.out + r.len, 1, cap - r.len - 1, p)) > 0) {
    r.len += n;
    if (cap - r.len < 1024) {
      cap *= 2;
      r.out = realloc(r.out, cap);
      ASSERT_NOT_NULL(r.out);
    }
  }
  r.out[r.len] = '\0';
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

static void run_free(run_result_t *r) {
  free(r->out);
  r->out = NULL;
}

/* Runs `ruda args` and asserts its exit code and, unless `want` is NULL,
 * that its output contains `want`. */
static void expect_run(const char *env, const char *args, int code, const char *want) {
  run_result_t r = run(env, args);
  if (r.code != code || (want && !strstr(r.out, want)))
    rt_fail_msg(__FILE__, __LINE__, "`ruda %s` exited %d:\n%s", args, r.code, r.out);
  ASSERT_EQ(r.code, code);
  if (want) ASSERT_STR_CONTAINS(r.out, want);
  run_free(&r);
}

TEST(devices_lists_a_sane_cpu_device) {
  run_result_t r = run(NULL, "devices");
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "cpu: 1 device");
  ASSERT_STR_CONTAINS(r.out, "cpu:0");
  ASSERT_STR_CONTAINS(r.out, "cores");
  ASSERT_STR_CONTAINS(r.out, "cuda");
  run_free(&r);
}

/* Sizes in binary units only, and the caches the properties report. */
TEST(devices_prints_binary_sizes) {
  run_result_t r = run(NULL, "devices");
  ASSERT_EQ(r.code, 0);
  static const char *decimal[] = {" kB", " KB", " MB", " GB", " TB"};
  for (size_t i = 0; i < sizeof decimal / sizeof decimal[0]; ++i) {
    if (strstr(r.out, decimal[i]))
      rt_fail_msg(__FILE__, __LINE__, "decimal unit '%s' in:\n%s", decimal[i], r.out);
    ASSERT_NULL(strstr(r.out, decimal[i]));
  }
  ASSERT_STR_CONTAINS(r.out, "iB memory");
  ASSERT_STR_CONTAINS(r.out, "shared 1.00 MiB/ruda");
  ruda_device_properties_t p;
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ASSERT_OK(ruda_device_properties(cpu, &p));
  char want[64], size[32];
  if (p.hardware.cache_l3) {
    ruda_bytes_format(p.hardware.cache_l3, size, sizeof size);
    snprintf(want, sizeof want, ", L3 %s", size);
    ASSERT_STR_CONTAINS(r.out, want);
  }
  run_free(&r);
}

TEST(devices_json_has_every_backend_and_cpu_properties) {
  run_result_t r = run(NULL, "devices --json");
  ASSERT_EQ(r.code, 0);
  jv_t *root = jv_parse_checked(r.out, "devices --json");
  jv_t *backends = jv_get(root, "backends");
  ASSERT_NOT_NULL(backends);
  ASSERT_EQ(backends->type, JV_ARR);
  ASSERT_UGE(backends->len, 2);
  bool saw_cpu = false, saw_cuda = false;
  for (size_t i = 0; i < backends->len; ++i) {
    jv_t *b = backends->items[i];
    const char *type = jv_str(b, "type");
    ASSERT_NOT_NULL(type);
    jv_t *avail = jv_get(b, "available");
    ASSERT_NOT_NULL(avail);
    ASSERT_EQ(avail->type, JV_BOOL);
    if (!avail->b) {
      /* An unavailable backend says why. */
      ASSERT_NOT_NULL(jv_str(b, "reason"));
      ASSERT_UGT(strlen(jv_str(b, "reason")), 0);
    }
    if (strcmp(type, "cuda") == 0) saw_cuda = true;
    if (strcmp(type, "cpu") != 0) continue;
    saw_cpu = true;
    ASSERT_TRUE(avail->b);
    jv_t *devs = jv_get(b, "devices");
    ASSERT_NOT_NULL(devs);
    ASSERT_UGE(devs->len, 1);
    jv_t *d = devs->items[0];
    ASSERT_STR_EQ(jv_str(d, "id"), "cpu:0");
    ASSERT_UGT(strlen(jv_str(d, "name")), 0);
    jv_t *hw = jv_get(d, "hardware");
    ASSERT_NOT_NULL(hw);
    ASSERT_TRUE(jv_get(hw, "num_cpu_cores")->num >= 1);
    ASSERT_TRUE(jv_get(hw, "total_memory")->num > 0);
    ASSERT_TRUE(jv_get(hw, "max_units_per_ruda")->num >= 1);
    ASSERT_NOT_NULL(jv_get(d, "features"));
    ASSERT_NOT_NULL(jv_get(jv_get(d, "memory"), "alignment"));
  }
  ASSERT_TRUE(saw_cpu);
  ASSERT_TRUE(saw_cuda);
  /* The backends are the registry's, in its order (then built-in types
   * whose backend is not built in). */
  size_t nreg = 0;
  while (ruda__backend_list[nreg]) nreg++;
  ASSERT_UGE(backends->len, nreg);
  for (size_t i = 0; i < nreg; ++i)
    ASSERT_STR_EQ(jv_str(backends->items[i], "type"), ruda__backend_list[i]->name);
  jv_free(root);
  run_free(&r);
}

/* `out` of `ruda demo` on any device: every check passed. */
static void expect_demo_checks(const char *out) {
  static const char *const checks[] = {"check vector_add    ok", "check reduce_sum    ok",
                                       "check matmul_tiled  ok", "check tuned_matmul  ok",
                                       "check tuned_sum     ok", "All 5 checks passed."};
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
    ASSERT_STR_CONTAINS(out, checks[i]);
}

TEST(demo_passes_every_check_and_prints_reports) {
  run_result_t r = run(NULL, "demo");
  if (r.code != 0) rt_fail_msg(__FILE__, __LINE__, "demo output:\n%s", r.out);
  ASSERT_EQ(r.code, 0);
  expect_demo_checks(r.out);
  ASSERT_STR_CONTAINS(r.out, "Memory Usage Report");
  /* The report explains reserved against in use, and what cleanup leaves. */
  ASSERT_STR_CONTAINS(r.out, "In use: the 3 live buffers");
  ASSERT_STR_CONTAINS(r.out, "Reserved: what this stream's");
  ASSERT_STR_CONTAINS(r.out, "ruda_client_memory_cleanup() left 0 B");
  ASSERT_STR_CONTAINS(r.out, "| Name");
  ASSERT_STR_CONTAINS(r.out, "| Total");
  run_free(&r);
}

/* The same kernels, written once, on opencl:0 (PoCL in CI): a skip with the
 * reason without an OpenCL device, a failure then when RUDA_REQUIRE_DEVICE
 * names opencl. */
TEST(demo_passes_every_check_on_opencl) {
  char env[600];
  snprintf(env, sizeof env, "RUDA_CACHE_DIR='%s/test-tmp/opencl-cache'", RUDA_TEST_BINARY_DIR);
  run_result_t r = run(env, "demo --device opencl:0 2>&1");
  if (r.code == 3) {
    static char why[2048];
    snprintf(why, sizeof why, "no OpenCL device: %s", r.out);
    run_free(&r);
    SKIP_UNAVAILABLE("opencl", why);
  }
  if (r.code != 0) rt_fail_msg(__FILE__, __LINE__, "demo output:\n%s", r.out);
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "ruda demo on opencl:0");
  expect_demo_checks(r.out);
  run_free(&r);
}

static double num(const jv_t *ev, const char *key) {
  const jv_t *v = jv_get(ev, key);
  return v && v->type == JV_NUM ? v->num : -1.0;
}

TEST(demo_trace_is_json_with_kernel_slices_on_stream_tracks) {
  char path[512], env[600];
  snprintf(path, sizeof path, "%s/demo_trace.json", rt_tmpdir());
  unlink(path);
  snprintf(env, sizeof env, "RUDA_TRACE='%s'", path);
  run_result_t r = run(env, "demo");
  ASSERT_EQ(r.code, 0);
  run_free(&r);

  jv_t *events;
  jv_t *root = jv_read_trace(path, &events);

  /* The demo's kernels, each a slice on the cpu:0 process, on a stream
   * track that a metadata event names. */
  static const char *kernels[] = {"vector_add", "reduce_sum", "matmul_tiled"};
  size_t found[3] = {0}, slices = 0;
  double cpu_pid = -1;
  for (size_t i = 0; i < events->len; ++i) {
    const jv_t *e = events->items[i];
    const char *ph = jv_str(e, "ph");
    if (ph && strcmp(ph, "M") == 0 && strcmp(jv_str(e, "name"), "process_name") == 0 &&
        strcmp(jv_str(jv_get(e, "args"), "name"), "cpu:0") == 0)
      cpu_pid = num(e, "pid");
  }
  for (size_t i = 0; i < events->len; ++i) {
    const jv_t *e = events->items[i];
    const char *ph = jv_str(e, "ph");
    if (!ph || strcmp(ph, "X") != 0) continue;
    slices++;
    for (int k = 0; k < 3; ++k) {
      if (strcmp(jv_str(e, "name"), kernels[k]) != 0) continue;
      ASSERT_STR_EQ(jv_str(e, "cat"), "kernel");
      ASSERT_DBL_NEAR(num(e, "pid"), cpu_pid, 0);
      ASSERT_TRUE(num(e, "dur") >= 0);
      /* its track is named */
      bool named = false;
      for (size_t j = 0; j < events->len; ++j) {
        const jv_t *m = events->items[j];
        if (strcmp(jv_str(m, "ph"), "M") == 0 && strcmp(jv_str(m, "name"), "thread_name") == 0 &&
            num(m, "pid") == num(e, "pid") && num(m, "tid") == num(e, "tid"))
          named = true;
      }
      ASSERT_TRUE(named);
      found[k]++;
    }
  }
  if (slices == 0) {
    jv_free(root);
    SKIP("the runtime emits no trace slices yet (client/backend hooks not wired)");
  }
  ASSERT_UEQ(found[0], 3); /* 3 runs */
  ASSERT_UEQ(found[1], 6); /* 3 runs of 2 passes */
  ASSERT_UEQ(found[2], 3);
  jv_free(root);
}

typedef struct bench_seen {
  size_t lines;
  bool launch, triad, copy, openmp;
} bench_seen_t;

/* Runs `ruda bench <group> <mode> --json` and checks every stdout line. */
static void bench_lines(const char *group, const char *mode, bench_seen_t *seen) {
  char errpath[512], args[700];
  snprintf(errpath, sizeof errpath, "%s/bench_stderr.txt", rt_tmpdir());
  snprintf(args, sizeof args, "bench %s %s --json 2>'%s'", group, mode, errpath);
  run_result_t r = run(NULL, args);
  FILE *ef = fopen(errpath, "rb");
  ASSERT_NOT_NULL(ef);
  static char errtext[65536];
  size_t elen = fread(errtext, 1, sizeof errtext - 1, ef);
  errtext[elen] = '\0';
  fclose(ef);
  if (r.code != 0) rt_fail_msg(__FILE__, __LINE__, "bench %s failed:\n%s\n%s", group, r.out, errtext);
  ASSERT_EQ(r.code, 0);
  /* stderr holds progress, skips with reasons and the closing count. */
  ASSERT_STR_CONTAINS(errtext, "ruda bench:");
  if (strstr(errtext, "built without OpenMP")) seen->openmp = false;
  for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
    jv_t *v = jv_bench_line(line);
    ASSERT_EQ(jv_get(v, "bench")->type, JV_STR);
    ASSERT_EQ(jv_get(v, "case")->type, JV_STR);
    ASSERT_EQ(jv_get(v, "unit")->type, JV_STR);
    ASSERT_EQ(jv_get(v, "baseline_name")->type, JV_STR);
    ASSERT_EQ(jv_get(v, "ruda")->type, JV_NUM);
    ASSERT_EQ(jv_get(v, "baseline")->type, JV_NUM);
    ASSERT_TRUE(jv_get(v, "ruda")->num > 0);
    ASSERT_TRUE(jv_get(v, "baseline")->num > 0);
    jv_t *ratio = jv_get(v, "ratio");
    ASSERT_EQ(ratio->type, JV_NUM);
    ASSERT_DBL_NEAR(ratio->num, jv_get(v, "ruda")->num / jv_get(v, "baseline")->num,
                    1e-4 * ratio->num);
    const char *better = jv_str(v, "better");
    ASSERT_TRUE(strcmp(better, "lower") == 0 || strcmp(better, "higher") == 0);
    const char *c = jv_str(v, "case");
    if (strcmp(c, "launch_empty_caller") == 0) seen->launch = true;
    if (strcmp(c, "triad_bandwidth") == 0) seen->triad = true;
    if (strcmp(c, "create_read_bandwidth") == 0) seen->copy = true;
    jv_free(v);
    seen->lines++;
  }
  run_free(&r);
}

TEST(bench_json_lines_have_every_field) {
  bench_seen_t seen = {0};
  seen.openmp = true;
#ifdef RUDA_UNDER_SANITIZER
  /* Sanitizers make the allocator baselines crawl: the CPU runtime's own
   * groups run at smoke sizes. */
  static const char *groups[] = {"launch", "triad", "copy", "compile", "allreduce", "comm"};
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; ++i)
    bench_lines(groups[i], "--smoke", &seen);
#else
  bench_lines("all", "--quick", &seen);
#endif
  ASSERT_UGE(seen.lines, 1);
  if (seen.openmp) {
    ASSERT_TRUE(seen.launch);
    ASSERT_TRUE(seen.triad);
  }
  ASSERT_TRUE(seen.copy);
}

TEST(help_and_usage_errors_use_the_documented_exit_codes) {
  run_result_t r = run(NULL, "--help");
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "exit codes");
  run_free(&r);
  static const char *subs[] = {"devices --help", "demo --help", "bench --help", "help bench"};
  for (int i = 0; i < 4; ++i) {
    r = run(NULL, subs[i]);
    ASSERT_EQ(r.code, 0);
    ASSERT_STR_CONTAINS(r.out, "usage: ruda");
    run_free(&r);
  }
  expect_run(NULL, "frobnicate 2>/dev/null", 2, NULL);
  expect_run(NULL, "bench nosuchgroup 2>/dev/null", 2, NULL);
  expect_run(NULL, "demo --device potato 2>/dev/null", 2, NULL);
  expect_run(NULL, "devices --bogus 2>/dev/null", 2, NULL);
}

/* `ruda version` is `ruda --version`, as `help` is `--help`. */
TEST(version_command_answers_like_the_option) {
  run_result_t a = run(NULL, "--version");
  run_result_t b = run(NULL, "version");
  ASSERT_EQ(a.code, 0);
  ASSERT_EQ(b.code, 0);
  ASSERT_STR_CONTAINS(a.out, "ruda ");
  ASSERT_STR_EQ(b.out, a.out);
  run_free(&a);
  run_free(&b);
}

/* Every command that takes --device lists, in its usage line, every form
 * the parser accepts: a type alone (index 0) and a type with an index,
 * for each built-in type. */
TEST(usage_lines_list_every_device_form) {
  static const char *cmds[] = {"bench --help", "demo --help"};
  for (int i = 0; i < 2; ++i) {
    run_result_t r = run(NULL, cmds[i]);
    ASSERT_EQ(r.code, 0);
    char *nl = strchr(r.out, '\n');
    ASSERT_NOT_NULL(nl);
    *nl = '\0'; /* the usage line */
    ASSERT_STR_CONTAINS(r.out, "--device cpu|cpu:N|cuda|cuda:N|opencl|opencl:N");
    run_free(&r);
  }
}

TEST(an_unavailable_device_exits_3_with_the_status_text) {
  /* cpu:9 never exists; the message is the runtime's status text. */
  run_result_t r = run(NULL, "demo --device cpu:9 2>&1");
  ASSERT_EQ(r.code, 3);
  ASSERT_STR_CONTAINS(r.out, "ruda device cpu:9:");
  run_free(&r);
}

/* `ruda tune`: run fills the cache, list and show print it, export, clear
 * and import move it, bad arguments are usage errors. */
TEST(tune_command_runs_lists_exports_clears_and_imports) {
  char env[700], file[600];
  snprintf(env, sizeof env, "RUDA_CACHE_DIR='%s/tune-cmd-%ld'", rt_tmpdir(), (long)getpid());
  snprintf(file, sizeof file, "%s/tune-cmd-%ld.export", rt_tmpdir(), (long)getpid());
  run_result_t r = run(env, "tune run sum_f32 --sizes 10000 --sizes 70000");
  if (r.code != 0) rt_fail_msg(__FILE__, __LINE__, "tune run output:\n%s", r.out);
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "sum_f32 10000: ");
  ASSERT_STR_CONTAINS(r.out, "(tuned now)");
  run_free(&r);
  r = run(env, "tune run sum_f32 --sizes 9000"); /* the same bucket (16384) */
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "(already decided)");
  run_free(&r);
  r = run(env, "tune list");
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "n=16384");
  ASSERT_STR_CONTAINS(r.out, "n=131072");
  ASSERT_STR_CONTAINS(r.out, "2 entries in");
  run_free(&r);
  expect_run(env, "tune show sum_f32", 0, "scores: ");
  char args[800];
  snprintf(args, sizeof args, "tune export '%s'", file);
  r = run(env, args);
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "exported 2 entries");
  run_free(&r);
  r = run(env, "tune clear");
  ASSERT_STR_CONTAINS(r.out, "removed 2 entries");
  run_free(&r);
  snprintf(args, sizeof args, "tune import '%s'", file);
  r = run(env, args);
  ASSERT_EQ(r.code, 0);
  ASSERT_STR_CONTAINS(r.out, "imported 2 entries");
  run_free(&r);
  r = run(env, "tune list");
  ASSERT_STR_CONTAINS(r.out, "2 entries in");
  run_free(&r);
  expect_run(env, "tune run nope --sizes 4 2>&1", 1, "no tuned operation 'nope'");
  expect_run(env, "tune run matmul_f32 --sizes 4,x 2>&1", 2, NULL);
  expect_run(env, "tune frobnicate 2>&1", 2, NULL);
}
