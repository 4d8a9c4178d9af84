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

#include "ruda/client.h"
#include "ruda/kernel.h"
#include "ruda/status.h"

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

/* One timed sample of `inner` operations; returns nanoseconds per operation.
 * What is timed is the sample function's choice (a launch case times the
 * launches and leaves the sync that drains them untimed). */
typedef double (*ruda_bench_sample_fn)(void *ctx, size_t inner);

/* A sample function over a plain operation: `calls` is a
 * ruda_bench_calls_t, whose fn(ctx) is timed `inner` times in a row. */
typedef struct ruda_bench_calls {
  void (*fn)(void *ctx);
  void *ctx;
} ruda_bench_calls_t;
double ruda_bench_sample_calls(void *calls, size_t inner);

/* Measures ruda and its baseline in alternating samples, so that drift
 * (clock, other load) hits both alike: one warm-up sample of `warmup`
 * operations each, then `reps` rounds of one sample each, the side that
 * goes first alternating from round to round. Before every sample it waits
 * (ruda_bench_quiesce) until the other side's threads have gone to sleep,
 * so neither side runs against the other's spinning threads (libgomp's
 * team and ruda's device worker both spin for a while after their work).
 * Per-operation nanoseconds in *out_ruda and *out_baseline; zeros when
 * memory is exhausted. */
void ruda_bench_compare(ruda_bench_sample_fn ruda, void *ruda_ctx,
                        ruda_bench_sample_fn baseline, void *baseline_ctx, size_t warmup,
                        size_t reps, size_t inner, ruda_bench_stats_t *out_ruda,
                        ruda_bench_stats_t *out_baseline);

/* ruda_bench_compare over two plain operations on the same context:
 * samples of `inner` calls of ruda_fn(ctx) and baseline_fn(ctx). */
void ruda_bench_compare_calls(void (*ruda_fn)(void *ctx), void (*baseline_fn)(void *ctx), void *ctx,
                              size_t warmup, size_t reps, size_t inner,
                              ruda_bench_stats_t *out_ruda, ruda_bench_stats_t *out_baseline);

/* One operation of a case, timed on its own by ruda_bench_compare_each. */
typedef void (*ruda_bench_op_fn)(void *ctx);

/* Like ruda_bench_compare, but every operation is timed on its own (for
 * percentiles): `warmup` untimed operations per side, then `reps` rounds
 * of one sample per side, the side that goes first alternating, each
 * sample starting once the other side's threads sleep. A sample is
 * `inner` operations, or fewer when `max_sample_ns` (0: no limit) have
 * passed, so that a slow side still ends in bounded time while a fast one
 * spans the same stretch of scheduling. The per-operation nanoseconds go
 * to out_ruda and out_baseline (the caller's arrays of reps * inner
 * values); *n_ruda and *n_baseline say how many were stored. */
void ruda_bench_compare_each(ruda_bench_op_fn ruda, void *ruda_ctx, ruda_bench_op_fn baseline,
                             void *baseline_ctx, size_t warmup, size_t reps, size_t inner,
                             uint64_t max_sample_ns, double *out_ruda, size_t *n_ruda,
                             double *out_baseline, size_t *n_baseline);

/* The q-quantile (0 < q <= 1, nearest rank) of `n` samples as `median`,
 * with their min and max (sorted in place). n == 0 gives zeros. */
ruda_bench_stats_t ruda_bench_stats_quantile(double *samples, size_t n, double q);

/* Background load: `threads` threads spinning in a compute loop (no
 * system calls, no memory traffic) from ruda_bench_load_start() until
 * ruda_bench_load_stop(), so that a case runs while every core is
 * contended. ruda_bench_quiesce ignores them. NULL when a thread cannot
 * be started (none is left running). One load at a time. */
typedef struct ruda_bench_load ruda_bench_load_t;
ruda_bench_load_t *ruda_bench_load_start(unsigned threads);
/* The same with threads that poll a shared word with a pause between
 * reads, as an idle worker polls its queue (parts: what such a neighbour
 * costs a driver call). */
ruda_bench_load_t *ruda_bench_poll_start(unsigned threads);
void ruda_bench_load_stop(ruda_bench_load_t *load);
/* Online cores (sysconf), at least 1. */
unsigned ruda_bench_online_cores(void);

/* The name of an OpenMP baseline: "<construct> (N threads,
 * OMP_WAIT_POLICY=<value or unset>)", so a reader knows whether the team
 * spun between regions. snprintf semantics. */
size_t ruda_bench_omp_name(const char *construct, int threads, char *out, size_t cap);

/* Waits until every other thread of the process is asleep (none is running
 * or runnable in /proc/self/task; the threads of a ruda_bench_load_start
 * load do not count), polling, for at most `max_ms`
 * milliseconds. True when they all slept; false on timeout or where /proc
 * cannot be read. */
bool ruda_bench_quiesce(unsigned max_ms);

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

/* ---- Parts (RUDA_BENCH_PARTS=1): where the time of a call goes ----
 * RUDA_BENCH_PART(b, samples, label, stmt) runs `stmt` 50 times, then
 * times it RUDA_BENCH_PART_N times one by one and prints the median and
 * the 90th percentile as a progress line ("parts: label p50 .. p90 ..").
 * `samples` holds RUDA_BENCH_PART_N doubles. */
#define RUDA_BENCH_PART_N 2000
bool ruda_bench_parts_wanted(void);
void ruda_bench_part_report(ruda_bench_t *b, const char *label, double *samples);
/* The server-side parts of an empty kernel's round trip on `c`
 * (bench/parts_server.c). */
void ruda_bench_server_parts(ruda_bench_t *b, ruda_client_t *c, ruda_kernel_t *k);
#define RUDA_BENCH_PART(b, samples, label, stmt)                      \
  do {                                                                \
    for (int i_ = 0; i_ < 50; i_++) { stmt; }                         \
    for (int i_ = 0; i_ < RUDA_BENCH_PART_N; i_++) {                  \
      uint64_t t0_ = ruda_bench_now_ns();                             \
      stmt;                                                           \
      (samples)[i_] = (double)(ruda_bench_now_ns() - t0_);            \
    }                                                                 \
    ruda_bench_part_report((b), (label), (samples));                  \
  } while (0)

/* The benchmark groups. Each lives in bench/bench_<group>.c. */
void ruda_bench_memory(ruda_bench_t *b);
void ruda_bench_launch(ruda_bench_t *b);
void ruda_bench_triad(ruda_bench_t *b);
/* The autotuner (bench_tune.c). */
void ruda_bench_tune(ruda_bench_t *b);
void ruda_bench_copy(ruda_bench_t *b);
void ruda_bench_compile(ruda_bench_t *b);
/* The all-reduce cases of `comm` alone (bench_comm.c). */
void ruda_bench_allreduce(ruda_bench_t *b);
void ruda_bench_kernels(ruda_bench_t *b);
void ruda_bench_comm(ruda_bench_t *b);
void ruda_bench_graph(ruda_bench_t *b);
/* The graph group's ruda side (bench_graph.c), shared with cuda:N's
 * (bench_cuda.c): a graph of RUDA_BENCH_GRAPH_KERNELS launches of an
 * empty kernel, replayed. */
enum { RUDA_BENCH_GRAPH_KERNELS = 1000 };
typedef struct ruda_bench_graph_ctx {
  ruda_client_t *c;
  ruda_kernel_t *k;
  ruda_graph_t *g;
  ruda_status_t err; /* the replays' first failure */
} ruda_bench_graph_ctx_t;
/* Records x->g on x->c: RUDA_BENCH_GRAPH_KERNELS launches of x->k with
 * `args` (may be NULL) and a count of one ruda. */
ruda_status_t ruda_bench_graph_record(ruda_bench_graph_ctx_t *x, const ruda_kernel_args_t *args);
/* One replay of x->g, then a sync (x: a ruda_bench_graph_ctx_t *). */
void ruda_bench_graph_replay(void *x);
/* Reports replay_per_kernel from whole-graph samples (r: ruda's replays,
 * base: the baseline's), or the case failed with `err`. */
void ruda_bench_graph_report(ruda_bench_t *b, ruda_status_t err, ruda_bench_stats_t r,
                             ruda_bench_stats_t base, const char *baseline);
void ruda_bench_dlpack(ruda_bench_t *b);

/* ---- Additions: running the harness (tools/cmd_bench.c) ---- */

typedef struct ruda_bench_options {
  bool json;          /* one JSON object per line on stdout instead of a table */
  bool quick;         /* smaller sizes, fewer repetitions (< 1 min for `all`) */
  bool smoke;         /* each case at tiny sizes, once or twice (tests) */
  const char *device; /* "cpu" (default), "cuda:0", ...; borrowed */
} ruda_bench_options_t;

/* NULL when memory is exhausted. */
ruda_bench_t *ruda_bench_create(const ruda_bench_options_t *opts);
/* Flushes the table and frees the harness. NULL is a no-op. */
void ruda_bench_destroy(ruda_bench_t *b);
/* Prints the table rows reported so far, aligned (people's format; rows
 * wait for this so their columns line up). Nothing in --json mode, where
 * every report is printed at once. */
void ruda_bench_flush(ruda_bench_t *b);
bool ruda_bench_smoke(const ruda_bench_t *b);
bool ruda_bench_json(const ruda_bench_t *b);
/* `full` normally, `quick` under --quick, `smoke` under --smoke. */
size_t ruda_bench_pick(const ruda_bench_t *b, size_t full, size_t quick, size_t smoke);

/* Reports a case that ran but failed (a runtime error, a wrong result):
 * printed on stderr, and the command exits 1. */
void ruda_bench_fail(ruda_bench_t *b, const char *bench, const char *case_name,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
size_t ruda_bench_failures(const ruda_bench_t *b);
/* ruda_bench_fail with the status text of `st`, which it frees. False
 * (and nothing reported) when `st` is NULL. */
/* ruda_bench_skip with the status text of `st` (what is unavailable),
 * which it frees. */
void ruda_bench_skip_status(ruda_bench_t *b, const char *bench, const char *case_name,
                            ruda_status_t st);
/* For a case's result check: writes "<what>: <status text>" into
 * why[0..cap), frees `st` and returns false. */
bool ruda_bench_why_status(char *why, size_t cap, const char *what, ruda_status_t st);
bool ruda_bench_fail_status(ruda_bench_t *b, const char *bench, const char *case_name,
                            ruda_status_t st);
/* Keeps the first failure of a run of operations in *first (owned by the
 * caller) and frees later ones. */
void ruda_bench_keep_error(ruda_status_t *first, ruda_status_t st);
size_t ruda_bench_reports(const ruda_bench_t *b);
size_t ruda_bench_skips(const ruda_bench_t *b);

/* Median, min and max of `n` samples (sorted in place). n == 0 gives zeros. */
ruda_bench_stats_t ruda_bench_stats_from_samples(double *samples, size_t n);
/* Multiplies every statistic by `factor` (ns -> us: 1e-3). */
ruda_bench_stats_t ruda_bench_stats_scale(ruda_bench_stats_t s, double factor);
/* Turns per-call times (ns) into rates: `amount` per call divided by the
 * time, times `factor` (bytes -> GB/s: amount = bytes, factor = 1, since
 * bytes/ns = GB/s). The fastest call gives the max rate. */
ruda_bench_stats_t ruda_bench_stats_rate(ruda_bench_stats_t ns, double amount,
                                         double factor);
/* ruda / baseline; NaN when either is not a positive finite number. */
double ruda_bench_ratio(double ruda, double baseline);
/* One report line in the JSON format (without newline); snprintf semantics.
 * Strings are escaped by ruda__json_escape (base/json.h); non-finite
 * numbers are written as null. */
size_t ruda_bench_format_json(char *buf, size_t cap, const char *bench,
                              const char *case_name, const char *unit, double ruda,
                              double baseline, const char *baseline_name,
                              bool better_lower);

/* CUDA cases (bench/bench_cuda.c, the CUDA backend's engineer); the groups
 * call them when the device is cuda:N. Weak stubs in harness.c report a
 * skip while that file does not exist. */
void ruda_bench_cuda_launch(ruda_bench_t *b);
void ruda_bench_cuda_memory(ruda_bench_t *b);
void ruda_bench_cuda_copy(ruda_bench_t *b);
void ruda_bench_cuda_compile(ruda_bench_t *b);
void ruda_bench_cuda_graph(ruda_bench_t *b);
/* True when the bench device is a CUDA device. */
bool ruda_bench_on_cuda(const ruda_bench_t *b);

/* OpenCL cases (bench/bench_opencl.c); the groups call them when the device
 * is opencl:N. Weak stubs in harness.c report a skip without that file. */
void ruda_bench_opencl_launch(ruda_bench_t *b);
void ruda_bench_opencl_memory(ruda_bench_t *b);
void ruda_bench_opencl_copy(ruda_bench_t *b);
void ruda_bench_opencl_compile(ruda_bench_t *b);
/* True when the bench device is an OpenCL device. */
bool ruda_bench_on_opencl(const ruda_bench_t *b);

/* Opens a client on the bench's device (bench_launch.c). On failure
 * reports the case as skipped when the device is unavailable, as failed
 * otherwise, and returns false. */
struct ruda_client;
bool ruda_bench_open_client(ruda_bench_t *b, const char *bench, const char *case_name,
                            struct ruda_client **out);

#endif
