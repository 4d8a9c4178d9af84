/* Conformance: kernels from files read at run time (ruda_kernel_from_file,
 * ruda_kernel_from_text). The program is not built with the file: every
 * backend compiles its text (cpu:N with the C compiler). -D constants give
 * the same results on every backend and are part of the kernel's id. */
#include <stdio.h>

#include "cts.h"
#include "test_kernel.h"

#define KERNEL_FILE RUDA_TEST_SOURCE_DIR "/tests/cts/files/affine.rk.c"

static ruda_kernel_t *from_file(const char *entry, const char *const *opts, size_t n) {
  ruda_kernel_source_t src;
  memset(&src, 0, sizeof src);
  src.entry = entry;
  src.options = opts;
  src.num_options = n;
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_from_file(KERNEL_FILE, &src, &k));
  return k;
}

/* Runs `k` on 0..999 and checks out[i] == i * scale + offset. */
static void check_affine(ruda_kernel_t *k, int32_t scale, int32_t offset) {
  ruda_client_t *c = cts_client();
  enum { N = 1000 };
  int32_t in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = i - 500;
  ruda_handle_t hin, hout;
  ASSERT_OK(ruda_client_create_buffer(c, in, sizeof in, &hin));
  ASSERT_OK(ruda_client_empty(c, sizeof out, &hout));
  ruda_handle_t bufs[2] = {hin, hout};
  uint64_t n = N;
  ruda_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.buffers = bufs;
  args.num_buffers = 2;
  args.info.data = &n;
  args.info.len = 1;
  args.info.dynamic_metadata_offset = 1;
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static((N + 63) / 64, 1, 1), &args));
  ASSERT_OK(ruda_client_read(c, &hout, out, sizeof out));
  for (int i = 0; i < N; i++) ASSERT_EQ(out[i], in[i] * scale + offset);
  ruda_handle_release(&hin);
  ruda_handle_release(&hout);
}

TEST(kernel_file_with_defaults_of_its_own) {
  ruda_kernel_t *k = from_file("affine", NULL, 0);
  ASSERT_UEQ(ruda_kernel_desc(k)->ruda_dim.x, 64);
  check_affine(k, 2, 7);
  ruda_kernel_release(k);
}

TEST(define_options_set_the_constants_and_the_id) {
  const char *a[] = {"-DSCALE=3", "-DOFFSET=-11"};
  const char *b[] = {"-DSCALE=5"};
  ruda_kernel_t *ka = from_file("affine", a, 2);
  ruda_kernel_t *kb = from_file("affine", b, 1);
  ruda_kernel_t *kd = from_file("affine", NULL, 0);
  ruda_hash128_t ha = ruda_kernel_hash(ka), hb = ruda_kernel_hash(kb), hd = ruda_kernel_hash(kd);
  ASSERT_TRUE(ha.lo != hb.lo || ha.hi != hb.hi);
  ASSERT_TRUE(ha.lo != hd.lo || ha.hi != hd.hi);
  check_affine(ka, 3, -11);
  check_affine(kb, 5, 7);
  check_affine(kd, 2, 7);
  ruda_kernel_release(ka);
  ruda_kernel_release(kb);
  ruda_kernel_release(kd);
}

TEST(kernel_text_with_an_include_folder) {
  static const char text[] =
      "#include <ruda/kernel_dialect.h>\n"
      "#include \"affine_consts.h\"\n"
      "#define SCALE -1\n"
      "RUDA_KERNEL(affine, RUDA_DIM(BLOCK, 1, 1), RUDA_BUFFER(const int32_t *restrict, in),\n"
      "            RUDA_BUFFER(int32_t *restrict, out), RUDA_SCALAR(uint32_t, n)) {\n"
      "  RUDA_UNITS(u) { if (u.abs_x < n) out[u.abs_x] = in[u.abs_x] * SCALE + OFFSET; }\n"
      "}\n";
  ruda_kernel_t *k =
      test_kernel_from_text(text, "inline_affine.c", "-I" RUDA_TEST_SOURCE_DIR "/tests/cts/files");
  check_affine(k, -1, 7);
  ruda_kernel_release(k);
}

TEST(compile_errors_name_the_users_file_and_line) {
  const char *opts[] = {"-DBREAK_IT"};
  ruda_kernel_t *k = from_file("broken", opts, 1);
  ruda_client_t *c = cts_client();
  ruda_handle_t h = cts_empty(c, 64 * 4);
  ruda_status_t s = test_launch_and_sync(c, k, &h);
  ASSERT_NOT_NULL(s);
  char *text = ruda_status_to_string(s);
  /* file:line (gcc, clang) or file(line) (NVRTC). */
  ASSERT_TRUE(strstr(text, "affine.rk.c:21") || strstr(text, "affine.rk.c(21)"));
  ASSERT_STR_CONTAINS(text, "undeclared_name");
  /* Only the user's lines: nothing of the prelude (server/compile_log.h). */
  ASSERT_TRUE(strstr(text, "ruda/dialect/") == NULL);
  free(text);
  ruda_status_free(s);
  ruda_handle_release(&h);
  ruda_kernel_release(k);
}

TEST(bad_arguments_are_refused) {
  ruda_kernel_source_t src;
  memset(&src, 0, sizeof src);
  ruda_kernel_t *k = NULL;
  const char *shell[] = {"; rm -rf /"};
  src.options = shell;
  src.num_options = 1;
  ASSERT_ERR_KIND(ruda_kernel_from_file(KERNEL_FILE, &src, &k), RUDA_ERR_INVALID_ARGUMENT);
  const char *plugin[] = {"-fplugin=/tmp/x.so"};
  src.options = plugin;
  ASSERT_ERR_KIND(ruda_kernel_from_file(KERNEL_FILE, &src, &k), RUDA_ERR_INVALID_ARGUMENT);
  const char *output[] = {"-o/tmp/x"};
  src.options = output;
  ASSERT_ERR_KIND(ruda_kernel_from_file(KERNEL_FILE, &src, &k), RUDA_ERR_INVALID_ARGUMENT);
  src.options = NULL;
  src.num_options = 0;
  /* Two kernels: the entry must be named. */
  ASSERT_ERR_KIND(ruda_kernel_from_file(KERNEL_FILE, &src, &k), RUDA_ERR_INVALID_ARGUMENT);
  src.entry = "nope";
  ASSERT_ERR_KIND(ruda_kernel_from_file(KERNEL_FILE, &src, &k), RUDA_ERR_INVALID_ARGUMENT);
  src.entry = "affine";
  ASSERT_ERR_KIND(ruda_kernel_from_file(RUDA_TEST_SOURCE_DIR "/no/such/file.c", &src, &k),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_kernel_from_file(NULL, &src, &k), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda_kernel_from_text(NULL, 0, NULL, &src, &k), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_NULL(k);
}
