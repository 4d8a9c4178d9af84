/* src/base/config_internal.h: configuration internals shared with tests. */
#ifndef RUDA_BASE_CONFIG_INTERNAL_H
#define RUDA_BASE_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ruda/config.h"

/* Looks for ruda.toml in `start_dir` and each of its parents; writes the
 * first found into `out` and returns true. */
bool ruda__config_find(const char *start_dir, char *out, size_t cap);

/* Forgets the process-wide configuration so the next ruda_config_get()
 * loads again and ruda_config_set() is allowed. Tests only; not
 * thread-safe. */
void ruda__config_reset_for_test(void);

#endif /* RUDA_BASE_CONFIG_INTERNAL_H */
