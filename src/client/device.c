/* The device registry and the per-device worker thread. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "client/device.h"
#include "ruda/config.h"
#include "server/trace.h"
#include "types/device_names.h"

#define RUDA_MAX_DEVICES_PER_TYPE 64

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
/* Devices by (position of their backend in ruda__backend_list, index). */
static ruda__device_t *registry[RUDA__MAX_BACKENDS][RUDA_MAX_DEVICES_PER_TYPE];
static bool atexit_registered;
static _Thread_local ruda__device_t *tls_worker;

bool ruda__device_on_worker(const ruda__device_t *d) { return tls_worker == d; }

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
      op->run(d, op);
      atomic_store_explicit(&d->completed, d->executed, memory_order_release);
      continue;
    }
    bool found = false;
    for (int i = 0; i < WORKER_SPINS; i++) {
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
  d->server->vt->destroy(d->server);
  d->server = NULL;
  return NULL;
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

/* Stops the worker and destroys the server. The device struct stays in the
 * registry, marked dead, so clients that outlive the shutdown get
 * RUDA_ERR_UNAVAILABLE instead of touching freed memory. */
static void device_stop(ruda__device_t *d) {
  if (atomic_load(&d->dead)) return;
  if (!d->init_error) {
    stop_op_t op = {.base = {.run = run_stop}};
    ruda__completion_init(&op.done);
    ruda__device_submit(d, &op.base);
    ruda__completion_wait(&op.done);
  }
  pthread_join(d->thread, NULL);
  atomic_store_explicit(&d->dead, true, memory_order_release);
}

typedef struct comm_shutdown_op {
  ruda__op_t base;
  ruda__completion_t done;
} comm_shutdown_op_t;

static void run_comm_shutdown(ruda__device_t *d, ruda__op_t *op) {
  if (d->server && d->server->vt->comm_shutdown) d->server->vt->comm_shutdown(d->server);
  ruda__completion_signal(&((comm_shutdown_op_t *)op)->done);
}

/* Communicators may span devices, and finalizing one may wait for its
 * peers: every device finalizes its communicators at once, before any
 * worker stops. Called under registry_lock. */
static void comm_shutdown_all(void) {
  enum { MAX_OPS = 64 };
  comm_shutdown_op_t ops[MAX_OPS];
  size_t n = 0;
  for (size_t t = 0; t < RUDA__MAX_BACKENDS; t++) {
    for (size_t i = 0; i < RUDA_MAX_DEVICES_PER_TYPE; i++) {
      ruda__device_t *d = registry[t][i];
      if (!d || d->init_error || atomic_load(&d->dead) || !d->server ||
          !d->server->vt->comm_shutdown) {
        continue;
      }
      /* Past MAX_OPS devices with communicators, the rest finalize in a
       * second wave (a finalize that waits for them times out and aborts). */
      if (n == MAX_OPS) {
        for (size_t k = 0; k < n; k++) ruda__completion_wait(&ops[k].done);
        n = 0;
      }
      ops[n] = (comm_shutdown_op_t){.base = {.run = run_comm_shutdown}};
      ruda__completion_init(&ops[n].done);
      ruda__device_submit(d, &ops[n].base);
      n++;
    }
  }
  for (size_t k = 0; k < n; k++) ruda__completion_wait(&ops[k].done);
}

void ruda_shutdown(void) {
  pthread_mutex_lock(&registry_lock);
  comm_shutdown_all();
  for (size_t t = 0; t < RUDA__MAX_BACKENDS; t++) {
    for (size_t i = 0; i < RUDA_MAX_DEVICES_PER_TYPE; i++) {
      if (registry[t][i]) device_stop(registry[t][i]);
    }
  }
  pthread_mutex_unlock(&registry_lock);
}

static void shutdown_at_exit(void) { ruda_shutdown(); }

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
    d->profile_level = (int)cfg->profiling.logger.level;
    ruda__mpsc_init(&d->queue);
    ruda__completion_init(&d->ready);
    if (pthread_create(&d->thread, NULL, worker_main, d) != 0) {
      ruda__free(d);
      pthread_mutex_unlock(&registry_lock);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "cannot start the worker thread of %s:%u",
                                b->name, id.index_id);
    }
    ruda__completion_wait(&d->ready);
    registry[slot][id.index_id] = d;
    if (!atexit_registered) {
      atexit_registered = true;
      atexit(shutdown_at_exit);
    }
  }
  pthread_mutex_unlock(&registry_lock);
  if (d->init_error) return ruda_status_clone(d->init_error);
  if (atomic_load_explicit(&d->dead, memory_order_acquire)) {
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s:%u was shut down (ruda_shutdown)",
                              d->backend->name, d->id.index_id);
  }
  *out = d;
  return NULL;
}
