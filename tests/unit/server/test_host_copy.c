/* The backends' parallel host copy (server/host_copy.h), which needs no
 * GPU: every byte arrives, whatever the alignment, the
 * length around the streaming threshold and the 64-byte lines, with and
 * without helper threads and streaming stores; a pipelined job hands out
 * each chunk once, in any order of waiting; a ring job copies a chunk only
 * into a slot given back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/host_copy.h"
#include "test.h"

static unsigned char *pattern(size_t n, unsigned seed) {
  unsigned char *b = malloc(n);
  if (b == NULL) return NULL;
  uint32_t x = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    b[i] = (unsigned char)(x >> 24);
  }
  return b;
}

/* Copies src+so into dst+do for the lengths that cross each boundary, and
 * checks the bytes before and after the destination are untouched. */
static void check_copies(ruda__copy_pool_t *p) {
  static const size_t lens[] = {0, 1, 63, 64, 65, 64 * 1024 - 1, 64 * 1024, 64 * 1024 + 17,
                                (1u << 20) + 5, (9u << 20) + 33};
  size_t cap = (9u << 20) + 64 + 64;
  unsigned char *src = pattern(cap, 1), *dst = malloc(cap);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(dst);
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    for (size_t so = 0; so < 3; so++) {
      for (size_t dof = 0; dof < 16; dof += 5) {
        size_t n = lens[li];
        memset(dst, 0xA5, cap);
        ruda__copy_parallel(p, dst + 32 + dof, src + so, n, 1u << 20);
        ASSERT_TRUE(memcmp(dst + 32 + dof, src + so, n) == 0);
        for (size_t i = 0; i < 32 + dof; i++) ASSERT_UEQ(dst[i], 0xA5);
        ASSERT_UEQ(dst[32 + dof + n], 0xA5);
      }
    }
  }
  free(src);
  free(dst);
}

/* check_copies through a pool of `threads` helpers. */
static void check_pool(unsigned threads, bool streaming) {
  ruda__copy_pool_t *p = ruda__copy_pool_create(threads, streaming);
  ASSERT_NOT_NULL(p);
  check_copies(p);
  ruda__copy_pool_destroy(p);
}

TEST(parallel_copy_is_exact_without_threads) {
  check_copies(NULL);
  check_pool(0, true);
}

TEST(parallel_copy_is_exact_with_threads_and_streaming_stores) { check_pool(3, true); }

TEST(parallel_copy_is_exact_with_threads_and_plain_stores) { check_pool(3, false); }

/* Finishes `job` of pool `p`, checks that every chunk was done and that
 * `got` holds the `n` bytes of `src`, then frees the job and the pool. */
static void finish_job(ruda__copy_pool_t *p, ruda__copy_job_t *job, const void *got,
                       const void *src, size_t n) {
  ruda__copy_job_finish(p, job);
  ASSERT_UEQ(atomic_load(&job->done), job->nchunks);
  ASSERT_TRUE(memcmp(got, src, n) == 0);
  free(job);
  ruda__copy_pool_destroy(p);
}

/* The pipelined form the staging write uses: the caller waits for chunk
 * after chunk (here last to first) while the helpers copy. */
TEST(pipelined_job_delivers_every_chunk) {
  ruda__copy_pool_t *p = ruda__copy_pool_create(2, true);
  ASSERT_NOT_NULL(p);
  size_t n = (16u << 20) + 100;
  unsigned char *src = pattern(n, 7), *dst = calloc(1, n);
  ruda__copy_job_t *job = malloc(sizeof *job);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(dst);
  ASSERT_NOT_NULL(job);
  ruda__copy_job_start(p, job, dst, src, n, 1u << 20, 0);
  ASSERT_UEQ(job->nchunks, 17);
  for (size_t c = job->nchunks; c-- > 0;) {
    ruda__copy_job_wait_chunk(job, c);
    size_t off, len;
    ruda__copy_job_chunk(job, c, &off, &len);
    ASSERT_TRUE(memcmp(dst + off, src + off, len) == 0);
  }
  finish_job(p, job, dst, src, n);
  free(src);
  free(dst);
}

/* A ring job as the staging write drives it: the caller takes chunk after
 * chunk out of its slot (standing in for the DMA) and only then grants the
 * chunk that reuses the slot. Every chunk must arrive whole in its slot,
 * and no chunk may be copied before its slot was granted: the slot still
 * holds the chunk before it until the caller has taken that one out. */
static void check_ring(unsigned threads, size_t slots, size_t n) {
  ruda__copy_pool_t *p = ruda__copy_pool_create(threads, true);
  ASSERT_NOT_NULL(p);
  size_t chunk = 64u * 1024u;
  unsigned char *src = pattern(n, 11), *out = calloc(1, n), *ring = malloc(slots * chunk);
  ruda__copy_job_t *job = malloc(sizeof *job);
  ASSERT_NOT_NULL(src);
  ASSERT_NOT_NULL(out);
  ASSERT_NOT_NULL(ring);
  ASSERT_NOT_NULL(job);
  ruda__copy_job_start(p, job, ring, src, n, chunk, slots);
  ASSERT_UEQ(job->chunk, chunk);
  for (size_t c = 0; c < job->nchunks; c++) {
    ruda__copy_job_wait_chunk(job, c);
    size_t off, len;
    ruda__copy_job_chunk(job, c, &off, &len);
    ASSERT_TRUE(ruda__copy_job_dst(job, c) == (char *)ring + (c % slots) * chunk);
    /* Nothing past the granted window has been claimed. */
    ASSERT_TRUE(atomic_load(&job->next) <= c + slots);
    memcpy(out + off, ruda__copy_job_dst(job, c), len);
    ruda__copy_job_grant(job, c + 1 + slots);
  }
  finish_job(p, job, out, src, n);
  free(ring);
  free(src);
  free(out);
}

TEST(ring_job_copies_each_chunk_only_into_a_free_slot) {
  check_ring(3, 4, (3u << 20) + 4097); /* 49 chunks, the last one short */
  check_ring(2, 1, 640u * 1024u);      /* one slot: strictly one chunk at a time */
  check_ring(0, 3, 1u << 20);          /* no helpers: the caller copies every chunk */
  check_ring(3, 8, 5u * 64u * 1024u);  /* fewer chunks than slots */
}
