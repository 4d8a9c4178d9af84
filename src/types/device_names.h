/* types/device_names.h: names of the device types ruda knows (internal).
 *
 * The public RUDA_DEVICE_TYPE_* ids have fixed names ("cpu", "cuda",
 * "opencl") whether or not their backend is built into the library, so that
 * "opencl:0" parses and a client for it reports the backend as unavailable
 * rather than the name as unknown. Pure; thread-safe.
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

#endif
