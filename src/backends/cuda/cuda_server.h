/* Internal interface shared by the files of the CUDA compute server:
 *
 *   cuda_server.c  the vtable, creation and destruction, fault poisoning and
 *                  recovery, device-timed profiling
 *   cuda_stream.c  the CUDA part of a stream's state (the server layer's
 *                  stream table holds one per stream id): device and pinned
 *                  storages, the event and block pools, cross-stream
 *                  ordering and deferred releases (gc, drop queue), the
 *                  timeline trace, fault reports
 *   cuda_copy.c    the memory methods, writes, reads, futures, sync, flush
 *   cuda_launch.c  kernel launches (dynamic counts, info words, clusters)
 *
 * Design notes (streams, cross-stream use, faults, futures) are at the top
 * of cuda_server.c. Everything runs on the device's worker thread unless a
 * comment says otherwise (futures are waited on from any thread). Only built
 * with the CUDA headers.
 */
#ifndef RUDA_CUDA_SERVER_H
#define RUDA_CUDA_SERVER_H

#include "backends/cuda/cuda_internal.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/cuda/cuda_host_copy.h"
#include "base/alloc.h"
#include "server/server.h"

#define SMALL_COPY (64u * 1024u)     /* below: driver-staged pageable copies */
#define STAGE_CHUNK (4u * 1024u * 1024u)
#define PARALLEL_READ_OUT (8u << 20) /* from: staged reads are copied out in parallel */
#define PINNED_PAGE (1ull << 30)
#define RECENT_KERNELS 4
#define SMALL_READ (64u * 1024u) /* reads of at most this many bytes in all: one pinned block */
#define READ_BLOCKS 16            /* pinned blocks kept for small reads */
#define EVENT_POOL 256
#define FUTURE_POOL 16            /* future objects kept for reuse */
#define WAIT_SPIN_US 20           /* default of RUDA_CUDA_WAIT_SPIN_US */

typedef struct cuda_server cuda_server_t;

/* Pages whose free waits for the next flush: work in flight may still use
 * them. */
typedef struct pending_frees {
  uint64_t *addrs;
  size_t n, cap;
} pending_frees_t;

typedef struct gpu_storage {
  const ruda__cuda_api_t *api;
  CUstream stream;
  bool use_async;
  pending_frees_t pending;
  uint64_t next_id;
} gpu_storage_t;

typedef struct pinned_storage {
  const ruda__cuda_api_t *api;
  pending_frees_t pending;
  uint64_t next_id;
} pinned_storage_t;

/* What the drop queue's fences record on (see fence_make). */
typedef struct fence_ctx {
  const ruda__cuda_api_t *api;
  CUstream stream;
} fence_ctx_t;

typedef struct gc_batch {
  CUevent event;
  ruda_binding_t *bindings;
  size_t n;
} gc_batch_t;

/* Kernels launched on a stream since its last completed sync, for fault
 * reports: the last RECENT_KERNELS distinct names and how many in all. */
typedef struct recent_kernels {
  char names[RECENT_KERNELS][64];
  uint32_t n, total;
} recent_kernels_t;

/* The CUDA extension of a stream's state (ruda__stream_ext): zeroed when
 * the state is created, initialised on first use (`init`), freed when the
 * state is reclaimed or after a device reset (then re-initialised on the
 * next use). The state itself (errors, profiles, cursor, index) is
 * cuda_rs(st). */
typedef struct cuda_stream {
  bool init;
  CUstream cu;
  gpu_storage_t *gpu_store;
  pinned_storage_t *pin_store;
  ruda__memory_manager_t *gpu;
  ruda__memory_manager_t *pinned;
  ruda__drop_queue_t *drops;
  fence_ctx_t fence; /* the drop queue's context */
  /* Per origin stream (by state index): the origin's cursor when this
   * stream last waited on it. Grown on demand; cursors come from one
   * server-wide clock, so an entry left by a reclaimed origin whose index
   * was reused is always older than the new origin's cursor (a wait too
   * many, never one too few). */
  uint64_t *last_synced;
  uint32_t nlast_synced;
  gc_batch_t *gc;
  size_t ngc, gccap;
  /* Kernel info words: one device buffer per stream is enough, because
   * the upload of launch n+1 is ordered after kernel n on the stream. */
  CUdeviceptr info_dev;
  size_t info_cap;
  /* Pinned scratch for dynamic counts. */
  uint32_t *count_host;
  /* Timeline trace (RUDA_TRACE): device-timed slices waiting for their
   * end event. */
  struct trace_item *trace;
  size_t ntrace, captrace;
  uint64_t trace_last_end; /* host ns where the previous slice ended */
  recent_kernels_t recent;
} cuda_stream_t;

/* What a server's futures share with it and may outlive it with: the lock
 * over the server's pools, the list of live futures, and a count of the
 * references (the server's and one per live future). Whichever lets go last
 * frees it. A future that the server settled when it was destroyed no
 * longer points at the server. */
typedef struct future_home {
  pthread_mutex_t lock;
  size_t refs;
  struct cuda_future *live; /* futures not yet destroyed, doubly linked */
} future_home_t;

struct cuda_server {
  ruda__server_t base;
  const ruda__cuda_api_t *api;
  CUdevice dev;
  CUcontext ctx;
  uint32_t cc;
  int priority;
  /* Streams whose gc list is not empty (kept bindings of cross-stream use),
   * so that memory reports and syncs can release finished ones. */
  uint32_t gc_streams;
  /* The stream table's release hook frees CUDA objects only while the
   * context is usable (false during destroy after a fault). */
  bool context_alive;
  ruda__cuda_module_cache_t *modules;
  ruda__copy_pool_t *copies;
  /* Events without timing and pinned blocks for small reads, reused; futures
   * return theirs from any thread, hence home->lock over them. Both belong
   * to the context of one generation. */
  future_home_t *home;
  CUevent events[EVENT_POOL];
  size_t nevents;
  void *blocks[READ_BLOCKS];
  size_t nblocks;
  /* Future objects: made on the worker, freed on the waiting thread (glibc's
   * slow cross-thread path), so a few are recycled here. */
  struct cuda_future *futures[FUTURE_POOL];
  size_t nfutures;
  /* How long a future's wait polls its event before blocking in
   * cuEventSynchronize (RUDA_CUDA_WAIT_SPIN_US). */
  uint64_t wait_spin_ns;
  /* Set when a reset after a fault did not bring the device back: every
   * operation then fails with this code. */
  int dead;
  /* First sticky error seen (CUresult) and its description; set from any
   * thread (futures), acted on by the worker. */
  _Atomic int poisoned;
  _Atomic int poison_reported; /* a caller already received the fault */
  _Atomic uint64_t generation; /* bumped by every reset */
  char poison_text[512];
  _Atomic int poison_text_ready;
  /* NCCL: the comm stream and communicators (cuda_nccl.c); NULL until the
   * first collective. */
  struct ruda__cuda_comms *comms;
  /* The device memory managers of every stream (out-of-memory reports). */
  ruda__memory_group_t memory_group;
};

/* The bindings an operation uses from other streams' slots, cloned to keep
 * their memory alive until the operation's work has completed. */
typedef struct keep_list {
  ruda_binding_t *items;
  size_t n, cap;
  bool sync; /* a clone failed: ruda__cuda_op_end waits for the work instead */
} keep_list_t;

static inline cuda_server_t *as_cuda(ruda__server_t *s) { return (cuda_server_t *)s; }

static inline ruda__stream_t *cuda_rs(cuda_stream_t *st) { return ruda__stream_of_ext(st); }
static inline cuda_stream_t *cuda_ext(ruda__stream_t *rs) { return ruda__stream_ext(rs); }

struct cuda_future;

/* ---- cuda_stream.c: storages, pools, slots, ordering, releases, trace ---- */

ruda_status_t ruda__cuda_gpu_malloc(gpu_storage_t *g, uint64_t size, CUdeviceptr *out);
void ruda__cuda_gpu_free_now(gpu_storage_t *g, CUdeviceptr p);
void ruda__cuda_gpu_flush(void *self);
void ruda__cuda_pinned_flush(void *self);

/* Events without timing and small-read blocks from the server's pools
 * (under home->lock; any thread). */
CUresult ruda__cuda_event_get(cuda_server_t *s, CUevent *out);
void ruda__cuda_event_put(cuda_server_t *s, CUevent ev, uint64_t gen);
void *ruda__cuda_block_get(cuda_server_t *s);

/* The CUDA part of stream `id`, initialised on first use; NULL when it
 * cannot be (the reason is queued on the stream when its state exists). */
cuda_stream_t *ruda__cuda_stream_get(cuda_server_t *s, ruda_stream_id_t id);
/* The CUDA part of a stream that exists and was initialised, or NULL
 * (never creates anything). */
cuda_stream_t *ruda__cuda_stream_find(cuda_server_t *s, ruda_stream_id_t id);
/* Frees what `st` holds, whether fully or partly initialised, and leaves it
 * uninitialised (the stream's state, errors and profiles, stays). */
void ruda__cuda_stream_free(cuda_server_t *s, cuda_stream_t *st, bool context_alive);
/* The stream table's hooks (cuda_stream.c). */
extern const ruda__stream_table_ops_t ruda__cuda_stream_ops;
/* Releases the kept bindings of finished work on every stream (no wait). */
void ruda__cuda_gc_poll_all(cuda_server_t *s);

void ruda__cuda_order_binding(cuda_server_t *s, cuda_stream_t *st, const ruda_binding_t *b,
                              keep_list_t *keep);
void ruda__cuda_op_end(cuda_server_t *s, cuda_stream_t *st, keep_list_t *keep);
void ruda__cuda_gc_poll(cuda_server_t *s, cuda_stream_t *st, bool wait);
/* The device address of a binding's view, looked up in the pool of the
 * stream that owns the memory; *out_size (may be NULL) receives the bytes
 * the device really holds from that address on, whatever the view says.
 * IoError::NotFound when the memory is not bound on this device. */
ruda_status_t ruda__cuda_resolve(cuda_server_t *s, const ruda_binding_t *b, CUdeviceptr *out,
                                 uint64_t *out_size);
ruda_status_t ruda__cuda_pinned_reserve(cuda_stream_t *st, uint64_t size, ruda_memory_t **out_mem,
                                        void **out_ptr);
ruda_status_t ruda__cuda_memory_usage_device(ruda__server_t *base, ruda_memory_usage_t *out);
void ruda__cuda_drop_memory(void *item);
void ruda__cuda_drop_bytes(void *item);
void ruda__cuda_drop_when_done(cuda_server_t *s, cuda_stream_t *st, void *item, uint64_t bytes,
                               ruda__drop_fn drop);

long ruda__cuda_trace_begin(cuda_server_t *s, cuda_stream_t *st, const char *category,
                            const char *name, uint64_t bytes);
void ruda__cuda_trace_end(cuda_server_t *s, cuda_stream_t *st, long idx);

/* Fault reports: the names of the kernels launched since the last sync, the
 * error for a fault seen while waiting, and that error also poisoning the
 * server when the fault is sticky. */
void ruda__cuda_recent_names(const recent_kernels_t *rk, char *buf, size_t cap);
ruda_status_t ruda__cuda_fault_error(CUresult r, const char *call, const char *kernels);
ruda_status_t ruda__cuda_stream_fault(cuda_server_t *s, CUresult r, const char *call,
                                      const char *kernels);

/* ---- cuda_server.c: faults ---- */

void ruda__cuda_poison(cuda_server_t *s, CUresult r, const char *text, bool reported);
void ruda__cuda_settle_poison(cuda_server_t *s, ruda_stream_id_t stream);

/* ---- cuda_copy.c: memory, copies, futures (vtable methods and the
 * futures' end of the server's destroy) ---- */

void ruda__cuda_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                  ruda_stream_id_t stream);
ruda_status_t ruda__cuda_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                 ruda_stream_id_t stream, ruda_bytes_t *out);
ruda_status_t ruda__cuda_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                      ruda_stream_id_t stream, ruda_resource_t *out);
ruda_status_t ruda__cuda_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                      ruda_memory_usage_t *out);
void ruda__cuda_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream);
void ruda__cuda_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                                ruda_stream_id_t stream);
void ruda__cuda_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                      size_t count, ruda_stream_id_t stream);
ruda_status_t ruda__cuda_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                              void *const *dsts, size_t count, ruda_stream_id_t stream,
                              ruda__future_t **out);
ruda_status_t ruda__cuda_sync(ruda__server_t *base, ruda_stream_id_t stream,
                              ruda__future_t **out);
ruda_status_t ruda__cuda_flush(ruda__server_t *base, ruda_stream_id_t stream);
void ruda__cuda_futures_settle(cuda_server_t *s, bool alive);
void ruda__cuda_future_free(struct cuda_future *f);
void ruda__cuda_home_release_locked(future_home_t *h);

/* ---- cuda_launch.c ---- */

void ruda__cuda_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                       const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                       ruda_stream_id_t stream);

/* ---- cuda_nccl.c: ServerCommunication (only with the NCCL headers) ---- */

ruda_status_t ruda__cuda_comm_init(ruda__server_t *base, const ruda__comm_peers_t *peers,
                                   const void *token, size_t token_len);
ruda_status_t ruda__cuda_comm_token(ruda__server_t *base, void *out, size_t cap,
                                    size_t *out_len);
void ruda__cuda_collective(ruda__server_t *base, const ruda__coll_t *c, ruda_stream_id_t stream);
ruda_status_t ruda__cuda_sync_collective(ruda__server_t *base, ruda_stream_id_t stream);
ruda_status_t ruda__cuda_comm_destroy(ruda__server_t *base, uint64_t id);
void ruda__cuda_comm_shutdown(ruda__server_t *base);
/* Before sync, read (wait) and flush (no wait): the stream's NCCL
 * operations are waited for, polling their communicators' asynchronous
 * errors, bounded by the communication timeout; errors and timeouts abort
 * the communicator and are pushed on the stream. No-op without NCCL work. */
void ruda__cuda_comms_settle(cuda_server_t *s, ruda_stream_id_t stream, bool wait);
/* Aborts the communicators comm_shutdown left (waits for no peer) and frees
 * the table. */
void ruda__cuda_comms_destroy(cuda_server_t *s, bool alive);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_SERVER_H */
