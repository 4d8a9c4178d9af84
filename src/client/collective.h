/* Collectives on the client side, as other parts of ruda use them: the MPI
 * transport (src/mpi) queues operations of communicators that span
 * processes on a client's device through these.
 *
 * Thread-safety: every function may be called from any thread except the
 * client's device worker (refused with RUDA_ERR_INVALID_ARGUMENT).
 */
#ifndef RUDA_CLIENT_COLLECTIVE_H
#define RUDA_CLIENT_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/client.h"
#include "server/server.h"

/* What the device of `c` offers: comm_enabled, comm_reduce_types,
 * comm_strided_send and whether comm_token/host_call exist. Errors:
 * RUDA_ERR_INVALID_ARGUMENT (called from the worker), RUDA_ERR_UNAVAILABLE
 * (shut down). */
typedef struct ruda__comm_caps {
  const char *backend; /* "cpu", "cuda" */
  bool collectives;    /* comm_enabled with a collective method */
  bool tokens;         /* communicators across processes (comm_token) */
  bool host_call;
  bool strided_send;
  uint64_t reduce_types;
} ruda__comm_caps_t;
ruda_status_t ruda__client_comm_caps(ruda_client_t *c, ruda__comm_caps_t *out);

/* comm_token on the device's worker (blocking). */
ruda_status_t ruda__client_comm_token(ruda_client_t *c, void *out, size_t cap, size_t *out_len);
/* comm_init of a communicator across processes (peers->ids NULL) on the
 * device's worker (blocking: returns when this rank has joined). */
ruda_status_t ruda__client_comm_init(ruda_client_t *c, const ruda__comm_peers_t *peers,
                                     const void *token, size_t token_len);
/* comm_destroy on the device's worker (blocking). NULL when the backend has
 * none. */
ruda_status_t ruda__client_comm_destroy(ruda_client_t *c, uint64_t id);

/* Queues one participant's part `coll` on the client's stream; the
 * bindings in it are cloned. peers.ids must be NULL (across processes).
 * The caller validated it. Non-blocking. Errors: RUDA_ERR_IO_OUT_OF_MEMORY,
 * RUDA_ERR_UNAVAILABLE. */
ruda_status_t ruda__client_collective_queue(ruda_client_t *c, const ruda__coll_t *coll);

/* The host function of ruda__client_host_call: `ctx` is the caller's; src
 * and dst the host addresses of the views (NULL when absent or when they
 * could not be resolved, sizes then 0). Its error is queued on the stream. */
typedef ruda_status_t (*ruda__host_fn)(void *ctx, void *src, uint64_t src_bytes, void *dst,
                                       uint64_t dst_bytes);

/* Queues fn(ctx, ...) on the client's stream over the views of src and dst
 * (either may be NULL; bindings are kept until it ran), named `name` in the
 * trace (static storage: the operation, "all-reduce"), then
 * ctx_free(ctx) (may be NULL). Non-blocking. Errors:
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION (no host_call on this backend: ctx
 * is then not freed), RUDA_ERR_IO_OUT_OF_MEMORY, RUDA_ERR_UNAVAILABLE. */
ruda_status_t ruda__client_host_call(ruda_client_t *c, const ruda_handle_t *src,
                                     const ruda_handle_t *dst, const char *name,
                                     ruda__host_fn fn, void *ctx, void (*ctx_free)(void *ctx));

/* Runs fn(ctx) on the caller's thread, now, when the device of `c` has
 * finished every operation submitted to it (on any stream) and its work is
 * complete when its worker returns (completes_in_order: CPU); fn then
 * follows everything queued before, as a queued operation would, and the
 * device stays entered (ruda_shutdown waits) while it runs. Not while the
 * trace is on (queued host calls are traced). *out_ran says whether fn
 * ran; when it did not, nothing happened. Errors: those of
 * ruda__client_host_call's checks (a device worker, shut down). */
ruda_status_t ruda__client_run_if_idle(ruda_client_t *c, void (*fn)(void *ctx), void *ctx,
                                       bool *out_ran);

#endif
