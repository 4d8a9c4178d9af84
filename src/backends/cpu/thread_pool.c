#include "backends/cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "client/sync_primitives.h"

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
  atomic_uint pending;
  ruda__pool_job_fn fn;
  void *arg;
  bool stop; /* read after a generation change */
};

static void *helper_main(void *arg) {
  helper_t *h = arg;
  ruda__thread_pool_t *p = h->pool;
  unsigned seen = 0;
  for (;;) {
    unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
    for (uint32_t i = 0; g == seen && i < p->spin; i++) {
      ruda__cpu_relax();
      if ((i & 1023) == 1023) sched_yield();
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
    if (p->stop) break;
    p->fn(p->arg, h->index);
    atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel);
  }
  return NULL;
}

static void publish(ruda__thread_pool_t *p) {
  atomic_fetch_add_explicit(&p->generation, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&p->sleepers, memory_order_seq_cst)) {
    ruda__futex_wake(&p->generation, (int)p->participants);
  }
}

ruda_status_t ruda__thread_pool_create(uint32_t participants, uint32_t spin,
                                       ruda__thread_pool_t **out) {
  *out = NULL;
  if (participants == 0) participants = 1;
  ruda__thread_pool_t *p = calloc(1, sizeof *p);
  if (!p) return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating the CPU pool");
  p->participants = participants;
  p->spin = spin;
  if (participants > 1) {
    p->helpers = calloc(participants - 1, sizeof *p->helpers);
    if (!p->helpers) {
      free(p);
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

uint32_t ruda__thread_pool_size(const ruda__thread_pool_t *p) { return p->participants; }

void ruda__thread_pool_run(ruda__thread_pool_t *p, ruda__pool_job_fn fn, void *arg) {
  if (p->participants == 1) {
    fn(arg, 0);
    return;
  }
  p->fn = fn;
  p->arg = arg;
  atomic_store_explicit(&p->pending, p->participants - 1, memory_order_relaxed);
  publish(p);
  fn(arg, 0);
  for (uint32_t i = 0; atomic_load_explicit(&p->pending, memory_order_acquire); i++) {
    ruda__cpu_relax();
    if ((i & 255) == 255) sched_yield();
  }
}

void ruda__thread_pool_destroy(ruda__thread_pool_t *p) {
  if (!p) return;
  if (p->participants > 1) {
    p->stop = true;
    publish(p);
    for (uint32_t i = 1; i < p->participants; i++) pthread_join(p->helpers[i - 1].thread, NULL);
  }
  free(p->helpers);
  free(p);
}
