/* `ruda demo`: a small real workload through the public API, checked.
 *
 * Three kernels, each written once in the portable dialect
 * (tools/demo_kernels.h), so the same program runs on cpu:N, cuda:N and
 * opencl:N:
 *   vector_add    c = a + b over an odd-sized vector
 *   reduce_sum    a two-pass sum; each ruda reduces its block through
 *                 shared memory
 *   matmul_tiled  C = A * B with 16x16 tiles staged in shared memory
 * then the same product and a sum through ruda's tuned operations
 * (ruda/tune.h: the first call of a size picks the fastest candidate).
 * Every launch is profiled (ruda_client_profile); the profiling summary and
 * the memory usage report are printed at the end.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "demo_kernels.h"
#include "ruda/memory.h"
#include "ruda/tune.h"
#include "ruda/profiling.h"
#include "ruda_tools.h"
#include "tools_common.h"

#define DEMO_REPEATS 3

void ruda_cmd_demo_help(FILE *f) {
  fprintf(f,
          "usage: ruda demo [--device " RUDA_TOOLS_DEVICE_FORMS "] [--trace FILE]\n"
          "\n"
          "Runs a small workload through ruda's public API and checks every result:\n"
          "a vector add, a sum reduction through shared memory and a tiled matrix\n"
          "multiply, each kernel written once for every backend. Prints each check,\n"
          "the memory usage report and the profiling summary. --trace FILE (or\n"
          "RUDA_TRACE=FILE) writes a Chrome trace JSON timeline that ui.perfetto.dev\n"
          "opens.\n"
          "\n"
          "exit codes: 0 every check passed, 1 a check or an operation failed,\n"
          "2 usage error, 3 the device is unavailable.\n");
}

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

/* One launch of a demo kernel: its buffers and scalars, passed typed by
 * RUDA_LAUNCH in the kernel's launch function. */
typedef struct launch_job {
  ruda_kernel_t *kernel;
  ruda_count_t count;
  const ruda_handle_t *bufs;
  uint32_t scalars[3];
} launch_job_t;

static ruda_status_t launch_vector_add(ruda_client_t *c, void *ctx) {
  const launch_job_t *j = ctx;
  return RUDA_LAUNCH(vector_add, c, j->kernel, j->count, &j->bufs[0], &j->bufs[1], &j->bufs[2],
                     j->scalars[0]);
}

static ruda_status_t launch_reduce_sum(ruda_client_t *c, void *ctx) {
  const launch_job_t *j = ctx;
  return RUDA_LAUNCH(reduce_sum, c, j->kernel, j->count, &j->bufs[0], &j->bufs[1], j->scalars[0]);
}

static ruda_status_t launch_matmul_tiled(ruda_client_t *c, void *ctx) {
  const launch_job_t *j = ctx;
  return RUDA_LAUNCH(matmul_tiled, c, j->kernel, j->count, &j->bufs[0], &j->bufs[1], &j->bufs[2],
                     j->scalars[0], j->scalars[1], j->scalars[2]);
}

/* Launches under a profile and records the duration in the summary. */
static bool profiled_launch(demo_t *d, ruda_status_t (*launch)(ruda_client_t *, void *),
                            launch_job_t *job) {
  const char *name = ruda_kernel_desc(job->kernel)->name;
  ruda_profile_duration_t dur;
  if (failed(d, name, ruda_client_profile(d->client, name, launch, job, &dur))) return false;
  ruda_profile_summary_record(name, ruda_profile_duration_ns(dur));
  return true;
}

/* The kernel's own description (its declared dims, 32-bit addresses). */
static ruda_kernel_t *make_kernel(demo_t *d, ruda_kernel_desc_t desc) {
  desc.address_type = RUDA_ADDRESS_U32;
  ruda_kernel_t *k = NULL;
  if (failed(d, "ruda_kernel_create", ruda_kernel_create(&desc, &k))) return NULL;
  return k;
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
  ruda_kernel_t *k = make_kernel(d, RUDA_KERNEL_DESC(vector_add));
  if (!k || !a || !b || !c) {
    host_oom(d, "vector_add");
    goto cleanup;
  }
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = (float)(i % 1000) * 0.5f;
    b[i] = (float)(i % 17) - 8.0f;
  }
  if (failed(d, "create a", ruda_client_create_buffer(d->client, a, (uint64_t)n * 4, &bufs[0])) ||
      failed(d, "create b", ruda_client_create_buffer(d->client, b, (uint64_t)n * 4, &bufs[1])) ||
      failed(d, "empty c", ruda_client_empty(d->client, (uint64_t)n * 4, &bufs[2])))
    goto cleanup;
  launch_job_t job = {k, ruda_count_static((n + DEMO_UNITS - 1) / DEMO_UNITS, 1, 1), bufs, {n}};
  for (int r = 0; r < DEMO_REPEATS; ++r)
    if (!profiled_launch(d, launch_vector_add, &job)) goto cleanup;
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
  ruda_kernel_release(k);
  free(a);
  free(b);
  free(c);
}

static void run_reduce(demo_t *d) {
  const uint32_t n = 1u << 20;
  const uint32_t per_ruda = DEMO_UNITS * DEMO_RED_ITEMS;
  const uint32_t partials = (n + per_ruda - 1) / per_ruda;
  float *x = malloc(n * sizeof(float));
  ruda_handle_t in = {0}, mid = {0}, out = {0};
  ruda_kernel_t *k = make_kernel(d, RUDA_KERNEL_DESC(reduce_sum));
  if (!k || !x) {
    host_oom(d, "reduce_sum");
    goto cleanup;
  }
  uint64_t expected = 0;
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = (float)(i % 7);
    expected += i % 7;
  }
  if (failed(d, "create input", ruda_client_create_buffer(d->client, x, (uint64_t)n * 4, &in)) ||
      failed(d, "empty partials", ruda_client_empty(d->client, (uint64_t)partials * 4, &mid)) ||
      failed(d, "empty result", ruda_client_empty(d->client, 4, &out)))
    goto cleanup;
  for (int r = 0; r < DEMO_REPEATS; ++r) {
    ruda_handle_t pass1[2] = {in, mid};
    ruda_handle_t pass2[2] = {mid, out};
    launch_job_t job1 = {k, ruda_count_static(partials, 1, 1), pass1, {n}};
    launch_job_t job2 = {k, ruda_count_static((partials + per_ruda - 1) / per_ruda, 1, 1), pass2,
                         {partials}};
    if (!profiled_launch(d, launch_reduce_sum, &job1) ||
        !profiled_launch(d, launch_reduce_sum, &job2))
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
  ruda_kernel_release(k);
  free(x);
}

/* A sum through the tuned reduction: n ones. */
static void run_tuned_sum(demo_t *d) {
  const uint64_t n = (1u << 20) + 5;
  float *x = malloc(n * 4);
  ruda_handle_t hx = {0}, ho = {0};
  if (!x) {
    host_oom(d, "tuned_sum");
    return;
  }
  for (uint64_t i = 0; i < n; ++i) x[i] = 1.0f;
  float got = 0;
  if (!failed(d, "create x", ruda_client_create_buffer(d->client, x, n * 4, &hx)) &&
      !failed(d, "empty out", ruda_client_empty(d->client, 4, &ho)) &&
      !failed(d, "tuned sum", ruda_tune_sum_f32(d->client, &hx, &ho, n)) &&
      !failed(d, "read out", ruda_client_read(d->client, &ho, &got, 4)))
    check(d, (double)got == (double)n, "tuned_sum", "%" PRIu64 " ones: %.1f", n, (double)got);
  ruda_handle_release(&hx);
  ruda_handle_release(&ho);
  free(x);
}

static void run_matmul(demo_t *d, ruda_memory_usage_t *usage_while_alive, bool *have_usage) {
  const uint32_t M = 200, N = 136, K = 88;
  float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4),
        *C = malloc((size_t)M * N * 4);
  ruda_handle_t bufs[3] = {{0}};
  ruda_kernel_t *k = make_kernel(d, RUDA_KERNEL_DESC(matmul_tiled));
  if (!k || !A || !B || !C) {
    host_oom(d, "matmul_tiled");
    goto cleanup;
  }
  for (uint32_t i = 0; i < M * K; ++i) A[i] = (float)((int)((i * 7u) % 11u) - 5) / 8.0f;
  for (uint32_t i = 0; i < K * N; ++i) B[i] = (float)((int)((i * 5u) % 13u) - 6) / 8.0f;
  if (failed(d, "create A", ruda_client_create_buffer(d->client, A, (uint64_t)M * K * 4, &bufs[0])) ||
      failed(d, "create B", ruda_client_create_buffer(d->client, B, (uint64_t)K * N * 4, &bufs[1])) ||
      failed(d, "empty C", ruda_client_empty(d->client, (uint64_t)M * N * 4, &bufs[2])))
    goto cleanup;
  launch_job_t job = {
      k, ruda_count_static((N + DEMO_TILE - 1) / DEMO_TILE, (M + DEMO_TILE - 1) / DEMO_TILE, 1),
      bufs, {M, N, K}};
  for (int r = 0; r < DEMO_REPEATS; ++r)
    if (!profiled_launch(d, launch_matmul_tiled, &job)) goto cleanup;
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
        K, N, DEMO_TILE, DEMO_TILE, max_err);
  /* The same product through the tuned matmul, against the tiled one's. */
  float *T = malloc((size_t)M * N * 4);
  if (!T) {
    host_oom(d, "tuned_matmul");
    goto cleanup;
  }
  const char *winner = "?";
  ruda_tune_op_t *op = NULL;
  uint64_t sizes[3] = {M, N, K};
  ruda_tune_args_t targs = {bufs, 3, sizes, 3, sizes, 3};
  if (!failed(d, "tuned matmul",
              ruda_tune_matmul_f32(d->client, &bufs[0], &bufs[1], &bufs[2], M, N, K)) &&
      !failed(d, "read C", ruda_client_read(d->client, &bufs[2], T, (uint64_t)M * N * 4)) &&
      !failed(d, "tuned matmul", ruda_tune_builtin_op(d->client, "matmul_f32", &op)) &&
      !failed(d, "tuned matmul", ruda_tune_op_select(op, d->client, &targs, NULL, &winner))) {
    double terr = 0.0;
    for (size_t i = 0; i < (size_t)M * N; ++i)
      if (fabs((double)T[i] - (double)C[i]) > terr) terr = fabs((double)T[i] - (double)C[i]);
    check(d, terr <= 1e-3, "tuned_matmul", "the same product by candidate %s: max difference %.3g",
          winner, terr);
  }
  free(T);
cleanup:
  for (int i = 0; i < 3; ++i) ruda_handle_release(&bufs[i]);
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
  if (!d.error) run_tuned_sum(&d);

  if (have_usage) {
    char report[1024], in_use[32], reserved[32];
    ruda_memory_usage_format(&usage, report, sizeof report);
    ruda_bytes_format(usage.bytes_in_use, in_use, sizeof in_use);
    ruda_bytes_format(usage.bytes_reserved, reserved, sizeof reserved);
    printf("\nWhile the matmul buffers were alive:\n%s", report);
    printf("  In use: the %" PRIu64 " live buffers (%s). Reserved: what this stream's\n"
           "  pools hold from the system (%s): the pages buffers are carved from,\n"
           "  and the earlier kernels' released buffers, kept for reuse. So the\n"
           "  efficiency (in use / reserved) says how much of what the pools hold is\n"
           "  live, not that each buffer wastes memory.\n",
           usage.number_allocs, in_use, reserved);
    ruda_memory_usage_t after = {0};
    if (!d.error && !failed(&d, "memory cleanup", ruda_client_memory_cleanup(d.client)) &&
        !failed(&d, "memory usage", ruda_client_memory_usage(d.client, &after))) {
      ruda_bytes_format(after.bytes_reserved, reserved, sizeof reserved);
      printf("  After the buffers were released, ruda_client_memory_cleanup() left %s\n"
             "  reserved.\n",
             reserved);
    }
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
