/* MPI error codes: the one place they are translated. MPI's communicators
 * of ruda's groups return errors (MPI_ERRORS_RETURN) instead of aborting. */
#include <stdarg.h>
#include <stdio.h>

#include "base/vendor_error.h"
#include "mpi/mpi_internal.h"

static const char *class_name(int cls) {
  switch (cls) {
    RUDA__CASE_NAME(MPI_SUCCESS)
    RUDA__CASE_NAME(MPI_ERR_BUFFER)
    RUDA__CASE_NAME(MPI_ERR_COUNT)
    RUDA__CASE_NAME(MPI_ERR_TYPE)
    RUDA__CASE_NAME(MPI_ERR_TAG)
    RUDA__CASE_NAME(MPI_ERR_COMM)
    RUDA__CASE_NAME(MPI_ERR_RANK)
    RUDA__CASE_NAME(MPI_ERR_ROOT)
    RUDA__CASE_NAME(MPI_ERR_OP)
    RUDA__CASE_NAME(MPI_ERR_ARG)
    RUDA__CASE_NAME(MPI_ERR_TRUNCATE)
    RUDA__CASE_NAME(MPI_ERR_OTHER)
    RUDA__CASE_NAME(MPI_ERR_INTERN)
    RUDA__CASE_NAME(MPI_ERR_IN_STATUS)
    RUDA__CASE_NAME(MPI_ERR_PENDING)
    RUDA__CASE_NAME(MPI_ERR_NO_MEM)
    RUDA__CASE_NAME(MPI_ERR_UNSUPPORTED_OPERATION)
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
