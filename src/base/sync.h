/* Low-level synchronisation used by the device workers and the CPU thread
 * pool: a futex word wrapper, a one-shot completion, and an intrusive
 * multi-producer single-consumer queue (Vyukov's design). */
#ifndef RUDA_BASE_SYNC_H
#define RUDA_BASE_SYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

static inline void ruda__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Blocks while *addr == expected (spurious wake-ups possible). */
void ruda__futex_wait(atomic_uint *addr, uint32_t expected);
void ruda__futex_wake(atomic_uint *addr, int count);

/* One-shot completion: signalled once by the producer, awaited by one or
 * more threads. Caller-owned storage. */
typedef struct ruda__completion {
  atomic_uint state; /* 0 pending, 1 done, 2 pending with a sleeper */
} ruda__completion_t;

static inline void ruda__completion_init(ruda__completion_t *c) {
  atomic_init(&c->state, 0);
}
void ruda__completion_signal(ruda__completion_t *c);
void ruda__completion_wait(ruda__completion_t *c);
static inline bool ruda__completion_done(ruda__completion_t *c) {
  return atomic_load_explicit(&c->state, memory_order_acquire) == 1;
}

/* Intrusive MPSC queue. push() from any thread; pop() from one thread. */
typedef struct ruda__mpsc_node {
  _Atomic(struct ruda__mpsc_node *) next;
} ruda__mpsc_node_t;

typedef struct ruda__mpsc {
  _Atomic(ruda__mpsc_node_t *) tail;
  ruda__mpsc_node_t *head;
  ruda__mpsc_node_t stub;
} ruda__mpsc_t;

void ruda__mpsc_init(ruda__mpsc_t *q);
void ruda__mpsc_push(ruda__mpsc_t *q, ruda__mpsc_node_t *n);
/* NULL when empty, or when a push is half done (retry later). */
ruda__mpsc_node_t *ruda__mpsc_pop(ruda__mpsc_t *q);

#endif
