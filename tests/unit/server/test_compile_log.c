/* The error of a failed portable-kernel build (server/compile_log.h): the
 * user's messages with file:line and the hints; the prelude's messages and
 * the closing counts left out. */
#include <stdlib.h>
#include <string.h>

#include "ruda/kernel.h"
#include "ruda/types.h"
#include "ruda/status.h"
#include "server/compile_log.h"
#include "test.h"

static const char k_text[] =
    "#line 1 \"/src/k.c\"\n"
    "RUDA_KERNEL(k, RUDA_DIM(1, 1, 1), RUDA_BUFFER(float *, global)) {\n"
    "  // new, class: only in a comment\n"
    "  global[0] = 1.0f\n"
    "}\n";

static char *reason_for(const char *log) {
  ruda__compile_failure_t f = {.kernel = "k", .origin = "/src/k.c",
                               .compiler = "NVRTC for sm_90", .log = log, .text = k_text,
                               .text_len = sizeof k_text - 1};
  ruda_status_t s = ruda__compile_failure_status(&f);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_COMPILATION);
  ruda_status_t g = ruda_status_find(s, RUDA_ERR_COMPILATION_GENERIC);
  ASSERT_NOT_NULL(g);
  char *r = strdup(ruda_status_reason(g));
  ruda_status_free(s);
  return r;
}

TEST(nvrtc_messages_about_the_prelude_are_left_out) {
  char *r = reason_for(
      "ruda/dialect/cuda.h(120): error: identifier \"x\" is undefined\n"
      "    int y = x;\n"
      "            ^\n"
      "/src/k.c(3): error: expected a \";\"\n"
      "    global[0] = 1.0f\n"
      "                    ^\n"
      "\n"
      "2 errors detected in the compilation of \"k.cu\".\n");
  ASSERT_STR_CONTAINS(r, "[Compilation Error] portable kernel 'k' (/src/k.c), compiled by NVRTC "
                         "for sm_90:\n    /src/k.c(3): error: expected a \";\"\n");
  ASSERT_STR_CONTAINS(r, "                    ^\n");
  ASSERT_STR_CONTAINS(r, "hint: 'global' is a keyword of OpenCL C or C++");
  ASSERT_STR_CONTAINS(r, "(1 message about ruda's prelude left out");
  ASSERT_TRUE(strstr(r, "ruda/dialect") == NULL);
  ASSERT_TRUE(strstr(r, "int y = x") == NULL);
  ASSERT_TRUE(strstr(r, "errors detected") == NULL);
  ASSERT_TRUE(strstr(r, "'new'") == NULL); /* in a comment */
  ASSERT_TRUE(r[strlen(r) - 1] != '\n');
  free(r);
}

TEST(pocl_messages_keep_the_users_location_without_prelude_spellings) {
  char *r = reason_for(
      "error: /src/k.c:2:1 <Spelling=ruda/dialect/opencl.h:288:87>: parameter may not be "
      "qualified with an address space\n"
      "error: /src/k.c:2:1 <Spelling=/src/k.c:2:60>: expected expression\n"
      "warning: ruda/dialect/gpu.h:57:13: unused\n"
      "1 warning and 2 errors generated.\n");
  ASSERT_STR_CONTAINS(r, "    error: /src/k.c:2:1: parameter may not be qualified with an "
                         "address space\n");
  ASSERT_STR_CONTAINS(r, "    error: /src/k.c:2:1 <Spelling=/src/k.c:2:60>: expected expression\n");
  ASSERT_TRUE(strstr(r, "ruda/dialect") == NULL);
  ASSERT_TRUE(strstr(r, "generated") == NULL);
  free(r);
}

TEST(a_log_only_about_the_prelude_is_shown_whole) {
  char *r = reason_for("ruda/dialect/cuda.h(7): error: something of ruda's own\n");
  ASSERT_STR_CONTAINS(r, "ruda/dialect/cuda.h(7): error: something of ruda's own");
  free(r);
  r = reason_for(NULL);
  ASSERT_STR_CONTAINS(r, "(the compiler gave no log)");
  free(r);
}

TEST(closing_counts_are_recognised) {
  static const char *const yes[] = {"2 errors generated.", "1 warning and 5 errors generated.",
                                    "1 error detected in the compilation of \"k.cu\"."};
  for (size_t i = 0; i < 3; i++) ASSERT_TRUE(ruda__compile_log_is_summary(yes[i], strlen(yes[i])));
  static const char *const no[] = {"error: 2 generated things", "", "generated."};
  for (size_t i = 0; i < 3; i++) ASSERT_FALSE(ruda__compile_log_is_summary(no[i], strlen(no[i])));
}

TEST(hints_follow_snprintf) {
  size_t n = ruda_kernel_text_hints(k_text, sizeof k_text - 1, NULL, 0);
  ASSERT_TRUE(n > 0);
  char small[8];
  ASSERT_UEQ(ruda_kernel_text_hints(k_text, sizeof k_text - 1, small, sizeof small), n);
  ASSERT_UEQ(strlen(small), sizeof small - 1);
  ASSERT_UEQ(ruda_kernel_text_hints("int x;", 6, small, sizeof small), 0);
  ASSERT_STR_EQ(small, "");
  ASSERT_UEQ(ruda_kernel_text_hints(NULL, 0, NULL, 0), 0);
}

/* The same through NVRTC, where it is installed (the CUDA toolkit; no GPU
 * needed): the user's lines with FILE(LINE), no prelude, the hint. */
TEST(nvrtc_errors_show_the_users_lines_and_hints) {
  static const char text[] =
      "#line 1 \"/src/bad.c\"\n"
      "RUDA_KERNEL(bad, RUDA_DIM(1, 1, 1), RUDA_BUFFER(float *, x),\n"
      "            RUDA_SCALAR(float, class)) {\n"
      "  RUDA_UNITS(u) { x[u.abs_x] = class; }\n"
      "}\n";
  ruda_status_t s = ruda_kernel_compile_portable(RUDA_DEVICE_TYPE_CUDA, 90, "bad", text,
                                                 sizeof text - 1, "/src/bad.c", NULL, NULL);
  if (s && ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE) {
    ruda_status_free(s);
    SKIP("NVRTC is not installed");
  }
  ASSERT_NOT_NULL(s);
  const char *r = ruda_status_reason(ruda_status_find(s, RUDA_ERR_COMPILATION_GENERIC));
  ASSERT_STR_CONTAINS(r, "[Compilation Error] portable kernel 'bad' (/src/bad.c), compiled by "
                         "NVRTC for sm_90:\n");
  ASSERT_STR_CONTAINS(r, "/src/bad.c(3): error: expected an expression");
  ASSERT_STR_CONTAINS(r, "hint: 'class' is a keyword of OpenCL C or C++");
  ASSERT_TRUE(strstr(r, "ruda/dialect") == NULL);
  ASSERT_TRUE(strstr(r, "detected in the compilation") == NULL);
  ASSERT_TRUE(strlen(r) < 4096);
  ruda_status_free(s);
}
