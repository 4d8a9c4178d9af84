/* NCCL for the CUDA server (cuda_nccl.c): communicators, the collectives
 * and send/recv (ServerCommunication of src/server/server.h), and the
 * settling of a stream's NCCL work before its sync, read or flush.
 *
 * libnccl.so.2 is loaded once per process on the first collective
 * (nccl_loader.c); a missing library makes the collectives answer
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, nothing else. ncclResult_t codes
 * are translated in nccl_errors.c only (ruda__nccl_error). The vtable
 * entries (cuda_server.c) call these; the collective's entry settles
 * faults first. Only built with the CUDA and NCCL headers
 * (RUDA_HAVE_NCCL_HEADERS).
 */
#ifndef RUDA_CUDA_NCCL_H
#define RUDA_CUDA_NCCL_H

#include "backends/cuda/nccl_errors.h"
#include "backends/cuda/nccl_loader.h"

/* Element types NCCL reduces (bits 1 << t): f64, f32, f16, bf16, i8, i32,
 * i64, u8, u32, u64 (no i16/u16 in NCCL; fp8 is left out: it needs sm_90
 * and NCCL >= 2.24). */
#define RUDA__REDUCE_TYPES_NCCL                                                           \
  ((1ull << RUDA_ELEM_F64) | (1ull << RUDA_ELEM_F32) | (1ull << RUDA_ELEM_F16) |           \
   (1ull << RUDA_ELEM_BF16) | (1ull << RUDA_ELEM_I8) | (1ull << RUDA_ELEM_I32) |           \
   (1ull << RUDA_ELEM_I64) | (1ull << RUDA_ELEM_U8) | (1ull << RUDA_ELEM_U32) |            \
   (1ull << RUDA_ELEM_U64))

#if defined(RUDA_HAVE_NCCL_HEADERS)

#include "backends/cuda/cuda_types.h"
#include "ruda/comm.h"
#include "ruda/status.h"

/* ncclDataType_t of an element type; false when NCCL has none. */
bool ruda__nccl_dtype(ruda_elem_type_t t, ncclDataType_t *out);

/* ServerCommunication (see src/server/server.h for each method). */
ruda_status_t ruda__cuda_comm_init(cuda_server_t *s, const ruda__comm_peers_t *peers,
                                   const void *token, size_t token_len);
ruda_status_t ruda__cuda_comm_token(void *out, size_t cap, size_t *out_len);
void ruda__cuda_collective(cuda_server_t *s, const ruda__coll_t *c, ruda_stream_id_t stream);
ruda_status_t ruda__cuda_sync_collective(cuda_server_t *s, ruda_stream_id_t stream);
ruda_status_t ruda__cuda_comm_destroy(cuda_server_t *s, uint64_t id);
void ruda__cuda_comm_shutdown(cuda_server_t *s);
/* Before sync, read (wait) and flush (no wait): the stream's NCCL
 * operations are waited for, polling their communicators' asynchronous
 * errors, bounded by the communication timeout; errors and timeouts abort
 * the communicator and are pushed on the stream. No-op without NCCL work. */
void ruda__cuda_comms_settle_pending(cuda_server_t *s, ruda_stream_id_t stream, bool wait);
static inline void ruda__cuda_comms_settle(cuda_server_t *s, ruda_stream_id_t stream, bool wait) {
  if (s->comms != NULL) ruda__cuda_comms_settle_pending(s, stream, wait);
}
/* Aborts the communicators comm_shutdown left (waits for no peer) and frees
 * the table. */
void ruda__cuda_comms_destroy(cuda_server_t *s, bool alive);

#endif /* RUDA_HAVE_NCCL_HEADERS */

#endif /* RUDA_CUDA_NCCL_H */
