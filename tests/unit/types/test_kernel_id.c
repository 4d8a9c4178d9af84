/* Kernel ids: equality, the stable hash and the stable text form. */
#include <stdlib.h>

#include "ruda/types.h"
#include "test.h"

static ruda_kernel_id_t make_id(const char *name, const char *info) {
  ruda_kernel_id_t id;
  memset(&id, 0, sizeof(id));
  id.name = name;
  id.address_type = RUDA_ADDRESS_U32;
  id.ruda_dim = ruda_dim_new_3d(1, 1, 1);
  id.mode = RUDA_EXEC_CHECKED;
  id.info = info;
  id.info_len = info ? strlen(info) : 0;
  return id;
}

static bool hash_eq(ruda_hash128_t a, ruda_hash128_t b) {
  return a.lo == b.lo && a.hi == b.hi;
}

/* Infos "1" and "2" hash and compare differently. */
TEST(kernel_id_info_changes_hash_and_equality) {
  ruda_kernel_id_t a = make_id("matmul", "1");
  ruda_kernel_id_t b = make_id("matmul", "2");
  ASSERT_FALSE(ruda_kernel_id_eq(&a, &b));
  ASSERT_FALSE(hash_eq(ruda_kernel_id_stable_hash(&a),
                       ruda_kernel_id_stable_hash(&b)));
}

/* The hash is over values, not pointers: equal contents at different
 * addresses give equal ids. */
TEST(kernel_id_hash_ignores_pointer_values) {
  char *name = malloc(16);
  char *info = malloc(4);
  ASSERT_NOT_NULL(name);
  ASSERT_NOT_NULL(info);
  strcpy(name, "matmul");
  memcpy(info, "\x01\x02\x03\x04", 4);
  ruda_kernel_id_t a = make_id("matmul", NULL);
  a.info = "\x01\x02\x03\x04";
  a.info_len = 4;
  ruda_kernel_id_t b = a;
  b.name = name;
  b.info = info;
  bool same_hash = hash_eq(ruda_kernel_id_stable_hash(&a),
                           ruda_kernel_id_stable_hash(&b));
  bool same = ruda_kernel_id_eq(&a, &b);
  free(name);
  free(info);
  ASSERT_TRUE(same_hash);
  ASSERT_TRUE(same);
}

TEST(kernel_id_every_component_counts) {
  ruda_kernel_id_t base = make_id("reduce", "opts");
  ruda_hash128_t h0 = ruda_kernel_id_stable_hash(&base);
  ruda_kernel_id_t v[7];
  for (int i = 0; i < 7; i++) v[i] = base;
  v[0].name = "reduce2";
  v[1].address_type = RUDA_ADDRESS_U64;
  v[2].ruda_dim.x = 2;
  v[3].ruda_dim.y = 2;
  v[4].ruda_dim.z = 2;
  v[5].mode = RUDA_EXEC_UNCHECKED;
  v[6].info = NULL;
  v[6].info_len = 0;
  for (int i = 0; i < 7; i++) {
    ASSERT_FALSE(ruda_kernel_id_eq(&base, &v[i]));
    ASSERT_FALSE(hash_eq(h0, ruda_kernel_id_stable_hash(&v[i])));
    for (int j = 0; j < i; j++) {
      ASSERT_FALSE(hash_eq(ruda_kernel_id_stable_hash(&v[j]),
                           ruda_kernel_id_stable_hash(&v[i])));
    }
  }
  /* Name and info do not run together. */
  ruda_kernel_id_t x = make_id("ab", "c");
  ruda_kernel_id_t y = make_id("a", "bc");
  ASSERT_FALSE(hash_eq(ruda_kernel_id_stable_hash(&x),
                       ruda_kernel_id_stable_hash(&y)));
  /* Info with a zero length is no info. */
  ruda_kernel_id_t e1 = make_id("k", NULL);
  ruda_kernel_id_t e2 = make_id("k", "");
  ASSERT_TRUE(ruda_kernel_id_eq(&e1, &e2));
  ASSERT_TRUE(hash_eq(ruda_kernel_id_stable_hash(&e1),
                      ruda_kernel_id_stable_hash(&e2)));
  /* Info bytes after an embedded NUL count. */
  ruda_kernel_id_t n1 = make_id("k", NULL), n2 = make_id("k", NULL);
  n1.info = "a\0b";
  n1.info_len = 3;
  n2.info = "a\0c";
  n2.info_len = 3;
  ASSERT_FALSE(ruda_kernel_id_eq(&n1, &n2));
  ASSERT_FALSE(hash_eq(ruda_kernel_id_stable_hash(&n1),
                       ruda_kernel_id_stable_hash(&n2)));
}

TEST(kernel_id_eq_handles_null) {
  ruda_kernel_id_t a = make_id(NULL, NULL);
  ruda_kernel_id_t b = make_id("", NULL);
  ASSERT_TRUE(ruda_kernel_id_eq(&a, &b));
  ASSERT_TRUE(ruda_kernel_id_eq(NULL, NULL));
  ASSERT_FALSE(ruda_kernel_id_eq(&a, NULL));
}

/* Pinned: this is the persistent cache key. Change it only together with
 * RUDA_KERNEL_ID_FORMAT. */
TEST(kernel_id_hash_golden_value) {
  ruda_kernel_id_t id = make_id("matmul_f32", "\x01\x02\xff");
  id.info_len = 3;
  id.address_type = RUDA_ADDRESS_U64;
  id.ruda_dim = ruda_dim_new_3d(16, 16, 1);
  id.mode = RUDA_EXEC_UNCHECKED;
  ruda_hash128_t h = ruda_kernel_id_stable_hash(&id);
  ASSERT_UEQ(h.lo, UINT64_C(0xbf06752323e0f810));
  ASSERT_UEQ(h.hi, UINT64_C(0xf236d132b22175c2));
}

TEST(kernel_id_stable_format) {
  char buf[256];
  ruda_kernel_id_t id = make_id("matmul_f32", NULL);
  id.info = "\x01\x02\xff";
  id.info_len = 3;
  id.address_type = RUDA_ADDRESS_U64;
  id.ruda_dim = ruda_dim_new_3d(16, 16, 1);
  id.mode = RUDA_EXEC_UNCHECKED;
  size_t n = ruda_kernel_id_stable_format(&id, buf, sizeof(buf));
  ASSERT_STR_EQ(buf, "matmul_f32-u64-(16, 16, 1)-Unchecked-0102ff");
  ASSERT_UEQ(n, strlen(buf));

  ruda_kernel_id_t plain = make_id("add", NULL);
  ruda_kernel_id_stable_format(&plain, buf, sizeof(buf));
  ASSERT_STR_EQ(buf, "add-u32-(1, 1, 1)-Checked-No info");
  plain.mode = RUDA_EXEC_VALIDATE;
  ruda_kernel_id_stable_format(&plain, buf, sizeof(buf));
  ASSERT_STR_EQ(buf, "add-u32-(1, 1, 1)-Validate-No info");
}

TEST(kernel_id_stable_format_truncates_like_snprintf) {
  ruda_kernel_id_t id = make_id("add", "ab");
  const char *full = "add-u32-(1, 1, 1)-Checked-6162";
  size_t want = strlen(full);
  ASSERT_UEQ(ruda_kernel_id_stable_format(&id, NULL, 0), want);
  for (size_t cap = 1; cap <= want + 1; cap++) {
    char buf[64];
    memset(buf, '#', sizeof(buf));
    ASSERT_UEQ(ruda_kernel_id_stable_format(&id, buf, cap), want);
    ASSERT_UEQ(strlen(buf), cap - 1);
    ASSERT_TRUE(strncmp(buf, full, cap - 1) == 0);
    ASSERT_EQ(buf[cap], '#'); /* nothing written past cap */
  }
}
