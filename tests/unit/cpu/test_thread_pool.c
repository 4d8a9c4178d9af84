/* The CPU backend's thread pool (src/backends/cpu/thread_pool.h): every
 * participant index is used at most once per job, the caller is always
 * participant 0, work split through a shared counter is done exactly once
 * whichever participants join, jobs run back to back with and without
 * waking the pool, and a pool of one runs everything on the caller. */
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "backends/cpu/thread_pool.h"
#include "test.h"

enum { MAX_PARTICIPANTS = 8, ITEMS = 100000 };

typedef struct job {
  atomic_uint next;  /* the shared counter that splits the work */
  atomic_uint *done; /* ITEMS entries, each must end at 1 */
  atomic_uint joined[MAX_PARTICIPANTS];
  atomic_uint bad_participant;
  pthread_t caller;
  atomic_uint caller_not_zero;
} job_t;

static void run_items(void *arg, uint32_t participant) {
  job_t *j = arg;
  if (participant >= MAX_PARTICIPANTS) {
    atomic_fetch_add(&j->bad_participant, 1);
    return;
  }
  atomic_fetch_add(&j->joined[participant], 1);
  if ((participant == 0) != pthread_equal(pthread_self(), j->caller)) {
    atomic_fetch_add(&j->caller_not_zero, 1);
  }
  for (;;) {
    uint32_t start = atomic_fetch_add(&j->next, 64);
    if (start >= ITEMS) break;
    uint32_t end = start + 64 < ITEMS ? start + 64 : ITEMS;
    for (uint32_t i = start; i < end; i++) atomic_fetch_add(&j->done[i], 1);
  }
}

static void run_and_check(ruda__thread_pool_t *p, bool wake) {
  job_t j;
  memset(&j, 0, sizeof j);
  j.done = calloc(ITEMS, sizeof *j.done);
  ASSERT_NOT_NULL(j.done);
  j.caller = pthread_self();
  ruda__thread_pool_run(p, run_items, &j, wake);
  uint32_t wrong = 0;
  for (uint32_t i = 0; i < ITEMS; i++) wrong += atomic_load(&j.done[i]) != 1;
  free(j.done);
  ASSERT_EQ(wrong, 0);
  ASSERT_EQ(atomic_load(&j.bad_participant), 0);
  ASSERT_EQ(atomic_load(&j.caller_not_zero), 0);
  ASSERT_EQ(atomic_load(&j.joined[0]), 1);
  uint32_t n = ruda__thread_pool_size(p);
  for (uint32_t i = 1; i < MAX_PARTICIPANTS; i++) {
    ASSERT_TRUE(atomic_load(&j.joined[i]) <= (i < n ? 1u : 0u));
  }
}

TEST(pool_of_one_runs_on_the_caller) {
  ruda__thread_pool_t *p = NULL;
  ASSERT_OK(ruda__thread_pool_create(1, 100, &p));
  ASSERT_EQ(ruda__thread_pool_size(p), 1);
  run_and_check(p, true);
  run_and_check(p, false);
  ruda__thread_pool_destroy(p);
}

TEST(every_item_done_once_with_and_without_waking) {
  static const uint32_t spins[] = {0, 1000};
  for (size_t s = 0; s < sizeof spins / sizeof spins[0]; s++) {
    ruda__thread_pool_t *p = NULL;
    ASSERT_OK(ruda__thread_pool_create(4, spins[s], &p));
    ASSERT_EQ(ruda__thread_pool_size(p), 4);
    for (int round = 0; round < 50; round++) run_and_check(p, round % 3 != 0);
    ruda__thread_pool_destroy(p);
  }
}

typedef struct count_job {
  atomic_uint participants_seen;
} count_job_t;

/* The caller's part waits (up to 100 ms) for a second participant, so that
 * woken threads have the time to arrive on a loaded machine. */
static void count_participants(void *arg, uint32_t participant) {
  count_job_t *j = arg;
  atomic_fetch_add(&j->participants_seen, 1);
  if (participant != 0) return;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    sched_yield();
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (atomic_load(&j->participants_seen) < 2 &&
           (now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) < 100000000L);
}

TEST(woken_jobs_reach_the_pool_threads) {
  /* With wake, the pool's threads take part: over many jobs more than one
   * participant must have run (on any machine, even a single core). */
  ruda__thread_pool_t *p = NULL;
  ASSERT_OK(ruda__thread_pool_create(3, 0, &p));
  uint32_t most = 0;
  for (int round = 0; round < 20 && most < 2; round++) {
    count_job_t j = {0};
    ruda__thread_pool_run(p, count_participants, &j, true);
    uint32_t n = atomic_load(&j.participants_seen);
    ASSERT_TRUE(n >= 1 && n <= 3);
    if (n > most) most = n;
  }
  ASSERT_TRUE(most >= 2);
  ruda__thread_pool_destroy(p);
}

TEST(destroy_right_after_create_and_after_jobs) {
  for (int i = 0; i < 20; i++) {
    ruda__thread_pool_t *p = NULL;
    ASSERT_OK(ruda__thread_pool_create(4, (uint32_t)(i % 2) * 500, &p));
    if (i % 2) run_and_check(p, true);
    ruda__thread_pool_destroy(p);
  }
}
