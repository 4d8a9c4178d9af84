/* The kernels of the tuned operations ruda ships (ruda/tune.h:
 * ruda_tune_matmul_f32, ruda_tune_sum_f32, ruda_tune_triad_f32), written
 * once in the kernel dialect. Each candidate is the same body compiled
 * with other constants: a tuple of them is #defined (MM_SHAPE, SUM_SHAPE),
 * then RUDA_KERNEL names the candidate and the body file follows (it is
 * included once per candidate, so it has no include guard, and it
 * undefines the tuple at its end). The embed step inlines the body
 * files into the text compiled for cuda:N and opencl:N, so every backend
 * sees the same candidates. */
#ifndef RUDA_TUNE_TUNED_KERNELS_H
#define RUDA_TUNE_TUNED_KERNELS_H

#include <ruda/kernel_dialect.h>

/* ---- matmul: tile sizes, units per ruda, elements per unit, vector loads ---- */

/* Each candidate defines MM_SHAPE, (units in x, units in y, rows per unit,
 * k tile, elements per load), then its RUDA_KERNEL and the body, which
 * ends by undefining MM_SHAPE. (The parameters are spelled out in each
 * RUDA_KERNEL: the backends read them from the kernel's text.) */
#define MM_APPLY(m, args) m args
#define MM__BX(bx, by, wy, kt, vec) bx
#define MM__BY(bx, by, wy, kt, vec) by
#define MM__WY(bx, by, wy, kt, vec) wy
#define MM__KT(bx, by, wy, kt, vec) kt
#define MM__VEC(bx, by, wy, kt, vec) vec
#define MM_BX MM_APPLY(MM__BX, MM_SHAPE)
#define MM_BY MM_APPLY(MM__BY, MM_SHAPE)
#define MM_WY MM_APPLY(MM__WY, MM_SHAPE)
#define MM_KT MM_APPLY(MM__KT, MM_SHAPE)
#define MM_VEC MM_APPLY(MM__VEC, MM_SHAPE)
#define MM_TM (MM_BY * MM_WY)
#define MM_TN MM_BX

/* 16 x 16 units, one element each, k tiles of 16: the default (the tiled
 * matmul of examples/). */
#define MM_SHAPE (16, 16, 1, 16, 1)
RUDA_KERNEL(tuned_mm_b16x16_w1_k16, RUDA_DIM(MM_BX, MM_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"

/* 16 x 16 units, 2 rows each: 32 x 16 tiles. */
#define MM_SHAPE (16, 16, 2, 16, 2)
RUDA_KERNEL(tuned_mm_b16x16_w2_k16_v2, RUDA_DIM(MM_BX, MM_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"

/* 32 x 8 units, 4 rows each: 32 x 32 tiles, 4-element loads. */
#define MM_SHAPE (32, 8, 4, 16, 4)
RUDA_KERNEL(tuned_mm_b32x8_w4_k16_v4, RUDA_DIM(MM_BX, MM_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"

/* 64 x 1 units, 8 rows each: 8 x 64 tiles, k tiles of 64 (few units with
 * long rows: the CPU's shape). */
#define MM_SHAPE (64, 1, 8, 64, 4)
RUDA_KERNEL(tuned_mm_b64x1_w8_k64_v4, RUDA_DIM(MM_BX, MM_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"

/* 64 x 4 units, 4 rows each: 16 x 64 tiles, k tiles of 32. */
#define MM_SHAPE (64, 4, 4, 32, 4)
RUDA_KERNEL(tuned_mm_b64x4_w4_k32_v4, RUDA_DIM(MM_BX, MM_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"

/* 128 x 1 units, 4 rows each: 4 x 128 tiles, k tiles of 64. */
#define MM_SHAPE (128, 1, 4, 64, 4)
RUDA_KERNEL(tuned_mm_b128x1_w4_k64_v4, RUDA_DIM(MM_BX, MM_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, MM_TM * MM_KT), RUDA_SHARED(float, Bs, MM_KT * MM_TN))
#include "matmul_body.h"

/* The register-blocked candidates for GPUs (matmul_regs_body.h): RG_SHAPE
 * is (units in x, units in y, rows per unit, columns per unit, k tile,
 * 1: the loop over a k tile unrolled on CUDA, more registers per unit and
 * fewer rudas per multiprocessor, or 0: not); each unit keeps its rows x
 * columns sub-tile of C in registers. */
#define RG_APPLY(m, args) m args
#define RG__BX(bx, by, rm, rn, kt, un) bx
#define RG__BY(bx, by, rm, rn, kt, un) by
#define RG__RM(bx, by, rm, rn, kt, un) rm
#define RG__RN(bx, by, rm, rn, kt, un) rn
#define RG__KT(bx, by, rm, rn, kt, un) kt
#define RG__UN(bx, by, rm, rn, kt, un) un
#define RG_BX RG_APPLY(RG__BX, RG_SHAPE)
#define RG_BY RG_APPLY(RG__BY, RG_SHAPE)
#define RG_RM RG_APPLY(RG__RM, RG_SHAPE)
#define RG_RN RG_APPLY(RG__RN, RG_SHAPE)
#define RG_KT RG_APPLY(RG__KT, RG_SHAPE)
#define RG_UN RG_APPLY(RG__UN, RG_SHAPE)
#define RG_TM (RG_BY * RG_RM)
#define RG_TN (RG_BX * RG_RN)

/* 16 x 16 units, 8 x 8 each: 128 x 128 tiles, k tiles of 8 (large sizes). */
#define RG_SHAPE (16, 16, 8, 8, 8, 1)
RUDA_KERNEL(tuned_mm_r16x16_t8x8_k8, RUDA_DIM(RG_BX, RG_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, 2 * RG_KT * (RG_TM + 4)),
            RUDA_SHARED(float, Bs, 2 * RG_KT * RG_TN))
#include "matmul_regs_body.h"

/* 16 x 16 units, 8 x 4 each: 128 x 64 tiles, k tiles of 16 (mid sizes:
 * twice the rudas of the 128 x 128 tiles). */
#define RG_SHAPE (16, 16, 8, 4, 16, 1)
RUDA_KERNEL(tuned_mm_r16x16_t8x4_k16, RUDA_DIM(RG_BX, RG_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, 2 * RG_KT * (RG_TM + 4)),
            RUDA_SHARED(float, Bs, 2 * RG_KT * RG_TN))
#include "matmul_regs_body.h"

/* 16 x 16 units, 4 x 4 each: 64 x 64 tiles, k tiles of 16 (mid and small
 * sizes: four times the rudas). */
#define RG_SHAPE (16, 16, 4, 4, 16, 1)
RUDA_KERNEL(tuned_mm_r16x16_t4x4_k16, RUDA_DIM(RG_BX, RG_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, 2 * RG_KT * (RG_TM + 4)),
            RUDA_SHARED(float, Bs, 2 * RG_KT * RG_TN))
#include "matmul_regs_body.h"

/* The 128 x 128 tiles again, the k loop rolled: about 125 registers per
 * unit instead of 143, two rudas per multiprocessor instead of one. */
#define RG_SHAPE (16, 16, 8, 8, 8, 0)
RUDA_KERNEL(tuned_mm_r16x16_t8x8_k8_rolled, RUDA_DIM(RG_BX, RG_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, 2 * RG_KT * (RG_TM + 4)),
            RUDA_SHARED(float, Bs, 2 * RG_KT * RG_TN))
#include "matmul_regs_body.h"

/* 8 x 8 units, 8 x 8 each: 64 x 64 tiles of two warps (mid sizes: four
 * times the rudas of the 128 x 128 tiles, each unit as busy). */
#define RG_SHAPE (8, 8, 8, 8, 8, 1)
RUDA_KERNEL(tuned_mm_r8x8_t8x8_k8, RUDA_DIM(RG_BX, RG_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, 2 * RG_KT * (RG_TM + 4)),
            RUDA_SHARED(float, Bs, 2 * RG_KT * RG_TN))
#include "matmul_regs_body.h"

/* 8 x 16 units, 8 x 8 each: 128 x 64 tiles of four warps. */
#define RG_SHAPE (8, 16, 8, 8, 8, 1)
RUDA_KERNEL(tuned_mm_r8x16_t8x8_k8, RUDA_DIM(RG_BX, RG_BY, 1),
            RUDA_BUFFER(const float *restrict, A), RUDA_BUFFER(const float *restrict, B),
            RUDA_BUFFER(float *restrict, C),
            RUDA_SCALAR(uint32_t, M), RUDA_SCALAR(uint32_t, N), RUDA_SCALAR(uint32_t, K),
            RUDA_SHARED(float, As, 2 * RG_KT * (RG_TM + 4)),
            RUDA_SHARED(float, Bs, 2 * RG_KT * RG_TN))
#include "matmul_regs_body.h"

/* ---- sum: units per ruda, elements per unit (the launch's chunk), one
 * pass (atomic) or two ---- */

/* Each candidate defines SUM_SHAPE, (units, 1: atomic one pass or 0: the
 * first of two passes, lanes: 0, or partial sums per unit over a
 * contiguous share, ilp: elements a unit reads per step of the strided
 * form, each into its own accumulator, see sum_body.h), then its
 * RUDA_KERNEL and the body, which ends by undefining SUM_SHAPE. */
#define SUM_APPLY(m, args) m args
#define SUM__UNITS(units, atomic, lanes, ilp) units
#define SUM__ATOMIC(units, atomic, lanes, ilp) atomic
#define SUM__LANES(units, atomic, lanes, ilp) lanes
#define SUM__ILP(units, atomic, lanes, ilp) ilp
#define SUM_UNITS SUM_APPLY(SUM__UNITS, SUM_SHAPE)
#define SUM_ATOMIC SUM_APPLY(SUM__ATOMIC, SUM_SHAPE)
#define SUM_LANES SUM_APPLY(SUM__LANES, SUM_SHAPE)
#define SUM_ILP SUM_APPLY(SUM__ILP, SUM_SHAPE)
/* SUM_EACH(m): m(j) for each accumulator j of the strided form (SUM_ILP
 * of them: 1, 4 or 8), with the steps of sum_body.h on accumulator j
 * (its names: the unit u, the step's first element b, full and end). */
#define SUM__CAT(a, b) a##b
#define SUM__XCAT(a, b) SUM__CAT(a, b)
#define SUM__EACH1(m) m(0)
#define SUM__EACH4(m) m(0) m(1) m(2) m(3)
#define SUM__EACH8(m) SUM__EACH4(m) m(4) m(5) m(6) m(7)
#define SUM_EACH(m) SUM__XCAT(SUM__EACH, SUM_ILP)(m)
#define SUM__DECL(j) RUDA_PRIVATE(float, acc##j);
#define SUM__ZERO(j) RUDA_PRIV(u, acc##j) = 0.0f;
#define SUM__ADD(j) RUDA_PRIV(u, acc##j) += x[b + (j) * SUM_UNITS + u.x];
#define SUM__FOLD(j)                                                                    \
  t += RUDA_PRIV(u, acc##j) +                                                           \
       (full + (j) * SUM_UNITS + u.x < end ? x[full + (j) * SUM_UNITS + u.x] : 0.0f);

#define SUM_SHAPE (64, 1, 0, 1)
RUDA_KERNEL(tuned_sum_u64_atomic, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

#define SUM_SHAPE (256, 1, 0, 1)
RUDA_KERNEL(tuned_sum_u256_atomic, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

#define SUM_SHAPE (64, 0, 0, 1)
RUDA_KERNEL(tuned_sum_u64_part, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

#define SUM_SHAPE (256, 0, 0, 1)
RUDA_KERNEL(tuned_sum_u256_part, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

/* Units reading contiguous shares, 16 partial sums each (sum_body.h). */
#define SUM_SHAPE (16, 0, 16, 1)
RUDA_KERNEL(tuned_sum_u16_l16_part, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

#define SUM_SHAPE (64, 0, 16, 1)
RUDA_KERNEL(tuned_sum_u64_l16_part, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

/* Strided, 4 or 8 elements and accumulators per unit and step: loads in
 * flight on a GPU (sum_body.h). The first is also the second pass of
 * every two-pass candidate: one ruda sums the first pass's partial sums. */
#define SUM_SHAPE (256, 0, 0, 8)
RUDA_KERNEL(tuned_sum_u256_i8_part, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

#define SUM_SHAPE (256, 1, 0, 8)
RUDA_KERNEL(tuned_sum_u256_i8_atomic, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

#define SUM_SHAPE (256, 0, 0, 4)
RUDA_KERNEL(tuned_sum_u256_i4_part, RUDA_DIM(SUM_UNITS, 1, 1),
            RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out), RUDA_SCALAR(uint64_t, n),
            RUDA_SCALAR(uint64_t, chunk), RUDA_SHARED(float, sh, SUM_UNITS))
#include "sum_body.h"

/* ---- triad, the bandwidth kernel: range chunk sizes (the launch's) and
 * units per ruda ---- */

#define TRIAD_BODY                                                       \
  {                                                                      \
    const uint64_t begin = (uint64_t)ruda_pos.x * chunk;                 \
    const uint64_t end = RUDA_MIN(begin + chunk, n);                     \
    RUDA_RANGE_NOWAIT(uint64_t, i, begin, end) a[i] = b[i] + s * c[i]; \
  }

RUDA_KERNEL(tuned_triad_u64, RUDA_DIM(64, 1, 1), RUDA_BUFFER(float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(const float *restrict, c),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk))
TRIAD_BODY

RUDA_KERNEL(tuned_triad_u256, RUDA_DIM(256, 1, 1), RUDA_BUFFER(float *restrict, a),
            RUDA_BUFFER(const float *restrict, b), RUDA_BUFFER(const float *restrict, c),
            RUDA_SCALAR(float, s), RUDA_SCALAR(uint64_t, n), RUDA_SCALAR(uint64_t, chunk))
TRIAD_BODY

#endif
