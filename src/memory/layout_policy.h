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

/* Applies the policy to `count` descriptors: creates one new unbound base
 * handle (*out_base, on `device` and `stream`, sized to end where the last
 * view ends) and one offset view per descriptor (out_layouts[i].memory is a
 * handle clone narrowed to the descriptor, out_layouts[i].strides its
 * strides); views start at multiples of the policy's alignment. The caller
 * owns every returned handle. RUDA_ERR_INVALID_ARGUMENT for a zero
 * elem_size or a rank above RUDA_MAX_RANK; IoError::BufferTooBig when a
 * size, stride or the total overflows 64 bits; OutOfMemory. Thread-safe. */
ruda_status_t ruda__layout_apply(const ruda__layout_policy_t *policy, ruda_device_id_t device,
                                 ruda_stream_id_t stream,
                                 const ruda_memory_layout_descriptor_t *descs,
                                 size_t count, ruda_handle_t *out_base,
                                 ruda_memory_layout_t *out_layouts);

#endif
