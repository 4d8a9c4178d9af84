/* Conformance: launches, dispatch counts, limits, stream errors, profiling,
 * concurrency and cross-stream ordering. */

#include "cts.h"

static void add_vectors(ruda_client_t *c, size_t n, bool dynamic) {
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *out = malloc(n * sizeof *out);
  for (size_t i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = 0.25f * (float)i + 1.0f;
  }
  ruda_handle_t bufs[3];
  ASSERT_OK(ruda_client_create_buffer(c, a, n * sizeof *a, &bufs[0]));
  ASSERT_OK(ruda_client_create_buffer(c, b, n * sizeof *b, &bufs[1]));
  ASSERT_OK(ruda_client_empty(c, n * sizeof *out, &bufs[2]));
  ruda_kernel_t *k = cts_kernel_add_f32();
  uint64_t info[1] = {n};
  ruda_kernel_args_t args = {.buffers = bufs, .num_buffers = 3, .info = {info, 1, 1}};
  uint32_t rudas = (uint32_t)((n + CTS_UNITS - 1) / CTS_UNITS);
  ruda_handle_t count_buf = {0};
  ruda_count_t count = ruda_count_static(rudas, 1, 1);
  if (dynamic) {
    uint32_t xyz[3] = {rudas, 1, 1};
    ASSERT_OK(ruda_client_create_buffer(c, xyz, sizeof xyz, &count_buf));
    count = ruda_count_dynamic(&count_buf);
  }
  ASSERT_OK(ruda_client_launch(c, k, count, &args));
  ASSERT_OK(ruda_client_read(c, &bufs[2], out, n * sizeof *out));
  for (size_t i = 0; i < n; i++) {
    if (out[i] != a[i] + b[i]) {
      ASSERT_DBL_NEAR(out[i], a[i] + b[i], 0);
    }
  }
  ruda_kernel_release(k);
  for (int i = 0; i < 3; i++) ruda_handle_release(&bufs[i]);
  ruda_handle_release(&count_buf);
  free(a);
  free(b);
  free(out);
}

TEST(elementwise_add_static_count) { add_vectors(cts_client(), 100000, false); }
TEST(elementwise_add_dynamic_count) { add_vectors(cts_client(), 4099, true); }
TEST(elementwise_add_single_element) { add_vectors(cts_client(), 1, false); }

TEST(shared_memory_reduction) {
  ruda_client_t *c = cts_client();
  enum { RUDAS = 37 };
  float in[RUDAS * CTS_UNITS], out[RUDAS];
  for (int i = 0; i < RUDAS * CTS_UNITS; i++) in[i] = (float)(i % 13);
  ruda_handle_t b[2];
  ASSERT_OK(ruda_client_create_buffer(c, in, sizeof in, &b[0]));
  ASSERT_OK(ruda_client_empty(c, sizeof out, &b[1]));
  ruda_kernel_t *k = cts_kernel_sum_shared();
  ruda_kernel_args_t args = {.buffers = b, .num_buffers = 2};
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(RUDAS, 1, 1), &args));
  ASSERT_OK(ruda_client_read(c, &b[1], out, sizeof out));
  for (int r = 0; r < RUDAS; r++) {
    float want = 0;
    for (int u = 0; u < CTS_UNITS; u++) want += in[r * CTS_UNITS + u];
    ASSERT_DBL_NEAR(out[r], want, 1e-3);
  }
  ruda_kernel_release(k);
  ruda_handle_release(&b[0]);
  ruda_handle_release(&b[1]);
}

TEST(empty_count_launches_nothing) {
  uint32_t v[CTS_UNITS];
  cts_fill_and_read(cts_client(), ruda_count_static(0, 1, 1), 5, v);
  ASSERT_UEQ(v[0], 0);
}

/* A launch that breaks a limit the device's properties decide: the launch
 * itself fails as ServerError::Launch(LaunchError::TooManyResources(
 * ResourceLimitError::...)), naming the kernel, the stream,
 * the limit and the value; nothing is queued, so the stream stays
 * healthy. */
static void expect_limit(ruda_dim_t dim, uint64_t shared, ruda_error_kind_t kind) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_client_t *other = cts_fresh_stream_client();
  const ruda_device_properties_t *p = ruda_client_properties(c);
  ruda_kernel_t *k = cts_kernel_with(dim, shared);
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL);
  ASSERT_NOT_NULL(s);
  /* Nothing was queued: no stream is unhealthy. */
  ASSERT_OK(ruda_client_flush(other));
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage(c, &u));
  ruda_status_t e = s;
  ASSERT_STR_EQ(ruda_status_kernel(e), "empty");
  uint64_t stream = 0;
  ASSERT_TRUE(ruda_status_stream(e, &stream));
  ASSERT_UEQ(stream, ruda_client_stream(c).value);
  {
    char text[1024];
    ruda_status_format(e, text, sizeof text);
    ASSERT_STR_CONTAINS(text, "A launch of kernel 'empty' on stream");
  }
  ASSERT_EQ(ruda_status_kind(e), RUDA_ERR_SERVER_LAUNCH);
  ASSERT_EQ(ruda_status_kind(ruda_status_cause(e)), RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES);
  ruda_status_t limit = ruda_status_find(s, kind);
  ASSERT_NOT_NULL(limit);
  if (kind == RUDA_ERR_RESOURCE_SHARED_MEMORY) {
    ASSERT_UEQ(ruda_status_requested(limit), shared);
    ASSERT_UEQ(ruda_status_max(limit), p->hardware.max_shared_memory_size);
    char text[1024];
    ruda_status_format(s, text, sizeof text);
    ASSERT_STR_CONTAINS(text, "Too much shared memory requested.");
  } else if (kind == RUDA_ERR_RESOURCE_UNITS) {
    ASSERT_UEQ(ruda_status_requested(limit), ruda_dim_num_elems(dim));
    ASSERT_UEQ(ruda_status_max(limit), p->hardware.max_units_per_ruda);
    char text[1024], want[128];
    ruda_status_format(s, text, sizeof text);
    snprintf(want, sizeof want, "Requested %llu units, max units is %u.",
             (unsigned long long)ruda_dim_num_elems(dim), p->hardware.max_units_per_ruda);
    ASSERT_STR_CONTAINS(text, want);
  } else {
    uint32_t req[3], max[3];
    ASSERT_TRUE(ruda_status_dims(limit, req, max));
    ASSERT_UEQ(req[0], dim.x);
    ASSERT_UEQ(max[0], p->hardware.max_ruda_dim[0]);
  }
  ruda_status_free(s);
  /* Drained: healthy again. */
  ASSERT_OK(ruda_client_flush(c));
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_release(k);
  ruda_client_release(c);
  ruda_client_release(other);
}

TEST(shared_memory_limit_error) {
  const ruda_device_properties_t *p = ruda_client_properties(cts_client());
  expect_limit(ruda_dim_new_1d(1), p->hardware.max_shared_memory_size + 4,
               RUDA_ERR_RESOURCE_SHARED_MEMORY);
}

TEST(units_limit_error) {
  const ruda_device_properties_t *p = ruda_client_properties(cts_client());
  /* Within every axis limit, too many units in total. */
  uint32_t x = p->hardware.max_ruda_dim[0], y = p->hardware.max_ruda_dim[1];
  if ((uint64_t)x * y <= p->hardware.max_units_per_ruda) SKIP("dims cannot exceed the unit limit");
  expect_limit(ruda_dim_new_2d(x, y), 0, RUDA_ERR_RESOURCE_UNITS);
}

TEST(ruda_dim_limit_error) {
  const ruda_device_properties_t *p = ruda_client_properties(cts_client());
  if (p->hardware.max_ruda_dim[0] == UINT32_MAX) SKIP("no dim limit");
  expect_limit(ruda_dim_new_1d(p->hardware.max_ruda_dim[0] + 1), 0, RUDA_ERR_RESOURCE_RUDA_DIM);
}

TEST(kernel_failure_surfaces_on_its_stream) {
  cts_require("cpu_kernel_fail");
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *k = cts_kernel_fail();
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(4, 1, 1), NULL));
  ruda_status_t s = ruda_client_sync(c);
  cts_expect_error(s, RUDA_ERR_LAUNCH_UNKNOWN, "ruda 1 saw a bad value");
  /* The error names the kernel and the stream, and says nothing about
   * profiling: nothing was profiled. */
  ruda_status_t launch = ruda_status_find(s, RUDA_ERR_SERVER_LAUNCH);
  ASSERT_NOT_NULL(launch);
  ASSERT_STR_EQ(ruda_status_kernel(launch), "fail");
  uint64_t stream = 0;
  ASSERT_TRUE(ruda_status_stream(launch, &stream));
  ASSERT_UEQ(stream, ruda_client_stream(c).value);
  cts_expect_text(s, "A launch of kernel 'fail' on stream", "profiling");
  ruda_status_free(s);
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_release(k);
  ruda_client_release(c);
}

static void never_called(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

TEST(launch_without_code_for_the_backend) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "only_elsewhere";
  d.ruda_dim = ruda_dim_new_1d(1);
  ruda_kernel_t *k = NULL;
  ruda_kernel_code_t code = cts_is_cpu()
      ? ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C,
                              "extern \"C\" __global__ void only_elsewhere() {}")
      : ruda_kernel_code_cpu(never_called);
  d.code = &code;
  d.num_code = 1;
  ASSERT_OK(ruda_kernel_create(&d, &k));
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL));
  ruda_status_t s = ruda_client_flush(c);
  ASSERT_NOT_NULL(ruda_status_find(s, RUDA_ERR_LAUNCH_COMPILATION));
  ASSERT_STR_EQ(ruda_status_kernel(ruda_status_find(s, RUDA_ERR_SERVER_LAUNCH)), "only_elsewhere");
  ruda_status_free(s);
  ruda_kernel_release(k);
  ruda_client_release(c);
}

TEST(invalid_launch_arguments_return_at_once) {
  ruda_client_t *c = cts_client();
  ruda_kernel_t *k = cts_kernel_inc_u32(); /* one buffer, one scalar */
  ASSERT_ERR_KIND(ruda_client_launch(c, NULL, ruda_count_static(1, 1, 1), NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
  ruda_handle_t empty = {0};
  uint64_t n = 1;
  ruda_kernel_args_t args = {.buffers = &empty, .num_buffers = 1, .info = {&n, 1, 1}};
  ASSERT_ERR_KIND(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &args),
                  RUDA_ERR_INVALID_HANDLE);
  ASSERT_ERR_KIND(ruda_client_launch(c, k, ruda_count_dynamic(NULL), NULL),
                  RUDA_ERR_INVALID_ARGUMENT);
  ruda_kernel_desc_t bad = {.name = "x", .ruda_dim = {0, 1, 1}};
  ruda_kernel_t *kb = NULL;
  ASSERT_ERR_KIND(ruda_kernel_create(&bad, &kb), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_release(k);
}

TEST(out_of_memory_then_still_usable) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t h;
  uint64_t huge = cts_empty_unallocatable(c, &h);
  ruda_status_t s = ruda_client_flush(c);
  ASSERT_NOT_NULL(s);
  bool oom = ruda_status_find(s, RUDA_ERR_IO_BUFFER_TOO_BIG) ||
             ruda_status_find(s, RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_TRUE(oom);
  ruda_status_free(s);
  /* The failed handle is unbound: using it reports NotFound. */
  uint8_t tiny[4];
  ruda_handle_t view = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_end(&view, huge - 4));
  ASSERT_ERR_KIND(ruda_client_read(c, &view, tiny, sizeof tiny), RUDA_ERR_IO_NOT_FOUND);
  ruda_handle_release(&view);
  ruda_handle_release(&h);
  /* And the client still works. */
  cts_still_usable(c);
  ruda_client_release(c);
}

static ruda_status_t launch_twice(ruda_client_t *c, void *ctx) {
  ruda_handle_t *h = ctx;
  ruda_kernel_t *k = cts_kernel_fill_u32();
  uint64_t info[2] = {1 << 16, 42};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {info, 2, 2}};
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static((1 << 16) / CTS_UNITS, 1, 1), &args);
  if (!s) s = ruda_client_launch(c, k, ruda_count_static((1 << 16) / CTS_UNITS, 1, 1), &args);
  ruda_kernel_release(k);
  return s;
}

static ruda_status_t nested_profile(ruda_client_t *c, void *ctx) {
  ruda_profile_duration_t inner;
  ruda_status_t s = ruda_client_profile(c, "inner", launch_twice, ctx, &inner);
  if (!s && ruda_profile_duration_ns(inner) == 0) {
    return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "inner profile measured nothing");
  }
  return s;
}

TEST(profiling_measures_and_nests) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_handle_t h = cts_empty(c, (1 << 16) * 4);
  ruda_profile_duration_t d;
  ASSERT_OK(ruda_client_profile(c, "outer", nested_profile, &h, &d));
  ASSERT_UGT(ruda_profile_duration_ns(d), 0);
  uint32_t v[4];
  ruda_handle_t view = ruda_handle_clone(&h);
  ASSERT_OK(ruda_handle_offset_end(&view, (1 << 16) * 4 - 16));
  ASSERT_OK(ruda_client_read(c, &view, v, sizeof v));
  ASSERT_UEQ(v[3], 42);
  ruda_handle_release(&view);
  ruda_handle_release(&h);
  ruda_client_release(c);
}

/* Launches k on one ruda without arguments, then releases it: the
 * launch's status. */
static ruda_status_t launch_once(ruda_client_t *c, ruda_kernel_t *k) {
  ruda_status_t s = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), NULL);
  ruda_kernel_release(k);
  return s;
}

/* Profiles `fn` on c; the profile must fail with an error holding `kind`:
 * that status (the caller frees it). */
static ruda_status_t profile_error(ruda_client_t *c, const char *name,
                                   ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                   ruda_error_kind_t kind) {
  ruda_profile_duration_t d;
  ruda_status_t s = ruda_client_profile(c, name, fn, NULL, &d);
  cts_expect_error(s, kind, NULL);
  return s;
}

/* A kernel that fails on every backend after the launch was accepted: its
 * only code is OpenCL C that does not build, so cpu:N and cuda:N find no
 * code they run, and opencl:N's clBuildProgram fails; each reports a
 * compilation error on the stream. */
static ruda_status_t failing_launch(ruda_client_t *c, void *ctx) {
  (void)ctx;
  ruda_kernel_code_t code = ruda_kernel_code_text(
      RUDA_KERNEL_FORMAT_OPENCL_C, "__kernel void no_code_here(void) { not OpenCL C; }");
  ruda_kernel_desc_t d = {.name = "no_code_here", .ruda_dim = {1, 1, 1}, .code = &code,
                          .num_code = 1};
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  return s ? s : launch_once(c, k);
}

TEST(profile_with_a_failing_launch_reports_a_profile_error) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_status_t s = profile_error(c, "failing", failing_launch, RUDA_ERR_LAUNCH_COMPILATION);
  ASSERT_EQ(ruda_status_family(s), RUDA_FAMILY_PROFILE);
  ruda_status_free(s);
  /* Observing took nothing away: the stream still reports the error, once. */
  s = ruda_client_sync(c);
  cts_expect_error(s, RUDA_ERR_LAUNCH_COMPILATION, NULL);
  ASSERT_UEQ(ruda_status_error_count(s), 1);
  ruda_status_free(s);
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_release(c);
}

static ruda_status_t over_limit_launch(ruda_client_t *c, void *ctx) {
  (void)ctx;
  uint64_t over = ruda_client_properties(c)->hardware.max_shared_memory_size + 1;
  return launch_once(c, cts_kernel_with(ruda_dim_new_1d(1), over));
}

/* A launch refused at once inside a profile is the function's own error,
 * returned as is. */
TEST(profile_returns_a_refused_launch_as_is) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_status_t s =
      profile_error(c, "over_limit", over_limit_launch, RUDA_ERR_RESOURCE_SHARED_MEMORY);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_LAUNCH);
  ruda_status_free(s);
  /* Refused at the call: nothing was queued. */
  ASSERT_OK(ruda_client_sync(c));
  ruda_client_release(c);
}

static int submitter(int id) {
  int failures = 0;
  ruda_client_t *c = cts_client(); /* each thread: its own default stream */
  ruda_kernel_t *k = cts_kernel_add_f32();
  enum { N = 3000 };
  float a[N], b[N], out[N];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < N; i++) {
      a[i] = (float)(i + id);
      b[i] = (float)round;
    }
    ruda_handle_t bufs[3];
    ruda_status_t s = ruda_client_create_buffer(c, a, sizeof a, &bufs[0]);
    if (!s) s = ruda_client_create_buffer(c, b, sizeof b, &bufs[1]);
    if (!s) s = ruda_client_empty(c, sizeof out, &bufs[2]);
    uint64_t info[1] = {N};
    ruda_kernel_args_t args = {.buffers = bufs, .num_buffers = 3, .info = {info, 1, 1}};
    if (!s) s = ruda_client_launch(c, k, ruda_count_static((N + CTS_UNITS - 1) / CTS_UNITS, 1, 1), &args);
    if (!s) s = ruda_client_read(c, &bufs[2], out, sizeof out);
    if (s) {
      ruda_status_free(s);
      failures++;
    } else {
      for (int i = 0; i < N; i++) {
        if (out[i] != a[i] + b[i]) {
          failures++;
          break;
        }
      }
    }
    for (int i = 0; i < 3; i++) ruda_handle_release(&bufs[i]);
  }
  ruda_kernel_release(k);
  return failures;
}

TEST(many_threads_submitting_at_once) { cts_on_threads(8, submitter); }

TEST(cross_stream_producer_consumer) {
  ruda_client_t *producer = cts_fresh_stream_client();
  ruda_client_t *consumer = cts_fresh_stream_client();
  enum { N = 1 << 18 };
  ruda_handle_t h = cts_empty(producer, N * 4);
  ruda_kernel_t *fill = cts_kernel_fill_u32();
  for (uint32_t round = 1; round <= 5; round++) {
    uint64_t info[2] = {N, round};
    ruda_kernel_args_t args = {.buffers = &h, .num_buffers = 1, .info = {info, 2, 2}};
    ASSERT_OK(ruda_client_launch(producer, fill, ruda_count_static(N / CTS_UNITS, 1, 1), &args));
    /* The consumer stream reads what the producer stream wrote. */
    ruda_handle_t view = ruda_handle_clone(&h);
    ASSERT_OK(ruda_handle_offset_start(&view, (N - 4) * 4));
    uint32_t tail[4];
    ASSERT_OK(ruda_client_read(consumer, &view, tail, sizeof tail));
    ASSERT_UEQ(tail[3], round);
    ruda_handle_release(&view);
  }
  /* Released on the producer stream while the consumer may still hold it. */
  ruda_handle_release(&h);
  ASSERT_OK(ruda_client_sync(consumer));
  ASSERT_OK(ruda_client_sync(producer));
  ruda_kernel_release(fill);
  ruda_client_release(producer);
  ruda_client_release(consumer);
}

static ruda_status_t inside_exclusive(ruda_client_t *c, void *ctx) {
  int *ran = ctx;
  uint32_t v = 77, out = 0;
  ruda_handle_t h;
  ruda_status_t s = ruda_client_create_buffer(c, &v, sizeof v, &h);
  if (!s) s = ruda_client_read(c, &h, &out, sizeof out);
  ruda_handle_release(&h);
  *ran = (int)out;
  return s;
}

TEST(exclusive_runs_client_calls_inline) {
  ruda_client_t *c = cts_client();
  int ran = 0;
  ASSERT_OK(ruda_client_exclusive(c, inside_exclusive, &ran));
  ASSERT_EQ(ran, 77);
}

TEST(sync_async_future) {
  ruda_client_t *c = cts_fresh_stream_client();
  ruda_kernel_t *k = cts_kernel_empty();
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(3, 1, 1), NULL));
  ruda_future_t *f = NULL;
  ASSERT_OK(ruda_client_sync_async(c, &f));
  ASSERT_OK(ruda_future_wait(f));
  ruda_kernel_release(k);
  ruda_client_release(c);
}
