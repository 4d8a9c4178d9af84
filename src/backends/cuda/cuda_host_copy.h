/* Parallel host memcpy for the CUDA backend's staging paths.
 *
 * Copying pageable memory into pinned staging is what limits uploads from
 * pageable memory; a few threads copying chunks in parallel, while the
 * device thread starts the DMA of each chunk as soon as it is ready, keep
 * the copy engine busy. One job runs at a time; a caller that finds the
 * pool busy copies on its own thread instead.
 *
 * Thread-safety: jobs may be started from any thread.
 */
#ifndef RUDA_CUDA_HOST_COPY_H
#define RUDA_CUDA_HOST_COPY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct ruda__copy_pool ruda__copy_pool_t;

#define RUDA__COPY_MAX_CHUNKS 1024

typedef struct ruda__copy_job {
  char *dst;
  const char *src;
  size_t size, chunk, nchunks;
  atomic_size_t next;
  atomic_size_t done;
  atomic_uchar ready[RUDA__COPY_MAX_CHUNKS];
  bool pooled;    /* workers may join */
  bool streaming; /* the pool's setting */
} ruda__copy_job_t;

/* `threads` helper threads (0: none; copies then run on the caller). With
 * `streaming`, chunks of 64 KiB and more are written with streaming
 * (non-temporal) stores where the processor has them (x86-64): for
 * destinations the device reads next, not this processor. NULL when
 * memory or threads are exhausted (callers fall back to memcpy). */
ruda__copy_pool_t *ruda__copy_pool_create(unsigned threads, bool streaming);
void ruda__copy_pool_destroy(ruda__copy_pool_t *p);

/* Prepares `job` to copy `size` bytes in chunks of at least `min_chunk`
 * and lets the pool's threads join it (when the pool is free). */
void ruda__copy_job_start(ruda__copy_pool_t *p, ruda__copy_job_t *job, void *dst,
                          const void *src, size_t size, size_t min_chunk);
/* Helps until chunk `i` has been copied. */
void ruda__copy_job_wait_chunk(ruda__copy_job_t *job, size_t i);
/* Helps until every chunk is copied and detaches the pool's threads. */
void ruda__copy_job_finish(ruda__copy_pool_t *p, ruda__copy_job_t *job);
/* Copies `size` bytes with the pool's help and returns when they are all
 * there (a plain memcpy when `p` is NULL or memory is exhausted). */
void ruda__copy_parallel(ruda__copy_pool_t *p, void *dst, const void *src, size_t size,
                         size_t min_chunk);
/* Offset and length of chunk `i`. */
static inline void ruda__copy_job_chunk(const ruda__copy_job_t *job, size_t i, size_t *off,
                                        size_t *len) {
  *off = i * job->chunk;
  *len = job->size - *off < job->chunk ? job->size - *off : job->chunk;
}

#endif
