/* Fault injection in the memory layer: every host allocation of the
 * descriptor table, the managers, pools, pages, slot tables, persistent
 * buckets and the host storage's metadata goes through base/alloc.h; "fail
 * the Nth allocation" is looped over a workload until it runs clean. Each
 * failure must come back as an error (OutOfMemory), leave the manager
 * usable (the same requests then succeed) and leak nothing (LeakSanitizer
 * in the ASan build). */
#include <stdio.h>

#include "base/alloc.h"
#include "memory_test_util.h"

enum { LIVE = 24, MAX_ROUNDS = 2000 };

/* Reserves a mix of sizes in every pool kind, releases some, cleans up.
 * Returns the number of errors; fills `h` with what is still held. */
static int workload(ruda__memory_manager_t *mm, ruda_handle_t *h) {
  static const uint64_t sizes[] = {0, 1, 100, 4096, 70000, 1 << 20, 3 << 20, 9 << 20};
  int errors = 0;
  for (int i = 0; i < LIVE; i++) {
    if (i == LIVE / 2) ruda__memory_set_mode(mm, RUDA_ALLOCATION_PERSISTENT);
    ruda_status_t st = try_alloc(mm, sizes[i % 8] + (uint64_t)i, &h[i]);
    if (st) {
      errors++;
      ruda_status_free(st);
      continue;
    }
    if (i % 3 == 0) ruda_handle_release(&h[i]);
  }
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_AUTO);
  ruda__memory_cleanup(mm, true);
  return errors;
}

TEST(fail_the_nth_allocation_of_the_memory_layer) {
  int64_t n = 0;
  for (; n < MAX_ROUNDS; n++) {
    counting_storage_t cs;
    ruda_handle_t h[LIVE];
    memset(h, 0, sizeof h);
    ruda__storage_t storage = counting_storage(&cs, 256, 0);
    ruda__test_fail_alloc_after(n);
    ruda__memory_manager_t *mm = NULL;
    ruda_status_t st =
        ruda__memory_manager_create(storage, props_of(64 * MIB, 256), NULL, "faults", &mm);
    int errors = st ? 1 : workload(mm, h);
    if (st) {
      ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_IO_OUT_OF_MEMORY);
      ASSERT_TRUE(cs.destroyed); /* the manager took the storage, even failing */
      ruda_status_free(st);
    }
    uint64_t injected = ruda__test_failed_allocs();
    ruda__test_fail_alloc_after(-1);
    if (injected) ASSERT_GT(errors, 0); /* no failure is silent */
    if (!mm) continue;
    /* Usable afterwards: every handle still held resolves, new requests
     * succeed, and everything goes back to the storage. */
    for (int i = 0; i < LIVE; i++) {
      if (ruda_handle_is_empty(&h[i])) continue;
      ruda__storage_handle_t sh = resolve(mm, &h[i]);
      ASSERT_UEQ(sh.size, ruda_handle_size_in_used(&h[i]));
    }
    ruda_handle_t extra[LIVE];
    memset(extra, 0, sizeof extra);
    ASSERT_EQ(workload(mm, extra), 0);
    for (int i = 0; i < LIVE; i++) {
      ruda_handle_release(&h[i]);
      ruda_handle_release(&extra[i]);
    }
    ruda__memory_cleanup(mm, true);
    ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 0);
    ASSERT_UEQ(cs.outstanding, 0);
    ruda__memory_manager_destroy(mm);
    if (injected == 0) break;
  }
  ASSERT_LT(n, MAX_ROUNDS);
  ASSERT_GT(n, 5);
  printf("  %lld allocations in the workload, each failed once\n", (long long)n);
}
