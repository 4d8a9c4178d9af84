#include "backends/cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/alloc.h"
#include "base/sync.h"

/* Jobs are "join if you can": the driving thread publishes the job and
 * starts working on it at once; helpers that are awake (spinning) or woken
 * join and take chunks through the job's own counter. The driver never
 * waits for a helper to start, only for those that joined to finish, so a
 * small job costs no wake-up and a sleeping helper costs nothing.
 *
 * Lifetime: `current` points at the job (on the driver's stack) while it
 * runs. A helper announces itself in `active` before reading `current`;
 * the driver clears `current` before waiting for `active` to drain. With
 * both sides sequentially consistent, a helper either is waited for or sees
 * no job. */

typedef struct job {
  ruda__pool_job_fn fn;
  void *arg;
} job_t;

typedef struct helper {
  ruda__thread_pool_t *pool;
  uint32_t index;
  pthread_t thread;
} helper_t;

struct ruda__thread_pool {
  uint32_t participants;
  uint32_t spin;
  helper_t *helpers;
  atomic_uint generation;
  atomic_uint sleepers;
  atomic_int active;
  _Atomic(job_t *) current;
  atomic_bool stop;
};

static void *helper_main(void *arg) {
  helper_t *h = arg;
  ruda__thread_pool_t *p = h->pool;
  /* 0, not a load: the pool is calloc()ed and a job or a destroy may bump
   * the generation before this thread first runs. */
  unsigned seen = 0;
  for (;;) {
    unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
    for (uint32_t i = 0; g == seen && i < p->spin; i++) {
      ruda__cpu_relax();
      g = atomic_load_explicit(&p->generation, memory_order_acquire);
    }
    if (g == seen) {
      atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_seq_cst);
      if (atomic_load_explicit(&p->generation, memory_order_seq_cst) == seen) {
        ruda__futex_wait(&p->generation, seen);
      }
      atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_seq_cst);
      continue;
    }
    seen = g;
    if (atomic_load(&p->stop)) break;
    atomic_fetch_add_explicit(&p->active, 1, memory_order_seq_cst);
    job_t *j = atomic_load_explicit(&p->current, memory_order_seq_cst);
    if (j) j->fn(j->arg, h->index);
    atomic_fetch_sub_explicit(&p->active, 1, memory_order_release);
  }
  return NULL;
}

ruda_status_t ruda__thread_pool_create(uint32_t participants, uint32_t spin,
                                       ruda__thread_pool_t **out) {
  *out = NULL;
  if (participants == 0) participants = 1;
  ruda__thread_pool_t *p = ruda__calloc(1, sizeof *p);
  if (!p) return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating the CPU pool");
  p->participants = participants;
  p->spin = spin;
  if (participants > 1) {
    p->helpers = ruda__calloc(participants - 1, sizeof *p->helpers);
    if (!p->helpers) {
      ruda__free(p);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating the CPU pool");
    }
  }
  for (uint32_t i = 1; i < participants; i++) {
    helper_t *h = &p->helpers[i - 1];
    h->pool = p;
    h->index = i;
    if (pthread_create(&h->thread, NULL, helper_main, h) != 0) {
      p->participants = i; /* destroy joins the ones started */
      ruda__thread_pool_destroy(p);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "cannot start CPU worker thread %u", i);
    }
  }
  *out = p;
  return NULL;
}

RUDA__HOT
uint32_t ruda__thread_pool_size(const ruda__thread_pool_t *p) { return p->participants; }

void ruda__thread_pool_run(ruda__thread_pool_t *p, ruda__pool_job_fn fn, void *arg,
                           bool wake) {
  /* Nobody can join when every helper sleeps and none is to be woken:
   * then announcing the job would only cost fences. */
  if (p->participants == 1 ||
      (!wake && atomic_load_explicit(&p->sleepers, memory_order_relaxed) == p->participants - 1)) {
    fn(arg, 0);
    return;
  }
  job_t j = {fn, arg};
  atomic_store_explicit(&p->current, &j, memory_order_seq_cst);
  atomic_fetch_add_explicit(&p->generation, 1, memory_order_seq_cst);
  if (wake && atomic_load_explicit(&p->sleepers, memory_order_seq_cst)) {
    ruda__futex_wake(&p->generation, (int)p->participants);
  }
  fn(arg, 0);
  atomic_store_explicit(&p->current, NULL, memory_order_seq_cst);
  for (uint32_t i = 0; atomic_load_explicit(&p->active, memory_order_seq_cst); i++) {
    ruda__cpu_relax();
    if ((i & 255) == 255) sched_yield();
  }
}

void ruda__thread_pool_destroy(ruda__thread_pool_t *p) {
  if (!p) return;
  if (p->participants > 1) {
    atomic_store(&p->stop, true);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_seq_cst);
    ruda__futex_wake(&p->generation, (int)p->participants);
    for (uint32_t i = 1; i < p->participants; i++) pthread_join(p->helpers[i - 1].thread, NULL);
  }
  ruda__free(p->helpers);
  ruda__free(p);
}
