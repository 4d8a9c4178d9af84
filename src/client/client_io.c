/* Allocation, creation from host data, reads, writes, allocation modes and
 * cleanup. The file map of the client is in client_internal.h. */
#include <string.h>

#include "base/alloc.h"
#include "client/client_internal.h"
#include "server/trace.h"

/* ---- Reads ---- */

typedef struct read_call {
  const ruda__copy_desc_t *desc;
  void *dsts[1];
  ruda__future_t *future;
} read_call_t;

RUDA__HOT
static ruda_status_t do_read(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  read_call_t *r = ctx;
  return s->vt->read(s, r->desc, r->dsts, 1, st, &r->future);
}

/* Reads into `dst` what `desc` describes (its binding taken: released
 * here). */
RUDA__HOT
static ruda_status_t read_bound(ruda_client_t *c, ruda__copy_desc_t *desc, void *dst,
                                ruda_future_t **out_future) {
  read_call_t r = {desc, {dst}, NULL};
  const char *who = out_future ? "ruda_client_read_async" : "ruda_client_read";
  ruda_status_t s = ruda__device_begin(c->dev, who);
  if (s) {
    ruda_binding_release(&desc->binding);
    return s;
  }
  s = ruda__device_call(c->dev, RUDA__CALL_SHORT, ruda__client_stream(c), do_read, &r);
  if (!out_future) {
    ruda__device_note_wait(c->dev);
    /* Waited for on this thread: the worker serves other streams. */
    ruda_status_t w = ruda__client_future_finish(r.future);
    ruda__device_end(c->dev);
    ruda_binding_release(&desc->binding);
    if (s) {
      ruda_status_free(w);
      return s;
    }
    return w;
  }
  ruda_binding_t *keep = ruda__malloc(sizeof *keep);
  if (keep) {
    *keep = desc->binding;
  } else {
    ruda_status_t w = ruda__client_future_finish(r.future);
    r.future = NULL;
    ruda_binding_release(&desc->binding);
    if (!s) s = w; else ruda_status_free(w);
  }
  ruda__device_end(c->dev);
  return ruda__client_future_make(r.future, s, keep, keep ? 1 : 0, out_future);
}

/* The binding is the check: ruda__handle_bind validates the handle and
 * names the fault, so a byte read looks the handle up once. */
RUDA__HOT
static ruda_status_t read_bytes(ruda_client_t *c, const ruda_handle_t *h, void *dst,
                                uint64_t cap, ruda_future_t **out) {
  ruda__copy_desc_t desc = {.shape = {.rank = 1},
                            .strides = {.rank = 1, .values = {1}},
                            .elem_size = 1};
  ruda_status_t s = ruda__handle_bind(h, c->dev->id, "read", &desc.binding);
  if (s) return s;
  uint64_t n = ruda_binding_size_in_used(&desc.binding);
  if (n > cap || (n && !dst)) {
    ruda_binding_release(&desc.binding);
    if (n > cap)
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "read: the view holds %llu bytes but dst has room for %llu",
                                (unsigned long long)n, (unsigned long long)cap);
    return ruda__client_invalid("read: NULL dst");
  }
  desc.shape.dims[0] = n;
  return read_bound(c, &desc, dst, out);
}

RUDA__HOT
ruda_status_t ruda_client_read(ruda_client_t *c, const ruda_handle_t *h, void *dst,
                               uint64_t cap) {
  if (!c) return ruda__client_invalid("ruda_client_read: NULL client");
  return read_bytes(c, h, dst, cap, NULL);
}

ruda_status_t ruda_client_read_async(ruda_client_t *c, const ruda_handle_t *h, void *dst,
                                     uint64_t cap, ruda_future_t **out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_read_async: NULL argument");
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
  ruda_status_t s = ruda__client_check_view(c, h, who);
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

/* A tensor read: checked (check_tensor) before the binding is made. */
static ruda_status_t read_tensor(ruda_client_t *c, const ruda_handle_t *h,
                                 const ruda_shape_t *shape, const ruda_strides_t *strides,
                                 size_t elem_size, void *dst, ruda_future_t **out) {
  uint64_t bytes = 0;
  ruda_status_t s = check_tensor(c, h, shape, strides, elem_size, dst, "read_tensor", &bytes);
  if (s) return s;
  ruda_binding_t b;
  s = ruda__handle_bind(h, c->dev->id, "read", &b);
  if (s) return s;
  ruda__copy_desc_t desc = {
      .shape = *shape, .strides = *strides, .elem_size = elem_size, .binding = b};
  return read_bound(c, &desc, dst, out);
}

ruda_status_t ruda_client_read_tensor(ruda_client_t *c, const ruda_handle_t *h,
                                      const ruda_shape_t *shape,
                                      const ruda_strides_t *strides, size_t elem_size,
                                      void *dst) {
  if (!c) return ruda__client_invalid("ruda_client_read_tensor: NULL client");
  return read_tensor(c, h, shape, strides, elem_size, dst, NULL);
}

ruda_status_t ruda_client_read_tensor_async(ruda_client_t *c, const ruda_handle_t *h,
                                            const ruda_shape_t *shape,
                                            const ruda_strides_t *strides,
                                            size_t elem_size, void *dst,
                                            ruda_future_t **out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_read_tensor_async: NULL argument");
  *out = NULL;
  return read_tensor(c, h, shape, strides, elem_size, dst, out);
}

/* ---- Allocation ---- */

/* Allocation, optionally followed by writes into views of it; or writes
 * alone (`memory` unset: a write into a handle, or into memory that came
 * bound from the reuse cache). A cancelled operation writes nothing (only
 * writes alone are cancellable). */
typedef struct alloc_op {
  ruda__op_t base;
  size_t block_size; /* for ruda__device_op_free */
  ruda_binding_t memory; /* keeps the descriptor alive until bound; unset
                          * when it came bound from the reuse cache */
  uint64_t size;
  size_t num_writes;
  ruda__copy_desc_t *descs; /* trailing */
  ruda_bytes_t *bytes;      /* trailing */
} alloc_op_t;

/* The op's allocation (none when `memory` is unset), on the worker or, by
 * ruda__device_run_here, on the caller's thread. */
static ruda_status_t alloc_op_reserve(ruda__server_t *s, ruda_stream_id_t stream, void *op) {
  alloc_op_t *a = op;
  if (a->memory.id)
    s->vt->initialize_memory(s, ruda__binding_memory(&a->memory), a->size, stream);
  return NULL;
}

static void run_alloc(ruda__device_t *d, ruda__op_t *op) {
  alloc_op_t *a = (alloc_op_t *)op;
  ruda__server_t *s = d->server;
  if (s) alloc_op_reserve(s, op->stream, a);
  if (s && !op->cancelled) {
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
  a->base.stream = ruda__client_stream(c);
  a->num_writes = num_writes;
  a->descs = (ruda__copy_desc_t *)(a + 1);
  a->bytes = (ruda_bytes_t *)(a->descs + num_writes);
  return a;
}

/* The op's first write: all of `bytes` (taken) into `binding` from its
 * start. */
static void alloc_op_write_whole(alloc_op_t *a, ruda_binding_t binding, ruda_bytes_t *bytes) {
  a->descs[0].binding = binding;
  a->descs[0].shape = ruda_shape_1d(bytes->size);
  a->descs[0].strides = ruda_strides_contiguous(&a->descs[0].shape);
  a->descs[0].elem_size = 1;
  a->bytes[0] = *bytes;
  memset(bytes, 0, sizeof *bytes);
}

/* A handle of `size` bytes on `stream` from memory released on that
 * stream (memory/reuse_cache.h), bound at once; false when the cache has
 * none. A trace records every allocation, so while one runs every
 * reservation takes the device's path. */
static inline bool client_reuse(ruda_client_t *c, uint64_t size, ruda_stream_id_t stream,
                                ruda_handle_t *out) {
  return !ruda__trace_on() &&
         ruda__handle_reuse(c->dev->memory_reuse, size, c->dev->id, stream, out);
}

/* A reservation the reuse cache could not answer: a new descriptor,
 * bound on this thread when the device is idle, else by its worker. */
__attribute__((noinline))
static ruda_status_t client_empty_reserve(ruda_client_t *c, uint64_t size,
                                          ruda_stream_id_t stream, ruda_handle_t *out) {
  ruda_status_t s = ruda__handle_create(size, c->dev->id, stream, out);
  if (s) return s;
  ruda_binding_t b = ruda_handle_binding(out);
  /* An idle device reserves on this thread: no hand-off, and the pool's
   * memory stays in this core's cache (reserve and release in a loop). */
  alloc_op_t here = {.memory = b, .size = size};
  ruda_status_t ignored;
  if (ruda__device_run_here(c->dev, stream, alloc_op_reserve, &here, &ignored)) {
    ruda_binding_release(&b);
    return NULL;
  }
  alloc_op_t *a = alloc_op_new(c, 0);
  if (!a) {
    ruda_binding_release(&b);
    ruda_handle_release(out);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  }
  a->memory = b;
  a->size = size;
  ruda__device_submit(c->dev, &a->base);
  return NULL;
}

RUDA__HOT
ruda_status_t ruda_client_empty(ruda_client_t *c, uint64_t size, ruda_handle_t *out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_empty: NULL argument");
  ruda_status_t s = ruda__device_refuse_in_kernel("ruda_client_empty");
  if (s) {
    memset(out, 0, sizeof *out);
    return s;
  }
  ruda_stream_id_t stream = ruda__client_stream(c);
  /* Memory of this size released on this stream and still bound to its
   * slice comes back without the device. A hit fills `out` whole;
   * ruda__handle_create does on the other path. */
  if (client_reuse(c, size, stream, out)) return NULL;
  return client_empty_reserve(c, size, stream, out);
}

/* Shared path of empty_tensor(s)/create_tensor(s): lays the descriptors out
 * with the device's policy, takes memory of the total size released on
 * this stream from the reuse cache (as ruda_client_empty does) or else a
 * new descriptor, and queues its reservation (when new) plus the writes.
 * Takes every bytes[i] (NULL: no write for that tensor). */
static ruda_status_t alloc_tensors(ruda_client_t *c,
                                   const ruda_memory_layout_descriptor_t *descs, size_t count,
                                   ruda_bytes_t *bytes, ruda_memory_layout_t *out) {
  size_t num_writes = 0;
  for (size_t i = 0; bytes && i < count; i++) num_writes += bytes[i].data || bytes[i].size ? 1 : 0;
  ruda_handle_t base;
  uint64_t total;
  ruda_stream_id_t stream = ruda__client_stream(c);
  ruda_status_t s = ruda__device_refuse_in_kernel(bytes ? "ruda_client_create_tensor" : "ruda_client_empty_tensor");
  if (s) goto fail_bytes;
  s = ruda__layout_plan(&c->dev->layout_policy, descs, count, out, &total);
  if (s) goto fail_bytes;
  bool bound = client_reuse(c, total, stream, &base);
  if (!bound && (s = ruda__handle_create(total, c->dev->id, stream, &base))) goto fail_bytes;
  ruda__layout_views(&base, count, out);
  if (bound && !num_writes) {
    ruda_handle_release(&base);
    return NULL;
  }
  alloc_op_t *a = alloc_op_new(c, num_writes);
  if (!a) {
    s = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, base.size);
    ruda_handle_release(&base);
    for (size_t i = 0; i < count; i++) ruda_handle_release(&out[i].memory);
    goto fail_bytes;
  }
  /* A reused base is bound already: the operation only writes. */
  a->size = base.size;
  if (bound)
    ruda_handle_release(&base);
  else
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
  if (!c || !shape || !out) return ruda__client_invalid("ruda_client_empty_tensor: NULL argument");
  ruda_memory_layout_descriptor_t d = ruda_memory_layout_optimized(*shape, elem_size);
  return alloc_tensors(c, &d, 1, NULL, out);
}

ruda_status_t ruda_client_empty_tensors(ruda_client_t *c,
                                        const ruda_memory_layout_descriptor_t *descs,
                                        size_t count, ruda_memory_layout_t *out) {
  if (!c || (count && (!descs || !out))) return ruda__client_invalid("ruda_client_empty_tensors: NULL argument");
  if (!count) return NULL;
  return alloc_tensors(c, descs, count, NULL, out);
}

static ruda_status_t submit_bytes_write(ruda_client_t *c, const ruda_handle_t *h,
                                        ruda_bytes_t *bytes);

ruda_status_t ruda_client_create_buffer_from_bytes(ruda_client_t *c, ruda_bytes_t *bytes,
                                                   ruda_handle_t *out) {
  if (!c || !bytes || !out) return ruda__client_invalid("ruda_client_create_buffer_from_bytes: NULL argument");
  memset(out, 0, sizeof *out);
  ruda_status_t refused = ruda__device_refuse_in_kernel("ruda_client_create_buffer");
  if (refused) {
    ruda_bytes_release(bytes);
    return refused;
  }
  if (!bytes->data && bytes->size) {
    ruda_status_t s = ruda_status_create(
        RUDA_ERR_INVALID_ARGUMENT,
        "ruda_client_create_buffer_from_bytes: bytes of %llu bytes with NULL data",
        (unsigned long long)bytes->size);
    ruda_bytes_release(bytes);
    return s;
  }
  /* Memory of this size released on this stream comes back bound from the
   * reuse cache, as in ruda_client_empty: only the write is queued. So a
   * loop that creates and releases buffers of one size keeps using the
   * same memory instead of walking through the rest of its page (fresh
   * memory, which a host-backed device first faults in). */
  if (client_reuse(c, bytes->size, ruda__client_stream(c), out)) {
    ruda_status_t s = submit_bytes_write(c, out, bytes);
    if (s) ruda_handle_release(out);
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
  alloc_op_write_whole(a, ruda_handle_binding(out), bytes);
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
  /* The caller's data, only read by the server. */
  ruda__bytes_set((void *)(uintptr_t)data, size, RUDA_BYTES_NATIVE, borrow_release, br, out);
  return NULL;
}

ruda_status_t ruda_client_create_buffer(ruda_client_t *c, const void *data, uint64_t size,
                                        ruda_handle_t *out) {
  if (!c || !out || (size && !data)) return ruda__client_invalid("ruda_client_create_buffer: NULL argument");
  ruda_status_t s = ruda__device_refuse_in_kernel("ruda_client_create_buffer");
  if (s) {
    memset(out, 0, sizeof *out);
    return s;
  }
  ruda_bytes_t b;
  borrow_t br;
  bool borrowed;
  s = input_bytes(data, size, &br, &b, &borrowed);
  if (s) return s;
  s = ruda_client_create_buffer_from_bytes(c, &b, out);
  if (borrowed) ruda__completion_wait(&br.done);
  return s;
}

ruda_status_t ruda_client_create_tensor(ruda_client_t *c, const void *data,
                                        const ruda_shape_t *shape, size_t elem_size,
                                        ruda_memory_layout_t *out) {
  if (!c || !shape || !out) return ruda__client_invalid("ruda_client_create_tensor: NULL argument");
  uint64_t bytes_len;
  if (!ruda_shape_num_bytes(shape, elem_size, &bytes_len))
    return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, UINT64_MAX);
  if (bytes_len && !data) return ruda__client_invalid("ruda_client_create_tensor: NULL data");
  ruda_memory_layout_descriptor_t d = ruda_memory_layout_optimized(*shape, elem_size);
  if (!bytes_len) return alloc_tensors(c, &d, 1, NULL, out);
  ruda_status_t s = ruda__device_refuse_in_kernel("ruda_client_create_tensor");
  if (s) return s;
  ruda_bytes_t b;
  borrow_t br;
  bool borrowed;
  s = input_bytes(data, bytes_len, &br, &b, &borrowed);
  if (s) return s;
  s = alloc_tensors(c, &d, 1, &b, out);
  if (borrowed) ruda__completion_wait(&br.done);
  return s;
}

/* ---- Writes ---- */

static ruda_status_t submit_write(ruda_client_t *c, const ruda_handle_t *h,
                                  const ruda_shape_t *shape, const ruda_strides_t *strides,
                                  size_t elem_size, const void *data, uint64_t size) {
  ruda_status_t refused = ruda__device_refuse_in_kernel("ruda_client_write");
  if (refused) return refused;
  if (ruda__handle_read_only(h)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "write: handle #%u.%u is a read-only DLPack import",
                              (unsigned)h->id, (unsigned)(h->id >> 32));
  }
  alloc_op_t *w = alloc_op_new(c, 1);
  if (!w) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda__copy_desc_t *d = &w->descs[0];
  ruda_status_t s = ruda__handle_bind(h, c->dev->id, "write", &d->binding);
  if (s) {
    ruda__device_op_free(c->dev, w, w->block_size);
    return s;
  }
  d->shape = *shape;
  d->strides = *strides;
  d->elem_size = elem_size;
  /* A stream that records a graph keeps a copy of the data instead. */
  bool recorded;
  s = ruda__client_record_write(c, d, data, size, &recorded);
  if (recorded) {
    ruda_binding_release(&d->binding);
    ruda__device_op_free(c->dev, w, w->block_size);
    return s;
  }
  borrow_t br;
  bool borrowed;
  s = input_bytes(data, size, &br, &w->bytes[0], &borrowed);
  if (s) {
    ruda_binding_release(&d->binding);
    ruda__device_op_free(c->dev, w, w->block_size);
    return s;
  }
  w->base.cancellable = true;
  ruda__device_submit(c->dev, &w->base);
  if (borrowed) ruda__completion_wait(&br.done);
  return NULL;
}

/* Queues the write of all of `bytes` (taken) into `h` from its start. */
static ruda_status_t submit_bytes_write(ruda_client_t *c, const ruda_handle_t *h,
                                        ruda_bytes_t *bytes) {
  alloc_op_t *w = alloc_op_new(c, 1);
  ruda_binding_t b = {0};
  ruda_status_t s = w ? ruda__handle_bind(h, c->dev->id, "ruda_client_create_buffer", &b)
                      : ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *w);
  if (s) {
    if (w) ruda__device_op_free(c->dev, w, w->block_size);
    ruda_bytes_release(bytes);
    return s;
  }
  alloc_op_write_whole(w, b, bytes);
  w->base.cancellable = true;
  ruda__device_submit(c->dev, &w->base);
  return NULL;
}

ruda_status_t ruda_client_write(ruda_client_t *c, const ruda_handle_t *h, const void *data,
                                uint64_t size) {
  if (!c) return ruda__client_invalid("ruda_client_write: NULL client");
  ruda_status_t s = ruda__client_check_view(c, h, "write");
  if (s) return s;
  if (size && !data) return ruda__client_invalid("write: NULL data");
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
  if (!c) return ruda__client_invalid("ruda_client_write_tensor: NULL client");
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
  ruda_status_t refused =
      ruda__device_refuse_in_kernel(cleanup ? "ruda_client_memory_cleanup" : "ruda_client_allocation_mode");
  if (refused) return refused;
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
  if (!c) return ruda__client_invalid("ruda_client_memory_cleanup: NULL client");
  return submit_mode(c, true, RUDA_ALLOCATION_AUTO, ruda__client_stream(c));
}

ruda_status_t ruda_client_allocation_mode(ruda_client_t *c,
                                          ruda_memory_allocation_mode_t mode) {
  if (!c) return ruda__client_invalid("ruda_client_allocation_mode: NULL client");
  if (mode != RUDA_ALLOCATION_AUTO && mode != RUDA_ALLOCATION_PERSISTENT)
    return ruda__client_invalid("ruda_client_allocation_mode: unknown mode");
  return submit_mode(c, false, mode, ruda__client_stream(c));
}

ruda_status_t ruda_client_persistent_scope(ruda_client_t *c,
                                           ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                           void *ctx) {
  if (!c || !fn) return ruda__client_invalid("ruda_client_persistent_scope: NULL argument");
  /* Both mode switches go to the stream the scope started on, also when
   * fn runs on another thread (a client pinned to a stream). */
  ruda_stream_id_t stream = ruda__client_stream(c);
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
