/* The benchmark harness behind `ruda bench`.
 *
 * A benchmark case measures the ruda path and its raw baseline in the same
 * process and reports both through ruda_bench_report(); the harness prints
 * a table row for people or, with --json, one JSON object per line:
 *   {"bench": ..., "case": ..., "unit": ..., "ruda": x, "baseline": y,
 *    "baseline_name": ..., "ratio": x/y, "better": "lower"|"higher"}
 *
 * Timing helpers: ruda_bench_now_ns() and ruda_bench_measure(), which runs a
 * function with warm-up and repetitions and returns the median, min and max
 * of the per-call time.
 *
 * Not thread-safe: one harness per process, used from the main thread.
 */
#ifndef RUDA_BENCH_HARNESS_H
#define RUDA_BENCH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ruda_bench ruda_bench_t;

typedef struct ruda_bench_stats {
  double median, min, max; /* in the unit the caller converts to */
  size_t samples;
} ruda_bench_stats_t;

/* Options the cases read. */
bool ruda_bench_quick(const ruda_bench_t *b);   /* --quick: whole run < 1 min */
const char *ruda_bench_device(const ruda_bench_t *b); /* "cpu", "cuda:0", ... */

uint64_t ruda_bench_now_ns(void);

/* Calls fn(ctx) `warmup` times, then `reps` samples of `inner` calls each;
 * returns the per-call nanoseconds (median/min/max over samples). */
ruda_bench_stats_t ruda_bench_measure(void (*fn)(void *ctx), void *ctx,
                                      size_t warmup, size_t reps, size_t inner);

/* Reports one case. `better_lower` says whether lower values are better
 * (times) or higher (bandwidths). The ratio printed is ruda/baseline. */
void ruda_bench_report(ruda_bench_t *b, const char *bench, const char *case_name,
                       const char *unit, ruda_bench_stats_t ruda,
                       ruda_bench_stats_t baseline, const char *baseline_name,
                       bool better_lower);
/* Reports a case that cannot run here, with the reason. */
void ruda_bench_skip(ruda_bench_t *b, const char *bench, const char *case_name,
                     const char *why);
/* A progress line on stderr for long runs. */
void ruda_bench_progress(ruda_bench_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The benchmark groups. Each lives in bench/bench_<group>.c. */
void ruda_bench_memory(ruda_bench_t *b);
void ruda_bench_launch(ruda_bench_t *b);
void ruda_bench_triad(ruda_bench_t *b);
void ruda_bench_copy(ruda_bench_t *b);
void ruda_bench_compile(ruda_bench_t *b);
void ruda_bench_allreduce(ruda_bench_t *b);

#endif
