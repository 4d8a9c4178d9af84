/* Layout policies (client side, no device round trip): several tensors as
 * views of one shared, lazily bound allocation. Defined in layout_policy.c. */
#ifndef RUDA_MEMORY_LAYOUT_POLICY_H
#define RUDA_MEMORY_LAYOUT_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"

typedef enum ruda__layout_policy_kind {
  RUDA_LAYOUT_POLICY_CONTIGUOUS = 0,
  RUDA_LAYOUT_POLICY_PITCHED = 1,
} ruda__layout_policy_kind_t;

typedef struct ruda__layout_policy {
  ruda__layout_policy_kind_t kind;
  uint64_t alignment;
} ruda__layout_policy_t;

/* Lays `count` descriptors out under the policy, without memory: the
 * strides of each view (out_layouts[i].strides) and the size of one
 * allocation holding them all, ending where the last view ends
 * (*out_total); views start at multiples of the policy's alignment.
 * out_layouts[i].memory keeps the view's offset in offset_start and its
 * size in offset_end until ruda__layout_views turns it into a handle; it
 * owns nothing. RUDA_ERR_INVALID_ARGUMENT for a zero elem_size or a rank
 * above RUDA_MAX_RANK; IoError::BufferTooBig when a size, stride or the
 * total overflows 64 bits. */
ruda_status_t ruda__layout_plan(const ruda__layout_policy_t *policy,
                                const ruda_memory_layout_descriptor_t *descs, size_t count,
                                ruda_memory_layout_t *out_layouts, uint64_t *out_total);

/* Turns planned layouts into views of `base` (a handle of the planned
 * total): each layouts[i].memory becomes a clone of base narrowed to its
 * view, owned by the caller. Cannot fail. */
void ruda__layout_views(const ruda_handle_t *base, size_t count, ruda_memory_layout_t *layouts);

/* Plan, then one new unbound base handle (*out_base, on `device` and
 * `stream`) and its views; the caller owns every returned handle. The
 * errors of ruda__layout_plan, and OutOfMemory. Thread-safe. */
ruda_status_t ruda__layout_apply(const ruda__layout_policy_t *policy, ruda_device_id_t device,
                                 ruda_stream_id_t stream,
                                 const ruda_memory_layout_descriptor_t *descs,
                                 size_t count, ruda_handle_t *out_base,
                                 ruda_memory_layout_t *out_layouts);

#endif
