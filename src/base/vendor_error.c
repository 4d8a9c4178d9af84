/* A vendor call's failure as a ruda error (vendor_error.h). */
#include "base/vendor_error.h"

#include <stdio.h>

ruda_status_t ruda__vendor_errorv(ruda_error_kind_t kind, const char *call, const char *code_name,
                                  int64_t code, const char *text, const char *context_fmt,
                                  va_list ap) {
  char context[768];
  context[0] = '\0';
  if (context_fmt != NULL) vsnprintf(context, sizeof context, context_fmt, ap);
  ruda_status_t s = ruda_status_create(kind, "%s failed with %s (%lld)%s%s%s%s", call, code_name,
                                       (long long)code, text ? ": " : "", text ? text : "",
                                       context[0] ? ": " : "", context);
  return ruda_status_set_vendor(s, call, code_name, code);
}
