/* Descriptors and handles: the internals behind ruda_handle_t that the
 * other layers use (the client creates and checks handles, backends bind
 * and release them). Defined in memory_handle.c; the descriptor's own
 * fields are in memory_handle_internal.h, for the memory layer only. */
#ifndef RUDA_MEMORY_HANDLE_H
#define RUDA_MEMORY_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"

/* A new unbound descriptor holding one handle reference (the caller's), or
 * NULL when memory (or the table's 2^32 slots) is exhausted. Its size,
 * stream and device are unset until ruda__handle_wrap/ruda__handle_create.
 * Thread-safe. The retain/release functions below are thread-safe too and
 * trust the caller to hold a reference (no generation check); the last
 * release recycles the descriptor's slot. */
ruda_memory_t *ruda__memory_new(void);
/* Whether `m` (NULL: false) is bound to a slice. Reads the location, which
 * only the device thread writes: call it there. Never fails. */
bool ruda__memory_is_bound(const ruda_memory_t *m);
/* The id handles of `m` carry (slot + generation; 0 for NULL). Thread-safe;
 * never fails. */
uint64_t ruda__memory_id(const ruda_memory_t *m);
/* Drops a handle's reference (handles count in both the handle count and
 * the total). */
void ruda__memory_release_handle(ruda_memory_t *m);
/* Sets every field of *out: `size` bytes at `data` of kind `property`,
 * which ruda_bytes_release gives back through release(out) (with `owner`
 * in out->owner). Never fails. */
void ruda__bytes_set(void *data, uint64_t size, ruda_bytes_property_t property,
                     void (*release)(ruda_bytes_t *self), void *owner, ruda_bytes_t *out);
/* Pinned staging as host bytes: *out holds `size` bytes at `data`, inside
 * the memory of handle `m` (taken), which ruda_bytes_release releases. */
void ruda__bytes_of_staging(ruda_memory_t *m, void *data, uint64_t size, ruda_bytes_t *out);

/* A new handle of `size` bytes on (device, stream), unbound, holding the
 * only reference of a new descriptor that records all three (the client's
 * ruda_client_empty and friends). OutOfMemory when no descriptor can be
 * made (*out is then empty). Thread-safe. */
ruda_status_t ruda__handle_create(uint64_t size, ruda_device_id_t device,
                                  ruda_stream_id_t stream, ruda_handle_t *out);
/* The device's cache of released slices (reuse_cache.h). new: an empty
 * cache, or NULL when memory is exhausted; free it once no manager refers
 * to it (NULL is a no-op). */
typedef struct ruda__memory_reuse ruda__memory_reuse_t;
ruda__memory_reuse_t *ruda__reuse_cache_new(void);
void ruda__reuse_cache_free(ruda__memory_reuse_t *rc);
/* A new handle of exactly `size` bytes on (device, stream) from memory
 * released earlier on that stream and still bound to its slice (the reuse
 * cache `rc`, NULL: none), with a new generation: no device round trip.
 * False (and *out untouched) when the cache holds no such slice; the caller
 * then reserves through the device. Any thread. */
bool ruda__handle_reuse(ruda__memory_reuse_t *rc, uint64_t size, ruda_device_id_t device,
                        ruda_stream_id_t stream, ruda_handle_t *out);
/* Wraps the caller's reference to `m` (from ruda__memory_new) into a handle
 * of `size` bytes on `stream` with no device (tests, benchmarks and
 * internal pools). Takes the reference; NULL gives an empty handle. */
ruda_handle_t ruda__handle_wrap(ruda_memory_t *m, uint64_t size, ruda_stream_id_t stream);
/* The descriptor a handle or binding names while it is live (generation
 * current, a user reference left), else NULL (empty, stale, forged). The
 * pointer stays valid for as long as the caller holds the handle or
 * binding. A table index and a compare; thread-safe. */
ruda_memory_t *ruda__handle_memory(const ruda_handle_t *h);
ruda_memory_t *ruda__binding_memory(const ruda_binding_t *b);
/* Read-only memory (a DLPack import the producer marked so): the client
 * refuses to write into it. set: on a descriptor the caller holds, before
 * its first handle is handed out. read_only: false for an empty or stale
 * handle. Thread-safe. */
#define RUDA__MEMORY_READ_ONLY 1u
void ruda__memory_set_read_only(ruda_memory_t *m);
bool ruda__handle_read_only(const ruda_handle_t *h);
/* The check the client runs on every handle argument before anything is
 * queued: NULL when `h` is live, belongs to `device`, and its size,
 * stream and offsets agree with its descriptor; otherwise
 * RUDA_ERR_INVALID_HANDLE whose reason starts with "<who>: " ("write:
 * handle #12.3 was released", "read: handle #12.3 belongs to cuda:0, not
 * cpu:0"). A table index and a few compares; thread-safe. */
ruda_status_t ruda__handle_check(const ruda_handle_t *h, ruda_device_id_t device,
                                 const char *who);
/* ruda__handle_bind, also giving the memory's flags (RUDA__MEMORY_READ_ONLY)
 * in *flags (0 on error): the launch checks read-only imports without a
 * second lookup. Thread-safe. */
ruda_status_t ruda__handle_bind_flags(const ruda_handle_t *h, ruda_device_id_t device,
                                      const char *who, ruda_binding_t *out, uint32_t *flags);
/* ruda__handle_check, then a new binding of the view in *out (owned by the
 * caller). On error *out is empty. Thread-safe. */
ruda_status_t ruda__handle_bind(const ruda_handle_t *h, ruda_device_id_t device,
                                const char *who, ruda_binding_t *out);
/* ruda__handle_check for a binding, against the device its memory
 * records. Thread-safe. */
ruda_status_t ruda__binding_check(const ruda_binding_t *b, const char *who);

#endif
