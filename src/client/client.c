/* The client: validates arguments, turns each call into an operation for
 * the device's worker and, for blocking calls, waits for its result.
 *
 * Non-blocking operations are heap-allocated and freed by the worker;
 * blocking ones live on the caller's stack until their completion fires. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "client/device.h"
#include "ruda/config.h"
#include "ruda/log.h"
#include "server/kernel_object.h"
#include "server/profile_summary.h"
#include "types/device_names.h"

struct ruda_client {
  atomic_uint refs;
  ruda__device_t *dev;
  bool fixed_stream;
  ruda_stream_id_t stream;
};

struct ruda_future {
  ruda__future_t *inner;  /* NULL when `early` holds the result */
  ruda_status_t early;
  ruda_binding_t *bindings; /* kept alive until completion */
  size_t num_bindings;
};

static ruda_status_t invalid(const char *what) {
  return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s", what);
}

/* ------------------------------------------------------------------------ */
/* Devices and clients                                                      */
/* ------------------------------------------------------------------------ */

const char *ruda_device_type_name(uint16_t type_id) {
  const ruda__backend_t *b = ruda__backend_for(type_id);
  return b ? b->name : ruda__device_type_builtin_name(type_id);
}

ruda_status_t ruda_device_parse(const char *text, ruda_device_id_t *out) {
  if (!text || !out) return invalid("ruda_device_parse: NULL argument");
  size_t name_len = strcspn(text, ":");
  const char *rest = text + name_len;
  uint16_t type = 0;
  const ruda__backend_t *b = ruda__backend_named(text, name_len);
  bool known = b ? (type = b->type_id, true) : ruda__device_type_builtin_id(text, name_len, &type);
  unsigned long index = 0;
  bool ok = known && name_len > 0;
  if (ok && *rest == ':') {
    char *end = NULL;
    ok = rest[1] >= '0' && rest[1] <= '9';
    if (ok) {
      index = strtoul(rest + 1, &end, 10);
      ok = !*end && index <= UINT16_MAX;
    }
  }
  if (!ok) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "'%s' is not a device name (cpu, cpu:N, cuda:N, opencl:N)", text);
  }
  out->type_id = type;
  out->index_id = (uint16_t)index;
  return NULL;
}

ruda_status_t ruda_device_count(uint16_t type_id, uint32_t *out) {
  if (!out) return invalid("ruda_device_count: NULL out");
  *out = 0;
  const ruda__backend_t *b = ruda__backend_for(type_id);
  if (b) return b->device_count(out);
  const char *known = ruda__device_type_builtin_name(type_id);
  if (known)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "the %s backend is not built into this ruda library", known);
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "no backend for device type %u", type_id);
}

ruda_status_t ruda_device_properties(ruda_device_id_t id, ruda_device_properties_t *out) {
  if (!out) return invalid("ruda_device_properties: NULL out");
  ruda__device_t *d;
  ruda_status_t s = ruda__device_get(id, &d);
  if (s) return s;
  *out = d->properties;
  return NULL;
}

static ruda_status_t client_new(ruda__device_t *d, bool fixed_stream, ruda_stream_id_t stream,
                                ruda_client_t **out) {
  ruda_client_t *c = ruda__calloc(1, sizeof *c);
  if (!c) return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating a client");
  atomic_init(&c->refs, 1);
  c->dev = d;
  c->fixed_stream = fixed_stream;
  c->stream = stream;
  *out = c;
  return NULL;
}

ruda_status_t ruda_client_create(ruda_device_id_t device, ruda_client_t **out) {
  if (!out) return invalid("ruda_client_create: NULL out");
  *out = NULL;
  ruda__device_t *d;
  ruda_status_t s = ruda__device_get(device, &d);
  if (s) return s;
  return client_new(d, false, (ruda_stream_id_t){0}, out);
}

ruda_status_t ruda_client_on_stream(ruda_client_t *c, ruda_stream_id_t stream,
                                    ruda_client_t **out) {
  if (!c || !out) return invalid("ruda_client_on_stream: NULL argument");
  *out = NULL;
  return client_new(c->dev, true, stream, out);
}

ruda_client_t *ruda_client_retain(ruda_client_t *c) {
  if (c) atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  return c;
}

void ruda_client_release(ruda_client_t *c) {
  if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) ruda__free(c);
}

ruda_device_id_t ruda_client_device(const ruda_client_t *c) { return c->dev->id; }

ruda_stream_id_t ruda_client_stream(const ruda_client_t *c) {
  return c->fixed_stream ? c->stream : ruda_stream_id_current();
}

const ruda_device_properties_t *ruda_client_properties(const ruda_client_t *c) {
  return &c->dev->properties;
}

uint64_t ruda_client_properties_checksum(const ruda_client_t *c) {
  return c->dev->properties_hash;
}

const char *ruda_client_info(const ruda_client_t *c) { return c->dev->info; }

ruda_bounds_check_mode_t ruda_client_check_mode(const ruda_client_t *c) {
  return c->dev->check_mode;
}

/* ------------------------------------------------------------------------ */
/* Futures                                                                  */
/* ------------------------------------------------------------------------ */

static void future_release_bindings(ruda_future_t *f) {
  for (size_t i = 0; i < f->num_bindings; i++) ruda_binding_release(&f->bindings[i]);
  ruda__free(f->bindings);
  f->bindings = NULL;
  f->num_bindings = 0;
}

ruda_status_t ruda_future_wait(ruda_future_t *f) {
  if (!f) return invalid("ruda_future_wait: NULL future");
  ruda_status_t s = f->early;
  if (f->inner) {
    s = f->inner->vt->wait(f->inner);
    f->inner->vt->destroy(f->inner);
  }
  future_release_bindings(f);
  ruda__free(f);
  return s;
}

bool ruda_future_poll(ruda_future_t *f) {
  if (!f) return true;
  return f->inner ? f->inner->vt->poll(f->inner) : true;
}

/* Wraps a server result into a public future; takes `inner`/`early` and the
 * bindings array. */
static ruda_status_t make_future(ruda__future_t *inner, ruda_status_t early,
                                 ruda_binding_t *bindings, size_t n, ruda_future_t **out) {
  ruda_future_t *f = ruda__calloc(1, sizeof *f);
  if (!f) {
    ruda_status_t s = early;
    if (inner) {
      s = inner->vt->wait(inner);
      inner->vt->destroy(inner);
      ruda_status_free(early);
    }
    for (size_t i = 0; i < n; i++) ruda_binding_release(&bindings[i]);
    ruda__free(bindings);
    *out = NULL;
    return s ? s : ruda_status_create(RUDA_ERR_IO_UNKNOWN, "out of host memory creating a future");
  }
  f->inner = inner;
  f->early = early;
  f->bindings = bindings;
  f->num_bindings = n;
  *out = f;
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Host buffers                                                             */
/* ------------------------------------------------------------------------ */

void ruda_bytes_release(ruda_bytes_t *b) {
  if (!b) return;
  if (b->release) b->release(b);
  memset(b, 0, sizeof *b);
}

static void bytes_free_native(ruda_bytes_t *b) { ruda__free(b->owner); }

ruda_status_t ruda_bytes_from_copy(const void *data, uint64_t size, ruda_bytes_t *out) {
  if (!out || (!data && size)) return invalid("ruda_bytes_from_copy: NULL argument");
  memset(out, 0, sizeof *out);
  void *p = ruda__malloc(size ? size : 1);
  if (!p) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  if (size) memcpy(p, data, size);
  out->data = p;
  out->size = size;
  out->property = RUDA_BYTES_NATIVE;
  out->release = bytes_free_native;
  out->owner = p;
  return NULL;
}

/* ------------------------------------------------------------------------ */
/* Blocking calls                                                           */
/* ------------------------------------------------------------------------ */

typedef enum call_kind {
  CALL_FLUSH,
  CALL_SYNC,
  CALL_READ,
  CALL_MEMORY_USAGE,
  CALL_GET_RESOURCE,
  CALL_STAGING,
  CALL_EXCLUSIVE,
  CALL_START_PROFILE,
  CALL_END_PROFILE,
  CALL_MEMORY_USAGE_DEVICE,
} call_kind_t;

typedef struct call_op {
  ruda__op_t base;
  ruda__completion_t done;
  call_kind_t kind;
  ruda_client_t *client;
  ruda_status_t status;
  /* inputs */
  const ruda__copy_desc_t *descs;
  void *const *dsts;
  size_t count;
  const uint64_t *sizes;
  const ruda_binding_t *binding;
  ruda_status_t (*fn)(ruda_client_t *, void *);
  void *ctx;
  ruda_profiling_token_t token;
  /* outputs */
  ruda__future_t *future;
  ruda_memory_usage_t usage;
  ruda_resource_t resource;
  ruda_bytes_t *bytes;
  ruda_profile_duration_t duration;
} call_op_t;

static ruda_status_t shut_down(const ruda__device_t *d) {
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "%s:%u was shut down (ruda_shutdown)",
                            d->backend->name, d->id.index_id);
}

static void run_call(ruda__device_t *d, ruda__op_t *op) {
  call_op_t *c = (call_op_t *)op;
  ruda__server_t *s = d->server;
  ruda_stream_id_t st = op->stream;
  if (!s) {
    c->status = shut_down(d);
    ruda__completion_signal(&c->done);
    return;
  }
  switch (c->kind) {
    case CALL_FLUSH: c->status = s->vt->flush(s, st); break;
    case CALL_SYNC: c->status = s->vt->sync(s, st, &c->future); break;
    case CALL_READ:
      c->status = s->vt->read(s, c->descs, c->dsts, c->count, st, &c->future);
      break;
    case CALL_MEMORY_USAGE: c->status = s->vt->memory_usage(s, st, &c->usage); break;
    case CALL_GET_RESOURCE:
      c->status = s->vt->get_resource(s, c->binding, st, &c->resource);
      break;
    case CALL_STAGING:
      c->status = s->vt->staging
                      ? s->vt->staging(s, c->sizes, c->count, st, c->bytes)
                      : ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,
                                           "the %s backend has no staging buffers", s->vt->name);
      break;
    case CALL_EXCLUSIVE: {
      /* Calls made by fn run inline on this thread with the caller's stream. */
      ruda_stream_id_t prev = ruda_stream_id_swap(st);
      c->status = c->fn(c->client, c->ctx);
      ruda_stream_id_swap(prev);
      break;
    }
    case CALL_START_PROFILE: c->status = s->vt->start_profile(s, st, &c->token); break;
    case CALL_END_PROFILE:
      c->status = s->vt->end_profile(s, st, c->token, &c->duration);
      break;
    case CALL_MEMORY_USAGE_DEVICE:
      c->status = ruda__server_memory_usage_device(s, &c->usage);
      break;
  }
  ruda__completion_signal(&c->done);
}

static void call_init(call_op_t *c, ruda_client_t *client, call_kind_t kind) {
  memset(c, 0, sizeof *c);
  c->base.run = run_call;
  c->base.stream = ruda_client_stream(client);
  c->client = client;
  c->kind = kind;
  ruda__completion_init(&c->done);
}

static ruda_status_t call(ruda_client_t *client, call_op_t *c) {
  ruda__device_submit(client->dev, &c->base);
  ruda__completion_wait(&c->done);
  return c->status;
}

/* Waits for a server future and destroys it. */
static ruda_status_t finish_future(ruda__future_t *f) {
  if (!f) return NULL;
  ruda_status_t s = f->vt->wait(f);
  f->vt->destroy(f);
  return s;
}

ruda_status_t ruda_client_flush(ruda_client_t *c) {
  if (!c) return invalid("ruda_client_flush: NULL client");
  if (ruda__device_quiet_after_progress(c->dev)) return NULL;
  call_op_t op;
  call_init(&op, c, CALL_FLUSH);
  return call(c, &op);
}

ruda_status_t ruda_client_sync(ruda_client_t *c) {
  if (!c) return invalid("ruda_client_sync: NULL client");
  call_op_t op;
  call_init(&op, c, CALL_SYNC);
  ruda_status_t s = NULL;
  if (!ruda__device_quiet_after_progress(c->dev)) s = call(c, &op);
  ruda_status_t w = finish_future(op.future);
  if (c->dev->profile_level >= RUDA_LOG_LEVEL_BASIC && !ruda__device_on_worker(c->dev)) {
    ruda__profile_summary_print_and_reset();
  }
  if (s) {
    ruda_status_free(w);
    return s;
  }
  return w;
}

ruda_status_t ruda_client_sync_async(ruda_client_t *c, ruda_future_t **out) {
  if (!c || !out) return invalid("ruda_client_sync_async: NULL argument");
  call_op_t op;
  call_init(&op, c, CALL_SYNC);
  ruda_status_t s = call(c, &op);
  return make_future(op.future, s, NULL, 0, out);
}

ruda_status_t ruda_client_memory_usage(ruda_client_t *c, ruda_memory_usage_t *out) {
  if (!c || !out) return invalid("ruda_client_memory_usage: NULL argument");
  call_op_t op;
  call_init(&op, c, CALL_MEMORY_USAGE);
  ruda_status_t s = call(c, &op);
  *out = op.usage;
  return s;
}

ruda_status_t ruda_client_memory_usage_device(ruda_client_t *c, ruda_memory_usage_t *out) {
  if (!c || !out) return invalid("ruda_client_memory_usage_device: NULL argument");
  call_op_t op;
  call_init(&op, c, CALL_MEMORY_USAGE_DEVICE);
  ruda_status_t s = call(c, &op);
  *out = op.usage;
  return s;
}

ruda_status_t ruda_client_get_resource(ruda_client_t *c, const ruda_handle_t *h,
                                       ruda_resource_t *out) {
  if (!c || !out) return invalid("ruda_client_get_resource: NULL argument");
  memset(out, 0, sizeof *out);
  ruda_binding_t b;
  ruda_status_t hs = ruda__handle_bind(h, c->dev->id, "get_resource", &b);
  if (hs) return hs;
  call_op_t op;
  call_init(&op, c, CALL_GET_RESOURCE);
  op.binding = &b;
  ruda_status_t s = call(c, &op);
  if (s) {
    ruda_binding_release(&b);
    return s;
  }
  *out = op.resource;
  out->binding = b;
  return NULL;
}

void ruda_resource_release(ruda_resource_t *r) {
  if (!r) return;
  ruda_binding_release(&r->binding);
  memset(r, 0, sizeof *r);
}

ruda_status_t ruda_client_staging(ruda_client_t *c, const uint64_t *sizes, size_t count,
                                  ruda_bytes_t *out) {
  if (!c || (count && (!sizes || !out))) return invalid("ruda_client_staging: NULL argument");
  call_op_t op;
  call_init(&op, c, CALL_STAGING);
  op.sizes = sizes;
  op.count = count;
  op.bytes = out;
  return call(c, &op);
}

ruda_status_t ruda_client_exclusive(ruda_client_t *c,
                                    ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                    void *ctx) {
  if (!c || !fn) return invalid("ruda_client_exclusive: NULL argument");
  call_op_t op;
  call_init(&op, c, CALL_EXCLUSIVE);
  op.fn = fn;
  op.ctx = ctx;
  return call(c, &op);
}

/* ---- Reads ---- */

/* Every handle argument goes through this before anything is queued: a
 * live handle of this client's device whose fields agree with its memory
 * (RUDA_ERR_INVALID_HANDLE otherwise, see ruda/memory.h). */
static ruda_status_t check_view(ruda_client_t *c, const ruda_handle_t *h, const char *who) {
  return ruda__handle_check(h, c->dev->id, who);
}

/* Reads into `dst` through a new binding of `h` (checked by the caller). */
static ruda_status_t read_common(ruda_client_t *c, const ruda_handle_t *h,
                                 const ruda_shape_t *shape, const ruda_strides_t *strides,
                                 size_t elem_size, void *dst, ruda_future_t **out_future) {
  ruda__copy_desc_t desc;
  memset(&desc, 0, sizeof desc);
  desc.shape = *shape;
  desc.strides = *strides;
  desc.elem_size = elem_size;
  ruda_status_t hs = ruda__handle_bind(h, c->dev->id, "read", &desc.binding);
  if (hs) return hs;
  void *dsts[1] = {dst};
  call_op_t op;
  call_init(&op, c, CALL_READ);
  op.descs = &desc;
  op.dsts = dsts;
  op.count = 1;
  ruda_status_t s = call(c, &op);
  if (!out_future) {
    ruda_status_t w = finish_future(op.future);
    ruda_binding_release(&desc.binding);
    if (s) {
      ruda_status_free(w);
      return s;
    }
    return w;
  }
  ruda_binding_t *keep = ruda__malloc(sizeof *keep);
  if (keep) {
    *keep = desc.binding;
  } else {
    ruda_status_t w = finish_future(op.future);
    op.future = NULL;
    ruda_binding_release(&desc.binding);
    if (!s) s = w; else ruda_status_free(w);
  }
  return make_future(op.future, s, keep, keep ? 1 : 0, out_future);
}

static ruda_status_t read_bytes(ruda_client_t *c, const ruda_handle_t *h, void *dst,
                                uint64_t cap, ruda_future_t **out) {
  ruda_status_t s = check_view(c, h, "read");
  if (s) return s;
  uint64_t n = ruda_handle_size_in_used(h);
  if (n > cap) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "read: the view holds %llu bytes but dst has room for %llu",
                              (unsigned long long)n, (unsigned long long)cap);
  }
  if (n && !dst) return invalid("read: NULL dst");
  ruda_shape_t shape = ruda_shape_1d(n);
  ruda_strides_t strides = ruda_strides_contiguous(&shape);
  return read_common(c, h, &shape, &strides, 1, dst, out);
}

ruda_status_t ruda_client_read(ruda_client_t *c, const ruda_handle_t *h, void *dst,
                               uint64_t cap) {
  if (!c) return invalid("ruda_client_read: NULL client");
  return read_bytes(c, h, dst, cap, NULL);
}

ruda_status_t ruda_client_read_async(ruda_client_t *c, const ruda_handle_t *h, void *dst,
                                     uint64_t cap, ruda_future_t **out) {
  if (!c || !out) return invalid("ruda_client_read_async: NULL argument");
  *out = NULL;
  return read_bytes(c, h, dst, cap, out);
}

/* Checks a tensor copy: the handle, the shape and strides, and that both
 * the host side (num_elems x elem_size bytes, *out_bytes) and the furthest
 * element the strides reach fit, every product overflow-checked. */
static ruda_status_t check_tensor(ruda_client_t *c, const ruda_handle_t *h,
                                  const ruda_shape_t *shape, const ruda_strides_t *strides,
                                  size_t elem_size, const void *data, const char *who,
                                  uint64_t *out_bytes) {
  ruda_status_t s = check_view(c, h, who);
  if (s) return s;
  if (!shape || !strides || !elem_size) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: NULL shape/strides or zero elem_size", who);
  }
  if (shape->rank > RUDA_MAX_RANK || strides->rank != shape->rank) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: rank %u with %u strides", who,
                              shape->rank, strides->rank);
  }
  uint64_t bytes, need;
  if (!ruda_shape_num_bytes(shape, elem_size, &bytes))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: the shape holds more than 2^64 bytes of %zu-byte elements",
                              who, elem_size);
  if (bytes && !data) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "%s: NULL data", who);
  /* The furthest element the strides reach must lie inside the view. */
  if (!ruda_shape_extent(shape, strides, elem_size, &need))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: the shape and strides reach past 2^64 bytes", who);
  *out_bytes = bytes;
  if (need > ruda_handle_size_in_used(h)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "%s: shape and strides reach %llu bytes, the view holds %llu", who,
                              (unsigned long long)need,
                              (unsigned long long)ruda_handle_size_in_used(h));
  }
  return NULL;
}

ruda_status_t ruda_client_read_tensor(ruda_client_t *c, const ruda_handle_t *h,
                                      const ruda_shape_t *shape,
                                      const ruda_strides_t *strides, size_t elem_size,
                                      void *dst) {
  if (!c) return invalid("ruda_client_read_tensor: NULL client");
  uint64_t bytes = 0;
  ruda_status_t s = check_tensor(c, h, shape, strides, elem_size, dst, "read_tensor", &bytes);
  if (s) return s;
  return read_common(c, h, shape, strides, elem_size, dst, NULL);
}

ruda_status_t ruda_client_read_tensor_async(ruda_client_t *c, const ruda_handle_t *h,
                                            const ruda_shape_t *shape,
                                            const ruda_strides_t *strides,
                                            size_t elem_size, void *dst,
                                            ruda_future_t **out) {
  if (!c || !out) return invalid("ruda_client_read_tensor_async: NULL argument");
  *out = NULL;
  uint64_t bytes = 0;
  ruda_status_t s = check_tensor(c, h, shape, strides, elem_size, dst, "read_tensor", &bytes);
  if (s) return s;
  return read_common(c, h, shape, strides, elem_size, dst, out);
}

/* ------------------------------------------------------------------------ */
/* Non-blocking operations                                                  */
/* ------------------------------------------------------------------------ */

/* Allocation, optionally followed by writes into views of it. */
typedef struct alloc_op {
  ruda__op_t base;
  size_t block_size; /* for ruda__device_op_free */
  ruda_binding_t memory; /* keeps the descriptor alive until bound */
  uint64_t size;
  size_t num_writes;
  ruda__copy_desc_t *descs; /* trailing */
  ruda_bytes_t *bytes;      /* trailing */
} alloc_op_t;

static void run_alloc(ruda__device_t *d, ruda__op_t *op) {
  alloc_op_t *a = (alloc_op_t *)op;
  ruda__server_t *s = d->server;
  if (s) {
    s->vt->initialize_memory(s, ruda__binding_memory(&a->memory), a->size, op->stream);
    if (a->num_writes) s->vt->write(s, a->descs, a->bytes, a->num_writes, op->stream);
  } else {
    for (size_t i = 0; i < a->num_writes; i++) ruda_bytes_release(&a->bytes[i]);
  }
  for (size_t i = 0; i < a->num_writes; i++) ruda_binding_release(&a->descs[i].binding);
  ruda_binding_release(&a->memory);
  ruda__device_op_free(d, a, a->block_size);
}

static alloc_op_t *alloc_op_new(ruda_client_t *c, size_t num_writes) {
  size_t bytes = sizeof(alloc_op_t) + num_writes * (sizeof(ruda__copy_desc_t) + sizeof(ruda_bytes_t));
  alloc_op_t *a = ruda__device_op_alloc(c->dev, bytes);
  if (!a) return NULL;
  memset(a, 0, bytes);
  a->block_size = bytes;
  a->base.run = run_alloc;
  a->base.stream = ruda_client_stream(c);
  a->num_writes = num_writes;
  a->descs = (ruda__copy_desc_t *)(a + 1);
  a->bytes = (ruda_bytes_t *)(a->descs + num_writes);
  return a;
}

ruda_status_t ruda_client_empty(ruda_client_t *c, uint64_t size, ruda_handle_t *out) {
  if (!c || !out) return invalid("ruda_client_empty: NULL argument");
  memset(out, 0, sizeof *out);
  alloc_op_t *a = alloc_op_new(c, 0);
  if (!a) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda_status_t s = ruda__handle_create(size, c->dev->id, a->base.stream, out);
  if (s) {
    ruda__device_op_free(c->dev, a, a->block_size);
    return s;
  }
  a->memory = ruda_handle_binding(out);
  a->size = size;
  ruda__device_submit(c->dev, &a->base);
  return NULL;
}

/* Shared path of empty_tensor(s)/create_tensor(s): lays the descriptors out
 * with the device's policy and queues one allocation plus the writes. Takes
 * every bytes[i] (NULL: no write for that tensor). */
static ruda_status_t alloc_tensors(ruda_client_t *c,
                                   const ruda_memory_layout_descriptor_t *descs, size_t count,
                                   ruda_bytes_t *bytes, ruda_memory_layout_t *out) {
  size_t num_writes = 0;
  for (size_t i = 0; bytes && i < count; i++) num_writes += bytes[i].data || bytes[i].size ? 1 : 0;
  ruda_handle_t base;
  ruda_status_t s = ruda__layout_apply(&c->dev->layout_policy, c->dev->id,
                                       ruda_client_stream(c), descs, count, &base, out);
  if (s) goto fail_bytes;
  alloc_op_t *a = alloc_op_new(c, num_writes);
  if (!a) {
    s = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, base.size);
    ruda_handle_release(&base);
    for (size_t i = 0; i < count; i++) ruda_handle_release(&out[i].memory);
    goto fail_bytes;
  }
  a->size = base.size;
  a->memory = ruda_handle_into_binding(&base);
  size_t w = 0;
  for (size_t i = 0; bytes && i < count; i++) {
    if (!bytes[i].data && !bytes[i].size) continue;
    ruda__copy_desc_t *d = &a->descs[w];
    d->binding = ruda_handle_binding(&out[i].memory);
    d->shape = descs[i].shape;
    d->strides = out[i].strides;
    d->elem_size = descs[i].elem_size;
    a->bytes[w] = bytes[i];
    memset(&bytes[i], 0, sizeof bytes[i]);
    w++;
  }
  ruda__device_submit(c->dev, &a->base);
  return NULL;
fail_bytes:
  for (size_t i = 0; bytes && i < count; i++) ruda_bytes_release(&bytes[i]);
  return s;
}

ruda_status_t ruda_client_empty_tensor(ruda_client_t *c, const ruda_shape_t *shape,
                                       size_t elem_size, ruda_memory_layout_t *out) {
  if (!c || !shape || !out) return invalid("ruda_client_empty_tensor: NULL argument");
  ruda_memory_layout_descriptor_t d = ruda_memory_layout_optimized(*shape, elem_size);
  return alloc_tensors(c, &d, 1, NULL, out);
}

ruda_status_t ruda_client_empty_tensors(ruda_client_t *c,
                                        const ruda_memory_layout_descriptor_t *descs,
                                        size_t count, ruda_memory_layout_t *out) {
  if (!c || (count && (!descs || !out))) return invalid("ruda_client_empty_tensors: NULL argument");
  if (!count) return NULL;
  return alloc_tensors(c, descs, count, NULL, out);
}

ruda_status_t ruda_client_create_buffer_from_bytes(ruda_client_t *c, ruda_bytes_t *bytes,
                                                   ruda_handle_t *out) {
  if (!c || !bytes || !out) return invalid("ruda_client_create_buffer_from_bytes: NULL argument");
  memset(out, 0, sizeof *out);
  if (!bytes->data && bytes->size) {
    ruda_status_t s = ruda_status_create(
        RUDA_ERR_INVALID_ARGUMENT,
        "ruda_client_create_buffer_from_bytes: bytes of %llu bytes with NULL data",
        (unsigned long long)bytes->size);
    ruda_bytes_release(bytes);
    return s;
  }
  alloc_op_t *a = alloc_op_new(c, 1);
  ruda_status_t s = a ? ruda__handle_create(bytes->size, c->dev->id, a->base.stream, out)
                      : ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, bytes->size);
  if (s) {
    if (a) ruda__device_op_free(c->dev, a, a->block_size);
    ruda_bytes_release(bytes);
    return s;
  }
  a->memory = ruda_handle_binding(out);
  a->size = bytes->size;
  a->descs[0].binding = ruda_handle_binding(out);
  a->descs[0].shape = ruda_shape_1d(bytes->size);
  a->descs[0].strides = ruda_strides_contiguous(&a->descs[0].shape);
  a->descs[0].elem_size = 1;
  a->bytes[0] = *bytes;
  memset(bytes, 0, sizeof *bytes);
  ruda__device_submit(c->dev, &a->base);
  return NULL;
}

/* Large host inputs are not copied on the caller's thread: the caller's
 * buffer travels as borrowed bytes, the server copies straight from it (into
 * device memory or pinned staging) and its release wakes the caller, who
 * waits for it before returning. "Copied before the call returns" holds
 * either way; small inputs keep the cheaper non-blocking copy. */
enum { BORROW_THRESHOLD = 1 << 20 };

typedef struct borrow {
  ruda__completion_t done;
} borrow_t;

static void borrow_release(ruda_bytes_t *b) {
  ruda__completion_signal(&((borrow_t *)b->owner)->done); /* last access */
}

/* Fills *out with the caller's data: borrowed when large (wait on `br`
 * after handing *out on), copied otherwise. */
static ruda_status_t input_bytes(const void *data, uint64_t size, borrow_t *br,
                                 ruda_bytes_t *out, bool *borrowed) {
  *borrowed = size >= BORROW_THRESHOLD;
  if (!*borrowed) return ruda_bytes_from_copy(data, size, out);
  ruda__completion_init(&br->done);
  memset(out, 0, sizeof *out);
  out->data = (void *)(uintptr_t)data; /* only read by the server */
  out->size = size;
  out->property = RUDA_BYTES_NATIVE;
  out->release = borrow_release;
  out->owner = br;
  return NULL;
}

ruda_status_t ruda_client_create_buffer(ruda_client_t *c, const void *data, uint64_t size,
                                        ruda_handle_t *out) {
  if (!c || !out || (size && !data)) return invalid("ruda_client_create_buffer: NULL argument");
  ruda_bytes_t b;
  borrow_t br;
  bool borrowed;
  ruda_status_t s = input_bytes(data, size, &br, &b, &borrowed);
  if (s) return s;
  s = ruda_client_create_buffer_from_bytes(c, &b, out);
  if (borrowed) ruda__completion_wait(&br.done);
  return s;
}

ruda_status_t ruda_client_create_tensor(ruda_client_t *c, const void *data,
                                        const ruda_shape_t *shape, size_t elem_size,
                                        ruda_memory_layout_t *out) {
  if (!c || !shape || !out) return invalid("ruda_client_create_tensor: NULL argument");
  uint64_t bytes_len;
  if (!ruda_shape_num_bytes(shape, elem_size, &bytes_len))
    return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, UINT64_MAX);
  if (bytes_len && !data) return invalid("ruda_client_create_tensor: NULL data");
  ruda_memory_layout_descriptor_t d = ruda_memory_layout_optimized(*shape, elem_size);
  if (!bytes_len) return alloc_tensors(c, &d, 1, NULL, out);
  ruda_bytes_t b;
  borrow_t br;
  bool borrowed;
  ruda_status_t s = input_bytes(data, bytes_len, &br, &b, &borrowed);
  if (s) return s;
  s = alloc_tensors(c, &d, 1, &b, out);
  if (borrowed) ruda__completion_wait(&br.done);
  return s;
}

/* ---- Writes ---- */

typedef struct write_op {
  ruda__op_t base;
  ruda__copy_desc_t desc;
  ruda_bytes_t bytes;
} write_op_t;

static void run_write(ruda__device_t *d, ruda__op_t *op) {
  write_op_t *w = (write_op_t *)op;
  if (d->server) d->server->vt->write(d->server, &w->desc, &w->bytes, 1, op->stream);
  else ruda_bytes_release(&w->bytes);
  ruda_binding_release(&w->desc.binding);
  ruda__free(w);
}

static ruda_status_t submit_write(ruda_client_t *c, const ruda_handle_t *h,
                                  const ruda_shape_t *shape, const ruda_strides_t *strides,
                                  size_t elem_size, const void *data, uint64_t size) {
  write_op_t *w = ruda__calloc(1, sizeof *w);
  if (!w) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda_status_t s = ruda__handle_bind(h, c->dev->id, "write", &w->desc.binding);
  if (s) {
    ruda__free(w);
    return s;
  }
  borrow_t br;
  bool borrowed;
  s = input_bytes(data, size, &br, &w->bytes, &borrowed);
  if (s) {
    ruda_binding_release(&w->desc.binding);
    ruda__free(w);
    return s;
  }
  w->base.run = run_write;
  w->base.stream = ruda_client_stream(c);
  w->desc.shape = *shape;
  w->desc.strides = *strides;
  w->desc.elem_size = elem_size;
  ruda__device_submit(c->dev, &w->base);
  if (borrowed) ruda__completion_wait(&br.done);
  return NULL;
}

ruda_status_t ruda_client_write(ruda_client_t *c, const ruda_handle_t *h, const void *data,
                                uint64_t size) {
  if (!c) return invalid("ruda_client_write: NULL client");
  ruda_status_t s = check_view(c, h, "write");
  if (s) return s;
  if (size && !data) return invalid("write: NULL data");
  if (size > ruda_handle_size_in_used(h)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "write: %llu bytes do not fit the view of %llu bytes",
                              (unsigned long long)size,
                              (unsigned long long)ruda_handle_size_in_used(h));
  }
  ruda_shape_t shape = ruda_shape_1d(size);
  ruda_strides_t strides = ruda_strides_contiguous(&shape);
  return submit_write(c, h, &shape, &strides, 1, data, size);
}

ruda_status_t ruda_client_write_tensor(ruda_client_t *c, const ruda_handle_t *h,
                                       const ruda_shape_t *shape,
                                       const ruda_strides_t *strides, size_t elem_size,
                                       const void *data) {
  if (!c) return invalid("ruda_client_write_tensor: NULL client");
  uint64_t bytes = 0;
  ruda_status_t s = check_tensor(c, h, shape, strides, elem_size, data, "write_tensor", &bytes);
  if (s) return s;
  return submit_write(c, h, shape, strides, elem_size, data, bytes);
}

/* ---- Memory management ---- */

typedef struct mode_op {
  ruda__op_t base;
  bool cleanup;
  ruda_memory_allocation_mode_t mode;
} mode_op_t;

static void run_mode(ruda__device_t *d, ruda__op_t *op) {
  mode_op_t *m = (mode_op_t *)op;
  if (!d->server) {
    /* nothing to clean or switch: the device is gone */
  } else if (m->cleanup) {
    d->server->vt->memory_cleanup(d->server, op->stream);
  } else {
    d->server->vt->allocation_mode(d->server, m->mode, op->stream);
  }
  ruda__free(m);
}

static ruda_status_t submit_mode(ruda_client_t *c, bool cleanup,
                                 ruda_memory_allocation_mode_t mode, ruda_stream_id_t stream) {
  mode_op_t *m = ruda__calloc(1, sizeof *m);
  if (!m) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory");
  m->base.run = run_mode;
  m->base.stream = stream;
  m->cleanup = cleanup;
  m->mode = mode;
  ruda__device_submit(c->dev, &m->base);
  return NULL;
}

ruda_status_t ruda_client_memory_cleanup(ruda_client_t *c) {
  if (!c) return invalid("ruda_client_memory_cleanup: NULL client");
  return submit_mode(c, true, RUDA_ALLOCATION_AUTO, ruda_client_stream(c));
}

ruda_status_t ruda_client_allocation_mode(ruda_client_t *c,
                                          ruda_memory_allocation_mode_t mode) {
  if (!c) return invalid("ruda_client_allocation_mode: NULL client");
  if (mode != RUDA_ALLOCATION_AUTO && mode != RUDA_ALLOCATION_PERSISTENT)
    return invalid("ruda_client_allocation_mode: unknown mode");
  return submit_mode(c, false, mode, ruda_client_stream(c));
}

ruda_status_t ruda_client_persistent_scope(ruda_client_t *c,
                                           ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                           void *ctx) {
  if (!c || !fn) return invalid("ruda_client_persistent_scope: NULL argument");
  /* Unlike the reference, the scope uses the client's own stream. */
  ruda_stream_id_t stream = ruda_client_stream(c);
  ruda_status_t s = submit_mode(c, false, RUDA_ALLOCATION_PERSISTENT, stream);
  if (s) return s;
  ruda_status_t r = fn(c, ctx);
  s = submit_mode(c, false, RUDA_ALLOCATION_AUTO, stream);
  if (r) {
    ruda_status_free(s);
    return r;
  }
  return s;
}

/* ---- Launches ---- */

typedef struct launch_op {
  ruda__op_t base;
  size_t block_size; /* for ruda__device_op_free */
  ruda_kernel_t *kernel;
  ruda__count_t count;
  ruda_execution_mode_t mode;
  ruda__launch_args_t args;
  ruda_binding_t *buffers;      /* trailing */
  ruda_binding_t *tm_buffers;   /* trailing */
  ruda_tensor_map_meta_t *tms;  /* trailing */
  uint64_t *info;               /* trailing */
} launch_op_t;

static void run_launch(ruda__device_t *d, ruda__op_t *op) {
  launch_op_t *l = (launch_op_t *)op;
  if (d->server) ruda__server_launch(d->server, l->kernel, &l->count, &l->args, l->mode, op->stream);
  for (size_t i = 0; i < l->args.num_buffers; i++) ruda_binding_release(&l->buffers[i]);
  for (size_t i = 0; i < l->args.num_tensor_maps; i++) ruda_binding_release(&l->tm_buffers[i]);
  if (l->count.dynamic) ruda_binding_release(&l->count.buffer);
  ruda_kernel_release(l->kernel);
  ruda__device_op_free(d, l, l->block_size);
}

static ruda_status_t launch(ruda_client_t *c, ruda_kernel_t *kernel, ruda_count_t count,
                            const ruda_kernel_args_t *args, ruda_execution_mode_t mode) {
  if (!c || !kernel) return invalid("launch: NULL client or kernel");
  static const ruda_kernel_args_t no_args;
  if (!args) args = &no_args;
  if ((args->num_buffers && !args->buffers) || (args->num_tensor_maps && !args->tensor_maps) ||
      (args->info.len && !args->info.data)) {
    return invalid("launch: arguments with a count but no array");
  }
  const ruda_device_properties_t *p = ruda_client_properties(c);
  if (p->hardware.max_bindings &&
      args->num_buffers + args->num_tensor_maps > p->hardware.max_bindings) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch of '%s': %zu bindings, the device takes at most %u",
                              kernel->desc.name, args->num_buffers + args->num_tensor_maps,
                              p->hardware.max_bindings);
  }
  for (size_t i = 0; i < args->num_tensor_maps; i++) {
    if (!args->tensor_maps[i].buffer) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "launch of '%s': tensor map %zu has no buffer", kernel->desc.name, i);
    }
  }
  if (count.dynamic && !count.buffer) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch of '%s': a dynamic count needs a buffer", kernel->desc.name);
  }
  size_t nb = args->num_buffers, nt = args->num_tensor_maps, ni = args->info.len;
  /* Counts from the caller: the block's size must not wrap. */
  size_t bytes = 0, part;
  if (__builtin_add_overflow(nb, nt, &part) ||
      __builtin_mul_overflow(part, sizeof(ruda_binding_t), &part) ||
      __builtin_add_overflow(sizeof(launch_op_t), part, &bytes) ||
      __builtin_mul_overflow(nt, sizeof(ruda_tensor_map_meta_t), &part) ||
      __builtin_add_overflow(bytes, part, &bytes) ||
      __builtin_mul_overflow(ni, sizeof(uint64_t), &part) ||
      __builtin_add_overflow(bytes, part, &bytes))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch of '%s': %zu buffers, %zu tensor maps and %zu info words "
                              "do not fit in memory",
                              kernel->desc.name, nb, nt, ni);
  launch_op_t *l = ruda__device_op_alloc(c->dev, bytes);
  if (!l) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "queueing '%s'", kernel->desc.name);
  memset(l, 0, sizeof *l);
  l->block_size = bytes;
  l->base.run = run_launch;
  l->base.stream = ruda_client_stream(c);
  l->kernel = ruda_kernel_retain(kernel);
  l->mode = mode;
  l->buffers = (ruda_binding_t *)(l + 1);
  l->tm_buffers = l->buffers + nb;
  l->tms = (ruda_tensor_map_meta_t *)(l->tm_buffers + nt);
  l->info = (uint64_t *)(l->tms + nt);
  /* Each handle is checked and bound in one step: a bad one undoes the
   * bindings taken so far and nothing is queued. */
  ruda_device_id_t dev = c->dev->id;
  ruda_status_t hs = NULL;
  char what[48] = "";
  size_t bound_b = 0, bound_t = 0;
  for (; bound_b < nb; bound_b++) {
    hs = ruda__handle_bind(&args->buffers[bound_b], dev, NULL, &l->buffers[bound_b]);
    if (hs) {
      snprintf(what, sizeof what, "buffer %zu", bound_b);
      break;
    }
  }
  for (; !hs && bound_t < nt; bound_t++) {
    hs = ruda__handle_bind(args->tensor_maps[bound_t].buffer, dev, NULL, &l->tm_buffers[bound_t]);
    if (hs) {
      snprintf(what, sizeof what, "tensor map %zu", bound_t);
      break;
    }
    l->tms[bound_t] = args->tensor_maps[bound_t].meta;
  }
  l->count.dynamic = count.dynamic;
  l->count.fixed = count.fixed;
  if (!hs && count.dynamic) {
    hs = ruda__handle_bind(count.buffer, dev, NULL, &l->count.buffer);
    if (!hs && ruda_binding_size_in_used(&l->count.buffer) < 3 * sizeof(uint32_t))
      hs = ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "a dynamic count needs 12 bytes (three uint32), the view holds %llu",
                              (unsigned long long)ruda_binding_size_in_used(&l->count.buffer));
    if (hs) snprintf(what, sizeof what, "the count buffer");
  }
  if (hs) {
    ruda_status_t e = ruda_status_create(ruda_status_kind(hs), "launch of '%s', %s: %s",
                                         kernel->desc.name, what, ruda_status_reason(hs));
    ruda_status_free(hs);
    for (size_t i = 0; i < bound_b; i++) ruda_binding_release(&l->buffers[i]);
    for (size_t i = 0; i < bound_t; i++) ruda_binding_release(&l->tm_buffers[i]);
    ruda_binding_release(&l->count.buffer);
    ruda_kernel_release(l->kernel);
    ruda__device_op_free(c->dev, l, l->block_size);
    return e;
  }
  if (ni) memcpy(l->info, args->info.data, ni * sizeof(uint64_t));
  l->args.buffers = l->buffers;
  l->args.num_buffers = nb;
  l->args.tensor_map_buffers = l->tm_buffers;
  l->args.tensor_maps = l->tms;
  l->args.num_tensor_maps = nt;
  l->args.info.data = ni ? l->info : NULL;
  l->args.info.len = ni;
  l->args.info.dynamic_metadata_offset = args->info.dynamic_metadata_offset;
  ruda__device_submit(c->dev, &l->base);
  return NULL;
}

/* At profiling level basic and above every launch is measured (blocking,
 * as in the reference) and recorded in the summary printed at sync.
 * Measuring never changes what the launch reports: the call returns what an
 * unprofiled launch returns (its argument checks), and errors of the work
 * stay queued on the stream for its next read, flush or sync. A profile
 * that failed (or could not start) is simply not recorded. */
typedef struct profiled_launch {
  ruda_kernel_t *kernel;
  ruda_count_t count;
  const ruda_kernel_args_t *args;
  ruda_execution_mode_t mode;
  ruda_status_t launch_status;
  bool measured;
  ruda_profile_duration_t duration;
} profiled_launch_t;

static ruda_status_t profiled_launch_body(ruda_client_t *c, void *ctx) {
  profiled_launch_t *p = ctx;
  call_op_t start;
  call_init(&start, c, CALL_START_PROFILE);
  ruda_status_t s = call(c, &start);
  p->launch_status = launch(c, p->kernel, p->count, p->args, p->mode);
  if (s) {
    ruda_status_free(s);
    return NULL;
  }
  call_op_t end;
  call_init(&end, c, CALL_END_PROFILE);
  end.token = start.token;
  s = call(c, &end);
  if (s) {
    ruda_status_free(s);
  } else {
    p->measured = true;
    p->duration = end.duration;
  }
  return NULL;
}

static ruda_status_t launch_maybe_profiled(ruda_client_t *c, ruda_kernel_t *kernel,
                                           ruda_count_t count, const ruda_kernel_args_t *args,
                                           ruda_execution_mode_t mode) {
  if (!c || !kernel || c->dev->profile_level < RUDA_LOG_LEVEL_BASIC ||
      ruda__device_on_worker(c->dev)) {
    if (c && kernel && c->dev->profile_level == RUDA_LOG_LEVEL_MINIMAL) {
      char name[256];
      ruda_name_balanced(kernel->desc.name, name, sizeof name);
      ruda_log(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_MINIMAL, "Executing %s", name);
    }
    return launch(c, kernel, count, args, mode);
  }
  profiled_launch_t p = {kernel, count, args, mode, NULL, false, {0, 0, RUDA_TIMING_SYSTEM}};
  ruda_status_t s = ruda_client_exclusive(c, profiled_launch_body, &p);
  if (s) {
    /* The worker never ran the body (the device is shut down). */
    ruda_status_free(p.launch_status);
    return s;
  }
  if (p.launch_status || !p.measured) return p.launch_status;
  char name[256];
  if (c->dev->profile_level >= RUDA_LOG_LEVEL_FULL) {
    char count_text[64] = "binding";
    if (!count.dynamic) ruda_count3_format(count.fixed, count_text, sizeof count_text);
    snprintf(name, sizeof name, "%s: %016llx%016llx RudaCount %s", kernel->desc.name,
             (unsigned long long)kernel->hash.hi, (unsigned long long)kernel->hash.lo, count_text);
  } else {
    ruda__profile_name_balanced(kernel->desc.name, name, sizeof name);
  }
  ruda__profile_summary_record(name, ruda_profile_duration_ns(p.duration));
  return NULL;
}

ruda_status_t ruda_client_launch(ruda_client_t *c, ruda_kernel_t *kernel, ruda_count_t count,
                                 const ruda_kernel_args_t *args) {
  return launch_maybe_profiled(c, kernel, count, args, RUDA_EXEC_CHECKED);
}

ruda_status_t ruda_client_launch_unchecked(ruda_client_t *c, ruda_kernel_t *kernel,
                                           ruda_count_t count, const ruda_kernel_args_t *args) {
  if (!c) return invalid("ruda_client_launch_unchecked: NULL client");
  return launch_maybe_profiled(c, kernel, count, args,
                               ruda_bounds_check_to_mode(ruda_client_check_mode(c)));
}

/* ---- Profiling ---- */

typedef struct profile_ctx {
  const char *name;
  ruda_status_t (*fn)(ruda_client_t *, void *);
  void *ctx;
  ruda_profile_duration_t duration;
  ruda_status_t fn_status;
} profile_ctx_t;

static ruda_status_t profile_body(ruda_client_t *c, void *arg) {
  profile_ctx_t *p = arg;
  call_op_t start;
  call_init(&start, c, CALL_START_PROFILE);
  ruda_status_t s = call(c, &start);
  if (s) {
    return ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, ruda_status_into_server(s));
  }
  p->fn_status = p->fn(c, p->ctx);
  call_op_t end;
  call_init(&end, c, CALL_END_PROFILE);
  end.token = start.token;
  s = call(c, &end);
  if (!s) p->duration = end.duration;
  return s;
}

ruda_status_t ruda_client_profile(ruda_client_t *c, const char *name,
                                  ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                  void *ctx, ruda_profile_duration_t *out) {
  if (!c || !fn) return invalid("ruda_client_profile: NULL argument");
  profile_ctx_t p = {.name = name, .fn = fn, .ctx = ctx};
  ruda_status_t s = ruda_client_exclusive(c, profile_body, &p);
  if (p.fn_status) {
    ruda_status_free(s);
    return p.fn_status;
  }
  if (s) return s;
  if (out) *out = p.duration;
  return NULL;
}

/* ---- Profiling tokens ---- */

ruda_status_t ruda_client_profile_start(ruda_client_t *c, ruda_profiling_token_t *out) {
  if (!c || !out) return invalid("ruda_client_profile_start: NULL argument");
  call_op_t op;
  call_init(&op, c, CALL_START_PROFILE);
  ruda_status_t s = call(c, &op);
  if (!s) *out = op.token;
  return s;
}

ruda_status_t ruda_client_profile_end(ruda_client_t *c, ruda_profiling_token_t token,
                                      ruda_profile_duration_t *out) {
  if (!c || !out) return invalid("ruda_client_profile_end: NULL argument");
  call_op_t op;
  call_init(&op, c, CALL_END_PROFILE);
  op.token = token;
  ruda_status_t s = call(c, &op);
  if (!s) *out = op.duration;
  return s;
}
