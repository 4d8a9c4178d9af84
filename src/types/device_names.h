/* types/device_names.h: names of the device types ruda knows (internal).
 *
 * The public RUDA_DEVICE_TYPE_* ids have fixed names ("cpu", "cuda",
 * "opencl") whether or not their backend is built into the library, so that
 * "opencl:0" parses and a client for it reports the backend as unavailable
 * rather than the name as unknown.
 *
 * Every other name belongs to the backend registry, which is in the server
 * layer above: a backend names its own type (ruda__backend_t.name), and a
 * fourth backend needs no entry here. Since the types layer may not call the
 * server layer, the registry installs its lookup here
 * (ruda__device_type_names_install, done once at load time by
 * src/server/backend_registry.c), and ruda_device_id_format asks it first.
 * A program that links the lower layers only (their unit tests) sees the
 * built-in names. Thread-safe.
 */
#ifndef RUDA_TYPES_DEVICE_NAMES_H
#define RUDA_TYPES_DEVICE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The name of a built-in type id, or NULL. */
const char *ruda__device_type_builtin_name(uint16_t type_id);
/* The type id named `name[0..len)`; false when no built-in type has it. */
bool ruda__device_type_builtin_id(const char *name, size_t len, uint16_t *out);
/* The built-in type ids, in the order of their ids: *count entries. */
const uint16_t *ruda__device_type_builtin_ids(size_t *count);

/* A name lookup: the name of `type_id`, or NULL when it knows none. Must be
 * pure and thread-safe, returning strings that live as long as the
 * process. */
typedef const char *(*ruda__device_type_name_fn)(uint16_t type_id);

/* Makes `lookup` the one ruda__device_type_known_name consults first (NULL:
 * built-in names only); returns the previous one. */
ruda__device_type_name_fn ruda__device_type_names_install(ruda__device_type_name_fn lookup);
/* The lookup installed now (NULL: none). */
ruda__device_type_name_fn ruda__device_type_names_installed(void);

/* The name of `type_id`: the installed lookup's, else the built-in one, else
 * NULL. What ruda_device_id_format prints. */
const char *ruda__device_type_known_name(uint16_t type_id);

#endif
