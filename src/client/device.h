/* Devices: the process-wide registry of servers and the worker thread that
 * owns each one.
 *
 * Every device has exactly one server, created on first use on the device's
 * worker thread, which then executes submitted operations in FIFO order;
 * on a server that runs on any thread (vt->any_thread: CPU) a caller
 * waiting for its answer runs them itself while no other thread does
 * (device.c, "Who runs the queue"). A submit from the thread running the
 * queue (inside ruda_client_exclusive or ruda_client_profile) runs inline.
 */
#ifndef RUDA_CLIENT_DEVICE_H
#define RUDA_CLIENT_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>

#include "base/sync.h"
#include "server/kernel_scope.h"
#include "server/server.h"

typedef struct ruda__device ruda__device_t;
typedef struct ruda__op ruda__op_t;

/* Executes the operation on the worker. It must free or signal `op`; after
 * signalling a completion it must not touch `op` again. */
typedef void (*ruda__op_run_fn)(ruda__device_t *dev, ruda__op_t *op);

struct ruda__op {
  ruda__mpsc_node_t node; /* first member */
  ruda__op_run_fn run;
  ruda_stream_id_t stream;
  /* Set by ruda__device_submit for a queued op: 1, 2, ... in the order of
   * the device's `submitted` counter (0: run without the queue). */
  uint64_t seq;
  /* Set by the op's maker: ruda_client_cancel of its stream may drop it
   * before it starts (launches, writes, replays: work a user can regret;
   * not allocations, mode changes, collectives or blocking calls). */
  bool cancellable;
  /* Set by the device for a dropped op just before its run: the run must
   * then release what it holds without calling the server (as for
   * d->server == NULL). */
  bool cancelled;
};

struct ruda__device {
  ruda_device_id_t id;
  const ruda__backend_t *backend;
  ruda__server_t *server;
  pthread_t thread;
  ruda__mpsc_t queue;
  /* The words polled across threads, in cache lines by who writes them,
   * so that a round trip run by its caller moves as few lines as possible
   * while the worker polls. Written by submitters: */
  char pad_submit_[64];
  atomic_ulong submitted;
  atomic_int client_cpu; /* where the last submitter or waiter ran */
  /* Written by the thread that runs the queue: */
  char pad_run_[64];
  /* Held by the thread that runs ops on the server (0 free, 1 held, 2 held
   * with the worker waiting for it): the worker, a caller that makes a
   * short call or an allocation while nothing is queued
   * (ruda__device_run_here), or on a server that runs on any thread
   * (vt->any_thread, copied to `caller_runs`) a caller waiting for its
   * answer while no other thread runs the queue. */
  atomic_uint running;
  /* Ops popped, by the thread that holds `running`. */
  atomic_ulong executed;
  /* Ops that ran on their submitter's thread without being queued
   * (ruda__device_run_op_here: launches), by the thread that holds
   * `running`; for tests and diagnostics. */
  atomic_ulong ops_here;
  atomic_ulong completed; /* ops whose run returned (release), for waiters */
  /* Written by the worker alone (its polls read it every round, so it must
   * not share the line the queue's runner writes): */
  char pad_worker_[64];
  atomic_int worker_cpu; /* where the worker last ran */
  char pad_end_[64];
  atomic_uint sleeping;
  bool caller_runs;
  bool launch_returns_early; /* vt->any_thread && vt->launch_returns_early, at creation */
  /* Polling budgets (base/sync.h): the worker's on an empty queue, the
   * time it leaves fresh work to its submitter (device.c, GRACE_MIN_NS),
   * and the callers' for an answer (progress, a blocking call's
   * completion). */
  ruda__spin_t idle_spin;
  ruda__spin_t grace_spin;
  ruda__spin_t wait_spin;
  atomic_bool stop;       /* set by the stop op, which only the worker runs */
  ruda_status_t init_error; /* creation only: the device is not kept */
  ruda__completion_t ready;
  int profile_level;      /* ruda_log_level_t of [profiling], read at creation */
  /* Shutdown (see ruda__device_enter): `closing` refuses new blocking
   * calls, `users` counts those in progress, `dead` is set once the worker
   * has been joined; ops submitted afterwards are cancelled, by their
   * submitter or by ruda_shutdown, one at a time under `drain_lock`. */
  atomic_uint users;
  /* Live clients of the device (ruda_client_create/_on_stream add one,
   * the release of a client's last reference takes it back): when it
   * falls to 0 the errors nobody can read any more are reported
   * (lost_errors.c). */
  atomic_uint clients;
  atomic_bool closing;
  atomic_bool dead;
  pthread_mutex_t drain_lock;
  /* Copied from the server's utilities at creation: clients read them
   * without a round trip, and they outlive the server. */
  ruda_device_properties_t properties;
  uint64_t properties_hash;
  char info[256];
  ruda__layout_policy_t layout_policy;
  ruda_bounds_check_mode_t check_mode;
  /* Streams of this device that record a graph (client_graph.c): the
   * launch and write paths look them up only while num_recordings > 0. */
  pthread_mutex_t recording_lock;
  atomic_uint num_recordings;
  struct ruda_graph *recordings; /* linked through ruda_graph.next */
  /* Released slices kept for the next reservation of their size on their
   * stream (memory/reuse_cache.h): ruda_client_empty takes them on the
   * caller's thread. Given to the server at its creation; freed with the
   * device. */
  ruda__memory_reuse_t *memory_reuse;
  /* Cancellation (cancel.c): the source the server polls (its gen grows
   * with each request), the number of requests not yet settled, and the
   * requests themselves (under cancel_lock). */
  ruda__cancel_source_t cancel;
  atomic_uint cancels;
  pthread_mutex_t cancel_lock;
  struct ruda__cancel_req *cancel_reqs;
  size_t cancel_len, cancel_cap;
  /* Whether the device is lost (server.h, ruda__device_loss_mark): given
   * to the server at its creation; outlives it. */
  ruda__device_loss_t loss;
  /* Recycled operation blocks (see ruda__device_op_alloc). */
  pthread_mutex_t op_cache_lock;
  void *op_cache;
  uint32_t op_cache_len;
};

/* Operation blocks: callers allocate ops that the worker frees, which
 * glibc serves from its slow cross-thread path. Blocks of at most
 * RUDA__OP_BLOCK bytes are recycled through a list per thread (one block
 * kept by the thread that frees it, or the device's cache taken whole by
 * the thread that allocates), then a small per-device cache, instead. Thread-safe. NULL when memory is
 * exhausted. */
#define RUDA__OP_BLOCK 256
void *ruda__device_op_alloc(ruda__device_t *d, size_t bytes);
void ruda__device_op_free(ruda__device_t *d, void *block, size_t bytes);

/* The device, creating its server on first use. The device lives until
 * ruda_shutdown()/exit. A device whose server could not be created is not
 * kept: the next call tries again. Errors: RUDA_ERR_UNAVAILABLE (also once
 * ruda_shutdown() has begun), RUDA_ERR_INVALID_ARGUMENT. */
ruda_status_t ruda__device_get(ruda_device_id_t id, ruda__device_t **out);
/* Queues `op` (or runs it inline when called on the worker thread). Once
 * ruda_shutdown() has stopped the worker the op runs on the caller's
 * thread (or on the thread of ruda_shutdown) with d->server == NULL: every
 * op's run function must then release what it holds and report
 * RUDA_ERR_UNAVAILABLE instead of calling the server. */
void ruda__device_submit(ruda__device_t *d, ruda__op_t *op);
/* Brackets a client call that waits for the worker or reads d->server
 * (every blocking call). False once ruda_shutdown() has begun on the
 * device: the call must then return RUDA_ERR_UNAVAILABLE without
 * submitting anything. ruda_shutdown() waits for the calls in progress
 * before it stops the worker, so the server outlives every entered call.
 * Nests; thread-safe. */
bool ruda__device_enter(ruda__device_t *d);
void ruda__device_leave(ruda__device_t *d);
bool ruda__device_on_worker(const ruda__device_t *d);

/* ---- Blocking calls ----
 *
 * Every client call that waits for the worker, or reads d->server, is
 * bracketed by ruda__device_begin() and ruda__device_end(); the operation
 * itself is a function run on the worker by ruda__device_call(). */

/* A client call made from inside a kernel is refused: it would wait for
 * the launch it is part of, or re-enter the server in the middle of it.
 * NULL outside kernels; otherwise RUDA_ERR_INVALID_ARGUMENT naming `who`
 * and the kernel. Non-blocking calls use it too. */
ruda_status_t ruda__device_kernel_call_error(const char *who); /* the error, out of line */
static inline ruda_status_t ruda__device_refuse_in_kernel(const char *who) {
  return ruda__kernel_scope_current() ? ruda__device_kernel_call_error(who) : NULL;
}
/* The error of a call made after ruda_shutdown() (RUDA_ERR_UNAVAILABLE). */
ruda_status_t ruda__device_shut_down_error(const ruda__device_t *d);
/* Start of a blocking call: ruda__device_refuse_in_kernel(who), then
 * RUDA_ERR_UNAVAILABLE once ruda_shutdown() has begun; on NULL the server
 * stays alive until the matching ruda__device_end(). */
ruda_status_t ruda__device_begin(ruda__device_t *d, const char *who);
void ruda__device_end(ruda__device_t *d);

/* What a blocking call runs on the device, in the order of `stream`'s
 * other operations: `s` is the device's server (never NULL), `ctx` the
 * caller's. */
typedef ruda_status_t (*ruda__call_fn)(ruda__server_t *s, ruda_stream_id_t stream, void *ctx);

/* How a blocking call reaches the server.
 * QUEUED: through the worker's queue, in order with everything submitted
 *   before it (calls that may wait for other devices or run user code:
 *   collectives, exclusive, graph builds).
 * SHORT: a call that waits for nothing but this device's own driver calls
 *   (read, sync, flush, usage, resources, staging, profile marks). When
 *   the device is idle (everything submitted has run) it runs on the
 *   calling thread, holding the device's `running` lock, which the worker
 *   takes for every operation: the call is then ordered after all work
 *   submitted before it and before all work submitted after, as through
 *   the queue, without the two thread hand-offs. Otherwise it is queued. */
typedef enum ruda__call_kind {
  RUDA__CALL_QUEUED = 0,
  RUDA__CALL_SHORT = 1,
} ruda__call_kind_t;

/* Runs fn(server, stream, ctx) on the calling thread when the device is
 * idle (everything submitted has run, `running` is free, the backend
 * accepts the thread) and sets *out; false, with nothing done, otherwise.
 * The server is used by one thread at a time as always: the worker waits
 * for the lock. For short work only (an allocation, a short call). */
bool ruda__device_run_here(ruda__device_t *d, ruda_stream_id_t stream, ruda__call_fn fn, void *ctx,
                           ruda_status_t *out);
/* Runs `op` on the calling thread when the device is idle, as
 * ruda__device_run_here runs a call: in order after everything submitted
 * before and before everything submitted after, with the worker neither
 * woken nor waited for. True: the op ran, and its run function has freed
 * or signalled it as on the worker. False, with nothing done, when work
 * is queued, another thread runs the queue, the server refuses the thread
 * or is gone, or on the device's worker: the op is still the caller's
 * (to submit). Thread-safe; never fails otherwise. */
bool ruda__device_run_op_here(ruda__device_t *d, ruda__op_t *op);
/* Runs fn and returns its status (inline when called on the worker).
 * Called between ruda__device_begin() and ruda__device_end(). */
ruda_status_t ruda__device_call(ruda__device_t *d, ruda__call_kind_t kind,
                                ruda_stream_id_t stream, ruda__call_fn fn, void *ctx);
/* A queued call in two steps, for a caller that starts calls on several
 * devices before it waits for any (a call that waits for its peers): the
 * caller owns `call` until ruda__device_call_wait() has returned. */
typedef struct ruda__call {
  ruda__op_t base;
  ruda__completion_t done;
  ruda__device_t *dev;
  ruda__call_fn fn;
  void *ctx;
  ruda_status_t status;
} ruda__call_t;
void ruda__device_call_start(ruda__device_t *d, ruda_stream_id_t stream, ruda__call_fn fn,
                             void *ctx, ruda__call_t *call);
ruda_status_t ruda__device_call_wait(ruda__call_t *call);
/* ruda__device_begin(who), ruda__device_call(), ruda__device_end(). */
ruda_status_t ruda__device_call_gated(ruda__device_t *d, const char *who,
                                      ruda__call_kind_t kind, ruda_stream_id_t stream,
                                      ruda__call_fn fn, void *ctx);

/* For servers whose work completes in order (completes_in_order): waits
 * until every op submitted before the call has run and reports whether no
 * error is queued on any stream, so a sync or flush can be answered without
 * a round trip. False: take the regular path (errors queued, tracing on,
 * called on the worker, or the wait took too long). */
bool ruda__device_quiet_after_progress(ruda__device_t *d);

/* ---- Launches made by their caller ----
 *
 * A launch is queued for the device's worker and returns at once. A
 * thread that waits after every launch (launch, sync, launch, sync) ends
 * up making its launch itself anyway: its wait finds the launch still in
 * the queue (the worker leaves fresh work to its submitter for a while,
 * device.c) and runs the queue. For such a thread, on a server whose
 * launch returns before the work is done (launch_returns_early), the
 * launch is made at once on the calling thread while the device is idle
 * (ruda__device_run_op_here): the same work, started earlier, without the
 * queue, and the worker is not woken. A thread whose last wait came after
 * more than one launch queues as before, so a burst of launches still
 * costs its caller no more than the queue. Per thread, for the last
 * device it launched on. */
typedef struct ruda__launch_pace {
  const ruda__device_t *dev;
  uint32_t since_wait;  /* launches since the thread's last wait */
  uint32_t before_wait; /* launches between the two waits before */
} ruda__launch_pace_t;

extern RUDA__THREAD_LOCAL ruda__launch_pace_t ruda__tls_launch_pace;

/* Called by the calling thread's waits on `d` (sync, a blocking read):
 * ends the thread's current run of launches. */
static inline void ruda__device_note_wait(const ruda__device_t *d) {
  ruda__launch_pace_t *p = &ruda__tls_launch_pace;
  /* A wait with no launch since the last one tells nothing of the pace. */
  if (p->dev != d || p->since_wait == 0) return;
  p->before_wait = p->since_wait;
  p->since_wait = 0;
}

/* Counts a launch on `d`; true when the caller should make it itself.
 * Servers whose launch waits for the work (CPU) keep no pace. */
static inline bool ruda__device_launch_here_wanted(ruda__device_t *d) {
  if (!d->launch_returns_early) return false;
  ruda__launch_pace_t *p = &ruda__tls_launch_pace;
  if (p->dev != d) *p = (ruda__launch_pace_t){d, 0, 0};
  bool here = p->since_wait == 0 && p->before_wait == 1;
  p->since_wait++;
  return here;
}

/* ---- Cancellation (cancel.c) ---- */

/* Sets up / frees the device's cancellation state (d->cancel and the
 * requests). */
void ruda__device_cancel_init(ruda__device_t *d);
void ruda__device_cancel_deinit(ruda__device_t *d);
/* On the thread running the queue, around an op while d->cancels != 0:
 * _mark sets op->cancelled when a request covers it (counted for its
 * stream), or else first queues ServerError::Cancelled on the op's stream
 * for what was dropped there so far; _settle retires the requests every op
 * of which has been popped, queuing the same for what they dropped. */
void ruda__device_cancel_mark(ruda__device_t *d, ruda__op_t *op);
void ruda__device_cancel_settle(ruda__device_t *d);

/* ---- Errors nobody read (lost_errors.c) ---- */

/* Reports the errors queued on every stream of the device to the
 * application's handler or the log (ruda/client.h, "Errors nobody read"),
 * draining them; `when` says what made them unreadable. With `wait` each
 * stream is synced first (the device's work is waited for); without, only
 * what is queued is taken (the device is not called). On the thread that
 * runs the device's operations, d->server set (nothing happens otherwise). */
void ruda__device_report_lost(ruda__device_t *d, const char *when, bool wait);
/* The device's last client was released: queues the report, in order after
 * the work queued before. Non-blocking; thread-safe. */
void ruda__device_clients_gone(ruda__device_t *d);

#endif
