/* A persistent pool of worker threads for the CPU backend.
 *
 * ruda__thread_pool_run() runs a job on every participant at once: the
 * calling thread is participant 0, the pool's threads are 1..n-1. Threads
 * spin briefly after a job (so back-to-back launches cost no wake-up), then
 * sleep on a futex. On machines with few cores spinning helpers would steal
 * the core of the thread they wait for, so the spin count is configurable
 * (0: sleep at once).
 *
 * Not thread-safe: one thread at a time drives a pool (the one running the
 * device's queue: its worker, or a waiting caller, docs/cpu.md).
 */
#ifndef RUDA_CPU_THREAD_POOL_H
#define RUDA_CPU_THREAD_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "ruda/status.h"

typedef void (*ruda__pool_job_fn)(void *arg, uint32_t participant);

typedef struct ruda__thread_pool ruda__thread_pool_t;

/* `participants` >= 1 (1: no threads, jobs run on the caller). `spin` is the
 * number of polls an idle thread makes before sleeping. */
ruda_status_t ruda__thread_pool_create(uint32_t participants, uint32_t spin,
                                       ruda__thread_pool_t **out);
uint32_t ruda__thread_pool_size(const ruda__thread_pool_t *p);
/* Runs fn(arg, 0) on the caller while pool threads that are awake (or, with
 * `wake`, woken) join with fn(arg, i); returns when every participant that
 * joined is done. fn must split its work dynamically (a shared counter),
 * since any subset of participants may run it. */
void ruda__thread_pool_run(ruda__thread_pool_t *p, ruda__pool_job_fn fn, void *arg, bool wake);
void ruda__thread_pool_destroy(ruda__thread_pool_t *p);

#endif
