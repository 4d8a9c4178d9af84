/* Clients: creation and queries, and the blocking calls that are not
 * reads (flush, sync, memory usage, raw resources, staging, exclusive).
 * The file map of the client is in client_internal.h. */
#include <string.h>

#include "base/alloc.h"
#include "client/client_internal.h"
#include "ruda/log.h"
#include "server/profile_summary.h"
#include "types/device_names.h"

/* ---- Devices ---- */

ruda_status_t ruda_device_count(uint16_t type_id, uint32_t *out) {
  if (!out) return ruda__client_invalid("ruda_device_count: NULL out");
  *out = 0;
  const ruda__backend_t *b = ruda__backend_for(type_id);
  if (b) return b->device_count(out);
  const char *known = ruda__device_type_builtin_name(type_id);
  if (known)
    return ruda_status_create(RUDA_ERR_UNAVAILABLE, "the %s backend is not built into this ruda library", known);
  return ruda_status_create(RUDA_ERR_UNAVAILABLE, "no backend for device type %u", type_id);
}

ruda_status_t ruda_device_properties(ruda_device_id_t id, ruda_device_properties_t *out) {
  if (!out) return ruda__client_invalid("ruda_device_properties: NULL out");
  ruda__device_t *d;
  ruda_status_t s = ruda__device_get(id, &d);
  if (s) return s;
  *out = d->properties;
  return NULL;
}

static ruda_status_t do_recover(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  (void)ctx;
  return s->vt->recover ? s->vt->recover(s, st) : NULL;
}

ruda_status_t ruda_device_recover(ruda_device_id_t id) {
  ruda__device_t *d;
  ruda_status_t s = ruda__device_get(id, &d);
  if (s) return s;
  return ruda__device_call_gated(d, "ruda_device_recover", RUDA__CALL_QUEUED,
                                 ruda_stream_id_current(), do_recover, NULL);
}

/* ---- Clients ---- */

static ruda_status_t client_new(ruda__device_t *d, bool fixed_stream, ruda_stream_id_t stream,
                                ruda_client_t **out) {
  ruda_client_t *c = ruda__calloc(1, sizeof *c);
  if (!c) return ruda_status_create(RUDA_ERR_UNAVAILABLE, "out of host memory creating a client");
  atomic_init(&c->refs, 1);
  atomic_fetch_add_explicit(&d->clients, 1, memory_order_relaxed);
  c->dev = d;
  c->fixed_stream = fixed_stream;
  c->stream = stream;
  *out = c;
  return NULL;
}

ruda_status_t ruda_client_create(ruda_device_id_t device, ruda_client_t **out) {
  if (!out) return ruda__client_invalid("ruda_client_create: NULL out");
  *out = NULL;
  ruda__device_t *d;
  ruda_status_t s = ruda__device_get(device, &d);
  if (s) return s;
  return client_new(d, false, (ruda_stream_id_t){0}, out);
}

ruda_status_t ruda_client_on_stream(ruda_client_t *c, ruda_stream_id_t stream,
                                    ruda_client_t **out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_on_stream: NULL argument");
  *out = NULL;
  return client_new(c->dev, true, stream, out);
}

ruda_client_t *ruda_client_retain(ruda_client_t *c) {
  if (c) atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  return c;
}

void ruda_client_release(ruda_client_t *c) {
  if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  ruda__device_t *d = c->dev;
  ruda__free(c);
  if (atomic_fetch_sub_explicit(&d->clients, 1, memory_order_acq_rel) == 1) {
    ruda__device_clients_gone(d);
  }
}

ruda_device_id_t ruda_client_device(const ruda_client_t *c) { return c->dev->id; }

RUDA__HOT
ruda_stream_id_t ruda_client_stream(const ruda_client_t *c) {
  return ruda__client_stream(c);
}

RUDA__HOT
const ruda_device_properties_t *ruda_client_properties(const ruda_client_t *c) {
  return &c->dev->properties;
}

uint64_t ruda_client_properties_checksum(const ruda_client_t *c) {
  return c->dev->properties_hash;
}

const char *ruda_client_info(const ruda_client_t *c) { return c->dev->info; }

ruda_bounds_check_mode_t ruda_client_check_mode(const ruda_client_t *c) {
  return c->dev->check_mode;
}

/* ---- Flush and sync ---- */

static ruda_status_t do_flush(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  return s->vt->flush(s, st);
}

ruda_status_t ruda_client_flush(ruda_client_t *c) {
  if (!c) return ruda__client_invalid("ruda_client_flush: NULL client");
  ruda_status_t s = ruda__device_begin(c->dev, "ruda_client_flush");
  if (s) return s;
  /* Answered from the worker's progress when nothing is queued anywhere. */
  if (!ruda__device_quiet_after_progress(c->dev)) {
    s = ruda__device_call(c->dev, RUDA__CALL_SHORT, ruda__client_stream(c), do_flush, NULL);
  }
  ruda__device_end(c->dev);
  return s;
}

RUDA__HOT
static ruda_status_t do_sync(ruda__server_t *s, ruda_stream_id_t st, void *future) {
  return s->vt->sync(s, st, (ruda__future_t **)future);
}

RUDA__HOT
ruda_status_t ruda_client_sync(ruda_client_t *c) {
  if (!c) return ruda__client_invalid("ruda_client_sync: NULL client");
  ruda_status_t s = ruda__device_begin(c->dev, "ruda_client_sync");
  if (s) return s;
  ruda__future_t *future = NULL;
  ruda__device_note_wait(c->dev);
  if (!ruda__device_quiet_after_progress(c->dev)) {
    s = ruda__device_call(c->dev, RUDA__CALL_SHORT, ruda__client_stream(c), do_sync, &future);
  }
  /* The future is waited for on this thread: the worker serves others. */
  ruda_status_t w = ruda__client_future_finish(future);
  ruda__device_end(c->dev);
  if (c->dev->profile_level >= RUDA_LOG_LEVEL_BASIC && !ruda__device_on_worker(c->dev)) {
    ruda__profile_summary_print_and_reset();
  }
  if (s) {
    ruda_status_free(w);
    return s;
  }
  return w;
}

ruda_status_t ruda_client_sync_async(ruda_client_t *c, ruda_future_t **out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_sync_async: NULL argument");
  *out = NULL;
  /* Refused (inside a kernel, after ruda_shutdown) at once; the stream's
   * own errors come from the future. */
  ruda_status_t s = ruda__device_begin(c->dev, "ruda_client_sync_async");
  if (s) return s;
  ruda__future_t *future = NULL;
  s = ruda__device_call(c->dev, RUDA__CALL_SHORT, ruda__client_stream(c), do_sync, &future);
  ruda__device_end(c->dev);
  return ruda__client_future_make(future, s, NULL, 0, out);
}

/* ---- Memory usage, raw resources, staging ---- */

static ruda_status_t do_memory_usage(ruda__server_t *s, ruda_stream_id_t st, void *out) {
  return s->vt->memory_usage(s, st, out);
}

ruda_status_t ruda_client_memory_usage(ruda_client_t *c, ruda_memory_usage_t *out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_memory_usage: NULL argument");
  memset(out, 0, sizeof *out);
  return ruda__client_call(c, "ruda_client_memory_usage", RUDA__CALL_SHORT, do_memory_usage, out);
}

static ruda_status_t do_memory_usage_device(ruda__server_t *s, ruda_stream_id_t st, void *out) {
  return ruda__server_memory_usage_device(s, out);
}

ruda_status_t ruda_client_memory_usage_device(ruda_client_t *c, ruda_memory_usage_t *out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_memory_usage_device: NULL argument");
  memset(out, 0, sizeof *out);
  return ruda__client_call(c, "ruda_client_memory_usage_device", RUDA__CALL_SHORT, do_memory_usage_device, out);
}

typedef struct resource_call {
  const ruda_binding_t *binding;
  ruda_resource_t *out;
} resource_call_t;

static ruda_status_t do_get_resource(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  resource_call_t *r = ctx;
  return s->vt->get_resource(s, r->binding, st, r->out);
}

ruda_status_t ruda_client_get_resource(ruda_client_t *c, const ruda_handle_t *h,
                                       ruda_resource_t *out) {
  if (!c || !out) return ruda__client_invalid("ruda_client_get_resource: NULL argument");
  memset(out, 0, sizeof *out);
  ruda_binding_t b;
  ruda_status_t s = ruda__handle_bind(h, c->dev->id, "get_resource", &b);
  if (s) return s;
  resource_call_t r = {&b, out};
  s = ruda__client_call(c, "ruda_client_get_resource", RUDA__CALL_SHORT, do_get_resource, &r);
  if (s) {
    ruda_binding_release(&b);
    memset(out, 0, sizeof *out);
    return s;
  }
  out->binding = b;
  return NULL;
}

typedef struct staging_call {
  const uint64_t *sizes;
  size_t count;
  ruda_bytes_t *out;
} staging_call_t;

static ruda_status_t do_staging(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  staging_call_t *g = ctx;
  if (!s->vt->staging) {
    return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION,
                              "the %s backend has no staging buffers", s->vt->name);
  }
  return s->vt->staging(s, g->sizes, g->count, st, g->out);
}

ruda_status_t ruda_client_staging(ruda_client_t *c, const uint64_t *sizes, size_t count,
                                  ruda_bytes_t *out) {
  if (!c || (count && (!sizes || !out))) return ruda__client_invalid("ruda_client_staging: NULL argument");
  staging_call_t g = {sizes, count, out};
  return ruda__client_call(c, "ruda_client_staging", RUDA__CALL_SHORT, do_staging, &g);
}

/* ---- Exclusive ---- */

typedef struct exclusive_call {
  ruda_client_t *client;
  ruda_status_t (*fn)(ruda_client_t *c, void *ctx);
  void *ctx;
} exclusive_call_t;

/* Runs on the worker with the caller's stream swapped in, so that every
 * client call fn makes executes inline, in order, on that stream. */
static ruda_status_t do_exclusive(ruda__server_t *s, ruda_stream_id_t st, void *ctx) {
  exclusive_call_t *e = ctx;
  ruda_stream_id_t prev = ruda_stream_id_swap(st);
  ruda_status_t r = e->fn(e->client, e->ctx);
  ruda_stream_id_swap(prev);
  return r;
}

ruda_status_t ruda_client_exclusive(ruda_client_t *c,
                                    ruda_status_t (*fn)(ruda_client_t *c, void *ctx),
                                    void *ctx) {
  if (!c || !fn) return ruda__client_invalid("ruda_client_exclusive: NULL argument");
  exclusive_call_t e = {c, fn, ctx};
  return ruda__client_call(c, "ruda_client_exclusive", RUDA__CALL_QUEUED, do_exclusive, &e);
}
