/* The run-time library loader (dynlib.h). */
#include "base/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t ruda__dynlib_candidates(const char *override, const char *env,
                               const char *const *defaults, size_t n, const char **single,
                               const char *const **out) {
  const char *value = env ? getenv(env) : NULL;
  if (override && override[0]) {
    single[0] = override;
  } else if (value && value[0]) {
    single[0] = value;
  } else {
    *out = defaults;
    return n;
  }
  *out = single;
  return 1;
}

bool ruda__dynlib_open(ruda__dynlib_t *lib, const char *const *names, size_t n) {
  size_t used = 0, cap = sizeof lib->tried;
  lib->handle = NULL;
  lib->name[0] = '\0';
  lib->tried[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL || names[i][0] == '\0') continue;
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) {
      lib->handle = h;
      snprintf(lib->name, sizeof lib->name, "%s", names[i]);
      return true;
    }
    const char *why = dlerror();
    int w = snprintf(lib->tried + used, used < cap ? cap - used : 0, "%s%s (%s)",
                     used ? ", " : "", names[i], why ? why : "not loadable");
    if (w > 0) used += (size_t)w;
  }
  if (lib->tried[0] == '\0') snprintf(lib->tried, cap, "no file name");
  return false;
}

const char *ruda__dynlib_resolve(const ruda__dynlib_t *lib, const ruda__dynlib_symbol_t *syms,
                                 size_t n, void *table) {
  const char *missing = NULL;
  for (size_t i = 0; i < n; i++) {
    dlerror();
    void *s = dlsym(lib->handle, syms[i].name);
    /* ISO C has no conversion from void * to a function pointer: the
     * address's bits are copied into the field. */
    if (s != NULL && syms[i].size == sizeof s) memcpy((char *)table + syms[i].offset, &s, sizeof s);
    if (s == NULL && syms[i].required && missing == NULL) missing = syms[i].name;
  }
  return missing;
}

ruda__dynlib_result_t ruda__dynlib_load(ruda__dynlib_t *lib, const char *const *names, size_t n,
                                        const ruda__dynlib_symbol_t *syms, size_t nsyms,
                                        void *table, const char **missing) {
  *missing = NULL;
  if (!ruda__dynlib_open(lib, names, n)) return RUDA__DYNLIB_NOT_FOUND;
  *missing = ruda__dynlib_resolve(lib, syms, nsyms, table);
  if (*missing == NULL) return RUDA__DYNLIB_LOADED;
  ruda__dynlib_close(lib);
  return RUDA__DYNLIB_NO_SYMBOL;
}

ruda_status_t ruda__dynlib_load_spec(ruda__dynlib_t *lib, const ruda__dynlib_spec_t *spec,
                                     const char *override, void *table, size_t table_size) {
  _Alignas(max_align_t) unsigned char scratch[RUDA__DYNLIB_TABLE_MAX];
  if (table_size > sizeof scratch)
    return ruda_status_create(spec->kind, "%s%s: its table of %zu bytes is over the loader's %zu",
                              spec->prefix, spec->what, table_size, sizeof scratch);
  memset(scratch, 0, table_size);
  const char *single[1];
  const char *const *names;
  size_t n = ruda__dynlib_candidates(override, spec->env, spec->defaults, spec->num_defaults,
                                     single, &names);
  const char *missing = NULL;
  switch (ruda__dynlib_load(lib, names, n, spec->symbols, spec->num_symbols, scratch, &missing)) {
    case RUDA__DYNLIB_NOT_FOUND:
      return ruda_status_create(spec->kind, "%s%s could not be loaded (looked for %s)%s",
                                spec->prefix, spec->what, lib->tried, spec->hint);
    case RUDA__DYNLIB_NO_SYMBOL:
      return ruda_status_create(spec->kind, "%s%s has no symbol %s%s", spec->prefix, lib->name,
                                missing, spec->symbol_hint);
    case RUDA__DYNLIB_LOADED:
      break;
  }
  ruda__dynlib_head_t head = {lib->handle, lib->name};
  memcpy(scratch, &head, sizeof head);
  ruda_status_t s = spec->ready ? spec->ready(lib, scratch) : NULL;
  if (s) {
    ruda__dynlib_close(lib);
    return s;
  }
  memcpy(table, scratch, table_size);
  return NULL;
}

void ruda__dynlib_close(ruda__dynlib_t *lib) {
  if (lib->handle) dlclose(lib->handle);
  lib->handle = NULL;
}

/* What a once's load is given: ruda__dynlib_once's function, or
 * ruda__dynlib_once_spec's arguments (fn NULL). */
typedef struct once_load {
  ruda_status_t (*fn)(ruda__dynlib_t *lib);
  const ruda__dynlib_spec_t *spec;
  const char *override;
  void *table;
  size_t table_size;
} once_load_t;

static ruda_status_t once_run(ruda__dynlib_once_t *once, const once_load_t *l) {
  pthread_mutex_lock(&once->lock);
  if (!once->tried) {
    once->error = l->fn ? l->fn(&once->lib)
                        : ruda__dynlib_load_spec(&once->lib, l->spec, l->override, l->table,
                                                 l->table_size);
    once->tried = true;
  }
  ruda_status_t s = once->error ? ruda_status_clone(once->error) : NULL;
  pthread_mutex_unlock(&once->lock);
  return s;
}

ruda_status_t ruda__dynlib_once(ruda__dynlib_once_t *once, ruda_status_t (*load)(ruda__dynlib_t *lib)) {
  once_load_t l = {load, NULL, NULL, NULL, 0};
  return once_run(once, &l);
}

ruda_status_t ruda__dynlib_once_spec(ruda__dynlib_once_t *once, const ruda__dynlib_spec_t *spec,
                                     const char *override, void *table, size_t table_size) {
  once_load_t l = {NULL, spec, override, table, table_size};
  return once_run(once, &l);
}

bool ruda__dynlib_once_loaded(ruda__dynlib_once_t *once) {
  pthread_mutex_lock(&once->lock);
  bool ok = once->tried && once->error == NULL;
  pthread_mutex_unlock(&once->lock);
  return ok;
}

void ruda__dynlib_once_forget(ruda__dynlib_once_t *once, void (*locked)(void *ctx), void *ctx) {
  pthread_mutex_lock(&once->lock);
  if (locked) locked(ctx);
  once->tried = false;
  ruda_status_free(once->error);
  once->error = NULL;
  pthread_mutex_unlock(&once->lock);
}
