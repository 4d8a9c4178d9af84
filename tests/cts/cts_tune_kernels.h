/* Candidates of the autotuner's conformance tests (test_cts_tune.c):
 * x[i] *= 2 in place, in three correct forms and one wrong one. */
#include <ruda/kernel_dialect.h>

RUDA_KERNEL(tune_double_u64, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint64_t, n)) {
  const uint64_t begin = (uint64_t)ruda_pos.x * 1024, end = RUDA_MIN(begin + 1024, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) x[i] *= 2.0f;
}

RUDA_KERNEL(tune_double_u128, RUDA_DIM(128, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint64_t, n)) {
  const uint64_t begin = (uint64_t)ruda_pos.x * 1024, end = RUDA_MIN(begin + 1024, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) x[i] *= 2.0f;
}

RUDA_KERNEL(tune_double_units, RUDA_DIM(256, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint64_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    for (uint64_t i = (uint64_t)ruda_pos.x * 1024 + u.x; i < RUDA_MIN((uint64_t)ruda_pos.x * 1024 + 1024, n); i += 256)
      x[i] *= 2.0f;
  }
}

/* Wrong: adds one. */
RUDA_KERNEL(tune_double_wrong, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint64_t, n)) {
  const uint64_t begin = (uint64_t)ruda_pos.x * 1024, end = RUDA_MIN(begin + 1024, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) x[i] = x[i] * 2.0f + 1.0f;
}

/* Slow on purpose: one unit runs a dependent chain of 2^21 steps, then
 * leaves x as it found it (x[0] is written back only when the chain gave
 * an impossible value). */
RUDA_KERNEL(tune_spin, RUDA_DIM(1, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint64_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    float acc = n > u.x ? x[u.x] : 0.0f;
    for (uint32_t j = 0; j < (1u << 21); j++) acc = acc * 0.999999f + 1e-6f;
    if (n > u.x && acc != acc) x[u.x] = acc;
  }
}
