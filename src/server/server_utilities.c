/* ServerUtilities, the server layer's launch validation and entry point,
 * device-wide usage, ready futures and the helpers of collectives: the
 * pieces every backend shares. Per-stream state is in stream_table.c. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "server/launch_check.h"
#include "server/server.h"
#include "server/trace.h"

uint64_t ruda__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static atomic_bool g_process_exiting;

void ruda__server_mark_process_exit(void) {
  atomic_store_explicit(&g_process_exiting, true, memory_order_release);
}

bool ruda__server_process_exiting(void) {
  return atomic_load_explicit(&g_process_exiting, memory_order_acquire);
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
  u->settings = *ruda__device_settings();
  u->check_mode = u->settings.check_mode;
  pthread_mutex_init(&u->comms_lock, NULL);
}

void ruda__server_utilities_deinit(ruda__server_utilities_t *u) {
  pthread_mutex_destroy(&u->comms_lock);
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

void ruda__coll_bytes(const ruda__coll_t *c, uint64_t *out_src, uint64_t *out_dst) {
  uint64_t bytes = c->count * ruda_elem_type_size(c->dtype);
  *out_src = *out_dst = 0;
  switch (c->kind) {
    case RUDA__COLL_ALL_REDUCE: *out_src = *out_dst = bytes; break;
    case RUDA__COLL_BROADCAST: *out_dst = bytes; break;
    case RUDA__COLL_ALL_GATHER: *out_src = bytes; *out_dst = bytes * c->peers.size; break;
    case RUDA__COLL_REDUCE_SCATTER: *out_src = bytes * c->peers.size; *out_dst = bytes; break;
    case RUDA__COLL_SEND: *out_src = bytes; break;
    case RUDA__COLL_RECV: *out_dst = bytes; break;
  }
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

/* ---- Copies ---- */

RUDA__COLD
ruda_status_t ruda__copy_strides_error(const char *what) {
  return ruda_status_create(RUDA_ERR_IO_UNSUPPORTED_STRIDES,
                            "%s: only contiguous and row-pitched layouts can be copied", what);
}

/* ---- Validation ---- */

RUDA__COLD
ruda_status_t ruda__launch_check_features(ruda_device_id_t device,
                                          const ruda_device_properties_t *p,
                                          const ruda_kernel_t *kernel) {
  char where[160];
  snprintf(where, sizeof where, "%s:%u (%s)", ruda_device_type_name(device.type_id),
           device.index_id, p->name);
  return ruda__kernel_check_features(kernel, device.type_id, p->features, where);
}

RUDA__COLD
ruda_status_t ruda__validate_launch_error(const ruda_device_properties_t *p, ruda_dim_t dim,
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

RUDA__COLD
ruda_status_t ruda__validate_count_error(const ruda_device_properties_t *p,
                                         const ruda_kernel_desc_t *desc, ruda_count3_t c) {
  const uint32_t *m = p->hardware.max_ruda_count;
  const char *name = desc && desc->name ? desc->name : "(unnamed)";
  if (c.x > m[0] || c.y > m[1] || c.z > m[2]) {
    const uint32_t req[3] = {c.x, c.y, c.z};
    return ruda_status_wrap(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES, ruda_status_ruda_count(req, m));
  }
  /* Rudas are numbered with 64 bits: a dispatch whose ruda total wraps
   * would run the wrong number of rudas (or none). */
  uint64_t rudas = 0;
  if (__builtin_mul_overflow((uint64_t)c.x, (uint64_t)c.y, &rudas) ||
      __builtin_mul_overflow(rudas, (uint64_t)c.z, &rudas)) {
    return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "kernel '%s': a dispatch of (%u, %u, %u) rudas has more than %llu "
                              "rudas, the most one launch can run",
                              name, c.x, c.y, c.z, (unsigned long long)UINT64_MAX);
  }
  return NULL;
}

/* ---- The server layer's entry points ---- */

ruda_status_t ruda__server_streams_init(ruda__server_t *s, const ruda__stream_table_ops_t *ops) {
  return ruda__stream_table_init(&s->streams, s->utilities.settings.max_streams, ops,
                                 &s->queued_errors);
}

void ruda__server_trace_memory(ruda__server_t *s) {
  if (!ruda__trace_on()) return;
  ruda_memory_usage_t u;
  if (ruda__server_memory_usage_device(s, &u)) return;
  uint64_t now = ruda__now_ns();
  ruda__trace_counter(s->device, "memory in use", now, u.bytes_in_use);
  ruda__trace_counter(s->device, "memory reserved", now, u.bytes_reserved);
}

ruda_status_t ruda__server_memory_usage_device(ruda__server_t *s, ruda_memory_usage_t *out) {
  if (s->vt->memory_usage_device) return s->vt->memory_usage_device(s, out);
  *out = ruda__stream_table_usage(&s->streams);
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
  ruda__free(r);
}
static const ruda__future_vtable_t ready_vt = {ready_wait, ready_poll, ready_destroy};

ruda__future_t *ruda__future_ready(ruda_status_t status) {
  ready_future_t *r = ruda__malloc(sizeof *r);
  if (!r) return NULL;
  r->base.vt = &ready_vt;
  r->status = status;
  return &r->base;
}
