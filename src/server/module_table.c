/* The compiled-module table (module_table.h). */
#include "server/module_table.h"

#include "base/alloc.h"

#define INITIAL_CAP 64

bool ruda__module_table_init(ruda__module_table_t *t) {
  t->len = 0;
  t->slots = ruda__calloc(INITIAL_CAP, sizeof *t->slots);
  t->cap = t->slots ? INITIAL_CAP : 0;
  return t->slots != NULL;
}

void ruda__module_table_destroy(ruda__module_table_t *t, void (*release)(void *value, void *ctx),
                                void *ctx) {
  for (size_t i = 0; release && i < t->cap; i++)
    if (t->slots[i].value != NULL) release(t->slots[i].value, ctx);
  ruda__free(t->slots);
  t->slots = NULL;
  t->cap = t->len = 0;
}

static void place(ruda__module_table_t *t, ruda__module_slot_t s) {
  size_t j = ruda__module_table_home(t, s.key);
  while (t->slots[j].value != NULL) j = (j + 1) & (t->cap - 1);
  t->slots[j] = s;
}

bool ruda__module_table_insert(ruda__module_table_t *t, ruda_hash128_t key, void *value) {
  if (t->cap == 0 || (t->len + 1) * 2 > t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : INITIAL_CAP;
    ruda__module_slot_t *ns = ruda__calloc(ncap, sizeof *ns);
    if (ns == NULL) return false;
    ruda__module_slot_t *old = t->slots;
    size_t ocap = t->cap;
    t->slots = ns;
    t->cap = ncap;
    for (size_t i = 0; i < ocap; i++)
      if (old[i].value != NULL) place(t, old[i]);
    ruda__free(old);
  }
  place(t, (ruda__module_slot_t){key, value});
  t->len++;
  return true;
}
