/* Cancellation: ruda_client_cancel drops the work queued on a stream
 * before it starts, and stops a running CPU launch at its next ruda
 * boundary (ruda/client.h, "Cancellation").
 *
 * A request is (stream, ticket): every cancellable op of that stream whose
 * number (ruda__op_t.seq, from the device's `submitted` counter) is at most
 * the ticket, the value of the counter when the request was made, is
 * dropped when the thread running the queue pops it (its run then
 * releases what it holds without calling the server). A running op learns
 * of a request through the device's cancel source, which the server polls
 * (ruda__cancel_point_hit). A request is retired once the device has
 * popped as many ops as its ticket. The number it dropped is queued on
 * the stream as one ServerError::Cancelled, which the stream's next flush,
 * sync or read returns: when the request retires, or before an op of the
 * stream that is not dropped runs (a sync queued behind the dropped work,
 * whose number the ticket may count). Blocking calls are never dropped: queued
 * behind dropped work, they run at once, and those that drain the stream
 * (sync, flush, read) return the Cancelled error. */
#include "base/alloc.h"
#include "client/client_internal.h"

typedef struct ruda__cancel_req {
  uint64_t stream;
  uint64_t ticket;
  uint64_t dropped;
} cancel_req_t;

static bool covers_locked(ruda__device_t *d, uint64_t stream, uint64_t seq, cancel_req_t **out) {
  if (seq == 0) return false;
  for (size_t i = 0; i < d->cancel_len; i++) {
    cancel_req_t *r = &d->cancel_reqs[i];
    if (r->stream == stream && seq <= r->ticket) {
      if (out) *out = r;
      return true;
    }
  }
  return false;
}

static bool source_covers(void *ctx, uint64_t stream, uint64_t seq) {
  ruda__device_t *d = ctx;
  pthread_mutex_lock(&d->cancel_lock);
  bool hit = covers_locked(d, stream, seq, NULL);
  pthread_mutex_unlock(&d->cancel_lock);
  return hit;
}

void ruda__device_cancel_init(ruda__device_t *d) {
  pthread_mutex_init(&d->cancel_lock, NULL);
  atomic_init(&d->cancel.gen, 0);
  d->cancel.covers = source_covers;
  d->cancel.ctx = d;
}

void ruda__device_cancel_deinit(ruda__device_t *d) {
  pthread_mutex_destroy(&d->cancel_lock);
  ruda__free(d->cancel_reqs);
  d->cancel_reqs = NULL;
}

/* Queues ServerError::Cancelled for what `r` dropped so far on its stream
 * and starts counting again. Under cancel_lock, on the thread running the
 * queue. */
static void report_dropped(ruda__device_t *d, cancel_req_t *r) {
  if (!r->dropped || !d->server) return;
  ruda__stream_t *st = ruda__stream_get(&d->server->streams, (ruda_stream_id_t){r->stream});
  if (st) {
    ruda__stream_push_error(
        st, ruda_status_create(RUDA_ERR_SERVER_CANCELLED,
                               "ruda_client_cancel dropped %llu operation%s queued on stream %llu "
                               "before %s started",
                               (unsigned long long)r->dropped, r->dropped == 1 ? "" : "s",
                               (unsigned long long)r->stream, r->dropped == 1 ? "it" : "they"));
  }
  r->dropped = 0;
}

void ruda__device_cancel_mark(ruda__device_t *d, ruda__op_t *op) {
  pthread_mutex_lock(&d->cancel_lock);
  cancel_req_t *r = NULL;
  if (op->cancellable && covers_locked(d, op->stream.value, op->seq, &r)) {
    op->cancelled = true;
    r->dropped++;
  } else {
    /* An op of the stream that runs (a sync waiting behind the dropped
     * work, say) comes after the Cancelled error. */
    for (size_t i = 0; i < d->cancel_len; i++) {
      if (d->cancel_reqs[i].stream == op->stream.value) report_dropped(d, &d->cancel_reqs[i]);
    }
  }
  pthread_mutex_unlock(&d->cancel_lock);
}

void ruda__device_cancel_settle(ruda__device_t *d) {
  unsigned long popped = atomic_load_explicit(&d->executed, memory_order_relaxed);
  pthread_mutex_lock(&d->cancel_lock);
  for (size_t i = 0; i < d->cancel_len;) {
    cancel_req_t r = d->cancel_reqs[i];
    if (popped < r.ticket) {
      i++;
      continue;
    }
    d->cancel_reqs[i] = d->cancel_reqs[--d->cancel_len];
    atomic_fetch_sub_explicit(&d->cancels, 1, memory_order_relaxed);
    report_dropped(d, &r);
  }
  pthread_mutex_unlock(&d->cancel_lock);
}

ruda_status_t ruda_client_cancel(ruda_client_t *c) {
  if (!c) return ruda__client_invalid("ruda_client_cancel: NULL client");
  ruda_status_t s = ruda__device_refuse_in_kernel("ruda_client_cancel");
  if (s) return s;
  ruda__device_t *d = c->dev;
  if (!ruda__device_enter(d)) return ruda__device_shut_down_error(d);
  uint64_t stream = ruda__client_stream(c).value;
  pthread_mutex_lock(&d->cancel_lock);
  /* Every op this thread (and any thread before this call) queued has a
   * number at most this. */
  uint64_t ticket = atomic_load_explicit(&d->submitted, memory_order_seq_cst);
  cancel_req_t *r = NULL;
  for (size_t i = 0; i < d->cancel_len; i++) {
    if (d->cancel_reqs[i].stream == stream) r = &d->cancel_reqs[i];
  }
  if (r) {
    r->ticket = ticket; /* a later request covers the earlier one's ops */
  } else {
    cancel_req_t *reqs =
        ruda__grow(d->cancel_reqs, &d->cancel_cap, d->cancel_len, sizeof *reqs, 4);
    if (!reqs) {
      pthread_mutex_unlock(&d->cancel_lock);
      ruda__device_leave(d);
      return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory cancelling stream %llu",
                                (unsigned long long)stream);
    }
    d->cancel_reqs = reqs;
    d->cancel_reqs[d->cancel_len++] = (cancel_req_t){stream, ticket, 0};
    atomic_fetch_add_explicit(&d->cancels, 1, memory_order_relaxed);
  }
  /* After the request: whoever reads the new gen finds it. */
  atomic_fetch_add_explicit(&d->cancel.gen, 1, memory_order_release);
  pthread_mutex_unlock(&d->cancel_lock);
  ruda__device_leave(d);
  return NULL;
}
