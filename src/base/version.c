/* The library's version (ruda/version.h). */
#include "ruda/version.h"

unsigned ruda_version(void) { return RUDA_VERSION_NUMBER; }

const char *ruda_version_string(void) { return RUDA_VERSION_STRING; }
