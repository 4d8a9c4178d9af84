/* Futures of the CUDA server (cuda_future.c): what a read or a sync hands
 * back, completed by an event on whichever thread waits, and the home they
 * share with the server (future_home_t in cuda_types.h) so they may outlive
 * it. Reads (cuda_copy.c) fill a future's parts; the server's destroy
 * settles the futures still held. Only built with the CUDA headers.
 */
#ifndef RUDA_CUDA_FUTURE_H
#define RUDA_CUDA_FUTURE_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

/* One descriptor of a read: where its bytes land, and where they are
 * copied from once the future's event has completed. */
typedef struct read_part {
  void *dst;
  const void *staged; /* NULL: copied straight into dst */
  uint64_t size;
  ruda_memory_t *stage; /* pinned staging from the stream's pool, or NULL */
} read_part_t;

/* A read or a sync: completes when `event` has, on whichever thread waits.
 * A read's staged parts are copied out then, and its staging released.
 *
 * Lifetime: the future is on its server's live list from
 * ruda__cuda_future_new until it is destroyed. Waiting happens under
 * `lock`; when the server is destroyed first (ruda_shutdown, exit), it
 * settles every live future under that lock (ruda__cuda_futures_settle: the
 * result is kept, the event, block and staging go back) and sets `server`
 * to NULL, after which the future touches nothing but itself and `home`. */
typedef struct cuda_future {
  ruda__future_t base;
  cuda_server_t *server; /* NULL once settled by the server's destroy */
  CUevent event;
  ruda_status_t early; /* error found while enqueueing; the result once done */
  read_part_t *parts;   /* `one` for a single descriptor */
  size_t nparts;
  read_part_t one;
  void *block; /* small reads: the pinned block the parts are staged in */
  /* The stream's completion record (a reference) and the cursor this
   * future's completion covers. */
  cuda_synced_t *synced;
  uint64_t cursor;
  /* ruda__cuda_future_new clears the fields above; those below are set one
   * by one. */
  ruda__recent_kernels_t recent; /* formatted only when a fault is reported */
  uint64_t generation;
  /* Completed: a wait returns what `early` still holds. Written under
   * `lock` after `early`; read without it by the destroy. */
  atomic_bool done;
  future_home_t *home;
  struct cuda_future *prev, *next; /* home->live, under home->lock */
  pthread_mutex_t lock;            /* waiting, polling, settling */
} cuda_future_t;

/* A future for work on `st` with room for `nparts` read parts, holding a
 * pooled event when one is free (ruda__cuda_future_record creates one
 * otherwise), on the server's live list. NULL when memory is exhausted. */
cuda_future_t *ruda__cuda_future_new(cuda_server_t *s, cuda_stream_t *st, size_t nparts);
/* Fences `f` with an event recorded on `st` now; when no event can be
 * recorded, waits for the stream instead (a fault then is the result). */
ruda_status_t ruda__cuda_future_record(cuda_server_t *s, cuda_stream_t *st, cuda_future_t *f);
/* When `f` completes without error, everything on `st` up to `cursor` is
 * known complete. */
void ruda__cuda_future_covers(cuda_stream_t *st, cuda_future_t *f, uint64_t cursor);

/* The server is being destroyed: completes every live future now (with
 * `alive`, their data; otherwise RUDA_ERR_UNAVAILABLE) and makes them
 * forget the server. Worker only. */
void ruda__cuda_futures_settle(cuda_server_t *s, bool alive);
/* Frees a future object (from the server's pool at destroy). */
void ruda__cuda_future_free(cuda_future_t *f);
/* Drops one reference to `h` (its lock held; released here); the last
 * frees it. */
void ruda__cuda_home_release_locked(future_home_t *h);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_FUTURE_H */
