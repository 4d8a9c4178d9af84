/* ruda/comm.h: collectives and send/recv across the devices of one process.
 *
 * A collective takes one buffer per participating device (src[i], dst[i] on
 * clients[i]) and runs on all of them as one operation: all-reduce,
 * broadcast, all-gather, reduce-scatter. send/recv copies a view from one
 * device to another. Every participant is a device of the same type; each
 * has its own worker thread, which is what lets the participants wait for
 * each other. Across processes and machines the same operations run on a
 * process group (ruda/mpi.h, the separate ruda_mpi library).
 *
 * Communicators: the first operation over a set of devices creates the
 * communicator of that set (its id is a hash of the sorted device ids) on
 * every participant, and blocks until it exists. Later calls over the same
 * set reuse it. A send/recv uses the communicator of its two devices.
 *
 * Ordering: an operation is queued on every participant's stream (the
 * stream of clients[i]) like a launch, after the work already queued there,
 * and runs before work queued later. Operations from several threads are
 * queued under one process-wide lock, so every device sees them in the same
 * order: however the callers and the device workers are scheduled, the
 * participants of the first pending operation are all at it, and nothing
 * deadlocks. A participant never waits for its peers longer than the
 * communication timeout (RUDA_COMM_TIMEOUT seconds, default 300): past it
 * the operation fails on its stream with an error naming the ranks that
 * never arrived, and the communicator stays broken.
 *
 * Transports and element types (docs/collectives.md has the tables):
 *   cpu   in-process rendezvous; reduces f64, f32, f16, bf16 (accumulated
 *         in f32), i8, i16, i32, i64, u8, u16, u32, u64
 *   cuda  NCCL (libnccl.so.2, loaded on first use; keep NCCL_NVLS_ENABLE=0):
 *         reduces f64, f32, f16, bf16, i8, i32, i64, u8, u32, u64; sends
 *         contiguous views only. The calls of one operation are issued as
 *         one NCCL group.
 * Backends without collectives, and CUDA without NCCL, answer
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION at once. A reduction over a type the
 * backend cannot reduce answers RUDA_ERR_INVALID_ARGUMENT naming the type
 * and the types it can.
 *
 * Errors found while running (an unbound buffer, a failed or absent peer,
 * an NCCL error) are queued on every participant's stream and returned by
 * its next flush, sync or read, like a launch's.
 *
 * Thread-safety: every function here may be called from any thread except a
 * device worker (inside ruda_client_exclusive or ruda_client_profile), which
 * would wait for itself: that is refused with RUDA_ERR_INVALID_ARGUMENT.
 * Arguments are borrowed; the queued operations keep the buffers alive
 * until they have run.
 */
#ifndef RUDA_COMM_H
#define RUDA_COMM_H

#include <stddef.h>

#include "ruda/client.h"
#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* The reduction of a collective. NaN inputs give an unspecified NaN or
 * number for MIN and MAX. */
typedef enum ruda_reduce_op {
  RUDA_REDUCE_SUM = 0,  /* element-wise sum; integers wrap around */
  RUDA_REDUCE_MEAN = 1, /* sum / n; integers truncate toward zero */
  RUDA_REDUCE_MIN = 2,  /* element-wise minimum */
  RUDA_REDUCE_MAX = 3,  /* element-wise maximum */
} ruda_reduce_op_t;

/* All-reduce over n devices: for every element e,
 *   dst[i][e] = op(src[0][e], ..., src[n-1][e])   for every i.
 *
 * dst[i] may be src[i] (in place) but must not partially overlap it. Every
 * src[i] and dst[i] holds the same number of bytes, a multiple of the
 * element size of dtype (0 is allowed).
 *
 * Non-blocking, like a launch: returns once the operation is queued on every
 * device (the first call over a device set first waits for its
 * communicator).
 *
 * Errors returned at once:
 *   RUDA_ERR_INVALID_ARGUMENT: NULL arrays, n == 0 or n > 64, an empty
 *     handle, a device listed twice, devices of different types, sizes that
 *     differ or are not a multiple of the element size, a dtype the backend
 *     cannot reduce, an unknown op, a call from a device worker;
 *   RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION: the backend has no collectives;
 *   RUDA_ERR_UNAVAILABLE: a device was shut down;
 *   RUDA_ERR_IO_OUT_OF_MEMORY: no host memory for the operations;
 *   the backend's error when creating the communicator fails. */
ruda_status_t ruda_client_all_reduce(ruda_client_t *const *clients, size_t n,
                                     const ruda_handle_t *src, const ruda_handle_t *dst,
                                     ruda_elem_type_t dtype, ruda_reduce_op_t op);

/* Broadcast in place: the bytes of buf[root] are copied into every other
 * buf[i]. Every buf[i] holds the same number of bytes (0 is allowed).
 * Non-blocking; errors as ruda_client_all_reduce (root >= n is
 * RUDA_ERR_INVALID_ARGUMENT). */
ruda_status_t ruda_client_broadcast(ruda_client_t *const *clients, size_t n, size_t root,
                                    const ruda_handle_t *buf);

/* All-gather: dst[i] = src[0] || src[1] || ... || src[n-1] (bytes
 * concatenated in device order) for every i. Every src[i] holds the same
 * number of bytes B and every dst[i] n x B bytes. Non-blocking; errors as
 * ruda_client_all_reduce. */
ruda_status_t ruda_client_all_gather(ruda_client_t *const *clients, size_t n,
                                     const ruda_handle_t *src, const ruda_handle_t *dst);

/* Reduce-scatter: src[i] holds n blocks of m elements of dtype; dst[i]
 * holds m elements and receives, for every element e,
 *   dst[i][e] = op(src[0][i*m + e], ..., src[n-1][i*m + e]).
 * Every src[i] holds n x (the bytes of dst[i]), the same on every device.
 * Non-blocking; errors as ruda_client_all_reduce. */
ruda_status_t ruda_client_reduce_scatter(ruda_client_t *const *clients, size_t n,
                                         const ruda_handle_t *src, const ruda_handle_t *dst,
                                         ruda_elem_type_t dtype, ruda_reduce_op_t op);

/* Send/recv: copies a view of `src` (on `from`'s device) to `to`'s device.
 * `from` sends the elements that shape/strides describe (a tensor view of
 * src, elements of dtype; NULL shape and strides: the whole view as bytes,
 * dtype then ignored); `to` receives them into a new buffer that it
 * reserves on its own stream, contiguous and row-major (*out, owned by the
 * caller, usable at once). Both halves are queued together, ordered like a
 * collective of the two devices, so the pair cannot deadlock.
 *
 * Strides other than contiguous ones need a backend that copies strided
 * views (the CPU backend); others answer RUDA_ERR_IO_UNSUPPORTED_STRIDES.
 * Errors returned at once: RUDA_ERR_INVALID_ARGUMENT (NULL or empty
 * arguments, from == to's device, devices of different types, a view that
 * does not fit in src, only one of shape and strides), and those of
 * ruda_client_all_reduce. Non-blocking. */
ruda_status_t ruda_client_send_recv(ruda_client_t *from, const ruda_handle_t *src,
                                    const ruda_shape_t *shape, const ruda_strides_t *strides,
                                    ruda_elem_type_t dtype, ruda_client_t *to,
                                    ruda_handle_t *out);

/* Copies the view of `src` (on `from`'s device) into a new buffer on `to`'s
 * device (*out, owned by the caller). Through send/recv when both devices
 * are of one type with collectives (non-blocking); otherwise through the
 * host: a blocking read on `from`, then a buffer created on `to` from it
 * (the same device on another stream goes this way too). Errors: those of
 * ruda_client_send_recv, or of the read and the buffer creation. */
ruda_status_t ruda_client_to_client(ruda_client_t *from, const ruda_handle_t *src,
                                    ruda_client_t *to, ruda_handle_t *out);

/* Orders the client's stream after the collectives queued on its device
 * from any stream, so that later work on the stream sees their results.
 * Blocks until the worker has done so (not until the collectives finish:
 * ruda_client_sync waits for that). On the CPU backend collectives already
 * run in order and this only round-trips.
 *
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL client, called from the device's
 * worker), RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION (no collectives),
 * RUDA_ERR_UNAVAILABLE (shut down), the backend's error. Thread-safe. */
ruda_status_t ruda_client_sync_collective(ruda_client_t *c);

RUDA_END_DECLS

#endif /* RUDA_COMM_H */
