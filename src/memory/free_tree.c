/* The free slices of one sliced page, as a treap ordered by offset where
 * every node also knows the largest free slice below it. First fit ("the
 * first free slice, in page order, that is large enough") is then one
 * descent: O(log n) instead of a walk over every slice.
 * Priorities are a hash of the offset, so the tree shape is random-like and
 * deterministic. */
#include <stddef.h>

#include "memory/free_tree.h"

static uint64_t ruda__mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void ruda__tree_update(ruda__slice_t *t) {
  uint64_t m = t->size;
  if (t->left && t->left->tmax > m) m = t->left->tmax;
  if (t->right && t->right->tmax > m) m = t->right->tmax;
  t->tmax = m;
}

/* Splits `t` into offsets < key (*l) and >= key (*r). */
static void ruda__tree_split(ruda__slice_t *t, uint64_t key, ruda__slice_t **l,
                             ruda__slice_t **r) {
  if (!t) {
    *l = *r = NULL;
    return;
  }
  if (t->offset < key) {
    ruda__tree_split(t->right, key, &t->right, r);
    *l = t;
  } else {
    ruda__tree_split(t->left, key, l, &t->left);
    *r = t;
  }
  ruda__tree_update(t);
}

static ruda__slice_t *ruda__tree_merge(ruda__slice_t *l, ruda__slice_t *r) {
  if (!l) return r;
  if (!r) return l;
  if (l->prio > r->prio) {
    l->right = ruda__tree_merge(l->right, r);
    ruda__tree_update(l);
    return l;
  }
  r->left = ruda__tree_merge(l, r->left);
  ruda__tree_update(r);
  return r;
}

ruda__slice_t *ruda__free_tree_insert(ruda__slice_t *root, ruda__slice_t *node) {
  ruda__slice_t *l, *r;
  node->left = node->right = NULL;
  node->prio = ruda__mix64(node->offset ^ (uint64_t)(uintptr_t)node->page);
  node->tmax = node->size;
  ruda__tree_split(root, node->offset, &l, &r);
  return ruda__tree_merge(ruda__tree_merge(l, node), r);
}

ruda__slice_t *ruda__free_tree_remove(ruda__slice_t *root, ruda__slice_t *node) {
  ruda__slice_t *l, *m, *r;
  ruda__tree_split(root, node->offset, &l, &m);
  ruda__tree_split(m, node->offset + 1, &m, &r);
  node->left = node->right = NULL;
  return ruda__tree_merge(l, r);
}

ruda__slice_t *ruda__free_tree_first_fit(ruda__slice_t *t, uint64_t size) {
  while (t) {
    if (t->left && t->left->tmax >= size)
      t = t->left;
    else if (t->size >= size)
      return t;
    else if (t->right && t->right->tmax >= size)
      t = t->right;
    else
      return NULL;
  }
  return NULL;
}
