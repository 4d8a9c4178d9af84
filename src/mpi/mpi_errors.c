/* MPI error codes: the one place they are translated. MPI's communicators
 * of ruda's groups return errors (MPI_ERRORS_RETURN) instead of aborting. */
#include <stdarg.h>
#include <stdio.h>

#include "base/vendor_error.h"
#include "mpi/mpi_internal.h"

static const char *class_name(int cls) {
  switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_TAG: return "MPI_ERR_TAG";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_TRUNCATE: return "MPI_ERR_TRUNCATE";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    case MPI_ERR_IN_STATUS: return "MPI_ERR_IN_STATUS";
    case MPI_ERR_PENDING: return "MPI_ERR_PENDING";
    case MPI_ERR_NO_MEM: return "MPI_ERR_NO_MEM";
    case MPI_ERR_UNSUPPORTED_OPERATION: return "MPI_ERR_UNSUPPORTED_OPERATION";
    default: return "MPI_ERR_(unknown class)";
  }
}

ruda_status_t ruda__mpi_error(ruda_error_kind_t kind, int code, const char *call,
                              const char *fmt, ...) {
  int cls = MPI_ERR_OTHER, len = 0;
  char text[MPI_MAX_ERROR_STRING];
  text[0] = '\0';
  if (MPI_Error_class(code, &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) text[0] = '\0';
  va_list ap;
  va_start(ap, fmt);
  ruda_status_t s = ruda__vendor_errorv(kind, call, class_name(cls), (int64_t)code,
                                        text[0] ? text : "no description", fmt, ap);
  va_end(ap);
  return s;
}
