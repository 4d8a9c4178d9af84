/* Futures of the OpenCL server (opencl_future.c): a read's or a sync's
 * result, fenced by the stream's newest command and waited on any
 * thread. Only built with the OpenCL headers.
 */
#ifndef RUDA_OPENCL_FUTURE_H
#define RUDA_OPENCL_FUTURE_H

#include "backends/opencl/opencl_types.h"

#if defined(RUDA_HAVE_OPENCL_HEADERS)

/* A future for the work enqueued so far on `st`, with `early` (taken) as
 * its first error, fenced by the stream's newest command (when that has
 * no event: clFinish of the queue where events are dear, a marker
 * elsewhere), so copies enqueued before an early error have
 * finished when it completes. Submits the work. With nothing in flight
 * there is nothing to wait for: *out is NULL and `early` is returned; when
 * no future can be made, waits here: *out is NULL and the result
 * returned. */
ruda_status_t ruda__ocl_future_make(ocl_server_t *s, ocl_stream_t *st, ruda_status_t early,
                                    ruda__future_t **out);

#endif /* RUDA_HAVE_OPENCL_HEADERS */

#endif /* RUDA_OPENCL_FUTURE_H */
