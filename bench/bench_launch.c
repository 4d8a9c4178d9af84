/* launch: the cost of launching an empty kernel over every worker.
 *
 *  launch_empty_caller     the caller's cost of ruda_client_launch (work is
 *                          queued; a sync after each batch, untimed)
 *  launch_empty_roundtrip  ruda_client_launch + ruda_client_sync
 *  launch_empty_roundtrip_oversubscribed_p50, _p99
 *                          the same round trip, each one timed on its
 *                          own, while as many busy threads as there are
 *                          online cores spin in a compute loop (started
 *                          before both sides and stopped after them): the
 *                          median and the 99th percentile
 *
 * Baseline for both: an empty `#pragma omp parallel` region with as many
 * threads as ruda has workers. A region is synchronous, so its caller cost
 * is its round trip. The OpenMP runtime runs as the environment configures
 * it; with OMP_WAIT_POLICY unset (libgomp's default) its threads spin a
 * while after each region before they sleep, just as ruda's device worker
 * spins after each operation, so back-to-back regions or launches find
 * their threads awake on both sides. The baseline's name says the policy.
 *
 * ruda and the baseline run in alternating samples (ruda_bench_compare),
 * each starting once the other side's threads sleep: neither is measured
 * against the other's spinning threads, on a 2-core machine the largest
 * source of run-to-run swings. On cuda:N the CUDA engineer's cases
 * (bench_cuda.c) run instead.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench_gpu.h"
#include "harness.h"
#include "ruda/client.h"

bool ruda_bench_open_client(ruda_bench_t *b, const char *bench, const char *case_name,
                            struct ruda_client **out) {
  *out = NULL;
  ruda_device_id_t dev;
  ruda_status_t st = ruda_device_parse(ruda_bench_device(b), &dev);
  if (!st) st = ruda_client_create(dev, out);
  if (!st) return true;
  if (!ruda_status_find(st, RUDA_ERR_UNAVAILABLE)) {
    ruda_bench_fail_status(b, bench, case_name, st);
    return false;
  }
  ruda_bench_skip_status(b, bench, case_name, st);
  return false;
}

#ifdef RUDA_HAVE_OPENMP
static void empty_kernel(const ruda_cpu_kernel_ctx_t *ctx) { (void)ctx; }

typedef struct launch_ctx {
  ruda_client_t *client;
  ruda_kernel_t *kernel;
  ruda_count_t count;
  ruda_status_t error; /* first failure (ruda_bench_keep_error), owned */
} launch_ctx_t;

/* ruda_bench_sample_fn: `inner` launch + sync round trips. */
static double sample_roundtrip(void *p, size_t inner) {
  launch_ctx_t *c = p;
  ruda_kernel_args_t args = {0};
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; ++i) {
    ruda_bench_keep_error(&c->error, ruda_client_launch(c->client, c->kernel, c->count, &args));
    ruda_bench_keep_error(&c->error, ruda_client_sync(c->client));
  }
  return (double)(ruda_bench_now_ns() - t0) / (double)inner;
}

/* ruda_bench_sample_fn: the caller's cost of `inner` launches, timed
 * without the sync that drains them afterwards. */
static double sample_caller(void *p, size_t inner) {
  launch_ctx_t *c = p;
  ruda_kernel_args_t args = {0};
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; ++i)
    ruda_bench_keep_error(&c->error, ruda_client_launch(c->client, c->kernel, c->count, &args));
  uint64_t t1 = ruda_bench_now_ns();
  ruda_bench_keep_error(&c->error, ruda_client_sync(c->client));
  return (double)(t1 - t0) / (double)inner;
}

/* ruda_bench_op_fn: one launch + sync round trip. */
static void op_roundtrip(void *p) {
  launch_ctx_t *c = p;
  ruda_kernel_args_t args = {0};
  ruda_bench_keep_error(&c->error, ruda_client_launch(c->client, c->kernel, c->count, &args));
  ruda_bench_keep_error(&c->error, ruda_client_sync(c->client));
}

/* ruda_bench_op_fn: one empty parallel region. */
static void op_omp_region(void *p) {
  const int *threads = p;
#pragma omp parallel num_threads(*threads)
  { __asm__ volatile("" ::: "memory"); }
}

/* launch_empty_roundtrip_oversubscribed: every round trip timed on its
 * own while one busy thread per online core competes for the cores. */
static void run_oversubscribed(ruda_bench_t *b, launch_ctx_t *c, int threads,
                               const char *base_name) {
  static const char *name = "launch_empty_roundtrip_oversubscribed";
  /* Samples of 20 ms (at most 20000 round trips) span several scheduler
   * slices, so that each side meets the busy threads. */
  size_t reps = ruda_bench_pick(b, 21, 7, 1);
  size_t inner = ruda_bench_pick(b, 20000, 20000, 8);
  uint64_t max_ns = ruda_bench_pick(b, 20, 10, 1) * 1000000ull;
  size_t warmup = ruda_bench_pick(b, 200, 50, 1);
  unsigned busy = ruda_bench_online_cores();
  double *rs = malloc(2 * reps * inner * sizeof *rs);
  if (!rs) {
    ruda_bench_fail(b, "launch", name, "out of host memory");
    return;
  }
  double *bs = rs + reps * inner;
  ruda_bench_progress(b, "%s: %zu samples of %llu ms of launch+sync of %d rudas, each timed, "
                      "alternating with the baseline, %u busy threads",
                      name, reps, (unsigned long long)(max_ns / 1000000), threads, busy);
  ruda_bench_load_t *load = ruda_bench_load_start(busy);
  if (!load) {
    free(rs);
    ruda_bench_fail(b, "launch", name, "cannot start %u busy threads", busy);
    return;
  }
  size_t nr = 0, nb = 0;
  ruda_bench_compare_each(op_roundtrip, c, op_omp_region, &threads, warmup, reps, inner, max_ns, rs,
                          &nr, bs, &nb);
  ruda_bench_load_stop(load);
  double sum[2] = {0, 0};
  for (size_t i = 0; i < nr; ++i) sum[0] += rs[i];
  for (size_t i = 0; i < nb; ++i) sum[1] += bs[i];
  ruda_bench_progress(b, "%s: mean %.4g us over %zu round trips (ruda), %.4g us over %zu regions "
                      "(baseline)",
                      name, nr ? sum[0] / (double)nr * 1e-3 : 0.0, nr,
                      nb ? sum[1] / (double)nb * 1e-3 : 0.0, nb);
  ruda_status_t failure = c->error;
  c->error = NULL;
  if (!ruda_bench_fail_status(b, "launch", name, failure)) {
    char full_base[160], case_name[96];
    snprintf(full_base, sizeof full_base, "%s, %u busy threads", base_name, busy);
    static const struct {
      const char *suffix;
      double q;
    } qs[] = {{"p50", 0.50}, {"p99", 0.99}};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; ++i) {
      snprintf(case_name, sizeof case_name, "%s_%s", name, qs[i].suffix);
      ruda_bench_stats_t r = ruda_bench_stats_quantile(rs, nr, qs[i].q);
      ruda_bench_stats_t base = ruda_bench_stats_quantile(bs, nb, qs[i].q);
      ruda_bench_report(b, "launch", case_name, "us", ruda_bench_stats_scale(r, 1e-3),
                        ruda_bench_stats_scale(base, 1e-3), full_base, true);
    }
  }
  free(rs);
}

/* ruda_bench_sample_fn: `inner` empty parallel regions. */
static double sample_omp_region(void *p, size_t inner) {
  const int *threads = p;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; ++i) {
    /* An empty body, with a compiler barrier so the region is not elided
     * (GCC removes a literally empty parallel region). */
#pragma omp parallel num_threads(*threads)
    { __asm__ volatile("" ::: "memory"); }
  }
  return (double)(ruda_bench_now_ns() - t0) / (double)inner;
}

#endif /* RUDA_HAVE_OPENMP */

void ruda_bench_launch(ruda_bench_t *b) {
  if (ruda_bench_gpu_dispatch(b, ruda_bench_cuda_launch, ruda_bench_opencl_launch)) return;
#ifndef RUDA_HAVE_OPENMP
  ruda_bench_skip(b, "launch", "launch_empty_caller",
                  "built without OpenMP: no baseline (install libgomp / libomp-dev)");
  ruda_bench_skip(b, "launch", "launch_empty_roundtrip",
                  "built without OpenMP: no baseline (install libgomp / libomp-dev)");
  ruda_bench_skip(b, "launch", "launch_empty_roundtrip_oversubscribed",
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
  ruda_kernel_code_t code = ruda_kernel_code_cpu(empty_kernel);
  desc.code = &code;
  desc.num_code = 1;
  ruda_status_t st = ruda_kernel_create(&desc, &c.kernel);
  if (ruda_bench_fail_status(b, "launch", "launch_empty_caller", st)) {
    ruda_client_release(c.client);
    return;
  }

  size_t reps = ruda_bench_pick(b, 31, 11, 2);
  size_t batch = ruda_bench_pick(b, 2000, 500, 8);
  size_t warmup = ruda_bench_pick(b, 200, 50, 1);
  int threads = (int)workers;
  char base_name[96];
  ruda_bench_omp_name("omp parallel", threads, base_name, sizeof base_name);

  static const struct {
    const char *name, *what;
    ruda_bench_sample_fn ruda;
  } cases[] = {
      {"launch_empty_caller", "launches", sample_caller},
      {"launch_empty_roundtrip", "launch+sync", sample_roundtrip},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    ruda_bench_progress(b, "%s: %zu x %zu %s of %u rudas, alternating with the baseline",
                        cases[i].name, reps, batch, cases[i].what, workers);
    ruda_bench_stats_t r, base;
    ruda_bench_compare(cases[i].ruda, &c, sample_omp_region, &threads, warmup, reps, batch, &r,
                       &base);
    ruda_status_t failure = c.error;
    c.error = NULL;
    if (!ruda_bench_fail_status(b, "launch", cases[i].name, failure)) {
      ruda_bench_report(b, "launch", cases[i].name, "us", ruda_bench_stats_scale(r, 1e-3),
                        ruda_bench_stats_scale(base, 1e-3), base_name, true);
    }
  }

  run_oversubscribed(b, &c, threads, base_name);

  ruda_kernel_release(c.kernel);
  ruda_client_release(c.client);
#endif
}
