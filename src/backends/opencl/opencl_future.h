/* Futures of the OpenCL server (opencl_future.c): a read's or a sync's
 * result, fenced by a marker after the stream's work and waited on any
 * thread. Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_FUTURE_H
#define RUDA_OPENCL_FUTURE_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* A future for the work enqueued so far on `st`, with `early` (taken) as
 * its first error. Always fenced by a marker, so copies enqueued before an
 * early error have finished when it completes. Submits the work. When no
 * future can be made, waits here: *out is NULL and the result returned. */
ruda_status_t ruda__ocl_future_make(ocl_server_t *s, ocl_stream_t *st, ruda_status_t early,
                                    ruda__future_t **out);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_FUTURE_H */
