/* Kernels of the dialect conformance tests (test_cts_dialect.c): one
 * source per kernel, run on every backend. Each exercises one part of
 * ruda/kernel_dialect.h; the tests check the values on the host. */
#include <ruda/kernel_dialect.h>

/* Helpers, a constant table, address-space qualified pointers. */
RUDA_CONSTANT uint32_t cts_table[4] = {3, 1, 4, 1};

RUDA_FN uint32_t cts_twice(uint32_t v) { return 2u * v; }
RUDA_FN void cts_store(RUDA_GLOBAL uint32_t *p, uint32_t v) { *p = v; }
RUDA_FN uint32_t cts_sum(RUDA_SHMEM const uint32_t *s, uint32_t n) {
  uint32_t t = 0;
  for (uint32_t i = 0; i < n; i++) t += s[i];
  return t;
}

/* Every position of every unit: 16 words per unit, at its absolute
 * position's linear index. */
RUDA_KERNEL(positions, RUDA_DIM(4, 2, 2), RUDA_BUFFER(uint32_t *restrict, out)) {
  RUDA_UNITS_NOWAIT(u) {
    uint32_t wx = ruda_count.x * ruda_dim.x, wy = ruda_count.y * ruda_dim.y;
    size_t at = (size_t)(u.abs_x + wx * (u.abs_y + wy * u.abs_z)) * 16;
    out[at + 0] = u.x;
    out[at + 1] = u.y;
    out[at + 2] = u.z;
    out[at + 3] = u.index;
    out[at + 4] = u.abs_x;
    out[at + 5] = u.abs_y;
    out[at + 6] = u.abs_z;
    out[at + 7] = ruda_pos.x;
    out[at + 8] = ruda_pos.y;
    out[at + 9] = ruda_pos.z;
    out[at + 10] = ruda_count.x;
    out[at + 11] = ruda_count.y;
    out[at + 12] = ruda_count.z;
    out[at + 13] = ruda_dim.x;
    out[at + 14] = ruda_dim.y;
    out[at + 15] = ruda_dim.z;
  }
}

/* Scalars of every type, written back as integers and reals. */
RUDA_KERNEL(scalars, RUDA_DIM(1, 1, 1), RUDA_BUFFER(int64_t *restrict, ints),
            RUDA_BUFFER(float *restrict, reals), RUDA_SCALAR(int8_t, a), RUDA_SCALAR(uint8_t, b),
            RUDA_SCALAR(int16_t, c), RUDA_SCALAR(uint16_t, d), RUDA_SCALAR(int32_t, e),
            RUDA_SCALAR(uint32_t, f), RUDA_SCALAR(int64_t, g), RUDA_SCALAR(uint64_t, h),
            RUDA_SCALAR(float, x), RUDA_SCALAR(bool, flag), RUDA_SCALAR(ruda_f16, h16),
            RUDA_SCALAR(ruda_bf16, bh16)) {
  RUDA_SINGLE_NOWAIT {
    ints[0] = a;
    ints[1] = b;
    ints[2] = c;
    ints[3] = d;
    ints[4] = e;
    ints[5] = f;
    ints[6] = g;
    ints[7] = (int64_t)(h >> 1);
    ints[8] = flag ? 1 : 0;
    reals[0] = x;
    reals[1] = ruda_f16_to_f32(h16);
    reals[2] = ruda_bf16_to_f32(bh16);
  }
}

/* A double scalar (devices with f64). */
RUDA_KERNEL(scalar_f64, RUDA_DIM(1, 1, 1), RUDA_BUFFER(double *restrict, out),
            RUDA_SCALAR(double, y), RUDA_SCALAR(int8_t, after)) {
  RUDA_SINGLE_NOWAIT {
    out[0] = y;
    out[1] = (double)after;
  }
}

/* Buffers of every element type, each element doubled in place (the
 * halves through float). */
RUDA_KERNEL(double_all, RUDA_DIM(32, 1, 1), RUDA_BUFFER(int8_t *restrict, i8),
            RUDA_BUFFER(uint8_t *restrict, u8), RUDA_BUFFER(int16_t *restrict, i16),
            RUDA_BUFFER(uint16_t *restrict, u16), RUDA_BUFFER(int32_t *restrict, i32),
            RUDA_BUFFER(uint32_t *restrict, u32), RUDA_BUFFER(int64_t *restrict, i64),
            RUDA_BUFFER(uint64_t *restrict, u64), RUDA_BUFFER(float *restrict, f32),
            RUDA_BUFFER(ruda_f16 *restrict, f16), RUDA_BUFFER(ruda_bf16 *restrict, bf16),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    uint32_t i = u.abs_x;
    if (i >= n) continue;
    i8[i] = (int8_t)(i8[i] * 2);
    u8[i] = (uint8_t)(u8[i] * 2);
    i16[i] = (int16_t)(i16[i] * 2);
    u16[i] = (uint16_t)(u16[i] * 2);
    i32[i] *= 2;
    u32[i] *= 2;
    i64[i] *= 2;
    u64[i] *= 2;
    f32[i] *= 2.0f;
    f16[i] = ruda_f32_to_f16(ruda_f16_to_f32(f16[i]) * 2.0f);
    bf16[i] = ruda_f32_to_bf16(ruda_bf16_to_f32(bf16[i]) * 2.0f);
  }
}

RUDA_KERNEL(double_f64, RUDA_DIM(32, 1, 1), RUDA_BUFFER(double *restrict, f64),
            RUDA_SCALAR(uint32_t, n)) {
  RUDA_UNITS_NOWAIT(u) {
    if (u.abs_x < n) f64[u.abs_x] *= 2.0;
  }
}

/* An inclusive prefix sum per ruda: barriers in a uniform loop, a uniform
 * variable (`from`) changed between regions, double-buffered shared memory. */
RUDA_KERNEL(scan, RUDA_DIM(128, 1, 1), RUDA_BUFFER(const uint32_t *restrict, in),
            RUDA_BUFFER(uint32_t *restrict, out), RUDA_SHARED(uint32_t, buf, 256)) {
  RUDA_UNITS(u) buf[u.x] = in[u.abs_x];
  uint32_t from = 0;
  for (uint32_t off = 1; off < ruda_dim.x; off *= 2) {
    RUDA_UNITS(u) {
      uint32_t v = buf[from * 128 + u.x];
      if (u.x >= off) v += buf[from * 128 + u.x - off];
      buf[(1 - from) * 128 + u.x] = v;
    }
    from = 1 - from;
  }
  RUDA_UNITS_NOWAIT(u) out[u.abs_x] = buf[from * 128 + u.x];
}

/* Private arrays across barriers: each unit keeps 4 sums over 8 rounds of
 * staged inputs (its neighbours' values, read through shared memory). */
RUDA_KERNEL(private_sums, RUDA_DIM(32, 1, 1), RUDA_BUFFER(const float *restrict, in),
            RUDA_BUFFER(float *restrict, out), RUDA_SHARED(float, stage, 32)) {
  RUDA_PRIVATE_ARRAY(float, acc, 4);
  RUDA_UNITS_NOWAIT(u) {
    for (int k = 0; k < 4; k++) RUDA_PRIV(u, acc)[k] = 0.0f;
  }
  for (uint32_t round = 0; round < 8; round++) {
    RUDA_UNITS(u) stage[u.x] = in[(ruda_pos.x * 8 + round) * 32 + u.x];
    RUDA_UNITS(u) {
      for (uint32_t k = 0; k < 4; k++)
        RUDA_PRIV(u, acc)[k] += stage[(u.x + k) % 32] * (float)(k + 1);
    }
  }
  RUDA_UNITS_NOWAIT(u) {
    out[ruda_pos.x * 32 + u.x] =
        RUDA_PRIV(u, acc)[0] + RUDA_PRIV(u, acc)[1] + RUDA_PRIV(u, acc)[2] + RUDA_PRIV(u, acc)[3];
  }
}

/* Dynamic shared memory: each unit stages `per` values, then sums them. */
RUDA_KERNEL(dynamic_sums, RUDA_DIM(64, 1, 1), RUDA_BUFFER(const uint32_t *restrict, in),
            RUDA_BUFFER(uint32_t *restrict, out), RUDA_SCALAR(uint32_t, per),
            RUDA_SHARED_DYNAMIC(uint32_t, staged)) {
  RUDA_RANGE(uint32_t, i, 0, per * ruda_dim.x) staged[i] = in[ruda_pos.x * per * ruda_dim.x + i];
  RUDA_UNITS_NOWAIT(u) out[u.abs_x] = cts_sum(staged + u.x * per, per);
}

/* Ranges wider than the ruda, single-unit regions, `continue` in a region,
 * helpers and a constant table. */
RUDA_KERNEL(ranges, RUDA_DIM(16, 1, 1), RUDA_BUFFER(uint32_t *restrict, out),
            RUDA_SCALAR(uint32_t, n), RUDA_SHARED(uint32_t, count, 2)) {
  RUDA_SINGLE {
    count[0] = 0;
    count[1] = 0;
  }
  RUDA_RANGE(uint32_t, i, 0, n) out[ruda_pos.x * n + i] = cts_twice(i) + cts_table[i % 4];
  RUDA_UNITS(u) {
    if (u.x % 2) continue;
    ruda_atomic_add_u32(&count[0], 1);
  }
  RUDA_RANGE_NOWAIT(uint32_t, i, 0, 5) {
    if (i == 2) continue;
    ruda_atomic_add_u32(&count[1], i);
  }
  RUDA_BARRIER();
  RUDA_SINGLE_NOWAIT {
    cts_store(&out[ruda_count.x * n + 2 * ruda_pos.x], count[0]);
    cts_store(&out[ruda_count.x * n + 2 * ruda_pos.x + 1], count[1]);
  }
}

/* Each unit's share of a range, then one sum. */
RUDA_KERNEL(share_sum, RUDA_DIM(32, 1, 1), RUDA_BUFFER(const uint32_t *restrict, in),
            RUDA_BUFFER(uint32_t *restrict, out), RUDA_SCALAR(uint32_t, n),
            RUDA_SHARED(uint32_t, partial, 32)) {
  RUDA_UNITS(u) {
    uint32_t s = 0;
    RUDA_UNIT_SHARE(u, uint32_t, i, 0, n) s += in[i];
    partial[u.x] = s;
  }
  RUDA_SINGLE_NOWAIT out[0] = cts_sum(partial, 32);
}

/* 32-bit atomics and the f32 add, on buffers and on shared memory. */
RUDA_KERNEL(atomics32, RUDA_DIM(64, 1, 1), RUDA_BUFFER(int32_t *restrict, gi),
            RUDA_BUFFER(uint32_t *restrict, gu), RUDA_BUFFER(float *restrict, gf),
            RUDA_SHARED(uint32_t, su, 2), RUDA_SHARED(float, sf, 1)) {
  RUDA_SINGLE {
    su[0] = 0;
    su[1] = 0;
    sf[0] = 0.0f;
  }
  RUDA_UNITS(u) {
    int32_t v = (int32_t)u.abs_x - 100;
    ruda_atomic_add_i32(&gi[0], v);
    ruda_atomic_min_i32(&gi[1], v);
    ruda_atomic_max_i32(&gi[2], v);
    ruda_atomic_xchg_i32(&gi[3], -7);
    ruda_atomic_cas_i32(&gi[4], 0, -(int32_t)u.abs_x - 1);
    ruda_atomic_add_u32(&gu[0], 1);
    ruda_atomic_min_u32(&gu[1], u.abs_x + 5);
    ruda_atomic_max_u32(&gu[2], u.abs_x);
    ruda_atomic_xchg_u32(&gu[3], 7);
    ruda_atomic_cas_u32(&gu[4], 0, u.abs_x + 1);
    uint32_t cur = ruda_atomic_add_u32(&gu[5], 0);
    for (;;) {
      uint32_t prev = ruda_atomic_cas_u32(&gu[5], cur, cur + 2);
      if (prev == cur) break;
      cur = prev;
    }
    ruda_atomic_add_f32(&gf[0], 0.5f);
    ruda_atomic_xchg_f32(&gf[1], 2.5f);
    ruda_atomic_add_u32(&su[0], 1);
    ruda_atomic_max_u32(&su[1], u.x);
    ruda_atomic_add_f32(&sf[0], 0.25f);
  }
  RUDA_SINGLE_NOWAIT {
    ruda_atomic_add_u32(&gu[6], su[0]);
    ruda_atomic_max_u32(&gu[7], su[1]);
    ruda_atomic_add_f32(&gf[2], sf[0]);
  }
}

/* 64-bit atomics and the f64 add (devices with atomic_i64 and f64). */
RUDA_KERNEL(atomics64, RUDA_DIM(64, 1, 1), RUDA_BUFFER(int64_t *restrict, gi),
            RUDA_BUFFER(uint64_t *restrict, gu), RUDA_BUFFER(double *restrict, gd),
            RUDA_SHARED(uint64_t, su, 1), RUDA_SHARED(double, sd, 1)) {
  RUDA_SINGLE {
    su[0] = 0;
    sd[0] = 0.0;
  }
  RUDA_UNITS(u) {
    int64_t v = (int64_t)u.abs_x - 100 - ((int64_t)1 << 40);
    ruda_atomic_add_i64(&gi[0], v);
    ruda_atomic_min_i64(&gi[1], v);
    ruda_atomic_max_i64(&gi[2], v);
    ruda_atomic_xchg_i64(&gi[3], -7);
    ruda_atomic_cas_i64(&gi[4], 0, -(int64_t)u.abs_x - 1);
    uint64_t w = ((uint64_t)1 << 40) + u.abs_x;
    ruda_atomic_add_u64(&gu[0], w);
    ruda_atomic_min_u64(&gu[1], w);
    ruda_atomic_max_u64(&gu[2], w);
    ruda_atomic_xchg_u64(&gu[3], (uint64_t)7 << 35);
    ruda_atomic_cas_u64(&gu[4], 0, w);
    ruda_atomic_add_f64(&gd[0], 0.5);
    ruda_atomic_add_u64(&su[0], w);
    ruda_atomic_add_f64(&sd[0], 0.25);
  }
  RUDA_SINGLE_NOWAIT {
    ruda_atomic_add_u64(&gu[5], su[0]);
    ruda_atomic_add_f64(&gd[1], sd[0]);
  }
}

/* The usual math functions, float. */
RUDA_KERNEL(math_f32, RUDA_DIM(1, 1, 1), RUDA_BUFFER(const float *restrict, x),
            RUDA_BUFFER(float *restrict, out)) {
  RUDA_SINGLE_NOWAIT {
    float v = x[0];
    out[0] = sqrtf(v);
    out[1] = expf(v);
    out[2] = logf(v);
    out[3] = powf(v, 2.5f);
    out[4] = sinf(v);
    out[5] = cosf(v);
    out[6] = tanf(v);
    out[7] = tanhf(v);
    out[8] = fabsf(-v);
    out[9] = floorf(v * 10.0f);
    out[10] = ceilf(v * 10.0f);
    out[11] = fminf(v, 0.5f);
    out[12] = fmaxf(v, 0.5f);
    out[13] = fmaf(v, 2.0f, 1.0f);
    out[14] = erff(v);
    out[15] = ruda_rsqrtf(v);
    out[16] = atan2f(v, 2.0f);
    out[17] = exp2f(v);
    out[18] = log2f(v);
    out[19] = roundf(v * 10.0f);
    out[20] = truncf(-v * 10.0f);
    out[21] = fmodf(5.5f, v);
    out[22] = copysignf(v, -1.0f);
    out[23] = hypotf(3.0f, 4.0f);
    out[24] = cbrtf(v * 8.0f);
    out[25] = isnan(NAN) ? 1.0f : 0.0f;
    out[26] = isinf(INFINITY) ? 1.0f : 0.0f;
    out[27] = RUDA_MIN(v, 0.25f) + RUDA_MAX(v, 2.0f);
    out[28] = FLT_EPSILON * FLT_MAX;
    out[29] = (float)INT32_MAX + (float)UINT32_MAX;
  }
}

/* The usual math functions, double (devices with f64). */
RUDA_KERNEL(math_f64, RUDA_DIM(1, 1, 1), RUDA_BUFFER(const double *restrict, x),
            RUDA_BUFFER(double *restrict, out)) {
  RUDA_SINGLE_NOWAIT {
    double v = x[0];
    out[0] = sqrt(v);
    out[1] = exp(v);
    out[2] = log(v);
    out[3] = pow(v, 2.5);
    out[4] = sin(v);
    out[5] = cos(v);
    out[6] = tanh(v);
    out[7] = fabs(-v);
    out[8] = floor(v * 10.0);
    out[9] = fma(v, 2.0, 1.0);
  }
}

/* Dims chosen when the kernel object is created, a private across a
 * barrier. */
RUDA_KERNEL(any_dims, RUDA_DIM_ANY, RUDA_BUFFER(uint32_t *restrict, out)) {
  RUDA_PRIVATE(uint32_t, mine);
  RUDA_UNITS(u) RUDA_PRIV(u, mine) = u.index * 10;
  RUDA_UNITS_NOWAIT(u) {
    uint32_t units = ruda_dim.x * ruda_dim.y * ruda_dim.z;
    out[ruda_pos.x * units + u.index] = RUDA_PRIV(u, mine) + ruda_dim.x;
  }
}
