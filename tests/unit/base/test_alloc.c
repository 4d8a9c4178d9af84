/* The host allocator (base/alloc.h): every allocating entry point obeys
 * "fail after the Nth allocation", including the aligned and the page
 * allocations that the memory layer's host storage and the CPU backend's
 * shared memory use. */
#include <stdint.h>
#include <string.h>

#include "base/alloc.h"
#include "test.h"

TEST(aligned_alloc_aligns_and_is_freed_with_ruda_free) {
  static const size_t aligns[] = {1, 2, 8, 64, 4096, 1 << 16};
  for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
    uint8_t *p = ruda__aligned_alloc(aligns[i], 100);
    ASSERT_NOT_NULL(p);
    ASSERT_UEQ((uintptr_t)p % aligns[i], 0);
    memset(p, 0x5a, 100);
    ruda__free(p);
  }
  void *z = ruda__aligned_alloc(64, 0); /* a unique pointer, like malloc(0) */
  ASSERT_NOT_NULL(z);
  ruda__free(z);
  ASSERT_NULL(ruda__aligned_alloc(0, 16));
  ASSERT_NULL(ruda__aligned_alloc(48, 16));
}

TEST(map_zeroed_gives_zeroed_pages) {
  size_t n = 1 << 20;
  uint8_t *p = ruda__map_zeroed(n);
  ASSERT_NOT_NULL(p);
  ASSERT_UEQ((uintptr_t)p % 4096, 0);
  for (size_t i = 0; i < n; i += 4093) ASSERT_UEQ(p[i], 0);
  p[n - 1] = 1;
  ruda__unmap(p, n);
  ASSERT_NULL(ruda__map_zeroed(0));
  ruda__unmap(NULL, 0); /* a no-op */
}

/* Each allocating entry point, one after another: with injection after n
 * allocations, exactly the (n+1)th and later ones fail, and each failure
 * is counted. */
TEST(every_entry_point_obeys_fail_after_n) {
  enum { KINDS = 6 };
  for (int64_t n = 0; n <= KINDS; n++) {
    void *got[KINDS];
    size_t map_size = 1 << 16;
    ruda__test_fail_alloc_after(n);
    got[0] = ruda__malloc(10);
    got[1] = ruda__calloc(3, 5);
    got[2] = ruda__realloc(NULL, 12);
    got[3] = ruda__strdup("text");
    got[4] = ruda__aligned_alloc(256, 1000);
    got[5] = ruda__map_zeroed(map_size);
    uint64_t failed = ruda__test_failed_allocs();
    ruda__test_fail_alloc_after(-1);
    for (int i = 0; i < KINDS; i++) {
      if (i < n) ASSERT_NOT_NULL(got[i]);
      else ASSERT_NULL(got[i]);
    }
    ASSERT_UEQ(failed, (uint64_t)(KINDS - n));
    for (int i = 0; i < 5; i++) ruda__free(got[i]);
    ruda__unmap(got[5], map_size);
  }
  /* Off again: everything succeeds. */
  void *p = ruda__aligned_alloc(64, 64);
  ASSERT_NOT_NULL(p);
  ruda__free(p);
}
