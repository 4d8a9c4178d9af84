/* A vendor call's failure as a ruda error, worded one way for every vendor
 * (the CUDA driver, NVRTC, NCCL, OpenCL, MPI). Each vendor's codes are
 * still translated in one file of its own (the code's name, its text);
 * this is what those files share: the message and the vendor fields. */
#ifndef RUDA_BASE_VENDOR_ERROR_H
#define RUDA_BASE_VENDOR_ERROR_H

#include <stdarg.h>
#include <stdint.h>

#include "ruda/status.h"

/* An error of `kind` reading
 *   "<call> failed with <code_name> (<code>)[: <text>][: <context>]"
 * (": <text>" when text is not NULL; ": <context>" when context_fmt,
 * formatted with ap, is not NULL and not empty), with its vendor fields
 * set to call, code_name and code (ruda_status_set_vendor). The caller
 * owns the result. Thread-safe. Never fails: out of memory gives the
 * static error of the kind. */
ruda_status_t ruda__vendor_errorv(ruda_error_kind_t kind, const char *call, const char *code_name,
                                  int64_t code, const char *text, const char *context_fmt,
                                  va_list ap);

/* One case of a switch that names a vendor's code after its identifier
 * (the name is the text written, not its value, whether the code is an
 * enum constant or a macro):
 *   switch (r) { RUDA__CASE_NAME(ncclSuccess) ... default: return "?"; } */
#define RUDA__CASE_NAME(code) \
  case code:                  \
    return #code;

#endif /* RUDA_BASE_VENDOR_ERROR_H */
