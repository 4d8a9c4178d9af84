/* ruda/version.h: the version of the headers and of the library.
 *
 * The macros give the version a program was compiled against; the
 * functions give the version of the library it runs with. They differ when
 * a program built against one release loads another libruda.so: a program
 * can compare them at start-up. CMake reads the version from this file.
 *
 * Versions follow semantic versioning. While the major version is 0 a minor
 * release may change the ABI, so the shared library's SONAME carries both
 * (libruda.so.0.1); from 1.0 on it carries the major version only.
 */
#ifndef RUDA_VERSION_H
#define RUDA_VERSION_H

#include "ruda/export.h"

#define RUDA_VERSION_MAJOR 0
#define RUDA_VERSION_MINOR 1
#define RUDA_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" */
#define RUDA_VERSION_STRING "0.1.0"

/* One comparable number: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define RUDA_VERSION_NUMBER \
  (RUDA_VERSION_MAJOR * 10000 + RUDA_VERSION_MINOR * 100 + RUDA_VERSION_PATCH)

RUDA_BEGIN_DECLS

/* The library's version as RUDA_VERSION_NUMBER packs it. Thread-safe;
 * cannot fail. */
unsigned ruda_version(void);

/* The library's version as "MAJOR.MINOR.PATCH": a static string, never
 * NULL, never to be freed. Thread-safe; cannot fail. */
const char *ruda_version_string(void);

RUDA_END_DECLS

#endif /* RUDA_VERSION_H */
