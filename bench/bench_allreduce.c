/* allreduce: ruda_client_all_reduce over 2 devices against the raw path in
 * the same process. Bus bandwidth = 2(n-1)/n * bytes / time (GB/s; for
 * n = 2 it is bytes / time), the time of one all-reduce including the wait
 * for it on both devices.
 *
 *   --device cuda:N  cuda:0 + cuda:1 through NCCL vs ncclAllReduce on
 *                    communicators of its own (ncclCommInitAll), grouped
 *   --device cpu     cpu:0 + cpu:1 (RUDA_CPU_DEVICES=2) vs a C loop that
 *                    sums the two buffers into the first dst and memcpy()s
 *                    it into the second (one thread)
 *
 * Cases: allreduce_64MiB and allreduce_1GiB of f32, sum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ruda/ruda.h"

#define BENCH "allreduce"

typedef struct ruda_side {
  ruda_client_t *c[2];
  ruda_handle_t src[2], dst[2];
  ruda_status_t err;
} ruda_side_t;

static double ruda_sample(void *ctx, size_t inner) {
  ruda_side_t *r = ctx;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; i++) {
    ruda_bench_keep_error(&r->err, ruda_client_all_reduce(r->c, 2, r->src, r->dst, RUDA_ELEM_F32,
                                                          RUDA_REDUCE_SUM));
  }
  ruda_bench_keep_error(&r->err, ruda_client_sync(r->c[0]));
  ruda_bench_keep_error(&r->err, ruda_client_sync(r->c[1]));
  return (double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1);
}

static void ruda_side_close(ruda_side_t *r) {
  for (int i = 0; i < 2; i++) {
    ruda_handle_release(&r->src[i]);
    ruda_handle_release(&r->dst[i]);
    ruda_client_release(r->c[i]);
  }
  ruda_status_free(r->err);
}

static bool ruda_side_open(ruda_bench_t *b, const char *case_name, uint16_t type, uint64_t bytes,
                           ruda_side_t *r) {
  memset(r, 0, sizeof *r);
  ruda_status_t s = NULL;
  for (uint16_t i = 0; i < 2 && !s; i++) {
    s = ruda_client_create((ruda_device_id_t){type, i}, &r->c[i]);
  }
  for (int i = 0; i < 2 && !s; i++) {
    s = ruda_client_empty(r->c[i], bytes, &r->src[i]);
    if (!s) s = ruda_client_empty(r->c[i], bytes, &r->dst[i]);
  }
  /* A first collective creates the communicator (untimed). */
  if (!s) s = ruda_client_all_reduce(r->c, 2, r->src, r->dst, RUDA_ELEM_F32, RUDA_REDUCE_SUM);
  if (!s) s = ruda_client_sync(r->c[0]);
  if (!s) s = ruda_client_sync(r->c[1]);
  if (s) {
    ruda_error_kind_t k = ruda_status_kind(s);
    if (k == RUDA_ERR_UNAVAILABLE || k == RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION ||
        k == RUDA_ERR_INVALID_ARGUMENT) {
      char *t = ruda_status_to_string(s);
      ruda_bench_skip(b, BENCH, case_name, t ? t : "2 devices with collectives are needed");
      free(t);
      ruda_status_free(s);
    } else {
      ruda_bench_fail_status(b, BENCH, case_name, s);
    }
    ruda_side_close(r);
    return false;
  }
  return true;
}

/* ---- CPU: a C loop baseline ---- */

typedef struct cpu_raw {
  float *src[2], *dst[2];
  size_t count;
} cpu_raw_t;

static double cpu_raw_sample(void *ctx, size_t inner) {
  cpu_raw_t *r = ctx;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t k = 0; k < inner; k++) {
    const float *a = r->src[0], *b = r->src[1];
    float *d = r->dst[0];
    for (size_t i = 0; i < r->count; i++) d[i] = a[i] + b[i];
    memcpy(r->dst[1], d, r->count * sizeof *d);
  }
  return (double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1);
}

static void cpu_case(ruda_bench_t *b, const char *case_name, uint64_t bytes) {
  ruda_side_t r;
  if (!ruda_side_open(b, case_name, RUDA_DEVICE_TYPE_CPU, bytes, &r)) return;
  cpu_raw_t raw = {.count = (size_t)(bytes / sizeof(float))};
  bool ok = true;
  for (int i = 0; i < 2; i++) {
    raw.src[i] = calloc(raw.count ? raw.count : 1, sizeof(float));
    raw.dst[i] = calloc(raw.count ? raw.count : 1, sizeof(float));
    ok = ok && raw.src[i] && raw.dst[i];
  }
  if (ok) {
    size_t reps = ruda_bench_pick(b, 7, 3, 1);
    size_t inner = ruda_bench_pick(b, bytes > (256u << 20) ? 1 : 4, 1, 1);
    ruda_bench_stats_t tr, tb;
    ruda_bench_compare(ruda_sample, &r, cpu_raw_sample, &raw, 1, reps, inner, &tr, &tb);
    if (!ruda_bench_fail_status(b, BENCH, case_name, r.err)) {
      ruda_bench_report(b, BENCH, case_name, "GB/s", ruda_bench_stats_rate(tr, (double)bytes, 1),
                        ruda_bench_stats_rate(tb, (double)bytes, 1),
                        "C loop a+b into dst0, memcpy into dst1 (1 thread)", false);
    }
    r.err = NULL;
  } else {
    ruda_bench_fail(b, BENCH, case_name, "out of host memory");
  }
  for (int i = 0; i < 2; i++) {
    free(raw.src[i]);
    free(raw.dst[i]);
  }
  ruda_side_close(&r);
}

#if defined(RUDA_HAVE_CUDA_HEADERS)
#include "backends/cuda/cuda_internal.h"
#include "backends/cuda/cuda_nccl.h"
#endif

#if defined(RUDA_HAVE_NCCL_HEADERS)

/* ---- CUDA: ncclAllReduce on communicators of its own ---- */

typedef struct nccl_raw {
  const ruda__cuda_api_t *cu;
  const ruda__nccl_api_t *nccl;
  CUdevice dev[2];
  CUcontext ctx[2];
  CUstream stream[2];
  CUdeviceptr src[2], dst[2];
  ncclComm_t comm[2];
  size_t count;
  bool failed;
} nccl_raw_t;

static double nccl_sample(void *ctx, size_t inner) {
  nccl_raw_t *r = ctx;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t k = 0; k < inner; k++) {
    if (r->nccl->ncclGroupStart() != ncclSuccess) r->failed = true;
    for (int i = 0; i < 2; i++) {
      if (r->nccl->ncclAllReduce((const void *)(uintptr_t)r->src[i], (void *)(uintptr_t)r->dst[i],
                                 r->count, ncclFloat32, ncclSum, r->comm[i],
                                 (cudaStream_t)r->stream[i]) != ncclSuccess) {
        r->failed = true;
      }
    }
    if (r->nccl->ncclGroupEnd() != ncclSuccess) r->failed = true;
  }
  for (int i = 0; i < 2; i++) {
    r->cu->cuCtxSetCurrent(r->ctx[i]);
    if (r->cu->cuStreamSynchronize(r->stream[i]) != CUDA_SUCCESS) r->failed = true;
  }
  return (double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1);
}

static bool nccl_open(ruda_bench_t *b, const char *case_name, uint64_t bytes, nccl_raw_t *r) {
  memset(r, 0, sizeof *r);
  ruda_status_t s = ruda__cuda_api_get(&r->cu);
  if (!s) s = ruda__nccl_api_get(&r->nccl);
  if (s) {
    char *t = ruda_status_to_string(s);
    ruda_bench_skip(b, BENCH, case_name, t ? t : "NCCL unavailable");
    free(t);
    ruda_status_free(s);
    return false;
  }
  r->count = (size_t)(bytes / sizeof(float));
  for (int i = 0; i < 2; i++) {
    if (r->cu->cuDeviceGet(&r->dev[i], i) != CUDA_SUCCESS ||
        r->cu->cuDevicePrimaryCtxRetain(&r->ctx[i], r->dev[i]) != CUDA_SUCCESS ||
        r->cu->cuCtxSetCurrent(r->ctx[i]) != CUDA_SUCCESS ||
        r->cu->cuStreamCreateWithPriority(&r->stream[i], CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS ||
        r->cu->cuMemAlloc(&r->src[i], bytes) != CUDA_SUCCESS ||
        r->cu->cuMemAlloc(&r->dst[i], bytes) != CUDA_SUCCESS) {
      ruda_bench_fail(b, BENCH, case_name, "cannot set up the raw NCCL baseline on cuda:%d", i);
      return false;
    }
  }
  int devs[2] = {0, 1};
  ncclResult_t nr = r->nccl->ncclCommInitAll(r->comm, 2, devs);
  if (nr != ncclSuccess) {
    ruda_bench_fail_status(b, BENCH, case_name,
                           ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, nr, "ncclCommInitAll", NULL));
    return false;
  }
  return true;
}

static void nccl_close(nccl_raw_t *r) {
  if (!r->cu) return;
  for (int i = 0; i < 2; i++) {
    if (!r->ctx[i]) continue;
    r->cu->cuCtxSetCurrent(r->ctx[i]);
    if (r->stream[i]) r->cu->cuStreamSynchronize(r->stream[i]);
  }
  if (r->nccl) {
    for (int i = 0; i < 2; i++) {
      if (r->comm[i]) r->nccl->ncclCommDestroy(r->comm[i]);
    }
  }
  for (int i = 0; i < 2; i++) {
    if (!r->ctx[i]) continue;
    r->cu->cuCtxSetCurrent(r->ctx[i]);
    if (r->src[i]) r->cu->cuMemFree(r->src[i]);
    if (r->dst[i]) r->cu->cuMemFree(r->dst[i]);
    if (r->stream[i]) r->cu->cuStreamDestroy(r->stream[i]);
    r->cu->cuDevicePrimaryCtxRelease(r->dev[i]);
  }
}

static void cuda_case(ruda_bench_t *b, const char *case_name, uint64_t bytes) {
  ruda_side_t r;
  if (!ruda_side_open(b, case_name, RUDA_DEVICE_TYPE_CUDA, bytes, &r)) return;
  nccl_raw_t raw;
  if (nccl_open(b, case_name, bytes, &raw)) {
    size_t reps = ruda_bench_pick(b, 15, 5, 1);
    size_t inner = ruda_bench_pick(b, bytes > (256u << 20) ? 4 : 20, 2, 1);
    ruda_bench_stats_t tr, tb;
    ruda_bench_compare(ruda_sample, &r, nccl_sample, &raw, 2, reps, inner, &tr, &tb);
    if (raw.failed) {
      ruda_bench_fail(b, BENCH, case_name, "the raw ncclAllReduce baseline failed");
    } else if (!ruda_bench_fail_status(b, BENCH, case_name, r.err)) {
      ruda_bench_report(b, BENCH, case_name, "GB/s busbw",
                        ruda_bench_stats_rate(tr, (double)bytes, 1),
                        ruda_bench_stats_rate(tb, (double)bytes, 1),
                        "ncclAllReduce, ncclCommInitAll comms, grouped (2 GPUs)", false);
    }
    r.err = NULL;
  }
  nccl_close(&raw);
  ruda_side_close(&r);
}

#endif /* RUDA_HAVE_NCCL_HEADERS */

void ruda_bench_allreduce(ruda_bench_t *b) {
  static const struct { const char *name; uint64_t full, quick, smoke; } cases[] = {
      {"allreduce_64MiB", 64ull << 20, 64ull << 20, 1ull << 16},
      {"allreduce_1GiB", 1ull << 30, 256ull << 20, 1ull << 16},
  };
  bool cuda = ruda_bench_on_cuda(b);
  if (!cuda) setenv("RUDA_CPU_DEVICES", "2", 0); /* read on the first CPU device */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t bytes = ruda_bench_pick(b, cases[i].full, cases[i].quick, cases[i].smoke);
    if (cuda) {
#if defined(RUDA_HAVE_NCCL_HEADERS)
      cuda_case(b, cases[i].name, bytes);
#else
      ruda_bench_skip(b, BENCH, cases[i].name, "ruda was built without the CUDA/NCCL headers");
#endif
    } else {
      cpu_case(b, cases[i].name, bytes);
    }
  }
}
