/* src/base/status_internal.h: the layout of a status object (internal). */
#ifndef RUDA_BASE_STATUS_INTERNAL_H
#define RUDA_BASE_STATUS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"

struct ruda_status {
  ruda_error_kind_t kind;
  bool is_static; /* one of the preallocated out-of-memory errors */
  char *reason;   /* reason or description; NULL: not provided */
  uint64_t requested, max, size;
  uint32_t dims_requested[3], dims_max[3];
  struct ruda_status *cause;   /* wrapping variants */
  struct ruda_status **errors; /* ServerUnhealthy */
  size_t count;
  char *vendor_call, *vendor_code_name;
  int64_t vendor_code;
  char *file, *key; /* Config */
  uint32_t line;
  char *backtrace; /* NULL: not captured */
};

/* An error of a kind with a size and a reason (IoError::OutOfMemory): both
 * fields set. Never fails (the static error of the kind when memory runs
 * out). */
ruda_status_t ruda__status_size_reason(ruda_error_kind_t kind, uint64_t size, const char *fmt,
                                       ...) __attribute__((format(printf, 3, 4)));

/* The preallocated error of `kind` (InvalidArgument for an unknown kind). */
ruda_status_t ruda__status_static(ruda_error_kind_t kind);

#endif /* RUDA_BASE_STATUS_INTERNAL_H */
