/* ruda/kernel_dialect.h: write a kernel once, run it on cpu, cuda and opencl.
 *
 * A kernel file (a .c file or a header of the user's) includes this header
 * and declares kernels in a C dialect; docs/kernels.md is the guide. In
 * short:
 *
 *     #include <ruda/kernel_dialect.h>
 *
 *     RUDA_KERNEL(scale, RUDA_DIM(256, 1, 1),
 *                 RUDA_BUFFER(float *restrict, x), RUDA_SCALAR(uint32_t, n),
 *                 RUDA_SCALAR(float, a)) {
 *       RUDA_UNITS(u) {                     // every unit of the ruda, once
 *         if (u.abs_x < n) x[u.abs_x] *= a;
 *       }
 *     }
 *
 * Code outside the region macros is uniform: it runs once per ruda on the
 * CPU and in every unit (with the same values) on a GPU. Region macros:
 * RUDA_UNITS(u), RUDA_RANGE(type, i, begin, end), RUDA_SINGLE (each ends
 * with a barrier; the _NOWAIT forms do not), RUDA_BARRIER(). Per-unit state
 * that outlives a region: RUDA_PRIVATE(type, name) and RUDA_PRIV(u, name).
 * Parameters: RUDA_BUFFER, RUDA_SCALAR, RUDA_SHARED, RUDA_SHARED_DYNAMIC.
 * Also: ruda_pos, ruda_count, ruda_dim (x, y, z), atomics
 * ruda_atomic_{add,min,max,xchg,cas}_{i32,u32,i64,u64}, ruda_atomic_add_f32,
 * ruda_atomic_add_f64, ruda_atomic_xchg_f32, the C99 math functions, and
 * RUDA_FN / RUDA_GLOBAL / RUDA_SHMEM / RUDA_CONSTANT for helpers and tables.
 *
 * Compiled by the C compiler, this header is the CPU mapping (and the host
 * helpers RUDA_KERNEL_DESC, RUDA_KERNEL_CREATE, RUDA_LAUNCH); on cuda:N and
 * opencl:N ruda compiles the file's embedded text behind its own prelude,
 * and the embed step drops this include. nvcc picks the CUDA mapping.
 */
#ifndef RUDA_KERNEL_DIALECT_H
#define RUDA_KERNEL_DIALECT_H

#include "ruda/dialect/common.h"

#if defined(__CUDACC__)
#include "ruda/dialect/gpu.h"
#include "ruda/dialect/cuda.h"
#elif defined(__cplusplus)
/* Kernel files are C; from C++ this header only checks that it parses. */
#else
#include "ruda/dialect/cpu.h"
#endif

#endif /* RUDA_KERNEL_DIALECT_H */
