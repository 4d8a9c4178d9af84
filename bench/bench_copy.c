/* copy: moving data between the host and the device.
 *
 *  create_read_bandwidth  ruda_client_create_buffer of 256 MiB (16 MiB with
 *                         --quick) from host memory, then ruda_client_read
 *                         back into host memory and the handle released,
 *                         against memcpy in and memcpy out of a host buffer.
 *                         GB/s counts both directions (2 x size per pass).
 *                         The two alternate pass by pass (ruda_bench_compare).
 * On cuda:N the CUDA engineer's cases (bench_cuda.c) run instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"
#include "harness.h"
#include "ruda/client.h"

typedef struct copy_ctx {
  ruda_client_t *client;
  unsigned char *src, *dst; /* ruda reads back into dst */
  unsigned char *staging, *base_dst; /* the baseline's own, so dst checks ruda alone */
  size_t bytes;
  ruda_status_t error;
} copy_ctx_t;

static void ruda_create_read(void *p) {
  copy_ctx_t *c = p;
  if (c->error) return;
  ruda_handle_t h;
  ruda_status_t st = ruda_client_create_buffer(c->client, c->src, c->bytes, &h);
  if (!st) {
    st = ruda_client_read(c->client, &h, c->dst, c->bytes);
    ruda_handle_release(&h);
  }
  if (st) c->error = st;
}

static void memcpy_in_out(void *p) {
  copy_ctx_t *c = p;
  memcpy(c->staging, c->src, c->bytes);
  memcpy(c->base_dst, c->staging, c->bytes);
  __asm__ volatile("" ::: "memory");
}

void ruda_bench_copy(ruda_bench_t *b) {
  if (ruda_bench_gpu_dispatch(b, ruda_bench_cuda_copy, ruda_bench_opencl_copy)) return;
  copy_ctx_t c = {0};
  c.bytes = ruda_bench_pick(b, 256u << 20, 16u << 20, 1u << 20);
  size_t reps = ruda_bench_pick(b, 10, 4, 1);
  size_t warmup = 1;
  if (!ruda_bench_open_client(b, "copy", "create_read_bandwidth", &c.client)) return;
  c.src = malloc(c.bytes);
  c.dst = malloc(c.bytes);
  c.staging = malloc(c.bytes);
  c.base_dst = malloc(c.bytes);
  if (!c.src || !c.dst || !c.staging || !c.base_dst) {
    ruda_bench_fail(b, "copy", "create_read_bandwidth", "out of host memory");
    goto cleanup;
  }
  for (size_t i = 0; i < c.bytes; ++i) c.src[i] = (unsigned char)(i * 7 + (i >> 12));
  memset(c.dst, 0, c.bytes);
  memset(c.staging, 0, c.bytes);
  memset(c.base_dst, 0, c.bytes);

  ruda_bench_progress(b, "create_read_bandwidth: %zu MiB, %zu passes, alternating with memcpy",
                      c.bytes >> 20, reps);
  ruda_bench_calls_t ruda_calls = {ruda_create_read, &c}, base_calls = {memcpy_in_out, &c};
  ruda_bench_stats_t ruda_ns, base_ns;
  ruda_bench_compare(ruda_bench_sample_calls, &ruda_calls, ruda_bench_sample_calls, &base_calls,
                     warmup, reps, 1, &ruda_ns, &base_ns);
  if (ruda_bench_fail_status(b, "copy", "create_read_bandwidth", c.error)) goto cleanup;
  if (memcmp(c.src, c.dst, c.bytes) != 0) {
    ruda_bench_fail(b, "copy", "create_read_bandwidth",
                    "the data read back differs from the data created");
    goto cleanup;
  }
  double pass_bytes = 2.0 * (double)c.bytes;
  ruda_bench_report(b, "copy", "create_read_bandwidth", "GB/s",
                    ruda_bench_stats_rate(ruda_ns, pass_bytes, 1.0),
                    ruda_bench_stats_rate(base_ns, pass_bytes, 1.0), "memcpy in + out", false);
cleanup:
  free(c.src);
  free(c.dst);
  free(c.staging);
  free(c.base_dst);
  ruda_client_release(c.client);
}
