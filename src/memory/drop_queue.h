/* Deferred release of host buffers in flight (drop queue): buffers the
 * device may still read, dropped once a fence covering their use has
 * completed. Defined in drop_queue.c. */
#ifndef RUDA_MEMORY_DROP_QUEUE_H
#define RUDA_MEMORY_DROP_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "ruda/status.h"

/* A fence: `wait` blocks until all work submitted before `make` returned it
 * has completed; `destroy` frees it. */
typedef struct ruda__fence_ops {
  void *(*make)(void *ctx);
  void (*wait)(void *ctx, void *fence);
  void (*destroy)(void *ctx, void *fence);
  void *ctx;
} ruda__fence_ops_t;

typedef void (*ruda__drop_fn)(void *item);

typedef struct ruda__drop_queue ruda__drop_queue_t;

/* Flushes when `max_count` buffers (0: default 64) or `max_bytes` (0:
 * default 64 MiB) are staged. NULL when memory is exhausted or a fence
 * operation is missing. Not thread-safe: one queue per stream, used on the
 * device thread. */
ruda__drop_queue_t *ruda__drop_queue_create(uint32_t max_count, uint64_t max_bytes,
                                           ruda__fence_ops_t fence);
/* Stages `item` (`bytes` long) to be dropped with `drop` (NULL: nothing to
 * call) once it is safe. Errors: OutOfMemory (the item is not staged). */
ruda_status_t ruda__drop_queue_push(ruda__drop_queue_t *q, void *item, uint64_t bytes,
                                    ruda__drop_fn drop);
bool ruda__drop_queue_should_flush(const ruda__drop_queue_t *q);
/* Waits on the previous fence and drops what it covered, then moves the
 * staged items under a new fence (so a flush waits only for work queued
 * before the previous flush, never for what was just submitted). With
 * nothing staged it makes no fence, and the next flush waits for nothing. */
void ruda__drop_queue_flush(ruda__drop_queue_t *q);
/* Waits for everything and drops every item; frees the queue. NULL is a
 * no-op. */
void ruda__drop_queue_destroy(ruda__drop_queue_t *q);

#endif
