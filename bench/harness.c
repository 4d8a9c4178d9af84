/* The benchmark harness behind `ruda bench` (see harness.h). */
#include "harness.h"

#include "bench_internal.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TABLE_COLS 8

typedef struct table_row {
  char col[TABLE_COLS][96];
  char skip[256]; /* non-empty: a skipped case */
} table_row_t;

struct ruda_bench {
  ruda_bench_options_t opts;
  char device[32];
  bool header_printed;
  size_t reports, skips, failures;
  table_row_t *rows;
  size_t num_rows, cap_rows;
};

ruda_bench_t *ruda_bench_create(const ruda_bench_options_t *opts) {
  ruda_bench_t *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  if (opts) b->opts = *opts;
  snprintf(b->device, sizeof b->device, "%s",
           (opts && opts->device && *opts->device) ? opts->device : "cpu");
  b->opts.device = b->device;
  return b;
}

void ruda_bench_destroy(ruda_bench_t *b) {
  if (!b) return;
  ruda_bench_flush(b);
  free(b->rows);
  free(b);
}

bool ruda_bench_quick(const ruda_bench_t *b) { return b->opts.quick || b->opts.smoke; }
bool ruda_bench_smoke(const ruda_bench_t *b) { return b->opts.smoke; }
bool ruda_bench_json(const ruda_bench_t *b) { return b->opts.json; }
const char *ruda_bench_device(const ruda_bench_t *b) { return b->device; }
bool ruda_bench_on_cuda(const ruda_bench_t *b) { return strncmp(b->device, "cuda", 4) == 0; }
bool ruda_bench_on_opencl(const ruda_bench_t *b) { return strncmp(b->device, "opencl", 6) == 0; }
size_t ruda_bench_failures(const ruda_bench_t *b) { return b->failures; }
size_t ruda_bench_reports(const ruda_bench_t *b) { return b->reports; }
size_t ruda_bench_skips(const ruda_bench_t *b) { return b->skips; }

size_t ruda_bench_pick(const ruda_bench_t *b, size_t full, size_t quick, size_t smoke) {
  if (b->opts.smoke) return smoke;
  if (b->opts.quick) return quick;
  return full;
}

/* ---- Timing and statistics ---- */

uint64_t ruda_bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

ruda_bench_stats_t ruda_bench_stats_from_samples(double *samples, size_t n) {
  ruda_bench_stats_t s = {0, 0, 0, n};
  if (n == 0) return s;
  qsort(samples, n, sizeof *samples, cmp_double);
  s.min = samples[0];
  s.max = samples[n - 1];
  s.median = (n % 2) ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return s;
}

ruda_bench_stats_t ruda_bench_stats_scale(ruda_bench_stats_t s, double factor) {
  s.median *= factor;
  s.min *= factor;
  s.max *= factor;
  return s;
}

static double rate(double amount, double ns, double factor) {
  return ns > 0 ? amount / ns * factor : 0.0;
}

ruda_bench_stats_t ruda_bench_stats_rate(ruda_bench_stats_t ns, double amount,
                                         double factor) {
  ruda_bench_stats_t r;
  r.median = rate(amount, ns.median, factor);
  r.min = rate(amount, ns.max, factor);
  r.max = rate(amount, ns.min, factor);
  r.samples = ns.samples;
  return r;
}

double ruda_bench_sample_calls(void *calls, size_t inner) {
  const ruda_bench_calls_t *c = calls;
  if (inner == 0) inner = 1;
  uint64_t t0 = ruda_bench_now_ns();
  for (size_t i = 0; i < inner; ++i) c->fn(c->ctx);
  uint64_t t1 = ruda_bench_now_ns();
  return (double)(t1 - t0) / (double)inner;
}

void ruda_bench_compare_calls(void (*ruda_fn)(void *ctx), void (*baseline_fn)(void *ctx), void *ctx,
                              size_t warmup, size_t reps, size_t inner,
                              ruda_bench_stats_t *out_ruda, ruda_bench_stats_t *out_baseline) {
  ruda_bench_calls_t r = {ruda_fn, ctx}, b = {baseline_fn, ctx};
  ruda_bench_compare(ruda_bench_sample_calls, &r, ruda_bench_sample_calls, &b, warmup, reps, inner,
                     out_ruda, out_baseline);
}

ruda_bench_stats_t ruda_bench_measure(void (*fn)(void *ctx), void *ctx, size_t warmup,
                                      size_t reps, size_t inner) {
  if (reps == 0) reps = 1;
  ruda_bench_calls_t calls = {fn, ctx};
  for (size_t i = 0; i < warmup; ++i) fn(ctx);
  double *samples = malloc(reps * sizeof *samples);
  ruda_bench_stats_t none = {0, 0, 0, 0};
  if (!samples) return none;
  for (size_t r = 0; r < reps; ++r) samples[r] = ruda_bench_sample_calls(&calls, inner);
  ruda_bench_stats_t s = ruda_bench_stats_from_samples(samples, reps);
  free(samples);
  return s;
}

/* Threads that spin after their work sleep within a few milliseconds
 * (libgomp's default spin lasts about 300000 pauses); this bounds the wait
 * where something keeps running anyway. */
#define QUIESCE_MAX_MS 100

void ruda_bench_compare(ruda_bench_sample_fn ruda, void *ruda_ctx,
                        ruda_bench_sample_fn baseline, void *baseline_ctx, size_t warmup,
                        size_t reps, size_t inner, ruda_bench_stats_t *out_ruda,
                        ruda_bench_stats_t *out_baseline) {
  ruda_bench_stats_t none = {0, 0, 0, 0};
  *out_ruda = *out_baseline = none;
  if (reps == 0) reps = 1;
  double *samples = malloc(2 * reps * sizeof *samples);
  if (!samples) return;
  double *rs = samples, *bs = samples + reps;
  if (warmup) {
    ruda(ruda_ctx, warmup);
    ruda_bench_quiesce(QUIESCE_MAX_MS);
    baseline(baseline_ctx, warmup);
  }
  for (size_t r = 0; r < reps; ++r) {
    bool ruda_first = (r % 2) == 0;
    ruda_bench_quiesce(QUIESCE_MAX_MS);
    if (ruda_first) {
      rs[r] = ruda(ruda_ctx, inner);
    } else {
      bs[r] = baseline(baseline_ctx, inner);
    }
    ruda_bench_quiesce(QUIESCE_MAX_MS);
    if (ruda_first) {
      bs[r] = baseline(baseline_ctx, inner);
    } else {
      rs[r] = ruda(ruda_ctx, inner);
    }
  }
  *out_ruda = ruda_bench_stats_from_samples(rs, reps);
  *out_baseline = ruda_bench_stats_from_samples(bs, reps);
  free(samples);
}

void ruda_bench_compare_each(ruda_bench_op_fn ruda, void *ruda_ctx, ruda_bench_op_fn baseline,
                             void *baseline_ctx, size_t warmup, size_t reps, size_t inner,
                             uint64_t max_sample_ns, double *out_ruda, size_t *n_ruda,
                             double *out_baseline, size_t *n_baseline) {
  *n_ruda = *n_baseline = 0;
  /* Touched before timing: a first write to each page of a fresh
   * allocation faults, which would add a microsecond or two to every
   * 512th operation. */
  memset(out_ruda, 0, reps * inner * sizeof *out_ruda);
  memset(out_baseline, 0, reps * inner * sizeof *out_baseline);
  for (size_t i = 0; i < warmup; ++i) ruda(ruda_ctx);
  ruda_bench_quiesce(QUIESCE_MAX_MS);
  for (size_t i = 0; i < warmup; ++i) baseline(baseline_ctx);
  for (size_t r = 0; r < reps; ++r) {
    for (int side = 0; side < 2; ++side) {
      bool ruda_now = (side == 0) == ((r % 2) == 0);
      ruda_bench_op_fn fn = ruda_now ? ruda : baseline;
      void *ctx = ruda_now ? ruda_ctx : baseline_ctx;
      size_t *n = ruda_now ? n_ruda : n_baseline;
      double *out = ruda_now ? out_ruda : out_baseline;
      ruda_bench_quiesce(QUIESCE_MAX_MS);
      uint64_t start = ruda_bench_now_ns(), t0 = start;
      for (size_t i = 0; i < inner; ++i) {
        fn(ctx);
        uint64_t t1 = ruda_bench_now_ns();
        out[(*n)++] = (double)(t1 - t0);
        t0 = t1;
        if (max_sample_ns && t1 - start >= max_sample_ns) break;
      }
    }
  }
}

ruda_bench_stats_t ruda_bench_stats_quantile(double *samples, size_t n, double q) {
  ruda_bench_stats_t s = ruda_bench_stats_from_samples(samples, n);
  if (n == 0) return s;
  /* Nearest rank: the smallest value with at least q * n values at or
   * below it. */
  double rank = ceil(q * (double)n);
  size_t k = rank < 1 ? 0 : (size_t)rank - 1;
  if (k >= n) k = n - 1;
  s.median = samples[k];
  return s;
}

/* ---- Background load ---- */

#define LOAD_MAX_THREADS 1024

struct ruda_bench_load {
  unsigned threads;
  bool poll; /* poll the stop word (pause between reads) instead of computing */
  atomic_bool stop;
  atomic_uint started;
  pthread_t thread[LOAD_MAX_THREADS];
  _Atomic pid_t tid[LOAD_MAX_THREADS];
};

/* The load ruda_bench_quiesce ignores (one at a time, set by the main
 * thread before the threads count as started). */
static ruda_bench_load_t *g_load;

typedef struct load_arg {
  ruda_bench_load_t *load;
  unsigned index;
} load_arg_t;

static load_arg_t g_load_args[LOAD_MAX_THREADS];

static void *load_main(void *p) {
  load_arg_t *a = p;
  ruda_bench_load_t *l = a->load;
  atomic_store(&l->tid[a->index], (pid_t)syscall(SYS_gettid));
  atomic_fetch_add(&l->started, 1);
  /* A compute loop: an LCG whose result is kept, checked against the stop
   * flag every 4096 steps. */
  if (l->poll) {
    while (!atomic_load_explicit(&l->stop, memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    return NULL;
  }
  uint64_t x = 88172645463325252ull + a->index;
  while (!atomic_load_explicit(&l->stop, memory_order_relaxed)) {
    for (int i = 0; i < 4096; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      __asm__ volatile("" : "+r"(x));
    }
  }
  return NULL;
}

unsigned ruda_bench_online_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1u;
}

static ruda_bench_load_t *load_start(unsigned threads, bool poll) {
  if (g_load || threads > LOAD_MAX_THREADS) return NULL;
  ruda_bench_load_t *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->poll = poll;
  g_load = l;
  for (unsigned i = 0; i < threads; ++i) {
    g_load_args[i] = (load_arg_t){l, i};
    if (pthread_create(&l->thread[i], NULL, load_main, &g_load_args[i]) != 0) {
      ruda_bench_load_stop(l);
      return NULL;
    }
    l->threads = i + 1;
  }
  /* Every thread runs (and is known to quiesce) before the case starts. */
  while (atomic_load(&l->started) < l->threads) sched_yield();
  return l;
}

ruda_bench_load_t *ruda_bench_load_start(unsigned threads) { return load_start(threads, false); }

ruda_bench_load_t *ruda_bench_poll_start(unsigned threads) { return load_start(threads, true); }

void ruda_bench_load_stop(ruda_bench_load_t *l) {
  if (!l) return;
  atomic_store(&l->stop, true);
  for (unsigned i = 0; i < l->threads; ++i) pthread_join(l->thread[i], NULL);
  if (g_load == l) g_load = NULL;
  free(l);
}

static bool is_load_thread(pid_t tid) {
  const ruda_bench_load_t *l = g_load;
  if (!l) return false;
  for (unsigned i = 0; i < l->threads; ++i) {
    if (atomic_load_explicit(&l->tid[i], memory_order_relaxed) == tid) return true;
  }
  return false;
}

/* True when some thread of the process other than the caller (and the
 * background load) is running or runnable (state R in
 * /proc/self/task/<tid>/stat). */
static bool others_running(pid_t self, bool *ok) {
  DIR *dir = opendir("/proc/self/task");
  *ok = dir != NULL;
  if (!dir) return false;
  bool running = false;
  struct dirent *de;
  while (!running && (de = readdir(dir)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    pid_t tid = (pid_t)atoi(de->d_name);
    if (tid == self || is_load_thread(tid)) continue;
    char path[32 + sizeof de->d_name], line[512];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* the thread has exited */
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    /* "tid (comm) S ...": the state follows the last ')'. */
    const char *close = strrchr(line, ')');
    if (close && close[1] == ' ' && close[2] == 'R') running = true;
  }
  closedir(dir);
  return running;
}

bool ruda_bench_quiesce(unsigned max_ms) {
  pid_t self = (pid_t)syscall(SYS_gettid);
  uint64_t deadline = ruda_bench_now_ns() + (uint64_t)max_ms * 1000000u;
  for (;;) {
    bool ok;
    if (!others_running(self, &ok)) return ok;
    if (ruda_bench_now_ns() >= deadline) return false;
    struct timespec nap = {0, 200000}; /* 0.2 ms */
    nanosleep(&nap, NULL);
  }
}

size_t ruda_bench_omp_name(const char *construct, int threads, char *out, size_t cap) {
  const char *policy = getenv("OMP_WAIT_POLICY");
  int n = snprintf(out, cap, "%s (%d threads, OMP_WAIT_POLICY=%s)", construct, threads,
                   policy && *policy ? policy : "unset");
  return n < 0 ? 0 : (size_t)n;
}

double ruda_bench_ratio(double ruda, double baseline) {
  if (!(isfinite(ruda) && isfinite(baseline)) || ruda <= 0 || baseline <= 0) return NAN;
  return ruda / baseline;
}

/* ---- Output ---- */

static void json_number(double v, char *buf, size_t cap) {
  if (isfinite(v)) {
    snprintf(buf, cap, "%.6g", v);
  } else {
    snprintf(buf, cap, "null");
  }
}

size_t ruda_bench_format_json(char *buf, size_t cap, const char *bench,
                              const char *case_name, const char *unit, double ruda,
                              double baseline, const char *baseline_name,
                              bool better_lower) {
  char e_bench[128], e_case[160], e_unit[64], e_base[256];
  char n_ruda[32], n_base[32], n_ratio[32];
  ruda__json_escape(bench, e_bench, sizeof e_bench);
  ruda__json_escape(case_name, e_case, sizeof e_case);
  ruda__json_escape(unit, e_unit, sizeof e_unit);
  ruda__json_escape(baseline_name, e_base, sizeof e_base);
  json_number(ruda, n_ruda, sizeof n_ruda);
  json_number(baseline, n_base, sizeof n_base);
  json_number(ruda_bench_ratio(ruda, baseline), n_ratio, sizeof n_ratio);
  int n = snprintf(buf, cap,
                   "{\"bench\": %s, \"case\": %s, \"unit\": %s, \"ruda\": %s, "
                   "\"baseline\": %s, \"baseline_name\": %s, \"ratio\": %s, "
                   "\"better\": \"%s\"}",
                   e_bench, e_case, e_unit, n_ruda, n_base, e_base, n_ratio,
                   better_lower ? "lower" : "higher");
  return n < 0 ? 0 : (size_t)n;
}

/* Table rows are kept until ruda_bench_flush() so that columns align. */
static void add_row(ruda_bench_t *b, const char *bench, const char *case_name,
                    const char *unit, const char *r, const char *base,
                    const char *base_name, const char *ratio, const char *better,
                    const char *skip) {
  if (b->num_rows == b->cap_rows) {
    size_t cap = b->cap_rows ? 2 * b->cap_rows : 16;
    table_row_t *rows = realloc(b->rows, cap * sizeof *rows);
    if (!rows) return; /* the row is lost, the run goes on */
    b->rows = rows;
    b->cap_rows = cap;
  }
  table_row_t *row = &b->rows[b->num_rows++];
  memset(row, 0, sizeof *row);
  snprintf(row->col[0], sizeof row->col[0], "%s", bench);
  snprintf(row->col[1], sizeof row->col[1], "%s", case_name);
  if (skip) {
    snprintf(row->skip, sizeof row->skip, "skipped: %s", skip);
    return;
  }
  snprintf(row->col[2], sizeof row->col[2], "%s", unit ? unit : "");
  snprintf(row->col[3], sizeof row->col[3], "%s", r ? r : "");
  snprintf(row->col[4], sizeof row->col[4], "%s", base ? base : "");
  snprintf(row->col[5], sizeof row->col[5], "%s", base_name ? base_name : "");
  snprintf(row->col[6], sizeof row->col[6], "%s", ratio ? ratio : "");
  snprintf(row->col[7], sizeof row->col[7], "%s", better ? better : "");
}

void ruda_bench_flush(ruda_bench_t *b) {
  if (b->opts.json || b->num_rows == 0) return;
  static const char *headers[TABLE_COLS] = {"bench", "case", "unit", "ruda", "baseline",
                                            "baseline name", "ratio", "better"};
  size_t w[TABLE_COLS];
  for (int c = 0; c < TABLE_COLS; ++c) w[c] = strlen(headers[c]);
  for (size_t i = 0; i < b->num_rows; ++i) {
    int cols = b->rows[i].skip[0] ? 2 : TABLE_COLS;
    for (int c = 0; c < cols; ++c) {
      size_t n = strlen(b->rows[i].col[c]);
      if (n > w[c]) w[c] = n;
    }
  }
  if (!b->header_printed) {
    printf("ruda bench on %s%s: median [min .. max] of the repetitions; ratio = ruda / baseline\n\n",
           b->device, b->opts.smoke ? " (smoke)" : (b->opts.quick ? " (quick)" : ""));
    b->header_printed = true;
  }
  for (size_t i = 0; i <= b->num_rows; ++i) {
    const table_row_t *row = i ? &b->rows[i - 1] : NULL;
    for (int c = 0; c < TABLE_COLS; ++c) {
      const char *text = row ? row->col[c] : headers[c];
      if (row && row->skip[0] && c == 2) {
        printf("%s", row->skip);
        break;
      }
      if (c == 6) {
        printf("%*s", (int)w[c], text); /* numbers align right */
      } else {
        printf("%-*s", c == TABLE_COLS - 1 ? 0 : (int)w[c], text);
      }
      if (c < TABLE_COLS - 1) printf("  ");
    }
    printf("\n");
  }
  printf("\n");
  fflush(stdout);
  b->num_rows = 0;
}

static void format_stats(ruda_bench_stats_t s, char *buf, size_t cap) {
  snprintf(buf, cap, "%.4g [%.4g .. %.4g]", s.median, s.min, s.max);
}

void ruda_bench_report(ruda_bench_t *b, const char *bench, const char *case_name,
                       const char *unit, ruda_bench_stats_t ruda,
                       ruda_bench_stats_t baseline, const char *baseline_name,
                       bool better_lower) {
  b->reports++;
  if (b->opts.json) {
    char line[1024];
    ruda_bench_format_json(line, sizeof line, bench, case_name, unit, ruda.median,
                           baseline.median, baseline_name, better_lower);
    printf("%s\n", line);
    fflush(stdout);
    return;
  }
  char r[64], base[64], ratio[32];
  format_stats(ruda, r, sizeof r);
  format_stats(baseline, base, sizeof base);
  snprintf(ratio, sizeof ratio, "%.3f", ruda_bench_ratio(ruda.median, baseline.median));
  add_row(b, bench, case_name, unit, r, base, baseline_name, ratio,
          better_lower ? "lower" : "higher", NULL);
}

void ruda_bench_skip(ruda_bench_t *b, const char *bench, const char *case_name,
                     const char *why) {
  b->skips++;
  /* JSON lines stay pure: a skip is a line on stderr there. */
  if (b->opts.json) {
    fprintf(stderr, "skip: %s/%s: %s\n", bench, case_name, why);
  } else {
    add_row(b, bench, case_name, NULL, NULL, NULL, NULL, NULL, NULL, why);
  }
}

void ruda_bench_fail(ruda_bench_t *b, const char *bench, const char *case_name,
                     const char *fmt, ...) {
  b->failures++;
  fflush(stdout);
  fprintf(stderr, "FAILED: %s/%s: ", bench, case_name);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

bool ruda_bench_fail_status(ruda_bench_t *b, const char *bench, const char *case_name,
                            ruda_status_t st) {
  if (!st) return false;
  char *text = ruda_status_to_string(st);
  ruda_bench_fail(b, bench, case_name, "%s", text ? text : "error (no memory for its text)");
  free(text);
  ruda_status_free(st);
  return true;
}

void ruda_bench_skip_status(ruda_bench_t *b, const char *bench, const char *case_name,
                            ruda_status_t st) {
  char *text = ruda_status_to_string(st);
  ruda_bench_skip(b, bench, case_name, text ? text : "unavailable");
  free(text);
  ruda_status_free(st);
}

bool ruda_bench_why_status(char *why, size_t cap, const char *what, ruda_status_t st) {
  char *text = ruda_status_to_string(st);
  snprintf(why, cap, "%s: %s", what, text ? text : "?");
  free(text);
  ruda_status_free(st);
  return false;
}

void ruda_bench_keep_error(ruda_status_t *first, ruda_status_t st) {
  if (!st) return;
  if (*first) {
    ruda_status_free(st);
  } else {
    *first = st;
  }
}

void ruda_bench_progress(ruda_bench_t *b, const char *fmt, ...) {
  (void)b;
  fputs("... ", stderr);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static int cmp_part(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

bool ruda_bench_parts_wanted(void) {
  const char *e = getenv("RUDA_BENCH_PARTS");
  return e != NULL && e[0] == '1';
}

void ruda_bench_part_report(ruda_bench_t *b, const char *label, double *samples) {
  qsort(samples, RUDA_BENCH_PART_N, sizeof *samples, cmp_part);
  ruda_bench_progress(b, "parts: %-48s p50 %8.0f ns  p90 %8.0f ns", label,
                      samples[RUDA_BENCH_PART_N / 2], samples[RUDA_BENCH_PART_N * 9 / 10]);
}
