/* ruda_shutdown racing every blocking call: worker threads loop over read,
 * sync, sync_async, read_async, read_tensor, flush, memory_usage (of the
 * stream and of the device), get_resource, staging, exclusive, profile and
 * profiling tokens, to_client and collectives (with writes, launches and
 * allocations in between) while two other threads
 * call ruda_shutdown at once. Every call returns, with OK or Unavailable;
 * a read that succeeds returns exactly what the thread's own work put
 * there; nothing crashes, hangs or leaks (run under ASan and TSan in CI).
 * Its own program: shutdown is final. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "ruda/comm.h"
#include "ruda/ruda.h"
#include "test.h"

enum { THREADS = 4, WORDS = 64, MIN_ROUNDS = 3 };

static ruda_kernel_t *g_add_one;
static atomic_bool g_shutdown_done;
static atomic_int g_bad_kind;     /* a status that is neither OK nor Unavailable */
static atomic_int g_bad_data;     /* a successful read with the wrong data */
static atomic_uint g_rounds[THREADS];
static atomic_uint g_unavailable;
static pthread_barrier_t g_start;

static void add_one(const ruda_cpu_kernel_ctx_t *k) {
  uint32_t *v = k->buffers[0];
  for (uint32_t i = 0; i < WORDS; i++) v[i] += 1;
}

/* OK or Unavailable, nothing else. True for OK. */
static bool check(ruda_status_t s) {
  if (!s) return true;
  if (ruda_status_kind(s) == RUDA_ERR_UNAVAILABLE) {
    atomic_fetch_add(&g_unavailable, 1);
  } else {
    char *text = ruda_status_to_string(s);
    fprintf(stderr, "unexpected status: %s\n", text ? text : "?");
    free(text);
    atomic_fetch_add(&g_bad_kind, 1);
  }
  ruda_status_free(s);
  return false;
}

typedef struct worker {
  int index;
  ruda_client_t *client;
  ruda_handle_t buf;
} worker_t;

static ruda_status_t exclusive_body(ruda_client_t *c, void *ctx) {
  worker_t *w = ctx;
  uint32_t out[WORDS];
  return ruda_client_read(c, &w->buf, out, sizeof out);
}

static ruda_status_t profile_body(ruda_client_t *c, void *ctx) {
  worker_t *w = ctx;
  ruda_kernel_args_t args = {.buffers = &w->buf, .num_buffers = 1};
  return ruda_client_launch(c, g_add_one, ruda_count_static(1, 1, 1), &args);
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  ruda_client_t *c = w->client;
  uint32_t expect[WORDS], got[WORDS];
  ruda_kernel_args_t args = {.buffers = &w->buf, .num_buffers = 1};
  pthread_barrier_wait(&g_start);
  for (uint32_t round = 0;; round++) {
    bool done = atomic_load(&g_shutdown_done);
    /* The thread's own data: written, then incremented by the kernel, both
     * on this thread's stream, so a read that succeeds sees both. */
    for (uint32_t i = 0; i < WORDS; i++) expect[i] = round * 1000 + (uint32_t)w->index * 100 + i;
    check(ruda_client_write(c, &w->buf, expect, sizeof expect));
    check(ruda_client_launch(c, g_add_one, ruda_count_static(1, 1, 1), &args));
    for (uint32_t i = 0; i < WORDS; i++) expect[i] += 1;
    memset(got, 0, sizeof got);
    if (check(ruda_client_read(c, &w->buf, got, sizeof got)) &&
        memcmp(got, expect, sizeof got) != 0) {
      atomic_fetch_add(&g_bad_data, 1);
    }
    ruda_future_t *f = NULL;
    memset(got, 0, sizeof got);
    if (check(ruda_client_read_async(c, &w->buf, got, sizeof got, &f)) &&
        check(ruda_future_wait(f)) && memcmp(got, expect, sizeof got) != 0) {
      atomic_fetch_add(&g_bad_data, 1);
    }
    ruda_shape_t shape = ruda_shape_1d(WORDS);
    ruda_strides_t strides = ruda_strides_contiguous(&shape);
    memset(got, 0, sizeof got);
    if (check(ruda_client_read_tensor(c, &w->buf, &shape, &strides, 4, got)) &&
        memcmp(got, expect, sizeof got) != 0) {
      atomic_fetch_add(&g_bad_data, 1);
    }
    ruda_memory_usage_t u;
    check(ruda_client_memory_usage_device(c, &u));
    ruda_profiling_token_t token;
    ruda_profile_duration_t d;
    if (check(ruda_client_profile_start(c, &token))) check(ruda_client_profile_end(c, token, &d));
    /* No staging buffers on CPU: Unsupported before the shutdown. */
    uint64_t size = 64;
    ruda_bytes_t staged = {0};
    ruda_status_t st = ruda_client_staging(c, &size, 1, &staged);
    if (ruda_status_kind(st) == RUDA_ERR_IO_UNSUPPORTED_IO_OPERATION) ruda_status_free(st);
    else check(st);
    ruda_bytes_release(&staged);
    ruda_handle_t moved = {0};
    memset(got, 0, sizeof got);
    if (check(ruda_client_to_client(c, &w->buf, c, &moved)) &&
        check(ruda_client_read(c, &moved, got, sizeof got)) && memcmp(got, expect, sizeof got) != 0) {
      atomic_fetch_add(&g_bad_data, 1);
    }
    ruda_handle_release(&moved);
    ruda_client_t *one[1] = {c};
    check(ruda_client_all_reduce(one, 1, &w->buf, &w->buf, RUDA_ELEM_U32, RUDA_REDUCE_MAX));
    check(ruda_client_sync_collective(c));
    check(ruda_client_sync(c));
    check(ruda_client_flush(c));
    check(ruda_client_memory_usage(c, &u));
    ruda_resource_t r;
    if (check(ruda_client_get_resource(c, &w->buf, &r))) ruda_resource_release(&r);
    check(ruda_client_exclusive(c, exclusive_body, w));
    check(ruda_client_profile(c, "race", profile_body, w, &d));
    ruda_handle_t tmp = {0};
    if (check(ruda_client_create_buffer(c, expect, sizeof expect, &tmp))) {
      check(ruda_client_read(c, &tmp, got, sizeof got));
    }
    ruda_handle_release(&tmp);
    f = NULL;
    if (check(ruda_client_sync_async(c, &f))) check(ruda_future_wait(f));
    atomic_store(&g_rounds[w->index], round + 1);
    /* A few rounds after the shutdown finished: every call must keep
     * returning (Unavailable) rather than hang. */
    if (done && round >= MIN_ROUNDS) break;
  }
  return NULL;
}

static void *shutdown_main(void *arg) {
  (void)arg;
  pthread_barrier_wait(&g_start);
  /* Let every worker get into its loop first. */
  for (;;) {
    bool all = true;
    for (int i = 0; i < THREADS; i++) all = all && atomic_load(&g_rounds[i]) >= 1;
    if (all) break;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  ruda_status_t s = ruda_shutdown();
  if (s) atomic_fetch_add(&g_bad_kind, 1);
  ruda_status_free(s);
  atomic_store(&g_shutdown_done, true);
  return NULL;
}

TEST(shutdown_races_every_blocking_call) {
  ruda_device_id_t cpu = {RUDA_DEVICE_TYPE_CPU, 0};
  ruda_kernel_code_t code = ruda_kernel_code_cpu(add_one);
  ruda_kernel_desc_t kd = {.name = "add_one", .ruda_dim = {1, 1, 1}, .code = &code, .num_code = 1};
  ASSERT_OK(ruda_kernel_create(&kd, &g_add_one));
  worker_t w[THREADS];
  ruda_client_t *base = NULL;
  ASSERT_OK(ruda_client_create(cpu, &base));
  for (int i = 0; i < THREADS; i++) {
    w[i].index = i;
    ASSERT_OK(ruda_client_on_stream(base, ruda_stream_id_next(), &w[i].client));
    uint32_t zero[WORDS] = {0};
    ASSERT_OK(ruda_client_create_buffer(w[i].client, zero, sizeof zero, &w[i].buf));
  }
  ASSERT_EQ(pthread_barrier_init(&g_start, NULL, THREADS + 2), 0);
  pthread_t t[THREADS + 2];
  for (int i = 0; i < THREADS; i++) ASSERT_EQ(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
  ASSERT_EQ(pthread_create(&t[THREADS], NULL, shutdown_main, NULL), 0);
  ASSERT_EQ(pthread_create(&t[THREADS + 1], NULL, shutdown_main, NULL), 0);
  for (int i = 0; i < THREADS + 2; i++) pthread_join(t[i], NULL);
  pthread_barrier_destroy(&g_start);

  ASSERT_EQ(atomic_load(&g_bad_kind), 0);
  ASSERT_EQ(atomic_load(&g_bad_data), 0);
  /* The calls after the shutdown reported it. */
  ASSERT_GT(atomic_load(&g_unavailable), 0);
  for (int i = 0; i < THREADS; i++) ASSERT_GE(atomic_load(&g_rounds[i]), MIN_ROUNDS);
  /* Everything is still releasable, and new clients are refused. */
  ruda_client_t *late = NULL;
  ASSERT_ERR_KIND(ruda_client_create(cpu, &late), RUDA_ERR_UNAVAILABLE);
  ASSERT_ERR_KIND(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 1}, &late),
                  RUDA_ERR_UNAVAILABLE);
  ASSERT_OK(ruda_shutdown());
  for (int i = 0; i < THREADS; i++) {
    ruda_handle_release(&w[i].buf);
    ruda_client_release(w[i].client);
  }
  ruda_client_release(base);
  ruda_kernel_release(g_add_one);
}
