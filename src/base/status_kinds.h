/* src/base/status_kinds.h: the error-kind table (internal).
 *
 * One row per kind: X(kind, kind name, family, JSON variant name, payload
 * shape, Display template, backtrace trailer, default cause kind).
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

#define RUDA__ERROR_KINDS(X)                                                   \
  X(RUDA_ERR_SERVER_GENERIC, "ServerError::Generic", RUDA_FAMILY_SERVER,       \
    "Generic", SH_REASON,                                                      \
    "An error happened during execution\nCaused by:\n  {reason}", BT_COLON, 0) \
  X(RUDA_ERR_SERVER_LAUNCH, "ServerError::Launch", RUDA_FAMILY_SERVER,         \
    "Launch", SH_CAUSE,                                                        \
    "A launch{launch} failed\nCaused by:\n  {cause}", BT_NONE,                  \
    RUDA_ERR_LAUNCH_UNKNOWN)                                                   \
  X(RUDA_ERR_SERVER_PROFILE, "ServerError::Profile", RUDA_FAMILY_SERVER,       \
    "Profile", SH_CAUSE,                                                       \
    "Profiling failed{launch}\nCaused by:\n  {cause}",                         \
    BT_NONE, RUDA_ERR_PROFILE_UNKNOWN)                                         \
  X(RUDA_ERR_SERVER_IO, "ServerError::Io", RUDA_FAMILY_SERVER, "Io", SH_CAUSE, \
    "A memory operation failed{launch}\nCaused by:\n  {cause}",                \
    BT_NONE, RUDA_ERR_IO_UNKNOWN)                                              \
  X(RUDA_ERR_SERVER_UNHEALTHY, "ServerError::ServerUnhealthy",                 \
    RUDA_FAMILY_SERVER, "ServerUnhealthy", SH_LIST,                            \
    "Work queued on the stream failed\nCaused by:\n  {errors}", BT_NONE, 0)     \
  X(RUDA_ERR_SERVER_CANCELLED, "ServerError::Cancelled", RUDA_FAMILY_SERVER,   \
    "Cancelled", SH_REASON,                                                    \
    "The work{launch} was cancelled\nCaused by:\n  {reason}", BT_NONE, 0)       \
  X(RUDA_ERR_SERVER_DEVICE_LOST, "ServerError::DeviceLost", RUDA_FAMILY_SERVER, \
    "DeviceLost", SH_REASON,                                                   \
    "Work{launch} failed: the device was lost\nCaused by:\n  {reason}",         \
    BT_NONE, 0)                                                                \
  X(RUDA_ERR_LAUNCH_COMPILATION, "LaunchError::CompilationError",              \
    RUDA_FAMILY_LAUNCH, "CompilationError", SH_CAUSE,                          \
    "A compilation error happened during launch\nCaused by:\n  {cause}",       \
    BT_NONE, RUDA_ERR_COMPILATION_GENERIC)                                     \
  X(RUDA_ERR_LAUNCH_OUT_OF_MEMORY, "LaunchError::OutOfMemory",                 \
    RUDA_FAMILY_LAUNCH, "OutOfMemory", SH_REASON,                              \
    "An out-of-memory error happened during launch\nCaused by:\n  {reason}",   \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_LAUNCH_TOO_MANY_RESOURCES, "LaunchError::TooManyResources",       \
    RUDA_FAMILY_LAUNCH, "TooManyResources", SH_CAUSE,                          \
    "Too many resources were requested during launch\n{cause}", BT_NONE, 0)    \
  X(RUDA_ERR_LAUNCH_UNKNOWN, "LaunchError::Unknown", RUDA_FAMILY_LAUNCH,       \
    "Unknown", SH_REASON,                                                      \
    "An unknown error happened during launch\nCaused by:\n  {reason}",         \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_LAUNCH_IO, "LaunchError::IoError", RUDA_FAMILY_LAUNCH, "IoError", \
    SH_CAUSE, "An io error happened during launch\nCaused by:\n  {cause}",     \
    BT_NONE, RUDA_ERR_IO_UNKNOWN)                                              \
  X(RUDA_ERR_RESOURCE_SHARED_MEMORY, "ResourceLimitError::SharedMemory",       \
    RUDA_FAMILY_RESOURCE, "SharedMemory", SH_LIMIT,                            \
    "Too much shared memory requested.\nRequested {requested} bytes, maximum " \
    "{max} bytes available.",                                                  \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_RESOURCE_UNITS, "ResourceLimitError::Units",                      \
    RUDA_FAMILY_RESOURCE, "Units", SH_LIMIT,                                   \
    "Total unit count exceeds maximum.\nRequested {requested} units, max "     \
    "units is {max}.",                                                         \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_RESOURCE_RUDA_DIM, "ResourceLimitError::RudaDim",                 \
    RUDA_FAMILY_RESOURCE, "RudaDim", SH_DIM,                                   \
    "Ruda dim exceeds maximum bounds.\nRequested {dims_req}, max is "          \
    "{dims_max}.",                                                             \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_RESOURCE_RUDA_COUNT, "ResourceLimitError::RudaCount",             \
    RUDA_FAMILY_RESOURCE, "RudaCount", SH_DIM,                                 \
    "Ruda count exceeds the device's maximum.\nRequested {dims_req}, max is "  \
    "{dims_max}.",                                                             \
    BT_PLAIN, 0)                                                               \
  X(RUDA_ERR_PROFILE_UNKNOWN, "ProfileError::Unknown", RUDA_FAMILY_PROFILE,    \
    "Unknown", SH_REASON,                                                      \
    "An unknown error happened during profiling\nCaused by:\n  {reason}",      \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_PROFILE_NOT_REGISTERED, "ProfileError::NotRegistered",            \
    RUDA_FAMILY_PROFILE, "NotRegistered", SH_NONE, "No profiling registered",  \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_PROFILE_LAUNCH, "ProfileError::Launch", RUDA_FAMILY_PROFILE,      \
    "Launch", SH_CAUSE,                                                        \
    "A launch error happened during profiling\nCaused by:\n  {cause}",         \
    BT_NONE, RUDA_ERR_LAUNCH_UNKNOWN)                                          \
  X(RUDA_ERR_PROFILE_SERVER, "ProfileError::Server", RUDA_FAMILY_PROFILE,      \
    "Server", SH_CAUSE,                                                        \
    "An execution error happened during profiling\nCaused by:\n  {cause}",     \
    BT_NONE, RUDA_ERR_SERVER_GENERIC)                                          \
  X(RUDA_ERR_IO_BUFFER_TOO_BIG, "IoError::BufferTooBig", RUDA_FAMILY_IO,       \
    "BufferTooBig", SH_SIZE, "can't allocate buffer of size: {size}", BT_NL, 0)\
  X(RUDA_ERR_IO_UNSUPPORTED_STRIDES, "IoError::UnsupportedStrides",            \
    RUDA_FAMILY_IO, "UnsupportedStrides", SH_NONE,                             \
    "the provided strides are not supported for this operation", BT_NL, 0)     \
  X(RUDA_ERR_IO_NOT_FOUND, "IoError::NotFound", RUDA_FAMILY_IO, "NotFound",    \
    SH_REASON, "couldn't find resource for that handle: {reason}", BT_NL, 0)   \
  X(RUDA_ERR_IO_FREE_ERROR, "IoError::FreeError", RUDA_FAMILY_IO, "FreeError", \
    SH_NONE, "couldn't free the handle, since it is currently in used. ",      \
    BT_NL, 0)                                                                  \
  X(RUDA_ERR_IO_UNKNOWN, "IoError::Unknown", RUDA_FAMILY_IO, "Unknown",        \
    SH_DESC, "Unknown error happened during execution\nCaused by:\n  {reason}",\
    BT_NL, 0)                                                                  \
  X(RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION, "IoError::UnsupportedIoOperation",   \
    RUDA_FAMILY_IO, "UnsupportedIoOperation", SH_NONE,                         \
    "The current IO operation is not supported", BT_NL, 0)                    \
  X(RUDA_ERR_IO_EXECUTION, "IoError::Execution", RUDA_FAMILY_IO, "Execution",  \
    SH_CAUSE,                                                                  \
    "Can't perform the IO operation because of a runtime error: {cause}",      \
    BT_NONE, RUDA_ERR_SERVER_GENERIC)                                          \
  X(RUDA_ERR_IO_OUT_OF_MEMORY, "IoError::OutOfMemory", RUDA_FAMILY_IO,         \
    "OutOfMemory", SH_SIZE_REASON,                                             \
    "Out of memory: can't allocate buffer of size: {size}\nCaused by:\n  "     \
    "{reason}",                                                                \
    BT_NL, 0)                                                                  \
  X(RUDA_ERR_COMPILATION_UNSUPPORTED_INSTRUCTION,                              \
    "CompilationError::UnsupportedInstruction", RUDA_FAMILY_COMPILATION,       \
    "UnsupportedInstruction", SH_REASON,                                       \
    "An unsupported instruction caused the compilation to fail\nCaused by:\n " \
    " {reason}",                                                               \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_COMPILATION_GENERIC, "CompilationError::Generic",                 \
    RUDA_FAMILY_COMPILATION, "Generic", SH_REASON,                             \
    "A compilation error happened\nCaused by:\n  {reason}", BT_COLON, 0)       \
  X(RUDA_ERR_COMPILATION_VALIDATION, "CompilationError::Validation",           \
    RUDA_FAMILY_COMPILATION, "Validation", SH_REASON,                          \
    "A validation error caused the compilation to fail\nCaused by:\n  "        \
    "{reason}",                                                                \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_COMPILATION_NO_CODE, "CompilationError::NoCode",                  \
    RUDA_FAMILY_COMPILATION, "NoCode", SH_REASON,                              \
    "The kernel has no code this device can run\nCaused by:\n  {reason}",      \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_INVALID_ARGUMENT, "RudaError::InvalidArgument", RUDA_FAMILY_RUDA, \
    "InvalidArgument", SH_REASON, "Invalid argument\nCaused by:\n  {reason}",  \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_UNAVAILABLE, "RudaError::Unavailable", RUDA_FAMILY_RUDA,          \
    "Unavailable", SH_REASON,                                                  \
    "A backend, library or device is unavailable\nCaused by:\n  {reason}",     \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_CONFIG, "RudaError::Config", RUDA_FAMILY_RUDA, "Config",          \
    SH_CONFIG, "Invalid configuration{location}\nCaused by:\n  {reason}",      \
    BT_COLON, 0)                                                               \
  X(RUDA_ERR_INVALID_HANDLE, "RudaError::InvalidHandle", RUDA_FAMILY_RUDA,     \
    "InvalidHandle", SH_REASON, "Invalid handle\nCaused by:\n  {reason}",      \
    BT_COLON, 0)

#endif /* RUDA_BASE_STATUS_KINDS_H */
