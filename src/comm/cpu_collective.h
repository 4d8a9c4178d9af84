/* In-process collectives and send/recv between CPU devices.
 *
 * Each communicator (one per set of devices) is a rendezvous
 * (comm/rendezvous.h): every participant's worker thread contributes its
 * resolved buffers and waits for the others; the last to arrive checks the
 * round; then each participant does its share of the copying or reducing,
 * and all leave together, so that every dst is complete when any worker
 * moves on to later work.
 *
 * Element types reduced: RUDA__REDUCE_TYPES_CPU (server/server.h).
 * Thread-safe: meant to be called from device workers, one call per
 * participant per operation, in the same order on every device.
 */
#ifndef RUDA_COMM_CPU_COLLECTIVE_H
#define RUDA_COMM_CPU_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"
#include "server/server.h"

/* Creates the rendezvous of `peers` (in-process: peers->ids set) if it does
 * not exist yet. Errors: RUDA_ERR_SERVER_GENERIC (out of memory, no ids). */
ruda_status_t ruda__cpu_comm_init(const ruda__comm_peers_t *peers);

/* One participant's part: the operation and its resolved buffers. */
typedef struct ruda__cpu_part {
  const ruda__coll_t *coll;
  const uint8_t *src; /* the view of coll->src.binding; NULL when none */
  uint64_t src_bytes;
  uint8_t *dst;       /* the view of coll->dst; NULL when none */
  uint64_t dst_bytes;
  /* This participant's own failure (borrowed), or NULL. Its peers then
   * fail too, with a message naming it. */
  ruda_status_t error;
} ruda__cpu_part_t;

/* Contributes `part` and returns when the operation is done on every
 * participant. Every participant must call this, even when its part
 * failed. Returns this participant's error (owned by the caller): its own
 * failure, a peer's, a disagreement between the parts (kind, sizes, dtype,
 * op, root, peers), or the timeout (RUDA_ERR_SERVER_GENERIC). */
ruda_status_t ruda__cpu_collective(const ruda__cpu_part_t *part);

/* Reduces `nsrc` arrays of `count` elements of `dtype` element-wise with
 * `op` into each of the `ndst` arrays (which may alias the sources).
 * Mean divides by nsrc. Types outside RUDA__REDUCE_TYPES_CPU are ignored.
 * Thread-safe (no shared state); the MPI transport uses it too. */
void ruda__cpu_reduce(ruda_elem_type_t dtype, ruda_reduce_op_t op, const void *const *src,
                      size_t nsrc, void *const *dst, size_t ndst, size_t count);

/* The bytes the view `d` spans from its start: (sum of (dim-1)*stride + 1)
 * x elem_size, 0 when it has no element. False on overflow. */
bool ruda__cpu_view_extent(const ruda__copy_desc_t *d, uint64_t *out);
/* Gathers the view `d` (shape, strides in elements, elem_size; the
 * binding is not used) of `base` into contiguous `out`, row-major.
 * Thread-safe; the MPI transport packs strided sends with it. */
void ruda__cpu_gather_view(const uint8_t *base, const ruda__copy_desc_t *d, uint8_t *out);

/* Divides each of `count` elements of `dtype` in place by n (integers
 * truncate toward zero; 64-bit integers as in a wrapped sum). */
void ruda__cpu_divide(ruda_elem_type_t dtype, void *data, size_t count, uint64_t n);

#endif
