/* Portable kernels inside the runtime: the source a GPU backend compiles,
 * the feature scan, the launch-time check of device features, and what
 * only the CPU mapping checks (argument counts). */
#include <stdlib.h>
#include <string.h>

#define RUDA_KERNEL_CPU_ONLY 1 /* this program embeds no kernel text */
#include <ruda/kernel_dialect.h>

#include "base/alloc.h"
#include "server/kernel_object.h"
#include "server/portable_kernel.h"
#include "test.h"
#include "test_kernel.h"

RUDA_KERNEL(two_buffers, RUDA_DIM(8, 1, 1), RUDA_BUFFER(float *, a), RUDA_BUFFER(float *, b),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) b[u.abs_x] = a[u.abs_x];
  }
}

/* Each unit's abs_x, and the natural form's bounds check, at ruda
 * positions whose units' abs_x lie below 2^31 (the copy of the body that
 * computes abs_x without wrapping), reach past it, and wrap past 2^32 as
 * on a GPU (the other copy). 100 units: a ruda can straddle both. */
RUDA_KERNEL(abs_x_of_units, RUDA_DIM(100, 1, 1), RUDA_BUFFER(uint32_t *, out),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    out[u.x] = u.abs_x;
    if (u.abs_x < n) out[100 + u.x] = u.abs_x;
  }
}

TEST(cpu_mapping_gives_abs_x_below_and_past_2_31_and_wraps_at_2_32) {
  static const uint32_t positions[] = {0, 1, 21474835, 21474836, 30000000, 42949672};
  for (size_t p = 0; p < sizeof positions / sizeof positions[0]; p++) {
    uint32_t out[200];
    void *bufs[1] = {out};
    uint64_t info[1] = {positions[p] * 100u + 50u}; /* n: half of the ruda's units */
    ruda_cpu_kernel_ctx_t ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.ruda_pos.x = positions[p];
    ctx.ruda_pos.y = ctx.ruda_pos.z = 0;
    ctx.ruda_count.x = 42949673;
    ctx.ruda_count.y = ctx.ruda_count.z = 1;
    ctx.ruda_dim = ruda_dim_new_1d(100);
    ctx.buffers = bufs;
    ctx.num_buffers = 1;
    ctx.info = info;
    ctx.info_len = 1;
    memset(out, 0xff, sizeof out);
    RUDA_KERNEL_CODE(abs_x_of_units)->cpu_fn(&ctx);
    uint32_t n = (uint32_t)info[0];
    for (uint32_t x = 0; x < 100; x++) {
      uint32_t want = positions[p] * 100u + x; /* modulo 2^32 */
      ASSERT_UEQ(out[x], want);
      ASSERT_UEQ(out[100 + x], want < n ? want : UINT32_MAX);
    }
  }
}

/* The natural form's fast path: the CPU mapping lets the compiler split
 * the unit loop at a bound on u.abs_x (RUDA__CPU_UNITS). Bounds written
 * each way round, inclusive, from below, 64-bit, and in a 2-D ruda, at
 * every place relative to the ruda's units (before, at its first, inside,
 * at its last, past it) must give what one unit at a time would. */
RUDA_KERNEL(bounds_of_units, RUDA_DIM(64, 1, 1), RUDA_BUFFER(uint32_t *, out),
            RUDA_SCALAR(uint32_t, n), RUDA_SCALAR(uint64_t, n64)) {
  RUDA_UNITS_NOWAIT(u) {
    uint32_t *o = out + 6 * u.x;
    if (u.abs_x < n) o[0] = u.abs_x;
    if (n > u.abs_x) o[1] = u.abs_x + 1;
    if (u.abs_x <= n) o[2] = u.abs_x + 2;
    if (u.abs_x >= n) o[3] = u.abs_x + 3;
    if (u.abs_x < n64) o[4] = u.abs_x + 4;
    if (u.abs_x < n) continue;
    o[5] = u.abs_x + 5;
  }
}
RUDA_KERNEL(bounds_of_units_2d, RUDA_DIM(16, 4, 1), RUDA_BUFFER(uint32_t *, out),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) out[u.index] = u.abs_x * 10u + u.y;
  }
}

static void run_units_kernel(const ruda_kernel_code_t *code, uint32_t pos, uint32_t dim_x,
                             uint32_t dim_y, void *out, const uint64_t *info, size_t info_len) {
  void *bufs[1] = {out};
  ruda_cpu_kernel_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.ruda_pos.x = pos;
  ctx.ruda_count.x = pos + 1;
  ctx.ruda_count.y = ctx.ruda_count.z = 1;
  ctx.ruda_dim = ruda_dim_new_3d(dim_x, dim_y, 1);
  ctx.buffers = bufs;
  ctx.num_buffers = 1;
  ctx.info = info;
  ctx.info_len = info_len;
  code->cpu_fn(&ctx);
}

TEST(cpu_mapping_splits_the_natural_form_at_any_bound) {
  static const uint32_t positions[] = {0, 3, 33554431}; /* the last: abs_x up to 2^31 - 1 */
  for (size_t p = 0; p < sizeof positions / sizeof positions[0]; p++) {
    uint32_t first = positions[p] * 64u;
    const uint32_t bounds[] = {0, first ? first - 1 : 0, first, first + 1, first + 37,
                               first + 63, first + 64, UINT32_MAX};
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++) {
      uint32_t n = bounds[b];
      uint32_t out[6 * 64];
      uint64_t info[2] = {n, (uint64_t)n + (n == UINT32_MAX ? 1 : 0)};
      memset(out, 0xff, sizeof out);
      run_units_kernel(RUDA_KERNEL_CODE(bounds_of_units), positions[p], 64, 1, out, info, 2);
      for (uint32_t x = 0; x < 64; x++) test_check_unit_bounds(out + 6 * x, first + x, n, info[1]);
      uint32_t out2[64];
      memset(out2, 0xff, sizeof out2);
      uint32_t first2 = positions[p] * 16u;
      uint32_t n2 = n == UINT32_MAX ? n : n / 4; /* the same places for 16 units */
      uint64_t info2[1] = {n2};
      run_units_kernel(RUDA_KERNEL_CODE(bounds_of_units_2d), positions[p], 16, 4, out2, info2, 1);
      for (uint32_t y = 0; y < 4; y++)
        for (uint32_t x = 0; x < 16; x++)
          ASSERT_UEQ(out2[y * 16 + x], first2 + x < n2 ? (first2 + x) * 10u + y : UINT32_MAX);
    }
  }
}

TEST(preludes_are_built_in_and_composed_before_the_text) {
  size_t n = 0;
  const char *cuda = ruda__portable_prelude(RUDA__PORTABLE_CUDA, &n);
  ASSERT_UGT(n, 1000);
  ASSERT_UEQ(strlen(cuda), n);
  ASSERT_STR_CONTAINS(cuda, "#line 1 \"ruda/dialect/common.h\"");
  ASSERT_STR_CONTAINS(cuda, "#line 1 \"ruda/dialect/cuda.h\"");
  ASSERT_STR_CONTAINS(cuda, "extern \"C\" __global__");
  const char *ocl = ruda__portable_prelude(RUDA__PORTABLE_OPENCL, &n);
  ASSERT_STR_CONTAINS(ocl, "#line 1 \"ruda/dialect/opencl.h\"");
  ASSERT_STR_CONTAINS(ocl, "__kernel");
  ASSERT_NULL(strstr(ocl, "#include \"ruda/"));

  const char text[] = "#line 1 \"k.c\"\nRUDA_KERNEL(k, RUDA_DIM(1, 1, 1)) {}\n";
  char *src = NULL;
  size_t len = 0;
  ASSERT_OK(ruda__portable_source(RUDA__PORTABLE_OPENCL, "k", text, sizeof text - 1, &src, &len));
  ASSERT_UEQ(len, n + 1 + sizeof text - 1);
  ASSERT_TRUE(memcmp(src, ocl, n) == 0);
  ASSERT_STR_EQ(src + n + 1, text);
  free(src);
}

TEST(a_kernel_built_without_its_text_says_so) {
  char *src = (char *)"untouched";
  ruda_status_t s = ruda__portable_source(RUDA__PORTABLE_CUDA, "lonely", NULL, 0, &src, NULL);
  ASSERT_NULL(src);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_COMPILATION_NO_CODE));
  char text[1024];
  ruda_status_format(s, text, sizeof text);
  ASSERT_STR_CONTAINS(text, "portable kernel 'lonely' was built without its text");
  ASSERT_STR_CONTAINS(text, "RUDA_KERNEL_CPU_ONLY");
  ruda_status_free(s);
}

/* The composed source comes from base/alloc.h: an injected failure is an
 * out-of-memory launch error naming the kernel, and *out stays NULL. */
TEST(no_memory_for_the_composed_source_is_an_error) {
  const char text[] = "RUDA_KERNEL(k, RUDA_DIM(1, 1, 1)) {}\n";
  char *src = (char *)"untouched";
  ruda__test_fail_alloc_after(0);
  ruda_status_t s = ruda__portable_source(RUDA__PORTABLE_OPENCL, "starved", text,
                                          sizeof text - 1, &src, NULL);
  uint64_t injected = ruda__test_failed_allocs();
  ruda__test_fail_alloc_after(-1);
  ASSERT_UGE(injected, 1);
  ASSERT_NULL(src);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_OUT_OF_MEMORY);
  ruda_status_free(s);
  /* With memory again, the same call composes the source. */
  size_t len = 0;
  ASSERT_OK(ruda__portable_source(RUDA__PORTABLE_OPENCL, "starved", text, sizeof text - 1, &src,
                                  &len));
  ASSERT_NOT_NULL(src);
  ASSERT_STR_CONTAINS(src, "RUDA_KERNEL(k");
  ruda__free(src);
}

TEST(feature_scan_finds_first_uses_with_their_file_and_line) {
  const char text[] =
      "#line 1 \"/src/k.c\"\n"
      "// double in a comment, ruda_atomic_add_u64 too\n"
      "/* double\n   ruda_atomic_max_i64 */\n"
      "const char *s = \"double ruda_atomic_cas_u64\";\n"
      "#define X double\n"
      "RUDA_KERNEL(k, RUDA_DIM(1, 1, 1), RUDA_BUFFER(float *, p)) {\n"
      "  ruda_atomic_add_u32(0, 1); int doubled = 0; ruda_atomic_add_f32(0, 1.0f);\n"
      "#line 40 \"/src/inc.h\"\n"
      "  ruda_atomic_min_i64(0, 1);\n"
      "  double d = 0;\n"
      "}\n";
  ruda__portable_needs_t n;
  ruda__portable_scan_needs(text, sizeof text - 1, &n);
  ASSERT_UEQ(n.features, RUDA_FEATURE_ATOMIC_I64 | RUDA_FEATURE_F64);
  ASSERT_UEQ(n.num_uses, 2);
  ASSERT_UEQ(n.uses[0].feature, RUDA_FEATURE_ATOMIC_I64);
  ASSERT_STR_EQ(n.uses[0].token, "ruda_atomic_min_i64");
  ASSERT_STR_EQ(n.uses[0].file, "/src/inc.h");
  ASSERT_UEQ(n.uses[0].line, 40);
  ASSERT_UEQ(n.uses[1].feature, RUDA_FEATURE_F64);
  ASSERT_STR_EQ(n.uses[1].token, "double");
  ASSERT_UEQ(n.uses[1].line, 41);

  const char f64add[] = "#line 7 \"a.c\"\nx = ruda_atomic_add_f64(p, 1.0);\n";
  ruda__portable_scan_needs(f64add, sizeof f64add - 1, &n);
  ASSERT_UEQ(n.features, RUDA_FEATURE_ATOMIC_I64 | RUDA_FEATURE_F64);
  ASSERT_UEQ(n.uses[0].line, 7);

  ruda__portable_scan_needs(NULL, 0, &n);
  ASSERT_UEQ(n.features, 0);
}

TEST(missing_features_fail_with_the_kernel_the_use_and_the_device) {
  const char text[] = "#line 1 \"/src/k.c\"\n\n\n  ruda_atomic_add_u64(p, 1);\n";
  ruda__portable_needs_t n;
  ruda__portable_scan_needs(text, sizeof text - 1, &n);
  ASSERT_NULL(ruda__portable_check_needs(&n, "counts", RUDA_FEATURE_ATOMIC_I64, "x"));
  ruda_status_t s = ruda__portable_check_needs(&n, "counts", RUDA_FEATURE_F64, "opencl:0 (tiny)");
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_LAUNCH_COMPILATION);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION));
  char msg[1024];
  ruda_status_format(s, msg, sizeof msg);
  ASSERT_STR_CONTAINS(msg, "kernel 'counts' uses 64-bit atomics (`ruda_atomic_add_u64` at "
                           "/src/k.c:3), which opencl:0 (tiny) does not support (feature "
                           "atomic_i64)");
  ruda_status_free(s);
}

/* The kernel object keeps what its portable text needs; a device without it
 * is refused before compiling, unless the kernel also carries code of the
 * device's own format, and a CPU device never (it runs the native form). */
TEST(kernel_objects_check_features_for_the_device) {
  const char text[] = "#line 1 \"k.c\"\nRUDA_KERNEL(k, x) { double d = ruda_atomic_add_f64(p, 1); }\n";
  ruda_kernel_code_t code[2] = {{RUDA_KERNEL_FORMAT_PORTABLE, text, 0, NULL, NULL, NULL, 0, "k.c"},
                                ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, "raw")};
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "k";
  d.ruda_dim = ruda_dim_new_1d(1);
  d.code = code;
  d.num_code = 1;
  ruda_kernel_t *k = NULL;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ASSERT_UEQ(k->portable_needs.features, RUDA_FEATURE_F64 | RUDA_FEATURE_ATOMIC_I64);
  ASSERT_NULL(ruda__kernel_check_features(k, RUDA_DEVICE_TYPE_CPU, 0, "cpu:0"));
  ASSERT_NULL(ruda__kernel_check_features(k, RUDA_DEVICE_TYPE_CUDA,
                                          RUDA_FEATURE_F64 | RUDA_FEATURE_ATOMIC_I64, "cuda:0"));
  ruda_status_t s = ruda__kernel_check_features(k, RUDA_DEVICE_TYPE_OPENCL, RUDA_FEATURE_F64,
                                                "opencl:1 (no atomics)");
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION));
  ruda_status_free(s);
  ruda_kernel_release(k);
  d.num_code = 2;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ASSERT_NULL(ruda__kernel_check_features(k, RUDA_DEVICE_TYPE_OPENCL, 0, "opencl:1"));
  ruda_kernel_release(k);
}

/* On the CPU the kernel function checks the launch's buffers and info
 * words against its declaration (GPU code cannot). */
TEST(cpu_mapping_refuses_too_few_arguments) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create(cpu, &c));
  ruda_client_t *sc = NULL;
  ASSERT_OK(ruda_client_on_stream(c, ruda_stream_id_next(), &sc));
  ruda_kernel_t *k = NULL;
  ASSERT_OK(RUDA_KERNEL_CREATE(two_buffers, &k));
  ASSERT_NULL(ruda_kernel_desc(k)->code[0].data); /* CPU only: no text */
  float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(sc, v, sizeof v, &h));
  ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1};
  ASSERT_OK(ruda_client_launch(sc, k, ruda_count_static(1, 1, 1), &args));
  ruda_status_t s = ruda_client_sync(sc);
  ASSERT_NOT_NULL(s);
  ruda_status_t u = ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN);
  ASSERT_NOT_NULL(u);
  ASSERT_STR_CONTAINS(ruda_status_reason(u), "kernel 'two_buffers' takes 2 buffers and 1 scalars; "
                                             "the launch passed 1 buffers and 0 info words");
  ruda_status_free(s);
  /* The typed launcher passes them right. */
  ruda_handle_t h2;
  ASSERT_OK(ruda_client_empty(sc, sizeof v, &h2));
  ASSERT_OK(RUDA_LAUNCH(two_buffers, sc, k, ruda_count_static(1, 1, 1), &h, &h2, 5u));
  float out[8] = {0};
  ASSERT_OK(ruda_client_read(sc, &h2, out, sizeof out));
  ASSERT_DBL_NEAR(out[4], 5, 0);
  ruda_handle_release(&h);
  ruda_handle_release(&h2);
  ruda_kernel_release(k);
  ruda_client_release(sc);
  ruda_client_release(c);
}

/* Scans `text` (`len` bytes) for kernel `name` into `p`: a declaration of
 * `buffers` buffers and `scalars` scalars. */
static void expect_params(ruda__portable_params_t *p, const char *text, size_t len,
                          const char *name, uint32_t buffers, uint32_t scalars) {
  ruda__portable_scan_params(text, len, name, p);
  ASSERT_TRUE(p->known);
  ASSERT_UEQ(p->buffers, buffers);
  ASSERT_UEQ(p->scalars, scalars);
}

TEST(a_declaration_gives_the_kernel_buffers_and_scalars) {
  static const char text[] =
      "#line 1 \"/src/k.c\"\n"
      "/* RUDA_KERNEL(first, RUDA_DIM(1, 1, 1), RUDA_BUFFER(int *, no)) */\n"
      "RUDA_KERNEL(other, RUDA_DIM_ANY, RUDA_SCALAR(int, a)) {}\n"
      "RUDA_KERNEL ( first , RUDA_DIM(WIDTH(2), 1, 1),\n"
      "  RUDA_BUFFER(const float *restrict, in), // a comment, RUDA_SCALAR(int, z)\n"
      "  RUDA_SHARED(float, tile, 64), RUDA_BUFFER(float *, out),\n"
      "  RUDA_SCALAR(uint32_t, n), RUDA_SCALAR(float, scale)) {\n"
      "  const char *s = \"RUDA_SCALAR(int, q)\";\n"
      "}\n";
  ruda__portable_params_t p;
  expect_params(&p, text, sizeof text - 1, "first", 2, 2);
  expect_params(&p, text, sizeof text - 1, "other", 0, 1);
  ruda__portable_scan_params(text, sizeof text - 1, "absent", &p);
  ASSERT_FALSE(p.known);
  ruda__portable_scan_params(NULL, 0, "first", &p);
  ASSERT_FALSE(p.known);
  /* An unclosed declaration is not trusted. */
  ruda__portable_scan_params("RUDA_KERNEL(first, RUDA_DIM_ANY, RUDA_BUFFER(int *, x)", 52,
                             "first", &p);
  ASSERT_FALSE(p.known);

  ruda__portable_scan_params(text, sizeof text - 1, "first", &p);
  ASSERT_NULL(ruda__portable_check_args(&p, text, sizeof text - 1, "first", 2, 2));
  ASSERT_NULL(ruda__portable_check_args(&p, text, sizeof text - 1, "first", 2, 5));
  ruda_status_t s = ruda__portable_check_args(&p, text, sizeof text - 1, "first", 2, 1);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "scalar 'scale' has no value");
  ruda_status_free(s);
  s = ruda__portable_check_args(&p, text, sizeof text - 1, "first", 1, 2);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "buffer 'out' has no value");
  ruda_status_free(s);
  s = ruda__portable_check_args(&p, text, sizeof text - 1, "first", 3, 2);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "1 buffer too many");
  ruda_status_free(s);
}

/* A buffer whose type points to const may be given read-only memory; the
 * const must come before the first '*' (`float *const` is a const pointer
 * to floats it may write), and a typedef'd pointer shows no '*'. */
TEST(only_a_buffer_declared_pointing_to_const_takes_read_only_memory) {
  static const char text[] =
      "RUDA_KERNEL(k, RUDA_DIM_ANY, RUDA_BUFFER(const float *restrict, a),\n"
      "  RUDA_BUFFER(float const *, b), RUDA_BUFFER(float *const, c),\n"
      "  RUDA_BUFFER(my_ptr, d), RUDA_BUFFER(const_ish_t *, e),\n"
      "  RUDA_BUFFER(  volatile   const int  *, f)) {}\n";
  ruda__portable_params_t p;
  expect_params(&p, text, sizeof text - 1, "k", 6, 0);
  ASSERT_NULL(ruda__portable_check_read_only(&p, text, sizeof text - 1, "k", 0));
  ASSERT_NULL(ruda__portable_check_read_only(&p, text, sizeof text - 1, "k", 1));
  ASSERT_NULL(ruda__portable_check_read_only(&p, text, sizeof text - 1, "k", 5));
  ruda_status_t s = ruda__portable_check_read_only(&p, text, sizeof text - 1, "k", 2);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(s),
                      "launch of 'k': buffer 'c' (buffer 2) is a read-only DLPack import, and "
                      "the kernel declares it RUDA_BUFFER(float *const, c), not const");
  ruda_status_free(s);
  s = ruda__portable_check_read_only(&p, text, sizeof text - 1, "k", 3);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "RUDA_BUFFER(my_ptr, d)");
  ruda_status_free(s);
  s = ruda__portable_check_read_only(&p, text, sizeof text - 1, "k", 4);
  ASSERT_STR_CONTAINS(ruda_status_reason(s), "buffer 'e'");
  ruda_status_free(s);
}
