/* ruda/dialect/common.h: the target-independent part of the kernel dialect.
 *
 * Pure preprocessor: the same text is read by the user's C compiler (cpu:N),
 * by NVRTC (cuda:N) and by the OpenCL compiler (opencl:N), each followed by
 * its own mapping (dialect/cpu.h, dialect/cuda.h, dialect/opencl.h). Users
 * include <ruda/kernel_dialect.h>; docs/kernels.md describes the dialect.
 *
 * What lives here:
 *  - the kernel's dims, RUDA_DIM(x, y, z) and RUDA_DIM_ANY;
 *  - the parameter kinds of RUDA_KERNEL (buffers, scalars, shared arrays),
 *    each a tuple (KIND, type, name[, count]) that a mapping expands in
 *    several places (signature, declarations, call, host launcher);
 *  - RUDA__PARAMS(M, name, dims, params...): applies M to every parameter,
 *    up to 32 of them, without an empty variadic argument (strict C11);
 *  - RUDA_MIN/RUDA_MAX.
 */
#ifndef RUDA_DIALECT_COMMON_H
#define RUDA_DIALECT_COMMON_H

/* ---- Dims: units per ruda, fixed by the kernel's declaration ---- */

/* A kernel declared with RUDA_DIM(x, y, z) always runs with x*y*z units per
 * ruda; the mappings use the constants (loop bounds on the CPU,
 * __launch_bounds__ on CUDA, reqd_work_group_size on OpenCL). */
#define RUDA_DIM(x, y, z) (x, y, z, RudaFixed)
/* A kernel whose dims are chosen when its kernel object is created
 * (ruda_kernel_desc_t.ruda_dim); private variables then take
 * RUDA_DIM_ANY_MAX_UNITS slots on the CPU. */
#define RUDA_DIM_ANY (0, 0, 0, RudaAny)
#define RUDA_DIM_ANY_MAX_UNITS 1024

#define RUDA__DIM_X(d) RUDA__DIM_X_I d
#define RUDA__DIM_X_I(x, y, z, kind) (x)
#define RUDA__DIM_Y(d) RUDA__DIM_Y_I d
#define RUDA__DIM_Y_I(x, y, z, kind) (y)
#define RUDA__DIM_Z(d) RUDA__DIM_Z_I d
#define RUDA__DIM_Z_I(x, y, z, kind) (z)
#define RUDA__DIM_KIND(d) RUDA__DIM_KIND_I d
#define RUDA__DIM_KIND_I(x, y, z, kind) kind
/* Units per ruda as a constant expression; RUDA_DIM_ANY_MAX_UNITS for
 * RUDA_DIM_ANY (a bound for private storage). */
#define RUDA__DIM_UNITS_CAP(d) RUDA__CAT(RUDA__UNITS_CAP_, RUDA__DIM_KIND(d))(d)
#define RUDA__UNITS_CAP_RudaFixed(d) (RUDA__DIM_X(d) * RUDA__DIM_Y(d) * RUDA__DIM_Z(d))
#define RUDA__UNITS_CAP_RudaAny(d) RUDA_DIM_ANY_MAX_UNITS

/* ---- Parameters of RUDA_KERNEL ---- */

/* A buffer: one device buffer argument, in the order the buffers appear.
 * `ptr_type` is the full pointer type as the kernel sees it, qualifiers
 * included: `float *`, `const float *restrict`, `uint8_t *restrict`. */
#define RUDA_BUFFER(ptr_type, name) (RudaBuf, ptr_type, name, ~)
/* A scalar (at most 8 bytes: any integer type, float, double, bool,
 * ruda_f16, ruda_bf16), read from the launch's info words: scalar number k
 * (0-based, in declaration order) is info word k, low-order bytes. */
#define RUDA_SCALAR(type, name) (RudaScalar, type, name, ~)
/* Shared memory: `type name[count]`, one per ruda, count a constant. */
#define RUDA_SHARED(type, name, count) (RudaShared, type, name, count)
/* Shared memory sized when the kernel object is created
 * (ruda_kernel_desc_t.shared_mem_bytes): `type *name`, 16-byte aligned.
 * At most one per kernel. */
#define RUDA_SHARED_DYNAMIC(type, name) (RudaSharedDyn, type, name, ~)

/* Applies M to one parameter tuple: M##_##KIND(type, name, count), KIND one of RudaBuf,
 * RudaScalar, RudaShared, RudaSharedDyn (tokens no user macro is likely to
 * take). */
#define RUDA__P(M, p) RUDA__P_I(M, RUDA__UNPAREN p)
#define RUDA__P_I(M, ...) RUDA__P_II(M, __VA_ARGS__)
#define RUDA__P_II(M, kind, type, name, count) M##_##kind(type, name, count)
#define RUDA__UNPAREN(...) __VA_ARGS__

/* Counts: RUDA__NUM_BUFFERS(params...) etc. are constant expressions. */
#define RUDA__COUNT_BUF_RudaBuf(t, n, c) +1
#define RUDA__COUNT_BUF_RudaScalar(t, n, c)
#define RUDA__COUNT_BUF_RudaShared(t, n, c)
#define RUDA__COUNT_BUF_RudaSharedDyn(t, n, c)
#define RUDA__COUNT_SCALAR_RudaBuf(t, n, c)
#define RUDA__COUNT_SCALAR_RudaScalar(t, n, c) +1
#define RUDA__COUNT_SCALAR_RudaShared(t, n, c)
#define RUDA__COUNT_SCALAR_RudaSharedDyn(t, n, c)

/* ---- Utilities ---- */

#define RUDA__CAT(a, b) RUDA__CAT_I(a, b)
#define RUDA__CAT_I(a, b) a##b
#define RUDA__STR(x) RUDA__STR_I(x)
#define RUDA__STR_I(x) #x
#define RUDA__ARG0(a, ...) a
/* m(args) after the arguments are expanded (a macro pasting with ## sees
 * its arguments unexpanded). */
#define RUDA__CALL(m, ...) m(__VA_ARGS__)
#define RUDA__ARG1(a, b, ...) b

/* Integer and float min/max for any arithmetic type (each argument is
 * evaluated twice). */
#define RUDA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RUDA_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- RUDA__PARAMS(M, name, dims, p1, ..., pk): M applied to p1..pk ---- */

#define RUDA__NARGS(...)                                                                  \
  RUDA__NARGS_I(__VA_ARGS__, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, \
                19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, ~)
#define RUDA__NARGS_I(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, \
                      a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, \
                      a31, a32, a33, a34, n, ...)                                           \
  n
#define RUDA__PARAMS(M, ...) RUDA__CAT(RUDA__FP_, RUDA__NARGS(__VA_ARGS__))(M, __VA_ARGS__)
#define RUDA__FP_2(M, n, d)
#define RUDA__FP_3(M, n, d, a) RUDA__P(M, a)
#define RUDA__FP_4(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_3(M, n, d, __VA_ARGS__)
#define RUDA__FP_5(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_4(M, n, d, __VA_ARGS__)
#define RUDA__FP_6(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_5(M, n, d, __VA_ARGS__)
#define RUDA__FP_7(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_6(M, n, d, __VA_ARGS__)
#define RUDA__FP_8(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_7(M, n, d, __VA_ARGS__)
#define RUDA__FP_9(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_8(M, n, d, __VA_ARGS__)
#define RUDA__FP_10(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_9(M, n, d, __VA_ARGS__)
#define RUDA__FP_11(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_10(M, n, d, __VA_ARGS__)
#define RUDA__FP_12(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_11(M, n, d, __VA_ARGS__)
#define RUDA__FP_13(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_12(M, n, d, __VA_ARGS__)
#define RUDA__FP_14(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_13(M, n, d, __VA_ARGS__)
#define RUDA__FP_15(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_14(M, n, d, __VA_ARGS__)
#define RUDA__FP_16(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_15(M, n, d, __VA_ARGS__)
#define RUDA__FP_17(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_16(M, n, d, __VA_ARGS__)
#define RUDA__FP_18(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_17(M, n, d, __VA_ARGS__)
#define RUDA__FP_19(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_18(M, n, d, __VA_ARGS__)
#define RUDA__FP_20(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_19(M, n, d, __VA_ARGS__)
#define RUDA__FP_21(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_20(M, n, d, __VA_ARGS__)
#define RUDA__FP_22(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_21(M, n, d, __VA_ARGS__)
#define RUDA__FP_23(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_22(M, n, d, __VA_ARGS__)
#define RUDA__FP_24(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_23(M, n, d, __VA_ARGS__)
#define RUDA__FP_25(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_24(M, n, d, __VA_ARGS__)
#define RUDA__FP_26(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_25(M, n, d, __VA_ARGS__)
#define RUDA__FP_27(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_26(M, n, d, __VA_ARGS__)
#define RUDA__FP_28(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_27(M, n, d, __VA_ARGS__)
#define RUDA__FP_29(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_28(M, n, d, __VA_ARGS__)
#define RUDA__FP_30(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_29(M, n, d, __VA_ARGS__)
#define RUDA__FP_31(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_30(M, n, d, __VA_ARGS__)
#define RUDA__FP_32(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_31(M, n, d, __VA_ARGS__)
#define RUDA__FP_33(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_32(M, n, d, __VA_ARGS__)
#define RUDA__FP_34(M, n, d, a, ...) RUDA__P(M, a) RUDA__FP_33(M, n, d, __VA_ARGS__)

/* The kernel's name and dims from RUDA_KERNEL's arguments. */
#define RUDA__KNAME(...) RUDA__ARG0(__VA_ARGS__, ~)
#define RUDA__KDIMS(...) RUDA__ARG1(__VA_ARGS__, ~)

#define RUDA__NUM_BUFFERS(...) (0 RUDA__PARAMS(RUDA__COUNT_BUF, __VA_ARGS__))
#define RUDA__NUM_SCALARS(...) (0 RUDA__PARAMS(RUDA__COUNT_SCALAR, __VA_ARGS__))


/* ---- The types every mapping declares, after its integer types ----
 * ruda_u3_t: three counts or positions. ruda_unit_t: one unit inside a
 * per-unit region: x, y, z, its position in the ruda; index, x + dim.x *
 * (y + dim.y * z); abs_x, abs_y, abs_z, its position in the dispatch
 * (ruda_pos * ruda_dim + (x, y, z)); slot_, its private storage index
 * (RUDA_PRIV). ruda_f16 (IEEE binary16) and ruda_bf16 (bfloat16) are
 * stored as their bits. ruda__u3(x, y, z) makes a ruda_u3_t; QUAL is the
 * mapping's function qualifiers. */
#define RUDA__UNIT_TYPES(QUAL)                                  \
  typedef struct ruda_u3 {                                      \
    uint32_t x, y, z;                                           \
  } ruda_u3_t;                                                  \
  typedef struct ruda_unit {                                    \
    uint32_t x, y, z;                                           \
    uint32_t index;                                             \
    uint32_t abs_x, abs_y, abs_z;                               \
    uint32_t slot_;                                             \
  } ruda_unit_t;                                                \
  typedef uint16_t ruda_f16;                                    \
  typedef uint16_t ruda_bf16;                                   \
  QUAL ruda_u3_t ruda__u3(uint32_t x, uint32_t y, uint32_t z) { \
    ruda_u3_t r;                                                \
    r.x = x;                                                    \
    r.y = y;                                                    \
    r.z = z;                                                    \
    return r;                                                   \
  }

/* ---- Half-precision conversions in software (CPU and OpenCL) ----
 * Expects ruda__f32_bits/ruda__bits_f32 and uint16_t/uint32_t. Rounds to
 * nearest even; NaN stays NaN, overflow gives infinity. */
#define RUDA__SOFT_HALF_CONVERSIONS(QUAL)                                        \
  QUAL float ruda_f16_to_f32(ruda_f16 h) {                                      \
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;                              \
    uint32_t ex = ((uint32_t)h >> 10) & 0x1fu, man = (uint32_t)h & 0x3ffu;      \
    if (ex == 0) {                                                              \
      float m = (float)man * 5.9604644775390625e-8f; /* 2^-24 */               \
      return sign ? -m : m;                                                     \
    }                                                                           \
    if (ex == 31) return ruda__bits_f32(sign | 0x7f800000u | (man << 13));      \
    return ruda__bits_f32(sign | ((ex + 112u) << 23) | (man << 13));            \
  }                                                                             \
  QUAL ruda_f16 ruda_f32_to_f16(float f) {                                      \
    uint32_t x = ruda__f32_bits(f);                                             \
    uint32_t sign = (x >> 16) & 0x8000u;                                        \
    x &= 0x7fffffffu;                                                           \
    if (x >= 0x47800000u) /* >= 65536, inf or NaN */                            \
      return (ruda_f16)(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));          \
    if (x < 0x38800000u) { /* below 2^-14: subnormal half, let the FPU round */ \
      float a = ruda__bits_f32(x) + 0.5f;                                       \
      return (ruda_f16)(sign | (ruda__f32_bits(a) - 0x3f000000u));              \
    }                                                                           \
    uint32_t odd = (x >> 13) & 1u;                                              \
    x += 0xc8000fffu + odd; /* rebias exponent by -112, round half to even */   \
    return (ruda_f16)(sign | (x >> 13));                                        \
  }                                                                             \
  QUAL float ruda_bf16_to_f32(ruda_bf16 h) { return ruda__bits_f32((uint32_t)h << 16); } \
  QUAL ruda_bf16 ruda_f32_to_bf16(float f) {                                    \
    uint32_t x = ruda__f32_bits(f);                                             \
    if ((x & 0x7fffffffu) > 0x7f800000u) return (ruda_bf16)((x >> 16) | 0x40u); \
    return (ruda_bf16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);                 \
  }

/* The same conversions in host C (the CPU mapping, and ruda's own CPU
 * collectives, which round as a kernel does), a float's bits read through
 * memcpy (<string.h>). */
#define RUDA__HOST_HALF_CONVERSIONS(QUAL)  \
  QUAL uint32_t ruda__f32_bits(float f) { \
    uint32_t u;                           \
    memcpy(&u, &f, sizeof u);             \
    return u;                             \
  }                                       \
  QUAL float ruda__bits_f32(uint32_t u) { \
    float f;                              \
    memcpy(&f, &u, sizeof f);             \
    return f;                             \
  }                                       \
  RUDA__SOFT_HALF_CONVERSIONS(QUAL)

#endif /* RUDA_DIALECT_COMMON_H */
