/* The operation pipeline of the device backends (CUDA, OpenCL): what every
 * operation on a stream does around its device calls, written once.
 *
 *   1. resolve the stream: its state in the stream table, with the
 *      backend's part set up on first use (ruda__stream_pipe_get);
 *   2. release what finished work kept alive (ruda__stream_pipe_poll);
 *   3. order the stream after the stream that produced each binding it
 *      uses, and keep each such binding alive (ruda__stream_order);
 *   4. resolve the bindings' storage (ruda__stream_resolve);
 *   5. the backend's device calls, bracketed for the timeline trace
 *      (ruda__stream_trace_begin/end: a host span, timed on the device
 *      where the backend supplies a timer, ruda__stream_timer_t);
 *   6. end the operation: advance the stream's cursor and fence the kept
 *      bindings (ruda__stream_op_end).
 *
 * A backend supplies its device calls and a fence (ruda__stream_fence_t):
 * record, wait on, query, synchronize, release; optionally a timer for the
 * trace. Everything about ordering, lifetime and the trace is here.
 * Launches, writes and reads run the whole pipeline here
 * (ruda__stream_launch, ruda__stream_write, ruda__stream_read: steps 1 to
 * 4 in one call into stream_op.c, the device calls, step 6 in another):
 * the backend's function receives the operation prepared
 * (ruda__launch_ctx_t, ruda__copy_ctx_t: the stream, its extension, the
 * resolved storage) and makes only its device calls. Allocations
 * (ruda__stream_alloc) and syncs (ruda__stream_trace_sync) are traced
 * here too. The backends' other operations (graphs, collectives) call the
 * steps themselves.
 *
 * The backend's extension of a stream's state (stream_table.h) starts with
 * a ruda__stream_pipe_t, so that the extension and the pipe have one
 * address: the `stream` the fence operations receive is that extension.
 *
 * Not thread-safe: a pipeline belongs to one server, used on its device's
 * worker thread.
 */
#ifndef RUDA_SERVER_STREAM_OP_H
#define RUDA_SERVER_STREAM_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "memory/memory_manager.h"
#include "server/server.h"
#include "server/stream_table.h"
#include "server/trace.h"

/* The bindings an operation uses from other streams, cloned to keep their
 * memory alive until the operation's work has completed. Zeroed before the
 * operation; ruda__stream_op_end takes it. */
typedef struct ruda__keep_list {
  ruda_binding_t *items;
  size_t n, cap;
  bool sync; /* a clone failed: the operation's end waits for its work */
} ruda__keep_list_t;

/* What ruda__stream_fence_t.record did. */
typedef enum ruda__fence_made {
  RUDA__FENCE_FAILED = -1, /* no fence: the pipeline synchronizes instead */
  RUDA__FENCE_IDLE = 0,    /* nothing of the stream is in flight: none needed */
  RUDA__FENCE_MADE = 1,
} ruda__fence_made_t;

/* A backend's fence: a point in a stream's work (a CUDA event, an OpenCL
 * event). `backend` is ruda__stream_pipeline_t.backend; `stream` a
 * stream's backend extension. Worker thread. */
typedef struct ruda__stream_fence {
  /* A fence after everything enqueued on `stream` so far, in *out. */
  ruda__fence_made_t (*record)(void *backend, void *stream, void **out);
  /* Makes the work enqueued on `stream` from now on wait for `fence`;
   * false when it cannot (the pipeline then synchronizes the fence's
   * stream). */
  bool (*wait_on)(void *backend, void *stream, void *fence);
  /* Whether `fence` has completed (or failed: its error is reported by
   * the operations that wait on the stream); `wait`: waits for it first. */
  bool (*query)(void *backend, void *fence, bool wait);
  /* Waits for everything enqueued on `stream`. */
  void (*synchronize)(void *backend, void *stream);
  /* Gives `fence` back. */
  void (*release)(void *backend, void *fence);
} ruda__stream_fence_t;

/* A backend's device timer for the trace (optional: without one a slice
 * is the host's time around the device calls). `backend` and `stream` as
 * for the fence. Worker thread. */
typedef struct ruda__stream_timer {
  /* A timed mark after everything enqueued on `stream` so far; NULL when
   * none can be made (the slice is then dropped). */
  void *(*mark)(void *backend, void *stream);
  /* -1 while `end` has not completed (`wait`: waits for it first); else 1
   * with *ns the device time from `start` to `end`, or 0 when it cannot
   * be measured (the slice is then emitted without a duration). */
  int (*elapsed)(void *backend, void *start, void *end, bool wait, uint64_t *ns);
  /* Gives a mark back. */
  void (*release)(void *backend, void *mark);
} ruda__stream_timer_t;

/* A slice of the trace waiting for its device time. */
typedef struct ruda__trace_span {
  void *start, *end; /* the timer's marks */
  uint64_t enqueued_ns, bytes;
  const char *category; /* static */
  char name[64];
} ruda__trace_span_t;

/* A batch of kept bindings and the fence after the work that uses them. */
typedef struct ruda__kept_batch {
  void *fence;
  ruda_binding_t *bindings;
  size_t n;
} ruda__kept_batch_t;

/* The pipeline's part of a stream: the first member of the backend's
 * extension, zeroed with it. */
typedef struct ruda__stream_pipe {
  bool ready; /* the backend set the stream up (stream_init) */
  /* The device memory the stream allocates from (set by stream_init):
   * bindings of the stream resolve in it. */
  ruda__memory_manager_t *memory;
  /* Per origin stream (by state index): the origin's cursor when this
   * stream last waited on it. Grown on demand; cursors come from one
   * server-wide clock, so an entry left by a reclaimed origin whose index
   * was reused is always older than the new origin's cursor (a wait too
   * many, never one too few). */
  uint64_t *last_synced;
  uint32_t nlast_synced;
  ruda__kept_batch_t *kept;
  size_t nkept, capkept;
  /* Trace slices waiting for their device time, in order; a slice is
   * placed at the later of its enqueue time and the end of the one before
   * (the device clock has no exact mapping to the host's). */
  ruda__trace_span_t *spans;
  size_t nspans, capspans;
  uint64_t spans_last_end;
} ruda__stream_pipe_t;

/* A launch prepared for the backend's device calls: its stream set up,
 * finished work released, every binding ordered after its producer,
 * kept, and resolved. */
typedef struct ruda__launch_ctx {
  ruda__stream_t *rs; /* the stream's state (errors, cursor) */
  void *stream;       /* its backend extension */
  ruda_kernel_t *kernel;
  const ruda_kernel_desc_t *desc; /* the kernel's */
  const ruda__count_t *count;
  const ruda__launch_args_t *args;
  /* The storage of args->buffers[i] and args->tensor_map_buffers[i];
   * `size` is what the device holds from the view's start on. */
  const ruda__storage_handle_t *buffers, *tensor_maps;
  ruda__storage_handle_t count_buffer; /* count->buffer's, when dynamic */
} ruda__launch_ctx_t;

typedef struct ruda__stream_pipeline {
  ruda__server_t *server; /* its stream table, device and reuse cache */
  const ruda__stream_fence_t *fence;
  const ruda__stream_timer_t *timer; /* NULL: slices are timed on the host */
  /* Sets up the backend part of `rs` on its first use (the extension is
   * zeroed, `memory` to set); false when it cannot, the reason queued on
   * `rs` (or nowhere, when the device is lost and every operation reports
   * that already). */
  bool (*stream_init)(void *backend, ruda__stream_t *rs);
  void *backend;
  /* Every stream's device manager joins it (out-of-memory reports). */
  ruda__memory_group_t *group;
  uint32_t busy; /* streams holding kept bindings */
} ruda__stream_pipeline_t;

/* The extension of stream `id` (whose first member is its pipe), set up on
 * first use; NULL when it cannot be (the reason is queued on the stream
 * when its state exists). */
void *ruda__stream_pipe_get(ruda__stream_pipeline_t *p, ruda_stream_id_t id);
/* The extension of a stream that exists and was set up, or NULL (never
 * creates anything). */
void *ruda__stream_pipe_find(ruda__stream_pipeline_t *p, ruda_stream_id_t id);

/* Orders `stream` (an extension) after the work on `b`'s stream when that
 * is another stream that was set up (a fence of the origin waited on, once
 * per origin cursor), and keeps a clone of `b` in `keep`. Memory of the
 * stream itself (the usual case) costs one compare, inline; the rest is
 * ruda__stream_order_other's. */
void ruda__stream_order_other(ruda__stream_pipeline_t *p, void *stream, const ruda_binding_t *b,
                              ruda__keep_list_t *keep);
static inline void ruda__stream_order(ruda__stream_pipeline_t *p, void *stream,
                                      const ruda_binding_t *b, ruda__keep_list_t *keep) {
  if (b->stream.value != ruda__stream_of_ext(stream)->id && b->id != 0)
    ruda__stream_order_other(p, stream, b, keep);
}
/* The storage of a binding's view, in the device memory of the stream
 * that owns it; out->size is what the device really holds from the view's
 * start on, whatever the view says. IoError::NotFound when the memory is
 * not bound on this device. `near` (an extension, may be NULL): the stream
 * the operation runs on, whose memory needs no lookup of its stream. */
ruda_status_t ruda__stream_resolve(ruda__stream_pipeline_t *p, void *near, const ruda_binding_t *b,
                                   ruda__storage_handle_t *out);
/* Ends an operation on `stream`: other streams see its work as new, and
 * `keep` (taken) stays alive until the work enqueued so far completes. */
void ruda__stream_op_end(ruda__stream_pipeline_t *p, void *stream, ruda__keep_list_t *keep);

/* Releases the kept bindings of finished work on `stream` and emits its
 * finished trace slices (`wait`: waits for all of it first). */
void ruda__stream_pipe_poll(ruda__stream_pipeline_t *p, void *stream, bool wait);
/* ruda__stream_pipe_poll without waiting, on every stream holding kept
 * bindings (one load when none does). */
void ruda__stream_pipe_poll_all(ruda__stream_pipeline_t *p);
/* For the stream table's `quiesce` hook: whether `stream` (set up, its
 * work known complete) holds nothing of the pipeline's once its finished
 * work is released (no kept binding, no trace slice waiting), and
 * whether its device memory and `staging` (a second manager of the
 * stream's, may be NULL) hold no allocation, in the configured allocation
 * mode. */
bool ruda__stream_pipe_settled(ruda__stream_pipeline_t *p, void *stream);
bool ruda__stream_pipe_memory_idle(ruda__stream_pipeline_t *p, void *stream,
                                   ruda__memory_manager_t *staging);
/* The stream table's `usage` hook of a device backend (ctx unused): the
 * usage of the stream's device memory, zero before it was set up. */
ruda_memory_usage_t ruda__stream_pipe_usage(void *ctx, ruda__stream_t *rs);
/* Frees the pipe of `stream`: waits for its kept bindings and trace
 * slices, or releases them at once when `fences_alive` is false (the
 * device took the fences and marks with it). */
void ruda__stream_pipe_deinit(ruda__stream_pipeline_t *p, void *stream, bool fences_alive);

static inline ruda__stream_pipe_t *ruda__stream_pipe(void *stream) { return stream; }

/* ---- The timeline trace ---- */

/* A slice of `category` ("kernel", "copy", static) named `name` around the
 * device calls enqueued on `stream` between begin and end: begin returns
 * its index, or -1 when the trace is off (one relaxed load, no call) or
 * no mark could be made. */
long ruda__stream_trace_open(ruda__stream_pipeline_t *p, void *stream, const char *category,
                             const char *name, uint64_t bytes);
void ruda__stream_trace_close(ruda__stream_pipeline_t *p, void *stream, long idx);
static inline long ruda__stream_trace_begin(ruda__stream_pipeline_t *p, void *stream,
                                            const char *category, const char *name,
                                            uint64_t bytes) {
  return ruda__trace_on() ? ruda__stream_trace_open(p, stream, category, name, bytes) : -1;
}
static inline void ruda__stream_trace_end(ruda__stream_pipeline_t *p, void *stream, long idx) {
  if (idx >= 0) ruda__stream_trace_close(p, stream, idx);
}
/* A sync of `stream` on the trace (an instant slice, "sync"): one relaxed
 * load when the trace is off. */
static inline void ruda__stream_trace_sync(ruda__stream_pipeline_t *p, void *stream) {
  if (!ruda__trace_on()) return;
  uint64_t now = ruda__now_ns();
  ruda__trace_slice(p->server->device, ruda__stream_of_ext(stream)->id, "sync", "sync", now, now,
                    0);
}

/* ---- Allocations ---- */

/* `memory` gets `size` bytes of the device memory of `stream` (an
 * extension set up: its pipe's manager) at the stream's cursor, bracketed
 * for the trace ("alloc", the host's time, then the memory counters); the
 * error (IoError::OutOfMemory, ...) is queued on the stream. */
void ruda__stream_alloc(ruda__stream_pipeline_t *p, void *stream, ruda_memory_t *memory,
                        uint64_t size);

/* ---- Copies ---- */

/* One view of a copy prepared for the backend's device calls: `height`
 * rows of `width` bytes (`bytes` in all, more than 0), packed on the host
 * and `pitch` bytes apart on the device, at `target` (the storage of the
 * view), which holds all of them. */
typedef struct ruda__copy_ctx {
  ruda__stream_t *rs; /* the stream's state */
  void *stream;       /* its backend extension */
  const ruda__copy_desc_t *desc;
  ruda__storage_handle_t target;
  uint64_t width, height, pitch, bytes;
} ruda__copy_ctx_t;

/* Prepares `d` (one side of a `what` copy, "read" or "write") on
 * `stream` (an extension; NULL outside a stream's operation): its
 * geometry (IoError::UnsupportedStrides), its storage
 * (ruda__stream_resolve) and the copy bounded by what the device holds
 * there, not by what the binding claims (IoError::Unknown). out->bytes
 * may be 0 (nothing to copy). */
ruda_status_t ruda__stream_copy_part(ruda__stream_pipeline_t *p, void *stream,
                                     const ruda__copy_desc_t *d, const char *what,
                                     ruda__copy_ctx_t *out);

/* Steps 1 to 4 of a copy on `stream`: the stream (NULL when it cannot be
 * set up; for a `read`, also when its queued errors are returned first,
 * in *err, or when it has no state: *err says so), finished work released
 * (a read's), every binding ordered and kept in `keep`, and the first view
 * prepared in *first (its error in *first_err) when `count` > 0. */
void *ruda__stream_copy_begin(ruda__stream_pipeline_t *p, ruda_stream_id_t stream,
                              const ruda__copy_desc_t *descs, size_t count, bool read,
                              ruda__copy_ctx_t *first, ruda_status_t *first_err,
                              ruda__keep_list_t *keep, ruda_status_t *err);

/* The device calls of one view of a write: `src` (packed, at least
 * c->bytes) is the backend's to release, now or once the copy has read
 * it. Errors are returned (queued on the stream). */
typedef ruda_status_t (*ruda__write_fn)(void *backend, const ruda__copy_ctx_t *c,
                                        ruda_bytes_t *src);

/* A write (server.h's vtable `write`) through the whole pipeline: the
 * stream, each binding ordered and kept, then for each view its
 * preparation (ruda__stream_copy_part, the size of its source checked),
 * `write` bracketed for the trace ("copy", "write"), the operation's end.
 * Every source is released; errors are queued on the stream. Returns the
 * stream's extension (NULL when it could not be set up), for a backend
 * that submits its work after the operation. Inline, so that `write` is a
 * direct call. */
static inline void *ruda__stream_write(ruda__stream_pipeline_t *p, const ruda__copy_desc_t *descs,
                                      ruda_bytes_t *srcs, size_t count, ruda_stream_id_t stream,
                                      ruda__write_fn write) {
  ruda__copy_ctx_t c;
  ruda__keep_list_t keep = {0};
  ruda_status_t e = NULL;
  void *st = ruda__stream_copy_begin(p, stream, descs, count, false, &c, &e, &keep, NULL);
  if (st == NULL) {
    for (size_t i = 0; i < count; i++) ruda_bytes_release(&srcs[i]);
    return NULL;
  }
  for (size_t i = 0; i < count; i++) {
    if (i > 0) e = ruda__stream_copy_part(p, st, &descs[i], "write", &c);
    if (e == NULL && srcs[i].size < c.bytes)
      e = ruda_status_create(RUDA_ERR_IO_UNKNOWN, "write: %llu bytes given, %llu needed",
                             (unsigned long long)srcs[i].size, (unsigned long long)c.bytes);
    if (e == NULL && c.bytes > 0) {
      long tr = ruda__stream_trace_begin(p, st, "copy", "write", c.bytes);
      e = write(p->backend, &c, &srcs[i]);
      ruda__stream_trace_end(p, st, tr);
    }
    ruda_bytes_release(&srcs[i]); /* a no-op when `write` took it */
    if (e) ruda__stream_push_error(ruda__stream_of_ext(st), e);
  }
  ruda__stream_op_end(p, st, &keep);
  return st;
}

/* A read's device calls, in three steps (`backend` is the pipeline's,
 * `stream` the extension):
 *   start: after the ordering, before any view is read; may serve the
 *     whole read itself from `first` (the first view prepared, NULL when
 *     it could not be or `count` is 0): returns true, its error in *err;
 *     else sets up the backend's operation in *op (its future) and returns
 *     false (with *err set on failure: the read fails with it);
 *   part: the device calls of one prepared view into `dst`; its error ends
 *     the read (no later view is read);
 *   end: after the operation's end (ruda__stream_op_end): the future of
 *     the read in *out, carrying `early` (taken: the first error). */
typedef bool (*ruda__read_start_fn)(void *backend, void *stream, const ruda__copy_desc_t *descs,
                                    size_t count, const ruda__copy_ctx_t *first,
                                    void *const *dsts, void **op, ruda_status_t *err);
typedef ruda_status_t (*ruda__read_part_fn)(void *backend, const ruda__copy_ctx_t *c, void *dst,
                                            void *op);
typedef ruda_status_t (*ruda__read_end_fn)(void *backend, void *stream, void *op,
                                           ruda_status_t early, ruda__future_t **out);

/* A read (server.h's vtable `read`) through the whole pipeline: the
 * stream (its queued errors returned first), finished work released, each
 * binding ordered and kept, the first view prepared, `start`, each view
 * read (`part`, bracketed for the trace: "copy", "read") until one fails,
 * the operation's end, then `end`. Inline, so that the steps are direct
 * calls. */
static inline ruda_status_t ruda__stream_read(ruda__stream_pipeline_t *p,
                                              const ruda__copy_desc_t *descs, void *const *dsts,
                                              size_t count, ruda_stream_id_t stream,
                                              ruda__future_t **out, ruda__read_start_fn start,
                                              ruda__read_part_fn part, ruda__read_end_fn end) {
  *out = NULL;
  ruda__copy_ctx_t c;
  ruda__keep_list_t keep = {0};
  ruda_status_t early = NULL, e = NULL;
  void *st = ruda__stream_copy_begin(p, stream, descs, count, true, &c, &early, &keep, &e);
  if (st == NULL) return e;
  void *op = NULL;
  if (start(p->backend, st, descs, count, count && !early ? &c : NULL, dsts, &op, &e) || e) {
    if (keep.n) ruda__stream_op_end(p, st, &keep);
    if (early) ruda_status_free(early);
    return e;
  }
  for (size_t i = 0; i < count && early == NULL; i++) {
    if (i > 0) early = ruda__stream_copy_part(p, st, &descs[i], "read", &c);
    if (early || c.bytes == 0) continue;
    long tr = ruda__stream_trace_begin(p, st, "copy", "read", c.bytes);
    early = part(p->backend, &c, dsts[i], op);
    ruda__stream_trace_end(p, st, tr);
  }
  ruda__stream_op_end(p, st, &keep);
  return end(p->backend, st, op, early, out);
}

/* The device calls of a launch (`backend` is ruda__stream_pipeline_t's):
 * its error is returned, and queued on the stream as the kernel's launch
 * error. */
typedef ruda_status_t (*ruda__launch_fn)(void *backend, const ruda__launch_ctx_t *ctx);

#define RUDA__LAUNCH_INLINE 16 /* bindings resolved without an allocation */

/* Steps 1 to 4 of a launch on `stream`: the stream (NULL when it cannot
 * be set up), its finished work released, every binding ordered, kept in
 * `keep` and resolved into *ctx (`small`, RUDA__LAUNCH_INLINE entries,
 * holds the storage when it is enough). *err: a binding not bound here
 * (LaunchError::IoError) or no host memory; ctx is complete either way,
 * for ruda__stream_launch_end. */
void *ruda__stream_launch_begin(ruda__stream_pipeline_t *p, ruda_kernel_t *kernel,
                                const ruda__count_t *count, const ruda__launch_args_t *args,
                                ruda_stream_id_t stream, ruda__storage_handle_t *small,
                                ruda__launch_ctx_t *ctx, ruda__keep_list_t *keep,
                                ruda_status_t *err);
/* Step 6 of a launch: `err` (taken) queued on the stream as the kernel's
 * launch error, the storage freed, the operation's end. */
void ruda__stream_launch_end(ruda__stream_pipeline_t *p, const ruda__launch_ctx_t *ctx,
                             const ruda__storage_handle_t *small, ruda__keep_list_t *keep,
                             ruda_status_t err);

/* A backend's launch (server.h's vtable `launch`, validated before it was
 * queued) through the whole pipeline: ruda__stream_launch_begin, then
 * `launch` bracketed for the trace ("kernel", the kernel's name), then
 * ruda__stream_launch_end. Inline, so that the backend's device call is a
 * direct call. */
static inline void ruda__stream_launch(ruda__stream_pipeline_t *p, ruda_kernel_t *kernel,
                                       const ruda__count_t *count,
                                       const ruda__launch_args_t *args, ruda_stream_id_t stream,
                                       ruda__launch_fn launch) {
  ruda__storage_handle_t small[RUDA__LAUNCH_INLINE];
  ruda__launch_ctx_t ctx;
  ruda__keep_list_t keep = {0};
  ruda_status_t e = NULL;
  if (ruda__stream_launch_begin(p, kernel, count, args, stream, small, &ctx, &keep, &e) == NULL)
    return;
  if (e == NULL) {
    long tr = ruda__stream_trace_begin(p, ctx.stream, "kernel", ctx.desc->name, 0);
    e = launch(p->backend, &ctx);
    ruda__stream_trace_end(p, ctx.stream, tr);
  }
  ruda__stream_launch_end(p, &ctx, small, &keep, e);
}

#endif /* RUDA_SERVER_STREAM_OP_H */
