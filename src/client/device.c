/* The device registry and the per-device worker thread. */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
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
static _Thread_local ruda__device_t *tls_worker;

bool ruda__device_on_worker(const ruda__device_t *d) { return tls_worker == d; }

/* A device that never ran (its worker joined or never started). */
static void device_free(ruda__device_t *d) {
  pthread_mutex_destroy(&d->op_cache_lock);
  pthread_mutex_destroy(&d->drain_lock);
  pthread_mutex_destroy(&d->recording_lock);
  ruda__free(d);
}

/* ---- The runner lock ---- */

static bool runner_try(ruda__device_t *d) {
  unsigned free_ = 0;
  return atomic_compare_exchange_strong_explicit(&d->runner, &free_, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}

/* The worker's side: a caller's short call holds the lock for a few
 * driver calls at most. */
static void runner_lock(ruda__device_t *d) {
  for (unsigned i = 0; !runner_try(d); i++) {
    ruda__cpu_relax();
    if ((i & 1023) == 1023) sched_yield();
  }
}

static void runner_unlock(ruda__device_t *d) {
  atomic_store_explicit(&d->runner, 0, memory_order_release);
}

/* Spin this many times on an empty queue before sleeping; a burst of
 * launches then never pays for a wake-up. */
enum { WORKER_SPINS = 20000 };

static void *worker_main(void *arg) {
  ruda__device_t *d = arg;
  tls_worker = d;
  d->init_error = d->backend->create_server(d->id.index_id, &d->server);
  if (d->server) {
    const ruda__server_utilities_t *u = &d->server->utilities;
    d->server->device = d->id;
    d->properties = u->properties;
    d->properties_hash = u->properties_hash;
    memcpy(d->info, u->info, sizeof d->info);
    d->layout_policy = u->layout_policy;
    d->check_mode = u->check_mode;
  }
  ruda__completion_signal(&d->ready);
  if (d->init_error) return NULL;

  while (!d->stop) {
    ruda__mpsc_node_t *n = ruda__mpsc_pop(&d->queue);
    if (n) {
      d->executed++;
      ruda__op_t *op = (ruda__op_t *)n;
      runner_lock(d);
      op->run(d, op);
      runner_unlock(d);
      atomic_store_explicit(&d->completed, d->executed, memory_order_release);
      continue;
    }
    bool found = false;
    int spins = d->server->shares_host_cores ? 0 : WORKER_SPINS;
    for (int i = 0; i < spins; i++) {
      if (atomic_load_explicit(&d->submitted, memory_order_acquire) != d->executed) {
        found = true;
        break;
      }
      ruda__cpu_relax();
    }
    if (found) continue;
    atomic_store_explicit(&d->sleeping, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&d->submitted, memory_order_seq_cst) != d->executed) {
      atomic_store_explicit(&d->sleeping, 0, memory_order_relaxed);
      continue;
    }
    ruda__futex_wait(&d->sleeping, 1);
    atomic_store_explicit(&d->sleeping, 0, memory_order_relaxed);
  }
  runner_lock(d);
  d->server->vt->destroy(d->server);
  d->server = NULL;
  runner_unlock(d);
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

void ruda__device_submit(ruda__device_t *d, ruda__op_t *op) {
  if (tls_worker == d || atomic_load_explicit(&d->dead, memory_order_acquire)) {
    op->run(d, op);
    return;
  }
  atomic_fetch_add_explicit(&d->submitted, 1, memory_order_seq_cst);
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

bool ruda__device_on_any_worker(void) { return tls_worker != NULL; }

/* ---- Blocking calls ---- */

ruda_status_t ruda__device_refuse_in_kernel(const char *who) {
  const ruda__kernel_scope_t *k = ruda__kernel_scope_current();
  if (!k) return NULL;
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

ruda_status_t ruda__device_begin(ruda__device_t *d, const char *who) {
  ruda_status_t s = ruda__device_refuse_in_kernel(who);
  if (s) return s;
  if (!ruda__device_enter(d)) return ruda__device_shut_down_error(d);
  return NULL;
}

void ruda__device_end(ruda__device_t *d) { ruda__device_leave(d); }

static void run_call(ruda__device_t *d, ruda__op_t *op) {
  ruda__call_t *c = (ruda__call_t *)op;
  c->status = d->server ? c->fn(d->server, op->stream, c->ctx) : ruda__device_shut_down_error(d);
  ruda__completion_signal(&c->done); /* the caller's memory: last access */
}

void ruda__device_call_start(ruda__device_t *d, ruda_stream_id_t stream, ruda__call_fn fn,
                             void *ctx, ruda__call_t *call) {
  *call = (ruda__call_t){.base = {.run = run_call, .stream = stream}, .fn = fn, .ctx = ctx};
  ruda__completion_init(&call->done);
  ruda__device_submit(d, &call->base);
}

ruda_status_t ruda__device_call_wait(ruda__call_t *call) {
  ruda__completion_wait(&call->done);
  return call->status;
}

bool ruda__device_run_here(ruda__device_t *d, ruda_stream_id_t stream, ruda__call_fn fn, void *ctx,
                           ruda_status_t *out) {
  if (tls_worker == d ||
      atomic_load_explicit(&d->submitted, memory_order_acquire) !=
          atomic_load_explicit(&d->completed, memory_order_acquire) ||
      !runner_try(d)) {
    return false;
  }
  /* Under the lock the server cannot go: the worker destroys it holding it. */
  ruda__server_t *s = d->server;
  void *token = NULL;
  if (!s || (s->vt->thread_enter && !s->vt->thread_enter(s, &token))) {
    runner_unlock(d);
    return false;
  }
  /* Nested submits (none today) run inline too, as on the worker. */
  ruda__device_t *prev = tls_worker;
  tls_worker = d;
  *out = fn(s, stream, ctx);
  if (s->vt->thread_leave) s->vt->thread_leave(s, token);
  tls_worker = prev;
  runner_unlock(d);
  return true;
}

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

enum { OP_CACHE_MAX = 256 };

void *ruda__device_op_alloc(ruda__device_t *d, size_t bytes) {
  if (bytes > RUDA__OP_BLOCK) return ruda__malloc(bytes);
  pthread_mutex_lock(&d->op_cache_lock);
  void *b = d->op_cache;
  if (b) {
    d->op_cache = *(void **)b;
    d->op_cache_len--;
  }
  pthread_mutex_unlock(&d->op_cache_lock);
  return b ? b : ruda__malloc(RUDA__OP_BLOCK);
}

void ruda__device_op_free(ruda__device_t *d, void *block, size_t bytes) {
  if (!block) return;
  if (bytes > RUDA__OP_BLOCK) {
    ruda__free(block);
    return;
  }
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

bool ruda__device_quiet_after_progress(ruda__device_t *d) {
  if (tls_worker == d || ruda__trace_on() || atomic_load_explicit(&d->dead, memory_order_acquire)) {
    return false;
  }
  ruda__server_t *s = d->server;
  if (!s || !s->vt->completes_in_order) return false;
  unsigned long target = atomic_load_explicit(&d->submitted, memory_order_seq_cst);
  /* About as long as a round trip would take; past it the regular path,
   * which can sleep, is the better wait. */
  for (int i = 0; atomic_load_explicit(&d->completed, memory_order_acquire) < target; i++) {
    if (i == 4000) return false;
    ruda__cpu_relax();
  }
  return atomic_load_explicit(&s->queued_errors, memory_order_relaxed) == 0;
}

typedef struct stop_op {
  ruda__op_t base;
  ruda__completion_t done;
} stop_op_t;

static void run_stop(ruda__device_t *d, ruda__op_t *op) {
  d->stop = true;
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

static void shutdown_at_exit(void) { ruda_status_free(ruda_shutdown()); }

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
    pthread_mutex_init(&d->op_cache_lock, NULL);
    pthread_mutex_init(&d->drain_lock, NULL);
    pthread_mutex_init(&d->recording_lock, NULL);
    d->profile_level = (int)cfg->profiling.logger.level;
    ruda__mpsc_init(&d->queue);
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
