/* ruda/kernel.h: kernels, dispatch counts and launch arguments.
 *
 * A kernel is code plus the metadata every backend needs (name, units per
 * ruda, shared memory). Its code comes as entries of several formats
 * (ruda_kernel_code_t): a C function, CUDA C, PTX, CUBIN, OpenCL C, or
 * ruda's portable dialect (docs/kernels.md), which every backend runs from
 * one source. Each backend takes the first format it can run; a kernel
 * without one reports
 * LaunchError::CompilationError(CompilationError::UnsupportedInstruction).
 *
 * Argument order, fixed on every backend: buffers, then tensor maps, then
 * the packed info words (ruda_info_t, see ruda/types.h).
 *
 *  - CPU: the function is called once per ruda (a group of units) with a
 *    ruda_cpu_kernel_ctx_t; it loops over the ruda's units itself. Each call
 *    gets a private block of shared memory of shared_mem_bytes that no other
 *    ruda running at the same time sees.
 *  - CUDA: `extern "C" __global__` CUDA C compiled by NVRTC (or PTX/CUBIN).
 *    Parameters: one pointer per buffer, then each tensor map as
 *    `const __grid_constant__ CUtensorMap`, then
 *    `const unsigned long long *info` (a device pointer to the info words;
 *    NULL when there are none). The block is ruda_dim, the grid the
 *    dispatch count.
 *  - OpenCL: `__kernel` OpenCL C: one `__global` pointer per buffer, then
 *    `__global const ulong *info`.
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

/* ---- Kernel code, by format ---- */

/* The form a piece of kernel code takes. A kernel carries one entry per
 * format it has; each backend picks the first format it can run, in its
 * own order of preference:
 *   cpu:    CPU, then PORTABLE (its natively compiled function, else its
 *           text compiled at run time with the C compiler, docs/cpu.md);
 *   cuda:   CUBIN, PTX, CUDA_C, then PORTABLE (its text, through NVRTC);
 *   opencl: OPENCL_C, then PORTABLE (its text, through clBuildProgram).
 * Values are stable (they feed the compile-cache key). */
typedef enum ruda_kernel_format {
  RUDA_KERNEL_FORMAT_CPU = 1,      /* a C function (cpu_fn) */
  RUDA_KERNEL_FORMAT_CUDA_C = 2,   /* CUDA C text, compiled with NVRTC */
  RUDA_KERNEL_FORMAT_PTX = 3,      /* PTX text */
  RUDA_KERNEL_FORMAT_CUBIN = 4,    /* a CUBIN image (binary: size required) */
  RUDA_KERNEL_FORMAT_OPENCL_C = 5, /* OpenCL C text, built with clBuildProgram */
  RUDA_KERNEL_FORMAT_PORTABLE = 6, /* ruda's kernel dialect (docs/kernels.md):
                                      text for the GPU compilers plus the
                                      natively compiled cpu_fn */
} ruda_kernel_format_t;

/* One piece of code of a kernel. Borrowed by ruda_kernel_create, which
 * copies everything it points to. */
typedef struct ruda_kernel_code {
  ruda_kernel_format_t format;
  const void *data;          /* text or binary; NULL for CPU */
  size_t size;               /* bytes of data; 0: strlen(data) (text only) */
  ruda_cpu_kernel_fn cpu_fn; /* CPU: required; PORTABLE: optional */
  const char *entry;         /* entry point; NULL: the kernel's name */
  const char *const *options;/* extra compiler options (optional) */
  size_t num_options;
  const char *origin;        /* where the text comes from ("kernels.c"),
                                for diagnostics (optional) */
} ruda_kernel_code_t;

/* Shorthands for the common entries (pure; C and C++). */
static inline ruda_kernel_code_t ruda_kernel_code_cpu(ruda_cpu_kernel_fn fn) {
  ruda_kernel_code_t c = {RUDA_KERNEL_FORMAT_CPU, NULL, 0, fn, NULL, NULL, 0, NULL};
  return c;
}
static inline ruda_kernel_code_t ruda_kernel_code_text(ruda_kernel_format_t format,
                                                       const char *text) {
  ruda_kernel_code_t c = {format, text, 0, NULL, NULL, NULL, 0, NULL};
  return c;
}

/* ---- Kernel objects ---- */

typedef struct ruda_kernel_desc {
  const char *name;            /* debug name and default entry point; required */
  ruda_dim_t ruda_dim;         /* units per ruda; all >= 1 */
  uint64_t shared_mem_bytes;   /* dynamic shared memory per ruda */
  ruda_address_type_t address_type;
  const void *id_info;         /* extra key for the kernel id (optional) */
  size_t id_info_len;
  const ruda_kernel_code_t *code; /* at least one entry, each format once */
  size_t num_code;
  ruda_dim_t cluster_dim;      /* thread-block cluster (CUDA); {0,0,0}: none */
} ruda_kernel_desc_t;

/* An immutable, ref-counted kernel. */
typedef struct ruda_kernel ruda_kernel_t;

/* Copies `desc` (strings, code and options included) into a new kernel
 * with one reference owned by the caller, and computes its stable id hash.
 * Errors: RUDA_ERR_INVALID_ARGUMENT (no name, a zero dim axis, no code
 * entry, an unknown format, a format listed twice, a CPU entry without
 * cpu_fn, a text or binary entry without data, a CUBIN without size,
 * num_options without options), RUDA_ERR_LAUNCH_OUT_OF_MEMORY. Thread-safe. */
ruda_status_t ruda_kernel_create(const ruda_kernel_desc_t *desc, ruda_kernel_t **out);
ruda_kernel_t *ruda_kernel_retain(ruda_kernel_t *k);
/* NULL is a no-op. */
void ruda_kernel_release(ruda_kernel_t *k);
/* Borrowed view of the kernel's copy of its description (valid while the
 * kernel lives). Thread-safe. */
const ruda_kernel_desc_t *ruda_kernel_desc(const ruda_kernel_t *k);
/* Stable 128-bit hash of the id (name, dim, shared memory, cluster, every
 * code entry's format, text, entry and options; CPU function addresses
 * excluded): the in-memory kernel cache key. Thread-safe. */
ruda_hash128_t ruda_kernel_hash(const ruda_kernel_t *k);

/* ---- Portable kernel text, ahead of time ---- */

/* The source a backend's run-time compiler is given for a portable
 * kernel file's text (ruda/kernel_dialect.h; the text `ruda kernels embed
 * --text` prints): the backend's prelude, a newline, then `text[0..len)`.
 * For RUDA_DEVICE_TYPE_CUDA (NVRTC, C++) and RUDA_DEVICE_TYPE_OPENCL
 * (OpenCL C). On success *out is a new NUL-terminated string that the
 * caller frees with free(), and *out_len (when not NULL) its length.
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL text or out, another device
 * type), RUDA_ERR_LAUNCH_OUT_OF_MEMORY. Thread-safe. */
ruda_status_t ruda_kernel_portable_source(uint16_t device_type, const char *text, size_t len,
                                          char **out, size_t *out_len);

/* Compiles a portable kernel file's text ahead of time, the way the
 * backend of `device_type` compiles it at run time (its prelude, compiler
 * and options), without running it:
 *  - RUDA_DEVICE_TYPE_CUDA: NVRTC for the architecture `target` (90:
 *    sm_90; from 90 on, the arch-specific sm_90a and so on, as at run
 *    time), without a device; *out_binary is a CUBIN;
 *  - RUDA_DEVICE_TYPE_CPU: the C compiler of compilation.cpu_compiler with
 *    its flags, into a shared object (target is checked but not used: the
 *    flags say what CPU to target);
 *  - RUDA_DEVICE_TYPE_OPENCL: the driver of the device whose index is
 *    `target` (0: opencl:0, ruda's numbering), in a context of its own;
 *    *out_binary is the program binary. PoCL's closing count ("1 error generated."),
 *    which its compiler writes to the process's stderr, is kept off it, as
 *    at run time.
 * `options` (num_options of them; NULL with 0) are a portable kernel's
 * compile options, as ruda_kernel_source_t gives them and checked the same
 * way: -DNAME[=VALUE] and -IDIR for every compiler, -O, -f and -m flags
 * for the CPU compiler only (the GPU compilers do not get them). `name`
 * names the kernel or file in errors; `origin`, the kernel file's path, is
 * where the compiler's messages point (NULL: "kernel"). On success
 * *out_binary (when not NULL) is the compiled code, which the caller frees
 * with free(), and *out_size its size; with out_binary NULL the code is
 * dropped (a check).
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL name or text, a CUDA or CPU
 * target outside 30..200, num_options without options, an option outside
 * the allowed set, naming it); RUDA_ERR_UNAVAILABLE (the compiler or the
 * OpenCL device is not there, or the backend of `device_type` is not built
 * in); RUDA_ERR_LAUNCH_COMPILATION wrapping RUDA_ERR_COMPILATION_GENERIC
 * whose reason holds the compiler's messages about the user's lines
 * (file:line) and the keyword hints. Thread-safe. */
ruda_status_t ruda_kernel_compile_portable_with_options(uint16_t device_type, uint32_t target,
                                                        const char *name, const char *text,
                                                        size_t len, const char *origin,
                                                        const char *const *options,
                                                        size_t num_options, void **out_binary,
                                                        size_t *out_size);

/* ruda_kernel_compile_portable_with_options without options. */
ruda_status_t ruda_kernel_compile_portable(uint16_t device_type, uint32_t arch, const char *name,
                                           const char *text, size_t len, const char *origin,
                                           void **out_binary, size_t *out_size);

/* ---- Kernels from files and text ---- */

/* What ruda_kernel_from_file and ruda_kernel_from_text build. Borrowed for
 * the call. */
typedef struct ruda_kernel_source {
  const char *entry;           /* the RUDA_KERNEL to create (its name); NULL:
                                  the text's only kernel */
  const char *const *options;  /* compile options, each one argument:
                                  -DNAME[=VALUE], -IDIR, and for the CPU
                                  compiler only -O..., -f..., -m... */
  size_t num_options;
  ruda_dim_t ruda_dim;         /* RUDA_DIM_ANY kernels: their dims (each axis
                                  >= 1); {0,0,0} for kernels that declare them */
  uint64_t shared_mem_bytes;   /* RUDA_SHARED_DYNAMIC: bytes per ruda */
} ruda_kernel_source_t;

/* A portable kernel (ruda/kernel_dialect.h, docs/kernels.md) from a kernel
 * file that the program was not built with: the file is read now (its
 * quoted includes inlined, searched next to it and in the -I folders), and
 * each backend compiles the text on first launch (cpu:N with the C
 * compiler of compilation.cpu_compiler, cuda:N with NVRTC, opencl:N with
 * clBuildProgram), caching it on disk. -D options reach every compiler
 * (the same constants on every backend); -O, -f and -m only the CPU
 * compiler. The options are part of the kernel's id (ruda_kernel_hash):
 * one file with different -D constants gives different kernels. Dims come
 * from the declaration: RUDA_DIM(x, y, z) with integer literals or names
 * given a value by a -D option or a `#define NAME value` line of the text;
 * RUDA_DIM_ANY takes src->ruda_dim.
 * On success *out holds one reference, which the caller releases.
 * Errors: RUDA_ERR_INVALID_ARGUMENT (NULL path, text, src or out; a file
 * that cannot be read, an include not found, no kernel or no such entry,
 * dims ruda cannot read, an option outside -D, -I, -O, -f, -m, an option
 * with a blank), RUDA_ERR_LAUNCH_OUT_OF_MEMORY. Compile errors come at
 * launch, naming the file and line. Thread-safe. */
ruda_status_t ruda_kernel_from_file(const char *path, const ruda_kernel_source_t *src,
                                    ruda_kernel_t **out);
/* The same for `len` bytes of text (0: strlen(text)), named `origin` in
 * messages ("<kernel text>" when NULL); its quoted includes are searched
 * next to `origin` when it names a folder, then in the -I folders. */
ruda_status_t ruda_kernel_from_text(const char *text, size_t len, const char *origin,
                                    const ruda_kernel_source_t *src, ruda_kernel_t **out);

/* Hints for a portable kernel's text that failed to compile: one line
 * "hint: 'local' is a keyword of OpenCL C or C++; ..." per identifier of
 * `text[0..len)` (comments, strings and directives skipped) that C takes as
 * a name but OpenCL C or C++ (NVRTC) reserves, the compilers' messages
 * rarely saying so. Writes at most `cap` bytes to `out`, NUL-terminated
 * when cap > 0 (snprintf's contract; `out` may be NULL with cap 0), and
 * returns the length of the whole text ("" and 0: no hint). The run-time
 * compile errors of cuda:N and opencl:N carry the same lines. Never fails.
 * Thread-safe. */
size_t ruda_kernel_text_hints(const char *text, size_t len, char *out, size_t cap);

/* ---- Dispatch counts ---- */

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

/* ---- Launch arguments ---- */

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
