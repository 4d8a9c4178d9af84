/* Parallel host memcpy for the device backends' staging paths (CUDA, and
 * OpenCL devices with memory of their own).
 *
 * Copying pageable memory into pinned staging is what limits uploads from
 * pageable memory; a few threads copying chunks in parallel, while the
 * device thread starts the DMA of each chunk as soon as it is ready, keep
 * the copy engine busy. One job runs at a time; a caller that finds the
 * pool busy copies on its own thread instead.
 *
 * Thread-safety: jobs may be started from any thread.
 */
#ifndef RUDA_SERVER_HOST_COPY_H
#define RUDA_SERVER_HOST_COPY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct ruda__copy_pool ruda__copy_pool_t;

#define RUDA__COPY_MAX_CHUNKS 1024

/* A job copies `size` bytes of `src` in chunks. Chunk i goes to dst + i *
 * chunk, or with a ring of `slots` chunks (slots > 0) to slot i % slots:
 * a staging area much smaller than the copy, which the device thread hands
 * back slot by slot as the DMA out of it completes (ruda__copy_job_grant);
 * chunks are copied only once their slot is granted, and the thread that
 * grants never waits for a chunk that is not granted. */
typedef struct ruda__copy_job {
  char *dst;
  const char *src;
  size_t size, chunk, nchunks;
  size_t slots;          /* 0: no ring */
  atomic_size_t granted; /* ring: chunks below this may be copied */
  atomic_size_t next;
  atomic_size_t done;
  atomic_uchar ready[RUDA__COPY_MAX_CHUNKS];
  bool pooled;    /* workers may join */
  bool streaming; /* the pool's setting; plain stores into a ring */
} ruda__copy_job_t;

/* `threads` helper threads (0: none; copies then run on the caller). With
 * `streaming`, chunks of 64 KiB and more of a job without a ring are
 * written with streaming (non-temporal) stores where the processor has
 * them (x86-64): for destinations the device reads next, not this
 * processor. NULL when memory or threads are exhausted (callers fall back
 * to memcpy). */
ruda__copy_pool_t *ruda__copy_pool_create(unsigned threads, bool streaming);
/* A pool sized for staging: the environment variable `threads_var` sets
 * the helper threads (default: all cores but two, at most 14; half the
 * cores below 8), `streaming_var`=0 turns streaming stores off (a ring
 * job uses plain stores either way). Staging a pageable write whole is a
 * memory-bound host copy pipelined with the DMA: on the 16-core H200 host,
 * with plain stores 6 threads staged 26 GB/s, 10 about 29, 14 about 32;
 * with streaming stores 6 to 15 threads all staged 35-38 GB/s. The caller
 * owns the pool (ruda__copy_pool_destroy); NULL, as for create, when
 * memory or threads are exhausted. */
ruda__copy_pool_t *ruda__copy_pool_for_staging(const char *threads_var, const char *streaming_var);
void ruda__copy_pool_destroy(ruda__copy_pool_t *p);

/* The chunk size a job of `size` bytes uses: `min_chunk` (at least 1),
 * doubled until the job has fewer than RUDA__COPY_MAX_CHUNKS chunks. */
size_t ruda__copy_chunk_size(size_t size, size_t min_chunk);
/* Prepares `job` to copy `size` bytes in chunks of
 * ruda__copy_chunk_size(size, min_chunk) and lets the pool's threads join
 * it (when the pool is free). With `slots` > 0, `dst` is a ring of `slots`
 * chunks, the first `slots` of them granted. */
void ruda__copy_job_start(ruda__copy_pool_t *p, ruda__copy_job_t *job, void *dst,
                          const void *src, size_t size, size_t min_chunk, size_t slots);
/* The same without a ring, with no chunk granted: the owner grants them
 * (ruda__copy_job_grant) as their source becomes ready, as a read's
 * transfers into staging complete. Every chunk must be granted before
 * ruda__copy_job_finish. */
void ruda__copy_job_start_held(ruda__copy_pool_t *p, ruda__copy_job_t *job, void *dst,
                               const void *src, size_t size, size_t min_chunk);
/* The functions below take a started job and are called by its owner
 * (the thread that started it), while the pool's threads copy beside it;
 * none fails. */
/* Helps until chunk `i` has been copied (its slot must be granted). */
void ruda__copy_job_wait_chunk(ruda__copy_job_t *job, size_t i);
/* True when chunk `i` has been copied; otherwise copies one granted chunk
 * (when one is left) and returns false. */
bool ruda__copy_job_try_chunk(ruda__copy_job_t *job, size_t i);
/* True when chunk `i` has been copied. */
static inline bool ruda__copy_job_ready(ruda__copy_job_t *job, size_t i) {
  return atomic_load_explicit(&job->ready[i], memory_order_acquire) != 0;
}
/* Ring: chunks below `n` may now be copied (their slots are free again:
 * the owner saw the DMA out of them complete). Release: the pool's
 * threads write a slot only after this store. */
static inline void ruda__copy_job_grant(ruda__copy_job_t *job, size_t n) {
  atomic_store_explicit(&job->granted, n < job->nchunks ? n : job->nchunks,
                        memory_order_release);
}
/* Where chunk `i` goes. */
static inline char *ruda__copy_job_dst(const ruda__copy_job_t *job, size_t i) {
  return job->dst + (job->slots ? i % job->slots : i) * job->chunk;
}
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
