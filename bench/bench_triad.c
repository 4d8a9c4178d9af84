/* triad: a bandwidth-bound kernel on the CPU backend.
 *
 *  triad_bandwidth  a[i] = b[i] + s * c[i] over three f32 arrays of 256 MiB
 *                   each (64 MiB with --quick), launched as one ruda per
 *                   chunk and synced, against the same loop under
 *                   `#pragma omp parallel for`. GB/s counts the three
 *                   arrays' bytes per pass (two reads, one write).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ruda/client.h"

#ifdef RUDA_HAVE_OPENMP
#include <omp.h>
#endif

#ifdef RUDA_HAVE_OPENMP
#define TRIAD_SCALAR 3.0f

static float init_b(size_t i) { return (float)(i % 13); }
static float init_c(size_t i) { return 0.5f * (float)(i % 5); }

static void chunk_of(const ruda_cpu_kernel_ctx_t *ctx, size_t n, size_t *begin, size_t *end) {
  uint64_t rudas = (uint64_t)ctx->ruda_count.x * ctx->ruda_count.y * ctx->ruda_count.z;
  uint64_t idx = ((uint64_t)ctx->ruda_pos.z * ctx->ruda_count.y + ctx->ruda_pos.y) *
                     ctx->ruda_count.x +
                 ctx->ruda_pos.x;
  *begin = (size_t)((uint64_t)n * idx / rudas);
  *end = (size_t)((uint64_t)n * (idx + 1) / rudas);
}

static void triad_init_kernel(const ruda_cpu_kernel_ctx_t *ctx) {
  float *restrict a = ctx->buffers[0];
  float *restrict b = ctx->buffers[1];
  float *restrict c = ctx->buffers[2];
  size_t n = (size_t)(ctx->buffer_sizes[0] / sizeof(float)), begin, end;
  chunk_of(ctx, n, &begin, &end);
  for (size_t i = begin; i < end; ++i) {
    a[i] = 0.0f;
    b[i] = init_b(i);
    c[i] = init_c(i);
  }
}

static void triad_kernel(const ruda_cpu_kernel_ctx_t *ctx) {
  float *restrict a = ctx->buffers[0];
  const float *restrict b = ctx->buffers[1];
  const float *restrict c = ctx->buffers[2];
  float s;
  memcpy(&s, ctx->info, sizeof s);
  size_t n = (size_t)(ctx->buffer_sizes[0] / sizeof(float)), begin, end;
  chunk_of(ctx, n, &begin, &end);
  for (size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
}

typedef struct triad_ctx {
  ruda_client_t *client;
  ruda_kernel_t *kernel;
  ruda_count_t count;
  ruda_handle_t bufs[3];
  ruda_info_t info;
  ruda_status_t error;
  /* baseline */
  float *a, *b, *c;
  size_t n;
} triad_ctx_t;

static void ruda_triad_pass(void *p) {
  triad_ctx_t *t = p;
  ruda_kernel_args_t args = {0};
  args.buffers = t->bufs;
  args.num_buffers = 3;
  args.info = t->info;
  ruda_bench_keep_error(&t->error, ruda_client_launch(t->client, t->kernel, t->count, &args));
  ruda_bench_keep_error(&t->error, ruda_client_sync(t->client));
}

static void omp_triad_pass(void *p) {
  triad_ctx_t *t = p;
  float *restrict a = t->a;
  const float *restrict b = t->b;
  const float *restrict c = t->c;
  const float s = TRIAD_SCALAR;
  const long n = (long)t->n;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

/* Reads 16 floats at element `at` of a back and compares with the triad. */
static bool check_sample(triad_ctx_t *t, size_t at, char *why, size_t cap) {
  float got[16];
  size_t count = t->n - at < 16 ? t->n - at : 16;
  ruda_handle_t view = ruda_handle_clone(&t->bufs[0]);
  uint64_t used = ruda_handle_size_in_used(&view);
  ruda_status_t st = ruda_handle_offset_start(&view, at * sizeof(float));
  if (!st) st = ruda_handle_offset_end(&view, used - (at + count) * sizeof(float));
  if (!st) st = ruda_client_read(t->client, &view, got, sizeof got);
  ruda_handle_release(&view);
  if (st) return ruda_bench_why_status(why, cap, "reading the result", st);
  for (size_t i = 0; i < count; ++i) {
    float want = init_b(at + i) + TRIAD_SCALAR * init_c(at + i);
    if (got[i] != want) {
      snprintf(why, cap, "a[%zu] = %g, expected %g", at + i, (double)got[i], (double)want);
      return false;
    }
  }
  return true;
}

#endif /* RUDA_HAVE_OPENMP */

void ruda_bench_triad(ruda_bench_t *b) {
  if (ruda_bench_on_cuda(b) || ruda_bench_on_opencl(b)) {
    ruda_bench_skip(b, "triad", "triad_bandwidth",
                    "triad compares the CPU backend with OpenMP; it runs with --device cpu");
    return;
  }
#ifndef RUDA_HAVE_OPENMP
  ruda_bench_skip(b, "triad", "triad_bandwidth",
                  "built without OpenMP: no baseline (install libgomp / libomp-dev)");
#else
  triad_ctx_t t = {0};
  size_t bytes = ruda_bench_pick(b, 256u << 20, 64u << 20, 1u << 20);
  t.n = bytes / sizeof(float);
  size_t reps = ruda_bench_pick(b, 10, 4, 1);
  size_t warmup = ruda_bench_pick(b, 2, 1, 1);
  double pass_bytes = 3.0 * (double)bytes;

  if (!ruda_bench_open_client(b, "triad", "triad_bandwidth", &t.client)) return;
  const ruda_device_properties_t *props = ruda_client_properties(t.client);
  uint32_t workers = props->hardware.num_cpu_cores ? props->hardware.num_cpu_cores : 1;
  t.count = ruda_count_static(workers * 4, 1, 1);

  ruda_kernel_t *init = NULL;
  ruda_info_builder_t ib;
  ruda_info_builder_init(&ib);
  float s = TRIAD_SCALAR;
  ruda_info_builder_push_scalars(&ib, RUDA_ELEM_F32, &s, 1);
  ruda_status_t st = ruda_info_builder_finish(&ib, &t.info);

  ruda_kernel_desc_t desc = {0};
  ruda_kernel_code_t code = ruda_kernel_code_cpu(triad_kernel);
  desc.ruda_dim = ruda_dim_new_1d(1);
  desc.code = &code;
  desc.num_code = 1;
  if (!st) {
    desc.name = "triad";
    st = ruda_kernel_create(&desc, &t.kernel);
  }
  if (!st) {
    desc.name = "triad_init";
    code.cpu_fn = triad_init_kernel;
    st = ruda_kernel_create(&desc, &init);
  }
  for (int i = 0; i < 3 && !st; ++i) st = ruda_client_empty(t.client, bytes, &t.bufs[i]);
  if (!st) {
    ruda_kernel_args_t args = {0};
    args.buffers = t.bufs;
    args.num_buffers = 3;
    st = ruda_client_launch(t.client, init, t.count, &args);
  }
  if (!st) st = ruda_client_sync(t.client);
  if (ruda_bench_fail_status(b, "triad", "triad_bandwidth", st)) goto cleanup;

  ruda_bench_progress(b, "triad_bandwidth: 3 x %zu MiB, %zu passes (ruda)", bytes >> 20,
                      reps);
  ruda_bench_stats_t ruda_ns = ruda_bench_measure(ruda_triad_pass, &t, warmup, reps, 1);
  if (ruda_bench_fail_status(b, "triad", "triad_bandwidth", t.error)) {
    t.error = NULL;
    goto cleanup;
  }
  char why[256];
  if (!check_sample(&t, 0, why, sizeof why) || !check_sample(&t, t.n / 2 + 3, why, sizeof why) ||
      !check_sample(&t, t.n - 5, why, sizeof why)) {
    ruda_bench_fail(b, "triad", "triad_bandwidth", "wrong result: %s", why);
    goto cleanup;
  }
  /* Give the memory back before the baseline allocates its own. */
  for (int i = 0; i < 3; ++i) ruda_handle_release(&t.bufs[i]);
  ruda_client_memory_cleanup(t.client);
  ruda_client_sync(t.client);

  t.a = malloc(bytes);
  t.b = malloc(bytes);
  t.c = malloc(bytes);
  if (!t.a || !t.b || !t.c) {
    ruda_bench_fail(b, "triad", "triad_bandwidth", "out of host memory for the baseline");
    goto cleanup;
  }
  {
    const long n = (long)t.n;
    float *restrict a = t.a, *restrict bb = t.b, *restrict c = t.c;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
      a[i] = 0.0f;
      bb[i] = init_b((size_t)i);
      c[i] = init_c((size_t)i);
    }
  }
  ruda_bench_progress(b, "triad_bandwidth: 3 x %zu MiB, %zu passes (OpenMP)", bytes >> 20,
                      reps);
  ruda_bench_stats_t omp_ns = ruda_bench_measure(omp_triad_pass, &t, warmup, reps, 1);
  {
    char name[96];
    ruda_bench_omp_name("omp parallel for", omp_get_max_threads(), name, sizeof name);
    ruda_bench_report(b, "triad", "triad_bandwidth", "GB/s",
                      ruda_bench_stats_rate(ruda_ns, pass_bytes, 1.0),
                      ruda_bench_stats_rate(omp_ns, pass_bytes, 1.0), name, false);
  }

cleanup:
  free(t.a);
  free(t.b);
  free(t.c);
  for (int i = 0; i < 3; ++i) ruda_handle_release(&t.bufs[i]);
  ruda_info_builder_deinit(&ib);
  ruda_kernel_release(t.kernel);
  ruda_kernel_release(init);
  ruda_client_release(t.client);
#endif
}
