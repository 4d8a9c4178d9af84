/* The body of the tuned matmul kernels (tuned_kernels.h includes it once
 * per candidate, after RUDA_KERNEL(...)). C[M x N] = A[M x K] * B[K x N],
 * f32, row major, any sizes. A ruda computes an MM_TM x MM_TN tile of C:
 * MM_BX x MM_BY units, each MM_WY rows (elements per unit) of one
 * column; tiles of MM_KT columns of A and rows of B are staged through
 * shared memory, MM_VEC consecutive elements per load. Each of a unit's
 * rows has its own private accumulator, so that on a CPU the unit loop is
 * the vector loop over contiguous accumulators. */
{
  RUDA_PRIVATE(float, acc0);
#if MM_WY > 1
  RUDA_PRIVATE(float, acc1);
#endif
#if MM_WY > 2
  RUDA_PRIVATE(float, acc2);
  RUDA_PRIVATE(float, acc3);
#endif
#if MM_WY > 4
  RUDA_PRIVATE(float, acc4);
  RUDA_PRIVATE(float, acc5);
  RUDA_PRIVATE(float, acc6);
  RUDA_PRIVATE(float, acc7);
#endif
  const uint32_t row0 = ruda_pos.y * MM_TM, col0 = ruda_pos.x * MM_TN;
  RUDA_UNITS_NOWAIT(u) {
    RUDA_PRIV(u, acc0) = 0.0f;
#if MM_WY > 1
    RUDA_PRIV(u, acc1) = 0.0f;
#endif
#if MM_WY > 2
    RUDA_PRIV(u, acc2) = 0.0f;
    RUDA_PRIV(u, acc3) = 0.0f;
#endif
#if MM_WY > 4
    RUDA_PRIV(u, acc4) = 0.0f;
    RUDA_PRIV(u, acc5) = 0.0f;
    RUDA_PRIV(u, acc6) = 0.0f;
    RUDA_PRIV(u, acc7) = 0.0f;
#endif
  }
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
        RUDA_PRIV(u, acc0) += As[(u.y + 0 * MM_BY) * MM_KT + p] * b;
#if MM_WY > 1
        RUDA_PRIV(u, acc1) += As[(u.y + 1 * MM_BY) * MM_KT + p] * b;
#endif
#if MM_WY > 2
        RUDA_PRIV(u, acc2) += As[(u.y + 2 * MM_BY) * MM_KT + p] * b;
        RUDA_PRIV(u, acc3) += As[(u.y + 3 * MM_BY) * MM_KT + p] * b;
#endif
#if MM_WY > 4
        RUDA_PRIV(u, acc4) += As[(u.y + 4 * MM_BY) * MM_KT + p] * b;
        RUDA_PRIV(u, acc5) += As[(u.y + 5 * MM_BY) * MM_KT + p] * b;
        RUDA_PRIV(u, acc6) += As[(u.y + 6 * MM_BY) * MM_KT + p] * b;
        RUDA_PRIV(u, acc7) += As[(u.y + 7 * MM_BY) * MM_KT + p] * b;
#endif
      }
    }
    RUDA_BARRIER();
  }
  RUDA_UNITS_NOWAIT(u) {
    const uint32_t c = col0 + u.x;
    if (c < N) {
      uint32_t r = row0 + u.y;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc0);
#if MM_WY > 1
      r += MM_BY;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc1);
#endif
#if MM_WY > 2
      r += MM_BY;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc2);
      r += MM_BY;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc3);
#endif
#if MM_WY > 4
      r += MM_BY;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc4);
      r += MM_BY;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc5);
      r += MM_BY;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc6);
      r += MM_BY;
      if (r < M) C[(size_t)r * N + c] = RUDA_PRIV(u, acc7);
#endif
    }
  }
}
