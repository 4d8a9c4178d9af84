/* Per-stream state of a server, shared by every backend.
 *
 * A server keeps one ruda__stream_t per stream id it has seen, keyed by the
 * real 64-bit id (two ids never share a state, however many streams have
 * existed). The state holds what the server layer defines for a stream:
 *
 *   errors    the stream's queued asynchronous errors (StreamErrorMode)
 *   profiler  the stream's open profiles (tokens unique per server)
 *   cursor    the stream's position, from one server-wide clock: a later
 *             operation of any stream has a larger cursor
 *   index     a small dense number (reused once the state is reclaimed) for
 *             per-stream arrays such as "last waited-on cursor per origin"
 *
 * followed by a backend extension of ops.ext_size bytes (ruda__stream_ext):
 * the memory managers, the device stream, events... of that backend, zeroed
 * when the state is created and initialised by the backend as it likes
 * (typically lazily on first use).
 *
 * Bounded memory. When more than max_streams states exist, creating one
 * reclaims idle states, least recently used first: a state is idle when it
 * has no queued error, no open profile, and the backend's `quiesce` says its
 * part holds nothing (no live allocation, no work in flight, default
 * allocation mode). A busy state is never reclaimed; a reclaim pass looks at
 * no more than RUDA__STREAM_RECLAIM_SCAN states and moves the busy ones it
 * met to the recently used end, so the next pass looks at others. A
 * reclaimed stream that is used again starts afresh (its next operation
 * creates a new state): nothing observable is lost, since an idle state
 * holds nothing.
 *
 * Lookups are O(1): a hash table by id plus a one-entry cache of the last
 * stream used (the common case: a burst of operations on one stream).
 *
 * Not thread-safe: a table belongs to one server and is used only on its
 * device's worker thread. The error counter it updates (queued_errors) is
 * atomic and may be read anywhere.
 */
#ifndef RUDA_SERVER_STREAM_TABLE_H
#define RUDA_SERVER_STREAM_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ruda/memory.h"
#include "ruda/status.h"
#include "ruda/types.h"

/* ---- Per-stream error lists (StreamErrorMode) ---- */

typedef struct ruda__stream_errors {
  ruda_status_t *items; /* `first` until a second error is queued */
  size_t len, cap;
  /* Room for one error without allocating, so an error is never lost to
   * exhausted host memory. The list must not be moved once used. */
  ruda_status_t first[1];
  /* Optional: a device-wide count of queued errors kept in step with `len`
   * (ruda__server_t.queued_errors), read by clients without a round trip. */
  atomic_size_t *counter;
} ruda__stream_errors_t;

typedef struct ruda__stream_error_mode {
  bool ignore; /* run even if the stream has errors */
  bool flush;  /* drain the stream's errors */
} ruda__stream_error_mode_t;

/* The StreamErrorMode table: initialize_memory, write, launch,
 * get_resource, cleanup, allocation_mode, start/end_profile: IGNORE; read,
 * flush, sync: DRAIN; memory_usage: CHECK. Values, not objects: a check
 * on a stream without errors reads no memory for them. */
#define RUDA__MODE_IGNORE ((ruda__stream_error_mode_t){.ignore = true, .flush = false})
#define RUDA__MODE_DRAIN ((ruda__stream_error_mode_t){.ignore = false, .flush = true})
#define RUDA__MODE_CHECK ((ruda__stream_error_mode_t){.ignore = false, .flush = false})

/* Queues `err` (taken; NULL is a no-op) on the list, converted into a
 * ServerError. When the list cannot grow, the newest error replaces the
 * last one (the list is never silently empty: the first error needs no
 * allocation). */
void ruda__stream_errors_push(ruda__stream_errors_t *e, ruda_status_t err);
/* Applies `mode` at the start of an operation: with flush the errors are
 * drained; without ignore the operation must fail: returns
 * ServerUnhealthy{drained errors} or, when errors remain queued, a
 * ServerUnhealthy with copies of (up to 16 of) them. NULL when the
 * operation may proceed. */
ruda_status_t ruda__stream_errors_check(ruda__stream_errors_t *e,
                                        ruda__stream_error_mode_t mode);
bool ruda__stream_errors_empty(const ruda__stream_errors_t *e);
void ruda__stream_errors_deinit(ruda__stream_errors_t *e);

/* ---- Timestamp profiler (open profiles of one stream) ---- */

typedef struct ruda__profiler_entry {
  uint64_t token;
  uint64_t start_ns;
  void *mark;          /* the backend's start marker (a CUDA event), or NULL */
  ruda_status_t error; /* set by ruda__profiler_error */
} ruda__profiler_entry_t;

typedef struct ruda__profiler {
  ruda__profiler_entry_t *entries;
  size_t len, cap;
} ruda__profiler_t;

/* Registers `token` starting at `start_ns` with the backend's `mark`.
 * Errors: ProfileError::Unknown when host memory is exhausted. */
ruda_status_t ruda__profiler_start(ruda__profiler_t *p, uint64_t token, uint64_t start_ns,
                                   void *mark);
/* Removes `token` and copies its entry into *out (the caller then owns
 * out->error and out->mark). False when the token is not registered. */
bool ruda__profiler_take(ruda__profiler_t *p, uint64_t token, ruda__profiler_entry_t *out);
/* The result of a taken entry ending at `end_ns`: its recorded error
 * (taken), or NULL with *out filled. */
ruda_status_t ruda__profiler_finish(ruda__profiler_entry_t *e, uint64_t end_ns,
                                    ruda_timing_method_t method,
                                    ruda_profile_duration_t *out);
/* Take + finish; ProfileError::NotRegistered for an unknown token. */
ruda_status_t ruda__profiler_stop(ruda__profiler_t *p, ruda_profiling_token_t token,
                                  uint64_t end_ns, ruda_timing_method_t method,
                                  ruda_profile_duration_t *out);
/* Marks every open profile that has no error yet failed with a copy of
 * `err` (borrowed), as a ProfileError. */
void ruda__profiler_error(ruda__profiler_t *p, ruda_status_t err);
/* Frees the entries and their errors (not their marks). */
void ruda__profiler_deinit(ruda__profiler_t *p);

/* ---- Stream state ---- */

typedef struct ruda__stream ruda__stream_t;

struct ruda__stream {
  uint64_t id;
  uint32_t index;
  uint64_t cursor;
  ruda__stream_errors_t errors;
  ruda__profiler_t profiler;
  /* Table bookkeeping. */
  ruda__stream_t *hash_next;
  ruda__stream_t *lru_prev, *lru_next;
};

/* The backend extension starts this many bytes into a state. */
#define RUDA__STREAM_EXT_OFFSET ((sizeof(ruda__stream_t) + 15u) & ~(size_t)15u)

static inline void *ruda__stream_ext(ruda__stream_t *st) {
  return (char *)st + RUDA__STREAM_EXT_OFFSET;
}
/* The state holding extension `ext`. */
static inline ruda__stream_t *ruda__stream_of_ext(void *ext) {
  return (ruda__stream_t *)(void *)((char *)ext - RUDA__STREAM_EXT_OFFSET);
}

typedef struct ruda__stream_table_ops {
  size_t ext_size;
  /* Optional (NULL: always idle). Called on a candidate for reclaim that has
   * no queued error and no open profile: may finish what is complete
   * (release bindings kept for finished work, drop staged host buffers)
   * and returns whether the backend part holds nothing any more (no live
   * allocation, no work in flight, allocation mode at its default). Must
   * not push errors. */
  bool (*quiesce)(void *ctx, ruda__stream_t *st);
  /* Optional. Frees the backend part of a state being reclaimed or torn
   * down (whether or not the backend initialised it). */
  void (*release)(void *ctx, ruda__stream_t *st);
  /* Optional (NULL: zero). The stream's memory usage, for the device-wide
   * report. */
  ruda_memory_usage_t (*usage)(void *ctx, ruda__stream_t *st);
  void *ctx;
} ruda__stream_table_ops_t;

/* How many states one reclaim pass looks at. */
#define RUDA__STREAM_RECLAIM_SCAN 32u

typedef struct ruda__stream_table {
  ruda__stream_table_ops_t ops;
  uint32_t max_streams;
  atomic_size_t *queued_errors;
  ruda__stream_t **buckets;
  uint32_t nbuckets; /* a power of two */
  uint32_t shift;    /* 64 - log2(nbuckets) */
  uint32_t count;
  ruda__stream_t *last;               /* the last stream looked up */
  ruda__stream_t *lru_head, *lru_tail; /* head: most recently used */
  ruda__stream_t *spare;              /* one state kept for host OOM */
  uint32_t *free_index;
  uint32_t nfree_index, cap_free_index;
  uint32_t next_index;
  uint64_t clock;
  uint64_t next_token;
  uint64_t created, reclaimed; /* totals, for tests and logs */
} ruda__stream_table_t;

/* Initialises an empty table keeping up to `max_streams` (0: 128) idle
 * states. A table left zeroed initialises itself on first use, without a
 * backend extension (so the server layer can queue errors for a backend
 * that has not set one up).
 * `queued_errors` (may be NULL) is kept in step with every state's error
 * list. Errors: RUDA_ERR_UNAVAILABLE when host memory is exhausted. */
ruda_status_t ruda__stream_table_init(ruda__stream_table_t *t, uint32_t max_streams,
                                      const ruda__stream_table_ops_t *ops,
                                      atomic_size_t *queued_errors);
/* Releases every state (ops.release, then its errors and profiles) and the
 * table. Safe on a zeroed or failed table. */
void ruda__stream_table_deinit(ruda__stream_table_t *t);

/* The state of `id`, created on first use (which may reclaim idle states:
 * a pointer to another state obtained before this call may be stale
 * after it). NULL only when host memory is exhausted. O(1). */
ruda__stream_t *ruda__stream_get(ruda__stream_table_t *t, ruda_stream_id_t id);
/* The state of `id` if it exists (never creates or reclaims). O(1). */
ruda__stream_t *ruda__stream_find(ruda__stream_table_t *t, ruda_stream_id_t id);

/* Advances `st` to a new position of the server-wide clock and returns it. */
static inline uint64_t ruda__stream_advance(ruda__stream_table_t *t, ruda__stream_t *st) {
  st->cursor = ++t->clock;
  return st->cursor;
}

/* Queues `err` (taken; NULL is a no-op) on the stream; every profile open
 * on the stream is marked failed with it first. The one way a backend
 * reports an asynchronous error. */
void ruda__stream_push_error(ruda__stream_t *st, ruda_status_t err);
/* Same for the error of a launch: it is made a ServerError naming `kernel`
 * and the stream (ruda_status_set_launch) before it is queued. */
void ruda__stream_push_launch_error(ruda__stream_t *st, ruda_status_t err, const char *kernel);
/* StreamErrorMode on the stream (ruda__stream_errors_check). Observing a
 * stream (profiles, usage) never drains it. */
static inline ruda_status_t ruda__stream_check(ruda__stream_t *st,
                                               ruda__stream_error_mode_t mode) {
  return st->errors.len ? ruda__stream_errors_check(&st->errors, mode) : NULL;
}

/* Opens a profile on `st` at `start_ns` with the backend's `mark`; the
 * token is unique in the table. Errors: ProfileError::Unknown (host
 * memory). */
ruda_status_t ruda__stream_profile_start(ruda__stream_table_t *t, ruda__stream_t *st,
                                         uint64_t start_ns, void *mark,
                                         ruda_profiling_token_t *out);

/* Calls fn(ctx, state) for every state, most recently used first. fn must
 * not create or remove states. */
void ruda__stream_table_foreach(ruda__stream_table_t *t,
                                void (*fn)(void *ctx, ruda__stream_t *st), void *ctx);
/* The sum of ops.usage over every state. */
ruda_memory_usage_t ruda__stream_table_usage(ruda__stream_table_t *t);
/* Number of states that exist now. */
static inline uint32_t ruda__stream_table_count(const ruda__stream_table_t *t) {
  return t->count;
}

#endif /* RUDA_SERVER_STREAM_TABLE_H */
