/* Device ids and per-thread stream ids. */
#include <pthread.h>
#include <string.h>

#include "ruda/types.h"
#include "test.h"
#include "types/device_names.h"

TEST(device_id_order_and_equality) {
  ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_device_id_t cpu1 = {RUDA_DEVICE_TYPE_CPU, 1};
  ruda_device_id_t cuda0 = {RUDA_DEVICE_TYPE_CUDA, 0};
  ruda_device_id_t cuda7 = {RUDA_DEVICE_TYPE_CUDA, 7};
  ASSERT_EQ(ruda_device_id_cmp(cpu0, cpu0), 0);
  ASSERT_LT(ruda_device_id_cmp(cpu0, cpu1), 0);
  ASSERT_GT(ruda_device_id_cmp(cpu1, cpu0), 0);
  /* The type orders first, whatever the index. */
  ASSERT_LT(ruda_device_id_cmp(cpu1, cuda0), 0);
  ASSERT_GT(ruda_device_id_cmp(cuda0, cpu1), 0);
  ASSERT_LT(ruda_device_id_cmp(cuda0, cuda7), 0);
  ruda_device_id_t hi = {UINT16_MAX, UINT16_MAX};
  ASSERT_GT(ruda_device_id_cmp(hi, cuda7), 0);
  ASSERT_TRUE(ruda_device_id_eq(cuda7, (ruda_device_id_t){1, 7}));
  ASSERT_FALSE(ruda_device_id_eq(cuda7, cuda0));
  ASSERT_FALSE(ruda_device_id_eq(cpu0, cuda0));
}

/* Registered before every other stream test, so it draws first: the
 * counter starts at 0. */
TEST(stream_id_counter_starts_at_zero) {
  ASSERT_UEQ(ruda_stream_id_current().value, 0);
}

TEST(stream_id_is_stable_per_thread) {
  ruda_stream_id_t a = ruda_stream_id_current();
  ruda_stream_id_t b = ruda_stream_id_current();
  ASSERT_UEQ(a.value, b.value);
}

TEST(stream_id_next_is_fresh_and_increasing) {
  ruda_stream_id_t cur = ruda_stream_id_current();
  ruda_stream_id_t n1 = ruda_stream_id_next();
  ruda_stream_id_t n2 = ruda_stream_id_next();
  ASSERT_UNE(n1.value, cur.value);
  ASSERT_UGT(n2.value, n1.value);
  /* Drawing fresh ids does not change the thread's stream. */
  ASSERT_UEQ(ruda_stream_id_current().value, cur.value);
}

TEST(stream_id_swap_sets_and_restores) {
  ruda_stream_id_t mine = ruda_stream_id_current();
  ruda_stream_id_t other = {mine.value + 1000};
  ruda_stream_id_t prev = ruda_stream_id_swap(other);
  ASSERT_UEQ(prev.value, mine.value);
  ASSERT_UEQ(ruda_stream_id_current().value, other.value);
  prev = ruda_stream_id_swap(mine);
  ASSERT_UEQ(prev.value, other.value);
  ASSERT_UEQ(ruda_stream_id_current().value, mine.value);
}

enum { THREADS = 8 };

typedef struct thread_result {
  uint64_t first, second;
  uint64_t swapped_prev;
} thread_result_t;

static void *stream_thread(void *arg) {
  thread_result_t *r = arg;
  r->first = ruda_stream_id_current().value;
  r->second = ruda_stream_id_current().value;
  return NULL;
}

/* A thread's first swap draws its own id first and returns it. */
static void *swap_first_thread(void *arg) {
  thread_result_t *r = arg;
  r->swapped_prev = ruda_stream_id_swap((ruda_stream_id_t){UINT64_MAX}).value;
  r->first = ruda_stream_id_current().value;
  return NULL;
}

TEST(stream_id_differs_between_threads) {
  pthread_t th[THREADS];
  thread_result_t res[THREADS];
  memset(res, 0, sizeof(res));
  for (int i = 0; i < THREADS; i++) {
    ASSERT_EQ(pthread_create(&th[i], NULL, stream_thread, &res[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) ASSERT_EQ(pthread_join(th[i], NULL), 0);
  uint64_t mine = ruda_stream_id_current().value;
  for (int i = 0; i < THREADS; i++) {
    ASSERT_UEQ(res[i].first, res[i].second);
    ASSERT_UNE(res[i].first, mine);
    for (int j = 0; j < i; j++) ASSERT_UNE(res[i].first, res[j].first);
  }

  thread_result_t s;
  memset(&s, 0, sizeof(s));
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, swap_first_thread, &s), 0);
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_UEQ(s.first, UINT64_MAX);
  ASSERT_UNE(s.swapped_prev, UINT64_MAX);
  ASSERT_UNE(s.swapped_prev, mine);
  /* The id it drew came from the counter, so a later one is larger. */
  ASSERT_ULT(s.swapped_prev, ruda_stream_id_next().value);
}

/* ruda_device_id_format writes `want` for type `type`, index `index` and
 * returns its length. */
static void expect_id(uint16_t type, uint16_t index, const char *want) {
  char buf[32];
  size_t n = ruda_device_id_format((ruda_device_id_t){type, index}, buf, sizeof buf);
  ASSERT_STR_EQ(buf, want);
  ASSERT_UEQ(n, strlen(want));
}

TEST(device_id_format) {
  expect_id(RUDA_DEVICE_TYPE_CPU, 0, "cpu:0");
  expect_id(RUDA_DEVICE_TYPE_CUDA, 3, "cuda:3");
  expect_id(RUDA_DEVICE_TYPE_OPENCL, 1, "opencl:1");
  expect_id(77, 2, "device-type-77:2");
  char tiny[4];
  ASSERT_UEQ(ruda_device_id_format((ruda_device_id_t){RUDA_DEVICE_TYPE_CUDA, 12}, tiny, sizeof tiny), 7);
  ASSERT_STR_EQ(tiny, "cud");
}

/* What the backend registry installs (src/server/backend_registry.c): a
 * fourth backend's name reaches ruda_device_id_format without an entry in
 * the types layer. This program links the types layer only, so nothing is
 * installed until the test does it. */
static const char *fourth_names(uint16_t type_id) {
  if (type_id == 77) return "fourth";
  if (type_id == RUDA_DEVICE_TYPE_CUDA) return "renamed";
  return NULL;
}

TEST(device_id_format_asks_the_installed_lookup_first) {
  ASSERT_TRUE(ruda__device_type_names_installed() == NULL);
  ASSERT_NULL(ruda__device_type_known_name(77));
  ASSERT_TRUE(ruda__device_type_names_install(fourth_names) == NULL);
  ASSERT_TRUE(ruda__device_type_names_installed() == fourth_names);
  expect_id(77, 2, "fourth:2");
  expect_id(RUDA_DEVICE_TYPE_CUDA, 1, "renamed:1");
  /* A type the lookup does not know keeps its built-in name. */
  expect_id(RUDA_DEVICE_TYPE_OPENCL, 0, "opencl:0");
  expect_id(78, 0, "device-type-78:0");
  ASSERT_TRUE(ruda__device_type_names_install(NULL) == fourth_names);
  expect_id(77, 2, "device-type-77:2");
}

TEST(builtin_types_have_names_and_ids) {
  size_t n = 0;
  const uint16_t *ids = ruda__device_type_builtin_ids(&n);
  ASSERT_UEQ(n, 3);
  for (size_t i = 0; i < n; i++) {
    const char *name = ruda__device_type_builtin_name(ids[i]);
    ASSERT_NOT_NULL(name);
    uint16_t back = 0;
    ASSERT_TRUE(ruda__device_type_builtin_id(name, strlen(name), &back));
    ASSERT_UEQ(back, ids[i]);
  }
}
