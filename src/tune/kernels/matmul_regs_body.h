/* The body of the register-blocked tiled matmul candidates, for GPUs
 * (tuned_kernels.h includes it once per candidate, after RG_SHAPE and its
 * RUDA_KERNEL(...)). C[M x N] = A[M x K] * B[K x N], f32, row major, any
 * sizes.
 *
 * A ruda of RG_BX x RG_BY units computes an RG_TM x RG_TN tile of C
 * (RG_TM = RG_BY * RG_RM, RG_TN = RG_BX * RG_RN); each unit an RG_RM x
 * RG_RN sub-tile, in private accumulators (registers on a GPU). K runs in
 * tiles of RG_KT: A's tile is stored transposed in shared memory
 * (As[k][m], rows padded by 4 so that the transposing stores do not
 * collide in banks), B's as it is (Bs[k][n]). For each k of a tile a unit
 * reads RG_RM values of A and RG_RN of B from shared memory and does
 * RG_RM * RG_RN multiply-adds (an outer product): that, not the shared
 * memory's bandwidth, bounds it, unlike matmul_body.h's candidates.
 *
 * A unit's rows (and columns) come in groups of 4 consecutive ones, the
 * groups RG_BY * 4 rows apart: the 4 values of a group are one 16-byte
 * shared memory read on a GPU, and the units of a warp read neighbouring
 * groups. Global memory is read coalesced (consecutive units, consecutive
 * elements of a row), into private registers one tile ahead: the loads of
 * tile t + 1 are in flight while tile t is multiplied, and the shared
 * memory is double buffered, so one barrier per tile suffices. Whole tiles
 * read and write without bounds checks; the ruda at an edge of C or the
 * last k tile checks each element (reading zeros past the edges).
 *
 * On a CPU the accumulators are a private array per unit in memory: the
 * kernel is correct there, and slow (the tuner offers it on GPUs only). */
#define RG_UNITS (RG_BX * RG_BY)
#define RG_LDA (RG_TM + 4)
#define RG_AS (RG_KT * RG_LDA) /* floats of one buffer of A's tile */
#define RG_BS (RG_KT * RG_TN)
#define RG_PA (RG_TM * RG_KT / RG_UNITS) /* elements of A's tile per unit */
#define RG_PB (RG_KT * RG_TN / RG_UNITS)
#if RG_RM % 4 != 0 || RG_RN % 4 != 0 || (RG_TM * RG_KT) % RG_UNITS != 0 || \
    (RG_KT * RG_TN) % RG_UNITS != 0
#error "RG_RM and RG_RN must be multiples of 4, and each tile split evenly over the units"
#endif
/* NVRTC leaves the loop over a k tile rolled (its body is RG_RM * RG_RN
 * multiply-adds); unrolled (RG_UN), the shared memory reads of the next k
 * overlap this one's multiply-adds, at the cost of registers. */
#if defined(RUDA_KERNEL_TARGET_CUDA) && RG_UN
#define RG_UNROLL _Pragma("unroll")
#else
#define RG_UNROLL
#endif
{
  RUDA_PRIVATE_ARRAY(float, acc, RG_RM * RG_RN);
  RUDA_PRIVATE_ARRAY(float, next, RG_PA + RG_PB);
  const uint32_t row0 = ruda_pos.y * RG_TM, col0 = ruda_pos.x * RG_TN;
  const bool inside = row0 + RG_TM <= M && col0 + RG_TN <= N;
  const uint32_t tiles = (K + RG_KT - 1) / RG_KT;
  RUDA_UNITS_NOWAIT(u) {
    for (uint32_t i = 0; i < RG_RM * RG_RN; i++) RUDA_PRIV(u, acc)[i] = 0.0f;
  }
  /* A tile's elements: unit u reads element u.index + s * RG_UNITS of A's
   * tile (row e / RG_KT, column e % RG_KT) and of B's (row e / RG_TN,
   * column e % RG_TN), s < RG_PA (RG_PB). */
  for (uint32_t t = 0; t <= tiles; t++) {
    const uint32_t k0 = t * RG_KT;
    const bool whole = inside && k0 + RG_KT <= K;
    /* global -> private: tile t */
    if (t < tiles) {
      RUDA_UNITS_NOWAIT(u) {
        for (uint32_t s = 0; s < RG_PA; s++) {
          const uint32_t e = u.index + s * RG_UNITS, r = e / RG_KT, c = e % RG_KT;
          const size_t at = (size_t)(row0 + r) * K + k0 + c;
          RUDA_PRIV(u, next)[s] = whole || (row0 + r < M && k0 + c < K) ? A[at] : 0.0f;
        }
        for (uint32_t s = 0; s < RG_PB; s++) {
          const uint32_t e = u.index + s * RG_UNITS, r = e / RG_TN, c = e % RG_TN;
          const size_t at = (size_t)(k0 + r) * N + col0 + c;
          RUDA_PRIV(u, next)[RG_PA + s] = whole || (k0 + r < K && col0 + c < N) ? B[at] : 0.0f;
        }
      }
    }
    /* multiply tile t - 1, from shared buffer (t - 1) % 2 */
    if (t > 0) {
      const uint32_t ao = ((t - 1) % 2) * RG_AS, bo = ((t - 1) % 2) * RG_BS;
      RUDA_UNITS_NOWAIT(u) {
        RG_UNROLL for (uint32_t p = 0; p < RG_KT; p++) {
          float a[RG_RM], b[RG_RN];
          for (uint32_t i = 0; i < RG_RM; i++)
            a[i] = As[ao + p * RG_LDA + (i / 4) * (RG_BY * 4) + u.y * 4 + i % 4];
          for (uint32_t j = 0; j < RG_RN; j++)
            b[j] = Bs[bo + p * RG_TN + (j / 4) * (RG_BX * 4) + u.x * 4 + j % 4];
          for (uint32_t i = 0; i < RG_RM; i++)
            for (uint32_t j = 0; j < RG_RN; j++) RUDA_PRIV(u, acc)[i * RG_RN + j] += a[i] * b[j];
        }
      }
    }
    /* private -> shared buffer t % 2: its last readers multiplied tile
     * t - 2, before the previous barrier */
    if (t < tiles) {
      const uint32_t ao = (t % 2) * RG_AS, bo = (t % 2) * RG_BS;
      RUDA_UNITS_NOWAIT(u) {
        for (uint32_t s = 0; s < RG_PA; s++) {
          const uint32_t e = u.index + s * RG_UNITS;
          As[ao + (e % RG_KT) * RG_LDA + e / RG_KT] = RUDA_PRIV(u, next)[s];
        }
        for (uint32_t s = 0; s < RG_PB; s++)
          Bs[bo + u.index + s * RG_UNITS] = RUDA_PRIV(u, next)[RG_PA + s];
      }
    }
    RUDA_BARRIER();
  }
  RUDA_UNITS_NOWAIT(u) {
    for (uint32_t i = 0; i < RG_RM; i++) {
      const uint32_t r = row0 + (i / 4) * (RG_BY * 4) + u.y * 4 + i % 4;
      if (!inside && r >= M) continue;
      for (uint32_t j = 0; j < RG_RN; j++) {
        const uint32_t c = col0 + (j / 4) * (RG_BX * 4) + u.x * 4 + j % 4;
        if (inside || c < N) C[(size_t)r * N + c] = RUDA_PRIV(u, acc)[i * RG_RN + j];
      }
    }
  }
}
/* The constants are the candidate's: the next one defines its own. */
#undef RG_UNITS
#undef RG_LDA
#undef RG_AS
#undef RG_BS
#undef RG_PA
#undef RG_PB
#undef RG_UNROLL
#undef RG_SHAPE
