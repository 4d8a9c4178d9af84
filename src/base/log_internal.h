/* Internal logging entry points (src/base/log.c); the public ones are in
 * ruda/log.h. */
#ifndef RUDA_BASE_LOG_INTERNAL_H
#define RUDA_BASE_LOG_INTERNAL_H

#include "ruda/log.h"

/* Writes "[ruda <channel>] <text>" (a newline added when missing) whatever
 * the channel's level: to the channel's sinks when the channel is enabled,
 * else to stderr. For what must never go unseen (an error nobody read).
 * Thread-safe; never fails (a sink that cannot be written is skipped). */
void ruda__log_always(ruda_log_channel_t channel, const char *text);

#endif /* RUDA_BASE_LOG_INTERNAL_H */
