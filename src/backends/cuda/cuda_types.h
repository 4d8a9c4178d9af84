/* The types of the CUDA compute server, shared by its files: the server,
 * the CUDA part of a stream's state, the storages under its memory
 * managers, the futures' shared home, the sizes the
 * backend works with, and tiny inline accessors. No function is declared
 * here: each lives in the header of the module that defines it.
 *
 * The modules, bottom to top; each file includes only the headers of the
 * modules below it, so calls point one way (down):
 *
 *   vendor APIs (cuda_internal.h; nccl_loader.h, nccl_errors.h)
 *     cuda_loader.c     dlopen of libcuda and NVRTC, their symbol tables
 *     cuda_errors.c     CUresult / nvrtcResult -> ruda errors, logging
 *     nccl_loader.c     dlopen of libnccl, its symbol table
 *     nccl_errors.c     ncclResult_t -> ruda errors
 *     cuda_device.c, cuda_compile.c, cuda_tensor_map.c
 *   cuda_types.h        these types
 *   cuda_fault.c        the poison state (poison, text, generation, dead)
 *                       and the fault errors; calls nothing above it
 *   cuda_stream.c       the CUDA part of a stream's state (storages, event
 *                       and block pools, the pipeline's event fence and
 *                       timer, deferred releases); ordering, kept
 *                       bindings and the trace are server/stream_op.c's
 *   cuda_memory.c       the memory methods (allocation, staging, resources,
 *                       usage, cleanup, allocation mode)
 *   cuda_future.c       the event-fenced futures and their home
 *   cuda_copy.c         writes, reads, sync, flush
 *   cuda_launch.c       kernel launches
 *   cuda_profile.c      device-timed profiles
 *   cuda_graph.c        graphs: a recording captured into a CUDA graph,
 *                       its replays and lifetime
 *   cuda_nccl.c         NCCL communicators (cuda_nccl_table.h), settling them
 *   cuda_nccl_ops.c     NCCL collectives and send/recv
 *   cuda_reset.c        the device reset after a fault
 *   cuda_server.c       the vtable: each entry settles faults (and, for
 *                       sync, read and flush, NCCL work) once, then calls
 *                       the implementation below; creation, destruction,
 *                       and recovery after a fault (cuda_reset.c resets)
 *
 * Design notes (streams, cross-stream use, faults, futures) are at the top
 * of cuda_server.c. Everything runs on the device's worker thread unless a
 * comment says otherwise (futures are waited on from any thread). Only built
 * with the CUDA headers.
 */
#ifndef RUDA_CUDA_TYPES_H
#define RUDA_CUDA_TYPES_H

#include "backends/cuda/cuda_internal.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/host_copy.h"
#include "base/alloc.h"
#include "server/recent_kernels.h"
#include "server/server.h"
#include "server/stream_op.h"

#define SMALL_COPY (64u * 1024u)     /* below: driver-staged pageable copies */
#define STAGE_CHUNK (4u * 1024u * 1024u)
#define RUDA__CUDA_STAGE_MAX_SLOTS 64
#define PARALLEL_READ_OUT (8u << 20) /* from: staged reads are copied out in parallel */
#define PINNED_PAGE (1ull << 30)
#define SMALL_READ (64u * 1024u) /* reads of at most this many bytes in all: one pinned block */
#define SCRATCH_BYTES 256u        /* a stream's pinned scratch: dynamic counts, tiny reads */
#define READ_BLOCKS 16            /* pinned blocks kept for small reads */
#define EVENT_POOL 256
#define FUTURE_POOL 16            /* future objects kept for reuse */
#define WAIT_SPIN_US 20           /* default of RUDA_CUDA_WAIT_SPIN_US */

typedef struct cuda_server cuda_server_t;

/* A list of pages (address and size): those whose free waits for the next
 * flush, since work in flight may still use them, and the server's stash. */
typedef struct page_list {
  struct listed_page {
    uint64_t addr, size;
  } *pages;
  size_t n, cap;
  uint64_t bytes;
} page_list_t;

/* Device pages from cuMemAlloc that stream states gave up when they were
 * reclaimed or destroyed, for new states to take before asking the driver:
 * cuMemFree waits for the whole device, and a program that keeps starting
 * threads keeps reclaiming states. Every page in it is idle (its state had
 * nothing in flight). Freed at an explicit cleanup, when the device is out
 * of memory, and at destroy; forgotten after a reset (the context took
 * them). Methods only (one at a time), so no lock. */
typedef struct page_stash {
  const ruda__cuda_api_t *api;
  page_list_t list;
} page_stash_t;

/* The first member of the device and pinned storages: pages they gave
 * back (dealloc) while work in flight may still use them wait in
 * `pending` for the storage's next flush, which hands each to free_page
 * (called with the storage). */
typedef struct deferred_frees {
  page_list_t pending;
  void (*free_page)(void *storage, uint64_t addr, uint64_t size);
} deferred_frees_t;

typedef struct gpu_storage {
  deferred_frees_t frees; /* first */
  const ruda__cuda_api_t *api;
  CUstream stream;
  /* Pages from cuMemAllocAsync on the stream (RUDA_CUDA_ASYNC_ALLOC=1),
   * else from cuMemAlloc and the stash. */
  bool use_async;
  /* Set when the state is freed while the context lives: flushed pages go
   * to the stash instead of cuMemFree. */
  bool to_stash;
  page_stash_t *stash; /* the server's; set when the storage is made */
  uint64_t next_id;
} gpu_storage_t;

typedef struct pinned_storage {
  deferred_frees_t frees; /* first */
  const ruda__cuda_api_t *api;
  uint64_t next_id;
} pinned_storage_t;

/* What the drop queue's fences record on (see fence_make). */
typedef struct fence_ctx {
  const ruda__cuda_api_t *api;
  CUstream stream;
} fence_ctx_t;

/* The fault state of a server (cuda_fault.c owns every write to it). */
typedef struct cuda_fault {
  /* Set when a reset after a fault did not bring the device back: every
   * operation then fails with this code. Worker only. */
  int dead;
  /* First sticky error seen (CUresult) and its description; set from any
   * thread (futures), acted on by the worker. */
  _Atomic int poisoned;
  _Atomic int poison_reported; /* a caller already received the fault */
  _Atomic uint64_t generation; /* bumped by every reset */
  char poison_text[512];
  _Atomic int poison_text_ready;
} cuda_fault_t;

/* The CUDA extension of a stream's state (ruda__stream_ext): zeroed when
 * the state is created, initialised on first use (`pipe.ready`), freed when the
 * state is reclaimed or after a device reset (then re-initialised on the
 * next use). The state itself (errors, profiles, cursor, index) is
 * cuda_rs(st). */
typedef struct cuda_stream {
  /* First: the pipeline's part (ordering, kept bindings; `pipe.ready`
   * once initialised). */
  ruda__stream_pipe_t pipe;
  CUstream cu;
  gpu_storage_t *gpu_store;
  pinned_storage_t *pin_store;
  ruda__memory_manager_t *gpu;
  ruda__memory_manager_t *pinned;
  ruda__drop_queue_t *drops;
  fence_ctx_t fence; /* the drop queue's context */
  /* Kernel info words: one device buffer per stream is enough, because
   * the upload of launch n+1 is ordered after kernel n on the stream. */
  CUdeviceptr info_dev;
  size_t info_cap;
  /* Pinned scratch (SCRATCH_BYTES) for dynamic counts and tiny reads of an
   * idle stream; NULL when it could not be allocated. */
  uint32_t *count_host;
  ruda__recent_kernels_t recent;
  /* How far the stream's work is known to have completed (cuda_synced_t);
   * shared with its futures. */
  struct cuda_synced *synced;
} cuda_stream_t;

/* The stream's cursor (ruda__stream_t.cursor) up to which its work is known
 * to have completed, set by whichever thread waited for a sync or read that
 * covered it. When it reaches the stream's cursor the stream is idle, and a
 * sync or a small read needs no event (cuda_copy.c). Ref-counted: the
 * stream holds one reference and each of its futures another, so a future
 * completed on any thread, after the stream was reclaimed too, writes into
 * live memory. */
typedef struct cuda_synced {
  _Atomic uint64_t cursor;
  atomic_uint refs;
} cuda_synced_t;

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
  /* The operation pipeline (server/stream_op.h) over the event fence of
   * cuda_stream.c: stream set-up, cross-stream ordering, kept bindings. */
  ruda__stream_pipeline_t pipeline;
  /* The stream table's release hook frees CUDA objects only while the
   * context is usable (false during destroy after a fault). */
  bool context_alive;
  ruda__cuda_module_cache_t *modules;
  ruda__copy_pool_t *copies;
  page_stash_t stash;
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
  /* The staging ring of large pageable writes: `stage_slots` chunks of at
   * least `stage_chunk` bytes (0 slots: a write is staged whole). */
  size_t stage_slots, stage_chunk;
  /* Poisoning after a kernel fault, and whether the device is lost. */
  cuda_fault_t fault;
  /* NCCL: the comm stream and communicators (cuda_nccl.c); NULL until the
   * first collective. */
  struct ruda__cuda_comms *comms;
  /* The device memory managers of every stream (out-of-memory reports). */
  ruda__memory_group_t memory_group;
  /* Graphs built and not yet freed (cuda_graph.c), freed at destroy. */
  struct cuda_graph *graphs;
};

static inline cuda_server_t *as_cuda(ruda__server_t *s) { return (cuda_server_t *)s; }

static inline ruda__stream_t *cuda_rs(cuda_stream_t *st) { return ruda__stream_of_ext(st); }
static inline cuda_stream_t *cuda_ext(ruda__stream_t *rs) { return ruda__stream_ext(rs); }

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_TYPES_H */
