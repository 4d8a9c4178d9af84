/* Rendezvous of the participants of an in-process communicator.
 *
 * The device workers taking part in one collective (or one send/recv) meet
 * here, one round per operation. Each arrives with its part; the last to
 * arrive runs `all` over every part (the CPU backend checks the round, the
 * CUDA backend issues the round's NCCL calls as one group); then each runs
 * `each` for its own share of the work, and, when there is such work, no
 * one leaves before all have finished it (their results may be written into
 * each other's buffers).
 *
 * Waits spin briefly, then sleep. The wait for peers to arrive is bounded
 * by the communication timeout (ruda__comm_timeout_ns); when it expires the
 * rendezvous breaks: every waiting and later participant fails at once
 * with the reason, which names the ranks that did not arrive.
 *
 * Rendezvous live in a process-wide registry, created on first use and
 * never freed (a handful per process). Thread-safe.
 */
#ifndef RUDA_COMM_RENDEZVOUS_H
#define RUDA_COMM_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"
#include "server/server.h"

typedef struct ruda__rendezvous ruda__rendezvous_t;

/* What the participants of one round brought. */
typedef struct ruda__round {
  uint32_t size;
  void *parts[RUDA__COMM_MAX_DEVICES]; /* by rank; borrowed from each caller */
  /* Set by `all` to fail the round: every participant returns it. */
  char error[512];
} ruda__round_t;

/* The rendezvous of communicator `id` with `size` participants (1..64),
 * created on first use; `ids` (sorted, `size` of them, copied) name the
 * ranks in errors. Errors: RUDA_ERR_SERVER_GENERIC (out of memory, or `id`
 * already known with another size). */
ruda_status_t ruda__rendezvous_get(uint64_t id, uint32_t size, const ruda_device_id_t *ids,
                                   ruda__rendezvous_t **out);

/* Joins the current round as `rank` with `part`. When all have arrived,
 * the last one calls all(round, ctx) (may be NULL); then, unless the round
 * failed, every participant calls each(round, rank, ctx) (may be NULL) and,
 * when `each` is set, waits for the others' `each` before returning.
 * `what` names the operation in errors ("all-reduce"). Returns NULL, the
 * round's error or the timeout (RUDA_ERR_SERVER_GENERIC, owned by the
 * caller). Every participant must call this once per round, in the same
 * order of rounds. */
ruda_status_t ruda__rendezvous_join(ruda__rendezvous_t *rv, uint32_t rank, void *part,
                                    void (*all)(ruda__round_t *round, void *ctx),
                                    void (*each)(ruda__round_t *round, uint32_t rank, void *ctx),
                                    void *ctx, const char *what);

#endif
