/* ruda/status.h: the error model.
 *
 * Every fallible ruda function returns a ruda_status_t. NULL means success
 * and costs one compare; anything else is an error object the caller owns
 * and must give to ruda_status_free() (or hand on to a function that takes
 * ownership, such as ruda_status_wrap()).
 *
 * An error carries:
 *   - its kind, in one of the families ServerError, LaunchError,
 *     ResourceLimitError, ProfileError, IoError and CompilationError, or
 *     one of the kinds for misuse and setup (InvalidArgument, Unavailable,
 *     Config, InvalidHandle);
 *   - the variant's fields (requested/max, size, reason, description...);
 *   - its cause: the nested error of a wrapping variant, so that
 *     ServerError::Launch(LaunchError::TooManyResources(
 *       ResourceLimitError::SharedMemory{requested, max})) is three linked
 *     objects whose kinds are RUDA_ERR_SERVER_LAUNCH,
 *     RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES and RUDA_ERR_RESOURCE_SHARED_MEMORY;
 *   - for ServerUnhealthy, the list of stream errors it drained;
 *   - a backtrace, captured when RUDA_BACKTRACE=1 (or "full") is set.
 *
 * Creating an error never fails: when memory is exhausted a static error of
 * the right kind (without its dynamic fields) is returned, and freeing it
 * is a no-op.
 *
 * Thread-safety: a status object belongs to one owner at a time; the
 * functions below are safe to call from any thread on distinct objects.
 */
#ifndef RUDA_STATUS_H
#define RUDA_STATUS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* Error kinds. The list only grows by appending; values are stable. */
typedef enum ruda_error_kind {
  RUDA_OK = 0,

  /* ServerError: asynchronous errors surfaced by flush, sync and read. */
  RUDA_ERR_SERVER_GENERIC = 1,       /* reason */
  RUDA_ERR_SERVER_LAUNCH = 2,        /* cause: a LaunchError */
  RUDA_ERR_SERVER_PROFILE = 3,       /* cause: a ProfileError */
  RUDA_ERR_SERVER_IO = 4,            /* cause: an IoError */
  RUDA_ERR_SERVER_UNHEALTHY = 5,     /* errors: list of ServerErrors */
  /* reason: work of the stream was dropped before it started, or a
   * running CPU launch stopped at a ruda boundary, by ruda_client_cancel
   * (ruda/client.h). The stream stays usable. */
  RUDA_ERR_SERVER_CANCELLED = 6,
  /* reason: the device had a fault that ends its context (a CUDA
   * illegal address, an OpenCL context killed by a kernel fault): every
   * stream of the device fails with it until the device is recovered
   * (ruda_device_recover, ruda/client.h). Other devices are unaffected. */
  RUDA_ERR_SERVER_DEVICE_LOST = 7,

  /* LaunchError */
  RUDA_ERR_LAUNCH_COMPILATION = 10,  /* cause: a CompilationError */
  RUDA_ERR_LAUNCH_OUT_OF_MEMORY = 11,/* reason */
  RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES = 12, /* cause: a ResourceLimitError */
  RUDA_ERR_LAUNCH_UNKNOWN = 13,      /* reason */
  RUDA_ERR_LAUNCH_IO = 14,           /* cause: an IoError */

  /* ResourceLimitError */
  RUDA_ERR_RESOURCE_SHARED_MEMORY = 20, /* requested, max (bytes) */
  RUDA_ERR_RESOURCE_UNITS = 21,         /* requested, max (units per ruda) */
  RUDA_ERR_RESOURCE_RUDA_DIM = 22,      /* requested3, max3 */
  RUDA_ERR_RESOURCE_RUDA_COUNT = 23,    /* requested3, max3: the rudas a launch
                                           asks for, the device's max_ruda_count */

  /* ProfileError */
  RUDA_ERR_PROFILE_UNKNOWN = 30,     /* reason */
  RUDA_ERR_PROFILE_NOT_REGISTERED = 31,
  RUDA_ERR_PROFILE_LAUNCH = 32,      /* cause: a LaunchError */
  RUDA_ERR_PROFILE_SERVER = 33,      /* cause: a ServerError */

  /* IoError: returned by create, read and write. */
  RUDA_ERR_IO_BUFFER_TOO_BIG = 40,   /* size */
  RUDA_ERR_IO_UNSUPPORTED_STRIDES = 41,
  RUDA_ERR_IO_NOT_FOUND = 42,        /* reason */
  RUDA_ERR_IO_FREE_ERROR = 43,
  RUDA_ERR_IO_UNKNOWN = 44,          /* description */
  RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION = 45,
  RUDA_ERR_IO_EXECUTION = 46,        /* cause: a ServerError */
  RUDA_ERR_IO_OUT_OF_MEMORY = 47,    /* size, reason: the device is full */

  /* CompilationError */
  RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION = 50, /* reason */
  RUDA_ERR_COMPILATION_GENERIC = 51,                 /* reason */
  RUDA_ERR_COMPILATION_VALIDATION = 52,              /* reason */
  RUDA_ERR_COMPILATION_NO_CODE = 53, /* reason: the kernel carries no code
                                        (format) that the device runs */

  /* ruda's own. */
  RUDA_ERR_INVALID_ARGUMENT = 60,    /* reason: the API was misused */
  RUDA_ERR_UNAVAILABLE = 61,         /* reason: backend, library or device absent */
  RUDA_ERR_CONFIG = 62,              /* reason, file, line, key */
  /* reason: a handle or binding that is empty, was released (a copy kept
   * after ruda_handle_release), belongs to another device, or whose fields
   * disagree with its allocation (include/ruda/memory.h). */
  RUDA_ERR_INVALID_HANDLE = 63,
} ruda_error_kind_t;

/* The family an error kind belongs to (its name is the part of the kind's
 * name before "::"). */
typedef enum ruda_error_family {
  RUDA_FAMILY_NONE = 0,
  RUDA_FAMILY_SERVER,      /* ServerError */
  RUDA_FAMILY_LAUNCH,      /* LaunchError */
  RUDA_FAMILY_RESOURCE,    /* ResourceLimitError */
  RUDA_FAMILY_PROFILE,     /* ProfileError */
  RUDA_FAMILY_IO,          /* IoError */
  RUDA_FAMILY_COMPILATION, /* CompilationError */
  RUDA_FAMILY_RUDA,        /* InvalidArgument, Unavailable, Config, InvalidHandle */
} ruda_error_family_t;

typedef struct ruda_status *ruda_status_t;

/* ---- Creating errors. All return an owned status; none returns NULL. ---- */

/* An error of `kind` whose reason (or description, for IoError::Unknown) is
 * the printf-formatted text. Works for every kind; fields that the kind does
 * not use are left empty. */
ruda_status_t ruda_status_create(ruda_error_kind_t kind, const char *fmt, ...)
    __attribute__((format(printf, 2, 3))) RUDA__COLD;
ruda_status_t ruda_status_createv(ruda_error_kind_t kind, const char *fmt,
                                  va_list ap) RUDA__COLD;

/* ResourceLimitError::SharedMemory or ResourceLimitError::Units. */
ruda_status_t ruda_status_resource_limit(ruda_error_kind_t kind,
                                         uint64_t requested, uint64_t max) RUDA__COLD;
/* ResourceLimitError::RudaDim. */
ruda_status_t ruda_status_ruda_dim(const uint32_t requested[3],
                                   const uint32_t max[3]) RUDA__COLD;
/* ResourceLimitError::RudaCount: a launch's ruda count (x, y, z) against the
 * device's max_ruda_count. */
ruda_status_t ruda_status_ruda_count(const uint32_t requested[3],
                                     const uint32_t max[3]) RUDA__COLD;
/* IoError::BufferTooBig{size} or IoError::OutOfMemory{size}. */
ruda_status_t ruda_status_size(ruda_error_kind_t kind, uint64_t size) RUDA__COLD;

/* A wrapping variant (SERVER_LAUNCH, SERVER_PROFILE, SERVER_IO,
 * LAUNCH_COMPILATION, LAUNCH_TOO_MANY_RESOURCES, LAUNCH_IO, PROFILE_LAUNCH,
 * PROFILE_SERVER, IO_EXECUTION) around `cause`. Takes ownership of `cause`.
 * Convenience: wrapping an error into the ServerError family with
 * ruda_status_into_server() picks the right variant for its family. */
ruda_status_t ruda_status_wrap(ruda_error_kind_t kind, ruda_status_t cause);

/* Converts any error into a ServerError: ServerErrors are returned as they
 * are, LaunchError -> Launch, ProfileError -> Profile, IoError -> Io,
 * ResourceLimitError -> Launch(TooManyResources), CompilationError ->
 * Launch(CompilationError), ruda's own kinds -> Generic with the same text.
 * Takes ownership of `s`; NULL gives NULL. */
ruda_status_t ruda_status_into_server(ruda_status_t s);

/* ServerError::ServerUnhealthy holding `count` errors. Takes ownership of
 * every element of `errors` (the array itself stays the caller's). */
ruda_status_t ruda_status_unhealthy(ruda_status_t *errors, size_t count);

/* Attaches the vendor error behind an error: the failing call ("cuMemAlloc")
 * and the vendor's name and value for the code ("CUDA_ERROR_OUT_OF_MEMORY",
 * 2). Strings are copied; `s` stays the caller's. Returns `s` for chaining.
 * Cannot fail: on a static error, or when memory is exhausted, `s` is left
 * as it was. */
ruda_status_t ruda_status_set_vendor(ruda_status_t s, const char *call,
                                     const char *code_name, int64_t code);

/* Attaches a config-file location (RUDA_ERR_CONFIG). Strings are copied;
 * ownership and failure as ruda_status_set_vendor(). */
ruda_status_t ruda_status_set_location(ruda_status_t s, const char *file,
                                       uint32_t line, const char *key);

/* Attaches where an operation failed: the kernel of a failed launch (its
 * name is copied; NULL for none) and the stream it ran on. The text of
 * ServerError::Launch then reads "A launch of kernel 'k' on stream N
 * failed", that of ServerError::Io "A memory operation failed on stream N".
 * Attach it to the outermost error (the ServerError). Ownership and failure
 * as ruda_status_set_vendor(). */
ruda_status_t ruda_status_set_launch(ruda_status_t s, const char *kernel,
                                     uint64_t stream);

/* Deep copy, owned by the caller (`s` stays the caller's). NULL gives NULL;
 * when memory is exhausted, the static error of the same kind. */
ruda_status_t ruda_status_clone(ruda_status_t s);

/* Frees `s`, its cause chain and its error list. NULL is a no-op. */
void ruda_status_free(ruda_status_t s);

/* ---- Inspecting errors. Returned pointers are borrowed from `s`. ---- */

ruda_error_kind_t ruda_status_kind(ruda_status_t s); /* RUDA_OK for NULL */
ruda_error_family_t ruda_status_family(ruda_status_t s);
ruda_error_family_t ruda_error_kind_family(ruda_error_kind_t kind);
/* "ServerError::Launch", "ResourceLimitError::SharedMemory", ... */
const char *ruda_error_kind_name(ruda_error_kind_t kind);

ruda_status_t ruda_status_cause(ruda_status_t s);
/* The first error of `kind` found in `s`, its cause chain or (depth first)
 * the errors of a ServerUnhealthy; NULL if none. */
ruda_status_t ruda_status_find(ruda_status_t s, ruda_error_kind_t kind);
/* The innermost error of the cause chain (s itself when it has no cause). */
ruda_status_t ruda_status_root(ruda_status_t s);

/* Reason (or description) text; "No reason provided for the error" when the
 * variant has a reason that was not provided; NULL when the kind has none. */
const char *ruda_status_reason(ruda_status_t s);
uint64_t ruda_status_requested(ruda_status_t s);
uint64_t ruda_status_max(ruda_status_t s);
/* RudaDim and RudaCount only; writes 3 values. Returns false for other
 * kinds. */
bool ruda_status_dims(ruda_status_t s, uint32_t out_requested[3],
                      uint32_t out_max[3]);
uint64_t ruda_status_size_field(ruda_status_t s);
size_t ruda_status_error_count(ruda_status_t s);
ruda_status_t ruda_status_error_at(ruda_status_t s, size_t index);
/* Vendor fields; NULL/0 when absent. */
const char *ruda_status_vendor_call(ruda_status_t s);
const char *ruda_status_vendor_code_name(ruda_status_t s);
int64_t ruda_status_vendor_code(ruda_status_t s);
/* Set by ruda_status_set_launch: the kernel's name (NULL when absent) and
 * the stream (false when absent; *out untouched). */
const char *ruda_status_kernel(ruda_status_t s);
bool ruda_status_stream(ruda_status_t s, uint64_t *out);
/* Config location; NULL/0 when absent. */
const char *ruda_status_file(ruda_status_t s);
uint32_t ruda_status_line(ruda_status_t s);
const char *ruda_status_key(ruda_status_t s);
/* Backtrace text, or NULL when none was captured. */
const char *ruda_status_backtrace(ruda_status_t s);
/* True for the preallocated errors returned when memory ran out. */
bool ruda_status_is_static(ruda_status_t s);

/* ---- Rendering. ---- */

/* The error's text, each cause nested under its wrapper's "Caused by:"
 * line (and the backtrace, when one was captured), snprintf-style:
 * writes at most `cap` bytes including the terminator, returns the length
 * the full text needs. NULL status renders as "OK". */
size_t ruda_status_format(ruda_status_t s, char *buf, size_t cap);
/* Same text in a malloc()ed string the caller frees with free(); NULL only
 * when memory is exhausted. */
char *ruda_status_to_string(ruda_status_t s);
/* The error as externally tagged JSON (each variant an object keyed by its
 * name, wrapping its cause), backtraces left out, e.g.
 * {"Launch":{"TooManyResources":{"SharedMemory":{"requested":49156,"max":49152}}}}
 * malloc()ed; the caller frees with free(). */
char *ruda_status_to_json(ruda_status_t s);

/* Whether RUDA_BACKTRACE asks for backtraces (read once per process). */
bool ruda_backtrace_enabled(void);

RUDA_END_DECLS

#endif /* RUDA_STATUS_H */
