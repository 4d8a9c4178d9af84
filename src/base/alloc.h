/* src/base/alloc.h: ruda's host allocator (internal).
 *
 * Thin wrappers over malloc/calloc/realloc/free that every ruda layer uses
 * for host memory, so that tests can make allocations fail on purpose and
 * run every out-of-memory path (the SQLite approach: fail after the Nth
 * allocation, loop N upwards until the operation succeeds).
 *
 * Every pointer these functions return (ruda__aligned_alloc's included) is
 * freed with ruda__free(), which is free(): memory handed to code that
 * calls free() (the documented contract of ruda_status_to_string(), the
 * GPU backends' composed sources) may come from here. Pages from
 * ruda__map_zeroed() go back with ruda__unmap() only.
 *
 * Thread-safety: all functions are thread-safe. The fault-injection counter
 * is process-wide; only tests use it.
 */
#ifndef RUDA_BASE_ALLOC_H
#define RUDA_BASE_ALLOC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* NULL on failure (or when fault injection says so). */
void *ruda__malloc(size_t size);
void *ruda__calloc(size_t count, size_t size);
void *ruda__realloc(void *ptr, size_t size);
void ruda__free(void *ptr);
/* `size` bytes aligned to `align` (a power of two; below sizeof(void *) it
 * is raised to that), uninitialized; freed with ruda__free(). NULL on
 * failure, for an `align` that is not a power of two, or when fault
 * injection says so. */
void *ruda__aligned_alloc(size_t align, size_t size);
/* `size` zeroed bytes of fresh anonymous pages (mmap), page-aligned and
 * committed lazily by the kernel; NULL on failure or injection, and for
 * size 0. Give them back with ruda__unmap(p, size) (the same size). */
void *ruda__map_zeroed(size_t size);
void ruda__unmap(void *ptr, size_t size);
/* Room for one more item in a growable array of `size`-byte items, `len`
 * of *cap in use: returns `items` itself while len < *cap, else `items`
 * reallocated to twice *cap items (`first` when *cap is 0) with *cap
 * updated. NULL, leaving `items` and *cap as they were, when memory is
 * exhausted (or injection says so) or the new size would overflow. */
void *ruda__grow(void *items, size_t *cap, size_t len, size_t size, size_t first);
/* Copies of a string; NULL gives NULL (not a failure). */
char *ruda__strdup(const char *s);
char *ruda__strndup(const char *s, size_t n);
/* vprintf into a fresh allocation; NULL when memory is exhausted. */
char *ruda__vasprintf(const char *fmt, va_list ap);

/* Test hook: let `n` more allocations succeed, then fail every allocation
 * until called again with n < 0 (which turns injection off). */
void ruda__test_fail_alloc_after(int64_t n);
/* Number of allocations failed by injection since the last call to
 * ruda__test_fail_alloc_after(). */
uint64_t ruda__test_failed_allocs(void);

#endif /* RUDA_BASE_ALLOC_H */
