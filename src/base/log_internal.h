/* Internal logging entry points (src/base/log.c); the public ones are in
 * ruda/log.h. */
#ifndef RUDA_BASE_LOG_INTERNAL_H
#define RUDA_BASE_LOG_INTERNAL_H

#include <stdarg.h>

#include "ruda/log.h"

/* Writes "[ruda <channel>] <text>" (a newline added when missing) whatever
 * the channel's level: to the channel's sinks when the channel is enabled,
 * else to stderr. For what must never go unseen (an error nobody read).
 * Thread-safe; never fails (a sink that cannot be written is skipped). */
void ruda__log_always(ruda_log_channel_t channel, const char *text);

/* ruda_logv() of the text with "[tag] " before it, as a component (a
 * backend, a memory manager) marks its lines: "[ruda memory] [tag] text".
 * Formats nothing when the channel is off at `level`; the text is cut at
 * about 1 KiB. Thread-safe; never fails. */
void ruda__log_taggedv(ruda_log_channel_t channel, ruda_log_level_t level, const char *tag,
                       const char *fmt, va_list ap);
void ruda__log_tagged(ruda_log_channel_t channel, ruda_log_level_t level, const char *tag,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Writes "ruda[<who>] <kind><text>" (text from fmt and ap) and a newline
 * to stderr, whatever the logger's setup. Thread-safe; never fails. */
void ruda__stderr_linev(const char *who, const char *kind, const char *fmt, va_list ap);
/* ruda__stderr_linev(who, "warning: ", ...): for what a user must see (a
 * cache entry skipped, a setting ignored). */
void ruda__warn(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* RUDA_BASE_LOG_INTERNAL_H */
