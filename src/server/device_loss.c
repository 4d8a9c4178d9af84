/* Device loss enforced by the server layer (server.h): a backend marks
 * its server lost when a fault ended the device's context, and every
 * stream of the device then fails with ServerError::DeviceLost at once,
 * each later operation's stream again, until the backend recovers. */
#include <stdarg.h>
#include <stdio.h>

#include "server/server.h"

void ruda__device_loss_mark(ruda__device_loss_t *l, const char *fmt, ...) {
  int expected = 0;
  /* 3 while the reason is written, so that a reader of 1 sees it whole. */
  if (!l || !atomic_compare_exchange_strong(&l->state, &expected, 3)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->reason, sizeof l->reason, fmt, ap);
  va_end(ap);
  atomic_store_explicit(&l->reported, false, memory_order_relaxed);
  atomic_store_explicit(&l->state, 1, memory_order_release);
}

static bool lost_queued(const ruda__stream_t *rs) {
  for (size_t i = 0; i < rs->errors.len; i++) {
    if (ruda_status_kind(rs->errors.items[i]) == RUDA_ERR_SERVER_DEVICE_LOST) return true;
  }
  return false;
}

static void push_lost(void *ctx, ruda__stream_t *rs) {
  const ruda__server_t *s = ctx;
  if (lost_queued(rs)) return;
  ruda__stream_push_error(rs, ruda_status_create(RUDA_ERR_SERVER_DEVICE_LOST, "%s:%u is lost: %s",
                                                 ruda_device_type_name(s->device.type_id),
                                                 s->device.index_id, s->loss->reason));
}

void ruda__server_settle_lost(ruda__server_t *s, ruda_stream_id_t stream) {
  ruda__device_loss_t *l = s->loss;
  int state = l ? atomic_load_explicit(&l->state, memory_order_acquire) : 0;
  if (state != 1 && state != 2) return;
  ruda__stream_t *rs = ruda__stream_get(&s->streams, stream);
  if (state == 1) {
    ruda__stream_table_foreach(&s->streams, push_lost, s);
    int told = 1;
    atomic_compare_exchange_strong(&l->state, &told, 2);
  } else if (rs) {
    push_lost(s, rs);
  }
}
