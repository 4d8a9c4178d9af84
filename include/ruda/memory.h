/* ruda/memory.h: handles, bindings and memory usage.
 *
 * A ruda_handle_t is a value that holds one reference to a shared,
 * ref-counted memory descriptor plus an offset view into it. Copying the
 * struct does NOT add a reference: use ruda_handle_clone(). Every handle the
 * caller receives must be given back with ruda_handle_release() exactly
 * once.
 *
 * A ruda_binding_t keeps the memory alive (a kernel argument, a read in
 * flight) without counting as a handle, so it does not affect
 * ruda_handle_can_mut(). Bindings are released with ruda_binding_release().
 *
 * Memory is returned to its pool when the last handle and binding are
 * released; there is no explicit free. It goes back to the system or driver
 * only on ruda_client_memory_cleanup().
 *
 * Handles are checked, never trusted. A handle names its descriptor by an
 * id (a slot of a process-wide table that is never freed, plus the slot's
 * generation, bumped each time the slot is recycled), so a copy kept after
 * the memory was released, a handle of another device, or a struct whose
 * fields were edited is recognised and refused with
 * RUDA_ERR_INVALID_HANDLE, for example:
 *   "write: handle #12.3 was released"
 *   "read: handle #12.3 belongs to cuda:0, not cpu:0"
 *   "write: handle #12.3 says its allocation holds 1073741824 bytes; it holds 64"
 * ("#12.3" is slot 12, generation 3: see ruda_handle_memory_id()). No
 * operation on such a handle reads or writes memory it does not own, and
 * the runtime stays usable. An empty handle (zeroed, or one that
 * ruda_handle_release() zeroed) is refused with RUDA_ERR_INVALID_HANDLE too
 * ("the handle is empty").
 *
 * Read the fields through the functions below; new code should not touch
 * them. They stay visible so that a handle is a plain value (no allocation
 * to own), not so that they can be changed: a handle whose fields disagree
 * with its descriptor is refused.
 *
 * Thread-safety: reference counting is atomic; handles may be cloned and
 * released from any thread (a struct itself must not be written by two
 * threads at once).
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

/* The shared descriptor (opaque; internal code reaches it through the id). */
typedef struct ruda_memory ruda_memory_t;

typedef struct ruda_handle {
  uint64_t id;             /* 0: empty; else slot (low 32 bits) + generation (high 32) */
  uint64_t offset_start;   /* bytes from the start of the base allocation */
  uint64_t offset_end;     /* bytes cut from its end */
  uint64_t size;           /* size of the whole base allocation */
  ruda_stream_id_t stream; /* stream whose pool holds the memory */
  ruda_device_id_t device; /* device whose memory it is */
} ruda_handle_t;

typedef struct ruda_binding {
  uint64_t id;
  uint64_t offset_start;
  uint64_t offset_end;
  uint64_t size;
  ruda_stream_id_t stream;
  ruda_device_id_t device;
} ruda_binding_t;

/* A handle with its strides. */
typedef struct ruda_memory_layout {
  ruda_handle_t memory;
  ruda_strides_t strides;
} ruda_memory_layout_t;

/* Unless stated otherwise, the functions below take a non-NULL pointer to a
 * caller-owned handle or binding, never fail, and are safe to call from any
 * thread as long as no other thread writes the same struct concurrently
 * (the shared descriptor's counts are atomic). None of them reads memory
 * that a released handle used to own. */

/* True when `h` holds no reference (zeroed, or released). NULL: true. */
bool ruda_handle_is_empty(const ruda_handle_t *h);
bool ruda_binding_is_empty(const ruda_binding_t *b);
/* NULL when `h` is a live handle whose fields agree with its descriptor;
 * otherwise RUDA_ERR_INVALID_HANDLE saying why (empty, released, not a
 * handle ruda made, size or offsets that do not match its allocation). The
 * caller owns the status. */
ruda_status_t ruda_handle_validate(const ruda_handle_t *h);
/* Bytes of the view: size - offset_start - offset_end (0 when the offsets
 * exceed the size, which only an edited handle can do). */
uint64_t ruda_handle_size_in_used(const ruda_handle_t *h);
/* The device and stream the memory belongs to (as recorded in the handle;
 * ruda_handle_validate() tells whether the handle is live). */
ruda_device_id_t ruda_handle_device(const ruda_handle_t *h);
ruda_stream_id_t ruda_handle_stream(const ruda_handle_t *h);
/* A new handle reference to the same memory and view; the caller owns it
 * and releases it with ruda_handle_release(). Cloning an empty handle, or
 * one that is no longer live (released, edited), gives an empty handle,
 * which every operation then refuses. */
ruda_handle_t ruda_handle_clone(const ruda_handle_t *h);
/* Drops the reference and zeroes *h. Releasing an empty handle, or NULL, is
 * a no-op; so is releasing a copy of a handle whose memory was already
 * released (its id is stale: nothing is touched). When this was the last
 * handle or binding of bound memory, the slice is free for the next
 * reservation on its stream. Releasing one reference twice through two
 * copies while a clone is still alive takes the clone's reference: the
 * clone then reads as released (an error, never a crash). */
void ruda_handle_release(ruda_handle_t *h);
/* True when `h` is live and is the only handle of its memory: no clone,
 * and no other view of the same allocation (ruda_client_empty_tensors()
 * gives views that share one). Bindings (launches and reads in flight) do
 * not count. False for an empty or stale handle. The answer may be stale
 * as soon as another thread clones or releases. */
bool ruda_handle_can_mut(const ruda_handle_t *h);
/* Whether the device has bound memory to the handle, as of the last
 * ruda_client_sync() (or flush, read) of the handle's stream: allocation is
 * asynchronous, so before that sync it may still read false; after it,
 * false means the allocation failed (its error was returned by that sync)
 * or the device was shut down. False for an empty or stale handle.
 * Thread-safe. */
bool ruda_handle_is_bound(const ruda_handle_t *h);
/* Narrows the view: offsets add to the existing ones. Returns
 * RUDA_ERR_INVALID_ARGUMENT when the view would be negative, or
 * RUDA_ERR_INVALID_HANDLE when `h` is not live (*h is then unchanged). */
ruda_status_t ruda_handle_offset_start(ruda_handle_t *h, uint64_t bytes);
ruda_status_t ruda_handle_offset_end(ruda_handle_t *h, uint64_t bytes);
/* A new binding reference for the same view (the handle is kept); the
 * caller owns it and releases it with ruda_binding_release(). An empty or
 * stale handle gives an empty binding. */
ruda_binding_t ruda_handle_binding(const ruda_handle_t *h);
/* Turns the handle's reference into a binding reference and zeroes *h
 * (the total reference count is unchanged). A stale handle gives an empty
 * binding (and is zeroed). */
ruda_binding_t ruda_handle_into_binding(ruda_handle_t *h);
/* A new binding reference (owned by the caller); empty for an empty or
 * stale binding. */
ruda_binding_t ruda_binding_clone(const ruda_binding_t *b);
/* Drops the reference and zeroes *b; empty or stale bindings and NULL are
 * no-ops. */
void ruda_binding_release(ruda_binding_t *b);
uint64_t ruda_binding_size_in_used(const ruda_binding_t *b);
/* The handle's id: unique in the process for the life of its memory (0 for
 * an empty handle). Error texts write it "#slot.generation", that is
 * "#%u.%u" of (uint32_t)id and (uint32_t)(id >> 32). A stale handle keeps
 * its id, which no live handle has. */
uint64_t ruda_handle_memory_id(const ruda_handle_t *h);

/* Memory usage of a stream's pools, or of a whole device (see
 * ruda_client_memory_usage()). */
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

/* ---- Host buffers ---- */

typedef enum ruda_bytes_property {
  RUDA_BYTES_NATIVE = 0, /* ordinary host memory */
  RUDA_BYTES_PINNED = 1, /* page-locked; uploads need no staging */
} ruda_bytes_property_t;

/* An owned host buffer: `release` (called by ruda_bytes_release) frees it
 * through `owner`. Functions that take a ruda_bytes_t by pointer and say
 * they take it own it afterwards, also when they fail. */
typedef struct ruda_bytes {
  void *data;
  uint64_t size;
  ruda_bytes_property_t property;
  void (*release)(struct ruda_bytes *self);
  void *owner; /* for `release` */
} ruda_bytes_t;

/* Frees the buffer through its release function and zeroes *b; NULL and
 * a zeroed buffer are no-ops. Thread-safe for distinct buffers. */
void ruda_bytes_release(ruda_bytes_t *b);
/* A native buffer holding a copy of `size` bytes of `data`; the caller owns
 * *out (ruda_bytes_release). Errors: RUDA_ERR_INVALID_ARGUMENT (NULL out,
 * or NULL data with a non-zero size), RUDA_ERR_IO_OUT_OF_MEMORY. Thread-safe. */
ruda_status_t ruda_bytes_from_copy(const void *data, uint64_t size, ruda_bytes_t *out);

/* ---- Raw resources ---- */

/* The backend address of a view (a host pointer on CPU, a CUdeviceptr on
 * CUDA) plus a binding that keeps it alive until ruda_resource_release(). */
typedef struct ruda_resource {
  uint64_t address;
  uint64_t size;
  ruda_binding_t binding;
} ruda_resource_t;
/* Drops the resource's binding and zeroes *r; NULL is a no-op.
 * Thread-safe. */
void ruda_resource_release(ruda_resource_t *r);

RUDA_END_DECLS

#endif /* RUDA_MEMORY_H */
