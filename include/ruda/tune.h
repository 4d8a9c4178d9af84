/* ruda/tune.h: the autotuner: the fastest candidate of an operation, per
 * device and problem size, measured once and remembered.
 *
 * A tunable operation (ruda_tune_op_t) has a name, candidates (each a
 * kernel plus how to launch it: its dispatch count for given arguments,
 * and optionally which keys it applies to; separate kernels, or one
 * kernel file compiled with different -D constants through
 * ruda_kernel_from_file / ruda_kernel_from_text), a key function that turns a
 * call's arguments into a key (shapes, element types, strides, alignment
 * class: up to RUDA_TUNE_KEY_MAX values), a bucketing rule per key value
 * (kept exact, or rounded up to the next power of a base), and optionally
 * a check that compares each candidate's output with a reference
 * candidate's within a tolerance.
 *
 * ruda_tune_op_launch() computes the key and its bucket. On a hit (the
 * bucket was tuned in this process or is in the tune cache on disk) it
 * launches the winner: a hash lookup in a table read without a lock and
 * without allocating, then the launch. On a miss the same call tunes the
 * bucket on the device, with the call's arguments: every applicable
 * candidate runs (warm-ups, then repetitions measured with the client's
 * profiling, device timestamps where the backend has them), is scored
 * by a low percentile of its times (its spread recorded), and the fastest
 * wins; then the call launches it. Tuning never changes the caller's
 * data: buffers a candidate writes are replaced by scratch buffers of the
 * same size (read-write ones start as copies) while measuring.
 *
 * Excluded (never chosen), with the reason logged: a candidate whose
 * launch is refused (over a device limit), whose work fails on the device
 * (a compile error, a fault), or whose output differs from the reference
 * candidate's beyond the tolerance. A candidate clearly slower than the
 * best (its best time over 2x the best's after one sample each, a single
 * sample also 10 ms over it; over 1.5x later; only once the repetitions'
 * measured time reaches 50 ms: short kernels are all measured, and get
 * more repetitions, up to 128, until then) stops being measured early,
 * and the repetitions of each key get a time budget ([autotune]
 * budget_ms), each round measuring the fastest candidates first. Every candidate runs once first, whatever the budget, and
 * is checked then. A kernel compiled at its first launch (every kernel on
 * a GPU; on the CPU one made from text) is first launched with a single
 * ruda, which compiles it, unless the candidate has its own `launch`
 * (then that first run compiles it and is not measured); the first run
 * of a compiled kernel is measured and is its first sample. After
 * compiles (50 ms or more of them) the candidates run 50 ms unmeasured
 * before the repetitions, and a candidate whose runs are under 20 ms runs
 * once unmeasured before each measured repetition: it is measured back
 * to back, as a program calling the operation runs it.
 *
 * Decisions are remembered in the process and in the tune cache, a folder
 * `tune` in the compiled-kernel cache directory (ruda_config_cache_dir),
 * one file per (device identity: name and backend information with the
 * driver version and architecture; operation; key bucket). A file also
 * records the ruda version and a hash of the candidate set (names, kernel
 * ids); one written by another version or for another candidate set is
 * ignored and then replaced by the new decision. Files are written to a
 * temporary name and renamed, so processes sharing the folder read whole
 * files only; a corrupt or truncated file is ignored with a warning on
 * the autotune log channel.
 *
 * Fallback: when the cached winner's launch is refused for the call's
 * exact key (a limit hit at a shape inside the bucket, or its `applies`
 * says no), the next candidate of the decision's ranking runs instead and
 * the decision is corrected (in memory and on disk). The caller sees an
 * error only when no candidate can run.
 *
 * Controls ([autotune] in ruda.toml, RUDA_AUTOTUNE_* variables,
 * docs/configuration.md): level off | minimal | balanced | full (off: the
 * default candidate always, no cache), budget_ms, cache, pin
 * ("op=candidate": always that candidate). Every decision is one JSON
 * line on the `autotune` log channel.
 *
 * Threads: an operation may be used from any thread, with clients of its
 * device. When several threads make the first call of one key, one tunes
 * it and the others wait for its decision (tuning of one operation is
 * serialized, so measurements never overlap); calls of keys already
 * decided never wait.
 */
#ifndef RUDA_TUNE_H
#define RUDA_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/client.h"
#include "ruda/kernel.h"
#include "ruda/status.h"
#include "ruda/types.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* ---- Keys ---- */

/* Values a key holds at most. */
#define RUDA_TUNE_KEY_MAX 8

/* A key: `len` values (shapes, element type codes, strides, alignment
 * classes...). */
typedef struct ruda_tune_key {
  uint32_t len;
  uint64_t v[RUDA_TUNE_KEY_MAX];
} ruda_tune_key_t;

/* How one key value is bucketed, and its name in logs and listings. */
typedef struct ruda_tune_dim {
  const char *name; /* "m", "dtype"; required */
  uint32_t base;    /* 0: kept exact; >= 2: rounded up to the next power of base */
} ruda_tune_dim_t;

/* `v` rounded up to the next power of `base` (1, base, base^2, ...); `v`
 * itself for base < 2; UINT64_MAX when the power would not fit. Pure. */
uint64_t ruda_tune_bucket(uint64_t v, uint32_t base);

/* The alignment class of a byte offset or address: the largest power of
 * two up to 64 that divides it (64 for 0), for keys that tell aligned
 * from unaligned data. Pure. */
uint32_t ruda_tune_alignment_class(uint64_t offset);

/* ---- Arguments ---- */

/* What a candidate does with a buffer while it runs. */
typedef enum ruda_tune_access {
  RUDA_TUNE_READ = 0,       /* only read: used as it is while tuning */
  RUDA_TUNE_WRITE = 1,      /* written: a scratch buffer while tuning */
  RUDA_TUNE_READ_WRITE = 2, /* read and written (in place): a scratch copy while tuning */
  RUDA_TUNE_WORKSPACE = 3,  /* the candidates' scratch space: a scratch buffer while
                               tuning, never compared by the check */
} ruda_tune_access_t;

/* The arguments of one call, passed the same way to every candidate:
 * buffers in order, then one info word per scalar. `sizes` are the
 * problem's sizes (what the key function and the candidates' counts read;
 * they are not passed to the kernel unless also listed in `scalars`).
 * Borrowed for the call. */
typedef struct ruda_tune_args {
  const ruda_handle_t *buffers;
  size_t num_buffers;
  const uint64_t *scalars;
  size_t num_scalars;
  const uint64_t *sizes;
  size_t num_sizes;
} ruda_tune_args_t;

/* ---- Candidates and operations ---- */

typedef struct ruda_tune_candidate {
  /* Unique in the operation; letters, digits, '_', '.', '-'. Required. */
  const char *name;
  /* Borrowed: the operation keeps its own reference. Required; it must
   * carry code the operation's device can run. */
  ruda_kernel_t *kernel;
  /* The dispatch count for `args` (required unless `launch` is given).
   * `param` is the candidate's own `param` below. An error excludes the
   * candidate for that key. While tuning, a kernel compiled at its first
   * launch is first launched with one ruda (its output is not used), so
   * the kernel must stay within its buffers at any dispatch count. */
  ruda_status_t (*count)(const ruda_tune_args_t *args, const void *param, ruda_count_t *out);
  /* Optional: runs the candidate itself on `client` (several launches, a
   * write before them...) instead of one launch of `kernel` with `count`.
   * Everything it submits goes on the client's stream; what it returns is
   * what a launch returns. */
  ruda_status_t (*launch)(ruda_client_t *client, ruda_kernel_t *kernel,
                          const ruda_tune_args_t *args, const void *param);
  /* Whether the candidate can run the (exact, unbucketed) `key`; NULL:
   * always. Asked when tuning and on every call (keep it cheap). */
  bool (*applies)(const ruda_tune_key_t *key, const void *param);
  /* The candidate's constants (tile sizes...), handed to count/applies;
   * borrowed: must outlive the operation. */
  const void *param;
} ruda_tune_candidate_t;

/* The default budget: the configuration's [autotune] budget_ms. */
#define RUDA_TUNE_BUDGET_CONFIG UINT32_MAX
/* No correctness check. */
#define RUDA_TUNE_NO_CHECK UINT32_MAX

typedef struct ruda_tune_op_desc {
  /* Letters, digits, '_', '.', '-' (it names cache files and pins).
   * Required. */
  const char *name;
  const ruda_tune_candidate_t *candidates; /* at least one; copied */
  size_t num_candidates;
  /* What runs at level off, when nothing else can be decided. */
  uint32_t default_candidate;
  /* Bucketing of each key value (num_dims of them: the key's length). */
  const ruda_tune_dim_t *dims;
  size_t num_dims;
  /* The key of a call; NULL: the first num_dims `sizes` of the call.
   * Its error fails the call (nothing is launched). */
  ruda_status_t (*key)(const ruda_tune_args_t *args, void *key_ctx, ruda_tune_key_t *out);
  void *key_ctx;
  /* Access of each buffer (num_access of them); buffers past the list are
   * RUDA_TUNE_READ_WRITE. NULL: every buffer READ_WRITE. */
  const ruda_tune_access_t *access;
  size_t num_access;
  /* Correctness check: index of the reference candidate, or
   * RUDA_TUNE_NO_CHECK. Every buffer a candidate writes is compared with
   * the reference's, as `check_elem` values (F32 and F64: within
   * |a - b| <= check_atol + check_rtol * |b|; other types byte for byte). */
  uint32_t check_reference;
  ruda_elem_type_t check_elem;
  double check_rtol, check_atol;
  /* Tuning time per key in ms (> 0), or RUDA_TUNE_BUDGET_CONFIG. */
  uint32_t budget_ms;
} ruda_tune_op_desc_t;

/* A description with the defaults: no check, the configured budget, no
 * key function (sizes), every buffer read-write. Pure. */
ruda_tune_op_desc_t ruda_tune_op_desc_default(void);

typedef struct ruda_tune_op ruda_tune_op_t;

/* Creates an operation for the device of `client`, copying `desc` (names
 * and lists; kernels retained). The caller owns one reference.
 * Errors (nothing is created): RUDA_ERR_INVALID_ARGUMENT naming what is
 * wrong: NULL client, desc or out; no name or a bad one; zero candidates;
 * a candidate without name, kernel, or count and launch, a name used twice; a
 * candidate whose kernel has no code for the device's backend ("built for
 * another device"); default_candidate or check_reference out of range;
 * num_dims of 0 or over RUDA_TUNE_KEY_MAX, a dim without name; a budget of
 * 0; RUDA_ERR_LAUNCH_OUT_OF_MEMORY. Thread-safe. */
ruda_status_t ruda_tune_op_create(ruda_client_t *client, const ruda_tune_op_desc_t *desc,
                                  ruda_tune_op_t **out);
ruda_tune_op_t *ruda_tune_op_retain(ruda_tune_op_t *op);
/* NULL is a no-op. The last release frees the operation and its kernels. */
void ruda_tune_op_release(ruda_tune_op_t *op);

/* Runs the operation for `args` on the client's stream: the decision for
 * the key's bucket (tuning it first on a miss), then one launch, as
 * ruda_client_launch (non-blocking; the kernel's own failures surface on
 * the stream). Tuning itself syncs the stream and runs work on it.
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL op, client or args; a client of
 * another device; the key function's error, wrapped, naming the
 * operation; a key whose length is not num_dims); the launch's errors when
 * no candidate can run the key (the last one's error). Thread-safe. */
ruda_status_t ruda_tune_op_launch(ruda_tune_op_t *op, ruda_client_t *client,
                                  const ruda_tune_args_t *args);

/* The candidate ruda_tune_op_launch would run for `args` (tuning the
 * bucket on a miss), without launching it: its index in *out_index and
 * its name (static storage of the operation) in *out_name (either may be
 * NULL). Errors: as ruda_tune_op_launch, and RUDA_ERR_LAUNCH_UNKNOWN when
 * no candidate applies. Thread-safe. */
ruda_status_t ruda_tune_op_select(ruda_tune_op_t *op, ruda_client_t *client,
                                  const ruda_tune_args_t *args, size_t *out_index,
                                  const char **out_name);

/* Decides the key of `args` now, as the first call would (without
 * launching): from memory, else the tune cache, else by tuning; with
 * `force`, tunes again whatever is remembered, and replaces the entry.
 * *out_spent_ms (optional): the tuning time, 0 when nothing was tuned.
 * For tuning ahead of a job (`ruda tune run`) and benchmarks. Errors: as
 * ruda_tune_op_select; at level off or with a pin nothing is tuned.
 * Thread-safe. */
ruda_status_t ruda_tune_op_tune(ruda_tune_op_t *op, ruda_client_t *client,
                                const ruda_tune_args_t *args, bool force,
                                double *out_spent_ms);

/* Launches candidate `index` for `args`, whatever was decided (no key, no
 * tuning): for comparing candidates. Errors: RUDA_ERR_INVALID_ARGUMENT
 * (as ruda_tune_op_launch, and an index out of range); the launch's.
 * Thread-safe. */
ruda_status_t ruda_tune_op_launch_candidate(ruda_tune_op_t *op, ruda_client_t *client,
                                            const ruda_tune_args_t *args, size_t index);

/* Name, candidate count and candidate names (borrowed, valid while the
 * operation lives). Thread-safe. */
const char *ruda_tune_op_name(const ruda_tune_op_t *op);
size_t ruda_tune_op_num_candidates(const ruda_tune_op_t *op);
const char *ruda_tune_op_candidate_name(const ruda_tune_op_t *op, size_t index);

/* Forgets the operation's in-process decisions (the next call of each key
 * reads the tune cache again, or tunes). Thread-safe; decisions being
 * read by other threads stay valid until the operation is released. */
void ruda_tune_op_forget(ruda_tune_op_t *op);

/* ---- The tune cache ---- */

/* One cache entry, as ruda_tune_cache_list reports it. Strings are
 * borrowed for the callback only. */
typedef struct ruda_tune_entry_info {
  const char *file;     /* its path */
  const char *device;   /* device identity */
  const char *version;  /* ruda version that wrote it */
  const char *op;       /* operation */
  const char *key;      /* "m=1024 n=1024 k=1024" (the bucket) */
  const char *winner;   /* candidate name */
  const char *scores;   /* "mm_t16=1.23ms(+2%) mm_t8=excluded: ..." */
  double spent_ms;      /* tuning time */
} ruda_tune_entry_info_t;

/* The tune cache directory of the process's configuration into `buf`
 * (snprintf semantics); 0 with "" when there is none (the compile cache
 * is off, or [autotune] cache = false). Thread-safe. */
size_t ruda_tune_cache_dir(char *buf, size_t cap);

/* Calls fn(entry, ctx) for every readable entry of the cache, in file
 * name order (a corrupt file is skipped with a warning on the autotune
 * channel); fn returning false stops. Errors: RUDA_ERR_INVALID_ARGUMENT
 * (NULL fn); RUDA_ERR_IO_UNKNOWN when the folder exists but cannot be
 * read. No cache, or an empty one: no call, no error. Thread-safe. */
ruda_status_t ruda_tune_cache_list(bool (*fn)(const ruda_tune_entry_info_t *entry, void *ctx),
                                   void *ctx);

/* Removes every entry file; *out_removed (optional) how many. Processes
 * still running keep their in-memory decisions. Errors:
 * RUDA_ERR_IO_UNKNOWN naming a file that could not be removed.
 * Thread-safe. */
ruda_status_t ruda_tune_cache_clear(size_t *out_removed);

/* Writes every entry into one file at `path` (to ship pre-tuned results
 * for a device), through a temporary file and a rename; *out_count
 * (optional) how many. Errors: RUDA_ERR_INVALID_ARGUMENT (NULL path),
 * RUDA_ERR_IO_UNKNOWN naming the file. Thread-safe. */
ruda_status_t ruda_tune_cache_export(const char *path, size_t *out_count);

/* Reads a file written by ruda_tune_cache_export and adds its entries to
 * the cache (an entry of the same device, operation and key is
 * replaced); *out_count (optional) how many. Every entry is checked first:
 * a corrupt or truncated file imports nothing. Errors:
 * RUDA_ERR_INVALID_ARGUMENT (NULL path, no cache directory),
 * RUDA_ERR_IO_UNKNOWN (unreadable, corrupt: naming the file and the
 * entry). Thread-safe. */
ruda_status_t ruda_tune_cache_import(const char *path, size_t *out_count);

/* ---- Tuned operations ruda ships ----
 *
 * Written once in the kernel dialect (src/tune/kernels/), each with
 * candidates that differ in tile sizes, units per ruda, elements per unit,
 * vector loads, one pass or two, range chunk sizes (on a CPU device with
 * AVX2 and FMA, the matmul candidates' CPU code is built for them, and
 * their names end in "_avx2"). The operation of each
 * device is created on first use and kept for the life of the process.
 * Buffers are f32, contiguous, row major. Non-blocking like a launch
 * (the first call of a new size tunes, which syncs the client's stream).
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL argument, a zero size, sizes
 * whose product overflows, a buffer smaller than the sizes say), and
 * those of ruda_tune_op_launch. Thread-safe. */

/* c[m x n] = a[m x k] * b[k x n]. */
ruda_status_t ruda_tune_matmul_f32(ruda_client_t *client, const ruda_handle_t *a,
                                   const ruda_handle_t *b, const ruda_handle_t *c, uint64_t m,
                                   uint64_t n, uint64_t k);
/* out[0] = the sum of x[0..n) (out holds at least 1 float). The partial
 * sums of the two-pass candidates go to a work buffer (n / 4096 floats)
 * taken from the stream's pool for the call and released after its
 * launches (a call of a size seen before on the stream reuses the memory
 * an earlier call released: no heap allocation). */
ruda_status_t ruda_tune_sum_f32(ruda_client_t *client, const ruda_handle_t *x,
                                const ruda_handle_t *out, uint64_t n);
/* a[i] = b[i] + s * c[i] for i < n (the bandwidth kernel). */
ruda_status_t ruda_tune_triad_f32(ruda_client_t *client, const ruda_handle_t *a,
                                  const ruda_handle_t *b, const ruda_handle_t *c, float s,
                                  uint64_t n);

/* The operation behind one of the functions above, for the device of
 * `client` ("matmul_f32", "sum_f32", "triad_f32"): borrowed, valid for
 * the life of the process. Errors: RUDA_ERR_INVALID_ARGUMENT (NULL
 * argument, an unknown name, listing the known ones); those of
 * ruda_tune_op_create. Thread-safe. */
ruda_status_t ruda_tune_builtin_op(ruda_client_t *client, const char *name,
                                   ruda_tune_op_t **out);

RUDA_END_DECLS

#endif /* RUDA_TUNE_H */
