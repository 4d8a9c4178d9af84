/* Memory layout policies: Contiguous(align)
 * and Pitched(align) over one shared, lazily bound allocation. */
#include <string.h>

#include "memory/align.h"
#include "memory/layout_policy.h"
#include "memory/memory_handle.h"

static bool ruda__mul_ovf(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}

static bool ruda__round_up_ovf(uint64_t v, uint64_t a, uint64_t *out) {
  uint64_t p = ruda__padding(v, a);
  if (v > UINT64_MAX - p) return true;
  *out = v + p;
  return false;
}

static uint64_t ruda__next_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v && p < (1ull << 63)) p <<= 1;
  return p;
}

/* The alignment of a row `width` elements of `elem` bytes wide: `elem` for
 * a one-element row, else the row's byte width rounded up to a power of
 * two, at least 16 and at most `align`. */
static uint64_t ruda__optimal_align(uint64_t width, uint64_t elem, uint64_t align) {
  if (width == 1) return elem;
  uint64_t p = ruda__next_pow2(width * elem);
  if (p < 16) p = 16;
  if (p > align) p = align;
  return p;
}

/* Size and strides of one descriptor; true on overflow. */
static bool ruda__layout_one(const ruda__layout_policy_t *policy,
                             const ruda_memory_layout_descriptor_t *d, uint64_t *out_size,
                             ruda_strides_t *out_strides) {
  const ruda_shape_t *s = &d->shape;
  uint32_t rank = s->rank;
  uint64_t elem = d->elem_size;
  memset(out_strides, 0, sizeof *out_strides);
  out_strides->rank = rank;
  if (policy->kind == RUDA_LAYOUT_POLICY_CONTIGUOUS) {
    uint64_t n = 1;
    for (uint32_t i = rank; i-- > 0;) {
      out_strides->values[i] = n;
      if (ruda__mul_ovf(n, s->dims[i], &n)) return true;
    }
    return ruda__mul_ovf(n, elem, out_size);
  }
  uint64_t width = rank ? s->dims[rank - 1] : 1;
  uint64_t height = 1;
  for (uint32_t i = 0; i + 1 < rank; i++)
    if (ruda__mul_ovf(height, s->dims[i], &height)) return true;
  if (height == 0) height = 1;
  uint64_t row;
  if (ruda__mul_ovf(width, elem, &row)) return true;
  uint64_t pitch_align = d->strategy == RUDA_LAYOUT_OPTIMIZED
                             ? ruda__optimal_align(width, elem, policy->alignment)
                             : 1;
  uint64_t pitch;
  if (ruda__round_up_ovf(row, pitch_align, &pitch)) return true;
  if (ruda__mul_ovf(height, pitch, out_size)) return true;
  for (uint32_t i = 0; i < rank; i++) out_strides->values[i] = 1;
  if (rank > 1) {
    out_strides->values[rank - 2] = pitch / elem;
    for (uint32_t i = rank - 2; i-- > 0;)
      if (ruda__mul_ovf(out_strides->values[i + 1], s->dims[i + 1], &out_strides->values[i]))
        return true;
  }
  return false;
}

ruda_status_t ruda__layout_plan(const ruda__layout_policy_t *policy,
                                const ruda_memory_layout_descriptor_t *descs, size_t count,
                                ruda_memory_layout_t *out_layouts, uint64_t *out_total) {
  *out_total = 0;
  if (policy->kind != RUDA_LAYOUT_POLICY_CONTIGUOUS && policy->kind != RUDA_LAYOUT_POLICY_PITCHED)
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "unknown layout policy %d",
                              (int)policy->kind);
  uint64_t align = policy->alignment ? policy->alignment : 1;
  /* Views start at multiples of the alignment; the allocation ends where
   * the last view does (rounding it up too would count the pool's
   * alignment padding as bytes in use). */
  uint64_t total = 0, next = 0;
  for (size_t i = 0; i < count; i++) {
    const ruda_memory_layout_descriptor_t *d = &descs[i];
    if (d->elem_size == 0)
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "layout descriptor %zu has a zero element size", i);
    if (d->shape.rank > RUDA_MAX_RANK)
      return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT,
                                "layout descriptor %zu has rank %u (max %d)", i,
                                d->shape.rank, RUDA_MAX_RANK);
    uint64_t size, rounded;
    memset(&out_layouts[i], 0, sizeof out_layouts[i]);
    if (ruda__layout_one(policy, d, &size, &out_layouts[i].strides) ||
        ruda__round_up_ovf(size, align, &rounded) || next > UINT64_MAX - rounded)
      return ruda_status_size(RUDA_ERR_IO_BUFFER_TOO_BIG, UINT64_MAX);
    /* The view's offset and size wait in its handle until the base exists. */
    out_layouts[i].memory.offset_start = next;
    out_layouts[i].memory.offset_end = size;
    total = next + size;
    next += rounded;
  }
  *out_total = total;
  return NULL;
}

void ruda__layout_views(const ruda_handle_t *base, size_t count,
                        ruda_memory_layout_t *layouts) {
  for (size_t i = 0; i < count; i++) {
    ruda_handle_t *h = &layouts[i].memory;
    uint64_t off = h->offset_start, size = h->offset_end;
    *h = ruda_handle_clone(base);
    h->offset_start = off;
    h->offset_end = base->size - off - size;
  }
}

ruda_status_t ruda__layout_apply(const ruda__layout_policy_t *policy, ruda_device_id_t device,
                                 ruda_stream_id_t stream,
                                 const ruda_memory_layout_descriptor_t *descs, size_t count,
                                 ruda_handle_t *out_base, ruda_memory_layout_t *out_layouts) {
  memset(out_base, 0, sizeof *out_base);
  uint64_t total;
  ruda_status_t st = ruda__layout_plan(policy, descs, count, out_layouts, &total);
  if (st) return st;
  st = ruda__handle_create(total, device, stream, out_base);
  if (st) return st;
  ruda__layout_views(out_base, count, out_layouts);
  return NULL;
}
