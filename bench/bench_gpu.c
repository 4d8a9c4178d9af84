/* The GPU backends' benchmark skeleton (bench_gpu.h). */
#include "bench_gpu.h"

#include <stdlib.h>
#include <string.h>

bool ruda_bench_gpu_dispatch(ruda_bench_t *b, void (*cuda)(ruda_bench_t *b),
                             void (*opencl)(ruda_bench_t *b)) {
  if (ruda_bench_on_cuda(b)) {
    cuda(b);
    return true;
  }
  if (ruda_bench_on_opencl(b)) {
    opencl(b);
    return true;
  }
  return false;
}

bool ruda_bench_gpu_open(ruda_bench_t *b, const char *bench, const char *case_name,
                         const ruda_bench_gpu_baseline_t *baseline, void *raw,
                         ruda_bench_gpu_t *x) {
  memset(x, 0, sizeof *x);
  if (!ruda_bench_open_client(b, bench, case_name, &x->c)) return false;
  if (!baseline->open(b, bench, x->c, raw)) {
    ruda_client_release(x->c);
    x->c = NULL;
    return false;
  }
  x->raw = raw;
  x->baseline = baseline;
  return true;
}

void ruda_bench_gpu_close(ruda_bench_gpu_t *x) {
  x->baseline->close(x->raw);
  ruda_client_release(x->c);
}

ruda_status_t ruda_bench_gpu_text_kernel(ruda_kernel_format_t format, const char *name,
                                         const char *src, uint32_t units, ruda_kernel_t **out) {
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.ruda_dim = ruda_dim_new_1d(units);
  ruda_kernel_code_t code = ruda_kernel_code_text(format, src);
  d.code = &code;
  d.num_code = 1;
  return ruda_kernel_create(&d, out);
}

/* ---- launch ---- */

static void ruda_launch(ruda_bench_gpu_t *x) {
  ruda_kernel_args_t a = {0};
  ruda_bench_keep_error(&x->err, ruda_client_launch(x->c, x->k, ruda_count_static(1, 1, 1), &a));
}

static void ruda_roundtrip(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_launch(x);
  ruda_bench_keep_error(&x->err, ruda_client_sync(x->c));
}

/* ruda_bench_compare_calls hands both sides one context: the case's state
 * first, so ruda's side reads it as its own. */
typedef struct launch_pair {
  ruda_bench_gpu_t x;
  const ruda_bench_gpu_launch_raw_t *raw;
} launch_pair_t;

static void pair_ruda_roundtrip(void *p) {
  launch_pair_t *l = p;
  ruda_roundtrip(&l->x);
}

static void pair_raw_roundtrip(void *p) {
  launch_pair_t *l = p;
  l->raw->launch(&l->x);
  l->raw->sync(&l->x);
}

/* RUDA_BENCH_PARTS=1: where the time of a round trip goes. Medians over
 * many calls, on an idle queue, printed as progress lines: the clock's own
 * cost, the backend's vendor calls (`backend`), then ruda's own parts of an
 * empty kernel's round trip (idle flush and sync, the caller's launch,
 * launch + sync, the server's parts). */
static void parts(ruda_bench_t *b, ruda_bench_gpu_t *x,
                  void (*backend)(ruda_bench_t *b, ruda_bench_gpu_t *x, double *samples)) {
  double *samples = calloc(RUDA_BENCH_PART_N, sizeof *samples);
  if (!samples) return;
  volatile uint64_t clock_sink = 0;
  RUDA_BENCH_PART(b, samples, "clock_gettime(CLOCK_MONOTONIC)", clock_sink += ruda_bench_now_ns());
  (void)clock_sink;
  backend(b, x, samples);
  ruda_client_t *c = x->c;
  ruda_kernel_args_t a = {0};
  RUDA_BENCH_PART(b, samples, "ruda_client_flush (idle)", ruda_status_free(ruda_client_flush(c)));
  RUDA_BENCH_PART(b, samples, "ruda_client_sync (idle)", ruda_status_free(ruda_client_sync(c)));
  RUDA_BENCH_PART(b, samples, "ruda_client_launch (caller)",
                  ruda_status_free(ruda_client_launch(c, x->k, ruda_count_static(1, 1, 1), &a)));
  ruda_status_free(ruda_client_sync(c));
  RUDA_BENCH_PART(b, samples, "ruda_client_launch + ruda_client_sync", {
    ruda_status_free(ruda_client_launch(c, x->k, ruda_count_static(1, 1, 1), &a));
    ruda_status_free(ruda_client_sync(c));
  });
  ruda_bench_server_parts(b, c, x->k);
  free(samples);
}

void ruda_bench_gpu_launch_cases(ruda_bench_t *b, ruda_bench_gpu_t *x,
                                 const ruda_bench_gpu_launch_raw_t *raw) {
  launch_pair_t l = {*x, raw};
  size_t reps = ruda_bench_pick(b, 30, 10, 2), batch = ruda_bench_pick(b, 200, 100, 4);
  for (int i = 0; i < 20; i++) pair_ruda_roundtrip(&l), pair_raw_roundtrip(&l);
  double *rs = calloc(reps, sizeof *rs), *bs = calloc(reps, sizeof *bs);
  if (!rs || !bs) {
    ruda_bench_fail(b, "launch", "launch_empty_caller", "out of host memory");
    goto out;
  }
  /* The caller's cost: a batch of launches timed up to the last one's
   * return, the queue drained outside the timing. */
  for (size_t r = 0; r < reps; r++) {
    uint64_t t0 = ruda_bench_now_ns();
    for (size_t i = 0; i < batch; i++) ruda_launch(&l.x);
    uint64_t t1 = ruda_bench_now_ns();
    ruda_bench_keep_error(&l.x.err, ruda_client_sync(l.x.c));
    rs[r] = (double)(t1 - t0) / (double)batch;
    t0 = ruda_bench_now_ns();
    for (size_t i = 0; i < batch; i++) raw->launch(&l.x);
    t1 = ruda_bench_now_ns();
    raw->sync(&l.x);
    bs[r] = (double)(t1 - t0) / (double)batch;
  }
  if (ruda_bench_gpu_ok(b, "launch", "launch_empty_caller", l.x.err))
    ruda_bench_report(b, "launch", "launch_empty_caller", "ns",
                      ruda_bench_stats_from_samples(rs, reps),
                      ruda_bench_stats_from_samples(bs, reps), raw->caller_baseline, true);
  l.x.err = NULL;
  if (raw->parts && ruda_bench_parts_wanted()) parts(b, &l.x, raw->parts);
  ruda_bench_stats_t rr, br;
  ruda_bench_compare_calls(pair_ruda_roundtrip, pair_raw_roundtrip, &l, 10, reps, batch / 4 + 1,
                           &rr, &br);
  if (ruda_bench_gpu_ok(b, "launch", "launch_empty_roundtrip", l.x.err))
    ruda_bench_report(b, "launch", "launch_empty_roundtrip", "ns", rr, br,
                      raw->roundtrip_baseline, true);
  l.x.err = NULL;
out:
  free(rs);
  free(bs);
}


/* ---- memory ---- */

const uint64_t ruda_bench_gpu_mixed_sizes[RUDA_BENCH_GPU_MIXED] = {
    256, 4096, 1 << 20, 1000, 65536, 300000, 16, 131072};

void ruda_bench_gpu_each_size(ruda_bench_gpu_t *x,
                              void (*op)(ruda_bench_gpu_t *x, uint64_t size)) {
  for (int rep = 0; rep < 8; rep++)
    for (size_t i = 0; i < RUDA_BENCH_GPU_MIXED; i++) op(x, ruda_bench_gpu_mixed_sizes[i]);
}

static void ruda_reserve_release(ruda_bench_gpu_t *x, uint64_t size) {
  ruda_handle_t h;
  ruda_status_t s = ruda_client_empty(x->c, size, &h);
  if (s) {
    ruda_bench_keep_error(&x->err, s);
    return;
  }
  ruda_handle_release(&h);
}

void ruda_bench_gpu_reserve_batch(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_bench_gpu_each_size(x, ruda_reserve_release);
  ruda_bench_keep_error(&x->err, ruda_client_sync(x->c));
}

ruda_bench_stats_t ruda_bench_gpu_per_op(ruda_bench_stats_t s) {
  return ruda_bench_stats_scale(s, 1.0 / (8.0 * RUDA_BENCH_GPU_MIXED));
}

/* ---- copy ---- */

bool ruda_bench_gpu_copy_open(ruda_bench_t *b, ruda_bench_gpu_t *x, const char *case_name) {
  uint64_t size = x->size;
  ruda_status_t s = ruda_client_empty(x->c, x->size, &x->dev);
  if (!s) s = ruda_client_staging(x->c, &size, 1, &x->pinned);
  if (!ruda_bench_gpu_ok(b, "copy", case_name, s)) return false;
  x->pageable = malloc(x->size);
  if (x->pageable == NULL) {
    ruda_bench_fail(b, "copy", case_name, "out of host memory");
    return false;
  }
  memset(x->pageable, 1, x->size);
  memset(x->pinned.data, 3, x->size);
  return true;
}

void ruda_bench_gpu_copy_close(ruda_bench_gpu_t *x) {
  free(x->pageable);
  x->pageable = NULL;
  if (x->pinned.release) ruda_bytes_release(&x->pinned);
  ruda_handle_release(&x->dev);
}

/* `bytes` handed over to a new device buffer (no caller copy), then a
 * sync so that the device's copy is counted. */
static void hand_over(ruda_bench_gpu_t *x, ruda_bytes_t *bytes) {
  ruda_handle_t h;
  ruda_bench_keep_error(&x->err, ruda_client_create_buffer_from_bytes(x->c, bytes, &h));
  ruda_bench_keep_error(&x->err, ruda_client_sync(x->c));
  ruda_handle_release(&h);
}

void ruda_bench_gpu_write_pinned(void *p) {
  ruda_bench_gpu_t *x = p;
  /* The staging buffer goes to the device as bytes (no copy); a new one
   * comes from the warm pinned pool each time. */
  ruda_bytes_t st;
  uint64_t size = x->size;
  ruda_status_t s = ruda_client_staging(x->c, &size, 1, &st);
  if (s) {
    ruda_bench_keep_error(&x->err, s);
    return;
  }
  hand_over(x, &st);
}

void ruda_bench_gpu_read_pinned(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_bench_keep_error(&x->err, ruda_client_read(x->c, &x->dev, x->pinned.data, x->size));
}

void ruda_bench_gpu_write_pageable(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_bench_keep_error(&x->err, ruda_client_write(x->c, &x->dev, x->pageable, x->size));
  ruda_bench_keep_error(&x->err, ruda_client_sync(x->c));
}

static void no_release(ruda_bytes_t *bytes) { (void)bytes; }

void ruda_bench_gpu_write_pageable_bytes(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_bytes_t bytes = {x->pageable, x->size, RUDA_BYTES_NATIVE, no_release, NULL};
  hand_over(x, &bytes);
}

void ruda_bench_gpu_read_pageable(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_bench_keep_error(&x->err, ruda_client_read(x->c, &x->dev, x->pageable, x->size));
}

void ruda_bench_gpu_copy_case(ruda_bench_t *b, ruda_bench_gpu_t *x, const char *case_name,
                              void (*ruda_fn)(void *), void (*raw_fn)(void *), void *raw_host,
                              const char *baseline, size_t reps, bool alternate) {
  x->err = NULL;
  x->raw_host = raw_host;
  ruda_bench_stats_t r, base;
  if (alternate) {
    ruda_bench_compare_calls(ruda_fn, raw_fn, x, 1, reps, 1, &r, &base);
  } else {
    r = ruda_bench_measure(ruda_fn, x, 2, reps, 1);
    base = ruda_bench_measure(raw_fn, x, 2, reps, 1);
  }
  double bytes = (double)x->size;
  if (ruda_bench_gpu_ok(b, "copy", case_name, x->err))
    ruda_bench_report(b, "copy", case_name, "GB/s", ruda_bench_stats_rate(r, bytes, 1),
                      ruda_bench_stats_rate(base, bytes, 1), baseline, false);
  x->err = NULL;
}
