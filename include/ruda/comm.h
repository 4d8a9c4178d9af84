/* ruda/comm.h: collectives across the devices of one process.
 *
 * An all-reduce combines one buffer per device (src[i] on clients[i]) with a
 * reduction and writes the result into one buffer per device (dst[i]). Every
 * participant is a device of the same type; each has its own worker thread,
 * which is what lets the participants wait for each other.
 *
 * Communicators: the first collective over a set of devices creates the
 * communicator of that set (its CommunicationId is a hash of the sorted
 * device ids) on every participant, and blocks until it exists. Later calls
 * over the same set reuse it.
 *
 * Ordering: the collective is queued on every participant's stream (the
 * stream of clients[i]) like a launch, after the work already queued there,
 * and runs before work queued later. Concurrent calls from several threads
 * are serialized so that every device sees the collectives in the same
 * order (no cross-device deadlock).
 *
 * Backends: the CPU backend (RUDA_CPU_DEVICES=N devices) reduces in
 * process; the CUDA backend uses NCCL (libnccl.so.2, loaded on first use;
 * keep NCCL_NVLS_ENABLE=0). Backends without collectives, and CUDA
 * without NCCL, answer RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION at once.
 *
 * Thread-safety: every function here may be called from any thread except a
 * device worker (inside ruda_client_exclusive or ruda_client_profile), which
 * would wait for itself: that is refused with RUDA_ERR_INVALID_ARGUMENT.
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

/* The reduction of a collective. */
typedef enum ruda_reduce_op {
  RUDA_REDUCE_SUM = 0,  /* element-wise sum; integers wrap around */
  RUDA_REDUCE_MEAN = 1, /* sum / n; integers truncate toward zero */
} ruda_reduce_op_t;

/* All-reduce over n devices: for every element e,
 *   dst[i][e] = op(src[0][e], ..., src[n-1][e])   for every i.
 *
 * clients[i], src[i] and dst[i] are borrowed; the buffers are kept alive by
 * the queued operation until it has run. dst[i] may be src[i] (in place) but
 * must not partially overlap it. Every src[i] and dst[i] holds the same
 * number of bytes, a multiple of the element size of dtype (0 is allowed).
 * Element types: f64, f32, f16, bf16 (accumulated in f32), i8, i32, i64, u8,
 * u32, u64.
 *
 * Non-blocking, like a launch: returns once the operation is queued on every
 * device (the first call over a device set first waits for its
 * communicator). Errors found while running (an unbound buffer, a failed
 * peer) are queued on every participant's stream and returned by its next
 * flush, sync or read.
 *
 * Errors returned at once:
 *   RUDA_ERR_INVALID_ARGUMENT: NULL arrays, n == 0 or n > 64, an empty
 *     handle, a device listed twice, devices of different types, sizes that
 *     differ or are not a multiple of the element size, an unsupported dtype
 *     or op, a call from a device worker;
 *   RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION: the backend has no collectives;
 *   RUDA_ERR_UNAVAILABLE: a device was shut down;
 *   RUDA_ERR_IO_OUT_OF_MEMORY: no host memory for the operations;
 *   the backend's error when creating the communicator fails. */
ruda_status_t ruda_client_all_reduce(ruda_client_t *const *clients, size_t n,
                                     const ruda_handle_t *src, const ruda_handle_t *dst,
                                     ruda_elem_type_t dtype, ruda_reduce_op_t op);

/* Orders the client's stream after the collectives queued on its device, so
 * that later work on the stream sees their results. Blocks until the worker
 * has done so (not until the collectives finish: ruda_client_sync waits for
 * that). On the CPU backend collectives already run in order and this only
 * round-trips.
 *
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL client, called from the device's
 * worker), RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION (no collectives),
 * RUDA_ERR_UNAVAILABLE (shut down), the backend's error. Thread-safe. */
ruda_status_t ruda_client_sync_collective(ruda_client_t *c);

RUDA_END_DECLS

#endif /* RUDA_COMM_H */
