/* The skeleton of a GPU backend's benchmark cases (bench_cuda.c,
 * bench_opencl.c; a new GPU backend's bench_<backend>.c). ruda's side of
 * each case is the same client calls on every device, so it is written
 * here once, with the loops that time it against a baseline; a backend's
 * file supplies only its raw baseline (the vendor calls, behind
 * ruda_bench_gpu_t.raw) and the cases it alone has. */
#ifndef RUDA_BENCH_GPU_H
#define RUDA_BENCH_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "ruda/ruda.h"

/* A backend's group of cases where ruda was built without that backend's
 * headers: a skip with the reason. */
#define RUDA_BENCH_GPU_NOT_BUILT(backend, group)                                     \
  void ruda_bench_##backend##_##group(ruda_bench_t *b) {                             \
    ruda_bench_skip(b, #group, #backend, "ruda was built without the " #backend " headers"); \
  }

/* Runs a group's cases for the bench's GPU backend (`cuda` on cuda:N,
 * `opencl` on opencl:N); false on any other device, whose cases the
 * caller runs. */
bool ruda_bench_gpu_dispatch(ruda_bench_t *b, void (*cuda)(ruda_bench_t *b),
                             void (*opencl)(ruda_bench_t *b));

/* One case's state, shared by ruda's side and the raw side (every timed
 * function takes a ruda_bench_gpu_t *, as its void * context). */
typedef struct ruda_bench_gpu {
  ruda_client_t *c;
  ruda_kernel_t *k;     /* launch: the empty kernel */
  size_t size;          /* copy: bytes per call */
  ruda_handle_t dev;    /* copy: a device buffer of `size` */
  ruda_bytes_t pinned;  /* copy: a staging buffer of `size` */
  void *pageable;       /* copy: the caller's host buffer of `size` */
  void *raw_host;       /* copy: the host buffer of the raw side's copies */
  void *raw;            /* the backend's baseline state */
  const struct ruda_bench_gpu_baseline *baseline;
  ruda_status_t err;    /* ruda's first failure (ruda_bench_keep_error) */
} ruda_bench_gpu_t;

/* A backend's baseline: `open` sets up the raw side (`raw`, the backend's
 * own struct) on client c's device, reporting a skip (its vendor library
 * is not there) or a failure and returning false when it cannot; `close`
 * releases what open made. */
typedef struct ruda_bench_gpu_baseline {
  bool (*open)(ruda_bench_t *b, const char *bench, ruda_client_t *c, void *raw);
  void (*close)(void *raw);
} ruda_bench_gpu_baseline_t;

/* A client on the bench's device and the baseline's raw side (in `raw`)
 * for one group of cases: *x zeroed, then x->c and x->raw set. False (the
 * case reported skipped or failed) when either is missing; otherwise end
 * with ruda_bench_gpu_close. */
bool ruda_bench_gpu_open(ruda_bench_t *b, const char *bench, const char *case_name,
                         const ruda_bench_gpu_baseline_t *baseline, void *raw,
                         ruda_bench_gpu_t *x);
void ruda_bench_gpu_close(ruda_bench_gpu_t *x);

/* Whether `s` is NULL; otherwise reports the case failed with its text,
 * frees it and returns false. */
static inline bool ruda_bench_gpu_ok(ruda_bench_t *b, const char *bench, const char *case_name,
                                     ruda_status_t s) {
  return !ruda_bench_fail_status(b, bench, case_name, s);
}

/* A kernel of one code entry (`format`, NUL-terminated text) and
 * `units` units per ruda, named `name`. */
ruda_status_t ruda_bench_gpu_text_kernel(ruda_kernel_format_t format, const char *name,
                                         const char *src, uint32_t units, ruda_kernel_t **out);

/* ---- launch: launch_empty_caller and launch_empty_roundtrip ---- */

/* The raw side of the launch cases: `launch` enqueues the empty kernel
 * once, `sync` waits until the queue is idle (both take the case's
 * ruda_bench_gpu_t). */
typedef struct ruda_bench_gpu_launch_raw {
  void (*launch)(ruda_bench_gpu_t *x);
  void (*sync)(ruda_bench_gpu_t *x);
  const char *caller_baseline;    /* "cuLaunchKernel" */
  const char *roundtrip_baseline; /* "cuLaunchKernel+cuStreamSynchronize" */
  /* RUDA_BENCH_PARTS=1: the backend's parts (RUDA_BENCH_PART into
   * `samples`, RUDA_BENCH_PART_N doubles), run between the two cases after
   * the clock's own cost and before ruda's parts (may be NULL). */
  void (*parts)(ruda_bench_t *b, ruda_bench_gpu_t *x, double *samples);
} ruda_bench_gpu_launch_raw_t;

/* Both launch cases on x->c with x->k (set by the caller). */
void ruda_bench_gpu_launch_cases(ruda_bench_t *b, ruda_bench_gpu_t *x,
                                 const ruda_bench_gpu_launch_raw_t *raw);

/* ---- memory: reserve_release_mixed ---- */

/* One batch is every size of the mix reserved and released 8 times. */
#define RUDA_BENCH_GPU_MIXED 8
extern const uint64_t ruda_bench_gpu_mixed_sizes[RUDA_BENCH_GPU_MIXED];
/* ruda's batch: ruda_client_empty + ruda_handle_release of each size, then
 * a sync so that the device's work is counted too. */
void ruda_bench_gpu_reserve_batch(void *x);
/* A raw batch: op(x, size) for each size of the mix, 8 times. */
void ruda_bench_gpu_each_size(ruda_bench_gpu_t *x, void (*op)(ruda_bench_gpu_t *x, uint64_t size));
/* Per-batch times to per-operation times. */
ruda_bench_stats_t ruda_bench_gpu_per_op(ruda_bench_stats_t s);

/* ---- copy ---- */

/* Makes x->dev, x->pinned and x->pageable of x->size bytes (filled with
 * 3 and 1). False (the case reported failed as `case_name`) when one is
 * missing; release what was made with ruda_bench_gpu_copy_close. */
bool ruda_bench_gpu_copy_open(ruda_bench_t *b, ruda_bench_gpu_t *x, const char *case_name);
void ruda_bench_gpu_copy_close(ruda_bench_gpu_t *x);

/* ruda's side of the copy cases, each one call of x->size bytes. */
void ruda_bench_gpu_write_pinned(void *x);        /* a staging buffer handed over as bytes */
void ruda_bench_gpu_read_pinned(void *x);         /* x->dev -> x->pinned */
void ruda_bench_gpu_write_pageable(void *x);      /* x->pageable -> x->dev, + sync */
void ruda_bench_gpu_write_pageable_bytes(void *x); /* x->pageable handed over as bytes, + sync */
void ruda_bench_gpu_read_pageable(void *x);       /* x->dev -> x->pageable */

/* One copy case in GB/s: ruda_fn against raw_fn, which copies between the
 * device and `raw_host` (x->raw_host while the case runs), alternating
 * samples (ruda_bench_compare_calls) when `alternate`, else ruda's samples
 * then the baseline's (ruda_bench_measure), `reps` samples each. */
void ruda_bench_gpu_copy_case(ruda_bench_t *b, ruda_bench_gpu_t *x, const char *case_name,
                              void (*ruda_fn)(void *), void (*raw_fn)(void *), void *raw_host,
                              const char *baseline, size_t reps, bool alternate);

#endif
