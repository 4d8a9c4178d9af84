/* The kernels of the tuned operations ruda ships (ruda/tune.h:
 * ruda_tune_matmul_f32, ruda_tune_sum_f32, ruda_tune_triad_f32), written
 * once in the kernel dialect. Each candidate is the same body compiled
 * with other constants: the constants are #defined, then RUDA_KERNEL
 * names the candidate and the body file follows (it is included once per
 * candidate, so it has no include guard). The embed step inlines the body
 * files into the text compiled for cuda:N and opencl:N, so every backend
 * sees the same candidates. */
#ifndef RUDA_TUNE_TUNED_KERNELS_H
#define RUDA_TUNE_TUNED_KERNELS_H

#include <ruda/kernel_dialect.h>

/* ---- matmul: tile sizes, units per ruda, elements per unit, vector loads ---- */

#define MM_TM (MM_BY * MM_WY)
#define MM_TN MM_BX

/* 16 x 16 units, one element each, k tiles of 16: the default (the tiled
 * matmul of examples/). */
#define MM_BX 16
#define MM_BY 16
#define MM_WY 1
#define MM_KT 16
#define MM_VEC 1
RUDA_KERNEL(tuned_mm_b16x16_w1_k16, RUDA_DIM(16, 16, 1), RUDA_BUFFER(const float *restrict, A),
            RUDA_BUFFER(const float *restrict, B), RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"
#undef MM_BX
#undef MM_BY
#undef MM_WY
#undef MM_KT
#undef MM_VEC

/* 16 x 16 units, 2 rows each: 32 x 16 tiles. */
#define MM_BX 16
#define MM_BY 16
#define MM_WY 2
#define MM_KT 16
#define MM_VEC 2
RUDA_KERNEL(tuned_mm_b16x16_w2_k16_v2, RUDA_DIM(16, 16, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C), RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N),
            RUDA_SCALAR(uint32_t, K), RUDA_SHARED(float, As, MM_TM * MM_KT),
            RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"
#undef MM_BX
#undef MM_BY
#undef MM_WY
#undef MM_KT
#undef MM_VEC

/* 32 x 8 units, 4 rows each: 32 x 32 tiles, 4-element loads. */
#define MM_BX 32
#define MM_BY 8
#define MM_WY 4
#define MM_KT 16
#define MM_VEC 4
RUDA_KERNEL(tuned_mm_b32x8_w4_k16_v4, RUDA_DIM(32, 8, 1), RUDA_BUFFER(const float *restrict, A),
            RUDA_BUFFER(const float *restrict, B), RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"
#undef MM_BX
#undef MM_BY
#undef MM_WY
#undef MM_KT
#undef MM_VEC

/* 64 x 1 units, 8 rows each: 8 x 64 tiles, k tiles of 64 (few units with
 * long rows: the CPU's shape). */
#define MM_BX 64
#define MM_BY 1
#define MM_WY 8
#define MM_KT 64
#define MM_VEC 4
RUDA_KERNEL(tuned_mm_b64x1_w8_k64_v4, RUDA_DIM(64, 1, 1), RUDA_BUFFER(const float *restrict, A),
            RUDA_BUFFER(const float *restrict, B), RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"
#undef MM_BX
#undef MM_BY
#undef MM_WY
#undef MM_KT
#undef MM_VEC

/* 64 x 4 units, 4 rows each: 16 x 64 tiles, k tiles of 32. */
#define MM_BX 64
#define MM_BY 4
#define MM_WY 4
#define MM_KT 32
#define MM_VEC 4
RUDA_KERNEL(tuned_mm_b64x4_w4_k32_v4, RUDA_DIM(64, 4, 1), RUDA_BUFFER(const float *restrict, A),
            RUDA_BUFFER(const float *restrict, B), RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"
#undef MM_BX
#undef MM_BY
#undef MM_WY
#undef MM_KT
#undef MM_VEC

/* 128 x 1 units, 4 rows each: 4 x 128 tiles, k tiles of 64. */
#define MM_BX 128
#define MM_BY 1
#define MM_WY 4
#define MM_KT 64
#define MM_VEC 4
RUDA_KERNEL(tuned_mm_b128x1_w4_k64_v4, RUDA_DIM(128, 1, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C), RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N),
            RUDA_SCALAR(uint32_t, K), RUDA_SHARED(float, As, MM_TM * MM_KT),
            RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"
#undef MM_BX
#undef MM_BY
#undef MM_WY
#undef MM_KT
#undef MM_VEC

/* ---- sum: units per ruda, elements per unit (the launch's chunk), one
 * pass (atomic) or two ---- */

#define SUM_UNITS 64
#define SUM_ATOMIC 1
RUDA_KERNEL(tuned_sum_u64_atomic, RUDA_DIM(64, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"
#undef SUM_UNITS
#undef SUM_ATOMIC

#define SUM_UNITS 256
#define SUM_ATOMIC 1
RUDA_KERNEL(tuned_sum_u256_atomic, RUDA_DIM(256, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"
#undef SUM_UNITS
#undef SUM_ATOMIC

#define SUM_UNITS 64
#define SUM_ATOMIC 0
RUDA_KERNEL(tuned_sum_u64_part, RUDA_DIM(64, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"
#undef SUM_UNITS
#undef SUM_ATOMIC

#define SUM_UNITS 256
#define SUM_ATOMIC 0
RUDA_KERNEL(tuned_sum_u256_part, RUDA_DIM(256, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"
#undef SUM_UNITS
#undef SUM_ATOMIC

/* Units reading contiguous shares, 16 partial sums each (sum_body.h). */
#define SUM_UNITS 16
#define SUM_ATOMIC 0
#define SUM_LANES 16
RUDA_KERNEL(tuned_sum_u16_l16_part, RUDA_DIM(16, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"
#undef SUM_UNITS
#undef SUM_ATOMIC
#undef SUM_LANES

#define SUM_UNITS 64
#define SUM_ATOMIC 0
#define SUM_LANES 16
RUDA_KERNEL(tuned_sum_u64_l16_part, RUDA_DIM(64, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"
#undef SUM_UNITS
#undef SUM_ATOMIC
#undef SUM_LANES

/* The second pass: one ruda sums the first pass's partial sums. */
#define SUM_UNITS 256
#define SUM_ATOMIC 0
RUDA_KERNEL(tuned_sum_final, RUDA_DIM(256, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"
#undef SUM_UNITS
#undef SUM_ATOMIC

/* ---- triad, the bandwidth kernel: range chunk sizes (the launch's) and
 * units per ruda ---- */

RUDA_KERNEL(tuned_triad_u64, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(const float *restrict, c),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk)) {
  const uint64_t begin = (uint64_t)ruda_pos.x * chunk;
  const uint64_t end = RUDA_MIN(begin + chunk, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) a[i] = b[i] + s * c[i];
}

RUDA_KERNEL(tuned_triad_u256, RUDA_DIM(256, 1, 1), RUDA_BUFFER(float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(const float *restrict, c),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk)) {
  const uint64_t begin = (uint64_t)ruda_pos.x * chunk;
  const uint64_t end = RUDA_MIN(begin + chunk, n);
  RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) a[i] = b[i] + s * c[i];
}

#endif
