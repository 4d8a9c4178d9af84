#include "base/sync.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

void ruda__futex_wait(atomic_uint *addr, uint32_t expected) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void ruda__futex_wake(atomic_uint *addr, int count) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

/* The signaller touches the completion only through one atomic exchange:
 * once a waiter sees 1 it may free the completion (it often lives on the
 * waiter's stack). The wake that may follow is a syscall on the address,
 * harmless if it was reused. */
void ruda__completion_signal(ruda__completion_t *c) {
  if (atomic_exchange_explicit(&c->state, 1, memory_order_acq_rel) == 2) {
    ruda__futex_wake(&c->state, INT_MAX);
  }
}

/* Polls before yielding: about the cost of a launch round trip, so a
 * waiter whose answer is microseconds away never makes a system call. */
#ifndef RUDA__WAIT_SPINS
#define RUDA__WAIT_SPINS 2000
#endif

void ruda__completion_wait(ruda__completion_t *c) {
  /* Spin briefly: most device operations answer within microseconds. */
  for (int i = 0; i < RUDA__WAIT_SPINS; i++) {
    if (atomic_load_explicit(&c->state, memory_order_acquire) == 1) return;
    ruda__cpu_relax();
  }
  /* Then yield: on a machine with few cores the thread we wait for may
   * need this one's core. */
  for (int i = 0; i < 2000; i++) {
    if (atomic_load_explicit(&c->state, memory_order_acquire) == 1) return;
    sched_yield();
  }
  for (;;) {
    unsigned v = atomic_load_explicit(&c->state, memory_order_acquire);
    if (v == 1) return;
    if (v == 0 && !atomic_compare_exchange_weak_explicit(&c->state, &v, 2,
                                                         memory_order_acq_rel,
                                                         memory_order_acquire)) {
      continue;
    }
    ruda__futex_wait(&c->state, 2);
  }
}

void ruda__mpsc_init(ruda__mpsc_t *q) {
  atomic_init(&q->stub.next, NULL);
  q->head = &q->stub;
  atomic_init(&q->tail, &q->stub);
}

void ruda__mpsc_push(ruda__mpsc_t *q, ruda__mpsc_node_t *n) {
  atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
  ruda__mpsc_node_t *prev = atomic_exchange_explicit(&q->tail, n, memory_order_acq_rel);
  atomic_store_explicit(&prev->next, n, memory_order_release);
}

ruda__mpsc_node_t *ruda__mpsc_pop(ruda__mpsc_t *q) {
  ruda__mpsc_node_t *head = q->head;
  ruda__mpsc_node_t *next = atomic_load_explicit(&head->next, memory_order_acquire);
  if (head == &q->stub) {
    if (!next) return NULL;
    q->head = next;
    head = next;
    next = atomic_load_explicit(&head->next, memory_order_acquire);
  }
  if (next) {
    q->head = next;
    return head;
  }
  ruda__mpsc_node_t *tail = atomic_load_explicit(&q->tail, memory_order_acquire);
  if (head != tail) return NULL; /* a producer is between exchange and link */
  ruda__mpsc_push(q, &q->stub);
  next = atomic_load_explicit(&head->next, memory_order_acquire);
  if (next) {
    q->head = next;
    return head;
  }
  return NULL;
}
