/* Shapes and strides. */
#include <string.h>

#include "ruda/types.h"

ruda_status_t ruda_shape_init(ruda_shape_t *out, uint32_t rank,
                              const uint64_t *dims) {
  if (out == NULL) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_shape_init: out is NULL");
  }
  if (rank > RUDA_MAX_RANK) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "shape rank %u exceeds the maximum rank %d",
                              (unsigned)rank, RUDA_MAX_RANK);
  }
  if (rank > 0 && dims == NULL) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_shape_init: dims is NULL for rank %u",
                              (unsigned)rank);
  }
  memset(out, 0, sizeof(*out));
  out->rank = rank;
  for (uint32_t i = 0; i < rank; i++) out->dims[i] = dims[i];
  return NULL;
}

/* Built in the returned object itself: a local filled by memset and then
 * copied out costs a 1-D read on the CPU backend a fifth of its time in
 * stalled store-to-load forwarding. */
RUDA__HOT
ruda_shape_t ruda_shape_1d(uint64_t n) { return (ruda_shape_t){.rank = 1, .dims = {n}}; }

ruda_shape_t ruda_shape_2d(uint64_t rows, uint64_t cols) {
  return (ruda_shape_t){.rank = 2, .dims = {rows, cols}};
}

static uint32_t clamp_rank(uint32_t rank) {
  return rank > RUDA_MAX_RANK ? RUDA_MAX_RANK : rank;
}

/* a * b, or false when it does not fit in 64 bits (one multiply with an
 * overflow flag: these run on every copy and launch, and a 64-bit divide
 * costs tens of cycles). */
static bool mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

RUDA__HOT
uint64_t ruda_shape_num_elems(const ruda_shape_t *s) {
  if (s == NULL) return 0;
  uint32_t rank = clamp_rank(s->rank);
  uint64_t n = 1;
  bool overflow = false;
  for (uint32_t i = 0; i < rank; i++) {
    if (s->dims[i] == 0) return 0;
    if (!overflow && !mul_u64(n, s->dims[i], &n)) overflow = true;
  }
  /* Saturate rather than wrap, so that a size check against a device limit
   * fails instead of passing with a small wrapped value. */
  return overflow ? UINT64_MAX : n;
}

RUDA__HOT
ruda_strides_t ruda_strides_contiguous(const ruda_shape_t *s) {
  if (s == NULL) return (ruda_strides_t){.rank = 0};
  uint32_t rank = clamp_rank(s->rank);
  ruda_strides_t st = {.rank = rank};
  uint64_t acc = 1;
  for (uint32_t i = rank; i-- > 0;) {
    st.values[i] = acc;
    acc *= s->dims[i];
  }
  return st;
}

RUDA__HOT
bool ruda_strides_is_contiguous(const ruda_shape_t *s,
                                const ruda_strides_t *st) {
  if (s == NULL || st == NULL) return false;
  if (s->rank != st->rank || s->rank > RUDA_MAX_RANK) return false;
  uint64_t expected = 1;
  for (uint32_t i = s->rank; i-- > 0;) {
    if (st->values[i] != expected) return false;
    if (i > 0 && !mul_u64(expected, s->dims[i], &expected)) return false;
  }
  return true;
}

bool ruda_strides_is_pitched(const ruda_shape_t *s, const ruda_strides_t *st) {
  if (s == NULL || st == NULL) return false;
  uint32_t rank = s->rank;
  if (rank != st->rank || rank > RUDA_MAX_RANK) return false;
  if (rank == 0) return true;
  if (st->values[rank - 1] != 1) return false;
  if (rank == 1) return true;
  /* The row pitch may exceed the row length; everything outside a row is
   * packed. */
  if (st->values[rank - 2] < s->dims[rank - 1]) return false;
  for (uint32_t i = rank - 2; i-- > 0;) {
    uint64_t expected;
    if (!mul_u64(st->values[i + 1], s->dims[i + 1], &expected)) return false;
    if (st->values[i] != expected) return false;
  }
  return true;
}

bool ruda_shape_num_bytes(const ruda_shape_t *s, uint64_t elem_size, uint64_t *out) {
  if (s == NULL) return false;
  uint64_t n = ruda_shape_num_elems(s), bytes;
  /* num_elems saturates at UINT64_MAX; a real count that large times an
   * element size of at least 1 is refused below or is exactly UINT64_MAX
   * bytes, which no memory holds either. */
  if (n == UINT64_MAX && elem_size != 0) return false;
  if (!mul_u64(n, elem_size, &bytes)) return false;
  *out = bytes;
  return true;
}

RUDA__HOT
bool ruda_shape_extent(const ruda_shape_t *s, const ruda_strides_t *st, uint64_t elem_size,
                       uint64_t *out) {
  if (s == NULL || st == NULL) return false;
  if (s->rank != st->rank || s->rank > RUDA_MAX_RANK) return false;
  if (s->rank == 1 && st->values[0] == 1) {
    /* A contiguous vector (every byte read and write): n x elem_size. */
    uint64_t bytes;
    if (!mul_u64(s->dims[0], elem_size, &bytes)) return false;
    *out = bytes;
    return true;
  }
  for (uint32_t i = 0; i < s->rank; i++) {
    if (s->dims[i] == 0) {
      *out = 0;
      return true;
    }
  }
  uint64_t last = 0; /* offset of the furthest element, in elements */
  for (uint32_t i = 0; i < s->rank; i++) {
    uint64_t term;
    if (!mul_u64(s->dims[i] - 1, st->values[i], &term)) return false;
    if (last > UINT64_MAX - term) return false;
    last += term;
  }
  if (last == UINT64_MAX) return false;
  uint64_t bytes;
  if (!mul_u64(last + 1, elem_size, &bytes)) return false;
  *out = bytes;
  return true;
}
