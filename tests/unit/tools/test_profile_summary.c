/* The profiling summary table and the balanced name format. */
#include <pthread.h>
#include <stdlib.h>

#include "server/profile_summary.h"
#include "test.h"

static void balanced(const char *in, const char *want) {
  rt_expect_text_format(ruda__profile_name_balanced, in, want);
}

TEST(balanced_names_follow_the_reference) {
  balanced("burn_cubecl::kernel::unary_numeric::unary_numeric::UnaryNumeric<f32, "
           "burn_cubecl::tensor::base::CubeTensor<_>::copy::Copy, "
           "cubecl_cuda::runtime::CudaRuntime>",
           "UnaryNumeric | f32 | CubeTensor | Copy | CudaRuntime");
  balanced("vector_add", "vector_add");
  balanced("a::b::Matmul<f16>", "Matmul | f16");
  balanced("kernel_name\nsecond line", "kernel_name");
  balanced("", "");
  balanced(NULL, "unknown");
}

TEST(balanced_name_truncates_like_snprintf) {
  char buf[6];
  size_t n = ruda__profile_name_balanced("a::Long<b>", buf, sizeof buf);
  ASSERT_UEQ(n, strlen("Long | b"));
  ASSERT_STR_EQ(buf, "Long ");
}

TEST(durations_print_like_rust_debug) {
  rt_expect_u64_format(ruda__profile_duration_format, 950, "950ns");
  rt_expect_u64_format(ruda__profile_duration_format, 12345, "12.345\xC2\xB5s");
  rt_expect_u64_format(ruda__profile_duration_format, 3200000, "3.2ms");
  rt_expect_u64_format(ruda__profile_duration_format, 1500000000, "1.5s");
  rt_expect_u64_format(ruda__profile_duration_format, 2000000, "2ms");
}

/* Row i of the table (0 = header), without the trailing newline. */
static const char *row(const char *table, int i, char *buf, size_t cap) {
  const char *p = table;
  for (; i > 0 && p; --i) {
    p = strchr(p, '\n');
    if (p) ++p;
  }
  if (!p) return "";
  size_t n = strcspn(p, "\n");
  if (n >= cap) n = cap - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
  return buf;
}

TEST(table_is_sorted_by_total_with_a_total_row) {
  ruda__profile_summary_reset();
  ruda__profile_summary_record("small", 1000);
  ruda__profile_summary_record("a::Big<f32>", 6000);
  ruda__profile_summary_record("small", 1000);
  ruda__profile_summary_record("mid\nwith details", 2000);
  char table[2048], line[256];
  size_t n = ruda__profile_summary_format(table, sizeof table);
  ASSERT_UEQ(n, strlen(table));
  ASSERT_STR_CONTAINS(row(table, 0, line, sizeof line), "| Name");
  ASSERT_STR_CONTAINS(row(table, 0, line, sizeof line), "| Duration");
  ASSERT_STR_CONTAINS(row(table, 0, line, sizeof line), "| Num Computed");
  ASSERT_STR_CONTAINS(row(table, 0, line, sizeof line), "| Ratio");
  ASSERT_STR_CONTAINS(row(table, 1, line, sizeof line), "|---");
  /* Big (6us) first, then small (2us over 2 calls) and mid (2us): equal
   * totals are ordered by name. */
  ASSERT_STR_CONTAINS(row(table, 2, line, sizeof line), "Big | f32");
  ASSERT_STR_CONTAINS(row(table, 2, line, sizeof line), "6\xC2\xB5s");
  ASSERT_STR_CONTAINS(row(table, 2, line, sizeof line), "60.00 %");
  ASSERT_STR_CONTAINS(row(table, 3, line, sizeof line), "| mid ");
  ASSERT_STR_CONTAINS(row(table, 4, line, sizeof line), "| small ");
  ASSERT_STR_CONTAINS(row(table, 4, line, sizeof line), "| 2 ");
  ASSERT_STR_CONTAINS(row(table, 4, line, sizeof line), "20.00 %");
  ASSERT_STR_CONTAINS(row(table, 5, line, sizeof line), "|---");
  ASSERT_STR_CONTAINS(row(table, 6, line, sizeof line), "| Total ");
  ASSERT_STR_CONTAINS(row(table, 6, line, sizeof line), "10\xC2\xB5s");
  ASSERT_STR_CONTAINS(row(table, 6, line, sizeof line), "| 4 ");
  ASSERT_STR_CONTAINS(row(table, 6, line, sizeof line), "100.00 %");
  ASSERT_TRUE(strstr(table, "with details") == NULL);
  /* Every line has the same display width. */
  size_t w0 = 0;
  for (int i = 0; i < 7; ++i) {
    size_t w = 0;
    for (const char *c = row(table, i, line, sizeof line); *c; ++c)
      w += ((unsigned char)*c & 0xC0) != 0x80;
    if (i == 0) w0 = w;
    ASSERT_UEQ(w, w0);
  }
  /* Formatting does not reset; a short buffer gets the snprintf length. */
  char small[10];
  ASSERT_UEQ(ruda__profile_summary_format(small, sizeof small), n);
  ASSERT_UEQ(strlen(small), 9);
  ruda__profile_summary_reset();
  ASSERT_UEQ(ruda__profile_summary_format(table, sizeof table), 0);
  ASSERT_STR_EQ(table, "");
}

static char g_sunk[4096];
static int g_sink_calls;
static void sink(const char *text, void *ctx) {
  ASSERT_PTR_EQ(ctx, &g_sink_calls);
  snprintf(g_sunk, sizeof g_sunk, "%s", text);
  g_sink_calls++;
}

TEST(print_and_reset_writes_once_then_clears) {
  ruda__profile_summary_reset();
  ruda__profile_summary_set_sink(sink, &g_sink_calls);
  g_sink_calls = 0;
  ruda__profile_summary_print_and_reset(); /* empty: prints nothing */
  ASSERT_EQ(g_sink_calls, 0);
  ruda__profile_summary_record("k", 5);
  ruda__profile_summary_print_and_reset();
  ASSERT_EQ(g_sink_calls, 1);
  ASSERT_STR_CONTAINS(g_sunk, "| k ");
  ASSERT_STR_CONTAINS(g_sunk, "| Total ");
  ruda__profile_summary_print_and_reset();
  ASSERT_EQ(g_sink_calls, 1);
  ruda__profile_summary_set_sink(NULL, NULL);
}

#define THREADS 4
#define PER_THREAD 5000
static void *recorder(void *arg) {
  const char *name = arg;
  for (int i = 0; i < PER_THREAD; ++i) {
    ruda__profile_summary_record(name, 1);
    ruda__profile_summary_record("shared", 2);
  }
  return NULL;
}

TEST(recording_from_many_threads_loses_nothing) {
  ruda__profile_summary_reset();
  pthread_t t[THREADS];
  static const char *names[THREADS] = {"t0", "t1", "t2", "t3"};
  for (int i = 0; i < THREADS; ++i)
    ASSERT_EQ(pthread_create(&t[i], NULL, recorder, (void *)names[i]), 0);
  for (int i = 0; i < THREADS; ++i) pthread_join(t[i], NULL);
  char table[2048];
  ruda__profile_summary_format(table, sizeof table);
  /* shared: 4 x 5000 calls of 2ns = 40us; total 60us over 40000 calls. */
  ASSERT_STR_CONTAINS(table, "| shared ");
  ASSERT_STR_CONTAINS(table, "| 20000 ");
  ASSERT_STR_CONTAINS(table, "| 40000 ");
  ASSERT_STR_CONTAINS(table, "60\xC2\xB5s");
  ASSERT_STR_CONTAINS(table, "| 5000 ");
  ruda__profile_summary_reset();
}

TEST(names_that_shorten_alike_share_a_row) {
  ruda__profile_summary_reset();
  ruda__profile_summary_record("a::Add<f32>", 1000);
  ruda__profile_summary_record("b::Add<f32>", 1000); /* another raw name, same row */
  ruda__profile_summary_record("a::Add<f32>", 1000);
  ruda__profile_summary_record("Add | f32", 1000); /* already short */
  ruda__profile_summary_record(NULL, 500);
  ruda__profile_summary_record("unknown", 500);
  char table[2048], line[256];
  ruda__profile_summary_format(table, sizeof table);
  ASSERT_STR_CONTAINS(row(table, 2, line, sizeof line), "| Add | f32 ");
  ASSERT_STR_CONTAINS(row(table, 2, line, sizeof line), "| 4 ");
  ASSERT_STR_CONTAINS(row(table, 3, line, sizeof line), "| unknown ");
  ASSERT_STR_CONTAINS(row(table, 3, line, sizeof line), "| 2 ");
  ASSERT_STR_CONTAINS(row(table, 4, line, sizeof line), "|---"); /* two rows only */
  ruda__profile_summary_reset();
}
