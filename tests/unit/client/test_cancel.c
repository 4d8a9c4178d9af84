/* ruda_client_cancel: a long CPU launch is stopped at a ruda boundary from
 * another thread, the work queued behind it is dropped, the stream reports
 * ServerError::Cancelled once and works afterwards; other streams are not
 * touched. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "ruda/ruda.h"
#include "test.h"
#include "test_client.h"

static const ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Each ruda spins for 200 us and counts itself in buffer 0. */
static void spin(const ruda_cpu_kernel_ctx_t *k) {
  uint64_t end = now_ns() + 200000;
  while (now_ns() < end) {
  }
  atomic_fetch_add((_Atomic uint32_t *)k->buffers[0], 1);
}

/* Stores info[0] at buffer 0. */
static void store(const ruda_cpu_kernel_ctx_t *k) { *(uint32_t *)k->buffers[0] = (uint32_t)k->info[0]; }

static ruda_kernel_t *make(const char *name, ruda_cpu_kernel_fn fn) {
  ruda_kernel_desc_t d = {.name = name,
                          .ruda_dim = {1, 1, 1},
                          .code = &(ruda_kernel_code_t){RUDA_KERNEL_FORMAT_CPU, .cpu_fn = fn},
                          .num_code = 1};
  ruda_kernel_t *k = NULL;
  ruda_status_free(ruda_kernel_create(&d, &k));
  return k;
}

static ruda_status_t launch_store(ruda_client_t *c, ruda_kernel_t *k, ruda_handle_t *h,
                                  uint64_t value) {
  ruda_kernel_args_t a = {.buffers = h, .num_buffers = 1, .info = {.data = &value, .len = 1}};
  return ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a);
}

typedef struct canceller {
  ruda_client_t *client; /* pinned to the waiting thread's stream */
  uint64_t delay_ns;
  ruda_status_t result;
} canceller_t;

static void *cancel_later(void *arg) {
  canceller_t *c = arg;
  nanosleep(&(struct timespec){0, (long)c->delay_ns}, NULL);
  c->result = ruda_client_cancel(c->client);
  return NULL;
}

TEST(a_long_cpu_launch_is_cancelled_from_another_thread) {
  ruda_client_t *c = NULL, *pinned = NULL;
  ASSERT_OK(ruda_client_create(cpu0, &c));
  ASSERT_OK(ruda_client_on_stream(c, ruda_client_stream(c), &pinned));
  ruda_kernel_t *ks = make("spin", spin), *kw = make("store", store);
  ASSERT_TRUE(ks && kw);
  uint32_t zero[2] = {0, 0};
  ruda_handle_t count, marker;
  ASSERT_OK(ruda_client_create_buffer(c, zero, sizeof zero, &count));
  ASSERT_OK(ruda_client_create_buffer(c, zero, sizeof zero, &marker));
  ASSERT_OK(ruda_client_sync(c));

  /* 200 000 rudas of 200 us: 40 s of work on one core. */
  const uint32_t rudas = 200000;
  ruda_kernel_args_t a = {.buffers = &count, .num_buffers = 1};
  canceller_t cc = {pinned, 50000000, NULL};
  pthread_t t;
  uint64_t t0 = now_ns();
  ASSERT_OK(ruda_client_launch(c, ks, ruda_count_static(rudas, 1, 1), &a));
  /* Queued behind it: dropped, never run. */
  ASSERT_OK(launch_store(c, kw, &marker, 7));
  uint32_t nine[2] = {9, 9};
  ASSERT_OK(ruda_client_write(c, &marker, nine, sizeof nine));
  ASSERT_EQ(pthread_create(&t, NULL, cancel_later, &cc), 0);
  ruda_status_t s = ruda_client_sync(c);
  uint64_t waited = now_ns() - t0;
  pthread_join(t, NULL);
  ASSERT_OK(cc.result);
  ASSERT_NOT_NULL(s);
  ruda_status_t cancelled = ruda_status_find(s, RUDA_ERR_SERVER_CANCELLED);
  ASSERT_NOT_NULL(cancelled);
  /* The stopped launch names its kernel; the drop its count. */
  char *text = ruda_status_to_string(s);
  ASSERT_STR_CONTAINS(text, "kernel 'spin'");
  ASSERT_STR_CONTAINS(text, "dropped 2 operations");
  free(text);
  ruda_status_free(s);
  /* Bounded: far less than the launch's 40 s. */
  ASSERT_ULT(waited, 10000000000ull);

  /* The stream reported it once and works again. */
  ASSERT_OK(ruda_client_sync(c));
  uint32_t got[2] = {1, 1};
  ASSERT_OK(ruda_client_read(c, &count, got, sizeof got));
  ASSERT_UGT(got[0], 0);
  ASSERT_ULT(got[0], rudas);
  ASSERT_OK(ruda_client_read(c, &marker, got, sizeof got));
  ASSERT_EQ(got[0], 0); /* neither the store nor the write ran */
  ASSERT_EQ(got[1], 0);
  ASSERT_OK(launch_store(c, kw, &marker, 42));
  ASSERT_OK(ruda_client_read(c, &marker, got, sizeof got));
  ASSERT_EQ(got[0], 42);
  ASSERT_OK(ruda_client_sync(c));

  ruda_handle_release(&count);
  ruda_handle_release(&marker);
  /* The dropped launch and write let go of the buffers they held. */
  test_expect_usage(test_client_usage(c), 0, 0);
  ruda_kernel_release(ks);
  ruda_kernel_release(kw);
  ruda_client_release(pinned);
  ruda_client_release(c);
}

TEST(a_cancel_with_nothing_queued_changes_nothing) {
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create(cpu0, &c));
  ASSERT_OK(ruda_client_cancel(c));
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_t *kw = make("store", store);
  uint32_t zero = 0, got = 0;
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, &zero, sizeof zero, &h));
  ASSERT_OK(launch_store(c, kw, &h, 5));
  ASSERT_OK(ruda_client_read(c, &h, &got, sizeof got));
  ASSERT_EQ(got, 5);
  ASSERT_OK(ruda_client_sync(c));
  ruda_handle_release(&h);
  ruda_kernel_release(kw);
  ruda_client_release(c);
  ASSERT_ERR_KIND(ruda_client_cancel(NULL), RUDA_ERR_INVALID_ARGUMENT);
}

/* The other stream's work, queued behind the cancelled launch, runs. */
typedef struct other {
  ruda_client_t *c;
  ruda_kernel_t *k;
  ruda_handle_t *h;
  atomic_int queued;
  ruda_status_t launch, sync;
} other_t;

static void *other_stream(void *arg) {
  other_t *o = arg;
  o->launch = launch_store(o->c, o->k, o->h, 11);
  atomic_store(&o->queued, 1);
  o->sync = ruda_client_sync(o->c);
  return NULL;
}

TEST(other_streams_keep_their_work) {
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create(cpu0, &c));
  ruda_kernel_t *ks = make("spin", spin), *kw = make("store", store);
  uint32_t zero[2] = {0, 0};
  ruda_handle_t count, marker;
  ASSERT_OK(ruda_client_create_buffer(c, zero, sizeof zero, &count));
  ASSERT_OK(ruda_client_create_buffer(c, zero, sizeof zero, &marker));
  ASSERT_OK(ruda_client_sync(c));
  ruda_kernel_args_t a = {.buffers = &count, .num_buffers = 1};
  ASSERT_OK(ruda_client_launch(c, ks, ruda_count_static(200000, 1, 1), &a));
  other_t o = {.c = c, .k = kw, .h = &marker};
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, other_stream, &o), 0);
  while (!atomic_load(&o.queued)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  nanosleep(&(struct timespec){0, 20000000}, NULL);
  ASSERT_OK(ruda_client_cancel(c)); /* this thread's stream only */
  ASSERT_ERR_KIND(ruda_client_sync(c), RUDA_ERR_SERVER_CANCELLED);
  pthread_join(t, NULL);
  ASSERT_OK(o.launch);
  ASSERT_OK(o.sync);
  uint32_t got[2] = {0, 0};
  ASSERT_OK(ruda_client_read(c, &marker, got, sizeof got));
  ASSERT_EQ(got[0], 11);
  ruda_handle_release(&count);
  ruda_handle_release(&marker);
  ruda_kernel_release(ks);
  ruda_kernel_release(kw);
  ruda_client_release(c);
}
