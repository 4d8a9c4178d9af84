/* Launches made by their caller (src/client/client_launch.c): a thread
 * that waits after every launch has its launches made on its own thread
 * while the device is idle, a thread that launches in bursts has them
 * queued for the worker, and either way every launch runs once, in its
 * stream's order, whatever mix of the two a stream sees. Run on opencl:0
 * (PoCL in CI) because the OpenCL and CUDA servers launch without waiting
 * for the work (launch_returns_early); skips without an OpenCL device. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "ruda/ruda.h"
#include "test.h"

#if !defined(RUDA_HAVE_OPENCL_HEADERS)

TEST(opencl_backend_not_built) {
  SKIP_UNAVAILABLE("opencl", "ruda was built without the OpenCL headers");
}

#else

#include "client/client_internal.h"
#include "opencl_test_util.h"

/* x[0] = 3 * x[0] + info[0]: launches that ran out of order, twice or
 * not at all leave another value. */
static const char step_src[] =
    "__kernel void triple_add(__global uint *x, __global const ulong *info) {\n"
    "  if (get_global_id(0) == 0) x[0] = 3u * x[0] + (uint)info[0];\n"
    "}\n";

static ruda_kernel_t *step_kernel(void) {
  static ruda_kernel_t *k;
  if (k == NULL) k = ocl_kernel("triple_add", step_src, ruda_dim_new_1d(1), 0);
  return k;
}

static ruda_status_t step(ruda_client_t *c, const ruda_handle_t *h, uint32_t add) {
  uint64_t info[1] = {add};
  ruda_kernel_args_t args = {.buffers = h, .num_buffers = 1, .info = {info, 1, 0}};
  return ruda_client_launch(c, step_kernel(), ruda_count_static(1, 1, 1), &args);
}

/* Launches the device made on their caller's thread so far. */
static uint64_t launches_here(ruda_client_t *c) {
  return atomic_load(&c->dev->ops_here);
}

static ruda_status_t read_word(ruda_client_t *c, const ruda_handle_t *h, uint32_t *out) {
  return ruda_client_read(c, h, out, sizeof *out);
}

/* What a pattern of launches and waits does, run on a thread of its own
 * (the launch pace is kept per thread) with a client of its own stream. */
typedef struct pattern {
  int bursts;     /* waits */
  int per_burst;  /* launches before each wait */
  bool read_wait; /* wait with a read instead of a sync */
  uint32_t expect, got;
  uint64_t here; /* launches made on the caller's thread */
  ruda_status_t err;
} pattern_t;

static void keep(pattern_t *p, ruda_status_t s) {
  if (s == NULL) return;
  if (p->err == NULL) p->err = s;
  else ruda_status_free(s);
}

static void *run_pattern(void *arg) {
  pattern_t *p = arg;
  ruda_client_t *c = NULL;
  keep(p, ruda_client_create((ruda_device_id_t){RUDA_DEVICE_TYPE_OPENCL, 0}, &c));
  if (c == NULL) return NULL;
  uint32_t zero = 0;
  ruda_handle_t h;
  keep(p, ruda_client_create_buffer(c, &zero, sizeof zero, &h));
  keep(p, ruda_client_sync(c));
  uint64_t before = launches_here(c);
  uint32_t add = 1;
  for (int b = 0; b < p->bursts && p->err == NULL; b++) {
    for (int i = 0; i < p->per_burst; i++, add++) {
      keep(p, step(c, &h, add));
      p->expect = 3u * p->expect + add;
    }
    if (p->read_wait) keep(p, read_word(c, &h, &p->got));
    else keep(p, ruda_client_sync(c));
  }
  p->here = launches_here(c) - before;
  keep(p, read_word(c, &h, &p->got));
  ruda_handle_release(&h);
  ruda_client_release(c);
  return NULL;
}

static void run_alone(pattern_t *p) {
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, run_pattern, p), 0);
  pthread_join(t, NULL);
  ASSERT_OK(p->err);
}

TEST(a_thread_that_syncs_after_each_launch_launches_on_its_own_thread) {
  (void)client(); /* skips without a device */
  pattern_t p = {.bursts = 50, .per_burst = 1};
  run_alone(&p);
  ASSERT_UEQ(p.got, p.expect);
  /* The first launch is queued (the thread's pace is not known yet); the
   * others find the device idle, as nothing else uses it. */
  ASSERT_UGE(p.here, 45);
  ASSERT_ULE(p.here, 50);
}

TEST(a_thread_that_reads_after_each_launch_launches_on_its_own_thread) {
  (void)client();
  pattern_t p = {.bursts = 30, .per_burst = 1, .read_wait = true};
  run_alone(&p);
  ASSERT_UEQ(p.got, p.expect);
  ASSERT_UGE(p.here, 25);
}

TEST(bursts_of_launches_are_queued_for_the_worker) {
  (void)client();
  pattern_t p = {.bursts = 10, .per_burst = 8};
  run_alone(&p);
  ASSERT_UEQ(p.got, p.expect);
  ASSERT_UEQ(p.here, 0);
}

/* One stream, one thread: launches made here and queued ones alternate
 * as the pace changes (1, 1, 3, 1, 2, 1, ... launches between waits), and
 * writes queued between them keep their place. */
TEST(launches_made_here_and_queued_keep_the_stream_order) {
  ruda_client_t *c = client();
  ruda_handle_t h;
  uint32_t zero = 0, got = 0;
  ASSERT_OK(ruda_client_create_buffer(c, &zero, sizeof zero, &h));
  uint64_t before = launches_here(c);
  uint32_t expect = 0, add = 1;
  static const int pace[] = {1, 1, 3, 1, 1, 2, 1, 1, 1, 4, 1, 1};
  for (int r = 0; r < 4; r++) {
    for (size_t b = 0; b < sizeof pace / sizeof pace[0]; b++) {
      for (int i = 0; i < pace[b]; i++, add++) {
        ASSERT_OK(step(c, &h, add));
        expect = 3u * expect + add;
      }
      if (b % 4 == 3) {
        /* A write between waits: queued, so the next launch is too. */
        uint32_t v = (uint32_t)b;
        ASSERT_OK(ruda_client_write(c, &h, &v, sizeof v));
        expect = v;
      }
      if (b % 2) ASSERT_OK(ruda_client_sync(c));
      else ASSERT_OK(read_word(c, &h, &got));
    }
  }
  ASSERT_OK(read_word(c, &h, &got));
  ASSERT_UEQ(got, expect);
  ASSERT_UGT(launches_here(c) - before, 0);
  ruda_handle_release(&h);
}

/* Threads on their own streams, each launching and syncing: launches
 * made here by one thread while another's are queued or being run never
 * run at once on the server, and none is lost. */
TEST(threads_launching_here_at_once_lose_nothing) {
  (void)client();
  enum { THREADS = 4 };
  pattern_t p[THREADS];
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++) {
    p[i] = (pattern_t){.bursts = 60, .per_burst = 1 + (i == 3), .read_wait = i == 1};
    ASSERT_EQ(pthread_create(&t[i], NULL, run_pattern, &p[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    ASSERT_OK(p[i].err);
    ASSERT_UEQ(p[i].got, p[i].expect);
  }
}

#endif
