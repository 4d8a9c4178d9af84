/* The one validation of a launch, ruda__launch_validate: every check a
 * launch goes through, in one function, called once by ruda_client_launch
 * before anything is queued. Inline: it runs on every launch, on the
 * caller's thread, and its common case is a few compares.
 */
#ifndef RUDA_SERVER_LAUNCH_CHECK_H
#define RUDA_SERVER_LAUNCH_CHECK_H

#include "server/kernel_object.h"
#include "server/server.h"

/* ruda__kernel_check_features for a launch on `device` (out of line: only
 * a portable kernel needing a feature the device lacks gets there). */
ruda_status_t ruda__launch_check_features(ruda_device_id_t device,
                                          const ruda_device_properties_t *p,
                                          const ruda_kernel_t *kernel);

/* The one validation of a launch, on the caller's thread before anything
 * is queued (ruda_client_launch): the arrays the counts promise, the
 * number of bindings, tensor maps' and a dynamic count's buffers, the
 * features a portable kernel needs (ruda__kernel_check_features), the
 * buffers and scalars its declaration lists (ruda__kernel_check_args), the
 * kernel's dim and shared memory (ruda__validate_launch) and a static
 * count (ruda__validate_count). NULL when the launch may be queued, else
 * the error the launch returns: InvalidArgument, a
 * LaunchError::CompilationError for a missing feature, or a ServerError
 * naming the kernel and `stream` around a limit. Nothing after it checks
 * these again: a new check of a launch belongs here, except those that
 * need the handles' memory, made as the client binds them (read-only
 * memory: ruda__kernel_check_read_only). Thread-safe. */
static inline ruda_status_t ruda__launch_validate(ruda_device_id_t device,
                                                  const ruda_device_properties_t *p,
                                                  ruda_stream_id_t stream,
                                                  const ruda_kernel_t *kernel, ruda_count_t count,
                                                  const ruda_kernel_args_t *args) {
  const char *name = kernel->desc.name;
  if ((args->num_buffers && !args->buffers) || (args->num_tensor_maps && !args->tensor_maps) ||
      (args->info.len && !args->info.data)) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch: arguments with a count but no array");
  }
  if (p->hardware.max_bindings &&
      args->num_buffers + args->num_tensor_maps > p->hardware.max_bindings) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch of '%s': %zu bindings, the device takes at most %u", name,
                              args->num_buffers + args->num_tensor_maps, p->hardware.max_bindings);
  }
  for (size_t i = 0; i < args->num_tensor_maps; i++) {
    if (!args->tensor_maps[i].buffer) {
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "launch of '%s': tensor map %zu has no buffer", name, i);
    }
  }
  if (count.dynamic && !count.buffer) {
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "launch of '%s': a dynamic count needs a buffer", name);
  }
  /* A portable kernel that needs a feature the device lacks fails here, at
   * once, rather than as a compilation error at the next sync. */
  if (kernel->portable_needs.features & ~p->features) {
    ruda_status_t need = ruda__launch_check_features(device, p, kernel);
    if (need) return need;
  }
  /* A portable kernel reads its buffers and scalars where its declaration
   * says: a launch that passes fewer would have the device read past them
   * (PoCL crashed), so it fails here on every backend, naming the kernel
   * and the parameter left out. */
  ruda_status_t misfit = ruda__kernel_check_args(kernel, args->num_buffers, args->info.len);
  if (misfit) return misfit;
  /* Limits the device's properties decide fail here, naming the kernel,
   * the limit and the value, rather than at the next sync. */
  ruda_status_t limit = ruda__validate_launch(p, kernel->desc.ruda_dim, kernel->desc.shared_mem_bytes);
  if (!limit && !count.dynamic) limit = ruda__validate_count(p, &kernel->desc, count.fixed);
  if (limit) return ruda_status_set_launch(ruda_status_into_server(limit), name, stream.value);
  return NULL;
}

#endif /* RUDA_SERVER_LAUNCH_CHECK_H */
