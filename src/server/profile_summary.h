/* The profiling summary table.
 *
 * Profiled operations (kernel launches measured at the Basic, Medium or Full
 * profile level, or anything a tool measures itself) are recorded by name;
 * the summary prints
 *
 *   | Name | Duration | Num Computed | Ratio |
 *
 * one row per name, sorted by total duration (longest first), then a Total
 * row, and is reset after printing (the client does it at sync).
 *
 * Names are truncated at their first newline and shortened the
 * "balanced" way: the last path segment of the outer type, then " | " and
 * each generic argument ("a::b::Add<f32, c::Cpu>" -> "Add | f32 | Cpu").
 * Plain C kernel names ("vector_add") stay as they are.
 *
 * Thread-safety: every function may be called from any thread; the table
 * is process-wide and guarded by one short mutex.
 */
#ifndef RUDA_SERVER_PROFILE_SUMMARY_H
#define RUDA_SERVER_PROFILE_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

/* Adds one measurement of `duration_ns` to the row for `name` (borrowed;
 * copied after shortening). A NULL name counts as "unknown". When memory
 * is exhausted the measurement is dropped. */
void ruda__profile_summary_record(const char *name, uint64_t duration_ns);

/* Writes the table (with a trailing newline) into buf; snprintf semantics:
 * returns the length the full text needs, writes at most cap-1 bytes plus
 * a terminator. An empty summary formats as "" (returns 0). Does not reset. */
size_t ruda__profile_summary_format(char *buf, size_t cap);

/* Prints the table and clears it: to the sink set with
 * ruda__profile_summary_set_sink(), else to the profiling log channel (one
 * log line per row) when it is enabled at level basic, else to stdout.
 * Prints nothing when nothing was recorded since the last reset. */
void ruda__profile_summary_print_and_reset(void);

/* Clears the table without printing. */
void ruda__profile_summary_reset(void);

/* Where print_and_reset writes: fn(text, ctx) receives the whole table.
 * NULL restores the default (the profiling log channel, else stdout). */
void ruda__profile_summary_set_sink(void (*fn)(const char *text, void *ctx), void *ctx);

/* ruda_name_balanced() (ruda/log.h) of the name's first line; NULL reads
 * as "unknown". snprintf semantics. */
size_t ruda__profile_name_balanced(const char *name, char *buf, size_t cap);

/* Formats a duration in the largest unit (s, ms, µs, ns) that it reaches,
 * with the fraction exact and without trailing zeros ("950ns", "12.345µs",
 * "3.2ms", "1.5s", "2s"); snprintf semantics. */
size_t ruda__profile_duration_format(uint64_t ns, char *buf, size_t cap);

#endif /* RUDA_SERVER_PROFILE_SUMMARY_H */
