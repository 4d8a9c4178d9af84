/* Devices: the process-wide registry of servers and the worker thread that
 * owns each one.
 *
 * Every device has exactly one server, created on first use on the device's
 * worker thread, which then executes submitted operations in FIFO order. A
 * submit from the worker thread itself (inside ruda_client_exclusive or
 * ruda_client_profile) runs inline.
 */
#ifndef RUDA_CLIENT_DEVICE_H
#define RUDA_CLIENT_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>

#include "client/sync_primitives.h"
#include "server/server.h"

typedef struct ruda__device ruda__device_t;
typedef struct ruda__op ruda__op_t;

/* Executes the operation on the worker. It must free or signal `op`; after
 * signalling a completion it must not touch `op` again. */
typedef void (*ruda__op_run_fn)(ruda__device_t *dev, ruda__op_t *op);

struct ruda__op {
  ruda__mpsc_node_t node; /* first member */
  ruda__op_run_fn run;
  ruda_stream_id_t stream;
};

struct ruda__device {
  ruda_device_id_t id;
  const ruda__backend_t *backend;
  ruda__server_t *server;
  pthread_t thread;
  ruda__mpsc_t queue;
  atomic_ulong submitted;
  unsigned long executed; /* worker only: ops popped */
  atomic_ulong completed; /* ops whose run returned (release), for waiters */
  atomic_uint sleeping;
  bool stop;              /* worker only */
  ruda_status_t init_error;
  ruda__completion_t ready;
  int profile_level;      /* ruda_log_level_t of [profiling], read at creation */
  atomic_bool dead;       /* after ruda_shutdown(): ops are cancelled */
  /* Copied from the server's utilities at creation: clients read them
   * without a round trip, and they outlive the server. */
  ruda_device_properties_t properties;
  uint64_t properties_hash;
  char info[256];
  ruda__layout_policy_t layout_policy;
  ruda_bounds_check_mode_t check_mode;
  /* Recycled operation blocks (see ruda__device_op_alloc). */
  pthread_mutex_t op_cache_lock;
  void *op_cache;
  uint32_t op_cache_len;
};

/* Operation blocks: callers allocate ops that the worker frees, which
 * glibc serves from its slow cross-thread path. Blocks of at most
 * RUDA__OP_BLOCK bytes are recycled through a small per-device cache
 * instead. Thread-safe. NULL when memory is exhausted. */
#define RUDA__OP_BLOCK 256
void *ruda__device_op_alloc(ruda__device_t *d, size_t bytes);
void ruda__device_op_free(ruda__device_t *d, void *block, size_t bytes);

/* The device, creating its server on first use. The device lives until
 * ruda_shutdown()/exit. Errors: RUDA_ERR_UNAVAILABLE, RUDA_ERR_INVALID_ARGUMENT. */
ruda_status_t ruda__device_get(ruda_device_id_t id, ruda__device_t **out);
/* Queues `op` (or runs it inline when called on the worker thread). After
 * ruda_shutdown() the op runs at once on the caller's thread with
 * d->server == NULL: every op's run function must then release what it
 * holds and report RUDA_ERR_UNAVAILABLE instead of calling the server. */
void ruda__device_submit(ruda__device_t *d, ruda__op_t *op);
bool ruda__device_on_worker(const ruda__device_t *d);
/* For servers whose work completes in order (completes_in_order): waits
 * until every op submitted before the call has run and reports whether no
 * error is queued on any stream, so a sync or flush can be answered without
 * a round trip. False: take the regular path (errors queued, tracing on,
 * called on the worker, or the wait took too long). */
bool ruda__device_quiet_after_progress(ruda__device_t *d);

#endif
