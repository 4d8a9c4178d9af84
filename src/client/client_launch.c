/* Launches: argument checks on the caller's thread (ruda__launch_validate,
 * then the handles),
 * bindings taken for the worker, and measured launches at [profiling] level
 * basic and above. The file map of the client is in client_internal.h. */
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "client/client_internal.h"
#include "ruda/log.h"
#include "ruda/profiling.h"
#include "server/kernel_object.h"
#include "server/launch_check.h"
#include "server/profile_summary.h"

typedef struct launch_op {
  ruda__op_t base;
  size_t block_size; /* for ruda__device_op_free */
  ruda_kernel_t *kernel;
  ruda__count_t count;
  ruda_execution_mode_t mode;
  ruda__launch_args_t args;
  ruda_binding_t *buffers;      /* trailing */
  ruda_binding_t *tm_buffers;   /* trailing */
  ruda_tensor_map_meta_t *tms;  /* trailing */
  uint64_t *info;               /* trailing */
} launch_op_t;

static void launch_op_free(ruda__device_t *d, launch_op_t *l) {
  for (size_t i = 0; i < l->args.num_buffers; i++) ruda_binding_release(&l->buffers[i]);
  for (size_t i = 0; i < l->args.num_tensor_maps; i++) ruda_binding_release(&l->tm_buffers[i]);
  if (l->count.dynamic) ruda_binding_release(&l->count.buffer);
  ruda_kernel_release(l->kernel);
  ruda__device_op_free(d, l, l->block_size);
}

RUDA__HOT
static void run_launch(ruda__device_t *d, ruda__op_t *op) {
  launch_op_t *l = (launch_op_t *)op;
  if (d->server && !op->cancelled) {
    d->server->vt->launch(d->server, l->kernel, &l->count, &l->args, l->mode, op->stream);
  }
  launch_op_free(d, l);
}

/* Why a launch whose bindings include a read-only memory (a DLPack import
 * the producer marked read-only) is refused, or NULL when the kernel's
 * declaration says it only reads each such buffer
 * (ruda__kernel_check_read_only). A tensor map's buffer is always refused:
 * a kernel may store through a tensor map. */
static ruda_status_t read_only_refused(const ruda_kernel_t *kernel,
                                       const ruda_kernel_args_t *args) {
  for (size_t i = 0; i < args->num_buffers; i++) {
    if (!ruda__handle_read_only(&args->buffers[i])) continue;
    ruda_status_t s = ruda__kernel_check_read_only(kernel, i);
    if (s) return s;
  }
  for (size_t i = 0; i < args->num_tensor_maps; i++) {
    if (ruda__handle_read_only(args->tensor_maps[i].buffer)) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "launch of '%s': tensor map %zu's buffer is a read-only DLPack "
                                "import, and a kernel may store through a tensor map",
                                kernel->desc.name, i);
    }
  }
  return NULL;
}

/* ---- Launches made by their caller: the thread's pace is device.h's
 * (ruda__device_launch_here_wanted) ---- */

RUDA__HOT
static ruda_status_t launch(ruda_client_t *c, ruda_kernel_t *kernel, ruda_count_t count,
                            const ruda_kernel_args_t *args, ruda_execution_mode_t mode) {
  if (!c || !kernel) return ruda__client_invalid("launch: NULL client or kernel");
  static const ruda_kernel_args_t no_args;
  if (!args) args = &no_args;
  /* Everything about the launch is checked here, once, before anything
   * is queued (the server and the backends trust it). */
  ruda_stream_id_t stream = ruda__client_stream(c);
  ruda_status_t invalid =
      ruda__launch_validate(c->dev->id, ruda_client_properties(c), stream, kernel, count, args);
  if (invalid) return invalid;
  size_t nb = args->num_buffers, nt = args->num_tensor_maps, ni = args->info.len;
  /* Counts from the caller: the block's size must not wrap. */
  size_t bytes = 0, part;
  if (__builtin_add_overflow(nb, nt, &part) ||
      __builtin_mul_overflow(part, sizeof(ruda_binding_t), &part) ||
      __builtin_add_overflow(sizeof(launch_op_t), part, &bytes) ||
      __builtin_mul_overflow(nt, sizeof(ruda_tensor_map_meta_t), &part) ||
      __builtin_add_overflow(bytes, part, &bytes) ||
      __builtin_mul_overflow(ni, sizeof(uint64_t), &part) ||
      __builtin_add_overflow(bytes, part, &bytes))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch of '%s': %zu buffers, %zu tensor maps and %zu info words "
                              "do not fit in memory",
                              kernel->desc.name, nb, nt, ni);
  launch_op_t *l = ruda__device_op_alloc(c->dev, bytes);
  if (!l) return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "queueing '%s'", kernel->desc.name);
  memset(l, 0, sizeof *l);
  l->block_size = bytes;
  l->base.run = run_launch;
  l->base.cancellable = true;
  l->base.stream = stream;
  l->kernel = ruda_kernel_retain(kernel);
  l->mode = mode;
  l->buffers = (ruda_binding_t *)(l + 1);
  l->tm_buffers = l->buffers + nb;
  l->tms = (ruda_tensor_map_meta_t *)(l->tm_buffers + nt);
  l->info = (uint64_t *)(l->tms + nt);
  /* Each handle is checked and bound in one step: a bad one undoes the
   * bindings taken so far and nothing is queued. */
  ruda_device_id_t dev = c->dev->id;
  ruda_status_t hs = NULL;
  char what[48] = "";
  size_t bound_b = 0, bound_t = 0;
  /* The memories' flags, or'ed: one branch per launch finds a read-only
   * DLPack import among the buffers (read_only_refused, cold). */
  uint32_t flags = 0, any_flags = 0;
  for (; bound_b < nb; bound_b++) {
    hs = ruda__handle_bind_flags(&args->buffers[bound_b], dev, NULL, &l->buffers[bound_b], &flags);
    if (hs) {
      snprintf(what, sizeof what, "buffer %zu", bound_b);
      break;
    }
    any_flags |= flags;
  }
  for (; !hs && bound_t < nt; bound_t++) {
    hs = ruda__handle_bind_flags(args->tensor_maps[bound_t].buffer, dev, NULL,
                                 &l->tm_buffers[bound_t], &flags);
    if (hs) {
      snprintf(what, sizeof what, "tensor map %zu", bound_t);
      break;
    }
    any_flags |= flags;
    l->tms[bound_t] = args->tensor_maps[bound_t].meta;
  }
  l->count.dynamic = count.dynamic;
  l->count.fixed = count.fixed;
  if (!hs && count.dynamic) {
    hs = ruda__handle_bind(count.buffer, dev, NULL, &l->count.buffer);
    if (!hs && ruda_binding_size_in_used(&l->count.buffer) < 3 * sizeof(uint32_t))
      hs = ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "a dynamic count needs 12 bytes (three uint32), the view holds %llu",
                              (unsigned long long)ruda_binding_size_in_used(&l->count.buffer));
    if (hs) snprintf(what, sizeof what, "the count buffer");
  }
  ruda_status_t refused = NULL;
  if (hs) {
    refused = ruda_status_create(ruda_status_kind(hs), "launch of '%s', %s: %s", kernel->desc.name,
                                 what, ruda_status_reason(hs));
    ruda_status_free(hs);
  } else if (any_flags & RUDA__MEMORY_READ_ONLY) {
    refused = read_only_refused(kernel, args);
  }
  if (refused) {
    /* Undo the bindings taken so far: launch_op_free releases these. */
    l->args.num_buffers = bound_b;
    l->args.num_tensor_maps = bound_t;
    launch_op_free(c->dev, l);
    return refused;
  }
  if (ni) memcpy(l->info, args->info.data, ni * sizeof(uint64_t));
  l->args.buffers = l->buffers;
  l->args.num_buffers = nb;
  l->args.tensor_map_buffers = l->tm_buffers;
  l->args.tensor_maps = l->tms;
  l->args.num_tensor_maps = nt;
  l->args.info.data = ni ? l->info : NULL;
  l->args.info.len = ni;
  l->args.info.dynamic_metadata_offset = args->info.dynamic_metadata_offset;
  /* A stream that records a graph keeps the launch instead of running it. */
  bool recorded;
  ruda_status_t rs = ruda__client_record_launch(c, kernel, &l->count, &l->args, mode, &recorded);
  if (recorded) {
    launch_op_free(c->dev, l);
    return rs;
  }
  if (ruda__device_launch_here_wanted(c->dev) && ruda__device_run_op_here(c->dev, &l->base)) return NULL;
  ruda__device_submit(c->dev, &l->base);
  return NULL;
}

/* At profiling level basic and above every launch is measured (the launch
 * waits for its own work, so each row is the kernel's own device time) and
 * recorded in the summary printed at sync.
 * Measuring never changes what the launch reports: the call returns what an
 * unprofiled launch returns (its argument checks), and errors of the work
 * stay queued on the stream for its next read, flush or sync. A profile
 * that failed (or could not start) is simply not recorded. */
typedef struct profiled_launch {
  ruda_kernel_t *kernel;
  ruda_count_t count;
  const ruda_kernel_args_t *args;
  ruda_execution_mode_t mode;
  ruda_status_t launch_status;
  bool measured;
  ruda_profile_duration_t duration;
} profiled_launch_t;

static ruda_status_t profiled_launch_run(ruda_client_t *c, void *ctx) {
  profiled_launch_t *p = ctx;
  return launch(c, p->kernel, p->count, p->args, p->mode);
}

/* The launch runs whether or not the profile opens. */
static ruda_status_t profiled_launch_body(ruda_client_t *c, void *ctx) {
  profiled_launch_t *p = ctx;
  ruda_status_t s =
      ruda__client_profile_run(c, profiled_launch_run, p, true, &p->launch_status, &p->duration);
  p->measured = s == NULL;
  ruda_status_free(s);
  return NULL;
}

/* A measured launch (profiling level basic and above). Out of line, as
 * is the log line of level minimal: their name buffers would make every
 * launch's frame (the launch waits for its work here anyway). */
RUDA__COLD __attribute__((noinline))
static ruda_status_t launch_profiled(ruda_client_t *c, ruda_kernel_t *kernel, ruda_count_t count,
                                     const ruda_kernel_args_t *args, ruda_execution_mode_t mode) {
  profiled_launch_t p = {kernel, count, args, mode, NULL, false, {0, 0, RUDA_TIMING_SYSTEM}};
  ruda_status_t s = ruda_client_exclusive(c, profiled_launch_body, &p);
  if (s) {
    /* The worker never ran the body (the device is shut down). */
    ruda_status_free(p.launch_status);
    return s;
  }
  if (p.launch_status || !p.measured) return p.launch_status;
  char name[256];
  if (c->dev->profile_level >= RUDA_LOG_LEVEL_FULL) {
    char count_text[64] = "binding";
    if (!count.dynamic) ruda_count3_format(count.fixed, count_text, sizeof count_text);
    snprintf(name, sizeof name, "%s: %016llx%016llx RudaCount %s", kernel->desc.name,
             (unsigned long long)kernel->hash.hi, (unsigned long long)kernel->hash.lo, count_text);
  } else {
    ruda__profile_name_balanced(kernel->desc.name, name, sizeof name);
  }
  ruda_profile_summary_record(name, ruda_profile_duration_ns(p.duration));
  return NULL;
}

RUDA__COLD __attribute__((noinline))
static void launch_log_name(const ruda_kernel_t *kernel) {
  char name[256];
  ruda_name_balanced(kernel->desc.name, name, sizeof name);
  ruda_log(RUDA_LOG_CHANNEL_PROFILING, RUDA_LOG_LEVEL_MINIMAL, "Executing %s", name);
}

RUDA__HOT
static ruda_status_t launch_maybe_profiled(ruda_client_t *c, ruda_kernel_t *kernel,
                                           ruda_count_t count, const ruda_kernel_args_t *args,
                                           ruda_execution_mode_t mode) {
  ruda_status_t refused = ruda__device_refuse_in_kernel("ruda_client_launch");
  if (refused) return refused;
  if (!c || !kernel || c->dev->profile_level < RUDA_LOG_LEVEL_BASIC ||
      ruda__device_on_worker(c->dev) || ruda__client_recording(c)) {
    if (c && kernel && c->dev->profile_level == RUDA_LOG_LEVEL_MINIMAL) launch_log_name(kernel);
    return launch(c, kernel, count, args, mode);
  }
  return launch_profiled(c, kernel, count, args, mode);
}

RUDA__HOT
ruda_status_t ruda_client_launch(ruda_client_t *c, ruda_kernel_t *kernel, ruda_count_t count,
                                 const ruda_kernel_args_t *args) {
  return launch_maybe_profiled(c, kernel, count, args, RUDA_EXEC_CHECKED);
}

ruda_status_t ruda_client_launch_unchecked(ruda_client_t *c, ruda_kernel_t *kernel,
                                           ruda_count_t count, const ruda_kernel_args_t *args) {
  if (!c) return ruda__client_invalid("ruda_client_launch_unchecked: NULL client");
  return launch_maybe_profiled(c, kernel, count, args,
                               ruda_bounds_check_to_mode(ruda_client_check_mode(c)));
}
