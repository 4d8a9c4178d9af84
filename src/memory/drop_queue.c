/* Drop queue: host buffers still read by the device, released once a
 * fence covering their use has completed. Items are held for at most two
 * flushes; a flush that moves items to pending makes exactly one fence (plus
 * one synchronous fence in the rare case that pending items were never
 * fenced), and a flush with nothing staged makes none. */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "memory/drop_queue.h"

typedef struct ruda__drop_item {
  void *item;
  ruda__drop_fn drop;
} ruda__drop_item_t;

typedef struct ruda__drop_list {
  ruda__drop_item_t *items;
  size_t len, cap;
} ruda__drop_list_t;

struct ruda__drop_queue {
  ruda__fence_ops_t fence_ops;
  uint32_t max_count;
  uint64_t max_bytes;
  ruda__drop_list_t staged, pending;
  void *fence; /* covers `pending`; NULL before the first flush */
  uint32_t count;
  uint64_t bytes;
};

static void ruda__drop_list_run(ruda__drop_list_t *l) {
  for (size_t i = 0; i < l->len; i++)
    if (l->items[i].drop) l->items[i].drop(l->items[i].item);
  l->len = 0;
}

ruda__drop_queue_t *ruda__drop_queue_create(uint32_t max_count, uint64_t max_bytes,
                                           ruda__fence_ops_t fence) {
  if (!fence.make || !fence.wait || !fence.destroy) return NULL;
  ruda__drop_queue_t *q = ruda__calloc(1, sizeof *q);
  if (!q) return NULL;
  q->fence_ops = fence;
  q->max_count = max_count ? max_count : 64;
  q->max_bytes = max_bytes ? max_bytes : 64ull * 1024 * 1024;
  return q;
}

ruda_status_t ruda__drop_queue_push(ruda__drop_queue_t *q, void *item, uint64_t bytes,
                                    ruda__drop_fn drop) {
  ruda__drop_list_t *l = &q->staged;
  if (l->len == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    ruda__drop_item_t *ni = ruda__realloc(l->items, cap * sizeof *ni);
    if (!ni) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, cap * sizeof *ni);
    l->items = ni;
    l->cap = cap;
  }
  l->items[l->len].item = item;
  l->items[l->len].drop = drop;
  l->len++;
  if (q->count < UINT32_MAX) q->count++;
  q->bytes = bytes > UINT64_MAX - q->bytes ? UINT64_MAX : q->bytes + bytes;
  return NULL;
}

RUDA__HOT
bool ruda__drop_queue_should_flush(const ruda__drop_queue_t *q) {
  return q->count >= q->max_count || q->bytes >= q->max_bytes;
}

static void ruda__drop_queue_sync_fence(ruda__drop_queue_t *q, void *fence) {
  q->fence_ops.wait(q->fence_ops.ctx, fence);
  q->fence_ops.destroy(q->fence_ops.ctx, fence);
}

/* Drops the items of `l` once the device work queued before them is done:
 * waits on `fence` and destroys it, or (NULL) on a fence made now where `l`
 * holds items. */
static void ruda__drop_list_run_after(ruda__drop_queue_t *q, void *fence, ruda__drop_list_t *l) {
  if (!fence && l->len) fence = q->fence_ops.make(q->fence_ops.ctx);
  if (fence) ruda__drop_queue_sync_fence(q, fence);
  ruda__drop_list_run(l);
}

void ruda__drop_queue_flush(ruda__drop_queue_t *q) {
  /* 1. The previous fence covers the pending items: wait, then drop them.
   * 2. Pending items without a fence (cannot happen through this API; kept
   *    so that no item is dropped before a fence has covered it) get one
   *    now, waited on synchronously. */
  ruda__drop_list_run_after(q, q->fence, &q->pending);
  q->fence = NULL;
  /* 3. Staged becomes pending (swap the buffers, both are empty-able). */
  ruda__drop_list_t t = q->pending;
  q->pending = q->staged;
  q->staged = t;
  q->staged.len = 0;
  /* 4. One fence for everything submitted so far, when anything waits for
   *    it: a flush with nothing staged makes none, so flushing an idle
   *    stream costs no driver call (an event's create and record). */
  q->fence = q->pending.len ? q->fence_ops.make(q->fence_ops.ctx) : NULL;
  /* 5. */
  q->count = 0;
  q->bytes = 0;
}

void ruda__drop_queue_destroy(ruda__drop_queue_t *q) {
  if (!q) return;
  ruda__drop_list_run_after(q, q->fence, &q->pending);
  q->fence = NULL;
  ruda__drop_list_run_after(q, NULL, &q->staged);
  ruda__free(q->pending.items);
  ruda__free(q->staged.items);
  ruda__free(q);
}
