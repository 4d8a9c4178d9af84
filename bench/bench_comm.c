/* comm: collectives and send/recv through ruda against the same transport
 * called directly, in the same run. Bandwidths are bus bandwidths as
 * nccl-tests defines them (algbw = bytes / time per operation; busbw =
 * algbw x 2(n-1)/n for all-reduce, x 1 for broadcast and send/recv); a
 * 4 KiB case reports the time per operation instead (latency, back to
 * back, the sync after the last one included).
 *
 *   under an MPI launcher (mpirun -np N ruda bench comm): ruda_group_*
 *     on each rank's cpu:0 against MPI_Allreduce / MPI_Bcast on plain host
 *     buffers (bench_comm_mpi.c; only rank 0 prints);
 *   --device cpu: all-reduce between cpu:0 and cpu:1 (RUDA_CPU_DEVICES=2)
 *     in one process, against the machine's memory bandwidth (a triad
 *     a = b + s*c over three arrays, OpenMP threads when built with it):
 *     reported side by side, not a target;
 *   --device cuda: all-reduce, broadcast and send/recv between cuda:0 and
 *     cuda:1 through NCCL against the same NCCL calls on communicators of
 *     the benchmark's own (ncclCommInitAll), grouped with ncclGroupStart/End
 *     as one thread driving both GPUs must. With one GPU the all-reduce and
 *     broadcast run over cuda:0 alone (algbw: one rank has no bus) and
 *     send/recv is skipped.
 * Sizes: 4 KiB, 1 MiB, 64 MiB and, on CUDA, 1 GiB; --quick and --smoke run
 * smaller ones, and every case is named by the size it ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "harness.h"
#include "ruda/ruda.h"

#ifdef RUDA_HAVE_OPENMP
#include <omp.h>
#endif

#define BENCH "comm"

/* Under an MPI launcher (ruda_world_launcher) with the MPI transport
 * built: runs the cases across processes and returns true; false when no
 * launcher started this process. The weak default, linked when ruda was
 * built without the MPI transport (which is where launchers are
 * recognized), returns false: the in-process cases run instead. */
__attribute__((weak)) bool ruda_bench_comm_mpi(ruda_bench_t *b) {
  (void)b;
  return false;
}

/* The name of a case's size: the bytes it moves in this run (--quick and
 * --smoke run smaller sizes than the full run), "4KiB", "8MiB", "1GiB",
 * else bytes ("100B"). Also used by bench_comm_mpi.c. */
void ruda_bench_comm_size_name(uint64_t bytes, char *out, size_t cap) {
  static const struct { uint64_t unit; const char *name; } units[] = {
      {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (bytes >= units[i].unit && bytes % units[i].unit == 0) {
      snprintf(out, cap, "%llu%s", (unsigned long long)(bytes / units[i].unit), units[i].name);
      return;
    }
  }
  snprintf(out, cap, "%lluB", (unsigned long long)bytes);
}

typedef struct comm_size {
  uint64_t full, quick, smoke; /* bytes per run kind (ruda_bench_pick) */
} comm_size_t;

/* ---- ruda's side, on any device type ---- */

typedef enum { OP_ALLREDUCE, OP_BROADCAST, OP_SENDRECV } comm_op_t;

/* `op` over devices 0 .. n-1 of one type: a client and a source and a
 * destination buffer on each. */
typedef struct ruda_side {
  ruda_client_t *c[2];
  ruda_handle_t src[2], dst[2];
  size_t n;
  comm_op_t op;
  ruda_status_t err;
} ruda_side_t;

/* *r zeroed, then the clients and buffers of `bytes` on devices 0 .. n-1
 * of `type`; the first failure. End with ruda_side_close either way. */
static ruda_status_t ruda_side_open(ruda_side_t *r, uint16_t type, size_t n,
                                    comm_op_t op, uint64_t bytes) {
  memset(r, 0, sizeof *r);
  r->n = n;
  r->op = op;
  ruda_status_t s = NULL;
  for (size_t i = 0; i < n && !s; i++) {
    s = ruda_client_create((ruda_device_id_t){type, (uint16_t)i}, &r->c[i]);
    if (!s) s = ruda_client_empty(r->c[i], bytes, &r->src[i]);
    if (!s) s = ruda_client_empty(r->c[i], bytes, &r->dst[i]);
  }
  return s;
}

static void ruda_side_close(ruda_side_t *r) {
  for (size_t i = 0; i < r->n; i++) {
    ruda_handle_release(&r->src[i]);
    ruda_handle_release(&r->dst[i]);
    ruda_client_release(r->c[i]);
  }
  ruda_status_free(r->err);
  r->err = NULL;
}

/* `inner` operations back to back, then a sync of every client; the
 * nanoseconds per operation. */
static double ruda_side_sample(void *ctx, size_t inner) {
  ruda_side_t *r = ctx;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; i++) {
    switch (r->op) {
      case OP_ALLREDUCE:
        ruda_bench_keep_error(&r->err, ruda_client_all_reduce(r->c, r->n, r->src, r->dst,
                                                              RUDA_ELEM_F32, RUDA_REDUCE_SUM));
        break;
      case OP_BROADCAST:
        ruda_bench_keep_error(&r->err, ruda_client_broadcast(r->c, r->n, 0, r->dst));
        break;
      case OP_SENDRECV: {
        ruda_handle_t out;
        ruda_status_t s = ruda_client_send_recv(r->c[0], &r->src[0], NULL, NULL, RUDA_ELEM_U8,
                                                r->c[1], &out);
        ruda_bench_keep_error(&r->err, s);
        if (!s) ruda_handle_release(&out); /* the queued recv keeps it */
        break;
      }
    }
  }
  for (size_t d = 0; d < r->n; d++) ruda_bench_keep_error(&r->err, ruda_client_sync(r->c[d]));
  return (double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1);
}

/* ---- CPU: all-reduce between two CPU devices against a triad ---- */

typedef struct triad {
  float *a, *b, *c;
  size_t n;
  int threads;
} triad_t;

/* One pass; returns nanoseconds. */
static double triad_sample(void *ctx, size_t inner) {
  triad_t *t = ctx;
  float *restrict a = t->a;
  const float *restrict b = t->b, *restrict c = t->c;
  long n = (long)t->n;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t k = 0; k < inner; k++) {
#ifdef RUDA_HAVE_OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
  }
  return (double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1);
}

static void cpu_cases(ruda_bench_t *b) {
  static const comm_size_t sizes[] = {
      {1ull << 20, 1ull << 20, 1ull << 12},
      {64ull << 20, 16ull << 20, 1ull << 14},
  };
  setenv("RUDA_CPU_DEVICES", "2", 0); /* read on the first CPU device */
  /* The machine's memory bandwidth, measured once with arrays well past
   * the caches. */
  triad_t t = {0};
  t.n = (size_t)ruda_bench_pick(b, 32u << 20, 8u << 20, 1u << 12); /* floats per array */
  t.a = malloc(t.n * sizeof(float));
  t.b = malloc(t.n * sizeof(float));
  t.c = malloc(t.n * sizeof(float));
  if (!t.a || !t.b || !t.c) {
    ruda_bench_fail(b, BENCH, "allreduce_cpu", "out of host memory for the triad");
    free(t.a);
    free(t.b);
    free(t.c);
    return;
  }
  for (size_t i = 0; i < t.n; i++) {
    t.a[i] = 0;
    t.b[i] = (float)(i % 13);
    t.c[i] = (float)(i % 5);
  }
  ruda_bench_stats_t triad_ns = {0};
  {
    size_t reps = ruda_bench_pick(b, 9, 3, 1);
    double *samples = calloc(reps, sizeof *samples);
    if (samples) {
      triad_sample(&t, 1); /* warm-up: first touch */
      for (size_t i = 0; i < reps; i++) samples[i] = triad_sample(&t, 1);
      triad_ns = ruda_bench_stats_from_samples(samples, reps);
      free(samples);
    }
  }
  ruda_bench_stats_t triad_bw = ruda_bench_stats_rate(triad_ns, 3.0 * (double)t.n * sizeof(float), 1);
  char triad_name[160];
  int threads = 1;
#ifdef RUDA_HAVE_OPENMP
  threads = omp_get_max_threads();
#endif
  snprintf(triad_name, sizeof triad_name,
           "memory bandwidth: triad a=b+s*c, 3 x %zu MiB, %d thread%s (reported, not a target)",
           t.n * sizeof(float) >> 20, threads, threads == 1 ? "" : "s");

  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    uint64_t bytes = ruda_bench_pick(b, sizes[si].full, sizes[si].quick, sizes[si].smoke);
    char name[64], tag[24];
    ruda_bench_comm_size_name(bytes, tag, sizeof tag);
    snprintf(name, sizeof name, "allreduce_cpu2_%s", tag);
    ruda_side_t r;
    ruda_status_t s = ruda_side_open(&r, RUDA_DEVICE_TYPE_CPU, 2, OP_ALLREDUCE, bytes);
    if (s) {
      char *text = ruda_status_to_string(s);
      ruda_bench_skip(b, BENCH, name, text ? text : "two CPU devices are needed");
      free(text);
      ruda_status_free(s);
    } else {
      size_t reps = ruda_bench_pick(b, 9, 3, 1);
      size_t inner = ruda_bench_pick(b, bytes > (8u << 20) ? 2 : 32, 2, 1);
      double *samples = calloc(reps, sizeof *samples);
      ruda_side_sample(&r, 1); /* communicator and first touch */
      for (size_t i = 0; samples && i < reps; i++) samples[i] = ruda_side_sample(&r, inner);
      ruda_bench_stats_t ns = ruda_bench_stats_from_samples(samples, samples ? reps : 0);
      free(samples);
      if (!ruda_bench_fail_status(b, BENCH, name, r.err)) {
        /* n = 2: busbw = algbw x 2(n-1)/n = algbw */
        ruda_bench_report(b, BENCH, name, "GB/s busbw", ruda_bench_stats_rate(ns, (double)bytes, 1),
                          triad_bw, triad_name, false);
      }
      r.err = NULL;
    }
    ruda_side_close(&r);
  }
  free(t.a);
  free(t.b);
  free(t.c);
}

/* ---- CUDA: NCCL through ruda against NCCL directly ---- */


#if defined(RUDA_HAVE_NCCL_HEADERS)

static const char *const op_names[] = {"allreduce", "broadcast", "sendrecv"};

typedef struct gpu_raw {
  const ruda__cuda_api_t *cu;
  const ruda__nccl_api_t *nccl;
  size_t n;
  comm_op_t op;
  CUdevice dev[2];
  CUcontext ctx[2];
  CUstream stream[2];
  CUdeviceptr src[2], dst[2];
  ncclComm_t comm[2];
  size_t count; /* f32 elements */
  bool failed;
} gpu_raw_t;

static double gpu_raw_sample(void *ctx, size_t inner) {
  gpu_raw_t *r = ctx;
  const ruda__nccl_api_t *x = r->nccl;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t k = 0; k < inner; k++) {
    if (x->ncclGroupStart() != ncclSuccess) r->failed = true;
    for (size_t i = 0; i < r->n; i++) {
      cudaStream_t st = (cudaStream_t)r->stream[i];
      ncclResult_t res = ncclSuccess;
      switch (r->op) {
        case OP_ALLREDUCE:
          res = x->ncclAllReduce((const void *)(uintptr_t)r->src[i], (void *)(uintptr_t)r->dst[i],
                                 r->count, ncclFloat32, ncclSum, r->comm[i], st);
          break;
        case OP_BROADCAST:
          res = x->ncclBroadcast((const void *)(uintptr_t)r->dst[i], (void *)(uintptr_t)r->dst[i],
                                 r->count, ncclFloat32, 0, r->comm[i], st);
          break;
        case OP_SENDRECV:
          res = i == 0 ? x->ncclSend((const void *)(uintptr_t)r->src[0], r->count * 4, ncclUint8, 1,
                                     r->comm[0], st)
                       : x->ncclRecv((void *)(uintptr_t)r->dst[1], r->count * 4, ncclUint8, 0,
                                     r->comm[1], st);
          break;
      }
      if (res != ncclSuccess) r->failed = true;
    }
    if (x->ncclGroupEnd() != ncclSuccess) r->failed = true;
  }
  for (size_t i = 0; i < r->n; i++) {
    r->cu->cuCtxSetCurrent(r->ctx[i]);
    if (r->cu->cuStreamSynchronize(r->stream[i]) != CUDA_SUCCESS) r->failed = true;
  }
  return (double)(ruda_bench_now_ns() - t0) / (double)(inner ? inner : 1);
}

static void gpu_raw_close(gpu_raw_t *r) {
  if (!r->cu) return;
  for (size_t i = 0; i < r->n; i++) {
    if (!r->ctx[i]) continue;
    r->cu->cuCtxSetCurrent(r->ctx[i]);
    if (r->stream[i]) r->cu->cuStreamSynchronize(r->stream[i]);
  }
  for (size_t i = 0; i < r->n && r->nccl; i++) {
    if (r->comm[i]) r->nccl->ncclCommDestroy(r->comm[i]);
  }
  for (size_t i = 0; i < r->n; i++) {
    if (!r->ctx[i]) continue;
    r->cu->cuCtxSetCurrent(r->ctx[i]);
    if (r->src[i]) r->cu->cuMemFree(r->src[i]);
    if (r->dst[i]) r->cu->cuMemFree(r->dst[i]);
    if (r->stream[i]) r->cu->cuStreamDestroy(r->stream[i]);
    r->cu->cuDevicePrimaryCtxRelease(r->dev[i]);
  }
  memset(r, 0, sizeof *r);
}

/* The raw side for n devices and `bytes`; false (reported) on failure. */
static bool gpu_raw_open(ruda_bench_t *b, const char *name, size_t n, uint64_t bytes,
                         gpu_raw_t *r) {
  memset(r, 0, sizeof *r);
  r->n = n;
  ruda_status_t s = ruda__cuda_api_get(&r->cu);
  if (!s) s = ruda__nccl_api_get(&r->nccl);
  if (s) {
    char *t = ruda_status_to_string(s);
    ruda_bench_skip(b, BENCH, name, t ? t : "NCCL unavailable");
    free(t);
    ruda_status_free(s);
    return false;
  }
  r->count = (size_t)(bytes / sizeof(float));
  for (size_t i = 0; i < n; i++) {
    if (r->cu->cuDeviceGet(&r->dev[i], (int)i) != CUDA_SUCCESS ||
        r->cu->cuDevicePrimaryCtxRetain(&r->ctx[i], r->dev[i]) != CUDA_SUCCESS ||
        r->cu->cuCtxSetCurrent(r->ctx[i]) != CUDA_SUCCESS ||
        r->cu->cuStreamCreateWithPriority(&r->stream[i], CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS ||
        r->cu->cuMemAlloc(&r->src[i], bytes) != CUDA_SUCCESS ||
        r->cu->cuMemAlloc(&r->dst[i], bytes) != CUDA_SUCCESS) {
      ruda_bench_fail(b, BENCH, name, "cannot set up the direct NCCL side on cuda:%zu", i);
      return false;
    }
  }
  int devs[2] = {0, 1};
  ncclResult_t nr = r->nccl->ncclCommInitAll(r->comm, (int)n, devs);
  if (nr != ncclSuccess) {
    ruda_bench_fail_status(b, BENCH, name,
                           ruda__nccl_error(RUDA_ERR_SERVER_GENERIC, nr, "ncclCommInitAll", NULL));
    return false;
  }
  return true;
}

static void gpu_case(ruda_bench_t *b, comm_op_t op, size_t n, const comm_size_t *sz) {
  uint64_t bytes = ruda_bench_pick(b, sz->full, sz->quick, sz->smoke);
  bool latency = sz->full <= 4096;
  char name[64], tag[24];
  ruda_bench_comm_size_name(bytes, tag, sizeof tag);
  snprintf(name, sizeof name, "%s_%s%s", op_names[op], tag, n == 1 ? "_1gpu" : "");
  ruda_side_t r;
  ruda_status_t s = ruda_side_open(&r, RUDA_DEVICE_TYPE_CUDA, n, op, bytes);
  if (!s) { /* a first operation creates the communicator (untimed) */
    ruda_side_sample(&r, 1);
    s = r.err;
    r.err = NULL;
  }
  gpu_raw_t raw;
  memset(&raw, 0, sizeof raw);
  if (s) {
    ruda_error_kind_t k = ruda_status_kind(s);
    if (k == RUDA_ERR_UNAVAILABLE || k == RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION) {
      char *t = ruda_status_to_string(s);
      ruda_bench_skip(b, BENCH, name, t ? t : "NCCL or the devices are unavailable");
      free(t);
      ruda_status_free(s);
    } else {
      ruda_bench_fail_status(b, BENCH, name, s);
    }
  } else if (gpu_raw_open(b, name, n, bytes, &raw)) {
    raw.op = op;
    /* Back to back, then one sync, as nccl-tests times them: the sync's
     * cost is spread over many operations. */
    size_t reps = ruda_bench_pick(b, 15, 5, 1);
    size_t inner = ruda_bench_pick(b, latency ? 200 : bytes >= (512u << 20) ? 10
                                                    : bytes >= (32u << 20)  ? 20
                                                                            : 100,
                                   latency ? 50 : 4, 1);
    ruda_bench_stats_t tr, tb;
    ruda_bench_compare(ruda_side_sample, &r, gpu_raw_sample, &raw, 2, reps, inner, &tr, &tb);
    const char *base_name = op == OP_ALLREDUCE   ? "ncclAllReduce, ncclCommInitAll comms, grouped"
                            : op == OP_BROADCAST ? "ncclBroadcast, ncclCommInitAll comms, grouped"
                                                 : "ncclSend+ncclRecv, ncclCommInitAll comms, grouped";
    if (raw.failed) {
      ruda_bench_fail(b, BENCH, name, "the direct NCCL side failed");
    } else if (!ruda_bench_fail_status(b, BENCH, name, r.err)) {
      if (latency) {
        ruda_bench_report(b, BENCH, name, "us per op", ruda_bench_stats_scale(tr, 1e-3),
                          ruda_bench_stats_scale(tb, 1e-3), base_name, true);
      } else {
        /* busbw factor: all-reduce 2(n-1)/n (n = 1: algbw), others 1 */
        double factor = op == OP_ALLREDUCE && n > 1 ? 2.0 * (double)(n - 1) / (double)n : 1.0;
        ruda_bench_report(b, BENCH, name, n > 1 ? "GB/s busbw" : "GB/s algbw",
                          ruda_bench_stats_rate(tr, (double)bytes * factor, 1),
                          ruda_bench_stats_rate(tb, (double)bytes * factor, 1), base_name, false);
      }
    }
    r.err = NULL;
  }
  gpu_raw_close(&raw);
  ruda_side_close(&r);
}

/* The cases of every operation up to `last` (OP_ALLREDUCE: all-reduce
 * only). */
static void cuda_cases(ruda_bench_t *b, comm_op_t last) {
  static const comm_size_t sizes[] = {
      {4096, 4096, 4096},
      {1ull << 20, 1ull << 20, 1ull << 16},
      {64ull << 20, 64ull << 20, 1ull << 16},
      {1ull << 30, 256ull << 20, 1ull << 16},
  };
  uint32_t count = 0;
  ruda_status_free(ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &count));
  size_t n = count >= 2 ? 2 : 1;
  for (int op = OP_ALLREDUCE; op <= (int)last; op++) {
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      char tag[24];
      ruda_bench_comm_size_name(ruda_bench_pick(b, sizes[si].full, sizes[si].quick, sizes[si].smoke),
                                tag, sizeof tag);
      if (op == OP_SENDRECV && n < 2) {
        char name[64];
        snprintf(name, sizeof name, "%s_%s", op_names[op], tag);
        ruda_bench_skip(b, BENCH, name, "send/recv needs two GPUs (one is here)");
        continue;
      }
      if (op == OP_BROADCAST && n < 2 && sizes[si].full > 4096) {
        char name[64];
        snprintf(name, sizeof name, "%s_%s_1gpu", op_names[op], tag);
        ruda_bench_skip(b, BENCH, name, "a broadcast of one rank moves no data (latency only)");
        continue;
      }
      gpu_case(b, (comm_op_t)op, n, &sizes[si]);
    }
  }
}

#endif /* RUDA_HAVE_NCCL_HEADERS */

static void comm_cases(ruda_bench_t *b, bool allreduce_only) {
  if (ruda_bench_on_cuda(b)) {
#if defined(RUDA_HAVE_NCCL_HEADERS)
    cuda_cases(b, allreduce_only ? OP_ALLREDUCE : OP_SENDRECV);
#else
    (void)allreduce_only;
    ruda_bench_skip(b, BENCH, "cuda", "ruda was built without the CUDA/NCCL headers");
#endif
    return;
  }
  cpu_cases(b);
}

void ruda_bench_comm(ruda_bench_t *b) {
  if (ruda_bench_comm_mpi(b)) return; /* started by an MPI launcher */
  comm_cases(b, false);
}

/* `ruda bench allreduce`: the all-reduce cases of this group alone, in one
 * process (the CPU cases are all-reduces already). */
void ruda_bench_allreduce(ruda_bench_t *b) { comm_cases(b, true); }
