/* The operation pipeline of the device backends: stream resolution,
 * cross-stream ordering, kept bindings and their fences, copies prepared,
 * the timeline trace (stream_op.h). */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "ruda/log.h"
#include "server/kernel_object.h"
#include "server/server.h"
#include "server/stream_op.h"
#include "server/trace.h"

RUDA__HOT
void *ruda__stream_pipe_get(ruda__stream_pipeline_t *p, ruda_stream_id_t id) {
  ruda__stream_t *rs = ruda__stream_get(&p->server->streams, id);
  if (rs == NULL) return NULL;
  ruda__stream_pipe_t *pipe = ruda__stream_ext(rs);
  if (pipe->ready) return pipe;
  if (!p->stream_init(p->backend, rs)) return NULL;
  pipe->ready = true;
  if (!p->group->device[0])
    ruda__memory_group_init(p->group, p->server->device, p->server->memory_reuse);
  ruda__memory_manager_join(pipe->memory, p->group, id.value);
  return pipe;
}

RUDA__HOT
void *ruda__stream_pipe_find(ruda__stream_pipeline_t *p, ruda_stream_id_t id) {
  ruda__stream_t *rs = ruda__stream_find(&p->server->streams, id);
  if (rs == NULL) return NULL;
  ruda__stream_pipe_t *pipe = ruda__stream_ext(rs);
  return pipe->ready ? pipe : NULL;
}

/* ---- Cross-stream ordering ---- */

/* The origin cursor `pipe` last waited on, growing the array to cover
 * `index`; NULL when it cannot grow (the caller then always waits). */
static uint64_t *last_synced_slot(ruda__stream_pipe_t *pipe, uint32_t index) {
  if (index >= pipe->nlast_synced) {
    uint32_t n = pipe->nlast_synced ? pipe->nlast_synced : 16;
    while (n <= index) n *= 2;
    uint64_t *a = ruda__realloc(pipe->last_synced, n * sizeof *a);
    if (a == NULL) return NULL;
    memset(a + pipe->nlast_synced, 0, (n - pipe->nlast_synced) * sizeof *a);
    pipe->last_synced = a;
    pipe->nlast_synced = n;
  }
  return &pipe->last_synced[index];
}

void ruda__stream_order_other(ruda__stream_pipeline_t *p, void *stream, const ruda_binding_t *b,
                              ruda__keep_list_t *keep) {
  ruda__stream_t *ors = ruda__stream_find(&p->server->streams, b->stream);
  if (ors == NULL) return; /* no state: the memory is not bound here */
  ruda__stream_pipe_t *origin = ruda__stream_ext(ors);
  if (origin == stream || !origin->ready) return;
  uint64_t *seen = last_synced_slot(stream, ors->index);
  if (seen == NULL || *seen < ors->cursor) {
    const ruda__stream_fence_t *f = p->fence;
    void *fence = NULL;
    ruda__fence_made_t made = f->record(p->backend, origin, &fence);
    if (made == RUDA__FENCE_MADE) {
      /* The wait captures the fence as it is now: it goes back at once. */
      if (!f->wait_on(p->backend, stream, fence)) f->synchronize(p->backend, origin);
      f->release(p->backend, fence);
    } else if (made == RUDA__FENCE_FAILED) {
      f->synchronize(p->backend, origin);
    }
    if (seen != NULL) *seen = ors->cursor;
    if (ruda_log_enabled(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_BASIC))
      ruda_log(RUDA_LOG_CHANNEL_STREAMING, RUDA_LOG_LEVEL_BASIC,
               "[%s] stream %llu waits on stream %llu", p->server->vt->name,
               (unsigned long long)ruda__stream_of_ext(stream)->id, (unsigned long long)ors->id);
  }
  if (keep->n == keep->cap) {
    size_t cap = keep->cap ? keep->cap * 2 : 4;
    ruda_binding_t *ni = ruda__realloc(keep->items, cap * sizeof *ni);
    if (ni == NULL) {
      keep->sync = true;
      return;
    }
    keep->items = ni;
    keep->cap = cap;
  }
  keep->items[keep->n++] = ruda_binding_clone(b);
}

RUDA__HOT
ruda_status_t ruda__stream_resolve(ruda__stream_pipeline_t *p, void *near, const ruda_binding_t *b,
                                   ruda__storage_handle_t *out) {
  ruda__stream_pipe_t *origin = NULL;
  if (near != NULL && ruda__stream_pipe(near)->ready &&
      ruda__stream_of_ext(near)->id == b->stream.value && b->id != 0)
    origin = near; /* memory of the stream the operation runs on: no lookup */
  else if (b->id != 0)
    origin = ruda__stream_pipe_find(p, b->stream);
  if (origin == NULL)
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "the buffer is not bound on this device");
  return ruda__memory_resolve_binding(origin->memory, b, out);
}

/* ruda__stream_copy_part, inlined where ruda__stream_copy_begin prepares
 * the first view (a small read makes no call of its own for it). */
static inline __attribute__((always_inline)) ruda_status_t copy_part(
    ruda__stream_pipeline_t *p, void *stream, const ruda__copy_desc_t *d, const char *what,
    ruda__copy_ctx_t *out) {
  out->rs = stream ? ruda__stream_of_ext(stream) : NULL;
  out->stream = stream;
  out->desc = d;
  out->bytes = 0;
  if (!ruda__copy_geometry(d, &out->width, &out->height, &out->pitch))
    return ruda__copy_strides_error(what);
  out->bytes = out->width * out->height;
  ruda_status_t e = ruda__stream_resolve(p, stream, &d->binding, &out->target);
  if (e) return e;
  /* The furthest byte the rows reach, overflow-checked. */
  uint64_t need = 0;
  if (out->height > 0 &&
      (__builtin_mul_overflow(out->height - 1, out->pitch, &need) ||
       __builtin_add_overflow(need, out->width, &need)))
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN, "%s: the strides reach past 2^64 bytes", what);
  if (need > out->target.size)
    return ruda_status_create(RUDA_ERR_IO_UNKNOWN,
                              "%s: the copy reaches %llu bytes, the view holds %llu", what,
                              (unsigned long long)need, (unsigned long long)out->target.size);
  return NULL;
}

RUDA__HOT
ruda_status_t ruda__stream_copy_part(ruda__stream_pipeline_t *p, void *stream,
                                     const ruda__copy_desc_t *d, const char *what,
                                     ruda__copy_ctx_t *out) {
  return copy_part(p, stream, d, what, out);
}

RUDA__HOT
void *ruda__stream_copy_begin(ruda__stream_pipeline_t *p, ruda_stream_id_t stream,
                              const ruda__copy_desc_t *descs, size_t count, bool read,
                              ruda__copy_ctx_t *first, ruda_status_t *first_err,
                              ruda__keep_list_t *keep, ruda_status_t *err) {
  void *st = ruda__stream_pipe_get(p, stream);
  if (read) {
    /* Without its backend part the stream may still hold the reason. */
    ruda__stream_t *rs =
        st ? ruda__stream_of_ext(st) : ruda__stream_find(&p->server->streams, stream);
    ruda_status_t e = rs ? ruda__stream_check(rs, RUDA__MODE_DRAIN) : NULL;
    if (e == NULL && st == NULL)
      e = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "the stream could not be created");
    if (e) {
      *err = e;
      return NULL;
    }
    ruda__stream_pipe_t *pipe = st;
    if (pipe->nkept || pipe->nspans) ruda__stream_pipe_poll(p, st, false);
  } else if (st == NULL) {
    return NULL;
  }
  for (size_t i = 0; i < count; i++) ruda__stream_order(p, st, &descs[i].binding, keep);
  if (count > 0)
    *first_err = copy_part(p, st, &descs[0], read ? "read" : "write", first);
  return st;
}

/* ---- Launches ---- */

RUDA__HOT
void *ruda__stream_launch_begin(ruda__stream_pipeline_t *p, ruda_kernel_t *kernel,
                                const ruda__count_t *count, const ruda__launch_args_t *args,
                                ruda_stream_id_t stream, ruda__storage_handle_t *small,
                                ruda__launch_ctx_t *ctx, ruda__keep_list_t *keep,
                                ruda_status_t *err) {
  void *st = ruda__stream_pipe_get(p, stream);
  if (st == NULL) return NULL;
  ruda__stream_pipe_t *pipe = st;
  if (pipe->nkept || pipe->nspans) ruda__stream_pipe_poll(p, st, false);
  size_t nb = args->num_buffers, nt = args->num_tensor_maps;
  for (size_t i = 0; i < nb; i++) ruda__stream_order(p, st, &args->buffers[i], keep);
  for (size_t i = 0; i < nt; i++) ruda__stream_order(p, st, &args->tensor_map_buffers[i], keep);
  if (count->dynamic) ruda__stream_order(p, st, &count->buffer, keep);

  ruda__storage_handle_t *h =
      nb + nt <= RUDA__LAUNCH_INLINE ? small : ruda__calloc(nb + nt, sizeof *h);
  *ctx = (ruda__launch_ctx_t){ruda__stream_of_ext(st), st, kernel, &kernel->desc, count, args, h,
                              h ? h + nb : NULL, {0}};
  if (h == NULL) {
    *err = ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "no host memory for %zu bindings",
                              nb + nt);
    return st;
  }
  ruda_status_t e = NULL;
  for (size_t i = 0; i < nb && !e; i++) e = ruda__stream_resolve(p, st, &args->buffers[i], &h[i]);
  for (size_t i = 0; i < nt && !e; i++)
    e = ruda__stream_resolve(p, st, &args->tensor_map_buffers[i], &h[nb + i]);
  if (!e && count->dynamic) e = ruda__stream_resolve(p, st, &count->buffer, &ctx->count_buffer);
  if (e) *err = ruda_status_wrap(RUDA_ERR_LAUNCH_IO, e);
  return st;
}

RUDA__HOT
void ruda__stream_launch_end(ruda__stream_pipeline_t *p, const ruda__launch_ctx_t *ctx,
                             const ruda__storage_handle_t *small, ruda__keep_list_t *keep,
                             ruda_status_t err) {
  if (err) ruda__stream_push_launch_error(ctx->rs, err, ctx->desc->name);
  if (ctx->buffers != small) ruda__free((void *)ctx->buffers);
  ruda__stream_op_end(p, ctx->stream, keep);
}

/* ---- Allocations ---- */

void ruda__stream_alloc(ruda__stream_pipeline_t *p, void *stream, ruda_memory_t *memory,
                        uint64_t size) {
  ruda__stream_t *rs = ruda__stream_of_ext(stream);
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0;
  ruda_status_t e = ruda__memory_alloc(ruda__stream_pipe(stream)->memory, memory, size, rs->cursor);
  if (t0) {
    ruda__trace_slice(p->server->device, rs->id, "alloc", "alloc", t0, ruda__now_ns(), size);
    ruda__server_trace_memory(p->server);
  }
  if (e) ruda__stream_push_error(rs, e);
}

/* ---- The timeline trace ---- */

long ruda__stream_trace_open(ruda__stream_pipeline_t *p, void *stream, const char *category,
                             const char *name, uint64_t bytes) {
  ruda__stream_pipe_t *pipe = stream;
  if (pipe->nspans == pipe->capspans) {
    size_t cap = pipe->capspans ? pipe->capspans * 2 : 64;
    ruda__trace_span_t *ns = ruda__realloc(pipe->spans, cap * sizeof *ns);
    if (ns == NULL) return -1;
    pipe->spans = ns;
    pipe->capspans = cap;
  }
  ruda__trace_span_t *t = &pipe->spans[pipe->nspans];
  memset(t, 0, sizeof *t);
  if (p->timer != NULL && (t->start = p->timer->mark(p->backend, stream)) == NULL) return -1;
  t->enqueued_ns = ruda__now_ns();
  t->bytes = bytes;
  t->category = category;
  snprintf(t->name, sizeof t->name, "%s", name);
  return (long)pipe->nspans++;
}

void ruda__stream_trace_close(ruda__stream_pipeline_t *p, void *stream, long idx) {
  ruda__stream_pipe_t *pipe = stream;
  ruda__trace_span_t *t = &pipe->spans[idx];
  if (p->timer == NULL) {
    /* Timed on the host: emitted now (nothing waits before it). */
    ruda__trace_slice(p->server->device, ruda__stream_of_ext(stream)->id, t->category, t->name,
                      t->enqueued_ns, ruda__now_ns(), t->bytes);
    pipe->nspans--;
    return;
  }
  t->end = p->timer->mark(p->backend, stream);
  if (t->end == NULL) {
    p->timer->release(p->backend, t->start);
    pipe->nspans--;
  }
}

/* Emits the finished slices of `pipe` in order. */
static void spans_poll(ruda__stream_pipeline_t *p, ruda__stream_pipe_t *pipe, bool wait) {
  size_t done = 0;
  for (; done < pipe->nspans; done++) {
    ruda__trace_span_t *t = &pipe->spans[done];
    uint64_t ns = 0;
    if (p->timer->elapsed(p->backend, t->start, t->end, wait, &ns) < 0) break;
    /* Not measured (a driver without timestamps for the marks, a failed
     * operation): the slice is still there, without a duration. */
    uint64_t start = t->enqueued_ns > pipe->spans_last_end ? t->enqueued_ns : pipe->spans_last_end;
    ruda__trace_slice(p->server->device, ruda__stream_of_ext(pipe)->id, t->category, t->name,
                      start, start + ns, t->bytes);
    pipe->spans_last_end = start + ns;
    p->timer->release(p->backend, t->start);
    p->timer->release(p->backend, t->end);
  }
  if (done > 0) {
    memmove(pipe->spans, pipe->spans + done, (pipe->nspans - done) * sizeof *pipe->spans);
    pipe->nspans -= done;
  }
}

/* ---- Kept bindings ---- */

static void keep_release(ruda_binding_t *items, size_t n) {
  for (size_t i = 0; i < n; i++) ruda_binding_release(&items[i]);
  ruda__free(items);
}

RUDA__HOT
void ruda__stream_op_end(ruda__stream_pipeline_t *p, void *stream, ruda__keep_list_t *keep) {
  ruda__stream_advance(&p->server->streams, ruda__stream_of_ext(stream));
  if (keep->n == 0 && !keep->sync) return;
  ruda__stream_pipe_t *pipe = stream;
  if (pipe->nkept == pipe->capkept) {
    size_t cap = pipe->capkept ? pipe->capkept * 2 : 8;
    ruda__kept_batch_t *nk = ruda__realloc(pipe->kept, cap * sizeof *nk);
    if (nk != NULL) {
      pipe->kept = nk;
      pipe->capkept = cap;
    }
  }
  void *fence = NULL;
  ruda__fence_made_t made = keep->sync || pipe->nkept == pipe->capkept
                                ? RUDA__FENCE_FAILED
                                : p->fence->record(p->backend, stream, &fence);
  if (made != RUDA__FENCE_MADE) {
    /* Nothing in flight, or no fence: the work is waited for now. */
    if (made == RUDA__FENCE_FAILED) p->fence->synchronize(p->backend, stream);
    keep_release(keep->items, keep->n);
    return;
  }
  if (pipe->nkept == 0) p->busy++;
  pipe->kept[pipe->nkept++] = (ruda__kept_batch_t){fence, keep->items, keep->n};
}

void ruda__stream_pipe_poll(ruda__stream_pipeline_t *p, void *stream, bool wait) {
  ruda__stream_pipe_t *pipe = stream;
  if (pipe->nspans) spans_poll(p, pipe, wait);
  if (pipe->nkept == 0) return;
  size_t w = 0;
  for (size_t i = 0; i < pipe->nkept; i++) {
    ruda__kept_batch_t *b = &pipe->kept[i];
    if (!p->fence->query(p->backend, b->fence, wait)) {
      pipe->kept[w++] = *b;
      continue;
    }
    keep_release(b->bindings, b->n);
    p->fence->release(p->backend, b->fence);
  }
  pipe->nkept = w;
  if (w == 0) p->busy--;
}

static void poll_one(void *ctx, ruda__stream_t *rs) {
  ruda__stream_pipe_t *pipe = ruda__stream_ext(rs);
  if (pipe->ready && (pipe->nkept || pipe->nspans)) ruda__stream_pipe_poll(ctx, pipe, false);
}

/* Kept bindings pin memory of their origin stream: a report, a sync or a
 * cleanup of any stream should not count memory that only finished work
 * holds. */
RUDA__HOT
void ruda__stream_pipe_poll_all(ruda__stream_pipeline_t *p) {
  if (p->busy == 0) return;
  ruda__stream_table_foreach(&p->server->streams, poll_one, p);
}

bool ruda__stream_pipe_settled(ruda__stream_pipeline_t *p, void *stream) {
  ruda__stream_pipe_poll(p, stream, false);
  return ruda__stream_pipe(stream)->nkept == 0 && ruda__stream_pipe(stream)->nspans == 0;
}

bool ruda__stream_pipe_memory_idle(ruda__stream_pipeline_t *p, void *stream,
                                   ruda__memory_manager_t *staging) {
  ruda__memory_manager_t *mm = ruda__stream_pipe(stream)->memory;
  return ruda__memory_usage(mm).number_allocs == 0 &&
         (staging == NULL || ruda__memory_usage(staging).number_allocs == 0) &&
         ruda__memory_mode(mm) ==
             ruda__device_settings_initial_mode(&p->server->utilities.settings);
}

ruda_memory_usage_t ruda__stream_pipe_usage(void *ctx, ruda__stream_t *rs) {
  (void)ctx;
  ruda__stream_pipe_t *pipe = ruda__stream_ext(rs);
  ruda_memory_usage_t none = {0, 0, 0, 0};
  return pipe->ready ? ruda__memory_usage(pipe->memory) : none;
}

void ruda__stream_pipe_deinit(ruda__stream_pipeline_t *p, void *stream, bool fences_alive) {
  ruda__stream_pipe_t *pipe = stream;
  if (fences_alive) {
    ruda__stream_pipe_poll(p, pipe, true);
  } else {
    if (pipe->nkept) {
      for (size_t i = 0; i < pipe->nkept; i++)
        keep_release(pipe->kept[i].bindings, pipe->kept[i].n);
      pipe->nkept = 0;
      p->busy--;
    }
    pipe->nspans = 0; /* the marks went with the device */
  }
  ruda__free(pipe->spans);
  pipe->spans = NULL;
  pipe->capspans = 0;
  ruda__free(pipe->kept);
  ruda__free(pipe->last_synced);
  pipe->kept = NULL;
  pipe->last_synced = NULL;
  pipe->nlast_synced = 0;
  pipe->capkept = 0;
}
