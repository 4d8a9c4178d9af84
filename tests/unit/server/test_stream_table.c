/* The server layer's per-stream state: the stream table (real ids, O(1)
 * lookups, bounded reclaim of idle states, least recently used first), the
 * StreamErrorMode table on error lists, and per-stream profilers. Driven
 * directly, with a fake backend extension whose idleness the test sets. */
#include <stdatomic.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "server/stream_table.h"
#include "test.h"

/* The fake backend part of a state. */
typedef struct fake_ext {
  bool busy;        /* holds something: never reclaim */
  uint64_t bytes;   /* reported usage */
  int *releases;    /* counts release calls */
} fake_ext_t;

typedef struct fake_backend {
  int releases;
  int quiesce_calls;
} fake_backend_t;

static bool fake_quiesce(void *ctx, ruda__stream_t *st) {
  ((fake_backend_t *)ctx)->quiesce_calls++;
  return !((fake_ext_t *)ruda__stream_ext(st))->busy;
}
static void fake_release(void *ctx, ruda__stream_t *st) {
  (void)st;
  ((fake_backend_t *)ctx)->releases++;
}
static ruda_memory_usage_t fake_usage(void *ctx, ruda__stream_t *st) {
  (void)ctx;
  fake_ext_t *e = ruda__stream_ext(st);
  ruda_memory_usage_t u = {e->bytes ? 1 : 0, e->bytes, 0, e->bytes};
  return u;
}

static void table_init(ruda__stream_table_t *t, fake_backend_t *b, uint32_t max,
                       atomic_size_t *counter) {
  ruda__stream_table_ops_t ops = {sizeof(fake_ext_t), fake_quiesce, fake_release, fake_usage, b};
  ASSERT_OK(ruda__stream_table_init(t, max, &ops, counter));
}

/* Each test's table `t` of at most `max` idle states over the fake backend
 * `b`; `queued` counts the errors queued in it where `counted`. */
#define TABLE_FIXTURE(max, counted) \
  ruda__stream_table_t t;           \
  fake_backend_t b = {0};           \
  atomic_size_t queued;             \
  atomic_init(&queued, 0);          \
  table_init(&t, &b, (max), (counted) ? &queued : NULL)

static ruda_stream_id_t sid(uint64_t v) { return (ruda_stream_id_t){v}; }

static ruda_status_t launch_error(const char *what) {
  return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "%s", what);
}

TEST(ids_that_alias_modulo_max_streams_have_their_own_state) {
  TABLE_FIXTURE(128, false);
  ruda__stream_t *a = ruda__stream_get(&t, sid(1000));
  ruda__stream_t *c = ruda__stream_get(&t, sid(1128));
  ASSERT_NOT_NULL(a);
  ASSERT_NOT_NULL(c);
  ASSERT_TRUE(a != c);
  ASSERT_UEQ(a->id, 1000);
  ASSERT_UEQ(c->id, 1128);
  ruda__stream_push_error(a, launch_error("stream 1000's kernel failed"));
  /* 1128 is healthy; 1000 reports exactly its own error. */
  ASSERT_OK(ruda__stream_check(ruda__stream_get(&t, sid(1128)), RUDA__MODE_DRAIN));
  ruda_status_t s = ruda__stream_check(ruda__stream_get(&t, sid(1000)), RUDA__MODE_DRAIN);
  ASSERT_NOT_NULL(s);
  ASSERT_UEQ(ruda_status_error_count(s), 1);
  ASSERT_STR_CONTAINS(ruda_status_reason(ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN)),
                      "stream 1000");
  ruda_status_free(s);
  ASSERT_OK(ruda__stream_check(a, RUDA__MODE_DRAIN));
  ruda__stream_table_deinit(&t);
  ASSERT_EQ(b.releases, 2);
}

TEST(lookups_return_the_same_state_and_find_never_creates) {
  TABLE_FIXTURE(8, false);
  ASSERT_NULL(ruda__stream_find(&t, sid(7)));
  ruda__stream_t *s7 = ruda__stream_get(&t, sid(7));
  ruda__stream_t *s9 = ruda__stream_get(&t, sid(9));
  ASSERT_PTR_EQ(ruda__stream_get(&t, sid(7)), s7);
  ASSERT_PTR_EQ(ruda__stream_find(&t, sid(9)), s9);
  ASSERT_PTR_EQ(ruda__stream_find(&t, sid(7)), s7);
  ASSERT_NULL(ruda__stream_find(&t, sid(8)));
  ASSERT_UEQ(ruda__stream_table_count(&t), 2);
  /* Ids far apart (and the largest) work like any other. */
  ruda__stream_t *big = ruda__stream_get(&t, sid(UINT64_MAX));
  ASSERT_UEQ(big->id, UINT64_MAX);
  ASSERT_PTR_EQ(ruda__stream_find(&t, sid(UINT64_MAX)), big);
  /* The extension starts zeroed. */
  fake_ext_t *e = ruda__stream_ext(big);
  ASSERT_FALSE(e->busy);
  ASSERT_UEQ(e->bytes, 0);
  ASSERT_PTR_EQ(ruda__stream_of_ext(e), big);
  ruda__stream_table_deinit(&t);
}

TEST(many_streams_grow_the_table_and_stay_distinct) {
  TABLE_FIXTURE(100000, false);
  enum { N = 5000 };
  for (uint64_t i = 0; i < N; i++) {
    ruda__stream_t *st = ruda__stream_get(&t, sid(i * 128));
    ASSERT_NOT_NULL(st);
    ((fake_ext_t *)ruda__stream_ext(st))->bytes = i + 1;
  }
  ASSERT_UEQ(ruda__stream_table_count(&t), N);
  for (uint64_t i = 0; i < N; i++) {
    ruda__stream_t *st = ruda__stream_find(&t, sid(i * 128));
    ASSERT_NOT_NULL(st);
    ASSERT_UEQ(((fake_ext_t *)ruda__stream_ext(st))->bytes, i + 1);
  }
  ruda_memory_usage_t u = ruda__stream_table_usage(&t);
  ASSERT_UEQ(u.number_allocs, N);
  ASSERT_UEQ(u.bytes_in_use, (uint64_t)N * (N + 1) / 2);
  ruda__stream_table_deinit(&t);
  ASSERT_EQ(b.releases, N);
}

TEST(idle_states_are_reclaimed_least_recently_used_first) {
  TABLE_FIXTURE(4, false);
  for (uint64_t i = 0; i < 4; i++) ASSERT_NOT_NULL(ruda__stream_get(&t, sid(i)));
  /* Touch 0: 1 is now the least recently used. */
  ASSERT_NOT_NULL(ruda__stream_get(&t, sid(0)));
  ASSERT_NOT_NULL(ruda__stream_get(&t, sid(4)));
  ASSERT_UEQ(ruda__stream_table_count(&t), 4);
  ASSERT_NULL(ruda__stream_find(&t, sid(1)));
  ASSERT_NOT_NULL(ruda__stream_find(&t, sid(0)));
  ASSERT_EQ(b.releases, 1);
  /* Many more: the bound holds. */
  for (uint64_t i = 5; i < 1000; i++) ASSERT_NOT_NULL(ruda__stream_get(&t, sid(i)));
  ASSERT_UEQ(ruda__stream_table_count(&t), 4);
  ASSERT_UEQ(t.reclaimed, 996);
  /* A reclaimed stream used again starts afresh. */
  ruda__stream_t *again = ruda__stream_get(&t, sid(1));
  ASSERT_NOT_NULL(again);
  ASSERT_TRUE(ruda__stream_errors_empty(&again->errors));
  ruda__stream_table_deinit(&t);
  ASSERT_EQ(b.releases, 1001);
}

TEST(busy_states_are_never_reclaimed) {
  TABLE_FIXTURE(2, true);
  /* One with a queued error, one with an open profile, one whose backend
   * part is busy. */
  ruda__stream_t *err = ruda__stream_get(&t, sid(10));
  ruda__stream_push_error(err, launch_error("kept"));
  ruda__stream_t *prof = ruda__stream_get(&t, sid(11));
  ruda_profiling_token_t tok;
  ASSERT_OK(ruda__stream_profile_start(&t, prof, 5, NULL, &tok));
  ruda__stream_t *mem = ruda__stream_get(&t, sid(12));
  ((fake_ext_t *)ruda__stream_ext(mem))->busy = true;
  for (uint64_t i = 100; i < 200; i++) ASSERT_NOT_NULL(ruda__stream_get(&t, sid(i)));
  ASSERT_PTR_EQ(ruda__stream_find(&t, sid(10)), err);
  ASSERT_PTR_EQ(ruda__stream_find(&t, sid(11)), prof);
  ASSERT_PTR_EQ(ruda__stream_find(&t, sid(12)), mem);
  /* Busy ones exceed the bound; idle ones never pile up. */
  ASSERT_ULE(ruda__stream_table_count(&t), 2 + 3);
  ASSERT_UEQ(atomic_load(&queued), 1);
  /* Once they are idle, the next creations reclaim them. */
  ruda_status_t drained = ruda__stream_check(err, RUDA__MODE_DRAIN);
  ASSERT_NOT_NULL(drained);
  ruda_status_free(drained);
  ASSERT_UEQ(atomic_load(&queued), 0);
  ruda_profile_duration_t d;
  ASSERT_OK(ruda__profiler_stop(&prof->profiler, tok, 9, RUDA_TIMING_SYSTEM, &d));
  ASSERT_UEQ(ruda_profile_duration_ns(d), 4);
  ((fake_ext_t *)ruda__stream_ext(mem))->busy = false;
  for (uint64_t i = 200; i < 210; i++) ASSERT_NOT_NULL(ruda__stream_get(&t, sid(i)));
  ASSERT_UEQ(ruda__stream_table_count(&t), 2);
  ASSERT_NULL(ruda__stream_find(&t, sid(10)));
  ASSERT_NULL(ruda__stream_find(&t, sid(11)));
  ASSERT_NULL(ruda__stream_find(&t, sid(12)));
  ruda__stream_table_deinit(&t);
}

TEST(a_reclaim_pass_is_bounded) {
  TABLE_FIXTURE(1, false);
  for (uint64_t i = 0; i < 200; i++) {
    ruda__stream_t *st = ruda__stream_get(&t, sid(i));
    ((fake_ext_t *)ruda__stream_ext(st))->busy = true;
  }
  ASSERT_UEQ(ruda__stream_table_count(&t), 200);
  b.quiesce_calls = 0;
  ASSERT_NOT_NULL(ruda__stream_get(&t, sid(1000)));
  ASSERT_ULE(b.quiesce_calls, RUDA__STREAM_RECLAIM_SCAN);
  ASSERT_UGT(b.quiesce_calls, 0);
  ruda__stream_table_deinit(&t);
}

TEST(cursors_come_from_one_clock_and_indexes_are_reused) {
  TABLE_FIXTURE(2, false);
  ruda__stream_t *a = ruda__stream_get(&t, sid(1));
  ruda__stream_t *c = ruda__stream_get(&t, sid(2));
  uint64_t ca = ruda__stream_advance(&t, a);
  uint64_t cc = ruda__stream_advance(&t, c);
  ASSERT_UGT(cc, ca);
  ASSERT_UGT(ruda__stream_advance(&t, a), cc);
  uint32_t max_index = a->index > c->index ? a->index : c->index;
  uint64_t last = a->cursor;
  /* New states start after every cursor handed out so far, and reuse the
   * indexes of reclaimed ones. */
  for (uint64_t i = 3; i < 50; i++) {
    ruda__stream_t *st = ruda__stream_get(&t, sid(i));
    ASSERT_UGT(st->cursor, last);
    last = st->cursor;
    ASSERT_ULE(st->index, max_index + 1);
  }
  ruda__stream_table_deinit(&t);
}

TEST(error_modes_follow_the_stream_error_mode_table) {
  TABLE_FIXTURE(8, true);
  ruda__stream_t *st = ruda__stream_get(&t, sid(3));
  ASSERT_OK(ruda__stream_check(st, RUDA__MODE_CHECK));
  ruda__stream_push_error(st, launch_error("first"));
  ruda__stream_push_error(st, ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "second"));
  ruda__stream_push_error(st, NULL); /* no-op */
  ASSERT_UEQ(atomic_load(&queued), 2);
  /* IGNORE: runs, drains nothing. */
  ASSERT_OK(ruda__stream_check(st, RUDA__MODE_IGNORE));
  ASSERT_UEQ(st->errors.len, 2);
  /* CHECK: fails with copies, keeps them. */
  ruda_status_t s = ruda__stream_check(st, RUDA__MODE_CHECK);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_SERVER_UNHEALTHY);
  ASSERT_UEQ(ruda_status_error_count(s), 2);
  ruda_status_free(s);
  ASSERT_UEQ(st->errors.len, 2);
  ASSERT_UEQ(atomic_load(&queued), 2);
  /* DRAIN: fails with them, in order, as ServerErrors; healthy after. */
  s = ruda__stream_check(st, RUDA__MODE_DRAIN);
  ASSERT_NOT_NULL(s);
  ASSERT_UEQ(ruda_status_error_count(s), 2);
  ASSERT_EQ(ruda_status_family(ruda_status_error_at(s, 0)), RUDA_FAMILY_SERVER);
  ASSERT_NOT_NULL(ruda_status_find(ruda_status_error_at(s, 0), RUDA_ERR_LAUNCH_UNKNOWN));
  ASSERT_NOT_NULL(ruda_status_find(ruda_status_error_at(s, 1), RUDA_ERR_IO_NOT_FOUND));
  ruda_status_free(s);
  ASSERT_UEQ(atomic_load(&queued), 0);
  ASSERT_OK(ruda__stream_check(st, RUDA__MODE_DRAIN));
  /* Errors left at teardown leave the counter in step. */
  ruda__stream_push_error(st, launch_error("left"));
  ASSERT_UEQ(atomic_load(&queued), 1);
  ruda__stream_table_deinit(&t);
  ASSERT_UEQ(atomic_load(&queued), 0);
}

TEST(profiles_nest_overlap_and_reject_unknown_tokens) {
  TABLE_FIXTURE(8, false);
  ruda__stream_t *a = ruda__stream_get(&t, sid(1));
  ruda__stream_t *c = ruda__stream_get(&t, sid(2));
  ruda_profiling_token_t t1, t2, t3;
  ASSERT_OK(ruda__stream_profile_start(&t, a, 100, NULL, &t1));
  ASSERT_OK(ruda__stream_profile_start(&t, a, 150, NULL, &t2));
  ASSERT_OK(ruda__stream_profile_start(&t, c, 150, NULL, &t3));
  /* Tokens are unique across streams. */
  ASSERT_UNE(t1.id, t2.id);
  ASSERT_UNE(t2.id, t3.id);
  ASSERT_UNE(t1.id, t3.id);
  ruda_profile_duration_t d;
  /* Another stream's token is not registered here. */
  ASSERT_ERR_KIND(ruda__profiler_stop(&a->profiler, t3, 200, RUDA_TIMING_SYSTEM, &d),
                  RUDA_ERR_PROFILE_NOT_REGISTERED);
  /* Overlapping: the outer one ends first. */
  ASSERT_OK(ruda__profiler_stop(&a->profiler, t1, 300, RUDA_TIMING_SYSTEM, &d));
  ASSERT_UEQ(d.start_ns, 100);
  ASSERT_UEQ(d.end_ns, 300);
  ASSERT_OK(ruda__profiler_stop(&a->profiler, t2, 350, RUDA_TIMING_DEVICE, &d));
  ASSERT_UEQ(ruda_profile_duration_ns(d), 200);
  ASSERT_EQ(d.method, RUDA_TIMING_DEVICE);
  /* Ending twice, or a token never handed out. */
  ASSERT_ERR_KIND(ruda__profiler_stop(&a->profiler, t1, 400, RUDA_TIMING_SYSTEM, &d),
                  RUDA_ERR_PROFILE_NOT_REGISTERED);
  ASSERT_ERR_KIND(ruda__profiler_stop(&a->profiler, (ruda_profiling_token_t){987654}, 400,
                                      RUDA_TIMING_SYSTEM, &d),
                  RUDA_ERR_PROFILE_NOT_REGISTERED);
  ASSERT_OK(ruda__profiler_stop(&c->profiler, t3, 400, RUDA_TIMING_SYSTEM, &d));
  ruda__stream_table_deinit(&t);
}

TEST(only_errors_queued_while_a_profile_is_open_fail_it) {
  TABLE_FIXTURE(8, false);
  ruda__stream_t *st = ruda__stream_get(&t, sid(1));
  ruda__stream_t *other = ruda__stream_get(&t, sid(2));
  /* An error from before the profile does not belong to it. */
  ruda__stream_push_error(st, launch_error("before"));
  ruda_profiling_token_t clean, failed, elsewhere;
  ASSERT_OK(ruda__stream_profile_start(&t, st, 1, NULL, &clean));
  ruda_profile_duration_t d;
  ASSERT_OK(ruda__profiler_stop(&st->profiler, clean, 2, RUDA_TIMING_SYSTEM, &d));
  ASSERT_OK(ruda__stream_profile_start(&t, st, 3, NULL, &failed));
  ASSERT_OK(ruda__stream_profile_start(&t, other, 3, NULL, &elsewhere));
  ruda__stream_push_error(st, ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "during"));
  ruda_status_t s = ruda__profiler_stop(&st->profiler, failed, 4, RUDA_TIMING_SYSTEM, &d);
  ASSERT_NOT_NULL(s);
  ASSERT_EQ(ruda_status_kind(s), RUDA_ERR_PROFILE_LAUNCH);
  ASSERT_STR_CONTAINS(ruda_status_reason(ruda_status_find(s, RUDA_ERR_LAUNCH_UNKNOWN)), "during");
  ruda_status_free(s);
  /* Another stream's profile is untouched. */
  ASSERT_OK(ruda__profiler_stop(&other->profiler, elsewhere, 4, RUDA_TIMING_SYSTEM, &d));
  /* Observing drained nothing: both errors are still queued, in order. */
  s = ruda__stream_check(st, RUDA__MODE_DRAIN);
  ASSERT_UEQ(ruda_status_error_count(s), 2);
  ASSERT_STR_CONTAINS(ruda_status_reason(ruda_status_find(ruda_status_error_at(s, 0),
                                                          RUDA_ERR_LAUNCH_UNKNOWN)),
                      "before");
  ruda_status_free(s);
  ruda__stream_table_deinit(&t);
}

TEST(states_survive_exhausted_host_memory) {
  TABLE_FIXTURE(4, false);
  ASSERT_NOT_NULL(ruda__stream_get(&t, sid(1))); /* leaves a spare */
  ruda__test_fail_alloc_after(0);
  /* The spare holds one more stream through the failure. */
  ruda__stream_t *st = ruda__stream_get(&t, sid(2));
  ASSERT_NOT_NULL(st);
  ASSERT_NULL(ruda__stream_get(&t, sid(3)));
  /* Pushing an error that cannot grow the list keeps it visible. */
  ruda__stream_push_error(st, launch_error("oom"));
  ruda__stream_push_error(st, launch_error("oom again"));
  ASSERT_UEQ(st->errors.len, 1);
  ruda__test_fail_alloc_after(-1);
  ruda_status_t s = ruda__stream_check(st, RUDA__MODE_DRAIN);
  ASSERT_NOT_NULL(s);
  ASSERT_UEQ(ruda_status_error_count(s), 1);
  /* Without memory its text is gone, not its existence. */
  ASSERT_EQ(ruda_status_family(ruda_status_error_at(s, 0)), RUDA_FAMILY_SERVER);
  ruda_status_free(s);
  ASSERT_NOT_NULL(ruda__stream_get(&t, sid(3)));
  ruda__stream_t *again = ruda__stream_find(&t, sid(2));
  ASSERT_PTR_EQ(again, st);
  ruda__stream_table_deinit(&t);
}

TEST(a_failed_table_init_and_a_zeroed_table_deinit_safely) {
  ruda__stream_table_t t;
  fake_backend_t b = {0};
  ruda__stream_table_ops_t ops = {sizeof(fake_ext_t), fake_quiesce, fake_release, fake_usage, &b};
  ruda__test_fail_alloc_after(0);
  ASSERT_ERR_KIND(ruda__stream_table_init(&t, 4, &ops, NULL), RUDA_ERR_UNAVAILABLE);
  ruda__test_fail_alloc_after(-1);
  ruda__stream_table_deinit(&t);
  ruda__stream_table_t z;
  memset(&z, 0, sizeof z);
  ruda__stream_table_deinit(&z);
  ASSERT_EQ(b.releases, 0);
}

TEST(a_zeroed_table_sets_itself_up_on_first_use) {
  ruda__stream_table_t t;
  memset(&t, 0, sizeof t);
  ASSERT_NULL(ruda__stream_find(&t, sid(4)));
  ruda__stream_t *st = ruda__stream_get(&t, sid(4));
  ASSERT_NOT_NULL(st);
  ruda__stream_push_error(st, launch_error("queued anyway"));
  ASSERT_PTR_EQ(ruda__stream_find(&t, sid(4)), st);
  ASSERT_UEQ(t.max_streams, 128);
  ruda__stream_table_deinit(&t);
}
