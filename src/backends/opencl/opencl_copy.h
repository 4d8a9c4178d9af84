/* Copies of the OpenCL server (opencl_copy.c), with the vtable's
 * signatures (src/server/server.h): writes, reads, sync and flush. Only
 * built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_COPY_H
#define RUDA_OPENCL_COPY_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

void ruda__ocl_write(ruda__server_t *base, const ruda__copy_desc_t *descs, ruda_bytes_t *srcs,
                     size_t count, ruda_stream_id_t stream);
ruda_status_t ruda__ocl_read(ruda__server_t *base, const ruda__copy_desc_t *descs,
                             void *const *dsts, size_t count, ruda_stream_id_t stream,
                             ruda__future_t **out);
ruda_status_t ruda__ocl_sync(ruda__server_t *base, ruda_stream_id_t stream,
                             ruda__future_t **out);
ruda_status_t ruda__ocl_flush(ruda__server_t *base, ruda_stream_id_t stream);
/* How many writes and reads went through pinned staging in this process,
 * counted as each finishes (for tests; any thread, never fails). */
uint64_t ruda__ocl_staged_writes(void);
uint64_t ruda__ocl_staged_reads(void);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_COPY_H */
