/* ruda/dialect/opencl.h: the kernel dialect on opencl:N (the OpenCL prelude).
 *
 * ruda builds a portable kernel for OpenCL as: dialect/common.h,
 * dialect/gpu.h and this file (one string in the library), then the kernel
 * file's text from the embed step (which starts with a #line directive, so
 * the build log names the user's file and line), with clBuildProgram.
 * OpenCL C 1.2 or newer.
 *
 * A RUDA_KERNEL becomes `__kernel void NAME(buffers..., __global const ulong
 * *info[, __local uint4 *dynamic_shared])`: one __global pointer per buffer
 * in declaration order, the info words, and, in a kernel that declares
 * RUDA_SHARED_DYNAMIC, a __local argument the backend sizes to the kernel's
 * shared_mem_bytes. Fixed dims give reqd_work_group_size. Shared arrays are declared at kernel scope (as
 * OpenCL requires) and handed to the inlined body function.
 */
#ifndef RUDA_DIALECT_OPENCL_H
#define RUDA_DIALECT_OPENCL_H

#define RUDA_KERNEL_TARGET_OPENCL 1

/* compilation.fp_contract: the backend builds with
 * -DRUDA_KERNEL_FP_CONTRACT_OFF when it is "off". */
#if defined(RUDA_KERNEL_FP_CONTRACT_OFF)
#pragma OPENCL FP_CONTRACT OFF
#else
#pragma OPENCL FP_CONTRACT ON
#endif

#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif
#if defined(cl_khr_int64_extended_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable
#endif

/* ---- Types ---- */

typedef char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long int64_t;
typedef uchar uint8_t;
typedef ushort uint16_t;
typedef uint uint32_t;
typedef ulong uint64_t;

RUDA__UNIT_TYPES(static inline)


/* ---- Helpers, qualifiers, constants ---- */

#define RUDA_FN static inline
#define RUDA_GLOBAL __global
#define RUDA_SHMEM __local
#define RUDA_CONSTANT __constant
#define RUDA_PI 3.14159265358979323846
#define RUDA_PI_F 3.14159265358979323846f

#ifndef INT32_MAX
#define INT8_MIN CHAR_MIN
#define INT8_MAX CHAR_MAX
#define INT16_MIN SHRT_MIN
#define INT16_MAX SHRT_MAX
#define INT32_MIN INT_MIN
#define INT32_MAX INT_MAX
#define INT64_MIN LONG_MIN
#define INT64_MAX LONG_MAX
#define UINT8_MAX UCHAR_MAX
#define UINT16_MAX USHRT_MAX
#define UINT32_MAX UINT_MAX
#define UINT64_MAX ULONG_MAX
#endif

/* C99's float names on OpenCL's overloaded built-ins. */
#define sqrtf(x) sqrt((float)(x))
#define cbrtf(x) cbrt((float)(x))
#define expf(x) exp((float)(x))
#define exp2f(x) exp2((float)(x))
#define expm1f(x) expm1((float)(x))
#define logf(x) log((float)(x))
#define log2f(x) log2((float)(x))
#define log10f(x) log10((float)(x))
#define log1pf(x) log1p((float)(x))
#define powf(x, y) pow((float)(x), (float)(y))
#define sinf(x) sin((float)(x))
#define cosf(x) cos((float)(x))
#define tanf(x) tan((float)(x))
#define asinf(x) asin((float)(x))
#define acosf(x) acos((float)(x))
#define atanf(x) atan((float)(x))
#define atan2f(y, x) atan2((float)(y), (float)(x))
#define sinhf(x) sinh((float)(x))
#define coshf(x) cosh((float)(x))
#define tanhf(x) tanh((float)(x))
#define asinhf(x) asinh((float)(x))
#define acoshf(x) acosh((float)(x))
#define atanhf(x) atanh((float)(x))
#define erff(x) erf((float)(x))
#define erfcf(x) erfc((float)(x))
#define tgammaf(x) tgamma((float)(x))
#define lgammaf(x) lgamma((float)(x))
#define fabsf(x) fabs((float)(x))
#define floorf(x) floor((float)(x))
#define ceilf(x) ceil((float)(x))
#define roundf(x) round((float)(x))
#define truncf(x) trunc((float)(x))
#define rintf(x) rint((float)(x))
#define fminf(x, y) fmin((float)(x), (float)(y))
#define fmaxf(x, y) fmax((float)(x), (float)(y))
#define fmodf(x, y) fmod((float)(x), (float)(y))
#define fmaf(x, y, z) fma((float)(x), (float)(y), (float)(z))
#define copysignf(x, y) copysign((float)(x), (float)(y))
#define hypotf(x, y) hypot((float)(x), (float)(y))
#define ruda_rsqrtf(x) rsqrt((float)(x))

static inline uint32_t ruda__f32_bits(float f) { return as_uint(f); }
static inline float ruda__bits_f32(uint32_t u) { return as_float(u); }
RUDA__SOFT_HALF_CONVERSIONS(static inline)

/* ---- Atomics (relaxed; __global or __local pointers) ---- */

#define ruda_atomic_add_i32(p, v) atomic_add((p), (int)(v))
#define ruda_atomic_add_u32(p, v) atomic_add((p), (uint)(v))
#define ruda_atomic_min_i32(p, v) atomic_min((p), (int)(v))
#define ruda_atomic_min_u32(p, v) atomic_min((p), (uint)(v))
#define ruda_atomic_max_i32(p, v) atomic_max((p), (int)(v))
#define ruda_atomic_max_u32(p, v) atomic_max((p), (uint)(v))
#define ruda_atomic_xchg_i32(p, v) atomic_xchg((p), (int)(v))
#define ruda_atomic_xchg_u32(p, v) atomic_xchg((p), (uint)(v))
#define ruda_atomic_xchg_f32(p, v) atomic_xchg((p), (float)(v))
#define ruda_atomic_cas_i32(p, e, d) atomic_cmpxchg((p), (int)(e), (int)(d))
#define ruda_atomic_cas_u32(p, e, d) atomic_cmpxchg((p), (uint)(e), (uint)(d))

/* f32 add: a compare-exchange loop on the bits (OpenCL 1.2 has no float
 * atomic add). Overloaded for __global and __local where the compiler
 * allows it (clang-based compilers, PoCL among them); __global only
 * elsewhere. */
#if defined(__clang__)
#define RUDA__OCL_OVERLOAD __attribute__((overloadable))
#else
#define RUDA__OCL_OVERLOAD
#endif
/* NAME(p, v) for a T in address space AS: a loop of CAS (the compare-
 * exchange on W, the unsigned type of T's size) on the bits, TO_W and TO_T
 * converting them. */
#define RUDA__OCL_CAS_ADD(NAME, T, W, CAS, TO_W, TO_T, AS)          \
  static inline T RUDA__OCL_OVERLOAD NAME(volatile AS T *p, T v) { \
    volatile AS W *w = (volatile AS W *)p;                         \
    W old = *w, prev;                                              \
    do {                                                           \
      prev = old;                                                  \
      old = CAS(w, prev, TO_W(TO_T(prev) + v));                    \
    } while (old != prev);                                         \
    return TO_T(old);                                              \
  }
RUDA__OCL_CAS_ADD(ruda_atomic_add_f32, float, uint, atomic_cmpxchg, as_uint, as_float, __global)
#if defined(__clang__)
RUDA__OCL_CAS_ADD(ruda_atomic_add_f32, float, uint, atomic_cmpxchg, as_uint, as_float, __local)
#endif

#if defined(cl_khr_int64_base_atomics)
#define ruda_atomic_add_i64(p, v) atom_add((p), (long)(v))
#define ruda_atomic_add_u64(p, v) atom_add((p), (ulong)(v))
#define ruda_atomic_xchg_i64(p, v) atom_xchg((p), (long)(v))
#define ruda_atomic_xchg_u64(p, v) atom_xchg((p), (ulong)(v))
#define ruda_atomic_cas_i64(p, e, d) atom_cmpxchg((p), (long)(e), (long)(d))
#define ruda_atomic_cas_u64(p, e, d) atom_cmpxchg((p), (ulong)(e), (ulong)(d))
#else
/* A clear compilation error where the device has no 64-bit atomics. */
#define ruda_atomic_add_i64(p, v) RUDA_ERROR_64_bit_atomics_need_cl_khr_int64_base_atomics(p, v)
#define ruda_atomic_add_u64(p, v) RUDA_ERROR_64_bit_atomics_need_cl_khr_int64_base_atomics(p, v)
#define ruda_atomic_xchg_i64(p, v) RUDA_ERROR_64_bit_atomics_need_cl_khr_int64_base_atomics(p, v)
#define ruda_atomic_xchg_u64(p, v) RUDA_ERROR_64_bit_atomics_need_cl_khr_int64_base_atomics(p, v)
#define ruda_atomic_cas_i64(p, e, d) \
  RUDA_ERROR_64_bit_atomics_need_cl_khr_int64_base_atomics(p, e, d)
#define ruda_atomic_cas_u64(p, e, d) \
  RUDA_ERROR_64_bit_atomics_need_cl_khr_int64_base_atomics(p, e, d)
#endif
#if defined(cl_khr_int64_extended_atomics)
#define ruda_atomic_min_i64(p, v) atom_min((p), (long)(v))
#define ruda_atomic_min_u64(p, v) atom_min((p), (ulong)(v))
#define ruda_atomic_max_i64(p, v) atom_max((p), (long)(v))
#define ruda_atomic_max_u64(p, v) atom_max((p), (ulong)(v))
#else
#define ruda_atomic_min_i64(p, v) RUDA_ERROR_64_bit_min_max_need_cl_khr_int64_extended_atomics(p, v)
#define ruda_atomic_min_u64(p, v) RUDA_ERROR_64_bit_min_max_need_cl_khr_int64_extended_atomics(p, v)
#define ruda_atomic_max_i64(p, v) RUDA_ERROR_64_bit_min_max_need_cl_khr_int64_extended_atomics(p, v)
#define ruda_atomic_max_u64(p, v) RUDA_ERROR_64_bit_min_max_need_cl_khr_int64_extended_atomics(p, v)
#endif
#if defined(cl_khr_int64_base_atomics) && defined(cl_khr_fp64)
RUDA__OCL_CAS_ADD(ruda_atomic_add_f64, double, ulong, atom_cmpxchg, as_ulong, as_double, __global)
#if defined(__clang__)
RUDA__OCL_CAS_ADD(ruda_atomic_add_f64, double, ulong, atom_cmpxchg, as_ulong, as_double, __local)
#endif
#else
#define ruda_atomic_add_f64(p, v) \
  RUDA_ERROR_ruda_atomic_add_f64_needs_cl_khr_fp64_and_cl_khr_int64_base_atomics(p, v)
#endif

/* ---- Regions ---- */

#define RUDA__TID_X get_local_id(0)
#define RUDA__TID_Y get_local_id(1)
#define RUDA__TID_Z get_local_id(2)
#define RUDA__GPU_BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* On an OpenCL CPU device (PoCL; the backend builds with
 * -DRUDA__OPENCL_CPU_DEVICE) each unit takes a contiguous share of a range,
 * as on cpu:N, instead of every unit-count-th iteration. Such a device runs
 * a work-group's items one after another in a loop it vectorises across
 * items only where an item's code has no loop of its own: a strided range
 * became a scalar loop per item, jumping by the unit count. Contiguous
 * shares give each item a plain loop the compiler vectorises (a triad over
 * 1024-element chunks ran about 7x faster on PoCL 3.1, 2 cores). Which
 * unit runs which iteration was never part of a range's meaning. */
#if defined(RUDA__OPENCL_CPU_DEVICE)
#undef RUDA_RANGE
#undef RUDA_RANGE_NOWAIT
#undef RUDA_UNIT_SHARE
#define RUDA__OCL_SHARE(type, i, begin, end, unit)                                        \
  for (type ruda__sb = (begin), ruda__se = (end),                                        \
            ruda__sc = ruda__se > ruda__sb                                               \
                           ? (ruda__se - ruda__sb + (type)RUDA__GPU_UNITS_N - 1) /        \
                                 (type)RUDA__GPU_UNITS_N                                 \
                           : 0,                                                          \
            i = ruda__sb + ruda__sc * (type)(unit),                                      \
            ruda__sl = i < ruda__se ? (ruda__se - i < ruda__sc ? ruda__se : i + ruda__sc) \
                                    : i;                                                 \
       i < ruda__sl; i++)
#define RUDA__OCL_CPU_RANGE(type, i, begin, end, BAR)       \
  for (int ruda__once = 1; ruda__once; BAR, ruda__once = 0) \
    RUDA__OCL_SHARE(type, i, begin, end, RUDA__GPU_UINDEX)
#define RUDA_RANGE(type, i, begin, end) \
  RUDA__OCL_CPU_RANGE(type, i, begin, end, RUDA__GPU_BARRIER())
#define RUDA_RANGE_NOWAIT(type, i, begin, end) \
  RUDA__OCL_CPU_RANGE(type, i, begin, end, RUDA__GPU_NOBAR)
#define RUDA_UNIT_SHARE(u, type, i, begin, end) RUDA__OCL_SHARE(type, i, begin, end, (u).index)
#endif

/* ---- RUDA_KERNEL ---- */

#define RUDA_KERNEL(...) \
  RUDA__CALL(RUDA__OCL_KERNEL, RUDA__KNAME(__VA_ARGS__), RUDA__KDIMS(__VA_ARGS__), __VA_ARGS__)

#define RUDA__OCL_DIMS(d) RUDA__CAT(RUDA__OCL_DIMS_, RUDA__DIM_KIND(d))(d)
#define RUDA__OCL_DIMS_RudaFixed(d) ruda__u3(RUDA__DIM_X(d), RUDA__DIM_Y(d), RUDA__DIM_Z(d))
#define RUDA__OCL_DIMS_RudaAny(d) \
  ruda__u3(get_local_size(0), get_local_size(1), get_local_size(2))
#define RUDA__OCL_REQD(d) RUDA__CAT(RUDA__OCL_REQD_, RUDA__DIM_KIND(d))(d)
#define RUDA__OCL_REQD_RudaFixed(d) \
  __attribute__((reqd_work_group_size(RUDA__DIM_X(d), RUDA__DIM_Y(d), RUDA__DIM_Z(d))))
#define RUDA__OCL_REQD_RudaAny(d)

#define RUDA__OCL_KPARAM_RudaBuf(t, n, c) __global t n,
#define RUDA__OCL_KPARAM_RudaScalar(t, n, c)
#define RUDA__OCL_KPARAM_RudaShared(t, n, c)
#define RUDA__OCL_KPARAM_RudaSharedDyn(t, n, c)
/* After the info words: the dynamic local memory, only in kernels that
 * declare RUDA_SHARED_DYNAMIC. It is declared as uint4 so that it is 16-byte
 * aligned: drivers place a __local argument at the alignment of its pointee
 * (NVIDIA's puts a __local uchar * at any byte, and a float read through it
 * faults). */
#define RUDA__OCL_LPARAM_RudaBuf(t, n, c)
#define RUDA__OCL_LPARAM_RudaScalar(t, n, c)
#define RUDA__OCL_LPARAM_RudaShared(t, n, c)
#define RUDA__OCL_LPARAM_RudaSharedDyn(t, n, c) , __local uint4 *ruda__dyn_shared

#define RUDA__OCL_DECL_RudaBuf(t, n, c)
#define RUDA__OCL_DECL_RudaScalar(t, n, c) RUDA__GPU_SCALAR(t, n)
#define RUDA__OCL_DECL_RudaShared(t, n, c) __local t n[c] __attribute__((aligned(16)));
#define RUDA__OCL_DECL_RudaSharedDyn(t, n, c) __local t *n = (__local t *)ruda__dyn_shared;

#define RUDA__OCL_BPARAM_RudaBuf(t, n, c) , __global t n
#define RUDA__OCL_BPARAM_RudaScalar(t, n, c) , const t n
#define RUDA__OCL_BPARAM_RudaShared(t, n, c) , __local t *restrict n
#define RUDA__OCL_BPARAM_RudaSharedDyn(t, n, c) , __local t *restrict n

#define RUDA__ARG_RudaBuf(t, n, c) , n
#define RUDA__ARG_RudaScalar(t, n, c) , n
#define RUDA__ARG_RudaShared(t, n, c) , n
#define RUDA__ARG_RudaSharedDyn(t, n, c) , n

#define RUDA__OCL_BODY_HEAD(name, ...)                                        \
  static inline void ruda_body__##name(const ruda_u3_t ruda_pos, const ruda_u3_t ruda_count, \
                                       const ruda_u3_t ruda_dim                 \
                                           RUDA__PARAMS(RUDA__OCL_BPARAM, __VA_ARGS__))

#define RUDA__OCL_KERNEL(name, dims, ...)                                            \
  RUDA__OCL_BODY_HEAD(name, __VA_ARGS__);                                            \
  __kernel RUDA__OCL_REQD(dims) void name(RUDA__PARAMS(RUDA__OCL_KPARAM, __VA_ARGS__) \
                                              __global const ulong *restrict ruda__info \
                                                  RUDA__PARAMS(RUDA__OCL_LPARAM, __VA_ARGS__)) { \
    uint ruda__si __attribute__((unused)) = 0;                                       \
    (void)ruda__info;                                                                \
    RUDA__PARAMS(RUDA__OCL_DECL, __VA_ARGS__)                                        \
    ruda_body__##name(ruda__u3(get_group_id(0), get_group_id(1), get_group_id(2)),   \
                      ruda__u3(get_num_groups(0), get_num_groups(1), get_num_groups(2)), \
                      RUDA__OCL_DIMS(dims) RUDA__PARAMS(RUDA__ARG, __VA_ARGS__));    \
  }                                                                                  \
  RUDA__OCL_BODY_HEAD(name, __VA_ARGS__)

#endif /* RUDA_DIALECT_OPENCL_H */
