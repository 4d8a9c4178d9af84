/* The tuned operations ruda ships: matmul, sum and triad (f32), their
 * candidates (kernels/tuned_kernels.h) and the operation of each device,
 * created on first use. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tune/kernels/tuned_kernels.h"
#include "tune/tune_internal.h"

/* ---- candidates' constants and launches ---- */

typedef struct mm_param {
  uint32_t tm, tn; /* the tile of C one ruda computes */
} mm_param_t;

static ruda_status_t mm_count(const ruda_tune_args_t *args, const void *param, ruda_count_t *out) {
  const mm_param_t *p = param;
  uint64_t m = args->sizes[0], n = args->sizes[1];
  *out = ruda_count_static((uint32_t)((n + p->tn - 1) / p->tn), (uint32_t)((m + p->tm - 1) / p->tm),
                           1);
  return NULL;
}

/* Launches `k` on the arguments' buffers with the scalars (n, chunk) or
 * (s, n, chunk) that the sum and triad kernels take. */
static ruda_status_t launch_chunked(ruda_client_t *c, ruda_kernel_t *k, const ruda_handle_t *bufs,
                                    size_t num_bufs, const uint64_t *lead, size_t num_lead,
                                    uint64_t n, uint64_t chunk) {
  uint64_t w[4];
  size_t nw = 0;
  for (size_t i = 0; i < num_lead; i++) w[nw++] = lead[i];
  w[nw++] = n;
  w[nw++] = chunk;
  ruda_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.buffers = bufs;
  a.num_buffers = num_bufs;
  a.info.data = w;
  a.info.len = nw;
  a.info.dynamic_metadata_offset = nw;
  uint64_t rudas = n == 0 ? 1 : (n + chunk - 1) / chunk;
  return ruda_client_launch(c, k, ruda_count_static((uint32_t)rudas, 1, 1), &a);
}

typedef struct sum_param {
  uint64_t chunk;         /* elements per ruda */
  ruda_kernel_t **second; /* the second pass (two-pass candidates), else NULL */
} sum_param_t;

/* The second pass of the two-pass candidates (256 units, one ruda, 8
 * elements per unit and step: on a GPU this pass is all latency, and a
 * unit's 8 loads are in flight together). */
static ruda_kernel_t *g_sum_final;

/* args: buffers x, out, work; sizes n. */
static ruda_status_t sum_launch(ruda_client_t *c, ruda_kernel_t *k, const ruda_tune_args_t *args,
                                const void *param) {
  const sum_param_t *p = param;
  uint64_t n = args->sizes[0];
  if (!p->second) {
    const float zero = 0.0f;
    ruda_status_t st = ruda_client_write(c, &args->buffers[1], &zero, sizeof zero);
    if (st) return st;
    return launch_chunked(c, k, args->buffers, 2, NULL, 0, n, p->chunk);
  }
  uint64_t parts = (n + p->chunk - 1) / p->chunk;
  if (parts * sizeof(float) > ruda_handle_size_in_used(&args->buffers[2]))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "sum_f32: the work buffer holds fewer "
                              "than %llu partial sums", (unsigned long long)parts);
  ruda_handle_t first[2] = {args->buffers[0], args->buffers[2]};
  ruda_status_t st = launch_chunked(c, k, first, 2, NULL, 0, n, p->chunk);
  if (st) return st;
  ruda_handle_t second[2] = {args->buffers[2], args->buffers[1]};
  return launch_chunked(c, *p->second, second, 2, NULL, 0, parts, parts ? parts : 1);
}

typedef struct triad_param {
  uint64_t chunk;
} triad_param_t;

/* args: buffers a, b, c; scalars s (f32 bits); sizes n. */
static ruda_status_t triad_launch(ruda_client_t *c, ruda_kernel_t *k,
                                  const ruda_tune_args_t *args, const void *param) {
  const triad_param_t *p = param;
  return launch_chunked(c, k, args->buffers, 3, args->scalars, 1, args->sizes[0], p->chunk);
}

/* ---- the operations ---- */

enum { OP_MATMUL, OP_SUM, OP_TRIAD, NUM_OPS };
static const char *const k_op_names[NUM_OPS] = {"matmul_f32", "sum_f32", "triad_f32"};

static const mm_param_t k_mm[] = {{16, 16}, {32, 16}, {32, 32}, {8, 64}, {16, 64}, {4, 128}};
static const sum_param_t k_sum[] = {
    {64 * 64, &g_sum_final},   /* u64, two passes, 64 per unit */
    {256 * 16, NULL},          /* u256, one pass, 16 per unit */
    {256 * 64, &g_sum_final},  /* u256, two passes, 64 per unit */
    {64 * 1024, NULL},         /* u64, one pass, 1024 per unit */
    {256 * 256, &g_sum_final}, /* u256, two passes, 256 per unit */
    {16 * 4096, &g_sum_final}, /* u16, contiguous, 16 lanes, two passes, 4096 per unit */
    {16 * 16384, &g_sum_final}, /* u16, contiguous, 16 lanes, two passes, 16384 per unit */
    {64 * 1024, &g_sum_final}, /* u64, contiguous, 16 lanes, two passes, 1024 per unit */
    {256 * 8 * 16, &g_sum_final}, /* u256, 8 per step, two passes, 16 steps */
    {256 * 8 * 4, &g_sum_final},  /* u256, 8 per step, two passes, 4 steps */
    {256 * 8 * 8, NULL},          /* u256, 8 per step, one pass, 8 steps */
    {256 * 4 * 16, &g_sum_final}, /* u256, 4 per step, two passes, 16 steps */
};
/* The smallest chunk of a two-pass candidate: it sizes the work buffer. */
#define SUM_MIN_TWO_PASS_CHUNK (64 * 64)
static const triad_param_t k_triad[] = {{4096}, {16384}, {65536}, {262144}, {1048576}};

static void release_all(ruda_kernel_t **k, size_t n) {
  for (size_t i = 0; i < n; i++) ruda_kernel_release(k[i]);
}

/* What differs between the three operations' descriptions. */
typedef struct op_spec {
  int which;
  /* count or launch, the same for every candidate */
  ruda_status_t (*count)(const ruda_tune_args_t *args, const void *param, ruda_count_t *out);
  ruda_status_t (*launch)(ruda_client_t *client, ruda_kernel_t *kernel,
                          const ruda_tune_args_t *args, const void *param);
  const void *params; /* candidate i's param: params + i * param_size (unless
                         create_op is given one pointer each) */
  size_t param_size;
  const ruda_tune_dim_t *dims;
  size_t num_dims;
  ruda_tune_access_t access[3];
  double tol; /* check_rtol and check_atol, against candidate 0 */
} op_spec_t;

enum { MAX_CANDIDATES = 14 };

/* Creates the operation of `n` candidates (names[i] on kernels[i]); the
 * kernels stay the caller's. */
static ruda_status_t create_op(ruda_client_t *c, const op_spec_t *s, const char *const *names,
                               ruda_kernel_t *const *kernels, const void *const *params, size_t n,
                               ruda_tune_op_t **out) {
  ruda_tune_candidate_t cands[MAX_CANDIDATES];
  if (n > MAX_CANDIDATES) /* a built-in operation outgrew the table: say so, never overrun it */
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s has %zu built-in candidates, more than the %d this build holds",
                              k_op_names[s->which], n, (int)MAX_CANDIDATES);
  memset(cands, 0, sizeof cands);
  for (size_t i = 0; i < n; i++) {
    cands[i].name = names[i];
    cands[i].kernel = kernels[i];
    cands[i].count = s->count;
    cands[i].launch = s->launch;
    cands[i].param = params ? params[i] : (const char *)s->params + i * s->param_size;
  }
  ruda_tune_op_desc_t d = ruda_tune_op_desc_default();
  d.name = k_op_names[s->which];
  d.candidates = cands;
  d.num_candidates = n;
  d.dims = s->dims;
  d.num_dims = s->num_dims;
  d.access = s->access;
  d.num_access = 3;
  d.check_reference = 0;
  d.check_elem = RUDA_ELEM_F32;
  d.check_rtol = s->tol;
  d.check_atol = s->tol;
  return ruda_tune_op_create(c, &d, out);
}

/* The register-blocked candidates (kernels/matmul_micro.h), built from
 * the file's text with -D values: on cpu:N the backend compiles it at run
 * time for this processor (compilation.cpu_flags, -O3 -march=native by
 * default), so the tile's columns become the processor's widest vectors. */
extern const char ruda_kernel_text__tuned_mm_micro[];

typedef struct mu_shape {
  const char *name;
  uint32_t mr, nr, bx, by, kc;
} mu_shape_t;

/* For CPUs: a unit's tile two to four vectors of 16 wide, k in blocks
 * (cache blocking). */
static const mu_shape_t k_mu_cpu[] = {
    {"mu_8x32_b1x16_kc256", 8, 32, 1, 16, 256},
    {"mu_6x32_b1x16_kc256", 6, 32, 1, 16, 256},
    {"mu_4x64_b1x16_kc128", 4, 64, 1, 16, 128},
    {"mu_6x32_b2x8_k", 6, 32, 2, 8, 0},
};
/* For GPUs: a few elements per unit (registers), many units. */
static const mu_shape_t k_mu_gpu[] = {
    {"mu_4x4_b16x16_k", 4, 4, 16, 16, 0},
    {"mu_8x4_b16x8_k", 8, 4, 16, 8, 0},
};
#define NUM_MU_CPU (sizeof k_mu_cpu / sizeof k_mu_cpu[0])
#define NUM_MU_GPU (sizeof k_mu_gpu / sizeof k_mu_gpu[0])
static const mm_param_t k_mu_cpu_param[NUM_MU_CPU] = {
    {8 * 16, 32}, {6 * 16, 32}, {4 * 16, 64}, {6 * 8, 32 * 2}};
static const mm_param_t k_mu_gpu_param[NUM_MU_GPU] = {{4 * 16, 4 * 16}, {8 * 8, 4 * 16}};

static ruda_status_t make_micro(const mu_shape_t *sh, bool cpu, ruda_kernel_t **out) {
  char d[5][32];
  snprintf(d[0], sizeof d[0], "-DMU_MR=%u", sh->mr);
  snprintf(d[1], sizeof d[1], "-DMU_NR=%u", sh->nr);
  snprintf(d[2], sizeof d[2], "-DMU_BX=%u", sh->bx);
  snprintf(d[3], sizeof d[3], "-DMU_BY=%u", sh->by);
  snprintf(d[4], sizeof d[4], "-DMU_KC=%u", sh->kc);
  /* GCC keeps to 256-bit vectors on most AVX-512 processors unless told:
   * the tiles are 512-bit wide. An x86 option: other processors' compilers
   * would refuse it. */
  const char *const opts[6] = {d[0], d[1], d[2], d[3], d[4], "-mprefer-vector-width=512"};
  ruda_kernel_source_t src;
  memset(&src, 0, sizeof src);
  src.entry = "tuned_mm_micro";
  src.options = opts;
#if defined(__x86_64__)
  src.num_options = cpu ? 6 : 5;
#else
  (void)cpu;
  src.num_options = 5;
#endif
  return ruda_kernel_from_text(ruda_kernel_text__tuned_mm_micro, 0, "tuned matmul (micro)", &src,
                               out);
}

static ruda_status_t make_matmul(ruda_client_t *c, ruda_tune_op_t **out) {
  enum { PORTABLE = 6, MAX = MAX_CANDIDATES };
  ruda_kernel_t *built[PORTABLE] = {0};
  ruda_status_t st = NULL;
  static const char *const names[2][PORTABLE] = {
      {"b16x16_w1_k16", "b16x16_w2_k16_v2", "b32x8_w4_k16_v4", "b64x1_w8_k64_v4",
       "b64x4_w4_k32_v4", "b128x1_w4_k64_v4"},
      {"b16x16_w1_k16_avx2", "b16x16_w2_k16_v2_avx2", "b32x8_w4_k16_v4_avx2",
       "b64x1_w8_k64_v4_avx2", "b64x4_w4_k32_v4_avx2", "b128x1_w4_k64_v4_avx2"}};
  /* On a CPU device with AVX2 and FMA, the same kernels built for them
   * (tune_builtin_avx2.c) replace the portable build's, which they beat
   * (wider vectors, fused multiply-adds): named apart, so that their kernel
   * ids, the candidate set and its cache entries differ. */
  const bool cpu = ruda_client_device(c).type_id == RUDA_DEVICE_TYPE_CPU;
  int wide = 0;
  ruda_kernel_desc_t descs[PORTABLE];
  if (cpu && ruda__tune_have_avx2() &&
      ruda__tune_matmul_avx2_descs(descs, PORTABLE) == PORTABLE) {
    wide = 1;
    for (size_t i = 0; i < PORTABLE && !st; i++) {
      descs[i].name = names[1][i];
      st = ruda_kernel_create(&descs[i], &built[i]);
    }
  } else {
    st = RUDA_KERNEL_CREATE(tuned_mm_b16x16_w1_k16, &built[0]);
    if (!st) st = RUDA_KERNEL_CREATE(tuned_mm_b16x16_w2_k16_v2, &built[1]);
    if (!st) st = RUDA_KERNEL_CREATE(tuned_mm_b32x8_w4_k16_v4, &built[2]);
    if (!st) st = RUDA_KERNEL_CREATE(tuned_mm_b64x1_w8_k64_v4, &built[3]);
    if (!st) st = RUDA_KERNEL_CREATE(tuned_mm_b64x4_w4_k32_v4, &built[4]);
    if (!st) st = RUDA_KERNEL_CREATE(tuned_mm_b128x1_w4_k64_v4, &built[5]);
  }
  /* The candidates: first the default (candidate 0, run when autotuning
   * is off, and the reference the others are checked against), then the
   * others. On other devices the six tiled kernels, the 16 x 16 tile the
   * default. On a CPU one tiled kernel, the one with long rows, as the
   * default: of the six it is the fastest there, and it is what remains
   * should the register-blocked ones not compile (no C compiler). Every
   * candidate, the reference first, runs once when a key is tuned: a CPU
   * keeps none that only loses. Then the register-blocked ones. */
  enum { CPU_TILED = 1 };
  static const size_t cpu_tiled[CPU_TILED] = {3};
  const char *cn[MAX];
  ruda_kernel_t *ck[MAX] = {0};
  const void *cp[MAX];
  size_t n = 0;
  for (size_t i = 0; i < (cpu ? CPU_TILED : PORTABLE) && !st; i++) {
    size_t t = cpu ? cpu_tiled[i] : i;
    cn[n] = names[wide][t];
    ck[n] = built[t];
    cp[n++] = &k_mm[t];
  }
  const mu_shape_t *mu = cpu ? k_mu_cpu : k_mu_gpu;
  const mm_param_t *mp = cpu ? k_mu_cpu_param : k_mu_gpu_param;
  for (size_t i = 0; i < (cpu ? NUM_MU_CPU : NUM_MU_GPU) && !st; i++) {
    st = make_micro(&mu[i], cpu, &ck[n]);
    cn[n] = mu[i].name;
    cp[n++] = &mp[i];
  }
  /* On GPUs, last, the register-blocked tiled kernels
   * (kernels/matmul_regs_body.h). Not on a CPU, nor on an OpenCL device
   * of CPU cores (PoCL): there their accumulators live in memory, they
   * lose, and each costs seconds of tuning at 1024 cubed. */
  const ruda_device_properties_t *props = ruda_client_properties(c);
  const bool gpu = !cpu && props && props->hardware.num_cpu_cores == 0;
  enum { RG = 6 };
  static const mm_param_t k_rg_param[RG] = {{128, 128}, {128, 128}, {128, 64},
                                            {64, 64},   {64, 64},   {128, 64}};
  static const char *const rg_names[RG] = {"r16x16_t8x8_k8", "r16x16_t8x8_k8_rolled",
                                           "r16x16_t8x4_k16", "r16x16_t4x4_k16",
                                           "r8x8_t8x8_k8",    "r8x16_t8x8_k8"};
  const ruda_kernel_desc_t rg[RG] = {
      RUDA_KERNEL_DESC(tuned_mm_r16x16_t8x8_k8), RUDA_KERNEL_DESC(tuned_mm_r16x16_t8x8_k8_rolled),
      RUDA_KERNEL_DESC(tuned_mm_r16x16_t8x4_k16), RUDA_KERNEL_DESC(tuned_mm_r16x16_t4x4_k16),
      RUDA_KERNEL_DESC(tuned_mm_r8x8_t8x8_k8),    RUDA_KERNEL_DESC(tuned_mm_r8x16_t8x8_k8)};
  for (size_t i = 0; i < (gpu ? RG : 0) && !st; i++) {
    st = ruda_kernel_create(&rg[i], &ck[n]);
    cn[n] = rg_names[i];
    cp[n++] = &k_rg_param[i];
  }
  if (!st) {
    static const ruda_tune_dim_t dims[3] = {{"m", 2}, {"n", 2}, {"k", 2}};
    static const op_spec_t spec = {OP_MATMUL, mm_count, NULL, NULL, 0, dims, 3,
                                   {RUDA_TUNE_READ, RUDA_TUNE_READ, RUDA_TUNE_WRITE}, 1e-3};
    st = create_op(c, &spec, cn, ck, cp, n, out);
  }
  release_all(built, PORTABLE);
  for (size_t i = 0; i < n; i++)
    if (i >= (cpu ? CPU_TILED : PORTABLE)) ruda_kernel_release(ck[i]);
  return st;
}

static ruda_status_t make_sum(ruda_client_t *c, ruda_tune_op_t **out) {
  enum { NUM = 12 };
  ruda_kernel_t *k[NUM] = {0};
  ruda_status_t st = RUDA_KERNEL_CREATE(tuned_sum_u64_part, &k[0]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u256_atomic, &k[1]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u256_part, &k[2]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u64_atomic, &k[3]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u256_part, &k[4]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u16_l16_part, &k[5]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u16_l16_part, &k[6]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u64_l16_part, &k[7]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u256_i8_part, &k[8]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u256_i8_part, &k[9]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u256_i8_atomic, &k[10]);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_sum_u256_i4_part, &k[11]);
  if (st) {
    release_all(k, NUM);
    return st;
  }
  static const char *const names[NUM] = {
      "u64_e64_2pass",   "u256_e16_1pass",        "u256_e64_2pass",        "u64_e1024_1pass",
      "u256_e256_2pass", "u16_l16_e4096_2pass", "u16_l16_e16384_2pass", "u64_l16_e1024_2pass",
      "u256_i8_e128_2pass", "u256_i8_e32_2pass", "u256_i8_e64_1pass", "u256_i4_e64_2pass"};
  static const ruda_tune_dim_t dims[1] = {{"n", 2}};
  static const op_spec_t spec = {OP_SUM, NULL, sum_launch, k_sum, sizeof k_sum[0], dims, 1,
                                 {RUDA_TUNE_READ, RUDA_TUNE_WRITE, RUDA_TUNE_WORKSPACE}, 1e-3};
  st = create_op(c, &spec, names, k, NULL, NUM, out);
  release_all(k, NUM);
  return st;
}

static ruda_status_t make_triad(ruda_client_t *c, ruda_tune_op_t **out) {
  ruda_kernel_t *k64 = NULL, *k256 = NULL;
  ruda_status_t st = RUDA_KERNEL_CREATE(tuned_triad_u64, &k64);
  if (!st) st = RUDA_KERNEL_CREATE(tuned_triad_u256, &k256);
  if (st) {
    ruda_kernel_release(k64);
    ruda_kernel_release(k256);
    return st;
  }
  static const char *const names[5] = {"u256_c4k", "u256_c16k", "u64_c64k", "u256_c256k",
                                       "u64_c1m"};
  ruda_kernel_t *const ks[5] = {k256, k256, k64, k256, k64};
  static const ruda_tune_dim_t dims[1] = {{"n", 2}};
  static const op_spec_t spec = {OP_TRIAD, NULL, triad_launch, k_triad, sizeof k_triad[0], dims,
                                 1, {RUDA_TUNE_WRITE, RUDA_TUNE_READ, RUDA_TUNE_READ}, 0};
  st = create_op(c, &spec, names, ks, NULL, 5, out);
  ruda_kernel_release(k64);
  ruda_kernel_release(k256);
  return st;
}

/* ---- the registry: one operation of each kind per device ---- */

enum { MAX_TYPES = 4, MAX_INDEX = 64 };
static _Atomic(ruda_tune_op_t *) g_ops[NUM_OPS][MAX_TYPES][MAX_INDEX];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static ruda_status_t op_for(ruda_client_t *c, int which, ruda_tune_op_t **out) {
  ruda_device_id_t dev = ruda_client_device(c);
  if (dev.type_id >= MAX_TYPES || dev.index_id >= MAX_INDEX)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: the tuned operations run on devices of types below %d and "
                              "indices below %d",
                              k_op_names[which], MAX_TYPES, MAX_INDEX);
  _Atomic(ruda_tune_op_t *) *slot = &g_ops[which][dev.type_id][dev.index_id];
  ruda_tune_op_t *op = atomic_load_explicit(slot, memory_order_acquire);
  if (op) {
    *out = op;
    return NULL;
  }
  pthread_mutex_lock(&g_lock);
  ruda_status_t st = NULL;
  op = atomic_load_explicit(slot, memory_order_relaxed);
  if (!op && !g_sum_final) st = RUDA_KERNEL_CREATE(tuned_sum_u256_i8_part, &g_sum_final);
  if (!op && !st) {
    st = which == OP_MATMUL ? make_matmul(c, &op) : which == OP_SUM ? make_sum(c, &op)
                                                                    : make_triad(c, &op);
    if (!st) atomic_store_explicit(slot, op, memory_order_release);
  }
  pthread_mutex_unlock(&g_lock);
  *out = op;
  return st;
}

ruda_status_t ruda_tune_builtin_op(ruda_client_t *client, const char *name, ruda_tune_op_t **out) {
  if (out) *out = NULL;
  if (!client || !name || !out)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_tune_builtin_op: NULL argument");
  for (int i = 0; i < NUM_OPS; i++)
    if (strcmp(name, k_op_names[i]) == 0) return op_for(client, i, out);
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "ruda_tune_builtin_op: no tuned operation '%s' (there are "
                            "matmul_f32, sum_f32 and triad_f32)",
                            name);
}

static ruda_status_t need(const char *fn, const char *what, const ruda_handle_t *h, uint64_t bytes) {
  if (!h) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  uint64_t have = ruda_handle_size_in_used(h);
  if (have < bytes)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: %s holds %llu bytes; the sizes need %llu", fn, what,
                              (unsigned long long)have, (unsigned long long)bytes);
  return NULL;
}

/* a * b * 4 bytes, or false on overflow. */
static bool bytes_of(uint64_t a, uint64_t b, uint64_t *out) {
  if (a && b > UINT64_MAX / 4 / a) return false;
  *out = a * b * 4;
  return true;
}

ruda_status_t ruda_tune_matmul_f32(ruda_client_t *client, const ruda_handle_t *a,
                                   const ruda_handle_t *b, const ruda_handle_t *c, uint64_t m,
                                   uint64_t n, uint64_t k) {
  static const char fn[] = "ruda_tune_matmul_f32";
  if (!client) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: client is NULL", fn);
  if (m == 0 || n == 0 || k == 0 || m > UINT32_MAX || n > UINT32_MAX || k > UINT32_MAX)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: m, n and k must be 1 to 2^32-1 (m=%llu n=%llu k=%llu)", fn,
                              (unsigned long long)m, (unsigned long long)n, (unsigned long long)k);
  uint64_t ab, bb, cb;
  if (!bytes_of(m, k, &ab) || !bytes_of(k, n, &bb) || !bytes_of(m, n, &cb))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: the sizes overflow 64 bits", fn);
  ruda_status_t st = need(fn, "a", a, ab);
  if (!st) st = need(fn, "b", b, bb);
  if (!st) st = need(fn, "c", c, cb);
  if (st) return st;
  ruda_tune_op_t *op;
  st = op_for(client, OP_MATMUL, &op);
  if (st) return st;
  ruda_handle_t bufs[3] = {*a, *b, *c};
  uint64_t w[3] = {m, n, k};
  ruda_tune_args_t args = {bufs, 3, w, 3, w, 3};
  return ruda_tune_op_launch(op, client, &args);
}

/* The checks of a call over vectors of n floats: the client, n, and that
 * each of `bufs` (buffer i named by the letter names[i]) holds n floats. */
static ruda_status_t check_vectors(const char *fn, ruda_client_t *client, uint64_t n,
                                   const ruda_handle_t *const *bufs, const char *names) {
  if (!client) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: client is NULL", fn);
  uint64_t bytes;
  if (n == 0 || !bytes_of(n, 1, &bytes))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: n must be 1 to 2^62 (n=%llu)", fn,
                              (unsigned long long)n);
  for (size_t i = 0; names[i]; i++) {
    char what[2] = {names[i], '\0'};
    ruda_status_t st = need(fn, what, bufs[i], bytes);
    if (st) return st;
  }
  return NULL;
}

ruda_status_t ruda_tune_sum_f32(ruda_client_t *client, const ruda_handle_t *x,
                                const ruda_handle_t *out, uint64_t n) {
  static const char fn[] = "ruda_tune_sum_f32";
  ruda_tune_op_t *op;
  const ruda_handle_t *v[1] = {x};
  ruda_status_t st = check_vectors(fn, client, n, v, "x");
  if (!st) st = need(fn, "out", out, 4);
  if (!st) st = op_for(client, OP_SUM, &op);
  if (st) return st;
  uint64_t parts = (n + SUM_MIN_TWO_PASS_CHUNK - 1) / SUM_MIN_TWO_PASS_CHUNK;
  ruda_handle_t work;
  /* From the stream's pool: a buffer of this size released by an earlier
   * call comes back without a heap allocation. */
  st = ruda_client_empty(client, parts * sizeof(float), &work);
  if (st) return st;
  ruda_handle_t bufs[3] = {*x, *out, work};
  ruda_tune_args_t args = {bufs, 3, NULL, 0, &n, 1};
  st = ruda_tune_op_launch(op, client, &args);
  ruda_handle_release(&work);
  return st;
}

ruda_status_t ruda_tune_triad_f32(ruda_client_t *client, const ruda_handle_t *a,
                                  const ruda_handle_t *b, const ruda_handle_t *c, float s,
                                  uint64_t n) {
  ruda_tune_op_t *op;
  const ruda_handle_t *v[3] = {a, b, c};
  ruda_status_t st = check_vectors("ruda_tune_triad_f32", client, n, v, "abc");
  if (!st) st = op_for(client, OP_TRIAD, &op);
  if (st) return st;
  uint64_t sw = 0;
  memcpy(&sw, &s, sizeof s);
  ruda_handle_t bufs[3] = {*a, *b, *c};
  ruda_tune_args_t args = {bufs, 3, &sw, 1, &n, 1};
  return ruda_tune_op_launch(op, client, &args);
}
