/* Internal layout of ruda_kernel_t (src/server/kernel_object.c). */
#ifndef RUDA_SERVER_KERNEL_OBJECT_H
#define RUDA_SERVER_KERNEL_OBJECT_H

#include <stdatomic.h>

#include "ruda/kernel.h"
#include "server/portable_kernel.h"

struct ruda_kernel {
  atomic_uint refs;
  ruda_kernel_desc_t desc; /* desc.name and desc.code point at owned copies */
  ruda_hash128_t hash;
  ruda_kernel_code_t *code; /* owned: data, entry, origin and options copied */
  ruda_hash128_t *code_hash; /* owned: ruda__kernel_code_hash of each entry */
  ruda__portable_needs_t portable_needs; /* what the portable entry's text needs */
  /* The portable entry's declared parameters; known only when that entry is
   * the kernel's one entry (so every backend runs it). */
  ruda__portable_params_t portable_params;
};

/* The kernel's code entry of `format`, or NULL when it has none. The entry
 * lives as long as the kernel; its `size` is the exact byte count (text
 * entries are NUL-terminated past it) and its `entry` is never NULL.
 * Thread-safe. */
const ruda_kernel_code_t *ruda__kernel_code(const ruda_kernel_t *k, ruda_kernel_format_t format);

/* The first of `formats[0..n)` the kernel carries, or NULL. Thread-safe. */
const ruda_kernel_code_t *ruda__kernel_code_pick(const ruda_kernel_t *k,
                                                 const ruda_kernel_format_t *formats, size_t n);

/* A stable hash of what one code entry compiles to: the kernel's name, dims,
 * shared memory and cluster, plus the entry's format, data, entry point and
 * options (not the other entries). Disk caches key compiled code by it, so
 * adding an entry of another format keeps a cached binary valid. `code`
 * is one of k's own entries (ruda__kernel_code, ruda__kernel_code_pick).
 * Made once per entry when the kernel is created (a launch that looks its
 * program up by it hashes nothing). Thread-safe. */
ruda_hash128_t ruda__kernel_code_hash(const ruda_kernel_t *k, const ruda_kernel_code_t *code);

/* NULL when a device of `device_type` with `features` can run the kernel
 * as far as ruda can tell before compiling: the kernel's portable text needs
 * no feature the device lacks. Applies when the device would compile the
 * portable entry (not a CPU device; no CUDA C, PTX, CUBIN or OpenCL C
 * entry). Otherwise LaunchError::CompilationError(UnsupportedInstruction)
 * naming the kernel, the feature, its first use and `device_name`.
 * Thread-safe. */
ruda_status_t ruda__kernel_check_features(const ruda_kernel_t *k, uint16_t device_type,
                                          uint64_t features, const char *device_name);

/* NULL when a launch with `num_buffers` buffers and `num_info` info words
 * fits the kernel's declaration (ruda__portable_check_args); kernels whose
 * parameters ruda cannot read (no portable text, other entries) pass.
 * Inline: every launch asks. Thread-safe. */
static inline ruda_status_t ruda__kernel_check_args(const ruda_kernel_t *k, size_t num_buffers,
                                                    size_t num_info) {
  const ruda__portable_params_t *p = &k->portable_params;
  if (!p->known || (num_buffers == p->buffers && num_info >= p->scalars)) return NULL;
  return ruda__portable_check_args(p, (const char *)k->code[0].data, k->code[0].size,
                                   k->code[0].entry, num_buffers, num_info);
}

/* NULL when a launch of `k` may bind a read-only memory (a DLPack import
 * marked read-only) to its buffer `buffer`: the kernel's RUDA_KERNEL
 * declaration, read from its one portable entry, declares that buffer
 * pointing to const. Else RUDA_ERR_INVALID_ARGUMENT naming the kernel, the
 * parameter and why; a kernel whose declaration ruda cannot read (a CPU
 * function, CUDA C, PTX, CUBIN, OpenCL C, or several entries) is refused
 * for every buffer, as ruda cannot tell that it only reads it. Out of line:
 * only a launch given a read-only memory gets here. Thread-safe. */
ruda_status_t ruda__kernel_check_read_only(const ruda_kernel_t *k, size_t buffer);

/* "CPU", "CUDA C", "PTX", "CUBIN", "OpenCL C", "portable"; "unknown". */
const char *ruda__kernel_format_name(ruda_kernel_format_t format);

#endif
