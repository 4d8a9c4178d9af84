/* In-process collectives between CPU devices.
 *
 * Each communicator (one per set of devices) is a rendezvous: every
 * participant's worker thread contributes its buffers and waits for the
 * others; then each participant reduces its own slice of the elements into
 * every participant's destination, and all leave together, so that every
 * dst is complete when any worker moves on to later work.
 *
 * Communicators live in a process-wide registry, created on first use and
 * freed at exit. Thread-safe: meant to be called from device workers, one
 * call per participant per collective, in the same order on every device.
 */
#ifndef RUDA_COMM_CPU_COLLECTIVE_H
#define RUDA_COMM_CPU_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/comm.h"
#include "ruda/status.h"
#include "ruda/types.h"

/* The element types reduced are ruda__reduce_dtype_supported()'s
 * (src/server/server.h). */

/* Creates the communicator of `ids` (any order, no duplicates, 1..64
 * devices) if it does not exist yet. Errors: RUDA_ERR_INVALID_ARGUMENT,
 * RUDA_ERR_SERVER_GENERIC (out of memory). */
ruda_status_t ruda__cpu_comm_init(const ruda_device_id_t *ids, size_t n);

/* One participant's part of an all-reduce. */
typedef struct ruda__cpu_reduce_part {
  const void *src;
  void *dst;
  uint64_t src_bytes, dst_bytes;
  /* This participant's own failure (borrowed), or NULL. Its peers then fail
   * too, with a message naming it. */
  ruda_status_t error;
} ruda__cpu_reduce_part_t;

/* Contributes `self`'s part and returns when the collective is done on
 * every participant. Every participant must call this, even when its part
 * failed. Returns this participant's error (owned by the caller): its own
 * failure, a peer's, or a mismatch in sizes, dtype or op
 * (RUDA_ERR_SERVER_GENERIC). */
ruda_status_t ruda__cpu_all_reduce(const ruda_device_id_t *ids, size_t n, ruda_device_id_t self,
                                   const ruda__cpu_reduce_part_t *part, ruda_elem_type_t dtype,
                                   ruda_reduce_op_t op);

#endif
