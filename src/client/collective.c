/* Collectives on the client side (include/ruda/comm.h): validation, the
 * communicator of each device set, and one queued operation per device.
 *
 * Deadlock freedom: a collective blocks its worker until every participant
 * reaches it, so every device must see the collectives in one order. All
 * collectives are therefore queued under one process-wide lock; whatever
 * collective comes first in that order finds all of its participants at it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "client/device.h"
#include "comm/comm_id.h"
#include "ruda/comm.h"
#include "ruda/log.h"
#include "server/kernel_scope.h"

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct reduce_op {
  ruda__op_t base;
  ruda_binding_t src, dst;
  ruda_elem_type_t dtype;
  ruda_reduce_op_t op;
  size_t n;
  ruda_device_id_t ids[]; /* sorted */
} reduce_op_t;

static void run_reduce(ruda__device_t *d, ruda__op_t *op) {
  reduce_op_t *r = (reduce_op_t *)op;
  ruda__server_t *s = d->server;
  if (s) {
    ruda_status_t err = s->vt->all_reduce(s, &r->src, &r->dst, r->dtype, op->stream, r->op,
                                          r->ids, r->n);
    if (err) {
      ruda_log(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_MINIMAL,
               "all-reduce on %s:%u returned an error it could not queue: %s",
               d->backend->name, d->id.index_id,
               ruda_status_reason(err) ? ruda_status_reason(err) : "?");
      ruda_status_free(err);
    }
  }
  ruda_binding_release(&r->src);
  ruda_binding_release(&r->dst);
  ruda__free(r);
}

typedef struct blocking_op {
  ruda__op_t base;
  ruda__completion_t done;
  ruda_status_t status;
  const ruda_device_id_t *ids; /* comm_init only */
  size_t n;
} blocking_op_t;

static ruda_status_t shut_down(const ruda__device_t *d) {
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s:%u was shut down (ruda_shutdown)",
                            d->backend->name, d->id.index_id);
}

static void run_comm_init(ruda__device_t *d, ruda__op_t *op) {
  blocking_op_t *b = (blocking_op_t *)op;
  b->status = d->server ? d->server->vt->comm_init(d->server, b->ids, b->n) : shut_down(d);
  ruda__completion_signal(&b->done);
}

static void run_sync_collective(ruda__device_t *d, ruda__op_t *op) {
  blocking_op_t *b = (blocking_op_t *)op;
  b->status = d->server ? d->server->vt->sync_collective(d->server, op->stream) : shut_down(d);
  ruda__completion_signal(&b->done);
}

static bool comm_known(ruda__server_utilities_t *u, uint64_t id) {
  pthread_mutex_lock(&u->comms_lock);
  bool found = false;
  for (size_t i = 0; i < u->num_comms && !found; i++) found = u->comms[i] == id;
  pthread_mutex_unlock(&u->comms_lock);
  return found;
}

static void comm_record(ruda__server_utilities_t *u, uint64_t id) {
  pthread_mutex_lock(&u->comms_lock);
  /* A full table only means comm_init runs again, which is idempotent. */
  if (u->num_comms < RUDA_MAX_COMMS) u->comms[u->num_comms++] = id;
  pthread_mutex_unlock(&u->comms_lock);
}

/* Creates the communicator on every participant that does not know it yet:
 * queued on all of them first, then awaited, because a backend's comm_init
 * may wait for its peers. Called under order_lock. */
static ruda_status_t ensure_comm(ruda__device_t *const *devs, size_t n,
                                 const ruda_device_id_t *sorted, uint64_t id) {
  bool all_known = true;
  for (size_t i = 0; i < n && all_known; i++) {
    all_known = comm_known(&devs[i]->server->utilities, id);
  }
  if (all_known) return NULL;
  blocking_op_t *ops = ruda__calloc(n, sizeof *ops);
  if (!ops) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, n * sizeof *ops);
  for (size_t i = 0; i < n; i++) {
    ops[i].base.run = run_comm_init;
    ops[i].ids = sorted;
    ops[i].n = n;
    ruda__completion_init(&ops[i].done);
    ruda__device_submit(devs[i], &ops[i].base);
  }
  ruda_status_t first = NULL;
  for (size_t i = 0; i < n; i++) {
    ruda__completion_wait(&ops[i].done);
    if (!first) first = ops[i].status;
    else ruda_status_free(ops[i].status);
  }
  ruda__free(ops);
  if (first) return first;
  for (size_t i = 0; i < n; i++) comm_record(&devs[i]->server->utilities, id);
  return NULL;
}

static ruda_status_t invalid(const char *fmt, const char *detail) {
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, fmt, detail);
}

/* The device of a client, checked for collectives and entered
 * (ruda__device_enter: its server stays alive until ruda__device_leave).
 * On error nothing is entered. */
static ruda_status_t comm_device(ruda_client_t *c, ruda__device_t **out) {
  const ruda__kernel_scope_t *k = ruda__kernel_scope_current();
  if (k) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "a collective called from inside kernel '%s': a kernel cannot call "
                              "ruda client functions", k->name);
  }
  ruda_status_t s = ruda__device_get(ruda_client_device(c), out);
  if (s) return s;
  ruda__device_t *d = *out;
  if (ruda__device_on_worker(d)) {
    return invalid("%s: a collective cannot be called from a device worker "
                   "(ruda_client_exclusive or ruda_client_profile)", "collective");
  }
  if (!ruda__device_enter(d)) return shut_down(d);
  ruda__server_t *srv = d->server;
  if (!srv->vt->comm_enabled || !srv->vt->all_reduce || !srv->vt->comm_init ||
      !srv->vt->sync_collective) {
    ruda__device_leave(d);
    return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,
                              "the %s backend has no collectives", d->backend->name);
  }
  return NULL;
}

static void leave_all(ruda__device_t *const *devs, size_t n) {
  for (size_t i = 0; i < n; i++) ruda__device_leave(devs[i]);
}

ruda_status_t ruda_client_all_reduce(ruda_client_t *const *clients, size_t n,
                                     const ruda_handle_t *src, const ruda_handle_t *dst,
                                     ruda_elem_type_t dtype, ruda_reduce_op_t op) {
  if (!clients || !src || !dst) return invalid("%s: NULL argument", "ruda_client_all_reduce");
  if (n == 0 || n > RUDA__COMM_MAX_DEVICES) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_client_all_reduce: %zu devices, 1 to %d are allowed", n,
                              RUDA__COMM_MAX_DEVICES);
  }
  if (op != RUDA_REDUCE_SUM && op != RUDA_REDUCE_MEAN) {
    return invalid("%s: unknown reduce op", "ruda_client_all_reduce");
  }
  if ((unsigned)dtype >= RUDA_ELEM_COUNT_ || !ruda__reduce_dtype_supported(dtype)) {
    const char *name = (unsigned)dtype < RUDA_ELEM_COUNT_ ? ruda_elem_type_name(dtype) : NULL;
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "ruda_client_all_reduce: element type %s is not supported "
                              "(f64, f32, f16, bf16, i8, i32, i64, u8, u32, u64)",
                              name ? name : "(unknown)");
  }
  size_t esize = ruda_elem_type_size(dtype);
  uint64_t bytes = 0;
  ruda_device_id_t ids[RUDA__COMM_MAX_DEVICES];
  for (size_t i = 0; i < n; i++) {
    if (!clients[i]) return invalid("%s: NULL client", "ruda_client_all_reduce");
    ruda_status_t hs = ruda__handle_check(&src[i], ruda_client_device(clients[i]),
                                          "ruda_client_all_reduce, src");
    if (!hs)
      hs = ruda__handle_check(&dst[i], ruda_client_device(clients[i]),
                              "ruda_client_all_reduce, dst");
    if (hs) return hs;
    uint64_t sb = ruda_handle_size_in_used(&src[i]), db = ruda_handle_size_in_used(&dst[i]);
    if (i == 0) bytes = sb;
    if (sb != bytes || db != bytes || bytes % esize) {
      return ruda_status_create(
          RUDA_ERR_INVALID_ARGUMENT,
          "ruda_client_all_reduce: device %zu has %llu bytes in src and %llu in dst, device 0 "
          "has %llu; all must be equal and a multiple of %zu (%s)",
          i, (unsigned long long)sb, (unsigned long long)db, (unsigned long long)bytes, esize,
          ruda_elem_type_name(dtype));
    }
    ids[i] = ruda_client_device(clients[i]);
    if (ids[i].type_id != ids[0].type_id) {
      return invalid("%s: the devices are of different types", "ruda_client_all_reduce");
    }
  }
  ruda_device_id_t sorted[RUDA__COMM_MAX_DEVICES];
  memcpy(sorted, ids, n * sizeof *ids);
  ruda__comm_sort_ids(sorted, n);
  for (size_t i = 1; i < n; i++) {
    if (ruda__comm_device_cmp(sorted[i - 1], sorted[i]) == 0) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "ruda_client_all_reduce: %s:%u is listed twice",
                                ruda_device_type_name(sorted[i].type_id), sorted[i].index_id);
    }
  }
  uint64_t id = ruda__comm_id(sorted, n);
  /* Every participant is entered until its op is queued: ruda_shutdown()
   * then queues its stops after the whole collective, never between. */
  ruda__device_t *devs[RUDA__COMM_MAX_DEVICES];
  for (size_t i = 0; i < n; i++) {
    ruda_status_t s = comm_device(clients[i], &devs[i]);
    if (s) {
      leave_all(devs, i);
      return s;
    }
  }

  /* Allocate every op first: once one is queued, all must be. */
  reduce_op_t *ops[RUDA__COMM_MAX_DEVICES];
  for (size_t i = 0; i < n; i++) {
    ops[i] = ruda__calloc(1, sizeof(reduce_op_t) + n * sizeof(ruda_device_id_t));
    if (!ops[i]) {
      for (size_t k = 0; k < i; k++) ruda__free(ops[k]);
      leave_all(devs, n);
      return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof(reduce_op_t));
    }
  }
  pthread_mutex_lock(&order_lock);
  ruda_status_t s = ensure_comm(devs, n, sorted, id);
  if (s) {
    pthread_mutex_unlock(&order_lock);
    for (size_t i = 0; i < n; i++) ruda__free(ops[i]);
    leave_all(devs, n);
    return s;
  }
  for (size_t i = 0; i < n; i++) {
    reduce_op_t *r = ops[i];
    r->base.run = run_reduce;
    r->base.stream = ruda_client_stream(clients[i]);
    r->src = ruda_handle_binding(&src[i]);
    r->dst = ruda_handle_binding(&dst[i]);
    r->dtype = dtype;
    r->op = op;
    r->n = n;
    memcpy(r->ids, sorted, n * sizeof *sorted);
    ruda__device_submit(devs[i], &r->base);
  }
  pthread_mutex_unlock(&order_lock);
  leave_all(devs, n);
  return NULL;
}

ruda_status_t ruda_client_sync_collective(ruda_client_t *c) {
  if (!c) return invalid("%s: NULL client", "ruda_client_sync_collective");
  ruda__device_t *d;
  ruda_status_t s = comm_device(c, &d);
  if (s) return s;
  blocking_op_t op;
  memset(&op, 0, sizeof op);
  op.base.run = run_sync_collective;
  op.base.stream = ruda_client_stream(c);
  ruda__completion_init(&op.done);
  ruda__device_submit(d, &op.base);
  ruda__completion_wait(&op.done);
  ruda__device_leave(d);
  return op.status;
}
