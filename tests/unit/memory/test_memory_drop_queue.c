/* The drop queue of host buffers in flight (memory/drop_queue.h). */
#include "memory_test_util.h"

typedef struct fence_log {
  int made, waited, destroyed;
  int live;
  int dropped;
  int dropped_at_wait[16]; /* dropped count seen at each wait */
} fence_log_t;

static void *f_make(void *ctx) {
  fence_log_t *l = ctx;
  l->made++;
  l->live++;
  return malloc(1);
}
static void f_wait(void *ctx, void *fence) {
  fence_log_t *l = ctx;
  (void)fence;
  if (l->waited < 16) l->dropped_at_wait[l->waited] = l->dropped;
  l->waited++;
}
static void f_destroy(void *ctx, void *fence) {
  fence_log_t *l = ctx;
  l->destroyed++;
  l->live--;
  free(fence);
}

static fence_log_t *g_log;
static void drop_item(void *item) {
  g_log->dropped++;
  free(item);
}

static ruda__fence_ops_t ops(fence_log_t *l) {
  memset(l, 0, sizeof *l);
  g_log = l;
  ruda__fence_ops_t o = {f_make, f_wait, f_destroy, l};
  return o;
}

TEST(flush_by_count_threshold) {
  fence_log_t log;
  ruda__drop_queue_t *q = ruda__drop_queue_create(0, 0, ops(&log)); /* defaults 64, 64 MiB */
  ASSERT_NOT_NULL(q);
  for (int i = 0; i < 63; i++) {
    ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 8, drop_item));
    ASSERT_FALSE(ruda__drop_queue_should_flush(q));
  }
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 8, drop_item));
  ASSERT_TRUE(ruda__drop_queue_should_flush(q));
  ruda__drop_queue_flush(q);
  ASSERT_FALSE(ruda__drop_queue_should_flush(q));
  /* The first flush never syncs: one fence made, nothing waited or dropped. */
  ASSERT_EQ(log.made, 1);
  ASSERT_EQ(log.waited, 0);
  ASSERT_EQ(log.dropped, 0);
  ruda__drop_queue_destroy(q);
  ASSERT_EQ(log.dropped, 64);
  ASSERT_EQ(log.live, 0);
}

TEST(flush_by_bytes_threshold) {
  fence_log_t log;
  ruda__drop_queue_t *q = ruda__drop_queue_create(64, 64 * MIB, ops(&log));
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 32 * MIB, drop_item));
  ASSERT_FALSE(ruda__drop_queue_should_flush(q));
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 32 * MIB - 1, drop_item));
  ASSERT_FALSE(ruda__drop_queue_should_flush(q));
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 1, drop_item));
  ASSERT_TRUE(ruda__drop_queue_should_flush(q));
  ruda__drop_queue_flush(q);
  ASSERT_FALSE(ruda__drop_queue_should_flush(q));
  ruda__drop_queue_destroy(q);
  ASSERT_EQ(log.dropped, 3);
}

TEST(items_held_at_most_two_flushes) {
  fence_log_t log;
  ruda__drop_queue_t *q = ruda__drop_queue_create(2, 1000, ops(&log));
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 1, drop_item)); /* A */
  ruda__drop_queue_flush(q);                                      /* A pending, fence 1 */
  ASSERT_EQ(log.dropped, 0);
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 1, drop_item)); /* B */
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 1, drop_item)); /* C */
  ruda__drop_queue_flush(q); /* waits fence 1, drops A; B, C pending */
  ASSERT_EQ(log.waited, 1);
  ASSERT_EQ(log.dropped_at_wait[0], 0); /* nothing dropped before the wait */
  ASSERT_EQ(log.dropped, 1);
  ASSERT_EQ(log.made, 2); /* one fence per flush that moves items */
  ruda__drop_queue_flush(q); /* waits fence 2, drops B and C; nothing staged: no fence */
  ASSERT_EQ(log.dropped, 3);
  ASSERT_EQ(log.made, 2);
  ASSERT_EQ(log.waited, 2);
  ASSERT_EQ(log.live, 0);
  ruda__drop_queue_flush(q); /* idle: no fence made, none waited for */
  ASSERT_EQ(log.made, 2);
  ASSERT_EQ(log.waited, 2);
  ASSERT_EQ(log.live, 0);
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 1, drop_item)); /* D after idle flushes */
  ruda__drop_queue_flush(q); /* D pending under fence 3; nothing to wait for first */
  ASSERT_EQ(log.made, 3);
  ASSERT_EQ(log.waited, 2);
  ASSERT_EQ(log.dropped, 3);
  ruda__drop_queue_flush(q); /* waits fence 3, drops D */
  ASSERT_EQ(log.waited, 3);
  ASSERT_EQ(log.dropped, 4);
  ASSERT_EQ(log.live, 0);
  ruda__drop_queue_destroy(q);
  ASSERT_EQ(log.live, 0);
  ASSERT_EQ(log.made, log.destroyed);
}

TEST(destroy_waits_for_everything) {
  fence_log_t log;
  ruda__drop_queue_t *q = ruda__drop_queue_create(4, 1000, ops(&log));
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 1, drop_item));
  ruda__drop_queue_flush(q);
  ASSERT_OK(ruda__drop_queue_push(q, malloc(8), 1, drop_item));
  ASSERT_OK(ruda__drop_queue_push(q, NULL, 1, NULL)); /* no drop function */
  ruda__drop_queue_destroy(q);
  ASSERT_EQ(log.dropped, 2);
  ASSERT_EQ(log.waited, 2); /* the pending fence and one for the staged items */
  ASSERT_EQ(log.live, 0);
  ruda__drop_queue_destroy(NULL);
  ruda__fence_ops_t none = {NULL, NULL, NULL, NULL};
  ASSERT_NULL(ruda__drop_queue_create(1, 1, none));
}
