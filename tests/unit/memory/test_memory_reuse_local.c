/* The threads' own ways of the reuse cache (memory/reuse_cache.h): a
 * release on a thread that takes from the cache parks the slice in that
 * thread's ways and its next reservation gets it back; the manager takes
 * parked slices back from threads that sit idle or have exited; ways of a
 * freed cache are never used again; and several threads reserving,
 * releasing each other's memory and racing the manager's removals never
 * share a slice or lose one. */
#include <pthread.h>

#include "base/sync.h"
#include "memory/reuse_cache.h"
#include "reuse_test_util.h"

/* Every test needs the heavy fence (threads get ways of their own only
 * with it): setup skips the test without it. */
static void setup(fixture_t *f, const ruda__memory_config_t *cfg) {
  if (!ruda__fence_heavy_ready())
    SKIP("no membarrier (private expedited) here: threads get no ways of their own");
  reuse_setup(f, cfg, true);
}

static void teardown(fixture_t *f) {
  ruda__memory_manager_destroy(f->mm);
  ruda__reuse_cache_free(f->rc);
}

/* The calling thread's ways of the fixture's cache (NULL: none yet). */
static ruda__reuse_local_t *my_ways(fixture_t *f) {
  ruda__local_ref_t *r = ruda__reuse_local_ref(f->rc);
  return r ? r->local : NULL;
}

/* Attaches the calling thread to the cache (its first take, which finds
 * nothing) and returns its ways. */
static ruda__reuse_local_t *attach(fixture_t *f) {
  bool hit;
  reuse(f, 64, 0, &hit);
  return my_ways(f);
}

/* setup, then attach: the calling thread's ways (asserted to exist). */
static ruda__reuse_local_t *setup_attached(fixture_t *f, const ruda__memory_config_t *cfg) {
  setup(f, cfg);
  ruda__reuse_local_t *l = attach(f);
  ASSERT_NOT_NULL(l);
  return l;
}

static uint32_t count_in(ruda__reuse_local_t *l) {
  uint32_t n = 0;
  for (uint32_t w = 0; w < RUDA__LOCAL_WAYS; w++) n += atomic_load(&l->way[w]) != NULL;
  return n;
}

static bool ways_hold(ruda__reuse_local_t *l, const ruda_handle_t *h) {
  for (uint32_t w = 0; w < RUDA__LOCAL_WAYS; w++) {
    ruda_memory_t *m = atomic_load(&l->way[w]);
    if (m && m->slot == (uint32_t)ruda_handle_memory_id(h)) return true;
  }
  return false;
}

static uint32_t count_lists(fixture_t *f) {
  uint32_t n = 0;
  for (ruda__reuse_local_t *l = atomic_load(&f->rc->locals); l; l = atomic_load(&l->next)) n++;
  return n;
}

static bool shared_sets_empty(fixture_t *f) {
  for (uint32_t s = 0; s < RUDA__REUSE_SETS; s++)
    for (uint32_t w = 0; w < RUDA__REUSE_WAYS; w++)
      if (atomic_load(&f->rc->set[s].way[w])) return false;
  return true;
}

TEST(a_release_parks_the_slice_in_the_threads_ways_and_the_next_take_gets_it) {
  fixture_t f;
  setup(&f, NULL);
  ruda_handle_t a;
  ALLOC(f.mm, 4096, &a);
  uint64_t id = ruda_handle_memory_id(&a), addr = addr_of(f.mm, &a);
  /* No ways yet: the release goes to the shared sets, and the first take
   * attaches the thread, finds its ways empty and takes from the set. */
  ruda_handle_release(&a);
  ASSERT_NULL(my_ways(&f));
  bool hit;
  ruda_handle_t b = reuse(&f, 4096, 0, &hit);
  ASSERT_TRUE(hit);
  ruda__reuse_local_t *l = my_ways(&f);
  ASSERT_NOT_NULL(l);
  ASSERT_UEQ(count_lists(&f), 1);
  ASSERT_UEQ(ruda_handle_memory_id(&b) >> 32, (id >> 32) + 1);
  /* A slice from the shared sets stays in its way there while in use,
   * and its release frees it in place. */
  ruda_handle_t stale = b;
  ruda_handle_release(&b);
  ASSERT_UEQ(count_in(l), 0);
  ASSERT_FALSE(shared_sets_empty(&f));
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, 0); /* usage takes it back */
  ASSERT_TRUE(shared_sets_empty(&f));
  /* Reserved through the manager, released on this thread: parked. */
  ALLOC(f.mm, 4096, &a);
  ASSERT_UEQ(addr_of(f.mm, &a), addr); /* the pool's first fit again */
  stale = a;
  ruda_handle_release(&a);
  ASSERT_UEQ(count_in(l), 1);
  ASSERT_TRUE(ways_hold(l, &stale));
  ASSERT_TRUE(shared_sets_empty(&f));
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  expect_no_hit_elsewhere(&f, 4096);
  ruda_handle_t c = reuse(&f, 4096, 0, &hit);
  ASSERT_TRUE(hit);
  ASSERT_UEQ(count_in(l), 0);
  expect_next_generation(&f, &c, &stale, addr);
  /* A stale copy's release changes nothing. */
  ruda_handle_release(&stale);
  ASSERT_OK(ruda__handle_check(&c, DEV, "write"));
  expect_usage(f.mm, 1, 4096);
  ruda_handle_release(&c);
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, 0);
  teardown(&f);
}

TEST(a_handle_with_a_clone_or_binding_is_parked_only_at_its_last_release) {
  fixture_t f;
  ruda__reuse_local_t *l = setup_attached(&f, NULL);
  ruda_handle_t a = alloc_handle(f.mm, 1000);
  ruda_handle_t clone = ruda_handle_clone(&a);
  ruda_binding_t bind = ruda_handle_binding(&a);
  ruda_handle_release(&a);
  ASSERT_UEQ(count_in(l), 0);
  ruda_handle_release(&clone);
  ASSERT_UEQ(count_in(l), 0); /* the binding still holds it */
  ASSERT_NOT_NULL(ruda__binding_memory(&bind));
  ruda_binding_release(&bind);
  ASSERT_UEQ(count_in(l), 1);
  bool hit;
  ruda_handle_t b = reuse(&f, 1000, 0, &hit);
  ASSERT_TRUE(hit);
  ASSERT_NULL(ruda__binding_memory(&bind));
  ruda_handle_release(&b);
  teardown(&f);
}

TEST(slices_parked_in_the_ways_come_back_before_a_new_page) {
  fixture_t f;
  ruda__memory_config_t cfg = one_sliced_pool(8 * MIB, 2 * MIB);
  ruda__reuse_local_t *l = setup_attached(&f, &cfg);
  ruda_handle_t a, b;
  ALLOC(f.mm, 7 * MIB, &a);
  uint64_t reserved = ruda__memory_usage(f.mm).bytes_reserved;
  uint64_t allocs = f.cs.allocs;
  ruda_handle_release(&a);
  ASSERT_UEQ(count_in(l), 1);
  /* 7.5 MiB fits only where the 7 MiB slice was. */
  ALLOC(f.mm, 7 * MIB + MIB / 2, &b);
  ASSERT_UEQ(f.cs.allocs, allocs);
  ASSERT_UEQ(ruda__memory_usage(f.mm).bytes_reserved, reserved);
  ASSERT_UEQ(count_in(l), 0);
  ruda_handle_release(&b);
  expect_cleanup_frees_all(&f);
  teardown(&f);
}

TEST(full_ways_displace_one_slice_into_the_shared_sets) {
  fixture_t f;
  ruda__reuse_local_t *l = setup_attached(&f, NULL);
  bool hit;
  enum { N = RUDA__LOCAL_WAYS + 1 };
  ruda_handle_t h[N];
  for (uint32_t i = 0; i < N; i++) ALLOC(f.mm, 256 * (i + 1), &h[i]);
  for (uint32_t i = 0; i < N; i++) ruda_handle_release(&h[i]);
  ASSERT_UEQ(count_in(l), RUDA__LOCAL_WAYS);
  ASSERT_FALSE(shared_sets_empty(&f));
  /* Every size comes back, from the ways or the set. */
  for (uint32_t i = 0; i < N; i++) {
    h[i] = reuse(&f, 256 * (i + 1), 0, &hit);
    ASSERT_TRUE(hit);
  }
  ASSERT_UEQ(count_in(l), 0);
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, N);
  /* The displaced one stayed in its shared way; the rest park again. */
  for (uint32_t i = 0; i < N; i++) ruda_handle_release(&h[i]);
  ASSERT_UEQ(count_in(l), RUDA__LOCAL_WAYS);
  ASSERT_FALSE(shared_sets_empty(&f));
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, 0);
  ASSERT_UEQ(ruda__memory_usage(f.mm).bytes_in_use, 0);
  ASSERT_UEQ(count_in(l), 0);
  ASSERT_TRUE(shared_sets_empty(&f));
  teardown(&f);
}

/* A thread that parks slices and then waits, alive and idle, or exits. */
typedef struct parker {
  fixture_t *f;
  uint32_t count;
  bool exit_at_once;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int stage; /* 1: parked; 2: told to go on */
  bool ok;
  ruda__reuse_local_t *ways;
  pthread_t thread;
} parker_t;

static void *park(void *p) {
  parker_t *k = p;
  ruda_handle_t h[8];
  k->ways = attach(k->f);
  k->ok = k->ways != NULL;
  for (uint32_t i = 0; i < k->count && k->ok; i++) k->ok = try_alloc(k->f->mm, 512 * (i + 1), &h[i]) == NULL;
  for (uint32_t i = 0; i < k->count && k->ok; i++) ruda_handle_release(&h[i]);
  k->ok = k->ok && count_in(k->ways) == k->count;
  pthread_mutex_lock(&k->lock);
  k->stage = 1;
  pthread_cond_broadcast(&k->cond);
  while (!k->exit_at_once && k->stage != 2) pthread_cond_wait(&k->cond, &k->lock);
  pthread_mutex_unlock(&k->lock);
  return NULL;
}

static void parker_start(parker_t *k, fixture_t *f, uint32_t count, bool exit_at_once) {
  memset(k, 0, sizeof *k);
  k->f = f;
  k->count = count;
  k->exit_at_once = exit_at_once;
  pthread_mutex_init(&k->lock, NULL);
  pthread_cond_init(&k->cond, NULL);
  pthread_create(&k->thread, NULL, park, k);
  pthread_mutex_lock(&k->lock);
  while (k->stage != 1) pthread_cond_wait(&k->cond, &k->lock);
  pthread_mutex_unlock(&k->lock);
}

static void parker_finish(parker_t *k) {
  pthread_mutex_lock(&k->lock);
  k->stage = 2;
  pthread_cond_broadcast(&k->cond);
  pthread_mutex_unlock(&k->lock);
  pthread_join(k->thread, NULL);
  pthread_mutex_destroy(&k->lock);
  pthread_cond_destroy(&k->cond);
}

TEST(usage_and_cleanup_take_slices_back_from_an_idle_threads_ways) {
  fixture_t f;
  setup(&f, NULL);
  parker_t k;
  parker_start(&k, &f, 5, false);
  ASSERT_TRUE(k.ok);
  ASSERT_TRUE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  expect_usage(f.mm, 0, 0);
  ASSERT_UEQ(count_in(k.ways), 0);
  ASSERT_FALSE(ruda__memory_inbox_has_cached(&f.mm->inbox));
  expect_cleanup_frees_all(&f);
  /* The thread goes on using its ways afterwards. */
  parker_finish(&k);
  teardown(&f);
}

TEST(ways_of_an_exited_thread_are_emptied_by_the_manager_and_adopted) {
  fixture_t f;
  setup(&f, NULL);
  parker_t k;
  parker_start(&k, &f, 3, true);
  pthread_join(k.thread, NULL);
  ASSERT_TRUE(k.ok);
  ASSERT_UEQ(count_lists(&f), 1);
  ASSERT_UEQ(atomic_load(&k.ways->refs), 1); /* the list's alone */
  ASSERT_UEQ(count_in(k.ways), 3);
  ASSERT_UEQ(ruda__memory_usage(f.mm).number_allocs, 0);
  ASSERT_UEQ(count_in(k.ways), 0);
  /* The next thread to attach takes the orphan over. */
  ASSERT_TRUE(attach(&f) == k.ways);
  ASSERT_UEQ(atomic_load(&k.ways->refs), 2);
  ASSERT_UEQ(count_lists(&f), 1);
  pthread_mutex_destroy(&k.lock);
  pthread_cond_destroy(&k.cond);
  teardown(&f);
}

TEST(ways_of_a_freed_cache_are_never_used_again) {
  /* The thread stays attached to a cache that is freed under it; a new
   * cache, perhaps at the same address, gives it new ways. ASan checks the
   * rest: no use after free, no leak. */
  fixture_t f;
  ruda__reuse_local_t *old = setup_attached(&f, NULL);
  ruda_handle_t a = alloc_handle(f.mm, 2048);
  ruda_handle_release(&a);
  ASSERT_UEQ(count_in(old), 1);
  teardown(&f); /* the manager takes its slice back first */
  for (int round = 0; round < 3; round++) {
    setup(&f, NULL);
    ASSERT_NULL(my_ways(&f));
    bool hit;
    ruda_handle_t b = reuse(&f, 2048, 0, &hit);
    ASSERT_FALSE(hit);
    ASSERT_NOT_NULL(my_ways(&f));
    ASSERT_UEQ(count_in(my_ways(&f)), 0);
    ruda_handle_release(&b);
    teardown(&f);
  }
}

/* Threads reserve (from their ways, the shared sets or the manager), write
 * their own pattern into the slice, check it, and release it, or hand it
 * to the next thread, which releases it on its own thread; meanwhile this
 * thread keeps asking the manager for usage, which takes every parked
 * slice back from every thread's ways. A slice handed to two owners at
 * once shows as a wrong pattern; a slice lost shows in the final usage. */
/* Worker i's mailbox: a memory id + 1 (0: empty) of handed[i], which the
 * previous worker left for it. */
static _Atomic(uint64_t) mailboxes[THREADS];
static ruda_handle_t handed[THREADS];

static void *churn(void *p) {
  worker_t *w = p;
  /* More sizes than ways, so that releases displace into the shared sets. */
  static const uint64_t sizes[] = {256,  512,  768,  4096, 1024, 1280, 1536, 1792, 2048, 2304,
                                   2560, 2816, 3072, 3328, 3584, 3840, 4352, 4608, 4864};
  enum { NSIZES = sizeof sizes / sizeof sizes[0] };
  for (uint32_t r = 0; r < ROUNDS && !w->bad; r++) {
    /* A handle the previous worker left: released here, on another thread
     * than the one that reserved it. */
    if (atomic_load(&mailboxes[w->id])) {
      ruda_handle_release(&handed[w->id]);
      atomic_store(&mailboxes[w->id], 0);
    }
    uint64_t size = sizes[(r * 7 + w->id) % NSIZES];
    ruda_handle_t h;
    if (!reuse_round(w->f, w->mm_lock, w->id, r, size, &h, &w->hits, &w->misses)) {
      w->bad = true;
      ruda_handle_release(&h);
      break;
    }
    uint32_t next = (w->id + 1) % THREADS;
    if (r % 5 == 0 && atomic_load(&mailboxes[next]) == 0) {
      handed[next] = h;
      atomic_store(&mailboxes[next], ruda_handle_memory_id(&h) + 1);
    } else {
      ruda_handle_release(&h);
    }
  }
  return NULL;
}

TEST(threads_reserve_release_and_hand_over_while_the_manager_takes_back) {
  fixture_t f;
  setup(&f, NULL);
  for (uint32_t i = 0; i < THREADS; i++) atomic_store(&mailboxes[i], 0);
  uint64_t hits = reuse_race(&f, churn);
  for (uint32_t i = 0; i < THREADS; i++)
    if (atomic_load(&mailboxes[i])) ruda_handle_release(&handed[i]);
  ASSERT_UGT(hits, ROUNDS); /* most from the ways */
  ASSERT_UGT(count_lists(&f), 0);
  expect_usage(f.mm, 0, 0);
  for (ruda__reuse_local_t *l = atomic_load(&f.rc->locals); l; l = atomic_load(&l->next))
    ASSERT_UEQ(count_in(l), 0);
  ASSERT_TRUE(shared_sets_empty(&f));
  teardown(&f);
}
