/* Free-slice tree (free_tree.c): the free slices of one sliced page as a
 * treap by offset with max-size augmentation; first_fit returns the
 * lowest-offset slice >= size. The nodes are the slices themselves (their
 * left, right, tmax and prio fields). */
#ifndef RUDA_MEMORY_FREE_TREE_H
#define RUDA_MEMORY_FREE_TREE_H

#include <stdint.h>

#include "memory/pool_page.h"

ruda__slice_t *ruda__free_tree_insert(ruda__slice_t *root, ruda__slice_t *node);
ruda__slice_t *ruda__free_tree_remove(ruda__slice_t *root, ruda__slice_t *node);
ruda__slice_t *ruda__free_tree_first_fit(ruda__slice_t *root, uint64_t size);
static inline uint64_t ruda__free_tree_max(const ruda__slice_t *root) {
  return root ? root->tmax : 0;
}

#endif
