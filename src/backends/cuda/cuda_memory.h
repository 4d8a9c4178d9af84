/* The memory methods of the CUDA server (cuda_memory.c): allocations in a
 * stream's device pool, pinned staging, resources, usage reports, cleanup
 * and the allocation mode. The vtable entries (cuda_server.c) settle faults
 * before calling them; these settle nothing. Only built with the CUDA
 * headers.
 */
#ifndef RUDA_CUDA_MEMORY_H
#define RUDA_CUDA_MEMORY_H

#include "backends/cuda/cuda_types.h"

#if defined(RUDA_HAVE_CUDA_HEADERS)

void ruda__cuda_initialize_memory(cuda_server_t *s, ruda_memory_t *memory, uint64_t size,
                                  ruda_stream_id_t stream);
ruda_status_t ruda__cuda_staging(cuda_server_t *s, const uint64_t *sizes, size_t count,
                                 ruda_stream_id_t stream, ruda_bytes_t *out);
/* DLPack (server.h: import_memory, fence_external, native_stream). */
ruda_status_t ruda__cuda_import_memory(cuda_server_t *s, ruda_memory_t *memory,
                                      const ruda__external_memory_t *ext,
                                      ruda_stream_id_t stream);
ruda_status_t ruda__cuda_fence_external(cuda_server_t *s, ruda_stream_id_t stream,
                                        uint64_t other);
ruda_status_t ruda__cuda_native_stream(cuda_server_t *s, ruda_stream_id_t stream,
                                       uint64_t *out);
ruda_status_t ruda__cuda_get_resource(cuda_server_t *s, const ruda_binding_t *b,
                                      ruda_resource_t *out);
ruda_status_t ruda__cuda_memory_usage(cuda_server_t *s, ruda_stream_id_t stream,
                                      ruda_memory_usage_t *out);
ruda_status_t ruda__cuda_memory_usage_device(cuda_server_t *s, ruda_memory_usage_t *out);
void ruda__cuda_memory_cleanup(cuda_server_t *s, ruda_stream_id_t stream);
void ruda__cuda_allocation_mode(cuda_server_t *s, ruda_memory_allocation_mode_t mode,
                                ruda_stream_id_t stream);

#endif /* RUDA_HAVE_CUDA_HEADERS */

#endif /* RUDA_CUDA_MEMORY_H */
