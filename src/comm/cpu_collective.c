/* In-process all-reduce between CPU devices (see cpu_collective.h).
 *
 * A round of a communicator goes through three steps under its lock:
 *   1. arrive: store this participant's part; the last to arrive checks the
 *      parts (sizes, dtype, op, failures) and opens the round;
 *   2. reduce (unlocked): participant r reduces elements [r*N/n, (r+1)*N/n)
 *      of every src into every dst, so n workers share the bandwidth;
 *   3. leave: the last to finish closes the round (generation + 1) and wakes
 *      the others. No one leaves before every dst is complete, and no one
 *      enters the next round before the current one is closed.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_id.h"
#include "comm/cpu_collective.h"
#include "server/server.h"

typedef struct cpu_comm {
  struct cpu_comm *next;
  uint64_t id;
  size_t n;
  ruda_device_id_t ids[RUDA__COMM_MAX_DEVICES]; /* sorted */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  /* The current round. */
  uint64_t generation;
  size_t arrived, finished;
  bool open;
  char error[512]; /* the round's failure, "" when none */
  ruda_elem_type_t dtype[RUDA__COMM_MAX_DEVICES];
  ruda_reduce_op_t op[RUDA__COMM_MAX_DEVICES];
  ruda__cpu_reduce_part_t parts[RUDA__COMM_MAX_DEVICES];
} cpu_comm_t;

/* The process-wide registry of communicators; they live until exit. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_comm_t *registry;

static ruda_status_t comm_get(const ruda_device_id_t *ids, size_t n, cpu_comm_t **out) {
  *out = NULL;
  if (!ids || n == 0 || n > RUDA__COMM_MAX_DEVICES) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "a communicator takes 1 to %d devices",
                              RUDA__COMM_MAX_DEVICES);
  }
  ruda_device_id_t sorted[RUDA__COMM_MAX_DEVICES];
  memcpy(sorted, ids, n * sizeof *ids);
  ruda__comm_sort_ids(sorted, n);
  for (size_t i = 1; i < n; i++) {
    if (ruda__comm_device_cmp(sorted[i - 1], sorted[i]) == 0) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "device %u:%u is listed twice",
                                sorted[i].type_id, sorted[i].index_id);
    }
  }
  uint64_t id = ruda__comm_id(sorted, n);
  pthread_mutex_lock(&registry_lock);
  cpu_comm_t *c = registry;
  while (c && !(c->id == id && c->n == n && !memcmp(c->ids, sorted, n * sizeof *sorted))) {
    c = c->next;
  }
  if (!c) {
    c = calloc(1, sizeof *c);
    if (!c) {
      pthread_mutex_unlock(&registry_lock);
      return ruda_status_create(RUDA_ERR_SERVER_GENERIC,
                                "out of host memory creating a CPU communicator");
    }
    c->id = id;
    c->n = n;
    memcpy(c->ids, sorted, n * sizeof *sorted);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->next = registry;
    registry = c;
  }
  pthread_mutex_unlock(&registry_lock);
  *out = c;
  return NULL;
}

ruda_status_t ruda__cpu_comm_init(const ruda_device_id_t *ids, size_t n) {
  cpu_comm_t *c;
  return comm_get(ids, n, &c);
}

/* ---- Half-precision conversions (round to nearest even) ---- */

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    float v = ldexpf((float)man, -24);
    return sign ? -v : v;
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
  if (ax < 0x38800000u) { /* subnormal or zero in f16 */
    float v;
    memcpy(&v, &ax, sizeof v);
    float m = nearbyintf(v * 16777216.0f); /* units of 2^-24, ties to even */
    return (uint16_t)(sign | (uint16_t)m);
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u); /* round to nearest even */
  return (uint16_t)(sign | (uint16_t)(((r >> 13) - (112u << 10)) & 0x7fffu));
}

static float bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

/* ---- Reductions of elements [lo, hi) ---- */

typedef struct reduce_job {
  const uint8_t *src[RUDA__COMM_MAX_DEVICES];
  uint8_t *dst[RUDA__COMM_MAX_DEVICES];
  size_t n;
  bool mean;
} reduce_job_t;

/* Blocks of elements: sum the block of every src into a local accumulator,
 * then store it into every dst. */
enum { BLOCK = 512 };

#define DEFINE_REDUCE(NAME, T, ACC, LOAD, STORE, FINISH)                              \
  static void NAME(const reduce_job_t *j, size_t lo, size_t hi) {                   \
    ACC acc[BLOCK];                                                                  \
    for (size_t b = lo; b < hi; b += BLOCK) {                                        \
      size_t len = hi - b < BLOCK ? hi - b : BLOCK;                                  \
      const T *s0 = (const T *)(const void *)j->src[0] + b;                          \
      for (size_t e = 0; e < len; e++) acc[e] = LOAD(s0[e]);                         \
      for (size_t k = 1; k < j->n; k++) {                                            \
        const T *s = (const T *)(const void *)j->src[k] + b;                         \
        for (size_t e = 0; e < len; e++) acc[e] += LOAD(s[e]);                       \
      }                                                                              \
      if (j->mean) {                                                                 \
        for (size_t e = 0; e < len; e++) acc[e] = FINISH(acc[e], j->n);              \
      }                                                                              \
      for (size_t k = 0; k < j->n; k++) {                                            \
        T *d = (T *)(void *)j->dst[k] + b;                                           \
        for (size_t e = 0; e < len; e++) d[e] = STORE(acc[e]);                       \
      }                                                                              \
    }                                                                                \
  }

#define ID(x) (x)
#define DIV_F(a, n) ((a) / (float)(n))
#define DIV_D(a, n) ((a) / (double)(n))
#define DIV_S64(a, n) ((a) / (int64_t)(n))
#define DIV_U64(a, n) ((a) / (uint64_t)(n))
/* Signed sums accumulate in 64 bits (no overflow for n <= 64 of 32 bits);
 * 64-bit ones wrap as unsigned and divide as signed. */
#define LOAD_I64(x) ((uint64_t)(x))
#define STORE_I64(x) ((int64_t)(x))
#define DIV_I64W(a, n) ((uint64_t)((int64_t)(a) / (int64_t)(n)))
#define STORE_I32(x) ((int32_t)(uint32_t)(uint64_t)(x))
#define STORE_I8(x) ((int8_t)(uint8_t)(uint64_t)(x))
#define STORE_U32(x) ((uint32_t)(x))
#define STORE_U8(x) ((uint8_t)(x))

DEFINE_REDUCE(reduce_f32, float, float, ID, ID, DIV_F)
DEFINE_REDUCE(reduce_f64, double, double, ID, ID, DIV_D)
DEFINE_REDUCE(reduce_f16, uint16_t, float, f16_to_f32, f32_to_f16, DIV_F)
DEFINE_REDUCE(reduce_bf16, uint16_t, float, bf16_to_f32, f32_to_bf16, DIV_F)
DEFINE_REDUCE(reduce_i8, int8_t, int64_t, ID, STORE_I8, DIV_S64)
DEFINE_REDUCE(reduce_i32, int32_t, int64_t, ID, STORE_I32, DIV_S64)
DEFINE_REDUCE(reduce_i64, int64_t, uint64_t, LOAD_I64, STORE_I64, DIV_I64W)
DEFINE_REDUCE(reduce_u8, uint8_t, uint64_t, ID, STORE_U8, DIV_U64)
DEFINE_REDUCE(reduce_u32, uint32_t, uint64_t, ID, STORE_U32, DIV_U64)
DEFINE_REDUCE(reduce_u64, uint64_t, uint64_t, ID, ID, DIV_U64)

static void reduce_range(ruda_elem_type_t t, const reduce_job_t *j, size_t lo, size_t hi) {
  if (lo >= hi) return;
  switch (t) {
    case RUDA_ELEM_F32: reduce_f32(j, lo, hi); break;
    case RUDA_ELEM_F64: reduce_f64(j, lo, hi); break;
    case RUDA_ELEM_F16: reduce_f16(j, lo, hi); break;
    case RUDA_ELEM_BF16: reduce_bf16(j, lo, hi); break;
    case RUDA_ELEM_I8: reduce_i8(j, lo, hi); break;
    case RUDA_ELEM_I32: reduce_i32(j, lo, hi); break;
    case RUDA_ELEM_I64: reduce_i64(j, lo, hi); break;
    case RUDA_ELEM_U8: reduce_u8(j, lo, hi); break;
    case RUDA_ELEM_U32: reduce_u32(j, lo, hi); break;
    case RUDA_ELEM_U64: reduce_u64(j, lo, hi); break;
    default: break; /* rejected when the round opened */
  }
}

/* Called by the last participant to arrive, under the lock: "" when the
 * round may run, else the reason every participant reports. */
static void check_round(cpu_comm_t *c) {
  c->error[0] = '\0';
  for (size_t r = 0; r < c->n; r++) {
    const ruda__cpu_reduce_part_t *p = &c->parts[r];
    if (p->error) {
      snprintf(c->error, sizeof c->error, "all-reduce: %s:%u failed: %s",
               ruda_device_type_name(c->ids[r].type_id), c->ids[r].index_id,
               ruda_status_reason(p->error) ? ruda_status_reason(p->error)
                                            : ruda_error_kind_name(ruda_status_kind(p->error)));
      return;
    }
  }
  size_t esize = ruda__reduce_dtype_supported(c->dtype[0]) ? ruda_elem_type_size(c->dtype[0]) : 0;
  if (!esize) {
    snprintf(c->error, sizeof c->error, "all-reduce: element type %s is not supported on CPU",
             ruda_elem_type_name(c->dtype[0]) ? ruda_elem_type_name(c->dtype[0]) : "?");
    return;
  }
  for (size_t r = 0; r < c->n; r++) {
    const ruda__cpu_reduce_part_t *p = &c->parts[r];
    if (c->dtype[r] != c->dtype[0] || c->op[r] != c->op[0]) {
      snprintf(c->error, sizeof c->error,
               "all-reduce: the participants disagree on the element type or the op");
      return;
    }
    if (p->src_bytes != c->parts[0].src_bytes || p->dst_bytes != p->src_bytes ||
        p->src_bytes % esize) {
      snprintf(c->error, sizeof c->error,
               "all-reduce: %s:%u has %llu bytes in src and %llu in dst; %s:%u has %llu; "
               "every buffer must hold the same whole number of elements",
               ruda_device_type_name(c->ids[r].type_id), c->ids[r].index_id,
               (unsigned long long)p->src_bytes, (unsigned long long)p->dst_bytes,
               ruda_device_type_name(c->ids[0].type_id), c->ids[0].index_id,
               (unsigned long long)c->parts[0].src_bytes);
      return;
    }
    if (p->src_bytes && (!p->src || !p->dst)) {
      snprintf(c->error, sizeof c->error, "all-reduce: %s:%u has no buffer",
               ruda_device_type_name(c->ids[r].type_id), c->ids[r].index_id);
      return;
    }
  }
}

ruda_status_t ruda__cpu_all_reduce(const ruda_device_id_t *ids, size_t n, ruda_device_id_t self,
                                   const ruda__cpu_reduce_part_t *part, ruda_elem_type_t dtype,
                                   ruda_reduce_op_t op) {
  cpu_comm_t *c;
  ruda_status_t err = comm_get(ids, n, &c);
  if (err) return err; /* invalid ids: no peer can be waiting on this set */
  size_t rank = ruda__comm_rank(c->ids, c->n, self);
  if (rank == c->n) {
    return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "all-reduce: %s:%u is not a participant",
                              ruda_device_type_name(self.type_id), self.index_id);
  }

  pthread_mutex_lock(&c->lock);
  /* A fast participant may come back before the previous round closed. */
  while (c->open || c->finished) pthread_cond_wait(&c->cond, &c->lock);
  c->parts[rank] = *part;
  c->dtype[rank] = dtype;
  c->op[rank] = op;
  if (++c->arrived == c->n) {
    check_round(c);
    c->open = true;
    pthread_cond_broadcast(&c->cond);
  } else {
    while (!c->open) pthread_cond_wait(&c->cond, &c->lock);
  }
  uint64_t generation = c->generation;
  bool failed = c->error[0] != '\0';
  reduce_job_t job;
  size_t count = 0;
  if (!failed) {
    job.n = c->n;
    job.mean = c->op[0] == RUDA_REDUCE_MEAN;
    for (size_t r = 0; r < c->n; r++) {
      job.src[r] = c->parts[r].src;
      job.dst[r] = c->parts[r].dst;
    }
    count = (size_t)(c->parts[0].src_bytes / ruda_elem_type_size(c->dtype[0]));
  }
  pthread_mutex_unlock(&c->lock);

  if (!failed) {
    size_t lo = count / c->n * rank + (rank < count % c->n ? rank : count % c->n);
    size_t len = count / c->n + (rank < count % c->n ? 1 : 0);
    reduce_range(dtype, &job, lo, lo + len);
  }

  pthread_mutex_lock(&c->lock);
  if (failed) err = ruda_status_create(RUDA_ERR_SERVER_GENERIC, "%s", c->error);
  if (++c->finished == c->n) {
    c->arrived = 0;
    c->finished = 0;
    c->open = false;
    c->generation++;
    pthread_cond_broadcast(&c->cond);
  } else {
    while (c->generation == generation) pthread_cond_wait(&c->cond, &c->lock);
  }
  pthread_mutex_unlock(&c->lock);
  return err;
}
