/* MemoryManagement of one stream: presets, routing, bind, lookup, cleanup,
 * mode and usage. See memory_handle_internal.h for how frees reach the
 * manager. */
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log_internal.h"
#include "base/status_internal.h"
#include "memory/exclusive_pool.h"
#include "memory/memory_internal.h"
#include "memory/memory_manager.h"
#include "memory/reuse_cache.h"
#include "memory/persistent_pool.h"
#include "memory/pool_page.h"
#include "memory/sliced_pool.h"
#include "ruda/log.h"

#define RUDA__MIB (1024ull * 1024ull)
#define RUDA__GIB (1024ull * RUDA__MIB)

/* ---- Memory log lines ---- */

static void ruda__mm_log(const ruda__memory_manager_t *mm, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void ruda__mm_log(const ruda__memory_manager_t *mm, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ruda__log_taggedv(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_BASIC, mm->name, fmt, ap);
  va_end(ap);
}

/* ---- Presets ---- */

static ruda__pool_options_t ruda__sliced_opt(uint64_t page, uint64_t max_slice) {
  ruda__pool_options_t o = {RUDA_POOL_SLICED, page, max_slice, 0, UINT64_MAX};
  return o;
}

static ruda__pool_options_t ruda__exclusive_opt(uint64_t max_alloc, uint64_t period) {
  ruda__pool_options_t o = {RUDA_POOL_EXCLUSIVE, 0, 0, max_alloc, period};
  return o;
}

uint32_t ruda__memory_presets(ruda__memory_configuration_t c, ruda_memory_properties_t props,
                              ruda__pool_options_t out[RUDA_MAX_POOLS]) {
  uint64_t m = props.max_page_size, a = props.alignment ? props.alignment : 1;
  uint32_t n = 0;
  if (c == RUDA_MEMORY_SUBSLICES) {
    out[n++] = ruda__exclusive_opt(0, UINT64_MAX);
    ruda__pool_options_t gen[RUDA_MAX_POOLS];
    uint32_t ng = 0;
    uint64_t current = m, base = 1;
    while (current >= 32 * RUDA__MIB && ng < RUDA_MAX_POOLS - 2) {
      current = ruda__round_up(current / 4, a);
      uint64_t max_slice = base < 64 ? current >> base : 0;
      gen[ng++] = ruda__sliced_opt(current, max_slice);
      base++;
    }
    while (ng > 0) out[n++] = gen[--ng];
    uint64_t last = m / a * a;
    out[n++] = ruda__sliced_opt(last, last);
  } else if (c == RUDA_MEMORY_EXCLUSIVE_PAGES) {
    const uint64_t min_bucket = 32 * 1024;
    const int num = 24;
    double lmin = log((double)min_bucket), lmax = log((double)(m > min_bucket ? m : min_bucket));
    for (int i = 0; i < num; i++) {
      double t = (double)i / (double)(num - 1);
      uint64_t size = i == num - 1 ? (m > min_bucket ? m : min_bucket)
                                   : (uint64_t)exp(lmin + t * (lmax - lmin));
      size = ruda__round_up(size, a);
      if (n > 0 && out[n - 1].max_alloc_size >= size) continue; /* duplicates */
      uint64_t period = 5000 * (uint64_t)llround(1.0 + (double)size / (double)RUDA__GIB);
      out[n++] = ruda__exclusive_opt(size, period);
    }
  }
  return n;
}

/* ---- Slots ---- */

static bool ruda__slot_reserve_one(ruda__memory_manager_t *mm) {
  if (mm->nfree_slots || mm->nslots < mm->slot_cap) return true;
  uint32_t cap = mm->slot_cap ? mm->slot_cap * 2 : 256;
  ruda__slice_t **ns = ruda__realloc(mm->slots, cap * sizeof *ns);
  if (!ns) return false;
  mm->slots = ns;
  uint32_t *nf = ruda__realloc(mm->free_slots, cap * sizeof *nf);
  if (!nf) return false;
  mm->free_slots = nf;
  mm->slot_cap = cap;
  return true;
}

static uint32_t ruda__slot_take(ruda__memory_manager_t *mm, ruda__slice_t *s) {
  uint32_t i = mm->nfree_slots ? mm->free_slots[--mm->nfree_slots] : mm->nslots++;
  mm->slots[i] = s;
  return i;
}

static void ruda__slot_give(ruda__memory_manager_t *mm, uint32_t i) {
  mm->slots[i] = NULL;
  mm->free_slots[mm->nfree_slots++] = i;
}

/* ---- Taking in freed descriptors (the inbox, memory_handle_internal.h) ---- */

static ruda__pool_t *ruda__pool_of(ruda__memory_manager_t *mm, uint32_t idx) {
  return idx < mm->npools ? &mm->pools[idx] : &mm->persistent;
}

/* Unbinds an import, hands the memory back to its producer and drops the
 * pool's reference. */
static void ruda__mm_free_external(ruda__memory_manager_t *mm, ruda_memory_t *m,
                                   ruda__external_t *x) {
  if (m) {
    ruda__slot_give(mm, x->slice.slot);
    atomic_store_explicit(&m->owner, NULL, memory_order_release);
    m->loc.init = 0;
  }
  if (x->prev) x->prev->next = x->next;
  else mm->externals = x->next;
  if (x->next) x->next->prev = x->prev;
  /* Normally the last release called it already; at destroy, with
   * handles still alive, it is called here. */
  if (m) ruda__memory_ext_release(m);
  ruda__free(x);
  if (m) ruda__memory_pool_release(m);
}

/* Gives the slice of `m` back to its pool and drops the pool's reference. */
static void ruda__mm_free_slice(ruda__memory_manager_t *mm, ruda_memory_t *m) {
  if (m->loc.pool == RUDA__EXTERNAL_POOL) {
    ruda__slice_t *xs = mm->slots[m->loc.slice];
    ruda__mm_free_external(mm, m, (ruda__external_t *)((char *)xs - offsetof(ruda__external_t, slice)));
    return;
  }
  ruda__slice_t *s = mm->slots[m->loc.slice];
  ruda__pool_t *p = ruda__pool_of(mm, m->loc.pool);
  ruda__slot_give(mm, s->slot);
  s->memory = NULL;
  atomic_store_explicit(&m->owner, NULL, memory_order_relaxed);
  m->loc.init = 0;
  if (p->persistent)
    ruda__persistent_on_free(&mm->store, p, s);
  else if (p->opt.kind == RUDA_POOL_SLICED)
    ruda__sliced_on_free(&mm->store, p, s);
  else
    ruda__exclusive_on_free(&mm->store, p, s);
  ruda__memory_pool_release(m); /* the last reference: frees m */
}

static void ruda__mm_drain(ruda__memory_manager_t *mm) {
  ruda_memory_t *m = ruda__memory_inbox_take(&mm->inbox);
  while (m) {
    ruda_memory_t *next = m->freed_next;
    ruda__mm_free_slice(mm, m);
    m = next;
  }
  if (!mm->externals) return;
  m = ruda__memory_inbox_take(&mm->ext_inbox);
  while (m) {
    ruda_memory_t *next = m->freed_next;
    ruda__mm_free_slice(mm, m);
    m = next;
  }
}

/* Takes the manager's slices back from the reuse cache, then drains: every
 * slice released so far is free in its pool afterwards. */
static void ruda__mm_drain_all(ruda__memory_manager_t *mm) {
  ruda__memory_inbox_evict(&mm->inbox);
  ruda__mm_drain(mm);
}

/* Releases put this manager's descriptors into the group's reuse cache
 * while it is on and the manager is in Auto mode (a Persistent-mode
 * reservation must not get a dynamic slice back). */
static void ruda__mm_update_reuse(ruda__memory_manager_t *mm) {
  ruda__memory_reuse_t *rc =
      mm->group && mm->mode == RUDA_ALLOCATION_AUTO ? mm->group->reuse : NULL;
  ruda__memory_inbox_set_reuse(&mm->inbox, rc);
}

/* ---- Create / destroy ---- */

static void ruda__pool_init(ruda__pool_t *p, const ruda__pool_options_t *o, uint32_t idx,
                            uint64_t alignment, bool persistent) {
  memset(p, 0, sizeof *p);
  p->opt = *o;
  p->index = idx;
  p->alignment = alignment;
  p->persistent = persistent;
  p->cur_avg = (double)(o->max_alloc_size / 2);
}

ruda_status_t ruda__memory_manager_create(ruda__storage_t storage,
                                          ruda_memory_properties_t props,
                                          const ruda__memory_config_t *cfg, const char *name,
                                          ruda__memory_manager_t **out) {
  *out = NULL;
  ruda_status_t st = NULL;
  ruda__pool_options_t opts[RUDA_MAX_POOLS];
  uint32_t n = 0;
  ruda__memory_config_t def = {0};
  if (!cfg) cfg = &def;
  if (props.alignment == 0 || props.max_page_size == 0) {
    st = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                            "memory properties need a non-zero alignment and max page size");
    goto fail_storage;
  }
  if (cfg->configuration == RUDA_MEMORY_CUSTOM) {
    if (cfg->num_custom == 0 || cfg->num_custom > RUDA_MAX_POOLS) {
      st = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "custom memory config with %u pools",
                              cfg->num_custom);
      goto fail_storage;
    }
    n = cfg->num_custom;
    memcpy(opts, cfg->custom, n * sizeof opts[0]);
  } else if (cfg->configuration == RUDA_MEMORY_SUBSLICES ||
             cfg->configuration == RUDA_MEMORY_EXCLUSIVE_PAGES) {
    n = ruda__memory_presets(cfg->configuration, props, opts);
  } else {
    st = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "unknown memory configuration %d",
                            (int)cfg->configuration);
    goto fail_storage;
  }
  for (uint32_t i = 0; i < n; i++) {
    const ruda__pool_options_t *o = &opts[i];
    bool bad = false;
    if (o->kind == RUDA_POOL_SLICED)
      bad = o->page_size == 0;
    else if (o->kind == RUDA_POOL_EXCLUSIVE)
      bad = o->max_alloc_size % props.alignment != 0;
    else
      bad = true;
    if (bad) {
      st = ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "memory pool %u: invalid options (sliced pages need a size, "
                              "exclusive max_alloc_size a multiple of the alignment %llu)",
                              i, (unsigned long long)props.alignment);
      goto fail_storage;
    }
  }
  ruda__memory_manager_t *mm = ruda__calloc(1, sizeof *mm);
  if (!mm) {
    st = ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, sizeof *mm);
    goto fail_storage;
  }
  ruda__memory_inbox_init(&mm->inbox);
  ruda__memory_inbox_init(&mm->ext_inbox);
  mm->store.storage = storage;
  mm->store.pools = mm->pools;
  mm->store.npools = n;
  mm->store.keep_empty_pages = cfg->keep_empty_pages;
  mm->props = props;
  mm->persistent_cfg = cfg->persistent;
  mm->mode = cfg->persistent == RUDA_PERSISTENT_MEMORY_ENFORCED ? RUDA_ALLOCATION_PERSISTENT
                                                         : RUDA_ALLOCATION_AUTO;
  snprintf(mm->name, sizeof mm->name, "%s", name ? name : "memory");
  mm->npools = n;
  for (uint32_t i = 0; i < n; i++) ruda__pool_init(&mm->pools[i], &opts[i], i, props.alignment, false);
  ruda__pool_options_t popt = ruda__exclusive_opt(props.max_page_size, UINT64_MAX);
  ruda__pool_init(&mm->persistent, &popt, n, props.alignment, true);
  mm->persistent.cur_avg = 0;
  for (uint32_t i = 0; i < n; i++) {
    const ruda__pool_options_t *o = &opts[i];
    if (o->kind == RUDA_POOL_SLICED)
      ruda__mm_log(mm, "Using memory pool: \n SlicedPages { page_size: %llu, max_slice_size: %llu }",
                   (unsigned long long)o->page_size, (unsigned long long)o->max_slice_size);
    else
      ruda__mm_log(mm, "Using memory pool: \n ExclusivePages { max_alloc_size: %llu }",
                   (unsigned long long)o->max_alloc_size);
  }
  *out = mm;
  return NULL;

fail_storage:
  if (storage.vt) storage.vt->destroy(storage.self);
  return st;
}

void ruda__memory_group_init(ruda__memory_group_t *g, ruda_device_id_t device,
                             ruda__memory_reuse_t *reuse) {
  memset(g, 0, sizeof *g);
  ruda_device_id_format(device, g->device, sizeof g->device);
  g->reuse = reuse;
}

void ruda__memory_manager_join(ruda__memory_manager_t *mm, ruda__memory_group_t *g,
                               uint64_t stream) {
  mm->group = g;
  mm->stream_id = stream;
  mm->group_next = g->first;
  g->first = mm;
  mm->inbox.reuse_set = ruda__reuse_set_of(stream);
  ruda__mm_update_reuse(mm);
}

ruda_memory_usage_t ruda__memory_group_usage(ruda__memory_group_t *g) {
  ruda_memory_usage_t u = {0, 0, 0, 0};
  for (ruda__memory_manager_t *mm = g->first; mm; mm = mm->group_next)
    u = ruda_memory_usage_combine(u, ruda__memory_usage(mm));
  return u;
}

static void ruda__pool_destroy(ruda__memory_manager_t *mm, ruda__pool_t *p) {
  for (uint32_t i = 0; i < p->npages; i++) {
    ruda__page_t *pg = p->pages[i];
    ruda__slice_t *s = pg->first ? pg->first : pg->slice;
    bool list = pg->first != NULL;
    while (s) {
      ruda__slice_t *n = list ? s->next : NULL;
      if (s->memory) {
        ruda_memory_t *m = s->memory;
        /* Unbind before dropping the pool's reference so that a handle still
         * alive elsewhere looks up as NotFound. */
        atomic_store_explicit(&m->owner, NULL, memory_order_release);
        m->loc.init = 0;
        ruda__memory_pool_release(m);
      }
      ruda__free(s);
      s = n;
    }
    mm->store.storage.vt->dealloc(mm->store.storage.self, &pg->storage);
    ruda__free(pg);
  }
  ruda__free(p->pages);
  ruda__free(p->page_max);
  if (p->persistent) ruda__persistent_deinit(p);
}

void ruda__memory_manager_destroy(ruda__memory_manager_t *mm) {
  if (!mm) return;
  if (mm->group) {
    ruda__memory_manager_t **pp = &mm->group->first;
    while (*pp && *pp != mm) pp = &(*pp)->group_next;
    if (*pp) *pp = mm->group_next;
  }
  ruda__mm_drain_all(mm);
  /* Imports still referenced go back to their producers now; a handle
   * still alive elsewhere then looks up as NotFound. */
  while (mm->externals) {
    ruda__external_t *x = mm->externals;
    ruda_memory_t *m = x->slice.memory;
    ruda__mm_free_external(mm, m, x);
  }
  for (uint32_t i = 0; i < mm->npools; i++) ruda__pool_destroy(mm, &mm->pools[i]);
  ruda__pool_destroy(mm, &mm->persistent);
  ruda__page_store_destroy(&mm->store);
  ruda__free(mm->slots);
  ruda__free(mm->free_slots);
  ruda__free(mm);
}

/* ---- Reserve + bind ---- */

/* Routes a reservation (docs/design/memory.md). Without `new_page`, a request
 * that free space cannot hold gives NULL with *out NULL instead of taking
 * a page (the caller first takes its slices back from the reuse cache). */
static ruda_status_t ruda__mm_reserve(ruda__memory_manager_t *mm, uint64_t size,
                                      ruda__slice_t **out, bool new_page) {
  mm->alloc_reserve_count++;
  ruda__pool_t *pp = &mm->persistent;
  if ((*out = ruda__persistent_try_reserve(&mm->store, pp, size))) return NULL;
  if (mm->mode == RUDA_ALLOCATION_PERSISTENT || ruda__persistent_has_size(pp, size))
    return new_page ? ruda__persistent_alloc(&mm->store, pp, size, out) : NULL;
  for (uint32_t i = 0; i < mm->npools; i++) {
    ruda__pool_t *p = &mm->pools[i];
    if (p->opt.kind == RUDA_POOL_SLICED) {
      if (!ruda__sliced_accept(p, size)) continue;
      if ((*out = ruda__sliced_try_reserve(&mm->store, p, size))) return NULL;
      return new_page ? ruda__sliced_alloc(&mm->store, p, size, out) : NULL;
    }
    if (size > p->opt.max_alloc_size) continue;
    if ((*out = ruda__exclusive_try_reserve(&mm->store, p, size))) return NULL;
    return new_page ? ruda__exclusive_alloc(&mm->store, p, size, out) : NULL;
  }
  return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, size);
}

static bool ruda__mm_has_free_pages(const ruda__memory_manager_t *mm) {
  for (uint32_t i = 0; i < mm->npools; i++)
    if (mm->pools[i].empty_pages) return true;
  return mm->persistent.empty_pages != 0;
}

/* The largest free block of the manager: a free slice of a sliced page,
 * a free exclusive page or a free persistent slice. */
static uint64_t ruda__mm_largest_free(const ruda__memory_manager_t *mm) {
  uint64_t best = 0;
  for (uint32_t i = 0; i <= mm->npools; i++) {
    const ruda__pool_t *p = i < mm->npools ? &mm->pools[i] : &mm->persistent;
    for (uint32_t k = 0; k < p->npages; k++) {
      const ruda__page_t *pg = p->pages[k];
      uint64_t f = pg->first ? p->page_max[k] : (pg->slice->used ? 0 : pg->storage.size);
      if (f > best) best = f;
    }
  }
  return best;
}

/* Replaces a storage refusal by the error a user can act on. Cold. */
static ruda_status_t ruda__mm_out_of_memory(ruda__memory_manager_t *mm, uint64_t size,
                                            ruda_status_t cause) {
  ruda_memory_usage_t own = ruda__memory_usage(mm);
  ruda_memory_usage_t dev = mm->group ? ruda__memory_group_usage(mm->group) : own;
  char req[32], lim[48], su[32], sr[32], du[32], dr[32], fr[32], where[96], vendor[160] = "";
  ruda_bytes_format(size, req, sizeof req);
  if (mm->store.storage.limit) {
    char l[32];
    ruda_bytes_format(mm->store.storage.limit, l, sizeof l);
    snprintf(lim, sizeof lim, "a limit of %s", l);
  } else {
    snprintf(lim, sizeof lim, "no known limit");
  }
  ruda_bytes_format(own.bytes_in_use, su, sizeof su);
  ruda_bytes_format(own.bytes_reserved, sr, sizeof sr);
  ruda_bytes_format(dev.bytes_in_use, du, sizeof du);
  ruda_bytes_format(dev.bytes_reserved, dr, sizeof dr);
  ruda_bytes_format(ruda__mm_largest_free(mm), fr, sizeof fr);
  if (mm->group)
    snprintf(where, sizeof where, "%s stream %llu", mm->group->device,
             (unsigned long long)mm->stream_id);
  else
    snprintf(where, sizeof where, "%s", mm->name);
  if (ruda_status_vendor_call(cause))
    snprintf(vendor, sizeof vendor, "; %s: %s", ruda_status_vendor_call(cause),
             ruda_status_vendor_code_name(cause) ? ruda_status_vendor_code_name(cause) : "");
  ruda_status_t st = ruda__status_size_reason(
      RUDA_ERR_IO_OUT_OF_MEMORY, size,
      "%s: tried to allocate %s (%llu bytes) with %s; %s in use and %s reserved on this "
      "stream, %s in use and %s reserved on the device; largest free block %s%s",
      where, req, (unsigned long long)size, lim, su, sr, du, dr, fr, vendor);
  ruda_status_free(cause);
  return st;
}

ruda_status_t ruda__memory_alloc(ruda__memory_manager_t *mm, ruda_memory_t *assigned,
                                 uint64_t size, uint64_t cursor) {
  if (!assigned)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "no descriptor to bind");
  if (assigned->loc.init || atomic_load_explicit(&assigned->owner, memory_order_relaxed))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "memory #%u.%u is already bound", assigned->slot,
                              ruda__memory_gen(assigned));
  /* No pool holds a size whose padding would wrap past 2^64. */
  if (size > UINT64_MAX - mm->props.alignment)
    return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, size);
  ruda__mm_drain(mm);
  /* Reserve the slot first: after the slice is taken nothing may fail. */
  if (!ruda__slot_reserve_one(mm)) return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, size);
  ruda__slice_t *s = NULL;
  mm->store.storage_refused = false;
  ruda_status_t st = NULL;
  if (ruda__memory_inbox_has_cached(&mm->inbox)) {
    /* Slices of this stream wait in the reuse cache: they are free, and
     * come back before a page is taken for a request they may hold. */
    st = ruda__mm_reserve(mm, size, &s, false);
    if (!st && !s) {
      mm->alloc_reserve_count--;
      ruda__mm_drain_all(mm);
    }
  }
  if (!st && !s) st = ruda__mm_reserve(mm, size, &s, true);
  if (st && ruda_status_kind(st) == RUDA_ERR_IO_OUT_OF_MEMORY && ruda__mm_has_free_pages(mm)) {
    /* Before failing, give whole free pages (of any pool) back to the
     * storage and retry once: the memory the request needs may sit unused
     * in another pool. */
    ruda_status_free(st);
    ruda__mm_log(mm, "Out of memory for %llu bytes: returning free pages and retrying",
                 (unsigned long long)size);
    ruda__memory_cleanup(mm, true);
    mm->alloc_reserve_count--;
    st = ruda__mm_reserve(mm, size, &s, true);
  }
  if (st && mm->store.storage_refused) {
    /* Last try: a page of the request's own size, for a storage whose
     * limit (or what is left of it) is below the pool's page size. */
    ruda_status_free(st);
    mm->store.exact_pages = true;
    mm->alloc_reserve_count--;
    st = ruda__mm_reserve(mm, size, &s, true);
    mm->store.exact_pages = false;
    if (st && mm->store.storage_refused) st = ruda__mm_out_of_memory(mm, size, st);
  }
  if (st) return st;
  s->cursor = cursor;
  s->memory = assigned;
  s->slot = ruda__slot_take(mm, s);
  assigned->loc.pool = s->page->pool;
  assigned->loc.slice = s->slot;
  assigned->loc.page = s->page->id;
  assigned->loc.init = 1;
  atomic_store_explicit(&assigned->owner, &mm->inbox, memory_order_release);
  /* The pool's own reference, published after the owner. */
  ruda__memory_pool_retain(assigned);
  return NULL;
}

ruda_status_t ruda__memory_import(ruda__memory_manager_t *mm, ruda_memory_t *assigned,
                                  const ruda__external_memory_t *ext) {
  if (!assigned || !ext)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "no descriptor to bind");
  if (assigned->loc.init || atomic_load_explicit(&assigned->owner, memory_order_relaxed))
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "memory #%u.%u is already bound",
                              assigned->slot, ruda__memory_gen(assigned));
  ruda__mm_drain(mm);
  ruda__external_t *x = ruda__calloc(1, sizeof *x);
  if (!x || !ruda__slot_reserve_one(mm)) {
    ruda__free(x);
    return ruda_status_size(RUDA_ERR_IO_OUT_OF_MEMORY, ext->size);
  }
  x->page.storage.base = ext->base;
  x->page.storage.size = ext->size;
  x->page.pool = RUDA__EXTERNAL_POOL;
  x->page.slice = &x->slice;
  x->slice.page = &x->page;
  x->slice.memory = assigned;
  x->slice.size = ext->size;
  x->slice.used = true;
  assigned->ext_ctx = ext->ctx;
  atomic_store_explicit(&assigned->ext_release, ext->release, memory_order_release);
  x->next = mm->externals;
  if (x->next) x->next->prev = x;
  mm->externals = x;
  x->slice.slot = ruda__slot_take(mm, &x->slice);
  assigned->loc.pool = RUDA__EXTERNAL_POOL;
  assigned->loc.slice = x->slice.slot;
  assigned->loc.page = 0;
  assigned->loc.init = 1;
  atomic_store_explicit(&assigned->owner, &mm->ext_inbox, memory_order_release);
  ruda__memory_pool_retain(assigned);
  return NULL;
}

/* ---- Lookup ---- */

static ruda_status_t ruda__mm_find(ruda__memory_manager_t *mm, const ruda_memory_t *m,
                                   ruda__slice_t **out) {
  if (!m) return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "No memory handle given");
  ruda__memory_inbox_t *owner = atomic_load_explicit(&((ruda_memory_t *)m)->owner, memory_order_relaxed);
  if (owner != &mm->inbox && owner != &mm->ext_inbox)
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND,
                              "Memory #%u.%u isn't bound in this memory management (%s)",
                              m->slot, ruda__memory_gen(m), mm->name);
  if (!m->loc.init || m->loc.slice >= mm->nslots)
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "Reserved memory isn't initialized");
  ruda__slice_t *s = mm->slots[m->loc.slice];
  if (!s || s->memory != m)
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "Memory #%u.%u is stale", m->slot,
                              ruda__memory_gen(m));
  *out = s;
  return NULL;
}

static ruda_status_t ruda__mm_view(const ruda_memory_t *m, const ruda__slice_t *s,
                                   uint64_t offset_start, uint64_t offset_end,
                                   ruda__storage_handle_t *out) {
  if (offset_start > s->size || offset_end > s->size - offset_start)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                              "view [+%llu, -%llu] is outside the %llu bytes of memory #%u.%u",
                              (unsigned long long)offset_start, (unsigned long long)offset_end,
                              (unsigned long long)s->size, m->slot, ruda__memory_gen(m));
  *out = s->page->storage;
  out->offset += s->offset + offset_start;
  out->size = s->size - offset_start - offset_end;
  return NULL;
}

ruda_status_t ruda__memory_resolve(ruda__memory_manager_t *mm, ruda_memory_t *m,
                                   uint64_t offset_start, uint64_t offset_end,
                                   ruda__storage_handle_t *out) {
  ruda__slice_t *s = NULL;
  ruda_status_t st = ruda__mm_find(mm, m, &s);
  if (st) return st;
  return ruda__mm_view(m, s, offset_start, offset_end, out);
}

RUDA__HOT
ruda_status_t ruda__memory_resolve_binding(ruda__memory_manager_t *mm, const ruda_binding_t *b,
                                           ruda__storage_handle_t *out) {
  ruda_memory_t *m = ruda__binding_memory(b);
  if (!m) {
    if (ruda_binding_is_empty(b))
      return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "No memory handle given");
    return ruda_status_create(RUDA_ERR_IO_NOT_FOUND, "handle #%u.%u was released",
                              (unsigned)b->id, (unsigned)(b->id >> 32));
  }
  ruda__slice_t *s = NULL;
  ruda_status_t st = ruda__mm_find(mm, m, &s);
  if (st) return st;
  if (b->size != s->size)
    return ruda_status_create(RUDA_ERR_INVALID_HANDLE,
                              "handle #%u.%u says its allocation holds %llu bytes; the device "
                              "allocated %llu",
                              m->slot, ruda__memory_gen(m), (unsigned long long)b->size,
                              (unsigned long long)s->size);
  if (b->offset_start > s->size || b->offset_end > s->size - b->offset_start)
    return ruda_status_create(RUDA_ERR_INVALID_HANDLE,
                              "handle #%u.%u views [+%llu, -%llu] of an allocation of %llu bytes",
                              m->slot, ruda__memory_gen(m), (unsigned long long)b->offset_start,
                              (unsigned long long)b->offset_end, (unsigned long long)s->size);
  return ruda__mm_view(m, s, b->offset_start, b->offset_end, out);
}

ruda_status_t ruda__memory_cursor(ruda__memory_manager_t *mm, ruda_memory_t *m, uint64_t *out) {
  ruda__slice_t *s = NULL;
  ruda_status_t st = ruda__mm_find(mm, m, &s);
  if (st) return st;
  *out = s->cursor;
  return NULL;
}

bool ruda__memory_owns(ruda__memory_manager_t *mm, const ruda_memory_t *m) {
  ruda__slice_t *s = NULL;
  ruda_status_t st = ruda__mm_find(mm, m, &s);
  if (st) {
    ruda_status_free(st);
    return false;
  }
  return true;
}

/* ---- Cleanup, mode, usage ---- */

void ruda__memory_cleanup(ruda__memory_manager_t *mm, bool explicit_) {
  if (explicit_) ruda__mm_drain_all(mm);
  else ruda__mm_drain(mm);
  if (explicit_) {
    /* The totals are only for the log line. */
    bool log = ruda_log_enabled(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_BASIC);
    uint64_t before = log ? ruda__memory_usage(mm).bytes_reserved : 0;
    ruda__persistent_cleanup(&mm->store, &mm->persistent);
    ruda__page_store_flush(&mm->store);
    for (uint32_t i = 0; i < mm->npools; i++) {
      ruda__pool_t *p = &mm->pools[i];
      if (p->opt.kind == RUDA_POOL_SLICED)
        ruda__pool_free_empty_pages(&mm->store, p);
      else
        ruda__exclusive_cleanup(&mm->store, p, mm->alloc_reserve_count, true);
      ruda__page_store_flush(&mm->store);
    }
    if (log)
      ruda__mm_log(mm, "Manual memory cleanup: reserved %llu => %llu bytes",
                   (unsigned long long)before,
                   (unsigned long long)ruda__memory_usage(mm).bytes_reserved);
    return;
  }
  for (uint32_t i = 0; i < mm->npools; i++) {
    ruda__pool_t *p = &mm->pools[i];
    if (p->opt.kind != RUDA_POOL_EXCLUSIVE) continue;
    uint32_t before = p->npages;
    ruda__exclusive_cleanup(&mm->store, p, mm->alloc_reserve_count, false);
    if (p->npages != before) ruda__page_store_flush(&mm->store);
  }
}

static const char *ruda__mode_name(ruda_memory_allocation_mode_t m) {
  return m == RUDA_ALLOCATION_PERSISTENT ? "Persistent" : "Auto";
}

void ruda__memory_set_mode(ruda__memory_manager_t *mm, ruda_memory_allocation_mode_t mode) {
  if (mm->persistent_cfg != RUDA_PERSISTENT_MEMORY_ENABLED) return;
  if (mode != RUDA_ALLOCATION_AUTO && mode != RUDA_ALLOCATION_PERSISTENT) return;
  if (mode != mm->mode)
    ruda__mm_log(mm, "Setting memory allocation mode: from %s => %s", ruda__mode_name(mm->mode),
                 ruda__mode_name(mode));
  mm->mode = mode;
  ruda__mm_update_reuse(mm);
}

ruda_memory_allocation_mode_t ruda__memory_mode(const ruda__memory_manager_t *mm) {
  return mm->mode;
}

ruda_memory_usage_t ruda__memory_usage(const ruda__memory_manager_t *cmm) {
  /* Draining changes no observable state but the counters: the manager is
   * logically const here. */
  ruda__memory_manager_t *mm = (ruda__memory_manager_t *)cmm;
  ruda__mm_drain_all(mm);
  ruda_memory_usage_t u = mm->persistent.usage;
  for (uint32_t i = 0; i < mm->npools; i++) u = ruda_memory_usage_combine(u, mm->pools[i].usage);
  return u;
}

#define RUDA__APPEND(...)                                                       \
  do {                                                                          \
    int n_ = snprintf(cap > len ? buf + len : NULL, cap > len ? cap - len : 0,  \
                      __VA_ARGS__);                                             \
    if (n_ > 0) len += (size_t)n_;                                              \
  } while (0)

size_t ruda__memory_report(const ruda__memory_manager_t *cmm, char *buf, size_t cap) {
  ruda__memory_manager_t *mm = (ruda__memory_manager_t *)cmm;
  ruda_memory_usage_t total = ruda__memory_usage(mm);
  size_t len = 0;
  char a[32], b[32], c[32], d[32];
  if (cap) buf[0] = '\0';
  RUDA__APPEND("[%s] Memory pools (mode %s):\n", mm->name, ruda__mode_name(mm->mode));
  for (uint32_t i = 0; i <= mm->npools; i++) {
    const ruda__pool_t *p = i < mm->npools ? &mm->pools[i] : &mm->persistent;
    if (p->persistent) {
      ruda_bytes_format(p->opt.max_alloc_size, a, sizeof a);
      RUDA__APPEND("  Pool %u: Persistent { max_alloc_size: %s, buckets: %u }", i, a,
                   p->nbuckets);
    } else if (p->opt.kind == RUDA_POOL_SLICED) {
      ruda_bytes_format(p->opt.page_size, a, sizeof a);
      ruda_bytes_format(p->opt.max_slice_size, b, sizeof b);
      RUDA__APPEND("  Pool %u: SlicedPages { page_size: %s, max_slice_size: %s }", i, a, b);
    } else {
      ruda_bytes_format(p->opt.max_alloc_size, a, sizeof a);
      RUDA__APPEND("  Pool %u: ExclusivePages { max_alloc_size: %s }", i, a);
    }
    ruda_bytes_format(p->usage.bytes_in_use, a, sizeof a);
    ruda_bytes_format(p->usage.bytes_padding, b, sizeof b);
    ruda_bytes_format(p->usage.bytes_reserved, c, sizeof c);
    uint64_t free_bytes = 0;
    for (uint32_t k = 0; k < p->npages; k++)
      free_bytes += p->pages[k]->first ? p->pages[k]->free_bytes
                                       : (p->pages[k]->slice->used ? 0
                                                                   : p->pages[k]->storage.size);
    ruda_bytes_format(free_bytes, d, sizeof d);
    RUDA__APPEND(": pages %u, allocations %llu, in use %s, padding %s, free %s, reserved %s\n",
                 p->npages, (unsigned long long)p->usage.number_allocs, a, b, d, c);
  }
  char ub[512];
  ruda_memory_usage_format(&total, ub, sizeof ub);
  RUDA__APPEND("%s", ub);
  return len;
}
