/* The memory methods of the OpenCL server (opencl_memory.c), of the
 * vtable's types (src/server/server.h): allocations in a stream's
 * device pool, pinned staging, resources, usage reports, cleanup and the
 * allocation mode. Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_MEMORY_H
#define RUDA_OPENCL_MEMORY_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

ruda__server_initialize_memory_fn ruda__ocl_initialize_memory;
ruda__server_staging_fn ruda__ocl_staging;
ruda__server_get_resource_fn ruda__ocl_get_resource;
ruda__server_memory_usage_fn ruda__ocl_memory_usage;
ruda__server_memory_cleanup_fn ruda__ocl_memory_cleanup;
ruda__server_allocation_mode_fn ruda__ocl_allocation_mode;

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_MEMORY_H */
