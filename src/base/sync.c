#include "base/sync.h"

#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ruda/export.h" /* RUDA__HOT */

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

uint64_t ruda__sync_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void ruda__sync_yield(void) { sched_yield(); }

RUDA__HOT
int ruda__sync_cpu(void) { return sched_getcpu(); }

void ruda__spin_init(ruda__spin_t *s, uint32_t min_ns, uint32_t max_ns) {
  s->min_ns = min_ns;
  s->max_ns = max_ns < min_ns ? min_ns : max_ns;
  atomic_init(&s->ns, s->max_ns);
}

void ruda__spin_adapt(ruda__spin_t *s, bool ok) {
  uint32_t b = atomic_load_explicit(&s->ns, memory_order_relaxed);
  uint32_t n = ok ? (b > s->max_ns / 2 ? s->max_ns : 2 * b) : (b / 2 < s->min_ns ? s->min_ns : b / 2);
  if (n != b) atomic_store_explicit(&s->ns, n, memory_order_relaxed);
}

/* The budget of waits that bring no ruda__spin_t of their own: most
 * device operations answer within microseconds. */
static ruda__spin_t default_spin = RUDA__SPIN_INIT(1000, 100000);

static bool completion_is_done(const void *c) {
  return atomic_load_explicit(&((ruda__completion_t *)c)->state, memory_order_acquire) == 1;
}

/* A yield that takes longer than this lost the core to another thread. */
#define YIELD_LOST_NS 50000

bool ruda__yield_until(bool (*done)(const void *arg), const void *arg, uint64_t max_ns) {
  uint64_t start = ruda__sync_now_ns(), t = start;
  while (!done(arg)) {
    sched_yield();
    uint64_t now = ruda__sync_now_ns();
    if (now - t > YIELD_LOST_NS || now - start > max_ns) return done(arg);
    t = now;
  }
  return true;
}

void ruda__completion_wait(ruda__completion_t *c) {
  if (ruda__spin_until(&default_spin, completion_is_done, c, NULL, NULL)) return;
  if (ruda__yield_until(completion_is_done, c, RUDA__YIELD_MAX_NS)) return;
  ruda__completion_sleep(c);
}

void ruda__completion_sleep(ruda__completion_t *c) {
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

RUDA__HOT
void ruda__mpsc_push(ruda__mpsc_t *q, ruda__mpsc_node_t *n) {
  atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
  ruda__mpsc_node_t *prev = atomic_exchange_explicit(&q->tail, n, memory_order_acq_rel);
  atomic_store_explicit(&prev->next, n, memory_order_release);
}

RUDA__HOT
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

/* ---- Asymmetric fences ---- */

static pthread_once_t fence_once = PTHREAD_ONCE_INIT;
static bool fence_ready;

static void fence_register(void) {
  long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  fence_ready = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
                syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

bool ruda__fence_heavy_ready(void) {
  pthread_once(&fence_once, fence_register);
  return fence_ready;
}

void ruda__fence_heavy(void) {
  atomic_thread_fence(memory_order_seq_cst);
  /* Registered by ruda__fence_heavy_ready, which every caller asked first. */
  syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  atomic_thread_fence(memory_order_seq_cst);
}
