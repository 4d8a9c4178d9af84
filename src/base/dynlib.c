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

void ruda__dynlib_close(ruda__dynlib_t *lib) {
  if (lib->handle) dlclose(lib->handle);
  lib->handle = NULL;
}

ruda_status_t ruda__dynlib_once(ruda__dynlib_once_t *once, ruda_status_t (*load)(void)) {
  pthread_mutex_lock(&once->lock);
  if (!once->tried) {
    once->error = load();
    once->tried = true;
  }
  ruda_status_t s = once->error ? ruda_status_clone(once->error) : NULL;
  pthread_mutex_unlock(&once->lock);
  return s;
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
