/* The memory methods of the OpenCL server (opencl_memory.c), with the
 * vtable's signatures (src/server/server.h): allocations in a stream's
 * device pool, pinned staging, resources, usage reports, cleanup and the
 * allocation mode. Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_MEMORY_H
#define RUDA_OPENCL_MEMORY_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

void ruda__ocl_initialize_memory(ruda__server_t *base, ruda_memory_t *memory, uint64_t size,
                                 ruda_stream_id_t stream);
ruda_status_t ruda__ocl_staging(ruda__server_t *base, const uint64_t *sizes, size_t count,
                                ruda_stream_id_t stream, ruda_bytes_t *out);
ruda_status_t ruda__ocl_get_resource(ruda__server_t *base, const ruda_binding_t *b,
                                     ruda_stream_id_t stream, ruda_resource_t *out);
ruda_status_t ruda__ocl_memory_usage(ruda__server_t *base, ruda_stream_id_t stream,
                                     ruda_memory_usage_t *out);
void ruda__ocl_memory_cleanup(ruda__server_t *base, ruda_stream_id_t stream);
void ruda__ocl_allocation_mode(ruda__server_t *base, ruda_memory_allocation_mode_t mode,
                               ruda_stream_id_t stream);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_MEMORY_H */
