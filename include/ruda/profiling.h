/* ruda/profiling.h: the profiling summary table and the timeline trace.
 *
 * The summary is one process-wide table of named durations. At [profiling]
 * level basic and above ruda records the device time of every launch in it
 * and prints it at the next sync; a program (or a tool) may record its own
 * measurements too, format the table and reset it. The table reads
 *
 *   | Name | Duration | Num Computed | Ratio |
 *
 * one row per name, the longest total first, then a Total row. Names are
 * cut at their first newline and shortened as ruda_name_balanced()
 * (ruda/log.h) does.
 *
 * The trace is a Chrome trace JSON file (Perfetto and chrome://tracing open
 * it): one track per device stream with a slice per kernel, copy, sync,
 * collective and allocation, and counters of the memory in use and
 * reserved per device. RUDA_TRACE=FILE or [trace] file in ruda.toml turn
 * it on for the whole process; ruda_trace_start() does it from the
 * program. docs/tools.md describes the file.
 *
 * Thread-safety: every function here may be called from any thread.
 */
#ifndef RUDA_PROFILING_H
#define RUDA_PROFILING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/status.h"

#include "ruda/export.h"

RUDA_BEGIN_DECLS

/* ---- The profiling summary ---- */

/* Adds one measurement of `duration_ns` to the row of `name` (borrowed;
 * copied after shortening; NULL counts as "unknown"). When memory is
 * exhausted the measurement is dropped. Never fails. */
void ruda_profile_summary_record(const char *name, uint64_t duration_ns);

/* Writes the table, with a trailing newline, into the caller's `buf`:
 * snprintf semantics (at most `cap` bytes including the terminator;
 * returns the length the whole text needs). An empty table formats as ""
 * and returns 0. Does not reset. */
size_t ruda_profile_summary_format(char *buf, size_t cap);

/* Clears the table without printing it. */
void ruda_profile_summary_reset(void);

/* ---- The timeline trace ---- */

/* Opens `path` (truncated) and starts the trace. In `path`, %r stands for
 * the process's rank in an MPI job (0 outside one), %p for its process id
 * and %% for '%'; in a job (the launcher's OMPI_COMM_WORLD_RANK, PMI_RANK,
 * PMIX_RANK, MV2_COMM_WORLD_RANK or SLURM_PROCID), a path without %r gets
 * ".rank<r>" before its extension, so ranks never share a file. Does
 * nothing and returns NULL while a trace is already running (the first
 * file wins). Errors:
 * RUDA_ERR_INVALID_ARGUMENT (NULL or empty path), RUDA_ERR_IO_UNKNOWN
 * naming the file when it cannot be opened (tracing stays off). */
ruda_status_t ruda_trace_start(const char *path);

/* Writes what is buffered, completes the JSON, closes the file and turns
 * the trace off; later events are dropped. The file is complete JSON only
 * after this call (an exit hook makes it at process exit too). A no-op
 * when no trace is running. */
void ruda_trace_stop(void);

/* True while a trace file is open. */
bool ruda_trace_active(void);

RUDA_END_DECLS

#endif /* RUDA_PROFILING_H */
