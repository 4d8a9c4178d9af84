/* Kernel launches of the CPU server: a kernel runs on the worker, spread
 * over the thread pool, and the launch returns when it is done (the design
 * is at the top of cpu_server.c); its failure channel,
 * ruda_cpu_kernel_fail; the shared-memory blocks of the participants.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/cpu_compile.h"
#include "backends/cpu/cpu_server.h"
#include "base/alloc.h"
#include "server/kernel_object.h"
#include "server/kernel_scope.h"
#include "server/trace.h"

typedef struct cpu_launch {
  const ruda_kernel_desc_t *desc;
  ruda_device_id_t device;
  ruda_cpu_kernel_fn fn;
  ruda_cpu_kernel_ctx_t proto;
  uint64_t total;
  uint64_t chunk;
  atomic_ulong next;
  void **shared;
  atomic_flag failed_once;
  ruda_status_t failure;
  /* ruda_client_cancel: polled between rudas; `stopped` once a
   * participant stopped early. */
  ruda__cancel_point_t cancel;
  atomic_bool stopped;
} cpu_launch_t;

void ruda_cpu_kernel_fail(const ruda_cpu_kernel_ctx_t *ctx, const char *fmt, ...) {
  if (!ctx || !ctx->internal_) return;
  cpu_launch_t *l = ctx->internal_;
  if (atomic_flag_test_and_set(&l->failed_once)) return;
  va_list ap;
  va_start(ap, fmt);
  char reason[512];
  vsnprintf(reason, sizeof reason, fmt ? fmt : "kernel failure", ap);
  va_end(ap);
  l->failure = ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN, "kernel '%s' failed: %s",
                                  l->desc->name, reason);
}

RUDA__HOT
static void launch_job(void *arg, uint32_t participant) {
  cpu_launch_t *l = arg;
  ruda_cpu_kernel_ctx_t ctx = l->proto;
  ctx.shared = l->shared ? l->shared[participant] : NULL;
  const ruda_count3_t c = ctx.ruda_count;
  const uint64_t xy = (uint64_t)c.x * c.y;
  ruda_cpu_kernel_fn fn = l->fn;
  /* Client calls from inside the kernel are refused, not deadlocked. */
  ruda__kernel_scope_t scope;
  ruda__kernel_scope_enter(&scope, l->desc->name, l->device);
  ruda__cancel_point_t cancel = l->cancel;
  for (;;) {
    uint64_t start = atomic_fetch_add_explicit(&l->next, l->chunk, memory_order_relaxed);
    if (start >= l->total) break;
    uint64_t end = start + l->chunk < l->total ? start + l->chunk : l->total;
    /* The chunk's first position by division, the next ones by counting:
     * with one small ruda per few hundred elements (the natural
     * one-element-per-unit form), four divisions per ruda would cost more
     * than the ruda's own work. */
    uint64_t r = start % xy;
    ctx.ruda_pos.z = (uint32_t)(start / xy);
    ctx.ruda_pos.y = (uint32_t)(r / c.x);
    ctx.ruda_pos.x = (uint32_t)(r % c.x);
    for (uint64_t i = start; i < end; i++) {
      if (__builtin_expect(ruda__cancel_point_hit(&cancel), 0)) {
        atomic_store_explicit(&l->stopped, true, memory_order_relaxed);
        goto out;
      }
      fn(&ctx);
      if (++ctx.ruda_pos.x == c.x) {
        ctx.ruda_pos.x = 0;
        if (++ctx.ruda_pos.y == c.y) {
          ctx.ruda_pos.y = 0;
          ctx.ruda_pos.z++;
        }
      }
    }
  }
out:
  ruda__kernel_scope_leave(&scope);
}

/* Makes sure every participant has `bytes` of shared memory. */
static ruda_status_t ensure_shared(cpu_server_t *s, uint64_t bytes) {
  if (bytes <= s->shared_cap) return NULL;
  uint32_t n = ruda__thread_pool_size(s->pool);
  for (uint32_t i = 0; i < n; i++) {
    void *p = bytes > SIZE_MAX ? NULL : ruda__aligned_alloc(64, (size_t)bytes);
    if (!p) {
      return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY,
                                "cannot allocate %llu bytes of shared memory",
                                (unsigned long long)bytes);
    }
    ruda__free(s->shared[i]);
    s->shared[i] = p;
  }
  s->shared_cap = bytes;
  return NULL;
}

enum { MAX_INLINE_BUFFERS = 32 };

RUDA__HOT
static ruda_status_t cpu_launch_inner(cpu_server_t *s, ruda_kernel_t *kernel,
                                      const ruda__count_t *count,
                                      const ruda__launch_args_t *args) {
  const ruda_kernel_desc_t *desc = ruda_kernel_desc(kernel);
  const ruda_device_properties_t *p = &s->base.utilities.properties;
  /* A CPU entry, else the natively compiled form of a portable kernel,
   * else its text compiled now (cpu_compile.h). */
  static const ruda_kernel_format_t formats[] = {RUDA_KERNEL_FORMAT_CPU,
                                                 RUDA_KERNEL_FORMAT_PORTABLE};
  const ruda_kernel_code_t *code = ruda__kernel_code_pick(kernel, formats, 2);
  ruda_cpu_kernel_fn fn = code ? code->cpu_fn : NULL;
  if (!fn && code && code->format == RUDA_KERNEL_FORMAT_PORTABLE && code->data) {
    ruda_status_t ce = ruda__cpu_compiled_fn(kernel, code, &fn);
    if (ce) return ce;
  }
  if (!fn) {
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_COMPILATION,
        ruda_status_create(RUDA_ERR_COMPILATION_NO_CODE,
                           "kernel '%s' has no CPU function (a CPU entry, or a portable "
                           "entry with its text or compiled into the program)", desc->name));
  }
  ruda_status_t err = NULL;
  if (args->num_tensor_maps) {
    return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "kernel '%s': tensor maps are not supported by the CPU backend",
                              desc->name);
  }
  ruda_count3_t c = count->fixed;
  if (count->dynamic) {
    uint8_t *ptr = NULL;
    uint64_t size = 0;
    err = ruda__cpu_resolve(s, &count->buffer, &ptr, &size);
    if (err) return ruda_status_wrap(RUDA_ERR_LAUNCH_IO, err);
    /* The view was checked by the server layer; the resolved slice bounds
     * what may be read, whatever the view says. */
    if (size < RUDA__DYNAMIC_COUNT_BYTES) {
      return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                                "kernel '%s': a dynamic count is read from %u bytes, its buffer "
                                "has %llu",
                                desc->name, RUDA__DYNAMIC_COUNT_BYTES, (unsigned long long)size);
    }
    uint32_t xyz[3];
    memcpy(xyz, ptr, sizeof xyz);
    c = (ruda_count3_t){xyz[0], xyz[1], xyz[2]};
    err = ruda__validate_count(p, desc, c);
    if (err) return err;
  }
  if (ruda_count3_is_empty(c)) return NULL;

  void *ptr_inline[MAX_INLINE_BUFFERS];
  uint64_t size_inline[MAX_INLINE_BUFFERS];
  void **ptrs = ptr_inline;
  uint64_t *sizes = size_inline;
  if (args->num_buffers > MAX_INLINE_BUFFERS) {
    ptrs = ruda__malloc(args->num_buffers * sizeof *ptrs);
    sizes = ruda__malloc(args->num_buffers * sizeof *sizes);
    if (!ptrs || !sizes) {
      ruda__free(ptrs == ptr_inline ? NULL : ptrs);
      ruda__free(sizes == size_inline ? NULL : sizes);
      return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "binding %zu buffers",
                                args->num_buffers);
    }
  }
  for (size_t i = 0; i < args->num_buffers && !err; i++) {
    uint8_t *bp = NULL;
    err = ruda__cpu_resolve(s, &args->buffers[i], &bp, &sizes[i]);
    ptrs[i] = bp;
    if (err) err = ruda_status_wrap(RUDA_ERR_LAUNCH_IO, err);
  }
  if (!err && desc->shared_mem_bytes) err = ensure_shared(s, desc->shared_mem_bytes);

  if (!err) {
    cpu_launch_t l;
    memset(&l, 0, sizeof l);
    l.desc = desc;
    l.device = s->base.device;
    l.fn = fn;
    l.proto.ruda_count = c;
    l.proto.ruda_dim = desc->ruda_dim;
    l.proto.buffers = ptrs;
    l.proto.buffer_sizes = sizes;
    l.proto.num_buffers = args->num_buffers;
    l.proto.info = args->info.data;
    l.proto.info_len = args->info.len;
    l.proto.dynamic_metadata_offset = args->info.dynamic_metadata_offset;
    l.proto.shared_size = desc->shared_mem_bytes;
    l.proto.internal_ = &l;
    l.total = (uint64_t)c.x * c.y * c.z;
    uint32_t workers = ruda__thread_pool_size(s->pool);
    /* A few chunks per participant balance uneven rudas without paying an
     * atomic per ruda. */
    l.chunk = l.total / ((uint64_t)workers * 4);
    if (l.chunk == 0) l.chunk = 1;
    atomic_init(&l.next, 0);
    atomic_flag_clear(&l.failed_once);
    l.shared = desc->shared_mem_bytes ? s->shared : NULL;
    l.cancel = ruda__server_cancel_point(&s->base);
    atomic_init(&l.stopped, false);
    if (l.total == 1) {
      launch_job(&l, 0);
    } else {
      /* Wake sleeping helpers only when there is more than a chunk each:
       * a tiny dispatch is over before a woken thread would arrive. */
      bool wake = l.total >= 2ull * workers;
      ruda__thread_pool_run(s->pool, launch_job, &l, wake);
    }
    err = l.failure;
    if (!err && atomic_load_explicit(&l.stopped, memory_order_relaxed)) {
      err = ruda_status_create(RUDA_ERR_SERVER_CANCELLED,
                               "ruda_client_cancel stopped the launch at a ruda boundary, "
                               "before all of its %llu rudas had run",
                               (unsigned long long)l.total);
    }
  }
  if (ptrs != ptr_inline) ruda__free(ptrs);
  if (sizes != size_inline) ruda__free(sizes);
  return err;
}

RUDA__HOT
void ruda__cpu_launch(ruda__server_t *base, ruda_kernel_t *kernel, const ruda__count_t *count,
                      const ruda__launch_args_t *args, ruda_execution_mode_t mode,
                      ruda_stream_id_t stream) {
  (void)mode; /* C kernels check their own bounds */
  cpu_server_t *s = cpu(base);
  ruda__stream_t *rs = ruda__stream_get(&s->base.streams, stream);
  uint64_t t0 = ruda__trace_on() ? ruda__now_ns() : 0;
  ruda_status_t err = cpu_launch_inner(s, kernel, count, args);
  if (t0) {
    ruda__trace_slice(s->base.device, stream.value, "kernel", ruda_kernel_desc(kernel)->name, t0,
                      ruda__now_ns(), 0);
  }
  if (rs) {
    ruda__stream_advance(&s->base.streams, rs);
    ruda__stream_push_launch_error(rs, err, ruda_kernel_desc(kernel)->name);
  } else {
    ruda_status_free(err);
  }
}
