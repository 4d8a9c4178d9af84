/* CUDA benchmark cases for `ruda bench --device cuda:N`. Every case runs
 * ruda and its raw driver-API baseline in the same process, on the same
 * device and primary context:
 *
 *  launch   launch_empty_caller        caller's cost of a launch  vs cuLaunchKernel
 *           launch_empty_roundtrip     launch + sync              vs cuLaunchKernel + cuStreamSynchronize
 *  memory   reserve_release_mixed      empty + release, 256 B..1 MiB (a sync per batch)
 *                                      vs cuMemAlloc + cuMemFree
 *           reserve_release_mixed_async  the same vs cuMemAllocAsync + cuMemFreeAsync
 *  copy     write_pinned_256MiB        pinned staging -> device    vs cuMemcpyHtoD from pinned
 *           read_pinned_256MiB         device -> pinned staging    vs cuMemcpyDtoH to pinned
 *           write_pageable_256MiB      ruda_client_write + sync    vs cuMemcpyHtoD from pageable
 *           write_pageable_256MiB_bytes  the same data handed over as bytes (no caller copy)
 *           read_4B_latency            4-byte read                 vs cuMemcpyDtoH to pinned
 *  compile  kernel_load_warm_cache     load from the disk cache    vs NVRTC compile
 *           kernel_load_warm_cache_vs_module_load  the same  vs cuModuleLoadData +
 *                                      cuModuleGetFunction of the CUBIN in memory
 *  graph    replay_per_kernel          replay of a recorded graph of 1000 empty kernels + sync,
 *                                      per kernel  vs cuGraphLaunch of the same kernels
 *                                      captured directly + cuStreamSynchronize
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ruda/ruda.h"

#if !defined(RUDA_HAVE_CUDA_HEADERS)

#define NOT_BUILT "ruda was built without the CUDA headers"
void ruda_bench_cuda_launch(ruda_bench_t *b) { ruda_bench_skip(b, "launch", "cuda", NOT_BUILT); }
void ruda_bench_cuda_memory(ruda_bench_t *b) { ruda_bench_skip(b, "memory", "cuda", NOT_BUILT); }
void ruda_bench_cuda_copy(ruda_bench_t *b) { ruda_bench_skip(b, "copy", "cuda", NOT_BUILT); }
void ruda_bench_cuda_compile(ruda_bench_t *b) { ruda_bench_skip(b, "compile", "cuda", NOT_BUILT); }
void ruda_bench_cuda_graph(ruda_bench_t *b) { ruda_bench_skip(b, "graph", "cuda", NOT_BUILT); }

#else

#include "backends/cuda/cuda_internal.h"

/* The raw side: the driver table, the device's primary context made
 * current on this thread, and a non-blocking stream. */
typedef struct raw {
  const ruda__cuda_api_t *api;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  uint32_t cc;
} raw_t;

static bool raw_open(ruda_bench_t *b, const char *bench, ruda_client_t *c, raw_t *r) {
  memset(r, 0, sizeof *r);
  ruda_status_t s = ruda__cuda_api_get(&r->api);
  if (s) {
    char *t = ruda_status_to_string(s);
    ruda_bench_skip(b, bench, "cuda", t ? t : "CUDA unavailable");
    free(t);
    ruda_status_free(s);
    return false;
  }
  int index = ruda_client_device(c).index_id;
  if (r->api->cuDeviceGet(&r->dev, index) != CUDA_SUCCESS ||
      r->api->cuDevicePrimaryCtxRetain(&r->ctx, r->dev) != CUDA_SUCCESS ||
      r->api->cuCtxSetCurrent(r->ctx) != CUDA_SUCCESS ||
      r->api->cuStreamCreateWithPriority(&r->stream, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS) {
    ruda_bench_fail(b, bench, "cuda", "cannot set up the raw CUDA baseline");
    return false;
  }
  r->cc = ruda_client_properties(c)->hardware.compute_capability;
  return true;
}

static void raw_close(raw_t *r) {
  if (r->stream) r->api->cuStreamDestroy(r->stream);
  if (r->ctx) r->api->cuDevicePrimaryCtxRelease(r->dev);
}

static bool check(ruda_bench_t *b, const char *bench, const char *case_name, ruda_status_t s) {
  if (!s) return true;
  char *t = ruda_status_to_string(s);
  ruda_bench_fail(b, bench, case_name, "%s", t ? t : "error");
  free(t);
  ruda_status_free(s);
  return false;
}

static ruda_bench_stats_t stats_of(double *samples, size_t n) {
  return ruda_bench_stats_from_samples(samples, n);
}

/* Bandwidth (GB/s) from time stats (ns per call) for `bytes` per call. */
static ruda_bench_stats_t bandwidth(ruda_bench_stats_t t, double bytes) {
  ruda_bench_stats_t g = t;
  g.median = t.median > 0 ? bytes / t.median : 0;
  g.min = t.max > 0 ? bytes / t.max : 0;
  g.max = t.min > 0 ? bytes / t.min : 0;
  return g;
}

static const char empty_src[] =
    "extern \"C\" __global__ void bench_empty(const unsigned long long *info) {}\n";

/* ---- launch ---- */

typedef struct launch_ctx {
  ruda_client_t *c;
  ruda_kernel_t *k;
  raw_t *raw;
  CUfunction fn;
  ruda_status_t err;
} launch_ctx_t;

static void keep(ruda_status_t *slot, ruda_status_t s) {
  if (!s) return;
  if (*slot)
    ruda_status_free(s);
  else
    *slot = s;
}

static void ruda_roundtrip(void *p) {
  launch_ctx_t *x = p;
  ruda_kernel_args_t a = {0};
  keep(&x->err, ruda_client_launch(x->c, x->k, ruda_count_static(1, 1, 1), &a));
  keep(&x->err, ruda_client_sync(x->c));
}

static void raw_launch(launch_ctx_t *x) {
  CUdeviceptr info = 0;
  void *params[1] = {&info};
  x->raw->api->cuLaunchKernel(x->fn, 1, 1, 1, 1, 1, 1, 0, x->raw->stream, params, NULL);
}

static void raw_roundtrip(void *p) {
  launch_ctx_t *x = p;
  raw_launch(x);
  x->raw->api->cuStreamSynchronize(x->raw->stream);
}

/* ---- parts (RUDA_BENCH_PARTS=1): where the time of a round trip goes ----
 * Medians over many calls of the pieces a ruda launch, sync and small read
 * are made of, on an idle stream, printed as progress lines. */

#define PART(label, stmt) RUDA_BENCH_PART(b, samples, label, stmt)

static void ruda_bench_cuda_parts(ruda_bench_t *b, ruda_client_t *c, raw_t *raw, CUfunction fn,
                                  ruda_kernel_t *k) {
  const ruda__cuda_api_t *api = raw->api;
  double *samples = calloc(RUDA_BENCH_PART_N, sizeof *samples);
  void *pinned = NULL;
  CUdeviceptr dev = 0;
  CUevent ev = NULL;
  if (!samples || api->cuMemAllocHost(&pinned, 4096) != CUDA_SUCCESS ||
      api->cuMemAlloc(&dev, 4096) != CUDA_SUCCESS ||
      api->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    free(samples);
    return;
  }
  CUstream st = raw->stream;
  CUdeviceptr info = 0;
  void *params[1] = {&info};
  ruda_memory_usage_t u;
  ruda_handle_t h = {0};
  uint32_t word = 0;
  ruda_kernel_args_t a = {0};
  ruda_status_t err = ruda_client_create_buffer(c, &word, sizeof word, &h);
  ruda_status_free(err);
  volatile uint64_t clock_sink = 0;
  PART("clock_gettime(CLOCK_MONOTONIC)", clock_sink += ruda_bench_now_ns());
  (void)clock_sink;
  PART("cuStreamQuery (idle)", api->cuStreamQuery(st));
  PART("cuEventRecord", api->cuEventRecord(ev, st));
  PART("cuEventRecord+cuEventQuery until done", {
    api->cuEventRecord(ev, st);
    while (api->cuEventQuery(ev) == CUDA_ERROR_NOT_READY) {
    }
  });
  PART("cuEventRecord+cuEventSynchronize", {
    api->cuEventRecord(ev, st);
    api->cuEventSynchronize(ev);
  });
  PART("cuStreamSynchronize (idle)", api->cuStreamSynchronize(st));
  PART("cuMemcpyDtoH 4 B to pinned", api->cuMemcpyDtoH(pinned, dev, 4));
  PART("cuMemcpyDtoHAsync 4 B + cuStreamSynchronize", {
    api->cuMemcpyDtoHAsync(pinned, dev, 4, st);
    api->cuStreamSynchronize(st);
  });
  /* ruda's device memory comes from stream-ordered pools, and a call made
   * on the caller's thread asks for the current context first. */
  CUdeviceptr pooled = 0;
  if (api->cuMemAllocAsync && api->cuMemAllocAsync(&pooled, 4096, st) == CUDA_SUCCESS &&
      api->cuStreamSynchronize(st) == CUDA_SUCCESS) {
    PART("cuMemcpyDtoHAsync 4 B from cuMemAllocAsync memory + sync", {
      api->cuMemcpyDtoHAsync(pinned, pooled, 4, st);
      api->cuStreamSynchronize(st);
    });
    api->cuMemFreeAsync(pooled, st);
    api->cuStreamSynchronize(st);
  }
  CUcontext current = NULL;
  PART("cuCtxGetCurrent", api->cuCtxGetCurrent(&current));
  PART("cuMemcpyDtoHAsync 4 B + event record + query", {
    api->cuMemcpyDtoHAsync(pinned, dev, 4, st);
    api->cuEventRecord(ev, st);
    while (api->cuEventQuery(ev) == CUDA_ERROR_NOT_READY) {
    }
  });
  PART("cuLaunchKernel (host cost)", api->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, st, params, NULL));
  api->cuStreamSynchronize(st);
  PART("cuLaunchKernel + cuStreamSynchronize", {
    api->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, st, params, NULL);
    api->cuStreamSynchronize(st);
  });
  ruda_bench_load_t *poller = ruda_bench_poll_start(1);
  PART("cuLaunchKernel + cuStreamSynchronize, 1 thread polling", {
    api->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, st, params, NULL);
    api->cuStreamSynchronize(st);
  });
  ruda_bench_load_stop(poller);
  PART("cuLaunchKernel + event record + query", {
    api->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, st, params, NULL);
    api->cuEventRecord(ev, st);
    while (api->cuEventQuery(ev) == CUDA_ERROR_NOT_READY) {
    }
  });
  PART("ruda_client_memory_usage (hand-off round trip)", ruda_status_free(ruda_client_memory_usage(c, &u)));
  PART("ruda_client_flush (idle)", ruda_status_free(ruda_client_flush(c)));
  PART("ruda_client_sync (idle)", ruda_status_free(ruda_client_sync(c)));
  PART("ruda_client_read 4 B", ruda_status_free(ruda_client_read(c, &h, &word, sizeof word)));
  PART("ruda_client_launch (caller)", ruda_status_free(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a)));
  ruda_status_free(ruda_client_sync(c));
  PART("ruda_client_launch + ruda_client_sync", {
    ruda_status_free(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a));
    ruda_status_free(ruda_client_sync(c));
  });
  ruda_bench_server_parts(b, c, k);
  PART("ruda_client_empty 4 KiB + release", {
    ruda_handle_t t;
    ruda_status_free(ruda_client_empty(c, 4096, &t));
    ruda_handle_release(&t);
  });
  ruda_status_free(ruda_client_sync(c));
  PART("cuMemAllocAsync+cuMemFreeAsync 4 KiB", {
    CUdeviceptr p = 0;
    api->cuMemAllocAsync(&p, 4096, st);
    api->cuMemFreeAsync(p, st);
  });
  api->cuStreamSynchronize(st);
  ruda_handle_release(&h);
  api->cuEventDestroy(ev);
  api->cuMemFree(dev);
  api->cuMemFreeHost(pinned);
  free(samples);
}

void ruda_bench_cuda_launch(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "launch", "launch_empty_caller", &c)) return;
  raw_t raw;
  if (!raw_open(b, "launch", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  launch_ctx_t x = {c, NULL, &raw, NULL, NULL};
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "bench_empty";
  d.ruda_dim = ruda_dim_new_1d(1);
  ruda_kernel_code_t code = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, empty_src);
  d.code = &code;
  d.num_code = 1;
  void *cubin = NULL;
  size_t size = 0;
  CUmodule mod = NULL;
  if (!check(b, "launch", "launch_empty_caller", ruda_kernel_create(&d, &x.k)) ||
      !check(b, "launch", "launch_empty_caller",
             ruda__cuda_nvrtc_compile("bench_empty", empty_src, strlen(empty_src), raw.cc, NULL,
                                      0, &cubin, &size))) {
    goto out;
  }
  raw.api->cuModuleLoadData(&mod, cubin);
  free(cubin);
  raw.api->cuModuleGetFunction(&x.fn, mod, "bench_empty");

  size_t reps = ruda_bench_pick(b, 30, 10, 2), batch = ruda_bench_pick(b, 200, 100, 4);
  for (int i = 0; i < 20; i++) ruda_roundtrip(&x), raw_roundtrip(&x);
  double *rs = calloc(reps, sizeof *rs), *bs = calloc(reps, sizeof *bs);
  if (!rs || !bs) goto out_free;
  ruda_kernel_args_t a = {0};
  for (size_t r = 0; r < reps; r++) {
    uint64_t t0 = ruda_bench_now_ns();
    for (size_t i = 0; i < batch; i++)
      keep(&x.err, ruda_client_launch(c, x.k, ruda_count_static(1, 1, 1), &a));
    uint64_t t1 = ruda_bench_now_ns();
    keep(&x.err, ruda_client_sync(c));
    rs[r] = (double)(t1 - t0) / (double)batch;
    t0 = ruda_bench_now_ns();
    for (size_t i = 0; i < batch; i++) raw_launch(&x);
    t1 = ruda_bench_now_ns();
    raw.api->cuStreamSynchronize(raw.stream);
    bs[r] = (double)(t1 - t0) / (double)batch;
  }
  if (check(b, "launch", "launch_empty_caller", x.err)) {
    x.err = NULL;
    ruda_bench_report(b, "launch", "launch_empty_caller", "ns", stats_of(rs, reps),
                      stats_of(bs, reps), "cuLaunchKernel", true);
  }
  x.err = NULL;
  if (ruda_bench_parts_wanted()) ruda_bench_cuda_parts(b, c, &raw, x.fn, x.k);
  ruda_bench_stats_t rr, br;
  ruda_bench_compare_calls(ruda_roundtrip, raw_roundtrip, &x, 10, reps, batch / 4 + 1, &rr, &br);
  if (check(b, "launch", "launch_empty_roundtrip", x.err))
    ruda_bench_report(b, "launch", "launch_empty_roundtrip", "ns", rr, br,
                      "cuLaunchKernel+cuStreamSynchronize", true);
  x.err = NULL;
out_free:
  free(rs);
  free(bs);
out:
  if (mod) raw.api->cuModuleUnload(mod);
  ruda_kernel_release(x.k);
  raw_close(&raw);
  ruda_client_release(c);
}

/* ---- memory ---- */

static const uint64_t mixed_sizes[] = {256, 4096, 1 << 20, 1000, 65536, 300000, 16, 131072};
#define NMIXED (sizeof mixed_sizes / sizeof mixed_sizes[0])

typedef struct mem_ctx {
  ruda_client_t *c;
  raw_t *raw;
  ruda_status_t err;
} mem_ctx_t;

/* One batch: every size reserved and released, then a sync so the
 * device-side work is counted too. Per reserve+release. */
static void ruda_batch(void *p) {
  mem_ctx_t *x = p;
  for (int rep = 0; rep < 8; rep++)
    for (size_t i = 0; i < NMIXED; i++) {
      ruda_handle_t h;
      ruda_status_t s = ruda_client_empty(x->c, mixed_sizes[i], &h);
      if (s) {
        keep(&x->err, s);
        continue;
      }
      ruda_handle_release(&h);
    }
  keep(&x->err, ruda_client_sync(x->c));
}

static void raw_batch(void *p) {
  mem_ctx_t *x = p;
  for (int rep = 0; rep < 8; rep++)
    for (size_t i = 0; i < NMIXED; i++) {
      CUdeviceptr d = 0;
      x->raw->api->cuMemAlloc(&d, mixed_sizes[i]);
      x->raw->api->cuMemFree(d);
    }
}

static void raw_async_batch(void *p) {
  mem_ctx_t *x = p;
  for (int rep = 0; rep < 8; rep++)
    for (size_t i = 0; i < NMIXED; i++) {
      CUdeviceptr d = 0;
      x->raw->api->cuMemAllocAsync(&d, mixed_sizes[i], x->raw->stream);
      x->raw->api->cuMemFreeAsync(d, x->raw->stream);
    }
  x->raw->api->cuStreamSynchronize(x->raw->stream);
}

static ruda_bench_stats_t per_op(ruda_bench_stats_t s) {
  double n = 8.0 * (double)NMIXED;
  s.median /= n;
  s.min /= n;
  s.max /= n;
  return s;
}

void ruda_bench_cuda_memory(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "memory", "reserve_release_mixed", &c)) return;
  raw_t raw;
  if (!raw_open(b, "memory", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  mem_ctx_t x = {c, &raw, NULL};
  size_t reps = ruda_bench_pick(b, 30, 10, 2);
  ruda_bench_stats_t rs = per_op(ruda_bench_measure(ruda_batch, &x, 5, reps, 1));
  ruda_bench_stats_t bs = per_op(ruda_bench_measure(raw_batch, &x, 2, reps, 1));
  if (check(b, "memory", "reserve_release_mixed", x.err)) {
    ruda_bench_report(b, "memory", "reserve_release_mixed", "ns", rs, bs, "cuMemAlloc+cuMemFree",
                      true);
    if (raw.api->cuMemAllocAsync != NULL) {
      ruda_bench_stats_t as = per_op(ruda_bench_measure(raw_async_batch, &x, 5, reps, 1));
      ruda_bench_report(b, "memory", "reserve_release_mixed_async", "ns", rs, as,
                        "cuMemAllocAsync+cuMemFreeAsync", true);
    }
  }
  raw_close(&raw);
  ruda_client_release(c);
}

/* ---- copy ---- */

typedef struct copy_ctx {
  ruda_client_t *c;
  raw_t *raw;
  size_t size;
  ruda_handle_t dev;       /* ruda device buffer */
  ruda_bytes_t pinned;     /* ruda staging buffer */
  void *pageable;          /* caller's pageable buffer */
  CUdeviceptr raw_dev;
  void *raw_pinned;
  ruda_status_t err;
} copy_ctx_t;

static void ruda_write_pinned(void *p) {
  copy_ctx_t *x = p;
  /* The staging buffer goes to the device as bytes (no copy); a new one
   * comes from the warm pinned pool each time. */
  ruda_bytes_t st;
  uint64_t size = x->size;
  ruda_status_t s = ruda_client_staging(x->c, &size, 1, &st);
  if (s) {
    keep(&x->err, s);
    return;
  }
  ruda_handle_t h;
  keep(&x->err, ruda_client_create_buffer_from_bytes(x->c, &st, &h));
  keep(&x->err, ruda_client_sync(x->c));
  ruda_handle_release(&h);
}

static void raw_write_pinned(void *p) {
  copy_ctx_t *x = p;
  x->raw->api->cuMemcpyHtoD(x->raw_dev, x->raw_pinned, x->size);
}

static void ruda_read_pinned(void *p) {
  copy_ctx_t *x = p;
  keep(&x->err, ruda_client_read(x->c, &x->dev, x->pinned.data, x->size));
}

static void raw_read_pinned(void *p) {
  copy_ctx_t *x = p;
  x->raw->api->cuMemcpyDtoH(x->raw_pinned, x->raw_dev, x->size);
}

static void ruda_write_pageable(void *p) {
  copy_ctx_t *x = p;
  keep(&x->err, ruda_client_write(x->c, &x->dev, x->pageable, x->size));
  keep(&x->err, ruda_client_sync(x->c));
}

static void no_release(ruda_bytes_t *b) { (void)b; }

static void ruda_write_pageable_bytes(void *p) {
  copy_ctx_t *x = p;
  ruda_bytes_t bytes = {x->pageable, x->size, RUDA_BYTES_NATIVE, no_release, NULL};
  ruda_handle_t h;
  keep(&x->err, ruda_client_create_buffer_from_bytes(x->c, &bytes, &h));
  keep(&x->err, ruda_client_sync(x->c));
  ruda_handle_release(&h);
}

static void raw_write_pageable(void *p) {
  copy_ctx_t *x = p;
  x->raw->api->cuMemcpyHtoD(x->raw_dev, x->pageable, x->size);
}

static void ruda_read_4b(void *p) {
  copy_ctx_t *x = p;
  uint32_t v = 0;
  keep(&x->err, ruda_client_read(x->c, &x->dev, &v, sizeof v)); /* x->dev: a 4-byte view */
}

static void raw_read_4b(void *p) {
  copy_ctx_t *x = p;
  x->raw->api->cuMemcpyDtoH(x->raw_pinned, x->raw_dev, 4);
}

void ruda_bench_cuda_copy(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "copy", "write_pinned_256MiB", &c)) return;
  raw_t raw;
  if (!raw_open(b, "copy", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  copy_ctx_t x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.raw = &raw;
  x.size = ruda_bench_pick(b, 256u << 20, 64u << 20, 1u << 20);
  double bytes = (double)x.size;
  size_t reps = ruda_bench_pick(b, 10, 4, 1);
  ruda_status_t s = ruda_client_empty(c, x.size, &x.dev);
  if (!s) s = ruda_client_staging(c, &x.size, 1, &x.pinned);
  if (!check(b, "copy", "write_pinned_256MiB", s)) goto out;
  x.pageable = malloc(x.size);
  if (!x.pageable || raw.api->cuMemAlloc(&x.raw_dev, x.size) != CUDA_SUCCESS ||
      raw.api->cuMemAllocHost(&x.raw_pinned, x.size) != CUDA_SUCCESS) {
    ruda_bench_fail(b, "copy", "write_pinned_256MiB", "cannot allocate the baseline's buffers");
    goto out;
  }
  memset(x.pageable, 1, x.size);
  memset(x.raw_pinned, 2, x.size);
  memset(x.pinned.data, 3, x.size);

  ruda_bench_stats_t r, base;
  r = ruda_bench_measure(ruda_write_pinned, &x, 2, reps, 1);
  base = ruda_bench_measure(raw_write_pinned, &x, 2, reps, 1);
  if (check(b, "copy", "write_pinned_256MiB", x.err))
    ruda_bench_report(b, "copy", "write_pinned_256MiB", "GB/s", bandwidth(r, bytes),
                      bandwidth(base, bytes), "cuMemcpyHtoD (pinned)", false);
  x.err = NULL;
  r = ruda_bench_measure(ruda_read_pinned, &x, 2, reps, 1);
  base = ruda_bench_measure(raw_read_pinned, &x, 2, reps, 1);
  if (check(b, "copy", "read_pinned_256MiB", x.err))
    ruda_bench_report(b, "copy", "read_pinned_256MiB", "GB/s", bandwidth(r, bytes),
                      bandwidth(base, bytes), "cuMemcpyDtoH (pinned)", false);
  x.err = NULL;
  r = ruda_bench_measure(ruda_write_pageable, &x, 2, reps, 1);
  base = ruda_bench_measure(raw_write_pageable, &x, 2, reps, 1);
  if (check(b, "copy", "write_pageable_256MiB", x.err))
    ruda_bench_report(b, "copy", "write_pageable_256MiB", "GB/s", bandwidth(r, bytes),
                      bandwidth(base, bytes), "cuMemcpyHtoD (pageable)", false);
  x.err = NULL;
  r = ruda_bench_measure(ruda_write_pageable_bytes, &x, 2, reps, 1);
  if (check(b, "copy", "write_pageable_256MiB_bytes", x.err))
    ruda_bench_report(b, "copy", "write_pageable_256MiB_bytes", "GB/s", bandwidth(r, bytes),
                      bandwidth(base, bytes), "cuMemcpyHtoD (pageable)", false);
  x.err = NULL;
  {
    /* A 4-byte view of the device buffer. */
    ruda_handle_t whole = x.dev;
    ruda_handle_t four = ruda_handle_clone(&whole);
    s = ruda_handle_offset_end(&four, x.size - 4);
    if (check(b, "copy", "read_4B_latency", s)) {
      x.dev = four;
      size_t saved = x.size;
      x.size = 4;
      size_t lreps = ruda_bench_pick(b, 30, 10, 2);
      ruda_bench_compare_calls(ruda_read_4b, raw_read_4b, &x, 20, lreps, 50, &r, &base);
      x.size = saved;
      x.dev = whole;
      if (check(b, "copy", "read_4B_latency", x.err))
        ruda_bench_report(b, "copy", "read_4B_latency", "ns", r, base, "cuMemcpyDtoH (4 B, pinned)",
                          true);
      x.err = NULL;
    }
    ruda_handle_release(&four);
  }
out:
  if (x.raw_dev) raw.api->cuMemFree(x.raw_dev);
  if (x.raw_pinned) raw.api->cuMemFreeHost(x.raw_pinned);
  free(x.pageable);
  if (x.pinned.release) ruda_bytes_release(&x.pinned);
  ruda_handle_release(&x.dev);
  raw_close(&raw);
  ruda_client_release(c);
}

/* ---- compile ---- */

static const char compile_src[] =
    "extern \"C\" __global__ void bench_saxpy(float *y, const float *x,\n"
    "                                         const unsigned long long *info) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  float a = __longlong_as_double(info[1]);\n"
    "  if (i < info[0]) y[i] = a * x[i] + y[i];\n"
    "}\n";

typedef struct compile_ctx {
  raw_t *raw;
  ruda_kernel_t *k;
  uint64_t props_hash;
  ruda_status_t err;
} compile_ctx_t;

/* One warm load: a fresh module cache (nothing in memory, the CUBIN on
 * disk), then the load timed alone; creating and destroying the cache (and
 * unloading the module) are not part of loading. Nanoseconds. */
static double ruda_warm_load_ns(compile_ctx_t *x) {
  char root[1024];
  if (!ruda__cuda_cache_root(root, sizeof root)) root[0] = '\0';
  ruda__cuda_module_cache_t *mc = ruda__cuda_module_cache_create(x->raw->api, x->raw->cc,
                                                                 x->props_hash, root);
  ruda__cuda_function_t *fn = NULL;
  uint64_t t0 = ruda_bench_now_ns();
  if (mc) keep(&x->err, ruda__cuda_module_cache_get(mc, x->k, &fn));
  uint64_t t1 = ruda_bench_now_ns();
  ruda__cuda_module_cache_destroy(mc, false);
  return (double)(t1 - t0);
}

static void ruda_warm_load(void *p) { (void)ruda_warm_load_ns(p); }

/* cuModuleLoadData + cuModuleGetFunction of the CUBIN already in memory,
 * timed alone (the unload is not). Nanoseconds. */
static double module_load_ns(compile_ctx_t *x, const void *cubin) {
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  uint64_t t0 = ruda_bench_now_ns();
  CUresult r = x->raw->api->cuModuleLoadData(&mod, cubin);
  if (r == CUDA_SUCCESS) r = x->raw->api->cuModuleGetFunction(&fn, mod, "bench_saxpy");
  uint64_t t1 = ruda_bench_now_ns();
  if (mod) x->raw->api->cuModuleUnload(mod);
  return r == CUDA_SUCCESS ? (double)(t1 - t0) : 0;
}

static void nvrtc_compile(void *p) {
  compile_ctx_t *x = p;
  void *cubin = NULL;
  size_t size = 0;
  keep(&x->err, ruda__cuda_nvrtc_compile("bench_saxpy", compile_src, strlen(compile_src),
                                         x->raw->cc, NULL, 0, &cubin, &size));
  free(cubin);
}

void ruda_bench_cuda_compile(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "compile", "kernel_load_warm_cache", &c)) return;
  raw_t raw;
  if (!raw_open(b, "compile", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  char root[1024];
  if (!ruda__cuda_cache_root(root, sizeof root)) {
    ruda_bench_skip(b, "compile", "kernel_load_warm_cache", "the disk cache is off");
    goto out;
  }
  compile_ctx_t x = {&raw, NULL, ruda_client_properties_checksum(c), NULL};
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "bench_saxpy";
  d.ruda_dim = ruda_dim_new_1d(256);
  ruda_kernel_code_t code = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, compile_src);
  d.code = &code;
  d.num_code = 1;
  if (!check(b, "compile", "kernel_load_warm_cache", ruda_kernel_create(&d, &x.k))) goto out;
  size_t reps = ruda_bench_pick(b, 20, 5, 1);
  ruda_warm_load(&x); /* fills the disk cache */
  double *rs = calloc(reps, sizeof *rs), *ms = calloc(reps, sizeof *ms);
  void *cubin = NULL;
  size_t cubin_size = 0;
  keep(&x.err, ruda__cuda_nvrtc_compile("bench_saxpy", compile_src, strlen(compile_src), raw.cc,
                                        NULL, 0, &cubin, &cubin_size));
  for (int i = 0; i < 3 && cubin; i++) ruda_warm_load(&x), module_load_ns(&x, cubin);
  /* Alternating samples: the disk cache's load and the bare module load. */
  for (size_t i = 0; rs && ms && cubin && i < reps; i++) {
    rs[i] = ruda_warm_load_ns(&x);
    ms[i] = module_load_ns(&x, cubin);
  }
  ruda_bench_stats_t r = rs ? stats_of(rs, reps) : (ruda_bench_stats_t){0};
  ruda_bench_stats_t ml = ms ? stats_of(ms, reps) : (ruda_bench_stats_t){0};
  free(rs);
  free(ms);
  free(cubin);
  ruda_bench_stats_t base = ruda_bench_measure(nvrtc_compile, &x, 1, reps, 1);
  ruda__cuda_compile_stats_t st = ruda__cuda_compile_stats();
  ruda_bench_progress(b, "compile: disk hits %llu, compiles %llu, disk skips %llu",
                      (unsigned long long)st.disk_hits, (unsigned long long)st.compiles,
                      (unsigned long long)st.disk_skips);
  if (st.disk_hits) {
    ruda_bench_progress(b, "compile: per disk hit: key %.0f ns, file %.0f ns, module load %.0f ns, "
                        "whole hit %.0f ns",
                        (double)st.hit_key_ns / (double)st.disk_hits,
                        (double)st.hit_read_ns / (double)st.disk_hits,
                        (double)st.hit_load_ns / (double)st.disk_hits,
                        (double)st.hit_total_ns / (double)st.disk_hits);
  }
  if (check(b, "compile", "kernel_load_warm_cache", x.err)) {
    ruda_bench_report(b, "compile", "kernel_load_warm_cache", "ns", r, base, "nvrtcCompileProgram",
                      true);
    ruda_bench_report(b, "compile", "kernel_load_warm_cache_vs_module_load", "ns", r, ml,
                      "cuModuleLoadData+cuModuleGetFunction (CUBIN in memory)", true);
  }
  ruda_kernel_release(x.k);
out:
  raw_close(&raw);
  ruda_client_release(c);
}

/* ---- graph ---- */

enum { GRAPH_KERNELS = 1000 };

typedef struct graph_ctx {
  ruda_client_t *c;
  ruda_graph_t *g;
  raw_t *raw;
  CUgraphExec exec;
  ruda_status_t err;
} graph_ctx_t;

static void ruda_replay(void *p) {
  graph_ctx_t *x = p;
  keep(&x->err, ruda_client_graph_replay(x->c, x->g));
  keep(&x->err, ruda_client_sync(x->c));
}

static void raw_replay(void *p) {
  graph_ctx_t *x = p;
  x->raw->api->cuGraphLaunch(x->exec, x->raw->stream);
  x->raw->api->cuStreamSynchronize(x->raw->stream);
}

void ruda_bench_cuda_graph(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "graph", "replay_per_kernel", &c)) return;
  raw_t raw;
  if (!raw_open(b, "graph", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  const ruda__cuda_api_t *api = raw.api;
  graph_ctx_t x = {c, NULL, &raw, NULL, NULL};
  ruda_kernel_t *k = NULL;
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUgraph graph = NULL;
  void *cubin = NULL;
  size_t size = 0;
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "bench_empty";
  d.ruda_dim = ruda_dim_new_1d(1);
  ruda_kernel_code_t code = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, empty_src);
  d.code = &code;
  d.num_code = 1;
  if (!api->cuStreamBeginCapture || !api->cuGraphInstantiate || !api->cuGraphLaunch) {
    ruda_bench_skip(b, "graph", "replay_per_kernel", "the driver has no CUDA graphs");
    goto out;
  }
  ruda_status_t st = ruda_kernel_create(&d, &k);
  if (!st) st = ruda_client_graph_begin(c);
  ruda_kernel_args_t a = {0};
  for (int i = 0; !st && i < GRAPH_KERNELS; i++) {
    st = ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a);
  }
  if (!st) st = ruda_client_graph_end(c, &x.g);
  if (!st) {
    st = ruda__cuda_nvrtc_compile("bench_empty", empty_src, strlen(empty_src), raw.cc, NULL, 0,
                                  &cubin, &size);
  }
  if (!check(b, "graph", "replay_per_kernel", st)) goto out;
  /* The raw side: the same kernel captured 1000 times into a CUDA graph. */
  CUdeviceptr info = 0;
  void *params[1] = {&info};
  if (api->cuModuleLoadData(&mod, cubin) != CUDA_SUCCESS ||
      api->cuModuleGetFunction(&fn, mod, "bench_empty") != CUDA_SUCCESS ||
      api->cuStreamBeginCapture(raw.stream, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS) {
    ruda_bench_fail(b, "graph", "replay_per_kernel", "cannot set up the raw CUDA graph");
    goto out;
  }
  for (int i = 0; i < GRAPH_KERNELS; i++) {
    api->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, raw.stream, params, NULL);
  }
  if (api->cuStreamEndCapture(raw.stream, &graph) != CUDA_SUCCESS ||
      api->cuGraphInstantiate(&x.exec, graph, 0) != CUDA_SUCCESS) {
    ruda_bench_fail(b, "graph", "replay_per_kernel", "cannot instantiate the raw CUDA graph");
    goto out;
  }
  size_t reps = ruda_bench_pick(b, 30, 10, 1);
  ruda_bench_stats_t r = ruda_bench_measure(ruda_replay, &x, 3, reps, 1);
  ruda_bench_stats_t base = ruda_bench_measure(raw_replay, &x, 3, reps, 1);
  if (check(b, "graph", "replay_per_kernel", x.err)) {
    ruda_bench_report(b, "graph", "replay_per_kernel", "ns",
                      ruda_bench_stats_scale(r, 1.0 / GRAPH_KERNELS),
                      ruda_bench_stats_scale(base, 1.0 / GRAPH_KERNELS),
                      "cuGraphLaunch+cuStreamSynchronize", true);
  }
out:
  if (x.exec) api->cuGraphExecDestroy(x.exec);
  if (graph) api->cuGraphDestroy(graph);
  if (mod) api->cuModuleUnload(mod);
  free(cubin);
  ruda_graph_release(x.g);
  ruda_kernel_release(k);
  raw_close(&raw);
  ruda_client_release(c);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
