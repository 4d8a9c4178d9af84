/* Device loss on the CUDA stand-in driver (cuda_stand_in.c), which makes a
 * launch fault as an illegal address does: a fault the driver can reset is
 * reported once and the device works again; one it cannot reset (580.x
 * drivers) loses the device: every stream of it fails at once with
 * ServerError::DeviceLost, never a hang, streams made later too, while
 * cpu:0 keeps working, and ruda_device_recover says the process must be
 * restarted. Its own program: the device stays lost. Skips where ruda was
 * built without the CUDA headers or NVRTC is absent (the test kernel is
 * CUDA C). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/cuda/cuda_internal.h"
#include "ruda/ruda.h"
#include "test.h"
#include "test_kernel.h"

static const char empty_src[] =
    "extern \"C\" __global__ void lost_empty(const unsigned long long *info) {}\n";

static const ruda_device_id_t cuda0 = {RUDA_DEVICE_TYPE_CUDA, 0};
static const ruda_device_id_t cpu0 = {RUDA_DEVICE_TYPE_CPU, 0};

typedef void (*fault_fn)(int code, int recovers);

/* The stand-in's fault switch, the driver loaded; skips without it. */
static fault_fn stand_in(void) {
#if !defined(RUDA_CUDA_STAND_IN)
  SKIP("built without the CUDA headers: no stand-in driver");
  return NULL;
#else
  static fault_fn fault;
  if (fault) return fault;
  ruda__cuda_loader_test_override(RUDA_CUDA_STAND_IN, NULL);
  uint32_t n = 0;
  ASSERT_OK(ruda_device_count(RUDA_DEVICE_TYPE_CUDA, &n));
  ruda_status_t s = ruda__cuda_nvrtc_probe();
  if (s) {
    ruda_status_free(s);
    SKIP("NVRTC is not available to compile the test kernel");
  }
  void *lib = dlopen(RUDA_CUDA_STAND_IN, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NOT_NULL(lib);
  void *sym = dlsym(lib, "ruda_stand_in_fault");
  ASSERT_NOT_NULL(sym);
  memcpy(&fault, &sym, sizeof fault);
  dlclose(lib);
  return fault;
#endif
}

static ruda_kernel_t *empty_kernel(void) {
  return test_kernel(RUDA_KERNEL_FORMAT_CUDA_C, "lost_empty", empty_src, ruda_dim_new_1d(64), 0);
}

static void write_read(ruda_client_t *c, uint32_t v) {
  uint32_t in[4] = {v, v + 1, v + 2, v + 3}, out[4] = {0};
  ruda_handle_t h;
  ASSERT_OK(ruda_client_create_buffer(c, in, sizeof in, &h));
  ASSERT_OK(ruda_client_read(c, &h, out, sizeof out));
  ASSERT_MEM_EQ(out, in, sizeof in);
  ruda_handle_release(&h);
}

/* Expects `s` to be (or hold) DeviceLost naming the remedy; frees it. */
static void expect_lost(ruda_status_t s) {
  ASSERT_NOT_NULL(s);
  ruda_status_t lost = ruda_status_find(s, RUDA_ERR_SERVER_DEVICE_LOST);
  char *text = ruda_status_to_string(s);
  if (!lost) rt_fail_msg(__FILE__, __LINE__, "expected DeviceLost, got:\n%s", text);
  ASSERT_NOT_NULL(lost);
  ASSERT_STR_CONTAINS(text, "cuda:0 is lost");
  ASSERT_STR_CONTAINS(text, "restart the process");
  free(text);
  ruda_status_free(s);
}

TEST(a_fault_the_driver_resets_is_reported_once_and_the_device_works_again) {
  fault_fn fault = stand_in();
  ruda_client_t *c = NULL;
  ASSERT_OK(ruda_client_create(cuda0, &c));
  ruda_kernel_t *k = empty_kernel();
  ruda_kernel_args_t a = {0};
  fault(CUDA_ERROR_ILLEGAL_ADDRESS, 1);
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a));
  ruda_status_t s = ruda_client_sync(c);
  ASSERT_NOT_NULL(s);
  ASSERT_TRUE(ruda_status_find(s, RUDA_ERR_SERVER_DEVICE_LOST) == NULL);
  ruda_status_free(s);
  /* Reset: the device works again. */
  ASSERT_OK(ruda_client_sync(c));
  write_read(c, 10);
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a));
  ASSERT_OK(ruda_client_sync(c));
  ASSERT_OK(ruda_device_recover(cuda0)); /* not lost: nothing to do */
  ruda_kernel_release(k);
  ruda_client_release(c);
}

typedef struct other {
  ruda_client_t *c;
  int step; /* 0: made its stream; 1: asked to sync */
  pthread_mutex_t lock;
  pthread_cond_t cv;
  ruda_status_t sync;
} other_t;

static void *other_stream(void *arg) {
  other_t *o = arg;
  write_read(o->c, 50); /* this thread's stream exists on the device */
  pthread_mutex_lock(&o->lock);
  o->step = 1;
  pthread_cond_broadcast(&o->cv);
  while (o->step != 2) pthread_cond_wait(&o->cv, &o->lock);
  pthread_mutex_unlock(&o->lock);
  o->sync = ruda_client_sync(o->c);
  return NULL;
}

/* The errors nobody read (ruda_set_lost_error_handler): how many, and how
 * many of them hold DeviceLost. */
static atomic_int g_lost_reports, g_lost_device_lost;

static void count_lost(void *user, ruda_device_id_t device, ruda_stream_id_t stream,
                       ruda_status_t error) {
  (void)user;
  (void)device;
  (void)stream;
  atomic_fetch_add(&g_lost_reports, 1);
  if (ruda_status_find(error, RUDA_ERR_SERVER_DEVICE_LOST)) atomic_fetch_add(&g_lost_device_lost, 1);
}

static void *late_stream(void *arg) {
  ruda_client_t *c = arg;
  return ruda_client_sync(c);
}

TEST(a_fault_the_driver_cannot_reset_loses_every_stream_of_the_device_only) {
  fault_fn fault = stand_in();
  ruda_client_t *c = NULL, *cpu = NULL;
  ASSERT_OK(ruda_client_create(cuda0, &c));
  ASSERT_OK(ruda_client_create(cpu0, &cpu));
  ruda_kernel_t *k = empty_kernel();
  ruda_kernel_args_t a = {0};
  other_t o = {.c = c, .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, other_stream, &o), 0);
  pthread_mutex_lock(&o.lock);
  while (o.step != 1) pthread_cond_wait(&o.cv, &o.lock);
  pthread_mutex_unlock(&o.lock);

  fault(CUDA_ERROR_ILLEGAL_ADDRESS, 0);
  ASSERT_OK(ruda_client_launch(c, k, ruda_count_static(1, 1, 1), &a));
  /* The fault itself, naming the driver's code. */
  ASSERT_ERR_TEXT(ruda_client_sync(c), RUDA_ERR_SERVER_LAUNCH, "lost_empty");
  /* From the next call on, the device is lost: this stream... */
  expect_lost(ruda_client_sync(c));
  /* ...the other thread's, which did nothing since (at once)... */
  pthread_mutex_lock(&o.lock);
  o.step = 2;
  pthread_cond_broadcast(&o.cv);
  pthread_mutex_unlock(&o.lock);
  pthread_join(t, NULL);
  expect_lost(o.sync);
  /* ...and a stream made afterwards. */
  void *late = NULL;
  ASSERT_EQ(pthread_create(&t, NULL, late_stream, c), 0);
  pthread_join(t, &late);
  expect_lost((ruda_status_t)late);
  /* Once reported, a stream gets it again at its next call: never a
   * hang, never success. */
  ruda_handle_t h;
  uint32_t v = 7;
  ruda_status_t s = ruda_client_create_buffer(c, &v, sizeof v, &h);
  if (!s) {
    uint32_t back = 0;
    expect_lost(ruda_client_read(c, &h, &back, sizeof back));
    ruda_handle_release(&h);
  } else {
    ruda_status_free(s);
  }

  /* Other devices keep working. */
  write_read(cpu, 90);

  /* CUDA cannot be recovered in the process. */
  ASSERT_ERR_TEXT(ruda_device_recover(cuda0), RUDA_ERR_UNAVAILABLE, "restart the process");

  /* Two more streams, each holding the loss unread (their launches are
   * dropped): when the last client goes, the loss is reported once, not
   * once per stream, and the streams whose callers read it report
   * nothing. */
  ruda_set_lost_error_handler(count_lost, NULL);
  ruda_client_t *x = NULL, *y = NULL;
  ASSERT_OK(ruda_client_on_stream(c, ruda_stream_id_next(), &x));
  ASSERT_OK(ruda_client_on_stream(c, ruda_stream_id_next(), &y));
  ASSERT_OK(ruda_client_launch(x, k, ruda_count_static(1, 1, 1), &a));
  ASSERT_OK(ruda_client_launch(y, k, ruda_count_static(1, 1, 1), &a));
  ruda_kernel_release(k);
  ruda_client_release(cpu);
  ruda_client_release(x);
  ruda_client_release(y);
  ruda_client_release(c);
  /* The report is queued behind the device's work: at most 10 s. */
  for (int i = 0; i < 10000 && atomic_load(&g_lost_reports) == 0; i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  nanosleep(&(struct timespec){0, 50000000}, NULL);
  ASSERT_EQ(atomic_load(&g_lost_device_lost), 1);
  ASSERT_EQ(atomic_load(&g_lost_reports), 1);
  /* Nor again at shutdown. */
  ASSERT_OK(ruda_shutdown());
  ASSERT_EQ(atomic_load(&g_lost_reports), 1);
  ruda_set_lost_error_handler(NULL, NULL);
}
