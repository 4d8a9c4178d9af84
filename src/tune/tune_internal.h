/* The autotuner's parts (include/ruda/tune.h is its public face):
 *
 *   tune_decide.c   scoring and ranking from measured times (pure: the
 *                   unit tests feed it injected times)
 *   tune_op.c       operations, the decision table read without a lock,
 *                   tuning a key on the device, the JSON log line
 *   tune_cache.c    the tune cache on disk: entry files, list, clear,
 *                   export, import
 *   tune_builtin.c  the tuned operations ruda ships (kernels/)
 *
 * The layer is built on the client's public API (ruda/client.h) and the
 * base layer, and makes the tune cache's folders as the compile cache
 * does (server/binary_cache.h); nothing below it includes it. */
#ifndef RUDA_TUNE_INTERNAL_H
#define RUDA_TUNE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/config.h"
#include "ruda/tune.h"

/* ---- Deciding (tune_decide.c) ---- */

enum { RUDA__TUNE_MAX_SAMPLES = 128, RUDA__TUNE_REASON_MAX = 240 };

typedef enum ruda__tune_state {
  RUDA__TUNE_MEASURED = 0,    /* has samples (or will) */
  RUDA__TUNE_NOT_APPLICABLE,  /* its applies() said no for this key */
  RUDA__TUNE_EXCLUDED,        /* refused, failed, or wrong: never chosen */
} ruda__tune_state_t;

typedef struct ruda__tune_result {
  ruda__tune_state_t state;
  double samples[RUDA__TUNE_MAX_SAMPLES]; /* ns */
  uint32_t num_samples;
  bool dropped;  /* stopped early: clearly slower than the best */
  double score;  /* ns: the low percentile of the samples (0 when none) */
  double spread; /* (high - low percentile) / low percentile */
  char reason[RUDA__TUNE_REASON_MAX];
} ruda__tune_result_t;

/* How hard a level works. */
typedef struct ruda__tune_plan {
  uint32_t warmups, reps;
  bool early_drop;
  uint32_t bucket_power; /* 1: the dims' bases; 2: their squares (coarser) */
} ruda__tune_plan_t;

ruda__tune_plan_t ruda__tune_plan(ruda_autotune_level_t level);

/* The factor over the best time past which a candidate is dropped: after
 * one sample each (a first run, colder and noisier), and later. */
#define RUDA__TUNE_DROP_FACTOR_FIRST 2.0
#define RUDA__TUNE_DROP_FACTOR 1.5

/* Repetitions past the level's count, while all the rounds' samples so
 * far add up to less than this (ns) and up to RUDA__TUNE_MAX_SAMPLES
 * rounds: more samples of short kernels, whose runs are the noisiest. */
#define RUDA__TUNE_SHORT_NS 50e6

/* After compiles that took this long (ms) in a key's first runs, the
 * candidates run this long, unmeasured, before the repetitions. */
#define RUDA__TUNE_SETTLE_MS 50.0

/* A candidate whose fastest run so far is shorter than this (ns) runs
 * once, unmeasured, before each measured repetition. */
#define RUDA__TUNE_WARM_NS 20e6

/* The fastest sample of `r` (ns); infinity when it has none. */
double ruda__tune_fastest(const ruda__tune_result_t *r);

/* Fills r->score and r->spread from its samples: the 20th percentile and
 * (p80 - p20) / p20 (nearest rank). */
void ruda__tune_score(ruda__tune_result_t *r);

/* A single sample (ns) this much over the best at least, besides over
 * the factor, to drop a candidate on it: a stall of the scheduler on a
 * busy machine takes several ms and can make one short run look many
 * times slower; dropping saves time only where runs are long anyway. */
#define RUDA__TUNE_DROP_STALL_NS 10e6

/* Marks `dropped` on every measured candidate whose fastest sample is
 * over `factor` times the fastest sample of all (with one sample only,
 * also RUDA__TUNE_DROP_STALL_NS over it). */
void ruda__tune_drop_slow(ruda__tune_result_t *r, size_t n, double factor);

/* Whether another repetition of `r` may start `elapsed_ms` into a
 * budget of `budget_ms`: always while it has no sample; else when its
 * fastest sample so far would end within the budget. A run that cannot
 * end in time is not started (on PoCL a 1024^3 matmul runs 0.3-1.3 s: a
 * repetition started just before the end went on past it, by up to
 * half the budget). */
bool ruda__tune_budget_allows(const ruda__tune_result_t *r, double elapsed_ms, double budget_ms);

/* The ranking: measured candidates with samples by score (ties: lower
 * index first), then measured candidates without samples (budget spent)
 * by index. Excluded and not applicable ones are left out. Writes the
 * indices to `order` (room for n) and returns how many. Scores must be
 * current (ruda__tune_score). */
size_t ruda__tune_rank(const ruda__tune_result_t *r, size_t n, uint32_t *order);

/* The order of a round of repetitions: the candidates still measured
 * (not excluded, not dropped), those without a sample first (by index),
 * then by their fastest sample (ties: lower index first), so that the
 * budget goes to the contenders before it runs out. Writes the indices to
 * `order` (room for n) and returns how many. */
size_t ruda__tune_round_order(const ruda__tune_result_t *r, size_t n, uint32_t *order);

/* ---- Keys (tune_op.c) ---- */

/* The bucket of each key value under `dims` (num_dims values) and the
 * level's coarseness. */
void ruda__tune_bucket_key(const ruda_tune_key_t *key, const ruda_tune_dim_t *dims,
                           uint32_t bucket_power, ruda_tune_key_t *out);

/* Times measurements instead of the device, for tests: when set, each
 * timed repetition of candidate `cand` of `op` takes the returned ns (the
 * candidate's warm-up and check still run on the device). NULL restores
 * the device. Not thread-safe against tuning in progress. */
typedef double (*ruda__tune_timer_fn)(const char *op, const char *cand, uint32_t rep);
void ruda__tune_set_timer(ruda__tune_timer_fn fn);

/* ---- The cache on disk (tune_cache.c) ---- */

/* One decision as stored. */
typedef struct ruda__tune_record {
  char version[32];
  char device[384];
  char op[128];
  char candidates[40]; /* the candidate-set hash, 32 hex digits */
  ruda_tune_key_t bucket;
  char key_text[256];  /* "m=1024 n=1024" */
  uint32_t num_rank;
  char rank[64][64];   /* candidate names, best first */
  char scores[2048];   /* "name=1.23ms(+2%) other=excluded: why" */
  double spent_ms;
} ruda__tune_record_t;

enum { RUDA__TUNE_MAX_CANDIDATES = 64 };

/* The entry file of (device, op, bucket) in `dir` into `path`; false when
 * it does not fit. */
bool ruda__tune_cache_path(const char *dir, const char *device, const char *op,
                           const ruda_tune_key_t *bucket, char *path, size_t cap);

/* Reads the entry at `path`. 1: read; 0: absent; -1: corrupt or truncated
 * (a warning is logged naming the file). */
int ruda__tune_cache_read(const char *path, ruda__tune_record_t *out);

/* Writes `r` at `path` (its folder created), through a temporary file
 * renamed into place. False when it could not (logged). */
bool ruda__tune_cache_write(const char *dir, const char *path, const ruda__tune_record_t *r);

/* The record as text (the entry file's contents, checksum line included)
 * into a ruda__malloc'ed string; NULL when memory is exhausted. */
char *ruda__tune_record_format(const ruda__tune_record_t *r);
/* Parses one record from `text` (`len` bytes); *used the bytes it took.
 * False (with *why) when the text is not one whole record. */
bool ruda__tune_record_parse(const char *text, size_t len, ruda__tune_record_t *out,
                             size_t *used, const char **why);

/* ---- CPU builds for wider instruction sets (tune_builtin_avx2.c) ---- */

/* Whether this processor runs AVX2 with FMA. */
bool ruda__tune_have_avx2(void);
/* The tuned matmul kernels' descriptions with their CPU code compiled for
 * AVX2 and FMA, in the order of the portable ones; 0 where there is no
 * such build (not x86-64 GCC), or `cap` is under 6. */
size_t ruda__tune_matmul_avx2_descs(ruda_kernel_desc_t *out, size_t cap);

#endif /* RUDA_TUNE_INTERNAL_H */
