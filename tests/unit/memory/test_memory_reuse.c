/* The reuse cache: released slices kept for the next reservation of the
 * same size on the same stream (memory/reuse_cache.h), the manager taking
 * them back before it needs a page and whenever usage is asked, slices
 * that stay in their way while in use, and releases racing takes,
 * displacements and evictions on several threads. */
#include <pthread.h>

#include "reuse_test_util.h"

/* The shared sets alone: the threads' own ways in front of them have
 * their tests in test_memory_reuse_local.c. */
static void setup(fixture_t *f, const ruda__memory_config_t *cfg) { reuse_setup(f, cfg, false); }

static void teardown(fixture_t *f) {
  ruda__memory_manager_destroy(f->mm);
  for (uint32_t s = 0; s < RUDA__REUSE_SETS; s++)
    for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++)
      ASSERT_NULL(atomic_load(&f->rc->set[s].way[w]));
  ruda__reuse_cache_free(f->rc);
}

/* Reserves a slice of `size` and releases it: the manager's inbox then
 * holds a cached slice. */
static void release_into_cache(fixture_t *f, uint64_t size) {
  ruda_handle_t a;
  ALLOC(f->mm, size, &a);
  ruda_handle_release(&a);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f->mm->inbox));
}

TEST(a_released_slice_comes_back_with_the_next_generation) {
  fixture_t f;
  setup(&f, NULL);
  ruda_handle_t a;
  ALLOC(f.mm, 4096, &a);
  uint64_t addr = addr_of(f.mm, &a);
  ruda_handle_t stale = a;
  ruda_handle_release(&a);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  expect_no_hit_elsewhere(&f, 4096);
  bool hit;
  ruda_handle_t b = reuse(&f, 4096, 0, &hit);
  ASSERT_TRUE(hit);
  ASSERT_UEQ(b.size, 4096);
  expect_next_generation(&f, &b, &stale, addr);
  expect_usage(f.mm, 1, 4096);
  /* Nothing left to take. */
  reuse(&f, 4096, 0, &hit);
  ASSERT_FALSE(hit);
  ruda_handle_release(&b);
  teardown(&f);
}

TEST(usage_and_cleanup_see_cached_slices_as_free) {
  fixture_t f;
  setup(&f, NULL);
  release_into_cache(&f, 1000);
  expect_usage(f.mm, 0, 0);
  ASSERT_FALSE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  bool hit;
  reuse(&f, 1000, 0, &hit);
  ASSERT_FALSE(hit); /* taken back: the pool has it */
  release_into_cache(&f, 1000);
  expect_cleanup_frees_all(&f);
  teardown(&f);
}

TEST(cached_slices_come_back_before_a_new_page) {
  fixture_t f;
  /* One sliced pool of 8 MiB pages whose slices up to 2 MiB share a page;
   * a 7 MiB slice takes a page of its own. */
  ruda__memory_config_t cfg = one_sliced_pool(8 * MIB, 2 * MIB);
  setup(&f, &cfg);
  ruda_handle_t a, b;
  ALLOC(f.mm, 7 * MIB, &a);
  uint64_t reserved = ruda__memory_usage(f.mm).bytes_reserved;
  uint64_t allocs = f.cs.allocs;
  ruda_handle_release(&a);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  /* 7.5 MiB fits only where the 7 MiB slice was: the manager takes it out
   * of the cache instead of allocating a second page. */
  ALLOC(f.mm, 7 * MIB + MIB / 2, &b);
  ASSERT_UEQ(f.cs.allocs, allocs);
  ASSERT_UEQ(ruda__memory_usage(f.mm).bytes_reserved, reserved);
  ASSERT_FALSE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  ruda_handle_release(&b);
  teardown(&f);
}

TEST(persistent_mode_turns_the_cache_off_and_empties_it) {
  fixture_t f;
  setup(&f, NULL);
  release_into_cache(&f, 3000);
  ruda__memory_set_mode(f.mm, RUDA_ALLOCATION_PERSISTENT);
  ASSERT_FALSE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  bool hit;
  reuse(&f, 3000, 0, &hit);
  ASSERT_FALSE(hit);
  ruda_handle_t a;
  ALLOC(f.mm, 3000, &a);
  ruda_handle_release(&a); /* a persistent slice: not cached */
  ASSERT_FALSE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  ruda__memory_set_mode(f.mm, RUDA_ALLOCATION_AUTO);
  release_into_cache(&f, 5000);
  teardown(&f);
}

TEST(a_full_set_displaces_one_slice_to_its_manager) {
  fixture_t f;
  setup(&f, NULL);
  enum { N = RUDA__REUSE_WAYS + 3 };
  ruda_handle_t h[N];
  for (uint32_t i = 0; i < N; i++) ALLOC(f.mm, 256 * (i + 1), &h[i]);
  for (uint32_t i = 0; i < N; i++) ruda_handle_release(&h[i]);
  uint32_t cached = 0;
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++)
    cached += atomic_load(&f.rc->set[0].way[w]) != NULL;
  ASSERT_UEQ(cached, RUDA__REUSE_WAYS);
  /* Every slice is free, cached or not, and each comes back at most once. */
  uint32_t hits = 0;
  for (uint32_t i = 0; i < N; i++) {
    bool hit;
    ruda_handle_t r = reuse(&f, 256 * (i + 1), 0, &hit);
    if (hit) {
      hits++;
      ruda_handle_release(&r);
      r = reuse(&f, 256 * (i + 1), 0, &hit); /* released again: cached again */
      ASSERT_TRUE(hit);
      ruda_handle_release(&r);
    }
  }
  ASSERT_UGE(hits, 1);
  ASSERT_ULE(hits, RUDA__REUSE_WAYS);
  ruda_memory_usage_t u = ruda__memory_usage(f.mm);
  ASSERT_UEQ(u.number_allocs, 0);
  teardown(&f);
}

/* The way of set 0 that holds the descriptor of `h`, or -1. */
static int way_of(fixture_t *f, const ruda_handle_t *h) {
  ruda_memory_t *m = ruda__handle_memory(h);
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++)
    if (m && atomic_load(&f->rc->set[ruda__reuse_set_of(0)].way[w]) == m) return (int)w;
  return -1;
}

static uint32_t ways_taken(fixture_t *f) {
  uint32_t n = 0;
  for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++)
    n += atomic_load(&f->rc->set[ruda__reuse_set_of(0)].way[w]) != NULL;
  return n;
}

/* A slice goes to its size's home way when that way is free, and to the
 * next free way round the set when it is not; every one comes back. */
TEST(slices_sit_at_their_home_way_or_the_next_free_one) {
  fixture_t f;
  setup(&f, NULL);
  /* The sizes of the benchmark's loop: three pairs share a home. */
  static const uint64_t sizes[] = {256, 4096, 1 << 20, 1000, 65536, 300000, 16, 131072};
  enum { N = sizeof sizes / sizeof sizes[0] };
  ruda_handle_t h[N];
  for (uint32_t i = 0; i < N; i++) ALLOC(f.mm, sizes[i], &h[i]);
  bool taken[RUDA__REUSE_WAYS] = {false};
  for (uint32_t i = 0; i < N; i++) {
    ruda_handle_t keep = h[i];
    ruda_handle_release(&h[i]);
    uint32_t want = ruda__reuse_home(sizes[i]);
    while (taken[want]) want = (want + 1) % RUDA__REUSE_WAYS;
    taken[want] = true;
    /* The released copy names the descriptor: find it by its slot. */
    int w = -1;
    for (uint32_t k = 0; k < RUDA__REUSE_WAYS; k++) {
      ruda_memory_t *m = atomic_load(&f.rc->set[ruda__reuse_set_of(0)].way[k]);
      if (m && m->slot == (uint32_t)ruda_handle_memory_id(&keep)) w = (int)k;
    }
    ASSERT_EQ(w, (int)want);
    ASSERT_UEQ(atomic_load(&f.rc->set[ruda__reuse_set_of(0)].size[w]), sizes[i]);
  }
  ASSERT_UEQ(ways_taken(&f), RUDA__REUSE_WAYS);
  for (uint32_t i = 0; i < N; i++) {
    bool hit;
    ruda_handle_t r = reuse(&f, sizes[i], 0, &hit);
    ASSERT_TRUE(hit);
    ASSERT_UEQ(r.size, sizes[i]);
    ruda_handle_release(&r);
  }
  teardown(&f);
}

TEST(a_reused_slice_stays_in_its_way_and_its_release_frees_it_there) {
  fixture_t f;
  setup(&f, NULL);
  ruda_handle_t b = cached_and_taken(&f, 4096);
  bool hit;
  int w = way_of(&f, &b);
  ASSERT_TRUE(w >= 0);
  /* In use: in the cache, but nothing there to take. */
  ASSERT_FALSE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  ruda_handle_t stale = b;
  ruda_handle_release(&b);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  ASSERT_NULL(ruda__handle_memory(&stale));
  ruda_handle_t c = reuse(&f, 4096, 0, &hit);
  ASSERT_TRUE(hit);
  ASSERT_EQ(way_of(&f, &c), w);
  ASSERT_UEQ(ruda_handle_memory_id(&c) >> 32, (ruda_handle_memory_id(&stale) >> 32) + 1);
  /* A clone keeps it in use past the first release. */
  ruda_handle_t d = ruda_handle_clone(&c);
  ASSERT_FALSE(ruda_handle_is_empty(&d));
  ruda_handle_release(&c);
  ASSERT_FALSE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  ASSERT_TRUE(ruda_handle_can_mut(&d));
  ruda_handle_release(&d);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, 0);
  teardown(&f);
}

TEST(a_slice_taken_out_of_the_cache_while_in_use_goes_back_at_its_release) {
  fixture_t f;
  setup(&f, NULL);
  ruda_handle_t b = cached_and_taken(&f, 2048);
  /* Usage takes the manager's entries out, the one in use among them. */
  expect_usage(f.mm, 1, 2048);
  ASSERT_UEQ(ways_taken(&f), 0);
  ASSERT_TRUE(ruda_handle_is_bound(&b));
  ruda_handle_release(&b);
  ASSERT_UEQ(ways_taken(&f), 1);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  expect_usage(f.mm, 0, 0);
  teardown(&f);
}

TEST(a_full_set_of_slices_in_use_displaces_one_and_loses_none) {
  fixture_t f;
  setup(&f, NULL);
  enum { N = RUDA__REUSE_WAYS };
  ruda_handle_t h[N];
  for (uint32_t i = 0; i < N; i++) ALLOC(f.mm, 512 * (i + 1), &h[i]);
  for (uint32_t i = 0; i < N; i++) ruda_handle_release(&h[i]);
  bool hit;
  for (uint32_t i = 0; i < N; i++) {
    h[i] = reuse(&f, 512 * (i + 1), 0, &hit);
    ASSERT_TRUE(hit);
  }
  /* Every way holds a slice in use; one more release displaces one. */
  ruda_handle_t extra;
  ALLOC(f.mm, 100, &extra);
  ruda_handle_release(&extra);
  ASSERT_UEQ(ways_taken(&f), N);
  uint32_t in_ways = 0;
  for (uint32_t i = 0; i < N; i++) in_ways += way_of(&f, &h[i]) >= 0;
  ASSERT_UEQ(in_ways, N - 1);
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, N);
  /* The displaced slice, released, goes back in; whatever it displaces in
   * turn reaches the manager: nothing is lost, nothing counted twice. */
  for (uint32_t i = 0; i < N; i++) {
    ASSERT_TRUE(ruda_handle_can_mut(&h[i]));
    ruda_handle_release(&h[i]);
  }
  expect_usage(f.mm, 0, 0);
  teardown(&f);
}

TEST(managers_of_other_streams_keep_their_entries) {
  counting_storage_t cs2;
  fixture_t f;
  setup(&f, NULL);
  /* Streams 0 and s share set 0 of the cache. */
  uint64_t s = 1;
  while (ruda__reuse_set_of(s) != ruda__reuse_set_of(0)) s++;
  ruda__memory_manager_t *mm2 = mk_manager(&cs2, 128 * MIB, 256, 0, NULL);
  ASSERT_NOT_NULL(mm2);
  ruda__memory_manager_join(mm2, &f.group, s);
  ruda_memory_t *m = ruda__memory_new();
  ASSERT_OK(ruda__memory_alloc(mm2, m, 512, 0));
  ruda_handle_t other = ruda__handle_wrap(m, 512, (ruda_stream_id_t){s});
  ruda_handle_t mine;
  ALLOC(f.mm, 512, &mine);
  ruda_handle_release(&other);
  ruda_handle_release(&mine);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&mm2->inbox));
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, 0);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&mm2->inbox));
  bool hit;
  ruda_handle_t r = reuse(&f, 512, s, &hit);
  ASSERT_TRUE(hit);
  ASSERT_UEQ(r.stream.value, s);
  ASSERT_UEQ(ruda__memory_usage(mm2).number_allocs, 1);
  ruda_handle_release(&r);
  ASSERT_UEQ(ruda__memory_usage(mm2).number_allocs, 0);
  ruda__memory_manager_destroy(mm2);
  teardown(&f);
}

/* Threads reserve from the cache, write their own pattern into the slice,
 * check it and release, while the "device thread" (this one) keeps
 * reserving through the manager, asking for usage and taking slices back.
 * A slice handed to two owners at once shows as a wrong pattern; a slice
 * lost shows in the final usage. */
static void *churn(void *p) {
  worker_t *w = p;
  /* More sizes than ways: releases displace slices other threads use. */
  static const uint64_t sizes[] = {256, 512, 768, 4096, 1024, 1280, 1536, 1792, 2048, 2304};
  enum { NSIZES = sizeof sizes / sizeof sizes[0] };
  for (uint32_t r = 0; r < ROUNDS && !w->bad; r++) {
    uint64_t size = sizes[(r * 7 + w->id) % NSIZES];
    ruda_handle_t h;
    if (!reuse_round(w->f, w->mm_lock, w->id, r, size, &h, &w->hits, &w->misses)) w->bad = true;
    ruda_handle_release(&h);
  }
  return NULL;
}

TEST(releases_and_takes_race_on_several_threads) {
  fixture_t f;
  setup(&f, NULL);
  uint64_t hits = reuse_race(&f, churn);
  ASSERT_UGT(hits, 0);
  expect_usage(f.mm, 0, 0);
  teardown(&f);
}
