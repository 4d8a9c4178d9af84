/* Checks of every collective and of send/recv over n in-process devices,
 * shared by the CPU test (tests/unit/comm) and the CUDA test (tests/gpu).
 * Device i holds values derived from i, so every result element is known;
 * every check reads every destination back. Included once per test
 * program (static functions). */
#ifndef RUDA_TEST_COLLECTIVE_CHECKS_H
#define RUDA_TEST_COLLECTIVE_CHECKS_H

#include <stdlib.h>
#include <string.h>

#include "ruda/ruda.h"
#include "test.h"

#define CC_MAX 8
/* Not every program uses every check. */
#define CC_FN static __attribute__((unused))

/* Element types in the order of ruda_elem_type_t that the checks know. */
static __attribute__((unused)) const ruda_elem_type_t cc_types[] = {RUDA_ELEM_F64, RUDA_ELEM_F32, RUDA_ELEM_F16,
                                            RUDA_ELEM_BF16, RUDA_ELEM_I8, RUDA_ELEM_I16,
                                            RUDA_ELEM_I32, RUDA_ELEM_I64, RUDA_ELEM_U8,
                                            RUDA_ELEM_U16, RUDA_ELEM_U32, RUDA_ELEM_U64};
#define CC_NUM_TYPES (sizeof cc_types / sizeof cc_types[0])
static __attribute__((unused)) const ruda_reduce_op_t cc_ops[] = {RUDA_REDUCE_SUM, RUDA_REDUCE_MEAN, RUDA_REDUCE_MIN,
                                          RUDA_REDUCE_MAX};
static __attribute__((unused)) const char *const cc_op_names[] = {"sum", "mean", "min", "max"};

/* Small integers, exact in every type, sums of up to 8 devices fit i8. */
CC_FN double cc_value(size_t dev, size_t e) { return (double)((e * 7 + dev * 3 + e / 5) % 13); }

CC_FN void cc_store(ruda_elem_type_t t, void *p, size_t e, double v) {
  switch (t) {
    case RUDA_ELEM_F64: ((double *)p)[e] = v; break;
    case RUDA_ELEM_F32: ((float *)p)[e] = (float)v; break;
    case RUDA_ELEM_F16: {
      uint16_t h = 0; /* small non-negative integers: exact */
      if (v != 0) {
        int ex = 0;
        double m = v;
        while (m >= 2) {
          m /= 2;
          ex++;
        }
        h = (uint16_t)(((ex + 15) << 10) | (uint16_t)((m - 1) * 1024));
      }
      ((uint16_t *)p)[e] = h;
      break;
    }
    case RUDA_ELEM_BF16: {
      float f = (float)v;
      uint32_t b;
      memcpy(&b, &f, sizeof b);
      ((uint16_t *)p)[e] = (uint16_t)(b >> 16);
      break;
    }
    case RUDA_ELEM_I8: ((int8_t *)p)[e] = (int8_t)v; break;
    case RUDA_ELEM_I16: ((int16_t *)p)[e] = (int16_t)v; break;
    case RUDA_ELEM_I32: ((int32_t *)p)[e] = (int32_t)v; break;
    case RUDA_ELEM_I64: ((int64_t *)p)[e] = (int64_t)v; break;
    case RUDA_ELEM_U8: ((uint8_t *)p)[e] = (uint8_t)v; break;
    case RUDA_ELEM_U16: ((uint16_t *)p)[e] = (uint16_t)v; break;
    case RUDA_ELEM_U32: ((uint32_t *)p)[e] = (uint32_t)v; break;
    case RUDA_ELEM_U64: ((uint64_t *)p)[e] = (uint64_t)v; break;
    default: break;
  }
}

CC_FN double cc_load(ruda_elem_type_t t, const void *p, size_t e) {
  switch (t) {
    case RUDA_ELEM_F64: return ((const double *)p)[e];
    case RUDA_ELEM_F32: return ((const float *)p)[e];
    case RUDA_ELEM_F16: {
      uint16_t h = ((const uint16_t *)p)[e];
      int ex = (h >> 10) & 0x1f;
      if (ex == 0) return (h & 0x3ff) / 16777216.0;
      double m = 1 + (h & 0x3ff) / 1024.0;
      return ex >= 15 ? m * (double)(1u << (ex - 15)) : m / (double)(1u << (15 - ex));
    }
    case RUDA_ELEM_BF16: {
      uint32_t b = (uint32_t)((const uint16_t *)p)[e] << 16;
      float f;
      memcpy(&f, &b, sizeof f);
      return f;
    }
    case RUDA_ELEM_I8: return ((const int8_t *)p)[e];
    case RUDA_ELEM_I16: return ((const int16_t *)p)[e];
    case RUDA_ELEM_I32: return ((const int32_t *)p)[e];
    case RUDA_ELEM_I64: return (double)((const int64_t *)p)[e];
    case RUDA_ELEM_U8: return ((const uint8_t *)p)[e];
    case RUDA_ELEM_U16: return ((const uint16_t *)p)[e];
    case RUDA_ELEM_U32: return ((const uint32_t *)p)[e];
    case RUDA_ELEM_U64: return (double)((const uint64_t *)p)[e];
    default: return -1;
  }
}

CC_FN bool cc_is_float(ruda_elem_type_t t) {
  return t == RUDA_ELEM_F64 || t == RUDA_ELEM_F32 || t == RUDA_ELEM_F16 || t == RUDA_ELEM_BF16;
}

/* op over the values of devices 0..n-1 at element e. */
CC_FN double cc_expect(ruda_elem_type_t t, ruda_reduce_op_t op, size_t n, size_t e) {
  double acc = cc_value(0, e);
  for (size_t k = 1; k < n; k++) {
    double v = cc_value(k, e);
    if (op == RUDA_REDUCE_MIN) acc = v < acc ? v : acc;
    else if (op == RUDA_REDUCE_MAX) acc = v > acc ? v : acc;
    else acc += v;
  }
  if (op == RUDA_REDUCE_MEAN) {
    acc = cc_is_float(t) ? acc / (double)n : (double)((int64_t)acc / (int64_t)n);
  }
  return acc;
}

CC_FN bool cc_close(ruda_elem_type_t t, double got, double want) {
  double tol = 0;
  if (t == RUDA_ELEM_F16 || t == RUDA_ELEM_BF16) tol = 0.02 * (want < 0 ? -want : want) + 1e-3;
  else if (cc_is_float(t)) tol = 1e-5 * (want < 0 ? -want : want) + 1e-6;
  return got >= want - tol && got <= want + tol;
}

CC_FN const char *cc_type_name(ruda_elem_type_t t) {
  const char *n = ruda_elem_type_name(t);
  return n ? n : "?";
}

/* A buffer on client c holding elements [first, first + count) of device
 * `dev`'s values. */
CC_FN void cc_make(ruda_client_t *c, ruda_elem_type_t t, size_t dev, size_t first, size_t count,
                    ruda_handle_t *out) {
  size_t es = ruda_elem_type_size(t);
  uint8_t *host = malloc(count * es + 1);
  ASSERT_TRUE(host != NULL);
  for (size_t e = 0; e < count; e++) cc_store(t, host, e, cc_value(dev, first + e));
  ruda_status_t s = ruda_client_create_buffer(c, host, count * es, out);
  free(host);
  ASSERT_OK(s);
}

CC_FN void *cc_read(ruda_client_t *c, const ruda_handle_t *h, size_t bytes) {
  void *host = malloc(bytes + 1);
  ASSERT_TRUE(host != NULL);
  memset(host, 0xab, bytes + 1);
  ASSERT_OK(ruda_client_read(c, h, host, bytes));
  return host;
}

#define CC_FAIL(...)                                   \
  do {                                                 \
    rt_fail_msg(__FILE__, __LINE__, __VA_ARGS__);      \
    rt_fail();                                         \
  } while (0)

/* All-reduce of `count` elements over clients[0..n). */
CC_FN void cc_all_reduce(ruda_client_t *const *cs, size_t n, ruda_elem_type_t t,
                          ruda_reduce_op_t op, size_t count, bool in_place) {
  size_t es = ruda_elem_type_size(t);
  ruda_handle_t src[CC_MAX] = {{0}}, dst[CC_MAX] = {{0}};
  for (size_t i = 0; i < n; i++) {
    cc_make(cs[i], t, i, 0, count, &src[i]);
    if (in_place) dst[i] = ruda_handle_clone(&src[i]);
    else ASSERT_OK(ruda_client_empty(cs[i], count * es, &dst[i]));
  }
  ASSERT_OK(ruda_client_all_reduce(cs, n, src, dst, t, op));
  for (size_t i = 0; i < n; i++) {
    void *host = cc_read(cs[i], &dst[i], count * es);
    for (size_t e = 0; e < count; e++) {
      double got = cc_load(t, host, e), want = cc_expect(t, op, n, e);
      if (!cc_close(t, got, want)) {
        CC_FAIL("all-reduce %s %s n=%zu count=%zu: device %zu element %zu is %g, want %g",
                cc_type_name(t), cc_op_names[op], n, count, i, e, got, want);
      }
    }
    free(host);
  }
  for (size_t i = 0; i < n; i++) {
    ruda_handle_release(&src[i]);
    ruda_handle_release(&dst[i]);
  }
}

/* Reduce-scatter: each device gets `count` elements, block i of the sum. */
CC_FN void cc_reduce_scatter(ruda_client_t *const *cs, size_t n, ruda_elem_type_t t,
                              ruda_reduce_op_t op, size_t count) {
  size_t es = ruda_elem_type_size(t);
  ruda_handle_t src[CC_MAX] = {{0}}, dst[CC_MAX] = {{0}};
  for (size_t i = 0; i < n; i++) {
    cc_make(cs[i], t, i, 0, count * n, &src[i]);
    ASSERT_OK(ruda_client_empty(cs[i], count * es, &dst[i]));
  }
  ASSERT_OK(ruda_client_reduce_scatter(cs, n, src, dst, t, op));
  for (size_t i = 0; i < n; i++) {
    void *host = cc_read(cs[i], &dst[i], count * es);
    for (size_t e = 0; e < count; e++) {
      double got = cc_load(t, host, e), want = cc_expect(t, op, n, i * count + e);
      if (!cc_close(t, got, want)) {
        CC_FAIL("reduce-scatter %s %s n=%zu count=%zu: device %zu element %zu is %g, want %g",
                cc_type_name(t), cc_op_names[op], n, count, i, e, got, want);
      }
    }
    free(host);
  }
  for (size_t i = 0; i < n; i++) {
    ruda_handle_release(&src[i]);
    ruda_handle_release(&dst[i]);
  }
}

/* Broadcast of `bytes` bytes from `root`: the others start with their own
 * values, every device ends with the root's. */
CC_FN void cc_broadcast(ruda_client_t *const *cs, size_t n, size_t root, size_t bytes) {
  ruda_handle_t buf[CC_MAX] = {{0}};
  for (size_t i = 0; i < n; i++) cc_make(cs[i], RUDA_ELEM_U8, i, 0, bytes, &buf[i]);
  ASSERT_OK(ruda_client_broadcast(cs, n, root, buf));
  for (size_t i = 0; i < n; i++) {
    uint8_t *host = cc_read(cs[i], &buf[i], bytes);
    for (size_t e = 0; e < bytes; e++) {
      if (host[e] != (uint8_t)cc_value(root, e)) {
        CC_FAIL("broadcast of %zu bytes from %zu: device %zu byte %zu is %u, want %u", bytes,
                root, i, e, host[e], (unsigned)cc_value(root, e));
      }
    }
    free(host);
    ruda_handle_release(&buf[i]);
  }
}

/* All-gather of `bytes` bytes per device. */
CC_FN void cc_all_gather(ruda_client_t *const *cs, size_t n, size_t bytes) {
  ruda_handle_t src[CC_MAX] = {{0}}, dst[CC_MAX] = {{0}};
  for (size_t i = 0; i < n; i++) {
    cc_make(cs[i], RUDA_ELEM_U8, i, 0, bytes, &src[i]);
    ASSERT_OK(ruda_client_empty(cs[i], bytes * n, &dst[i]));
  }
  ASSERT_OK(ruda_client_all_gather(cs, n, src, dst));
  for (size_t i = 0; i < n; i++) {
    uint8_t *host = cc_read(cs[i], &dst[i], bytes * n);
    for (size_t k = 0; k < n; k++) {
      for (size_t e = 0; e < bytes; e++) {
        if (host[k * bytes + e] != (uint8_t)cc_value(k, e)) {
          CC_FAIL("all-gather of %zu bytes: device %zu block %zu byte %zu is %u, want %u", bytes,
                  i, k, e, host[k * bytes + e], (unsigned)cc_value(k, e));
        }
      }
    }
    free(host);
    ruda_handle_release(&src[i]);
    ruda_handle_release(&dst[i]);
  }
}

/* Send/recv of `count` elements of t from `from` to `to` and back again,
 * both copies checked. */
CC_FN void cc_send_recv_round_trip(ruda_client_t *from, size_t from_dev, ruda_client_t *to,
                                    ruda_elem_type_t t, size_t count) {
  size_t es = ruda_elem_type_size(t);
  ruda_handle_t src, there, back;
  cc_make(from, t, from_dev, 0, count, &src);
  ruda_shape_t shape = {.rank = 1, .dims = {count}};
  ruda_strides_t strides = {.rank = 1, .values = {1}};
  ASSERT_OK(ruda_client_send_recv(from, &src, &shape, &strides, t, to, &there));
  ASSERT_UEQ(ruda_handle_size_in_used(&there), count * es);
  ASSERT_OK(ruda_client_send_recv(to, &there, NULL, NULL, t, from, &back));
  void *a = cc_read(to, &there, count * es), *b = cc_read(from, &back, count * es);
  for (size_t e = 0; e < count; e++) {
    double want = cc_value(from_dev, e);
    if (cc_load(t, a, e) != want || cc_load(t, b, e) != want) {
      CC_FAIL("send/recv of %zu %s: element %zu is %g there and %g back, want %g", count,
              cc_type_name(t), e, cc_load(t, a, e), cc_load(t, b, e), want);
    }
  }
  free(a);
  free(b);
  ruda_handle_release(&src);
  ruda_handle_release(&there);
  ruda_handle_release(&back);
}

/* fn(a, b, size, ctx) for every ordered pair of distinct devices a, b
 * below n and each of the `num_sizes` sizes: a sends to b. */
CC_FN void cc_each_pair(size_t n, const size_t *sizes, size_t num_sizes,
                        void (*fn)(size_t a, size_t b, size_t size, void *ctx), void *ctx) {
  for (size_t a = 0; a < n; a++) {
    for (size_t b = 0; b < n; b++) {
      for (size_t i = 0; a != b && i < num_sizes; i++) fn(a, b, sizes[i], ctx);
    }
  }
}

typedef struct cc_pairs {
  ruda_client_t *const *cs;
  size_t large;
} cc_pairs_t;

CC_FN void cc_f32_pair(size_t a, size_t b, size_t count, void *ctx) {
  const cc_pairs_t *p = ctx;
  if (count > p->large && (a + b) % 2) return;
  cc_send_recv_round_trip(p->cs[a], a, p->cs[b], RUDA_ELEM_F32, count);
}

/* An f32 send/recv round trip (cc_send_recv_round_trip) for every ordered
 * pair of the n devices of cs and each size; a count over `large` only
 * for the pairs whose a + b is even (SIZE_MAX: every pair). */
CC_FN void cc_f32_round_trips(ruda_client_t *const *cs, size_t n, const size_t *sizes,
                              size_t num_sizes, size_t large) {
  cc_pairs_t p = {cs, large};
  cc_each_pair(n, sizes, num_sizes, cc_f32_pair, &p);
}

#endif
