/* Integer settings read from the environment (the backends' tuning knobs,
 * such as RUDA_CUDA_COPY_THREADS). Thread-safe as getenv is: call them
 * while nothing changes the environment. */
#ifndef RUDA_BASE_ENV_H
#define RUDA_BASE_ENV_H

#include <stdlib.h>

/* The value of `name` read as a decimal integer (strtoll: leading digits,
 * 0 when there are none), or `fallback` when it is unset or empty or
 * `name` is NULL. */
static inline long long ruda__env_int(const char *name, long long fallback) {
  const char *v = name ? getenv(name) : NULL;
  return v == NULL || v[0] == '\0' ? fallback : strtoll(v, NULL, 10);
}

#endif
