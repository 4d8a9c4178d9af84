/* Pools, routing, reuse, cleanup, modes and errors of the memory manager. */
#include <stdio.h>

#include "memory_test_util.h"

/* ---- Presets ---- */

TEST(presets_subslices_128mib) {
  ruda__pool_options_t o[RUDA_MAX_POOLS];
  uint32_t n = ruda__memory_presets(RUDA_MEMORY_SUBSLICES, props_of(128 * MIB, 256), o);
  ASSERT_EQ(n, 4);
  ASSERT_EQ(o[0].kind, RUDA_POOL_EXCLUSIVE);
  ASSERT_UEQ(o[0].max_alloc_size, 0);
  ASSERT_EQ(o[1].kind, RUDA_POOL_SLICED);
  ASSERT_UEQ(o[1].page_size, 8 * MIB);
  ASSERT_UEQ(o[1].max_slice_size, 2 * MIB);
  ASSERT_UEQ(o[2].page_size, 32 * MIB);
  ASSERT_UEQ(o[2].max_slice_size, 16 * MIB);
  ASSERT_UEQ(o[3].page_size, 128 * MIB);
  ASSERT_UEQ(o[3].max_slice_size, 128 * MIB);
  ASSERT_UEQ(o[3].dealloc_period, UINT64_MAX);
}

TEST(presets_subslices_512mib) {
  ruda__pool_options_t o[RUDA_MAX_POOLS];
  uint32_t n = ruda__memory_presets(RUDA_MEMORY_SUBSLICES, props_of(512 * MIB, 4), o);
  ASSERT_EQ(n, 5);
  uint64_t pages[] = {8 * MIB, 32 * MIB, 128 * MIB, 512 * MIB};
  uint64_t slices[] = {1 * MIB, 8 * MIB, 64 * MIB, 512 * MIB};
  for (int i = 0; i < 4; i++) {
    ASSERT_EQ(o[i + 1].kind, RUDA_POOL_SLICED);
    ASSERT_UEQ(o[i + 1].page_size, pages[i]);
    ASSERT_UEQ(o[i + 1].max_slice_size, slices[i]);
  }
}

TEST(presets_subslices_small_max_page) {
  /* Below 32 MiB no sliced pool is generated: Excl(0) and the whole page. */
  ruda__pool_options_t o[RUDA_MAX_POOLS];
  uint32_t n = ruda__memory_presets(RUDA_MEMORY_SUBSLICES, props_of(10 * MIB + 100, 512), o);
  ASSERT_EQ(n, 2);
  ASSERT_UEQ(o[1].page_size, (10 * MIB + 100) / 512 * 512);
  ASSERT_UEQ(o[1].max_slice_size, o[1].page_size);
}

TEST(presets_exclusive_pages) {
  ruda__pool_options_t o[RUDA_MAX_POOLS];
  uint32_t n = ruda__memory_presets(RUDA_MEMORY_EXCLUSIVE_PAGES, props_of(512 * MIB, 256), o);
  ASSERT_EQ(n, 24);
  ASSERT_UEQ(o[0].max_alloc_size, 32 * 1024);
  ASSERT_UEQ(o[n - 1].max_alloc_size, 512 * MIB);
  for (uint32_t i = 0; i < n; i++) {
    ASSERT_EQ(o[i].kind, RUDA_POOL_EXCLUSIVE);
    ASSERT_UEQ(o[i].max_alloc_size % 256, 0);
    /* 5000 * round(1 + size / 1 GiB): 5000 below 512 MiB, 10000 at it. */
    ASSERT_UEQ(o[i].dealloc_period, i + 1 < n ? 5000 : 10000);
    if (i) ASSERT_UGT(o[i].max_alloc_size, o[i - 1].max_alloc_size);
  }
  /* A coarse alignment merges buckets (duplicates removed). */
  n = ruda__memory_presets(RUDA_MEMORY_EXCLUSIVE_PAGES, props_of(4 * MIB, 1 * MIB), o);
  ASSERT_ULT(n, 24);
  for (uint32_t i = 1; i < n; i++) ASSERT_UGT(o[i].max_alloc_size, o[i - 1].max_alloc_size);
  /* Period grows with the bucket size: 5000 * round(1 + size / 1 GiB). */
  n = ruda__memory_presets(RUDA_MEMORY_EXCLUSIVE_PAGES, props_of(2048 * MIB, 256), o);
  ASSERT_UEQ(o[n - 1].dealloc_period, 15000);
}

/* ---- Handles and slices ---- */

TEST(handle_mutability) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ASSERT_NOT_NULL(mm);
  ruda_handle_t h;
  ALLOC(mm, 1000, &h);
  ruda_binding_t b = ruda_handle_binding(&h);
  expect_clone_blocks_mut(&h); /* bindings do not count */
  ruda_binding_release(&b);
  ASSERT_TRUE(ruda_handle_can_mut(&h));
  ruda_handle_release(&h);
  ruda__memory_manager_destroy(mm);
}

TEST(reuse_of_freed_storage) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a, b;
  ALLOC(mm, 1024, &a);
  uint64_t addr = addr_of(mm, &a);
  ASSERT_UNE(addr, 0);
  ruda_memory_usage_t u1 = ruda__memory_usage(mm);
  ruda_handle_release(&a);
  ALLOC(mm, 1024, &b);
  ASSERT_UEQ(addr_of(mm, &b), addr);
  ruda_memory_usage_t u2 = ruda__memory_usage(mm);
  ASSERT_UEQ(u2.bytes_reserved, u1.bytes_reserved);
  ASSERT_UEQ(cs.allocs, 1);
  ruda_handle_release(&b);
  ruda__memory_manager_destroy(mm);
  ASSERT_TRUE(cs.destroyed);
}

TEST(binding_keeps_slice_busy) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a, b;
  ALLOC(mm, 1024, &a);
  uint64_t addr = addr_of(mm, &a);
  ruda_binding_t bind = ruda_handle_into_binding(&a);
  ASSERT_TRUE(ruda_handle_is_empty(&a));
  ALLOC(mm, 1024, &b);
  ASSERT_UNE(addr_of(mm, &b), addr); /* still in use through the binding */
  ruda__storage_handle_t sh;
  ASSERT_OK(ruda__memory_resolve_binding(mm, &bind, &sh));
  ASSERT_UEQ(ruda__storage_handle_addr(&sh), addr);
  ruda_binding_release(&bind);
  ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 1);
  ruda_handle_release(&b);
  ruda__memory_manager_destroy(mm);
}

TEST(two_slices_on_one_page) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a, b;
  ALLOC(mm, 512, &a);
  ALLOC(mm, 512, &b);
  ruda__storage_handle_t sa = resolve(mm, &a), sb = resolve(mm, &b);
  ASSERT_UEQ(sa.id, sb.id);
  ASSERT_UEQ(sa.offset, 0);
  ASSERT_UEQ(sb.offset, 512);
  ASSERT_UEQ(sb.size, 512);
  ASSERT_UEQ(cs.allocs, 1);
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UEQ(u.number_allocs, 2);
  ASSERT_UEQ(u.bytes_in_use, 1024);
  ASSERT_UEQ(u.bytes_reserved, 8 * MIB);
  ruda_handle_release(&a);
  ruda_handle_release(&b);
  ruda__memory_manager_destroy(mm);
}

TEST(alignment_padding) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a, b;
  ALLOC(mm, 100, &a);
  ALLOC(mm, 300, &b);
  ruda__storage_handle_t sa = resolve(mm, &a), sb = resolve(mm, &b);
  ASSERT_UEQ(sa.size, 100);
  ASSERT_UEQ(sb.offset - sa.offset, 256);
  ASSERT_UEQ(ruda__storage_handle_addr(&sb) % 256, 0);
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UEQ(u.bytes_in_use, 400);
  ASSERT_UEQ(u.bytes_padding, 156 + 212);
  /* The freed slice, padding included, fits a request of its effective size. */
  ruda_handle_release(&a);
  ruda_handle_t c;
  ALLOC(mm, 256, &c);
  ASSERT_UEQ(resolve(mm, &c).offset, sa.offset);
  ruda_handle_release(&b);
  ruda_handle_release(&c);
  ruda__memory_manager_destroy(mm);
}

TEST(right_pool_per_size) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  struct {
    uint64_t size;
    uint32_t pool;
  } cases[] = {
      {0, 0},               /* Excl(0) takes only size 0 */
      {1, 1},               /* S(8 MiB, 2 MiB) */
      {2 * MIB, 1},         /* = max slice */
      {2 * MIB + 1, 2},     /* S(32 MiB, 16 MiB) */
      {7 * MIB, 1},         /* 8 MiB page, under 20% waste */
      {6 * MIB, 2},         /* 25% waste on an 8 MiB page */
      {16 * MIB, 2},
      {26 * MIB, 2},        /* under 20% of a 32 MiB page wasted */
      {20 * MIB, 3},
      {128 * MIB, 3},
  };
  ruda_handle_t h[10];
  for (size_t i = 0; i < 10; i++) {
    ALLOC(mm, cases[i].size, &h[i]);
    ASSERT_UEQ(MEM(h[i])->loc.pool, cases[i].pool);
    ASSERT_UEQ(resolve(mm, &h[i]).size, cases[i].size);
  }
  for (size_t i = 0; i < 10; i++) ruda_handle_release(&h[i]);
  ruda__memory_manager_destroy(mm);
}

TEST(fragmentation_resistance) {
  /* Four 2 MiB slices fill one 8 MiB page; once all are free, they coalesce
   * and a 7 MiB request fits on the same page. */
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t h[4], big;
  for (int i = 0; i < 4; i++) ALLOC(mm, 2 * MIB, &h[i]);
  ASSERT_UEQ(cs.allocs, 1);
  uint64_t base = addr_of(mm, &h[0]);
  /* Free in an order that needs merging on both sides. */
  ruda_handle_release(&h[1]);
  ruda_handle_release(&h[3]);
  ruda_handle_release(&h[2]);
  ruda_handle_release(&h[0]);
  ALLOC(mm, 7 * MIB, &big);
  ASSERT_UEQ(addr_of(mm, &big), base);
  ASSERT_UEQ(cs.allocs, 1);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 8 * MIB);
  ruda_handle_release(&big);
  ruda__memory_manager_destroy(mm);
}

TEST(allocate_free_reallocate_first_fit) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t h[6];
  for (int i = 0; i < 6; i++) ALLOC(mm, 1024, &h[i]);
  uint64_t a1 = addr_of(mm, &h[1]), a4 = addr_of(mm, &h[4]);
  ruda_handle_release(&h[4]);
  ruda_handle_release(&h[1]);
  /* First fit: the lowest free slice wins, whatever the order of frees. */
  ruda_handle_t x, y, z;
  ALLOC(mm, 512, &x);
  ASSERT_UEQ(addr_of(mm, &x), a1);
  ALLOC(mm, 1024, &y); /* the rest of slot 1 is too small: slot 4 */
  ASSERT_UEQ(addr_of(mm, &y), a4);
  ALLOC(mm, 512, &z); /* rest of slot 1 */
  ASSERT_UEQ(addr_of(mm, &z), a1 + 512);
  ASSERT_UEQ(cs.allocs, 1);
  ruda_handle_release(&x);
  ruda_handle_release(&y);
  ruda_handle_release(&z);
  for (int i = 0; i < 6; i++) ruda_handle_release(&h[i]);
  ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 0);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.deallocs, 1);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 0);
  /* Usable after cleanup. */
  ALLOC(mm, 1024, &x);
  ASSERT_UEQ(cs.allocs, 2);
  ruda_handle_release(&x);
  ruda__memory_manager_destroy(mm);
}

TEST(cleanup_keeps_busy_pages) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a, b, c;
  /* Sizes of at most a quarter of their pool's page: whole pages. */
  ALLOC(mm, 1 * MIB, &a);  /* page 8 MiB */
  ALLOC(mm, 4 * MIB, &b);  /* page 32 MiB */
  ALLOC(mm, 20 * MIB, &c); /* page 128 MiB */
  ruda_handle_release(&b);
  ruda__memory_cleanup(mm, false); /* implicit: sliced pools keep pages */
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, (8 + 32 + 128) * MIB);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, (8 + 128) * MIB);
  ASSERT_UEQ(cs.deallocs, 1);
  ASSERT_UGE(cs.flushes, 1);
  /* Lookups still work for the survivors. */
  ASSERT_UEQ(resolve(mm, &c).size, 20 * MIB);
  ruda_handle_release(&a);
  ruda_handle_release(&c);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  ruda__memory_manager_destroy(mm);
}

TEST(cursor_and_resolve_offsets) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_memory_t *m = ruda__memory_new();
  ASSERT_OK(ruda__memory_alloc(mm, m, 1000, 42));
  uint64_t cur = 0;
  ASSERT_OK(ruda__memory_cursor(mm, m, &cur));
  ASSERT_UEQ(cur, 42);
  ruda__storage_handle_t full, view;
  ASSERT_OK(ruda__memory_resolve(mm, m, 0, 0, &full));
  ASSERT_OK(ruda__memory_resolve(mm, m, 100, 200, &view));
  ASSERT_UEQ(view.offset, full.offset + 100);
  ASSERT_UEQ(view.size, 700);
  ASSERT_ERR_KIND(ruda__memory_resolve(mm, m, 800, 300, &view), RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(ruda__memory_owns(mm, m));
  ASSERT_TRUE(ruda__memory_is_bound(m));
  /* Binding twice is refused. */
  ASSERT_ERR_KIND(ruda__memory_alloc(mm, m, 10, 0), RUDA_ERR_INVALID_ARGUMENT);
  ruda__memory_release_handle(m);
  ruda__memory_manager_destroy(mm);
}

/* ---- Errors and usability afterwards ---- */

TEST(not_found_for_unbound_foreign_and_destroyed) {
  counting_storage_t cs1, cs2;
  ruda__memory_manager_t *mm1 = mk_manager(&cs1, 128 * MIB, 256, 0, NULL);
  ruda__memory_manager_t *mm2 = mk_manager(&cs2, 128 * MIB, 256, 0, NULL);
  ruda__storage_handle_t sh;
  uint64_t cur;
  ruda_memory_t *unbound = ruda__memory_new();
  ASSERT_FALSE(ruda__memory_is_bound(unbound));
  ASSERT_ERR_KIND(ruda__memory_resolve(mm1, unbound, 0, 0, &sh), RUDA_ERR_IO_NOT_FOUND);
  ASSERT_ERR_KIND(ruda__memory_cursor(mm1, unbound, &cur), RUDA_ERR_IO_NOT_FOUND);
  ASSERT_ERR_KIND(ruda__memory_resolve(mm1, NULL, 0, 0, &sh), RUDA_ERR_IO_NOT_FOUND);
  ruda_handle_t h;
  ALLOC(mm1, 64, &h);
  ASSERT_ERR_KIND(ruda__memory_resolve(mm2, MEM(h), 0, 0, &sh), RUDA_ERR_IO_NOT_FOUND);
  ASSERT_FALSE(ruda__memory_owns(mm2, MEM(h)));
  ruda__memory_manager_destroy(mm1);
  /* The handle outlives its manager: unbound now, NotFound everywhere. */
  ASSERT_FALSE(ruda__memory_is_bound(MEM(h)));
  ASSERT_ERR_KIND(ruda__memory_resolve(mm2, MEM(h), 0, 0, &sh), RUDA_ERR_IO_NOT_FOUND);
  ASSERT_TRUE(ruda_handle_can_mut(&h));
  ruda_handle_release(&h);
  ruda__memory_release_handle(unbound);
  ruda__memory_manager_destroy(mm2);
}

TEST(buffer_too_big_then_usable) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t h;
  ruda_status_t st = try_alloc(mm, 128 * MIB + 1, &h);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_IO_BUFFER_TOO_BIG);
  ASSERT_UEQ(ruda_status_size_field(st), 128 * MIB + 1);
  ruda_status_free(st);
  ASSERT_ERR_KIND(try_alloc(mm, UINT64_MAX, &h), RUDA_ERR_IO_BUFFER_TOO_BIG);
  ASSERT_UEQ(cs.allocs, 0);
  ALLOC(mm, 128 * MIB, &h);
  ASSERT_UEQ(resolve(mm, &h).size, 128 * MIB);
  ruda_handle_release(&h);
  ruda__memory_manager_destroy(mm);
}

TEST(out_of_memory_then_usable) {
  counting_storage_t cs;
  /* 20 MiB of storage: two 8 MiB pages fit, a third does not. */
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 20 * MIB, NULL);
  ruda_handle_t a, b, c;
  ALLOC(mm, 2 * MIB, &a);
  ALLOC(mm, 7 * MIB, &b); /* does not fit next to a: second page */
  ASSERT_UEQ(cs.allocs, 2);
  ruda_memory_t *m = ruda__memory_new();
  ruda_status_t st = ruda__memory_alloc(mm, m, 7 * MIB, 0);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_IO_OUT_OF_MEMORY);
  /* The request, not the page it needed (nor the smaller page tried next),
   * and what a user needs to act on it. */
  ASSERT_UEQ(ruda_status_size_field(st), 7 * MIB);
  char b7[32], b20[32], b9[32], b16[32], b6[32], want[512];
  ruda_bytes_format(7 * MIB, b7, sizeof b7);
  ruda_bytes_format(20 * MIB, b20, sizeof b20);
  ruda_bytes_format(9 * MIB, b9, sizeof b9);
  ruda_bytes_format(16 * MIB, b16, sizeof b16);
  ruda_bytes_format(6 * MIB, b6, sizeof b6);
  snprintf(want, sizeof want,
           "test: tried to allocate %s (7340032 bytes) with a limit of %s; %s in use and %s "
           "reserved on this stream, %s in use and %s reserved on the device; largest free "
           "block %s",
           b7, b20, b9, b16, b9, b16, b6);
  ASSERT_STR_EQ(ruda_status_reason(st), want);
  ruda_status_free(st);
  ASSERT_FALSE(ruda__memory_is_bound(m));
  ruda__storage_handle_t sh;
  ASSERT_ERR_KIND(ruda__memory_resolve(mm, m, 0, 0, &sh), RUDA_ERR_IO_NOT_FOUND);
  /* A 32 MiB page can never fit 20 MiB of storage (26 MiB is accepted by
   * the 20% rule, so it takes a whole page), nor can a page of the
   * request's own size: out of memory, the request named. */
  st = try_alloc(mm, 26 * MIB, &c);
  ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_UEQ(ruda_status_size_field(st), 26 * MIB);
  ruda_status_free(st);
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UEQ(u.number_allocs, 2);
  ASSERT_UEQ(u.bytes_reserved, 16 * MIB);
  /* Free one page: the same request succeeds, with the same descriptor. */
  ruda_handle_release(&b);
  ASSERT_OK(ruda__memory_alloc(mm, m, 7 * MIB, 0));
  ASSERT_OK(ruda__memory_resolve(mm, m, 0, 0, &sh));
  ruda__memory_release_handle(m);
  ruda_handle_release(&a);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 0);
  ALLOC(mm, 1000, &a);
  ruda_handle_release(&a);
  ruda__memory_manager_destroy(mm);
}

TEST(persistent_key_of_2_pow_64_minus_1_does_not_wrap) {
  /* Issue 9: reserve 0, release, reserve UINT64_MAX in persistent mode.
   * UINT64_MAX + padding wrapped to the 0-byte bucket's key: the request
   * got the 0-byte slice, and a 64-byte write through it crashed. */
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_PERSISTENT);
  ruda_handle_t z, h;
  ALLOC(mm, 0, &z);
  ruda_handle_release(&z);
  ruda_memory_usage_t before = ruda__memory_usage(mm);
  for (uint64_t size = UINT64_MAX; size > UINT64_MAX - 300; size -= 37) {
    ruda_status_t st = try_alloc(mm, size, &h);
    ASSERT_EQ(ruda_status_kind(st), RUDA_ERR_IO_BUFFER_TOO_BIG);
    ASSERT_UEQ(ruda_status_size_field(st), size);
    ruda_status_free(st);
  }
  ASSERT_ERR_KIND(try_alloc(mm, 128 * MIB + 1, &h), RUDA_ERR_IO_BUFFER_TOO_BIG);
  /* Consistent: same usage, and the 0-byte slice is still there for reuse. */
  ruda_memory_usage_t after = ruda__memory_usage(mm);
  ASSERT_UEQ(after.number_allocs, before.number_allocs);
  ASSERT_UEQ(after.bytes_in_use, before.bytes_in_use);
  ASSERT_UEQ(after.bytes_reserved, before.bytes_reserved);
  uint64_t allocs = cs.allocs;
  ALLOC(mm, 0, &z);
  ASSERT_UEQ(cs.allocs, allocs);
  ALLOC(mm, 64, &h);
  ASSERT_UEQ(resolve(mm, &h).size, 64);
  ruda_handle_release(&z);
  ruda_handle_release(&h);
  ruda__memory_manager_destroy(mm);
}

TEST(invalid_configs_are_errors) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = NULL;
  ruda__memory_config_t cfg = {0};
  cfg.configuration = RUDA_MEMORY_CUSTOM;
  ASSERT_ERR_KIND(ruda__memory_manager_create(counting_storage(&cs, 256, 0),
                                              props_of(128 * MIB, 256), &cfg, "x", &mm),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(cs.destroyed); /* ownership of the storage was taken */
  cfg.num_custom = 1;
  cfg.custom[0].kind = RUDA_POOL_EXCLUSIVE;
  cfg.custom[0].max_alloc_size = 1000; /* not a multiple of 256 */
  ASSERT_ERR_KIND(ruda__memory_manager_create(counting_storage(&cs, 256, 0),
                                              props_of(128 * MIB, 256), &cfg, "x", &mm),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_ERR_KIND(ruda__memory_manager_create(counting_storage(&cs, 256, 0),
                                              props_of(128 * MIB, 0), NULL, "x", &mm),
                  RUDA_ERR_INVALID_ARGUMENT);
  ASSERT_NULL(mm);
}

/* ---- Exclusive pools ---- */

TEST(exclusive_pool_periodic_cleanup) {
  counting_storage_t cs;
  ruda__memory_config_t cfg = {0};
  cfg.configuration = RUDA_MEMORY_CUSTOM;
  cfg.num_custom = 1;
  cfg.custom[0].kind = RUDA_POOL_EXCLUSIVE;
  cfg.custom[0].max_alloc_size = 1 * MIB;
  cfg.custom[0].dealloc_period = 10; /* checks every 2 allocations */
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 0, &cfg);
  ruda_handle_t a, b;
  ALLOC(mm, 1000, &a);
  /* Page size is round_up(max(cur_avg, size)): cur_avg starts at 512 KiB. */
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UGE(u.bytes_reserved, 500 * 1024);
  ASSERT_UEQ(u.bytes_reserved % 256, 0);
  uint64_t addr = addr_of(mm, &a);
  ruda_handle_release(&a);
  ALLOC(mm, 2000, &b); /* reuses the free page (free_count 4 -> 3) */
  ASSERT_UEQ(addr_of(mm, &b), addr);
  ASSERT_UEQ(cs.allocs, 1);
  ruda_handle_release(&b);
  /* alloc_nr is 2: one implicit check (period/5 = 2) raises free_count to 4. */
  ruda__memory_cleanup(mm, false);
  ASSERT_UEQ(cs.deallocs, 0);
  /* No new reservations: the period has not elapsed again, nothing changes. */
  ruda__memory_cleanup(mm, false);
  ASSERT_UEQ(cs.deallocs, 0);
  /* Two more reservations (each freed), then a check: free_count reaches 5. */
  ALLOC(mm, 3 * MIB / 4, &a); /* larger than the page: a second page */
  ruda_handle_release(&a);
  ALLOC(mm, 100, &a);
  ruda_handle_release(&a);
  ASSERT_UEQ(cs.allocs, 2);
  ruda__memory_cleanup(mm, false);
  ASSERT_UGE(cs.deallocs, 1);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 0);
  ruda__memory_manager_destroy(mm);
}

TEST(exclusive_pool_prefers_lowest_free_count) {
  counting_storage_t cs;
  ruda__memory_config_t cfg = {0};
  cfg.configuration = RUDA_MEMORY_EXCLUSIVE_PAGES;
  ruda__memory_manager_t *mm = mk_manager(&cs, 64 * MIB, 256, 0, &cfg);
  ruda_handle_t a, b, c;
  ALLOC(mm, 10000, &a);
  ALLOC(mm, 10000, &b);
  uint64_t ab = addr_of(mm, &b);
  /* Reuse b's page twice so its free_count drops below a's. */
  ruda_handle_release(&b);
  ALLOC(mm, 10000, &b);
  ASSERT_UEQ(addr_of(mm, &b), ab);
  ruda_handle_release(&b);
  ruda_handle_release(&a);
  ALLOC(mm, 10000, &c);
  ASSERT_UEQ(addr_of(mm, &c), ab);
  ASSERT_UEQ(cs.allocs, 2);
  ruda_handle_release(&c);
  ruda__memory_manager_destroy(mm);
}

/* ---- Persistent pool and the mode setter ---- */

TEST(persistent_mode_exact_buckets) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ASSERT_EQ(ruda__memory_mode(mm), RUDA_ALLOCATION_AUTO);
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_PERSISTENT);
  ASSERT_EQ(ruda__memory_mode(mm), RUDA_ALLOCATION_PERSISTENT);
  ruda_handle_t a, b, c;
  ALLOC(mm, 1000, &a);
  ASSERT_UEQ(MEM(a)->loc.pool, mm->npools); /* the persistent pool */
  ASSERT_UEQ(resolve(mm, &a).size, 1000);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 1024); /* exact effective size */
  uint64_t addr = addr_of(mm, &a);
  ruda_handle_release(&a);
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_AUTO);
  /* Auto mode still reuses a free persistent slice of the same effective size. */
  ALLOC(mm, 1010, &b);
  ASSERT_UEQ(addr_of(mm, &b), addr);
  /* ... and allocates persistently while the bucket exists, even when busy. */
  ALLOC(mm, 1020, &c);
  ASSERT_UEQ(MEM(c)->loc.pool, mm->npools);
  ASSERT_UEQ(cs.allocs, 2);
  /* Another size goes to the dynamic pools. */
  ALLOC(mm, 5000, &a);
  ASSERT_ULT(MEM(a)->loc.pool, mm->npools);
  ruda_handle_release(&a);
  ruda_handle_release(&b);
  ruda__memory_cleanup(mm, true); /* frees b's slice, keeps c's */
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 1024);
  ASSERT_UEQ(resolve(mm, &c).size, 1020);
  ruda_handle_release(&c);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  /* The bucket is gone after cleanup: the size routes to the dynamic pools. */
  ALLOC(mm, 1000, &a);
  ASSERT_ULT(MEM(a)->loc.pool, mm->npools);
  ruda_handle_release(&a);
  ruda__memory_manager_destroy(mm);
}

TEST(mode_setter_disabled_and_enforced) {
  counting_storage_t cs;
  ruda__memory_config_t cfg = {0};
  cfg.persistent = RUDA_PERSISTENT_MEMORY_DISABLED;
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 0, &cfg);
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_PERSISTENT);
  ASSERT_EQ(ruda__memory_mode(mm), RUDA_ALLOCATION_AUTO);
  ruda__memory_manager_destroy(mm);

  cfg.persistent = RUDA_PERSISTENT_MEMORY_ENFORCED;
  mm = mk_manager(&cs, 128 * MIB, 256, 0, &cfg);
  ASSERT_EQ(ruda__memory_mode(mm), RUDA_ALLOCATION_PERSISTENT);
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_AUTO);
  ASSERT_EQ(ruda__memory_mode(mm), RUDA_ALLOCATION_PERSISTENT);
  ruda_handle_t a;
  ALLOC(mm, 77, &a);
  ASSERT_UEQ(MEM(a)->loc.pool, mm->npools);
  ruda_handle_release(&a);
  /* Persistent allocations beyond the max page size are refused too. */
  ASSERT_ERR_KIND(try_alloc(mm, 129 * MIB, &a), RUDA_ERR_IO_BUFFER_TOO_BIG);
  ruda__memory_manager_destroy(mm);
}

/* ---- Usage and report text ---- */

TEST(bytes_format_binary_units) {
  rt_expect_u64_format(ruda_bytes_format, 0, "0 B");
  rt_expect_u64_format(ruda_bytes_format, 1023, "1023 B");
  rt_expect_u64_format(ruda_bytes_format, 1024, "1.00 KiB");
  rt_expect_u64_format(ruda_bytes_format, 1536, "1.50 KiB");
  rt_expect_u64_format(ruda_bytes_format, 8 * MIB, "8.00 MiB");
  rt_expect_u64_format(ruda_bytes_format, 32768ull * 1024, "32.00 MiB");
  rt_expect_u64_format(ruda_bytes_format, 2500000000ull, "2.33 GiB");
  rt_expect_u64_format(ruda_bytes_format, UINT64_MAX, "16.00 EiB");
  char buf[64];
  size_t n = ruda_bytes_format(123456, buf, 4);
  ASSERT_EQ(n, strlen("120.56 KiB"));
  ASSERT_STR_EQ(buf, "120");
}

TEST(usage_report_text_and_combine) {
  ruda_memory_usage_t a = {2, 1500, 500, 8000}, b = {1, 500, 0, 2000};
  ruda_memory_usage_t c = ruda_memory_usage_combine(a, b);
  ASSERT_UEQ(c.number_allocs, 3);
  ASSERT_UEQ(c.bytes_in_use, 2000);
  ASSERT_UEQ(c.bytes_padding, 500);
  ASSERT_UEQ(c.bytes_reserved, 10000);
  char buf[512];
  ruda_memory_usage_format(&c, buf, sizeof buf);
  ASSERT_STR_EQ(buf,
                "Memory Usage Report:\n"
                "  Number of allocations: 3\n"
                "  Bytes in use: 1.95 KiB\n"
                "  Bytes used for padding: 500 B\n"
                "  Total bytes reserved: 9.77 KiB\n"
                "  Usage efficiency: 20.00%\n"
                "  Padding overhead: 25.00%\n");
  ruda_memory_usage_t z = {0, 0, 0, 0};
  ruda_memory_usage_format(&z, buf, sizeof buf);
  ASSERT_STR_CONTAINS(buf, "Usage efficiency: NaN%");
}

TEST(per_pool_report) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a;
  ALLOC(mm, 1000, &a);
  char buf[4096];
  size_t n = ruda__memory_report(mm, buf, sizeof buf);
  ASSERT_UEQ(n, strlen(buf));
  ASSERT_STR_CONTAINS(buf, "Pool 1: SlicedPages { page_size: 8.00 MiB, max_slice_size: 2.00 MiB }: "
                           "pages 1, allocations 1, in use 1000 B");
  ASSERT_STR_CONTAINS(buf, "Pool 4: Persistent");
  ASSERT_STR_CONTAINS(buf, "Number of allocations: 1");
  char small[16];
  ASSERT_UEQ(ruda__memory_report(mm, small, sizeof small), n);
  ASSERT_EQ(strlen(small), 15);
  ruda_handle_release(&a);
  ruda__memory_manager_destroy(mm);
}

TEST(out_of_memory_reclaims_free_pages_of_other_pools) {
  counting_storage_t cs;
  /* 36 MiB: a free 32 MiB persistent slice blocks an 8 MiB page for pool 1
   * until the out-of-memory retry gives it back (a new page only reclaims
   * empty sliced pages; persistent slices wait for a cleanup). */
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 36 * MIB, NULL);
  ruda_handle_t a, b;
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_PERSISTENT);
  ALLOC(mm, 32 * MIB, &a);
  ruda_handle_release(&a);
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_AUTO);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 32 * MIB);
  ALLOC(mm, 1 * MIB, &b);
  ASSERT_UEQ(MEM(b)->loc.pool, 1);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 8 * MIB);
  ASSERT_UEQ(cs.deallocs, 1);
  ASSERT_UEQ(cs.failed, 1);
  /* Nothing free to give back: a plain OutOfMemory (30 MiB takes a whole
   * 32 MiB page under the 20% rule). */
  ASSERT_ERR_KIND(try_alloc(mm, 30 * MIB, &a), RUDA_ERR_IO_OUT_OF_MEMORY);
  ASSERT_UEQ(ruda__memory_usage(mm).number_allocs, 1);
  ruda_handle_release(&b);
  ALLOC(mm, 30 * MIB, &a);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 32 * MIB);
  ruda_handle_release(&a);
  ruda__memory_manager_destroy(mm);
}

/* ---- ruda's bounded reclaim and pages for large slices ---- */

TEST(new_page_reclaims_empty_pages_of_other_pools) {
  counting_storage_t cs;
  /* 36 MiB: pool 2's empty 32 MiB page must go back before pool 1's 8 MiB
   * page is allocated, and it does without a failed storage allocation. */
  ruda__memory_manager_t *mm = mk_manager(&cs, 128 * MIB, 256, 36 * MIB, NULL);
  ruda_handle_t a, b;
  ALLOC(mm, 30 * MIB, &a);
  ASSERT_UEQ(MEM(a)->loc.pool, 2);
  ruda_handle_release(&a);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 32 * MIB);
  ALLOC(mm, 1 * MIB, &b);
  ASSERT_UEQ(MEM(b)->loc.pool, 1);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 8 * MIB);
  ASSERT_UEQ(cs.deallocs, 1);
  ASSERT_UEQ(cs.failed, 0);
  ASSERT_UGE(cs.flushes, 1); /* deferred deallocations are performed */
  ruda_handle_release(&b);
  ruda__memory_manager_destroy(mm);
}

/* Sizes of two pools reserved and released in turn, one live at a time:
 * each pool's page, emptied just before the other pool's page allocation,
 * is spared, so after the first round the storage is never asked again
 * (without the grace every reservation took a page and freed one). */
TEST(sizes_in_turn_across_pools_take_no_page_after_the_first_round) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  static const uint64_t sizes[] = {1 * MIB, 4 * MIB, 1000, 300000};
  for (int round = 0; round < 50; round++) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      ruda_handle_t h;
      ALLOC(mm, sizes[i], &h);
      ruda_handle_release(&h);
    }
    if (round == 0) ASSERT_UEQ(cs.allocs, 2); /* pool 1's page, pool 2's */
  }
  ASSERT_UEQ(cs.allocs, 2);
  ASSERT_UEQ(cs.deallocs, 0);
  /* Both pages are empty: spared by the next page allocation (they were
   * emptied after the last one), given back by the one after. */
  ruda_handle_t big, big2;
  ALLOC(mm, 20 * MIB, &big);
  ASSERT_UEQ(cs.allocs, 3);
  ASSERT_UEQ(cs.deallocs, 0);
  ALLOC(mm, 120 * MIB, &big2);
  ASSERT_UEQ(cs.allocs, 4);
  ASSERT_UEQ(cs.deallocs, 2);
  ruda_handle_release(&big2);
  ruda_handle_release(&big);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  ruda__memory_manager_destroy(mm);
}

TEST(reclaim_keeps_busy_bound_persistent_and_exclusive_pages) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a, b, p, z, big;
  ALLOC(mm, 1 * MIB, &a); /* pool 1, page 8 MiB */
  ALLOC(mm, 4 * MIB, &b); /* pool 2, page 32 MiB */
  ALLOC(mm, 0, &z);       /* pool 0 (exclusive), a 0-byte page */
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_PERSISTENT);
  ALLOC(mm, 1000, &p);
  ruda__memory_set_mode(mm, RUDA_ALLOCATION_AUTO);
  uint64_t addr_a = addr_of(mm, &a);
  /* Pool 1's page is held by a binding only, the others are free. */
  ruda_binding_t bind = ruda_handle_into_binding(&a);
  ruda_handle_release(&b);
  ruda_handle_release(&z);
  ruda_handle_release(&p);
  ASSERT_UEQ(cs.allocs, 4);
  /* A new page for pool 3: pool 2's page, emptied since the last page
   * allocation, is spared once. */
  ALLOC(mm, 20 * MIB, &big);
  ASSERT_UEQ(MEM(big)->loc.pool, 3);
  ASSERT_UEQ(cs.deallocs, 0);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, (8 + 32 + 128) * MIB + 1024);
  /* The next new page (120 MiB does not fit beside `big`): now only pool
   * 2's empty page goes back. */
  ruda_handle_t big2;
  ALLOC(mm, 120 * MIB, &big2);
  ASSERT_UEQ(MEM(big2)->loc.pool, 3);
  ASSERT_UEQ(cs.allocs, 6);
  ASSERT_UEQ(cs.deallocs, 1);
  ASSERT_UEQ(mm->pools[2].npages, 0);
  ASSERT_UEQ(mm->pools[1].npages, 1);
  ruda_handle_release(&big2);
  ruda__storage_handle_t sh;
  ASSERT_OK(ruda__memory_resolve_binding(mm, &bind, &sh));
  ASSERT_UEQ(ruda__storage_handle_addr(&sh), addr_a);
  /* The persistent and exclusive free slices are still reused. */
  ALLOC(mm, 1000, &p);
  ASSERT_UEQ(MEM(p)->loc.pool, mm->npools);
  ALLOC(mm, 0, &z);
  ASSERT_UEQ(cs.allocs, 6);
  ruda_handle_release(&p);
  ruda_handle_release(&z);
  ruda_handle_release(&big);
  ruda_binding_release(&bind);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  ruda__memory_manager_destroy(mm);
}

TEST(large_slices_get_pages_of_their_own_size) {
  counting_storage_t cs;
  ruda__memory_manager_t *mm = default_manager(&cs);
  ruda_handle_t a, b, c, d, e;
  /* Over a quarter of S(32 MiB, 16 MiB)'s page: a page of 10 MiB + padding. */
  ALLOC(mm, 10 * MIB + 1, &a);
  ASSERT_UEQ(MEM(a)->loc.pool, 2);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, 10 * MIB + 256);
  /* Up to a quarter: a whole page, shared as before. */
  ALLOC(mm, 4 * MIB, &b);
  ALLOC(mm, 4 * MIB, &c);
  ASSERT_UEQ(MEM(c)->loc.pool, 2);
  ASSERT_UEQ(resolve(mm, &b).id, resolve(mm, &c).id);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, (10 + 32) * MIB + 256);
  /* The catch-all pool S(128 MiB, 128 MiB) too; the 20% rule's sizes above
   * max_slice_size keep whole pages (7 MiB in S(8 MiB, 2 MiB)). */
  ALLOC(mm, 100 * MIB, &d);
  ASSERT_UEQ(MEM(d)->loc.pool, 3);
  ALLOC(mm, 7 * MIB, &e);
  ASSERT_UEQ(MEM(e)->loc.pool, 1);
  ASSERT_UEQ(ruda__memory_usage(mm).bytes_reserved, (10 + 32 + 100 + 8) * MIB + 256);
  /* Once free, the own-size page is an ordinary page: first fit puts a
   * smaller request at its start, on the same storage allocation. */
  uint64_t addr_a = addr_of(mm, &a), id_a = resolve(mm, &a).id;
  ruda_handle_release(&a);
  ALLOC(mm, 9 * MIB, &a);
  ASSERT_UEQ(addr_of(mm, &a), addr_a);
  ASSERT_UEQ(resolve(mm, &a).id, id_a);
  ASSERT_UEQ(cs.allocs, 4);
  ruda_handle_release(&a);
  ruda_handle_release(&b);
  ruda_handle_release(&c);
  ruda_handle_release(&d);
  ruda_handle_release(&e);
  ruda__memory_cleanup(mm, true);
  ASSERT_UEQ(cs.outstanding, 0);
  ruda__memory_manager_destroy(mm);
}
