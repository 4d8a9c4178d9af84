/* `ruda bench memory`: the pooled memory manager against the allocators it
 * replaces, measured in the same process.
 *
 *   reserve_release_mixed            ns per reserve + release, steady state,
 *                                    sizes 64 B .. 64 MiB; baseline malloc/free
 *   reserve_release_mixed_vs_storage the same; baseline the host storage's own
 *                                    alloc/dealloc (what an unpooled runtime pays)
 *   fragmentation_mixed              peak reserved / peak in use over a long
 *                                    random workload (~1024 live allocations);
 *                                    baseline 1.0 (no waste)
 *   fragmentation_mixed_few_live     the same with ~128 live allocations
 *   handle_check_bind_release        ns per checked binding of a handle (what
 *                                    the client does per handle argument:
 *                                    the table lookup, generation, device,
 *                                    size and offset checks, the CAS retain)
 *                                    and its release; baseline an unchecked
 *                                    atomic retain + release of a pointer
 *                                    (what handles cost before the checks)
 *
 * The manager is driven directly, as a server's worker would: a new
 * descriptor per request, ruda__memory_alloc, and the release of the last
 * handle. Sizes are log-uniform, so every pool is exercised.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "harness.h"
#include "ruda/client.h"

#define BM_MIB (1024ull * 1024ull)

enum { BM_SIZES = 4096, BM_LIVE = 32 };

static uint64_t bm_rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Log-uniform in [64 B, 64 MiB]. */
static uint64_t bm_size(uint64_t *s) {
  unsigned bits = 6 + (unsigned)(bm_rng(s) % 20); /* 2^6 .. 2^25 */
  uint64_t lo = 1ull << bits;
  return lo + bm_rng(s) % lo; /* [2^bits, 2^(bits+1)) */
}

static const ruda_memory_properties_t bm_props = {512 * BM_MIB, 64};

typedef struct bm_ctx {
  uint64_t sizes[BM_SIZES];
  size_t i;
  /* ruda */
  ruda__memory_manager_t *mm;
  ruda_handle_t live[BM_LIVE];
  /* malloc */
  void *ptrs[BM_LIVE];
  /* storage */
  ruda__storage_t storage;
  ruda__storage_handle_t sh[BM_LIVE];
  bool sh_live[BM_LIVE];
  bool failed;
} bm_ctx_t;

static void bm_step_ruda(void *p) {
  bm_ctx_t *c = p;
  size_t k = c->i % BM_LIVE;
  uint64_t size = c->sizes[c->i++ % BM_SIZES];
  ruda_handle_release(&c->live[k]);
  ruda_memory_t *m = ruda__memory_new();
  ruda_status_t st = m ? ruda__memory_alloc(c->mm, m, size, 0) : NULL;
  if (!m || st) {
    ruda_status_free(st);
    c->failed = true;
  }
  c->live[k] = ruda__handle_wrap(m, size, (ruda_stream_id_t){0});
  if (st) ruda_handle_release(&c->live[k]);
}

static void bm_step_malloc(void *p) {
  bm_ctx_t *c = p;
  size_t k = c->i % BM_LIVE;
  uint64_t size = c->sizes[c->i++ % BM_SIZES];
  free(c->ptrs[k]);
  c->ptrs[k] = malloc((size_t)size);
  if (!c->ptrs[k]) c->failed = true;
}

static void bm_step_storage(void *p) {
  bm_ctx_t *c = p;
  size_t k = c->i % BM_LIVE;
  uint64_t size = c->sizes[c->i++ % BM_SIZES];
  if (c->sh_live[k]) c->storage.vt->dealloc(c->storage.self, &c->sh[k]);
  ruda_status_t st = c->storage.vt->alloc(c->storage.self, size, &c->sh[k]);
  c->sh_live[k] = st == NULL;
  if (st) {
    ruda_status_free(st);
    c->failed = true;
  }
}

static ruda__memory_manager_t *bm_manager(void) {
  ruda__storage_t storage;
  ruda_status_t st = ruda__host_storage_create(bm_props.alignment, 0, &storage);
  if (st) {
    ruda_status_free(st);
    return NULL;
  }
  ruda__memory_manager_t *mm = NULL;
  st = ruda__memory_manager_create(storage, bm_props, NULL, "bench", &mm);
  if (st) ruda_status_free(st);
  return mm;
}

static void bm_reserve_release(ruda_bench_t *b) {
  bool quick = ruda_bench_quick(b);
  size_t reps = quick ? 5 : 15, inner = quick ? 20000 : 100000;
  bm_ctx_t *c = calloc(1, sizeof *c);
  if (!c) {
    ruda_bench_skip(b, "memory", "reserve_release_mixed", "out of host memory");
    return;
  }
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < BM_SIZES; i++) c->sizes[i] = bm_size(&seed);

  c->mm = bm_manager();
  if (!c->mm) {
    ruda_bench_skip(b, "memory", "reserve_release_mixed", "cannot create a memory manager");
    free(c);
    return;
  }
  /* Warm-up covers the whole size sequence, so the pools reach steady state. */
  ruda_bench_stats_t r = ruda_bench_measure(bm_step_ruda, c, BM_SIZES, reps, inner);
  for (size_t k = 0; k < BM_LIVE; k++) ruda_handle_release(&c->live[k]);
  ruda__memory_manager_destroy(c->mm);

  c->i = 0;
  ruda_bench_stats_t m = ruda_bench_measure(bm_step_malloc, c, BM_SIZES, reps, inner);
  for (size_t k = 0; k < BM_LIVE; k++) free(c->ptrs[k]);

  c->i = 0;
  ruda_status_t st = ruda__host_storage_create(bm_props.alignment, 0, &c->storage);
  if (st) {
    ruda_status_free(st);
    ruda_bench_skip(b, "memory", "reserve_release_mixed_vs_storage", "no host storage");
  } else {
    ruda_bench_stats_t s = ruda_bench_measure(bm_step_storage, c, BM_SIZES, reps, inner);
    for (size_t k = 0; k < BM_LIVE; k++)
      if (c->sh_live[k]) c->storage.vt->dealloc(c->storage.self, &c->sh[k]);
    c->storage.vt->destroy(c->storage.self);
    if (c->failed)
      ruda_bench_skip(b, "memory", "reserve_release_mixed_vs_storage", "an allocation failed");
    else
      ruda_bench_report(b, "memory", "reserve_release_mixed_vs_storage", "ns/op", r, s,
                        "host storage alloc/dealloc", true);
  }
  if (c->failed)
    ruda_bench_skip(b, "memory", "reserve_release_mixed", "an allocation failed");
  else
    ruda_bench_report(b, "memory", "reserve_release_mixed", "ns/op", r, m, "malloc/free", true);
  free(c);
}

/* A random walk of the live set around `target` allocations (between 0 and
 * 2 * target, binomially distributed around target). */
static void bm_fragmentation(ruda_bench_t *b, const char *case_name, size_t target) {
  const size_t cap = 2 * target;
  size_t steps = ruda_bench_quick(b) ? 50000 : 400000;
  ruda__memory_manager_t *mm = bm_manager();
  ruda_handle_t *live = calloc(cap, sizeof *live);
  if (!mm || !live) {
    ruda_bench_skip(b, "memory", case_name, "cannot create a memory manager");
    ruda__memory_manager_destroy(mm);
    free(live);
    return;
  }
  uint64_t seed = 12345, in_use = 0, peak_in_use = 0, peak_reserved = 0;
  size_t n = 0;
  bool failed = false;
  for (size_t step = 0; step < steps && !failed; step++) {
    /* Bias towards `target` live allocations. */
    bool grow = n == 0 || (n < cap && bm_rng(&seed) % (2 * target) >= n);
    if (grow) {
      uint64_t size = bm_size(&seed);
      ruda_memory_t *m = ruda__memory_new();
      ruda_status_t st = m ? ruda__memory_alloc(mm, m, size, 0) : NULL;
      if (!m || st) {
        ruda_status_free(st);
        if (m) ruda__memory_release_handle(m);
        failed = true;
        break;
      }
      live[n] = ruda__handle_wrap(m, size, (ruda_stream_id_t){0});
      n++;
      in_use += size;
      if (in_use > peak_in_use) peak_in_use = in_use;
      ruda_memory_usage_t u = ruda__memory_usage(mm);
      if (u.bytes_reserved > peak_reserved) peak_reserved = u.bytes_reserved;
    } else {
      size_t k = (size_t)(bm_rng(&seed) % n);
      in_use -= live[k].size;
      ruda_handle_release(&live[k]);
      live[k] = live[--n];
    }
  }
  while (n) ruda_handle_release(&live[--n]);
  ruda__memory_manager_destroy(mm);
  free(live);
  if (failed || peak_in_use == 0) {
    ruda_bench_skip(b, "memory", case_name, "an allocation failed");
    return;
  }
  double ratio = (double)peak_reserved / (double)peak_in_use;
  ruda_bench_stats_t r = {ratio, ratio, ratio, 1};
  ruda_bench_stats_t base = {1.0, 1.0, 1.0, 1};
  ruda_bench_report(b, "memory", case_name, "peak reserved/in use", r, base,
                    "ideal (no waste)", true);
}

typedef struct bm_handle_ctx {
  ruda_handle_t h;
  ruda_device_id_t dev;
  _Atomic uint64_t refs;
  bool failed;
} bm_handle_ctx_t;

static void bm_step_handle_check(void *p) {
  bm_handle_ctx_t *c = p;
  ruda_binding_t b;
  ruda_status_t st = ruda__handle_bind(&c->h, c->dev, "bench", &b);
  if (st) {
    ruda_status_free(st);
    c->failed = true;
  }
  ruda_binding_release(&b);
}

static void bm_step_unchecked(void *p) {
  bm_handle_ctx_t *c = p;
  atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel);
}

static void bm_handle_check(ruda_bench_t *b) {
  bool quick = ruda_bench_quick(b);
  size_t reps = quick ? 5 : 15, inner = quick ? 200000 : 1000000;
  bm_handle_ctx_t c;
  memset(&c, 0, sizeof c);
  c.dev = (ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0};
  ruda_status_t st = ruda__handle_create(4096, c.dev, (ruda_stream_id_t){0}, &c.h);
  if (ruda_bench_fail_status(b, "memory", "handle_check_bind_release", st)) return;
  ruda_bench_stats_t r = ruda_bench_measure(bm_step_handle_check, &c, 1000, reps, inner);
  ruda_bench_stats_t u = ruda_bench_measure(bm_step_unchecked, &c, 1000, reps, inner);
  ruda_handle_release(&c.h);
  if (c.failed)
    ruda_bench_skip(b, "memory", "handle_check_bind_release", "a check failed");
  else
    ruda_bench_report(b, "memory", "handle_check_bind_release", "ns/op", r, u,
                      "unchecked atomic retain/release", true);
}

void ruda_bench_memory(ruda_bench_t *b) {
  const char *name = ruda_bench_device(b);
  ruda_device_id_t dev = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_status_t st = name ? ruda_device_parse(name, &dev) : NULL;
  if (st) {
    ruda_bench_fail_status(b, "memory", "reserve_release_mixed", st);
    return;
  }
  if (dev.type_id != RUDA_DEVICE_TYPE_CPU) {
    /* The cases drive a manager over the host storage; the device storage's
     * cases (against cuMemAlloc/cuMemAllocAsync) are not written yet. */
    ruda_bench_skip(b, "memory", "reserve_release_mixed",
                    "only the host storage is benchmarked (run with --device cpu)");
    return;
  }
  bm_reserve_release(b);
  /* ~1000 live tensors: a model's working set. */
  bm_fragmentation(b, "fragmentation_mixed", 1024);
  /* ~128 live: in use is dominated by a handful of allocations of up to
   * half a page, the hardest case for page-based pools. */
  bm_fragmentation(b, "fragmentation_mixed_few_live", 128);
  bm_handle_check(b);
}
