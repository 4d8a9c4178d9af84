/* ruda/dialect/gpu.h: the kernel dialect's regions on GPUs, shared by the
 * CUDA (dialect/cuda.h) and OpenCL (dialect/opencl.h) preludes.
 *
 * Every unit is a thread: a region is its statement run once by each
 * thread, and the barrier that ends it sits in the step of a one-pass outer
 * loop, so `continue` and `break` inside the statement still reach it.
 * Uniform code (outside regions) runs in every thread with the same values.
 * A target defines RUDA__TID_X/Y/Z (the thread's position in its ruda) and
 * RUDA__GPU_BARRIER() (the ruda-wide barrier) before using these.
 */
#ifndef RUDA_DIALECT_GPU_H
#define RUDA_DIALECT_GPU_H

#define RUDA__GPU_UX (ruda_dim.x == 1 ? 0u : (uint32_t)RUDA__TID_X)
#define RUDA__GPU_UY (ruda_dim.y == 1 ? 0u : (uint32_t)RUDA__TID_Y)
#define RUDA__GPU_UZ (ruda_dim.z == 1 ? 0u : (uint32_t)RUDA__TID_Z)
#define RUDA__GPU_UINDEX (RUDA__GPU_UX + ruda_dim.x * (RUDA__GPU_UY + ruda_dim.y * RUDA__GPU_UZ))
#define RUDA__GPU_UNITS_N (ruda_dim.x * ruda_dim.y * ruda_dim.z)
#define RUDA__GPU_UNIT_INIT                                                              \
  {RUDA__GPU_UX, RUDA__GPU_UY, RUDA__GPU_UZ, RUDA__GPU_UINDEX,                           \
   ruda_pos.x * ruda_dim.x + RUDA__GPU_UX, ruda_pos.y * ruda_dim.y + RUDA__GPU_UY,       \
   ruda_pos.z * ruda_dim.z + RUDA__GPU_UZ, 0u}
#define RUDA__GPU_UNITS(u, BAR)                                                          \
  for (int ruda__once = 1; ruda__once; BAR, ruda__once = 0)                              \
    for (const ruda_unit_t u = RUDA__GPU_UNIT_INIT; ruda__once; ruda__once = 0)
#define RUDA__GPU_RANGE(type, i, begin, end, BAR)                                        \
  for (int ruda__once = 1; ruda__once; BAR, ruda__once = 0)                              \
    for (type ruda__end = (end), i = (begin) + (type)RUDA__GPU_UINDEX; i < ruda__end;     \
         i += (type)RUDA__GPU_UNITS_N)
#define RUDA__GPU_SINGLE(BAR)                                                            \
  for (int ruda__once = 1; ruda__once; BAR, ruda__once = 0)                              \
    for (int ruda__one = RUDA__GPU_UINDEX == 0; ruda__one; ruda__one = 0)
#define RUDA__GPU_NOBAR ((void)0)

#define RUDA_UNITS(u) RUDA__GPU_UNITS(u, RUDA__GPU_BARRIER())
#define RUDA_UNITS_NOWAIT(u) RUDA__GPU_UNITS(u, RUDA__GPU_NOBAR)
#define RUDA_RANGE(type, i, begin, end) RUDA__GPU_RANGE(type, i, begin, end, RUDA__GPU_BARRIER())
#define RUDA_RANGE_NOWAIT(type, i, begin, end) \
  RUDA__GPU_RANGE(type, i, begin, end, RUDA__GPU_NOBAR)
#define RUDA_SINGLE RUDA__GPU_SINGLE(RUDA__GPU_BARRIER())
#define RUDA_SINGLE_NOWAIT RUDA__GPU_SINGLE(RUDA__GPU_NOBAR)
#define RUDA_BARRIER() RUDA__GPU_BARRIER()
#define RUDA_UNIT_SHARE(u, type, i, begin, end)                                           \
  for (type ruda__se = (end), i = (begin) + (type)(u).index; i < ruda__se;               \
       i += (type)RUDA__GPU_UNITS_N)
#define RUDA_PRIVATE(type, name) type name[1]
#define RUDA_PRIVATE_ARRAY(type, name, n) type name[1][n]
#define RUDA_PRIV(u, name) name[(u).slot_]

/* Scalars from the info words, on GPUs: word k holds scalar k. */
#define RUDA__GPU_SCALAR(t, n)               \
  union {                                   \
    uint64_t w;                             \
    t v;                                    \
  } ruda__un_##n;                           \
  ruda__un_##n.w = ruda__info[ruda__si++];  \
  const t n = ruda__un_##n.v;


#endif /* RUDA_DIALECT_GPU_H */
