/* Host allocator with fault injection for tests. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strnlen, strcasecmp */
#endif
#include "base/alloc.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* < 0: injection off. Otherwise the number of allocations still allowed. */
static _Atomic int64_t g_fail_after = -1;
static _Atomic uint64_t g_failed;

static int should_fail(void) {
  int64_t n = atomic_load_explicit(&g_fail_after, memory_order_relaxed);
  if (n < 0) return 0;
  while (n > 0) {
    if (atomic_compare_exchange_weak(&g_fail_after, &n, n - 1)) return 0;
    if (n < 0) return 0;
  }
  atomic_fetch_add(&g_failed, 1);
  return 1;
}

void ruda__test_fail_alloc_after(int64_t n) {
  atomic_store(&g_failed, 0);
  atomic_store(&g_fail_after, n < 0 ? -1 : n);
}

uint64_t ruda__test_failed_allocs(void) { return atomic_load(&g_failed); }

void *ruda__malloc(size_t size) {
  if (should_fail()) return NULL;
  return malloc(size ? size : 1);
}

void *ruda__calloc(size_t count, size_t size) {
  if (should_fail()) return NULL;
  if (count == 0 || size == 0) return calloc(1, 1);
  return calloc(count, size);
}

void *ruda__realloc(void *ptr, size_t size) {
  if (should_fail()) return NULL;
  return realloc(ptr, size ? size : 1);
}

void ruda__free(void *ptr) { free(ptr); }

void *ruda__grow(void *items, size_t *cap, size_t len, size_t size, size_t first) {
  if (len < *cap) return items;
  size_t n = *cap ? *cap : first, bytes;
  if (*cap && __builtin_mul_overflow(n, (size_t)2, &n)) return NULL;
  if (__builtin_mul_overflow(n, size, &bytes)) return NULL;
  void *grown = ruda__realloc(items, bytes);
  if (grown) *cap = n;
  return grown;
}

void *ruda__aligned_alloc(size_t align, size_t size) {
  if (align == 0 || (align & (align - 1)) != 0) return NULL;
  if (should_fail()) return NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  void *p = NULL;
  if (posix_memalign(&p, align, size ? size : 1) != 0) return NULL;
  return p;
}

void *ruda__map_zeroed(size_t size) {
  if (size == 0) return NULL;
  if (should_fail()) return NULL;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void ruda__unmap(void *ptr, size_t size) {
  if (ptr && size) munmap(ptr, size);
}

char *ruda__strndup(const char *s, size_t n) {
  if (!s) return NULL;
  size_t len = strnlen(s, n);
  char *d = ruda__malloc(len + 1);
  if (!d) return NULL;
  memcpy(d, s, len);
  d[len] = '\0';
  return d;
}

char *ruda__strdup(const char *s) {
  return s ? ruda__strndup(s, strlen(s)) : NULL;
}

char *ruda__vasprintf(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char *buf = ruda__malloc((size_t)n + 1);
  if (!buf) return NULL;
  vsnprintf(buf, (size_t)n + 1, fmt, ap);
  return buf;
}

