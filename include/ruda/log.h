/* ruda/log.h: log channels (compilation, memory, streaming, profiling, autotune).
 *
 * Each channel has a level and sinks (stdout, stderr, a file) taken from the
 * configuration (ruda/config.h: the `logger` of each section, or
 * RUDA_LOG_<CHANNEL>=level[:sink]). Sinks are shared between channels that
 * name the same target, files are created with their parent directories,
 * opened in append or truncate mode, and flushed after every line.
 *
 * Typical use on a hot path:
 *
 *   if (ruda_log_enabled(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL))
 *     ruda_log(RUDA_LOG_CHANNEL_MEMORY, RUDA_LOG_LEVEL_FULL,
 *              "alloc %zu bytes on stream %u", size, stream);
 */
#ifndef RUDA_LOG_H
#define RUDA_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "ruda/config.h"
#include "ruda/status.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* Whether a message of `level` on `channel` would be written: one relaxed
 * atomic load once the logger is set up (the first call sets it up from
 * ruda_config_get()). False for RUDA_LOG_LEVEL_DISABLED and invalid
 * arguments. Thread-safe; takes no lock after the first call. */
bool ruda_log_enabled(ruda_log_channel_t channel, ruda_log_level_t level);

/* The channel's current level (RUDA_LOG_LEVEL_DISABLED for an invalid
 * channel). Thread-safe. */
ruda_log_level_t ruda_log_level(ruda_log_channel_t channel);

/* Writes one line "[ruda <channel>] <message>" to each of the channel's
 * sinks when ruda_log_enabled(channel, level); a trailing newline in the
 * message is not doubled. Thread-safe: lines from different threads never
 * interleave. Never fails (a sink that cannot be written is skipped). */
void ruda_log(ruda_log_channel_t channel, ruda_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ruda_logv(ruda_log_channel_t channel, ruda_log_level_t level, const char *fmt,
               va_list ap);

/* Replaces the logger's levels and sinks with those of `cfg` (NULL: the
 * process-wide ruda_config_get()). Files are opened now; a file that cannot
 * be opened is skipped, and the first such failure is returned as
 * RUDA_ERR_CONFIG naming the file (the other sinks are still set up).
 * Thread-safe: concurrent ruda_log() calls see the old or the new sinks. */
ruda_status_t ruda_log_configure(const ruda_config_t *cfg);

/* Closes every file sink and forgets the setup; the next ruda_log_enabled()
 * or ruda_log() sets the logger up again from ruda_config_get().
 * Thread-safe. */
void ruda_log_shutdown(void);

/* The "balanced" name format for kernel and type names: the
 * last path segment of the outer name, then " | " and each generic argument,
 * recursively, leaving out "_" placeholders:
 *   "a::b::UnaryNumeric<f32, x::CubeTensor<_>::copy::Copy, c::CudaRuntime>"
 *   -> "UnaryNumeric | f32 | CubeTensor | Copy | CudaRuntime".
 * A plain C name is returned as it is. Writes at most `cap` bytes including
 * the terminator into `buf` and returns the length the full text needs
 * (snprintf semantics). NULL `name` gives "". Thread-safe. */
size_t ruda_name_balanced(const char *name, char *buf, size_t cap);

RUDA_END_DECLS

#endif /* RUDA_LOG_H */
