/* OpenCL benchmark cases for `ruda bench --device opencl:N`. Every case runs
 * ruda and the raw OpenCL calls in the same process, on the same device
 * (the raw side has its own context and an in-order queue with default
 * properties, as a program using OpenCL directly would), in alternating
 * samples (ruda_bench_compare), so that other load on the machine hits
 * both sides alike:
 *
 *  launch   launch_empty_caller      caller's cost of a launch   vs clEnqueueNDRangeKernel
 *           launch_empty_roundtrip   launch + sync               vs clEnqueueNDRangeKernel + clFinish
 *  memory   reserve_release_mixed    empty + release, 16 B..1 MiB (a sync per batch)
 *                                    vs clCreateBuffer + clReleaseMemObject (on PoCL
 *                                    a buffer gets its memory at its first use, so
 *                                    this baseline allocates nothing)
 *           reserve_release_mixed_first_use   the same ruda side vs clCreateBuffer +
 *                                    a 1-byte clEnqueueFillBuffer + clReleaseMemObject
 *                                    (a clFinish per batch): buffers that have memory
 *  copy     write_256MiB             ruda_client_write + sync    vs blocking clEnqueueWriteBuffer
 *           read_256MiB              ruda_client_read            vs blocking clEnqueueReadBuffer
 *                                    (both from/to the same pageable host buffer)
 *           write_pinned_256MiB      staging bytes -> device     vs clEnqueueWriteBuffer from a
 *                                                                   mapped CL_MEM_ALLOC_HOST_PTR buffer
 *           read_pinned_256MiB       device -> staging bytes     vs clEnqueueReadBuffer into it
 *  compile  kernel_load_warm_cache   program from the disk cache vs clBuildProgram from source
 *                                    (each up to a cl_kernel)
 *           kernel_load_warm_cache_vs_binary_build  the same vs the driver's own floor for
 *                                    it: clCreateProgramWithBinary + clBuildProgram +
 *                                    clCreateKernel from the binary already in memory
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"
#include "bench_internal.h"

#if !defined(RUDA_HAVE_OPENCL_HEADERS)

RUDA_BENCH_GPU_NOT_BUILT(opencl, launch)
RUDA_BENCH_GPU_NOT_BUILT(opencl, memory)
RUDA_BENCH_GPU_NOT_BUILT(opencl, copy)
RUDA_BENCH_GPU_NOT_BUILT(opencl, compile)

#else


/* The raw side: the device ruda uses, a context and a queue of its own,
 * and the baseline's kernel (launch) and buffers (copy). */
typedef struct raw {
  const ruda__opencl_api_t *api;
  const ruda__opencl_device_t *dev;
  cl_context ctx;
  cl_command_queue q;
  cl_kernel kernel;
  cl_mem buf, host;
  void *pinned; /* `host` mapped */
} raw_t;

static bool raw_open(ruda_bench_t *b, const char *bench, ruda_client_t *c, void *p) {
  raw_t *r = p;
  memset(r, 0, sizeof *r);
  const ruda__opencl_device_t *devs = NULL;
  size_t n = 0;
  ruda_status_t s = ruda__opencl_devices(&devs, &n);
  if (s == NULL) s = ruda__opencl_api_get(&r->api);
  if (s) {
    ruda_bench_skip_status(b, bench, "opencl", s);
    return false;
  }
  uint16_t index = ruda_client_device(c).index_id;
  if (index >= n) {
    ruda_bench_fail(b, bench, "opencl", "no OpenCL device %u", index);
    return false;
  }
  r->dev = &devs[index];
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)r->dev->platform,
                                   0};
  cl_int e = CL_SUCCESS;
  r->ctx = r->api->clCreateContext(props, 1, &r->dev->device, NULL, NULL, &e);
  if (e == CL_SUCCESS) {
    if (r->api->clCreateCommandQueueWithProperties)
      r->q = r->api->clCreateCommandQueueWithProperties(r->ctx, r->dev->device, NULL, &e);
    else
      r->q = r->api->clCreateCommandQueue(r->ctx, r->dev->device, 0, &e);
  }
  if (e != CL_SUCCESS) {
    ruda_bench_fail(b, bench, "opencl", "cannot set up the raw OpenCL baseline (%s)",
                    ruda__cl_error_name(e));
    return false;
  }
  return true;
}

static void raw_close(void *p) {
  raw_t *r = p;
  if (r->q) r->api->clReleaseCommandQueue(r->q);
  if (r->ctx) r->api->clReleaseContext(r->ctx);
}

static const ruda_bench_gpu_baseline_t raw_baseline = {raw_open, raw_close};

/* ---- launch ---- */

static const char empty_src[] = "__kernel void bench_empty(__global const ulong *info) {}\n";

static void raw_launch(ruda_bench_gpu_t *x) {
  raw_t *r = x->raw;
  size_t one = 1;
  r->api->clEnqueueNDRangeKernel(r->q, r->kernel, 1, NULL, &one, &one, 0, NULL, NULL);
}

static void raw_sync(ruda_bench_gpu_t *x) {
  raw_t *r = x->raw;
  r->api->clFinish(r->q);
}

/* ---- parts (RUDA_BENCH_PARTS=1): the OpenCL calls a launch and a sync
 * are made of (bench_gpu.c runs them, with ruda's) ---- */

#define PART(label, stmt) RUDA_BENCH_PART(b, samples, label, stmt)

static void ruda_bench_opencl_parts(ruda_bench_t *b, ruda_bench_gpu_t *x, double *samples) {
  raw_t *raw = x->raw;
  const ruda__opencl_api_t *api = raw->api;
  cl_command_queue q = raw->q;
  cl_kernel k = raw->kernel;
  size_t one = 1;
  cl_event ev = NULL;
  PART("clFinish (idle)", api->clFinish(q));
  PART("clFlush (idle)", api->clFlush(q));
  PART("clSetKernelArg (NULL buffer)", api->clSetKernelArg(k, 0, sizeof(cl_mem), NULL));
  PART("clRetainCommandQueue+clReleaseCommandQueue", {
    api->clRetainCommandQueue(q);
    api->clReleaseCommandQueue(q);
  });
  PART("clEnqueueNDRangeKernel (host cost)",
       api->clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL));
  api->clFinish(q);
  PART("clEnqueueNDRangeKernel + clFinish", {
    api->clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
    api->clFinish(q);
  });
  ruda_bench_load_t *poller = ruda_bench_poll_start(1);
  PART("clEnqueueNDRangeKernel + clFinish, 1 thread polling", {
    api->clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
    api->clFinish(q);
  });
  ruda_bench_load_stop(poller);
  PART("clEnqueueNDRangeKernel + clFlush + clFinish", {
    api->clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
    api->clFlush(q);
    api->clFinish(q);
  });
  PART("clSetKernelArg + enqueue + clFlush + clFinish", {
    api->clSetKernelArg(k, 0, sizeof(cl_mem), NULL);
    api->clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
    api->clFlush(q);
    api->clFinish(q);
  });
  PART("enqueue + marker(event) + clWaitForEvents", {
    api->clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL);
    api->clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    api->clWaitForEvents(1, &ev);
    api->clReleaseEvent(ev);
  });
}

void ruda_bench_opencl_launch(ruda_bench_t *b) {
  ruda_bench_gpu_t x;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "launch", "launch_empty_caller", &raw_baseline, &raw, &x)) return;
  cl_program prog = NULL;
  ruda_status_t s =
      ruda_bench_gpu_text_kernel(RUDA_KERNEL_FORMAT_OPENCL_C, "bench_empty", empty_src, 1, &x.k);
  if (!s)
    s = ruda__opencl_build_source(raw.api, raw.ctx, raw.dev->device, "bench_empty", empty_src, 0,
                                  NULL, NULL, false, &prog);
  if (ruda_bench_gpu_ok(b, "launch", "launch_empty_caller", s)) {
    cl_int e = CL_SUCCESS;
    raw.kernel = raw.api->clCreateKernel(prog, "bench_empty", &e);
    raw.api->clSetKernelArg(raw.kernel, 0, sizeof(cl_mem), NULL);
    static const ruda_bench_gpu_launch_raw_t opencl_launch = {
        raw_launch, raw_sync, "clEnqueueNDRangeKernel", "clEnqueueNDRangeKernel+clFinish",
        ruda_bench_opencl_parts};
    ruda_bench_gpu_launch_cases(b, &x, &opencl_launch);
  }
  if (raw.kernel) raw.api->clReleaseKernel(raw.kernel);
  if (prog) raw.api->clReleaseProgram(prog);
  ruda_kernel_release(x.k);
  ruda_bench_gpu_close(&x);
}

/* ---- memory ---- */

static void raw_create_release(ruda_bench_gpu_t *x, uint64_t size) {
  raw_t *r = x->raw;
  cl_int e = CL_SUCCESS;
  cl_mem m = r->api->clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, size, NULL, &e);
  if (m) r->api->clReleaseMemObject(m);
}

static void raw_batch(void *p) { ruda_bench_gpu_each_size(p, raw_create_release); }

/* PoCL (like many drivers) gives a buffer memory at its first use, not in
 * clCreateBuffer: a buffer created and released unused costs a handle.
 * This side gives each buffer its memory, with the smallest first use (a
 * one-byte fill), and waits once per batch as ruda's batch syncs once. */
static void raw_create_use_release(ruda_bench_gpu_t *x, uint64_t size) {
  raw_t *r = x->raw;
  static const cl_uchar zero = 0;
  cl_int e = CL_SUCCESS;
  cl_mem m = r->api->clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, size, NULL, &e);
  if (m == NULL) return;
  r->api->clEnqueueFillBuffer(r->q, m, &zero, 1, 0, 1, 0, NULL, NULL);
  r->api->clReleaseMemObject(m);
}

static void raw_batch_first_use(void *p) {
  ruda_bench_gpu_t *x = p;
  ruda_bench_gpu_each_size(x, raw_create_use_release);
  raw_sync(x);
}

static void memory_case(ruda_bench_t *b, ruda_bench_gpu_t *x, const char *case_name,
                        void (*raw_fn)(void *), const char *baseline, size_t reps) {
  ruda_bench_stats_t rs, bs;
  x->err = NULL;
  ruda_bench_compare_calls(ruda_bench_gpu_reserve_batch, raw_fn, x, 5, reps, 1, &rs, &bs);
  if (ruda_bench_gpu_ok(b, "memory", case_name, x->err))
    ruda_bench_report(b, "memory", case_name, "ns", ruda_bench_gpu_per_op(rs),
                      ruda_bench_gpu_per_op(bs), baseline, true);
  x->err = NULL;
}

void ruda_bench_opencl_memory(ruda_bench_t *b) {
  ruda_bench_gpu_t x;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "memory", "reserve_release_mixed", &raw_baseline, &raw, &x)) return;
  size_t reps = ruda_bench_pick(b, 30, 10, 2);
  memory_case(b, &x, "reserve_release_mixed", raw_batch, "clCreateBuffer+clReleaseMemObject",
              reps);
  memory_case(b, &x, "reserve_release_mixed_first_use", raw_batch_first_use,
              "clCreateBuffer+clEnqueueFillBuffer(1 B)+clReleaseMemObject", reps);
  ruda_bench_gpu_close(&x);
}

/* ---- copy ---- */

/* The raw side's copies: blocking, x->size bytes between the device
 * buffer and x->raw_host. */
static void raw_write(void *p) {
  ruda_bench_gpu_t *x = p;
  raw_t *r = x->raw;
  r->api->clEnqueueWriteBuffer(r->q, r->buf, CL_TRUE, 0, x->size, x->raw_host, 0, NULL, NULL);
}

static void raw_read(void *p) {
  ruda_bench_gpu_t *x = p;
  raw_t *r = x->raw;
  r->api->clEnqueueReadBuffer(r->q, r->buf, CL_TRUE, 0, x->size, x->raw_host, 0, NULL, NULL);
}

void ruda_bench_opencl_copy(ruda_bench_t *b) {
  ruda_bench_gpu_t x;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "copy", "write_256MiB", &raw_baseline, &raw, &x)) return;
  x.size = ruda_bench_pick(b, 256u << 20, 32u << 20, 1u << 20);
  size_t reps = ruda_bench_pick(b, 10, 5, 1);
  cl_int e = CL_SUCCESS;
  if (!ruda_bench_gpu_copy_open(b, &x, "write_256MiB")) goto out;
  raw.buf = raw.api->clCreateBuffer(raw.ctx, CL_MEM_READ_WRITE, x.size, NULL, &e);
  if (e == CL_SUCCESS)
    raw.host = raw.api->clCreateBuffer(raw.ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, x.size,
                                       NULL, &e);
  if (e == CL_SUCCESS)
    raw.pinned = raw.api->clEnqueueMapBuffer(raw.q, raw.host, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                             0, x.size, 0, NULL, NULL, &e);
  if (e != CL_SUCCESS) {
    ruda_bench_fail(b, "copy", "write_256MiB", "raw OpenCL buffers: %s", ruda__cl_error_name(e));
    goto out;
  }
  memset(raw.pinned, 2, x.size);
  ruda_bench_gpu_copy_case(b, &x, "write_256MiB", ruda_bench_gpu_write_pageable, raw_write,
                           x.pageable, "clEnqueueWriteBuffer", reps, true);
  ruda_bench_gpu_copy_case(b, &x, "read_256MiB", ruda_bench_gpu_read_pageable, raw_read,
                           x.pageable, "clEnqueueReadBuffer", reps, true);
  ruda_bench_gpu_copy_case(b, &x, "write_pinned_256MiB", ruda_bench_gpu_write_pinned, raw_write,
                           raw.pinned, "clEnqueueWriteBuffer (mapped ALLOC_HOST_PTR)", reps, true);
  ruda_bench_gpu_copy_case(b, &x, "read_pinned_256MiB", ruda_bench_gpu_read_pinned, raw_read,
                           raw.pinned, "clEnqueueReadBuffer (mapped ALLOC_HOST_PTR)", reps, true);
out:
  if (raw.pinned) raw.api->clEnqueueUnmapMemObject(raw.q, raw.host, raw.pinned, 0, NULL, NULL);
  if (raw.q) raw.api->clFinish(raw.q);
  if (raw.host) raw.api->clReleaseMemObject(raw.host);
  if (raw.buf) raw.api->clReleaseMemObject(raw.buf);
  ruda_bench_gpu_copy_close(&x);
  ruda_bench_gpu_close(&x);
}

/* ---- compile ---- */

static const char compile_src[] =
    "__kernel void bench_saxpy(__global float *y, __global const float *x,\n"
    "                          __global const ulong *info) {\n"
    "  ulong i = get_global_id(0);\n"
    "  float a = (float)as_double(info[1]);\n"
    "  if (i < info[0]) y[i] = a * x[i] + y[i];\n"
    "}\n";

typedef struct compile_ctx {
  raw_t *raw;
  char root[1024];
  ruda_kernel_t *k;
  uint64_t props_hash;
  ruda_hash128_t key;
  ruda_status_t err;
  unsigned char *binary; /* the raw side's program binary (binary_build) */
  size_t binary_size;
} compile_ctx_t;

static void ruda_warm_load(void *p) {
  compile_ctx_t *x = p;
  /* A fresh program cache: nothing in memory, the binary is on disk. */
  ruda__opencl_program_cache_t *pc =
      ruda__opencl_program_cache_create(x->raw->api, x->raw->ctx, x->raw->dev, x->props_hash,
                                        x->root);
  ruda__opencl_function_t *fn = NULL;
  if (pc)
    ruda_bench_keep_error(&x->err, ruda__opencl_program_cache_get(pc, x->key, "bench_saxpy", compile_src, 0, NULL,
                                                 0, NULL, &fn));
  ruda__opencl_program_cache_destroy(pc);
}

static void raw_build(void *p) {
  compile_ctx_t *x = p;
  const ruda__opencl_api_t *api = x->raw->api;
  const char *srcs[1] = {compile_src};
  cl_int e = CL_SUCCESS;
  cl_program prog = api->clCreateProgramWithSource(x->raw->ctx, 1, srcs, NULL, &e);
  if (e == CL_SUCCESS) e = api->clBuildProgram(prog, 1, &x->raw->dev->device, "", NULL, NULL);
  cl_kernel k = e == CL_SUCCESS ? api->clCreateKernel(prog, "bench_saxpy", &e) : NULL;
  if (e != CL_SUCCESS)
    ruda_bench_keep_error(&x->err, ruda__cl_error(RUDA_ERR_COMPILATION_GENERIC, e, "clBuildProgram", "baseline"));
  if (k) api->clReleaseKernel(k);
  if (prog) api->clReleaseProgram(prog);
}

/* The program binary of compile_src built from source on the raw side;
 * NULL when the driver gives none. */
static unsigned char *raw_binary(raw_t *raw, size_t *size) {
  const ruda__opencl_api_t *api = raw->api;
  const char *srcs[1] = {compile_src};
  cl_int e = CL_SUCCESS;
  unsigned char *bin = NULL;
  *size = 0;
  cl_program prog = api->clCreateProgramWithSource(raw->ctx, 1, srcs, NULL, &e);
  if (e == CL_SUCCESS) e = api->clBuildProgram(prog, 1, &raw->dev->device, "", NULL, NULL);
  if (e == CL_SUCCESS)
    e = api->clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof *size, size, NULL);
  if (e == CL_SUCCESS && *size > 0 && (bin = malloc(*size)) != NULL &&
      api->clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
    free(bin);
    bin = NULL;
  }
  if (prog) api->clReleaseProgram(prog);
  return bin;
}

/* What the driver needs to turn a binary in memory into a kernel: the
 * floor of any warm load from a disk cache. */
static void binary_build(void *p) {
  compile_ctx_t *x = p;
  const ruda__opencl_api_t *api = x->raw->api;
  const unsigned char *bins[1] = {x->binary};
  cl_int e = CL_SUCCESS, st = CL_SUCCESS;
  cl_program prog = api->clCreateProgramWithBinary(x->raw->ctx, 1, &x->raw->dev->device,
                                                   &x->binary_size, bins, &st, &e);
  if (e == CL_SUCCESS) e = api->clBuildProgram(prog, 1, &x->raw->dev->device, "", NULL, NULL);
  cl_kernel k = e == CL_SUCCESS ? api->clCreateKernel(prog, "bench_saxpy", &e) : NULL;
  if (e != CL_SUCCESS)
    ruda_bench_keep_error(&x->err, ruda__cl_error(RUDA_ERR_COMPILATION_GENERIC, e,
                                                  "clCreateProgramWithBinary", "baseline"));
  if (k) api->clReleaseKernel(k);
  if (prog) api->clReleaseProgram(prog);
}

void ruda_bench_opencl_compile(ruda_bench_t *b) {
  ruda_bench_gpu_t g;
  raw_t raw;
  if (!ruda_bench_gpu_open(b, "compile", "kernel_load_warm_cache", &raw_baseline, &raw, &g)) return;
  ruda_client_t *c = g.c;
  compile_ctx_t x;
  memset(&x, 0, sizeof x);
  x.raw = &raw;
  x.props_hash = ruda_client_properties_checksum(c);
  if (!ruda__opencl_cache_root(x.root, sizeof x.root)) {
    ruda_bench_skip(b, "compile", "kernel_load_warm_cache",
                    "the disk cache is off ([compilation] cache = \"none\")");
    goto out;
  }
  ruda_status_t s =
      ruda_bench_gpu_text_kernel(RUDA_KERNEL_FORMAT_OPENCL_C, "bench_saxpy", compile_src, 256, &x.k);
  if (!ruda_bench_gpu_ok(b, "compile", "kernel_load_warm_cache", s)) goto out;
  x.key = ruda_kernel_hash(x.k);
  size_t reps = ruda_bench_pick(b, 20, 5, 1);
  ruda_warm_load(&x); /* fills the disk cache */
  ruda_bench_stats_t r, base;
  ruda_bench_compare_calls(ruda_warm_load, raw_build, &x, 1, reps, 1, &r, &base);
  ruda__opencl_compile_stats_t st = ruda__opencl_compile_stats();
  ruda_bench_progress(b, "compile: disk hits %llu, builds %llu, disk skips %llu",
                      (unsigned long long)st.disk_hits, (unsigned long long)st.builds,
                      (unsigned long long)st.disk_skips);
  if (st.disk_hits > 0) {
    double n = (double)st.disk_hits;
    ruda_bench_progress(b, "compile: per disk hit: key %.0f ns, file %.0f ns, program from binary "
                        "%.0f ns, kernel %.0f ns (its queries %.0f ns), whole hit %.0f ns",
                        (double)st.hit_key_ns / n, (double)st.hit_read_ns / n,
                        (double)st.hit_build_ns / n, (double)st.hit_kernel_ns / n,
                        (double)st.hit_query_ns / n,
                        (double)st.hit_total_ns / n);
  }
  if (ruda_bench_gpu_ok(b, "compile", "kernel_load_warm_cache", x.err))
    ruda_bench_report(b, "compile", "kernel_load_warm_cache", "ns", r, base,
                      "clBuildProgram (source)", true);
  x.binary = raw_binary(&raw, &x.binary_size);
  if (x.binary == NULL) {
    ruda_bench_skip(b, "compile", "kernel_load_warm_cache_vs_binary_build",
                    "the driver gives no program binary");
  } else {
    ruda_bench_stats_t bb;
    ruda_bench_compare_calls(ruda_warm_load, binary_build, &x, 1, reps, 1, &r, &bb);
    if (ruda_bench_gpu_ok(b, "compile", "kernel_load_warm_cache_vs_binary_build", x.err))
      ruda_bench_report(b, "compile", "kernel_load_warm_cache_vs_binary_build", "ns", r, bb,
                        "clCreateProgramWithBinary+clBuildProgram+clCreateKernel (binary in "
                        "memory)",
                        true);
    free(x.binary);
  }
  ruda_kernel_release(x.k);
out:
  ruda_bench_gpu_close(&g);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
