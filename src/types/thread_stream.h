/* The calling thread's stream id, read inline.
 *
 * Every OS thread is its own stream unless it swaps in another id
 * (ruda_stream_id_current and ruda_stream_id_swap in ruda/types.h). The
 * id is drawn from the process-wide counter on the thread's first call;
 * the client reads it on every call it makes, so the read is an inline
 * load of a thread-local and the draw stays out of line.
 */
#ifndef RUDA_TYPES_THREAD_STREAM_H
#define RUDA_TYPES_THREAD_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "base/sync.h"
#include "ruda/types.h"

typedef struct ruda__thread_stream {
  bool set;       /* false until the first read or swap */
  uint64_t value;
} ruda__thread_stream_t;

extern RUDA__THREAD_LOCAL ruda__thread_stream_t ruda__thread_stream;

/* Draws the thread's id (its first read). */
ruda_stream_id_t ruda__thread_stream_draw(void);

static inline ruda_stream_id_t ruda__stream_id_current(void) {
  if (__builtin_expect(ruda__thread_stream.set, 1)) {
    ruda_stream_id_t id = {ruda__thread_stream.value};
    return id;
  }
  return ruda__thread_stream_draw();
}

#endif
