/* Memory layout descriptors: the layout strategy, shape and element size
 * of an allocation request. */
#include "ruda/types.h"

static ruda_memory_layout_descriptor_t make(ruda_memory_layout_strategy_t strategy,
                                            ruda_shape_t shape,
                                            size_t elem_size) {
  ruda_memory_layout_descriptor_t d;
  d.strategy = strategy;
  d.shape = shape;
  d.elem_size = elem_size;
  return d;
}

ruda_memory_layout_descriptor_t ruda_memory_layout_optimized(ruda_shape_t shape,
                                                             size_t elem_size) {
  return make(RUDA_LAYOUT_OPTIMIZED, shape, elem_size);
}

ruda_memory_layout_descriptor_t ruda_memory_layout_contiguous(ruda_shape_t shape,
                                                              size_t elem_size) {
  return make(RUDA_LAYOUT_CONTIGUOUS, shape, elem_size);
}
