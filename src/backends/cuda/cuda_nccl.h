/* NCCL for the CUDA server: the collectives (ServerCommunication of
 * src/server/server.h, declared with the server's types in cuda_server.h)
 * and the element types NCCL reduces.
 *
 * libnccl.so.2 is loaded once per process on the first collective
 * (nccl_loader.c); a missing library makes the collectives answer
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, nothing else. ncclResult_t codes
 * are translated in nccl_errors.c only (ruda__nccl_error). Only built with
 * the CUDA and NCCL headers (RUDA_HAVE_NCCL_HEADERS).
 */
#ifndef RUDA_CUDA_NCCL_H
#define RUDA_CUDA_NCCL_H

#include "backends/cuda/nccl_errors.h"
#include "backends/cuda/nccl_loader.h"

/* Element types NCCL reduces (bits 1 << t): f64, f32, f16, bf16, i8, i32,
 * i64, u8, u32, u64 (no i16/u16 in NCCL; fp8 is left out: it needs sm_90
 * and NCCL >= 2.24). */
#define RUDA__REDUCE_TYPES_NCCL                                                           \
  ((1ull << RUDA_ELEM_F64) | (1ull << RUDA_ELEM_F32) | (1ull << RUDA_ELEM_F16) |           \
   (1ull << RUDA_ELEM_BF16) | (1ull << RUDA_ELEM_I8) | (1ull << RUDA_ELEM_I32) |           \
   (1ull << RUDA_ELEM_I64) | (1ull << RUDA_ELEM_U8) | (1ull << RUDA_ELEM_U32) |            \
   (1ull << RUDA_ELEM_U64))

#if defined(RUDA_HAVE_NCCL_HEADERS)

#include "ruda/comm.h"
#include "ruda/status.h"

/* ncclDataType_t of an element type; false when NCCL has none. */
bool ruda__nccl_dtype(ruda_elem_type_t t, ncclDataType_t *out);

#endif /* RUDA_HAVE_NCCL_HEADERS */

#endif /* RUDA_CUDA_NCCL_H */
