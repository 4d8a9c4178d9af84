/* The benchmark harness: statistics, ratios, JSON lines, escaping. The
 * harness is part of the `ruda` command, not of the library: this test
 * links it as the command does (ruda_bench_harness, tools/parts.cmake). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/json.h"
#include "harness.h"
#include "json_check.h"
#include "test.h"

TEST(stats_odd_count_median_min_max) {
  double s[] = {5, 1, 4, 2, 3};
  ruda_bench_stats_t st = ruda_bench_stats_from_samples(s, 5);
  ASSERT_DBL_NEAR(st.median, 3, 0);
  ASSERT_DBL_NEAR(st.min, 1, 0);
  ASSERT_DBL_NEAR(st.max, 5, 0);
  ASSERT_UEQ(st.samples, 5);
}

TEST(stats_even_count_median_is_mean_of_middle) {
  double s[] = {10, 2, 8, 4};
  ruda_bench_stats_t st = ruda_bench_stats_from_samples(s, 4);
  ASSERT_DBL_NEAR(st.median, 6, 0);
  ASSERT_DBL_NEAR(st.min, 2, 0);
  ASSERT_DBL_NEAR(st.max, 10, 0);
}

TEST(stats_single_and_empty) {
  double one = 7;
  ruda_bench_stats_t st = ruda_bench_stats_from_samples(&one, 1);
  ASSERT_DBL_NEAR(st.median, 7, 0);
  ASSERT_DBL_NEAR(st.min, 7, 0);
  ASSERT_DBL_NEAR(st.max, 7, 0);
  st = ruda_bench_stats_from_samples(NULL, 0);
  ASSERT_UEQ(st.samples, 0);
  ASSERT_DBL_NEAR(st.median, 0, 0);
}

TEST(stats_scale_and_rate) {
  ruda_bench_stats_t ns = {200, 100, 400, 3};
  ruda_bench_stats_t us = ruda_bench_stats_scale(ns, 1e-3);
  ASSERT_DBL_NEAR(us.median, 0.2, 1e-12);
  ASSERT_DBL_NEAR(us.max, 0.4, 1e-12);
  /* 800 bytes per call: bytes/ns = GB/s; the fastest call is the max. */
  ruda_bench_stats_t r = ruda_bench_stats_rate(ns, 800, 1.0);
  ASSERT_DBL_NEAR(r.median, 4, 1e-12);
  ASSERT_DBL_NEAR(r.max, 8, 1e-12);
  ASSERT_DBL_NEAR(r.min, 2, 1e-12);
}

TEST(ratio_is_ruda_over_baseline_and_nan_when_undefined) {
  ASSERT_DBL_NEAR(ruda_bench_ratio(3, 4), 0.75, 1e-15);
  ASSERT_DBL_NEAR(ruda_bench_ratio(10, 2), 5, 1e-15);
  ASSERT_TRUE(isnan(ruda_bench_ratio(1, 0)));
  ASSERT_TRUE(isnan(ruda_bench_ratio(0, 1)));
  ASSERT_TRUE(isnan(ruda_bench_ratio(NAN, 1)));
  ASSERT_TRUE(isnan(ruda_bench_ratio(1, INFINITY)));
}

static int g_calls;
static void count_call(void *ctx) {
  (void)ctx;
  g_calls++;
}

TEST(measure_runs_warmup_plus_reps_times_inner) {
  g_calls = 0;
  ruda_bench_stats_t st = ruda_bench_measure(count_call, NULL, 3, 5, 7);
  ASSERT_EQ(g_calls, 3 + 5 * 7);
  ASSERT_UEQ(st.samples, 5);
  ASSERT_TRUE(st.min <= st.median && st.median <= st.max);
}

/* Sample functions that log the order they ran in. */
static char g_order[64];
static size_t g_order_len, g_inner_seen[2];
static double sample_a(void *ctx, size_t inner) {
  (void)ctx;
  if (g_order_len + 1 < sizeof g_order) g_order[g_order_len++] = 'a';
  g_inner_seen[0] += inner;
  return 10.0;
}
static double sample_b(void *ctx, size_t inner) {
  (void)ctx;
  if (g_order_len + 1 < sizeof g_order) g_order[g_order_len++] = 'b';
  g_inner_seen[1] += inner;
  return 20.0;
}

TEST(compare_alternates_samples_and_which_side_goes_first) {
  memset(g_order, 0, sizeof g_order);
  g_order_len = g_inner_seen[0] = g_inner_seen[1] = 0;
  ruda_bench_stats_t a, b;
  ruda_bench_compare(sample_a, NULL, sample_b, NULL, 3, 4, 7, &a, &b);
  /* warm-up a then b, then rounds ab, ba, ab, ba */
  ASSERT_STR_EQ(g_order, "ababbaabba");
  ASSERT_UEQ(g_inner_seen[0], 3 + 4 * 7);
  ASSERT_UEQ(g_inner_seen[1], 3 + 4 * 7);
  ASSERT_UEQ(a.samples, 4);
  ASSERT_UEQ(b.samples, 4);
  ASSERT_DBL_NEAR(a.median, 10, 0);
  ASSERT_DBL_NEAR(b.max, 20, 0);
}

TEST(sample_calls_times_inner_calls) {
  g_calls = 0;
  ruda_bench_calls_t calls = {count_call, NULL};
  double ns = ruda_bench_sample_calls(&calls, 9);
  ASSERT_EQ(g_calls, 9);
  ASSERT_TRUE(ns >= 0);
}

static atomic_bool g_spin_stop;
static void *spinner(void *arg) {
  (void)arg;
  while (!atomic_load(&g_spin_stop)) {
  }
  return NULL;
}

TEST(quiesce_waits_for_running_threads_and_gives_up_at_the_limit) {
  ASSERT_TRUE(ruda_bench_quiesce(1000)); /* nothing else runs */
  atomic_store(&g_spin_stop, false);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, spinner, NULL), 0);
  uint64_t t0 = ruda_bench_now_ns();
  ASSERT_FALSE(ruda_bench_quiesce(20)); /* the spinner never sleeps */
  ASSERT_UGE(ruda_bench_now_ns() - t0, 20000000u);
  atomic_store(&g_spin_stop, true);
  pthread_join(t, NULL);
  ASSERT_TRUE(ruda_bench_quiesce(1000));
}

TEST(quiesce_ignores_the_background_load) {
  ruda_bench_load_t *load = ruda_bench_load_start(2);
  ASSERT_NOT_NULL(load);
  ASSERT_NULL(ruda_bench_load_start(1)); /* one load at a time */
  ASSERT_TRUE(ruda_bench_quiesce(1000)); /* the busy threads do not count */
  atomic_store(&g_spin_stop, false);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, spinner, NULL), 0);
  ASSERT_FALSE(ruda_bench_quiesce(20)); /* other threads still do */
  atomic_store(&g_spin_stop, true);
  pthread_join(t, NULL);
  ruda_bench_load_stop(load);
  ASSERT_TRUE(ruda_bench_quiesce(1000));
  ASSERT_UGE(ruda_bench_online_cores(), 1);
}

TEST(quantile_is_the_nearest_rank) {
  double s[100];
  for (int i = 0; i < 100; ++i) s[i] = 100 - i; /* 100 .. 1 */
  ruda_bench_stats_t q = ruda_bench_stats_quantile(s, 100, 0.5);
  ASSERT_DBL_NEAR(q.median, 50, 0);
  ASSERT_DBL_NEAR(q.min, 1, 0);
  ASSERT_DBL_NEAR(q.max, 100, 0);
  ASSERT_UEQ(q.samples, 100);
  ASSERT_DBL_NEAR(ruda_bench_stats_quantile(s, 100, 0.99).median, 99, 0);
  ASSERT_DBL_NEAR(ruda_bench_stats_quantile(s, 100, 1.0).median, 100, 0);
  double one = 3;
  ASSERT_DBL_NEAR(ruda_bench_stats_quantile(&one, 1, 0.99).median, 3, 0);
  ASSERT_UEQ(ruda_bench_stats_quantile(NULL, 0, 0.5).samples, 0);
}

static void op_a(void *ctx) {
  (void)ctx;
  if (g_order_len + 1 < sizeof g_order) g_order[g_order_len++] = 'a';
}
static void op_b(void *ctx) {
  (void)ctx;
  if (g_order_len + 1 < sizeof g_order) g_order[g_order_len++] = 'b';
}
static void op_slow(void *ctx) {
  (void)ctx;
  struct timespec ts = {0, 2000000}; /* 2 ms */
  nanosleep(&ts, NULL);
}

TEST(compare_each_times_every_operation_and_alternates) {
  memset(g_order, 0, sizeof g_order);
  g_order_len = 0;
  double a[3 * 2], b[3 * 2];
  size_t na = 99, nb = 99;
  ruda_bench_compare_each(op_a, NULL, op_b, NULL, 1, 3, 2, 0, a, &na, b, &nb);
  /* warm-up a then b, then rounds aabb, bbaa, aabb */
  ASSERT_STR_EQ(g_order, "abaabbbbaaaabb");
  ASSERT_UEQ(na, 6);
  ASSERT_UEQ(nb, 6);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(a[i] >= 0 && b[i] >= 0);
  /* A sample ends once its time is up: 2 ms operations, 3 ms samples. */
  double s[2 * 100], f[2 * 100];
  ruda_bench_compare_each(op_slow, NULL, op_a, NULL, 0, 2, 100, 3000000, s, &na, f, &nb);
  ASSERT_TRUE(na >= 2 && na <= 4);
  ASSERT_UEQ(nb, 200);
  ASSERT_TRUE(s[0] >= 2e6);
}

TEST(omp_name_says_the_wait_policy) {
  char name[96];
  const char *old = getenv("OMP_WAIT_POLICY");
  char saved[32] = "";
  if (old) snprintf(saved, sizeof saved, "%s", old);
  unsetenv("OMP_WAIT_POLICY");
  ruda_bench_omp_name("omp parallel", 2, name, sizeof name);
  ASSERT_STR_EQ(name, "omp parallel (2 threads, OMP_WAIT_POLICY=unset)");
  setenv("OMP_WAIT_POLICY", "passive", 1);
  ruda_bench_omp_name("omp parallel for", 4, name, sizeof name);
  ASSERT_STR_EQ(name, "omp parallel for (4 threads, OMP_WAIT_POLICY=passive)");
  if (old) {
    setenv("OMP_WAIT_POLICY", saved, 1);
  } else {
    unsetenv("OMP_WAIT_POLICY");
  }
}

/* The report lines escape with the base layer's ruda__json_escape. */
TEST(json_escape_quotes_backslashes_and_controls) {
  char buf[128];
  size_t n = ruda__json_escape("a\"b\\c\nd\te\x01", buf, sizeof buf);
  ASSERT_STR_EQ(buf, "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  ASSERT_UEQ(n, strlen(buf));
  /* Truncation keeps snprintf semantics: the full length is returned. */
  char small[4];
  n = ruda__json_escape("abcdef", small, sizeof small);
  ASSERT_UEQ(n, 8);
  ASSERT_STR_EQ(small, "\"ab");
  ASSERT_UEQ(ruda__json_escape(NULL, buf, sizeof buf), 2);
  ASSERT_STR_EQ(buf, "\"\"");
}

static void check_line(const char *line, const char *want_case, double want_ratio,
                       const char *want_better) {
  jv_t *v = jv_bench_line(line);
  ASSERT_STR_EQ(jv_str(v, "case"), want_case);
  ASSERT_STR_EQ(jv_str(v, "better"), want_better);
  jv_t *ratio = jv_get(v, "ratio");
  if (isnan(want_ratio)) {
    ASSERT_EQ(ratio->type, JV_NULL);
  } else {
    ASSERT_EQ(ratio->type, JV_NUM);
    ASSERT_DBL_NEAR(ratio->num, want_ratio, 1e-5);
  }
  jv_free(v);
}

TEST(json_line_has_exactly_the_documented_fields) {
  char line[512];
  ruda_bench_format_json(line, sizeof line, "launch", "launch_empty_caller", "us", 0.5, 2.0,
                         "omp parallel (2 threads)", true);
  check_line(line, "launch_empty_caller", 0.25, "lower");
  ruda_bench_format_json(line, sizeof line, "triad", "we\"ird\\name", "GB/s", 9.0, 10.0,
                         "tab\there", false);
  check_line(line, "we\"ird\\name", 0.9, "higher");
  /* A zero baseline gives a null ratio, still valid JSON. */
  ruda_bench_format_json(line, sizeof line, "x", "zero", "us", 1.0, 0.0, "none", true);
  check_line(line, "zero", NAN, "lower");
  ruda_bench_format_json(line, sizeof line, "x", "inf", "us", INFINITY, 1.0, "none", true);
  check_line(line, "inf", NAN, "lower");
}

TEST(pick_follows_quick_and_smoke) {
  ruda_bench_options_t o = {0};
  ruda_bench_t *b = ruda_bench_create(&o);
  ASSERT_NOT_NULL(b);
  ASSERT_UEQ(ruda_bench_pick(b, 100, 10, 1), 100);
  ASSERT_FALSE(ruda_bench_quick(b));
  ASSERT_STR_EQ(ruda_bench_device(b), "cpu");
  ASSERT_FALSE(ruda_bench_on_cuda(b));
  ruda_bench_destroy(b);
  o.quick = true;
  o.device = "cuda:1";
  b = ruda_bench_create(&o);
  ASSERT_UEQ(ruda_bench_pick(b, 100, 10, 1), 10);
  ASSERT_TRUE(ruda_bench_on_cuda(b));
  ruda_bench_destroy(b);
  o.smoke = true;
  b = ruda_bench_create(&o);
  ASSERT_UEQ(ruda_bench_pick(b, 100, 10, 1), 1);
  ASSERT_TRUE(ruda_bench_quick(b));
  ruda_bench_destroy(b);
}

TEST(counters_track_reports_skips_and_failures) {
  ruda_bench_options_t o = {0};
  o.json = true;
  ruda_bench_t *b = ruda_bench_create(&o);
  ruda_bench_stats_t s = {1, 1, 1, 1};
  ruda_bench_report(b, "t", "c", "us", s, s, "base", true);
  ruda_bench_skip(b, "t", "s", "no reason at all");
  ruda_bench_fail(b, "t", "f", "failed on purpose (%d)", 42);
  ASSERT_UEQ(ruda_bench_reports(b), 1);
  ASSERT_UEQ(ruda_bench_skips(b), 1);
  ASSERT_UEQ(ruda_bench_failures(b), 1);
  ruda_bench_destroy(b);
}

TEST(keep_error_keeps_the_first_and_fail_status_reports_it) {
  ruda_status_t first = NULL;
  ruda_bench_keep_error(&first, NULL);
  ASSERT_NULL(first);
  ruda_bench_keep_error(&first, ruda_status_create(RUDA_ERR_UNAVAILABLE, "first"));
  ruda_bench_keep_error(&first, ruda_status_create(RUDA_ERR_IO_OUT_OF_MEMORY, "second"));
  ASSERT_NOT_NULL(first);
  ASSERT_STR_EQ(ruda_status_reason(first), "first");
  ruda_bench_options_t o = {0};
  o.json = true;
  ruda_bench_t *b = ruda_bench_create(&o);
  ASSERT_FALSE(ruda_bench_fail_status(b, "t", "ok", NULL));
  ASSERT_UEQ(ruda_bench_failures(b), 0);
  ASSERT_TRUE(ruda_bench_fail_status(b, "t", "failed on purpose", first)); /* frees it */
  ASSERT_UEQ(ruda_bench_failures(b), 1);
  ruda_bench_destroy(b);
}
