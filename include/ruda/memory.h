/* ruda/memory.h: handles, bindings and memory usage.
 *
 * A ruda_handle_t is a value that holds one reference to a shared,
 * ref-counted memory descriptor (the seed's ManagedMemoryHandle) plus an
 * offset view into it. Copying the struct does NOT add a reference: use
 * ruda_handle_clone(). Every handle the caller receives must be given back
 * with ruda_handle_release() exactly once.
 *
 * A ruda_binding_t keeps the memory alive (a kernel argument, a read in
 * flight) without counting as a handle, so it does not affect
 * ruda_handle_can_mut(). Bindings are released with ruda_binding_release().
 *
 * Memory is returned to its pool when the last handle and binding are
 * released; there is no explicit free. It goes back to the system or driver
 * only on ruda_client_memory_cleanup().
 *
 * Thread-safety: reference counting is atomic; handles may be cloned and
 * released from any thread. The location fields inside a descriptor are
 * written only by the device's worker thread.
 */
#ifndef RUDA_MEMORY_H
#define RUDA_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"
#include "ruda/types.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* The shared descriptor (opaque). */
typedef struct ruda_memory ruda_memory_t;

typedef struct ruda_handle {
  ruda_memory_t *memory;  /* NULL: an empty handle */
  uint64_t offset_start;  /* bytes from the start of the base allocation */
  uint64_t offset_end;    /* bytes cut from its end */
  uint64_t size;          /* size of the whole base allocation */
  ruda_stream_id_t stream;/* stream whose pool holds the memory */
} ruda_handle_t;

typedef struct ruda_binding {
  ruda_memory_t *memory;
  uint64_t offset_start;
  uint64_t offset_end;
  uint64_t size;
  ruda_stream_id_t stream;
} ruda_binding_t;

/* A handle with its strides (the seed's MemoryLayout). */
typedef struct ruda_memory_layout {
  ruda_handle_t memory;
  ruda_strides_t strides;
} ruda_memory_layout_t;

/* Unless stated otherwise, the functions below take a non-NULL pointer to a
 * caller-owned handle or binding, never fail, and are safe to call from any
 * thread as long as no other thread writes the same struct concurrently
 * (the shared descriptor's counts are atomic). */

/* Bytes of the view: size - offset_start - offset_end. */
uint64_t ruda_handle_size_in_used(const ruda_handle_t *h);
/* A new handle reference to the same memory and view; the caller owns it
 * and releases it with ruda_handle_release(). Cloning an empty handle gives
 * an empty handle. */
ruda_handle_t ruda_handle_clone(const ruda_handle_t *h);
/* Drops the reference and zeroes *h. Releasing an empty handle, or NULL, is
 * a no-op. When this was the last handle or binding of bound memory, the
 * slice is free for the next reservation on its stream. */
void ruda_handle_release(ruda_handle_t *h);
/* True when no other handle shares the memory (bindings do not count): at
 * most 2 handle references, the pool's own and this one. False for an empty
 * handle. The answer may be stale as soon as another thread clones. */
bool ruda_handle_can_mut(const ruda_handle_t *h);
/* Narrows the view: offsets add to the existing ones. Returns
 * RUDA_ERR_INVALID_ARGUMENT when the view would be negative (*h is then
 * unchanged). */
ruda_status_t ruda_handle_offset_start(ruda_handle_t *h, uint64_t bytes);
ruda_status_t ruda_handle_offset_end(ruda_handle_t *h, uint64_t bytes);
/* A new binding reference for the same view (the handle is kept); the
 * caller owns it and releases it with ruda_binding_release(). */
ruda_binding_t ruda_handle_binding(const ruda_handle_t *h);
/* Turns the handle's reference into a binding reference and zeroes *h
 * (the seed's `binding()` that consumes the handle). */
ruda_binding_t ruda_handle_into_binding(ruda_handle_t *h);
/* A new binding reference (owned by the caller). */
ruda_binding_t ruda_binding_clone(const ruda_binding_t *b);
/* Drops the reference and zeroes *b; empty bindings and NULL are no-ops. */
void ruda_binding_release(ruda_binding_t *b);
uint64_t ruda_binding_size_in_used(const ruda_binding_t *b);
/* A process-unique id of the memory (0 for an empty handle). */
uint64_t ruda_handle_memory_id(const ruda_handle_t *h);

/* The seed's MemoryUsage. */
typedef struct ruda_memory_usage {
  uint64_t number_allocs;  /* live slices */
  uint64_t bytes_in_use;   /* requested bytes of live slices */
  uint64_t bytes_padding;  /* alignment padding of live slices */
  uint64_t bytes_reserved; /* bytes held from the storage */
} ruda_memory_usage_t;

/* Field-by-field sum. Pure; thread-safe. */
ruda_memory_usage_t ruda_memory_usage_combine(ruda_memory_usage_t a,
                                              ruda_memory_usage_t b);
/* The usage report:
 *   Memory Usage Report:
 *     Number of allocations: N
 *     Bytes in use: X
 *     Bytes used for padding: X
 *     Total bytes reserved: X
 *     Usage efficiency: {in_use / reserved * 100:.2}%
 *     Padding overhead: {padding / in_use * 100:.2}%
 * one "\n" after each line, sizes as ruda_bytes_format() writes them,
 * "NaN" for 0/0. snprintf semantics: writes at most `cap` bytes including
 * the terminator into the caller's `buf` and returns the length the whole
 * text needs. Pure; thread-safe. */
size_t ruda_memory_usage_format(const ruda_memory_usage_t *u, char *buf,
                                size_t cap);
/* A size in binary units: "{n} B" below 1024, otherwise
 * "{v:.2} KiB/MiB/GiB/TiB/PiB/EiB" (1 KiB = 1024 bytes), as everywhere in
 * ruda's output. snprintf semantics as above. Pure; thread-safe. */
size_t ruda_bytes_format(uint64_t bytes, char *buf, size_t cap);

RUDA_END_DECLS

#endif /* RUDA_MEMORY_H */
