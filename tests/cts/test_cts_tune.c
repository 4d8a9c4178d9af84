/* The autotuner (ruda/tune.h) on every backend: tuned operations compute
 * the right result, a failing or wrong candidate is never chosen, tuning
 * leaves the caller's data alone, pin and off work (the runs with
 * RUDA_AUTOTUNE_LEVEL=off and RUDA_AUTOTUNE_PIN, tests/CMakeLists.txt),
 * bad input is refused naming what is wrong. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cts.h"
#include "cts_matmul_data.h"
#include "test_kernel.h"
#include "cts_tune_kernels.h"
#include "tune/tune_internal.h"

/* A tune cache of this program's own, unless the backend's run names a
 * cache directory (PoCL's, which keeps its compiled kernels). */
__attribute__((constructor)) static void private_cache(void) {
  if (getenv("RUDA_CACHE_DIR")) return;
  const char *tmp = getenv("RUDA_TEST_TMP");
  char dir[512];
  snprintf(dir, sizeof dir, "%s/tune-cts-%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  setenv("RUDA_CACHE_DIR", dir, 1);
}

static ruda_status_t double_count(const ruda_tune_args_t *args, const void *param,
                                  ruda_count_t *out) {
  (void)param;
  uint64_t n = args->sizes[0];
  *out = ruda_count_static((uint32_t)((n + 1023) / 1024), 1, 1);
  return NULL;
}

static ruda_status_t refuse_count(const ruda_tune_args_t *args, const void *param,
                                  ruda_count_t *out) {
  (void)args;
  (void)param;
  (void)out;
  return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "this candidate always refuses");
}

/* Candidate i's measured time, ns: the wrong and refusing ones would be the
 * fastest, then "u128" (index 1). */
static double fake_times(const char *op, const char *cand, uint32_t rep) {
  (void)op;
  (void)rep;
  if (strcmp(cand, "wrong") == 0 || strcmp(cand, "refuses") == 0 || strcmp(cand, "huge") == 0 ||
      strcmp(cand, "faults") == 0)
    return 10;
  if (strcmp(cand, "u128") == 0) return 100;
  return 1000;
}

typedef struct fixture {
  ruda_kernel_t *k[6];
  ruda_tune_candidate_t c[7];
} fixture_t;

/* A kernel that fails on the device: on the CPU it reports a failure, on
 * OpenCL and CUDA its source does not compile (at its launch). */
static ruda_kernel_t *failing_kernel(void) {
  if (cts_is_cpu()) return cts_kernel_fail();
  ruda_kernel_code_t code[2] = {
      ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, "__kernel void broken( { syntax error"),
      ruda_kernel_code_text(RUDA_KERNEL_FORMAT_CUDA_C, "extern \"C\" __global__ void broken( {")};
  ruda_kernel_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "broken";
  d.ruda_dim = ruda_dim_new_3d(64, 1, 1);
  d.code = code;
  d.num_code = 2;
  return cts_kernel_from(d);
}

static void fixture_make(fixture_t *f, bool with_bad) {
  memset(f, 0, sizeof *f);
  ASSERT_OK(RUDA_KERNEL_CREATE(tune_double_u64, &f->k[0]));
  ASSERT_OK(RUDA_KERNEL_CREATE(tune_double_u128, &f->k[1]));
  ASSERT_OK(RUDA_KERNEL_CREATE(tune_double_units, &f->k[2]));
  ASSERT_OK(RUDA_KERNEL_CREATE(tune_double_wrong, &f->k[3]));
  /* Over the device's shared memory: refused at launch. */
  ruda_kernel_desc_t d = RUDA_KERNEL_DESC(tune_double_u64);
  d.shared_mem_bytes = (uint64_t)1 << 40;
  ASSERT_OK(ruda_kernel_create(&d, &f->k[4]));
  f->k[5] = failing_kernel();
  static const char *names[7] = {"u64", "u128", "units", "wrong", "huge", "refuses", "faults"};
  for (int i = 0; i < 7; i++) {
    f->c[i].name = names[i];
    f->c[i].kernel = f->k[i < 5 ? i : i == 5 ? 0 : 5];
    f->c[i].count = i == 5 ? refuse_count : double_count;
  }
  (void)with_bad;
}

static void fixture_free(fixture_t *f) {
  for (int i = 0; i < 6; i++) ruda_kernel_release(f->k[i]);
}

static const ruda_tune_dim_t k_dims[1] = {{"n", 2}};
static const ruda_tune_access_t k_rw[1] = {RUDA_TUNE_READ_WRITE};

/* Operation names of this process: "<base>_<pid>", so that test programs
 * sharing a cache directory (the PoCL runs share one, for its compiled
 * kernels) never read each other's entries; the plain base name in the
 * runs with a pin, which names it. Removed from the cache at exit. */
static char g_names[8][64];
static size_t g_num_names;

static const char *op_name(const char *base) {
  if (ruda_config_get()->autotune.pin[0]) return base;
  for (size_t i = 0; i < g_num_names; i++)
    if (strncmp(g_names[i], base, strlen(base)) == 0 && g_names[i][strlen(base)] == '_')
      return g_names[i];
  if (g_num_names == 8) return base;
  snprintf(g_names[g_num_names], sizeof g_names[0], "%s_%ld", base, (long)getpid());
  return g_names[g_num_names++];
}

static bool remove_ours(const ruda_tune_entry_info_t *e, void *ctx) {
  (void)ctx;
  for (size_t i = 0; i < g_num_names; i++)
    if (strcmp(e->op, g_names[i]) == 0) unlink(e->file);
  return true;
}

__attribute__((destructor)) static void remove_our_entries(void) {
  if (g_num_names) ruda_status_free(ruda_tune_cache_list(remove_ours, NULL));
}

/* An operation over one f32 buffer x (dim "n"), read and written, its
 * candidates checked exactly against the first. */
static ruda_tune_op_desc_t desc_for(const char *name, const ruda_tune_candidate_t *cands,
                                    size_t n) {
  ruda_tune_op_desc_t d = ruda_tune_op_desc_default();
  d.name = op_name(name);
  d.candidates = cands;
  d.num_candidates = n;
  d.dims = k_dims;
  d.num_dims = 1;
  d.access = k_rw;
  d.num_access = 1;
  d.check_reference = 0;
  d.check_elem = RUDA_ELEM_F32;
  d.check_rtol = 0;
  d.check_atol = 0;
  return d;
}

static ruda_tune_op_desc_t desc_of(fixture_t *f, const char *name, size_t n) {
  return desc_for(name, f->c, n);
}

static ruda_handle_t make_input(ruda_client_t *c, float *host, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) host[i] = (float)(i % 97) - 40.0f;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, host, n * 4, &h));
  return h;
}

TEST(tune_result_right_and_bad_candidates_never_chosen) {
  ruda_client_t *c = cts_client();
  const ruda_config_t *cfg = ruda_config_get();
  fixture_t f;
  fixture_make(&f, true);
  ruda_tune_op_desc_t d = desc_of(&f, "cts_double", 7);
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  ruda__tune_set_timer(fake_times);
  enum { N = 5000 };
  static float host[N], back[N];
  ruda_handle_t x = make_input(c, host, N);
  uint64_t n = N;
  ruda_tune_args_t args = {&x, 1, &n, 1, &n, 1};
  size_t idx = 99;
  const char *name = NULL;
  ASSERT_OK(ruda_tune_op_select(op, c, &args, &idx, &name));
  /* Tuning ran every candidate on a scratch copy: x is unchanged. */
  ASSERT_OK(ruda_client_read(c, &x, back, sizeof back));
  ASSERT_MEM_EQ(back, host, sizeof back);
  if (cfg->autotune.level == RUDA_AUTOTUNE_OFF && !cfg->autotune.pin[0]) {
    ASSERT_STR_EQ(name, "u64"); /* the default candidate */
  } else if (strstr(cfg->autotune.pin, "cts_double=units")) {
    ASSERT_STR_EQ(name, "units");
  } else {
    /* wrong, huge, refuses and faults are "faster" but excluded; u128
     * wins. */
    ASSERT_STR_EQ(name, "u128");
    ASSERT_UEQ(idx, 1);
  }
  ASSERT_OK(ruda_tune_op_launch(op, c, &args));
  ASSERT_OK(ruda_client_read(c, &x, back, sizeof back));
  for (int i = 0; i < N; i++) ASSERT_DBL_NEAR(back[i], 2.0 * host[i], 0);
  ruda__tune_set_timer(NULL);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  fixture_free(&f);
}

TEST(tune_decision_is_cached_on_disk_and_reused) {
  ruda_client_t *c = cts_client();
  const ruda_config_t *cfg = ruda_config_get();
  if (cfg->autotune.level == RUDA_AUTOTUNE_OFF || cfg->autotune.pin[0])
    SKIP("the tune cache is not used at level off or with a pin");
  fixture_t f;
  fixture_make(&f, false);
  ruda_tune_op_desc_t d = desc_of(&f, "cts_cached", 3);
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  enum { N = 3000 };
  static float host[N], back[N];
  ruda_handle_t x = make_input(c, host, N);
  uint64_t n = N;
  ruda_tune_args_t args = {&x, 1, &n, 1, &n, 1};
  const char *first = NULL, *again = NULL;
  ASSERT_OK(ruda_tune_op_select(op, c, &args, NULL, &first));
  ASSERT_OK(ruda_tune_op_launch(op, c, &args));
  ASSERT_OK(ruda_client_read(c, &x, back, sizeof back));
  for (int i = 0; i < N; i++) ASSERT_DBL_NEAR(back[i], 2.0 * host[i], 0);
  /* A new operation of the same candidates reads the entry: the same
   * winner, whatever the timer says now. */
  ruda_tune_op_t *op2;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op2));
  ruda__tune_set_timer(fake_times);
  ASSERT_OK(ruda_tune_op_select(op2, c, &args, NULL, &again));
  ruda__tune_set_timer(NULL);
  ASSERT_STR_EQ(again, first);
  char dir[1024];
  ASSERT_UGT(ruda_tune_cache_dir(dir, sizeof dir), 0);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  ruda_tune_op_release(op2);
  fixture_free(&f);
}

static ruda_status_t failing_key(const ruda_tune_args_t *args, void *ctx, ruda_tune_key_t *out) {
  (void)args;
  (void)ctx;
  (void)out;
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "the shapes disagree");
}

TEST(tune_bad_input_is_refused_naming_what_is_wrong) {
  ruda_client_t *c = cts_client();
  fixture_t f;
  fixture_make(&f, false);
  ruda_tune_op_t *op = (ruda_tune_op_t *)&f; /* must come back NULL */
  ruda_tune_op_desc_t d = desc_of(&f, "cts_bad", 3);
  ruda_status_t st;
  /* zero candidates */
  d.num_candidates = 0;
  st = ruda_tune_op_create(c, &d, &op);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "zero candidates");
  ASSERT_NULL(op);
  ruda_status_free(st);
  d.num_candidates = 3;
  /* budget 0 */
  d.budget_ms = 0;
  st = ruda_tune_op_create(c, &d, &op);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "budget_ms is 0");
  ruda_status_free(st);
  d.budget_ms = RUDA_TUNE_BUDGET_CONFIG;
  /* NULL desc, NULL op */
  st = ruda_tune_op_create(c, NULL, &op);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "desc");
  ruda_status_free(st);
  uint64_t n = 16;
  ruda_tune_args_t noargs = {NULL, 0, &n, 1, &n, 1};
  st = ruda_tune_op_launch(NULL, c, &noargs);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "NULL op");
  ruda_status_free(st);
  /* a candidate built for another device: code only another backend runs */
  ruda_kernel_code_t code = cts_is_cpu()
                                ? ruda_kernel_code_text(RUDA_KERNEL_FORMAT_OPENCL_C, "__kernel void k(){}")
                                : ruda_kernel_code_cpu((ruda_cpu_kernel_fn)(void (*)(void))abort);
  ruda_kernel_desc_t kd = test_kernel_desc("elsewhere", ruda_dim_new_3d(1, 1, 1), &code);
  ruda_kernel_t *other;
  ASSERT_OK(ruda_kernel_create(&kd, &other));
  ruda_tune_candidate_t saved = f.c[2];
  f.c[2].kernel = other;
  st = ruda_tune_op_create(c, &d, &op);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "built for another device");
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "'units'");
  ASSERT_NULL(op);
  ruda_status_free(st);
  f.c[2] = saved;
  ruda_kernel_release(other);
  /* a key function that fails: the call fails naming the operation, and
   * nothing runs (x unchanged) */
  d.key = failing_key;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  enum { N = 256 };
  static float host[N], back[N];
  ruda_handle_t x = make_input(c, host, N);
  ruda_tune_args_t args = {&x, 1, &n, 1, &n, 1};
  st = ruda_tune_op_launch(op, c, &args);
  const ruda_config_t *cfg = ruda_config_get();
  if (cfg->autotune.level != RUDA_AUTOTUNE_OFF) {
    ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
    ASSERT_STR_CONTAINS(ruda_status_reason(st), "': its key function failed");
    ASSERT_STR_CONTAINS(ruda_status_reason(st), "operation 'cts_bad");
    ASSERT_STR_CONTAINS(ruda_status_reason(st), "the shapes disagree");
    ASSERT_OK(ruda_client_read(c, &x, back, sizeof back));
    ASSERT_MEM_EQ(back, host, sizeof back);
  } else {
    ASSERT_OK(st); /* off runs the default candidate without a key */
  }
  ruda_status_free(st);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  fixture_free(&f);
}

TEST(tune_builtin_operations_compute_right_results) {
  ruda_client_t *c = cts_client();
  enum { M = 70, K = 33, NN = 45 };
  static float a[M * K], b[K * NN], cc[M * NN], want[M * NN];
  cts_matmul_data(a, b, want, M, NN, K);
  ruda_handle_t ha, hb, hc;
  ASSERT_OK(ruda_client_create_buffer(c, a, sizeof a, &ha));
  ASSERT_OK(ruda_client_create_buffer(c, b, sizeof b, &hb));
  ASSERT_OK(ruda_client_empty(c, sizeof cc, &hc));
  ASSERT_OK(ruda_tune_matmul_f32(c, &ha, &hb, &hc, M, NN, K));
  ASSERT_OK(ruda_client_read(c, &hc, cc, sizeof cc));
  for (int i = 0; i < M * NN; i++) ASSERT_DBL_NEAR(cc[i], want[i], 1e-3);
  enum { S = 100000 };
  static float x[S], y[S], z[S];
  double sum = 0;
  for (int i = 0; i < S; i++) {
    x[i] = (float)(i % 10) * 0.25f;
    y[i] = 1.0f;
    sum += x[i];
  }
  ruda_handle_t hx, hy, hz, hs;
  ASSERT_OK(ruda_client_create_buffer(c, x, sizeof x, &hx));
  ASSERT_OK(ruda_client_create_buffer(c, y, sizeof y, &hy));
  ASSERT_OK(ruda_client_empty(c, sizeof z, &hz));
  ASSERT_OK(ruda_client_empty(c, 4, &hs));
  ASSERT_OK(ruda_tune_sum_f32(c, &hx, &hs, S));
  float got;
  ASSERT_OK(ruda_client_read(c, &hs, &got, 4));
  ASSERT_DBL_NEAR(got, sum, sum * 1e-4);
  ASSERT_OK(ruda_tune_triad_f32(c, &hz, &hx, &hy, 2.0f, S));
  ASSERT_OK(ruda_client_read(c, &hz, z, sizeof z));
  for (int i = 0; i < S; i++) ASSERT_DBL_NEAR(z[i], x[i] + 2.0f, 0);
  /* bad sizes: refused before anything runs */
  ruda_status_t st = ruda_tune_matmul_f32(c, &ha, &hb, &hc, M + 1, NN, K);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "a holds");
  ruda_status_free(st);
  ruda_tune_op_t *op;
  st = ruda_tune_builtin_op(c, "nope", &op);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "matmul_f32");
  ruda_status_free(st);
  ruda_handle_t hs_[] = {ha, hb, hc, hx, hy, hz, hs};
  for (size_t i = 0; i < sizeof hs_ / sizeof hs_[0]; i++) ruda_handle_release(&hs_[i]);
}

/* Every candidate of the built-in matmul and sum, launched directly: the
 * tuner checks each against the default and never picks a wrong one, so a
 * wrong candidate would otherwise only go unused. The sizes cross the tiles'
 * edges and the register-blocked kernels' k blocks (128 and 256). */
TEST(tune_builtin_every_candidate_computes_right_results) {
  ruda_client_t *c = cts_client();
  enum { M = 70, K = 300, NN = 45 };
  static float a[M * K], b[K * NN], cc[M * NN], want[M * NN];
  cts_matmul_data(a, b, want, M, NN, K);
  ruda_handle_t mm[3];
  ASSERT_OK(ruda_client_create_buffer(c, a, sizeof a, &mm[0]));
  ASSERT_OK(ruda_client_create_buffer(c, b, sizeof b, &mm[1]));
  ASSERT_OK(ruda_client_empty(c, sizeof cc, &mm[2]));
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_builtin_op(c, "matmul_f32", &op));
  uint64_t w[3] = {M, NN, K};
  ruda_tune_args_t args = {mm, 3, w, 3, w, 3};
  size_t micro = 0;
  for (size_t i = 0; i < ruda_tune_op_num_candidates(op); i++) {
    const char *name = ruda_tune_op_candidate_name(op, i);
    if (strncmp(name, "mu_", 3) == 0) micro++;
    memset(cc, 0, sizeof cc);
    ASSERT_OK(ruda_client_write(c, &mm[2], cc, sizeof cc));
    ruda_status_t st = ruda_tune_op_launch_candidate(op, c, &args, i);
    if (st) fprintf(stderr, "matmul_f32 candidate %s: %s\n", name, ruda_status_reason(st));
    ASSERT_OK(st);
    ASSERT_OK(ruda_client_read(c, &mm[2], cc, sizeof cc));
    for (int e = 0; e < M * NN; e++) {
      if (fabs(cc[e] - want[e]) > 1e-3) fprintf(stderr, "matmul_f32 candidate %s\n", name);
      ASSERT_DBL_NEAR(cc[e], want[e], 1e-3);
    }
  }
  ASSERT_TRUE(micro >= 2); /* the register-blocked ones are among them */
  enum { S = 300001 };
  static float x[S];
  double sum = 0;
  for (int i = 0; i < S; i++) {
    x[i] = (float)(i % 10) * 0.25f;
    sum += x[i];
  }
  ruda_handle_t sb[3];
  ASSERT_OK(ruda_client_create_buffer(c, x, sizeof x, &sb[0]));
  ASSERT_OK(ruda_client_empty(c, 4, &sb[1]));
  ASSERT_OK(ruda_client_empty(c, (S / 4096 + 1) * 4, &sb[2]));
  ASSERT_OK(ruda_tune_builtin_op(c, "sum_f32", &op));
  uint64_t n = S;
  ruda_tune_args_t sargs = {sb, 3, NULL, 0, &n, 1};
  for (size_t i = 0; i < ruda_tune_op_num_candidates(op); i++) {
    const char *name = ruda_tune_op_candidate_name(op, i);
    ASSERT_OK(ruda_tune_op_launch_candidate(op, c, &sargs, i));
    float got;
    ASSERT_OK(ruda_client_read(c, &sb[1], &got, 4));
    if (fabs(got - sum) > sum * 1e-4) fprintf(stderr, "sum_f32 candidate %s: %g\n", name, got);
    ASSERT_DBL_NEAR(got, sum, sum * 1e-4);
  }
  for (size_t i = 0; i < 3; i++) {
    ruda_handle_release(&mm[i]);
    ruda_handle_release(&sb[i]);
  }
}

/* u128's launch is refused at odd sizes, as a device limit would refuse a
 * shape inside its bucket. */
static ruda_status_t even_only_count(const ruda_tune_args_t *args, const void *param,
                                     ruda_count_t *out) {
  if (args->sizes[0] % 2)
    return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "odd sizes are over this candidate's limit");
  return double_count(args, param, out);
}

TEST(tune_cached_winner_refused_at_launch_falls_back_and_is_corrected) {
  ruda_client_t *c = cts_client();
  const ruda_config_t *cfg = ruda_config_get();
  if (cfg->autotune.level == RUDA_AUTOTUNE_OFF || cfg->autotune.pin[0])
    SKIP("no tuning at level off or with a pin");
  fixture_t f;
  fixture_make(&f, false);
  f.c[1].count = even_only_count;
  ruda_tune_op_desc_t d = desc_of(&f, "cts_fallback", 3);
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  ruda__tune_set_timer(fake_times);
  enum { N = 4096 };
  static float host[N], back[N];
  ruda_handle_t x = make_input(c, host, N);
  uint64_t n = N;
  ruda_tune_args_t args = {&x, 1, &n, 1, &n, 1};
  const char *name = NULL;
  ASSERT_OK(ruda_tune_op_select(op, c, &args, NULL, &name));
  ASSERT_STR_EQ(name, "u128");
  /* 4095 is in the same bucket; u128 refuses it: the next candidate runs,
   * the caller sees no error. */
  n = N - 1;
  ASSERT_OK(ruda_tune_op_launch(op, c, &args));
  ASSERT_OK(ruda_client_read(c, &x, back, sizeof back));
  for (int i = 0; i < N - 1; i++) ASSERT_DBL_NEAR(back[i], 2.0 * host[i], 0);
  ASSERT_DBL_NEAR(back[N - 1], host[N - 1], 0);
  /* The decision is corrected, in memory and in the cache. */
  n = N;
  ASSERT_OK(ruda_tune_op_select(op, c, &args, NULL, &name));
  ASSERT_STR_EQ(name, "u64");
  ruda_tune_op_t *op2;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op2));
  ASSERT_OK(ruda_tune_op_select(op2, c, &args, NULL, &name));
  ASSERT_STR_EQ(name, "u64");
  ruda__tune_set_timer(NULL);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  ruda_tune_op_release(op2);
  fixture_free(&f);
}

static atomic_int g_first_reps;

static double counting_times(const char *op, const char *cand, uint32_t rep) {
  if (strcmp(op, op_name("cts_threads")) == 0 && strcmp(cand, "u64") == 0 && rep == 0)
    atomic_fetch_add(&g_first_reps, 1);
  return fake_times(op, cand, rep);
}

typedef struct race {
  ruda_tune_op_t *op;
  ruda_tune_args_t *args;
  const char *name;
  ruda_status_t st;
} race_t;

static void *race_select(void *arg) {
  race_t *r = arg;
  r->st = ruda_tune_op_select(r->op, cts_client(), r->args, NULL, &r->name);
  return NULL;
}

TEST(tune_threads_making_the_first_call_tune_the_key_once) {
  ruda_client_t *c = cts_client();
  const ruda_config_t *cfg = ruda_config_get();
  if (cfg->autotune.level == RUDA_AUTOTUNE_OFF || cfg->autotune.pin[0])
    SKIP("no tuning at level off or with a pin");
  fixture_t f;
  fixture_make(&f, false);
  ruda_tune_op_desc_t d = desc_of(&f, "cts_threads", 3);
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  ruda__tune_set_timer(counting_times);
  atomic_store(&g_first_reps, 0);
  enum { N = 2048, T = 4 };
  static float host[N];
  ruda_handle_t x = make_input(c, host, N);
  uint64_t n = N;
  ruda_tune_args_t args = {&x, 1, &n, 1, &n, 1};
  pthread_t th[T];
  race_t r[T];
  for (int i = 0; i < T; i++) {
    r[i] = (race_t){op, &args, NULL, NULL};
    ASSERT_EQ(pthread_create(&th[i], NULL, race_select, &r[i]), 0);
  }
  for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
  ruda__tune_set_timer(NULL);
  for (int i = 0; i < T; i++) {
    ASSERT_OK(r[i].st);
    ASSERT_STR_EQ(r[i].name, "u128"); /* every thread got the one decision */
  }
  ASSERT_EQ(atomic_load(&g_first_reps), 1);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  fixture_free(&f);
}

/* The key: sizes[1], kept exact (the buffer's size is sizes[0]). */
static ruda_status_t second_size_key(const ruda_tune_args_t *args, void *ctx,
                                     ruda_tune_key_t *out) {
  (void)ctx;
  if (args->num_sizes < 2) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "two sizes needed");
  out->len = 1;
  out->v[0] = args->sizes[1];
  return NULL;
}

typedef struct reader {
  ruda_tune_op_t *op;
  ruda_handle_t *x;
  atomic_int *stop;
  int wrong;
  ruda_status_t st;
} reader_t;

static void *read_decided(void *arg) {
  reader_t *r = arg;
  uint64_t sizes[2] = {1024, 0};
  ruda_tune_args_t args = {r->x, 1, sizes, 1, sizes, 2};
  while (!atomic_load(r->stop) && !r->st) {
    const char *name = NULL;
    r->st = ruda_tune_op_select(r->op, cts_client(), &args, NULL, &name);
    if (!r->st && strcmp(name, "u128") != 0) r->wrong++;
  }
  return NULL;
}

/* Calls on a decided key read the table without a lock while another
 * thread tunes 40 more keys (the table grows twice): every read finds the
 * decision. */
TEST(tune_hits_read_the_table_while_it_grows) {
  ruda_client_t *c = cts_client();
  const ruda_config_t *cfg = ruda_config_get();
  if (cfg->autotune.level == RUDA_AUTOTUNE_OFF || cfg->autotune.pin[0])
    SKIP("no tuning at level off or with a pin");
  fixture_t f;
  fixture_make(&f, false);
  static const ruda_tune_dim_t exact[1] = {{"variant", 0}};
  ruda_tune_op_desc_t d = desc_of(&f, "cts_grow", 3);
  d.key = second_size_key;
  d.dims = exact;
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  ruda__tune_set_timer(fake_times);
  static float host[1024];
  ruda_handle_t x = make_input(c, host, 1024);
  uint64_t sizes[2] = {1024, 0};
  ruda_tune_args_t args = {&x, 1, sizes, 1, sizes, 2};
  ASSERT_OK(ruda_tune_op_select(op, c, &args, NULL, NULL));
  atomic_int stop = 0;
  pthread_t th[2];
  reader_t rd[2];
  for (int i = 0; i < 2; i++) {
    rd[i] = (reader_t){op, &x, &stop, 0, NULL};
    ASSERT_EQ(pthread_create(&th[i], NULL, read_decided, &rd[i]), 0);
  }
  for (uint64_t k = 1; k <= 40; k++) {
    sizes[1] = k;
    const char *name = NULL;
    ASSERT_OK(ruda_tune_op_select(op, c, &args, NULL, &name));
    ASSERT_STR_EQ(name, "u128");
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 2; i++) {
    pthread_join(th[i], NULL);
    ASSERT_OK(rd[i].st);
    ASSERT_EQ(rd[i].wrong, 0);
  }
  ruda__tune_set_timer(NULL);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  fixture_free(&f);
}

/* One kernel text compiled with different constants (ruda_kernel_from_text
 * with -D options) gives candidates too: three of them here, differing in
 * units per ruda and elements per ruda. */
typedef struct chunk_param {
  uint64_t chunk;
} chunk_param_t;

static ruda_status_t chunk_count(const ruda_tune_args_t *args, const void *param,
                                 ruda_count_t *out) {
  const chunk_param_t *p = param;
  *out = ruda_count_static((uint32_t)((args->sizes[0] + p->chunk - 1) / p->chunk), 1, 1);
  return NULL;
}

TEST(tune_candidates_from_one_text_with_different_constants) {
  ruda_client_t *c = cts_client();
  static const char text[] =
      "#include <ruda/kernel_dialect.h>\n"
      "RUDA_KERNEL(scale_chunk, RUDA_DIM(UNITS, 1, 1), RUDA_BUFFER(float *restrict, x),\n"
      "            RUDA_SCALAR(uint64_t, n)) {\n"
      "  const uint64_t begin = (uint64_t)ruda_pos.x * CHUNK, end = RUDA_MIN(begin + CHUNK, n);\n"
      "  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) x[i] *= 2.0f;\n"
      "}\n";
  static const char *const opts[3][2] = {{"-DUNITS=64", "-DCHUNK=1024"},
                                         {"-DUNITS=128", "-DCHUNK=4096"},
                                         {"-DUNITS=256", "-DCHUNK=512"}};
  static const chunk_param_t params[3] = {{1024}, {4096}, {512}};
  static const char *const names[3] = {"u64_c1k", "u128_c4k", "u256_c512"};
  ruda_kernel_t *k[3] = {NULL, NULL, NULL};
  ruda_tune_candidate_t cands[3];
  memset(cands, 0, sizeof cands);
  for (int i = 0; i < 3; i++) {
    ruda_kernel_source_t src;
    memset(&src, 0, sizeof src);
    src.options = opts[i];
    src.num_options = 2;
    ruda_status_t st = ruda_kernel_from_text(text, 0, "scale_chunk.c", &src, &k[i]);
    if (ruda_status_kind(st) == RUDA_ERR_UNAVAILABLE) {
      ruda_status_free(st);
      SKIP("no run-time compiler for kernel text on this device");
    }
    ASSERT_OK(st);
    cands[i] = (ruda_tune_candidate_t){names[i], k[i], chunk_count, NULL, NULL, &params[i]};
  }
  ruda_hash128_t h0 = ruda_kernel_hash(k[0]), h1 = ruda_kernel_hash(k[1]);
  ASSERT_TRUE(h0.lo != h1.lo || h0.hi != h1.hi);
  ruda_tune_op_desc_t d = desc_for("cts_constants", cands, 3);
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  enum { N = 10000 };
  static float host[N], back[N];
  ruda_handle_t x = make_input(c, host, N);
  uint64_t n = N;
  ruda_tune_args_t args = {&x, 1, &n, 1, &n, 1};
  ASSERT_OK(ruda_tune_op_launch(op, c, &args));
  ASSERT_OK(ruda_client_read(c, &x, back, sizeof back));
  for (int i = 0; i < N; i++) ASSERT_DBL_NEAR(back[i], 2.0 * host[i], 0);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  for (int i = 0; i < 3; i++) ruda_kernel_release(k[i]);
}

/* A candidate compiled at run time (kernel text) is compiled by its first
 * launch: that run is not one of its samples. Here the fast candidate is
 * text with a constant no other run used (so it is compiled, not loaded
 * from the disk cache, which takes far longer than the slow candidate's
 * run), the slow one a compiled-in kernel of 2^21 dependent steps (a few ms): the
 * fast one must win, and its result is what the launch leaves. The budget
 * (50 ms) is shorter than the compile, which must not use it up: the fast
 * one is measured more than once (the autotune log line says how often). */
static ruda_status_t one_ruda_count(const ruda_tune_args_t *args, const void *param,
                                    ruda_count_t *out) {
  (void)args;
  (void)param;
  *out = ruda_count_static(1, 1, 1);
  return NULL;
}

TEST(tune_a_first_launch_that_compiles_is_not_a_sample) {
  ruda_client_t *c = cts_client();
  const ruda_config_t *cfg = ruda_config_get();
  if (cfg->autotune.level == RUDA_AUTOTUNE_OFF || cfg->autotune.pin[0])
    SKIP("the default candidate or the pin decides in this run");
  static const char text[] =
      "#include <ruda/kernel_dialect.h>\n"
      "RUDA_KERNEL(scale_fresh, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, x),\n"
      "            RUDA_SCALAR(uint64_t, n)) {\n"
      "  const uint64_t begin = (uint64_t)ruda_pos.x * 1024, end = RUDA_MIN(begin + 1024, n);\n"
      "  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) x[i] *= 2.0f;\n"
      "}\n";
  char salt[64];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(salt, sizeof salt, "-DRUDA_TEST_SALT=%ld_%ld", (long)getpid(), (long)ts.tv_nsec);
  const char *opts[1] = {salt};
  ruda_kernel_source_t src;
  memset(&src, 0, sizeof src);
  src.options = opts;
  src.num_options = 1;
  ruda_kernel_t *fast = NULL, *slow = NULL;
  ruda_status_t st = ruda_kernel_from_text(text, 0, "scale_fresh.c", &src, &fast);
  if (ruda_status_kind(st) == RUDA_ERR_UNAVAILABLE) {
    ruda_status_free(st);
    SKIP("no run-time compiler for kernel text on this device");
  }
  ASSERT_OK(st);
  ASSERT_OK(RUDA_KERNEL_CREATE(tune_spin, &slow));
  static const chunk_param_t chunk = {1024};
  /* fresh_text first: the budget's rounds measure it before the spin. */
  ruda_tune_candidate_t cands[2] = {{"fresh_text", fast, chunk_count, NULL, NULL, &chunk},
                                    {"spin", slow, one_ruda_count, NULL, NULL, NULL}};
  ruda_tune_op_desc_t d = desc_for("cts_fresh", cands, 2);
  d.check_reference = RUDA_TUNE_NO_CHECK; /* the spin leaves x as it was */
  d.budget_ms = 50;
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  enum { N = 4096 };
  static float host[N], back[N];
  ruda_handle_t x = make_input(c, host, N);
  uint64_t n = N;
  ruda_tune_args_t args = {&x, 1, &n, 1, &n, 1};
  size_t idx = 99;
  const char *name = NULL;
  ruda_config_t logged = *cfg;
  char log_path[600];
  snprintf(log_path, sizeof log_path, "%s/tune-fresh-%ld.log", rt_tmpdir(), (long)getpid());
  remove(log_path);
  logged.autotune.logger.level = RUDA_LOG_LEVEL_BASIC;
  snprintf(logged.autotune.logger.file, sizeof logged.autotune.logger.file, "%s", log_path);
  ASSERT_OK(ruda_log_configure(&logged));
  st = ruda_tune_op_select(op, c, &args, &idx, &name);
  ASSERT_OK(ruda_log_configure(NULL));
  ASSERT_OK(st);
  ASSERT_EQ(idx, 0);
  ASSERT_STR_EQ(name, "fresh_text");
  char line[4096] = "";
  FILE *lf = fopen(log_path, "r");
  ASSERT_TRUE(lf != NULL);
  size_t got = fread(line, 1, sizeof line - 1, lf);
  line[got] = '\0';
  fclose(lf);
  remove(log_path);
  const char *fresh = strstr(line, "\"name\":\"fresh_text\"");
  const char *samples = fresh ? strstr(fresh, "\"samples\":") : NULL;
  ASSERT_TRUE(samples != NULL);
  ASSERT_UGT(strtoul(samples + strlen("\"samples\":"), NULL, 10), 1);
  ASSERT_OK(ruda_tune_op_launch(op, c, &args));
  ASSERT_OK(ruda_client_read(c, &x, back, sizeof back));
  for (int i = 0; i < N; i++) ASSERT_DBL_NEAR(back[i], 2.0 * host[i], 0);
  ruda_handle_release(&x);
  ruda_tune_op_release(op);
  ruda_kernel_release(fast);
  ruda_kernel_release(slow);
}
