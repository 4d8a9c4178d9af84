/* In-process collectives and send/recv between CPU devices (see
 * cpu_collective.h).
 *
 * One round of a communicator per operation (comm/rendezvous.h): the last
 * participant to arrive checks that the parts agree (check_round); then
 * each participant does its share, unlocked:
 *   all-reduce      participant r reduces elements [r*N/n, (r+1)*N/n) of
 *                   every src into every dst, so n workers share the
 *                   memory bandwidth;
 *   reduce-scatter  participant r reduces block r of every src into its dst;
 *   broadcast       every participant but the root copies the root's buffer;
 *   all-gather      participant r copies every src into its dst;
 *   send/recv       the receiver copies the sender's (strided) view into its
 *                   contiguous dst.
 * No one leaves before every share is done, so later work on any
 * participant sees the results.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/cpu_collective.h"
#include "comm/rendezvous.h"
#include "ruda/dialect/common.h"

ruda_status_t ruda__cpu_comm_init(const ruda__comm_peers_t *peers) {
  if (!peers->ids) {
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                              "CPU devices have no communicator across processes of their own "
                              "(the MPI transport moves CPU buffers)");
  }
  ruda__rendezvous_t *rv;
  return ruda__rendezvous_get(peers->id, peers->size, peers->ids, &rv);
}

/* ---- Half-precision conversions (round to nearest even) ----
 * The kernel dialect's own (ruda/dialect/common.h), so that a collective
 * rounds as a kernel does. */

typedef uint16_t ruda_f16;
typedef uint16_t ruda_bf16;
RUDA__HOST_HALF_CONVERSIONS(static inline)

/* ---- Reductions of elements [lo, hi) ---- */

typedef struct reduce_job {
  const uint8_t *const *src;
  size_t nsrc;
  uint8_t *const *dst;
  size_t ndst;
  ruda_reduce_op_t op;
} reduce_job_t;

/* Blocks of elements: combine the block of every src in a local
 * accumulator, then store it into every dst (which may alias a src). */
enum { BLOCK = 512 };

#define ID(x) (x)
#define DIV_F(a, n) ((a) / (float)(n))
#define DIV_D(a, n) ((a) / (double)(n))
#define DIV_S64(a, n) ((a) / (int64_t)(n))
#define DIV_U64(a, n) ((a) / (uint64_t)(n))
/* Signed sums of up to 32 bits accumulate in 64 bits (no overflow for
 * n <= 64); 64-bit ones wrap as unsigned and divide as signed. */
#define LOAD_I64(x) ((uint64_t)(x))
#define STORE_I64(x) ((int64_t)(x))
#define DIV_I64W(a, n) ((uint64_t)((int64_t)(a) / (int64_t)(n)))
#define STORE_I32(x) ((int32_t)(uint32_t)(uint64_t)(x))
#define STORE_I16(x) ((int16_t)(uint16_t)(uint64_t)(x))
#define STORE_I8(x) ((int8_t)(uint8_t)(uint64_t)(x))
#define STORE_U32(x) ((uint32_t)(x))
#define STORE_U16(x) ((uint16_t)(x))
#define STORE_U8(x) ((uint8_t)(x))
#define CAST(T) (T)

/* T: stored type; ACC/LOAD/STORE/DIV: sums and means; CMP/CLOAD/CSTORE:
 * minimum and maximum. */
#define DEFINE_REDUCE(NAME, T, ACC, LOAD, STORE, DIV, CMP, CLOAD, CSTORE)                  \
  static void NAME(const reduce_job_t *j, size_t lo, size_t hi) {                        \
    for (size_t b = lo; b < hi; b += BLOCK) {                                             \
      size_t len = hi - b < BLOCK ? hi - b : BLOCK;                                       \
      const T *s0 = (const T *)(const void *)j->src[0] + b;                               \
      if (j->op == RUDA_REDUCE_SUM || j->op == RUDA_REDUCE_MEAN) {                        \
        ACC acc[BLOCK];                                                                   \
        for (size_t e = 0; e < len; e++) acc[e] = LOAD(s0[e]);                            \
        for (size_t k = 1; k < j->nsrc; k++) {                                            \
          const T *s = (const T *)(const void *)j->src[k] + b;                            \
          for (size_t e = 0; e < len; e++) acc[e] += LOAD(s[e]);                          \
        }                                                                                 \
        if (j->op == RUDA_REDUCE_MEAN) {                                                  \
          for (size_t e = 0; e < len; e++) acc[e] = DIV(acc[e], j->nsrc);                 \
        }                                                                                 \
        for (size_t k = 0; k < j->ndst; k++) {                                            \
          T *d = (T *)(void *)j->dst[k] + b;                                              \
          for (size_t e = 0; e < len; e++) d[e] = STORE(acc[e]);                          \
        }                                                                                 \
      } else {                                                                            \
        CMP acc[BLOCK];                                                                   \
        bool is_max = j->op == RUDA_REDUCE_MAX;                                           \
        for (size_t e = 0; e < len; e++) acc[e] = CLOAD(s0[e]);                           \
        for (size_t k = 1; k < j->nsrc; k++) {                                            \
          const T *s = (const T *)(const void *)j->src[k] + b;                            \
          if (is_max) {                                                                   \
            for (size_t e = 0; e < len; e++) {                                            \
              CMP v = CLOAD(s[e]);                                                        \
              acc[e] = v > acc[e] ? v : acc[e];                                           \
            }                                                                             \
          } else {                                                                        \
            for (size_t e = 0; e < len; e++) {                                            \
              CMP v = CLOAD(s[e]);                                                        \
              acc[e] = v < acc[e] ? v : acc[e];                                           \
            }                                                                             \
          }                                                                               \
        }                                                                                 \
        for (size_t k = 0; k < j->ndst; k++) {                                            \
          T *d = (T *)(void *)j->dst[k] + b;                                              \
          for (size_t e = 0; e < len; e++) d[e] = CSTORE(acc[e]);                         \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }

DEFINE_REDUCE(reduce_f32, float, float, ID, ID, DIV_F, float, ID, ID)
DEFINE_REDUCE(reduce_f64, double, double, ID, ID, DIV_D, double, ID, ID)
DEFINE_REDUCE(reduce_f16, uint16_t, float, ruda_f16_to_f32, ruda_f32_to_f16, DIV_F, float,
              ruda_f16_to_f32, ruda_f32_to_f16)
DEFINE_REDUCE(reduce_bf16, uint16_t, float, ruda_bf16_to_f32, ruda_f32_to_bf16, DIV_F, float,
              ruda_bf16_to_f32, ruda_f32_to_bf16)
DEFINE_REDUCE(reduce_i8, int8_t, int64_t, ID, STORE_I8, DIV_S64, int8_t, ID, ID)
DEFINE_REDUCE(reduce_i16, int16_t, int64_t, ID, STORE_I16, DIV_S64, int16_t, ID, ID)
DEFINE_REDUCE(reduce_i32, int32_t, int64_t, ID, STORE_I32, DIV_S64, int32_t, ID, ID)
DEFINE_REDUCE(reduce_i64, int64_t, uint64_t, LOAD_I64, STORE_I64, DIV_I64W, int64_t, ID, ID)
DEFINE_REDUCE(reduce_u8, uint8_t, uint64_t, ID, STORE_U8, DIV_U64, uint8_t, ID, ID)
DEFINE_REDUCE(reduce_u16, uint16_t, uint64_t, ID, STORE_U16, DIV_U64, uint16_t, ID, ID)
DEFINE_REDUCE(reduce_u32, uint32_t, uint64_t, ID, STORE_U32, DIV_U64, uint32_t, ID, ID)
DEFINE_REDUCE(reduce_u64, uint64_t, uint64_t, ID, ID, DIV_U64, uint64_t, ID, ID)

static void reduce_range(ruda_elem_type_t t, const reduce_job_t *j, size_t lo, size_t hi) {
  if (lo >= hi || j->nsrc == 0) return;
  switch (t) {
    case RUDA_ELEM_F32: reduce_f32(j, lo, hi); break;
    case RUDA_ELEM_F64: reduce_f64(j, lo, hi); break;
    case RUDA_ELEM_F16: reduce_f16(j, lo, hi); break;
    case RUDA_ELEM_BF16: reduce_bf16(j, lo, hi); break;
    case RUDA_ELEM_I8: reduce_i8(j, lo, hi); break;
    case RUDA_ELEM_I16: reduce_i16(j, lo, hi); break;
    case RUDA_ELEM_I32: reduce_i32(j, lo, hi); break;
    case RUDA_ELEM_I64: reduce_i64(j, lo, hi); break;
    case RUDA_ELEM_U8: reduce_u8(j, lo, hi); break;
    case RUDA_ELEM_U16: reduce_u16(j, lo, hi); break;
    case RUDA_ELEM_U32: reduce_u32(j, lo, hi); break;
    case RUDA_ELEM_U64: reduce_u64(j, lo, hi); break;
    default: break; /* rejected before */
  }
}

void ruda__cpu_reduce(ruda_elem_type_t dtype, ruda_reduce_op_t op, const void *const *src,
                      size_t nsrc, void *const *dst, size_t ndst, size_t count) {
  reduce_job_t j = {(const uint8_t *const *)src, nsrc, (uint8_t *const *)dst, ndst, op};
  reduce_range(dtype, &j, 0, count);
}

#define DEFINE_DIVIDE(NAME, T, W)                                                    \
  static void NAME(void *data, size_t count, uint64_t n) {                          \
    T *p = data;                                                                     \
    for (size_t e = 0; e < count; e++) p[e] = (T)((W)p[e] / (W)n);                   \
  }
DEFINE_DIVIDE(divide_f32, float, float)
DEFINE_DIVIDE(divide_f64, double, double)
DEFINE_DIVIDE(divide_i8, int8_t, int64_t)
DEFINE_DIVIDE(divide_i16, int16_t, int64_t)
DEFINE_DIVIDE(divide_i32, int32_t, int64_t)
DEFINE_DIVIDE(divide_i64, int64_t, int64_t)
DEFINE_DIVIDE(divide_u8, uint8_t, uint64_t)
DEFINE_DIVIDE(divide_u16, uint16_t, uint64_t)
DEFINE_DIVIDE(divide_u32, uint32_t, uint64_t)
DEFINE_DIVIDE(divide_u64, uint64_t, uint64_t)

void ruda__cpu_divide(ruda_elem_type_t dtype, void *data, size_t count, uint64_t n) {
  if (n == 0) return;
  uint16_t *h = data;
  switch (dtype) {
    case RUDA_ELEM_F32: divide_f32(data, count, n); break;
    case RUDA_ELEM_F64: divide_f64(data, count, n); break;
    case RUDA_ELEM_F16:
      for (size_t e = 0; e < count; e++)
        h[e] = ruda_f32_to_f16(ruda_f16_to_f32(h[e]) / (float)n);
      break;
    case RUDA_ELEM_BF16:
      for (size_t e = 0; e < count; e++)
        h[e] = ruda_f32_to_bf16(ruda_bf16_to_f32(h[e]) / (float)n);
      break;
    case RUDA_ELEM_I8: divide_i8(data, count, n); break;
    case RUDA_ELEM_I16: divide_i16(data, count, n); break;
    case RUDA_ELEM_I32: divide_i32(data, count, n); break;
    case RUDA_ELEM_I64: divide_i64(data, count, n); break;
    case RUDA_ELEM_U8: divide_u8(data, count, n); break;
    case RUDA_ELEM_U16: divide_u16(data, count, n); break;
    case RUDA_ELEM_U32: divide_u32(data, count, n); break;
    case RUDA_ELEM_U64: divide_u64(data, count, n); break;
    default: break;
  }
}

/* ---- Strided copies (send/recv) ---- */

bool ruda__cpu_view_extent(const ruda__copy_desc_t *d, uint64_t *out) {
  uint64_t last = 0;
  *out = 0;
  for (uint32_t i = 0; i < d->shape.rank; i++) {
    if (d->shape.dims[i] == 0) return true;
    uint64_t step;
    if (__builtin_mul_overflow(d->shape.dims[i] - 1, d->strides.values[i], &step) ||
        __builtin_add_overflow(last, step, &last)) {
      return false;
    }
  }
  return !__builtin_add_overflow(last, 1, &last) &&
         !__builtin_mul_overflow(last, (uint64_t)d->elem_size, out);
}

void ruda__cpu_gather_view(const uint8_t *base, const ruda__copy_desc_t *d, uint8_t *out) {
  uint64_t n = ruda_shape_num_elems(&d->shape);
  size_t elem = d->elem_size;
  uint32_t rank = d->shape.rank;
  if (n == 0) return;
  if (rank == 0 || ruda_strides_is_contiguous(&d->shape, &d->strides)) {
    memcpy(out, base, n * elem);
    return;
  }
  uint64_t row = d->strides.values[rank - 1] == 1 ? d->shape.dims[rank - 1] : 1;
  uint32_t outer = row > 1 ? rank - 1 : rank;
  uint64_t idx[RUDA_MAX_RANK] = {0};
  for (uint64_t r = 0, rows = n / row; r < rows; r++) {
    uint64_t off = 0;
    for (uint32_t i = 0; i < outer; i++) off += idx[i] * d->strides.values[i];
    memcpy(out, base + off * elem, row * elem);
    out += row * elem;
    for (int32_t i = (int32_t)outer - 1; i >= 0; i--) {
      if (++idx[i] < d->shape.dims[i]) break;
      idx[i] = 0;
    }
  }
}

/* ---- Rounds ---- */

static const ruda__cpu_part_t *part_of(const ruda__round_t *round, uint32_t r) {
  return round->parts[r];
}

static void device_name(const ruda__coll_t *c, uint32_t r, char *buf, size_t cap) {
  const char *type = c->peers.ids ? ruda_device_type_name(c->peers.ids[r].type_id) : NULL;
  if (type) snprintf(buf, cap, "%s:%u", type, c->peers.ids[r].index_id);
  else snprintf(buf, cap, "rank %u", r);
}

/* The bytes each buffer of a part needs: *src_need, *dst_need. The cpu
 * backend sends strided views: a send's src is the view's extent. */
static void needs(const ruda__coll_t *c, uint64_t *src_need, uint64_t *dst_need) {
  ruda__coll_bytes(c, src_need, dst_need);
  if (c->kind == RUDA__COLL_SEND && !ruda__cpu_view_extent(&c->src, src_need))
    *src_need = UINT64_MAX;
}

/* Runs under the rendezvous lock on the last participant to arrive: sets
 * round->error when the round must fail. */
static void check_round(ruda__round_t *round, void *ctx) {
  (void)ctx;
  char *err = round->error;
  size_t cap = sizeof round->error;
  const ruda__coll_t *c0 = part_of(round, 0)->coll;
  const char *what = ruda__coll_kind_name(c0->kind);
  char name[48];
  for (uint32_t r = 0; r < round->size; r++) {
    const ruda__cpu_part_t *p = part_of(round, r);
    if (p->error) {
      device_name(p->coll, r, name, sizeof name);
      const char *why = ruda_status_reason(p->error);
      snprintf(err, cap, "%s: %s failed: %s", ruda__coll_kind_name(p->coll->kind), name,
               why ? why : ruda_error_kind_name(ruda_status_kind(p->error)));
      return;
    }
  }
  bool p2p = c0->kind == RUDA__COLL_SEND || c0->kind == RUDA__COLL_RECV;
  for (uint32_t r = 0; r < round->size; r++) {
    const ruda__coll_t *c = part_of(round, r)->coll;
    bool agree;
    if (p2p) {
      /* One send and one recv, naming each other. */
      const ruda__coll_t *o = part_of(round, 1 - r)->coll;
      agree = round->size == 2 && c->kind != o->kind &&
              (c->kind == RUDA__COLL_SEND || c->kind == RUDA__COLL_RECV) &&
              (o->kind == RUDA__COLL_SEND || o->kind == RUDA__COLL_RECV) && c->peer == 1 - r &&
              c->count == o->count &&
              ruda_elem_type_size(c->dtype) == ruda_elem_type_size(o->dtype);
    } else {
      agree = c->kind == c0->kind && c->count == c0->count && c->dtype == c0->dtype &&
              (!ruda__coll_is_reduction(c->kind) || c->op == c0->op) &&
              (c->kind != RUDA__COLL_BROADCAST || c->root == c0->root);
    }
    if (!agree) {
      snprintf(err, cap,
               "%s: the participants disagree on the operation (kind, element count, type, "
               "op, root or peer)",
               what);
      return;
    }
  }
  if (ruda__coll_is_reduction(c0->kind) && !(RUDA__REDUCE_TYPES_CPU & (1ull << c0->dtype))) {
    const char *tn = ruda_elem_type_name(c0->dtype);
    snprintf(err, cap, "%s: the cpu backend cannot reduce %s", what, tn ? tn : "?");
    return;
  }
  for (uint32_t r = 0; r < round->size; r++) {
    const ruda__cpu_part_t *p = part_of(round, r);
    uint64_t sn, dn;
    needs(p->coll, &sn, &dn);
    if (p->src_bytes < sn || p->dst_bytes < dn || (sn && !p->src) || (dn && !p->dst)) {
      device_name(p->coll, r, name, sizeof name);
      snprintf(err, cap,
               "%s: %s has %llu bytes in src and %llu in dst; it needs %llu and %llu",
               ruda__coll_kind_name(p->coll->kind), name, (unsigned long long)p->src_bytes,
               (unsigned long long)p->dst_bytes, (unsigned long long)sn,
               (unsigned long long)dn);
      return;
    }
  }
}

/* This participant's share, unlocked. */
static void do_share(ruda__round_t *round, uint32_t rank, void *ctx) {
  (void)ctx;
  const ruda__cpu_part_t *me = part_of(round, rank);
  const ruda__coll_t *c = me->coll;
  uint32_t n = round->size;
  size_t esize = ruda_elem_type_size(c->dtype);
  size_t count = (size_t)c->count;
  size_t bytes = count * esize;
  const void *srcs[RUDA__COMM_MAX_DEVICES];
  void *dsts[RUDA__COMM_MAX_DEVICES];
  switch (c->kind) {
    case RUDA__COLL_ALL_REDUCE: {
      for (uint32_t r = 0; r < n; r++) {
        srcs[r] = part_of(round, r)->src;
        dsts[r] = part_of(round, r)->dst;
      }
      size_t lo = count / n * rank + (rank < count % n ? rank : count % n);
      size_t len = count / n + (rank < count % n ? 1 : 0);
      reduce_job_t j = {(const uint8_t *const *)srcs, n, (uint8_t *const *)dsts, n, c->op};
      reduce_range(c->dtype, &j, lo, lo + len);
      break;
    }
    case RUDA__COLL_REDUCE_SCATTER: {
      for (uint32_t r = 0; r < n; r++) srcs[r] = part_of(round, r)->src + (size_t)rank * bytes;
      dsts[0] = me->dst;
      ruda__cpu_reduce(c->dtype, c->op, srcs, n, dsts, 1, count);
      break;
    }
    case RUDA__COLL_BROADCAST:
      if (rank != c->root && bytes) memcpy(me->dst, part_of(round, c->root)->dst, bytes);
      break;
    case RUDA__COLL_ALL_GATHER:
      for (uint32_t r = 0; r < n && bytes; r++) {
        /* In place, src[rank] is already this block: copying it onto itself
         * would write what the peers are reading (a data race, even though
         * the bytes do not change). memmove for other overlaps. */
        uint8_t *to = me->dst + (size_t)r * bytes;
        const uint8_t *from = part_of(round, r)->src;
        if (to != from) memmove(to, from, bytes);
      }
      break;
    case RUDA__COLL_RECV: {
      const ruda__cpu_part_t *from = part_of(round, c->peer);
      ruda__cpu_gather_view(from->src, &from->coll->src, me->dst);
      break;
    }
    case RUDA__COLL_SEND:
      break; /* the receiver copies */
  }
}

ruda_status_t ruda__cpu_collective(const ruda__cpu_part_t *part) {
  const ruda__coll_t *c = part->coll;
  ruda__rendezvous_t *rv;
  ruda_status_t err = ruda__cpu_comm_init(&c->peers);
  if (!err) err = ruda__rendezvous_get(c->peers.id, c->peers.size, c->peers.ids, &rv);
  if (err) return err; /* invalid peers: the client never lets this happen */
  return ruda__rendezvous_join(rv, c->peers.rank, (void *)part, check_round, do_share, NULL,
                               ruda__coll_kind_name(c->kind));
}
