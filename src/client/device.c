/* The device registry and the per-device worker thread. */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/sync.h"
#include "client/device.h"
#include "ruda/config.h"
#include "server/kernel_scope.h"
#include "server/trace.h"
#include "types/device_names.h"

#define RUDA_MAX_DEVICES_PER_TYPE 64

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* Devices by (position of their backend in ruda__backend_list, index). */
static ruda__device_t *registry[RUDA__MAX_BACKENDS][RUDA_MAX_DEVICES_PER_TYPE];
static bool atexit_registered;
static RUDA__THREAD_LOCAL ruda__device_t *tls_worker;

/* The calling thread's launch pace (device.h). */
RUDA__THREAD_LOCAL ruda__launch_pace_t ruda__tls_launch_pace;

bool ruda__device_on_worker(const ruda__device_t *d) { return tls_worker == d; }

/* A device that never ran (its worker joined or never started). */
static void device_free(ruda__device_t *d) {
  pthread_mutex_destroy(&d->op_cache_lock);
  pthread_mutex_destroy(&d->drain_lock);
  pthread_mutex_destroy(&d->recording_lock);
  ruda__device_cancel_deinit(d);
  ruda__reuse_cache_free(d->memory_reuse);
  ruda__free(d);
}

/* Polling budgets (adaptive, base/sync.h), in nanoseconds. The worker
 * polls an empty queue for up to 500 us before it sleeps, so a burst of
 * launches never pays for a wake-up; a caller polls for its answer for up
 * to 100 us, about a hundred round trips. Both shrink to 1 us while their
 * polls keep failing. */
enum {
  IDLE_SPIN_MIN_NS = 1000,
  IDLE_SPIN_MAX_NS = 500000,
  WAIT_SPIN_MIN_NS = 1000,
  WAIT_SPIN_MAX_NS = 100000,
};

/* The worker's poll for a caller that runs the queue, before it sleeps
 * until that caller lets go: half a microsecond. Polling longer reads, at
 * every round, the line the caller writes as it runs each op, and those
 * misses cost the caller more than the wake-up its unlock then owes the
 * worker: on the H200 machine an empty kernel's launch + sync took about
 * 1 us longer with 5 us of polling. */
static ruda__spin_t lock_spin = RUDA__SPIN_INIT(500, 500);

static bool work_queued(const void *p) {
  const ruda__device_t *d = p;
  return atomic_load_explicit(&d->submitted, memory_order_seq_cst) !=
         atomic_load_explicit(&d->executed, memory_order_seq_cst);
}

/* The worker leaves work that appears while it is idle to its submitter
 * for a while (the grace): a caller that waits for it at once (a launch,
 * then a sync) runs it on its own thread, which saves the hand-off to
 * this thread and back (about 1 to 2 us), and the worker stays off the
 * lines that caller writes meanwhile. Work nobody waits for starts that
 * much later, so the grace adapts per device (d->grace_spin): it doubles,
 * up to 10 us (a GPU launch takes 4 to 8 us on the H200 machine, and the
 * caller should be done with it before the worker looks), each time a
 * caller took the work, and halves, down to 1 us, each time the worker
 * had to. */
enum { GRACE_MIN_NS = 1000, GRACE_MAX_NS = 10000 };

static bool never(const void *p) {
  (void)p;
  return false;
}

/* The worker's poll of an empty queue reads one word, which a submitter
 * writes once per op. */
typedef struct idle_poll {
  const ruda__device_t *d;
  unsigned long submitted; /* when the queue was found empty */
} idle_poll_t;

static bool submitted_since(const void *p) {
  const idle_poll_t *w = p;
  return atomic_load_explicit(&w->d->submitted, memory_order_acquire) != w->submitted;
}

static bool queue_free_or_empty(const void *p) {
  const ruda__device_t *d = p;
  return atomic_load_explicit(&d->running, memory_order_relaxed) == 0 || !work_queued(d);
}

/* ---- Who runs the queue ----
 *
 * Ops are popped and run by the thread holding `running`, one at a time
 * and in queue order: the worker, or (servers with vt->any_thread) a
 * caller that waits for its answer and finds nobody running the queue.
 * That caller runs the ops ahead of its own and its own, then lets go.
 * With more runnable threads than cores the worker is often waiting for a
 * core, typically the caller's own (the scheduler puts a woken thread on
 * the core of the thread that woke it), and a hand-off would cost the
 * caller two context switches or a scheduler slice; running the op itself
 * costs nothing the worker would not have spent. The worker never waits
 * for a caller that is not running the queue, and callers only try the
 * lock, so nobody waits in a circle: a waiter always waits for a thread
 * that runs ops.
 *
 * The worker sleeps only when every op submitted has been popped
 * (`submitted` == `executed` after it announced `sleeping`); a submit that
 * finds it asleep wakes it, whoever runs the queue at the time, so an op
 * left behind by a caller is always run. */

/* Reads before it writes: a failed compare-exchange still takes the line
 * from the thread that holds the lock (and writes `executed` beside it). */
static bool queue_trylock(ruda__device_t *d) {
  unsigned c = 0;
  if (atomic_load_explicit(&d->running, memory_order_relaxed) != 0) return false;
  return atomic_compare_exchange_strong_explicit(&d->running, &c, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}

static void queue_unlock(ruda__device_t *d) {
  if (atomic_exchange_explicit(&d->running, 0, memory_order_release) == 2) {
    ruda__futex_wake(&d->running, 1);
  }
}

/* Sleeps until the caller that runs the queue lets go (2 tells it to wake
 * this thread). */
static void queue_lock_sleep(ruda__device_t *d) {
  unsigned c = atomic_exchange_explicit(&d->running, 2, memory_order_acquire);
  while (c != 0) {
    ruda__futex_wait(&d->running, 2);
    c = atomic_exchange_explicit(&d->running, 2, memory_order_acquire);
  }
}

/* The worker's lock: false (not taken) when a caller emptied the queue
 * meanwhile. */
static bool queue_lock(ruda__device_t *d) {
  if (queue_trylock(d)) return true;
  ruda__spin_until(&lock_spin, queue_free_or_empty, d, &d->worker_cpu, &d->client_cpu);
  if (!work_queued(d)) return false;
  if (!queue_trylock(d)) queue_lock_sleep(d); /* the caller may have lost its core */
  return true;
}

/* May a caller's run go on to the next op? Not once the server wants its
 * work back on the worker (CUDA: a fault to settle, collectives set up). */
static bool caller_may_go_on(ruda__device_t *d) {
  ruda__server_t *s = d->server;
  return !s->vt->wants_worker || !s->vt->wants_worker(s);
}

/* A lost device (server.h, ruda__device_loss_mark): its streams learn it,
 * and work that would reach the dead context is dropped. */
RUDA__COLD
static void device_lost_op(ruda__server_t *s, ruda__op_t *op) {
  ruda__server_settle_lost(s, op->stream);
  if (op->cancellable) op->cancelled = true;
}

/* Pops and runs ops (holding `running`) until the queue is empty or a
 * push is half done, `done(arg)` holds (when given) or the stop op ran;
 * on a caller's thread (`caller`) also when the server wants the rest on
 * its worker. True when it ran at least one. */
RUDA__HOT
static bool run_queued(ruda__device_t *d, bool (*done)(const void *), const void *arg,
                       bool caller) {
  bool ran = false;
  while (!atomic_load_explicit(&d->stop, memory_order_relaxed) && !(done && done(arg)) &&
         !(caller && ran && !caller_may_go_on(d))) {
    ruda__mpsc_node_t *n = ruda__mpsc_pop(&d->queue);
    if (!n) break;
    unsigned long e = atomic_load_explicit(&d->executed, memory_order_relaxed) + 1;
    atomic_store_explicit(&d->executed, e, memory_order_seq_cst);
    ruda__op_t *op = (ruda__op_t *)n;
    /* Cancellation (cancel.c): the gen first, so that a request this
     * check misses raises a gen the op's cancel point has not seen. */
    ruda__server_t *s = d->server;
    s->op_gen = atomic_load_explicit(&d->cancel.gen, memory_order_acquire);
    bool cancels = atomic_load_explicit(&d->cancels, memory_order_acquire) != 0;
    if (__builtin_expect(cancels, 0)) ruda__device_cancel_mark(d, op);
    if (__builtin_expect(ruda__device_loss_any(&d->loss), 0)) device_lost_op(s, op);
    s->op_seq = op->cancellable ? op->seq : 0;
    s->op_stream = op->stream.value;
    op->run(d, op);
    if (__builtin_expect(cancels || atomic_load_explicit(&d->cancels, memory_order_relaxed), 0)) {
      ruda__device_cancel_settle(d);
    }
    atomic_store_explicit(&d->completed, e, memory_order_release);
    ran = true;
  }
  return ran;
}

/* A caller's turn: runs the queue up to `done` on this thread when nobody
 * else runs it and the server accepts the thread (thread_enter). Never on
 * a device's worker (its ops would wait for this thread) nor once
 * ruda_shutdown() has begun (the stop is the worker's). */
static bool caller_run(ruda__device_t *d, bool (*done)(const void *), const void *arg,
                       bool *refused) {
  if (!d->caller_runs || tls_worker || !queue_trylock(d)) return false;
  ruda__server_t *s = d->server;
  void *token = NULL;
  if (atomic_load_explicit(&d->closing, memory_order_seq_cst) || !s ||
      (s->vt->thread_enter && !s->vt->thread_enter(s, &token))) {
    queue_unlock(d);
    *refused = true; /* not again during this wait */
    return false;
  }
  tls_worker = d;
  run_queued(d, done, arg, true);
  tls_worker = NULL;
  if (s->vt->thread_leave) s->vt->thread_leave(s, token);
  queue_unlock(d);
  return done(arg);
}

/* What a caller polls: its answer, or a free queue it then runs itself
 * (until the device refuses this thread once: the worker then runs it). */
typedef struct caller_wait {
  ruda__device_t *d;
  bool (*done)(const void *);
  const void *arg;
  bool refused;
} caller_wait_t;

static bool answered_or_ran(const void *p) {
  caller_wait_t *w = (caller_wait_t *)p; /* the caller's own, polled by it alone */
  if (w->done(w->arg)) return true;
  if (!w->d->caller_runs || w->refused ||
      atomic_load_explicit(&w->d->running, memory_order_relaxed) != 0) {
    return false;
  }
  return caller_run(w->d, w->done, w->arg, &w->refused);
}

/* Polls (within the callers' budget) for done(arg), running the queue
 * when nobody does; false when the budget ran out first. With `yield`,
 * then yields while that is cheap (ruda__yield_until). */
static bool caller_poll(ruda__device_t *d, bool (*done)(const void *), const void *arg,
                        bool yield) {
  caller_wait_t w = {d, done, arg, false};
  if (ruda__spin_until(&d->wait_spin, answered_or_ran, &w, &d->client_cpu, &d->worker_cpu)) {
    return true;
  }
  return yield && ruda__yield_until(answered_or_ran, &w, RUDA__YIELD_MAX_NS);
}

RUDA__HOT
static void *worker_main(void *arg) {
  ruda__device_t *d = arg;
  tls_worker = d;
  d->init_error = d->backend->create_server(d->id.index_id, &d->server);
  if (d->server) {
    const ruda__server_utilities_t *u = &d->server->utilities;
    d->server->device = d->id;
    d->server->memory_reuse = d->memory_reuse;
    d->server->cancel = &d->cancel;
    d->server->loss = &d->loss;
    d->properties = u->properties;
    d->properties_hash = u->properties_hash;
    memcpy(d->info, u->info, sizeof d->info);
    d->layout_policy = u->layout_policy;
    d->check_mode = u->check_mode;
    d->caller_runs = d->server->vt->any_thread;
    d->launch_returns_early = d->server->vt->any_thread && d->server->vt->launch_returns_early;
  }
  ruda__completion_signal(&d->ready);
  if (d->init_error) return NULL;

  /* Set when work appears after the worker went idle (not when more is
   * queued behind what it ran): see GRACE_MIN_NS. */
  bool fresh = false;
  while (!atomic_load_explicit(&d->stop, memory_order_relaxed)) {
    if (work_queued(d)) {
      if (fresh && d->caller_runs) {
        /* A wait that reads nothing the caller writes (yielding instead
         * while the caller is on this CPU), then one look at whether a
         * caller took the work. */
        fresh = false;
        uint32_t b = ruda__spin_budget(&d->grace_spin);
        ruda__spin_t grace = RUDA__SPIN_INIT(b, b);
        ruda__spin_until(&grace, never, NULL, &d->worker_cpu, &d->client_cpu);
        ruda__spin_adapt(&d->grace_spin,
                         atomic_load_explicit(&d->running, memory_order_relaxed) != 0 ||
                             !work_queued(d));
        continue;
      }
      if (queue_lock(d)) {
        ruda__sync_publish_cpu(&d->worker_cpu, ruda__sync_cpu());
        bool ran = run_queued(d, NULL, NULL, false);
        queue_unlock(d);
        if (!ran) ruda__cpu_relax(); /* a push half done */
      }
      continue;
    }
    fresh = true;
    idle_poll_t idle = {d, atomic_load_explicit(&d->submitted, memory_order_seq_cst)};
    if (work_queued(d)) continue;
    if (!d->server->shares_host_cores &&
        ruda__spin_until(&d->idle_spin, submitted_since, &idle, &d->worker_cpu, &d->client_cpu)) {
      continue;
    }
    atomic_store_explicit(&d->sleeping, 1, memory_order_seq_cst);
    if (work_queued(d)) {
      atomic_store_explicit(&d->sleeping, 0, memory_order_relaxed);
      continue;
    }
    ruda__futex_wait(&d->sleeping, 1);
    atomic_store_explicit(&d->sleeping, 0, memory_order_relaxed);
  }
  /* No caller runs the queue once ruda_shutdown() has begun; taking the
   * lock makes sure none is still at it. */
  if (!queue_trylock(d)) queue_lock_sleep(d);
  if (ruda__server_process_exiting()) {
    ruda__device_report_lost(d, "the process exited", false);
  } else {
    ruda__device_report_lost(d, "ruda_shutdown", true);
  }
  d->server->vt->destroy(d->server);
  d->server = NULL;
  queue_unlock(d);
  return NULL;
}

/* Runs every op left in the queue of a dead device (d->server is NULL:
 * each releases what it holds and reports Unavailable). Consumers after
 * the worker's exit take turns under drain_lock. */
static void device_drain(ruda__device_t *d) {
  pthread_mutex_lock(&d->drain_lock);
  for (ruda__mpsc_node_t *n; (n = ruda__mpsc_pop(&d->queue)) != NULL;) {
    ruda__op_t *op = (ruda__op_t *)n;
    op->run(d, op);
  }
  pthread_mutex_unlock(&d->drain_lock);
}

RUDA__HOT
void ruda__device_submit(ruda__device_t *d, ruda__op_t *op) {
  if (tls_worker == d || atomic_load_explicit(&d->dead, memory_order_acquire)) {
    op->run(d, op);
    return;
  }
  ruda__sync_publish_cpu(&d->client_cpu, ruda__sync_cpu());
  op->seq = atomic_fetch_add_explicit(&d->submitted, 1, memory_order_seq_cst) + 1;
  ruda__mpsc_push(&d->queue, &op->node);
  if (atomic_load_explicit(&d->sleeping, memory_order_seq_cst)) {
    atomic_store_explicit(&d->sleeping, 0, memory_order_relaxed);
    ruda__futex_wake(&d->sleeping, 1);
  }
  /* Raced with ruda_shutdown(): the worker may be gone, and nobody else
   * may look at the queue again. Either ruda_shutdown's drain (after it
   * set `dead`) sees this op, or this load sees `dead` and the op is
   * cancelled here (a submitter whose op sits behind a half-linked one
   * finds it cancelled by that op's submitter, who drains after linking). */
  if (atomic_load_explicit(&d->dead, memory_order_seq_cst)) device_drain(d);
}

bool ruda__device_enter(ruda__device_t *d) {
  atomic_fetch_add_explicit(&d->users, 1, memory_order_seq_cst);
  if (!atomic_load_explicit(&d->closing, memory_order_seq_cst)) return true;
  ruda__device_leave(d);
  return false;
}

void ruda__device_leave(ruda__device_t *d) {
  if (atomic_fetch_sub_explicit(&d->users, 1, memory_order_seq_cst) == 1 &&
      atomic_load_explicit(&d->closing, memory_order_seq_cst)) {
    ruda__futex_wake(&d->users, INT_MAX);
  }
}

/* ---- Blocking calls ---- */

RUDA__COLD
ruda_status_t ruda__device_kernel_call_error(const char *who) {
  const ruda__kernel_scope_t *k = ruda__kernel_scope_current();
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "%s called from inside kernel '%s' (%s:%u): a kernel cannot call "
                            "ruda client functions (the call would wait for the launch it is "
                            "part of)",
                            who, k->name, ruda_device_type_name(k->device.type_id),
                            k->device.index_id);
}

ruda_status_t ruda__device_shut_down_error(const ruda__device_t *d) {
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s:%u was shut down (ruda_shutdown)",
                            d->backend->name, d->id.index_id);
}

RUDA__HOT
ruda_status_t ruda__device_begin(ruda__device_t *d, const char *who) {
  ruda_status_t s = ruda__device_refuse_in_kernel(who);
  if (s) return s;
  if (!ruda__device_enter(d)) return ruda__device_shut_down_error(d);
  return NULL;
}

RUDA__HOT
void ruda__device_end(ruda__device_t *d) { ruda__device_leave(d); }

static void run_call(ruda__device_t *d, ruda__op_t *op) {
  ruda__call_t *c = (ruda__call_t *)op;
  c->status = d->server ? c->fn(d->server, op->stream, c->ctx) : ruda__device_shut_down_error(d);
  ruda__completion_signal(&c->done); /* the caller's memory: last access */
}

static bool completion_done(const void *c) {
  return ruda__completion_done((ruda__completion_t *)c);
}

void ruda__device_call_start(ruda__device_t *d, ruda_stream_id_t stream, ruda__call_fn fn,
                             void *ctx, ruda__call_t *call) {
  *call = (ruda__call_t){
      .base = {.run = run_call, .stream = stream}, .dev = d, .fn = fn, .ctx = ctx};
  ruda__completion_init(&call->done);
  ruda__device_submit(d, &call->base);
}

ruda_status_t ruda__device_call_wait(ruda__call_t *call) {
  if (!caller_poll(call->dev, completion_done, &call->done, true)) {
    ruda__completion_sleep(&call->done);
  }
  return call->status;
}

/* Takes the device for work on the calling thread: only when nothing is
 * queued, so that the work keeps its place in the order without running
 * anybody else's on this thread. On true the server is entered (*token
 * for here_leave) and cannot go: the worker destroys it holding the lock. */
RUDA__HOT
static bool here_enter(ruda__device_t *d, void **token, ruda__device_t **prev) {
  if (tls_worker == d || work_queued(d) || !queue_trylock(d)) return false;
  if (work_queued(d)) {
    queue_unlock(d);
    return false;
  }
  ruda__server_t *s = d->server;
  *token = NULL;
  if (!s || (s->vt->thread_enter && !s->vt->thread_enter(s, token))) {
    queue_unlock(d);
    return false;
  }
  s->op_seq = 0; /* not cancellable (cancel.c) */
  /* Nested submits (none today) run inline too, as on the worker. */
  *prev = tls_worker;
  tls_worker = d;
  return true;
}

RUDA__HOT
static void here_leave(ruda__device_t *d, void *token, ruda__device_t *prev) {
  ruda__server_t *s = d->server;
  if (s->vt->thread_leave) s->vt->thread_leave(s, token);
  tls_worker = prev;
  queue_unlock(d);
}

RUDA__HOT
bool ruda__device_run_here(ruda__device_t *d, ruda_stream_id_t stream, ruda__call_fn fn, void *ctx,
                           ruda_status_t *out) {
  void *token;
  ruda__device_t *prev;
  if (!here_enter(d, &token, &prev)) return false;
  if (__builtin_expect(ruda__device_loss_any(&d->loss), 0)) {
    ruda__server_settle_lost(d->server, stream);
  }
  *out = fn(d->server, stream, ctx);
  here_leave(d, token, prev);
  return true;
}

RUDA__HOT
bool ruda__device_run_op_here(ruda__device_t *d, ruda__op_t *op) {
  void *token;
  ruda__device_t *prev;
  if (!here_enter(d, &token, &prev)) return false;
  if (__builtin_expect(ruda__device_loss_any(&d->loss), 0)) device_lost_op(d->server, op);
  op->run(d, op);
  /* Written under the lock only: no read-modify-write needed. */
  atomic_store_explicit(&d->ops_here, atomic_load_explicit(&d->ops_here, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  here_leave(d, token, prev);
  return true;
}

RUDA__HOT
ruda_status_t ruda__device_call(ruda__device_t *d, ruda__call_kind_t kind,
                                ruda_stream_id_t stream, ruda__call_fn fn, void *ctx) {
  ruda_status_t s;
  if (kind == RUDA__CALL_SHORT && ruda__device_run_here(d, stream, fn, ctx, &s)) {
    return s;
  }
  ruda__call_t call;
  ruda__device_call_start(d, stream, fn, ctx, &call);
  return ruda__device_call_wait(&call);
}

ruda_status_t ruda__device_call_gated(ruda__device_t *d, const char *who,
                                      ruda__call_kind_t kind, ruda_stream_id_t stream,
                                      ruda__call_fn fn, void *ctx) {
  ruda_status_t s = ruda__device_begin(d, who);
  if (s) return s;
  s = ruda__device_call(d, kind, stream, fn, ctx);
  ruda__device_end(d);
  return s;
}

enum { OP_CACHE_MAX = 256, OP_KEEP_MAX = 8 };

/* A list of blocks per thread in front of the device's cache, linked
 * through each block's first word. A thread that frees the ops it
 * allocated (a launch made by its caller) keeps up to OP_KEEP_MAX blocks
 * and takes no lock; a thread whose list is empty takes the device's
 * whole cache in one lock, so a burst of launches meets the worker (which
 * frees their ops into the cache) on the lock once per cache-full rather
 * than once per launch. The blocks go with their thread (a key's
 * destructor); the main thread's stay reachable until exit. A thread
 * holds at most OP_CACHE_MAX blocks. */
static RUDA__THREAD_LOCAL void *tls_op_block;
static RUDA__THREAD_LOCAL uint32_t tls_op_block_len;
static RUDA__THREAD_LOCAL bool tls_op_block_keyed;
static pthread_key_t op_block_key;
static bool op_block_key_made;
static pthread_once_t op_block_once = PTHREAD_ONCE_INIT;

static void op_block_thread_exit(void *unused) {
  (void)unused;
  while (tls_op_block) {
    void *b = tls_op_block;
    tls_op_block = *(void **)b;
    ruda__free(b);
  }
  tls_op_block_len = 0;
}

static void op_block_key_make(void) {
  op_block_key_made = pthread_key_create(&op_block_key, op_block_thread_exit) == 0;
}

/* True once this thread's blocks are tied to its exit. */
static bool op_block_keyed(void) {
  if (tls_op_block_keyed) return true;
  pthread_once(&op_block_once, op_block_key_make);
  /* Any non-NULL value: the destructor frees the list. */
  if (!op_block_key_made || pthread_setspecific(op_block_key, &op_block_key) != 0) return false;
  tls_op_block_keyed = true;
  return true;
}

/* Keeps `block` on this thread's list; false when the thread holds
 * OP_KEEP_MAX blocks already or they could not be tied to its exit. */
static bool op_block_keep(void *block) {
  if (tls_op_block_len >= OP_KEEP_MAX || !op_block_keyed()) return false;
  *(void **)block = tls_op_block;
  tls_op_block = block;
  tls_op_block_len++;
  return true;
}

RUDA__HOT
void *ruda__device_op_alloc(ruda__device_t *d, size_t bytes) {
  if (bytes > RUDA__OP_BLOCK) return ruda__malloc(bytes);
  if (tls_op_block) {
    void *mine = tls_op_block;
    tls_op_block = *(void **)mine;
    tls_op_block_len--;
    return mine;
  }
  bool keyed = op_block_keyed();
  pthread_mutex_lock(&d->op_cache_lock);
  void *b = d->op_cache;
  if (b && keyed) {
    /* The rest of the cache becomes this thread's list. */
    tls_op_block = *(void **)b;
    tls_op_block_len = d->op_cache_len - 1;
    d->op_cache = NULL;
    d->op_cache_len = 0;
  } else if (b) {
    d->op_cache = *(void **)b;
    d->op_cache_len--;
  }
  pthread_mutex_unlock(&d->op_cache_lock);
  return b ? b : ruda__malloc(RUDA__OP_BLOCK);
}

RUDA__HOT
void ruda__device_op_free(ruda__device_t *d, void *block, size_t bytes) {
  if (!block) return;
  if (bytes > RUDA__OP_BLOCK) {
    ruda__free(block);
    return;
  }
  if (op_block_keep(block)) return;
  pthread_mutex_lock(&d->op_cache_lock);
  if (d->op_cache_len < OP_CACHE_MAX) {
    *(void **)block = d->op_cache;
    d->op_cache = block;
    d->op_cache_len++;
    block = NULL;
  }
  pthread_mutex_unlock(&d->op_cache_lock);
  ruda__free(block);
}

typedef struct progress {
  ruda__device_t *d;
  unsigned long target;
} progress_t;

RUDA__HOT
static bool progress_reached(const void *p) {
  const progress_t *g = p;
  return atomic_load_explicit(&g->d->completed, memory_order_acquire) >= g->target;
}

RUDA__HOT
bool ruda__device_quiet_after_progress(ruda__device_t *d) {
  if (tls_worker == d || ruda__trace_on() || atomic_load_explicit(&d->dead, memory_order_acquire)) {
    return false;
  }
  ruda__server_t *s = d->server;
  if (!s || !s->vt->completes_in_order) return false;
  progress_t p = {d, atomic_load_explicit(&d->submitted, memory_order_seq_cst)};
  /* Within the callers' polling budget (running the queue when nobody
   * does); past it the regular path, which can sleep, is the better wait. */
  if (!caller_poll(d, progress_reached, &p, false)) return false;
  return atomic_load_explicit(&s->queued_errors, memory_order_relaxed) == 0;
}

typedef struct stop_op {
  ruda__op_t base;
  ruda__completion_t done;
} stop_op_t;

static void run_stop(ruda__device_t *d, ruda__op_t *op) {
  atomic_store_explicit(&d->stop, true, memory_order_relaxed);
  ruda__completion_signal(&((stop_op_t *)op)->done);
}

/* Set (under registry_lock) once ruda_shutdown() has begun: no device is
 * created afterwards. */
static bool shutting_down;
/* One ruda_shutdown() at a time; a second caller returns once the first
 * has finished. */
static pthread_mutex_t shutdown_lock = PTHREAD_MUTEX_INITIALIZER;

/* Waits until no blocking call is inside the device. */
static void wait_for_users(ruda__device_t *d) {
  for (int i = 0;; i++) {
    unsigned u = atomic_load_explicit(&d->users, memory_order_seq_cst);
    if (u == 0) return;
    if (i < 100) sched_yield();
    else ruda__futex_wait(&d->users, u);
  }
}

enum { MAX_DEVICES = RUDA__MAX_BACKENDS * RUDA_MAX_DEVICES_PER_TYPE };

typedef struct comm_shutdown_op {
  ruda__op_t base;
  ruda__completion_t done;
} comm_shutdown_op_t;

static void run_comm_shutdown(ruda__device_t *d, ruda__op_t *op) {
  if (d->server && d->server->vt->comm_shutdown) d->server->vt->comm_shutdown(d->server);
  ruda__completion_signal(&((comm_shutdown_op_t *)op)->done);
}

/* Communicators may span devices, and finalizing one may wait for its
 * peers: every device finalizes its communicators at once, while every
 * worker still runs. */
static void comm_shutdown_all(ruda__device_t *const *devs, size_t n) {
  static comm_shutdown_op_t ops[MAX_DEVICES];
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    ruda__device_t *d = devs[i];
    if (d->init_error || !d->server || !d->server->vt->comm_shutdown) continue;
    ops[m] = (comm_shutdown_op_t){.base = {.run = run_comm_shutdown}};
    ruda__completion_init(&ops[m].done);
    ruda__device_submit(d, &ops[m].base);
    m++;
  }
  for (size_t k = 0; k < m; k++) ruda__completion_wait(&ops[k].done);
}

/* The devices stop in three passes so that none waits for another: every
 * device first refuses new blocking calls; then every call in progress
 * (which may wait for work of any device, a collective's peers included)
 * finishes while all workers still run; then every device finalizes its
 * communicators (which may wait for their peers); only then does each
 * worker get its stop. Work queued before the stop runs; work queued after it is
 * cancelled (device_drain). The device structs stay in the registry,
 * marked dead, so that clients outliving the shutdown get
 * RUDA_ERR_UNAVAILABLE instead of touching freed memory. */
ruda_status_t ruda_shutdown(void) {
  const ruda__kernel_scope_t *k = ruda__kernel_scope_current();
  if (k) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_shutdown called from inside kernel '%s' (%s:%u): it would wait "
                              "for the launch it is part of; nothing was shut down",
                              k->name, ruda_device_type_name(k->device.type_id),
                              k->device.index_id);
  }
  if (tls_worker) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_shutdown called on the worker of %s:%u (inside "
                              "ruda_client_exclusive or ruda_client_profile): it would wait for "
                              "itself; nothing was shut down",
                              tls_worker->backend->name, tls_worker->id.index_id);
  }
  static ruda__device_t *devs[MAX_DEVICES];
  static stop_op_t stops[MAX_DEVICES];
  pthread_mutex_lock(&shutdown_lock);
  size_t n = 0;
  pthread_mutex_lock(&registry_lock);
  shutting_down = true;
  for (size_t t = 0; t < RUDA__MAX_BACKENDS; t++) {
    for (size_t i = 0; i < RUDA_MAX_DEVICES_PER_TYPE; i++) {
      ruda__device_t *d = registry[t][i];
      if (d && !atomic_load(&d->dead)) devs[n++] = d;
    }
  }
  pthread_mutex_unlock(&registry_lock);
  for (size_t i = 0; i < n; i++) atomic_store_explicit(&devs[i]->closing, true, memory_order_seq_cst);
  for (size_t i = 0; i < n; i++) wait_for_users(devs[i]);
  comm_shutdown_all(devs, n);
  for (size_t i = 0; i < n; i++) {
    stops[i] = (stop_op_t){.base = {.run = run_stop}};
    ruda__completion_init(&stops[i].done);
    ruda__device_submit(devs[i], &stops[i].base);
  }
  for (size_t i = 0; i < n; i++) {
    ruda__device_t *d = devs[i];
    ruda__completion_wait(&stops[i].done);
    pthread_join(d->thread, NULL);
    atomic_store_explicit(&d->dead, true, memory_order_seq_cst);
    device_drain(d);
  }
  pthread_mutex_unlock(&shutdown_lock);
  return NULL;
}

static void shutdown_at_exit(void) {
  ruda__server_mark_process_exit();
  ruda_status_free(ruda_shutdown());
}

static ruda_status_t shut_down(const ruda__backend_t *b, uint16_t index) {
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s:%u was shut down (ruda_shutdown)", b->name,
                            index);
}

ruda_status_t ruda__device_get(ruda_device_id_t id, ruda__device_t **out) {
  *out = NULL;
  const ruda__backend_t *b = ruda__backend_for(id.type_id);
  size_t slot = b ? ruda__backend_index(b) : RUDA__MAX_BACKENDS;
  if (!b || slot >= RUDA__MAX_BACKENDS) {
    const char *known = ruda__device_type_builtin_name(id.type_id);
    if (known) {
      return ruda_status_create(RUDA_ERR_UNAVAILABLE,
                                "the %s backend is not built into this ruda library", known);
    }
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "unknown device type %u", id.type_id);
  }
  if (id.index_id >= RUDA_MAX_DEVICES_PER_TYPE) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "device index %u is out of range",
                              id.index_id);
  }
  pthread_mutex_lock(&registry_lock);
  if (shutting_down) {
    pthread_mutex_unlock(&registry_lock);
    return shut_down(b, id.index_id);
  }
  ruda__device_t *d = registry[slot][id.index_id];
  if (!d) {
    uint32_t count = 0;
    ruda_status_t s = b->device_count(&count);
    if (s) {
      pthread_mutex_unlock(&registry_lock);
      return s;
    }
    if (id.index_id >= count) {
      pthread_mutex_unlock(&registry_lock);
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s:%u does not exist (%u device%s)",
                                b->name, id.index_id, count, count == 1 ? "" : "s");
    }
    d = ruda__calloc(1, sizeof *d);
    if (!d) {
      pthread_mutex_unlock(&registry_lock);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating %s:%u",
                                b->name, id.index_id);
    }
    const ruda_config_t *cfg = ruda_config_get();
    if (cfg->trace.file[0]) ruda__trace_start(cfg->trace.file);
    d->id = id;
    d->backend = b;
    d->memory_reuse = ruda__reuse_cache_new();
    if (!d->memory_reuse) {
      ruda__free(d);
      pthread_mutex_unlock(&registry_lock);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating %s:%u",
                                b->name, id.index_id);
    }
    pthread_mutex_init(&d->op_cache_lock, NULL);
    pthread_mutex_init(&d->drain_lock, NULL);
    pthread_mutex_init(&d->recording_lock, NULL);
    ruda__device_cancel_init(d);
    d->profile_level = (int)cfg->profiling.logger.level;
    ruda__mpsc_init(&d->queue);
    ruda__spin_init(&d->idle_spin, IDLE_SPIN_MIN_NS, IDLE_SPIN_MAX_NS);
    ruda__spin_init(&d->grace_spin, GRACE_MIN_NS, GRACE_MAX_NS);
    ruda__spin_init(&d->wait_spin, WAIT_SPIN_MIN_NS, WAIT_SPIN_MAX_NS);
    atomic_init(&d->worker_cpu, -1);
    atomic_init(&d->client_cpu, -1);
    ruda__completion_init(&d->ready);
    if (pthread_create(&d->thread, NULL, worker_main, d) != 0) {
      device_free(d);
      pthread_mutex_unlock(&registry_lock);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "cannot start the worker thread of %s:%u",
                                b->name, id.index_id);
    }
    ruda__completion_wait(&d->ready);
    if (d->init_error) {
      /* Not kept: a failure here (out of memory, a driver hiccup) may be
       * transient, and the next call tries again. */
      pthread_join(d->thread, NULL);
      ruda_status_t err = d->init_error;
      device_free(d);
      pthread_mutex_unlock(&registry_lock);
      return err;
    }
    registry[slot][id.index_id] = d;
    if (!atexit_registered) {
      atexit_registered = true;
      atexit(shutdown_at_exit);
    }
  }
  pthread_mutex_unlock(&registry_lock);
  if (atomic_load_explicit(&d->closing, memory_order_acquire)) return shut_down(b, id.index_id);
  *out = d;
  return NULL;
}
