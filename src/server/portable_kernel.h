/* Portable kernels (ruda/kernel_dialect.h) inside the runtime: the source a
 * GPU backend compiles (its prelude followed by the kernel file's embedded
 * text) and the device features a kernel's text needs.
 *
 * The preludes are dialect/common.h + dialect/gpu.h + dialect/cuda.h (or
 * dialect/opencl.h), built into the library at build time, so a program
 * needs no header at run time. The embedded text starts with a #line
 * directive naming the user's file, so every compiler message points there.
 *
 * Thread-safe: no state.
 */
#ifndef RUDA_SERVER_PORTABLE_KERNEL_H
#define RUDA_SERVER_PORTABLE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"
#include "ruda/types.h"

typedef enum ruda__portable_target {
  RUDA__PORTABLE_CUDA = 0,  /* NVRTC (C++) */
  RUDA__PORTABLE_OPENCL = 1 /* clBuildProgram (OpenCL C 1.2+) */
} ruda__portable_target_t;

/* The prelude text for `target` (static storage) and its length. */
const char *ruda__portable_prelude(ruda__portable_target_t target, size_t *out_len);

/* prelude + "\n" + text in a new NUL-terminated buffer (ruda__free() it,
 * which is free(); it comes from ruda__malloc, so fault injection reaches it).
 * `kernel` names the kernel in errors. Errors: RUDA_ERR_LAUNCH_COMPILATION
 * wrapping CompilationError::Validation when the kernel was built without
 * its text (RUDA_KERNEL_CPU_ONLY or no embed step);
 * RUDA_ERR_LAUNCH_OUT_OF_MEMORY. */
ruda_status_t ruda__portable_source(ruda__portable_target_t target, const char *kernel,
                                    const char *text, size_t text_len, char **out,
                                    size_t *out_len);

/* Where a kernel's text first uses something that needs a device feature. */
typedef struct ruda__portable_use {
  uint64_t feature;  /* one RUDA_FEATURE_* bit */
  char token[40];    /* the identifier, e.g. "ruda_atomic_add_u64" or "double" */
  char file[200];    /* from the text's #line directives ("" when none) */
  uint32_t line;
} ruda__portable_use_t;

enum { RUDA__PORTABLE_MAX_USES = 4 };

typedef struct ruda__portable_needs {
  uint64_t features; /* every RUDA_FEATURE_* bit the text needs */
  ruda__portable_use_t uses[RUDA__PORTABLE_MAX_USES]; /* first use of each bit */
  size_t num_uses;
} ruda__portable_needs_t;

/* Scans the text (outside comments, strings and directives) for dialect
 * names and types that need a device feature:
 *   double, ruda_atomic_add_f64           RUDA_FEATURE_F64
 *   ruda_atomic_*_i64/_u64, ruda_atomic_add_f64   RUDA_FEATURE_ATOMIC_I64
 * Everything else in the dialect (32-bit atomics, f32 atomic add, f16/bf16
 * storage) runs on every device. A NULL text needs nothing. */
void ruda__portable_scan_needs(const char *text, size_t len, ruda__portable_needs_t *out);

/* The feature's name as `ruda devices` prints it ("f64", "atomic_i64"). */
const char *ruda__feature_name(uint64_t feature);

/* NULL when `device_features` has every feature the kernel needs; else
 * LaunchError::CompilationError(UnsupportedInstruction) naming the kernel,
 * the missing feature, the first use (file:line) and the device. */
ruda_status_t ruda__portable_check_needs(const ruda__portable_needs_t *needs, const char *kernel,
                                         uint64_t device_features, const char *device_name);

/* The parameters a kernel's RUDA_KERNEL declaration lists, read from its
 * text: `known` when the text declares `entry` with RUDA_KERNEL(entry, dims,
 * params...) written out (not through a macro of the user's). */
typedef struct ruda__portable_params {
  bool known;
  uint32_t buffers; /* RUDA_BUFFER parameters */
  uint32_t scalars; /* RUDA_SCALAR parameters: info words 0..scalars-1 */
} ruda__portable_params_t;

/* Reads the declaration of `entry` from the text (comments, strings and
 * directives skipped). A NULL text or no such declaration: !known. */
void ruda__portable_scan_params(const char *text, size_t len, const char *entry,
                                ruda__portable_params_t *out);

/* NULL when a launch with `num_buffers` buffers and `num_info` info words
 * fits the declaration (the buffers exactly, at least one info word per
 * scalar: metadata may follow); else RUDA_ERR_INVALID_ARGUMENT naming the
 * kernel, what it declares, what the launch passed and the first parameter
 * left without a value (read again from `text`). */
ruda_status_t ruda__portable_check_args(const ruda__portable_params_t *params, const char *text,
                                        size_t len, const char *entry, size_t num_buffers,
                                        size_t num_info);
/* NULL when the declaration's buffer `buffer` points to const
 * (RUDA_BUFFER(const float *restrict, x): the kernel only reads it), or
 * when the declaration is unknown or has no such buffer (the caller
 * decides those); else RUDA_ERR_INVALID_ARGUMENT naming the kernel, the
 * parameter and its type, and why: a read-only import is bound to it. The
 * cold path of a launch (read again from `text`). */
ruda_status_t ruda__portable_check_read_only(const ruda__portable_params_t *params,
                                             const char *text, size_t len, const char *entry,
                                             size_t buffer);
/* NULL when every option of a portable entry is one ruda's compilers may be
 * given: -DNAME[=VALUE] and -IDIR (every backend), -O..., -f... and -m...
 * (the CPU compiler only), each one argument with no blank in it (the GPU
 * compilers get the options joined by blanks); -fplugin is refused (it
 * loads code into the compiler). Else RUDA_ERR_INVALID_ARGUMENT naming the
 * first other option and `kernel`. */
ruda_status_t ruda__portable_check_options(const char *kernel, const char *const *options,
                                           size_t num_options);

/* Whether a (checked) option of a portable entry goes to the GPU
 * compilers too: -D and -I do; -O, -f and -m are the CPU compiler's. */
static inline bool ruda__portable_option_for_gpu(const char *option) {
  return option && option[0] == '-' && (option[1] == 'D' || option[1] == 'I');
}

/* The options of `in` that go to the GPU compilers, in order, into out[0..cap);
 * returns how many. */
static inline size_t ruda__portable_gpu_options(const char *const *in, size_t n,
                                                const char **out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k < cap; i++)
    if (ruda__portable_option_for_gpu(in[i])) out[k++] = in[i];
  return k;
}

#endif
