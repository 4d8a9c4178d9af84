/* How a failed run-time build of a portable kernel reads: the compiler's
 * messages about the user's own file (file:line), the keyword hints of
 * ruda_kernel_text_hints(), and a pointer to the whole log; the messages
 * about ruda's prelude (ruda/dialect/...) and the composed source go only to
 * the log channel "compilation". Every backend that compiles portable text
 * (NVRTC, OpenCL, the CPU's run-time compiler) builds its error here, so a
 * user reads the same shape everywhere.
 *
 * Thread-safe: no state.
 */
#ifndef RUDA_SERVER_COMPILE_LOG_H
#define RUDA_SERVER_COMPILE_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "ruda/status.h"

typedef struct ruda__compile_failure {
  const char *kernel;   /* the kernel's (or file's) name */
  const char *origin;   /* the kernel file, where the messages point (NULL: unknown) */
  const char *compiler; /* "NVRTC for sm_90", "the OpenCL compiler of opencl:0 (...)" */
  const char *log;      /* the compiler's whole log (NULL: none) */
  const char *text;     /* the user's text (without the prelude): for the hints */
  size_t text_len;
  const char *source;   /* what the compiler was given (prelude + text), for the log */
  size_t source_len;
} ruda__compile_failure_t;

/* LaunchError::CompilationError(Generic) whose reason is
 *   [Compilation Error] portable kernel 'K' (ORIGIN), compiled by COMPILER:
 *       <the log's messages about the user's file, each with its following
 *        snippet lines; prelude locations left out of them>
 *       hint: ...
 *       (N messages about ruda's prelude left out: RUDA_LOG_COMPILATION=basic
 *        prints the whole log)
 * When no message points outside the prelude, the first prelude messages are
 * kept, so the reason is never empty. Writes the whole log (level basic)
 * and the composed source (level full) to the compilation channel. Never
 * fails (out of memory: a shorter reason). */
ruda_status_t ruda__compile_failure_status(const ruda__compile_failure_t *f);

/* Whether a log line is a compiler's closing count ("2 errors generated.",
 * "1 warning and 5 errors generated.", "3 errors detected in the
 * compilation of ..."), which says nothing the messages do not. */
bool ruda__compile_log_is_summary(const char *line, size_t len);

#endif
