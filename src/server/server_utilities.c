/* ServerUtilities, per-stream error lists, the timestamp profiler, launch
 * validation and ready futures: the pieces every backend shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/server.h"

uint64_t ruda__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- Utilities ---- */

void ruda__server_utilities_init(ruda__server_utilities_t *u,
                                 const ruda_device_properties_t *props,
                                 const char *info, ruda__layout_policy_t policy) {
  memset(u, 0, sizeof *u);
  u->properties = *props;
  u->properties_hash = ruda_device_properties_checksum(props);
  if (info) {
    strncpy(u->info, info, sizeof u->info - 1);
  }
  u->layout_policy = policy;
  u->check_mode = RUDA_BOUNDS_AUTO;
  pthread_mutex_init(&u->comms_lock, NULL);
}

void ruda__server_utilities_deinit(ruda__server_utilities_t *u) {
  pthread_mutex_destroy(&u->comms_lock);
}

/* ---- Stream errors ---- */

const ruda__stream_error_mode_t RUDA__MODE_IGNORE = {true, false};
const ruda__stream_error_mode_t RUDA__MODE_DRAIN = {false, true};
const ruda__stream_error_mode_t RUDA__MODE_CHECK = {false, false};

void ruda__stream_errors_push(ruda__stream_errors_t *e, ruda_status_t err) {
  if (!err) return;
  err = ruda_status_into_server(err);
  if (e->len == e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 4;
    ruda_status_t *items = realloc(e->items, cap * sizeof *items);
    if (!items) {
      /* Keep the newest error visible: replace the last one. */
      if (e->len) {
        ruda_status_free(e->items[e->len - 1]);
        e->items[e->len - 1] = err;
      } else {
        ruda_status_free(err);
      }
      return;
    }
    e->items = items;
    e->cap = cap;
  }
  e->items[e->len++] = err;
  if (e->counter) atomic_fetch_add_explicit(e->counter, 1, memory_order_relaxed);
}

bool ruda__stream_errors_empty(const ruda__stream_errors_t *e) { return e->len == 0; }

ruda_status_t ruda__stream_errors_check(ruda__stream_errors_t *e,
                                        ruda__stream_error_mode_t mode) {
  if (e->len == 0) return NULL;
  if (mode.flush) {
    ruda_status_t s = ruda_status_unhealthy(e->items, e->len);
    if (e->counter) atomic_fetch_sub_explicit(e->counter, e->len, memory_order_relaxed);
    e->len = 0;
    if (mode.ignore) {
      ruda_status_free(s);
      return NULL;
    }
    return s;
  }
  if (mode.ignore) return NULL;
  /* Errors stay queued; report them without draining. */
  ruda_status_t copies[16];
  size_t n = e->len < 16 ? e->len : 16;
  for (size_t i = 0; i < n; i++) copies[i] = ruda_status_clone(e->items[i]);
  return ruda_status_unhealthy(copies, n);
}

void ruda__stream_errors_deinit(ruda__stream_errors_t *e) {
  if (e->counter) atomic_fetch_sub_explicit(e->counter, e->len, memory_order_relaxed);
  for (size_t i = 0; i < e->len; i++) ruda_status_free(e->items[i]);
  free(e->items);
  memset(e, 0, sizeof *e);
}

/* ---- Profiler ---- */

ruda_status_t ruda__profiler_start(ruda__profiler_t *p, uint64_t start_ns,
                                   ruda_profiling_token_t *out) {
  if (p->len == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 4;
    ruda__profiler_entry_t *e = realloc(p->entries, cap * sizeof *e);
    if (!e) return ruda_status_create(RUDA_ERR_SERVER_GENERIC, "out of host memory starting a profile");
    p->entries = e;
    p->cap = cap;
  }
  ruda__profiler_entry_t *e = &p->entries[p->len++];
  e->token = p->next_token++;
  e->start_ns = start_ns;
  e->error = NULL;
  out->id = e->token;
  return NULL;
}

ruda_status_t ruda__profiler_stop(ruda__profiler_t *p, ruda_profiling_token_t token,
                                  uint64_t end_ns, ruda_timing_method_t method,
                                  ruda_profile_duration_t *out) {
  for (size_t i = 0; i < p->len; i++) {
    if (p->entries[i].token != token.id) continue;
    ruda__profiler_entry_t e = p->entries[i];
    p->entries[i] = p->entries[--p->len];
    if (e.error) return e.error;
    out->start_ns = e.start_ns;
    out->end_ns = end_ns;
    out->method = method;
    return NULL;
  }
  return ruda_status_create(RUDA_ERR_PROFILE_NOT_REGISTERED, "token %llu",
                            (unsigned long long)token.id);
}

void ruda__profiler_error(ruda__profiler_t *p, ruda_status_t err) {
  for (size_t i = 0; i < p->len; i++) {
    if (p->entries[i].error) continue;
    ruda_status_t copy = ruda_status_clone(err);
    if (ruda_status_family(copy) == RUDA_FAMILY_SERVER) {
      p->entries[i].error = ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, copy);
    } else if (ruda_status_family(copy) == RUDA_FAMILY_LAUNCH) {
      p->entries[i].error = ruda_status_wrap(RUDA_ERR_PROFILE_LAUNCH, copy);
    } else if (ruda_status_family(copy) == RUDA_FAMILY_PROFILE) {
      p->entries[i].error = copy;
    } else {
      p->entries[i].error =
          ruda_status_wrap(RUDA_ERR_PROFILE_SERVER, ruda_status_into_server(copy));
    }
  }
}

bool ruda__profiler_is_empty(const ruda__profiler_t *p) { return p->len == 0; }

void ruda__profiler_deinit(ruda__profiler_t *p) {
  for (size_t i = 0; i < p->len; i++) ruda_status_free(p->entries[i].error);
  free(p->entries);
  memset(p, 0, sizeof *p);
}

/* ---- Collectives ---- */

const char *ruda__coll_kind_name(ruda__coll_kind_t kind) {
  switch (kind) {
    case RUDA__COLL_ALL_REDUCE: return "all-reduce";
    case RUDA__COLL_BROADCAST: return "broadcast";
    case RUDA__COLL_ALL_GATHER: return "all-gather";
    case RUDA__COLL_REDUCE_SCATTER: return "reduce-scatter";
    case RUDA__COLL_SEND: return "send";
    case RUDA__COLL_RECV: return "recv";
  }
  return "?";
}

const char *ruda__reduce_op_name(ruda_reduce_op_t op) {
  switch (op) {
    case RUDA_REDUCE_SUM: return "sum";
    case RUDA_REDUCE_MEAN: return "mean";
    case RUDA_REDUCE_MIN: return "min";
    case RUDA_REDUCE_MAX: return "max";
  }
  return "?";
}

static pthread_once_t timeout_once = PTHREAD_ONCE_INIT;
static uint64_t timeout_ns;

static void timeout_read(void) {
  timeout_ns = 300ull * 1000000000ull;
  const char *v = getenv("RUDA_COMM_TIMEOUT");
  if (!v || !*v) return;
  char *end = NULL;
  double secs = strtod(v, &end);
  /* Above ~584 years the nanoseconds would not fit: keep the default. */
  if (end && *end == '\0' && secs > 0 && secs < 1.8e10) timeout_ns = (uint64_t)(secs * 1e9);
}

uint64_t ruda__comm_timeout_ns(void) {
  pthread_once(&timeout_once, timeout_read);
  return timeout_ns;
}

size_t ruda__elem_types_format(uint64_t types, char *buf, size_t cap) {
  size_t len = 0;
  if (cap) buf[0] = '\0';
  for (unsigned t = 0; t < RUDA_ELEM_COUNT_; t++) {
    if (!(types & (1ull << t))) continue;
    const char *name = ruda_elem_type_name((ruda_elem_type_t)t);
    int w = snprintf(len < cap ? buf + len : NULL, len < cap ? cap - len : 0, "%s%s",
                     len ? ", " : "", name ? name : "?");
    if (w > 0) len += (size_t)w;
  }
  return len;
}

/* ---- Validation ---- */

ruda_status_t ruda__validate_launch(const ruda_device_properties_t *p, ruda_dim_t dim,
                                    uint64_t shared_mem_bytes) {
  const ruda_hardware_properties_t *h = &p->hardware;
  ruda_status_t limit = NULL;
  if (dim.x > h->max_ruda_dim[0] || dim.y > h->max_ruda_dim[1] ||
      dim.z > h->max_ruda_dim[2]) {
    uint32_t req[3] = {dim.x, dim.y, dim.z};
    limit = ruda_status_ruda_dim(req, h->max_ruda_dim);
  } else if (ruda_dim_num_elems(dim) > h->max_units_per_ruda) {
    uint64_t units = ruda_dim_num_elems(dim);
    limit = ruda_status_resource_limit(RUDA_ERR_RESOURCE_UNITS,
                                       units > UINT32_MAX ? UINT32_MAX : units,
                                       h->max_units_per_ruda);
  } else if (shared_mem_bytes > h->max_shared_memory_size) {
    limit = ruda_status_resource_limit(RUDA_ERR_RESOURCE_SHARED_MEMORY, shared_mem_bytes,
                                       h->max_shared_memory_size);
  }
  if (!limit) return NULL;
  return ruda_status_wrap(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES, limit);
}

ruda_status_t ruda__validate_count(const ruda_device_properties_t *p, ruda_count3_t c) {
  const uint32_t *m = p->hardware.max_ruda_count;
  if (c.x > m[0] || c.y > m[1] || c.z > m[2]) {
    return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "Ruda count exceeds maximum bounds.\nRequested (%u, %u, %u), "
                              "max is (%u, %u, %u).",
                              c.x, c.y, c.z, m[0], m[1], m[2]);
  }
  return NULL;
}

/* ---- Ready futures ---- */

typedef struct ready_future {
  ruda__future_t base;
  ruda_status_t status;
} ready_future_t;

static ruda_status_t ready_wait(ruda__future_t *f) {
  ready_future_t *r = (ready_future_t *)f;
  ruda_status_t s = r->status;
  r->status = NULL;
  return s;
}
static bool ready_poll(ruda__future_t *f) { (void)f; return true; }
static void ready_destroy(ruda__future_t *f) {
  ready_future_t *r = (ready_future_t *)f;
  ruda_status_free(r->status);
  free(r);
}
static const ruda__future_vtable_t ready_vt = {ready_wait, ready_poll, ready_destroy};

ruda__future_t *ruda__future_ready(ruda_status_t status) {
  ready_future_t *r = malloc(sizeof *r);
  if (!r) return NULL;
  r->base.vt = &ready_vt;
  r->status = status;
  return &r->base;
}
