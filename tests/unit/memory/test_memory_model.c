/* Randomized model test: thousands of random reserve / drop / clone /
 * cleanup / mode steps, each followed by a check of the manager against a
 * plain model of the live allocations:
 *   - live slices never overlap (and their bytes keep the stamp written at
 *     reservation time);
 *   - every live handle resolves, aligned, to the address it got first;
 *   - usage counters are exact; reserved equals the storage's outstanding
 *     bytes and is never below in use + padding;
 *   - failed reservations (OutOfMemory, BufferTooBig) change nothing but,
 *     for OutOfMemory, the return of whole free pages;
 *   - each pool's count of empty pages is exact, and a reservation that
 *     took a new page from the storage left no sliced pool with an empty
 *     page but those emptied since the page allocation before (ruda's
 *     bounded reclaim spares them once);
 *   - after dropping everything, an explicit cleanup returns every storage
 *     allocation. */
#include "memory_test_util.h"

enum { MAX_LIVE = 256 };

typedef struct live {
  ruda_handle_t h;
  uint64_t size, addr, id, offset;
  uint64_t stamp;
} live_t;

typedef struct model {
  live_t live[MAX_LIVE];
  size_t n;
  uint64_t in_use, padding;
  uint64_t align;
} model_t;

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Log-uniform sizes with some exact repeats (to hit persistent buckets and
 * exact fits) and some zeros. */
static uint64_t rand_size(uint64_t *s, uint64_t max) {
  uint64_t r = rng_next(s);
  if (r % 50 == 0) return 0;
  if (r % 7 == 0) return 4096;
  unsigned bits = 4 + (unsigned)(rng_next(s) % 21); /* 16 B .. 16 MiB */
  uint64_t v = (rng_next(s) % (1ull << bits)) + 1;
  return v > max ? max : v;
}

static int cmp_live(const void *a, const void *b) {
  const live_t *x = *(const live_t *const *)a, *y = *(const live_t *const *)b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  return 0;
}

/* Empty pages of pool `p`, counted page by page. */
static uint32_t count_empty_pages(const ruda__pool_t *p) {
  uint32_t n = 0;
  for (uint32_t k = 0; k < p->npages; k++) n += p->pages[k]->used_slices == 0;
  return n;
}

/* Empty pages of pool `p` that the last page allocation's reclaim spared
 * (emptied after the allocation before it). */
static uint32_t count_spared_pages(const ruda__memory_manager_t *mm, const ruda__pool_t *p) {
  uint32_t n = 0;
  for (uint32_t k = 0; k < p->npages; k++) {
    const ruda__page_t *pg = p->pages[k];
    n += pg->used_slices == 0 && pg->empty_since + 1 >= mm->store.page_allocs;
  }
  return n;
}

static void check(ruda__memory_manager_t *mm, counting_storage_t *cs, model_t *md) {
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  for (uint32_t i = 0; i <= mm->npools; i++) {
    const ruda__pool_t *p = i < mm->npools ? &mm->pools[i] : &mm->persistent;
    ASSERT_UEQ(p->empty_pages, count_empty_pages(p));
  }
  ASSERT_UEQ(u.number_allocs, md->n);
  ASSERT_UEQ(u.bytes_in_use, md->in_use);
  ASSERT_UEQ(u.bytes_padding, md->padding);
  ASSERT_UGE(u.bytes_reserved, u.bytes_in_use + u.bytes_padding);
  ASSERT_UEQ(u.bytes_reserved, cs->outstanding_bytes);
  live_t *sorted[MAX_LIVE];
  for (size_t i = 0; i < md->n; i++) {
    live_t *l = &md->live[i];
    ruda__storage_handle_t sh;
    ASSERT_OK(ruda__memory_resolve(mm, ruda__handle_memory(&l->h), 0, 0, &sh));
    ASSERT_UEQ(ruda__storage_handle_addr(&sh), l->addr);
    ASSERT_UEQ(sh.size, l->size);
    ASSERT_UEQ(sh.id, l->id);
    if (l->size >= 8) ASSERT_UEQ(*(const uint64_t *)(uintptr_t)l->addr, l->stamp);
    sorted[i] = l;
  }
  qsort(sorted, md->n, sizeof sorted[0], cmp_live);
  for (size_t i = 1; i < md->n; i++) {
    if (sorted[i]->id != sorted[i - 1]->id) continue;
    /* Zero-sized slices may share an offset with their successor. */
    ASSERT_ULE(sorted[i - 1]->offset + sorted[i - 1]->size, sorted[i]->offset);
  }
}

static void run_model(const ruda__memory_config_t *cfg, uint64_t seed, int steps,
                      uint64_t limit) {
  counting_storage_t cs;
  const uint64_t align = 256, max_page = 64 * MIB;
  ruda__memory_manager_t *mm = mk_manager(&cs, max_page, align, limit, cfg);
  ASSERT_NOT_NULL(mm);
  static model_t md;
  memset(&md, 0, sizeof md);
  md.align = align;
  uint64_t s = seed;
  int oom = 0, too_big = 0;
  for (int step = 0; step < steps; step++) {
    uint64_t op = rng_next(&s) % 100;
    if (op < 50 && md.n < MAX_LIVE) {
      uint64_t size = rand_size(&s, max_page);
      ruda_memory_usage_t before = ruda__memory_usage(mm);
      uint64_t allocs_before = cs.allocs;
      ruda_handle_t h;
      ruda_status_t st = try_alloc(mm, size, &h);
      if (cs.allocs != allocs_before)
        for (uint32_t i = 0; i < mm->npools; i++)
          if (mm->pools[i].opt.kind == RUDA_POOL_SLICED)
            ASSERT_UEQ(count_empty_pages(&mm->pools[i]), count_spared_pages(mm, &mm->pools[i]));
      if (st) {
        ruda_error_kind_t k = ruda_status_kind(st);
        ruda_status_free(st);
        ASSERT_TRUE(k == RUDA_ERR_IO_OUT_OF_MEMORY || k == RUDA_ERR_IO_BUFFER_TOO_BIG);
        if (k == RUDA_ERR_IO_OUT_OF_MEMORY) oom++; else too_big++;
        /* Nothing changed but, on OutOfMemory, whole free pages returned
         * to the storage before the retry. */
        ruda_memory_usage_t after = ruda__memory_usage(mm);
        ASSERT_UEQ(after.number_allocs, before.number_allocs);
        ASSERT_UEQ(after.bytes_in_use, before.bytes_in_use);
        if (k == RUDA_ERR_IO_BUFFER_TOO_BIG)
          ASSERT_UEQ(after.bytes_reserved, before.bytes_reserved);
        else
          ASSERT_ULE(after.bytes_reserved, before.bytes_reserved);
      } else {
        live_t *l = &md.live[md.n++];
        ruda__storage_handle_t sh = resolve(mm, &h);
        l->h = h;
        l->size = size;
        l->addr = ruda__storage_handle_addr(&sh);
        l->id = sh.id;
        l->offset = sh.offset;
        l->stamp = rng_next(&s);
        ASSERT_UEQ(l->addr % align, 0);
        if (size >= 8) *(uint64_t *)(uintptr_t)l->addr = l->stamp;
        md.in_use += size;
        md.padding += ruda__padding(size, align);
      }
    } else if (op < 88 && md.n > 0) {
      size_t i = (size_t)(rng_next(&s) % md.n);
      live_t *l = &md.live[i];
      if (op < 58) {
        /* A clone and a binding dropped again: nothing may change. */
        ruda_handle_t c = ruda_handle_clone(&l->h);
        ruda_binding_t b = ruda_handle_binding(&c);
        ruda_handle_release(&c);
        ruda_binding_release(&b);
      } else {
        md.in_use -= l->size;
        md.padding -= ruda__padding(l->size, align);
        ruda_handle_release(&l->h);
        md.live[i] = md.live[--md.n];
      }
    } else if (op < 91) {
      ruda__memory_cleanup(mm, true);
    } else if (op < 97) {
      ruda__memory_cleanup(mm, false);
    } else {
      ruda__memory_set_mode(mm, ruda__memory_mode(mm) == RUDA_ALLOCATION_AUTO
                                    ? RUDA_ALLOCATION_PERSISTENT
                                    : RUDA_ALLOCATION_AUTO);
    }
    check(mm, &cs, &md);
  }
  while (md.n) {
    md.n--;
    ruda_handle_release(&md.live[md.n].h);
  }
  ruda__memory_cleanup(mm, true);
  ruda_memory_usage_t u = ruda__memory_usage(mm);
  ASSERT_UEQ(u.number_allocs, 0);
  ASSERT_UEQ(u.bytes_reserved, 0);
  ASSERT_UEQ(cs.outstanding, 0);
  ASSERT_UEQ(cs.outstanding_bytes, 0);
  ASSERT_UEQ(cs.allocs, cs.deallocs);
  ASSERT_UGT(cs.allocs, 0);
  if (limit) ASSERT_GT(oom + too_big, 0);
  ruda__memory_manager_destroy(mm);
  ASSERT_TRUE(cs.destroyed);
}

TEST(model_subslices) {
  for (uint64_t seed = 1; seed <= 3; seed++) run_model(NULL, seed * 7919, 4000, 0);
}

TEST(model_subslices_with_storage_limit) {
  run_model(NULL, 42, 4000, 160 * MIB);
}

TEST(model_exclusive_pages) {
  ruda__memory_config_t cfg = {0};
  cfg.configuration = RUDA_MEMORY_EXCLUSIVE_PAGES;
  run_model(&cfg, 99, 4000, 0);
  run_model(&cfg, 1234, 3000, 48 * MIB);
}

TEST(model_custom_pools) {
  ruda__memory_config_t cfg = {0};
  cfg.configuration = RUDA_MEMORY_CUSTOM;
  cfg.num_custom = 3;
  /* A page size that is not a multiple of the alignment, a tiny exclusive
   * period and a catch-all sliced pool. */
  cfg.custom[0] = (ruda__pool_options_t){RUDA_POOL_SLICED, 1 * MIB + 100, 64 * 1024, 0, UINT64_MAX};
  cfg.custom[1] = (ruda__pool_options_t){RUDA_POOL_EXCLUSIVE, 0, 0, 4 * MIB, 20};
  cfg.custom[2] = (ruda__pool_options_t){RUDA_POOL_SLICED, 32 * MIB, 32 * MIB, 0, UINT64_MAX};
  run_model(&cfg, 5, 4000, 0);
}
