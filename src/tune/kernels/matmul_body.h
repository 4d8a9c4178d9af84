/* The body of the tuned matmul kernels (tuned_kernels.h includes it once
 * per candidate, after MM_SHAPE and its RUDA_KERNEL(...)). C[M x N] = A[M x K] * B[K x N],
 * f32, row major, any sizes. A ruda computes an MM_TM x MM_TN tile of C:
 * MM_BX x MM_BY units, each MM_WY rows (elements per unit) of one
 * column; tiles of MM_KT columns of A and rows of B are staged through
 * shared memory, MM_VEC consecutive elements per load. Each of a unit's
 * rows has its own private accumulator, so that on a CPU the unit loop is
 * the vector loop over contiguous accumulators. */
/* One accumulator per row of a unit: MM_ROWS(X) is X(0) .. X(MM_WY - 1). */
#if MM_WY == 1
#define MM_ROWS(X) X(0)
#elif MM_WY == 2
#define MM_ROWS(X) X(0) X(1)
#elif MM_WY == 4
#define MM_ROWS(X) X(0) X(1) X(2) X(3)
#elif MM_WY == 8
#define MM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#error "MM_WY must be 1, 2, 4 or 8"
#endif
#define MM_ACC_DECL(w) RUDA_PRIVATE(float, acc##w);
#define MM_ACC_ZERO(w) RUDA_PRIV(u, acc##w) = 0.0f;
#define MM_ACC_ADD(w) RUDA_PRIV(u, acc##w) += As[(u.y + (w) * MM_BY) * MM_KT + p] * b;
#define MM_ACC_STORE(w)                                          \
  if (row0 + u.y + (w) * MM_BY < M)                               \
    C[(size_t)(row0 + u.y + (w) * MM_BY) * N + c] = RUDA_PRIV(u, acc##w);
{
  MM_ROWS(MM_ACC_DECL)
  const uint32_t row0 = ruda_pos.y * MM_TM, col0 = ruda_pos.x * MM_TN;
  RUDA_UNITS_NOWAIT(u) { MM_ROWS(MM_ACC_ZERO) }
  for (uint32_t t = 0; t < K; t += MM_KT) {
    const bool inside = row0 + MM_TM <= M && col0 + MM_TN <= N && t + MM_KT <= K;
    RUDA_RANGE_NOWAIT(uint32_t, i, 0, MM_TM * MM_KT / MM_VEC) {
      const uint32_t e = i * MM_VEC, r = e / MM_KT, c = e % MM_KT;
      const size_t at = (size_t)(row0 + r) * K + t + c;
      for (uint32_t v = 0; v < MM_VEC; v++)
        As[e + v] = inside || (row0 + r < M && t + c + v < K) ? A[at + v] : 0.0f;
    }
    RUDA_RANGE(uint32_t, i, 0, MM_KT * MM_TN / MM_VEC) {
      const uint32_t e = i * MM_VEC, r = e / MM_TN, c = e % MM_TN;
      const size_t at = (size_t)(t + r) * N + col0 + c;
      for (uint32_t v = 0; v < MM_VEC; v++)
        Bs[e + v] = inside || (t + r < K && col0 + c + v < N) ? B[at + v] : 0.0f;
    }
    for (uint32_t p = 0; p < MM_KT; p++) {
      RUDA_UNITS_NOWAIT(u) {
        const float b = Bs[p * MM_TN + u.x];
        MM_ROWS(MM_ACC_ADD)
      }
    }
    RUDA_BARRIER();
  }
  RUDA_UNITS_NOWAIT(u) {
    const uint32_t c = col0 + u.x;
    if (c < N) {
      MM_ROWS(MM_ACC_STORE)
    }
  }
}
/* The constants are the candidate's: the next one defines its own. */
#undef MM_ROWS
#undef MM_ACC_DECL
#undef MM_ACC_ZERO
#undef MM_ACC_ADD
#undef MM_ACC_STORE
#undef MM_SHAPE
