/* ruda/dialect/cpu.h: the kernel dialect compiled natively for cpu:N.
 *
 * Included through <ruda/kernel_dialect.h> by the user's C compiler. A
 * RUDA_KERNEL becomes:
 *  - ruda_body__NAME: the kernel's body, an always-inlined C function whose
 *    per-unit regions are plain loops over the ruda's units (barriers are
 *    the boundaries between those loops, so they cost nothing);
 *  - ruda_cpu__NAME: the CPU backend's kernel function (called once per
 *    ruda), which unpacks buffers and scalars and calls the body
 *    (ruda_run__NAME; ruda_cpu_wide__NAME for rudas at or past 2^31 units
 *    in x, see RUDA__CPU_KERNEL);
 *  - ruda_desc__NAME / ruda_launch__NAME: host helpers behind
 *    RUDA_KERNEL_DESC, RUDA_KERNEL_CREATE and RUDA_LAUNCH.
 * The kernel text for the GPU backends comes from the embed step (see
 * docs/kernels.md): ruda_kernel_text__NAME, defined in the generated file.
 * Define RUDA_KERNEL_CPU_ONLY before the include to build without it (the
 * kernel then runs on cpu:N only).
 *
 * Kernel files are C: compile them with the C compiler (C11 or newer).
 */
#ifndef RUDA_DIALECT_CPU_H
#define RUDA_DIALECT_CPU_H

/* Floating-point contraction (compilation.fp_contract in
 * docs/configuration.md): a kernel compiled natively follows the program's
 * compiler and its flags. Define RUDA_KERNEL_FP_CONTRACT_OFF before the
 * include (or compile the kernel file with -ffp-contract=off) to keep a*b+c
 * unfused from here to the end of the file, as the GPU backends do with
 * compilation.fp_contract = "off". */
#if defined(RUDA_KERNEL_FP_CONTRACT_OFF)
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#endif

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ruda/client.h"
#include "ruda/dialect/common.h"
#include "ruda/kernel.h"

#define RUDA_KERNEL_TARGET_CPU 1

/* ---- Types ---- */

/* ruda_u3_t, ruda_unit_t (one unit inside a per-unit region), ruda_f16,
 * ruda_bf16: see dialect/common.h. */
RUDA__UNIT_TYPES(static inline)

/* ---- Helpers, qualifiers, constants ---- */

#define RUDA_FN static inline
#define RUDA_GLOBAL
#define RUDA_SHMEM
#define RUDA_CONSTANT static const
#define RUDA_PI 3.14159265358979323846
#define RUDA_PI_F 3.14159265358979323846f

static inline float ruda_rsqrtf(float x) { return 1.0f / sqrtf(x); }

RUDA__HOST_HALF_CONVERSIONS(static inline)

/* ---- Atomics (relaxed; rudas run on several threads at once) ---- */

#define RUDA__CPU_ATOMIC_INT(sfx, T)                                                          \
  static inline T ruda_atomic_add_##sfx(T *p, T v) {                                         \
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);                                        \
  }                                                                                           \
  static inline T ruda_atomic_xchg_##sfx(T *p, T v) {                                        \
    return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);                                       \
  }                                                                                           \
  static inline T ruda_atomic_cas_##sfx(T *p, T expected, T desired) {                       \
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED,              \
                                __ATOMIC_RELAXED);                                            \
    return expected;                                                                          \
  }                                                                                           \
  static inline T ruda_atomic_min_##sfx(T *p, T v) {                                         \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                             \
    while (v < old &&                                                                         \
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
      ;                                                                                       \
    return old;                                                                               \
  }                                                                                           \
  static inline T ruda_atomic_max_##sfx(T *p, T v) {                                         \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                             \
    while (v > old &&                                                                         \
           !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) \
      ;                                                                                       \
    return old;                                                                               \
  }
RUDA__CPU_ATOMIC_INT(i32, int32_t)
RUDA__CPU_ATOMIC_INT(u32, uint32_t)
RUDA__CPU_ATOMIC_INT(i64, int64_t)
RUDA__CPU_ATOMIC_INT(u64, uint64_t)

static inline float ruda_atomic_add_f32(float *p, float v) {
  uint32_t *w = (uint32_t *)(void *)p;
  uint32_t old = __atomic_load_n(w, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(w, &old, ruda__f32_bits(ruda__bits_f32(old) + v), true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
  return ruda__bits_f32(old);
}
static inline double ruda_atomic_add_f64(double *p, double v) {
  uint64_t *w = (uint64_t *)(void *)p;
  uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED), next;
  for (;;) {
    double d;
    memcpy(&d, &old, sizeof d);
    d += v;
    memcpy(&next, &d, sizeof next);
    if (__atomic_compare_exchange_n(w, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;
  }
  double r;
  memcpy(&r, &old, sizeof r);
  return r;
}
static inline float ruda_atomic_xchg_f32(float *p, float v) {
  return ruda__bits_f32(
      __atomic_exchange_n((uint32_t *)(void *)p, ruda__f32_bits(v), __ATOMIC_RELAXED));
}

/* ---- Regions: plain loops over the ruda's units ---- */

/* Every unit runs the statement once, with `u` its ruda_unit_t. A barrier
 * follows on the GPU; here the loop's end is that barrier. */
#define RUDA_UNITS(u) RUDA__CPU_UNITS(u)
#define RUDA_UNITS_NOWAIT(u) RUDA__CPU_UNITS(u)
/* The x loop is unrolled by 4: a region the compiler cannot vectorise
 * costs less loop overhead per unit (in cache, a triad in the natural
 * one-element-per-unit form went from 0.80x to 0.93x of the range form on
 * the 2-core VM); vectorised regions are not slowed.
 *
 * The natural form, one element per unit under `if (u.abs_x < n)`, gets a
 * full-block fast path and a clipped tail from the compiler. The x loop
 * counts u.abs_x itself (ruda__ax, from the ruda's first index ruda__a0,
 * while ruda__ax - ruda__a0 < ruda_dim.x: a trip count the compiler still
 * sees as the constant dims; u.x is a second counter from 0), so a
 * comparison of u.abs_x with a value the loop does not change is a point
 * where GCC's loop splitting (-fsplit-loops: on at -O3, the flags kernels
 * compiled at run time get by default) cuts the loop in two: the units
 * below the bound run the statement without the check, a plain loop that
 * vectorises without masked stores (with or without -march), and the units
 * past it, where the check is false, run nothing (GCC removes that loop).
 * At -O2 the loop stays whole, a compare and a branch per unit, as before
 * (-O2 vectorises no range either; add -fsplit-loops
 * -fvect-cost-model=dynamic to the kernel file's flags to have both). A
 * pragma or attribute here could turn these on only by replacing the
 * options of an enclosing `#pragma GCC optimize` (it stopped the inlining
 * of the dialect's helpers into such kernels): not done.
 * The split needs a counter that does not wrap. For a ruda whose units'
 * abs_x all lie below 2^31 (ruda__xfit; every ruda of a dispatch up to
 * 2^31 units wide) the counter starts at the ruda's first index masked to
 * 31 bits (the same value), which tells the compiler so. The other rudas
 * (in dispatches wider than that) count from 0 and add the ruda's first
 * index, wrapping at 2^32 as on a GPU; they run a cold second copy of the
 * body (see RUDA__CPU_KERNEL). Regions without such a check compile as
 * before. */
#define RUDA__CPU_UNITS(u)                                                                   \
  for (uint32_t ruda__uz = 0; ruda__uz < ruda_dim.z; ruda__uz++)                             \
    for (uint32_t ruda__uy = 0; ruda__uy < ruda_dim.y; ruda__uy++)                           \
      _Pragma("GCC unroll 4")                                                                \
      for (uint32_t ruda__ux = 0,                                                            \
                    ruda__a0 = ruda__xfit ? (ruda_pos.x * ruda_dim.x) & 0x7fffffffu : 0,     \
                    ruda__ax = ruda__a0, ruda__once = 1;                                     \
           ruda__ax - ruda__a0 < ruda_dim.x; ruda__ux++, ruda__ax++, ruda__once = 1)         \
        for (const ruda_unit_t u = {ruda__ux, ruda__uy, ruda__uz,                            \
                                    ruda__ux + ruda_dim.x * (ruda__uy + ruda_dim.y * ruda__uz), \
                                    ruda__xfit ? ruda__ax : ruda_pos.x * ruda_dim.x + ruda__ax, \
                                    ruda_pos.y * ruda_dim.y + ruda__uy,                      \
                                    ruda_pos.z * ruda_dim.z + ruda__uz,                      \
                                    ruda__ux + ruda_dim.x * (ruda__uy + ruda_dim.y * ruda__uz)}; \
             ruda__once; ruda__once = 0)

/* The ruda's units share the iterations of [begin, end): here one loop. */
#define RUDA_RANGE(type, i, begin, end) \
  for (type ruda__end = (end), i = (begin); i < ruda__end; i++)
#define RUDA_RANGE_NOWAIT(type, i, begin, end) RUDA_RANGE(type, i, begin, end)

/* Inside a unit region: the unit's own share of [begin, end), a contiguous
 * chunk here (a stride of the unit count on GPUs). */
#define RUDA_UNIT_SHARE(u, type, i, begin, end)                                               \
  for (type ruda__sb = (begin), ruda__se = (end),                                            \
            ruda__sc = ruda__se > ruda__sb ? (ruda__se - ruda__sb + (type)(ruda_dim.x * ruda_dim.y * ruda_dim.z) - 1) / \
                                                 (type)(ruda_dim.x * ruda_dim.y * ruda_dim.z)   \
                                           : 0,                                              \
            i = ruda__sb + ruda__sc * (type)(u).index,                                       \
            ruda__sl = i + ruda__sc < ruda__se ? i + ruda__sc : ruda__se;                    \
       i < ruda__sl; i++)

/* One unit runs the statement. */
#define RUDA_SINGLE for (int ruda__once = 1; ruda__once; ruda__once = 0)
#define RUDA_SINGLE_NOWAIT RUDA_SINGLE

#define RUDA_BARRIER() ((void)0)

/* Per-unit variables that live across regions. */
#define RUDA_PRIVATE(type, name) type name[sizeof(ruda__units->slots)]
#define RUDA_PRIVATE_ARRAY(type, name, n) type name[sizeof(ruda__units->slots)][n]
#define RUDA_PRIV(u, name) name[(u).slot_]

/* ---- RUDA_KERNEL ---- */

static inline bool ruda__cpu_args_fit(const ruda_cpu_kernel_ctx_t *ctx, size_t buffers,
                                      size_t scalars) {
  return ctx->num_buffers >= buffers && ctx->info_len >= scalars;
}

/* True when every unit of the ruda at x position `pos` has abs_x below 2^31
 * (RUDA__CPU_UNITS). */
static inline bool ruda__cpu_abs_x_fits(uint32_t pos, uint32_t dim) {
  return (uint64_t)pos * dim + dim <= (uint64_t)INT32_MAX + 1;
}

#define RUDA_KERNEL(...) \
  RUDA__CALL(RUDA__CPU_KERNEL, RUDA__KNAME(__VA_ARGS__), RUDA__KDIMS(__VA_ARGS__), __VA_ARGS__)

#define RUDA__CPU_DIMS(d, ctx) RUDA__CAT(RUDA__CPU_DIMS_, RUDA__DIM_KIND(d))(d, ctx)
#define RUDA__CPU_DIMS_RudaFixed(d, ctx) \
  ruda__u3(RUDA__DIM_X(d), RUDA__DIM_Y(d), RUDA__DIM_Z(d))
#define RUDA__CPU_DIMS_RudaAny(d, ctx) \
  ruda__u3((ctx)->ruda_dim.x, (ctx)->ruda_dim.y, (ctx)->ruda_dim.z)
#define RUDA__CPU_DESC_DIM(d) RUDA__CAT(RUDA__CPU_DESC_DIM_, RUDA__DIM_KIND(d))(d)
#define RUDA__CPU_DESC_DIM_RudaFixed(d) \
  ruda_dim_new_3d(RUDA__DIM_X(d), RUDA__DIM_Y(d), RUDA__DIM_Z(d))
#define RUDA__CPU_DESC_DIM_RudaAny(d) ruda_dim_new_3d(0, 0, 0)

/* Unpacking in the CPU kernel function. */
#define RUDA__CPU_DECL_RudaBuf(t, n, c) t n = (t)ruda__ctx->buffers[ruda__bi++];
#define RUDA__CPU_DECL_RudaScalar(t, n, c)                                           \
  _Static_assert(sizeof(t) <= 8, "RUDA_SCALAR " #n ": a scalar takes at most 8 bytes"); \
  union {                                                                           \
    uint64_t w;                                                                     \
    t v;                                                                            \
  } ruda__un_##n;                                                                   \
  ruda__un_##n.w = ruda__ctx->info[ruda__si++];                                     \
  const t n = ruda__un_##n.v;
#define RUDA__CPU_DECL_RudaShared(t, n, c) _Alignas(64) t n[c];
#define RUDA__CPU_DECL_RudaSharedDyn(t, n, c) t *n = (t *)ruda__ctx->shared;

#define RUDA__CPU_BPARAM_RudaBuf(t, n, c) , t n
#define RUDA__CPU_BPARAM_RudaScalar(t, n, c) , const t n
#define RUDA__CPU_BPARAM_RudaShared(t, n, c) , t *restrict n
#define RUDA__CPU_BPARAM_RudaSharedDyn(t, n, c) , t *restrict n

#define RUDA__ARG_RudaBuf(t, n, c) , n
#define RUDA__ARG_RudaScalar(t, n, c) , n
#define RUDA__ARG_RudaShared(t, n, c) , n
#define RUDA__ARG_RudaSharedDyn(t, n, c) , n

/* The host launcher's parameters and packing. */
#define RUDA__LPARAM_RudaBuf(t, n, c) , const ruda_handle_t *n
#define RUDA__LPARAM_RudaScalar(t, n, c) , t n
#define RUDA__LPARAM_RudaShared(t, n, c)
#define RUDA__LPARAM_RudaSharedDyn(t, n, c)
#define RUDA__LPACK_RudaBuf(t, n, c)                                                 \
  if (!n)                                                                           \
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,                            \
                              "launching kernel '%s': buffer '%s' is NULL", ruda__name, #n); \
  ruda__h[ruda__bi++] = *n;
#define RUDA__LPACK_RudaScalar(t, n, c) \
  ruda__w[ruda__si] = 0;                \
  memcpy(&ruda__w[ruda__si++], &n, sizeof n);
#define RUDA__LPACK_RudaShared(t, n, c)
#define RUDA__LPACK_RudaSharedDyn(t, n, c)

#define RUDA__CPU_BODY_HEAD(name, ...)                                                        \
  static inline __attribute__((always_inline, unused)) void ruda_body__##name(                \
      const ruda_u3_t ruda_pos __attribute__((unused)),                                       \
      const ruda_u3_t ruda_count __attribute__((unused)),                                     \
      const ruda_u3_t ruda_dim __attribute__((unused)),                                       \
      const struct ruda__units_##name *ruda__units __attribute__((unused)),                   \
      const int ruda__xfit __attribute__((unused)) RUDA__PARAMS(RUDA__CPU_BPARAM, __VA_ARGS__))

/* The kernel's text (from the embed step) and its portable code entry. */
#if defined(RUDA_KERNEL_CPU_ONLY)
#define RUDA__CPU_TEXT(kname_) NULL
#define RUDA__CPU_TEXT_DECL(kname_)
#else
#define RUDA__CPU_TEXT(kname_) ruda_kernel_text__##kname_
#define RUDA__CPU_TEXT_DECL(kname_) extern const char ruda_kernel_text__##kname_[];
#endif

/* Compiled by ruda at run time (a kernel the program was not built with:
 * ruda_kernel_from_file, or a portable entry without a cpu_fn), the kernel
 * function is the shared object's export and the host helpers are left
 * out; the CPU backend's prelude defines RUDA__CPU_RUNTIME. */
#if defined(RUDA__CPU_RUNTIME)
#define RUDA__CPU_FN_LINKAGE __attribute__((visibility("default"), unused))
#define RUDA__CPU_HOST_PARTS(kname_, kdims_, ...)
#else
#define RUDA__CPU_FN_LINKAGE static __attribute__((unused))
#define RUDA__CPU_HOST_PARTS(kname_, kdims_, ...)                                                \
  RUDA__CPU_TEXT_DECL(kname_)                                                                 \
  static const ruda_kernel_code_t ruda_code__##kname_ __attribute__((unused)) = {            \
      RUDA_KERNEL_FORMAT_PORTABLE, RUDA__CPU_TEXT(kname_), 0, ruda_cpu__##kname_, #kname_,   \
      NULL, 0, __FILE__};                                                                     \
  static inline __attribute__((unused)) ruda_kernel_desc_t ruda_desc__##kname_(void) {        \
    ruda_kernel_desc_t d;                                                                     \
    memset(&d, 0, sizeof d);                                                                  \
    d.name = #kname_;                                                                         \
    d.ruda_dim = RUDA__CPU_DESC_DIM(kdims_);                                                  \
    d.code = &ruda_code__##kname_;                                                            \
    d.num_code = 1;                                                                           \
    return d;                                                                                 \
  }                                                                                           \
  static inline __attribute__((unused)) ruda_status_t ruda_launch__##kname_(                    \
      ruda_client_t *ruda__client, ruda_kernel_t *ruda__kernel,                               \
      ruda_count_t ruda__count RUDA__PARAMS(RUDA__LPARAM, __VA_ARGS__)) {                     \
    static const char ruda__name[] = #kname_;                                                   \
    ruda_handle_t ruda__h[RUDA__NUM_BUFFERS(__VA_ARGS__) + 1];                                \
    uint64_t ruda__w[RUDA__NUM_SCALARS(__VA_ARGS__) + 1];                                     \
    size_t ruda__bi = 0, ruda__si = 0;                                                        \
    (void)ruda__name;                                                                         \
    RUDA__PARAMS(RUDA__LPACK, __VA_ARGS__)                                                    \
    ruda_kernel_args_t ruda__args;                                                            \
    memset(&ruda__args, 0, sizeof ruda__args);                                                \
    ruda__args.buffers = ruda__h;                                                             \
    ruda__args.num_buffers = ruda__bi;                                                        \
    ruda__args.info.data = ruda__si ? ruda__w : NULL;                                         \
    ruda__args.info.len = ruda__si;                                                           \
    ruda__args.info.dynamic_metadata_offset = ruda__si;                                       \
    return ruda_client_launch(ruda__client, ruda__kernel, ruda__count, &ruda__args);          \
  }
#endif

/* The kernel function: the checks and the unpacking (ruda_run__NAME), then
 * the body, with ruda__xfit telling whether the ruda's abs_x values fit in
 * 31 bits (RUDA__CPU_UNITS). Compiled into a program, the body is inlined
 * twice: with ruda__xfit = 1, and in a cold function for the other rudas
 * (only dispatches wider than 2^31 units have them), so that each copy's
 * loops are plain whatever the flags. Compiled by ruda at run time
 * (compilation.cpu_flags, -O3 by default), it is inlined once with the
 * flag as a value: the compiler unswitches the loops that use abs_x on it
 * (-funswitch-loops, on at -O3; loop splitting comes after), which
 * compiles faster than a second copy of the whole body. */
#if defined(RUDA__CPU_RUNTIME)
#define RUDA__CPU_WIDE_FN(kname_)
#define RUDA__CPU_RUN(kname_, kdims_)                                                      \
  ruda_run__##kname_(ruda__ctx, ruda__cpu_abs_x_fits(ruda__ctx->ruda_pos.x,                  \
                                                     RUDA__CPU_DIMS(kdims_, ruda__ctx).x));
#else
#define RUDA__CPU_WIDE_FN(kname_)                                                              \
  static __attribute__((noinline, cold, unused)) void ruda_cpu_wide__##kname_(                  \
      const ruda_cpu_kernel_ctx_t *ruda__ctx) {                                               \
    ruda_run__##kname_(ruda__ctx, 0);                                                         \
  }
#define RUDA__CPU_RUN(kname_, kdims_)                                                          \
  if (__builtin_expect(                                                                       \
          !ruda__cpu_abs_x_fits(ruda__ctx->ruda_pos.x, RUDA__CPU_DIMS(kdims_, ruda__ctx).x), 0)) \
    ruda_cpu_wide__##kname_(ruda__ctx);                                                       \
  else                                                                                        \
    ruda_run__##kname_(ruda__ctx, 1);
#endif

#define RUDA__CPU_KERNEL(kname_, kdims_, ...)                                                     \
  struct ruda__units_##kname_ {                                                                 \
    char slots[RUDA__DIM_UNITS_CAP(kdims_)];                                                    \
  };                                                                                          \
  RUDA__CPU_BODY_HEAD(kname_, __VA_ARGS__);                                                     \
  static inline __attribute__((always_inline, unused)) void ruda_run__##kname_(                 \
      const ruda_cpu_kernel_ctx_t *ruda__ctx, const int ruda__xfit) {                           \
    if (!ruda__cpu_args_fit(ruda__ctx, RUDA__NUM_BUFFERS(__VA_ARGS__),                        \
                            RUDA__NUM_SCALARS(__VA_ARGS__))) {                                \
      ruda_cpu_kernel_fail(ruda__ctx,                                                         \
                           "kernel '" #kname_ "' takes %d buffers and %d scalars; the launch "  \
                           "passed %zu buffers and %zu info words",                           \
                           RUDA__NUM_BUFFERS(__VA_ARGS__), RUDA__NUM_SCALARS(__VA_ARGS__),    \
                           ruda__ctx->num_buffers, ruda__ctx->info_len);                      \
      return;                                                                                 \
    }                                                                                         \
    size_t ruda__bi = 0, ruda__si = 0;                                                        \
    (void)ruda__bi;                                                                           \
    (void)ruda__si;                                                                           \
    RUDA__PARAMS(RUDA__CPU_DECL, __VA_ARGS__)                                                 \
    ruda_body__##kname_(ruda__u3(ruda__ctx->ruda_pos.x, ruda__ctx->ruda_pos.y,                  \
                               ruda__ctx->ruda_pos.z),                                        \
                      ruda__u3(ruda__ctx->ruda_count.x, ruda__ctx->ruda_count.y,              \
                               ruda__ctx->ruda_count.z),                                      \
                      RUDA__CPU_DIMS(kdims_, ruda__ctx), (const struct ruda__units_##kname_ *)0,  \
                      ruda__xfit RUDA__PARAMS(RUDA__ARG, __VA_ARGS__));                        \
  }                                                                                           \
  RUDA__CPU_WIDE_FN(kname_)                                                                   \
  RUDA__CPU_FN_LINKAGE void ruda_cpu__##kname_(const ruda_cpu_kernel_ctx_t *ruda__ctx) {        \
    RUDA__CPU_RUN(kname_, kdims_)                                                             \
  }                                                                                           \
  RUDA__CPU_HOST_PARTS(kname_, kdims_, __VA_ARGS__)                                          \
  RUDA__CPU_BODY_HEAD(kname_, __VA_ARGS__)

/* ---- Host side ---- */

/* RUDA_KERNEL_DESC(name): a ruda_kernel_desc_t for the kernel (its name,
 * declared dims, its one portable code entry); set shared_mem_bytes for
 * RUDA_SHARED_DYNAMIC and ruda_dim for RUDA_DIM_ANY before
 * ruda_kernel_create(). */
#define RUDA_KERNEL_DESC(name) ruda_desc__##name()
/* RUDA_KERNEL_CODE(name): its portable code entry (a `const
 * ruda_kernel_code_t *` with static storage), to list next to entries of
 * other formats (a hand-tuned CUBIN, say) in a description of one's own. */
#define RUDA_KERNEL_CODE(name) (&ruda_code__##name)
/* RUDA_KERNEL_CREATE(name, &kernel): ruda_kernel_create() with the
 * kernel's own description (fixed dims, no dynamic shared memory). */
#define RUDA_KERNEL_CREATE(name, out) ruda__kernel_create_from(ruda_desc__##name(), (out))
/* RUDA_LAUNCH(name, client, kernel, count, args...): launches with typed
 * arguments in declaration order: `const ruda_handle_t *` per buffer
 * (borrowed for the call), the value per scalar (one info word each).
 * Returns what ruda_client_launch() returns, and RUDA_ERR_INVALID_ARGUMENT
 * for a NULL buffer. Thread-safe as ruda_client_launch(). The other helpers
 * allocate nothing and are thread-safe; RUDA_KERNEL_CREATE returns a kernel
 * the caller releases. */
#define RUDA_LAUNCH(name, ...) ruda_launch__##name(__VA_ARGS__)

#if !defined(RUDA__CPU_RUNTIME)
static inline __attribute__((unused)) ruda_status_t ruda__kernel_create_from(ruda_kernel_desc_t d,
                                                                             ruda_kernel_t **out) {
  return ruda_kernel_create(&d, out);
}
#endif

#endif /* RUDA_DIALECT_CPU_H */
