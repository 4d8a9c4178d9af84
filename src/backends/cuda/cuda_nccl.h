/* NCCL for the CUDA server: the dlopen()ed library and the server's
 * collectives (ServerCommunication of src/server/server.h).
 *
 * libnccl.so.2 is loaded once per process on the first collective
 * (RUDA_NCCL_LIBRARY overrides the name); a missing library makes the
 * collectives answer RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, nothing else.
 * ncclResult_t codes are translated here only (ruda__nccl_error).
 * Only built with the CUDA and NCCL headers (RUDA_HAVE_NCCL_HEADERS).
 */
#ifndef RUDA_CUDA_NCCL_H
#define RUDA_CUDA_NCCL_H

#if defined(RUDA_HAVE_CUDA_HEADERS) && defined(__has_include)
#if __has_include(<nccl.h>)
#define RUDA_HAVE_NCCL_HEADERS 1
#endif
#endif

/* Element types NCCL reduces (bits 1 << t): f64, f32, f16, bf16, i8, i32,
 * i64, u8, u32, u64 (no i16/u16 in NCCL; fp8 is left out: it needs sm_90
 * and NCCL >= 2.24). */
#define RUDA__REDUCE_TYPES_NCCL                                                           \
  ((1ull << RUDA_ELEM_F64) | (1ull << RUDA_ELEM_F32) | (1ull << RUDA_ELEM_F16) |           \
   (1ull << RUDA_ELEM_BF16) | (1ull << RUDA_ELEM_I8) | (1ull << RUDA_ELEM_I32) |           \
   (1ull << RUDA_ELEM_I64) | (1ull << RUDA_ELEM_U8) | (1ull << RUDA_ELEM_U32) |            \
   (1ull << RUDA_ELEM_U64))

#if defined(RUDA_HAVE_NCCL_HEADERS)

/* nccl.h declares a few functions without a prototype (f()). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "backends/cuda/cuda_symbols.h"
#include "ruda/comm.h"
#include "ruda/status.h"

typedef struct ruda__nccl_api {
  void *lib;
  const char *lib_name;
  int version;
#define RUDA__NCCL_FIELD(name, required) __typeof__(&name) name;
  RUDA__NCCL_SYMBOLS(RUDA__NCCL_FIELD)
#undef RUDA__NCCL_FIELD
} ruda__nccl_api_t;

/* The NCCL table, loaded once per process. Thread-safe. Errors:
 * RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION naming every file tried. */
ruda_status_t ruda__nccl_api_get(const ruda__nccl_api_t **out);

/* An error of `kind` for ncclResult_t `r` returned by `call`, keeping
 * NCCL's name and text; `context_fmt` (printf, may be NULL) says what was
 * being done. */
ruda_status_t ruda__nccl_error(ruda_error_kind_t kind, ncclResult_t r, const char *call,
                               const char *context_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ncclDataType_t of an element type; false when NCCL has none. */
bool ruda__nccl_dtype(ruda_elem_type_t t, ncclDataType_t *out);

#endif /* RUDA_HAVE_NCCL_HEADERS */

#endif /* RUDA_CUDA_NCCL_H */
