/* Internal interface shared by the files of the OpenCL compute server:
 *
 *   opencl_server.c  the vtable, creation and destruction, profiling
 *   opencl_stream.c  per-stream state (command queue, memory managers,
 *                    errors, cursor), the cl_mem storages and their
 *                    sub-buffers, cross-stream ordering and deferred
 *                    releases, the timeline trace
 *   opencl_copy.c    the memory methods, reads, writes, futures, sync and
 *                    flush
 *   opencl_launch.c  kernel launches
 *
 * Design notes are at the top of opencl_server.c. Everything runs on the
 * device's worker thread unless a comment says otherwise (futures are
 * waited on from any thread). Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_SERVER_H
#define RUDA_OPENCL_SERVER_H

#include "backends/opencl/opencl_internal.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "server/server.h"

#define RECENT_KERNELS 4
#define INFO_RING 16             /* host copies of info words in flight */
#define SUBBUF_MAX 1024          /* cached sub-buffers per page before a reset */
#define PINNED_PAGE (256ull << 20)

typedef struct ocl_server ocl_server_t;

/* A cached sub-buffer of a page: the view [offset, offset + size). */
typedef struct subbuf {
  uint64_t offset, size;
  cl_mem mem;
} subbuf_t;

/* One storage allocation (a pool's page). The storage handle's `base` is
 * the page's address in host memory (the page record), never dereferenced
 * by the memory layer: the device address of a slice is (mem, offset).
 * Pinned pages also have the mapped host pointer. */
typedef struct page {
  cl_mem mem;
  uint64_t size;
  void *host;       /* pinned pages: the mapping */
  subbuf_t *subs;   /* open addressing by (offset, size); NULL until needed */
  size_t nsubs, capsubs;
} page_t;

typedef struct cl_storage {
  ocl_server_t *server;
  bool pinned;
  uint64_t next_id;
} cl_storage_t;

/* Kernels launched on a stream since its last completed sync, for fault
 * reports: the last RECENT_KERNELS distinct names and how many in all. */
typedef struct recent_kernels {
  char names[RECENT_KERNELS][64];
  uint32_t n, total;
} recent_kernels_t;

/* Bindings kept alive until the work that uses them has completed. */
typedef struct gc_batch {
  cl_event event;
  ruda_binding_t *bindings;
  size_t n;
} gc_batch_t;

/* A host copy of a launch's info words, kept until its upload is done. */
typedef struct info_slot {
  uint64_t *host;
  size_t cap; /* words */
  cl_event done;
} info_slot_t;

typedef struct trace_item {
  cl_event event;
  uint64_t enqueued_ns, bytes;
  const char *category;
  char name[64];
} trace_item_t;

/* The OpenCL part of a stream's state: the extension of its server-layer
 * state (src/server/stream_table.h: errors, profiles, cursor, index),
 * initialised on first use. Everything per-stream the backend keeps is
 * here. */
typedef struct ocl_stream {
  bool init;
  const ruda__opencl_api_t *api;
  cl_command_queue queue; /* in order, profiling on */
  cl_storage_t *dev_store, *pin_store;
  ruda__memory_manager_t *dev;    /* device pages */
  ruda__memory_manager_t *pinned; /* staging */
  /* Per origin stream (by state index): the origin's cursor when this
   * stream last waited on it. Cursors come from one server-wide clock, so
   * an entry left by a reclaimed origin whose index was reused is older
   * than the new origin's cursor (a wait too many, never one too few). */
  uint64_t *last_synced;
  size_t nlast;
  gc_batch_t *gc;
  size_t ngc, capgc;
  /* Info words: one device buffer, overwritten in stream order (the upload
   * for launch n+1 is ordered after kernel n); the host copies in a ring. */
  cl_mem info_mem;
  size_t info_cap; /* bytes */
  uint64_t *info_last;
  size_t info_last_len; /* words in info_mem now (0: unknown) */
  info_slot_t ring[INFO_RING];
  uint32_t ring_pos;
  bool dirty; /* work enqueued since the last clFlush */
  trace_item_t *trace;
  size_t ntrace, captrace;
  uint64_t trace_last_end;
  recent_kernels_t recent;
} ocl_stream_t;

static inline ocl_stream_t *ocl_ext(ruda__stream_t *rs) { return ruda__stream_ext(rs); }
static inline ruda__stream_t *ocl_rs(ocl_stream_t *st) { return ruda__stream_of_ext(st); }

struct ocl_server {
  ruda__server_t base;
  const ruda__opencl_api_t *api;
  const ruda__opencl_device_t *dev;
  cl_context ctx;
  cl_command_queue service; /* maps of pinned pages */
  ruda__opencl_program_cache_t *programs;
  ruda__memory_group_t memory_group; /* every stream's device manager */
  /* Host buffers whose release waits for an event callback; destroy waits
   * for them (the callbacks run on the driver's threads). */
  atomic_size_t pending_releases;
};

/* The bindings an operation uses from other streams, cloned to keep their
 * memory alive until the operation's work has completed. */
typedef struct keep_list {
  ruda_binding_t *items;
  size_t n, cap;
  bool sync; /* a clone failed: ocl_op_end waits for the work instead */
} keep_list_t;

static inline ocl_server_t *as_ocl(ruda__server_t *s) { return (ocl_server_t *)s; }

/* ---- opencl_stream.c ---- */

/* The stream of `id` with its OpenCL part set up (on first use); NULL
 * when that failed: the reason is queued on the stream (or, with host
 * memory exhausted, there is no stream to queue it on). */
ocl_stream_t *ruda__ocl_stream_get(ocl_server_t *s, ruda_stream_id_t id);
/* The stream of `id` if its OpenCL part exists (never creates). */
ocl_stream_t *ruda__ocl_stream_find(ocl_server_t *s, ruda_stream_id_t id);
/* The stream table's hooks for the OpenCL part (ctx: the server). */
extern const ruda__stream_table_ops_t ruda__ocl_stream_ops;

/* The page and offset of a binding's view (through the memory manager of
 * the stream that owns it): IoError::NotFound when unbound. *out_size is
 * the view's size. */
ruda_status_t ruda__ocl_resolve(ocl_server_t *s, const ruda_binding_t *b, page_t **out_page,
                                uint64_t *out_offset, uint64_t *out_size);
/* A cl_mem covering exactly [offset, offset + size) of `page`: the page
 * itself when the view is the whole page, else a cached sub-buffer.
 * LaunchError::Unknown when `offset` is not a multiple of the device's
 * base-address alignment. */
ruda_status_t ruda__ocl_view_mem(ocl_server_t *s, page_t *page, uint64_t offset, uint64_t size,
                                 cl_mem *out);
/* Pinned staging of `size` bytes from the stream's pinned pool. */
ruda_status_t ruda__ocl_pinned_reserve(ocl_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
                                       void **out_ptr);

void ruda__ocl_order_binding(ocl_server_t *s, ocl_stream_t *st, const ruda_binding_t *b,
                             keep_list_t *keep);
void ruda__ocl_op_end(ocl_server_t *s, ocl_stream_t *st, keep_list_t *keep);
/* Releases what completed work kept alive; `wait`: waits for all of it. */
void ruda__ocl_gc_poll(ocl_server_t *s, ocl_stream_t *st, bool wait);
/* ruda__ocl_gc_poll(s, st, false) for every stream with kept bindings. */
void ruda__ocl_gc_poll_all(ocl_server_t *s);
/* Submits the stream's enqueued work (clFlush) when there is any. */
void ruda__ocl_submit(ocl_server_t *s, ocl_stream_t *st);

/* Releases `bytes` (taken) when `ev` (taken) completes, from the
 * driver's callback; when no callback can be set, waits for the stream
 * and releases it now. */
void ruda__ocl_release_when_done(ocl_server_t *s, ocl_stream_t *st, cl_event ev,
                                 ruda_bytes_t *bytes);

/* The timeline trace: the event of a traced command (NULL: the trace is
 * off, one relaxed load) to pass to the enqueue, then ruda__ocl_trace_add
 * with the event it filled in. */
bool ruda__ocl_trace_wanted(void);
void ruda__ocl_trace_add(ocl_server_t *s, ocl_stream_t *st, cl_event ev, const char *category,
                         const char *name, uint64_t bytes);

/* Fault reports. */
void ruda__ocl_recent_names(const recent_kernels_t *rk, char *buf, size_t cap);
void ruda__ocl_note_kernel(ocl_stream_t *st, const char *name);
/* The error for a command of the stream that failed on the device (an
 * event with a negative status, or a failed wait). */
ruda_status_t ruda__ocl_fault_error(cl_int code, const char *call, const char *kernels);

/* ---- opencl_copy.c ---- */

/* Waits for `ev` (any thread): NULL when it completed, else the fault
 * error (ServerError::Launch(LaunchError::Unknown) with the event's error
 * code as the vendor code) naming the kernels of `recent`. */
ruda_status_t ruda__ocl_event_error(const ruda__opencl_api_t *api, cl_event ev,
                                    const recent_kernels_t *recent);

void ruda__ocl_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                 ruda_stream_id_t stream);
ruda_status_t ruda__ocl_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                ruda_stream_id_t stream, ruda_bytes_t *out);
ruda_status_t ruda__ocl_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                     ruda_stream_id_t stream, ruda_resource_t *out);
ruda_status_t ruda__ocl_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                     ruda_memory_usage_t *out);
void ruda__ocl_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream);
void ruda__ocl_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                               ruda_stream_id_t stream);
void ruda__ocl_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                     size_t count, ruda_stream_id_t stream);
ruda_status_t ruda__ocl_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                             void *const *dsts, size_t count, ruda_stream_id_t stream,
                             ruda__future_t **out);
ruda_status_t ruda__ocl_sync(ruda__server_t *base, ruda_stream_id_t stream,
                             ruda__future_t **out);
ruda_status_t ruda__ocl_flush(ruda__server_t *base, ruda_stream_id_t stream);

/* ---- opencl_launch.c ---- */

void ruda__ocl_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                      const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                      ruda_stream_id_t stream);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_SERVER_H */
