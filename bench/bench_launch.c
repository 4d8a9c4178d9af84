/* launch: the cost of launching an empty kernel over every worker.
 *
 *  launch_empty_caller     the caller's cost of ruda_client_launch (work is
 *                          queued; a sync after each batch, untimed)
 *  launch_empty_roundtrip  ruda_client_launch + ruda_client_sync
 *
 * Baseline for both: an empty `#pragma omp parallel` region, which is
 * synchronous, so its caller cost is its round trip. On cuda:N the CUDA
 * engineer's cases (bench_cuda.c) run instead.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "ruda/client.h"

#ifdef RUDA_HAVE_OPENMP
#include <omp.h>
#endif

bool ruda_bench_open_client(ruda_bench_t *b, const char *bench, const char *case_name,
                            struct ruda_client **out) {
  *out = NULL;
  ruda_device_id_t dev;
  ruda_status_t st = ruda_device_parse(ruda_bench_device(b), &dev);
  if (!st) st = ruda_client_create(dev, out);
  if (!st) return true;
  char *text = ruda_status_to_string(st);
  if (ruda_status_find(st, RUDA_ERR_UNAVAILABLE)) {
    ruda_bench_skip(b, bench, case_name, text ? text : "device unavailable");
  } else {
    ruda_bench_fail(b, bench, case_name, "%s", text ? text : "cannot open the device");
  }
  free(text);
  ruda_status_free(st);
  return false;
}

#ifdef RUDA_HAVE_OPENMP
static void empty_kernel(const ruda_cpu_kernel_ctx_t *ctx) { (void)ctx; }

typedef struct launch_ctx {
  ruda_client_t *client;
  ruda_kernel_t *kernel;
  ruda_count_t count;
  ruda_status_t error; /* first failure, owned */
} launch_ctx_t;

static void keep_error(launch_ctx_t *c, ruda_status_t st) {
  if (!st) return;
  if (c->error) {
    ruda_status_free(st);
  } else {
    c->error = st;
  }
}

static void launch_roundtrip(void *p) {
  launch_ctx_t *c = p;
  ruda_kernel_args_t args = {0};
  keep_error(c, ruda_client_launch(c->client, c->kernel, c->count, &args));
  keep_error(c, ruda_client_sync(c->client));
}

static void omp_empty_region(void *p) {
  (void)p;
  /* An empty body, with a compiler barrier so the region is not elided
   * (GCC removes a literally empty parallel region). */
#pragma omp parallel
  { __asm__ volatile("" ::: "memory"); }
}

/* Caller cost: `reps` samples of `batch` launches each, timed without the
 * sync that drains them afterwards. Per-launch nanoseconds. */
static ruda_bench_stats_t measure_caller(launch_ctx_t *c, size_t warmup, size_t reps,
                                         size_t batch) {
  ruda_kernel_args_t args = {0};
  for (size_t i = 0; i < warmup; ++i) launch_roundtrip(c);
  double *samples = calloc(reps, sizeof *samples);
  ruda_bench_stats_t none = {0, 0, 0, 0};
  if (!samples) return none;
  for (size_t r = 0; r < reps; ++r) {
    uint64_t t0 = ruda_bench_now_ns();
    for (size_t i = 0; i < batch; ++i)
      keep_error(c, ruda_client_launch(c->client, c->kernel, c->count, &args));
    uint64_t t1 = ruda_bench_now_ns();
    keep_error(c, ruda_client_sync(c->client));
    samples[r] = (double)(t1 - t0) / (double)batch;
  }
  ruda_bench_stats_t s = ruda_bench_stats_from_samples(samples, reps);
  free(samples);
  return s;
}

static bool report_error(ruda_bench_t *b, const char *case_name, launch_ctx_t *c) {
  if (!c->error) return false;
  char *text = ruda_status_to_string(c->error);
  ruda_bench_fail(b, "launch", case_name, "%s", text ? text : "launch failed");
  free(text);
  ruda_status_free(c->error);
  c->error = NULL;
  return true;
}

#endif /* RUDA_HAVE_OPENMP */

void ruda_bench_launch(ruda_bench_t *b) {
  if (ruda_bench_on_cuda(b)) {
    ruda_bench_cuda_launch(b);
    return;
  }
#ifndef RUDA_HAVE_OPENMP
  ruda_bench_skip(b, "launch", "launch_empty_caller",
                  "built without OpenMP: no baseline (install libgomp / libomp-dev)");
  ruda_bench_skip(b, "launch", "launch_empty_roundtrip",
                  "built without OpenMP: no baseline (install libgomp / libomp-dev)");
#else
  launch_ctx_t c = {0};
  if (!ruda_bench_open_client(b, "launch", "launch_empty_caller", &c.client)) return;
  const ruda_device_properties_t *props = ruda_client_properties(c.client);
  uint32_t workers = props->hardware.num_cpu_cores ? props->hardware.num_cpu_cores : 1;
  c.count = ruda_count_static(workers, 1, 1);

  ruda_kernel_desc_t desc = {0};
  desc.name = "empty";
  desc.ruda_dim = ruda_dim_new_1d(1);
  desc.cpu_fn = empty_kernel;
  ruda_status_t st = ruda_kernel_create(&desc, &c.kernel);
  if (st) {
    c.error = st;
    report_error(b, "launch_empty_caller", &c);
    ruda_client_release(c.client);
    return;
  }

  size_t reps = ruda_bench_pick(b, 31, 11, 2);
  size_t batch = ruda_bench_pick(b, 2000, 500, 8);
  size_t warmup = ruda_bench_pick(b, 200, 50, 1);

  /* Caller cost. */
  ruda_bench_progress(b, "launch_empty_caller: %zu x %zu launches of %u rudas", reps, batch,
                      workers);
  ruda_bench_stats_t ruda_caller = measure_caller(&c, warmup, reps, batch);
  ruda_bench_stats_t omp_region =
      ruda_bench_measure(omp_empty_region, NULL, warmup, reps, batch);
  if (!report_error(b, "launch_empty_caller", &c)) {
    char name[64];
    snprintf(name, sizeof name, "omp parallel (%d threads)", omp_get_max_threads());
    ruda_bench_report(b, "launch", "launch_empty_caller", "us",
                      ruda_bench_stats_scale(ruda_caller, 1e-3),
                      ruda_bench_stats_scale(omp_region, 1e-3), name, true);
  }

  /* Round trip. */
  ruda_bench_progress(b, "launch_empty_roundtrip: %zu x %zu launch+sync", reps, batch);
  ruda_bench_stats_t ruda_rt = ruda_bench_measure(launch_roundtrip, &c, warmup, reps, batch);
  omp_region = ruda_bench_measure(omp_empty_region, NULL, warmup, reps, batch);
  if (!report_error(b, "launch_empty_roundtrip", &c)) {
    char name[64];
    snprintf(name, sizeof name, "omp parallel (%d threads)", omp_get_max_threads());
    ruda_bench_report(b, "launch", "launch_empty_roundtrip", "us",
                      ruda_bench_stats_scale(ruda_rt, 1e-3),
                      ruda_bench_stats_scale(omp_region, 1e-3), name, true);
  }

  ruda_kernel_release(c.kernel);
  ruda_client_release(c.client);
#endif
}
