/* `ruda demo`: a small real workload through the public API, checked.
 *
 * Three kernels, each with a CPU function and CUDA C source so the same
 * program runs on either backend:
 *   vector_add    c = a + b over an odd-sized vector
 *   reduce_sum    a two-pass sum; each ruda reduces its block through
 *                 shared memory
 *   matmul_tiled  C = A * B with 16x16 tiles staged in shared memory
 * Every launch is profiled (ruda_client_profile); the profiling summary and
 * the memory usage report are printed at the end.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/memory.h"
#include "ruda/profiling.h"
#include "ruda_tools.h"
#include "tools_common.h"

#define DEMO_REPEATS 3
#define RED_UNITS 256
#define RED_ITEMS 4 /* elements each unit adds before the tree */
#define TILE 16

void ruda_cmd_demo_help(FILE *f) {
  fprintf(f,
          "usage: ruda demo [--device cpu|cpu:N|cuda:N] [--trace FILE]\n"
          "\n"
          "Runs a small workload through ruda's public API and checks every result:\n"
          "a vector add, a sum reduction through shared memory and a tiled matrix\n"
          "multiply. Prints each check, the memory usage report and the profiling\n"
          "summary. --trace FILE (or RUDA_TRACE=FILE) writes a Chrome trace JSON\n"
          "timeline that ui.perfetto.dev opens.\n"
          "\n"
          "exit codes: 0 every check passed, 1 a check or an operation failed,\n"
          "2 usage error, 3 the device is unavailable.\n");
}

/* ---- Kernels: CPU functions ---- */

static uint32_t info_u32(const ruda_cpu_kernel_ctx_t *ctx, size_t index) {
  uint32_t v = 0;
  if (ctx->info && index / 2 < ctx->info_len) memcpy(&v, (const char *)ctx->info + 4 * index, 4);
  return v;
}

static void vector_add_cpu(const ruda_cpu_kernel_ctx_t *ctx) {
  const float *a = ctx->buffers[0];
  const float *b = ctx->buffers[1];
  float *c = ctx->buffers[2];
  uint32_t n = info_u32(ctx, 0);
  uint64_t units = ctx->ruda_dim.x;
  uint64_t base = (uint64_t)ctx->ruda_pos.x * units;
  for (uint64_t u = 0; u < units; ++u) {
    uint64_t i = base + u;
    if (i < n) c[i] = a[i] + b[i];
  }
}

/* Each unit adds RED_ITEMS elements into its shared slot, then the ruda
 * reduces the slots as a tree, exactly like the CUDA kernel. */
static void reduce_sum_cpu(const ruda_cpu_kernel_ctx_t *ctx) {
  const float *in = ctx->buffers[0];
  float *out = ctx->buffers[1];
  float *sh = ctx->shared;
  uint32_t n = info_u32(ctx, 0);
  uint32_t units = ctx->ruda_dim.x;
  uint64_t base = (uint64_t)ctx->ruda_pos.x * units * RED_ITEMS;
  for (uint32_t u = 0; u < units; ++u) {
    float acc = 0.0f;
    for (uint32_t k = 0; k < RED_ITEMS; ++k) {
      uint64_t i = base + u + (uint64_t)k * units;
      if (i < n) acc += in[i];
    }
    sh[u] = acc;
  }
  for (uint32_t s = units / 2; s > 0; s >>= 1)
    for (uint32_t u = 0; u < s; ++u) sh[u] += sh[u + s];
  out[ctx->ruda_pos.x] = sh[0];
}

static void matmul_tiled_cpu(const ruda_cpu_kernel_ctx_t *ctx) {
  const float *A = ctx->buffers[0];
  const float *B = ctx->buffers[1];
  float *C = ctx->buffers[2];
  uint32_t M = info_u32(ctx, 0), N = info_u32(ctx, 1), K = info_u32(ctx, 2);
  float *As = ctx->shared;           /* TILE x TILE */
  float *Bs = As + TILE * TILE;      /* TILE x TILE */
  float acc[TILE * TILE] = {0};
  uint32_t row0 = ctx->ruda_pos.y * TILE, col0 = ctx->ruda_pos.x * TILE;
  for (uint32_t t = 0; t < K; t += TILE) {
    for (uint32_t ty = 0; ty < TILE; ++ty) {
      for (uint32_t tx = 0; tx < TILE; ++tx) {
        uint32_t r = row0 + ty, k = t + tx;
        As[ty * TILE + tx] = (r < M && k < K) ? A[(uint64_t)r * K + k] : 0.0f;
        uint32_t kb = t + ty, c = col0 + tx;
        Bs[ty * TILE + tx] = (kb < K && c < N) ? B[(uint64_t)kb * N + c] : 0.0f;
      }
    }
    for (uint32_t ty = 0; ty < TILE; ++ty)
      for (uint32_t k = 0; k < TILE; ++k)
        for (uint32_t tx = 0; tx < TILE; ++tx)
          acc[ty * TILE + tx] += As[ty * TILE + k] * Bs[k * TILE + tx];
  }
  for (uint32_t ty = 0; ty < TILE; ++ty)
    for (uint32_t tx = 0; tx < TILE; ++tx) {
      uint32_t r = row0 + ty, c = col0 + tx;
      if (r < M && c < N) C[(uint64_t)r * N + c] = acc[ty * TILE + tx];
    }
}

/* ---- Kernels: CUDA C (parameters: buffers, then the info words) ---- */

static const char vector_add_cuda[] =
    "extern \"C\" __global__ void vector_add(const float *a, const float *b, float *c,\n"
    "                                        const unsigned long long *info) {\n"
    "  const unsigned int n = ((const unsigned int *)info)[0];\n"
    "  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

static const char reduce_sum_cuda[] =
    "extern \"C\" __global__ void reduce_sum(const float *in, float *out,\n"
    "                                        const unsigned long long *info) {\n"
    "  extern __shared__ float sh[];\n"
    "  const unsigned int n = ((const unsigned int *)info)[0];\n"
    "  const unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * 4;\n"
    "  float acc = 0.0f;\n"
    "  for (unsigned int k = 0; k < 4; ++k) {\n"
    "    unsigned long long i = base + threadIdx.x + (unsigned long long)k * blockDim.x;\n"
    "    if (i < n) acc += in[i];\n"
    "  }\n"
    "  sh[threadIdx.x] = acc;\n"
    "  __syncthreads();\n"
    "  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) out[blockIdx.x] = sh[0];\n"
    "}\n";

static const char matmul_tiled_cuda[] =
    "#define TILE 16\n"
    "extern \"C\" __global__ void matmul_tiled(const float *A, const float *B, float *C,\n"
    "                                          const unsigned long long *info) {\n"
    "  extern __shared__ float sh[];\n"
    "  float *As = sh, *Bs = sh + TILE * TILE;\n"
    "  const unsigned int *u = (const unsigned int *)info;\n"
    "  const unsigned int M = u[0], N = u[1], K = u[2];\n"
    "  const unsigned int tx = threadIdx.x, ty = threadIdx.y;\n"
    "  const unsigned int r = blockIdx.y * TILE + ty, c = blockIdx.x * TILE + tx;\n"
    "  float acc = 0.0f;\n"
    "  for (unsigned int t = 0; t < K; t += TILE) {\n"
    "    As[ty * TILE + tx] = (r < M && t + tx < K) ? A[r * K + t + tx] : 0.0f;\n"
    "    Bs[ty * TILE + tx] = (t + ty < K && c < N) ? B[(t + ty) * N + c] : 0.0f;\n"
    "    __syncthreads();\n"
    "    for (unsigned int k = 0; k < TILE; ++k) acc += As[ty * TILE + k] * Bs[k * TILE + tx];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (r < M && c < N) C[r * N + c] = acc;\n"
    "}\n";

/* ---- Running ---- */

typedef struct demo {
  ruda_client_t *client;
  int failed_checks;
  int passed_checks;
  ruda_status_t error; /* the first operation that failed (owned) */
  const char *error_what;
} demo_t;

/* Keeps the first failure; true when `st` was an error. */
static bool failed(demo_t *d, const char *what, ruda_status_t st) {
  if (!st) return false;
  if (d->error) {
    ruda_status_free(st);
  } else {
    d->error = st;
    d->error_what = what;
  }
  return true;
}

/* A host allocation failed (unless the kernel creation already reported). */
static void host_oom(demo_t *d, const char *what) {
  if (!d->error)
    failed(d, what, ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "out of host memory"));
}

typedef struct launch_job {
  ruda_kernel_t *kernel;
  ruda_count_t count;
  ruda_kernel_args_t args;
} launch_job_t;

static ruda_status_t launch_body(ruda_client_t *c, void *ctx) {
  launch_job_t *job = ctx;
  return ruda_client_launch(c, job->kernel, job->count, &job->args);
}

/* Launches under a profile and records the duration in the summary. */
static bool profiled_launch(demo_t *d, ruda_kernel_t *k, ruda_count_t count,
                            const ruda_handle_t *bufs, size_t nbufs, ruda_info_t info) {
  launch_job_t job = {k, count, {0}};
  job.args.buffers = bufs;
  job.args.num_buffers = nbufs;
  job.args.info = info;
  const char *name = ruda_kernel_desc(k)->name;
  ruda_profile_duration_t dur;
  if (failed(d, name, ruda_client_profile(d->client, name, launch_body, &job, &dur)))
    return false;
  ruda_profile_summary_record(name, ruda_profile_duration_ns(dur));
  return true;
}

static ruda_kernel_t *make_kernel(demo_t *d, const char *name, ruda_dim_t dim, uint64_t shared,
                                  ruda_cpu_kernel_fn fn, const char *cuda_source) {
  ruda_kernel_desc_t desc = {0};
  desc.name = name;
  desc.ruda_dim = dim;
  desc.shared_mem_bytes = shared;
  desc.address_type = RUDA_ADDRESS_U32;
  ruda_kernel_code_t code[2] = {ruda_kernel_code_cpu(fn),
                                ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, cuda_source)};
  desc.code = code;
  desc.num_code = 2;
  ruda_kernel_t *k = NULL;
  if (failed(d, "ruda_kernel_create", ruda_kernel_create(&desc, &k))) return NULL;
  return k;
}

static bool make_info(demo_t *d, ruda_info_builder_t *ib, const uint32_t *values, size_t n,
                      ruda_info_t *out) {
  ruda_info_builder_init(ib);
  ruda_info_builder_push_scalars(ib, RUDA_ELEM_U32, values, n);
  return !failed(d, "ruda_info_builder_finish", ruda_info_builder_finish(ib, out));
}

static void check(demo_t *d, bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void check(demo_t *d, bool ok, const char *name, const char *fmt, ...) {
  char detail[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  printf("  check %-13s %s  %s\n", name, ok ? "ok    " : "FAILED", detail);
  if (ok) {
    d->passed_checks++;
  } else {
    d->failed_checks++;
  }
}

static void run_vector_add(demo_t *d) {
  const uint32_t n = (1u << 20) + 3;
  float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)),
        *c = malloc(n * sizeof(float));
  ruda_handle_t bufs[3] = {{0}};
  ruda_info_builder_t ib;
  ruda_info_t info;
  bool have_info = false;
  ruda_kernel_t *k = make_kernel(d, "vector_add", ruda_dim_new_1d(256), 0, vector_add_cpu,
                                 vector_add_cuda);
  if (!k || !a || !b || !c) {
    host_oom(d, "vector_add");
    goto cleanup;
  }
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = (float)(i % 1000) * 0.5f;
    b[i] = (float)(i % 17) - 8.0f;
  }
  have_info = true;
  if (!make_info(d, &ib, &n, 1, &info)) goto cleanup;
  if (failed(d, "create a", ruda_client_create_buffer(d->client, a, (uint64_t)n * 4, &bufs[0])) ||
      failed(d, "create b", ruda_client_create_buffer(d->client, b, (uint64_t)n * 4, &bufs[1])) ||
      failed(d, "empty c", ruda_client_empty(d->client, (uint64_t)n * 4, &bufs[2])))
    goto cleanup;
  ruda_count_t count = ruda_count_static((n + 255) / 256, 1, 1);
  for (int r = 0; r < DEMO_REPEATS; ++r)
    if (!profiled_launch(d, k, count, bufs, 3, info)) goto cleanup;
  if (failed(d, "read c", ruda_client_read(d->client, &bufs[2], c, (uint64_t)n * 4))) goto cleanup;
  uint32_t bad = 0, first_bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (c[i] != a[i] + b[i]) {
      if (!bad) first_bad = i;
      ++bad;
    }
  }
  check(d, bad == 0, "vector_add", "n = %" PRIu32 ", %" PRIu32 " wrong elements", n, bad);
  if (bad)
    printf("                first wrong c[%" PRIu32 "] = %g, expected %g\n", first_bad,
           (double)c[first_bad], (double)(a[first_bad] + b[first_bad]));
cleanup:
  for (int i = 0; i < 3; ++i) ruda_handle_release(&bufs[i]);
  if (have_info) ruda_info_builder_deinit(&ib);
  ruda_kernel_release(k);
  free(a);
  free(b);
  free(c);
}

static void run_reduce(demo_t *d) {
  const uint32_t n = 1u << 20;
  const uint32_t per_ruda = RED_UNITS * RED_ITEMS;
  const uint32_t partials = (n + per_ruda - 1) / per_ruda;
  float *x = malloc(n * sizeof(float));
  ruda_handle_t in = {0}, mid = {0}, out = {0};
  ruda_info_builder_t ib1, ib2;
  ruda_info_t info1, info2;
  int infos = 0;
  ruda_kernel_t *k = make_kernel(d, "reduce_sum", ruda_dim_new_1d(RED_UNITS),
                                 RED_UNITS * sizeof(float), reduce_sum_cpu, reduce_sum_cuda);
  if (!k || !x) {
    host_oom(d, "reduce_sum");
    goto cleanup;
  }
  uint64_t expected = 0;
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = (float)(i % 7);
    expected += i % 7;
  }
  infos = 1;
  if (!make_info(d, &ib1, &n, 1, &info1)) goto cleanup;
  infos = 2;
  if (!make_info(d, &ib2, &partials, 1, &info2)) goto cleanup;
  if (failed(d, "create input", ruda_client_create_buffer(d->client, x, (uint64_t)n * 4, &in)) ||
      failed(d, "empty partials", ruda_client_empty(d->client, (uint64_t)partials * 4, &mid)) ||
      failed(d, "empty result", ruda_client_empty(d->client, 4, &out)))
    goto cleanup;
  for (int r = 0; r < DEMO_REPEATS; ++r) {
    ruda_handle_t pass1[2] = {in, mid};
    ruda_handle_t pass2[2] = {mid, out};
    if (!profiled_launch(d, k, ruda_count_static(partials, 1, 1), pass1, 2, info1)) goto cleanup;
    if (!profiled_launch(d, k, ruda_count_static((partials + per_ruda - 1) / per_ruda, 1, 1),
                         pass2, 2, info2))
      goto cleanup;
  }
  float sum = -1.0f;
  if (failed(d, "read result", ruda_client_read(d->client, &out, &sum, sizeof sum))) goto cleanup;
  check(d, (double)sum == (double)expected, "reduce_sum",
        "n = %" PRIu32 " in 2 passes (%" PRIu32 " partials): sum %.1f, expected %" PRIu64, n,
        partials, (double)sum, expected);
cleanup:
  ruda_handle_release(&in);
  ruda_handle_release(&mid);
  ruda_handle_release(&out);
  if (infos >= 1) ruda_info_builder_deinit(&ib1);
  if (infos >= 2) ruda_info_builder_deinit(&ib2);
  ruda_kernel_release(k);
  free(x);
}

static void run_matmul(demo_t *d, ruda_memory_usage_t *usage_while_alive, bool *have_usage) {
  const uint32_t M = 200, N = 136, K = 88;
  const uint32_t dims[3] = {M, N, K};
  float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4),
        *C = malloc((size_t)M * N * 4);
  ruda_handle_t bufs[3] = {{0}};
  ruda_info_builder_t ib;
  ruda_info_t info;
  bool have_info = false;
  ruda_kernel_t *k = make_kernel(d, "matmul_tiled", ruda_dim_new_2d(TILE, TILE),
                                 2 * TILE * TILE * sizeof(float), matmul_tiled_cpu,
                                 matmul_tiled_cuda);
  if (!k || !A || !B || !C) {
    host_oom(d, "matmul_tiled");
    goto cleanup;
  }
  for (uint32_t i = 0; i < M * K; ++i) A[i] = (float)((int)((i * 7u) % 11u) - 5) / 8.0f;
  for (uint32_t i = 0; i < K * N; ++i) B[i] = (float)((int)((i * 5u) % 13u) - 6) / 8.0f;
  have_info = true;
  if (!make_info(d, &ib, dims, 3, &info)) goto cleanup;
  if (failed(d, "create A", ruda_client_create_buffer(d->client, A, (uint64_t)M * K * 4, &bufs[0])) ||
      failed(d, "create B", ruda_client_create_buffer(d->client, B, (uint64_t)K * N * 4, &bufs[1])) ||
      failed(d, "empty C", ruda_client_empty(d->client, (uint64_t)M * N * 4, &bufs[2])))
    goto cleanup;
  ruda_count_t count = ruda_count_static((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, 1);
  for (int r = 0; r < DEMO_REPEATS; ++r)
    if (!profiled_launch(d, k, count, bufs, 3, info)) goto cleanup;
  if (failed(d, "read C", ruda_client_read(d->client, &bufs[2], C, (uint64_t)M * N * 4)))
    goto cleanup;
  if (!failed(d, "memory usage", ruda_client_memory_usage(d->client, usage_while_alive)))
    *have_usage = true;
  double max_err = 0.0;
  for (uint32_t r = 0; r < M; ++r) {
    for (uint32_t c = 0; c < N; ++c) {
      double want = 0.0;
      for (uint32_t k2 = 0; k2 < K; ++k2) want += (double)A[r * K + k2] * (double)B[k2 * N + c];
      double err = fabs(want - (double)C[r * N + c]);
      if (err > max_err) max_err = err;
    }
  }
  check(d, max_err <= 1e-3, "matmul_tiled",
        "%" PRIu32 "x%" PRIu32 " * %" PRIu32 "x%" PRIu32 " in %dx%d tiles: max error %.3g", M, K,
        K, N, TILE, TILE, max_err);
cleanup:
  for (int i = 0; i < 3; ++i) ruda_handle_release(&bufs[i]);
  if (have_info) ruda_info_builder_deinit(&ib);
  ruda_kernel_release(k);
  free(A);
  free(B);
  free(C);
}

int ruda_cmd_demo(int argc, char **argv) {
  const char *device = "cpu";
  const char *trace = NULL;
  for (int i = 0; i < argc; ++i) {
    if (ruda_tools_is_help(argv[i])) {
      ruda_cmd_demo_help(stdout);
      return RUDA_EXIT_OK;
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strncmp(argv[i], "--device=", 9) == 0) {
      device = argv[i] + 9;
    } else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc) {
      trace = argv[++i];
    } else {
      fprintf(stderr, "ruda demo: unknown or incomplete option '%s'\n", argv[i]);
      ruda_cmd_demo_help(stderr);
      return RUDA_EXIT_USAGE;
    }
  }
  if (trace) {
    ruda_status_t ts = ruda_trace_start(trace);
    if (ts) {
      ruda_tools_print_status("demo --trace", ts);
      ruda_status_free(ts);
      return RUDA_EXIT_FAILURE;
    }
  }

  demo_t d = {0};
  int code = ruda_tools_open_device(device, &d.client);
  if (code != RUDA_EXIT_OK) return code;
  const ruda_device_properties_t *p = ruda_client_properties(d.client);
  printf("ruda demo on %s: %s (%s)\n", device, p->name, ruda_client_info(d.client));

  ruda_profile_summary_reset();
  ruda_memory_usage_t usage = {0};
  bool have_usage = false;
  run_vector_add(&d);
  if (!d.error) run_reduce(&d);
  if (!d.error) run_matmul(&d, &usage, &have_usage);

  if (have_usage) {
    char report[1024];
    ruda_memory_usage_format(&usage, report, sizeof report);
    printf("\nWhile the matmul buffers were alive:\n%s", report);
  }
  char summary[8192];
  size_t len = ruda_profile_summary_format(summary, sizeof summary);
  if (len > 0) {
    printf("\nProfiling summary (device time of each launch, %d runs per launch site):\n%s",
           DEMO_REPEATS, summary);
  }
  ruda_profile_summary_reset();
  /* After the summary: at profiling level basic the sync prints (and
   * resets) the runtime's own table, which is now empty. */
  if (!d.error) failed(&d, "sync", ruda_client_sync(d.client));

  if (d.error) {
    char what[96];
    snprintf(what, sizeof what, "demo: %s", d.error_what ? d.error_what : "operation");
    ruda_tools_print_status(what, d.error);
    ruda_status_free(d.error);
    d.failed_checks++;
  }
  ruda_client_release(d.client);
  if (d.failed_checks) {
    printf("\n%d check%s failed, %d passed\n", d.failed_checks, d.failed_checks == 1 ? "" : "s",
           d.passed_checks);
    return RUDA_EXIT_FAILURE;
  }
  printf("\nAll %d checks passed.\n", d.passed_checks);
  return RUDA_EXIT_OK;
}
