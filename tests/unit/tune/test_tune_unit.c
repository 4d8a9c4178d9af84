/* The autotuner's parts without a device: keys and buckets, the decision
 * from injected times, the tune cache's files (two processes writing one
 * key, corrupt and truncated files, a version change). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/alloc.h"
#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"
#include "tune/tune_internal.h"

TEST(tune_bucket_rounds_up_to_powers_or_keeps_exact) {
  ASSERT_UEQ(ruda_tune_bucket(1000, 2), 1024);
  ASSERT_UEQ(ruda_tune_bucket(1024, 2), 1024);
  ASSERT_UEQ(ruda_tune_bucket(1025, 2), 2048);
  ASSERT_UEQ(ruda_tune_bucket(1, 2), 1);
  ASSERT_UEQ(ruda_tune_bucket(0, 2), 1);
  ASSERT_UEQ(ruda_tune_bucket(100, 10), 100);
  ASSERT_UEQ(ruda_tune_bucket(101, 10), 1000);
  ASSERT_UEQ(ruda_tune_bucket(1000, 0), 1000); /* exact */
  ASSERT_UEQ(ruda_tune_bucket(1000, 1), 1000);
  ASSERT_UEQ(ruda_tune_bucket(UINT64_MAX - 1, 3), UINT64_MAX); /* saturates */
  ASSERT_UEQ(ruda_tune_alignment_class(0), 64);
  ASSERT_UEQ(ruda_tune_alignment_class(4), 4);
  ASSERT_UEQ(ruda_tune_alignment_class(48), 16);
  ASSERT_UEQ(ruda_tune_alignment_class(4096), 64);
  ASSERT_UEQ(ruda_tune_alignment_class(3), 1);
}

TEST(tune_key_buckets_per_dimension_and_level) {
  ruda_tune_dim_t dims[3] = {{"m", 2}, {"dtype", 0}, {"n", 4}};
  ruda_tune_key_t k = {3, {1000, 7, 17}}, b;
  ruda__tune_bucket_key(&k, dims, 1, &b);
  ASSERT_UEQ(b.len, 3);
  ASSERT_UEQ(b.v[0], 1024);
  ASSERT_UEQ(b.v[1], 7);
  ASSERT_UEQ(b.v[2], 64);
  ruda__tune_bucket_key(&k, dims, 2, &b); /* minimal: bases squared */
  ASSERT_UEQ(b.v[0], 1024);
  ASSERT_UEQ(b.v[1], 7);
  ASSERT_UEQ(b.v[2], 256);
  k.v[0] = 1100;
  ruda__tune_bucket_key(&k, dims, 2, &b);
  ASSERT_UEQ(b.v[0], 4096);
  ASSERT_EQ(ruda__tune_plan(RUDA_AUTOTUNE_MINIMAL).reps, 3);
  ASSERT_EQ(ruda__tune_plan(RUDA_AUTOTUNE_BALANCED).reps, 5);
  ASSERT_EQ(ruda__tune_plan(RUDA_AUTOTUNE_FULL).reps, 10);
  ASSERT_FALSE(ruda__tune_plan(RUDA_AUTOTUNE_FULL).early_drop);
}

static char g_dir[512];

static const char *tmp_dir(void) {
  snprintf(g_dir, sizeof g_dir, "%s/tune-unit-%ld", rt_tmpdir(), (long)getpid());
  mkdir(g_dir, 0755);
  return g_dir;
}

/* A tune cache of this program's own. */
__attribute__((constructor)) static void private_cache(void) {
  char dir[512];
  const char *tmp = getenv("RUDA_TEST_TMP");
  snprintf(dir, sizeof dir, "%s/tune-unit-cache-%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  setenv("RUDA_CACHE_DIR", dir, 1);
}

static void noop_kernel(const ruda_cpu_kernel_ctx_t *ctx) { (void)ctx; }

static ruda_status_t one(const ruda_tune_args_t *a, const void *p, ruda_count_t *out) {
  (void)a;
  (void)p;
  *out = ruda_count_static(1, 1, 1);
  return NULL;
}

static bool grab_file(const ruda_tune_entry_info_t *e, void *ctx) {
  if (strcmp(e->op, "unit_versioned") == 0) snprintf(ctx, 700, "%s", e->file);
  return true;
}

TEST(tune_entry_of_another_version_is_ignored_then_replaced) {
  ruda_client_t *c;
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ASSERT_OK(ruda_client_create(cpu, &c));
  ruda_kernel_code_t code = ruda_kernel_code_cpu(noop_kernel);
  ruda_kernel_desc_t kd = test_kernel_desc("noop", ruda_dim_new_3d(1, 1, 1), &code);
  ruda_kernel_t *k;
  ASSERT_OK(ruda_kernel_create(&kd, &k));
  ruda_tune_candidate_t cands[2] = {{"first", k, one, NULL, NULL, NULL},
                                    {"second", k, one, NULL, NULL, NULL}};
  ruda_tune_dim_t dims[1] = {{"n", 2}};
  ruda_tune_op_desc_t d = ruda_tune_op_desc_default();
  d.name = "unit_versioned";
  d.candidates = cands;
  d.num_candidates = 2;
  d.dims = dims;
  d.num_dims = 1;
  ruda_tune_op_t *op;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op));
  uint64_t n = 100;
  ruda_tune_args_t args = {NULL, 0, NULL, 0, &n, 1};
  ASSERT_OK(ruda_tune_op_launch(op, c, &args));
  char file[700] = "";
  ASSERT_OK(ruda_tune_cache_list(grab_file, file));
  ASSERT_TRUE(file[0] != '\0');
  /* The entry now claims another version (and a winner the timing would
   * not pick): a new operation ignores it, tunes, and replaces it. */
  ruda__tune_record_t r;
  ASSERT_EQ(ruda__tune_cache_read(file, &r), 1);
  strcpy(r.version, "0.0.1-old");
  strcpy(r.rank[0], "second");
  strcpy(r.scores, "stale");
  char dir[600];
  snprintf(dir, sizeof dir, "%s", file);
  *strrchr(dir, '/') = '\0';
  /* The compile cache's policy: the folder is the user's alone (0700),
   * and so is every entry (0600). */
  struct stat fst, dst;
  ASSERT_EQ(stat(dir, &dst), 0);
  ASSERT_EQ(stat(file, &fst), 0);
  ASSERT_EQ((int)(dst.st_mode & 0777), 0700);
  ASSERT_EQ((int)(fst.st_mode & 0777), 0600);
  ASSERT_TRUE(ruda__tune_cache_write(dir, file, &r));
  ASSERT_EQ(stat(file, &fst), 0);
  ASSERT_EQ((int)(fst.st_mode & 0777), 0600);
  ruda_tune_op_t *op2;
  ASSERT_OK(ruda_tune_op_create(c, &d, &op2));
  ASSERT_OK(ruda_tune_op_launch(op2, c, &args));
  ASSERT_EQ(ruda__tune_cache_read(file, &r), 1);
  ASSERT_STR_EQ(r.version, ruda_version_string());
  ASSERT_TRUE(strcmp(r.scores, "stale") != 0);
  /* export, clear, import: the entry comes back whole */
  char exp[700];
  snprintf(exp, sizeof exp, "%s/exported.txt", tmp_dir());
  size_t count = 0, removed = 0;
  ASSERT_OK(ruda_tune_cache_export(exp, &count));
  ASSERT_UGE(count, 1);
  ASSERT_OK(ruda_tune_cache_clear(&removed));
  ASSERT_UEQ(removed, count);
  ASSERT_EQ(ruda__tune_cache_read(file, &r), 0);
  ASSERT_OK(ruda_tune_cache_import(exp, &count));
  ASSERT_EQ(ruda__tune_cache_read(file, &r), 1);
  /* a truncated export imports nothing */
  FILE *f = fopen(exp, "r+");
  ASSERT_NOT_NULL(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fclose(f);
  ASSERT_EQ(truncate(exp, len - 5), 0);
  ASSERT_OK(ruda_tune_cache_clear(NULL));
  ruda_status_t st = ruda_tune_cache_import(exp, &count);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_IO_UNKNOWN);
  ASSERT_STR_CONTAINS(ruda_status_reason(st), "nothing was imported");
  ruda_status_free(st);
  ASSERT_EQ(ruda__tune_cache_read(file, &r), 0);
  ruda_tune_op_release(op);
  ruda_tune_op_release(op2);
  ruda_kernel_release(k);
  ruda_client_release(c);
}

static void fill(ruda__tune_result_t *r, const double *v, uint32_t n) {
  memset(r, 0, sizeof *r);
  memcpy(r->samples, v, n * sizeof v[0]);
  r->num_samples = n;
}

TEST(tune_decision_from_injected_times_is_deterministic) {
  ruda__tune_result_t r[5];
  const double a[5] = {100, 101, 300, 99, 102};  /* one outlier */
  const double b[5] = {90, 200, 95, 210, 205};   /* fast low percentile, big spread */
  const double c[3] = {500, 510, 505};            /* clearly slower */
  fill(&r[0], a, 5);
  fill(&r[1], b, 5);
  fill(&r[2], c, 3);
  memset(&r[3], 0, sizeof r[3]);
  r[3].state = RUDA__TUNE_EXCLUDED; /* fastest of all, but wrong */
  r[3].samples[0] = 1;
  r[3].num_samples = 1;
  memset(&r[4], 0, sizeof r[4]);   /* no samples: the budget ran out */
  for (int i = 0; i < 5; i++) ruda__tune_score(&r[i]);
  ASSERT_DBL_NEAR(r[0].score, 100, 0); /* p20 of 99 100 101 102 300 */
  ASSERT_DBL_NEAR(r[1].score, 95, 0);
  ASSERT_TRUE(r[1].spread > 1.0);
  ASSERT_TRUE(r[0].spread < 0.05);
  ruda__tune_drop_slow(r, 5, RUDA__TUNE_DROP_FACTOR);
  ASSERT_TRUE(r[2].dropped);
  ASSERT_FALSE(r[0].dropped);
  uint32_t order[5];
  size_t n = ruda__tune_rank(r, 5, order);
  ASSERT_UEQ(n, 4); /* the excluded one is left out */
  ASSERT_UEQ(order[0], 1);
  ASSERT_UEQ(order[1], 0);
  ASSERT_UEQ(order[2], 2);
  ASSERT_UEQ(order[3], 4); /* unmeasured last */
  /* equal scores: the lower index first, every time */
  fill(&r[0], a, 5);
  fill(&r[1], a, 5);
  ruda__tune_score(&r[0]);
  ruda__tune_score(&r[1]);
  n = ruda__tune_rank(r, 2, order);
  ASSERT_UEQ(n, 2);
  ASSERT_UEQ(order[0], 0);
  ASSERT_UEQ(order[1], 1);
}

TEST(tune_one_short_slow_sample_does_not_drop) {
  /* After one sample each: a 30 us kernel whose one run took 4.5 ms (a
   * stall of the scheduler) is measured again; a long run clearly over the
   * factor is dropped at once. */
  ruda__tune_result_t r[4];
  const double best = 30e3, stalled = 4.5e6, fast_long = 300e6, slow_long = 700e6;
  fill(&r[0], &best, 1);
  fill(&r[1], &stalled, 1);
  ruda__tune_drop_slow(r, 2, RUDA__TUNE_DROP_FACTOR_FIRST);
  ASSERT_FALSE(r[0].dropped);
  ASSERT_FALSE(r[1].dropped);
  /* the same stalled time as the fastest of two samples drops */
  const double two[2] = {stalled, 5e6};
  fill(&r[1], two, 2);
  ruda__tune_drop_slow(r, 2, RUDA__TUNE_DROP_FACTOR_FIRST);
  ASSERT_TRUE(r[1].dropped);
  fill(&r[2], &fast_long, 1);
  fill(&r[3], &slow_long, 1);
  ruda__tune_drop_slow(&r[2], 2, RUDA__TUNE_DROP_FACTOR_FIRST);
  ASSERT_FALSE(r[2].dropped);
  ASSERT_TRUE(r[3].dropped);
}

TEST(tune_budget_starts_only_runs_that_end_in_time) {
  ruda__tune_result_t r;
  memset(&r, 0, sizeof r);
  ASSERT_TRUE(ruda__tune_budget_allows(&r, 5000, 1000)); /* no sample yet: always */
  const double runs[2] = {400e6, 300e6};                 /* 0.4 s, 0.3 s */
  fill(&r, runs, 2);
  ASSERT_TRUE(ruda__tune_budget_allows(&r, 0, 1000));
  ASSERT_TRUE(ruda__tune_budget_allows(&r, 700, 1000));  /* ends at 1000 */
  ASSERT_FALSE(ruda__tune_budget_allows(&r, 701, 1000)); /* would end past it */
  ASSERT_FALSE(ruda__tune_budget_allows(&r, 1000, 1000));
  const double short_run = 30e3;                          /* 30 us */
  fill(&r, &short_run, 1);
  ASSERT_TRUE(ruda__tune_budget_allows(&r, 999.9, 1000));
  ASSERT_FALSE(ruda__tune_budget_allows(&r, 1000, 1000));
}

TEST(tune_round_measures_contenders_first) {
  ruda__tune_result_t r[5];
  const double slow = 500, fast[2] = {300, 90}, mid = 200;
  fill(&r[0], &slow, 1);
  fill(&r[1], fast, 2);
  memset(&r[2], 0, sizeof r[2]); /* no sample yet: first */
  fill(&r[3], &mid, 1);
  fill(&r[4], &mid, 1);
  r[4].dropped = true; /* left out, as excluded ones are */
  uint32_t order[5];
  size_t n = ruda__tune_round_order(r, 5, order);
  ASSERT_UEQ(n, 4);
  ASSERT_UEQ(order[0], 2);
  ASSERT_UEQ(order[1], 1); /* fastest sample 90 */
  ASSERT_UEQ(order[2], 3);
  ASSERT_UEQ(order[3], 0);
}

static void sample_record(ruda__tune_record_t *r) {
  memset(r, 0, sizeof *r);
  strcpy(r->version, ruda_version_string());
  strcpy(r->device, "cpu:0 | test cpu | 2 threads");
  strcpy(r->op, "matmul_f32");
  strcpy(r->candidates, "0123456789abcdef0123456789abcdef");
  r->bucket.len = 3;
  r->bucket.v[0] = 1024;
  r->bucket.v[1] = 512;
  r->bucket.v[2] = 2048;
  strcpy(r->key_text, "m=1024 n=512 k=2048");
  r->num_rank = 2;
  strcpy(r->rank[0], "b64x1_w8_k64_v4");
  strcpy(r->rank[1], "b16x16_w1_k16");
  strcpy(r->scores, "b64x1_w8_k64_v4=1.2ms(+2%) b16x16_w1_k16=3.4ms(+1%) bad=excluded(wrong)");
  r->spent_ms = 812.5;
}


TEST(tune_record_round_trips_and_corruption_is_detected) {
  ruda__tune_record_t r, back;
  sample_record(&r);
  char *t = ruda__tune_record_format(&r);
  ASSERT_NOT_NULL(t);
  size_t used = 0;
  const char *why = NULL;
  ASSERT_TRUE(ruda__tune_record_parse(t, strlen(t), &back, &used, &why));
  ASSERT_UEQ(used, strlen(t));
  ASSERT_STR_EQ(back.op, "matmul_f32");
  ASSERT_STR_EQ(back.rank[0], "b64x1_w8_k64_v4");
  ASSERT_UEQ(back.bucket.v[2], 2048);
  ASSERT_DBL_NEAR(back.spent_ms, 812.5, 1e-9);
  /* every truncation is refused */
  for (size_t cut = 0; cut < strlen(t); cut += 7)
    ASSERT_FALSE(ruda__tune_record_parse(t, cut, &back, &used, &why));
  /* one flipped byte fails the checksum */
  char *bad = strdup(t);
  bad[strstr(bad, "k=2048") - bad + 2] = '4';
  ASSERT_FALSE(ruda__tune_record_parse(bad, strlen(bad), &back, &used, &why));
  ASSERT_STR_EQ(why, "checksum mismatch");
  /* on disk: a corrupt and a truncated file read as -1, an absent one 0 */
  const char *dir = tmp_dir();
  char path[700];
  snprintf(path, sizeof path, "%s/corrupt.tune", dir);
  FILE *f = fopen(path, "w");
  fputs(bad, f);
  fclose(f);
  ASSERT_EQ(ruda__tune_cache_read(path, &back), -1);
  f = fopen(path, "w");
  fwrite(t, 1, strlen(t) / 2, f);
  fclose(f);
  ASSERT_EQ(ruda__tune_cache_read(path, &back), -1);
  f = fopen(path, "w");
  fputs("\x01\x02garbage", f);
  fclose(f);
  ASSERT_EQ(ruda__tune_cache_read(path, &back), -1);
  snprintf(path, sizeof path, "%s/absent.tune", dir);
  ASSERT_EQ(ruda__tune_cache_read(path, &back), 0);
  free(bad);
  ruda__free(t);
}

TEST(tune_two_processes_writing_one_key_leave_a_whole_entry) {
  const char *dir = tmp_dir();
  ruda__tune_record_t r;
  sample_record(&r);
  char path[700];
  ASSERT_TRUE(ruda__tune_cache_path(dir, r.device, r.op, &r.bucket, path, sizeof path));
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    ASSERT_TRUE(kids[k] >= 0);
    if (kids[k] == 0) {
      ruda__tune_record_t mine = r;
      snprintf(mine.rank[0], sizeof mine.rank[0], "writer%d", k);
      mine.spent_ms = k;
      for (int i = 0; i < 300; i++)
        if (!ruda__tune_cache_write(dir, path, &mine)) _exit(1);
      _exit(0);
    }
  }
  /* Meanwhile every read sees a whole entry of one writer or none. */
  int status[2] = {0, 0}, alive = 2;
  bool done[2] = {false, false};
  while (alive) {
    ruda__tune_record_t got;
    int rd = ruda__tune_cache_read(path, &got);
    ASSERT_TRUE(rd >= 0);
    if (rd == 1)
      ASSERT_TRUE(strcmp(got.rank[0], "writer0") == 0 || strcmp(got.rank[0], "writer1") == 0);
    for (int k = 0; k < 2; k++)
      if (!done[k] && waitpid(kids[k], &status[k], WNOHANG) == kids[k]) {
        done[k] = true;
        alive--;
      }
  }
  for (int k = 0; k < 2; k++) ASSERT_TRUE(WIFEXITED(status[k]) && WEXITSTATUS(status[k]) == 0);
  ruda__tune_record_t last;
  ASSERT_EQ(ruda__tune_cache_read(path, &last), 1);
  ASSERT_TRUE(strcmp(last.rank[0], "writer0") == 0 || strcmp(last.rank[0], "writer1") == 0);
}
