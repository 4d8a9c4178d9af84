/* `ruda kernels check|embed` end to end: a kernel that compiles, one that
 * does not (the message names the file, the line and the kernel), usage
 * errors, and the embed step's output. Runs the built binary; the CUDA and
 * OpenCL halves skip when NVRTC or an OpenCL driver is not installed. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

static const char *binary(void) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/tools/ruda", RUDA_TEST_BINARY_DIR);
  if (access(path, X_OK) != 0) SKIP("the ruda command is not built (build the ruda_cmd target)");
  return path;
}

/* Runs `ruda <args>` (stdout and stderr together); returns the exit code. */
static int run(const char *args, char *out, size_t cap) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", binary(), args);
  return rt_run_command(cmd, out, cap);
}

static const char *write_kernel(const char *name, const char *text) {
  static char path[4][1024];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", rt_tmpdir(), name);
  rt_write_file(p, text);
  return p;
}

static const char good[] =
    "#include <ruda/kernel_dialect.h>\n"
    "RUDA_KERNEL(scale, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, x),\n"
    "            RUDA_SCALAR(float, a)) {\n"
    "  RUDA_UNITS_NOWAIT(u) x[u.abs_x] *= a;\n"
    "}\n";

static const char bad[] =
    "#include <ruda/kernel_dialect.h>\n"
    "RUDA_KERNEL(fine, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *, x)) {\n"
    "  RUDA_UNITS_NOWAIT(u) x[u.abs_x] = 1.0f;\n"
    "}\n"
    "\n"
    "RUDA_KERNEL(broken, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *, x)) {\n"
    "  RUDA_UNITS_NOWAIT(u) x[u.abs_x] = not_declared_anywhere;\n"
    "}\n";

static void check_one(const char *target_flag, const char *label) {
  char out[16384], args[2048];
  const char *ok = write_kernel("good_kernels.c", good);
  snprintf(args, sizeof args, "kernels check %s %s", target_flag, ok);
  int rc = run(args, out, sizeof out);
  if (rc == 3) {
    printf("%s", out);
    SKIP("the compiler is not installed here");
  }
  ASSERT_EQ(rc, 0);
  ASSERT_STR_CONTAINS(out, label);
  ASSERT_STR_CONTAINS(out, ": ok (1 kernel: scale)");

  const char *ko = write_kernel("bad_kernels.c", bad);
  snprintf(args, sizeof args, "kernels check %s %s", target_flag, ko);
  rc = run(args, out, sizeof out);
  ASSERT_EQ(rc, 1);
  ASSERT_STR_CONTAINS(out, "FAILED");
  ASSERT_STR_CONTAINS(out, "not_declared_anywhere");
  ASSERT_STR_CONTAINS(out, "[kernel 'broken']");
  /* The message is at the user's file and line 7, in the compiler's form. */
  char at_nvrtc[PATH_MAX + 16], at_clang[PATH_MAX + 16];
  char real[PATH_MAX]; /* realpath's buffer must hold PATH_MAX bytes */
  ASSERT_NOT_NULL(realpath(ko, real));
  snprintf(at_nvrtc, sizeof at_nvrtc, "%s(7)", real);
  snprintf(at_clang, sizeof at_clang, "%s:7:", real);
  ASSERT_TRUE(strstr(out, at_nvrtc) != NULL || strstr(out, at_clang) != NULL);
}

TEST(check_compiles_for_cuda_and_names_file_line_and_kernel) {
  check_one("--cuda-only --arch sm_90", "cuda sm_90");
}

TEST(check_compiles_for_opencl_and_names_file_line_and_kernel) {
  check_one("--opencl-only", "opencl:0");
}

TEST(check_compiles_for_the_cpu_and_names_file_line_and_kernel) {
  /* --opencl-only --cpu: the run-time C compiler, then OpenCL. */
  check_one("--opencl-only --cpu", "cpu (run-time C compiler): ok");
}

TEST(check_takes_define_options) {
  char out[16384], args[2048];
  static const char needs[] =
      "#include <ruda/kernel_dialect.h>\n"
      "RUDA_KERNEL(k, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *, x)) {\n"
      "  RUDA_UNITS_NOWAIT(u) x[u.abs_x] = SCALE;\n"
      "}\n";
  const char *f = write_kernel("needs_define.c", needs);
  snprintf(args, sizeof args, "kernels check --opencl-only %s", f);
  int rc = run(args, out, sizeof out);
  if (rc == 3) SKIP("OpenCL is not installed here");
  ASSERT_EQ(rc, 1);
  snprintf(args, sizeof args, "kernels check --opencl-only -D SCALE=2.0f -O3 %s", f);
  ASSERT_EQ(run(args, out, sizeof out), 0);
  snprintf(args, sizeof args, "kernels check --opencl-only -Wall %s", f);
  ASSERT_EQ(run(args, out, sizeof out), 2);
}

/* Runs `ruda <args>` with stdout into `out` and stderr into `err`. */
static int run_split(const char *args, char *out, size_t cap, char *err, size_t err_cap) {
  char path[1024], cmd[4096];
  snprintf(path, sizeof path, "%s/kernels_check_stderr.txt", rt_tmpdir());
  snprintf(cmd, sizeof cmd, "%s %s 2>%s", binary(), args, path);
  int rc = rt_run_command(cmd, out, cap);
  char *text = rt_read_file(path);
  ASSERT_NOT_NULL(text);
  snprintf(err, err_cap, "%s", text);
  free(text);
  return rc;
}

TEST(check_keeps_the_opencl_compiler_s_closing_count_off_stderr) {
  /* `local` is a keyword of OpenCL C only: PoCL's clang fails, and writes
   * "2 errors generated." to the process's stderr itself. */
  static const char opencl_only_error[] =
      "#include <ruda/kernel_dialect.h>\n"
      "RUDA_KERNEL(k, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *, x)) {\n"
      "  float local = 2.0f;\n"
      "  RUDA_UNITS_NOWAIT(u) x[u.abs_x] = local;\n"
      "}\n";
  char out[16384], err[4096], args[2048];
  const char *f = write_kernel("opencl_only_error.c", opencl_only_error);
  snprintf(args, sizeof args, "kernels check --opencl-only %s", f);
  int rc = run_split(args, out, sizeof out, err, sizeof err);
  if (rc == 3) SKIP("OpenCL is not installed here");
  ASSERT_EQ(rc, 1);
  ASSERT_STR_CONTAINS(out, "FAILED");
  ASSERT_STR_CONTAINS(out, "opencl_only_error.c:3:");
  ASSERT_STR_CONTAINS(out, "hint: 'local' is a keyword");
  if (strstr(err, "generated")) rt_fail_msg(__FILE__, __LINE__, "stderr:\n%s", err);
  ASSERT_TRUE(strstr(err, "generated") == NULL);
}

TEST(check_gives_the_cpu_compiler_the_o_f_and_m_options) {
  /* Compiles for the CPU only when -O0 and -funsigned-char reach the C
   * compiler (after compilation.cpu_flags, as ruda_kernel_from_file's
   * options do); the GPU compilers do not get them. */
  static const char needs_flags[] =
      "#include <ruda/kernel_dialect.h>\n"
      "#if !defined(__OPENCL_VERSION__) && !defined(__CUDACC__)\n"
      "#if defined(__OPTIMIZE__) || !defined(__CHAR_UNSIGNED__)\n"
      "#error the CPU compiler did not get -O0 -funsigned-char\n"
      "#endif\n"
      "#endif\n"
      "RUDA_KERNEL(k, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *, x)) {\n"
      "  RUDA_UNITS_NOWAIT(u) x[u.abs_x] = 1.0f;\n"
      "}\n";
  char out[16384], args[2048];
  const char *f = write_kernel("needs_cpu_flags.c", needs_flags);
  snprintf(args, sizeof args, "kernels check --opencl-only --cpu --skip-unavailable %s", f);
  int rc = run(args, out, sizeof out);
  if (strstr(out, "cpu (run-time C compiler): unavailable")) SKIP("no C compiler here");
  ASSERT_EQ(rc, 1);
  ASSERT_STR_CONTAINS(out, "did not get -O0 -funsigned-char");
  snprintf(args, sizeof args,
           "kernels check --opencl-only --cpu --skip-unavailable -O0 -funsigned-char -mno-red-zone %s",
           f);
  rc = run(args, out, sizeof out);
  if (rc != 0) printf("%s", out);
  ASSERT_EQ(rc, 0);
  ASSERT_STR_CONTAINS(out, "cpu (run-time C compiler): ok (1 kernel: k)");
}

TEST(check_refuses_options_the_runtime_refuses) {
  char out[16384], err[4096], args[2048];
  const char *f = write_kernel("refused_options.c", good);
  /* Another kind of flag, a compiler plugin, a blank inside one argument. */
  static const char *const refused[] = {"-Wall", "-fplugin=/tmp/evil.so", "-x", "-DA B"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    snprintf(args, sizeof args, "kernels check --cpu '%s' %s", refused[i], f);
    ASSERT_EQ(run_split(args, out, sizeof out, err, sizeof err), 2);
    ASSERT_STR_CONTAINS(err, refused[i]);
  }
  snprintf(args, sizeof args, "kernels check --cpu -fplugin=/tmp/evil.so %s", f);
  run_split(args, out, sizeof out, err, sizeof err);
  ASSERT_STR_CONTAINS(err, "is not allowed");
}

TEST(check_usage_errors) {
  char out[4096];
  ASSERT_EQ(run("kernels check", out, sizeof out), 2);
  ASSERT_EQ(run("kernels check --arch banana x.c", out, sizeof out), 2);
  ASSERT_STR_CONTAINS(out, "--arch wants sm_XY");
  ASSERT_EQ(run("kernels frobnicate", out, sizeof out), 2);
  char args[2048];
  snprintf(args, sizeof args, "kernels check --cuda-only %s/does_not_exist.c", rt_tmpdir());
  ASSERT_EQ(run(args, out, sizeof out), 1);
  ASSERT_STR_CONTAINS(out, "does_not_exist.c");
}

TEST(embed_writes_the_text_for_each_kernel) {
  char out[16384], args[2048];
  const char *ok = write_kernel("embed_kernels.c", good);
  snprintf(args, sizeof args, "kernels embed --text %s", ok);
  ASSERT_EQ(run(args, out, sizeof out), 0);
  ASSERT_STR_CONTAINS(out, "#line 1 \"");
  ASSERT_STR_CONTAINS(out, "RUDA_KERNEL(scale");
  char gen[1024];
  snprintf(gen, sizeof gen, "%s/embed_text.c", rt_tmpdir());
  snprintf(args, sizeof args, "kernels embed -o %s %s", gen, ok);
  ASSERT_EQ(run(args, out, sizeof out), 0);
  FILE *f = fopen(gen, "r");
  ASSERT_NOT_NULL(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  fclose(f);
  ASSERT_STR_CONTAINS(out, "const char ruda_kernel_text__scale[] = RUDA_KERNEL_FILE_TEXT;");
}
