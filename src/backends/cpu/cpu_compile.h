/* Run-time compilation of portable kernel text for cpu:N (docs/cpu.md).
 *
 * A portable code entry without a compiled-in cpu_fn (a kernel from
 * ruda_kernel_from_file or _from_text, or one whose program was built
 * without the kernel file) is compiled here: the CPU prelude (cpu_prelude.h,
 * dialect/common.h, dialect/cpu.h, built into the library) followed by the
 * kernel's text, by the C compiler of compilation.cpu_compiler (RUDA_CPU_COMPILER,
 * default `cc` on PATH) with compilation.cpu_flags (RUDA_CPU_FLAGS, default
 * `-O3 -march=native`) and the entry's options, into a shared object that
 * is loaded with dlopen.
 *
 *  - The compiler runs through posix_spawn, never a shell; every flag and
 *    option is one argument. User options are limited to -D, -I, -O, -f and
 *    -m flags (ruda__portable_check_options).
 *  - Objects are cached on disk under {cache root}/cpu/{key}.so (the shared
 *    file format of server/binary_cache.h: a header with the payload's
 *    checksum). The key hashes the prelude, the kernel's id (text, entry,
 *    options), the compiler's path and `--version`, the flags and the CPU's
 *    flags (/proc/cpuinfo). The folder and its files follow the cache's
 *    policy (server/binary_cache.h: a private folder, only the user's own
 *    whole files read), and an object is loaded from the checked bytes (a
 *    memfd), never reopened by name.
 *  - In memory, compiled functions are kept for the life of the process,
 *    by kernel id.
 *
 * Thread-safe.
 */
#ifndef RUDA_BACKENDS_CPU_COMPILE_H
#define RUDA_BACKENDS_CPU_COMPILE_H

#include <stdbool.h>
#include <stddef.h>

#include "ruda/kernel.h"
#include "ruda/status.h"
#include "server/server.h"

/* The function of `kernel`'s portable entry `code` (which has text),
 * compiled or loaded on first use. Errors: RUDA_ERR_UNAVAILABLE (no
 * compiler: names what was looked for), RUDA_ERR_INVALID_ARGUMENT (an
 * option outside the allowed set), RUDA_ERR_LAUNCH_COMPILATION wrapping
 * CompilationError::Generic (the compiler's messages about the user's
 * lines), RUDA_ERR_LAUNCH_OUT_OF_MEMORY. */
ruda_status_t ruda__cpu_compiled_fn(const ruda_kernel_t *kernel, const ruda_kernel_code_t *code,
                                    ruda_cpu_kernel_fn *out);

/* The backend's compile_portable hook (server.h): the text compiled with
 * the job's options, as at a launch, into a shared object (*out,
 * ruda__malloc'ed); the target is not used. Errors as
 * ruda__cpu_compiled_fn's. */
ruda_status_t ruda__cpu_compile_portable(const ruda__portable_compile_t *job, void **out,
                                         size_t *out_size);

/* The CPU prelude (static storage) and its length. */
const char *ruda__cpu_prelude(size_t *len);

/* Counters for tests and `ruda bench`. */
typedef struct ruda__cpu_compile_stats {
  uint64_t compiles;    /* compiler runs */
  uint64_t disk_hits;   /* objects loaded from the disk cache */
  uint64_t disk_skips;  /* cache files refused (owner, mode, checksum) */
  uint64_t memory_hits; /* launches that found their function in memory */
} ruda__cpu_compile_stats_t;
ruda__cpu_compile_stats_t ruda__cpu_compile_stats(void);

/* Drops the in-memory table (the objects stay loaded: functions already
 * handed out stay valid), so the next launch reads the disk cache again.
 * For tests and benchmarks. */
void ruda__cpu_compile_forget(void);

/* Loads the shared object held in `bytes` through a memfd, as a disk
 * cache hit does: *handle for dlsym/dlclose, *fd the memfd, to close after
 * dlclose (while it is open its name stays unique). */
ruda_status_t ruda__cpu_load_object(const void *bytes, size_t size, void **handle, int *fd);

/* For the benchmark of the warm load (`ruda bench compile`):
 *  - the disk cache file of `kernel`'s entry `code` (false: no disk cache);
 *  - a file's checked payload (the object; ruda__malloc'ed, NULL when the
 *    file is absent or refused);
 *  - a warm load as a new process does it: the file read and checked, the
 *    object loaded from a memfd, `entry`'s function found (*handle and *fd
 *    for dlclose and close). */
bool ruda__cpu_cache_entry(const ruda_kernel_t *kernel, const ruda_kernel_code_t *code,
                           char *path, size_t cap);
void *ruda__cpu_cache_payload(const char *path, size_t *size);
ruda_status_t ruda__cpu_warm_load(const char *path, const char *entry, void **handle, int *fd,
                                  ruda_cpu_kernel_fn *fn);

#endif
