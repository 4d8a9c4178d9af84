/* The CUDA server's table of NCCL communicators (cuda_nccl.c), shared with
 * its collectives (cuda_nccl_ops.c): the entries, the streams with NCCL
 * work to settle, and the waits on non-blocking communicators. Worker
 * thread only. Only built with the CUDA and NCCL headers.
 */
#ifndef RUDA_CUDA_NCCL_TABLE_H
#define RUDA_CUDA_NCCL_TABLE_H

#include "backends/cuda/cuda_nccl.h"

#if defined(RUDA_HAVE_NCCL_HEADERS)

#include "comm/rendezvous.h"

typedef struct comm_entry {
  uint64_t id;
  ncclComm_t comm;
  uint32_t rank, size;
  bool in_process;
  bool used;          /* operations issued since the last settle */
  ruda__rendezvous_t *rv; /* in one process: the device set's rendezvous */
  bool aborted;       /* unusable: aborted or destroyed */
  bool destroyed;     /* finalized and destroyed cleanly */
  char why[384];      /* why it is unusable */
} comm_entry_t;

/* Streams with operations issued since their last settle. */
typedef struct pending_stream {
  ruda_stream_id_t id;
} pending_stream_t;

struct ruda__cuda_comms {
  const ruda__nccl_api_t *api;
  comm_entry_t *items;
  size_t n, cap;
  pending_stream_t *pending;
  size_t npending, cappending;
  /* The stream of the last operation, for sync_collective. */
  bool has_last;
  ruda_stream_id_t last_id;
};

/* The entry of communicator `id`, or NULL (c may be NULL). */
comm_entry_t *ruda__nccl_find_comm(struct ruda__cuda_comms *c, uint64_t id);
/* Aborts the communicator (local: waits for no peer) and keeps why. */
void ruda__nccl_comm_abort(const ruda__nccl_api_t *api, comm_entry_t *e, const char *why);
/* Notes that stream `id` has NCCL work to settle. */
void ruda__nccl_note_pending(struct ruda__cuda_comms *c, ruda_stream_id_t id);
/* Whether the participants' calls are issued in one NCCL group
 * (RUDA_NCCL_GROUPED, default on). */
bool ruda__nccl_grouped(void);
/* Polls ncclCommGetAsyncError on comms[0..n) until none is in progress.
 * Returns the first error (ncclSuccess when all are ready); *timed_out when
 * the deadline passed first. */
ncclResult_t ruda__nccl_wait_ready(const ruda__nccl_api_t *api, ncclComm_t const *comms, size_t n,
                                   uint64_t deadline, bool *timed_out);

#endif /* RUDA_HAVE_NCCL_HEADERS */

#endif /* RUDA_CUDA_NCCL_TABLE_H */
