/* Low-level synchronisation used by the device workers and the CPU thread
 * pool: a futex word wrapper, a one-shot completion, and an intrusive
 * multi-producer single-consumer queue (Vyukov's design). */
#ifndef RUDA_BASE_SYNC_H
#define RUDA_BASE_SYNC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A thread-local variable of the library. The initial-exec model reads it
 * at a fixed offset from the thread pointer, where the default model for a
 * shared library calls __tls_get_addr on every access; the library's few
 * such variables fit the space the C library keeps for it even when
 * libruda is loaded with dlopen. */
#if defined(__GNUC__) || defined(__clang__)
#define RUDA__THREAD_LOCAL _Thread_local __attribute__((tls_model("initial-exec")))
#else
#define RUDA__THREAD_LOCAL _Thread_local
#endif

static inline void ruda__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* CLOCK_MONOTONIC nanoseconds (a vDSO read, no system call). */
uint64_t ruda__sync_now_ns(void);
/* The CPU the calling thread runs on, -1 if unknown (glibc reads it from
 * the rseq area: a few nanoseconds). */
int ruda__sync_cpu(void);
void ruda__sync_yield(void);

/* ---- Adaptive polling ----
 *
 * A waiter that polls before it sleeps saves a system call and a wake-up
 * when its answer comes within the polls, and wastes its core when it does
 * not. Worse, with more runnable threads than cores the thread it waits
 * for may be waiting for a core, often the very core the poller holds (the
 * scheduler puts a woken thread on the core of the thread that woke it):
 * pausing then delays the answer by as long as it lasts.
 *
 * A ruda__spin_t is a budget of polling time shared by the waits of one
 * kind. It doubles (up to max_ns) after a wait answered within it and
 * halves (down to min_ns) after one that ran out, which includes a wait
 * during which the poller lost its core (the budget is wall-clock time,
 * not a number of polls). Where polls keep failing, waits thus sleep
 * almost at once; on a quiet machine, where they succeed, the budget stays
 * at its maximum. Updates are relaxed: concurrent waiters may lose one,
 * which only slows the adaptation. */
typedef struct ruda__spin {
  atomic_uint ns; /* the budget now */
  uint32_t min_ns, max_ns;
} ruda__spin_t;

#define RUDA__SPIN_INIT(min_ns, max_ns) {(max_ns), (min_ns), (max_ns)}
void ruda__spin_init(ruda__spin_t *s, uint32_t min_ns, uint32_t max_ns);
static inline uint32_t ruda__spin_budget(ruda__spin_t *s) {
  return atomic_load_explicit(&s->ns, memory_order_relaxed);
}
/* Records how a wait went: `ok` when it was answered within the budget. */
void ruda__spin_adapt(ruda__spin_t *s, bool ok);

/* Stores `cpu` in *where (if any) unless it is there already: the word
 * shares a cache line with what the other side polls and updates. */
static inline void ruda__sync_publish_cpu(atomic_int *where, int cpu) {
  if (where && atomic_load_explicit(where, memory_order_relaxed) != cpu) {
    atomic_store_explicit(where, cpu, memory_order_relaxed);
  }
}

/* Polls until done(arg) is true, for at most s's budget (adapting it);
 * true when done returned true. Time spent inside done() itself (which
 * may do the work it waits for) is not counted against the budget.
 *
 * `self_cpu` (optional) is where the poller publishes the CPU it runs on,
 * `partner_cpu` (optional) where the thread it waits for publishes its
 * own. While both name the same CPU, the partner cannot be running (the
 * poller holds that core): the poller then yields instead of pausing. */
static inline bool ruda__spin_until(ruda__spin_t *s, bool (*done)(const void *arg),
                                    const void *arg, atomic_int *self_cpu,
                                    const atomic_int *partner_cpu) {
  if (done(arg)) return true;
  uint32_t budget = ruda__spin_budget(s);
  uint64_t start = ruda__sync_now_ns(), now = start;
  for (;;) {
    int cpu = ruda__sync_cpu();
    ruda__sync_publish_cpu(self_cpu, cpu);
    bool answered = false;
    if (partner_cpu && cpu >= 0 &&
        atomic_load_explicit(partner_cpu, memory_order_relaxed) == cpu) {
      ruda__sync_yield();
      answered = done(arg);
    } else {
      /* 16 polls between clock reads: a pause costs 10 to 150 cycles,
       * depending on the processor. */
      for (int i = 0; i < 16 && !answered; i++) {
        ruda__cpu_relax();
        answered = done(arg);
      }
    }
    if (answered) {
      ruda__spin_adapt(s, now - start <= budget);
      return true;
    }
    now = ruda__sync_now_ns();
    if (now - start > budget) {
      ruda__spin_adapt(s, false);
      return false;
    }
  }
}

/* Yields while done(arg) is false, for at most max_ns, as long as the
 * yields return at once (no other thread wanted the core); true when
 * done. A waiter whose polls ran out keeps a quiet machine's latency this
 * way without a sleep, and stops at the first yield that lost the core
 * (taken for a scheduler slice by another thread). */
bool ruda__yield_until(bool (*done)(const void *arg), const void *arg, uint64_t max_ns);
/* The yield phase of the waits here and in the device workers. */
#define RUDA__YIELD_MAX_NS 2000000u

/* ---- Asymmetric fences ----
 *
 * Two threads that each store a flag and then load the other's (Dekker's
 * pattern) need a full fence between the store and the load on both
 * sides, which costs as much as an atomic read-modify-write. When one
 * side runs millions of times a second and the other rarely, the fast
 * side may use ruda__fence_light (it only stops the compiler) provided
 * the slow side calls ruda__fence_heavy, which makes every thread of the
 * process run a full fence (Linux membarrier, private expedited): either
 * the fast side's store is visible to the slow side's load after the
 * heavy fence, or the fast side's load sees the slow side's store.
 * ruda__fence_heavy_ready registers the process once and says whether the
 * heavy fence exists here; where it does not, callers must not rely on
 * the light one. */
bool ruda__fence_heavy_ready(void);
void ruda__fence_heavy(void);
static inline void ruda__fence_light(void) { atomic_signal_fence(memory_order_seq_cst); }

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
/* Polls briefly (an adaptive budget of up to 100 us), yields while that
 * is cheap (ruda__yield_until, up to 2 ms), then sleeps until signalled. */
void ruda__completion_wait(ruda__completion_t *c);
/* Sleeps until signalled, without polling. */
void ruda__completion_sleep(ruda__completion_t *c);
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
