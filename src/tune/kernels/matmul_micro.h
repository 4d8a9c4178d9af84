/* The register-blocked candidates of the tuned matmul: C[M x N] =
 * A[M x K] * B[K x N], f32, row major, any sizes. Each unit computes an
 * MU_MR x MU_NR tile of C in a local array of accumulators: for each k,
 * MU_MR elements of a column of A (broadcast) times MU_NR consecutive
 * elements of a row of B. With constant tile sizes the compiler unrolls
 * the tile, keeps the accumulators in registers and vectorizes the
 * MU_NR columns (on a CPU, compiled at run time for the processor it runs
 * on). A ruda is MU_BX x MU_BY units; k runs in blocks of MU_KC (0: all
 * of K at once), every unit of the ruda finishing a block before the
 * next, so that the block of B's rows it reads stays in cache for the
 * ruda's other units (the sums so far wait in a private array).
 *
 * The library builds candidates from this text at run time
 * (ruda_kernel_from_text) with -D values for the constants below; the
 * defaults make the file compile on its own. */
#include <ruda/kernel_dialect.h>

#ifndef MU_MR
#define MU_MR 8
#endif
#ifndef MU_NR
#define MU_NR 32
#endif
#ifndef MU_BX
#define MU_BX 1
#endif
#ifndef MU_BY
#define MU_BY 16
#endif
#ifndef MU_KC
#define MU_KC 256
#endif

RUDA_KERNEL(tuned_mm_micro, RUDA_DIM(MU_BX, MU_BY, 1), RUDA_BUFFER(const float *restrict, A),
            RUDA_BUFFER(const float *restrict, B), RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K)) {
#if MU_KC > 0
  RUDA_PRIVATE_ARRAY(float, keep, MU_MR * MU_NR);
  const uint32_t kc = MU_KC;
#else
  const uint32_t kc = K;
#endif
  for (uint32_t k0 = 0; k0 < K; k0 += kc) {
    const uint32_t k1 = K - k0 < kc ? K : k0 + kc;
    RUDA_UNITS_NOWAIT(u) {
      const uint32_t r0 = (ruda_pos.y * MU_BY + u.y) * MU_MR;
      const uint32_t c0 = (ruda_pos.x * MU_BX + u.x) * MU_NR;
      if (r0 < M && c0 < N) {
        float acc[MU_MR][MU_NR];
        for (uint32_t i = 0; i < MU_MR; i++)
          for (uint32_t j = 0; j < MU_NR; j++) {
#if MU_KC > 0
            acc[i][j] = k0 == 0 ? 0.0f : RUDA_PRIV(u, keep)[i * MU_NR + j];
#else
            acc[i][j] = 0.0f;
#endif
          }
        if (r0 + MU_MR <= M && c0 + MU_NR <= N) {
          /* a whole tile: no bounds in the loop */
          for (uint32_t p = k0; p < k1; p++) {
            const size_t b = (size_t)p * N + c0;
            for (uint32_t i = 0; i < MU_MR; i++) {
              const float a = A[(size_t)(r0 + i) * K + p];
              for (uint32_t j = 0; j < MU_NR; j++) acc[i][j] += a * B[b + j];
            }
          }
        } else {
          for (uint32_t p = k0; p < k1; p++) {
            const size_t b = (size_t)p * N;
            for (uint32_t i = 0; i < MU_MR; i++) {
              const float a = r0 + i < M ? A[(size_t)(r0 + i) * K + p] : 0.0f;
              for (uint32_t j = 0; j < MU_NR; j++)
                acc[i][j] += c0 + j < N ? a * B[b + c0 + j] : 0.0f;
            }
          }
        }
        if (k1 == K) {
          for (uint32_t i = 0; i < MU_MR; i++)
            for (uint32_t j = 0; j < MU_NR; j++)
              if (r0 + i < M && c0 + j < N) C[(size_t)(r0 + i) * N + c0 + j] = acc[i][j];
        } else {
#if MU_KC > 0
          for (uint32_t i = 0; i < MU_MR; i++)
            for (uint32_t j = 0; j < MU_NR; j++) RUDA_PRIV(u, keep)[i * MU_NR + j] = acc[i][j];
#endif
        }
      }
    }
  }
}
