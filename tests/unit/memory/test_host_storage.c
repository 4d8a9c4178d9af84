/* The host storage: aligned, zeroed, size 0, limits. */
#include "base/alloc.h"
#include "memory_test_util.h"

TEST(aligned_zeroed_small_and_large) {
  ruda__storage_t s;
  ASSERT_OK(ruda__host_storage_create(64, 0, &s));
  ASSERT_UEQ(s.alignment, 64);
  uint64_t sizes[] = {1, 100, 4096, 300 * 1024, 8 * MIB};
  ruda__storage_handle_t h[5];
  for (int i = 0; i < 5; i++) {
    ASSERT_OK(s.vt->alloc(s.self, sizes[i], &h[i]));
    ASSERT_UEQ(h[i].size, sizes[i]);
    ASSERT_UEQ(h[i].offset, 0);
    ASSERT_UEQ(h[i].base % 64, 0);
    const unsigned char *p = (const unsigned char *)(uintptr_t)h[i].base;
    for (uint64_t k = 0; k < sizes[i]; k += 97) ASSERT_EQ(p[k], 0);
    ASSERT_EQ(p[sizes[i] - 1], 0);
    memset((void *)(uintptr_t)h[i].base, 0xab, (size_t)sizes[i]);
    if (i) ASSERT_UNE(h[i].id, h[i - 1].id);
  }
  for (int i = 0; i < 5; i++) s.vt->dealloc(s.self, &h[i]);
  s.vt->flush(s.self);
  s.vt->destroy(s.self);
}

TEST(size_zero_and_big_alignment) {
  ruda__storage_t s;
  ASSERT_OK(ruda__host_storage_create(8192, 0, &s));
  ruda__storage_handle_t z, b;
  ASSERT_OK(s.vt->alloc(s.self, 0, &z));
  ASSERT_UEQ(z.size, 0);
  ASSERT_UNE(z.base, 0);
  ASSERT_OK(s.vt->alloc(s.self, 1 * MIB, &b));
  ASSERT_UEQ(b.base % 8192, 0);
  s.vt->dealloc(s.self, &z);
  s.vt->dealloc(s.self, &b);
  s.vt->destroy(s.self);
  ASSERT_ERR_KIND(ruda__host_storage_create(48, 0, &s), RUDA_ERR_INVALID_ARGUMENT);
}

TEST(limit_gives_out_of_memory_and_buffer_too_big) {
  ruda__storage_t s;
  ASSERT_OK(ruda__host_storage_create(256, 1 * MIB, &s));
  ruda__storage_handle_t a, b;
  ASSERT_OK(s.vt->alloc(s.self, 600 * 1024, &a));
  ruda_status_t st = s.vt->alloc(s.self, 600 * 1024, &b);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_UEQ(ruda_status_size_field(st), 600 * 1024);
  ruda_status_free(st);
  ASSERT_ERR_KIND(s.vt->alloc(s.self, 2 * MIB, &b), RUDA_ERR_IO_BUFFER_TOO_BIG);
  s.vt->dealloc(s.self, &a);
  ASSERT_OK(s.vt->alloc(s.self, 600 * 1024, &b));
  s.vt->dealloc(s.self, &b);
  s.vt->destroy(s.self);
  ASSERT_OK(ruda__host_storage_create(256, 0, &s));
  ASSERT_ERR_KIND(s.vt->alloc(s.self, UINT64_MAX - 10, &b), RUDA_ERR_IO_BUFFER_TOO_BIG);
  /* Larger than any machine: the system refuses, OutOfMemory. */
  ASSERT_ERR_KIND(s.vt->alloc(s.self, 1ull << 56, &b), RUDA_ERR_IO_OUT_OF_MEMORY);
  s.vt->destroy(s.self);
}

/* Both paths (aligned allocation below 256 KiB, mapped pages above) go
 * through base/alloc.h: an injected failure is OutOfMemory for the request,
 * counts nothing against the limit, and the storage works afterwards. */
TEST(injected_failures_are_out_of_memory_on_both_paths) {
  ruda__storage_t s;
  ASSERT_OK(ruda__host_storage_create(256, 1 * MIB, &s));
  ruda__storage_handle_t h;
  ruda__test_fail_alloc_after(0);
  ruda_status_t small = s.vt->alloc(s.self, 100, &h);
  ruda_status_t large = s.vt->alloc(s.self, 600 * 1024, &h);
  uint64_t injected = ruda__test_failed_allocs();
  ruda__test_fail_alloc_after(-1);
  /* The two requests, and the statuses that say so (which then fall back to
   * a preallocated OutOfMemory without the size). */
  ASSERT_UGE(injected, 2);
  ASSERT_EQ(ruda_status_kind(small), RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_EQ(ruda_status_kind(large), RUDA_ERR_IO_OUT_OF_MEMORY);
  ruda_status_free(small);
  ruda_status_free(large);
  /* Nothing was counted: the whole limit is still there. */
  ASSERT_OK(s.vt->alloc(s.self, 1 * MIB, &h));
  const unsigned char *p = (const unsigned char *)(uintptr_t)h.base;
  ASSERT_EQ(p[0], 0);
  ASSERT_EQ(p[MIB - 1], 0);
  s.vt->dealloc(s.self, &h);
  ASSERT_OK(s.vt->alloc(s.self, 100, &h));
  ASSERT_UEQ(h.base % 256, 0);
  s.vt->dealloc(s.self, &h);
  s.vt->destroy(s.self);
}
