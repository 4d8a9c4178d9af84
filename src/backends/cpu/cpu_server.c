/* The CPU backend: a ComputeServer whose device is the host.
 *
 * Memory lives in host storage through the memory layer, one memory manager
 * per stream, kept in the stream's state in the server's stream table
 * (src/server/stream_table.h; idle streams are reclaimed beyond
 * max_streams). Operations run on the
 * device's worker thread in submission order; a kernel launch runs there
 * too, spread over the thread pool, so every stream is ordered after all
 * earlier work of every stream (cross-stream ordering needs no events) and a
 * buffer is alive for as long as the launch that binds it. Reads and syncs
 * therefore complete before the worker returns: their futures are ready.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/cpu_compile.h"
#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_server.h"
#include "backends/cpu/thread_pool.h"
#include "base/alloc.h"
#include "comm/cpu_collective.h"
#include "server/server.h"
#include "server/trace.h"

static ruda_status_t no_stream(void) {
  return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory creating a stream");
}

/* The state of a stream and (*out) its memory manager, created on first
 * use. *out is NULL when host memory ran out: the error is then queued on
 * the stream, whose state is returned; NULL when even that could not be
 * made. */
static ruda__stream_t *stream_get(cpu_server_t *s, ruda_stream_id_t id, cpu_stream_t **out) {
  *out = NULL;
  ruda__stream_t *rs = ruda__stream_get(&s->base.streams, id);
  if (!rs) return NULL;
  cpu_stream_t *st = ext(rs);
  if (!st->mm) {
    ruda__storage_t storage;
    ruda_status_t err = ruda__host_storage_create(s->base.utilities.properties.memory.alignment,
                                                  s->memory_limit, &storage);
    if (!err) {
      err = ruda__memory_manager_create(storage, s->base.utilities.properties.memory,
                                        &s->base.utilities.settings.memory, "Main CPU", &st->mm);
    }
    if (err) {
      ruda__stream_push_error(rs, err);
      return rs;
    }
    if (!s->memory_group.device[0]) ruda__memory_group_init(&s->memory_group, s->base.device, s->base.memory_reuse);
    ruda__memory_manager_join(st->mm, &s->memory_group, id.value);
  }
  *out = st;
  return rs;
}

/* ---- Stream table hooks ---- */

static bool cpu_stream_quiesce(void *ctx, ruda__stream_t *rs) {
  cpu_server_t *s = ctx;
  cpu_stream_t *st = ext(rs);
  if (!st->mm) return true;
  /* Work completes before the worker moves on: only memory can be held. */
  return ruda__memory_usage(st->mm).number_allocs == 0 &&
         ruda__memory_mode(st->mm) ==
             ruda__device_settings_initial_mode(&s->base.utilities.settings);
}

static void cpu_stream_release(void *ctx, ruda__stream_t *rs) {
  (void)ctx;
  cpu_stream_t *st = ext(rs);
  ruda__memory_manager_destroy(st->mm);
  st->mm = NULL;
}

static ruda_memory_usage_t cpu_stream_usage(void *ctx, ruda__stream_t *rs) {
  (void)ctx;
  cpu_stream_t *st = ext(rs);
  ruda_memory_usage_t none = {0, 0, 0, 0};
  return st->mm ? ruda__memory_usage(st->mm) : none;
}

ruda_status_t ruda__cpu_resolve(cpu_server_t *s, const ruda_binding_t *b, uint8_t **out_ptr,
                                uint64_t *out_size) {
  ruda__stream_t *rs = ruda__stream_find(&s->base.streams, b->stream);
  cpu_stream_t *owner = rs ? ext(rs) : NULL;
  if (!owner || !owner->mm) {
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND,
                              "the buffer is not bound on this device (its stream %llu holds "
                              "no memory)",
                              (unsigned long long)b->stream.value);
  }
  ruda__storage_handle_t h;
  ruda_status_t err = ruda__memory_resolve_binding(owner->mm, b, &h);
  if (err) return err;
  *out_ptr = (uint8_t *)(uintptr_t)ruda__storage_handle_addr(&h);
  *out_size = h.size;
  return NULL;
}

/* ---- Memory ---- */

static void cpu_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                  ruda_stream_id_t stream) {
  cpu_server_t *s = cpu(base);
  cpu_stream_t *st;
  ruda__stream_t *rs = stream_get(s, stream, &st);
  if (!st) return; /* the handle stays unbound: later uses report NotFound */
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0;
  ruda__stream_push_error(
      rs, ruda__memory_alloc(st->mm, memory, size, ruda__stream_advance(&s->base.streams, rs)));
  if (t0) {
    ruda__trace_slice(s->base.device, stream.value, "alloc", "alloc", t0, ruda__now_ns(), size);
    ruda__server_trace_memory(&s->base);
  }
}

/* A DLPack import: host memory ruda does not own, bound on the stream. */
static ruda_status_t cpu_import_memory(ruda__server_t *base, ruda_memory_t *memory,
                                       const ruda__external_memory_t *ext,
                                       ruda_stream_id_t stream) {
  cpu_stream_t *st;
  stream_get(cpu(base), stream, &st);
  if (!st) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, ext->size);
  return ruda__memory_import(st->mm, memory, ext);
}

/* Copies between a contiguous host buffer and a strided view. `to_view`
 * selects the direction. Any strides work on the CPU. */
RUDA__HOT
static void strided_copy(uint8_t *view, const ruda_shape_t *shape, const ruda_strides_t *strides,
                         size_t elem, uint8_t *flat, bool to_view) {
  uint64_t n = ruda_shape_num_elems(shape);
  if (n == 0) return;
  uint32_t rank = shape->rank;
  if (rank == 0 || ruda_strides_is_contiguous(shape, strides)) {
    if (to_view) memcpy(view, flat, n * elem);
    else memcpy(flat, view, n * elem);
    return;
  }
  /* Copy whole rows when the innermost stride is 1. */
  uint64_t row = strides->values[rank - 1] == 1 ? shape->dims[rank - 1] : 1;
  uint32_t outer_rank = row > 1 ? rank - 1 : rank;
  uint64_t idx[RUDA_MAX_RANK] = {0};
  uint64_t rows = n / row;
  for (uint64_t r = 0; r < rows; r++) {
    uint64_t off = 0;
    for (uint32_t i = 0; i < outer_rank; i++) off += idx[i] * strides->values[i];
    uint8_t *v = view + off * elem;
    if (to_view) memcpy(v, flat, row * elem);
    else memcpy(flat, v, row * elem);
    flat += row * elem;
    for (int32_t i = (int32_t)outer_rank - 1; i >= 0; i--) {
      if (++idx[i] < shape->dims[i]) break;
      idx[i] = 0;
    }
  }
}

static ruda_status_t check_extent(const ruda__copy_desc_t *d, uint64_t view_size) {
  uint64_t need;
  if (!ruda_shape_extent(&d->shape, &d->strides, d->elem_size, &need))
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "copy whose strides reach past 2^64 bytes");
  if (need > view_size) {
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN,
                              "copy of %llu bytes exceeds the view of %llu bytes",
                              (unsigned long long)need, (unsigned long long)view_size);
  }
  return NULL;
}

static void cpu_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                      size_t count, ruda_stream_id_t stream) {
  cpu_server_t *s = cpu(base);
  ruda__stream_t *rs = ruda__stream_get(&s->base.streams, stream);
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0, bytes = 0;
  for (size_t i = 0; i < count; i++) {
    bytes += srcs[i].size;
    uint8_t *ptr = NULL;
    uint64_t size = 0;
    ruda_status_t err = ruda__cpu_resolve(s, &descs[i].binding, &ptr, &size);
    if (!err) err = check_extent(&descs[i], size);
    if (!err) {
      uint64_t n = UINT64_MAX;
      (void)ruda_shape_num_bytes(&descs[i].shape, descs[i].elem_size, &n);
      if (n > srcs[i].size || (n && !srcs[i].data)) {
        err = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "write of %llu bytes from a %llu-byte buffer",
                                 (unsigned long long)n, (unsigned long long)srcs[i].size);
      } else {
        strided_copy(ptr, &descs[i].shape, &descs[i].strides, descs[i].elem_size,
                     srcs[i].data, true);
      }
    }
    if (rs) ruda__stream_push_error(rs, err);
    else ruda_status_free(err);
    ruda_bytes_release(&srcs[i]);
  }
  if (t0) ruda__trace_slice(s->base.device, stream.value, "copy", "write", t0, ruda__now_ns(), bytes);
}

RUDA__HOT
static ruda_status_t cpu_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                              void *const *dsts, size_t count, ruda_stream_id_t stream,
                              ruda__future_t **out) {
  cpu_server_t *s = cpu(base);
  *out = NULL;
  ruda__stream_t *rs = ruda__stream_find(&s->base.streams, stream);
  ruda_status_t err = rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
  if (err) return err;
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0, bytes = 0;
  for (size_t i = 0; i < count; i++) {
    uint8_t *ptr = NULL;
    uint64_t size = 0;
    err = ruda__cpu_resolve(s, &descs[i].binding, &ptr, &size);
    if (!err) err = check_extent(&descs[i], size);
    if (err) return ruda_status_into_server(err);
    strided_copy(ptr, &descs[i].shape, &descs[i].strides, descs[i].elem_size, dsts[i], false);
    bytes += ruda_shape_num_elems(&descs[i].shape) * descs[i].elem_size;
  }
  if (t0) ruda__trace_slice(s->base.device, stream.value, "copy", "read", t0, ruda__now_ns(), bytes);
  *out = NULL; /* done: the work ran before this answer */
  return NULL;
}

static ruda_status_t cpu_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                      ruda_stream_id_t stream, ruda_resource_t *out) {
  uint8_t *ptr = NULL;
  uint64_t size = 0;
  ruda_status_t err = ruda__cpu_resolve(cpu(base), b, &ptr, &size);
  if (err) return err;
  out->address = (uint64_t)(uintptr_t)ptr;
  out->size = size;
  return NULL;
}

static ruda_status_t cpu_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_memory_usage_t *out) {
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  memset(out, 0, sizeof *out);
  if (!rs) return NULL; /* a stream without state holds nothing */
  ruda_status_t err = ruda__stream_check(rs, RUDA__MODE_CHECK);
  if (err) return err;
  *out = cpu_stream_usage(base, rs);
  return NULL;
}

static void cpu_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream) {
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  cpu_stream_t *st = rs ? ext(rs) : NULL;
  if (st && st->mm) ruda__memory_cleanup(st->mm, true);
  ruda__server_trace_memory(base);
}

static void cpu_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                                ruda_stream_id_t stream) {
  cpu_stream_t *st;
  stream_get(cpu(base), stream, &st);
  if (st) ruda__memory_set_mode(st->mm, mode);
}

/* ---- Synchronisation ---- */

static ruda_status_t cpu_flush(ruda__server_t *base, ruda_stream_id_t stream) {
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  return rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
}

RUDA__HOT
static ruda_status_t cpu_sync(ruda__server_t *base, ruda_stream_id_t stream,
                              ruda__future_t **out) {
  *out = NULL;
  /* Work ran on this thread before the sync was reached: nothing to wait. */
  if (ruda__trace_on()) {
    uint64_t now = ruda__now_ns();
    ruda__trace_slice(base->device, stream.value, "sync", "sync", now, now, 0);
  }
  ruda_status_t err = cpu_flush(base, stream);
  if (err) return err;
  *out = NULL; /* done: the work ran before this answer */
  return NULL;
}

/* ---- Profiling ---- */

/* Work runs on the worker in order, so the host clock read there brackets
 * exactly the work submitted between start and end. An error queued on the
 * stream while a profile is open fails it (ruda__stream_push_error); the
 * error stays queued for the stream's next read, flush or sync. */
static ruda_status_t cpu_start_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                       ruda_profiling_token_t *out) {
  ruda__stream_t *rs = ruda__stream_get(&base->streams, stream);
  if (!rs) return ruda_status_create(RUDA_ERR_PROFILE_UNKNOWN, "out of host memory");
  return ruda__stream_profile_start(&base->streams, rs, ruda__now_ns(), NULL, out);
}

static ruda_status_t cpu_end_profile(ruda__server_t *base, ruda_stream_id_t stream,
                                     ruda_profiling_token_t token,
                                     ruda_profile_duration_t *out) {
  uint64_t end = ruda__now_ns();
  ruda__stream_t *rs = ruda__stream_find(&base->streams, stream);
  if (!rs) {
    return ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED,
                              "token %llu is not open on this stream",
                              (unsigned long long)token.id);
  }
  return ruda__profiler_stop(&rs->profiler, token, end, RUDA_TIMING_DEVICE, out);
}

/* ---- Lifetime ---- */

/* ---- Collectives and send/recv (src/comm/cpu_collective.c) ---- */

static ruda_status_t cpu_comm_init(ruda__server_t *base, const ruda__comm_peers_t *peers,
                                   const void *token, size_t token_len) {
  (void)base;
  (void)token;
  (void)token_len;
  return ruda__cpu_comm_init(peers);
}

static void stream_done(cpu_server_t *s, ruda__stream_t *rs, ruda_status_t err) {
  if (rs) {
    ruda__stream_advance(&s->base.streams, rs);
    ruda__stream_push_error(rs, err);
  } else {
    ruda_status_free(err);
  }
}

/* Reaches the rendezvous even when this device's part failed: the peers
 * wait for every participant. */
static void cpu_collective(ruda__server_t *base, const ruda__coll_t *c, ruda_stream_id_t stream) {
  cpu_server_t *s = cpu(base);
  ruda__stream_t *rs = ruda__stream_get(&s->base.streams, stream);
  ruda__cpu_part_t part = {.coll = c};
  uint8_t *sp = NULL, *dp = NULL;
  ruda_status_t own = rs ? NULL : no_stream();
  if (!own && !ruda_binding_is_empty(&c->src.binding)) {
    own = ruda__cpu_resolve(s, &c->src.binding, &sp, &part.src_bytes);
  }
  if (!own && !ruda_binding_is_empty(&c->dst)) own = ruda__cpu_resolve(s, &c->dst, &dp, &part.dst_bytes);
  part.src = sp;
  part.dst = dp;
  part.error = own;
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0;
  ruda_status_t err = ruda__cpu_collective(&part);
  if (t0) {
    ruda__trace_slice(base->device, stream.value, "collective", ruda__coll_kind_name(c->kind), t0,
                      ruda__now_ns(), c->count * ruda_elem_type_size(c->dtype));
  }
  if (own) {
    ruda_status_free(err);
    err = own;
  }
  stream_done(s, rs, err);
}

/* Collectives run on the worker in submission order: nothing to order. */
static ruda_status_t cpu_sync_collective(ruda__server_t *base, ruda_stream_id_t stream) {
  return NULL;
}

static void cpu_host_call(ruda__server_t *base, const ruda_binding_t *src,
                          const ruda_binding_t *dst, const char *name,
                          ruda_status_t (*fn)(void *ctx, void *src, uint64_t src_bytes,
                                              void *dst, uint64_t dst_bytes),
                          void *ctx, ruda_stream_id_t stream) {
  cpu_server_t *s = cpu(base);
  ruda__stream_t *rs = ruda__stream_get(&s->base.streams, stream);
  uint8_t *sp = NULL, *dp = NULL;
  uint64_t sn = 0, dn = 0;
  ruda_status_t err = rs ? NULL : no_stream();
  if (!err && src && !ruda_binding_is_empty(src)) err = ruda__cpu_resolve(s, src, &sp, &sn);
  if (!err && dst && !ruda_binding_is_empty(dst)) err = ruda__cpu_resolve(s, dst, &dp, &dn);
  /* fn runs even when a buffer failed (with NULL for it): a transport
   * across processes must still take part, or its peers would wait. */
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0;
  ruda_status_t ferr = fn(ctx, sp, sn, dp, dn);
  if (t0)
    ruda__trace_slice(base->device, stream.value, "collective", name, t0, ruda__now_ns(),
                      sn + dn);
  if (err && ferr) {
    /* fn says what it did about it; the buffer's own error says why. */
    const char *a = ruda_status_reason(ferr), *b = ruda_status_reason(err);
    ruda_status_t both = ruda_status_create(ruda_status_kind(ferr), "%s (the buffer: %s)",
                                            a ? a : "failed", b ? b : "unusable");
    ruda_status_free(ferr);
    ruda_status_free(err);
    err = both;
  } else if (!err) {
    err = ferr;
  }
  stream_done(s, rs, err);
}

static void cpu_destroy(ruda__server_t *base) {
  cpu_server_t *s = cpu(base);
  ruda__stream_table_deinit(&s->base.streams);
  if (s->shared) {
    for (uint32_t i = 0; i < ruda__thread_pool_size(s->pool); i++) ruda__free(s->shared[i]);
    ruda__free(s->shared);
  }
  ruda__thread_pool_destroy(s->pool);
  ruda__server_utilities_deinit(&s->base.utilities);
  ruda__free(s);
}

static const ruda__server_vtable_t cpu_vtable = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .initialize_memory = cpu_initialize_memory,
    .import_memory = cpu_import_memory,
    .staging = NULL,
    .read = cpu_read,
    .write = cpu_write,
    .sync = cpu_sync,
    .get_resource = cpu_get_resource,
    .launch = ruda__cpu_launch,
    .flush = cpu_flush,
    .memory_usage = cpu_memory_usage,
    .memory_cleanup = cpu_memory_cleanup,
    .allocation_mode = cpu_allocation_mode,
    .start_profile = cpu_start_profile,
    .end_profile = cpu_end_profile,
    .completes_in_order = true,
    .any_thread = true,
    .comm_enabled = true,
    .comm_reduce_types = RUDA__REDUCE_TYPES_CPU,
    .comm_strided_send = true,
    .sync_collective = cpu_sync_collective,
    .comm_init = cpu_comm_init,
    .collective = cpu_collective,
    .host_call = cpu_host_call,
};

static ruda_status_t cpu_create_server(uint16_t index, ruda__server_t **out) {
  *out = NULL;
  cpu_server_t *s = ruda__calloc(1, sizeof *s);
  if (!s) return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating cpu:%u", index);
  ruda_device_properties_t props;
  ruda__cpu_device_properties(&props);
  ruda__layout_policy_t policy = {RUDA_LAYOUT_POLICY_CONTIGUOUS, props.memory.alignment};
  char info[256];
  snprintf(info, sizeof info, "%s, %u cores", props.name, props.hardware.num_cpu_cores);
  ruda__server_utilities_init(&s->base.utilities, &props, info, policy);
  s->base.vt = &cpu_vtable;
  const ruda__cpu_settings_t *settings = ruda__cpu_settings();
  s->memory_limit = settings->memory_limit;
  ruda__stream_table_ops_t ops = {sizeof(cpu_stream_t), cpu_stream_quiesce, cpu_stream_release,
                                  cpu_stream_usage, s};
  ruda_status_t err = ruda__server_streams_init(&s->base, &ops);
  if (!err) err = ruda__thread_pool_create(settings->threads, settings->spin, &s->pool);
  if (!err) {
    s->shared = ruda__calloc(ruda__thread_pool_size(s->pool), sizeof *s->shared);
    if (!s->shared) err = ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory");
  }
  if (err) {
    ruda__stream_table_deinit(&s->base.streams);
    ruda__thread_pool_destroy(s->pool);
    ruda__server_utilities_deinit(&s->base.utilities);
    ruda__free(s);
    return err;
  }
  *out = &s->base;
  return NULL;
}

static ruda_status_t cpu_device_count(uint32_t *out) {
  *out = ruda__cpu_settings()->devices;
  return NULL;
}

const ruda__backend_t ruda__backend_cpu = {
    .type_id = RUDA_DEVICE_TYPE_CPU,
    .name = "cpu",
    .device_count = cpu_device_count,
    .create_server = cpu_create_server,
    .compile_portable = ruda__cpu_compile_portable,
};
