/* The files of the compiled-kernel disk cache, one format and one policy
 * for every backend (CUDA keeps CUBINs, OpenCL program binaries, the CPU
 * shared objects).
 *
 * The policy: a backend's folder ({cache root}/{backend}) is the user's
 * and private. It is created with mode 0700 (its missing parents too); one
 * of the user's own that others may enter (an older ruda made them 0755)
 * is narrowed to 0700; one that another user owns, or that is not a
 * folder, is refused, and that backend runs without its disk cache. Files
 * are written with mode 0600, and a file is read only when it is a regular
 * file of the user's that no one else may write, and whole (its header and
 * checksum below): anything else is refused with its reason, and the
 * kernel is compiled again and the entry replaced.
 *
 * A file is a 48-byte header, then the payload; integers little-endian:
 *   magic (8 bytes, the backend's), format (u64), payload size (u64),
 *   payload checksum (ruda__checksum128 with the backend's seed: lo, hi),
 *   a word of the backend's own (u64: CUDA records the NVRTC version),
 * A reader trusts nothing in it: a file whose header, size or checksum
 * does not match is reported unusable, never loaded. Writers write a
 * temporary file and rename it, so a reader sees a whole file or none,
 * whichever processes share the directory.
 *
 * A warm load should cost little more than the driver's own load, and
 * system calls are dear in a virtual machine: a read is one open, one read
 * into a buffer that fits most binaries (a second read only for larger
 * files, whose size the header gives) and one close.
 *
 * Every function is thread-safe (no shared state) and safe across
 * processes sharing a directory. */
#ifndef RUDA_SERVER_BINARY_CACHE_H
#define RUDA_SERVER_BINARY_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/types.h"

/* What tells one backend's files from another's. */
typedef struct ruda__binary_kind {
  const char *magic; /* exactly 8 characters */
  uint64_t format;
  uint64_t seed; /* of the payload checksum */
} ruda__binary_kind_t;

typedef enum ruda__binary_read {
  RUDA__BINARY_READ_OK,
  RUDA__BINARY_READ_ABSENT,   /* no such file (or not readable) */
  RUDA__BINARY_READ_UNUSABLE, /* there, but not a whole file of this kind */
} ruda__binary_read_t;

/* A backend's cache folder "{root}/{sub}" into `dir` (cap bytes), made
 * private as the policy above says. False when there is none: `root` is
 * empty (the cache is off by setting; `why` is "") or the folder cannot be
 * made or is refused (`why` says why: the caller logs it); `dir` is then
 * "". */
bool ruda__binary_cache_dir(const char *root, const char *sub, char *dir, size_t cap, char *why,
                            size_t why_cap);

/* mkdir -p `dir`, each missing folder made with mode 0700 (the policy
 * above; the tune cache's folders too). False with errno on failure. */
bool ruda__binary_cache_make_dirs(const char *dir);

/* Reads the file at `path`. OK: *payload (ruda__malloc'ed, the caller
 * frees it), *size (> 0) and *word. UNUSABLE: *why says what was wrong
 * ("owned by another user", "writable by others", "not a regular file",
 * "bad header", "truncated", "checksum mismatch", ...). */
ruda__binary_read_t ruda__binary_cache_read(const ruda__binary_kind_t *kind, const char *path,
                                            void **payload, size_t *size, uint64_t *word,
                                            const char **why);

/* The file of the entry `key` in `dir`: "{dir}/{key.hi, key.lo as 32 hex
 * digits}{ext}" into the caller's `path`; false (nothing written) when
 * that and its NUL do not fit in `cap`. */
bool ruda__binary_cache_path(const char *dir, ruda_hash128_t key, const char *ext, char *path,
                             size_t cap);

typedef enum ruda__binary_write {
  RUDA__BINARY_WRITE_OK,
  RUDA__BINARY_WRITE_NO_DIRECTORY, /* `dir` could not be created */
  RUDA__BINARY_WRITE_NOT_WRITABLE, /* no file could be created in it */
  RUDA__BINARY_WRITE_FAILED,       /* writing or renaming failed */
} ruda__binary_write_t;

/* Writes `size` bytes at `bin` with `word` to `path` (in `dir`, created
 * with its parents, mode 0700, when missing), through a temporary file
 * (mode 0600) renamed into place. On failure errno tells why and nothing
 * is left behind. */
ruda__binary_write_t ruda__binary_cache_write(const ruda__binary_kind_t *kind, const char *dir,
                                              const char *path, uint64_t word, const void *bin,
                                              size_t size);

/* The warning for a failed write `w` (errno still that of the failure),
 * into `buf`; true when the cache should be turned off (its directory
 * cannot be made or written), false when only this entry is skipped. */
bool ruda__binary_cache_write_problem(ruda__binary_write_t w, const char *dir, const char *path,
                                      char *buf, size_t cap);

/* ---- What a backend's compile cache does with these ---- */

/* ruda__binary_cache_read for a lookup: the payload (the caller frees it;
 * *size and *word set) or NULL. A file that is there but unusable adds 1
 * to *skips and warns "ruda[<who>] warning: compilation cache entry
 * <path> is unusable (<why>); skipping it". */
void *ruda__binary_cache_load(const ruda__binary_kind_t *kind, const char *path, size_t *size,
                              uint64_t *word, const char *who, _Atomic uint64_t *skips);

/* ruda__binary_cache_write of a freshly compiled entry: true when it was
 * written (1 added to *writes when not NULL); else false with a warning
 * from ruda__binary_cache_write_problem ("ruda[<who>] warning: ..."), and
 * *disable set to true when the whole cache should be turned off (not
 * NULL). */
bool ruda__binary_cache_store(const ruda__binary_kind_t *kind, const char *dir, const char *path,
                              uint64_t word, const void *bin, size_t size, const char *who,
                              _Atomic uint64_t *writes, bool *disable);

#endif
