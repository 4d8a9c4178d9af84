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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ruda/ruda.h"

#if !defined(RUDA_HAVE_OPENCL_HEADERS)

#define NOT_BUILT "ruda was built without the OpenCL headers"
void ruda_bench_opencl_launch(ruda_bench_t *b) { ruda_bench_skip(b, "launch", "opencl", NOT_BUILT); }
void ruda_bench_opencl_memory(ruda_bench_t *b) { ruda_bench_skip(b, "memory", "opencl", NOT_BUILT); }
void ruda_bench_opencl_copy(ruda_bench_t *b) { ruda_bench_skip(b, "copy", "opencl", NOT_BUILT); }
void ruda_bench_opencl_compile(ruda_bench_t *b) { ruda_bench_skip(b, "compile", "opencl", NOT_BUILT); }

#else

#include "backends/opencl/opencl_internal.h"

/* The raw side: the device ruda uses, a context and a queue of its own. */
typedef struct raw {
  const ruda__opencl_api_t *api;
  const ruda__opencl_device_t *dev;
  cl_context ctx;
  cl_command_queue q;
} raw_t;

static bool raw_open(ruda_bench_t *b, const char *bench, ruda_client_t *c, raw_t *r) {
  memset(r, 0, sizeof *r);
  const ruda__opencl_device_t *devs = NULL;
  size_t n = 0;
  ruda_status_t s = ruda__opencl_devices(&devs, &n);
  if (s == NULL) s = ruda__opencl_api_get(&r->api);
  if (s) {
    char *t = ruda_status_to_string(s);
    ruda_bench_skip(b, bench, "opencl", t ? t : "OpenCL unavailable");
    free(t);
    ruda_status_free(s);
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

static void raw_close(raw_t *r) {
  if (r->q) r->api->clReleaseCommandQueue(r->q);
  if (r->ctx) r->api->clReleaseContext(r->ctx);
}

static void keep(ruda_status_t *slot, ruda_status_t s) {
  if (!s) return;
  if (*slot)
    ruda_status_free(s);
  else
    *slot = s;
}

static bool check(ruda_bench_t *b, const char *bench, const char *case_name, ruda_status_t s) {
  if (!s) return true;
  char *t = ruda_status_to_string(s);
  ruda_bench_fail(b, bench, case_name, "%s", t ? t : "error");
  free(t);
  ruda_status_free(s);
  return false;
}

static ruda_kernel_t *cl_text_kernel(const char *name, const char *src, uint32_t units,
                                     ruda_status_t *err) {
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.ruda_dim = ruda_dim_new_1d(units);
  ruda_kernel_code_t code = ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, src);
  d.code = &code;
  d.num_code = 1;
  ruda_kernel_t *k = NULL;
  *err = ruda_kernel_create(&d, &k);
  return k;
}

/* ---- launch ---- */

static const char empty_src[] = "__kernel void bench_empty(__global const ulong *info) {}\n";

typedef struct launch_ctx {
  ruda_client_t *c;
  ruda_kernel_t *k;
  raw_t *raw;
  cl_kernel kernel;
  ruda_status_t err;
} launch_ctx_t;

static void ruda_roundtrip(void *p) {
  launch_ctx_t *x = p;
  ruda_kernel_args_t a = {0};
  keep(&x->err, ruda_client_launch(x->c, x->k, ruda_count_static(1, 1, 1), &a));
  keep(&x->err, ruda_client_sync(x->c));
}

static void raw_launch(launch_ctx_t *x) {
  size_t one = 1;
  x->raw->api->clEnqueueNDRangeKernel(x->raw->q, x->kernel, 1, NULL, &one, &one, 0, NULL, NULL);
}

static void raw_roundtrip(void *p) {
  launch_ctx_t *x = p;
  raw_launch(x);
  x->raw->api->clFinish(x->raw->q);
}

static ruda_bench_stats_t stats_of(double *samples, size_t n) {
  return ruda_bench_stats_from_samples(samples, n);
}

/* ---- parts (RUDA_BENCH_PARTS=1): where the time of a round trip goes ----
 * Medians over many calls of the OpenCL calls and ruda calls a launch and
 * a sync are made of, on an idle queue, printed as progress lines. */

#define PART(label, stmt) RUDA_BENCH_PART(b, samples, label, stmt)

static void ruda_bench_opencl_parts(ruda_bench_t *b, launch_ctx_t *x) {
  const ruda__opencl_api_t *api = x->raw->api;
  cl_command_queue q = x->raw->q;
  cl_kernel k = x->kernel;
  ruda_client_t *c = x->c;
  double *samples = calloc(RUDA_BENCH_PART_N, sizeof *samples);
  if (!samples) return;
  size_t one = 1;
  ruda_kernel_args_t a = {0};
  cl_event ev = NULL;
  volatile uint64_t clock_sink = 0;
  PART("clock_gettime(CLOCK_MONOTONIC)", clock_sink += ruda_bench_now_ns());
  (void)clock_sink;
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
  PART("ruda_client_flush (idle)", ruda_status_free(ruda_client_flush(c)));
  PART("ruda_client_sync (idle)", ruda_status_free(ruda_client_sync(c)));
  PART("ruda_client_launch (caller)",
       ruda_status_free(ruda_client_launch(c, x->k, ruda_count_static(1, 1, 1), &a)));
  ruda_status_free(ruda_client_sync(c));
  PART("ruda_client_launch + ruda_client_sync", {
    ruda_status_free(ruda_client_launch(c, x->k, ruda_count_static(1, 1, 1), &a));
    ruda_status_free(ruda_client_sync(c));
  });
  ruda_bench_server_parts(b, c, x->k);
  free(samples);
}

void ruda_bench_opencl_launch(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "launch", "launch_empty_caller", &c)) return;
  raw_t raw;
  if (!raw_open(b, "launch", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  launch_ctx_t x = {c, NULL, &raw, NULL, NULL};
  cl_program prog = NULL;
  double *rs = NULL, *bs = NULL;
  ruda_status_t s = NULL;
  x.k = cl_text_kernel("bench_empty", empty_src, 1, &s);
  if (!check(b, "launch", "launch_empty_caller", s)) goto out;
  if (!check(b, "launch", "launch_empty_caller",
             ruda__opencl_build_source(raw.api, raw.ctx, raw.dev->device, "bench_empty", empty_src,
                                       0, NULL, &prog)))
    goto out;
  cl_int e = CL_SUCCESS;
  x.kernel = raw.api->clCreateKernel(prog, "bench_empty", &e);
  raw.api->clSetKernelArg(x.kernel, 0, sizeof(cl_mem), NULL);

  size_t reps = ruda_bench_pick(b, 30, 10, 2), batch = ruda_bench_pick(b, 200, 100, 4);
  for (int i = 0; i < 20; i++) ruda_roundtrip(&x), raw_roundtrip(&x);
  rs = calloc(reps, sizeof *rs);
  bs = calloc(reps, sizeof *bs);
  if (!rs || !bs) goto out;
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
    raw.api->clFinish(raw.q);
    bs[r] = (double)(t1 - t0) / (double)batch;
  }
  if (check(b, "launch", "launch_empty_caller", x.err))
    ruda_bench_report(b, "launch", "launch_empty_caller", "ns", stats_of(rs, reps),
                      stats_of(bs, reps), "clEnqueueNDRangeKernel", true);
  x.err = NULL;
  ruda_bench_stats_t rr, br;
  ruda_bench_compare_calls(ruda_roundtrip, raw_roundtrip, &x, 10, reps, batch / 4 + 1, &rr, &br);
  if (check(b, "launch", "launch_empty_roundtrip", x.err))
    ruda_bench_report(b, "launch", "launch_empty_roundtrip", "ns", rr, br,
                      "clEnqueueNDRangeKernel+clFinish", true);
  if (ruda_bench_parts_wanted()) ruda_bench_opencl_parts(b, &x);
out:
  free(rs);
  free(bs);
  if (x.kernel) raw.api->clReleaseKernel(x.kernel);
  if (prog) raw.api->clReleaseProgram(prog);
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
      cl_int e = CL_SUCCESS;
      cl_mem m = x->raw->api->clCreateBuffer(x->raw->ctx, CL_MEM_READ_WRITE, mixed_sizes[i], NULL,
                                             &e);
      if (m) x->raw->api->clReleaseMemObject(m);
    }
}

/* PoCL (like many drivers) gives a buffer memory at its first use, not in
 * clCreateBuffer: a buffer created and released unused costs a handle.
 * This side gives each buffer its memory, with the smallest first use (a
 * one-byte fill), and waits once per batch as ruda_batch syncs once. */
static void raw_batch_first_use(void *p) {
  mem_ctx_t *x = p;
  const ruda__opencl_api_t *api = x->raw->api;
  static const cl_uchar zero = 0;
  for (int rep = 0; rep < 8; rep++)
    for (size_t i = 0; i < NMIXED; i++) {
      cl_int e = CL_SUCCESS;
      cl_mem m = api->clCreateBuffer(x->raw->ctx, CL_MEM_READ_WRITE, mixed_sizes[i], NULL, &e);
      if (m == NULL) continue;
      api->clEnqueueFillBuffer(x->raw->q, m, &zero, 1, 0, 1, 0, NULL, NULL);
      api->clReleaseMemObject(m);
    }
  api->clFinish(x->raw->q);
}

static ruda_bench_stats_t per_op(ruda_bench_stats_t s) {
  double n = 8.0 * (double)NMIXED;
  s.median /= n;
  s.min /= n;
  s.max /= n;
  return s;
}

void ruda_bench_opencl_memory(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "memory", "reserve_release_mixed", &c)) return;
  raw_t raw;
  if (!raw_open(b, "memory", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  mem_ctx_t x = {c, &raw, NULL};
  size_t reps = ruda_bench_pick(b, 30, 10, 2);
  ruda_bench_stats_t rs, bs;
  ruda_bench_compare_calls(ruda_batch, raw_batch, &x, 5, reps, 1, &rs, &bs);
  rs = per_op(rs);
  bs = per_op(bs);
  if (check(b, "memory", "reserve_release_mixed", x.err))
    ruda_bench_report(b, "memory", "reserve_release_mixed", "ns", rs, bs,
                      "clCreateBuffer+clReleaseMemObject", true);
  x.err = NULL;
  ruda_bench_compare_calls(ruda_batch, raw_batch_first_use, &x, 5, reps, 1, &rs, &bs);
  rs = per_op(rs);
  bs = per_op(bs);
  if (check(b, "memory", "reserve_release_mixed_first_use", x.err))
    ruda_bench_report(b, "memory", "reserve_release_mixed_first_use", "ns", rs, bs,
                      "clCreateBuffer+clEnqueueFillBuffer(1 B)+clReleaseMemObject", true);
  raw_close(&raw);
  ruda_client_release(c);
}

/* ---- copy ---- */

typedef struct copy_ctx {
  ruda_client_t *c;
  raw_t *raw;
  size_t size;
  ruda_handle_t dev;   /* ruda device buffer */
  ruda_bytes_t pinned; /* ruda staging buffer */
  void *pageable;      /* the caller's host buffer (both sides) */
  cl_mem raw_dev, raw_host;
  void *raw_pinned;    /* raw_host mapped */
  ruda_status_t err;
} copy_ctx_t;

static void ruda_write(void *p) {
  copy_ctx_t *x = p;
  keep(&x->err, ruda_client_write(x->c, &x->dev, x->pageable, x->size));
  keep(&x->err, ruda_client_sync(x->c));
}
static void raw_write(void *p) {
  copy_ctx_t *x = p;
  x->raw->api->clEnqueueWriteBuffer(x->raw->q, x->raw_dev, CL_TRUE, 0, x->size, x->pageable, 0,
                                    NULL, NULL);
}
static void ruda_read(void *p) {
  copy_ctx_t *x = p;
  keep(&x->err, ruda_client_read(x->c, &x->dev, x->pageable, x->size));
}
static void raw_read(void *p) {
  copy_ctx_t *x = p;
  x->raw->api->clEnqueueReadBuffer(x->raw->q, x->raw_dev, CL_TRUE, 0, x->size, x->pageable, 0,
                                   NULL, NULL);
}
static void ruda_write_pinned(void *p) {
  copy_ctx_t *x = p;
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
  x->raw->api->clEnqueueWriteBuffer(x->raw->q, x->raw_dev, CL_TRUE, 0, x->size, x->raw_pinned, 0,
                                    NULL, NULL);
}
static void ruda_read_pinned(void *p) {
  copy_ctx_t *x = p;
  keep(&x->err, ruda_client_read(x->c, &x->dev, x->pinned.data, x->size));
}
static void raw_read_pinned(void *p) {
  copy_ctx_t *x = p;
  x->raw->api->clEnqueueReadBuffer(x->raw->q, x->raw_dev, CL_TRUE, 0, x->size, x->raw_pinned, 0,
                                   NULL, NULL);
}

/* Bandwidth (GB/s) from time stats (ns per call) for `bytes` per call. */
static ruda_bench_stats_t bandwidth(ruda_bench_stats_t t, double bytes) {
  ruda_bench_stats_t g = t;
  g.median = t.median > 0 ? bytes / t.median : 0;
  g.min = t.max > 0 ? bytes / t.max : 0;
  g.max = t.min > 0 ? bytes / t.min : 0;
  return g;
}

static void copy_case(ruda_bench_t *b, copy_ctx_t *x, const char *name, void (*ruda_fn)(void *),
                      void (*raw_fn)(void *), const char *baseline, size_t reps) {
  x->err = NULL;
  ruda_bench_stats_t r, base;
  ruda_bench_compare_calls(ruda_fn, raw_fn, x, 1, reps, 1, &r, &base);
  if (check(b, "copy", name, x->err))
    ruda_bench_report(b, "copy", name, "GB/s", bandwidth(r, (double)x->size),
                      bandwidth(base, (double)x->size), baseline, false);
  x->err = NULL;
}

void ruda_bench_opencl_copy(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "copy", "write_256MiB", &c)) return;
  raw_t raw;
  if (!raw_open(b, "copy", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  copy_ctx_t x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.raw = &raw;
  x.size = ruda_bench_pick(b, 256u << 20, 32u << 20, 1u << 20);
  size_t reps = ruda_bench_pick(b, 10, 5, 1);
  uint64_t sz = x.size;
  cl_int e = CL_SUCCESS;
  x.pageable = malloc(x.size);
  if (x.pageable == NULL) {
    ruda_bench_fail(b, "copy", "write_256MiB", "out of host memory");
    goto out;
  }
  memset(x.pageable, 1, x.size);
  if (!check(b, "copy", "write_256MiB", ruda_client_empty(c, x.size, &x.dev)) ||
      !check(b, "copy", "read_pinned_256MiB", ruda_client_staging(c, &sz, 1, &x.pinned)))
    goto out;
  x.raw_dev = raw.api->clCreateBuffer(raw.ctx, CL_MEM_READ_WRITE, x.size, NULL, &e);
  if (e == CL_SUCCESS)
    x.raw_host = raw.api->clCreateBuffer(raw.ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, x.size,
                                         NULL, &e);
  if (e == CL_SUCCESS)
    x.raw_pinned = raw.api->clEnqueueMapBuffer(raw.q, x.raw_host, CL_TRUE,
                                               CL_MAP_READ | CL_MAP_WRITE, 0, x.size, 0, NULL,
                                               NULL, &e);
  if (e != CL_SUCCESS) {
    ruda_bench_fail(b, "copy", "write_256MiB", "raw OpenCL buffers: %s", ruda__cl_error_name(e));
    goto out;
  }
  memset(x.raw_pinned, 2, x.size);
  memset(x.pinned.data, 3, x.size);
  copy_case(b, &x, "write_256MiB", ruda_write, raw_write, "clEnqueueWriteBuffer", reps);
  copy_case(b, &x, "read_256MiB", ruda_read, raw_read, "clEnqueueReadBuffer", reps);
  copy_case(b, &x, "write_pinned_256MiB", ruda_write_pinned, raw_write_pinned,
            "clEnqueueWriteBuffer (mapped ALLOC_HOST_PTR)", reps);
  copy_case(b, &x, "read_pinned_256MiB", ruda_read_pinned, raw_read_pinned,
            "clEnqueueReadBuffer (mapped ALLOC_HOST_PTR)", reps);
out:
  if (x.raw_pinned) raw.api->clEnqueueUnmapMemObject(raw.q, x.raw_host, x.raw_pinned, 0, NULL, NULL);
  if (raw.q) raw.api->clFinish(raw.q);
  if (x.raw_host) raw.api->clReleaseMemObject(x.raw_host);
  if (x.raw_dev) raw.api->clReleaseMemObject(x.raw_dev);
  ruda_handle_release(&x.dev);
  ruda_bytes_release(&x.pinned);
  free(x.pageable);
  raw_close(&raw);
  ruda_client_release(c);
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
} compile_ctx_t;

static void ruda_warm_load(void *p) {
  compile_ctx_t *x = p;
  /* A fresh program cache: nothing in memory, the binary is on disk. */
  ruda__opencl_program_cache_t *pc =
      ruda__opencl_program_cache_create(x->raw->api, x->raw->ctx, x->raw->dev, x->props_hash,
                                        x->root);
  ruda__opencl_function_t *fn = NULL;
  if (pc)
    keep(&x->err, ruda__opencl_program_cache_get(pc, x->key, "bench_saxpy", compile_src, 0, NULL,
                                                 0, &fn));
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
    keep(&x->err, ruda__cl_error(RUDA_ERR_COMPILATION_GENERIC, e, "clBuildProgram", "baseline"));
  if (k) api->clReleaseKernel(k);
  if (prog) api->clReleaseProgram(prog);
}

void ruda_bench_opencl_compile(ruda_bench_t *b) {
  ruda_client_t *c = NULL;
  if (!ruda_bench_open_client(b, "compile", "kernel_load_warm_cache", &c)) return;
  raw_t raw;
  if (!raw_open(b, "compile", c, &raw)) {
    ruda_client_release(c);
    return;
  }
  compile_ctx_t x;
  memset(&x, 0, sizeof x);
  x.raw = &raw;
  x.props_hash = ruda_client_properties_checksum(c);
  if (!ruda__opencl_cache_root(x.root, sizeof x.root)) {
    ruda_bench_skip(b, "compile", "kernel_load_warm_cache",
                    "the disk cache is off ([compilation] cache = \"none\")");
    goto out;
  }
  ruda_status_t s = NULL;
  x.k = cl_text_kernel("bench_saxpy", compile_src, 256, &s);
  if (!check(b, "compile", "kernel_load_warm_cache", s)) goto out;
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
  if (check(b, "compile", "kernel_load_warm_cache", x.err))
    ruda_bench_report(b, "compile", "kernel_load_warm_cache", "ns", r, base,
                      "clBuildProgram (source)", true);
  ruda_kernel_release(x.k);
out:
  raw_close(&raw);
  ruda_client_release(c);
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
