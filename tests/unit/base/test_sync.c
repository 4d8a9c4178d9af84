/* The synchronisation primitives of src/base/sync.h: the one-shot
 * completion (signalled before and after the waiter sleeps, several
 * waiters), the MPSC queue (FIFO per producer, nothing lost or duplicated
 * under several producers, a half-linked push reported as empty and found
 * later) and the futex wrapper. Run under TSan in CI. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/sync.h"
#include "test.h"

static void sleep_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

TEST(completion_signalled_before_the_wait_returns_at_once) {
  ruda__completion_t c;
  ruda__completion_init(&c);
  ASSERT_FALSE(ruda__completion_done(&c));
  ruda__completion_signal(&c);
  ASSERT_TRUE(ruda__completion_done(&c));
  ruda__completion_wait(&c);
  ruda__completion_wait(&c); /* stays done */
  ASSERT_TRUE(ruda__completion_done(&c));
}

typedef struct waiter_arg {
  ruda__completion_t *c;
  atomic_int *woken;
} waiter_arg_t;

static void *waiter(void *p) {
  waiter_arg_t *a = p;
  ruda__completion_wait(a->c);
  atomic_fetch_add(a->woken, 1);
  return NULL;
}

TEST(completion_wakes_every_sleeping_waiter) {
  enum { N = 4 };
  for (int round = 0; round < 20; round++) {
    ruda__completion_t c;
    ruda__completion_init(&c);
    atomic_int woken = 0;
    waiter_arg_t a = {&c, &woken};
    pthread_t t[N];
    for (int i = 0; i < N; i++) ASSERT_EQ(pthread_create(&t[i], NULL, waiter, &a), 0);
    /* Let some of them reach the futex; the others race the signal. */
    if (round % 2) sleep_us(2000);
    ASSERT_EQ(atomic_load(&woken), 0);
    ruda__completion_signal(&c);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    ASSERT_EQ(atomic_load(&woken), N);
  }
}

typedef struct item {
  ruda__mpsc_node_t node; /* first member */
  uint32_t producer, seq;
} item_t;

TEST(mpsc_single_thread_is_fifo_and_reports_empty) {
  ruda__mpsc_t q;
  ruda__mpsc_init(&q);
  ASSERT_TRUE(ruda__mpsc_pop(&q) == NULL);
  item_t items[5];
  for (uint32_t i = 0; i < 5; i++) {
    items[i].seq = i;
    ruda__mpsc_push(&q, &items[i].node);
  }
  for (uint32_t i = 0; i < 5; i++) {
    item_t *it = (item_t *)ruda__mpsc_pop(&q);
    ASSERT_NOT_NULL(it);
    ASSERT_EQ(it->seq, i);
  }
  ASSERT_TRUE(ruda__mpsc_pop(&q) == NULL);
  /* Reusable after running empty (the stub goes back in). */
  ruda__mpsc_push(&q, &items[2].node);
  ASSERT_TRUE(ruda__mpsc_pop(&q) == &items[2].node);
  ASSERT_TRUE(ruda__mpsc_pop(&q) == NULL);
}

enum { PRODUCERS = 3, PER_PRODUCER = 20000 };

typedef struct producer_arg {
  ruda__mpsc_t *q;
  item_t *items;
  uint32_t id;
} producer_arg_t;

static void *producer(void *p) {
  producer_arg_t *a = p;
  for (uint32_t i = 0; i < PER_PRODUCER; i++) {
    a->items[i].producer = a->id;
    a->items[i].seq = i;
    ruda__mpsc_push(a->q, &a->items[i].node);
  }
  return NULL;
}

TEST(mpsc_several_producers_lose_nothing_and_keep_their_order) {
  ruda__mpsc_t q;
  ruda__mpsc_init(&q);
  item_t *items = calloc((size_t)PRODUCERS * PER_PRODUCER, sizeof *items);
  ASSERT_NOT_NULL(items);
  producer_arg_t args[PRODUCERS];
  pthread_t t[PRODUCERS];
  for (uint32_t p = 0; p < PRODUCERS; p++) {
    args[p] = (producer_arg_t){&q, items + (size_t)p * PER_PRODUCER, p};
    ASSERT_EQ(pthread_create(&t[p], NULL, producer, &args[p]), 0);
  }
  uint32_t next[PRODUCERS] = {0};
  uint32_t total = 0, out_of_order = 0;
  /* Pop concurrently with the pushes; NULL only means "not yet". */
  while (total < PRODUCERS * PER_PRODUCER) {
    item_t *it = (item_t *)ruda__mpsc_pop(&q);
    if (!it) {
      ruda__cpu_relax();
      continue;
    }
    if (it->producer >= PRODUCERS || it->seq != next[it->producer]) out_of_order++;
    else next[it->producer]++;
    total++;
  }
  for (uint32_t p = 0; p < PRODUCERS; p++) pthread_join(t[p], NULL);
  ASSERT_EQ(out_of_order, 0);
  for (uint32_t p = 0; p < PRODUCERS; p++) ASSERT_EQ(next[p], PER_PRODUCER);
  ASSERT_TRUE(ruda__mpsc_pop(&q) == NULL);
  free(items);
}

TEST(mpsc_half_linked_push_is_found_once_linked) {
  /* A producer that has swapped the tail but not linked its node yet: pop
   * must report "empty for now", and find the node once it is linked. */
  ruda__mpsc_t q;
  ruda__mpsc_init(&q);
  item_t a = {.seq = 1}, b = {.seq = 2};
  ruda__mpsc_push(&q, &a.node);
  atomic_store(&b.node.next, NULL);
  ruda__mpsc_node_t *prev = atomic_exchange(&q.tail, &b.node); /* half of a push */
  ASSERT_TRUE(prev == &a.node);
  ASSERT_TRUE(ruda__mpsc_pop(&q) == NULL);
  atomic_store(&prev->next, &b.node); /* the other half */
  ASSERT_TRUE(ruda__mpsc_pop(&q) == &a.node);
  ASSERT_TRUE(ruda__mpsc_pop(&q) == &b.node);
  ASSERT_TRUE(ruda__mpsc_pop(&q) == NULL);
}

static atomic_uint g_word;

static void *futex_waker(void *p) {
  (void)p;
  sleep_us(2000);
  atomic_store(&g_word, 1);
  ruda__futex_wake(&g_word, 1);
  return NULL;
}

TEST(futex_wait_returns_when_the_word_changes) {
  atomic_store(&g_word, 0);
  /* A different value: returns at once. */
  ruda__futex_wait(&g_word, 5);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, futex_waker, NULL), 0);
  while (atomic_load(&g_word) == 0) ruda__futex_wait(&g_word, 0);
  pthread_join(t, NULL);
  ASSERT_EQ(atomic_load(&g_word), 1);
}

/* ---- Adaptive polling ---- */

TEST(spin_budget_doubles_on_success_and_halves_on_failure_within_bounds) {
  ruda__spin_t s;
  ruda__spin_init(&s, 1000, 8000);
  ASSERT_UEQ(ruda__spin_budget(&s), 8000); /* starts at the maximum */
  ruda__spin_adapt(&s, true);
  ASSERT_UEQ(ruda__spin_budget(&s), 8000);
  ruda__spin_adapt(&s, false);
  ASSERT_UEQ(ruda__spin_budget(&s), 4000);
  for (int i = 0; i < 10; i++) ruda__spin_adapt(&s, false);
  ASSERT_UEQ(ruda__spin_budget(&s), 1000);
  ruda__spin_adapt(&s, true);
  ASSERT_UEQ(ruda__spin_budget(&s), 2000);
  for (int i = 0; i < 10; i++) ruda__spin_adapt(&s, true);
  ASSERT_UEQ(ruda__spin_budget(&s), 8000);
  ruda__spin_t fixed = RUDA__SPIN_INIT(5000, 5000);
  ruda__spin_adapt(&fixed, false);
  ASSERT_UEQ(ruda__spin_budget(&fixed), 5000);
}

static bool flag_set(const void *p) { return atomic_load((atomic_bool *)p); }

TEST(spin_until_answers_at_once_or_gives_up_after_its_budget) {
  ruda__spin_t s;
  ruda__spin_init(&s, 1000, 200000);
  atomic_bool yes = true, no = false;
  ASSERT_TRUE(ruda__spin_until(&s, flag_set, &yes, NULL, NULL));
  ASSERT_UEQ(ruda__spin_budget(&s), 200000);
  uint64_t t0 = ruda__sync_now_ns();
  ASSERT_FALSE(ruda__spin_until(&s, flag_set, &no, NULL, NULL));
  ASSERT_UGE(ruda__sync_now_ns() - t0, 200000u);
  ASSERT_UEQ(ruda__spin_budget(&s), 100000); /* a failure halves it */
  /* A partner on the poller's own CPU: the poller yields, and still gives
   * up after its budget. */
  atomic_int self = -1, partner = ruda__sync_cpu();
  ASSERT_FALSE(ruda__spin_until(&s, flag_set, &no, &self, &partner));
  ASSERT_TRUE(atomic_load(&self) >= -1);
}

static atomic_bool g_flag;
static void *set_flag_later(void *arg) {
  (void)arg;
  sleep_us(2000);
  atomic_store(&g_flag, true);
  return NULL;
}

TEST(spin_and_yield_see_an_answer_from_another_thread) {
  ruda__spin_t s;
  ruda__spin_init(&s, 1000, 100000000); /* 100 ms */
  atomic_store(&g_flag, false);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, set_flag_later, NULL), 0);
  ASSERT_TRUE(ruda__spin_until(&s, flag_set, &g_flag, NULL, NULL));
  pthread_join(t, NULL);
  /* yield_until: answered, or it stops (at its limit or at a yield that
   * lost the core); it never returns true without the answer. */
  atomic_store(&g_flag, false);
  ASSERT_EQ(pthread_create(&t, NULL, set_flag_later, NULL), 0);
  bool answered = ruda__yield_until(flag_set, &g_flag, 1000000000ull);
  ASSERT_TRUE(!answered || atomic_load(&g_flag));
  pthread_join(t, NULL);
  atomic_bool no = false;
  uint64_t t0 = ruda__sync_now_ns();
  ASSERT_FALSE(ruda__yield_until(flag_set, &no, 1000000));
  ASSERT_ULT(ruda__sync_now_ns() - t0, 1000000000u);
}

static void *signal_later(void *p) {
  sleep_us(3000);
  ruda__completion_signal(p);
  return NULL;
}

TEST(completion_sleep_returns_once_signalled) {
  ruda__completion_t c;
  ruda__completion_init(&c);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, signal_later, &c), 0);
  ruda__completion_sleep(&c);
  ASSERT_TRUE(ruda__completion_done(&c));
  pthread_join(t, NULL);
  ruda__completion_sleep(&c); /* stays done */
}
