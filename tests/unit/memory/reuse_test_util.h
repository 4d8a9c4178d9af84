/* Shared by the reuse cache's tests (test_memory_reuse.c: the shared sets;
 * test_memory_reuse_local.c: the threads' own ways): a manager on stream 0
 * of a group with its own cache, a take from the cache, and the race
 * tests' workers and rounds. */
#ifndef RUDA_REUSE_TEST_UTIL_H
#define RUDA_REUSE_TEST_UTIL_H

#include <pthread.h>
#include <sched.h>

#include "memory/reuse_cache.h"
#include "memory_test_util.h"

static const ruda_device_id_t DEV = {0, 0};

typedef struct fixture {
  counting_storage_t cs;
  ruda__memory_manager_t *mm;
  ruda__memory_group_t group;
  ruda__memory_reuse_t *rc;
} fixture_t;

/* A cache (with threads' ways or without) and a manager of 128 MiB pages
 * (`cfg`: NULL for the defaults) joined to its group on stream 0. */
static inline void reuse_setup(fixture_t *f, const ruda__memory_config_t *cfg,
                               bool thread_ways) {
  f->rc = ruda__reuse_cache_new();
  ASSERT_NOT_NULL(f->rc);
  if (!thread_ways) ruda__reuse_cache_set_local(f->rc, false);
  f->mm = mk_manager(&f->cs, 128 * MIB, 256, 0, cfg);
  ASSERT_NOT_NULL(f->mm);
  ruda__memory_group_init(&f->group, DEV, f->rc);
  ruda__memory_manager_join(f->mm, &f->group, 0);
}

/* A configuration of one sliced pool of `page_size` pages whose slices up
 * to `max_slice_size` share a page. */
static inline ruda__memory_config_t one_sliced_pool(uint64_t page_size, uint64_t max_slice_size) {
  ruda__memory_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.configuration = RUDA_MEMORY_CUSTOM;
  cfg.num_custom = 1;
  cfg.custom[0] = (ruda__pool_options_t){.kind = RUDA_POOL_SLICED, .page_size = page_size,
                                         .max_slice_size = max_slice_size};
  return cfg;
}

/* A take from the cache, as ruda_client_empty makes it (*hit: whether it
 * found one; else the handle is empty). */
static inline ruda_handle_t reuse(fixture_t *f, uint64_t size, uint64_t stream, bool *hit) {
  ruda_handle_t h;
  memset(&h, 0, sizeof h);
  *hit = ruda__handle_reuse(f->rc, size, DEV, (ruda_stream_id_t){stream}, &h);
  return h;
}

/* A slice of `size` bytes reserved on stream 0, released into the cache
 * and taken back from it (asserted to be a hit). */
static inline ruda_handle_t cached_and_taken(fixture_t *f, uint64_t size) {
  ruda_handle_t a;
  ALLOC(f->mm, size, &a);
  ruda_handle_release(&a);
  bool hit;
  ruda_handle_t b = reuse(f, size, 0, &hit);
  ASSERT_TRUE(hit);
  return b;
}

/* A full cleanup takes every cached slice back and gives every page back
 * to the storage. */
static inline void expect_cleanup_frees_all(fixture_t *f) {
  ruda__memory_cleanup(f->mm, true);
  ASSERT_UEQ(ruda__memory_usage(f->mm).bytes_reserved, 0);
  ASSERT_UEQ(f->cs.outstanding, 0);
}

/* Neither another size nor another stream takes the slice of `size` cached
 * for stream 0. */
static inline void expect_no_hit_elsewhere(fixture_t *f, uint64_t size) {
  bool hit;
  reuse(f, size - 1, 0, &hit);
  ASSERT_FALSE(hit);
  reuse(f, size, 1, &hit);
  ASSERT_FALSE(hit);
}

/* `b`, taken from the cache, is the slice the released `stale` named, a
 * generation later: the same slot, bound, mutable and at `addr`; `stale` is
 * refused, though its slot is in use again. */
static inline void expect_next_generation(fixture_t *f, const ruda_handle_t *b,
                                          const ruda_handle_t *stale, uint64_t addr) {
  ASSERT_UEQ((uint32_t)ruda_handle_memory_id(b), (uint32_t)ruda_handle_memory_id(stale));
  ASSERT_UEQ(ruda_handle_memory_id(b) >> 32, (ruda_handle_memory_id(stale) >> 32) + 1);
  ASSERT_TRUE(ruda_handle_is_bound(b));
  ASSERT_TRUE(ruda_handle_can_mut(b));
  ASSERT_UEQ(addr_of(f->mm, b), addr);
  ASSERT_OK(ruda__handle_check(b, DEV, "write"));
  ASSERT_ERR_KIND(ruda__handle_check(stale, DEV, "write"), RUDA_ERR_INVALID_HANDLE);
  ASSERT_NULL(ruda__handle_memory(stale));
}

/* One round of a race test on stream 0: a handle of `size` from the cache
 * or, on a miss, from the manager (under `mm_lock`, which stands for the
 * device), its slice filled with a pattern of (`id`, `r`) and read back.
 * False when a step failed or the pattern came back wrong (a slice with
 * two owners); *h is the caller's to release either way. */
static inline bool reuse_round(fixture_t *f, pthread_mutex_t *mm_lock, uint32_t id, uint32_t r,
                               uint64_t size, ruda_handle_t *h, uint64_t *hits,
                               uint64_t *misses) {
  if (ruda__handle_reuse(f->rc, size, DEV, (ruda_stream_id_t){0}, h)) {
    (*hits)++;
  } else {
    (*misses)++;
    pthread_mutex_lock(mm_lock);
    ruda_status_t st = try_alloc(f->mm, size, h);
    pthread_mutex_unlock(mm_lock);
    if (st) {
      ruda_status_free(st);
      return false;
    }
  }
  pthread_mutex_lock(mm_lock);
  uint8_t *addr = (uint8_t *)(uintptr_t)addr_of(f->mm, h);
  pthread_mutex_unlock(mm_lock);
  if (!addr) return false;
  uint8_t tag = (uint8_t)(id * 64 + r % 64);
  memset(addr, tag, size);
  for (uint64_t i = 0; i < size; i += 61)
    if (addr[i] != tag) return false;
  return true;
}

/* The race tests: THREADS workers run ROUNDS rounds each (reuse_round)
 * while the test's thread, standing for the device thread, keeps asking
 * the manager for its usage, which takes every cached slice back. */
enum { THREADS = 3, ROUNDS = 20000 };

typedef struct worker {
  fixture_t *f;
  uint32_t id;
  uint64_t hits, misses;
  pthread_mutex_t *mm_lock;
  bool bad;
} worker_t;

/* Runs `churn` on THREADS workers against `f` and joins them; asserts
 * that none went bad and returns their hits. */
static inline uint64_t reuse_race(fixture_t *f, void *(*churn)(void *)) {
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  worker_t w[THREADS];
  pthread_t t[THREADS];
  for (uint32_t i = 0; i < THREADS; i++) {
    w[i] = (worker_t){f, i, 0, 0, &lock, false};
    ASSERT_EQ(pthread_create(&t[i], NULL, churn, &w[i]), 0);
  }
  for (int i = 0; i < 200; i++) {
    pthread_mutex_lock(&lock);
    (void)ruda__memory_usage(f->mm); /* takes every cached slice back */
    pthread_mutex_unlock(&lock);
    sched_yield();
  }
  uint64_t hits = 0;
  for (uint32_t i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    ASSERT_FALSE(w[i].bad);
    hits += w[i].hits;
  }
  return hits;
}

#endif
