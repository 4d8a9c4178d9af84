/* ruda/dlpack.h: tensors exchanged with other libraries through DLPack.
 *
 * DLPack (ruda/dlpack/dlpack.h, the upstream header, version 1.x) is how
 * NumPy, PyTorch, CuPy and JAX hand each other tensors without a copy. ruda
 * speaks its versioned form, DLManagedTensorVersioned.
 *
 *  - Export: a view of a ruda handle (its memory, plus a shape, strides and
 *    a dtype of the caller's) becomes a DLManagedTensorVersioned on the
 *    handle's device: kDLCPU (data a host pointer), kDLCUDA (a CUdeviceptr,
 *    device_id the CUDA device's index), kDLOpenCL (data the cl_mem of the
 *    view, device_id the OpenCL device's index). The tensor keeps the
 *    memory alive (a binding) until its deleter runs; the consumer calls
 *    the deleter once, from any thread.
 *  - Import: a DLManagedTensorVersioned on a device ruda has becomes a ruda
 *    handle on that device, without a copy: kDLCPU and kDLCUDAHost on cpu:N,
 *    kDLCUDA on cuda:N (device_id N). ruda's pools never free or reuse the
 *    producer's memory. A cl_mem belongs to its own OpenCL context, which
 *    ruda's is not: kDLOpenCL imports are Unavailable.
 *  - Ownership of an import: ruda_dlpack_import takes the tensor in every
 *    case. On success the deleter is called exactly once, when the last
 *    ruda reference to the memory goes (the last handle, clone or view
 *    released, and the last launch or read using it finished), on the
 *    thread that drops it; if the device is shut down while handles are
 *    still alive, then (those handles then read as released). On failure
 *    it is called before the call returns (as DLPack asks of a consumer that
 *    refuses a tensor). A tensor without a deleter is never freed by ruda.
 *  - Streams, as the Python array API specifies for __dlpack__(stream=...):
 *    the consumer names the stream it will use, and the producer makes that
 *    stream wait for its work. ruda_dlpack_export's `stream`:
 *    RUDA_DLPACK_NO_STREAM (-1) means "no ordering" (the caller orders
 *    itself, for example after ruda_client_sync); on cuda:N any other value
 *    is the consumer's CUstream (1 the legacy default stream, 2 the
 *    per-thread default stream), which then waits for the work submitted on
 *    the client's stream through a CUDA event, never a host wait; 0 is
 *    refused (ambiguous in the array API). On cpu:N and opencl:N the work is
 *    done when the export returns (it waits for the stream's queued
 *    operations), and `stream` must be -1. As a consumer, ruda gives its own
 *    stream to a producer with ruda_dlpack_stream.
 *  - Read-only: an import whose flags have DLPACK_FLAG_BITMASK_READ_ONLY is
 *    read-only: ruda_client_write and ruda_client_write_tensor into it fail
 *    with RUDA_ERR_INVALID_ARGUMENT, and its export carries the flag again.
 *    ruda_client_launch takes it only as a buffer that the kernel's
 *    RUDA_KERNEL declaration (its one, portable, code entry) declares
 *    pointing to const: RUDA_BUFFER(const float *restrict, x) or
 *    RUDA_BUFFER(float const *, x). Any other binding fails with
 *    RUDA_ERR_INVALID_ARGUMENT naming the kernel, the parameter and why,
 *    before anything is queued: a buffer declared without const, any
 *    buffer of a kernel whose declaration ruda cannot read (a CPU function,
 *    CUDA C, PTX, CUBIN, OpenCL C, several code entries: ruda cannot tell
 *    that it only reads), and a tensor map's buffer. A dynamic count's
 *    buffer may be read-only.
 *
 * Supported dtypes (lanes 1): kDLInt and kDLUInt of 8, 16, 32 and 64 bits,
 * kDLFloat of 16, 32 and 64 bits, kDLBfloat of 16 bits, kDLBool of 8 bits.
 * Strides count elements (DLPack's unit) and must not be negative; NULL
 * strides mean compact row-major.
 *
 * Thread-safety: every function is thread-safe as the client calls it
 * makes (ruda/client.h).
 */
#ifndef RUDA_DLPACK_H
#define RUDA_DLPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "ruda/client.h"
#include "ruda/dlpack/dlpack.h"
#include "ruda/memory.h"
#include "ruda/status.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* The most dimensions ruda exports or imports. */
#define RUDA_DLPACK_MAX_DIMS 32
/* `stream` of ruda_dlpack_export: no ordering (the Python array API's -1). */
#define RUDA_DLPACK_NO_STREAM (-1)

/* A tensor imported from DLPack. */
typedef struct ruda_dlpack_tensor {
  ruda_handle_t handle;    /* owned by the caller (ruda_handle_release); its
                              view starts at the tensor's first element
                              (data + byte_offset) and covers every element
                              the shape and strides reach */
  DLDataType dtype;
  int32_t ndim;
  int64_t shape[RUDA_DLPACK_MAX_DIMS];
  int64_t strides[RUDA_DLPACK_MAX_DIMS]; /* in elements, always filled */
  bool read_only;
} ruda_dlpack_tensor_t;

/* Exports the view of `h` (a handle of the client's device) as a tensor of
 * `ndim` dimensions of `shape`, with `strides` in elements (NULL: compact
 * row-major) and `dtype`, into a new *out that the consumer frees with its
 * deleter. Every element the shape and strides reach must lie in the view.
 * Waits for the operations queued on the client's stream (on cpu:N and
 * opencl:N their work is then done; on cuda:N see `stream` above).
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL client, handle or out; ndim
 * outside 0..RUDA_DLPACK_MAX_DIMS; NULL shape with ndim > 0; a negative
 * size or stride; an unsupported dtype, named; elements beyond the view or
 * sizes that overflow; a stream value the device does not take),
 * RUDA_ERR_INVALID_HANDLE (as every call taking a handle), errors of the
 * stream, RUDA_ERR_IO_OUT_OF_MEMORY. On error *out is NULL. */
ruda_status_t ruda_dlpack_export(ruda_client_t *c, const ruda_handle_t *h, DLDataType dtype,
                                 int32_t ndim, const int64_t *shape, const int64_t *strides,
                                 int64_t stream, struct DLManagedTensorVersioned **out);

/* Imports `t` as a handle on the client's device and stream, without a
 * copy (see above for ownership: ruda takes `t` in every case).
 * Errors (the deleter then already ran): RUDA_ERR_INVALID_ARGUMENT (NULL
 * client or out; a DLPack major version other than DLPACK_MAJOR_VERSION,
 * named; ndim outside 0..RUDA_DLPACK_MAX_DIMS; an unsupported dtype, named;
 * a negative size or stride; an extent in bytes that overflows; NULL data
 * with a non-zero size; a tensor on a device of another client, named);
 * RUDA_ERR_UNAVAILABLE (a device type ruda has no backend for, or kDLOpenCL);
 * RUDA_ERR_IO_OUT_OF_MEMORY. NULL `t` gives RUDA_ERR_INVALID_ARGUMENT.
 * On error out->handle is empty. */
ruda_status_t ruda_dlpack_import(ruda_client_t *c, struct DLManagedTensorVersioned *t,
                                 ruda_dlpack_tensor_t *out);

/* The stream a consumer passes to a producer's __dlpack__(stream=...) so
 * that the producer orders its work before ruda's: on cuda:N the client's
 * CUstream as an integer, elsewhere RUDA_DLPACK_NO_STREAM (no stream:
 * the producer's work must be done when it hands the tensor over). Errors:
 * RUDA_ERR_INVALID_ARGUMENT (NULL argument), errors of the stream. */
ruda_status_t ruda_dlpack_stream(ruda_client_t *c, int64_t *out);

/* The dtype's name as the Python array API writes it ("float32", "int8",
 * "bfloat16", "bool"); NULL for a dtype ruda does not support. Pure. */
const char *ruda_dlpack_dtype_name(DLDataType dtype);

RUDA_END_DECLS

#endif /* RUDA_DLPACK_H */
