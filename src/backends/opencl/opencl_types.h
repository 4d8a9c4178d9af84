/* The types of the OpenCL compute server, shared by its files: the server,
 * the OpenCL part of a stream's state, pages and their sub-buffers, the
 * storages under the memory managers, the sizes the
 * backend works with, and tiny inline accessors. No function is declared
 * here: each lives in the header of the module that defines it.
 *
 * The modules, bottom to top; each file includes only the headers of the
 * modules below it, so calls point one way (down):
 *
 *   vendor API (opencl_internal.h)
 *     opencl_loader.c   dlopen of the ICD loader, its symbol table
 *     opencl_errors.c   cl_int -> ruda errors, logging
 *     opencl_device.c   platforms and devices, the load probe
 *     opencl_compile.c  clBuildProgram, the program caches
 *   opencl_types.h      these types
 *   opencl_fault.c      fault reports: recent kernel names, the error of a
 *                       command that failed on the device, waiting for an
 *                       event and reporting its failure
 *   opencl_stream.c     the OpenCL part of a stream's state (queue, pools,
 *                       sub-buffers, the pipeline's event fence and
 *                       marker timer, deferred releases); ordering, kept
 *                       bindings and the trace are server/stream_op.c's
 *   opencl_memory.c     the memory methods (allocation, staging, resources,
 *                       usage, cleanup, allocation mode)
 *   opencl_future.c     the event-fenced futures of reads and syncs
 *   opencl_copy.c       writes, reads, sync, flush
 *   opencl_launch.c     kernel launches
 *   opencl_profile.c    event-timed profiles
 *   opencl_server.c     the vtable, creation and destruction
 *
 * Design notes are at the top of opencl_server.c. Everything runs on the
 * device's worker thread unless a comment says otherwise (futures are
 * waited on from any thread). Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_TYPES_H
#define RUDA_OPENCL_TYPES_H

#include "backends/opencl/opencl_internal.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "server/host_copy.h"
#include "server/recent_kernels.h"
#include "server/server.h"
#include "server/stream_op.h"

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

/* The host range of a pinned staging page (its mapping). */
typedef struct pinned_range {
  const char *host;
  uint64_t size;
} pinned_range_t;

typedef struct cl_storage {
  ocl_server_t *server;
  bool pinned;
  uint64_t next_id;
} cl_storage_t;

/* A host copy of a launch's info words, kept until its upload is done. */
typedef struct info_slot {
  uint64_t *host;
  size_t cap; /* words */
  cl_event done;
} info_slot_t;

/* How far clFinish has covered a stream's commands enqueued without an
 * event: shared by the stream and the futures that fence such commands by
 * finishing the queue (which may outlive the stream), counted. The mark
 * holds one reference to the queue, taken when it is made and dropped
 * with the mark, so a future costs no clRetainCommandQueue and
 * clReleaseCommandQueue of its own (about 2.4 us a pair on NVIDIA's
 * driver, which takes the queue's lock for each). */
typedef struct ocl_finish_mark {
  _Atomic uint64_t finished; /* the newest event-less command known complete */
  atomic_uint refs;
  const ruda__opencl_api_t *api;
  cl_command_queue queue; /* retained */
} ocl_finish_mark_t;

/* The OpenCL part of a stream's state: the extension of its server-layer
 * state (src/server/stream_table.h: errors, profiles, cursor, index),
 * initialised on first use. Everything per-stream the backend keeps is
 * here. */
typedef struct ocl_stream {
  /* First: the pipeline's part (ordering, kept bindings; `pipe.ready`
   * once set up). */
  ruda__stream_pipe_t pipe;
  const ruda__opencl_api_t *api;
  cl_command_queue queue; /* in order, profiling on */
  cl_storage_t *dev_store, *pin_store;
  ruda__memory_manager_t *dev;    /* device pages */
  ruda__memory_manager_t *pinned; /* staging */
  /* Info words: one device buffer, overwritten in stream order (the upload
   * for launch n+1 is ordered after kernel n); the host copies in a ring. */
  cl_mem info_mem;
  size_t info_cap; /* bytes */
  uint64_t *info_last;
  size_t info_last_len; /* words in info_mem now (0: unknown) */
  info_slot_t ring[INFO_RING];
  uint32_t ring_pos;
  bool dirty; /* work enqueued since the last clFlush */
  /* The event of the newest command on the queue (a reference of the
   * stream's), NULL when there is none or it is known to have completed.
   * The queue is in order, so its completion is that of all the stream's
   * work: syncs, reads and kept bindings wait on it instead of enqueueing a
   * marker. `last_unknown`: the newest command was enqueued without an
   * event (the next fence then needs a marker); `last_fenced`: a read's or
   * a sync's future waits on it (which reports its failure, once). */
  cl_event last;
  bool last_unknown, last_fenced;
  /* Commands enqueued without an event are numbered: `unknown_seq` is the
   * newest's. A sync after one is fenced by finishing the queue on the
   * waiting thread, which publishes the number it covered in `mark`; once
   * that reaches unknown_seq, nothing of the stream is in flight. */
  uint64_t unknown_seq;
  ocl_finish_mark_t *mark;
  ruda__recent_kernels_t recent;
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
  /* The operation pipeline (server/stream_op.h) over the event fence of
   * opencl_stream.c: stream set-up, cross-stream ordering, kept bindings. */
  ruda__stream_pipeline_t pipeline;
  /* Kernels are enqueued with an event (the stream's newest command, the
   * next fence) on CPU devices, where events cost nothing: on PoCL a
   * round trip with a kernel event and no marker is 20 us shorter (16
   * cores) than with a marker. NVIDIA's OpenCL pays about 8.5 us for a
   * kernel's event (10.2 -> 18.7 us per round trip on the H200), as much
   * as for a marker, and 7 us of it in the enqueueing thread (4.4 -> 11.5
   * us per launch in a batch), so there kernels go without one. A sync
   * after them is fenced by clFinish on the waiting thread (10.0 us per
   * round trip there, against 19.0 us with a marker and clWaitForEvents);
   * cross-stream waits and kept bindings after them use a marker. */
  bool kernel_events;
  /* Host buffers whose release waits for an event callback; destroy waits
   * for them (the callbacks run on the driver's threads). */
  atomic_size_t pending_releases;
  /* The mappings of every stream's pinned staging pages, so that a read
   * can tell a pinned destination from pageable memory. */
  pinned_range_t *pinned;
  size_t npinned, cappinned;
  /* Pageable writes of at least stage_min bytes (0: none) are copied into
   * pinned staging by the copy pool while the chunks before them are
   * transferred (opencl_copy.c); on devices with memory of their own. */
  uint64_t stage_min;
  ruda__copy_pool_t *copies;
};

static inline ocl_server_t *as_ocl(ruda__server_t *s) { return (ocl_server_t *)s; }

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_TYPES_H */
