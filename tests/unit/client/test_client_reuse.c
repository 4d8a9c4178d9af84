/* Reservations served from the reuse cache (memory/reuse_cache.h) while
 * several threads allocate, write, read back and release, on their own
 * streams and on one stream they share, with handles released on another
 * thread than the one that made them. A slice handed to two owners at once
 * shows as a wrong value read back; a slice lost shows in the final usage.
 * Run under TSan in CI. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ruda/ruda.h"
#include "test.h"
#include "test_client.h"
#include "thread_checks.h"

enum { THREADS = 4, ROUNDS = 400, WORDS_MAX = 1024, PASS_ON = 8 };

static const uint32_t g_words[] = {16, 64, 256, 1000, 1024};

/* Handles made by one thread and released by the next one. */
typedef struct mailbox {
  pthread_mutex_t lock;
  ruda_handle_t items[PASS_ON];
  uint32_t n;
} mailbox_t;

typedef struct job {
  ruda_client_t *c;
  uint32_t id;
  mailbox_t *out, *in;
} job_t;

/* One round: allocate, write a pattern of this thread and round, read it
 * back, then release it or pass it on. */
static void round_on(job_t *j, uint32_t r) {
  uint32_t words = g_words[(r + j->id) % (sizeof g_words / sizeof g_words[0])];
  uint32_t src[WORDS_MAX], dst[WORDS_MAX];
  for (uint32_t i = 0; i < words; i++) src[i] = j->id << 24 | r << 12 | i;
  ruda_handle_t h;
  if (!ok(ruda_client_empty(j->c, words * 4u, &h))) return;
  EXPECT(ruda_handle_size_in_used(&h) == words * 4u);
  if (ok(ruda_client_write(j->c, &h, src, words * 4u)) &&
      ok(ruda_client_read(j->c, &h, dst, words * 4u)))
    EXPECT(memcmp(src, dst, words * 4u) == 0);
  if (r % 5 == 0) {
    pthread_mutex_lock(&j->out->lock);
    if (j->out->n < PASS_ON) {
      j->out->items[j->out->n++] = h;
      memset(&h, 0, sizeof h);
    }
    pthread_mutex_unlock(&j->out->lock);
  }
  ruda_handle_release(&h);
  pthread_mutex_lock(&j->in->lock);
  while (j->in->n) ruda_handle_release(&j->in->items[--j->in->n]);
  pthread_mutex_unlock(&j->in->lock);
}

static void *run_job(void *p) {
  job_t *j = p;
  for (uint32_t r = 0; r < ROUNDS; r++) round_on(j, r);
  return NULL;
}

static void run_threads(ruda_client_t *const *clients) {
  mailbox_t box[THREADS];
  job_t jobs[THREADS];
  pthread_t t[THREADS];
  for (uint32_t i = 0; i < THREADS; i++) {
    pthread_mutex_init(&box[i].lock, NULL);
    box[i].n = 0;
  }
  for (uint32_t i = 0; i < THREADS; i++) {
    jobs[i] = (job_t){clients[i], i, &box[i], &box[(i + THREADS - 1) % THREADS]};
    ASSERT_EQ(pthread_create(&t[i], NULL, run_job, &jobs[i]), 0);
  }
  for (uint32_t i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (uint32_t i = 0; i < THREADS; i++) {
    while (box[i].n) ruda_handle_release(&box[i].items[--box[i].n]);
    pthread_mutex_destroy(&box[i].lock);
  }
}

TEST(threads_on_their_own_streams) {
  ruda_client_t *c = test_cpu_client();
  ruda_client_t *cs[THREADS];
  for (uint32_t i = 0; i < THREADS; i++) cs[i] = c; /* each thread's own stream */
  run_threads(cs);
  ASSERT_UEQ(atomic_load(&g_bad), 0);
  ruda_memory_usage_t u;
  ASSERT_OK(ruda_client_memory_usage_device(c, &u));
  test_expect_usage(u, 0, 0);
  ruda_client_release(c);
}

TEST(threads_sharing_one_stream) {
  ruda_client_t *c = test_cpu_client();
  ruda_client_t *shared = NULL;
  ASSERT_OK(ruda_client_on_stream(c, ruda_stream_id_next(), &shared));
  ruda_client_t *cs[THREADS];
  for (uint32_t i = 0; i < THREADS; i++) cs[i] = shared;
  run_threads(cs);
  ASSERT_UEQ(atomic_load(&g_bad), 0);
  test_expect_usage(test_client_usage(shared), 0, 0);
  ruda_client_release(shared);
  ruda_client_release(c);
}
