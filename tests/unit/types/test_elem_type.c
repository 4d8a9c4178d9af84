/* Element and storage types: sizes, names, parsing, predicates. */
#include "ruda/types.h"
#include "test.h"

/* Every element type with its size in bytes and in bits. */
static const struct {
  ruda_elem_type_t type;
  size_t bytes, bits;
} k_sizes[] = {
    {RUDA_ELEM_F64, 8, 64},   {RUDA_ELEM_F32, 4, 32},    {RUDA_ELEM_TF32, 4, 32},
    {RUDA_ELEM_FLEX32, 4, 32}, {RUDA_ELEM_F16, 2, 16},   {RUDA_ELEM_BF16, 2, 16},
    {RUDA_ELEM_E4M3, 1, 8},   {RUDA_ELEM_E5M2, 1, 8},    {RUDA_ELEM_E2M3, 1, 6},
    {RUDA_ELEM_E3M2, 1, 6},   {RUDA_ELEM_E2M1, 1, 4},    {RUDA_ELEM_E2M1X2, 1, 8},
    {RUDA_ELEM_UE8M0, 1, 8},  {RUDA_ELEM_I8, 1, 8},      {RUDA_ELEM_I16, 2, 16},
    {RUDA_ELEM_I32, 4, 32},   {RUDA_ELEM_I64, 8, 64},    {RUDA_ELEM_U8, 1, 8},
    {RUDA_ELEM_U16, 2, 16},   {RUDA_ELEM_U32, 4, 32},    {RUDA_ELEM_U64, 8, 64},
    {RUDA_ELEM_BOOL, 4, 32}};
enum { N_SIZES = sizeof k_sizes / sizeof k_sizes[0] };

TEST(elem_sizes) {
  ASSERT_UEQ(N_SIZES, RUDA_ELEM_COUNT_);
  for (size_t i = 0; i < N_SIZES; i++) {
    size_t got = ruda_elem_type_size(k_sizes[i].type);
    RT_CHECK_(got == k_sizes[i].bytes, "size of %s: %zu, expected %zu",
              ruda_elem_type_name(k_sizes[i].type), got, k_sizes[i].bytes);
  }
  ASSERT_UEQ(ruda_elem_type_size(RUDA_ELEM_COUNT_), 0);
  ASSERT_UEQ(ruda_elem_type_size((ruda_elem_type_t)-1), 0);
  ASSERT_UEQ(ruda_elem_type_size((ruda_elem_type_t)1000), 0);
}

TEST(elem_size_bits) {
  for (size_t i = 0; i < N_SIZES; i++) {
    size_t got = ruda_elem_type_size_bits(k_sizes[i].type);
    RT_CHECK_(got == k_sizes[i].bits, "bits of %s: %zu, expected %zu",
              ruda_elem_type_name(k_sizes[i].type), got, k_sizes[i].bits);
  }
  ASSERT_UEQ(ruda_elem_type_size_bits(RUDA_ELEM_COUNT_), 0);
  /* Every byte-sized-or-larger type stores exactly its bits. */
  for (int i = 0; i < RUDA_ELEM_COUNT_; i++) {
    size_t bits = ruda_elem_type_size_bits((ruda_elem_type_t)i);
    ASSERT_UGE(ruda_elem_type_size((ruda_elem_type_t)i) * 8, bits);
  }
}

TEST(elem_names_round_trip) {
  for (int i = 0; i < RUDA_ELEM_COUNT_; i++) {
    const char *name = ruda_elem_type_name((ruda_elem_type_t)i);
    ASSERT_STR_CONTAINS("f64 f32 tf32 flex32 f16 bf16 e4m3 e5m2 e2m3 e3m2 "
                        "e2m1 e2m1x2 ue8m0 i8 i16 i32 i64 u8 u16 u32 u64 bool",
                        name);
    ruda_elem_type_t parsed = RUDA_ELEM_COUNT_;
    ASSERT_TRUE(ruda_elem_type_parse(name, &parsed));
    ASSERT_EQ(parsed, i);
    /* Names are distinct. */
    for (int j = 0; j < i; j++) {
      ASSERT_FALSE(strcmp(name, ruda_elem_type_name((ruda_elem_type_t)j)) == 0);
    }
  }
  ASSERT_STR_EQ(ruda_elem_type_name(RUDA_ELEM_F32), "f32");
  ASSERT_STR_EQ(ruda_elem_type_name(RUDA_ELEM_BF16), "bf16");
  ASSERT_STR_EQ(ruda_elem_type_name(RUDA_ELEM_E4M3), "e4m3");
  ASSERT_STR_EQ(ruda_elem_type_name(RUDA_ELEM_BOOL), "bool");
  ASSERT_STR_EQ(ruda_elem_type_name(RUDA_ELEM_COUNT_), "invalid");
}

TEST(elem_parse_rejects_unknown) {
  ruda_elem_type_t t = RUDA_ELEM_U8;
  ASSERT_FALSE(ruda_elem_type_parse("f128", &t));
  ASSERT_FALSE(ruda_elem_type_parse("", &t));
  ASSERT_FALSE(ruda_elem_type_parse("F32", &t));
  ASSERT_FALSE(ruda_elem_type_parse("f32 ", &t));
  ASSERT_FALSE(ruda_elem_type_parse("invalid", &t));
  ASSERT_FALSE(ruda_elem_type_parse(NULL, &t));
  ASSERT_EQ(t, RUDA_ELEM_U8); /* untouched on failure */
  ASSERT_TRUE(ruda_elem_type_parse("e2m1x2", NULL));
}

TEST(elem_predicates) {
  int floats = 0, signed_ints = 0, unsigned_ints = 0;
  for (int i = 0; i < RUDA_ELEM_COUNT_; i++) {
    ruda_elem_type_t t = (ruda_elem_type_t)i;
    int kinds = ruda_elem_type_is_float(t) + ruda_elem_type_is_signed_int(t) +
                ruda_elem_type_is_unsigned_int(t);
    /* Each type is at most one kind; bool is none. */
    ASSERT_EQ(kinds, t == RUDA_ELEM_BOOL ? 0 : 1);
    floats += ruda_elem_type_is_float(t);
    signed_ints += ruda_elem_type_is_signed_int(t);
    unsigned_ints += ruda_elem_type_is_unsigned_int(t);
  }
  ASSERT_EQ(floats, 13);
  ASSERT_EQ(signed_ints, 4);
  ASSERT_EQ(unsigned_ints, 4);
  ASSERT_TRUE(ruda_elem_type_is_float(RUDA_ELEM_TF32));
  ASSERT_TRUE(ruda_elem_type_is_float(RUDA_ELEM_UE8M0));
  ASSERT_TRUE(ruda_elem_type_is_signed_int(RUDA_ELEM_I64));
  ASSERT_TRUE(ruda_elem_type_is_unsigned_int(RUDA_ELEM_U8));
  ASSERT_FALSE(ruda_elem_type_is_float(RUDA_ELEM_COUNT_));
  ASSERT_FALSE(ruda_elem_type_is_unsigned_int(RUDA_ELEM_COUNT_));
}

TEST(storage_type_sizes) {
  ruda_storage_type_t t = {RUDA_STORAGE_SCALAR, RUDA_ELEM_F64, 1};
  ASSERT_UEQ(ruda_storage_type_size(t), 8);
  t = (ruda_storage_type_t){RUDA_STORAGE_ATOMIC, RUDA_ELEM_U32, 1};
  ASSERT_UEQ(ruda_storage_type_size(t), 4);
  t = (ruda_storage_type_t){RUDA_STORAGE_SCALAR, RUDA_ELEM_BOOL, 1};
  ASSERT_UEQ(ruda_storage_type_size(t), 4);
  /* Packing is ignored outside Packed. */
  t = (ruda_storage_type_t){RUDA_STORAGE_SCALAR, RUDA_ELEM_F16, 4};
  ASSERT_UEQ(ruda_storage_type_size(t), 2);
  /* Packed: the bits of `packing` values, rounded up to bytes. */
  t = (ruda_storage_type_t){RUDA_STORAGE_PACKED, RUDA_ELEM_E2M1, 2};
  ASSERT_UEQ(ruda_storage_type_size(t), 1);
  t = (ruda_storage_type_t){RUDA_STORAGE_PACKED, RUDA_ELEM_E2M1, 8};
  ASSERT_UEQ(ruda_storage_type_size(t), 4);
  t = (ruda_storage_type_t){RUDA_STORAGE_PACKED, RUDA_ELEM_E2M1, 3};
  ASSERT_UEQ(ruda_storage_type_size(t), 2);
  t = (ruda_storage_type_t){RUDA_STORAGE_PACKED, RUDA_ELEM_F16, 2};
  ASSERT_UEQ(ruda_storage_type_size(t), 4);
  t = (ruda_storage_type_t){RUDA_STORAGE_PACKED, RUDA_ELEM_E4M3, 4};
  ASSERT_UEQ(ruda_storage_type_size(t), 4);
  t = (ruda_storage_type_t){RUDA_STORAGE_PACKED, RUDA_ELEM_E3M2, 4};
  ASSERT_UEQ(ruda_storage_type_size(t), 3);
  /* Invalid. */
  t = (ruda_storage_type_t){RUDA_STORAGE_PACKED, RUDA_ELEM_E2M1, 0};
  ASSERT_UEQ(ruda_storage_type_size(t), 0);
  t = (ruda_storage_type_t){RUDA_STORAGE_SCALAR, RUDA_ELEM_COUNT_, 1};
  ASSERT_UEQ(ruda_storage_type_size(t), 0);
  t = (ruda_storage_type_t){(ruda_storage_kind_t)7, RUDA_ELEM_F32, 1};
  ASSERT_UEQ(ruda_storage_type_size(t), 0);
}
