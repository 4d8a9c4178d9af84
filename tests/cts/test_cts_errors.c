/* Conformance: what a user reads when a launch goes wrong. Each error is
 * checked by its kind and by the words of its text, on every backend. */
#include <unistd.h>

#include "cts.h"
#include "cts_errors_kernels.h"

/* A hand-made launch of a portable kernel that leaves out its scalar is
 * refused at launch, naming the kernel and the scalar, before the device
 * reads past the arguments (opencl:0 crashed inside PoCL). */
TEST(a_launch_missing_a_declared_scalar_is_refused_naming_it) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = cts_kernel_inc_u32(); /* x[i] += 1 for i < n: 1 buffer, 1 scalar */
  uint32_t x[4] = {1, 2, 3, 4};
  ruda_handle_t h = cts_upload(c, x, sizeof x);
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1};
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s),
                      "launch of 'inc_u32': the kernel declares 1 buffer and 1 scalar; the "
                      "launch passed 1 buffer and 0 info words: scalar 'n' has no value");
  cts_expect_text(s, "Invalid argument\nCaused by:\n  launch of 'inc_u32'", "unknown error");
  ruda_status_free(s);
  /* A buffer short: named too. */
  uint64_t n = 4;
  ruda_kernel_args_t none = {.info = {&n, 1, 1}};
  s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &none);
  ASSERT_NOT_NULL(s);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "buffer 'x' has no value");
  ruda_status_free(s);
  /* Nothing ran, and the stream stays healthy. */
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_client_read(c, &h, x, sizeof x));
  ASSERT_UEQ(x[0], 1);
  ASSERT_UEQ(x[3], 4);
  /* The same launch with its scalar runs. */
  ruda_kernel_args_t full = {.buffers = &h, .num_buffers = 1, .info = {&n, 1, 1}};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &full));
  ASSERT_OK(ruda_client_read(c, &h, x, sizeof x));
  ASSERT_UEQ(x[0], 2);
  ASSERT_UEQ(x[3], 5);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

/* A count over the device's max_ruda_count is TooManyResources, as the
 * guide says, headed by the limit that was exceeded. */
TEST(a_count_over_the_device_limit_is_too_many_resources) {
  ruda_client_t *c = cts_client();
  const ruda_device_properties_t *p = ruda_client_properties(c);
  int axis = -1;
  for (int i = 0; i < 3 && axis < 0; i++)
    if (p->hardware.max_ruda_count[i] < UINT32_MAX) axis = i;
  if (axis < 0) SKIP("the device takes every 32-bit count on every axis");
  uint32_t req[3] = {1, 1, 1};
  req[axis] = p->hardware.max_ruda_count[axis] + 1;
  ruda_kernel_t *k = cts_kernel_empty();
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(req[0], req[1], req[2]), NULL);
  ASSERT_NOT_NULL(s);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES));
  ruda_status_t rc = ruda_status_find(s, RUDA_ERR_RESOURCE_RUDA_COUNT);
  ASSERT_NOT_NULL(rc);
  uint32_t got[3], max[3];
  ASSERT_TRUE(ruda_status_dims(rc, got, max));
  ASSERT_UEQ(got[axis], req[axis]);
  ASSERT_UEQ(max[axis], p->hardware.max_ruda_count[axis]);
  cts_expect_text(s,
                  "Too many resources were requested during launch\nRuda count exceeds the "
                  "device's maximum.",
                  "unknown error");
  ruda_status_free(s);
  ruda_kernel_release(k);
}

/* A kernel with no code the device runs says so, not "an unsupported
 * instruction". */
TEST(a_kernel_without_code_for_the_device_says_so) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = cts_kernel_unrunnable();
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL));
  ruda_status_t s = ruda_client_sync(c);
  cts_expect_error(s, RUDA_ERR_COMPILATION_NO_CODE, "unrunnable");
  cts_expect_text(s, "The kernel has no code this device can run", "unsupported instruction");
  ruda_status_free(s);
  ruda_kernel_release(k);
}

/* A compile error that only the GPU compilers see (a scalar named
 * `private`, which C takes) reads as the user's lines with file:line and
 * the keyword hint, not ruda's prelude (opencl:0 gave 578 lines, mostly
 * the prelude, and PoCL's "N errors generated." on stderr). */
TEST(a_compile_error_shows_the_users_lines_and_a_hint) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = cts_kernel_from(RUDA_KERNEL_DESC(keyword_scalar));
  ruda_handle_t h = cts_empty(c, 4);
  /* What reaches stderr while the kernel is compiled (PoCL's clang writes
   * its closing count there). */
  fflush(stderr);
  FILE *err = tmpfile();
  ASSERT_NOT_NULL(err);
  int saved = dup(2);
  dup2(fileno(err), 2);
  ruda_status_t s = RUDA_LAUNCH(keyword_scalar, c, k, ruda_count_static(1, 1, 1), &h, 3u);
  if (!s) s = ruda_client_sync(c);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char said[4096] = "";
  rewind(err);
  size_t n = fread(said, 1, sizeof said - 1, err);
  said[n] = '\0';
  fclose(err);
  ASSERT_TRUE(strstr(said, "generated.") == NULL);
  if (cts_is_cpu()) {
    /* Compiled with the program: nothing to report. */
    ASSERT_OK(s);
  } else {
    ASSERT_NOT_NULL(s);
    ruda_status_t ce = ruda_status_find(s, RUDA_ERR_COMPILATION_GENERIC);
    ASSERT_NOT_NULL(ce);
    const char *r = ruda_status_reason(ce);
    /* The user's line, with file:line; the prelude's messages and text
     * left out (the whole log goes to the compilation log channel). */
    ASSERT_STR_CONTAINS(r, "[Compilation Error] portable kernel 'keyword_scalar'");
    /* PoCL writes FILE:LINE:COL, NVRTC FILE(LINE); line 8 uses the name. */
    if (!strstr(r, "cts_errors_kernels.h:8:") && !strstr(r, "cts_errors_kernels.h(8)"))
      rt_fail_msg(__FILE__, __LINE__, "no message at cts_errors_kernels.h line 8 in:\n%s", r);
    ASSERT_STR_CONTAINS(r, "hint: 'private' is a keyword");
    ASSERT_TRUE(strstr(r, "ruda/dialect/") == NULL);
    ASSERT_TRUE(strlen(r) < 4096);
    cts_expect_text(s, NULL, "invalid state");
    ruda_status_free(s);
  }
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}
