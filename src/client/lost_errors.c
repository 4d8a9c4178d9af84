/* Errors nobody read: what is still queued on a device's streams when no
 * call can drain it any more (the device's last client released,
 * ruda_shutdown, process exit) goes to the application's handler or to the
 * log, instead of vanishing. See ruda/client.h, "Errors nobody read". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log_internal.h"
#include "client/client_internal.h"

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static ruda_lost_error_fn handler_fn;
static void *handler_user;

void ruda_set_lost_error_handler(ruda_lost_error_fn fn, void *user) {
  pthread_mutex_lock(&handler_lock);
  handler_fn = fn;
  handler_user = fn ? user : NULL;
  pthread_mutex_unlock(&handler_lock);
}

/* One error (borrowed) to the handler, or to the log. */
static void report_one(ruda__device_t *d, ruda_stream_id_t stream, ruda_status_t err,
                       const char *when) {
  pthread_mutex_lock(&handler_lock);
  ruda_lost_error_fn fn = handler_fn;
  void *user = handler_user;
  pthread_mutex_unlock(&handler_lock);
  if (fn) {
    fn(user, d->id, stream, err);
    return;
  }
  char *text = ruda_status_to_string(err);
  char head[160];
  snprintf(head, sizeof head, "error never read on %s:%u stream %llu (%s):\n", d->backend->name,
           d->id.index_id, (unsigned long long)stream.value, when);
  size_t hn = strlen(head), tn = text ? strlen(text) : 0;
  char *line = ruda__malloc(hn + tn + 1);
  if (line) {
    memcpy(line, head, hn);
    if (text) memcpy(line + hn, text, tn);
    line[hn + tn] = '\0';
  }
  ruda__log_always(RUDA_LOG_CHANNEL_STREAMING, line ? line : head);
  ruda__free(line);
  ruda__free(text);
}

/* A lost device's streams each hold its DeviceLost: the loss is one
 * event, reported once (the first stream's), however many streams hold
 * it, and not again at a later report (`loss->reported`). */
static bool skip_loss(ruda__device_t *d, ruda_status_t err) {
  if (!ruda_status_find(err, RUDA_ERR_SERVER_DEVICE_LOST)) return false;
  return atomic_exchange_explicit(&d->loss.reported, true, memory_order_acq_rel);
}

/* Every error a drain returned (a ServerUnhealthy's list, or one error),
 * reported one by one; takes `err`. */
static void report_all(ruda__device_t *d, ruda_stream_id_t stream, ruda_status_t err,
                       const char *when) {
  if (!err) return;
  if (ruda_status_kind(err) == RUDA_ERR_SERVER_UNHEALTHY) {
    for (size_t i = 0, n = ruda_status_error_count(err); i < n; i++) {
      ruda_status_t e = ruda_status_error_at(err, i);
      if (!skip_loss(d, e)) report_one(d, stream, e, when);
    }
  } else if (!skip_loss(d, err)) {
    report_one(d, stream, err, when);
  }
  ruda_status_free(err);
}

typedef struct stream_ids {
  uint64_t *ids;
  size_t len, cap;
} stream_ids_t;

static void collect_id(void *ctx, ruda__stream_t *st) {
  stream_ids_t *c = ctx;
  if (c->len < c->cap) c->ids[c->len++] = st->id;
}

void ruda__device_report_lost(ruda__device_t *d, const char *when, bool wait) {
  ruda__server_t *s = d->server;
  if (!s) return;
  /* The ids first: a sync may touch the table. */
  stream_ids_t c = {NULL, 0, ruda__stream_table_count(&s->streams)};
  if (c.cap == 0) return;
  c.ids = ruda__malloc(c.cap * sizeof *c.ids);
  if (!c.ids) return;
  ruda__stream_table_foreach(&s->streams, collect_id, &c);
  /* A lost device runs nothing more: a sync would only queue DeviceLost
   * again on streams whose callers have read it. What is queued is what
   * nobody read. */
  if (ruda__device_loss_any(&d->loss)) wait = false;
  for (size_t i = 0; i < c.len; i++) {
    ruda_stream_id_t id = {c.ids[i]};
    ruda_status_t err = NULL;
    if (wait) {
      ruda__future_t *f = NULL;
      err = s->vt->sync(s, id, &f);
      ruda_status_t w = ruda__client_future_finish(f);
      if (err) ruda_status_free(w);
      else err = w;
    } else {
      /* What the device has reported so far, without calling it (at
       * process exit its driver may be gone). */
      ruda__stream_t *st = ruda__stream_find(&s->streams, id);
      err = st ? ruda__stream_check(st, RUDA__MODE_DRAIN) : NULL;
    }
    report_all(d, id, err, when);
  }
  ruda__free(c.ids);
}

/* ---- The last client released ---- */

typedef struct lost_op {
  ruda__op_t base;
} lost_op_t;

static void run_lost(ruda__device_t *d, ruda__op_t *op) {
  /* A client made meanwhile may still drain the errors itself. */
  if (d->server && atomic_load_explicit(&d->clients, memory_order_acquire) == 0) {
    ruda__device_report_lost(d, "its device's last client was released", true);
  }
  ruda__free(op);
}

void ruda__device_clients_gone(ruda__device_t *d) {
  /* Nothing can be queued on a device whose worker has stopped. */
  if (atomic_load_explicit(&d->dead, memory_order_acquire)) return;
  lost_op_t *op = ruda__calloc(1, sizeof *op);
  if (!op) return; /* reported at ruda_shutdown instead */
  op->base.run = run_lost;
  ruda__device_submit(d, &op->base);
}
