/* Element and storage types: sizes, names, predicates. */
#include <string.h>

#include "ruda/types.h"

typedef struct elem_info {
  const char *name;
  uint32_t bits; /* logical width of one value */
  uint32_t size; /* bytes one stored element takes */
} elem_info_t;

/* Indexed by ruda_elem_type_t; the enum values are stable. */
static const elem_info_t kElemInfo[RUDA_ELEM_COUNT_] = {
    [RUDA_ELEM_F64] = {"f64", 64, 8},
    [RUDA_ELEM_F32] = {"f32", 32, 4},
    [RUDA_ELEM_TF32] = {"tf32", 32, 4},
    [RUDA_ELEM_FLEX32] = {"flex32", 32, 4},
    [RUDA_ELEM_F16] = {"f16", 16, 2},
    [RUDA_ELEM_BF16] = {"bf16", 16, 2},
    [RUDA_ELEM_E4M3] = {"e4m3", 8, 1},
    [RUDA_ELEM_E5M2] = {"e5m2", 8, 1},
    [RUDA_ELEM_E2M3] = {"e2m3", 6, 1},
    [RUDA_ELEM_E3M2] = {"e3m2", 6, 1},
    [RUDA_ELEM_E2M1] = {"e2m1", 4, 1},
    [RUDA_ELEM_E2M1X2] = {"e2m1x2", 8, 1},
    [RUDA_ELEM_UE8M0] = {"ue8m0", 8, 1},
    [RUDA_ELEM_I8] = {"i8", 8, 1},
    [RUDA_ELEM_I16] = {"i16", 16, 2},
    [RUDA_ELEM_I32] = {"i32", 32, 4},
    [RUDA_ELEM_I64] = {"i64", 64, 8},
    [RUDA_ELEM_U8] = {"u8", 8, 1},
    [RUDA_ELEM_U16] = {"u16", 16, 2},
    [RUDA_ELEM_U32] = {"u32", 32, 4},
    [RUDA_ELEM_U64] = {"u64", 64, 8},
    /* bool is stored as a u32: kernels read and write it as a whole
     * 32-bit word, never as a single byte. */
    [RUDA_ELEM_BOOL] = {"bool", 32, 4},
};

static bool elem_valid(ruda_elem_type_t t) {
  /* Compare as unsigned so that a negative value read from an untrusted
   * source is rejected too. */
  return (unsigned)t < (unsigned)RUDA_ELEM_COUNT_;
}

size_t ruda_elem_type_size(ruda_elem_type_t t) {
  return elem_valid(t) ? kElemInfo[t].size : 0;
}

size_t ruda_elem_type_size_bits(ruda_elem_type_t t) {
  return elem_valid(t) ? kElemInfo[t].bits : 0;
}

const char *ruda_elem_type_name(ruda_elem_type_t t) {
  return elem_valid(t) ? kElemInfo[t].name : "invalid";
}

bool ruda_elem_type_is_float(ruda_elem_type_t t) {
  return elem_valid(t) && t <= RUDA_ELEM_UE8M0;
}

bool ruda_elem_type_is_signed_int(ruda_elem_type_t t) {
  return t >= RUDA_ELEM_I8 && t <= RUDA_ELEM_I64;
}

bool ruda_elem_type_is_unsigned_int(ruda_elem_type_t t) {
  return t >= RUDA_ELEM_U8 && t <= RUDA_ELEM_U64;
}

bool ruda_elem_type_parse(const char *name, ruda_elem_type_t *out) {
  if (name == NULL) return false;
  for (int i = 0; i < RUDA_ELEM_COUNT_; i++) {
    if (strcmp(name, kElemInfo[i].name) == 0) {
      if (out != NULL) *out = (ruda_elem_type_t)i;
      return true;
    }
  }
  return false;
}

size_t ruda_storage_type_size(ruda_storage_type_t t) {
  if (!elem_valid(t.elem)) return 0;
  switch (t.kind) {
    case RUDA_STORAGE_SCALAR:
    case RUDA_STORAGE_ATOMIC:
      return kElemInfo[t.elem].size;
    case RUDA_STORAGE_PACKED: {
      /* `packing` values share one storage word: the word holds their bits,
       * rounded up to whole bytes (Packed(e2m1, 2) is one byte). */
      if (t.packing == 0) return 0;
      uint64_t bits = (uint64_t)kElemInfo[t.elem].bits * t.packing;
      return (size_t)((bits + 7) / 8);
    }
  }
  return 0;
}
