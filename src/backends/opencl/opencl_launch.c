/* Kernel launches of the OpenCL server: the device calls of the server
 * layer's launch pipeline (ruda__stream_launch, which set the stream up,
 * ordered, kept and resolved the bindings): code selection, the program
 * cache, validation against the device and the built kernel, dynamic
 * counts, info words and dynamic local memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/opencl/opencl_fault.h"
#include "backends/opencl/opencl_launch.h"
#include "backends/opencl/opencl_stream.h"
#include "base/alloc.h"
#include "server/device_settings.h"
#include "server/kernel_object.h"
#include "server/portable_kernel.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* The OpenCL C text of a kernel and how to build it. */
typedef struct cl_code {
  const char *text;
  size_t len;
  const char *entry;
  const char *const *options;
  size_t num_options;
  ruda_hash128_t key;
  bool portable; /* text is the dialect's: built behind the OpenCL prelude */
  const char *origin; /* the portable kernel's file (NULL: unknown) */
} cl_code_t;

static ruda_status_t pick_code(const ruda_kernel_t *kernel, cl_code_t *out) {
  static const ruda_kernel_format_t order[] = {RUDA_KERNEL_FORMAT_OPENCL_C,
                                               RUDA_KERNEL_FORMAT_PORTABLE};
  const ruda_kernel_desc_t *d = ruda_kernel_desc(kernel);
  const ruda_kernel_code_t *c = ruda__kernel_code_pick(kernel, order, 2);
  if (c == NULL || (c->format == RUDA_KERNEL_FORMAT_PORTABLE && c->data == NULL))
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_COMPILATION,
        ruda_status_create(RUDA_ERR_COMPILATION_NO_CODE,
                           "kernel %s has no code the OpenCL backend runs (OpenCL C, or a "
                           "portable kernel with its embedded text)", d->name));
  out->portable = c->format == RUDA_KERNEL_FORMAT_PORTABLE;
  out->origin = c->origin;
  out->text = c->data;
  out->len = c->size;
  out->entry = c->entry;
  out->options = c->options;
  out->num_options = c->num_options;
  out->key = ruda__kernel_code_hash(kernel, c);
  return NULL;
}

/* Uploads the info words into the stream's info buffer (skipped when they
 * are the words already there) and returns that buffer. The host copy goes
 * through a ring of INFO_RING slots whose uploads are waited for before
 * reuse, which in practice finished long before. */
static ruda_status_t upload_info(ocl_server_t *s, ocl_stream_t *st, const ruda_info_t *info,
                                 cl_mem *out) {
  const ruda__opencl_api_t *api = s->api;
  size_t words = info->len, bytes = words * sizeof(uint64_t);
  if (words == st->info_last_len && st->info_mem != NULL &&
      memcmp(st->info_last, info->data, bytes) == 0) {
    *out = st->info_mem;
    return NULL;
  }
  if (bytes > st->info_cap) {
    size_t cap = st->info_cap ? st->info_cap : 256;
    while (cap < bytes) cap *= 2;
    cl_int r = CL_SUCCESS;
    cl_mem m = api->clCreateBuffer(s->ctx, CL_MEM_READ_ONLY, cap, NULL, &r);
    uint64_t *last = ruda__malloc(cap);
    if (r != CL_SUCCESS || last == NULL) {
      if (m) api->clReleaseMemObject(m);
      ruda__free(last);
      return r != CL_SUCCESS ? ruda__cl_error(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, r, "clCreateBuffer",
                                              "the info words (%zu bytes)", bytes)
                             : ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY,
                                                  "no host memory for the info words");
    }
    /* Kernels already enqueued keep the old buffer alive. */
    if (st->info_mem) api->clReleaseMemObject(st->info_mem);
    ruda__free(st->info_last);
    st->info_mem = m;
    st->info_last = last;
    st->info_cap = cap;
  }
  info_slot_t *slot = &st->ring[st->ring_pos++ % INFO_RING];
  if (slot->done != NULL) {
    api->clWaitForEvents(1, &slot->done);
    api->clReleaseEvent(slot->done);
    slot->done = NULL;
  }
  if (slot->cap < words) {
    uint64_t *h = ruda__realloc(slot->host, bytes);
    if (h == NULL)
      return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "no host memory for the info words");
    slot->host = h;
    slot->cap = words;
  }
  memcpy(slot->host, info->data, bytes);
  st->info_last_len = 0; /* unknown if the write fails */
  cl_int r = api->clEnqueueWriteBuffer(st->queue, st->info_mem, CL_FALSE, 0, bytes, slot->host, 0,
                                       NULL, &slot->done);
  if (r != CL_SUCCESS) {
    slot->done = NULL;
    return ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "clEnqueueWriteBuffer",
                          "uploading the info words");
  }
  st->dirty = true;
  ruda__ocl_note_event(s, st, slot->done);
  memcpy(st->info_last, info->data, bytes);
  st->info_last_len = words;
  *out = st->info_mem;
  return NULL;
}

static ruda_status_t read_count(ocl_server_t *s, ocl_stream_t *st,
                                const ruda__storage_handle_t *h, const char *name,
                                ruda_count3_t *out) {
  page_t *p = (page_t *)(uintptr_t)h->base;
  uint64_t off = h->offset, size = h->size;
  if (size < 3 * sizeof(uint32_t))
    return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "kernel %s: a dynamic count buffer needs 12 bytes, it has %llu", name,
                              (unsigned long long)size);
  uint32_t xyz[3];
  cl_event ev = NULL;
  cl_int r = s->api->clEnqueueReadBuffer(st->queue, p->mem, CL_TRUE, (size_t)off, sizeof xyz, xyz,
                                         0, NULL, &ev);
  st->dirty = false;
  if (r == CL_SUCCESS) ruda__ocl_note_command(s, st, ev);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "clEnqueueReadBuffer",
                          "reading the dynamic count of kernel %s", name);
  *out = (ruda_count3_t){xyz[0], xyz[1], xyz[2]};
  return NULL;
}

RUDA__HOT
ruda_status_t ruda__ocl_launch(void *backend, const ruda__launch_ctx_t *c) {
  ocl_server_t *s = backend;
  ocl_stream_t *st = c->stream;
  ruda_kernel_t *kernel = c->kernel;
  const ruda__count_t *count = c->count;
  const ruda__launch_args_t *args = c->args;
  const ruda__opencl_api_t *api = s->api;
  const ruda_kernel_desc_t *d = c->desc;
  const ruda_device_properties_t *props = &s->base.utilities.properties;
  ruda_status_t e = ruda__ocl_fault_injected(s->base.loss, d->name); /* tests only */
  if (e) return e;
  if (args->num_tensor_maps > 0)
    return ruda_status_create(RUDA_ERR_LAUNCH_UNKNOWN,
                              "kernel %s: tensor maps are not supported by the OpenCL backend",
                              d->name);
  cl_code_t code;
  memset(&code, 0, sizeof code);
  e = pick_code(kernel, &code);
  if (e) return e;
  ruda__opencl_function_t *fn = NULL;
  /* A portable kernel's source (prelude + its text) is composed only when
   * its program is not cached yet. */
  char *composed = NULL;
  /* A portable kernel's options: compilation.fp_contract, the device kind
   * (ranges in contiguous shares on a CPU device: dialect/opencl.h), then
   * its own. */
  const char **opts = NULL;
  char compiler[256];
  ruda__compile_failure_t portable = {.kernel = d->name, .origin = code.origin,
                                      .compiler = compiler, .text = code.text,
                                      .text_len = code.len};
  if (code.portable && !ruda__opencl_program_cache_has(s->programs, code.key)) {
    opts = ruda__malloc((code.num_options + 2) * sizeof *opts);
    if (opts == NULL)
      return ruda_status_create(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "building kernel %s", d->name);
    opts[0] = ruda__fp_contract_opencl_option(s->base.utilities.settings.fp_contract);
    opts[1] = (s->dev->type & CL_DEVICE_TYPE_CPU) ? "-DRUDA__OPENCL_CPU_DEVICE" : "";
    for (size_t i = 0; i < code.num_options; i++) opts[i + 2] = code.options[i];
    code.options = opts;
    code.num_options += 2;
    e = ruda__portable_source(RUDA__PORTABLE_OPENCL, d->name, code.text, code.len, &composed,
                              &code.len);
    if (e) {
      ruda__free(opts);
      return e;
    }
    code.text = composed;
    snprintf(compiler, sizeof compiler, "the OpenCL compiler of opencl:%u (%s, %s)",
             (unsigned)s->base.device.index_id, props->name, s->dev->platform_name);
  }
  /* A portable entry's -O, -f and -m options are the CPU compiler's. */
  const char *gpu_opts[64];
  size_t num_gpu_opts = 0;
  if (code.portable) {
    for (size_t i = 0; i < code.num_options && num_gpu_opts < 64; i++)
      if (ruda__portable_option_for_gpu(code.options[i])) gpu_opts[num_gpu_opts++] = code.options[i];
    code.options = gpu_opts;
    code.num_options = num_gpu_opts;
  }
  e = ruda__opencl_program_cache_get(s->programs, code.key, code.entry, code.text, code.len,
                                     code.options, code.num_options,
                                     code.portable ? &portable : NULL, &fn);
  free(composed);
  ruda__free(opts);
  if (e) return e;

  /* What the built kernel itself can take. PoCL aborts the process on a
   * launch whose local memory exceeds the device's, so this is checked
   * here rather than left to the driver. */
  size_t nb = args->num_buffers;
  bool takes_local = d->shared_mem_bytes > 0 && fn->num_args == nb + 2;
  if (fn->num_args != nb + 1 && !takes_local)
    return ruda_status_create(
        RUDA_ERR_LAUNCH_UNKNOWN,
        "kernel %s takes %u parameters; ruda passes %zu buffer%s, then the info words "
        "(__global const ulong *)%s",
        d->name, (unsigned)fn->num_args, nb, nb == 1 ? "" : "s",
        d->shared_mem_bytes > 0 ? ", then optionally the dynamic local memory (__local)"
                                : " (a __local parameter only when shared_mem_bytes > 0)");
  uint64_t local = fn->static_local_mem + d->shared_mem_bytes;
  if (local > s->dev->local_mem)
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES,
        ruda_status_resource_limit(RUDA_ERR_RESOURCE_SHARED_MEMORY, local, s->dev->local_mem));
  uint64_t units = ruda_dim_num_elems(d->ruda_dim);
  if (fn->max_work_group > 0 && units > fn->max_work_group)
    return ruda_status_wrap(
        RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES,
        ruda_status_resource_limit(RUDA_ERR_RESOURCE_UNITS, units, fn->max_work_group));

  ruda_count3_t grid = count->fixed;
  if (count->dynamic) {
    e = read_count(s, st, &c->count_buffer, d->name, &grid);
    if (e) return e;
    e = ruda__validate_count(props, d, grid);
    if (e) return e;
  }
  if (ruda_count3_is_empty(grid)) return NULL;

  cl_kernel k = fn->kernel;
  for (size_t i = 0; i < nb; i++) {
    const ruda__storage_handle_t *h = &c->buffers[i];
    cl_mem m = NULL;
    e = ruda__ocl_view_mem(s, (page_t *)(uintptr_t)h->base, h->offset, h->size, &m);
    if (e) return e;
    cl_int r = api->clSetKernelArg(k, (cl_uint)i, sizeof m, &m);
    if (r != CL_SUCCESS)
      return ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "clSetKernelArg",
                            "kernel %s, buffer %zu (declare it as a __global pointer)", d->name, i);
  }
  cl_mem info = NULL;
  if (args->info.len > 0) {
    e = upload_info(s, st, &args->info, &info);
    if (e) return e;
  }
  cl_int r = api->clSetKernelArg(k, (cl_uint)nb, sizeof info, info ? (const void *)&info : NULL);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "clSetKernelArg",
                          "kernel %s, parameter %zu: the info words (declare it as "
                          "__global const ulong *)",
                          d->name, nb);
  if (takes_local) {
    r = api->clSetKernelArg(k, (cl_uint)(nb + 1), (size_t)d->shared_mem_bytes, NULL);
    if (r != CL_SUCCESS)
      return ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "clSetKernelArg",
                            "kernel %s, parameter %zu: the dynamic local memory (declare it "
                            "as __local)",
                            d->name, nb + 1);
  }

  size_t global[3] = {(size_t)grid.x * d->ruda_dim.x, (size_t)grid.y * d->ruda_dim.y,
                      (size_t)grid.z * d->ruda_dim.z};
  size_t localsz[3] = {d->ruda_dim.x, d->ruda_dim.y, d->ruda_dim.z};
  cl_uint work_dim = 3;
  if (global[2] == 1 && localsz[2] == 1) work_dim = (global[1] == 1 && localsz[1] == 1) ? 1 : 2;
  cl_event ev = NULL;
  r = api->clEnqueueNDRangeKernel(st->queue, k, work_dim, NULL, global, localsz, 0, NULL,
                                  s->kernel_events ? &ev : NULL);
  if (r != CL_SUCCESS)
    return ruda__cl_error(RUDA_ERR_LAUNCH_UNKNOWN, r, "clEnqueueNDRangeKernel",
                          "kernel %s, count (%u, %u, %u), dim (%u, %u, %u), %llu bytes of "
                          "local memory",
                          d->name, grid.x, grid.y, grid.z, d->ruda_dim.x, d->ruda_dim.y,
                          d->ruda_dim.z, (unsigned long long)local);
  st->dirty = true;
  ruda__ocl_note_command(s, st, ev);
  ruda__recent_kernels_note(&st->recent, d->name);
  return NULL;
}

#endif /* RUDA_HAVE_OPENCL_HEADERS */
