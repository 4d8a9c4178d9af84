/* A persistent pool of worker threads for the CPU backend.
 *
 * ruda__thread_pool_run() runs a job on every participant at once: the
 * calling thread is participant 0, the pool's threads are 1..n-1. Threads
 * spin briefly after a job (so back-to-back launches cost no wake-up), then
 * sleep on a futex.
 *
 * Not thread-safe: one thread (the device worker) drives a pool.
 */
#ifndef RUDA_CPU_THREAD_POOL_H
#define RUDA_CPU_THREAD_POOL_H

#include <stdint.h>

#include "ruda/status.h"

typedef void (*ruda__pool_job_fn)(void *arg, uint32_t participant);

typedef struct ruda__thread_pool ruda__thread_pool_t;

/* `participants` >= 1 (1: no threads, jobs run on the caller). `spin` is the
 * number of polls an idle thread makes before sleeping. */
ruda_status_t ruda__thread_pool_create(uint32_t participants, uint32_t spin,
                                       ruda__thread_pool_t **out);
uint32_t ruda__thread_pool_size(const ruda__thread_pool_t *p);
/* Runs fn(arg, i) for every participant i and returns when all are done. */
void ruda__thread_pool_run(ruda__thread_pool_t *p, ruda__pool_job_fn fn, void *arg);
void ruda__thread_pool_destroy(ruda__thread_pool_t *p);

#endif
