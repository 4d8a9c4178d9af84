/* The kernel embed step: turns a kernel file (written in the dialect of
 * ruda/kernel_dialect.h) into the text that ruda compiles for cuda:N and
 * opencl:N, and into the generated C file that links that text into the
 * program. Used by the build-time embedder (tools/embed/) and by
 * `ruda kernels embed|check`, and by ruda_kernel_from_file/_from_text
 * (src/client). Plain C and libc only: the embedder is built before the
 * library, from this file.
 *
 * The text is the file with:
 *  - `#line 1 "/abs/path"` first, so every compiler's messages name the
 *    user's file and line;
 *  - each `#include "x"` of the user's own headers inlined (searched next to
 *    the including file, then in the -I folders), between #line directives;
 *  - the dialect's include and the standard headers it stands for
 *    (<stdint.h>, <stddef.h>, <stdbool.h>, <math.h>, <float.h>, <limits.h>)
 *    and `#pragma once` replaced by empty lines (the prelude provides them);
 *  - every other line unchanged.
 * Kernel names come from the RUDA_KERNEL(name, ...) declarations written in
 * the file itself (not in the headers it includes).
 *
 * Not thread-safe; one text per caller.
 */
#ifndef RUDA_TOOLS_KERNEL_TEXT_H
#define RUDA_TOOLS_KERNEL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct ruda_tools_kernel_decl {
  char *name;
  unsigned line; /* 1-based line of RUDA_KERNEL in the file */
  char *dims;    /* its second argument as written ("RUDA_DIM(256, 1, 1)") */
} ruda_tools_kernel_decl_t;

typedef struct ruda_tools_kernel_text {
  char *path;   /* absolute path of the kernel file (owned) */
  char *text;   /* the embedded text, NUL-terminated (owned) */
  size_t len;
  ruda_tools_kernel_decl_t *kernels; /* in file order (owned) */
  size_t num_kernels;
  char **deps;  /* every file read, the kernel file first (owned) */
  size_t num_deps;
} ruda_tools_kernel_text_t;

/* Builds the text of `path`. On failure returns false with a message
 * ("file:line: what") in err; *out is then empty. Free with _free. */
bool ruda_tools_kernel_text_load(const char *path, const char *const *include_dirs,
                                 size_t num_include_dirs, ruda_tools_kernel_text_t *out,
                                 char *err, size_t err_cap);
/* The same for text in memory (`len` bytes), named `origin` in #line
 * directives and errors ("<kernel text>" when NULL); its quoted includes
 * are searched next to `origin` when it names a folder, else in the
 * current folder, then in the -I folders. */
bool ruda_tools_kernel_text_from_memory(const char *text, size_t len, const char *origin,
                                        const char *const *include_dirs,
                                        size_t num_include_dirs, ruda_tools_kernel_text_t *out,
                                        char *err, size_t err_cap);
void ruda_tools_kernel_text_free(ruda_tools_kernel_text_t *t);

/* The kernel declared at or before `line` of the kernel file (the one whose
 * body a compiler message at that line is in); NULL before the first. */
const ruda_tools_kernel_decl_t *ruda_tools_kernel_text_kernel_at(const ruda_tools_kernel_text_t *t,
                                                                 unsigned line);

/* Writes the generated C file: the text as one string, and for every
 * kernel K `const char *const ruda_kernel_text__K` and `const size_t
 * ruda_kernel_text_size__K`, which the CPU mapping of RUDA_KERNEL refers
 * to. False on a write error. */
bool ruda_tools_kernel_text_write_c(const ruda_tools_kernel_text_t *t, FILE *f);
/* A Makefile-syntax depfile: `target: every file read`. */
bool ruda_tools_kernel_text_write_depfile(const ruda_tools_kernel_text_t *t, const char *target,
                                          FILE *f);

/* Writes `const char SYMBOL[]` holding the files concatenated, each after a
 * #line directive naming it as "ruda/dialect/<file name>", with their
 * `#include "ruda/..."` lines left out (the prelude brings them in order).
 * Used at build time for the CUDA and OpenCL preludes. */
bool ruda_tools_prelude_write_c(const char *symbol, const char *const *files, size_t num_files,
                                FILE *f, char *err, size_t err_cap);

#endif
