/* src/base/backtrace.h: backtrace capture (internal). */
#ifndef RUDA_BASE_BACKTRACE_H
#define RUDA_BASE_BACKTRACE_H

#include <stdbool.h>

/* The current call stack as text, one frame a line ("  3: symbol"),
 * skipping `skip` innermost frames besides this function's own. Allocated
 * with ruda__malloc; the caller frees with ruda__free. NULL when the stack
 * cannot be read or memory is exhausted. Captures whether or not
 * RUDA_BACKTRACE is set; callers check ruda_backtrace_enabled() first.
 * Thread-safe. */
char *ruda__backtrace_capture(unsigned skip);

/* Test hook: 1 forces backtraces on, 0 off, -1 goes back to RUDA_BACKTRACE
 * (read again on next use). */
void ruda__backtrace_override(int mode);

/* Whether RUDA_BACKTRACE asks for every frame ("full") rather than the
 * frames outside ruda's error constructors. */
bool ruda__backtrace_full(void);

#endif /* RUDA_BASE_BACKTRACE_H */
