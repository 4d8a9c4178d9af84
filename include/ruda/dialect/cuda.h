/* ruda/dialect/cuda.h: the kernel dialect on cuda:N (the CUDA prelude).
 *
 * ruda compiles a portable kernel for CUDA as: dialect/common.h,
 * dialect/gpu.h and this file (built into the library as one string), then
 * the kernel file's text from the embed step, which starts with a #line
 * directive so NVRTC's messages name the user's file and line. NVRTC
 * compiles C++: kernel files stay in the common subset of C and C++ (see
 * docs/kernels.md). The same files also work with nvcc through
 * <ruda/kernel_dialect.h>.
 *
 * A RUDA_KERNEL becomes `extern "C" __global__` NAME with ruda's CUDA
 * parameter order (one pointer per buffer, then the info-word pointer),
 * __launch_bounds__ from fixed dims, and an inlined body function.
 */
#ifndef RUDA_DIALECT_CUDA_H
#define RUDA_DIALECT_CUDA_H

#define RUDA_KERNEL_TARGET_CUDA 1

/* ---- Types ---- */

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#endif

RUDA__UNIT_TYPES(static __device__ __forceinline__)

#define restrict __restrict__

/* ---- Helpers, qualifiers, constants ---- */

#define RUDA_FN static __device__ inline
#define RUDA_GLOBAL
#define RUDA_SHMEM
#define RUDA_CONSTANT static __constant__ const
#define RUDA_PI 3.14159265358979323846
#define RUDA_PI_F 3.14159265358979323846f

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38f
#define FLT_MIN 1.175494351e-38f
#define FLT_EPSILON 1.192092896e-07f
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-016
#endif
#ifndef INT32_MAX
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32767 - 1)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295u
#define UINT64_MAX 18446744073709551615ull
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 4294967295u
#endif

static __device__ __forceinline__ float ruda_rsqrtf(float x) { return rsqrtf(x); }

static __device__ __forceinline__ float ruda_f16_to_f32(ruda_f16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
static __device__ __forceinline__ ruda_f16 ruda_f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
static __device__ __forceinline__ float ruda_bf16_to_f32(ruda_bf16 h) {
  return __uint_as_float((uint32_t)h << 16);
}
static __device__ __forceinline__ ruda_bf16 ruda_f32_to_bf16(float f) {
  uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ruda_bf16)((x >> 16) | 0x40u);
  return (ruda_bf16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ---- Atomics (relaxed, device scope; global or shared pointers) ---- */

#define RUDA__CUDA_ATOMIC(op, sfx, T, CT, call)                                   \
  static __device__ __forceinline__ T ruda_atomic_##op##_##sfx(T *p, T v) {      \
    return (T)call((CT *)p, (CT)v);                                               \
  }
RUDA__CUDA_ATOMIC(add, i32, int32_t, int, atomicAdd)
RUDA__CUDA_ATOMIC(add, u32, uint32_t, unsigned int, atomicAdd)
RUDA__CUDA_ATOMIC(add, i64, int64_t, unsigned long long, atomicAdd)
RUDA__CUDA_ATOMIC(add, u64, uint64_t, unsigned long long, atomicAdd)
RUDA__CUDA_ATOMIC(add, f32, float, float, atomicAdd)
RUDA__CUDA_ATOMIC(min, i32, int32_t, int, atomicMin)
RUDA__CUDA_ATOMIC(min, u32, uint32_t, unsigned int, atomicMin)
RUDA__CUDA_ATOMIC(min, i64, int64_t, long long, atomicMin)
RUDA__CUDA_ATOMIC(min, u64, uint64_t, unsigned long long, atomicMin)
RUDA__CUDA_ATOMIC(max, i32, int32_t, int, atomicMax)
RUDA__CUDA_ATOMIC(max, u32, uint32_t, unsigned int, atomicMax)
RUDA__CUDA_ATOMIC(max, i64, int64_t, long long, atomicMax)
RUDA__CUDA_ATOMIC(max, u64, uint64_t, unsigned long long, atomicMax)
RUDA__CUDA_ATOMIC(xchg, i32, int32_t, int, atomicExch)
RUDA__CUDA_ATOMIC(xchg, u32, uint32_t, unsigned int, atomicExch)
RUDA__CUDA_ATOMIC(xchg, i64, int64_t, unsigned long long, atomicExch)
RUDA__CUDA_ATOMIC(xchg, u64, uint64_t, unsigned long long, atomicExch)
RUDA__CUDA_ATOMIC(xchg, f32, float, float, atomicExch)
#define RUDA__CUDA_CAS(sfx, T, CT)                                                       \
  static __device__ __forceinline__ T ruda_atomic_cas_##sfx(T *p, T expected, T desired) { \
    return (T)atomicCAS((CT *)p, (CT)expected, (CT)desired);                             \
  }
RUDA__CUDA_CAS(i32, int32_t, int)
RUDA__CUDA_CAS(u32, uint32_t, unsigned int)
RUDA__CUDA_CAS(i64, int64_t, unsigned long long)
RUDA__CUDA_CAS(u64, uint64_t, unsigned long long)
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 600
RUDA__CUDA_ATOMIC(add, f64, double, double, atomicAdd)
#else
/* Before sm_60: a compare-exchange loop on the bits. */
static __device__ __forceinline__ double ruda_atomic_add_f64(double *p, double v) {
  unsigned long long *w = (unsigned long long *)p, old = *w, prev;
  do {
    prev = old;
    old = atomicCAS(w, prev, __double_as_longlong(__longlong_as_double(prev) + v));
  } while (old != prev);
  return __longlong_as_double(old);
}
#endif

/* ---- Regions ---- */

#define RUDA__TID_X threadIdx.x
#define RUDA__TID_Y threadIdx.y
#define RUDA__TID_Z threadIdx.z
#define RUDA__GPU_BARRIER() __syncthreads()

/* ---- RUDA_KERNEL ---- */

#define RUDA_KERNEL(...) \
  RUDA__CALL(RUDA__CUDA_KERNEL, RUDA__KNAME(__VA_ARGS__), RUDA__KDIMS(__VA_ARGS__), __VA_ARGS__)

#define RUDA__CUDA_DIMS(d) RUDA__CAT(RUDA__CUDA_DIMS_, RUDA__DIM_KIND(d))(d)
#define RUDA__CUDA_DIMS_RudaFixed(d) ruda__u3(RUDA__DIM_X(d), RUDA__DIM_Y(d), RUDA__DIM_Z(d))
#define RUDA__CUDA_DIMS_RudaAny(d) ruda__u3(blockDim.x, blockDim.y, blockDim.z)
#define RUDA__CUDA_BOUNDS(d) RUDA__CAT(RUDA__CUDA_BOUNDS_, RUDA__DIM_KIND(d))(d)
#define RUDA__CUDA_BOUNDS_RudaFixed(d) \
  __launch_bounds__(RUDA__DIM_X(d) * RUDA__DIM_Y(d) * RUDA__DIM_Z(d))
#define RUDA__CUDA_BOUNDS_RudaAny(d)

#define RUDA__CUDA_KPARAM_RudaBuf(t, n, c) t n,
#define RUDA__CUDA_KPARAM_RudaScalar(t, n, c)
#define RUDA__CUDA_KPARAM_RudaShared(t, n, c)
#define RUDA__CUDA_KPARAM_RudaSharedDyn(t, n, c)

#define RUDA__CUDA_DECL_RudaBuf(t, n, c)
#define RUDA__CUDA_DECL_RudaScalar(t, n, c)                                              \
  static_assert(sizeof(t) <= 8, "RUDA_SCALAR " #n ": a scalar takes at most 8 bytes"); \
  RUDA__GPU_SCALAR(t, n)
#define RUDA__CUDA_DECL_RudaShared(t, n, c) __shared__ __align__(16) t n[c];
#define RUDA__CUDA_DECL_RudaSharedDyn(t, n, c)                   \
  extern __shared__ __align__(16) unsigned char ruda__dyn_shared[]; \
  t *n = (t *)ruda__dyn_shared;

#define RUDA__CUDA_BPARAM_RudaBuf(t, n, c) , t n
#define RUDA__CUDA_BPARAM_RudaScalar(t, n, c) , const t n
#define RUDA__CUDA_BPARAM_RudaShared(t, n, c) , t *__restrict__ n
#define RUDA__CUDA_BPARAM_RudaSharedDyn(t, n, c) , t *__restrict__ n

#define RUDA__ARG_RudaBuf(t, n, c) , n
#define RUDA__ARG_RudaScalar(t, n, c) , n
#define RUDA__ARG_RudaShared(t, n, c) , n
#define RUDA__ARG_RudaSharedDyn(t, n, c) , n

#define RUDA__CUDA_BODY_HEAD(name, ...)                                                \
  static __device__ __forceinline__ void ruda_body__##name(                            \
      const ruda_u3_t ruda_pos, const ruda_u3_t ruda_count,                            \
      const ruda_u3_t ruda_dim RUDA__PARAMS(RUDA__CUDA_BPARAM, __VA_ARGS__))

#define RUDA__CUDA_KERNEL(name, dims, ...)                                             \
  RUDA__CUDA_BODY_HEAD(name, __VA_ARGS__);                                             \
  extern "C" __global__ void RUDA__CUDA_BOUNDS(dims)                                   \
      name(RUDA__PARAMS(RUDA__CUDA_KPARAM, __VA_ARGS__)                                \
               const unsigned long long *__restrict__ ruda__info) {                    \
    unsigned ruda__si __attribute__((unused)) = 0;                                     \
    (void)ruda__info;                                                                  \
    RUDA__PARAMS(RUDA__CUDA_DECL, __VA_ARGS__)                                         \
    ruda_body__##name(ruda__u3(blockIdx.x, blockIdx.y, blockIdx.z),                    \
                      ruda__u3(gridDim.x, gridDim.y, gridDim.z),                       \
                      RUDA__CUDA_DIMS(dims) RUDA__PARAMS(RUDA__ARG, __VA_ARGS__));     \
  }                                                                                    \
  RUDA__CUDA_BODY_HEAD(name, __VA_ARGS__)

#endif /* RUDA_DIALECT_CUDA_H */
