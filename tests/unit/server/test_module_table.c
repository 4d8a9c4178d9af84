/* The compiled-module table (server/module_table.h): what is inserted is
 * found again through growth past its first capacity, keys that share a
 * home slot are told apart, a missing key finds nothing, and destroy hands
 * every value back exactly once. */
#include <stdint.h>

#include "server/module_table.h"
#include "test.h"

static void count_release(void *value, void *ctx) {
  (*(int *)ctx)++;
  *(int *)value = -1;
}

TEST(module_table_finds_every_key_through_growth) {
  enum { N = 1000 };
  static int values[N];
  ruda__module_table_t t;
  ASSERT_TRUE(ruda__module_table_init(&t));
  ASSERT_UEQ(t.cap, 64);
  for (int i = 0; i < N; i++) {
    values[i] = i;
    ruda_hash128_t k = {(uint64_t)i * 0x1000193u, (uint64_t)i};
    ASSERT_NULL(ruda__module_table_find(&t, k));
    ASSERT_TRUE(ruda__module_table_insert(&t, k, &values[i]));
  }
  ASSERT_UEQ(t.len, N);
  ASSERT_UGE(t.cap, 2 * N);
  for (int i = 0; i < N; i++) {
    ruda_hash128_t k = {(uint64_t)i * 0x1000193u, (uint64_t)i};
    int *v = ruda__module_table_find(&t, k);
    ASSERT_NOT_NULL(v);
    ASSERT_EQ(*v, i);
  }
  ruda_hash128_t missing = {7, 123456};
  ASSERT_NULL(ruda__module_table_find(&t, missing));
  int released = 0;
  ruda__module_table_destroy(&t, count_release, &released);
  ASSERT_EQ(released, N);
  for (int i = 0; i < N; i++) ASSERT_EQ(values[i], -1);
  ASSERT_NULL(ruda__module_table_find(&t, missing));
}

TEST(module_table_tells_apart_keys_with_one_home) {
  ruda__module_table_t t;
  ASSERT_TRUE(ruda__module_table_init(&t));
  /* Same lo ^ hi * C mod 64 for all: they probe past each other. */
  int a = 1, b = 2, c = 3;
  ruda_hash128_t ka = {5, 0}, kb = {5 + 64, 0}, kc = {5 + 128, 0};
  ASSERT_UEQ(ruda__module_table_home(&t, ka), ruda__module_table_home(&t, kb));
  ASSERT_TRUE(ruda__module_table_insert(&t, ka, &a));
  ASSERT_TRUE(ruda__module_table_insert(&t, kb, &b));
  ASSERT_TRUE(ruda__module_table_insert(&t, kc, &c));
  ASSERT_PTR_EQ(ruda__module_table_find(&t, kc), &c);
  ASSERT_PTR_EQ(ruda__module_table_find(&t, ka), &a);
  ASSERT_PTR_EQ(ruda__module_table_find(&t, kb), &b);
  ruda_hash128_t kd = {5 + 192, 0};
  ASSERT_NULL(ruda__module_table_find(&t, kd));
  ruda__module_table_destroy(&t, NULL, NULL);
  ASSERT_UEQ(t.len, 0);
}
