/* The timeline trace: a Chrome trace JSON file (the "JSON Object Format")
 * that Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 * Turned on by RUDA_TRACE=<file> in the environment (read once, before
 * main) or by ruda__trace_start(path), which the client calls with the
 * configuration's [trace] file. The environment wins over the
 * configuration. In the path %r is the MPI rank, %p the process id; in a
 * job (the launcher's rank variables) a path without %r gets ".rank<r>"
 * before its extension (ruda_trace_start, ruda/profiling.h). Off, every hook costs one relaxed atomic load
 * (ruda__trace_on()); callers test it before computing anything.
 *
 * Layout of the timeline:
 *  - one process per device: pid = 1 + type_id * 1000 + index_id (plus
 *    100000 * rank in a job), named by a metadata event ("cpu:0", "cuda:1";
 *    "rank 1 cpu:0" in a job);
 *  - one thread (track) per stream: tid = stream value, named "stream N";
 *  - slices ("ph":"X") with category "kernel", "copy", "sync",
 *    "collective" or "alloc", the operation's name, and args {"bytes": n}
 *    when bytes > 0;
 *  - counters ("ph":"C") per device: "memory in use", "memory reserved",
 *    args {"bytes": value} (ruda__server_trace_memory).
 * Timestamps are CLOCK_MONOTONIC nanoseconds (ruda__now_ns()); the file
 * holds microseconds relative to the moment the trace started.
 *
 * Cost when on: an event is copied into a process-wide batch under a short
 * mutex (no formatting, no I/O; about 80 ns on the 2-core CI machine); full
 * batches of 8192 events go to a writer thread that formats and writes
 * them in order. When the writer falls 16 batches behind (or could not
 * start), the thread that filled a batch writes it itself.
 *
 * The file is complete JSON only after ruda__trace_shutdown(), which an
 * atexit hook also calls; a process killed by a signal leaves a truncated
 * file (Perfetto still opens most of it).
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef RUDA_SERVER_TRACE_H
#define RUDA_SERVER_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ruda/types.h"

/* The on/off flag, alone on its cache line so that the hot paths reading
 * it never share a line with what the trace writer updates. */
typedef struct ruda__trace_flag {
  _Alignas(64) atomic_bool on;
  char pad_[64 - sizeof(atomic_bool)];
} ruda__trace_flag_t;
extern ruda__trace_flag_t ruda__trace_flag;

/* True while a trace file is open. One relaxed atomic load. */
static inline bool ruda__trace_on(void) {
  return atomic_load_explicit(&ruda__trace_flag.on, memory_order_relaxed);
}

/* Opens `path` (truncated) and starts tracing. Returns false, with a line
 * on stderr, when the file cannot be opened; returns true without change
 * when a trace is already running (the first path wins). */
bool ruda__trace_start(const char *path);

/* One slice on the device's track for `stream`. `name` is borrowed
 * (copied; names longer than 95 bytes are cut). `category` must have
 * static storage duration (a string literal such as "kernel"): it is kept
 * as a pointer until the event is written. Does nothing when the trace is
 * off. */
void ruda__trace_slice(ruda_device_id_t dev, uint64_t stream, const char *category,
                       const char *name, uint64_t start_ns, uint64_t end_ns,
                       uint64_t bytes);

/* One sample of a counter track of the device ("memory in use",
 * "memory reserved"); `name` is borrowed (copied). Does nothing when the
 * trace is off. */
void ruda__trace_counter(ruda_device_id_t dev, const char *name, uint64_t ts_ns,
                         uint64_t value);

/* Writes what is buffered, closes the JSON and the file, and turns the
 * trace off. Later events are dropped. Safe to call more than once. */
void ruda__trace_shutdown(void);

/* The process id a device's track uses in the file. */
static inline uint32_t ruda__trace_pid(ruda_device_id_t dev) {
  return 1u + (uint32_t)dev.type_id * 1000u + (uint32_t)dev.index_id;
}

#endif /* RUDA_SERVER_TRACE_H */
