/* ruda/kernel.h: kernels, dispatch counts and launch arguments.
 *
 * A kernel is backend-specific code plus the metadata every backend needs
 * (name, units per ruda, shared memory). One ruda_kernel_t may carry code for
 * several backends at once (a C function for the CPU backend and CUDA C
 * source for the CUDA backend), so the same program runs on either; a
 * backend given a kernel without code it can run reports
 * LaunchError::CompilationError(CompilationError::UnsupportedInstruction).
 *
 * Argument order, fixed on every backend: tensor maps, then buffers, then
 * the packed info words (ruda_info_t, see ruda/types.h).
 *
 *  - CPU: the function is called once per ruda (the seed's cube) with a
 *    ruda_cpu_kernel_ctx_t; it loops over the ruda's units itself. Each call
 *    gets a private block of shared memory of shared_mem_bytes that no other
 *    ruda running at the same time sees.
 *  - CUDA: `extern "C" __global__` CUDA C compiled by NVRTC (or PTX/CUBIN).
 *    Parameters: each tensor map as `const __grid_constant__ CUtensorMap`,
 *    then one pointer per buffer, then `const unsigned long long *info`
 *    (a device pointer to the info words; NULL when there are none). The
 *    block is ruda_dim, the grid the dispatch count.
 */
#ifndef RUDA_KERNEL_H
#define RUDA_KERNEL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* ---- CPU kernels ---- */

typedef struct ruda_cpu_kernel_ctx {
  ruda_count3_t ruda_pos;   /* this ruda's position in the dispatch */
  ruda_count3_t ruda_count; /* the dispatch count */
  ruda_dim_t ruda_dim;      /* units per ruda */
  void *const *buffers;     /* one host pointer per buffer argument */
  const uint64_t *buffer_sizes; /* bytes of each buffer view */
  size_t num_buffers;
  const uint64_t *info;     /* packed info words (NULL when none) */
  size_t info_len;
  size_t dynamic_metadata_offset;
  void *shared;             /* private shared memory of this ruda */
  uint64_t shared_size;
  void *internal_;          /* the launch; used by ruda_cpu_kernel_fail */
} ruda_cpu_kernel_ctx_t;

typedef void (*ruda_cpu_kernel_fn)(const ruda_cpu_kernel_ctx_t *ctx);

/* Called from inside a CPU kernel: marks the launch failed. The first
 * failure of a launch wins; it surfaces on the launch's stream as
 * ServerError::Launch(LaunchError::Unknown{reason}) at the next flush, sync
 * or read. The kernel should return after calling it. Thread-safe. */
void ruda_cpu_kernel_fail(const ruda_cpu_kernel_ctx_t *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- Kernel objects ---- */

typedef enum ruda_kernel_source_kind {
  RUDA_SOURCE_NONE = 0,
  RUDA_SOURCE_CUDA_C = 1, /* compiled with NVRTC */
  RUDA_SOURCE_PTX = 2,
  RUDA_SOURCE_CUBIN = 3,
} ruda_kernel_source_kind_t;

typedef struct ruda_kernel_desc {
  const char *name;            /* entry point (CUDA) and debug name; required */
  ruda_dim_t ruda_dim;         /* units per ruda; all >= 1 */
  uint64_t shared_mem_bytes;   /* dynamic shared memory per ruda */
  ruda_address_type_t address_type;
  const void *id_info;         /* extra key for the kernel id (optional) */
  size_t id_info_len;
  /* CPU backend */
  ruda_cpu_kernel_fn cpu_fn;   /* optional */
  /* CUDA backend */
  ruda_kernel_source_kind_t source_kind;
  const char *source;          /* CUDA C or PTX text, or CUBIN bytes */
  size_t source_len;           /* 0: strlen(source) for text */
  const char *const *compile_options; /* extra NVRTC options (optional) */
  size_t num_compile_options;
  ruda_dim_t cluster_dim;      /* thread-block cluster; {0,0,0}: none */
} ruda_kernel_desc_t;

/* An immutable, ref-counted kernel. */
typedef struct ruda_kernel ruda_kernel_t;

/* Copies `desc` (strings and source included) into a new kernel with one
 * reference owned by the caller, and computes its stable id hash.
 * Errors: RUDA_ERR_INVALID_ARGUMENT (no name, a zero dim axis, no code for
 * any backend), RUDA_ERR_LAUNCH_OUT_OF_MEMORY. Thread-safe. */
ruda_status_t ruda_kernel_create(const ruda_kernel_desc_t *desc, ruda_kernel_t **out);
ruda_kernel_t *ruda_kernel_retain(ruda_kernel_t *k);
/* NULL is a no-op. */
void ruda_kernel_release(ruda_kernel_t *k);
/* Borrowed views of the kernel's copy of its description. */
const ruda_kernel_desc_t *ruda_kernel_desc(const ruda_kernel_t *k);
/* Stable 128-bit hash of the id (name, dim, mode-independent parts, source,
 * options, cpu function identity excluded): the compile-cache key. */
ruda_hash128_t ruda_kernel_hash(const ruda_kernel_t *k);

/* ---- Dispatch counts (the seed's RudaCount) ---- */

typedef struct ruda_count {
  bool dynamic;
  ruda_count3_t fixed;         /* static count */
  const ruda_handle_t *buffer; /* dynamic: u32[3] {x, y, z} read at launch */
} ruda_count_t;

static inline ruda_count_t ruda_count_static(uint32_t x, uint32_t y, uint32_t z) {
  ruda_count_t c;
  c.dynamic = false;
  c.fixed.x = x;
  c.fixed.y = y;
  c.fixed.z = z;
  c.buffer = NULL;
  return c;
}

static inline ruda_count_t ruda_count_dynamic(const ruda_handle_t *buffer) {
  ruda_count_t c;
  c.dynamic = true;
  c.fixed.x = c.fixed.y = c.fixed.z = 0;
  c.buffer = buffer;
  return c;
}

/* ---- Launch arguments (the seed's KernelArguments) ---- */

typedef struct ruda_tensor_map_arg {
  const ruda_handle_t *buffer; /* the backing tensor */
  ruda_tensor_map_meta_t meta;
} ruda_tensor_map_arg_t;

/* Borrowed by the launch call: the client takes its own bindings and copies
 * the info words before it returns. */
typedef struct ruda_kernel_args {
  const ruda_handle_t *buffers;
  size_t num_buffers;
  const ruda_tensor_map_arg_t *tensor_maps;
  size_t num_tensor_maps;
  ruda_info_t info;
} ruda_kernel_args_t;

RUDA_END_DECLS

#endif /* RUDA_KERNEL_H */
