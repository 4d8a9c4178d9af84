/* The public calls that work without a device: the device types the
 * library knows (ruda_device_types), the source a backend's compiler is
 * given for a portable kernel (ruda_kernel_portable_source) and the
 * ahead-of-time compile's argument checks, options and unavailable answers
 * (ruda_kernel_compile_portable[_with_options]), on the CPU and on
 * opencl:0 (NVRTC's own run is `ruda kernels check`'s,
 * tests/unit/tools/test_kernels_command.c). */
#include <stdlib.h>
#include <string.h>

#include "ruda/client.h"
#include "ruda/kernel.h"
#include "test.h"

TEST(device_types_lists_cpu_first_and_every_builtin_type) {
  size_t n = ruda_device_types(NULL, 0);
  ASSERT_UGE(n, 3);
  uint16_t types[32];
  ASSERT_ULE(n, 32);
  ASSERT_UEQ(ruda_device_types(types, 32), n);
  ASSERT_UEQ(types[0], RUDA_DEVICE_TYPE_CPU);
  bool seen[3] = {false, false, false};
  for (size_t i = 0; i < n; i++) {
    ASSERT_NOT_NULL(ruda_device_type_name(types[i]));
    if (types[i] < 3) {
      ASSERT_FALSE(seen[types[i]]); /* each type once */
      seen[types[i]] = true;
    }
  }
  ASSERT_TRUE(seen[RUDA_DEVICE_TYPE_CPU] && seen[RUDA_DEVICE_TYPE_CUDA] &&
              seen[RUDA_DEVICE_TYPE_OPENCL]);
  /* A short array gets the first ids; the count is still the whole. */
  uint16_t one[1] = {0xffff};
  ASSERT_UEQ(ruda_device_types(one, 1), n);
  ASSERT_UEQ(one[0], RUDA_DEVICE_TYPE_CPU);
}

TEST(portable_source_is_the_prelude_then_the_text) {
  static const char text[] = "RUDA_KERNEL(k) {}\n";
  for (uint16_t type = RUDA_DEVICE_TYPE_CUDA; type <= RUDA_DEVICE_TYPE_OPENCL; type++) {
    char *src = NULL;
    size_t len = 0;
    ASSERT_OK(ruda_kernel_portable_source(type, text, strlen(text), &src, &len));
    ASSERT_NOT_NULL(src);
    ASSERT_UEQ(strlen(src), len);
    ASSERT_UGT(len, strlen(text) + 1);
    ASSERT_STR_EQ(src + len - strlen(text), text);
    ASSERT_EQ(src[len - strlen(text) - 1], '\n');
    free(src);
  }
  char *src = (char *)1;
  ASSERT_ERR_KIND(ruda_kernel_portable_source(RUDA_DEVICE_TYPE_CPU, "x", 1, &src, NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_NULL(src);
  ASSERT_ERR_KIND(ruda_kernel_portable_source(RUDA_DEVICE_TYPE_CUDA, NULL, 0, &src, NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_kernel_portable_source(RUDA_DEVICE_TYPE_CUDA, "x", 1, NULL, NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
}

TEST(compile_portable_checks_arguments_and_says_what_cannot_compile) {
  void *bin = (void *)1;
  size_t size = 7;
  ASSERT_ERR_KIND(ruda_kernel_compile_portable(RUDA_DEVICE_TYPE_CUDA, 90, NULL, "x", 1, NULL,
                                               &bin, &size),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_NULL(bin);
  ASSERT_UEQ(size, 0);
  ASSERT_ERR_KIND(ruda_kernel_compile_portable(RUDA_DEVICE_TYPE_CUDA, 90, "k", NULL, 0, NULL,
                                               NULL, NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_kernel_compile_portable(RUDA_DEVICE_TYPE_CUDA, 7, "k", "x", 1, NULL, NULL,
                                               NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
  /* There is no opencl:90; no backend has 999. */
  ASSERT_ERR_KIND(ruda_kernel_compile_portable(RUDA_DEVICE_TYPE_OPENCL, 90, "k", "x", 1, NULL,
                                               NULL, NULL),
                  RUDA_ERR_UNAVAILABLE);
  ASSERT_ERR_KIND(ruda_kernel_compile_portable(999, 90, "k", "x", 1, NULL, NULL, NULL),
                  RUDA_ERR_UNAVAILABLE);
}

TEST(compile_portable_on_the_cpu_gives_a_shared_object_or_the_users_error) {
  static const char ok[] =
      "#line 1 \"k.c\"\n"
      "RUDA_KERNEL(k, RUDA_DIM(4, 1, 1), RUDA_BUFFER(float *, x)) { RUDA_UNITS(u) x[u.x] = 1; }\n";
  void *bin = NULL;
  size_t size = 0;
  ASSERT_OK(ruda_kernel_compile_portable(RUDA_DEVICE_TYPE_CPU, 90, "k", ok, 0 + sizeof ok - 1,
                                         "k.c", &bin, &size));
  ASSERT_UGT(size, 4);
  ASSERT_MEM_EQ(bin, "\177ELF", 4);
  free(bin);
  static const char bad[] =
      "#line 1 \"bad.c\"\n"
      "RUDA_KERNEL(k, RUDA_DIM(4, 1, 1), RUDA_BUFFER(float *, x)) { nothing_here(); }\n";
  ruda_status_t s = ruda_kernel_compile_portable(RUDA_DEVICE_TYPE_CPU, 90, "bad", bad,
                                                 sizeof bad - 1, "bad.c", NULL, NULL);
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "bad.c:1");
  ASSERT_STR_CONTAINS(text, "nothing_here");
  free(text);
  ruda_status_free(s);
}

/* A kernel that compiles only with -DSCALE given; on the CPU also only
 * with -funsigned-char (a flag of the CPU compiler's, which the GPU
 * compilers never get). */
static const char needs_options[] =
    "#line 1 \"opt.c\"\n"
    "#if !defined(__OPENCL_VERSION__) && !defined(__CHAR_UNSIGNED__)\n"
    "#error no -funsigned-char\n"
    "#endif\n"
    "RUDA_KERNEL(k, RUDA_DIM(4, 1, 1), RUDA_BUFFER(float *, x)) { RUDA_UNITS(u) x[u.x] = SCALE; }\n";

TEST(compile_portable_with_options_checks_them_as_kernel_from_file_does) {
  static const char *const bad[][1] = {{"-Wall"}, {"-fplugin=x.so"}, {"-DA B"}, {"-D"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ruda_status_t s = ruda_kernel_compile_portable_with_options(
        RUDA_DEVICE_TYPE_CPU, 90, "k", needs_options, 0, "opt.c", bad[i], 1, NULL, NULL);
    ASSERT_NOT_NULL(s);
    ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
    char *text = ruda_status_to_string(s);
    ASSERT_STR_CONTAINS(text, bad[i][0]);
    ASSERT_STR_CONTAINS(text, "is not allowed");
    free(text);
    ruda_status_free(s);
  }
  ASSERT_ERR_KIND(ruda_kernel_compile_portable_with_options(RUDA_DEVICE_TYPE_CPU, 90, "k", "x", 1,
                                                            NULL, NULL, 2, NULL, NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
}

TEST(compile_portable_with_options_gives_the_cpu_compiler_every_option) {
  static const char *const some[] = {"-DSCALE=2.0f"};
  static const char *const all[] = {"-DSCALE=2.0f", "-O1", "-funsigned-char", "-mno-red-zone"};
  ruda_status_t s = ruda_kernel_compile_portable_with_options(
      RUDA_DEVICE_TYPE_CPU, 90, "k", needs_options, 0, "opt.c", some, 1, NULL, NULL);
  if (s && ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE) {
    ruda_status_free(s);
    SKIP("no C compiler here");
  }
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "no -funsigned-char");
  free(text);
  ruda_status_free(s);
  void *bin = NULL;
  size_t size = 0;
  ASSERT_OK(ruda_kernel_compile_portable_with_options(RUDA_DEVICE_TYPE_CPU, 90, "k", needs_options,
                                                      0, "opt.c", all, 4, &bin, &size));
  ASSERT_MEM_EQ(bin, "\177ELF", 4);
  free(bin);
}

TEST(compile_portable_on_opencl_builds_on_the_device_with_the_gpu_options) {
  static const char *const all[] = {"-DSCALE=2.0f", "-O1", "-funsigned-char"};
  void *bin = NULL;
  size_t size = 0;
  ruda_status_t s = ruda_kernel_compile_portable_with_options(
      RUDA_DEVICE_TYPE_OPENCL, 0, "k", needs_options, 0, "opt.c", all, 3, &bin, &size);
  if (s && ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE) {
    char *why = ruda_status_to_string(s);
    printf("  %s\n", why);
    free(why);
    ruda_status_free(s);
    SKIP_UNAVAILABLE("opencl", "no OpenCL device opencl:0");
  }
  ASSERT_OK(s);
  ASSERT_NOT_NULL(bin);
  ASSERT_UGT(size, 0);
  free(bin);
  /* Without -DSCALE: the user's line, from the runtime's error. */
  s = ruda_kernel_compile_portable_with_options(RUDA_DEVICE_TYPE_OPENCL, 0, "k", needs_options, 0,
                                                "opt.c", NULL, 0, NULL, NULL);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_COMPILATION);
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "opt.c:4");
  ASSERT_STR_CONTAINS(text, "SCALE");
  ASSERT_STR_CONTAINS(text, "opencl:0");
  free(text);
  ruda_status_free(s);
}
