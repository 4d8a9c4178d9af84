/* Scoring and ranking candidates from their measured times. Pure
 * functions: the unit tests feed them injected times. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune_internal.h"

ruda__tune_plan_t ruda__tune_plan(ruda_autotune_level_t level) {
  ruda__tune_plan_t p = {1, 5, true, 1};
  switch (level) {
    case RUDA_AUTOTUNE_MINIMAL: p.reps = 3; p.bucket_power = 2; break;
    case RUDA_AUTOTUNE_FULL: p.warmups = 2; p.reps = 10; p.early_drop = false; break;
    case RUDA_AUTOTUNE_OFF:
    case RUDA_AUTOTUNE_BALANCED:
    default: break;
  }
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted `v`. */
static double percentile(const double *v, uint32_t n, double p) {
  double pos = p * (double)(n - 1);
  uint32_t i = (uint32_t)floor(pos + 0.5);
  if (i >= n) i = n - 1;
  return v[i];
}

void ruda__tune_score(ruda__tune_result_t *r) {
  r->score = 0;
  r->spread = 0;
  if (r->num_samples == 0) return;
  double s[RUDA__TUNE_MAX_SAMPLES];
  memcpy(s, r->samples, r->num_samples * sizeof s[0]);
  qsort(s, r->num_samples, sizeof s[0], cmp_double);
  double lo = percentile(s, r->num_samples, 0.2), hi = percentile(s, r->num_samples, 0.8);
  r->score = lo;
  r->spread = lo > 0 ? (hi - lo) / lo : 0;
}

double ruda__tune_fastest(const ruda__tune_result_t *r) {
  double m = INFINITY;
  for (uint32_t i = 0; i < r->num_samples; i++)
    if (r->samples[i] < m) m = r->samples[i];
  return m;
}

void ruda__tune_drop_slow(ruda__tune_result_t *r, size_t n, double factor) {
  double best = INFINITY;
  for (size_t i = 0; i < n; i++)
    if (r[i].state == RUDA__TUNE_MEASURED && r[i].num_samples) {
      double f = ruda__tune_fastest(&r[i]);
      if (f < best) best = f;
    }
  if (!isfinite(best)) return;
  for (size_t i = 0; i < n; i++) {
    if (r[i].state != RUDA__TUNE_MEASURED || !r[i].num_samples) continue;
    double f = ruda__tune_fastest(&r[i]);
    if (f > factor * best && (r[i].num_samples > 1 || f - best >= RUDA__TUNE_DROP_STALL_NS))
      r[i].dropped = true;
  }
}

bool ruda__tune_budget_allows(const ruda__tune_result_t *r, double elapsed_ms, double budget_ms) {
  if (!r->num_samples) return true;
  return elapsed_ms + ruda__tune_fastest(r) / 1e6 <= budget_ms;
}

size_t ruda__tune_rank(const ruda__tune_result_t *r, size_t n, uint32_t *order) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (r[i].state == RUDA__TUNE_MEASURED && r[i].num_samples) {
      /* insertion by (score, index): stable for equal scores */
      size_t j = k++;
      while (j > 0 && r[order[j - 1]].score > r[i].score) {
        order[j] = order[j - 1];
        j--;
      }
      order[j] = (uint32_t)i;
    }
  for (size_t i = 0; i < n; i++)
    if (r[i].state == RUDA__TUNE_MEASURED && !r[i].num_samples) order[k++] = (uint32_t)i;
  return k;
}

size_t ruda__tune_round_order(const ruda__tune_result_t *r, size_t n, uint32_t *order) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (r[i].state == RUDA__TUNE_MEASURED && !r[i].dropped && !r[i].num_samples)
      order[k++] = (uint32_t)i;
  size_t unsampled = k;
  for (size_t i = 0; i < n; i++)
    if (r[i].state == RUDA__TUNE_MEASURED && !r[i].dropped && r[i].num_samples) {
      /* insertion by (fastest sample, index) */
      double f = ruda__tune_fastest(&r[i]);
      size_t j = k++;
      while (j > unsampled && ruda__tune_fastest(&r[order[j - 1]]) > f) {
        order[j] = order[j - 1];
        j--;
      }
      order[j] = (uint32_t)i;
    }
  return k;
}
