/* src/base/status_kinds.h: the error-kind table (internal).
 *
 * One row per kind: X(kind, family, variant name, payload shape, Display
 * template, backtrace trailer, default cause kind). The family is the end
 * of its RUDA_FAMILY_ name; the kind's name is the family's name (below)
 * and the variant, "LaunchError::IoError", and the variant alone names the
 * payload in JSON.
 *
 * Display templates use {reason}, {cause}, {requested}, {max}, {dims_req},
 * {dims_max}, {size}, {errors}, {location} and {launch} (" of kernel 'k'
 * on stream N", the parts attached by ruda_status_set_launch, or nothing);
 * status.c fills them in. A template holds no backtrace: the trailer
 * column is the text that introduces a captured backtrace after it
 * (BT_NONE: the kind prints none). ServerError::Launch, ::Profile and ::Io
 * name the operation that failed (a launch, profiling, a memory operation)
 * rather than a generic "error during execution". The last column is the kind of cause that
 * ruda_status_create() makes for a wrapping kind from its reason (0: none).
 */
#ifndef RUDA_BASE_STATUS_KINDS_H
#define RUDA_BASE_STATUS_KINDS_H

/* The families' names, the first part of their kinds' names. */
#define RUDA__FAMILY_NAME_SERVER "ServerError"
#define RUDA__FAMILY_NAME_LAUNCH "LaunchError"
#define RUDA__FAMILY_NAME_RESOURCE "ResourceLimitError"
#define RUDA__FAMILY_NAME_PROFILE "ProfileError"
#define RUDA__FAMILY_NAME_IO "IoError"
#define RUDA__FAMILY_NAME_COMPILATION "CompilationError"
#define RUDA__FAMILY_NAME_RUDA "RudaError"

#define RUDA__ERROR_KINDS(X)                                                   \
  X(RUDA_ERR_SERVER_GENERIC, SERVER, "Generic", SH_REASON,                     \
    "An error happened during execution\nCaused by:\n  {reason}", BT_COLON, 0) \
  X(RUDA_ERR_SERVER_LAUNCH, SERVER, "Launch", SH_CAUSE,                        \
    "A launch{launch} failed\nCaused by:\n  {cause}", BT_NONE,                 \
    RUDA_ERR_LAUNCH_UNKNOWN)                                                   \
  X(RUDA_ERR_SERVER_PROFILE, SERVER, "Profile", SH_CAUSE,                      \
    "Profiling failed{launch}\nCaused by:\n  {cause}", BT_NONE,                \
    RUDA_ERR_PROFILE_UNKNOWN)                                                  \
  X(RUDA_ERR_SERVER_IO, SERVER, "Io", SH_CAUSE,                                \
    "A memory operation failed{launch}\nCaused by:\n  {cause}", BT_NONE,       \
    RUDA_ERR_IO_UNKNOWN)                                                       \
  X(RUDA_ERR_SERVER_UNHEALTHY, SERVER, "ServerUnhealthy", SH_LIST,             \
    "Work queued on the stream failed\nCaused by:\n  {errors}", BT_NONE, 0)    \
  X(RUDA_ERR_SERVER_CANCELLED, SERVER, "Cancelled", SH_REASON,                 \
    "The work{launch} was cancelled\nCaused by:\n  {reason}", BT_NONE, 0)      \
  X(RUDA_ERR_SERVER_DEVICE_LOST, SERVER, "DeviceLost", SH_REASON,              \
    "Work{launch} failed: the device was lost\nCaused by:\n  {reason}",        \
    BT_NONE, 0)                                                                \
  X(RUDA_ERR_LAUNCH_COMPILATION, LAUNCH, "CompilationError", SH_CAUSE,         \
    "A compilation error happened during launch\nCaused by:\n  {cause}",       \
    BT_NONE, RUDA_ERR_COMPILATION_GENERIC)                                     \
  X(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, LAUNCH, "OutOfMemory", SH_REASON,           \
    "An out-of-memory error happened during launch\nCaused by:\n  {reason}",   \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES, LAUNCH, "TooManyResources", SH_CAUSE,  \
    "Too many resources were requested during launch\n{cause}", BT_NONE, 0)    \
  X(RUDA_ERR_LAUNCH_UNKNOWN, LAUNCH, "Unknown", SH_REASON,                     \
    "An unknown error happened during launch\nCaused by:\n  {reason}",         \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_LAUNCH_IO, LAUNCH, "IoError", SH_CAUSE,                           \
    "An io error happened during launch\nCaused by:\n  {cause}", BT_NONE,      \
    RUDA_ERR_IO_UNKNOWN)                                                       \
  X(RUDA_ERR_RESOURCE_SHARED_MEMORY, RESOURCE, "SharedMemory", SH_LIMIT,       \
    "Too much shared memory requested.\nRequested {requested} bytes, maximum " \
    "{max} bytes available.", BT_PLAIN, 0)                                     \
  X(RUDA_ERR_RESOURCE_UNITS, RESOURCE, "Units", SH_LIMIT,                      \
    "Total unit count exceeds maximum.\nRequested {requested} units, max "     \
    "units is {max}.", BT_PLAIN, 0)                                            \
  X(RUDA_ERR_RESOURCE_RUDA_DIM, RESOURCE, "RudaDim", SH_DIM,                   \
    "Ruda dim exceeds maximum bounds.\nRequested {dims_req}, max is "          \
    "{dims_max}.", BT_PLAIN, 0)                                                \
  X(RUDA_ERR_RESOURCE_RUDA_COUNT, RESOURCE, "RudaCount", SH_DIM,               \
    "Ruda count exceeds the device's maximum.\nRequested {dims_req}, max is "  \
    "{dims_max}.", BT_PLAIN, 0)                                                \
  X(RUDA_ERR_PROFILE_UNKNOWN, PROFILE, "Unknown", SH_REASON,                   \
    "An unknown error happened during profiling\nCaused by:\n  {reason}",      \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_PROFILE_NOT_REGISTERED, PROFILE, "NotRegistered", SH_NONE,        \
    "No profiling registered", BT_COLON, 0)                                    \
  X(RUDA_ERR_PROFILE_LAUNCH, PROFILE, "Launch", SH_CAUSE,                      \
    "A launch error happened during profiling\nCaused by:\n  {cause}",         \
    BT_NONE, RUDA_ERR_LAUNCH_UNKNOWN)                                          \
  X(RUDA_ERR_PROFILE_SERVER, PROFILE, "Server", SH_CAUSE,                      \
    "An execution error happened during profiling\nCaused by:\n  {cause}",     \
    BT_NONE, RUDA_ERR_SERVER_GENERIC)                                          \
  X(RUDA_ERR_IO_BUFFER_TOO_BIG, IO, "BufferTooBig", SH_SIZE,                   \
    "can't allocate buffer of size: {size}", BT_NL, 0)                         \
  X(RUDA_ERR_IO_UNSUPPORTED_STRIDES, IO, "UnsupportedStrides", SH_NONE,        \
    "the provided strides are not supported for this operation", BT_NL, 0)     \
  X(RUDA_ERR_IO_NOT_FOUND, IO, "NotFound", SH_REASON,                          \
    "couldn't find resource for that handle: {reason}", BT_NL, 0)              \
  X(RUDA_ERR_IO_FREE_ERROR, IO, "FreeError", SH_NONE,                          \
    "couldn't free the handle, since it is currently in used. ", BT_NL, 0)     \
  X(RUDA_ERR_IO_UNKNOWN, IO, "Unknown", SH_DESC,                               \
    "Unknown error happened during execution\nCaused by:\n  {reason}", BT_NL,  \
    0)                                                                         \
  X(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, IO, "UnsupportedIoOperation",        \
    SH_NONE, "The current IO operation is not supported", BT_NL, 0)            \
  X(RUDA_ERR_IO_EXECUTION, IO, "Execution", SH_CAUSE,                          \
    "Can't perform the IO operation because of a runtime error: {cause}",      \
    BT_NONE, RUDA_ERR_SERVER_GENERIC)                                          \
  X(RUDA_ERR_IO_OUT_OF_MEMORY, IO, "OutOfMemory", SH_SIZE_REASON,              \
    "Out of memory: can't allocate buffer of size: {size}\nCaused by:\n  "     \
    "{reason}", BT_NL, 0)                                                      \
  X(RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION, COMPILATION,                 \
    "UnsupportedInstruction", SH_REASON,                                       \
    "An unsupported instruction caused the compilation to fail\nCaused by:\n " \
    " {reason}", BT_COLON, 0)                                                  \
  X(RUDA_ERR_COMPILATION_GENERIC, COMPILATION, "Generic", SH_REASON,           \
    "A compilation error happened\nCaused by:\n  {reason}", BT_COLON, 0)       \
  X(RUDA_ERR_COMPILATION_VALIDATION, COMPILATION, "Validation", SH_REASON,     \
    "A validation error caused the compilation to fail\nCaused by:\n  "        \
    "{reason}", BT_COLON, 0)                                                   \
  X(RUDA_ERR_COMPILATION_NO_CODE, COMPILATION, "NoCode", SH_REASON,            \
    "The kernel has no code this device can run\nCaused by:\n  {reason}",      \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_INVALID_ARGUMENT, RUDA, "InvalidArgument", SH_REASON,             \
    "Invalid argument\nCaused by:\n  {reason}", BT_COLON, 0)                   \
  X(RUDA_ERR_UNAVAILABLE, RUDA, "Unavailable", SH_REASON,                      \
    "A backend, library or device is unavailable\nCaused by:\n  {reason}",     \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_CONFIG, RUDA, "Config", SH_CONFIG,                                \
    "Invalid configuration{location}\nCaused by:\n  {reason}", BT_COLON, 0)    \
  X(RUDA_ERR_INVALID_HANDLE, RUDA, "InvalidHandle", SH_REASON,                 \
    "Invalid handle\nCaused by:\n  {reason}", BT_COLON, 0)

#endif /* RUDA_BASE_STATUS_KINDS_H */
