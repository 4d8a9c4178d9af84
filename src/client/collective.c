/* Collectives and send/recv on the client side (include/ruda/comm.h):
 * validation, the communicator of each device set, and one queued
 * operation per participant; plus the entry points of the MPI transport
 * (client/collective.h).
 *
 * Deadlock freedom: an operation blocks its worker until every participant
 * reaches it, so every device must see the operations in one order. All of
 * them are therefore queued under one process-wide lock; whatever operation
 * comes first in that order finds all of its participants at it. A
 * send/recv is an operation of the two devices' communicator like any
 * other.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "client/client_internal.h"
#include "client/collective.h"
#include "client/device.h"
#include "comm/comm_id.h"
#include "ruda/comm.h"
#include "ruda/log.h"
#include "server/trace.h"

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;

static bool handle_empty(const ruda_handle_t *h) { return !h || ruda_handle_is_empty(h); }

static ruda_status_t invalid(const char *fn, const char *what) {
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: %s", fn, what);
}

/* ---- Queued operations ---- */

typedef struct coll_op {
  ruda__op_t base;
  ruda__coll_t coll; /* bindings owned by the op */
  ruda_device_id_t ids[];
} coll_op_t;

static void run_coll(ruda__device_t *d, ruda__op_t *op) {
  coll_op_t *o = (coll_op_t *)op;
  ruda__server_t *s = d->server;
  if (s) s->vt->collective(s, &o->coll, op->stream);
  ruda_binding_release(&o->coll.src.binding);
  ruda_binding_release(&o->coll.dst);
  ruda__free(o);
}

static coll_op_t *coll_op_new(size_t nids) {
  return ruda__calloc(1, sizeof(coll_op_t) + nids * sizeof(ruda_device_id_t));
}

/* ---- Blocking calls on a device's worker ---- */

typedef struct comm_init_call {
  const ruda__comm_peers_t *peers;
  const void *token;
  size_t token_len;
} comm_init_call_t;

static ruda_status_t do_comm_init(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  comm_init_call_t *c = ctx;
  return s->vt->comm_init(s, c->peers, c->token, c->token_len);
}

typedef struct comm_token_call {
  void *out;
  size_t cap, *out_len;
} comm_token_call_t;

static ruda_status_t do_comm_token(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  comm_token_call_t *c = ctx;
  return s->vt->comm_token(s, c->out, c->cap, c->out_len);
}

static ruda_status_t do_comm_destroy(ruda__server_t *s, ruda_stream_id_t st, void *id) {
  return s->vt->comm_destroy(s, *(const uint64_t *)id);
}

static ruda_status_t do_sync_collective(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  return s->vt->sync_collective(s, st);
}

/* ---- Communicators of device sets ---- */

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
  ruda__call_t *calls = ruda__calloc(n, sizeof *calls);
  comm_init_call_t *inits = ruda__calloc(n, sizeof *inits);
  ruda__comm_peers_t *peers = ruda__calloc(n, sizeof *peers);
  if (!calls || !inits || !peers) {
    ruda__free(calls);
    ruda__free(inits);
    ruda__free(peers);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY,
                            n * (sizeof *calls + sizeof *inits + sizeof *peers));
  }
  for (size_t i = 0; i < n; i++) {
    peers[i] = (ruda__comm_peers_t){id, (uint32_t)ruda__comm_rank(sorted, n, devs[i]->id),
                                    (uint32_t)n, sorted};
    inits[i].peers = &peers[i];
    ruda__device_call_start(devs[i], (ruda_stream_id_t){0}, do_comm_init, &inits[i], &calls[i]);
  }
  ruda_status_t first = NULL;
  for (size_t i = 0; i < n; i++) {
    ruda_status_t st = ruda__device_call_wait(&calls[i]);
    if (!first) first = st;
    else ruda_status_free(st);
  }
  ruda__free(calls);
  ruda__free(inits);
  ruda__free(peers);
  if (first) return first;
  for (size_t i = 0; i < n; i++) comm_record(&devs[i]->server->utilities, id);
  return NULL;
}

/* The device of a client, checked for collectives and entered
 * (ruda__device_enter: its server stays alive until ruda__device_leave, so
 * that ruda_shutdown() stops no participant half-way through a collective).
 * On error nothing is entered. */
static ruda_status_t comm_device(const char *fn, ruda_client_t *c, ruda__device_t **out) {
  ruda_status_t s = ruda__device_refuse_in_kernel(fn);
  if (s) return s;
  s = ruda__device_get(ruda_client_device(c), out);
  if (s) return s;
  ruda__device_t *d = *out;
  if (ruda__device_on_worker(d)) {
    return invalid(fn, "a collective cannot be called from a device worker "
                       "(ruda_client_exclusive or ruda_client_profile)");
  }
  s = ruda__device_begin(d, fn);
  if (s) return s;
  const ruda__server_vtable_t *vt = d->server->vt;
  if (!vt->comm_enabled || !vt->collective || !vt->comm_init || !vt->sync_collective) {
    ruda__device_end(d);
    return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,
                              "%s: the %s backend has no collectives", fn, d->backend->name);
  }
  return NULL;
}

static ruda_status_t check_dtype(const char *fn, const ruda__device_t *d, ruda_elem_type_t dtype,
                                 ruda_reduce_op_t op) {
  if ((unsigned)op > RUDA_REDUCE_MAX) return invalid(fn, "unknown reduce op");
  uint64_t types = d->server->vt->comm_reduce_types;
  if ((unsigned)dtype < RUDA_ELEM_COUNT_ && (types >> dtype & 1u)) return NULL;
  const char *name = (unsigned)dtype < RUDA_ELEM_COUNT_ ? ruda_elem_type_name(dtype) : NULL;
  char list[256];
  ruda__elem_types_format(types, list, sizeof list);
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "%s: the %s backend cannot reduce %s (it reduces %s)", fn,
                            d->backend->name, name ? name : "(unknown element type)",
                            list[0] ? list : "nothing");
}

static void leave_all(ruda__device_t *const *devs, size_t n) {
  for (size_t i = 0; i < n; i++) ruda__device_end(devs[i]);
}

/* The devices of n clients: checked, of one type, none twice, entered
 * (the caller leaves them with leave_all once its operations are queued);
 * sorted ids and the communicator id. On error nothing stays entered. */
static ruda_status_t devices_of(const char *fn, ruda_client_t *const *clients, size_t n,
                                ruda__device_t **devs, ruda_device_id_t *sorted, uint64_t *id) {
  if (n == 0 || n > RUDA__COMM_MAX_DEVICES) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: %zu devices, 1 to %d are allowed",
                              fn, n, RUDA__COMM_MAX_DEVICES);
  }
  for (size_t i = 0; i < n; i++) {
    if (!clients[i]) return invalid(fn, "NULL client");
    sorted[i] = ruda_client_device(clients[i]);
    if (sorted[i].type_id != sorted[0].type_id) {
      return invalid(fn, "the devices are of different types");
    }
  }
  for (size_t i = 0; i < n; i++) {
    ruda_status_t s = comm_device(fn, clients[i], &devs[i]);
    if (s) {
      leave_all(devs, i);
      return s;
    }
  }
  ruda__comm_sort_ids(sorted, n);
  for (size_t i = 1; i < n; i++) {
    if (ruda__comm_device_cmp(sorted[i - 1], sorted[i]) == 0) {
      leave_all(devs, n);
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: %s:%u is listed twice", fn,
                                ruda_device_type_name(sorted[i].type_id), sorted[i].index_id);
    }
  }
  *id = ruda__comm_id(sorted, n);
  return NULL;
}

/* Queues one operation per participant under the order lock, after making
 * sure their communicator exists. Takes every ops[i] (queued or freed). */
static ruda_status_t queue_all(ruda__device_t *const *devs, size_t n,
                               const ruda_device_id_t *sorted, uint64_t id, coll_op_t **ops) {
  pthread_mutex_lock(&order_lock);
  ruda_status_t s = ensure_comm(devs, n, sorted, id);
  if (s) {
    pthread_mutex_unlock(&order_lock);
    for (size_t i = 0; i < n; i++) {
      ruda_binding_release(&ops[i]->coll.src.binding);
      ruda_binding_release(&ops[i]->coll.dst);
      ruda__free(ops[i]);
    }
    return s;
  }
  for (size_t i = 0; i < n; i++) ruda__device_submit(devs[i], &ops[i]->base);
  pthread_mutex_unlock(&order_lock);
  return NULL;
}

/* The operation of clients[i] over `n` participants. */
static void fill_op(coll_op_t *o, ruda_client_t *client, ruda__coll_kind_t kind,
                    const ruda_device_id_t *sorted, size_t n, uint64_t id) {
  o->base.run = run_coll;
  o->base.stream = ruda_client_stream(client);
  memcpy(o->ids, sorted, n * sizeof *sorted);
  o->coll.kind = kind;
  o->coll.peers.id = id;
  o->coll.peers.size = (uint32_t)n;
  o->coll.peers.ids = o->ids;
  o->coll.peers.rank = (uint32_t)ruda__comm_rank(sorted, n, ruda_client_device(client));
  o->coll.dtype = RUDA_ELEM_U8;
}

/* A contiguous descriptor of a whole view: `count` elements of `esize`. */
static ruda__copy_desc_t flat_desc(const ruda_handle_t *h, uint64_t count, size_t esize) {
  ruda__copy_desc_t d;
  memset(&d, 0, sizeof d);
  if (!handle_empty(h)) d.binding = ruda_handle_binding(h);
  d.shape.rank = 1;
  d.shape.dims[0] = count;
  d.strides.rank = 1;
  d.strides.values[0] = 1;
  d.elem_size = esize;
  return d;
}

typedef struct coll_args {
  const char *fn;
  ruda__coll_kind_t kind;
  const ruda_handle_t *src; /* NULL for broadcast */
  const ruda_handle_t *dst;
  ruda_elem_type_t dtype;
  ruda_reduce_op_t op;
  size_t root;
} coll_args_t;

static ruda_status_t collective_entered(ruda_client_t *const *clients, size_t n,
                                        const coll_args_t *a, ruda__device_t *const *devs,
                                        const ruda_device_id_t *sorted, uint64_t id);

/* The four collectives of n devices: validates, then queues. */
static ruda_status_t collective(ruda_client_t *const *clients, size_t n, const coll_args_t *a) {
  if (!clients || !a->dst || (a->kind != RUDA__COLL_BROADCAST && !a->src)) {
    return invalid(a->fn, "NULL argument");
  }
  ruda__device_t *devs[RUDA__COMM_MAX_DEVICES];
  ruda_device_id_t sorted[RUDA__COMM_MAX_DEVICES];
  uint64_t id = 0;
  ruda_status_t s = devices_of(a->fn, clients, n, devs, sorted, &id);
  if (s) return s;
  s = collective_entered(clients, n, a, devs, sorted, id);
  leave_all(devs, n);
  return s;
}

/* The rest of collective(), with every participant entered. */
static ruda_status_t collective_entered(ruda_client_t *const *clients, size_t n,
                                        const coll_args_t *a, ruda__device_t *const *devs,
                                        const ruda_device_id_t *sorted, uint64_t id) {
  const char *fn = a->fn;
  ruda_status_t s = NULL;
  bool reduces = a->kind == RUDA__COLL_ALL_REDUCE || a->kind == RUDA__COLL_REDUCE_SCATTER;
  if (reduces && (s = check_dtype(fn, devs[0], a->dtype, a->op))) return s;
  if (a->kind == RUDA__COLL_BROADCAST && a->root >= n) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: root %zu of %zu devices", fn,
                              a->root, n);
  }
  ruda_elem_type_t dtype = reduces ? a->dtype : RUDA_ELEM_U8;
  size_t esize = ruda_elem_type_size(dtype);
  /* Per device: in = bytes of src, out = bytes of dst; both follow from
   * the unit B (the bytes of one rank's block). */
  uint64_t unit = 0;
  for (size_t i = 0; i < n; i++) {
    if (handle_empty(&a->dst[i]) || (a->src && handle_empty(&a->src[i]))) {
      return invalid(fn, "empty handle");
    }
    /* Live, and of the device it is given for (InvalidHandle otherwise). */
    ruda_device_id_t dev = ruda_client_device(clients[i]);
    s = a->src ? ruda__handle_check(&a->src[i], dev, fn) : NULL;
    if (!s) s = ruda__handle_check(&a->dst[i], dev, fn);
    if (s) return s;
    uint64_t in = a->src ? ruda_handle_size_in_used(&a->src[i]) : 0;
    uint64_t out = ruda_handle_size_in_used(&a->dst[i]);
    uint64_t b = a->kind == RUDA__COLL_REDUCE_SCATTER ? out : a->src ? in : out;
    if (i == 0) unit = b;
    uint64_t want_in = a->src ? unit : 0, want_out = unit, times;
    bool overflow = __builtin_mul_overflow(unit, (uint64_t)n, &times);
    if (a->kind == RUDA__COLL_ALL_GATHER) want_out = times;
    if (a->kind == RUDA__COLL_REDUCE_SCATTER) want_in = times;
    if (overflow || b != unit || in != want_in || out != want_out || unit % esize) {
      return ruda_status_create(
          RUDA_ERR_INVALID_ARGUMENT,
          "%s: device %zu has %llu bytes in src and %llu in dst; with %llu-byte blocks "
          "(device 0) it needs %llu and %llu, blocks a multiple of %zu (%s)",
          fn, i, (unsigned long long)in, (unsigned long long)out, (unsigned long long)unit,
          (unsigned long long)want_in, (unsigned long long)want_out, esize,
          ruda_elem_type_name(dtype));
    }
  }
  /* Allocate every op first: once one is queued, all must be. */
  coll_op_t *ops[RUDA__COMM_MAX_DEVICES];
  for (size_t i = 0; i < n; i++) {
    ops[i] = coll_op_new(n);
    if (!ops[i]) {
      for (size_t k = 0; k < i; k++) {
        ruda_binding_release(&ops[k]->coll.src.binding);
        ruda_binding_release(&ops[k]->coll.dst);
        ruda__free(ops[k]);
      }
      return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof(coll_op_t));
    }
    fill_op(ops[i], clients[i], a->kind, sorted, n, id);
    ruda__coll_t *c = &ops[i]->coll;
    c->dtype = dtype;
    c->op = a->op;
    c->count = unit / esize;
    if (a->src) c->src = flat_desc(&a->src[i], ruda_handle_size_in_used(&a->src[i]) / esize, esize);
    c->dst = ruda_handle_binding(&a->dst[i]);
    if (a->kind == RUDA__COLL_BROADCAST) {
      c->root = (uint32_t)ruda__comm_rank(sorted, n, ruda_client_device(clients[a->root]));
    }
  }
  return queue_all(devs, n, sorted, id, ops);
}

ruda_status_t ruda_client_all_reduce(ruda_client_t *const *clients, size_t n,
                                     const ruda_handle_t *src, const ruda_handle_t *dst,
                                     ruda_elem_type_t dtype, ruda_reduce_op_t op) {
  coll_args_t a = {"ruda_client_all_reduce", RUDA__COLL_ALL_REDUCE, src, dst, dtype, op, 0};
  return collective(clients, n, &a);
}

ruda_status_t ruda_client_broadcast(ruda_client_t *const *clients, size_t n, size_t root,
                                    const ruda_handle_t *buf) {
  coll_args_t a = {"ruda_client_broadcast", RUDA__COLL_BROADCAST, NULL, buf, RUDA_ELEM_U8,
                   RUDA_REDUCE_SUM, root};
  return collective(clients, n, &a);
}

ruda_status_t ruda_client_all_gather(ruda_client_t *const *clients, size_t n,
                                     const ruda_handle_t *src, const ruda_handle_t *dst) {
  coll_args_t a = {"ruda_client_all_gather", RUDA__COLL_ALL_GATHER, src, dst, RUDA_ELEM_U8,
                   RUDA_REDUCE_SUM, 0};
  return collective(clients, n, &a);
}

ruda_status_t ruda_client_reduce_scatter(ruda_client_t *const *clients, size_t n,
                                         const ruda_handle_t *src, const ruda_handle_t *dst,
                                         ruda_elem_type_t dtype, ruda_reduce_op_t op) {
  coll_args_t a = {"ruda_client_reduce_scatter", RUDA__COLL_REDUCE_SCATTER, src, dst, dtype, op,
                   0};
  return collective(clients, n, &a);
}

/* ---- Send/recv ---- */

/* Checks a view description against a handle of `bytes`: the number of
 * elements and whether it is contiguous. */
static ruda_status_t check_view(const char *fn, const ruda_shape_t *shape,
                                const ruda_strides_t *strides, size_t esize, uint64_t bytes,
                                uint64_t *out_count, bool *out_contiguous) {
  if (shape->rank > RUDA_MAX_RANK) return invalid(fn, "shape rank above RUDA_MAX_RANK");
  if (strides->rank != shape->rank) return invalid(fn, "the strides' rank differs from the shape's");
  uint64_t count = 1, last = 0;
  bool empty = false;
  for (uint32_t i = 0; i < shape->rank; i++) {
    uint64_t step;
    if (shape->dims[i] == 0) empty = true;
    if (__builtin_mul_overflow(count, shape->dims[i], &count) ||
        (shape->dims[i] &&
         (__builtin_mul_overflow(shape->dims[i] - 1, strides->values[i], &step) ||
          __builtin_add_overflow(last, step, &last)))) {
      return invalid(fn, "the view's size overflows");
    }
  }
  uint64_t extent = 0;
  if (!empty && (__builtin_add_overflow(last, 1, &extent) ||
                 __builtin_mul_overflow(extent, (uint64_t)esize, &extent))) {
    return invalid(fn, "the view's size overflows");
  }
  uint64_t total;
  if (__builtin_mul_overflow(count, (uint64_t)esize, &total)) {
    return invalid(fn, "the view's size overflows");
  }
  if (extent > bytes) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: the view spans %llu bytes, the handle has %llu", fn,
                              (unsigned long long)extent, (unsigned long long)bytes);
  }
  *out_count = count;
  *out_contiguous = shape->rank == 0 || ruda_strides_is_contiguous(shape, strides);
  return NULL;
}

static ruda_status_t send_recv_entered(ruda_client_t *from, const ruda_handle_t *src,
                                       const ruda_shape_t *shape, const ruda_strides_t *strides,
                                       ruda_elem_type_t dtype, ruda_client_t *to,
                                       ruda_handle_t *out, ruda__device_t *const *devs,
                                       const ruda_device_id_t *sorted, uint64_t id);

ruda_status_t ruda_client_send_recv(ruda_client_t *from, const ruda_handle_t *src,
                                    const ruda_shape_t *shape, const ruda_strides_t *strides,
                                    ruda_elem_type_t dtype, ruda_client_t *to,
                                    ruda_handle_t *out) {
  const char *fn = "ruda_client_send_recv";
  if (!from || !to || !src || !out) return invalid(fn, "NULL argument");
  memset(out, 0, sizeof *out);
  if (handle_empty(src)) return invalid(fn, "empty handle");
  if (!shape != !strides) return invalid(fn, "give both shape and strides, or neither");
  ruda_status_t hs = ruda__handle_check(src, ruda_client_device(from), fn);
  if (hs) return hs;
  ruda_device_id_t a = ruda_client_device(from), b = ruda_client_device(to);
  if (ruda__comm_device_cmp(a, b) == 0) {
    return invalid(fn, "the sender and the receiver are the same device "
                       "(ruda_client_to_client copies within a device)");
  }
  ruda_client_t *pair[2] = {from, to};
  ruda__device_t *devs[2];
  ruda_device_id_t sorted[2];
  uint64_t id = 0;
  ruda_status_t s = devices_of(fn, pair, 2, devs, sorted, &id);
  if (s) return s;
  s = send_recv_entered(from, src, shape, strides, dtype, to, out, devs, sorted, id);
  leave_all(devs, 2);
  return s;
}

/* The rest of ruda_client_send_recv, with both devices entered. */
static ruda_status_t send_recv_entered(ruda_client_t *from, const ruda_handle_t *src,
                                       const ruda_shape_t *shape, const ruda_strides_t *strides,
                                       ruda_elem_type_t dtype, ruda_client_t *to,
                                       ruda_handle_t *out, ruda__device_t *const *devs,
                                       const ruda_device_id_t *sorted, uint64_t id) {
  const char *fn = "ruda_client_send_recv";
  ruda_device_id_t a = ruda_client_device(from);
  ruda_status_t s = NULL;
  uint64_t bytes = ruda_handle_size_in_used(src);
  ruda__copy_desc_t desc;
  uint64_t count = bytes;
  size_t esize = 1;
  if (shape) {
    if ((unsigned)dtype >= RUDA_ELEM_COUNT_) return invalid(fn, "unknown element type");
    esize = ruda_elem_type_size(dtype);
    bool contiguous = true;
    s = check_view(fn, shape, strides, esize, bytes, &count, &contiguous);
    if (s) return s;
    if (!contiguous && !devs[0]->server->vt->comm_strided_send) {
      return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                                "%s: the %s backend sends contiguous views only", fn,
                                devs[0]->backend->name);
    }
    memset(&desc, 0, sizeof desc);
    desc.binding = ruda_handle_binding(src);
    desc.shape = *shape;
    desc.strides = *strides;
    desc.elem_size = esize;
  } else {
    dtype = RUDA_ELEM_U8;
    desc = flat_desc(src, bytes, 1);
  }
  uint64_t recv_bytes = count * esize; /* checked by check_view */
  coll_op_t *send = coll_op_new(2), *recv = coll_op_new(2);
  ruda_status_t e = send && recv ? ruda_client_empty(to, recv_bytes, out)
                                 : ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *send);
  if (e) {
    ruda_binding_release(&desc.binding);
    ruda__free(send);
    ruda__free(recv);
    return e;
  }
  uint32_t from_rank = (uint32_t)ruda__comm_rank(sorted, 2, a);
  fill_op(send, from, RUDA__COLL_SEND, sorted, 2, id);
  send->coll.src = desc;
  send->coll.count = count;
  send->coll.dtype = dtype;
  send->coll.peer = 1 - from_rank;
  fill_op(recv, to, RUDA__COLL_RECV, sorted, 2, id);
  recv->coll.dst = ruda_handle_binding(out);
  recv->coll.count = count;
  recv->coll.dtype = dtype;
  recv->coll.peer = from_rank;
  ruda__device_t *qdevs[2] = {devs[0], devs[1]};
  coll_op_t *ops[2] = {send, recv};
  s = queue_all(qdevs, 2, sorted, id, ops);
  if (s) ruda_handle_release(out);
  return s;
}

ruda_status_t ruda_client_to_client(ruda_client_t *from, const ruda_handle_t *src,
                                    ruda_client_t *to, ruda_handle_t *out) {
  const char *fn = "ruda_client_to_client";
  if (!from || !to || !src || !out) return invalid(fn, "NULL argument");
  memset(out, 0, sizeof *out);
  if (handle_empty(src)) return invalid(fn, "empty handle");
  ruda_device_id_t a = ruda_client_device(from), b = ruda_client_device(to);
  ruda_status_t s = ruda__device_refuse_in_kernel(fn);
  if (!s) s = ruda__handle_check(src, a, fn);
  if (s) return s;
  ruda__device_t *da, *db;
  s = ruda__device_get(a, &da);
  if (!s) s = ruda__device_get(b, &db);
  if (s) return s;
  if (ruda__device_on_worker(da) || ruda__device_on_worker(db)) {
    return invalid(fn, "called from a device worker");
  }
  s = ruda__device_begin(da, fn);
  if (s) return s;
  s = ruda__device_begin(db, fn);
  if (s) {
    ruda__device_end(da);
    return s;
  }
  const ruda__server_vtable_t *va = da->server->vt, *vb = db->server->vt;
  bool comm = a.type_id == b.type_id && ruda__comm_device_cmp(a, b) != 0 && va->comm_enabled &&
              vb->comm_enabled && va->collective && va->comm_init;
  ruda__device_end(db);
  ruda__device_end(da);
  if (comm) {
    s = ruda_client_send_recv(from, src, NULL, NULL, RUDA_ELEM_U8, to, out);
    /* A transport the backend has but this machine lacks (NCCL not
     * installed): through the host instead. */
    if (!s || ruda_status_kind(s) != RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION) return s;
    ruda_status_free(s);
  }
  /* Through the host. */
  uint64_t bytes = ruda_handle_size_in_used(src);
  if (bytes > SIZE_MAX) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, bytes);
  void *host = ruda__malloc(bytes ? (size_t)bytes : 1);
  if (!host) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, bytes);
  s = ruda_client_read(from, src, host, bytes);
  if (!s) s = ruda_client_create_buffer(to, host, bytes, out);
  ruda__free(host);
  return s;
}

ruda_status_t ruda_client_sync_collective(ruda_client_t *c) {
  if (!c) return invalid("ruda_client_sync_collective", "NULL client");
  ruda__device_t *d;
  ruda_status_t s = comm_device("ruda_client_sync_collective", c, &d);
  if (s) return s;
  s = ruda__device_call(d, RUDA__CALL_QUEUED, ruda__client_stream(c), do_sync_collective, NULL);
  ruda__device_end(d);
  return s;
}

/* ---- The MPI transport's entry points (client/collective.h) ---- */

/* RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION: the backend of `d` lacks what
 * the call needs (`lacks` completes "the <backend> backend ..."). */
static ruda_status_t unsupported(const ruda__device_t *d, const char *lacks) {
  return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, "the %s backend %s",
                            d->backend->name, lacks);
}

/* The device of `c`, entered (ruda__device_begin: its server stays alive
 * until the caller's ruda__device_end). On error nothing is entered. */
static ruda_status_t usable_device(ruda_client_t *c, const char *who, ruda__device_t **out) {
  if (!c) return invalid(who, "NULL client");
  ruda_status_t s = ruda__device_refuse_in_kernel(who);
  if (s) return s;
  s = ruda__device_get(ruda_client_device(c), out);
  if (s) return s;
  if (ruda__device_on_worker(*out)) {
    return invalid(who, "called from a device worker (ruda_client_exclusive or "
                        "ruda_client_profile)");
  }
  return ruda__device_begin(*out, who);
}

ruda_status_t ruda__client_comm_caps(ruda_client_t *c, ruda__comm_caps_t *out) {
  memset(out, 0, sizeof *out);
  ruda__device_t *d;
  ruda_status_t s = usable_device(c, "collective", &d);
  if (s) return s;
  const ruda__server_vtable_t *vt = d->server->vt;
  out->backend = d->backend->name;
  out->collectives = vt->comm_enabled && vt->collective && vt->comm_init;
  out->tokens = out->collectives && vt->comm_token;
  out->host_call = vt->host_call != NULL;
  out->strided_send = vt->comm_strided_send;
  out->reduce_types = vt->comm_reduce_types;
  ruda__device_end(d);
  return NULL;
}

static bool has_comm_token(const ruda__server_vtable_t *vt) { return vt->comm_token != NULL; }
static bool has_comm_init(const ruda__server_vtable_t *vt) { return vt->comm_init != NULL; }
static bool has_comm_destroy(const ruda__server_vtable_t *vt) { return vt->comm_destroy != NULL; }

/* Runs fn(ctx) on the stream of `c`, queued after its work, when the
 * backend has what `has` asks for; otherwise nothing runs and the result
 * is RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION ("the <backend> backend
 * <lacks>"), or NULL where `lacks` is NULL (nothing to do). */
static ruda_status_t transport_call(ruda_client_t *c, bool (*has)(const ruda__server_vtable_t *),
                                    const char *lacks, ruda__call_fn fn, void *ctx) {
  ruda__device_t *d;
  ruda_status_t s = usable_device(c, "collective", &d);
  if (s) return s;
  if (has(d->server->vt))
    s = ruda__device_call(d, RUDA__CALL_QUEUED, ruda__client_stream(c), fn, ctx);
  else if (lacks)
    s = unsupported(d, lacks);
  ruda__device_end(d);
  return s;
}

ruda_status_t ruda__client_comm_token(ruda_client_t *c, void *out, size_t cap, size_t *out_len) {
  comm_token_call_t call = {out, cap, out_len};
  return transport_call(c, has_comm_token, "has no communicators across processes", do_comm_token,
                        &call);
}

ruda_status_t ruda__client_comm_init(ruda_client_t *c, const ruda__comm_peers_t *peers,
                                     const void *token, size_t token_len) {
  comm_init_call_t call = {peers, token, token_len};
  return transport_call(c, has_comm_init, "has no collectives", do_comm_init, &call);
}

ruda_status_t ruda__client_comm_destroy(ruda_client_t *c, uint64_t id) {
  return transport_call(c, has_comm_destroy, NULL, do_comm_destroy, &id);
}

ruda_status_t ruda__client_collective_queue(ruda_client_t *c, const ruda__coll_t *coll) {
  ruda__device_t *d;
  ruda_status_t s = usable_device(c, "collective", &d);
  if (s) return s;
  if (!d->server->vt->collective) {
    s = unsupported(d, "has no collectives");
    ruda__device_end(d);
    return s;
  }
  coll_op_t *o = coll_op_new(0);
  if (!o) {
    ruda__device_end(d);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *o);
  }
  o->base.run = run_coll;
  o->base.stream = ruda__client_stream(c);
  o->coll = *coll;
  o->coll.peers.ids = NULL;
  o->coll.src.binding = ruda_binding_clone(&coll->src.binding);
  o->coll.dst = ruda_binding_clone(&coll->dst);
  ruda__device_submit(d, &o->base);
  ruda__device_end(d);
  return NULL;
}

typedef struct host_op {
  ruda__op_t base;
  ruda_binding_t src, dst;
  const char *name;
  ruda__host_fn fn;
  void *ctx;
  void (*ctx_free)(void *ctx);
} host_op_t;

static void run_host(ruda__device_t *d, ruda__op_t *op) {
  host_op_t *h = (host_op_t *)op;
  ruda__server_t *s = d->server;
  if (s) {
    s->vt->host_call(s, !ruda_binding_is_empty(&h->src) ? &h->src : NULL,
                     !ruda_binding_is_empty(&h->dst) ? &h->dst : NULL, h->name, h->fn,
                     h->ctx, op->stream);
  }
  if (h->ctx_free) h->ctx_free(h->ctx);
  ruda_binding_release(&h->src);
  ruda_binding_release(&h->dst);
  ruda__free(h);
}

ruda_status_t ruda__client_host_call(ruda_client_t *c, const ruda_handle_t *src,
                                     const ruda_handle_t *dst, const char *name,
                                     ruda__host_fn fn, void *ctx, void (*ctx_free)(void *ctx)) {
  ruda__device_t *d;
  ruda_status_t s = usable_device(c, "collective", &d);
  if (s) return s;
  if (!d->server->vt->host_call) {
    s = unsupported(d, "cannot hand its buffers to host code");
  } else if (!handle_empty(src)) {
    s = ruda__handle_check(src, d->id, "collective, src");
  }
  if (!s && !handle_empty(dst)) s = ruda__handle_check(dst, d->id, "collective, dst");
  host_op_t *h = s ? NULL : ruda__calloc(1, sizeof *h);
  if (!s && !h) s = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *h);
  if (s) {
    ruda__device_end(d);
    return s;
  }
  h->base.run = run_host;
  h->name = name ? name : "host_call";
  h->base.stream = ruda__client_stream(c);
  if (!handle_empty(src)) h->src = ruda_handle_binding(src);
  if (!handle_empty(dst)) h->dst = ruda_handle_binding(dst);
  h->fn = fn;
  h->ctx = ctx;
  h->ctx_free = ctx_free;
  ruda__device_submit(d, &h->base);
  ruda__device_end(d);
  return NULL;
}

typedef struct run_if_idle {
  void (*fn)(void *ctx);
  void *ctx;
} run_if_idle_t;

static ruda_status_t run_if_idle_fn(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  run_if_idle_t *r = ctx;
  r->fn(r->ctx);
  return NULL;
}

ruda_status_t ruda__client_run_if_idle(ruda_client_t *c, void (*fn)(void *ctx), void *ctx,
                                       bool *out_ran) {
  *out_ran = false;
  if (!c) return invalid("collective", "NULL client");
  ruda__device_t *d = c->dev;
  if (ruda__device_on_worker(d)) {
    return invalid("collective", "called from a device worker (ruda_client_exclusive or "
                                 "ruda_client_profile)");
  }
  ruda_status_t s = ruda__device_begin(d, "collective");
  if (s) return s;
  /* On the caller's thread only when nothing is queued or running, holding
   * the device's `running` lock like any operation (ruda__device_run_here):
   * fn then follows everything submitted before it. One op about to end (a
   * blocking call's caller wakes before the worker lets go) gets a
   * microsecond. */
  if (d->server->vt->completes_in_order && !ruda__trace_on()) {
    run_if_idle_t r = {fn, ctx};
    ruda_status_t ignored;
    uint64_t until = ruda__now_ns() + 1000;
    do {
      *out_ran = ruda__device_run_here(d, ruda__client_stream(c), run_if_idle_fn, &r, &ignored);
    } while (!*out_ran && ruda__now_ns() < until && (ruda__cpu_relax(), true));
  }
  ruda__device_end(d);
  return NULL;
}
