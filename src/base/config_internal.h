/* src/base/config_internal.h: configuration internals shared with tests. */
#ifndef RUDA_BASE_CONFIG_INTERNAL_H
#define RUDA_BASE_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "ruda/config.h"

/* Looks for ruda.toml in `start_dir` and each of its parents; writes the
 * first found into `out` and returns true. */
bool ruda__config_find(const char *start_dir, char *out, size_t cap);

/* The checks ruda_config_set() applies: the file's and the environment's
 * rules, field by field. NULL when `cfg` is valid, else RUDA_ERR_CONFIG
 * naming the first bad field's dotted key. Every configuration the loaders
 * produce passes. Thread-safe. */
ruda_status_t ruda__config_validate(const ruda_config_t *cfg);

/* Forgets the process-wide configuration so the next ruda_config_get()
 * loads again and ruda_config_set() is allowed. Tests only; not
 * thread-safe. */
void ruda__config_reset_for_test(void);

#endif /* RUDA_BASE_CONFIG_INTERNAL_H */
