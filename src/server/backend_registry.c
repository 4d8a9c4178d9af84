/* Lookups in the generated list of built-in backends (backend_list.c). */
#include <string.h>

#include "server/server.h"

const ruda__backend_t *ruda__backend_for(uint16_t type_id) {
  for (size_t i = 0; ruda__backend_list[i]; i++) {
    if (ruda__backend_list[i]->type_id == type_id) return ruda__backend_list[i];
  }
  return NULL;
}

const ruda__backend_t *ruda__backend_named(const char *name, size_t len) {
  for (size_t i = 0; ruda__backend_list[i]; i++) {
    const char *n = ruda__backend_list[i]->name;
    if (strlen(n) == len && memcmp(n, name, len) == 0) return ruda__backend_list[i];
  }
  return NULL;
}

size_t ruda__backend_index(const ruda__backend_t *b) {
  size_t i = 0;
  while (ruda__backend_list[i] && ruda__backend_list[i] != b) i++;
  return i;
}
