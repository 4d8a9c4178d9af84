/* The kernels of `ruda bench kernels`, written once in ruda's kernel
 * dialect; bench/bench_kernels.c runs them on the bench's device against
 * the same computations written by hand (native C on cpu:N, CUDA C on
 * cuda:N). */
#include <ruda/kernel_dialect.h>

#define BENCH_UNITS 256
#define BENCH_TILE 16

/* a = b + s * c: each ruda takes `chunk` elements, shared by its units. */
RUDA_KERNEL(triad, RUDA_DIM(BENCH_UNITS, 1, 1), RUDA_BUFFER(float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(const float *restrict, c),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk)) {
  uint64_t begin = (uint64_t)ruda_pos.x * chunk;
  uint64_t end = RUDA_MIN(begin + chunk, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) a[i] = b[i] + s * c[i];
}

/* partial[ruda] = the sum of the ruda's `chunk` inputs: each of the
 * REDUCE_UNITS units accumulates one value of every REDUCE_UNITS in a
 * private (coalesced loads on a GPU; on a CPU one vector loop whose 64
 * accumulators stay in registers), then a tree in shared memory with a
 * barrier per level. */
#define REDUCE_UNITS 64
RUDA_KERNEL(reduce, RUDA_DIM(REDUCE_UNITS, 1, 1), RUDA_BUFFER(const float *restrict, in),
            RUDA_BUFFER(float *restrict, partial), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, REDUCE_UNITS)) {
  RUDA_PRIVATE(float, acc);
  uint64_t begin = (uint64_t)ruda_pos.x * chunk;
  uint64_t end = RUDA_MIN(begin + chunk, n);
  uint64_t full = begin + (end - begin) / REDUCE_UNITS * REDUCE_UNITS;
  RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) = 0.0f;
  for (uint64_t b = begin; b < full; b += REDUCE_UNITS) {
    RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) += in[b + u.x];
  }
  RUDA_UNITS(u) sh[u.x] = RUDA_PRIV(u, acc) + (full + u.x < end ? in[full + u.x] : 0.0f);
  /* The tree as the hand-written kernels have it: unit x < s adds. (A
   * RUDA_RANGE(uint32_t, i, 0, s) per level is the same on a CPU and a GPU,
   * but on PoCL a loop per work-item, which it does not vectorise.) */
  for (uint32_t s = REDUCE_UNITS / 2; s > 0; s /= 2) {
    RUDA_UNITS(u) {
      if (u.x < s) sh[u.x] += sh[u.x + s];
    }
  }
  RUDA_SINGLE_NOWAIT partial[ruda_pos.x] = sh[0];
}

/* C = A x B (n x n, row-major), one BENCH_TILE x BENCH_TILE tile of C per
 * ruda, tiles of A and B staged through shared memory. */
RUDA_KERNEL(matmul, RUDA_DIM(BENCH_TILE, BENCH_TILE, 1), RUDA_BUFFER(const float *restrict, A),
            RUDA_BUFFER(const float *restrict, B), RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, n), RUDA_SHARED(float, As, BENCH_TILE * BENCH_TILE),
            RUDA_SHARED(float, Bs, BENCH_TILE * BENCH_TILE)) {
  RUDA_PRIVATE(float, acc);
  RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) = 0.0f;
  for (uint32_t t = 0; t < n; t += BENCH_TILE) {
    RUDA_UNITS(u) {
      As[u.y * BENCH_TILE + u.x] = A[(size_t)u.abs_y * n + t + u.x];
      Bs[u.y * BENCH_TILE + u.x] = B[(size_t)(t + u.y) * n + u.abs_x];
    }
    /* The dot product as a uniform loop around a unit region: on a CPU the
     * units' loop is innermost (one broadcast of As per row, vectors of
     * Bs), on a GPU each unit loops as it would in CUDA C. */
    for (int p = 0; p < BENCH_TILE; p++) {
      RUDA_UNITS_NOWAIT(u) RUDA_PRIV(u, acc) += As[u.y * BENCH_TILE + p] * Bs[p * BENCH_TILE + u.x];
    }
    RUDA_BARRIER();
  }
  RUDA_UNITS_NOWAIT(u) C[(size_t)u.abs_y * n + u.abs_x] = RUDA_PRIV(u, acc);
}

/* The natural form, as the README and most users write it: one element per
 * unit, a bounds check, as many rudas as the data needs. */
RUDA_KERNEL(triad_units, RUDA_DIM(BENCH_UNITS, 1, 1), RUDA_BUFFER(float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(const float *restrict, c),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) a[u.abs_x] = b[u.abs_x] + s * c[u.abs_x];
  }
}

/* The README's add_one, and the same as a range over the ruda's chunk. */
RUDA_KERNEL(add_one_units, RUDA_DIM(BENCH_UNITS, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) x[u.abs_x] += 1.0f;
  }
}

RUDA_KERNEL(add_one_range, RUDA_DIM(BENCH_UNITS, 1, 1), RUDA_BUFFER(float *restrict, x),
            RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk)) {
  uint64_t begin = (uint64_t)ruda_pos.x * chunk;
  uint64_t end = RUDA_MIN(begin + chunk, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) x[i] += 1.0f;
}
