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

#include "bench_gpu.h"
#include "bench_internal.h"

#if !defined(RUDA_HAVE_CUDA_HEADERS)

RUDA_BENCH_GPU_NOT_BUILT(cuda, launch)
RUDA_BENCH_GPU_NOT_BUILT(cuda, memory)
RUDA_BENCH_GPU_NOT_BUILT(cuda, copy)
RUDA_BENCH_GPU_NOT_BUILT(cuda, compile)
RUDA_BENCH_GPU_NOT_BUILT(cuda, graph)

#else


/* The raw side: the driver table, the device's primary context made
 * current on this thread, a non-blocking stream, and the baseline's
 * kernel (launch) and buffers (copy). */
typedef struct raw {
  const ruda__cuda_api_t *api;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  uint32_t cc;
  CUfunction fn;
  CUdeviceptr buf;
  void *pinned;
} raw_t;

static bool raw_open(ruda_bench_t *b, const char *bench, ruda_client_t *c, void *p) {
  raw_t *r = p;
  memset(r, 0, sizeof *r);
  ruda_status_t s = ruda__cuda_api_get(&r->api);
  if (s) {
    ruda_bench_skip_status(b, bench, "cuda", s);
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

static void raw_close(void *p) {
  raw_t *r = p;
  if (r->stream) r->api->cuStreamDestroy(r->stream);
  if (r->ctx) r->api->cuDevicePrimaryCtxRelease(r->dev);
}

static const ruda_bench_gpu_baseline_t raw_baseline = {raw_open, raw_close};

static const char empty_src[] =
    "extern \"C\" __global__ void bench_empty(const unsigned long long *info) {}\n";

/* ---- launch ---- */

static void raw_launch(ruda_bench_gpu_t *x) {
  raw_t *r = x->raw;
  CUdeviceptr info = 0;
  void *params[1] = {&info};
  r->api->cuLaunchKernel(r->fn, 1, 1, 1, 1, 1, 1, 0, r->stream, params, NULL);
}

static void raw_sync(ruda_bench_gpu_t *x) {
  raw_t *r = x->raw;
  r->api->cuStreamSynchronize(r->stream);
}

/* ---- parts (RUDA_BENCH_PARTS=1): the driver calls a launch, a sync and
 * a small read are made of, and ruda's calls around them (bench_gpu.c
 * runs them, with ruda's own parts) ---- */

#define PART(label, stmt) RUDA_BENCH_PART(b, samples, label, stmt)

static void ruda_bench_cuda_parts(ruda_bench_t *b, ruda_bench_gpu_t *x, double *samples) {
  raw_t *raw = x->raw;
  ruda_client_t *c = x->c;
  const ruda__cuda_api_t *api = raw->api;
  CUfunction fn = raw->fn;
  void *pinned = NULL;
  CUdeviceptr dev = 0;
  CUevent ev = NULL;
  if (api->cuMemAllocHost(&pinned, 4096) != CUDA_SUCCESS ||
      api->cuMemAlloc(&dev, 4096) != CUDA_SUCCESS ||
      api->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    if (dev) api->cuMemFree(dev);
    if (pinned) api->cuMemFreeHost(pinned);
    return;
  }
  CUstream st = raw->stream;
  CUdeviceptr info = 0;
  void *params[1] = {&info};
  ruda_memory_usage_t u;
  ruda_handle_t h = {0};
  uint32_t word = 0;
  ruda_status_t err = ruda_client_create_buffer(c, &word, sizeof word, &h);
  ruda_status_free(err);
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
  PART("ruda_client_read 4 B", ruda_status_free(ruda_client_read(c, &h, &word, sizeof word)));
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
}

/* The empty kernel's CUBIN (NVRTC, for the raw side) loaded into *mod. */
static ruda_status_t load_empty(raw_t *raw, CUmodule *mod, CUfunction *fn) {
  void *cubin = NULL;
  size_t size = 0;
  ruda_status_t s = ruda__cuda_nvrtc_compile("bench_empty", empty_src, strlen(empty_src), raw->cc,
                                             NULL, 0, &cubin, &size);
  if (s) return s;
  CUresult r = raw->api->cuModuleLoadData(mod, cubin);
  free(cubin);
  if (r == CUDA_SUCCESS) r = raw->api->cuModuleGetFunction(fn, *mod, "bench_empty");
  return r == CUDA_SUCCESS ? NULL
                           : ruda_status_create(RUDA_ERR_LAUNCH_COMPILATION,
                                                "loading the baseline's empty kernel failed");
}

void ruda_bench_cuda_launch(ruda_bench_t *b) {
  ruda_bench_gpu_t x;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "launch", "launch_empty_caller", &raw_baseline, &raw, &x)) return;
  CUmodule mod = NULL;
  ruda_status_t s =
      ruda_bench_gpu_text_kernel(RUDA_KERNEL_FORMAT_CUDA_C, "bench_empty", empty_src, 1, &x.k);
  if (!s) s = load_empty(&raw, &mod, &raw.fn);
  if (ruda_bench_gpu_ok(b, "launch", "launch_empty_caller", s)) {
    static const ruda_bench_gpu_launch_raw_t cuda_launch = {
        raw_launch, raw_sync, "cuLaunchKernel", "cuLaunchKernel+cuStreamSynchronize",
        ruda_bench_cuda_parts};
    ruda_bench_gpu_launch_cases(b, &x, &cuda_launch);
  }
  if (mod) raw.api->cuModuleUnload(mod);
  ruda_kernel_release(x.k);
  ruda_bench_gpu_close(&x);
}

/* ---- memory ---- */

static void raw_alloc_free(ruda_bench_gpu_t *x, uint64_t size) {
  raw_t *r = x->raw;
  CUdeviceptr d = 0;
  r->api->cuMemAlloc(&d, size);
  r->api->cuMemFree(d);
}

static void raw_batch(void *p) { ruda_bench_gpu_each_size(p, raw_alloc_free); }

static void raw_alloc_free_async(ruda_bench_gpu_t *x, uint64_t size) {
  raw_t *r = x->raw;
  CUdeviceptr d = 0;
  r->api->cuMemAllocAsync(&d, size, r->stream);
  r->api->cuMemFreeAsync(d, r->stream);
}

static void raw_async_batch(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_bench_gpu_each_size(x, raw_alloc_free_async);
  raw_sync(x);
}

void ruda_bench_cuda_memory(ruda_bench_t *b) {
  ruda_bench_gpu_t x;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "memory", "reserve_release_mixed", &raw_baseline, &raw, &x)) return;
  size_t reps = ruda_bench_pick(b, 30, 10, 2);
  ruda_bench_stats_t rs =
      ruda_bench_gpu_per_op(ruda_bench_measure(ruda_bench_gpu_reserve_batch, &x, 5, reps, 1));
  ruda_bench_stats_t bs = ruda_bench_gpu_per_op(ruda_bench_measure(raw_batch, &x, 2, reps, 1));
  if (ruda_bench_gpu_ok(b, "memory", "reserve_release_mixed", x.err)) {
    ruda_bench_report(b, "memory", "reserve_release_mixed", "ns", rs, bs, "cuMemAlloc+cuMemFree",
                      true);
    if (raw.api->cuMemAllocAsync != NULL) {
      ruda_bench_stats_t as =
          ruda_bench_gpu_per_op(ruda_bench_measure(raw_async_batch, &x, 5, reps, 1));
      ruda_bench_report(b, "memory", "reserve_release_mixed_async", "ns", rs, as,
                        "cuMemAllocAsync+cuMemFreeAsync", true);
    }
  }
  ruda_bench_gpu_close(&x);
}

/* ---- copy ---- */

/* The raw side's copies: x->size bytes between the device buffer and
 * x->raw_host. */
static void raw_write(void *p) {
  ruda_bench_gpu_t *x = p;
  raw_t *r = x->raw;
  r->api->cuMemcpyHtoD(r->buf, x->raw_host, x->size);
}

static void raw_read(void *p) {
  ruda_bench_gpu_t *x = p;
  raw_t *r = x->raw;
  r->api->cuMemcpyDtoH(x->raw_host, r->buf, x->size);
}

static void ruda_read_4b(void *p) {
  ruda_bench_gpu_t *x = p;
  uint32_t v = 0;
  /* x->dev: a 4-byte view */
  ruda_bench_keep_error(&x->err, ruda_client_read(x->c, &x->dev, &v, sizeof v));
}

/* read_4B_latency: a 4-byte view of the device buffer read back; the
 * baseline reads 4 bytes to pinned memory (raw_read with x->size 4). */
static void read_4b_case(ruda_bench_t *b, ruda_bench_gpu_t *x) {
  ruda_handle_t whole = x->dev;
  ruda_handle_t four = ruda_handle_clone(&whole);
  ruda_status_t s = ruda_handle_offset_end(&four, x->size - 4);
  if (ruda_bench_gpu_ok(b, "copy", "read_4B_latency", s)) {
    x->dev = four;
    size_t saved = x->size;
    x->size = 4;
    size_t lreps = ruda_bench_pick(b, 30, 10, 2);
    ruda_bench_stats_t r, base;
    x->raw_host = ((raw_t *)x->raw)->pinned;
    ruda_bench_compare_calls(ruda_read_4b, raw_read, x, 20, lreps, 50, &r, &base);
    x->size = saved;
    x->dev = whole;
    if (ruda_bench_gpu_ok(b, "copy", "read_4B_latency", x->err))
      ruda_bench_report(b, "copy", "read_4B_latency", "ns", r, base, "cuMemcpyDtoH (4 B, pinned)",
                        true);
    x->err = NULL;
  }
  ruda_handle_release(&four);
}

void ruda_bench_cuda_copy(ruda_bench_t *b) {
  ruda_bench_gpu_t x;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "copy", "write_pinned_256MiB", &raw_baseline, &raw, &x)) return;
  x.size = ruda_bench_pick(b, 256u << 20, 64u << 20, 1u << 20);
  size_t reps = ruda_bench_pick(b, 10, 4, 1);
  if (!ruda_bench_gpu_copy_open(b, &x, "write_pinned_256MiB")) goto out;
  if (raw.api->cuMemAlloc(&raw.buf, x.size) != CUDA_SUCCESS ||
      raw.api->cuMemAllocHost(&raw.pinned, x.size) != CUDA_SUCCESS) {
    ruda_bench_fail(b, "copy", "write_pinned_256MiB", "cannot allocate the baseline's buffers");
    goto out;
  }
  memset(raw.pinned, 2, x.size);
  ruda_bench_gpu_copy_case(b, &x, "write_pinned_256MiB", ruda_bench_gpu_write_pinned, raw_write,
                           raw.pinned, "cuMemcpyHtoD (pinned)", reps, false);
  ruda_bench_gpu_copy_case(b, &x, "read_pinned_256MiB", ruda_bench_gpu_read_pinned, raw_read,
                           raw.pinned, "cuMemcpyDtoH (pinned)", reps, false);
  ruda_bench_gpu_copy_case(b, &x, "write_pageable_256MiB", ruda_bench_gpu_write_pageable,
                           raw_write, x.pageable, "cuMemcpyHtoD (pageable)", reps, false);
  ruda_bench_gpu_copy_case(b, &x, "write_pageable_256MiB_bytes",
                           ruda_bench_gpu_write_pageable_bytes, raw_write, x.pageable,
                           "cuMemcpyHtoD (pageable)", reps, false);
  read_4b_case(b, &x);
out:
  if (raw.buf) raw.api->cuMemFree(raw.buf);
  if (raw.pinned) raw.api->cuMemFreeHost(raw.pinned);
  ruda_bench_gpu_copy_close(&x);
  ruda_bench_gpu_close(&x);
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
  if (mc) ruda_bench_keep_error(&x->err, ruda__cuda_module_cache_get(mc, x->k, &fn));
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
  ruda_bench_keep_error(&x->err, ruda__cuda_nvrtc_compile("bench_saxpy", compile_src, strlen(compile_src),
                                         x->raw->cc, NULL, 0, &cubin, &size));
  free(cubin);
}

void ruda_bench_cuda_compile(ruda_bench_t *b) {
  ruda_bench_gpu_t g;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "compile", "kernel_load_warm_cache", &raw_baseline, &raw, &g)) return;
  ruda_client_t *c = g.c;
  char root[1024];
  if (!ruda__cuda_cache_root(root, sizeof root)) {
    ruda_bench_skip(b, "compile", "kernel_load_warm_cache", "the disk cache is off");
    goto out;
  }
  compile_ctx_t x = {&raw, NULL, ruda_client_properties_checksum(c), NULL};
  if (!ruda_bench_gpu_ok(b, "compile", "kernel_load_warm_cache",
                         ruda_bench_gpu_text_kernel(RUDA_KERNEL_FORMAT_CUDA_C, "bench_saxpy",
                                                    compile_src, 256, &x.k)))
    goto out;
  size_t reps = ruda_bench_pick(b, 20, 5, 1);
  ruda_warm_load(&x); /* fills the disk cache */
  double *rs = calloc(reps, sizeof *rs), *ms = calloc(reps, sizeof *ms);
  void *cubin = NULL;
  size_t cubin_size = 0;
  ruda_bench_keep_error(&x.err, ruda__cuda_nvrtc_compile("bench_saxpy", compile_src, strlen(compile_src), raw.cc,
                                        NULL, 0, &cubin, &cubin_size));
  for (int i = 0; i < 3 && cubin; i++) ruda_warm_load(&x), module_load_ns(&x, cubin);
  /* Alternating samples: the disk cache's load and the bare module load. */
  for (size_t i = 0; rs && ms && cubin && i < reps; i++) {
    rs[i] = ruda_warm_load_ns(&x);
    ms[i] = module_load_ns(&x, cubin);
  }
  ruda_bench_stats_t r = rs ? ruda_bench_stats_from_samples(rs, reps) : (ruda_bench_stats_t){0};
  ruda_bench_stats_t ml = ms ? ruda_bench_stats_from_samples(ms, reps) : (ruda_bench_stats_t){0};
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
  if (ruda_bench_gpu_ok(b, "compile", "kernel_load_warm_cache", x.err)) {
    ruda_bench_report(b, "compile", "kernel_load_warm_cache", "ns", r, base, "nvrtcCompileProgram",
                      true);
    ruda_bench_report(b, "compile", "kernel_load_warm_cache_vs_module_load", "ns", r, ml,
                      "cuModuleLoadData+cuModuleGetFunction (CUBIN in memory)", true);
  }
  ruda_kernel_release(x.k);
out:
  ruda_bench_gpu_close(&g);
}

/* ---- graph ---- */

typedef struct graph_ctx {
  ruda_bench_graph_ctx_t r; /* ruda's side (bench_graph.c) */
  raw_t *raw;
  CUgraphExec exec;
} graph_ctx_t;

static void raw_replay(void *p) {
  graph_ctx_t *x = p;
  x->raw->api->cuGraphLaunch(x->exec, x->raw->stream);
  x->raw->api->cuStreamSynchronize(x->raw->stream);
}

void ruda_bench_cuda_graph(ruda_bench_t *b) {
  ruda_bench_gpu_t g;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "graph", "replay_per_kernel", &raw_baseline, &raw, &g)) return;
  ruda_client_t *c = g.c;
  const ruda__cuda_api_t *api = raw.api;
  graph_ctx_t x = {{c, NULL, NULL, NULL}, &raw, NULL};
  CUmodule mod = NULL;
  CUfunction fn = NULL;
  CUgraph graph = NULL;
  void *cubin = NULL;
  size_t size = 0;
  if (!api->cuStreamBeginCapture || !api->cuGraphInstantiate || !api->cuGraphLaunch) {
    ruda_bench_skip(b, "graph", "replay_per_kernel", "the driver has no CUDA graphs");
    goto out;
  }
  ruda_status_t st =
      ruda_bench_gpu_text_kernel(RUDA_KERNEL_FORMAT_CUDA_C, "bench_empty", empty_src, 1, &x.r.k);
  ruda_kernel_args_t a = {0};
  if (!st) st = ruda_bench_graph_record(&x.r, &a);
  if (!st) {
    st = ruda__cuda_nvrtc_compile("bench_empty", empty_src, strlen(empty_src), raw.cc, NULL, 0,
                                  &cubin, &size);
  }
  if (!ruda_bench_gpu_ok(b, "graph", "replay_per_kernel", st)) goto out;
  /* The raw side: the same kernel captured 1000 times into a CUDA graph. */
  CUdeviceptr info = 0;
  void *params[1] = {&info};
  if (api->cuModuleLoadData(&mod, cubin) != CUDA_SUCCESS ||
      api->cuModuleGetFunction(&fn, mod, "bench_empty") != CUDA_SUCCESS ||
      api->cuStreamBeginCapture(raw.stream, CU_STREAM_CAPTURE_MODE_RELAXED) != CUDA_SUCCESS) {
    ruda_bench_fail(b, "graph", "replay_per_kernel", "cannot set up the raw CUDA graph");
    goto out;
  }
  for (int i = 0; i < RUDA_BENCH_GRAPH_KERNELS; i++) {
    api->cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, raw.stream, params, NULL);
  }
  if (api->cuStreamEndCapture(raw.stream, &graph) != CUDA_SUCCESS ||
      api->cuGraphInstantiate(&x.exec, graph, 0) != CUDA_SUCCESS) {
    ruda_bench_fail(b, "graph", "replay_per_kernel", "cannot instantiate the raw CUDA graph");
    goto out;
  }
  size_t reps = ruda_bench_pick(b, 30, 10, 1);
  ruda_bench_stats_t r = ruda_bench_measure(ruda_bench_graph_replay, &x.r, 3, reps, 1);
  ruda_bench_stats_t base = ruda_bench_measure(raw_replay, &x, 3, reps, 1);
  ruda_bench_graph_report(b, x.r.err, r, base, "cuGraphLaunch+cuStreamSynchronize");
out:
  if (x.exec) api->cuGraphExecDestroy(x.exec);
  if (graph) api->cuGraphDestroy(graph);
  if (mod) api->cuModuleUnload(mod);
  free(cubin);
  ruda_graph_release(x.r.g);
  ruda_kernel_release(x.r.k);
  ruda_bench_gpu_close(&g);
}

#endif /* RUDA_HAVE_CUDA_HEADERS */
