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

#endif /* RUDA_BASE_LOG_INTERNAL_H */
