/* Calls back into ruda from where they would wait for themselves: from
 * inside a CPU kernel (on the worker and on pool threads) and ruda_shutdown
 * from inside ruda_client_exclusive. Each is refused with
 * RUDA_ERR_INVALID_ARGUMENT naming where it came from; the launch finishes,
 * nothing is shut down, and the device keeps working. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ruda/comm.h"
#include "ruda/ruda.h"
#include "test.h"

static ruda_client_t *g_client;
static ruda_handle_t g_buf;

/* Every call of ruda/client.h and ruda/comm.h that takes a client. */
enum { CALLS = 30 };
/* Per call kind: how often it was refused as it should be, and how often
 * it did anything else. */
static atomic_uint refused[CALLS], wrong[CALLS];
static atomic_uint rudas_run;

static void record(int which, ruda_status_t s) {
  char *text = s ? ruda_status_to_string(s) : NULL;
  bool ok = ruda_status_kind(s) == RUDA_ERR_INVALID_ARGUMENT && text &&
            strstr(text, "inside kernel 'calls_back'") != NULL;
  if (!ok) fprintf(stderr, "call %d was not refused: %s\n", which, text ? text : "OK");
  atomic_fetch_add(ok ? &refused[which] : &wrong[which], 1);
  free(text);
  ruda_status_free(s);
}

static void noop(const ruda_cpu_kernel_ctx_t *k) { (void)k; }

static ruda_kernel_t *make_kernel(const char *name, ruda_cpu_kernel_fn fn) {
  ruda_kernel_code_t code = ruda_kernel_code_cpu(fn);
  ruda_kernel_desc_t d = {.name = name, .ruda_dim = {1, 1, 1}, .code = &code, .num_code = 1};
  ruda_kernel_t *k = NULL;
  ruda_status_t s = ruda_kernel_create(&d, &k);
  ruda_status_free(s);
  return k;
}

static ruda_kernel_t *g_inner;

static ruda_status_t nothing(ruda_client_t *c, void *ctx) {
  (void)c;
  (void)ctx;
  return NULL;
}

/* Every ruda tries every call; none may run, wait or re-enter the server. */
static void calls_back(const ruda_cpu_kernel_ctx_t *k) {
  (void)k;
  atomic_fetch_add(&rudas_run, 1);
  uint32_t tmp[4];
  ruda_shape_t shape = ruda_shape_1d(4);
  ruda_strides_t strides = ruda_strides_contiguous(&shape);
  ruda_memory_usage_t u;
  ruda_handle_t h;
  ruda_memory_layout_t layout;
  ruda_future_t *f = NULL;
  ruda_profiling_token_t token = {0};
  ruda_profile_duration_t dur;
  ruda_resource_t res;
  ruda_bytes_t bytes = {0};
  uint64_t size = 16;
  ruda_memory_layout_descriptor_t desc = ruda_memory_layout_optimized(shape, 4);
  int i = 0;
  record(i++, ruda_client_sync(g_client));
  record(i++, ruda_client_read(g_client, &g_buf, tmp, sizeof tmp));
  record(i++, ruda_client_flush(g_client));
  record(i++, ruda_client_launch(g_client, g_inner, ruda_count_static(1, 1, 1), NULL));
  record(i++, ruda_client_write(g_client, &g_buf, tmp, sizeof tmp));
  record(i++, ruda_client_memory_usage(g_client, &u));
  record(i++, ruda_client_empty(g_client, 64, &h));
  record(i++, ruda_shutdown());
  record(i++, ruda_client_sync_async(g_client, &f));
  record(i++, ruda_client_read_async(g_client, &g_buf, tmp, sizeof tmp, &f));
  record(i++, ruda_client_read_tensor(g_client, &g_buf, &shape, &strides, 4, tmp));
  record(i++, ruda_client_write_tensor(g_client, &g_buf, &shape, &strides, 4, tmp));
  record(i++, ruda_client_memory_usage_device(g_client, &u));
  record(i++, ruda_client_profile_start(g_client, &token));
  record(i++, ruda_client_profile_end(g_client, token, &dur));
  record(i++, ruda_client_get_resource(g_client, &g_buf, &res));
  record(i++, ruda_client_staging(g_client, &size, 1, &bytes));
  record(i++, ruda_client_exclusive(g_client, nothing, NULL));
  record(i++, ruda_client_profile(g_client, "p", nothing, NULL, &dur));
  record(i++, ruda_client_memory_cleanup(g_client));
  record(i++, ruda_client_allocation_mode(g_client, RUDA_ALLOCATION_PERSISTENT));
  record(i++, ruda_client_persistent_scope(g_client, nothing, NULL));
  record(i++, ruda_client_create_buffer(g_client, tmp, sizeof tmp, &h));
  record(i++, ruda_client_empty_tensor(g_client, &shape, 4, &layout));
  record(i++, ruda_client_create_tensor(g_client, tmp, &shape, 4, &layout));
  record(i++, ruda_client_empty_tensors(g_client, &desc, 1, &layout));
  record(i++, ruda_client_launch_unchecked(g_client, g_inner, ruda_count_static(1, 1, 1), NULL));
  record(i++, ruda_client_sync_collective(g_client));
  ruda_client_t *one[1] = {g_client};
  record(i++, ruda_client_all_reduce(one, 1, &g_buf, &g_buf, RUDA_ELEM_U32, RUDA_REDUCE_SUM));
  record(i++, ruda_client_to_client(g_client, &g_buf, g_client, &h));
  if (i != CALLS) atomic_fetch_add(&wrong[0], 1000); /* the table and CALLS disagree */
}

static void check_usable(ruda_client_t *c) {
  uint32_t in[4] = {7, 8, 9, 10}, out[4] = {0};
  ASSERT_OK(ruda_client_write(c, &g_buf, in, sizeof in));
  ASSERT_OK(ruda_client_read(c, &g_buf, out, sizeof out));
  ASSERT_MEM_EQ(in, out, sizeof in);
}

static void setup(void) {
  if (g_client) return;
  /* Four pool participants, so that rudas run on pool threads too. */
  ruda_config_t cfg;
  ruda_config_default(&cfg);
  cfg.cpu.threads = 4;
  ruda_status_free(ruda_config_set(&cfg));
  ruda_status_t s = ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &g_client);
  ruda_status_free(s);
  uint32_t zero[4] = {0};
  if (g_client) ruda_status_free(ruda_client_create_buffer(g_client, zero, sizeof zero, &g_buf));
  g_inner = make_kernel("inner", noop);
}

TEST(kernel_calling_its_own_client_is_refused_not_deadlocked) {
  setup();
  ASSERT_NOT_NULL(g_client);
  ruda_kernel_t *k = make_kernel("calls_back", calls_back);
  ASSERT_NOT_NULL(k);
  /* One ruda (run on the worker itself), then many (spread over the pool). */
  ASSERT_OK(ruda_client_launch(g_client, k, ruda_count_static(1, 1, 1), NULL));
  ASSERT_OK(ruda_client_sync(g_client));
  ASSERT_EQ(atomic_load(&rudas_run), 1);
  ASSERT_OK(ruda_client_launch(g_client, k, ruda_count_static(256, 1, 1), NULL));
  ASSERT_OK(ruda_client_sync(g_client));
  ASSERT_EQ(atomic_load(&rudas_run), 257);
  for (int i = 0; i < CALLS; i++) {
    ASSERT_EQ(atomic_load(&wrong[i]), 0);
    ASSERT_EQ(atomic_load(&refused[i]), 257);
  }
  check_usable(g_client);
  ruda_kernel_release(k);
}

/* From another thread's point of view nothing happened: its own calls run
 * while the refused kernel is on the device. */
static void *other_thread(void *arg) {
  ruda_client_t *c = arg;
  uint32_t out[4];
  ruda_status_t s = ruda_client_read(c, &g_buf, out, sizeof out);
  bool ok = s == NULL;
  ruda_status_free(s);
  return ok ? c : NULL;
}

TEST(other_threads_are_unaffected_by_a_refused_kernel) {
  setup();
  ASSERT_NOT_NULL(g_client);
  ruda_kernel_t *k = make_kernel("calls_back", calls_back);
  ASSERT_OK(ruda_client_launch(g_client, k, ruda_count_static(64, 1, 1), NULL));
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, other_thread, g_client), 0);
  void *ok = NULL;
  pthread_join(t, &ok);
  ASSERT_TRUE(ok != NULL);
  ASSERT_OK(ruda_client_sync(g_client));
  ruda_kernel_release(k);
}

static ruda_status_t shutdown_inside(ruda_client_t *c, void *ctx) {
  ruda_status_t *out = ctx;
  *out = ruda_shutdown();
  /* Still usable inside fn: calls run inline. */
  uint32_t out4[4];
  return ruda_client_read(c, &g_buf, out4, sizeof out4);
}

TEST(shutdown_inside_exclusive_is_refused) {
  setup();
  ASSERT_NOT_NULL(g_client);
  ruda_status_t inner = NULL;
  ASSERT_OK(ruda_client_exclusive(g_client, shutdown_inside, &inner));
  ASSERT_NOT_NULL(inner);
  ASSERT_EQ(ruda_status_kind(inner), RUDA_ERR_INVALID_ARGUMENT);
  char *text = ruda_status_to_string(inner);
  ASSERT_STR_CONTAINS(text, "ruda_client_exclusive");
  ASSERT_STR_CONTAINS(text, "nothing was shut down");
  free(text);
  ruda_status_free(inner);
  /* Nothing was shut down: the device and new clients still work. */
  check_usable(g_client);
  ruda_client_t *again = NULL;
  ASSERT_OK(ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_CPU, 0}, &again));
  check_usable(again);
  ruda_client_release(again);
}

static ruda_status_t shutdown_inside_profile(ruda_client_t *c, void *ctx) {
  (void)c;
  ruda_status_t *out = ctx;
  *out = ruda_shutdown();
  return NULL;
}

TEST(shutdown_inside_profile_is_refused) {
  setup();
  ASSERT_NOT_NULL(g_client);
  ruda_status_t inner = NULL;
  ruda_profile_duration_t d;
  ASSERT_OK(ruda_client_profile(g_client, "p", shutdown_inside_profile, &inner, &d));
  ASSERT_EQ(ruda_status_kind(inner), RUDA_ERR_INVALID_ARGUMENT);
  ruda_status_free(inner);
  check_usable(g_client);
}

/* The last test: a real shutdown still works afterwards. */
TEST(zz_shutdown_after_refusals_still_shuts_down) {
  setup();
  ASSERT_NOT_NULL(g_client);
  ASSERT_OK(ruda_shutdown());
  uint32_t out[4];
  ASSERT_ERR_KIND(ruda_client_read(g_client, &g_buf, out, sizeof out), RUDA_ERR_UNAVAILABLE);
  ruda_handle_release(&g_buf);
  ruda_kernel_release(g_inner);
  ruda_client_release(g_client);
}
