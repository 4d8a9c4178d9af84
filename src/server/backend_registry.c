/* Lookups in the generated list of built-in backends (backend_list.c), and
 * the device names they give: a registered backend names its type, the
 * built-in type ids keep their names when their backend is not built in.
 *
 * The types layer formats device ids (ruda_device_id_format, used by the
 * memory layer's errors too) but may not call up here, so this file installs
 * ruda_device_type_name as the types layer's name lookup once, before main
 * (the list is fixed at link time: nothing changes afterwards). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "types/device_names.h"

const ruda__backend_t *ruda__backend_for(uint16_t type_id) {
  for (size_t i = 0; ruda__backend_list[i]; i++) {
    if (ruda__backend_list[i]->type_id == type_id) return ruda__backend_list[i];
  }
  return NULL;
}

size_t ruda_device_types(uint16_t *out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; ruda__backend_list[i]; i++, n++)
    if (n < cap) out[n] = ruda__backend_list[i]->type_id;
  size_t nb = 0;
  const uint16_t *builtin = ruda__device_type_builtin_ids(&nb);
  for (size_t i = 0; i < nb; i++) {
    if (ruda__backend_for(builtin[i])) continue;
    if (n < cap) out[n] = builtin[i];
    n++;
  }
  return n;
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

const char *ruda_device_type_name(uint16_t type_id) {
  const ruda__backend_t *b = ruda__backend_for(type_id);
  return b ? b->name : ruda__device_type_builtin_name(type_id);
}

__attribute__((constructor)) static void install_device_type_names(void) {
  ruda__device_type_names_install(ruda_device_type_name);
}

static void append(char *buf, size_t cap, size_t *used, const char *a, const char *b) {
  int w = snprintf(buf + *used, cap - *used, "%s%s", a, b);
  if (w > 0) *used = *used + (size_t)w < cap ? *used + (size_t)w : cap - 1;
}

/* "cpu, cpu:N, cuda:N, opencl:N": the names ruda_device_parse takes, the
 * registered backends first, then the built-in types without a backend. */
static void known_names(char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; ruda__backend_list[i]; i++) {
    const char *n = ruda__backend_list[i]->name;
    if (i == 0) append(buf, cap, &used, n, ", ");
    append(buf, cap, &used, i ? ", " : "", n);
    append(buf, cap, &used, ":N", "");
  }
  size_t nb = 0;
  const uint16_t *builtin = ruda__device_type_builtin_ids(&nb);
  for (size_t i = 0; i < nb; i++) {
    if (ruda__backend_for(builtin[i])) continue;
    append(buf, cap, &used, used ? ", " : "", ruda__device_type_builtin_name(builtin[i]));
    append(buf, cap, &used, ":N", "");
  }
}

ruda_status_t ruda_device_parse(const char *text, ruda_device_id_t *out) {
  if (!text || !out) return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "ruda_device_parse: NULL argument");
  size_t name_len = strcspn(text, ":");
  const char *rest = text + name_len;
  uint16_t type = 0;
  const ruda__backend_t *b = ruda__backend_named(text, name_len);
  bool known = b ? (type = b->type_id, true) : ruda__device_type_builtin_id(text, name_len, &type);
  unsigned long index = 0;
  bool ok = known && name_len > 0;
  if (ok && *rest == ':') {
    char *end = NULL;
    ok = rest[1] >= '0' && rest[1] <= '9';
    if (ok) {
      index = strtoul(rest + 1, &end, 10);
      ok = !*end && index <= UINT16_MAX;
    }
  }
  if (!ok) {
    char names[256];
    known_names(names, sizeof names);
    return ruda_status_create(RUDA_ERR_INVALID_ARGUMENT, "'%s' is not a device name (%s)", text,
                              names);
  }
  out->type_id = type;
  out->index_id = (uint16_t)index;
  return NULL;
}
