/* kernels: portable kernels (bench/kernels/bench_kernels.h, one source)
 * against the same computations written by hand for the device.
 *
 *  triad      a = b + s*c over three f32 arrays (64 MiB each; 16 MiB with
 *             --quick), GB/s of the three arrays per pass
 *  reduction  per-ruda sums of 2^24 f32 (64 MiB; 16 MiB with --quick) through
 *             a tree in shared memory (barriers in a loop), GB/s of the input
 *  matmul     C = A x B, 1024 x 1024 f32 (512 with --quick) in 16 x 16 tiles
 *             through shared memory, GFLOP/s
 *  triad_units, add_one_units
 *             the natural form: one element per unit with `if (u.abs_x < n)`
 *             (the README's add_one), against the RUDA_RANGE form of the
 *             same kernel on the same device, and on cpu:N against
 *             `omp parallel for` ("<kernel>_units_vs_openmp"); on cpu:N
 *             also both forms compiled by the CPU backend at run time
 *             ("<kernel>_units_runtime", "<kernel>_units_runtime_vs_openmp")
 *
 * On cpu:N each portable kernel runs against a hand-optimised native C
 * kernel (a CPU function launched through ruda the same way, case
 * "<kernel>") and against an OpenMP loop ("<kernel>_vs_openmp"); on cuda:N
 * against the same kernel written in CUDA C, compiled by NVRTC and launched
 * through ruda ("<kernel>"); on opencl:N against the same kernel written in
 * OpenCL C ("<kernel>") and the portable kernel on cpu:0
 * ("<kernel>_vs_cpu0"). Sides alternate sample by
 * sample (ruda_bench_compare); a sample is `inner` launches and one sync.
 * Every result is checked before it is reported. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels/bench_kernels.h"
#include "ruda/client.h"

#ifdef RUDA_HAVE_OPENMP
#include <omp.h>
#endif

/* ---- The same computations by hand: native C for the CPU backend ---- */

static void info3(const ruda_cpu_kernel_ctx_t *k, uint64_t *w) {
  for (int i = 0; i < 3; i++) w[i] = i < (int)k->info_len ? k->info[i] : 0;
}

static void triad_native(const ruda_cpu_kernel_ctx_t *k) {
  float *restrict a = k->buffers[0];
  const float *restrict b = k->buffers[1];
  const float *restrict c = k->buffers[2];
  uint64_t w[3];
  info3(k, w);
  float s;
  memcpy(&s, &w[0], sizeof s);
  uint64_t begin = (uint64_t)k->ruda_pos.x * w[2];
  uint64_t end = begin + w[2] < w[1] ? begin + w[2] : w[1];
  for (uint64_t i = begin; i < end; i++) a[i] = b[i] + s * c[i];
}

static void reduce_native(const ruda_cpu_kernel_ctx_t *k) {
  const float *restrict in = k->buffers[0];
  float *restrict partial = k->buffers[1];
  uint64_t w[3];
  info3(k, w);
  uint64_t begin = (uint64_t)k->ruda_pos.x * w[1];
  uint64_t end = begin + w[1] < w[0] ? begin + w[1] : w[0];
  /* Sixteen independent sums: vector registers without reassociation. */
  float acc[16] = {0};
  uint64_t i = begin;
  for (; i + 16 <= end; i += 16)
    for (int j = 0; j < 16; j++) acc[j] += in[i + j];
  for (; i < end; i++) acc[0] += in[i];
  for (int step = 8; step > 0; step /= 2)
    for (int j = 0; j < step; j++) acc[j] += acc[j + step];
  partial[k->ruda_pos.x] = acc[0];
}

static void matmul_native(const ruda_cpu_kernel_ctx_t *k) {
  const float *restrict A = k->buffers[0];
  const float *restrict B = k->buffers[1];
  float *restrict C = k->buffers[2];
  uint32_t n = (uint32_t)k->info[0];
  size_t row0 = (size_t)k->ruda_pos.y * BENCH_TILE, col0 = (size_t)k->ruda_pos.x * BENCH_TILE;
  float acc[BENCH_TILE][BENCH_TILE] = {{0}};
  float As[BENCH_TILE][BENCH_TILE], Bs[BENCH_TILE][BENCH_TILE];
  for (uint32_t t = 0; t < n; t += BENCH_TILE) {
    for (int i = 0; i < BENCH_TILE; i++)
      for (int j = 0; j < BENCH_TILE; j++) {
        As[i][j] = A[(row0 + i) * n + t + j];
        Bs[i][j] = B[(size_t)(t + i) * n + col0 + j];
      }
    for (int i = 0; i < BENCH_TILE; i++)
      for (int p = 0; p < BENCH_TILE; p++) {
        float a = As[i][p];
        for (int j = 0; j < BENCH_TILE; j++) acc[i][j] += a * Bs[p][j];
      }
  }
  for (int i = 0; i < BENCH_TILE; i++)
    for (int j = 0; j < BENCH_TILE; j++) C[(row0 + i) * n + col0 + j] = acc[i][j];
}

/* ---- The same kernels by hand in CUDA C (ruda's CUDA parameter order) ---- */

static const char triad_cuda[] =
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "triad_cuda(float *__restrict__ a, const float *__restrict__ b, const float *__restrict__ c,\n"
    "           const unsigned long long *__restrict__ info) {\n"
    "  float s = __uint_as_float((unsigned)info[0]);\n"
    "  unsigned long long n = info[1], chunk = info[2];\n"
    "  unsigned long long begin = blockIdx.x * chunk, end = min(begin + chunk, n);\n"
    "  for (unsigned long long i = begin + threadIdx.x; i < end; i += 256) a[i] = b[i] + s * c[i];\n"
    "}\n";

static const char reduce_cuda[] =
    "extern \"C\" __global__ void __launch_bounds__(64)\n"
    "reduce_cuda(const float *__restrict__ in, float *__restrict__ partial,\n"
    "            const unsigned long long *__restrict__ info) {\n"
    "  __shared__ float sh[64];\n"
    "  unsigned long long n = info[0], chunk = info[1];\n"
    "  unsigned long long begin = blockIdx.x * chunk, end = min(begin + chunk, n);\n"
    "  unsigned long long full = begin + (end - begin) / 64 * 64;\n"
    "  float acc = 0.0f;\n"
    "  for (unsigned long long b = begin; b < full; b += 64) acc += in[b + threadIdx.x];\n"
    "  sh[threadIdx.x] = acc + (full + threadIdx.x < end ? in[full + threadIdx.x] : 0.0f);\n"
    "  __syncthreads();\n"
    "  for (unsigned s = 32; s > 0; s >>= 1) {\n"
    "    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];\n"
    "}\n";

static const char matmul_cuda[] =
    "#define TILE 16\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "matmul_cuda(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,\n"
    "            const unsigned long long *__restrict__ info) {\n"
    "  __shared__ float As[TILE][TILE], Bs[TILE][TILE];\n"
    "  unsigned n = (unsigned)info[0];\n"
    "  unsigned row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;\n"
    "  float acc = 0.0f;\n"
    "  for (unsigned t = 0; t < n; t += TILE) {\n"
    "    As[threadIdx.y][threadIdx.x] = A[(size_t)row * n + t + threadIdx.x];\n"
    "    Bs[threadIdx.y][threadIdx.x] = B[(size_t)(t + threadIdx.y) * n + col];\n"
    "    __syncthreads();\n"
    "    for (int p = 0; p < TILE; p++) acc += As[threadIdx.y][p] * Bs[p][threadIdx.x];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  C[(size_t)row * n + col] = acc;\n"
    "}\n";

/* ---- The same kernels by hand in OpenCL C (ruda's OpenCL parameter order:
 * buffers, then the info words) ---- */

static const char triad_opencl[] =
    "__kernel __attribute__((reqd_work_group_size(256, 1, 1)))\n"
    "void triad_opencl(__global float *restrict a, __global const float *restrict b,\n"
    "                  __global const float *restrict c, __global const ulong *restrict info) {\n"
    "  float s = as_float((uint)info[0]);\n"
    "  ulong n = info[1], chunk = info[2];\n"
    "  ulong begin = get_group_id(0) * chunk, end = min(begin + chunk, n);\n"
    "  for (ulong i = begin + get_local_id(0); i < end; i += 256) a[i] = b[i] + s * c[i];\n"
    "}\n";

static const char reduce_opencl[] =
    "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
    "void reduce_opencl(__global const float *restrict in, __global float *restrict partial,\n"
    "                   __global const ulong *restrict info) {\n"
    "  __local float sh[64];\n"
    "  uint t = get_local_id(0);\n"
    "  ulong n = info[0], chunk = info[1];\n"
    "  ulong begin = get_group_id(0) * chunk, end = min(begin + chunk, n);\n"
    "  ulong full = begin + (end - begin) / 64 * 64;\n"
    "  float acc = 0.0f;\n"
    "  for (ulong b = begin; b < full; b += 64) acc += in[b + t];\n"
    "  sh[t] = acc + (full + t < end ? in[full + t] : 0.0f);\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (uint s = 32; s > 0; s >>= 1) {\n"
    "    if (t < s) sh[t] += sh[t + s];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (t == 0) partial[get_group_id(0)] = sh[0];\n"
    "}\n";

static const char matmul_opencl[] =
    "#define TILE 16\n"
    "__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))\n"
    "void matmul_opencl(__global const float *restrict A, __global const float *restrict B,\n"
    "                   __global float *restrict C, __global const ulong *restrict info) {\n"
    "  __local float As[TILE][TILE], Bs[TILE][TILE];\n"
    "  uint n = (uint)info[0];\n"
    "  uint tx = get_local_id(0), ty = get_local_id(1);\n"
    "  uint row = get_group_id(1) * TILE + ty, col = get_group_id(0) * TILE + tx;\n"
    "  float acc = 0.0f;\n"
    "  for (uint t = 0; t < n; t += TILE) {\n"
    "    As[ty][tx] = A[(size_t)row * n + t + tx];\n"
    "    Bs[ty][tx] = B[(size_t)(t + ty) * n + col];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (int p = 0; p < TILE; p++) acc += As[ty][p] * Bs[p][tx];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  C[(size_t)row * n + col] = acc;\n"
    "}\n";

/* ---- Problems ---- */

typedef enum { K_TRIAD, K_REDUCE, K_MATMUL, K_ADD_ONE } kind_t;

/* One side of a comparison: a kernel and its arguments on one client. */
typedef struct side {
  ruda_client_t *client;
  ruda_kernel_t *kernel;
  ruda_count_t count;
  ruda_handle_t bufs[3];
  size_t num_bufs;
  uint64_t info[3];
  size_t num_info;
  ruda_status_t error; /* first failure, owned */
} side_t;

typedef struct problem {
  kind_t kind;
  const char *name;
  uint64_t n;     /* elements (triad, reduction) or matrix order (matmul) */
  uint64_t chunk; /* per ruda (triad, reduction) */
  uint32_t rudas;
  double amount;  /* bytes or flops per launch */
  const char *unit;
  float *host[3]; /* inputs (and the OpenMP baseline's arrays) */
} problem_t;

static double sample_side(void *p, size_t inner) {
  side_t *s = p;
  ruda_kernel_args_t args = {.buffers = s->bufs, .num_buffers = s->num_bufs,
                             .info = {s->info, s->num_info, s->num_info}};
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; i++)
    ruda_bench_keep_error(&s->error, ruda_client_launch(s->client, s->kernel, s->count, &args));
  ruda_bench_keep_error(&s->error, ruda_client_sync(s->client));
  return (double)(ruda_bench_now_ns() - t0) / (double)inner;
}

static float in_b(uint64_t i) { return (float)(i % 13); }
static float in_c(uint64_t i) { return 0.5f * (float)(i % 5); }
static float in_r(uint64_t i) { return (float)(i % 7) * 0.25f; }
static float in_a(uint64_t i) { return (float)((i * 7) % 11) * 0.125f - 0.5f; }
static float in_m(uint64_t i) { return (float)((i * 3) % 13) * 0.25f; }

static bool fill_host(problem_t *p) {
  size_t elems = p->kind == K_MATMUL ? p->n * p->n : p->n;
  int arrays = p->kind == K_REDUCE || p->kind == K_ADD_ONE ? 1 : 3;
  for (int a = 0; a < arrays; a++) {
    p->host[a] = malloc(elems * sizeof(float));
    if (!p->host[a]) return false;
  }
  for (size_t i = 0; i < elems; i++) {
    switch (p->kind) {
      case K_TRIAD:
        p->host[0][i] = 0.0f;
        p->host[1][i] = in_b(i);
        p->host[2][i] = in_c(i);
        break;
      case K_REDUCE: p->host[0][i] = in_r(i); break;
      case K_ADD_ONE: p->host[0][i] = 0.0f; break;
      case K_MATMUL:
        p->host[0][i] = in_a(i);
        p->host[1][i] = in_m(i);
        p->host[2][i] = 0.0f;
        break;
    }
  }
  return true;
}

/* Buffers and arguments for `kernel` on `client`; `units`: the kernel has
 * the natural form (one element per unit, a bounds check, arguments
 * (buffers..., [s,] n as uint32), one ruda per BENCH_UNITS elements). */
static ruda_status_t side_init_as(side_t *s, const problem_t *p, ruda_client_t *client,
                                  ruda_kernel_t *kernel, bool units) {
  memset(s, 0, sizeof *s);
  s->client = client;
  s->kernel = kernel;
  ruda_status_t st = NULL;
  size_t elems = p->kind == K_MATMUL ? p->n * p->n : p->n;
  if (units) {
    s->num_bufs = p->kind == K_ADD_ONE ? 1 : 3;
    for (size_t a = 0; a < s->num_bufs && !st; a++)
      st = ruda_client_create_buffer(client, p->host[a], elems * 4, &s->bufs[a]);
    if (p->kind == K_TRIAD) {
      float scale = 3.0f;
      memcpy(&s->info[s->num_info++], &scale, sizeof scale);
    }
    s->info[s->num_info++] = p->n;
    s->count = ruda_count_static((uint32_t)((p->n + BENCH_UNITS - 1) / BENCH_UNITS), 1, 1);
  } else if (p->kind == K_ADD_ONE) {
    s->num_bufs = 1;
    st = ruda_client_create_buffer(client, p->host[0], elems * 4, &s->bufs[0]);
    s->info[0] = p->n;
    s->info[1] = p->chunk;
    s->num_info = 2;
    s->count = ruda_count_static(p->rudas, 1, 1);
  } else if (p->kind == K_REDUCE) {
    s->num_bufs = 2;
    st = ruda_client_create_buffer(client, p->host[0], elems * 4, &s->bufs[0]);
    if (!st) st = ruda_client_empty(client, (size_t)p->rudas * 4, &s->bufs[1]);
    s->info[0] = p->n;
    s->info[1] = p->chunk;
    s->num_info = 2;
    s->count = ruda_count_static(p->rudas, 1, 1);
  } else {
    s->num_bufs = 3;
    for (int a = 0; a < 3 && !st; a++)
      st = ruda_client_create_buffer(client, p->host[a], elems * 4, &s->bufs[a]);
    if (p->kind == K_TRIAD) {
      float scale = 3.0f;
      s->info[0] = 0;
      memcpy(&s->info[0], &scale, sizeof scale);
      s->info[1] = p->n;
      s->info[2] = p->chunk;
      s->num_info = 3;
      s->count = ruda_count_static(p->rudas, 1, 1);
    } else {
      s->info[0] = p->n;
      s->num_info = 1;
      uint32_t tiles = (uint32_t)(p->n / BENCH_TILE);
      s->count = ruda_count_static(tiles, tiles, 1);
    }
  }
  if (!st) st = ruda_client_sync(client);
  return st;
}

static ruda_status_t side_init(side_t *s, const problem_t *p, ruda_client_t *client,
                               ruda_kernel_t *kernel) {
  return side_init_as(s, p, client, kernel, false);
}

static void side_deinit(side_t *s) {
  for (size_t i = 0; i < 3; i++) ruda_handle_release(&s->bufs[i]);
  ruda_status_free(s->error);
  s->error = NULL;
}

/* Checks what the side computed; false with the reason in `why`. */
static bool side_check(side_t *s, const problem_t *p, char *why, size_t cap) {
  ruda_status_t st = NULL;
  bool ok = true;
  if (p->kind == K_TRIAD) {
    float *a = malloc(p->n * 4);
    if (!a) return snprintf(why, cap, "out of host memory"), false;
    st = ruda_client_read(s->client, &s->bufs[0], a, p->n * 4);
    for (uint64_t i = 0; !st && ok && i < p->n; i += 997) {
      float want = in_b(i) + 3.0f * in_c(i);
      if (a[i] != want) {
        snprintf(why, cap, "a[%llu] = %g, expected %g", (unsigned long long)i, (double)a[i],
                 (double)want);
        ok = false;
      }
    }
    free(a);
  } else if (p->kind == K_ADD_ONE) {
    /* Every element was incremented once per launch: all equal, at least 1. */
    float *x = malloc(p->n * 4);
    if (!x) return snprintf(why, cap, "out of host memory"), false;
    st = ruda_client_read(s->client, &s->bufs[0], x, p->n * 4);
    for (uint64_t i = 0; !st && ok && i < p->n; i++) {
      if (x[i] != x[0] || x[0] < 1.0f) {
        snprintf(why, cap, "x[%llu] = %g, x[0] = %g", (unsigned long long)i, (double)x[i],
                 (double)x[0]);
        ok = false;
      }
    }
    free(x);
  } else if (p->kind == K_REDUCE) {
    float *part = malloc((size_t)p->rudas * 4);
    if (!part) return snprintf(why, cap, "out of host memory"), false;
    st = ruda_client_read(s->client, &s->bufs[1], part, (size_t)p->rudas * 4);
    double got = 0, want = 0;
    for (uint32_t r = 0; r < p->rudas; r++) got += part[r];
    for (uint64_t i = 0; i < p->n; i++) want += in_r(i);
    if (!st && fabs(got - want) > 1e-5 * want) {
      snprintf(why, cap, "sum %.6g, expected %.6g", got, want);
      ok = false;
    }
    free(part);
  } else {
    size_t n = p->n;
    float *cm = malloc(n * n * 4);
    if (!cm) return snprintf(why, cap, "out of host memory"), false;
    st = ruda_client_read(s->client, &s->bufs[2], cm, n * n * 4);
    for (size_t r = 0; !st && ok && r < n; r += 67)
      for (size_t c = 0; ok && c < n; c += 71) {
        double want = 0;
        for (size_t k = 0; k < n; k++) want += (double)in_a(r * n + k) * in_m(k * n + c);
        if (fabs(cm[r * n + c] - want) > 1e-3 * (1 + fabs(want))) {
          snprintf(why, cap, "C[%zu][%zu] = %g, expected %g", r, c, (double)cm[r * n + c], want);
          ok = false;
        }
      }
    free(cm);
  }
  if (st) return ruda_bench_why_status(why, cap, "reading the result", st);
  return ok;
}

/* ---- OpenMP baselines (cpu:N) ---- */

#ifdef RUDA_HAVE_OPENMP
static volatile float omp_sink;

static double sample_omp(void *pp, size_t inner) {
  problem_t *p = pp;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t it = 0; it < inner; it++) {
    if (p->kind == K_TRIAD) {
      float *restrict a = p->host[0];
      const float *restrict b = p->host[1], *restrict c = p->host[2];
      const long n = (long)p->n;
#pragma omp parallel for schedule(static)
      for (long i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
    } else if (p->kind == K_REDUCE) {
      const float *restrict in = p->host[0];
      const long n = (long)p->n;
      float sum = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(+ : sum)
      for (long i = 0; i < n; i++) sum += in[i];
      omp_sink = sum; /* keeps the sum alive */
    } else if (p->kind == K_ADD_ONE) {
      float *restrict x = p->host[0];
      const long n = (long)p->n;
#pragma omp parallel for schedule(static)
      for (long i = 0; i < n; i++) x[i] += 1.0f;
    } else {
      const float *restrict A = p->host[0], *restrict B = p->host[1];
      float *restrict C = p->host[2];
      const long n = (long)p->n;
#pragma omp parallel for schedule(static)
      for (long i = 0; i < n; i++) {
        float *restrict row = C + i * n;
        for (long j = 0; j < n; j++) row[j] = 0.0f;
        for (long k = 0; k < n; k++) {
          const float a = A[i * n + k];
          const float *restrict brow = B + k * n;
          for (long j = 0; j < n; j++) row[j] += a * brow[j];
        }
      }
    }
  }
  return (double)(ruda_bench_now_ns() - t0) / (double)inner;
}
#endif

/* ---- Running one kernel ---- */

/* The hand-written kernel for the device type: native C (cpu), CUDA C
 * (cuda) or OpenCL C (opencl). */
static ruda_kernel_t *hand_kernel(const problem_t *p, uint16_t type, ruda_status_t *st) {
  ruda_kernel_code_t code;
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  static const ruda_cpu_kernel_fn native[3] = {triad_native, reduce_native, matmul_native};
  static const char *const cuda_src[3] = {triad_cuda, reduce_cuda, matmul_cuda};
  static const char *const cuda_name[3] = {"triad_cuda", "reduce_cuda", "matmul_cuda"};
  static const char *const ocl_src[3] = {triad_opencl, reduce_opencl, matmul_opencl};
  static const char *const ocl_name[3] = {"triad_opencl", "reduce_opencl", "matmul_opencl"};
  bool cuda = type == RUDA_DEVICE_TYPE_CUDA, ocl = type == RUDA_DEVICE_TYPE_OPENCL;
  d.name = cuda ? cuda_name[p->kind] : ocl ? ocl_name[p->kind] : p->name;
  d.ruda_dim = p->kind == K_MATMUL   ? ruda_dim_new_2d(BENCH_TILE, BENCH_TILE)
               : p->kind == K_REDUCE ? ruda_dim_new_1d(REDUCE_UNITS)
                                     : ruda_dim_new_1d(BENCH_UNITS);
  code = cuda  ? ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, cuda_src[p->kind])
         : ocl ? ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, ocl_src[p->kind])
               : ruda_kernel_code_cpu(native[p->kind]);
  d.code = &code;
  d.num_code = 1;
  ruda_kernel_t *k = NULL;
  *st = ruda_kernel_create(&d, &k);
  return k;
}

static ruda_kernel_t *portable_kernel(const problem_t *p, ruda_status_t *st) {
  ruda_kernel_t *k = NULL;
  switch (p->kind) {
    case K_TRIAD: *st = RUDA_KERNEL_CREATE(triad, &k); break;
    case K_REDUCE: *st = RUDA_KERNEL_CREATE(reduce, &k); break;
    case K_MATMUL: *st = RUDA_KERNEL_CREATE(matmul, &k); break;
    case K_ADD_ONE: *st = RUDA_KERNEL_CREATE(add_one_range, &k); break;
  }
  return k;
}

static void compare(ruda_bench_t *b, problem_t *p, const char *case_name, side_t *port,
                    ruda_bench_sample_fn base_fn, void *base_ctx, const char *base_name,
                    side_t *base_side, size_t warmup, size_t reps, size_t inner) {
  ruda_bench_stats_t r, x;
  ruda_bench_compare(sample_side, port, base_fn, base_ctx, warmup, reps, inner, &r, &x);
  ruda_status_t err = port->error;
  port->error = NULL;
  if (!err && base_side) {
    err = base_side->error;
    base_side->error = NULL;
  }
  if (ruda_bench_fail_status(b, "kernels", case_name, err)) return;
  char why[256];
  if (!side_check(port, p, why, sizeof why)) {
    ruda_bench_fail(b, "kernels", case_name, "portable kernel: wrong result: %s", why);
    return;
  }
  if (base_side && !side_check(base_side, p, why, sizeof why)) {
    ruda_bench_fail(b, "kernels", case_name, "%s: wrong result: %s", base_name, why);
    return;
  }
  ruda_bench_report(b, "kernels", case_name, p->unit, ruda_bench_stats_rate(r, p->amount, 1.0),
                    ruda_bench_stats_rate(x, p->amount, 1.0), base_name, false);
}

/* The chunk per ruda of the range forms. CPU: a few rudas per core; GPU:
 * 4 (triad, add-one) or 32 (reduction) values per unit. Chunks are whole
 * multiples of the unit count. */
static void plan_chunks(ruda_client_t *client, problem_t *p) {
  const ruda_device_properties_t *props = ruda_client_properties(client);
  uint32_t workers = props->hardware.num_cpu_cores ? props->hardware.num_cpu_cores : 1;
  bool gpu = ruda_client_device(client).type_id != RUDA_DEVICE_TYPE_CPU;
  if (p->kind == K_MATMUL) return;
  uint64_t units = p->kind == K_REDUCE ? REDUCE_UNITS : BENCH_UNITS;
  uint64_t per = gpu ? units * (p->kind == K_REDUCE ? 32 : 4)
                     : (p->n + workers * 4 - 1) / (workers * 4);
  p->chunk = (per + units - 1) / units * units;
  p->rudas = (uint32_t)((p->n + p->chunk - 1) / p->chunk);
}

static void run_problem(ruda_bench_t *b, ruda_client_t *client, problem_t *p) {
  uint16_t type = ruda_client_device(client).type_id;
  bool gpu = type != RUDA_DEVICE_TYPE_CPU;
  plan_chunks(client, p);
  size_t reps = ruda_bench_pick(b, 10, 4, 1), warmup = 1;
  size_t inner = gpu ? ruda_bench_pick(b, 20, 10, 1) : ruda_bench_pick(b, 3, 2, 1);
  if (!fill_host(p)) {
    ruda_bench_fail(b, "kernels", p->name, "out of host memory");
    return;
  }
  ruda_status_t st = NULL;
  ruda_kernel_t *port_k = portable_kernel(p, &st);
  side_t port = {0}, hand = {0};
  ruda_client_t *cpu0 = NULL;
  ruda_kernel_t *hand_k = NULL;
  if (!st) st = side_init(&port, p, client, port_k);
  if (ruda_bench_fail_status(b, "kernels", p->name, st)) goto out;
  char case_name[64];
  {
    bool cuda = type == RUDA_DEVICE_TYPE_CUDA, ocl = type == RUDA_DEVICE_TYPE_OPENCL;
    hand_k = hand_kernel(p, type, &st);
    if (!st) st = side_init(&hand, p, client, hand_k);
    if (ruda_bench_fail_status(b, "kernels", p->name, st)) goto out;
    ruda_bench_progress(b, "kernels %s: portable vs %s", p->name,
                        cuda ? "CUDA C" : ocl ? "OpenCL C" : "native C");
    compare(b, p, p->name, &port, sample_side, &hand,
            cuda  ? "the same kernel in CUDA C (NVRTC, through ruda)"
            : ocl ? "the same kernel in OpenCL C (through ruda)"
                  : "hand-optimised native C kernel (through ruda)",
            &hand, warmup, reps, inner);
    side_deinit(&hand);
    if (!gpu) {
      snprintf(case_name, sizeof case_name, "%s_vs_openmp", p->name);
#ifdef RUDA_HAVE_OPENMP
      char omp[96];
      ruda_bench_omp_name(p->kind == K_REDUCE ? "omp parallel for simd reduction"
                                              : "omp parallel for",
                          omp_get_max_threads(), omp, sizeof omp);
      ruda_bench_progress(b, "kernels %s: portable vs OpenMP", p->name);
      compare(b, p, case_name, &port, sample_omp, p, omp, NULL, warmup, reps, inner);
#else
      ruda_bench_skip(b, "kernels", case_name, "built without OpenMP");
#endif
    }
  }
  if (type == RUDA_DEVICE_TYPE_OPENCL) {
    /* Also next to the portable kernel on cpu:0 of the same machine. */
    snprintf(case_name, sizeof case_name, "%s_vs_cpu0", p->name);
    ruda_device_id_t id = {RUDA_DEVICE_TYPE_CPU, 0};
    st = ruda_client_create(id, &cpu0);
    if (!st) st = side_init(&hand, p, cpu0, port_k);
    if (ruda_bench_fail_status(b, "kernels", case_name, st)) goto out;
    ruda_bench_progress(b, "kernels %s: portable on %s vs cpu:0", p->name, ruda_bench_device(b));
    compare(b, p, case_name, &port, sample_side, &hand, "the portable kernel on cpu:0", &hand,
            warmup, reps, inner);
  }
out:
  side_deinit(&port);
  side_deinit(&hand);
  ruda_kernel_release(port_k);
  ruda_kernel_release(hand_k);
  ruda_client_release(cpu0);
  for (int a = 0; a < 3; a++) {
    if (p->kind == K_REDUCE && a > 0) break;
    free(p->host[a]);
  }
}

/* `d` without its CPU function: the CPU backend compiles the portable
 * text at run time (compilation.cpu_flags, `-O3 -march=native` by default)
 * instead of running the function compiled into this program. */
static ruda_status_t runtime_kernel(ruda_kernel_desc_t d, ruda_kernel_t **out) {
  ruda_kernel_code_t code = d.code[0];
  code.cpu_fn = NULL;
  d.code = &code;
  d.num_code = 1;
  return ruda_kernel_create(&d, out);
}

/* The natural form (one element per unit, `if (u.abs_x < n)`) against the
 * range form of the same kernel on the same device ("<kernel>_units"), and
 * on cpu:N against `omp parallel for` ("<kernel>_units_vs_openmp"). On
 * cpu:N the kernels are the functions compiled into this program (this
 * build's flags); "<kernel>_units_runtime" compares the two forms compiled
 * by the CPU backend at run time instead, and
 * "<kernel>_units_runtime_vs_openmp" that natural form with OpenMP. */
static void run_units(ruda_bench_t *b, ruda_client_t *client, problem_t *p, bool runtime) {
  bool gpu = ruda_client_device(client).type_id != RUDA_DEVICE_TYPE_CPU;
  plan_chunks(client, p);
  size_t reps = ruda_bench_pick(b, 10, 4, 1), warmup = 1;
  size_t inner = gpu ? ruda_bench_pick(b, 20, 10, 1) : ruda_bench_pick(b, 3, 2, 1);
  char case_name[64];
  snprintf(case_name, sizeof case_name, "%s_units%s", p->name, runtime ? "_runtime" : "");
  if (!fill_host(p)) {
    ruda_bench_fail(b, "kernels", case_name, "out of host memory");
    return;
  }
  ruda_status_t st = NULL;
  ruda_kernel_t *nat_k = NULL, *range_k = NULL;
  ruda_kernel_desc_t nat_d = p->kind == K_TRIAD ? RUDA_KERNEL_DESC(triad_units)
                                                : RUDA_KERNEL_DESC(add_one_units);
  ruda_kernel_desc_t range_d = p->kind == K_TRIAD ? RUDA_KERNEL_DESC(triad)
                                                  : RUDA_KERNEL_DESC(add_one_range);
  if (runtime) {
    st = runtime_kernel(nat_d, &nat_k);
    if (!st) st = runtime_kernel(range_d, &range_k);
  } else {
    st = ruda_kernel_create(&nat_d, &nat_k);
    if (!st) st = ruda_kernel_create(&range_d, &range_k);
  }
  side_t nat = {0}, range = {0};
  if (!st) st = side_init_as(&nat, p, client, nat_k, true);
  if (!st) st = side_init_as(&range, p, client, range_k, false);
  if (ruda_bench_fail_status(b, "kernels", case_name, st)) goto out;
  ruda_bench_progress(b, "kernels %s: natural form vs range form%s", p->name,
                      runtime ? " (compiled at run time)" : "");
  compare(b, p, case_name, &nat, sample_side, &range,
          runtime ? "the RUDA_RANGE form of the same kernel (both compiled at run time)"
                  : "the RUDA_RANGE form of the same kernel (through ruda)",
          &range, warmup, reps, inner);
  if (!gpu) {
    snprintf(case_name, sizeof case_name, "%s_units%s_vs_openmp", p->name,
             runtime ? "_runtime" : "");
#ifdef RUDA_HAVE_OPENMP
    char omp[96];
    ruda_bench_omp_name("omp parallel for", omp_get_max_threads(), omp, sizeof omp);
    ruda_bench_progress(b, "kernels %s: natural form%s vs OpenMP", p->name,
                        runtime ? " (compiled at run time)" : "");
    compare(b, p, case_name, &nat, sample_omp, p, omp, NULL, warmup, reps, inner);
#else
    ruda_bench_skip(b, "kernels", case_name, "built without OpenMP");
#endif
  }
out:
  side_deinit(&nat);
  side_deinit(&range);
  ruda_kernel_release(nat_k);
  ruda_kernel_release(range_k);
  for (int a = 0; a < 3; a++) {
    if (p->kind == K_ADD_ONE && a > 0) break;
    free(p->host[a]);
    p->host[a] = NULL;
  }
}

void ruda_bench_kernels(ruda_bench_t *b) {
  ruda_client_t *client = NULL;
  if (!ruda_bench_open_client(b, "kernels", "triad", &client)) return;
  uint64_t elems = ruda_bench_pick(b, (size_t)1 << 24, (size_t)1 << 22, (size_t)1 << 14);
  problem_t triad = {K_TRIAD, "triad", elems, 0, 0, 3.0 * 4 * (double)elems, "GB/s", {0}};
  problem_t reduce = {K_REDUCE, "reduction", elems, 0, 0, 4.0 * (double)elems, "GB/s", {0}};
  uint64_t order = ruda_bench_pick(b, 1024, 512, 64);
  problem_t matmul = {K_MATMUL, "matmul", order, 0, 0, 2.0 * (double)order * order * order,
                      "GFLOP/s", {0}};
  run_problem(b, client, &triad);
  run_problem(b, client, &reduce);
  run_problem(b, client, &matmul);
  problem_t triad_u = {K_TRIAD, "triad", elems, 0, 0, 3.0 * 4 * (double)elems, "GB/s", {0}};
  problem_t add_one = {K_ADD_ONE, "add_one", elems, 0, 0, 2.0 * 4 * (double)elems, "GB/s", {0}};
  bool cpu = ruda_client_device(client).type_id == RUDA_DEVICE_TYPE_CPU;
  for (int runtime = 0; runtime <= (int)cpu; runtime++) {
    run_units(b, client, &triad_u, runtime);
    run_units(b, client, &add_one, runtime);
  }
  ruda_client_release(client);
}
